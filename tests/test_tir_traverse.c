/*
 * tests/test_tir_traverse.c — the tir mutator and visitor (tir/traverse.c)
 * and the passes written on them: sharing of unchanged nodes, the hooks,
 * the analyser scope of FOR and LET; then, for each statement kind that
 * holds a body (ALLREDUCE, IF, LET, ATTR), that every pass reaches a
 * marker statement nested under it and does its work there (a pass that
 * hand-walked only loops, ifs and sequences skipped the others); the two
 * GPU gaps that did (shared memory under an ALLREDUCE not counted by the
 * verifier, no barriers inside an ALLREDUCE's body); and LET/ATTR from
 * builder to the C and LLVM backends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tir_text.h"

static te_expr *I(te_ctx *ctx, int64_t v) { return te_int(ctx, v); }
static te_expr *F(te_ctx *ctx, double v) { return te_float(ctx, v); }
static te_expr *ivar(te_ctx *ctx, const char *n) { return te_var(ctx, n, TE_INT64); }

static tir_buffer *buf(te_ctx *ctx, const char *name, int ndim, const int64_t *shape,
                       tir_scope scope) {
    tir_buffer *b = tir_buffer_new(ctx, name, TE_FLOAT32, ndim, shape, scope);
    assert_non_null(b);
    b->is_param = scope == TIR_SCOPE_GLOBAL;
    return b;
}

static tir_stmt *loop(te_ctx *ctx, te_expr *v, int64_t ext, tir_for_kind k, tir_stmt *body) {
    tir_stmt *s = tir_for(ctx, v, I(ctx, 0), I(ctx, ext), k, body);
    assert_non_null(s);
    return s;
}

static tir_stmt *thread_loop(te_ctx *ctx, const char *tag, int64_t ext, tir_stmt *body) {
    tir_stmt *s = loop(ctx, ivar(ctx, tag), ext, TIR_FOR_THREAD, body);
    s->u.loop.thread_tag = tag;
    return s;
}

static tir_stmt *seq2(te_ctx *ctx, tir_stmt *a, tir_stmt *b) {
    return tir_seq(ctx, 2, (tir_stmt *[]){a, b});
}

static tir_func *func(te_ctx *ctx, tir_stmt *body) {
    assert_non_null(body);
    tir_func *f = tir_func_new(ctx, "default", 0, NULL, body);
    assert_non_null(f);
    return f;
}

typedef struct {
    tir_stmt_kind kind;
    int n;
    const tir_stmt *first;
} counter;

static void count_fn(const tir_stmt *s, void *user) {
    counter *c = user;
    if (s->kind != c->kind) return;
    if (!c->first) c->first = s;
    c->n++;
}

static int count(const tir_stmt *s, tir_stmt_kind kind) {
    counter c = {kind, 0, NULL};
    tir_stmt_visit(s, count_fn, NULL, &c);
    return c.n;
}

static const tir_stmt *first(const tir_stmt *s, tir_stmt_kind kind) {
    counter c = {kind, 0, NULL};
    tir_stmt_visit(s, count_fn, NULL, &c);
    return c.first;
}

static const char *text(te_ctx *ctx, const tir_func *f) { return tu_tir_text(ctx, f); }

static void expect_text(const char *what, const char *got, const char *want) {
    assert_non_null(got);
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "%s: printed text differs\n--- want\n%s--- got\n%s---\n", what, want, got);
        fail();
    }
}

/* ---- the mutator and visitor themselves ---- */

static tir_stmt *keep(tir_mutator *m, tir_stmt *s) {
    (*(int *)m->user)++;
    return s;
}

static tir_stmt *replace_store(tir_mutator *m, tir_stmt *s, bool *final) {
    if (s->kind != TIR_STORE) return s;
    *final = true;
    return tir_evaluate(m->ctx, te_int(m->ctx, 7));
}

