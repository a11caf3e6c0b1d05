/*
 * bench/loom_module.h — the module a benchmark times for a workload: the
 * tuning database's best record, or the operator's default schedule.
 */
#ifndef LOOM_BENCH_LOOM_MODULE_H
#define LOOM_BENCH_LOOM_MODULE_H

#include <stddef.h>

#include <loom/loom.h>

/* Builds workload `key` in ctx and returns its module, compiled with opts
 * (may be NULL): with db, the best record for db_target
 * (tdb_apply_best_with, which itself falls back to the default schedule
 * when no record is valid); without db, the operator's default schedule
 * for build_target.
 * *w receives the workload (its args are the module's arguments), source
 * "tuned #ID" or "default". NULL with the reason in err. The module is
 * the caller's. */
rt_module *bench_loom_module(tdb_db *db, te_ctx *ctx, const char *key, const char *db_target,
                             const char *build_target, const cg_build_options *opts,
                             ops_workload **w, char *source, size_t source_len, char *err,
                             size_t err_len);

#endif
