/*
 * tests/test_tuning_db_timing.c — how a record was timed (tdb_record_in.cold:
 * its operands evicted from the caches before every call, or warm) is
 * stored, read back, exported and imported; a file keeps one kind per
 * target, so a record of the other kind is refused at commit and at
 * import, naming the target and both kinds; files of schema versions 2-4
 * read as warm, read-only and after their migration.
 */
#include "test_tuning_db_util.h"
#include "tuning_db/tdb_internal.h"

static const double lat[] = {1e-3, 2e-3, 3e-3};

static tdb_record_in rec(const char *key, const char *target, const char *log, bool cold) {
    return (tdb_record_in){.workload_key = key,
                           .target = target,
                           .steps_json = log,
                           .nlatencies = 3,
                           .latencies = lat,
                           .cold = cold};
}

static void test_one_kind_per_target(void **state) {
    (void)state;
    char dir[64], path[128];
    tdbt_tmpdir(dir, sizeof dir);
    tdbt_path(path, sizeof path, dir, "t.db");
    char *key = tdbt_key("matmul", "M=32,N=32,K=32"), *log = tdbt_log(key, 4, 8);
    char *err = NULL;
    tdb_db *db = tdb_open(path, NULL, &err);
    assert_non_null(db);
    assert_int_equal(tdb_target_timing(db, "llvm -mcpu=a"), TDB_TIMING_NONE);
    assert_int_equal(tdb_target_timing(db, NULL), -1);
    tu_assert_msg_has(tdb_errmsg(db), "target_timing: no target key");

    tdb_record_in warm = rec(key, "llvm -mcpu=a", log, false);
    tdb_record_in cold = rec(key, "llvm -mcpu=a", log, true);
    int64_t w = tdb_commit_record(db, &warm);
    assert_true(w > 0);
    assert_int_equal(tdb_target_timing(db, "llvm -mcpu=a"), TDB_TIMING_WARM);
    assert_int_equal(tdb_commit_record(db, &cold), -1);
    tu_assert_msg_has(tdb_errmsg(db), "t.db", "target 'llvm -mcpu=a'", "timed warm",
                      "this one was timed cold", "do not compare");
    /* All or none: the warm record before it is rolled back too. */
    tdb_record_in both[2] = {warm, cold};
    assert_int_equal(tdb_commit_records(db, 2, both, NULL), -1);
    tu_assert_msg_has(tdb_errmsg(db), "record 1", "timed warm");
    tdb_stats stats;
    assert_int_equal(tdb_get_stats(db, &stats), 0);
    assert_int_equal(stats.records, 1);

    /* Another target keeps its own kind. */
    tdb_record_in cold_b = rec(key, "llvm -mcpu=b", log, true);
    int64_t c = tdb_commit_record(db, &cold_b);
    assert_true(c > 0);
    assert_int_equal(tdb_target_timing(db, "llvm -mcpu=b"), TDB_TIMING_COLD);
    tdb_record_in warm_b = rec(key, "llvm -mcpu=b", log, false);
    assert_int_equal(tdb_commit_record(db, &warm_b), -1);
    tu_assert_msg_has(tdb_errmsg(db), "target 'llvm -mcpu=b'", "timed cold",
                      "this one was timed warm");

    tdb_record r;
    assert_int_equal(tdb_get_record(db, w, &r), 1);
    assert_false(r.cold);
    tdb_record_clear(&r);
    tdb_record *best = NULL;
    assert_int_equal(tdb_best(db, key, "llvm -mcpu=b", 5, &best), 1);
    assert_true(best[0].cold && best[0].id == c);
    tdb_records_free(best, 1);
    tdb_close(db);
    free(log);
    free(key);
    tdbt_rmdir(dir);
}

