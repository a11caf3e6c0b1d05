/*
 * tests/test_tuning_db_median.c — "best" means the lowest MEDIAN latency
 * everywhere in the tuning database (best-k, history, list, prune, apply,
 * GFLOP/s, export), as in the tuner; the version-3 migration computes the
 * median of old records from their stored latencies, and a version-2 file
 * opened read-only is read with medians computed on the fly; and
 * tdb_history_reach (trials to 95% of best) on hand-checked histories.
 *
 * The records are chosen so that mean and median order them differently:
 *   A: 1,1,1,1,100 ms  mean 20.8 ms  median 1 ms
 *   B: 5,5,5,5 ms      mean 5 ms     median 5 ms
 *   C: 4,2 ms          mean 3 ms     median 3 ms (even count: the mean of the middle two)
 * By mean: C, B, A. By median: A, C, B.
 */
#include <math.h>

#include "test_tuning_db_util.h"
#include "tuning_db/tdb_internal.h"

/* The host target: tdb_apply_best builds for it. */
static char *TA;

static const double lat_a[] = {1e-3, 1e-3, 1e-3, 1e-3, 100e-3};
static const double lat_b[] = {5e-3, 5e-3, 5e-3, 5e-3};
static const double lat_c[] = {4e-3, 2e-3};

static bool near(double a, double b) { return fabs(a - b) <= 1e-12 * fabs(b); }

static int64_t commit(tdb_db *db, const char *key, const char *log, int n, const double *lat,
                      int err) {
    tdb_record_in r = {.workload_key = key,
                       .target = TA,
                       .steps_json = log,
                       .nlatencies = n,
                       .latencies = lat,
                       .error_code = err,
                       .error_msg = err ? "run timeout" : NULL};
    int64_t id = tdb_commit_record(db, &r);
    if (id < 0) fprintf(stderr, "%s\n", tdb_errmsg(db));
    assert_true(id > 0);
    return id;
}

/* The order and values every query shows; ids a, b, c as above. */
static void check_median_everywhere(tdb_db *db, const char *key, int64_t a, int64_t b,
                                    int64_t c) {
    tdb_record *r = NULL;
    assert_int_equal(tdb_best(db, key, TA, 10, &r), 3);
    assert_true(r[0].id == a && r[1].id == c && r[2].id == b);
    assert_true(near(r[0].median, 1e-3) && near(r[0].mean, 20.8e-3));
    assert_true(near(r[1].median, 3e-3) && near(r[2].median, 5e-3));
    /* GFLOP/s from the median: 2 * 32^3 FLOP in 1 ms. */
    assert_true(near(tdb_record_gflops(&r[0]), 65536.0 / 1e-3 * 1e-9));
    tdb_records_free(r, 3);

    tdb_history_point *h = NULL;
    assert_int_equal(tdb_history(db, key, TA, &h), 4); /* C, B, error, A in commit order */
    assert_true(near(h[0].latency, 3e-3) && near(h[0].best, 3e-3));
    assert_true(near(h[1].latency, 5e-3) && near(h[1].best, 3e-3));
    assert_true(isnan(h[2].latency) && near(h[2].best, 3e-3));
    assert_true(near(h[3].latency, 1e-3) && near(h[3].best, 1e-3));
    free(h);

    tdb_summary *s = NULL;
    assert_int_equal(tdb_list(db, TA, &s), 1);
    assert_int_equal(s[0].nrecords, 4);
    assert_int_equal(s[0].nvalid, 3);
    assert_true(near(s[0].best, 1e-3));
    tdb_summaries_free(s, 1);

    te_ctx *ctx = te_ctx_new();
    tdb_apply_info info;
    rt_module *m = tdb_apply_best(db, ctx, key, TA, &info);
    assert_non_null(m);
    assert_false(info.fallback);
    assert_true(info.record_id == a);
    assert_true(near(info.latency, 1e-3));
    tu_assert_msg_has(info.message, "median");
    rt_module_free(m);
    te_ctx_free(ctx);
}

