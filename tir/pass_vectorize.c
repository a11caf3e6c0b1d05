/*
 * tir/pass_vectorize.c — VECTORIZED loops become vector code (TVM
 * VectorizeLoop, Halide VectorizeLoops).
 *
 * A loop `for (v, min, L) vectorized` whose body is straight-line code is
 * replaced by its body with v := ramp(min, 1, L): every expression that
 * depends on v becomes an L-lane vector (scalar operands beside it are
 * broadcast), loads at vector indices become vector loads (a RAMP index is
 * a contiguous or strided access, anything else a gather), and stores get
 * vector indices and values. Ramp arithmetic is folded while building, so
 * `ramp(b, 1, L)*4 + c` becomes `ramp(b*4 + c, 4, L)`.
 *
 * A loop of more than 16 lanes that is not a power of two is vectorized in
 * pieces of the widest power of two up to 16 that divides it, one after
 * the other (48 lanes: three of 16), so that no backend sees a vector LLVM
 * must widen.
 *
 * An IF whose condition does not depend on v stays an IF around vector
 * code. One whose condition depends on v is predicated: the condition
 * becomes a lane mask on every store inside it, and on every load there
 * that the analyser cannot prove inside its buffer (so a guard protecting
 * an out-of-bounds read still protects it, and in-bounds reads stay plain
 * vector or scalar loads). A mask that reads memory the guarded code
 * writes is refused, since it is re-evaluated at each store.
 *
 * What cannot be vectorized leaves the loop SERIAL, with the reason as one
 * line in `why`: inner loops, stores whose index does not depend on v but
 * whose effect does (reductions), non-constant extents, allocations and
 * effects in the body.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "loom/tir.h"

/* Widest vector the backends are asked for. */
#define VEC_MAX_LANES 64

typedef struct {
    te_ctx *ctx;
    const te_expr *var; /* the loop variable */
    te_expr *ramp;      /* what var becomes */
    int lanes;
    const tir_stmt *loop;
    te_analyzer *an;    /* modular facts of ramp bases */
    char reason[512];   /* why the loop stays scalar ("" while fine) */
    tir_mutator body;   /* the walk of the loop's body (vec_stmt) */
    te_expr *pred;      /* the lane mask in force there (NULL: none) */
} vec_state;

static const char *loop_name(const tir_stmt *loop) {
    const te_expr *v = loop->u.loop.var;
    return v && v->kind == TE_VAR && v->u.var.name ? v->u.var.name : "?";
}

static void refuse(vec_state *st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void refuse(vec_state *st, const char *fmt, ...) {
    if (st->reason[0]) return; /* the first reason is the one worth reading */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->reason, sizeof st->reason, fmt, ap);
    va_end(ap);
}

/* ramp(base, stride, lanes) with base and stride simplified, so indices
 * read as the affine forms they are. */
static te_expr *mk_ramp(vec_state *st, te_expr *base, te_expr *stride) {
    if (!base || !stride) return NULL;
    return tir_ramp(te_simplify(st->ctx, base), te_simplify(st->ctx, stride), st->lanes);
}

static bool is_vec(const te_expr *e) { return e && e->dtype.lanes > 1; }

static te_expr *bcast(vec_state *st, te_expr *e) {
    if (!e || is_vec(e)) return e;
    return tir_broadcast(e, st->lanes);
}

/* ---- expressions ---- */

static te_expr *vec_expr(vec_state *st, te_expr *e, te_expr *pred);

