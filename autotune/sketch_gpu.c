/*
 * autotune/sketch_gpu.c — GPU sketch generation (Ansor §4.1, TVM
 * sketch_policy_rules.cc for GPU targets): the rules of the CUDA list
 * (autotune/rules/targets.c) applied to the stages from the last to the
 * first, on one sketch, then the sketch rules on the whole sketch:
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
#include <stdlib.h>
#include <string.h>

#include "autotune/rules/rule.h"
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
        if (tune__unit_rule(sk->units[u].kind)->gpu) return true;
    return false;
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
            const char *other = "";
            const char *text = tune__unit_rule(un->kind)->text(un, dag, &other);
            len += (size_t)snprintf(sk->desc + len, cap - len, "%s%s%s%s%s",
                                    first && len ? "; " : "", first ? name : ", ",
                                    first ? ": " : "", text, other);
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

/* "sm_90", "sm_90a", "compute_90": 90; 0 for anything else. */
static int generate(te_ctx *ctx, const tune_workload *w, int cc, tune_sketch *sketches, int max,
                    int *dropped) {
    if (dropped) *dropped = 0;
    if (max < 1) return te_error(ctx, "autotune: no room for a GPU sketch (max %d)", max);
    tune_dag dag;
    if (tune_dag_analyze(ctx, w->nouts, w->outs, &dag)) return tune__workload_error(ctx, w);
    const tune_rule_list *list = &tune__rules_cuda;
    tune_gen g = {&dag, w, cc};
    /* The sketches, the first generated first; a sketch rule's variant
     * goes before the sketch it derives from. */
    enum { MAXS = 2 * TUNE_MAX_SKETCHES };
    tune_sketch out[MAXS];
    int n = 1, lost = 0;
    memset(&out[0], 0, sizeof out[0]);
    for (int i = dag.nstages - 1; i >= 0; i--)
        for (int k = 0; k < list->nrules; k++) {
            const tune_rule *r = list->rules[k].rule;
            if (r->when != TUNE_RULE_ON_STAGE) continue;
            tune_rule_cond cond = r->condition(&g, &out[0], i, NULL);
            if (cond == TUNE_RULE_PASS) continue;
            int rc = r->apply(&g, &out[0], i);
            if (rc) return tune__cap_error(ctx, w, rc, "a GPU sketch");
            if (cond == TUNE_RULE_APPLY_AND_SKIP) break;
        }
    /* Sketch rules: APPLY_AND_SKIP changes every sketch, APPLY derives a
     * variant of each, placed before it. */
    for (int k = 0; k < list->nrules; k++) {
        const tune_rule *r = list->rules[k].rule;
        if (r->when != TUNE_RULE_ON_SKETCH) continue;
        tune_sketch next[MAXS];
        int nn = 0;
        for (int s = 0; s < n; s++) {
            tune_rule_cond cond = r->condition(&g, &out[s], -1, NULL);
            if (cond == TUNE_RULE_APPLY) {
                tune_sketch v = out[s];
                int rc = r->apply(&g, &v, -1);
                if (rc) return tune__cap_error(ctx, w, rc, "a GPU sketch");
                if (nn < MAXS) next[nn++] = v;
                else lost++;
            } else if (cond == TUNE_RULE_APPLY_AND_SKIP) {
                int rc = r->apply(&g, &out[s], -1);
                if (rc) return tune__cap_error(ctx, w, rc, "a GPU sketch");
            }
            if (nn < MAXS) next[nn++] = out[s];
            else lost++;
        }
        memcpy(out, next, sizeof out[0] * (size_t)nn);
        n = nn;
    }
    /* The holes, once the units are final (the tiling rule removes a
     * fused consumer's unit, the cross-thread rule changes kinds). */
    for (int k = 0; k < n; k++) {
        for (int u = 0; u < out[k].nunits; u++) {
            const tune_rule *r = tune__unit_rule(out[k].units[u].kind);
            if (r->holes && r->holes(&out[k], &dag, u))
                return tune__cap_error(ctx, w, TUNE__CAP_HOLES, "a GPU sketch");
        }
        describe(&out[k], &dag);
    }
    if (n > max) {
        lost += n - max; /* by design: the first max sketches */
        n = max;
    }
    if (dropped) *dropped = lost;
    for (int k = 0; k < n; k++) sketches[k] = out[k];
    return n;
}

int tune_generate_sketches_gpu_ex(te_ctx *ctx, const tune_workload *w, tune_sketch *sketches,
                                  int max, int *dropped) {
    return generate(ctx, w, 0, sketches, max, dropped);
}

int tune_generate_sketches_gpu_for(te_ctx *ctx, const tune_workload *w, const char *target,
                                   tune_sketch *sketches, int max, int *dropped) {
    if (dropped) *dropped = 0;
    cg_target t;
    char *why = NULL;
    if (!target || cg_target_parse(target, &t, &why)) {
        te_error(ctx, "autotune: no GPU sketches for %s", why ? why : "a NULL target");
        free(why);
        return -1;
    }
    if (t.kind != CG_TARGET_CUDA) {
        cg_target_free(&t);
        return te_error(ctx, "autotune: target '%s' is not a CUDA target; GPU sketches need one",
                        target);
    }
    /* as cg_build: no -arch, GPU 0's (sm_75 where there is none) */
    int cc = cg_cuda_arch_cc(t.arch ? t.arch : cg_cuda_default_arch(ctx));
    cg_target_free(&t);
    return generate(ctx, w, cc, sketches, max, dropped);
}

int tune_generate_sketches_gpu(te_ctx *ctx, const tune_workload *w, tune_sketch *sketches,
                               int max) {
    return tune_generate_sketches_gpu_ex(ctx, w, sketches, max, NULL);
}
