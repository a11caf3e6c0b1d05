/*
 * te/arith_rewrite.c — simplification of everything that is not signed
 * integer scalar arithmetic: float and unsigned constant folding (floats
 * only by exact identities, never reassociated), comparisons decided by
 * bounds or put in a canonical form, logic, select, min/max, casts,
 * likely(), and the vector rules of RAMP / BROADCAST.
 */
#include <math.h>

#include "te/arith_internal.h"
#include "te/te_internal.h"

#define NEG_INF INT64_MIN
#define POS_INF INT64_MAX

static te_expr *map_fn(te_expr *child, void *user) { return te__simp(user, child); }

static te_expr *bin(te_expr *e, te_expr *a, te_expr *b) {
    if (a == e->u.bin.a && b == e->u.bin.b) return e;
    return te__bin(e->kind, e->dtype, a, b);
}

static te_expr *mk_ramp(te_ctx *ctx, te_expr *base, te_expr *stride, int lanes) {
    int64_t s;
    if (te_is_const_int(stride, &s) && s == 0) return te__broadcast(base, lanes);
    te_expr *r = te__node(ctx, TE_RAMP, te_dtype_with_lanes(base->dtype, lanes));
    if (!r) return NULL;
    r->u.ramp.base = base;
    r->u.ramp.stride = stride;
    r->u.ramp.lanes = lanes;
    return r;
}

/* A scalar op, simplified. */
static te_expr *sop(te_analyzer *an, te_expr_kind k, te_expr *a, te_expr *b) {
    te_expr *r = te__bin(k, a->dtype, a, b);
    return r ? te__simp(an, r) : NULL;
}

/* Folds two scalar immediates; NULL when it cannot. */
static te_expr *fold2(te_analyzer *an, te_expr *e, te_expr *a, te_expr *b) {
    if (a->dtype.lanes != 1 || b->dtype.lanes != 1) return NULL;
    if (a->kind == TE_INT_IMM && b->kind == TE_INT_IMM) {
        int64_t v;
        if (!te__fold_int(e->kind, a->dtype, a->u.ival, b->u.ival, &v)) return NULL;
        return te__int_imm(an->ctx, e->dtype, v);
    }
    if (a->kind == TE_FLOAT_IMM && b->kind == TE_FLOAT_IMM) {
        double v;
        bool is_bool = false, bv = false;
        if (!te__fold_float(e->kind, a->dtype, a->u.fval, b->u.fval, &v, &is_bool, &bv))
            return NULL;
        if (is_bool) return te__int_imm(an->ctx, e->dtype, bv);
        return te__float_imm(an->ctx, e->dtype, te__round_float(e->dtype, v));
    }
    return NULL;
}

static bool is_float_const(const te_expr *e, double v) {
    return e->kind == TE_FLOAT_IMM && e->dtype.lanes == 1 && e->u.fval == v;
}

