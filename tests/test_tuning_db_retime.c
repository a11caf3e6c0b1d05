/*
 * tests/test_tuning_db_retime.c — re-timings (tdb_commit_retime): the
 * re-timed records rank first, by the fastest latency of their latest
 * re-timing, in best-k and prune; the record's own median is kept, export
 * shows it; bad re-timings are refused with a message; a version-3 file (before re-timings) opened
 * read-only reads as having none, and opened read-write is migrated.
 *
 * Records: A median 2 ms, B median 3 ms, C median 4 ms, E an error.
 */
#include <math.h>

#include "test_tuning_db_util.h"
#include "tuning_db/tdb_internal.h"

static char *TA; /* the host target */

static bool near(double a, double b) { return fabs(a - b) <= 1e-12 * fabs(b); }

static int64_t commit(tdb_db *db, const char *key, const char *log, double ms, int err) {
    double lat[3] = {ms * 1e-3, ms * 1e-3, ms * 1e-3 * 1.5};
    tdb_record_in r = {.workload_key = key,
                       .target = TA,
                       .steps_json = log,
                       .nlatencies = err ? 0 : 3,
                       .latencies = lat,
                       .error_code = err,
                       .error_msg = err ? "run timeout" : NULL};
    int64_t id = tdb_commit_record(db, &r);
    if (id < 0) fprintf(stderr, "%s\n", tdb_errmsg(db));
    assert_true(id > 0);
    return id;
}

/* The ids of the best-k, in order, into ids; returns how many. */
static int best_ids(tdb_db *db, const char *key, int64_t *ids, double *rank) {
    tdb_record *r = NULL;
    int n = tdb_best(db, key, TA, 10, &r);
    assert_true(n >= 0);
    for (int i = 0; i < n; i++) {
        ids[i] = r[i].id;
        rank[i] = isnan(r[i].retimed_latency) ? r[i].median : r[i].retimed_latency;
    }
    tdb_records_free(r, n);
    return n;
}

static void test_retime_ranks(void **state) {
    (void)state;
    char dir[64], path[128];
    tdbt_tmpdir(dir, sizeof dir);
    tdbt_path(path, sizeof path, dir, "r.db");
    char *key = tdbt_key("matmul", "M=32,N=32,K=32");
    char *log[3] = {tdbt_log(key, 4, 8), tdbt_log(key, 8, 8), tdbt_log(key, 2, 16)};
    char *err = NULL;
    tdb_db *db = tdb_open(path, NULL, &err);
    assert_non_null(db);
    int64_t a = commit(db, key, log[0], 2, 0), b = commit(db, key, log[1], 3, 0);
    int64_t c = commit(db, key, log[2], 4, 0), e = commit(db, key, log[2], 0, 7);
    int64_t ids[8];
    double rank[8];
    assert_int_equal(best_ids(db, key, ids, rank), 3);
    assert_true(ids[0] == a && ids[1] == b && ids[2] == c);

    /* A and B timed again side by side: A 5 ms (the fastest of 6, 9, 5),
     * B 4 ms. Re-timed records lead (B, A), C keeps its own 4 ms behind. */
    assert_int_equal(tdb_commit_retime(db, a, 3, (double[]){6e-3, 9e-3, 5e-3}), 0);
    assert_int_equal(tdb_commit_retime(db, b, 1, (double[]){4e-3}), 0);
    assert_int_equal(best_ids(db, key, ids, rank), 3);
    assert_true(ids[0] == b && ids[1] == a && ids[2] == c);
    assert_true(near(rank[0], 4e-3) && near(rank[1], 5e-3) && near(rank[2], 4e-3));
    tdb_record r;
    assert_int_equal(tdb_get_record(db, a, &r), 1);
    assert_true(near(r.median, 2e-3) && near(r.retimed_latency, 5e-3)); /* the record kept */
    char *json = tdb_record_to_json(db, &r);
    assert_non_null(strstr(json, "\"retimed_latency\":0.005"));
    free(json);
    tdb_record_clear(&r);
    assert_int_equal(tdb_get_record(db, c, &r), 1);
    assert_true(isnan(r.retimed_latency));
    json = tdb_record_to_json(db, &r);
    assert_null(strstr(json, "retimed_latency"));
    free(json);
    tdb_record_clear(&r);
    /* The latest re-timing counts: A at 1 ms leads. */
    assert_int_equal(tdb_commit_retime(db, a, 2, (double[]){1e-3, 1e-3}), 0);
    assert_int_equal(best_ids(db, key, ids, rank), 3);
    assert_true(ids[0] == a && near(rank[0], 1e-3) && ids[1] == b);
    /* list's best is the same figure */
    tdb_summary *ls = NULL;
    assert_int_equal(tdb_list(db, TA, &ls), 1);
    assert_true(near(ls[0].best, 1e-3) && ls[0].nvalid == 3);
    tdb_summaries_free(ls, 1);

    /* Prune keeps the best by the same rule: C (never re-timed) and the
     * error record go. */
    assert_int_equal(tdb_prune(db, 2), 2);
    assert_int_equal(best_ids(db, key, ids, rank), 2);
    assert_true(ids[0] == a && ids[1] == b);
    tdb_stats st;
    assert_int_equal(tdb_get_stats(db, &st), 0);
    assert_int_equal(st.records, 2);
    /* A record's re-timings go with it (with foreign keys on, deleting
     * a re-timed record would fail otherwise). */
    assert_int_equal(tdb_prune(db, 1), 1);
    assert_int_equal(best_ids(db, key, ids, rank), 1);
    assert_true(ids[0] == a);

    /* Bad re-timings. */
    assert_int_equal(tdb_commit_retime(db, 9999, 1, (double[]){1e-3}), -1);
    tu_assert_msg_has(tdb_errmsg(db), "commit_retime", "no record 9999");
    assert_int_equal(tdb_commit_retime(db, a, 0, NULL), -1);
    tu_assert_msg_has(tdb_errmsg(db), "needs at least one latency");
    assert_int_equal(tdb_commit_retime(db, a, 1, (double[]){NAN}), -1);
    tu_assert_msg_has(tdb_errmsg(db), "latency 0", "finite number of seconds");
    assert_int_equal(tdb_commit_retime(db, a, 1, (double[]){-1.0}), -1);
    tu_assert_msg_has(tdb_errmsg(db), "finite number of seconds >= 0");
    int64_t e2 = commit(db, key, log[0], 0, 7);
    assert_int_equal(tdb_commit_retime(db, e2, 1, (double[]){1e-3}), -1);
    tu_assert_msg_has(tdb_errmsg(db), "error record", "only a program that ran");
    (void)e;
    tdb_close(db);
    db = tdb_open(path, &(tdb_open_options){.readonly = true}, &err);
    assert_non_null(db);
    assert_int_equal(tdb_commit_retime(db, a, 1, (double[]){1e-3}), -1);
    tu_assert_msg_has(tdb_errmsg(db), "read-only");
    tdb_close(db);
    for (int i = 0; i < 3; i++) free(log[i]);
    free(key);
    tdbt_rmdir(dir);
}