static void test_mutator_shares_and_hooks(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *B = buf(ctx, "B", 1, (int64_t[]){16}, TIR_SCOPE_GLOBAL);
    te_expr *i = ivar(ctx, "i");
    tir_stmt *st = tir_store(ctx, B, i, F(ctx, 1), NULL);
    tir_stmt *ev = tir_evaluate(ctx, te_call(TE_INTRIN_LIKELY, 1, (te_expr *[]){te_lt(i, I(ctx, 3))}));
    tir_stmt *l = loop(ctx, i, 16, TIR_FOR_SERIAL, seq2(ctx, st, ev));

    /* nothing changes: the very same node, every kind function called */
    int calls = 0;
    tir_mutator m = {.ctx = ctx, .user = &calls};
    for (int k = 0; k < TIR_STMT_KIND_COUNT; k++) m.kind[k] = keep;
    assert_ptr_equal(tir_mutate(&m, l), l);
    assert_int_equal(calls, 1); /* keep does not descend: only the root */
    calls = 0;
    tir_mutator post = {.ctx = ctx, .user = &calls, .post = keep};
    assert_ptr_equal(tir_mutate(&post, l), l);
    assert_int_equal(calls, 4); /* store, evaluate, seq, loop */

    /* a final pre-order replacement: the store becomes an evaluate, the
     * loop and seq are rebuilt, the untouched evaluate is shared */
    tir_mutator pre = {.ctx = ctx, .pre = replace_store};
    tir_stmt *r = tir_mutate(&pre, l);
    assert_non_null(r);
    assert_ptr_not_equal(r, l);
    assert_int_equal(count(r, TIR_STORE), 0);
    assert_ptr_equal(r->u.loop.body->u.seq.stmts[1], ev);
    assert_ptr_equal(r->u.loop.var, i);
    te_ctx_free(ctx);
}

/* The analyser scope: under `for (i, 2, 5)` and `let x = i * 2`, the
 * default walk has i in [2, 7) and x in [4, 12]. */
typedef struct {
    const te_expr *i, *x;
    int64_t ilo, ihi, xlo, xhi;
    int seen;
} scope_probe;

static int probe_store(tir_visitor *v, const tir_stmt *s) {
    scope_probe *p = v->user;
    te_analyzer_const_bound(v->an, p->i, &p->ilo, &p->ihi);
    te_analyzer_const_bound(v->an, p->x, &p->xlo, &p->xhi);
    p->seen++;
    (void)s;
    return 0;
}

static tir_stmt *decide_if(tir_mutator *m, tir_stmt *s) {
    return te_analyzer_can_prove(m->an, s->u.if_.cond) ? tir_mutate(m, s->u.if_.then_s)
                                                        : tir_mutate_children(m, s);
}

static void test_scope_binds_for_and_let(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *B = buf(ctx, "B", 1, (int64_t[]){16}, TIR_SCOPE_GLOBAL);
    te_expr *i = ivar(ctx, "i"), *x = ivar(ctx, "x");
    tir_stmt *st = tir_store(ctx, B, x, F(ctx, 1), NULL);
    tir_stmt *g = tir_if(ctx, te_lt(x, I(ctx, 13)), st, NULL);
    tir_stmt *let = tir_let(ctx, x, te_mul(i, I(ctx, 2)), g);
    tir_stmt *l = tir_for(ctx, i, I(ctx, 2), I(ctx, 5), TIR_FOR_SERIAL, let);
    assert_non_null(l);

    scope_probe p = {i, x, 0, 0, 0, 0, 0};
    tir_visitor v = {.user = &p, .an = te_analyzer_new(ctx)};
    v.kind[TIR_STORE] = probe_store;
    assert_int_equal(tir_visit(&v, l), 0);
    assert_int_equal(p.seen, 1);
    assert_int_equal(p.ilo, 2);
    assert_int_equal(p.ihi, 6);
    assert_int_equal(p.xlo, 4);
    assert_int_equal(p.xhi, 12);
    /* and unbound again after the walk */
    int64_t lo, hi;
    te_analyzer_const_bound(v.an, x, &lo, &hi);
    assert_true(lo == INT64_MIN || hi == INT64_MAX);

    tir_mutator m = {.ctx = ctx, .an = v.an};
    m.kind[TIR_IF] = decide_if;
    tir_stmt *r = tir_mutate(&m, l);
    assert_non_null(r);
    assert_int_equal(count(r, TIR_IF), 0);
    te_analyzer_free(v.an);

    /* simplify uses the same scope: the guard is decided under the LET */
    tir_func *f = tir_pass_simplify(ctx, func(ctx, l));
    assert_non_null(f);
    expect_text("simplify under let", text(ctx, f),
                "func default() {\n"
                "  for (i, 2, 5) {\n"
                "    let x = i*2 {\n"
                "      B[x] = 1.0f\n"
                "    }\n"
                "  }\n"
                "}\n");
    te_ctx_free(ctx);
}