/* RAMP / BROADCAST arithmetic (lanes > 1). NULL when no rule applies. */
static te_expr *vec_arith(te_analyzer *an, te_expr *e, te_expr *a, te_expr *b) {
    te_ctx *ctx = an->ctx;
    te_expr_kind k = e->kind;
    bool ints = te_dtype_element(e->dtype).code == TE_INT;
    if (a->kind == TE_BROADCAST && b->kind == TE_BROADCAST && a->u.bcast.lanes == b->u.bcast.lanes) {
        te_expr *v = sop(an, k, a->u.bcast.value, b->u.bcast.value);
        return v ? te__broadcast(v, a->u.bcast.lanes) : NULL;
    }
    if (!ints) return NULL;
    if (k == TE_ADD || k == TE_SUB) {
        if (a->kind == TE_RAMP && b->kind == TE_BROADCAST && a->u.ramp.lanes == b->u.bcast.lanes) {
            te_expr *base = sop(an, k, a->u.ramp.base, b->u.bcast.value);
            return base ? mk_ramp(ctx, base, a->u.ramp.stride, a->u.ramp.lanes) : NULL;
        }
        if (a->kind == TE_BROADCAST && b->kind == TE_RAMP && a->u.bcast.lanes == b->u.ramp.lanes) {
            te_expr *base = sop(an, k, a->u.bcast.value, b->u.ramp.base);
            te_expr *stride = k == TE_ADD ? b->u.ramp.stride
                                          : sop(an, TE_SUB, te__int_imm(ctx, b->u.ramp.stride->dtype, 0),
                                                b->u.ramp.stride);
            return base && stride ? mk_ramp(ctx, base, stride, b->u.ramp.lanes) : NULL;
        }
        if (a->kind == TE_RAMP && b->kind == TE_RAMP && a->u.ramp.lanes == b->u.ramp.lanes) {
            te_expr *base = sop(an, k, a->u.ramp.base, b->u.ramp.base);
            te_expr *stride = sop(an, k, a->u.ramp.stride, b->u.ramp.stride);
            return base && stride ? mk_ramp(ctx, base, stride, a->u.ramp.lanes) : NULL;
        }
        return NULL;
    }
    if (k == TE_MUL) {
        te_expr *r = a->kind == TE_RAMP ? a : b, *c = r == a ? b : a;
        if (r->kind == TE_RAMP && c->kind == TE_BROADCAST && r->u.ramp.lanes == c->u.bcast.lanes) {
            te_expr *base = sop(an, TE_MUL, r->u.ramp.base, c->u.bcast.value);
            te_expr *stride = sop(an, TE_MUL, r->u.ramp.stride, c->u.bcast.value);
            return base && stride ? mk_ramp(ctx, base, stride, r->u.ramp.lanes) : NULL;
        }
        return NULL;
    }
    if ((k == TE_FLOORDIV || k == TE_FLOORMOD) && a->kind == TE_RAMP && b->kind == TE_BROADCAST &&
        a->u.ramp.lanes == b->u.bcast.lanes) {
        int64_t c, s;
        int n = a->u.ramp.lanes;
        if (!te_is_const_int(b->u.bcast.value, &c) || c <= 0) return NULL;
        if (!te_is_const_int(a->u.ramp.stride, &s)) return NULL;
        te_expr *base = a->u.ramp.base, *cv = b->u.bcast.value;
        if (s % c == 0) { /* every lane moves by whole multiples of c */
            if (k == TE_FLOORMOD) {
                te_expr *m = sop(an, TE_FLOORMOD, base, cv);
                return m ? te__broadcast(m, n) : NULL;
            }
            te_expr *d = sop(an, TE_FLOORDIV, base, cv);
            return d ? mk_ramp(ctx, d, te__int_imm(ctx, cv->dtype, s / c), n) : NULL;
        }
        if (s > 0) { /* all lanes stay in one block of c when base % c + s*(n-1) < c */
            te_expr *m = sop(an, TE_FLOORMOD, base, cv);
            int64_t lo, hi, span;
            if (!m) return NULL;
            te__bound(an, m, &lo, &hi);
            if (__builtin_mul_overflow(s, (int64_t)(n - 1), &span) || hi == POS_INF ||
                hi > c - 1 - span)
                return NULL;
            if (k == TE_FLOORMOD) return mk_ramp(ctx, m, a->u.ramp.stride, n);
            te_expr *d = sop(an, TE_FLOORDIV, base, cv);
            return d ? te__broadcast(d, n) : NULL;
        }
    }
    return NULL;
}

static te_expr *simp_arith(te_analyzer *an, te_expr *e) {
    te_expr *a = te__simp(an, e->u.bin.a), *b = te__simp(an, e->u.bin.b);
    if (!a || !b) return e;
    te_expr *r = fold2(an, e, a, b);
    if (r) return r;
    if (e->dtype.lanes > 1 && (r = vec_arith(an, e, a, b))) return r;
    if (te_dtype_is_float(e->dtype) && e->dtype.lanes == 1) {
        /* Exact identities only: x*1, x/1, x-0 (x+0 is not exact for -0). */
        if (e->kind == TE_MUL && is_float_const(b, 1.0)) return a;
        if (e->kind == TE_MUL && is_float_const(a, 1.0)) return b;
        if (e->kind == TE_DIV && is_float_const(b, 1.0)) return a;
        if (e->kind == TE_SUB && b->kind == TE_FLOAT_IMM && b->u.fval == 0.0 && !signbit(b->u.fval))
            return a;
    }
    return bin(e, a, b);
}

/* a - b as a combined linear form (signed integer scalars). */
static bool diff_form(te__lin *l, te_expr *a, te_expr *b) {
    te__lin_init(l);
    te__lin_collect(l, a, 1);
    te__lin_collect(l, b, -1);
    te__lin_combine(l);
    return !l->overflow;
}

static te_expr *simp_minmax(te_analyzer *an, te_expr *e) {
    te_expr *a = te__simp(an, e->u.bin.a), *b = te__simp(an, e->u.bin.b);
    if (!a || !b) return e;
    te_expr *r = fold2(an, e, a, b);
    if (r) return r;
    if (a == b || te_expr_equal(a, b)) return a;
    if (e->dtype.lanes > 1 && (r = vec_arith(an, e, a, b))) return r;
    if (te__is_sint(e->dtype)) {
        te__lin d;
        if (diff_form(&d, a, b)) {
            int64_t lo, hi;
            te__lin_bound(an, &d, &lo, &hi);
            te__lin_free(&d);
            if (hi <= 0) return e->kind == TE_MIN ? a : b;
            if (lo >= 0) return e->kind == TE_MIN ? b : a;
        } else {
            te__lin_free(&d);
        }
    }
    return bin(e, a, b);
}

