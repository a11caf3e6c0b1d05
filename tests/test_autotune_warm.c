/*
 * tests/test_autotune_warm.c — the tuner and the database's records:
 * a stored log mapped back to its program (resume seeding), the cost
 * model's warm start from other workloads' records and from a stored
 * model blob, and the leave-one-workload-out evaluation. Records carry
 * fabricated latencies, a known function of the program's features, so
 * that what the model should learn is known and the tests stay fast.
 * The `autotune` command's --eval-model and --suite paths end to end.
 */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "loom/autotune.h"
#include "loom/ops.h"

static char *key_of(const char *op, const char *shape) {
    te_ctx *ctx = te_ctx_new();
    const char *k = ops_canonical_key(ctx, op, shape);
    assert_non_null(k);
    char *r = strdup(k);
    te_ctx_free(ctx);
    return r;
}

/* A random program of a random sketch of w, applied; NULL when it does
 * not apply (the draws advance *rng either way). */
static sch_schedule *random_schedule(te_ctx *ctx, const tune_workload *w, const tune_sketch *sk,
                                     int nsk, uint64_t *rng) {
    tune_program p;
    int k = (int)(tune_rand(rng) % (uint64_t)nsk);
    tune_program_random(&sk[k], k, rng, &p);
    return tune_program_apply(ctx, w, &sk[k], &p);
}

/* The fabricated latency of a lowered program: faster with longer vectors
 * and wider parallel loops (a function of the features the model sees). */
static double fake_latency(const tir_func *f) {
    float *x = NULL;
    int n = 0;
    assert_int_equal(cm_extract(NULL, f, &x, &n), 0);
    int iv = cm_feature_index("vec_len"), ip = cm_feature_index("parallel_len");
    assert_true(iv >= 0 && ip >= 0);
    double g = 0;
    for (int s = 0; s < n; s++) g += x[s * CM_NUM_FEATURES + iv] + 0.5 * x[s * CM_NUM_FEATURES + ip];
    free(x);
    return 1e-3 / (1.0 + g);
}

/* Commits n random programs of key with fabricated latencies; returns the
 * log of the fastest (malloc'd). */
static char *add_records(tdb_db *db, const char *target, const char *key, int n, uint64_t seed) {
    assert_true(tdb_commit_workload_key(db, key) > 0);
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, key, &w), 0);
    int nsk = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    assert_true(nsk > 0);
    uint64_t rng = seed | 1;
    char *best = NULL;
    double best_l = INFINITY;
    for (int i = 0; i < n; i++) {
        sch_schedule *s = random_schedule(ctx, &w, sk, nsk, &rng);
        if (!s) continue;
        tir_func *f = sch_lower(s, w.nargs, w.args, "default");
        assert_non_null(f);
        /* As the tuner lowers for its model on the CPU (features before
         * explicit unrolling and loop partitioning), so the fake latency
         * is a function of what it sees. */
        tir_pipeline_options po = {.unroll_hints_only = true, .skip_loop_partition = true};
        f = tir_run_pipeline(ctx, f, &po);
        assert_non_null(f);
        double lat = fake_latency(f);
        char *json = tdb_schedule_to_json(s);
        tdb_record_in in = {.workload_key = key, .target = target, .steps_json = json,
                            .nlatencies = 1, .latencies = &lat};
        assert_true(tdb_commit_record(db, &in) > 0);
        if (lat < best_l) {
            best_l = lat;
            free(best);
            best = json;
        } else {
            free(json);
        }
    }
    te_ctx_free(ctx);
    return best;
}

static tdb_db *fresh_db(char *path, size_t len, const char *tag) {
    snprintf(path, len, "/tmp/loom_warm_%s_%d.db", tag, (int)getpid());
    unlink(path);
    tdb_db *db = tdb_open(path, NULL, NULL);
    assert_non_null(db);
    return db;
}

/* Random programs of key, featurised as the tuner does, with fabricated latencies. */
static int programs_of(const char *key, int n, uint64_t seed, cm_program *progs, double *lat) {
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, key, &w), 0);
    int nsk = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    uint64_t rng = seed | 1;
    int got = 0;
    for (int i = 0; i < n; i++) {
        sch_schedule *s = random_schedule(ctx, &w, sk, nsk, &rng);
        if (!s) continue;
        /* lowered as add_records (and the tuner, for its model) lower */
        tir_pipeline_options po = {.unroll_hints_only = true, .skip_loop_partition = true};
        tir_func *f = tir_run_pipeline(ctx, sch_lower(s, w.nargs, w.args, "default"), &po);
        assert_non_null(f);
        float *x;
        int ns;
        cm_extract_options xo = {.vector_bytes = tune_target_vector_bytes(NULL)};
        assert_int_equal(cm_extract_ex(NULL, f, &xo, &x, &ns, NULL), 0);
        progs[got] = (cm_program){x, ns};
        lat[got++] = fake_latency(f);
    }
    te_ctx_free(ctx);
    return got;
}

