/*
 * tests/test_autotune_tensorcore.c — the GPU search's tensor-core sketch
 * (autotune/rules/rule_gpu_tensorcore.c): a float16 matmul's sketches
 * start with it; random programs of it lower and compile with NVRTC for
 * sm_80 and sm_90 to mma.sync PTX (left out without NVRTC); mutation
 * moves one knob and stays valid; no tensor-core sketch for a float32
 * matmul without tf32 or a K that is no multiple of 16; a program's step
 * log replays from the database's JSON to the same source; the search's
 * first programs include the template's default config. On sm_90
 * (tune_generate_sketches_gpu_for) the sketch draws Hopper's warpgroup
 * MMA too: its first program is the wgmma default, random programs
 * compile to wgmma.mma_async, mutation flips the engine and moves the
 * wgmma knobs, the cost model counts the warpgroup MMAs; sm_80 draws none.
 */
#include <stdlib.h>
#include <string.h>

#include "gpu_skip.h"
#include "testutil.h"
#include "loom/autotune.h"
#include "loom/codegen.h"
#include "loom/cost_model.h"
#include "loom/ops.h"
#include "loom/runtime.h"
#include "loom/tuning_db.h"

static int sketches(te_ctx *ctx, const char *key, tune_workload *w, tune_sketch *sk) {
    if (tune_build_workload(ctx, key, w)) fail_msg("%s: %s", key, te_ctx_errmsg(ctx));
    int n = tune_generate_sketches_gpu(ctx, w, sk, TUNE_MAX_SKETCHES);
    if (n < 1) fail_msg("%s: %s", key, te_ctx_errmsg(ctx));
    return n;
}

static bool has_tc(const tune_sketch *sk) {
    for (int u = 0; u < sk->nunits; u++)
        if (sk->units[u].kind == TUNE_UNIT_GPU_TENSORCORE) return true;
    return false;
}

static const char *F16 = "matmul(M=256,N=256,K=256,dtype=float16)";

static void test_first_sketch(void **st) {
    (void)st;
    const char *keys[] = {F16, "matmul(M=128,N=64,K=64,dtype=bfloat16)",
                          "matmul(M=128,N=128,K=64,tf32=1)"};
    for (int i = 0; i < 3; i++) {
        te_ctx *ctx = te_ctx_new();
        tune_workload w;
        tune_sketch sk[TUNE_MAX_SKETCHES];
        int n = sketches(ctx, keys[i], &w, sk);
        print_message("%s: %s\n", keys[i], sk[0].desc);
        assert_true(n >= 2);
        assert_true(has_tc(&sk[0]));
        assert_true(tune_sketch_is_gpu(&sk[0]));
        assert_non_null(strstr(sk[0].desc, "tensor cores"));
        /* the CUDA-core sketch still follows */
        assert_false(has_tc(&sk[1]));
        assert_non_null(strstr(sk[1].desc, "tile SSSRRSRS"));
        te_ctx_free(ctx);
    }
}

static void test_no_tc_sketch(void **st) {
    (void)st;
    const char *keys[] = {"matmul(M=128,N=128,K=64)", "matmul(M=128,N=128,K=40,dtype=float16)",
                          "matmul(M=100,N=128,K=64,dtype=float16)"};
    for (int i = 0; i < 3; i++) {
        te_ctx *ctx = te_ctx_new();
        tune_workload w;
        tune_sketch sk[TUNE_MAX_SKETCHES];
        int n = sketches(ctx, keys[i], &w, sk);
        for (int k = 0; k < n; k++)
            if (has_tc(&sk[k])) fail_msg("%s: tensor-core sketch %d: %s", keys[i], k, sk[k].desc);
        te_ctx_free(ctx);
    }
}

/* The knob values of the tensor-core unit of program p (sketch 0). */
static void knobs(const tune_sketch *sk, const tune_program *p, int64_t *v) {
    int n = 0;
    for (int i = 0; i < sk->nholes; i++)
        if (sk->holes[i].kind == TUNE_HOLE_GPU_TC) v[n++] = p->vals[sk->holes[i].offset];
    assert_int_equal(n, 7);
}

static void test_random_compiles(void **st) {
    (void)st;
    tu_require_nvrtc();
    const char *archs[] = {"cuda -arch=sm_80", "cuda -arch=sm_90"};
    const int64_t optin[] = {166912, 232448};
    for (int a = 0; a < 2; a++) {
        uint64_t rng = 0x9e3779b97f4a7c15ull + (uint64_t)a;
        int built = 0;
        for (int k = 0; k < 6; k++) {
            te_ctx *ctx = te_ctx_new();
            tune_workload w;
            tune_sketch sk[TUNE_MAX_SKETCHES];
            sketches(ctx, k % 3 == 2 ? "matmul(M=128,N=128,K=128,dtype=bfloat16)" : F16, &w, sk);
            tune_program p;
            tune_program_random(&sk[0], 0, &rng, &p);
            int64_t v[7];
            knobs(&sk[0], &p, v);
            sch_schedule *s = tune_program_apply(ctx, &w, &sk[0], &p);
            if (!s) fail_msg("program %d: %s", k, te_ctx_errmsg(ctx));
            rt_module *m = cg_build(s, w.nargs, w.args, archs[a], NULL);
            int64_t shared = 0, S = k % 3 == 2 ? 128 : 256;
            te_dtype t = k % 3 == 2 ? TE_BFLOAT16 : TE_FLOAT16;
            ops_tc_config c = {v[0], v[1], v[2], v[3], v[4], false, v[5] != 0, (int)v[6], 0, false, 0};
            if (ops_tc_check(ctx, S, S, S, t, t, &c, &shared))
                fail_msg("program %d: %s", k, te_ctx_errmsg(ctx));
            if (!m) {
                /* only a config over this architecture's opt-in limit may fail */
                if (shared <= optin[a])
                    fail_msg("%s program %d (%lld %lld %lld %lld %lld %lld %lld): %s", archs[a], k,
                             (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3],
                             (long long)v[4], (long long)v[5], (long long)v[6],
                             te_ctx_errmsg(ctx));
                te_ctx_free(ctx);
                continue;
            }
            const char *ptx = rt_module_get_text(m, "ptx");
            assert_non_null(ptx);
            assert_non_null(strstr(ptx, "mma.sync.aligned"));
            built++;
            rt_module_free(m);
            te_ctx_free(ctx);
        }
        assert_true(built >= 3);
    }
}