static te_expr *build_bin(te_expr_kind k, te_expr *a, te_expr *b) {
    switch (k) {
    case TE_ADD: return te_add(a, b);
    case TE_SUB: return te_sub(a, b);
    case TE_MUL: return te_mul(a, b);
    case TE_DIV: return te_div(a, b);
    case TE_FLOORDIV: return te_floordiv(a, b);
    case TE_FLOORMOD: return te_floormod(a, b);
    case TE_MIN: return te_min(a, b);
    case TE_MAX: return te_max(a, b);
    case TE_EQ: return te_eq(a, b);
    case TE_NE: return te_ne(a, b);
    case TE_LT: return te_lt(a, b);
    case TE_LE: return te_le(a, b);
    case TE_GT: return te_gt(a, b);
    case TE_GE: return te_ge(a, b);
    case TE_AND: return te_and(a, b);
    case TE_OR: return te_or(a, b);
    default: return NULL;
    }
}

/* floordiv/floormod(ramp(b, s, L), c) when it is again a ramp or a
 * broadcast: c divides s, or all lanes provably share one quotient (the
 * fused-index patterns of fuse-then-vectorize). NULL when neither. */
static te_expr *div_ramp(vec_state *st, te_expr_kind k, te_expr *r, int64_t c) {
    te_expr *base = r->u.ramp.base;
    int64_t s;
    if (!te_is_const_int(r->u.ramp.stride, &s)) return NULL;
    te_expr *cc = te_int_t(st->ctx, base->dtype, c);
    if (s % c == 0) {
        if (k == TE_FLOORDIV)
            return mk_ramp(st, te_floordiv(base, cc), te_int_t(st->ctx, base->dtype, s / c));
        return bcast(st, te_simplify(st->ctx, te_floormod(base, cc)));
    }
    if (s < 0 || !st->an) return NULL;
    int64_t coeff, rem;
    te_analyzer_modular(st->an, base, &coeff, &rem);
    if (coeff == 0) rem = ((rem % c) + c) % c;
    else if (coeff % c == 0) rem %= c;
    else return NULL;
    if (rem + s * (st->lanes - 1) >= c) return NULL;
    if (k == TE_FLOORDIV) return bcast(st, te_simplify(st->ctx, te_floordiv(base, cc)));
    return mk_ramp(st, te_floormod(base, cc), r->u.ramp.stride);
}

/* a (op) b with at least one vector side; ramps folded where exact. */
static te_expr *vec_bin(vec_state *st, te_expr_kind k, te_expr *a, te_expr *b) {
    bool ra = a->kind == TE_RAMP, rb = b->kind == TE_RAMP;
    bool ints = te_dtype_is_int(a->dtype);
    if (ints && (k == TE_ADD || k == TE_SUB)) {
        if (ra && rb)
            return mk_ramp(st, build_bin(k, a->u.ramp.base, b->u.ramp.base),
                           build_bin(k, a->u.ramp.stride, b->u.ramp.stride));
        if (ra && !is_vec(b))
            return mk_ramp(st, build_bin(k, a->u.ramp.base, b), a->u.ramp.stride);
        if (rb && !is_vec(a)) {
            te_expr *stride = k == TE_ADD ? b->u.ramp.stride
                                          : te_sub(te_int_t(st->ctx, b->u.ramp.stride->dtype, 0),
                                                   b->u.ramp.stride);
            return mk_ramp(st, build_bin(k, a, b->u.ramp.base), stride);
        }
    }
    if (ints && k == TE_MUL) {
        if (ra && !is_vec(b))
            return mk_ramp(st, te_mul(a->u.ramp.base, b), te_mul(a->u.ramp.stride, b));
        if (rb && !is_vec(a))
            return mk_ramp(st, te_mul(a, b->u.ramp.base), te_mul(a, b->u.ramp.stride));
    }
    int64_t c;
    if (ints && ra && (k == TE_FLOORDIV || k == TE_FLOORMOD) && te_is_const_int(b, &c) && c > 0) {
        te_expr *r = div_ramp(st, k, a, c);
        if (r) return r;
    }
    return build_bin(k, bcast(st, a), bcast(st, b));
}

/* Bounds [*lo, *hi] of every lane of vector or scalar index idx, with the
 * enclosing loops' ranges bound in the analyser: a RAMP of constant
 * stride, a broadcast, and sums, minima and maxima of those and their
 * products by a constant >= 0 (a clamped ramp: a padding's read, or a
 * clamped channel times its stride). False when idx has another form. */
