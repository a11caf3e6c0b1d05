/*
 * tir/pass_double_buffer.c — software pipelining of staged copies (TVM
 * InjectDoubleBuffer for two stages; CUTLASS's and Triton's multi-stage
 * pipelines for more).
 *
 * A stage marked double_buffer with S buffers (S >= 2) is copied into its
 * buffer B inside a serial loop `for k in [m, m + n)`:
 *
 *   for k { allocate B { attr double_buffer S { copy(k) into B }; compute(k) reads B } }
 *
 * becomes, with B' S times B's size and slot s(k) = (k - m) mod S:
 *
 *   allocate B' {
 *     for p in 0 .. S-2: { attr cuda.async_copy { copy(m + p) into B'[slot p] };
 *                          attr cuda.async_commit }       (copies past the loop's end left out)
 *     for k {
 *       if (k + S-1 < m + n) attr cuda.async_copy { copy(k + S-1) into B'[s(k + S-1)] }
 *       attr cuda.async_commit; attr cuda.async_wait S-1  (all but the newest S-1 groups done)
 *       compute(k) reading B'[s(k)]
 *     }
 *   }
 *
 * so the copies of the next S-1 chunks are in flight (cp.async on the GPU)
 * while this one is computed. Every prologue step commits a group, copy or
 * not, so that in iteration k the group of chunk k is always the one
 * S-1 places behind the newest. thread_sync, which runs after, puts a
 * barrier before compute (the copy of k must be visible) and one at the
 * top of the loop (the copy of k + S-1 overwrites slot s(k - 1), which
 * compute(k - 1) read). A double_buffer copy found anywhere else is an
 * error naming its buffer, as are copies of one loop asking for different
 * numbers of buffers.
 *
 * When compute(k) issues Hopper's asynchronous warpgroup MMAs (wgmma)
 * and S >= 3, the copies run S-2 chunks ahead instead of S-1: the copy of
 * iteration k then overwrites slot s(k - 2), so the MMAs of chunk k - 1
 * may still be reading theirs while it is issued (CUTLASS's sm90 mainloop
 * keeps one k block of wgmma in flight the same way). compute(k) is
 * wrapped in cuda.wgmma_batch (one group a chunk) and the loop in
 * cuda.wgmma_inflight 1 (its barriers wait for all but the newest group).
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

static void wgmma_cb(const tir_stmt *s, void *user) {
    if (s->kind == TIR_TENSOR_CALL && s->u.tcall.intrin == TIR_WGMMA_MMA) *(bool *)user = true;
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
    int64_t S = 0;
    for (int c = 0; c < ncopy; c++) {
        int64_t v = 2;
        if (st[c]->u.attr.value && !te_is_const_int(st[c]->u.attr.value, &v)) v = 0;
        if (c && v != S) {
            te_error(ctx, "double_buffer: the copies at loop '%s' ask for %lld and %lld buffers; "
                          "copies of one loop form one pipeline",
                     k->u.var.name, (long long)S, (long long)v);
            return NULL;
        }
        S = v;
    }
    if (S < 2) {
        te_error(ctx, "double_buffer: the copies at loop '%s' need at least 2 buffers",
                 k->u.var.name);
        return NULL;
    }
    bool wgmma = false;
    for (int i = ncopy; i < n; i++) tir_stmt_visit(st[i], wgmma_cb, NULL, &wgmma);
    wgmma = wgmma && S >= 3;
    int64_t D = wgmma ? S - 2 : S - 1; /* how many chunks the copies run ahead */
    remap cur = {ctx, 0, {0}, {0}, {0}}, next = cur;
    te_expr *sS = te_int(ctx, S);
    te_expr *ahead = te_add(k, te_int(ctx, D));
    te_expr *h = te_floormod(te_sub(k, mn), sS), *h1 = te_floormod(te_sub(ahead, mn), sS);
    bool *db_alloc = te_alloc(ctx, sizeof(bool) * (size_t)(na ? na : 1));
    if (!db_alloc) return NULL;
    memset(db_alloc, 0, sizeof(bool) * (size_t)(na ? na : 1));
    te_expr *sizes[DB_MAX];
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
        /* slots start 32 bytes apart in shared memory: what WMMA's
         * fragment loads ask of a tile's address */
        int64_t size = tir_buffer_size(q.b), eb = te_dtype_bytes(q.b->dtype);
        if (q.b->scope == TIR_SCOPE_SHARED && eb > 0 && eb < 32 && 32 % eb == 0)
            size = (size + 32 / eb - 1) / (32 / eb) * (32 / eb);
        int64_t all = S * size;
        tir_buffer *nb = tir_buffer_new(ctx, q.b->name, q.b->dtype, 1, &all, q.b->scope);
        if (!nb) return NULL;
        /* a swizzled slot is a whole number of 1024-byte swizzle atoms
         * (8 rows of 128 bytes), so the XOR of every slot is the first's */
        nb->swizzle = q.b->swizzle;
        te_expr *sz = sizes[cur.nb] = te_int(ctx, size);
        cur.from[cur.nb] = next.from[next.nb] = q.b;
        cur.to[cur.nb] = next.to[next.nb] = nb;
        cur.off[cur.nb++] = te_mul(h, sz);
        next.off[next.nb++] = te_mul(h1, sz);
    }
    /* prologue: chunks m .. m + D-1 into slots 0 .. D-1, one group each */
    int64_t extent = -1;
    if (!te_is_const_int(s->u.loop.extent, &extent)) extent = -1;
    tir_stmt **pro = te_alloc(ctx, sizeof(tir_stmt *) * (size_t)((ncopy + 1) * (S - 1)));
    tir_stmt **in = te_alloc(ctx, sizeof(tir_stmt *) * (size_t)(ncopy + 3 + n));
    tir_stmt **grp = te_alloc(ctx, sizeof(tir_stmt *) * (size_t)(ncopy + 1));
    if (!pro || !in || !grp) return NULL;
    int np = 0, ni = 0;
    for (int64_t p = 0; p < D; p++) {
        if (extent >= 0 && p >= extent) {
            pro[np++] = mark(ctx, TIR_ATTR_ASYNC_COMMIT, 0, false);
            continue;
        }
        remap slot = cur;
        for (int i = 0; i < slot.nb; i++) slot.off[i] = te_mul(te_int(ctx, p), sizes[i]);
        te_expr *kp = te_add(mn, te_int(ctx, p));
        int ng = 0;
        for (int c = 0; c < ncopy; c++) {
            tir_stmt *x = tir_stmt_substitute(ctx, st[c]->u.attr.body, 1, &k, &kp);
            if (!x || !(x = apply_remap(&slot, x))) return NULL;
            grp[ng++] = tir_attr(ctx, TIR_ATTR_ASYNC_COPY, NULL, x);
        }
        tir_stmt *g = tir_seq(ctx, ng, grp);
        /* a loop of unknown length may end before the prologue does */
        if (extent < 0 && p > 0) g = tir_if(ctx, te_lt(kp, end), g, NULL);
        pro[np++] = g;
        pro[np++] = mark(ctx, TIR_ATTR_ASYNC_COMMIT, 0, false);
    }
    for (int c = 0; c < ncopy; c++) {
        tir_stmt *x = tir_stmt_substitute(ctx, st[c]->u.attr.body, 1, &k, &ahead);
        if (!x || !(x = apply_remap(&next, x))) return NULL;
        in[ni++] = tir_attr(ctx, TIR_ATTR_ASYNC_COPY, NULL, x);
    }
    tir_stmt *copies = tir_seq(ctx, ni, in);
    ni = 0;
    in[ni++] = tir_if(ctx, te_lt(ahead, end), copies, NULL);
    in[ni++] = mark(ctx, TIR_ATTR_ASYNC_COMMIT, 0, false);
    in[ni++] = mark(ctx, TIR_ATTR_ASYNC_WAIT, D, true);
    int first = ni;
    for (int i = ncopy; i < n; i++) {
        tir_stmt *x = apply_remap(&cur, st[i]);
        if (!x) return NULL;
        in[ni++] = x;
    }
    if (wgmma) {
        tir_stmt *c = tir_attr(ctx, TIR_ATTR_WGMMA_BATCH, NULL, tir_seq(ctx, ni - first, in + first));
        if (!c) return NULL;
        in[first] = c;
        ni = first + 1;
    }
    tir_stmt *body = tir_seq(ctx, ni, in);
    /* allocations not double-buffered stay in the loop */
    for (int i = na - 1; i >= 0 && body; i--)
        if (!db_alloc[i]) body = tir_allocate(ctx, allocs[i]->u.alloc.buffer, body);
    tir_stmt *loop = body ? tir_for_with_body(ctx, s, body) : NULL;
    if (loop && wgmma) loop = tir_attr(ctx, TIR_ATTR_WGMMA_INFLIGHT, te_int(ctx, 1), loop);
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
