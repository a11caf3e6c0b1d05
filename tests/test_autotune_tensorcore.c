/*
 * tests/test_autotune_tensorcore.c — the GPU search's tensor-core sketch
 * (autotune/rules/rule_gpu_tensorcore.c): a float16 matmul's sketches
 * start with it; random programs of it lower and compile with NVRTC for
 * sm_80 and sm_90 to mma.sync PTX (left out without NVRTC); mutation
 * moves one knob and stays valid; no tensor-core sketch for a float32
 * matmul without tf32 or a K that is no multiple of 16; a program's step
 * log replays from the database's JSON to the same source; the search's
 * first programs include the template's default config.
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

/* The whole search up to measurement, for cuda without a GPU: a fake
 * backend measures (tensor-core programs 8x faster), the first candidate
 * is the tensor-core sketch's structural program (the template's
 * default), and the best program is a tensor-core one. */
typedef struct {
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
        bool tc = strstr(steps[i], "wmma.mma") != NULL;
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

static void test_search_fake_measure(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    const char *key = tune_workload_key(ctx, "matmul", "M=256,N=256,K=256,dtype=float16");
    assert_non_null(key);
    tc_fake f = {0};
    tune_measure_backend be = {.user = &f, .batch = 8, .open = tf_open, .measure = tf_measure,
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
    /* sm_80: on sm_90 the default (trial 1) is the wgmma template, which
     * this sketch does not draw */
    int rc = tune_task(key, "cuda -arch=sm_80", &o, &sum, &err);
    if (rc) fail_msg("%s", err ? err : "?");
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_sketch),        cmocka_unit_test(test_no_tc_sketch),
        cmocka_unit_test(test_random_compiles),     cmocka_unit_test(test_mutate),
        cmocka_unit_test(test_structural_and_replay), cmocka_unit_test(test_check_messages),
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_search_fake_measure),
    };
    return tu_run_group(tests);
}
