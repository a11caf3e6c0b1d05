/*
 * The tuning database (loom/tuning_db.h): schema and migrations, commits
 * and queries (best-k, history, list, stats, prune) with targets kept
 * apart, applying the best record, export/import, cost-model blobs, and
 * clear errors for bad files, bad paths and bad records.
 */
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>

#include "test_tuning_db_util.h"
#include "tuning_db/tdb_internal.h"

#define TA "llvm -mcpu=test_a"
#define TB "llvm -mcpu=test_b"

typedef struct {
    char dir[64];
    char path[128];
    char *key; /* matmul 32x32x32 */
    tdb_db *db;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    tdbt_tmpdir(f->dir, sizeof f->dir);
    tdbt_path(f->path, sizeof f->path, f->dir, "t.db");
    f->key = tdbt_key("matmul", "M=32,N=32,K=32");
    char *err = NULL;
    f->db = tdb_open(f->path, NULL, &err);
    if (!f->db) fprintf(stderr, "%s\n", err);
    assert_non_null(f->db);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    tdb_close(f->db);
    tdbt_rmdir(f->dir);
    free(f->key);
    free(f);
    return 0;
}

static int64_t commit(fixture *f, const char *target, const char *log, double lat, int err) {
    double lats[3] = {lat * 0.9, lat, lat * 1.1};
    tdb_record_in r = {.workload_key = f->key,
                       .target = target,
                       .steps_json = log,
                       .nlatencies = err ? 0 : 3,
                       .latencies = lats,
                       .error_code = err,
                       .error_msg = err ? "build failed" : NULL};
    int64_t id = tdb_commit_record(f->db, &r);
    if (id < 0) fprintf(stderr, "%s\n", tdb_errmsg(f->db));
    assert_true(id > 0);
    return id;
}

static void test_open_creates_schema(void **state) {
    fixture *f = *state;
    assert_int_equal(tdb_schema_version(f->db), TDB_SCHEMA_VERSION);
    tdb_stats s;
    assert_int_equal(tdb_get_stats(f->db, &s), 0);
    assert_int_equal(s.schema_version, TDB_SCHEMA_VERSION);
    assert_int_equal(s.records, 0);
    assert_true(s.file_bytes > 0);
    assert_int_equal(tdb_check(f->db), 0);
    /* a workload from its key alone, once */
    int64_t w = tdb_commit_workload_key(f->db, f->key);
    assert_true(w > 0);
    assert_int_equal(tdb_commit_workload_key(f->db, f->key), w);
    assert_true(tdb_commit_workload_key(f->db, "matmul(M=0)") < 0);
    tu_assert_msg_has(tdb_errmsg(f->db), "commit_workload", "matmul(M=0)",
                      "ops registry cannot build it");
    assert_int_equal(tdb_get_stats(f->db, &s), 0);
    assert_int_equal(s.workloads, 1);
    /* a second handle on the same file sees the same schema */
    char *err = NULL;
    tdb_db *db2 = tdb_open(f->path, &(tdb_open_options){.readonly = true}, &err);
    assert_non_null(db2);
    assert_int_equal(tdb_schema_version(db2), TDB_SCHEMA_VERSION);
    tdb_close(db2);
}

