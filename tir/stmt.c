/*
 * tir/stmt.c — statement builders and the loop-level expression builders
 * (BUFFER_LOAD, LOAD, RAMP, BROADCAST). Builders check what is cheap to
 * check of their operands (kinds, dtypes, lanes, index counts), so that a
 * pass that builds a bad node fails where it does; what needs the whole
 * program (scopes, ranges) is the IR verifier's (verify.c).
 */
#include <string.h>

#include "tir/tir_internal.h"

tir_stmt *tir__new_stmt(te_ctx *ctx, tir_stmt_kind kind) {
    tir_stmt *s = te_alloc(ctx, sizeof *s);
    if (s) s->kind = kind;
    return s;
}

bool tir__is_noop(const tir_stmt *s) { return !s || s->kind == TIR_NOOP; }

void *tir__null_operand(te_ctx *ctx, const char *what) {
    if (ctx && !*te_ctx_errmsg(ctx)) te_error(ctx, "%s: NULL operand", what);
    return NULL;
}

static bool scalar_int(const te_expr *e) { return te_dtype_is_int(e->dtype) && e->dtype.lanes == 1; }

/* A value stored to b at an index of `lanes` lanes: b's element type in
 * those lanes (bool buffers hold bools). */
static bool store_type_ok(const tir_buffer *b, const te_expr *value, int lanes) {
    return te_dtype_eq(value->dtype, te_dtype_with_lanes(b->dtype, lanes));
}

const char *tir_for_kind_name(tir_for_kind k) {
    switch (k) {
    case TIR_FOR_SERIAL: return "serial";
    case TIR_FOR_PARALLEL: return "parallel";
    case TIR_FOR_VECTORIZED: return "vectorized";
    case TIR_FOR_UNROLLED: return "unrolled";
    case TIR_FOR_THREAD: return "thread";
    }
    return "unknown";
}

tir_stmt *tir_for(te_ctx *ctx, te_expr *var, te_expr *min, te_expr *extent, tir_for_kind kind,
                  tir_stmt *body) {
    if (!ctx) return NULL;
    if (!var || !min || !extent || !body) return tir__null_operand(ctx, "for");
    if (var->kind != TE_VAR || !scalar_int(var)) {
        te_error(ctx, "for: the loop variable %s of type %s must be an integer variable",
                 te_expr_str(ctx, var), te_dtype_str(var->dtype));
        return NULL;
    }
    if (!scalar_int(min) || !scalar_int(extent)) {
        te_error(ctx, "for: loop '%s': min (%s) and extent (%s) must be scalar integers",
                 var->u.var.name, te_dtype_str(min->dtype), te_dtype_str(extent->dtype));
        return NULL;
    }
    tir_stmt *s = tir__new_stmt(ctx, TIR_FOR);
    if (!s) return NULL;
    s->u.loop.var = var;
    s->u.loop.min = min;
    s->u.loop.extent = extent;
    s->u.loop.for_kind = kind;
    s->u.loop.thread_tag = NULL;
    s->u.loop.auto_unroll_max_step = 0;
    s->u.loop.unroll_explicit = false;
    s->u.loop.body = body;
    return s;
}

tir_stmt *tir_for_with_body(te_ctx *ctx, const tir_stmt *s, tir_stmt *body) {
    if (!ctx) return NULL;
    if (!s || !body) return tir__null_operand(ctx, "for_with_body");
    if (s->kind != TIR_FOR) {
        te_error(ctx, "for_with_body: statement kind %d is not a loop", (int)s->kind);
        return NULL;
    }
    tir_stmt *n = tir__new_stmt(ctx, TIR_FOR);
    if (!n) return NULL;
    *n = *s;
    n->u.loop.body = body;
    return n;
}

/* The widest lane count of an access's indices (1 for scalars), or -1
 * with "<what>: ..." when one is missing or not an integer. */
static int index_lanes(te_ctx *ctx, const char *what, const tir_buffer *b, int ndim,
                       te_expr *const *indices) {
    int lanes = 1;
    for (int d = 0; d < ndim; ++d) {
        if (!indices[d]) {
            tir__null_operand(ctx, what);
            return -1;
        }
        if (!te_dtype_is_int(indices[d]->dtype)) {
            te_error(ctx, "%s: index %d of '%s' has type %s; it must be an integer", what, d,
                     b->name, te_dtype_str(indices[d]->dtype));
            return -1;
        }
        if (indices[d]->dtype.lanes > lanes) lanes = indices[d]->dtype.lanes;
    }
    return lanes;
}

