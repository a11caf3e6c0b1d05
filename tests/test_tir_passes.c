/*
 * tests/test_tir_passes.c — loop_partition, vectorize and unroll on small
 * hand-built flat programs (the program before and after each pass, as
 * text and as structure), their refusal messages, and end-to-end numeric
 * checks of schedules that exercise them through the C backend.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_harness.h"
#include "tir_text.h"

/* ---- helpers ---- */

static te_expr *ld(te_ctx *ctx, tir_buffer *b, te_expr *i) { return tir_load(ctx, b, i, NULL); }
static te_expr *I(te_ctx *ctx, int64_t v) { return te_int(ctx, v); }
static te_expr *likely(te_expr *c) { return te_call(TE_INTRIN_LIKELY, 1, &c); }

static tir_func *func(te_ctx *ctx, int n, tir_buffer **params, tir_stmt *body) {
    assert_non_null(body);
    tir_func *f = tir_func_new(ctx, "default", n, params, body);
    assert_non_null(f);
    return f;
}

/* First statement of the given kind, pre-order. */
typedef struct {
    tir_stmt_kind kind;
    const tir_stmt *found;
    int n;
} find_state;
static void find_fn(const tir_stmt *s, void *user) {
    find_state *fs = user;
    if (s->kind != fs->kind) return;
    if (!fs->found) fs->found = s;
    fs->n++;
}
static const tir_stmt *find(const tir_stmt *s, tir_stmt_kind kind, int *n) {
    find_state fs = {kind, NULL, 0};
    tir_stmt_visit(s, find_fn, NULL, &fs);
    if (n) *n = fs.n;
    return fs.found;
}

/* for (i.outer, 0, 5) { for (i.inner, 0, 8) {
 *   if (likely(i.outer*8 + i.inner < 37)) B[i.outer*8 + i.inner] = A[...]*2 } } */
static tir_func *guarded_split(te_ctx *ctx, tir_for_kind inner_kind) {
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, 37), *B = tu_param_buf(ctx, "B", TE_FLOAT32, 37);
    te_expr *io = te_var(ctx, "i.outer", TE_INT64), *ii = te_var(ctx, "i.inner", TE_INT64);
    te_expr *idx = te_add(te_mul(io, I(ctx, 8)), ii);
    tir_stmt *st = tir_store(ctx, B, idx, te_mul(ld(ctx, A, idx), te_float(ctx, 2)), NULL);
    tir_stmt *g = tir_if(ctx, likely(te_lt(idx, I(ctx, 37))), st, NULL);
    tir_stmt *inner = tir_for(ctx, ii, I(ctx, 0), I(ctx, 8), inner_kind, g);
    tir_stmt *outer = tir_for(ctx, io, I(ctx, 0), I(ctx, 5), TIR_FOR_SERIAL, inner);
    return func(ctx, 2, (tir_buffer *[]){A, B}, outer);
}

/* ---- loop partition ---- */

static void test_partition_guarded_split(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_func *f = guarded_split(ctx, TIR_FOR_SERIAL);
    const char *before = tu_tir_text(ctx, f);
    assert_int_equal(tu_count(before, "likely"), 1);
    tir_func *g = tir_pass_loop_partition(ctx, f);
    assert_non_null(g);
    const char *after = tu_tir_text(ctx, g);
    /* main range [0, 4) without the guard, tail [4, 5) with it; inside the
     * tail, i.inner is split again at 5. */
    assert_string_equal(after,
                        "func default(A: float32[37], B: float32[37]) {\n"
                        "  for (i.outer, 0, 4) {\n"
                        "    for (i.inner, 0, 8) {\n"
                        "      B[(i.outer*8) + i.inner] = A[(i.outer*8) + i.inner]*2.0f\n"
                        "    }\n"
                        "  }\n"
                        "  for (i.outer, 4, 1) {\n"
                        "    for (i.inner, 0, 5) {\n"
                        "      B[(i.outer*8) + i.inner] = A[(i.outer*8) + i.inner]*2.0f\n"
                        "    }\n"
                        "    for (i.inner, 5, 3) {\n"
                        "      if (likely(((i.outer*8) + i.inner) < 37)) {\n"
                        "        B[(i.outer*8) + i.inner] = A[(i.outer*8) + i.inner]*2.0f\n"
                        "      }\n"
                        "    }\n"
                        "  }\n"
                        "}\n");
    assert_non_null(strstr(after, "for (i.outer, 0, 4) {"));
    assert_non_null(strstr(after, "for (i.outer, 4, 1) {"));
    char *main_part = tu_between(after, "for (i.outer, 0, 4)", "for (i.outer, 4, 1)");
    assert_int_equal(tu_count(main_part, "likely"), 0);
    assert_int_equal(tu_count(main_part, "for (i.inner, 0, 8)"), 1);
    free(main_part);
    assert_non_null(strstr(after, "for (i.inner, 0, 5) {"));
    assert_non_null(strstr(after, "for (i.inner, 5, 3) {"));
    assert_int_equal(tu_count(after, "likely"), 1);
    /* the guard is still there where it can fail */
    const char *tail = strstr(after, "for (i.inner, 5, 3)");
    assert_non_null(strstr(tail, "likely"));

    /* the pipeline then drops what is decided: no guard, no dead tail */
    tir_func *p = tir_run_pipeline(ctx, f, NULL);
    assert_non_null(p);
    const char *pt = tu_tir_text(ctx, p);
    assert_int_equal(tu_count(pt, "likely"), 0);
    assert_int_equal(tu_count(pt, "B["), 2);
    te_ctx_free(ctx);
}

/* An rfactor's tail guard is a select in its partial sums
 * (schedule/rfactor.c): for (ko, 0, 5) { for (l, 0, 8) { P[l] = P[l] +
 * select(likely(ko*8 + l < 37), A[ko*8 + l], 0) } } splits like an IF's
 * guard: the main range [0, 4) without the select, the tail with it. */
static void test_partition_select_guard(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, 37), *P = tu_param_buf(ctx, "P", TE_FLOAT32, 8);
    te_expr *ko = te_iter_var(ctx, "ko", TE_ITER_REDUCE, 5), *l = te_var(ctx, "l", TE_INT64);
    te_expr *idx = te_add(te_mul(ko, I(ctx, 8)), l);
    te_expr *v = te_select(likely(te_lt(idx, I(ctx, 37))), ld(ctx, A, idx), te_float(ctx, 0));
    tir_stmt *st = tir_store(ctx, P, l, te_add(ld(ctx, P, l), v), NULL);
    tir_stmt *inner = tir_for(ctx, l, I(ctx, 0), I(ctx, 8), TIR_FOR_SERIAL, st);
    tir_func *f = func(ctx, 2, (tir_buffer *[]){A, P},
                       tir_for(ctx, ko, I(ctx, 0), I(ctx, 5), TIR_FOR_SERIAL, inner));
    tir_func *g = tir_pass_loop_partition(ctx, f);
    assert_non_null(g);
    const char *after = tu_tir_text(ctx, g);
    char *main_part = tu_between(after, "for (ko, 0, 4)", "for (ko, 4, 1)");
    if (!main_part) fail_msg("not split at 4:\n%s", after);
    assert_int_equal(tu_count(main_part, "select"), 0);
    free(main_part);
    const char *tail = strstr(after, "for (ko, 4, 1)");
    assert_non_null(strstr(tail, "select(likely("));
    te_ctx_free(ctx);
}

