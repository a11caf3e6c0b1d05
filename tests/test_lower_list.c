/*
 * tests/test_lower_list.c — the lowering list (sch_lower_program) is the
 * one path from a schedule to a target's input: the cost model's public
 * feature extractor (cm_extract_schedule) sees exactly what the tuner
 * scored (no train/serve skew), on a CPU (constant weights split off)
 * and on a GPU; the list's own errors.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "loom/autotune.h"
#include "loom/ops.h"

/* Commits random programs of key for target with latencies 1, 2, 3, ...
 * ms, loads them back as the tuner featurises them (tune_dataset_load,
 * the tuner's model view), and checks each against cm_extract_schedule
 * of the same schedule. */
static void check_same_features(const char *op, const char *shape, const char *target, bool gpu) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/loom_lower_list_%s_%d.db", gpu ? "gpu" : "cpu",
             (int)getpid());
    unlink(path);
    tdb_db *db = tdb_open(path, NULL, NULL);
    assert_non_null(db);
    te_ctx *ctx = te_ctx_new();
    const char *key = ops_canonical_key(ctx, op, shape);
    assert_non_null(key);
    assert_true(tdb_commit_workload_key(db, key) > 0);
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, key, &w), 0);
    int nsk = gpu ? tune_generate_sketches_gpu(ctx, &w, sk, TUNE_MAX_SKETCHES)
                  : tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    assert_true(nsk > 0);
    cm_extract_options xo = {.vector_bytes = tune_target_vector_bytes(target),
                             .gpu = gpu,
                             .gpu_limits = tune_gpu_limits(),
                             .constant_args = w.constant_args};
    enum { N = 12 };
    float *want[N];
    int nwant[N], n = 0;
    uint64_t rng = 4242;
    for (int tries = 0; n < N && tries < 20 * N; tries++) {
        tune_program p;
        int k = (int)(tune_rand(&rng) % (uint64_t)nsk);
        tune_program_random(&sk[k], k, &rng, &p);
        sch_schedule *s = tune_program_apply(ctx, &w, &sk[k], &p);
        if (!s) continue;
        if (cm_extract_schedule(s, w.nargs, w.args, &xo, &want[n], &nwant[n])) {
            /* only a program the GPU verifier rejects (never measured) */
            assert_true(gpu);
            te_ctx_clear_error(ctx);
            continue;
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
    for (int i = 0; i < d.n; i++) {
        int j = (int)lround(d.latencies[i] / 1e-3) - 1;
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
}

static void test_cpu_features_are_the_tuners(void **st) {
    (void)st;
    char *host = tdb_host_target();
    check_same_features("matmul", "M=64,N=64,K=64", host, false);
    /* constant weights: the pre-computed packing is not in the features */
    check_same_features("conv2d", "N=1,C=16,H=14,W=14,K=16,R=3,S=3,stride=1,pad=1", host, false);
    free(host);
}

static void test_gpu_features_are_the_tuners(void **st) {
    (void)st;
    check_same_features("matmul", "M=64,N=64,K=64", "cuda -arch=sm_90", true);
}

/* The list's own rules. */
static void test_errors(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    te_tensor *a = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(16));
    te_expr *i = te_axis(ctx, "i", 16);
    te_tensor *c = te_compute(ctx, "C", TE_AXES(i), te_read(a, i));
    sch_schedule *s = sch_create(ctx, 1, &c);
    sch_lowered r;
    sch_lower_options gpu = {.constant_args = 1, .passes = {.gpu = true}};
    assert_int_equal(sch_lower_program(s, 2, (te_tensor *[]){a, c}, &gpu, &r), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx),
                      "lower: constant arguments (pre-computed stages) are not supported on the "
                      "GPU");
    assert_int_equal(sch_lower_program(s, 2, (te_tensor *[]){a, c}, NULL, NULL), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "lower: the output is NULL");
    assert_int_equal(sch_lower_program(s, 1, (te_tensor *[]){c}, NULL, &r), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "lower: the arguments miss input 'A'");
    assert_null(r.main);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_features_are_the_tuners),
        cmocka_unit_test(test_gpu_features_are_the_tuners),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