tir_stmt *tir_buffer_store(te_ctx *ctx, tir_buffer *b, int ndim, te_expr *const *indices,
                           te_expr *value) {
    if (!ctx) return NULL;
    if (!b || !value || (ndim > 0 && !indices)) return tir__null_operand(ctx, "buffer_store");
    if (ndim < 0 || ndim > TE_MAX_DIMS) {
        te_error(ctx, "buffer_store: %d indices for buffer '%s'", ndim, b->name);
        return NULL;
    }
    if (ndim != b->ndim) {
        te_error(ctx, "buffer_store: %d indices for buffer '%s' of %d dimensions", ndim, b->name,
                 b->ndim);
        return NULL;
    }
    int lanes = index_lanes(ctx, "buffer_store", b, ndim, indices);
    if (lanes < 0) return NULL;
    if (!store_type_ok(b, value, lanes)) {
        te_error(ctx, "buffer_store: a %s value to '%s' (%s)", te_dtype_str(value->dtype), b->name,
                 te_dtype_str(b->dtype));
        return NULL;
    }
    tir_stmt *s = tir__new_stmt(ctx, TIR_BUFFER_STORE);
    te_expr **idx = te_alloc(ctx, sizeof *idx * (size_t)(ndim > 0 ? ndim : 1));
    if (!s || !idx) return NULL;
    if (ndim > 0) memcpy(idx, indices, sizeof *idx * (size_t)ndim);
    s->u.bstore.buffer = b;
    s->u.bstore.ndim = ndim;
    s->u.bstore.indices = idx;
    s->u.bstore.value = value;
    return s;
}

tir_stmt *tir_store(te_ctx *ctx, tir_buffer *b, te_expr *index, te_expr *value,
                    te_expr *predicate) {
    if (!ctx) return NULL;
    if (!b || !index || !value) return tir__null_operand(ctx, "store");
    if (!te_dtype_is_int(index->dtype)) {
        te_error(ctx, "store: the index of '%s' has type %s; it must be an integer", b->name,
                 te_dtype_str(index->dtype));
        return NULL;
    }
    if (!store_type_ok(b, value, index->dtype.lanes)) {
        te_error(ctx,
                 "store: a %s value to '%s' (%s) at an index of type %s; the value needs the "
                 "buffer's element type in the index's lanes",
                 te_dtype_str(value->dtype), b->name, te_dtype_str(b->dtype),
                 te_dtype_str(index->dtype));
        return NULL;
    }
    if (predicate && (!te_dtype_is_bool(predicate->dtype) ||
                      predicate->dtype.lanes != index->dtype.lanes)) {
        te_error(ctx, "store: the predicate of a store to '%s' has type %s; it must be bool of %d lanes",
                 b->name, te_dtype_str(predicate->dtype), index->dtype.lanes);
        return NULL;
    }
    tir_stmt *s = tir__new_stmt(ctx, TIR_STORE);
    if (!s) return NULL;
    s->u.store.buffer = b;
    s->u.store.index = index;
    s->u.store.value = value;
    s->u.store.predicate = predicate;
    return s;
}

tir_stmt *tir_allocate(te_ctx *ctx, tir_buffer *b, tir_stmt *body) {
    if (!ctx) return NULL;
    if (!b || !body) return tir__null_operand(ctx, "allocate");
    tir_stmt *s = tir__new_stmt(ctx, TIR_ALLOCATE);
    if (!s) return NULL;
    s->u.alloc.buffer = b;
    s->u.alloc.body = body;
    return s;
}

tir_stmt *tir_if(te_ctx *ctx, te_expr *cond, tir_stmt *then_s, tir_stmt *else_s) {
    if (!ctx) return NULL;
    if (!cond || !then_s) return tir__null_operand(ctx, "if");
    if (!te_dtype_is_bool(cond->dtype) || cond->dtype.lanes != 1) {
        te_error(ctx, "if: the condition has type %s; it must be a scalar bool",
                 te_dtype_str(cond->dtype));
        return NULL;
    }
    tir_stmt *s = tir__new_stmt(ctx, TIR_IF);
    if (!s) return NULL;
    s->u.if_.cond = cond;
    s->u.if_.then_s = then_s;
    s->u.if_.else_s = else_s;
    return s;
}