/* for (i, 0, 12) { if (likely(0 <= i - 2 < 8)) B[i] = A[i - 2] }: guards
 * at both ends (a padded window), the loop serial or parallel. */
static tir_func *padded_window(te_ctx *ctx, tir_for_kind kind) {
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, 8), *B = tu_param_buf(ctx, "B", TE_FLOAT32, 12);
    te_expr *i = te_var(ctx, "i", TE_INT64);
    te_expr *src = te_sub(i, I(ctx, 2));
    tir_stmt *st = tir_store(ctx, B, i, ld(ctx, A, src), NULL);
    tir_stmt *g = tir_if(ctx, likely(te_and(te_ge(src, I(ctx, 0)), te_lt(src, I(ctx, 8)))), st,
                         NULL);
    return func(ctx, 2, (tir_buffer *[]){A, B}, tir_for(ctx, i, I(ctx, 0), I(ctx, 12), kind, g));
}

/* A serial loop: prologue, main, epilogue. */
static void test_partition_both_ends(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_func *r = tir_pass_loop_partition(ctx, padded_window(ctx, TIR_FOR_SERIAL));
    assert_non_null(r);
    const char *t = tu_tir_text(ctx, r);
    assert_non_null(strstr(t, "for (i, 0, 2) {"));
    assert_non_null(strstr(t, "for (i, 2, 8) {"));
    assert_non_null(strstr(t, "for (i, 10, 2) {"));
    char *mid = tu_between(t, "for (i, 2, 8)", "for (i, 10, 2)");
    assert_int_equal(tu_count(mid, "likely"), 0);
    free(mid);
    assert_int_equal(tu_count(t, "likely"), 2);
    /* the copies have variables of their own */
    const tir_stmt *s = r->body;
    assert_int_equal(s->kind, TIR_SEQ);
    assert_int_equal(s->u.seq.n, 3);
    assert_ptr_not_equal(s->u.seq.stmts[0]->u.loop.var, s->u.seq.stmts[1]->u.loop.var);
    assert_ptr_not_equal(s->u.seq.stmts[2]->u.loop.var, s->u.seq.stmts[1]->u.loop.var);
    te_ctx_free(ctx);
}

/* A parallel loop stays one loop (one fork and join, the edges shared
 * among the threads) and branches per iteration. */
static void test_partition_parallel_branches(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_func *r = tir_pass_loop_partition(ctx, padded_window(ctx, TIR_FOR_PARALLEL));
    assert_non_null(r);
    const char *t = tu_tir_text(ctx, r);
    assert_int_equal(tu_count(t, "parallel"), 1);
    assert_non_null(strstr(t, "for (i, 0, 12) parallel {"));
    const tir_stmt *s = r->body;
    assert_int_equal(s->kind, TIR_FOR);
    const tir_stmt *br = s->u.loop.body;
    assert_int_equal(br->kind, TIR_IF);
    assert_non_null(br->u.if_.else_s);
    assert_non_null(strstr(t, "if ((i >= 2) && (i < 10)) {"));
    char *main_part = tu_between(t, "if ((i >= 2)", "} else {");
    assert_int_equal(tu_count(main_part, "likely"), 0);
    free(main_part);
    char *rest = tu_between(t, "} else {", NULL);
    assert_int_equal(tu_count(rest, "likely"), 1);
    free(rest);
    te_ctx_free(ctx);
}

/* A guard that does not depend on the loop, and a vectorized loop's guard:
 * nothing to split. */
static void test_partition_nothing_to_do(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, 8), *B = tu_param_buf(ctx, "B", TE_FLOAT32, 8);
    te_expr *i = te_var(ctx, "i", TE_INT64), *n = te_var(ctx, "n", TE_INT64);
    tir_stmt *st = tir_store(ctx, B, i, ld(ctx, A, i), NULL);
    tir_stmt *g = tir_if(ctx, likely(te_lt(n, I(ctx, 5))), st, NULL);
    tir_func *f = func(ctx, 2, (tir_buffer *[]){A, B},
                       tir_for(ctx, i, I(ctx, 0), I(ctx, 8), TIR_FOR_SERIAL, g));
    const char *before = tu_tir_text(ctx, f);
    tir_func *r = tir_pass_loop_partition(ctx, f);
    assert_non_null(r);
    assert_string_equal(tu_tir_text(ctx, r), before);

    /* the inner loop is vectorized: the outer loop still splits, the
     * vectorized one never does */
    tir_func *v = guarded_split(ctx, TIR_FOR_VECTORIZED);
    tir_func *rv = tir_pass_loop_partition(ctx, v);
    assert_non_null(rv);
    const char *t = tu_tir_text(ctx, rv);
    assert_non_null(strstr(t, "for (i.outer, 0, 4) {"));
    assert_non_null(strstr(t, "for (i.inner, 0, 8) vectorized {"));
    assert_null(strstr(t, "for (i.inner, 0, 5)"));
    assert_int_equal(tu_count(t, "likely"), 1);
    te_ctx_free(ctx);
}

/* ---- vectorize ---- */

/* for (o, 0, 4) { for (i, 0, 8) vectorized { C[o*8 + i] = A[o*8 + i] + B[o*8 + i] } } */
static void test_vectorize_contiguous(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, 32), *B = tu_param_buf(ctx, "B", TE_FLOAT32, 32),
               *C = tu_param_buf(ctx, "C", TE_FLOAT32, 32);
    te_expr *o = te_var(ctx, "o", TE_INT64), *i = te_var(ctx, "i", TE_INT64);
    te_expr *idx = te_add(te_mul(o, I(ctx, 8)), i);
    tir_stmt *st = tir_store(ctx, C, idx, te_add(ld(ctx, A, idx), ld(ctx, B, idx)), NULL);
    tir_stmt *inner = tir_for(ctx, i, I(ctx, 0), I(ctx, 8), TIR_FOR_VECTORIZED, st);
    tir_func *f = func(ctx, 3, (tir_buffer *[]){A, B, C},
                       tir_for(ctx, o, I(ctx, 0), I(ctx, 4), TIR_FOR_SERIAL, inner));
    te_str why;
    te_str_init(&why);
    tir_func *r = tir_pass_vectorize(ctx, f, &why);
    assert_non_null(r);
    assert_true(why.len == 0);
    te_str_free(&why);
    const char *t = tu_tir_text(ctx, r);
    assert_string_equal(t, "func default(A: float32[32], B: float32[32], C: float32[32]) {\n"
                           "  for (o, 0, 4) {\n"
                           "    C[ramp(o*8, 1, 8)] = A[ramp(o*8, 1, 8)] + B[ramp(o*8, 1, 8)]\n"
                           "  }\n"
                           "}\n");
    assert_null(strstr(t, "vectorized"));
    assert_null(strstr(t, "for (i,"));
    int nstores;
    const tir_stmt *s = find(r->body, TIR_STORE, &nstores);
    assert_int_equal(nstores, 1);
    const te_expr *x = s->u.store.index;
    assert_int_equal(x->kind, TE_RAMP);
    assert_int_equal(x->dtype.lanes, 8);
    int64_t stride;
    assert_true(te_is_const_int(x->u.ramp.stride, &stride));
    assert_int_equal(stride, 1);
    const te_expr *v = s->u.store.value;
    assert_int_equal(v->kind, TE_ADD);
    assert_int_equal(v->dtype.lanes, 8);
    assert_int_equal(v->u.bin.a->kind, TE_LOAD);
    assert_int_equal(v->u.bin.a->u.load.index->kind, TE_RAMP);
    assert_null(s->u.store.predicate);
    /* the ramp's base is the scalar index at i = 0 */
    assert_true(te_expr_uses_var(x->u.ramp.base, o));
    assert_non_null(strstr(t, "ramp("));
    te_ctx_free(ctx);
}

