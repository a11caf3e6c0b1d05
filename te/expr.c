/*
 * te/expr.c — immediates, variables and the arithmetic, comparison, logic,
 * select and cast builders, with their type rules.
 *
 * Type rule: both operands of a binary op have one dtype, except that an
 * immediate (or a BROADCAST of one) adopts the other operand's type; a
 * scalar immediate next to a vector operand is broadcast to its lanes.
 * Two immediates fold to an immediate, with the target's semantics: C
 * truncation for integer DIV, floor semantics for FLOORDIV/FLOORMOD,
 * two's-complement wrap-around at the type's width. Everything beyond
 * that (x + 0, reassociation) is the analyser's job, so builders stay
 * cheap and build exactly what they are asked.
 */
#include <float.h>
#include <math.h>

#include "te/te_internal.h"

const char *te__op_name(te_expr_kind k) {
    switch (k) {
    case TE_ADD: return "add";
    case TE_SUB: return "sub";
    case TE_MUL: return "mul";
    case TE_DIV: return "div";
    case TE_FLOORDIV: return "floordiv";
    case TE_FLOORMOD: return "floormod";
    case TE_MIN: return "min";
    case TE_MAX: return "max";
    case TE_EQ: return "eq";
    case TE_NE: return "ne";
    case TE_LT: return "lt";
    case TE_LE: return "le";
    case TE_GT: return "gt";
    case TE_GE: return "ge";
    case TE_AND: return "and";
    case TE_OR: return "or";
    case TE_NOT: return "not";
    case TE_SELECT: return "select";
    case TE_CAST: return "cast";
    default: return te_expr_kind_name(k);
    }
}

/* ---- value conversions ---- */

int64_t te__wrap_int(te_dtype t, int64_t v) {
    if (t.code == TE_BOOL) return v != 0;
    int bits = t.bits;
    if (bits >= 64 || bits == 0) return v;
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    uint64_t u = (uint64_t)v & mask;
    if (t.code == TE_INT && ((u >> (bits - 1)) & 1)) u |= ~mask;
    return (int64_t)u;
}

/* v rounded to nearest-even in a binary format with `mant` fraction bits,
 * normal exponents down to `emin` (gradual underflow below) and largest
 * finite value `maxv`; beyond maxv after rounding: infinity. Rounding the
 * double directly (not through float) avoids double rounding. */
static double round_binary(double v, int mant, int emin, double maxv) {
    if (v != v || v == 0 || isinf(v)) return v;
    int ex;
    (void)frexp(v, &ex); /* |v| = m * 2^ex, m in [0.5, 1) */
    int e = ex - 1;
    if (e < emin) e = emin;
    double ulp = ldexp(1.0, e - mant);
    /* nearbyint honours the default round-to-nearest-even mode */
    double r = nearbyint(v / ulp) * ulp;
    if (r > maxv) return INFINITY;
    if (r < -maxv) return -INFINITY;
    return r;
}

double te__round_float(te_dtype t, double v) {
    if (t.code == TE_BFLOAT) return round_binary(v, 7, -126, 0x1.fep127);
    if (t.bits == 16) return round_binary(v, 10, -14, 65504.0);
    if (t.bits == 32) {
        if (v > FLT_MAX) return INFINITY;
        if (v < -FLT_MAX) return -INFINITY;
        return (double)(float)v;
    }
    return v;
}

double te_dtype_round(te_dtype t, double v) {
    return te_dtype_is_float(t) ? te__round_float(t, v) : v;
}

/* Float to integer type t: truncation toward zero, saturating (NaN: 0),
 * then wrapped to t's width. */
static int64_t float_to_int(te_dtype t, double v) {
    if (t.code == TE_BOOL) return v != 0;
    if (v != v) return 0;
    if (t.code == TE_UINT && t.bits == 64) {
        if (v <= 0) return 0;
        if (v >= 18446744073709551616.0) return -1; /* UINT64_MAX's bits */
        return (int64_t)(uint64_t)v;
    }
    int64_t i;
    if (v >= 9223372036854775807.0) i = INT64_MAX;
    else if (v <= -9223372036854775808.0) i = INT64_MIN;
    else i = (int64_t)v;
    return te__wrap_int(t, i);
}

