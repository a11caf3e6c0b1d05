/*
 * te/arith_canonical.c — canonical simplification of signed integer scalar
 * arithmetic: a maximal tree of + - and *-by-constant is flattened in one
 * pass into a linear form over simplified monomials, like terms are
 * combined, `floordiv(x, c)*c + floormod(x, c)` pairs fold back to x, and
 * the form is rebuilt in canonical order. floordiv / floormod by a
 * positive constant split off the terms divisible by the constant and
 * decide the rest by bounds (TVM's CanonicalSimplifier does the same with
 * its SplitExpr / SumExpr forms).
 */
#include "te/arith_internal.h"
#include "te/te_internal.h"

#define NEG_INF INT64_MIN
#define POS_INF INT64_MAX

static te_expr *imm(te_analyzer *an, te_dtype t, int64_t v) { return te__int_imm(an->ctx, t, v); }

/* scale * e into l, simplifying the monomials on the way. */
static void flatten(te_analyzer *an, te__lin *l, te_expr *e, int64_t scale) {
    if (l->overflow) return;
    int64_t s;
    switch (e->kind) {
    case TE_INT_IMM: te__lin_collect(l, e, scale); return;
    case TE_ADD:
        flatten(an, l, e->u.bin.a, scale);
        flatten(an, l, e->u.bin.b, scale);
        return;
    case TE_SUB:
        flatten(an, l, e->u.bin.a, scale);
        if (scale == INT64_MIN) {
            l->overflow = true;
            return;
        }
        flatten(an, l, e->u.bin.b, -scale);
        return;
    case TE_MUL: {
        te_expr *a = e->u.bin.a, *b = e->u.bin.b;
        if (b->kind == TE_INT_IMM || a->kind == TE_INT_IMM) {
            te_expr *c = b->kind == TE_INT_IMM ? b : a, *x = c == b ? a : b;
            if (__builtin_mul_overflow(scale, c->u.ival, &s)) {
                l->overflow = true;
                return;
            }
            flatten(an, l, x, s);
            return;
        }
        te_expr *sa = te__simp(an, a), *sb = te__simp(an, b);
        int64_t v;
        if (te_is_const_int(sa, &v) || te_is_const_int(sb, &v)) {
            te_expr *x = sa->kind == TE_INT_IMM ? sb : sa;
            if (__builtin_mul_overflow(scale, v, &s)) {
                l->overflow = true;
                return;
            }
            te__lin_collect(l, x, s);
            return;
        }
        /* A product of two non-constant parts is one monomial; order the
         * factors so that x*y and y*x meet. */
        if (te__expr_cmp(sa, sb) > 0) {
            te_expr *t = sa;
            sa = sb;
            sb = t;
        }
        te_expr *m = (sa == a && sb == b) ? e : te__bin(TE_MUL, e->dtype, sa, sb);
        te__lin_add_term(l, m, scale);
        return;
    }
    default: te__lin_collect(l, te__simp(an, e), scale); return;
    }
}

static bool is_const_pos(const te_expr *e, int64_t *c) {
    return e->kind == TE_INT_IMM && e->dtype.lanes == 1 && (*c = e->u.ival) > 0;
}

static te_expr *divmod_const(te_analyzer *an, te_expr *a, int64_t c, bool div, te_dtype t);

/* floordiv(X, c)*(k*c) + floormod(X, c)*k == X*k, and
 * floormod(X, c)*k - X*k == floordiv(X, c)*(-k*c). floordiv(X, c) is
 * matched in its simplified form: with X = floordiv(Y, a) that is
 * floordiv(Y, a*c), so the index of a loop fused from several and split
 * again (floordiv(f, 784)*12544 + floormod(floordiv(f, 7), 112)*112 +
 * floormod(f, 7)*16) folds back to f*16. */
