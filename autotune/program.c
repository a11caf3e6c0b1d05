/*
 * autotune/program.c — programs: a sketch with its holes filled. Random
 * annotation (Ansor §4.2: tile sizes from the factorisations of each
 * extent, parallel granularity, unroll depth, compute location), mutation
 * (Ansor §5.1: tile size, unroll, parallel granularity, compute
 * location) and applying a program to a fresh schedule with ordinary
 * primitives, so its step log replays on a rebuilt workload.
 *
 * Unlike Ansor, whose tile sizes are all divisors of the extent, the
 * innermost factor of a tailed split hole (a non-vectorized spatial axis
 * of a CPU tile) may be any integer up to TUNE_MAX_TAIL_INNER: the 6-row
 * register tile of sgemm kernels on 1024 rows. Lowering guards the last
 * tile and loop partitioning splits that guard off the hot loops.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/tune_internal.h"
#include "loom/codegen.h"

const int64_t tune__unroll_steps[TUNE__NUNROLL] = {0, 16, 64, 512};

uint64_t tune_rand(uint64_t *s) {
    uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

int64_t tune__rand_below(uint64_t *rng, int64_t n) {
    return n <= 1 ? 0 : (int64_t)(tune_rand(rng) % (uint64_t)n);
}

int tune__divisors(int64_t n, int64_t cap, int64_t *out, int max) {
    int k = 0;
    if (n < 1 || max < 1) return 0;
    /* Divisors come in pairs d <= sqrt(n) <= n/d: the small ones
     * ascending, then their cofactors ascending (d descending), so an
     * extent of 2^31 costs 46,341 steps, not 2^31. */
    int64_t d = 1;
    for (; d <= n / d && d <= cap && k < max; d++)
        if (n % d == 0) out[k++] = d;
    if (k == max || d > cap) return k;
    for (d--; d >= 1 && k < max; d--) {
        if (n % d) continue;
        int64_t q = n / d;
        if (q == d) continue; /* a square's root, counted once above */
        if (q > cap) break;
        out[k++] = q;
    }
    return k;
}

int64_t tune__rand_divisor(uint64_t *rng, int64_t n, int64_t cap) {
    int64_t divs[256];
    int nd = tune__divisors(n, cap, divs, 256);
    return nd ? divs[tune__rand_below(rng, nd)] : 1;
}

const tune_hole *tune__unit_hole(const tune_sketch *sk, int u, int k) {
    int seen = 0;
    for (int i = 0; i < sk->nholes; i++)
        if (sk->holes[i].unit == u && seen++ == k) return &sk->holes[i];
    return NULL;
}

/* Once per process: read by the search's threads (pthread_once). */
static int host_lanes = 4;
static pthread_once_t host_lanes_once = PTHREAD_ONCE_INIT;

static void detect_host_lanes(void) {
    cg_target t;
    if (!cg_target_parse("llvm", &t, NULL)) host_lanes = t.vector_lanes;
    cg_target_free(&t);
}

int tune_host_vector_lanes(void) {
    pthread_once(&host_lanes_once, detect_host_lanes);
    return host_lanes;
}

int tune_target_vector_bytes(const char *target) {
    return tune_target_is_cuda(target) ? 16 : 4 * tune_host_vector_lanes();
}

static int64_t ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool tune_split_valid(const tune_hole *h, const int64_t *v) {
    if (!h || !v || h->kind != TUNE_HOLE_SPLIT || h->nvals < 1 || h->extent < 1) return false;
    int m = h->nvals;
    int64_t f = v[m - 1], prod = 1;
    if (f < 1 || f > h->extent) return false;
    if (h->extent % f == 0 ? f > TUNE__MAX_INNER : !h->tail || f > TUNE_MAX_TAIL_INNER)
        return false;
    for (int j = 0; j < m - 1; j++) {
        if (v[j] < 1 || v[j] > h->extent) return false;
        prod *= v[j];
        if (prod > h->extent) return false;
    }
    return ceil_div64(h->extent, f) % prod == 0;
}

int64_t tune__rand_inner(const tune_hole *h, uint64_t *rng) {
    /* Uniform over the divisors <= TUNE__MAX_INNER, joined (tail) by every
     * integer <= TUNE_MAX_TAIL_INNER. */
    int64_t c[TUNE__MAX_INNER];
    int n = 0;
    for (int64_t d = 1; d <= h->extent && d <= TUNE__MAX_INNER; d++)
        if (h->extent % d == 0 || (h->tail && d <= TUNE_MAX_TAIL_INNER)) c[n++] = d;
    return c[tune__rand_below(rng, n)];
}

