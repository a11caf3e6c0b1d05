/*
 * tests/test_autotune_cli.c — the `autotune` command: error paths with
 * their messages (nothing written), and a short run on a small matmul
 * whose best record `tunedb best` returns and that applies and runs
 * correctly (tdb_apply_best + ops_check_module).
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "loom/tuning_db.h"

static char bindir[4096];
static char out[65536];

static int run(const char *tool, const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s/%s %s 2>&1", bindir, tool, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
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
    assert_int_not_equal(run("autotune", a), 0);
    tu_assert_msg_has(out, "--trials must be positive");
    snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials 2 --db %s --target cuda", db);
    assert_int_not_equal(run("autotune", a), 0);
    tu_assert_msg_has(out, "cuda", "no CUDA device");
    snprintf(a, sizeof a, "--op matmul --shape M=4,N=4,K=4 --trials 2 --db %s --target tpu", db);
    assert_int_not_equal(run("autotune", a), 0);
    tu_assert_msg_has(out, "unknown target 'tpu'");
    assert_int_not_equal(run("autotune", "--op matmul --shape M=4,N=4,K=4 --trials 2 --db /nonexistent/d/x.db"), 0);
    tu_assert_msg_has(out, "cannot open the database", "/nonexistent/d/x.db");
    assert_int_not_equal(run("autotune", "--op matmul --shape M=4,N=4,K=4 --trials x --db a.db"), 0);
    tu_assert_msg_has(out, "--trials", "not an integer");
    assert_int_not_equal(run("autotune", "--op matmul --trials 2"), 0);
    tu_assert_msg_has(out, "--db FILE is required");
    /* Nothing half-written. */
    assert_int_not_equal(access(db, F_OK), 0);
}

static void test_short_run(void **st) {
    (void)st;
    char db[256], a[1024];
    snprintf(db, sizeof db, "/tmp/loom_at_run_%d.db", (int)getpid());
    unlink(db);
    snprintf(a, sizeof a,
             "--op matmul --shape M=32,N=32,K=32 --trials 16 --db %s --per-round 8 "
             "--population 64 --jobs 2 --threads 1 --seed 3",
             db);
    int rc = run("autotune", a);
    print_message("%s", out);
    assert_int_equal(rc, 0);
    tu_assert_msg_has(out, "trials 16/16", "best: ", "GFLOP/s", "ms, trial ", "of 16");
    snprintf(a, sizeof a, "--db %s best --op matmul --shape M=32,N=32,K=32", db);
    assert_int_equal(run("tunedb", a), 0);
    tu_assert_msg_has(out, "matmul(M=32,N=32,K=32");
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
    assert_int_equal(tdb_history(d, "matmul(M=32,N=32,K=32,transpose_a=0,transpose_b=0,dtype=float32)",
                                 target, &h), 16);
    free(h);
    rt_module_free(m);
    te_ctx_free(ctx);
    free(target);
    tdb_close(d);
    /* --resume: the trials already there count. */
    snprintf(a, sizeof a,
             "--op matmul --shape M=32,N=32,K=32 --trials 20 --db %s --per-round 4 "
             "--population 32 --jobs 2 --threads 1 --resume --no-model",
             db);
    assert_int_equal(run("autotune", a), 0);
    tu_assert_msg_has(out, "resume: 16 trials", "trials 20/20");
    unlink(db);
}

int main(void) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 1;
    self[n] = 0;
    snprintf(bindir, sizeof bindir, "%s", dirname(self));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_short_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
