/*
 * autotune/rules/structure.c — what a stage's body says about one of its
 * axes, for the structural fill (each rule's `structural` hook,
 * tune_program_structural): whether the reads along the axis walk memory
 * one element per step (vectorizable) or gather, and how wide a vector
 * split of an extent can be.
 *
 * Why here: the fills of several rules (annotation, packed tiles, row
 * reductions) decide from the same facts, and a user's operator or a
 * fused subgraph has nothing else to go by (issue 35 part 2).
 */
#include "autotune/rules/rule.h"

typedef struct {
    const te_expr *var;
    bool found;
} var_ctx;

static void find_scale(const te_expr *e, void *user) {
    var_ctx *c = user;
    if (e->kind == TE_MUL) {
        const te_expr *a = e->u.bin.a, *b = e->u.bin.b;
        if ((a->kind == TE_INT_IMM && a->u.ival != 1 && te_expr_uses_var(b, c->var)) ||
            (b->kind == TE_INT_IMM && b->u.ival != 1 && te_expr_uses_var(a, c->var)))
            c->found = true;
    }
    if (!c->found) te_expr_visit_children(e, find_scale, user);
}

/* True when index e steps by more than 1 per step of var (a stride). */
static bool scaled(const te_expr *e, const te_expr *var) {
    var_ctx c = {var, false};
    find_scale(e, &c);
    return c.found;
}

typedef struct {
    const te_tensor *except;
    const te_expr *var;
    tune_reads r;
} read_ctx;

static void find_read(const te_expr *e, void *user) {
    read_ctx *c = user;
    if (e->kind == TE_READ && e->u.read.tensor != c->except) {
        int n = e->u.read.ndim;
        for (int d = 0; d < n; d++)
            if (te_expr_uses_var(e->u.read.indices[d], c->var)) {
                if (d == n - 1 && !scaled(e->u.read.indices[d], c->var)) c->r.last = true;
                else c->r.other = true;
            }
    }
    te_expr_visit_children(e, find_read, user);
}

tune_reads tune__reads_along(const te_tensor *t, const te_tensor *except, const te_expr *var) {
    read_ctx c = {except, var, {false, false}};
    if (t->body) find_read(t->body, &c);
    return c.r;
}

bool tune__annotate_vectorizes(const te_tensor *t) {
    if (!t->body || t->body->kind != TE_REDUCE) return true;
    if (t->ndim < 1) return false;
    tune_reads r = tune__reads_along(t, NULL, t->axes[t->ndim - 1]);
    return r.last && !r.other;
}

typedef struct {
    const te_tensor *t;
    int axis; /* the candidate, -1: none yet, -2: refused */
    int64_t run;
} transpose_ctx;

/* The axis of t that index e uses, alone; -1: none or several. */
static int only_axis(const te_tensor *t, const te_expr *e) {
    int found = -1;
    for (int d = 0; d < t->ndim; d++)
        if (te_expr_uses_var(e, t->axes[d])) {
            if (found >= 0) return -1;
            found = d;
        }
    return found;
}

static void find_transpose(const te_expr *e, void *user) {
    transpose_ctx *c = user;
    if (c->axis == -2) return;
    if (e->kind == TE_READ) {
        int n = e->u.read.ndim, inner = c->t->ndim - 1;
        const te_expr *last = e->u.read.indices[n - 1];
        bool across = false;
        for (int d = 0; d < n - 1; d++)
            across |= te_expr_uses_var(e->u.read.indices[d], c->t->axes[inner]);
        int a = only_axis(c->t, last);
        if (across && a >= 0 && a != inner && !scaled(last, c->t->axes[a])) {
            int64_t run = e->u.read.tensor->shape[n - 1];
            if (c->axis >= 0 && (c->axis != a || c->run != run)) c->axis = -2; /* reads disagree */
            else c->axis = a, c->run = run;
        }
    }
    te_expr_visit_children(e, find_transpose, user);
}

int tune__transpose_axis(const te_tensor *t, int64_t *run) {
    if (!t->body || t->body->kind == TE_REDUCE || t->ndim < 2) return -1;
    transpose_ctx c = {t, -1, 0};
    find_transpose(t->body, &c);
    if (c.axis < 0) return -1;
    *run = c.run;
    return c.axis;
}

int64_t tune__vector_factor(int64_t ext, int vlen) {
    for (int64_t f = vlen; f >= 2; f /= 2)
        if (ext % f == 0) return f;
    return 1;
}

typedef struct {
    const te_tensor *r, *c;
    int depth; /* -1 before the first read of r, 0 once one is not by rows */
} lead_ctx;

/* The row axes of one read of r: its leading indices c's own leading
 * axes, each following index a constant 0 of an extent-1 dimension (a
 * statistic kept with its reduced dimensions: ONNX's Softmax and
 * ReduceMean with keepdims read max[i, 0] at [i, j]). 0: none. */