static void random_hole(const tune_hole *h, uint64_t *rng, int64_t *v) {
    switch (h->kind) {
    case TUNE_HOLE_SPLIT: {
        /* Innermost first (tune__rand_inner), then a divisor of what is
         * left: the other levels split ceil(extent / innermost). */
        int m = h->nvals;
        v[m - 1] = tune__rand_inner(h, rng);
        int64_t left = ceil_div64(h->extent, v[m - 1]);
        for (int j = m - 2; j >= 0; j--) {
            v[j] = tune__rand_divisor(rng, left, left);
            left /= v[j];
        }
        break;
    }
    case TUNE_HOLE_VECTOR: v[0] = tune__rand_divisor(rng, h->extent, TUNE__MAX_INNER); break;
    case TUNE_HOLE_PARALLEL:
    case TUNE_HOLE_LOCATION: v[0] = 1 + tune__rand_below(rng, h->extent); break;
    case TUNE_HOLE_UNROLL: v[0] = tune__rand_below(rng, TUNE__NUNROLL); break;
    default: break; /* GPU holes: program_gpu.c */
    }
}

void tune_program_random(const tune_sketch *sk, int sketch_index, uint64_t *rng,
                         tune_program *out) {
    if (tune_sketch_is_gpu(sk)) {
        tune__gpu_program_random(sk, sketch_index, rng, out);
        return;
    }
    memset(out, 0, sizeof *out);
    out->sketch = sketch_index;
    for (int i = 0; i < sk->nholes; i++)
        random_hole(&sk->holes[i], rng, out->vals + sk->holes[i].offset);
}

int tune__move_split_factor(const tune_hole *h, uint64_t *rng, int64_t *v) {
    int m = h->nvals;
    /* Levels 0..m; level 0 is implicit: what the outer factors leave of
     * ceil(extent / innermost), the extent itself without a tail. */
    int64_t lv[8], prod = 1;
    for (int j = 0; j < m - 1; j++) prod *= v[j];
    lv[0] = ceil_div64(h->extent, v[m - 1]) / prod;
    for (int j = 0; j < m; j++) lv[j + 1] = v[j];
    int src = (int)tune__rand_below(rng, m + 1), dst = (int)tune__rand_below(rng, m);
    if (dst >= src) dst++;
    if (lv[src] <= 1) return -1;
    int64_t cand[32];
    int nc = 0;
    for (int64_t x = lv[src], q = 2; x > 1 && nc < 32; q++)
        if (x % q == 0) {
            cand[nc++] = q;
            while (x % q == 0) x /= q;
        }
    int64_t p = cand[tune__rand_below(rng, nc)];
    lv[src] /= p;
    lv[dst] *= p;
    /* Moving into or out of a tailed innermost level changes what the
     * outer levels split: keep only moves that leave a valid split. */
    int64_t nv[8];
    for (int j = 0; j < m; j++) nv[j] = lv[j + 1];
    if (!tune_split_valid(h, nv)) return -1;
    for (int j = 0; j < m; j++) v[j] = nv[j];
    return 0;
}

/* Another innermost factor for a hole with a tail; each outer factor
 * keeps what still divides the new ceil(extent / innermost). */
static int change_inner(const tune_hole *h, uint64_t *rng, int64_t *v) {
    int m = h->nvals;
    int64_t f = tune__rand_inner(h, rng);
    if (f == v[m - 1]) return -1;
    v[m - 1] = f;
    int64_t left = ceil_div64(h->extent, f);
    for (int j = m - 2; j >= 0; j--) {
        int64_t a = v[j], b = left;
        while (b) { /* gcd */
            int64_t t = a % b;
            a = b;
            b = t;
        }
        v[j] = a;
        left /= a;
    }
    return 0;
}

/* A few tries of moving a prime factor between two levels of a split or,
 * for a tailed hole, of changing the innermost factor. */
static int mutate_split(const tune_hole *h, uint64_t *rng, int64_t *v) {
    for (int tries = 0; tries < 8; tries++) {
        if (h->tail && tune__rand_below(rng, 2) == 0) {
            if (change_inner(h, rng, v) == 0) return 0;
        } else if (tune__move_split_factor(h, rng, v) == 0)
            return 0;
    }
    return -1;
}