/* A version-3 file: read-only it reads as never re-timed; read-write it
 * is migrated and takes re-timings. */
static void test_retime_old_file(void **state) {
    (void)state;
    char dir[64], path[128];
    tdbt_tmpdir(dir, sizeof dir);
    tdbt_path(path, sizeof path, dir, "v3.db");
    char *key = tdbt_key("matmul", "M=32,N=32,K=32"), *log = tdbt_log(key, 4, 8);
    char rows[8192];
    snprintf(rows, sizeof rows,
             "INSERT INTO records(id, workload_id, target_id, steps, latencies, mean, median, "
             "error_code, loom_version, created) VALUES(1, 1, 1, '%s', '[0.002]', 0.002, 0.002, "
             "0, 'old', 1);",
             log);
    tdbt_old_file(path, 3, key, TA, rows);
    char *err = NULL;
    tdb_db *db = tdb_open(path, &(tdb_open_options){.readonly = true}, &err);
    if (!db) fprintf(stderr, "%s\n", err);
    assert_non_null(db);
    assert_int_equal(tdb_schema_version(db), 3);
    int64_t ids[8];
    double rank[8];
    assert_int_equal(best_ids(db, key, ids, rank), 1);
    assert_true(ids[0] == 1 && near(rank[0], 2e-3));
    tdb_close(db);
    db = tdb_open(path, NULL, &err);
    assert_non_null(db);
    assert_int_equal(tdb_schema_version(db), TDB_SCHEMA_VERSION);
    assert_int_equal(tdb_commit_retime(db, 1, 1, (double[]){3e-3}), 0);
    assert_int_equal(best_ids(db, key, ids, rank), 1);
    assert_true(near(rank[0], 3e-3));
    tdb_close(db);
    free(log);
    free(key);
    tdbt_rmdir(dir);
}

int main(void) {
    TA = tdb_host_target();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retime_ranks),
        cmocka_unit_test(test_retime_old_file),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(TA);
    return rc;
}
