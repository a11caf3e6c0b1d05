/*
 * schedule/cache.c — cache_read and cache_write (TVM te CacheRead /
 * CacheWrite): new stages that copy a tensor into a buffer of another
 * memory scope, so that a consumer reads, or a producer accumulates, in
 * faster memory.
 */
#include <string.h>

#include "schedule/sch_internal.h"

int sch__parse_scope(te_ctx *ctx, const char *prim, const char *tensor, const char *scope) {
    if (scope && !strcmp(scope, "global")) return TIR_SCOPE_GLOBAL;
    if (scope && !strcmp(scope, "local")) return TIR_SCOPE_LOCAL;
    if (scope && !strcmp(scope, "shared")) return TIR_SCOPE_SHARED;
    for (int k = TIR_SCOPE_WMMA_A; k <= TIR_SCOPE_WGMMA_ACC; k++)
        if (scope && !strcmp(scope, tir_scope_name((tir_scope)k))) return k;
    return te_error(ctx,
                    "%s: scope '%s' for tensor '%s' is not one of global, local, shared, "
                    "wmma.matrix_a, wmma.matrix_b, wmma.accumulator, wgmma.accumulator",
                    prim, scope ? scope : "(null)", tensor);
}

int sch__apply_cache_read(sch_schedule *s, const sch_step *step, te_tensor **out) {
    te_ctx *ctx = s->ctx;
    if (step->stage < 0 || step->stage >= s->nstages)
        return te_error(ctx, "cache_read: no stage %d", step->stage);
    sch_stage *st = &s->stages[step->stage];
    te_tensor *t = st->op;
    int scope = sch__parse_scope(ctx, "cache_read", t->name, step->str);
    if (scope < 0) return -1;
    if (step->n < 1)
        return te_error(ctx, "cache_read: tensor '%s' needs at least one reader", t->name);
    for (int k = 0; k < step->n; k++) {
        int r = step->stages[k];
        if (r < 0 || r >= s->nstages) return te_error(ctx, "cache_read: no reader stage %d", r);
        if (!sch__reads(s, r, step->stage))
            return te_error(ctx, "cache_read: stage '%s' does not read tensor '%s'",
                            sch__stage_name(s, r), t->name);
    }
    te_expr *axes[TE_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++)
        if (!(axes[d] = te_axis(ctx, te_sprintf(ctx, "ax%d", d), t->shape[d]))) return -1;
    te_expr *body = te_read_n(t, t->ndim, axes);
    te_tensor *cache = sch__make_compute(ctx, te_sprintf(ctx, "%s.%s", t->name, step->str),
                                         t->ndim, axes, body);
    if (!cache) return -1;

    te_tensor *from[2] = {st->op, st->origin}, *to[2] = {cache, cache};
    te_tensor *new_ops[64];
    if (step->n > 64) return te_error(ctx, "cache_read: too many readers");
    for (int k = 0; k < step->n; k++) {
        sch_stage *r = &s->stages[step->stages[k]];
        te_expr *nb = sch__replace_reads(ctx, r->op->body, 2, from, to);
        if (!nb) return -1;
        new_ops[k] = sch__make_compute(ctx, r->op->name, r->op->ndim, r->op->axes, nb);
        if (!new_ops[k]) return -1;
    }
    for (int k = 0; k < step->n; k++) s->stages[step->stages[k]].op = new_ops[k];
    sch_stage *ns = sch__insert_stage(s, step->stage + 1, cache);
    if (!ns) return -1;
    ns->scope = scope;
    if (out) *out = cache;
    return 0;
}

te_tensor *sch_cache_read(sch_schedule *s, te_tensor *t, const char *scope, int nreaders,
                          te_tensor *const *readers) {
    if (!s) return NULL;
    int st = sch__find_stage(s, "cache_read", t);
    if (st < 0) return NULL;
    if (nreaders > 64) {
        te_error(s->ctx, "cache_read: too many readers (%d)", nreaders);
        return NULL;
    }
    int idx[64];
    for (int k = 0; k < nreaders; k++)
        if ((idx[k] = sch__find_stage(s, "cache_read", readers[k])) < 0) return NULL;
    sch_step step = {.kind = SCH_STEP_CACHE_READ, .stage = st, .str = scope, .n = nreaders,
                     .stages = idx};
    te_tensor *out = NULL;
    return sch__apply(s, &step, NULL, NULL, &out) ? NULL : out;
}