/* A vectorized loop wider than 16 lanes and not a power of two becomes
 * pieces of the widest power of two up to 16 dividing it, in order (48:
 * 3 x 16, 24: 3 x 8, 20: 5 x 4); 64 stays whole, 17 (no such divisor)
 * too. */
static void test_vectorize_pieces(void **state) {
    (void)state;
    const struct {
        int64_t ext, piece;
    } cases[] = {{48, 16}, {24, 8}, {20, 4}, {64, 64}, {17, 17}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        te_ctx *ctx = te_ctx_new();
        int64_t n = cases[c].ext;
        tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, n), *C = tu_param_buf(ctx, "C", TE_FLOAT32, n);
        te_expr *i = te_var(ctx, "i", TE_INT64);
        tir_stmt *st = tir_store(ctx, C, i, te_add(ld(ctx, A, i), te_float_t(ctx, TE_FLOAT32, 1.0)), NULL);
        tir_func *f = func(ctx, 2, (tir_buffer *[]){A, C},
                           tir_for(ctx, i, I(ctx, 0), I(ctx, n), TIR_FOR_VECTORIZED, st));
        tir_func *r = tir_pass_vectorize(ctx, f, NULL);
        assert_non_null(r);
        int nstores;
        const tir_stmt *first = find(r->body, TIR_STORE, &nstores);
        assert_int_equal(nstores, n / cases[c].piece);
        assert_int_equal(first->u.store.index->dtype.lanes, cases[c].piece);
        const char *t = tu_tir_text(ctx, r);
        char want[64];
        snprintf(want, sizeof want, "C[ramp(%lld, 1, %lld)]", (long long)(n - cases[c].piece),
                 (long long)cases[c].piece);
        if (!strstr(t, want)) fail_msg("%lld lanes: no '%s' in\n%s", (long long)n, want, t);
        te_ctx_free(ctx);
    }
}

/* C[i] = A[i] * s[0] + 1: the scalar sides become broadcasts; a strided
 * read A[i*2] stays a ramp of stride 2. */
static void test_vectorize_broadcast_and_stride(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, 32), *S = tu_param_buf(ctx, "s", TE_FLOAT32, 1),
               *C = tu_param_buf(ctx, "C", TE_FLOAT32, 16);
    te_expr *i = te_var(ctx, "i", TE_INT64);
    te_expr *val = te_add(te_mul(ld(ctx, A, te_mul(i, I(ctx, 2))), ld(ctx, S, I(ctx, 0))),
                          te_float(ctx, 1));
    tir_func *f = func(ctx, 3, (tir_buffer *[]){A, S, C},
                       tir_for(ctx, i, I(ctx, 0), I(ctx, 16), TIR_FOR_VECTORIZED,
                               tir_store(ctx, C, i, val, NULL)));
    tir_func *r = tir_pass_vectorize(ctx, f, NULL);
    assert_non_null(r);
    tu_tir_text(ctx, r);
    const tir_stmt *s = r->body;
    assert_int_equal(s->kind, TIR_STORE);
    const te_expr *v = s->u.store.value;
    assert_int_equal(v->dtype.lanes, 16);
    assert_int_equal(v->kind, TE_ADD);
    assert_int_equal(v->u.bin.b->dtype.lanes, 16); /* the constant 1, widened */
    const te_expr *m = v->u.bin.a;
    assert_int_equal(m->kind, TE_MUL);
    assert_int_equal(m->u.bin.b->kind, TE_BROADCAST);
    assert_int_equal(m->u.bin.b->u.bcast.value->kind, TE_LOAD);
    assert_int_equal(m->u.bin.b->u.bcast.value->dtype.lanes, 1);
    const te_expr *a = m->u.bin.a;
    assert_int_equal(a->kind, TE_LOAD);
    assert_int_equal(a->u.load.index->kind, TE_RAMP);
    int64_t base, stride;
    assert_true(te_is_const_int(a->u.load.index->u.ramp.base, &base));
    assert_true(te_is_const_int(a->u.load.index->u.ramp.stride, &stride));
    assert_int_equal(base, 0);
    assert_int_equal(stride, 2);
    te_ctx_free(ctx);
}

/* C[i] = A[idx[i]]: a gather (vector index that is not a ramp). */
static void test_vectorize_gather(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, 64), *X = tu_param_buf(ctx, "idx", TE_INT64, 8),
               *C = tu_param_buf(ctx, "C", TE_FLOAT32, 8);
    te_expr *i = te_var(ctx, "i", TE_INT64);
    tir_func *f = func(ctx, 3, (tir_buffer *[]){A, X, C},
                       tir_for(ctx, i, I(ctx, 0), I(ctx, 8), TIR_FOR_VECTORIZED,
                               tir_store(ctx, C, i, ld(ctx, A, ld(ctx, X, i)), NULL)));
    tir_func *r = tir_pass_vectorize(ctx, f, NULL);
    assert_non_null(r);
    tu_tir_text(ctx, r);
    const te_expr *v = r->body->u.store.value;
    assert_int_equal(v->kind, TE_LOAD);
    assert_int_equal(v->dtype.lanes, 8);
    assert_int_equal(v->u.load.index->kind, TE_LOAD); /* the gather's lane indices */
    assert_int_equal(v->u.load.index->dtype.lanes, 8);
    assert_int_equal(v->u.load.index->u.load.index->kind, TE_RAMP);
    te_ctx_free(ctx);
}

/* A guard that depends on the vectorized variable becomes a lane mask on
 * the store and on the loads it protects; one that does not stays an IF. */