static bool lane_bounds(vec_state *st, const te_expr *idx, int64_t *lo, int64_t *hi) {
    int64_t a0, a1, b0, b1, stride;
    if (!is_vec(idx)) {
        te_analyzer_const_bound(st->an, (te_expr *)idx, lo, hi);
        return true;
    }
    switch (idx->kind) {
    case TE_RAMP: {
        if (!te_is_const_int(idx->u.ramp.stride, &stride)) return false;
        te_expr *last = te_add(idx->u.ramp.base,
                               te_int_t(st->ctx, idx->u.ramp.base->dtype, stride * (st->lanes - 1)));
        if (!last) return false;
        te_analyzer_const_bound(st->an, idx->u.ramp.base, &a0, &a1);
        te_analyzer_const_bound(st->an, last, &b0, &b1);
        *lo = a0 < b0 ? a0 : b0;
        *hi = a1 > b1 ? a1 : b1;
        return true;
    }
    case TE_BROADCAST: return lane_bounds(st, idx->u.bcast.value, lo, hi);
    case TE_ADD:
    case TE_MUL:
    case TE_MIN:
    case TE_MAX:
        if (!lane_bounds(st, idx->u.bin.a, &a0, &a1) || !lane_bounds(st, idx->u.bin.b, &b0, &b1))
            return false;
        if (idx->kind == TE_MUL) {
            /* by a constant >= 0 (a clamped channel times its stride) */
            if (b0 != b1 || b0 < 0) {
                int64_t t0 = a0, t1 = a1;
                a0 = b0, a1 = b1, b0 = t0, b1 = t1;
            }
            if (b0 != b1 || b0 < 0 || __builtin_mul_overflow(a0, b0, lo) ||
                __builtin_mul_overflow(a1, b0, hi))
                return false;
        } else if (idx->kind == TE_ADD) {
            if (__builtin_add_overflow(a0, b0, lo) || __builtin_add_overflow(a1, b1, hi))
                return false;
        } else if (idx->kind == TE_MIN) {
            *lo = a0 < b0 ? a0 : b0;
            *hi = a1 < b1 ? a1 : b1;
        } else {
            *lo = a0 > b0 ? a0 : b0;
            *hi = a1 > b1 ? a1 : b1;
        }
        return true;
    default: return false;
    }
}

/* True when every lane of idx provably lies in buffer b (lane_bounds). */
static bool in_bounds(vec_state *st, const tir_buffer *b, te_expr *idx) {
    int64_t size = tir_buffer_size(b), lo, hi;
    if (!st->an || size <= 0) return false;
    return lane_bounds(st, idx, &lo, &hi) && lo >= 0 && hi < size;
}

/* A LOAD (or a scalar load that must be masked) at the vectorized index. */
static te_expr *vec_load(vec_state *st, te_expr *e, te_expr *pred) {
    te_expr *idx = vec_expr(st, e->u.load.index, pred);
    te_expr *lp = e->u.load.predicate ? vec_expr(st, e->u.load.predicate, pred) : NULL;
    if (!idx || (e->u.load.predicate && !lp)) return NULL;
    bool any = is_vec(idx) || is_vec(lp) || pred;
    if (!any) return idx == e->u.load.index && lp == e->u.load.predicate
                         ? e
                         : tir_load(st->ctx, e->u.load.buffer, idx, lp);
    /* A guard's mask is only needed where the unguarded read could leave
     * the buffer: a read provably inside it runs unmasked (a scalar read
     * stays scalar and is broadcast, not a gather of one address). */
    te_expr *mask = in_bounds(st, e->u.load.buffer, idx) ? NULL : pred;
    if (lp) mask = mask ? te_and(mask, bcast(st, lp)) : bcast(st, lp);
    if (!mask && !is_vec(idx))
        return idx == e->u.load.index && !e->u.load.predicate
                   ? e
                   : tir_load(st->ctx, e->u.load.buffer, idx, NULL);
    return tir_load(st->ctx, e->u.load.buffer, bcast(st, idx), mask);
}

