/*
 * autotune/rules/rule_place.c — compute location of an inlinable stage
 * with a branch (padding) read by one stage (TUNE_UNIT_PLACE; Ansor's
 * InitChangeComputeLocation and MutateComputeLocation for the stages it
 * does not strictly inline). Inlined, the select lands in the consumer's
 * innermost loop as masked loads, so where to compute it is left to the
 * search: one LOCATION hole, 1 = inline, 2 = root (rows fused parallel,
 * innermost vectorized), 3.. = at outer spatial tile loop (value - 3) of
 * its consumer's unit. TVM does not count such a stage as strictly
 * inlinable either.
 */
#include "autotune/rules/rule.h"

static void find_select(const te_expr *e, void *user) {
    if (e->kind == TE_SELECT) *(bool *)user = true;
    else te_expr_visit_children(e, find_select, user);
}

/* True when e contains a select (a branch). */
static bool has_branch(const te_expr *e) {
    bool found = false;
    find_select(e, &found);
    return found;
}

static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    (void)sk, (void)made_by;
    const tune_stage_info *si = &g->dag->stages[stage];
    return si->strictly_inlinable && si->nconsumers == 1 && has_branch(si->tensor->body)
               ? TUNE_RULE_APPLY_AND_SKIP
               : TUNE_RULE_PASS;
}

static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    return tune__add_unit(sk, g->dag, TUNE_UNIT_PLACE, stage,
                          g->dag->stages[stage].consumers[0], 0);
}

/* The outer spatial tile loops a stage placed into `consumer` can be
 * computed at: the tiled unit's 2 * ndim outer loops, an annotated unit's
 * fused parallel loop, none otherwise (rfactor, or no unit of its own). */
static int place_candidates(const tune_sketch *sk, const tune_dag *dag, int consumer) {
    for (int u = 0; u < sk->nunits; u++) {
        if (sk->units[u].stage != consumer) continue;
        switch (sk->units[u].kind) {
        case TUNE_UNIT_ANNOTATE: return 1;
        case TUNE_UNIT_TILE:
        case TUNE_UNIT_TILE_CACHE:
        case TUNE_UNIT_TILE_CACHE_PACKED:
        case TUNE_UNIT_TILE_FUSE: return 2 * dag->stages[consumer].tensor->ndim;
        default: break;
        }
    }
    return 0;
}

static int holes(tune_sketch *sk, const tune_dag *dag, int u) {
    return tune__add_hole(sk, TUNE_HOLE_LOCATION, u, 1,
                          2 + place_candidates(sk, dag, sk->units[u].consumer), false);
}

static const char *text(const tune_unit *un, const tune_dag *dag, const char **object) {
    *object = dag->stages[un->consumer].tensor->name;
    return "inline|root|at";
}

/* Inlined into a consumer that reads it plane by plane in channel blocks
 * (tune__plane_block: a depthwise convolution or pooling on NCHW[x]c),
 * whose vectors then test the padding's condition once each: at the root
 * the padded copy is one more pass over memory, and a stride-2 depthwise
 * convolution of MobileNetV2 on 112 x 112 ran 2.8x slower so (56 x 56,
 * stride 1: 2.4x), ResNet-50's max pooling 3x (bench/RESULTS.md session
 * 37). A pooling on NCHW keeps the root: its vectors run along the
 * columns, whose bounds the condition tests lane by lane. */
static bool inline_blocked(const tune_heur *c, int u) {
    const tune_unit *un = &c->sk->units[u];
    return tune__plane_block(c->dag, un->stage, un->consumer);
}

/* The root (the library's padding schedule, ops__sched_pad), or inlined
 * into a consumer reading it in channel blocks (inline_blocked). */
static bool heuristic(const tune_heur *c, int u, int variant, tune_program *p) {
    (void)variant;
    const tune_hole *h = tune__unit_hole(c->sk, u, 0);
    if (!h) return false;
    p->vals[h->offset] = inline_blocked(c, u) ? 1 : 2;
    return true;
}

/* Structural: inlined into a consumer reading it in channel blocks
 * (inline_blocked), else the root, or for a consumer tiled plane by plane
 * (tune__plane_axes: a depthwise convolution) at the planes' parallel
 * loop, so each padded plane is written and read while it is in cache
 * (TVM MetaSchedule's best depthwise programs compute the padding so). */
static bool structural(const tune_heur *c, int u, tune_program *p) {
    const tune_unit *un = &c->sk->units[u];
    const tune_hole *h = tune__unit_hole(c->sk, u, 0);
    if (!h) return false;
    if (inline_blocked(c, u)) {
        p->vals[h->offset] = 1;
        return true;
    }
    p->vals[h->offset] = 2;
    for (int k = 0; k < c->sk->nunits; k++) {
        int lead = c->sk->units[k].stage == un->consumer ? tune__plane_tile(c->sk, c->dag, k) : 0;
        if (lead > 0 && 2 + lead < h->extent) p->vals[h->offset] = 2 + lead;
    }
    return true;
}

/* Runs after every other unit (TUNE_PHASE_LATE), so the consumer's loops
 * exist. */
static int decode(tune_decoder *a, int u) {
    te_tensor *t = a->stage[a->sk->units[u].stage];
    int64_t loc = tune__hv(a, u, 0)[0];
    if (loc <= 1) return sch_compute_inline(a->s, t);
    int cu = -1;
    for (int k = 0; k < a->sk->nunits; k++)
        if (k != u && a->sk->units[k].stage == a->sk->units[u].consumer && a->holder[k]) cu = k;
    if (loc > 2) {
        if (cu < 0 || loc - 3 >= a->nloops[cu]) {
            te_error(sch_ctx(a->s), "autotune: compute location %lld of '%s' has no loop",
                     (long long)loc, t->name);
            return -1;
        }
        if (sch_compute_at(a->s, t, a->holder[cu], a->loops[cu][loc - 3])) return -1;
    }
    int n = t->ndim;
    int64_t lanes = tune_host_vector_lanes();
    te_expr *ax[TE_MAX_DIMS], *lo, *li;
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(t, d))) return -1;
    if (lanes > t->shape[n - 1]) lanes = t->shape[n - 1];
    if (sch_split(a->s, t, ax[n - 1], lanes, &lo, &li)) return -1;
    /* At the root: the rows parallel, each row's column blocks a loop
     * of their own (ops__sched_pad: no division a vector). */
    if (loc == 2) {
        if (n == 1) ax[0] = lo;
        int rows = n > 1 ? n - 1 : 1;
        if (!tune__fuse_parallel(a, t, ax, rows, rows, NULL)) return -1;
    }
    return lanes > 1 ? sch_vectorize(a->s, t, li) : 0;
}

const tune_rule tune_rule_compute_location = {
    .name = "compute location",
    .when = TUNE_RULE_ON_STAGE,
    .unit = TUNE_UNIT_PLACE,
    .condition = condition,
    .apply = apply,
    .holes = holes,
    .text = text,
    .random_hole = tune__random_hole_cpu,
    .mutate_hole = tune__mutate_hole_cpu,
    .heuristic = heuristic,
    .structural = structural,
    .decode = {[TUNE_PHASE_LATE] = decode},
};
