/*
 * Lowering goldens: the printed loop program (after the tir pipeline) of a
 * few schedules, compared verbatim, in the style of TVM's
 * tests/python/tir-transform: a change in lowering, simplification or a
 * pass shows up here as a readable diff. Also: the vectorizer says why a
 * loop stays scalar, and the C and LLVM backends agree on the same
 * schedules and inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_harness.h"

static void check_text(const char *name, const char *got, const char *want) {
    assert_non_null(got);
    if (strcmp(got, want)) fprintf(stderr, "%s: got\n%s\nwant\n%s\n", name, got, want);
    assert_string_equal(got, want);
}

static void test_vadd_split_tail(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(100));
    te_tensor *B = te_placeholder(ctx, "B", TE_FLOAT32, TE_SHAPE(100));
    te_expr *i = te_axis(ctx, "i", 100);
    te_tensor *C = te_compute(ctx, "C", TE_AXES(i), te_add(te_read(A, i), te_read(B, i)));
    sch_schedule *s = sch_create(ctx, TE_TENSORS(C));
    te_expr *io, *ii;
    assert_int_equal(sch_split(s, C, i, 8, &io, &ii) || sch_vectorize(s, C, ii) ||
                         sch_parallel(s, C, io), 0);
    /* The parallel loop branches: no guard on whole vectors, the tail one
     * masked vector, run by one of the threads. */
    check_text("vadd", sch_lower_text(s, TE_TENSORS(A, B, C)),
        "func default(A: float32[100], B: float32[100], C: float32[100]) {\n"
        "  for (i.outer, 0, 13) parallel {\n"
        "    if (i.outer < 12) {\n"
        "      C[ramp(i.outer*8, 1, 8)] = A[ramp(i.outer*8, 1, 8)] + B[ramp(i.outer*8, 1, 8)]\n"
        "    } else {\n"
        "      C[ramp(96, 1, 8)] = A[ramp(96, 1, 8), pred=ramp(0, 1, 8) < x8(4)] + B[ramp(96, 1, 8), pred=ramp(0, 1, 8) < x8(4)] if ramp(0, 1, 8) < x8(4)\n"
        "    }\n"
        "  }\n"
        "}\n");
    te_ctx_free(ctx);
}

static void test_matmul_tile(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(64, 32));
    te_tensor *B = te_placeholder(ctx, "B", TE_FLOAT32, TE_SHAPE(32, 48));
    te_expr *i = te_axis(ctx, "i", 64), *j = te_axis(ctx, "j", 48);
    te_expr *k = te_reduce_axis(ctx, "k", 32);
    te_tensor *C = te_compute(ctx, "C", TE_AXES(i, j),
                              te_sum(te_mul(te_read(A, i, k), te_read(B, k, j)), k));
    sch_schedule *s = sch_create(ctx, TE_TENSORS(C));
    te_expr *io, *jo, *ii, *ji, *ko, *ki;
    assert_int_equal(sch_tile(s, C, i, j, 16, 16, &io, &jo, &ii, &ji) ||
                         sch_split(s, C, k, 4, &ko, &ki) ||
                         sch_reorder(s, C, TE_AXES(io, jo, ko, ii, ki, ji)) ||
                         sch_vectorize(s, C, ji), 0);
    /* Index arithmetic of tile and split folds into one affine sum. */
    check_text("matmul_tile", sch_lower_text(s, TE_TENSORS(A, B, C)),
        "func default(A: float32[64, 32], B: float32[32, 48], C: float32[64, 48]) {\n"
        "  for (i.outer, 0, 4) {\n"
        "    for (j.outer, 0, 3) {\n"
        "      for (i.inner, 0, 16) {\n"
        "        C[ramp(((i.outer*768) + (i.inner*48)) + (j.outer*16), 1, 16)] = x16(0.0f)\n"
        "      }\n"
        "      for (k.outer, 0, 8) {\n"
        "        for (i.inner, 0, 16) {\n"
        "          for (k.inner, 0, 4) {\n"
        "            C[ramp(((i.outer*768) + (i.inner*48)) + (j.outer*16), 1, 16)] = C[ramp(((i.outer*768) + (i.inner*48)) + (j.outer*16), 1, 16)] + (x16(A[(((i.outer*512) + (i.inner*32)) + (k.outer*4)) + k.inner])*B[ramp(((k.outer*192) + (k.inner*48)) + (j.outer*16), 1, 16)])\n"
        "          }\n"
        "        }\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n");
    te_ctx_free(ctx);
}

