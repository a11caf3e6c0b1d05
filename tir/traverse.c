/*
 * tir/traverse.c — the one statement walk: the mutator and visitor every
 * pass is written on (each pass lists only the statement kinds it cares
 * about), the loop-variable binding they share, and small buffer queries.
 * The two switches below are the only places that know which children
 * each statement kind has.
 */
#include <string.h>

#include "tir/tir_internal.h"

bool tir_bind_loop(te_analyzer *an, const te_expr *var, const te_expr *min, const te_expr *extent) {
    int64_t mlo, mhi, elo, ehi;
    te_analyzer_const_bound(an, min, &mlo, &mhi);
    te_analyzer_const_bound(an, extent, &elo, &ehi);
    if (mlo <= -TIR_BIND_LIMIT || mhi >= TIR_BIND_LIMIT || ehi >= TIR_BIND_LIMIT || ehi < 1)
        return false;
    te_analyzer_bind(an, var, mlo, mhi + ehi - mlo);
    return true;
}

/* ---- mutator ---- */

static void *fail(tir_mutator *m) {
    m->failed = true;
    return NULL;
}

te_expr *tir_mutate_expr(tir_mutator *m, te_expr *e) {
    if (!e || !m->expr || m->failed) return e;
    te_expr *r = m->expr(m, e);
    return r ? r : fail(m);
}

/* A copy of s in the arena (fields replaced by the caller). */
static tir_stmt *clone(tir_mutator *m, const tir_stmt *s) {
    tir_stmt *n = tir__new_stmt(m->ctx, s->kind);
    if (!n) return fail(m);
    *n = *s;
    return n;
}

/* The body of loop s, mutated with the loop variable in scope. */
static tir_stmt *loop_body(tir_mutator *m, const tir_stmt *s, te_expr *mn, te_expr *ext) {
    bool bound = m->an && tir_bind_loop(m->an, s->u.loop.var, mn, ext);
    tir_stmt *body = tir_mutate(m, s->u.loop.body);
    if (bound) te_analyzer_unbind(m->an, s->u.loop.var);
    return body;
}

/* The expression and the body of the kinds that hold at most one of
 * each (NULL where the kind has none); false for the other kinds. A new
 * kind of that shape needs only a line here. */
static bool slots(tir_stmt *s, te_expr ***e, tir_stmt ***b) {
    *e = NULL;
    *b = NULL;
    switch (s->kind) {
    case TIR_ALLOCATE: *b = &s->u.alloc.body; return true;
    case TIR_EVALUATE: *e = &s->u.eval.value; return true;
    case TIR_ALLREDUCE: *e = &s->u.allreduce.value, *b = &s->u.allreduce.body; return true;
    case TIR_LET: *e = &s->u.let.value, *b = &s->u.let.body; return true;
    case TIR_ATTR: *e = &s->u.attr.value, *b = &s->u.attr.body; return true;
    default: return false; /* BARRIER and NOOP hold nothing */
    }
}

/* A LET's variable bound to its value's constant range (when known). */
static bool bind_let(te_analyzer *an, const te_expr *var, const te_expr *value) {
    int64_t lo, hi;
    if (!te_dtype_is_int(var->dtype) || var->dtype.lanes != 1) return false;
    te_analyzer_const_bound(an, value, &lo, &hi);
    if (lo <= -TIR_BIND_LIMIT || hi >= TIR_BIND_LIMIT) return false;
    te_analyzer_bind(an, var, lo, hi - lo + 1);
    return true;
}

static tir_stmt *let_body(tir_mutator *m, const tir_stmt *s, te_expr *value) {
    bool bound = m->an && bind_let(m->an, s->u.let.var, value);
    tir_stmt *body = tir_mutate(m, s->u.let.body);
    if (bound) te_analyzer_unbind(m->an, s->u.let.var);
    return body;
}

