/*
 * cost_model/xgb_model.c — the XGBoost model of Ansor's cost model (TVM
 * python/tvm/auto_scheduler/cost_model/xgb_model.py, XGBModel): labels are
 * throughputs normalised per task, the pack-sum objective (the rank loss or
 * Ansor's squared error) is given to XGBoosterBoostOneIter as per-row
 * gradients, training stops early on the objective over a held-out share
 * of the programs (and then grows the trees again on every program for
 * the round count chosen), and until enough programs are measured the
 * model predicts at random. Through XGBoost's C API only.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xgboost/c_api.h>

#include "cost_model/cm_internal.h"

struct cm_model {
    cm_params p;
    BoosterHandle bst; /* NULL: random model */
    int rounds;
    uint64_t rng;
    char err[512];
    /* the model's own sample set (cm_model_update) */
    float *feat;
    size_t nrows, caprows;
    int *nstmts, *task;
    double *lat;
    int nprog, capprog;
};

void cm_params_default(cm_params *p) {
    if (!p) return;
    *p = (cm_params){.max_depth = 6,
                     .eta = 0.2,
                     .gamma = 0.001,
                     .min_child_weight = 0,
                     .lambda = 1,
                     .nthread = 0,
                     .train_nthread = 0,
                     .seed = 43,
                     .num_warmup_samples = 100,
                     .max_rounds = 1000,
                     .early_stopping_rounds = 50,
                     .max_bin = 64,
                     .holdout_fraction = 0.2,
                     .refit_all = true,
                     .weight_by_label = true,
                     .loss = CM_LOSS_RANK,
                     .rank_max_partners = 64};
}

static int fail(cm_model *m, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, sizeof m->err, fmt, ap);
    va_end(ap);
    return -1;
}

static int xgb_fail(cm_model *m, const char *what) {
    return fail(m, "cost model: XGBoost %s failed: %s", what, XGBGetLastError());
}

cm_model *cm_model_new(const cm_params *params) {
    cm_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    if (params) m->p = *params;
    else cm_params_default(&m->p);
    m->rng = m->p.seed ^ 0x6c6f6f6d636dULL;
    return m;
}

void cm_model_free(cm_model *m) {
    if (!m) return;
    if (m->bst) XGBoosterFree(m->bst);
    free(m->feat), free(m->nstmts), free(m->task), free(m->lat);
    free(m);
}

const char *cm_model_errmsg(const cm_model *m) { return m ? m->err : "cost model: NULL model"; }
bool cm_model_is_trained(const cm_model *m) { return m && m->bst; }
int cm_model_num_rounds(const cm_model *m) { return m && m->bst ? m->rounds : 0; }
int cm_model_num_samples(const cm_model *m) { return m ? m->nprog : 0; }
int cm_model_vector_bytes(const cm_model *m) {
    return !m ? 0 : m->p.vector_bytes > 0 ? m->p.vector_bytes : 64;
}

/* Threads XGBoost uses to train (train) or to predict; 0 (also for a
 * negative setting) is XGBoost's default, all cores. */
static int threads_for(const cm_model *m, bool train) {
    int n = train && m->p.train_nthread > 0 ? m->p.train_nthread : m->p.nthread;
    return n > 0 ? n : 0;
}

/* Sets h's threads for training or prediction. */
static int set_threads(cm_model *m, BoosterHandle h, bool train) {
    char v[16];
    snprintf(v, sizeof v, "%d", threads_for(m, train));
    if (XGBoosterSetParam(h, "nthread", v)) return xgb_fail(m, "setting parameter nthread");
    return 0;
}

