/*
 * tests/test_autotune_gpu.c — the tuner's GPU side: golden GPU sketch
 * sets (matmul, conv2d, fused conv2d+bias+relu, flat stages); every
 * program of a fixed-seed random sample is either rejected by the GPU
 * verifier with a message or lowers, generates CUDA C and compiles with
 * NVRTC (left out without NVRTC), and runs correctly on the GPU where
 * there is one (left out elsewhere; see gpu_skip.h); mutation
 * keeps the tile constraints; a GPU program's log decodes back to it;
 * measuring or tuning for cuda without a driver fails with a clear
 * message.
 */
#include <stdlib.h>
#include <string.h>

#include "gpu_sample.h"
#include "gpu_skip.h"
#include "testutil.h"
#include "loom/autotune.h"
#include "loom/codegen.h"
#include "loom/ops.h"
#include "loom/tuning_db.h"

static const char *MM = "matmul(M=64,N=64,K=32)";
static const char *CONV = "conv2d(N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1)";
static const char *CBR = "conv2d_bias_relu(N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1)";

static void expect_gpu_sketch(const char *key, const char *golden) {
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, key, &w), 0);
    int n = tune_generate_sketches_gpu(ctx, &w, sk, TUNE_MAX_SKETCHES);
    if (n != 1) fail_msg("%s: %d GPU sketches: %s", key, n, te_ctx_errmsg(ctx));
    print_message("%s: %s\n", key, sk[0].desc);
    assert_string_equal(sk[0].desc, golden);
    assert_true(tune_sketch_is_gpu(&sk[0]));
    /* The CPU sketches are not GPU sketches. */
    tune_sketch cpu[TUNE_MAX_SKETCHES];
    int nc = tune_generate_sketches(ctx, &w, cpu, TUNE_MAX_SKETCHES);
    assert_true(nc > 0);
    for (int i = 0; i < nc; i++) assert_false(tune_sketch_is_gpu(&cpu[i]));
    te_ctx_free(ctx);
}

static void test_gpu_sketch_golden(void **st) {
    (void)st;
    expect_gpu_sketch(MM, "A: cache_read shared for C; B: cache_read shared for C; "
                          "C: cache_write local, tile SSSRRSRS, fuse into copy");
    /* Padding is inlined into its shared copy. */
    expect_gpu_sketch(CONV, "Pad: cache_read shared for O, inline; W: cache_read shared for O; "
                            "O: cache_write local, tile SSSRRSRS, fuse into copy");
    /* The bias + relu consumer takes the tile (one kernel); the
     * convolution accumulates in place, per thread. */
    expect_gpu_sketch(CBR, "Pad: cache_read shared for O, inline; W: cache_read shared for O; "
                           "O: local, tile SSSRRSRS, fuse into Y");
    /* No data reuse: flat thread binding (a reduction longer than a warp
     * also gets a cross-thread sketch: tests/test_autotune_xreduce.c). */
    expect_gpu_sketch("relu(D0=4,D1=32)", "Y: bind threads");
    /* Holes of the matmul tile: 2 spatial splits of 4, 1 reduce split of
     * 2, an unroll; one fetch per shared copy. */
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk;
    assert_int_equal(tune_build_workload(ctx, MM, &w), 0);
    assert_int_equal(tune_generate_sketches_gpu(ctx, &w, &sk, 1), 1);
    int split4 = 0, split2 = 0, unroll = 0, fetch = 0;
    for (int h = 0; h < sk.nholes; h++) {
        const tune_hole *ho = &sk.holes[h];
        if (ho->kind == TUNE_HOLE_SPLIT && ho->nvals == 4 && !ho->reduce) split4++;
        if (ho->kind == TUNE_HOLE_SPLIT && ho->nvals == 2 && ho->reduce) split2++;
        if (ho->kind == TUNE_HOLE_GPU_UNROLL) unroll++;
        if (ho->kind == TUNE_HOLE_GPU_FETCH) fetch++;
    }
    assert_int_equal(split4, 2);
    assert_int_equal(split2, 1);
    assert_int_equal(unroll, 1);
    assert_int_equal(fetch, 2);
    assert_int_equal(tune_generate_sketches_gpu(ctx, &w, &sk, 0), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "no room");
    te_ctx_free(ctx);
}

typedef struct {
    int valid, rejected, ran;
} sample_stats;