static void test_chain_compute_at(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(16, 8));
    te_expr *i = te_axis(ctx, "i", 16), *j = te_axis(ctx, "j", 8);
    te_tensor *B = te_compute(ctx, "B", TE_AXES(i, j), te_mul(te_read(A, i, j), te_float(ctx, 2)));
    te_expr *x = te_axis(ctx, "x", 16), *y = te_axis(ctx, "y", 8);
    te_tensor *C = te_compute(ctx, "C", TE_AXES(x, y), te_exp(te_read(B, x, y)));
    sch_schedule *s = sch_create(ctx, TE_TENSORS(C));
    te_expr *xo, *xi;
    assert_int_equal(sch_split(s, C, x, 4, &xo, &xi) || sch_compute_at(s, B, C, xo) ||
                         sch_parallel(s, C, xo), 0);
    /* B shrinks to the 4 rows one x.outer iteration needs, in local memory. */
    check_text("chain_compute_at", sch_lower_text(s, TE_TENSORS(A, C)),
        "func default(A: float32[16, 8], C: float32[16, 8]) {\n"
        "  for (x.outer, 0, 4) parallel {\n"
        "    allocate B[float32 * 32] local {\n"
        "      for (i, 0, 4) {\n"
        "        for (j, 0, 8) {\n"
        "          B[(i*8) + j] = A[((x.outer*32) + (i*8)) + j]*2.0f\n"
        "        }\n"
        "      }\n"
        "      for (x.inner, 0, 4) {\n"
        "        for (y, 0, 8) {\n"
        "          C[((x.outer*32) + (x.inner*8)) + y] = exp(B[(x.inner*8) + y])\n"
        "        }\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n");
    te_ctx_free(ctx);
}

static void test_fuse_split_inline(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(6, 10));
    te_expr *i = te_axis(ctx, "i", 6), *j = te_axis(ctx, "j", 10);
    te_tensor *B = te_compute(ctx, "B", TE_AXES(i, j), te_add(te_read(A, i, j), te_float(ctx, 1)));
    te_expr *x = te_axis(ctx, "x", 6), *y = te_axis(ctx, "y", 10);
    te_tensor *C = te_compute(ctx, "C", TE_AXES(x, y), te_max(te_read(B, x, y), te_float(ctx, 0)));
    sch_schedule *s = sch_create(ctx, TE_TENSORS(C));
    te_expr *f, *fo, *fi;
    assert_int_equal(sch_compute_inline(s, B) || sch_fuse(s, C, 2, (te_expr *[]){x, y}, &f) ||
                         sch_split(s, C, f, 4, &fo, &fi) || sch_unroll(s, C, fi), 0);
    /* floordiv/floormod of the fused index cancel against the flattening. */
    check_text("fuse_split_inline", sch_lower_text(s, TE_TENSORS(A, C)),
        "func default(A: float32[6, 10], C: float32[6, 10]) {\n"
        "  for (x.y.fused.outer, 0, 15) {\n"
        "    C[x.y.fused.outer*4] = max(A[x.y.fused.outer*4] + 1.0f, 0.0f)\n"
        "    C[(x.y.fused.outer*4) + 1] = max(A[(x.y.fused.outer*4) + 1] + 1.0f, 0.0f)\n"
        "    C[(x.y.fused.outer*4) + 2] = max(A[(x.y.fused.outer*4) + 2] + 1.0f, 0.0f)\n"
        "    C[(x.y.fused.outer*4) + 3] = max(A[(x.y.fused.outer*4) + 3] + 1.0f, 0.0f)\n"
        "  }\n"
        "}\n");
    te_ctx_free(ctx);
}