/* e with var replaced by the ramp: a vector when e depends on var, else e
 * itself. pred (a bool vector or NULL) masks every load. NULL on refusal
 * (reason set) or builder failure. */
static te_expr *vec_expr(vec_state *st, te_expr *e, te_expr *pred) {
    if (!e) return NULL;
    switch (e->kind) {
    case TE_INT_IMM:
    case TE_FLOAT_IMM: return e;
    case TE_VAR: return e == st->var ? st->ramp : e;
    case TE_LOAD: return vec_load(st, e, pred);
    case TE_RAMP:
    case TE_BROADCAST:
        if (is_vec(e)) {
            refuse(st, "its body already holds vector code (%s)", te_expr_kind_name(e->kind));
            return NULL;
        }
        return e;
    case TE_READ:
    case TE_REDUCE:
    case TE_BUFFER_LOAD:
        refuse(st, "its body holds a %s; vectorize runs after storage_flatten",
               te_expr_kind_name(e->kind));
        return NULL;
    case TE_NOT: {
        te_expr *a = vec_expr(st, e->u.un.a, pred);
        if (!a) return NULL;
        return a == e->u.un.a ? e : te_not(a);
    }
    case TE_CAST: {
        te_expr *a = vec_expr(st, e->u.un.a, pred);
        if (!a) return NULL;
        if (a == e->u.un.a) return e;
        return te_cast(te_dtype_with_lanes(e->dtype, a->dtype.lanes), a);
    }
    case TE_SELECT: {
        /* The scalar loop reads only the chosen arm (codegen branches
         * around an arm that loads), so each arm's loads are masked by
         * its side of the condition where they could leave their buffer:
         * the partial sums of an rfactor split that does not divide its
         * reduction read past the last row as select(k < n, x[..], 0). */
        te_expr *c = vec_expr(st, e->u.sel.cond, pred);
        if (!c) return NULL;
        te_expr *ct = pred, *cf = pred;
        int64_t cv;
        if (!te_is_const_int(c, &cv)) {
            te_expr *m = bcast(st, c);
            ct = pred ? te_and(pred, m) : m;
            cf = pred ? te_and(pred, te_not(m)) : te_not(m);
        }
        te_expr *t = vec_expr(st, e->u.sel.t, ct), *f = vec_expr(st, e->u.sel.f, cf);
        if (!t || !f) return NULL;
        if (c == e->u.sel.cond && t == e->u.sel.t && f == e->u.sel.f) return e;
        return te_select(bcast(st, c), bcast(st, t), bcast(st, f));
    }
    case TE_CALL: {
        te_expr *args[3] = {NULL, NULL, NULL};
        bool changed = false;
        int n = e->u.call.nargs;
        for (int i = 0; i < n; i++) {
            if (!(args[i] = vec_expr(st, e->u.call.args[i], pred))) return NULL;
            changed |= args[i] != e->u.call.args[i];
        }
        if (!changed) return e;
        for (int i = 0; i < n; i++) args[i] = bcast(st, args[i]);
        return te_call(e->u.call.op, n, args);
    }
    default: break;
    }
    if (e->kind >= TE_ADD && e->kind <= TE_OR) {
        te_expr *a = vec_expr(st, e->u.bin.a, pred), *b = vec_expr(st, e->u.bin.b, pred);
        if (!a || !b) return NULL;
        if (a == e->u.bin.a && b == e->u.bin.b) return e;
        if (!is_vec(a) && !is_vec(b)) return build_bin(e->kind, a, b);
        return vec_bin(st, e->kind, a, b);
    }
    refuse(st, "its body holds an expression of kind %s", te_expr_kind_name(e->kind));
    return NULL;
}

