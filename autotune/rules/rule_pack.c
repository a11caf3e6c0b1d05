/*
 * autotune/rules/rule_pack.c — packing of an input a register tile
 * strides through (TUNE_UNIT_PACK; GEMM packing, TVM's layout rewrite):
 * a cache_read copy computed at the root, packed (sch_pack) on the
 * dimension the tile's vectorized axis indexes, by that axis's innermost
 * tile factor, so the tile's reduction loop reads one contiguous panel.
 * No holes: the factor follows the tile's sizes.
 *
 * A variant rule: each variant of a tiling vectorized on the last axis
 * (TILE, TILE_FUSE, TILE_CACHE) that has such an input gets a twin with
 * it packed, after the unpacked one. The packed register tile
 * (rule_packed_tile.c) adds its PACK unit itself.
 */
#include "autotune/rules/rule.h"

typedef struct {
    const te_tensor *input;
    const te_expr *const *raxes;
    int nr;
    bool found;
} reduce_read_ctx;

static void uses_reduce_visit(const te_expr *e, void *user) {
    reduce_read_ctx *rc = user;
    for (int k = 0; k < rc->nr; k++)
        if (e == rc->raxes[k]) rc->found = true;
    te_expr_visit_children(e, uses_reduce_visit, user);
}

static void reduce_read_visit(const te_expr *e, void *user) {
    reduce_read_ctx *rc = user;
    if (e->kind == TE_READ && e->u.read.tensor == rc->input)
        for (int d = 0; d < e->u.read.ndim; d++) uses_reduce_visit(e->u.read.indices[d], rc);
    te_expr_visit_children(e, reduce_read_visit, user);
}

/* An input (placeholder) read at exactly that axis and walked by a reduce
 * axis, so the register tile's reduction loop strides through it (B[k, j]
 * of a matmul, W[j, k] of a dense layer, W[k, c, r, s] of a convolution
 * vectorized over output channels). */
int tune__pack_candidate(const tune_dag *dag, int i, int axis, int *dim) {
    const te_tensor *t = dag->stages[i].tensor;
    if (!t->body || t->body->kind != TE_REDUCE || axis < 0 || axis >= t->ndim) return -1;
    const tune_stage_info *si = &dag->stages[i];
    for (int k = 0; k < si->nproducers; k++) {
        int p = si->producers[k];
        const te_tensor *in = dag->stages[p].tensor;
        if (!dag->stages[p].is_placeholder || in->ndim >= TE_MAX_DIMS) continue;
        int d = te_expr_read_dim(t->body, in, t->axes[axis]);
        if (d < 0) continue;
        reduce_read_ctx rc = {in, (const te_expr *const *)t->body->u.reduce.axes,
                              t->body->u.reduce.naxes, false};
        reduce_read_visit(t->body, &rc);
        if (rc.found) {
            *dim = d;
            return p;
        }
    }
    return -1;
}

/* One whose extent is a whole number of host vectors and at which an
 * input can be packed. */
int tune__packed_vector_axis(const tune_dag *dag, int i, int *input, int *dim) {
    const te_tensor *t = dag->stages[i].tensor;
    int lanes = tune_host_vector_lanes();
    for (int d = t->ndim - 2; d >= 0; d--)
        if (t->shape[d] % lanes == 0 && (*input = tune__pack_candidate(dag, i, d, dim)) >= 0)
            return d;
    return -1;
}

static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    (void)sk;
    int dim;
    return made_by && made_by->tiles_last_axis &&
                   tune__pack_candidate(g->dag, stage, g->dag->stages[stage].tensor->ndim - 1,
                                        &dim) >= 0
               ? TUNE_RULE_APPLY
               : TUNE_RULE_PASS;
}

static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    int dim = 0;
    int input = tune__pack_candidate(g->dag, stage, g->dag->stages[stage].tensor->ndim - 1, &dim);
    return tune__add_unit(sk, g->dag, TUNE_UNIT_PACK, input, stage, dim);
}

