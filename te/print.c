/*
 * te/print.c — the growable string and the expression printer.
 *
 * Format (TVM's infix style, deterministic so goldens can compare it):
 *   binary ops in parentheses, `*` without spaces:  ((i*32) + j)
 *   comparisons and logic alike: (i < 4), (a && b), !c
 *   functions: floordiv(x, 4), floormod(x, 4), min(a, b), max(a, b),
 *              select(c, t, f), exp(x), pow(x, y), likely(c)
 *   casts: float32(x); broadcast: x16(v); ramp(base, stride, lanes)
 *   reads: A[i, k] (READ and BUFFER_LOAD), LOAD: A[idx] or
 *          A[idx, pred=p] when predicated
 *   reductions: sum(A[i, k]*B[k, j], axis=[k])
 *   immediates: int64 plain (42); other integer types as a cast
 *   (int32(42)); bool True/False; floats in the shortest form that
 *   reads back to the same value, with a `.0` if it would look like an
 *   integer: float32 with an `f` suffix (0.5f, 1.0f), float64 bare (0.5),
 *   other widths as a cast (float16(0.5)); inf and nan as float32(inf).
 * An expression that is a whole argument or index (between `(`/`[` and
 * `,`/`)`/`]`) drops its own outer parentheses: A[(i*4) + j], not
 * A[((i*4) + j)].
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "te/te_internal.h"
#include "loom/tir.h"

/* ---- te_str ---- */

void te_str_init(te_str *s) {
    s->len = 0;
    s->cap = 64;
    s->data = malloc(s->cap);
    if (s->data) s->data[0] = '\0';
    else s->cap = 0;
}

void te_str_free(te_str *s) {
    if (!s) return;
    free(s->data);
    s->data = NULL;
    s->len = s->cap = 0;
}

static bool str_reserve(te_str *s, size_t extra) {
    if (s->len + extra + 1 <= s->cap && s->data) return true;
    size_t nc = s->cap ? s->cap : 64;
    while (nc < s->len + extra + 1) nc *= 2;
    char *d = realloc(s->data, nc);
    if (!d) return false;
    if (!s->data) d[0] = '\0';
    s->data = d;
    s->cap = nc;
    return true;
}

void te_str_append(te_str *s, const char *text) {
    if (!s || !text) return;
    size_t n = strlen(text);
    if (!str_reserve(s, n)) return;
    memcpy(s->data + s->len, text, n + 1);
    s->len += n;
}

void te_str_printf(te_str *s, const char *fmt, ...) {
    if (!s || !fmt) return;
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= 0 && str_reserve(s, (size_t)n)) {
        if ((size_t)n < sizeof small) memcpy(s->data + s->len, small, (size_t)n + 1);
        else vsnprintf(s->data + s->len, (size_t)n + 1, fmt, ap2);
        s->len += (size_t)n;
    }
    va_end(ap2);
}

/* ---- immediates ---- */

static void print_float(te_str *out, te_dtype t, double v) {
    char buf[64];
    const char *tn = te_dtype_str(t);
    if (isnan(v)) {
        te_str_printf(out, "%s(nan)", tn);
        return;
    }
    if (isinf(v)) {
        te_str_printf(out, "%s(%sinf)", tn, v < 0 ? "-" : "");
        return;
    }
    if (t.bits == 32) {
        for (int p = 6; p <= 9; p++) {
            snprintf(buf, sizeof buf, "%.*g", p, v);
            if ((float)strtod(buf, NULL) == (float)v) break;
        }
    } else if (t.bits == 16) {
        /* the shortest decimal that reads back to the same 16-bit value */
        for (int p = 3; p <= 9; p++) {
            snprintf(buf, sizeof buf, "%.*g", p, v);
            if (te__round_float(t, strtod(buf, NULL)) == v) break;
        }
    } else {
        for (int p = 15; p <= 17; p++) {
            snprintf(buf, sizeof buf, "%.*g", p, v);
            if (strtod(buf, NULL) == v) break;
        }
    }
    if (!strpbrk(buf, ".e")) strcat(buf, ".0");
    if (t.bits == 32) te_str_printf(out, "%sf", buf);
    else if (t.bits == 64) te_str_append(out, buf);
    else te_str_printf(out, "%s(%s)", tn, buf);
}

static void print_int(te_str *out, te_dtype t, int64_t v) {
    if (t.code == TE_BOOL) {
        te_str_append(out, v ? "True" : "False");
    } else if (t.code == TE_INT && t.bits == 64 && t.lanes == 1) {
        te_str_printf(out, "%lld", (long long)v);
    } else if (t.code == TE_UINT) {
        te_str_printf(out, "%s(%llu)", te_dtype_str(t), (unsigned long long)(uint64_t)v);
    } else {
        te_str_printf(out, "%s(%lld)", te_dtype_str(t), (long long)v);
    }
}

/* ---- expressions ---- */

static void print_expr(te_str *out, const te_expr *e, bool bare);

