/*
 * schedule/split.c — split an axis into outer and inner loops (by the
 * inner extent, `factor`, or by the outer extent, `nparts`), and tile,
 * which is two splits and a reorder. Lowering expresses the parent as
 * outer * inner_extent + inner and guards it when the split does not
 * divide the extent (TVM te Split relation).
 */
#include <string.h>

#include "schedule/sch_internal.h"

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int sch__split_extents(int64_t extent, int64_t value, bool nparts, int64_t *outer,
                       int64_t *inner) {
    if (nparts) {
        *outer = value < extent ? value : extent;
        *inner = ceil_div(extent, *outer);
    } else {
        *inner = value < extent ? value : extent;
        *outer = ceil_div(extent, *inner);
    }
    return 0;
}

int sch__apply_split(sch_schedule *s, const sch_step *step, te_expr **outer_out,
                     te_expr **inner_out) {
    te_ctx *ctx = s->ctx;
    sch_stage *st = &s->stages[step->stage];
    const char *what = step->nparts ? "nparts" : "factor";
    if (st->op->kind != TE_OP_COMPUTE)
        return te_error(ctx, "split: stage '%s' is a placeholder and has no loops", st->op->name);
    if (step->iter < 0 || step->iter >= st->nleaf)
        return te_error(ctx, "split: stage '%s' has no loop %d (it has %d)", st->op->name,
                        step->iter, st->nleaf);
    te_expr *parent = st->leaf[step->iter];
    if (step->value <= 0)
        return te_error(ctx, "split: %s %lld for axis '%s' of stage '%s' must be positive", what,
                        (long long)step->value, parent->u.var.name, st->op->name);
    int64_t oe, ie;
    sch__split_extents(parent->u.var.extent, step->value, step->nparts, &oe, &ie);
    te_expr *outer = te_iter_var(ctx, te_sprintf(ctx, "%s.outer", parent->u.var.name),
                                 parent->u.var.iter, oe);
    te_expr *inner = te_iter_var(ctx, te_sprintf(ctx, "%s.inner", parent->u.var.name),
                                 parent->u.var.iter, ie);
    if (!outer || !inner) return -1;

    sch_rel *rels = te_alloc(ctx, sizeof(sch_rel) * (size_t)(st->nrel + 1));
    if (st->nrel) memcpy(rels, st->rels, sizeof(sch_rel) * (size_t)st->nrel);
    rels[st->nrel] = (sch_rel){.kind = SCH_REL_SPLIT, .parent = parent, .outer = outer,
                               .inner = inner, .factor = step->value, .nparts = step->nparts};
    te_expr **leaf = te_alloc(ctx, sizeof(te_expr *) * (size_t)(st->nleaf + 1));
    for (int i = 0, j = 0; i < st->nleaf; i++) {
        if (i == step->iter) {
            leaf[j++] = outer;
            leaf[j++] = inner;
        } else {
            leaf[j++] = st->leaf[i];
        }
    }
    st->rels = rels;
    st->nrel++;
    st->leaf = leaf;
    st->nleaf++;
    if (outer_out) *outer_out = outer;
    if (inner_out) *inner_out = inner;
    return 0;
}

static int split_common(sch_schedule *s, te_tensor *t, te_expr *axis, int64_t value,
                        bool nparts, te_expr **outer, te_expr **inner) {
    if (!s) return -1;
    int st = sch__find_stage(s, "split", t);
    if (st < 0) return -1;
    int it = sch__leaf_index(s, "split", st, axis);
    if (it < 0) return -1;
    sch_step step = {.kind = SCH_STEP_SPLIT, .stage = st, .iter = it, .value = value,
                     .nparts = nparts};
    return sch__apply(s, &step, outer, inner, NULL);
}

int sch_split(sch_schedule *s, te_tensor *t, te_expr *axis, int64_t factor, te_expr **outer,
              te_expr **inner) {
    return split_common(s, t, axis, factor, false, outer, inner);
}

int sch_split_nparts(sch_schedule *s, te_tensor *t, te_expr *axis, int64_t nparts,
                     te_expr **outer, te_expr **inner) {
    return split_common(s, t, axis, nparts, true, outer, inner);
}

int sch_tile(sch_schedule *s, te_tensor *t, te_expr *x, te_expr *y, int64_t xf, int64_t yf,
             te_expr **xo, te_expr **yo, te_expr **xi, te_expr **yi) {
    te_expr *a, *b, *c, *d;
    if (sch_split(s, t, x, xf, &a, &b) || sch_split(s, t, y, yf, &c, &d)) return -1;
    if (sch_reorder(s, t, 4, (te_expr *[]){a, c, b, d})) return -1;
    if (xo) *xo = a;
    if (yo) *yo = c;
    if (xi) *xi = b;
    if (yi) *yi = d;
    return 0;
}
