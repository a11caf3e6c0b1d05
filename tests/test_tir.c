/*
 * tests/test_tir.c — the loop IR: builders, the printer (goldens), the
 * generic traversal, and the passes, each shown as the program before and
 * after (in the style of TVM's tests/python/tir-transform), compared as
 * printed text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ---- helpers ---- */

static tir_buffer *buf(te_ctx *ctx, const char *name, int ndim, const int64_t *shape,
                       tir_scope scope, bool param) {
    tir_buffer *b = tir_buffer_new(ctx, name, TE_FLOAT32, ndim, shape, scope);
    assert_non_null(b);
    b->is_param = param;
    return b;
}

static te_expr *ivar(te_ctx *ctx, const char *name) { return te_var(ctx, name, TE_INT64); }
static te_expr *I(te_ctx *ctx, int64_t v) { return te_int(ctx, v); }

static tir_stmt *loop(te_ctx *ctx, te_expr *v, int64_t ext, tir_for_kind k, tir_stmt *body) {
    tir_stmt *s = tir_for(ctx, v, I(ctx, 0), I(ctx, ext), k, body);
    assert_non_null(s);
    return s;
}

static te_expr *bl2(tir_buffer *b, te_expr *i, te_expr *j) {
    return tir_buffer_load(b, 2, (te_expr *[]){i, j});
}

static tir_stmt *bst2(te_ctx *ctx, tir_buffer *b, te_expr *i, te_expr *j, te_expr *v) {
    return tir_buffer_store(ctx, b, 2, (te_expr *[]){i, j}, v);
}

static te_expr *likely(te_expr *c) { return te_call(TE_INTRIN_LIKELY, 1, (te_expr *[]){c}); }

/* Compares printed text, showing both on a mismatch. Building with
 * -DGOLDEN_DUMP prints every mismatch without failing (to review a
 * deliberate printer change). */
static void expect_text(const char *what, const char *got, const char *want) {
    assert_non_null(got);
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "%s: printed text differs\n--- want\n%s--- got\n%s---\n", what, want, got);
#ifndef GOLDEN_DUMP
        fail();
#endif
    }
}

static void expect_func(te_ctx *ctx, const char *what, const tir_func *f, const char *want) {
    if (!f) fprintf(stderr, "%s: %s\n", what, te_ctx_errmsg(ctx));
    assert_non_null(f);
    expect_text(what, tir_func_str(ctx, f), want);
}

static const char *stmt_str(const tir_stmt *s) {
    static char text[4096];
    te_str out;
    te_str_init(&out);
    tir_stmt_print(&out, s, 0);
    snprintf(text, sizeof text, "%s", out.data ? out.data : "");
    te_str_free(&out);
    return text;
}

/* ---- buffers and builders ---- */

