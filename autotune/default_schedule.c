/*
 * autotune/default_schedule.c — a good schedule for any workload without
 * records (a fused subgraph, a user's operator), derived from its
 * structure alone: no measurement, no randomness.
 *
 * Why: only the ops registry's operators have hand-written default
 * schedules; everything else (graph/exec.c's fused groups, builders of
 * tune_register_builder) used to run a plain sch_create schedule, 10-100x
 * slower than needed (issue 35 part 2).
 *
 * The order of attempts, the first whose schedule applies and lowers wins:
 * 0. a fused attention group's own schedule (autotune/default_attention.c:
 *    no sketch keeps its scores in cache);
 * 1. the heuristic programs (tune_program_heuristic: the rules of the
 *    library's default schedules) of the sketches that have them, a
 *    register tile on x86.dpbf16 first (the bfloat16 matmul's on a CPU
 *    with AVX512-BF16), then a packed register tile (the default NCHW
 *    convolution's), then the GEMM tile (the default matmul's); a packed
 *    tile that would gather another input has none (a depthwise
 *    convolution's, rule_packed_tile.c), as
 *    the library's depthwise default never packs; in the generator's
 *    order, where a sketch with its register tile computed in its
 *    elementwise tail's loops (the generator's epilogue-fusion rule) comes
 *    right before the same sketch without;
 * 2. a sketch's structural program (tune_program_structural: every unit
 *    by its rule's structural fill), the sketches ranked by how well their
 *    units suit their stages (their rules' structural scores), then
 *    rfactored row reductions moved into their consumer's row loop
 *    (rows_into_consumers), as the library's softmax and layer_norm do;
 * 3. sch_create with every stage's outer loops fused parallel and the
 *    innermost vectorized, its dot products rfactored by a vector
 *    (annotate_stages: a workload with more stages than a sketch holds,
 *    an LSTM's unrolled steps);
 * 4. the same for the outputs alone;
 * 5. sch_create as it is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/rules/rule.h"
#include "loom/codegen.h"
#include "loom/ops.h"


/* 3: a sketch with a register tile on AVX512-BF16's dot product (the
 * bfloat16 matmul default's), 2: a packed register tile (the default
 * NCHW convolution's), 1: any other (the GEMM tile's). */
static int heuristic_rank(const tune_sketch *sk) {
    int rank = 1;
    for (int u = 0; u < sk->nunits; u++) {
        if (sk->units[u].kind == TUNE_UNIT_TILE_DOT) return 3;
        if (sk->units[u].kind == TUNE_UNIT_TILE_CACHE_PACKED) rank = 2;
    }
    return rank;
}

/* True when a register tile of sk computes its elementwise tail (the
 * epilogue-fusion rule's sketches). The structural fill (attempt 2) takes
 * only the other sketches: it was written and measured for those, and a
 * sketch with a tail fused has an unfused twin that it then takes. */
static bool fused_tail(const tune_sketch *sk) {
    for (int u = 0; u < sk->nunits; u++)
        if ((sk->units[u].kind == TUNE_UNIT_TILE_CACHE ||
             sk->units[u].kind == TUNE_UNIT_TILE_CACHE_PACKED) &&
            sk->units[u].consumer >= 0)
            return true;
    return false;
}

/* The stage of s that now produces a tensor named `name` (rfactor and
 * cache rewrites replace a stage's tensor but keep its name); -1: none. */
static int stage_named(const sch_schedule *s, const char *name) {
    for (int i = 0; i < sch_num_stages(s); i++)
        if (!strcmp(sch_stage_tensor(s, i)->name, name)) return i;
    return -1;
}

/* Computes each rfactored row reduction that has a row consumer
 * (row_consumer), and its partial results, in that consumer's parallel row
 * loop; and an elementwise stage between such reductions and their
 * consumer (tune__row_home) in that loop too: softmax's exp is then one
 * row in a local buffer between the sum and the normalization, not a
 * tensor written and read again. 0 or -1. */
