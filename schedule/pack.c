/*
 * schedule/pack.c — pack: a new storage layout for an intermediate stage.
 * Dimension d (extent E) of the stage's buffer is split into E/f blocks
 * of f elements; the block index becomes the outermost dimension and the
 * position in the block the innermost, so [K, N] packed on N by 16 is
 * stored as [N/16, K, 16]. Every reader's index i on that dimension
 * becomes (floordiv(i, f), ..., floormod(i, f)), which the arithmetic
 * analyser folds back to loop variables once the reader's loops are
 * split by a multiple of f.
 *
 * This is the operand packing of high-performance GEMM (Goto and van de
 * Geijn, "Anatomy of high-performance matrix multiplication", 2008): a
 * register tile's k-loop then reads one contiguous panel instead of rows
 * a whole matrix width apart (4 KiB apart for N = 1024, all in one L1
 * set). TVM reaches the same layouts through layout rewriting (Ansor's
 * layout_rewrite, the x86 NCHW[x]c conv2d); Halide through Func::in()
 * with split storage. Here it is one step on a stage the schedule owns,
 * usually a cache_read copy of an input, so the packing is part of the
 * program and is timed with it.
 */
#include <string.h>

#include "schedule/sch_internal.h"

typedef struct {
    te_ctx *ctx;
    te_tensor *from[2];
    te_tensor *to;
    int dim;
    int64_t factor;
} pack_ctx;

/* Reads of the old tensor become reads of the packed one. */
static te_expr *repack_reads(te_expr *e, void *user) {
    pack_ctx *pc = user;
    te_expr *m = te_expr_map_children(pc->ctx, e, repack_reads, user);
    if (!m || m->kind != TE_READ ||
        (m->u.read.tensor != pc->from[0] && m->u.read.tensor != pc->from[1]))
        return m;
    int n = m->u.read.ndim;
    te_expr *idx[TE_MAX_DIMS], *f = te_int(pc->ctx, pc->factor);
    te_expr *x = m->u.read.indices[pc->dim];
    idx[0] = te_floordiv(x, f);
    int k = 1;
    for (int d = 0; d < n; d++)
        if (d != pc->dim) idx[k++] = m->u.read.indices[d];
    idx[n] = te_floormod(x, f);
    return te_read_n(pc->to, n + 1, idx);
}

