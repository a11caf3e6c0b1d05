/*
 * tests/test_autotune_mpi.c — `mpirun -np N autotune` (issue 33; built
 * only with LOOM_WITH_MPI): with 2 workers every trial is committed once
 * and the progress and closing lines name the workers; the candidates
 * proposed (in order) equal those of a run with 1 worker and the same
 * seed, and for a suite of two tasks whose results depend on the
 * candidate alone (LOOM_TEST_FAKE_LATENCY) with 1, 2 and 3 workers, with
 * rank 0 searching while the workers measure (one round behind); a
 * worker that reports another target key or another Loom version is
 * refused, named, and nothing is measured; a worker that stops answering
 * is dropped and its candidate measured by the other; Ctrl-C on mpirun
 * ends every rank with what was received saved, and --resume goes on.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "loom/tuning_db.h"

#define KEY64 "matmul(M=64,N=64,K=64,transpose_a=0,transpose_b=0,dtype=float32)"
/* No binding: the ranks stay within the cores the test was given (taskset). */
#define MPIRUN "mpirun --allow-run-as-root --oversubscribe --bind-to none"

static char out[1 << 17];

/* A fresh (removed) file /tmp/loom_at_mpi_TAG_PID.EXT in p. */
static void tmp_path(char *p, size_t n, const char *tag, const char *ext) {
    snprintf(p, n, "/tmp/loom_at_mpi_%s_%d.%s", tag, (int)getpid(), ext);
    unlink(p);
}

static void db_path(char *p, size_t n, const char *tag) { tmp_path(p, n, tag, "db"); }

/* The arguments of every run: 16 trials in rounds of 8, no model (the
 * proposals then depend on the seed alone), no re-timing, 1 thread (the
 * records' key is the host's plain one, tdb_host_target). */
static void args(char *a, size_t n, const char *db) {
    snprintf(a, n,
             "--op matmul --shape M=64,N=64,K=64 --trials 16 --per-round 8 --no-model "
             "--retime 0 --seed 7 --timeout 5 --progress-interval 0 --threads 1 --db %s",
             db);
}

/* The step logs of db's records of workload key under target key tk
 * (NULL: the host's), in commit order: their count, and *logs (malloc'd
 * strings in a malloc'd array). */
static int commit_order_full(const char *db, const char *key, const char *target, char ***logs) {
    char *err = NULL;
    tdb_db *d = tdb_open(db, NULL, &err);
    assert_non_null(d);
    char *tk = target ? strdup(target) : tdb_host_target();
    tdb_history_point *h = NULL;
    int n = tdb_history(d, key, tk, &h);
    assert_true(n >= 0);
    *logs = calloc((size_t)n + 1, sizeof **logs);
    for (int i = 0; i < n; i++) {
        tdb_record r;
        assert_int_equal(tdb_get_record(d, h[i].record_id, &r), 1);
        (*logs)[i] = strdup(r.steps_json);
        tdb_record_clear(&r);
    }
    free(h);
    free(tk);
    tdb_close(d);
    return n;
}

static int commit_order_of(const char *db, const char *target, char ***logs) {
    return commit_order_full(db, KEY64, target, logs);
}
static int commit_order(const char *db, char ***logs) { return commit_order_of(db, NULL, logs); }
static int commit_order_of_key(const char *db, const char *key, char ***logs) {
    return commit_order_full(db, key, NULL, logs);
}

static void free_logs(char **logs, int n) {
    for (int i = 0; i < n; i++) free(logs[i]);
    free(logs);
}

/* Fails when two of the n logs (of a and b together) are the same. */
static void assert_distinct(char **a, int na, char **b, int nb) {
    int n = na + nb;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            const char *x = i < na ? a[i] : b[i - na], *y = j < na ? a[j] : b[j - na];
            if (!strcmp(x, y)) {
                fprintf(stderr, "%s\n", out); /* the latest run's */
                fail_msg("trials %d and %d have the same log (measured twice)", i + 1, j + 1);
            }
        }
}

/* The closing summary's worker lines: their trials and failures summed
 * (over lines that name a rank), checked against the total line. */