static void test_mutate(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    sketches(ctx, F16, &w, sk);
    uint64_t rng = 12345;
    int changed = 0;
    for (int k = 0; k < 40; k++) {
        tune_program p, q;
        tune_program_random(&sk[0], 0, &rng, &p);
        q = p;
        if (tune_program_mutate(&sk[0], &rng, &q)) continue;
        int64_t a[7], b[7];
        knobs(&sk[0], &p, a);
        knobs(&sk[0], &q, b);
        int diff = 0;
        for (int i = 0; i < 7; i++) diff += a[i] != b[i];
        assert_int_equal(diff, 1);
        changed++;
        ops_tc_config c = {b[0], b[1], b[2], b[3], b[4], false, b[5] != 0, (int)b[6], 0, false, 0};
        if (ops_tc_check(ctx, 256, 256, 256, TE_FLOAT16, TE_FLOAT32, &c, NULL))
            fail_msg("mutant %d: %s", k, te_ctx_errmsg(ctx));
        assert_non_null(tune_program_apply(ctx, &w, &sk[0], &q));
    }
    assert_true(changed >= 20);
    te_ctx_free(ctx);
}

/* The first program is the template's default; its log replays from JSON
 * to the same CUDA source. */
static void test_structural_and_replay(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    sketches(ctx, F16, &w, sk);
    tune_program p;
    assert_int_equal(tune_program_structural(&sk[0], 0, &w, 8, &p), 1);
    int64_t v[7];
    knobs(&sk[0], &p, v);
    ops_tc_config d;
    assert_int_equal(ops_tc_default_config(ctx, 256, 256, 256, TE_FLOAT16, TE_FLOAT16, 232448, &d),
                     0);
    assert_int_equal(v[0], d.bm);
    assert_int_equal(v[1], d.bn);
    assert_int_equal(v[4], d.kc);
    assert_int_equal(v[6], d.stages);
    /* the CUDA-core sketch has none */
    assert_int_equal(tune_program_structural(&sk[1], 1, &w, 8, &p), 0);
    tune_program_structural(&sk[0], 0, &w, 8, &p);
    sch_schedule *s = tune_program_apply(ctx, &w, &sk[0], &p);
    if (!s) fail_msg("%s", te_ctx_errmsg(ctx));
    char *json = tdb_schedule_to_json(s);
    assert_non_null(strstr(json, "wmma.mma"));
    int ns;
    sch_step *steps;
    assert_int_equal(tdb_steps_from_json(ctx, json, &ns, &steps), 0);
    sch_schedule *r = sch_replay(ctx, w.nouts, w.outs, ns, steps);
    if (!r) fail_msg("replay: %s", te_ctx_errmsg(ctx));
    char *json2 = tdb_schedule_to_json(r);
    assert_string_equal(json, json2);
    /* the log maps back to the program */
    tune_program back;
    assert_int_equal(tune_program_from_steps(F16, sk, 2, json, &back, NULL), 1);
    assert_int_equal(back.sketch, 0);
    assert_memory_equal(back.vals, p.vals, sizeof p.vals);
    free(json2);
    free(json);
    if (rt_nvrtc_available()) {
        rt_module *a = cg_build(s, w.nargs, w.args, "cuda -arch=sm_90", NULL);
        rt_module *b = cg_build(r, w.nargs, w.args, "cuda -arch=sm_90", NULL);
        if (!a || !b) fail_msg("%s", te_ctx_errmsg(ctx));
        assert_string_equal(rt_module_get_text(a, "source"), rt_module_get_text(b, "source"));
        rt_module_free(a);
        rt_module_free(b);
    }
    /* random programs' logs map back to programs with the same log */
    uint64_t rng = 777;
    for (int k = 0; k < 4; k++) {
        tune_program q, qb;
        tune_program_random(&sk[0], 0, &rng, &q);
        sch_schedule *qs = tune_program_apply(ctx, &w, &sk[0], &q);
        assert_non_null(qs);
        char *qj = tdb_schedule_to_json(qs);
        int64_t kv[7];
        knobs(&sk[0], &q, kv);
        print_message("program %d: %lld %lld %lld %lld %lld %lld %lld\n", k, (long long)kv[0],
                      (long long)kv[1], (long long)kv[2], (long long)kv[3], (long long)kv[4],
                      (long long)kv[5], (long long)kv[6]);
        assert_int_equal(tune_program_from_steps(F16, sk, 2, qj, &qb, NULL), 1);
        sch_schedule *bs = tune_program_apply(ctx, &w, &sk[qb.sketch], &qb);
        assert_non_null(bs);
        char *bj = tdb_schedule_to_json(bs);
        assert_string_equal(qj, bj);
        free(bj);
        free(qj);
    }
    te_ctx_free(ctx);
}