static void test_rfactor(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(32));
    te_expr *k = te_reduce_axis(ctx, "k", 32), *o = te_axis(ctx, "o", 1);
    te_tensor *S = te_compute(ctx, "S", TE_AXES(o), te_sum(te_read(A, k), k));
    sch_schedule *s = sch_create(ctx, TE_TENSORS(S));
    te_expr *ko, *ki;
    assert_int_equal(sch_split(s, S, k, 8, &ko, &ki), 0);
    te_tensor *rf = sch_rfactor(s, S, ki, 0);
    assert_non_null(rf);
    te_expr *rko = sch_reduce_axis(rf, 0);
    assert_int_equal(sch_reorder(s, rf, TE_AXES(rko, sch_axis(rf, 0))) ||
                         sch_vectorize(s, rf, sch_axis(rf, 0)), 0);
    check_text("rfactor", sch_lower_text(s, TE_TENSORS(A, S)),
        "func default(A: float32[32], S: float32[1]) {\n"
        "  allocate S.rf[float32 * 8] global {\n"
        "    S.rf[ramp(0, 1, 8)] = x8(0.0f)\n"
        "    for (k.outer, 0, 4) {\n"
        "      S.rf[ramp(0, 1, 8)] = S.rf[ramp(0, 1, 8)] + A[ramp(k.outer*8, 1, 8)]\n"
        "    }\n"
        "    S[0] = 0.0f\n"
        "    for (k.inner.r, 0, 8) {\n"
        "      S[0] = S[0] + S.rf[k.inner.r]\n"
        "    }\n"
        "  }\n"
        "}\n");
    te_ctx_free(ctx);
}

/* A vectorize annotation on a loop that is not innermost stays scalar and
 * the pipeline says why. */
static void test_vectorize_why(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_matmul(ctx, 16, 16, 8);
    sch_schedule *s = sch_create(ctx, 1, &c.out);
    assert_int_equal(sch_vectorize(s, c.out, c.ax[1]), 0);
    assert_int_equal(sch_reorder(s, c.out, TE_AXES(c.ax[0], c.ax[1], c.rax[0])), 0);
    tir_func *f = sch_lower(s, TE_TENSORS(c.in[0], c.in[1], c.out), "default");
    assert_non_null(f);
    te_str why;
    te_str_init(&why);
    tir_pipeline_options opts = {.vectorize_why = &why};
    assert_non_null(tir_run_pipeline(ctx, f, &opts));
    tu_assert_msg_has(why.data, "'j'", "stays scalar", "'k'");
    te_str_free(&why);
    te_ctx_free(ctx);
}

/* The two backends compute the same numbers for the same schedule and
 * inputs (and both match the double reference: see sh_run). */
static void test_backends_agree(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_matmul(ctx, 37, 45, 29);
    sch_schedule *s = sch_create(ctx, 1, &c.out);
    te_expr *io, *jo, *ii, *ji, *ko, *ki;
    assert_int_equal(sch_tile(s, c.out, c.ax[0], c.ax[1], 8, 16, &io, &jo, &ii, &ji) ||
                         sch_split(s, c.out, c.rax[0], 4, &ko, &ki) ||
                         sch_reorder(s, c.out, TE_AXES(io, jo, ko, ii, ki, ji)) ||
                         sch_vectorize(s, c.out, ji) || sch_parallel(s, c.out, io), 0);
    te_tensor *args[3] = {c.in[0], c.in[1], c.out};
    rt_module *ml = cg_build(s, 3, args, "llvm", NULL), *mc = cg_build(s, 3, args, "c", NULL);
    assert_non_null(ml);
    assert_non_null(mc);
    DLTensor *a = tu_rand_f32(&seed, 2, c.in[0]->shape), *b = tu_rand_f32(&seed, 2, c.in[1]->shape);
    DLTensor *ol = tu_nan_f32(2, c.out->shape), *oc = tu_nan_f32(2, c.out->shape);
    assert_int_equal(rt_call(ml, "default", RT_ARGS(a, b, ol)), 0);
    assert_int_equal(rt_call(mc, "default", RT_ARGS(a, b, oc)), 0);
    int64_t n = rt_tensor_numel(ol);
    double *want = malloc(sizeof(double) * (size_t)n);
    const float *fc = oc->data;
    for (int64_t x = 0; x < n; x++) want[x] = fc[x];
    /* Both contract a*b+c into FMAs, in the same order: agreement is close
     * to exact; 1e-6 leaves room for a different contraction choice. */
    assert_int_equal(tu_compare_f32("llvm vs c", ol->data, want, n, 1e-6, 1e-6), 0);
    free(want);
    rt_tensor_free(a), rt_tensor_free(b), rt_tensor_free(ol), rt_tensor_free(oc);
    rt_module_free(ml), rt_module_free(mc);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vadd_split_tail),   cmocka_unit_test(test_matmul_tile),
        cmocka_unit_test(test_chain_compute_at),  cmocka_unit_test(test_fuse_split_inline),
        cmocka_unit_test(test_rfactor),           cmocka_unit_test(test_vectorize_why),
        cmocka_unit_test(test_backends_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
