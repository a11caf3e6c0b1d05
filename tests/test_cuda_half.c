/*
 * tests/test_cuda_half.c — float16 and bfloat16 through the cuda target:
 * the default CUDA matmul schedule of dtype=float16/bfloat16 workloads
 * compiled with NVRTC for sm_80 and sm_90 (__half/__nv_bfloat16 storage,
 * the conversion intrinsics, cuda_fp16.h/cuda_bf16.h included only then)
 * and checked against the double reference on a GPU where there is one;
 * 2-lane vector stores as __half2/__nv_bfloat162; a float32 kernel that
 * includes neither header; and the include lookup's errors: with
 * LOOM_CUDA_INCLUDE pointing to an empty directory, and with a search
 * that finds nothing. Skipped whole (exit 77) without NVRTC, except the
 * search, which needs none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_skip.h"

static void has(const char *src, const char *needle) {
    if (!strstr(src, needle)) fprintf(stderr, "source lacks '%s':\n%s\n", needle, src);
    assert_non_null(strstr(src, needle));
}

static void matmul(const char *dtype, const char *arch) {
    te_ctx *ctx = te_ctx_new();
    char shape[96], target[64];
    /* not multiples of 16: the CUDA-core GEMM (tensor cores: test_cuda_wmma) */
    snprintf(shape, sizeof shape, "M=120,N=90,K=60,dtype=%s", dtype);
    snprintf(target, sizeof target, "cuda -arch=%s", arch);
    ops_workload *w = ops_build(ctx, "matmul", shape);
    assert_non_null(w);
    sch_schedule *s = ops_default_schedule(w, target);
    if (!s) fail_msg("%s", te_ctx_errmsg(ctx));
    rt_module *m = cg_build(s, w->nargs, w->args, target, NULL);
    if (!m) fail_msg("%s %s: %s", dtype, arch, te_ctx_errmsg(ctx));
    const char *src = rt_module_get_text(m, "source");
    bool bf = !strcmp(dtype, "bfloat16");
    has(src, bf ? "#include <cuda_bf16.h>" : "#include <cuda_fp16.h>");
    assert_null(strstr(src, bf ? "cuda_fp16.h>" : "cuda_bf16.h>"));
    has(src, bf ? "const __nv_bfloat16 *__restrict__ A" : "const __half *__restrict__ A");
    has(src, bf ? "__bfloat162float(" : "__half2float(");
    has(src, bf ? "__float2bfloat16_rn(" : "__float2half_rn(");
    assert_non_null(rt_module_get_text(m, "ptx"));
    tu_check_on_gpu(w, m);
    rt_module_free(m);
    te_ctx_free(ctx);
}

static void test_matmul_f16(void **state) {
    (void)state;
    tu_require_nvrtc();
    matmul("float16", "sm_80");
    matmul("float16", "sm_90");
}

static void test_matmul_bf16(void **state) {
    (void)state;
    tu_require_nvrtc();
    matmul("bfloat16", "sm_80");
    matmul("bfloat16", "sm_90");
}

/* B[i] = t(float32(A[i]) * 2), 2 lanes per thread, vectorized. */
static rt_module *scale2(te_ctx *ctx, te_dtype t, const char *target) {
    te_tensor *A = te_placeholder(ctx, "A", t, TE_SHAPE(256));
    te_expr *i = te_axis(ctx, "i", 256);
    te_tensor *B = te_compute(ctx, "B", TE_AXES(i),
                              te_cast(t, te_mul(te_cast(TE_FLOAT32, te_read(A, i)), te_float(ctx, 2))));
    sch_schedule *s = sch_create(ctx, 1, &B);
    te_expr *o, *v, *bx, *tx;
    assert_int_equal(sch_split(s, B, B->axes[0], 2, &o, &v), 0);
    assert_int_equal(sch_split(s, B, o, 64, &bx, &tx), 0);
    assert_int_equal(sch_bind(s, B, bx, "blockIdx.x"), 0);
    assert_int_equal(sch_bind(s, B, tx, "threadIdx.x"), 0);
    assert_int_equal(sch_vectorize(s, B, v), 0);
    return cg_build(s, 2, (te_tensor *[]){A, B}, target, NULL);
}