int sch__apply_pack(sch_schedule *s, const sch_step *step, te_tensor **out) {
    te_ctx *ctx = s->ctx;
    sch_stage *st = &s->stages[step->stage];
    te_tensor *t = st->op;
    if (t->kind != TE_OP_COMPUTE)
        return te_error(ctx, "pack: tensor '%s' is a placeholder; its layout is the caller's "
                             "(pack a cache_read copy of it instead)",
                        t->name);
    if (st->is_output)
        return te_error(ctx, "pack: tensor '%s' is an output; its layout is the caller's "
                             "(pack a cache_write stage instead)",
                        t->name);
    if (t->ndim >= TE_MAX_DIMS)
        return te_error(ctx, "pack: tensor '%s' has %d dimensions; packing adds one and at most "
                             "%d are allowed",
                        t->name, t->ndim, TE_MAX_DIMS);
    if (step->iter < 0 || step->iter >= t->ndim)
        return te_error(ctx, "pack: tensor '%s' has no data-parallel axis %d", t->name,
                        step->iter);
    const te_expr *axis = t->axes[step->iter];
    int64_t extent = axis->u.var.extent, f = step->value;
    if (f <= 0 || extent % f)
        return te_error(ctx, "pack: factor %lld must be positive and divide the extent %lld of "
                             "axis '%s' of tensor '%s'",
                        (long long)f, (long long)extent, axis->u.var.name, t->name);
    if (st->nrel > 0 || st->nattr > 0 || st->attach != SCH_ATTACH_ROOT || st->nalign > 0)
        return te_error(ctx, "pack: stage '%s' has already been scheduled; pack it before any "
                             "other primitive on it",
                        t->name);
    for (int i = 0; i < s->nstages; i++)
        if (s->stages[i].attach == SCH_ATTACH_AT && s->stages[i].attach_stage == step->stage)
            return te_error(ctx, "pack: stage '%s' has stage '%s' computed at its loops",
                            t->name, s->stages[i].op->name);

    /* The packed stage: [outer, other axes..., inner] over fresh axes, the
     * old body with axis d = outer * f + inner (a reduction keeps its
     * reduce axes: the stage it replaces is gone). */
    int n = t->ndim, dim = step->iter;
    te_expr *axes[TE_MAX_DIMS], *old[TE_MAX_DIMS], *val[TE_MAX_DIMS];
    const char *an = axis->u.var.name;
    if (!(axes[0] = te_axis(ctx, te_sprintf(ctx, "%s.outer", an), extent / f)) ||
        !(axes[n] = te_axis(ctx, te_sprintf(ctx, "%s.inner", an), f)))
        return -1;
    for (int d = 0, k = 1; d < n; d++) {
        old[d] = t->axes[d];
        if (d == dim) {
            val[d] = te_add(te_mul(axes[0], te_int(ctx, f)), axes[n]);
        } else {
            if (!(axes[k] = te_axis(ctx, t->axes[d]->u.var.name, t->axes[d]->u.var.extent)))
                return -1;
            val[d] = axes[k++];
        }
        if (!val[d]) return -1;
    }
    te_expr *body = te_substitute(ctx, t->body, n, old, val);
    te_tensor *packed = sch__make_compute(ctx, t->name, n + 1, axes, body);
    if (!packed) return -1;

    /* Every stage that reads t reads the packed buffer instead. */
    pack_ctx pc = {ctx, {st->op, st->origin}, packed, dim, f};
    te_tensor **new_ops = te_alloc(ctx, sizeof(te_tensor *) * (size_t)s->nstages);
    if (!new_ops) return -1;
    for (int i = 0; i < s->nstages; i++) {
        new_ops[i] = NULL;
        if (i == step->stage || !sch__reads(s, i, step->stage)) continue;
        te_tensor *r = s->stages[i].op;
        te_expr *nb = repack_reads(r->body, &pc);
        if (!nb || !(new_ops[i] = sch__make_compute(ctx, r->name, r->ndim, r->axes, nb)))
            return -1;
    }
    for (int i = 0; i < s->nstages; i++)
        if (new_ops[i]) s->stages[i].op = new_ops[i];
    /* The packed tensor is the stage's handle from now on: readers name it,
     * so later rewrites of the stage's op (cache_read of its inputs) still
     * find it through the origin. */
    int scope = st->scope;
    sch__init_stage(ctx, st, packed);
    st->scope = scope;
    if (out) *out = packed;
    return 0;
}

te_tensor *sch_pack_vnni(sch_schedule *s, te_tensor *t, int dim, int pair, int64_t nb) {
    if (!s || !t) return NULL;
    if (dim < 0 || pair < 0 || dim >= t->ndim || pair >= t->ndim || dim == pair) {
        te_error(s->ctx, "pack_vnni: stage '%s' (rank %d) needs two different dimensions for "
                         "the columns and the pairs, not %d and %d",
                 t->name, t->ndim, dim, pair);
        return NULL;
    }
    te_tensor *p = sch_pack(s, t, sch_axis(t, dim), nb);
    /* p's axes: dim's blocks, the others in order, dim's lanes */
    return p ? sch_pack(s, p, sch_axis(p, pair < dim ? pair + 1 : pair), 2) : NULL;
}

te_tensor *sch_pack(sch_schedule *s, te_tensor *t, te_expr *axis, int64_t factor) {
    if (!s) return NULL;
    int st = sch__find_stage(s, "pack", t);
    if (st < 0) return NULL;
    const te_tensor *op = s->stages[st].op;
    int dim = -1;
    for (int d = 0; op->kind == TE_OP_COMPUTE && d < op->ndim; d++)
        if (op->axes[d] == axis) dim = d;
    if (dim < 0) {
        te_error(s->ctx, "pack: axis '%s' is not a data-parallel root axis of stage '%s'",
                 axis && axis->kind == TE_VAR ? axis->u.var.name : "?", op->name);
        return NULL;
    }
    sch_step step = {.kind = SCH_STEP_PACK, .stage = st, .iter = dim, .value = factor};
    te_tensor *out = NULL;
    return sch__apply(s, &step, NULL, NULL, &out) ? NULL : out;
}
