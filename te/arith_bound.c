/*
 * te/arith_bound.c — constant integer bounds by interval arithmetic
 * (the idea of TVM's ConstIntBoundAnalyzer). INT64_MIN / INT64_MAX are the
 * infinities; all arithmetic saturates. Sums are first collected into a
 * linear form, so correlated terms cancel (`x - x` is [0, 0]).
 */
#include <limits.h>

#include "te/arith_internal.h"

#define NEG_INF INT64_MIN
#define POS_INF INT64_MAX

int64_t te__sat_add(int64_t a, int64_t b) {
    if (a == NEG_INF || b == NEG_INF) return (a == POS_INF || b == POS_INF) ? 0 : NEG_INF;
    if (a == POS_INF || b == POS_INF) return POS_INF;
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return a > 0 ? POS_INF : NEG_INF;
    return r;
}

int64_t te__sat_neg(int64_t a) {
    if (a == NEG_INF) return POS_INF;
    if (a == POS_INF) return NEG_INF;
    return -a;
}

int64_t te__sat_mul(int64_t a, int64_t b) {
    if (a == 0 || b == 0) return 0;
    bool neg = (a < 0) != (b < 0);
    if (a == NEG_INF || a == POS_INF || b == NEG_INF || b == POS_INF) return neg ? NEG_INF : POS_INF;
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return neg ? NEG_INF : POS_INF;
    return r;
}

