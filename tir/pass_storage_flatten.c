/*
 * tir/pass_storage_flatten.c — multi-dimensional buffer accesses to flat
 * ones: buffer[i0, .., in-1] becomes buffer[sum(i_d * strides[d])], with
 * the strides the buffer carries (compact, or padded by storage_align).
 * The sums are left for simplify to fold (TVM StorageFlatten).
 *
 * A swizzled buffer (tir_buffer.swizzle, 2-D R x C) is stored in panels
 * of w = 128 bytes of columns, one after the other, each R rows of w
 * elements: (r, c) -> (c / w) * R * w + r * w + c % w. (The XOR of the
 * swizzle is the code generator's: the flat index stays the logical
 * address a wgmma descriptor names.) A buffer swizzled by columns
 * (TIR_SWIZZLE_COLS) is laid out so as its transpose: (r, c) is stored
 * where (c, r) of a C x R buffer would be.
 */
#include "tir/tir_internal.h"

typedef struct {
    te_ctx *ctx;
    te_analyzer *an; /* for swizzled vector accesses, made when needed */
} flatten;

/* The flat index of stored row r and column c in swizzled buffer b of
 * `rows` stored rows of `len` elements; c may be a ramp of stride 1 that
 * stays inside one 16-byte chunk. */
static te_expr *panel_index(flatten *f, const tir_buffer *b, te_expr *r, te_expr *c, int64_t rows,
                            int64_t len, const char *what) {
    te_ctx *ctx = f->ctx;
    int64_t w = 128 / te_dtype_bytes(b->dtype);
    int lanes = c->dtype.lanes;
    int64_t st;
    if (r->dtype.lanes > 1 ||
        (lanes > 1 && (c->kind != TE_RAMP || !te_is_const_int(c->u.ramp.stride, &st) || st != 1 ||
                       lanes * te_dtype_bytes(b->dtype) > 16))) {
        te_error(ctx,
                 "storage_flatten: %s swizzled buffer '%s': a vector access must run along a "
                 "%s within one 16-byte chunk",
                 what, b->name,
                 b->swizzle == TIR_SWIZZLE_COLS ? "column (the buffer is stored transposed)"
                                                : "row");
        return NULL;
    }
    te_expr *c0 = lanes > 1 ? c->u.ramp.base : c;
    if (lanes > 1) {
        if (!f->an && !(f->an = te_analyzer_new(ctx))) return NULL;
        int64_t coeff, base;
        te_analyzer_modular(f->an, c0, &coeff, &base);
        if (coeff % lanes || base % lanes) {
            te_error(ctx,
                     "storage_flatten: %s swizzled buffer '%s': a vector of %d at column %s may "
                     "cross a 16-byte chunk",
                     what, b->name, lanes, te_expr_str(ctx, c0));
            return NULL;
        }
    }
    if (!te_dtype_eq(r->dtype, TE_INT64)) r = te_cast(TE_INT64, r);
    if (!te_dtype_eq(c0->dtype, TE_INT64)) c0 = te_cast(TE_INT64, c0);
    te_expr *idx = te_add(te_mul(r, te_int(ctx, w)), c0);
    if (len > w)
        idx = te_add(te_add(te_mul(te_floordiv(c0, te_int(ctx, w)), te_int(ctx, rows * w)),
                            te_mul(r, te_int(ctx, w))),
                     te_floormod(c0, te_int(ctx, w)));
    return idx && lanes > 1 ? tir_ramp(idx, te_int(ctx, 1), lanes) : idx;
}

/* The flat element offset of indices in b; NULL with an error on a rank
 * mismatch. */
static te_expr *flat_index(flatten *f, const tir_buffer *b, int ndim, te_expr *const *idx,
                           const char *what) {
    te_ctx *ctx = f->ctx;
    if (ndim != b->ndim) {
        te_error(ctx, "storage_flatten: %s buffer '%s' with %d indices; it has %d dimensions",
                 what, b->name, ndim, b->ndim);
        return NULL;
    }
    if (b->swizzle == TIR_SWIZZLE_ROWS && ndim == 2)
        return panel_index(f, b, idx[0], idx[1], b->shape[0], b->shape[1], what);
    if (b->swizzle == TIR_SWIZZLE_COLS && ndim == 2)
        return panel_index(f, b, idx[1], idx[0], b->shape[1], b->shape[0], what);
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
    te_expr *idx = flat_index(f, e->u.bload.buffer, e->u.bload.ndim, e->u.bload.indices,
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
    te_expr *idx = flat_index(f, s->u.bstore.buffer, s->u.bstore.ndim, s->u.bstore.indices,
                              "store to");
    return idx ? tir_store(f->ctx, s->u.bstore.buffer, idx, s->u.bstore.value, NULL) : NULL;
}

tir_func *tir_pass_storage_flatten(te_ctx *ctx, const tir_func *fn) {
    if (!ctx) return NULL;
    if (!fn || !fn->body) return tir__null_operand(ctx, "storage_flatten");
    flatten f = {ctx, NULL};
    tir_stmt *body = tir_stmt_map(ctx, fn->body, flatten_stmt, flatten_expr, &f);
    if (f.an) te_analyzer_free(f.an);
    if (!body) return NULL;
    return tir_func_with_body(ctx, fn, body);
}
