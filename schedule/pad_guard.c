/*
 * schedule/pad_guard.c — padding guards: a sum reduction skips the taps
 * that read zero padding.
 *
 * A convolution sums Pad[c, y + ry, x + rx] * W[...] where Pad is
 * select(inside, X[...], 0): at the image's edges some taps multiply a
 * padding zero. On ResNet-50's 7x7 layers those are 18 % of the
 * multiply-adds, and oneDNN's direct convolutions skip them (its
 * generated kernels clip the filter rows and drop the padded columns'
 * taps); TVM and Halide compute them. Lowering skips them too: the update
 * of a sum whose source is a product with a factor that is zero outside
 * a condition — select(c, e, 0) inlined, or a read of a materialised
 * stage whose body is one (through copies such as cache_read) — is
 * guarded by the condition's conjuncts, each `if (likely(...))` placed
 * just inside the innermost loop it depends on. Loop partitioning then
 * splits the loops at the edges, so the interior runs unguarded and the
 * edge pieces fold their guards away (a filter row above the image: a
 * piece without those taps).
 *
 * Exact for finite values: a skipped tap adds 0 * w = 0. A weight of
 * inf or NaN facing the padding no longer turns the output into NaN, as
 * in oneDNN.
 *
 * Not guarded: a conjunct that depends on a vectorized loop (it would
 * become a masked vector operation, slower than the zero it skips); one
 * false on less than PAD_MIN_SHARE of its variables' iterations (the
 * pieces cost more compile time than the taps they skip); any stage of a
 * schedule with thread bindings (the GPU's kernels read the padding with
 * a select; a branch there diverges threads instead). Loop partitioning
 * splits the reduction's loops for these guards, not the loops outside
 * it (tir/pass_loop_partition.c), so the code grows by the reduction's
 * edge pieces only.
 */
#include "schedule/lower_internal.h"

/* How deep a chain of copies (Pad_local[i] = Pad[i]) is followed. */
#define PAD_COPY_DEPTH 4
/* A conjunct is guarded where it skips at least this share of the
 * iterations of its variables: partitioning at the edges copies the
 * reduction's inner loops (2-2.5x the code and compile time of a 3x3
 * convolution), which pays where the padding is a good share of the taps
 * (ResNet-50: 4.8 % a side at 7x7, 2.4 % at 14x14, 1.2 % at 28x28), not
 * where it is a sliver (0.6 % at 56x56; 0.5 % for the 7x7 stem at 112). */
#define PAD_MIN_SHARE 0.01
/* Iterations counted for that share, at most; more: not guarded. */
#define PAD_COUNT_MAX 4096

typedef struct {
    lower_state *L;
    int st;
    int nsub;
    te_expr *const *vars, *const *vals;
    lower_pad_guard *out;
    int n, max;
} pad_state;

static void find_read(const te_expr *e, void *user) {
    bool *found = user;
    if (*found) return;
    if (e->kind == TE_READ || e->kind == TE_BUFFER_LOAD || e->kind == TE_LOAD) *found = true;
    else te_expr_visit_children(e, find_read, user);
}

static bool is_zero(const te_expr *e) {
    int64_t i;
    double f;
    return (te_is_const_int(e, &i) && i == 0) || (te_is_const_float(e, &f) && f == 0.0);
}

static bool schedule_binds_threads(const sch_schedule *s) {
    for (int i = 0; i < s->nstages; i++)
        for (int a = 0; a < s->stages[i].nattr; a++)
            if (s->stages[i].attrs[a].ann == SCH_ANN_BIND) return true;
    return false;
}

/* The share of the iterations of the root variables c uses (a padding
 * conjunct: y and ry) where c is false, counted in integers from the
 * affine form of its two sides' difference (lowering runs for every
 * candidate the search ranks); -1 when c is not an affine comparison of
 * them or there are more than PAD_COUNT_MAX to count. */
static double false_share(pad_state *ps, te_expr *c) {
    const sch_stage *g = &ps->L->s->stages[ps->st];
    bool ordering = c->kind == TE_LT || c->kind == TE_LE || c->kind == TE_GT || c->kind == TE_GE;
    if (!ordering || !te_dtype_is_int(c->u.bin.a->dtype)) return -1;
    te_expr *vars[TE_MAX_DIMS * 2];
    int64_t ext[TE_MAX_DIMS * 2], coef[TE_MAX_DIMS * 2], idx[TE_MAX_DIMS * 2], total = 1, k;
    int n = 0;
    for (int d = 0; d < g->nroot && n < TE_MAX_DIMS * 2; d++)
        if (te_expr_uses_var(c, g->root[d])) {
            vars[n] = g->root[d], ext[n] = g->root[d]->u.var.extent, idx[n] = 0;
            if (ext[n] < 1 || (total *= ext[n]) > PAD_COUNT_MAX) return -1;
            n++;
        }
    te_expr *d = te_simplify(ps->L->ctx, te_sub(c->u.bin.a, c->u.bin.b));
    if (!d || !te_affine_form(d, n, vars, coef, &k)) return -1;
    int64_t nfalse = 0;
    for (int64_t it = 0; it < total; it++) {
        int64_t x = k;
        for (int i = 0; i < n; i++) x += coef[i] * idx[i];
        bool holds = c->kind == TE_LT ? x < 0 : c->kind == TE_LE ? x <= 0
                     : c->kind == TE_GT ? x > 0 : x >= 0;
        nfalse += !holds;
        for (int i = n - 1; i >= 0 && ++idx[i] == ext[i]; i--) idx[i] = 0;
    }
    return (double)nfalse / (double)total;
}

