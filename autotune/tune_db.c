/*
 * autotune/tune_db.c — tuning into a database (tune_task_db,
 * tune_tasks_db): what the `autotune` command does for its keys, as one
 * library call. The workloads and every measured record go to the
 * database as they come; the cost model is warm-started from its records
 * and stored back; programs stored before are never measured again and,
 * on resume, seed the search; several keys share the budget round by
 * round through the task scheduler; the best programs are re-timed at the
 * end (tune_db_retime.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/tune_db_internal.h"
#include "loom/codegen.h"
#include "loom/runtime.h"

/* The key of parsed target t (its text: target). */
static char *key_of(const cg_target *t, const char *target, char **err) {
    if (t->kind == CG_TARGET_C) {
        if (err) *err = tune__strdupf("autotune: target '%s' cannot be tuned (known: llvm, cuda)",
                                      target);
        return NULL;
    }
    if (t->kind == CG_TARGET_CUDA && !rt_cuda_available()) {
        if (err)
            *err = tune__strdupf("autotune: target '%s': no CUDA device is available here (%s); "
                                 "tune on the host CPU with target llvm",
                                 target, rt_last_error());
        return NULL;
    }
    bool cuda = t->kind == CG_TARGET_CUDA, host = !cuda && !t->cpu && !t->features;
    char *key = cuda ? tdb_cuda_target(0) : host ? tdb_host_target() : cg_target_str(t);
    if (!key && err)
        *err = tune__strdupf("autotune: target '%s': %s", target,
                             cuda ? rt_last_error() : "out of memory");
    return key;
}

char *tune_target_key(const char *target, char **err) {
    if (err) *err = NULL;
    if (!target) {
        if (err) *err = tune__strdupf("autotune: no target (NULL; known: llvm, cuda)");
        return NULL;
    }
    /* An unknown -mcpu or -mattr would file every record under a key no
     * machine has (and LLVM may abort on it while compiling). */
    cg_target t;
    char *terr = NULL;
    if (cg_target_parse(target, &t, &terr)) {
        if (err) *err = tune__strdupf("autotune: %s", terr ? terr : "out of memory");
        free(terr);
        return NULL;
    }
    char *key = key_of(&t, target, err);
    cg_target_free(&t);
    return key;
}

char *tune_threads_key(const char *target_key, int num_threads) {
    if (!target_key) return NULL;
    int n = num_threads > 0 ? num_threads : rt_num_threads();
    if (n <= 1 || strncmp(target_key, "llvm", 4) != 0) return strdup(target_key);
    return tune__strdupf("%s" TDB_NUM_CORES " %d", target_key, n);
}

char *tune_record_key(const char *target, int num_threads, char **err) {
    char *machine = tune_target_key(target, err);
    if (!machine) return NULL;
    char *key = tune_threads_key(machine, num_threads);
    free(machine);
    if (!key && err) *err = tune__strdupf("autotune: out of memory");
    return key;
}

void tune_db_summary_free(tune_db_summary *s) {
    if (!s) return;
    for (int i = 0; s->tasks && i < s->ntasks; i++) free(s->tasks[i].best_steps_json);
    free(s->tasks);
    free(s->target_key);
    memset(s, 0, sizeof *s);
}

/* ---- reporting ---- */

void tune__db_report(tune__db_run *run, tune_db_event ev, int task, int trials,
                     const tune_result *res, const char *msg) {
    if (!run->o->on_event) return;
    tune_db_report r = {ev, task, trials, res, msg, run->out};
    run->o->on_event(run->o->tune.user, &r);
}

void tune__db_warn(tune__db_run *run, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
    va_end(ap);
    tune__db_report(run, TUNE_DB_WARNING, run->cur, 0, NULL,
                    msg ? msg : "autotune: out of memory");
    free(msg);
}

/* ---- a key's series: the figures of the closing line ---- */

static void series_add(tune__series *s, tune_db_task *t, double latency) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        tdb_history_point *np = realloc(s->pts, sizeof *np * (size_t)cap);
        if (!np) return; /* the figures lose this trial; the record is saved */
        s->pts = np;
        s->cap = cap;
    }
    double best = s->best_at >= 0 ? s->pts[s->best_at].latency : NAN;
    if (!isnan(latency) && (isnan(best) || latency < best)) {
        s->best_at = s->n;
        best = latency;
    }
    s->pts[s->n] = (tdb_history_point){s->n + 1, 0, latency, best};
    s->n++;
    t->trials = s->n;
    if (s->best_at >= 0) {
        t->best_trial = s->best_at + 1;
        t->best_s = best;
        t->best_gflops = t->flops > 0 ? t->flops / best * 1e-9 : 0;
    }
}

