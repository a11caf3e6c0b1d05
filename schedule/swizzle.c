/*
 * schedule/swizzle.c — the swizzle step (sch_swizzle): a mark on a
 * shared-memory stage that its buffer takes the 128-byte swizzled layout
 * Hopper's wgmma reads operands in. Lowering copies the mark to the
 * buffer and checks its shape (sch__lower_check_swizzle);
 * tir_pass_storage_flatten cuts the rows into 128-byte panels and the
 * CUDA code generator applies the XOR (tir_buffer.swizzle says how).
 *
 * sch_swizzle_transposed stores the tile as the swizzled layout of its
 * transpose: a copy of B [K, N] kept k-major ([N, K] rows of 128 bytes of
 * k), which tf32's wgmma needs for both operands (it has no transpose
 * bits) — CUTLASS's MN-major to K-major smem layouts, as a schedule
 * step rather than a second declaration of the computation.
 */
#include "schedule/sch_internal.h"

int sch__apply_swizzle(sch_schedule *s, const sch_step *step) {
    sch_stage *st = &s->stages[step->stage];
    if (st->op->kind != TE_OP_COMPUTE)
        return te_error(s->ctx, "swizzle: stage '%s' is a placeholder; its layout is the caller's",
                        st->op->name);
    if (st->is_output)
        return te_error(s->ctx,
                        "swizzle: stage '%s' is an output; only a shared-memory copy "
                        "(cache_read) can change its layout",
                        st->op->name);
    if (step->value != 0 && step->value != 1)
        return te_error(s->ctx, "swizzle: stage '%s': transposed is %lld; it is 0 or 1",
                        st->op->name, (long long)step->value);
    st->swizzle = step->value ? TIR_SWIZZLE_COLS : TIR_SWIZZLE_ROWS;
    return 0;
}

static int swizzle(sch_schedule *s, te_tensor *t, bool transposed) {
    if (!s) return -1;
    int st = sch__find_stage(s, "swizzle", t);
    if (st < 0) return -1;
    sch_step step = {.kind = SCH_STEP_SWIZZLE, .stage = st, .value = transposed};
    return sch__apply(s, &step, NULL, NULL, NULL);
}

int sch_swizzle(sch_schedule *s, te_tensor *t) { return swizzle(s, t, false); }

int sch_swizzle_transposed(sch_schedule *s, te_tensor *t) { return swizzle(s, t, true); }

int sch__lower_check_swizzle(te_ctx *ctx, const sch_stage *g, const tir_buffer *b, bool gpu) {
    const char *n = g->op->name;
    if (!gpu || b->scope != TIR_SCOPE_SHARED)
        return te_error(ctx,
                        "swizzle: stage '%s' is in %s memory%s; the swizzled layout is for "
                        "shared memory of a GPU kernel (cache_read with scope \"shared\")",
                        n, tir_scope_name(b->scope), gpu ? "" : " of a CPU function");
    if (g->nalign)
        return te_error(ctx,
                        "swizzle: stage '%s' also has storage_align; the swizzled layout fixes "
                        "its rows at 128 bytes (no padding)",
                        n);
    int bytes = te_dtype_bytes(b->dtype);
    if (b->ndim != 2)
        return te_error(ctx,
                        "swizzle: buffer '%s' has %d dimensions; the swizzled layout is for 2-D "
                        "tiles",
                        n, b->ndim);
    /* the stored rows: the columns of a transposed tile */
    bool cols = g->swizzle == TIR_SWIZZLE_COLS;
    int64_t rows = b->shape[cols ? 1 : 0], row_len = b->shape[cols ? 0 : 1];
    if ((row_len * bytes) % 128 || rows % 8)
        return te_error(ctx,
                        "swizzle: buffer '%s' is %lldx%lld elements of %d bytes%s; the swizzled "
                        "layout needs rows of a multiple of 128 bytes and a multiple of 8 rows",
                        n, (long long)b->shape[0], (long long)b->shape[1], bytes,
                        cols ? ", stored transposed (its columns the rows)" : "");
    return 0;
}
