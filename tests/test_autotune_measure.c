/*
 * tests/test_autotune_measure.c — sandboxed measurement and search:
 * planted crashing, hanging, wrong and non-building candidates are
 * recorded with their error code and the search goes on; determinism
 * under a seed; a short tuning run of a 64x64x64 matmul beats the naive
 * program; a te-built workload (registered builder) checked against its
 * unscheduled computation.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "loom/autotune.h"
#include "loom/ops.h"
#include "loom/tuning_db.h"

/* A te-built workload outside the ops registry: C = A x B + 1. */
static int build_test_mm(te_ctx *ctx, const char *key, tune_workload *out) {
    (void)key;
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(16, 24));
    te_tensor *B = te_placeholder(ctx, "B", TE_FLOAT32, TE_SHAPE(24, 32));
    te_expr *i = te_axis(ctx, "i", 16), *j = te_axis(ctx, "j", 32), *k = te_reduce_axis(ctx, "k", 24);
    te_tensor *C = te_compute(ctx, "C", TE_AXES(i, j), te_sum(te_mul(te_read(A, i, k), te_read(B, k, j)), k));
    te_expr *i2 = te_axis(ctx, "i2", 16), *j2 = te_axis(ctx, "j2", 32);
    te_tensor *D = te_compute(ctx, "D", TE_AXES(i2, j2), te_add(te_read(C, i2, j2), te_float(ctx, 1.0)));
    if (!D) return -1;
    out->nargs = 3;
    out->args = te_alloc(ctx, 3 * sizeof(te_tensor *));
    out->args[0] = A, out->args[1] = B, out->args[2] = D;
    out->nouts = 1;
    out->outs = out->args + 2;
    out->flops = 2.0 * 16 * 32 * 24;
    return 0;
}

static const char *MM64 = "matmul(M=64,N=64,K=64)";

static tune_measure_options mopts(void) {
    tune_measure_options o;
    memset(&o, 0, sizeof o);
    o.threads = 2;
    o.build_timeout = 20;
    o.run_timeout = 1.5;
    o.repeat = 3;
    o.num_threads = 1;
    return o;
}

/* The step log of a random program of sketch 0 of key. */
static char *random_log(const char *key, uint64_t seed) {
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, key, &w), 0);
    assert_true(tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES) > 0);
    uint64_t rng = seed | 1;
    tune_program p;
    tune_program_random(&sk[0], 0, &rng, &p);
    sch_schedule *s = tune_program_apply(ctx, &w, &sk[0], &p);
    assert_non_null(s);
    char *j = tdb_schedule_to_json(s);
    te_ctx_free(ctx);
    return j;
}

