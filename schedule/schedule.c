/*
 * schedule/schedule.c — creating and copying schedules, stage lookup, the
 * step log, and the small helpers every primitive uses.
 */
#include <stdlib.h>
#include <string.h>

#include "schedule/sch_internal.h"

te_expr **sch__dup_exprs(te_ctx *ctx, te_expr *const *a, int n) {
    te_expr **r = te_alloc(ctx, sizeof(te_expr *) * (size_t)(n > 0 ? n : 1));
    if (r && n > 0) memcpy(r, a, sizeof(te_expr *) * (size_t)n);
    return r;
}

void sch__init_stage(te_ctx *ctx, sch_stage *st, te_tensor *op) {
    memset(st, 0, sizeof *st);
    st->op = op;
    st->origin = op;
    st->scope = -1;
    st->attach = SCH_ATTACH_ROOT;
    st->attach_stage = -1;
    if (op->kind != TE_OP_COMPUTE) return;
    int nred = 0;
    te_expr **red = NULL;
    if (op->body && op->body->kind == TE_REDUCE) {
        nred = op->body->u.reduce.naxes;
        red = op->body->u.reduce.axes;
    }
    st->nroot = op->ndim + nred;
    st->root = te_alloc(ctx, sizeof(te_expr *) * (size_t)(st->nroot + 1));
    for (int i = 0; i < op->ndim; i++) st->root[i] = op->axes[i];
    for (int i = 0; i < nred; i++) st->root[op->ndim + i] = red[i];
    st->nleaf = st->nroot;
    st->leaf = sch__dup_exprs(ctx, st->root, st->nroot);
}

/* Post-order DFS: producers before consumers. */
static int collect(te_ctx *ctx, te_tensor *t, te_tensor ***list, int *n, int *cap) {
    for (int i = 0; i < *n; i++)
        if ((*list)[i] == t) return 0;
    for (int i = 0; i < t->ninputs; i++)
        if (collect(ctx, t->inputs[i], list, n, cap)) return -1;
    for (int i = 0; i < *n; i++) /* a diamond may have added it meanwhile */
        if ((*list)[i] == t) return 0;
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        te_tensor **nl = te_alloc(ctx, sizeof(te_tensor *) * (size_t)nc);
        if (!nl) return -1;
        if (*n) memcpy(nl, *list, sizeof(te_tensor *) * (size_t)*n);
        *list = nl;
        *cap = nc;
    }
    (*list)[(*n)++] = t;
    return 0;
}

sch_schedule *sch_create(te_ctx *ctx, int nouts, te_tensor *const *outs) {
    if (!ctx) return NULL;
    if (nouts <= 0 || !outs) {
        te_error(ctx, "sch_create: a schedule needs at least one output tensor");
        return NULL;
    }
    te_tensor **list = NULL;
    int n = 0, cap = 0;
    for (int i = 0; i < nouts; i++) {
        if (!outs[i]) {
            te_error(ctx, "sch_create: output %d is NULL", i);
            return NULL;
        }
        if (outs[i]->kind != TE_OP_COMPUTE) {
            te_error(ctx, "sch_create: output '%s' is a placeholder; outputs must be compute ops",
                     outs[i]->name);
            return NULL;
        }
        if (collect(ctx, outs[i], &list, &n, &cap)) return NULL;
    }
    sch_schedule *s = te_alloc(ctx, sizeof *s);
    if (!s) return NULL;
    s->ctx = ctx;
    s->nouts = nouts;
    s->outs = te_alloc(ctx, sizeof(te_tensor *) * (size_t)nouts);
    memcpy(s->outs, outs, sizeof(te_tensor *) * (size_t)nouts);
    s->nstages = n;
    s->stages = te_alloc(ctx, sizeof(sch_stage) * (size_t)n);
    for (int i = 0; i < n; i++) {
        sch__init_stage(ctx, &s->stages[i], list[i]);
        for (int j = 0; j < nouts; j++)
            if (outs[j] == list[i]) s->stages[i].is_output = true;
    }
    return s;
}

