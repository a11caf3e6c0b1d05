/*
 * schedule/bound.c — bound inference (TVM te InferBound, Halide's
 * bounds_inference): for every stage, the region of its tensor that must
 * be realised and the extents of its loops.
 *
 * Outputs and stages at the root realise the whole tensor. A stage
 * computed at loop `a` of a consumer realises the union, over the
 * consumer's reads, of the index ranges that the consumer's loops inside
 * `a` sweep while the loops outside `a` (and `a` itself) stay fixed. The
 * ranges are computed by symbolic interval arithmetic: a region's start is
 * an expression of the fixed outer loop variables, its extent a constant
 * (the tightest constant bound, so the buffer has a static size).
 * Consumers are processed before producers, so a consumer's own region is
 * known when its producers ask for theirs.
 */
#include <stdlib.h>
#include <string.h>

#include "schedule/lower_internal.h"

/* ---- inlining ---- */

typedef struct {
    lower_state *L;
} inline_ctx;

static te_expr *inline_map(te_expr *e, void *user) {
    inline_ctx *ic = user;
    te_expr *m = te_expr_map_children(ic->L->ctx, e, inline_map, user);
    if (!m || m->kind != TE_READ) return m;
    int p = sch__stage_index(ic->L->s, m->u.read.tensor);
    if (p < 0 || ic->L->s->stages[p].attach != SCH_ATTACH_INLINE) return m;
    const te_tensor *op = ic->L->s->stages[p].op;
    return te_substitute(ic->L->ctx, ic->L->ls[p].body, op->ndim, op->axes, m->u.read.indices);
}

int sch__lower_inline(lower_state *L) {
    inline_ctx ic = {L};
    for (int i = 0; i < L->s->nstages; i++) {
        const te_tensor *op = L->s->stages[i].op;
        if (op->kind != TE_OP_COMPUTE) continue;
        /* Producers come first, so their bodies are already inlined. */
        L->ls[i].body = inline_map(op->body, &ic);
        if (!L->ls[i].body) return -1;
    }
    return 0;
}

/* ---- per-stage variables ---- */

static int var_slot(const lower_stage *g, const te_expr *v) {
    for (int i = 0; i < g->nvars; i++)
        if (g->vars[i] == v) return i;
    return -1;
}

int64_t sch__lower_ext(const lower_state *L, int st, const te_expr *var) {
    int k = var_slot(&L->ls[st], var);
    return k >= 0 ? L->ls[st].exts[k] : var->u.var.extent;
}

te_expr *sch__lower_value(const lower_state *L, int st, const te_expr *var) {
    int k = var_slot(&L->ls[st], var);
    return k >= 0 ? L->ls[st].values[k] : (te_expr *)var;
}

/* Given the root extents, the extent of every relation var (relations in
 * order) and the value of every var as a function of the leaves
 * (relations in reverse). */
static int stage_vars(lower_state *L, int st) {
    const sch_stage *g = &L->s->stages[st];
    lower_stage *ls = &L->ls[st];
    int cap = g->nroot + 3 * g->nrel + 1;
    ls->vars = te_alloc(L->ctx, sizeof(te_expr *) * (size_t)cap);
    ls->exts = te_alloc(L->ctx, sizeof(int64_t) * (size_t)cap);
    ls->values = te_alloc(L->ctx, sizeof(te_expr *) * (size_t)cap);
    if (!ls->vars || !ls->exts || !ls->values) return -1;
    int n = 0;
    for (int d = 0; d < g->nroot; d++) {
        ls->vars[n] = g->root[d];
        ls->exts[n++] = d < g->op->ndim ? ls->root_ext[d] : g->root[d]->u.var.extent;
    }
    for (int r = 0; r < g->nrel; r++) {
        const sch_rel *rel = &g->rels[r];
        ls->nvars = n; /* var_slot looks among the vars made so far */
        if (rel->kind == SCH_REL_SPLIT) {
            int p = var_slot(ls, rel->parent);
            int64_t oe, ie;
            sch__split_extents(ls->exts[p], rel->factor, rel->nparts, &oe, &ie);
            ls->vars[n] = rel->outer;
            ls->exts[n++] = oe;
            ls->vars[n] = rel->inner;
            ls->exts[n++] = ie;
        } else {
            int64_t e = ls->exts[var_slot(ls, rel->outer)] * ls->exts[var_slot(ls, rel->inner)];
            ls->vars[n] = rel->fused;
            ls->exts[n++] = e;
        }
    }
    ls->nvars = n;
    for (int i = 0; i < g->nleaf; i++) ls->values[var_slot(ls, g->leaf[i])] = g->leaf[i];
    for (int r = g->nrel - 1; r >= 0; r--) {
        const sch_rel *rel = &g->rels[r];
        if (rel->kind == SCH_REL_SPLIT) {
            te_expr *o = ls->values[var_slot(ls, rel->outer)];
            te_expr *in = ls->values[var_slot(ls, rel->inner)];
            int64_t ie = ls->exts[var_slot(ls, rel->inner)];
            ls->values[var_slot(ls, rel->parent)] = te_add(te_mul(o, te_int(L->ctx, ie)), in);
        } else {
            te_expr *f = ls->values[var_slot(ls, rel->fused)];
            te_expr *ie = te_int(L->ctx, ls->exts[var_slot(ls, rel->inner)]);
            ls->values[var_slot(ls, rel->outer)] = te_floordiv(f, ie);
            ls->values[var_slot(ls, rel->inner)] = te_floormod(f, ie);
        }
    }
    for (int i = 0; i < n; i++) {
        if (!ls->values[i]) return -1;
        ls->values[i] = te_analyzer_simplify(L->an, ls->values[i]);
    }
    for (int i = 0; i < g->nleaf; i++)
        te_analyzer_bind(L->an, g->leaf[i], 0, ls->exts[var_slot(ls, g->leaf[i])]);
    return 0;
}