static void failed_add(tune__series *s, const char *log) {
    if (s->nfailed == s->capfailed) {
        int cap = s->capfailed ? 2 * s->capfailed : 16;
        char **nf = realloc(s->failed, sizeof *nf * (size_t)cap);
        if (!nf) return; /* it may be measured again; nothing is lost */
        s->failed = nf;
        s->capfailed = cap;
    }
    if ((s->failed[s->nfailed] = strdup(log))) s->nfailed++;
}

/* ---- tune_task's callbacks, wrapped ---- */

/* Whether the run times its candidates cold (the GPU ignores the flush). */
static bool run_is_cold(const tune__db_run *run) {
    return run->o->tune.measure.cache_flush && !tune_target_is_cuda(run->target);
}

int tune__db_on_record(void *user, const tune_result *r) {
    tune__db_run *run = user;
    const tune_db_options *o = run->o;
    tune_db_task *t = &run->out->tasks[run->cur];
    tdb_record_in in;
    memset(&in, 0, sizeof in);
    in.workload_key = t->key;
    /* A worker of another kind (a mixed MPI job) keeps its records apart:
     * a record key's latencies must come from one kind of machine. */
    in.target = r->target_key ? r->target_key : run->out->target_key;
    in.steps_json = r->steps_json;
    in.nlatencies = r->error_code ? 0 : r->nlatencies;
    in.latencies = r->latencies;
    in.error_code = r->error_code;
    in.error_msg = r->error_msg;
    in.cold = run_is_cold(run);
    int stop = 0;
    if (tdb_commit_record(run->db, &in) < 0) {
        free(run->commit_error);
        run->commit_error =
            tune__strdupf("autotune: cannot commit trial %d: %s", r->trial, tdb_errmsg(run->db));
        tune__db_report(run, TUNE_DB_WARNING, run->cur, 0, NULL, run->commit_error);
        /* A few lost records are survivable; a database that refuses
         * every write is not. */
        if (++run->out->commit_errors > 3) stop = 1;
    }
    /* The median: the statistic the database ranks "best" by. */
    series_add(&run->series[run->cur], t, r->error_code || !(r->median > 0) ? NAN : r->median);
    if (r->error_code) failed_add(&run->series[run->cur], r->steps_json);
    t->measured++;
    t->valid += !r->error_code;
    run->out->done++;
    if (o->tune.on_record && o->tune.on_record(o->tune.user, r)) stop = 1;
    tune__db_report(run, TUNE_DB_TRIAL, run->cur, 0, r, NULL);
    return stop;
}

void tune__db_on_progress(void *user, int done, int total, double best_s, double gflops) {
    tune__db_run *run = user;
    if (run->o->tune.on_progress) run->o->tune.on_progress(run->o->tune.user, done, total, best_s, gflops);
    tune__db_report(run, TUNE_DB_PROGRESS, run->cur, 0, NULL, NULL);
}

static int hook_for_trial(void *user, int trial) {
    tune__db_run *run = user;
    return run->o->tune.hook_for_trial(run->o->tune.user, run->call_measured + trial);
}

static void on_population(void *user, int n, const tune_program *progs) {
    tune__db_run *run = user;
    run->o->tune.on_population(run->o->tune.user, n, progs);
}

/* ---- setting up ---- */

/* The record keys of the run: its own, then the mixed ones; *n of them
 * (malloc'd array of borrowed strings; NULL when out of memory). */
static const char **run_keys(const tune__db_run *run, int *n) {
    const tune_db_options *o = run->o;
    int nm = o->mixed_keys ? o->n_mixed_keys : 0;
    const char **k = calloc((size_t)nm + 1, sizeof *k);
    *n = 0;
    if (!k) return NULL;
    k[(*n)++] = run->out->target_key;
    for (int i = 0; i < nm; i++)
        if (o->mixed_keys[i] && strcmp(o->mixed_keys[i], run->out->target_key))
            k[(*n)++] = o->mixed_keys[i];
    return k;
}

/* The stored logs of task ti under the run's record keys: the valid
 * ones (*nvalid), best first within each key, then the failed ones
 * (malloc'd array of malloc'd strings; *n in all). */
