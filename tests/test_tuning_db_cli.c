/*
 * The `tunedb` command: every subcommand on a small database, their
 * --help, their CSV forms, and their errors (exit status and message).
 * The program is found next to this test's own executable.
 */
#include <libgen.h>
#include <limits.h>
#include <sys/wait.h>

#include "test_tuning_db_util.h"

#define TA "llvm -mcpu=test_a"

static char dir[64], dbp[128], jl[160], other[160];
static char *key;
static int64_t best_id;

static int setup(void **state) {
    (void)state;
    char tool[PATH_MAX + 16];
    snprintf(tool, sizeof tool, "%s/tunedb", tu_bindir());
    if (access(tool, X_OK)) {
        fprintf(stderr, "tunedb not built at %s\n", tool);
        return -1;
    }
    tdbt_tmpdir(dir, sizeof dir);
    tdbt_path(dbp, sizeof dbp, dir, "c.db");
    tdbt_path(jl, sizeof jl, dir, "x.jsonl");
    tdbt_path(other, sizeof other, dir, "o.db");
    key = tdbt_key("matmul", "M=32,N=32,K=32");
    char *err = NULL;
    tdb_db *db = tdb_open(dbp, NULL, &err);
    assert_non_null(db);
    char *host = tdb_host_target();
    char *l1 = tdbt_log(key, 4, 8), *l2 = tdbt_log(key, 8, 16);
    const struct {
        const char *t, *log;
        double lat;
        int err;
    } recs[] = {{TA, l1, 2e-3, 0}, {TA, l2, 1e-3, 0}, {TA, l1, 0, 4}, {host, l2, 5e-4, 0}};
    for (size_t i = 0; i < sizeof recs / sizeof *recs; i++) {
        tdb_record_in r = {.workload_key = key,
                           .target = recs[i].t,
                           .steps_json = recs[i].log,
                           .nlatencies = recs[i].err ? 0 : 1,
                           .latencies = &recs[i].lat,
                           .error_code = recs[i].err,
                           .error_msg = recs[i].err ? "boom" : ""};
        int64_t id = tdb_commit_record(db, &r);
        assert_true(id > 0);
        if (i == 1) best_id = id;
    }
    tdb_close(db);
    free(l1);
    free(l2);
    free(host);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tdbt_rmdir(dir);
    free(key);
    return 0;
}

static char out[65536];

static void test_help(void **state) {
    (void)state;
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--help"), 0);
    tu_assert_msg_has(out, "usage: tunedb --db FILE COMMAND", "list", "best", "history", "prune");
    const char *cmds[] = {"list",   "best",  "show",  "history", "export",
                          "import", "prune", "stats", "apply"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        assert_int_equal(tdbt_tunedb(out, sizeof out, "%s --help", cmds[i]), 0);
        char want[64];
        snprintf(want, sizeof want, "usage: tunedb --db FILE %s", cmds[i]);
        tu_assert_msg_has(out, want);
    }
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s frobnicate", dbp), 2);
    tu_assert_msg_has(out, "unknown command 'frobnicate'");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s list --bogus", dbp), 2);
    tu_assert_msg_has(out, "list", "unknown or incomplete option '--bogus'");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "list"), 1);
    tu_assert_msg_has(out, "no database", "--db FILE");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s prune", dbp), 2);
    tu_assert_msg_has(out, "--keep K");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s prune --keep -3", dbp), 2);
    tu_assert_msg_has(out, "--keep '-3' must be an integer from 0 to 2147483647");
    /* Past an int, the value wrapped (issue 30, item 4): --keep 4294967296
     * became 0 and deleted every record. */
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s prune --keep 4294967296", dbp), 2);
    tu_assert_msg_has(out, "--keep '4294967296' must be an integer from 0 to 2147483647");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s best -k 4294967297 --op matmul --shape M=4,N=4,K=4",
                         dbp), 2);
    tu_assert_msg_has(out, "-k '4294967297' must be an integer from 1 to 2147483647");
    /* a workload named twice, or not at all */
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s best --workload K --op matmul --shape M=1",
                         dbp), 2);
    tu_assert_msg_has(out, "give either --workload KEY or --op OP --shape S, not both");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s best", dbp), 2);
    tu_assert_msg_has(out, "which workload? give --workload KEY or --op OP --shape S");
}