/* An integer immediate's value as a double, honouring unsigned types. */
static double int_to_float(te_dtype src, int64_t v) {
    if (src.code == TE_UINT) return (double)(uint64_t)v;
    return (double)v;
}

/* ---- immediates ---- */

te_expr *te__int_imm(te_ctx *ctx, te_dtype t, int64_t v) {
    te_expr *e = te__node(ctx, TE_INT_IMM, t);
    if (e) e->u.ival = v;
    return e;
}

te_expr *te__float_imm(te_ctx *ctx, te_dtype t, double v) {
    te_expr *e = te__node(ctx, TE_FLOAT_IMM, t);
    if (e) e->u.fval = v;
    return e;
}

te_expr *te__broadcast(te_expr *value, int lanes) {
    if (!value) return NULL;
    te_expr *e = te__node(value->ctx, TE_BROADCAST, te_dtype_with_lanes(value->dtype, lanes));
    if (!e) return NULL;
    e->u.bcast.value = value;
    e->u.bcast.lanes = lanes;
    return e;
}

te_expr *te__bin(te_expr_kind kind, te_dtype t, te_expr *a, te_expr *b) {
    if (!a || !b) return NULL;
    te_expr *e = te__node(a->ctx, kind, t);
    if (!e) return NULL;
    e->u.bin.a = a;
    e->u.bin.b = b;
    return e;
}

/* A scalar immediate of element type et from an integer or float value. */
static te_expr *scalar_const(te_ctx *ctx, te_dtype et, bool is_float, int64_t iv, double fv,
                             te_dtype src) {
    if (te_dtype_is_float(et))
        return te__float_imm(ctx, et, te__round_float(et, is_float ? fv : int_to_float(src, iv)));
    return te__int_imm(ctx, et, is_float ? float_to_int(et, fv) : te__wrap_int(et, iv));
}

static te_expr *make_const(te_ctx *ctx, const char *who, te_dtype t, bool is_float, int64_t iv,
                           double fv, te_dtype src) {
    if (!ctx) return NULL;
    if (t.code == TE_HANDLE || t.code > TE_BFLOAT || t.lanes < 1) {
        te_error(ctx, "%s: cannot make an immediate of type %s", who, te_dtype_str(t));
        return NULL;
    }
    te_expr *s = scalar_const(ctx, te_dtype_element(t), is_float, iv, fv, src);
    return t.lanes > 1 ? te__broadcast(s, t.lanes) : s;
}

te_expr *te_int(te_ctx *ctx, int64_t v) {
    return ctx ? te__int_imm(ctx, TE_INT64, v) : NULL;
}

te_expr *te_int_t(te_ctx *ctx, te_dtype t, int64_t v) {
    return make_const(ctx, "te_int_t", t, false, v, 0, TE_INT64);
}

te_expr *te_float(te_ctx *ctx, double v) {
    return ctx ? te__float_imm(ctx, TE_FLOAT32, te__round_float(TE_FLOAT32, v)) : NULL;
}

te_expr *te_float_t(te_ctx *ctx, te_dtype t, double v) {
    return make_const(ctx, "te_float_t", t, true, 0, v, TE_FLOAT64);
}

te_expr *te_bool(te_ctx *ctx, bool v) {
    return ctx ? te__int_imm(ctx, TE_BOOL1, v ? 1 : 0) : NULL;
}

te_expr *te_const(te_ctx *ctx, te_dtype t, double v) {
    return make_const(ctx, "te_const", t, true, 0, v, TE_FLOAT64);
}

/* ---- variables ---- */

