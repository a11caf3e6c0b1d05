/*
 * autotune/workload.c — rebuilding a task's workload from its key in any
 * ctx (the builder registry itself is the ops library's, ops/builders.c,
 * so that the tuning database rebuilds a user's operator the same way),
 * and the default schedule's log.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/tune_internal.h"
#include "loom/ops.h"
#include "loom/tuning_db.h"

int tune_register_builder(const char *prefix, tune_build_fn fn) {
    return ops_register_builder(prefix, fn);
}

int tune_build_workload(te_ctx *ctx, const char *key, tune_workload *out) {
    return ops_build_key(ctx, key, out);
}

char *tune_default_steps(const char *key, const char *target) {
    te_ctx *ctx = te_ctx_new();
    if (!ctx) return NULL;
    ops_workload *w = key ? ops_from_key(ctx, key) : NULL;
    sch_schedule *s = w ? ops_default_schedule(w, target ? target : "llvm") : NULL;
    char *json = s ? tdb_schedule_to_json(s) : NULL;
    te_ctx_free(ctx);
    return json;
}

char *tune__strdupf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    return s;
}
