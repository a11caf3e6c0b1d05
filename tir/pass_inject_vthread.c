/*
 * tir/pass_inject_vthread.c — virtual threads (TVM InjectVirtualThread).
 *
 * A loop bound to "vthread" of extent n runs its body as n independent
 * logical threads inside one real thread. The pass removes the loop:
 *  1. Buffers allocated inside the loop whose contents depend on the
 *     vthread index (a store whose index, value, guard or enclosing loop
 *     bounds use the index or load a buffer that already depends on it;
 *     found by a fixed point) get one private copy per vthread: the
 *     buffer becomes n times larger and every access adds vt * size.
 *  2. The loop is pushed down: a statement that does not use the index
 *     (cooperative shared-memory loads, barriers) runs once; loops and
 *     ifs that do not depend on it are kept and the loop moves inside
 *     them; the remaining leaves are replicated n times with the index
 *     replaced by 0..n-1.
 * So `for vt { for k { C[vt] += A[k, vt] } }` becomes
 * `for k { C[0] += A[k, 0]; C[1] += A[k, 1] }`: independent accumulators
 * interleaved in one thread (instruction-level parallelism, and strided
 * access patterns for the real threads that avoid bank conflicts).
 * Run after storage_flatten (flat indices) and before unroll.
 */
#include <string.h>

#include "tir/tir_internal.h"

#define VT_MAX_BUFS 128

typedef struct {
    te_ctx *ctx;
    const te_expr *v;
    int64_t n;
    int nalloc;
    tir_buffer *alloc[VT_MAX_BUFS];   /* allocated inside the vthread loop */
    bool touched[VT_MAX_BUFS];
    tir_buffer *expanded[VT_MAX_BUFS];
    bool changed;
} vt_state;

static int alloc_index(const vt_state *st, const tir_buffer *b) {
    for (int i = 0; i < st->nalloc; i++)
        if (st->alloc[i] == b) return i;
    return -1;
}

static void collect_allocs(const tir_stmt *s, void *user) {
    vt_state *st = user;
    if (s->kind == TIR_ALLOCATE && st->nalloc < VT_MAX_BUFS) st->alloc[st->nalloc++] = s->u.alloc.buffer;
}

/* ---- dependence on the vthread index ---- */

typedef struct {
    const vt_state *st;
    bool dep;
} dep_q;

static void dep_visit(const te_expr *e, void *user) {
    dep_q *q = user;
    if (q->dep || !e) return;
    if (e->kind == TE_VAR && e == q->st->v) q->dep = true;
    else if (e->kind == TE_LOAD) {
        int k = alloc_index(q->st, e->u.load.buffer);
        if (k >= 0 && q->st->touched[k]) q->dep = true;
    }
    if (!q->dep) te_expr_visit_children(e, dep_visit, user);
}

static bool depends(const vt_state *st, const te_expr *e) {
    if (!e) return false;
    dep_q q = {st, false};
    dep_visit(e, &q);
    return q.dep;
}

/* Marks buffers stored under a dependent context: dep says whether an
 * enclosing loop bound, condition or reduced value depends on the index. */
typedef struct {
    vt_state *st;
    bool dep;
} marker;

/* The statements under s, in a dependent context when dep. */
static int mark_under(tir_visitor *w, const tir_stmt *s, bool dep) {
    marker *mk = w->user;
    bool saved = mk->dep;
    mk->dep = saved || dep;
    int rc = tir_visit_children(w, s);
    mk->dep = saved;
    return rc;
}

static int mark_loop(tir_visitor *w, const tir_stmt *s) {
    marker *mk = w->user;
    return mark_under(w, s, depends(mk->st, s->u.loop.min) || depends(mk->st, s->u.loop.extent));
}

static int mark_if(tir_visitor *w, const tir_stmt *s) {
    marker *mk = w->user;
    return mark_under(w, s, depends(mk->st, s->u.if_.cond));
}

static int mark_allreduce(tir_visitor *w, const tir_stmt *s) {
    marker *mk = w->user;
    return mark_under(w, s, depends(mk->st, s->u.allreduce.value));
}

/* A LET of a dependent value: whatever its variable reaches depends. */
static int mark_let(tir_visitor *w, const tir_stmt *s) {
    marker *mk = w->user;
    return mark_under(w, s, depends(mk->st, s->u.let.value));
}