static void test_vector2(void **state) {
    (void)state;
    tu_require_nvrtc();
    te_dtype types[2] = {TE_FLOAT16, TE_BFLOAT16};
    for (int k = 0; k < 2; k++) {
        te_ctx *ctx = te_ctx_new();
        rt_module *m = scale2(ctx, types[k], "cuda -arch=sm_80");
        if (!m) fail_msg("%s", te_ctx_errmsg(ctx));
        const char *src = rt_module_get_text(m, "source");
        has(src, k ? "*(__nv_bfloat162 *)(B + " : "*(__half2 *)(B + ");
        has(src, k ? "__halves2bfloat162(" : "__halves2half2(");
        rt_module_free(m);
        te_ctx_free(ctx);
    }
}

/* A float32 kernel needs neither header, so it compiles whatever
 * LOOM_CUDA_INCLUDE says; a 16-bit one names the header and the variable. */
static void test_include_env_empty_dir(void **state) {
    (void)state;
    tu_require_nvrtc();
    char dir[] = "/tmp/loom_cuda_inc_XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("LOOM_CUDA_INCLUDE", dir, 1);
    te_ctx *ctx = te_ctx_new();
    rt_module *m = scale2(ctx, TE_FLOAT32, "cuda");
    if (!m) fail_msg("%s", te_ctx_errmsg(ctx));
    assert_null(strstr(rt_module_get_text(m, "source"), "#include"));
    rt_module_free(m);
    assert_null(scale2(ctx, TE_FLOAT16, "cuda"));
    char want[160];
    snprintf(want, sizeof want, "CUDA header cuda_fp16.h not found in LOOM_CUDA_INCLUDE='%s'", dir);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "uses float16/bfloat16", want,
                      "set LOOM_CUDA_INCLUDE to the CUDA include directory that holds it");
    te_ctx_free(ctx);
    /* unset: found beside the NVRTC library (or in /usr/local/cuda/include) */
    unsetenv("LOOM_CUDA_INCLUDE");
    char found[4096];
    assert_int_equal(rt_cuda_include_dir("cuda_bf16.h", found, sizeof found), 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/cuda_bf16.h", found);
    assert_int_equal(access(path, R_OK), 0);
    rmdir(dir);
}

/* The search itself, on places that hold nothing (needs no NVRTC). */
static void test_include_search_finds_nothing(void **state) {
    (void)state;
    char dir[] = "/tmp/loom_cuda_inc_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char out[256];
    const char *dirs[] = {dir, NULL, "/nonexistent/include"};
    assert_int_equal(rt_cuda_include_search("cuda_bf16.h", NULL, dirs, 3, out, sizeof out), -1);
    char want[200];
    snprintf(want, sizeof want, "CUDA header cuda_bf16.h not found (looked in: %s, /nonexistent/include)", dir);
    tu_assert_msg_has(rt_last_error(), want, "; set LOOM_CUDA_INCLUDE to the CUDA include directory");
    assert_int_equal(rt_cuda_include_search("cuda_fp16.h", "", NULL, 0, out, sizeof out), -1);
    tu_assert_msg_has(rt_last_error(), "cuda_fp16.h not found (looked in: nowhere)", "LOOM_CUDA_INCLUDE");
    /* a directory that has it is taken, the environment first */
    FILE *f = fopen((snprintf(out, sizeof out, "%s/cuda_bf16.h", dir), out), "w");
    assert_non_null(f);
    fclose(f);
    char got[256];
    assert_int_equal(rt_cuda_include_search("cuda_bf16.h", NULL, dirs, 3, got, sizeof got), 0);
    assert_string_equal(got, dir);
    assert_int_equal(rt_cuda_include_search("cuda_bf16.h", dir, NULL, 0, got, sizeof got), 0);
    assert_string_equal(got, dir);
    unlink(out);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_f16),
        cmocka_unit_test(test_matmul_bf16),
        cmocka_unit_test(test_vector2),
        cmocka_unit_test(test_include_env_empty_dir),
        cmocka_unit_test(test_include_search_finds_nothing),
    };
    return tu_run_group(tests);
}
