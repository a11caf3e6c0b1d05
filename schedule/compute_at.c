/*
 * schedule/compute_at.c — where a stage is computed: at the root (its own
 * loop nest over the whole tensor), inlined into its consumers, or inside
 * a consumer's loop, over just the region that loop needs (bound
 * inference works that region out; TVM te compute_at). The consumer may
 * read the stage through others (a cache_read copy of a cache_read copy)
 * as long as every stage that reads it directly is computed inside the
 * chosen loop; the lowering checks that.
 */
#include "schedule/sch_internal.h"

static int check_compute(sch_schedule *s, const char *prim, int st) {
    const sch_stage *g = &s->stages[st];
    if (g->op->kind != TE_OP_COMPUTE)
        return te_error(s->ctx, "%s: stage '%s' is a placeholder; only compute stages move", prim,
                        g->op->name);
    return 0;
}

/* Whether stage `reader` reads `producer`, directly or through the
 * stages it reads (the target of compute_at may be a consumer's consumer:
 * TVM computes a shared tile at the loop of the stage that reads its
 * per-thread copy). */
static bool reads_through(const sch_schedule *s, int reader, int producer, int depth) {
    if (sch__reads(s, reader, producer)) return true;
    if (depth > s->nstages) return false;
    for (int m = 0; m < s->nstages; m++)
        if (m != reader && m != producer && sch__reads(s, m, producer) && reads_through(s, reader, m, depth + 1))
            return true;
    return false;
}

int sch__apply_compute_at(sch_schedule *s, const sch_step *step) {
    te_ctx *ctx = s->ctx;
    if (check_compute(s, "compute_at", step->stage)) return -1;
    sch_stage *st = &s->stages[step->stage];
    if (step->target_stage < 0 || step->target_stage >= s->nstages)
        return te_error(ctx, "compute_at: no consumer stage %d", step->target_stage);
    const sch_stage *cs = &s->stages[step->target_stage];
    if (st->is_output)
        return te_error(ctx, "compute_at: stage '%s' is an output; outputs are computed at the "
                             "root",
                        st->op->name);
    if (step->target_stage == step->stage)
        return te_error(ctx, "compute_at: stage '%s' cannot be computed at its own loop",
                        st->op->name);
    if (!reads_through(s, step->target_stage, step->stage, 0))
        return te_error(ctx,
                        "compute_at: stage '%s' does not read tensor '%s', directly or through "
                        "other stages; compute_at needs a consumer",
                        cs->op->name, st->op->name);
    if (cs->attach == SCH_ATTACH_INLINE)
        return te_error(ctx, "compute_at: consumer '%s' is inlined and has no loops",
                        cs->op->name);
    if (step->iter < 0 || step->iter >= cs->nleaf)
        return te_error(ctx, "compute_at: stage '%s' has no loop %d", cs->op->name, step->iter);
    st->attach = SCH_ATTACH_AT;
    st->attach_stage = step->target_stage;
    st->attach_iter = cs->leaf[step->iter];
    return 0;
}

int sch_compute_at(sch_schedule *s, te_tensor *t, te_tensor *consumer, te_expr *axis) {
    if (!s) return -1;
    int st = sch__find_stage(s, "compute_at", t);
    if (st < 0) return -1;
    int cs = sch__find_stage(s, "compute_at", consumer);
    if (cs < 0) return -1;
    int it = sch__leaf_index(s, "compute_at", cs, axis);
    if (it < 0) return -1;
    sch_step step = {.kind = SCH_STEP_COMPUTE_AT, .stage = st, .target_stage = cs, .iter = it};
    return sch__apply(s, &step, NULL, NULL, NULL);
}

int sch__apply_compute_inline(sch_schedule *s, const sch_step *step) {
    if (check_compute(s, "compute_inline", step->stage)) return -1;
    sch_stage *st = &s->stages[step->stage];
    if (st->is_output)
        return te_error(s->ctx, "compute_inline: stage '%s' is an output and cannot be inlined",
                        st->op->name);
    if (st->op->body->kind == TE_REDUCE)
        return te_error(s->ctx,
                        "compute_inline: stage '%s' is a reduction; only elementwise stages can "
                        "be inlined",
                        st->op->name);
    for (int i = 0; i < s->nstages; i++)
        if (s->stages[i].attach == SCH_ATTACH_AT && s->stages[i].attach_stage == step->stage)
            return te_error(s->ctx,
                            "compute_inline: stage '%s' has stage '%s' computed at its loops",
                            st->op->name, s->stages[i].op->name);
    st->attach = SCH_ATTACH_INLINE;
    st->attach_stage = -1;
    st->attach_iter = NULL;
    return 0;
}

int sch_compute_inline(sch_schedule *s, te_tensor *t) {
    if (!s) return -1;
    int st = sch__find_stage(s, "compute_inline", t);
    if (st < 0) return -1;
    sch_step step = {.kind = SCH_STEP_COMPUTE_INLINE, .stage = st};
    return sch__apply(s, &step, NULL, NULL, NULL);
}

int sch__apply_compute_root(sch_schedule *s, const sch_step *step) {
    if (check_compute(s, "compute_root", step->stage)) return -1;
    sch_stage *st = &s->stages[step->stage];
    st->attach = SCH_ATTACH_ROOT;
    st->attach_stage = -1;
    st->attach_iter = NULL;
    return 0;
}

int sch_compute_root(sch_schedule *s, te_tensor *t) {
    if (!s) return -1;
    int st = sch__find_stage(s, "compute_root", t);
    if (st < 0) return -1;
    sch_step step = {.kind = SCH_STEP_COMPUTE_ROOT, .stage = st};
    return sch__apply(s, &step, NULL, NULL, NULL);
}