static void assert_worker_summary(const char *o, int nworkers, int trials) {
    int sum = 0, fails = 0, lines = 0;
    for (const char *p = strstr(o, "worker rank "); p; p = strstr(p + 1, "worker rank ")) {
        const char *colon = strstr(p, "): ");
        assert_non_null(colon);
        int n = 0, f = 0;
        double b = -1, r = -1;
        if (sscanf(colon, "): %d trials (%d failed), build %lf s, run %lf s", &n, &f, &b, &r) != 4)
            fail_msg("unreadable worker line: %.120s", p);
        assert_true(b >= 0 && r >= 0);
        sum += n, fails += f, lines++;
    }
    assert_int_equal(lines, nworkers);
    assert_int_equal(sum, trials);
    char total[128];
    snprintf(total, sizeof total, "of %d alive, %d trials (%d failed), build ", nworkers, sum,
             fails);
    tu_assert_msg_has(o, "workers: ", total);
}

/* The lines of the file at path (rank 0's LOOM_TEST_PROPOSALS: "KEY<TAB>
 * LOG" per candidate submitted, in order): their count, and *lines. */
static int read_lines(const char *path, char ***lines) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n = 0, cap = 0;
    *lines = NULL;
    char *line = NULL;
    size_t len = 0;
    ssize_t k;
    while ((k = getline(&line, &len, f)) > 0) {
        if (line[k - 1] == '\n') line[k - 1] = 0;
        if (n == cap) *lines = realloc(*lines, sizeof **lines * (size_t)(cap = cap ? 2 * cap : 64));
        (*lines)[n++] = strdup(line);
    }
    free(line);
    fclose(f);
    return n;
}

/* Fails unless a and b (na, nb lines) are the same sequence. */
static void assert_same_sequence(char **a, int na, char **b, int nb, const char *what) {
    for (int i = 0; i < na && i < nb; i++)
        if (strcmp(a[i], b[i]))
            fail_msg("candidate %d proposed differs %s:\n%.300s\n%.300s", i + 1, what, a[i], b[i]);
    assert_int_equal(na, nb);
}

/* Fails unless the n committed logs are the proposed ones (KEY<TAB>LOG
 * lines of key), each once. */
static void assert_committed_proposed(char **logs, int n, char **prop, int np, const char *key) {
    int mine = 0;
    size_t kl = strlen(key);
    for (int i = 0; i < np; i++) {
        if (strncmp(prop[i], key, kl) || prop[i][kl] != '\t') continue;
        mine++;
        int hits = 0;
        for (int j = 0; j < n; j++) hits += !strcmp(logs[j], prop[i] + kl + 1);
        if (hits != 1) fail_msg("proposal %d committed %d times", i + 1, hits);
    }
    assert_int_equal(mine, n);
}

static void test_two_workers_match_one(void **st) {
    (void)st;
    char db3[256], db2[256], p3[256], p2[256], a[1024];
    db_path(db3, sizeof db3, "np3");
    db_path(db2, sizeof db2, "np2");
    snprintf(p3, sizeof p3, "/tmp/loom_at_mpi_np3_%d.txt", (int)getpid());
    snprintf(p2, sizeof p2, "/tmp/loom_at_mpi_np2_%d.txt", (int)getpid());
    unlink(p3), unlink(p2);
    args(a, sizeof a, db3);
    int rc = tu_run(out, sizeof out, MPIRUN " -x LOOM_TEST_PROPOSALS=%s -np 3 %s/autotune %s", p3,
                    tu_bindir(), a);
    if (rc) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    tu_assert_msg_has(out, "workers ", " busy", " trials/min", "worker rank 1 (",
                      "worker rank 2 (", "best:", "search and model while workers measured ");
    assert_worker_summary(out, 2, 16);
    char **l3 = NULL;
    int n3 = commit_order(db3, &l3);
    assert_int_equal(n3, 16);
    assert_distinct(l3, n3, NULL, 0);

    args(a, sizeof a, db2);
    rc = tu_run(out, sizeof out, MPIRUN " -x LOOM_TEST_PROPOSALS=%s -np 2 %s/autotune %s", p2,
                tu_bindir(), a);
    if (rc) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    /* Failures (a run timed out on a loaded host) are counted, not fatal. */
    assert_worker_summary(out, 1, 16);
    char **l2 = NULL;
    int n2 = commit_order(db2, &l2);
    assert_int_equal(n2, 16);
    /* Committed as they arrive; proposed in the same order. */
    char **q3 = NULL, **q2 = NULL;
    int m3 = read_lines(p3, &q3), m2 = read_lines(p2, &q2);
    assert_int_equal(m3, 16);
    assert_same_sequence(q3, m3, q2, m2, "between 2 workers and 1");
    assert_committed_proposed(l3, n3, q3, m3, KEY64);
    assert_committed_proposed(l2, n2, q2, m2, KEY64);
    free_logs(l3, n3), free_logs(l2, n2), free_logs(q3, m3), free_logs(q2, m2);
    unlink(db3), unlink(db2), unlink(p3), unlink(p2);
}