static int read_depth(const te_expr *e, const te_tensor *r, const te_tensor *c) {
    int n = e->u.read.ndim, k = 0;
    if (n != r->ndim) return 0;
    while (k < n && k < c->ndim && e->u.read.indices[k] == c->axes[k]) k++;
    for (int d = k; d < n; d++) {
        const te_expr *ix = e->u.read.indices[d];
        if (r->shape[d] != 1 || ix->kind != TE_INT_IMM || ix->u.ival != 0) return 0;
    }
    return k < c->ndim ? k : 0;
}

static void find_lead(const te_expr *e, void *user) {
    lead_ctx *l = user;
    if (e->kind == TE_READ && e->u.read.tensor == l->r) {
        int k = read_depth(e, l->r, l->c);
        l->depth = l->depth < 0 || l->depth == k ? k : 0;
    }
    te_expr_visit_children(e, find_lead, user);
}

int tune__row_depth(const te_tensor *r, const te_tensor *c) {
    if (!c->body) return 0;
    lead_ctx lc = {r, c, -1};
    find_lead(c->body, &lc);
    return lc.depth > 0 ? lc.depth : 0;
}

int tune__row_consumer(const tune_sketch *sk, const tune_dag *dag, int u) {
    const tune_stage_info *si = &dag->stages[sk->units[u].stage];
    const te_tensor *r = si->tensor;
    if (sk->units[u].kind != TUNE_UNIT_RFACTOR || si->is_output || si->nconsumers != 1 ||
        r->ndim < 1)
        return -1;
    int cu = tune__unit_of(sk, si->consumers[0], TUNE_UNIT_ANNOTATE);
    if (cu < 0) return -1;
    const te_tensor *c = dag->stages[si->consumers[0]].tensor;
    int depth = tune__row_depth(r, c);
    if (depth < 1) return -1;
    /* A statistic kept with its reduced dimensions: for rows of
     * TUNE__MIN_FUSED_ROW elements or more, or where the reduction sums a
     * computed stage (no reduction) that the consumer reads too: softmax's
     * sum of exp, which in the rows is one row, not a tensor (rows of 100:
     * 4 % faster; of 197: level). In a short row each stage's horizontal
     * sum ends a chain the next stage waits on: LayerNorm's rows of 320
     * and 768 ran 6-10 % slower fused than stage by stage, InstanceNorm's
     * of 10,240 2.2x faster (Zen 3). */
    int64_t row = 1;
    for (int d = depth; d < c->ndim; d++) row *= c->shape[d];
    if (depth == r->ndim || row >= TUNE__MIN_FUSED_ROW) return cu;
    for (int k = 0; k < si->nproducers; k++) {
        const tune_stage_info *pi = &dag->stages[si->producers[k]];
        for (int q = 0; !pi->is_placeholder && !pi->is_reduction && q < pi->nconsumers; q++)
            if (pi->consumers[q] == si->consumers[0]) return cu;
    }
    return -1;
}

typedef struct {
    const te_tensor *c, *p;
    bool ok, seen;
} exact_walk;

static void exact_visit(const te_expr *e, void *user) {
    exact_walk *w = user;
    if (e->kind == TE_READ && e->u.read.tensor == w->p) {
        w->seen = true;
        if (w->p->ndim != w->c->ndim) w->ok = false;
        for (int d = 0; w->ok && d < w->c->ndim; d++)
            if (e->u.read.indices[d] != w->c->axes[d] || w->p->shape[d] != w->c->shape[d])
                w->ok = false;
    }
    te_expr_visit_children(e, exact_visit, user);
}

void tune__reads_exactly(const te_expr *e, const te_tensor *c, const te_tensor *p, bool *ok,
                         bool *seen) {
    exact_walk w = {c, p, true, false};
    exact_visit(e, &w);
    *ok = w.ok;
    *seen = w.seen;
}

int tune__row_home(const tune_sketch *sk, const tune_dag *dag, int u) {
    int cu = tune__row_consumer(sk, dag, u);
    if (cu >= 0) return sk->units[cu].stage;
    const tune_stage_info *ei = &dag->stages[sk->units[u].stage];
    if (sk->units[u].kind != TUNE_UNIT_ANNOTATE || ei->is_output || ei->is_reduction) return -1;
    int home = -1, nrows = 0;
    for (int k = 0; k < ei->nconsumers; k++) {
        int c = ei->consumers[k], ru = tune__unit_of(sk, c, TUNE_UNIT_RFACTOR);
        int rc = ru >= 0 ? tune__row_consumer(sk, dag, ru) : -1;
        if (rc >= 0) {
            nrows++;
            c = sk->units[rc].stage;
        } else {
            const te_tensor *ct = dag->stages[c].tensor;
            bool ok, seen;
            if (!ct->body || tune__unit_of(sk, c, TUNE_UNIT_ANNOTATE) < 0) return -1;
            tune__reads_exactly(ct->body, ct, ei->tensor, &ok, &seen);
            if (!ok || !seen) return -1;
        }
        if (home >= 0 && home != c) return -1;
        home = c;
    }
    return nrows > 0 ? home : -1;
}

