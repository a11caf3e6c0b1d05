/*
 * te/traverse.c — the one generic traversal of expressions (visit and map
 * of direct children) and what is built on it: structural equality and
 * hashing, substitution, variable-use queries.
 *
 * Children, in order, per kind: bin a, b; un a; sel cond, t, f; call
 * args; read indices; reduce source (the axes are binders, not
 * children); bload indices; load index, predicate (if any); ramp base,
 * stride; bcast value.
 *
 * te_expr_map_children copies the node and replaces the children without
 * re-running the builders' checks, so passes can rebuild any kind (LOAD,
 * RAMP, ...). Where the result's lane count follows its operands (bin,
 * un, select, call, load) the copy takes the new operands' lanes, so a
 * pass that vectorises operands gets a consistently typed parent.
 */
#include <string.h>

#include "te/te_internal.h"
#include "loom/tir.h"

bool te_is_const_int(const te_expr *e, int64_t *value) {
    if (!e || e->kind != TE_INT_IMM || e->dtype.lanes != 1) return false;
    if (value) *value = e->u.ival;
    return true;
}

bool te_is_const_float(const te_expr *e, double *value) {
    if (!e || e->kind != TE_FLOAT_IMM || e->dtype.lanes != 1) return false;
    if (value) *value = e->u.fval;
    return true;
}

/* ---- visiting ---- */

void te_expr_visit_children(const te_expr *e, te_expr_visit_fn fn, void *user) {
    if (!e || !fn) return;
    switch (e->kind) {
    case TE_INT_IMM:
    case TE_FLOAT_IMM:
    case TE_VAR: return;
    case TE_NOT:
    case TE_CAST: fn(e->u.un.a, user); return;
    case TE_SELECT:
        fn(e->u.sel.cond, user);
        fn(e->u.sel.t, user);
        fn(e->u.sel.f, user);
        return;
    case TE_CALL:
        for (int i = 0; i < e->u.call.nargs; i++) fn(e->u.call.args[i], user);
        return;
    case TE_READ:
        for (int i = 0; i < e->u.read.ndim; i++) fn(e->u.read.indices[i], user);
        return;
    case TE_REDUCE: fn(e->u.reduce.source, user); return;
    case TE_BUFFER_LOAD:
        for (int i = 0; i < e->u.bload.ndim; i++) fn(e->u.bload.indices[i], user);
        return;
    case TE_LOAD:
        fn(e->u.load.index, user);
        if (e->u.load.predicate) fn(e->u.load.predicate, user);
        return;
    case TE_RAMP:
        fn(e->u.ramp.base, user);
        fn(e->u.ramp.stride, user);
        return;
    case TE_BROADCAST: fn(e->u.bcast.value, user); return;
    default:
        if (e->kind >= TE_ADD && e->kind <= TE_OR) {
            fn(e->u.bin.a, user);
            fn(e->u.bin.b, user);
        }
        return;
    }
}

/* ---- mapping ---- */

/* Maps an array of n children; *changed set when any differs. Returns the
 * new array (or the old one), NULL when fn returned NULL. */
static te_expr **map_array(te_ctx *ctx, te_expr **arr, int n, te_expr_map_fn fn, void *user,
                           bool *changed) {
    int i = 0;
    te_expr *m = NULL;
    for (; i < n; i++) {
        if (!(m = fn(arr[i], user))) return NULL;
        if (m != arr[i]) break;
    }
    if (i == n) return arr;
    te_expr **out = te__alloc(ctx, sizeof(te_expr *) * (size_t)n);
    if (!out) return NULL;
    memcpy(out, arr, sizeof(te_expr *) * (size_t)i);
    out[i] = m;
    for (i++; i < n; i++)
        if (!(out[i] = fn(arr[i], user))) return NULL;
    *changed = true;
    return out;
}

static te_dtype lanes_of(te_dtype t, const te_expr *like) {
    return te_dtype_with_lanes(t, like->dtype.lanes);
}

