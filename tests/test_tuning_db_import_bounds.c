/*
 * What an imported record may hold (loom/tuning_db.h, above
 * tdb_import_jsonl): error codes of the tuner only, latencies finite,
 * within [1e-9, 3600] s and not faster than 1 PFLOP/s for the workload,
 * unroll limits the unroll pass can honour. Every bad line is counted and
 * each can be listed ("line N: reason"); a file whose schema version is
 * negative is named as not a Loom database. Through the library and
 * through `tunedb import --errors`.
 */
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <sys/wait.h>

#include "test_tuning_db_util.h"

#define TGT "llvm -mcpu=test_bounds"

/* tuning_db sits below autotune and keeps its own copy of the bound. */
_Static_assert(TDB_ERROR_CODE_MAX == TUNE_ERR_UNKNOWN,
               "import's error codes are the tuner's: 0..TUNE_ERR_UNKNOWN");

static char dir[64], dbp[128];
static char *k32, *k128; /* matmul 32^3 (65,536 FLOP) and 128^3 (4,194,304 FLOP) */
static char *log32, *log128;
static long created = 1700000000; /* a new time per line: no line is a duplicate */

static int setup(void **state) {
    (void)state;
    tdbt_tmpdir(dir, sizeof dir);
    tdbt_path(dbp, sizeof dbp, dir, "b.db");
    k32 = tdbt_key("matmul", "M=32,N=32,K=32");
    k128 = tdbt_key("matmul", "M=128,N=128,K=128");
    log32 = tdbt_log(k32, 4, 8);
    log128 = tdbt_log(k128, 4, 8);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tdbt_rmdir(dir);
    free(k32), free(k128), free(log32), free(log128);
    return 0;
}

/* Appends one record line. No "flops": a line cannot make a workload the
 * ops registry builds look cheap by leaving it out. */
static void line(FILE *f, const char *key, const char *steps, const char *latencies, int code) {
    fprintf(f,
            "{\"workload\":{\"key\":\"%s\",\"op\":\"matmul\"},\"target\":{\"key\":\"" TGT "\"},"
            "\"steps\":%s,\"latencies\":[%s],\"error_code\":%d,\"created\":%ld}\n",
            key, steps, latencies, code, created++);
}

/* A log of one pragma on the first loop of matmul's output stage. */
static char *pragma_log(const char *name, long long value) {
    char *s = malloc(160);
    snprintf(s, 160,
             "[{\"kind\":\"pragma\",\"stage\":2,\"iter\":0,\"name\":\"%s\",\"value\":%lld}]", name,
             value);
    return s;
}

/* Imports text into a fresh database: the result, the message (copied
 * into msg), and every bad line in all (when not NULL). */
static int import_text(const char *text, char *msg, size_t size, char **all, int *nbad) {
    unlink(dbp);
    char *err = NULL;
    tdb_db *db = tdb_open(dbp, NULL, &err);
    assert_non_null(db);
    FILE *in = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(in);
    size_t alen = 0;
    tdb_import_options io = {0};
    if (all) io.errors = open_memstream(all, &alen);
    int64_t imp = -1, skip = -1;
    int rc = tdb_import_jsonl_with(db, in, &io, &imp, &skip);
    if (all) fclose(io.errors);
    fclose(in);
    snprintf(msg, size, "%s", tdb_errmsg(db));
    if (nbad) *nbad = io.bad_lines;
    tdb_stats st;
    assert_int_equal(tdb_get_stats(db, &st), 0);
    if (rc) assert_int_equal(st.records, 0); /* all or nothing */
    else assert_int_equal(st.records, imp);
    tdb_close(db);
    return rc;
}

/* One line alone: refused with every expected piece in the message. */
#define EXPECT_BAD(key, steps, lat, code, ...)                                                    \
    do {                                                                                          \
        char *t_ = NULL, m_[4096];                                                                \
        size_t n_ = 0;                                                                            \
        FILE *f_ = open_memstream(&t_, &n_);                                                      \
        line(f_, key, steps, lat, code);                                                          \
        fclose(f_);                                                                               \
        assert_int_equal(import_text(t_, m_, sizeof m_, NULL, NULL), -1);                         \
        tu_assert_msg_has(m_, "import: 1 bad line, nothing imported:", "line 1: ", __VA_ARGS__);  \
        free(t_);                                                                                 \
    } while (0)

#define EXPECT_GOOD(key, steps, lat, code)                                                        \
    do {                                                                                          \
        char *t_ = NULL, m_[4096];                                                                \
        size_t n_ = 0;                                                                            \
        FILE *f_ = open_memstream(&t_, &n_);                                                      \
        line(f_, key, steps, lat, code);                                                          \
        fclose(f_);                                                                               \
        int rc_ = import_text(t_, m_, sizeof m_, NULL, NULL);                                     \
        if (rc_) fprintf(stderr, "%s\n", m_);                                                     \
        assert_int_equal(rc_, 0);                                                                 \
        free(t_);                                                                                 \
    } while (0)

