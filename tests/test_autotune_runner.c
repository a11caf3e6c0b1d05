/*
 * tests/test_autotune_runner.c — measurement in a program that never calls
 * tune_runner_maybe_run (a host embedding Loom): the runners are the
 * loom-runner program, found beside libloom. An ops workload, a graph
 * group's "onnx(" key (its builder lives in libloom) and a plugin's
 * operator (loom-runner loads the plugin too) are measured and checked
 * against the reference; a builder this program registered outside a
 * plugin is refused, naming the workload and both ways out; LOOM_RUNNER
 * naming a missing or non-executable file is an error naming it, and
 * naming loom-runner works; with libloom where no loom-runner lies beside
 * it, the error lists the places tried, a program that called
 * tune_runner_maybe_run is re-executed instead, and a loom-runner in
 * ../libexec is found. Were the runners this program re-executed,
 * it would run its tests again instead of serving: nothing would
 * measure.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "custom_mmb.h"
#include "testutil.h"
#include "loom/autotune.h"

#define MM "matmul(M=32,N=32,K=32)"
#define GROUP                                                                                  \
    "onnx(opset=13;x v0:float[2,3,16];w v1:float[16];n v2=Add(v0,v1);n v3=Relu(v2);out v3)"
#define PLUGIN_KEY "user.sqnorm_rows(M=8,N=64)"
#define HOST_KEY "test.mmb(M=16,N=32,K=24)"

static tune_measure_options mopts(void) {
    tune_measure_options o;
    memset(&o, 0, sizeof o);
    o.threads = 2;
    o.build_timeout = 20;
    o.run_timeout = 5;
    o.repeat = 2;
    o.num_threads = 1;
    o.check = 1;
    return o;
}

/* Measures key's default schedule twice (two runners), and a log that
 * does not apply: the first two time and match the reference, the third
 * is an instantiation error from the runner. */
static void measure_default(const char *key) {
    char *err = NULL;
    tune_measure_options o = mopts();
    tune_measurer *m = tune_measurer_new(key, "llvm", &o, &err);
    if (!m) fail_msg("%s: %s", key, err);
    char *steps = tune_default_steps(key, "llvm");
    assert_non_null(steps);
    const char *logs[] = {steps, steps, "[{\"kind\":\"split\",\"stage\":9,\"iter\":0,\"factor\":4}]"};
    tune_result res[3];
    assert_int_equal(tune_measure(m, 3, logs, NULL, 0, res), 0);
    for (int i = 0; i < 2; i++) {
        if (res[i].error_code) fail_msg("%s: %s", key, res[i].error_msg);
        assert_true(res[i].median > 0);
        assert_true(res[i].checked);
    }
    assert_int_equal(res[2].error_code, TUNE_ERR_INSTANTIATION);
    tune_measurer_free(m);
    free(steps);
}

static void test_ops_workload(void **st) {
    (void)st;
    measure_default(MM);
}

static void test_graph_group(void **st) {
    (void)st;
    measure_default(GROUP);
}

/* A short tuning run end to end (search, measurement, checks). */
static void test_tune_task(void **st) {
    (void)st;
    tune_options o;
    memset(&o, 0, sizeof o);
    o.trials = 4;
    o.per_round = 4;
    o.population = 32;
    o.generations = 1;
    o.seed = 3;
    o.measure = mopts();
    tune_summary sum;
    char *err = NULL;
    if (tune_task(MM, "llvm", &o, &sum, &err)) fail_msg("%s", err);
    assert_int_equal(sum.measured, 4);
    assert_true(sum.valid >= 1);
    free(sum.best_steps_json);
}

static void test_plugin(void **st) {
    (void)st;
    char path[4200], *err = NULL;
    snprintf(path, sizeof path, "%s/libloom_plugin_example.so", tu_bindir());
    if (tune_load_plugin(path, &err)) fail_msg("%s", err);
    measure_default(PLUGIN_KEY);
}

static void test_host_builder_refused(void **st) {
    (void)st;
    assert_int_equal(tune_register_builder("test.mmb", custom_mmb_build), 0);
    char *err = NULL;
    tune_measure_options o = mopts();
    assert_null(tune_measurer_new(HOST_KEY, "llvm", &o, &err));
    tu_assert_msg_has(err, "workload '" HOST_KEY "'", "tune_register_builder",
                      "loom-runner process cannot have", "register it from a plugin (tune_load_plugin)",
                      "tune_runner_maybe_run(argc, argv)");
    free(err);
    err = NULL;
    /* tune_task says the same. */
    tune_options to;
    memset(&to, 0, sizeof to);
    to.trials = 2;
    to.measure = o;
    tune_summary sum;
    assert_int_equal(tune_task(HOST_KEY, "llvm", &to, &sum, &err), -1);
    tu_assert_msg_has(err, HOST_KEY, "register it from a plugin", "tune_runner_maybe_run");
    free(err);
}

