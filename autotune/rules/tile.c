/*
 * autotune/rules/tile.c — what the CPU multi-level tiling rules share
 * (rule_multi_level_tile.c: TILE, rule_tile_fuse.c: TILE_FUSE,
 * rule_cache_write.c: TILE_CACHE, rule_packed_tile.c:
 * TILE_CACHE_PACKED): the "SSRSRS" holes, splitting a stage into its
 * levels, the parallel and unrolling annotations, fusing a tile into the
 * stage that copies it out, and the heuristic and structural fills of a
 * register tile.
 */
#include <string.h>

#include "autotune/rules/rule.h"
#include "loom/ops.h"

int tune__tile_holes(tune_sketch *sk, const tune_dag *dag, int u) {
    const tune_unit *un = &sk->units[u];
    const te_tensor *t = dag->stages[un->stage].tensor;
    int nsp = t->ndim, nr = nreduce_of(t);
    for (int d = 0; d < nsp; d++) {
        if (tune__add_hole(sk, TUNE_HOLE_SPLIT, u, 3, t->shape[d], false)) return TUNE__CAP_HOLES;
        /* Rows of a register tile need not divide the extent (6 of
         * 1024); the vectorized axis's inner factor must, so that no
         * vector tail appears. */
        sk->holes[sk->nholes - 1].tail =
            d != (un->kind == TUNE_UNIT_TILE_CACHE_PACKED ? un->vec_dim : nsp - 1);
    }
    for (int r = 0; r < nr; r++)
        if (tune__add_hole(sk, TUNE_HOLE_SPLIT, u, 1, t->body->u.reduce.axes[r]->u.var.extent,
                           true))
            return TUNE__CAP_HOLES;
    if (tune__add_hole(sk, TUNE_HOLE_PARALLEL, u, 1, un->kind == TUNE_UNIT_TILE ? 2 * nsp : nsp,
                       false) ||
        tune__add_hole(sk, TUNE_HOLE_UNROLL, u, 1, TUNE__NUNROLL - 1, false))
        return TUNE__CAP_HOLES;
    if (un->kind != TUNE_UNIT_TILE && tune__add_hole(sk, TUNE_HOLE_LOCATION, u, 1, 2, false))
        return TUNE__CAP_HOLES;
    return 0;
}

/* Splits every axis of t into its levels: spatial axes into 4 (l[d][0..3]),
 * reduce axes into 2 (r[k][0..1]). vd >= 0: t is a stage packed on
 * spatial axis vd by that axis's innermost factor (sch_pack: axes
 * [vd.outer, the others..., vd.inner]); vd.outer gives levels 0..2 and
 * vd.inner is level 3, placed innermost. Otherwise the innermost level
 * keeps the axis order. */
