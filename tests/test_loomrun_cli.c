/*
 * The whole-model commands as a user drives them: loomrun compiles and
 * runs a committed model and checks it against ONNX Runtime's output,
 * writes .npy, reads .pb/.npy inputs; autotune --model tunes a model's
 * tasks; and every bad input a user can give is refused with a message
 * naming the file, node, input or target (exit status 2), never a crash.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "onnx_writer.h"
#include "testutil.h"

#include "loom/autotune.h"
#include "loom/graph.h"
#include "loom/tuning_db.h"

#define CNN "tests/data/cnn_small"

static char out[65536];
static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/loom_loomrun_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rmtree(dir);
}

static void test_check_and_output(void **state)
{
    (void)state;
    int rc = tu_run(out, sizeof out, "%s/loomrun " CNN "/model.onnx --check " CNN
                    "/test_data_set_0 --output %s/y.npy --bench 3 --explain",
                    tu_bindir(), dir);
    if (rc != 0) fail_msg("%s", out);
    /* The residual blocks' 16-channel convolutions run on NCHW[x]c
     * (graph/pass_alter_layout.c), fused with their Add and Relu. */
    tu_assert_msg_has(out, "compiled", "kernels", "ConvNCHWc+Add+Relu", "0 of 10 beyond",
                      "latency over 3 runs", "intermediate values in");
    char path[512], head[128] = {0};
    snprintf(path, sizeof path, "%s/y.npy", dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_true(fread(head, 1, sizeof head - 1, f) > 10);
    fclose(f);
    assert_memory_equal(head, "\x93NUMPY", 6);
    assert_non_null(strstr(head + 10, "'shape': (1, 10)"));
    /* The .npy written reads back as an input of the right shape. */
    rc = tu_run(out, sizeof out, "%s/loomrun " CNN "/model.onnx --input input=%s/y.npy", tu_bindir(),
                dir);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "input 0 ('input') has shape [1,10], the model's is [1,3,32,32]");
    rc = tu_run(out, sizeof out, "%s/loomrun " CNN "/model.onnx --input input=" CNN
                "/test_data_set_0/input_0.pb --output %s/z.npy", tu_bindir(), dir);
    if (rc != 0) fail_msg("%s", out);
}

/* An empty input (x [0, 3]) through Transpose: no kernel, the empty
 * output written as .npy of shape (3, 0), and that .npy read back as an
 * input (refused by its shape, not by its emptiness). */
static void test_empty_tensors(void **state)
{
    (void)state;
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 2, (int64_t[]){0, 3});
    ow_node_add(w, "", "Transpose", "x", "y");
    ow_output(w, "y");
    char model[512], path[512], head[128] = {0};
    snprintf(model, sizeof model, "%s/empty.onnx", dir);
    ow_write(w, model);
    ow_free(w);
    int rc = tu_run(out, sizeof out, "%s/loomrun %s --output %s/y.npy", tu_bindir(), model, dir);
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "0 kernels");
    snprintf(path, sizeof path, "%s/y.npy", dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_true(fread(head, 1, sizeof head - 1, f) > 10);
    fclose(f);
    assert_non_null(strstr(head + 10, "'shape': (3, 0)"));
    rc = tu_run(out, sizeof out, "%s/loomrun %s --input x=%s", tu_bindir(), model, path);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "input 0 ('x') has shape [3,0], the model's is [0,3]");
}