sch_schedule *sch_copy(const sch_schedule *s) {
    if (!s) return NULL;
    sch_schedule *c = te_alloc(s->ctx, sizeof *c);
    if (!c) return NULL;
    *c = *s;
    c->stages = te_alloc(s->ctx, sizeof(sch_stage) * (size_t)(s->nstages ? s->nstages : 1));
    memcpy(c->stages, s->stages, sizeof(sch_stage) * (size_t)s->nstages);
    c->capsteps = s->nsteps;
    c->steps = te_alloc(s->ctx, sizeof(sch_step) * (size_t)(s->nsteps ? s->nsteps : 1));
    if (s->nsteps) memcpy(c->steps, s->steps, sizeof(sch_step) * (size_t)s->nsteps);
    return c;
}

te_ctx *sch_ctx(const sch_schedule *s) { return s ? s->ctx : NULL; }

int sch__stage_index(const sch_schedule *s, const te_tensor *t) {
    for (int i = 0; i < s->nstages; i++)
        if (s->stages[i].op == t || s->stages[i].origin == t) return i;
    return -1;
}

int sch_stage_of(const sch_schedule *s, const te_tensor *t) {
    return (s && t) ? sch__stage_index(s, t) : -1;
}

const char *sch__stage_name(const sch_schedule *s, int st) { return s->stages[st].op->name; }

int sch__find_stage(sch_schedule *s, const char *prim, const te_tensor *t) {
    if (!t) return te_error(s->ctx, "%s: tensor is NULL", prim);
    int i = sch__stage_index(s, t);
    if (i < 0)
        return te_error(s->ctx, "%s: tensor '%s' is not part of this schedule", prim, t->name);
    return i;
}

/* The stage whose leaf, root or relations mention var, or -1. */
static int owner_of(const sch_schedule *s, const te_expr *var) {
    for (int i = 0; i < s->nstages; i++) {
        const sch_stage *st = &s->stages[i];
        for (int j = 0; j < st->nleaf; j++)
            if (st->leaf[j] == var) return i;
        for (int j = 0; j < st->nroot; j++)
            if (st->root[j] == var) return i;
        for (int j = 0; j < st->nrel; j++) {
            const sch_rel *r = &st->rels[j];
            if (r->parent == var || r->outer == var || r->inner == var || r->fused == var)
                return i;
        }
    }
    return -1;
}

int sch__leaf_pos(const sch_stage *g, const te_expr *var) {
    for (int i = 0; i < g->nleaf; i++)
        if (g->leaf[i] == var) return i;
    return -1;
}

int sch__leaf_index(sch_schedule *s, const char *prim, int st, const te_expr *axis) {
    const sch_stage *g = &s->stages[st];
    if (!axis) return te_error(s->ctx, "%s: axis of stage '%s' is NULL", prim, g->op->name);
    if (axis->kind != TE_VAR)
        return te_error(s->ctx, "%s: axis of stage '%s' must be an iteration variable", prim,
                        g->op->name);
    int pos = sch__leaf_pos(g, axis);
    if (pos >= 0) return pos;
    int other = owner_of(s, axis);
    if (other >= 0 && other != st)
        return te_error(s->ctx, "%s: axis '%s' belongs to stage '%s', not to stage '%s'", prim,
                        axis->u.var.name, sch__stage_name(s, other), g->op->name);
    te_str loops;
    te_str_init(&loops);
    for (int i = 0; i < g->nleaf; i++)
        te_str_printf(&loops, "%s%s", i ? ", " : "", g->leaf[i]->u.var.name);
    int rc;
    if (other == st)
        rc = te_error(s->ctx,
                      "%s: axis '%s' of stage '%s' was already split or fused away; "
                      "its current loops are: %s",
                      prim, axis->u.var.name, g->op->name, loops.len ? loops.data : "(none)");
    else
        rc = te_error(s->ctx, "%s: axis '%s' is not a loop of stage '%s' (its loops: %s)", prim,
                      axis->u.var.name, g->op->name, loops.len ? loops.data : "(none)");
    te_str_free(&loops);
    return rc;
}

const sch_iter_attr *sch__attr(const sch_stage *st, const te_expr *var) {
    for (int i = 0; i < st->nattr; i++)
        if (st->attrs[i].var == var) return &st->attrs[i];
    return NULL;
}

