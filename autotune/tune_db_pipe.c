/*
 * autotune/tune_db_pipe.c — the search of tune_tasks_db when its
 * measurement backend measures while the tuner searches (submit and poll:
 * the MPI workers of `mpirun autotune`, issue 33 parts 4 and 6).
 *
 * The search runs one round behind the measurements. Round k+1 is
 * proposed while round k is measured, by the model trained on rounds up
 * to k-1, with round k's candidates already counted as proposed; its key
 * is picked by the task scheduler from the results of rounds up to k-1,
 * round k counted as a round of its key. Each round is learnt (the
 * scheduler's best latencies, the search's measured programs, the model's
 * training) in round order, as a whole, once all its results are in. What
 * is proposed thus depends on the seed, the database and the results of
 * the rounds before, never on the order results arrive in or on how many
 * workers measure them; the workers measure round k while rank 0 learns
 * round k-1 and searches round k+1. At most two rounds are in flight, and
 * they may be of different keys.
 *
 * Threads: learning and proposing (a job: learn round k-1, propose round
 * k+1) run on a thread of their own; the calling thread submits rounds,
 * polls the backend (an MPI backend's calls all stay on it), commits every
 * result as it arrives and reports. While a job runs, it alone touches
 * the keys' searches and the model, and the calling thread alone the
 * database, the figures and the measurers.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autotune/tune_db_internal.h"
#include "loom/runtime.h"

/* One round: n candidates of key `task`, tagged tag0..tag0+n-1. */
typedef struct {
    int task, n;
    tune__proposal *c;
    tune_result *res; /* by candidate, filled as results arrive */
    int64_t tag0;
    int arrived;      /* results in, measured or dropped */
    int hidx;         /* its index in the key's scheduler history */
    bool learnt;      /* handed to a job (or learnt at the end) */
} pround;

typedef struct {
    tune__search *s;  /* NULL until the key's first round */
    tune_measurer *m; /* NULL until its first round is submitted */
    tune_options to;  /* the search's options */
    char **logs;      /* the stored logs it opens with */
    int nl;
    int measured;     /* committed in this run: trial numbers */
    int proposed;     /* submitted in this run: the hooks' trial numbers */
} ptask;

typedef struct {
    tune__db_run *run;
    tune__sched *ss;
    cm_model *model;
    ptask *tasks;
    pround *rounds;
    int nrounds, caprounds;
    int64_t submitted, arrived; /* candidates */
    int proposed;               /* candidates proposed in this run */
} pipe_t;

/* Learns round `learn` (-1: none), then proposes `want` candidates of
 * key `task` (-1: none), opening its search first when needed. */
typedef struct {
    pipe_t *p;
    int learn, task, want;
    tune__proposal *out;
    int got;
    char *err;
    int rc;
    atomic_int done;
    pthread_t th;
    bool threaded;
} job_t;

static bool stop_requested(const tune__db_run *run) {
    return (run->o->tune.stop && *run->o->tune.stop) || run->out->stopped;
}

/* The user's stop request, as the job sees it (the calling thread's own
 * reasons to stop are its business: what the job does is then dropped). */
static bool user_stop(const pipe_t *p) {
    return p->run->o->tune.stop && *p->run->o->tune.stop;
}

static void *job_main(void *arg) {
    job_t *j = arg;
    pipe_t *p = j->p;
    if (j->learn >= 0 && !user_stop(p)) {
        pround *r = &p->rounds[j->learn];
        tune__search_learn(p->tasks[r->task].s, r->n, r->c, r->res);
    }
    if (j->task >= 0) {
        ptask *pt = &p->tasks[j->task];
        if (!pt->s) {
            pt->s = tune__search_open(p->run->out->tasks[j->task].key, p->run->target, &pt->to,
                                      &j->err);
            if (!pt->s) j->rc = -1;
        }
        if (pt->s && !user_stop(p)) j->got = tune__search_propose(pt->s, j->want, j->out);
    }
    atomic_store(&j->done, 1);
    return NULL;
}

static void job_start(job_t *j) {
    atomic_init(&j->done, 0);
    j->threaded = pthread_create(&j->th, NULL, job_main, j) == 0;
    if (!j->threaded) job_main(j); /* no thread to be had: no overlap */
}

static void proposals_free(tune__proposal *c, int n) {
    for (int i = 0; c && i < n; i++) free(c[i].steps);
    free(c);
}

/* Round L's results enter the scheduler's figures: its key's best
 * latency, and the best after each of its rounds from L's on (those after
 * L are in flight and count as no better yet). */