static int rows_into_consumers(sch_schedule *s, const tune_sketch *sk, const tune_dag *dag) {
    for (int u = 0; u < sk->nunits; u++) {
        int home = tune__row_consumer(sk, dag, u) < 0 ? tune__row_home(sk, dag, u) : -1;
        if (home < 0) continue;
        int ei = stage_named(s, dag->stages[sk->units[u].stage].tensor->name);
        int ci = stage_named(s, dag->stages[home].tensor->name);
        te_expr *const *leaf;
        if (ei < 0 || ci < 0 || sch_stage_leaf_axes(s, ci, &leaf) < 1) return -1;
        if (sch_compute_at(s, sch_stage_tensor(s, ei), sch_stage_tensor(s, ci), leaf[0]))
            return -1;
    }
    for (int u = 0; u < sk->nunits; u++) {
        int cu = tune__row_consumer(sk, dag, u);
        if (cu < 0) continue;
        const te_tensor *r = dag->stages[sk->units[u].stage].tensor;
        const te_tensor *c = dag->stages[sk->units[cu].stage].tensor;
        char rf_name[256];
        snprintf(rf_name, sizeof rf_name, "%s.rf", r->name);
        int ri = stage_named(s, r->name), fi = stage_named(s, rf_name), ci = stage_named(s, c->name);
        te_expr *const *leaf;
        if (ri < 0 || fi < 0 || ci < 0 || sch_stage_leaf_axes(s, ci, &leaf) < 1) return -1;
        te_expr *at = leaf[0];
        te_tensor *ct = sch_stage_tensor(s, ci);
        if (sch_compute_at(s, sch_stage_tensor(s, ri), ct, at) ||
            sch_compute_at(s, sch_stage_tensor(s, fi), ct, at))
            return -1;
    }
    return 0;
}

/* A schedule that lowers: the last check before one is returned, so that
 * the caller's build cannot fail on something the next attempt avoids. */
static bool lowers(sch_schedule *s, const tune_workload *w) {
    return s && sch_lower(s, w->nargs, w->args, "default") != NULL;
}

/* A stage's loops (an output's, or any stage's at the root: attempts 3
 * and 4): spatial axes fused parallel (for a reduction) or all but the
 * innermost fused parallel and the innermost split by a vector and
 * vectorized where a vector divides it. */
static int annotate_output(sch_schedule *s, te_tensor *t, int vlen) {
    int n = t->ndim;
    if (n < 1) return 0;
    te_expr *ax[TE_MAX_DIMS + 1], *f;
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(t, d))) return -1;
    bool red = t->body && t->body->kind == TE_REDUCE;
    te_expr *li = NULL;
    if (!red && t->shape[n - 1] % vlen == 0 && sch_split(s, t, ax[n - 1], vlen, &ax[n - 1], &li))
        return -1;
    f = ax[0];
    if (n > 1 && sch_fuse(s, t, n, ax, &f)) return -1;
    if (sch_parallel(s, t, f)) return -1;
    return li && vlen > 1 ? sch_vectorize(s, t, li) : 0;
}

/* A dot-product reduction (its reads walk memory along its last reduce
 * axis: a matrix-vector product's rows against the vector) split by a
 * vector over that axis and rfactored: the partial sums, computed in t's
 * parallel spatial loop, are vlen wide and vectorized, so the chain of
 * additions runs vlen lanes at a time instead of one (an LSTM step's
 * products ran a scalar chain of 512 dependent adds per output). 1 when
 * done, 0 when t is not such a reduction, -1 on a schedule error. */