char **tune__db_stored_logs(const tune__db_run *run, int ti, int *n, int *nvalid) {
    const char *key = run->out->tasks[ti].key;
    const tune__series *se = &run->series[ti];
    int nk = 0, nl = 0;
    const char **tkeys = run_keys(run, &nk);
    char **logs = NULL;
    *n = 0;
    for (int ki = 0; tkeys && ki < nk; ki++) {
        tdb_record *r = NULL;
        int nr = tdb_best(run->db, key, tkeys[ki], 1 << 20, &r);
        if (nr < 0) nr = 0;
        char **nlogs = realloc(logs, sizeof *logs * ((size_t)nl + (size_t)nr + 1));
        if (nlogs) {
            logs = nlogs;
            for (int i = 0; i < nr; i++)
                if ((logs[nl] = strdup(r[i].steps_json))) nl++;
        }
        tdb_records_free(r, nr);
    }
    free(tkeys);
    *nvalid = nl;
    char **nlogs = realloc(logs, sizeof *logs * ((size_t)nl + (size_t)se->nfailed + 1));
    if (nlogs) {
        logs = nlogs;
        for (int i = 0; i < se->nfailed; i++)
            if ((logs[nl] = strdup(se->failed[i]))) nl++;
    }
    if (!logs) logs = calloc(1, sizeof *logs);
    *n = logs ? nl : 0;
    if (!logs) *nvalid = 0;
    return logs;
}

/* The failed trials stored before the run, of every task under the run's
 * record keys, into the series' failed logs. */
static void load_failed(tune__db_run *run) {
    int nk = 0;
    const char **tkeys = run_keys(run, &nk);
    for (int i = 0; tkeys && i < run->out->ntasks; i++)
        for (int ki = 0; ki < nk; ki++) {
            tdb_history_point *h = NULL;
            int nh = tdb_history(run->db, run->out->tasks[i].key, tkeys[ki], &h);
            for (int k = 0; k < nh; k++) {
                tdb_record r;
                if (!isnan(h[k].latency) || tdb_get_record(run->db, h[k].record_id, &r) != 1)
                    continue;
                if (r.error_code) failed_add(&run->series[i], r.steps_json);
                tdb_record_clear(&r);
            }
            free(h);
        }
    free(tkeys);
}

void tune__db_free_logs(char **logs, int n) {
    for (int i = 0; logs && i < n; i++) free(logs[i]);
    free(logs);
}

/* The keys' FLOP counts, the memory check, and the workloads committed. */
static int setup_keys(tune__db_run *run, int n, const char *const *keys, char **err) {
    for (int i = 0; i < n; i++) {
        tune_db_task *t = &run->out->tasks[i];
        t->key = keys[i];
        if (tune__check_fits(keys[i], &t->flops, err)) return -1;
        if (tdb_commit_workload_key(run->db, keys[i]) < 0) {
            if (err)
                *err = tune__strdupf("autotune: cannot write to the database: %s",
                                     tdb_errmsg(run->db));
            return -1;
        }
    }
    return 0;
}

/* A file keeps one kind of timing per target (tdb_record_in.cold): a run
 * of the other kind is refused before it measures anything, rather than
 * losing every record it measures to the commit's refusal. */
static int check_timing(tune__db_run *run, char **err) {
    int nk = 0, rc = 0;
    const char **keys = run_keys(run, &nk);
    bool cold = run_is_cold(run);
    if (!keys) {
        if (err) *err = tune__strdupf("autotune: out of memory");
        return -1;
    }
    for (int i = 0; i < nk && rc == 0; i++) {
        int kind = tdb_target_timing(run->db, keys[i]);
        if (kind < 0) {
            if (err) *err = tune__strdupf("autotune: cannot read the database: %s",
                                          tdb_errmsg(run->db));
            rc = -1;
        } else if (kind != TDB_TIMING_NONE && (kind == TDB_TIMING_COLD) != cold) {
            if (err)
                *err = tune__strdupf(
                    "autotune: the database's records of target '%s' were timed %s; this run "
                    "times %s (cache_flush, autotune --cache-flush), and the two latencies do "
                    "not compare: tune into another file, or time as its records were",
                    keys[i], kind == TDB_TIMING_COLD ? "cold (operands evicted from the caches)"
                                                     : "warm (operands left in the caches)",
                    cold ? "cold" : "warm");
            rc = -1;
        }
    }
    free(keys);
    return rc;
}

