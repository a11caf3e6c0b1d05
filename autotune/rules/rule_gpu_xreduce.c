/*
 * autotune/rules/rule_gpu_xreduce.c — cross-thread reduction
 * (TUNE_UNIT_GPU_XREDUCE; TVM's RuleCrossThreadReduction, the branch for
 * stages NeedsMultiLevelTiling rejects): a flat reduction stage whose
 * reduced length exceeds a warp (32) gets its spatial axes fused on
 * blockIdx.x and its reduce axes fused and split by a GPU_THREADS count,
 * the inner part on threadIdx.x (the partials combined by an allreduce).
 * A sketch rule: every such stage of the sketch at once, in a variant
 * placed first; as in TVM the rule does not skip the rest, so the
 * all-flat sketch follows. Not generated: the branch for tiled stages
 * with little spatial parallelism (TVM's space < max threads and space <
 * reduce).
 */
#include "autotune/rules/rule.h"

/* Whether reduction t reduces across threads well: more than a warp of
 * elements (TVM: cum_reduce_len > warp_size) of a type the allreduce
 * moves, into at least one output dimension. */
static bool xreduce_fits(const te_tensor *t) {
    if (nreduce_of(t) == 0 || t->ndim < 1) return false;
    te_dtype d = t->dtype;
    if (d.lanes != 1 || (d.code != TE_FLOAT && d.code != TE_INT) || (d.bits != 32 && d.bits != 64))
        return false;
    int64_t len = 1;
    for (int k = 0; k < nreduce_of(t); k++) len *= t->body->u.reduce.axes[k]->u.var.extent;
    return len > 32;
}

static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    (void)stage, (void)made_by;
    for (int u = 0; u < sk->nunits; u++)
        if (sk->units[u].kind == TUNE_UNIT_GPU_FLAT &&
            xreduce_fits(g->dag->stages[sk->units[u].stage].tensor))
            return TUNE_RULE_APPLY;
    return TUNE_RULE_PASS;
}

static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    (void)stage;
    for (int u = 0; u < sk->nunits; u++)
        if (sk->units[u].kind == TUNE_UNIT_GPU_FLAT &&
            xreduce_fits(g->dag->stages[sk->units[u].stage].tensor))
            sk->units[u].kind = TUNE_UNIT_GPU_XREDUCE;
    return 0;
}

static const char *text(const tune_unit *un, const tune_dag *dag, const char **object) {
    (void)un, (void)dag;
    *object = "";
    return "cross-thread reduction";
}

/* A cross-thread reduction: the spatial axes fused on blockIdx.x, the
 * reduce axes fused and split by the thread count, the inner part on
 * threadIdx.x (lowered to an allreduce). */
static int apply_xreduce(tune_decoder *a, int u, te_tensor *t) {
    int nr = nreduce_of(t);
    te_expr *ax[TE_MAX_DIMS], *rx[TE_MAX_DIMS], *f, *rf, *ro, *ri;
    for (int d = 0; d < t->ndim; d++)
        if (!(ax[d] = sch_axis(t, d))) return -1;
    for (int k = 0; k < nr; k++)
        if (!(rx[k] = sch_reduce_axis(t, k))) return -1;
    if (!(f = tune__fuse_all(a, t, ax, t->ndim)) || !(rf = tune__fuse_all(a, t, rx, nr))) return -1;
    if (sch_split(a->s, t, rf, tune__gpu_threads[tune__hv(a, u, 0)[0]], &ro, &ri) ||
        sch_bind(a->s, t, f, "blockIdx.x") || sch_bind(a->s, t, ri, "threadIdx.x"))
        return -1;
    return 0;
}

static int decode(tune_decoder *a, int u) {
    return apply_xreduce(a, u, a->stage[a->sk->units[u].stage]);
}

const tune_rule tune_rule_gpu_xreduce = {
    .name = "GPU cross-thread reduction",
    .when = TUNE_RULE_ON_SKETCH,
    .gpu = true,
    .unit = TUNE_UNIT_GPU_XREDUCE,
    .condition = condition,
    .apply = apply,
    .holes = tune__gpu_threads_hole,
    .text = text,
    .random_hole = tune__random_hole_gpu,
    .mutate_hole = tune__mutate_hole_gpu,
    .decode = {[TUNE_PHASE_BIND] = decode},
};
