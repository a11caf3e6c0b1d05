/*
 * tests/test_autotune_custom.c — tuning a user's own operator (a
 * registered builder) from C: a hand schedule (tune_options.
 * first_steps_json) is the first trial and seeds the search when a sketch
 * reproduces it, else the summary says it could not; without one, the
 * default schedule derived from the workload is; a log that does not
 * replay is refused; a run whose every trial fails alike (the runners
 * have no builder: it was registered after tune_runner_maybe_run; every
 * program crashes) is an error naming the cause, while failures that
 * differ are not; plugins (tune_load_plugin): a missing file, a file that
 * is no library, no entry point and a failing entry point are refused
 * naming the file, and a plugin's operator tunes (its runners load it
 * too); tune_task_db / tune_tasks_db: tuning into a database in one call
 * (records, first steps, warm start, model stored, re-timing, resume,
 * several keys through the task scheduler, and the best applied back with
 * tdb_apply_best), and its errors.
 */
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "custom_mmb.h"
#include "testutil.h"
#include "loom/autotune.h"
#include "loom/cost_model.h"
#include "loom/tuning_db.h"

#define M 16
#define N 32
#define K 24
#define KEY "test.mmb(M=16,N=32,K=24)"
#define LATE_KEY "test.late(M=16,N=32,K=24)"

/* The logs of the trials, in order. */
typedef struct {
    int n;
    char *logs[64];
    int codes[64];
    int npop;
    char *pop0; /* the log of the first program of the first population */
} recorder;

static int on_record(void *user, const tune_result *r) {
    recorder *rec = user;
    if (rec->n < 64) {
        rec->codes[rec->n] = r->error_code;
        rec->logs[rec->n++] = strdup(r->steps_json);
    }
    return 0;
}

static void on_population(void *user, int n, const tune_program *progs) {
    recorder *rec = user;
    if (rec->npop++ || n < 1) return;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, KEY, &w), 0);
    assert_true(tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES) > progs[0].sketch);
    sch_schedule *s = tune_program_apply(ctx, &w, &sk[progs[0].sketch], &progs[0]);
    assert_non_null(s);
    rec->pop0 = tdb_schedule_to_json(s);
    te_ctx_free(ctx);
}

static void recorder_free(recorder *r) {
    for (int i = 0; i < r->n; i++) free(r->logs[i]);
    free(r->pop0);
    memset(r, 0, sizeof *r);
}

static tune_options topts(int trials, recorder *rec) {
    tune_options o;
    memset(&o, 0, sizeof o);
    o.trials = trials;
    o.per_round = 4;
    o.population = 32;
    o.generations = 1;
    o.seed = 3;
    o.measure.threads = 2;
    o.measure.build_timeout = 20;
    o.measure.run_timeout = 2;
    o.measure.repeat = 2;
    o.measure.num_threads = 1;
    o.on_record = on_record;
    o.on_population = on_population;
    o.user = rec;
    return o;
}

/* A schedule written by hand: D tiled 4 x 8, its inner j vectorized, the
 * outer i parallel, C computed inside D's tiles. */
static char *hand_log(void) {
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    te_tensor *C;
    assert_int_equal(custom_mmb_declare(ctx, KEY, &w, &C), 0);
    sch_schedule *s = sch_create(ctx, w.nouts, w.outs);
    te_tensor *D = w.outs[0];
    te_expr *io, *jo, *ii, *ji;
    assert_int_equal(sch_tile(s, D, sch_axis(D, 0), sch_axis(D, 1), 4, 8, &io, &jo, &ii, &ji), 0);
    assert_int_equal(sch_vectorize(s, D, ji), 0);
    assert_int_equal(sch_parallel(s, D, io), 0);
    assert_int_equal(sch_compute_at(s, C, D, jo), 0);
    char *json = tdb_schedule_to_json(s);
    assert_non_null(json);
    te_ctx_free(ctx);
    return json;
}

/* A log a sketch does reproduce: a random program of the first sketch. */
static char *sketch_log(void) {
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, KEY, &w), 0);
    assert_true(tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES) > 0);
    uint64_t rng = 99;
    tune_program p;
    tune_program_random(&sk[0], 0, &rng, &p);
    char *json = tdb_schedule_to_json(tune_program_apply(ctx, &w, &sk[0], &p));
    assert_non_null(json);
    te_ctx_free(ctx);
    return json;
}

