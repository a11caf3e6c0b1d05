/*
 * te/arith_linear.c — linear (affine) forms sum(c_i * m_i) + k over opaque
 * monomials: collection from expressions, combination of like terms,
 * bounds, the canonical term order and rebuilding as an expression.
 */
#include <stdlib.h>
#include <string.h>

#include "loom/tir.h"
#include "te/arith_internal.h"
#include "te/te_internal.h"

void te__lin_init(te__lin *l) {
    l->t = l->inl;
    l->n = 0;
    l->cap = (int)(sizeof(l->inl) / sizeof(l->inl[0]));
    l->k = 0;
    l->overflow = false;
}

void te__lin_free(te__lin *l) {
    if (l->t != l->inl) free(l->t);
    l->t = l->inl;
    l->n = 0;
}

void te__lin_add_term(te__lin *l, te_expr *m, int64_t c) {
    if (c == 0) return;
    if (l->n == l->cap) {
        int cap = l->cap * 2;
        te__term *t = malloc(sizeof(*t) * (size_t)cap);
        if (!t) {
            l->overflow = true;
            return;
        }
        memcpy(t, l->t, sizeof(*t) * (size_t)l->n);
        if (l->t != l->inl) free(l->t);
        l->t = t;
        l->cap = cap;
    }
    l->t[l->n].m = m;
    l->t[l->n].c = c;
    l->n++;
}

void te__lin_add_const(te__lin *l, int64_t k) {
    if (__builtin_add_overflow(l->k, k, &l->k)) l->overflow = true;
}

static int64_t mul_ck(te__lin *l, int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        l->overflow = true;
        return 0;
    }
    return r;
}

void te__lin_collect(te__lin *l, te_expr *e, int64_t scale) {
    if (scale == 0 || l->overflow) return;
    switch (e->kind) {
    case TE_INT_IMM:
        te__lin_add_const(l, mul_ck(l, e->u.ival, scale));
        return;
    case TE_ADD:
        te__lin_collect(l, e->u.bin.a, scale);
        te__lin_collect(l, e->u.bin.b, scale);
        return;
    case TE_SUB:
        te__lin_collect(l, e->u.bin.a, scale);
        te__lin_collect(l, e->u.bin.b, mul_ck(l, scale, -1));
        return;
    case TE_MUL:
        if (e->u.bin.b->kind == TE_INT_IMM) {
            te__lin_collect(l, e->u.bin.a, mul_ck(l, scale, e->u.bin.b->u.ival));
            return;
        }
        if (e->u.bin.a->kind == TE_INT_IMM) {
            te__lin_collect(l, e->u.bin.b, mul_ck(l, scale, e->u.bin.a->u.ival));
            return;
        }
        break;
    default:
        break;
    }
    te__lin_add_term(l, e, scale);
}

void te__lin_combine(te__lin *l) {
    int n = 0;
    for (int i = 0; i < l->n; i++) {
        int j;
        for (j = 0; j < n; j++)
            if (l->t[j].m == l->t[i].m || te_expr_equal(l->t[j].m, l->t[i].m)) break;
        if (j < n) {
            if (__builtin_add_overflow(l->t[j].c, l->t[i].c, &l->t[j].c)) l->overflow = true;
        } else {
            l->t[n++] = l->t[i];
        }
    }
    int w = 0;
    for (int i = 0; i < n; i++)
        if (l->t[i].c != 0) l->t[w++] = l->t[i];
    l->n = w;
}

void te__lin_bound(const te_analyzer *an, const te__lin *l, int64_t *lo, int64_t *hi) {
    *lo = *hi = l->k;
    for (int i = 0; i < l->n && (*lo != INT64_MIN || *hi != INT64_MAX); i++) {
        int64_t ml, mh;
        te__bound(an, l->t[i].m, &ml, &mh);
        int64_t a = te__sat_mul(ml, l->t[i].c), b = te__sat_mul(mh, l->t[i].c);
        if (a > b) {
            int64_t s = a;
            a = b;
            b = s;
        }
        *lo = te__sat_add(*lo, a);
        *hi = te__sat_add(*hi, b);
    }
}

