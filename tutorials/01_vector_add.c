/*
 * Tutorial 1: vector addition.
 *
 * Declare C[i] = A[i] + B[i], look at the loop program Loom derives, split
 * the loop and vectorize the inner part, compile with LLVM and run it.
 *
 *   ./tutorial_01_vector_add           # n = 1000003 (not a multiple of 16)
 *   Exits non-zero when the result is wrong (the tests run it).
 */
#include <loom/loom.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    const int64_t n = 1000003;

    /* 1. The computation: what, not how. */
    te_ctx *ctx = te_ctx_new();
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(n));
    te_tensor *B = te_placeholder(ctx, "B", TE_FLOAT32, TE_SHAPE(n));
    te_expr *i = te_axis(ctx, "i", n);
    te_tensor *C = te_compute(ctx, "C", TE_AXES(i), te_add(te_read(A, i), te_read(B, i)));
    if (!C) {
        fprintf(stderr, "%s\n", te_ctx_errmsg(ctx));
        return 1;
    }

    /* 2. The schedule: split i by 16 lanes, vectorize the inner loop,
     *    spread the outer loop over the thread pool. */
    sch_schedule *s = sch_create(ctx, TE_TENSORS(C));
    te_expr *io, *ii;
    if (sch_split(s, C, i, 16, &io, &ii) || sch_vectorize(s, C, ii) || sch_parallel(s, C, io)) {
        fprintf(stderr, "%s\n", te_ctx_errmsg(ctx));
        return 1;
    }
    const char *ir = sch_lower_text(s, TE_TENSORS(A, B, C));
    if (!ir) {
        fprintf(stderr, "%s\n", te_ctx_errmsg(ctx));
        return 1;
    }
    printf("Loop program (n = %lld, split by 16: the last block is partitioned off):\n%s\n",
           (long long)n, ir);

    /* 3. Build and run. */
    rt_module *m = cg_build(s, TE_TENSORS(A, B, C), "llvm", NULL);
    if (!m) {
        fprintf(stderr, "build failed: %s\n", te_ctx_errmsg(ctx));
        return 1;
    }
    DLDataType f32 = {kDLFloat, 32, 1};
    DLTensor *a = rt_tensor_alloc(f32, 1, &n), *b = rt_tensor_alloc(f32, 1, &n),
             *c = rt_tensor_alloc(f32, 1, &n);
    float *pa = a->data, *pb = b->data, *pc = c->data;
    srand(7);
    for (int64_t k = 0; k < n; k++) {
        pa[k] = (float)rand() / RAND_MAX - 0.5f;
        pb[k] = (float)rand() / RAND_MAX - 0.5f;
        pc[k] = NAN;
    }
    if (rt_call(m, "default", RT_ARGS(a, b, c))) {
        fprintf(stderr, "%s\n", rt_module_errmsg(m));
        return 1;
    }
    int64_t bad = 0;
    for (int64_t k = 0; k < n; k++)
        if (!(fabs((double)pc[k] - ((double)pa[k] + pb[k])) <= 1e-6)) bad++;
    rt_timer_config cfg = rt_timer_default();
    cfg.repeat = 10;
    rt_timing t;
    rt_time_call(m, "default", RT_ARGS(a, b, c), &cfg, &t);
    printf("C = A + B over %lld floats: %s, %.3f ms, %.1f GB/s\n", (long long)n,
           bad ? "WRONG" : "correct", t.median * 1e3, 12.0 * (double)n / t.median * 1e-9);

    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_tensor_free(c);
    rt_module_free(m);
    te_ctx_free(ctx);
    return bad ? 1 : 0;
}
