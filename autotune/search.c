/*
 * autotune/search.c — tuning one task: sketches, random annotation into an
 * initial population, evolutionary search ranked by the scorer (Ansor §5:
 * score-proportional selection, mutation with probability 0.85, a few
 * generations), the best not-yet-measured programs plus an eps-greedy
 * share of random ones measured each round, the scorer retrained on the
 * measurements. Programs are deduplicated by their step log.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/tune_internal.h"
#include "loom/ops.h"
#include "loom/runtime.h"
#include "loom/tuning_db.h"

/* ---- a set of 64-bit hashes (open addressing; 0 is remapped) ---- */
typedef struct {
    uint64_t *k;
    size_t cap, n;
} hset;

static uint64_t fix(uint64_t h) { return h ? h : 1; }

static bool hset_has(const hset *s, uint64_t h) {
    if (!s->cap) return false;
    h = fix(h);
    for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (s->k[i] == h) return true;
        if (!s->k[i]) return false;
    }
}

static int hset_add(hset *s, uint64_t h) {
    h = fix(h);
    if ((s->n + 1) * 2 > s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 1024;
        uint64_t *nk = calloc(nc, sizeof *nk);
        if (!nk) return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->k[i])
                for (size_t j = s->k[i] & (nc - 1);; j = (j + 1) & (nc - 1))
                    if (!nk[j]) {
                        nk[j] = s->k[i];
                        break;
                    }
        free(s->k);
        s->k = nk;
        s->cap = nc;
    }
    for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (s->k[i] == h) return 0;
        if (!s->k[i]) {
            s->k[i] = h;
            s->n++;
            return 0;
        }
    }
}

/* ---- a scratch ctx with the workload built, recycled as it grows ---- */
typedef struct {
    const char *key;
    te_ctx *ctx;
    tune_workload w;
} scratch;

static int scratch_fresh(scratch *sc) {
    te_ctx_free(sc->ctx);
    sc->ctx = te_ctx_new();
    return sc->ctx ? tune_build_workload(sc->ctx, sc->key, &sc->w) : -1;
}

typedef struct {
    tune_program p;
    uint64_t h;
    double score;
} cand;

/* A program measured without error in this run, with its latency. */
typedef struct {
    tune_program p;
    double lat;
} measured_prog;

typedef struct {
    const char *key;
    const tune_options *o;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int nsk;
    uint64_t rng;
    hset measured;
    scratch sc;
    int nseed;             /* programs of the best stored logs (resume) */
    tune_program *seed;
    measured_prog *good;   /* every valid measurement of this run */
    int ngood, capgood;
    /* Programs filled by the default schedules' rules (tune_program_
     * heuristic, else tune_program_structural: at most TUNE_MAX_HEURISTIC
     * per sketch), measured first; done once all were measured. */
    tune_program heur[TUNE_MAX_HEURISTIC * TUNE_MAX_SKETCHES];
    uint64_t heur_h[TUNE_MAX_HEURISTIC * TUNE_MAX_SKETCHES]; /* their step-log hashes */
    int nheur;
    bool heur_done;
    bool gpu;              /* target cuda: GPU sketches, GPU pipeline + verifier */
    tir_gpu_limits lim;    /* the verifier's limits for the target (tune_gpu_limits_for) */
    /* The user's first steps (tune_options.first_steps_json) as a program
     * of a sketch, when one reproduces them (first_mapped). */
    tune_program first;
    bool first_mapped;
    /* first seeds the population: the steps' own program (first_mapped)
     * or, for a schedule no sketch reproduces, the nearest program. */
    bool first_seed;
    /* The error every failed trial of this run had, while they agree
     * (all_failed_same): a run where all fail alike is an error. */
    int fail_code;
    char fail_msg[256];
    bool fail_differ;
} tuner;

/* s (built in ctx) as the scorer sees programs (tune__lower_for_model);
 * on GPU also through the verifier that filters invalid programs. */
static tir_func *lowered(const tuner *t, te_ctx *ctx, sch_schedule *s, int nargs,
                         te_tensor **args) {
    return tune__lower_for_model(ctx, s, nargs, args, t->sc.w.constant_args,
                                 t->gpu ? &t->lim : NULL);
}

/* One batch of candidates, evaluated on the thread pool: each chunk
 * applies, hashes, lowers and runs the pipeline (for the scorer, and on
 * GPU for the verifier that filters invalid programs) in a ctx of its own,
 * kept until the scorer has seen the batch. */
typedef struct {
    tuner *t;
    cand *c;
    const tir_func **funcs; /* per candidate; NULL: invalid or not needed */
    te_ctx **ctxs;          /* at each chunk's first index; the caller frees */
    bool lower;
} eval_batch;