static void sched_learn(pipe_t *p, int L) {
    const pround *r = &p->rounds[L];
    tune__sched *ss = p->ss;
    int ti = r->task;
    for (int j = 0; j < r->n; j++) {
        const tune_result *x = &r->res[j];
        if (x->dropped || x->error_code || !(x->median > 0)) continue;
        if (ss->best[ti] <= 0 || x->median < ss->best[ti]) ss->best[ti] = x->median;
    }
    for (int h = r->hidx; ss->hist[ti] && h < ss->nrounds[ti]; h++) ss->hist[ti][h] = ss->best[ti];
}

/* The options key ti's search opens with (tune_tasks_db's round_of
 * gives each tune_task call the same), and its stored logs. */
static void task_options(pipe_t *p, int ti) {
    tune__db_run *run = p->run;
    const tune_db_options *o = run->o;
    ptask *pt = &p->tasks[ti];
    int nvalid = 0;
    pt->logs = tune__db_stored_logs(run, ti, &pt->nl, &nvalid);
    tune_options to = o->tune;
    to.trials = run->out->total;
    /* Not out->done: that depends on how many results have arrived. */
    to.seed = o->tune.seed + (uint64_t)(run->out->resumed + p->proposed);
    memset(&to.scorer, 0, sizeof to.scorer);
    if (p->model) {
        to.scorer.user = p->model;
        to.scorer.task = p->ss->model_task[ti];
        to.scorer.predict = cm_scorer_predict;
        to.scorer.update = o->model == TUNE_DB_MODEL_RANDOM ? NULL : cm_scorer_update;
    }
    to.on_record = NULL;
    to.on_progress = NULL;
    to.hook_for_trial = NULL;
    to.on_population = o->tune.on_population;
    to.user = o->tune.user;
    to.nknown = pt->nl;
    to.known_steps = (const char *const *)pt->logs;
    int nseed = o->tune.nseed > 0 ? o->tune.nseed : o->resume ? 8 : 0;
    to.nseed = nseed < nvalid ? nseed : nvalid;
    pt->to = to;
}

/* Submits the n proposals c of key ti as the next round (c is the
 * round's now). 0, or -1 with *err. */
static int submit_round(pipe_t *p, int ti, tune__proposal *c, int n, char **err) {
    tune__db_run *run = p->run;
    const tune_db_options *o = run->o;
    tune__sched *ss = p->ss;
    ptask *pt = &p->tasks[ti];
    if (!pt->m) {
        tune_measure_options mo = o->tune.measure;
        char *baseline = NULL;
        if (!mo.baseline_steps && o->tune.baseline && !tune_target_is_cuda(run->target))
            mo.baseline_steps = baseline = tune_default_steps(run->out->tasks[ti].key, run->target);
        pt->m = tune_measurer_new(run->out->tasks[ti].key, run->target, &mo, err);
        free(baseline);
        if (!pt->m) {
            proposals_free(c, n);
            return -1;
        }
    }
    if (p->nrounds == p->caprounds) {
        int cap = p->caprounds ? 2 * p->caprounds : 16;
        pround *nr = realloc(p->rounds, sizeof *nr * (size_t)cap);
        if (!nr) goto oom;
        p->rounds = nr, p->caprounds = cap;
    }
    double *nh = realloc(ss->hist[ti], sizeof(double) * (size_t)(ss->nrounds[ti] + 1));
    if (!nh) goto oom;
    ss->hist[ti] = nh;
    pround *r = &p->rounds[p->nrounds];
    memset(r, 0, sizeof *r);
    r->task = ti, r->n = n, r->c = c, r->tag0 = p->submitted;
    r->res = calloc((size_t)n, sizeof *r->res);
    const char **steps = calloc((size_t)n, sizeof *steps);
    int *hooks = calloc((size_t)n, sizeof *hooks);
    int64_t *tags = calloc((size_t)n, sizeof *tags);
    if (!r->res || !steps || !hooks || !tags) {
        free(r->res), free(steps), free(hooks), free(tags);
        goto oom;
    }
    for (int j = 0; j < n; j++) {
        steps[j] = c[j].steps;
        tags[j] = r->tag0 + j;
        r->res[j].steps_json = c[j].steps;
        if (o->tune.hook_for_trial)
            hooks[j] = o->tune.hook_for_trial(o->tune.user, pt->proposed + j + 1);
    }
    /* Counted as a round of its key from now: the next pick sees it. */
    r->hidx = ss->nrounds[ti];
    ss->hist[ti][ss->nrounds[ti]++] = ss->best[ti];
    run->out->tasks[ti].rounds = ss->nrounds[ti];
    p->nrounds++;
    p->submitted += n;
    p->proposed += n;
    pt->proposed += n;
    run->cur = ti;
    tune__db_report(run, TUNE_DB_ROUND, ti, n, NULL, NULL);
    int rc = tune__measure_submit(pt->m, n, steps, hooks, run->out->tasks[ti].best_s, tags);
    free(steps), free(hooks), free(tags);
    if (rc) {
        /* Nothing of it will come back. */
        for (int j = 0; j < n; j++) r->res[j].dropped = true;
        r->arrived = n;
        p->arrived += n;
        if (err) *err = strdup(tune__measurer_errmsg(pt->m));
        return -1;
    }
    return 0;
oom:
    proposals_free(c, n);
    if (err) *err = tune__strdupf("autotune: out of memory");
    return -1;
}