static void test_buffer(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *b = tir_buffer_new(ctx, "T", TE_FLOAT32, 3, (int64_t[]){2, 3, 4}, TIR_SCOPE_LOCAL);
    assert_non_null(b);
    assert_int_equal(b->strides[0], 12);
    assert_int_equal(b->strides[1], 4);
    assert_int_equal(b->strides[2], 1);
    assert_int_equal(tir_buffer_size(b), 24);
    assert_non_null(b->data);
    assert_int_equal(b->data->kind, TE_VAR);
    assert_int_equal(b->data->dtype.code, TE_HANDLE);
    assert_string_equal(b->data->u.var.name, "T");
    tir_buffer *b2 = tir_buffer_new(ctx, "T", TE_FLOAT32, 1, (int64_t[]){5}, TIR_SCOPE_LOCAL);
    assert_true(b2->id != b->id);
    /* storage_align-style padding: the row stride 4 grows to 5 */
    b->strides[1] = 5;
    b->strides[0] = 15;
    assert_int_equal(tir_buffer_size(b), 1 + 1 * 15 + 2 * 5 + 3);
    assert_string_equal(tir_scope_name(TIR_SCOPE_GLOBAL), "global");
    assert_string_equal(tir_scope_name(TIR_SCOPE_SHARED), "shared");
    assert_string_equal(tir_for_kind_name(TIR_FOR_VECTORIZED), "vectorized");
    assert_string_equal(tir_for_kind_name(TIR_FOR_UNROLLED), "unrolled");

    /* user mistakes */
    assert_null(tir_buffer_new(ctx, "Z", TE_FLOAT32, 2, (int64_t[]){4, 0}, TIR_SCOPE_GLOBAL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "buffer 'Z'", "extent 0 of dimension 1", "positive");
    assert_null(tir_buffer_new(ctx, "R", TE_FLOAT32, TE_MAX_DIMS + 1,
                               (int64_t[TE_MAX_DIMS + 1]){1}, TIR_SCOPE_GLOBAL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "buffer 'R'", "rank 9");
    assert_null(tir_buffer_new(ctx, "V", TE_DTYPE(TE_FLOAT, 32, 4), 1, (int64_t[]){4},
                               TIR_SCOPE_GLOBAL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "buffer 'V'", "float32x4", "scalar");
    te_ctx_free(ctx);
}

static void test_expr_builders(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = buf(ctx, "A", 2, (int64_t[]){4, 8}, TIR_SCOPE_GLOBAL, true);
    te_expr *i = ivar(ctx, "i");
    te_expr *r = tir_ramp(i, I(ctx, 1), 8);
    assert_non_null(r);
    assert_int_equal(r->kind, TE_RAMP);
    assert_true(te_dtype_eq(r->dtype, TE_DTYPE(TE_INT, 64, 8)));
    te_expr *bc = tir_broadcast(te_float(ctx, 1.0), 8);
    assert_true(te_dtype_eq(bc->dtype, TE_DTYPE(TE_FLOAT, 32, 8)));
    te_expr *ld = tir_load(ctx, A, r, NULL);
    assert_true(te_dtype_eq(ld->dtype, TE_DTYPE(TE_FLOAT, 32, 8)));
    te_expr *bl = bl2(A, i, i);
    assert_int_equal(bl->kind, TE_BUFFER_LOAD);
    assert_true(te_dtype_eq(bl->dtype, TE_FLOAT32));

    /* user mistakes */
    assert_null(tir_buffer_load(A, 1, (te_expr *[]){i}));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "buffer_load", "'A' has 2 dimensions, got 1 indices");
    assert_null(tir_ramp(i, I(ctx, 1), 0));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "ramp", "0 lanes");
    assert_null(tir_broadcast(bc, 2));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "broadcast", "float32x8", "scalar");
    te_ctx_clear_error(ctx);
    assert_null(tir_for(ctx, i, I(ctx, 0), I(ctx, 4), TIR_FOR_SERIAL, NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "for: NULL operand");
    te_ctx_free(ctx);
}

static void test_seq(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_stmt *a = tir_barrier(ctx), *b = tir_evaluate(ctx, I(ctx, 1)), *c = tir_barrier(ctx);
    tir_stmt *inner = tir_seq(ctx, 3, (tir_stmt *[]){b, tir_noop(ctx), c});
    assert_int_equal(inner->kind, TIR_SEQ);
    assert_int_equal(inner->u.seq.n, 2);
    tir_stmt *outer = tir_seq(ctx, 3, (tir_stmt *[]){a, inner, tir_noop(ctx)});
    assert_int_equal(outer->kind, TIR_SEQ);
    assert_int_equal(outer->u.seq.n, 3);
    assert_ptr_equal(outer->u.seq.stmts[0], a);
    assert_ptr_equal(outer->u.seq.stmts[1], b);
    assert_ptr_equal(outer->u.seq.stmts[2], c);
    /* one statement is itself, none is a NOOP */
    assert_ptr_equal(tir_seq(ctx, 2, (tir_stmt *[]){tir_noop(ctx), a}), a);
    assert_int_equal(tir_seq(ctx, 0, NULL)->kind, TIR_NOOP);
    assert_int_equal(tir_seq(ctx, 1, (tir_stmt *[]){tir_noop(ctx)})->kind, TIR_NOOP);
    assert_null(tir_seq(ctx, 2, (tir_stmt *[]){a, NULL}));
    /* loop copies keep kind, tag and pragmas */
    te_expr *i = ivar(ctx, "i");
    tir_stmt *l = loop(ctx, i, 4, TIR_FOR_PARALLEL, a);
    assert_int_equal(l->u.loop.auto_unroll_max_step, 0);
    assert_false(l->u.loop.unroll_explicit);
    assert_null(l->u.loop.thread_tag);
    l->u.loop.auto_unroll_max_step = 8;
    tir_stmt *l2 = tir_for_with_body(ctx, l, c);
    assert_int_equal(l2->u.loop.for_kind, TIR_FOR_PARALLEL);
    assert_int_equal(l2->u.loop.auto_unroll_max_step, 8);
    assert_ptr_equal(l2->u.loop.body, c);
    assert_ptr_equal(l->u.loop.body, a);
    te_ctx_free(ctx);
}

static void test_func(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = buf(ctx, "A", 1, (int64_t[]){4}, TIR_SCOPE_GLOBAL, true);
    tir_buffer *params[2] = {A, A};
    tir_func *f = tir_func_new(ctx, "f", 2, params, tir_barrier(ctx));
    assert_non_null(f);
    params[1] = NULL; /* the function keeps its own copy of the array */
    assert_ptr_equal(f->params[1], A);
    tir_func *g = tir_func_with_body(ctx, f, tir_noop(ctx));
    assert_string_equal(g->name, "f");
    assert_int_equal(g->nparams, 2);
    assert_int_equal(g->body->kind, TIR_NOOP);
    assert_int_equal(f->body->kind, TIR_BARRIER);

    /* user mistakes */
    assert_null(tir_func_new(ctx, "", 0, NULL, tir_noop(ctx)));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "func", "non-empty name");
    assert_null(tir_func_new(ctx, "h", 2, params, tir_noop(ctx)));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "func 'h'", "parameter 1 is NULL");
    assert_null(tir_for_with_body(ctx, tir_noop(ctx), tir_noop(ctx)));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "for_with_body", "not a loop");
    te_ctx_free(ctx);
}

/* ---- printer ---- */