int tune_program_mutate(const tune_sketch *sk, uint64_t *rng, tune_program *p) {
    if (tune_sketch_is_gpu(sk)) return tune__gpu_program_mutate(sk, rng, p);
    if (sk->nholes == 0) return -1;
    for (int tries = 0; tries < 16; tries++) {
        const tune_hole *h = &sk->holes[tune__rand_below(rng, sk->nholes)];
        int64_t *v = p->vals + h->offset;
        switch (h->kind) {
        case TUNE_HOLE_SPLIT:
            if (mutate_split(h, rng, v) == 0) return 0;
            break;
        case TUNE_HOLE_VECTOR: {
            int64_t old = v[0];
            v[0] = tune__rand_divisor(rng, h->extent, TUNE__MAX_INNER);
            if (v[0] != old) return 0;
            break;
        }
        case TUNE_HOLE_UNROLL: {
            int64_t old = v[0];
            v[0] = tune__rand_below(rng, TUNE__NUNROLL);
            if (v[0] != old) return 0;
            break;
        }
        case TUNE_HOLE_PARALLEL:
        case TUNE_HOLE_LOCATION:
            if (h->extent > 1) {
                int64_t old = v[0];
                v[0] = 1 + tune__rand_below(rng, h->extent - 1);
                if (v[0] >= old) v[0]++;
                return 0;
            }
            break;
        default: break; /* GPU holes: program_gpu.c */
        }
    }
    return -1;
}

/* ---- applying ---- */

typedef struct {
    sch_schedule *s;
    const tune_sketch *sk;
    const tune_program *p;
    te_tensor *stage[TUNE_MAX_STAGES];
    /* Per unit: the stage whose outer spatial tile loops a PLACE'd
     * producer can be computed at, and those loops (outermost first;
     * loops fused into the parallel loop appear as that loop). */
    te_tensor *holder[TUNE_MAX_UNITS];
    int nloops[TUNE_MAX_UNITS];
    te_expr *loops[TUNE_MAX_UNITS][2 * TE_MAX_DIMS];
} applier;

/* The holes of unit u, in order. */
static const tune_hole *hole(const applier *a, int u, int k) { return tune__unit_hole(a->sk, u, k); }
static const int64_t *hvals(const applier *a, const tune_hole *h) { return a->p->vals + h->offset; }

/* Splits every axis of t into its levels: spatial axes into 4 (l[d][0..3]),
 * reduce axes into 2 (r[k][0..1]). vd >= 0: t is a stage packed on
 * spatial axis vd by that axis's innermost factor (sch_pack: axes
 * [vd.outer, the others..., vd.inner]); vd.outer gives levels 0..2 and
 * vd.inner is level 3, placed innermost. Otherwise the innermost level
 * keeps the axis order. */
static int tile_levels(applier *a, int u, te_tensor *t, te_expr *l[][4], te_expr *r[][2],
                       int64_t *inner, int vd) {
    int nsp = vd >= 0 ? t->ndim - 1 : t->ndim, nr = nreduce_of(t);
    for (int d = 0; d < nsp; d++) {
        const int64_t *f = hvals(a, hole(a, u, d));
        if (d == vd) {
            te_expr *x = sch_axis(t, 0);
            l[d][3] = sch_axis(t, nsp);
            if (!x || !l[d][3] || sch_split(a->s, t, x, f[1], &x, &l[d][2]) ||
                sch_split(a->s, t, x, f[0], &l[d][0], &l[d][1]))
                return -1;
        } else {
            te_expr *x = sch_axis(t, vd >= 0 && d < vd ? d + 1 : d);
            if (!x || sch_split(a->s, t, x, f[2], &x, &l[d][3]) ||
                sch_split(a->s, t, x, f[1], &x, &l[d][2]) ||
                sch_split(a->s, t, x, f[0], &l[d][0], &l[d][1]))
                return -1;
        }
        if (inner) inner[d] = f[2];
    }
    for (int k = 0; k < nr; k++) {
        const int64_t *f = hvals(a, hole(a, u, nsp + k));
        te_expr *x = sch_reduce_axis(t, k);
        if (!x || sch_split(a->s, t, x, f[0], &r[k][0], &r[k][1])) return -1;
    }
    te_expr *order[TE_MAX_DIMS * 6];
    int n = 0;
    for (int d = 0; d < nsp; d++) order[n++] = l[d][0];
    for (int d = 0; d < nsp; d++) order[n++] = l[d][1];
    for (int k = 0; k < nr; k++) order[n++] = r[k][0];
    for (int d = 0; d < nsp; d++) order[n++] = l[d][2];
    for (int k = 0; k < nr; k++) order[n++] = r[k][1];
    for (int d = 0; d < nsp; d++)
        if (d != vd) order[n++] = l[d][3];
    if (vd >= 0) order[n++] = l[vd][3];
    return sch_reorder(a->s, t, n, order);
}