/* The run's cost model (NULL for none; *err set when it cannot be made). */
static cm_model *make_model(tune__db_run *run, int n, const char *const *keys, int *model_task,
                            char **err) {
    const tune_db_options *o = run->o;
    cm_params cp;
    if (o->cost_params) {
        cp = *o->cost_params;
    } else {
        cm_params_default(&cp);
        cp.seed = o->tune.seed ? o->tune.seed : 1;
    }
    /* XGBoost predicts on one thread: the search calls it from each of
     * its workers, and OpenMP teams inside them spin between calls and
     * take the cores from the lowering (a round's search: 35 s with them,
     * 8 s without, on 2 cores). Training runs between rounds, when no
     * search, build or kernel does, and takes every core. */
    cp.nthread = 1;
    cp.train_nthread = rt_num_cores();
    /* Ctrl-C waits for one boosting round, not a whole training */
    cp.stop = o->tune.stop;
    cm_model *m = NULL;
    if (o->model == TUNE_DB_MODEL_NONE) return NULL;
    if (o->model == TUNE_DB_MODEL_RANDOM) {
        /* Never updated (scorer.update stays NULL), it stays untrained and
         * predicts at random from cp.seed: no warm start, nothing saved. */
        if (!(m = cm_model_new(&cp)) && err) *err = tune__strdupf("autotune: out of memory");
        return m;
    }
    /* Trained on every workload's records of this target before the first
     * measurement; each key's measurements are then labelled with its own
     * records (model_task). */
    m = tune_warm_start(run->db, run->out->target_key, n, keys, &cp, model_task, &run->out->warm,
                        err);
    if (!m && err && !*err) *err = tune__strdupf("autotune: cannot create the cost model");
    return m;
}

static int by_record_id(const void *a, const void *b) {
    int64_t x = ((const tdb_history_point *)a)->record_id;
    int64_t y = ((const tdb_history_point *)b)->record_id;
    return (x > y) - (x < y);
}

/* The stored trials enter each key's series (resume) and count toward
 * the budget (of every key together). */
static void resume_series(tune__db_run *run) {
    int nk = 0;
    const char **tkeys = run_keys(run, &nk);
    for (int i = 0; tkeys && i < run->out->ntasks; i++) {
        tune_db_task *t = &run->out->tasks[i];
        /* Under several record keys (a mixed run), their trials in the
         * order they were committed. */
        tdb_history_point *all = NULL;
        int n = 0;
        for (int ki = 0; ki < nk; ki++) {
            tdb_history_point *h = NULL;
            int nh = tdb_history(run->db, t->key, tkeys[ki], &h);
            tdb_history_point *na = nh > 0 ? realloc(all, sizeof *all * (size_t)(n + nh)) : NULL;
            if (na) {
                all = na;
                memcpy(all + n, h, sizeof *h * (size_t)nh);
                n += nh;
            }
            free(h);
        }
        if (nk > 1 && n > 1) qsort(all, (size_t)n, sizeof *all, by_record_id);
        for (int k = 0; k < n; k++) series_add(&run->series[i], t, all[k].latency);
        free(all);
        t->resumed = n;
    }
    free(tkeys);
    int sum = 0;
    for (int i = 0; i < run->out->ntasks; i++) sum += run->out->tasks[i].resumed;
    run->out->done = run->out->resumed = sum;
}

/* ---- the search ---- */

static void sched_free(tune__sched *s, int n) {
    for (int i = 0; s->hist && i < n; i++) free(s->hist[i]);
    free(s->weights), free(s->best), free(s->flops), free(s->hist);
    free(s->nrounds), free(s->groups), free(s->model_task);
}

