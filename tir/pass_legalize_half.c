/*
 * tir/pass_legalize_half.c — float16 and bfloat16 computed in float32.
 *
 * Neither x86 without AVX512-FP16 nor CUDA's scalar path has 16-bit float
 * arithmetic worth its rounding rules, and bfloat16 has none anywhere we
 * target, so the code generators are only asked to load, store and
 * convert them: every arithmetic node, comparison, min/max, select and
 * intrinsic call on 16-bit floats is rebuilt on float32 operands (each a
 * cast of the 16-bit value, exact) and, where its result was 16-bit, cast
 * back (one rounding per operation, as an IEEE 16-bit unit would do
 * it). Conversions between a 16-bit float and anything but float32 go
 * through float32, so a backend needs only f16<->f32 and bf16<->f32.
 * (int -> bfloat16 beyond 2^24 and float64 -> 16-bit thus round twice;
 * neither occurs in the operators that use these types.)
 *
 * Loads, stores, variables, immediates and broadcasts keep their 16-bit
 * type: they move values without computing.
 */
#include "tir/tir_internal.h"

static te_dtype f32_like(te_dtype t) { return TE_DTYPE(TE_FLOAT, 32, t.lanes); }

/* float32(x) for a 16-bit float x (exact), x itself otherwise. */
static te_expr *lift(te_expr *x, void *user) {
    (void)user;
    if (!x || !te_dtype_is_half(x->dtype)) return x;
    return te_cast(f32_like(x->dtype), x);
}

static bool computes(te_expr_kind k) {
    return (k >= TE_ADD && k <= TE_GE) || k == TE_SELECT || k == TE_CALL;
}

static bool has_half_operand(const te_expr *e) {
    if (e->kind == TE_SELECT) return te_dtype_is_half(e->u.sel.t->dtype);
    if (e->kind == TE_CALL) {
        for (int i = 0; i < e->u.call.nargs; i++)
            if (te_dtype_is_half(e->u.call.args[i]->dtype)) return true;
        return false;
    }
    return te_dtype_is_half(e->u.bin.a->dtype) || te_dtype_is_half(e->u.bin.b->dtype);
}

/* One node, its children already legal. */
static te_expr *legalize_node(te_expr *e, void *user) {
    te_ctx *ctx = user;
    if (e->kind == TE_CAST) {
        te_dtype to = e->dtype, from = e->u.un.a->dtype;
        bool h_to = te_dtype_is_half(to), h_from = te_dtype_is_half(from);
        if (!h_to && !h_from) return e;
        /* a 16-bit float meets float32 only: anything else goes through it */
        if (h_to && !h_from && te_dtype_eq(from, f32_like(to))) return e;
        if (h_from && !h_to && te_dtype_eq(to, f32_like(from))) return e;
        te_expr *mid = te_cast(f32_like(to), e->u.un.a);
        return mid ? te_cast(to, mid) : NULL;
    }
    if (!computes(e->kind) || !has_half_operand(e)) return e;
    te_expr *n = te_expr_map_children(ctx, e, lift, NULL);
    if (!n || n == e) return n;
    /* n is a fresh copy (whose type map_children may already have taken
     * from the lifted operands): only its result type is left to fix */
    if (!te_dtype_is_half(e->dtype)) return n;
    n->dtype = f32_like(e->dtype);
    return te_cast(e->dtype, n);
}

static te_expr *legalize_expr(te_expr *e, void *user) {
    return tir__expr_rewrite(user, e, legalize_node, user);
}

static void find_half_expr(const te_expr *e, void *user) {
    bool *found = user;
    if (*found || !e) return;
    if (te_dtype_is_half(e->dtype)) {
        *found = true;
        return;
    }
    te_expr_visit_children(e, find_half_expr, user);
}

static void find_half_stmt(const tir_stmt *s, void *user) {
    bool *found = user;
    if (s->kind == TIR_STORE && s->u.store.buffer && te_dtype_is_half(s->u.store.buffer->dtype))
        *found = true;
    if (s->kind == TIR_ALLOCATE && s->u.alloc.buffer && te_dtype_is_half(s->u.alloc.buffer->dtype))
        *found = true;
}

bool tir_func_uses_half(const tir_func *f) {
    if (!f) return false;
    for (int i = 0; i < f->nparams; i++)
        if (f->params[i] && te_dtype_is_half(f->params[i]->dtype)) return true;
    bool found = false;
    if (f->body) tir_stmt_visit(f->body, find_half_stmt, find_half_expr, &found);
    return found;
}

tir_func *tir_pass_legalize_half(te_ctx *ctx, const tir_func *f) {
    if (!ctx) return NULL;
    if (!f || !f->body) return tir__null_operand(ctx, "legalize_half");
    tir_stmt *body = tir_stmt_map(ctx, f->body, NULL, legalize_expr, ctx);
    return body ? tir_func_with_body(ctx, f, body) : NULL;
}
