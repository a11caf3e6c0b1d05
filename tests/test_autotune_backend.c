/*
 * tests/test_autotune_backend.c — tune_measure_options.backend, the seam
 * that `mpirun autotune` measures through (issue 33), without MPI: a
 * measurer made with a backend opens one session and hands it every
 * candidate, tune_task hands batches of the backend's size and takes the
 * results in proposal order, its times come from the session, and a
 * backend that can no longer measure stops the run with its own message.
 * A backend with submit and poll (measuring while the tuner searches):
 * tune_tasks_db searches one round behind, so the candidates proposed are
 * the same whatever the number of workers and the order results come
 * back in, a round is submitted while the one before is measured, rounds
 * of two keys are in flight at once, nothing is proposed twice; a stop
 * commits what came back and nothing dropped; a backend gone fails the
 * run with its message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* ---- a backend that measures while the tuner searches ---- */

#define KA "matmul(M=16,N=16,K=16,transpose_a=0,transpose_b=0,dtype=float32)"
#define KB "matmul(M=16,N=32,K=16,transpose_a=0,transpose_b=0,dtype=float32)"

typedef struct {
    int64_t tag;
    char *key, *steps;
    int round, due; /* the submit call it came with; the poll it may finish from */
} afake_cand;

/* `workers` candidates at the head of the queue are "being measured";
 * each poll finishes some of them, chosen by rng, or none yet. With
 * `slow`, measuring is slower than searching: a candidate finishes only
 * once the next round was submitted (or 300 polls later, when none
 * comes); else right away. Latencies depend on the candidate alone. */
typedef struct {
    int workers;
    uint64_t rng;
    bool slow;
    int polls, submits;
    afake_cand *q;
    int nq, cap;
    char **log; /* "key\tsteps" of every candidate submitted, in order */
    int nlog, caplog;
    bool overlapped; /* a round was submitted while candidates were out */
    bool two_keys;   /* ... while candidates of another key were out */
    int results, stop_after; /* stop_after > 0: sets *stop after that many */
    volatile int *stop;
    int gone_after; /* > 0: poll fails after that many results */
} afake;

typedef struct {
    afake *f;
    char key[128];
} asession;

static void *a_open(void *user, const char *key, const char *target,
                    const tune_measure_options *o, char **err) {
    (void)target, (void)o, (void)err;
    asession *s = calloc(1, sizeof *s);
    s->f = user;
    snprintf(s->key, sizeof s->key, "%s", key);
    return s;
}

static void a_close(void *s) { free(s); }

static const char *a_errmsg(void *s) {
    (void)s;
    return "autotune: the fake backend is gone";
}

static int a_measure(void *s, int n, const char *const *steps, const int *hooks, double best,
                     tune_result *res) {
    (void)s, (void)n, (void)steps, (void)hooks, (void)best, (void)res;
    fail_msg("tune_tasks_db measured synchronously with a backend that overlaps");
    return -1;
}

static int a_submit(void *sp, int n, const char *const *steps, const int *hooks, double best,
                    const int64_t *tags) {
    (void)hooks, (void)best;
    asession *s = sp;
    afake *f = s->f;
    if (f->nq) f->overlapped = true;
    f->submits++;
    for (int i = 0; i < f->nq; i++)
        if (strcmp(f->q[i].key, s->key)) f->two_keys = true;
    for (int i = 0; i < n; i++) {
        if (f->nq == f->cap) {
            f->cap = f->cap ? 2 * f->cap : 64;
            f->q = realloc(f->q, sizeof *f->q * (size_t)f->cap);
        }
        f->q[f->nq++] =
            (afake_cand){tags[i], strdup(s->key), strdup(steps[i]), f->submits, f->polls + 300};
        if (f->nlog == f->caplog) {
            f->caplog = f->caplog ? 2 * f->caplog : 64;
            f->log = realloc(f->log, sizeof *f->log * (size_t)f->caplog);
        }
        size_t len = strlen(s->key) + strlen(steps[i]) + 2;
        f->log[f->nlog] = malloc(len);
        snprintf(f->log[f->nlog++], len, "%s\t%s", s->key, steps[i]);
    }
    return 0;
}

