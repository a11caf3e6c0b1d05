/*
 * schedule/fuse.c — fuse adjacent loops into one, and reorder loops.
 * A fused loop f over extent Eo*Ei gives back outer = floordiv(f, Ei) and
 * inner = floormod(f, Ei) in lowering (TVM te Fuse relation).
 */
#include <string.h>

#include "schedule/sch_internal.h"

int sch__apply_fuse(sch_schedule *s, const sch_step *step, te_expr **fused_out) {
    te_ctx *ctx = s->ctx;
    sch_stage *st = &s->stages[step->stage];
    if (st->op->kind != TE_OP_COMPUTE)
        return te_error(ctx, "fuse: stage '%s' is a placeholder and has no loops", st->op->name);
    if (step->n < 2)
        return te_error(ctx, "fuse: stage '%s' needs at least 2 axes to fuse, got %d",
                        st->op->name, step->n);
    for (int k = 0; k < step->n; k++) {
        if (step->iters[k] < 0 || step->iters[k] >= st->nleaf)
            return te_error(ctx, "fuse: stage '%s' has no loop %d", st->op->name, step->iters[k]);
        if (k > 0 && step->iters[k] != step->iters[k - 1] + 1) {
            te_expr *a = st->leaf[step->iters[k - 1]], *b = st->leaf[step->iters[k]];
            return te_error(ctx,
                            "fuse: axes '%s' and '%s' of stage '%s' are not adjacent in loop "
                            "order (outer first); reorder them first",
                            a->u.var.name, b->u.var.name, st->op->name);
        }
    }
    int first = step->iters[0];
    te_expr *acc = st->leaf[first];
    sch_rel *rels = te_alloc(ctx, sizeof(sch_rel) * (size_t)(st->nrel + step->n));
    if (st->nrel) memcpy(rels, st->rels, sizeof(sch_rel) * (size_t)st->nrel);
    int nrel = st->nrel;
    for (int k = 1; k < step->n; k++) {
        te_expr *b = st->leaf[step->iters[k]];
        if (acc->u.var.iter != b->u.var.iter)
            return te_error(ctx,
                            "fuse: cannot fuse %s axis '%s' with %s axis '%s' of stage '%s'",
                            acc->u.var.iter == TE_ITER_REDUCE ? "reduce" : "data-parallel",
                            acc->u.var.name,
                            b->u.var.iter == TE_ITER_REDUCE ? "reduce" : "data-parallel",
                            b->u.var.name, st->op->name);
        te_expr *f = te_iter_var(ctx, te_sprintf(ctx, "%s.%s.fused", acc->u.var.name,
                                                 b->u.var.name),
                                 acc->u.var.iter, acc->u.var.extent * b->u.var.extent);
        if (!f) return -1;
        rels[nrel++] = (sch_rel){.kind = SCH_REL_FUSE, .outer = acc, .inner = b, .fused = f};
        acc = f;
    }
    te_expr **leaf = te_alloc(ctx, sizeof(te_expr *) * (size_t)st->nleaf);
    int j = 0;
    for (int i = 0; i < st->nleaf; i++) {
        if (i == first) leaf[j++] = acc;
        else if (i > first && i < first + step->n) continue;
        else leaf[j++] = st->leaf[i];
    }
    st->rels = rels;
    st->nrel = nrel;
    st->leaf = leaf;
    st->nleaf = j;
    if (fused_out) *fused_out = acc;
    return 0;
}

int sch_fuse(sch_schedule *s, te_tensor *t, int n, te_expr *const *axes, te_expr **fused) {
    if (!s) return -1;
    int st = sch__find_stage(s, "fuse", t);
    if (st < 0) return -1;
    if (n < 2)
        return te_error(s->ctx, "fuse: stage '%s' needs at least 2 axes to fuse, got %d",
                        sch__stage_name(s, st), n);
    int idx[64];
    if (n > 64) return te_error(s->ctx, "fuse: too many axes (%d)", n);
    for (int k = 0; k < n; k++)
        if ((idx[k] = sch__leaf_index(s, "fuse", st, axes[k])) < 0) return -1;
    sch_step step = {.kind = SCH_STEP_FUSE, .stage = st, .n = n, .iters = idx};
    return sch__apply(s, &step, fused, NULL, NULL);
}

int sch__apply_reorder(sch_schedule *s, const sch_step *step) {
    te_ctx *ctx = s->ctx;
    sch_stage *st = &s->stages[step->stage];
    if (st->op->kind != TE_OP_COMPUTE)
        return te_error(ctx, "reorder: stage '%s' is a placeholder and has no loops",
                        st->op->name);
    bool used[64] = {0};
    if (st->nleaf > 64) return te_error(ctx, "reorder: too many loops");
    for (int k = 0; k < step->n; k++) {
        int i = step->iters[k];
        if (i < 0 || i >= st->nleaf)
            return te_error(ctx, "reorder: stage '%s' has no loop %d", st->op->name, i);
        if (used[i])
            return te_error(ctx, "reorder: axis '%s' of stage '%s' appears more than once",
                            st->leaf[i]->u.var.name, st->op->name);
        used[i] = true;
    }
    /* The given axes take the positions the set occupies, in the given order. */
    te_expr **leaf = sch__dup_exprs(ctx, st->leaf, st->nleaf);
    int k = 0;
    for (int i = 0; i < st->nleaf; i++)
        if (used[i]) leaf[i] = st->leaf[step->iters[k++]];
    st->leaf = leaf;
    return 0;
}

int sch_reorder(sch_schedule *s, te_tensor *t, int n, te_expr *const *axes) {
    if (!s) return -1;
    int st = sch__find_stage(s, "reorder", t);
    if (st < 0) return -1;
    if (n > 64) return te_error(s->ctx, "reorder: too many axes (%d)", n);
    int idx[64];
    for (int k = 0; k < n; k++)
        if ((idx[k] = sch__leaf_index(s, "reorder", st, axes[k])) < 0) return -1;
    sch_step step = {.kind = SCH_STEP_REORDER, .stage = st, .n = n, .iters = idx};
    return sch__apply(s, &step, NULL, NULL, NULL);
}