static void test_bad_files(void **state)
{
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "head -c 300 " CNN "/model.onnx > %s/cut.onnx; echo hello > %s/text.onnx",
             dir, dir);
    assert_int_equal(system(cmd), 0);
    int rc = tu_run(out, sizeof out, "%s/loomrun %s/cut.onnx", tu_bindir(), dir);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "loomrun: ", "cut.onnx");
    rc = tu_run(out, sizeof out, "%s/loomrun %s/text.onnx", tu_bindir(), dir);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "text.onnx");
    rc = tu_run(out, sizeof out, "%s/loomrun %s/none.onnx", tu_bindir(), dir);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "none.onnx");
    rc = tu_run(out, sizeof out, "%s/loomrun " CNN "/model.onnx --input nope=x.npy", tu_bindir());
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "--input 'nope=x.npy': the model has no input of that name");
    assert_null(strstr(out, "compiled ")); /* said before compiling */
    rc = tu_run(out, sizeof out, "%s/loomrun " CNN "/model.onnx --bench 0", tu_bindir());
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "--bench: '0' is not an integer from 1");
    rc = tu_run(out, sizeof out, "%s/loomrun", tu_bindir());
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "loomrun: no model given", "usage: loomrun MODEL.onnx");
    rc = tu_run(out, sizeof out, "%s/loomrun " CNN "/model.onnx --input foo", tu_bindir());
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "--input 'foo': expected NAME=FILE");
    assert_null(strstr(out, "compiled "));
    /* an input file that is not what its extension says */
    snprintf(cmd, sizeof cmd, "echo hello > %s/text.npy", dir);
    assert_int_equal(system(cmd), 0);
    rc = tu_run(out, sizeof out, "%s/loomrun " CNN "/model.onnx --input input=%s/text.npy", tu_bindir(),
                dir);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "text.npy: not an .npy file (no \\x93NUMPY magic)");
    rc = tu_run(out, sizeof out, "%s/loomrun " CNN "/model.onnx --input input=%s/text.onnx", tu_bindir(),
                dir);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "text.onnx: cannot parse as an ONNX TensorProto");
}

/* Writes model w (freed) to DIR/name; its path in path. */
static void save(ow_model *w, const char *name, char *path, size_t n)
{
    snprintf(path, n, "%s/%s", dir, name);
    ow_write(w, path);
    ow_free(w);
}

/* Every unsupported operator at once, each with its opset and nodes. */
static void test_unsupported_ops(void **state)
{
    (void)state;
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 2, (int64_t[]){2, 3});
    ow_node_add(w, "", "Unique", "x", "a");
    ow_node_add(w, "", "Relu", "a", "b");
    ow_node_add(w, "", "Unique", "b", "c");
    ow_node_add(w, "", "NonZero", "c", "y");
    ow_output(w, "y");
    char path[512];
    save(w, "unsup.onnx", path, sizeof path);
    int rc = tu_run(out, sizeof out, "%s/loomrun %s", tu_bindir(), path);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "unsupported operators: ", "Unique (node 'n0', opset 13)",
                      "Unique (node 'n2', opset 13)", "NonZero (node 'n3', opset 13)");
}

/* A dynamic dimension needs --shape; with it the model runs. An attribute
 * value Loom does not know names the node and the attribute. */
static void test_dynamic_and_attrs(void **state)
{
    (void)state;
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 2, (int64_t[]){-1, 3});
    ow_node_add(w, "", "Relu", "x", "y");
    ow_output(w, "y");
    char path[512];
    save(w, "dyn.onnx", path, sizeof path);
    int rc = tu_run(out, sizeof out, "%s/loomrun %s", tu_bindir(), path);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "'x'", "dynamic", "--shape x=");
    rc = tu_run(out, sizeof out, "%s/loomrun %s --shape x=4x3", tu_bindir(), path);
    if (rc != 0) fail_msg("%s", out);
    rc = tu_run(out, sizeof out, "%s/loomrun %s --shape x=4x5", tu_bindir(), path);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "'x'");
    rc = tu_run(out, sizeof out, "%s/loomrun %s --shape x=4xz", tu_bindir(), path);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "--shape");

    w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 4, (int64_t[]){1, 2, 5, 5});
    ow_init(w, "wt", GR_FLOAT, 4, (int64_t[]){2, 2, 3, 3}, (float[36]){0}, 36 * sizeof(float));
    ow_node *n = ow_node_add(w, "", "Conv", "x,wt", "y");
    ow_attr_str(n, "auto_pad", "BOGUS");
    ow_output(w, "y");
    save(w, "attr.onnx", path, sizeof path);
    rc = tu_run(out, sizeof out, "%s/loomrun %s", tu_bindir(), path);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "(Conv)", "auto_pad", "BOGUS");
}