int64_t te__fdiv(int64_t a, int64_t b) {
    if (b == -1) return a == NEG_INF ? POS_INF : -a;
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

int64_t te__fmod(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

int64_t te__gcd(int64_t a, int64_t b) {
    uint64_t x = a < 0 ? (uint64_t)0 - (uint64_t)a : (uint64_t)a;
    uint64_t y = b < 0 ? (uint64_t)0 - (uint64_t)b : (uint64_t)b;
    while (y) {
        uint64_t t = x % y;
        x = y;
        y = t;
    }
    return x > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)x;
}

void te__type_range(te_dtype t, int64_t *lo, int64_t *hi) {
    *lo = NEG_INF;
    *hi = POS_INF;
    if (t.code == TE_BOOL) {
        *lo = 0;
        *hi = 1;
    } else if (t.code == TE_INT && t.bits < 64) {
        *lo = -((int64_t)1 << (t.bits - 1));
        *hi = ((int64_t)1 << (t.bits - 1)) - 1;
    } else if (t.code == TE_UINT) {
        *lo = 0;
        if (t.bits < 64) *hi = ((int64_t)1 << t.bits) - 1;
    }
}

void te__var_range(const te_analyzer *an, const te_expr *v, int64_t *lo, int64_t *hi) {
    if (an)
        for (int i = an->n - 1; i >= 0; i--)
            if (an->b[i].var == v) {
                *lo = an->b[i].lo;
                *hi = an->b[i].hi;
                return;
            }
    if (v->u.var.iter != TE_ITER_NONE && v->u.var.extent > 0) {
        *lo = 0;
        *hi = v->u.var.extent - 1;
        return;
    }
    te__type_range(v->dtype, lo, hi);
}

static void mul_bound(int64_t al, int64_t ah, int64_t bl, int64_t bh, int64_t *lo, int64_t *hi) {
    int64_t p[4] = {te__sat_mul(al, bl), te__sat_mul(al, bh), te__sat_mul(ah, bl),
                    te__sat_mul(ah, bh)};
    *lo = p[0];
    *hi = p[0];
    for (int i = 1; i < 4; i++) {
        if (p[i] < *lo) *lo = p[i];
        if (p[i] > *hi) *hi = p[i];
    }
}

/* floor(a / c) is monotone in a for a constant c > 0. */
static int64_t fdiv_sat(int64_t a, int64_t c) {
    if (a == NEG_INF || a == POS_INF) return a;
    return te__fdiv(a, c);
}

static void div_bound(const te_expr *e, int64_t al, int64_t ah, int64_t bl, int64_t bh,
                      int64_t *lo, int64_t *hi) {
    bool floor = e->kind != TE_DIV;
    if (bl == bh && bl > 0) {
        if (floor || al >= 0) {
            *lo = fdiv_sat(al, bl);
            *hi = fdiv_sat(ah, bl);
        } else {
            /* truncation rounds toward zero: the floor bound widened by one */
            *lo = al == NEG_INF ? NEG_INF : al / bl;
            *hi = ah == POS_INF ? POS_INF : ah / bl;
        }
        return;
    }
    if (bl > 0 && al >= 0) { /* positive over positive: in [0, ah] */
        *lo = 0;
        *hi = ah;
        return;
    }
    if (bl > 0) { /* |a / b| <= |a| */
        int64_t m = al == NEG_INF ? POS_INF : (ah > -al ? ah : -al);
        *lo = te__sat_neg(m);
        *hi = m;
        if (floor && *lo != NEG_INF) *lo = te__sat_add(*lo, -1);
        return;
    }
}

static void mod_bound(int64_t al, int64_t ah, int64_t bl, int64_t bh, int64_t *lo, int64_t *hi) {
    if (bl > 0) {
        if (bl == bh && al != NEG_INF && ah != POS_INF && te__fdiv(al, bl) == te__fdiv(ah, bl)) {
            *lo = te__fmod(al, bl);
            *hi = te__fmod(ah, bl);
            return;
        }
        *lo = 0;
        *hi = bh == POS_INF ? POS_INF : bh - 1;
        if (al >= 0 && ah < *hi) *hi = ah;
    } else if (bh < 0) {
        *lo = bl == NEG_INF ? NEG_INF : bl + 1;
        *hi = 0;
    }
}

void te__bound(const te_analyzer *an, const te_expr *e, int64_t *lo, int64_t *hi) {
    *lo = NEG_INF;
    *hi = POS_INF;
    if (!e) return;
    te_dtype t = te_dtype_element(e->dtype);
    if (te_dtype_is_float(t) || t.code == TE_HANDLE) return;
    int64_t al, ah, bl, bh;
    switch (e->kind) {
    case TE_INT_IMM:
        *lo = *hi = e->u.ival;
        return;
    case TE_VAR:
        te__var_range(an, e, lo, hi);
        return;
    case TE_ADD:
    case TE_SUB:
    case TE_MUL: {
        if (e->kind == TE_MUL && e->u.bin.a->kind != TE_INT_IMM && e->u.bin.b->kind != TE_INT_IMM) {
            te__bound(an, e->u.bin.a, &al, &ah);
            te__bound(an, e->u.bin.b, &bl, &bh);
            mul_bound(al, ah, bl, bh, lo, hi);
            break;
        }
        te__lin l;
        te__lin_init(&l);
        te__lin_collect(&l, (te_expr *)e, 1);
        te__lin_combine(&l);
        if (!l.overflow) te__lin_bound(an, &l, lo, hi);
        te__lin_free(&l);
        break;
    }
    case TE_DIV:
    case TE_FLOORDIV:
        te__bound(an, e->u.bin.a, &al, &ah);
        te__bound(an, e->u.bin.b, &bl, &bh);
        if (bh < 0) { /* a / b == (-a) / (-b) */
            int64_t nl = te__sat_neg(ah), nh = te__sat_neg(al);
            div_bound(e, nl, nh, te__sat_neg(bh), te__sat_neg(bl), lo, hi);
        } else {
            div_bound(e, al, ah, bl, bh, lo, hi);
        }
        break;
    case TE_FLOORMOD:
        te__bound(an, e->u.bin.a, &al, &ah);
        te__bound(an, e->u.bin.b, &bl, &bh);
        mod_bound(al, ah, bl, bh, lo, hi);
        break;
    case TE_MIN:
    case TE_MAX:
        te__bound(an, e->u.bin.a, &al, &ah);
        te__bound(an, e->u.bin.b, &bl, &bh);
        if (e->kind == TE_MIN) {
            *lo = al < bl ? al : bl;
            *hi = ah < bh ? ah : bh;
        } else {
            *lo = al > bl ? al : bl;
            *hi = ah > bh ? ah : bh;
        }
        break;
    case TE_SELECT: {
        te__bound(an, e->u.sel.cond, &al, &ah);
        if (al == ah && (al == 0 || al == 1)) {
            te__bound(an, al ? e->u.sel.t : e->u.sel.f, lo, hi);
            break;
        }
        te__bound(an, e->u.sel.t, &al, &ah);
        te__bound(an, e->u.sel.f, &bl, &bh);
        *lo = al < bl ? al : bl;
        *hi = ah > bh ? ah : bh;
        break;
    }
    case TE_CAST: {
        te_dtype st = te_dtype_element(e->u.un.a->dtype);
        if (st.code == TE_INT || st.code == TE_UINT || st.code == TE_BOOL) {
            te__bound(an, e->u.un.a, lo, hi);
            if (t.code == TE_BOOL && (*lo > 0 || *hi < 0)) *lo = *hi = 1;
        }
        break;
    }
    case TE_RAMP: {
        te__bound(an, e->u.ramp.base, &al, &ah);
        te__bound(an, e->u.ramp.stride, &bl, &bh);
        int64_t sl, sh;
        mul_bound(bl, bh, 0, e->u.ramp.lanes - 1, &sl, &sh);
        *lo = te__sat_add(al, sl);
        *hi = te__sat_add(ah, sh);
        break;
    }
    case TE_BROADCAST:
        te__bound(an, e->u.bcast.value, lo, hi);
        break;
    case TE_CALL:
        if (e->u.call.op == TE_INTRIN_LIKELY) te__bound(an, e->u.call.args[0], lo, hi);
        break;
    default:
        break;
    }
    /* Whatever the expression, it stays within its type. */
    int64_t tl, th;
    te__type_range(t, &tl, &th);
    if (*lo < tl || *lo > th) *lo = tl;
    if (*hi > th || *hi < tl) *hi = th;
    if (*lo > *hi) { /* cannot happen for sound inputs; stay safe */
        *lo = tl;
        *hi = th;
    }
}