/* The template's checks, as the search sees them, with their messages. */
static void test_check_messages(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    ops_tc_config c = {.bm = 128, .bn = 128, .wm = 64, .wn = 64, .kc = 64, .stages = 5};
    assert_int_equal(ops_tc_check(ctx, 256, 256, 256, TE_FLOAT16, TE_FLOAT32, &c, NULL), -1);
    assert_non_null(strstr(te_ctx_errmsg(ctx), "5 pipeline stages"));
    c.stages = 2, c.wm = 48;
    assert_int_equal(ops_tc_check(ctx, 256, 256, 256, TE_FLOAT16, TE_FLOAT32, &c, NULL), -1);
    assert_non_null(strstr(te_ctx_errmsg(ctx), "do not tile"));
    c.wm = 64, c.kc = 128;
    int64_t shared = 0;
    assert_int_equal(ops_tc_check(ctx, 256, 256, 256, TE_FLOAT16, TE_FLOAT32, &c, &shared), -1);
    assert_non_null(strstr(te_ctx_errmsg(ctx), "a block has 49152"));
    assert_true(shared > 49152);
    c.stages = 3;
    assert_int_equal(ops_tc_check(ctx, 256, 256, 256, TE_FLOAT16, TE_FLOAT32, &c, &shared), 0);
    assert_int_equal(ops_tc_check(ctx, 256, 256, 40, TE_FLOAT16, TE_FLOAT32, &c, NULL), -1);
    assert_non_null(strstr(te_ctx_errmsg(ctx), "multiples of 16"));
    assert_int_equal(ops_tc_check(ctx, 256, 256, 256, TE_INT32, TE_FLOAT32, &c, NULL), -1);
    assert_non_null(strstr(te_ctx_errmsg(ctx), "tensor cores take"));
    te_ctx_free(ctx);
}

/* The cost model sees the tensor cores: the mma FLOPs of the whole
 * GEMM, the fragment loads and the pipeline's depth, in every row. */
static void test_features(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    sketches(ctx, F16, &w, sk);
    uint64_t rng = 99;
    for (int k = 0; k < 3; k++) {
        tune_program p;
        tune_program_random(&sk[0], 0, &rng, &p);
        int64_t v[7];
        knobs(&sk[0], &p, v);
        sch_schedule *s = tune_program_apply(ctx, &w, &sk[0], &p);
        assert_non_null(s);
        cm_extract_options o = {.raw = true, .gpu = true};
        o.gpu_limits.max_threads_per_block = 1024;
        o.gpu_limits.max_shared_bytes = 232448;
        float *x;
        int n;
        if (cm_extract_schedule(s, w.nargs, w.args, &o, &x, &n))
            fail_msg("program %d: %s", k, te_ctx_errmsg(ctx));
        assert_true(n > 0);
        int fi = cm_feature_index("tc_mma_flops"), li = cm_feature_index("tc_fragment_loads");
        int si = cm_feature_index("pipeline_stages");
        double loads = (256.0 / v[0]) * (256.0 / v[1]) * (v[0] / v[2]) * (v[1] / v[3]) *
                       (256.0 / 16) * (v[2] / 16 + v[3] / 16);
        for (int r = 0; r < n; r++) {
            assert_float_equal(x[(size_t)r * CM_NUM_FEATURES + fi], 2.0 * 256 * 256 * 256, 1.0);
            assert_float_equal(x[(size_t)r * CM_NUM_FEATURES + li], loads, 0.5);
            assert_float_equal(x[(size_t)r * CM_NUM_FEATURES + si], v[6] == 1 ? 0 : v[6], 0);
        }
        free(x);
    }
    /* a CUDA-core program has none */
    tune_program q;
    tune_program_random(&sk[1], 1, &rng, &q);
    sch_schedule *s = tune_program_apply(ctx, &w, &sk[1], &q);
    assert_non_null(s);
    cm_extract_options o = {.raw = true, .gpu = true};
    float *x;
    int n;
    if (cm_extract_schedule(s, w.nargs, w.args, &o, &x, &n)) fail_msg("%s", te_ctx_errmsg(ctx));
    for (int r = 0; r < n; r++)
        assert_float_equal(x[(size_t)r * CM_NUM_FEATURES + cm_feature_index("tc_mma_flops")], 0, 0);
    free(x);
    te_ctx_free(ctx);
}

/* ---- Hopper's warpgroup MMA (sm_90) ---- */

static int sketches_for(te_ctx *ctx, const char *key, const char *target, tune_workload *w,
                        tune_sketch *sk) {
    if (tune_build_workload(ctx, key, w)) fail_msg("%s: %s", key, te_ctx_errmsg(ctx));
    int n = tune_generate_sketches_gpu_for(ctx, w, target, sk, TUNE_MAX_SKETCHES, NULL);
    if (n < 1) fail_msg("%s on %s: %s", key, target, te_ctx_errmsg(ctx));
    return n;
}

/* The tensor-core knobs of sketch 0's program: 7, or 9 with the engine
 * and group_m. */
static int tc_knobs(const tune_sketch *sk, const tune_program *p, int64_t *v) {
    int n = 0;
    for (int i = 0; i < sk->nholes; i++)
        if (sk->holes[i].kind == TUNE_HOLE_GPU_TC) v[n++] = p->vals[sk->holes[i].offset];
    return n;
}

static ops_tc_config tc_config(const int64_t *v, int n) {
    return (ops_tc_config){.bm = v[0], .bn = v[1], .wm = v[2], .wn = v[3], .kc = v[4],
                           .unroll_k = v[5] != 0, .stages = (int)v[6],
                           .wgmma = n == 9 && v[7] == 1, .group_m = n == 9 ? v[8] : 0};
}

