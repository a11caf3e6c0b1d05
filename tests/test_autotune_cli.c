/*
 * tests/test_autotune_cli.c — the `autotune` command: error paths with
 * their messages (nothing written), and a short run on a small matmul
 * whose best record `tunedb best` returns and that applies and runs
 * correctly (tdb_apply_best + ops_check_module); the closing line's best
 * and "95% of best at trial n" agree with the database (both by median);
 * plain progress lines when stdout is not a terminal; the --suite summary;
 * and Ctrl-C: the run stops, every measured trial is saved and the closing
 * line is printed.
 */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "loom/cost_model.h"
#include "loom/tuning_db.h"

#define KEY32 "matmul(M=32,N=32,K=32,transpose_a=0,transpose_b=0,dtype=float32)"

static char out[65536];

static int run(const char *tool, const char *args) {
    return tu_run(out, sizeof out, "%s/%s %s", tu_bindir(), tool, args);
}

static void test_errors(void **st) {
    (void)st;
    char db[256];
    snprintf(db, sizeof db, "/tmp/loom_at_err_%d.db", (int)getpid());
    unlink(db);
    char a[1024];
    snprintf(a, sizeof a, "--op nosuch --shape M=1 --trials 2 --db %s", db);
    assert_int_not_equal(run("autotune", a), 0);
    tu_assert_msg_has(out, "unknown op 'nosuch'", "matmul");
    snprintf(a, sizeof a, "--op matmul --shape M=0,N=4,K=4 --trials 2 --db %s", db);
    assert_int_not_equal(run("autotune", a), 0);
    tu_assert_msg_has(out, "bad shape", "'M'", "positive");
    snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials 0 --db %s", db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "option --trials: '0' is not an integer from 1 to");
    if (!rt_cuda_available()) { /* where a GPU exists, --target cuda tunes */
        snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials 2 --db %s --target cuda",
                 db);
        assert_int_not_equal(run("autotune", a), 0);
        tu_assert_msg_has(out, "cuda", "no CUDA device");
    }
    /* Refused before any device is looked for. */
    snprintf(a, sizeof a,
             "--op matmul --shape M=4,N=4,K=4 --trials 2 --db %s --target cuda --cache-flush", db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "--cache-flush", "CPU's caches", "target 'cuda'");
    snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials 2 --db %s --target tpu", db);
    assert_int_not_equal(run("autotune", a), 0);
    tu_assert_msg_has(out, "unknown target 'tpu'");
    /* An unknown CPU was accepted and its records filed under that key
     * (issue 30, item 3). */
    snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials 2 --db %s --target "
             "\"llvm -mcpu=bogus\"", db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "unknown CPU 'bogus'", "this host's CPU is");
    snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials 2 --db %s --target "
             "\"llvm -mattr=+nosuchfeature\"", db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "unknown feature '+nosuchfeature'");
    assert_int_not_equal(run("autotune", "--op matmul --shape M=4,N=4,K=4 --trials 2 --db /nonexistent/d/x.db"), 0);
    tu_assert_msg_has(out, "cannot open the database", "/nonexistent/d/x.db");
    assert_int_not_equal(run("autotune", "--op matmul --shape M=4,N=4,K=4 --trials x --db a.db"), 0);
    tu_assert_msg_has(out, "--trials", "not an integer");
    /* Values past an int were cast (issue 30, item 4): 4294967299 trials
     * ran 3, a population of 4294967296 became 0 and passed the check. */
    static const struct { const char *opt, *val, *range; } bad[] = {
        {"--trials", "4294967299", "from 1 to 10000000"},
        {"--trials", "2147483648", "from 1 to 10000000"},
        {"--trials", "99999999999999999999", "from 1 to 10000000"},
        {"--trials", "-1", "from 1 to 10000000"},
        {"--trials", "1e3", "from 1 to 10000000"},
        {"--population", "4294967296", "from 1 to 1000000"},
        {"--population", "0", "from 1 to 1000000"},
        {"--per-round", "4294967360", "from 1 to 4096"},
        {"--threads", "-2", "from 0 to 1024"},
        {"--jobs", "4294967297", "from 0 to 64"},
        {"--retime", "65", "from 0 to 64"},
        {"--seed", "-5", "from 0 to"},
        {"--timeout", "inf", "> 0 and <= 3600"},
        {"--timeout", "0", "> 0 and <= 3600"},
        {"--timeout", "nan", "> 0 and <= 3600"},
        {"--progress-interval", "-1", ">= 0 and <= 86400"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials 2 --db %s %s %s", db,
                 strcmp(bad[i].opt, "--trials") ? bad[i].opt : "--seed",
                 strcmp(bad[i].opt, "--trials") ? bad[i].val : "1");
        if (!strcmp(bad[i].opt, "--trials"))
            snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials %s --db %s",
                     bad[i].val, db);
        assert_int_equal(run("autotune", a), 2);
        char want[128];
        snprintf(want, sizeof want, "option %s: '%s' is not", bad[i].opt, bad[i].val);
        tu_assert_msg_has(out, want, bad[i].range);
    }
    /* Conflicting options (item 5): a repeated option is not an override,
     * --suite does not silently drop --op/--shape. */
    snprintf(a, sizeof a, "--op matmul --op conv2d --shape M=4,N=4,K=4 --trials 2 --db %s", db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "option --op is given more than once");
    snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials 2 --trials 3 --db %s", db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "option --trials is given more than once");
    snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials 2 --db %s --resume --resume", db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "option --resume is given more than once");
    snprintf(a, sizeof a, "--suite s.tsv --op matmul --trials 2 --db %s", db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "--suite FILE", "--op does not apply with it");
    snprintf(a, sizeof a, "--suite s.tsv --shape M=4 --trials 2 --db %s", db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "--suite FILE", "--shape does not apply with it");
    snprintf(a, sizeof a, "--shape M=4 --trials 2 --db %s", db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "--shape needs --op");
    snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials 2 --db %s stray", db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "unexpected argument 'stray'");
    assert_int_equal(run("autotune", "--op matmul --trials 2 --bogus"), 2);
    tu_assert_msg_has(out, "unknown option '--bogus'");
    /* Shapes whose buffers cannot fit are refused before anything is
     * built (item 2): every trial failed "out of memory" before. */
    snprintf(a, sizeof a, "--op matmul --shape M=1000000,N=1000000,K=1000000 --trials 2 --db %s",
             db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "matmul(M=1000000,N=1000000,K=1000000", "needs 20000.0 GB of buffers",
                      "this machine has");
    snprintf(a, sizeof a, "--op matmul --shape M=2147483648,N=2147483648,K=2 --trials 2 --db %s",
             db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "needs", "GB of buffers");
    assert_int_not_equal(run("autotune", "--op matmul --trials 2"), 0);
    tu_assert_msg_has(out, "--db FILE is required");
    snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials 2 --db %s --no-model "
             "--random-model", db);
    assert_int_not_equal(run("autotune", a), 0);
    tu_assert_msg_has(out, "--no-model and --random-model exclude each other");
    snprintf(a, sizeof a, "--eval-model --db %s --random-model", db);
    assert_int_not_equal(run("autotune", a), 0);
    tu_assert_msg_has(out, "--eval-model", "--random-model does not apply");
    snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials 2 --db %s --no-model "
             "--cost-loss squared", db);
    assert_int_not_equal(run("autotune", a), 0);
    tu_assert_msg_has(out, "--cost-loss", "with --no-model no model is trained");
    snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials 2 --db %s --timeout abc", db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "option --timeout: 'abc' is not a number of seconds > 0 and <= 3600");
    snprintf(a, sizeof a, "--eval-model --db %s --target c", db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "target 'c' has no tuning records (known: llvm, cuda)");
    /* Nothing half-written. */
    assert_int_not_equal(access(db, F_OK), 0);
}

