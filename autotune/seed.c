/*
 * autotune/seed.c — heuristic programs: a sketch's holes filled by the
 * rules of the operator library's CPU default schedules instead of at
 * random, so the search measures, and evolution refines, the point those
 * rules pick.
 *
 * Why: random annotation almost never lands on a good register tile of a
 * large convolution (one tile size of each axis, the reduction unsplit, the
 * right fusion level at once), and the cost model cannot lead the search
 * there before it has seen one; so a search could measure hundreds of
 * programs all slower than the untuned default (bench/RESULTS.md, sessions
 * 13 and 15) and never explore around the default. TVM's MetaSchedule
 * likewise seeds its evolutionary search with the traces of schedule rules
 * before random samples; Ansor does not.
 *
 * The rules, per unit of the sketch:
 * - a register tile vectorized on a packed axis (TUNE_UNIT_TILE_CACHE_PACKED):
 *   the tile of ops_packed_tile_shape (lanes x rows x columns in the
 *   innermost level, every other level 1), the reduction outside the tile
 *   (a window's taps outside blocks of the channels or not, as the
 *   default: ops_packed_taps_outside), the outer loops but the columns'
 *   fused parallel, unrolling by 16 steps (the tile), the accumulator
 *   computed at the column tile;
 *   once with a column tail allowed and once without (the default decides
 *   by the operator's stride and window, which a sketch does not know),
 *   each also with the reduction in the other order (taps inside or
 *   outside);
 * - a register tile on the last axis with an accumulator (TUNE_UNIT_TILE_CACHE)
 *   whose column operand is packed (a PACK unit): the GEMM tile of the
 *   default matmul, 6 rows (a tail allowed) by
 *   2 host vectors of columns (4 on AVX-512; a divisor of the columns,
 *   else the largest multiple of a vector that divides them), the rows
 *   in the second level so the column panels stay outer, the outer loops
 *   fused parallel;
 * - a padding stage (TUNE_UNIT_PLACE): at the root, parallel and vectorized;
 * - an elementwise stage (TUNE_UNIT_ANNOTATE): every loop fused parallel,
 *   the innermost split by the widest divisor up to a vector;
 * - packing (TUNE_UNIT_PACK): no holes.
 * Sketches with any other unit (tiling with fusion, rfactor, GPU units)
 * get none.
 */
#include <string.h>

#include "autotune/tune_internal.h"
#include "loom/ops.h"

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The largest divisor of n not above cap that is a multiple of m; 0 if none. */
static int64_t divisor_multiple(int64_t n, int64_t cap, int64_t m) {
    for (int64_t d = cap < n ? cap : n; d >= m; d--)
        if (n % d == 0 && d % m == 0) return d;
    return 0;
}

static void set3(int64_t *v, int64_t a, int64_t b, int64_t c) { v[0] = a, v[1] = b, v[2] = c; }

/* Fills the holes of a tiling unit u (spatial SPLITs, reduce SPLITs,
 * PARALLEL, UNROLL, LOCATION) given each spatial axis's level values.
 * false when a value breaks its hole's rule. */
