/*
 * tests/test_arith.c — the arithmetic analyser: the index expressions of
 * split and fuse collapse, canonical order, constant bounds, modular sets,
 * affine forms (te_affine_form),
 * comparisons / min / max / select decided by bounds, binding scopes,
 * float folding without reassociation, vector rules, and a randomized
 * check that simplification, bounds and modular facts agree with direct
 * evaluation on every point of the bound ranges.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

/* Asserts that simplify(e) is structurally `want`, printing both if not. */
#define assert_simp(an, e, want) assert_simp_((an), (e), (want), __FILE__, __LINE__)
static void assert_simp_(te_analyzer *an, te_expr *e, te_expr *want, const char *file, int line) {
    assert_non_null(e);
    assert_non_null(want);
    te_expr *s = te_analyzer_simplify(an, e);
    if (!te_expr_equal(s, want)) {
        te_ctx *ctx = te_expr_ctx(e);
        fprintf(stderr, "%s:%d: simplify(%s)\n  got  %s\n  want %s\n", file, line,
                te_expr_str(ctx, e), te_expr_str(ctx, s), te_expr_str(ctx, want));
        fail();
    }
}

#define I(v) te_int(ctx, (v))

/* ---------------- split / fuse patterns ---------------- */

static void test_split_collapse(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_analyzer *an = te_analyzer_new(ctx);
    te_expr *io = te_var(ctx, "io", TE_INT64), *ii = te_var(ctx, "ii", TE_INT64);
    te_expr *j = te_var(ctx, "j", TE_INT64);
    te_analyzer_bind(an, io, 0, 4);
    te_analyzer_bind(an, ii, 0, 32);
    te_analyzer_bind(an, j, 0, 64);
    te_expr *i = te_add(te_mul(io, I(32)), ii);
    assert_simp(an, te_floordiv(i, I(32)), io);
    assert_simp(an, te_floormod(i, I(32)), ii);
    /* a split of a split */
    te_expr *flat = te_add(te_mul(i, I(64)), j);
    assert_simp(an, te_floordiv(flat, I(64)), i);
    assert_simp(an, te_floormod(flat, I(64)), j);
    assert_simp(an, te_floordiv(flat, I(2048)), io);
    assert_simp(an, te_floormod(flat, I(2048)), te_add(te_mul(ii, I(64)), j));
    /* constants shift the quotient: (io*32 + ii + 64) // 32 == io + 2 */
    assert_simp(an, te_floordiv(te_add(i, I(64)), I(32)), te_add(io, I(2)));
    assert_simp(an, te_floormod(te_add(i, I(64)), I(32)), ii);
    /* the rest not decided: the divisible part still comes out */
    assert_simp(an, te_floordiv(te_add(i, I(5)), I(32)),
                te_add(io, te_floordiv(te_add(ii, I(5)), I(32))));
    /* truncating division of non-negative operands behaves like floor */
    assert_simp(an, te_div(i, I(32)), io);
    /* an unbound plain var: exact multiples only */
    te_expr *x = te_var(ctx, "x", TE_INT64);
    assert_simp(an, te_floordiv(te_mul(x, I(8)), I(8)), x);
    assert_simp(an, te_floormod(te_mul(x, I(8)), I(8)), I(0));
    assert_simp(an, te_floormod(te_add(te_mul(x, I(8)), I(3)), I(4)), I(3));
    assert_simp(an, te_floordiv(te_floordiv(x, I(4)), I(8)), te_floordiv(x, I(32)));
    assert_simp(an, te_floormod(te_floormod(x, I(32)), I(8)), te_floormod(x, I(8)));
    assert_simp(an, te_floordiv(te_mul(x, I(6)), I(4)), te_floordiv(te_mul(x, I(3)), I(2)));
    /* a truncating division of something maybe negative stays */
    te_expr *d = te_div(x, I(4));
    assert_ptr_equal(te_analyzer_simplify(an, d), d);
    te_analyzer_free(an);
    te_ctx_free(ctx);
}

