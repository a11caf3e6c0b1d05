/*
 * tir/traverse.c — the one generic statement traversal (map, visit,
 * substitute) that every pass builds on, plus small buffer queries.
 */
#include <string.h>

#include "tir/tir_internal.h"

typedef struct {
    te_ctx *ctx;
    tir_stmt_map_fn stmt_fn;
    te_expr_map_fn expr_fn;
    void *user;
    bool failed;
} mapper;

static te_expr *map_e(mapper *m, te_expr *e) {
    if (!e || !m->expr_fn || m->failed) return e;
    te_expr *r = m->expr_fn(e, m->user);
    if (!r) m->failed = true;
    return r;
}

static tir_stmt *map_s(mapper *m, tir_stmt *s);

/* A copy of s in the arena (fields replaced by the caller). */
static tir_stmt *clone(mapper *m, const tir_stmt *s) {
    tir_stmt *n = tir__new_stmt(m->ctx, s->kind);
    if (!n) {
        m->failed = true;
        return NULL;
    }
    *n = *s;
    return n;
}

static tir_stmt *rebuild(mapper *m, tir_stmt *s) {
    switch (s->kind) {
    case TIR_FOR: {
        te_expr *mn = map_e(m, s->u.loop.min), *ext = map_e(m, s->u.loop.extent);
        tir_stmt *body = map_s(m, s->u.loop.body);
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
            idx[d] = map_e(m, s->u.bstore.indices[d]);
            same &= idx[d] == s->u.bstore.indices[d];
        }
        te_expr *v = map_e(m, s->u.bstore.value);
        if (m->failed) return NULL;
        if (same && v == s->u.bstore.value) return s;
        tir_stmt *n = tir_buffer_store(m->ctx, s->u.bstore.buffer, nd, idx, v);
        if (!n) m->failed = true;
        return n;
    }
    case TIR_STORE: {
        te_expr *i = map_e(m, s->u.store.index), *v = map_e(m, s->u.store.value);
        te_expr *p = map_e(m, s->u.store.predicate);
        if (m->failed) return NULL;
        if (i == s->u.store.index && v == s->u.store.value && p == s->u.store.predicate) return s;
        tir_stmt *n = clone(m, s);
        if (!n) return NULL;
        n->u.store.index = i;
        n->u.store.value = v;
        n->u.store.predicate = p;
        return n;
    }
    case TIR_ALLOCATE: {
        tir_stmt *body = map_s(m, s->u.alloc.body);
        if (m->failed) return NULL;
        if (body == s->u.alloc.body) return s;
        tir_stmt *n = clone(m, s);
        if (n) n->u.alloc.body = body;
        return n;
    }
    case TIR_IF: {
        te_expr *c = map_e(m, s->u.if_.cond);
        tir_stmt *t = map_s(m, s->u.if_.then_s);
        tir_stmt *e = s->u.if_.else_s ? map_s(m, s->u.if_.else_s) : NULL;
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
        if (!kids) {
            m->failed = true;
            return NULL;
        }
        bool same = true;
        for (int i = 0; i < n && !m->failed; ++i) {
            kids[i] = map_s(m, s->u.seq.stmts[i]);
            same &= kids[i] == s->u.seq.stmts[i];
        }
        if (m->failed) return NULL;
        if (same) return s;
        tir_stmt *r = tir_seq(m->ctx, n, kids);
        if (!r) m->failed = true;
        return r;
    }
    case TIR_EVALUATE: {
        te_expr *v = map_e(m, s->u.eval.value);
        if (m->failed) return NULL;
        if (v == s->u.eval.value) return s;
        tir_stmt *n = clone(m, s);
        if (n) n->u.eval.value = v;
        return n;
    }
    case TIR_ALLREDUCE: {
        te_expr *v = map_e(m, s->u.allreduce.value);
        tir_stmt *body = map_s(m, s->u.allreduce.body);
        if (m->failed) return NULL;
        if (v == s->u.allreduce.value && body == s->u.allreduce.body) return s;
        tir_stmt *n = clone(m, s);
        if (!n) return NULL;
        n->u.allreduce.value = v;
        n->u.allreduce.body = body;
        return n;
    }
    default: return s; /* BARRIER, NOOP: nothing inside */
    }
}

static tir_stmt *map_s(mapper *m, tir_stmt *s) {
    if (!s || m->failed) return s;
    tir_stmt *r = rebuild(m, s);
    if (!r || m->failed) {
        m->failed = true;
        return NULL;
    }
    /* A SEQ that collapsed to one (already mapped) statement is not
     * handed to stmt_fn a second time. */
    bool collapsed = s->kind == TIR_SEQ && r != s && r->kind != TIR_SEQ && r->kind != TIR_NOOP;
    if (m->stmt_fn && !collapsed) {
        r = m->stmt_fn(r, m->user);
        if (!r) m->failed = true;
    }
    return r;
}

tir_stmt *tir_stmt_map(te_ctx *ctx, tir_stmt *s, tir_stmt_map_fn stmt_fn, te_expr_map_fn expr_fn,
                       void *user) {
    if (!ctx) return NULL;
    if (!s) return tir__null_operand(ctx, "stmt_map");
    mapper m = {ctx, stmt_fn, expr_fn, user, false};
    tir_stmt *r = map_s(&m, s);
    return m.failed ? NULL : r;
}

/* ---- visit ---- */

static void visit_e(const te_expr *e, te_expr_visit_fn fn, void *user) {
    if (e && fn) fn(e, user);
}

void tir_stmt_visit(const tir_stmt *s, tir_stmt_visit_fn stmt_fn, te_expr_visit_fn expr_fn,
                    void *user) {
    if (!s) return;
    if (stmt_fn) stmt_fn(s, user);
    switch (s->kind) {
    case TIR_FOR:
        visit_e(s->u.loop.min, expr_fn, user);
        visit_e(s->u.loop.extent, expr_fn, user);
        tir_stmt_visit(s->u.loop.body, stmt_fn, expr_fn, user);
        return;
    case TIR_BUFFER_STORE:
        for (int d = 0; d < s->u.bstore.ndim; ++d) visit_e(s->u.bstore.indices[d], expr_fn, user);
        visit_e(s->u.bstore.value, expr_fn, user);
        return;
    case TIR_STORE:
        visit_e(s->u.store.index, expr_fn, user);
        visit_e(s->u.store.value, expr_fn, user);
        visit_e(s->u.store.predicate, expr_fn, user);
        return;
    case TIR_ALLOCATE: tir_stmt_visit(s->u.alloc.body, stmt_fn, expr_fn, user); return;
    case TIR_IF:
        visit_e(s->u.if_.cond, expr_fn, user);
        tir_stmt_visit(s->u.if_.then_s, stmt_fn, expr_fn, user);
        tir_stmt_visit(s->u.if_.else_s, stmt_fn, expr_fn, user);
        return;
    case TIR_SEQ:
        for (int i = 0; i < s->u.seq.n; ++i) tir_stmt_visit(s->u.seq.stmts[i], stmt_fn, expr_fn, user);
        return;
    case TIR_EVALUATE: visit_e(s->u.eval.value, expr_fn, user); return;
    case TIR_ALLREDUCE:
        visit_e(s->u.allreduce.value, expr_fn, user);
        tir_stmt_visit(s->u.allreduce.body, stmt_fn, expr_fn, user);
        return;
    default: return;
    }
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
