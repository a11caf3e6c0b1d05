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

const char *tune_workload_key(te_ctx *ctx, const char *op, const char *shape) {
    if (!op || !*op) return te_error(ctx, "no operator named"), NULL;
    if (!shape) shape = "";
    if (ops_find(op)) {
        const char *k = ops_canonical_key(ctx, op, shape);
        if (!k) te_error(ctx, "bad shape '%s' for %s: %s", shape, op, te_ctx_errmsg(ctx));
        return k;
    }
    /* A registered builder's operator: the key is "OP(SHAPE)", SHAPE as
     * written; the builder parses it, so one build checks it. */
    const char *key = te_sprintf(ctx, "%s(%s)", op, shape);
    ops_builder_fn fn = key ? ops_builder_for(key) : NULL;
    if (!fn) {
        te_error(ctx,
                 "unknown op '%s' (known: %s; the operators of a plugin once it is loaded, "
                 "--plugin)",
                 op, ops_names());
        return NULL;
    }
    te_ctx *scratch = te_ctx_new();
    tune_workload w;
    int rc = scratch ? fn(scratch, key, &w) : -1;
    if (rc) te_error(ctx, "bad shape '%s' for %s: %s", shape, op,
                     scratch ? te_ctx_errmsg(scratch) : "out of memory");
    te_ctx_free(scratch);
    return rc ? NULL : key;
}

char *tune_default_steps(const char *key, const char *target) {
    te_ctx *ctx = te_ctx_new();
    if (!ctx) return NULL;
    ops_workload *w = key ? ops_from_key(ctx, key) : NULL;
    sch_schedule *s = w ? ops_default_schedule(w, target ? target : "llvm") : NULL;
    /* Registered workloads (a user's operator, a model's fused group):
     * the schedule derived from their structure, on the CPU. */
    tune_workload tw;
    if (!w && key && !tune_target_is_cuda(target ? target : "llvm") &&
        !tune_build_workload(ctx, key, &tw))
        s = tune_default_schedule(ctx, &tw, target ? target : "llvm", NULL);
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