/* Takes result x of the candidate tagged `tag` as it arrives: committed
 * (unless dropped) and, when it completes its round, the round reported. */
static void take(pipe_t *p, int64_t tag, const tune_result *x) {
    tune__db_run *run = p->run;
    pround *r = NULL;
    for (int k = p->nrounds - 1; k >= 0 && !r; k--)
        if (tag >= p->rounds[k].tag0 && tag < p->rounds[k].tag0 + p->rounds[k].n) r = &p->rounds[k];
    if (!r || r->arrived == r->n) return; /* not ours, or answered twice */
    int j = (int)(tag - r->tag0);
    tune_result *d = &r->res[j];
    if (d->dropped || d->trial) return;
    *d = *x;
    d->steps_json = r->c[j].steps;
    r->arrived++;
    p->arrived++;
    tune_db_task *t = &run->out->tasks[r->task];
    run->cur = r->task;
    if (!d->dropped) {
        d->trial = ++p->tasks[r->task].measured;
        if (tune__db_on_record(run, d)) run->out->stopped = true;
        if (!d->error_code && d->median > 0 && t->best_s == d->median &&
            (!t->best_steps_json || strcmp(t->best_steps_json, d->steps_json))) {
            free(t->best_steps_json);
            t->best_steps_json = strdup(d->steps_json);
        }
    }
    if (r->arrived == r->n)
        tune__db_on_progress(run, run->out->done, run->out->total, t->best_s, t->best_gflops);
}

/* Whether every candidate of round k is in. */
static bool complete(const pipe_t *p, int k) { return p->rounds[k].arrived == p->rounds[k].n; }

/* After round k was learnt: tune_task's error when every learnt trial of
 * its key failed alike (malloc'd), else NULL. */
static char *learnt_failed(pipe_t *p, int k) {
    return tune__search_failed(p->tasks[p->rounds[k].task].s);
}