static void test_planted_failures(void **st) {
    (void)st;
    char *err = NULL;
    tune_measure_options o = mopts();
    o.check = 1;
    o.build_timeout = 2;
    tune_measurer *m = tune_measurer_new(MM64, "llvm", &o, &err);
    assert_non_null(m);
    char *good = random_log(MM64, 7);
    const char *logs[] = {good, good, good, good, good, good, good,
                          "[{\"kind\":\"split\",\"stage\":9,\"iter\":0,\"factor\":4}]", good};
    int hooks[] = {TUNE_HOOK_NONE, TUNE_HOOK_SEGV, TUNE_HOOK_HANG, TUNE_HOOK_WRONG,
                   TUNE_HOOK_BUILD_HANG, TUNE_HOOK_BUILD_CRASH, TUNE_HOOK_NONE, TUNE_HOOK_NONE,
                   TUNE_HOOK_NONE};
    int want[] = {TUNE_OK, TUNE_ERR_RUNTIME_DEVICE, TUNE_ERR_RUN_TIMEOUT, TUNE_ERR_WRONG_ANSWER,
                  TUNE_ERR_BUILD_TIMEOUT, TUNE_ERR_COMPILE_HOST, TUNE_OK,
                  TUNE_ERR_INSTANTIATION, TUNE_OK};
    int n = (int)(sizeof hooks / sizeof hooks[0]);
    tune_result res[16];
    assert_int_equal(tune_measure(m, n, logs, hooks, 0, res), 0);
    for (int i = 0; i < n; i++) {
        print_message("candidate %d: %s: %s\n", i, tune_error_name(res[i].error_code),
                      res[i].error_msg);
        assert_int_equal(res[i].error_code, want[i]);
    }
#if defined(__SANITIZE_ADDRESS__)
    /* AddressSanitizer catches the signal in the runner and exits with
     * status 1: the code is the same, the message says "exited". */
    tu_assert_msg_has(res[1].error_msg, "run", "status");
#else
    tu_assert_msg_has(res[1].error_msg, "crashed", "run", "signal 11");
#endif
    /* The hang came after a best: stopped at the relative limit, not the
     * full run timeout. */
    tu_assert_msg_has(res[2].error_msg, "run", "did not finish", "over 50x the best so far");
    tu_assert_msg_has(res[3].error_msg, "differ from the reference");
    tu_assert_msg_has(res[4].error_msg, "build", "did not finish");
#if defined(__SANITIZE_ADDRESS__)
    tu_assert_msg_has(res[5].error_msg, "build", "status");
#else
    tu_assert_msg_has(res[5].error_msg, "crashed", "build");
#endif
    tu_assert_msg_has(res[7].error_msg, "stage");
    /* The good ones after the failures were measured and checked. A
     * later one may keep a single sample: on a loaded host (ctest -j) its
     * first calls can exceed 3x the best before it, the tuner's rule for
     * a candidate not worth the repeats. */
    double best = 0;
    for (int i = 0; i < n; i++)
        if (want[i] == TUNE_OK) {
            assert_true(res[i].checked);
            assert_true(res[i].median > 0);
            if (best == 0 || res[i].nlatencies != 1) assert_int_equal(res[i].nlatencies, 3);
            else assert_true(res[i].median > 3.0 * best);
            assert_true(res[i].spread >= 0);
            if (best == 0 || res[i].median < best) best = res[i].median;
        }
    tune_measurer_free(m);
    free(good);
}

/* Builds are handed out as runners finish, not in groups of `threads`
 * that each wait for their slowest: two hung builds two places apart
 * (the first and third candidate; in groups of two they would be in
 * different groups, one timeout after the other) hang side by side, and
 * the other candidates build meanwhile. The bound is a whole timeout
 * above what the overlap needs (one timeout plus the good builds) and at
 * the least what groups would need (two timeouts). */
static void test_hung_builds_overlap(void **st) {
    (void)st;
    char *err = NULL;
    tune_measure_options o = mopts();
    o.build_timeout = 3;
    tune_measurer *m = tune_measurer_new(MM64, "llvm", &o, &err);
    assert_non_null(m);
    char *good = random_log(MM64, 7);
    const char *logs[6] = {good, good, good, good, good, good};
    int hooks[6] = {TUNE_HOOK_BUILD_HANG, TUNE_HOOK_NONE, TUNE_HOOK_BUILD_HANG};
    tune_result res[6];
    assert_int_equal(tune_measure(m, 6, logs, hooks, 0, res), 0);
    for (int i = 0; i < 6; i++) {
        print_message("candidate %d: %s: %s (build %.2f s)\n", i, tune_error_name(res[i].error_code),
                      res[i].error_msg, res[i].build_s);
        assert_int_equal(res[i].error_code, hooks[i] ? TUNE_ERR_BUILD_TIMEOUT : TUNE_OK);
        if (!hooks[i]) assert_true(res[i].nlatencies == 3 && res[i].median > 0);
    }
    double build_s = 0;
    tune_measurer_times(m, &build_s, NULL);
    print_message("build wall time %.2f s (timeout %.0f s)\n", build_s, o.build_timeout);
    assert_true(build_s < 2 * o.build_timeout);
    tune_measurer_free(m);
    free(good);
}