/* ---- symbolic intervals ---- */

typedef struct {
    int n;
    te_expr *const *vars;
    const int64_t *exts;
} varying_set;

static bool is_varying(const varying_set *vs, const te_expr *v) {
    for (int i = 0; i < vs->n; i++)
        if (vs->vars[i] == v) return true;
    return false;
}

typedef struct {
    const varying_set *vs;
    bool found;
} uses_ctx;

static void uses_visit(const te_expr *e, void *user) {
    uses_ctx *u = user;
    if (u->found) return;
    /* A value read from a tensor (Gather's runtime index) is data: it
     * cannot stand for itself as a region bound, which lives outside the
     * loop that reads it, so it counts as varying and gets its constant
     * bounds (those of the clamp around it). */
    if ((e->kind == TE_VAR && is_varying(u->vs, e)) || e->kind == TE_READ) u->found = true;
    else te_expr_visit_children(e, uses_visit, user);
}

static bool uses_varying(const varying_set *vs, const te_expr *e) {
    uses_ctx u = {vs, false};
    uses_visit(e, &u);
    return u.found;
}

/* [lo, hi] of e as the varying vars sweep [0, ext); fixed vars symbolic. */
static void interval(lower_state *L, const varying_set *vs, te_expr *e, te_expr **lo,
                     te_expr **hi) {
    te_ctx *ctx = L->ctx;
    if (!uses_varying(vs, e)) {
        *lo = *hi = e;
        return;
    }
    int64_t c;
    te_expr *alo, *ahi, *blo, *bhi;
    switch (e->kind) {
    case TE_VAR:
        for (int i = 0; i < vs->n; i++)
            if (vs->vars[i] == e) {
                *lo = te_int(ctx, 0);
                *hi = te_int(ctx, vs->exts[i] - 1);
                return;
            }
        break;
    case TE_ADD:
    case TE_SUB:
    case TE_MIN:
    case TE_MAX:
        interval(L, vs, e->u.bin.a, &alo, &ahi);
        interval(L, vs, e->u.bin.b, &blo, &bhi);
        if (e->kind == TE_ADD) {
            *lo = te_add(alo, blo);
            *hi = te_add(ahi, bhi);
        } else if (e->kind == TE_SUB) {
            *lo = te_sub(alo, bhi);
            *hi = te_sub(ahi, blo);
        } else if (e->kind == TE_MIN) {
            *lo = te_min(alo, blo);
            *hi = te_min(ahi, bhi);
        } else {
            *lo = te_max(alo, blo);
            *hi = te_max(ahi, bhi);
        }
        return;
    case TE_MUL: {
        te_expr *x = e->u.bin.a, *k = e->u.bin.b;
        if (!te_is_const_int(k, &c)) {
            x = e->u.bin.b;
            k = e->u.bin.a;
        }
        if (te_is_const_int(k, &c)) {
            interval(L, vs, x, &alo, &ahi);
            if (c >= 0) {
                *lo = te_mul(alo, k);
                *hi = te_mul(ahi, k);
            } else {
                *lo = te_mul(ahi, k);
                *hi = te_mul(alo, k);
            }
            return;
        }
        break;
    }
    case TE_FLOORDIV:
        if (te_is_const_int(e->u.bin.b, &c) && c > 0) {
            interval(L, vs, e->u.bin.a, &alo, &ahi);
            *lo = te_floordiv(alo, e->u.bin.b);
            *hi = te_floordiv(ahi, e->u.bin.b);
            return;
        }
        break;
    case TE_FLOORMOD:
        if (te_is_const_int(e->u.bin.b, &c) && c > 0) {
            *lo = te_int(ctx, 0);
            *hi = te_int(ctx, c - 1);
            return;
        }
        break;
    default: break;
    }
    /* Anything else: constant bounds over every bound variable. */
    int64_t l, h;
    te_analyzer_const_bound(L->an, e, &l, &h);
    *lo = te_int(ctx, l);
    *hi = te_int(ctx, h);
}