static int flat_count(const tir_stmt *s) {
    if (tir__is_noop(s)) return 0;
    if (s->kind != TIR_SEQ) return 1;
    int n = 0;
    for (int i = 0; i < s->u.seq.n; ++i) n += flat_count(s->u.seq.stmts[i]);
    return n;
}

static void flat_fill(tir_stmt *s, tir_stmt **out, int *k) {
    if (tir__is_noop(s)) return;
    if (s->kind != TIR_SEQ) {
        out[(*k)++] = s;
        return;
    }
    for (int i = 0; i < s->u.seq.n; ++i) flat_fill(s->u.seq.stmts[i], out, k);
}

tir_stmt *tir_seq(te_ctx *ctx, int n, tir_stmt *const *stmts) {
    if (!ctx) return NULL;
    if (n < 0 || (n > 0 && !stmts)) return tir__null_operand(ctx, "seq");
    int total = 0;
    for (int i = 0; i < n; ++i) {
        if (!stmts[i]) return tir__null_operand(ctx, "seq");
        total += flat_count(stmts[i]);
    }
    if (total == 0) return tir_noop(ctx);
    if (total == 1) {
        for (int i = 0; i < n; ++i) {
            tir_stmt *s = stmts[i];
            while (s->kind == TIR_SEQ) { /* the one non-NOOP inside */
                tir_stmt *next = NULL;
                for (int j = 0; j < s->u.seq.n && !next; ++j)
                    if (flat_count(s->u.seq.stmts[j])) next = s->u.seq.stmts[j];
                s = next;
            }
            if (!tir__is_noop(s)) return s;
        }
    }
    tir_stmt *s = tir__new_stmt(ctx, TIR_SEQ);
    tir_stmt **arr = te_alloc(ctx, sizeof *arr * (size_t)total);
    if (!s || !arr) return NULL;
    int k = 0;
    for (int i = 0; i < n; ++i) flat_fill(stmts[i], arr, &k);
    s->u.seq.n = k;
    s->u.seq.stmts = arr;
    return s;
}

tir_stmt *tir_evaluate(te_ctx *ctx, te_expr *value) {
    if (!ctx) return NULL;
    if (!value) return tir__null_operand(ctx, "evaluate");
    tir_stmt *s = tir__new_stmt(ctx, TIR_EVALUATE);
    if (s) s->u.eval.value = value;
    return s;
}

tir_stmt *tir_barrier(te_ctx *ctx) { return ctx ? tir__new_stmt(ctx, TIR_BARRIER) : NULL; }

tir_stmt *tir_allreduce(te_ctx *ctx, te_reduce_op op, te_expr *value, te_expr *result,
                        int64_t extent, tir_stmt *body) {
    if (!ctx) return NULL;
    if (!value || !result || !body) return tir__null_operand(ctx, "allreduce");
    te_dtype t = value->dtype;
    bool ok_type = t.lanes == 1 && ((t.code == TE_FLOAT && (t.bits == 32 || t.bits == 64)) ||
                                    (t.code == TE_INT && (t.bits == 32 || t.bits == 64)));
    if (!ok_type) {
        te_error(ctx, "allreduce: value of type %s; a cross-thread reduction needs int32, int64, "
                      "float32 or float64",
                 te_dtype_str(t));
        return NULL;
    }
    if (result->kind != TE_VAR || !te_dtype_eq(result->dtype, t)) {
        te_error(ctx, "allreduce: the result must be a variable of the value's type %s",
                 te_dtype_str(t));
        return NULL;
    }
    if (extent < 1) {
        te_error(ctx, "allreduce: extent %lld must be >= 1", (long long)extent);
        return NULL;
    }
    tir_stmt *s = tir__new_stmt(ctx, TIR_ALLREDUCE);
    if (!s) return NULL;
    s->u.allreduce.op = op;
    s->u.allreduce.value = value;
    s->u.allreduce.result = result;
    s->u.allreduce.extent = extent;
    s->u.allreduce.body = body;
    return s;
}

tir_stmt *tir_noop(te_ctx *ctx) { return ctx ? tir__new_stmt(ctx, TIR_NOOP) : NULL; }