/* ---- every pass reaches statements under ALLREDUCE, IF, LET, ATTR ---- */

typedef enum { W_ALLREDUCE, W_IF, W_LET, W_ATTR, W_COUNT } wrapper;
static const char *const wrapper_name[W_COUNT] = {"ALLREDUCE", "IF", "LET", "ATTR"};

static tir_stmt *wrap(te_ctx *ctx, wrapper w, tir_stmt *inner) {
    tir_stmt *s = NULL;
    switch (w) {
    case W_ALLREDUCE:
        s = tir_allreduce(ctx, TE_REDUCE_SUM, F(ctx, 1), te_var(ctx, "r", TE_FLOAT32), 32, inner);
        break;
    case W_IF: s = tir_if(ctx, te_gt(ivar(ctx, "n"), I(ctx, 2)), inner, NULL); break;
    case W_LET: s = tir_let(ctx, ivar(ctx, "x"), I(ctx, 3), inner); break;
    case W_ATTR: s = tir_attr(ctx, "marker", I(ctx, 1), inner); break;
    case W_COUNT: break;
    }
    assert_non_null(s);
    return s;
}

/* One pass's case: the marker it acts on, the pass, and what must hold
 * of the result. */
typedef struct {
    const char *pass;
    tir_stmt *(*marker)(te_ctx *ctx);
    bool gpu; /* the program sits inside blockIdx.x / threadIdx.x loops */
    tir_func *(*run)(te_ctx *ctx, tir_func *f);
    void (*check)(te_ctx *ctx, const tir_func *f, const char *where);
} pass_case;

static tir_buffer *gbuf(te_ctx *ctx, const char *name) {
    return buf(ctx, name, 1, (int64_t[]){64}, TIR_SCOPE_GLOBAL);
}

/* Failures are counted, so one run names every pass that misses a kind. */
static int nfailed;

static void fail_at(const char *where, const char *what, te_ctx *ctx, const tir_func *f) {
    fprintf(stderr, "%s: %s\n%s", where, what, f ? text(ctx, f) : "(no function)\n");
    nfailed++;
}

#define EXPECT(cond, what)                                                                         \
    do {                                                                                           \
        if (!(cond)) fail_at(where, what, ctx, f);                                                 \
    } while (0)

/* storage_flatten: B2[1, 2] = 1 becomes a flat store */
static tir_stmt *m_flatten(te_ctx *ctx) {
    tir_buffer *B2 = buf(ctx, "B2", 2, (int64_t[]){4, 4}, TIR_SCOPE_GLOBAL);
    return tir_buffer_store(ctx, B2, 2, (te_expr *[]){I(ctx, 1), I(ctx, 2)}, F(ctx, 1));
}
static tir_func *r_flatten(te_ctx *ctx, tir_func *f) { return tir_pass_storage_flatten(ctx, f); }
static void c_flatten(te_ctx *ctx, const tir_func *f, const char *where) {
    EXPECT(count(f->body, TIR_BUFFER_STORE) == 0 && count(f->body, TIR_STORE) == 1,
           "the BUFFER_STORE was not flattened");
}

/* simplify: B[floordiv(j*4, 4)] = 1 stores to B[j] */
static tir_stmt *m_simplify(te_ctx *ctx) {
    te_expr *j = ivar(ctx, "j");
    return tir_store(ctx, gbuf(ctx, "B"), te_floordiv(te_mul(j, I(ctx, 4)), I(ctx, 4)), F(ctx, 1),
                     NULL);
}
static tir_func *r_simplify(te_ctx *ctx, tir_func *f) { return tir_pass_simplify(ctx, f); }
static void c_simplify(te_ctx *ctx, const tir_func *f, const char *where) {
    const tir_stmt *s = first(f->body, TIR_STORE);
    EXPECT(s && s->u.store.index->kind == TE_VAR, "the store's index was not simplified");
}

