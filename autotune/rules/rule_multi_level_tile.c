/*
 * autotune/rules/rule_multi_level_tile.c — multi-level tiling "SSRSRS"
 * of a stage with data reuse (TUNE_UNIT_TILE; Ansor's
 * RuleMultiLevelTiling): every spatial axis split into 4 levels, every
 * reduce axis into 2, ordered S S R S R S; the outer loops (up to both
 * spatial levels) fused parallel, an unrolling depth, the innermost level
 * of the last axis vectorized. Taken when the stage's consumer cannot
 * absorb the tile (rule_tile_fuse.c). A tile's outer loops are where a
 * placed padding stage (rule_place.c) can be computed.
 */
#include "autotune/rules/rule.h"

static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    (void)made_by;
    return g->dag->stages[stage].needs_tiling && tune__fusable_consumer(g, sk, stage) < 0
               ? TUNE_RULE_APPLY
               : TUNE_RULE_PASS;
}

static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    return tune__add_unit(sk, g->dag, TUNE_UNIT_TILE, stage, -1, 0);
}

static const char *text(const tune_unit *un, const tune_dag *dag, const char **object) {
    *object = un->consumer >= 0 ? dag->stages[un->consumer].tensor->name : NULL;
    return "tile SSRSRS";
}

/* A plain tiling: better than none; first of all for a stage that reads
 * its padding plane by plane (its structural program computes the
 * padding per plane: 0.18 ms against 0.25 for the register tile with the
 * padding at the root, on a depthwise convolution 128 x 56 x 56). */
static int score(const tune_heur *c, int u) {
    return tune__plane_tile(c->sk, c->dag, u) ? 4 : 1;
}

static int decode(tune_decoder *a, int u) {
    te_tensor *t = a->stage[a->sk->units[u].stage];
    int nsp = t->ndim;
    te_expr *l[TE_MAX_DIMS][4], *r[TE_MAX_DIMS][2];
    int64_t inner[TE_MAX_DIMS];
    if (tune__tile_levels(a, u, t, l, r, inner, -1)) return -1;
    int base = nsp + nreduce_of(t);
    int64_t par = tune__hv(a, u, base)[0];
    int64_t unroll = tune__unroll_steps[tune__hv(a, u, base + 1)[0]];
    te_expr *outer[2 * TE_MAX_DIMS];
    for (int d = 0; d < nsp; d++) outer[d] = l[d][0], outer[nsp + d] = l[d][1];
    int nfused;
    te_expr *f = tune__fuse_parallel(a, t, outer, 2 * nsp, par, &nfused);
    if (!f) return -1;
    a->holder[u] = t;
    a->nloops[u] = 2 * nsp;
    for (int j = 0; j < 2 * nsp; j++) a->loops[u][j] = j < nfused ? f : outer[j];
    if (unroll && tune__unroll_pragmas(a, t, f, unroll)) return -1;
    if (inner[nsp - 1] > 1 && sch_vectorize(a->s, t, l[nsp - 1][3])) return -1;
    return 0;
}

const tune_rule tune_rule_multi_level_tile = {
    .name = "multi-level tiling",
    .when = TUNE_RULE_ON_STAGE,
    .unit = TUNE_UNIT_TILE,
    .condition = condition,
    .apply = apply,
    .tiles_last_axis = true,
    .holes = tune__tile_holes,
    .text = text,
    .random_hole = tune__random_hole_cpu,
    .mutate_hole = tune__mutate_hole_cpu,
    .structural = tune__structural_tile,
    .structural_score = score,
    .decode = {[TUNE_PHASE_MAIN] = decode},
};
