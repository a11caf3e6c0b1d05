/*
 * tests/test_cuda_codegen.c — every GPU schedule of the harness through
 * the cuda target: lowering with the GPU passes, CUDA C generation and
 * NVRTC compilation (run everywhere NVRTC exists), checks of what the
 * source must contain, and a run against the double reference on the
 * GPU (left out where there is no driver or GPU; skipped whole, exit 77,
 * without NVRTC: see gpu_skip.h).
 */
#include <stdio.h>
#include <string.h>

#include "cuda_harness.h"
#include "gpu_skip.h"

/* Builds, checks the source for each needle, and runs on the GPU if any. */
static void check(sched_case *c, sch_schedule *s, const char *target, const char *const *needles) {
    assert_non_null(s);
    rt_module *m = ch_build(c, s, target);
    assert_non_null(m);
    assert_string_equal(rt_module_kind(m), "cuda");
    const char *src = rt_module_get_text(m, "source");
    const char *ptx = rt_module_get_text(m, "ptx");
    assert_non_null(src);
    assert_non_null(ptx);
    assert_non_null(strstr(ptx, ".entry default_kernel0"));
    for (int i = 0; needles && needles[i]; i++) {
        if (!strstr(src, needles[i])) fprintf(stderr, "source lacks '%s':\n%s\n", needles[i], src);
        assert_non_null(strstr(src, needles[i]));
    }
    int64_t bad = ch_run(c, m);
    rt_module_free(m);
    /* No GPU: generation and the NVRTC compile were checked above. */
    if (bad == -2) tu_skip_part("the GPU run", rt_last_error());
    te_ctx_free(c->ctx);
    if (bad != -2) assert_int_equal(bad, 0);
}

static void test_matmul_naive(void **state) {
    (void)state;
    tu_require_nvrtc();
    sched_case c = sh_matmul(te_ctx_new(), 128, 96, 64);
    const char *needles[] = {"extern \"C\" __global__", "__restrict__", "blockIdx.y", "threadIdx.x",
                             NULL};
    check(&c, ch_matmul_naive(&c, 16), "cuda", needles);
}

static void test_matmul_non_divisible(void **state) {
    (void)state;
    tu_require_nvrtc();
    sched_case c = sh_matmul(te_ctx_new(), 100, 70, 33);
    const char *needles[] = {"if (", NULL};
    check(&c, ch_matmul_naive(&c, 16), "cuda -arch=sm_80", needles);
}

static void test_matmul_shared(void **state) {
    (void)state;
    tu_require_nvrtc();
    sched_case c = sh_matmul(te_ctx_new(), 128, 128, 64);
    const char *needles[] = {"__shared__", "__syncthreads();", "C_local", NULL};
    check(&c, ch_matmul_shared(&c, 16), "cuda", needles);
}

static void test_matmul_shared_non_divisible(void **state) {
    (void)state;
    tu_require_nvrtc();
    sched_case c = sh_matmul(te_ctx_new(), 72, 40, 50);
    const char *needles[] = {"__shared__", "__syncthreads();", NULL};
    check(&c, ch_matmul_shared(&c, 16), "cuda", needles);
}

static void test_matmul_vthread_vectorized(void **state) {
    (void)state;
    tu_require_nvrtc();
    sched_case c = sh_matmul(te_ctx_new(), 128, 128, 64);
    /* vthreads 2x2 of 4x4: a 64-element accumulator; float4 fetches. */
    const char *needles[] = {"float C_local[64]", "*(float4 *)(A_shared", "*(const float4 *)(A +",
                             "__launch_bounds__(64)", "__syncthreads();", NULL};
    check(&c, ch_matmul_vthread(&c), "cuda -arch=sm_90", needles);
}

static void test_conv2d_naive(void **state) {
    (void)state;
    tu_require_nvrtc();
    sched_case c = sh_conv2d(te_ctx_new(), 1, 8, 14, 14, 16, 3, 3, 1, 1);
    const char *needles[] = {"O_local", "threadIdx.x", NULL};
    check(&c, ch_conv2d_naive(&c, 128), "cuda", needles);
}

static void test_conv2d_shared(void **state) {
    (void)state;
    tu_require_nvrtc();
    sched_case c = sh_conv2d(te_ctx_new(), 1, 8, 16, 16, 16, 3, 3, 1, 1);
    const char *needles[] = {"__shared__", "__syncthreads();", NULL};
    check(&c, ch_conv2d_shared(&c), "cuda", needles);
}

