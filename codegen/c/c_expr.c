/*
 * codegen/c/c_expr.c — expressions as C. Vectors have no C type here: a
 * vector expression is printed one lane at a time inside the lane loop
 * that c_stmt.c wraps around a vector store, so RAMP(b, s, L) prints as
 * (b + s*lane), BROADCAST(x) as x and everything else lanewise.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c/c_internal.h"

static void put(cg_c_emitter *em, const char *s) { te_str_append(em->out, s); }

/* Element type of e as C, or a failure naming the type. */
const char *cg_c_type_em(cg_c_emitter *em, te_dtype t) {
    if (em->half_types && te_dtype_is_half(t)) {
        bool bf = t.code == TE_BFLOAT;
        em->uses_half |= bf ? 2u : 1u;
        return bf ? "__nv_bfloat16" : "__half";
    }
    return cg_c_type(t);
}

static const char *elem_type(cg_c_emitter *em, te_dtype t) {
    const char *c = cg_c_type_em(em, te_dtype_element(t));
    if (!c) {
        cg_c_fail(em, "type %s in function '%s' has no C equivalent", te_dtype_str(t), em->func);
        return "int";
    }
    return c;
}

static void print_int(cg_c_emitter *em, const te_expr *e) {
    int64_t v = e->u.ival;
    te_dtype t = e->dtype;
    char buf[64];
    if (t.code == TE_BOOL) {
        put(em, v ? "true" : "false");
        return;
    }
    if (t.code == TE_UINT) {
        snprintf(buf, sizeof buf, "((%s)%" PRIu64 "ull)", elem_type(em, t), (uint64_t)v);
    } else if (v == INT64_MIN) {
        snprintf(buf, sizeof buf, "((%s)(-9223372036854775807ll - 1))", elem_type(em, t));
    } else if (t.bits == 64) {
        /* Small values stay plain ints: C converts them exactly, and the
         * source reads like the loop program. */
        if (v >= INT32_MIN && v <= INT32_MAX)
            snprintf(buf, sizeof buf, v < 0 ? "(%" PRId64 ")" : "%" PRId64, v);
        else
            snprintf(buf, sizeof buf, "(%" PRId64 "ll)", v);
    } else if (t.bits == 32) {
        snprintf(buf, sizeof buf, v < 0 ? "(%" PRId64 ")" : "%" PRId64, v);
    } else {
        snprintf(buf, sizeof buf, "((%s)%" PRId64 ")", elem_type(em, t), v);
    }
    put(em, buf);
}

/* Exact float literals: the shortest decimal that reads back to the same
 * value, else a hex float. */
static void print_float(cg_c_emitter *em, const te_expr *e) {
    if (em->half_types && te_dtype_is_half(e->dtype)) {
        /* the value is exact in float32: converting it back is exact too */
        bool bf = e->dtype.code == TE_BFLOAT;
        te_str_printf(em->out, "%s(", bf ? "__float2bfloat16_rn" : "__float2half_rn");
        te_expr f = *e;
        f.dtype = TE_FLOAT32;
        print_float(em, &f);
        put(em, ")");
        (void)elem_type(em, e->dtype);
        return;
    }
    double v = e->u.fval;
    bool f32 = e->dtype.bits == 32;
    char buf[64];
    if (isnan(v)) {
        put(em, f32 ? "NAN" : "((double)NAN)");
        return;
    }
    if (isinf(v)) {
        put(em, v > 0 ? (f32 ? "INFINITY" : "((double)INFINITY)")
                      : (f32 ? "(-INFINITY)" : "(-(double)INFINITY)"));
        return;
    }
    if (f32) {
        float fv = (float)v;
        snprintf(buf, sizeof buf, "%.9g", (double)fv);
        if (strtof(buf, NULL) != fv) snprintf(buf, sizeof buf, "%a", (double)fv);
    } else {
        snprintf(buf, sizeof buf, "%.17g", v);
        if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%a", v);
    }
    if (!strpbrk(buf, ".eEpxn")) strcat(buf, ".0");
    if (f32) strcat(buf, "f");
    bool neg = buf[0] == '-';
    if (neg) put(em, "(");
    put(em, buf);
    if (neg) put(em, ")");
}