static int set_params(cm_model *m, BoosterHandle h, bool train) {
    if (set_threads(m, h, train)) return -1;
    char v[64];
#define SET(k, fmt, x)                                                                    \
    do {                                                                                  \
        snprintf(v, sizeof v, fmt, x);                                                    \
        if (XGBoosterSetParam(h, k, v)) return xgb_fail(m, "setting parameter " k);       \
    } while (0)
    SET("booster", "%s", "gbtree");
    SET("tree_method", "%s", "hist");
    SET("objective", "%s", "reg:squarederror"); /* unused: gradients are ours */
    SET("base_score", "%s", "0");
    SET("max_depth", "%d", m->p.max_depth);
    SET("eta", "%.17g", m->p.eta);
    SET("gamma", "%.17g", m->p.gamma);
    SET("min_child_weight", "%.17g", m->p.min_child_weight);
    SET("lambda", "%.17g", m->p.lambda);
    SET("seed", "%llu", (unsigned long long)(m->p.seed & 0x7fffffff));
    SET("verbosity", "%d", 0);
    SET("disable_default_eval_metric", "%d", 1);
    if (m->p.max_bin > 0) SET("max_bin", "%d", m->p.max_bin);
#undef SET
    return 0;
}

/* Rows of the programs progs[which[i]] (which NULL: progs[i]), i <
 * count, concatenated, with each row's program (i). */
static float *gather(const cm_program *progs, const int *which, int count, int **prog_of_row,
                     size_t *nrows) {
    size_t rows = 0;
    for (int i = 0; i < count; i++) rows += (size_t)progs[which ? which[i] : i].nstmts;
    float *x = malloc((rows ? rows : 1) * CM_NUM_FEATURES * sizeof *x);
    int *po = malloc((rows ? rows : 1) * sizeof *po);
    if (!x || !po) {
        free(x), free(po);
        return NULL;
    }
    size_t r = 0;
    for (int i = 0; i < count; i++) {
        const cm_program *p = &progs[which ? which[i] : i];
        memcpy(&x[r * CM_NUM_FEATURES], p->features,
               (size_t)p->nstmts * CM_NUM_FEATURES * sizeof *x);
        for (int s = 0; s < p->nstmts; s++) po[r + (size_t)s] = i;
        r += (size_t)p->nstmts;
    }
    *prog_of_row = po;
    *nrows = rows;
    return x;
}

static int make_dmatrix(cm_model *m, const float *x, size_t rows, bool train,
                        DMatrixHandle *out) {
    int nt = threads_for(m, train);
    if (XGDMatrixCreateFromMat_omp(x, (bst_ulong)rows, CM_NUM_FEATURES, NAN, out, nt))
        return xgb_fail(m, "creating a feature matrix");
    return 0;
}

/* Margins (per-row predictions, no transformation). */
static int predict_rows(cm_model *m, BoosterHandle b, DMatrixHandle d, int training,
                        const float **out, bst_ulong *len) {
    if (XGBoosterPredict(b, d, 1, 0, training, len, out)) return xgb_fail(m, "prediction");
    return 0;
}

static bool valid_latency(double l) { return l > 0 && isfinite(l); }

typedef struct { int task, idx; } task_idx;
static int cmp_task_idx(const void *x, const void *y) {
    const task_idx *a = x, *b = y;
    if (a->task != b->task) return a->task < b->task ? -1 : 1;
    return a->idx - b->idx;
}

/* For each program, the smallest valid latency of its task (malloc'd;
 * INFINITY for a task with none). Sorting keeps this O(n log n) for the
 * tens of thousands of records a warm start brings. */
static double *task_minimum(int n, const double *lat, const int *task_ids) {
    double *best = malloc((size_t)(n ? n : 1) * sizeof *best);
    task_idx *t = malloc((size_t)(n ? n : 1) * sizeof *t);
    if (!best || !t) {
        free(best), free(t);
        return NULL;
    }
    for (int i = 0; i < n; i++) t[i] = (task_idx){task_ids ? task_ids[i] : 0, i};
    qsort(t, (size_t)n, sizeof *t, cmp_task_idx);
    for (int g = 0; g < n;) {
        int e = g;
        double mn = INFINITY;
        while (e < n && t[e].task == t[g].task) {
            double l = lat[t[e].idx];
            if (valid_latency(l) && l < mn) mn = l;
            e++;
        }
        for (int k = g; k < e; k++) best[t[k].idx] = mn;
        g = e;
    }
    free(t);
    return best;
}

/* Some of a training call's usable programs as the boosting loop sees
 * them: their statements' rows in an XGBoost matrix, each row's program
 * (an index into this set), labels (borrowed from the caller), weights
 * and, for the rank loss, the pairs. */