/* ---- stored log -> program ---- */

static void roundtrip(const char *key, int per_sketch) {
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, key, &w), 0);
    int nsk = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    assert_true(nsk > 0);
    uint64_t rng = 77;
    for (int k = 0; k < nsk; k++)
        for (int i = 0; i < per_sketch; i++) {
            tune_program p, q;
            tune_program_random(&sk[k], k, &rng, &p);
            sch_schedule *s = tune_program_apply(ctx, &w, &sk[k], &p);
            if (!s) continue;
            char *json = tdb_schedule_to_json(s);
            char *err = NULL;
            int rc = tune_program_from_steps(key, sk, nsk, json, &q, &err);
            if (rc != 1) print_message("sketch %d (%s): %s\n%s\n", k, sk[k].desc, err ? err : "not found", json);
            assert_int_equal(rc, 1);
            sch_schedule *s2 = tune_program_apply(ctx, &w, &sk[q.sketch], &q);
            assert_non_null(s2);
            assert_string_equal(tune_steps_key(ctx, s), tune_steps_key(ctx, s2));
            free(json);
        }
    te_ctx_free(ctx);
}

static void test_program_from_steps(void **st) {
    (void)st;
    char *mm = key_of("matmul", "M=32,N=32,K=32");
    char *cv = key_of("conv2d", "N=1,C=4,H=8,W=8,K=8,R=3,S=3,stride=1,pad=1");
    roundtrip(mm, 6);
    roundtrip(cv, 3);
    /* A log that no sketch writes (a bare split), and one that does not parse. */
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, mm, &w), 0);
    int nsk = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    tune_program q;
    char *err = NULL;
    assert_int_equal(tune_program_from_steps(mm, sk, nsk,
                                             "[{\"kind\":\"split\",\"stage\":2,\"iter\":0,\"factor\":8}]",
                                             &q, &err), 0);
    assert_int_equal(tune_program_from_steps(mm, sk, nsk, "[{\"kind\":\"splat\"}]", &q, &err), -1);
    tu_assert_msg_has(err, "resume", "splat");
    free(err);
    err = NULL;
    assert_int_equal(tune_program_from_steps(mm, sk, nsk,
                                             "[{\"kind\":\"split\",\"stage\":9,\"iter\":0,\"factor\":8}]",
                                             &q, &err), -1);
    tu_assert_msg_has(err, "resume", "stage");
    free(err);
    te_ctx_free(ctx);
    free(mm), free(cv);
}

/* ---- warm start ---- */