static int eval_chunk(int64_t begin, int64_t end, void *env) {
    eval_batch *e = env;
    const tuner *t = e->t;
    te_ctx *ctx = e->ctxs[begin] = te_ctx_new();
    tune_workload w;
    if (!ctx || tune_build_workload(ctx, t->key, &w)) return -1;
    for (int64_t i = begin; i < end; i++) {
        cand *c = &e->c[i];
        sch_schedule *s = tune_program_apply(ctx, &w, &t->sk[c->p.sketch], &c->p);
        if (!s) continue;
        c->h = tune__log_hash(tdb_schedule_to_json(s));
        if (!e->lower) continue;
        if (!(e->funcs[i] = lowered(t, ctx, s, w.nargs, w.args))) c->h = 0;
    }
    return 0;
}

/* Applies, hashes and (with a scorer) scores n programs; invalid ones get
 * h = 0. The random scores (no scorer, or ties) are drawn first, in order,
 * so the outcome does not depend on the thread count. Applying and
 * lowering run in parallel (a round lowers population x generations
 * programs: most of a GPU round's search time); the scorer runs on the
 * calling thread. Returns 0 or -1 (the workload no longer builds). */
static int evaluate(tuner *t, cand *c, int n) {
    const tune_scorer *sco = &t->o->scorer;
    enum { BATCH = 256 };
    const tir_func *funcs[BATCH];
    te_ctx *ctxs[BATCH];
    for (int i = 0; i < n; i++) {
        c[i].h = 0;
        c[i].score = (double)(tune_rand(&t->rng) >> 11) * 0x1p-53;
    }
    for (int b0 = 0; b0 < n; b0 += BATCH) {
        /* A stop request ends a round's search within a batch: under
         * mpirun, rank 0 has a second after Ctrl-C to save its results. */
        if (t->o->stop && *t->o->stop) return -1;
        int bn = n - b0 < BATCH ? n - b0 : BATCH;
        memset(funcs, 0, sizeof funcs);
        memset(ctxs, 0, sizeof ctxs);
        eval_batch e = {t, c + b0, funcs, ctxs, sco->predict || t->gpu};
        int rc = rt_parallel_for(bn, eval_chunk, &e);
        if (!rc && sco->predict) {
            const tir_func *fs[BATCH];
            int idx[BATCH], nf = 0;
            for (int i = 0; i < bn; i++)
                if (funcs[i]) fs[nf] = funcs[i], idx[nf++] = i;
            double sc[BATCH];
            if (nf && sco->predict(sco->user, nf, fs, sc) == 0)
                for (int k = 0; k < nf; k++) c[b0 + idx[k]].score = sc[k];
        }
        for (int i = 0; i < bn; i++) te_ctx_free(ctxs[i]);
        if (rc) return -1;
    }
    return 0;
}

static int cmp_cand(const void *a, const void *b) {
    const cand *x = a, *y = b;
    return x->score > y->score ? -1 : x->score < y->score ? 1 : (x->h < y->h ? -1 : x->h > y->h);
}

/* Keeps a valid measurement for the initial populations of later rounds. */
static void remember(tuner *t, const tune_program *p, double lat) {
    if (t->ngood == t->capgood) {
        int nc = t->capgood ? 2 * t->capgood : 256;
        measured_prog *g = realloc(t->good, sizeof *g * (size_t)nc);
        if (!g) return; /* the search goes on without it */
        t->good = g, t->capgood = nc;
    }
    t->good[t->ngood++] = (measured_prog){*p, lat};
}

static int cmp_lat(const void *a, const void *b) {
    const measured_prog *x = a, *y = b;
    return (x->lat > y->lat) - (x->lat < y->lat);
}

static void random_program(tuner *t, tune_program *p) {
    int s = (int)(tune_rand(&t->rng) % (uint64_t)t->nsk);
    tune_program_random(&t->sk[s], s, &t->rng, p);
}

/* Picks `want` programs to measure; returns how many (fewer when the
 * space is exhausted). */