typedef struct {
    DMatrixHandle dm;
    size_t rows;
    int nprog;
    int *po;
    const float *lab;
    float *w;
    cm_pair *pairs;
    int np;
} prog_set;

static void set_free(prog_set *s) {
    if (s->dm) XGDMatrixFree(s->dm);
    free(s->po), free(s->w), free(s->pairs);
    memset(s, 0, sizeof *s);
}

/* The set of the count programs progs[use[i]] (labels and tasks in the
 * same order); pair_seed draws the rank loss's partners. */
static int set_make(cm_model *m, const cm_program *progs, const int *use, const float *lab,
                    const int *tsk, int count, uint64_t pair_seed, prog_set *s) {
    memset(s, 0, sizeof *s);
    s->nprog = count, s->lab = lab;
    float *x = gather(progs, use, count, &s->po, &s->rows);
    s->w = malloc((size_t)(count ? count : 1) * sizeof *s->w);
    if (!x || !s->w) {
        free(x);
        return fail(m, "cost model: train: out of memory");
    }
    for (int i = 0; i < count; i++) s->w[i] = m->p.weight_by_label ? fmaxf(lab[i], 1e-3f) : 1.0f;
    if (m->p.loss == CM_LOSS_RANK &&
        cm_rank_pairs(count, lab, tsk, m->p.rank_max_partners, pair_seed, &s->pairs, &s->np)) {
        free(x);
        return fail(m, "cost model: train: out of memory for the rank loss's pairs");
    }
    int rc = make_dmatrix(m, x, s->rows, true, &s->dm);
    free(x);
    return rc;
}

/* Grows up to max_rounds trees on tr from the pack-sum gradient of the
 * loss. With va, the trees are cut back to the round of least held-out
 * loss, and growing stops once early_stopping_rounds rounds pass without
 * a better one. *out: the booster (the caller's); *rounds: its trees. */
static int boost(cm_model *m, const prog_set *tr, const prog_set *va, int max_rounds,
                 BoosterHandle *out, int *rounds) {
    bool rank = m->p.loss == CM_LOSS_RANK;
    DMatrixHandle dm[2] = {tr->dm, va ? va->dm : NULL};
    BoosterHandle bst = NULL;
    float *grad = malloc((tr->rows ? tr->rows : 1) * sizeof *grad);
    float *hess = malloc((tr->rows ? tr->rows : 1) * sizeof *hess);
    float *va_pred = va ? malloc((va->rows ? va->rows : 1) * sizeof *va_pred) : NULL;
    int rc = -1;
    if (!grad || !hess || (va && !va_pred)) {
        fail(m, "cost model: train: out of memory");
        goto done;
    }
    if (XGBoosterCreate(dm, va ? 2 : 1, &bst)) {
        xgb_fail(m, "creating the booster");
        goto done;
    }
    if (set_params(m, bst, true)) goto done;

    double best_loss = INFINITY;
    int best_round = 0;
    for (int r = 0; r < max_rounds; r++) {
        const float *pred;
        bst_ulong len;
        if (predict_rows(m, bst, tr->dm, 1, &pred, &len)) goto done;
        if (len != tr->rows) {
            fail(m, "cost model: XGBoost predicted %llu rows of %zu", (unsigned long long)len,
                 tr->rows);
            goto done;
        }
        if (rank)
            cm_pack_sum_rank_gradient((int)tr->rows, pred, tr->po, tr->nprog, tr->np, tr->pairs,
                                      grad, hess);
        else
            cm_pack_sum_gradient((int)tr->rows, pred, tr->po, tr->nprog, tr->lab, tr->w, grad,
                                 hess);
        if (XGBoosterBoostOneIter(bst, tr->dm, grad, hess, (bst_ulong)tr->rows)) {
            xgb_fail(m, "boosting");
            goto done;
        }
        if (!va) {
            best_round = r + 1;
            if (m->p.stop && *m->p.stop) break;
            continue;
        }
        if (predict_rows(m, bst, va->dm, 0, &pred, &len)) goto done;
        memcpy(va_pred, pred, va->rows * sizeof *pred);
        double loss = rank ? cm_pack_sum_rank_loss((int)va->rows, va_pred, va->po, va->nprog,
                                                   va->np, va->pairs)
                           : cm_pack_sum_loss((int)va->rows, va_pred, va->po, va->nprog, va->lab,
                                              va->w);
        if (loss < best_loss) best_loss = loss, best_round = r + 1;
        else if (r + 1 - best_round >= m->p.early_stopping_rounds) break;
        if (m->p.stop && *m->p.stop) break;
    }
    if (best_round < 1) best_round = 1;
    int have = 0;
    if (XGBoosterBoostedRounds(bst, &have)) {
        xgb_fail(m, "counting rounds");
        goto done;
    }
    if (best_round < have) {
        /* keep the trees up to the best held-out round */
        BoosterHandle cut = NULL;
        if (XGBoosterSlice(bst, 0, best_round, 1, &cut)) {
            xgb_fail(m, "slicing the booster");
            goto done;
        }
        XGBoosterFree(bst);
        bst = cut;
        if (set_params(m, bst, true)) goto done;
    }
    *out = bst, bst = NULL;
    *rounds = best_round;
    rc = 0;
done:
    if (bst) XGBoosterFree(bst);
    free(grad), free(hess), free(va_pred);
    return rc;
}