static int dot_rfactor(sch_schedule *s, te_tensor *t, int vlen) {
    int n = t->ndim, nr = nreduce_of(t);
    if (n < 1 || nr < 1 || vlen < 2) return 0;
    te_expr *rk = sch_reduce_axis(t, nr - 1), *ax[TE_MAX_DIMS + 1], *ko, *ki, *f;
    if (!rk || rk->u.var.extent % vlen) return 0;
    tune_reads r = tune__reads_along(t, NULL, rk);
    if (!r.last || r.other) return 0;
    if (sch_split(s, t, rk, vlen, &ko, &ki)) return -1;
    te_tensor *rf = sch_rfactor(s, t, ki, n);
    if (!rf) return -1;
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(t, d))) return -1;
    f = ax[0];
    if ((n > 1 && sch_fuse(s, t, n, ax, &f)) || sch_parallel(s, t, f)) return -1;
    te_expr *lanes = sch_axis(rf, n), *order[2 * TE_MAX_DIMS + 2];
    int k = 0;
    for (int d = 0; d < n; d++) order[k++] = sch_axis(rf, d);
    for (int q = 0; q < nreduce_of(rf); q++) order[k++] = sch_reduce_axis(rf, q);
    order[k++] = lanes;
    if (sch_reorder(s, rf, k, order) || sch_compute_at(s, rf, t, f)) return -1;
    return sch_vectorize(s, rf, lanes) ? -1 : 1;
}

/* Every compute stage at the root (a workload too large for a sketch's
 * units: an unrolled recurrence) annotated as an output, and its dot
 * products rfactored (dot_rfactor). 0 or -1. */
static int annotate_stages(sch_schedule *s, int vlen) {
    /* the stages as created: an rfactor adds stages while this walks */
    int n = sch_num_stages(s);
    te_tensor **ts = malloc(sizeof *ts * (size_t)(n ? n : 1));
    if (!ts) return -1;
    for (int i = 0; i < n; i++) ts[i] = sch_stage_tensor(s, i);
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        if (!ts[i]->body) continue;
        int d = dot_rfactor(s, ts[i], vlen);
        rc = d < 0 ? -1 : d ? 0 : annotate_output(s, ts[i], vlen);
    }
    free(ts);
    return rc;
}

/* "sketch 2 (C: ...), heuristic program 0", or (program -1) "sketch 2
 * (C: ...), rules", or (-2) the rules with rows_into_consumers. */
static void set_how(te_ctx *ctx, const char **how, int sketch, const char *desc, int program) {
    if (!how) return;
    char buf[400];
    if (program >= 0)
        snprintf(buf, sizeof buf, "sketch %d (%s), heuristic program %d", sketch, desc, program);
    else if (program == -2)
        snprintf(buf, sizeof buf, "sketch %d (%s), rules, row reductions in their consumers' rows",
                 sketch, desc);
    else
        snprintf(buf, sizeof buf, "sketch %d (%s), rules", sketch, desc);
    *how = te_strdup(ctx, buf);
}