static void test_fuse_collapse(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_analyzer *an = te_analyzer_new(ctx);
    /* fuse(i in 16, j in 8) = f in [0, 128): i = f // 8, j = f % 8 */
    te_expr *f = te_iter_var(ctx, "f", TE_ITER_DATA_PAR, 128);
    te_expr *fi = te_floordiv(f, I(8)), *fj = te_floormod(f, I(8));
    assert_ptr_equal(te_analyzer_simplify(an, fi), fi); /* the definition stays */
    assert_ptr_equal(te_analyzer_simplify(an, fj), fj);
    /* split-then-fuse: (f // 32)*32 + f % 32 == f */
    assert_simp(an, te_add(te_mul(te_floordiv(f, I(32)), I(32)), te_floormod(f, I(32))), f);
    assert_simp(an, te_sub(f, te_floormod(f, I(32))), te_mul(te_floordiv(f, I(32)), I(32)));
    /* fuse-then-split: f = fo*16 + fi with fi in [0, 16) */
    te_expr *fo = te_iter_var(ctx, "fo", TE_ITER_DATA_PAR, 8);
    te_expr *fn = te_iter_var(ctx, "fi", TE_ITER_DATA_PAR, 16);
    te_expr *fs = te_add(te_mul(fo, I(16)), fn);
    assert_simp(an, te_floordiv(fs, I(8)), te_add(te_mul(fo, I(2)), te_floordiv(fn, I(8))));
    assert_simp(an, te_floormod(fs, I(8)), te_floormod(fn, I(8)));
    assert_simp(an, te_floordiv(fs, I(16)), fo);
    assert_simp(an, te_floormod(fs, I(16)), fn);
    /* three-way fuse: a in 4, b in 5, c in 6 -> g in [0, 120) */
    te_expr *g = te_iter_var(ctx, "g", TE_ITER_DATA_PAR, 120);
    assert_simp(an, te_floordiv(te_floordiv(g, I(6)), I(5)), te_floordiv(g, I(30)));
    /* rebuilding the fused index from its parts gives it back */
    te_expr *a = te_floordiv(g, I(30)), *b = te_floormod(te_floordiv(g, I(6)), I(5));
    te_expr *c = te_floormod(g, I(6));
    te_expr *re = te_add(te_mul(te_add(te_mul(a, I(5)), b), I(6)), c);
    te_expr *s = te_analyzer_simplify(an, re);
    /* a*30 + b*6 + c: floordiv(g, 30) is floordiv(floordiv(g, 6), 5) */
    assert_true(te_expr_equal(s, g));
    /* the same scaled, as a fused loop's vector index: f*16 */
    te_expr *h = te_iter_var(ctx, "h", TE_ITER_DATA_PAR, 75264);
    te_expr *hidx = te_add(te_add(te_mul(te_floordiv(h, I(784)), I(12544)),
                                  te_mul(te_floormod(te_floordiv(h, I(7)), I(112)), I(112))),
                           te_mul(te_floormod(h, I(7)), I(16)));
    assert_simp(an, hidx, te_mul(h, I(16)));
    /* coefficients that do not pair (111 against 12544 = 112*112) are not merged */
    te_expr *off = te_add(te_mul(te_floordiv(h, I(784)), I(12544)),
                          te_mul(te_floormod(te_floordiv(h, I(7)), I(112)), I(111)));
    te_expr *wrong = te_mul(te_floordiv(h, I(7)), I(111));
    assert_false(te_expr_equal(te_analyzer_simplify(an, off), wrong));
    for (int64_t v = 0; v < 120; v++) {
        te_expr *sv = te_simplify(ctx, te_substitute(ctx, s, 1, &g, (te_expr *[]){I(v)}));
        int64_t got;
        assert_true(te_is_const_int(sv, &got));
        assert_int_equal(got, v);
    }
    te_analyzer_free(an);
    te_ctx_free(ctx);
}

/* ---------------- canonical form ---------------- */

static void test_canonical_order(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_analyzer *an = te_analyzer_new(ctx);
    te_expr *io = te_axis(ctx, "io", 4), *ii = te_axis(ctx, "ii", 32);
    te_expr *want = te_add(te_mul(io, I(32)), ii);
    assert_simp(an, te_add(ii, te_mul(io, I(32))), want);
    assert_simp(an, te_add(te_mul(I(32), io), ii), want);
    assert_simp(an, te_add(te_mul(te_add(io, I(1)), I(32)), te_sub(ii, I(32))), want);
    /* the printed form the lowering shows */
    const char *txt = te_expr_str(ctx, te_analyzer_simplify(an, te_add(ii, te_mul(io, I(32)))));
    assert_string_equal(txt, "((io*32) + ii)");
    /* unchanged input comes back by pointer */
    assert_ptr_equal(te_analyzer_simplify(an, want), want);
    assert_simp(an, te_add(io, io), te_mul(io, I(2)));
    assert_simp(an, te_sub(io, io), I(0));
    assert_simp(an, te_sub(te_add(io, I(3)), te_add(I(1), io)), I(2));
    assert_simp(an, te_sub(te_mul(te_add(io, ii), I(3)), te_mul(ii, I(2))),
                te_add(te_mul(io, I(3)), ii));
    assert_simp(an, te_sub(ii, te_mul(io, I(32))), te_sub(ii, te_mul(io, I(32))));
    assert_simp(an, te_mul(ii, io), te_mul(io, ii)); /* products ordered */
    assert_simp(an, te_sub(te_mul(ii, io), te_mul(io, ii)), I(0));
    te_analyzer_free(an);
    te_ctx_free(ctx);
}

/* ---------------- bounds and modular sets ---------------- */

static void bound_is(te_analyzer *an, te_expr *e, int64_t lo, int64_t hi) {
    int64_t l = 0, h = 0;
    te_analyzer_const_bound(an, e, &l, &h);
    if (l != lo || h != hi) {
        fprintf(stderr, "bound(%s) = [%lld, %lld], want [%lld, %lld]\n",
                te_expr_str(te_expr_ctx(e), e), (long long)l, (long long)h, (long long)lo,
                (long long)hi);
        fail();
    }
}