/* A database keeps one kind of timing per target: a --cache-flush run on
 * warm records (and the reverse) is refused before it measures anything,
 * exit 2, naming both kinds; a cold run's records are stored as cold. */
static void test_cache_flush_timing(void **st) {
    (void)st;
    char warm[256], cold[256], a[1024];
    snprintf(warm, sizeof warm, "/tmp/loom_at_warm_%d.db", (int)getpid());
    snprintf(cold, sizeof cold, "/tmp/loom_at_cold_%d.db", (int)getpid());
    unlink(warm), unlink(cold);
    const char *op = "--op matmul --shape M=8,N=8,K=8 --jobs 1 --threads 1";
    snprintf(a, sizeof a, "%s --trials 2 --db %s", op, warm);
    assert_int_equal(run("autotune", a), 0);
    snprintf(a, sizeof a, "%s --trials 4 --db %s --cache-flush", op, warm);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "were timed warm", "this run times cold", "another file");
    snprintf(a, sizeof a, "%s --trials 2 --db %s --cache-flush", op, cold);
    assert_int_equal(run("autotune", a), 0);
    snprintf(a, sizeof a, "%s --trials 4 --db %s", op, cold);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "were timed cold", "this run times warm");
    const char *paths[] = {warm, cold};
    for (int i = 0; i < 2; i++) {
        char *err = NULL;
        tdb_db *db = tdb_open(paths[i], NULL, &err);
        assert_non_null(db);
        tdb_stats s;
        assert_int_equal(tdb_get_stats(db, &s), 0);
        assert_int_equal(s.records, 2); /* the refused runs measured nothing */
        char *target = tdb_host_target();
        assert_int_equal(tdb_target_timing(db, target), i ? TDB_TIMING_COLD : TDB_TIMING_WARM);
        free(target);
        tdb_close(db);
        unlink(paths[i]);
    }
}