static void test_best_is_lowest_median(void **state) {
    (void)state;
    char dir[64], path[128];
    tdbt_tmpdir(dir, sizeof dir);
    tdbt_path(path, sizeof path, dir, "m.db");
    char *key = tdbt_key("matmul", "M=32,N=32,K=32"), *log = tdbt_log(key, 4, 8);
    tdb_db *db = tdb_open(path, NULL, NULL);
    assert_non_null(db);
    int64_t c = commit(db, key, log, 2, lat_c, 0);
    int64_t b = commit(db, key, log, 4, lat_b, 0);
    commit(db, key, log, 0, NULL, 7);
    int64_t a = commit(db, key, log, 5, lat_a, 0);
    check_median_everywhere(db, key, a, b, c);

    /* The error record has no median; export writes it as null. */
    tdb_record e;
    assert_int_equal(tdb_get_record(db, a - 1, &e), 1);
    assert_true(isnan(e.median) && e.error_code == 7);
    tdb_record_clear(&e);
    tdb_record ra;
    assert_int_equal(tdb_get_record(db, a, &ra), 1);
    char *line = tdb_record_to_json(db, &ra);
    assert_non_null(line);
    tu_assert_msg_has(line, "\"median\":0.001,", "\"mean\":0.020");
    free(line);
    tdb_record_clear(&ra);

    /* prune keeps the lowest median. */
    assert_int_equal(tdb_prune(db, 1), 3);
    tdb_record *r = NULL;
    assert_int_equal(tdb_best(db, key, TA, 10, &r), 1);
    assert_true(r[0].id == a);
    tdb_records_free(r, 1);

    tdb_close(db);
    free(log);
    free(key);
    tdbt_rmdir(dir);
}

/* A version-2 file with A, B, C and an error record, written as Loom
 * version 2 wrote them (a mean, no median column). */
static void make_v2(const char *path, const char *key, const char *log) {
    static const char *const rows[] = {
        "1, '[0.004,0.002]', 0.003, 0", "2, '[0.005,0.005,0.005,0.005]', 0.005, 0",
        "3, '[]', NULL, 7", "4, '[0.001,0.001,0.001,0.001,0.1]', 0.0208, 0"};
    size_t cap = 4 * strlen(log) + 4096;
    char *sql = malloc(cap);
    int len = 0;
    for (int i = 0; i < 4; i++)
        len += snprintf(sql + len, cap - (size_t)len,
                        "INSERT INTO records(id, latencies, mean, error_code, workload_id, "
                        "target_id, steps, loom_version, created) VALUES(%s, 1, 1, '%s', "
                        "'old', %d);",
                        rows[i], log, i + 1);
    assert_true((size_t)len < cap);
    tdbt_old_file(path, 2, key, TA, sql);
    free(sql);
}

static void test_migration_and_old_readonly(void **state) {
    (void)state;
    char dir[64], path[128];
    tdbt_tmpdir(dir, sizeof dir);
    tdbt_path(path, sizeof path, dir, "v2.db");
    char *key = tdbt_key("matmul", "M=32,N=32,K=32"), *log = tdbt_log(key, 4, 8);
    make_v2(path, key, log);

    /* Read-only: readable as it is, medians computed, the file untouched. */
    char *err = NULL;
    tdb_db *db = tdb_open(path, &(tdb_open_options){.readonly = true}, &err);
    if (!db) fprintf(stderr, "%s\n", err);
    assert_non_null(db);
    assert_int_equal(tdb_schema_version(db), 2);
    check_median_everywhere(db, key, 4, 2, 1);
    tdb_close(db);

    /* Read-write: migrated to version 3 with the medians stored. */
    db = tdb_open(path, NULL, &err);
    assert_non_null(db);
    assert_int_equal(tdb_schema_version(db), TDB_SCHEMA_VERSION);
    tdb_record r;
    assert_int_equal(tdb_get_record(db, 3, &r), 1);
    assert_true(isnan(r.median)); /* the error record */
    tdb_record_clear(&r);
    check_median_everywhere(db, key, 4, 2, 1);
    /* New records go in beside the migrated ones. */
    const double fast[] = {0.5e-3, 0.6e-3, 90e-3};
    int64_t id = commit(db, key, log, 3, fast, 0);
    tdb_record *best = NULL;
    assert_int_equal(tdb_best(db, key, TA, 1, &best), 1);
    assert_true(best[0].id == id && near(best[0].median, 0.6e-3));
    tdb_records_free(best, 1);
    tdb_close(db);

    /* Still refused read-only: a file older than version 2. */
    char v1[160];
    tdbt_path(v1, sizeof v1, dir, "v1.db");
    assert_int_equal(tdb__create_at_version(v1, 1, &err), 0);
    assert_null(tdb_open(v1, &(tdb_open_options){.readonly = true}, &err));
    tu_assert_msg_has(err, "needs migrating", "version 1", "v1.db");
    free(err);
    free(log);
    free(key);
    tdbt_rmdir(dir);
}