static void test_first_steps(void **st) {
    (void)st;
    recorder rec = {0};
    tune_summary sum;
    char *err = NULL;

    /* A hand schedule: trial 1, and the search seeded with the sketch
     * program nearest to it (the first of the initial population). */
    char *hand = hand_log();
    tune_options o = topts(3, &rec);
    o.first_steps_json = hand;
    assert_int_equal(tune_task(KEY, "llvm", &o, &sum, &err), 0);
    assert_int_equal(sum.measured, 3);
    assert_string_equal(rec.logs[0], hand);
    assert_int_equal(rec.codes[0], TUNE_OK);
    tu_assert_msg_has(sum.first_steps_note, "no sketch's program", "seeded with the nearest",
                      "steps in common");
    assert_non_null(rec.pop0);
    assert_string_not_equal(rec.pop0, hand);
    int common = -1, total = -1;
    const char *paren = strrchr(sum.first_steps_note, '(');
    assert_non_null(paren);
    assert_int_equal(sscanf(paren, "(%d of the %d steps", &common, &total), 2);
    assert_true(common > 0 && common <= total);
    free(sum.best_steps_json);
    recorder_free(&rec);

    /* A log of a sketch: trial 1, and the first program of the initial
     * population (evolution mutates it). */
    char *mapped = sketch_log();
    o = topts(3, &rec);
    o.first_steps_json = mapped;
    assert_int_equal(tune_task(KEY, "llvm", &o, &sum, &err), 0);
    assert_string_equal(rec.logs[0], mapped);
    assert_string_equal(sum.first_steps_note, "");
    assert_non_null(rec.pop0);
    assert_string_equal(rec.pop0, mapped);
    free(sum.best_steps_json);
    recorder_free(&rec);

    /* Already measured (known, resume): not again, but still a seed. */
    o = topts(2, &rec);
    o.first_steps_json = mapped;
    o.nknown = 1;
    o.known_steps = (const char *const *)&mapped;
    assert_int_equal(tune_task(KEY, "llvm", &o, &sum, &err), 0);
    for (int i = 0; i < rec.n; i++) assert_string_not_equal(rec.logs[i], mapped);
    assert_string_equal(rec.pop0, mapped);
    free(sum.best_steps_json);
    recorder_free(&rec);

    /* A log that does not replay on the workload. */
    o = topts(2, &rec);
    o.first_steps_json = "[{\"kind\":\"split\",\"stage\":9,\"iter\":0,\"factor\":2}]";
    assert_int_equal(tune_task(KEY, "llvm", &o, &sum, &err), -1);
    tu_assert_msg_has(err, "first_steps_json does not apply to workload", KEY, "stage");
    free(err);
    err = NULL;
    o.first_steps_json = "not json";
    assert_int_equal(tune_task(KEY, "llvm", &o, &sum, &err), -1);
    tu_assert_msg_has(err, "first_steps_json", KEY);
    free(err);
    assert_int_equal(rec.n, 0);
    free(hand), free(mapped);
}

/* Without first steps, trial 1 is the default schedule derived from the
 * workload's structure (tune_default_schedule: a registered operator has
 * no hand-written one), the same log tune_default_steps gives. */
static void test_default_first(void **st) {
    (void)st;
    char *dflt = tune_default_steps(KEY, "llvm");
    assert_non_null(dflt);
    assert_null(tune_default_steps("test.nosuchop(N=3)", "llvm"));
    assert_null(tune_default_steps(KEY, "cuda"));
    recorder rec = {0};
    tune_options o = topts(2, &rec);
    tune_summary sum;
    char *err = NULL;
    assert_int_equal(tune_task(KEY, "llvm", &o, &sum, &err), 0);
    assert_true(rec.n >= 1);
    assert_string_equal(rec.logs[0], dflt);
    assert_int_equal(rec.codes[0], TUNE_OK);
    free(sum.best_steps_json);
    recorder_free(&rec);
    /* Measured before (resume): not again. */
    o = topts(2, &rec);
    o.nknown = 1;
    o.known_steps = (const char *const *)&dflt;
    assert_int_equal(tune_task(KEY, "llvm", &o, &sum, &err), 0);
    for (int i = 0; i < rec.n; i++) assert_string_not_equal(rec.logs[i], dflt);
    free(sum.best_steps_json);
    recorder_free(&rec);
    free(dflt);
}