static void test_error_codes(void **state) {
    (void)state;
    for (int c = 0; c <= TDB_ERROR_CODE_MAX; c++) EXPECT_GOOD(k32, log32, c ? "" : "1e-3", c);
    EXPECT_BAD(k32, log32, "", 9, "'error_code' 9 is not a tuner error code", "1..8");
    EXPECT_BAD(k32, log32, "", -1, "'error_code' -1 is not a tuner error code");
    EXPECT_BAD(k32, log32, "", 2147483647, "'error_code' 2147483647");
}

static void test_latencies(void **state) {
    (void)state;
    EXPECT_GOOD(k32, log32, "1e-3,2e-3", 0);
    EXPECT_GOOD(k32, log32, "1e-9", 0); /* 65,536 GFLOP/s: under the bound */
    EXPECT_GOOD(k128, log128, "4.2e-9", 0); /* 998,644 GFLOP/s */
    EXPECT_GOOD(k32, log32, "3600", 0);
    /* 4.19 million GFLOP/s: the record that ranked best until a re-timing */
    EXPECT_BAD(k128, log128, "1e-3,1e-9,1e-3", 0, "latency 1 (1e-09 s) would run workload",
               k128, "(4194304 FLOP) at 4.19e+06 GFLOP/s", "above 1000000 GFLOP/s (1 PFLOP/s)");
    EXPECT_BAD(k32, log32, "1e-10", 0, "latency 0 (1e-10 s) must be a finite number of seconds",
               "[1e-09, 3600]");
    EXPECT_BAD(k32, log32, "0", 0, "latency 0 (0 s) must be a finite");
    EXPECT_BAD(k32, log32, "1e-3,-1e-3", 0, "latency 1 (-0.001 s) must be a finite");
    EXPECT_BAD(k32, log32, "3601", 0, "latency 0 (3601 s)");
    EXPECT_BAD(k32, log32, "1e999", 0, "latency 0 (inf s)");
    /* error records are held to the same bounds when they carry latencies */
    EXPECT_BAD(k32, log32, "1e-12", 5, "latency 0 (1e-12 s)");
    /* A workload the registry does not build is judged by its stored
     * FLOP count: unknown (0) here, so only the latency range applies. */
    EXPECT_GOOD("mine(n=3)", "[]", "1e-9", 0);
    EXPECT_BAD("mine(n=4)", "[]", "5e-10", 0, "latency 0 (5e-10 s)");
}

static void test_unroll_limits(void **state) {
    (void)state;
    static const struct {
        const char *key, *name;
        long long value;
        const char *want; /* NULL: imported */
    } cases[] = {
        {"k32", "auto_unroll_max_step", 0, NULL},
        {"k32", "auto_unroll_max_step", 4096, NULL},
        {"k32", "unroll_explicit", 1, NULL},
        {"k32", "auto_unroll_max_step", 2147483647,
         "step 0 (pragma): auto_unroll_max_step 2147483647 is out of range [0, 4096]"},
        {"k32", "auto_unroll_max_step", 4097, "auto_unroll_max_step 4097 is out of range"},
        /* also for workloads the registry cannot replay the log on */
        {"mine(n=5)", "unroll_explicit", 7, "step 0 (pragma): unroll_explicit 7 must be 0 or 1"},
        {"mine(n=6)", "unroll_everything", 1, "unknown pragma 'unroll_everything'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *key = strcmp(cases[i].key, "k32") ? cases[i].key : k32;
        char *s = pragma_log(cases[i].name, cases[i].value);
        if (cases[i].want)
            EXPECT_BAD(key, s, "1e-3", 0, cases[i].want);
        else
            EXPECT_GOOD(key, s, "1e-3", 0);
        free(s);
    }
}

/* 15 bad lines among good ones: the count, the first 10 by number in the
 * message, and all 15 in the error list. */
static void test_every_bad_line_counted(void **state) {
    (void)state;
    char *t = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&t, &n);
    for (int i = 0; i < 20; i++) {
        if (i % 4 == 0) line(f, k32, log32, "1e-3", 0); /* lines 1, 5, 9, ... are good */
        else line(f, k32, log32, "", 100 + i);
    }
    fclose(f);
    char msg[4096], *all = NULL;
    int nbad = -1;
    assert_int_equal(import_text(t, msg, sizeof msg, &all, &nbad), -1);
    assert_int_equal(nbad, 15);
    tu_assert_msg_has(msg, "import: 15 bad lines, nothing imported (the first 10 listed):",
                      "line 2: 'error_code' 101", "line 14: 'error_code' 113");
    assert_null(strstr(msg, "line 15:")); /* the 11th bad line */
    assert_null(strstr(msg, "line 1:"));
    assert_non_null(all);
    int count = 0;
    for (int i = 0; i < 20; i++) {
        char want[96];
        snprintf(want, sizeof want, "line %d: 'error_code' %d is not a tuner error code", i + 1,
                 100 + i);
        if (i % 4) {
            tu_assert_msg_has(all, want);
            count++;
        } else {
            assert_null(strstr(all, want));
        }
    }
    assert_int_equal(count, 15);
    assert_int_equal(tu_count_substr(all, "\n"), 15);
    free(all);

    /* a good file: no bad line, an empty list */
    free(t);
    f = open_memstream(&t, &n);
    line(f, k32, log32, "1e-3", 0);
    fclose(f);
    assert_int_equal(import_text(t, msg, sizeof msg, &all, &nbad), 0);
    assert_int_equal(nbad, 0);
    assert_string_equal(all, "");
    free(all);
    free(t);
}