static void test_best_k_targets_never_mix(void **state) {
    fixture *f = *state;
    char *l1 = tdbt_log(f->key, 4, 8), *l2 = tdbt_log(f->key, 8, 16), *l3 = tdbt_log(f->key, 2, 4);
    int64_t a1 = commit(f, TA, l1, 3e-3, 0);
    int64_t a2 = commit(f, TA, l2, 1e-3, 0);
    commit(f, TA, l3, 0, 7); /* a failed candidate never wins */
    int64_t b1 = commit(f, TB, l3, 0.5e-3, 0);
    tdb_record *r;
    int n = tdb_best(f->db, f->key, TA, 5, &r);
    assert_int_equal(n, 2);
    assert_int_equal(r[0].id, a2);
    assert_int_equal(r[1].id, a1);
    assert_string_equal(r[0].target, TA);
    assert_string_equal(r[0].steps_json, l2);
    assert_string_equal(r[0].op, "matmul");
    assert_int_equal(r[0].nlatencies, 3);
    assert_true(fabs(r[0].mean - 1e-3) < 1e-12);
    assert_true(fabs(r[0].flops - 2.0 * 32 * 32 * 32) < 1);
    assert_true(fabs(tdb_record_gflops(&r[0]) - 2.0 * 32 * 32 * 32 / 1e-3 * 1e-9) < 1e-6);
    assert_string_equal(r[0].loom_version, LOOM_VERSION_STRING);
    tdb_records_free(r, n);
    n = tdb_best(f->db, f->key, TB, 5, &r);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].id, b1);
    tdb_records_free(r, n);
    n = tdb_best(f->db, f->key, "llvm -mcpu=elsewhere", 5, &r);
    assert_int_equal(n, 0);
    assert_null(r);

    tdb_summary *s;
    n = tdb_list(f->db, NULL, &s);
    assert_int_equal(n, 2);
    assert_string_equal(s[0].target, TA);
    assert_int_equal(s[0].nrecords, 3);
    assert_int_equal(s[0].nvalid, 2);
    assert_true(fabs(s[0].best - 1e-3) < 1e-12);
    assert_int_equal(s[1].nrecords, 1);
    tdb_summaries_free(s, n);
    n = tdb_list(f->db, TB, &s);
    assert_int_equal(n, 1);
    tdb_summaries_free(s, n);

    tdb_history_point *h;
    n = tdb_history(f->db, f->key, TA, &h);
    assert_int_equal(n, 3);
    assert_true(fabs(h[0].best - 3e-3) < 1e-12);
    assert_true(fabs(h[1].best - 1e-3) < 1e-12);
    assert_true(isnan(h[2].latency));
    assert_true(fabs(h[2].best - 1e-3) < 1e-12);
    free(h);

    tdb_record one;
    assert_int_equal(tdb_get_record(f->db, b1, &one), 1);
    assert_string_equal(one.target, TB);
    tdb_record_clear(&one);
    assert_int_equal(tdb_get_record(f->db, 999999, &one), 0);
    free(l1);
    free(l2);
    free(l3);
}

/* tdb_has_steps finds a program by its log under one workload and
 * target, failed records too, and names a log that does not parse. */
static void test_has_steps(void **state) {
    fixture *f = *state;
    char *l1 = tdbt_log(f->key, 4, 8), *l2 = tdbt_log(f->key, 8, 16), *l3 = tdbt_log(f->key, 2, 4);
    commit(f, TA, l1, 3e-3, 0);
    commit(f, TA, l3, 0, 7);
    commit(f, TB, l2, 1e-3, 0);
    assert_int_equal(tdb_has_steps(f->db, f->key, TA, l1), 1);
    assert_int_equal(tdb_has_steps(f->db, f->key, TA, l3), 1); /* failed, but timed */
    assert_int_equal(tdb_has_steps(f->db, f->key, TA, l2), 0); /* only on TB */
    assert_int_equal(tdb_has_steps(f->db, f->key, TB, l2), 1);
    char *other = tdbt_key("matmul", "M=16,N=16,K=16");
    assert_int_equal(tdb_has_steps(f->db, other, TA, l1), 0);
    free(other);
    /* The same log written with other white space is the same program. */
    size_t n = strlen(l1);
    char *spaced = malloc(2 * n + 1), *o = spaced;
    for (size_t i = 0; i < n; i++) {
        *o++ = l1[i];
        if (l1[i] == ',') *o++ = ' ';
    }
    *o = 0;
    assert_int_equal(tdb_has_steps(f->db, f->key, TA, spaced), 1);
    free(spaced);
    assert_int_equal(tdb_has_steps(f->db, f->key, TA, "[{\"kind\": 1"), -1);
    assert_non_null(strstr(tdb_errmsg(f->db), "has_steps: "));
    assert_int_equal(tdb_has_steps(f->db, f->key, TA, NULL), -1);
    assert_non_null(
        strstr(tdb_errmsg(f->db), "has_steps: needs a workload key, a target and a step log"));
    free(l1);
    free(l2);
    free(l3);
}

/* The stored log replayed on a rebuilt workload lowers to the same
 * program as the schedule that wrote it. */