/* ---- regions ---- */

typedef struct {
    lower_state *L;
    int consumer, producer;
    const varying_set *vs;
    te_expr *lo[TE_MAX_DIMS], *hi[TE_MAX_DIMS];
    int nreads;
    te_expr *subst_vars[64], *subst_vals[64];
    int nsubst;
} region_ctx;

static void region_visit(const te_expr *e, void *user) {
    region_ctx *rc = user;
    te_expr_visit_children(e, region_visit, user);
    if (e->kind != TE_READ) return;
    if (sch__stage_index(rc->L->s, e->u.read.tensor) != rc->producer) return;
    for (int d = 0; d < e->u.read.ndim; d++) {
        te_expr *idx = te_substitute(rc->L->ctx, e->u.read.indices[d], rc->nsubst,
                                     rc->subst_vars, rc->subst_vals);
        idx = te_analyzer_simplify(rc->L->an, idx);
        te_expr *lo, *hi;
        interval(rc->L, rc->vs, idx, &lo, &hi);
        rc->lo[d] = rc->nreads ? te_min(rc->lo[d], lo) : lo;
        rc->hi[d] = rc->nreads ? te_max(rc->hi[d], hi) : hi;
    }
    rc->nreads++;
}

bool sch__nested_in(const sch_schedule *s, int c, int t, int pos) {
    for (int cur = c, hops = 0; hops <= s->nstages; hops++) {
        const sch_stage *g = &s->stages[cur];
        if (g->attach != SCH_ATTACH_AT) return false;
        int at = sch__leaf_pos(&s->stages[g->attach_stage], g->attach_iter);
        if (g->attach_stage == t) return at >= pos;
        cur = g->attach_stage;
    }
    return false;
}

/* Adds the region of p that reader c reads inside loop `pos` of stage t
 * (c is t, or nested inside that loop) to rc: every loop of the stages
 * between c and t varies, and t's loops inside `pos`. */
static void reader_region(lower_state *L, region_ctx *rc, int c, int t, int pos) {
    sch_schedule *s = L->s;
    te_expr *vv[64];
    int64_t ve[64];
    int nv = 0;
    for (int st = c; st != t && nv < 64; st = s->stages[st].attach_stage) {
        const sch_stage *sg = &s->stages[st];
        for (int i = 0; i < sg->nleaf && nv < 64; i++) {
            vv[nv] = sg->leaf[i];
            ve[nv++] = sch__lower_ext(L, st, sg->leaf[i]);
        }
    }
    const sch_stage *tg = &s->stages[t];
    for (int i = pos + 1; i < tg->nleaf && nv < 64; i++) {
        vv[nv] = tg->leaf[i];
        ve[nv++] = sch__lower_ext(L, t, tg->leaf[i]);
    }
    /* GPU: a buffer shared by a group of threads must hold what every
     * thread of the group reads, so the thread-bound loops at or outside
     * the attach point (of t and of the stages it is attached in) vary too
     * when the buffer's scope is shared among them (TVM InferBound
     * NeedRelax: storage rank <= thread rank). */
    const sch_stage *g = &s->stages[rc->producer];
    int scope = g->scope >= 0 ? g->scope : TIR_SCOPE_LOCAL;
    int srank = scope == TIR_SCOPE_GLOBAL ? 0 : scope == TIR_SCOPE_SHARED ? 1 : 3;
    for (int st = t, upto = pos; st >= 0 && nv < 64;) {
        const sch_stage *sg = &s->stages[st];
        for (int i = 0; i <= upto && i < sg->nleaf && nv < 64; i++) {
            const sch_iter_attr *a = sch__attr(sg, sg->leaf[i]);
            if (!a || a->ann != SCH_ANN_BIND || !a->thread_tag) continue;
            int trank = !strncmp(a->thread_tag, "blockIdx", 8) ? 0 : 1;
            if (srank > trank) continue;
            vv[nv] = sg->leaf[i];
            ve[nv++] = sch__lower_ext(L, st, sg->leaf[i]);
        }
        if (sg->attach != SCH_ATTACH_AT) break;
        int next = sg->attach_stage;
        upto = sch__leaf_pos(&s->stages[next], sg->attach_iter);
        st = next;
    }
    varying_set vs = {nv, vv, ve};
    const sch_stage *cg = &s->stages[c];
    lower_stage *cl = &L->ls[c];
    rc->consumer = c;
    rc->vs = &vs;
    rc->nsubst = 0;
    for (int d = 0; d < cg->nroot && d < 64; d++) {
        te_expr *v = sch__lower_value(L, c, cg->root[d]);
        if (d < cg->op->ndim && cl->root_min[d]) v = te_add(cl->root_min[d], v);
        rc->subst_vars[rc->nsubst] = cg->root[d];
        rc->subst_vals[rc->nsubst++] = v;
    }
    region_visit(cl->body, rc);
    rc->vs = NULL;
}