/* A suite of two matmuls with the cost model, results that depend on the
 * candidate alone (LOOM_TEST_FAKE_LATENCY: nothing built, a pause of 0 to
 * 15 ms that differs between ranks), rounds of 4: with 1, 2 and 3
 * workers the same candidates are proposed in the same order, rounds of
 * both tasks are measured, each proposal is committed once, and rank 0
 * searched while the workers measured. */
static void test_suite_same_proposals(void **st) {
    (void)st;
    char suite[256], db[256], prop[3][256];
    tmp_path(suite, sizeof suite, "suite", "tsv");
    FILE *f = fopen(suite, "w");
    assert_non_null(f);
    fprintf(f, "a\tmatmul\tM=16,N=16,K=16\nb\tmatmul\tM=16,N=32,K=16\n");
    fclose(f);
    const char *ka = "matmul(M=16,N=16,K=16,transpose_a=0,transpose_b=0,dtype=float32)";
    const char *kb = "matmul(M=16,N=32,K=16,transpose_a=0,transpose_b=0,dtype=float32)";
    char **q[3] = {NULL};
    int nq[3] = {0};
    for (int w = 0; w < 3; w++) {
        db_path(db, sizeof db, "suite");
        snprintf(prop[w], sizeof prop[w], "/tmp/loom_at_mpi_suite_%d_%d.txt", w, (int)getpid());
        unlink(prop[w]);
        int rc = tu_run(out, sizeof out,
                        MPIRUN " -x LOOM_TEST_FAKE_LATENCY=1 -x LOOM_TEST_PROPOSALS=%s -np %d "
                               "%s/autotune --suite %s --trials 32 --per-round 4 --population 64 "
                               "--retime 0 --seed 3 --timeout 5 --progress-interval 0 --threads 1 "
                               "--db %s",
                        prop[w], w + 2, tu_bindir(), suite, db);
        if (rc) fprintf(stderr, "%s\n", out);
        assert_int_equal(rc, 0);
        assert_worker_summary(out, w + 1, 32);
        tu_assert_msg_has(out, "a: best ", "b: best ", "32 trials");
        const char *t = strstr(out, "search and model while workers measured ");
        assert_non_null(t);
        double ov = atof(t + strlen("search and model while workers measured "));
        if (!(ov > 0)) fail_msg("rank 0 never searched while the workers measured:\n%s", out);
        nq[w] = read_lines(prop[w], &q[w]);
        assert_int_equal(nq[w], 32);
        char **la = NULL, **lb = NULL;
        int na = commit_order_of_key(db, ka, &la), nb = commit_order_of_key(db, kb, &lb);
        assert_int_equal(na + nb, 32);
        assert_true(na >= 8 && nb >= 8); /* each task had two rounds at least */
        assert_committed_proposed(la, na, q[w], nq[w], ka);
        assert_committed_proposed(lb, nb, q[w], nq[w], kb);
        free_logs(la, na), free_logs(lb, nb);
        unlink(db), unlink(prop[w]);
    }
    assert_same_sequence(q[0], nq[0], q[1], nq[1], "between 1 worker and 2");
    assert_same_sequence(q[0], nq[0], q[2], nq[2], "between 1 worker and 3");
    for (int w = 0; w < 3; w++) free_logs(q[w], nq[w]);
    unlink(suite);
}