static void merge_divmod(te_analyzer *an, te__lin *l, te_dtype t) {
    for (int round = 0; round < 8 && !l->overflow; round++) {
        bool changed = false;
        for (int i = 0; i < l->n && !changed; i++) {
            te_expr *mi = l->t[i].m;
            int64_t c, k = l->t[i].c, kc, cj;
            if (mi->kind != TE_FLOORMOD || !is_const_pos(mi->u.bin.b, &c)) continue;
            te_expr *x = mi->u.bin.a;
            if (__builtin_mul_overflow(k, c, &kc)) continue;
            te_expr *q = NULL; /* floordiv(x, c) simplified, when x is a floordiv */
            for (int j = 0; j < l->n && !changed; j++) {
                te_expr *mj = l->t[j].m;
                if (j == i || l->t[j].c == 0) continue;
                bool partner = false;
                if (mj->kind == TE_FLOORDIV && l->t[j].c == kc && is_const_pos(mj->u.bin.b, &cj)) {
                    if (cj == c && te_expr_equal(mj->u.bin.a, x)) {
                        partner = true;
                    } else if (x->kind == TE_FLOORDIV) {
                        if (!q) q = divmod_const(an, x, c, true, t);
                        partner = q && te_expr_equal(q, mj);
                    }
                }
                if (partner) {
                    l->t[i].c = 0;
                    l->t[j].c = 0;
                    te__lin_collect(l, x, k);
                    changed = true;
                } else if (l->t[j].c == -k && te_expr_equal(mj, x) && k != INT64_MIN) {
                    l->t[i].c = 0;
                    l->t[j].c = 0;
                    te__lin_add_term(l, te__bin(TE_FLOORDIV, t, x, imm(an, t, c)), -kc);
                    changed = true;
                }
            }
        }
        if (!changed) return;
        te__lin_combine(l);
    }
}

te_expr *te__simp_affine(te_analyzer *an, te_expr *e) {
    te__lin l;
    te__lin_init(&l);
    flatten(an, &l, e, 1);
    te__lin_combine(&l);
    merge_divmod(an, &l, e->dtype);
    te_expr *r;
    if (l.overflow) {
        /* Fall back to the children simplified one by one. */
        te_expr *a = te__simp(an, e->u.bin.a), *b = te__simp(an, e->u.bin.b);
        r = (a == e->u.bin.a && b == e->u.bin.b) ? e : te__bin(e->kind, e->dtype, a, b);
    } else {
        r = te__lin_build(an->ctx, &l, e->dtype);
    }
    te__lin_free(&l);
    if (!r) return e;
    return (r == e || te_expr_equal(r, e)) ? e : r;
}

static te_expr *divmod_const(te_analyzer *an, te_expr *a, int64_t c, bool div, te_dtype t);

/* floordiv(R, c) or floormod(R, c) where no term of R is divisible by c. */
static te_expr *rest_divmod(te_analyzer *an, te__lin *R, int64_t c, bool div, te_dtype t) {
    if (R->n == 0) return imm(an, t, div ? te__fdiv(R->k, c) : te__fmod(R->k, c));
    int64_t lo, hi;
    te__lin_bound(an, R, &lo, &hi);
    if (lo != NEG_INF && hi != POS_INF && te__fdiv(lo, c) == te__fdiv(hi, c)) {
        int64_t kk = te__fdiv(lo, c);
        if (div) return imm(an, t, kk);
        R->k -= kk * c; /* no overflow: lo - kk*c is in [0, c) */
        return te__lin_build(an->ctx, R, t);
    }
    /* Divide out the common factor g of c and every coefficient:
     * (g*X + g*k1 + k0) // (g*c2) == (X + k1) // c2, and the mod is
     * g * ((X + k1) % c2) + k0. */
    int64_t g = c;
    for (int i = 0; i < R->n && g > 1; i++) g = te__gcd(g, R->t[i].c);
    if (g > 1) {
        te__lin X;
        te__lin_init(&X);
        for (int i = 0; i < R->n; i++) te__lin_add_term(&X, R->t[i].m, R->t[i].c / g);
        X.k = te__fdiv(R->k, g);
        int64_t k0 = te__fmod(R->k, g);
        te_expr *sub = rest_divmod(an, &X, c / g, div, t);
        te__lin_free(&X);
        if (div || !sub) return sub;
        te__lin M;
        te__lin_init(&M);
        te__lin_collect(&M, sub, g);
        te__lin_add_const(&M, k0);
        te__lin_combine(&M);
        te_expr *r = M.overflow ? NULL : te__lin_build(an->ctx, &M, t);
        te__lin_free(&M);
        if (r) return r;
    }
    te_expr *rx = te__lin_build(an->ctx, R, t);
    if (!rx) return NULL;
    if (!div) {
        int64_t mc, mb;
        te__modular(an, rx, &mc, &mb);
        if (mc > 0 && mc % c == 0) return imm(an, t, te__fmod(mb, c));
    }
    if (R->n == 1 && R->k == 0 && R->t[0].c == 1) {
        te_expr *m = R->t[0].m;
        int64_t a2, ac;
        if (div && m->kind == TE_FLOORDIV && is_const_pos(m->u.bin.b, &a2) &&
            !__builtin_mul_overflow(a2, c, &ac))
            return divmod_const(an, m->u.bin.a, ac, true, t);
        if (!div && m->kind == TE_FLOORMOD && is_const_pos(m->u.bin.b, &a2) && a2 % c == 0)
            return divmod_const(an, m->u.bin.a, c, false, t);
    }
    return te__bin(div ? TE_FLOORDIV : TE_FLOORMOD, t, rx, imm(an, t, c));
}