static bool fill_tile(const tune_sketch *sk, int u, const te_tensor *t, int64_t lv[][3],
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

/* A packed register tile (TUNE_UNIT_TILE_CACHE_PACKED) with or without a
 * column tail, its reduction in the default's order or (other_order) the
 * other, its row tiles outside the channel blocks (rows_outside) or
 * inside: which orders win depends on the layer, its caches and LLVM's
 * register allocation (bench/RESULTS.md, sessions 18 and 19: r50_c5 runs
 * 4.5 % faster with the rows outside against the default's rule), so the
 * search measures them all. */
static bool fill_packed(const tune_sketch *sk, int u, const te_tensor *t, int vlen,
                        bool col_tail, bool other_order, bool rows_outside, tune_program *p) {
    int nsp = t->ndim;
    const int64_t *shape = t->shape;
    int vd = sk->units[u].vec_dim, col = nsp - 1, row = -1;
    for (int d = col - 1; d >= 0 && row < 0; d--)
        if (d != vd) row = d;
    if (vd == col) return false;
    ops_packed_tile tile;
    if (!ops_packed_tile_shape(shape[vd], row >= 0 ? shape[row] : 1, shape[col], vlen, col_tail,
                               &tile))
        return false;
    int64_t lv[TE_MAX_DIMS][3];
    for (int d = 0; d < nsp; d++)
        set3(lv[d], 1, 1, d == vd ? tile.lanes : d == row ? tile.rows : d == col ? tile.cols : 1);
    if (rows_outside && row >= 0) {
        /* ops_packed_rows_outside: the blocks of lanes and the column tiles
         * in level 1, so the row tiles' level-0 loop is outside them (the
         * default's n, y.o, k.o, x.o). */
        set3(lv[vd], shape[vd] / tile.lanes, 1, tile.lanes);
        set3(lv[col], ceil_div(shape[col], tile.cols), 1, tile.cols);
    }
    return fill_tile(sk, u, t, lv, nsp - 1, ops_packed_taps_outside(&tile, vlen) != other_order,
                     p);
}

/* A convolution on NCHW[vlen]c (graph/pass_alter_layout.c: output
 * [N, K/vlen, OH, OW, vlen], one vector of columns): the GEMM tile's 6
 * rows by one vector leave registers idle and put a guard in every row
 * tile of a 56-wide image; instead up to 8 output columns (a divisor of
 * OW: no tail) by 2 channel blocks where they divide (16 accumulators;
 * TVM's conv2d_NCHWc tiles ow by oc blocks the same way), every other
 * axis outside in level 0 (lv[d] = {1, 1, inner}; other axes' entries are
 * left alone). Measured on AVX-512 (1 thread, 64->64 3x3 and
 * 64->256 1x1 at 56x56): 8x2 and 7x2 run 1.8-2x the NCHW default; 14x2
 * (28 accumulators) spills and runs at 0.57x of 8x2, 14x1 at 0.95x. */
bool tune__blocked_conv_tile(const te_tensor *t, int vlen, int64_t lv[][3]) {
    const int64_t *shape = t->shape;
    /* Half a vector too: a tensor blocked by half the lanes (24 channels
     * on AVX-512, graph/pass_alter_layout.c). */
    if (t->ndim != 5 || (shape[4] != vlen && 2 * shape[4] != vlen) || !t->body ||
        t->body->kind != TE_REDUCE)
        return false;
    int64_t ow = shape[3] <= 8 ? shape[3] : divisor_multiple(shape[3], 8, 1);
    int64_t kb = shape[1] % 2 == 0 ? 2 : 1;
    lv[1][0] = lv[1][1] = lv[3][0] = lv[3][1] = lv[4][0] = lv[4][1] = 1;
    lv[1][2] = kb;
    lv[3][2] = ow;
    lv[4][2] = shape[4];
    return true;
}

/* The default GEMM register tile (TUNE_UNIT_TILE_CACHE). */
static bool fill_gemm(const tune_sketch *sk, int u, const te_tensor *t, int vlen,
                      tune_program *p) {
    int nsp = t->ndim;
    const int64_t *shape = t->shape;
    int col = nsp - 1, row = nsp - 2;
    if (row < 0) return false;
    int64_t nb = vlen >= 16 ? 4 * vlen : 2 * vlen;
    nb = shape[col] <= nb ? shape[col] : divisor_multiple(shape[col], nb, vlen);
    if (!nb) return false;
    int64_t mr = shape[row] < 6 ? shape[row] : 6;
    int64_t lv[TE_MAX_DIMS][3];
    for (int d = 0; d < nsp; d++) set3(lv[d], 1, 1, 1);
    if (tune__blocked_conv_tile(t, vlen, lv)) {
        if (!fill_tile(sk, u, t, lv, nsp, false, p)) return false;
        /* The whole tile unrolled (64 steps), so that its accumulators
         * live in registers: 16 steps leave a 2 x 8 tile a loop (0.55x). */
        const tune_hole *h;
        for (int k = 0; (h = tune__unit_hole(sk, u, k)) != NULL; k++)
            if (h->kind == TUNE_HOLE_UNROLL) p->vals[h->offset] = 2;
        return true;
    }
    /* Rows in level 1, so the column panels' level-0 loop is outside them. */
    set3(lv[row], ceil_div(shape[row], mr), 1, mr);
    set3(lv[col], 1, 1, nb);
    return fill_tile(sk, u, t, lv, nsp, false, p);
}

int tune_program_heuristic(const tune_sketch *sk, int sketch_index, const tune_workload *w,
                           int vlen, tune_program *out, int max) {
    if (!sk || !w || !out || max < 1 || vlen < 1 || tune_sketch_is_gpu(sk)) return 0;
    /* The shapes of the sketch's stages, in the order of the DAG. */
    tune_dag dag;
    te_ctx *ctx = w->outs && w->nouts > 0 ? w->outs[0]->ctx : NULL;
    if (!ctx || tune_dag_analyze(ctx, w->nouts, w->outs, &dag)) return 0;
    int tiled = -1;
    bool packs = false;
    for (int u = 0; u < sk->nunits; u++) {
        tune_unit_kind k = sk->units[u].kind;
        if (k == TUNE_UNIT_TILE_CACHE_PACKED || k == TUNE_UNIT_TILE_CACHE) {
            if (tiled >= 0) return 0; /* one register tile per program */
            tiled = u;
        } else if (k == TUNE_UNIT_PACK)
            packs = true;
        else if (k != TUNE_UNIT_PLACE && k != TUNE_UNIT_ANNOTATE)
            return 0;
    }
    /* The GEMM tile reads its column operand packed (the default's
     * panels); without that, 6 rows by 16 columns is no fast point (an
     * NCHW convolution tiled on its image rows: 1.8-4x the default). */
    if (tiled < 0 || (sk->units[tiled].kind == TUNE_UNIT_TILE_CACHE && !packs)) return 0;
    tune_program base;
    memset(&base, 0, sizeof base);
    base.sketch = sketch_index;
    for (int u = 0; u < sk->nunits; u++) {
        const tune_hole *h0 = tune__unit_hole(sk, u, 0), *h1 = tune__unit_hole(sk, u, 1);
        switch (sk->units[u].kind) {
        case TUNE_UNIT_PLACE:
            if (!h0) return 0;
            base.vals[h0->offset] = 2; /* the root */
            break;
        case TUNE_UNIT_ANNOTATE:
            if (!h0 || !h1) return 0;
            base.vals[h0->offset] = divisor_multiple(h0->extent, vlen, 1);
            base.vals[h1->offset] = h1->extent;
            break;
        default: break;
        }
    }
    const te_tensor *t = dag.stages[sk->units[tiled].stage].tensor;
    int n = 0;
    if (sk->units[tiled].kind == TUNE_UNIT_TILE_CACHE) {
        out[0] = base;
        return fill_gemm(sk, tiled, t, vlen, &out[0]) ? 1 : 0;
    }
    /* The default's order of the parallel loop (the packed operand's size)
     * first, then the other. */
    bool rows_outside = false;
    for (int u = 0; u < sk->nunits; u++)
        if (sk->units[u].kind == TUNE_UNIT_PACK && sk->units[u].consumer == sk->units[tiled].stage)
            rows_outside = ops_packed_rows_outside(dag.stages[sk->units[u].stage].tensor);
    for (int tail = 1; tail >= 0 && n < max; tail--)
        for (int k = 0; k < 4 && n < max; k++) {
            bool other = k >= 2, rows = rows_outside != (k % 2 == 1);
            out[n] = base;
            if (!fill_packed(sk, tiled, t, vlen, tail, other, rows, &out[n])) continue;
            /* The same program another way (one tile with or without a
             * tail, no window to order, no rows): once. */
            bool seen = false;
            for (int i = 0; i < n && !seen; i++)
                seen = !memcmp(out[i].vals, out[n].vals, sizeof out[n].vals);
            if (!seen) n++;
        }
    return n;
}
