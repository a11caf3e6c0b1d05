/*
 * autotune/scheduler.c — which task gets the next round of trials
 * (Ansor §6, gradient descent on the weighted sum of task latencies). The
 * gradient of task i is estimated as
 *   w_i * (alpha * backward + (1 - alpha) * forward)
 * where backward is the improvement of its best latency over the last
 * (up to) 3 rounds per round, and forward the optimistic guess best_i / t_i
 * (a task that improved by its whole latency over its t_i rounds might do
 * so again). alpha = 0.2 as in Ansor. Ansor's similarity term (tasks
 * sharing a DAG) is left out.
 */
#include "autotune/tune_internal.h"

int tune_scheduler_pick(int ntasks, const double *weights, const int *nrounds,
                        const double *const *history, const double *best) {
    const double alpha = 0.2;
    int pick = 0;
    double top = -1;
    for (int i = 0; i < ntasks; i++) {
        if (nrounds[i] == 0 || best[i] <= 0) return i; /* every task gets one round first */
        int n = nrounds[i], k = n - 1 < 3 ? n - 1 : 3;
        double back = k > 0 ? (history[i][n - 1 - k] - history[i][n - 1]) / k : 0;
        if (back < 0) back = 0;
        double fwd = best[i] / n;
        double w = weights ? weights[i] : 1.0;
        double g = w * (alpha * back + (1 - alpha) * fwd);
        if (g > top) top = g, pick = i;
    }
    return pick;
}