int tune__db_pipeline(tune__db_run *run, tune__sched *ss, cm_model *model, char **err) {
    tune_db_summary *out = run->out;
    const tune_db_options *o = run->o;
    const tune_measure_backend *be = o->tune.measure.backend;
    int n = out->ntasks;
    int per_round = o->tune.per_round > 0 ? o->tune.per_round : 64;
    if (per_round > 1024) per_round = 1024;
    pipe_t p = {.run = run, .ss = ss, .model = model};
    p.tasks = calloc((size_t)n, sizeof *p.tasks);
    enum { MAXR = 64 };
    tune_result *res = calloc(MAXR, sizeof *res);
    int64_t tags[MAXR];
    if (!p.tasks || !res) {
        free(p.tasks), free(res);
        if (err) *err = tune__strdupf("autotune: out of memory");
        return -1;
    }
    int left = out->total - out->done; /* candidates still to propose */
    bool dry = false;                  /* no key has a candidate left */
    bool failed = false;               /* an error: take what is in flight, then stop */
    char *why = NULL;
    job_t *job = NULL;
    double last = rt_now();
    for (;;) {
        bool stop = stop_requested(run);
        /* The next job: learn the round two back (its results are all in)
         * and propose the next one. */
        int k = p.nrounds, L = k - 2;
        if (!job && !stop && !failed && !dry && left > 0 && (L < 0 || complete(&p, L))) {
            job = calloc(1, sizeof *job);
            if (!job) {
                why = tune__strdupf("autotune: out of memory");
                failed = true;
                continue;
            }
            job->p = &p;
            job->learn = job->task = -1;
            if (L >= 0 && !p.rounds[L].learnt) {
                p.rounds[L].learnt = true;
                sched_learn(&p, L);
                job->learn = L;
            }
            int ti = n == 1 ? 0
                            : tune_scheduler_pick(n, ss->weights, ss->nrounds,
                                                  (const double *const *)ss->hist, ss->best,
                                                  ss->flops, ss->groups);
            if (ti < 0 || ss->weights[ti] == 0) {
                dry = true; /* every key's search has run dry */
            } else {
                job->task = ti;
                job->want = left < per_round ? left : per_round;
                job->out = calloc((size_t)job->want, sizeof *job->out);
                if (!job->out) job->task = -1;
                if (!p.tasks[ti].s) task_options(&p, ti);
            }
            if (job->learn < 0 && job->task < 0) {
                free(job->out), free(job);
                job = NULL;
            } else {
                job_start(job);
            }
        }
        if (job && atomic_load(&job->done)) {
            if (job->threaded) pthread_join(job->th, NULL);
            int ti = job->task;
            if (ti >= 0 && p.tasks[ti].logs) {
                tune__db_free_logs(p.tasks[ti].logs, p.tasks[ti].nl);
                p.tasks[ti].logs = NULL;
                p.tasks[ti].to.known_steps = NULL;
                p.tasks[ti].to.nknown = 0;
            }
            char *f = job->learn >= 0 && !stop ? learnt_failed(&p, job->learn) : NULL;
            if (job->learn >= 0) { /* learnt: only its figures stay */
                pround *r = &p.rounds[job->learn];
                proposals_free(r->c, r->n);
                free(r->res);
                r->c = NULL, r->res = NULL;
            }
            if (f || job->rc) {
                free(why);
                why = f ? f : job->err;
                if (f) free(job->err);
                job->err = NULL;
                failed = true;
                proposals_free(job->out, job->got);
            } else if (ti >= 0 && job->got == 0) {
                /* Its search space is exhausted (or a stop came first). */
                if (!stop_requested(run)) ss->weights[ti] = 0;
                free(job->out);
            } else if (ti >= 0 && (stop_requested(run) || failed)) {
                proposals_free(job->out, job->got);
            } else if (ti >= 0) {
                left -= job->got;
                char *e = NULL;
                if (submit_round(&p, ti, job->out, job->got, &e)) {
                    free(why);
                    why = e;
                    failed = true;
                }
            }
            free(job->err);
            free(job);
            job = NULL;
            continue;
        }
        bool idle = p.arrived == p.submitted;
        if (!job && idle && (stop || failed || dry || left <= 0)) break;
        if (!idle) {
            /* Short waits while a job runs: its end is seen promptly. */
            int got = be->poll(be->user, job ? 0.002 : 0.05, MAXR, res, tags);
            if (got < 0) {
                free(why);
                why = strdup(tune__measurer_errmsg(p.tasks[p.rounds[p.nrounds - 1].task].m));
                failed = true;
                /* The candidates in flight are lost. */
                for (int r = 0; r < p.nrounds; r++) {
                    pround *x = &p.rounds[r];
                    for (int j = 0; j < x->n && x->arrived < x->n; j++)
                        if (!x->res[j].trial && !x->res[j].dropped) {
                            x->res[j].dropped = true;
                            x->arrived++;
                            p.arrived++;
                        }
                }
            }
            for (int i = 0; i < got; i++) take(&p, tags[i], &res[i]);
            if (out->commit_errors > 3 && !failed) {
                free(why);
                why = run->commit_error ? strdup(run->commit_error) : NULL;
                failed = true;
            }
        } else if (job) {
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        double now = rt_now();
        if (job && !idle) out->overlap_s += now - last;
        last = now;
    }
    /* The rounds not learnt yet, now that all is in: the stored model and
     * the closing error of a key whose trials all failed alike. */
    for (int k = 0; k < p.nrounds && !failed && !stop_requested(run); k++) {
        if (p.rounds[k].learnt) continue;
        p.rounds[k].learnt = true;
        sched_learn(&p, k);
        pround *r = &p.rounds[k];
        tune__search_learn(p.tasks[r->task].s, r->n, r->c, r->res);
        char *f = learnt_failed(&p, k);
        if (f) {
            free(why);
            why = f;
            failed = true;
        }
    }
    for (int i = 0; i < n; i++) {
        ptask *pt = &p.tasks[i];
        if (pt->s) {
            const tune_summary *s = tune__search_summary(pt->s);
            out->search_s += s->search_s, out->train_s += s->train_s;
            memcpy(out->tasks[i].first_steps_note, s->first_steps_note,
                   sizeof s->first_steps_note);
            out->tasks[i].sketches_dropped = s->sketches_dropped;
        }
        double b = 0, r = 0;
        tune_measurer_times(pt->m, &b, &r);
        out->build_s += b, out->run_s += r;
        tune__search_close(pt->s);
        tune_measurer_free(pt->m);
        tune__db_free_logs(pt->logs, pt->nl);
    }
    out->stopped |= o->tune.stop && *o->tune.stop;
    for (int k = 0; k < p.nrounds; k++) {
        proposals_free(p.rounds[k].c, p.rounds[k].n);
        free(p.rounds[k].res);
    }
    free(p.rounds);
    free(p.tasks);
    free(res);
    if (failed) {
        if (err) *err = why ? why : tune__strdupf("autotune: tuning failed");
        else free(why);
        return -1;
    }
    free(why);
    return 0;
}
