/*
 * tests/test_ops_half.c — dtype=float16|bfloat16 workloads (matmul,
 * batch_matmul, conv2d_nchw, conv2d_nhwc): keys, errors naming the
 * parameter and the allowed values, the float32 reduce stage and the
 * 16-bit cast stage, and numbers on the CPU with the default schedule.
 *
 * Numbers: outputs poisoned with NaN; the reference is computed in double
 * from the ROUNDED 16-bit inputs (the bits the kernel reads). The kernel
 * sums float32 products (exact: 11- or 8-bit significands multiply into
 * float32 without rounding) in float32 and rounds once to the output type.
 * Bound: |got - c| <= u |c32| + e32, where u = 2^-11 (float16) or 2^-8
 * (bfloat16) is half an ulp relative, and e32 <= K 2^-24 sum|a b| is the
 * float32 sum's error (<= 29 * 2^-24 * 29 < 5.1e-5 for K = 29 with
 * |a|, |b| <= 1; far less in practice). So rtol = 2u = 2^-10 / 2^-7 (the
 * second u covers u e32 and the sum's error relative to large |c|) plus
 * atol = 1e-4 + 1e-6 K (ops_tolerance's float32 sum bound) holds.
 */
#include <math.h>
#include <string.h>

#include "half_util.h"
#include "testutil.h"

static void expect_key(const char *op, const char *shape, const char *want) {
    te_ctx *ctx = te_ctx_new();
    const char *k = ops_canonical_key(ctx, op, shape);
    if (!k) fail_msg("%s", te_ctx_errmsg(ctx));
    assert_string_equal(k, want);
    /* the key builds the same workload */
    ops_workload *w = ops_from_key(ctx, k);
    if (!w) fail_msg("%s", te_ctx_errmsg(ctx));
    assert_string_equal(w->key, want);
    te_ctx_free(ctx);
}

static void test_keys(void **state) {
    (void)state;
    expect_key("matmul", "M=37,N=53,K=29,dtype=float16",
               "matmul(M=37,N=53,K=29,transpose_a=0,transpose_b=0,dtype=float16)");
    expect_key("matmul", "dtype=bfloat16,M=4,N=4,K=4",
               "matmul(M=4,N=4,K=4,transpose_a=0,transpose_b=0,dtype=bfloat16)");
    expect_key("batch_matmul", "B=2,M=3,N=4,K=5,dtype=bfloat16",
               "batch_matmul(B=2,M=3,N=4,K=5,transpose_a=0,transpose_b=0,dtype=bfloat16)");
    expect_key("conv2d", "N=1,C=3,H=8,W=8,K=4,R=3,S=3,pad=1,dtype=float16",
               "conv2d_nchw(N=1,C=3,H=8,W=8,K=4,R=3,S=3,stride=1,pad=1,dilation=1,groups=1,"
               "dtype=float16)");
    /* float32 keys are what they were: existing keys and databases stay valid */
    expect_key("matmul", "M=37,N=53,K=29",
               "matmul(M=37,N=53,K=29,transpose_a=0,transpose_b=0,dtype=float32)");
}

static void expect_err(const char *op, const char *shape, const char *a, const char *b) {
    te_ctx *ctx = te_ctx_new();
    assert_null(ops_build(ctx, op, shape));
    tu_assert_msg_has(te_ctx_errmsg(ctx), a, b);
    te_ctx_free(ctx);
}

static void test_errors(void **state) {
    (void)state;
    expect_err("matmul", "M=2,N=2,K=2,dtype=int8",
               "ops: matmul: unsupported dtype 'int8' for parameter 'dtype'",
               "(allowed: float32, float64, float16, bfloat16)");
    expect_err("matmul", "M=2,N=2,K=2,dtype=float16x2", "unsupported dtype 'float16x2'",
               "parameter 'dtype'");
    expect_err("relu", "D0=8,dtype=bfloat16", "ops: relu: unsupported dtype 'bfloat16' for parameter 'dtype'",
               "(allowed: float32, float64; float16 and bfloat16 only for matmul, batch_matmul, "
               "conv2d_nchw, conv2d_nhwc)");
    expect_err("dense", "M=2,N=2,K=2,dtype=float16", "unsupported dtype 'float16'",
               "allowed: float32, float64;");
    expect_err("conv2d_nhwc", "N=1,C=3,H=8,W=8,K=4,R=3,S=3,dtype=half",
               "ops: conv2d_nhwc: unsupported dtype 'half' for parameter 'dtype'",
               "(allowed: float32, float64, float16, bfloat16)");
}