/* ---- statements ---- */

typedef struct {
    const tir_buffer *buf;
    bool found;
} buf_query;

static void find_store_stmt(const tir_stmt *s, void *user) {
    buf_query *q = user;
    if (s->kind == TIR_STORE && s->u.store.buffer == q->buf) q->found = true;
}

/* True when the loop body stores to a buffer that e loads. */
static bool reads_stored_buffer(const tir_stmt *body, const te_expr *e);

typedef struct {
    const tir_stmt *body;
    bool hit;
} rsb_state;

static void rsb_expr(const te_expr *e, void *user) {
    rsb_state *r = user;
    if (!e || r->hit) return;
    if (e->kind == TE_LOAD) {
        buf_query q = {e->u.load.buffer, false};
        tir_stmt_visit(r->body, find_store_stmt, NULL, &q);
        if (q.found) {
            r->hit = true;
            return;
        }
    }
    te_expr_visit_children(e, rsb_expr, user);
}

static bool reads_stored_buffer(const tir_stmt *body, const te_expr *e) {
    rsb_state r = {body, false};
    rsb_expr(e, &r);
    return r.hit;
}

static tir_stmt *vec_stmt(vec_state *st, tir_stmt *s, te_expr *pred);

static tir_stmt *vec_store(vec_state *st, tir_stmt *s, te_expr *pred) {
    te_expr *idx = vec_expr(st, s->u.store.index, pred);
    te_expr *val = vec_expr(st, s->u.store.value, pred);
    te_expr *sp = s->u.store.predicate ? vec_expr(st, s->u.store.predicate, pred) : NULL;
    if (!idx || !val || (s->u.store.predicate && !sp)) return NULL;
    if (!is_vec(idx)) {
        if (is_vec(val) || is_vec(sp)) {
            refuse(st, "its body stores to '%s' at an index that does not depend on it",
                   s->u.store.buffer->name);
            return NULL;
        }
        /* Neither index nor value changes with v: one execution does what L
         * did, unless the value reads what the loop writes, or the store is
         * masked per lane. */
        if (pred || reads_stored_buffer(st->loop->u.loop.body, s->u.store.value)) {
            refuse(st, "its body stores to '%s' at an index that does not depend on it",
                   s->u.store.buffer->name);
            return NULL;
        }
        return s;
    }
    te_expr *mask = pred;
    if (sp) mask = mask ? te_and(mask, bcast(st, sp)) : bcast(st, sp);
    return tir_store(st->ctx, s->u.store.buffer, idx, bcast(st, val), mask);
}

/* The condition of an IF without its likely() hint: a mask needs the value. */
static te_expr *strip_likely(te_expr *c) {
    while (c && c->kind == TE_CALL && c->u.call.op == TE_INTRIN_LIKELY) c = c->u.call.args[0];
    return c;
}

static tir_stmt *vec_if(vec_state *st, tir_stmt *s, te_expr *pred) {
    te_expr *c = vec_expr(st, strip_likely(s->u.if_.cond), NULL);
    if (!c) return NULL;
    if (!is_vec(c) && !pred) {
        tir_stmt *t = vec_stmt(st, s->u.if_.then_s, NULL);
        tir_stmt *f = s->u.if_.else_s ? vec_stmt(st, s->u.if_.else_s, NULL) : NULL;
        if (!t || (s->u.if_.else_s && !f)) return NULL;
        return tir_if(st->ctx, s->u.if_.cond, t, f);
    }
    /* Per-lane condition (or a scalar one under a mask): predicate both
     * branches. Loads in the condition itself run unmasked only when no
     * outer mask exists, as in the scalar loop. The mask is re-evaluated at
     * every store it guards, so it must not read what those stores write. */
    if (reads_stored_buffer(s, s->u.if_.cond)) {
        refuse(st, "its body has a condition that depends on it and reads memory the guarded "
                   "code writes: %s",
               te_expr_str(st->ctx, s->u.if_.cond));
        return NULL;
    }
    if (pred) {
        c = vec_expr(st, strip_likely(s->u.if_.cond), pred);
        if (!c) return NULL;
    }
    c = bcast(st, c);
    te_expr *pt = pred ? te_and(pred, c) : c;
    tir_stmt *t = vec_stmt(st, s->u.if_.then_s, pt);
    if (!t) return NULL;
    if (!s->u.if_.else_s) return t;
    te_expr *pf = pred ? te_and(pred, te_not(c)) : te_not(c);
    tir_stmt *f = vec_stmt(st, s->u.if_.else_s, pf);
    if (!f) return NULL;
    return tir_seq(st->ctx, 2, (tir_stmt *[]){t, f});
}