static void test_bounds(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_analyzer *an = te_analyzer_new(ctx);
    te_expr *x = te_var(ctx, "x", TE_INT64), *y = te_var(ctx, "y", TE_INT64);
    te_expr *ax = te_axis(ctx, "i", 10);
    te_expr *v32 = te_var(ctx, "n", TE_INT32);
    bound_is(an, x, INT64_MIN, INT64_MAX);
    bound_is(an, ax, 0, 9);
    bound_is(an, v32, INT32_MIN, INT32_MAX);
    te_analyzer_bind(an, x, -3, 8); /* [-3, 4] */
    te_analyzer_bind(an, y, 2, 5);  /* [2, 6] */
    bound_is(an, te_add(x, y), -1, 10);
    bound_is(an, te_sub(x, y), -9, 2);
    bound_is(an, te_sub(x, x), 0, 0);
    bound_is(an, te_mul(x, y), -18, 24);
    bound_is(an, te_mul(x, I(-2)), -8, 6);
    bound_is(an, te_floordiv(x, I(2)), -2, 2);
    bound_is(an, te_div(x, I(2)), -1, 2);
    bound_is(an, te_floormod(x, I(16)), 0, 15);
    bound_is(an, te_floormod(y, I(16)), 2, 6);
    bound_is(an, te_floormod(y, I(4)), 0, 3);
    bound_is(an, te_min(x, y), -3, 4);
    bound_is(an, te_max(x, y), 2, 6);
    bound_is(an, te_select(te_lt(x, y), te_add(x, I(100)), y), 2, 104);
    bound_is(an, te_cast(TE_INT32, ax), 0, 9);
    bound_is(an, te_lt(x, y), 0, 1);
    bound_is(an, te_add(te_mul(ax, I(1000000)), x), -3, 9000004);
    /* saturation instead of overflow */
    te_expr *z = te_var(ctx, "z", TE_INT64);
    te_analyzer_bind(an, z, 0, INT64_MAX);
    bound_is(an, te_mul(z, I(4)), 0, INT64_MAX);
    bound_is(an, te_sub(I(0), z), -(INT64_MAX - 1), 0);
    bound_is(an, te_sub(I(-10), te_mul(z, I(2))), INT64_MIN, -10);
    /* float expressions have no integer bound */
    te_expr *fv = te_var(ctx, "f", TE_FLOAT32);
    bound_is(an, fv, INT64_MIN, INT64_MAX);
    /* vectors: every lane */
    te_expr *r = tir_ramp(te_mul(ax, I(4)), I(1), 4);
    bound_is(an, r, 0, 39);
    te_analyzer_free(an);
    te_ctx_free(ctx);
}

static void mod_is(te_analyzer *an, te_expr *e, int64_t coeff, int64_t base) {
    int64_t c = -1, b = -1;
    te_analyzer_modular(an, e, &c, &b);
    if (c != coeff || b != base) {
        fprintf(stderr, "modular(%s) = %lld*k + %lld, want %lld*k + %lld\n",
                te_expr_str(te_expr_ctx(e), e), (long long)c, (long long)b, (long long)coeff,
                (long long)base);
        fail();
    }
}

static void test_modular(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_analyzer *an = te_analyzer_new(ctx);
    te_expr *x = te_var(ctx, "x", TE_INT64), *y = te_var(ctx, "y", TE_INT64);
    mod_is(an, x, 1, 0);
    mod_is(an, I(7), 0, 7);
    mod_is(an, te_mul(x, I(8)), 8, 0);
    mod_is(an, te_add(te_mul(x, I(8)), I(3)), 8, 3);
    mod_is(an, te_add(te_mul(x, I(8)), I(-3)), 8, 5);
    mod_is(an, te_add(te_mul(x, I(8)), te_mul(y, I(12))), 4, 0);
    mod_is(an, te_mul(te_add(te_mul(x, I(4)), I(2)), I(3)), 12, 6);
    mod_is(an, te_floordiv(te_add(te_mul(x, I(16)), I(4)), I(4)), 4, 1);
    mod_is(an, te_floormod(te_add(te_mul(x, I(16)), I(5)), I(8)), 0, 5);
    mod_is(an, te_floormod(te_add(te_mul(x, I(6)), I(1)), I(4)), 2, 1);
    mod_is(an, te_min(te_mul(x, I(8)), te_add(te_mul(y, I(4)), I(4))), 4, 0);
    mod_is(an, te_mul(x, y), 1, 0);
    /* a var bound to one value is that value */
    te_analyzer_bind(an, y, 5, 1);
    mod_is(an, te_add(te_mul(x, I(8)), y), 8, 5);
    mod_is(an, y, 0, 5);
    te_analyzer_unbind(an, y);
    mod_is(an, y, 1, 0);
    te_analyzer_free(an);
    te_ctx_free(ctx);
}

/* te_affine_form: coefficients of like terms combined, the constant
 * kept, a variable outside the list, a floordiv or a product of
 * variables refused, bad arguments refused. */
