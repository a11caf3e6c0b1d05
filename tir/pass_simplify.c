/*
 * tir/pass_simplify.c — canonical simplification of every expression with
 * the enclosing loops' ranges known to the analyser; IFs whose condition
 * is decided (likely(...) included) replaced by the branch taken, and the
 * branches of `if (v < K)`-like conditions simplified with v's range
 * narrowed to the branch; loops of
 * extent 0 removed and loops of extent 1 replaced by their body with the
 * variable set to the loop's min (TVM Simplify / Halide Simplify).
 *
 * Loops bound to a GPU thread axis, and loops carrying unroll pragmas that
 * govern loops in their body, are kept even at extent 1: removing them
 * would lose the launch dimension or the pragma.
 */
#include "tir/tir_internal.h"

/* The walk is a tir_mutator whose analyser holds the enclosing loops'
 * ranges (S below); loops and IFs are its own cases, every other
 * statement keeps its shape with its expressions simplified. */
typedef tir_mutator simp;

static te_expr *sx(simp *S, te_expr *e) {
    if (!e || S->failed) return e;
    te_expr *r = te_analyzer_simplify(S->an, e);
    if (!r) S->failed = true;
    return r;
}


/* 1: provably true, 0: provably false, -1: unknown. */
static int decide(simp *S, te_expr *c) {
    while (c && c->kind == TE_CALL && c->u.call.op == TE_INTRIN_LIKELY && c->u.call.nargs == 1)
        c = c->u.call.args[0];
    if (!c || c->dtype.lanes != 1) return -1;
    int64_t v;
    if (te_is_const_int(c, &v)) return v != 0;
    if (te_analyzer_can_prove(S->an, c)) return 1;
    if (!te_dtype_is_bool(c->dtype)) return -1;
    te_expr *n = te_not(c);
    if (n && te_analyzer_can_prove(S->an, n)) return 0;
    return -1;
}

static void find_loop(const tir_stmt *s, void *user) {
    if (s->kind == TIR_FOR) *(bool *)user = true;
}

/* A unit loop stays when it is a GPU thread axis, or when its unroll
 * pragmas still govern loops inside it. */
static bool keep_unit_loop(const tir_stmt *s) {
    if (s->u.loop.for_kind == TIR_FOR_THREAD || s->u.loop.thread_tag) return true;
    if (s->u.loop.auto_unroll_max_step <= 0 && !s->u.loop.unroll_explicit) return false;
    bool inner = false;
    tir_stmt_visit(s->u.loop.body, find_loop, NULL, &inner);
    return inner;
}

static tir_stmt *simp_for(simp *S, tir_stmt *s) {
    te_expr *mn = sx(S, s->u.loop.min), *ext = sx(S, s->u.loop.extent);
    if (S->failed) return NULL;
    int64_t e = 0;
    bool ce = te_is_const_int(ext, &e);
    if (ce && e <= 0) return tir_noop(S->ctx);
    if (ce && e == 1 && !keep_unit_loop(s)) {
        te_expr *v = s->u.loop.var;
        tir_stmt *body = tir_stmt_substitute(S->ctx, s->u.loop.body, 1, &v, &mn);
        if (!body) {
            S->failed = true;
            return NULL;
        }
        return tir_mutate(S, body);
    }
    bool bound = tir_bind_loop(S->an, s->u.loop.var, mn, ext);
    tir_stmt *body = tir_mutate(S, s->u.loop.body);
    if (bound) te_analyzer_unbind(S->an, s->u.loop.var);
    if (!body || S->failed) return NULL;
    if (body->kind == TIR_NOOP) return body;
    if (mn == s->u.loop.min && ext == s->u.loop.extent && body == s->u.loop.body) return s;
    tir_stmt *n = tir_for_with_body(S->ctx, s, body);
    if (!n) return NULL;
    n->u.loop.min = mn;
    n->u.loop.extent = ext;
    return n;
}

/* c as `var in [lo, hi)` (v < K, v >= K, or both joined by AND, v a
 * variable and K constants); false for any other condition. */