te_expr *te_expr_map_children(te_ctx *ctx, te_expr *e, te_expr_map_fn fn, void *user) {
    if (!e) return NULL;
    if (!ctx) ctx = e->ctx;
    te_expr *n;
    switch (e->kind) {
    case TE_INT_IMM:
    case TE_FLOAT_IMM:
    case TE_VAR: return e;
    case TE_NOT:
    case TE_CAST: {
        te_expr *a = fn(e->u.un.a, user);
        if (!a) return NULL;
        if (a == e->u.un.a) return e;
        if (!(n = te__clone(ctx, e))) return NULL;
        n->u.un.a = a;
        n->dtype = lanes_of(e->dtype, a);
        return n;
    }
    case TE_SELECT: {
        te_expr *c = fn(e->u.sel.cond, user);
        if (!c) return NULL;
        te_expr *t = fn(e->u.sel.t, user);
        if (!t) return NULL;
        te_expr *f = fn(e->u.sel.f, user);
        if (!f) return NULL;
        if (c == e->u.sel.cond && t == e->u.sel.t && f == e->u.sel.f) return e;
        if (!(n = te__clone(ctx, e))) return NULL;
        n->u.sel.cond = c;
        n->u.sel.t = t;
        n->u.sel.f = f;
        n->dtype = t->dtype;
        return n;
    }
    case TE_CALL: {
        te_expr *args[3];
        bool ch = false;
        for (int i = 0; i < e->u.call.nargs; i++) {
            args[i] = fn(e->u.call.args[i], user);
            if (!args[i]) return NULL;
            ch |= args[i] != e->u.call.args[i];
        }
        if (!ch) return e;
        if (!(n = te__clone(ctx, e))) return NULL;
        for (int i = 0; i < e->u.call.nargs; i++) n->u.call.args[i] = args[i];
        if (e->u.call.nargs > 0) n->dtype = lanes_of(e->dtype, args[0]);
        return n;
    }
    case TE_READ: {
        bool ch = false;
        te_expr **idx = map_array(ctx, e->u.read.indices, e->u.read.ndim, fn, user, &ch);
        if (!idx) return NULL;
        if (!ch) return e;
        if (!(n = te__clone(ctx, e))) return NULL;
        n->u.read.indices = idx;
        return n;
    }
    case TE_REDUCE: {
        te_expr *s = fn(e->u.reduce.source, user);
        if (!s) return NULL;
        if (s == e->u.reduce.source) return e;
        if (!(n = te__clone(ctx, e))) return NULL;
        n->u.reduce.source = s;
        n->dtype = s->dtype;
        return n;
    }
    case TE_BUFFER_LOAD: {
        bool ch = false;
        te_expr **idx = map_array(ctx, e->u.bload.indices, e->u.bload.ndim, fn, user, &ch);
        if (!idx) return NULL;
        if (!ch) return e;
        if (!(n = te__clone(ctx, e))) return NULL;
        n->u.bload.indices = idx;
        return n;
    }
    case TE_LOAD: {
        te_expr *i = fn(e->u.load.index, user);
        if (!i) return NULL;
        te_expr *p = NULL;
        if (e->u.load.predicate && !(p = fn(e->u.load.predicate, user))) return NULL;
        if (i == e->u.load.index && p == e->u.load.predicate) return e;
        if (!(n = te__clone(ctx, e))) return NULL;
        n->u.load.index = i;
        n->u.load.predicate = p;
        n->dtype = lanes_of(e->dtype, i);
        return n;
    }
    case TE_RAMP: {
        te_expr *b = fn(e->u.ramp.base, user);
        if (!b) return NULL;
        te_expr *s = fn(e->u.ramp.stride, user);
        if (!s) return NULL;
        if (b == e->u.ramp.base && s == e->u.ramp.stride) return e;
        if (!(n = te__clone(ctx, e))) return NULL;
        n->u.ramp.base = b;
        n->u.ramp.stride = s;
        return n;
    }
    case TE_BROADCAST: {
        te_expr *v = fn(e->u.bcast.value, user);
        if (!v) return NULL;
        if (v == e->u.bcast.value) return e;
        if (!(n = te__clone(ctx, e))) return NULL;
        n->u.bcast.value = v;
        return n;
    }
    default:
        if (e->kind >= TE_ADD && e->kind <= TE_OR) {
            te_expr *a = fn(e->u.bin.a, user);
            if (!a) return NULL;
            te_expr *b = fn(e->u.bin.b, user);
            if (!b) return NULL;
            if (a == e->u.bin.a && b == e->u.bin.b) return e;
            if (!(n = te__clone(ctx, e))) return NULL;
            n->u.bin.a = a;
            n->u.bin.b = b;
            int lanes = a->dtype.lanes > b->dtype.lanes ? a->dtype.lanes : b->dtype.lanes;
            n->dtype = te_dtype_with_lanes(e->dtype, lanes);
            return n;
        }
        return e;
    }
}

