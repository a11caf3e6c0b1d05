/*
 * autotune/rules/rule_gpu_flat.c — thread binding of a stage without data
 * reuse (TUNE_UNIT_GPU_FLAT; Ansor's GPU annotation of untiled stages):
 * its axes fused, split by a GPU_THREADS count, bound to blockIdx.x /
 * threadIdx.x; a reduction accumulates in a "local" cache, serially in
 * its thread. A tiled producer may absorb the stage (rule_gpu_tile.c),
 * and the cross-thread rule may turn it into a GPU_XREDUCE unit.
 */
#include "autotune/rules/rule.h"

static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    (void)sk, (void)made_by;
    return g->dag->stages[stage].needs_tiling ? TUNE_RULE_PASS : TUNE_RULE_APPLY_AND_SKIP;
}

/* Units only: the GPU holes are added once the sketch is complete. */
static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    (void)g;
    if (sk->nunits >= TUNE_MAX_UNITS) return TUNE__CAP_UNITS;
    sk->units[sk->nunits++] = (tune_unit){TUNE_UNIT_GPU_FLAT, stage, -1, 0};
    return 0;
}

int tune__gpu_threads_hole(tune_sketch *sk, const tune_dag *dag, int u) {
    (void)dag;
    return tune__add_hole(sk, TUNE_HOLE_GPU_THREADS, u, 1, TUNE__GPU_NTHREADS, false);
}

static const char *text(const tune_unit *un, const tune_dag *dag, const char **object) {
    (void)un, (void)dag;
    *object = "";
    return "bind threads";
}

static int decode_accumulate(tune_decoder *a, int u) {
    const tune_unit *un = &a->sk->units[u];
    te_tensor *t = a->stage[un->stage];
    if (nreduce_of(t) > 0 && !(a->local[un->stage] = sch_cache_write(a->s, t, "local")))
        return -1;
    return 0;
}

/* A flat stage: all axes fused, split by the thread count, bound; a
 * reduction's local accumulator computed in the thread. */
static int apply_flat(tune_decoder *a, int u, te_tensor *t) {
    te_expr *ax[TE_MAX_DIMS], *f, *bo, *ti;
    for (int d = 0; d < t->ndim; d++)
        if (!(ax[d] = sch_axis(t, d))) return -1;
    if (!(f = tune__fuse_all(a, t, ax, t->ndim))) return -1;
    if (sch_split(a->s, t, f, tune__gpu_threads[tune__hv(a, u, 0)[0]], &bo, &ti) ||
        sch_bind(a->s, t, bo, "blockIdx.x") || sch_bind(a->s, t, ti, "threadIdx.x"))
        return -1;
    te_tensor *L = a->local[a->sk->units[u].stage];
    return L ? sch_compute_at(a->s, L, t, ti) : 0;
}

static int decode_bind(tune_decoder *a, int u) {
    return apply_flat(a, u, a->stage[a->sk->units[u].stage]);
}

const tune_rule tune_rule_gpu_flat = {
    .name = "GPU thread binding",
    .when = TUNE_RULE_ON_STAGE,
    .gpu = true,
    .unit = TUNE_UNIT_GPU_FLAT,
    .condition = condition,
    .apply = apply,
    .holes = tune__gpu_threads_hole,
    .text = text,
    .random_hole = tune__random_hole_gpu,
    .mutate_hole = tune__mutate_hole_gpu,
    .decode = {[TUNE_PHASE_ACCUMULATE] = decode_accumulate, [TUNE_PHASE_BIND] = decode_bind},
};