int sch__apply_cache_write(sch_schedule *s, const sch_step *step, te_tensor **out) {
    te_ctx *ctx = s->ctx;
    if (step->stage < 0 || step->stage >= s->nstages)
        return te_error(ctx, "cache_write: no stage %d", step->stage);
    sch_stage *st = &s->stages[step->stage];
    te_tensor *t = st->op;
    if (t->kind != TE_OP_COMPUTE)
        return te_error(ctx, "cache_write: tensor '%s' is a placeholder; only compute stages "
                             "can be cached for writing",
                        t->name);
    int scope = sch__parse_scope(ctx, "cache_write", t->name, step->str);
    if (scope < 0) return -1;
    if (st->nrel > 0 || st->nattr > 0)
        return te_error(ctx,
                        "cache_write: stage '%s' has already been scheduled (split, fuse or "
                        "annotated); call cache_write before other primitives on it",
                        t->name);
    for (int i = 0; i < s->nstages; i++)
        if (s->stages[i].attach == SCH_ATTACH_AT && s->stages[i].attach_stage == step->stage)
            return te_error(ctx, "cache_write: stage '%s' has stage '%s' computed at its loops",
                            t->name, s->stages[i].op->name);

    /* The cache computes the body over fresh axes. */
    int n = t->ndim;
    te_expr *old[2 * TE_MAX_DIMS + 16], *nw[2 * TE_MAX_DIMS + 16];
    int nv = 0;
    te_expr *axes[TE_MAX_DIMS];
    for (int d = 0; d < n; d++) {
        te_expr *a = t->axes[d];
        axes[d] = te_axis(ctx, te_sprintf(ctx, "%s.c", a->u.var.name), a->u.var.extent);
        if (!axes[d]) return -1;
        old[nv] = a;
        nw[nv++] = axes[d];
    }
    te_expr *body = t->body;
    if (body->kind == TE_REDUCE) {
        int nr = body->u.reduce.naxes;
        if (nr > 16) return te_error(ctx, "cache_write: too many reduce axes");
        te_expr *raxes[16];
        for (int k = 0; k < nr; k++) {
            te_expr *r = body->u.reduce.axes[k];
            raxes[k] = te_reduce_axis(ctx, r->u.var.name, r->u.var.extent);
            if (!raxes[k]) return -1;
            old[nv] = r;
            nw[nv++] = raxes[k];
        }
        te_expr *src = te_substitute(ctx, body->u.reduce.source, nv, old, nw);
        body = te_reduce_n(body->u.reduce.op, src, nr, raxes);
    } else {
        body = te_substitute(ctx, body, nv, old, nw);
    }
    te_tensor *cache = sch__make_compute(ctx, te_sprintf(ctx, "%s.%s", t->name, step->str), n,
                                         axes, body);
    if (!cache) return -1;
    /* The original stage becomes a copy out of the cache, over its own axes
     * (so the caller's axis handles stay valid). */
    te_tensor *copy = sch__make_compute(ctx, t->name, n, t->axes, te_read_n(cache, n, t->axes));
    if (!copy) return -1;
    te_tensor *origin = st->origin;
    bool is_output = st->is_output;
    sch__init_stage(ctx, st, copy);
    st->origin = origin;
    st->is_output = is_output;
    sch_stage *cs = sch__insert_stage(s, step->stage, cache);
    if (!cs) return -1;
    cs->scope = scope;
    if (out) *out = cache;
    return 0;
}

te_tensor *sch_cache_write(sch_schedule *s, te_tensor *t, const char *scope) {
    if (!s) return NULL;
    int st = sch__find_stage(s, "cache_write", t);
    if (st < 0) return NULL;
    sch_step step = {.kind = SCH_STEP_CACHE_WRITE, .stage = st, .str = scope};
    te_tensor *out = NULL;
    return sch__apply(s, &step, NULL, NULL, &out) ? NULL : out;
}