/* floordiv(a, c) / floormod(a, c) for a canonical a and c > 0. */
static te_expr *divmod_const(te_analyzer *an, te_expr *a, int64_t c, bool div, te_dtype t) {
    te__lin L, Q, R;
    te__lin_init(&L);
    te__lin_init(&Q);
    te__lin_init(&R);
    te__lin_collect(&L, a, 1);
    te__lin_combine(&L);
    te_expr *r = NULL;
    if (!L.overflow) {
        for (int i = 0; i < L.n; i++) {
            if (L.t[i].c % c == 0)
                te__lin_add_term(&Q, L.t[i].m, L.t[i].c / c);
            else
                te__lin_add_term(&R, L.t[i].m, L.t[i].c);
        }
        R.k = L.k;
        if (!Q.overflow && !R.overflow) {
            te_expr *part = rest_divmod(an, &R, c, div, t);
            if (part && div && Q.n > 0) {
                te__lin_collect(&Q, part, 1);
                te__lin_combine(&Q);
                merge_divmod(an, &Q, t);
                part = Q.overflow ? NULL : te__lin_build(an->ctx, &Q, t);
            }
            r = part;
        }
    }
    te__lin_free(&L);
    te__lin_free(&Q);
    te__lin_free(&R);
    if (!r) r = te__bin(div ? TE_FLOORDIV : TE_FLOORMOD, t, a, imm(an, t, c));
    return r;
}

te_expr *te__simp_divmod(te_analyzer *an, te_expr *e) {
    te_expr *a = te__simp(an, e->u.bin.a), *b = te__simp(an, e->u.bin.b);
    int64_t c, av;
    te_expr *r = NULL;
    bool div = e->kind != TE_FLOORMOD;
    if (te_is_const_int(b, &c) && c != 0 && te_is_const_int(a, &av)) {
        int64_t v;
        if (te__fold_int(e->kind, e->dtype, av, c, &v)) r = imm(an, e->dtype, v);
    } else if (is_const_pos(b, &c)) {
        if (e->kind == TE_DIV) {
            int64_t lo, hi;
            te__bound(an, a, &lo, &hi);
            if (lo >= 0) r = divmod_const(an, a, c, true, e->dtype);
        } else {
            r = divmod_const(an, a, c, div, e->dtype);
        }
    }
    if (!r) r = (a == e->u.bin.a && b == e->u.bin.b) ? e : te__bin(e->kind, e->dtype, a, b);
    if (!r) return e;
    return (r == e || te_expr_equal(r, e)) ? e : r;
}

te_expr *te__simp(te_analyzer *an, te_expr *e) {
    if (!e) return e;
    switch (e->kind) {
    case TE_INT_IMM:
    case TE_FLOAT_IMM: return e;
    case TE_VAR:
        /* a variable pinned to one value (a loop of extent 1) is that value */
        if (te_dtype_is_int(e->dtype) && e->dtype.lanes == 1) {
            int64_t lo, hi;
            te__var_range(an, e, &lo, &hi);
            if (lo == hi) return te__int_imm(an->ctx, e->dtype, lo);
        }
        return e;
    case TE_ADD:
    case TE_SUB:
    case TE_MUL:
        if (te__is_sint(e->dtype)) return te__simp_affine(an, e);
        break;
    case TE_DIV:
    case TE_FLOORDIV:
    case TE_FLOORMOD:
        if (te__is_sint(e->dtype)) return te__simp_divmod(an, e);
        break;
    default: break;
    }
    return te__simp_rewrite(an, e);
}