/* On sm_90 a 16-bit or tf32 GEMM the wgmma template takes may run on
 * either engine (two more holes); on sm_80 or through the target-less
 * generator, WMMA only; a non-CUDA target is refused. */
static void test_wgmma_sketch(void **st) {
    (void)st;
    struct {
        const char *key, *target;
        bool wgmma;
    } cases[] = {
        {F16, "cuda -arch=sm_90", true},
        {"matmul(M=128,N=64,K=64,dtype=bfloat16)", "cuda sm_90 NVIDIA H200", true},
        {F16, "cuda -arch=sm_80", false},
        {"matmul(M=128,N=128,K=64,tf32=1)", "cuda -arch=sm_90", true},
        {"matmul(M=128,N=128,K=64,tf32=1)", "cuda -arch=sm_80", false},
        /* N = 48: no wgmma block (64 at least) divides it */
        {"matmul(M=128,N=48,K=64,dtype=float16)", "cuda -arch=sm_90", false},
    };
    for (int i = 0; i < 6; i++) {
        te_ctx *ctx = te_ctx_new();
        tune_workload w;
        tune_sketch sk[TUNE_MAX_SKETCHES];
        sketches_for(ctx, cases[i].key, cases[i].target, &w, sk);
        print_message("%s on %s: %s\n", cases[i].key, cases[i].target, sk[0].desc);
        assert_true(has_tc(&sk[0]));
        tune_program p;
        memset(&p, 0, sizeof p);
        int64_t v[16];
        assert_int_equal(tc_knobs(&sk[0], &p, v), cases[i].wgmma ? 9 : 7);
        assert_int_equal(strstr(sk[0].desc, "wgmma") != NULL, cases[i].wgmma);
        te_ctx_free(ctx);
    }
    /* the generator without a target: WMMA only */
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    sketches(ctx, F16, &w, sk);
    assert_null(strstr(sk[0].desc, "wgmma"));
    assert_int_equal(tune_generate_sketches_gpu_for(ctx, &w, "llvm", sk, TUNE_MAX_SKETCHES, NULL),
                     -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "target 'llvm' is not a CUDA target");
    assert_int_equal(tune_generate_sketches_gpu_for(ctx, &w, "cuda -arch=gfx90a", sk,
                                                    TUNE_MAX_SKETCHES, NULL),
                     -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "no GPU sketches for", "gfx90a");
    assert_int_equal(tune_generate_sketches_gpu_for(ctx, &w, NULL, sk, TUNE_MAX_SKETCHES, NULL),
                     -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "a NULL target");
    te_ctx_free(ctx);
}

/* The wgmma template's default config, its message where it takes no
 * shape or dtype. */
static void test_wgmma_default_config(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    ops_tc_config c;
    assert_int_equal(ops_tc_wgmma_default_config(ctx, 4096, 4096, 4096, TE_FLOAT16, 232448, &c), 0);
    assert_true(c.wgmma);
    assert_int_equal(c.bm, 128);
    assert_int_equal(c.bn, 256);
    assert_int_equal(c.wm, 64);
    assert_int_equal(c.wn, 256);
    assert_int_equal(c.kc, 64);
    assert_int_equal(c.stages, 3);
    assert_int_equal(c.group_m, 8);
    assert_int_equal(ops_tc_check(ctx, 4096, 4096, 4096, TE_FLOAT16, TE_FLOAT32, &c, NULL), 0);
    /* two 32-wide warpgroups side by side: the second's B tile would start
     * inside a 128-byte panel, which tensorize refuses */
    ops_tc_config narrow = {.bm = 128, .bn = 64, .wm = 64, .wn = 32, .kc = 64, .stages = 3,
                            .wgmma = true, .group_m = 1};
    assert_int_equal(ops_tc_check(ctx, 256, 256, 256, TE_FLOAT16, TE_FLOAT32, &narrow, NULL), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "warpgroups 32 columns wide side by side in a 64-wide",
                      "multiples of 64");
    narrow.bn = 128, narrow.wn = 64;
    assert_int_equal(ops_tc_check(ctx, 256, 256, 256, TE_FLOAT16, TE_FLOAT32, &narrow, NULL), 0);
    /* tf32: chunks of one 128-byte row, 32 elements */
    assert_int_equal(ops_tc_wgmma_default_config(ctx, 256, 256, 256, TE_FLOAT32, 232448, &c), 0);
    assert_int_equal(c.kc, 32);
    assert_int_equal(ops_tc_check(ctx, 256, 256, 256, TE_FLOAT32, TE_FLOAT32, &c, NULL), 0);
    assert_int_equal(ops_tc_wgmma_default_config(ctx, 256, 256, 256, TE_INT32, 232448, &c), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "wgmma takes float16, bfloat16 and float32 (as tf32) "
                                          "inputs (int32 given)");
    assert_int_equal(ops_tc_wgmma_default_config(ctx, 128, 48, 64, TE_FLOAT16, 232448, &c), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "do not tile 128x48x64");
    assert_int_equal(ops_tc_wgmma_default_config(ctx, 128, 40, 64, TE_FLOAT16, 232448, &c), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "multiples of 16");
    assert_int_equal(ops_tc_wgmma_default_config(ctx, 128, 64, 64, TE_FLOAT16, 232448, NULL), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "no config to fill");
    te_ctx_free(ctx);
}

/* Random programs on sm_90 take both engines, pass the template's check,
 * and the wgmma ones compile with NVRTC to wgmma.mma_async PTX (tf32's
 * with B copied k-major; on an sm_90 GPU they also run and match the
 * double reference). */