/* Trains on the usable programs use[0..nu) (labels and tasks in the same
 * order), of which the first nvalid are held out for early stopping; with
 * refit_all the trees are then grown again on all nu for the round count
 * the held-out share chose. Installs the booster in m. */
static int train_split(cm_model *m, const cm_program *progs, int nu, const int *use,
                       const float *label, const int *tsk, int nvalid) {
    prog_set tr = {0}, va = {0};
    BoosterHandle bst = NULL;
    int rounds = 0, rc = -1;
    int max_rounds = m->p.max_rounds > 0 ? m->p.max_rounds : 1;
    if (set_make(m, progs, use + nvalid, label + nvalid, tsk + nvalid, nu - nvalid, m->p.seed,
                 &tr) ||
        (nvalid && set_make(m, progs, use, label, tsk, nvalid, m->p.seed + 1, &va)) ||
        boost(m, &tr, nvalid ? &va : NULL, max_rounds, &bst, &rounds))
        goto done;
    if (nvalid && m->p.refit_all) {
        set_free(&tr), set_free(&va);
        XGBoosterFree(bst), bst = NULL;
        if (set_make(m, progs, use, label, tsk, nu, m->p.seed, &tr) ||
            boost(m, &tr, NULL, rounds, &bst, &rounds))
            goto done;
    }
    /* The installed trees predict with the prediction threads. */
    if (set_threads(m, bst, false)) goto done;
    if (m->bst) XGBoosterFree(m->bst);
    m->bst = bst, bst = NULL;
    m->rounds = rounds;
    rc = 0;
done:
    if (bst) XGBoosterFree(bst);
    set_free(&tr), set_free(&va);
    return rc;
}