/* A candidate goes out with the best time that has come back when it is
 * handed to a worker, not the one known when its round was submitted
 * (none in a first round): with one worker, every candidate after the
 * first carries a best (LOOM_TEST_WORK_LOG: the worker's log of them). */
static void test_best_sent_at_dispatch(void **st) {
    (void)st;
    char db[256], log[256], a[1024];
    db_path(db, sizeof db, "best");
    tmp_path(log, sizeof log, "best", "txt");
    args(a, sizeof a, db);
    int rc = tu_run(out, sizeof out,
                    MPIRUN " -x LOOM_TEST_FAKE_LATENCY=1 -x LOOM_TEST_WORK_LOG=%s -np 2 "
                           "%s/autotune %s",
                    log, tu_bindir(), a);
    if (rc) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    char **l = NULL;
    int n = read_lines(log, &l);
    assert_int_equal(n, 16);
    assert_true(atof(l[0]) == 0);
    for (int i = 1; i < n; i++)
        if (!(atof(l[i]) > 0)) fail_msg("candidate %d went out with best %s", i + 1, l[i]);
    free_logs(l, n);
    unlink(db), unlink(log);
}

/* Rank 0 bound to one CPU with four workers is told that its search may
 * hold them up; unbound (the other tests) it is not. */
static void test_rank0_one_cpu_warned(void **st) {
    (void)st;
    char db[256], a[1024];
    db_path(db, sizeof db, "onecpu");
    args(a, sizeof a, db);
    int rc = tu_run(out, sizeof out,
                    "mpirun --allow-run-as-root --oversubscribe --bind-to core:overload-allowed "
                    "-x LOOM_TEST_FAKE_LATENCY=1 -np 5 %s/autotune %s",
                    tu_bindir(), a);
    if (rc) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    tu_assert_msg_has(out, "autotune: MPI rank 0 may run on 1 CPU and feeds 4 workers",
                      "give rank 0 more (an mpirun rankfile");
    unlink(db);
    rc = tu_run(out, sizeof out, MPIRUN " -x LOOM_TEST_FAKE_LATENCY=1 -np 5 %s/autotune %s",
                tu_bindir(), a);
    assert_int_equal(rc, 0);
    if (strstr(out, "may run on 1 CPU") && rt_available_cpus() > 1)
        fail_msg("warned without a binding:\n%s", out);
    unlink(db);
}

/* Rank 2 runs with the environment `env` (MPMD: two contexts); every
 * rank gets the arguments `more` after the usual ones, mpirun `mpi`. */
static int run_rank2_with_more(const char *mpi, const char *env, const char *db,
                               const char *more) {
    char a[1024];
    args(a, sizeof a, db);
    return tu_run(out, sizeof out, MPIRUN " %s -np 2 %s/autotune %s %s : -np 1 env %s %s/autotune %s %s",
                  mpi, tu_bindir(), a, more, env, tu_bindir(), a, more);
}
static int run_rank2_with(const char *env, const char *db) {
    return run_rank2_with_more("", env, db, "");
}

static void test_other_target_refused(void **st) {
    (void)st;
    char db[256];
    db_path(db, sizeof db, "target");
    int rc = run_rank2_with("LOOM_TEST_FAKE_TARGET='llvm -mcpu=fakecpu'", db);
    assert_int_not_equal(rc, 0);
    tu_assert_msg_has(out, "MPI rank 2 (", "measures target 'llvm -mcpu=fakecpu', rank 0 'llvm",
                      "one kind of machine",
                      "(--allow-mixed commits each result under its own worker's key)",
                      "1 of the 2 MPI workers refused");
    assert_null(strstr(out, "MPI rank 1 ("));
    /* Refused before the database is opened. */
    assert_int_not_equal(access(db, F_OK), 0);
}

static void test_other_version_refused(void **st) {
    (void)st;
    char db[256];
    db_path(db, sizeof db, "version");
    int rc = run_rank2_with("LOOM_TEST_FAKE_VERSION=0.0.9", db);
    assert_int_not_equal(rc, 0);
    tu_assert_msg_has(out, "MPI rank 2 (", "runs Loom 0.0.9 (protocol 1), rank 0 Loom",
                      "every rank must run the same Loom version");
    assert_int_not_equal(access(db, F_OK), 0);
}