void sch__set_attr(te_ctx *ctx, sch_stage *st, const sch_iter_attr *a) {
    int n = st->nattr, at = -1;
    for (int i = 0; i < n; i++)
        if (st->attrs[i].var == a->var) at = i;
    sch_iter_attr *na = te_alloc(ctx, sizeof(sch_iter_attr) * (size_t)(n + 1));
    if (!na) return;
    if (n) memcpy(na, st->attrs, sizeof(sch_iter_attr) * (size_t)n);
    if (at < 0) at = n++;
    na[at] = *a;
    st->attrs = na;
    st->nattr = n;
}

sch_stage *sch__insert_stage(sch_schedule *s, int pos, te_tensor *op) {
    sch_stage *ns = te_alloc(s->ctx, sizeof(sch_stage) * (size_t)(s->nstages + 1));
    if (!ns) return NULL;
    for (int i = 0, j = 0; i <= s->nstages; i++) {
        if (i == pos) continue;
        ns[i] = s->stages[j++];
        if (ns[i].attach == SCH_ATTACH_AT && ns[i].attach_stage >= pos) ns[i].attach_stage++;
    }
    sch__init_stage(s->ctx, &ns[pos], op);
    s->stages = ns;
    s->nstages++;
    return &ns[pos];
}

typedef struct {
    const sch_schedule *s;
    int producer;
    bool found;
} reads_ctx;

static void reads_visit(const te_expr *e, void *user) {
    reads_ctx *rc = user;
    if (rc->found) return;
    if (e->kind == TE_READ) {
        const sch_stage *p = &rc->s->stages[rc->producer];
        if (e->u.read.tensor == p->op || e->u.read.tensor == p->origin) {
            rc->found = true;
            return;
        }
    }
    te_expr_visit_children(e, reads_visit, user);
}

bool sch__expr_reads(const sch_schedule *s, const te_expr *e, int producer) {
    if (!e) return false;
    reads_ctx rc = {s, producer, false};
    reads_visit(e, &rc);
    return rc.found;
}

bool sch__reads(const sch_schedule *s, int reader, int producer) {
    const sch_stage *r = &s->stages[reader];
    return r->op->kind == TE_OP_COMPUTE && sch__expr_reads(s, r->op->body, producer);
}

/* ---- tensors the schedule makes ---- */

typedef struct {
    te_tensor **list;
    int n, cap;
    te_ctx *ctx;
} inputs_acc;

static void inputs_visit(const te_expr *e, void *user) {
    inputs_acc *a = user;
    if (e->kind == TE_READ) {
        te_tensor *t = e->u.read.tensor;
        bool seen = false;
        for (int i = 0; i < a->n; i++) seen |= a->list[i] == t;
        if (!seen) {
            if (a->n == a->cap) {
                int nc = a->cap ? a->cap * 2 : 4;
                te_tensor **nl = te_alloc(a->ctx, sizeof(te_tensor *) * (size_t)nc);
                if (a->n) memcpy(nl, a->list, sizeof(te_tensor *) * (size_t)a->n);
                a->list = nl;
                a->cap = nc;
            }
            a->list[a->n++] = t;
        }
    }
    te_expr_visit_children(e, inputs_visit, user);
}

te_tensor *sch__make_compute(te_ctx *ctx, const char *name, int ndim, te_expr *const *axes,
                             te_expr *body) {
    if (!body) return NULL;
    te_tensor *t = te_alloc(ctx, sizeof *t);
    if (!t) return NULL;
    t->ctx = ctx;
    t->name = te_strdup(ctx, name);
    t->id = te_ctx_next_id(ctx);
    t->kind = TE_OP_COMPUTE;
    t->dtype = body->dtype;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) t->shape[d] = axes[d]->u.var.extent;
    t->axes = sch__dup_exprs(ctx, axes, ndim);
    t->body = body;
    inputs_acc a = {NULL, 0, 0, ctx};
    inputs_visit(body, &a);
    t->ninputs = a.n;
    t->inputs = a.list;
    return t;
}