int cm_model_train(cm_model *m, int n, const cm_program *progs, const double *latencies,
                   const int *task_ids) {
    if (!m) return -1;
    m->err[0] = 0;
    if (n < 0 || (n > 0 && (!progs || !latencies)))
        return fail(m, "cost model: train: %d programs with NULL features or latencies", n);
    for (int i = 0; i < n; i++)
        if (progs[i].nstmts < 0 || (progs[i].nstmts > 0 && !progs[i].features))
            return fail(m, "cost model: train: program %d has %d statements and %s features", i,
                        progs[i].nstmts, progs[i].features ? "non-NULL" : "NULL");
    if (m->p.max_bin < 0 || m->p.max_bin == 1)
        return fail(m, "cost model: train: max_bin %d: a histogram needs at least 2 bins "
                       "(0: XGBoost's default, 256)", m->p.max_bin);
    if (m->p.loss != CM_LOSS_SQUARED && m->p.loss != CM_LOSS_RANK)
        return fail(m, "cost model: train: loss %d is not a cm_loss (CM_LOSS_SQUARED, "
                       "CM_LOSS_RANK)", (int)m->p.loss);
    if (m->p.rank_max_partners < 0)
        return fail(m, "cost model: train: rank_max_partners %d: a count >= 0 (0: every "
                       "program of the task)", m->p.rank_max_partners);

    /* usable programs and their labels: min latency of the task / latency */
    int *use = malloc((size_t)(n ? n : 1) * sizeof *use);
    int *tsk = malloc((size_t)(n ? n : 1) * sizeof *tsk);
    float *label = malloc((size_t)(n ? n : 1) * sizeof *label);
    if (!use || !label || !tsk) {
        free(use), free(label), free(tsk);
        return fail(m, "cost model: train: out of memory");
    }
    double *best = task_minimum(n, latencies, task_ids);
    if (!best) {
        free(use), free(label), free(tsk);
        return fail(m, "cost model: train: out of memory");
    }
    int nu = 0;
    for (int i = 0; i < n; i++) {
        if (progs[i].nstmts == 0) continue;
        label[nu] = valid_latency(latencies[i]) ? (float)(best[i] / latencies[i]) : 0.0f;
        tsk[nu] = task_ids ? task_ids[i] : 0;
        use[nu++] = i;
    }
    free(best);
    if (nu < m->p.num_warmup_samples || nu == 0) {
        /* not enough data yet: the random model (or the trees it has) */
        if (m->bst && !m->p.keep_trees_below_warmup) {
            XGBoosterFree(m->bst);
            m->bst = NULL, m->rounds = 0;
        }
        free(use), free(label), free(tsk);
        return 0;
    }

    /* held-out split (a seeded shuffle of the usable programs) */
    int nvalid = 0;
    if (m->p.holdout_fraction > 0 && nu >= 10 && m->p.early_stopping_rounds > 0) {
        nvalid = (int)lround(m->p.holdout_fraction * nu);
        if (nvalid < 1) nvalid = 1;
        if (nvalid > nu - 1) nvalid = nu - 1;
        uint64_t st = m->p.seed * 0x9e3779b97f4a7c15ULL + (uint64_t)nu;
        for (int i = nu - 1; i > 0; i--) {
            int j = (int)(cm__rand(&st) % (uint64_t)(i + 1));
            int tu = use[i];
            use[i] = use[j], use[j] = tu;
            float tl = label[i];
            label[i] = label[j], label[j] = tl;
            int tt = tsk[i];
            tsk[i] = tsk[j], tsk[j] = tt;
        }
    }
    int rc = train_split(m, progs, nu, use, label, tsk, nvalid);
    free(use), free(label), free(tsk);
    return rc;
}

int cm_model_update(cm_model *m, int n, const cm_program *progs, const double *latencies,
                    const int *task_ids) {
    if (!m) return -1;
    m->err[0] = 0;
    if (n < 0 || (n > 0 && (!progs || !latencies)))
        return fail(m, "cost model: update: %d programs with NULL features or latencies", n);
    size_t add = 0;
    for (int i = 0; i < n; i++) {
        if (progs[i].nstmts < 0 || (progs[i].nstmts > 0 && !progs[i].features))
            return fail(m, "cost model: update: program %d has %d statements and %s features",
                        i, progs[i].nstmts, progs[i].features ? "non-NULL" : "NULL");
        add += (size_t)progs[i].nstmts;
    }
    if (m->nrows + add > m->caprows) {
        size_t cap = m->caprows ? m->caprows : 256;
        while (cap < m->nrows + add) cap *= 2;
        float *f = realloc(m->feat, cap * CM_NUM_FEATURES * sizeof *f);
        if (!f) return fail(m, "cost model: update: out of memory");
        m->feat = f, m->caprows = cap;
    }
    if (m->nprog + n > m->capprog) {
        int cap = m->capprog ? m->capprog : 64;
        while (cap < m->nprog + n) cap *= 2;
        int *ns = realloc(m->nstmts, (size_t)cap * sizeof *ns);
        if (ns) m->nstmts = ns;
        int *tk = realloc(m->task, (size_t)cap * sizeof *tk);
        if (tk) m->task = tk;
        double *lt = realloc(m->lat, (size_t)cap * sizeof *lt);
        if (lt) m->lat = lt;
        if (!ns || !tk || !lt) return fail(m, "cost model: update: out of memory");
        m->capprog = cap;
    }
    for (int i = 0; i < n; i++) {
        memcpy(&m->feat[m->nrows * CM_NUM_FEATURES], progs[i].features,
               (size_t)progs[i].nstmts * CM_NUM_FEATURES * sizeof(float));
        m->nrows += (size_t)progs[i].nstmts;
        m->nstmts[m->nprog] = progs[i].nstmts;
        m->task[m->nprog] = task_ids ? task_ids[i] : 0;
        m->lat[m->nprog++] = latencies[i];
    }
    cm_program *all = malloc((size_t)(m->nprog ? m->nprog : 1) * sizeof *all);
    if (!all) return fail(m, "cost model: update: out of memory");
    size_t r = 0;
    for (int i = 0; i < m->nprog; i++) {
        all[i] = (cm_program){&m->feat[r * CM_NUM_FEATURES], m->nstmts[i]};
        r += (size_t)m->nstmts[i];
    }
    int rc = cm_model_train(m, m->nprog, all, m->lat, m->task);
    free(all);
    return rc;
}