/* A worker that never answers is dropped after the candidate's limit
 * (shortened by LOOM_TEST_MPI_TIMEOUT_S) and its candidate measured by the
 * other; the job then ends with MPI_Abort (the dropped rank cannot be
 * told to stop), every trial committed. */
static void test_stalled_worker_dropped(void **st) {
    (void)st;
    char db[256], a[1024];
    db_path(db, sizeof db, "stall");
    args(a, sizeof a, db);
    tu_run(out, sizeof out,
           MPIRUN " -x LOOM_TEST_MPI_TIMEOUT_S=20 -np 2 %s/autotune %s : -np 1 env "
                  "LOOM_TEST_WORKER_STALL=1 %s/autotune %s",
           tu_bindir(), a, tu_bindir(), a);
    tu_assert_msg_has(out, "MPI rank 2 (", "gave no answer in 20 s", "dropped",
                      "worker rank 2 (", "(dropped)");
    char **l = NULL;
    int n = commit_order(db, &l);
    assert_int_equal(n, 16);
    free_logs(l, n);
    unlink(db);
}

/* A worker killed with SIGKILL on its 3rd candidate. Open MPI's default:
 * mpirun ends the whole job, rank 0 included; the trials committed so far
 * stay, and --resume completes the 16 with nothing measured twice. With
 * orte_enable_recovery the job goes on: rank 0 drops the dead rank after
 * the candidate's limit and the other worker measures the rest. */
static void test_killed_worker(void **st) {
    (void)st;
    char db[256], a[1024];
    db_path(db, sizeof db, "kill");
    int rc = run_rank2_with("LOOM_TEST_WORKER_DIE=3", db);
    assert_int_not_equal(rc, 0);
    tu_assert_msg_has(out, "mpirun noticed that process rank 2 ", "exited on signal 9");
    char **l = NULL;
    int k = commit_order(db, &l);
    assert_true(k >= 1 && k < 16);
    assert_distinct(l, k, NULL, 0);
    char **before = l;

    args(a, sizeof a, db);
    rc = tu_run(out, sizeof out, MPIRUN " -np 3 %s/autotune %s --resume", tu_bindir(), a);
    if (rc) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    char want[128];
    snprintf(want, sizeof want, "resume: %d trials already in ", k);
    tu_assert_msg_has(out, want, "16/16 trials");
    assert_worker_summary(out, 2, 16 - k);
    int n = commit_order(db, &l);
    assert_int_equal(n, 16);
    assert_distinct(l, n, NULL, 0);
    /* The first run's records are kept as they were, first. */
    for (int i = 0; i < k; i++) assert_string_equal(l[i], before[i]);
    free_logs(l, n), free_logs(before, k);
    unlink(db);

    db_path(db, sizeof db, "kill_recovery");
    rc = run_rank2_with_more("--mca orte_enable_recovery 1 -x LOOM_TEST_MPI_TIMEOUT_S=15",
                             "LOOM_TEST_WORKER_DIE=3", db, "");
    tu_assert_msg_has(out, "autotune: MPI rank 2 (", "gave no answer in 15 s", "dropped",
                      "worker rank 2 (", "(dropped)", "workers: 1 of 2 alive, 16 trials",
                      "16/16 trials", "best: ");
    /* Busy counts only workers alive, even in the batch that lost one. */
    assert_null(strstr(out, "workers 2/1 busy"));
    n = commit_order(db, &l);
    assert_int_equal(n, 16);
    assert_distinct(l, n, NULL, 0);
    free_logs(l, n);
    unlink(db);
}

/* --allow-mixed: rank 2 (faking another target key) is taken; each
 * trial is committed under the key of the worker that measured it, both
 * keys get some, 16 in all, none measured twice; resumed with 8 more,
 * the programs stored under either key are not measured again. */
