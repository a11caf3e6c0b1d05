/*
 * autotune/rules/rule_rfactor.c — rfactor of a long reduction with
 * little parallelism (TUNE_UNIT_RFACTOR; Ansor's RuleAddRfactor): the
 * last reduce axis split by a SPLIT hole of one factor, its inner part
 * made a spatial axis of a new stage (sch_rfactor) that is innermost and
 * vectorized, so the partial sums fill the vector lanes. Derived beside
 * the stage's tiling or annotation, never instead.
 */
#include "autotune/rules/rule.h"

static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    (void)sk, (void)made_by;
    return g->dag->stages[stage].needs_rfactor ? TUNE_RULE_APPLY : TUNE_RULE_PASS;
}

static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    return tune__add_unit(sk, g->dag, TUNE_UNIT_RFACTOR, stage, -1, 0);
}

static int holes(tune_sketch *sk, const tune_dag *dag, int u) {
    const te_tensor *t = dag->stages[sk->units[u].stage].tensor;
    if (tune__add_hole(sk, TUNE_HOLE_SPLIT, u, 1,
                       t->body->u.reduce.axes[nreduce_of(t) - 1]->u.var.extent, true))
        return TUNE__CAP_HOLES;
    sk->holes[sk->nholes - 1].tail = true; /* the tail's lanes sum the identity */
    return 0;
}

static const char *text(const tune_unit *un, const tune_dag *dag, const char **object) {
    *object = un->consumer >= 0 ? dag->stages[un->consumer].tensor->name : NULL;
    return "rfactor";
}

/* The rfactor split: 4, 2, 1 vectors of partial results where they
 * divide the reduction at least twice (the library's row reductions:
 * OPS_ROW_REDUCE_VECTORS); else one vector with a tail where the
 * reduction is two vectors long or more (the tail's lanes read the
 * reduction's identity, their loads masked: tir/pass_vectorize.c); else
 * the widest divisor up to a vector. A row of 100 took 5 lanes of 8
 * (AVX2) or 10 of 16 before, vectors LLVM widens. */
static bool structural(const tune_heur *c, int u, tune_program *p) {
    const tune_hole *h = tune__unit_hole(c->sk, u, 0);
    if (!h) return false;
    int64_t ext = h->extent, f = 0;
    for (int64_t m = 4; m >= 1 && !f; m /= 2)
        if (ext % (m * c->vlen) == 0 && ext / (m * c->vlen) >= 2) f = m * c->vlen;
    if (!f && ext >= 2 * c->vlen && tune_split_valid(h, &(int64_t){c->vlen})) f = c->vlen;
    if (!f) f = tune__divisor_multiple(ext, c->vlen, 1);
    p->vals[h->offset] = f ? f : 1;
    return true;
}

/* An rfactor suits a reduction that annotating in place would not
 * vectorize (softmax's row maxima). */
static int score(const tune_heur *c, int u) {
    return tune__annotate_vectorizes(c->dag->stages[c->sk->units[u].stage].tensor) ? 0 : 2;
}

static int decode(tune_decoder *a, int u) {
    te_tensor *t = a->stage[a->sk->units[u].stage];
    int nr = nreduce_of(t);
    int64_t f = tune__hv(a, u, 0)[0];
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
    if (t->ndim > 0 ? !tune__fuse_parallel(a, rf, order, t->ndim, 1, NULL)
                    : sch_parallel(a->s, rf, order[0]))
        return -1;
    if (f > 1 && f <= TUNE__MAX_INNER && sch_vectorize(a->s, rf, last)) return -1;
    return 0;
}

const tune_rule tune_rule_rfactor = {
    .name = "add rfactor",
    .when = TUNE_RULE_ON_STAGE,
    .unit = TUNE_UNIT_RFACTOR,
    .condition = condition,
    .apply = apply,
    .holes = holes,
    .text = text,
    .random_hole = tune__random_hole_cpu,
    .mutate_hole = tune__mutate_hole_cpu,
    .decode = {[TUNE_PHASE_MAIN] = decode},
    .structural = structural,
    .structural_score = score,
};