/* loop_partition: for (k, 0, 10) { if (likely(k < 7)) B[k] = 1 } splits */
static tir_stmt *m_partition(te_ctx *ctx) {
    te_expr *k = ivar(ctx, "k");
    te_expr *c = te_lt(k, I(ctx, 7));
    tir_stmt *g = tir_if(ctx, te_call(TE_INTRIN_LIKELY, 1, &c),
                         tir_store(ctx, gbuf(ctx, "B"), k, F(ctx, 1), NULL), NULL);
    return loop(ctx, k, 10, TIR_FOR_SERIAL, g);
}
static tir_func *r_partition(te_ctx *ctx, tir_func *f) { return tir_pass_loop_partition(ctx, f); }
static void c_partition(te_ctx *ctx, const tir_func *f, const char *where) {
    EXPECT(count(f->body, TIR_FOR) == 2, "the guarded loop was not split");
}

/* remove_noop: B[0] = B[0] disappears (C[1] = 2 keeps the wrapper alive) */
static tir_stmt *m_noop(te_ctx *ctx) {
    tir_buffer *B = gbuf(ctx, "B");
    tir_stmt *self = tir_store(ctx, B, I(ctx, 0), tir_load(ctx, B, I(ctx, 0), NULL), NULL);
    return seq2(ctx, self, tir_store(ctx, gbuf(ctx, "C"), I(ctx, 1), F(ctx, 2), NULL));
}
static tir_func *r_noop(te_ctx *ctx, tir_func *f) { return tir_pass_remove_noop(ctx, f); }
static void c_noop(te_ctx *ctx, const tir_func *f, const char *where) {
    EXPECT(count(f->body, TIR_STORE) == 1, "the self-store was not removed");
}

/* vectorize: for (k, 0, 4) vectorized { B[k] = 1 } becomes a ramp store */
static tir_stmt *m_vectorize(te_ctx *ctx) {
    te_expr *k = ivar(ctx, "k");
    return loop(ctx, k, 4, TIR_FOR_VECTORIZED, tir_store(ctx, gbuf(ctx, "B"), k, F(ctx, 1), NULL));
}
static tir_func *r_vectorize(te_ctx *ctx, tir_func *f) { return tir_pass_vectorize(ctx, f, NULL); }
static void c_vectorize(te_ctx *ctx, const tir_func *f, const char *where) {
    const tir_stmt *s = first(f->body, TIR_STORE);
    EXPECT(count(f->body, TIR_FOR) == 0 && s && s->u.store.index->kind == TE_RAMP,
           "the vectorized loop was not vectorized");
}

/* unroll: for (k, 0, 3) unrolled { B[k] = 1 } becomes three stores */
static tir_stmt *m_unroll(te_ctx *ctx) {
    te_expr *k = ivar(ctx, "k");
    return loop(ctx, k, 3, TIR_FOR_UNROLLED, tir_store(ctx, gbuf(ctx, "B"), k, F(ctx, 1), NULL));
}
static tir_func *r_unroll(te_ctx *ctx, tir_func *f) { return tir_pass_unroll(ctx, f); }
static void c_unroll(te_ctx *ctx, const tir_func *f, const char *where) {
    EXPECT(count(f->body, TIR_FOR) == 0 && count(f->body, TIR_STORE) == 3,
           "the unrolled loop was not copied");
}