static void test_short_run(void **st) {
    (void)st;
    char db[256], a[1024];
    snprintf(db, sizeof db, "/tmp/loom_at_run_%d.db", (int)getpid());
    unlink(db);
    snprintf(a, sizeof a,
             "--op matmul --shape M=32,N=32,K=32 --trials 16 --db %s --per-round 8 "
             "--population 64 --jobs 2 --threads 1 --seed 3 --retime 0",
             db);
    int rc = run("autotune", a);
    print_message("%s", out);
    assert_int_equal(rc, 0);
    tu_assert_msg_has(out, "trials 16/16", "best: ", "GFLOP/s", "ms, trial ", "of 16",
                      "95% of best at trial ");
    int best_trial = 0, reach = 0;
    const char *line = strstr(out, "best: ");
    assert_non_null(line);
    assert_int_equal(sscanf(strstr(line, "trial "), "trial %d of 16", &best_trial), 1);
    assert_int_equal(sscanf(strstr(line, "best at trial "), "best at trial %d", &reach), 1);
    assert_true(reach >= 1 && reach <= best_trial);
    /* Where the time went: no phase more than the run. */
    double ph[4], wall = 0;
    const char *tl = strstr(out, "time: search ");
    assert_non_null(tl);
    assert_int_equal(sscanf(tl, "time: search %lf s, build %lf s, run %lf s, model %lf s", &ph[0],
                            &ph[1], &ph[2], &ph[3]),
                     4);
    assert_int_equal(sscanf(strstr(line, "of 16, "), "of 16, %lf s", &wall), 1);
    for (int i = 0; i < 4; i++) assert_true(ph[i] >= 0 && ph[i] <= wall + 0.05);
    /* The search of 16 tiny programs may print 0.0 s (tenths); the
     * builds and runs cannot. */
    assert_true(ph[1] > 0 && ph[2] > 0);
    snprintf(a, sizeof a, "--db %s best --op matmul --shape M=32,N=32,K=32 --threads 1", db);
    assert_int_equal(run("tunedb", a), 0);
    tu_assert_msg_has(out, "matmul(M=32,N=32,K=32", "\"median\"");
    /* tunedb history ends with the same figure. */
    char reach_line[64];
    snprintf(reach_line, sizeof reach_line, "95%% of best at trial %d of 16", reach);
    snprintf(a, sizeof a, "--db %s history --op matmul --shape M=32,N=32,K=32 --threads 1",
             db);
    assert_int_equal(run("tunedb", a), 0);
    tu_assert_msg_has(out, reach_line);
    /* The best record applies and computes the right answer. */
    tdb_db *d = tdb_open(db, NULL, NULL);
    assert_non_null(d);
    char *target = tdb_host_target();
    te_ctx *ctx = te_ctx_new();
    tdb_apply_info info;
    rt_module *m = tdb_apply_best(d, ctx, "matmul(M=32,N=32,K=32,transpose_a=0,transpose_b=0,dtype=float32)",
                                  target, &info);
    assert_non_null(m);
    assert_false(info.fallback);
    assert_int_equal(ops_check_module(info.workload, m, NULL, tu_seed()), 0);
    tdb_history_point *h = NULL;
    assert_int_equal(tdb_history(d, KEY32, target, &h), 16);
    int64_t h1_id = h[0].record_id; /* trial 1: the default schedule */
    /* The tuner's best trial is the database's best record (lowest
     * median), and its 95% trial is the history's. */
    tdb_record *best = NULL;
    assert_int_equal(tdb_best(d, KEY32, target, 1, &best), 1);
    assert_true(h[best_trial - 1].record_id == best[0].id);
    assert_true(info.record_id == best[0].id);
    assert_int_equal(tdb_history_reach(h, 16, 0.95), reach);
    tdb_records_free(best, 1);
    free(h);
    rt_module_free(m);
    te_ctx_free(ctx);
    free(target);
    tdb_close(d);
    /* --resume: the trials already there count; with --progress-interval 0
     * a plain line follows every record. */
    snprintf(a, sizeof a,
             "--op matmul --shape M=32,N=32,K=32 --trials 20 --db %s --per-round 4 "
             "--population 32 --jobs 2 --threads 1 --resume --no-model --skip-default "
             "--progress-interval 0",
             db);
    assert_int_equal(run("autotune", a), 0);
    print_message("%s", out);
    tu_assert_msg_has(out, "resume: 16 trials", "trials 17/20  best ", "trials 18/20  best ",
                      "trials 19/20", "trials 20/20", " of 20, ", "95% of best at trial ");
    /* Then the 8 best distinct programs and the default schedule (trial
     * 1) were timed again side by side, and the database ranks by that. */
    tu_assert_msg_has(out, "re-timed the ", " best programs side by side (5 rounds, ", "best #",
                      "ms, ", "GFLOP/s (first timed ");
    int nre = 0;
    long long best_id = 0;
    double ms = 0;
    const char *rl = strstr(out, "re-timed the ");
    assert_int_equal(sscanf(rl, "re-timed the %d best", &nre), 1);
    assert_true(nre >= 2 && nre <= 9);
    assert_int_equal(sscanf(strstr(rl, "best #"), "best #%lld, %lf ms", &best_id, &ms), 2);
    d = tdb_open(db, NULL, NULL);
    assert_non_null(d);
    target = tdb_host_target();
    tdb_record *top = NULL;
    int ntop = tdb_best(d, KEY32, target, 64, &top);
    assert_true(ntop >= nre);
    assert_int_equal(top[0].id, best_id);
    assert_true(fabs(top[0].retimed_latency * 1e3 - ms) <= 5e-5 + 1e-3 * ms);
    int nretimed = 0;
    bool default_retimed = false;
    for (int i = 0; i < ntop; i++) {
        if (!isnan(top[i].retimed_latency)) nretimed++;
        if (top[i].id == h1_id) default_retimed = !isnan(top[i].retimed_latency);
        /* re-timed records lead, in order of their re-timing */
        if (i > 0 && !isnan(top[i].retimed_latency)) {
            assert_false(isnan(top[i - 1].retimed_latency));
            assert_true(top[i - 1].retimed_latency <= top[i].retimed_latency);
        }
    }
    assert_int_equal(nretimed, nre);
    assert_true(default_retimed);
    /* A program found after that re-timing, faster at its first timing
     * than everything (planted: a copy of a record never re-timed, with a
     * tiny latency), is re-timed by the next run beside the database's
     * best, though re-timed records lead tdb_best: otherwise it could
     * never rank above them. */
    int plain = -1;
    for (int i = 0; i < ntop && plain < 0; i++)
        if (isnan(top[i].retimed_latency)) plain = i;
    assert_true(plain >= 0);
    double tiny = 1e-9;
    tdb_record_in planted = {.workload_key = KEY32,
                             .target = target,
                             .steps_json = top[plain].steps_json,
                             .nlatencies = 1,
                             .latencies = &tiny};
    int64_t planted_id = tdb_commit_record(d, &planted);
    assert_true(planted_id > 0);
    tdb_records_free(top, ntop);
    tdb_close(d);
    snprintf(a, sizeof a,
             "--op matmul --shape M=32,N=32,K=32 --trials 22 --db %s --per-round 1 "
             "--population 32 --jobs 1 --threads 1 --resume --no-model --retime 2",
             db);
    assert_int_equal(run("autotune", a), 0);
    print_message("%s", out);
    tu_assert_msg_has(out, "re-timed the ");
    d = tdb_open(db, NULL, NULL);
    assert_non_null(d);
    ntop = tdb_best(d, KEY32, target, 64, &top);
    bool planted_retimed = false;
    for (int i = 0; i < ntop; i++)
        if (top[i].id == planted_id) planted_retimed = !isnan(top[i].retimed_latency);
    assert_true(planted_retimed);
    tdb_records_free(top, ntop);
    free(target);
    tdb_close(d);
    /* --retime takes a count. */
    snprintf(a, sizeof a, "--op matmul --shape M=32,N=32,K=32 --trials 21 --db %s --retime 65", db);
    assert_int_not_equal(run("autotune", a), 0);
    tu_assert_msg_has(out, "option --retime", "from 0 to 64");
    unlink(db);
}