static int next_batch(tuner *t, int want, tune_program *out) {
    const tune_options *o = t->o;
    int P = o->population > 0 ? o->population : 2048;
    int G = o->generations > 0 ? o->generations : 4;
    double pm = o->mutation_prob > 0 ? o->mutation_prob : 0.85;
    double eps = o->eps_greedy > 0 ? o->eps_greedy : 0.05;
    cand *pop = calloc((size_t)P, sizeof *pop), *nxt = calloc((size_t)P, sizeof *nxt);
    cand *init = calloc((size_t)P, sizeof *init);
    cand *all = calloc((size_t)P * (size_t)(G + 1), sizeof *all);
    int nall = 0, ninit = 0, got = 0;
    hset seen = {0}, picked = {0};
    if (!pop || !nxt || !init || !all) goto done;
    /* Initial population: the seeds (best stored programs), the fastest
     * programs measured in this run (together at most a fifth of the
     * population: Ansor's sample_init_use_measured_ratio), then random
     * annotation; invalid programs filtered. Without the measured ones,
     * evolution would refine only what the model believes is fast, never
     * what was seen to be fast. */
    for (int i = 0; i < t->nseed && ninit < P; i++) init[ninit++].p = t->seed[i];
    if (o->scorer.predict && t->ngood) {
        qsort(t->good, (size_t)t->ngood, sizeof *t->good, cmp_lat);
        int cap = P / 5 > ninit ? P / 5 : ninit;
        for (int i = 0; i < t->ngood && ninit < cap; i++) init[ninit++].p = t->good[i].p;
    }
    if (ninit) {
        if (evaluate(t, init, ninit)) goto done;
        int k = 0;
        for (int i = 0; i < ninit; i++)
            if (init[i].h) init[k++] = init[i];
        ninit = k;
    }
    for (int tries = 0; ninit < P && tries < 4; tries++) {
        int n = P - ninit;
        for (int i = 0; i < n; i++) random_program(t, &init[ninit + i].p);
        if (evaluate(t, init + ninit, n)) goto done;
        int k = ninit;
        for (int i = ninit; i < ninit + n; i++)
            if (init[i].h) init[k++] = init[i];
        ninit = k;
    }
    if (!ninit) goto done;
    if (o->on_population) {
        tune_program *pp = malloc(sizeof *pp * (size_t)ninit);
        if (pp) {
            for (int i = 0; i < ninit; i++) pp[i] = init[i].p;
            o->on_population(o->user, ninit, pp);
            free(pp);
        }
    }
    memcpy(pop, init, sizeof(cand) * (size_t)ninit);
    int npop = ninit;
    for (int i = 0; i < npop; i++)
        if (!hset_has(&seen, pop[i].h)) hset_add(&seen, pop[i].h), all[nall++] = pop[i];
    for (int g = 0; g < G && o->scorer.predict; g++) {
        /* Score-proportional selection, then mutation. */
        double lo = INFINITY, sum = 0;
        for (int i = 0; i < npop; i++) lo = fmin(lo, pop[i].score);
        for (int i = 0; i < npop; i++) sum += pop[i].score - lo + 1e-9;
        for (int i = 0; i < P; i++) {
            double r = (double)(tune_rand(&t->rng) >> 11) * 0x1p-53 * sum, acc = 0;
            int j = 0;
            for (; j < npop - 1; j++) {
                acc += pop[j].score - lo + 1e-9;
                if (acc >= r) break;
            }
            nxt[i].p = pop[j].p;
            if ((double)(tune_rand(&t->rng) >> 11) * 0x1p-53 < pm)
                tune_program_mutate(&t->sk[nxt[i].p.sketch], &t->rng, &nxt[i].p);
        }
        if (evaluate(t, nxt, P)) goto done;
        npop = 0;
        for (int i = 0; i < P; i++)
            if (nxt[i].h) pop[npop++] = nxt[i];
        if (!npop) break;
        for (int i = 0; i < npop; i++)
            if (!hset_has(&seen, pop[i].h)) hset_add(&seen, pop[i].h), all[nall++] = pop[i];
    }
    /* The heuristic programs first (until each was measured), then the
     * best unmeasured programs, then an eps share of random ones. */
    if (!t->heur_done) {
        bool left = false;
        for (int i = 0; i < t->nheur; i++) {
            uint64_t h = t->heur_h[i];
            if (hset_has(&t->measured, h) || hset_has(&picked, h)) continue;
            if (got == want) {
                left = true;
                continue;
            }
            hset_add(&picked, h);
            out[got++] = t->heur[i];
        }
        t->heur_done = !left;
    }
    /* Half: neighbours one or two steps from the fastest measured
     * programs (autotune/neighbour.c), best parent first, so that the
     * search refines what it saw to be fast even where the model ranks
     * mutations of it no better than random ones (a depthwise
     * convolution's: 199 trials after its structural program never beat
     * it, averaging 6x its time). Two steps: a few rounds reach a tile
     * and a padding placement that each need a step. */
    if (o->scorer.predict && t->ngood && got < want) {
        qsort(t->good, (size_t)t->ngood, sizeof *t->good, cmp_lat);
        int nlocal = want / 2 > 0 ? want / 2 : 1, nparent = t->ngood < 4 ? t->ngood : 4;
        int nn = 8 * nlocal;
        cand *nb = calloc((size_t)nn, sizeof *nb);
        if (!nb) goto done;
        for (int i = 0; i < nn; i++) {
            nb[i].p = t->good[i % nparent].p;
            for (int step = 0; step <= (i / nparent) % 2; step++)
                (void)tune_program_neighbour(&t->sk[nb[i].p.sketch], &t->rng, &nb[i].p);
        }
        if (evaluate(t, nb, nn)) {
            free(nb);
            goto done;
        }
        for (int i = 0, took = 0; i < nn && took < nlocal && got < want; i++)
            if (nb[i].h && !hset_has(&t->measured, nb[i].h) && !hset_has(&picked, nb[i].h)) {
                hset_add(&picked, nb[i].h);
                out[got++] = nb[i].p;
                took++;
            }
        free(nb);
    }
    qsort(all, (size_t)nall, sizeof *all, cmp_cand);
    int nbest = want - (int)floor(want * eps + 0.5);
    if (!o->scorer.predict) nbest = 0; /* random ranking: all picks are random */
    for (int i = 0; i < nall && got < nbest; i++)
        if (!hset_has(&t->measured, all[i].h) && !hset_has(&picked, all[i].h)) {
            hset_add(&picked, all[i].h);
            out[got++] = all[i].p;
        }
    for (int i = 0; i < ninit && got < want; i++)
        if (!hset_has(&t->measured, init[i].h) && !hset_has(&picked, init[i].h)) {
            hset_add(&picked, init[i].h);
            out[got++] = init[i].p;
        }
    for (int i = 0; i < nall && got < want; i++)
        if (!hset_has(&t->measured, all[i].h) && !hset_has(&picked, all[i].h)) {
            hset_add(&picked, all[i].h);
            out[got++] = all[i].p;
        }
done:
    free(pop), free(nxt), free(init), free(all), free(seen.k), free(picked.k);
    return got;
}

