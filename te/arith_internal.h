/*
 * te/arith_internal.h — shared pieces of the arithmetic analyser: variable
 * bindings, saturating integer helpers, linear (affine) forms, constant
 * bounds and modular sets. Not a public header.
 *
 * Integer infinities: INT64_MIN and INT64_MAX stand for -inf and +inf in
 * bounds; every helper here saturates instead of overflowing.
 */
#ifndef LOOM_ARITH_INTERNAL_H
#define LOOM_ARITH_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "loom/te.h"

typedef struct {
    const te_expr *var;
    int64_t lo, hi; /* inclusive */
} te__binding;

struct te_analyzer {
    te_ctx *ctx;
    te__binding *b; /* a stack: the newest binding of a var is searched first */
    int n, cap;
};

/* ---- saturating integer helpers (arith_bound.c) ---- */
int64_t te__sat_add(int64_t a, int64_t b);
int64_t te__sat_neg(int64_t a);
int64_t te__sat_mul(int64_t a, int64_t b);
/* floor division / modulo for b != 0 (finite operands). */
int64_t te__fdiv(int64_t a, int64_t b);
int64_t te__fmod(int64_t a, int64_t b);
int64_t te__gcd(int64_t a, int64_t b); /* >= 0; gcd(0, 0) == 0 */

/* The range of a variable: its newest binding, else [0, extent) for an
 * axis, else the range of its type. */
void te__var_range(const te_analyzer *an, const te_expr *v, int64_t *lo, int64_t *hi);
/* The range of an integer type (int64: [INT64_MIN, INT64_MAX], i.e. unbounded). */
void te__type_range(te_dtype t, int64_t *lo, int64_t *hi);
/* Constant interval of an integer (or bool) expression. */
void te__bound(const te_analyzer *an, const te_expr *e, int64_t *lo, int64_t *hi);

/* ---- linear forms (arith_linear.c) ---- */

/* sum(c[i] * m[i]) + k, with m[i] an opaque non-constant "monomial". */
typedef struct {
    te_expr *m;
    int64_t c;
} te__term;

typedef struct {
    te__term *t;
    int n, cap;
    int64_t k;
    bool overflow; /* a coefficient overflowed: the form is unusable */
    te__term inl[16];
} te__lin;

void te__lin_init(te__lin *l);
void te__lin_free(te__lin *l);
void te__lin_add_term(te__lin *l, te_expr *m, int64_t c);
void te__lin_add_const(te__lin *l, int64_t k);
/* Adds scale * e, walking ADD, SUB, MUL by an immediate and immediates
 * structurally; anything else becomes a monomial. */
void te__lin_collect(te__lin *l, te_expr *e, int64_t scale);
/* Merges equal monomials and drops zero terms. */
void te__lin_combine(te__lin *l);
/* Bound of the form under an's bindings. */
void te__lin_bound(const te_analyzer *an, const te__lin *l, int64_t *lo, int64_t *hi);
/* Sorts the terms into canonical order (larger |coeff| first, then
 * te__expr_cmp) and builds the expression in type t (signed int scalar). */
te_expr *te__lin_build(te_ctx *ctx, te__lin *l, te_dtype t);
/* A deterministic structural total order (variables by id). */
int te__expr_cmp(const te_expr *a, const te_expr *b);

/* ---- modular sets (arith_modular.c) ---- */
void te__modular(const te_analyzer *an, const te_expr *e, int64_t *coeff, int64_t *base);

/* ---- simplifier (arith_canonical.c, arith_rewrite.c) ---- */
te_expr *te__simp(te_analyzer *an, te_expr *e);
/* Signed integer scalar: the types the affine machinery handles. */
static inline bool te__is_sint(te_dtype t) { return t.code == TE_INT && t.lanes == 1; }
/* Rules for non-affine kinds (arith_rewrite.c). */
te_expr *te__simp_rewrite(te_analyzer *an, te_expr *e);
/* Integer scalar ADD/SUB/MUL/FLOORDIV/FLOORMOD/DIV (arith_canonical.c). */
te_expr *te__simp_affine(te_analyzer *an, te_expr *e);
te_expr *te__simp_divmod(te_analyzer *an, te_expr *e);

#endif
