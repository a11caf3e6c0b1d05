/*
 * te/tensor.c — tensor reads, reductions, placeholders and compute ops.
 *
 * te_compute checks the rules that make a compute op lowerable: its axes
 * are fresh data-parallel axes (an axis names one loop of one op, so the
 * ctx records which op owns which axis), the body refers to nothing but
 * those axes and the axes of a reduction at its top, and a reduction
 * appears only as the whole body (TVM ComputeOp's verifier).
 */
#include <math.h>
#include <stdlib.h>

#include "te/te_internal.h"

te_ctx *te_expr_ctx(const te_expr *e) { return e ? e->ctx : NULL; }

static te_expr **copy_exprs(te_ctx *ctx, int n, te_expr *const *src) {
    te_expr **d = te__alloc(ctx, sizeof(te_expr *) * (size_t)(n > 0 ? n : 1));
    if (d && n > 0) memcpy(d, src, sizeof(te_expr *) * (size_t)n);
    return d;
}

te_expr *te_read_n(te_tensor *t, int ndim, te_expr *const *indices) {
    if (!t) return NULL;
    for (int i = 0; i < ndim; i++)
        if (!indices || !indices[i]) return NULL;
    te_ctx *ctx = t->ctx;
    if (ndim != t->ndim) {
        te_error(ctx, "read '%s': %d indices for a tensor of rank %d", t->name, ndim, t->ndim);
        return NULL;
    }
    for (int i = 0; i < ndim; i++) {
        te_dtype it = indices[i]->dtype;
        if (!te_dtype_is_int(it) || it.lanes != 1) {
            te_error(ctx, "read '%s': index %d has type %s, expected a scalar integer", t->name,
                     i, te_dtype_str(it));
            return NULL;
        }
    }
    te_expr *e = te__node(ctx, TE_READ, t->dtype);
    if (!e) return NULL;
    e->u.read.tensor = t;
    e->u.read.ndim = ndim;
    e->u.read.indices = copy_exprs(ctx, ndim, indices);
    return e->u.read.indices ? e : NULL;
}

te_expr *te_reduce_n(te_reduce_op op, te_expr *source, int naxes, te_expr *const *axes) {
    if (!source) return NULL;
    for (int i = 0; i < naxes; i++)
        if (!axes || !axes[i]) return NULL;
    te_ctx *ctx = source->ctx;
    if ((unsigned)op > TE_REDUCE_MAX) {
        te_error(ctx, "reduce: unknown reduce op %d", (int)op);
        return NULL;
    }
    const char *name = te_reduce_op_name(op);
    if (naxes < 1) {
        te_error(ctx, "%s: needs at least one reduce axis", name);
        return NULL;
    }
    te_dtype t = source->dtype;
    if (!(te_dtype_is_int(t) || te_dtype_is_float(t))) {
        te_error(ctx, "%s: source type %s is not a number", name, te_dtype_str(t));
        return NULL;
    }
    for (int i = 0; i < naxes; i++) {
        const te_expr *a = axes[i];
        if (a->kind != TE_VAR) {
            te_error(ctx, "%s: axis %d is a %s, not a reduce axis", name, i,
                     te_expr_kind_name(a->kind));
            return NULL;
        }
        if (a->u.var.iter != TE_ITER_REDUCE) {
            te_error(ctx, "%s: '%s' is not a reduce axis (make it with te_reduce_axis)", name,
                     a->u.var.name);
            return NULL;
        }
        for (int j = 0; j < i; j++)
            if (axes[j] == a) {
                te_error(ctx, "%s: reduce axis '%s' is listed twice", name, a->u.var.name);
                return NULL;
            }
    }
    te_expr *e = te__node(ctx, TE_REDUCE, t);
    if (!e) return NULL;
    e->u.reduce.op = op;
    e->u.reduce.source = source;
    e->u.reduce.naxes = naxes;
    e->u.reduce.axes = copy_exprs(ctx, naxes, axes);
    return e->u.reduce.axes ? e : NULL;
}