static const char *text(const tune_unit *un, const tune_dag *dag, const char **object) {
    *object = dag->stages[un->consumer].tensor->name;
    return "cache_read, pack for";
}

static bool heuristic(const tune_heur *c, int u, int variant, tune_program *p) {
    (void)c, (void)u, (void)variant, (void)p;
    return true; /* no holes */
}

static bool structural(const tune_heur *c, int u, tune_program *p) {
    return heuristic(c, u, 0, p);
}

/* A packed operand: a sketch that packs ranks above its unpacked twin. */
static int score(const tune_heur *c, int u) {
    (void)c, (void)u;
    return 1;
}

/* Whether t is one of w's constant arguments. */
static bool is_constant(const tune_workload *w, const te_tensor *t) {
    for (int i = 0; i < w->nargs && i < 64; i++)
        if (w->args[i] == t) return (w->constant_args >> i) & 1;
    return false;
}

/* Runs after the tiling (TUNE_PHASE_LATE), so the reader (the tiled
 * stage or its cache) exists: the copy's block loop parallel (with the
 * next loops while its extent is 1), its inner loop vectorized. */
static int decode(tune_decoder *a, int u) {
    te_tensor *t = a->stage[a->sk->units[u].stage];
    int cu = -1;
    for (int k = 0; k < a->sk->nunits; k++) {
        tune_unit_kind kk = a->sk->units[k].kind;
        if (a->sk->units[k].stage == a->sk->units[u].consumer && a->holder[k] &&
            (kk == TUNE_UNIT_TILE || kk == TUNE_UNIT_TILE_CACHE || kk == TUNE_UNIT_TILE_FUSE ||
             kk == TUNE_UNIT_TILE_CACHE_PACKED))
            cu = k;
    }
    te_ctx *ctx = sch_ctx(a->s);
    if (cu < 0) return te_error(ctx, "autotune: packing of '%s' has no tiled reader", t->name);
    te_tensor *reader = a->holder[cu];
    const tune_unit *cun = &a->sk->units[cu];
    int v = cun->kind == TUNE_UNIT_TILE_CACHE_PACKED ? cun->vec_dim
                                                      : a->stage[cun->stage]->ndim - 1;
    int64_t f = tune__hv(a, cu, v)[2];
    int dim = a->sk->units[u].vec_dim;
    if (dim < 0 || dim >= t->ndim)
        return te_error(ctx, "autotune: '%s' has no dimension %d to pack", t->name, dim);
    te_tensor *copy = sch_cache_read(a->s, t, "global", 1, &reader);
    te_tensor *packed = copy ? sch_pack(a->s, copy, sch_axis(copy, dim), f) : NULL;
    if (!packed) return -1;
    /* The block loop first (extent 1 where f is the whole dimension):
     * the axes after it are taken into the parallel loop then, when the
     * copy runs at each call. A constant input is packed once, before
     * the calls (tune_workload.constant_args), so its copy keeps the
     * block loop alone, as the logs stored before this rule did. */
    te_expr *ax[TE_MAX_DIMS + 1];
    int n = packed->ndim > 1 ? packed->ndim - 1 : 1;
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(packed, d))) return -1;
    if (is_constant(a->w, t) ? sch_parallel(a->s, packed, ax[0])
                             : !tune__fuse_parallel(a, packed, ax, n, 1, NULL))
        return -1;
    return f > 1 ? sch_vectorize(a->s, packed, sch_axis(packed, packed->ndim - 1)) : 0;
}

const tune_rule tune_rule_pack = {
    .name = "pack a strided input",
    .when = TUNE_RULE_ON_VARIANT,
    .unit = TUNE_UNIT_PACK,
    .condition = condition,
    .apply = apply,
    .text = text,
    .heuristic = heuristic,
    .structural = structural,
    .structural_score = score,
    .decode = {[TUNE_PHASE_LATE] = decode},
};