static void test_list_best_show_history(void **state) {
    (void)state;
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s list", dbp), 0);
    tu_assert_msg_has(out, "WORKLOAD", "GFLOP/s", key, TA, "1.0000", "0.07");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s list --csv --target '%s'", dbp, TA), 0);
    char line[512];
    snprintf(line, sizeof line, "\"%s\",matmul,%s,3,2,0.001,0.065536", key, TA);
    tu_assert_msg_has(out, "workload,op,target,records,valid,best_s,gflops\n", line);

    assert_int_equal(tdbt_tunedb(out, sizeof out,
                         "best --db %s --op matmul --shape K=32,N=32,M=32 --target '%s'", dbp, TA),
                     0);
    char id[32];
    snprintf(id, sizeof id, "\"id\":\t%lld", (long long)best_id);
    tu_assert_msg_has(out, id, "\"gflops\":\t0.065536", "\"steps\":", "\"latencies\":", key);
    assert_int_equal(
        tdbt_tunedb(out, sizeof out, "--db %s best --workload '%s' --target '%s' -k 5", dbp, key, TA), 0);
    assert_true(out[0] == '[');
    /* a key in another parameter order means the same workload */
    assert_int_equal(tdbt_tunedb(out, sizeof out,
                         "--db %s best --workload 'matmul(N=32,K=32,M=32)' "
                         "--target '%s'",
                         dbp, TA),
                     0);
    tu_assert_msg_has(out, id);
    assert_int_equal(
        tdbt_tunedb(out, sizeof out, "--db %s best --workload '%s' --target nowhere", dbp, key), 1);
    tu_assert_msg_has(out, "no valid record", "'nowhere'", "records exist for", TA);
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s best --op nosuch --shape X=1", dbp), 2);
    tu_assert_msg_has(out, "nosuch");

    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s show %lld", dbp, (long long)best_id), 0);
    tu_assert_msg_has(out, id, "\"error_code\":\t0");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s show 99999", dbp), 1);
    tu_assert_msg_has(out, "no record with id 99999");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s show abc", dbp), 2);

    assert_int_equal(
        tdbt_tunedb(out, sizeof out, "--db %s history --workload '%s' --target '%s'", dbp, key, TA), 0);
    tu_assert_msg_has(out, "TRIAL", "BEST(ms)", "2.0000", "1.0000", "error");
    assert_int_equal(
        tdbt_tunedb(out, sizeof out, "--db %s history --workload '%s' --target '%s' --csv", dbp, key, TA),
        0);
    tu_assert_msg_has(out, "trial,record_id,latency_s,best_s,best_gflops\n1,",
                      ",0.002,0.002,0.032768\n", ",0.001,0.001,0.065536\n", ",,0.001,0.065536\n");
}

