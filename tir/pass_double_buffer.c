/*
 * tir/pass_double_buffer.c — double buffering (TVM InjectDoubleBuffer;
 * a two-stage software pipeline).
 *
 * A stage marked double_buffer is copied into its buffer B inside a
 * serial loop `for k in [m, m + n)`:
 *
 *   for k { allocate B { attr double_buffer { copy(k) into B }; compute(k) reads B } }
 *
 * becomes, with B' twice B's size and half h(k) = (k - m) mod 2:
 *
 *   allocate B' {
 *     attr cuda.async_copy { copy(m) into B'[half 0] }; attr cuda.async_commit
 *     for k {
 *       if (k + 1 < m + n) attr cuda.async_copy { copy(k + 1) into B'[h(k + 1)] }
 *       attr cuda.async_commit; attr cuda.async_wait 1     (all but the newest group done)
 *       compute(k) reading B'[h(k)]
 *     }
 *   }
 *
 * so the copy of the next chunk is in flight (cp.async on the GPU) while
 * this one is computed. thread_sync, which runs after, puts a barrier
 * before compute (the copy of k must be visible) and one at the top of the
 * loop (the copy of k + 1 overwrites the half that compute(k - 1) read).
 * A double_buffer copy found anywhere else is an error naming its buffer.
 */
#include <string.h>

#include "tir/tir_internal.h"

#define DB_MAX 8

typedef struct {
    te_ctx *ctx;
    int nb;
    const tir_buffer *from[DB_MAX];
    tir_buffer *to[DB_MAX];
    te_expr *off[DB_MAX]; /* element offset of the half in use */
} remap;

static int find(const remap *r, const tir_buffer *b) {
    for (int i = 0; i < r->nb; i++)
        if (r->from[i] == b) return i;
    return -1;
}

static te_expr *shifted(te_ctx *ctx, te_expr *index, te_expr *off) {
    if (index->kind == TE_RAMP)
        return tir_ramp(te_add(index->u.ramp.base, off), index->u.ramp.stride,
                        index->u.ramp.lanes);
    return te_add(index, off);
}

static te_expr *remap_load(te_expr *e, void *user) {
    remap *r = user;
    if (e->kind != TE_LOAD) return e;
    int i = find(r, e->u.load.buffer);
    if (i < 0) return e;
    return tir_load(r->ctx, r->to[i], shifted(r->ctx, e->u.load.index, r->off[i]),
                    e->u.load.predicate);
}

static te_expr *remap_expr(tir_mutator *m, te_expr *e) {
    return tir__expr_rewrite(m->ctx, e, remap_load, m->user);
}

static tir_stmt *remap_store(tir_mutator *m, tir_stmt *s) {
    remap *r = m->user;
    tir_stmt *n = tir_mutate_children(m, s);
    if (!n) return NULL;
    int i = find(r, n->u.store.buffer);
    if (i < 0) return n;
    return tir_store(m->ctx, r->to[i], shifted(m->ctx, n->u.store.index, r->off[i]),
                     n->u.store.value, n->u.store.predicate);
}

/* s with every access of the remapped buffers moved into their halves. */
static tir_stmt *apply_remap(remap *r, tir_stmt *s) {
    tir_mutator m = {.ctx = r->ctx, .user = r, .expr = remap_expr};
    m.kind[TIR_STORE] = remap_store;
    return tir_mutate(&m, s);
}

/* The one buffer the copy nest c stores to, or NULL (error set). */
typedef struct {
    const tir_buffer *b;
    bool many;
} store_q;

static void store_cb(const tir_stmt *s, void *user) {
    store_q *q = user;
    if (s->kind != TIR_STORE) return;
    if (q->b && q->b != s->u.store.buffer) q->many = true;
    q->b = s->u.store.buffer;
}

static bool is_db(const tir_stmt *s) {
    return s && s->kind == TIR_ATTR && !strcmp(s->u.attr.key, TIR_ATTR_DOUBLE_BUFFER);
}

static tir_stmt *mark(te_ctx *ctx, const char *key, int64_t v, bool has_v) {
    return tir_attr(ctx, key, has_v ? te_int(ctx, v) : NULL, tir_noop(ctx));
}