typedef struct {
    int n;
    te_tensor *const *from, *const *to;
    te_ctx *ctx;
} replace_ctx;

static te_expr *replace_map(te_expr *e, void *user) {
    replace_ctx *rc = user;
    te_expr *m = te_expr_map_children(rc->ctx, e, replace_map, user);
    if (!m) return NULL;
    if (m->kind == TE_READ) {
        for (int i = 0; i < rc->n; i++)
            if (m->u.read.tensor == rc->from[i]) {
                te_expr *r = te_alloc(rc->ctx, sizeof *r);
                *r = *m;
                r->u.read.tensor = rc->to[i];
                return r;
            }
    }
    return m;
}

te_expr *sch__replace_reads(te_ctx *ctx, te_expr *e, int n, te_tensor *const *from,
                            te_tensor *const *to) {
    replace_ctx rc = {n, from, to, ctx};
    return replace_map(e, &rc);
}

/* ---- the step log ---- */

void sch__log(sch_schedule *s, const sch_step *step) {
    if (s->nsteps == s->capsteps) {
        int nc = s->capsteps ? s->capsteps * 2 : 16;
        sch_step *ns = te_alloc(s->ctx, sizeof(sch_step) * (size_t)nc);
        if (!ns) return;
        if (s->nsteps) memcpy(ns, s->steps, sizeof(sch_step) * (size_t)s->nsteps);
        s->steps = ns;
        s->capsteps = nc;
    }
    sch_step c = *step;
    if (step->n > 0 && step->iters) {
        c.iters = te_alloc(s->ctx, sizeof(int) * (size_t)step->n);
        memcpy(c.iters, step->iters, sizeof(int) * (size_t)step->n);
    }
    if (step->n > 0 && step->stages) {
        c.stages = te_alloc(s->ctx, sizeof(int) * (size_t)step->n);
        memcpy(c.stages, step->stages, sizeof(int) * (size_t)step->n);
    }
    if (step->str) c.str = te_strdup(s->ctx, step->str);
    s->steps[s->nsteps++] = c;
}

int sch_num_steps(const sch_schedule *s) { return s ? s->nsteps : 0; }

const sch_step *sch_get_step(const sch_schedule *s, int i) {
    return (s && i >= 0 && i < s->nsteps) ? &s->steps[i] : NULL;
}

const char *sch_step_kind_name(sch_step_kind k) {
    static const char *names[] = {"split",        "fuse",           "reorder",
                                  "annotate",     "pragma",         "compute_at",
                                  "compute_inline", "compute_root", "cache_read",
                                  "cache_write",  "rfactor",        "storage_align",
                                  "pack",         "tensorize",      "double_buffer",
                                  "swizzle"};
    return (k >= 0 && k < SCH_STEP_KIND_COUNT) ? names[k] : "unknown";
}

int sch_num_stages(const sch_schedule *s) { return s ? s->nstages : 0; }

te_tensor *sch_stage_tensor(const sch_schedule *s, int i) {
    return (s && i >= 0 && i < s->nstages) ? s->stages[i].op : NULL;
}

int sch_stage_leaf_axes(const sch_schedule *s, int i, te_expr *const **axes) {
    if (!s || i < 0 || i >= s->nstages) {
        if (axes) *axes = NULL;
        return 0;
    }
    if (axes) *axes = s->stages[i].leaf;
    return s->stages[i].nleaf;
}

te_expr *sch_axis(te_tensor *t, int i) {
    if (!t) return NULL;
    if (t->kind != TE_OP_COMPUTE || i < 0 || i >= t->ndim) {
        te_error(t->ctx, "sch_axis: tensor '%s' has no data-parallel axis %d", t->name, i);
        return NULL;
    }
    return t->axes[i];
}

te_expr *sch_reduce_axis(te_tensor *t, int i) {
    if (!t) return NULL;
    if (t->kind != TE_OP_COMPUTE || !t->body || t->body->kind != TE_REDUCE || i < 0 ||
        i >= t->body->u.reduce.naxes) {
        te_error(t->ctx, "sch_reduce_axis: tensor '%s' has no reduce axis %d", t->name, i);
        return NULL;
    }
    return t->body->u.reduce.axes[i];
}