/* Takes one measured result into the summary (trial number, best) and
 * hands it to on_record; marks the summary stopped when on_record asks. */
static void take_result(tuner *t, double flops, tune_summary *sum, tune_result *r) {
    const tune_options *o = t->o;
    r->trial = ++sum->measured;
    if (!r->error_code) {
        sum->valid++;
        if (!sum->best_trial || r->median < sum->best_s) {
            sum->best_trial = r->trial;
            sum->best_s = r->median;
            sum->best_gflops = flops > 0 ? flops / r->median * 1e-9 : 0;
            free(sum->best_steps_json);
            sum->best_steps_json = strdup(r->steps_json);
        }
    } else if (!t->fail_code) {
        t->fail_code = r->error_code;
        snprintf(t->fail_msg, sizeof t->fail_msg, "%s", r->error_msg);
    } else if (t->fail_code != r->error_code || strcmp(t->fail_msg, r->error_msg)) {
        t->fail_differ = true;
    }
    if (o->on_record && o->on_record(o->user, r)) sum->stopped = true;
}

/* Measures schedule s (built in t->sc.ctx on args) as the next trial
 * unless a program with its log was measured before (resume); p (may be
 * NULL): its program, which evolution then starts from like any measured
 * one. 1 when measured, 0 when skipped, -1 when no runner can start. */
static int measure_schedule(tuner *t, tune_measurer *m, sch_schedule *s, int nargs,
                            te_tensor **args, const tune_program *p, tune_summary *sum) {
    const tune_options *o = t->o;
    char *json = tdb_schedule_to_json(s);
    if (!json) return 0;
    uint64_t h = tune_hash(json);
    if (hset_has(&t->measured, h)) {
        free(json);
        return 0;
    }
    int hook = o->hook_for_trial ? o->hook_for_trial(o->user, sum->measured + 1) : 0;
    tune_result r;
    int rc = tune_measure(m, 1, (const char *const *)&json, &hook, 0, &r);
    if (rc == 0 && r.dropped) {
        free(json);
        return 0;
    }
    if (rc == 0) {
        hset_add(&t->measured, h);
        double lat = r.error_code ? -1 : r.median;
        if (p && lat > 0) remember(t, p, lat);
        take_result(t, t->sc.w.flops, sum, &r);
        /* The model learns from it like from any measured program. */
        tir_func *f = o->scorer.update ? lowered(t, t->sc.ctx, s, nargs, args) : NULL;
        if (f) o->scorer.update(o->scorer.user, o->scorer.task, 1, (const tir_func *const *)&f, &lat);
    }
    free(json);
    return rc ? -1 : 1;
}

/* The first trial: the operator's default schedule (tune_options.
 * skip_default): ops_default_schedule for an ops workload, else on the
 * CPU tune_default_schedule, which is what the graph executor runs for a
 * fused group without a record (so a tuned record never loses to it).
 * Targets without a default schedule and defaults measured before are
 * skipped. 0, or -1 when no runner can start. */
static int measure_default(tuner *t, tune_measurer *m, const char *target, tune_summary *sum) {
    if (scratch_fresh(&t->sc)) return 0;
    ops_workload *ow = ops_from_key(t->sc.ctx, t->key);
    if (ow) {
        sch_schedule *s = ops_default_schedule(ow, target);
        return s && measure_schedule(t, m, s, ow->nargs, ow->args, NULL, sum) < 0 ? -1 : 0;
    }
    if (t->gpu) return 0;
    sch_schedule *s = tune_default_schedule(t->sc.ctx, &t->sc.w, target, NULL);
    return s && measure_schedule(t, m, s, t->sc.w.nargs, t->sc.w.args, NULL, sum) < 0 ? -1 : 0;
}

/* The user's own schedule (tune_options.first_steps_json), replayed on
 * the workload in t->sc: NULL with a malloc'd message in *err when it
 * does not parse or replay. */