/* -1: unknown; else the truth value of (d kind 0) for d in [lo, hi]. */
static int decide(te_expr_kind k, int64_t lo, int64_t hi) {
    switch (k) {
    case TE_LT: return hi < 0 ? 1 : lo >= 0 ? 0 : -1;
    case TE_LE: return hi <= 0 ? 1 : lo > 0 ? 0 : -1;
    case TE_GT: return lo > 0 ? 1 : hi <= 0 ? 0 : -1;
    case TE_GE: return lo >= 0 ? 1 : hi < 0 ? 0 : -1;
    case TE_EQ: return (lo == 0 && hi == 0) ? 1 : (lo > 0 || hi < 0) ? 0 : -1;
    case TE_NE: return (lo == 0 && hi == 0) ? 0 : (lo > 0 || hi < 0) ? 1 : -1;
    default: return -1;
    }
}

static te_expr *simp_cmp(te_analyzer *an, te_expr *e) {
    te_expr *a = te__simp(an, e->u.bin.a), *b = te__simp(an, e->u.bin.b);
    if (!a || !b) return e;
    te_expr *r = fold2(an, e, a, b);
    if (r) return r;
    if (!te__is_sint(a->dtype)) return bin(e, a, b);
    te__lin d;
    if (!diff_form(&d, a, b)) {
        te__lin_free(&d);
        return bin(e, a, b);
    }
    int64_t lo, hi;
    te__lin_bound(an, &d, &lo, &hi);
    int v = decide(e->kind, lo, hi);
    if (v < 0 && (e->kind == TE_EQ || e->kind == TE_NE)) {
        /* sum of multiples of g never equals a k that g does not divide */
        int64_t g = 0;
        for (int i = 0; i < d.n; i++) g = te__gcd(g, d.t[i].c);
        if (g > 1 && d.k % g != 0) v = e->kind == TE_NE;
    }
    if (v >= 0) {
        te__lin_free(&d);
        return te__int_imm(an->ctx, e->dtype, v);
    }
    /* Canonical form: positive terms on the left, the others on the right,
     * the constant beside the terms that read best (`i + j < 10`). */
    te__lin P, N;
    te__lin_init(&P);
    te__lin_init(&N);
    for (int i = 0; i < d.n; i++) {
        if (d.t[i].c > 0)
            te__lin_add_term(&P, d.t[i].m, d.t[i].c);
        else if (d.t[i].c != INT64_MIN)
            te__lin_add_term(&N, d.t[i].m, -d.t[i].c);
        else
            P.overflow = true;
    }
    if (P.n > 0 && d.k != INT64_MIN)
        N.k = -d.k;
    else
        P.k = d.k;
    if (!P.overflow && !N.overflow) {
        te_expr *l = te__lin_build(an->ctx, &P, a->dtype);
        te_expr *rr = te__lin_build(an->ctx, &N, a->dtype);
        if (l && rr) r = bin(e, l, rr);
    }
    te__lin_free(&P);
    te__lin_free(&N);
    te__lin_free(&d);
    if (!r) r = bin(e, a, b);
    return (r == e || te_expr_equal(r, e)) ? e : r;
}

static te_expr_kind negate_cmp(te_expr_kind k) {
    switch (k) {
    case TE_LT: return TE_GE;
    case TE_LE: return TE_GT;
    case TE_GT: return TE_LE;
    case TE_GE: return TE_LT;
    case TE_EQ: return TE_NE;
    case TE_NE: return TE_EQ;
    default: return k;
    }
}

static te_expr *simp_logic(te_analyzer *an, te_expr *e) {
    int64_t v;
    if (e->kind == TE_NOT) {
        te_expr *a = te__simp(an, e->u.un.a);
        if (!a) return e;
        if (te_is_const_int(a, &v)) return te__int_imm(an->ctx, e->dtype, !v);
        if (a->kind == TE_NOT) return a->u.un.a;
        bool exact = a->kind == TE_EQ || a->kind == TE_NE ||
                     (a->kind >= TE_EQ && a->kind <= TE_GE && !te_dtype_is_float(a->u.bin.a->dtype));
        if (a->kind >= TE_EQ && a->kind <= TE_GE && exact)
            return te__bin(negate_cmp(a->kind), a->dtype, a->u.bin.a, a->u.bin.b);
        if (a == e->u.un.a) return e;
        te_expr *r = te__clone(an->ctx, e);
        if (r) r->u.un.a = a;
        return r ? r : e;
    }
    te_expr *a = te__simp(an, e->u.bin.a), *b = te__simp(an, e->u.bin.b);
    if (!a || !b) return e;
    bool and_ = e->kind == TE_AND;
    if (te_is_const_int(a, &v)) return (v != 0) == and_ ? b : a;
    if (te_is_const_int(b, &v)) return (v != 0) == and_ ? a : b;
    if (a == b || te_expr_equal(a, b)) return a;
    return bin(e, a, b);
}