static void test_print(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = buf(ctx, "A", 2, (int64_t[]){64, 32}, TIR_SCOPE_GLOBAL, true);
    tir_buffer *C = buf(ctx, "C", 1, (int64_t[]){64}, TIR_SCOPE_GLOBAL, true);
    tir_buffer *T = buf(ctx, "T", 2, (int64_t[]){2, 8}, TIR_SCOPE_LOCAL, false);
    te_expr *io = ivar(ctx, "i.outer"), *ii = ivar(ctx, "i.inner"), *k = ivar(ctx, "k");
    te_expr *i = te_add(te_mul(io, I(ctx, 8)), ii);
    tir_stmt *init = tir_buffer_store(ctx, C, 1, &i, te_float(ctx, 0.0));
    tir_stmt *upd = tir_buffer_store(
        ctx, C, 1, &i, te_add(tir_buffer_load(C, 1, &i), bl2(A, i, k)));
    tir_stmt *kl = loop(ctx, k, 32, TIR_FOR_UNROLLED, upd);
    tir_stmt *guarded = tir_if(ctx, likely(te_lt(i, I(ctx, 60))),
                               tir_seq(ctx, 2, (tir_stmt *[]){init, kl}), tir_barrier(ctx));
    tir_stmt *tst = tir_store(ctx, T, ii, te_float(ctx, 1.5), NULL);
    tir_stmt *il = loop(ctx, ii, 8, TIR_FOR_VECTORIZED, tir_seq(ctx, 2, (tir_stmt *[]){tst, guarded}));
    tir_stmt *ol = loop(ctx, io, 8, TIR_FOR_PARALLEL, tir_allocate(ctx, T, il));
    ol->u.loop.auto_unroll_max_step = 16;
    ol->u.loop.unroll_explicit = true;
    te_expr *tx = ivar(ctx, "tx");
    tir_stmt *tl = loop(ctx, tx, 32, TIR_FOR_THREAD, tir_evaluate(ctx, te_exp(te_float(ctx, 2.0))));
    tl->u.loop.thread_tag = "threadIdx.x";
    tir_stmt *body = tir_seq(ctx, 2, (tir_stmt *[]){ol, tl});
    tir_func *f = tir_func_new(ctx, "default", 2, (tir_buffer *[]){A, C}, body);
    expect_func(ctx, "print", f,
                "func default(A: float32[64, 32], C: float32[64]) {\n"
                "  for (i.outer, 0, 8) parallel pragma(auto_unroll_max_step=16, unroll_explicit) {\n"
                "    allocate T[float32 * 16] local {\n"
                "      for (i.inner, 0, 8) vectorized {\n"
                "        T[i.inner] = 1.5f\n"
                "        if (likely(((i.outer*8) + i.inner) < 60)) {\n"
                "          C[(i.outer*8) + i.inner] = 0.0f\n"
                "          for (k, 0, 32) unrolled {\n"
                "            C[(i.outer*8) + i.inner] = C[(i.outer*8) + i.inner] + A[(i.outer*8) + i.inner, k]\n"
                "          }\n"
                "        } else {\n"
                "          barrier\n"
                "        }\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "  for (tx, 0, 32) thread threadIdx.x {\n"
                "    exp(2.0f)\n"
                "  }\n"
                "}\n");
    /* the same statement printed twice reads the same */
    const char *one = te_strdup(ctx, stmt_str(body));
    assert_string_equal(one, stmt_str(body));
    te_ctx_free(ctx);
}

/* ---- traversal ---- */

static tir_stmt *count_stmt(tir_stmt *s, void *user) {
    (*(int *)user)++;
    return s;
}

static te_expr *same_expr(te_expr *e, void *user) {
    (void)user;
    return e;
}

static tir_stmt *fail_on_store(tir_stmt *s, void *user) {
    (void)user;
    return s->kind == TIR_STORE ? NULL : s;
}

static void count_visit(const tir_stmt *s, void *user) {
    (void)s;
    (*(int *)user)++;
}

static void test_map_shares(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *B = buf(ctx, "B", 1, (int64_t[]){16}, TIR_SCOPE_GLOBAL, true);
    tir_buffer *D = buf(ctx, "D", 1, (int64_t[]){16}, TIR_SCOPE_GLOBAL, true);
    te_expr *i = ivar(ctx, "i"), *n = ivar(ctx, "n");
    tir_stmt *s1 = tir_store(ctx, B, i, te_float(ctx, 1.0), NULL);
    tir_stmt *s2 = tir_store(ctx, D, n, te_float(ctx, 2.0), NULL);
    tir_stmt *l = loop(ctx, i, 16, TIR_FOR_SERIAL, tir_seq(ctx, 2, (tir_stmt *[]){s1, s2}));

    int calls = 0;
    assert_ptr_equal(tir_stmt_map(ctx, l, count_stmt, same_expr, &calls), l);
    assert_int_equal(calls, 4); /* two stores, the seq, the loop */
    int visits = 0;
    tir_stmt_visit(l, count_visit, NULL, &visits);
    assert_int_equal(visits, 4);

    /* substituting n rebuilds s2, the seq and the loop; s1 is shared */
    te_expr *three = I(ctx, 3);
    tir_stmt *r = tir_stmt_substitute(ctx, l, 1, &n, &three);
    assert_non_null(r);
    assert_ptr_not_equal(r, l);
    assert_ptr_equal(r->u.loop.body->u.seq.stmts[0], s1);
    assert_ptr_not_equal(r->u.loop.body->u.seq.stmts[1], s2);
    expect_text("substitute", stmt_str(r),
                "for (i, 0, 16) {\n"
                "  B[i] = 1.0f\n"
                "  D[3] = 2.0f\n"
                "}\n");
    /* a callback's NULL is the map's NULL */
    assert_null(tir_stmt_map(ctx, l, fail_on_store, NULL, NULL));
    /* a variable that does not occur: everything shared */
    te_expr *m = ivar(ctx, "m");
    assert_ptr_equal(tir_stmt_substitute(ctx, l, 1, &m, &three), l);
    te_ctx_free(ctx);
}

/* ---- passes ---- */

/* storage_flatten with a padded row stride (storage_align factor 8
 * offset 1 on a [4, 6] local buffer gives row stride 9).
 *
 * before:
 *   allocate T[float32 * ..] local { for i, j: T[i, j] = A[i, j]; B[i, j] = T[i, j] }
 * after: T[i*9 + j], A[i*6 + j] (compact), B[i*6 + j] */
static void test_storage_flatten(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = buf(ctx, "A", 2, (int64_t[]){4, 6}, TIR_SCOPE_GLOBAL, true);
    tir_buffer *B = buf(ctx, "B", 2, (int64_t[]){4, 6}, TIR_SCOPE_GLOBAL, true);
    tir_buffer *T = buf(ctx, "T", 2, (int64_t[]){4, 6}, TIR_SCOPE_LOCAL, false);
    T->strides[0] = 9;
    te_expr *i = ivar(ctx, "i"), *j = ivar(ctx, "j");
    tir_stmt *body = tir_seq(ctx, 2, (tir_stmt *[]){bst2(ctx, T, i, j, bl2(A, i, j)),
                                                     bst2(ctx, B, i, j, bl2(T, i, j))});
    tir_stmt *nest = loop(ctx, i, 4, TIR_FOR_SERIAL, loop(ctx, j, 6, TIR_FOR_SERIAL, body));
    tir_func *f = tir_func_new(ctx, "default", 2, (tir_buffer *[]){A, B}, tir_allocate(ctx, T, nest));
    expect_func(ctx, "flatten before", f,
                "func default(A: float32[4, 6], B: float32[4, 6]) {\n"
                "  allocate T[float32 * 33] local {\n"
                "    for (i, 0, 4) {\n"
                "      for (j, 0, 6) {\n"
                "        T[i, j] = A[i, j]\n"
                "        B[i, j] = T[i, j]\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");
    tir_func *g = tir_pass_storage_flatten(ctx, f);
    expect_func(ctx, "flatten after", g,
                "func default(A: float32[4, 6], B: float32[4, 6]) {\n"
                "  allocate T[float32 * 33] local {\n"
                "    for (i, 0, 4) {\n"
                "      for (j, 0, 6) {\n"
                "        T[(i*9) + j] = A[(i*6) + j]\n"
                "        B[(i*6) + j] = T[(i*9) + j]\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");
    expect_func(ctx, "flatten + simplify", tir_pass_simplify(ctx, g),
                "func default(A: float32[4, 6], B: float32[4, 6]) {\n"
                "  allocate T[float32 * 33] local {\n"
                "    for (i, 0, 4) {\n"
                "      for (j, 0, 6) {\n"
                "        T[(i*9) + j] = A[(i*6) + j]\n"
                "        B[(i*6) + j] = T[(i*9) + j]\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");

    /* a store with the wrong number of indices: the builder refuses it;
     * built anyway (a node edited by hand), storage_flatten does */
    assert_null(tir_buffer_store(ctx, B, 1, &i, te_float(ctx, 0.0)));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "buffer_store: 1 indices for buffer 'B' of 2 dimensions");
    tir_stmt *bad = bst2(ctx, B, i, j, te_float(ctx, 0.0));
    assert_non_null(bad);
    bad->u.bstore.ndim = 1;
    tir_func *fb = tir_func_new(ctx, "bad", 1, &B, loop(ctx, i, 4, TIR_FOR_SERIAL, bad));
    assert_null(tir_pass_storage_flatten(ctx, fb));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "storage_flatten", "store to buffer 'B' with 1 indices",
                      "2 dimensions");
    te_ctx_free(ctx);
}