/* auto_unroll_max_step on loop x of t, the loops under it unrolled
 * explicitly (copied), as TVM does on the CPU (its UnrollLoop pass's
 * explicit_unroll, on by default): a register tile's accumulators then
 * have constant offsets and live in registers, where a loop only hinted
 * for LLVM to unroll keeps them in memory (a 2x3 tile of an NCHW
 * convolution ran 15-25 % slower, bench/RESULTS.md session 16). */
static int unroll_pragmas(applier *a, te_tensor *t, te_expr *x, int64_t steps) {
    return sch_pragma(a->s, t, x, "auto_unroll_max_step", steps) ||
           sch_pragma(a->s, t, x, "unroll_explicit", 1);
}

/* Fuses the first k of n loops and makes the result parallel. */
static te_expr *fuse_parallel(applier *a, te_tensor *t, te_expr **loops, int n, int64_t k) {
    if (k > n) k = n;
    if (k < 1) k = 1;
    te_expr *f = loops[0];
    if (k > 1 && sch_fuse(a->s, t, (int)k, loops, &f)) return NULL;
    if (sch_parallel(a->s, t, f)) return NULL;
    return f;
}

static int apply_tile(applier *a, int u, te_tensor *t) {
    int nsp = t->ndim;
    te_expr *l[TE_MAX_DIMS][4], *r[TE_MAX_DIMS][2];
    int64_t inner[TE_MAX_DIMS];
    if (tile_levels(a, u, t, l, r, inner, -1)) return -1;
    int base = nsp + nreduce_of(t);
    int64_t par = hvals(a, hole(a, u, base))[0];
    int64_t unroll = tune__unroll_steps[hvals(a, hole(a, u, base + 1))[0]];
    te_expr *outer[2 * TE_MAX_DIMS];
    for (int d = 0; d < nsp; d++) outer[d] = l[d][0], outer[nsp + d] = l[d][1];
    te_expr *f = fuse_parallel(a, t, outer, 2 * nsp, par);
    if (!f) return -1;
    a->holder[u] = t;
    a->nloops[u] = 2 * nsp;
    for (int j = 0; j < 2 * nsp; j++) a->loops[u][j] = j < par ? f : outer[j];
    if (unroll && unroll_pragmas(a, t, f, unroll)) return -1;
    if (inner[nsp - 1] > 1 && sch_vectorize(a->s, t, l[nsp - 1][3])) return -1;
    return 0;
}

/* Tiles producer `pr` and fuses it into `co` (its cache copy or its
 * elementwise consumer, same shape) at the chosen level. vd >= 0: pr is
 * packed on spatial axis vd (tile_levels), whose innermost level is
 * vectorized; else the last axis's. */
