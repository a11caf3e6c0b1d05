/*
 * tests/test_codegen_llvm_half.c — float16 and bfloat16 through the LLVM
 * backend: every 16-bit pattern converted to float32 exactly; float32
 * values (ties, overflow, subnormals, NaN, infinities, random) rounded to
 * nearest even, compared bit for bit with te's rounding; scalar and
 * 16-lane vector code; on this host's CPU and on plain x86-64 (no F16C,
 * no AVX512-BF16: nothing may fall back to a libcall the JIT cannot
 * resolve); and arithmetic, which legalize_half does in float32 with one
 * rounding per operation.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "half_util.h"
#include "testutil.h"

static const char *targets[] = {"llvm", "llvm -mcpu=x86-64"};

static rt_module *build1(te_ctx *ctx, te_tensor *in, te_tensor *out, bool vec, const char *target) {
    sch_schedule *s = sch_create(ctx, 1, &out);
    assert_non_null(s);
    if (vec) {
        te_expr *o, *i;
        assert_int_equal(sch_split(s, out, out->axes[0], 16, &o, &i), 0);
        assert_int_equal(sch_vectorize(s, out, i), 0);
    }
    rt_module *m = cg_build(s, 2, (te_tensor *[]){in, out}, target, NULL);
    if (!m) fail_msg("%s", te_ctx_errmsg(ctx));
    return m;
}

static void call_ok(rt_module *m, DLTensor *a, DLTensor *b) {
    if (rt_call(m, "default", 2, (DLTensor *[]){a, b})) fail_msg("%s", rt_module_errmsg(m));
}

/* All 65536 patterns of t to float32: exact (NaN stays NaN). */
static void widen_all(te_dtype t) {
    const int64_t n = 65536;
    for (int ti = 0; ti < 2; ti++)
        for (int vec = 0; vec < 2; vec++) {
            te_ctx *ctx = te_ctx_new();
            te_tensor *A = te_placeholder(ctx, "A", t, TE_SHAPE(n));
            te_expr *i = te_axis(ctx, "i", n);
            te_tensor *B = te_compute(ctx, "B", TE_AXES(i), te_cast(TE_FLOAT32, te_read(A, i)));
            rt_module *m = build1(ctx, A, B, vec, targets[ti]);
            DLTensor *a = rt_tensor_alloc(hu_dl(t), 1, &n), *b = tu_nan_f32(1, &n);
            uint16_t *pa = a->data;
            for (int64_t k = 0; k < n; k++) pa[k] = (uint16_t)k;
            float *pb = b->data;
            pb[0] = 12345; /* pattern 0 is +0 */
            call_ok(m, a, b);
            int bad = 0;
            for (int64_t k = 0; k < n; k++) {
                double want = hu_value(t, (uint16_t)k);
                bool ok = isnan(want) ? isnan(pb[k]) : (double)pb[k] == want && !signbit(pb[k]) == !signbit(want);
                if (!ok && bad++ < 5)
                    print_error("%s %s vec=%d: 0x%04x -> %.9g, want %.9g\n", te_dtype_str(t),
                                targets[ti], vec, (unsigned)k, (double)pb[k], want);
            }
            assert_int_equal(bad, 0);
            rt_tensor_free(a);
            rt_tensor_free(b);
            rt_module_free(m);
            te_ctx_free(ctx);
        }
}

static void test_f16_to_f32(void **state) { (void)state; widen_all(TE_FLOAT16); }
static void test_bf16_to_f32(void **state) { (void)state; widen_all(TE_BFLOAT16); }

