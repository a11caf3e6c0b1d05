/*
 * autotune/rules/rule_gpu_shared.c — shared-memory copies
 * (TUNE_UNIT_GPU_SHARED; Ansor's AddCacheRead for GPU): every producer
 * read only by a tiled stage gets a cache_read "shared" for the tile's
 * accumulator, computed at its innermost outer reduction tile loop and
 * copied cooperatively (loops fused, split by the block's thread count,
 * bound to threadIdx.x, a vectorized inner part of GPU_FETCH lanes where
 * the tiles allow). An inlined padding stage is computed into its copy.
 * A sketch rule: applied once the stages have their units.
 */
#include "autotune/rules/rule.h"

static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    (void)g, (void)sk, (void)stage, (void)made_by;
    return TUNE_RULE_APPLY_AND_SKIP; /* on the sketch itself, not a variant */
}

static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    (void)stage;
    int ntiled = sk->nunits;
    for (int u = 0; u < ntiled; u++) {
        if (sk->units[u].kind != TUNE_UNIT_GPU_TILE) continue;
        const tune_stage_info *si = &g->dag->stages[sk->units[u].stage];
        for (int k = 0; k < si->nproducers; k++) {
            int p = si->producers[k];
            if (g->dag->stages[p].nconsumers != 1) continue;
            if (sk->nunits >= TUNE_MAX_UNITS) return TUNE__CAP_UNITS;
            sk->units[sk->nunits++] = (tune_unit){TUNE_UNIT_GPU_SHARED, p, sk->units[u].stage, 0};
        }
    }
    return 0;
}

static int holes(tune_sketch *sk, const tune_dag *dag, int u) {
    (void)dag;
    return tune__add_hole(sk, TUNE_HOLE_GPU_FETCH, u, 1, TUNE__GPU_NFETCH, false);
}

static const char *text(const tune_unit *un, const tune_dag *dag, const char **object) {
    *object = dag->stages[un->consumer].tensor->name;
    return "cache_read shared for ";
}

/* The copy, read by the tiled stage's accumulator (which exists: the
 * ACCUMULATE pass came first). */
static int decode_cache_read(tune_decoder *a, int u) {
    const tune_unit *un = &a->sk->units[u];
    te_tensor *reader = a->local[un->consumer];
    if (!reader)
        return te_error(sch_ctx(a->s), "autotune: shared copy of '%s' for untiled stage %d",
                        a->stage[un->stage]->name, un->consumer);
    return (a->shared[u] = sch_cache_read(a->s, a->stage[un->stage], "shared", 1, &reader))
               ? 0
               : -1;
}

/* The lanes a shared copy of p for tiled stage t can load at once: every
 * read of p in t's body must index p's innermost dimension with one and
 * the same axis of t, whose block tile and p's row both take whole
 * vectors (so each vector is contiguous and aligned). */
typedef struct {
    const te_tensor *p;
    const te_expr *var;
    bool ok;
} inner_walk;

static void inner_visit(const te_expr *e, void *user) {
    inner_walk *w = user;
    if (e->kind == TE_READ && e->u.read.tensor == w->p) {
        const te_expr *ix = e->u.read.indices[e->u.read.ndim - 1];
        if (ix->kind != TE_VAR || (w->var && w->var != ix)) w->ok = false;
        else w->var = ix;
    }
    te_expr_visit_children(e, inner_visit, user);
}

static int64_t fetch_lanes(const tune_decoder *a, int tu, const te_tensor *t, const te_tensor *p,
                           int64_t want) {
    if (want <= 1 || p->kind != TE_OP_PLACEHOLDER) return 1;
    inner_walk w = {p, NULL, true};
    inner_visit(t->body, &w);
    if (!w.ok || !w.var) return 1;
    int64_t tile = 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->axes[d] == w.var) {
            const int64_t *f = tune__hv(a, tu, d);
            tile = f[0] * f[1] * f[2] * f[3];
        }
    for (int k = 0; k < nreduce_of(t); k++)
        if (t->body->u.reduce.axes[k] == w.var) {
            const int64_t *f = tune__hv(a, tu, t->ndim + k);
            tile = f[0] * f[1];
        }
    int64_t lanes = want;
    while (lanes > 1 && (tile % lanes || p->shape[p->ndim - 1] % lanes)) lanes /= 2;
    return lanes;
}

/* The shared copy of unit u: at the reader's last outer reduce loop,
 * fetched by all the block's threads. */
static int apply_shared(tune_decoder *a, int u) {
    const tune_unit *un = &a->sk->units[u];
    te_tensor *S = a->shared[u], *L = a->local[un->consumer];
    te_expr *at = a->fetch_at[un->consumer];
    int64_t threads = a->threads[un->consumer];
    int tu = -1;
    for (int k = 0; k < a->sk->nunits; k++)
        if (a->sk->units[k].kind == TUNE_UNIT_GPU_TILE && a->sk->units[k].stage == un->consumer)
            tu = k;
    if (!S || !L || !at || tu < 0) {
        te_error(sch_ctx(a->s), "autotune: shared copy of '%s' has no tiled reader",
                 a->stage[un->stage]->name);
        return -1;
    }
    if (sch_compute_at(a->s, S, L, at)) return -1;
    te_expr *ax[TE_MAX_DIMS], *f, *vi, *o, *tx;
    for (int d = 0; d < S->ndim; d++)
        if (!(ax[d] = sch_axis(S, d))) return -1;
    if (!(f = tune__fuse_all(a, S, ax, S->ndim))) return -1;
    int64_t lanes = fetch_lanes(a, tu, a->stage[un->consumer], a->stage[un->stage],
                                tune__gpu_fetch[tune__hv(a, u, 0)[0]]);
    if (lanes > 1 && (sch_split(a->s, S, f, lanes, &f, &vi) || sch_vectorize(a->s, S, vi)))
        return -1;
    if (sch_split(a->s, S, f, threads, &o, &tx) || sch_bind(a->s, S, tx, "threadIdx.x"))
        return -1;
    return 0;
}

const tune_rule tune_rule_gpu_shared = {
    .name = "GPU shared-memory copy",
    .when = TUNE_RULE_ON_SKETCH,
    .gpu = true,
    .unit = TUNE_UNIT_GPU_SHARED,
    .condition = condition,
    .apply = apply,
    .holes = holes,
    .text = text,
    .random_hole = tune__random_hole_gpu,
    .mutate_hole = tune__mutate_hole_gpu,
    .decode = {[TUNE_PHASE_CACHE_READ] = decode_cache_read, [TUNE_PHASE_LATE] = apply_shared},
};