static const char *binop_token(te_expr_kind k) {
    switch (k) {
    case TE_ADD: return " + ";
    case TE_SUB: return " - ";
    case TE_MUL: return " * ";
    case TE_DIV: return " / ";
    case TE_EQ: return " == ";
    case TE_NE: return " != ";
    case TE_LT: return " < ";
    case TE_LE: return " <= ";
    case TE_GT: return " > ";
    case TE_GE: return " >= ";
    case TE_AND: return " && ";
    case TE_OR: return " || ";
    default: return NULL;
    }
}

/* Helper-name suffix of a scalar type: "f32", "i64", "u8", "b". */
static const char *suffix(te_dtype t) {
    switch (t.code) {
    case TE_FLOAT: return t.bits == 32 ? "f32" : "f64";
    case TE_INT:
        return t.bits == 8 ? "i8" : t.bits == 16 ? "i16" : t.bits == 32 ? "i32" : "i64";
    case TE_UINT:
        return t.bits == 8 ? "u8" : t.bits == 16 ? "u16" : t.bits == 32 ? "u32" : "u64";
    default: return "b";
    }
}

/* True when a >= 0 is provable and b is a positive immediate: then C's
 * truncating / and % already have floor semantics. */
static bool cheap_floor(cg_c_emitter *em, const te_expr *a, const te_expr *b) {
    if (b->kind != TE_INT_IMM || b->u.ival <= 0 || a->dtype.lanes != 1) return false;
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    te_analyzer_const_bound(em->an, a, &lo, &hi);
    return lo >= 0;
}

static void print_floor_op(cg_c_emitter *em, const te_expr *e) {
    const te_expr *a = e->u.bin.a, *b = e->u.bin.b;
    bool div = e->kind == TE_FLOORDIV;
    te_dtype t = te_dtype_element(e->dtype);
    if (t.code == TE_FLOAT) {
        put(em, div ? (t.bits == 32 ? "floorf(" : "floor(") : (t.bits == 32 ? "loom_fmod_floor_f32(" : "loom_fmod_floor_f64("));
        cg_c_expr(em, a);
        put(em, div ? " / " : ", ");
        cg_c_expr(em, b);
        put(em, ")");
        return;
    }
    if (t.code == TE_UINT || cheap_floor(em, a, b)) {
        put(em, "(");
        cg_c_expr(em, a);
        put(em, div ? " / " : " % ");
        cg_c_expr(em, b);
        put(em, ")");
        return;
    }
    bool narrow = t.bits != 64;
    if (narrow) te_str_printf(em->out, "((%s)", elem_type(em, t));
    put(em, div ? "loom_floordiv_i64(" : "loom_floormod_i64(");
    cg_c_expr(em, a);
    put(em, ", ");
    cg_c_expr(em, b);
    put(em, ")");
    if (narrow) put(em, ")");
}

