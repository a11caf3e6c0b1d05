/*
 * cost_model/objective.c — the training objectives over pack-sums:
 * Ansor's squared error (TVM python/tvm/auto_scheduler/cost_model/
 * xgb_model.py, pack_sum_square_error) and a pairwise rank loss (RankNet's
 * logistic loss on sampled pairs of a task's programs), and the ranking
 * metric the tuner is judged by. The math is written out in
 * loom/cost_model.h.
 */
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cost_model/cm_internal.h"

/* S_p = sum of the rows' predictions of program p (double accumulation). */
static double *pack_sums(int nrows, const float *preds, const int *prog_of_row, int nprog) {
    double *s = calloc((size_t)(nprog > 0 ? nprog : 1), sizeof *s);
    if (!s) return NULL;
    for (int r = 0; r < nrows; r++)
        if (prog_of_row[r] >= 0 && prog_of_row[r] < nprog) s[prog_of_row[r]] += preds[r];
    return s;
}

/* n_p, the rows of each program (the Hessian's row sums need them);
 * NULL when out of memory. */
static int *row_counts(int nrows, const int *prog_of_row, int nprog) {
    int *rows = calloc((size_t)(nprog > 0 ? nprog : 1), sizeof *rows);
    if (rows)
        for (int r = 0; r < nrows; r++)
            if (prog_of_row[r] >= 0 && prog_of_row[r] < nprog) rows[prog_of_row[r]]++;
    return rows;
}

double cm_pack_sum_loss(int nrows, const float *preds, const int *prog_of_row, int nprog,
                        const float *labels, const float *weights) {
    double *s = pack_sums(nrows, preds, prog_of_row, nprog);
    if (!s) return NAN;
    double loss = 0;
    for (int p = 0; p < nprog; p++) {
        double d = s[p] - labels[p];
        loss += 0.5 * (weights ? weights[p] : 1.0) * d * d;
    }
    free(s);
    return loss;
}

/* The Hessian is the row sum of program p's block w_p * 1 1^T, w_p * n_p
 * (see cost_model.h): the block's diagonal alone, w_p, lets a boosting
 * round move S_p by eta * n_p * (y_p - S_p) when p's n_p rows share a leaf,
 * which overshoots the label for n_p * eta > 1 (Loom's programs have up to
 * 16 store statements after loop partitioning) and stopped training after
 * one round. */
void cm_pack_sum_gradient(int nrows, const float *preds, const int *prog_of_row, int nprog,
                          const float *labels, const float *weights, float *grad, float *hess) {
    double *s = pack_sums(nrows, preds, prog_of_row, nprog);
    int *rows = row_counts(nrows, prog_of_row, nprog);
    for (int r = 0; r < nrows; r++) {
        int p = prog_of_row[r];
        if (!s || !rows || p < 0 || p >= nprog) {
            grad[r] = 0, hess[r] = 0;
            continue;
        }
        double w = weights ? weights[p] : 1.0;
        grad[r] = (float)(w * (s[p] - labels[p]));
        hess[r] = (float)(w * rows[p]);
    }
    free(rows);
    free(s);
}

typedef struct { int task, idx; } task_idx;

static int cmp_task(const void *x, const void *y) {
    const task_idx *a = x, *b = y;
    if (a->task != b->task) return a->task < b->task ? -1 : 1;
    return a->idx - b->idx;
}

double cm_pairwise_accuracy(int n, const double *scores, const double *latencies,
                            const int *task_ids) {
    if (n < 2 || !scores || !latencies) return -1;
    task_idx *t = malloc((size_t)n * sizeof *t);
    if (!t) return -1;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (latencies[i] > 0 && isfinite(latencies[i])) t[m++] = (task_idx){task_ids ? task_ids[i] : 0, i};
    qsort(t, (size_t)m, sizeof *t, cmp_task);
    double good = 0, pairs = 0;
    for (int g = 0; g < m;) {
        int e = g;
        while (e < m && t[e].task == t[g].task) e++;
        for (int a = g; a < e; a++)
            for (int b = a + 1; b < e; b++) {
                int i = t[a].idx, j = t[b].idx;
                if (latencies[i] == latencies[j]) continue;
                pairs++;
                double ds = scores[i] - scores[j];
                if (ds == 0) good += 0.5; /* a tie orders half the pairs right */
                else if ((ds > 0) == (latencies[i] < latencies[j])) good++;
            }
        g = e;
    }
    free(t);
    return pairs > 0 ? good / pairs : -1;
}

/* ---- pairwise rank loss ---- */

