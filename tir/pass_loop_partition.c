/*
 * tir/pass_loop_partition.c — split loops around their likely() guards
 * (TVM LoopPartition, Halide PartitionLoops).
 *
 * Lowering guards the bodies of non-dividing splits and of regions that
 * reach past a tensor's edges with `if (likely(c))`; an rfactor's tail
 * guards its partial sums with `select(likely(c), x, identity)`
 * (schedule/rfactor.c), a guard of the same kind, whose select becomes x
 * where c is proven. For a loop
 * `for (v, min, ext)` this pass finds the sub-range [a, b) of v where every
 * such guard below it is true whatever the values of the loops between the
 * loop and the guard, and emits
 *   for (v, min, a - min)   { body }            prologue, guards kept
 *   for (v, a, b - a)       { body, guards removed }
 *   for (v', b, min+ext-b)  { body }            epilogue, guards kept
 * (empty pieces dropped; prologue and epilogue use fresh variables). The
 * main range comes from solving each affine conjunct `d(v) <= K` with the
 * other variables at their constant bounds — or, when v appears other
 * than linearly (a fused loop: `floordiv(fused, 16)*54 + ...`), from a
 * binary search for the longest prefix or suffix of v's range over which
 * the analyser's bound of the conjunct holds (bounds only widen with the
 * range, so the search is sound for any expression; it finds the exact
 * range when the conjunct is monotone in v, as for the tails of the
 * non-dividing splits of an axis fused into a parallel loop; no range
 * otherwise). A conjunct is then removed in
 * the main piece only when the analyser proves it there, so a weak solve
 * can cost speed but never correctness. Pieces are then partitioned again
 * for their inner loops with v bound to the piece's range.
 *
 * A PARALLEL loop is not split but branches inside, per iteration, between
 * the main body and the guarded one (branch_inside). Its test need not be
 * a range: a conjunct d(v, inner) <= k whose part in v, d - d[v := 0],
 * uses v alone holds for every value of the loops inside when that part
 * is <= k minus the bound of the rest, a test of v each iteration can
 * make (branch_per_iteration). Fused row tiles with a row tail outside
 * the fused column tiles, floormod(v, 167)*6 <= 994, take it: no range of
 * v holds all their full tiles. Terms of one part of v (the rows'
 * floormod, the columns' floordiv) join into one test each; with two or
 * three such tests the iterations where only some hold get their own
 * bodies too (a row tile's column tail: the row guards dropped, the
 * columns' masks kept), a cascade of ifs. The range's test is kept where
 * it says the same. A loop outside a
 * reduction is not split on a conjunct that varies with the reduction's
 * loops inside it (the padding guards of schedule/pad_guard.c): the
 * reduction's own loops are split instead.
 *
 * VECTORIZED and GPU-thread loops are not split (their iteration space is
 * fixed by the hardware mapping); their guards stay for vectorize to
 * predicate. Loops with non-constant bounds are not split either.
 */
#include <stdint.h>
#include <stdlib.h>

#include "loom/tir.h"
#include "tir/tir_internal.h"

/* Values beyond this are treated as unbounded (no overflow in the solve),
 * the limit the loops are bound with. */
#define LP_BIG TIR_BIND_LIMIT

/* Conjuncts a parallel loop's per-iteration test tracks. */
#define LP_MAX_TERMS 64
/* Tests (parts of v) that get bodies of their own. */
#define LP_MAX_GROUPS 3
/* Tests one per-iteration test joins (bits of an unsigned mask). */
#define LP_MAX_TESTS 16

/* The pass: the walk that splits loops and the one that drops the guards
 * a main range proves, both tir_mutators on one analyser (which holds
 * the ranges of the loops around the statement being looked at). */
struct solve_state;

typedef struct {
    te_ctx *ctx;
    te_analyzer *an;
    tir_mutator walk, drop;
    /* while dropping for branch_per_iteration: the conjuncts of the
     * groups in assume_groups (bit g: group g) hold, unproven */
    const struct solve_state *assume;
    unsigned assume_groups;
    /* ... and group g in pin_groups fails, its gdv then pinned[g] (the
     * one value above its bound: a row tile's tail) */
    unsigned pin_groups;
    int64_t pinned[LP_MAX_GROUPS];
} lp_state;