static void test_warm_start(void **st) {
    (void)st;
    char path[256], *target = tdb_host_target();
    tdb_db *db = fresh_db(path, sizeof path, "ws");
    char *A = key_of("matmul", "M=32,N=32,K=32"), *B = key_of("matmul", "M=64,N=16,K=32");
    cm_params cp;
    cm_params_default(&cp);
    cp.nthread = 1;
    cp.num_warmup_samples = 30;
    /* Nothing stored: a random model. */
    tune_warm_info wi;
    char *err = NULL;
    int tid[3];
    const char *only_b[1] = {B};
    cm_model *cold = tune_warm_start(db, target, 1, only_b, &cp, tid, &wi, &err);
    assert_non_null(cold);
    assert_int_equal(tid[0], 0);
    assert_false(wi.trained);
    assert_false(cm_model_is_trained(cold));
    /* Records of workload A only: B's model is trained before B is measured.
     * 120 of them: with 60, one draw of random programs in ten (tiles with
     * tails, whose partitioned loops add statements) left the transfer
     * below the bar. */
    free(add_records(db, target, A, 120, 5));
    cm_model *warm = tune_warm_start(db, target, 1, only_b, &cp, tid, &wi, &err);
    assert_non_null(warm);
    assert_true(wi.trained);
    assert_false(wi.from_blob);
    assert_true(cm_model_is_trained(warm));
    assert_true(wi.programs >= 50);
    assert_int_equal(wi.tasks, 1);
    tu_assert_msg_has(wi.message, "warm start");
    /* B has no records: its measurements get an id of their own, not A's
     * (A's labels would be normalised by B's latencies); A keeps its id,
     * a key given twice gets one id. */
    assert_int_equal(tid[0], 1);
    const char *suite[3] = {B, A, B};
    cm_model *w3 = tune_warm_start(db, target, 3, suite, &cp, tid, &wi, &err);
    assert_non_null(w3);
    assert_int_equal(tid[0], 1);
    assert_int_equal(tid[1], 0);
    assert_int_equal(tid[2], 1);
    cm_model_free(w3);
    /* It ranks B's programs better than the cold model, and deterministically. */
    cm_program pb[80];
    double lb[80], s1[80], s2[80], sc[80];
    int nb = programs_of(B, 80, 11, pb, lb);
    assert_true(nb > 40);
    assert_int_equal(cm_model_predict(warm, nb, pb, s1), 0);
    assert_int_equal(cm_model_predict(warm, nb, pb, s2), 0);
    assert_memory_equal(s1, s2, sizeof(double) * (size_t)nb);
    assert_int_equal(cm_model_predict(cold, nb, pb, sc), 0);
    double aw = cm_pairwise_accuracy(nb, s1, lb, NULL), ac = cm_pairwise_accuracy(nb, sc, lb, NULL);
    print_message("pairwise on B: warm %.3f, cold %.3f, %d rounds\n", aw, ac,
                  cm_model_num_rounds(warm));
    assert_true(aw > 0.75);
    assert_true(aw > ac);
    /* A stored model blob is used when the records are too few. */
    void *blob;
    size_t len;
    assert_int_equal(cm_model_save_buffer(warm, &blob, &len), 0);
    char path2[256];
    tdb_db *db2 = fresh_db(path2, sizeof path2, "blob");
    free(add_records(db2, target, A, 5, 9));
    assert_int_equal(tdb_put_cost_model(db2, target, CM_BLOB_FORMAT, blob, len), 0);
    cm_model *fb = tune_warm_start(db2, target, 1, only_b, &cp, tid, &wi, &err);
    assert_non_null(fb);
    assert_true(wi.from_blob);
    assert_true(cm_model_is_trained(fb));
    tu_assert_msg_has(wi.message, "loaded the stored model");
    /* It keeps its trees while its own samples are still fewer than the warm-up. */
    double lat1 = 1e-3;
    assert_int_equal(cm_model_update(fb, 1, pb, &lat1, NULL), 0);
    assert_true(cm_model_is_trained(fb));
    double sb[80];
    assert_int_equal(cm_model_predict(fb, nb, pb, sb), 0);
    assert_memory_equal(s1, sb, sizeof(double) * (size_t)nb);
    /* A stored model trained on another feature version, or stored in
     * another format, is not used, and the message says why. */
    unsigned char *old = malloc(len);
    memcpy(old, blob, len);
    old[16] = CM_FEATURE_VERSION - 1;
    assert_int_equal(tdb_put_cost_model(db2, target, CM_BLOB_FORMAT, old, len), 0);
    cm_model *stale = tune_warm_start(db2, target, 1, only_b, &cp, tid, &wi, &err);
    assert_non_null(stale);
    assert_false(wi.from_blob);
    assert_false(cm_model_is_trained(stale));
    char fv[64];
    snprintf(fv, sizeof fv, "features of version %d", CM_FEATURE_VERSION - 1);
    tu_assert_msg_has(wi.message, "too few to train", "stored model", "not used", fv);
    /* ... or saved with another vector width than the target's */
    int vb = tune_target_vector_bytes(target), other_vb = vb == 32 ? 16 : 32;
    assert_int_equal(cm_model_vector_bytes(fb), vb);
    memcpy(old, blob, len);
    old[28] = (unsigned char)other_vb;
    assert_int_equal(tdb_put_cost_model(db2, target, CM_BLOB_FORMAT, old, len), 0);
    cm_model *narrow = tune_warm_start(db2, target, 1, only_b, &cp, tid, &wi, &err);
    assert_non_null(narrow);
    assert_false(wi.from_blob);
    assert_int_equal(cm_model_vector_bytes(narrow), vb);
    char vw[80];
    snprintf(vw, sizeof vw, "features of %d-byte vectors, this target's are %d", other_vb, vb);
    tu_assert_msg_has(wi.message, "stored model", "not used", vw);
    cm_model_free(narrow);
    assert_int_equal(tdb_put_cost_model(db2, target, "loom-xgboost-ubj-1", blob, len), 0);
    cm_model *other = tune_warm_start(db2, target, 1, only_b, &cp, tid, &wi, &err);
    assert_non_null(other);
    assert_false(wi.from_blob);
    tu_assert_msg_has(wi.message, "not used", "'loom-xgboost-ubj-1'", CM_BLOB_FORMAT);
    assert_null(tune_warm_start(db2, target, 3, suite, &cp, NULL, &wi, &err));
    tu_assert_msg_has(err, "warm start", "3 keys", "task_ids NULL");
    free(err);
    err = NULL;
    cm_model_free(stale), cm_model_free(other);
    free(old);
    for (int i = 0; i < nb; i++) free((void *)pb[i].features);
    free(blob);
    cm_model_free(cold), cm_model_free(warm), cm_model_free(fb);
    tdb_close(db), tdb_close(db2);
    unlink(path), unlink(path2);
    free(A), free(B), free(target);
}

