/*
 * tests/test_tuning_db_builder.c — the tuning database with a workload of
 * a registered builder (a user's own operator, outside the ops registry):
 * committing it from its key, a stored log replayed and checked against
 * the builder's computation, tdb_apply_best rebuilding it and building
 * the best record (checked against a double reference after NaN
 * poisoning) or, without a record, its plain schedule; a key that no
 * builder knows is refused with a message saying how to register one.
 */
#include <math.h>

#include "custom_mmb.h"
#include "test_tuning_db_util.h"

#define M 8
#define N 24
#define K 12
#define KEY "test.mmb(M=8,N=24,K=12)"

/* A hand schedule of the workload: D's j split by 8 and vectorized, C
 * computed at D's outer j loop. */
static char *hand_log(void) {
    te_ctx *ctx = te_ctx_new();
    ops_built w;
    assert_int_equal(ops_build_key(ctx, KEY, &w), 0);
    sch_schedule *s = sch_create(ctx, w.nouts, w.outs);
    assert_non_null(s);
    te_tensor *D = w.outs[0];
    te_expr *jo, *ji;
    assert_int_equal(sch_split(s, D, sch_axis(D, 1), 8, &jo, &ji), 0);
    assert_int_equal(sch_vectorize(s, D, ji), 0);
    char *json = tdb_schedule_to_json(s);
    assert_non_null(json);
    te_ctx_free(ctx);
    return json;
}

/* Runs m (built for the workload in info) on fresh inputs, the output
 * poisoned with NaN, and compares with a double reference. */
static void check_module(rt_module *m, const tdb_apply_info *info) {
    assert_int_equal(info->nargs, 4);
    assert_non_null(info->args);
    uint64_t rng = tu_seed();
    DLTensor *A = tu_rand_f32(&rng, 2, (int64_t[]){M, K});
    DLTensor *B = tu_rand_f32(&rng, 2, (int64_t[]){K, N});
    DLTensor *bias = tu_rand_f32(&rng, 1, (int64_t[]){N});
    DLTensor *D = tu_nan_f32(2, (int64_t[]){M, N});
    assert_int_equal(rt_call(m, "default", 4, (DLTensor *[]){A, B, bias, D}), 0);
    double want[M * N];
    const float *a = A->data, *b = B->data, *c = bias->data;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = c[j];
            for (int k = 0; k < K; k++) acc += (double)a[i * K + k] * b[k * N + j];
            want[i * N + j] = acc;
        }
    assert_int_equal(tu_compare_f32("D", D->data, want, M * N, 1e-5, 1e-5), 0);
    rt_tensor_free(A), rt_tensor_free(B), rt_tensor_free(bias), rt_tensor_free(D);
}

static void test_apply_builder_workload(void **st) {
    (void)st;
    char dir[64], path[128];
    tdbt_tmpdir(dir, sizeof dir);
    tdbt_path(path, sizeof path, dir, "b.db");
    tdb_db *db = tdb_open(path, NULL, NULL);
    assert_non_null(db);
    const char *target = "llvm";
    te_ctx *ctx = te_ctx_new();
    tdb_apply_info info;

    /* No record yet: the plain schedule, said so, and correct. */
    rt_module *m = tdb_apply_best(db, ctx, KEY, target, &info);
    assert_non_null(m);
    assert_true(info.fallback);
    assert_null(info.workload); /* not an ops workload */
    tu_assert_msg_has(info.message, "no record", KEY, "plain schedule");
    check_module(m, &info);
    rt_module_free(m);

    /* The workload commits from its key alone (the builder gives its
     * FLOP count; the parameters come from the key's text). */
    int64_t wid = tdb_commit_workload_key(db, KEY);
    assert_true(wid > 0);
    char *log = hand_log();
    double lat[2] = {2e-6, 3e-6};
    tdb_record_in in = {.workload_key = KEY, .target = target, .steps_json = log,
                        .nlatencies = 2, .latencies = lat};
    int64_t rid = tdb_commit_record(db, &in);
    assert_true(rid > 0);
    tdb_record *best = NULL;
    assert_int_equal(tdb_best(db, KEY, target, 1, &best), 1);
    assert_true(fabs(best[0].flops - 2.0 * M * N * K) < 1e-9);
    tu_assert_msg_has(best[0].op, "test.mmb");
    tu_assert_msg_has(best[0].params_json, "\"M\":8", "\"K\":12");
    tdb_records_free(best, 1);

    /* A log that does not fit the builder's computation is refused. */
    tdb_record_in bad = in;
    bad.steps_json = "[{\"kind\":\"split\",\"stage\":9,\"iter\":0,\"factor\":2}]";
    assert_true(tdb_commit_record(db, &bad) < 0);
    tu_assert_msg_has(tdb_errmsg(db), "does not fit workload", KEY);

    /* The best record applies. */
    m = tdb_apply_best(db, ctx, KEY, target, &info);
    assert_non_null(m);
    assert_false(info.fallback);
    assert_int_equal(info.record_id, rid);
    tu_assert_msg_has(info.message, "applied record", KEY);
    check_module(m, &info);
    rt_module_free(m);

    /* A key no builder knows: say how to get one. */
    assert_null(tdb_apply_best(db, ctx, "user.nothing(M=1)", target, &info));
    tu_assert_msg_has(tdb_errmsg(db), "workload 'user.nothing(M=1)' has no builder",
                      "tune_register_builder", "--plugin", "before applying");
    /* ... and an ops key keeps the registry's own message. */
    assert_null(tdb_apply_best(db, ctx, "matmul(M=0,N=1,K=1)", target, &info));
    tu_assert_msg_has(tdb_errmsg(db), "cannot rebuild workload", "'M'");
    free(log);
    te_ctx_free(ctx);
    tdb_close(db);
    tdbt_rmdir(dir);
}

int main(void) {
    ops_register_builder("test.mmb", custom_mmb_build);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply_builder_workload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