static void test_mixed_allowed(void **st) {
    (void)st;
    char db[256];
    db_path(db, sizeof db, "mixed");
    const char *fake = "llvm -mcpu=fakecpu";
    int rc = run_rank2_with_more("", "LOOM_TEST_FAKE_TARGET='llvm -mcpu=fakecpu'", db,
                                 "--allow-mixed");
    if (rc) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    tu_assert_msg_has(out, "MPI workers by target key (--allow-mixed: each result is committed "
                           "under its worker's key):",
                      "(rank 0's): rank 1\n", "  'llvm -mcpu=fakecpu': rank 2\n",
                      "worker rank 2 (", ", target 'llvm -mcpu=fakecpu'): ", "best:");
    assert_null(strstr(out, "refused"));
    assert_worker_summary(out, 2, 16);
    char **lh = NULL, **lf = NULL;
    int nh = commit_order(db, &lh), nf = commit_order_of(db, fake, &lf);
    assert_int_equal(nh + nf, 16);
    assert_true(nh > 0 && nf > 0);
    assert_distinct(lh, nh, lf, nf);
    /* The per-worker counts are the records of each key. */
    char want[64];
    snprintf(want, sizeof want, "target 'llvm -mcpu=fakecpu'): %d trials", nf);
    tu_assert_msg_has(out, want);
    free_logs(lh, nh), free_logs(lf, nf);

    char a[1024];
    args(a, sizeof a, db);
    char *t16 = strstr(a, "--trials 16");
    assert_non_null(t16);
    memcpy(t16, "--trials 24", 11);
    rc = tu_run(out, sizeof out,
                MPIRUN " -np 2 %s/autotune %s --allow-mixed --resume : -np 1 env "
                       "LOOM_TEST_FAKE_TARGET='%s' %s/autotune %s --allow-mixed --resume",
                tu_bindir(), a, fake, tu_bindir(), a);
    if (rc) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    /* mpirun gives the ranks a terminal: the progress bar. */
    tu_assert_msg_has(out, "resume: 16 trials already in ", "24/24 trials");
    nh = commit_order(db, &lh), nf = commit_order_of(db, fake, &lf);
    assert_int_equal(nh + nf, 24);
    assert_distinct(lh, nh, lf, nf);
    free_logs(lh, nh), free_logs(lf, nf);
    unlink(db);
}

/* --allow-mixed where no worker has rank 0's key: every record goes
 * under the worker's; rank 0's key has none. */
static void test_mixed_none_like_rank0(void **st) {
    (void)st;
    char db[256], a[1024];
    db_path(db, sizeof db, "mixed0");
    args(a, sizeof a, db);
    int rc = tu_run(out, sizeof out,
                    MPIRUN " -x LOOM_TEST_FAKE_TARGET='llvm -mcpu=fakecpu' -np 2 %s/autotune %s "
                           "--allow-mixed",
                    tu_bindir(), a);
    if (rc) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    tu_assert_msg_has(out, "(rank 0's): no worker\n", "  'llvm -mcpu=fakecpu': rank 1\n");
    char **l = NULL;
    int nh = commit_order(db, &l);
    assert_int_equal(nh, 0);
    free_logs(l, nh);
    int nf = commit_order_of(db, "llvm -mcpu=fakecpu", &l);
    assert_int_equal(nf, 16);
    assert_distinct(l, nf, NULL, 0);
    free_logs(l, nf);
    unlink(db);
}

/* --allow-mixed outside an MPI job is refused before the database. */
static void test_mixed_needs_mpi(void **st) {
    (void)st;
    char db[256], a[1024];
    db_path(db, sizeof db, "mixed1");
    args(a, sizeof a, db);
    int rc = tu_run(out, sizeof out, "%s/autotune %s --allow-mixed", tu_bindir(), a);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "autotune: --allow-mixed takes MPI workers of several target keys; "
                           "this run has none (it measures in this process: start it with "
                           "mpirun -np N, N > 1)");
    assert_int_not_equal(access(db, F_OK), 0);
}

/* The largest N of "N/TOTAL trials" in the file at path (0: none yet). */
static int trials_shown(const char *path, int total) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(out, 1, sizeof out - 1, f);
    fclose(f);
    out[n] = 0;
    char pat[32];
    snprintf(pat, sizeof pat, "/%d trials", total);
    int best = 0;
    for (char *p = strstr(out, pat); p; p = strstr(p + 1, pat)) {
        char *q = p;
        while (q > out && q[-1] >= '0' && q[-1] <= '9') q--;
        int v = atoi(q);
        if (v > best) best = v;
    }
    return best;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Ctrl-C on mpirun (SIGINT; Open MPI sends every rank SIGTERM, then
 * SIGKILL 1 s later) once some trials are committed: mpirun ends within
 * 20 s, no process of the run is left, rank 0 said it was interrupted
 * and committed what it reported, the database opens; --resume with a
 * larger budget completes it with no program measured twice. */