static void test_wgmma_random_compiles(void **st) {
    (void)st;
    const char *keys[] = {F16, "matmul(M=256,N=512,K=256,dtype=bfloat16)",
                          "matmul(M=256,N=256,K=256,tf32=1)"};
    const te_dtype types[] = {TE_FLOAT16, TE_BFLOAT16, TE_FLOAT32};
    uint64_t rng = 4242;
    int wg = 0, wm = 0, built = 0, tf32 = 0;
    bool sm90 = tu_gpu_cc() == 90;
    for (int k = 0; k < 24; k++) {
        te_ctx *ctx = te_ctx_new();
        tune_workload w;
        tune_sketch sk[TUNE_MAX_SKETCHES];
        const char *key = keys[k % 3];
        sketches_for(ctx, key, "cuda -arch=sm_90", &w, sk);
        tune_program p;
        tune_program_random(&sk[0], 0, &rng, &p);
        int64_t v[16];
        assert_int_equal(tc_knobs(&sk[0], &p, v), 9);
        ops_tc_config c = tc_config(v, 9);
        int64_t N = k % 3 == 1 ? 512 : 256;
        te_dtype t = types[k % 3];
        if (ops_tc_check(ctx, 256, N, 256, t, t, &c, NULL))
            fail_msg("program %d: %s", k, te_ctx_errmsg(ctx));
        if (!c.wgmma) {
            assert_int_equal(v[8], 0);
            wm++;
            te_ctx_free(ctx);
            continue;
        }
        wg++;
        assert_int_equal(v[5], 1);
        assert_true(v[8] == 1 || v[8] == 4 || v[8] == 8);
        assert_true(v[6] >= 2 && v[6] <= 4);
        print_message("wgmma program %d: %lld %lld %lld %lld %lld stages %lld group %lld\n", k,
                      (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3],
                      (long long)v[4], (long long)v[6], (long long)v[8]);
        sch_schedule *s = tune_program_apply(ctx, &w, &sk[0], &p);
        if (!s) fail_msg("program %d: %s", k, te_ctx_errmsg(ctx));
        /* with an sm_90 GPU every wgmma program is also run and checked */
        if (rt_nvrtc_available() && (built < 4 || sm90 || (k % 3 == 2 && !tf32))) {
            rt_module *m = cg_build(s, w.nargs, w.args, "cuda -arch=sm_90", NULL);
            if (!m) fail_msg("program %d: %s", k, te_ctx_errmsg(ctx));
            const char *ptx = rt_module_get_text(m, "ptx");
            assert_non_null(ptx);
            assert_non_null(strstr(ptx, "wgmma.mma_async"));
            if (k % 3 == 2) {
                assert_non_null(strstr(ptx, ".f32.tf32.tf32"));
                assert_non_null(strstr(rt_module_get_text(m, "source"), "loom_cp_async4("));
                tf32++;
            }
            ops_workload *ow = ops_from_key(ctx, key);
            if (!ow) fail_msg("%s: %s", key, te_ctx_errmsg(ctx));
            if (sm90) tu_check_on_gpu(ow, m);
            else tu_skip_part("the GPU run", "no sm_90 GPU (wgmma is sm_90a's)");
            rt_module_free(m);
            built++;
        }
        te_ctx_free(ctx);
    }
    assert_true(wg >= 3);
    assert_true(wm >= 3);
    tu_require_nvrtc();
    assert_true(tf32 >= 1);
    assert_true(built >= 3);
}

static void test_wgmma_none_on_sm80(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    sketches_for(ctx, F16, "cuda -arch=sm_80", &w, sk);
    uint64_t rng = 31;
    for (int k = 0; k < 20; k++) {
        tune_program p;
        tune_program_random(&sk[0], 0, &rng, &p);
        if (k % 2) tune_program_mutate(&sk[0], &rng, &p);
        int64_t v[16];
        assert_int_equal(tc_knobs(&sk[0], &p, v), 7);
        sch_schedule *s = tune_program_apply(ctx, &w, &sk[0], &p);
        if (!s) fail_msg("program %d: %s", k, te_ctx_errmsg(ctx));
        char *json = tdb_schedule_to_json(s);
        assert_null(strstr(json, "wgmma"));
        assert_non_null(strstr(json, "wmma.mma"));
        free(json);
    }
    tune_program p;
    assert_int_equal(tune_program_structural(&sk[0], 0, &w, 8, &p), 1);
    char *json = tdb_schedule_to_json(tune_program_apply(ctx, &w, &sk[0], &p));
    assert_null(strstr(json, "wgmma"));
    free(json);
    te_ctx_free(ctx);
}

/* Mutation on sm_90 flips the engine both ways, moves every wgmma knob
 * (but unroll_k, which wgmma does not read) and keeps programs valid. */
