/*
 * tests/custom_mmb.h — a workload outside the ops registry, for the tests
 * of registered builders (tuning it, storing and applying it):
 *   test.mmb(M=<m>,N=<n>,K=<k>):  D[i, j] = sum_k A[i, k] B[k, j] + bias[j]
 * float32; args A[M, K], B[K, N], bias[N], D[M, N].
 */
#ifndef LOOM_TEST_CUSTOM_MMB_H
#define LOOM_TEST_CUSTOM_MMB_H

#include "loom/ops.h"

/* Builds the workload of key in ctx; *C (may be NULL) receives the
 * matmul stage (for hand schedules). 0, or -1 with an error in ctx (a key
 * not of the form above). */
int custom_mmb_declare(te_ctx *ctx, const char *key, ops_built *out, te_tensor **C);
/* The builder to register (ops_register_builder / tune_register_builder). */
int custom_mmb_build(te_ctx *ctx, const char *key, ops_built *out);

#endif