int cm_model_predict(cm_model *m, int n, const cm_program *progs, double *scores) {
    if (!m) return -1;
    m->err[0] = 0;
    if (n < 0 || (n > 0 && (!progs || !scores)))
        return fail(m, "cost model: predict: %d programs with NULL features or scores", n);
    for (int i = 0; i < n; i++)
        if (progs[i].nstmts < 0 || (progs[i].nstmts > 0 && !progs[i].features))
            return fail(m, "cost model: predict: program %d has %d statements and %s features",
                        i, progs[i].nstmts, progs[i].features ? "non-NULL" : "NULL");
    if (!m->bst) {
        for (int i = 0; i < n; i++)
            scores[i] = progs[i].nstmts ? (double)(cm__rand(&m->rng) >> 11) * 0x1.0p-53 : -INFINITY;
        return 0;
    }
    int *po = NULL;
    size_t rows = 0;
    float *x = gather(progs, NULL, n, &po, &rows);
    if (!x) return fail(m, "cost model: predict: out of memory");
    for (int i = 0; i < n; i++) scores[i] = progs[i].nstmts ? 0.0 : -INFINITY;
    int rc = 0;
    if (rows) {
        DMatrixHandle d = NULL;
        const float *pred;
        bst_ulong len;
        rc = make_dmatrix(m, x, rows, false, &d);
        if (!rc) rc = predict_rows(m, m->bst, d, 0, &pred, &len);
        if (!rc && len != rows)
            rc = fail(m, "cost model: XGBoost predicted %llu rows of %zu",
                      (unsigned long long)len, rows);
        if (!rc)
            for (size_t r = 0; r < rows; r++) scores[po[r]] += pred[r];
        if (d) XGDMatrixFree(d);
    }
    free(x), free(po);
    return rc;
}

/* ---- the tuner's scorer seam ---- */

static int extract_all(cm_model *m, int n, const tir_func *const *funcs, cm_program *progs) {
    cm_extract_options o = {.vector_bytes = cm_model_vector_bytes(m)};
    for (int i = 0; i < n; i++) {
        float *f = NULL;
        int k = 0;
        if (funcs && funcs[i] && cm_extract_ex(NULL, funcs[i], &o, &f, &k, NULL) == 0) {
            progs[i] = (cm_program){f, k};
        } else {
            progs[i] = (cm_program){NULL, 0};
        }
    }
    return 0;
}

static void free_all(int n, cm_program *progs) {
    for (int i = 0; i < n; i++) free((void *)progs[i].features);
    free(progs);
}

int cm_scorer_predict(void *model, int n, const tir_func *const *funcs, double *scores) {
    cm_model *m = model;
    if (!m || n < 0) return -1;
    cm_program *p = calloc((size_t)(n ? n : 1), sizeof *p);
    if (!p) return fail(m, "cost model: predict: out of memory");
    extract_all(m, n, funcs, p);
    int rc = cm_model_predict(m, n, p, scores);
    free_all(n, p);
    return rc;
}