static int sched_init(tune__sched *s, const tune_db_summary *out, const double *weights) {
    int n = out->ntasks;
    memset(s, 0, sizeof *s);
    s->weights = calloc((size_t)n, sizeof(double));
    s->best = calloc((size_t)n, sizeof(double));
    s->flops = calloc((size_t)n, sizeof(double));
    s->hist = calloc((size_t)n, sizeof(double *));
    s->nrounds = calloc((size_t)n, sizeof(int));
    s->groups = calloc((size_t)n, sizeof(int));
    s->model_task = calloc((size_t)n, sizeof(int));
    char **ops = calloc((size_t)n, sizeof(char *));
    int rc = s->weights && s->best && s->flops && s->hist && s->nrounds && s->groups &&
                     s->model_task && ops ? 0 : -1;
    for (int i = 0; rc == 0 && i < n; i++) {
        s->weights[i] = weights ? weights[i] : 1;
        s->flops[i] = out->tasks[i].flops;
        /* The operator name: the key up to '(' (an ops key's registry name). */
        const char *k = out->tasks[i].key, *open = strchr(k, '(');
        if (!(ops[i] = open ? strndup(k, (size_t)(open - k)) : strdup(k))) rc = -1;
    }
    if (rc == 0) tune_scheduler_groups(n, (const char *const *)ops, s->flops, s->groups);
    for (int i = 0; ops && i < n; i++) free(ops[i]);
    free(ops);
    return rc;
}

/* One round of key ti: tune_task with the stored logs known, the run's
 * callbacks and the model. 0, or -1 with *err. */
static int round_of(tune__db_run *run, tune__sched *ss, cm_model *model, int ti, bool only_default,
                    char **err) {
    const tune_db_options *o = run->o;
    tune_db_summary *out = run->out;
    tune_db_task *t = &out->tasks[ti];
    int nl = 0, nvalid = 0;
    char **logs = tune__db_stored_logs(run, ti, &nl, &nvalid);
    tune_options to = o->tune;
    int left = out->total - out->done;
    int per_round = o->tune.per_round > 0 ? o->tune.per_round : 64;
    /* One call for a single key; a round at a time for several; the
     * default schedule alone (its trial comes first, default_pass). */
    to.trials = only_default ? 1 : out->ntasks == 1 ? left : left < per_round ? left : per_round;
    to.seed = o->tune.seed + (uint64_t)out->done;
    memset(&to.scorer, 0, sizeof to.scorer);
    if (model) {
        to.scorer.user = model;
        to.scorer.task = ss->model_task[ti];
        to.scorer.predict = cm_scorer_predict;
        to.scorer.update = o->model == TUNE_DB_MODEL_RANDOM ? NULL : cm_scorer_update;
    }
    to.on_record = tune__db_on_record;
    to.on_progress = tune__db_on_progress;
    to.hook_for_trial = o->tune.hook_for_trial ? hook_for_trial : NULL;
    to.on_population = o->tune.on_population ? on_population : NULL;
    to.user = run;
    to.nknown = nl;
    to.known_steps = (const char *const *)logs;
    /* The best stored programs (logs are best first) seed each round. */
    int nseed = o->tune.nseed > 0 ? o->tune.nseed : o->resume ? 8 : 0;
    to.nseed = nseed < nvalid ? nseed : nvalid;
    run->cur = ti;
    run->call_measured = t->measured;
    int done_before = out->done;
    tune__db_report(run, TUNE_DB_ROUND, ti, to.trials, NULL, NULL);
    tune_summary sum;
    int rc = tune_task(t->key, run->target, &to, &sum, err);
    tune__db_free_logs(logs, nl);
    out->search_s += sum.search_s, out->build_s += sum.build_s;
    out->run_s += sum.run_s, out->train_s += sum.train_s;
    out->stopped |= sum.stopped;
    if (ss->nrounds[ti] == 0) {
        memcpy(t->first_steps_note, sum.first_steps_note, sizeof sum.first_steps_note);
        t->sketches_dropped = sum.sketches_dropped;
    }
    if (rc) {
        free(sum.best_steps_json);
        return -1;
    }
    if (sum.best_trial && (ss->best[ti] <= 0 || sum.best_s < ss->best[ti])) {
        ss->best[ti] = sum.best_s;
        free(t->best_steps_json);
        t->best_steps_json = sum.best_steps_json;
        sum.best_steps_json = NULL;
    }
    free(sum.best_steps_json);
    /* A key whose search space is exhausted is not picked again. */
    if (sum.measured == 0 && !only_default) ss->weights[ti] = 0;
    if (only_default) { /* no round: the scheduler sees only a better best */
        if (ss->nrounds[ti] > 0) ss->hist[ti][ss->nrounds[ti] - 1] = ss->best[ti];
        out->done = done_before + sum.measured;
        return 0;
    }
    double *nh = realloc(ss->hist[ti], sizeof(double) * (size_t)(ss->nrounds[ti] + 1));
    if (nh) {
        ss->hist[ti] = nh;
        ss->hist[ti][ss->nrounds[ti]++] = ss->best[ti];
    }
    t->rounds = ss->nrounds[ti];
    /* The same count, should a record have been missed. */
    out->done = done_before + sum.measured;
    return 0;
}