/* A database whose records of the model are all for another target. */
static void test_db_other_target(void **state)
{
    (void)state;
    char *err = NULL;
    gr_model *m = gr_model_load(CNN "/model.onnx", &err);
    if (!m) fail_msg("%s", err);
    gr_task *tasks;
    int n;
    if (gr_extract_tasks(m, NULL, &tasks, &n, &err) != 0) fail_msg("%s", err);
    assert_true(n > 3);
    char db_path[512];
    snprintf(db_path, sizeof db_path, "%s/other.db", dir);
    tdb_db *db = tdb_open(db_path, NULL, &err);
    if (!db) fail_msg("%s", err);
    assert_true(tdb_commit_workload_key(db, tasks[0].key) > 0);
    double lat[3] = {1e-3, 1e-3, 1e-3};
    tdb_record_in r = {.workload_key = tasks[0].key, .target = "llvm -mcpu=some-other-cpu",
                       .steps_json = "[]", .nlatencies = 3, .latencies = lat};
    if (tdb_commit_record(db, &r) <= 0) fail_msg("%s", tdb_errmsg(db));
    tdb_close(db);
    gr_tasks_free(tasks, n);
    gr_model_free(m);
    int rc = tu_run(out, sizeof out, "%s/loomrun " CNN "/model.onnx --db %s", tu_bindir(), db_path);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "only for target 'llvm -mcpu=some-other-cpu'", "autotune --model");
    rc = tu_run(out, sizeof out, "%s/loomrun " CNN "/model.onnx --db %s/missing.db", tu_bindir(),
                dir);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "missing.db", "autotune --model");
}

/* autotune --model: the tasks, a tuned record per task in the database,
 * and loomrun then runs them. */
static void test_autotune_model(void **state)
{
    (void)state;
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 2, (int64_t[]){64, 64});
    ow_init(w, "b", GR_FLOAT, 1, (int64_t[]){64}, (float[64]){0}, 64 * sizeof(float));
    ow_node_add(w, "", "MatMul", "x,x", "p");
    ow_node_add(w, "", "Add", "p,b", "q");
    ow_node_add(w, "", "Relu", "q", "y");
    ow_output(w, "y");
    char path[512];
    save(w, "mm.onnx", path, sizeof path);
    int rc = tu_run(out, sizeof out, "%s/autotune --model %s --trials 4 --per-round 4 --retime 0 "
                    "--db %s/mm.db --jobs 1", tu_bindir(), path, dir);
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "1 tasks (1 fused groups)", "MatMul+Add+Relu", "model estimate");
    rc = tu_run(out, sizeof out, "%s/loomrun %s --db %s/mm.db --explain", tu_bindir(), path, dir);
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "1 tuned, 0 default", "tuned: record");
    assert_null(strstr(out, "did not build"));
    /* A better record that no longer replays gives way to the next one. */
    const char *key = "onnx(opset=13;x v0:float[64,64];w v1:float[64];n v2=MatMul(v0,v0);"
                      "n v3=Add(v2,v1);n v4=Relu(v3);out v4)";
    char db_path[512], *err = NULL;
    snprintf(db_path, sizeof db_path, "%s/mm.db", dir);
    char *tkey = tune_record_key("llvm", 0, &err); /* autotune's and loomrun's default threads */
    if (!tkey) fail_msg("%s", err);
    tdb_db *db = tdb_open(db_path, NULL, &err);
    if (!db) fail_msg("%s", err);
    double lat[3] = {1e-9, 1e-9, 1e-9};
    tdb_record_in bad = {.workload_key = key, .target = tkey, .nlatencies = 3, .latencies = lat,
                         .steps_json = "[]"};
    int64_t id = tdb_commit_record(db, &bad);
    if (id <= 0) fail_msg("%s", tdb_errmsg(db));
    tdb_close(db);
    free(tkey);
    /* The database checks a log when it is committed: a log that no
     * longer replays comes from another version's rules, written here
     * behind its back. */
    sqlite3 *sq;
    assert_int_equal(sqlite3_open(db_path, &sq), SQLITE_OK);
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE records SET steps = '[{\"kind\":\"split\",\"stage\":99,"
             "\"iter\":0,\"factor\":2}]' WHERE id = %lld", (long long)id);
    assert_int_equal(sqlite3_exec(sq, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(sq);
    rc = tu_run(out, sizeof out, "%s/loomrun %s --db %s/mm.db --explain", tu_bindir(), path, dir);
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "1 tuned, 0 default", "tuned: record", "better records did not build");
    /* A fused group's key is a workload key like any other for tunedb. */
    rc = tu_run(out, sizeof out, "%s/tunedb --db %s/mm.db list", tu_bindir(), dir);
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "onnx(opset=13;x v0:float[64,64];w v1:float[64];n v2=MatMul(v0,v0)");
    rc = tu_run(out, sizeof out, "%s/tunedb --db %s/mm.db apply --workload "
                "'onnx(opset=13;x v0:float[64,64];w v1:float[64];n v2=MatMul(v0,v0);"
                "n v3=Add(v2,v1);n v4=Relu(v3);out v4)'", tu_bindir(), dir);
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "applied record", "correct");
    rc = tu_run(out, sizeof out, "%s/autotune --model %s --op matmul --trials 4 --db %s/x.db",
                tu_bindir(), path, dir);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "--model tunes the tasks of a model; --op does not apply");
    rc = tu_run(out, sizeof out, "%s/autotune --op matmul --shape M=8 --shape N=8 --trials 4 "
                "--db %s/x.db", tu_bindir(), dir);
    assert_int_equal(rc, 2);
    tu_assert_msg_has(out, "--shape is given more than once");
}

