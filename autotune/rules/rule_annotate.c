/*
 * autotune/rules/rule_annotate.c — a compute stage without data reuse
 * keeps its loops (TUNE_UNIT_ANNOTATE; Ansor's random annotation of
 * untiled stages): the innermost axis split by a VECTOR hole and
 * vectorized, the outer loops (how many: a PARALLEL hole) fused into one
 * parallel loop, a reduction's reduce axes between the two; a transposing
 * copy also splits the axis that walks its input's rows and unrolls its
 * inner part right outside the vector loop (transpose_tile).
 *
 * Heuristic: every loop fused parallel, the innermost split by the
 * widest divisor up to a vector.
 */
#include "autotune/rules/rule.h"

static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    (void)sk, (void)made_by;
    return g->dag->stages[stage].needs_tiling ? TUNE_RULE_PASS : TUNE_RULE_APPLY;
}

static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    return tune__add_unit(sk, g->dag, TUNE_UNIT_ANNOTATE, stage, -1, 0);
}

static int holes(tune_sketch *sk, const tune_dag *dag, int u) {
    const te_tensor *t = dag->stages[sk->units[u].stage].tensor;
    int nsp = t->ndim;
    if (tune__add_hole(sk, TUNE_HOLE_VECTOR, u, 1, t->shape[nsp - 1], false))
        return TUNE__CAP_HOLES;
    /* An extent that is no multiple of 8 may take whole vectors and a
     * masked tail (tune__vector_valid). */
    sk->holes[sk->nholes - 1].tail = t->shape[nsp - 1] % 8 != 0 && t->shape[nsp - 1] > 8;
    return tune__add_hole(sk, TUNE_HOLE_PARALLEL, u, 1, nsp, false);
}

static const char *text(const tune_unit *un, const tune_dag *dag, const char **object) {
    *object = un->consumer >= 0 ? dag->stages[un->consumer].tensor->name : NULL;
    return "annotate";
}

static bool heuristic(const tune_heur *c, int u, int variant, tune_program *p) {
    (void)variant;
    const tune_hole *h0 = tune__unit_hole(c->sk, u, 0), *h1 = tune__unit_hole(c->sk, u, 1);
    if (!h0 || !h1) return false;
    p->vals[h0->offset] = tune__divisor_multiple(h0->extent, c->vlen, 1);
    p->vals[h1->offset] = h1->extent;
    return true;
}

/* Iterations of a parallel loop that keep the threads busy and balanced. */
#define PARALLEL_MIN_ITERS 64

/* The axis of transposing stage t (tune__transpose_axis) that
 * transpose_tile splits by vec: one whose extent and input run vec
 * divides; -1: none. */
static int transpose_split(const te_tensor *t, int64_t vec) {
    int64_t run;
    int k = vec > 1 ? tune__transpose_axis(t, &run) : -1;
    return k >= 0 && run % vec == 0 && t->shape[k] % vec == 0 ? k : -1;
}

/* How many outer loops of t (its axes, the last split by vec) to fuse
 * into its parallel loop: the fewest whose iterations reach
 * PARALLEL_MIN_ITERS (at most max). A loop fused needlessly costs a
 * division and a remainder per iteration to recover its index, which the
 * plain nested loops do not pay (an elementwise add ran at 0.4x of
 * sch_create's schedule with every loop fused). */
static int64_t parallel_loops(const te_tensor *t, int64_t vec, int64_t max) {
    int64_t prod = 1, k = 0;
    int tr = transpose_split(t, vec); /* split by vec: transpose_tile */
    while (k < max && k < t->ndim && prod < PARALLEL_MIN_ITERS) {
        int64_t e = t->shape[k];
        prod *= k == t->ndim - 1 || k == tr ? (e + vec - 1) / vec : e;
        k++;
    }
    return k < 1 ? 1 : k;
}

/* Whether t reads a row reduction of the sketch by rows (softmax's exp
 * reads the maxima, its output the sums: tune__row_depth). */
static bool reads_row_reduction(const tune_heur *c, const te_tensor *t) {
    for (int r = 0; r < c->sk->nunits; r++)
        if (c->sk->units[r].kind == TUNE_UNIT_RFACTOR &&
            tune__row_depth(c->dag->stages[c->sk->units[r].stage].tensor, t) > 0)
            return true;
    return false;
}

/* Structural: vectorized where the reads allow (tune__annotate_vectorizes)
 * by a power-of-two vector split, the fewest outer loops parallel that
 * keep the threads busy; with c->rows, only the rows a row reduction is
 * computed in. A stage that reads a row reduction by rows takes whole
 * vectors and a masked tail where no vector divides its row: a softmax
 * over rows of 100 ran its exp and normalization in 4 lanes of 8 at
 * 0.6x ONNX Runtime, in 8 and a tail 1.6x faster (AVX2). */