/* A resumed key's stored trials as the rounds the task scheduler would
 * have seen (per_round each, in commit order, the last one partial): its
 * round count, the best after each and the best so far. Without them
 * every stored key would get its first round again, and the scheduler's
 * gradient would start from nothing. */
static int resume_rounds(tune__db_run *run, tune__sched *ss) {
    int per_round = run->o->tune.per_round > 0 ? run->o->tune.per_round : 64;
    for (int i = 0; i < run->out->ntasks; i++) {
        const tune__series *se = &run->series[i];
        int nr = (se->n + per_round - 1) / per_round;
        if (nr == 0) continue;
        double *h = malloc(sizeof(double) * (size_t)nr);
        if (!h) return -1;
        for (int r = 0; r < nr; r++) {
            int last = (r + 1) * per_round < se->n ? (r + 1) * per_round : se->n;
            double b = se->pts[last - 1].best; /* NaN: nothing valid yet */
            h[r] = isnan(b) ? 0 : b;
        }
        if (h[nr - 1] == 0) { /* every stored trial failed: a first round still */
            free(h);
            continue;
        }
        free(ss->hist[i]);
        ss->hist[i] = h;
        ss->nrounds[i] = nr;
        ss->best[i] = h[nr - 1];
        run->out->tasks[i].rounds = nr;
    }
    return 0;
}

static bool stop_requested(const tune__db_run *run) {
    return (run->o->tune.stop && *run->o->tune.stop) || run->out->stopped;
}

/* Whether the database lacks key ti's current default schedule
 * (tune_default_steps): its records were then tuned against an older
 * default, one a later Loom replaced. */
static bool default_untimed(const tune__db_run *run, int ti) {
    const char *key = run->out->tasks[ti].key;
    char *dflt = tune_default_steps(key, run->target);
    if (!dflt) return false;
    int nk = 0;
    const char **tkeys = run_keys(run, &nk);
    bool found = false; /* under any of the run's record keys (a mixed run) */
    for (int k = 0; tkeys && k < nk && !found; k++)
        found = tdb_has_steps(run->db, key, tkeys[k], dflt) == 1;
    free(tkeys);
    free(dflt);
    return !found;
}

/* A resumed run times, first, the current default schedule of every key
 * whose stored rounds never did (one trial each, out of the budget). A
 * key's default is its first trial, but a resumed key may not be picked
 * again for many rounds, and until then its best record, tuned against
 * an older default, can be slower than the default the executor would
 * run without it (loomrun marks such records). */
static int default_pass(tune__db_run *run, tune__sched *ss, cm_model *model, char **err) {
    if (run->o->tune.skip_default) return 0;
    for (int i = 0; i < run->out->ntasks; i++) {
        if (run->out->done >= run->out->total || stop_requested(run)) break;
        if (ss->nrounds[i] == 0 || !default_untimed(run, i)) continue;
        if (round_of(run, ss, model, i, true, err)) return -1;
        run->out->defaults_retried++;
    }
    return 0;
}

static int search(tune__db_run *run, tune__sched *ss, cm_model *model, char **err) {
    /* A backend that measures while the search runs: one round behind. */
    if (tune__backend_overlaps(run->o->tune.measure.backend))
        return tune__db_pipeline(run, ss, model, err);
    tune_db_summary *out = run->out;
    int n = out->ntasks;
    while (out->done < out->total && !stop_requested(run)) {
        int ti = n == 1 ? 0
                        : tune_scheduler_pick(n, ss->weights, ss->nrounds,
                                              (const double *const *)ss->hist, ss->best, ss->flops,
                                              ss->groups);
        if (ti < 0 || ss->weights[ti] == 0) break; /* every key's search has run dry */
        if (round_of(run, ss, model, ti, false, err)) return -1;
        if (out->commit_errors > 3) {
            if (err) *err = run->commit_error ? strdup(run->commit_error) : NULL;
            return -1;
        }
    }
    return 0;
}

/* ---- the run ---- */

