/*
 * bench/loom_module.c — see loom_module.h.
 */
#include "loom_module.h"

#include <stdio.h>

rt_module *bench_loom_module(tdb_db *db, te_ctx *ctx, const char *key, const char *db_target,
                             const char *build_target, const cg_build_options *opts,
                             ops_workload **w, char *source, size_t source_len, char *err,
                             size_t err_len) {
    rt_module *m;
    snprintf(source, source_len, "default");
    if (db) {
        tdb_apply_info info;
        m = tdb_apply_best_with(db, ctx, key, db_target, opts, &info);
        *w = info.workload;
        if (!m) snprintf(err, err_len, "%s", tdb_errmsg(db));
        else if (!info.fallback)
            snprintf(source, source_len, "tuned #%lld", (long long)info.record_id);
        return m;
    }
    *w = ops_from_key(ctx, key);
    sch_schedule *s = *w ? ops_default_schedule(*w, build_target) : NULL;
    m = s ? cg_build(s, (*w)->nargs, (*w)->args, build_target, opts) : NULL;
    if (!m) snprintf(err, err_len, "%s", te_ctx_errmsg(ctx));
    return m;
}