/* A model of one kernel, y = x x for an n x n input, saved as `name`. */
static void square_matmul(int64_t n, const char *name, char *path, size_t cap)
{
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 2, (int64_t[]){n, n});
    ow_node_add(w, "", "MatMul", "x,x", "y");
    ow_output(w, "y");
    save(w, name, path, cap);
}

/* Records are kept per thread count (tune_threads_key): a model tuned on
 * one thread and run on two runs its defaults, and says why; tuned on two
 * as well, each count runs its own records. */
static void test_db_threads(void **state)
{
    (void)state;
    char path[512];
    square_matmul(48, "th.onnx", path, sizeof path);
    const char *tune = "%s/autotune --model %s --trials 2 --per-round 2 --retime 0 --no-model "
                       "--db %s/th.db --jobs 1 --threads %d";
    int rc = tu_run(out, sizeof out, tune, tu_bindir(), path, dir, 1);
    if (rc != 0) fail_msg("%s", out);
    char *one = tdb_host_target(), under[300];
    snprintf(under, sizeof under, "th.db under '%s'\n", one); /* 1 thread: the plain key */
    tu_assert_msg_has(out, under);
    rc = tu_run(out, sizeof out, "%s/loomrun %s --db %s/th.db --threads 1", tu_bindir(), path, dir);
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "1 tuned, 0 default");
    assert_null(strstr(out, "note:"));
    rc = tu_run(out, sizeof out, "%s/loomrun %s --db %s/th.db --threads 2", tu_bindir(), path, dir);
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "0 tuned, 1 default", "loomrun: note: ", one, "-num-cores 2",
                      "this run's 2 threads", "every kernel runs its default schedule",
                      "autotune --threads 2");
    rc = tu_run(out, sizeof out, tune, tu_bindir(), path, dir, 2);
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "records go to ", "th.db under '", one, " -num-cores 2'");
    rc = tu_run(out, sizeof out, "%s/loomrun %s --db %s/th.db --threads 2 --explain", tu_bindir(),
                path, dir);
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "1 tuned, 0 default");
    assert_null(strstr(out, "note:"));
    rc = tu_run(out, sizeof out, "%s/tunedb --db %s/th.db list", tu_bindir(), dir);
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, one, "-num-cores 2");
    free(one);
}