static te_expr *simp_select(te_analyzer *an, te_expr *e) {
    te_expr *c = te__simp(an, e->u.sel.cond);
    int64_t v;
    if (!c) return e;
    if (te_is_const_int(c, &v)) return te__simp(an, v ? e->u.sel.t : e->u.sel.f);
    te_expr *t = te__simp(an, e->u.sel.t), *f = te__simp(an, e->u.sel.f);
    if (!t || !f) return e;
    if (t == f || te_expr_equal(t, f)) return t;
    if (c == e->u.sel.cond && t == e->u.sel.t && f == e->u.sel.f) return e;
    te_expr *r = te__clone(an->ctx, e);
    if (!r) return e;
    r->u.sel.cond = c;
    r->u.sel.t = t;
    r->u.sel.f = f;
    return r;
}

static te_expr *simp_cast(te_analyzer *an, te_expr *e) {
    te_expr *a = te__simp(an, e->u.un.a);
    if (!a) return e;
    te_dtype t = e->dtype;
    if (te_dtype_eq(a->dtype, t)) return a;
    if (t.lanes == 1 && a->dtype.lanes == 1) {
        if (a->kind == TE_INT_IMM) {
            int64_t v = a->u.ival;
            if (te_dtype_is_float(t)) {
                double d = a->dtype.code == TE_UINT && a->dtype.bits == 64 ? (double)(uint64_t)v
                                                                           : (double)v;
                return te__float_imm(an->ctx, t, te__round_float(t, d));
            }
            if (t.code == TE_INT || t.code == TE_UINT || t.code == TE_BOOL)
                return te__int_imm(an->ctx, t, te__wrap_int(t, v));
        } else if (a->kind == TE_FLOAT_IMM) {
            double d = a->u.fval;
            if (te_dtype_is_float(t)) return te__float_imm(an->ctx, t, te__round_float(t, d));
            if (t.code == TE_BOOL) return te__int_imm(an->ctx, t, d != 0.0);
            /* float -> int truncates; out-of-range values are left alone */
            if ((t.code == TE_INT || t.code == TE_UINT) && isfinite(d) && d > -9.2e18 && d < 9.2e18) {
                int64_t lo, hi;
                int64_t iv = (int64_t)d;
                te__type_range(t, &lo, &hi);
                if (iv >= lo && iv <= hi) return te__int_imm(an->ctx, t, iv);
            }
        }
    }
    if (a == e->u.un.a) return e;
    te_expr *r = te__clone(an->ctx, e);
    if (!r) return e;
    r->u.un.a = a;
    return r;
}

te_expr *te__simp_rewrite(te_analyzer *an, te_expr *e) {
    switch (e->kind) {
    case TE_ADD:
    case TE_SUB:
    case TE_MUL:
    case TE_DIV:
    case TE_FLOORDIV:
    case TE_FLOORMOD: return simp_arith(an, e);
    case TE_MIN:
    case TE_MAX: return simp_minmax(an, e);
    case TE_EQ:
    case TE_NE:
    case TE_LT:
    case TE_LE:
    case TE_GT:
    case TE_GE: return simp_cmp(an, e);
    case TE_AND:
    case TE_OR:
    case TE_NOT: return simp_logic(an, e);
    case TE_SELECT: return simp_select(an, e);
    case TE_CAST: return simp_cast(an, e);
    case TE_RAMP: {
        te_expr *b = te__simp(an, e->u.ramp.base), *s = te__simp(an, e->u.ramp.stride);
        if (!b || !s) return e;
        if (b == e->u.ramp.base && s == e->u.ramp.stride) {
            int64_t sv;
            if (!te_is_const_int(s, &sv) || sv != 0) return e;
        }
        te_expr *r = mk_ramp(an->ctx, b, s, e->u.ramp.lanes);
        return r ? r : e;
    }
    case TE_CALL: {
        te_expr *r = te_expr_map_children(an->ctx, e, map_fn, an);
        if (!r) return e;
        int64_t v;
        if (r->u.call.op == TE_INTRIN_LIKELY && te_is_const_int(r->u.call.args[0], &v))
            return r->u.call.args[0];
        return r;
    }
    default: {
        te_expr *r = te_expr_map_children(an->ctx, e, map_fn, an);
        return r ? r : e;
    }
    }
}
