/*
 * tests/sched_harness.h — small workloads (matmul, a two-stage
 * elementwise chain, a 2-D convolution) with double references, and one
 * function that schedules, builds for a target, runs on fresh random data
 * with NaN-poisoned outputs and compares.
 */
#ifndef LOOM_SCHED_HARNESS_H
#define LOOM_SCHED_HARNESS_H

#include "testutil.h"

typedef struct sched_case {
    te_ctx *ctx;
    int nin;
    te_tensor *in[4];
    te_tensor *out;
    /* handles the schedules use */
    te_tensor *mid;           /* an intermediate stage (chain, conv padding) */
    te_expr *ax[4];           /* output axes */
    te_expr *rax[4];          /* output reduce axes */
    void (*reference)(const struct sched_case *c, DLTensor *const *ins, double *out);
    int64_t p[10];            /* shape parameters */
} sched_case;

/* C[M,N] = sum_k A[M,K] * B[K,N] */
sched_case sh_matmul(te_ctx *ctx, int64_t M, int64_t N, int64_t K);
/* B[i,j] = A[i,j]*2 + 1; C[i,j] = exp(B[i,j]) * 0.5 - B[i, j] (mid = B) */
sched_case sh_chain(te_ctx *ctx, int64_t M, int64_t N);
/* Conv2D NCHW with zero padding via a Pad stage (mid = Pad):
 * out[n,k,y,x] = sum_{c,r,s} Pad[n,c,y*st+r,x*st+s] * W[k,c,r,s] */
sched_case sh_conv2d(te_ctx *ctx, int64_t N, int64_t C, int64_t H, int64_t W, int64_t K,
                     int64_t R, int64_t S, int64_t stride, int64_t pad);

/* Builds s for target ("llvm" or "c"), runs it on random inputs and
 * checks the output against the reference (rtol 1e-4 scaled by the
 * reduction length, atol 1e-4). Returns the number of mismatches, or -1
 * when building or running failed (the error is printed). */
int64_t sh_run(const sched_case *c, sch_schedule *s, const char *target);
/* The same with build options (NULL: none). */
int64_t sh_run_opts(const sched_case *c, sch_schedule *s, const char *target,
                    const cg_build_options *opts);

#endif