tir_stmt *tir_mutate_children(tir_mutator *m, tir_stmt *s) {
    if (!s || m->failed) return NULL;
    switch (s->kind) {
    case TIR_FOR: {
        te_expr *mn = tir_mutate_expr(m, s->u.loop.min);
        te_expr *ext = tir_mutate_expr(m, s->u.loop.extent);
        tir_stmt *body = m->failed ? NULL : loop_body(m, s, mn, ext);
        if (m->failed) return NULL;
        if (mn == s->u.loop.min && ext == s->u.loop.extent && body == s->u.loop.body) return s;
        tir_stmt *n = clone(m, s);
        if (!n) return NULL;
        n->u.loop.min = mn;
        n->u.loop.extent = ext;
        n->u.loop.body = body;
        return n;
    }
    case TIR_BUFFER_STORE: {
        int nd = s->u.bstore.ndim;
        te_expr *idx[TE_MAX_DIMS];
        bool same = true;
        for (int d = 0; d < nd && d < TE_MAX_DIMS; ++d) {
            idx[d] = tir_mutate_expr(m, s->u.bstore.indices[d]);
            same &= idx[d] == s->u.bstore.indices[d];
        }
        te_expr *v = tir_mutate_expr(m, s->u.bstore.value);
        if (m->failed) return NULL;
        if (same && v == s->u.bstore.value) return s;
        tir_stmt *n = tir_buffer_store(m->ctx, s->u.bstore.buffer, nd, idx, v);
        return n ? n : fail(m);
    }
    case TIR_STORE: {
        te_expr *i = tir_mutate_expr(m, s->u.store.index);
        te_expr *v = tir_mutate_expr(m, s->u.store.value);
        te_expr *p = tir_mutate_expr(m, s->u.store.predicate);
        if (m->failed) return NULL;
        if (i == s->u.store.index && v == s->u.store.value && p == s->u.store.predicate) return s;
        tir_stmt *n = clone(m, s);
        if (!n) return NULL;
        n->u.store.index = i;
        n->u.store.value = v;
        n->u.store.predicate = p;
        return n;
    }
    case TIR_IF: {
        te_expr *c = tir_mutate_expr(m, s->u.if_.cond);
        tir_stmt *t = tir_mutate(m, s->u.if_.then_s);
        tir_stmt *e = tir_mutate(m, s->u.if_.else_s);
        if (m->failed) return NULL;
        if (c == s->u.if_.cond && t == s->u.if_.then_s && e == s->u.if_.else_s) return s;
        tir_stmt *n = clone(m, s);
        if (!n) return NULL;
        n->u.if_.cond = c;
        n->u.if_.then_s = t;
        n->u.if_.else_s = e;
        return n;
    }
    case TIR_SEQ: {
        int n = s->u.seq.n;
        tir_stmt **kids = te_alloc(m->ctx, sizeof *kids * (size_t)(n > 0 ? n : 1));
        if (!kids) return fail(m);
        bool same = true;
        for (int i = 0; i < n && !m->failed; ++i) {
            kids[i] = tir_mutate(m, s->u.seq.stmts[i]);
            same &= kids[i] == s->u.seq.stmts[i];
        }
        if (m->failed) return NULL;
        if (same) return s;
        tir_stmt *r = tir_seq(m->ctx, n, kids);
        return r ? r : fail(m);
    }
    case TIR_TENSOR_CALL: {
        te_expr *a[TIR_TCALL_MAX_ARGS];
        bool same = true;
        for (int i = 0; i < s->u.tcall.nargs; ++i) {
            a[i] = tir_mutate_expr(m, s->u.tcall.args[i]);
            same &= a[i] == s->u.tcall.args[i];
        }
        if (m->failed) return NULL;
        if (same) return s;
        tir_stmt *n = clone(m, s);
        if (!n) return NULL;
        for (int i = 0; i < s->u.tcall.nargs; ++i) n->u.tcall.args[i] = a[i];
        return n;
    }
    default: {
        te_expr **pe;
        tir_stmt **pb;
        if (!slots(s, &pe, &pb)) return s;
        te_expr *v = pe ? tir_mutate_expr(m, *pe) : NULL;
        tir_stmt *body = NULL;
        if (pb && !m->failed) body = s->kind == TIR_LET ? let_body(m, s, v) : tir_mutate(m, *pb);
        if (m->failed) return NULL;
        if ((!pe || v == *pe) && (!pb || body == *pb)) return s;
        tir_stmt *n = clone(m, s);
        if (!n) return NULL;
        slots(n, &pe, &pb);
        if (pe) *pe = v;
        if (pb) *pb = body;
        return n;
    }
    }
}