static void test_wgmma_mutate(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    const char *key = "matmul(M=512,N=512,K=512,dtype=float16)";
    sketches_for(ctx, key, "cuda -arch=sm_90", &w, sk);
    uint64_t rng = 2024;
    int to_wg = 0, to_wm = 0, moved[9] = {0};
    tune_program p;
    tune_program_random(&sk[0], 0, &rng, &p);
    for (int k = 0; k < 600; k++) {
        tune_program q = p;
        if (tune_program_mutate(&sk[0], &rng, &q)) continue;
        int64_t a[16], b[16];
        tc_knobs(&sk[0], &p, a);
        tc_knobs(&sk[0], &q, b);
        ops_tc_config c = tc_config(b, 9);
        if (ops_tc_check(ctx, 512, 512, 512, TE_FLOAT16, TE_FLOAT32, &c, NULL))
            fail_msg("mutant %d: %s", k, te_ctx_errmsg(ctx));
        assert_true(c.stages >= 1 && c.stages <= 4);
        if (a[7] != b[7]) {
            if (b[7]) to_wg++;
            else to_wm++;
        } else {
            int diff = 0;
            for (int i = 0; i < 9; i++)
                if (a[i] != b[i]) diff++, moved[i] += b[7] == 1;
            assert_int_equal(diff, 1);
        }
        if (k % 50 == 0) assert_non_null(tune_program_apply(ctx, &w, &sk[0], &q));
        p = q;
    }
    print_message("engine flips %d to wgmma, %d to wmma; wgmma moves %d %d %d %d %d %d %d - %d\n",
                  to_wg, to_wm, moved[0], moved[1], moved[2], moved[3], moved[4], moved[5],
                  moved[6], moved[8]);
    assert_true(to_wg > 0 && to_wm > 0);
    for (int i = 0; i < 9; i++)
        if (i == 5 || i == 7) assert_int_equal(moved[i], 0);
        else assert_true(moved[i] > 0);
    te_ctx_free(ctx);
}

/* The first program on sm_90 is the wgmma default (matmul's default
 * schedule there); its log and a random wgmma program's map back to the
 * program; the search's first candidate is it. */
static void test_wgmma_first_program(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    sketches_for(ctx, F16, "cuda -arch=sm_90", &w, sk);
    tune_program p;
    assert_int_equal(tune_program_structural(&sk[0], 0, &w, 8, &p), 1);
    int64_t v[16];
    assert_int_equal(tc_knobs(&sk[0], &p, v), 9);
    ops_tc_config d;
    assert_int_equal(ops_tc_wgmma_default_config(ctx, 256, 256, 256, TE_FLOAT16, 232448, &d), 0);
    const int64_t want[9] = {d.bm, d.bn, d.wm, d.wn, d.kc, 1, d.stages, 1, d.group_m};
    assert_memory_equal(v, want, sizeof want);
    /* a program the rule would not draw (wgmma with group_m 0, as a
     * hand-edited record might hold) is refused, naming the engine */
    tune_program bad = p;
    for (int i = 0, n = 0; i < sk[0].nholes; i++)
        if (sk[0].holes[i].kind == TUNE_HOLE_GPU_TC && n++ == 8) bad.vals[sk[0].holes[i].offset] = 0;
    assert_null(tune_program_apply(ctx, &w, &sk[0], &bad));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "tensor-core config (wgmma) 128x128, warpgroup 64x128",
                      "is not valid here");
    sch_schedule *s = tune_program_apply(ctx, &w, &sk[0], &p);
    if (!s) fail_msg("%s", te_ctx_errmsg(ctx));
    char *json = tdb_schedule_to_json(s);
    assert_non_null(strstr(json, "wgmma.mma"));
    /* the library's default schedule on sm_90: the same steps */
    ops_workload *ow = ops_from_key(ctx, F16);
    if (!ow) fail_msg("%s", te_ctx_errmsg(ctx));
    sch_schedule *ds = ops_default_schedule(ow, "cuda -arch=sm_90");
    if (!ds) fail_msg("%s", te_ctx_errmsg(ctx));
    char *djson = tdb_schedule_to_json(ds);
    assert_string_equal(json, djson);
    free(djson);
    tune_program back;
    assert_int_equal(tune_program_from_steps(F16, sk, 2, json, &back, NULL), 1);
    assert_int_equal(back.sketch, 0);
    assert_memory_equal(back.vals, p.vals, sizeof p.vals);
    free(json);
    uint64_t rng = 55;
    for (int k = 0, n = 0; k < 40 && n < 3; k++) {
        tune_program q, qb;
        tune_program_random(&sk[0], 0, &rng, &q);
        tc_knobs(&sk[0], &q, v);
        if (v[7] != 1) continue;
        n++;
        char *qj = tdb_schedule_to_json(tune_program_apply(ctx, &w, &sk[0], &q));
        assert_int_equal(tune_program_from_steps(F16, sk, 2, qj, &qb, NULL), 1);
        char *bj = tdb_schedule_to_json(tune_program_apply(ctx, &w, &sk[qb.sketch], &qb));
        assert_string_equal(qj, bj);
        free(bj);
        free(qj);
    }
    te_ctx_free(ctx);
}

/* The cost model sees the warpgroup MMA: M N K / (64 wn 16) calls of
 * width wn, 2 M N K FLOPs, no fragment loads. */
