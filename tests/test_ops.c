/*
 * The operator library: every operator built from the registry, scheduled
 * with its default CPU schedule, compiled (LLVM, and the C backend for a
 * few) and run on fresh random data with NaN-poisoned outputs against its
 * naive double-precision reference; several shapes per operator, odd
 * sizes included. Also: FLOP counts of small cases counted by hand, and
 * ops_check_module catching a wrong module. (Keys, the registry and
 * errors: test_ops_keys.c.)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_cases.h"
#include "testutil.h"

/* Builds, schedules, compiles and runs one case; returns the mismatches. */
static int64_t run_case(const char *op, const char *shape, const char *target, uint64_t *rng) {
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, op, shape);
    if (!w) fprintf(stderr, "%s(%s): %s\n", op, shape, te_ctx_errmsg(ctx));
    assert_non_null(w);
    assert_int_equal(w->nargs, w->ninputs + w->nouts);
    assert_true(w->flops > 0);
    sch_schedule *s = ops_default_schedule(w, target);
    if (!s) fprintf(stderr, "%s: %s\n", w->key, te_ctx_errmsg(ctx));
    assert_non_null(s);
    rt_module *m = cg_build(s, w->nargs, w->args, target, NULL);
    if (!m) fprintf(stderr, "%s (%s): %s\n", w->key, target, te_ctx_errmsg(ctx));
    assert_non_null(m);
    DLTensor *t[8];
    for (int i = 0; i < w->nargs; i++)
        t[i] = i < w->ninputs ? tu_rand_f32(rng, w->args[i]->ndim, w->args[i]->shape)
                              : tu_nan_f32(w->args[i]->ndim, w->args[i]->shape);
    DLTensor *y = t[w->ninputs];
    int64_t n = rt_tensor_numel(y);
    double *want = malloc(sizeof(double) * (size_t)n);
    assert_int_equal(rt_call(m, "default", w->nargs, t), 0);
    assert_int_equal(ops_reference(w, t, &want), 0);
    double rtol, atol;
    ops_tolerance(w, &rtol, &atol);
    int64_t bad = tu_compare_f32(w->key, y->data, want, n, rtol, atol);
    if (bad) fprintf(stderr, "%s\n", sch_lower_text(s, w->nargs, w->args));
    free(want);
    for (int i = 0; i < w->nargs; i++) rt_tensor_free(t[i]);
    rt_module_free(m);
    te_ctx_free(ctx);
    return bad;
}

static void test_every_op_llvm(void **state) {
    (void)state;
    uint64_t rng = tu_seed();
    int64_t bad = 0;
    for (int i = 0; i < tu_ops_ncases; i++)
        bad += run_case(tu_ops_cases[i].op, tu_ops_cases[i].shape, "llvm", &rng) != 0;
    assert_int_equal(bad, 0);
}

/* Every registered operator appears in the table above. */
static void test_table_covers_registry(void **state) {
    (void)state;
    for (int i = 0; i < ops_count(); i++) {
        bool found = false;
        for (int k = 0; k < tu_ops_ncases; k++) {
            const ops_op_info *in = ops_find(tu_ops_cases[k].op);
            assert_non_null(in);
            found |= in == ops_info(i);
        }
        if (!found) fprintf(stderr, "operator %s is not tested\n", ops_info(i)->name);
        assert_true(found);
    }
}

static void test_some_ops_c(void **state) {
    (void)state;
    uint64_t rng = tu_seed() ^ 0x5555;
    static const int pick[] = {1, 3, 9, 12, 16, 21, 25, 27, 33, 38, 40};
    int64_t bad = 0;
    for (size_t i = 0; i < sizeof pick / sizeof *pick; i++)
        bad += run_case(tu_ops_cases[pick[i]].op, tu_ops_cases[pick[i]].shape, "c", &rng) != 0;
    assert_int_equal(bad, 0);
}

static void test_flops(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", "M=2,N=3,K=4");
    assert_non_null(w);
    assert_true(w->flops == 48);
    w = ops_build(ctx, "dense_bias_gelu", "M=2,N=3,K=4");
    assert_true(w->flops == 48 + 6 + 30);
    /* 3x3 input, 3x3 kernel, pad 1: per dimension the taps that read the
     * input are 2 + 3 + 2 = 7, so 49 real taps per (n, k, c). */
    w = ops_build(ctx, "conv2d", "N=1,C=2,H=3,W=3,K=5,R=3,S=3,pad=1");
    assert_non_null(w);
    assert_true(w->flops == 2.0 * 5 * 2 * 49);
    w = ops_build(ctx, "conv2d", "N=1,C=4,H=3,W=3,K=6,R=1,S=1,groups=2");
    assert_true(w->flops == 2.0 * 6 * 2 * 9);
    w = ops_build(ctx, "softmax", "M=3,N=10");
    assert_true(w->flops == 150);
    te_ctx_free(ctx);
}

