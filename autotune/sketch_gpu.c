/*
 * autotune/sketch_gpu.c — GPU sketch generation (Ansor §4.1, TVM
 * sketch_policy_rules.cc for GPU targets), applied to the stages from the
 * last to the first:
 *   - placeholders are skipped (they may still get a shared copy below);
 *   - strictly inlinable stages are always inlined (on GPU also padding:
 *     its select then lands in the shared copy, where it is paid once per
 *     element fetched rather than once per multiply-add);
 *   - a stage with data reuse gets multi-level tiling "SSSRRSRS" with a
 *     "local" cache_write (the register accumulator); when its only
 *     consumer is elementwise on it and has no unit of its own beyond the
 *     flat thread binding, the tile is fused into that consumer (Ansor's
 *     MultiLevelTilingWithFusion) and the cache copy is inlined into it;
 *   - every producer read only by a tiled stage gets a shared-memory
 *     cache_read, computed at the tiled stage's innermost outer reduction
 *     loop and fetched cooperatively by the block's threads (Ansor's
 *     AddCacheRead for GPU);
 *   - every other compute stage is flattened and bound to blocks and
 *     threads.
 *   - cross-thread reduction (TVM RuleCrossThreadReduction, the branch
 *     for stages NeedsMultiLevelTiling rejects): a flat reduction stage
 *     whose reduced length exceeds a warp (32) becomes a GPU_XREDUCE
 *     unit (a reduce axis on threadIdx.x, combined by an allreduce) in a
 *     first sketch; as in TVM the rule does not skip the rest, so the
 *     all-flat sketch follows as the second.
 * Not generated: rfactor, and the cross-thread branch for tiled stages
 * with little spatial parallelism (TVM's space < max threads and space <
 * reduce).
 */
#include <stdio.h>
#include <string.h>

#include "autotune/tune_internal.h"
#include "loom/codegen.h"

bool tune_target_is_cuda(const char *target) {
    cg_target t;
    if (cg_target_parse(target, &t, NULL)) return false;
    bool cuda = t.kind == CG_TARGET_CUDA;
    cg_target_free(&t);
    return cuda;
}