/* storage_flatten of a swizzled [16, 128] float16 buffer: two 128-byte
 * panels of 64 columns, panel after panel ((c / 64) * 16 * 64 + r * 64 +
 * c % 64; the XOR is the CUDA emitter's); a vector index is refused
 * unless it is a stride-1 ramp inside one 16-byte chunk. */
static void test_storage_flatten_swizzle(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = buf(ctx, "A", 2, (int64_t[]){16, 128}, TIR_SCOPE_GLOBAL, true);
    A->dtype = TE_FLOAT16;
    tir_buffer *T = buf(ctx, "T", 2, (int64_t[]){16, 128}, TIR_SCOPE_SHARED, false);
    T->dtype = TE_FLOAT16;
    T->swizzle = TIR_SWIZZLE_ROWS;
    te_expr *i = ivar(ctx, "i"), *j = ivar(ctx, "j");
    tir_stmt *nest = loop(ctx, i, 16, TIR_FOR_SERIAL,
                          loop(ctx, j, 128, TIR_FOR_SERIAL, bst2(ctx, T, i, j, bl2(A, i, j))));
    tir_func *f = tir_func_new(ctx, "default", 1, (tir_buffer *[]){A}, tir_allocate(ctx, T, nest));
    tir_func *g = tir_pass_storage_flatten(ctx, f);
    assert_non_null(g);
    expect_func(ctx, "swizzled panels", tir_pass_simplify(ctx, g),
                "func default(A: float16[16, 128]) {\n"
                "  allocate T[float16 * 2048] shared {\n"
                "    for (i, 0, 16) {\n"
                "      for (j, 0, 128) {\n"
                "        T[((floordiv(j, 64)*1024) + (i*64)) + floormod(j, 64)] = A[(i*128) + j]\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");
    /* a vector along a column, and a ramp that may cross a chunk */
    te_expr *col = tir_ramp(i, te_int(ctx, 1), 8);
    tir_stmt *bad = bst2(ctx, T, col, j, tir_broadcast(te_const(ctx, TE_FLOAT16, 0), 8));
    f = tir_func_new(ctx, "default", 1, (tir_buffer *[]){A}, tir_allocate(ctx, T, bad));
    assert_null(tir_pass_storage_flatten(ctx, f));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "storage_flatten: store to swizzled buffer 'T': a vector "
                                          "access must run along a row within one 16-byte chunk");
    te_expr *row = tir_ramp(te_add(te_mul(j, te_int(ctx, 8)), te_int(ctx, 4)), te_int(ctx, 1), 8);
    bad = bst2(ctx, T, i, row, tir_broadcast(te_const(ctx, TE_FLOAT16, 0), 8));
    f = tir_func_new(ctx, "default", 1, (tir_buffer *[]){A}, tir_allocate(ctx, T, bad));
    assert_null(tir_pass_storage_flatten(ctx, f));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "storage_flatten: store to swizzled buffer 'T': a vector "
                                          "of 8 at column ");
    tu_assert_msg_has(te_ctx_errmsg(ctx), "may cross a 16-byte chunk");
    /* stored transposed (sch_swizzle_transposed): [64, 16] kept as the
     * panel of its transpose, 16 rows of 64, (r, c) at c * 64 + r; a
     * vector along its row crosses the stored rows */
    tir_buffer *U = buf(ctx, "U", 2, (int64_t[]){64, 16}, TIR_SCOPE_SHARED, false);
    U->dtype = TE_FLOAT16;
    U->swizzle = TIR_SWIZZLE_COLS;
    nest = loop(ctx, i, 64, TIR_FOR_SERIAL,
                loop(ctx, j, 16, TIR_FOR_SERIAL, bst2(ctx, U, i, j, bl2(A, j, i))));
    f = tir_func_new(ctx, "default", 1, (tir_buffer *[]){A}, tir_allocate(ctx, U, nest));
    g = tir_pass_storage_flatten(ctx, f);
    assert_non_null(g);
    expect_func(ctx, "transposed panel", tir_pass_simplify(ctx, g),
                "func default(A: float16[16, 128]) {\n"
                "  allocate U[float16 * 1024] shared {\n"
                "    for (i, 0, 64) {\n"
                "      for (j, 0, 16) {\n"
                "        U[(j*64) + i] = A[(j*128) + i]\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");
    bad = bst2(ctx, U, i, tir_ramp(j, te_int(ctx, 1), 8),
               tir_broadcast(te_const(ctx, TE_FLOAT16, 0), 8));
    f = tir_func_new(ctx, "default", 1, (tir_buffer *[]){A}, tir_allocate(ctx, U, bad));
    assert_null(tir_pass_storage_flatten(ctx, f));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "storage_flatten: store to swizzled buffer 'U': a vector "
                                          "access must run along a column (the buffer is stored "
                                          "transposed) within one 16-byte chunk");
    te_ctx_free(ctx);
}