static sch_schedule *first_schedule(tuner *t, char **err) {
    int ns;
    sch_step *st;
    sch_schedule *s = NULL;
    if (!tdb_steps_from_json(t->sc.ctx, t->o->first_steps_json, &ns, &st))
        s = sch_replay(t->sc.ctx, t->sc.w.nouts, t->sc.w.outs, ns, st);
    if (!s && err)
        *err = tune__strdupf("autotune: first_steps_json does not apply to workload '%s': %s",
                             t->key, te_ctx_errmsg(t->sc.ctx));
    return s;
}

/* Maps the first steps onto a sketch (they then seed every round's
 * population) or says in sum->first_steps_note why they cannot. -1 with
 * *err when the workload no longer builds. */
static int map_first(tuner *t, tune_summary *sum, char **err) {
    char *why = NULL;
    int common = 0, total = 0;
    int r = tune__program_nearest(t->key, t->sk, t->nsk, t->o->first_steps_json, &t->first,
                                  &common, &total, &why);
    t->first_mapped = r == 1;
    t->first_seed = r == 1 || r == 2;
    /* A schedule written by hand is rarely a sketch's program; evolution
     * then starts from the sketch program nearest to it, while the
     * schedule itself is measured as it is. */
    if (r == 2)
        snprintf(sum->first_steps_note, sizeof sum->first_steps_note,
                 "the first steps are no sketch's program (a schedule written by hand): they "
                 "are measured as a trial, and the search is seeded with the nearest program "
                 "of sketch %d (%d of the %d steps in common)",
                 t->first.sketch, common, total);
    else if (r != 1)
        snprintf(sum->first_steps_note, sizeof sum->first_steps_note,
                 "the first steps could not seed the search (%s): they are measured "
                 "as a trial, and evolution starts from the sketches alone",
                 r == 0 ? "no program of any sketch of the workload is valid"
                        : why ? why : "out of memory");
    free(why);
    if (scratch_fresh(&t->sc)) {
        if (err) *err = tune__strdupf("autotune: %s", te_ctx_errmsg(t->sc.ctx));
        return -1;
    }
    return 0;
}

/* The error of a run whose every trial failed alike (the runner could not
 * rebuild the workload, every program crashes the same way): a malloc'd
 * message, or NULL when some trial ran or the failures differ. */
static char *all_failed(const tuner *t, const tune_summary *sum) {
    if (sum->measured == 0 || sum->valid || t->fail_differ || !t->fail_code) return NULL;
    /* A runner that cannot build the workload at all: the builder was
     * registered after tune_runner_maybe_run (or in no runner at all). */
    bool builder = t->fail_code == TUNE_ERR_INSTANTIATION && strstr(t->fail_msg, "has no builder");
    char what[48];
    if (sum->measured == 1) snprintf(what, sizeof what, "the only trial");
    else snprintf(what, sizeof what, "every one of the %d trials", sum->measured);
    return tune__strdupf("autotune: %s of workload '%s' failed: %s error: %s%s", what, t->key,
                         tune_error_name(t->fail_code), t->fail_msg,
                         builder ? " (is the builder registered before tune_runner_maybe_run, "
                                   "or its plugin loaded with tune_load_plugin?)"
                                 : "");
}

static void tuner_free(tuner *t) {
    if (!t) return;
    te_ctx_free(t->sc.ctx);
    free(t->measured.k);
    free(t->seed);
    free(t->good);
    free(t);
}

/* The tuner of workload `key` (borrowed) on target with options o
 * (borrowed; known_steps only during the call): sketches, heuristic
 * programs, the known programs, the first steps and the seeds. NULL
 * with *err set (left NULL when out of memory). */
