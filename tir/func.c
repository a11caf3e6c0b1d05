/*
 * tir/func.c — lowered functions: a name, the caller's buffers in call
 * order, and a body.
 */
#include <string.h>

#include "tir/tir_internal.h"

tir_func *tir_func_new(te_ctx *ctx, const char *name, int nparams, tir_buffer *const *params,
                       tir_stmt *body) {
    if (!ctx) return NULL;
    if (!name || !*name) {
        te_error(ctx, "func: a function needs a non-empty name");
        return NULL;
    }
    if (!body) return tir__null_operand(ctx, "func");
    if (nparams < 0 || (nparams > 0 && !params)) {
        te_error(ctx, "func '%s': %d parameters but no parameter array", name, nparams);
        return NULL;
    }
    for (int i = 0; i < nparams; ++i)
        if (!params[i]) {
            te_error(ctx, "func '%s': parameter %d is NULL", name, i);
            return NULL;
        }
    tir_func *f = te_alloc(ctx, sizeof *f);
    tir_buffer **ps = te_alloc(ctx, sizeof *ps * (size_t)(nparams > 0 ? nparams : 1));
    if (!f || !ps) return NULL;
    if (nparams > 0) memcpy(ps, params, sizeof *ps * (size_t)nparams);
    f->name = te_strdup(ctx, name);
    f->nparams = nparams;
    f->params = ps;
    f->body = body;
    return f->name ? f : NULL;
}

tir_func *tir_func_with_body(te_ctx *ctx, const tir_func *f, tir_stmt *body) {
    if (!ctx) return NULL;
    if (!f || !body) return tir__null_operand(ctx, "func_with_body");
    tir_func *g = te_alloc(ctx, sizeof *g);
    if (!g) return NULL;
    *g = *f; /* params are immutable once built: share the array */
    g->body = body;
    return g;
}