/* A suite of two tasks: the summary has a line per task with its 95%
 * trial, and the trials add up. */
/* A convolution (constant weights: the runner pre-computes their packed
 * copy) tuned with the baseline pacing its measurements: every trial is
 * recorded, and the best applies and computes the right answer. */
static void test_baseline_conv(void **st) {
    (void)st;
    char db[256], a[1024];
    snprintf(db, sizeof db, "/tmp/loom_at_base_%d.db", (int)getpid());
    unlink(db);
    snprintf(a, sizeof a,
             "--op conv2d --shape N=1,C=8,H=8,W=8,K=16,R=3,S=3,pad=1 --trials 6 --db %s "
             "--per-round 3 --population 32 --jobs 1 --threads 1 --seed 2 --retime 0 --baseline",
             db);
    int rc = run("autotune", a);
    print_message("%s", out);
    assert_int_equal(rc, 0);
    tu_assert_msg_has(out, "trials 6/6", "best: ");
    tdb_db *d = tdb_open(db, NULL, NULL);
    assert_non_null(d);
    char *target = tdb_host_target();
    te_ctx *ctx = te_ctx_new();
    const char *key = ops_canonical_key(ctx, "conv2d", "N=1,C=8,H=8,W=8,K=16,R=3,S=3,pad=1");
    assert_non_null(key);
    tdb_history_point *h = NULL;
    assert_int_equal(tdb_history(d, key, target, &h), 6);
    free(h);
    tdb_apply_info info;
    rt_module *m = tdb_apply_best(d, ctx, key, target, &info);
    assert_non_null(m);
    assert_false(info.fallback);
    assert_int_equal(ops_check_module(info.workload, m, NULL, tu_seed()), 0);
    rt_module_free(m);
    te_ctx_free(ctx);
    free(target);
    tdb_close(d);
    unlink(db);
}