static int mark_store(tir_visitor *w, const tir_stmt *s) {
    marker *mk = w->user;
    vt_state *st = mk->st;
    int k = alloc_index(st, s->u.store.buffer);
    if (k < 0 || st->touched[k]) return 0;
    if (mk->dep || depends(st, s->u.store.index) || depends(st, s->u.store.value) ||
        depends(st, s->u.store.predicate)) {
        st->touched[k] = true;
        st->changed = true;
    }
    return 0;
}

static void mark(vt_state *st, const tir_stmt *s) {
    marker mk = {st, false};
    tir_visitor w = {
        .user = &mk,
        .kind = {
            [TIR_FOR] = mark_loop,
            [TIR_IF] = mark_if,
            [TIR_ALLREDUCE] = mark_allreduce,
            [TIR_LET] = mark_let,
            [TIR_STORE] = mark_store,
        },
    };
    tir_visit(&w, s);
}

/* ---- expansion of touched buffers ---- */

static te_expr *offset_index(vt_state *st, te_expr *idx, int64_t size) {
    te_expr *off = te_mul((te_expr *)st->v, te_int(st->ctx, size));
    if (idx->kind == TE_RAMP)
        return tir_ramp(te_add(idx->u.ramp.base, off), idx->u.ramp.stride, idx->u.ramp.lanes);
    return te_add(idx, off);
}

static te_expr *expand_load(te_expr *e, void *user) {
    vt_state *st = user;
    if (e->kind != TE_LOAD) return e;
    int k = alloc_index(st, e->u.load.buffer);
    if (k < 0 || !st->expanded[k]) return e;
    return tir_load(st->ctx, st->expanded[k],
                    offset_index(st, e->u.load.index, tir_buffer_size(st->alloc[k])),
                    e->u.load.predicate);
}

static te_expr *expand_expr(te_expr *e, void *user) {
    vt_state *st = user;
    return tir__expr_rewrite(st->ctx, e, expand_load, st);
}

static tir_stmt *expand_stmt(tir_stmt *s, void *user) {
    vt_state *st = user;
    if (s->kind == TIR_STORE) {
        int k = alloc_index(st, s->u.store.buffer);
        if (k < 0 || !st->expanded[k]) return s;
        return tir_store(st->ctx, st->expanded[k],
                         offset_index(st, s->u.store.index, tir_buffer_size(st->alloc[k])),
                         s->u.store.value, s->u.store.predicate);
    }
    if (s->kind == TIR_ALLOCATE) {
        int k = alloc_index(st, s->u.alloc.buffer);
        if (k < 0 || !st->expanded[k]) return s;
        return tir_allocate(st->ctx, st->expanded[k], s->u.alloc.body);
    }
    return s;
}

/* ---- pushing the loop down ---- */

typedef struct {
    const te_expr *v;
    bool found;
} use_q;

static void use_expr(const te_expr *e, void *user) {
    use_q *q = user;
    if (!q->found && e && te_expr_uses_var(e, q->v)) q->found = true;
}

static bool stmt_uses(const tir_stmt *s, const te_expr *v) {
    use_q q = {v, false};
    tir_stmt_visit(s, NULL, use_expr, &q);
    return q.found;
}

/* n copies of s, the index replaced by 0..n-1. */
static tir_stmt *replicate(tir_mutator *m, tir_stmt *s) {
    vt_state *st = m->user;
    tir_stmt *copies[1024];
    int n = (int)st->n;
    for (int i = 0; i < n; i++) {
        te_expr *val = te_int(st->ctx, i);
        copies[i] = tir_stmt_substitute(st->ctx, s, 1, (te_expr *const *)&st->v, &val);
        if (!copies[i]) return NULL;
    }
    return tir_seq(st->ctx, n, copies);
}

/* The push-down walk: what does not use the index stays as it is (once);
 * loops, ifs and lets whose header does not use it take the vthread loop
 * inside; statements with a case here are replicated; the others (SEQ,
 * ALLOCATE, ATTR) push into their children by default. */
static tir_stmt *push_pre(tir_mutator *m, tir_stmt *s, bool *final) {
    vt_state *st = m->user;
    *final = !stmt_uses(s, st->v);
    return s;
}