tir_stmt *tir_mutate(tir_mutator *m, tir_stmt *s) {
    if (!s || m->failed) return NULL;
    tir_stmt *r = s;
    if (m->pre) {
        bool final = false;
        r = m->pre(m, s, &final);
        if (!r || m->failed) return fail(m);
        if (final) return r;
    }
    tir_mutate_fn fn = m->kind[r->kind];
    tir_stmt *k = fn ? fn(m, r) : tir_mutate_children(m, r);
    if (!k || m->failed) return fail(m);
    bool collapsed = r->kind == TIR_SEQ && k != r && k->kind != TIR_SEQ && k->kind != TIR_NOOP;
    if (m->post && !collapsed) {
        k = m->post(m, k);
        if (!k || m->failed) return fail(m);
    }
    return k;
}

/* ---- visitor ---- */

static int visit_e(tir_visitor *v, const te_expr *e) { return e && v->expr ? v->expr(v, e) : 0; }

int tir_visit_children(tir_visitor *v, const tir_stmt *s) {
    if (!s) return 0;
    int rc = 0;
    switch (s->kind) {
    case TIR_FOR: {
        if ((rc = visit_e(v, s->u.loop.min)) || (rc = visit_e(v, s->u.loop.extent))) return rc;
        const te_expr *var = s->u.loop.var;
        bool bound = v->an && tir_bind_loop(v->an, var, s->u.loop.min, s->u.loop.extent);
        rc = tir_visit(v, s->u.loop.body);
        if (bound) te_analyzer_unbind(v->an, var);
        return rc;
    }
    case TIR_BUFFER_STORE:
        for (int d = 0; d < s->u.bstore.ndim; ++d)
            if ((rc = visit_e(v, s->u.bstore.indices[d]))) return rc;
        return visit_e(v, s->u.bstore.value);
    case TIR_STORE:
        if ((rc = visit_e(v, s->u.store.index)) || (rc = visit_e(v, s->u.store.value))) return rc;
        return visit_e(v, s->u.store.predicate);
    case TIR_IF:
        if ((rc = visit_e(v, s->u.if_.cond)) || (rc = tir_visit(v, s->u.if_.then_s))) return rc;
        return tir_visit(v, s->u.if_.else_s);
    case TIR_SEQ:
        for (int i = 0; i < s->u.seq.n; ++i)
            if ((rc = tir_visit(v, s->u.seq.stmts[i]))) return rc;
        return 0;
    case TIR_TENSOR_CALL:
        for (int i = 0; i < s->u.tcall.nargs; ++i)
            if ((rc = visit_e(v, s->u.tcall.args[i]))) return rc;
        return 0;
    default: {
        te_expr **pe;
        tir_stmt **pb;
        if (!slots((tir_stmt *)s, &pe, &pb)) return 0; /* read only */
        if (pe && (rc = visit_e(v, *pe))) return rc;
        if (!pb) return 0;
        bool bound = s->kind == TIR_LET && v->an && bind_let(v->an, s->u.let.var, s->u.let.value);
        rc = tir_visit(v, *pb);
        if (bound) te_analyzer_unbind(v->an, s->u.let.var);
        return rc;
    }
    }
}

int tir_visit(tir_visitor *v, const tir_stmt *s) {
    if (!s) return 0;
    int rc = v->pre ? v->pre(v, s) : 0;
    if (rc == TIR_VISIT_SKIP) return 0;
    if (rc) return rc;
    tir_visit_fn fn = v->kind[s->kind];
    if ((rc = fn ? fn(v, s) : tir_visit_children(v, s))) return rc;
    return v->post ? v->post(v, s) : 0;
}