static void test_stored_log_replays_identically(void **state) {
    fixture *f = *state;
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_from_key(ctx, f->key);
    sch_schedule *s = ops_default_schedule(w, "llvm");
    assert_non_null(s);
    const char *text = sch_lower_text(s, w->nargs, w->args);
    assert_non_null(text);
    double lat = 1e-4;
    tdb_record_in in = {.workload_key = f->key,
                        .target = TA,
                        .nsteps = sch_num_steps(s),
                        .nlatencies = 1,
                        .latencies = &lat};
    sch_step *steps = calloc((size_t)in.nsteps + 1, sizeof *steps);
    for (int i = 0; i < in.nsteps; i++) steps[i] = *sch_get_step(s, i);
    in.steps = steps;
    int64_t id = tdb_commit_record(f->db, &in);
    assert_true(id > 0);

    te_ctx *ctx2 = te_ctx_new();
    tdb_record r;
    assert_int_equal(tdb_get_record(f->db, id, &r), 1);
    ops_workload *w2 = ops_from_key(ctx2, r.workload_key);
    int n;
    sch_step *parsed;
    assert_int_equal(tdb_steps_from_json(ctx2, r.steps_json, &n, &parsed), 0);
    sch_schedule *s2 = sch_replay(ctx2, w2->nouts, w2->outs, n, parsed);
    assert_non_null(s2);
    assert_string_equal(text, sch_lower_text(s2, w2->nargs, w2->args));
    tdb_record_clear(&r);
    free(steps);
    te_ctx_free(ctx2);
    te_ctx_free(ctx);
}