/* simplify: loops of extent 1 become their body (var := min), extent 0
 * disappears, guards decided by the loop ranges go, undecided stay.
 *
 * before:
 *   for (io, 0, 4) {
 *     for (u, 0, 1) { if (likely(io*4 + u < 16)) C[io*4 + u] = 1 }   decided: io*4 <= 12
 *     for (z, 0, 0) { C[z] = 2 }
 *     for (ii, 0, 4) { if (likely(io*4 + ii < 15)) C[io*4 + ii] = 3 else C[0] = 4 } undecided
 *     if (io < 0) C[io] = 5                                          false, no else
 *   } */
static void test_simplify(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *C = buf(ctx, "C", 1, (int64_t[]){16}, TIR_SCOPE_GLOBAL, true);
    te_expr *io = ivar(ctx, "io"), *u = ivar(ctx, "u"), *z = ivar(ctx, "z"), *ii = ivar(ctx, "ii");
    te_expr *iu = te_add(te_mul(io, I(ctx, 4)), u);
    te_expr *iii = te_add(te_mul(io, I(ctx, 4)), ii);
    tir_stmt *p1 = loop(ctx, u, 1, TIR_FOR_SERIAL,
                        tir_if(ctx, likely(te_lt(iu, I(ctx, 16))),
                               tir_store(ctx, C, iu, te_float(ctx, 1.0), NULL), NULL));
    tir_stmt *p2 = loop(ctx, z, 0, TIR_FOR_SERIAL, tir_store(ctx, C, z, te_float(ctx, 2.0), NULL));
    tir_stmt *p3 = loop(ctx, ii, 4, TIR_FOR_SERIAL,
                        tir_if(ctx, likely(te_lt(iii, I(ctx, 15))),
                               tir_store(ctx, C, iii, te_float(ctx, 3.0), NULL),
                               tir_store(ctx, C, I(ctx, 0), te_float(ctx, 4.0), NULL)));
    tir_stmt *p4 = tir_if(ctx, te_lt(io, I(ctx, 0)), tir_store(ctx, C, io, te_float(ctx, 5.0), NULL),
                          NULL);
    tir_stmt *outer = loop(ctx, io, 4, TIR_FOR_SERIAL, tir_seq(ctx, 4, (tir_stmt *[]){p1, p2, p3, p4}));
    tir_func *f = tir_func_new(ctx, "default", 1, &C, outer);
    expect_func(ctx, "simplify before", f,
                "func default(C: float32[16]) {\n"
                "  for (io, 0, 4) {\n"
                "    for (u, 0, 1) {\n"
                "      if (likely(((io*4) + u) < 16)) {\n"
                "        C[(io*4) + u] = 1.0f\n"
                "      }\n"
                "    }\n"
                "    for (z, 0, 0) {\n"
                "      C[z] = 2.0f\n"
                "    }\n"
                "    for (ii, 0, 4) {\n"
                "      if (likely(((io*4) + ii) < 15)) {\n"
                "        C[(io*4) + ii] = 3.0f\n"
                "      } else {\n"
                "        C[0] = 4.0f\n"
                "      }\n"
                "    }\n"
                "    if (io < 0) {\n"
                "      C[io] = 5.0f\n"
                "    }\n"
                "  }\n"
                "}\n");
    expect_func(ctx, "simplify after", tir_pass_simplify(ctx, f),
                "func default(C: float32[16]) {\n"
                "  for (io, 0, 4) {\n"
                "    C[io*4] = 1.0f\n"
                "    for (ii, 0, 4) {\n"
                "      if (likely(((io*4) + ii) < 15)) {\n"
                "        C[(io*4) + ii] = 3.0f\n"
                "      } else {\n"
                "        C[0] = 4.0f\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");

    /* an extent-1 loop whose unroll pragma governs an inner loop stays */
    te_expr *a = ivar(ctx, "a"), *b = ivar(ctx, "b");
    tir_stmt *inner = loop(ctx, b, 4, TIR_FOR_SERIAL,
                           tir_store(ctx, C, te_add(a, b), te_float(ctx, 0.0), NULL));
    tir_stmt *prag = loop(ctx, a, 1, TIR_FOR_SERIAL, inner);
    prag->u.loop.auto_unroll_max_step = 8;
    tir_func *g = tir_pass_simplify(ctx, tir_func_new(ctx, "default", 1, &C, prag));
    expect_func(ctx, "simplify pragma", g,
                "func default(C: float32[16]) {\n"
                "  for (a, 0, 1) pragma(auto_unroll_max_step=8) {\n"
                "    for (b, 0, 4) {\n"
                "      C[b] = 0.0f\n"
                "    }\n"
                "  }\n"
                "}\n");
    te_ctx_free(ctx);
}