/* ---- the conveniences ---- */

typedef struct {
    tir_stmt_map_fn stmt_fn;
    te_expr_map_fn expr_fn;
    void *user;
} map_fns;

static tir_stmt *map_post(tir_mutator *m, tir_stmt *s) {
    map_fns *f = m->user;
    return f->stmt_fn(s, f->user);
}

static te_expr *map_expr(tir_mutator *m, te_expr *e) {
    map_fns *f = m->user;
    return f->expr_fn(e, f->user);
}

tir_stmt *tir_stmt_map(te_ctx *ctx, tir_stmt *s, tir_stmt_map_fn stmt_fn, te_expr_map_fn expr_fn,
                       void *user) {
    if (!ctx) return NULL;
    if (!s) return tir__null_operand(ctx, "stmt_map");
    map_fns f = {stmt_fn, expr_fn, user};
    tir_mutator m = {.ctx = ctx, .user = &f};
    if (stmt_fn) m.post = map_post;
    if (expr_fn) m.expr = map_expr;
    return tir_mutate(&m, s);
}

typedef struct {
    tir_stmt_visit_fn stmt_fn;
    te_expr_visit_fn expr_fn;
    void *user;
} visit_fns;

static int visit_pre(tir_visitor *v, const tir_stmt *s) {
    visit_fns *f = v->user;
    f->stmt_fn(s, f->user);
    return 0;
}

static int visit_expr(tir_visitor *v, const te_expr *e) {
    visit_fns *f = v->user;
    f->expr_fn(e, f->user);
    return 0;
}

void tir_stmt_visit(const tir_stmt *s, tir_stmt_visit_fn stmt_fn, te_expr_visit_fn expr_fn,
                    void *user) {
    visit_fns f = {stmt_fn, expr_fn, user};
    tir_visitor v = {.user = &f};
    if (stmt_fn) v.pre = visit_pre;
    if (expr_fn) v.expr = visit_expr;
    tir_visit(&v, s);
}

/* ---- substitute ---- */

typedef struct {
    te_ctx *ctx;
    int n;
    te_expr *const *vars, *const *values;
} subst;

static te_expr *subst_expr(te_expr *e, void *user) {
    subst *s = user;
    return te_substitute(s->ctx, e, s->n, s->vars, s->values);
}

tir_stmt *tir_stmt_substitute(te_ctx *ctx, tir_stmt *s, int n, te_expr *const *vars,
                              te_expr *const *values) {
    if (!ctx) return NULL;
    if (!s || (n > 0 && (!vars || !values))) return tir__null_operand(ctx, "stmt_substitute");
    if (n <= 0) return s;
    subst su = {ctx, n, vars, values};
    return tir_stmt_map(ctx, s, NULL, subst_expr, &su);
}

/* ---- deep expression rewrite and buffer queries ---- */

typedef struct {
    te_ctx *ctx;
    te_expr_map_fn fn;
    void *user;
} rewriter;

static te_expr *rewrite_node(te_expr *e, void *user) {
    rewriter *r = user;
    te_expr *m = te_expr_map_children(r->ctx, e, rewrite_node, user);
    return m ? r->fn(m, r->user) : NULL;
}

te_expr *tir__expr_rewrite(te_ctx *ctx, te_expr *e, te_expr_map_fn fn, void *user) {
    if (!e) return NULL;
    rewriter r = {ctx, fn, user};
    return rewrite_node(e, &r);
}

typedef struct {
    const tir_buffer *b;
    bool found;
} buf_query;

static void expr_uses_cb(const te_expr *e, void *user) {
    buf_query *q = user;
    if (q->found || !e) return;
    if ((e->kind == TE_LOAD && e->u.load.buffer == q->b) ||
        (e->kind == TE_BUFFER_LOAD && e->u.bload.buffer == q->b) ||
        (q->b->data && e == q->b->data)) {
        q->found = true;
        return;
    }
    te_expr_visit_children(e, expr_uses_cb, user);
}

