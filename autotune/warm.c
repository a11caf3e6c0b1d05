/*
 * autotune/warm.c — the cost model and the tuning database: featurising
 * stored records (rebuild, replay, lower, tir pipeline, extract: the same
 * point at which the search scores its candidates), the warm start of a
 * new workload's model from every workload of the target (Ansor's
 * transfer across tasks), and the leave-one-workload-out evaluation.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/tune_internal.h"

void tune_dataset_free(tune_dataset *d) {
    if (!d) return;
    for (int i = 0; i < d->n; i++) free((void *)d->progs[i].features);
    for (int i = 0; i < d->ntasks; i++) free(d->keys[i]);
    free(d->progs), free(d->latencies), free(d->task_ids), free(d->keys);
    memset(d, 0, sizeof *d);
}

static int grow(tune_dataset *d, int *cap) {
    if (d->n < *cap) return 0;
    int nc = *cap ? 2 * *cap : 256;
    cm_program *p = realloc(d->progs, sizeof *p * (size_t)nc);
    if (p) d->progs = p;
    double *l = realloc(d->latencies, sizeof *l * (size_t)nc);
    if (l) d->latencies = l;
    int *t = realloc(d->task_ids, sizeof *t * (size_t)nc);
    if (t) d->task_ids = t;
    if (!p || !l || !t) return -1;
    *cap = nc;
    return 0;
}

tir_func *tune__lower_for_model(te_ctx *ctx, sch_schedule *s, int nargs, te_tensor **args,
                                uint64_t constant_args, const tir_gpu_limits *gpu) {
    (void)ctx;
    sch_lower_options o = {.constant_args = gpu ? 0 : constant_args, .model_view = true};
    if (gpu) o.passes.gpu = true, o.passes.gpu_limits = *gpu;
    sch_lowered r;
    return s && !sch_lower_program(s, nargs, args, &o, &r) ? r.main : NULL;
}

/* Featurises the records of one workload into d as task `task`, as the
 * search of their target scores its candidates. */
static int load_task(tune_dataset *d, int *cap, const char *key, const char *target, int task,
                     tdb_record *r, int nr) {
    bool cpu = !tune_target_is_cuda(target);
    tir_gpu_limits lim = cpu ? tune_gpu_limits() : tune_gpu_limits_for(target);
    cm_extract_options xo = {.vector_bytes = tune_target_vector_bytes(target)};
    te_ctx *ctx = NULL;
    tune_workload w;
    int used = 0;
    for (int i = 0; i < nr; i++) {
        /* A fresh ctx every 64 programs keeps the arena small. */
        if (!ctx || used++ % 64 == 63) {
            te_ctx_free(ctx);
            ctx = te_ctx_new();
            if (!ctx) return -1;
            if (tune_build_workload(ctx, key, &w)) {
                d->skipped += nr - i;
                break;
            }
        }
        int ns;
        sch_step *st;
        sch_schedule *s = NULL;
        if (!tdb_steps_from_json(ctx, r[i].steps_json, &ns, &st))
            s = sch_replay(ctx, w.nouts, w.outs, ns, st);
        tir_func *f = tune__lower_for_model(ctx, s, w.nargs, w.args, w.constant_args,
                                            cpu ? NULL : &lim);
        float *x = NULL;
        int k = 0;
        if (!f || !(r[i].median > 0) || cm_extract_ex(NULL, f, &xo, &x, &k, NULL) || k == 0) {
            free(x);
            d->skipped++;
            continue;
        }
        if (grow(d, cap)) {
            free(x);
            te_ctx_free(ctx);
            return -1;
        }
        d->progs[d->n] = (cm_program){x, k};
        d->latencies[d->n] = r[i].median;
        d->task_ids[d->n++] = task;
    }
    te_ctx_free(ctx);
    return 0;
}

int tune_dataset_task(const tune_dataset *d, const char *key) {
    for (int t = 0; t < d->ntasks; t++)
        if (!strcmp(d->keys[t], key)) return t;
    return -1;
}

int tune_dataset_load(tdb_db *db, const char *target, int max_per_task, tune_dataset *out,
                      char **err) {
    memset(out, 0, sizeof *out);
    tdb_summary *sm = NULL;
    int ns = tdb_list(db, target, &sm);
    if (ns < 0) {
        if (err) *err = tune__strdupf("autotune: cannot list the database: %s", tdb_errmsg(db));
        return -1;
    }
    out->keys = calloc((size_t)ns + 1, sizeof *out->keys);
    if (!out->keys) goto oom;
    int cap = 0;
    for (int oi = 0; oi < ns; oi++) {
        const tdb_summary *e = &sm[oi];
        if (e->nvalid <= 0) continue;
        tdb_record *r = NULL;
        int nr = tdb_best(db, e->workload_key, target, max_per_task > 0 ? max_per_task : 1 << 20, &r);
        if (nr < 0) {
            if (err) *err = tune__strdupf("autotune: cannot read records of %s: %s", e->workload_key, tdb_errmsg(db));
            tdb_summaries_free(sm, ns);
            tune_dataset_free(out);
            return -1;
        }
        int before = out->n;
        int task = out->ntasks;
        int lrc = load_task(out, &cap, e->workload_key, target, task, r, nr);
        tdb_records_free(r, nr);
        if (lrc) goto oom;
        if (out->n > before) {
            out->keys[out->ntasks] = strdup(e->workload_key);
            if (!out->keys[out->ntasks++]) goto oom;
        }
    }
    tdb_summaries_free(sm, ns);
    return 0;
oom:
    tdb_summaries_free(sm, ns);
    tune_dataset_free(out);
    if (err) *err = tune__strdupf("autotune: out of memory loading the database's records");
    return -1;
}