static void test_suite_summary(void **st) {
    (void)st;
    char db[256], tsv[256], a[1024];
    snprintf(db, sizeof db, "/tmp/loom_at_suite_%d.db", (int)getpid());
    snprintf(tsv, sizeof tsv, "/tmp/loom_at_suite_%d.tsv", (int)getpid());
    unlink(db);
    FILE *f = fopen(tsv, "w");
    assert_non_null(f);
    fprintf(f, "# name\top\tparams\nmm16\tmatmul\tM=16,N=16,K=16\nmm24\tmatmul\tM=24,N=24,K=16\n");
    fclose(f);
    snprintf(a, sizeof a,
             "--suite %s --trials 12 --db %s --per-round 4 --population 32 --jobs 2 "
             "--threads 1 --no-model",
             tsv, db);
    int rc = run("autotune", a);
    print_message("%s", out);
    assert_int_equal(rc, 0);
    /* each task's best re-timed side by side, the line named by task */
    tu_assert_msg_has(out, "mm16: re-timed the ", "mm24: re-timed the ");
    tu_assert_msg_has(out, "task mm16: 4 trials", "task mm24: 4 trials", "mm16: best ",
                      "mm24: best ", "95% of best at trial ", "12 trials, ");
    unlink(db);
    unlink(tsv);
}

/* A database holding only a damaged cost model of the host target: a
 * run with the model says it did not use it ("cost model: ..."). */
