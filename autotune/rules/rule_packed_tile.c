/*
 * autotune/rules/rule_packed_tile.c — a register tile vectorized on a
 * packed spatial axis (TUNE_UNIT_TILE_CACHE_PACKED; Loom's own rule, the
 * NCHW[x]c idea of TVM's x86 conv2d): as the cache_write rule, but the
 * vectors run over a spatial axis other than the last (output channels
 * when the image rows are short), the local accumulator is packed on it
 * by its innermost factor (its vectors contiguous), that level goes
 * innermost, and the input read at that axis is packed alike (a PACK
 * unit, rule_pack.c). Only when no input is walked along the last axis
 * (else the cache_write rule's tile vectorizes it), and also beside
 * tiling with fusion: the packed register tile is the one that reaches
 * the default's speed on the CPU, the consumer then running as its own
 * stage.
 *
 * Heuristic programs: the library's packed convolution tile
 * (ops_packed_tile_shape), with and without a column tail, each with the
 * reduction in the default's order and in the other, each with the row
 * tiles in the default's place and in the other; none when another input
 * is read at the vectorized axis (a depthwise convolution's data: vectors
 * over channels gather it, 0.25x of the library's depthwise default on a
 * MobileNet layer, bench/RESULTS.md session 30). No structural fill: its
 * unpacked twin has one.
 */
#include <string.h>

#include "autotune/rules/rule.h"
#include "loom/ops.h"

static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    (void)sk, (void)made_by;
    const tune_stage_info *si = &g->dag->stages[stage];
    int dim, input;
    /* Vectors over another axis only when no input is walked along the
     * last one (NCHW convolution: the image row). */
    if (!si->needs_tiling || (si->is_output && !si->is_reduction) ||
        tune__pack_candidate(g->dag, stage, si->tensor->ndim - 1, &dim) >= 0)
        return TUNE_RULE_PASS;
    return tune__packed_vector_axis(g->dag, stage, &input, &dim) >= 0 ? TUNE_RULE_APPLY
                                                                        : TUNE_RULE_PASS;
}

static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    int input = -1, dim = 0;
    int axis = tune__packed_vector_axis(g->dag, stage, &input, &dim);
    int rc = tune__add_unit(sk, g->dag, TUNE_UNIT_TILE_CACHE_PACKED, stage, -1, axis);
    return rc ? rc : tune__add_unit(sk, g->dag, TUNE_UNIT_PACK, input, stage, dim);
}

static const char *text(const tune_unit *un, const tune_dag *dag, const char **object) {
    *object = un->consumer >= 0 ? dag->stages[un->consumer].tensor->name : NULL;
    return un->consumer >= 0 ? "cache_write, pack, tile SSRSRS vectorized on a packed axis, "
                               "fuse into its elementwise tail"
                             : "cache_write, pack, tile SSRSRS vectorized on a packed axis, "
                               "fuse into copy";
}

/* The tile with or without a column tail, its reduction in the default's
 * order or (other_order) the other, its row tiles outside the channel
 * blocks (rows_outside) or inside: which orders win depends on the layer,
 * its caches and LLVM's register allocation (bench/RESULTS.md, sessions
 * 18 and 19: r50_c5 runs 4.5 % faster with the rows outside against the
 * default's rule), so the search measures them all. */
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
        tune__set3(lv[d], 1, 1,
                   d == vd ? tile.lanes : d == row ? tile.rows : d == col ? tile.cols : 1);
    if (rows_outside && row >= 0) {
        /* ops_packed_rows_outside: the blocks of lanes and the column tiles
         * in level 1, so the row tiles' level-0 loop is outside them (the
         * default's n, y.o, k.o, x.o). */
        tune__set3(lv[vd], shape[vd] / tile.lanes, 1, tile.lanes);
        tune__set3(lv[col], tune__ceil_div(shape[col], tile.cols), 1, tile.cols);
    }
    return tune__fill_tile(sk, u, t, lv, nsp - 1,
                           ops_packed_taps_outside(&tile, vlen) != other_order, p);
}

/* True when an input other than the packed one is read at the tile's
 * vectorized axis: the lanes would gather it. */
static bool gathers(const tune_heur *c, int u) {
    const tune_sketch *sk = c->sk;
    const te_tensor *t = c->dag->stages[sk->units[u].stage].tensor;
    const te_tensor *packed = NULL;
    for (int k = 0; k < sk->nunits; k++)
        if (sk->units[k].kind == TUNE_UNIT_PACK && sk->units[k].consumer == sk->units[u].stage)
            packed = c->dag->stages[sk->units[k].stage].tensor;
    int vd = sk->units[u].vec_dim;
    if (!packed || vd < 0 || vd >= t->ndim) return true;
    tune_reads r = tune__reads_along(t, packed, t->axes[vd]);
    return r.last || r.other;
}

/* Variants 0..7: with a column tail (0..3), then without; within each,
 * the default's reduction order (0, 1) then the other, and the default's
 * place of the rows (even) then the other. */
static bool heuristic(const tune_heur *c, int u, int variant, tune_program *p) {
    const tune_sketch *sk = c->sk;
    if (gathers(c, u)) return false;
    /* The default's order of the parallel loop (the packed operand's size). */
    bool rows_outside = false;
    for (int k = 0; k < sk->nunits; k++)
        if (sk->units[k].kind == TUNE_UNIT_PACK && sk->units[k].consumer == sk->units[u].stage)
            rows_outside = ops_packed_rows_outside(c->dag->stages[sk->units[k].stage].tensor);
    int k = variant % 4;
    bool tail = variant < 4, other = k >= 2, rows = rows_outside != (k % 2 == 1);
    return fill_packed(sk, u, c->dag->stages[sk->units[u].stage].tensor, c->vlen, tail, other,
                       rows, p);
}

/* The accumulator packed on the vectorized axis, so the register tile's
 * vectors are contiguous in it. */
static int decode(tune_decoder *a, int u) {
    const tune_unit *un = &a->sk->units[u];
    te_tensor *t = a->stage[un->stage];
    te_tensor *cache = sch_cache_write(a->s, t, "local");
    int vd = un->vec_dim;
    int64_t f = tune__hv(a, u, vd)[2];
    if (cache) cache = sch_pack(a->s, cache, sch_axis(cache, vd), f);
    return cache ? tune__tile_fused(a, u, cache, tune__copy_out(a, un, t), vd) : -1;
}

const tune_rule tune_rule_packed_tile = {
    .name = "packed register tile",
    .when = TUNE_RULE_ON_STAGE,
    .unit = TUNE_UNIT_TILE_CACHE_PACKED,
    .condition = condition,
    .apply = apply,
    .accumulates = true,
    .holes = tune__tile_holes,
    .text = text,
    .random_hole = tune__random_hole_cpu,
    .mutate_hole = tune__mutate_hole_cpu,
    .heuristic = heuristic,
    .heuristic_programs = 8,
    .decode = {[TUNE_PHASE_MAIN] = decode},
};