static tuner *tuner_open(const char *key, const char *target, const tune_options *o,
                         tune_summary *sum, char **err) {
    tuner *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->key = key;
    t->o = o;
    t->rng = o->seed ? o->seed * 0x9E3779B97F4A7C15ull + 1 : 1;
    t->sc.key = key;
    if (scratch_fresh(&t->sc)) {
        if (err) *err = tune__strdupf("autotune: %s", te_ctx_errmsg(t->sc.ctx));
        goto out;
    }
    t->gpu = tune_target_is_cuda(target);
    if (t->gpu) t->lim = tune_gpu_limits_for(target);
    t->nsk = t->gpu ? tune_generate_sketches_gpu_for(t->sc.ctx, &t->sc.w, target, t->sk,
                                                     TUNE_MAX_SKETCHES, &sum->sketches_dropped)
                    : tune_generate_sketches_ex(t->sc.ctx, &t->sc.w, t->sk, TUNE_MAX_SKETCHES,
                                                &sum->sketches_dropped);
    if (t->nsk <= 0) {
        if (err) *err = tune__strdupf("autotune: %s", te_ctx_errmsg(t->sc.ctx));
        goto out;
    }
    /* The default schedules' rules give the search its first programs
     * (those that apply; hashed once, for deduplication): the heuristic
     * programs, then the structural program of each sketch without them
     * (what tune_default_schedule derives for a workload with no library
     * default: a depthwise convolution's best start). */
    int vlen = tune_host_vector_lanes(), nh[TUNE_MAX_SKETCHES] = {0};
    /* GPU: no heuristic programs; the structural ones of the sketches that
     * have them (a tensor-core sketch: the template's default config) */
    for (int pass = t->gpu ? 1 : 0; pass < 2 && !o->no_heuristic; pass++)
        for (int k = 0; k < t->nsk; k++) {
            tune_program hp[TUNE_MAX_HEURISTIC];
            int n;
            if (pass == 0)
                n = nh[k] = tune_program_heuristic(&t->sk[k], k, &t->sc.w, vlen, hp,
                                                   TUNE_MAX_HEURISTIC);
            else
                n = nh[k] ? 0 : tune_program_structural(&t->sk[k], k, &t->sc.w, vlen, hp);
            for (int i = 0; i < n; i++) {
                sch_schedule *s = tune_program_apply(t->sc.ctx, &t->sc.w, &t->sk[k], &hp[i]);
                if (!s) continue;
                uint64_t h = tune__log_hash(tdb_schedule_to_json(s));
                bool dup = false;
                for (int j = 0; j < t->nheur && !dup; j++) dup = t->heur_h[j] == h;
                if (dup) continue;
                t->heur_h[t->nheur] = h;
                t->heur[t->nheur++] = hp[i];
            }
        }
    /* Programs measured before (resume) are never measured again. */
    for (int i = 0; i < o->nknown; i++) {
        int ns;
        sch_step *st;
        if (tdb_steps_from_json(t->sc.ctx, o->known_steps[i], &ns, &st)) continue;
        sch_schedule *s = sch_replay(t->sc.ctx, t->sc.w.nouts, t->sc.w.outs, ns, st);
        if (s) hset_add(&t->measured, tune__log_hash(tdb_schedule_to_json(s)));
    }
    /* The user's own schedule must replay, and seeds the population
     * first when a sketch reproduces it. */
    if (o->first_steps_json && (!first_schedule(t, err) || map_first(t, sum, err))) goto out;
    /* The best stored programs seed the population (resume). */
    int nfirst = t->first_seed ? 1 : 0;
    if ((o->nseed > 0 && o->known_steps) || nfirst) {
        int ns = o->nseed > 0 && o->known_steps ? o->nseed < o->nknown ? o->nseed : o->nknown : 0;
        t->seed = calloc((size_t)(ns + nfirst) + 1, sizeof *t->seed);
        if (t->seed && nfirst) t->seed[t->nseed++] = t->first;
        for (int i = 0; t->seed && i < ns; i++)
            if (tune_program_from_steps(key, t->sk, t->nsk, o->known_steps[i],
                                        &t->seed[t->nseed], NULL) == 1)
                t->nseed++;
        if (scratch_fresh(&t->sc)) {
            if (err) *err = tune__strdupf("autotune: %s", te_ctx_errmsg(t->sc.ctx));
            goto out;
        }
    }
    return t;
out:
    tuner_free(t);
    return NULL;
}

/* Retrains the scorer once per round (Ansor) on the round's n
 * measurements, features taken at the point evaluate() scores them:
 * measurement i is program progs[i], or where steps[i] is set (steps may
 * be NULL) that step log replayed (a schedule that is no program: the
 * first steps, the default schedule). 0, or -1 when the workload no
 * longer builds. */
static int train(tuner *t, int n, const tune_program *progs, const char *const *steps,
                 const double *lat, tune_summary *sum) {
    const tune_options *o = t->o;
    if (!o->scorer.update || !n) return 0;
    double tt = rt_now();
    if (scratch_fresh(&t->sc)) return -1;
    const tir_func **funcs = calloc((size_t)n, sizeof *funcs);
    double *l2 = calloc((size_t)n, sizeof *l2);
    int nf = 0;
    for (int j = 0; funcs && l2 && j < n; j++) {
        sch_schedule *s = NULL;
        if (steps && steps[j]) {
            int ns;
            sch_step *st;
            if (!tdb_steps_from_json(t->sc.ctx, steps[j], &ns, &st))
                s = sch_replay(t->sc.ctx, t->sc.w.nouts, t->sc.w.outs, ns, st);
        } else {
            const tune_program *p = &progs[j];
            s = tune_program_apply(t->sc.ctx, &t->sc.w, &t->sk[p->sketch], p);
        }
        tir_func *f = s ? lowered(t, t->sc.ctx, s, t->sc.w.nargs, t->sc.w.args) : NULL;
        if (f) funcs[nf] = f, l2[nf++] = lat[j];
    }
    if (nf) o->scorer.update(o->scorer.user, o->scorer.task, nf, funcs, l2);
    free(funcs), free(l2);
    sum->train_s += rt_now() - tt;
    return 0;
}

