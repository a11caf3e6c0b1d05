/*
 * schedule/storage_align.c — pad the stride of one dimension of a stage's
 * buffer to factor*k + offset elements (TVM storage_align), so that rows
 * of a tile fall into different cache sets or shared-memory banks.
 * Lowering applies it when it builds the buffer's strides.
 */
#include <string.h>

#include "schedule/sch_internal.h"

int sch__apply_storage_align(sch_schedule *s, const sch_step *step) {
    te_ctx *ctx = s->ctx;
    if (step->stage < 0 || step->stage >= s->nstages)
        return te_error(ctx, "storage_align: no stage %d", step->stage);
    sch_stage *st = &s->stages[step->stage];
    if (st->op->kind != TE_OP_COMPUTE)
        return te_error(ctx, "storage_align: stage '%s' is a placeholder; its layout is the "
                             "caller's",
                        st->op->name);
    if (step->iter < 0 || step->iter >= st->op->ndim)
        return te_error(ctx, "storage_align: stage '%s' has no data-parallel axis %d",
                        st->op->name, step->iter);
    const char *name = st->op->axes[step->iter]->u.var.name;
    if (step->value <= 0)
        return te_error(ctx, "storage_align: factor %lld for axis '%s' of stage '%s' must be "
                             "positive",
                        (long long)step->value, name, st->op->name);
    if (step->value2 < 0 || step->value2 >= step->value)
        return te_error(ctx,
                        "storage_align: offset %lld for axis '%s' of stage '%s' must lie in "
                        "[0, factor)",
                        (long long)step->value2, name, st->op->name);
    sch_align *na = te_alloc(ctx, sizeof(sch_align) * (size_t)(st->nalign + 1));
    int n = 0;
    for (int i = 0; i < st->nalign; i++)
        if (st->aligns[i].dim != step->iter) na[n++] = st->aligns[i];
    na[n++] = (sch_align){step->iter, step->value, step->value2};
    st->aligns = na;
    st->nalign = n;
    return 0;
}

int sch_storage_align(sch_schedule *s, te_tensor *t, te_expr *axis, int64_t factor,
                      int64_t offset) {
    if (!s) return -1;
    int st = sch__find_stage(s, "storage_align", t);
    if (st < 0) return -1;
    const te_tensor *op = s->stages[st].op;
    int dim = -1;
    for (int d = 0; op->kind == TE_OP_COMPUTE && d < op->ndim; d++)
        if (op->axes[d] == axis) dim = d;
    if (dim < 0)
        return te_error(s->ctx,
                        "storage_align: axis '%s' is not a data-parallel root axis of stage "
                        "'%s'",
                        axis && axis->kind == TE_VAR ? axis->u.var.name : "?", op->name);
    sch_step step = {.kind = SCH_STEP_STORAGE_ALIGN, .stage = st, .iter = dim, .value = factor,
                     .value2 = offset};
    return sch__apply(s, &step, NULL, NULL, NULL);
}
