/*
 * A tuning database this process may not write (mode 0444 in a writable
 * directory): tdb_open in read-write mode refuses it at once, naming the
 * file and its mode, so `autotune` stops with exit status 2 before it
 * measures anything instead of losing every trial at commit; a read-only
 * open still reads it.
 *
 * Root writes a 0444 file regardless of its mode (open(O_RDWR) succeeds),
 * so when the test runs as root every check runs in a child that has
 * dropped to the unprivileged uid/gid 65534 first; it is skipped, saying
 * why, where no read-only file can be made (a setuid that fails, or a
 * process that still may write the file).
 */
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "test_tuning_db_util.h"

#define SKIP_STATUS 77 /* a child that cannot make the file read-only */

static char dir[64], ro[128], jl[160];
static char *key;

static int setup(void **state) {
    (void)state;
    (void)tu_bindir(); /* found while root: the children read it */
    tdbt_tmpdir(dir, sizeof dir);
    /* The unprivileged child creates the -wal and -shm files here. */
    assert_int_equal(chmod(dir, 0777), 0);
    tdbt_path(ro, sizeof ro, dir, "ro.db");
    tdbt_path(jl, sizeof jl, dir, "one.jsonl");
    key = tdbt_key("matmul", "M=4,N=4,K=4");
    char *err = NULL;
    tdb_db *db = tdb_open(ro, NULL, &err);
    if (!db) fprintf(stderr, "%s\n", err);
    assert_non_null(db);
    /* The workload is stored, as in a database tuned before: autotune's
     * first write is then a trial's commit, after measuring. */
    assert_true(tdb_commit_workload_key(db, key) > 0);
    char *log = tdbt_log(key, 2, 2);
    double lat = 1e-6;
    tdb_record_in r = {.workload_key = key,
                       .target = "llvm -mcpu=test_ro",
                       .steps_json = log,
                       .nlatencies = 1,
                       .latencies = &lat};
    assert_true(tdb_commit_record(db, &r) > 0);
    FILE *f = fopen(jl, "w");
    assert_non_null(f);
    assert_int_equal(tdb_export_jsonl(db, f), 1);
    fclose(f);
    assert_int_equal(chmod(jl, 0644), 0);
    free(log);
    tdb_close(db);
    char side[160];
    snprintf(side, sizeof side, "%s-wal", ro);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", ro);
    unlink(side);
    assert_int_equal(chmod(ro, 0444), 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tdbt_rmdir(dir);
    free(key);
    return 0;
}

/* In a child: gives up root (when root) and checks that the file is
 * read-only to what remains; exits SKIP_STATUS with a line on fd when it
 * cannot. */
static void child_drop_privileges(int fd) {
    if (geteuid() == 0 &&
        (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) {
        dprintf(fd, "cannot drop root privileges to uid 65534");
        _exit(SKIP_STATUS);
    }
    if (access(ro, W_OK) == 0) {
        dprintf(fd, "uid %u may write %s despite its mode 0444", (unsigned)geteuid(), ro);
        _exit(SKIP_STATUS);
    }
}

/* Reads everything from fd into out; waits for pid; its exit status (-1:
 * killed). */
static int collect(pid_t pid, int fd, char *out, size_t size) {
    size_t n = 0;
    ssize_t k;
    while (n < size - 1 && (k = read(fd, out + n, size - 1 - n)) > 0) n += (size_t)k;
    out[n] = 0;
    close(fd);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void skip_if(int status, const char *why) {
    if (status == SKIP_STATUS) {
        fprintf(stderr, "skipped: %s\n", why);
        skip();
    }
}

/* The library: read-write refused with the reason, read-only fine. The
 * child reports "opened" or the error on the pipe. */
static void test_open_refuses_readonly_file(void **state) {
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        child_drop_privileges(p[1]);
        char *err = NULL;
        tdb_db *db = tdb_open(ro, NULL, &err);
        dprintf(p[1], "rw: %s\n", db ? "opened" : err);
        tdb_close(db);
        free(err);
        db = tdb_open(ro, &(tdb_open_options){.readonly = true}, &err);
        tdb_stats st = {0};
        const char *got = db ? (tdb_get_stats(db, &st) ? tdb_errmsg(db) : "opened") : err;
        dprintf(p[1], "ro: %s records=%lld\n", got, (long long)st.records);
        tdb_close(db);
        free(err);
        _exit(0);
    }
    close(p[1]);
    char out[4096];
    int rc = collect(pid, p[0], out, sizeof out);
    skip_if(rc, out);
    assert_int_equal(rc, 0);
    tu_assert_msg_has(out, "rw: open: tuning db '", ro, "' is read-only (file mode 0444)",
                      "cannot write records; make it writable or open it read-only",
                      "ro: opened records=1");
}

/* Runs tools/NAME with args (NULL-terminated) in a child without root;
 * its output (stdout and stderr) in out; its exit status. */
static int run_tool(char *out, size_t size, const char *name, const char *const *args) {
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        child_drop_privileges(p[1]);
        char tool[PATH_MAX + 16];
        snprintf(tool, sizeof tool, "%s/%s", tu_bindir(), name);
        if (access(tool, X_OK)) {
            dprintf(p[1], "%s is not executable by uid %u", tool, (unsigned)geteuid());
            _exit(SKIP_STATUS);
        }
        dup2(p[1], 1);
        dup2(p[1], 2);
        unsetenv("LOOM_TUNEDB");
        const char *argv[32] = {tool};
        for (int i = 0; args[i] && i < 30; i++) argv[i + 1] = args[i];
        execv(tool, (char *const *)argv);
        dprintf(2, "cannot run %s\n", tool);
        _exit(126);
    }
    close(p[1]);
    return collect(pid, p[0], out, size);
}

static void test_cli_refuses_before_measuring(void **state) {
    (void)state;
    char out[65536];
    int rc = run_tool(out, sizeof out, "autotune",
                      (const char *const[]){"--op", "matmul", "--shape", "M=4,N=4,K=4",
                                            "--trials", "4", "--no-model", "--db", ro, NULL});
    skip_if(rc, out);
    if (rc != 2) fprintf(stderr, "%s\n", out);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "autotune: cannot open the database: open: tuning db '", ro,
                      "is read-only (file mode 0444)", "make it writable or open it read-only");
    /* refused before the first candidate was measured */
    assert_null(strstr(out, "trial"));
    assert_null(strstr(out, "cannot commit"));

    rc = run_tool(out, sizeof out, "tunedb", (const char *const[]){"--db", ro, "import", jl, NULL});
    skip_if(rc, out);
    assert_int_equal(rc, 1);
    tu_assert_msg_has(out, ro, "is read-only (file mode 0444)");
    /* reading needs no write access */
    rc = run_tool(out, sizeof out, "tunedb", (const char *const[]){"--db", ro, "stats", NULL});
    skip_if(rc, out);
    assert_int_equal(rc, 0);
    tu_assert_msg_has(out, "records         1 (0 failed)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_refuses_readonly_file),
        cmocka_unit_test(test_cli_refuses_before_measuring),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