static tir_stmt *push_loop(tir_mutator *m, tir_stmt *s) {
    vt_state *st = m->user;
    if (te_expr_uses_var(s->u.loop.min, st->v) || te_expr_uses_var(s->u.loop.extent, st->v))
        return replicate(m, s);
    return tir_mutate_children(m, s);
}

static tir_stmt *push_if(tir_mutator *m, tir_stmt *s) {
    vt_state *st = m->user;
    if (te_expr_uses_var(s->u.if_.cond, st->v)) return replicate(m, s);
    return tir_mutate_children(m, s);
}

static tir_stmt *push_let(tir_mutator *m, tir_stmt *s) {
    vt_state *st = m->user;
    if (te_expr_uses_var(s->u.let.value, st->v)) return replicate(m, s);
    return tir_mutate_children(m, s);
}

static tir_stmt *push(vt_state *st, tir_stmt *s) {
    tir_mutator m = {
        .ctx = st->ctx,
        .user = st,
        .pre = push_pre,
        .kind = {
            [TIR_FOR] = push_loop,
            [TIR_IF] = push_if,
            [TIR_LET] = push_let,
            [TIR_STORE] = replicate,
            [TIR_BUFFER_STORE] = replicate,
            [TIR_EVALUATE] = replicate,
            [TIR_BARRIER] = replicate,
            [TIR_ALLREDUCE] = replicate,
        },
    };
    return tir_mutate(&m, s);
}

static tir_stmt *inject(te_ctx *ctx, const tir_stmt *loop) {
    int64_t n;
    if (!te_is_const_int(loop->u.loop.extent, &n) || n < 1 || n > 1024) {
        te_error(ctx,
                 "inject_vthread: vthread loop '%s' must have a constant extent in [1, 1024] "
                 "(has %s)",
                 loop->u.loop.var->u.var.name, te_expr_str(ctx, loop->u.loop.extent));
        return NULL;
    }
    vt_state st;
    memset(&st, 0, sizeof st);
    st.ctx = ctx;
    st.v = loop->u.loop.var;
    st.n = n;
    tir_stmt *body = loop->u.loop.body;
    if (!te_is_const_int(loop->u.loop.min, &(int64_t){0}) || loop->u.loop.min->u.ival != 0) {
        te_expr *var = loop->u.loop.var, *val = te_add(var, loop->u.loop.min);
        body = tir_stmt_substitute(ctx, body, 1, &var, &val);
        if (!body) return NULL;
    }
    tir_stmt_visit(body, collect_allocs, NULL, &st);
    if (st.nalloc >= VT_MAX_BUFS) {
        te_error(ctx, "inject_vthread: more than %d allocations inside vthread loop '%s'",
                 VT_MAX_BUFS, st.v->u.var.name);
        return NULL;
    }
    do {
        st.changed = false;
        mark(&st, body);
    } while (st.changed);
    bool any = false;
    for (int k = 0; k < st.nalloc; k++) {
        if (!st.touched[k]) continue;
        const tir_buffer *b = st.alloc[k];
        int64_t size = tir_buffer_size(b) * n;
        tir_buffer *nb = tir_buffer_new(ctx, b->name, b->dtype, 1, &size, b->scope);
        if (!nb) return NULL;
        nb->swizzle = b->swizzle;
        st.expanded[k] = nb;
        any = true;
    }
    if (any && !(body = tir_stmt_map(ctx, body, expand_stmt, expand_expr, &st))) return NULL;
    return push(&st, body);
}

static tir_stmt *inject_fn(tir_stmt *s, void *user) {
    te_ctx *ctx = user;
    if (s->kind == TIR_FOR && s->u.loop.thread_tag && !strcmp(s->u.loop.thread_tag, "vthread"))
        return inject(ctx, s);
    return s;
}

tir_func *tir_pass_inject_vthread(te_ctx *ctx, const tir_func *f) {
    if (!ctx) return NULL;
    if (!f || !f->body) return tir__null_operand(ctx, "inject_vthread");
    tir_stmt *body = tir_stmt_map(ctx, f->body, inject_fn, NULL, ctx);
    return body ? tir_func_with_body(ctx, f, body) : NULL;
}