/* simplify inside `if (v < K)`-like branches: v's range narrowed to each
 * branch where the branch is one interval, decided guards dropped. */
static void test_simplify_branch_ranges(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *C = buf(ctx, "C", 1, (int64_t[]){16}, TIR_SCOPE_GLOBAL, true);
    te_expr *i = ivar(ctx, "i");
    te_expr *lk[3];
    tir_stmt *g[3];
    int64_t lim[3] = {6, 4, 2};
    for (int k = 0; k < 3; k++) {
        te_expr *c = k == 1 ? te_ge(i, te_int(ctx, lim[k])) : te_lt(i, te_int(ctx, lim[k]));
        lk[k] = te_call(TE_INTRIN_LIKELY, 1, &c);
        g[k] = tir_if(ctx, lk[k], tir_store(ctx, C, i, te_float(ctx, (double)k), NULL), NULL);
    }
    /* one-sided: then i in [0, 4) decides i < 6; else i in [4, 12) decides
     * i >= 4 (kept) and i < 2 (dropped) */
    tir_stmt *b1 = tir_if(ctx, te_lt(i, te_int(ctx, 4)), g[0], tir_seq(ctx, 2, (tir_stmt *[]){g[1], g[2]}));
    tir_func *f = tir_func_new(ctx, "default", 1, &C, loop(ctx, i, 12, TIR_FOR_PARALLEL, b1));
    expect_func(ctx, "branch ranges, one side", tir_pass_simplify(ctx, f),
                "func default(C: float32[16]) {\n"
                "  for (i, 0, 12) parallel {\n"
                "    if (i < 4) {\n"
                "      C[i] = 0.0f\n"
                "    } else {\n"
                "      C[i] = 1.0f\n"
                "    }\n"
                "  }\n"
                "}\n");
    /* two-sided: the then branch is [2, 5) (i < 6 decided); the else
     * branch is two intervals, nothing narrowed there */
    te_expr *mid = te_and(te_ge(i, te_int(ctx, 2)), te_lt(i, te_int(ctx, 5)));
    tir_stmt *b2 = tir_if(ctx, mid, g[0], g[2]);
    f = tir_func_new(ctx, "default", 1, &C, loop(ctx, i, 12, TIR_FOR_PARALLEL, b2));
    expect_func(ctx, "branch ranges, two sides", tir_pass_simplify(ctx, f),
                "func default(C: float32[16]) {\n"
                "  for (i, 0, 12) parallel {\n"
                "    if ((i >= 2) && (i < 5)) {\n"
                "      C[i] = 0.0f\n"
                "    } else {\n"
                "      if (likely(i < 2)) {\n"
                "        C[i] = 2.0f\n"
                "      }\n"
                "    }\n"
                "  }\n"
                "}\n");
    te_ctx_free(ctx);
}

/* remove_noop: empty loops, IFs with empty branches, allocations of
 * nothing, stores of a location to itself, evaluations of constants. */