/* storage_rewrite: two sibling local allocations share one */
static tir_stmt *local_use(te_ctx *ctx, const char *name) {
    tir_buffer *T = buf(ctx, name, 1, (int64_t[]){4}, TIR_SCOPE_LOCAL);
    tir_stmt *w = tir_store(ctx, T, I(ctx, 0), F(ctx, 1), NULL);
    tir_stmt *r = tir_store(ctx, gbuf(ctx, "B"), I(ctx, 0), tir_load(ctx, T, I(ctx, 0), NULL), NULL);
    return tir_allocate(ctx, T, seq2(ctx, w, r));
}
static tir_stmt *m_rewrite(te_ctx *ctx) {
    return seq2(ctx, local_use(ctx, "T1"), local_use(ctx, "T2"));
}
static tir_func *r_rewrite(te_ctx *ctx, tir_func *f) { return tir_pass_storage_rewrite(ctx, f); }
static void c_rewrite(te_ctx *ctx, const tir_func *f, const char *where) {
    EXPECT(count(f->body, TIR_ALLOCATE) == 1, "the sibling allocations were not merged");
}

/* inject_vthread: for (vt, 0, 2) vthread { B[vt] = 1 } is replicated */
static tir_stmt *m_vthread(te_ctx *ctx) {
    te_expr *vt = ivar(ctx, "vt");
    tir_stmt *l = loop(ctx, vt, 2, TIR_FOR_THREAD, tir_store(ctx, gbuf(ctx, "B"), vt, F(ctx, 1), NULL));
    l->u.loop.thread_tag = "vthread";
    return l;
}
static tir_func *r_vthread(te_ctx *ctx, tir_func *f) { return tir_pass_inject_vthread(ctx, f); }
static void c_vthread(te_ctx *ctx, const tir_func *f, const char *where) {
    const tir_stmt *s = first(f->body, TIR_FOR);
    bool vt_left = false;
    for (; s; s = NULL) vt_left = s->u.loop.thread_tag && !strcmp(s->u.loop.thread_tag, "vthread");
    EXPECT(!vt_left && count(f->body, TIR_STORE) == 2, "the vthread loop was not injected");
}

/* thread_sync: a shared write then a read of it get a barrier between */
static tir_stmt *m_sync(te_ctx *ctx) {
    tir_buffer *S = buf(ctx, "S", 1, (int64_t[]){32}, TIR_SCOPE_SHARED);
    te_expr *tx = ivar(ctx, "t");
    tir_stmt *w = tir_store(ctx, S, tx, F(ctx, 1), NULL);
    tir_stmt *r = tir_store(ctx, gbuf(ctx, "B"), tx, tir_load(ctx, S, te_sub(I(ctx, 31), tx), NULL),
                            NULL);
    return seq2(ctx, w, r);
}
static tir_func *r_sync(te_ctx *ctx, tir_func *f) { return tir_pass_thread_sync(ctx, f); }
static void c_sync(te_ctx *ctx, const tir_func *f, const char *where) {
    EXPECT(count(f->body, TIR_BARRIER) == 1, "no barrier between the shared write and read");
}

/* verify_gpu: 64 KiB of shared memory is over the 48 KiB limit */
static tir_stmt *m_verify(te_ctx *ctx) {
    tir_buffer *S = buf(ctx, "S", 1, (int64_t[]){16384}, TIR_SCOPE_SHARED);
    tir_stmt *w = tir_store(ctx, S, I(ctx, 0), F(ctx, 1), NULL);
    tir_stmt *r = tir_store(ctx, gbuf(ctx, "B"), I(ctx, 0), tir_load(ctx, S, I(ctx, 0), NULL), NULL);
    return tir_allocate(ctx, S, seq2(ctx, w, r));
}
static tir_func *r_verify(te_ctx *ctx, tir_func *f) {
    return tir_verify_gpu(ctx, f, NULL) ? NULL : f;
}
static void c_verify(te_ctx *ctx, const tir_func *f, const char *where) {
    EXPECT(!f && strstr(te_ctx_errmsg(ctx), "65536 bytes of shared memory (S 65536)"),
           "the shared allocation was not counted");
}