/* s vectorized under lane mask pred; NULL on refusal (st->reason says
 * why) or failure. */
static tir_stmt *vec_stmt(vec_state *st, tir_stmt *s, te_expr *pred) {
    te_expr *saved = st->pred;
    st->pred = pred;
    tir_stmt *r = tir_mutate(&st->body, s);
    st->pred = saved;
    return r;
}

static tir_stmt *vk_store(tir_mutator *m, tir_stmt *s) {
    vec_state *st = m->user;
    return vec_store(st, s, st->pred);
}

static tir_stmt *vk_if(tir_mutator *m, tir_stmt *s) {
    vec_state *st = m->user;
    return vec_if(st, s, st->pred);
}

static tir_stmt *vk_evaluate(tir_mutator *m, tir_stmt *s) {
    vec_state *st = m->user;
    te_expr *v = vec_expr(st, s->u.eval.value, st->pred);
    if (!v) return NULL;
    if (is_vec(v) || st->pred) {
        refuse(st, "its body evaluates %s for its effect, which depends on it",
               te_expr_str(st->ctx, s->u.eval.value));
        return NULL;
    }
    return s;
}

static tir_stmt *vk_refuse(tir_mutator *m, tir_stmt *s) {
    vec_state *st = m->user;
    if (s->kind == TIR_FOR)
        refuse(st, "it is not innermost: it contains loop '%s'", loop_name(s));
    else if (s->kind == TIR_ALLOCATE)
        refuse(st, "its body allocates '%s'", s->u.alloc.buffer->name);
    else if (s->kind == TIR_BUFFER_STORE)
        refuse(st, "its body stores to '%s' before storage_flatten", s->u.bstore.buffer->name);
    else if (s->kind == TIR_BARRIER)
        refuse(st, "its body holds a barrier");
    else
        refuse(st, "its body holds an unknown statement");
    return NULL;
}

/* Only the kinds with a case here are vectorized (SEQ and NOOP by the
 * default walk); any other keeps the loop scalar. */
static tir_stmt *vk_known(tir_mutator *m, tir_stmt *s, bool *final) {
    (void)final;
    if (m->kind[s->kind] || s->kind == TIR_SEQ || s->kind == TIR_NOOP) return s;
    return vk_refuse(m, s);
}

static void vec_body_walk(vec_state *st) {
    st->body = (tir_mutator){
        .ctx = st->ctx,
        .user = st,
        .pre = vk_known,
        .kind = {
            [TIR_STORE] = vk_store,
            [TIR_IF] = vk_if,
            [TIR_EVALUATE] = vk_evaluate,
            [TIR_FOR] = vk_refuse,
            [TIR_ALLOCATE] = vk_refuse,
            [TIR_BUFFER_STORE] = vk_refuse,
            [TIR_BARRIER] = vk_refuse,
        },
    };
}

/* ---- the pass ---- */

/* The pass walks the function with a tir_mutator whose analyser holds the
 * enclosing loops' ranges; its user is this. */
typedef struct {
    te_ctx *ctx;
    te_str *why;
    te_analyzer *an;
} pass_state;

