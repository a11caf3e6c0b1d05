/*
 * autotune/neighbour.c — a program one small step from another: one hole
 * moved to a neighbouring value (a factor of 2, or the smallest prime
 * factor, between two adjacent levels of a split; a compute location,
 * parallel depth or unrolling depth one up or down).
 *
 * Why: the evolution's mutations (tune_program_mutate) draw a new value
 * anywhere in a hole's range (a compute location at any loop, any
 * unrolling depth, a prime moved between any two levels), so the
 * mutations of a good program are mostly far from it; on a depthwise
 * convolution whose first (structural) program was the best, 199 more
 * trials never beat it and averaged 7x its time (issue 35). The search
 * measures a share of such neighbours of its fastest programs each round
 * (search.c), a local search that needs no model to rank them.
 */
#include "autotune/rules/rule.h"

/* Moves the smallest prime factor of one level of split hole h into an
 * adjacent level. 0, or -1 when this try changed nothing. */
static int split_step(const tune_hole *h, uint64_t *rng, int64_t *v) {
    int m = h->nvals;
    if (m < 1 || m > 7) return -1;
    int64_t lv[8], prod = 1;
    for (int j = 0; j < m - 1; j++) prod *= v[j];
    int64_t left = (h->extent + v[m - 1] - 1) / v[m - 1];
    if (prod < 1 || left % prod) return -1;
    lv[0] = left / prod;
    for (int j = 0; j < m; j++) lv[j + 1] = v[j];
    int src = (int)tune__rand_below(rng, m + 1);
    int dst = src == 0 ? 1 : src == m ? m - 1 : src + (tune__rand_below(rng, 2) ? 1 : -1);
    if (lv[src] <= 1) return -1;
    int64_t q = 2;
    while (lv[src] % q) q++;
    lv[src] /= q;
    lv[dst] *= q;
    int64_t nv[8];
    for (int j = 0; j < m; j++) nv[j] = lv[j + 1];
    if (!tune_split_valid(h, nv)) return -1;
    for (int j = 0; j < m; j++) v[j] = nv[j];
    return 0;
}

/* lo <= *x + (+-1) <= hi. */
static int int_step(uint64_t *rng, int64_t *x, int64_t lo, int64_t hi) {
    int64_t d = tune__rand_below(rng, 2) ? 1 : -1;
    if (*x + d < lo || *x + d > hi) d = -d;
    if (*x + d < lo || *x + d > hi) return -1;
    *x += d;
    return 0;
}

static int hole_step(const tune_hole *h, uint64_t *rng, int64_t *v) {
    switch (h->kind) {
    case TUNE_HOLE_SPLIT: return split_step(h, rng, v);
    case TUNE_HOLE_PARALLEL:
    case TUNE_HOLE_LOCATION: return int_step(rng, v, 1, h->extent);
    case TUNE_HOLE_UNROLL: return int_step(rng, v, 0, TUNE__NUNROLL - 1);
    default: return -1;
    }
}

int tune_program_neighbour(const tune_sketch *sk, uint64_t *rng, tune_program *p) {
    if (!sk || !rng || !p || sk->nholes < 1 || tune_sketch_is_gpu(sk)) return -1;
    for (int tries = 0; tries < 16; tries++) {
        const tune_hole *h = &sk->holes[tune__rand_below(rng, sk->nholes)];
        if (tune__hole_rule(sk, h)->mutate_hole != tune__mutate_hole_cpu) continue;
        if (hole_step(h, rng, p->vals + h->offset) == 0) return 0;
    }
    return -1;
}