static int cmp_i64(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

int te__expr_cmp(const te_expr *a, const te_expr *b) {
    if (a == b) return 0;
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    int c = cmp_i64(a->dtype.code, b->dtype.code);
    if (!c) c = cmp_i64(a->dtype.bits, b->dtype.bits);
    if (!c) c = cmp_i64(a->dtype.lanes, b->dtype.lanes);
    if (c) return c;
    switch (a->kind) {
    case TE_INT_IMM: return cmp_i64(a->u.ival, b->u.ival);
    case TE_FLOAT_IMM: return a->u.fval < b->u.fval ? -1 : a->u.fval > b->u.fval;
    case TE_VAR: return cmp_i64(a->u.var.id, b->u.var.id);
    case TE_NOT:
    case TE_CAST: return te__expr_cmp(a->u.un.a, b->u.un.a);
    case TE_SELECT:
        if ((c = te__expr_cmp(a->u.sel.cond, b->u.sel.cond))) return c;
        if ((c = te__expr_cmp(a->u.sel.t, b->u.sel.t))) return c;
        return te__expr_cmp(a->u.sel.f, b->u.sel.f);
    case TE_CALL:
        if ((c = cmp_i64(a->u.call.op, b->u.call.op))) return c;
        for (int i = 0; i < a->u.call.nargs && i < b->u.call.nargs; i++)
            if ((c = te__expr_cmp(a->u.call.args[i], b->u.call.args[i]))) return c;
        return cmp_i64(a->u.call.nargs, b->u.call.nargs);
    case TE_READ:
        if ((c = cmp_i64(a->u.read.tensor->id, b->u.read.tensor->id))) return c;
        for (int i = 0; i < a->u.read.ndim && i < b->u.read.ndim; i++)
            if ((c = te__expr_cmp(a->u.read.indices[i], b->u.read.indices[i]))) return c;
        return 0;
    case TE_BUFFER_LOAD:
        if ((c = cmp_i64(a->u.bload.buffer->id, b->u.bload.buffer->id))) return c;
        for (int i = 0; i < a->u.bload.ndim && i < b->u.bload.ndim; i++)
            if ((c = te__expr_cmp(a->u.bload.indices[i], b->u.bload.indices[i]))) return c;
        return 0;
    case TE_LOAD:
        if ((c = cmp_i64(a->u.load.buffer->id, b->u.load.buffer->id))) return c;
        return te__expr_cmp(a->u.load.index, b->u.load.index);
    case TE_RAMP:
        if ((c = te__expr_cmp(a->u.ramp.base, b->u.ramp.base))) return c;
        if ((c = te__expr_cmp(a->u.ramp.stride, b->u.ramp.stride))) return c;
        return cmp_i64(a->u.ramp.lanes, b->u.ramp.lanes);
    case TE_BROADCAST:
        if ((c = te__expr_cmp(a->u.bcast.value, b->u.bcast.value))) return c;
        return cmp_i64(a->u.bcast.lanes, b->u.bcast.lanes);
    case TE_REDUCE:
        return (uintptr_t)a < (uintptr_t)b ? -1 : 1;
    default: /* binary kinds */
        if ((c = te__expr_cmp(a->u.bin.a, b->u.bin.a))) return c;
        return te__expr_cmp(a->u.bin.b, b->u.bin.b);
    }
}

static int term_order(const void *pa, const void *pb) {
    const te__term *a = pa, *b = pb;
    uint64_t ua = a->c < 0 ? (uint64_t)0 - (uint64_t)a->c : (uint64_t)a->c;
    uint64_t ub = b->c < 0 ? (uint64_t)0 - (uint64_t)b->c : (uint64_t)b->c;
    if (ua != ub) return ua > ub ? -1 : 1;
    int c = te__expr_cmp(a->m, b->m);
    if (c) return c;
    return cmp_i64(b->c, a->c);
}

static te_expr *term_expr(te_ctx *ctx, te_expr *m, int64_t c, te_dtype t) {
    if (c == 1) return m;
    return te__bin(TE_MUL, t, m, te__int_imm(ctx, t, c));
}

te_expr *te__lin_build(te_ctx *ctx, te__lin *l, te_dtype t) {
    if (l->n > 1) qsort(l->t, (size_t)l->n, sizeof(te__term), term_order);
    te_expr *r = NULL;
    /* Start from the first positive term so that the sum reads a + b - c. */
    int first = -1;
    for (int i = 0; i < l->n; i++)
        if (l->t[i].c > 0) {
            first = i;
            break;
        }
    if (first < 0 && l->n > 0) first = 0;
    if (first >= 0) r = term_expr(ctx, l->t[first].m, l->t[first].c, t);
    for (int i = 0; i < l->n; i++) {
        if (i == first) continue;
        int64_t c = l->t[i].c;
        if (c > 0 || c == INT64_MIN)
            r = te__bin(TE_ADD, t, r, term_expr(ctx, l->t[i].m, c, t));
        else
            r = te__bin(TE_SUB, t, r, term_expr(ctx, l->t[i].m, -c, t));
    }
    if (!r) return te__int_imm(ctx, t, l->k);
    if (l->k > 0 || l->k == INT64_MIN)
        r = te__bin(TE_ADD, t, r, te__int_imm(ctx, t, l->k));
    else if (l->k < 0)
        r = te__bin(TE_SUB, t, r, te__int_imm(ctx, t, -l->k));
    return r;
}

bool te_affine_form(te_expr *e, int n, te_expr *const *vars, int64_t *coef, int64_t *k) {
    if (!e || n < 0 || (n > 0 && (!vars || !coef)) || !k) return false;
    te__lin l;
    te__lin_init(&l);
    te__lin_collect(&l, e, 1);
    te__lin_combine(&l);
    bool ok = !l.overflow;
    for (int i = 0; i < n; i++) coef[i] = 0;
    for (int t = 0; t < l.n && ok; t++) {
        int i = 0;
        while (i < n && l.t[t].m != vars[i]) i++;
        if (i == n) ok = false;
        else coef[i] = l.t[t].c;
    }
    *k = l.k;
    te__lin_free(&l);
    return ok;
}
