/*
 * tests/test_autotune_backend.c — tune_measure_options.backend, the seam
 * that `mpirun autotune` measures through (issue 33), without MPI: a
 * measurer made with a backend opens one session and hands it every
 * candidate, tune_task hands batches of the backend's size and takes the
 * results in proposal order, its times come from the session, and a
 * backend that can no longer measure stops the run with its own message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "loom/autotune.h"

typedef struct {
    int opens, closes, calls, candidates, maxn;
    int fail_after; /* measure calls before it fails (0: never) */
    char key[256];
} fake;

static void *f_open(void *user, const char *key, const char *target,
                    const tune_measure_options *o, char **err) {
    fake *f = user;
    assert_non_null(o->backend);
    assert_string_equal(target, "llvm");
    snprintf(f->key, sizeof f->key, "%s", key);
    f->opens++;
    return f;
}

static int f_measure(void *s, int n, const char *const *steps, const int *hooks, double best,
                     tune_result *res) {
    fake *f = s;
    if (f->fail_after && f->calls >= f->fail_after) return -1;
    f->calls++;
    if (n > f->maxn) f->maxn = n;
    for (int i = 0; i < n; i++) {
        assert_ptr_equal(res[i].steps_json, steps[i]);
        /* Latencies by arrival order would scramble nothing: the tuner
         * takes them by index. */
        res[i].nlatencies = 1;
        res[i].latencies[0] = res[i].median = res[i].mean = 1e-3 * (f->candidates + 1);
        f->candidates++;
    }
    return 0;
}

static void f_times(void *s, double *b, double *r) {
    fake *f = s;
    if (b) *b = f->candidates * 2.0;
    if (r) *r = f->candidates * 3.0;
}

static const char *f_errmsg(void *s) {
    (void)s;
    return "autotune: the fake backend is gone";
}

static void f_close(void *s) { ((fake *)s)->closes++; }

static void run(fake *f, int batch, int trials, tune_summary *sum, char **err, int *rc) {
    tune_measure_backend be = {.user = f, .batch = batch, .open = f_open, .measure = f_measure,
                               .times = f_times, .errmsg = f_errmsg, .close = f_close};
    tune_options o;
    memset(&o, 0, sizeof o);
    o.trials = trials;
    o.per_round = 8;
    o.seed = 3;
    o.measure.threads = 2;
    o.measure.backend = &be;
    *rc = tune_task("matmul(M=16,N=16,K=16,transpose_a=0,transpose_b=0,dtype=float32)", "llvm",
                    &o, sum, err);
}

static void test_backend_measures_all(void **st) {
    (void)st;
    fake f = {0};
    tune_summary sum;
    char *err = NULL;
    int rc;
    run(&f, 5, 12, &sum, &err, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(f.opens, 1);
    assert_int_equal(f.closes, 1);
    assert_string_equal(f.key, "matmul(M=16,N=16,K=16,transpose_a=0,transpose_b=0,dtype=float32)");
    assert_int_equal(sum.measured, 12);
    assert_int_equal(f.candidates, 12);
    /* Batches of the backend's size, not of measure.threads (2). */
    assert_int_equal(f.maxn, 5);
    /* Latencies rise with each candidate: the best is the first trial. */
    assert_int_equal(sum.best_trial, 1);
    assert_true(sum.build_s == 24.0 && sum.run_s == 36.0);
    free(sum.best_steps_json);
}

static void test_backend_gone(void **st) {
    (void)st;
    fake f = {.fail_after = 2};
    tune_summary sum;
    char *err = NULL;
    int rc;
    run(&f, 4, 16, &sum, &err, &rc);
    assert_int_equal(rc, -1);
    assert_non_null(err);
    tu_assert_msg_has(err, "the fake backend is gone");
    assert_int_equal(f.closes, 1);
    free(err);
    free(sum.best_steps_json);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backend_measures_all),
        cmocka_unit_test(test_backend_gone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