static int hook_all_segv(void *user, int trial) {
    (void)user, (void)trial;
    return TUNE_HOOK_SEGV;
}

static int hook_mixed(void *user, int trial) {
    (void)user;
    return trial % 2 ? TUNE_HOOK_SEGV : TUNE_HOOK_BUILD_CRASH;
}

static void test_every_trial_failed(void **st) {
    (void)st;
    recorder rec = {0};
    tune_summary sum;
    char *err = NULL;
    /* The runners never registered test.late (main registers it after
     * tune_runner_maybe_run). */
    tune_options o = topts(4, &rec);
    assert_int_equal(tune_task(LATE_KEY, "llvm", &o, &sum, &err), -1);
    assert_int_equal(sum.measured, 4);
    tu_assert_msg_has(err, "every one of the 4 trials", LATE_KEY, "instantiation error",
                      "has no builder", "registered before tune_runner_maybe_run");
    free(err);
    err = NULL;
    recorder_free(&rec);

    /* Every program crashes alike. */
    o = topts(3, &rec);
    o.hook_for_trial = hook_all_segv;
    assert_int_equal(tune_task(KEY, "llvm", &o, &sum, &err), -1);
    tu_assert_msg_has(err, "every one of the 3 trials", "runtime device error");
    assert_null(strstr(err, "tune_runner_maybe_run"));
    free(err);
    err = NULL;
    recorder_free(&rec);

    /* A plugin the runners cannot load: every build fails naming it. */
    setenv(TUNE_PLUGINS_ENV, "/nonexistent/libgone.so", 1);
    o = topts(2, &rec);
    assert_int_equal(tune_task(KEY, "llvm", &o, &sum, &err), -1);
    tu_assert_msg_has(err, "every one of the 2 trials", "instantiation error",
                      "plugin '/nonexistent/libgone.so'", "No such file");
    unsetenv(TUNE_PLUGINS_ENV);
    free(err);
    err = NULL;
    recorder_free(&rec);

    /* Failures that differ: a run without a valid trial, not an error. */
    o = topts(4, &rec);
    o.hook_for_trial = hook_mixed;
    assert_int_equal(tune_task(KEY, "llvm", &o, &sum, &err), 0);
    assert_int_equal(sum.valid, 0);
    assert_int_equal(sum.measured, 4);
    recorder_free(&rec);
}

/* The events of a run into a database, in order. */
typedef struct {
    int n;
    tune_db_event ev[256];
    int task[256];
    int round_trials;
} event_log;

static void on_event(void *user, const tune_db_report *r) {
    event_log *l = user;
    if (l->n < 256) l->ev[l->n] = r->event, l->task[l->n++] = r->task;
    if (r->event == TUNE_DB_ROUND) l->round_trials += r->trials;
    assert_non_null(r->summary);
    if (r->event == TUNE_DB_TRIAL) assert_non_null(r->result);
    if (r->event == TUNE_DB_WARNING) print_message("warning: %s\n", r->message);
}

static int count_events(const event_log *l, tune_db_event ev) {
    int c = 0;
    for (int i = 0; i < l->n; i++) c += l->ev[i] == ev;
    return c;
}

static tune_db_options dbopts(int trials, event_log *log, const cm_params *cp) {
    tune_db_options o;
    memset(&o, 0, sizeof o);
    o.tune.trials = trials;
    o.tune.per_round = 3;
    o.tune.population = 32;
    o.tune.generations = 1;
    o.tune.seed = 5;
    o.tune.measure.threads = 2;
    o.tune.measure.build_timeout = 20;
    o.tune.measure.run_timeout = 2;
    o.tune.measure.repeat = 2;
    o.tune.measure.num_threads = 1;
    o.tune.user = log;
    o.on_event = on_event;
    o.cost_params = cp;
    o.retime = 3;
    return o;
}