cm_model *tune_warm_start(tdb_db *db, const char *target, int nkeys, const char *const *keys,
                          const cm_params *params, int *task_ids, tune_warm_info *info,
                          char **err) {
    tune_warm_info local;
    if (!info) info = &local;
    memset(info, 0, sizeof *info);
    cm_params p;
    if (params) p = *params;
    else cm_params_default(&p);
    p.vector_bytes = tune_target_vector_bytes(target); /* the records' features */
    if (nkeys < 0 || (nkeys > 0 && (!keys || !task_ids))) {
        if (err) *err = tune__strdupf("autotune: warm start: %d keys, keys or task_ids NULL", nkeys);
        return NULL;
    }
    tune_dataset d;
    if (tune_dataset_load(db, target, 0, &d, err)) return NULL;
    /* A workload with records keeps their id; one without gets a new id
     * (the same for a key given twice). */
    int fresh = d.ntasks;
    for (int i = 0; i < nkeys; i++) {
        task_ids[i] = tune_dataset_task(&d, keys[i]);
        for (int j = 0; j < i && task_ids[i] < 0; j++)
            if (!strcmp(keys[j], keys[i])) task_ids[i] = task_ids[j];
        if (task_ids[i] < 0) task_ids[i] = fresh++;
    }
    cm_model *m = NULL;
    char refused[300] = ""; /* why a stored model was not used */
    if (d.n < p.num_warmup_samples) {
        void *blob = NULL;
        size_t len = 0;
        char *fmt = NULL;
        int got = tdb_get_cost_model(db, target, &blob, &len, &fmt);
        if (got == 1 && !(fmt && !strcmp(fmt, CM_BLOB_FORMAT)))
            snprintf(refused, sizeof refused, "its format is '%s', this Loom reads '%s'",
                     fmt ? fmt : "", CM_BLOB_FORMAT);
        if (got == 1 && !refused[0]) {
            cm_params kp = p;
            kp.keep_trees_below_warmup = true;
            char why[256];
            m = cm_model_load_buffer(blob, len, &kp, why, sizeof why);
            if (!m) snprintf(refused, sizeof refused, "%s", cm_load_error_reason(why));
            if (m && cm_model_vector_bytes(m) != p.vector_bytes) {
                /* its trees read vec_lane_waste at another width than the
                 * records' and the candidates' features carry */
                snprintf(refused, sizeof refused,
                         "it was trained on features of %d-byte vectors, this target's are %d",
                         cm_model_vector_bytes(m), p.vector_bytes);
                cm_model_free(m);
                m = NULL;
            }
            if (m && cm_model_is_trained(m)) {
                info->from_blob = info->trained = true;
                snprintf(info->message, sizeof info->message,
                         "cost model: loaded the stored model of %s (%d records are fewer than %d)",
                         target, d.n, p.num_warmup_samples);
            }
        }
        free(blob), free(fmt);
    }
    if (!m) m = cm_model_new(&p);
    if (!m) {
        tune_dataset_free(&d);
        if (err) *err = tune__strdupf("autotune: out of memory");
        return NULL;
    }
    if (d.n > 0) {
        /* Added to the model's own samples: the tuner's retraining keeps them. */
        if (cm_model_update(m, d.n, d.progs, d.latencies, d.task_ids)) {
            if (err) *err = tune__strdupf("autotune: warm start: %s", cm_model_errmsg(m));
            cm_model_free(m);
            tune_dataset_free(&d);
            return NULL;
        }
        info->programs = d.n;
        info->tasks = d.ntasks;
        if (!info->from_blob) {
            info->trained = cm_model_is_trained(m);
            snprintf(info->message, sizeof info->message,
                     info->trained ? "cost model: warm start on %d records of %d workloads"
                                   : "cost model: %d records of %d workloads, too few to train",
                     d.n, d.ntasks);
        }
    }
    if (refused[0]) {
        /* said, not fatal: the model starts from the records (or random)
         * and the next training replaces the stored one */
        size_t used = strlen(info->message);
        snprintf(info->message + used, sizeof info->message - used,
                 "%sthe stored model of %s was not used: %s", used ? "; " : "cost model: ",
                 target, refused);
    }
    tune_dataset_free(&d);
    return m;
}

