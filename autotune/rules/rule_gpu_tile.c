/*
 * autotune/rules/rule_gpu_tile.c — GPU multi-level tiling "SSSRRSRS" of a
 * stage with data reuse (TUNE_UNIT_GPU_TILE; Ansor §4.1, TVM's
 * MultiLevelTiling for GPU): a "local" cache_write of the stage (the
 * register accumulator), its tile computed at the thread loop of the
 * holder, the cache copy; or, when the stage's only consumer is
 * elementwise on it and has no unit beyond its flat thread binding, the
 * stage itself computed at the thread loop of that consumer (allocated
 * there: per thread, in registers; Ansor's tiling with fusion). The
 * holder's block / vthread / thread tile loops are fused and bound to
 * blockIdx.x / vthread / threadIdx.x. Holes: one SPLIT of 4 factors
 * (vthread, thread, inner, innermost) per spatial axis, one SPLIT of 2
 * per reduce axis, one GPU_UNROLL.
 *
 * Random tile sizes: drawn until the tile keeps the GPU's rules (threads
 * per block within tune_gpu_limits and at least a warp where the stage
 * has that many outputs, vthreads <= 8, at most 256 outputs per thread).
 */
#include <string.h>

#include "autotune/rules/rule.h"

static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    (void)sk, (void)made_by;
    return g->dag->stages[stage].needs_tiling ? TUNE_RULE_APPLY_AND_SKIP : TUNE_RULE_PASS;
}

/* Units only: the GPU holes are added once the sketch is complete. */
static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    const tune_stage_info *si = &g->dag->stages[stage];
    if (sk->nunits >= TUNE_MAX_UNITS) return TUNE__CAP_UNITS;
    int consumer = -1;
    if (si->nconsumers == 1) {
        int cs = si->consumers[0];
        const te_tensor *ct = g->dag->stages[cs].tensor;
        bool ok = false, seen = false;
        if (tune__unit_of(sk, cs, TUNE_UNIT_GPU_FLAT) >= 0 && nreduce_of(ct) == 0)
            tune__reads_exactly(ct->body, ct, si->tensor, &ok, &seen);
        if (ok && seen) consumer = cs;
    }
    if (consumer >= 0) {
        /* The consumer's loops now come from this stage's tiling. */
        int fu = tune__unit_of(sk, consumer, TUNE_UNIT_GPU_FLAT);
        memmove(&sk->units[fu], &sk->units[fu + 1],
                (size_t)(sk->nunits - fu - 1) * sizeof sk->units[0]);
        sk->nunits--;
    }
    sk->units[sk->nunits++] = (tune_unit){TUNE_UNIT_GPU_TILE, stage, consumer, 0};
    return 0;
}

static int holes(tune_sketch *sk, const tune_dag *dag, int u) {
    const te_tensor *t = dag->stages[sk->units[u].stage].tensor;
    for (int d = 0; d < t->ndim; d++)
        if (tune__add_hole(sk, TUNE_HOLE_SPLIT, u, 4, t->shape[d], false)) return TUNE__CAP_HOLES;
    for (int r = 0; r < nreduce_of(t); r++)
        if (tune__add_hole(sk, TUNE_HOLE_SPLIT, u, 2, t->body->u.reduce.axes[r]->u.var.extent,
                           true))
            return TUNE__CAP_HOLES;
    return tune__add_hole(sk, TUNE_HOLE_GPU_UNROLL, u, 1, TUNE__GPU_NUNROLL, false);
}

/* Fused, the stage itself is the per-thread accumulator. */
static const char *text(const tune_unit *un, const tune_dag *dag, const char **object) {
    *object = un->consumer >= 0 ? dag->stages[un->consumer].tensor->name : "copy";
    return un->consumer >= 0 ? "local, tile SSSRRSRS, fuse into "
                             : "cache_write local, tile SSSRRSRS, fuse into ";
}

/* Random factors of one spatial axis: the four inner levels (vthread,
 * thread, inner, innermost) drawn in a random order, each a divisor of
 * what the others left (innermost <= 64, vthread <= 8). */