/* ---- the records' features are the search's view of their target ---- */

/* Features of f (malloc'd rows) at target's vector width, and their count. */
static float *features_of(const tir_func *f, const char *target, int *n) {
    float *x = NULL;
    assert_non_null(f);
    cm_extract_options xo = {.vector_bytes = tune_target_vector_bytes(target)};
    assert_int_equal(cm_extract_ex(NULL, f, &xo, &x, n, NULL), 0);
    return x;
}

/* Commits random programs of a matmul for target (GPU sketches for cuda)
 * with latencies 1, 2, 3, ... ms, loads them back with tune_dataset_load
 * and checks each program's features against the pipeline its target's
 * search scores with; returns how many programs the other target's
 * pipeline would have featurised differently (so the check can fail). */
static int check_dataset_view(const char *target, bool gpu) {
    char path[256];
    tdb_db *db = fresh_db(path, sizeof path, gpu ? "vgpu" : "vcpu");
    char *key = key_of("matmul", "M=64,N=64,K=64");
    assert_true(tdb_commit_workload_key(db, key) > 0);
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, key, &w), 0);
    int nsk = gpu ? tune_generate_sketches_gpu(ctx, &w, sk, TUNE_MAX_SKETCHES)
                  : tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    assert_true(nsk > 0);
    tir_pipeline_options own = {.unroll_hints_only = true, .skip_loop_partition = !gpu,
                                .gpu = gpu, .gpu_limits = tune_gpu_limits()};
    tir_pipeline_options other = {.unroll_hints_only = true, .skip_loop_partition = gpu,
                                  .gpu = !gpu, .gpu_limits = tune_gpu_limits()};
    enum { N = 24 };
    float *want[N];
    int nwant[N], n = 0, differ = 0;
    uint64_t rng = 2024;
    for (int tries = 0; n < N && tries < 20 * N; tries++) {
        sch_schedule *s = random_schedule(ctx, &w, sk, nsk, &rng);
        if (!s) continue;
        tir_func *f = sch_lower(s, w.nargs, w.args, "default");
        tir_func *fo = tir_run_pipeline(ctx, f, &own);
        if (!fo) continue; /* the GPU verifier rejects it: never measured */
        want[n] = features_of(fo, target, &nwant[n]);
        tir_func *fx = tir_run_pipeline(ctx, f, &other);
        if (fx) {
            int nx;
            float *x = features_of(fx, target, &nx);
            differ += nx != nwant[n] ||
                      memcmp(x, want[n], sizeof(float) * CM_NUM_FEATURES * (size_t)nx) != 0;
            free(x);
        } else {
            differ++;
        }
        double lat = 1e-3 * (n + 1);
        char *json = tdb_schedule_to_json(s);
        tdb_record_in in = {.workload_key = key, .target = target, .steps_json = json,
                            .nlatencies = 1, .latencies = &lat};
        assert_true(tdb_commit_record(db, &in) > 0);
        free(json);
        n++;
    }
    assert_int_equal(n, N);
    tune_dataset d;
    char *err = NULL;
    assert_int_equal(tune_dataset_load(db, target, 0, &d, &err), 0);
    assert_int_equal(d.n, N);
    assert_int_equal(d.skipped, 0);
    for (int i = 0; i < d.n; i++) {
        int j = (int)lround(d.latencies[i] / 1e-3) - 1; /* the program of that latency */
        assert_true(j >= 0 && j < N);
        assert_int_equal(d.progs[i].nstmts, nwant[j]);
        assert_memory_equal(d.progs[i].features, want[j],
                            sizeof(float) * CM_NUM_FEATURES * (size_t)nwant[j]);
    }
    for (int i = 0; i < N; i++) free(want[i]);
    tune_dataset_free(&d);
    te_ctx_free(ctx);
    tdb_close(db);
    unlink(path);
    free(key);
    return differ;
}