/* Adds conjunct c (over the stage's root variables) as a guard, unless it
 * depends on a vectorized loop or skips too little. Returns false when it
 * was refused. */
static bool add_conjunct(pad_state *ps, te_expr *c) {
    bool has_read = false;
    find_read(c, &has_read);
    if (has_read) return false;
    if (false_share(ps, c) < PAD_MIN_SHARE) return false;
    const sch_stage *g = &ps->L->s->stages[ps->st];
    te_expr *v = te_substitute(ps->L->ctx, c, ps->nsub, ps->vars, ps->vals);
    if (!v) return false;
    v = te_analyzer_simplify(ps->L->an, v);
    int64_t k;
    if (te_is_const_int(v, &k) && k) return true; /* always inside */
    int level = -1;
    for (int l = 0; l < g->nleaf; l++) {
        if (!te_expr_uses_var(v, g->leaf[l])) continue;
        const sch_iter_attr *a = sch__attr(g, g->leaf[l]);
        if (a && a->ann == SCH_ANN_VECTORIZE) return false;
        level = l;
    }
    for (int i = 0; i < ps->n; i++)
        if (te_expr_equal(ps->out[i].cond, v)) return true;
    if (ps->n == ps->max) return false;
    ps->out[ps->n++] = (lower_pad_guard){v, level};
    return true;
}

/* Every conjunct of c added; false when one was refused. */
static bool add_conjuncts(pad_state *ps, te_expr *c) {
    if (c->kind == TE_AND) {
        bool a = add_conjuncts(ps, c->u.bin.a);
        return add_conjuncts(ps, c->u.bin.b) && a;
    }
    return add_conjunct(ps, c);
}

/* The condition outside which read r (of a materialised stage) is zero,
 * over the reader's variables; NULL when none is known. */
static te_expr *read_zero_outside(lower_state *L, const te_expr *r, int depth) {
    const te_tensor *t = r->u.read.tensor;
    int p = sch__stage_index(L->s, t);
    if (p < 0 || depth > PAD_COPY_DEPTH) return NULL;
    const sch_stage *g = &L->s->stages[p];
    const te_expr *body = L->ls[p].body;
    if (g->op != t || t->kind != TE_OP_COMPUTE || g->attach == SCH_ATTACH_INLINE || !body ||
        r->u.read.ndim != t->ndim)
        return NULL;
    if (body->kind == TE_SELECT && is_zero(body->u.sel.f))
        return te_substitute(L->ctx, body->u.sel.cond, t->ndim, t->axes, r->u.read.indices);
    if (body->kind != TE_READ) return NULL;
    /* A copy: the condition of what it copies, at the copied indices. */
    te_expr *inner = te_substitute(L->ctx, (te_expr *)body, t->ndim, t->axes,
                                   r->u.read.indices);
    return inner && inner->kind == TE_READ ? read_zero_outside(L, inner, depth + 1) : NULL;
}

/* The factors of a product: guards from each; returns e with the selects
 * whose conditions are wholly guarded replaced by their value. */
static te_expr *guard_factors(pad_state *ps, te_expr *e) {
    if (!e) return NULL;
    if (e->kind == TE_MUL) {
        te_expr *a = guard_factors(ps, e->u.bin.a), *b = guard_factors(ps, e->u.bin.b);
        if (!a || !b) return NULL;
        return a == e->u.bin.a && b == e->u.bin.b ? e : te_mul(a, b);
    }
    if (e->kind == TE_SELECT && is_zero(e->u.sel.f))
        return add_conjuncts(ps, e->u.sel.cond) ? e->u.sel.t : e;
    if (e->kind == TE_READ) {
        te_expr *c = read_zero_outside(ps->L, e, 0);
        if (c) add_conjuncts(ps, c);
    }
    return e;
}

int sch__lower_pad_guards(lower_state *L, int st, int nsub, te_expr *const *vars,
                          te_expr *const *vals, te_expr **source, lower_pad_guard *out,
                          int max) {
    const te_expr *body = L->ls[st].body;
    if (!body || body->kind != TE_REDUCE || body->u.reduce.op != TE_REDUCE_SUM ||
        schedule_binds_threads(L->s))
        return 0;
    pad_state ps = {L, st, nsub, vars, vals, out, 0, max};
    te_expr *src = guard_factors(&ps, *source);
    if (!src) return -1;
    *source = src;
    return ps.n;
}