static uint64_t fnv(uint64_t h, const char *s) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static int a_poll(void *user, double wait_s, int max, tune_result *res, int64_t *tags) {
    afake *f = user;
    if (f->gone_after && f->results >= f->gone_after) return -1;
    int k = 0;
    if (f->stop && *f->stop) { /* told to stop: all the rest dropped */
        while (f->nq && k < max) {
            afake_cand c = f->q[--f->nq];
            memset(&res[k], 0, sizeof res[k]);
            res[k].dropped = true;
            tags[k++] = c.tag;
            free(c.key), free(c.steps);
        }
        return k;
    }
    /* Nothing yet, half the time: the search goes on meanwhile. */
    f->polls++;
    if (tu_rand_u64(&f->rng) % 2) {
        struct timespec ts = {0, (long)(wait_s < 2e-3 ? wait_s * 0.5e9 : 1e6)};
        nanosleep(&ts, NULL);
        return 0;
    }
    int out = f->nq < f->workers ? f->nq : f->workers;
    int want = out ? 1 + (int)(tu_rand_u64(&f->rng) % (uint64_t)out) : 0;
    while (k < want && k < max && f->nq) {
        int lim = f->nq < f->workers ? f->nq : f->workers;
        int i = (int)(tu_rand_u64(&f->rng) % (uint64_t)lim);
        if (f->slow && f->q[i].round == f->submits && f->q[i].due > f->polls) break;
        afake_cand c = f->q[i];
        memmove(f->q + i, f->q + i + 1, sizeof *f->q * (size_t)(f->nq - i - 1));
        f->nq--;
        uint64_t h = fnv(fnv(0xcbf29ce484222325ull, c.key), c.steps);
        memset(&res[k], 0, sizeof res[k]);
        res[k].host_scale = 1;
        res[k].nlatencies = 1;
        res[k].latencies[0] = res[k].median = res[k].mean =
            1e-4 * (1 + (double)((h >> 16) % 1000) / 100);
        tags[k++] = c.tag;
        free(c.key), free(c.steps);
        if (++f->results == f->stop_after && f->stop) {
            *f->stop = 1; /* as Ctrl-C would, between two results */
            break;
        }
    }
    return k;
}

static void afake_free(afake *f) {
    for (int i = 0; i < f->nq; i++) free(f->q[i].key), free(f->q[i].steps);
    for (int i = 0; i < f->nlog; i++) free(f->log[i]);
    free(f->q), free(f->log);
}

/* tune_tasks_db on keys KA and KB with f's backend into a fresh database
 * (the model trained from 4 samples on, so that it learns during the
 * run): its return, *sum, and the records committed. */
static int run_overlap(afake *f, int trials, volatile int *stop, tune_db_summary *sum, int *records,
                       char **err) {
    tune_measure_backend be = {.user = f, .batch = 8, .open = a_open, .measure = a_measure,
                               .errmsg = a_errmsg, .close = a_close, .submit = a_submit,
                               .poll = a_poll};
    char path[256];
    snprintf(path, sizeof path, "/tmp/loom_at_backend_%d.db", (int)getpid());
    unlink(path);
    tdb_db *db = tdb_open(path, NULL, err);
    assert_non_null(db);
    cm_params cp;
    cm_params_default(&cp);
    cp.num_warmup_samples = 4;
    cp.seed = 5;
    tune_db_options o;
    memset(&o, 0, sizeof o);
    o.tune.trials = trials;
    o.tune.per_round = 4;
    o.tune.population = 32;
    o.tune.generations = 1;
    o.tune.seed = 5;
    o.tune.stop = stop;
    o.tune.measure.backend = &be;
    o.cost_params = &cp;
    o.retime = 1;
    const char *keys[] = {KA, KB};
    int rc = tune_tasks_db(db, 2, keys, "llvm", &o, sum, err);
    /* The run's record key: the host's with the default thread count. */
    tdb_record *r = NULL;
    *records = 0;
    for (int i = 0; i < 2 && sum->target_key; i++) {
        int nr = tdb_best(db, keys[i], sum->target_key, 1000, &r);
        *records += nr > 0 ? nr : 0;
        tdb_records_free(r, nr);
    }
    tdb_close(db);
    unlink(path);
    return rc;
}