static void random_spatial(const tune_hole *h, uint64_t *rng, int64_t *f) {
    int order[4] = {0, 1, 2, 3};
    for (int k = 3; k > 0; k--) {
        int j = (int)tune__rand_below(rng, k + 1), t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    static const int64_t cap[4] = {TUNE__GPU_MAX_VTHREAD, 1024, TUNE__GPU_MAX_PER_THREAD,
                                    TUNE__MAX_INNER};
    int64_t left = h->extent;
    for (int k = 0; k < 4; k++) {
        int lv = order[k];
        f[lv] = tune__rand_divisor(rng, left, cap[lv]);
        left /= f[lv];
    }
}

static void random_reduce(const tune_hole *h, uint64_t *rng, int64_t *f) {
    f[1] = tune__rand_divisor(rng, h->extent, TUNE__MAX_INNER);
    f[0] = tune__rand_divisor(rng, h->extent / f[1], h->extent / f[1]);
}

/* Draws the tile sizes of unit u until they meet the constraints (kept:
 * the last draw meeting the hard ones, else the last draw). */
static void random_tile(const tune_sketch *sk, int u, uint64_t *rng, int64_t *vals) {
    int64_t keep[TUNE_MAX_HOLES * 3];
    bool have = false;
    for (int tries = 0; tries < 256; tries++) {
        for (int i = 0; i < sk->nholes; i++) {
            const tune_hole *h = &sk->holes[i];
            if (h->unit != u || h->kind != TUNE_HOLE_SPLIT) continue;
            if (h->reduce) random_reduce(h, rng, vals + h->offset);
            else random_spatial(h, rng, vals + h->offset);
        }
        int c = tune__gpu_tile_check(sk, u, vals);
        if (c == 0) return;
        if (c == 1 && !have) {
            memcpy(keep, vals, sizeof keep);
            have = true;
        }
    }
    if (have) memcpy(vals, keep, sizeof keep);
}

/* The accumulator: the cache, or fused, the stage itself (computed
 * inside the consumer's thread loop, it is allocated there, per thread). */
static int decode_accumulate(tune_decoder *a, int u) {
    const tune_unit *un = &a->sk->units[u];
    te_tensor *t = a->stage[un->stage];
    if (un->consumer >= 0) a->local[un->stage] = t;
    else if (!(a->local[un->stage] = sch_cache_write(a->s, t, "local"))) return -1;
    return 0;
}

/* Tiles the "local" cache L of stage t (unit u) SSSRRSRS and computes it
 * at the thread loop of holder H, whose block, vthread and thread levels
 * are fused and bound. */
static int apply_tile(tune_decoder *a, int u, te_tensor *t, te_tensor *L, te_tensor *H) {
    int nsp = t->ndim, nr = nreduce_of(t);
    te_expr *b[TE_MAX_DIMS], *v[TE_MAX_DIMS], *th[TE_MAX_DIMS], *in[TE_MAX_DIMS];
    int64_t threads = 1;
    for (int d = 0; d < nsp; d++) {
        const int64_t *f = tune__hv(a, u, d);
        te_expr *x = sch_axis(H, d), *r;
        if (!x || sch_split(a->s, H, x, f[0] * f[1] * f[2] * f[3], &b[d], &r) ||
            sch_split(a->s, H, r, f[1] * f[2] * f[3], &v[d], &r) ||
            sch_split(a->s, H, r, f[2] * f[3], &th[d], &in[d]))
            return -1;
        threads *= f[1];
    }
    te_expr *order[4 * TE_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < nsp; d++) order[n++] = b[d];
    for (int d = 0; d < nsp; d++) order[n++] = v[d];
    for (int d = 0; d < nsp; d++) order[n++] = th[d];
    for (int d = 0; d < nsp; d++) order[n++] = in[d];
    if (sch_reorder(a->s, H, n, order)) return -1;
    te_expr *fb = tune__fuse_all(a, H, b, nsp), *fv = fb ? tune__fuse_all(a, H, v, nsp) : NULL;
    te_expr *ft = fv ? tune__fuse_all(a, H, th, nsp) : NULL;
    if (!ft || sch_bind(a->s, H, fb, "blockIdx.x") || sch_bind(a->s, H, fv, "vthread") ||
        sch_bind(a->s, H, ft, "threadIdx.x"))
        return -1;
    /* The accumulator: every level split, in SSSRRSRS order. */
    te_expr *s[TE_MAX_DIMS][5], *r[TE_MAX_DIMS][3];
    for (int d = 0; d < nsp; d++) {
        const int64_t *f = tune__hv(a, u, d);
        te_expr *x = sch_axis(L, d);
        if (!x || sch_split(a->s, L, x, f[3], &x, &s[d][4]) ||
            sch_split(a->s, L, x, f[2], &x, &s[d][3]) ||
            sch_split(a->s, L, x, f[1], &x, &s[d][2]) ||
            sch_split(a->s, L, x, f[0], &s[d][0], &s[d][1]))
            return -1;
    }
    for (int k = 0; k < nr; k++) {
        const int64_t *f = tune__hv(a, u, nsp + k);
        te_expr *x = sch_reduce_axis(L, k);
        if (!x || sch_split(a->s, L, x, f[1], &x, &r[k][2]) ||
            sch_split(a->s, L, x, f[0], &r[k][0], &r[k][1]))
            return -1;
    }
    n = 0;
    for (int lv = 0; lv < 3; lv++)
        for (int d = 0; d < nsp; d++) order[n++] = s[d][lv];
    for (int k = 0; k < nr; k++) order[n++] = r[k][0];
    for (int k = 0; k < nr; k++) order[n++] = r[k][1];
    for (int d = 0; d < nsp; d++) order[n++] = s[d][3];
    for (int k = 0; k < nr; k++) order[n++] = r[k][2];
    for (int d = 0; d < nsp; d++) order[n++] = s[d][4];
    if (sch_reorder(a->s, L, n, order) || sch_compute_at(a->s, L, H, ft)) return -1;
    int64_t unroll = tune__gpu_unroll[tune__hv(a, u, nsp + nr)[0]];
    if (unroll && sch_pragma(a->s, L, order[0], "auto_unroll_max_step", unroll)) return -1;
    a->fetch_at[a->sk->units[u].stage] = nr ? r[nr - 1][0] : NULL;
    a->threads[a->sk->units[u].stage] = threads;
    return 0;
}

static int decode_tile(tune_decoder *a, int u) {
    const tune_unit *un = &a->sk->units[u];
    te_tensor *t = a->stage[un->stage];
    te_tensor *H = un->consumer >= 0 ? a->stage[un->consumer] : t;
    return apply_tile(a, u, t, a->local[un->stage], H);
}

const tune_rule tune_rule_gpu_tile = {
    .name = "GPU multi-level tiling",
    .when = TUNE_RULE_ON_STAGE,
    .gpu = true,
    .unit = TUNE_UNIT_GPU_TILE,
    .condition = condition,
    .apply = apply,
    .holes = holes,
    .text = text,
    .random_hole = tune__random_hole_gpu,
    .random_unit = random_tile,
    .mutate_hole = tune__mutate_hole_gpu,
    .decode = {[TUNE_PHASE_ACCUMULATE] = decode_accumulate, [TUNE_PHASE_MAIN] = decode_tile},
};
