/*
 * schedule/double_buffer.c — the double_buffer step (sch_double_buffer,
 * sch_multi_buffer): a mark on the stage with its number of buffers.
 * Lowering wraps the stage's copy nest in an ATTR (TIR_ATTR_DOUBLE_BUFFER,
 * valued with that number) and tir_pass_double_buffer does the rest
 * (tir/pass_double_buffer.c).
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
    int64_t n = step->value ? step->value : 2;
    if (n < 2 || n > SCH_MAX_BUFFERS)
        return te_error(s->ctx,
                        "double_buffer: stage '%s' asks for %lld buffers; a pipeline cycles "
                        "through 2 to %d",
                        st->op->name, (long long)n, SCH_MAX_BUFFERS);
    st->buffers = (int)n;
    return 0;
}

int sch_multi_buffer(sch_schedule *s, te_tensor *t, int buffers) {
    if (!s) return -1;
    int st = sch__find_stage(s, "double_buffer", t);
    if (st < 0) return -1;
    /* 2 is recorded as 0, so double buffering's step log is as before */
    sch_step step = {.kind = SCH_STEP_DOUBLE_BUFFER, .stage = st,
                     .value = buffers == 2 ? 0 : buffers};
    return sch__apply(s, &step, NULL, NULL, NULL);
}

int sch_double_buffer(sch_schedule *s, te_tensor *t) { return sch_multi_buffer(s, t, 2); }
