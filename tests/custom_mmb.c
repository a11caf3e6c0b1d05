/*
 * tests/custom_mmb.c — the test.mmb workload of tests/custom_mmb.h.
 */
#include "custom_mmb.h"

#include <stdio.h>

int custom_mmb_declare(te_ctx *ctx, const char *key, ops_built *out, te_tensor **Cp) {
    long long M, N, K;
    int used = 0;
    if (sscanf(key, "test.mmb(M=%lld,N=%lld,K=%lld)%n", &M, &N, &K, &used) != 3 || key[used] ||
        M < 1 || N < 1 || K < 1)
        return te_error(ctx, "test.mmb: bad key '%s'", key);
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(M, K));
    te_tensor *B = te_placeholder(ctx, "B", TE_FLOAT32, TE_SHAPE(K, N));
    te_tensor *bias = te_placeholder(ctx, "bias", TE_FLOAT32, TE_SHAPE(N));
    te_expr *i = te_axis(ctx, "i", M), *j = te_axis(ctx, "j", N), *k = te_reduce_axis(ctx, "k", K);
    te_tensor *C =
        te_compute(ctx, "C", TE_AXES(i, j), te_sum(te_mul(te_read(A, i, k), te_read(B, k, j)), k));
    te_expr *i2 = te_axis(ctx, "i2", M), *j2 = te_axis(ctx, "j2", N);
    te_tensor *D =
        te_compute(ctx, "D", TE_AXES(i2, j2), te_add(te_read(C, i2, j2), te_read(bias, j2)));
    if (!D || !(out->args = te_alloc(ctx, 4 * sizeof(te_tensor *)))) return -1;
    out->nargs = 4;
    out->args[0] = A, out->args[1] = B, out->args[2] = bias, out->args[3] = D;
    out->nouts = 1;
    out->outs = out->args + 3;
    out->flops = 2.0 * (double)M * (double)N * (double)K;
    out->constant_args = 0;
    if (Cp) *Cp = C;
    return 0;
}

int custom_mmb_build(te_ctx *ctx, const char *key, ops_built *out) {
    return custom_mmb_declare(ctx, key, out, NULL);
}