/* Re-timing: every program once a round; one that crashes or goes wrong
 * is reported with its code, the others get one latency per round. */
static void test_retime(void **st) {
    (void)st;
    char *err = NULL;
    tune_measure_options o = mopts();
    tune_measurer *m = tune_measurer_new(MM64, "llvm", &o, &err);
    assert_non_null(m);
    char *a = random_log(MM64, 7), *b = random_log(MM64, 11);
    const char *logs[] = {a, b, a, b};
    int hooks[] = {TUNE_HOOK_NONE, TUNE_HOOK_NONE, TUNE_HOOK_WRONG, TUNE_HOOK_SEGV};
    tune_result res[4];
    assert_int_equal(tune_retime(m, 4, logs, hooks, 3, res), 0);
    for (int i = 0; i < 2; i++) {
        assert_ptr_equal(res[i].steps_json, logs[i]);
        assert_int_equal(res[i].error_code, TUNE_OK);
        assert_int_equal(res[i].nlatencies, 3);
        for (int r = 0; r < 3; r++) assert_true(res[i].latencies[r] > 0);
        assert_true(res[i].checked && res[i].median > 0);
    }
    assert_int_equal(res[2].error_code, TUNE_ERR_WRONG_ANSWER);
    tu_assert_msg_has(res[2].error_msg, "differ from the reference");
    assert_int_equal(res[3].error_code, TUNE_ERR_RUNTIME_DEVICE);
    assert_int_equal(res[3].nlatencies, 0);
    /* missing arguments */
    assert_int_equal(tune_retime(NULL, 4, logs, NULL, 3, res), -1);
    assert_int_equal(tune_retime(m, 4, NULL, NULL, 3, res), -1);
    assert_int_equal(tune_retime(m, -1, logs, NULL, 3, res), -1);
    assert_int_equal(tune_retime(m, 4, logs, NULL, 3, NULL), -1);
    tune_measurer_free(m);
    free(a), free(b);
}

/* 16-bit workloads: the runner fills their inputs with random values and
 * the check catches a wrong output (zero inputs let anything pass). */
static void test_half_inputs_checked(void **st) {
    (void)st;
    char *err = NULL;
    tune_measure_options o = mopts();
    const char *keys[] = {"matmul(M=32,N=32,K=32,dtype=float16)",
                          "matmul(M=32,N=32,K=32,dtype=bfloat16)"};
    for (int q = 0; q < 2; q++) {
        tune_measurer *m = tune_measurer_new(keys[q], "llvm", &o, &err);
        if (!m) fail_msg("%s: %s", keys[q], err ? err : "?");
        char *a = random_log(keys[q], 5);
        const char *logs[] = {a, a};
        int hooks[] = {TUNE_HOOK_NONE, TUNE_HOOK_WRONG};
        tune_result res[2];
        assert_int_equal(tune_retime(m, 2, logs, hooks, 1, res), 0);
        if (res[0].error_code) fprintf(stderr, "%s: %s\n", keys[q], res[0].error_msg);
        assert_int_equal(res[0].error_code, TUNE_OK);
        assert_true(res[0].checked);
        assert_int_equal(res[1].error_code, TUNE_ERR_WRONG_ANSWER);
        tu_assert_msg_has(res[1].error_msg, "differ from the reference");
        tune_measurer_free(m);
        free(a);
    }
}

/* Re-timing cuts nothing and checks every run: the unscheduled program
 * (many times slower than the default schedule timed before it in each
 * round) gets its latencies and its check in every round. */