static void test_export_import_prune_stats(void **state) {
    (void)state;
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s export %s", dbp, jl), 0);
    tu_assert_msg_has(out, "exported 4 records");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s import %s", other, jl), 0);
    tu_assert_msg_has(out, "imported 4 records, skipped 0");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s import %s", other, jl), 0);
    tu_assert_msg_has(out, "imported 0 records, skipped 4");

    char bad[160];
    tdbt_path(bad, sizeof bad, dir, "bad.jsonl");
    FILE *f = fopen(bad, "w");
    fprintf(f, "\n{\"workload\": 3}\n\n[1,2\n");
    fclose(f);
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s import %s", other, bad), 1);
    tu_assert_msg_has(out, "bad.jsonl", "2 bad lines", "nothing imported",
                      "line 2:", "line 4:", "not valid JSON");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s import %s/none.jsonl", other, dir), 1);
    tu_assert_msg_has(out, "cannot read", "none.jsonl");

    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s stats", other), 0);
    char ver[64];
    snprintf(ver, sizeof ver, "schema version  %d", TDB_SCHEMA_VERSION);
    tu_assert_msg_has(out, ver, "records         4 (1 failed)",
                      "integrity       ok");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s prune --keep 1", other), 0);
    tu_assert_msg_has(out, "deleted 2 records");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s stats", other), 0);
    tu_assert_msg_has(out, "records         2 (0 failed)");

    /* Stored cost models are listed with whether this Loom can use them. */
    cm_model *cm = cm_model_new(NULL);
    void *blob = NULL;
    size_t len = 0;
    assert_int_equal(cm_model_save_buffer(cm, &blob, &len), 0);
    unsigned char *stale = malloc(len);
    memcpy(stale, blob, len);
    stale[16] = CM_FEATURE_VERSION - 1; /* the feature version in the header */
    tdb_db *db = tdb_open(other, NULL, NULL);
    assert_non_null(db);
    assert_int_equal(tdb_put_cost_model(db, "llvm -mcpu=a", CM_BLOB_FORMAT, blob, len), 0);
    assert_int_equal(tdb_put_cost_model(db, "llvm -mcpu=b", CM_BLOB_FORMAT, stale, len), 0);
    assert_int_equal(tdb_put_cost_model(db, "llvm -mcpu=c", "xgboost-json", "{}", 2), 0);
    tdb_cost_model_entry *e = NULL;
    assert_int_equal(tdb_list_cost_models(db, &e), 3);
    assert_string_equal(e[0].target, "llvm -mcpu=a");
    assert_string_equal(e[2].format, "xgboost-json");
    assert_true(e[0].bytes == (int64_t)len && e[2].bytes == 2 && e[0].updated > 0);
    tdb_cost_models_free(e, 3);
    assert_int_equal(tdb_list_cost_models(db, NULL), -1);
    tu_assert_msg_has(tdb_errmsg(db), "list_cost_models", "missing argument");
    tdb_close(db);
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s stats", other), 0);
    char fv[64];
    snprintf(fv, sizeof fv, "features of version %d", CM_FEATURE_VERSION - 1);
    tu_assert_msg_has(out, "cost models     3", "llvm -mcpu=a: " CM_BLOB_FORMAT,
                      "usable, untrained", "features at 64-byte vectors", "llvm -mcpu=b: ",
                      "not usable", fv,
                      "llvm -mcpu=c: xgboost-json, 2 bytes: not usable",
                      "reads format '" CM_BLOB_FORMAT "'");
    free(blob), free(stale);
    cm_model_free(cm);

    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s/nodir/x.db stats", dir), 1);
    tu_assert_msg_has(out, "does not exist", "nodir/x.db");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s/nodir/x.db import %s", dir, jl), 1);
    tu_assert_msg_has(out, "cannot be opened", "nodir/x.db", "writable");
}

static void test_apply(void **state) {
    (void)state;
    /* The records are 1-thread ones; the default is all cores' key. */
    assert_int_equal(
        tdbt_tunedb(out, sizeof out, "--db %s apply --workload '%s' --threads 1", dbp, key), 0);
    tu_assert_msg_has(out, "applied record", "correct");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s apply --op matmul --shape M=8,N=8,K=8", dbp), 0);
    tu_assert_msg_has(out, "no record", "default schedule", "correct");
    /* A key with a thread count builds for its machine part: none stored
     * for 3 threads, so the default schedule, on this host's CPU. */
    assert_int_equal(
        tdbt_tunedb(out, sizeof out, "--db %s apply --workload '%s' --threads 3", dbp, key), 0);
    tu_assert_msg_has(out, "no record", "-num-cores 3", "default schedule", "correct");
    /* --threads: a count in range, not twice, and list needs the target. */
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s best --workload '%s' --target "
                                 "'llvm -mcpu=x -num-cores 2' --threads 2", dbp, key), 2);
    tu_assert_msg_has(out, "tunedb best: --target 'llvm -mcpu=x -num-cores 2' names its thread "
                           "count already; --threads 2 does not apply");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s list --threads 2", dbp), 2);
    tu_assert_msg_has(out, "tunedb list: --threads names a target's thread count: give --target");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s best --workload '%s' --threads 0", dbp,
                                 key), 2);
    tu_assert_msg_has(out, "--threads", "0");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_list_best_show_history),
        cmocka_unit_test(test_export_import_prune_stats),
        cmocka_unit_test(test_apply),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
