/*
 * tests/test_autotune_xreduce.c — the GPU cross-thread reduction sketch
 * rule (Ansor's RuleCrossThreadReduction): golden sketches of long and
 * short reductions, and random programs of the cross-thread sketch that
 * apply, pass the GPU pipeline, carry a reduce axis bound to threadIdx.x
 * in their step log, compile with NVRTC to shuffles and, on a GPU, match
 * the reference (left out without one; see gpu_skip.h).
 */
#include <stdio.h>
#include <string.h>

#include "gpu_sample.h"
#include "gpu_skip.h"
#include "testutil.h"

static int sketches(te_ctx *ctx, const char *key, tune_sketch *sk, int max) {
    tune_workload w;
    assert_int_equal(tune_build_workload(ctx, key, &w), 0);
    int n = tune_generate_sketches_gpu(ctx, &w, sk, max);
    if (n < 1) fail_msg("%s: %s", key, te_ctx_errmsg(ctx));
    return n;
}

static void test_golden(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_sketch sk[TUNE_MAX_SKETCHES];
    /* 4096 reduced per output, two outputs: the cross-thread sketch
     * first, then the flat one (the rule does not skip the rest). */
    int n = sketches(ctx, "sum(D0=2,D1=4096,axes=2)", sk, TUNE_MAX_SKETCHES);
    assert_int_equal(n, 2);
    print_message("sum(D0=2,D1=4096,axes=2): [%s] [%s]\n", sk[0].desc, sk[1].desc);
    assert_string_equal(sk[0].desc, "Y: cross-thread reduction");
    assert_string_equal(sk[1].desc, "Y: bind threads");
    assert_true(tune_sketch_is_gpu(&sk[0]));
    assert_int_equal(sk[0].nunits, 1);
    assert_int_equal(sk[0].units[0].kind, TUNE_UNIT_GPU_XREDUCE);
    assert_int_equal(sk[0].nholes, 1);
    assert_int_equal(sk[0].holes[0].kind, TUNE_HOLE_GPU_THREADS);
    /* max 1: the first only. */
    assert_int_equal(sketches(ctx, "sum(D0=2,D1=4096,axes=2)", sk, 1), 1);
    assert_string_equal(sk[0].desc, "Y: cross-thread reduction");
    /* A reduction of a warp or less, and an elementwise op: flat only. */
    assert_int_equal(sketches(ctx, "sum(D0=64,D1=32,axes=2)", sk, TUNE_MAX_SKETCHES), 1);
    assert_string_equal(sk[0].desc, "Y: bind threads");
    assert_int_equal(sketches(ctx, "relu(D0=4,D1=300)", sk, TUNE_MAX_SKETCHES), 1);
    /* Softmax: both row reductions reduce across threads, the
     * elementwise stages stay flat. */
    n = sketches(ctx, "softmax(M=4,N=1000)", sk, TUNE_MAX_SKETCHES);
    assert_int_equal(n, 2);
    print_message("softmax(M=4,N=1000): [%s] [%s]\n", sk[0].desc, sk[1].desc);
    int nx = 0;
    for (int u = 0; u < sk[0].nunits; u++) nx += sk[0].units[u].kind == TUNE_UNIT_GPU_XREDUCE;
    assert_int_equal(nx, 2);
    for (int u = 0; u < sk[1].nunits; u++)
        assert_int_not_equal(sk[1].units[u].kind, TUNE_UNIT_GPU_XREDUCE);
    te_ctx_free(ctx);
}

/* Random programs of key's cross-thread sketch. */
static void sample(const char *key, int n, int ncompile, uint64_t seed) {
    bool nvrtc = rt_nvrtc_available();
    gs_sampler g;
    gs_open(&g, key, seed);
    int compiled = 0, ran = 0;
    for (int k = 0; k < n; k++) {
        tir_func *f;
        sch_schedule *s = gs_draw(&g, k, &f);
        /* The log binds a reduce axis to threadIdx.x. */
        assert_non_null(strstr(tune_steps_key(g.ctx, s), "threadIdx.x"));
        tir_func *lowered = tir_run_pipeline(g.ctx, f, &g.po);
        if (!lowered) fail_msg("%s: program %d rejected: %s", key, k, te_ctx_errmsg(g.ctx));
        assert_non_null(strstr(tir_func_str(g.ctx, lowered), "allreduce."));
        if (!nvrtc || compiled >= ncompile) continue;
        rt_module *m = gs_build(&g, s, k, "verified");
        compiled++;
        assert_non_null(strstr(rt_module_get_text(m, "source"), "__shfl_down_sync"));
        ran += gs_check(&g, m, s, k);
        rt_module_free(m);
    }
    print_message("%s: %d programs, %d compiled, %d run on the GPU\n", key, n, compiled, ran);
    gs_close(&g);
}

static void test_random_programs(void **st) {
    (void)st;
    /* Lowering and the verifier are checked everywhere. */
    if (!rt_nvrtc_available())
        tu_skip_part("the NVRTC compiles and GPU runs", rt_last_error());
    else if (!rt_cuda_available())
        tu_skip_part("the GPU runs (compiled with NVRTC)", rt_last_error());
    sample("sum(D0=2,D1=4096,axes=2)", 12, 3, 0x71);
    sample("max(D0=5,D1=6,D2=70,axes=5)", 12, 2, 0x72);
    sample("softmax(M=3,N=500)", 8, 2, 0x73);
    sample("layer_norm(M=2,N=300)", 8, 2, 0x74);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_random_programs),
    };
    return tu_run_group(tests);
}