static void test_retime_uncut(void **st) {
    (void)st;
    char *err = NULL;
    tune_measure_options o = mopts();
    tune_measurer *m = tune_measurer_new(MM64, "llvm", &o, &err);
    assert_non_null(m);
    te_ctx *ctx = te_ctx_new();
    char *def = tdb_schedule_to_json(ops_default_schedule(ops_from_key(ctx, MM64), "llvm"));
    assert_non_null(def);
    const char *logs[] = {def, "[]"};
    tune_result res[2];
    assert_int_equal(tune_retime(m, 2, logs, NULL, 3, res), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(res[i].error_code, TUNE_OK);
        assert_int_equal(res[i].nlatencies, 3);
        assert_true(res[i].checked && res[i].median > 0);
    }
    print_message("default %.4f ms, unscheduled %.4f ms\n", res[0].median * 1e3,
                  res[1].median * 1e3);
    tune_measurer_free(m);
    free(def);
    te_ctx_free(ctx);
}

/* A registered (te-built) workload: measured and checked against its
 * unscheduled computation. */
/* The baseline paces the latencies: where it runs twice as long as in the
 * first paired run, the candidate's latencies are halved (the hooks fix
 * the reported times, so no timing noise enters); a baseline that does
 * not build leaves them unscaled, and the candidates measured. */
static void test_baseline_pacing(void **st) {
    (void)st;
    char *err = NULL;
    tune_measure_options o = mopts();
    o.threads = 1;
    char *base = tune_default_steps(MM64, "llvm");
    assert_non_null(base);
    o.baseline_steps = base;
    tune_measurer *m = tune_measurer_new(MM64, "llvm", &o, &err);
    assert_non_null(m);
    char *good = random_log(MM64, 7);
    const char *logs[] = {good, good, good, good};
    int hooks[] = {TUNE_HOOK_BASELINE_FULL_SPEED, TUNE_HOOK_BASELINE_HALF_SPEED,
                   TUNE_HOOK_BASELINE_FULL_SPEED, TUNE_HOOK_NONE};
    tune_result res[4];
    assert_int_equal(tune_measure(m, 4, logs, hooks, 0, res), 0);
    for (int i = 0; i < 4; i++) assert_int_equal(res[i].error_code, 0);
    /* The first paired run sets the pace: 1 ms. */
    assert_true(res[0].host_scale == 1.0);
    assert_true(fabs(res[0].median - 3e-3) < 1e-12);
    assert_true(res[1].host_scale == 0.5);
    assert_true(fabs(res[1].median - 1.5e-3) < 1e-12);
    assert_true(res[2].host_scale == 1.0);
    /* Unhooked: a real baseline was timed after the candidate. */
    assert_true(res[3].host_scale > 0 && res[3].host_scale != 1.0);
    tune_measurer_free(m);
    /* A baseline that does not build: dropped, candidates unscaled. */
    o.baseline_steps = "[{\"kind\":\"split\",\"stage\":9,\"iter\":0,\"factor\":4}]";
    m = tune_measurer_new(MM64, "llvm", &o, &err);
    assert_non_null(m);
    assert_int_equal(tune_measure(m, 2, logs, hooks, 0, res), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(res[i].error_code, 0);
        assert_true(res[i].host_scale == 1.0);
        assert_true(fabs(res[i].median - 3e-3) < 1e-12);
    }
    tune_measurer_free(m);
    free(good);
    free(base);
}

/* A sample set that drifts (the host changed speed while it was taken) is
 * measured again: the reported samples are the steadier set, not the
 * drifting one the hook injects first (median 2 ms, fastest 1 ms, on a
 * 64^3 matmul that takes microseconds). */
static void test_drift_remeasured(void **st) {
    (void)st;
    char *err = NULL;
    tune_measure_options o = mopts();
    o.threads = 1;
    o.repeat = 5;
    tune_measurer *m = tune_measurer_new(MM64, "llvm", &o, &err);
    assert_non_null(m);
    char *good = random_log(MM64, 7);
    const char *logs[] = {good, good};
    int hooks[] = {TUNE_HOOK_DRIFT, TUNE_HOOK_NONE};
    tune_result res[2];
    assert_int_equal(tune_measure(m, 2, logs, hooks, 0, res), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(res[i].error_code, 0);
        if (!(res[i].median < 0.5e-3))
            fail_msg("candidate %d: median %g s: the drifting set was kept", i, res[i].median);
    }
    tune_measurer_free(m);
    free(good);
}