/* ---- substitution ---- */

typedef struct {
    te_ctx *ctx;
    int n;
    te_expr *const *vars, *const *values;
} subst;

static te_expr *subst_map(te_expr *e, void *user) {
    subst *s = user;
    if (e->kind == TE_VAR) {
        for (int i = 0; i < s->n; i++)
            if (s->vars[i] == e) return s->values[i];
        return e;
    }
    return te_expr_map_children(s->ctx, e, subst_map, user);
}

te_expr *te_substitute(te_ctx *ctx, te_expr *e, int n, te_expr *const *vars,
                       te_expr *const *values) {
    if (!e) return NULL;
    if (n <= 0) return e;
    if (!vars || !values) return NULL;
    subst s = {ctx ? ctx : e->ctx, n, vars, values};
    return subst_map(e, &s);
}

typedef struct {
    const te_expr *v;
    bool found;
} uses;

static void uses_visit(const te_expr *e, void *user) {
    uses *u = user;
    if (u->found) return;
    if (e == u->v) {
        u->found = true;
        return;
    }
    if (e->kind == TE_REDUCE)
        for (int i = 0; i < e->u.reduce.naxes; i++)
            if (e->u.reduce.axes[i] == u->v) {
                u->found = true;
                return;
            }
    te_expr_visit_children(e, uses_visit, user);
}

bool te_expr_uses_var(const te_expr *e, const te_expr *v) {
    if (!e || !v) return false;
    uses u = {v, false};
    uses_visit(e, &u);
    return u.found;
}

typedef struct {
    const te_tensor *t;
    const te_expr *v;
    int dim;
} read_dim;

static void read_dim_visit(const te_expr *e, void *user) {
    read_dim *rd = user;
    if (rd->dim >= 0) return;
    if (e->kind == TE_READ && e->u.read.tensor == rd->t)
        for (int d = 0; d < e->u.read.ndim; d++)
            if (e->u.read.indices[d] == rd->v) {
                rd->dim = d;
                return;
            }
    te_expr_visit_children(e, read_dim_visit, user);
}

int te_expr_read_dim(const te_expr *e, const te_tensor *t, const te_expr *v) {
    if (!e || !t || !v) return -1;
    read_dim rd = {t, v, -1};
    read_dim_visit(e, &rd);
    return rd.dim;
}

typedef struct {
    const te_tensor *t;
    const te_expr *r;
    bool found;
} slides;

static void slides_visit(const te_expr *e, void *user) {
    slides *sl = user;
    if (sl->found) return;
    if (e->kind == TE_READ)
        for (int d = 0; d < e->u.read.ndim && !sl->found; d++) {
            const te_expr *ix = e->u.read.indices[d];
            if (ix == sl->r || !te_expr_uses_var(ix, sl->r)) continue;
            for (int a = 0; a < sl->t->ndim && !sl->found; a++)
                sl->found = te_expr_uses_var(ix, sl->t->axes[a]);
        }
    te_expr_visit_children(e, slides_visit, user);
}

bool te_reduce_axis_slides(const te_tensor *t, int r) {
    if (!t || !t->body || t->body->kind != TE_REDUCE || r < 0 || r >= t->body->u.reduce.naxes)
        return false;
    slides sl = {t, t->body->u.reduce.axes[r], false};
    slides_visit(t->body, &sl);
    return sl.found;
}

/* ---- equality and hashing ---- */

static bool equal_arr(te_expr *const *a, te_expr *const *b, int n) {
    for (int i = 0; i < n; i++)
        if (!te_expr_equal(a[i], b[i])) return false;
    return true;
}

