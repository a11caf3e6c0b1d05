/*
 * autotune/fit.c — whether a workload's buffers fit in this machine's
 * memory, asked before anything is built: a shape too large for memory
 * otherwise fails every trial with "out of memory", one build at a time.
 */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "autotune/tune_internal.h"

/* Bytes of a tensor's elements; a double so that absurd shapes do not
 * overflow before they are compared. */
static double tensor_bytes(const te_tensor *t, int elem_bytes) {
    double e = elem_bytes;
    for (int d = 0; d < t->ndim; d++) e *= (double)t->shape[d];
    return e;
}

double tune_workload_bytes(const tune_workload *w) {
    double bytes = 0;
    for (int i = 0; i < w->nargs; i++) bytes += tensor_bytes(w->args[i], te_dtype_bytes(w->args[i]->dtype));
    /* The runner checks every candidate against a double-precision copy
     * of the outputs (autotune/runner.c, compute_reference). */
    for (int i = 0; i < w->nouts; i++) bytes += tensor_bytes(w->outs[i], (int)sizeof(double));
    return bytes;
}

static int check_built(const char *key, const tune_workload *w, char **err) {
    double need = tune_workload_bytes(w);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    double have = pages > 0 && page > 0 ? (double)pages * (double)page : INFINITY;
    if (!(need > have)) return 0;
    if (err)
        *err = tune__strdupf("autotune: %s needs %.1f GB of buffers (its arguments and the "
                             "double-precision reference of its outputs); this machine has "
                             "%.1f GB",
                             key, need * 1e-9, have * 1e-9);
    return -1;
}

int tune__check_fits(const char *key, double *flops, char **err) {
    te_ctx *ctx = te_ctx_new();
    if (!ctx) {
        if (err) *err = tune__strdupf("autotune: out of memory");
        return -1;
    }
    tune_workload w;
    int rc;
    if (tune_build_workload(ctx, key, &w)) {
        if (err)
            *err = tune__strdupf("autotune: workload '%s': %s", key ? key : "(null)",
                                 te_ctx_errmsg(ctx));
        rc = -1;
    } else {
        rc = check_built(key, &w, err);
        if (flops) *flops = w.flops;
    }
    te_ctx_free(ctx);
    return rc;
}

int tune_check_fits(const char *key, char **err) { return tune__check_fits(key, NULL, err); }