/* PRAGMA user_version is the big-endian int at offset 60 of the file. */
static void set_user_version(const char *path, int v) {
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    unsigned u = (unsigned)v;
    unsigned char b[4] = {(unsigned char)(u >> 24), (unsigned char)(u >> 16),
                          (unsigned char)(u >> 8), (unsigned char)u};
    assert_int_equal(pwrite(fd, b, 4, 60), 4);
    close(fd);
}

static void test_negative_schema_version(void **state) {
    (void)state;
    char p[160];
    tdbt_path(p, sizeof p, dir, "neg.db");
    char *err = NULL;
    tdb_db *db = tdb_open(p, NULL, &err);
    assert_non_null(db);
    tdb_close(db);
    set_user_version(p, -3);
    for (int ro = 0; ro < 2; ro++) {
        db = tdb_open(p, &(tdb_open_options){.readonly = ro}, &err);
        assert_null(db);
        tu_assert_msg_has(err, "open: tuning db '", p,
                          "' has schema version -3: not a Loom database, or a corrupted one");
        free(err);
    }
}

/* ---- the command line ---- */

static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void test_cli(void **state) {
    (void)state;
    char jl[160], errs[160], out[16384];
    tdbt_path(jl, sizeof jl, dir, "cli.jsonl");
    tdbt_path(errs, sizeof errs, dir, "errs.txt");
    FILE *f = fopen(jl, "w");
    assert_non_null(f);
    line(f, k128, log128, "1e-9", 0);
    for (int i = 0; i < 11; i++) line(f, k32, log32, "", 50 + i);
    char *s = pragma_log("auto_unroll_max_step", 2147483647);
    line(f, k32, s, "1e-3", 0);
    free(s);
    line(f, k32, log32, "1e-3", 0);
    fclose(f);
    unlink(dbp);

    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s import %s", dbp, jl), 1);
    tu_assert_msg_has(out, "tunedb import: ", jl, "13 bad lines, nothing imported (the first 10",
                      "line 1: latency 0 (1e-09 s) would run workload", "line 10: 'error_code' 58",
                      "13 bad lines in all; --errors FILE lists every one");
    assert_null(strstr(out, "line 13:"));

    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s import --errors %s %s", dbp, errs, jl), 1);
    tu_assert_msg_has(out, "13 bad lines", "every bad line (13) is listed in", errs);
    char *all = slurp(errs);
    tu_assert_msg_has(all, "line 1: latency 0 (1e-09 s)", "line 12: 'error_code' 60",
                      "line 13: step 0 (pragma): auto_unroll_max_step 2147483647 is out of range");
    assert_null(strstr(all, "line 14:"));
    assert_int_equal(tu_count_substr(all, "\n"), 13);
    free(all);
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s stats", dbp), 0);
    tu_assert_msg_has(out, "records         0 (0 failed)");

    /* a good file leaves an empty list */
    f = fopen(jl, "w");
    line(f, k32, log32, "1e-3", 0);
    fclose(f);
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s import --errors %s %s", dbp, errs, jl), 0);
    tu_assert_msg_has(out, "imported 1 records");
    all = slurp(errs);
    assert_string_equal(all, "");
    free(all);
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s import --errors %s/no/dir/e.txt %s", dbp, dir,
                         jl),
                     1);
    tu_assert_msg_has(out, "cannot write", "no/dir/e.txt");
    assert_int_equal(tdbt_tunedb(out, sizeof out, "import --help"), 0);
    tu_assert_msg_has(out, "--errors ERRS", "line N: reason", "auto_unroll_max_step");

    set_user_version(dbp, -3);
    assert_int_equal(tdbt_tunedb(out, sizeof out, "--db %s stats", dbp), 1);
    tu_assert_msg_has(out, "has schema version -3: not a Loom database");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_codes),
        cmocka_unit_test(test_latencies),
        cmocka_unit_test(test_unroll_limits),
        cmocka_unit_test(test_every_bad_line_counted),
        cmocka_unit_test(test_negative_schema_version),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