static bool is_likely(const te_expr *c) {
    return c && c->kind == TE_CALL && c->u.call.op == TE_INTRIN_LIKELY && c->u.call.nargs == 1;
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

/* ---- collecting the range where the guards hold ---- */

/* Loops nested in the one being solved that collect tracks. */
#define LP_MAX_INNER 64

typedef struct solve_state {
    const te_expr *var;
    int64_t lo, hi; /* intersection so far: [lo, hi) */
    bool any;       /* some conjunct depends on var and was solved */
    int64_t vlo, vhi; /* the loop's whole range [vlo, vhi) */
    /* reduction loops inside this one (their variables) */
    int ninner;
    const te_expr *inner[LP_MAX_INNER];
    /* A parallel loop's per-iteration test: conjunct implied[i] holds
     * where group group[i]'s test gdv <= gk does; test is the AND of the
     * groups' tests. Any conjunct on v without a term makes it unusable
     * (failed). */
    bool per_iter, failed;
    te_expr *test;
    int nimplied, ngroups;
    const te_expr *implied[LP_MAX_TERMS];
    te_expr *rest[LP_MAX_TERMS]; /* implied[i] is gdv + rest[i] <= k[i] */
    int64_t k[LP_MAX_TERMS];
    int group[LP_MAX_TERMS];
    te_expr *gdv[LP_MAX_TESTS];
    int64_t gk[LP_MAX_TESTS];
} solve_state;

/* A loop outside a reduction is not split on a conjunct that varies with
 * one of the reduction's loops (a padding guard, 1 <= y + ry): each piece
 * would copy the whole reduction nest, where splitting the reduction's
 * own loops skips the same taps at a fraction of the code. */
static bool varies_inside(const solve_state *ss, const te_expr *c) {
    if (ss->var->u.var.iter == TE_ITER_REDUCE) return false;
    for (int i = 0; i < ss->ninner; i++)
        if (te_expr_uses_var(c, ss->inner[i])) return true;
    return false;
}

/* The analyser's upper bound of d is <= k with var in [a, b) (a < b). */
static bool holds_on(lp_state *st, const te_expr *var, const te_expr *d, int64_t k, int64_t a,
                     int64_t b) {
    int64_t lo, hi;
    te_analyzer_bind(st->an, var, a, b - a);
    te_analyzer_const_bound(st->an, d, &lo, &hi);
    te_analyzer_unbind(st->an, var);
    return hi <= k;
}

/* The largest h in [a, b] with d <= k proven on [a, h) (prefix), or the
 * smallest l with it proven on [l, b); an empty range always is. A binary
 * search: a shorter range never gives a looser bound. */
static int64_t proven_edge(lp_state *st, const te_expr *var, const te_expr *d, int64_t k,
                           int64_t a, int64_t b, bool prefix) {
    int64_t yes = prefix ? a : b, no = prefix ? b : a;
    while (yes - no > 1 || no - yes > 1) {
        int64_t lo = yes < no ? yes : no, hi = yes < no ? no : yes, mid = lo + (hi - lo) / 2;
        if (prefix ? holds_on(st, var, d, k, a, mid) : holds_on(st, var, d, k, mid, b)) yes = mid;
        else no = mid;
    }
    return yes;
}

/* d <= k where d is not linear in the variable: the longest prefix
 * [vlo, h) or suffix [l, vhi) of the loop's range on which the bound of d
 * proves it (binary searches: a shorter range never gives a looser
 * bound); the longer one narrows the state. Neither: left alone (the
 * guard then stays, so nothing is lost but speed). */
static void solve_monotone(lp_state *st, solve_state *ss, const te_expr *d, int64_t k) {
    int64_t a = ss->vlo, b = ss->vhi;
    int64_t h = b, l = b;
    if (!holds_on(st, ss->var, d, k, a, b)) {
        h = proven_edge(st, ss->var, d, k, a, b, true);
        l = proven_edge(st, ss->var, d, k, a, b, false);
    }
    int64_t plen = h - a, slen = b - l;
    if (plen == 0 && slen == 0) return;
    if (plen >= slen) {
        if (h < ss->hi) ss->hi = h;
    } else if (l > ss->lo) {
        ss->lo = l;
    }
    ss->any = true;
}

typedef struct {
    const te_expr *v;
    bool ok;
} only_state;

static void only_child(const te_expr *e, void *user) {
    only_state *o = user;
    if (!o->ok) return;
    if (e->kind == TE_VAR) o->ok = e == o->v;
    else if (e->kind == TE_CALL || e->kind == TE_READ || e->kind == TE_BUFFER_LOAD ||
             e->kind == TE_LOAD || e->kind == TE_REDUCE)
        o->ok = false;
    else te_expr_visit_children(e, only_child, o);
}

/* e is arithmetic on v and constants. */
static bool only_var(const te_expr *e, const te_expr *v) {
    only_state o = {v, true};
    only_child(e, &o);
    return o.ok;
}

/* The per-iteration term of conjunct c, d <= k, rest = d[v := 0]:
 * (d - rest) <= k - max(rest) implies c for every value of the loops
 * inside (d == (d - rest) + rest). Usable when d - rest is a function of v
 * alone and rest is bounded. */
static void per_iteration_term(lp_state *st, solve_state *ss, const te_expr *c, te_expr *d,
                               te_expr *rest, int64_t k) {
    te_expr *dv = te_simplify(st->ctx, te_sub(d, rest));
    int64_t rlo, rhi;
    te_analyzer_const_bound(st->an, rest, &rlo, &rhi);
    if (!dv || !only_var(dv, ss->var) || rhi >= LP_BIG || rhi <= -LP_BIG ||
        ss->nimplied == LP_MAX_TERMS) {
        ss->failed = true;
        return;
    }
    int g = 0;
    while (g < ss->ngroups && !te_expr_equal(ss->gdv[g], dv)) g++;
    if (g == LP_MAX_TESTS) {
        ss->failed = true;
        return;
    }
    if (g == ss->ngroups) ss->gdv[ss->ngroups++] = dv, ss->gk[g] = k - rhi;
    else if (k - rhi < ss->gk[g]) ss->gk[g] = k - rhi;
    ss->group[ss->nimplied] = g;
    ss->rest[ss->nimplied] = rest;
    ss->k[ss->nimplied] = k;
    ss->implied[ss->nimplied++] = c;
}

/* Group g's test, gdv <= gk. */
static te_expr *group_test(lp_state *st, const solve_state *ss, int g) {
    return te_le(ss->gdv[g], te_int_t(st->ctx, ss->gdv[g]->dtype, ss->gk[g]));
}

/* The AND of the groups' tests (ss->test); false on failure. */
static bool make_test(lp_state *st, solve_state *ss) {
    ss->test = NULL;
    for (int g = 0; g < ss->ngroups; g++) {
        te_expr *t = group_test(st, ss, g);
        if (!t || (ss->test && !(t = te_and(ss->test, t)))) return false;
        ss->test = t;
    }
    return true;
}

/* Narrows [lo, hi) to where conjunct c (a comparison) holds for every
 * value of the other bound variables. */
static void solve_conjunct(lp_state *st, solve_state *ss, te_expr *c) {
    if (!c) return;
    if (c->kind == TE_AND) {
        solve_conjunct(st, ss, c->u.bin.a);
        solve_conjunct(st, ss, c->u.bin.b);
        return;
    }
    if (!te_expr_uses_var(c, ss->var) || varies_inside(ss, c)) return;
    /* until its per-iteration term is made, the conjunct fails the test */
    bool failed_before = ss->failed;
    ss->failed = true;
    if (c->kind < TE_LT || c->kind > TE_GE) return;
    te_dtype ta = c->u.bin.a->dtype, tb = c->u.bin.b->dtype;
    if (!te_dtype_is_int(ta) || ta.lanes != 1 || !te_dtype_eq(ta, tb) ||
        !te_dtype_eq(ta, ss->var->dtype))
        return;
    te_expr *d;
    int64_t k; /* the conjunct is d <= k */
    switch (c->kind) {
    case TE_LT: d = te_sub(c->u.bin.a, c->u.bin.b), k = -1; break;
    case TE_LE: d = te_sub(c->u.bin.a, c->u.bin.b), k = 0; break;
    case TE_GT: d = te_sub(c->u.bin.b, c->u.bin.a), k = -1; break;
    case TE_GE: d = te_sub(c->u.bin.b, c->u.bin.a), k = 0; break;
    default: return;
    }
    if (!d) return;
    te_expr *v = (te_expr *)ss->var;
    te_expr *zero = te_int_t(st->ctx, v->dtype, 0), *one = te_int_t(st->ctx, v->dtype, 1);
    te_expr *rest = te_simplify(st->ctx, te_substitute(st->ctx, d, 1, &v, &zero));
    te_expr *d1 = te_substitute(st->ctx, d, 1, &v, &one);
    int64_t coef;
    if (!rest || !d1) return;
    if (ss->per_iter) {
        ss->failed = failed_before;
        per_iteration_term(st, ss, c, d, rest, k);
    }
    if (!te_is_const_int(te_simplify(st->ctx, te_sub(d1, rest)), &coef) || coef == 0 ||
        coef >= LP_BIG || coef <= -LP_BIG) {
        solve_monotone(st, ss, d, k);
        return;
    }
    /* d must be exactly coef*v + rest (no floordiv of v and the like). */
    int64_t zero_check;
    te_expr *lin = te_add(te_mul(te_int_t(st->ctx, v->dtype, coef), v), rest);
    if (!lin || !te_is_const_int(te_simplify(st->ctx, te_sub(d, lin)), &zero_check) ||
        zero_check != 0) {
        solve_monotone(st, ss, d, k);
        return;
    }
    int64_t rlo, rhi;
    te_analyzer_const_bound(st->an, rest, &rlo, &rhi);
    if (rhi >= LP_BIG || rhi <= -LP_BIG) return;
    int64_t r = k - rhi; /* need coef*v <= r */
    if (coef > 0) {
        int64_t hi = floor_div(r, coef) + 1;
        if (hi < ss->hi) ss->hi = hi;
    } else {
        int64_t lo = ceil_div(-r, -coef);
        if (lo > ss->lo) ss->lo = lo;
    }
    ss->any = true;
}

typedef struct {
    lp_state *st;
    solve_state *ss;
} collector;

static int collect_loop(tir_visitor *v, const tir_stmt *s) {
    solve_state *ss = ((collector *)v->user)->ss;
    const te_expr *var = s->u.loop.var;
    bool push = var->u.var.iter == TE_ITER_REDUCE && ss->ninner < LP_MAX_INNER;
    if (push) ss->inner[ss->ninner++] = var;
    int rc = tir_visit_children(v, s);
    if (push) ss->ninner--;
    return rc;
}

static int collect_if(tir_visitor *v, const tir_stmt *s) {
    collector *c = v->user;
    if (is_likely(s->u.if_.cond)) solve_conjunct(c->st, c->ss, s->u.if_.cond->u.call.args[0]);
    return tir_visit_children(v, s);
}

static void collect_select(const te_expr *e, void *user) {
    collector *c = user;
    if (e->kind == TE_SELECT && is_likely(e->u.sel.cond))
        solve_conjunct(c->st, c->ss, e->u.sel.cond->u.call.args[0]);
    te_expr_visit_children(e, collect_select, user);
}

/* A statement's `select(likely(c), a, b)`: the guard of an rfactor's
 * tail (schedule/rfactor.c), a guard like an IF's. */
static int collect_expr(tir_visitor *v, const te_expr *e) {
    collect_select(e, v->user);
    return 0;
}

/* Narrows ss to where every likely() guard in s holds. */
static void collect(lp_state *st, solve_state *ss, const tir_stmt *s) {
    collector c = {st, ss};
    tir_visitor v = {
        .user = &c,
        .an = st->an,
        .kind = {
            [TIR_FOR] = collect_loop,
            [TIR_IF] = collect_if,
        },
        .expr = collect_expr,
    };
    tir_visit(&v, s);
}

/* ---- removing the guards proven in the main range ---- */

/* c without the conjuncts the analyser proves; NULL when all are proven. */
static te_expr *drop_proven(lp_state *st, te_expr *c) {
    if (c->kind == TE_AND) {
        te_expr *a = drop_proven(st, c->u.bin.a), *b = drop_proven(st, c->u.bin.b);
        if (!a) return b;
        if (!b) return a;
        return a == c->u.bin.a && b == c->u.bin.b ? c : te_and(a, b);
    }
    const struct solve_state *ss = st->assume;
    for (int i = 0; ss && i < ss->nimplied; i++) {
        if (ss->implied[i] != c) continue;
        int g = ss->group[i];
        if (st->assume_groups >> g & 1) return NULL;
        if (g < LP_MAX_GROUPS && (st->pin_groups >> g & 1)) {
            /* gdv is pinned: the conjunct is rest <= k - pinned, a test of
             * the loops inside (rows of the tail tile: constants) */
            te_expr *r = te_simplify(
                st->ctx, te_le(ss->rest[i], te_int_t(st->ctx, ss->rest[i]->dtype,
                                                     ss->k[i] - st->pinned[g])));
            int64_t t;
            if (r && te_is_const_int(r, &t) && t) return NULL;
            if (r) return r;
        }
    }
    return te_analyzer_can_prove(st->an, c) ? NULL : c;
}

static tir_stmt *drop_if(tir_mutator *m, tir_stmt *s) {
    lp_state *st = m->user;
    tir_stmt *r = tir_mutate_children(m, s);
    if (!r || !is_likely(r->u.if_.cond)) return r;
    te_expr *inner = r->u.if_.cond->u.call.args[0];
    te_expr *left = drop_proven(st, inner);
    if (!left) return r->u.if_.then_s;
    if (left == inner) return r;
    te_expr *cond = te_call(TE_INTRIN_LIKELY, 1, &left);
    return cond ? tir_if(st->ctx, cond, r->u.if_.then_s, r->u.if_.else_s) : NULL;
}

static te_expr *drop_select_node(te_expr *e, void *user) {
    if (e->kind != TE_SELECT || !is_likely(e->u.sel.cond)) return e;
    te_expr *inner = e->u.sel.cond->u.call.args[0], *left = drop_proven(user, inner);
    if (!left) return e->u.sel.t;
    if (left == inner) return e;
    te_expr *cond = te_call(TE_INTRIN_LIKELY, 1, &left);
    return cond ? te_select(cond, e->u.sel.t, e->u.sel.f) : NULL;
}

static te_expr *drop_select(tir_mutator *m, te_expr *e) {
    return tir__expr_rewrite(m->ctx, e, drop_select_node, m->user);
}

/* ---- the pass ---- */

static tir_stmt *walk(lp_state *st, tir_stmt *s) { return tir_mutate(&st->walk, s); }

/* A variable like v for a copy of its loop. */
static te_expr *fresh_var(te_ctx *ctx, const te_expr *v) {
    if (v->u.var.iter != TE_ITER_NONE && v->u.var.extent > 0)
        return te_iter_var(ctx, v->u.var.name, v->u.var.iter, v->u.var.extent);
    return te_var(ctx, v->u.var.name, v->dtype);
}

/* Loop s over [lo, lo + ext) with `body`, its inner loops partitioned. A
 * fresh variable replaces the loop's own when `fresh`. */
static tir_stmt *piece(lp_state *st, const tir_stmt *s, int64_t lo, int64_t ext, tir_stmt *body,
                       bool fresh) {
    te_expr *v = s->u.loop.var;
    if (fresh) {
        te_expr *nv = fresh_var(st->ctx, v);
        if (!nv || !(body = tir_stmt_substitute(st->ctx, body, 1, &v, &nv))) return NULL;
        v = nv;
    }
    te_analyzer_bind(st->an, v, lo, ext);
    tir_stmt *b = walk(st, body);
    te_analyzer_unbind(st->an, v);
    if (!b) return NULL;
    tir_stmt *f = tir_for_with_body(st->ctx, s, b);
    if (!f) return NULL;
    f->u.loop.var = v;
    f->u.loop.min = te_int_t(st->ctx, v->dtype, lo);
    f->u.loop.extent = te_int_t(st->ctx, v->dtype, ext);
    return f;
}

/* A parallel loop is not cut into pieces, each its own fork and join with
 * a prologue or epilogue of a few iterations (often one: the tail of a
 * tiled axis) left to a single thread; the choice is made per iteration
 * instead: for (v) parallel { if (a <= v < b) main_body else body }. */
static tir_stmt *branch_inside(lp_state *st, const tir_stmt *s, int64_t lo, int64_t ext, int64_t a,
                               int64_t b, tir_stmt *main_body) {
    te_expr *v = s->u.loop.var;
    te_analyzer_bind(st->an, v, a, b - a);
    tir_stmt *m = walk(st, main_body);
    te_analyzer_unbind(st->an, v);
    /* The other iterations: one side of [a, b), or both. */
    int64_t rlo = a > lo ? lo : b, rhi = b < lo + ext ? lo + ext : a;
    te_analyzer_bind(st->an, v, rlo, rhi - rlo);
    tir_stmt *rest = m ? walk(st, s->u.loop.body) : NULL;
    te_analyzer_unbind(st->an, v);
    if (!rest) return NULL;
    te_expr *cond = NULL;
    if (a > lo) cond = te_ge(v, te_int_t(st->ctx, v->dtype, a));
    if (b < lo + ext) {
        te_expr *hi = te_lt(v, te_int_t(st->ctx, v->dtype, b));
        cond = cond ? te_and(cond, hi) : hi;
    }
    tir_stmt *body = cond ? tir_if(st->ctx, cond, m, rest) : m;
    return body ? tir_for_with_body(st->ctx, s, body) : NULL;
}

/* The test of the range [a, b) says the same as ss's per-iteration test
 * over the loop's range [lo, lo + ext): it holds on [a, b) and fails on
 * the rest. */
static bool range_is_test(lp_state *st, const solve_state *ss, int64_t lo, int64_t ext, int64_t a,
                          int64_t b) {
    const te_expr *v = ss->var;
    te_expr *no = te_not(ss->test);
    bool same = no != NULL;
    te_analyzer_bind(st->an, v, a, b - a);
    same = same && te_analyzer_can_prove(st->an, ss->test);
    te_analyzer_unbind(st->an, v);
    if (same && a > lo) {
        te_analyzer_bind(st->an, v, lo, a - lo);
        same = te_analyzer_can_prove(st->an, no);
        te_analyzer_unbind(st->an, v);
    }
    if (same && b < lo + ext) {
        te_analyzer_bind(st->an, v, b, lo + ext - b);
        same = te_analyzer_can_prove(st->an, no);
        te_analyzer_unbind(st->an, v);
    }
    return same;
}

/* The loop body for the iterations where the groups in `groups` hold
 * (their conjuncts dropped, and what the analyser proves with v in its
 * range), its inner loops partitioned. */
static tir_stmt *body_assuming(lp_state *st, const tir_stmt *s, const solve_state *ss,
                               unsigned groups, unsigned failing) {
    /* A failing group's gdv is pinned when one value lies above its bound
     * (in range, of its residue): floormod(v, 34)*6 > 194 is 198. */
    st->pin_groups = 0;
    for (int g = 0; g < ss->ngroups && g < LP_MAX_GROUPS; g++) {
        if (!(failing >> g & 1)) continue;
        int64_t lo, hi, coeff, base, x;
        te_analyzer_const_bound(st->an, ss->gdv[g], &lo, &hi);
        te_analyzer_modular(st->an, ss->gdv[g], &coeff, &base);
        if (hi >= LP_BIG || ss->gk[g] >= LP_BIG - 1) continue;
        if (coeff > 0) {
            x = ss->gk[g] + 1 + (base - (ss->gk[g] + 1)) % coeff;
            if (x < ss->gk[g] + 1) x += coeff;
            if (x > hi || x + coeff <= hi) continue;
        } else if ((x = base) <= ss->gk[g] || x > hi) {
            continue;
        }
        st->pinned[g] = x;
        st->pin_groups |= 1u << g;
    }
    st->assume = ss;
    st->assume_groups = groups;
    tir_stmt *dropped = tir_mutate(&st->drop, s->u.loop.body);
    st->assume = NULL;
    st->pin_groups = 0;
    return dropped ? walk(st, dropped) : NULL;
}

/* for (v) parallel { if (test(v)) main_body else rest }; with 2 or 3
 * groups rest is a cascade, if (group 0's test) body assuming group 0
 * else if (group 1's) ... else body. NULL (errors aside: *err) when the
 * test never holds. */
static tir_stmt *branch_per_iteration(lp_state *st, const tir_stmt *s, int64_t lo, int64_t ext,
                                      const solve_state *ss, bool *err) {
    te_expr *v = s->u.loop.var;
    *err = true;
    te_expr *no = te_not(ss->test);
    if (!no) return NULL;
    te_analyzer_bind(st->an, v, lo, ext);
    bool never = te_analyzer_can_prove(st->an, no);
    bool always = te_analyzer_can_prove(st->an, ss->test);
    tir_stmt *m = NULL, *rest = NULL;
    bool failed = false;
    if (!never) {
        unsigned all = (1u << ss->ngroups) - 1;
        bool cascade = ss->ngroups > 1 && ss->ngroups <= LP_MAX_GROUPS;
        m = body_assuming(st, s, ss, all, 0);
        /* where every test fails (the last else of a cascade, or the one
         * else of one group) */
        rest = m && !always ? body_assuming(st, s, ss, 0, ss->ngroups == 1 || cascade ? all : 0)
                            : m;
        /* innermost first: the last group's body is the last else's then;
         * at group g's the groups before it fail (and with two, the other) */
        for (int g = cascade ? ss->ngroups - 1 : -1; rest && !always && g >= 0; g--) {
            te_expr *t = group_test(st, ss, g), *nt = t ? te_not(t) : NULL;
            if (!nt) {
                failed = true;
                break;
            }
            if (te_analyzer_can_prove(st->an, nt)) continue;
            unsigned failing = ((1u << g) - 1) | (ss->ngroups == 2 ? all & ~(1u << g) : 0);
            tir_stmt *b = body_assuming(st, s, ss, 1u << g, failing);
            rest = b ? tir_if(st->ctx, t, b, rest) : NULL;
        }
    }
    te_analyzer_unbind(st->an, v);
    if (never) {
        *err = false;
        return NULL;
    }
    if (!rest || failed) return NULL;
    tir_stmt *body = always ? m : tir_if(st->ctx, ss->test, m, rest);
    return body ? tir_for_with_body(st->ctx, s, body) : NULL;
}

static tir_stmt *walk_loop(tir_mutator *m, tir_stmt *s) {
    lp_state *st = m->user;
    int64_t lo, ext;
    bool splittable = s->u.loop.for_kind != TIR_FOR_VECTORIZED &&
                      s->u.loop.for_kind != TIR_FOR_THREAD &&
                      te_is_const_int(s->u.loop.min, &lo) &&
                      te_is_const_int(s->u.loop.extent, &ext) && ext > 1;
    if (splittable) {
        solve_state ss = {.var = s->u.loop.var, .lo = lo, .hi = lo + ext, .vlo = lo,
                          .vhi = lo + ext, .per_iter = s->u.loop.for_kind == TIR_FOR_PARALLEL};
        collect(st, &ss, s->u.loop.body);
        int64_t a = ss.lo < lo ? lo : ss.lo, b = ss.hi > lo + ext ? lo + ext : ss.hi;
        if (ss.ngroups && !ss.failed && make_test(st, &ss) &&
            !(ss.any && a < b && range_is_test(st, &ss, lo, ext, a, b))) {
            bool err;
            tir_stmt *r = branch_per_iteration(st, s, lo, ext, &ss, &err);
            if (r || err) return r;
        }
        if (ss.any && a < b) {
            te_analyzer_bind(st->an, s->u.loop.var, a, b - a);
            tir_stmt *main_body = tir_mutate(&st->drop, s->u.loop.body);
            te_analyzer_unbind(st->an, s->u.loop.var);
            if (!main_body) return NULL;
            if (main_body != s->u.loop.body && s->u.loop.for_kind == TIR_FOR_PARALLEL)
                return branch_inside(st, s, lo, ext, a, b, main_body);
            if (main_body != s->u.loop.body) {
                tir_stmt *parts[3];
                int n = 0;
                if (a > lo && !(parts[n++] = piece(st, s, lo, a - lo, s->u.loop.body, true)))
                    return NULL;
                if (!(parts[n++] = piece(st, s, a, b - a, main_body, false))) return NULL;
                if (b < lo + ext &&
                    !(parts[n++] = piece(st, s, b, lo + ext - b, s->u.loop.body, true)))
                    return NULL;
                return tir_seq(st->ctx, n, parts);
            }
        }
    }
    return tir_mutate_children(m, s); /* not split: inner loops get their turn, v bound */
}

tir_func *tir_pass_loop_partition(te_ctx *ctx, const tir_func *f) {
    if (!ctx || !f) return NULL;
    lp_state st = {.ctx = ctx, .an = te_analyzer_new(ctx)};
    if (!st.an) return NULL;
    st.walk = (tir_mutator){.ctx = ctx, .user = &st, .an = st.an, .kind = {[TIR_FOR] = walk_loop}};
    st.drop = (tir_mutator){
        .ctx = ctx, .user = &st, .an = st.an, .kind = {[TIR_IF] = drop_if}, .expr = drop_select};
    tir_stmt *body = walk(&st, f->body);
    te_analyzer_free(st.an);
    if (!body) return NULL;
    return body == f->body ? (tir_func *)f : tir_func_with_body(ctx, f, body);
}
