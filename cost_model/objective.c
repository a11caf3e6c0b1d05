/*
 * cost_model/objective.c — Ansor's pack-sum squared error (TVM
 * python/tvm/auto_scheduler/cost_model/xgb_model.py, pack_sum_square_error)
 * and the ranking metric the tuner is judged by. The math is written out
 * in loom/cost_model.h.
 */
#include <math.h>
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
    int *rows = calloc((size_t)(nprog > 0 ? nprog : 1), sizeof *rows);
    if (rows)
        for (int r = 0; r < nrows; r++)
            if (prog_of_row[r] >= 0 && prog_of_row[r] < nprog) rows[prog_of_row[r]]++;
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