static void print_call(cg_c_emitter *em, const te_expr *e) {
    te_intrin op = e->u.call.op;
    if (op == TE_INTRIN_LIKELY) { /* a hint only */
        put(em, "(");
        cg_c_expr(em, e->u.call.args[0]);
        put(em, ")");
        return;
    }
    te_dtype t = te_dtype_element(e->dtype);
    if (t.code != TE_FLOAT || (t.bits != 32 && t.bits != 64)) {
        cg_c_fail(em, "intrinsic %s on type %s in function '%s': only float32 and float64 are "
                      "supported",
                  te_intrin_name(op), te_dtype_str(e->dtype), em->func);
        return;
    }
    bool f = t.bits == 32;
    const char *name = NULL;
    switch (op) {
    case TE_INTRIN_EXP: name = f ? "expf" : "exp"; break;
    case TE_INTRIN_LOG: name = f ? "logf" : "log"; break;
    case TE_INTRIN_SQRT: name = f ? "sqrtf" : "sqrt"; break;
    case TE_INTRIN_TANH: name = f ? "tanhf" : "tanh"; break;
    case TE_INTRIN_FABS: name = f ? "fabsf" : "fabs"; break;
    case TE_INTRIN_POW: name = f ? "powf" : "pow"; break;
    case TE_INTRIN_SIGMOID: name = f ? "loom_sigmoid_f32" : "loom_sigmoid_f64"; break;
    case TE_INTRIN_ERF: name = f ? "erff" : "erf"; break;
    case TE_INTRIN_FLOOR: name = f ? "floorf" : "floor"; break;
    case TE_INTRIN_CEIL: name = f ? "ceilf" : "ceil"; break;
    /* rint rounds ties to even in the default rounding mode, which
     * generated code never changes. */
    case TE_INTRIN_RINT: name = f ? "rintf" : "rint"; break;
    case TE_INTRIN_FMOD: name = f ? "fmodf" : "fmod"; break;
    case TE_INTRIN_SIN: name = f ? "sinf" : "sin"; break;
    case TE_INTRIN_COS: name = f ? "cosf" : "cos"; break;
    case TE_INTRIN_TAN: name = f ? "tanf" : "tan"; break;
    case TE_INTRIN_ASIN: name = f ? "asinf" : "asin"; break;
    case TE_INTRIN_ACOS: name = f ? "acosf" : "acos"; break;
    case TE_INTRIN_ATAN: name = f ? "atanf" : "atan"; break;
    case TE_INTRIN_SINH: name = f ? "sinhf" : "sinh"; break;
    case TE_INTRIN_COSH: name = f ? "coshf" : "cosh"; break;
    case TE_INTRIN_ASINH: name = f ? "asinhf" : "asinh"; break;
    case TE_INTRIN_ACOSH: name = f ? "acoshf" : "acosh"; break;
    case TE_INTRIN_ATANH: name = f ? "atanhf" : "atanh"; break;
    default:
        cg_c_fail(em, "intrinsic %d in function '%s' is unknown to the c target", (int)op, em->func);
        return;
    }
    put(em, name);
    put(em, "(");
    for (int i = 0; i < e->u.call.nargs; ++i) {
        if (i) put(em, ", ");
        cg_c_expr(em, e->u.call.args[i]);
    }
    put(em, ")");
}

void cg_c_index(cg_c_emitter *em, const tir_buffer *b, const te_expr *idx) {
    if (!b->swizzle) {
        cg_c_expr(em, idx);
        return;
    }
    int bytes = te_dtype_bytes(b->dtype), lg = 0;
    while ((1 << lg) < bytes) lg++;
    te_str_printf(em->out, "loom_swz<%d>(", lg);
    cg_c_expr(em, idx);
    te_str_append(em->out, ")");
}

static void print_load(cg_c_emitter *em, const te_expr *e) {
    const tir_buffer *b = e->u.load.buffer;
    const char *name = cg_c_buffer_name(em, b);
    const te_expr *pred = e->u.load.predicate;
    if (pred) {
        put(em, "(");
        cg_c_expr(em, pred);
        put(em, " ? ");
    }
    te_str_printf(em->out, "%s[", name);
    cg_c_index(em, b, e->u.load.index);
    put(em, "]");
    if (pred) te_str_printf(em->out, " : (%s)0)", elem_type(em, b->dtype));
}

/* A conversion to or from a 16-bit float through float32 and CUDA's
 * intrinsics (round to nearest even; legalize_half leaves only
 * float32 <-> 16-bit, the rest composes). */
static void print_half_cast(cg_c_emitter *em, te_dtype to, te_dtype from, const te_expr *a) {
    if (te_dtype_is_half(from) && te_dtype_is_half(to) && from.code == to.code) {
        cg_c_expr(em, a);
        return;
    }
    int close = 0;
    if (te_dtype_is_half(to)) {
        te_str_printf(em->out, "%s(", to.code == TE_BFLOAT ? "__float2bfloat16_rn" : "__float2half_rn");
        (void)elem_type(em, to);
        close++;
    } else if (!te_dtype_eq(to, TE_FLOAT32)) {
        te_str_printf(em->out, "((%s)", elem_type(em, to));
        close++;
    }
    if (te_dtype_is_half(from)) {
        te_str_printf(em->out, "%s(", from.code == TE_BFLOAT ? "__bfloat162float" : "__half2float");
        (void)elem_type(em, from);
        close++;
    } else if (!te_dtype_eq(from, TE_FLOAT32)) {
        put(em, "((float)");
        close++;
    }
    cg_c_expr(em, a);
    while (close--) put(em, ")");
}