static void test_vectorize_predicated(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_func *f = guarded_split(ctx, TIR_FOR_VECTORIZED);
    te_str why;
    te_str_init(&why);
    tir_func *r = tir_pass_vectorize(ctx, f, &why);
    assert_non_null(r);
    assert_true(why.len == 0);
    te_str_free(&why);
    tu_tir_text(ctx, r);
    int nif;
    find(r->body, TIR_IF, &nif);
    assert_int_equal(nif, 0);
    const tir_stmt *s = find(r->body, TIR_STORE, NULL);
    assert_non_null(s->u.store.predicate);
    assert_int_equal(s->u.store.predicate->dtype.lanes, 8);
    assert_true(te_dtype_is_bool(s->u.store.predicate->dtype));
    const te_expr *v = s->u.store.value;
    assert_int_equal(v->kind, TE_MUL);
    assert_int_equal(v->u.bin.a->kind, TE_LOAD);
    assert_non_null(v->u.bin.a->u.load.predicate);

    /* under the mask, a read provably inside its buffer runs unmasked: the
     * scalar s[0] stays a scalar load (broadcast), A[i] a plain ramp load */
    {
        tir_buffer *A8 = tu_param_buf(ctx, "A8", TE_FLOAT32, 8), *S = tu_param_buf(ctx, "s", TE_FLOAT32, 1),
                   *C8 = tu_param_buf(ctx, "C8", TE_FLOAT32, 8);
        te_expr *i = te_var(ctx, "i", TE_INT64), *n = te_var(ctx, "n", TE_INT64);
        te_expr *val = te_mul(ld(ctx, A8, i), ld(ctx, S, I(ctx, 0)));
        tir_stmt *g = tir_if(ctx, likely(te_lt(i, n)), tir_store(ctx, C8, i, val, NULL), NULL);
        tir_func *h = func(ctx, 3, (tir_buffer *[]){A8, S, C8},
                           tir_for(ctx, i, I(ctx, 0), I(ctx, 8), TIR_FOR_VECTORIZED, g));
        tir_func *rh = tir_pass_vectorize(ctx, h, NULL);
        assert_non_null(rh);
        tu_tir_text(ctx, rh);
        const tir_stmt *hs = rh->body;
        assert_int_equal(hs->kind, TIR_STORE);
        assert_non_null(hs->u.store.predicate);
        const te_expr *m = hs->u.store.value;
        assert_int_equal(m->kind, TE_MUL);
        assert_int_equal(m->u.bin.a->kind, TE_LOAD);
        assert_null(m->u.bin.a->u.load.predicate);
        assert_int_equal(m->u.bin.a->u.load.index->kind, TE_RAMP);
        assert_int_equal(m->u.bin.b->kind, TE_BROADCAST);
        assert_int_equal(m->u.bin.b->u.bcast.value->kind, TE_LOAD);
        assert_null(m->u.bin.b->u.bcast.value->u.load.predicate);
    }

    /* invariant condition: the IF stays, vector code inside */
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, 8), *C = tu_param_buf(ctx, "C", TE_FLOAT32, 8);
    te_expr *i = te_var(ctx, "i", TE_INT64), *n = te_var(ctx, "n", TE_INT64);
    tir_stmt *st = tir_store(ctx, C, i, ld(ctx, A, i), NULL);
    tir_func *g = func(ctx, 2, (tir_buffer *[]){A, C},
                       tir_for(ctx, i, I(ctx, 0), I(ctx, 8), TIR_FOR_VECTORIZED,
                               tir_if(ctx, te_gt(n, I(ctx, 0)), st, NULL)));
    tir_func *rg = tir_pass_vectorize(ctx, g, NULL);
    assert_non_null(rg);
    assert_int_equal(rg->body->kind, TIR_IF);
    assert_int_equal(rg->body->u.if_.then_s->kind, TIR_STORE);
    assert_int_equal(rg->body->u.if_.then_s->u.store.index->kind, TE_RAMP);
    assert_null(rg->body->u.if_.then_s->u.store.predicate);
    te_ctx_free(ctx);
}

/* select(k < 37, A[k], 0) over k = 32..39 (a reduction's tail, as
 * rfactor writes it): the scalar loop reads A[k] only where k < 37, so
 * the vector load is masked by the condition; a clamped read (a
 * padding's A[max(min(k, 36), 0)], or a clamped channel times its
 * stride) stays inside A and runs unmasked, and so does an arm of a
 * scalar condition that reads inside its buffer. */
static void test_vectorize_select_arms(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, 37), *C = tu_param_buf(ctx, "C", TE_FLOAT32, 8);
    te_expr *i = te_var(ctx, "i", TE_INT64), *n = te_var(ctx, "n", TE_INT64);
    te_expr *k = te_add(I(ctx, 32), i), *zero = te_float(ctx, 0);
    te_expr *tail = te_select(te_lt(k, I(ctx, 37)), ld(ctx, A, k), zero);
    te_expr *clamped = te_select(te_lt(k, I(ctx, 37)),
                                 ld(ctx, A, te_max(te_min(k, I(ctx, 36)), I(ctx, 0))), zero);
    te_expr *scalar_cond = te_select(te_gt(n, I(ctx, 0)), ld(ctx, A, i), zero);
    te_expr *strided = te_select(te_lt(k, I(ctx, 37)),
                                 ld(ctx, A, te_mul(te_min(k, I(ctx, 36)), I(ctx, 1))), zero);
    te_expr *vals[4] = {tail, clamped, scalar_cond, strided};
    for (int c = 0; c < 4; c++) {
        tir_func *f = func(ctx, 2, (tir_buffer *[]){A, C},
                           tir_for(ctx, i, I(ctx, 0), I(ctx, 8), TIR_FOR_VECTORIZED,
                                   tir_store(ctx, C, i, vals[c], NULL)));
        tir_func *r = tir_pass_vectorize(ctx, f, NULL);
        assert_non_null(r);
        tu_tir_text(ctx, r);
        assert_int_equal(r->body->kind, TIR_STORE);
        const te_expr *v = r->body->u.store.value;
        assert_int_equal(v->kind, TE_SELECT);
        assert_int_equal(v->dtype.lanes, 8);
        const te_expr *x = v->u.sel.t;
        assert_int_equal(x->kind, TE_LOAD);
        assert_int_equal(x->dtype.lanes, 8);
        if (c == 0) {
            assert_non_null(x->u.load.predicate);
            assert_int_equal(x->u.load.predicate->dtype.lanes, 8);
        } else {
            assert_null(x->u.load.predicate);
        }
    }
    te_ctx_free(ctx);
}