int cm_scorer_update(void *model, int task, int n, const tir_func *const *funcs,
                     const double *latencies) {
    cm_model *m = model;
    if (!m || n < 0) return -1;
    cm_program *p = calloc((size_t)(n ? n : 1), sizeof *p);
    int *tasks = calloc((size_t)(n ? n : 1), sizeof *tasks);
    if (!p || !tasks) {
        free(p), free(tasks);
        return fail(m, "cost model: update: out of memory");
    }
    for (int i = 0; i < n; i++) tasks[i] = task;
    extract_all(m, n, funcs, p);
    int rc = cm_model_update(m, n, p, latencies, tasks);
    free(tasks);
    free_all(n, p);
    return rc;
}

/* ---- persistence ---- */

/* magic 8, format version 4, feature count 4, feature version 4, trained 4,
 * rounds 4, vector width 4 (bytes; written 0 before feature version 3),
 * payload length 8, FNV-1a of the payload 8. The
 * checksum matters: XGBoost 1.7's UBJSON reader overruns its buffer on some
 * corrupted models, so a damaged blob must be refused before XGBoost sees
 * it. Format 1 had no feature version (its models were trained on
 * features of version 1). */
#define HEADER_BYTES 48
#define FORMAT_VERSION 2
static const char magic[8] = {'L', 'O', 'O', 'M', 'C', 'M', 0, 0};

static void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

int cm_model_save_buffer(cm_model *m, void **buf, size_t *len) {
    if (!m) return -1;
    m->err[0] = 0;
    if (!buf || !len) return fail(m, "cost model: save: NULL output pointer");
    *buf = NULL, *len = 0;
    const char *payload = NULL;
    bst_ulong plen = 0;
    if (m->bst && XGBoosterSaveModelToBuffer(m->bst, "{\"format\": \"ubj\"}", &plen, &payload))
        return xgb_fail(m, "saving the model");
    unsigned char *b = malloc(HEADER_BYTES + (size_t)plen);
    if (!b) return fail(m, "cost model: save: out of memory");
    memcpy(b, magic, 8);
    put32(b + 8, FORMAT_VERSION);
    put32(b + 12, CM_NUM_FEATURES);
    put32(b + 16, CM_FEATURE_VERSION);
    put32(b + 20, m->bst ? 1 : 0);
    put32(b + 24, (uint32_t)m->rounds);
    put32(b + 28, (uint32_t)cm_model_vector_bytes(m));
    put64(b + 32, (uint64_t)plen);
    if (plen) memcpy(b + HEADER_BYTES, payload, (size_t)plen);
    put64(b + 40, te_hash_bytes(b + HEADER_BYTES, (size_t)plen));
    *buf = b, *len = HEADER_BYTES + (size_t)plen;
    return 0;
}

const char *cm_load_error_reason(const char *errbuf) {
    size_t k = strlen(CM_LOAD_ERROR_PREFIX);
    if (!errbuf) return "";
    return strncmp(errbuf, CM_LOAD_ERROR_PREFIX, k) ? errbuf : errbuf + k;
}