static void test_affine_form(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_expr *x = te_var(ctx, "x", TE_INT64), *y = te_var(ctx, "y", TE_INT64),
            *z = te_var(ctx, "z", TE_INT64);
    int64_t c[2], k;
    /* 2*(x + 3) - (y*5 - x) + 7 = 3x - 5y + 13 */
    te_expr *e = te_add(te_sub(te_mul(te_add(x, I(3)), I(2)), te_sub(te_mul(y, I(5)), x)), I(7));
    assert_true(te_affine_form(e, 2, (te_expr *[]){x, y}, c, &k));
    assert_int_equal(c[0], 3);
    assert_int_equal(c[1], -5);
    assert_int_equal(k, 13);
    /* a variable absent from e: coefficient 0 */
    assert_true(te_affine_form(te_add(x, I(-1)), 2, (te_expr *[]){y, x}, c, &k));
    assert_int_equal(c[0], 0);
    assert_int_equal(c[1], 1);
    assert_int_equal(k, -1);
    assert_true(te_affine_form(I(4), 0, NULL, NULL, &k));
    assert_int_equal(k, 4);
    /* terms the form cannot hold */
    assert_false(te_affine_form(te_add(x, z), 2, (te_expr *[]){x, y}, c, &k));
    assert_false(te_affine_form(te_floordiv(x, I(2)), 1, (te_expr *[]){x}, c, &k));
    assert_false(te_affine_form(te_mul(x, y), 2, (te_expr *[]){x, y}, c, &k));
    assert_false(te_affine_form(te_mul(te_mul(x, I(INT64_MAX / 2 + 1)), I(4)), 1, (te_expr *[]){x},
                                c, &k)); /* a coefficient overflows */
    assert_false(te_affine_form(NULL, 1, (te_expr *[]){x}, c, &k));
    assert_false(te_affine_form(x, 1, (te_expr *[]){x}, NULL, &k));
    te_ctx_free(ctx);
}

/* ---------------- decisions ---------------- */

static void test_compare_minmax_select(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_analyzer *an = te_analyzer_new(ctx);
    te_expr *io = te_var(ctx, "io", TE_INT64), *ii = te_var(ctx, "ii", TE_INT64);
    te_expr *n = te_var(ctx, "n", TE_INT64);
    te_analyzer_bind(an, io, 0, 4);
    te_analyzer_bind(an, ii, 0, 32);
    te_expr *i = te_add(te_mul(io, I(32)), ii);
    te_expr *T = te_bool(ctx, true), *F = te_bool(ctx, false);
    assert_simp(an, te_lt(i, I(128)), T);
    assert_simp(an, te_lt(i, I(127)), te_lt(i, I(127)));
    assert_simp(an, te_ge(i, I(0)), T);
    assert_simp(an, te_gt(i, I(127)), F);
    assert_simp(an, te_le(i, I(127)), T);
    assert_simp(an, te_eq(te_mul(io, I(2)), I(3)), F); /* parity */
    assert_simp(an, te_ne(te_add(io, I(1)), io), T);
    assert_simp(an, te_lt(io, te_add(io, I(1))), T);
    /* canonical: constant moved right, positive terms left */
    assert_simp(an, te_lt(te_add(n, I(5)), I(100)), te_lt(n, I(95)));
    assert_simp(an, te_lt(te_sub(n, io), I(0)), te_lt(n, io));
    assert_simp(an, te_lt(I(5), te_sub(n, I(1))), te_lt(I(6), n));
    assert_true(te_analyzer_can_prove(an, te_and(te_lt(i, I(128)), te_ge(ii, I(0)))));
    assert_false(te_analyzer_can_prove(an, te_lt(i, I(100))));
    assert_false(te_analyzer_can_prove(an, te_lt(n, I(100))));
    /* logic */
    te_expr *c = te_lt(n, I(7));
    assert_simp(an, te_and(te_lt(i, I(128)), c), c);
    assert_simp(an, te_and(c, te_lt(i, I(0))), F);
    assert_simp(an, te_or(c, te_ge(i, I(0))), T);
    assert_simp(an, te_or(c, F), c);
    assert_simp(an, te_not(te_not(c)), c);
    assert_simp(an, te_not(c), te_ge(n, I(7)));
    assert_simp(an, te_not(te_lt(i, I(0))), T);
    /* likely */
    te_expr *lk = te_call(TE_INTRIN_LIKELY, 1, (te_expr *[]){te_lt(i, I(128))});
    assert_simp(an, lk, T);
    te_expr *lk2 = te_call(TE_INTRIN_LIKELY, 1, (te_expr *[]){te_lt(te_add(n, I(1)), I(8))});
    assert_simp(an, lk2, te_call(TE_INTRIN_LIKELY, 1, (te_expr *[]){te_lt(n, I(7))}));
    /* min / max */
    assert_simp(an, te_min(ii, I(32)), ii);
    assert_simp(an, te_min(ii, I(31)), ii);
    assert_simp(an, te_max(ii, I(31)), I(31));
    assert_simp(an, te_min(io, te_add(io, I(1))), io);
    assert_simp(an, te_max(io, te_add(io, I(1))), te_add(io, I(1)));
    assert_simp(an, te_min(I(3), I(9)), I(3));
    assert_simp(an, te_min(n, n), n);
    assert_simp(an, te_min(n, I(4)), te_min(n, I(4)));
    /* select */
    te_expr *fa = te_var(ctx, "a", TE_FLOAT32), *fb = te_var(ctx, "b", TE_FLOAT32);
    assert_simp(an, te_select(te_lt(i, I(128)), fa, fb), fa);
    assert_simp(an, te_select(te_ge(i, I(128)), fa, fb), fb);
    assert_simp(an, te_select(c, fa, fa), fa);
    te_expr *sel = te_select(c, fa, fb);
    assert_ptr_equal(te_analyzer_simplify(an, sel), sel);
    te_analyzer_free(an);
    te_ctx_free(ctx);
}