static void test_ctrl_c_then_resume(void **st) {
    (void)st;
    char db[256], log[256], a[1024];
    db_path(db, sizeof db, "int");
    tmp_path(log, sizeof log, "int", "out");
    const char *common = "--op matmul --shape M=64,N=64,K=64 --per-round 8 --no-model "
                         "--retime 0 --seed 7 --timeout 5 --progress-interval 0 --threads 1";
    snprintf(a, sizeof a, "%s --trials 96 --db %s", common, db);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "exec " MPIRUN " -np 3 %s/autotune %s > %s 2>&1", tu_bindir(), a,
             log);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    double t0 = now_s();
    while (trials_shown(log, 96) < 8 && now_s() - t0 < 180) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    int shown = trials_shown(log, 96);
    kill(pid, SIGINT);
    double t1 = now_s();
    int status = 0;
    pid_t w = 0;
    while ((w = waitpid(pid, &status, WNOHANG)) == 0 && now_s() - t1 < 20) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (w != pid) {
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail_msg("mpirun did not end within 20 s of Ctrl-C");
    }
    assert_true(shown >= 8 && shown < 96);
    /* Every rank and runner of the run is gone: none names the database
     * (the bracket keeps pgrep's own shell from matching). */
    char pg[512];
    snprintf(pg, sizeof pg, "pgrep -f 'loom_at_mpi_in[t]_%d.db' > /dev/null", (int)getpid());
    int left = 1;
    for (int i = 0; i < 50 && left; i++) {
        left = system(pg) == 0;
        if (left) {
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    assert_false(left);
    trials_shown(log, 96); /* reads the whole output into out */
    tu_assert_msg_has(out, "autotune: stopping: the results received are saved",
                      "trials measured and saved", "worker rank 1 (", "worker rank 2 (");
    const char *p = strstr(out, "interrupted: ");
    assert_non_null(p);
    int said = atoi(p + strlen("interrupted: "));
    char **l = NULL;
    int k = commit_order(db, &l);
    /* What rank 0 reported saved is what the database holds. */
    assert_int_equal(k, said);
    assert_true(k >= 8 && k < 96);
    assert_distinct(l, k, NULL, 0);
    char **before = l;

    snprintf(a, sizeof a, "%s --trials %d --db %s --resume", common, k + 16, db);
    int rc = tu_run(out, sizeof out, MPIRUN " -np 3 %s/autotune %s", tu_bindir(), a);
    if (rc) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 0);
    char want[128];
    snprintf(want, sizeof want, "resume: %d trials already in ", k);
    tu_assert_msg_has(out, want);
    assert_worker_summary(out, 2, 16);
    int n = commit_order(db, &l);
    assert_int_equal(n, k + 16);
    assert_distinct(l, n, NULL, 0);
    for (int i = 0; i < k; i++) assert_string_equal(l[i], before[i]);
    free_logs(l, n), free_logs(before, k);
    unlink(db), unlink(log);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_needs_mpi),
        cmocka_unit_test(test_other_target_refused),
        cmocka_unit_test(test_mixed_allowed),
        cmocka_unit_test(test_mixed_none_like_rank0),
        cmocka_unit_test(test_other_version_refused),
        cmocka_unit_test(test_two_workers_match_one),
        cmocka_unit_test(test_suite_same_proposals),
        cmocka_unit_test(test_best_sent_at_dispatch),
        cmocka_unit_test(test_rank0_one_cpu_warned),
        cmocka_unit_test(test_stalled_worker_dropped),
        cmocka_unit_test(test_killed_worker),
        cmocka_unit_test(test_ctrl_c_then_resume),
    };
    /* ONLY=test_name runs one test (the whole file takes minutes). */
    if (getenv("ONLY")) cmocka_set_test_filter(getenv("ONLY"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
