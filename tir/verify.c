/*
 * tir/verify.c — the IR verifier the lowering list runs after each of its
 * passes in Debug builds (LOOM_VERIFY_IR), so that a pass that breaks the
 * program is named where it broke it rather than by a crash or a wrong
 * answer in code generation (Halide's IR checks after each lowering step,
 * TVM's VerifyMemory/VerifyWellFormed).
 *
 * Range checks must never reject a correct program: the analyser's bounds
 * are sound but loose when a loop's extent depends on an outer loop, and
 * know nothing of the guard that protects an access. So an access under
 * a guard (IF, select, likely, predicate) is not range-checked (loop
 * partitioning even leaves dead tails whose guard is never true); an
 * affine index under loops of constant bounds is rejected when any of its
 * values falls outside its buffer, any other index only when every value
 * does.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tir/tir_internal.h"

typedef struct {
    te_ctx *ctx;
    const tir_func *f;
    bool gpu, ranges;
    te_analyzer *an;
    const tir_stmt *at;       /* the statement being checked (for messages) */
    /* Buffers in scope: the parameters, then the enclosing ALLOCATEs. */
    const tir_buffer **bufs;
    int nbufs, capbufs;
    /* Variables bound around the statement (loops, LET, ALLREDUCE). */
    const te_expr **vars;
    int nvars, capvars;
    int guarded;     /* IFs, selects, predicates around the access */
    int inexact;     /* loops around it whose bounds are not constants */
    int threads;     /* thread-bound loops around it */
    bool oom;
    char msg[512];
} verifier;

static bool grow(verifier *V, void *arrp, int n, int *cap) {
    void **arr = arrp;
    if (n < *cap) return true;
    int nc = *cap ? 2 * *cap : 16;
    void *p = te_alloc(V->ctx, sizeof(void *) * (size_t)nc);
    if (!p) {
        V->oom = true;
        return false;
    }
    if (n) memcpy(p, *arr, sizeof(void *) * (size_t)n);
    *arr = p;
    *cap = nc;
    return true;
}