static void test_vectorize_refusals(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, 64), *C = tu_param_buf(ctx, "C", TE_FLOAT32, 8);
    te_expr *i = te_var(ctx, "j.inner", TE_INT64), *k = te_var(ctx, "k", TE_INT64);
    te_expr *n = te_var(ctx, "n", TE_INT64);
    te_str why;

    /* an inner loop */
    te_expr *ik = te_add(te_mul(i, I(ctx, 8)), k);
    tir_stmt *inner = tir_for(ctx, k, I(ctx, 0), I(ctx, 8), TIR_FOR_SERIAL,
                              tir_store(ctx, A, ik, te_float(ctx, 0), NULL));
    tir_func *f1 = func(ctx, 2, (tir_buffer *[]){A, C},
                        tir_for(ctx, i, I(ctx, 0), I(ctx, 8), TIR_FOR_VECTORIZED, inner));
    te_str_init(&why);
    tir_func *r1 = tir_pass_vectorize(ctx, f1, &why);
    assert_non_null(r1);
    tu_assert_msg_has(why.data, "vectorize: loop 'j.inner' stays scalar",
                      "not innermost: it contains loop 'k'");
    assert_int_equal(r1->body->kind, TIR_FOR);
    assert_int_equal(r1->body->u.loop.for_kind, TIR_FOR_SERIAL);
    te_str_free(&why);
    assert_string_equal(te_ctx_errmsg(ctx), "");

    /* a reduction into one element */
    te_expr *acc = te_add(ld(ctx, C, I(ctx, 0)), ld(ctx, A, i));
    tir_func *f2 = func(ctx, 2, (tir_buffer *[]){A, C},
                        tir_for(ctx, i, I(ctx, 0), I(ctx, 8), TIR_FOR_VECTORIZED,
                                tir_store(ctx, C, I(ctx, 0), acc, NULL)));
    te_str_init(&why);
    tir_func *r2 = tir_pass_vectorize(ctx, f2, &why);
    assert_non_null(r2);
    tu_assert_msg_has(why.data, "loop 'j.inner' stays scalar",
                      "stores to 'C' at an index that does not depend on it");
    assert_int_equal(r2->body->u.loop.for_kind, TIR_FOR_SERIAL);
    /* unchanged apart from the kind */
    assert_ptr_equal(r2->body->u.loop.body, f2->body->u.loop.body);
    te_str_free(&why);

    /* a read-modify-write of an invariant element, even with an invariant value */
    tir_func *f2b = func(ctx, 2, (tir_buffer *[]){A, C},
                         tir_for(ctx, i, I(ctx, 0), I(ctx, 8), TIR_FOR_VECTORIZED,
                                 tir_store(ctx, C, I(ctx, 0),
                                           te_add(ld(ctx, C, I(ctx, 0)), te_float(ctx, 1)),
                                           NULL)));
    te_str_init(&why);
    tir_func *r2b = tir_pass_vectorize(ctx, f2b, &why);
    assert_non_null(r2b);
    tu_assert_msg_has(why.data, "stores to 'C' at an index that does not depend on it");
    te_str_free(&why);

    /* a non-constant extent */
    tir_func *f3 = func(ctx, 2, (tir_buffer *[]){A, C},
                        tir_for(ctx, i, I(ctx, 0), n, TIR_FOR_VECTORIZED,
                                tir_store(ctx, C, i, ld(ctx, A, i), NULL)));
    te_str_init(&why);
    tir_func *r3 = tir_pass_vectorize(ctx, f3, &why);
    assert_non_null(r3);
    tu_assert_msg_has(why.data, "loop 'j.inner' stays scalar", "extent is not a constant");
    assert_int_equal(r3->body->u.loop.for_kind, TIR_FOR_SERIAL);
    te_str_free(&why);

    /* too wide */
    tir_buffer *W = tu_param_buf(ctx, "W", TE_FLOAT32, 100);
    tir_func *f4 = func(ctx, 1, (tir_buffer *[]){W},
                        tir_for(ctx, i, I(ctx, 0), I(ctx, 100), TIR_FOR_VECTORIZED,
                                tir_store(ctx, W, i, te_float(ctx, 0), NULL)));
    te_str_init(&why);
    tir_func *r4 = tir_pass_vectorize(ctx, f4, &why);
    assert_non_null(r4);
    tu_assert_msg_has(why.data, "loop 'j.inner' stays scalar", "extent 100 is not in [2, 64]");
    te_str_free(&why);

    /* a lane mask that reads what the guarded store writes */
    tir_stmt *clamp = tir_if(ctx, te_gt(ld(ctx, A, i), te_float(ctx, 0)),
                             tir_store(ctx, A, i, te_float(ctx, 0), NULL), NULL);
    tir_func *f6 = func(ctx, 2, (tir_buffer *[]){A, C},
                        tir_for(ctx, i, I(ctx, 0), I(ctx, 8), TIR_FOR_VECTORIZED, clamp));
    te_str_init(&why);
    tir_func *r6 = tir_pass_vectorize(ctx, f6, &why);
    assert_non_null(r6);
    tu_assert_msg_has(why.data, "loop 'j.inner' stays scalar",
                      "condition that depends on it and reads memory the guarded code writes");
    assert_int_equal(r6->body->u.loop.for_kind, TIR_FOR_SERIAL);
    te_str_free(&why);

    /* why may be NULL; the refused outer loop's inner vectorized loop still
     * vectorizes */
    tir_stmt *vin = tir_for(ctx, k, I(ctx, 0), I(ctx, 8), TIR_FOR_VECTORIZED,
                            tir_store(ctx, A, ik, te_float(ctx, 0), NULL));
    tir_func *f5 = func(ctx, 2, (tir_buffer *[]){A, C},
                        tir_for(ctx, i, I(ctx, 0), I(ctx, 8), TIR_FOR_VECTORIZED, vin));
    tir_func *r5 = tir_pass_vectorize(ctx, f5, NULL);
    assert_non_null(r5);
    assert_int_equal(r5->body->u.loop.for_kind, TIR_FOR_SERIAL);
    assert_int_equal(r5->body->u.loop.body->kind, TIR_STORE);
    assert_int_equal(r5->body->u.loop.body->u.store.index->kind, TE_RAMP);
    assert_string_equal(te_ctx_errmsg(ctx), "");
    te_ctx_free(ctx);
}

/* ---- unroll ---- */