static int apply_tile_fused(applier *a, int u, te_tensor *pr, te_tensor *co, int vd) {
    if (!co) return -1;
    int nsp = co->ndim;
    te_expr *l[TE_MAX_DIMS][4], *r[TE_MAX_DIMS][2];
    int64_t inner[TE_MAX_DIMS];
    if (tile_levels(a, u, pr, l, r, inner, vd)) return -1;
    a->holder[u] = pr;
    a->nloops[u] = 2 * nsp;
    for (int d = 0; d < nsp; d++) a->loops[u][d] = l[d][0], a->loops[u][nsp + d] = l[d][1];
    int base = nsp + nreduce_of(pr);
    int64_t par = hvals(a, hole(a, u, base))[0];
    int64_t unroll = tune__unroll_steps[hvals(a, hole(a, u, base + 1))[0]];
    int64_t level = hvals(a, hole(a, u, base + 2))[0];
    te_expr *c[TE_MAX_DIMS][3];
    int64_t cin = 1;
    for (int d = 0; d < nsp; d++) {
        const int64_t *f = hvals(a, hole(a, u, d));
        te_expr *x = sch_axis(co, d);
        if (!x) return -1;
        if (level == 1) {
            if (sch_split(a->s, co, x, f[0] * f[1] * f[2], &c[d][0], &c[d][2])) return -1;
            c[d][1] = NULL;
            if (d == nsp - 1) cin = f[0] * f[1] * f[2];
        } else {
            if (sch_split(a->s, co, x, f[1] * f[2], &x, &c[d][2]) ||
                sch_split(a->s, co, x, f[0], &c[d][0], &c[d][1]))
                return -1;
            if (d == nsp - 1) cin = f[1] * f[2];
        }
    }
    te_expr *order[3 * TE_MAX_DIMS];
    int n = 0;
    for (int lv = 0; lv < 3; lv++)
        for (int d = 0; d < nsp; d++)
            if (c[d][lv]) order[n++] = c[d][lv];
    if (sch_reorder(a->s, co, n, order)) return -1;
    te_expr *f = fuse_parallel(a, co, order, nsp, par);
    if (!f) return -1;
    te_expr *at = level == 1 ? (par >= nsp ? f : c[nsp - 1][0]) : c[nsp - 1][1];
    if (unroll && unroll_pragmas(a, co, at, unroll)) return -1;
    if (cin > 1 && cin <= TUNE__MAX_INNER && sch_vectorize(a->s, co, c[nsp - 1][2])) return -1;
    if (sch_compute_at(a->s, pr, co, at)) return -1;
    int v = vd >= 0 ? vd : nsp - 1;
    if (inner[v] > 1 && sch_vectorize(a->s, pr, l[v][3])) return -1;
    return 0;
}

static int apply_annotate(applier *a, int u, te_tensor *t) {
    int n = t->ndim, nr = nreduce_of(t);
    int64_t vec = hvals(a, hole(a, u, 0))[0], par = hvals(a, hole(a, u, 1))[0];
    te_expr *ax[TE_MAX_DIMS + 1], *lo, *li;
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(t, d))) return -1;
    if (sch_split(a->s, t, ax[n - 1], vec, &lo, &li)) return -1;
    ax[n - 1] = lo;
    if (nr > 0) {
        te_expr *order[2 * TE_MAX_DIMS + 1];
        int k = 0;
        for (int d = 0; d < n; d++) order[k++] = ax[d];
        for (int r = 0; r < nr; r++)
            if (!(order[k++] = sch_reduce_axis(t, r))) return -1;
        order[k++] = li;
        if (sch_reorder(a->s, t, k, order)) return -1;
    }
    te_expr *f = fuse_parallel(a, t, ax, n, par);
    if (!f) return -1;
    a->holder[u] = t;
    a->nloops[u] = 1;
    a->loops[u][0] = f;
    if (vec > 1 && sch_vectorize(a->s, t, li)) return -1;
    return 0;
}

/* The compute location of an inlinable producer t (TUNE_UNIT_PLACE):
 * inline; at the root with its rows fused parallel and the innermost
 * vectorized (ops__sched_pad); or at an outer tile
 * loop of its consumer's unit with the innermost vectorized. Runs after
 * every other unit, so the consumer's loops exist. */
static int apply_place(applier *a, int u, te_tensor *t) {
    int64_t loc = hvals(a, hole(a, u, 0))[0];
    if (loc <= 1) return sch_compute_inline(a->s, t);
    int cu = -1;
    for (int k = 0; k < a->sk->nunits; k++)
        if (k != u && a->sk->units[k].stage == a->sk->units[u].consumer && a->holder[k]) cu = k;
    if (loc > 2) {
        if (cu < 0 || loc - 3 >= a->nloops[cu]) {
            te_error(sch_ctx(a->s), "autotune: compute location %lld of '%s' has no loop",
                     (long long)loc, t->name);
            return -1;
        }
        if (sch_compute_at(a->s, t, a->holder[cu], a->loops[cu][loc - 3])) return -1;
    }
    int n = t->ndim;
    int64_t lanes = tune_host_vector_lanes();
    te_expr *ax[TE_MAX_DIMS], *lo, *li;
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(t, d))) return -1;
    if (lanes > t->shape[n - 1]) lanes = t->shape[n - 1];
    if (sch_split(a->s, t, ax[n - 1], lanes, &lo, &li)) return -1;
    /* At the root: the rows parallel, each row's column blocks a loop
     * of their own (ops__sched_pad: no division a vector). */
    if (loc == 2) {
        if (n == 1) ax[0] = lo;
        int rows = n > 1 ? n - 1 : 1;
        if (!fuse_parallel(a, t, ax, rows, rows)) return -1;
    }
    return lanes > 1 ? sch_vectorize(a->s, t, li) : 0;
}