static void test_export_import(void **state) {
    (void)state;
    char dir[64], a[128], b[128], jl[128];
    tdbt_tmpdir(dir, sizeof dir);
    tdbt_path(a, sizeof a, dir, "a.db");
    tdbt_path(b, sizeof b, dir, "b.db");
    tdbt_path(jl, sizeof jl, dir, "a.jsonl");
    char *key = tdbt_key("matmul", "M=32,N=32,K=32"), *log = tdbt_log(key, 4, 8);
    char *err = NULL;
    tdb_db *db = tdb_open(a, NULL, &err);
    assert_non_null(db);
    tdb_record_in cold = rec(key, "llvm -mcpu=a", log, true);
    tdb_record_in warm = rec(key, "llvm -mcpu=w", log, false);
    assert_true(tdb_commit_record(db, &cold) > 0);
    assert_true(tdb_commit_record(db, &warm) > 0);
    FILE *f = fopen(jl, "w");
    assert_int_equal(tdb_export_jsonl(db, f), 2);
    fclose(f);
    tdb_close(db);
    char text[16384];
    f = fopen(jl, "r");
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    /* Only the cold record says so: warm lines are as before. */
    const char *second = strchr(text, '\n');
    assert_non_null(second);
    assert_non_null(strstr(text, "\"cold\":true"));
    assert_true(strstr(text, "\"cold\":true") < second);
    assert_null(strstr(second, "cold"));

    db = tdb_open(b, NULL, &err);
    assert_non_null(db);
    f = fopen(jl, "r");
    int64_t imported = 0;
    assert_int_equal(tdb_import_jsonl(db, f, &imported, NULL), 0);
    fclose(f);
    assert_int_equal(imported, 2);
    assert_int_equal(tdb_target_timing(db, "llvm -mcpu=a"), TDB_TIMING_COLD);
    assert_int_equal(tdb_target_timing(db, "llvm -mcpu=w"), TDB_TIMING_WARM);

    /* A line of the other kind for a target: the line is bad, nothing in. */
    char line[16384];
    snprintf(line, sizeof line, "%.*s", (int)(second - text), text);
    char *c = strstr(line, "\"cold\":true");
    memcpy(c, "\"cold\":false", strlen("\"cold\":false"));
    strcpy(c + strlen("\"cold\":false"), "}\n");
    f = tmpfile();
    fputs(line, f);
    rewind(f);
    assert_int_equal(tdb_import_jsonl(db, f, &imported, NULL), -1);
    tu_assert_msg_has(tdb_errmsg(db), "1 bad line", "line 1", "target 'llvm -mcpu=a'",
                      "timed cold", "this one was timed warm");
    fclose(f);
    /* 'cold' must be a boolean. */
    c = strstr(line, "\"cold\":false");
    memcpy(c, "\"cold\":1    ", strlen("\"cold\":false"));
    f = tmpfile();
    fputs(line, f);
    rewind(f);
    assert_int_equal(tdb_import_jsonl(db, f, &imported, NULL), -1);
    tu_assert_msg_has(tdb_errmsg(db), "line 1", "'cold' must be true or false");
    fclose(f);
    tdb_close(db);
    free(log);
    free(key);
    tdbt_rmdir(dir);
}

/* Files of versions 2 to 4 hold warm records only. */
static void test_old_files_are_warm(void **state) {
    (void)state;
    char dir[64], path[128];
    tdbt_tmpdir(dir, sizeof dir);
    char *key = tdbt_key("matmul", "M=32,N=32,K=32"), *log = tdbt_log(key, 4, 8);
    for (int v = 2; v <= 4; v++) {
        char name[16], rows[8192];
        snprintf(name, sizeof name, "v%d.db", v);
        tdbt_path(path, sizeof path, dir, name);
        snprintf(rows, sizeof rows,
                 "INSERT INTO records(id, workload_id, target_id, steps, latencies, mean, "
                 "loom_version, created) VALUES(1, 1, 1, '%s', '[0.001]', 0.001, 'old', 1);%s",
                 log, v >= 3 ? "UPDATE records SET median = 0.001;" : "");
        tdbt_old_file(path, v, key, "llvm -mcpu=a", rows);
        char *err = NULL;
        tdb_db *db = tdb_open(path, &(tdb_open_options){.readonly = true}, &err);
        if (!db) fprintf(stderr, "%s\n", err);
        assert_non_null(db);
        assert_int_equal(tdb_schema_version(db), v);
        tdb_record r;
        assert_int_equal(tdb_get_record(db, 1, &r), 1);
        assert_false(r.cold);
        tdb_record_clear(&r);
        assert_int_equal(tdb_target_timing(db, "llvm -mcpu=a"), TDB_TIMING_WARM);
        tdb_close(db);

        db = tdb_open(path, NULL, &err);
        assert_non_null(db);
        assert_int_equal(tdb_schema_version(db), TDB_SCHEMA_VERSION);
        assert_int_equal(tdb_target_timing(db, "llvm -mcpu=a"), TDB_TIMING_WARM);
        tdb_record_in cold = rec(key, "llvm -mcpu=a", log, true);
        assert_int_equal(tdb_commit_record(db, &cold), -1);
        tu_assert_msg_has(tdb_errmsg(db), "timed warm", "this one was timed cold");
        tdb_close(db);
    }
    free(log);
    free(key);
    tdbt_rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_kind_per_target),
        cmocka_unit_test(test_export_import),
        cmocka_unit_test(test_old_files_are_warm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