te_expr *te_reduce_identity(te_ctx *ctx, te_reduce_op op, te_dtype t) {
    if (!ctx) return NULL;
    te_dtype et = te_dtype_element(t);
    te_expr *s = NULL;
    if ((unsigned)op > TE_REDUCE_MAX) {
        te_error(ctx, "reduce identity: unknown reduce op %d", (int)op);
        return NULL;
    }
    if (op == TE_REDUCE_SUM || op == TE_REDUCE_PROD) {
        if (et.code == TE_HANDLE || et.code > TE_BFLOAT) goto bad;
        return te_const(ctx, t, op == TE_REDUCE_SUM ? 0 : 1);
    }
    bool largest = op == TE_REDUCE_MIN;
    switch (et.code) {
    case TE_BFLOAT:
    case TE_FLOAT: s = te__float_imm(ctx, et, largest ? INFINITY : -INFINITY); break;
    case TE_BOOL: s = te__int_imm(ctx, et, largest ? 1 : 0); break;
    case TE_INT: {
        int b = et.bits >= 64 || et.bits == 0 ? 64 : et.bits;
        int64_t mx = b == 64 ? INT64_MAX : (int64_t)(((uint64_t)1 << (b - 1)) - 1);
        s = te__int_imm(ctx, et, largest ? mx : -mx - 1);
        break;
    }
    case TE_UINT: {
        int b = et.bits >= 64 || et.bits == 0 ? 64 : et.bits;
        int64_t mx = b == 64 ? -1 : (int64_t)(((uint64_t)1 << b) - 1);
        s = te__int_imm(ctx, et, largest ? mx : 0);
        break;
    }
    default: goto bad;
    }
    return t.lanes > 1 ? te__broadcast(s, t.lanes) : s;
bad:
    te_error(ctx, "reduce identity: %s has no identity for type %s", te_reduce_op_name(op),
             te_dtype_str(t));
    return NULL;
}

te_expr *te_reduce_combine(te_reduce_op op, te_expr *acc, te_expr *x) {
    switch (op) {
    case TE_REDUCE_SUM: return te_add(acc, x);
    case TE_REDUCE_PROD: return te_mul(acc, x);
    case TE_REDUCE_MIN: return te_min(acc, x);
    case TE_REDUCE_MAX: return te_max(acc, x);
    }
    if (acc) te_error(acc->ctx, "reduce combine: unknown reduce op %d", (int)op);
    return NULL;
}

te_tensor *te_placeholder(te_ctx *ctx, const char *name, te_dtype t, int ndim,
                          const int64_t *shape) {
    if (!ctx) return NULL;
    if (!name) {
        te_error(ctx, "placeholder: name is NULL");
        return NULL;
    }
    if (ndim < 0 || ndim > TE_MAX_DIMS) {
        te_error(ctx, "placeholder '%s': rank %d is outside [0, %d]", name, ndim, TE_MAX_DIMS);
        return NULL;
    }
    if (ndim > 0 && !shape) {
        te_error(ctx, "placeholder '%s': shape is NULL", name);
        return NULL;
    }
    if (t.lanes != 1 || t.code == TE_HANDLE || t.code > TE_BFLOAT) {
        te_error(ctx, "placeholder '%s': element type %s must be a scalar number or bool", name,
                 te_dtype_str(t));
        return NULL;
    }
    for (int d = 0; d < ndim; d++)
        if (shape[d] <= 0) {
            te_error(ctx, "placeholder '%s': extent %lld of dimension %d must be positive", name,
                     (long long)shape[d], d);
            return NULL;
        }
    te_tensor *x = te__alloc(ctx, sizeof *x);
    if (!x) return NULL;
    x->ctx = ctx;
    x->name = te_strdup(ctx, name);
    x->id = ctx->next_id++;
    x->kind = TE_OP_PLACEHOLDER;
    x->dtype = t;
    x->ndim = ndim;
    for (int d = 0; d < ndim; d++) x->shape[d] = shape[d];
    return x->name ? x : NULL;
}