/* float32 -> t on edge cases and random values of all magnitudes. */
static void narrow(te_dtype t) {
    uint64_t seed = tu_seed();
    const int64_t n = 4096;
    float in[4096];
    int k = 0;
    const float edges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1.0f / 3, 65504.0f, 65519.0f,
                           65520.0f, 1e5f, -1e5f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 0x1p-14f,
                           2049.0f, 2051.0f, 257.0f, 259.0f, 0x1.fep127f, 0x1.ffp127f, FLT_MAX,
                           -FLT_MAX, 0x1p-133f, 0x1p-134f, 0x1.8p-133f, 1e-40f, 0x1.010100p0f,
                           0x1.008000p0f, 0x1.018000p0f};
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) in[k++] = edges[e];
    while (k < n) {
        /* random bits: every exponent, sign and mantissa */
        uint32_t u = (uint32_t)tu_rand_u64(&seed);
        float f;
        memcpy(&f, &u, sizeof f);
        in[k++] = f;
    }
    for (int ti = 0; ti < 2; ti++)
        for (int vec = 0; vec < 2; vec++) {
            te_ctx *ctx = te_ctx_new();
            te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(n));
            te_expr *i = te_axis(ctx, "i", n);
            te_tensor *B = te_compute(ctx, "B", TE_AXES(i), te_cast(t, te_read(A, i)));
            rt_module *m = build1(ctx, A, B, vec, targets[ti]);
            DLTensor *a = rt_tensor_alloc((DLDataType){kDLFloat, 32, 1}, 1, &n), *b = hu_nan(t, 1, &n);
            memcpy(a->data, in, sizeof in);
            call_ok(m, a, b);
            const uint16_t *pb = b->data;
            int bad = 0;
            for (int64_t j = 0; j < n; j++) {
                uint16_t want = hu_bits(t, in[j]);
                bool ok = isnan(in[j]) ? isnan(hu_value(t, pb[j])) && (pb[j] >> 15) == (want >> 15)
                                       : pb[j] == want;
                if (!ok && bad++ < 5)
                    print_error("%s %s vec=%d: %a -> 0x%04x, want 0x%04x\n", te_dtype_str(t),
                                targets[ti], vec, (double)in[j], pb[j], want);
            }
            assert_int_equal(bad, 0);
            rt_tensor_free(a);
            rt_tensor_free(b);
            rt_module_free(m);
            te_ctx_free(ctx);
        }
}

static void test_f32_to_f16(void **state) { (void)state; narrow(TE_FLOAT16); }
static void test_f32_to_bf16(void **state) { (void)state; narrow(TE_BFLOAT16); }

/* C = max(A * B + 0.5, A) in t: per operation rounding, in float32 and
 * back (legalize_half), reproduced exactly by the reference. */
static void arith(te_dtype t) {
    uint64_t seed = tu_seed();
    const int64_t n = 1000;
    for (int vec = 0; vec < 2; vec++) {
        te_ctx *ctx = te_ctx_new();
        te_tensor *A = te_placeholder(ctx, "A", t, TE_SHAPE(n));
        te_tensor *B = te_placeholder(ctx, "B", t, TE_SHAPE(n));
        te_expr *i = te_axis(ctx, "i", n);
        te_expr *a = te_read(A, i), *b = te_read(B, i);
        te_tensor *C = te_compute(ctx, "C", TE_AXES(i), te_max(te_add(te_mul(a, b), te_float(ctx, 0.5)), a));
        sch_schedule *s = sch_create(ctx, 1, &C);
        if (vec) {
            te_expr *o, *in;
            assert_int_equal(sch_split(s, C, C->axes[0], 8, &o, &in), 0);
            assert_int_equal(sch_vectorize(s, C, in), 0);
        }
        rt_module *m = cg_build(s, 3, (te_tensor *[]){A, B, C}, "llvm", NULL);
        if (!m) fail_msg("%s", te_ctx_errmsg(ctx));
        DLTensor *ta = hu_rand(t, &seed, 1, &n), *tb = hu_rand(t, &seed, 1, &n), *tc = hu_nan(t, 1, &n);
        if (rt_call(m, "default", 3, (DLTensor *[]){ta, tb, tc})) fail_msg("%s", rt_module_errmsg(m));
        const uint16_t *pa = ta->data, *pb = tb->data, *pc = tc->data;
        int bad = 0;
        for (int64_t k = 0; k < n; k++) {
            double x = hu_value(t, pa[k]), y = hu_value(t, pb[k]);
            double p = hu_value(t, hu_bits(t, (float)(x * y)));
            double q = hu_value(t, hu_bits(t, (float)(p + 0.5)));
            uint16_t want = hu_bits(t, q > x ? q : x);
            if (pc[k] != want && bad++ < 5)
                print_error("%s: %g * %g + 0.5 max a = 0x%04x, want 0x%04x\n", te_dtype_str(t), x,
                            y, pc[k], want);
        }
        assert_int_equal(bad, 0);
        rt_tensor_free(ta);
        rt_tensor_free(tb);
        rt_tensor_free(tc);
        rt_module_free(m);
        te_ctx_free(ctx);
    }
}

