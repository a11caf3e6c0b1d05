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
            ops_tc_config c = {v[0], v[1], v[2], v[3], v[4], false, v[5] != 0, (int)v[6], 0};
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
        ops_tc_config c = {b[0], b[1], b[2], b[3], b[4], false, b[5] != 0, (int)b[6], 0};
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_sketch),        cmocka_unit_test(test_no_tc_sketch),
        cmocka_unit_test(test_random_compiles),     cmocka_unit_test(test_mutate),
        cmocka_unit_test(test_structural_and_replay), cmocka_unit_test(test_check_messages),
    };
    return tu_run_group(tests);
}
