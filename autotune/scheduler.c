/*
 * autotune/scheduler.c — which task gets the next round of trials, by
 * Ansor's gradient-based allocation (Zheng et al., OSDI 2020, §6; TVM
 * python/tvm/auto_scheduler/task_scheduler.py, strategy "gradient").
 *
 * The objective is the weighted sum of the tasks' best latencies; the
 * round goes to the task whose latency is expected to fall fastest:
 *   gain_i = w_i * (alpha * backward_i + (1 - alpha) * forward_i)
 *   backward_i = (g_i(t_i - 1 - W) - g_i(t_i - 1)) / W     (0 until t_i > W)
 *   forward_i  = g_i - min(g_i - g_i / t_i,                 (optimistic)
 *                          beta * C_i / max_{j in N(i)} C_j / g_j)  (similarity)
 * g_i: best latency, t_i: rounds, C_i: FLOP, N(i): tasks similar to i;
 * alpha = 0.2, beta = 2, W = 3 as in Ansor. Ansor writes the gain as a
 * (negative) gradient and takes the argmin; here it is the positive
 * improvement and the argmax. Ties go to the lowest index (Ansor: random).
 */
#include <math.h>
#include <string.h>

#include "autotune/tune_internal.h"

#define ALPHA 0.2
#define BETA 2.0
#define WINDOW 3
/* Ansor's similarity tag: the FLOP count bucketed on a golden-ratio log scale. */
#define LOG_BASE 1.618
/* Ansor drops a task from its group once it has had this many rounds more
 * than every other member and still reaches < 1/beta of their speed. */
#define GROUP_PATIENCE 5

void tune_scheduler_groups(int ntasks, const char *const *ops, const double *flops, int *groups) {
    if (ntasks <= 0 || !groups) return;
    int next = 0;
    for (int i = 0; i < ntasks; i++) {
        groups[i] = -1;
        if (!ops || !ops[i] || !flops || !(flops[i] > 0)) continue;
        int bi = (int)(log(flops[i] + 1) / log(LOG_BASE));
        for (int j = 0; j < i && groups[i] < 0; j++) {
            if (groups[j] < 0 || strcmp(ops[j], ops[i])) continue;
            if ((int)(log(flops[j] + 1) / log(LOG_BASE)) == bi) groups[i] = groups[j];
        }
        if (groups[i] < 0) groups[i] = next++;
    }
}

/* Throughput (FLOP/s) of task i, 0 without a measurement. */
static double speed(const double *flops, const double *best, int i) {
    return best[i] > 0 && flops[i] > 0 ? flops[i] / best[i] : 0;
}

/* Whether task i still counts as similar to its group (Ansor's
 * _adjust_similarity_group, evaluated from the current state). */
static bool in_group(int ntasks, const int *nrounds, const double *best, const double *flops,
                     const int *groups, int i) {
    if (groups[i] < 0) return false;
    double top = 0;
    int other_rounds = -1;
    for (int j = 0; j < ntasks; j++) {
        if (groups[j] != groups[i]) continue;
        double s = speed(flops, best, j);
        if (s > top) top = s;
        if (j != i && nrounds[j] > other_rounds) other_rounds = nrounds[j];
    }
    if (other_rounds < 0) return false; /* alone */
    return !(speed(flops, best, i) < top / BETA && nrounds[i] > GROUP_PATIENCE + other_rounds);
}

int tune_scheduler_pick(int ntasks, const double *weights, const int *nrounds,
                        const double *const *history, const double *best, const double *flops,
                        const int *groups) {
    if (ntasks <= 0 || !nrounds || !best) return -1;
    for (int i = 0; i < ntasks; i++) /* every live task gets one round first */
        if (nrounds[i] == 0 && !(weights && weights[i] <= 0)) return i;
    bool similar = flops && groups;
    int pick = -1;
    double top = -1;
    for (int i = 0; i < ntasks; i++) {
        double w = weights ? weights[i] : 1.0;
        if (w <= 0 || best[i] <= 0) continue; /* dead, or nothing valid yet */
        int t = nrounds[i];
        double back = 0;
        if (history && history[i] && t - 1 - WINDOW >= 0)
            back = (history[i][t - 1 - WINDOW] - history[i][t - 1]) / WINDOW;
        double next = best[i] - best[i] / t;
        if (similar && in_group(ntasks, nrounds, best, flops, groups, i)) {
            double group_top = 0; /* over the members that still count */
            for (int j = 0; j < ntasks; j++)
                if (groups[j] == groups[i] &&
                    (j == i || in_group(ntasks, nrounds, best, flops, groups, j))) {
                    double s = speed(flops, best, j);
                    if (s > group_top) group_top = s;
                }
            if (group_top > 0) next = fmin(next, BETA * flops[i] / group_top);
        }
        double fwd = best[i] - next;
        double gain = w * (ALPHA * back + (1 - ALPHA) * fwd);
        if (gain > top) top = gain, pick = i;
    }
    if (pick >= 0) return pick;
    /* Only tasks without a valid measurement are left alive: the first. */
    for (int i = 0; i < ntasks; i++)
        if (!(weights && weights[i] <= 0)) return i;
    return -1;
}