static void test_wgmma_features(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    sketches_for(ctx, F16, "cuda -arch=sm_90", &w, sk);
    uint64_t rng = 9;
    int seen = 0;
    for (int k = 0; k < 40 && seen < 3; k++) {
        tune_program p;
        tune_program_random(&sk[0], 0, &rng, &p);
        int64_t v[16];
        tc_knobs(&sk[0], &p, v);
        if (v[7] != 1) continue;
        seen++;
        sch_schedule *s = tune_program_apply(ctx, &w, &sk[0], &p);
        assert_non_null(s);
        cm_extract_options o = {.raw = true, .gpu = true};
        o.gpu_limits.max_threads_per_block = 1024;
        o.gpu_limits.max_shared_bytes = 232448;
        float *x;
        int n;
        if (cm_extract_schedule(s, w.nargs, w.args, &o, &x, &n))
            fail_msg("program %d: %s", k, te_ctx_errmsg(ctx));
        assert_true(n > 0);
        int fi = cm_feature_index("tc_mma_flops"), li = cm_feature_index("tc_fragment_loads");
        int ci = cm_feature_index("tc_wgmma_calls"), ni = cm_feature_index("tc_wgmma_n");
        assert_true(ci > 0 && ni > 0);
        for (int r = 0; r < n; r++) {
            const float *row = x + (size_t)r * CM_NUM_FEATURES;
            assert_float_equal(row[fi], 2.0 * 256 * 256 * 256, 1.0);
            assert_float_equal(row[li], 0, 0);
            assert_float_equal(row[ci], 256.0 * 256 * 256 / (64.0 * (double)v[3] * 16), 0.5);
            assert_float_equal(row[ni], (double)v[3], 0);
        }
        free(x);
    }
    assert_true(seen == 3);
    /* a WMMA program has none */
    tune_program q;
    tune_program_random(&sk[0], 0, &rng, &q);
    sketches_for(ctx, F16, "cuda -arch=sm_80", &w, sk);
    tune_program_random(&sk[0], 0, &rng, &q);
    sch_schedule *s = tune_program_apply(ctx, &w, &sk[0], &q);
    assert_non_null(s);
    cm_extract_options o = {.raw = true, .gpu = true};
    float *x;
    int n;
    if (cm_extract_schedule(s, w.nargs, w.args, &o, &x, &n)) fail_msg("%s", te_ctx_errmsg(ctx));
    for (int r = 0; r < n; r++) {
        assert_float_equal(x[(size_t)r * CM_NUM_FEATURES + cm_feature_index("tc_wgmma_calls")], 0, 0);
        assert_float_equal(x[(size_t)r * CM_NUM_FEATURES + cm_feature_index("tc_wgmma_n")], 0, 0);
    }
    free(x);
    te_ctx_free(ctx);
}

/* The whole search up to measurement, for cuda without a GPU: a fake
 * backend measures (tensor-core programs 8x faster), the first candidate
 * is the tensor-core sketch's structural program (the template's
 * default), and the best program is a tensor-core one. */
typedef struct {
    const char *fast; /* the intrinsic marking a fast program: "wmma.mma", "wgmma.mma" */
    int n, tc;
    char *first;
} tc_fake;

static void *tf_open(void *user, const char *key, const char *target,
                     const tune_measure_options *o, char **err) {
    (void)key, (void)o, (void)err;
    assert_true(tune_target_is_cuda(target));
    return user;
}

static int tf_measure(void *s, int n, const char *const *steps, const int *hooks, double best,
                      tune_result *res) {
    (void)hooks, (void)best;
    tc_fake *f = s;
    for (int i = 0; i < n; i++) {
        bool tc = strstr(steps[i], f->fast) != NULL;
        if (!f->first) f->first = strdup(steps[i]);
        f->tc += tc;
        f->n++;
        res[i].nlatencies = 1;
        res[i].latencies[0] = res[i].median = res[i].mean = (tc ? 1e-3 : 8e-3) + 1e-6 * f->n;
    }
    return 0;
}

static const char *tf_errmsg(void *s) {
    (void)s;
    return "autotune: the fake backend is gone";
}

static void tf_close(void *s) { (void)s; }

/* 24 trials of key on target, measured by f. */
static tune_summary fake_search(tc_fake *f, const char *key, const char *target) {
    tune_measure_backend be = {.user = f, .batch = 8, .open = tf_open, .measure = tf_measure,
                               .errmsg = tf_errmsg, .close = tf_close};
    tune_options o;
    memset(&o, 0, sizeof o);
    o.trials = 24;
    o.per_round = 8;
    o.seed = 5;
    o.measure.threads = 1;
    o.measure.backend = &be;
    tune_summary sum;
    char *err = NULL;
    if (tune_task(key, target, &o, &sum, &err)) fail_msg("%s", err ? err : "?");
    return sum;
}

static void test_search_fake_measure(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    const char *key = tune_workload_key(ctx, "matmul", "M=256,N=256,K=256,dtype=float16");
    assert_non_null(key);
    tc_fake f = {.fast = "wmma.mma"};
    /* sm_80: sm_90's tensor-core programs are wgmma's first */
    tune_summary sum = fake_search(&f, key, "cuda -arch=sm_80");
    assert_int_equal(sum.measured, 24);
    assert_true(f.tc > 0);
    assert_non_null(strstr(sum.best_steps_json, "wmma.mma"));
    /* the first candidate: the template's default config */
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    sketches(ctx, key, &w, sk);
    tune_program p;
    assert_int_equal(tune_program_structural(&sk[0], 0, &w, 8, &p), 1);
    char *want = tdb_schedule_to_json(tune_program_apply(ctx, &w, &sk[0], &p));
    assert_string_equal(f.first, want);
    free(want);
    free(f.first);
    free(sum.best_steps_json);
    te_ctx_free(ctx);
}

/* On sm_90 the search's first candidate is the wgmma default (the same
 * steps as the tensor-core sketch's first program), and the best is a
 * wgmma program. */
