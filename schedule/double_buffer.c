/*
 * schedule/double_buffer.c — the double_buffer step: a mark on the stage.
 * Lowering wraps the stage's copy nest in an ATTR (TIR_ATTR_DOUBLE_BUFFER)
 * and tir_pass_double_buffer does the rest (tir/pass_double_buffer.c).
 */
#include "schedule/sch_internal.h"

int sch__apply_double_buffer(sch_schedule *s, const sch_step *step) {
    sch_stage *st = &s->stages[step->stage];
    if (st->op->kind != TE_OP_COMPUTE)
        return te_error(s->ctx, "double_buffer: stage '%s' is a placeholder", st->op->name);
    if (st->is_output)
        return te_error(s->ctx,
                        "double_buffer: stage '%s' is an output; only a stage computed at a loop "
                        "of its consumer (a cache_read copy) can alternate buffers",
                        st->op->name);
    st->double_buffer = true;
    return 0;
}

int sch_double_buffer(sch_schedule *s, te_tensor *t) {
    if (!s) return -1;
    int st = sch__find_stage(s, "double_buffer", t);
    if (st < 0) return -1;
    sch_step step = {.kind = SCH_STEP_DOUBLE_BUFFER, .stage = st};
    return sch__apply(s, &step, NULL, NULL, NULL);
}