static void test_remove_noop(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *C = buf(ctx, "C", 1, (int64_t[]){16}, TIR_SCOPE_GLOBAL, true);
    tir_buffer *T = buf(ctx, "T", 1, (int64_t[]){4}, TIR_SCOPE_LOCAL, false);
    te_expr *i = ivar(ctx, "i"), *j = ivar(ctx, "j"), *k = ivar(ctx, "k");
    tir_stmt *self = tir_store(ctx, C, te_add(i, I(ctx, 1)),
                               tir_load(ctx, C, te_add(i, I(ctx, 1)), NULL), NULL);
    tir_stmt *empty_loop = loop(ctx, j, 4, TIR_FOR_SERIAL, tir_evaluate(ctx, I(ctx, 0)));
    tir_stmt *empty_if = tir_if(ctx, te_lt(i, I(ctx, 3)), tir_noop(ctx), tir_noop(ctx));
    tir_stmt *else_only = tir_if(ctx, te_lt(i, I(ctx, 3)), tir_noop(ctx),
                                 tir_store(ctx, C, i, te_float(ctx, 1.0), NULL));
    tir_stmt *empty_alloc = tir_allocate(ctx, T, loop(ctx, k, 4, TIR_FOR_SERIAL, self));
    tir_stmt *keep = tir_store(ctx, C, i, tir_load(ctx, C, te_add(i, I(ctx, 1)), NULL), NULL);
    tir_stmt *body = tir_seq(ctx, 6, (tir_stmt *[]){self, empty_loop, empty_if, else_only,
                                                     empty_alloc, keep});
    tir_func *f = tir_func_new(ctx, "default", 1, &C, loop(ctx, i, 15, TIR_FOR_SERIAL, body));
    expect_func(ctx, "remove_noop before", f,
                "func default(C: float32[16]) {\n"
                "  for (i, 0, 15) {\n"
                "    C[i + 1] = C[i + 1]\n"
                "    for (j, 0, 4) {\n"
                "      0\n"
                "    }\n"
                "    if (i < 3) {\n"
                "      noop\n"
                "    }\n"
                "    if (i < 3) {\n"
                "      noop\n"
                "    } else {\n"
                "      C[i] = 1.0f\n"
                "    }\n"
                "    allocate T[float32 * 4] local {\n"
                "      for (k, 0, 4) {\n"
                "        C[i + 1] = C[i + 1]\n"
                "      }\n"
                "    }\n"
                "    C[i] = C[i + 1]\n"
                "  }\n"
                "}\n");
    expect_func(ctx, "remove_noop after", tir_pass_remove_noop(ctx, f),
                "func default(C: float32[16]) {\n"
                "  for (i, 0, 15) {\n"
                "    if (!(i < 3)) {\n"
                "      C[i] = 1.0f\n"
                "    }\n"
                "    C[i] = C[i + 1]\n"
                "  }\n"
                "}\n");
    /* a loop of nothing at all goes entirely */
    tir_func *g = tir_func_new(ctx, "default", 1, &C, loop(ctx, j, 4, TIR_FOR_SERIAL, empty_if));
    expect_func(ctx, "remove_noop empty", tir_pass_remove_noop(ctx, g),
                "func default(C: float32[16]) {\n  noop\n}\n");
    te_ctx_free(ctx);
}

/* storage_rewrite: sibling LOCAL allocations of one type share one
 * allocation as large as the largest; others are left alone. */
static void test_storage_rewrite(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *C = buf(ctx, "C", 1, (int64_t[]){64}, TIR_SCOPE_GLOBAL, true);
    tir_buffer *X = buf(ctx, "X", 1, (int64_t[]){16}, TIR_SCOPE_LOCAL, false);
    tir_buffer *Y = buf(ctx, "Y", 2, (int64_t[]){4, 8}, TIR_SCOPE_LOCAL, false);
    tir_buffer *G = buf(ctx, "G", 1, (int64_t[]){8}, TIR_SCOPE_GLOBAL, false);
    tir_buffer *N = tir_buffer_new(ctx, "N", TE_INT32, 1, (int64_t[]){8}, TIR_SCOPE_LOCAL);
    te_expr *i = ivar(ctx, "i"), *j = ivar(ctx, "j");
    tir_stmt *ax = tir_allocate(ctx, X, tir_seq(ctx, 2, (tir_stmt *[]){
        tir_store(ctx, X, i, te_float(ctx, 1.0), NULL),
        tir_store(ctx, C, i, tir_load(ctx, X, i, NULL), NULL)}));
    tir_stmt *mid = tir_store(ctx, C, I(ctx, 0), te_float(ctx, 0.0), NULL);
    tir_stmt *ay = tir_allocate(ctx, Y, tir_seq(ctx, 2, (tir_stmt *[]){
        tir_store(ctx, Y, te_add(i, I(ctx, 16)), te_float(ctx, 2.0), NULL),
        tir_store(ctx, C, te_add(i, I(ctx, 16)), tir_load(ctx, Y, te_add(i, I(ctx, 16)), NULL), NULL)}));
    /* different scope and different type: not merged */
    tir_stmt *ag = tir_allocate(ctx, G, tir_store(ctx, G, I(ctx, 0), te_float(ctx, 3.0), NULL));
    tir_stmt *an = tir_allocate(ctx, N, tir_store(ctx, N, I(ctx, 0), te_int_t(ctx, TE_INT32, 7), NULL));
    tir_stmt *body = loop(ctx, i, 16, TIR_FOR_SERIAL,
                          tir_seq(ctx, 5, (tir_stmt *[]){ax, mid, ay, ag, an}));
    tir_func *f = tir_func_new(ctx, "default", 1, &C, body);
    expect_func(ctx, "storage_rewrite before", f,
                "func default(C: float32[64]) {\n"
                "  for (i, 0, 16) {\n"
                "    allocate X[float32 * 16] local {\n"
                "      X[i] = 1.0f\n"
                "      C[i] = X[i]\n"
                "    }\n"
                "    C[0] = 0.0f\n"
                "    allocate Y[float32 * 32] local {\n"
                "      Y[i + 16] = 2.0f\n"
                "      C[i + 16] = Y[i + 16]\n"
                "    }\n"
                "    allocate G[float32 * 8] global {\n"
                "      G[0] = 3.0f\n"
                "    }\n"
                "    allocate N[int32 * 8] local {\n"
                "      N[0] = int32(7)\n"
                "    }\n"
                "  }\n"
                "}\n");
    expect_func(ctx, "storage_rewrite after", tir_pass_storage_rewrite(ctx, f),
                "func default(C: float32[64]) {\n"
                "  for (i, 0, 16) {\n"
                "    allocate X[float32 * 32] local {\n"
                "      X[i] = 1.0f\n"
                "      C[i] = X[i]\n"
                "      C[0] = 0.0f\n"
                "      X[i + 16] = 2.0f\n"
                "      C[i + 16] = X[i + 16]\n"
                "    }\n"
                "    allocate G[float32 * 8] global {\n"
                "      G[0] = 3.0f\n"
                "    }\n"
                "    allocate N[int32 * 8] local {\n"
                "      N[0] = int32(7)\n"
                "    }\n"
                "  }\n"
                "}\n");

    /* copies of one allocation (an unrolled loop's) merge into it */
    tir_stmt *c0 = tir_allocate(ctx, X, tir_store(ctx, X, I(ctx, 0), te_float(ctx, 1.0), NULL));
    tir_stmt *c1 = tir_allocate(ctx, X, tir_store(ctx, X, I(ctx, 1), te_float(ctx, 1.0), NULL));
    tir_func *g = tir_func_new(ctx, "default", 1, &C, tir_seq(ctx, 2, (tir_stmt *[]){c0, c1}));
    expect_func(ctx, "storage_rewrite copies", tir_pass_storage_rewrite(ctx, g),
                "func default(C: float32[64]) {\n"
                "  allocate X[float32 * 16] local {\n"
                "    X[0] = 1.0f\n"
                "    X[1] = 1.0f\n"
                "  }\n"
                "}\n");

    /* a statement between them that allocates the buffer itself: kept as
     * it is (sharing would wrap one allocation of X in another) */
    tir_stmt *inner = loop(ctx, j, 2, TIR_FOR_SERIAL,
                           tir_allocate(ctx, X, tir_store(ctx, X, j, te_float(ctx, 1.0), NULL)));
    tir_stmt *seq3 = tir_seq(ctx, 3, (tir_stmt *[]){c0, inner, c1});
    tir_func *h = tir_pass_storage_rewrite(ctx, tir_func_new(ctx, "default", 1, &C, seq3));
    assert_non_null(h);
    assert_ptr_equal(h->body, seq3);
    te_ctx_free(ctx);
}