static void note(pass_state *ps, const tir_stmt *loop, const char *reason) {
    if (ps->why) te_str_printf(ps->why, "vectorize: loop '%s' stays scalar: %s\n", loop_name(loop),
                               reason);
}

/* Loop s made serial, the loops inside it walked. */
static tir_stmt *serial(tir_mutator *m, tir_stmt *s, const char *reason) {
    note(m->user, s, reason);
    tir_stmt *g = tir_mutate_children(m, s);
    tir_stmt *f = g ? tir_for_with_body(m->ctx, g, g->u.loop.body) : NULL;
    if (f) f->u.loop.for_kind = TIR_FOR_SERIAL;
    return f;
}

static tir_stmt *vectorize_loop(tir_mutator *m, tir_stmt *s) {
    pass_state *ps = m->user;
    int64_t ext;
    char msg[128];
    if (!te_is_const_int(s->u.loop.extent, &ext))
        return serial(m, s, "its extent is not a constant");
    if (ext < 2 || ext > VEC_MAX_LANES) {
        snprintf(msg, sizeof msg, "its extent %lld is not in [2, %d]", (long long)ext,
                 VEC_MAX_LANES);
        return serial(m, s, msg);
    }
    te_expr *var = s->u.loop.var;
    te_expr *one = te_int_t(ps->ctx, var->dtype, 1);
    /* More than 16 lanes, not a power of two (a register tile's 48 columns:
     * three vectors): pieces of the widest power of two up to 16 dividing
     * it, one after the other. LLVM widens a <48 x float> to 64 lanes and
     * the tile's accumulators went through the stack lane by lane (a
     * 3136x384x96 product ran 20x slower than in 16-lane pieces). */
    int64_t piece = ext;
    if (ext > 16 && (ext & (ext - 1))) {
        int64_t p = 16;
        while (p > 4 && ext % p) p /= 2;
        if (ext % p == 0) piece = p;
    }
    int np = (int)(ext / piece);
    tir_stmt *parts[VEC_MAX_LANES] = {0};
    vec_state st = {.ctx = ps->ctx, .var = var, .lanes = (int)piece, .loop = s, .an = ps->an};
    vec_body_walk(&st);
    bool ok = true;
    for (int k = 0; ok && k < np; k++) {
        te_expr *base = k ? te_add(s->u.loop.min, te_int_t(ps->ctx, var->dtype, k * piece))
                          : s->u.loop.min;
        st.ramp = tir_ramp(base, one, (int)piece);
        if (!st.ramp) return NULL;
        ok = (parts[k] = vec_stmt(&st, s->u.loop.body, NULL)) != NULL;
    }
    if (ok) return np == 1 ? parts[0] : tir_seq(ps->ctx, np, parts);
    if (!st.reason[0]) return NULL; /* a builder failed: the ctx says why */
    return serial(m, s, st.reason);
}

/* Top-down: a VECTORIZED loop is handled whole; a refused one is walked so
 * that loops inside it get their turn. */
static tir_stmt *walk_loop(tir_mutator *m, tir_stmt *s) {
    if (s->u.loop.for_kind == TIR_FOR_VECTORIZED) return vectorize_loop(m, s);
    return tir_mutate_children(m, s);
}

tir_func *tir_pass_vectorize(te_ctx *ctx, const tir_func *f, te_str *why) {
    if (!ctx || !f) return NULL;
    pass_state ps = {.ctx = ctx, .why = why, .an = te_analyzer_new(ctx)};
    if (!ps.an) return NULL;
    tir_mutator m = {.ctx = ctx, .user = &ps, .an = ps.an, .kind = {[TIR_FOR] = walk_loop}};
    tir_stmt *body = tir_mutate(&m, f->body);
    te_analyzer_free(ps.an);
    if (!body) return NULL;
    return body == f->body ? (tir_func *)f : tir_func_with_body(ctx, f, body);
}