static te_expr *make_var(te_ctx *ctx, const char *who, const char *name, te_dtype t,
                         te_iter_type it, int64_t extent) {
    if (!ctx) return NULL;
    if (!name) {
        te_error(ctx, "%s: name is NULL", who);
        return NULL;
    }
    if (it != TE_ITER_NONE && extent <= 0) {
        te_error(ctx, "%s '%s': extent %lld must be positive", who, name, (long long)extent);
        return NULL;
    }
    if (extent < 0) {
        te_error(ctx, "%s '%s': extent %lld must not be negative", who, name, (long long)extent);
        return NULL;
    }
    te_expr *e = te__node(ctx, TE_VAR, t);
    if (!e) return NULL;
    e->u.var.name = te_strdup(ctx, name);
    if (!e->u.var.name) return NULL;
    e->u.var.id = ctx->next_id++;
    e->u.var.iter = it;
    e->u.var.extent = extent;
    return e;
}

te_expr *te_var(te_ctx *ctx, const char *name, te_dtype t) {
    return make_var(ctx, "var", name, t, TE_ITER_NONE, 0);
}

te_expr *te_axis(te_ctx *ctx, const char *name, int64_t extent) {
    return make_var(ctx, "axis", name, TE_INT64, TE_ITER_DATA_PAR, extent);
}

te_expr *te_reduce_axis(te_ctx *ctx, const char *name, int64_t extent) {
    return make_var(ctx, "reduce axis", name, TE_INT64, TE_ITER_REDUCE, extent);
}

te_expr *te_iter_var(te_ctx *ctx, const char *name, te_iter_type it, int64_t extent) {
    if (ctx && (it < TE_ITER_NONE || it > TE_ITER_REDUCE)) {
        te_error(ctx, "iter var '%s': unknown iteration type %d", name ? name : "?", (int)it);
        return NULL;
    }
    return make_var(ctx, "iter var", name, TE_INT64, it, extent);
}

/* ---- operand unification ---- */

bool te__is_imm_like(const te_expr *e) {
    if (te__is_imm(e)) return e->dtype.lanes == 1;
    return e->kind == TE_BROADCAST && te__is_imm(e->u.bcast.value);
}

/* e (imm-like) converted to type t, or NULL when that is not a lossless
 * kind of conversion: int -> int/float, float -> float, bool -> bool. */
static te_expr *convert_imm(te_expr *e, te_dtype t) {
    te_expr *s = e->kind == TE_BROADCAST ? e->u.bcast.value : e;
    int elanes = e->dtype.lanes;
    if (elanes != 1 && elanes != t.lanes) return NULL;
    te_dtype et = te_dtype_element(t), st = s->dtype;
    te_expr *c;
    if (st.code == TE_BOOL) {
        if (et.code != TE_BOOL) return NULL;
        c = s;
    } else if (st.code == TE_INT || st.code == TE_UINT) {
        if (te_dtype_is_float(et)) c = te__float_imm(e->ctx, et, te__round_float(et, int_to_float(st, s->u.ival)));
        else if (et.code == TE_INT || et.code == TE_UINT) c = te__int_imm(e->ctx, et, te__wrap_int(et, s->u.ival));
        else return NULL;
    } else if (te_dtype_is_float(st)) {
        if (!te_dtype_is_float(et)) return NULL;
        c = te__float_imm(e->ctx, et, te__round_float(et, s->u.fval));
    } else {
        return NULL;
    }
    if (!c) return NULL;
    return t.lanes > 1 ? te__broadcast(c, t.lanes) : c;
}

/* Which of two immediates' types wins: float over int, then more bits,
 * then more lanes. */
static int type_rank(te_dtype t) {
    int cls = te_dtype_is_float(t) ? 2 : t.code == TE_BOOL ? 0 : 1;
    return cls * 1000000 + t.bits * 1000 + t.lanes;
}

/* Brings *pa and *pb to one dtype or records "<op>: operand types X and
 * Y differ". */