/* A stored record is featurised as its own target's search featurises a
 * candidate: the warm start and --eval-model train the model the search
 * scores with. GPU records go through the GPU pipeline (virtual threads
 * injected, verified); CPU records through the CPU view (no partitioning). */
static void test_dataset_view(void **st) {
    (void)st;
    char *host = tdb_host_target();
    int cpu_differ = check_dataset_view(host, false);
    int gpu_differ = check_dataset_view("cuda -arch=sm_90", true);
    print_message("programs the other pipeline featurises differently: CPU %d, GPU %d of 24\n",
                  cpu_differ, gpu_differ);
    assert_true(gpu_differ > 0);
    free(host);
}

/* ---- leave-one-workload-out evaluation ---- */

static void test_eval_model(void **st) {
    (void)st;
    char path[256], *target = tdb_host_target();
    tdb_db *db = fresh_db(path, sizeof path, "ev");
    char *k[3] = {key_of("matmul", "M=32,N=32,K=32"), key_of("matmul", "M=64,N=16,K=32"),
                  key_of("conv2d", "N=1,C=4,H=8,W=8,K=8,R=3,S=3,stride=1,pad=1")};
    char *err = NULL;
    tune_dataset d;
    tune_eval e;
    free(add_records(db, target, k[0], 40, 1));
    assert_int_equal(tune_dataset_load(db, target, 0, &d, &err), 0);
    assert_int_equal(d.ntasks, 1);
    assert_int_equal(tune_eval_model(&d, NULL, NULL, &e, &err), -1);
    tu_assert_msg_has(err, "1 workload", "at least 2");
    free(err);
    tune_dataset_free(&d);
    free(add_records(db, target, k[1], 40, 2));
    free(add_records(db, target, k[2], 30, 3));
    assert_int_equal(tune_dataset_load(db, target, 0, &d, &err), 0);
    assert_int_equal(d.ntasks, 3);
    /* each workload once, its programs under its id */
    int id[3];
    for (int i = 0; i < 3; i++) {
        id[i] = tune_dataset_task(&d, k[i]);
        assert_true(id[i] >= 0 && id[i] < 3);
        assert_string_equal(d.keys[id[i]], k[i]);
    }
    assert_true(id[0] != id[1] && id[1] != id[2] && id[0] != id[2]);
    assert_int_equal(tune_dataset_task(&d, "matmul(M=1,N=1,K=1)"), -1);
    for (int i = 0; i < d.n; i++) assert_true(d.task_ids[i] >= 0 && d.task_ids[i] < 3);
    cm_params cp;
    cm_params_default(&cp);
    cp.nthread = 1;
    assert_int_equal(tune_eval_model(&d, &cp, NULL, &e, &err), 0);
    assert_int_equal(e.nrows, 3);
    print_message("pairwise %.3f (random %.3f) top1 %.2f (%.2f) top5 %.2f (%.2f)\n", e.pairwise,
                  e.pairwise_random, e.top1, e.top1_random, e.top5, e.top5_random);
    assert_true(e.pairwise > 0.75);
    assert_true(e.pairwise > e.pairwise_random);
    assert_true(e.top5 >= e.top1 && e.top5 <= 1 && e.top1 >= 0);
    assert_true(e.top5_random >= e.top1_random);
    for (int i = 0; i < e.nrows; i++) assert_true(e.rows[i].programs >= 2);
    double all_row1 = e.rows[1].pairwise;
    tune_eval_free(&e);
    /* Held-out flags: only task 1 is scored; tasks 0 and 2 train. Its
     * model is the one the full evaluation trained for it (same data,
     * same seed), so its row is the same. */
    bool held[3] = {false, true, false};
    assert_int_equal(tune_eval_model(&d, &cp, held, &e, &err), 0);
    assert_int_equal(e.nrows, 1);
    assert_string_equal(e.rows[0].key, d.keys[1]);
    assert_true(fabs(e.rows[0].pairwise - all_row1) < 1e-12);
    assert_true(fabs(e.pairwise - all_row1) < 1e-12);
    tune_eval_free(&e);
    bool none[3] = {false, false, false};
    assert_int_equal(tune_eval_model(&d, &cp, none, &e, &err), -1);
    tu_assert_msg_has(err, "eval-model", "no held-out workload", "2 or more");
    free(err);
    tune_dataset_free(&d);
    tdb_close(db);
    unlink(path);
    for (int i = 0; i < 3; i++) free(k[i]);
    free(target);
}