int tune__tile_levels(tune_decoder *a, int u, te_tensor *t, te_expr *l[][4], te_expr *r[][2],
                      int64_t *inner, int vd) {
    int nsp = vd >= 0 ? t->ndim - 1 : t->ndim, nr = nreduce_of(t);
    for (int d = 0; d < nsp; d++) {
        const int64_t *f = tune__hv(a, u, d);
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
        const int64_t *f = tune__hv(a, u, nsp + k);
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

/* The loops under x unrolled explicitly (copied), as TVM does on the CPU
 * (its UnrollLoop pass's explicit_unroll, on by default): a register
 * tile's accumulators then have constant offsets and live in registers,
 * where a loop only hinted for LLVM to unroll keeps them in memory (a 2x3
 * tile of an NCHW convolution ran 15-25 % slower, bench/RESULTS.md
 * session 16). */
int tune__unroll_pragmas(tune_decoder *a, te_tensor *t, te_expr *x, int64_t steps) {
    return sch_pragma(a->s, t, x, "auto_unroll_max_step", steps) ||
           sch_pragma(a->s, t, x, "unroll_explicit", 1);
}

/* A parallel loop of one iteration runs the whole nest on one thread:
 * on 2 threads a matrix-vector Gemm (batch 1) tuned with its batch loop
 * alone parallel ran serial, 2.2x slower in the model than the default
 * (bench/RESULTS.md, session 40). So the loops after the k chosen are
 * fused in while every loop fused has extent 1, whatever the thread
 * count (a program does not know it). Stored logs replay as they were
 * written: only new programs change. */
te_expr *tune__fuse_parallel(tune_decoder *a, te_tensor *t, te_expr **loops, int n, int64_t k,
                             int *fused) {
    if (k > n) k = n;
    if (k < 1) k = 1;
    bool one = true;
    for (int i = 0; i < k; i++) one = one && loops[i]->u.var.extent == 1;
    while (one && k < n) one = loops[k++]->u.var.extent == 1;
    if (fused) *fused = (int)k;
    te_expr *f = loops[0];
    if (k > 1 && sch_fuse(a->s, t, (int)k, loops, &f)) return NULL;
    if (sch_parallel(a->s, t, f)) return NULL;
    return f;
}

int tune__tile_copy_out(tune_decoder *a, int u, te_tensor *pr, te_tensor *co, int base,
                        int64_t lanes) {
    int nsp = co->ndim;
    int64_t par = tune__hv(a, u, base)[0];
    int64_t unroll = tune__unroll_steps[tune__hv(a, u, base + 1)[0]];
    int64_t level = tune__hv(a, u, base + 2)[0];
    te_expr *c[TE_MAX_DIMS][3];
    int64_t cin = 1;
    for (int d = 0; d < nsp; d++) {
        const int64_t *f = tune__hv(a, u, d);
        int64_t m = d == nsp - 1 ? lanes : 1;
        te_expr *x = sch_axis(co, d);
        if (!x) return -1;
        if (level == 1) {
            if (sch_split(a->s, co, x, f[0] * f[1] * f[2] * m, &c[d][0], &c[d][2])) return -1;
            c[d][1] = NULL;
            if (d == nsp - 1) cin = f[0] * f[1] * f[2] * m;
        } else {
            if (sch_split(a->s, co, x, f[1] * f[2] * m, &x, &c[d][2]) ||
                sch_split(a->s, co, x, f[0], &c[d][0], &c[d][1]))
                return -1;
            if (d == nsp - 1) cin = f[1] * f[2] * m;
        }
    }
    te_expr *order[3 * TE_MAX_DIMS];
    int n = 0;
    for (int lv = 0; lv < 3; lv++)
        for (int d = 0; d < nsp; d++)
            if (c[d][lv]) order[n++] = c[d][lv];
    if (sch_reorder(a->s, co, n, order)) return -1;
    int nfused;
    te_expr *f = tune__fuse_parallel(a, co, order, nsp, par, &nfused);
    if (!f) return -1;
    te_expr *at = level == 1 ? (nfused >= nsp ? f : c[nsp - 1][0]) : c[nsp - 1][1];
    if (unroll && tune__unroll_pragmas(a, co, at, unroll)) return -1;
    if (cin > 1 && cin <= TUNE__MAX_INNER && sch_vectorize(a->s, co, c[nsp - 1][2])) return -1;
    return sch_compute_at(a->s, pr, co, at);
}

/* Tiles producer `pr` and fuses it into `co` (its cache copy or its
 * elementwise consumer, same shape) at the chosen level. vd >= 0: pr is
 * packed on spatial axis vd (tile_levels), whose innermost level is
 * vectorized; else the last axis's. */
int tune__tile_fused(tune_decoder *a, int u, te_tensor *pr, te_tensor *co, int vd) {
    if (!co) return -1;
    int nsp = co->ndim;
    te_expr *l[TE_MAX_DIMS][4], *r[TE_MAX_DIMS][2];
    int64_t inner[TE_MAX_DIMS];
    if (tune__tile_levels(a, u, pr, l, r, inner, vd)) return -1;
    a->holder[u] = pr;
    a->nloops[u] = 2 * nsp;
    for (int d = 0; d < nsp; d++) a->loops[u][d] = l[d][0], a->loops[u][nsp + d] = l[d][1];
    if (tune__tile_copy_out(a, u, pr, co, nsp + nreduce_of(pr), 1)) return -1;
    int v = vd >= 0 ? vd : nsp - 1;
    if (inner[v] > 1 && sch_vectorize(a->s, pr, l[v][3])) return -1;
    return 0;
}

/* The stage whose loops copy a register tile's accumulator out: t (its
 * cache_write copy), or with a tail (unit consumer) that tail, t inlined
 * into it, so the epilogue runs on the tile while it is in registers
 * rather than as a second pass over t's whole output. NULL on failure. */
te_tensor *tune__copy_out(tune_decoder *a, const tune_unit *un, te_tensor *t) {
    if (un->consumer < 0) return t;
    return sch_compute_inline(a->s, t) ? NULL : a->stage[un->consumer];
}

int64_t tune__divisor_multiple(int64_t n, int64_t cap, int64_t m) {
    for (int64_t d = cap < n ? cap : n; d >= m; d--)
        if (n % d == 0 && d % m == 0) return d;
    return 0;
}

bool tune__fill_tile(const tune_sketch *sk, int u, const te_tensor *t, int64_t lv[][3],
                     int64_t par, bool taps_outside, tune_program *p) {
    int nsp = t->ndim;
    const tune_hole *h;
    int k = 0;
    for (int d = 0; d < nsp; d++, k++) {
        if (!(h = tune__unit_hole(sk, u, k)) || h->kind != TUNE_HOLE_SPLIT || h->nvals != 3)
            return false;
        memcpy(p->vals + h->offset, lv[d], sizeof lv[d]);
        if (!tune_split_valid(h, p->vals + h->offset)) return false;
    }
    /* The reduction outside the tile in the outer reduce level; with
     * taps_outside the last reduce axis that is no window tap in blocks of
     * OPS_PACKED_REDUCE_BLOCK in the inner level (ops_packed_taps_outside:
     * rc.o, ry, rx, rc.i). */
    int last = -1, nslide = 0;
    for (int r = 0; (h = tune__unit_hole(sk, u, k)) && h->kind == TUNE_HOLE_SPLIT; k++, r++) {
        p->vals[h->offset] = 1;
        if (te_reduce_axis_slides(t, r)) nslide++;
        else last = k;
    }
    if (taps_outside && nslide > 0 && last >= 0) {
        h = tune__unit_hole(sk, u, last);
        p->vals[h->offset] = ops_packed_reduce_block(h->extent);
    }
    h = tune__unit_hole(sk, u, k);
    if (!h || h->kind != TUNE_HOLE_PARALLEL) return false;
    p->vals[h->offset] = par < 1 ? 1 : par > h->extent ? h->extent : par;
    if (!(h = tune__unit_hole(sk, u, ++k)) || h->kind != TUNE_HOLE_UNROLL) return false;
    p->vals[h->offset] = 1; /* 16 steps: the register tile */
    if (!(h = tune__unit_hole(sk, u, ++k)) || h->kind != TUNE_HOLE_LOCATION) return false;
    p->vals[h->offset] = 2; /* the accumulator at the innermost outer tile loop */
    return true;
}

void tune__reduce_inner(const tune_sketch *sk, int u, int nsp, int axis, int64_t n,
                        tune_program *p) {
    const tune_hole *h = axis >= 0 ? tune__unit_hole(sk, u, nsp + axis) : NULL;
    if (!h || h->kind != TUNE_HOLE_SPLIT || h->nvals != 1) return;
    int64_t old = p->vals[h->offset];
    p->vals[h->offset] = n > 0 ? n : h->extent;
    if (!tune_split_valid(h, p->vals + h->offset)) p->vals[h->offset] = old;
}

int tune__plane_tile(const tune_sketch *sk, const tune_dag *dag, int u) {
    if (sk->units[u].kind != TUNE_UNIT_TILE) return 0;
    for (int k = 0; k < sk->nunits; k++)
        if (sk->units[k].kind == TUNE_UNIT_PLACE && sk->units[k].consumer == sk->units[u].stage)
            return tune__plane_axes(dag, sk->units[k].stage, sk->units[u].stage);
    return 0;
}

/* The rows of a structural register tile: a divisor of the extent near 4
 * (no guard in the tile), else 4 with a tail (the row holes allow one). */
static int64_t tile_rows(int64_t ext) {
    if (ext <= 4) return ext;
    for (int64_t f = 4; f >= 2; f--)
        if (ext % f == 0) return f;
    return 4;
}

/* Its columns (vectorized, so a divisor): the whole axis up to two
 * vectors, else the largest multiple of a vector up to two vectors
 * dividing it, else the widest vector split. A tile of one row (a
 * matrix-vector product: a classifier's Gemm) takes up to four vectors,
 * half vectors counted, so that its sums are several independent chains:
 * 1000 columns by 8 lanes made one chain of 1280 dependent FMAs a tile
 * (2.4x ONNX Runtime's time), by 40 three. */
static int64_t tile_cols(int64_t ext, int vlen, bool one_row) {
    int64_t cap = 2 * (int64_t)vlen;
    if (ext <= cap) return ext;
    int64_t f = one_row && vlen >= 2 ? tune__divisor_multiple(ext, 2 * cap, vlen / 2) : 0;
    if (!f) f = tune__divisor_multiple(ext, cap, vlen);
    return f ? f : tune__vector_factor(ext, vlen);
}

/* Rows x columns in the innermost level (the library's
 * ops__sched_register_tile: 4 rows x 2 vectors), every other level 1, the
 * reduction outside the tile, the outer loops fused parallel, the tile
 * unrolled (16 steps), an accumulator at the innermost outer tile loop.
 * A blocked convolution (NCHW[x]c) takes tune__blocked_conv_tile's tile,
 * wholly unrolled (64 steps): a tiling without a register tile sketch (no
 * epilogue to cache its writes: a bias alone, a downsample) ran at 0.5x
 * with 2 rows by one vector. A depthwise convolution on 56 x 56 planes
 * ran 1.3x faster with its padding per plane than with the padding at
 * the root (bench/RESULTS.md, session 34). */
bool tune__structural_tile(const tune_heur *c, int u, tune_program *p) {
    const tune_sketch *sk = c->sk;
    const te_tensor *t = c->dag->stages[sk->units[u].stage].tensor;
    int nsp = t->ndim, col = nsp - 1, row = nsp - 2;
    if (nsp < 1) return false;
    const tune_hole *h;
    int k = 0;
    int64_t blv[TE_MAX_DIMS][3];
    for (int d = 0; d < nsp; d++) tune__set3(blv[d], 1, 1, 1);
    int inner_axis;
    int64_t inner_n;
    bool blocked = tune__blocked_conv_tile(t, c->vlen, blv, &inner_axis, &inner_n);
    /* A padding read plane by plane (a depthwise convolution's) is
     * computed per plane (rule_place.c): the planes' loops outermost and
     * parallel, each plane's rows and columns wholly inside (level 1). */
    int lead = blocked ? 0 : tune__plane_tile(sk, c->dag, u);
    for (int d = 0; d < nsp; d++, k++) {
        if (!(h = tune__unit_hole(sk, u, k)) || h->kind != TUNE_HOLE_SPLIT || h->nvals != 3)
            return false;
        int64_t *v = p->vals + h->offset;
        tune__set3(v, 1, 1, 1);
        if (blocked) memcpy(v, blv[d], sizeof blv[d]);
        else if (d == col)
            v[2] = tile_cols(t->shape[d], c->vlen, nsp == 1 || t->shape[row] == 1);
        else if (d == row) v[2] = tile_rows(t->shape[d]);
        if (lead && d >= lead && t->shape[d] % v[2] == 0) v[0] = t->shape[d] / v[2];
        if (!tune_split_valid(h, v)) return false;
    }
    for (; (h = tune__unit_hole(sk, u, k)) && h->kind == TUNE_HOLE_SPLIT; k++)
        p->vals[h->offset] = 1;
    if (blocked) tune__reduce_inner(sk, u, nsp, inner_axis, inner_n, p);
    if (!h || h->kind != TUNE_HOLE_PARALLEL) return false;
    int64_t par = lead ? lead : nsp;
    p->vals[h->offset] = par < h->extent ? par : h->extent;
    if (!(h = tune__unit_hole(sk, u, ++k)) || h->kind != TUNE_HOLE_UNROLL) return false;
    p->vals[h->offset] = blocked ? 2 : 1;
    if (sk->units[u].kind == TUNE_UNIT_TILE) return true;
    if (!(h = tune__unit_hole(sk, u, ++k)) || h->kind != TUNE_HOLE_LOCATION) return false;
    p->vals[h->offset] = 2;
    return true;
}
