/*
 * ops/builders.c — builders registered by the program for workloads
 * outside the registry, and rebuilding any workload from its key. It
 * lives below the tuner and the tuning database so that both rebuild a
 * user's operator the same way (the database replays stored logs on it,
 * tdb_apply_best).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ops_internal.h"

enum { MAX_BUILDERS = 32 };
static struct {
    char prefix[128];
    ops_builder_fn fn;
} builders[MAX_BUILDERS];
static int nbuilders;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int ops_register_builder(const char *prefix, ops_builder_fn fn) {
    if (!prefix || !fn || strlen(prefix) >= sizeof builders[0].prefix) return -1;
    pthread_mutex_lock(&lock);
    int rc = -1;
    /* A prefix registered again (a plugin loaded twice, a test
     * re-registering) takes no new slot. */
    for (int i = 0; i < nbuilders && rc; i++)
        if (!strcmp(builders[i].prefix, prefix)) builders[i].fn = fn, rc = 0;
    if (rc && nbuilders < MAX_BUILDERS) {
        snprintf(builders[nbuilders].prefix, sizeof builders[0].prefix, "%s", prefix);
        builders[nbuilders++].fn = fn;
        rc = 0;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

ops_builder_fn ops_builder_for(const char *key) {
    if (!key) return NULL;
    ops_builder_fn fn = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nbuilders && !fn; i++)
        if (!strncmp(key, builders[i].prefix, strlen(builders[i].prefix))) fn = builders[i].fn;
    pthread_mutex_unlock(&lock);
    return fn;
}

/* Whether the operator name of key (up to '(') is one of the registry. */
static bool registry_op(const char *key) {
    const char *open = strchr(key, '(');
    size_t n = open ? (size_t)(open - key) : strlen(key);
    char name[64];
    if (n == 0 || n >= sizeof name) return false;
    memcpy(name, key, n);
    name[n] = 0;
    return ops_find(name) != NULL;
}

bool ops_has_builder(const char *key) {
    return key && (ops_builder_for(key) || registry_op(key));
}

int ops_build_key(te_ctx *ctx, const char *key, ops_built *out) {
    memset(out, 0, sizeof *out);
    if (!key) return te_error(ctx, "ops: no workload key");
    ops_builder_fn fn = ops_builder_for(key);
    if (fn) return fn(ctx, key, out);
    if (!registry_op(key))
        return te_error(ctx,
                        "workload '%s' has no builder: no registered builder's prefix matches it "
                        "(tune_register_builder, or a plugin's loom_register_ops) and it names "
                        "no operator of the ops registry",
                        key);
    ops_workload *w = ops_from_key(ctx, key);
    if (!w) return -1;
    out->nargs = w->nargs;
    out->args = w->args;
    out->nouts = w->nouts;
    out->outs = w->outs;
    out->flops = w->flops;
    out->constant_args = w->constant_args;
    for (int i = 0; i < w->nparams; i++)
        if (!strcmp(w->param_names[i], "tf32") && w->param_values[i]) out->tf32 = true;
    return 0;
}