static void test_bind_scopes(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_analyzer *an = te_analyzer_new(ctx);
    te_expr *x = te_var(ctx, "x", TE_INT64), *y = te_var(ctx, "y", TE_INT64);
    te_expr *e = te_floordiv(x, I(8));
    te_analyzer_bind(an, x, 0, 8);
    assert_simp(an, e, I(0));
    te_analyzer_bind(an, y, 0, 3);
    te_analyzer_bind(an, x, 8, 8); /* shadows [0, 8) */
    assert_simp(an, e, I(1));
    bound_is(an, x, 8, 15);
    te_analyzer_unbind(an, x);
    assert_simp(an, e, I(0));
    bound_is(an, y, 0, 2);
    te_analyzer_unbind(an, x);
    assert_simp(an, e, e);
    bound_is(an, x, INT64_MIN, INT64_MAX);
    te_analyzer_unbind(an, x); /* nothing bound: no-op */
    bound_is(an, y, 0, 2);
    /* a binding overrides an axis extent */
    te_expr *ax = te_axis(ctx, "i", 100);
    bound_is(an, ax, 0, 99);
    te_analyzer_bind(an, ax, 10, 5);
    bound_is(an, ax, 10, 14);
    te_analyzer_unbind(an, ax);
    bound_is(an, ax, 0, 99);
    /* te_simplify knows axis extents only */
    assert_simp(an, te_floormod(ax, I(100)), ax);
    assert_true(te_expr_equal(te_simplify(ctx, te_floordiv(ax, I(100))), I(0)));
    te_analyzer_free(an);
    te_analyzer_free(NULL);
    te_ctx_free(ctx);
}

/* ---------------- floats, casts, vectors ---------------- */

static void test_float_folding(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_analyzer *an = te_analyzer_new(ctx);
    te_expr *a = te_var(ctx, "a", TE_FLOAT32), *b = te_var(ctx, "b", TE_FLOAT32);
    te_expr *k = te_var(ctx, "k", TE_INT64);
    te_expr *one = te_float(ctx, 1.0), *two = te_float(ctx, 2.0);
    /* constants fold, in float32 */
    te_expr *c = te_add(te_float(ctx, 0.1), te_float(ctx, 0.2));
    double v;
    assert_true(te_is_const_float(te_analyzer_simplify(an, c), &v));
    assert_true(v == (double)(0.1f + 0.2f));
    te_expr *nested = te_mul(a, te_cast(TE_FLOAT32, te_add(te_int_t(ctx, TE_INT32, 2), te_int_t(ctx, TE_INT32, 3))));
    assert_simp(an, nested, te_mul(a, te_float(ctx, 5.0)));
    /* exact identities only */
    assert_simp(an, te_mul(a, one), a);
    assert_simp(an, te_div(a, one), a);
    assert_simp(an, te_sub(a, te_float(ctx, 0.0)), a);
    te_expr *plus0 = te_add(a, te_float(ctx, 0.0)); /* -0.0 + 0.0 is +0.0 */
    assert_ptr_equal(te_analyzer_simplify(an, plus0), plus0);
    /* no reassociation: (a + 1) + 2 stays, (a + b) - a stays */
    te_expr *r1 = te_add(te_add(a, one), two);
    assert_ptr_equal(te_analyzer_simplify(an, r1), r1);
    te_expr *r2 = te_sub(te_add(a, b), a);
    assert_ptr_equal(te_analyzer_simplify(an, r2), r2);
    /* int parts inside float expressions still simplify */
    te_expr *fk = te_mul(a, te_cast(TE_FLOAT32, te_sub(te_add(k, I(1)), I(1))));
    assert_simp(an, fk, te_mul(a, te_cast(TE_FLOAT32, k)));
    /* casts of immediates */
    assert_simp(an, te_cast(TE_INT32, te_float(ctx, -2.7)), te_int_t(ctx, TE_INT32, -2));
    assert_simp(an, te_cast(TE_FLOAT64, I(3)), te_float_t(ctx, TE_FLOAT64, 3.0));
    assert_simp(an, te_cast(TE_DTYPE(TE_INT, 8, 1), I(300)), te_int_t(ctx, TE_DTYPE(TE_INT, 8, 1), 44));
    /* float comparisons fold on constants only */
    assert_simp(an, te_lt(te_float(ctx, 1.0), te_float(ctx, 2.0)), te_bool(ctx, true));
    te_expr *fc = te_lt(a, b);
    assert_ptr_equal(te_analyzer_simplify(an, fc), fc);
    te_expr *nfc = te_not(fc); /* NaN: !(a < b) is not a >= b */
    assert_ptr_equal(te_analyzer_simplify(an, nfc), nfc);
    /* reads and reductions: their index expressions simplify */
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(64, 64));
    te_expr *i = te_axis(ctx, "i", 64), *r = te_reduce_axis(ctx, "r", 64);
    te_expr *rd = te_read(A, te_sub(te_add(i, I(2)), I(2)), r);
    assert_simp(an, rd, te_read(A, i, r));
    te_expr *red = te_sum(rd, r);
    assert_simp(an, red, te_sum(te_read(A, i, r), r));
    te_analyzer_free(an);
    te_ctx_free(ctx);
}