/* tune_measure_options.cache_flush: every timed call starts with the
 * candidate's tensors and its pre-computed constants (a conv's packed
 * weights) evicted. The runner still times, pairs the baseline (flushed
 * too) and checks: a wrong answer is caught as without the flush. */
static void test_cache_flush(void **st) {
    (void)st;
    const char *conv = "conv2d(N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1)";
    char *err = NULL;
    tune_measure_options o = mopts();
    o.threads = 1;
    o.check = 1;
    o.min_repeat_ms = 2;
    o.cache_flush = true;
    char *base = tune_default_steps(conv, "llvm");
    assert_non_null(base);
    o.baseline_steps = base;
    tune_measurer *m = tune_measurer_new(conv, "llvm", &o, &err);
    if (!m) fail_msg("%s", err);
    char *good = random_log(conv, 3);
    const char *logs[] = {base, good, good};
    int hooks[] = {TUNE_HOOK_NONE, TUNE_HOOK_NONE, TUNE_HOOK_WRONG};
    tune_result res[3];
    assert_int_equal(tune_measure(m, 3, logs, hooks, 0, res), 0);
    for (int i = 0; i < 2; i++) {
        if (res[i].error_code) fail_msg("candidate %d: %s", i, res[i].error_msg);
        assert_true(res[i].checked);
        /* A candidate far slower than the first keeps one sample. */
        assert_true(res[i].nlatencies == 3 || (i > 0 && res[i].nlatencies == 1));
        assert_true(res[i].median > 0 && res[i].median < 0.5);
        /* Paired with the baseline: the first run sets the pace. */
        assert_true(res[i].host_scale > 0);
    }
    assert_int_equal(res[2].error_code, TUNE_ERR_WRONG_ANSWER);
    tune_measurer_free(m);
    free(good);
    free(base);
}

static void test_builder_workload(void **st) {
    (void)st;
    char *err = NULL;
    tune_measure_options o = mopts();
    o.check = 1;
    tune_measurer *m = tune_measurer_new("test_mm", "llvm", &o, &err);
    assert_non_null(m);
    char *good = random_log("test_mm", 3);
    const char *logs[] = {good, good};
    int hooks[] = {TUNE_HOOK_NONE, TUNE_HOOK_WRONG};
    tune_result res[2];
    assert_int_equal(tune_measure(m, 2, logs, hooks, 0, res), 0);
    assert_int_equal(res[0].error_code, TUNE_OK);
    assert_true(res[0].checked);
    assert_int_equal(res[1].error_code, TUNE_ERR_WRONG_ANSWER);
    tune_measurer_free(m);
    free(good);
}

/* A candidate far slower than the best so far is timed by one call (no
 * repeats), and is not checked (it is no new best); one near the best
 * gets every repeat. */
static void test_slow_candidate_single_sample(void **st) {
    (void)st;
    char *err = NULL;
    tune_measure_options o = mopts();
    tune_measurer *m = tune_measurer_new("test_mm", "llvm", &o, &err);
    assert_non_null(m);
    char *good = random_log("test_mm", 3);
    const char *logs[] = {good};
    tune_result r;
    assert_int_equal(tune_measure(m, 1, logs, NULL, 1e-12, &r), 0);
    assert_int_equal(r.error_code, TUNE_OK);
    assert_int_equal(r.nlatencies, 1);
    assert_false(r.checked);
    assert_int_equal(tune_measure(m, 1, logs, NULL, 1e3, &r), 0);
    assert_int_equal(r.error_code, TUNE_OK);
    assert_int_equal(r.nlatencies, o.repeat);
    tune_measurer_free(m);
    free(good);
}

typedef struct {
    int n;
    char *logs[64];
    int codes[64];
} recorder;

