/*
 * te/arith_analyzer.c — the analyser object: a scoped stack of variable
 * ranges, and the public entry points (simplify, bounds, modular sets,
 * proofs).
 */
#include <stdlib.h>
#include <string.h>

#include "te/arith_internal.h"

te_analyzer *te_analyzer_new(te_ctx *ctx) {
    if (!ctx) return NULL;
    te_analyzer *an = calloc(1, sizeof(*an));
    if (!an) {
        te_error(ctx, "analyzer: out of memory");
        return NULL;
    }
    an->ctx = ctx;
    return an;
}

void te_analyzer_free(te_analyzer *an) {
    if (!an) return;
    free(an->b);
    free(an);
}

void te_analyzer_bind(te_analyzer *an, const te_expr *var, int64_t min, int64_t extent) {
    if (!an || !var) return;
    if (an->n == an->cap) {
        int cap = an->cap ? an->cap * 2 : 16;
        te__binding *b = realloc(an->b, sizeof(*b) * (size_t)cap);
        if (!b) return; /* the var stays unknown: weaker, still sound */
        an->b = b;
        an->cap = cap;
    }
    int64_t hi;
    if (extent <= 0) {
        hi = min; /* an empty range: keep it a point so bounds stay sound-ish */
    } else if (__builtin_add_overflow(min, extent - 1, &hi)) {
        hi = INT64_MAX;
    }
    an->b[an->n].var = var;
    an->b[an->n].lo = min;
    an->b[an->n].hi = hi;
    an->n++;
}

void te_analyzer_unbind(te_analyzer *an, const te_expr *var) {
    if (!an) return;
    for (int i = an->n - 1; i >= 0; i--)
        if (an->b[i].var == var) {
            memmove(&an->b[i], &an->b[i + 1], sizeof(an->b[0]) * (size_t)(an->n - i - 1));
            an->n--;
            return;
        }
}

te_expr *te_analyzer_simplify(te_analyzer *an, te_expr *e) {
    if (!an || !e) return e;
    te_expr *r = te__simp(an, e);
    return r ? r : e;
}

te_expr *te_simplify(te_ctx *ctx, te_expr *e) {
    if (!e) return e;
    te_analyzer an = {.ctx = ctx ? ctx : te_expr_ctx(e)};
    return te_analyzer_simplify(&an, e);
}

void te_analyzer_const_bound(te_analyzer *an, const te_expr *e, int64_t *lo, int64_t *hi) {
    int64_t l, h;
    te__bound(an, e, &l, &h);
    if (lo) *lo = l;
    if (hi) *hi = h;
}

void te_analyzer_modular(te_analyzer *an, const te_expr *e, int64_t *coeff, int64_t *base) {
    int64_t c, b;
    te__modular(an, e, &c, &b);
    if (coeff) *coeff = c;
    if (base) *base = b;
}

static bool proved(te_analyzer *an, const te_expr *s) {
    int64_t v;
    if (te_is_const_int(s, &v)) return v != 0;
    if (s->kind == TE_AND) return proved(an, s->u.bin.a) && proved(an, s->u.bin.b);
    if (s->kind == TE_CALL && s->u.call.op == TE_INTRIN_LIKELY) return proved(an, s->u.call.args[0]);
    return false;
}

bool te_analyzer_can_prove(te_analyzer *an, const te_expr *cond) {
    if (!an || !cond || te_dtype_element(cond->dtype).code != TE_BOOL) return false;
    return proved(an, te__simp(an, (te_expr *)cond));
}