/* ---- compute-op body checking ---- */

/* Visited nodes, so shared subtrees of a DAG are walked once. */
typedef struct {
    const te_expr **slots;
    size_t cap, n;
} ptr_set;

static size_t ptr_slot(const void *p, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ULL;
    return (size_t)(h >> 20) & (cap - 1);
}

/* 1 if newly added, 0 if present, -1 on exhaustion. */
static int ptr_set_add(ptr_set *s, const te_expr *p) {
    if ((s->n + 1) * 2 > s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 64;
        const te_expr **ns = calloc(nc, sizeof *ns);
        if (!ns) return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slots[i]) continue;
            size_t j = ptr_slot(s->slots[i], nc);
            while (ns[j]) j = (j + 1) & (nc - 1);
            ns[j] = s->slots[i];
        }
        free(s->slots);
        s->slots = ns;
        s->cap = nc;
    }
    size_t i = ptr_slot(p, s->cap);
    while (s->slots[i]) {
        if (s->slots[i] == p) return 0;
        i = (i + 1) & (s->cap - 1);
    }
    s->slots[i] = p;
    s->n++;
    return 1;
}

typedef struct {
    te_ctx *ctx;
    const char *name;
    te_expr *const *axes;
    int ndim;
    const te_expr *top; /* the top REDUCE, or NULL */
    ptr_set seen;
    te_tensor **inputs;
    int ninputs, cap;
    int err;
} body_check;

static bool allowed_var(const body_check *bc, const te_expr *v) {
    for (int i = 0; i < bc->ndim; i++)
        if (bc->axes[i] == v) return true;
    if (bc->top)
        for (int i = 0; i < bc->top->u.reduce.naxes; i++)
            if (bc->top->u.reduce.axes[i] == v) return true;
    return false;
}

static void check_visit(const te_expr *e, void *user);

static void check_node(body_check *bc, const te_expr *e) {
    if (bc->err) return;
    int r = ptr_set_add(&bc->seen, e);
    if (r < 0) {
        bc->err = te_error(bc->ctx, "compute '%s': out of memory checking the body", bc->name);
        return;
    }
    if (r == 0) return;
    switch (e->kind) {
    case TE_VAR:
        if (allowed_var(bc, e)) return;
        if (e->u.var.iter == TE_ITER_REDUCE)
            bc->err = te_error(bc->ctx,
                               "compute '%s': reduce axis '%s' is not listed by a reduction at "
                               "the top of the body",
                               bc->name, e->u.var.name);
        else if (e->u.var.iter == TE_ITER_DATA_PAR)
            bc->err = te_error(bc->ctx, "compute '%s': body uses axis '%s', which is not an "
                               "axis of this op", bc->name, e->u.var.name);
        else
            bc->err = te_error(bc->ctx, "compute '%s': body uses variable '%s', which is not "
                               "an axis of this op", bc->name, e->u.var.name);
        return;
    case TE_REDUCE:
        bc->err = te_error(bc->ctx, "compute '%s': a reduction (%s) may only be the whole body, "
                           "not nested inside it", bc->name, te_reduce_op_name(e->u.reduce.op));
        return;
    case TE_READ: {
        te_tensor *t = e->u.read.tensor;
        /* A constant index outside the tensor reads outside its buffer on
         * every iteration: no schedule can make it right. */
        for (int d = 0; d < e->u.read.ndim && d < t->ndim; d++) {
            int64_t v;
            if (te_is_const_int(e->u.read.indices[d], &v) && (v < 0 || v >= t->shape[d])) {
                bc->err = te_error(bc->ctx,
                                   "compute '%s': read of '%s' at index %lld in dimension %d, "
                                   "outside its extent %lld (indices 0..%lld)",
                                   bc->name, t->name, (long long)v, d, (long long)t->shape[d],
                                   (long long)t->shape[d] - 1);
                return;
            }
        }
        bool have = false;
        for (int i = 0; i < bc->ninputs && !have; i++) have = bc->inputs[i] == t;
        if (!have) {
            if (bc->ninputs == bc->cap) {
                int nc = bc->cap ? bc->cap * 2 : 8;
                te_tensor **n = realloc(bc->inputs, sizeof *n * (size_t)nc);
                if (!n) {
                    bc->err = te_error(bc->ctx, "compute '%s': out of memory", bc->name);
                    return;
                }
                bc->inputs = n;
                bc->cap = nc;
            }
            bc->inputs[bc->ninputs++] = t;
        }
        break;
    }
    default: break;
    }
    te_expr_visit_children(e, check_visit, bc);
}