int tune_task(const char *key, const char *target, const tune_options *o, tune_summary *sum,
              char **err) {
    memset(sum, 0, sizeof *sum);
    double t0 = rt_now();
    if (!o || o->trials <= 0) {
        if (err) *err = tune__strdupf("autotune: trials must be positive");
        return -1;
    }
    int rc = -1;
    tune_measurer *m = NULL;
    char *json[64] = {0};
    tuner *t = tuner_open(key, target, o, sum, err);
    if (!t) {
        sum->seconds = rt_now() - t0;
        return -1;
    }
    double flops = t->sc.w.flops;
    /* The default schedule paces the measurements on the CPU when asked
     * (tune_measure_options.baseline_steps). */
    tune_measure_options mo = o->measure;
    char *baseline = NULL;
    if (!mo.baseline_steps && o->baseline && !t->gpu)
        mo.baseline_steps = baseline = tune_default_steps(key, target);
    m = tune_measurer_new(key, target, &mo, err);
    free(baseline);
    if (!m) goto out;
    int per_round = o->per_round > 0 ? o->per_round : 64;
    if (per_round > 1024) per_round = 1024;
    tune_program *batch = calloc((size_t)per_round, sizeof *batch);
    double *rlat = calloc((size_t)per_round, sizeof *rlat);
    if (!batch || !rlat) goto out_batch;
    /* A remote backend takes a larger batch, to keep all its workers busy. */
    int jobs = tune__measurer_batch(m);
    /* The user's own schedule is the first trial (not again on resume). */
    if (o->first_steps_json) {
        sch_schedule *s = scratch_fresh(&t->sc) ? NULL : first_schedule(t, err);
        if (!s) goto out_batch;
        if (measure_schedule(t, m, s, t->sc.w.nargs, t->sc.w.args,
                             t->first_mapped ? &t->first : NULL, sum) < 0) {
            if (err) *err = strdup(tune__measurer_errmsg(m));
            goto out_batch;
        }
    }
    if (!o->skip_default && measure_default(t, m, target, sum)) {
        if (err) *err = strdup(tune__measurer_errmsg(m));
        goto out_batch;
    }
    while (sum->measured < o->trials && !(o->stop && *o->stop) && !sum->stopped) {
        int want = o->trials - sum->measured < per_round ? o->trials - sum->measured : per_round;
        double ts = rt_now();
        int n = next_batch(t, want, batch);
        sum->search_s += rt_now() - ts;
        if (n == 0) break; /* the search space is exhausted */
        int nr = 0; /* measured this round: batch[0..nr) with latencies rlat */
        /* Measure in chunks of `jobs` so records arrive as they are made
         * and a stop request is honoured quickly. */
        for (int c0 = 0; c0 < n && !(o->stop && *o->stop) && !sum->stopped; c0 += jobs) {
            int cn = n - c0 < jobs ? n - c0 : jobs;
            int hooks[64] = {0};
            if (scratch_fresh(&t->sc)) goto out_batch;
            uint64_t hs[64];
            for (int j = 0; j < cn; j++) {
                const tune_program *p = &batch[c0 + j];
                sch_schedule *s = tune_program_apply(t->sc.ctx, &t->sc.w, &t->sk[p->sketch], p);
                json[j] = s ? tdb_schedule_to_json(s) : NULL;
                hs[j] = json[j] ? tune_hash(json[j]) : 0;
                if (!json[j]) json[j] = strdup("[]");
                if (o->hook_for_trial) hooks[j] = o->hook_for_trial(o->user, sum->measured + j + 1);
            }
            tune_result res[64];
            if (tune_measure(m, cn, (const char *const *)json, hooks, sum->best_s, res)) {
                if (err) *err = strdup(tune__measurer_errmsg(m));
                goto out_batch;
            }
            /* A candidate dropped at a stop request (a backend's, in
             * flight) is no trial: neither counted nor learnt from. */
            double lat[64];
            int idx[64], nk = 0;
            for (int j = 0; j < cn; j++)
                if (!res[j].dropped) idx[nk++] = j;
            for (int k = 0; k < nk; k++) {
                int j = idx[k];
                hset_add(&t->measured, hs[j]);
                lat[k] = res[j].error_code ? -1 : res[j].median;
                if (lat[k] > 0) remember(t, &batch[c0 + j], lat[k]);
                take_result(t, flops, sum, &res[j]);
            }
            /* batch[0..nr) stays aligned with rlat for the training. */
            for (int k = 0; k < nk; k++) {
                batch[nr] = batch[c0 + idx[k]];
                rlat[nr++] = lat[k];
            }
            for (int j = 0; j < cn; j++) free(json[j]), json[j] = NULL;
        }
        if (train(t, nr, batch, NULL, rlat, sum)) goto out_batch;
        if (o->on_progress)
            o->on_progress(o->user, sum->measured, o->trials, sum->best_s, sum->best_gflops);
    }
    if (o->stop && *o->stop) sum->stopped = true;
    char *failed = all_failed(t, sum);
    if (failed) {
        if (err) *err = failed;
        else free(failed);
        goto out_batch;
    }
    rc = 0;
out_batch:
    free(batch), free(rlat);
out:
    tune_measurer_times(m, &sum->build_s, &sum->run_s);
    for (int j = 0; j < 64; j++) free(json[j]);
    tune_measurer_free(m);
    tuner_free(t);
    sum->seconds = rt_now() - t0;
    return rc;
}