static void db_with_bad_model(const char *path) {
    unlink(path);
    tdb_db *d = tdb_open(path, NULL, NULL);
    assert_non_null(d);
    char *target = tdb_host_target();
    assert_int_equal(tdb_put_cost_model(d, target, CM_BLOB_FORMAT, "damaged", 7), 0);
    free(target);
    tdb_close(d);
}

/* The steps of the first `first` records of KEY32 in db, in trial order,
 * joined; checks that db's stored cost model is still db_with_bad_model's. */
static char *db_steps(const char *db, int first) {
    tdb_db *d = tdb_open(db, &(tdb_open_options){.readonly = true}, NULL);
    assert_non_null(d);
    char *target = tdb_host_target();
    tdb_history_point *h = NULL;
    int n = tdb_history(d, KEY32, target, &h);
    assert_true(n >= first);
    n = first;
    size_t len = 1, used = 0;
    char *all = malloc(len);
    for (int i = 0; i < n; i++) {
        tdb_record r;
        assert_int_equal(tdb_get_record(d, h[i].record_id, &r), 1);
        size_t k = strlen(r.steps_json);
        all = realloc(all, len += k + 1);
        memcpy(all + used, r.steps_json, k);
        used += k;
        all[used++] = '\n';
        tdb_record_clear(&r);
    }
    all[used] = 0;
    free(h);
    void *blob = NULL;
    size_t blen = 0;
    char *fmt = NULL;
    /* the stored (damaged) model is still there: nothing was saved over it */
    assert_int_equal(tdb_get_cost_model(d, target, &blob, &blen, &fmt), 1);
    assert_int_equal(blen, 7);
    assert_memory_equal(blob, "damaged", 7);
    free(blob), free(fmt);
    free(target);
    tdb_close(d);
    return all;
}

/* --random-model: the evolutionary search ranked at random, with no warm
 * start (the stored model is not even looked at) and no model saved; the
 * same seed gives the same first round (the later rounds start from the
 * fastest measured programs, which depend on the timings). */
static void test_random_model(void **st) {
    (void)st;
    char db[2][256], a[1024];
    char *steps[2];
    const char *common = "--op matmul --shape M=32,N=32,K=32 --trials 12 --per-round 6 "
                         "--population 32 --jobs 2 --threads 1 --skip-default --retime 0 "
                         "--seed 5";
    for (int k = 0; k < 2; k++) {
        snprintf(db[k], sizeof db[k], "/tmp/loom_at_rnd%d_%d.db", k, (int)getpid());
        db_with_bad_model(db[k]);
        snprintf(a, sizeof a, "%s --random-model --db %s", common, db[k]);
        int rc = run("autotune", a);
        print_message("%s", out);
        assert_int_equal(rc, 0);
        tu_assert_msg_has(out, "best: ", "trial ");
        assert_null(strstr(out, "cost model:"));
        steps[k] = db_steps(db[k], 6);
        unlink(db[k]);
    }
    assert_string_equal(steps[0], steps[1]);
    free(steps[0]), free(steps[1]);
    /* the same run with the model does look at the stored one */
    db_with_bad_model(db[0]);
    snprintf(a, sizeof a, "%s --db %s", common, db[0]);
    assert_int_equal(run("autotune", a), 0);
    tu_assert_msg_has(out, "cost model:", "was not used");
    unlink(db[0]);
}

static int db_trials(const char *db) {
    tdb_db *d = tdb_open(db, &(tdb_open_options){.readonly = true}, NULL);
    if (!d) return 0;
    char *target = tdb_host_target();
    tdb_history_point *h = NULL;
    int n = tdb_history(d, KEY32, target, &h);
    free(h);
    free(target);
    tdb_close(d);
    return n > 0 ? n : 0;
}

/* LOOM_NUM_THREADS in the environment (the README documents it), with
 * and without --threads (issue 30, item 1): the runners' environment
 * freed the inherited entry too, and the run ended in heap corruption
 * before its closing line and re-timing. */
static void test_num_threads_env(void **st) {
    (void)st;
    char db[256], a[1024];
    snprintf(db, sizeof db, "/tmp/loom_at_env_%d.db", (int)getpid());
    static const char *const extra[] = {"", "--threads 1"};
    for (int i = 0; i < 2; i++) {
        unlink(db);
        assert_int_equal(setenv("LOOM_NUM_THREADS", "1", 1), 0);
        snprintf(a, sizeof a,
                 "--op matmul --shape M=16,N=16,K=16 --trials 4 --db %s --per-round 4 "
                 "--population 32 --jobs 1 --seed 3 --retime 2 %s",
                 db, extra[i]);
        int rc = run("autotune", a);
        unsetenv("LOOM_NUM_THREADS");
        print_message("%s", out);
        assert_int_equal(rc, 0);
        tu_assert_msg_has(out, "best: ", "re-timed the ", "time: search ");
    }
    unlink(db);
}