static int on_record(void *user, const tune_result *r) {
    recorder *rc = user;
    if (rc->n < 64) {
        rc->logs[rc->n] = strdup(r->steps_json);
        rc->codes[rc->n++] = r->error_code;
    }
    return 0;
}

static int plant(void *user, int trial) {
    (void)user;
    return trial == 2 ? TUNE_HOOK_SEGV : trial == 3 ? TUNE_HOOK_HANG : trial == 5 ? TUNE_HOOK_WRONG : 0;
}

static void recorder_free(recorder *r) {
    for (int i = 0; i < r->n; i++) free(r->logs[i]);
    r->n = 0;
}

static tune_options topts(int trials, uint64_t seed, recorder *rec) {
    tune_options o;
    memset(&o, 0, sizeof o);
    o.trials = trials;
    o.per_round = 8;
    o.population = 64;
    o.generations = 2;
    o.seed = seed;
    o.measure = mopts();
    o.on_record = on_record;
    o.user = rec;
    return o;
}

static void test_search_survives_failures(void **st) {
    (void)st;
    recorder rec = {0};
    tune_options o = topts(8, 5, &rec);
    o.hook_for_trial = plant;
    o.measure.check = 1;
    tune_summary sum;
    char *err = NULL;
    assert_int_equal(tune_task(MM64, "llvm", &o, &sum, &err), 0);
    assert_int_equal(sum.measured, 8);
    assert_int_equal(rec.n, 8);
    assert_int_equal(rec.codes[1], TUNE_ERR_RUNTIME_DEVICE);
    assert_int_equal(rec.codes[2], TUNE_ERR_RUN_TIMEOUT);
    assert_int_equal(rec.codes[4], TUNE_ERR_WRONG_ANSWER);
    assert_int_equal(sum.valid, 5);
    assert_true(sum.best_trial != 2 && sum.best_trial != 3 && sum.best_trial != 5);
    /* Never the same program twice. */
    for (int i = 0; i < rec.n; i++)
        for (int j = i + 1; j < rec.n; j++) assert_string_not_equal(rec.logs[i], rec.logs[j]);
    free(sum.best_steps_json);
    recorder_free(&rec);
}

static void test_determinism(void **st) {
    (void)st;
    recorder a = {0}, b = {0}, c = {0};
    tune_summary sum;
    const char *mm = "matmul(M=16,N=16,K=16)";
    tune_options o = topts(6, 11, &a);
    assert_int_equal(tune_task(mm, "llvm", &o, &sum, NULL), 0);
    free(sum.best_steps_json);
    o = topts(6, 11, &b);
    assert_int_equal(tune_task(mm, "llvm", &o, &sum, NULL), 0);
    free(sum.best_steps_json);
    o = topts(6, 12, &c);
    assert_int_equal(tune_task(mm, "llvm", &o, &sum, NULL), 0);
    free(sum.best_steps_json);
    assert_int_equal(a.n, 6);
    int differ = 0;
    for (int i = 0; i < 6; i++) {
        assert_string_equal(a.logs[i], b.logs[i]);
        differ += strcmp(a.logs[i], c.logs[i]) != 0;
    }
    assert_true(differ > 0);
    recorder_free(&a), recorder_free(&b), recorder_free(&c);
}

/* A scorer that prefers programs with more vectorized stores: exercises
 * the evolutionary path (predict on populations, update on results). */
static int npredict, nupdate;
static void count_vec(const tir_stmt *s, void *user) {
    if (s->kind == TIR_STORE && s->u.store.value->dtype.lanes > 1) (*(int *)user)++;
}
static int fake_predict(void *u, int n, const tir_func *const *f, double *sc) {
    (void)u;
    npredict += n;
    for (int i = 0; i < n; i++) {
        int v = 0;
        tir_stmt_visit(f[i]->body, count_vec, NULL, &v);
        sc[i] = v;
    }
    return 0;
}
static int update_task = -1;
static int fake_update(void *u, int task, int n, const tir_func *const *f, const double *lat) {
    (void)u, (void)f, (void)lat;
    update_task = task;
    nupdate += n;
    return 0;
}