int te__unify(const char *op, te_expr **pa, te_expr **pb) {
    te_expr *a = *pa, *b = *pb, *c;
    if (te_dtype_eq(a->dtype, b->dtype)) return 0;
    bool ia = te__is_imm_like(a), ib = te__is_imm_like(b);
    if (ia && ib) {
        bool a_wins = type_rank(a->dtype) >= type_rank(b->dtype);
        if (a_wins && (c = convert_imm(b, a->dtype))) { *pb = c; return 0; }
        if ((c = convert_imm(a, b->dtype))) { *pa = c; return 0; }
        if (!a_wins && (c = convert_imm(b, a->dtype))) { *pb = c; return 0; }
    } else if (ib && (c = convert_imm(b, a->dtype))) {
        *pb = c;
        return 0;
    } else if (ia && (c = convert_imm(a, b->dtype))) {
        *pa = c;
        return 0;
    }
    return te_error(a->ctx, "%s: operand types %s and %s differ", op, te_dtype_str(a->dtype),
                    te_dtype_str(b->dtype));
}

static bool is_number(te_dtype t) {
    return t.code == TE_INT || t.code == TE_UINT || te_dtype_is_float(t);
}

static bool is_zero_imm(const te_expr *e) {
    if (e->kind == TE_BROADCAST) e = e->u.bcast.value;
    if (e->kind == TE_INT_IMM) return e->u.ival == 0;
    if (e->kind == TE_FLOAT_IMM) return e->u.fval == 0;
    return false;
}

/* ---- folding ---- */

static bool is_cmp(te_expr_kind k) { return k >= TE_EQ && k <= TE_GE; }

bool te__fold_int(te_expr_kind kind, te_dtype t, int64_t a, int64_t b, int64_t *out) {
    bool uns = t.code == TE_UINT;
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int64_t r;
    switch (kind) {
    case TE_ADD: r = (int64_t)(ua + ub); break;
    case TE_SUB: r = (int64_t)(ua - ub); break;
    case TE_MUL: r = (int64_t)(ua * ub); break;
    case TE_DIV:
        if (b == 0) return false;
        if (uns) r = (int64_t)(ua / ub);
        else if (b == -1) r = (int64_t)(0 - ua);
        else r = a / b;
        break;
    case TE_FLOORDIV:
        if (b == 0) return false;
        if (uns) r = (int64_t)(ua / ub);
        else if (b == -1) r = (int64_t)(0 - ua);
        else {
            r = a / b;
            if (a % b != 0 && ((a < 0) != (b < 0))) r--;
        }
        break;
    case TE_FLOORMOD:
        if (b == 0) return false;
        if (uns) r = (int64_t)(ua % ub);
        else if (b == -1) r = 0;
        else {
            r = a % b;
            if (r != 0 && ((r < 0) != (b < 0))) r += b;
        }
        break;
    case TE_MIN: r = uns ? (ua < ub ? a : b) : (a < b ? a : b); break;
    case TE_MAX: r = uns ? (ua > ub ? a : b) : (a > b ? a : b); break;
    case TE_EQ: *out = a == b; return true;
    case TE_NE: *out = a != b; return true;
    case TE_LT: *out = uns ? ua < ub : a < b; return true;
    case TE_LE: *out = uns ? ua <= ub : a <= b; return true;
    case TE_GT: *out = uns ? ua > ub : a > b; return true;
    case TE_GE: *out = uns ? ua >= ub : a >= b; return true;
    case TE_AND: *out = a && b; return true;
    case TE_OR: *out = a || b; return true;
    default: return false;
    }
    *out = te__wrap_int(t, r);
    return true;
}

bool te__fold_float(te_expr_kind kind, te_dtype t, double a, double b, double *out,
                    bool *is_bool, bool *bout) {
    *is_bool = false;
    double r;
    switch (kind) {
    case TE_ADD: r = a + b; break;
    case TE_SUB: r = a - b; break;
    case TE_MUL: r = a * b; break;
    case TE_DIV: r = a / b; break;
    case TE_MIN: r = a < b ? a : b; break;
    case TE_MAX: r = a > b ? a : b; break;
    case TE_EQ: *is_bool = true; *bout = a == b; return true;
    case TE_NE: *is_bool = true; *bout = a != b; return true;
    case TE_LT: *is_bool = true; *bout = a < b; return true;
    case TE_LE: *is_bool = true; *bout = a <= b; return true;
    case TE_GT: *is_bool = true; *bout = a > b; return true;
    case TE_GE: *is_bool = true; *bout = a >= b; return true;
    default: return false;
    }
    *out = te__round_float(t, r);
    return true;
}