/* Program p (of key's sketches) applies to the same steps as log. */
static void assert_program_is_log(const char *key, const tune_program *p, const char *log) {
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, key, &w), 0);
    assert_true(tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES) > 0);
    sch_schedule *s = tune_program_apply(ctx, &w, &sk[p->sketch], p);
    assert_non_null(s);
    int ns;
    sch_step *steps;
    assert_int_equal(tdb_steps_from_json(ctx, log, &ns, &steps), 0);
    char *canon = tdb_steps_to_json(ns, steps);
    assert_string_equal(tune_steps_key(ctx, s), canon);
    free(canon);
    te_ctx_free(ctx);
}

/* ---- resume: the population starts from the best stored program ---- */

typedef struct {
    int calls;
    int n;
    tune_program first;
} pop_seen;

static void on_pop(void *user, int n, const tune_program *p) {
    pop_seen *ps = user;
    if (ps->calls++ == 0) ps->n = n, ps->first = p[0];
}

static void test_resume_seeds(void **st) {
    (void)st;
    char path[256], *target = tdb_host_target();
    tdb_db *db = fresh_db(path, sizeof path, "rs");
    char *key = key_of("matmul", "M=16,N=16,K=16");
    char *best = add_records(db, target, key, 20, 4);
    assert_non_null(best);
    tune_options o;
    memset(&o, 0, sizeof o);
    o.trials = 2;
    o.per_round = 2;
    o.population = 16;
    o.generations = 1;
    o.seed = 5;
    o.measure.threads = 1;
    o.measure.repeat = 1;
    o.measure.num_threads = 1;
    o.measure.run_timeout = 5;
    o.nknown = 1;
    const char *known[1] = {best};
    o.known_steps = known;
    o.nseed = 1;
    pop_seen ps = {0};
    o.on_population = on_pop;
    o.user = &ps;
    tune_summary sum;
    char *err = NULL;
    assert_int_equal(tune_task(key, "llvm", &o, &sum, &err), 0);
    assert_int_equal(sum.measured, 2);
    assert_true(ps.calls >= 1);
    assert_int_equal(ps.n, 16);
    /* The first member of the population is the stored best program. */
    assert_program_is_log(key, &ps.first, best);
    /* It is never measured again. */
    assert_true(sum.best_steps_json == NULL || strcmp(sum.best_steps_json, best) != 0);
    free(sum.best_steps_json);
    free(best), free(key), free(target);
    tdb_close(db);
    unlink(path);
}

/* ---- later rounds start from this run's fastest measured program ---- */

typedef struct {
    int calls;
    tune_program second_first; /* round 2's first initial program */
    char *steps[8];            /* trials' logs (malloc'd) */
    double lat[8];             /* their medians; 0: failed */
    int n;
} round_seen;

static void on_pop_rounds(void *user, int n, const tune_program *p) {
    round_seen *rs = user;
    (void)n;
    if (rs->calls++ == 1) rs->second_first = p[0];
}

static int on_rec_rounds(void *user, const tune_result *r) {
    round_seen *rs = user;
    if (rs->n < 8) {
        rs->steps[rs->n] = strdup(r->steps_json);
        rs->lat[rs->n++] = r->error_code ? 0 : r->median;
    }
    return 0;
}

static int zero_predict(void *user, int n, const tir_func *const *funcs, double *scores) {
    (void)user, (void)funcs;
    for (int i = 0; i < n; i++) scores[i] = 0;
    return 0;
}

static void test_measured_seed_rounds(void **st) {
    (void)st;
    char *key = key_of("matmul", "M=16,N=16,K=16");
    tune_options o;
    memset(&o, 0, sizeof o);
    o.trials = 4;
    o.per_round = 2;
    o.population = 16;
    o.generations = 1;
    o.seed = 11;
    o.skip_default = true;
    o.no_heuristic = true;
    o.measure.threads = 1;
    o.measure.repeat = 1;
    o.measure.num_threads = 1;
    o.measure.run_timeout = 5;
    o.scorer.predict = zero_predict;
    round_seen rs = {0};
    o.on_population = on_pop_rounds;
    o.on_record = on_rec_rounds;
    o.user = &rs;
    tune_summary sum;
    char *err = NULL;
    assert_int_equal(tune_task(key, "llvm", &o, &sum, &err), 0);
    assert_int_equal(sum.measured, 4);
    assert_true(rs.calls >= 2);
    /* Round 1 measured trials 1 and 2; round 2's population starts from
     * the faster of them. */
    int f = rs.lat[0] > 0 && (rs.lat[1] <= 0 || rs.lat[0] <= rs.lat[1]) ? 0 : 1;
    assert_true(rs.lat[f] > 0);
    assert_program_is_log(key, &rs.second_first, rs.steps[f]);
    for (int i = 0; i < rs.n; i++) free(rs.steps[i]);
    free(sum.best_steps_json);
    free(key);
}