/* n random programs of key's GPU sketch: each applies; lowers through
 * the GPU pipeline or is rejected by the verifier with a message; the
 * first `ncompile` valid ones compile with NVRTC (when present; a
 * compile costs 0.1-0.3 s) and, on a GPU, match the reference. */
static sample_stats sample(const char *key, int n, int ncompile, uint64_t seed, bool nvrtc) {
    sample_stats ss = {0, 0, 0};
    gs_sampler g;
    gs_open(&g, key, seed);
    bool printed = false;
    for (int k = 0; k < n; k++) {
        tir_func *f;
        sch_schedule *s = gs_draw(&g, k, &f);
        te_ctx_clear_error(g.ctx);
        if (!tir_run_pipeline(g.ctx, f, &g.po)) {
            /* The verifier's message names the rule broken. */
            const char *msg = te_ctx_errmsg(g.ctx);
            assert_true(msg[0] != 0);
            if (ss.rejected == 0) print_message("%s: rejected: %s\n", key, msg);
            ss.rejected++;
            continue;
        }
        ss.valid++;
        if (!nvrtc || ss.valid > ncompile) continue;
        rt_module *m = gs_build(&g, s, k, "verified");
        if (!printed && getenv("LOOM_TEST_DUMP")) {
            print_message("%s\n", rt_module_get_text(m, "source"));
            printed = true;
        }
        ss.ran += gs_check(&g, m, s, k);
        rt_module_free(m);
    }
    gs_close(&g);
    print_message("%s: %d valid, %d rejected by the verifier, %d run on the GPU\n", key,
                  ss.valid, ss.rejected, ss.ran);
    return ss;
}

static void test_gpu_random_programs(void **st) {
    (void)st;
    bool nvrtc = rt_nvrtc_available(), gpu = nvrtc && rt_cuda_available();
    /* Lowering and the verifier are checked everywhere. */
    if (!nvrtc) tu_skip_part("the NVRTC compiles and GPU runs", rt_last_error());
    else if (!gpu) tu_skip_part("the GPU runs (compiled with NVRTC)", rt_last_error());
    const char *keys[] = {MM, CONV, CBR, "relu(D0=4,D1=300)", "sum(D0=3,D1=500,axes=2)"};
    int counts[] = {30, 30, 30, 6, 6};
    for (int i = 0; i < 5; i++) {
        sample_stats ss = sample(keys[i], counts[i], gpu ? counts[i] : 8, 0x5eed + (uint64_t)i,
                                 nvrtc);
        /* Most samples meet the limits (the sampler respects the thread
         * limit; only shared memory and copy extents are left to the
         * verifier). */
        assert_true(ss.valid * 2 >= counts[i]);
    }
}

/* A planted over-limit program is rejected by the verifier with its
 * message: 1024 threads per block on a 32-thread limit. */
static void test_gpu_verifier_rejects(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk;
    assert_int_equal(tune_build_workload(ctx, MM, &w), 0);
    assert_int_equal(tune_generate_sketches_gpu(ctx, &w, &sk, 1), 1);
    tune_program p;
    memset(&p, 0, sizeof p);
    for (int h = 0; h < sk.nholes; h++) {
        const tune_hole *ho = &sk.holes[h];
        int64_t *v = p.vals + ho->offset;
        if (ho->kind == TUNE_HOLE_SPLIT && !ho->reduce) v[0] = 1, v[1] = 32, v[2] = 1, v[3] = 2;
        else if (ho->kind == TUNE_HOLE_SPLIT) v[0] = 4, v[1] = 8;
    }
    sch_schedule *s = tune_program_apply(ctx, &w, &sk, &p);
    assert_non_null(s);
    tir_func *f = sch_lower(s, w.nargs, w.args, "default");
    assert_non_null(f);
    tir_pipeline_options po;
    memset(&po, 0, sizeof po);
    po.gpu = true;
    po.gpu_limits.max_threads_per_block = 256;
    po.gpu_limits.max_shared_bytes = 49152;
    assert_null(tir_run_pipeline(ctx, f, &po));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "1024");
    po.gpu_limits.max_threads_per_block = 1024;
    assert_non_null(tir_run_pipeline(ctx, f, &po));
    te_ctx_free(ctx);
}