/* The region of stage p computed at loop `at` of stage t: the union of
 * what its readers read inside that loop — t itself, and the stages
 * nested inside the loop (TVM's attach path: a shared tile computed at the
 * loop of the stage that reads its per-thread copy). Readers outside the
 * loop are an error the lowering reports. */
static int infer_attached(lower_state *L, int p) {
    sch_schedule *s = L->s;
    const sch_stage *g = &s->stages[p];
    int t = g->attach_stage;
    const sch_stage *tg = &s->stages[t];
    int pos = sch__leaf_pos(tg, g->attach_iter);
    if (pos < 0)
        return te_error(L->ctx,
                        "lower: stage '%s' is computed at axis '%s' of stage '%s', which was "
                        "later split or fused away",
                        g->op->name, g->attach_iter->u.var.name, tg->op->name);
    region_ctx rc = {.L = L, .producer = p};
    for (int c = 0; c < s->nstages; c++) {
        if (c == p || s->stages[c].op->kind != TE_OP_COMPUTE ||
            s->stages[c].attach == SCH_ATTACH_INLINE || !L->ls[c].body)
            continue;
        if (c != t && !sch__nested_in(s, c, t, pos)) continue;
        if (!sch__expr_reads(s, L->ls[c].body, p)) continue;
        reader_region(L, &rc, c, t, pos);
    }
    if (rc.nreads == 0)
        return te_error(L->ctx,
                        "lower: stage '%s' is computed at stage '%s', but nothing inside that "
                        "loop reads it",
                        g->op->name, tg->op->name);
    lower_stage *pl = &L->ls[p];
    for (int d = 0; d < g->op->ndim; d++) {
        te_expr *lo = te_analyzer_simplify(L->an, rc.lo[d]);
        te_expr *ext = te_analyzer_simplify(L->an, te_add(te_sub(rc.hi[d], lo), te_int(L->ctx, 1)));
        int64_t e, elo, ehi;
        if (!te_is_const_int(ext, &e)) {
            te_analyzer_const_bound(L->an, ext, &elo, &ehi);
            e = ehi;
        }
        if (e > g->op->shape[d]) e = g->op->shape[d];
        if (e <= 0 || e == INT64_MAX)
            return te_error(L->ctx,
                            "lower: cannot bound the region of stage '%s' (dimension %d) "
                            "needed inside stage '%s'",
                            g->op->name, d, tg->op->name);
        pl->root_min[d] = lo;
        pl->root_ext[d] = e;
    }
    return 0;
}

int sch__lower_bounds(lower_state *L) {
    sch_schedule *s = L->s;
    for (int i = s->nstages - 1; i >= 0; i--) {
        const sch_stage *g = &s->stages[i];
        lower_stage *ls = &L->ls[i];
        if (g->op->kind != TE_OP_COMPUTE || g->attach == SCH_ATTACH_INLINE) continue;
        if (g->attach == SCH_ATTACH_AT) {
            if (infer_attached(L, i)) return -1;
        } else {
            for (int d = 0; d < g->op->ndim; d++) {
                ls->root_min[d] = NULL;
                ls->root_ext[d] = g->op->shape[d];
            }
        }
        if (stage_vars(L, i)) return -1;
        ls->done = true;
    }
    return 0;
}