/* The whole pipeline on a small nest: flatten, fold, unroll, drop the
 * unit loop and the guard it decides.
 *
 *   for (i, 0, 4) parallel { for (u, 0, 1) { for (j, 0, 2) unrolled {
 *       if (likely(i < 4)) B[i, j] = A[i, j] * 2 } } } */
static void test_pipeline(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = buf(ctx, "A", 2, (int64_t[]){4, 2}, TIR_SCOPE_GLOBAL, true);
    tir_buffer *B = buf(ctx, "B", 2, (int64_t[]){4, 2}, TIR_SCOPE_GLOBAL, true);
    te_expr *i = ivar(ctx, "i"), *u = ivar(ctx, "u"), *j = ivar(ctx, "j");
    te_expr *row = te_add(i, u);
    tir_stmt *st = bst2(ctx, B, row, j, te_mul(bl2(A, row, j), te_float(ctx, 2.0)));
    tir_stmt *g = tir_if(ctx, likely(te_lt(row, I(ctx, 4))), st, NULL);
    tir_stmt *nest = loop(ctx, i, 4, TIR_FOR_PARALLEL,
                          loop(ctx, u, 1, TIR_FOR_SERIAL, loop(ctx, j, 2, TIR_FOR_UNROLLED, g)));
    tir_func *f = tir_func_new(ctx, "default", 2, (tir_buffer *[]){A, B}, nest);
    expect_func(ctx, "pipeline", tir_run_pipeline(ctx, f, NULL),
                "func default(A: float32[4, 2], B: float32[4, 2]) {\n"
                "  for (i, 0, 4) parallel {\n"
                "    B[i*2] = A[i*2]*2.0f\n"
                "    B[(i*2) + 1] = A[(i*2) + 1]*2.0f\n"
                "  }\n"
                "}\n");

    /* skip_vectorize: VECTORIZED loops stay scalar, as SERIAL */
    te_expr *v = ivar(ctx, "v");
    tir_stmt *vs = bst2(ctx, B, I(ctx, 0), v, bl2(A, I(ctx, 0), v));
    tir_func *h = tir_func_new(ctx, "default", 2, (tir_buffer *[]){A, B},
                               loop(ctx, v, 2, TIR_FOR_VECTORIZED, vs));
    tir_pipeline_options o = {.skip_vectorize = true, .vectorize_why = NULL};
    expect_func(ctx, "pipeline skip_vectorize", tir_run_pipeline(ctx, h, &o),
                "func default(A: float32[4, 2], B: float32[4, 2]) {\n"
                "  for (v, 0, 2) {\n"
                "    B[v] = A[v]\n"
                "  }\n"
                "}\n");
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buffer),          cmocka_unit_test(test_expr_builders),
        cmocka_unit_test(test_seq),             cmocka_unit_test(test_func),
        cmocka_unit_test(test_print),
        cmocka_unit_test(test_map_shares),      cmocka_unit_test(test_storage_flatten),
        cmocka_unit_test(test_storage_flatten_swizzle),
        cmocka_unit_test(test_simplify),        cmocka_unit_test(test_remove_noop),
        cmocka_unit_test(test_simplify_branch_ranges),
        cmocka_unit_test(test_storage_rewrite), cmocka_unit_test(test_pipeline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
