/*
 * tir/print.c — the loop program as text, in the spirit of TVM's
 * lower(..., simple_mode=True). Deterministic (tests compare it verbatim):
 *
 *   func default(A: float32[64, 32], C: float32[64]) {
 *     allocate T[float32 * 512] local {
 *       for (i.outer, 0, 8) parallel pragma(auto_unroll_max_step=16) {
 *         if (likely((i < 60))) {
 *           C[i] = 0f
 *         } else {
 *           barrier
 *         }
 *       }
 *     }
 *   }
 *
 * Two spaces per indent level; expressions by te_expr_print.
 */
#include <string.h>

#include "tir/tir_internal.h"

static void pad(te_str *out, int indent) {
    for (int i = 0; i < indent; ++i) te_str_append(out, "  ");
}

static void expr(te_str *out, const te_expr *e) {
    if (e)
        te_expr_print(out, e);
    else
        te_str_append(out, "<null>");
}

/* An expression that stands alone (a condition, an index, a stored
 * value) without the outer parentheses te_expr_print puts on a binary
 * node, so `if (i < n)` does not read `if ((i < n))`. */
static void bare(te_str *out, const te_expr *e) {
    te_str t;
    te_str_init(&t);
    expr(&t, e);
    const char *s = t.data ? t.data : "";
    size_t n = strlen(s);
    bool strip = n >= 2 && s[0] == '(' && s[n - 1] == ')';
    if (strip) { /* only when the first '(' closes at the very end */
        int depth = 0;
        for (size_t i = 0; i < n; ++i) {
            if (s[i] == '(') depth++;
            if (s[i] == ')' && --depth == 0 && i != n - 1) {
                strip = false;
                break;
            }
        }
    }
    if (strip) {
        te_str_printf(out, "%.*s", (int)(n - 2), s + 1);
    } else {
        te_str_append(out, s);
    }
    te_str_free(&t);
}

static void block(te_str *out, const tir_stmt *s, int indent) {
    tir_stmt_print(out, s, indent);
}

/* " {", body one level in, "}": the tail of every statement with a body. */
static void braced(te_str *out, const tir_stmt *body, int indent) {
    te_str_append(out, " {\n");
    block(out, body, indent + 1);
    pad(out, indent);
    te_str_append(out, "}\n");
}

static void print_for(te_str *out, const tir_stmt *s, int indent) {
    pad(out, indent);
    te_str_append(out, "for (");
    const te_expr *v = s->u.loop.var;
    te_str_append(out, v && v->kind == TE_VAR && v->u.var.name ? v->u.var.name : "<var>");
    te_str_append(out, ", ");
    expr(out, s->u.loop.min);
    te_str_append(out, ", ");
    expr(out, s->u.loop.extent);
    te_str_append(out, ")");
    if (s->u.loop.for_kind != TIR_FOR_SERIAL)
        te_str_printf(out, " %s", tir_for_kind_name(s->u.loop.for_kind));
    if (s->u.loop.thread_tag) te_str_printf(out, " %s", s->u.loop.thread_tag);
    if (s->u.loop.auto_unroll_max_step > 0 || s->u.loop.unroll_explicit) {
        te_str_append(out, " pragma(");
        if (s->u.loop.auto_unroll_max_step > 0)
            te_str_printf(out, "auto_unroll_max_step=%lld%s",
                          (long long)s->u.loop.auto_unroll_max_step,
                          s->u.loop.unroll_explicit ? ", " : "");
        if (s->u.loop.unroll_explicit) te_str_append(out, "unroll_explicit");
        te_str_append(out, ")");
    }
    braced(out, s->u.loop.body, indent);
}

static const char *bname(const tir_buffer *b) { return b && b->name ? b->name : "<buffer>"; }