bool te_expr_equal(const te_expr *a, const te_expr *b) {
    if (a == b) return true;
    if (!a || !b) return false;
    if (a->kind != b->kind || !te_dtype_eq(a->dtype, b->dtype)) return false;
    switch (a->kind) {
    case TE_INT_IMM: return a->u.ival == b->u.ival;
    case TE_FLOAT_IMM: return memcmp(&a->u.fval, &b->u.fval, sizeof(double)) == 0;
    case TE_VAR: return false; /* identity only, checked above */
    case TE_NOT:
    case TE_CAST: return te_expr_equal(a->u.un.a, b->u.un.a);
    case TE_SELECT:
        return te_expr_equal(a->u.sel.cond, b->u.sel.cond) && te_expr_equal(a->u.sel.t, b->u.sel.t) &&
               te_expr_equal(a->u.sel.f, b->u.sel.f);
    case TE_CALL:
        return a->u.call.op == b->u.call.op && a->u.call.nargs == b->u.call.nargs &&
               equal_arr(a->u.call.args, b->u.call.args, a->u.call.nargs);
    case TE_READ:
        return a->u.read.tensor == b->u.read.tensor && a->u.read.ndim == b->u.read.ndim &&
               equal_arr(a->u.read.indices, b->u.read.indices, a->u.read.ndim);
    case TE_REDUCE:
        if (a->u.reduce.op != b->u.reduce.op || a->u.reduce.naxes != b->u.reduce.naxes)
            return false;
        for (int i = 0; i < a->u.reduce.naxes; i++)
            if (a->u.reduce.axes[i] != b->u.reduce.axes[i]) return false;
        return te_expr_equal(a->u.reduce.source, b->u.reduce.source);
    case TE_BUFFER_LOAD:
        return a->u.bload.buffer == b->u.bload.buffer && a->u.bload.ndim == b->u.bload.ndim &&
               equal_arr(a->u.bload.indices, b->u.bload.indices, a->u.bload.ndim);
    case TE_LOAD:
        return a->u.load.buffer == b->u.load.buffer && te_expr_equal(a->u.load.index, b->u.load.index) &&
               te_expr_equal(a->u.load.predicate, b->u.load.predicate);
    case TE_RAMP:
        return a->u.ramp.lanes == b->u.ramp.lanes && te_expr_equal(a->u.ramp.base, b->u.ramp.base) &&
               te_expr_equal(a->u.ramp.stride, b->u.ramp.stride);
    case TE_BROADCAST:
        return a->u.bcast.lanes == b->u.bcast.lanes && te_expr_equal(a->u.bcast.value, b->u.bcast.value);
    default:
        if (a->kind >= TE_ADD && a->kind <= TE_OR)
            return te_expr_equal(a->u.bin.a, b->u.bin.a) && te_expr_equal(a->u.bin.b, b->u.bin.b);
        return false;
    }
}

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 32);
}

static void hash_visit(const te_expr *e, void *user) {
    uint64_t *h = user;
    *h = mix(*h, te_expr_hash(e));
}

uint64_t te_expr_hash(const te_expr *e) {
    if (!e) return 0;
    uint64_t h = mix((uint64_t)e->kind + 1,
                     (uint64_t)e->dtype.code | (uint64_t)e->dtype.bits << 8 |
                         (uint64_t)e->dtype.lanes << 16);
    switch (e->kind) {
    case TE_INT_IMM: return mix(h, (uint64_t)e->u.ival);
    case TE_FLOAT_IMM: {
        uint64_t bits;
        memcpy(&bits, &e->u.fval, sizeof bits);
        return mix(h, bits);
    }
    case TE_VAR: return mix(h, (uint64_t)e->u.var.id); /* ids keep hashes deterministic */
    case TE_CALL: h = mix(h, (uint64_t)e->u.call.op); break;
    case TE_READ: h = mix(h, (uint64_t)e->u.read.tensor->id); break;
    case TE_REDUCE:
        h = mix(h, (uint64_t)e->u.reduce.op);
        for (int i = 0; i < e->u.reduce.naxes; i++)
            h = mix(h, (uint64_t)e->u.reduce.axes[i]->u.var.id);
        break;
    case TE_BUFFER_LOAD: h = mix(h, (uint64_t)e->u.bload.buffer->id); break;
    case TE_LOAD:
        h = mix(h, (uint64_t)e->u.load.buffer->id);
        h = mix(h, e->u.load.predicate != NULL);
        break;
    case TE_RAMP: h = mix(h, (uint64_t)e->u.ramp.lanes); break;
    case TE_BROADCAST: h = mix(h, (uint64_t)e->u.bcast.lanes); break;
    default: break;
    }
    te_expr_visit_children(e, hash_visit, &h);
    return h;
}
