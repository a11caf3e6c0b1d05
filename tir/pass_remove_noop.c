/*
 * tir/pass_remove_noop.c — drops statements with no effect: loops, IFs
 * and allocations around nothing, loops of extent 0, stores of a location
 * to itself, evaluations of immediates, LETs and ATTRs around nothing
 * (TVM RemoveNoOp). Bottom-up, so a
 * loop whose body empties is removed in the same walk; SEQs drop the
 * NOOPs as they are rebuilt.
 */
#include "tir/tir_internal.h"

static bool same_flat_location(const tir_stmt *s) {
    const te_expr *v = s->u.store.value;
    return !s->u.store.predicate && v->kind == TE_LOAD && v->u.load.buffer == s->u.store.buffer &&
           !v->u.load.predicate && te_expr_equal(v->u.load.index, s->u.store.index);
}

static bool same_location(const tir_stmt *s) {
    const te_expr *v = s->u.bstore.value;
    if (v->kind != TE_BUFFER_LOAD || v->u.bload.buffer != s->u.bstore.buffer ||
        v->u.bload.ndim != s->u.bstore.ndim)
        return false;
    for (int d = 0; d < s->u.bstore.ndim; ++d)
        if (!te_expr_equal(v->u.bload.indices[d], s->u.bstore.indices[d])) return false;
    return true;
}

static tir_stmt *remove(tir_stmt *s, void *user) {
    te_ctx *ctx = user;
    int64_t v;
    switch (s->kind) {
    case TIR_FOR:
        if (tir__is_noop(s->u.loop.body) ||
            (te_is_const_int(s->u.loop.extent, &v) && v <= 0))
            return tir_noop(ctx);
        return s;
    case TIR_IF: {
        bool no_then = tir__is_noop(s->u.if_.then_s), no_else = tir__is_noop(s->u.if_.else_s);
        if (no_then && no_else) return tir_noop(ctx);
        if (no_then) { /* keep the else branch alone, under the negated condition */
            te_expr *c = te_not(s->u.if_.cond);
            return c ? tir_if(ctx, c, s->u.if_.else_s, NULL) : NULL;
        }
        if (s->u.if_.else_s && no_else) return tir_if(ctx, s->u.if_.cond, s->u.if_.then_s, NULL);
        return s;
    }
    case TIR_ALLOCATE: return tir__is_noop(s->u.alloc.body) ? tir_noop(ctx) : s;
    case TIR_LET: return tir__is_noop(s->u.let.body) ? tir_noop(ctx) : s;
    case TIR_ATTR: return tir__is_noop(s->u.attr.body) ? tir_noop(ctx) : s;
    case TIR_STORE: return same_flat_location(s) ? tir_noop(ctx) : s;
    case TIR_BUFFER_STORE: return same_location(s) ? tir_noop(ctx) : s;
    case TIR_EVALUATE: {
        const te_expr *e = s->u.eval.value;
        return e->kind == TE_INT_IMM || e->kind == TE_FLOAT_IMM ? tir_noop(ctx) : s;
    }
    default: return s;
    }
}

tir_func *tir_pass_remove_noop(te_ctx *ctx, const tir_func *f) {
    if (!ctx) return NULL;
    if (!f || !f->body) return tir__null_operand(ctx, "remove_noop");
    tir_stmt *body = tir_stmt_map(ctx, f->body, remove, NULL, ctx);
    return body ? tir_func_with_body(ctx, f, body) : NULL;
}