/* Folds two scalar immediates of one type; NULL when not foldable. */
static te_expr *fold_scalar(te_expr_kind k, te_expr *a, te_expr *b) {
    te_ctx *ctx = a->ctx;
    te_dtype t = a->dtype;
    if (a->kind == TE_FLOAT_IMM && b->kind == TE_FLOAT_IMM) {
        double r;
        bool isb, bv;
        if (!te__fold_float(k, t, a->u.fval, b->u.fval, &r, &isb, &bv)) return NULL;
        return isb ? te__int_imm(ctx, TE_BOOL1, bv) : te__float_imm(ctx, t, r);
    }
    if (a->kind == TE_INT_IMM && b->kind == TE_INT_IMM) {
        int64_t r;
        if (!te__fold_int(k, t, a->u.ival, b->u.ival, &r)) return NULL;
        return te__int_imm(ctx, is_cmp(k) ? TE_BOOL1 : t, r);
    }
    return NULL;
}

/* The shared body of every binary builder. */
static te_expr *binary(te_expr_kind k, te_expr *a, te_expr *b) {
    if (!a || !b) return NULL;
    te_ctx *ctx = a->ctx;
    const char *op = te__op_name(k);
    if (te__unify(op, &a, &b)) return NULL;
    te_dtype t = a->dtype;
    switch (k) {
    case TE_FLOORDIV:
    case TE_FLOORMOD:
        if (!te_dtype_is_int(t)) {
            te_error(ctx, "%s: operand type %s is not an integer type", op, te_dtype_str(t));
            return NULL;
        }
        break;
    case TE_AND:
    case TE_OR:
        if (t.code != TE_BOOL) {
            te_error(ctx, "%s: operand type %s is not bool", op, te_dtype_str(t));
            return NULL;
        }
        break;
    case TE_EQ:
    case TE_NE:
        break;
    default:
        if (!is_number(t)) {
            te_error(ctx, "%s: operand type %s is not a number", op, te_dtype_str(t));
            return NULL;
        }
        break;
    }
    if ((k == TE_DIV || k == TE_FLOORDIV || k == TE_FLOORMOD) && is_zero_imm(b)) {
        te_error(ctx, "%s: division by an immediate zero", op);
        return NULL;
    }
    if (te__is_imm(a) && te__is_imm(b)) {
        te_expr *r = fold_scalar(k, a, b);
        if (r) return r;
    } else if (a->kind == TE_BROADCAST && b->kind == TE_BROADCAST && te__is_imm(a->u.bcast.value) &&
               te__is_imm(b->u.bcast.value)) {
        te_expr *r = fold_scalar(k, a->u.bcast.value, b->u.bcast.value);
        if (r) return te__broadcast(r, t.lanes);
    }
    te_dtype rt = is_cmp(k) ? te_dtype_with_lanes(TE_BOOL1, t.lanes) : t;
    return te__bin(k, rt, a, b);
}

te_expr *te_add(te_expr *a, te_expr *b) { return binary(TE_ADD, a, b); }
te_expr *te_sub(te_expr *a, te_expr *b) { return binary(TE_SUB, a, b); }
te_expr *te_mul(te_expr *a, te_expr *b) { return binary(TE_MUL, a, b); }
te_expr *te_div(te_expr *a, te_expr *b) { return binary(TE_DIV, a, b); }
te_expr *te_floordiv(te_expr *a, te_expr *b) { return binary(TE_FLOORDIV, a, b); }
te_expr *te_floormod(te_expr *a, te_expr *b) { return binary(TE_FLOORMOD, a, b); }
te_expr *te_min(te_expr *a, te_expr *b) { return binary(TE_MIN, a, b); }
te_expr *te_max(te_expr *a, te_expr *b) { return binary(TE_MAX, a, b); }
te_expr *te_eq(te_expr *a, te_expr *b) { return binary(TE_EQ, a, b); }
te_expr *te_ne(te_expr *a, te_expr *b) { return binary(TE_NE, a, b); }
te_expr *te_lt(te_expr *a, te_expr *b) { return binary(TE_LT, a, b); }
te_expr *te_le(te_expr *a, te_expr *b) { return binary(TE_LE, a, b); }
te_expr *te_gt(te_expr *a, te_expr *b) { return binary(TE_GT, a, b); }
te_expr *te_ge(te_expr *a, te_expr *b) { return binary(TE_GE, a, b); }
te_expr *te_and(te_expr *a, te_expr *b) { return binary(TE_AND, a, b); }
te_expr *te_or(te_expr *a, te_expr *b) { return binary(TE_OR, a, b); }