static void test_tuning_beats_naive(void **st) {
    (void)st;
    recorder rec = {0};
    tune_options o = topts(32, 3, &rec);
    o.per_round = 16;
    o.scorer.predict = fake_predict;
    o.scorer.update = fake_update;
    o.scorer.task = 7;
    tune_summary sum;
    char *err = NULL;
    assert_int_equal(tune_task(MM64, "llvm", &o, &sum, &err), 0);
    assert_int_equal(sum.measured, 32);
    assert_true(npredict >= 64 * 2);
    assert_int_equal(nupdate, 32);
    assert_int_equal(update_task, 7); /* the search files its measurements under its task */
    assert_true(sum.best_s > 0 && sum.best_gflops > 0);
    /* The naive program, measured the same way. */
    tune_measure_options mo = mopts();
    tune_measurer *m = tune_measurer_new(MM64, "llvm", &mo, &err);
    assert_non_null(m);
    const char *logs[] = {"[]"};
    tune_result r;
    assert_int_equal(tune_measure(m, 1, logs, NULL, 0, &r), 0);
    assert_int_equal(r.error_code, 0);
    print_message("naive %.3g ms, tuned %.3g ms (%.2f GFLOP/s, trial %d)\n", r.median * 1e3,
                  sum.best_s * 1e3, sum.best_gflops, sum.best_trial);
    assert_true(sum.best_s < r.median);
    tune_measurer_free(m);
    free(sum.best_steps_json);
    recorder_free(&rec);
}

/* The log of the only heuristic program of key's sketches (malloc'd). */
static char *heuristic_log(te_ctx *ctx, const char *key) {
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, key, &w), 0);
    int nsk = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES), n = 0;
    char *log = NULL;
    for (int k = 0; k < nsk; k++) {
        tune_program p[2];
        int got = tune_program_heuristic(&sk[k], k, &w, tune_host_vector_lanes(), p, 2);
        for (int i = 0; i < got; i++, n++)
            log = tdb_schedule_to_json(tune_program_apply(ctx, &w, &sk[k], &p[i]));
    }
    assert_int_equal(n, 1);
    assert_non_null(log);
    return log;
}

/* The first trial is the operator's default schedule, the next the
 * heuristic programs; skip_default leaves the default out (the search
 * alone still starts from the heuristic programs), no_heuristic those
 * too; a resumed run does not measure the default again. */
static void test_default_first(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_from_key(ctx, MM64);
    assert_non_null(w);
    sch_schedule *s = ops_default_schedule(w, "llvm");
    assert_non_null(s);
    char *def = tdb_schedule_to_json(s), *heur = heuristic_log(ctx, MM64);
    recorder a = {0}, b = {0}, c = {0};
    tune_summary sum;
    tune_options o = topts(3, 4, &a);
    assert_int_equal(tune_task(MM64, "llvm", &o, &sum, NULL), 0);
    free(sum.best_steps_json);
    assert_int_equal(a.n, 3);
    assert_string_equal(a.logs[0], def);
    assert_int_equal(a.codes[0], TUNE_OK);
    assert_string_equal(a.logs[1], heur);
    assert_int_equal(a.codes[1], TUNE_OK);
    o = topts(3, 4, &b);
    o.skip_default = true;
    assert_int_equal(tune_task(MM64, "llvm", &o, &sum, NULL), 0);
    free(sum.best_steps_json);
    assert_int_equal(b.n, 3);
    assert_string_equal(b.logs[0], heur);
    for (int i = 0; i < b.n; i++) assert_string_not_equal(b.logs[i], def);
    recorder_free(&b);
    o = topts(3, 4, &b);
    o.skip_default = true;
    o.no_heuristic = true;
    assert_int_equal(tune_task(MM64, "llvm", &o, &sum, NULL), 0);
    free(sum.best_steps_json);
    for (int i = 0; i < b.n; i++) {
        assert_string_not_equal(b.logs[i], def);
        assert_string_not_equal(b.logs[i], heur);
    }
    o = topts(2, 4, &c);
    o.nknown = a.n;
    o.known_steps = (const char *const *)a.logs;
    assert_int_equal(tune_task(MM64, "llvm", &o, &sum, NULL), 0);
    free(sum.best_steps_json);
    assert_int_equal(c.n, 2);
    for (int i = 0; i < c.n; i++) assert_string_not_equal(c.logs[i], def);
    recorder_free(&a), recorder_free(&b), recorder_free(&c);
    free(def), free(heur);
    te_ctx_free(ctx);
}