static void test_vectors(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_analyzer *an = te_analyzer_new(ctx);
    te_expr *x = te_var(ctx, "x", TE_INT64), *y = te_var(ctx, "y", TE_INT64);
    te_analyzer_bind(an, y, 0, 8);
    te_expr *r = tir_ramp(x, I(1), 8);
    assert_simp(an, te_add(tir_broadcast(I(2), 8), tir_broadcast(I(3), 8)), tir_broadcast(I(5), 8));
    assert_simp(an, te_add(r, tir_broadcast(te_add(I(1), I(2)), 8)),
                tir_ramp(te_add(x, I(3)), I(1), 8));
    assert_simp(an, te_add(tir_broadcast(I(3), 8), r), tir_ramp(te_add(x, I(3)), I(1), 8));
    assert_simp(an, te_add(r, r), tir_ramp(te_mul(x, I(2)), I(2), 8));
    assert_simp(an, te_mul(r, tir_broadcast(I(4), 8)), tir_ramp(te_mul(x, I(4)), I(4), 8));
    assert_simp(an, tir_ramp(te_sub(te_add(x, I(1)), I(1)), I(1), 8), r);
    assert_simp(an, tir_ramp(x, te_sub(y, y), 8), tir_broadcast(x, 8));
    /* a vector of lanes inside one block of 8 */
    te_expr *rb = tir_ramp(te_mul(y, I(8)), I(1), 8);
    assert_simp(an, te_floordiv(rb, tir_broadcast(I(8), 8)), tir_broadcast(y, 8));
    assert_simp(an, te_floormod(rb, tir_broadcast(I(8), 8)), tir_ramp(I(0), I(1), 8));
    te_expr *rs = tir_ramp(y, I(16), 4);
    assert_simp(an, te_floordiv(rs, tir_broadcast(I(8), 4)), tir_ramp(I(0), I(2), 4));
    assert_simp(an, te_floormod(rs, tir_broadcast(I(8), 4)), tir_broadcast(y, 4));
    /* float vectors: constant broadcasts only */
    te_expr *fb = te_add(tir_broadcast(te_float(ctx, 1.5), 4), tir_broadcast(te_float(ctx, 2.0), 4));
    assert_simp(an, fb, tir_broadcast(te_float(ctx, 3.5), 4));
    te_analyzer_free(an);
    te_ctx_free(ctx);
}

/* ---------------- randomized agreement ---------------- */

typedef struct {
    int n;
    te_expr *v[3];
    int64_t lo[3], ext[3];
    int64_t val[3];
} renv;

static int64_t fdiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) q--;
    return q;
}

/* Evaluates an integer / bool expression; *ok cleared on anything else. */
static int64_t eval(const te_expr *e, const renv *E, bool *ok) {
    int64_t a, b;
    switch (e->kind) {
    case TE_INT_IMM: return e->u.ival;
    case TE_VAR:
        for (int i = 0; i < E->n; i++)
            if (E->v[i] == e) return E->val[i];
        *ok = false;
        return 0;
    case TE_NOT: return !eval(e->u.un.a, E, ok);
    case TE_SELECT: return eval(e->u.sel.cond, E, ok) ? eval(e->u.sel.t, E, ok) : eval(e->u.sel.f, E, ok);
    case TE_CALL: return eval(e->u.call.args[0], E, ok); /* likely */
    default: break;
    }
    if (e->kind < TE_ADD || e->kind > TE_OR) {
        *ok = false;
        return 0;
    }
    a = eval(e->u.bin.a, E, ok);
    b = eval(e->u.bin.b, E, ok);
    switch (e->kind) {
    case TE_ADD: return a + b;
    case TE_SUB: return a - b;
    case TE_MUL: return a * b;
    case TE_DIV: if (b == 0) break; return a / b;
    case TE_FLOORDIV: if (b == 0) break; return fdiv(a, b);
    case TE_FLOORMOD: if (b == 0) break; return a - b * fdiv(a, b);
    case TE_MIN: return a < b ? a : b;
    case TE_MAX: return a > b ? a : b;
    case TE_EQ: return a == b;
    case TE_NE: return a != b;
    case TE_LT: return a < b;
    case TE_LE: return a <= b;
    case TE_GT: return a > b;
    case TE_GE: return a >= b;
    case TE_AND: return a && b;
    case TE_OR: return a || b;
    default: break;
    }
    *ok = false;
    return 0;
}

