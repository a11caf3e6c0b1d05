/*
 * autotune/rules/rule_tile_fuse.c — multi-level tiling with fusion
 * (TUNE_UNIT_TILE_FUSE; Ansor's RuleMultiLevelTilingWithFusion): a stage
 * with data reuse whose only consumer is elementwise on it and has no
 * unit but its annotation is tiled and computed inside that consumer's
 * loops, at a fusion level that is a hole (LOCATION: 1 or 2 outer
 * levels, mutated as a compute location) rather than two sketches as in
 * Ansor. The consumer's annotation unit is dropped: its loops now come
 * from the tile.
 */
#include "autotune/rules/rule.h"

int tune__fusable_consumer(const tune_gen *g, const tune_sketch *sk, int stage) {
    const tune_stage_info *si = &g->dag->stages[stage];
    if (si->nconsumers != 1) return -1;
    int cs = si->consumers[0];
    bool seen = false;
    const te_tensor *ct = g->dag->stages[cs].tensor;
    if (tune__unit_of(sk, cs, TUNE_UNIT_ANNOTATE) >= 0 && nreduce_of(ct) == 0 &&
        tune__reads_at_axes(ct->body, ct, si->tensor, false, &seen) && seen)
        return cs;
    return -1;
}

static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    (void)made_by;
    return g->dag->stages[stage].needs_tiling && tune__fusable_consumer(g, sk, stage) >= 0
               ? TUNE_RULE_APPLY
               : TUNE_RULE_PASS;
}

static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    int cs = tune__fusable_consumer(g, sk, stage);
    tune__drop_annotate(sk, cs);
    int rc = tune__add_unit(sk, g->dag, TUNE_UNIT_TILE_FUSE, stage, cs, 0);
    return rc ? rc : tune__rebuild_holes(sk, g->dag);
}

static const char *text(const tune_unit *un, const tune_dag *dag, const char **object) {
    *object = un->consumer >= 0 ? dag->stages[un->consumer].tensor->name : NULL;
    return "tile SSRSRS, fuse into";
}

/* A register tile computed in its consumer. */
static int score(const tune_heur *c, int u) {
    (void)c, (void)u;
    return 3;
}

static int decode(tune_decoder *a, int u) {
    const tune_unit *un = &a->sk->units[u];
    return tune__tile_fused(a, u, a->stage[un->stage], a->stage[un->consumer], -1);
}

const tune_rule tune_rule_tile_fuse = {
    .name = "multi-level tiling with fusion",
    .when = TUNE_RULE_ON_STAGE,
    .unit = TUNE_UNIT_TILE_FUSE,
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