/* ---- the command ---- */

static char out[65536];

static int run(const char *args) {
    return tu_run(out, sizeof out, "%s/autotune %s", tu_bindir(), args);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_cli_eval_model(void **st) {
    (void)st;
    char path[256], a[1024], *target = tdb_host_target();
    tdb_db *db = fresh_db(path, sizeof path, "cli");
    char *k[3] = {key_of("matmul", "M=32,N=32,K=32"), key_of("matmul", "M=64,N=16,K=32"),
                  key_of("matmul", "M=16,N=64,K=16")};
    free(add_records(db, target, k[0], 40, 1));
    tdb_close(db);
    /* One workload: nothing to leave out. The records are 1-thread ones
     * (the plain key); --threads 2 reads the 2-thread key, which has none. */
    snprintf(a, sizeof a, "--eval-model --db %s --threads 1", path);
    assert_int_equal(run(a), 1);
    tu_assert_msg_has(out, "eval-model", "at least 2", target);
    assert_null(strstr(out, "-num-cores"));
    snprintf(a, sizeof a, "--eval-model --db %s --threads 2", path);
    assert_int_equal(run(a), 1);
    tu_assert_msg_has(out, "eval-model", target, " -num-cores 2");
    assert_int_equal(run("--eval-model"), 2);
    tu_assert_msg_has(out, "--eval-model needs --db FILE");
    db = tdb_open(path, NULL, NULL);
    free(add_records(db, target, k[1], 40, 2));
    free(add_records(db, target, k[2], 40, 3));
    tdb_close(db);
    snprintf(a, sizeof a, "--eval-model --db %s --target '%s' --threads 1", path, target);
    assert_int_equal(run(a), 0);
    print_message("%s", out);
    tu_assert_msg_has(out, "leave one workload out", k[0], k[1], k[2], "pairwise accuracy: ",
                      "top-1 recall: ", "top-5 recall: ", "(random ");
    double pw, pr;
    const char *l = strstr(out, "pairwise accuracy: ");
    assert_int_equal(sscanf(l, "pairwise accuracy: %lf (random %lf)", &pw, &pr), 2);
    assert_true(pw > 0.75 && pw > pr);
    tu_assert_msg_has(out, "rank loss"); /* the default */
    snprintf(a, sizeof a, "--eval-model --db %s --target '%s' --threads 1 --cost-loss squared",
             path, target);
    assert_int_equal(run(a), 0);
    tu_assert_msg_has(out, "squared loss", "pairwise accuracy: ");
    l = strstr(out, "pairwise accuracy: ");
    assert_int_equal(sscanf(l, "pairwise accuracy: %lf (random %lf)", &pw, &pr), 2);
    assert_true(pw > 0.75 && pw > pr);
    /* --seed seeds the training and the random model: the same seed twice
     * prints the same figures; another seed draws other random scores, so
     * the random model's figures differ (it was once read and ignored). */
    snprintf(a, sizeof a, "--eval-model --db %s --target '%s' --threads 1 --seed 7", path, target);
    assert_int_equal(run(a), 0);
    char *seven = strdup(out);
    assert_int_equal(run(a), 0);
    assert_string_equal(strstr(out, "pairwise accuracy: "), strstr(seven, "pairwise accuracy: "));
    snprintf(a, sizeof a, "--eval-model --db %s --target '%s' --threads 1 --seed 8", path, target);
    assert_int_equal(run(a), 0);
    assert_string_not_equal(strstr(out, "pairwise accuracy: "), strstr(seven, "pairwise accuracy: "));
    free(seven);
    /* A search's options do not apply to the evaluation. */
    snprintf(a, sizeof a, "--eval-model --db %s --trials 64", path);
    assert_int_equal(run(a), 2);
    tu_assert_msg_has(out, "--eval-model", "--trials applies to a search only");
    snprintf(a, sizeof a, "--eval-model --db %s --resume --op matmul", path);
    assert_int_equal(run(a), 2);
    tu_assert_msg_has(out, "--resume applies to a search only");
    snprintf(a, sizeof a, "--eval-model --db %s --cache-flush", path);
    assert_int_equal(run(a), 2);
    tu_assert_msg_has(out, "--eval-model", "--cache-flush applies to a search only");
    snprintf(a, sizeof a, "--eval-model --db %s --cost-loss hinge", path);
    assert_int_equal(run(a), 2);
    tu_assert_msg_has(out, "--cost-loss 'hinge'", "rank or squared");
    /* --suite: only the suite's workloads are held out; one of its lines
     * has no records (said, not fatal), a bad line is refused. */
    char suite[256];
    snprintf(suite, sizeof suite, "/tmp/loom_evsuite_%d.tsv", (int)getpid());
    write_text(suite, "# held out\nsmall\tmatmul\tM=64,N=16,K=32\nabsent\tmatmul\tM=8,N=8,K=8\n");
    snprintf(a, sizeof a, "--eval-model --db %s --target '%s' --threads 1 --suite %s", path,
             target, suite);
    assert_int_equal(run(a), 0);
    print_message("%s", out);
    tu_assert_msg_has(out, "the 1 of suite", "the other 2 for training only", k[1],
                      "suite workload 'absent'", "no valid records", "not evaluated");
    assert_null(strstr(out, k[0]));
    assert_null(strstr(out, k[2]));
    write_text(suite, "absent\tmatmul\tM=8,N=8,K=8\n");
    assert_int_equal(run(a), 1);
    tu_assert_msg_has(out, "no workload of suite", suite, "valid records");
    write_text(suite, "bad\tmatmul\tM=8,N=8\n");
    assert_int_equal(run(a), 2);
    tu_assert_msg_has(out, "bad shape 'M=8,N=8' for matmul");
    write_text(suite, "bad\tnosuchop\tM=8\n");
    assert_int_equal(run(a), 2);
    tu_assert_msg_has(out, "unknown op 'nosuchop'");
    write_text(suite, "");
    assert_int_equal(run(a), 2);
    tu_assert_msg_has(out, "has no workloads");
    unlink(suite);
    snprintf(a, sizeof a, "--eval-model --db %s --suite /nonexistent/s.tsv", path);
    assert_int_equal(run(a), 2);
    tu_assert_msg_has(out, "cannot read suite '/nonexistent/s.tsv'");
    /* The help defines the measures. */
    assert_int_equal(run("--help"), 0);
    tu_assert_msg_has(out, "--eval-model", "top-k recall", "truly", "pairwise ranking accuracy",
                      "only", "the suite's workloads are held out");
    unlink(path);
    for (int i = 0; i < 3; i++) free(k[i]);
    free(target);
}

static void test_cli_suite(void **st) {
    (void)st;
    char db[256], suite[256], a[1024];
    snprintf(db, sizeof db, "/tmp/loom_suite_%d.db", (int)getpid());
    snprintf(suite, sizeof suite, "/tmp/loom_suite_%d.tsv", (int)getpid());
    unlink(db);
    write_text(suite, "# name\top\tparams\nmmA\tmatmul\tM=16,N=16,K=16\nmmB\tmatmul\tM=8,N=32,K=16\n");
    snprintf(a, sizeof a,
             "--suite %s --trials 8 --db %s --per-round 2 --population 16 --jobs 2 --threads 1 "
             "--seed 2 --timeout 5 --retime 0",
             suite, db);
    int rc = run(a);
    print_message("%s", out);
    assert_int_equal(rc, 0);
    tu_assert_msg_has(out, "task mmA", "task mmB", "mmA: best", "mmB: best", "8 trials");
    tdb_db *d = tdb_open(db, NULL, NULL);
    assert_non_null(d);
    char *target = tdb_host_target();
    tdb_summary *sm = NULL;
    int n = tdb_list(d, target, &sm);
    assert_int_equal(n, 2);
    int total = 0;
    for (int i = 0; i < n; i++) {
        assert_true(sm[i].nrecords > 0);
        assert_true(sm[i].nvalid > 0);
        total += sm[i].nrecords;
    }
    assert_int_equal(total, 8);
    tdb_summaries_free(sm, n);
    free(target);
    tdb_close(d);
    unlink(db), unlink(suite);
}

int main(int argc, char **argv) {
    tune_runner_maybe_run(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_program_from_steps),
        cmocka_unit_test(test_warm_start),
        cmocka_unit_test(test_dataset_view),
        cmocka_unit_test(test_eval_model),
        cmocka_unit_test(test_resume_seeds),
        cmocka_unit_test(test_measured_seed_rounds),
        cmocka_unit_test(test_cli_eval_model),
        cmocka_unit_test(test_cli_suite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