/* ---- a task's search a round at a time (tune__search_*: for a driver
 * that measures the rounds elsewhere and overlaps them with the search,
 * autotune/tune_db_pipe.c) ---- */

struct tune__search {
    tuner *t;
    tune_options o; /* the tuner's (t->o) */
    tune_summary sum;
    char *key, *target;
    bool started; /* the first steps and the default schedule were proposed */
};

tune__search *tune__search_open(const char *key, const char *target, const tune_options *o,
                                char **err) {
    tune__search *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->o = *o;
    /* The driver counts, records and hooks the trials itself. */
    s->o.on_record = NULL;
    s->o.on_progress = NULL;
    s->o.hook_for_trial = NULL;
    s->key = strdup(key);
    s->target = strdup(target);
    if (!s->key || !s->target || !(s->t = tuner_open(s->key, s->target, &s->o, &s->sum, err))) {
        tune__search_close(s);
        return NULL;
    }
    s->o.nknown = 0; /* borrowed for the opening only */
    s->o.known_steps = NULL;
    return s;
}

void tune__search_close(tune__search *s) {
    if (!s) return;
    tuner_free(s->t);
    free(s->sum.best_steps_json);
    free(s->key), free(s->target);
    free(s);
}

/* Schedule sch (built in t->sc; may be NULL) as the next proposal, with
 * its program p (may be NULL), unless measured or proposed before: 1 when
 * out was filled, else 0. */
static int propose_schedule(tuner *t, sch_schedule *sch, const tune_program *p,
                            tune__proposal *out) {
    if (!sch) return 0;
    char *json = tdb_schedule_to_json(sch);
    uint64_t h = json ? tune_hash(json) : 0;
    if (!json || hset_has(&t->measured, h) || hset_add(&t->measured, h)) {
        free(json);
        return 0;
    }
    memset(out, 0, sizeof *out);
    out->steps = json;
    if (p) out->program = *p, out->has_program = true;
    return 1;
}

/* The default schedule of measure_default, built in t->sc (NULL: none). */
static sch_schedule *default_schedule(tuner *t, const char *target) {
    if (scratch_fresh(&t->sc)) return NULL;
    ops_workload *ow = ops_from_key(t->sc.ctx, t->key);
    if (ow) return ops_default_schedule(ow, target);
    return t->gpu ? NULL : tune_default_schedule(t->sc.ctx, &t->sc.w, target, NULL);
}

int tune__search_propose(tune__search *s, int want, tune__proposal *out) {
    tuner *t = s->t;
    int got = 0;
    double ts = rt_now();
    /* As tune_task's first trials: the user's steps, the default schedule. */
    if (!s->started) {
        s->started = true;
        if (t->o->first_steps_json && got < want && !scratch_fresh(&t->sc))
            got += propose_schedule(t, first_schedule(t, NULL),
                                    t->first_mapped ? &t->first : NULL, &out[got]);
        if (!t->o->skip_default && got < want)
            got += propose_schedule(t, default_schedule(t, s->target), NULL, &out[got]);
    }
    tune_program *batch = got < want ? calloc((size_t)(want - got), sizeof *batch) : NULL;
    int n = batch ? next_batch(t, want - got, batch) : 0;
    for (int i = 0; i < n; i++) {
        if (i % 64 == 0 && scratch_fresh(&t->sc)) break;
        const tune_program *p = &batch[i];
        got += propose_schedule(t, tune_program_apply(t->sc.ctx, &t->sc.w, &t->sk[p->sketch], p),
                                p, &out[got]);
    }
    free(batch);
    s->sum.search_s += rt_now() - ts;
    return got;
}

void tune__search_learn(tune__search *s, int n, const tune__proposal *p, tune_result *res) {
    tuner *t = s->t;
    tune_program *progs = calloc((size_t)(n > 0 ? n : 1), sizeof *progs);
    const char **steps = calloc((size_t)(n > 0 ? n : 1), sizeof *steps);
    double *lat = calloc((size_t)(n > 0 ? n : 1), sizeof *lat);
    int nr = 0;
    for (int i = 0; i < n; i++) {
        if (res[i].dropped) continue;
        double l = res[i].error_code ? -1 : res[i].median;
        if (p[i].has_program && l > 0) remember(t, &p[i].program, l);
        take_result(t, t->sc.w.flops, &s->sum, &res[i]);
        if (!progs || !steps || !lat) continue; /* learnt without training */
        if (p[i].has_program) progs[nr] = p[i].program;
        else steps[nr] = p[i].steps;
        lat[nr++] = l;
    }
    train(t, nr, progs, steps, lat, &s->sum);
    free(progs), free(steps), free(lat);
}

const tune_summary *tune__search_summary(const tune__search *s) { return &s->sum; }

char *tune__search_failed(const tune__search *s) { return all_failed(s->t, &s->sum); }