static void test_overlap_same_proposals(void **st) {
    (void)st;
    /* One worker finishing in order, more in scrambled orders, and
     * results that come back before the next round is found. */
    enum { NCFG = 4, TRIALS = 40 };
    afake cfg[NCFG] = {{.workers = 1, .rng = 11, .slow = true},
                       {.workers = 3, .rng = 22, .slow = true},
                       {.workers = 8, .rng = 33, .slow = true},
                       {.workers = 4, .rng = 44}};
    for (int c = 0; c < NCFG; c++) {
        tune_db_summary sum;
        char *err = NULL;
        int records = 0;
        if (run_overlap(&cfg[c], TRIALS, NULL, &sum, &records, &err)) fail_msg("%s", err);
        assert_int_equal(sum.done, TRIALS);
        assert_int_equal(records, TRIALS);
        assert_int_equal(cfg[c].nlog, TRIALS);
        /* Round k+1 went out while round k was measured, and the two
         * keys had rounds in flight at once. */
        assert_true(cfg[c].overlapped || !cfg[c].slow);
        assert_true(cfg[c].two_keys || !cfg[c].slow);
        assert_true(sum.tasks[0].rounds > 1 && sum.tasks[1].rounds > 1);
        assert_true(sum.overlap_s >= 0 && sum.overlap_s <= sum.search_s + sum.train_s + 1);
        for (int i = 0; i < cfg[c].nlog; i++)
            for (int j = i + 1; j < cfg[c].nlog; j++)
                if (!strcmp(cfg[c].log[i], cfg[c].log[j]))
                    fail_msg("candidates %d and %d are the same", i + 1, j + 1);
        tune_db_summary_free(&sum);
    }
    for (int c = 1; c < NCFG; c++)
        for (int i = 0; i < TRIALS; i++)
            if (strcmp(cfg[0].log[i], cfg[c].log[i]))
                fail_msg("candidate %d differs between 1 and %d workers:\n%s\n%s", i + 1,
                         cfg[c].workers, cfg[0].log[i], cfg[c].log[i]);
    for (int c = 0; c < NCFG; c++) afake_free(&cfg[c]);
}

/* A stop after 6 results: those are committed, the rest come back dropped
 * and are not; the run says it stopped. */
static void test_overlap_stop(void **st) {
    (void)st;
    volatile int stop = 0;
    afake f = {.workers = 2, .rng = 7, .slow = true, .stop_after = 6, .stop = &stop};
    tune_db_summary sum;
    char *err = NULL;
    int records = 0;
    if (run_overlap(&f, 40, &stop, &sum, &records, &err)) fail_msg("%s", err);
    assert_true(sum.stopped);
    assert_int_equal(f.results, 6);
    assert_int_equal(sum.done, 6);
    assert_int_equal(records, 6);
    assert_true(f.nlog < 40);
    tune_db_summary_free(&sum);
    afake_free(&f);
}

/* A backend whose poll fails: the run fails with its message, what came
 * back before committed. */
static void test_overlap_backend_gone(void **st) {
    (void)st;
    afake f = {.workers = 2, .rng = 9, .slow = true, .gone_after = 5};
    tune_db_summary sum;
    char *err = NULL;
    int records = 0;
    assert_int_equal(run_overlap(&f, 40, NULL, &sum, &records, &err), -1);
    assert_non_null(err);
    assert_string_equal(err, "autotune: the fake backend is gone");
    assert_true(f.results >= 5);
    assert_int_equal(sum.done, f.results);
    assert_int_equal(records, f.results);
    free(err);
    tune_db_summary_free(&sum);
    afake_free(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backend_measures_all),
        cmocka_unit_test(test_backend_gone),
        cmocka_unit_test(test_overlap_same_proposals),
        cmocka_unit_test(test_overlap_stop),
        cmocka_unit_test(test_overlap_backend_gone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