static int64_t rnd(uint64_t *st, int64_t lo, int64_t hi) { /* [lo, hi] */
    return lo + (int64_t)(tu_rand_u64(st) % (uint64_t)(hi - lo + 1));
}

static te_expr *gen_int(te_ctx *ctx, uint64_t *st, const renv *E, int depth);

static te_expr *gen_bool(te_ctx *ctx, uint64_t *st, const renv *E, int depth) {
    te_expr *a = gen_int(ctx, st, E, depth - 1), *b = gen_int(ctx, st, E, depth - 1);
    switch (rnd(st, 0, 7)) {
    case 0: return te_lt(a, b);
    case 1: return te_le(a, b);
    case 2: return te_gt(a, b);
    case 3: return te_ge(a, b);
    case 4: return te_eq(a, b);
    case 5: return te_ne(a, b);
    case 6: return te_and(te_lt(a, b), gen_bool(ctx, st, E, depth - 1));
    default: return te_not(te_le(a, b));
    }
}

static te_expr *gen_int(te_ctx *ctx, uint64_t *st, const renv *E, int depth) {
    int k = depth <= 0 ? (int)rnd(st, 0, 1) : (int)rnd(st, 0, 13);
    switch (k) {
    case 0: return E->v[rnd(st, 0, E->n - 1)];
    case 1: return te_int(ctx, rnd(st, -9, 9));
    case 2:
    case 3: return te_add(gen_int(ctx, st, E, depth - 1), gen_int(ctx, st, E, depth - 1));
    case 4: return te_sub(gen_int(ctx, st, E, depth - 1), gen_int(ctx, st, E, depth - 1));
    case 5:
    case 6: return te_mul(gen_int(ctx, st, E, depth - 1), te_int(ctx, rnd(st, -4, 16)));
    case 7: return te_floordiv(gen_int(ctx, st, E, depth - 1), te_int(ctx, rnd(st, 1, 17)));
    case 8: return te_floormod(gen_int(ctx, st, E, depth - 1), te_int(ctx, rnd(st, 1, 17)));
    case 9: return te_min(gen_int(ctx, st, E, depth - 1), gen_int(ctx, st, E, depth - 1));
    case 10: return te_max(gen_int(ctx, st, E, depth - 1), gen_int(ctx, st, E, depth - 1));
    case 11:
        return te_select(gen_bool(ctx, st, E, depth - 1), gen_int(ctx, st, E, depth - 1),
                         gen_int(ctx, st, E, depth - 1));
    case 12: return te_mul(gen_int(ctx, st, E, 0), gen_int(ctx, st, E, 0));
    default: {
        /* the split pattern: (v*F + w) with w in [0, F) by construction */
        te_expr *w = te_floormod(gen_int(ctx, st, E, depth - 1), te_int(ctx, rnd(st, 2, 8)));
        int64_t f = rnd(st, 2, 8);
        te_expr *s = te_add(te_mul(gen_int(ctx, st, E, depth - 1), te_int(ctx, f)), w);
        return rnd(st, 0, 1) ? te_floordiv(s, te_int(ctx, f)) : te_floormod(s, te_int(ctx, f));
    }
    }
}

static bool next_point(renv *E) {
    for (int i = 0; i < E->n; i++) {
        if (++E->val[i] < E->lo[i] + E->ext[i]) return true;
        E->val[i] = E->lo[i];
    }
    return false;
}