/* free variables: B[q] = 1 needs q from outside */
static tir_stmt *m_free(te_ctx *ctx) {
    return tir_store(ctx, gbuf(ctx, "B"), ivar(ctx, "q"), F(ctx, 1), NULL);
}
static tir_func *r_free(te_ctx *ctx, tir_func *f) {
    (void)ctx;
    return f;
}
static void c_free(te_ctx *ctx, const tir_func *f, const char *where) {
    tir_free_vars fv;
    assert_int_equal(tir_stmt_free_vars(f->body, 0, NULL, &fv), 0);
    bool q = false, x = false;
    for (int k = 0; k < fv.n; k++) {
        const te_expr *e = fv.keys[k];
        if (fv.is_buffer[k]) continue;
        q |= !strcmp(e->u.var.name, "q");
        x |= !strcmp(e->u.var.name, "x");
    }
    tir_free_vars_release(&fv);
    EXPECT(q && !x, "q is not free (or the LET's x is)");
}

/* the cost model's features: the store gets its row */
static tir_stmt *m_features(te_ctx *ctx) { return m_free(ctx); }
static void c_features(te_ctx *ctx, const tir_func *f, const char *where) {
    float *rows = NULL;
    int n = 0;
    assert_int_equal(cm_extract(ctx, f, &rows, &n), 0);
    free(rows);
    EXPECT(n == 1, "the store has no feature row");
}

static const pass_case cases[] = {
    {"storage_flatten", m_flatten, false, r_flatten, c_flatten},
    {"simplify", m_simplify, false, r_simplify, c_simplify},
    {"loop_partition", m_partition, false, r_partition, c_partition},
    {"remove_noop", m_noop, false, r_noop, c_noop},
    {"vectorize", m_vectorize, false, r_vectorize, c_vectorize},
    {"unroll", m_unroll, false, r_unroll, c_unroll},
    {"storage_rewrite", m_rewrite, false, r_rewrite, c_rewrite},
    {"inject_vthread", m_vthread, true, r_vthread, c_vthread},
    {"thread_sync", m_sync, true, r_sync, c_sync},
    {"verify_gpu", m_verify, true, r_verify, c_verify},
    {"free_vars", m_free, false, r_free, c_free},
    {"cm_extract", m_features, false, r_free, c_features},
};

static void test_every_pass_reaches_nested_statements(void **state) {
    (void)state;
    for (size_t p = 0; p < sizeof cases / sizeof cases[0]; p++) {
        for (int w = 0; w < W_COUNT; w++) {
            te_ctx *ctx = te_ctx_new();
            tir_stmt *body = wrap(ctx, (wrapper)w, cases[p].marker(ctx));
            if (cases[p].gpu)
                body = thread_loop(ctx, "blockIdx.x", 1, thread_loop(ctx, "threadIdx.x", 32, body));
            tir_func *f = cases[p].run(ctx, func(ctx, body));
            char where[96];
            snprintf(where, sizeof where, "%s under %s", cases[p].pass, wrapper_name[w]);
            if (!f && cases[p].run != r_verify) fail_at(where, te_ctx_errmsg(ctx), ctx, NULL);
            else cases[p].check(ctx, f, where);
            te_ctx_free(ctx);
        }
    }
    assert_int_equal(nfailed, 0);
}

/* ---- the two ALLREDUCE gaps, on whole kernels ---- */

/* allreduce over 32 threads, its body staging the total in 40 KiB of
 * shared memory beside 16 KiB allocated outside it: 56 KiB in all. */
static void test_verify_gpu_counts_shared_under_allreduce(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = gbuf(ctx, "A"), *B = gbuf(ctx, "B");
    tir_buffer *S1 = buf(ctx, "S1", 1, (int64_t[]){4096}, TIR_SCOPE_SHARED);
    tir_buffer *S2 = buf(ctx, "S2", 1, (int64_t[]){10240}, TIR_SCOPE_SHARED);
    te_expr *tx = ivar(ctx, "threadIdx.x"), *r = te_var(ctx, "r", TE_FLOAT32);
    tir_stmt *stage = tir_allocate(
        ctx, S2,
        seq2(ctx, tir_store(ctx, S2, tx, r, NULL),
             tir_store(ctx, B, tx, tir_load(ctx, S2, tx, NULL), NULL)));
    tir_stmt *ar = tir_allreduce(ctx, TE_REDUCE_SUM, tir_load(ctx, A, tx, NULL), r, 32, stage);
    tir_stmt *k = tir_allocate(ctx, S1, seq2(ctx, tir_store(ctx, S1, tx, F(ctx, 0), NULL), ar));
    tir_stmt *t = loop(ctx, tx, 32, TIR_FOR_THREAD, k);
    t->u.loop.thread_tag = "threadIdx.x";
    tir_func *f = func(ctx, thread_loop(ctx, "blockIdx.x", 1, t));
    assert_int_equal(tir_verify_gpu(ctx, f, NULL), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "kernel 0 of 'default'", "57344 bytes of shared memory",
                      "S1 16384, S2 40960", "the limit per block is 49152");
    te_ctx_free(ctx);
}

