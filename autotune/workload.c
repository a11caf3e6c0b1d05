/*
 * autotune/workload.c — rebuilding a task's workload from its key in any
 * ctx: registered builders first (computations outside the ops registry),
 * then the ops registry.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/tune_internal.h"
#include "loom/ops.h"
#include "loom/tuning_db.h"

enum { MAX_BUILDERS = 32 };
static struct { char prefix[128]; tune_build_fn fn; } builders[MAX_BUILDERS];
static int nbuilders;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int tune_register_builder(const char *prefix, tune_build_fn fn) {
    if (!prefix || !fn || strlen(prefix) >= sizeof builders[0].prefix) return -1;
    pthread_mutex_lock(&lock);
    int rc = -1;
    if (nbuilders < MAX_BUILDERS) {
        snprintf(builders[nbuilders].prefix, sizeof builders[0].prefix, "%s", prefix);
        builders[nbuilders++].fn = fn;
        rc = 0;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

int tune_build_workload(te_ctx *ctx, const char *key, tune_workload *out) {
    memset(out, 0, sizeof *out);
    if (!key) return te_error(ctx, "autotune: no workload key");
    tune_build_fn fn = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nbuilders && !fn; i++)
        if (!strncmp(key, builders[i].prefix, strlen(builders[i].prefix))) fn = builders[i].fn;
    pthread_mutex_unlock(&lock);
    if (fn) return fn(ctx, key, out);
    ops_workload *w = ops_from_key(ctx, key);
    if (!w) return -1;
    out->nargs = w->nargs;
    out->args = w->args;
    out->nouts = w->nouts;
    out->outs = w->outs;
    out->flops = w->flops;
    out->constant_args = w->constant_args;
    return 0;
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