static void test_unroll_explicit(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, 16), *C = tu_param_buf(ctx, "C", TE_FLOAT32, 16);
    te_expr *o = te_var(ctx, "o", TE_INT64), *i = te_var(ctx, "i", TE_INT64);
    te_expr *idx = te_add(te_mul(o, I(ctx, 4)), i);
    tir_stmt *st = tir_store(ctx, C, idx, ld(ctx, A, idx), NULL);
    tir_stmt *in = tir_for(ctx, i, I(ctx, 0), I(ctx, 4), TIR_FOR_UNROLLED, st);
    tir_func *f = func(ctx, 2, (tir_buffer *[]){A, C},
                       tir_for(ctx, o, I(ctx, 0), I(ctx, 4), TIR_FOR_SERIAL, in));
    tir_func *r = tir_pass_unroll(ctx, f);
    assert_non_null(r);
    const char *t = tu_tir_text(ctx, r);
    assert_null(strstr(t, "for (i,"));
    assert_null(strstr(t, "unrolled"));
    int n;
    find(r->body, TIR_STORE, &n);
    assert_int_equal(n, 4);
    assert_int_equal(r->body->kind, TIR_FOR);
    const tir_stmt *seq = r->body->u.loop.body;
    assert_int_equal(seq->kind, TIR_SEQ);
    assert_int_equal(seq->u.seq.n, 4);
    for (int k = 0; k < 4; k++) {
        /* copy k stores at o*4 + k */
        te_expr *want = te_add(te_mul(o, I(ctx, 4)), I(ctx, k));
        te_expr *diff = te_simplify(ctx, te_sub(seq->u.seq.stmts[k]->u.store.index, want));
        int64_t d;
        assert_true(te_is_const_int(diff, &d));
        assert_int_equal(d, 0);
        assert_false(te_expr_uses_var(seq->u.seq.stmts[k]->u.store.index, i));
    }

    /* a non-constant extent: the loop just runs */
    te_expr *nn = te_var(ctx, "n", TE_INT64);
    tir_func *g = func(ctx, 2, (tir_buffer *[]){A, C},
                       tir_for(ctx, i, I(ctx, 0), nn, TIR_FOR_UNROLLED,
                               tir_store(ctx, C, i, ld(ctx, A, i), NULL)));
    tir_func *rg = tir_pass_unroll(ctx, g);
    assert_non_null(rg);
    assert_int_equal(rg->body->kind, TIR_FOR);
    assert_int_equal(rg->body->u.loop.for_kind, TIR_FOR_SERIAL);

    /* too many copies: left as an unroll hint */
    tir_buffer *B = tu_param_buf(ctx, "B", TE_FLOAT32, 5000);
    tir_func *h = func(ctx, 1, (tir_buffer *[]){B},
                       tir_for(ctx, i, I(ctx, 0), I(ctx, 5000), TIR_FOR_UNROLLED,
                               tir_store(ctx, B, i, te_float(ctx, 0), NULL)));
    tir_func *rh = tir_pass_unroll(ctx, h);
    assert_non_null(rh);
    assert_int_equal(rh->body->kind, TIR_FOR);
    assert_int_equal(rh->body->u.loop.for_kind, TIR_FOR_UNROLLED);
    te_ctx_free(ctx);
}

/* for (o, 0, 4) pragma(auto_unroll_max_step=S) { for (i, 0, 4) { for (j, 0, 2) { C[..] = .. } } } */
static tir_func *pragma_nest(te_ctx *ctx, int64_t max_step, bool explicit_) {
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, 32), *C = tu_param_buf(ctx, "C", TE_FLOAT32, 32);
    te_expr *o = te_var(ctx, "o", TE_INT64), *i = te_var(ctx, "i", TE_INT64),
            *j = te_var(ctx, "j", TE_INT64);
    te_expr *idx = te_add(te_add(te_mul(o, I(ctx, 8)), te_mul(i, I(ctx, 2))), j);
    tir_stmt *st = tir_store(ctx, C, idx, ld(ctx, A, idx), NULL);
    tir_stmt *lj = tir_for(ctx, j, I(ctx, 0), I(ctx, 2), TIR_FOR_SERIAL, st);
    tir_stmt *li = tir_for(ctx, i, I(ctx, 0), I(ctx, 4), TIR_FOR_SERIAL, lj);
    tir_stmt *lo = tir_for(ctx, o, I(ctx, 0), I(ctx, 4), TIR_FOR_SERIAL, li);
    lo->u.loop.auto_unroll_max_step = max_step;
    lo->u.loop.unroll_explicit = explicit_;
    return func(ctx, 2, (tir_buffer *[]){A, C}, lo);
}

/* pragma_nest with a tensor intrinsic's call in place of the store: a
 * call is one step, as a store is (counted as none, a loop of calls
 * looked free to unroll: a reduction loop of 48 around 768 x86.dpbf16
 * calls went to LLVM's full unroll and outlasted the tuner's build
 * timeout). */
static void test_unroll_counts_tensor_calls(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *C = tu_param_buf(ctx, "C", TE_FLOAT32, 512),
               *A = tu_param_buf(ctx, "A", TE_BFLOAT16, 64),
               *B = tu_param_buf(ctx, "B", TE_BFLOAT16, 1024);
    te_expr *o = te_var(ctx, "o", TE_INT64), *i = te_var(ctx, "i", TE_INT64),
            *j = te_var(ctx, "j", TE_INT64);
    te_expr *row = te_add(te_mul(o, I(ctx, 4)), i);
    te_expr *args[3] = {ld(ctx, C, te_add(te_mul(row, I(ctx, 32)), te_mul(j, I(ctx, 16)))),
                        ld(ctx, A, te_mul(row, I(ctx, 2))), ld(ctx, B, te_mul(j, I(ctx, 32)))};
    tir_stmt *call = tir_tensor_call(ctx, TIR_X86_DPBF16, 3, args, NULL, NULL);
    assert_non_null(call);
    tir_stmt *lj = tir_for(ctx, j, I(ctx, 0), I(ctx, 2), TIR_FOR_SERIAL, call);
    tir_stmt *li = tir_for(ctx, i, I(ctx, 0), I(ctx, 4), TIR_FOR_SERIAL, lj);
    tir_stmt *lo = tir_for(ctx, o, I(ctx, 0), I(ctx, 4), TIR_FOR_SERIAL, li);
    lo->u.loop.auto_unroll_max_step = 4;
    tir_func *r = tir_pass_unroll(ctx, func(ctx, 3, (tir_buffer *[]){C, A, B}, lo));
    assert_non_null(r);
    const char *t = tu_tir_text(ctx, r);
    /* limit 4: j (2 calls) becomes a hint, i (8 calls) stays a loop */
    assert_non_null(strstr(t, "for (i, 0, 4) {"));
    assert_non_null(strstr(t, "for (j, 0, 2) unrolled {"));
    te_ctx_free(ctx);
}

static void test_unroll_auto_max_step(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    /* limit 4: j (2 steps) becomes a hint, i (8 steps) stays, o is the pragma loop */
    tir_func *r = tir_pass_unroll(ctx, pragma_nest(ctx, 4, false));
    assert_non_null(r);
    const char *t = tu_tir_text(ctx, r);
    assert_non_null(strstr(t, "for (o, 0, 4) pragma(auto_unroll_max_step=4) {"));
    assert_non_null(strstr(t, "for (i, 0, 4) {"));
    assert_non_null(strstr(t, "for (j, 0, 2) unrolled {"));

    /* limit 8: both inner loops are hints */
    t = tu_tir_text(ctx, tir_pass_unroll(ctx, pragma_nest(ctx, 8, false)));
    assert_non_null(strstr(t, "for (i, 0, 4) unrolled {"));
    assert_non_null(strstr(t, "for (j, 0, 2) unrolled {"));
    assert_null(strstr(t, "for (o, 0, 4) unrolled"));

    /* explicit: the copies themselves, 8 stores in the o loop */
    tir_func *e = tir_pass_unroll(ctx, pragma_nest(ctx, 8, true));
    assert_non_null(e);
    t = tu_tir_text(ctx, e);
    assert_null(strstr(t, "for (i,"));
    assert_null(strstr(t, "for (j,"));
    assert_non_null(strstr(t, "for (o, 0, 4)"));
    int n;
    find(e->body, TIR_STORE, &n);
    assert_int_equal(n, 8);

    /* explicit with limit 4: j copied, i kept as a loop */
    e = tir_pass_unroll(ctx, pragma_nest(ctx, 4, true));
    t = tu_tir_text(ctx, e);
    assert_non_null(strstr(t, "for (i, 0, 4) {"));
    assert_null(strstr(t, "for (j,"));
    find(e->body, TIR_STORE, &n);
    assert_int_equal(n, 2);

    /* no pragma: nothing */
    tir_func *p = pragma_nest(ctx, 0, false);
    assert_string_equal(tu_tir_text(ctx, tir_pass_unroll(ctx, p)), tu_tir_text(ctx, p));
    te_ctx_free(ctx);
}

