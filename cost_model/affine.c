/*
 * cost_model/affine.c — access indices as affine forms in the loop
 * variables, their value intervals, and the number of distinct elements a
 * loop nest touches through them.
 *
 * Ansor (TVM feature.cc) bounds each index dimension by an interval and
 * multiplies the widths; on flat indices that counts the gaps between the
 * rows of a tile. Here an index is c0 + sum coef_i * v_i; a loop nest then
 * touches the points of a lattice of strides |coef_i| and extents ext_i,
 * whose size is counted exactly for boxes (strides sorted, each term either
 * disjoint from the span below it or overlapping a dense span) and
 * estimated by density otherwise.
 */
#include <math.h>
#include <stdlib.h>

#include "cost_model/cm_internal.h"

static int find_loop(const te_expr *v, const cm__loop *loops, int nloops) {
    for (int l = nloops - 1; l >= 0; l--)
        if (loops[l].var == v) return l;
    return -1;
}

static void add_term(cm__affine *a, int level, int64_t coef) {
    for (int i = 0; i < a->nt; i++)
        if (a->level[i] == level) {
            a->coef[i] += coef;
            return;
        }
    if (a->nt < CM__MAX_TERMS) {
        a->level[a->nt] = level;
        a->coef[a->nt++] = coef;
    }
}

static void add_opaque(cm__affine *a, const te_expr *e, int64_t coef) {
    if (a->no < CM__MAX_OPAQUE) {
        a->op[a->no] = e;
        a->ocoef[a->no++] = coef;
    }
}

void cm__affine_add(cm__affine *a, const te_expr *e, int64_t coef, const cm__loop *loops,
                    int nloops, int lane_level) {
    if (!e || coef == 0) return;
    int64_t c;
    switch (e->kind) {
    case TE_INT_IMM: a->c0 += coef * e->u.ival; return;
    case TE_VAR: {
        int l = find_loop(e, loops, nloops);
        if (l >= 0) add_term(a, l, coef);
        /* a variable bound outside the function (none today): a constant */
        return;
    }
    case TE_ADD:
        cm__affine_add(a, e->u.bin.a, coef, loops, nloops, lane_level);
        cm__affine_add(a, e->u.bin.b, coef, loops, nloops, lane_level);
        return;
    case TE_SUB:
        cm__affine_add(a, e->u.bin.a, coef, loops, nloops, lane_level);
        cm__affine_add(a, e->u.bin.b, -coef, loops, nloops, lane_level);
        return;
    case TE_MUL:
        if (te_is_const_int(e->u.bin.b, &c)) {
            cm__affine_add(a, e->u.bin.a, coef * c, loops, nloops, lane_level);
            return;
        }
        if (te_is_const_int(e->u.bin.a, &c)) {
            cm__affine_add(a, e->u.bin.b, coef * c, loops, nloops, lane_level);
            return;
        }
        break;
    case TE_RAMP:
        cm__affine_add(a, e->u.ramp.base, coef, loops, nloops, lane_level);
        if (lane_level >= 0 && te_is_const_int(e->u.ramp.stride, &c)) {
            add_term(a, lane_level, coef * c);
            return;
        }
        if (lane_level >= 0) add_opaque(a, e->u.ramp.stride, coef); /* rough */
        return;
    case TE_BROADCAST: cm__affine_add(a, e->u.bcast.value, coef, loops, nloops, lane_level); return;
    case TE_CAST:
        if (te_dtype_is_int(e->dtype)) {
            cm__affine_add(a, e->u.un.a, coef, loops, nloops, lane_level);
            return;
        }
        break;
    default: break;
    }
    add_opaque(a, e, coef);
}

/* ---- intervals (saturating) ---- */