static void check_visit(const te_expr *e, void *user) { check_node(user, e); }

te_tensor *te_compute(te_ctx *ctx, const char *name, int ndim, te_expr *const *axes,
                      te_expr *body) {
    if (!ctx || !body) return NULL;
    for (int d = 0; d < ndim; d++)
        if (!axes || !axes[d]) return NULL;
    if (!name) {
        te_error(ctx, "compute: name is NULL");
        return NULL;
    }
    if (ndim < 0 || ndim > TE_MAX_DIMS) {
        te_error(ctx, "compute '%s': rank %d is outside [0, %d]", name, ndim, TE_MAX_DIMS);
        return NULL;
    }
    for (int d = 0; d < ndim; d++) {
        const te_expr *a = axes[d];
        if (a->kind != TE_VAR || a->u.var.iter != TE_ITER_DATA_PAR) {
            if (a->kind == TE_VAR)
                te_error(ctx, "compute '%s': axis '%s' is not a data-parallel axis (make it with "
                         "te_axis)", name, a->u.var.name);
            else
                te_error(ctx, "compute '%s': axis %d is a %s, not a data-parallel axis", name, d,
                         te_expr_kind_name(a->kind));
            return NULL;
        }
        for (int j = 0; j < d; j++)
            if (axes[j] == a) {
                te_error(ctx, "compute '%s': axis '%s' is listed twice", name, a->u.var.name);
                return NULL;
            }
        const te_tensor *owner = te__axis_owner(ctx, a);
        if (owner) {
            te_error(ctx, "compute '%s': axis '%s' already belongs to compute op '%s' (each op "
                     "needs its own axes)", name, a->u.var.name, owner->name);
            return NULL;
        }
    }
    if (body->dtype.lanes != 1) {
        te_error(ctx, "compute '%s': body type %s is not a scalar", name,
                 te_dtype_str(body->dtype));
        return NULL;
    }
    body_check bc = {ctx, name, axes, ndim, NULL, {NULL, 0, 0}, NULL, 0, 0, 0};
    if (body->kind == TE_REDUCE) {
        bc.top = body;
        check_node(&bc, body->u.reduce.source);
    } else {
        check_node(&bc, body);
    }
    free(bc.seen.slots);
    te_tensor *t = bc.err ? NULL : te__alloc(ctx, sizeof *t);
    if (t) {
        t->ctx = ctx;
        t->name = te_strdup(ctx, name);
        t->id = ctx->next_id++;
        t->kind = TE_OP_COMPUTE;
        t->dtype = body->dtype;
        t->ndim = ndim;
        for (int d = 0; d < ndim; d++) t->shape[d] = axes[d]->u.var.extent;
        t->axes = copy_exprs(ctx, ndim, axes);
        t->body = body;
        t->ninputs = bc.ninputs;
        t->inputs = te__alloc(ctx, sizeof(te_tensor *) * (size_t)(bc.ninputs ? bc.ninputs : 1));
        if (!t->name || !t->axes || !t->inputs) t = NULL;
    }
    if (t && bc.ninputs) memcpy(t->inputs, bc.inputs, sizeof(te_tensor *) * (size_t)bc.ninputs);
    free(bc.inputs);
    if (!t) return NULL;
    for (int d = 0; d < ndim; d++)
        if (te__set_axis_owner(ctx, axes[d], t)) return NULL;
    return t;
}