/* for (o, 0, 2) pragma(auto_unroll_max_step=4096) { nests times:
 * for (i, 0, 64) { for (j, 0, 62) { C[o, n, i, j] = .. } } }: each nest's
 * 3,968 copies fit the loop cap of 4,096; two of them (7,936) pass the
 * function's 4,096, one does not. */
static tir_func *budget_nests(te_ctx *ctx, int nests, bool explicit_) {
    int64_t per = 64 * 62;
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, per),
               *C = tu_param_buf(ctx, "C", TE_FLOAT32, 2 * nests * per);
    te_expr *o = te_var(ctx, "o", TE_INT64);
    tir_stmt *body[3];
    for (int n = 0; n < nests; n++) {
        te_expr *i = te_var(ctx, "i", TE_INT64), *j = te_var(ctx, "j", TE_INT64);
        te_expr *src = te_add(te_mul(i, I(ctx, 62)), j);
        te_expr *dst = te_add(te_mul(te_add(te_mul(o, I(ctx, nests)), I(ctx, n)), I(ctx, per)), src);
        tir_stmt *st = tir_store(ctx, C, dst, ld(ctx, A, src), NULL);
        body[n] = tir_for(ctx, i, I(ctx, 0), I(ctx, 64), TIR_FOR_SERIAL,
                          tir_for(ctx, j, I(ctx, 0), I(ctx, 62), TIR_FOR_SERIAL, st));
    }
    tir_stmt *lo = tir_for(ctx, o, I(ctx, 0), I(ctx, 2), TIR_FOR_SERIAL, tir_seq(ctx, nests, body));
    lo->u.loop.auto_unroll_max_step = 4096;
    lo->u.loop.unroll_explicit = explicit_;
    return func(ctx, 2, (tir_buffer *[]){A, C}, lo);
}

static void test_unroll_function_budget(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    /* one nest, 3,968 copies: within the budget, all copied */
    tir_func *r = tir_pass_unroll(ctx, budget_nests(ctx, 1, true));
    assert_non_null(r);
    int n;
    find(r->body, TIR_STORE, &n);
    assert_int_equal(n, 64 * 62);
    assert_null(strstr(tu_tir_text(ctx, r), "for (i,"));

    /* two nests: the limit halves to 2,048, so the i loops (3,968
     * steps) stay loops and only the j loops (62) are copied */
    r = tir_pass_unroll(ctx, budget_nests(ctx, 2, true));
    assert_non_null(r);
    const char *t = tu_tir_text(ctx, r);
    find(r->body, TIR_STORE, &n);
    assert_int_equal(n, 2 * 62);
    assert_int_equal(tu_count_substr(t, "for (i, 0, 64) {"), 2);
    assert_null(strstr(t, "for (j,"));
    assert_non_null(strstr(t, "pragma(auto_unroll_max_step=4096"));

    /* the hinted pass settles on the same limit: j hinted, i not */
    t = tu_tir_text(ctx, tir_pass_unroll_hinted(ctx, budget_nests(ctx, 2, true)));
    assert_int_equal(tu_count_substr(t, "for (i, 0, 64) {"), 2);
    assert_int_equal(tu_count_substr(t, "for (j, 0, 62) unrolled {"), 2);
    t = tu_tir_text(ctx, tir_pass_unroll_hinted(ctx, budget_nests(ctx, 1, true)));
    assert_int_equal(tu_count_substr(t, "for (i, 0, 64) unrolled {"), 1);

    /* hints alone copy nothing, so nothing is halved */
    t = tu_tir_text(ctx, tir_pass_unroll(ctx, budget_nests(ctx, 2, false)));
    assert_int_equal(tu_count_substr(t, "for (i, 0, 64) unrolled {"), 2);
    te_ctx_free(ctx);
}

/* ---- end to end (schedule -> pipeline -> C backend) ---- */

static const char *targets[] = {"c", "llvm"};
#define NTARGETS 2

static void mm_split_vectorize(int64_t M, int64_t N, int64_t K, int64_t factor, const char *target) {
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_matmul(ctx, M, N, K);
    sch_schedule *s = sch_create(ctx, 1, &c.out);
    assert_non_null(s);
    te_expr *jo, *ji, *ko, *ki;
    assert_int_equal(sch_split(s, c.out, c.ax[1], factor, &jo, &ji), 0);
    assert_int_equal(sch_split(s, c.out, c.rax[0], 4, &ko, &ki), 0);
    assert_int_equal(sch_reorder(s, c.out, 5, (te_expr *[]){c.ax[0], jo, ko, ki, ji}), 0);
    assert_int_equal(sch_vectorize(s, c.out, ji), 0);
    assert_int_equal(sch_unroll(s, c.out, ki), 0);
    const char *text = sch_lower_text(s, TE_TENSORS(c.in[0], c.in[1], c.out));
    if (!text) fprintf(stderr, "lower: %s\n", te_ctx_errmsg(ctx));
    assert_non_null(text);
    if (getenv("LOOM_TEST_DUMP")) fprintf(stderr, "%s\n", text);
    assert_non_null(strstr(text, "ramp("));
    int64_t bad = sh_run(&c, s, target);
    if (bad) fprintf(stderr, "%s\n", text);
    assert_int_equal(bad, 0);
    te_ctx_free(ctx);
}

static void test_e2e_matmul_split_vectorize(void **state) {
    (void)state;
    for (int t = 0; t < NTARGETS; t++) {
        mm_split_vectorize(13, 37, 19, 8, targets[t]); /* 37 = 4*8 + 5: a guarded tail */
        mm_split_vectorize(16, 32, 8, 8, targets[t]);  /* divisible: no guard at all */
        mm_split_vectorize(7, 96, 9, 48, targets[t]);  /* 48 lanes: three 16-lane pieces */
    }
}