static void test_task_db(void **st) {
    (void)st;
    char path[128];
    snprintf(path, sizeof path, "/tmp/loom_tunedb_%d.db", (int)getpid());
    unlink(path);
    tdb_db *db = tdb_open(path, NULL, NULL);
    assert_non_null(db);
    cm_params cp;
    cm_params_default(&cp);
    cp.num_warmup_samples = 4; /* trained (and stored) after this short run */
    char *hand = hand_log(), *err = NULL;
    event_log log = {0};
    tune_db_options o = dbopts(6, &log, &cp);
    o.tune.first_steps_json = hand;
    tune_db_summary sum;
    assert_int_equal(tune_task_db(db, KEY, "llvm", &o, &sum, &err), 0);
    char *host = tdb_host_target();
    assert_string_equal(sum.target_key, host);
    assert_int_equal(sum.ntasks, 1);
    const tune_db_task *t = &sum.tasks[0];
    assert_int_equal(sum.done, 6);
    assert_int_equal(t->trials, 6);
    assert_int_equal(t->measured, 6);
    assert_true(t->best_trial >= 1 && t->best_s > 0 && t->best_gflops > 0);
    assert_true(t->reach95 >= 1 && t->reach95 <= t->best_trial);
    assert_non_null(t->best_steps_json);
    tu_assert_msg_has(t->first_steps_note, "seeded with the nearest");
    assert_true(t->flops == 2.0 * M * N * K);
    /* every trial is in the database, the hand schedule first */
    tdb_history_point *h = NULL;
    assert_int_equal(tdb_history(db, KEY, host, &h), 6);
    tdb_record r0;
    assert_int_equal(tdb_get_record(db, h[0].record_id, &r0), 1);
    assert_string_equal(r0.steps_json, hand);
    tdb_record_clear(&r0);
    free(h);
    /* re-timed: the database's best is a re-timed record */
    assert_true(t->retimed >= 2);
    tdb_record *best = NULL;
    assert_int_equal(tdb_best(db, KEY, host, 1, &best), 1);
    assert_int_equal(best[0].id, t->retime_best_id);
    assert_false(isnan(best[0].retimed_latency));
    tdb_records_free(best, 1);
    /* the trained model was stored */
    void *blob = NULL;
    size_t blen = 0;
    char *fmt = NULL;
    assert_int_equal(tdb_get_cost_model(db, host, &blob, &blen, &fmt), 1);
    free(blob), free(fmt);
    /* the events, in order */
    assert_int_equal(log.ev[0], TUNE_DB_STARTED);
    assert_int_equal(count_events(&log, TUNE_DB_ROUND), 1);
    assert_int_equal(log.round_trials, 6);
    assert_int_equal(count_events(&log, TUNE_DB_TRIAL), 6);
    assert_int_equal(count_events(&log, TUNE_DB_SEARCHED), 1);
    assert_int_equal(log.ev[log.n - 1], TUNE_DB_RETIMED);
    tune_db_summary_free(&sum);

    /* Resume: the stored trials count and are not measured again; the
     * model starts from the database's records (warm start). */
    memset(&log, 0, sizeof log);
    o = dbopts(8, &log, &cp);
    o.resume = true;
    o.retime = 1;
    assert_int_equal(tune_task_db(db, KEY, "llvm", &o, &sum, &err), 0);
    assert_int_equal(sum.resumed, 6);
    assert_int_equal(sum.tasks[0].resumed, 6);
    assert_int_equal(sum.tasks[0].measured, 2);
    assert_int_equal(sum.tasks[0].trials, 8);
    assert_true(sum.warm.trained);
    assert_int_equal(count_events(&log, TUNE_DB_RETIMED), 0);
    tdb_record *all = NULL;
    int nall = tdb_best(db, KEY, host, 100, &all);
    assert_int_equal(nall, 8);
    for (int i = 0; i < nall; i++)
        for (int j = i + 1; j < nall; j++) assert_string_not_equal(all[i].steps_json, all[j].steps_json);
    tdb_records_free(all, nall);
    tune_db_summary_free(&sum);

    /* Applied back from the database. */
    te_ctx *ctx = te_ctx_new();
    tdb_apply_info info;
    rt_module *m = tdb_apply_best(db, ctx, KEY, host, &info);
    assert_non_null(m);
    assert_false(info.fallback);
    assert_int_equal(info.nargs, 4);
    rt_module_free(m);
    te_ctx_free(ctx);

    /* Two keys share the budget round by round. */
    memset(&log, 0, sizeof log);
    o = dbopts(6, &log, NULL);
    o.model = TUNE_DB_MODEL_NONE;
    o.retime = 1;
    const char *keys[] = {KEY, "matmul(M=16,N=16,K=16,transpose_a=0,transpose_b=0,dtype=float32)"};
    assert_int_equal(tune_tasks_db(db, 2, keys, "llvm", &o, &sum, &err), 0);
    assert_int_equal(sum.done, 6);
    assert_int_equal(sum.resumed, 0);
    assert_int_equal(sum.tasks[0].measured + sum.tasks[1].measured, 6);
    assert_true(sum.tasks[0].rounds >= 1 && sum.tasks[1].rounds >= 1);
    assert_true(sum.tasks[1].best_trial >= 1);
    assert_int_equal(count_events(&log, TUNE_DB_ROUND), sum.tasks[0].rounds + sum.tasks[1].rounds);
    tune_db_summary_free(&sum);

    /* Resumed, the two keys' stored trials count toward the budget and
     * stand for their rounds (3 trials each): 4 more trials are 4 new
     * ones, and no key gets a first round again. */
    int stored[2], rounds[2];
    for (int k = 0; k < 2; k++) {
        tdb_history_point *h = NULL;
        stored[k] = tdb_history(db, keys[k], host, &h);
        free(h);
        assert_true(stored[k] >= 1);
        rounds[k] = (stored[k] + 2) / 3;
    }
    memset(&log, 0, sizeof log);
    o = dbopts(stored[0] + stored[1] + 4, &log, NULL);
    o.model = TUNE_DB_MODEL_NONE;
    o.retime = 1;
    o.resume = true;
    assert_int_equal(tune_tasks_db(db, 2, keys, "llvm", &o, &sum, &err), 0);
    assert_int_equal(sum.resumed, stored[0] + stored[1]);
    assert_int_equal(sum.done, stored[0] + stored[1] + 4);
    assert_int_equal(sum.tasks[0].measured + sum.tasks[1].measured, 4);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(sum.tasks[k].resumed, stored[k]);
        assert_true(sum.tasks[k].rounds >= rounds[k]);
    }
    assert_int_equal(count_events(&log, TUNE_DB_ROUND),
                     sum.tasks[0].rounds + sum.tasks[1].rounds - rounds[0] - rounds[1]);
    tune_db_summary_free(&sum);
    /* A budget the stored trials already fill measures nothing. */
    memset(&log, 0, sizeof log);
    o.tune.trials = stored[0] + stored[1];
    assert_int_equal(tune_tasks_db(db, 2, keys, "llvm", &o, &sum, &err), 0);
    assert_int_equal(sum.tasks[0].measured + sum.tasks[1].measured, 0);
    assert_int_equal(count_events(&log, TUNE_DB_ROUND), 0);
    tune_db_summary_free(&sum);

    /* Errors, each before anything is measured. */
    memset(&log, 0, sizeof log);
    o = dbopts(2, &log, NULL);
    assert_int_equal(tune_task_db(db, KEY, "tpu", &o, &sum, &err), -1);
    tu_assert_msg_has(err, "unknown target 'tpu'");
    free(err);
    tune_db_summary_free(&sum);
    assert_int_equal(tune_task_db(db, KEY, "llvm -mcpu=bogus", &o, &sum, &err), -1);
    tu_assert_msg_has(err, "unknown CPU 'bogus'");
    free(err);
    tune_db_summary_free(&sum);
    assert_int_equal(tune_task_db(db, "user.nothing(M=1)", "llvm", &o, &sum, &err), -1);
    tu_assert_msg_has(err, "user.nothing(M=1)", "has no builder");
    free(err);
    tune_db_summary_free(&sum);
    o.tune.first_steps_json = hand;
    assert_int_equal(tune_tasks_db(db, 2, keys, "llvm", &o, &sum, &err), -1);
    tu_assert_msg_has(err, "first_steps_json", "one workload");
    free(err);
    tune_db_summary_free(&sum);
    o.tune.first_steps_json = NULL;
    o.tune.trials = 0;
    assert_int_equal(tune_task_db(db, KEY, "llvm", &o, &sum, &err), -1);
    tu_assert_msg_has(err, "trials must be positive");
    free(err);
    tune_db_summary_free(&sum);
    assert_int_equal(log.n, 0);
    free(hand), free(host);
    tdb_close(db);
    unlink(path);
}