static bool structural(const tune_heur *c, int u, tune_program *p) {
    const tune_hole *h0 = tune__unit_hole(c->sk, u, 0), *h1 = tune__unit_hole(c->sk, u, 1);
    if (!h0 || !h1) return false;
    const te_tensor *t = c->dag->stages[c->sk->units[u].stage].tensor;
    bool vec = tune__annotate_vectorizes(t);
    p->vals[h0->offset] = vec ? tune__vector_factor(h0->extent, c->vlen) : 1;
    if (vec && reads_row_reduction(c, t) && tune__vector_valid(h0, c->vlen))
        p->vals[h0->offset] = c->vlen;
    p->vals[h1->offset] = parallel_loops(t, p->vals[h0->offset], h1->extent);
    /* In rows: parallel over the rows alone, the row consumer's and a stage
     * computed in its rows alike (no parallel loop inside the rows'). */
    int home = c->rows ? tune__row_home(c->sk, c->dag, u) : -1;
    for (int r = 0; c->rows && r < c->sk->nunits; r++) {
        int cu = tune__row_consumer(c->sk, c->dag, r);
        if (cu >= 0 && (cu == u || c->sk->units[cu].stage == home))
            p->vals[h1->offset] = tune__row_depth(c->dag->stages[c->sk->units[r].stage].tensor,
                                                  c->dag->stages[c->sk->units[cu].stage].tensor);
    }
    return true;
}

/* A reduction annotated in place suits its stage when that vectorizes. */
static int score(const tune_heur *c, int u) {
    const te_tensor *t = c->dag->stages[c->sk->units[u].stage].tensor;
    return t->body && t->body->kind == TE_REDUCE && tune__annotate_vectorizes(t) ? 2 : 0;
}

/* A transposing stage (tune__transpose_axis) vectorized across its
 * input's rows: the axis that walks the input's rows is split by the
 * vector and its inner part placed, unrolled, right outside the vector
 * loop, so that each vector's strided reads (a gather) and the next ones
 * touch the same few cache lines (a 16x16 block). FromNCHWc of a
 * 96x112x112 tensor read each line 16 times from L2 or beyond and took
 * 2.5x as long. ax[k] becomes the outer part. Nothing to do (0) when
 * the stage does not transpose; -1 on a schedule error. */
static int transpose_tile(tune_decoder *a, te_tensor *t, te_expr **ax, te_expr *lo, te_expr *li,
                          int64_t vec) {
    int n = t->ndim, k = transpose_split(t, vec);
    if (k < 0) return 0;
    te_expr *ko, *ki, *order[TE_MAX_DIMS + 2];
    if (sch_split(a->s, t, ax[k], vec, &ko, &ki)) return -1;
    ax[k] = ko;
    for (int d = 0; d < n - 1; d++) order[d] = ax[d];
    order[n - 1] = lo, order[n] = ki, order[n + 1] = li;
    if (sch_reorder(a->s, t, n + 2, order)) return -1;
    return sch_unroll(a->s, t, ki);
}

static int decode(tune_decoder *a, int u) {
    te_tensor *t = a->stage[a->sk->units[u].stage];
    int n = t->ndim, nr = nreduce_of(t);
    int64_t vec = tune__hv(a, u, 0)[0], par = tune__hv(a, u, 1)[0];
    te_expr *ax[TE_MAX_DIMS + 1], *lo, *li;
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(t, d))) return -1;
    if (sch_split(a->s, t, ax[n - 1], vec, &lo, &li)) return -1;
    ax[n - 1] = lo;
    if (nr > 0) {
        te_expr *order[2 * TE_MAX_DIMS + 1];
        int k = 0;
        for (int d = 0; d < n; d++) order[k++] = ax[d];
        for (int r = 0; r < nr; r++)
            if (!(order[k++] = sch_reduce_axis(t, r))) return -1;
        order[k++] = li;
        if (sch_reorder(a->s, t, k, order)) return -1;
    }
    if (transpose_tile(a, t, ax, lo, li, vec)) return -1;
    te_expr *f = tune__fuse_parallel(a, t, ax, n, par, NULL);
    if (!f) return -1;
    a->holder[u] = t;
    a->nloops[u] = 1;
    a->loops[u][0] = f;
    if (vec > 1 && sch_vectorize(a->s, t, li)) return -1;
    return 0;
}

const tune_rule tune_rule_annotate = {
    .name = "annotate",
    .when = TUNE_RULE_ON_STAGE,
    .unit = TUNE_UNIT_ANNOTATE,
    .condition = condition,
    .apply = apply,
    .holes = holes,
    .text = text,
    .random_hole = tune__random_hole_cpu,
    .mutate_hole = tune__mutate_hole_cpu,
    .heuristic = heuristic,
    .structural = structural,
    .structural_score = score,
    .decode = {[TUNE_PHASE_MAIN] = decode},
};
