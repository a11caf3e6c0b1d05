/*
 * tir/pass_storage_flatten.c — multi-dimensional buffer accesses to flat
 * ones: buffer[i0, .., in-1] becomes buffer[sum(i_d * strides[d])], with
 * the strides the buffer carries (compact, or padded by storage_align).
 * The sums are left for simplify to fold (TVM StorageFlatten).
 */
#include "tir/tir_internal.h"

typedef struct {
    te_ctx *ctx;
} flatten;

/* The flat element offset of indices in b; NULL with an error on a rank
 * mismatch. */
static te_expr *flat_index(te_ctx *ctx, const tir_buffer *b, int ndim, te_expr *const *idx,
                           const char *what) {
    if (ndim != b->ndim) {
        te_error(ctx, "storage_flatten: %s buffer '%s' with %d indices; it has %d dimensions",
                 what, b->name, ndim, b->ndim);
        return NULL;
    }
    int lanes = 1;
    for (int d = 0; d < ndim; ++d)
        if (idx[d]->dtype.lanes > lanes) lanes = idx[d]->dtype.lanes;
    te_expr *sum = NULL;
    for (int d = 0; d < ndim; ++d) {
        te_expr *t = idx[d];
        if (!te_dtype_eq(te_dtype_element(t->dtype), TE_INT64))
            t = te_cast(te_dtype_with_lanes(TE_INT64, t->dtype.lanes), t);
        if (t && t->dtype.lanes != lanes) t = tir_broadcast(t, lanes);
        if (t && b->strides[d] != 1) {
            te_expr *st = te_int(ctx, b->strides[d]);
            if (lanes > 1) st = tir_broadcast(st, lanes);
            t = te_mul(t, st);
        }
        if (!t) return NULL;
        sum = sum ? te_add(sum, t) : t;
        if (!sum) return NULL;
    }
    if (!sum) {
        sum = te_int(ctx, 0);
        if (sum && lanes > 1) sum = tir_broadcast(sum, lanes);
    }
    return sum;
}

static te_expr *flatten_expr_node(te_expr *e, void *user) {
    flatten *f = user;
    if (e->kind != TE_BUFFER_LOAD) return e;
    te_expr *idx = flat_index(f->ctx, e->u.bload.buffer, e->u.bload.ndim, e->u.bload.indices,
                              "load from");
    return idx ? tir_load(f->ctx, e->u.bload.buffer, idx, NULL) : NULL;
}

static te_expr *flatten_expr(te_expr *e, void *user) {
    flatten *f = user;
    return tir__expr_rewrite(f->ctx, e, flatten_expr_node, user);
}

static tir_stmt *flatten_stmt(tir_stmt *s, void *user) {
    flatten *f = user;
    if (s->kind != TIR_BUFFER_STORE) return s;
    te_expr *idx = flat_index(f->ctx, s->u.bstore.buffer, s->u.bstore.ndim, s->u.bstore.indices,
                              "store to");
    return idx ? tir_store(f->ctx, s->u.bstore.buffer, idx, s->u.bstore.value, NULL) : NULL;
}

tir_func *tir_pass_storage_flatten(te_ctx *ctx, const tir_func *fn) {
    if (!ctx) return NULL;
    if (!fn || !fn->body) return tir__null_operand(ctx, "storage_flatten");
    flatten f = {ctx};
    tir_stmt *body = tir_stmt_map(ctx, fn->body, flatten_stmt, flatten_expr, &f);
    if (!body) return NULL;
    return tir_func_with_body(ctx, fn, body);
}
