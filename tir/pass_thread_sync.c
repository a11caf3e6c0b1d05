/*
 * tir/pass_thread_sync.c — __syncthreads() insertion for shared memory
 * (TVM ThreadSync("shared"), in a simple conservative form).
 *
 * Within a SEQ, a barrier goes before a statement that reads a shared
 * buffer written since the last barrier (read after write: the data other
 * threads stored must be visible), or that writes a shared buffer read
 * since the last barrier (write after read: others may still be reading
 * the old contents). In a serial loop the body is scanned a second time
 * starting from the accesses still pending at its end, which puts the
 * barrier that protects the next iteration's overwrite at the top of the
 * body. Loops bound to thread axes are transparent (every thread of the
 * block runs their body). A compound statement counts as all the
 * accesses inside it. Run after inject_vthread, so barriers are never
 * replicated.
 */
#include <string.h>

#include "tir/tir_internal.h"

#define SYNC_MAX 64

typedef struct {
    int nw, nr;
    const tir_buffer *w[SYNC_MAX], *r[SYNC_MAX];
} acc_set;

static void add(const tir_buffer **arr, int *n, const tir_buffer *b) {
    for (int i = 0; i < *n; i++)
        if (arr[i] == b) return;
    if (*n < SYNC_MAX) arr[(*n)++] = b;
}

static bool has(const tir_buffer *const *arr, int n, const tir_buffer *b) {
    for (int i = 0; i < n; i++)
        if (arr[i] == b) return true;
    return false;
}

static void acc_expr(const te_expr *e, void *user) {
    acc_set *a = user;
    if (!e) return;
    if (e->kind == TE_LOAD && e->u.load.buffer->scope == TIR_SCOPE_SHARED)
        add(a->r, &a->nr, e->u.load.buffer);
    te_expr_visit_children(e, acc_expr, user);
}

static void acc_stmt(const tir_stmt *s, void *user) {
    acc_set *a = user;
    if (s->kind == TIR_STORE && s->u.store.buffer->scope == TIR_SCOPE_SHARED)
        add(a->w, &a->nw, s->u.store.buffer);
    /* a tensor intrinsic writes the tile of its first operand */
    if (s->kind == TIR_TENSOR_CALL && s->u.tcall.args[0]->kind == TE_LOAD &&
        s->u.tcall.args[0]->u.load.buffer->scope == TIR_SCOPE_SHARED)
        add(a->w, &a->nw, s->u.tcall.args[0]->u.load.buffer);
}

static acc_set accesses(const tir_stmt *s) {
    acc_set a;
    memset(&a, 0, sizeof a);
    tir_stmt_visit(s, acc_stmt, acc_expr, &a);
    return a;
}

static bool conflicts(const acc_set *pending, const acc_set *a) {
    for (int i = 0; i < a->nr; i++)
        if (has(pending->w, pending->nw, a->r[i])) return true;
    for (int i = 0; i < a->nw; i++)
        if (has(pending->r, pending->nr, a->w[i])) return true;
    return false;
}

static void merge(acc_set *pending, const acc_set *a) {
    for (int i = 0; i < a->nr; i++) add(pending->r, &pending->nr, a->r[i]);
    for (int i = 0; i < a->nw; i++) add(pending->w, &pending->nw, a->w[i]);
}

/* Scans the statements of a sequence (already synced inside) from the
 * pending accesses *pending; returns the sequence with barriers and leaves
 * the accesses pending at its end in *pending. */
static tir_stmt *scan(te_ctx *ctx, int n, tir_stmt *const *stmts, acc_set *pending) {
    tir_stmt **out = te_alloc(ctx, sizeof(tir_stmt *) * (size_t)(2 * n + 1));
    if (!out) return NULL;
    int k = 0;
    for (int i = 0; i < n; i++) {
        tir_stmt *s = stmts[i];
        if (s->kind == TIR_BARRIER) {
            memset(pending, 0, sizeof *pending);
            out[k++] = s;
            continue;
        }
        acc_set a = accesses(s);
        if (conflicts(pending, &a)) {
            out[k++] = tir_barrier(ctx);
            memset(pending, 0, sizeof *pending);
        }
        merge(pending, &a);
        out[k++] = s;
    }
    return tir_seq(ctx, k, out);
}

static void seq_items(tir_stmt *s, int *n, tir_stmt *const **items) {
    if (s->kind == TIR_SEQ) {
        *n = s->u.seq.n;
        *items = s->u.seq.stmts;
    } else {
        *n = 1;
        *items = NULL; /* the statement itself */
    }
}

/* The walk is a tir_mutator: a sequence is scanned after its parts are
 * synced, a serial loop's body twice; every other statement's bodies
 * (an IF's branches, an ALLOCATE's or ALLREDUCE's body, a thread loop's
 * body) are synced as sequences of their own by the default. */
static tir_stmt *sync_seq(tir_mutator *m, tir_stmt *s) {
    tir_stmt *inner = tir_mutate_children(m, s);
    if (!inner) return NULL;
    int n;
    tir_stmt *const *items;
    seq_items(inner, &n, &items);
    tir_stmt *const one[1] = {inner};
    acc_set pending;
    memset(&pending, 0, sizeof pending);
    return scan(m->ctx, n, items ? items : one, &pending);
}

/* A serial loop's body: scanned once to find what is pending at the end
 * of an iteration, then again from that state (the next iteration). */
static tir_stmt *sync_loop(tir_mutator *m, tir_stmt *s) {
    if (s->u.loop.for_kind == TIR_FOR_THREAD) return tir_mutate_children(m, s);
    tir_stmt *b = tir_mutate(m, s->u.loop.body);
    if (!b) return NULL;
    int n;
    tir_stmt *const *items;
    seq_items(b, &n, &items);
    tir_stmt *const one[1] = {b};
    if (!items) items = one;
    acc_set pending;
    memset(&pending, 0, sizeof pending);
    tir_stmt *first = scan(m->ctx, n, items, &pending);
    if (first && (pending.nw || pending.nr)) {
        acc_set again = pending;
        first = scan(m->ctx, n, items, &again);
    }
    return first ? tir_for_with_body(m->ctx, s, first) : NULL;
}

tir_func *tir_pass_thread_sync(te_ctx *ctx, const tir_func *f) {
    if (!ctx) return NULL;
    if (!f || !f->body) return tir__null_operand(ctx, "thread_sync");
    tir_mutator m = {.ctx = ctx, .kind = {[TIR_SEQ] = sync_seq, [TIR_FOR] = sync_loop}};
    tir_stmt *body = tir_mutate(&m, f->body);
    return body ? tir_func_with_body(ctx, f, body) : NULL;
}