/* A tiny softmax and layer_norm checked against values worked by hand,
 * so the references themselves are tested. */
static void test_reference_by_hand(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "softmax", "M=1,N=2");
    float xs[2] = {0.0f, (float)log(3.0)};
    DLTensor *x = rt_tensor_wrap(xs, (DLDataType){kDLFloat, 32, 1}, 2, (int64_t[]){1, 2});
    double y[2];
    double *out = y;
    assert_int_equal(ops_reference(w, &x, &out), 0);
    assert_true(fabs(y[0] - 0.25) < 1e-7 && fabs(y[1] - 0.75) < 1e-7);
    rt_tensor_free_header(x);
    /* avg_pool2d at a corner with pad 1 divides by the 4 real taps. */
    w = ops_build(ctx, "avg_pool2d", "N=1,C=1,H=2,W=2,R=3,S=3,pad=1");
    assert_non_null(w);
    float xv[4] = {1, 2, 3, 6};
    x = rt_tensor_wrap(xv, (DLDataType){kDLFloat, 32, 1}, 4, (int64_t[]){1, 1, 2, 2});
    double z[4];
    out = z;
    assert_int_equal(ops_reference(w, &x, &out), 0);
    assert_true(fabs(z[0] - 3.0) < 1e-12);
    /* A wrong input shape is refused with a message. */
    DLTensor *bad = rt_tensor_wrap(xv, (DLDataType){kDLFloat, 32, 1}, 4, (int64_t[]){1, 1, 1, 4});
    assert_int_equal(ops_reference(w, &bad, &out), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "avg_pool2d", "'X'", "extent 4 in dimension 3");
    rt_tensor_free_header(bad);
    rt_tensor_free_header(x);
    te_ctx_free(ctx);
}

/* ops_check_module passes the default schedule, catches a module that
 * computes something else on the same shapes, and calls a module with
 * pre-computed constants. */
static void test_check_module(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    ops_workload *relu = ops_build(ctx, "relu", "D0=8,D1=9");
    ops_workload *gelu = ops_build(ctx, "gelu", "D0=8,D1=9");
    assert_non_null(relu);
    assert_non_null(gelu);
    rt_module *m = cg_build(ops_default_schedule(relu, "llvm"), relu->nargs, relu->args, "llvm",
                            NULL);
    assert_non_null(m);
    assert_int_equal(ops_check_module(relu, m, NULL, 7), 0);
    assert_true(ops_check_module(gelu, m, NULL, 7) > 0);
    assert_int_equal(ops_check_module(relu, m, "nope", 7), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "relu", "calling the module failed");
    rt_module_free(m);

    /* A module built with the workload's constant weights (as the tuner
     * builds) takes its packed copy after the arguments: checked through
     * rt_prepare. */
    ops_workload *conv = ops_build(ctx, "conv2d", "N=1,C=32,H=8,W=8,K=16,R=3,S=3,pad=1");
    assert_non_null(conv);
    cg_build_options o = {.constant_args = conv->constant_args};
    assert_true(o.constant_args != 0);
    m = cg_build(ops_default_schedule(conv, "llvm"), conv->nargs, conv->args, "llvm", &o);
    assert_non_null(m);
    int np = 0;
    assert_non_null(rt_module_func_params(m, "default__precompute", &np));
    assert_int_equal(ops_check_module(conv, m, NULL, 7), 0);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* float64 workloads build and compute as well. */
static void test_float64(void **state) {
    (void)state;
    static const ops_case c64[] = {{"matmul", "M=9,N=20,K=5,dtype=float64"},
                                   {"softmax", "M=3,N=21,dtype=float64"},
                                   {"conv2d", "N=1,C=3,H=6,W=7,K=4,R=3,S=3,pad=1,dtype=float64"}};
    for (size_t i = 0; i < sizeof c64 / sizeof *c64; i++) {
        te_ctx *ctx = te_ctx_new();
        ops_workload *w = ops_build(ctx, c64[i].op, c64[i].shape);
        assert_non_null(w);
        assert_true(te_dtype_eq(w->dtype, TE_FLOAT64));
        rt_module *m = cg_build(ops_default_schedule(w, "llvm"), w->nargs, w->args, "llvm", NULL);
        if (!m) fprintf(stderr, "%s: %s\n", w->key, te_ctx_errmsg(ctx));
        assert_non_null(m);
        assert_int_equal(ops_check_module(w, m, NULL, 11), 0);
        rt_module_free(m);
        te_ctx_free(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_covers_registry),
        cmocka_unit_test(test_flops),
        cmocka_unit_test(test_reference_by_hand),
        cmocka_unit_test(test_every_op_llvm),
        cmocka_unit_test(test_some_ops_c),
        cmocka_unit_test(test_check_module),
        cmocka_unit_test(test_float64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