/* Ctrl-C, as a terminal sends it (to the whole process group): the run
 * stops after the candidates being measured, exits 130 (a script can tell
 * it from a finished run: issue 30, item 7) with the closing
 * line, and every trial it says it measured is in the database. */
static void test_ctrl_c(void **st) {
    (void)st;
    char db[256], log[256], bin[4200];
    snprintf(db, sizeof db, "/tmp/loom_at_int_%d.db", (int)getpid());
    snprintf(log, sizeof log, "/tmp/loom_at_int_%d.out", (int)getpid());
    snprintf(bin, sizeof bin, "%s/autotune", tu_bindir());
    unlink(db);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        FILE *o = freopen(log, "w", stdout);
        if (!o || dup2(1, 2) < 0) _exit(127); /* one file offset for both */
        execl(bin, bin, "--op", "matmul", "--shape", "M=32,N=32,K=32", "--trials", "100000",
              "--db", db, "--per-round", "8", "--population", "32", "--jobs", "2", "--threads",
              "1", "--no-model", (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    /* Wait until some trials are committed (at most 60 s). */
    int status = 0;
    bool exited = false;
    for (int i = 0; i < 600 && db_trials(db) < 3; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            exited = true;
            break;
        }
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    assert_false(exited);
    assert_int_equal(kill(-pid, SIGINT), 0);
    for (int i = 0; i < 600 && !exited; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid) exited = true;
        else nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    if (!exited) {
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    assert_true(exited);
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    fclose(f);
    print_message("%s", out);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 130);
    tu_assert_msg_has(out, "stopping after the candidates being measured",
                      "interrupted: ", "trials measured and saved", "best: ", "95% of best at trial ");
    int saved = -1;
    assert_int_equal(sscanf(strstr(out, "interrupted: "), "interrupted: %d", &saved), 1);
    assert_true(saved >= 3 && saved < 100000);
    assert_int_equal(db_trials(db), saved);
    char of[64];
    snprintf(of, sizeof of, " of %d, ", saved);
    tu_assert_msg_has(out, of);
    unlink(db);
    unlink(log);
}

/* --plugin: a shared library of the user's operators (tests/plugin_example.c,
 * user.sqnorm_rows) tuned by autotune (its runners load it too), found and
 * applied by tunedb --plugin; the errors name the file. */
static void test_plugin(void **st) {
    (void)st;
    char db[256], a[3000], lib[1000], bad[1000];
    snprintf(db, sizeof db, "/tmp/loom_at_plugin_%d.db", (int)getpid());
    snprintf(lib, sizeof lib, "%.900s/libloom_plugin_example.so", tu_bindir());
    unlink(db);
    const char *op = "--op user.sqnorm_rows --shape M=8,N=64";
    /* errors, each before anything is written */
    snprintf(a, sizeof a, "--plugin /nonexistent/libx.so %s --trials 2 --db %s", op, db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "plugin '/nonexistent/libx.so'", "No such file");
    snprintf(bad, sizeof bad, "%.900s/libloom_plugin_noentry.so", tu_bindir());
    snprintf(a, sizeof a, "--plugin %s %s --trials 2 --db %s", bad, op, db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, bad, "has no entry point loom_register_ops");
    snprintf(bad, sizeof bad, "%.900s/libloom_plugin_fails.so", tu_bindir());
    snprintf(a, sizeof a, "--plugin %s %s --trials 2 --db %s", bad, op, db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, bad, "loom_register_ops() returned 3");
    snprintf(a, sizeof a, "%s --trials 2 --db %s", op, db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "unknown op 'user.sqnorm_rows'", "--plugin");
    snprintf(a, sizeof a, "--plugin %s --op user.sqnorm_rows --shape M=8 --trials 2 --db %s", lib,
             db);
    assert_int_equal(run("autotune", a), 2);
    tu_assert_msg_has(out, "bad shape 'M=8' for user.sqnorm_rows", "M=<rows>,N=<columns>");
    snprintf(a, sizeof a, "--db %s --plugin /nonexistent/libx.so list", db);
    assert_int_equal(run("tunedb", a), 2);
    tu_assert_msg_has(out, "tunedb: plugin '/nonexistent/libx.so'", "No such file");
    assert_int_not_equal(access(db, F_OK), 0);

    /* tuned: every trial in the database under the key "OP(SHAPE)" */
    snprintf(a, sizeof a,
             "--plugin %s %s --trials 4 --db %s --per-round 2 --population 16 --jobs 2 "
             "--threads 1 --retime 0",
             lib, op, db);
    int rc = run("autotune", a);
    print_message("%s", out);
    assert_int_equal(rc, 0);
    tu_assert_msg_has(out, "trials 4/4", "best: ", "of 4, ");
    snprintf(a, sizeof a, "--db %s --plugin %s best %s --threads 1", db, lib, op);
    assert_int_equal(run("tunedb", a), 0);
    tu_assert_msg_has(out, "user.sqnorm_rows(M=8,N=64)", "\"median\"");
    /* applied and checked against its plain schedule */
    snprintf(a, sizeof a, "--db %s --plugin %s apply %s --threads 1", db, lib, op);
    assert_int_equal(run("tunedb", a), 0);
    tu_assert_msg_has(out, "applied record", "user.sqnorm_rows(M=8,N=64)",
                      "checked against the plain schedule: correct");
    /* without the plugin, apply says what is missing */
    snprintf(a, sizeof a, "--db %s apply --workload 'user.sqnorm_rows(M=8,N=64)'", db);
    assert_int_equal(run("tunedb", a), 1);
    tu_assert_msg_has(out, "workload 'user.sqnorm_rows(M=8,N=64)' has no builder",
                      "tune_register_builder", "--plugin", "before applying");
    unlink(db);
}

/* --list-sketches: the search space without a GPU; on cuda a 16-bit
 * matmul's first sketch is the tensor-core one (on sm_90 with wgmma too),
 * a float32 one has none. */
static void test_list_sketches(void **st) {
    (void)st;
    assert_int_equal(run("autotune", "--list-sketches --op matmul --shape "
                                      "M=256,N=256,K=256,dtype=float16 --target \"cuda -arch=sm_90\""),
                     0);
    /* sm_90: either engine (Hopper's warpgroup MMA too); sm_80: WMMA only */
    tu_assert_msg_has(out, "2 sketches", "0: C_acc: tensor cores (wmma or wgmma)",
                      "1: A: cache_read shared");
    assert_int_equal(run("autotune", "--list-sketches --op matmul --shape "
                                      "M=256,N=256,K=256,dtype=float16 --target \"cuda -arch=sm_80\""),
                     0);
    tu_assert_msg_has(out, "2 sketches", "0: C_acc: tensor cores (wmma), shared");
    assert_null(strstr(out, "wgmma"));
    assert_int_equal(run("autotune", "--list-sketches --op matmul --shape M=256,N=256,K=256 "
                                      "--target cuda"),
                     0);
    assert_null(strstr(out, "tensor cores"));
    assert_int_equal(run("autotune", "--list-sketches --op matmul --shape M=256,N=256,K=256,tf32=1 "
                                      "--target cuda"),
                     0);
    tu_assert_msg_has(out, "0: C: tensor cores (wmma)");
    assert_int_equal(run("autotune", "--list-sketches --shape M=4"), 2);
    tu_assert_msg_has(out, "--shape needs --op");
    assert_int_equal(run("autotune", "--list-sketches --target cuda"), 2);
    tu_assert_msg_has(out, "--list-sketches needs --op OP");
    assert_int_equal(run("autotune", "--list-sketches --op nosuch --shape M=4"), 2);
    tu_assert_msg_has(out, "unknown op 'nosuch'");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_cache_flush_timing),
        cmocka_unit_test(test_short_run),
        cmocka_unit_test(test_baseline_conv),
        cmocka_unit_test(test_suite_summary),
        cmocka_unit_test(test_random_model),
        cmocka_unit_test(test_num_threads_env),
        cmocka_unit_test(test_ctrl_c),
        cmocka_unit_test(test_plugin),
        cmocka_unit_test(test_list_sketches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