sch_schedule *tune_default_schedule(te_ctx *ctx, const tune_workload *w, const char *target,
                                    const char **how) {
    if (how) *how = NULL;
    if (!ctx) return NULL;
    if (!w || !w->outs || w->nouts < 1 || !w->args || w->nargs < 1) {
        te_error(ctx, "autotune: tune_default_schedule: no workload (NULL or without outputs)");
        return NULL;
    }
    cg_target tg;
    char *why = NULL;
    if (cg_target_parse(target ? target : "", &tg, &why)) {
        te_error(ctx, "autotune: tune_default_schedule: %s", why ? why : "out of memory");
        free(why);
        return NULL;
    }
    int vlen = tg.vector_lanes;
    bool cuda = tg.kind == CG_TARGET_CUDA;
    cg_target_free(&tg);
    if (cuda) {
        te_error(ctx, "autotune: tune_default_schedule: unknown target '%s' (llvm, c): "
                      "schedules derived from a workload's structure are for CPUs (on cuda, "
                      "operators have ops_default_schedule)",
                 target);
        return NULL;
    }
    /* A plain schedule first: if sch_create refuses the workload, so is
     * every attempt below, with sch_create's message. */
    sch_schedule *plain = sch_create(ctx, w->nouts, w->outs);
    if (!plain) return NULL;
    sch_schedule *att = tune__attention_schedule(ctx, w, vlen);
    if (lowers(att, w)) {
        if (how) *how = te_strdup(ctx, "attention: scores, softmax and V product per block of rows");
        return att;
    }
    enum { MAXS = TUNE_MAX_PARTIAL_SKETCHES };
    tune_sketch *sk = te_alloc(ctx, sizeof(tune_sketch) * MAXS);
    tune_dag dag;
    int nsk = 0;
    if (sk && !tune_dag_analyze(ctx, w->nouts, w->outs, &dag))
        nsk = tune_generate_sketches(ctx, w, sk, MAXS);
    if (nsk < 0) nsk = 0;

    /* 1. Heuristic programs, a packed tile's sketches before GEMM tiles',
     * in the generator's order: a register tile fused into its
     * elementwise tail (the epilogue-fusion rule: the bias/residual Add
     * and activation computed in the tile's copy-out, not in a second pass
     * over the output) comes right before the same tile unfused. */
    for (int rank = 3; rank >= 1; rank--)
        for (int i = 0; i < nsk; i++) {
            if (heuristic_rank(&sk[i]) != rank) continue;
            tune_program progs[TUNE_MAX_HEURISTIC];
            int np = tune_program_heuristic(&sk[i], i, w, vlen, progs, TUNE_MAX_HEURISTIC);
            for (int k = 0; k < np; k++) {
                sch_schedule *s = tune_program_apply(ctx, w, &sk[i], &progs[k]);
                if (lowers(s, w)) {
                    set_how(ctx, how, i, sk[i].desc, k);
                    return s;
                }
            }
        }

    /* 2. Rules, best-suited sketch first (ties: the generator's order). */
    bool tried[MAXS] = {false};
    for (;;) {
        int best = -1, best_score = -1;
        for (int i = 0; i < nsk; i++) {
            if (tried[i] || fused_tail(&sk[i])) continue;
            int sc = tune__structural_score(&sk[i], &dag, vlen);
            if (sc > best_score) best = i, best_score = sc;
        }
        if (best < 0) break;
        tried[best] = true;
        /* Row reductions in their consumers' row loops, else at the root. */
        bool any_rows = false;
        for (int u = 0; u < sk[best].nunits; u++)
            any_rows |= tune__row_consumer(&sk[best], &dag, u) >= 0;
        for (int rows = any_rows; rows >= 0; rows--) {
            tune_program p;
            if (!tune__program_structural(&sk[best], best, &dag, vlen, rows, &p)) break;
            sch_schedule *s = tune_program_apply(ctx, w, &sk[best], &p);
            if (s && rows && rows_into_consumers(s, &sk[best], &dag)) s = NULL;
            if (lowers(s, w)) {
                set_how(ctx, how, best, sk[best].desc, rows ? -2 : -1);
                return s;
            }
        }
    }

    /* 3. Every stage parallel and vectorized, dot products rfactored. */
    sch_schedule *s = sch_create(ctx, w->nouts, w->outs);
    if (s && annotate_stages(s, vlen) == 0 && lowers(s, w)) {
        if (how) *how = te_strdup(ctx, "sch_create, every stage parallel and vectorized, dot "
                                       "products rfactored");
        return s;
    }

    /* 4. The outputs parallel and vectorized. */
    s = sch_create(ctx, w->nouts, w->outs);
    bool ok = s != NULL;
    for (int o = 0; ok && o < w->nouts; o++) ok = annotate_output(s, w->outs[o], vlen) == 0;
    if (ok && lowers(s, w)) {
        if (how) *how = te_strdup(ctx, "sch_create, outputs parallel and vectorized");
        return s;
    }

    /* 5. As created. */
    if (how) *how = te_strdup(ctx, "sch_create");
    return plain;
}