void tir_stmt_print(te_str *out, const tir_stmt *s, int indent) {
    if (!out) return;
    if (!s) {
        pad(out, indent);
        te_str_append(out, "<null>\n");
        return;
    }
    switch (s->kind) {
    case TIR_FOR: print_for(out, s, indent); return;
    case TIR_BUFFER_STORE:
        pad(out, indent);
        te_str_printf(out, "%s[", bname(s->u.bstore.buffer));
        for (int d = 0; d < s->u.bstore.ndim; ++d) {
            if (d) te_str_append(out, ", ");
            bare(out, s->u.bstore.indices[d]);
        }
        te_str_append(out, "] = ");
        bare(out, s->u.bstore.value);
        te_str_append(out, "\n");
        return;
    case TIR_STORE:
        pad(out, indent);
        te_str_printf(out, "%s[", bname(s->u.store.buffer));
        bare(out, s->u.store.index);
        te_str_append(out, "] = ");
        bare(out, s->u.store.value);
        if (s->u.store.predicate) {
            te_str_append(out, " if ");
            bare(out, s->u.store.predicate);
        }
        te_str_append(out, "\n");
        return;
    case TIR_ALLOCATE: {
        const tir_buffer *b = s->u.alloc.buffer;
        pad(out, indent);
        te_str_printf(out, "allocate %s[%s * %lld] %s", bname(b),
                      b ? te_dtype_str(b->dtype) : "?", (long long)tir_buffer_size(b),
                      b ? tir_scope_name(b->scope) : "?");
        braced(out, s->u.alloc.body, indent);
        return;
    }
    case TIR_IF:
        pad(out, indent);
        te_str_append(out, "if (");
        bare(out, s->u.if_.cond);
        te_str_append(out, ") {\n");
        block(out, s->u.if_.then_s, indent + 1);
        if (s->u.if_.else_s && s->u.if_.else_s->kind != TIR_NOOP) {
            pad(out, indent);
            te_str_append(out, "} else {\n");
            block(out, s->u.if_.else_s, indent + 1);
        }
        pad(out, indent);
        te_str_append(out, "}\n");
        return;
    case TIR_SEQ:
        for (int i = 0; i < s->u.seq.n; ++i) tir_stmt_print(out, s->u.seq.stmts[i], indent);
        return;
    case TIR_EVALUATE:
        pad(out, indent);
        bare(out, s->u.eval.value);
        te_str_append(out, "\n");
        return;
    case TIR_BARRIER:
        pad(out, indent);
        te_str_append(out, "barrier\n");
        return;
    case TIR_ALLREDUCE:
        pad(out, indent);
        te_str_printf(out, "%s = allreduce.%s(", s->u.allreduce.result->u.var.name,
                      te_reduce_op_name(s->u.allreduce.op));
        bare(out, s->u.allreduce.value);
        te_str_printf(out, ", threadIdx.x extent %lld)", (long long)s->u.allreduce.extent);
        braced(out, s->u.allreduce.body, indent);
        return;
    case TIR_NOOP:
        pad(out, indent);
        te_str_append(out, "noop\n");
        return;
    case TIR_LET:
        pad(out, indent);
        te_str_printf(out, "let %s = ", s->u.let.var->u.var.name);
        bare(out, s->u.let.value);
        braced(out, s->u.let.body, indent);
        return;
    case TIR_ATTR:
        pad(out, indent);
        te_str_printf(out, "attr %s", s->u.attr.key);
        if (s->u.attr.value) {
            te_str_append(out, " = ");
            bare(out, s->u.attr.value);
        }
        braced(out, s->u.attr.body, indent);
        return;
    case TIR_TENSOR_CALL:
        pad(out, indent);
        te_str_printf(out, "%s(", tir_tensor_intrin_name(s->u.tcall.intrin));
        for (int i = 0; i < s->u.tcall.nargs; ++i) {
            if (i) te_str_append(out, ", ");
            te_str_append(out, "&");
            bare(out, s->u.tcall.args[i]);
            if (s->u.tcall.ld[i])
                te_str_printf(out, " ld %lld%s", (long long)s->u.tcall.ld[i],
                              s->u.tcall.col_major[i] ? " col_major" : "");
        }
        te_str_append(out, ")\n");
        return;
    default:
        pad(out, indent);
        te_str_printf(out, "<statement kind %d>\n", (int)s->kind);
        return;
    }
}

void tir_func_print(te_str *out, const tir_func *f) {
    if (!out) return;
    if (!f) {
        te_str_append(out, "<null func>\n");
        return;
    }
    te_str_printf(out, "func %s(", f->name ? f->name : "<unnamed>");
    for (int i = 0; i < f->nparams; ++i) {
        const tir_buffer *b = f->params ? f->params[i] : NULL;
        if (i) te_str_append(out, ", ");
        if (!b) {
            te_str_append(out, "<null>");
            continue;
        }
        te_str_printf(out, "%s: %s[", bname(b), te_dtype_str(b->dtype));
        for (int d = 0; d < b->ndim; ++d) te_str_printf(out, "%s%lld", d ? ", " : "", (long long)b->shape[d]);
        te_str_append(out, "]");
    }
    te_str_append(out, ") {\n");
    tir_stmt_print(out, f->body, 1);
    te_str_append(out, "}\n");
}

const char *tir_func_str(te_ctx *ctx, const tir_func *f) {
    if (!ctx) return NULL;
    te_str s;
    te_str_init(&s);
    tir_func_print(&s, f);
    const char *r = te_strdup(ctx, s.data ? s.data : "");
    te_str_free(&s);
    return r;
}