bool tune_sketch_is_gpu(const tune_sketch *sk) {
    for (int u = 0; u < sk->nunits; u++)
        switch (sk->units[u].kind) {
        case TUNE_UNIT_GPU_TILE:
        case TUNE_UNIT_GPU_SHARED:
        case TUNE_UNIT_GPU_FLAT:
        case TUNE_UNIT_GPU_XREDUCE: return true;
        default: break;
        }
    return false;
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

/* ok: every read of p in e is at exactly c's own axes (same shape);
 * seen: there is one. */
static void exact_reads(const te_expr *e, const te_tensor *c, const te_tensor *p, bool *ok,
                        bool *seen) {
    exact_walk w = {c, p, true, false};
    exact_visit(e, &w);
    *ok = w.ok;
    *seen = w.seen;
}

/* Whether reduction t reduces across threads well: more than a warp of
 * elements (TVM: cum_reduce_len > warp_size) of a type the allreduce
 * moves, into at least one output dimension. */
static bool xreduce_fits(const te_tensor *t) {
    if (nreduce_of(t) == 0 || t->ndim < 1) return false;
    te_dtype d = t->dtype;
    if (d.lanes != 1 || (d.code != TE_FLOAT && d.code != TE_INT) || (d.bits != 32 && d.bits != 64))
        return false;
    int64_t len = 1;
    for (int k = 0; k < nreduce_of(t); k++) len *= t->body->u.reduce.axes[k]->u.var.extent;
    return len > 32;
}

static int add_hole(tune_sketch *sk, tune_hole_kind kind, int unit, int nvals, int64_t extent,
                    bool reduce) {
    if (sk->nholes >= TUNE_MAX_HOLES || sk->nvals + nvals > TUNE_MAX_HOLES * 3)
        return TUNE__CAP_HOLES;
    tune_hole *h = &sk->holes[sk->nholes++];
    *h = (tune_hole){kind, unit, sk->nvals, nvals, extent, reduce, false}; /* no tails on GPU */
    sk->nvals += nvals;
    return 0;
}

static int add_holes(tune_sketch *sk, const tune_dag *dag, int u) {
    const te_tensor *t = dag->stages[sk->units[u].stage].tensor;
    switch (sk->units[u].kind) {
    case TUNE_UNIT_GPU_TILE: {
        for (int d = 0; d < t->ndim; d++)
            if (add_hole(sk, TUNE_HOLE_SPLIT, u, 4, t->shape[d], false)) return -1;
        for (int r = 0; r < nreduce_of(t); r++)
            if (add_hole(sk, TUNE_HOLE_SPLIT, u, 2, t->body->u.reduce.axes[r]->u.var.extent,
                         true))
                return -1;
        return add_hole(sk, TUNE_HOLE_GPU_UNROLL, u, 1, TUNE__GPU_NUNROLL, false);
    }
    case TUNE_UNIT_GPU_SHARED:
        return add_hole(sk, TUNE_HOLE_GPU_FETCH, u, 1, TUNE__GPU_NFETCH, false);
    case TUNE_UNIT_GPU_FLAT:
    case TUNE_UNIT_GPU_XREDUCE:
        return add_hole(sk, TUNE_HOLE_GPU_THREADS, u, 1, TUNE__GPU_NTHREADS, false);
    default: return -1;
    }
}

static void describe(tune_sketch *sk, const tune_dag *dag) {
    size_t len = 0, cap = sizeof sk->desc;
    sk->desc[0] = 0;
    for (int i = 0; i < dag->nstages && len < cap; i++) {
        const char *name = dag->stages[i].tensor->name;
        bool first = true;
        for (int u = 0; u < sk->nunits && len < cap; u++) {
            const tune_unit *un = &sk->units[u];
            if (un->stage != i) continue;
            const char *text = "?", *other = "";
            switch (un->kind) {
            case TUNE_UNIT_GPU_TILE:
                /* Fused, the stage itself is the per-thread accumulator. */
                text = un->consumer >= 0 ? "local, tile SSSRRSRS, fuse into "
                                         : "cache_write local, tile SSSRRSRS, fuse into ";
                other = un->consumer >= 0 ? dag->stages[un->consumer].tensor->name : "copy";
                break;
            case TUNE_UNIT_GPU_SHARED:
                text = "cache_read shared for ";
                other = dag->stages[un->consumer].tensor->name;
                break;
            case TUNE_UNIT_GPU_FLAT: text = "bind threads"; break;
            case TUNE_UNIT_GPU_XREDUCE: text = "cross-thread reduction"; break;
            default: break;
            }
            len += (size_t)snprintf(sk->desc + len, cap - len, "%s%s%s%s%s", first && len ? "; " : "",
                                    first ? name : ", ", first ? ": " : "", text, other);
            first = false;
        }
        for (int k = 0; k < sk->ninline && len < cap; k++)
            if (sk->inlined[k] == i) {
                len += (size_t)snprintf(sk->desc + len, cap - len, "%s%s%sinline",
                                        first && len ? "; " : "", first ? name : ", ",
                                        first ? ": " : "");
                first = false;
            }
    }
}

static int full(te_ctx *ctx, const tune_workload *w) {
    return tune__cap_error(ctx, w, TUNE__CAP_UNITS, "a GPU sketch");
}

int tune_generate_sketches_gpu_ex(te_ctx *ctx, const tune_workload *w, tune_sketch *sketches,
                                  int max, int *dropped) {
    if (dropped) *dropped = 0;
    if (max < 1) return te_error(ctx, "autotune: no room for a GPU sketch (max %d)", max);
    tune_dag dag;
    if (tune_dag_analyze(ctx, w->nouts, w->outs, &dag)) return tune__workload_error(ctx, w);
    tune_sketch sk;
    memset(&sk, 0, sizeof sk);
    /* The stage whose loops hold each stage: -1 none yet; a fused
     * consumer records the tiled producer it absorbed. */
    int flat_unit[TUNE_MAX_STAGES];
    for (int i = 0; i < TUNE_MAX_STAGES; i++) flat_unit[i] = -1;
    for (int i = dag.nstages - 1; i >= 0; i--) {
        const tune_stage_info *si = &dag.stages[i];
        if (si->is_placeholder) continue;
        if (si->strictly_inlinable) {
            sk.inlined[sk.ninline++] = i;
            continue;
        }
        if (sk.nunits >= TUNE_MAX_UNITS) return full(ctx, w);
        if (!si->needs_tiling) {
            flat_unit[i] = sk.nunits;
            sk.units[sk.nunits++] = (tune_unit){TUNE_UNIT_GPU_FLAT, i, -1, 0};
            continue;
        }
        int consumer = -1;
        if (si->nconsumers == 1) {
            int cs = si->consumers[0];
            const te_tensor *ct = dag.stages[cs].tensor;
            bool ok = false, seen = false;
            if (flat_unit[cs] >= 0 && nreduce_of(ct) == 0) exact_reads(ct->body, ct, si->tensor, &ok, &seen);
            if (ok && seen) consumer = cs;
        }
        if (consumer >= 0) {
            /* The consumer's loops now come from this stage's tiling. */
            int fu = flat_unit[consumer];
            memmove(&sk.units[fu], &sk.units[fu + 1],
                    (size_t)(sk.nunits - fu - 1) * sizeof sk.units[0]);
            sk.nunits--;
            for (int k = 0; k < TUNE_MAX_STAGES; k++)
                if (flat_unit[k] > fu) flat_unit[k]--;
            flat_unit[consumer] = -1;
        }
        sk.units[sk.nunits++] = (tune_unit){TUNE_UNIT_GPU_TILE, i, consumer, 0};
    }
    /* Shared copies: producers read by a tiled stage and nothing else. */
    int ntiled = sk.nunits;
    for (int u = 0; u < ntiled; u++) {
        if (sk.units[u].kind != TUNE_UNIT_GPU_TILE) continue;
        const tune_stage_info *si = &dag.stages[sk.units[u].stage];
        for (int k = 0; k < si->nproducers; k++) {
            int p = si->producers[k];
            if (dag.stages[p].nconsumers != 1) continue;
            if (sk.nunits >= TUNE_MAX_UNITS) return full(ctx, w);
            sk.units[sk.nunits++] = (tune_unit){TUNE_UNIT_GPU_SHARED, p, sk.units[u].stage, 0};
        }
    }
    /* Cross-thread reduction: flat reductions longer than a warp. */
    tune_sketch xr = sk;
    bool any = false;
    for (int u = 0; u < xr.nunits; u++) {
        const te_tensor *t = dag.stages[xr.units[u].stage].tensor;
        if (xr.units[u].kind != TUNE_UNIT_GPU_FLAT || !xreduce_fits(t)) continue;
        xr.units[u].kind = TUNE_UNIT_GPU_XREDUCE;
        any = true;
    }
    tune_sketch *out[2] = {&xr, &sk};
    int n = any ? 2 : 1;
    if (!any) out[0] = &sk;
    for (int k = 0; k < n; k++) {
        for (int u = 0; u < out[k]->nunits; u++)
            if (add_holes(out[k], &dag, u))
                return tune__cap_error(ctx, w, TUNE__CAP_HOLES, "a GPU sketch");
        describe(out[k], &dag);
    }
    if (n > max) {
        if (dropped) *dropped = n - max; /* by design: the first max sketches */
        n = max;
    }
    for (int k = 0; k < n; k++) sketches[k] = *out[k];
    return n;
}

int tune_generate_sketches_gpu(te_ctx *ctx, const tune_workload *w, tune_sketch *sketches,
                               int max) {
    return tune_generate_sketches_gpu_ex(ctx, w, sketches, max, NULL);
}