te_expr *te_not(te_expr *a) {
    if (!a) return NULL;
    if (a->dtype.code != TE_BOOL) {
        te_error(a->ctx, "not: operand type %s is not bool", te_dtype_str(a->dtype));
        return NULL;
    }
    if (a->kind == TE_INT_IMM) return te__int_imm(a->ctx, a->dtype, !a->u.ival);
    te_expr *e = te__node(a->ctx, TE_NOT, a->dtype);
    if (e) e->u.un.a = a;
    return e;
}

te_expr *te_select(te_expr *cond, te_expr *t, te_expr *f) {
    if (!cond || !t || !f) return NULL;
    te_ctx *ctx = cond->ctx;
    if (cond->dtype.code != TE_BOOL) {
        te_error(ctx, "select: condition type %s is not bool", te_dtype_str(cond->dtype));
        return NULL;
    }
    /* Immediate values next to a vector condition take its lanes. */
    int cl = cond->dtype.lanes;
    if (cl > 1 && t->dtype.lanes == 1 && f->dtype.lanes == 1 && te__is_imm_like(t) &&
        te__is_imm_like(f)) {
        t = te__broadcast(t, cl);
        f = te__broadcast(f, cl);
        if (!t || !f) return NULL;
    }
    if (te__unify("select", &t, &f)) return NULL;
    if (cl != 1 && cl != t->dtype.lanes) {
        te_error(ctx, "select: condition type %s does not match value type %s",
                 te_dtype_str(cond->dtype), te_dtype_str(t->dtype));
        return NULL;
    }
    if (cond->kind == TE_INT_IMM) return cond->u.ival ? t : f;
    te_expr *e = te__node(ctx, TE_SELECT, t->dtype);
    if (!e) return NULL;
    e->u.sel.cond = cond;
    e->u.sel.t = t;
    e->u.sel.f = f;
    return e;
}

te_expr *te_cast(te_dtype t, te_expr *a) {
    if (!a) return NULL;
    te_ctx *ctx = a->ctx;
    if (te_dtype_eq(t, a->dtype)) return a;
    if (t.code > TE_BFLOAT || t.lanes < 1 || (t.code == TE_BFLOAT && t.bits != 16)) {
        te_error(ctx, "cast: unknown target type %s", te_dtype_str(t));
        return NULL;
    }
    if (t.lanes != a->dtype.lanes) {
        if (a->dtype.lanes != 1) {
            te_error(ctx, "cast: cannot convert %s to %s (lane counts differ)",
                     te_dtype_str(a->dtype), te_dtype_str(t));
            return NULL;
        }
        return te__broadcast(te_cast(te_dtype_element(t), a), t.lanes);
    }
    if (t.code != TE_HANDLE && a->dtype.code != TE_HANDLE) {
        if (a->kind == TE_INT_IMM)
            return scalar_const(ctx, t, false, a->u.ival, 0, a->dtype);
        if (a->kind == TE_FLOAT_IMM) return scalar_const(ctx, t, true, 0, a->u.fval, a->dtype);
        if (a->kind == TE_BROADCAST && te__is_imm(a->u.bcast.value))
            return te__broadcast(te_cast(te_dtype_element(t), a->u.bcast.value), t.lanes);
    }
    te_expr *e = te__node(ctx, TE_CAST, t);
    if (e) e->u.un.a = a;
    return e;
}