static void test_unroll_pragma(void **state) {
    (void)state;
    tu_require_nvrtc();
    /* auto_unroll_max_step with unroll_explicit 0 leaves the unrolling of
     * the inner loop to the CUDA compiler. */
    sched_case c = sh_matmul(te_ctx_new(), 64, 64, 32);
    sch_schedule *s = ch_matmul_naive(&c, 16);
    assert_non_null(s);
    te_expr *ko, *ki;
    assert_int_equal(sch_split(s, c.out, c.rax[0], 4, &ko, &ki), 0);
    assert_int_equal(sch_pragma(s, c.out, ko, "auto_unroll_max_step", 16), 0);
    assert_int_equal(sch_pragma(s, c.out, ko, "unroll_explicit", 0), 0);
    const char *needles[] = {"#pragma unroll", NULL};
    check(&c, s, "cuda", needles);
}

/* Every math intrinsic in one kernel, float32 and float64: the names CUDA's
 * math library gives them (rint rounds ties to even, as ONNX's Round),
 * compiled by NVRTC. */
static void test_math_intrinsics(void **state) {
    (void)state;
    tu_require_nvrtc();
    for (int wide = 0; wide < 2; wide++) {
        te_ctx *ctx = te_ctx_new();
        te_dtype t = wide ? TE_FLOAT64 : TE_FLOAT32;
        te_tensor *A = te_placeholder(ctx, "A", t, TE_SHAPE(256));
        te_expr *i = te_axis(ctx, "i", 256);
        te_expr *a = te_read(A, i), *h = te_mul(a, te_const(ctx, t, 0.5));
        te_expr *a1 = te_add(te_fabs(a), te_const(ctx, t, 1));
        te_expr *sum = te_call(TE_INTRIN_FMOD, 2, (te_expr *[]){a, te_const(ctx, t, 0.75)});
        const te_intrin on_a[] = {TE_INTRIN_RINT, TE_INTRIN_SIN,   TE_INTRIN_COS, TE_INTRIN_TAN,
                                  TE_INTRIN_ATAN, TE_INTRIN_SINH,  TE_INTRIN_COSH, TE_INTRIN_ASINH,
                                  TE_INTRIN_FLOOR, TE_INTRIN_CEIL, TE_INTRIN_EXP};
        const te_intrin on_h[] = {TE_INTRIN_ASIN, TE_INTRIN_ACOS, TE_INTRIN_ATANH};
        for (size_t k = 0; k < sizeof on_a / sizeof *on_a; k++) sum = te_add(sum, te_call(on_a[k], 1, &a));
        for (size_t k = 0; k < sizeof on_h / sizeof *on_h; k++) sum = te_add(sum, te_call(on_h[k], 1, &h));
        sum = te_add(sum, te_call(TE_INTRIN_ACOSH, 1, &a1));
        te_tensor *B = te_compute(ctx, "B", TE_AXES(i), sum);
        assert_non_null(B);
        sch_schedule *s = sch_create(ctx, 1, &B);
        te_expr *bx, *tx;
        assert_int_equal(sch_split(s, B, B->axes[0], 64, &bx, &tx), 0);
        assert_int_equal(sch_bind(s, B, bx, "blockIdx.x"), 0);
        assert_int_equal(sch_bind(s, B, tx, "threadIdx.x"), 0);
        rt_module *m = cg_build(s, 2, (te_tensor *[]){A, B}, "cuda", NULL);
        if (!m) fail_msg("%s", te_ctx_errmsg(ctx));
        const char *src = rt_module_get_text(m, "source");
        const char *names[] = {"rint", "fmod", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                               "cosh", "asinh", "acosh", "atanh"};
        for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
            char call[16];
            snprintf(call, sizeof call, "%s%s(", names[k], wide ? "" : "f");
            if (!strstr(src, call)) fail_msg("source lacks '%s':\n%s", call, src);
        }
        assert_non_null(rt_module_get_text(m, "ptx"));
        rt_module_free(m);
        te_ctx_free(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_naive),
        cmocka_unit_test(test_matmul_non_divisible),
        cmocka_unit_test(test_matmul_shared),
        cmocka_unit_test(test_matmul_shared_non_divisible),
        cmocka_unit_test(test_matmul_vthread_vectorized),
        cmocka_unit_test(test_conv2d_naive),
        cmocka_unit_test(test_conv2d_shared),
        cmocka_unit_test(test_unroll_pragma),
        cmocka_unit_test(test_math_intrinsics),
    };
    return tu_run_group(tests);
}