/* The search alone on a depthwise convolution (no heuristic programs
 * that do not gather) starts from its sketches' structural programs,
 * among them the derived default schedule's (tune_default_schedule):
 * all in the first round, before any random program. */
static void test_structural_first(void **st) {
    (void)st;
    const char *key = "depthwise_conv2d_nchw(N=1,C=16,H=14,W=14,R=3,S=3,pad=1)";
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    assert_int_equal(tune_build_workload(ctx, key, &w), 0);
    sch_schedule *d = tune_default_schedule(ctx, &w, "llvm", NULL);
    assert_non_null(d);
    char *def = tdb_schedule_to_json(d);
    recorder rec = {0};
    tune_options o = topts(4, 4, &rec);
    o.skip_default = true;
    tune_summary sum;
    assert_int_equal(tune_task(key, "llvm", &o, &sum, NULL), 0);
    free(sum.best_steps_json);
    bool seen = false;
    for (int i = 0; i < rec.n; i++) seen |= !strcmp(rec.logs[i], def);
    assert_true(seen);
    recorder_free(&rec);
    /* no_heuristic leaves them out too. */
    o = topts(4, 4, &rec);
    o.skip_default = true;
    o.no_heuristic = true;
    assert_int_equal(tune_task(key, "llvm", &o, &sum, NULL), 0);
    free(sum.best_steps_json);
    for (int i = 0; i < rec.n; i++) assert_string_not_equal(rec.logs[i], def);
    recorder_free(&rec);
    free(def);
    te_ctx_free(ctx);
}

static void test_errors(void **st) {
    (void)st;
    char *err = NULL;
    tune_options o;
    memset(&o, 0, sizeof o);
    tune_summary sum;
    assert_int_equal(tune_task(MM64, "llvm", &o, &sum, &err), -1);
    tu_assert_msg_has(err, "trials");
    free(err);
    err = NULL;
    o.trials = 1;
    assert_int_equal(tune_task("nosuchop(M=1)", "llvm", &o, &sum, &err), -1);
    tu_assert_msg_has(err, "nosuchop");
    free(err);
    err = NULL;
    /* Where a GPU exists, cuda is measurable: nothing to refuse. */
    if (!rt_cuda_available()) {
        assert_null(tune_measurer_new(MM64, "cuda", NULL, &err));
        tu_assert_msg_has(err, "cuda", "llvm only");
        free(err);
    }
}

int main(int argc, char **argv) {
    tune_register_builder("test_mm", build_test_mm);
    tune_runner_maybe_run(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_planted_failures),
        cmocka_unit_test(test_hung_builds_overlap),
        cmocka_unit_test(test_retime),
        cmocka_unit_test(test_retime_uncut),
        cmocka_unit_test(test_half_inputs_checked),
        cmocka_unit_test(test_baseline_pacing),
        cmocka_unit_test(test_drift_remeasured),
        cmocka_unit_test(test_cache_flush),
        cmocka_unit_test(test_builder_workload),
        cmocka_unit_test(test_slow_candidate_single_sample),
        cmocka_unit_test(test_search_survives_failures),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_tuning_beats_naive),
        cmocka_unit_test(test_default_first),
        cmocka_unit_test(test_structural_first),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
