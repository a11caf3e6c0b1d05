/*
 * The tuning database under concurrent writers and crashes: two processes
 * committing to one file at once lose nothing, and a process killed with
 * SIGKILL in the middle of committing leaves a sound file holding every
 * record it had committed.
 */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "test_tuning_db_util.h"

#define WKEY "reliability(n=1)"
#define TGT "llvm -mcpu=test"

static const char *log_json = "[{\"kind\":\"compute_inline\",\"stage\":1}]";

static tdb_db *open_or_fail(const char *path) {
    char *err = NULL;
    tdb_db *db = tdb_open(path, NULL, &err);
    if (!db) fprintf(stderr, "%s\n", err);
    return db;
}

static int64_t commit_one(tdb_db *db, int who, int i) {
    double lat[2] = {1e-3 + who * 1e-4 + i * 1e-7, 1e-3};
    char msg[32];
    snprintf(msg, sizeof msg, "w%d-%d", who, i);
    tdb_record_in r = {.workload_key = WKEY,
                       .target = TGT,
                       .steps_json = log_json,
                       .nlatencies = 2,
                       .latencies = lat,
                       .error_msg = msg};
    return tdb_commit_record(db, &r);
}

/* A writer process: waits for the go byte, commits n records, exits 0
 * when every commit succeeded. */
static void writer(const char *path, int who, int n, int go_fd) {
    char go;
    if (read(go_fd, &go, 1) != 1) _exit(3);
    /* Both writers create the file and its schema at once, too. */
    tdb_db *db = open_or_fail(path);
    if (!db) _exit(2);
    if (tdb_commit_workload(db, WKEY, "reliability", NULL, 0) <= 0) {
        fprintf(stderr, "writer %d: %s\n", who, tdb_errmsg(db));
        _exit(1);
    }
    for (int i = 0; i < n; i++) {
        if (commit_one(db, who, i) <= 0) {
            fprintf(stderr, "writer %d, record %d: %s\n", who, i, tdb_errmsg(db));
            _exit(1);
        }
    }
    tdb_close(db);
    _exit(0);
}

static void test_two_writers_lose_nothing(void **state) {
    (void)state;
    char dir[64], path[128];
    tdbt_tmpdir(dir, sizeof dir);
    tdbt_path(path, sizeof path, dir, "r.db");
    enum { N = 300 };
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pid[2];
    for (int w = 0; w < 2; w++) {
        pid[w] = fork();
        assert_true(pid[w] >= 0);
        if (pid[w] == 0) {
            close(go[1]);
            writer(path, w, N, go[0]);
        }
    }
    close(go[0]);
    assert_int_equal(write(go[1], "gg", 2), 2); /* both start at once */
    close(go[1]);
    for (int w = 0; w < 2; w++) {
        int status;
        assert_int_equal(waitpid(pid[w], &status, 0), pid[w]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    tdb_db *db = open_or_fail(path);
    assert_non_null(db);
    tdb_history_point *h;
    int n = tdb_history(db, WKEY, TGT, &h);
    assert_int_equal(n, 2 * N);
    /* every record of both writers, each once */
    int seen[2][N] = {{0}};
    for (int i = 0; i < n; i++) {
        tdb_record r;
        assert_int_equal(tdb_get_record(db, h[i].record_id, &r), 1);
        int who, k;
        assert_int_equal(sscanf(r.error_msg, "w%d-%d", &who, &k), 2);
        assert_true(who >= 0 && who < 2 && k >= 0 && k < N);
        seen[who][k]++;
        tdb_record_clear(&r);
    }
    for (int w = 0; w < 2; w++)
        for (int k = 0; k < N; k++) assert_int_equal(seen[w][k], 1);
    assert_int_equal(tdb_check(db), 0);
    free(h);
    tdb_close(db);
    tdbt_rmdir(dir);
}

/* The victim commits until killed, reporting each committed id on fd. */
static void victim(const char *path, int fd) {
    tdb_db *db = open_or_fail(path);
    if (!db) _exit(2);
    for (int i = 0;; i++) {
        int64_t id = commit_one(db, 9, i);
        if (id <= 0) _exit(1);
        if (write(fd, &id, sizeof id) != (ssize_t)sizeof id) _exit(3);
    }
}

static void test_sigkill_mid_commit_keeps_committed(void **state) {
    (void)state;
    char dir[64], path[128];
    tdbt_tmpdir(dir, sizeof dir);
    tdbt_path(path, sizeof path, dir, "k.db");
    tdb_db *db = open_or_fail(path);
    assert_non_null(db);
    assert_true(tdb_commit_workload(db, WKEY, "reliability", NULL, 0) > 0);
    tdb_close(db);
    uint64_t rng = tu_seed() | 1;
    int64_t total_reported = 0;
    for (int round = 0; round < 4; round++) {
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(p[0]);
            victim(path, p[1]);
        }
        close(p[1]);
        int64_t *ids = malloc(sizeof(int64_t) * 100000);
        int nids = 0;
        /* let it commit a while, then kill it at a random moment */
        int want = 20 + (int)(tu_rand_u64(&rng) % 40);
        while (nids < want && read(p[0], &ids[nids], sizeof *ids) == (ssize_t)sizeof *ids) nids++;
        struct timespec ts = {0, (long)(tu_rand_u64(&rng) % 3000000)};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        while (nids < 100000 && read(p[0], &ids[nids], sizeof *ids) == (ssize_t)sizeof *ids) nids++;
        close(p[0]);
        assert_true(nids >= want);

        db = open_or_fail(path);
        assert_non_null(db);
        assert_int_equal(tdb_check(db), 0);
        for (int i = 0; i < nids; i++) {
            tdb_record r;
            assert_int_equal(tdb_get_record(db, ids[i], &r), 1);
            tdb_record_clear(&r);
        }
        total_reported += nids;
        tdb_stats s;
        assert_int_equal(tdb_get_stats(db, &s), 0);
        /* at most one more per round: committed, killed before reporting */
        assert_true(s.records >= total_reported && s.records <= total_reported + round + 1);
        tdb_close(db);
        free(ids);
    }
    tdbt_rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_writers_lose_nothing),
        cmocka_unit_test(test_sigkill_mid_commit_keeps_committed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