/* e without a constant factor (a stride, a dilation). */
static const te_expr *unscaled(const te_expr *e) {
    if (e->kind != TE_MUL) return e;
    if (e->u.bin.a->kind == TE_INT_IMM) return e->u.bin.b;
    if (e->u.bin.b->kind == TE_INT_IMM) return e->u.bin.a;
    return e;
}

/* The axis of c that e is, alone or scaled; -1. */
static int axis_of(const te_tensor *c, const te_expr *e) {
    e = unscaled(e);
    for (int d = 0; d < c->ndim; d++)
        if (e == c->axes[d]) return d;
    return -1;
}

static bool is_reduce_axis(const te_tensor *c, const te_expr *e) {
    e = unscaled(e);
    for (int r = 0; r < c->body->u.reduce.naxes; r++)
        if (e == c->body->u.reduce.axes[r]) return true;
    return false;
}

typedef struct {
    const te_tensor *p, *c;
    int kind[TE_MAX_DIMS]; /* per axis of c: 0 unseen, 1 plain, 2 sliding */
    bool ok;
} plane_ctx;

/* Each read of p: every index an axis of c (plain) or an axis of c plus a
 * reduce axis (sliding: a window tap), each axis of c one kind. */
static void find_plane(const te_expr *e, void *user) {
    plane_ctx *pc = user;
    if (!pc->ok) return;
    if (e->kind == TE_READ && e->u.read.tensor == pc->p) {
        for (int d = 0; d < e->u.read.ndim && pc->ok; d++) {
            const te_expr *ix = e->u.read.indices[d];
            int a = axis_of(pc->c, ix), kind = 1;
            if (a < 0 && ix->kind == TE_ADD) {
                kind = 2;
                if (is_reduce_axis(pc->c, ix->u.bin.b)) a = axis_of(pc->c, ix->u.bin.a);
                else if (is_reduce_axis(pc->c, ix->u.bin.a)) a = axis_of(pc->c, ix->u.bin.b);
            }
            if (a < 0 || (pc->kind[a] && pc->kind[a] != kind)) pc->ok = false;
            else pc->kind[a] = kind;
        }
        return;
    }
    te_expr_visit_children(e, find_plane, user);
}

/* The kind of each axis of consumer c in its reads of p (plane_ctx);
 * false when a read is neither plain nor a window tap. */
static bool plane_kinds(const tune_dag *dag, int producer, int consumer, int kind[TE_MAX_DIMS]) {
    const te_tensor *p = dag->stages[producer].tensor, *c = dag->stages[consumer].tensor;
    if (!c->body || c->body->kind != TE_REDUCE || c->ndim < 2 || c->ndim > TE_MAX_DIMS)
        return false;
    plane_ctx pc = {p, c, {0}, true};
    find_plane(c->body, &pc);
    for (int d = 0; d < c->ndim; d++) kind[d] = pc.kind[d];
    return pc.ok;
}

int tune__plane_axes(const tune_dag *dag, int producer, int consumer) {
    int kind[TE_MAX_DIMS], n = dag->stages[consumer].tensor->ndim;
    if (!plane_kinds(dag, producer, consumer, kind)) return 0;
    int lead = 0;
    while (lead < n && kind[lead] == 1) lead++;
    for (int d = lead; d < n; d++)
        if (kind[d] != 2) return 0;
    return lead < n ? lead : 0;
}

typedef struct {
    const te_expr *var;
    bool uses;
} cond_ctx;

static void find_cond(const te_expr *e, void *user) {
    cond_ctx *c = user;
    if (e->kind == TE_SELECT && te_expr_uses_var(e->u.sel.cond, c->var)) c->uses = true;
    if (!c->uses) te_expr_visit_children(e, find_cond, user);
}

bool tune__plane_block(const tune_dag *dag, int producer, int consumer) {
    const te_tensor *p = dag->stages[producer].tensor, *c = dag->stages[consumer].tensor;
    int kind[TE_MAX_DIMS], n = c->ndim, d = 0;
    if (!plane_kinds(dag, producer, consumer, kind) || !p->body || p->ndim < 1) return false;
    int lead = 0, win = 0;
    while (d < n && kind[d] == 1) d++, lead++;
    while (d < n && kind[d] == 2) d++, win++;
    if (!lead || !win || d == n) return false;
    for (; d < n; d++)
        if (kind[d] != 1) return false;
    /* The block's lanes share the padding's condition. */
    cond_ctx cc = {p->axes[p->ndim - 1], false};
    find_cond(p->body, &cc);
    return !cc.uses;
}