tir_stmt *tir_let(te_ctx *ctx, te_expr *var, te_expr *value, tir_stmt *body) {
    if (!ctx) return NULL;
    if (!var || !value || !body) return tir__null_operand(ctx, "let");
    if (var->kind != TE_VAR || !te_dtype_eq(var->dtype, value->dtype)) {
        te_error(ctx, "let: the bound name must be a variable of the value's type %s",
                 te_dtype_str(value->dtype));
        return NULL;
    }
    tir_stmt *s = tir__new_stmt(ctx, TIR_LET);
    if (!s) return NULL;
    s->u.let.var = var;
    s->u.let.value = value;
    s->u.let.body = body;
    return s;
}

tir_stmt *tir_attr(te_ctx *ctx, const char *key, te_expr *value, tir_stmt *body) {
    if (!ctx) return NULL;
    if (!key || !body) return tir__null_operand(ctx, "attr");
    tir_stmt *s = tir__new_stmt(ctx, TIR_ATTR);
    const char *k = te_strdup(ctx, key);
    if (!s || !k) return NULL;
    s->u.attr.key = k;
    s->u.attr.value = value;
    s->u.attr.body = body;
    return s;
}

/* ---- loop-level expressions ---- */

static te_expr *new_expr(te_ctx *ctx, te_expr_kind kind, te_dtype t) {
    te_expr *e = te_alloc(ctx, sizeof *e);
    if (!e) return NULL;
    e->kind = kind;
    e->dtype = t;
    e->ctx = ctx;
    return e;
}

static te_ctx *buffer_ctx(const tir_buffer *b) { return b && b->data ? te_expr_ctx(b->data) : NULL; }

te_expr *tir_buffer_load(tir_buffer *b, int ndim, te_expr *const *indices) {
    te_ctx *ctx = buffer_ctx(b);
    if (!ctx) {
        for (int d = 0; d < ndim && indices && !ctx; ++d)
            if (indices[d]) ctx = te_expr_ctx(indices[d]);
        return ctx ? tir__null_operand(ctx, "buffer_load") : NULL;
    }
    if (ndim > 0 && !indices) return tir__null_operand(ctx, "buffer_load");
    if (ndim != b->ndim) {
        te_error(ctx, "buffer_load: buffer '%s' has %d dimensions, got %d indices", b->name,
                 b->ndim, ndim);
        return NULL;
    }
    int lanes = index_lanes(ctx, "buffer_load", b, ndim, indices);
    if (lanes < 0) return NULL;
    te_expr *e = new_expr(ctx, TE_BUFFER_LOAD, te_dtype_with_lanes(b->dtype, lanes));
    te_expr **idx = te_alloc(ctx, sizeof *idx * (size_t)(ndim > 0 ? ndim : 1));
    if (!e || !idx) return NULL;
    if (ndim > 0) memcpy(idx, indices, sizeof *idx * (size_t)ndim);
    e->u.bload.buffer = b;
    e->u.bload.ndim = ndim;
    e->u.bload.indices = idx;
    return e;
}

te_expr *tir_load(te_ctx *ctx, tir_buffer *b, te_expr *index, te_expr *predicate) {
    if (!ctx) return NULL;
    if (!b || !index) return tir__null_operand(ctx, "load");
    if (!te_dtype_is_int(index->dtype)) {
        te_error(ctx, "load: the index of '%s' has type %s; it must be an integer", b->name,
                 te_dtype_str(index->dtype));
        return NULL;
    }
    if (predicate && (!te_dtype_is_bool(predicate->dtype) ||
                      predicate->dtype.lanes != index->dtype.lanes)) {
        te_error(ctx, "load: the predicate of a load of '%s' has type %s; it must be bool of %d lanes",
                 b->name, te_dtype_str(predicate->dtype), index->dtype.lanes);
        return NULL;
    }
    te_expr *e = new_expr(ctx, TE_LOAD, te_dtype_with_lanes(b->dtype, index->dtype.lanes));
    if (!e) return NULL;
    e->u.load.buffer = b;
    e->u.load.index = index;
    e->u.load.predicate = predicate;
    return e;
}