/* Inside an ALLREDUCE's body, a shared write read back by another thread
 * needs a barrier like anywhere else. */
static void test_thread_sync_inside_allreduce(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = gbuf(ctx, "A"), *B = gbuf(ctx, "B");
    tir_buffer *S = buf(ctx, "S", 1, (int64_t[]){32}, TIR_SCOPE_SHARED);
    te_expr *tx = ivar(ctx, "threadIdx.x"), *r = te_var(ctx, "r", TE_FLOAT32);
    tir_stmt *body = seq2(ctx, tir_store(ctx, S, tx, r, NULL),
                          tir_store(ctx, B, tx, tir_load(ctx, S, te_sub(I(ctx, 31), tx), NULL),
                                    NULL));
    tir_stmt *ar = tir_allreduce(ctx, TE_REDUCE_SUM, tir_load(ctx, A, tx, NULL), r, 32, body);
    tir_stmt *t = loop(ctx, tx, 32, TIR_FOR_THREAD, tir_allocate(ctx, S, ar));
    t->u.loop.thread_tag = "threadIdx.x";
    tir_func *f = tir_pass_thread_sync(ctx, func(ctx, t));
    assert_non_null(f);
    expect_text("thread_sync in allreduce", text(ctx, f),
                "func default() {\n"
                "  for (threadIdx.x, 0, 32) thread threadIdx.x {\n"
                "    allocate S[float32 * 32] shared {\n"
                "      r = allreduce.sum(A[threadIdx.x], threadIdx.x extent 32) {\n"
                "        S[threadIdx.x] = r\n"
                "        barrier\n"
                "        B[threadIdx.x] = S[31 - threadIdx.x]\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");
    te_ctx_free(ctx);
}

/* ---- LET and ATTR: builders, printer, C and LLVM code ---- */

static void test_let_attr_builders(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_stmt *body = tir_evaluate(ctx, I(ctx, 0));
    assert_null(tir_let(ctx, I(ctx, 1), I(ctx, 1), body));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "let: the bound name must be a variable of the value's "
                                          "type int64");
    te_ctx_free(ctx);
    ctx = te_ctx_new();
    assert_null(tir_let(ctx, te_var(ctx, "x", TE_FLOAT32), I(ctx, 1), tir_noop(ctx)));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "let: the bound name must be a variable");
    te_ctx_free(ctx);
    ctx = te_ctx_new();
    assert_null(tir_attr(ctx, NULL, NULL, tir_noop(ctx)));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "attr: NULL operand");
    te_ctx_free(ctx);
}

/* A LET around kernels: kernels take buffers only, so the verifier
 * refuses it; a LET in a vectorized loop's body keeps the loop scalar. */
static void test_let_refusals(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_expr *tx = ivar(ctx, "threadIdx.x"), *x = ivar(ctx, "x");
    tir_stmt *st = tir_store(ctx, gbuf(ctx, "B"), te_add(tx, x), F(ctx, 1), NULL);
    tir_stmt *t = loop(ctx, tx, 32, TIR_FOR_THREAD, st);
    t->u.loop.thread_tag = "threadIdx.x";
    tir_func *f = func(ctx, tir_let(ctx, x, I(ctx, 3), t));
    assert_int_equal(tir_verify_gpu(ctx, f, NULL), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "gpu: let 'x' in 'default' is outside any kernel");
    te_ctx_free(ctx);

    ctx = te_ctx_new();
    te_expr *k = ivar(ctx, "k");
    x = ivar(ctx, "x");
    st = tir_store(ctx, gbuf(ctx, "B"), x, F(ctx, 1), NULL);
    f = func(ctx, loop(ctx, k, 4, TIR_FOR_VECTORIZED, tir_let(ctx, x, k, st)));
    te_str why;
    te_str_init(&why);
    tir_func *g = tir_pass_vectorize(ctx, f, &why);
    assert_non_null(g);
    assert_int_equal(g->body->u.loop.for_kind, TIR_FOR_SERIAL);
    tu_assert_msg_has(why.data, "loop 'k' stays scalar: its body holds an unknown statement");
    te_str_free(&why);
    te_ctx_free(ctx);
}