static void test_apply_best_and_fallback(void **state) {
    fixture *f = *state;
    char *target = tdb_host_target();
    assert_non_null(target);
    assert_non_null(strstr(target, "llvm -mcpu="));
    te_ctx *ctx = te_ctx_new();
    tdb_apply_info info;
    /* nothing stored: the default schedule, saying so */
    rt_module *m = tdb_apply_best(f->db, ctx, f->key, target, &info);
    assert_non_null(m);
    assert_true(info.fallback);
    assert_int_equal(info.record_id, -1);
    tu_assert_msg_has(info.message, "no record", "default schedule", target);
    assert_int_equal(ops_check_module(info.workload, m, NULL, tu_seed()), 0);
    rt_module_free(m);

    char *l1 = tdbt_log(f->key, 4, 8), *l2 = tdbt_log(f->key, 8, 16);
    commit(f, target, l1, 2e-3, 0);
    int64_t best = commit(f, target, l2, 1e-3, 0);
    commit(f, TA, l1, 1e-6, 0); /* faster, but another machine's */
    m = tdb_apply_best(f->db, ctx, f->key, target, &info);
    assert_non_null(m);
    assert_false(info.fallback);
    assert_int_equal(info.record_id, best);
    tu_assert_msg_has(info.message, "applied record");
    assert_int_equal(ops_check_module(info.workload, m, NULL, tu_seed()), 0);
    rt_module_free(m);

    /* one record built without the database, and its refusals */
    tdb_record *top = NULL;
    assert_int_equal(tdb_best(f->db, f->key, target, 1, &top), 1);
    ops_workload *w = ops_from_key(ctx, f->key);
    assert_non_null(w);
    m = tdb_build_record(ctx, w->nouts, w->outs, w->nargs, w->args, &top[0], "llvm", NULL);
    assert_non_null(m);
    assert_int_equal(ops_check_module(w, m, NULL, tu_seed()), 0);
    rt_module_free(m);
    assert_null(tdb_build_record(ctx, w->nouts, w->outs, w->nargs, w->args, NULL, "llvm", NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "tdb_build_record", "needs a record");
    tdb_record bad = top[0];
    bad.steps_json = "[{\"kind\":\"split\",\"stage\":99,\"iter\":0,\"factor\":2}]";
    assert_null(tdb_build_record(ctx, w->nouts, w->outs, w->nargs, w->args, &bad, "llvm", NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "stage");
    tdb_records_free(top, 1);

    /* a key the registry does not know */
    assert_null(tdb_apply_best(f->db, ctx, "nosuchop(X=1)", target, &info));
    tu_assert_msg_has(tdb_errmsg(f->db), "apply_best", "nosuchop");
    te_ctx_free(ctx);
    free(l1);
    free(l2);
    free(target);
}

/* A GPU's records are stored under its tdb_cuda_target key ("cuda sm_90
 * NAME"); applying them builds for that architecture ("cuda -arch=sm_90"),
 * not the key as a build target (which cg_build refuses): a tuned GPU
 * record is applied, not silently replaced by the default schedule. */
static void test_apply_best_gpu_key(void **state) {
    fixture *f = *state;
    char *gpu = tdb_cuda_target(0);
    if (gpu) {
        assert_true(strncmp(gpu, "cuda sm_", 8) == 0);
    } else {
        tu_assert_msg_has(rt_last_error(), "CUDA");
    }
    free(gpu);
    if (!rt_nvrtc_available()) {
        print_message("NVRTC not found (%s): GPU record not built\n", rt_last_error());
        return;
    }
    const char *key = "cuda sm_90 Test GPU 80GB";
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_from_key(ctx, f->key);
    sch_schedule *s = w ? ops_default_schedule(w, "cuda") : NULL;
    assert_non_null(s);
    char *log = tdb_schedule_to_json(s);
    int64_t id = commit(f, key, log, 1e-5, 0);
    tdb_apply_info info;
    rt_module *m = tdb_apply_best(f->db, ctx, f->key, key, &info);
    if (!m) fprintf(stderr, "%s\n", tdb_errmsg(f->db));
    assert_non_null(m);
    assert_false(info.fallback);
    assert_int_equal(info.record_id, id);
    assert_string_equal(rt_module_kind(m), "cuda");
    assert_string_equal(rt_module_get_text(m, "arch"), "sm_90");
    rt_module_free(m);
    /* A GPU key without an architecture is no build target: nothing is
     * stored for it and the default schedule cannot be built for it. */
    assert_null(tdb_apply_best(f->db, ctx, f->key, "cuda sm_ Test GPU", &info));
    tu_assert_msg_has(tdb_errmsg(f->db), "no record", "cuda sm_ Test GPU",
                      "the default schedule failed too", "-arch=sm_XX");
    free(log);
    te_ctx_free(ctx);
}

static void test_bad_records_refused(void **state) {
    fixture *f = *state;
    double lat = 1e-3;
    tdb_record_in r = {.workload_key = f->key,
                       .target = TA,
                       .steps_json = "[",
                       .nlatencies = 1,
                       .latencies = &lat};
    assert_true(tdb_commit_record(f->db, &r) < 0);
    tu_assert_msg_has(tdb_errmsg(f->db), "commit_record", "not valid JSON");
    r.steps_json = "[{\"kind\":\"tile\",\"stage\":2}]";
    assert_true(tdb_commit_record(f->db, &r) < 0);
    tu_assert_msg_has(tdb_errmsg(f->db), "unknown step kind 'tile'");
    /* a stage and an axis the workload does not have */
    r.steps_json = "[{\"kind\":\"split\",\"stage\":7,\"iter\":0,\"factor\":4}]";
    assert_true(tdb_commit_record(f->db, &r) < 0);
    tu_assert_msg_has(tdb_errmsg(f->db), "does not fit workload", "matmul", "no stage 7");
    r.steps_json = "[{\"kind\":\"split\",\"stage\":2,\"iter\":5,\"factor\":4}]";
    assert_true(tdb_commit_record(f->db, &r) < 0);
    tu_assert_msg_has(tdb_errmsg(f->db), "does not fit workload", "step 0 (split)");
    r.steps_json = "[]";
    r.nlatencies = 0;
    assert_true(tdb_commit_record(f->db, &r) < 0);
    tu_assert_msg_has(tdb_errmsg(f->db), "needs at least one latency");
    lat = -1;
    r.nlatencies = 1;
    assert_true(tdb_commit_record(f->db, &r) < 0);
    tu_assert_msg_has(tdb_errmsg(f->db), "latency 0", "seconds >= 0");
    lat = 1e-3;
    r.workload_key = "nosuchop(X=1)";
    assert_true(tdb_commit_record(f->db, &r) < 0);
    tu_assert_msg_has(tdb_errmsg(f->db), "nosuchop(X=1)", "not in the database");
    /* a key the registry writes differently */
    r.workload_key = "matmul(K=32,M=32,N=32)";
    assert_true(tdb_commit_record(f->db, &r) < 0);
    tu_assert_msg_has(tdb_errmsg(f->db), "not canonical", f->key);
    assert_true(tdb_commit_workload(f->db, "w(x=1)", "w", "[1]", 0) < 0);
    tu_assert_msg_has(tdb_errmsg(f->db), "parameters", "not a JSON object");
    assert_true(tdb_commit_target(f->db, "t", "nope") < 0);
    tu_assert_msg_has(tdb_errmsg(f->db), "properties of target 't'");
    /* nothing of that went in */
    tdb_stats s;
    assert_int_equal(tdb_get_stats(f->db, &s), 0);
    assert_int_equal(s.records, 0);
    /* a user's own workload (unknown to the registry) once committed
     * takes records, its log checked for syntax only */
    assert_true(tdb_commit_workload(f->db, "mine(n=3)", "mine", "{\"n\":3}", 6) > 0);
    r.workload_key = "mine(n=3)";
    assert_true(tdb_commit_record(f->db, &r) > 0);
    int64_t ids[2];
    tdb_record_in two[2] = {r, r};
    two[1].steps_json = "[{]";
    assert_int_equal(tdb_commit_records(f->db, 2, two, ids), -1);
    tu_assert_msg_has(tdb_errmsg(f->db), "commit_records: record 1");
    assert_int_equal(tdb_get_stats(f->db, &s), 0);
    assert_int_equal(s.records, 1);
}

/* Numbers that need 16 or 17 digits (unix times with microseconds,
 * latencies) come back from export and import as the same doubles. */
static void test_exact_numbers(void **state) {
    fixture *f = *state;
    char *log = tdbt_log(f->key, 4, 8);
    double lats[2] = {0.012345678901234568, 1.0 / 3.0};
    tdb_record_in r = {.workload_key = f->key, .target = TA, .steps_json = log,
                       .nlatencies = 2, .latencies = lats, .created = 1795389161.0501997};
    assert_true(tdb_commit_record(f->db, &r) > 0);
    char jl[160], other[160];
    tdbt_path(jl, sizeof jl, f->dir, "exact.jsonl");
    tdbt_path(other, sizeof other, f->dir, "exact.db");
    FILE *out = fopen(jl, "w");
    assert_int_equal(tdb_export_jsonl(f->db, out), 1);
    fclose(out);
    char *err = NULL;
    tdb_db *db2 = tdb_open(other, NULL, &err);
    assert_non_null(db2);
    int64_t imp, skip;
    FILE *in = fopen(jl, "r");
    assert_int_equal(tdb_import_jsonl(db2, in, &imp, &skip), 0);
    fclose(in);
    tdb_record *b;
    assert_int_equal(tdb_best(db2, f->key, TA, 1, &b), 1);
    assert_true(b[0].created == 1795389161.0501997);
    assert_int_equal(b[0].nlatencies, 2);
    assert_true(b[0].latencies[0] == lats[0] && b[0].latencies[1] == lats[1]);
    tdb_records_free(b, 1);
    tdb_close(db2);
    free(log);
}

static void test_export_import_dedup_and_errors(void **state) {
    fixture *f = *state;
    char *l1 = tdbt_log(f->key, 4, 8), *l2 = tdbt_log(f->key, 8, 16);
    commit(f, TA, l1, 2e-3, 0);
    commit(f, TB, l2, 1e-3, 0);
    commit(f, TB, l2, 0, 3);
    assert_int_equal(tdb_commit_target(f->db, TA, "{\"cores\":2}") > 0, 1);
    char jl[160], other[160];
    tdbt_path(jl, sizeof jl, f->dir, "out.jsonl");
    tdbt_path(other, sizeof other, f->dir, "other.db");
    FILE *out = fopen(jl, "w");
    assert_int_equal(tdb_export_jsonl(f->db, out), 3);
    fclose(out);

    char *err = NULL;
    tdb_db *db2 = tdb_open(other, NULL, &err);
    assert_non_null(db2);
    int64_t imp, skip;
    FILE *in = fopen(jl, "r");
    assert_int_equal(tdb_import_jsonl(db2, in, &imp, &skip), 0);
    fclose(in);
    assert_int_equal(imp, 3);
    assert_int_equal(skip, 0);
    /* again: every record is already there */
    in = fopen(jl, "r");
    assert_int_equal(tdb_import_jsonl(db2, in, &imp, &skip), 0);
    fclose(in);
    assert_int_equal(imp, 0);
    assert_int_equal(skip, 3);
    /* the copy answers as the original */
    tdb_record *a, *b;
    assert_int_equal(tdb_best(f->db, f->key, TB, 1, &a), 1);
    assert_int_equal(tdb_best(db2, f->key, TB, 1, &b), 1);
    assert_string_equal(a[0].steps_json, b[0].steps_json);
    assert_true(a[0].mean == b[0].mean);
    assert_true(a[0].created == b[0].created);
    assert_true(a[0].flops == b[0].flops);
    assert_string_equal(a[0].params_json, b[0].params_json);
    tdb_records_free(a, 1);
    tdb_records_free(b, 1);
    assert_int_equal(tdb_best(db2, f->key, TA, 1, &b), 1);
    assert_string_equal(b[0].target_props_json, "{\"cores\":2}");
    tdb_records_free(b, 1);

    /* malformed lines: reported by number, nothing imported */
    FILE *src = fopen(jl, "r");
    char *line = NULL;
    size_t cap = 0;
    assert_true(getline(&line, &cap, src) > 0);
    fclose(src);
    char bad[160];
    tdbt_path(bad, sizeof bad, f->dir, "bad.jsonl");
    FILE *bf = fopen(bad, "w");
    char *fresh = strdup(line);
    char *at = strstr(fresh, "\"created\":");
    assert_non_null(at);
    at[10] = '1';                          /* another time: a new record, were the file good */
    fprintf(bf, "%s{not json\n\n", fresh); /* fresh ends in its newline */
    fprintf(bf,
            "{\"workload\":{\"key\":\"%s\",\"op\":\"matmul\"},\"target\":{\"key\":\"x\"},"
            "\"steps\":[{\"kind\":\"split\",\"stage\":42,\"iter\":0,\"factor\":2}],"
            "\"latencies\":[1e-3],\"error_code\":0,\"created\":5}\n",
            f->key);
    fprintf(bf, "{\"workload\":{\"key\":\"k\"},\"target\":{\"key\":\"x\"}}\n");
    fclose(bf);
    tdb_stats s0, s1;
    assert_int_equal(tdb_get_stats(db2, &s0), 0);
    in = fopen(bad, "r");
    assert_int_equal(tdb_import_jsonl(db2, in, &imp, &skip), -1);
    fclose(in);
    const char *msg = tdb_errmsg(db2);
    tu_assert_msg_has(msg, "3 bad lines", "nothing imported", "line 2: not valid JSON",
                      "line 4:", "no stage 42", "line 5:", "'workload'");
    assert_null(strstr(msg, "line 1:"));
    assert_int_equal(tdb_get_stats(db2, &s1), 0);
    assert_int_equal(s1.records, s0.records);
    assert_int_equal(s1.targets, s0.targets);
    free(fresh);
    free(line);
    tdb_close(db2);
    free(l1);
    free(l2);
}

static void test_prune_and_cost_models(void **state) {
    fixture *f = *state;
    char *l = tdbt_log(f->key, 4, 8);
    for (int i = 0; i < 5; i++) commit(f, TA, l, (5 - i) * 1e-3, 0);
    commit(f, TA, l, 0, 2);
    commit(f, TB, l, 1e-3, 0);
    assert_int_equal(tdb_prune(f->db, 2), 4); /* 3 slow + 1 failed of TA */
    tdb_record *r;
    assert_int_equal(tdb_best(f->db, f->key, TA, 10, &r), 2);
    assert_true(fabs(r[0].mean - 1e-3) < 1e-12);
    tdb_records_free(r, 2);
    assert_int_equal(tdb_best(f->db, f->key, TB, 10, &r), 1);
    tdb_records_free(r, 1);
    assert_int_equal(tdb_prune(f->db, -1), -1);
    tu_assert_msg_has(tdb_errmsg(f->db), "prune", "keep");

    const char blob[] = "model\0bytes";
    assert_int_equal(tdb_put_cost_model(f->db, TA, "xgboost-ubj", blob, sizeof blob), 0);
    assert_int_equal(tdb_put_cost_model(f->db, TA, "xgboost-ubj", blob, 5), 0); /* replaces */
    void *got;
    size_t size;
    char *fmt;
    assert_int_equal(tdb_get_cost_model(f->db, TA, &got, &size, &fmt), 1);
    assert_int_equal(size, 5);
    assert_memory_equal(got, "model", 5);
    assert_string_equal(fmt, "xgboost-ubj");
    free(got);
    free(fmt);
    assert_int_equal(tdb_get_cost_model(f->db, TB, &got, &size, NULL), 0);
    assert_int_equal(tdb_put_cost_model(f->db, TA, "x", blob, 0), -1);
    tu_assert_msg_has(tdb_errmsg(f->db), "empty model", TA);
    free(l);
}

/* ---- files ---- */

static void expect_open_error(const char *path, const tdb_open_options *o, const char *a,
                              const char *b) {
    char *err = NULL;
    tdb_db *db = tdb_open(path, o, &err);
    assert_null(db);
    assert_non_null(err);
    tu_assert_msg_has(err, a, b);
    free(err);
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static void test_bad_files(void **state) {
    fixture *f = *state;
    char p[160];
    tdbt_path(p, sizeof p, f->dir, "text.db");
    const char text[] = "this is a text file, not a database, but long enough to look like one "
                        "if you squint at it from far away.\n";
    write_file(p, text, sizeof text - 1);
    expect_open_error(p, NULL, "is not a SQLite database", p);
    expect_open_error("/nonexistent-loom-dir/sub/t.db", NULL, "cannot be opened",
                      "/nonexistent-loom-dir/sub/t.db");
    expect_open_error(f->dir, NULL, "cannot be opened", f->dir); /* a directory */
    tdbt_path(p, sizeof p, f->dir, "missing.db");
    expect_open_error(p, &(tdb_open_options){.readonly = true}, "does not exist", "missing.db");
    expect_open_error("", NULL, "no file name", "");

    /* a newer schema: user_version is the big-endian int at offset 60 */
    tdb_close(f->db);
    f->db = NULL;
    int fd = open(f->path, O_RDWR);
    assert_true(fd >= 0);
    unsigned char v[4] = {0, 0, 0, 99};
    assert_int_equal(pwrite(fd, v, 4, 60), 4);
    close(fd);
    expect_open_error(f->path, NULL, "newer Loom", "schema version 99");

    /* another program's SQLite file (version 0 with tables of its own)
     * is refused, not given Loom's tables beside its own */
    char foreign[160];
    tdbt_path(foreign, sizeof foreign, f->dir, "app.db");
    assert_int_equal(tdb__exec_file(foreign, "CREATE TABLE app_users(id INTEGER)", NULL), -1);
    write_file(foreign, "", 0);
    assert_int_equal(tdb__exec_file(foreign, "CREATE TABLE app_users(id INTEGER)", NULL), 0);
    expect_open_error(foreign, NULL, "is not a tuning database", "table 'app_users'");
    expect_open_error(foreign, &(tdb_open_options){.readonly = true}, "is not a tuning database",
                      "app.db");
    /* nothing of Loom's was added: its table names are still free */
    assert_int_equal(tdb__exec_file(foreign, "CREATE TABLE records(x); CREATE TABLE workloads(x)",
                                    NULL), 0);

    /* an older one is migrated forward */
    char old[160], *err = NULL;
    tdbt_path(old, sizeof old, f->dir, "v1.db");
    assert_int_equal(tdb__create_at_version(old, 1, &err), 0);
    expect_open_error(old, &(tdb_open_options){.readonly = true}, "needs migrating", "version 1");
    tdb_db *db = tdb_open(old, NULL, &err);
    assert_non_null(db);
    assert_int_equal(tdb_schema_version(db), TDB_SCHEMA_VERSION);
    assert_int_equal(tdb_put_cost_model(db, TA, "x", "m", 1), 0);
    tdb_close(db);

    /* read-only handles refuse writes */
    db = tdb_open(old, &(tdb_open_options){.readonly = true}, &err);
    assert_non_null(db);
    assert_true(tdb_commit_target(db, "t", NULL) < 0);
    tu_assert_msg_has(tdb_errmsg(db), "read-only", "v1.db");
    tdb_close(db);
}

static void test_corrupted_file(void **state) {
    fixture *f = *state;
    char *l = tdbt_log(f->key, 4, 8);
    for (int i = 0; i < 200; i++) commit(f, TA, l, (i + 1) * 1e-6, 0);
    free(l);
    tdb_close(f->db);
    f->db = NULL;
    /* fold the WAL into the main file, then overwrite pages 2.. */
    char *err = NULL;
    tdb_db *db = tdb_open(f->path, NULL, &err);
    assert_non_null(db);
    assert_int_equal(tdb__exec(db, "PRAGMA wal_checkpoint(TRUNCATE)"), 0);
    tdb_close(db);
    struct stat st;
    assert_int_equal(stat(f->path, &st), 0);
    assert_true(st.st_size > 4 * 4096);
    int fd = open(f->path, O_RDWR);
    char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 37 + 11);
    for (off_t off = 4096; off + 4096 <= st.st_size; off += 4096)
        assert_int_equal(pwrite(fd, junk, sizeof junk, off), (ssize_t)sizeof junk);
    close(fd);
    db = tdb_open(f->path, NULL, &err);
    if (!db) {
        tu_assert_msg_has(err, "t.db", "corrupted");
        free(err);
        return;
    }
    /* page 1 parsed: the damage shows on the first query, never a crash */
    tdb_record *r = NULL;
    int n = tdb_best(db, f->key, TA, 3, &r);
    if (n >= 0) tdb_records_free(r, n);
    assert_int_equal(tdb_check(db), -1);
    tu_assert_msg_has(tdb_errmsg(db), "t.db");
    tdb_close(db);
}

/* Random mutations of an export line, imported one at a time: each is
 * taken or refused with a message; never a crash, never a damaged file.
 * LOOM_FUZZ_SECONDS lengthens the run (by hand, under ASan). */
static void test_fuzz_import(void **state) {
    fixture *f = *state;
    char *l = tdbt_log(f->key, 4, 8);
    commit(f, TA, l, 1e-3, 0);
    free(l);
    char *seed = NULL;
    size_t seedlen = 0;
    FILE *mem = open_memstream(&seed, &seedlen);
    assert_int_equal(tdb_export_jsonl(f->db, mem), 1);
    fclose(mem);
    static const char *const tokens[] = {
        "{",  "}",       "[",    "]",       ",",         "\"",        "0",
        "-1", "1e999",   "null", "\"key\"", "\"steps\"", "\"split\"", "\"stage\":99",
        "\n", "\\u0000", "[]",   "{}",      "true"};
    const char *env = getenv("LOOM_FUZZ_SECONDS");
    double seconds = env ? atof(env) : 0.5;
    uint64_t rng = tu_seed() | 1;
    size_t cap = 2 * seedlen + 64;
    char *buf = malloc(cap);
    clock_t end = clock() + (clock_t)(seconds * CLOCKS_PER_SEC);
    long iters = 0, taken = 0;
    while (clock() < end) {
        size_t n = seedlen;
        memcpy(buf, seed, n);
        for (int r = 0, rounds = 1 + (int)(tu_rand_u64(&rng) % 3); r < rounds; r++) {
            size_t pos = n ? (size_t)(tu_rand_u64(&rng) % n) : 0;
            int op = (int)(tu_rand_u64(&rng) % 3);
            if (op == 0 && n) {
                buf[pos] = (char)(tu_rand_u64(&rng) & 0xff);
            } else if (op == 1 && n) {
                size_t len = 1 + (size_t)(tu_rand_u64(&rng) % 6);
                if (pos + len > n) len = n - pos;
                memmove(buf + pos, buf + pos + len, n - pos - len);
                n -= len;
            } else {
                const char *t = tokens[tu_rand_u64(&rng) % (sizeof tokens / sizeof *tokens)];
                size_t len = strlen(t);
                if (n + len < cap) {
                    memmove(buf + pos + len, buf + pos, n - pos);
                    memcpy(buf + pos, t, len);
                    n += len;
                }
            }
        }
        FILE *in = fmemopen(buf, n ? n : 1, "r");
        assert_non_null(in);
        int64_t imp = 0, skip = 0;
        if (tdb_import_jsonl(f->db, in, &imp, &skip) == 0)
            taken += imp;
        else
            tu_assert_msg_has(tdb_errmsg(f->db), "import:");
        fclose(in);
        iters++;
    }
    print_message("import fuzz: %ld mutated files, %ld new records taken\n", iters, taken);
    assert_true(iters > 10);
    assert_int_equal(tdb_check(f->db), 0);
    free(buf);
    free(seed);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_creates_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_best_k_targets_never_mix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_has_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stored_log_replays_identically, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply_best_and_fallback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply_best_gpu_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_records_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exact_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_import_dedup_and_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_and_cost_models, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupted_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fuzz_import, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