static void test_median_rule(void **state) {
    (void)state;
    /* The tuner's rule (autotune/measure.c): middle value, or the mean of
     * the middle two; the input is not reordered. */
    double v[] = {3, 1, 2, 4};
    assert_true(tdb__median(4, v) == 2.5);
    assert_true(v[0] == 3 && v[3] == 4);
    assert_true(tdb__median(3, v) == 2);
    assert_true(tdb__median(1, v) == 3);
    assert_true(isnan(tdb__median(0, v)));
    double many[100];
    for (int i = 0; i < 100; i++) many[i] = 100 - i; /* 100..1: median 50.5 */
    assert_true(tdb__median(100, many) == 50.5);
}

static tdb_history_point pt(int trial, double lat) {
    return (tdb_history_point){trial, trial, lat, NAN};
}

static void test_history_reach(void **state) {
    (void)state;
    /* Latencies in ms: best 4.8 at trial 7. 95%: latency <= 4.8 / 0.95 =
     * 5.0526: trial 3 (5.0) is the first; trial 2 (10) is not. */
    tdb_history_point h[] = {pt(1, NAN), pt(2, 10), pt(3, 5.0), pt(4, 5.2),
                             pt(5, 4.9), pt(6, NAN), pt(7, 4.8)};
    assert_int_equal(tdb_history_reach(h, 7, 0.95), 3);
    /* 100%: the best itself. */
    assert_int_equal(tdb_history_reach(h, 7, 1.0), 7);
    /* 98%: 4.8 / 0.98 = 4.898: 4.9 misses, so trial 7. */
    assert_int_equal(tdb_history_reach(h, 7, 0.98), 7);
    /* 50%: 9.6 ms; 10 ms misses, 5 ms makes it. */
    assert_int_equal(tdb_history_reach(h, 7, 0.5), 3);
    /* 45%: 10.67 ms: trial 2. */
    assert_int_equal(tdb_history_reach(h, 7, 0.45), 2);
    /* Only the points given count: the first 4 have best 5.0 at trial 3,
     * and 95% of it (5.263 ms) is first reached at trial 3 too; 5.2 would
     * qualify but comes later. */
    assert_int_equal(tdb_history_reach(h, 4, 0.95), 3);
    /* A run's part of a history (trials 4..7): best 4.8, first within
     * 95% is trial 4? 5.2 > 5.0526, no; trial 5 (4.9) is. */
    assert_int_equal(tdb_history_reach(h + 3, 4, 0.95), 5);
    /* Nothing valid, bad fractions. */
    tdb_history_point bad[] = {pt(1, NAN), pt(2, NAN)};
    assert_int_equal(tdb_history_reach(bad, 2, 0.95), 0);
    assert_int_equal(tdb_history_reach(h, 0, 0.95), 0);
    assert_int_equal(tdb_history_reach(NULL, 3, 0.95), 0);
    assert_int_equal(tdb_history_reach(h, 7, 0), 0);
    assert_int_equal(tdb_history_reach(h, 7, 1.5), 0);
}

int main(void) {
    TA = tdb_host_target();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_best_is_lowest_median),
        cmocka_unit_test(test_migration_and_old_readonly),
        cmocka_unit_test(test_median_rule),
        cmocka_unit_test(test_history_reach),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(TA);
    return rc;
}