int tune_tasks_db(tdb_db *db, int n, const char *const *keys, const char *target,
                  const tune_db_options *o, tune_db_summary *out, char **err) {
    if (err) *err = NULL;
    if (!out) return -1;
    memset(out, 0, sizeof *out);
    double t0 = rt_now();
    const char *bad = !db                        ? "no database"
                      : !o                       ? "no options"
                      : n < 1 || !keys           ? "no workload key"
                      : o->tune.trials <= 0      ? "trials must be positive"
                      : o->tune.nknown || o->tune.known_steps || o->tune.scorer.predict ||
                              o->tune.scorer.update
                          ? "tune.scorer, tune.nknown and tune.known_steps are set by the call: "
                            "leave them zero"
                      : n > 1 && o->tune.first_steps_json
                          ? "first_steps_json schedules one workload: tune it with tune_task_db"
                          : NULL;
    for (int i = 0; !bad && i < n; i++)
        if (!keys[i]) bad = "a workload key is NULL";
        else if (o->weights && !(o->weights[i] > 0 && o->weights[i] < 1e9))
            bad = "a task weight is not a positive number below 1e9";
    if (bad) {
        if (err) *err = tune__strdupf("autotune: %s", bad);
        return -1;
    }
    tune__db_run run = {.db = db, .o = o, .out = out};
    run.target = tune_target_is_cuda(target) ? target : "llvm";
    out->ntasks = n;
    out->total = o->tune.trials;
    out->tasks = calloc((size_t)n, sizeof *out->tasks);
    run.series = calloc((size_t)n, sizeof *run.series);
    tune__sched ss;
    memset(&ss, 0, sizeof ss);
    cm_model *model = NULL;
    int rc = -1;
    if (!out->tasks || !run.series) {
        if (err) *err = tune__strdupf("autotune: out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) run.series[i].best_at = -1;
    if (!(out->target_key = tune_record_key(target, o->tune.measure.num_threads, err)) ||
        setup_keys(&run, n, keys, err) || check_timing(&run, err))
        goto done;
    if (sched_init(&ss, out, o->weights)) {
        if (err) *err = tune__strdupf("autotune: out of memory");
        goto done;
    }
    model = make_model(&run, n, keys, ss.model_task, err);
    if (!model && o->model != TUNE_DB_MODEL_NONE) goto done;
    load_failed(&run);
    if (o->resume) {
        resume_series(&run);
        if (resume_rounds(&run, &ss)) {
            if (err) *err = tune__strdupf("autotune: out of memory");
            goto done;
        }
    }
    tune__db_report(&run, TUNE_DB_STARTED, 0, 0, NULL, NULL);
    rc = o->resume ? default_pass(&run, &ss, model, err) : 0;
    if (rc == 0) rc = search(&run, &ss, model, err);
    out->stopped |= o->tune.stop && *o->tune.stop;
    for (int i = 0; i < n; i++)
        out->tasks[i].reach95 = tdb_history_reach(run.series[i].pts, run.series[i].n, 0.95);
    out->seconds = rt_now() - t0;
    tune__db_report(&run, TUNE_DB_SEARCHED, 0, 0, NULL, NULL);
    int k = o->retime ? o->retime < 64 ? o->retime : 64 : 8;
    bool measured = out->done > out->resumed;
    for (int i = 0; rc == 0 && k >= 2 && measured && i < n && !stop_requested(&run); i++) {
        if (!out->tasks[i].best_trial) continue;
        run.cur = i;
        tune__retime_best(&run, i, k);
        tune__db_report(&run, TUNE_DB_RETIMED, i, 0, NULL, NULL);
    }
    if (model && cm_model_is_trained(model)) {
        void *blob;
        size_t len;
        if (cm_model_save_buffer(model, &blob, &len) == 0) {
            if (tdb_put_cost_model(db, out->target_key, CM_BLOB_FORMAT, blob, len))
                tune__db_warn(&run, "autotune: cannot store the cost model: %s", tdb_errmsg(db));
            free(blob);
        }
    }
    out->seconds = rt_now() - t0;
done:
    cm_model_free(model);
    sched_free(&ss, n);
    for (int i = 0; run.series && i < n; i++) {
        free(run.series[i].pts);
        for (int k = 0; k < run.series[i].nfailed; k++) free(run.series[i].failed[k]);
        free(run.series[i].failed);
    }
    free(run.series);
    free(run.commit_error);
    return rc;
}

int tune_task_db(tdb_db *db, const char *key, const char *target, const tune_db_options *o,
                 tune_db_summary *out, char **err) {
    return tune_tasks_db(db, 1, &key, target, o, out, err);
}