/* Packing (TUNE_UNIT_PACK) of input t for the tiled stage of unit
 * `consumer`'s unit: a cache_read copy at the root, packed on the
 * dimension the tile's vectorized axis reads by that axis's innermost
 * factor, its block loop parallel and its inner loop vectorized. Runs
 * after the tiling, so the reader (the tiled stage or its cache) exists. */
static int apply_pack(applier *a, int u, te_tensor *t) {
    int cu = -1;
    for (int k = 0; k < a->sk->nunits; k++) {
        tune_unit_kind kk = a->sk->units[k].kind;
        if (a->sk->units[k].stage == a->sk->units[u].consumer && a->holder[k] &&
            (kk == TUNE_UNIT_TILE || kk == TUNE_UNIT_TILE_CACHE || kk == TUNE_UNIT_TILE_FUSE ||
             kk == TUNE_UNIT_TILE_CACHE_PACKED))
            cu = k;
    }
    te_ctx *ctx = sch_ctx(a->s);
    if (cu < 0)
        return te_error(ctx, "autotune: packing of '%s' has no tiled reader", t->name);
    te_tensor *reader = a->holder[cu];
    const tune_unit *cun = &a->sk->units[cu];
    int v = cun->kind == TUNE_UNIT_TILE_CACHE_PACKED ? cun->vec_dim
                                                      : a->stage[cun->stage]->ndim - 1;
    int64_t f = hvals(a, hole(a, cu, v))[2];
    int dim = a->sk->units[u].vec_dim;
    if (dim < 0 || dim >= t->ndim)
        return te_error(ctx, "autotune: '%s' has no dimension %d to pack", t->name, dim);
    te_tensor *copy = sch_cache_read(a->s, t, "global", 1, &reader);
    te_tensor *packed = copy ? sch_pack(a->s, copy, sch_axis(copy, dim), f) : NULL;
    if (!packed || sch_parallel(a->s, packed, sch_axis(packed, 0))) return -1;
    return f > 1 ? sch_vectorize(a->s, packed, sch_axis(packed, packed->ndim - 1)) : 0;
}

static int apply_rfactor(applier *a, int u, te_tensor *t) {
    int nr = nreduce_of(t);
    int64_t f = hvals(a, hole(a, u, 0))[0];
    te_expr *ko, *ki;
    if (sch_split(a->s, t, sch_reduce_axis(t, nr - 1), f, &ko, &ki)) return -1;
    te_tensor *rf = sch_rfactor(a->s, t, ki, t->ndim);
    if (!rf) return -1;
    /* rf: [spatial..., ki] reduced over the rest; ki innermost, vectorized. */
    te_expr *order[2 * TE_MAX_DIMS + 2];
    int k = 0;
    for (int d = 0; d < t->ndim; d++) order[k++] = sch_axis(rf, d);
    int rnr = nreduce_of(rf);
    for (int r = 0; r < rnr; r++) order[k++] = sch_reduce_axis(rf, r);
    te_expr *last = sch_axis(rf, t->ndim);
    order[k++] = last;
    for (int i = 0; i < k; i++)
        if (!order[i]) return -1;
    if (sch_reorder(a->s, rf, k, order)) return -1;
    if (sch_parallel(a->s, rf, order[0])) return -1;
    if (f > 1 && f <= TUNE__MAX_INNER && sch_vectorize(a->s, rf, last)) return -1;
    return 0;
}

/* The stage whose loops copy a register tile's accumulator out: t (its
 * cache_write copy), or with a tail (unit consumer) that tail, t inlined
 * into it, so the epilogue runs on the tile while it is in registers
 * rather than as a second pass over t's whole output. NULL on failure. */
static te_tensor *copy_out(applier *a, const tune_unit *un, te_tensor *t) {
    if (un->consumer < 0) return t;
    return sch_compute_inline(a->s, t) ? NULL : a->stage[un->consumer];
}