static uint64_t splitmix(uint64_t *st) {
    uint64_t z = (*st += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int cm_rank_pairs(int nprog, const float *labels, const int *task_of_prog, int max_partners,
                  uint64_t seed, cm_pair **out, int *npairs) {
    if (!out || !npairs) return -1;
    *out = NULL, *npairs = 0;
    if (nprog < 0 || (nprog > 0 && !labels)) return -1;
    task_idx *t = malloc((size_t)(nprog > 0 ? nprog : 1) * sizeof *t);
    if (!t) return -1;
    for (int p = 0; p < nprog; p++) t[p] = (task_idx){task_of_prog ? task_of_prog[p] : 0, p};
    qsort(t, (size_t)nprog, sizeof *t, cmp_task);
    /* each program's partner list: its whole task, or max_partners draws */
    size_t cap = 0;
    for (int g = 0; g < nprog;) {
        int e = g;
        while (e < nprog && t[e].task == t[g].task) e++;
        size_t k = (size_t)(e - g - 1);
        if (max_partners > 0 && k > (size_t)max_partners) k = (size_t)max_partners;
        cap += (size_t)(e - g) * k;
        g = e;
    }
    if (cap > (size_t)INT_MAX) {
        free(t);
        return -1;
    }
    cm_pair *pr = malloc((cap ? cap : 1) * sizeof *pr);
    if (!pr) {
        free(t);
        return -1;
    }
    uint64_t st = seed;
    int n = 0;
    for (int g = 0; g < nprog;) {
        int e = g;
        while (e < nprog && t[e].task == t[g].task) e++;
        int others = e - g - 1;
        bool all = max_partners <= 0 || others <= max_partners;
        int k = all ? others : max_partners;
        for (int a = g; a < e; a++) {
            int i = t[a].idx;
            for (int c = 0; c < k; c++) {
                int b;
                if (all) b = g + c + (g + c >= a);
                else {
                    b = g + (int)(splitmix(&st) % (uint64_t)others);
                    if (b >= a) b++;
                }
                int j = t[b].idx;
                if (labels[i] == labels[j]) continue;
                bool ifast = labels[i] > labels[j];
                pr[n++] = (cm_pair){ifast ? i : j, ifast ? j : i, 1.0f / (float)k};
            }
        }
        g = e;
    }
    free(t);
    *out = pr, *npairs = n;
    return 0;
}

static bool pair_ok(const cm_pair *p, int nprog) {
    return p->faster >= 0 && p->faster < nprog && p->slower >= 0 && p->slower < nprog;
}

/* sigma(-d) = 1 / (1 + e^d), without overflow */
static double sigma_neg(double d) {
    return d >= 0 ? exp(-d) / (1 + exp(-d)) : 1 / (1 + exp(d));
}

double cm_pack_sum_rank_loss(int nrows, const float *preds, const int *prog_of_row, int nprog,
                             int npairs, const cm_pair *pairs) {
    double *s = pack_sums(nrows, preds, prog_of_row, nprog);
    if (!s) return NAN;
    double loss = 0;
    for (int k = 0; k < npairs; k++) {
        if (!pair_ok(&pairs[k], nprog)) continue;
        double d = s[pairs[k].faster] - s[pairs[k].slower];
        /* log(1 + e^-d) */
        loss += pairs[k].weight * (d >= 0 ? log1p(exp(-d)) : -d + log1p(exp(d)));
    }
    free(s);
    return loss;
}

void cm_pack_sum_rank_gradient(int nrows, const float *preds, const int *prog_of_row, int nprog,
                               int npairs, const cm_pair *pairs, float *grad, float *hess) {
    size_t np = (size_t)(nprog > 0 ? nprog : 1);
    double *s = pack_sums(nrows, preds, prog_of_row, nprog);
    double *g = calloc(np, sizeof *g), *h = calloc(np, sizeof *h);
    int *rows = row_counts(nrows, prog_of_row, nprog);
    bool ok = s && g && h && rows;
    if (ok)
        for (int k = 0; k < npairs; k++) {
            if (!pair_ok(&pairs[k], nprog)) continue;
            int i = pairs[k].faster, j = pairs[k].slower;
            double w = pairs[k].weight, sn = sigma_neg(s[i] - s[j]);
            g[i] -= w * sn, g[j] += w * sn;
            h[i] += w * sn * (1 - sn), h[j] += w * sn * (1 - sn);
        }
    for (int r = 0; r < nrows; r++) {
        int p = prog_of_row[r];
        if (!ok || p < 0 || p >= nprog) {
            grad[r] = 0, hess[r] = 0;
            continue;
        }
        grad[r] = (float)g[p];
        hess[r] = (float)(h[p] * rows[p]);
    }
    free(rows), free(g), free(h), free(s);
}