/* auto_unroll_max_step through the whole pipeline, explicit and hinted. */
static void test_e2e_matmul_auto_unroll(void **state) {
    (void)state;
    for (int ex = 0; ex < 4; ex++) {
        const char *target = targets[ex / 2];
        te_ctx *ctx = te_ctx_new();
        sched_case c = sh_matmul(ctx, 21, 18, 11);
        sch_schedule *s = sch_create(ctx, 1, &c.out);
        te_expr *io, *jo, *ii, *ji;
        assert_int_equal(sch_tile(s, c.out, c.ax[0], c.ax[1], 4, 4, &io, &jo, &ii, &ji), 0);
        assert_int_equal(sch_pragma(s, c.out, jo, "auto_unroll_max_step", 16), 0);
        assert_int_equal(sch_pragma(s, c.out, jo, "unroll_explicit", ex % 2), 0);
        const char *text = sch_lower_text(s, TE_TENSORS(c.in[0], c.in[1], c.out));
        assert_non_null(text);
        if (getenv("LOOM_TEST_DUMP")) fprintf(stderr, "%s\n", text);
        /* the 11-step k loops are within the limit of 16, j.inner's 48 are not */
        if (ex % 2) {
            assert_null(strstr(text, "for (k,"));
            assert_non_null(strstr(text, "for (j.inner,"));
        } else {
            assert_non_null(strstr(text, "for (k, 0, 11) unrolled {"));
            assert_null(strstr(text, "for (j.inner, 0, 4) unrolled"));
        }
        int64_t bad = sh_run(&c, s, target);
        if (bad) fprintf(stderr, "%s\n", text);
        assert_int_equal(bad, 0);
        te_ctx_free(ctx);
    }
}

/* Both stages of a 64 x 128 chain under auto_unroll_max_step = 4096,
 * explicit: each stage's 4,096 copies fit a loop, both together pass the
 * function's 4,096, so only the rows are copied; the result is the same. */
static void test_e2e_chain_unroll_budget(void **state) {
    (void)state;
    for (int t = 0; t < NTARGETS; t++) {
        te_ctx *ctx = te_ctx_new();
        sched_case c = sh_chain(ctx, 64, 128);
        sch_schedule *s = sch_create(ctx, 1, &c.out);
        te_tensor *stages[2] = {c.mid, c.out};
        for (int k = 0; k < 2; k++) {
            te_expr *io, *ii;
            assert_int_equal(sch_split(s, stages[k], sch_axis(stages[k], 0), 32, &io, &ii), 0);
            assert_int_equal(sch_pragma(s, stages[k], io, "auto_unroll_max_step", 4096), 0);
            assert_int_equal(sch_pragma(s, stages[k], io, "unroll_explicit", 1), 0);
        }
        const char *text = sch_lower_text(s, TE_TENSORS(c.in[0], c.out));
        assert_non_null(text);
        if (getenv("LOOM_TEST_DUMP")) fprintf(stderr, "%s\n", text);
        assert_non_null(strstr(text, "for (i.inner, 0, 32) {"));
        assert_non_null(strstr(text, "for (x.inner, 0, 32) {"));
        assert_int_equal(tu_count_substr(text, "for ("), 4);
        int64_t bad = sh_run(&c, s, targets[t]);
        if (bad) fprintf(stderr, "%s\n", text);
        assert_int_equal(bad, 0);
        te_ctx_free(ctx);
    }
}

/* The vectorized inner loop of a two-stage chain with a tail. */
static void test_e2e_chain_vectorize_tail(void **state) {
    (void)state;
    for (int t = 0; t < NTARGETS; t++) {
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_chain(ctx, 7, 45);
    sch_schedule *s = sch_create(ctx, 1, &c.out);
    te_expr *jo, *ji;
    assert_int_equal(sch_split(s, c.out, c.ax[1], 16, &jo, &ji), 0);
    assert_int_equal(sch_vectorize(s, c.out, ji), 0);
    assert_int_equal(sch_parallel(s, c.out, c.ax[0]), 0);
    int64_t bad = sh_run(&c, s, targets[t]);
    if (bad) fprintf(stderr, "%s\n", sch_lower_text(s, TE_TENSORS(c.in[0], c.out)));
    assert_int_equal(bad, 0);
    te_ctx_free(ctx);
    }
}

/* Conv2d with its padding stage computed inside the output's tiles: the
 * attached regions reach past the tensor's edges (guards at both ends),
 * and the x split does not divide; the inner x loop is vectorized. */
static void test_e2e_conv2d_attached_edges(void **state) {
    (void)state;
    for (int t = 0; t < NTARGETS; t++) {
        te_ctx *ctx = te_ctx_new();
        sched_case c = sh_conv2d(ctx, 1, 3, 13, 13, 4, 3, 3, 1, 1);
        sch_schedule *s = sch_create(ctx, 1, &c.out);
        assert_non_null(s);
        te_expr *yo, *yi, *xo, *xi;
        assert_int_equal(sch_tile(s, c.out, c.ax[2], c.ax[3], 4, 8, &yo, &xo, &yi, &xi), 0);
        assert_int_equal(sch_reorder(s, c.out, 7,
                                     (te_expr *[]){yo, xo, c.rax[0], c.rax[1], c.rax[2], yi, xi}),
                         0);
        assert_int_equal(sch_compute_at(s, c.mid, c.out, xo), 0);
        assert_int_equal(sch_vectorize(s, c.out, xi), 0);
        tir_func *f = sch_lower(s, TE_TENSORS(c.in[0], c.in[1], c.out), "default");
        assert_non_null(f);
        te_str why;
        te_str_init(&why);
        tir_pipeline_options opts = {.vectorize_why = &why};
        tir_func *g = tir_run_pipeline(ctx, f, &opts);
        assert_non_null(g);
        /* every piece of x.inner vectorizes: the tail by lane masks */
        assert_true(why.len == 0);
        te_str_free(&why);
        const char *text = tir_func_str(ctx, g);
        if (getenv("LOOM_TEST_DUMP")) fprintf(stderr, "%s\n", text);
        assert_null(strstr(text, "for (x.inner"));
        assert_non_null(strstr(text, "ramp("));
        int64_t bad = sh_run(&c, s, targets[t]);
        if (bad) fprintf(stderr, "%s\n", text);
        assert_int_equal(bad, 0);
        te_ctx_free(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partition_guarded_split),
        cmocka_unit_test(test_partition_select_guard),
        cmocka_unit_test(test_partition_both_ends),
        cmocka_unit_test(test_partition_parallel_branches),
        cmocka_unit_test(test_partition_nothing_to_do),
        cmocka_unit_test(test_vectorize_contiguous),
        cmocka_unit_test(test_vectorize_pieces),
        cmocka_unit_test(test_vectorize_broadcast_and_stride),
        cmocka_unit_test(test_vectorize_gather),
        cmocka_unit_test(test_vectorize_predicated),
        cmocka_unit_test(test_vectorize_select_arms),
        cmocka_unit_test(test_vectorize_refusals),
        cmocka_unit_test(test_unroll_explicit),
        cmocka_unit_test(test_unroll_function_budget),
        cmocka_unit_test(test_unroll_auto_max_step),
        cmocka_unit_test(test_unroll_counts_tensor_calls),
        cmocka_unit_test(test_e2e_matmul_split_vectorize),
        cmocka_unit_test(test_e2e_matmul_auto_unroll),
        cmocka_unit_test(test_e2e_chain_vectorize_tail),
        cmocka_unit_test(test_e2e_chain_unroll_budget),
        cmocka_unit_test(test_e2e_conv2d_attached_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
