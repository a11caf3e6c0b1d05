/*
 * ops_schedule_cuda_gemm: the CUDA-core float32 GEMM template over its
 * knobs — block tiles of 64 and 128, k chunks of 8 to 32, pipelines of 1
 * to 4 stages, batched and odd shapes — compiled with NVRTC for sm_80 and
 * sm_90 (PTX checked for cp.async where the tiles are pipelined) and,
 * where a GPU is present, run against the matmul's double-precision
 * reference with NaN-poisoned outputs (ops_check_module, ops_tolerance).
 * Every refusal's message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_skip.h"
#include "testutil.h"

static void check(const char *op, const char *shape, ops_cuda_gemm_config c, const char *arch) {
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, op, shape);
    if (!w) fail_msg("%s: %s", shape, te_ctx_errmsg(ctx));
    sch_schedule *s = sch_create(ctx, 1, &w->args[2]);
    if (ops_schedule_cuda_gemm(s, w->args[2], w->args[0], w->args[1], &c))
        fail_msg("%s: %s", w->key, te_ctx_errmsg(ctx));
    char target[64];
    snprintf(target, sizeof target, "cuda -arch=%s", arch);
    rt_module *m = cg_build(s, w->nargs, w->args, target, NULL);
    if (!m) fail_msg("%s: %s", w->key, te_ctx_errmsg(ctx));
    const char *src = rt_module_get_text(m, "source"), *ptx = rt_module_get_text(m, "ptx");
    if (getenv("LOOM_TEST_DUMP")) fputs(src, stderr);
    assert_non_null(strstr(src, "A_shared"));
    if (c.stages > 1) {
        char wait[64];
        snprintf(wait, sizeof wait, "cp.async.wait_group %d", c.stages - 1);
        assert_non_null(strstr(ptx, wait));
    } else {
        assert_null(strstr(ptx, "cp.async"));
    }
    tu_check_on_gpu(w, m);
    rt_module_free(m);
    te_ctx_free(ctx);
}

static void test_knobs(void **state) {
    (void)state;
    tu_require_nvrtc();
    check("matmul", "M=256,N=256,K=96", (ops_cuda_gemm_config){2, 16, 4, 2, 16, 4, 8, 2}, "sm_90");
    check("matmul", "M=256,N=256,K=96", (ops_cuda_gemm_config){2, 16, 4, 2, 16, 4, 16, 3}, "sm_80");
    check("matmul", "M=128,N=256,K=64", (ops_cuda_gemm_config){2, 8, 4, 2, 16, 4, 8, 4}, "sm_90");
    check("matmul", "M=128,N=128,K=40", (ops_cuda_gemm_config){2, 8, 4, 2, 8, 4, 8, 4}, "sm_90");
    /* a shape the tiles do not divide (guards, scalar copies) */
    check("matmul", "M=100,N=70,K=36", (ops_cuda_gemm_config){2, 8, 4, 2, 8, 4, 8, 1}, "sm_90");
    check("batch_matmul", "B=2,M=64,N=128,K=48", (ops_cuda_gemm_config){1, 16, 4, 2, 8, 8, 16, 2},
          "sm_90");
}

static void expect_error(ops_cuda_gemm_config c, const char *msg) {
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", "M=64,N=64,K=64");
    sch_schedule *s = sch_create(ctx, 1, &w->args[2]);
    assert_int_equal(ops_schedule_cuda_gemm(s, w->args[2], w->args[0], w->args[1], &c), -1);
    if (!strstr(te_ctx_errmsg(ctx), msg)) fail_msg("got '%s', want '%s'", te_ctx_errmsg(ctx), msg);
    te_ctx_free(ctx);
}

static void test_errors(void **state) {
    (void)state;
    expect_error((ops_cuda_gemm_config){2, 8, 0, 2, 8, 4, 8, 1},
                 "cuda_gemm: every tile knob must be at least 1 (got vt 2x2, th 8x8, in 0x4, kt 8)");
    expect_error((ops_cuda_gemm_config){1, 64, 1, 1, 32, 1, 8, 1},
                 "cuda_gemm: 64 x 32 threads a block; at most 1024");
    expect_error((ops_cuda_gemm_config){2, 8, 4, 2, 8, 4, 8, 5},
                 "cuda_gemm: 5 pipeline stages; 0 or 1 (none) to 4");
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", "M=100,N=64,K=64");
    sch_schedule *s = sch_create(ctx, 1, &w->args[2]);
    assert_int_equal(ops_schedule_cuda_gemm(s, w->args[2], w->args[0], w->args[1],
                                            &(ops_cuda_gemm_config){2, 8, 4, 2, 8, 4, 8, 2}),
                     -1);
    assert_non_null(strstr(te_ctx_errmsg(ctx), "cuda_gemm: a pipeline of 2 stages needs tiles that "
                                               "divide the shape: 100x64x64 by 64x64x8"));
    te_ctx_free(ctx);
    ctx = te_ctx_new();
    w = ops_build(ctx, "relu", "D0=64");
    assert_non_null(w);
    s = sch_create(ctx, 1, &w->args[1]);
    assert_int_equal(ops_schedule_cuda_gemm(s, w->args[1], w->args[0], w->args[0], NULL), -1);
    assert_non_null(strstr(te_ctx_errmsg(ctx), "cuda_gemm: 'Y' is not a matmul"));
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_knobs),
        cmocka_unit_test(test_errors),
    };
    return tu_run_group(tests);
}