static void test_gpu_mutation(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk;
    assert_int_equal(tune_build_workload(ctx, CBR, &w), 0);
    assert_int_equal(tune_generate_sketches_gpu(ctx, &w, &sk, 1), 1);
    uint64_t rng = 77;
    tune_program p;
    tune_program_random(&sk, 0, &rng, &p);
    int changed = 0;
    int64_t lim = tune_gpu_limits().max_threads_per_block;
    for (int k = 0; k < 60; k++) {
        tune_program q = p;
        if (tune_program_mutate(&sk, &rng, &q)) continue;
        int64_t threads = 1, vthreads = 1;
        for (int h = 0; h < sk.nholes; h++) {
            const tune_hole *ho = &sk.holes[h];
            const int64_t *v = q.vals + ho->offset;
            if (ho->kind == TUNE_HOLE_SPLIT) {
                int64_t prod = 1;
                for (int j = 0; j < ho->nvals; j++) prod *= v[j];
                assert_int_equal(ho->extent % prod, 0);
                assert_true(v[ho->nvals - 1] <= 64);
                if (!ho->reduce) threads *= v[1], vthreads *= v[0];
            } else {
                assert_true(v[0] >= 0 && v[0] < ho->extent);
            }
        }
        assert_true(threads <= lim);
        assert_true(vthreads <= 8);
        sch_schedule *a = tune_program_apply(ctx, &w, &sk, &p), *b = tune_program_apply(ctx, &w, &sk, &q);
        assert_non_null(a);
        if (!b) fail_msg("mutated program does not apply: %s", te_ctx_errmsg(ctx));
        if (strcmp(tune_steps_key(ctx, a), tune_steps_key(ctx, b))) changed++;
        p = q;
    }
    assert_true(changed >= 30);
    te_ctx_free(ctx);
}

/* A GPU program's log maps back to the program (resume seeding). */
static void test_gpu_decode(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk;
    assert_int_equal(tune_build_workload(ctx, MM, &w), 0);
    assert_int_equal(tune_generate_sketches_gpu(ctx, &w, &sk, 1), 1);
    uint64_t rng = 5;
    for (int k = 0; k < 3; k++) {
        tune_program p, q;
        tune_program_random(&sk, 0, &rng, &p);
        sch_schedule *s = tune_program_apply(ctx, &w, &sk, &p);
        assert_non_null(s);
        char *json = tdb_schedule_to_json(s);
        assert_non_null(json);
        char *err = NULL;
        int rc = tune_program_from_steps(MM, &sk, 1, json, &q, &err);
        if (rc != 1) fail_msg("decode: %d %s", rc, err ? err : "");
        sch_schedule *s2 = tune_program_apply(ctx, &w, &sk, &q);
        assert_non_null(s2);
        assert_string_equal(tune_steps_key(ctx, s), tune_steps_key(ctx, s2));
        free(json);
    }
    te_ctx_free(ctx);
}

/* Without a driver, measuring or tuning for cuda fails with the reason. */
static void test_gpu_no_device(void **st) {
    (void)st;
    assert_true(tune_target_is_cuda("cuda"));
    assert_true(tune_target_is_cuda("cuda -arch=sm_90"));
    assert_false(tune_target_is_cuda("cudax"));
    assert_false(tune_target_is_cuda("llvm"));
    if (rt_cuda_available())
        tu_skip_test("a CUDA device is present: the no-device errors are not reachable");
    char *err = NULL;
    tune_measurer *m = tune_measurer_new(MM, "cuda", NULL, &err);
    assert_null(m);
    assert_non_null(err);
    tu_assert_msg_has(err, "no CUDA device", "CUDA driver not found");
    free(err);
    tune_options o;
    memset(&o, 0, sizeof o);
    o.trials = 4;
    o.population = 16;
    tune_summary sum;
    err = NULL;
    assert_int_equal(tune_task(MM, "cuda", &o, &sum, &err), -1);
    assert_non_null(err);
    tu_assert_msg_has(err, "no CUDA device");
    free(err);
}

int main(int argc, char **argv) {
    tune_runner_maybe_run(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_sketch_golden),  cmocka_unit_test(test_gpu_random_programs),
        cmocka_unit_test(test_gpu_verifier_rejects), cmocka_unit_test(test_gpu_mutation),
        cmocka_unit_test(test_gpu_decode),         cmocka_unit_test(test_gpu_no_device),
    };
    return tu_run_group(tests);
}