sch_schedule *tune_program_apply(te_ctx *ctx, const tune_workload *w, const tune_sketch *sk,
                                 const tune_program *p) {
    if (tune_sketch_is_gpu(sk)) return tune__gpu_program_apply(ctx, w, sk, p);
    applier a = {sch_create(ctx, w->nouts, w->outs), sk, p, {0}, {0}, {0}, {{0}}};
    if (!a.s) return NULL;
    int n = sch_num_stages(a.s);
    if (n > TUNE_MAX_STAGES) {
        te_error(ctx, "autotune: %d stages; at most %d", n, TUNE_MAX_STAGES);
        return NULL;
    }
    for (int i = 0; i < n; i++) a.stage[i] = sch_stage_tensor(a.s, i);
    for (int k = 0; k < sk->ninline; k++)
        if (sch_compute_inline(a.s, a.stage[sk->inlined[k]])) return NULL;
    /* Units were derived last stage first; apply them first stage first
     * so that a producer's cache stage exists before consumers move. */
    for (int u = sk->nunits - 1; u >= 0; u--) {
        const tune_unit *un = &sk->units[u];
        te_tensor *t = a.stage[un->stage];
        int rc = 0;
        switch (un->kind) {
        case TUNE_UNIT_ANNOTATE: rc = apply_annotate(&a, u, t); break;
        case TUNE_UNIT_TILE: rc = apply_tile(&a, u, t); break;
        case TUNE_UNIT_TILE_FUSE:
            rc = apply_tile_fused(&a, u, t, a.stage[un->consumer], -1);
            break;
        case TUNE_UNIT_TILE_CACHE: {
            te_tensor *cache = sch_cache_write(a.s, t, "local");
            rc = cache ? apply_tile_fused(&a, u, cache, copy_out(&a, un, t), -1) : -1;
            break;
        }
        case TUNE_UNIT_TILE_CACHE_PACKED: {
            /* The accumulator packed on the vectorized axis, so the
             * register tile's vectors are contiguous in it. */
            te_tensor *cache = sch_cache_write(a.s, t, "local");
            int vd = un->vec_dim;
            int64_t f = hvals(&a, hole(&a, u, vd))[2];
            if (cache) cache = sch_pack(a.s, cache, sch_axis(cache, vd), f);
            rc = cache ? apply_tile_fused(&a, u, cache, copy_out(&a, un, t), vd) : -1;
            break;
        }
        case TUNE_UNIT_RFACTOR: rc = apply_rfactor(&a, u, t); break;
        case TUNE_UNIT_PLACE:
        case TUNE_UNIT_PACK: break; /* below, once the consumers' loops exist */
        default: break; /* GPU units: program_gpu.c */
        }
        if (rc) return NULL;
    }
    for (int u = sk->nunits - 1; u >= 0; u--)
        if ((sk->units[u].kind == TUNE_UNIT_PLACE &&
             apply_place(&a, u, a.stage[sk->units[u].stage])) ||
            (sk->units[u].kind == TUNE_UNIT_PACK &&
             apply_pack(&a, u, a.stage[sk->units[u].stage])))
            return NULL;
    return a.s;
}

static void step_text(te_str *out, const sch_step *st) {
    te_str_printf(out, "%d/%d/%d/%lld/%lld/%d/%d/%d", (int)st->kind, st->stage, st->iter,
                  (long long)st->value, (long long)st->value2, st->nparts, st->target_stage,
                  (int)st->ann);
    for (int k = 0; k < st->n; k++)
        te_str_printf(out, ",%d", st->iters ? st->iters[k] : st->stages ? st->stages[k] : 0);
    if (st->str) te_str_printf(out, "/%s", st->str);
    te_str_append(out, ";");
}

uint64_t tune__step_hash(const sch_step *st) {
    te_str out;
    te_str_init(&out);
    step_text(&out, st);
    uint64_t h = tune_hash(out.data ? out.data : "");
    te_str_free(&out);
    return h;
}

const char *tune_steps_key_of(te_ctx *ctx, int nsteps, const sch_step *steps) {
    te_str out;
    te_str_init(&out);
    for (int i = 0; i < nsteps; i++) step_text(&out, &steps[i]);
    const char *r = te_strdup(ctx, out.data ? out.data : "");
    te_str_free(&out);
    return r;
}

const char *tune_steps_key(te_ctx *ctx, const sch_schedule *s) {
    te_str out;
    te_str_init(&out);
    int n = sch_num_steps(s);
    for (int i = 0; i < n; i++) step_text(&out, sch_get_step(s, i));
    const char *r = te_strdup(ctx, out.data ? out.data : "");
    te_str_free(&out);
    return r;
}

uint64_t tune_hash(const char *s) { return te_hash_str(s); }