static bool var_interval(const te_expr *c, const te_expr **v, int64_t *lo, int64_t *hi) {
    int64_t k;
    if (c->kind == TE_AND) {
        const te_expr *v2;
        int64_t lo2, hi2;
        if (!var_interval(c->u.bin.a, v, lo, hi) || !var_interval(c->u.bin.b, &v2, &lo2, &hi2) ||
            v2 != *v)
            return false;
        *lo = *lo > lo2 ? *lo : lo2;
        *hi = *hi < hi2 ? *hi : hi2;
        return true;
    }
    if ((c->kind != TE_LT && c->kind != TE_GE) || c->u.bin.a->kind != TE_VAR ||
        !te_is_const_int(c->u.bin.b, &k))
        return false;
    *v = c->u.bin.a;
    *lo = c->kind == TE_GE ? k : INT64_MIN;
    *hi = c->kind == TE_LT ? k : INT64_MAX;
    return true;
}

/* A branch simplified with v known to lie in [lo, hi) as well (TVM's
 * constraint context, for intervals): the branches of a parallel loop's
 * partition (loop_partition) then lose the guards their range decides. */
static tir_stmt *ss_within(simp *S, tir_stmt *s, const te_expr *v, int64_t lo, int64_t hi) {
    int64_t clo, chi;
    te_analyzer_const_bound(S->an, v, &clo, &chi);
    if (lo < clo) lo = clo;
    if (chi < INT64_MAX && hi > chi + 1) hi = chi + 1;
    bool narrow = lo != INT64_MIN && hi != INT64_MAX && lo < hi && (lo > clo || hi <= chi);
    if (narrow) te_analyzer_bind(S->an, v, lo, hi - lo);
    tir_stmt *r = tir_mutate(S, s);
    if (narrow) te_analyzer_unbind(S->an, v);
    return r;
}

static tir_stmt *simp_if(simp *S, tir_stmt *s) {
    te_expr *c = sx(S, s->u.if_.cond);
    if (S->failed) return NULL;
    int d = decide(S, c);
    if (d == 1) return tir_mutate(S, s->u.if_.then_s);
    if (d == 0) return s->u.if_.else_s ? tir_mutate(S, s->u.if_.else_s) : tir_noop(S->ctx);
    const te_expr *v = NULL;
    int64_t lo = INT64_MIN, hi = INT64_MAX, vlo = INT64_MIN, vhi = INT64_MAX;
    if (c && var_interval(c, &v, &lo, &hi)) te_analyzer_const_bound(S->an, v, &vlo, &vhi);
    tir_stmt *t = v ? ss_within(S, s->u.if_.then_s, v, lo, hi) : tir_mutate(S, s->u.if_.then_s);
    /* The else branch: the rest of v's range when that is one interval,
     * [hi, ...) when [lo, hi) starts at v's own start, else (..., lo) when
     * it runs to v's end. */
    tir_stmt *e = NULL, *es = s->u.if_.else_s;
    if (es && v && lo <= vlo && hi != INT64_MAX) e = ss_within(S, es, v, hi, INT64_MAX);
    else if (es && v && (hi == INT64_MAX || hi > vhi) && lo != INT64_MIN)
        e = ss_within(S, es, v, INT64_MIN, lo);
    else if (es) e = tir_mutate(S, es);
    if (S->failed || !t) return NULL;
    if (c == s->u.if_.cond && t == s->u.if_.then_s && e == s->u.if_.else_s) return s;
    return tir_if(S->ctx, c, t, e);
}

static te_expr *simp_expr(tir_mutator *m, te_expr *e) { return sx(m, e); }

tir_func *tir_pass_simplify(te_ctx *ctx, const tir_func *f) {
    if (!ctx) return NULL;
    if (!f || !f->body) return tir__null_operand(ctx, "simplify");
    simp S = {
        .ctx = ctx,
        .an = te_analyzer_new(ctx),
        .expr = simp_expr,
        .kind = {[TIR_FOR] = simp_for, [TIR_IF] = simp_if},
    };
    if (!S.an) return NULL;
    tir_stmt *body = tir_mutate(&S, f->body);
    te_analyzer_free(S.an);
    if (!body || S.failed) return NULL;
    return tir_func_with_body(ctx, f, body);
}
