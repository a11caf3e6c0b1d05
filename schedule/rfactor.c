/*
 * schedule/rfactor.c — factor a reduction (TVM te rfactor): the partial
 * results over one reduce axis become a data-parallel dimension of a new
 * stage, which can then be parallelized or vectorized; the original stage
 * reduces those partials.
 *   C[i] = sum(A[i, k], k), k split into ko, ki, rfactor(C, ki, 0):
 *   C.rf[ki, i] = sum(A[i, ko*f + ki], ko)
 *   C[i]        = sum(C.rf[r, i], r)
 */
#include <string.h>

#include "schedule/sch_internal.h"

static int slot_of(te_expr *const *vars, int n, const te_expr *v) {
    for (int i = 0; i < n; i++)
        if (vars[i] == v) return i;
    return 0; /* every relation var is listed: unreachable */
}

int sch__apply_rfactor(sch_schedule *s, const sch_step *step, te_tensor **out) {
    te_ctx *ctx = s->ctx;
    sch_stage *st = &s->stages[step->stage];
    te_tensor *t = st->op;
    if (t->kind != TE_OP_COMPUTE || t->body->kind != TE_REDUCE)
        return te_error(ctx, "rfactor: stage '%s' is not a reduction", t->name);
    if (step->iter < 0 || step->iter >= st->nleaf)
        return te_error(ctx, "rfactor: stage '%s' has no loop %d", t->name, step->iter);
    /* rfactor rebuilds the stage (its compute location back at the root)
     * and moves its reduce loops into the new stage: a compute_at recorded
     * before would be dropped silently, and a stage attached to its loops
     * would point at loops that no longer hold what it feeds. */
    if (st->attach == SCH_ATTACH_AT)
        return te_error(ctx,
                        "rfactor: stage '%s' was attached by compute_at to loop '%s' of stage "
                        "'%s', which rfactor would drop; rfactor a stage before compute_at",
                        t->name, st->attach_iter->u.var.name, sch__stage_name(s, st->attach_stage));
    for (int i = 0; i < s->nstages; i++)
        if (s->stages[i].attach == SCH_ATTACH_AT && s->stages[i].attach_stage == step->stage)
            return te_error(ctx,
                            "rfactor: stage '%s' is computed (compute_at) at loop '%s' of stage "
                            "'%s', whose loops rfactor replaces; rfactor '%s' before compute_at",
                            s->stages[i].op->name, s->stages[i].attach_iter->u.var.name, t->name,
                            t->name);
    te_expr *axis = st->leaf[step->iter];
    if (axis->u.var.iter != TE_ITER_REDUCE)
        return te_error(ctx,
                        "rfactor: axis '%s' of stage '%s' is data-parallel; rfactor needs a "
                        "reduce axis",
                        axis->u.var.name, t->name);
    if (step->value < 0 || step->value > t->ndim)
        return te_error(ctx, "rfactor: factor_axis %lld of stage '%s' must lie in [0, %d]",
                        (long long)step->value, t->name, t->ndim);
    for (int r = 0; r < st->nrel; r++) {
        const sch_rel *rel = &st->rels[r];
        const te_expr *v = rel->kind == SCH_REL_SPLIT ? rel->parent : rel->fused;
        if (v->u.var.iter != TE_ITER_REDUCE)
            return te_error(ctx,
                            "rfactor: stage '%s' has split or fused data-parallel axes; call "
                            "rfactor before scheduling them",
                            t->name);
    }
    if (st->nattr > 0)
        return te_error(ctx, "rfactor: stage '%s' has annotated loops; call rfactor first",
                        t->name);

    /* Root reduce vars as functions of the leaf reduce vars. */
    enum { MAXV = 128 };
    te_expr *vars[MAXV], *vals[MAXV];
    int64_t exts[MAXV];
    int nv = 0;
    if (st->nroot + 3 * st->nrel > MAXV) return te_error(ctx, "rfactor: stage too complex");
    for (int d = 0; d < st->nroot; d++) {
        vars[nv] = st->root[d];
        exts[nv] = st->root[d]->u.var.extent;
        vals[nv++] = NULL;
    }
    for (int r = 0; r < st->nrel; r++) {
        const sch_rel *rel = &st->rels[r];
        if (rel->kind == SCH_REL_SPLIT) {
            vars[nv] = rel->outer;
            exts[nv] = rel->outer->u.var.extent;
            vals[nv++] = NULL;
            vars[nv] = rel->inner;
            exts[nv] = rel->inner->u.var.extent;
            vals[nv++] = NULL;
        } else {
            vars[nv] = rel->fused;
            exts[nv] = rel->fused->u.var.extent;
            vals[nv++] = NULL;
        }
    }
#define SLOT(v) slot_of(vars, nv, (v))
    /* New variables for the leaves: the factored axis becomes data-parallel. */
    te_expr *new_axes[TE_MAX_DIMS + 1], *new_red[64];
    int nred = 0;
    te_expr *factored = te_axis(ctx, axis->u.var.name, axis->u.var.extent);
    if (!factored) return -1;
    for (int i = 0; i < st->nleaf; i++) {
        te_expr *v = st->leaf[i];
        int k = SLOT(v);
        if (v == axis) vals[k] = factored;
        else if (v->u.var.iter == TE_ITER_REDUCE) {
            if (nred == 64) return te_error(ctx, "rfactor: too many reduce axes");
            vals[k] = new_red[nred++] = te_reduce_axis(ctx, v->u.var.name, v->u.var.extent);
        }
    }
    for (int r = st->nrel - 1; r >= 0; r--) {
        const sch_rel *rel = &st->rels[r];
        if (rel->kind == SCH_REL_SPLIT) {
            int ki = SLOT(rel->inner);
            vals[SLOT(rel->parent)] =
                te_add(te_mul(vals[SLOT(rel->outer)], te_int(ctx, exts[ki])), vals[ki]);
        } else {
            te_expr *f = vals[SLOT(rel->fused)];
            te_expr *ie = te_int(ctx, exts[SLOT(rel->inner)]);
            vals[SLOT(rel->outer)] = te_floordiv(f, ie);
            vals[SLOT(rel->inner)] = te_floormod(f, ie);
        }
    }
    int fa = (int)step->value, nd = 0;
    te_expr *sub_vars[TE_MAX_DIMS + 64], *sub_vals[TE_MAX_DIMS + 64];
    int ns = 0;
    for (int d = 0; d <= t->ndim; d++) {
        if (d == fa) new_axes[nd++] = factored;
        if (d == t->ndim) break;
        te_expr *a = te_axis(ctx, t->axes[d]->u.var.name, t->axes[d]->u.var.extent);
        if (!a) return -1;
        new_axes[nd++] = a;
        sub_vars[ns] = t->axes[d];
        sub_vals[ns++] = a;
    }
    if (nd > TE_MAX_DIMS)
        return te_error(ctx, "rfactor: stage '%s' would have more than %d dimensions", t->name,
                        TE_MAX_DIMS);
    te_expr *guard = NULL;
    for (int d = t->ndim; d < st->nroot; d++) {
        te_expr *v = vals[SLOT(st->root[d])];
        if (!v) return -1;
        sub_vars[ns] = st->root[d];
        sub_vals[ns++] = v;
        te_expr *c = te_simplify(ctx, te_lt(v, te_int(ctx, st->root[d]->u.var.extent)));
        int64_t cv;
        if (!(te_is_const_int(c, &cv) && cv)) guard = guard ? te_and(guard, c) : c;
    }
#undef SLOT
    te_reduce_op rop = t->body->u.reduce.op;
    te_expr *src = te_substitute(ctx, t->body->u.reduce.source, ns, sub_vars, sub_vals);
    /* likely(): loop partitioning splits the tail's iterations off, so the
     * others run without the select (tir/pass_loop_partition.c). */
    if (guard)
        src = te_select(te_call(TE_INTRIN_LIKELY, 1, &guard), src,
                        te_reduce_identity(ctx, rop, t->dtype));
    te_expr *rf_body = nred ? te_reduce_n(rop, src, nred, new_red) : src;
    te_tensor *rf = sch__make_compute(ctx, te_sprintf(ctx, "%s.rf", t->name), nd, new_axes,
                                      rf_body);
    if (!rf) return -1;
    te_expr *r = te_reduce_axis(ctx, te_sprintf(ctx, "%s.r", axis->u.var.name),
                                axis->u.var.extent);
    te_expr *idx[TE_MAX_DIMS];
    for (int d = 0, j = 0; d < nd; d++) idx[d] = d == fa ? r : t->axes[j++];
    te_tensor *nt = sch__make_compute(ctx, t->name, t->ndim, t->axes,
                                      te_reduce_n(rop, te_read_n(rf, nd, idx), 1, &r));
    if (!nt) return -1;
    te_tensor *origin = st->origin;
    bool is_output = st->is_output;
    int scope = st->scope;
    sch__init_stage(ctx, st, nt);
    st->origin = origin;
    st->is_output = is_output;
    st->scope = scope;
    if (!sch__insert_stage(s, step->stage, rf)) return -1;
    if (out) *out = rf;
    return 0;
}

te_tensor *sch_rfactor(sch_schedule *s, te_tensor *t, te_expr *axis, int factor_axis) {
    if (!s) return NULL;
    int st = sch__find_stage(s, "rfactor", t);
    if (st < 0) return NULL;
    int it = sch__leaf_index(s, "rfactor", st, axis);
    if (it < 0) return NULL;
    sch_step step = {.kind = SCH_STEP_RFACTOR, .stage = st, .iter = it, .value = factor_axis};
    te_tensor *out = NULL;
    return sch__apply(s, &step, NULL, NULL, &out) ? NULL : out;
}