/* Records the first failure; returns 1 so that the walk ends. */
static int fail(verifier *V, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(verifier *V, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(V->msg, sizeof V->msg, fmt, ap);
    va_end(ap);
    return 1;
}

static const char *estr(verifier *V, const te_expr *e) {
    const char *s = te_expr_str(V->ctx, e);
    return s ? s : "?";
}

static bool declared(const verifier *V, const tir_buffer *b) {
    for (int i = V->nbufs - 1; i >= 0; i--)
        if (V->bufs[i] == b) return true;
    return false;
}

static bool in_scope(const verifier *V, const te_expr *var) {
    for (int i = V->nvars - 1; i >= 0; i--)
        if (V->vars[i] == var) return true;
    return false;
}

/* Constant bounds of an index (RAMP lanes included), simplified first
 * when `simplify`: bounds of a sum lose the correlation of its terms
 * (floordiv(4*o + i, 16) - floordiv(o, 4) with i < 4). */
static void index_bounds(verifier *V, const te_expr *idx, bool simplify, int64_t *lo,
                         int64_t *hi) {
    te_expr *e = (te_expr *)(idx->kind == TE_RAMP ? idx->u.ramp.base : idx);
    if (simplify) e = te_analyzer_simplify(V->an, e);
    if (idx->kind != TE_RAMP) {
        te_analyzer_const_bound(V->an, e, lo, hi);
        return;
    }
    int64_t blo, bhi, slo, shi;
    te_analyzer_const_bound(V->an, e, &blo, &bhi);
    te_analyzer_const_bound(V->an, idx->u.ramp.stride, &slo, &shi);
    int64_t n = idx->u.ramp.lanes - 1;
    if (slo != shi || blo <= -TIR_BIND_LIMIT || bhi >= TIR_BIND_LIMIT || slo <= -TIR_BIND_LIMIT ||
        slo >= TIR_BIND_LIMIT) {
        *lo = INT64_MIN, *hi = INT64_MAX;
        return;
    }
    *lo = blo + (slo < 0 ? slo * n : 0);
    *hi = bhi + (slo > 0 ? slo * n : 0);
}

/* Whether the index is affine in the variables in scope (each loop
 * taking every value of its constant range independently of the others:
 * then its bounds are exact). */
static bool affine(verifier *V, const te_expr *idx, bool simplify) {
    int64_t coef[64], k;
    te_expr *e = (te_expr *)(idx->kind == TE_RAMP ? idx->u.ramp.base : idx);
    if (V->nvars > 64) return false;
    if (simplify) e = te_analyzer_simplify(V->an, e);
    return e && te_affine_form(e, V->nvars, (te_expr *const *)V->vars, coef, &k);
}

static bool outside(verifier *V, const te_expr *idx, int64_t size, bool simplify, int64_t *lo,
                    int64_t *hi) {
    index_bounds(V, idx, simplify, lo, hi);
    if (!V->inexact && affine(V, idx, simplify))
        return (*lo < 0 && *lo != INT64_MIN) || (*hi >= size && *hi != INT64_MAX);
    return *hi < 0 || (*lo >= size && *lo != INT64_MIN);
}

/* Index idx of dimension `dim` (-1: the flat index) of buffer b, which
 * holds `size` elements along it. */
static int check_range(verifier *V, const tir_buffer *b, int dim, const te_expr *idx,
                       int64_t size) {
    /* Under a guard even an access outside on every iteration can be
     * correct: dead code whose guard is never true (the tails loop
     * partitioning leaves for simplify to drop). */
    if (V->guarded || !V->ranges) return 0;
    int64_t lo, hi;
    /* Simplifying costs: only to confirm what the plain bounds suggest. */
    if (!outside(V, idx, size, false, &lo, &hi) || !outside(V, idx, size, true, &lo, &hi))
        return 0;
    char where[32] = "";
    if (dim >= 0) snprintf(where, sizeof where, " dimension %d", dim);
    return fail(V,
                "access outside its buffer: '%s'%s holds %lld elements, index %s takes values "
                "in [%lld, %lld]",
                b->name, where, (long long)size, estr(V, idx), (long long)lo, (long long)hi);
}

static int check_buffer(verifier *V, const tir_buffer *b) {
    if (declared(V, b)) return 0;
    return fail(V, "access to buffer '%s', which is neither a parameter nor allocated around it",
                b->name);
}

static int check_expr(verifier *V, const te_expr *e);

typedef struct {
    verifier *V;
    int rc;
} child_ctx;

static void child(const te_expr *c, void *user) {
    child_ctx *cc = user;
    if (!cc->rc && c) cc->rc = check_expr(cc->V, c);
}

static int children(verifier *V, const te_expr *e) {
    child_ctx cc = {V, 0};
    te_expr_visit_children(e, child, &cc);
    return cc.rc;
}

static int guarded_expr(verifier *V, const te_expr *e) {
    V->guarded++;
    int rc = e ? check_expr(V, e) : 0;
    V->guarded--;
    return rc;
}

static int bad_type(verifier *V, const te_expr *e, const char *rule) {
    return fail(V, "type mismatch: %s %s of type %s: %s", te_expr_kind_name(e->kind),
                estr(V, e), te_dtype_str(e->dtype), rule);
}

static int check_expr(verifier *V, const te_expr *e) {
    te_dtype t = e->dtype;
    switch (e->kind) {
    case TE_INT_IMM:
    case TE_FLOAT_IMM: return 0;
    case TE_VAR:
        if (t.code == TE_HANDLE || in_scope(V, e)) return 0;
        return fail(V, "variable '%s' is used outside the loop or let that defines it",
                    e->u.var.name);
    case TE_ADD: case TE_SUB: case TE_MUL: case TE_DIV: case TE_FLOORDIV: case TE_FLOORMOD:
    case TE_MIN: case TE_MAX:
        if (!te_dtype_eq(e->u.bin.a->dtype, t) || !te_dtype_eq(e->u.bin.b->dtype, t))
            return bad_type(V, e, "both operands must have the result's type");
        break;
    case TE_EQ: case TE_NE: case TE_LT: case TE_LE: case TE_GT: case TE_GE:
        if (!te_dtype_eq(e->u.bin.a->dtype, e->u.bin.b->dtype) || !te_dtype_is_bool(t) ||
            t.lanes != e->u.bin.a->dtype.lanes)
            return bad_type(V, e, "operands of one type, a bool result of their lanes");
        break;
    case TE_AND: case TE_OR:
        if (!te_dtype_is_bool(t) || !te_dtype_eq(e->u.bin.a->dtype, t) ||
            !te_dtype_eq(e->u.bin.b->dtype, t))
            return bad_type(V, e, "bool operands of the result's lanes");
        break;
    case TE_NOT:
        if (!te_dtype_is_bool(t) || !te_dtype_eq(e->u.un.a->dtype, t))
            return bad_type(V, e, "a bool operand of the result's lanes");
        break;
    case TE_CAST:
        if (e->u.un.a->dtype.lanes != t.lanes)
            return bad_type(V, e, "a cast keeps the lanes");
        break;
    case TE_SELECT: {
        te_dtype c = e->u.sel.cond->dtype;
        if (!te_dtype_is_bool(c) || (c.lanes != 1 && c.lanes != t.lanes) ||
            !te_dtype_eq(e->u.sel.t->dtype, t) || !te_dtype_eq(e->u.sel.f->dtype, t))
            return bad_type(V, e, "a bool condition, both values of the result's type");
        int rc = check_expr(V, e->u.sel.cond);
        if (!rc) rc = guarded_expr(V, e->u.sel.t);
        if (!rc) rc = guarded_expr(V, e->u.sel.f);
        return rc;
    }
    case TE_CALL:
        for (int i = 0; i < e->u.call.nargs; i++)
            if (e->u.call.args[i]->dtype.lanes != t.lanes)
                return bad_type(V, e, "arguments of the result's lanes");
        if (e->u.call.op == TE_INTRIN_LIKELY) return guarded_expr(V, e->u.call.args[0]);
        break;
    case TE_READ:
    case TE_REDUCE:
        return fail(V, "tensor-level expression %s left in the loop program", estr(V, e));
    case TE_BUFFER_LOAD: {
        const tir_buffer *b = e->u.bload.buffer;
        if (check_buffer(V, b)) return 1;
        if (e->u.bload.ndim != b->ndim)
            return fail(V, "load of '%s' with %d indices; the buffer has %d dimensions", b->name,
                        e->u.bload.ndim, b->ndim);
        if (!te_dtype_eq(te_dtype_element(t), b->dtype))
            return bad_type(V, e, "a load has its buffer's element type");
        for (int d = 0; d < b->ndim; d++)
            if (check_range(V, b, d, e->u.bload.indices[d], b->shape[d])) return 1;
        break;
    }
    case TE_LOAD: {
        const tir_buffer *b = e->u.load.buffer;
        const te_expr *idx = e->u.load.index, *p = e->u.load.predicate;
        if (check_buffer(V, b)) return 1;
        if (!te_dtype_is_int(idx->dtype) ||
            !te_dtype_eq(t, te_dtype_with_lanes(b->dtype, idx->dtype.lanes)))
            return bad_type(V, e, "an integer index, the buffer's element type in its lanes");
        if (p && (!te_dtype_is_bool(p->dtype) || p->dtype.lanes != t.lanes))
            return bad_type(V, e, "a bool predicate of the load's lanes");
        if (p) V->guarded++;
        int rc = check_range(V, b, -1, idx, tir_buffer_size(b));
        if (p) V->guarded--;
        if (rc) return rc;
        break;
    }
    case TE_RAMP:
        if (!te_dtype_is_int(t) || t.lanes != e->u.ramp.lanes ||
            !te_dtype_eq(e->u.ramp.base->dtype, te_dtype_element(t)) ||
            !te_dtype_eq(e->u.ramp.stride->dtype, te_dtype_element(t)))
            return bad_type(V, e, "scalar integer base and stride of its element type");
        break;
    case TE_BROADCAST:
        if (t.lanes != e->u.bcast.lanes ||
            !te_dtype_eq(e->u.bcast.value->dtype, te_dtype_element(t)))
            return bad_type(V, e, "a scalar value of its element type");
        break;
    default: break;
    }
    return children(V, e);
}

static int expr_fn(tir_visitor *v, const te_expr *e) {
    verifier *V = v->user;
    return e ? check_expr(V, e) : 0;
}

/* The first line of s as the printer writes it. */
static void stmt_line(verifier *V, const tir_stmt *s, char *out, size_t cap) {
    te_str text;
    te_str_init(&text);
    tir_stmt_print(&text, s, 0);
    const char *t = text.data ? text.data : "";
    size_t n = strcspn(t, "\n");
    if (n >= cap) n = cap - 4, snprintf(out, cap, "%.*s...", (int)n, t);
    else snprintf(out, cap, "%.*s", (int)n, t);
    te_str_free(&text);
    (void)V;
}

static int push_var(verifier *V, const te_expr *var, const char *what) {
    if (!var || var->kind != TE_VAR)
        return fail(V, "the %s binds %s, which is not a variable", what,
                    var ? estr(V, var) : "nothing");
    if (in_scope(V, var))
        return fail(V, "variable '%s' is defined again inside its own %s", var->u.var.name,
                    what);
    if (!grow(V, &V->vars, V->nvars, &V->capvars)) return 1;
    V->vars[V->nvars++] = var;
    return 0;
}

static int scalar_int(const te_expr *e) { return te_dtype_is_int(e->dtype) && e->dtype.lanes == 1; }

static int visit_for(tir_visitor *v, const tir_stmt *s) {
    verifier *V = v->user;
    V->at = s;
    if (push_var(V, s->u.loop.var, "loop")) return 1;
    if (!scalar_int(s->u.loop.var) || !scalar_int(s->u.loop.min) || !scalar_int(s->u.loop.extent))
        return fail(V, "type mismatch: loop '%s' needs a scalar integer variable, min and extent",
                    s->u.loop.var->u.var.name);
    int64_t v0;
    bool exact = te_is_const_int(s->u.loop.min, &v0) && te_is_const_int(s->u.loop.extent, &v0);
    bool thread = s->u.loop.for_kind == TIR_FOR_THREAD;
    V->inexact += !exact;
    V->threads += thread;
    int rc = tir_visit_children(v, s);
    V->inexact -= !exact;
    V->threads -= thread;
    if (!rc) V->nvars--;
    return rc;
}

static int visit_let(tir_visitor *v, const tir_stmt *s) {
    verifier *V = v->user;
    V->at = s;
    const te_expr *var = s->kind == TIR_LET ? s->u.let.var : s->u.allreduce.result;
    const te_expr *val = s->kind == TIR_LET ? s->u.let.value : s->u.allreduce.value;
    /* The value is evaluated outside the binding. */
    if (check_expr(V, val)) return 1;
    if (push_var(V, var, s->kind == TIR_LET ? "let" : "allreduce")) return 1;
    if (!te_dtype_eq(var->dtype, val->dtype))
        return fail(V, "type mismatch: '%s' of type %s bound to a value of type %s",
                    var->u.var.name, te_dtype_str(var->dtype), te_dtype_str(val->dtype));
    /* The body alone: the value was checked outside the binding. */
    int rc = tir_visit(v, s->kind == TIR_LET ? s->u.let.body : s->u.allreduce.body);
    if (!rc) V->nvars--;
    return rc;
}

static int visit_alloc(tir_visitor *v, const tir_stmt *s) {
    verifier *V = v->user;
    V->at = s;
    const tir_buffer *b = s->u.alloc.buffer;
    if (declared(V, b))
        return fail(V, "buffer '%s' is allocated again inside its own scope", b->name);
    if (!grow(V, &V->bufs, V->nbufs, &V->capbufs)) return 1;
    V->bufs[V->nbufs++] = b;
    int rc = tir_visit_children(v, s);
    if (!rc) V->nbufs--;
    return rc;
}

static int visit_if(tir_visitor *v, const tir_stmt *s) {
    verifier *V = v->user;
    V->at = s;
    const te_expr *c = s->u.if_.cond;
    if (!te_dtype_is_bool(c->dtype) || c->dtype.lanes != 1)
        return fail(V, "type mismatch: the condition %s of type %s must be a scalar bool",
                    estr(V, c), te_dtype_str(c->dtype));
    if (check_expr(V, c)) return 1;
    V->guarded++;
    int rc = tir_visit(v, s->u.if_.then_s);
    if (!rc && s->u.if_.else_s) rc = tir_visit(v, s->u.if_.else_s);
    V->guarded--;
    return rc;
}

static int gpu_store(verifier *V, const tir_buffer *b) {
    if (!V->gpu || V->threads) return 0;
    return fail(V, "store to '%s' outside any thread-bound loop of a GPU function", b->name);
}

static int visit_store(tir_visitor *v, const tir_stmt *s) {
    verifier *V = v->user;
    V->at = s;
    const tir_buffer *b = s->u.store.buffer;
    const te_expr *idx = s->u.store.index, *val = s->u.store.value, *p = s->u.store.predicate;
    if (check_buffer(V, b) || gpu_store(V, b)) return 1;
    if (!te_dtype_is_int(idx->dtype) ||
        !te_dtype_eq(val->dtype, te_dtype_with_lanes(b->dtype, idx->dtype.lanes)))
        return fail(V,
                    "type mismatch: a store to '%s' (%s) of a %s value at an index of type %s; "
                    "the value needs the buffer's element type in the index's lanes",
                    b->name, te_dtype_str(b->dtype), te_dtype_str(val->dtype),
                    te_dtype_str(idx->dtype));
    if (p && (!te_dtype_is_bool(p->dtype) || p->dtype.lanes != idx->dtype.lanes))
        return fail(V, "type mismatch: the predicate of a store to '%s' is %s, not bool of %d lanes",
                    b->name, te_dtype_str(p->dtype), idx->dtype.lanes);
    if (p) V->guarded++;
    int rc = check_range(V, b, -1, idx, tir_buffer_size(b));
    if (p) V->guarded--;
    return rc ? rc : tir_visit_children(v, s);
}

static int visit_bstore(tir_visitor *v, const tir_stmt *s) {
    verifier *V = v->user;
    V->at = s;
    const tir_buffer *b = s->u.bstore.buffer;
    if (check_buffer(V, b) || gpu_store(V, b)) return 1;
    if (s->u.bstore.ndim != b->ndim)
        return fail(V, "store to '%s' with %d indices; the buffer has %d dimensions", b->name,
                    s->u.bstore.ndim, b->ndim);
    if (!te_dtype_eq(te_dtype_element(s->u.bstore.value->dtype), b->dtype))
        return fail(V, "type mismatch: a store to '%s' (%s) of a %s value", b->name,
                    te_dtype_str(b->dtype), te_dtype_str(s->u.bstore.value->dtype));
    for (int d = 0; d < b->ndim; d++)
        if (check_range(V, b, d, s->u.bstore.indices[d], b->shape[d])) return 1;
    return tir_visit_children(v, s);
}

static int pre(tir_visitor *v, const tir_stmt *s) {
    ((verifier *)v->user)->at = s;
    return 0;
}

int tir_verify(te_ctx *ctx, const tir_func *f, const tir_verify_options *opts) {
    if (!ctx) return -1;
    if (!f || !f->body) return te_error(ctx, "verify: the function%s is NULL", f ? "'s body" : "");
    verifier V = {.ctx = ctx, .f = f, .gpu = opts && opts->gpu,
                  .ranges = !(opts && opts->skip_ranges)};
    V.an = te_analyzer_new(ctx);
    if (!V.an) return -1;
    for (int i = 0; i < f->nparams && !V.oom; i++)
        if (grow(&V, &V.bufs, V.nbufs, &V.capbufs)) V.bufs[V.nbufs++] = f->params[i];
    tir_visitor v = {.user = &V, .pre = pre, .expr = expr_fn, .an = V.an};
    v.kind[TIR_FOR] = visit_for;
    v.kind[TIR_LET] = visit_let;
    v.kind[TIR_ALLREDUCE] = visit_let;
    v.kind[TIR_ALLOCATE] = visit_alloc;
    v.kind[TIR_IF] = visit_if;
    v.kind[TIR_STORE] = visit_store;
    v.kind[TIR_BUFFER_STORE] = visit_bstore;
    int rc = V.oom ? 1 : tir_visit(&v, f->body);
    te_analyzer_free(V.an);
    if (V.oom) return te_error(ctx, "verify: out of memory on function '%s'", f->name);
    if (!rc) return 0;
    char line[200] = "";
    if (V.at) stmt_line(&V, V.at, line, sizeof line);
    return te_error(ctx, "%s, in statement `%s`", V.msg, line);
}