/* ---- leave-one-workload-out evaluation ---- */

/* Whether program `best` is among the k highest scores (ties: lower index first). */
static bool in_top(int n, const double *sc, int best, int k) {
    int above = 0;
    for (int i = 0; i < n; i++)
        if (sc[i] > sc[best] || (sc[i] == sc[best] && i < best)) above++;
    return above < k;
}

void tune_eval_free(tune_eval *e) {
    if (!e) return;
    for (int i = 0; i < e->nrows; i++) free(e->rows[i].key);
    free(e->rows);
    memset(e, 0, sizeof *e);
}

int tune_eval_model(const tune_dataset *d, const cm_params *params, const bool *held_out,
                    tune_eval *out, char **err) {
    memset(out, 0, sizeof *out);
    if (d->ntasks < 2) {
        if (err) *err = tune__strdupf("eval-model: the database has valid records of %d workload%s "
                                      "for this target; leave-one-out needs at least 2",
                                      d->ntasks, d->ntasks == 1 ? "" : "s");
        return -1;
    }
    cm_params p;
    if (params) p = *params;
    else cm_params_default(&p);
    p.num_warmup_samples = 1;
    out->rows = calloc((size_t)d->ntasks, sizeof *out->rows);
    cm_program *tr = calloc((size_t)d->n, sizeof *tr), *te = calloc((size_t)d->n, sizeof *te);
    double *trl = calloc((size_t)d->n, sizeof *trl), *tel = calloc((size_t)d->n, sizeof *tel);
    int *trt = calloc((size_t)d->n, sizeof *trt);
    double *sc = calloc((size_t)d->n, sizeof *sc), *scr = calloc((size_t)d->n, sizeof *scr);
    int rc = -1, npair = 0, npair_r = 0;
    if (!out->rows || !tr || !te || !trl || !tel || !trt || !sc || !scr) {
        if (err) *err = tune__strdupf("eval-model: out of memory");
        goto done;
    }
    for (int t = 0; t < d->ntasks; t++) {
        if (held_out && !held_out[t]) continue;
        int ntr = 0, nte = 0;
        for (int i = 0; i < d->n; i++) {
            if (d->task_ids[i] == t) te[nte] = d->progs[i], tel[nte++] = d->latencies[i];
            else tr[ntr] = d->progs[i], trl[ntr] = d->latencies[i], trt[ntr++] = d->task_ids[i];
        }
        if (nte < 2) continue;
        cm_model *m = cm_model_new(&p), *rnd = cm_model_new(&p);
        if (!m || !rnd || cm_model_train(m, ntr, tr, trl, trt) || cm_model_predict(m, nte, te, sc) ||
            cm_model_predict(rnd, nte, te, scr)) {
            if (err) *err = tune__strdupf("eval-model: %s: %s", d->keys[t],
                                          m ? cm_model_errmsg(m) : "out of memory");
            cm_model_free(m), cm_model_free(rnd);
            goto done;
        }
        cm_model_free(m), cm_model_free(rnd);
        int best = 0;
        for (int i = 1; i < nte; i++)
            if (tel[i] < tel[best]) best = i;
        tune_eval_row *row = &out->rows[out->nrows++];
        row->key = strdup(d->keys[t]);
        row->programs = nte;
        row->pairwise = cm_pairwise_accuracy(nte, sc, tel, NULL);
        row->pairwise_random = cm_pairwise_accuracy(nte, scr, tel, NULL);
        row->top1 = in_top(nte, sc, best, 1), row->top5 = in_top(nte, sc, best, 5);
        row->top1_random = in_top(nte, scr, best, 1), row->top5_random = in_top(nte, scr, best, 5);
        if (row->pairwise >= 0) out->pairwise += row->pairwise, npair++;
        if (row->pairwise_random >= 0) out->pairwise_random += row->pairwise_random, npair_r++;
        out->top1 += row->top1, out->top5 += row->top5;
        out->top1_random += row->top1_random, out->top5_random += row->top5_random;
    }
    if (out->nrows == 0) {
        if (err) *err = tune__strdupf("eval-model: no %sworkload has 2 or more valid records",
                                      held_out ? "held-out " : "");
        goto done;
    }
    out->pairwise = npair ? out->pairwise / npair : -1;
    out->pairwise_random = npair_r ? out->pairwise_random / npair_r : -1;
    out->top1 /= out->nrows, out->top5 /= out->nrows;
    out->top1_random /= out->nrows, out->top5_random /= out->nrows;
    rc = 0;
done:
    if (rc) tune_eval_free(out);
    free(tr), free(te), free(trl), free(tel), free(trt), free(sc), free(scr);
    return rc;
}