/* test.late's builder: test.mmb's workload under another prefix. */
static int late_build(te_ctx *ctx, const char *key, tune_workload *out) {
    (void)key;
    return custom_mmb_build(ctx, KEY, out);
}


static void plugin_path(char *out, size_t n, const char *variant) {
    snprintf(out, n, "%s/libloom_plugin_%s.so", tu_bindir(), variant);
}

static int hook_first_segv(void *user, int trial) {
    (void)user;
    return trial == 1 ? TUNE_HOOK_SEGV : TUNE_HOOK_NONE;
}

/* A failed trial is stored too, and not measured again: here the default
 * schedule (trial 1) crashes, and the resumed run, which would measure the
 * default first, skips it (tdb_best lists only valid records). */
static void test_failed_not_measured_again(void **st) {
    (void)st;
    char path[128];
    snprintf(path, sizeof path, "/tmp/loom_tunedb_failed_%d.db", (int)getpid());
    unlink(path);
    tdb_db *db = tdb_open(path, NULL, NULL);
    assert_non_null(db);
    event_log log = {0};
    tune_db_options o = dbopts(3, &log, NULL);
    o.model = TUNE_DB_MODEL_NONE;
    o.retime = 1;
    o.tune.hook_for_trial = hook_first_segv;
    tune_db_summary sum;
    char *err = NULL;
    assert_int_equal(tune_task_db(db, KEY, "llvm", &o, &sum, &err), 0);
    assert_int_equal(sum.tasks[0].measured, 3);
    assert_int_equal(sum.tasks[0].valid, 2);
    tune_db_summary_free(&sum);

    memset(&log, 0, sizeof log);
    o = dbopts(6, &log, NULL);
    o.model = TUNE_DB_MODEL_NONE;
    o.retime = 1;
    o.resume = true;
    assert_int_equal(tune_task_db(db, KEY, "llvm", &o, &sum, &err), 0);
    assert_int_equal(sum.resumed, 3);
    assert_int_equal(sum.tasks[0].measured, 3);
    tune_db_summary_free(&sum);

    char *host = tdb_host_target();
    tdb_history_point *h = NULL;
    int n = tdb_history(db, KEY, host, &h);
    assert_int_equal(n, 6);
    assert_true(isnan(h[0].latency));
    char *logs[6];
    for (int i = 0; i < n; i++) {
        tdb_record r;
        assert_int_equal(tdb_get_record(db, h[i].record_id, &r), 1);
        logs[i] = strdup(r.steps_json);
        tdb_record_clear(&r);
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (!strcmp(logs[i], logs[j])) fail_msg("trials %d and %d have the same log", i + 1, j + 1);
    for (int i = 0; i < n; i++) free(logs[i]);
    free(h);
    free(host);
    tdb_close(db);
    unlink(path);
}

static void test_plugins(void **st) {
    (void)st;
    char path[4200], *err = NULL;
    plugin_path(path, sizeof path, "nosuch");
    assert_int_equal(tune_load_plugin(path, &err), -1);
    tu_assert_msg_has(err, "plugin '", path, "No such file");
    free(err);
    /* the tests run in the source tree */
    assert_int_equal(tune_load_plugin("CMakeLists.txt", &err), -1);
    tu_assert_msg_has(err, "plugin 'CMakeLists.txt': cannot load it");
    free(err);
    plugin_path(path, sizeof path, "noentry");
    assert_int_equal(tune_load_plugin(path, &err), -1);
    tu_assert_msg_has(err, path, "has no entry point loom_register_ops");
    free(err);
    plugin_path(path, sizeof path, "fails");
    assert_int_equal(tune_load_plugin(path, &err), -1);
    tu_assert_msg_has(err, path, "loom_register_ops() returned 3");
    free(err);
    err = NULL;
    assert_false(ops_has_builder("user.sqnorm_rows(M=8,N=64)"));

    plugin_path(path, sizeof path, "example");
    assert_int_equal(tune_load_plugin(path, &err), 0);
    assert_int_equal(tune_load_plugin(path, &err), 0); /* once is enough */
    assert_non_null(getenv(TUNE_PLUGINS_ENV));
    tu_assert_msg_has(getenv(TUNE_PLUGINS_ENV), "libloom_plugin_example.so");
    assert_null(strchr(getenv(TUNE_PLUGINS_ENV), ':'));
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    assert_int_equal(tune_build_workload(ctx, "user.sqnorm_rows(M=8,N=x)", &w), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "bad key", "M=<rows>,N=<columns>");
    te_ctx_free(ctx);
    /* Tuned: the runner processes load the plugin too. */
    recorder rec = {0};
    tune_options o = topts(3, &rec);
    o.on_population = NULL;
    tune_summary sum;
    assert_int_equal(tune_task("user.sqnorm_rows(M=8,N=64)", "llvm", &o, &sum, &err), 0);
    assert_int_equal(sum.measured, 3);
    assert_true(sum.valid >= 1);
    free(sum.best_steps_json);
    recorder_free(&rec);
}

/* The runner checks a registered workload against its unscheduled
 * computation in float32: a schedule that sums C's long reduction in
 * another order differs from it by rounding, and the tolerance must be
 * that of the longest reduction any stage computes, not of the output
 * stage's own (D = C + bias sums nothing: its tolerance alone flagged
 * correct programs of fused conv + relu groups as wrong answers). */
static void test_check_tolerance_of_inner_reduction(void **st) {
    (void)st;
    const char *key = "test.mmb(M=32,N=64,K=4096)";
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    te_tensor *C;
    assert_int_equal(custom_mmb_declare(ctx, key, &w, &C), 0);
    sch_schedule *s = sch_create(ctx, w.nouts, w.outs);
    te_expr *ko, *ki;
    assert_int_equal(sch_split(s, C, sch_reduce_axis(C, 0), 64, &ko, &ki), 0);
    te_expr *order[] = {sch_axis(C, 0), sch_axis(C, 1), ki, ko};
    assert_int_equal(sch_reorder(s, C, 4, order), 0);
    char *log = tdb_schedule_to_json(s);
    assert_non_null(log);
    te_ctx_free(ctx);

    tune_measure_options o;
    memset(&o, 0, sizeof o);
    o.threads = 1;
    o.build_timeout = 20;
    o.run_timeout = 5;
    o.repeat = 1;
    o.num_threads = 1;
    o.check = 1;
    char *err = NULL;
    tune_measurer *m = tune_measurer_new(key, "llvm", &o, &err);
    assert_non_null(m);
    const char *logs[] = {log};
    tune_result res[1];
    assert_int_equal(tune_measure(m, 1, logs, NULL, 0, res), 0);
    print_message("reordered reduction: %s %s\n", tune_error_name(res[0].error_code),
                  res[0].error_msg);
    assert_int_equal(res[0].error_code, TUNE_OK);
    assert_true(res[0].checked);
    tune_measurer_free(m);
    free(log);
}

int main(int argc, char **argv) {
    tune_register_builder("test.mmb", custom_mmb_build);
    tune_runner_maybe_run(argc, argv);
    /* Too late for the runners: they never see it. */
    tune_register_builder("test.late", late_build);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_steps),
        cmocka_unit_test(test_default_first),
        cmocka_unit_test(test_every_trial_failed),
        cmocka_unit_test(test_plugins),
        cmocka_unit_test(test_task_db),
        cmocka_unit_test(test_failed_not_measured_again),
        cmocka_unit_test(test_check_tolerance_of_inner_reduction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