static int64_t sadd(int64_t x, int64_t y) {
    int64_t r;
    if (__builtin_add_overflow(x, y, &r)) return (x > 0) ? INT64_MAX : INT64_MIN;
    return r;
}
static int64_t smul(int64_t x, int64_t y) {
    int64_t r;
    if (__builtin_mul_overflow(x, y, &r)) return ((x > 0) == (y > 0)) ? INT64_MAX : INT64_MIN;
    return r;
}
static int64_t min4(int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t m = a < b ? a : b;
    m = m < c ? m : c;
    return m < d ? m : d;
}
static int64_t max4(int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t m = a > b ? a : b;
    m = m > c ? m : c;
    return m > d ? m : d;
}
static int64_t floordiv64(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

void cm__interval(const te_expr *e, const cm__loop *loops, int nloops, int lane_level, int from,
                  int64_t *lo, int64_t *hi) {
    int64_t alo, ahi, blo, bhi, c;
    *lo = *hi = 0;
    if (!e) return;
    switch (e->kind) {
    case TE_INT_IMM: *lo = *hi = e->u.ival; return;
    case TE_VAR: {
        int l = find_loop(e, loops, nloops);
        if (l >= 0) {
            *lo = loops[l].min;
            *hi = l >= from ? sadd(loops[l].min, loops[l].extent - 1) : loops[l].min;
        } else if (e->u.var.extent > 0) {
            *hi = e->u.var.extent - 1;
        }
        return;
    }
    case TE_ADD: case TE_SUB: case TE_MUL: case TE_MIN: case TE_MAX:
        cm__interval(e->u.bin.a, loops, nloops, lane_level, from, &alo, &ahi);
        cm__interval(e->u.bin.b, loops, nloops, lane_level, from, &blo, &bhi);
        switch (e->kind) {
        case TE_ADD: *lo = sadd(alo, blo), *hi = sadd(ahi, bhi); break;
        case TE_SUB: *lo = sadd(alo, -bhi), *hi = sadd(ahi, -blo); break;
        case TE_MUL:
            *lo = min4(smul(alo, blo), smul(alo, bhi), smul(ahi, blo), smul(ahi, bhi));
            *hi = max4(smul(alo, blo), smul(alo, bhi), smul(ahi, blo), smul(ahi, bhi));
            break;
        case TE_MIN: *lo = alo < blo ? alo : blo, *hi = ahi < bhi ? ahi : bhi; break;
        default: *lo = alo > blo ? alo : blo, *hi = ahi > bhi ? ahi : bhi; break;
        }
        return;
    case TE_DIV: case TE_FLOORDIV: case TE_FLOORMOD:
        cm__interval(e->u.bin.a, loops, nloops, lane_level, from, &alo, &ahi);
        if (!te_is_const_int(e->u.bin.b, &c) || c <= 0) return;
        if (e->kind == TE_FLOORMOD) {
            if (ahi - alo + 1 >= c || floordiv64(alo, c) != floordiv64(ahi, c)) *lo = 0, *hi = c - 1;
            else *lo = alo - floordiv64(alo, c) * c, *hi = ahi - floordiv64(ahi, c) * c;
        } else {
            *lo = floordiv64(alo, c), *hi = floordiv64(ahi, c);
        }
        return;
    case TE_RAMP:
        cm__interval(e->u.ramp.base, loops, nloops, lane_level, from, lo, hi);
        if (lane_level >= from && lane_level >= 0 && te_is_const_int(e->u.ramp.stride, &c)) {
            int64_t span = smul(c, e->u.ramp.lanes - 1);
            if (span > 0) *hi = sadd(*hi, span);
            else *lo = sadd(*lo, span);
        }
        return;
    case TE_BROADCAST:
        cm__interval(e->u.bcast.value, loops, nloops, lane_level, from, lo, hi);
        return;
    case TE_CAST: cm__interval(e->u.un.a, loops, nloops, lane_level, from, lo, hi); return;
    case TE_SELECT:
        cm__interval(e->u.sel.t, loops, nloops, lane_level, from, &alo, &ahi);
        cm__interval(e->u.sel.f, loops, nloops, lane_level, from, &blo, &bhi);
        *lo = alo < blo ? alo : blo, *hi = ahi > bhi ? ahi : bhi;
        return;
    default: return; /* loads and the rest: unknown, one value */
    }
}

/* ---- footprints ---- */

typedef struct { double stride, extent; } term;

void cm__footprint(const cm__affine *a, const cm__loop *loops, int nloops, int lane_level,
                   int from, double *count, double *lo, double *hi, double *contig) {
    term t[CM__MAX_TERMS + CM__MAX_OPAQUE];
    int n = 0;
    double l = (double)a->c0, h = (double)a->c0;
    for (int i = 0; i < a->nt; i++) {
        const cm__loop *lp = &loops[a->level[i]];
        double ext = a->level[i] >= from ? (double)lp->extent : 1.0;
        double c = (double)a->coef[i];
        double v0 = c * (double)lp->min, v1 = c * ((double)lp->min + ext - 1);
        l += fmin(v0, v1), h += fmax(v0, v1);
        if (ext > 1 && c != 0) t[n++] = (term){fabs(c), ext};
    }
    for (int i = 0; i < a->no; i++) {
        int64_t ilo, ihi;
        cm__interval(a->op[i], loops, nloops, lane_level, from, &ilo, &ihi);
        double c = (double)a->ocoef[i];
        double v0 = c * (double)ilo, v1 = c * (double)ihi;
        l += fmin(v0, v1), h += fmax(v0, v1);
        double ext = (double)ihi - (double)ilo + 1;
        if (ext > 1 && c != 0) t[n++] = (term){fabs(c), ext};
    }
    /* insertion sort by stride: a handful of terms */
    for (int i = 1; i < n; i++) {
        term x = t[i];
        int j = i - 1;
        while (j >= 0 && t[j].stride > x.stride) t[j + 1] = t[j], j--;
        t[j + 1] = x;
    }
    double cnt = 1, span = 1, run = 1;
    bool dense = true, prefix = true;
    for (int i = 0; i < n; i++) {
        double s = t[i].stride, e = t[i].extent;
        double nspan = span + s * (e - 1);
        if (s >= span) {
            dense = dense && s == span;
            cnt *= e;
        } else if (dense) {
            cnt = nspan;
        } else {
            double est = cnt * e, dens = nspan * (cnt / span);
            cnt = est < dens ? est : dens;
        }
        span = nspan;
        if (dense && cnt > span) cnt = span;
        if (prefix && dense) run = span;
        else prefix = false;
    }
    *count = cnt;
    if (lo) *lo = l;
    if (hi) *hi = h;
    if (contig) *contig = run;
}

int64_t cm__stride_of(const cm__affine *a, const cm__loop *loops, int level) {
    for (int i = 0; i < a->nt; i++)
        if (a->level[i] == level && a->coef[i] != 0) return llabs(a->coef[i]);
    if (loops[level].var)
        for (int i = 0; i < a->no; i++)
            if (te_expr_uses_var(a->op[i], loops[level].var)) {
                int64_t c = llabs(a->ocoef[i]);
                return c ? c : 1;
            }
    return 0;
}

uint64_t cm__rand(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