te_expr *tir_ramp(te_expr *base, te_expr *stride, int lanes) {
    te_ctx *ctx = base ? te_expr_ctx(base) : stride ? te_expr_ctx(stride) : NULL;
    if (!ctx) return NULL;
    if (!base || !stride) return tir__null_operand(ctx, "ramp");
    if (lanes < 1 || lanes > 65535) {
        te_error(ctx, "ramp: %d lanes; a vector has 1 to 65535 lanes", lanes);
        return NULL;
    }
    if (base->dtype.lanes != 1 || stride->dtype.lanes != 1 || !te_dtype_is_int(base->dtype)) {
        te_error(ctx, "ramp: base %s and stride %s must be scalar integers",
                 te_dtype_str(base->dtype), te_dtype_str(stride->dtype));
        return NULL;
    }
    if (!te_dtype_eq(base->dtype, stride->dtype)) {
        /* An immediate stride takes the base's type, as in te_add. */
        stride = stride->kind == TE_INT_IMM ? te_int_t(ctx, base->dtype, stride->u.ival)
                                            : te_cast(base->dtype, stride);
        if (!stride) return NULL;
    }
    te_expr *e = new_expr(ctx, TE_RAMP, te_dtype_with_lanes(base->dtype, lanes));
    if (!e) return NULL;
    e->u.ramp.base = base;
    e->u.ramp.stride = stride;
    e->u.ramp.lanes = lanes;
    return e;
}

te_expr *tir_broadcast(te_expr *value, int lanes) {
    if (!value) return NULL;
    te_ctx *ctx = te_expr_ctx(value);
    if (lanes < 1 || lanes > 65535) {
        te_error(ctx, "broadcast: %d lanes; a vector has 1 to 65535 lanes", lanes);
        return NULL;
    }
    if (value->dtype.lanes != 1) {
        te_error(ctx, "broadcast: value of type %s must be a scalar", te_dtype_str(value->dtype));
        return NULL;
    }
    te_expr *e = new_expr(ctx, TE_BROADCAST, te_dtype_with_lanes(value->dtype, lanes));
    if (!e) return NULL;
    e->u.bcast.value = value;
    e->u.bcast.lanes = lanes;
    return e;
}

const char *tir_tensor_intrin_name(tir_tensor_intrin k) {
    static const char *const names[] = {"wmma.fill",  "wmma.load_a", "wmma.load_b",
                                        "wmma.mma",   "wmma.store",  "wgmma.fill",
                                        "wgmma.mma",  "wgmma.store", "x86.dpbf16"};
    return (int)k >= 0 && k < TIR_TENSOR_INTRIN_COUNT ? names[k] : "unknown";
}

int tir_tensor_intrin_nargs(tir_tensor_intrin k) {
    switch (k) {
    case TIR_WMMA_FILL:
    case TIR_WGMMA_FILL: return 1;
    case TIR_WMMA_MMA:
    case TIR_WGMMA_MMA:
    case TIR_X86_DPBF16: return 3;
    case TIR_WGMMA_STORE:
    case TIR_WMMA_LOAD_A:
    case TIR_WMMA_LOAD_B:
    case TIR_WMMA_STORE: return 2;
    default: return 0;
    }
}

int tir_wmma_k(te_dtype t) { return t.bits == 32 ? 8 : 16; }

tir_stmt *tir_tensor_call(te_ctx *ctx, tir_tensor_intrin k, int nargs, te_expr *const *args,
                          const int64_t *ld, const bool *col_major) {
    if (!ctx) return NULL;
    if ((int)k < 0 || k >= TIR_TENSOR_INTRIN_COUNT) {
        te_error(ctx, "tensor_call: unknown intrinsic %d", (int)k);
        return NULL;
    }
    if (nargs != tir_tensor_intrin_nargs(k)) {
        te_error(ctx, "tensor_call: %s takes %d operands, not %d", tir_tensor_intrin_name(k),
                 tir_tensor_intrin_nargs(k), nargs);
        return NULL;
    }
    if (!args) return tir__null_operand(ctx, "tensor_call");
    for (int i = 0; i < nargs; i++) {
        if (!args[i]) return tir__null_operand(ctx, "tensor_call");
        if (args[i]->kind != TE_BUFFER_LOAD && args[i]->kind != TE_LOAD) {
            te_error(ctx, "tensor_call: operand %d of %s must be a buffer load (the tile's first "
                          "element), not %s",
                     i, tir_tensor_intrin_name(k), te_expr_kind_name(args[i]->kind));
            return NULL;
        }
    }
    tir_stmt *s = tir__new_stmt(ctx, TIR_TENSOR_CALL);
    if (!s) return NULL;
    s->u.tcall.intrin = k;
    s->u.tcall.nargs = nargs;
    for (int i = 0; i < nargs; i++) {
        s->u.tcall.args[i] = args[i];
        s->u.tcall.ld[i] = ld ? ld[i] : 0;
        s->u.tcall.col_major[i] = col_major ? col_major[i] : false;
    }
    return s;
}