/* The stages: 16-bit inputs and output, a float32 reduce stage. */
static void test_stages(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", "M=8,N=8,K=8,dtype=bfloat16");
    assert_non_null(w);
    assert_true(te_dtype_eq(w->dtype, TE_BFLOAT16));
    assert_true(te_dtype_eq(w->inputs[0]->dtype, TE_BFLOAT16));
    assert_true(te_dtype_eq(w->inputs[1]->dtype, TE_BFLOAT16));
    te_tensor *C = w->outs[0];
    assert_string_equal(C->name, "C");
    assert_true(te_dtype_eq(C->dtype, TE_BFLOAT16));
    assert_int_equal(C->body->kind, TE_CAST);
    const te_expr *rd = C->body->u.un.a;
    assert_int_equal(rd->kind, TE_READ);
    te_tensor *acc = rd->u.read.tensor;
    assert_string_equal(acc->name, "C_acc");
    assert_true(te_dtype_eq(acc->dtype, TE_FLOAT32));
    assert_int_equal(acc->body->kind, TE_REDUCE);
    te_ctx_free(ctx);
}

static rt_module *build_default(te_ctx *ctx, ops_workload *w) {
    sch_schedule *s = ops_default_schedule(w, "llvm");
    if (!s) fail_msg("%s: %s", w->key, te_ctx_errmsg(ctx));
    rt_module *m = cg_build(s, w->nargs, w->args, "llvm", NULL);
    if (!m) fail_msg("%s: %s", w->key, te_ctx_errmsg(ctx));
    return m;
}

/* matmul M x N x K in t, by hand: the stated tolerance, the reference
 * from the rounded inputs. */
static void matmul_by_hand(te_dtype t, int64_t M, int64_t N, int64_t K) {
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    char shape[128];
    snprintf(shape, sizeof shape, "M=%lld,N=%lld,K=%lld,dtype=%s", (long long)M, (long long)N,
             (long long)K, te_dtype_str(t));
    ops_workload *w = ops_build(ctx, "matmul", shape);
    if (!w) fail_msg("%s", te_ctx_errmsg(ctx));
    rt_module *m = build_default(ctx, w);
    DLTensor *a = hu_rand(t, &seed, 2, (int64_t[]){M, K}), *b = hu_rand(t, &seed, 2, (int64_t[]){K, N});
    DLTensor *c = hu_nan(t, 2, (int64_t[]){M, N});
    if (rt_call(m, "default", 3, (DLTensor *[]){a, b, c})) fail_msg("%s", rt_module_errmsg(m));
    const uint16_t *pa = a->data, *pb = b->data, *pc = c->data;
    double rtol = t.code == TE_BFLOAT ? 0x1p-7 : 0x1p-10, atol = 1e-4 + 1e-6 * (double)K;
    int bad = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double want = 0;
            for (int64_t k = 0; k < K; k++)
                want += hu_value(t, pa[i * K + k]) * hu_value(t, pb[k * N + j]);
            double got = hu_value(t, pc[i * N + j]);
            if (!(fabs(got - want) <= atol + rtol * fabs(want)) && bad++ < 5)
                print_error("%s C[%lld,%lld] = %.8g, want %.8g\n", w->key, (long long)i,
                            (long long)j, got, want);
        }
    assert_int_equal(bad, 0);
    /* the harness agrees (its own fresh data) */
    assert_int_equal(ops_check_module(w, m, NULL, seed), 0);
    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_tensor_free(c);
    rt_module_free(m);
    te_ctx_free(ctx);
}

static void test_matmul_f16(void **state) {
    (void)state;
    matmul_by_hand(TE_FLOAT16, 37, 53, 29);
    matmul_by_hand(TE_FLOAT16, 128, 96, 160);
}

static void test_matmul_bf16(void **state) {
    (void)state;
    matmul_by_hand(TE_BFLOAT16, 37, 53, 29);
    matmul_by_hand(TE_BFLOAT16, 128, 96, 160);
}

/* The other workloads through ops_check_module (NaN-poisoned outputs,
 * the reference from the rounded inputs, ops_tolerance: the bound above). */
static void check_op(const char *op, const char *shape) {
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, op, shape);
    if (!w) fail_msg("%s", te_ctx_errmsg(ctx));
    double rtol, atol;
    ops_tolerance(w, &rtol, &atol);
    assert_true(rtol == (w->dtype.code == TE_BFLOAT ? 0x1p-7 : 0x1p-10));
    rt_module *m = build_default(ctx, w);
    int64_t bad = ops_check_module(w, m, NULL, tu_seed());
    if (bad) fail_msg("%s: %lld mismatches (%s)", w->key, (long long)bad, te_ctx_errmsg(ctx));
    rt_module_free(m);
    te_ctx_free(ctx);
}