/* Records tuned against an older default: a database whose records never
 * timed the kernel's current default schedule (made here by a search with
 * neither the default nor the heuristic programs) is marked by loomrun,
 * and autotune --resume times that default first, one trial. */
static void test_db_stale(void **state)
{
    (void)state;
    char path[512];
    square_matmul(40, "st.onnx", path, sizeof path);
    int rc = tu_run(out, sizeof out,
                    "%s/autotune --model %s --trials 2 --per-round 2 --retime 0 --no-model "
                    "--skip-default --no-heuristic --seed 3 --db %s/st.db --jobs 1 --threads 1",
                    tu_bindir(), path, dir);
    if (rc != 0) fail_msg("%s", out);
    rc = tu_run(out, sizeof out, "%s/loomrun %s --db %s/st.db --threads 1 --explain --bench 2",
                tu_bindir(), path, dir);
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "1 tuned, 0 default",
                      "loomrun: note: 1 of the 1 tuned kernels run records that were never "
                      "timed against this Loom's default schedule",
                      "autotune --model ", "--resume, with this database and thread count, "
                      "times the current defaults (one trial each, counted in --trials: give "
                      "1 more than the database's trials)",
                      "this Loom's default schedule was never timed against it", "tuned*",
                      "tuned*: a record never timed against this Loom's default schedule");
    rc = tu_run(out, sizeof out,
                "%s/autotune --model %s --trials 3 --per-round 2 --retime 0 --no-model --resume "
                "--db %s/st.db --jobs 1 --threads 1",
                tu_bindir(), path, dir);
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "resume: 2 trials already in",
                      "resume: timed the current default schedule of 1 task whose records were "
                      "tuned against an older one");
    rc = tu_run(out, sizeof out, "%s/loomrun %s --db %s/st.db --threads 1 --explain", tu_bindir(),
                path, dir);
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "1 tuned, 0 default");
    assert_null(strstr(out, "note:"));
    assert_null(strstr(out, "never timed"));
    /* Once stored, the default is not timed again. */
    rc = tu_run(out, sizeof out,
                "%s/autotune --model %s --trials 4 --per-round 2 --retime 0 --no-model --resume "
                "--db %s/st.db --jobs 1 --threads 1",
                tu_bindir(), path, dir);
    if (rc != 0) fail_msg("%s", out);
    assert_null(strstr(out, "timed the current default"));
}

/* The runtime's environment variables: a value that is not a whole
 * number in range is ignored, and stderr says so (it once was silent). */
static void test_bad_env(void **state)
{
    (void)state;
    int rc = tu_run(out, sizeof out, "LOOM_NUM_THREADS=two %s/loomrun " CNN "/model.onnx",
                    tu_bindir());
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "loom: LOOM_NUM_THREADS='two' is not a whole number from 1 to 4096: "
                           "ignored, one thread per online core is used",
                      "compiled ");
    rc = tu_run(out, sizeof out, "LOOM_SPIN_US=-3 %s/loomrun " CNN "/model.onnx --threads 2",
                tu_bindir());
    if (rc != 0) fail_msg("%s", out);
    tu_assert_msg_has(out, "loom: LOOM_SPIN_US='-3' is not a whole number from 0 to 1000000: "
                           "ignored, the default spin is used");
    const char *first = strstr(out, "LOOM_SPIN_US");
    assert_null(strstr(first + 1, "LOOM_SPIN_US")); /* once */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_and_output), cmocka_unit_test(test_empty_tensors),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_unsupported_ops),  cmocka_unit_test(test_dynamic_and_attrs),
        cmocka_unit_test(test_db_other_target),  cmocka_unit_test(test_autotune_model),
        cmocka_unit_test(test_db_threads),
        cmocka_unit_test(test_db_stale),       cmocka_unit_test(test_bad_env),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