static void test_random_agreement(void **state) {
    (void)state;
    uint64_t seed = tu_seed(), st = seed;
    te_ctx *ctx = te_ctx_new();
    te_analyzer *an = te_analyzer_new(ctx);
    int checked = 0, changed = 0, nonfix = 0;
    const char *it_env = getenv("LOOM_ARITH_ITERS"); /* longer runs when hunting bugs */
    int iters = it_env ? atoi(it_env) : 1500;
    for (int iter = 0; iter < iters; iter++) {
        renv E = {.n = (int)rnd(&st, 1, 3)};
        for (int i = 0; i < E.n; i++) {
            E.lo[i] = rnd(&st, 0, 3) == 0 ? rnd(&st, -6, 0) : 0;
            E.ext[i] = rnd(&st, 1, 9);
            E.v[i] = rnd(&st, 0, 2) == 0 ? te_iter_var(ctx, (const char *[]){"a0", "a1", "a2"}[i],
                                                       TE_ITER_DATA_PAR, E.ext[i])
                                         : te_var(ctx, (const char *[]){"v0", "v1", "v2"}[i], TE_INT64);
            if (E.v[i]->u.var.iter == TE_ITER_DATA_PAR)
                E.lo[i] = 0; /* axes are used unbound: [0, extent) */
            else
                te_analyzer_bind(an, E.v[i], E.lo[i], E.ext[i]);
            E.val[i] = E.lo[i];
        }
        bool is_bool = rnd(&st, 0, 4) == 0;
        te_expr *e = is_bool ? gen_bool(ctx, &st, &E, 4) : gen_int(ctx, &st, &E, 4);
        assert_non_null(e);
        te_expr *s = te_analyzer_simplify(an, e);
        assert_non_null(s);
        changed += s != e;
        te_expr *s2 = te_analyzer_simplify(an, s);
        if (!te_expr_equal(s2, s)) {
            nonfix++;
            if (getenv("LOOM_ARITH_SHOW"))
                printf("not a fixpoint: %s\n  -> %s\n  -> %s\n", te_expr_str(ctx, e),
                       te_expr_str(ctx, s), te_expr_str(ctx, s2));
        }
        if (getenv("LOOM_ARITH_SHOW") && iter < 40)
            printf("%s\n  -> %s\n", te_expr_str(ctx, e), te_expr_str(ctx, s));
        int64_t lo, hi, mc, mb;
        te_analyzer_const_bound(an, e, &lo, &hi);
        te_analyzer_modular(an, e, &mc, &mb);
        int64_t slo, shi;
        te_analyzer_const_bound(an, s, &slo, &shi);
        do {
            bool ok = true;
            int64_t want = eval(e, &E, &ok), got = eval(s, &E, &ok);
            assert_true(ok);
            bool bad = want != got || want < lo || want > hi || want < slo || want > shi;
            if (!is_bool) bad |= mc == 0 ? want != mb : (want - mb) % mc != 0;
            if (bad) {
                fprintf(stderr, "seed %llu: %s\n  simplified %s\n  at", (unsigned long long)seed,
                        te_expr_str(ctx, e), te_expr_str(ctx, s));
                for (int i = 0; i < E.n; i++)
                    fprintf(stderr, " %s%d=%lld in [%lld,%lld)", E.v[i]->u.var.name, E.v[i]->u.var.id,
                            (long long)E.val[i], (long long)E.lo[i],
                            (long long)(E.lo[i] + E.ext[i]));
                fprintf(stderr, "\n  value %lld, simplified %lld, bound [%lld, %lld] / [%lld, %lld], "
                                "modular %lld*k+%lld\n",
                        (long long)want, (long long)got, (long long)lo, (long long)hi,
                        (long long)slo, (long long)shi, (long long)mc, (long long)mb);
                fail();
            }
            checked++;
        } while (next_point(&E));
        for (int i = E.n - 1; i >= 0; i--)
            if (E.v[i]->u.var.iter == TE_ITER_NONE) te_analyzer_unbind(an, E.v[i]);
    }
    assert_true(changed > iters / 15); /* the generator does exercise the rules */
    assert_true(nonfix <= iters / 100); /* simplify(simplify(e)) == simplify(e), but for rare cases */
    assert_true(checked > 10000);
    te_analyzer_free(an);
    te_ctx_free(ctx);
}

/* ---------------- speed ---------------- */

static void test_speed(void **state) {
    (void)state;
    /* A tiled matmul's index expressions, simplified many times: each must
     * take microseconds. */
    te_ctx *ctx = te_ctx_new();
    te_analyzer *an = te_analyzer_new(ctx);
    te_expr *io = te_iter_var(ctx, "io", TE_ITER_DATA_PAR, 16);
    te_expr *ii = te_iter_var(ctx, "ii", TE_ITER_DATA_PAR, 32);
    te_expr *jo = te_iter_var(ctx, "jo", TE_ITER_DATA_PAR, 16);
    te_expr *ji = te_iter_var(ctx, "ji", TE_ITER_DATA_PAR, 32);
    te_expr *i = te_add(te_mul(io, I(32)), ii), *j = te_add(te_mul(jo, I(32)), ji);
    te_expr *flat = te_add(te_mul(i, I(512)), j);
    te_expr *e = te_add(te_mul(te_floordiv(flat, I(512)), I(512)), te_floormod(flat, I(512)));
    struct timespec ts0, ts1;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    for (int k = 0; k < 2000; k++) {
        te_expr *s = te_analyzer_simplify(an, e);
        assert_non_null(s);
    }
    clock_gettime(CLOCK_MONOTONIC, &ts1);
    double per = ((double)(ts1.tv_sec - ts0.tv_sec) + 1e-9 * (double)(ts1.tv_nsec - ts0.tv_nsec)) / 2000;
    printf("simplify of a tiled matmul index: %.2f us\n", per * 1e6);
    assert_true(per < 200e-6);
    te_analyzer_free(an);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_collapse),
        cmocka_unit_test(test_fuse_collapse),
        cmocka_unit_test(test_canonical_order),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_modular),
        cmocka_unit_test(test_affine_form),
        cmocka_unit_test(test_compare_minmax_select),
        cmocka_unit_test(test_bind_scopes),
        cmocka_unit_test(test_float_folding),
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_random_agreement),
        cmocka_unit_test(test_speed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