static void test_f16_arith(void **state) { (void)state; arith(TE_FLOAT16); }
static void test_bf16_arith(void **state) { (void)state; arith(TE_BFLOAT16); }

/* The runtime's argument check names the 16-bit types. */
static void test_arg_dtype_message(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 16;
    te_tensor *A = te_placeholder(ctx, "A", TE_BFLOAT16, TE_SHAPE(n));
    te_expr *i = te_axis(ctx, "i", n);
    te_tensor *B = te_compute(ctx, "B", TE_AXES(i), te_cast(TE_FLOAT16, te_read(A, i)));
    rt_module *m = build1(ctx, A, B, false, "llvm");
    DLTensor *f32 = tu_nan_f32(1, &n), *h = hu_nan(TE_FLOAT16, 1, &n), *bf = hu_nan(TE_BFLOAT16, 1, &n);
    assert_int_not_equal(rt_call(m, "default", 2, (DLTensor *[]){f32, h}), 0);
    tu_assert_msg_has(rt_module_errmsg(m), "argument 0 ('A')", "has dtype float32, expected bfloat16");
    assert_int_not_equal(rt_call(m, "default", 2, (DLTensor *[]){bf, bf}), 0);
    tu_assert_msg_has(rt_module_errmsg(m), "argument 1 ('B')", "has dtype bfloat16, expected float16");
    /* bfloat16 -> float16 through float32: 1/3 in bf16 = 0x3eab, -> f16 */
    ((uint16_t *)bf->data)[0] = 0x3eab;
    call_ok(m, bf, h);
    assert_int_equal(((uint16_t *)h->data)[0], hu_bits(TE_FLOAT16, hu_bf16_value(0x3eab)));
    rt_tensor_free(f32);
    rt_tensor_free(h);
    rt_tensor_free(bf);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* Unlegalized 16-bit arithmetic handed straight to the backend is an
 * error naming the pass, not bfloat16 bits added as integers. */
static void test_unlegalized_error(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_dtype types[2] = {TE_BFLOAT16, TE_FLOAT16};
    for (int k = 0; k < 2; k++) {
        tir_buffer *b = tir_buffer_new(ctx, "out", types[k], 1, (int64_t[]){4}, TIR_SCOPE_GLOBAL);
        b->is_param = true;
        te_expr *sum = te_add(tir_load(ctx, b, te_int(ctx, 1), NULL), te_float(ctx, 1));
        tir_stmt *st = tir_store(ctx, b, te_int(ctx, 0), sum, NULL);
        const tir_func *f = tir_func_new(ctx, "raw", 1, &b, st);
        assert_null(cg_llvm_build(ctx, 1, &f, NULL));
        char want[128];
        snprintf(want, sizeof want, "llvm: ADD on %s in function 'raw' reached code generation",
                 te_dtype_str(types[k]));
        tu_assert_msg_has(te_ctx_errmsg(ctx), want, "run tir_pass_legalize_half");
    }
    te_ctx_free(ctx);
}

/* The c target has no 16-bit floats: a clear error. */
static void test_c_target_error(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", "M=4,N=4,K=4,dtype=bfloat16");
    assert_non_null(w);
    sch_schedule *s = ops_default_schedule(w, "c");
    assert_non_null(s);
    assert_null(cg_build(s, w->nargs, w->args, "c", NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "bfloat16", "no C equivalent");
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_to_f32),  cmocka_unit_test(test_bf16_to_f32),
        cmocka_unit_test(test_f32_to_f16),  cmocka_unit_test(test_f32_to_bf16),
        cmocka_unit_test(test_f16_arith),   cmocka_unit_test(test_bf16_arith),
        cmocka_unit_test(test_arg_dtype_message), cmocka_unit_test(test_unlegalized_error),
        cmocka_unit_test(test_c_target_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
