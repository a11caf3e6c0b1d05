/*
 * tir/pass_storage_rewrite.c — reuse of scratch memory (TVM
 * StorageRewrite, in its simplest sound form).
 *
 * ALLOCATE is scoped, so two LOCAL allocations that are siblings in a
 * SEQ never live at the same time. A run of such siblings of one element
 * type (with only non-allocating statements between them) becomes one
 * allocation, as large as the largest, wrapped around the run; each
 * original buffer is renamed to the shared one. Flat code (after
 * storage_flatten) is required for renaming buffers of different shapes:
 * the shared buffer is one-dimensional and every flat index of a smaller
 * buffer stays within it. Copies of one allocation (what unrolling a loop
 * around an ALLOCATE gives) merge into that same buffer.
 *
 * Anything else is left as it is: nothing is shrunk, and allocations in
 * different loops are not hoisted to share.
 */
#include "tir/tir_internal.h"

typedef struct {
    te_ctx *ctx;
} rewrite;

static bool mergeable(const tir_stmt *s) {
    return s->kind == TIR_ALLOCATE && s->u.alloc.buffer->scope == TIR_SCOPE_LOCAL &&
           !s->u.alloc.buffer->is_param;
}

static bool same_key(const tir_buffer *a, const tir_buffer *b) {
    return a->scope == b->scope && te_dtype_eq(a->dtype, b->dtype);
}

/* A BUFFER_LOAD/BUFFER_STORE of b left in s (not yet flattened). */
typedef struct {
    const tir_buffer *b;
    bool found;
} md_query;

static void find_multidim(const te_expr *e, void *user) {
    md_query *q = user;
    if (q->found || !e) return;
    if (e->kind == TE_BUFFER_LOAD && e->u.bload.buffer == q->b) {
        q->found = true;
        return;
    }
    te_expr_visit_children(e, find_multidim, user);
}

static void find_multidim_stmt(const tir_stmt *s, void *user) {
    md_query *q = user;
    if (s->kind == TIR_BUFFER_STORE && s->u.bstore.buffer == q->b) q->found = true;
}

static bool has_multidim(const tir_stmt *s, const tir_buffer *b) {
    md_query q = {b, false};
    tir_stmt_visit(s, find_multidim_stmt, find_multidim, &q);
    return q.found;
}

/* True when a statement of stmts[from..to) mentions b: the shared
 * allocation would then capture (or shadow) another allocation of b. */
static bool between_uses(tir_stmt *const *stmts, int from, int to, const tir_buffer *b) {
    for (int i = from; i < to; ++i)
        if (stmts[i]->kind != TIR_ALLOCATE && tir__stmt_uses_buffer(stmts[i], b)) return true;
    return false;
}

/* The end (inclusive) of the run of allocations mergeable with stmts[k]. */
static int run_end(tir_stmt *const *stmts, int n, int k) {
    const tir_buffer *b0 = stmts[k]->u.alloc.buffer;
    int last = k;
    for (int j = k + 1; j < n; ++j) {
        const tir_stmt *c = stmts[j];
        if (c->kind != TIR_ALLOCATE) {
            if (tir__stmt_uses_buffer(c, b0)) break;
            continue;
        }
        if (!mergeable(c) || !same_key(b0, c->u.alloc.buffer) ||
            between_uses(stmts, k + 1, j, c->u.alloc.buffer))
            break;
        last = j;
    }
    return last;
}

/* Merges stmts[k..last]; NULL when it cannot (the run is then kept). */
static tir_stmt *merge_run(rewrite *R, tir_stmt *const *stmts, int k, int last) {
    te_ctx *ctx = R->ctx;
    const tir_buffer *b0 = stmts[k]->u.alloc.buffer;
    bool all_same = true, flat = true;
    int64_t size = 0;
    for (int j = k; j <= last; ++j) {
        const tir_stmt *c = stmts[j];
        if (c->kind != TIR_ALLOCATE) continue;
        const tir_buffer *b = c->u.alloc.buffer;
        all_same &= b == b0;
        flat &= !has_multidim(c->u.alloc.body, b);
        int64_t sz = tir_buffer_size(b);
        if (sz > size) size = sz;
    }
    if (!all_same && !flat) return NULL; /* caller keeps the run as it is */
    tir_buffer *shared = (tir_buffer *)b0;
    if (!all_same) {
        shared = tir_buffer_new(ctx, b0->name, b0->dtype, 1, &size, b0->scope);
        if (!shared) return NULL;
    }
    int n = last - k + 1;
    tir_stmt **parts = te_alloc(ctx, sizeof *parts * (size_t)n);
    if (!parts) return NULL;
    for (int j = k; j <= last; ++j) {
        tir_stmt *c = stmts[j];
        if (c->kind == TIR_ALLOCATE)
            c = tir__replace_buffer(ctx, c->u.alloc.body, c->u.alloc.buffer, shared);
        if (!c) return NULL;
        parts[j - k] = c;
    }
    tir_stmt *body = tir_seq(ctx, n, parts);
    return body ? tir_allocate(ctx, shared, body) : NULL;
}

static tir_stmt *rewrite_seq(tir_stmt *s, void *user) {
    rewrite *R = user;
    if (s->kind != TIR_SEQ) return s;
    int n = s->u.seq.n;
    tir_stmt **out = NULL;
    int nout = 0;
    for (int k = 0; k < n;) {
        tir_stmt *c = s->u.seq.stmts[k];
        int last = mergeable(c) ? run_end(s->u.seq.stmts, n, k) : k;
        tir_stmt *merged = last > k ? merge_run(R, s->u.seq.stmts, k, last) : NULL;
        if (merged && !out) { /* first change: copy the prefix */
            out = te_alloc(R->ctx, sizeof *out * (size_t)n);
            if (!out) return NULL;
            for (int i = 0; i < k; ++i) out[nout++] = s->u.seq.stmts[i];
        }
        if (merged) {
            out[nout++] = merged;
            k = last + 1;
        } else {
            if (out) out[nout++] = c;
            k++;
        }
    }
    return out ? tir_seq(R->ctx, nout, out) : s;
}

tir_func *tir_pass_storage_rewrite(te_ctx *ctx, const tir_func *f) {
    if (!ctx) return NULL;
    if (!f || !f->body) return tir__null_operand(ctx, "storage_rewrite");
    rewrite R = {ctx};
    tir_stmt *body = tir_stmt_map(ctx, f->body, rewrite_seq, NULL, &R);
    return body ? tir_func_with_body(ctx, f, body) : NULL;
}