void cg_c_expr(cg_c_emitter *em, const te_expr *e) {
    if (em->failed) return;
    if (!e) {
        cg_c_fail(em, "NULL expression in function '%s'", em->func);
        return;
    }
    if (e->dtype.lanes > 1 && !em->lane && e->kind != TE_INT_IMM && e->kind != TE_FLOAT_IMM) {
        cg_c_fail(em, "vector expression %s of type %s in function '%s' is outside a vector "
                      "store; the c target evaluates vectors only lanewise in stores",
                  te_expr_kind_name(e->kind), te_dtype_str(e->dtype), em->func);
        return;
    }
    const char *tok = binop_token(e->kind);
    if (tok) {
        te_dtype t = te_dtype_element(e->dtype);
        /* C promotes narrow integers to int: cast back for wrap-around. */
        bool narrow = (t.code == TE_INT || t.code == TE_UINT) && t.bits < 32;
        if (narrow) te_str_printf(em->out, "((%s)", elem_type(em, t));
        put(em, "(");
        cg_c_expr(em, e->u.bin.a);
        put(em, tok);
        cg_c_expr(em, e->u.bin.b);
        put(em, ")");
        if (narrow) put(em, ")");
        return;
    }
    switch (e->kind) {
    case TE_INT_IMM: print_int(em, e); return;
    case TE_FLOAT_IMM: print_float(em, e); return;
    case TE_VAR: {
        const char *n = cg_c_name_lookup(em, e);
        if (!n) {
            cg_c_fail(em, "variable '%s' in function '%s' is used outside the loop or "
                          "allocation that defines it",
                      e->u.var.name ? e->u.var.name : "?", em->func);
            return;
        }
        put(em, n);
        return;
    }
    case TE_FLOORDIV:
    case TE_FLOORMOD: print_floor_op(em, e); return;
    case TE_MIN:
    case TE_MAX:
        te_str_printf(em->out, "loom_%s_%s(", e->kind == TE_MIN ? "min" : "max",
                      suffix(te_dtype_element(e->dtype)));
        cg_c_expr(em, e->u.bin.a);
        put(em, ", ");
        cg_c_expr(em, e->u.bin.b);
        put(em, ")");
        return;
    case TE_NOT:
        put(em, "(!");
        cg_c_expr(em, e->u.un.a);
        put(em, ")");
        return;
    case TE_SELECT:
        put(em, "(");
        cg_c_expr(em, e->u.sel.cond);
        put(em, " ? ");
        cg_c_expr(em, e->u.sel.t);
        put(em, " : ");
        cg_c_expr(em, e->u.sel.f);
        put(em, ")");
        return;
    case TE_CAST: {
        te_dtype to = te_dtype_element(e->dtype), from = te_dtype_element(e->u.un.a->dtype);
        if (em->half_types && (te_dtype_is_half(to) || te_dtype_is_half(from))) {
            print_half_cast(em, to, from, e->u.un.a);
            return;
        }
        te_str_printf(em->out, "((%s)", elem_type(em, e->dtype));
        cg_c_expr(em, e->u.un.a);
        put(em, ")");
        return;
    }
    case TE_CALL: print_call(em, e); return;
    case TE_LOAD: print_load(em, e); return;
    case TE_RAMP:
        if (e->u.ramp.base->dtype.lanes > 1 || e->u.ramp.stride->dtype.lanes > 1) {
            cg_c_fail(em, "ramp with a vector base in function '%s' is not supported", em->func);
            return;
        }
        put(em, "(");
        cg_c_expr(em, e->u.ramp.base);
        put(em, " + ");
        cg_c_expr(em, e->u.ramp.stride);
        te_str_printf(em->out, " * %s)", em->lane);
        return;
    case TE_BROADCAST: cg_c_expr(em, e->u.bcast.value); return;
    case TE_READ:
    case TE_REDUCE:
    case TE_BUFFER_LOAD:
        cg_c_fail(em, "%s in function '%s' reached code generation; lower the schedule and run "
                      "tir_pass_storage_flatten (tir_run_pipeline) first",
                  te_expr_kind_name(e->kind), em->func);
        return;
    default:
        cg_c_fail(em, "expression kind %s in function '%s' is not supported by the c target",
                  te_expr_kind_name(e->kind), em->func);
        return;
    }
}
