/*
 * tir/buffer.c — buffers: shape, strides, scope and the HANDLE variable
 * that names a buffer's base pointer in the generated code.
 */
#include "tir/tir_internal.h"

const char *tir_scope_name(tir_scope s) {
    switch (s) {
    case TIR_SCOPE_GLOBAL: return "global";
    case TIR_SCOPE_LOCAL: return "local";
    case TIR_SCOPE_SHARED: return "shared";
    case TIR_SCOPE_WMMA_A: return "wmma.matrix_a";
    case TIR_SCOPE_WMMA_B: return "wmma.matrix_b";
    case TIR_SCOPE_WMMA_ACC: return "wmma.accumulator";
    case TIR_SCOPE_WGMMA_ACC: return "wgmma.accumulator";
    }
    return "unknown";
}

bool tir_scope_is_fragment(tir_scope s) {
    return s == TIR_SCOPE_WMMA_A || s == TIR_SCOPE_WMMA_B || s == TIR_SCOPE_WMMA_ACC ||
           s == TIR_SCOPE_WGMMA_ACC;
}

tir_buffer *tir_buffer_new(te_ctx *ctx, const char *name, te_dtype t, int ndim,
                           const int64_t *shape, tir_scope scope) {
    if (!ctx) return NULL;
    if (!name || !*name) {
        te_error(ctx, "buffer: a buffer needs a non-empty name");
        return NULL;
    }
    if (ndim < 0 || ndim > TE_MAX_DIMS) {
        te_error(ctx, "buffer '%s': rank %d is outside [0, %d]", name, ndim, TE_MAX_DIMS);
        return NULL;
    }
    if (ndim > 0 && !shape) {
        te_error(ctx, "buffer '%s': shape is NULL for rank %d", name, ndim);
        return NULL;
    }
    if (t.lanes != 1) {
        te_error(ctx, "buffer '%s': element type %s must be a scalar", name, te_dtype_str(t));
        return NULL;
    }
    if ((int)scope < TIR_SCOPE_GLOBAL || scope > TIR_SCOPE_WGMMA_ACC) {
        te_error(ctx, "buffer '%s': unknown scope %d", name, (int)scope);
        return NULL;
    }
    for (int d = 0; d < ndim; ++d)
        if (shape[d] <= 0) {
            te_error(ctx, "buffer '%s': extent %lld of dimension %d must be positive", name,
                     (long long)shape[d], d);
            return NULL;
        }
    tir_buffer *b = te_alloc(ctx, sizeof *b);
    if (!b) return NULL;
    b->name = te_strdup(ctx, name);
    b->id = te_ctx_next_id(ctx);
    b->dtype = t;
    b->ndim = ndim;
    b->scope = scope;
    int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; --d) {
        b->shape[d] = shape[d];
        b->strides[d] = stride;
        stride *= shape[d];
    }
    b->data = te_var(ctx, b->name, TE_HANDLE64);
    if (!b->name || !b->data) return NULL;
    return b;
}

int64_t tir_buffer_size(const tir_buffer *b) {
    if (!b) return 0;
    int64_t n = 1;
    for (int d = 0; d < b->ndim; ++d) n += (b->shape[d] - 1) * b->strides[d];
    return n;
}