/* for (i, 0, n) { let x = A[i]*2 { attr "note" { B[i] = x + 1 } } } */
static tir_func *let_program(te_ctx *ctx, int64_t n) {
    tir_buffer *A = buf(ctx, "A", 1, &n, TIR_SCOPE_GLOBAL), *B = buf(ctx, "B", 1, &n, TIR_SCOPE_GLOBAL);
    te_expr *i = ivar(ctx, "i"), *x = te_var(ctx, "x", TE_FLOAT32);
    tir_stmt *st = tir_store(ctx, B, i, te_add(x, F(ctx, 1)), NULL);
    tir_stmt *at = tir_attr(ctx, "note", NULL, st);
    tir_stmt *let = tir_let(ctx, x, te_mul(tir_load(ctx, A, i, NULL), F(ctx, 2)), at);
    tir_func *f = tir_func_new(ctx, "default", 2, (tir_buffer *[]){A, B},
                               loop(ctx, i, n, TIR_FOR_SERIAL, let));
    assert_non_null(f);
    return f;
}

static void run_let_program(rt_module *m, int64_t n) {
    uint64_t seed = tu_seed();
    DLTensor *a = tu_rand_f32(&seed, 1, &n), *b = tu_nan_f32(1, &n);
    int rc = rt_call(m, "default", RT_ARGS(a, b));
    if (rc) fprintf(stderr, "rt_call: %s\n", rt_module_errmsg(m));
    assert_int_equal(rc, 0);
    double *want = malloc((size_t)n * sizeof *want);
    for (int64_t k = 0; k < n; k++) want[k] = (double)((float *)a->data)[k] * 2 + 1;
    assert_int_equal(tu_compare_f32("let", (float *)b->data, want, n, 1e-6, 1e-6), 0);
    free(want);
    rt_tensor_free(a);
    rt_tensor_free(b);
}

static void test_let_attr_codegen(void **state) {
    (void)state;
    const int64_t n = 37;
    te_ctx *ctx = te_ctx_new();
    tir_func *f = let_program(ctx, n);
    expect_text("let printed", text(ctx, f),
                "func default(A: float32[37], B: float32[37]) {\n"
                "  for (i, 0, 37) {\n"
                "    let x = A[i]*2.0f {\n"
                "      attr note {\n"
                "        B[i] = x + 1.0f\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");
    const tir_func *fs[1] = {f};
    rt_module *c = cg_c_build(ctx, 1, fs, NULL);
    if (!c) fprintf(stderr, "cg_c_build: %s\n", te_ctx_errmsg(ctx));
    assert_non_null(c);
    run_let_program(c, n);
    rt_module_free(c);
    rt_module *l = cg_llvm_build(ctx, 1, fs, NULL);
    if (!l) fprintf(stderr, "cg_llvm_build: %s\n", te_ctx_errmsg(ctx));
    assert_non_null(l);
    run_let_program(l, n);
    rt_module_free(l);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutator_shares_and_hooks),
        cmocka_unit_test(test_scope_binds_for_and_let),
        cmocka_unit_test(test_every_pass_reaches_nested_statements),
        cmocka_unit_test(test_verify_gpu_counts_shared_under_allreduce),
        cmocka_unit_test(test_thread_sync_inside_allreduce),
        cmocka_unit_test(test_let_attr_builders),
        cmocka_unit_test(test_let_refusals),
        cmocka_unit_test(test_let_attr_codegen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