bool tir__expr_uses_buffer(const te_expr *e, const tir_buffer *b) {
    buf_query q = {b, false};
    expr_uses_cb(e, &q);
    return q.found;
}

static void stmt_uses_cb(const tir_stmt *s, void *user) {
    buf_query *q = user;
    if ((s->kind == TIR_STORE && s->u.store.buffer == q->b) ||
        (s->kind == TIR_BUFFER_STORE && s->u.bstore.buffer == q->b) ||
        (s->kind == TIR_ALLOCATE && s->u.alloc.buffer == q->b))
        q->found = true;
}

bool tir__stmt_uses_buffer(const tir_stmt *s, const tir_buffer *b) {
    buf_query q = {b, false};
    tir_stmt_visit(s, stmt_uses_cb, expr_uses_cb, &q);
    return q.found;
}

typedef struct {
    te_ctx *ctx;
    const tir_buffer *from;
    tir_buffer *to;
} buf_swap;

static te_expr *swap_expr_node(te_expr *e, void *user) {
    buf_swap *w = user;
    if (e == w->from->data) return w->to->data;
    if (e->kind == TE_LOAD && e->u.load.buffer == w->from) {
        te_expr *n = te_alloc(w->ctx, sizeof *n);
        if (!n) return NULL;
        *n = *e;
        n->u.load.buffer = w->to;
        n->dtype = te_dtype_with_lanes(w->to->dtype, e->dtype.lanes);
        return n;
    }
    if (e->kind == TE_BUFFER_LOAD && e->u.bload.buffer == w->from)
        return tir_buffer_load(w->to, e->u.bload.ndim, e->u.bload.indices);
    return e;
}

static te_expr *swap_expr(te_expr *e, void *user) {
    buf_swap *w = user;
    return tir__expr_rewrite(w->ctx, e, swap_expr_node, user);
}

static tir_stmt *swap_stmt(tir_stmt *s, void *user) {
    buf_swap *w = user;
    if (s->kind == TIR_STORE && s->u.store.buffer == w->from) {
        tir_stmt *n = tir__new_stmt(w->ctx, TIR_STORE);
        if (!n) return NULL;
        *n = *s;
        n->u.store.buffer = w->to;
        return n;
    }
    if (s->kind == TIR_BUFFER_STORE && s->u.bstore.buffer == w->from)
        return tir_buffer_store(w->ctx, w->to, s->u.bstore.ndim, s->u.bstore.indices,
                                s->u.bstore.value);
    if (s->kind == TIR_ALLOCATE && s->u.alloc.buffer == w->from)
        return tir_allocate(w->ctx, w->to, s->u.alloc.body);
    return s;
}

tir_stmt *tir__replace_buffer(te_ctx *ctx, tir_stmt *s, const tir_buffer *from, tir_buffer *to) {
    if (from == to) return s;
    buf_swap w = {ctx, from, to};
    return tir_stmt_map(ctx, s, swap_stmt, swap_expr, &w);
}

static tir_stmt *devec(tir_stmt *s, void *user) {
    te_ctx *ctx = user;
    if (s->kind != TIR_FOR || s->u.loop.for_kind != TIR_FOR_VECTORIZED) return s;
    tir_stmt *n = tir_for_with_body(ctx, s, s->u.loop.body);
    if (n) n->u.loop.for_kind = TIR_FOR_SERIAL;
    return n;
}

tir_stmt *tir__devectorize(te_ctx *ctx, tir_stmt *s) { return tir_stmt_map(ctx, s, devec, NULL, ctx); }

tir_func *tir_pass_devectorize(te_ctx *ctx, const tir_func *f) {
    if (!ctx) return NULL;
    if (!f || !f->body) return tir__null_operand(ctx, "devectorize");
    tir_stmt *body = tir__devectorize(ctx, f->body);
    return body ? tir_func_with_body(ctx, f, body) : NULL;
}