/* Loop s, when its body holds double-buffered copies; else s. */
static tir_stmt *pipeline(te_ctx *ctx, tir_stmt *s) {
    /* the allocations the body opens with, then its statements */
    tir_stmt *allocs[DB_MAX * 2];
    int na = 0;
    tir_stmt *b = s->u.loop.body;
    while (b->kind == TIR_ALLOCATE && na < DB_MAX * 2) {
        allocs[na++] = b;
        b = b->u.alloc.body;
    }
    int n = b->kind == TIR_SEQ ? b->u.seq.n : 1;
    tir_stmt *const *st = b->kind == TIR_SEQ ? b->u.seq.stmts : &b;
    int ncopy = 0;
    while (ncopy < n && is_db(st[ncopy])) ncopy++;
    if (ncopy == 0) return s;
    te_expr *k = s->u.loop.var, *mn = s->u.loop.min, *end = te_add(mn, s->u.loop.extent);
    if (s->u.loop.for_kind != TIR_FOR_SERIAL) {
        te_error(ctx, "double_buffer: the loop '%s' that the copies are computed at is %s; it must "
                      "be serial",
                 k->u.var.name, tir_for_kind_name(s->u.loop.for_kind));
        return NULL;
    }
    remap cur = {ctx, 0, {0}, {0}, {0}}, next = cur, first = cur;
    te_expr *two = te_int(ctx, 2);
    te_expr *k1 = te_add(k, te_int(ctx, 1));
    te_expr *h = te_floormod(te_sub(k, mn), two), *h1 = te_floormod(te_sub(k1, mn), two);
    bool *db_alloc = te_alloc(ctx, sizeof(bool) * (size_t)(na ? na : 1));
    if (!db_alloc) return NULL;
    memset(db_alloc, 0, sizeof(bool) * (size_t)(na ? na : 1));
    for (int c = 0; c < ncopy; c++) {
        store_q q = {0};
        tir_stmt_visit(st[c]->u.attr.body, store_cb, NULL, &q);
        int a = -1;
        for (int i = 0; i < na; i++)
            if (q.b && allocs[i]->u.alloc.buffer == q.b) a = i;
        if (!q.b || q.many || a < 0 || find(&cur, q.b) >= 0 || cur.nb == DB_MAX) {
            te_error(ctx, "double_buffer: the copy at loop '%s' must store to one buffer allocated "
                          "in that loop's body (it stores to '%s'%s)",
                     k->u.var.name, q.b ? q.b->name : "nothing", q.many ? " and others" : "");
            return NULL;
        }
        db_alloc[a] = true;
        int64_t size = tir_buffer_size(q.b), twice = 2 * size;
        tir_buffer *nb = tir_buffer_new(ctx, q.b->name, q.b->dtype, 1, &twice, q.b->scope);
        if (!nb) return NULL;
        te_expr *sz = te_int(ctx, size);
        cur.from[cur.nb] = next.from[next.nb] = first.from[first.nb] = q.b;
        cur.to[cur.nb] = next.to[next.nb] = first.to[first.nb] = nb;
        cur.off[cur.nb++] = te_mul(h, sz);
        next.off[next.nb++] = te_mul(h1, sz);
        first.off[first.nb++] = te_int(ctx, 0);
    }
    /* prologue: chunk m into half 0 */
    tir_stmt **pro = te_alloc(ctx, sizeof(tir_stmt *) * (size_t)(ncopy + 1));
    tir_stmt **in = te_alloc(ctx, sizeof(tir_stmt *) * (size_t)(ncopy + 3 + n));
    if (!pro || !in) return NULL;
    int np = 0, ni = 0;
    for (int c = 0; c < ncopy; c++) {
        tir_stmt *body = st[c]->u.attr.body;
        tir_stmt *p0 = tir_stmt_substitute(ctx, body, 1, &k, &mn);
        tir_stmt *p1 = tir_stmt_substitute(ctx, body, 1, &k, &k1);
        if (!p0 || !p1 || !(p0 = apply_remap(&first, p0)) || !(p1 = apply_remap(&next, p1)))
            return NULL;
        pro[np++] = tir_attr(ctx, TIR_ATTR_ASYNC_COPY, NULL, p0);
        in[ni++] = tir_attr(ctx, TIR_ATTR_ASYNC_COPY, NULL, p1);
    }
    pro[np++] = mark(ctx, TIR_ATTR_ASYNC_COMMIT, 0, false);
    tir_stmt *copies = tir_seq(ctx, ni, in);
    ni = 0;
    in[ni++] = tir_if(ctx, te_lt(k1, end), copies, NULL);
    in[ni++] = mark(ctx, TIR_ATTR_ASYNC_COMMIT, 0, false);
    in[ni++] = mark(ctx, TIR_ATTR_ASYNC_WAIT, 1, true);
    for (int i = ncopy; i < n; i++) {
        tir_stmt *x = apply_remap(&cur, st[i]);
        if (!x) return NULL;
        in[ni++] = x;
    }
    tir_stmt *body = tir_seq(ctx, ni, in);
    /* allocations not double-buffered stay in the loop */
    for (int i = na - 1; i >= 0 && body; i--)
        if (!db_alloc[i]) body = tir_allocate(ctx, allocs[i]->u.alloc.buffer, body);
    tir_stmt *loop = body ? tir_for_with_body(ctx, s, body) : NULL;
    if (!loop) return NULL;
    tir_stmt *out = tir_seq(ctx, 2, (tir_stmt *[]){tir_seq(ctx, np, pro), loop});
    for (int i = cur.nb - 1; i >= 0 && out; i--) out = tir_allocate(ctx, cur.to[i], out);
    return out;
}

/* Loops before their bodies: a copy is recognised where its loop opens. */
static tir_stmt *pre(tir_mutator *m, tir_stmt *s, bool *final) {
    (void)final;
    return s->kind == TIR_FOR ? pipeline(m->ctx, s) : s;
}

/* Any mark left was not where pre could take it. */
static tir_stmt *post(tir_mutator *m, tir_stmt *s) {
    if (is_db(s)) {
        store_q q = {0};
        tir_stmt_visit(s->u.attr.body, store_cb, NULL, &q);
        te_error(m->ctx,
                 "double_buffer: the copy into '%s' is not at the start of the body of the loop it "
                 "is computed at (a stage computed at a serial loop, its buffer allocated there)",
                 q.b ? q.b->name : "?");
        return NULL;
    }
    return s;
}

tir_func *tir_pass_double_buffer(te_ctx *ctx, const tir_func *f) {
    if (!ctx) return NULL;
    if (!f) return tir__null_operand(ctx, "double_buffer");
    tir_mutator m = {.ctx = ctx, .pre = pre, .post = post};
    tir_stmt *body = tir_mutate(&m, f->body);
    if (!body) return NULL;
    if (body == f->body) return (tir_func *)f;
    return tir_func_with_body(ctx, f, body);
}
