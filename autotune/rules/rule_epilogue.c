/*
 * autotune/rules/rule_epilogue.c — epilogue fusion (Loom's own rule): a
 * register tile with an accumulator (TILE_CACHE, TILE_CACHE_PACKED) of a
 * stage whose every reader ends in one annotated elementwise output,
 * through stages the sketch inlines or annotates, each reading at exactly
 * its own axes (a bias or residual Add, Relu or Clip, gelu's Erf chain),
 * gets a variant whose tile is copied out by that tail's loops: the
 * stage itself and the annotated stages between are inlined, so the
 * epilogue runs on the tile while it is in registers, not as a second
 * pass over the whole output (1.1-1.7x on ResNet-50 and MobileNetV2
 * groups, bench/RESULTS.md session 31). A variant rule: the unfused
 * sketch stays beside it, right after it, so the rule only adds to the
 * space and a cut by max keeps the fused one. It adds no unit; the tile's
 * rule decodes the copy-out (tune__copy_out).
 */
#include <string.h>

#include "autotune/rules/rule.h"

/* The elementwise tail of stage t in sk: the one output stage, annotated,
 * that everything reading t ends in, through stages the sketch inlines or
 * annotates (an expensive one such as gelu's Erf, read by one stage, so
 * that inlining it computes it once per element), each reading t or a
 * stage between at exactly its own axes (conv -> Add(residual) -> Relu:
 * Relu, the Add inlined). The annotated stages between are set in
 * between[] (*nbetween). -1: none (t an output, or read by a reduction,
 * at other indices, or by two outputs). */
static int elementwise_tail(const tune_sketch *sk, const tune_dag *dag, int t, int *between,
                            int *nbetween) {
    *nbetween = 0;
    if (dag->stages[t].is_output || dag->stages[t].nconsumers < 1) return -1;
    bool reach[TUNE_MAX_STAGES] = {false};
    reach[t] = true;
    int tail = -1;
    /* Stages come producers first: one pass sees every path from t. */
    for (int j = t + 1; j < dag->nstages; j++) {
        const tune_stage_info *sj = &dag->stages[j];
        bool reads = false;
        for (int k = 0; k < sj->nproducers; k++) {
            int p = sj->producers[k];
            if (!reach[p]) continue;
            bool seen = false;
            if (nreduce_of(sj->tensor) > 0 ||
                !tune__reads_at_axes(sj->tensor->body, sj->tensor, dag->stages[p].tensor, true,
                                     &seen))
                return -1;
            reads = true;
        }
        if (!reads) continue;
        if (tune__inlined_in(sk, j) && !sj->is_output) reach[j] = true;
        else if (tune__unit_of(sk, j, TUNE_UNIT_ANNOTATE) < 0) return -1;
        else if (sj->is_output) {
            if (tail >= 0 || sj->nconsumers > 0) return -1;
            tail = j;
        } else if (sj->nconsumers == 1) {
            reach[j] = true;
            between[(*nbetween)++] = j;
        } else
            return -1;
    }
    return tail;
}

int tune__sketch_fuse_epilogue(const tune_dag *dag, tune_sketch *sk, int u) {
    if (u < 0 || u >= sk->nunits) return 0;
    tune_sketch f = *sk;
    tune_unit *un = &f.units[u];
    if ((un->kind != TUNE_UNIT_TILE_CACHE && un->kind != TUNE_UNIT_TILE_CACHE_PACKED) ||
        un->consumer >= 0)
        return 0;
    int between[TUNE_MAX_STAGES], nb;
    int e = elementwise_tail(&f, dag, un->stage, between, &nb);
    if (e < 0) return 0;
    un->consumer = e;
    tune__drop_annotate(&f, e);
    for (int k = 0; k < nb; k++) {
        tune__drop_annotate(&f, between[k]);
        f.inlined[f.ninline++] = between[k];
    }
    int rc = tune__rebuild_holes(&f, dag);
    if (rc) return rc;
    tune__describe_cpu(&f, dag);
    *sk = f;
    return 1;
}

/* On the partial sketch before the variant: the later stages, whose
 * units the tail depends on, are decided already. */
static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    int between[TUNE_MAX_STAGES], nbetween;
    return made_by && made_by->accumulates &&
                   elementwise_tail(sk, g->dag, stage, between, &nbetween) >= 0
               ? TUNE_RULE_APPLY
               : TUNE_RULE_PASS;
}

/* 1 when sk became the fused variant, 0 when it has no tail, or a
 * TUNE__CAP_ code. */
static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    int u = tune__unit_of(sk, stage, TUNE_UNIT_TILE_CACHE);
    if (u < 0) u = tune__unit_of(sk, stage, TUNE_UNIT_TILE_CACHE_PACKED);
    return tune__sketch_fuse_epilogue(g->dag, sk, u);
}

const tune_rule tune_rule_epilogue_fusion = {
    .name = "epilogue fusion",
    .when = TUNE_RULE_ON_VARIANT,
    .unit = -1,
    .condition = condition,
    .apply = apply,
};