static void test_runner_env(void **st) {
    (void)st;
    char *err = NULL;
    tune_measure_options o = mopts();
    setenv(TUNE_RUNNER_ENV, "/nonexistent/loom-runner", 1);
    assert_null(tune_measurer_new(MM, "llvm", &o, &err));
    tu_assert_msg_has(err, "LOOM_RUNNER names '/nonexistent/loom-runner'", "no program to run",
                      "No such file");
    free(err);
    err = NULL;
    /* the tests run in the source tree */
    setenv(TUNE_RUNNER_ENV, "CMakeLists.txt", 1);
    assert_null(tune_measurer_new(MM, "llvm", &o, &err));
    tu_assert_msg_has(err, "LOOM_RUNNER names 'CMakeLists.txt'", "Permission denied");
    free(err);
    err = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/loom-runner", tu_bindir());
    setenv(TUNE_RUNNER_ENV, path, 1);
    measure_default(MM);
    unsetenv(TUNE_RUNNER_ENV);
}

/* Copies file `from` to `to` with its mode (a shell command). */
static void copy_file(const char *from, const char *to) {
    char out[4096];
    if (tu_run(out, sizeof out, "cp '%s' '%s'", from, to)) fail_msg("cp: %s", out);
}

/* This program in a child process (child_main below) with the copy of
 * libloom in dir/lib, where no loom-runner lies beside it. */
static void run_child(char *out, size_t cap, const char *dir, const char *mode) {
    tu_run(out, cap, "env -u " TUNE_RUNNER_ENV " LD_LIBRARY_PATH='%s/lib' '%s/test_autotune_runner' %s '%s'",
           dir, tu_bindir(), mode, MM);
}

static void test_runner_not_found(void **st) {
    (void)st;
    char dir[] = "/tmp/loom_runner_XXXXXX", path[4200], lib[4200], out[8192];
    assert_non_null(mkdtemp(dir));
    snprintf(lib, sizeof lib, "%s/lib", dir);
    assert_int_equal(mkdir(lib, 0700), 0);
    snprintf(path, sizeof path, "%s/libloom.so.0", tu_bindir());
    snprintf(lib, sizeof lib, "%s/lib/libloom.so.0", dir);
    copy_file(path, lib);
    run_child(out, sizeof out, dir, "--measure");
    char want[16384], real[PATH_MAX];
    /* the library names the directory by its real path */
    assert_non_null(realpath(dir, real));
    snprintf(want, sizeof want,
             "no loom-runner program to measure with (tried %s/lib/../libexec/loom-runner, "
             "%s/lib/../bin/loom-runner, %s/lib/loom-runner): install it beside libloom, or set "
             "LOOM_RUNNER to its path",
             real, real, real);
    tu_assert_msg_has(out, want);
    /* A program that serves runners is re-executed instead. */
    run_child(out, sizeof out, dir, "--serve-measure");
    tu_assert_msg_has(out, "measured: ok");
    /* Installed in libexec, it is found there. */
    snprintf(lib, sizeof lib, "%s/libexec", dir);
    assert_int_equal(mkdir(lib, 0700), 0);
    snprintf(path, sizeof path, "%s/loom-runner", tu_bindir());
    snprintf(lib, sizeof lib, "%s/libexec/loom-runner", dir);
    copy_file(path, lib);
    run_child(out, sizeof out, dir, "--measure");
    tu_assert_msg_has(out, "measured: ok");
    assert_int_equal(tu_rmtree(dir), 0);
}

/* loom-runner run by hand only says what it is. */
static void test_runner_usage(void **st) {
    (void)st;
    char out[4096];
    int rc = tu_run(out, sizeof out, "%s/loom-runner", tu_bindir());
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "usage: loom-runner --loom-tune-runner", "not meant to be run by hand");
    rc = tu_run(out, sizeof out, "%s/loom-runner --help", tu_bindir());
    assert_int_equal(rc, 0);
}

/* The child of test_runner_not_found: measures key's default schedule
 * once, after tune_runner_maybe_run when `serve`; prints "measured: ok" or
 * the error. */
static int child_main(const char *key, bool serve, int argc, char **argv) {
    if (serve) tune_runner_maybe_run(argc, argv);
    char *err = NULL, *steps = tune_default_steps(key, "llvm");
    tune_measure_options o = mopts();
    o.threads = 1;
    tune_measurer *m = steps ? tune_measurer_new(key, "llvm", &o, &err) : NULL;
    if (!m) {
        printf("error: %s\n", err ? err : "no default schedule");
        free(err);
        free(steps);
        return 1;
    }
    const char *logs[] = {steps};
    tune_result res;
    int rc = tune_measure(m, 1, logs, NULL, 0, &res);
    if (rc || res.error_code) printf("error: %s\n", rc ? "no runner" : res.error_msg);
    else printf("measured: ok\n");
    tune_measurer_free(m);
    free(steps);
    return rc || res.error_code;
}

int main(int argc, char **argv) {
    /* The --serve-measure child re-executed as a runner. */
    if (argc >= 2 && !strcmp(argv[1], TUNE_RUNNER_FLAG)) tune_runner_maybe_run(argc, argv);
    if (argc == 3 && !strcmp(argv[1], "--measure")) return child_main(argv[2], false, argc, argv);
    if (argc == 3 && !strcmp(argv[1], "--serve-measure"))
        return child_main(argv[2], true, argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops_workload),
        cmocka_unit_test(test_graph_group),
        cmocka_unit_test(test_tune_task),
        cmocka_unit_test(test_plugin),
        cmocka_unit_test(test_host_builder_refused),
        cmocka_unit_test(test_runner_env),
        cmocka_unit_test(test_runner_not_found),
        cmocka_unit_test(test_runner_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