static void test_batch_matmul(void **state) {
    (void)state;
    check_op("batch_matmul", "B=3,M=17,N=33,K=21,dtype=float16");
    check_op("batch_matmul", "B=2,M=16,N=32,K=24,transpose_b=1,dtype=bfloat16");
    check_op("matmul", "M=19,N=23,K=31,transpose_a=1,dtype=bfloat16");
}

static void test_conv2d(void **state) {
    (void)state;
    check_op("conv2d_nchw", "N=1,C=5,H=11,W=13,K=32,R=3,S=3,pad=1,dtype=float16");
    check_op("conv2d_nchw", "N=2,C=8,H=9,W=9,K=6,R=3,S=3,stride=2,dtype=bfloat16");
    check_op("conv2d_nhwc", "N=1,C=7,H=10,W=10,K=24,R=3,S=3,pad=1,dtype=bfloat16");
    check_op("conv2d_nhwc", "N=1,C=4,H=6,W=6,K=5,R=1,S=1,dtype=float16");
}

/* Whether w's stages include one named `name`. */
static bool has_stage(const ops_workload *w, const char *name) {
    te_tensor *out = w->args[w->nargs - 1];
    for (int i = 0; i < out->ninputs; i++)
        if (!strcmp(out->inputs[i]->name, name)) return true;
    return false;
}

/* 16-bit conv2d_nhwc without groups whose output channels and R S C are
 * multiples of 16 is declared as its implicit GEMM (Col, W2, O_acc,
 * O_gemm, O): padded, strided, dilated, unpadded 1x1, batched, and with
 * output positions no multiple of 64; the reference's numbers. Other
 * shapes, groups, float32 stay direct. */
static void test_conv2d_gemm_form(void **state) {
    (void)state;
    static const char *const fits[] = {
        "N=2,C=16,H=8,W=8,K=16,R=3,S=3,pad=1,dtype=float16",
        "N=1,C=16,H=7,W=7,K=32,R=3,S=3,stride=2,pad=1,dtype=bfloat16",
        "N=1,C=16,H=8,W=8,K=16,R=3,S=3,pad=2,dilation=2,dtype=float16",
        "N=1,C=32,H=4,W=4,K=16,R=1,S=1,dtype=bfloat16",
        /* 49 and 18 output positions: the GEMM's rows padded to 64 */
        "N=1,C=16,H=7,W=7,K=16,R=3,S=3,pad=1,dtype=float16",
        "N=2,C=48,H=3,W=3,K=32,R=1,S=1,dtype=bfloat16",
    };
    for (size_t i = 0; i < sizeof fits / sizeof *fits; i++) {
        te_ctx *ctx = te_ctx_new();
        ops_workload *w = ops_build(ctx, "conv2d_nhwc", fits[i]);
        if (!w) fail_msg("%s", te_ctx_errmsg(ctx));
        if (!has_stage(w, "O_gemm")) fail_msg("%s: not declared as the implicit GEMM", fits[i]);
        te_ctx_free(ctx);
        check_op("conv2d_nhwc", fits[i]);
    }
    static const char *const direct[] = {
        "N=1,C=7,H=6,W=6,K=16,R=3,S=3,pad=1,dtype=float16",   /* R S C = 63 */
        "N=1,C=16,H=8,W=8,K=24,R=3,S=3,pad=1,dtype=float16",  /* K = 24 */
        "N=1,C=32,H=8,W=8,K=32,R=3,S=3,pad=1,groups=2,dtype=float16",
        "N=2,C=16,H=8,W=8,K=16,R=3,S=3,pad=1",                /* float32 */
    };
    for (size_t i = 0; i < sizeof direct / sizeof *direct; i++) {
        te_ctx *ctx = te_ctx_new();
        ops_workload *w = ops_build(ctx, "conv2d_nhwc", direct[i]);
        if (!w) fail_msg("%s", te_ctx_errmsg(ctx));
        if (has_stage(w, "O_gemm")) fail_msg("%s: declared as a GEMM", direct[i]);
        te_ctx_free(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),         cmocka_unit_test(test_errors),
        cmocka_unit_test(test_stages),       cmocka_unit_test(test_matmul_f16),
        cmocka_unit_test(test_matmul_bf16),  cmocka_unit_test(test_batch_matmul),
        cmocka_unit_test(test_conv2d),       cmocka_unit_test(test_conv2d_gemm_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