static void test_wgmma_search_fake_measure(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    const char *key = tune_workload_key(ctx, "matmul", "M=256,N=256,K=256,dtype=float16");
    assert_non_null(key);
    tc_fake f = {.fast = "wgmma.mma"};
    tune_summary sum = fake_search(&f, key, "cuda -arch=sm_90");
    /* without a GPU the search verifies its programs against the shared
     * memory sm_90 lets a block opt in to (tune_gpu_limits_for), so the
     * drawn wgmma programs with deep pipelines are candidates too (with the
     * 48 KiB of tune_gpu_limits only the default was) */
    print_message("measured %d valid %d, wgmma %d of %d\n", sum.measured, sum.valid, f.tc, f.n);
    assert_int_equal(sum.measured, 24);
    assert_true(f.tc >= (rt_cuda_available() ? 1 : 2));
    assert_non_null(strstr(sum.best_steps_json, "wgmma.mma"));
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    sketches_for(ctx, key, "cuda -arch=sm_90", &w, sk);
    tune_program p;
    assert_int_equal(tune_program_structural(&sk[0], 0, &w, 8, &p), 1);
    char *want = tdb_schedule_to_json(tune_program_apply(ctx, &w, &sk[0], &p));
    assert_string_equal(f.first, want);
    free(want);
    free(f.first);
    free(sum.best_steps_json);
    te_ctx_free(ctx);
}

/* The search's limits follow the target without a GPU, the GPU with one. */
static void test_gpu_limits_for(void **st) {
    (void)st;
    tir_gpu_limits dev = tune_gpu_limits();
    if (rt_cuda_available()) {
        tir_gpu_limits l = tune_gpu_limits_for("cuda -arch=sm_80");
        assert_int_equal(l.max_shared_bytes, dev.max_shared_bytes);
        assert_int_equal(l.max_threads_per_block, dev.max_threads_per_block);
        return;
    }
    assert_int_equal(tune_gpu_limits_for("cuda -arch=sm_90").max_shared_bytes, 232448);
    assert_int_equal(tune_gpu_limits_for("cuda -arch=sm_80").max_shared_bytes, 166912);
    assert_int_equal(tune_gpu_limits_for("cuda -arch=sm_90").max_threads_per_block, 1024);
    /* no -arch: the default architecture's (sm_75 without a GPU) */
    assert_int_equal(tune_gpu_limits_for("cuda").max_shared_bytes, 65536);
    /* not a CUDA target, or none: tune_gpu_limits' 48 KiB */
    assert_int_equal(tune_gpu_limits_for("llvm").max_shared_bytes, 49152);
    assert_int_equal(tune_gpu_limits_for("cudax").max_shared_bytes, 49152);
    assert_int_equal(tune_gpu_limits_for(NULL).max_shared_bytes, 49152);
}

/* A 16-bit NHWC convolution (declared as its implicit GEMM) gets the
 * tensor-core sketch first, on sm_90 with both engines; its random
 * programs compile with NVRTC to tensor-core PTX for sm_90 and sm_80 (and
 * on a GPU of that architecture match the double reference). */
static void test_conv_nhwc_programs(void **st) {
    (void)st;
    static const struct {
        const char *target, *ptx;
        int knobs;
    } targets[] = {{"cuda -arch=sm_90", "mma", 9}, {"cuda -arch=sm_80", "mma.sync.aligned", 7}};
    uint64_t rng = 77;
    for (int t = 0; t < 2; t++) {
        int built = 0;
        for (int k = 0; k < 6; k++) {
            te_ctx *ctx = te_ctx_new();
            const char *key = tune_workload_key(ctx, "conv2d_nhwc",
                                                "N=2,C=64,H=8,W=8,K=64,R=3,S=3,pad=1,dtype=float16");
            if (!key) fail_msg("%s", te_ctx_errmsg(ctx));
            tune_workload w;
            tune_sketch sk[TUNE_MAX_SKETCHES];
            sketches_for(ctx, key, targets[t].target, &w, sk);
            assert_true(has_tc(&sk[0]));
            tune_program p;
            tune_program_random(&sk[0], 0, &rng, &p);
            int64_t v[16];
            assert_int_equal(tc_knobs(&sk[0], &p, v), targets[t].knobs);
            sch_schedule *s = tune_program_apply(ctx, &w, &sk[0], &p);
            if (!s) fail_msg("%s program %d: %s", targets[t].target, k, te_ctx_errmsg(ctx));
            if (rt_nvrtc_available() && built < 3) {
                rt_module *m = cg_build(s, w.nargs, w.args, targets[t].target, NULL);
                if (!m) fail_msg("%s program %d: %s", targets[t].target, k, te_ctx_errmsg(ctx));
                assert_non_null(strstr(rt_module_get_text(m, "ptx"), targets[t].ptx));
                ops_workload *ow = ops_from_key(ctx, key);
                if (!ow) fail_msg("%s: %s", key, te_ctx_errmsg(ctx));
                if (tu_gpu_cc() == (t == 0 ? 90 : 80) || (t == 1 && tu_gpu_cc() == 90))
                    tu_check_on_gpu(ow, m);
                else
                    tu_skip_part("the GPU run", "no GPU of the program's architecture");
                rt_module_free(m);
                built++;
            }
            te_ctx_free(ctx);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_nhwc_programs),
        cmocka_unit_test(test_first_sketch),        cmocka_unit_test(test_no_tc_sketch),
        cmocka_unit_test(test_random_compiles),     cmocka_unit_test(test_mutate),
        cmocka_unit_test(test_structural_and_replay), cmocka_unit_test(test_check_messages),
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_search_fake_measure),
        cmocka_unit_test(test_wgmma_sketch),        cmocka_unit_test(test_wgmma_default_config),
        cmocka_unit_test(test_wgmma_random_compiles), cmocka_unit_test(test_wgmma_none_on_sm80),
        cmocka_unit_test(test_wgmma_mutate),        cmocka_unit_test(test_wgmma_first_program),
        cmocka_unit_test(test_wgmma_features),      cmocka_unit_test(test_wgmma_search_fake_measure),
        cmocka_unit_test(test_gpu_limits_for),
    };
    return tu_run_group(tests);
}