static void print_list(te_str *out, te_expr *const *a, int n) {
    for (int i = 0; i < n; i++) {
        if (i) te_str_append(out, ", ");
        print_expr(out, a[i], true);
    }
}

static const char *infix(te_expr_kind k) {
    switch (k) {
    case TE_ADD: return " + ";
    case TE_SUB: return " - ";
    case TE_MUL: return "*";
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

static void print_fn2(te_str *out, const char *name, const te_expr *a, const te_expr *b) {
    te_str_printf(out, "%s(", name);
    print_expr(out, a, true);
    te_str_append(out, ", ");
    print_expr(out, b, true);
    te_str_append(out, ")");
}

static void print_expr(te_str *out, const te_expr *e, bool bare) {
    if (!e) {
        te_str_append(out, "<null>");
        return;
    }
    switch (e->kind) {
    case TE_INT_IMM: print_int(out, e->dtype, e->u.ival); return;
    case TE_FLOAT_IMM: print_float(out, e->dtype, e->u.fval); return;
    case TE_VAR: te_str_append(out, e->u.var.name ? e->u.var.name : "<anon>"); return;
    case TE_FLOORDIV: print_fn2(out, "floordiv", e->u.bin.a, e->u.bin.b); return;
    case TE_FLOORMOD: print_fn2(out, "floormod", e->u.bin.a, e->u.bin.b); return;
    case TE_MIN: print_fn2(out, "min", e->u.bin.a, e->u.bin.b); return;
    case TE_MAX: print_fn2(out, "max", e->u.bin.a, e->u.bin.b); return;
    case TE_NOT:
        te_str_append(out, "!");
        print_expr(out, e->u.un.a, false);
        return;
    case TE_SELECT:
        te_str_append(out, "select(");
        print_expr(out, e->u.sel.cond, true);
        te_str_append(out, ", ");
        print_expr(out, e->u.sel.t, true);
        te_str_append(out, ", ");
        print_expr(out, e->u.sel.f, true);
        te_str_append(out, ")");
        return;
    case TE_CAST:
        te_str_printf(out, "%s(", te_dtype_str(e->dtype));
        print_expr(out, e->u.un.a, true);
        te_str_append(out, ")");
        return;
    case TE_CALL:
        te_str_printf(out, "%s(", te_intrin_name(e->u.call.op));
        print_list(out, e->u.call.args, e->u.call.nargs);
        te_str_append(out, ")");
        return;
    case TE_READ:
        te_str_printf(out, "%s[", e->u.read.tensor->name);
        print_list(out, e->u.read.indices, e->u.read.ndim);
        te_str_append(out, "]");
        return;
    case TE_REDUCE:
        te_str_printf(out, "%s(", te_reduce_op_name(e->u.reduce.op));
        print_expr(out, e->u.reduce.source, true);
        te_str_append(out, ", axis=[");
        print_list(out, e->u.reduce.axes, e->u.reduce.naxes);
        te_str_append(out, "])");
        return;
    case TE_BUFFER_LOAD:
        te_str_printf(out, "%s[", e->u.bload.buffer->name);
        print_list(out, e->u.bload.indices, e->u.bload.ndim);
        te_str_append(out, "]");
        return;
    case TE_LOAD:
        te_str_printf(out, "%s[", e->u.load.buffer->name);
        print_expr(out, e->u.load.index, true);
        if (e->u.load.predicate) {
            te_str_append(out, ", pred=");
            print_expr(out, e->u.load.predicate, true);
        }
        te_str_append(out, "]");
        return;
    case TE_RAMP:
        te_str_append(out, "ramp(");
        print_expr(out, e->u.ramp.base, true);
        te_str_append(out, ", ");
        print_expr(out, e->u.ramp.stride, true);
        te_str_printf(out, ", %d)", e->u.ramp.lanes);
        return;
    case TE_BROADCAST:
        te_str_printf(out, "x%d(", e->u.bcast.lanes);
        print_expr(out, e->u.bcast.value, true);
        te_str_append(out, ")");
        return;
    default: {
        const char *op = infix(e->kind);
        if (!op) {
            te_str_printf(out, "<%s>", te_expr_kind_name(e->kind));
            return;
        }
        if (!bare) te_str_append(out, "(");
        print_expr(out, e->u.bin.a, false);
        te_str_append(out, op);
        print_expr(out, e->u.bin.b, false);
        if (!bare) te_str_append(out, ")");
        return;
    }
    }
}

void te_expr_print(te_str *out, const te_expr *e) {
    if (!out) return;
    print_expr(out, e, false);
}

const char *te_expr_str(te_ctx *ctx, const te_expr *e) {
    if (!ctx && e) ctx = e->ctx;
    if (!ctx) return NULL;
    te_str s;
    te_str_init(&s);
    te_expr_print(&s, e);
    const char *r = te_strdup(ctx, s.data ? s.data : "");
    te_str_free(&s);
    return r;
}
