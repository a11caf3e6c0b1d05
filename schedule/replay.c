/*
 * schedule/replay.c — the one path every transform step takes: the user's
 * primitives resolve their handles to indices, build a step and call
 * sch__apply; sch_replay feeds a recorded log through the same function.
 * A step that fails leaves the schedule as it was and is not logged.
 */
#include <string.h>

#include "schedule/sch_internal.h"

int sch__apply_split(sch_schedule *s, const sch_step *step, te_expr **outer, te_expr **inner);
int sch__apply_fuse(sch_schedule *s, const sch_step *step, te_expr **fused);
int sch__apply_reorder(sch_schedule *s, const sch_step *step);
int sch__apply_annotate(sch_schedule *s, const sch_step *step);
int sch__apply_pragma(sch_schedule *s, const sch_step *step);
int sch__apply_compute_at(sch_schedule *s, const sch_step *step);
int sch__apply_compute_inline(sch_schedule *s, const sch_step *step);
int sch__apply_compute_root(sch_schedule *s, const sch_step *step);
int sch__apply_cache_read(sch_schedule *s, const sch_step *step, te_tensor **out);
int sch__apply_cache_write(sch_schedule *s, const sch_step *step, te_tensor **out);
int sch__apply_rfactor(sch_schedule *s, const sch_step *step, te_tensor **out);
int sch__apply_storage_align(sch_schedule *s, const sch_step *step);
int sch__apply_pack(sch_schedule *s, const sch_step *step, te_tensor **out);
int sch__apply_tensorize(sch_schedule *s, const sch_step *step);
int sch__apply_double_buffer(sch_schedule *s, const sch_step *step);
int sch__apply_swizzle(sch_schedule *s, const sch_step *step);

int sch__apply(sch_schedule *s, const sch_step *step, te_expr **out1, te_expr **out2,
               te_tensor **out_tensor) {
    if (step->stage < 0 || step->stage >= s->nstages)
        return te_error(s->ctx, "%s: the schedule has no stage %d (it has %d)",
                        sch_step_kind_name(step->kind), step->stage, s->nstages);
    /* Work on a copy of the stage table, committed only on success. */
    int nstages = s->nstages;
    sch_stage *saved = s->stages;
    sch_stage *work = te_alloc(s->ctx, sizeof(sch_stage) * (size_t)nstages);
    if (!work) return -1;
    memcpy(work, saved, sizeof(sch_stage) * (size_t)nstages);
    s->stages = work;
    int rc;
    switch (step->kind) {
    case SCH_STEP_SPLIT: rc = sch__apply_split(s, step, out1, out2); break;
    case SCH_STEP_FUSE: rc = sch__apply_fuse(s, step, out1); break;
    case SCH_STEP_REORDER: rc = sch__apply_reorder(s, step); break;
    case SCH_STEP_ANNOTATE: rc = sch__apply_annotate(s, step); break;
    case SCH_STEP_PRAGMA: rc = sch__apply_pragma(s, step); break;
    case SCH_STEP_COMPUTE_AT: rc = sch__apply_compute_at(s, step); break;
    case SCH_STEP_COMPUTE_INLINE: rc = sch__apply_compute_inline(s, step); break;
    case SCH_STEP_COMPUTE_ROOT: rc = sch__apply_compute_root(s, step); break;
    case SCH_STEP_CACHE_READ: rc = sch__apply_cache_read(s, step, out_tensor); break;
    case SCH_STEP_CACHE_WRITE: rc = sch__apply_cache_write(s, step, out_tensor); break;
    case SCH_STEP_RFACTOR: rc = sch__apply_rfactor(s, step, out_tensor); break;
    case SCH_STEP_STORAGE_ALIGN: rc = sch__apply_storage_align(s, step); break;
    case SCH_STEP_PACK: rc = sch__apply_pack(s, step, out_tensor); break;
    case SCH_STEP_TENSORIZE: rc = sch__apply_tensorize(s, step); break;
    case SCH_STEP_DOUBLE_BUFFER: rc = sch__apply_double_buffer(s, step); break;
    case SCH_STEP_SWIZZLE: rc = sch__apply_swizzle(s, step); break;
    default: rc = te_error(s->ctx, "apply_step: unknown step kind %d", (int)step->kind);
    }
    if (rc) {
        s->stages = saved;
        s->nstages = nstages;
        return -1;
    }
    sch__log(s, step);
    return 0;
}

int sch_apply_step(sch_schedule *s, const sch_step *step) {
    if (!s || !step) return -1;
    return sch__apply(s, step, NULL, NULL, NULL);
}

sch_schedule *sch_replay(te_ctx *ctx, int nouts, te_tensor *const *outs, int nsteps,
                         const sch_step *steps) {
    sch_schedule *s = sch_create(ctx, nouts, outs);
    if (!s) return NULL;
    for (int i = 0; i < nsteps; i++) {
        if (sch__apply(s, &steps[i], NULL, NULL, NULL)) {
            char *msg = te_strdup(ctx, te_ctx_errmsg(ctx));
            te_error(ctx, "replay: step %d (%s) failed: %s", i,
                     sch_step_kind_name(steps[i].kind), msg);
            return NULL;
        }
    }
    return s;
}