/* errbuf = CM_LOAD_ERROR_PREFIX, then the reason. */
static cm_model *load_error(cm_model *m, char *errbuf, size_t errlen, const char *fmt, ...) {
    if (errbuf && errlen) {
        int k = snprintf(errbuf, errlen, "%s", CM_LOAD_ERROR_PREFIX);
        if (k >= 0 && (size_t)k < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(errbuf + k, errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    cm_model_free(m);
    return NULL;
}

cm_model *cm_model_load_buffer(const void *buf, size_t len, const cm_params *params,
                               char *errbuf, size_t errlen) {
    const unsigned char *b = buf;
    if (errbuf && errlen) errbuf[0] = 0;
    if (!b || len < 12 || memcmp(b, magic, 8))
        return load_error(NULL, errbuf, errlen,
                          "not a Loom cost-model blob (%zu bytes, bad magic)",
                          len);
    /* the version first: a format-1 blob's header is shorter */
    uint32_t version = get32(b + 8);
    if (version != FORMAT_VERSION)
        return load_error(NULL, errbuf, errlen,
                          "blob format version %u, this library reads %d%s",
                          version, FORMAT_VERSION,
                          version < FORMAT_VERSION ? " (an earlier Loom's model: retrain it)" : "");
    if (len < HEADER_BYTES)
        return load_error(NULL, errbuf, errlen,
                          "blob truncated (%zu bytes, the header alone is %d)",
                          len, HEADER_BYTES);
    uint32_t nfeat = get32(b + 12), fversion = get32(b + 16), trained = get32(b + 20);
    uint32_t vbytes = get32(b + 28);
    uint64_t plen = get64(b + 32);
    if (nfeat != CM_NUM_FEATURES)
        return load_error(NULL, errbuf, errlen,
                          "blob has %u features, this library extracts %d",
                          nfeat, CM_NUM_FEATURES);
    if (fversion != CM_FEATURE_VERSION)
        return load_error(NULL, errbuf, errlen,
                          "model trained on features of version %u, this "
                          "library extracts version %d (retrain it)",
                          fversion, CM_FEATURE_VERSION);
    if (vbytes < 1 || vbytes > INT32_MAX)
        return load_error(NULL, errbuf, errlen,
                          "blob's vector width is %u bytes, not a positive int "
                          "(a corrupted header)", vbytes);
    if (plen != len - HEADER_BYTES || (trained && !plen))
        return load_error(NULL, errbuf, errlen,
                          "blob truncated (payload %llu bytes, %zu present)",
                          (unsigned long long)plen, len - HEADER_BYTES);
    if (get64(b + 40) != te_hash_bytes(b + HEADER_BYTES, (size_t)plen))
        return load_error(NULL, errbuf, errlen,
                          "blob corrupted (payload checksum mismatch)");
    cm_model *m = cm_model_new(params);
    if (!m) return load_error(NULL, errbuf, errlen, "out of memory");
    m->p.vector_bytes = (int)vbytes; /* the features its trees were grown on */
    if (trained) {
        if (XGBoosterCreate(NULL, 0, &m->bst) ||
            XGBoosterLoadModelFromBuffer(m->bst, b + HEADER_BYTES, (bst_ulong)plen))
            return load_error(m, errbuf, errlen, "XGBoost rejected the model: %s",
                              XGBGetLastError());
        if (set_params(m, m->bst, false)) return load_error(m, errbuf, errlen, "%s", m->err);
        m->rounds = (int)get32(b + 24);
    }
    return m;
}

int cm_model_save_file(cm_model *m, const char *path) {
    if (!m) return -1;
    if (!path) return fail(m, "cost model: save: NULL path");
    void *buf;
    size_t len;
    if (cm_model_save_buffer(m, &buf, &len)) return -1;
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(buf);
        return fail(m, "cost model: save: cannot open '%s' for writing", path);
    }
    size_t w = fwrite(buf, 1, len, f);
    int cl = fclose(f);
    free(buf);
    if (w != len || cl) return fail(m, "cost model: save: writing '%s' failed", path);
    return 0;
}

cm_model *cm_model_load_file(const char *path, const cm_params *params, char *errbuf,
                             size_t errlen) {
    if (!path) return load_error(NULL, errbuf, errlen, "NULL path");
    FILE *f = fopen(path, "rb");
    if (!f) return load_error(NULL, errbuf, errlen, "cannot open '%s'", path);
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (len < cap) break;
        unsigned char *nb = realloc(buf, cap * 2);
        if (!nb) free(buf);
        buf = nb, cap *= 2;
    }
    bool err = ferror(f);
    fclose(f);
    if (!buf || err) {
        free(buf);
        return load_error(NULL, errbuf, errlen, "reading '%s' failed", path);
    }
    cm_model *m = cm_model_load_buffer(buf, len, params, errbuf, errlen);
    free(buf);
    if (!m && errbuf && errlen) {
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s (file '%s')", errbuf, path);
        snprintf(errbuf, errlen, "%s", tmp);
    }
    return m;
}
