/*
 * autotune/seed.c — heuristic programs: a sketch's holes filled by the
 * rules of the operator library's CPU default schedules instead of at
 * random, so the search measures, and evolution refines, the point those
 * rules pick.
 *
 * Why: random annotation almost never lands on a good register tile of a
 * large convolution (one tile size of each axis, the reduction unsplit, the
 * right fusion level at once), and the cost model cannot lead the search
 * there before it has seen one; so a search could measure hundreds of
 * programs all slower than the untuned default (bench/RESULTS.md, sessions
 * 13 and 15) and never explore around the default. TVM's MetaSchedule
 * likewise seeds its evolutionary search with the traces of schedule rules
 * before random samples; Ansor does not.
 *
 * The rules are the units' own (the `heuristic` of each rule in
 * autotune/rules/): a register tile (TILE_CACHE, TILE_CACHE_PACKED) gives
 * the programs, one per variant of its fill; the other units (padding at
 * the root, elementwise stages parallel and vectorized, packing) are
 * filled once, the same in each. Sketches with a unit whose rule has no
 * heuristic (tiling with fusion, rfactor, GPU units), or with two
 * register tiles, get none.
 *
 * Structural programs (tune_program_structural) are the other fill: every
 * unit by its rule's `structural` hook, from the stage's shape and reads
 * alone, for any computation (issue 35 part 2: a depthwise convolution
 * or a user's operator has no library tile to copy, and its heuristic
 * programs, where any, can be 4x slower than this fill).
 */
#include <string.h>

#include "autotune/rules/rule.h"

int tune_program_heuristic(const tune_sketch *sk, int sketch_index, const tune_workload *w,
                           int vlen, tune_program *out, int max) {
    if (!sk || !w || !out || max < 1 || vlen < 1 || tune_sketch_is_gpu(sk)) return 0;
    /* The shapes of the sketch's stages, in the order of the DAG. */
    tune_dag dag;
    te_ctx *ctx = w->outs && w->nouts > 0 ? w->outs[0]->ctx : NULL;
    if (!ctx || tune_dag_analyze(ctx, w->nouts, w->outs, &dag)) return 0;
    int tiled = -1;
    for (int u = 0; u < sk->nunits; u++) {
        const tune_rule *r = tune__unit_rule(sk->units[u].kind);
        if (!r->heuristic) return 0;
        if (r->heuristic_programs > 0) {
            if (tiled >= 0) return 0; /* one register tile per program */
            tiled = u;
        }
    }
    if (tiled < 0) return 0;
    tune_heur c = {sk, &dag, vlen, false};
    tune_program base;
    memset(&base, 0, sizeof base);
    base.sketch = sketch_index;
    for (int u = 0; u < sk->nunits; u++)
        if (u != tiled && !tune__unit_rule(sk->units[u].kind)->heuristic(&c, u, 0, &base)) return 0;
    const tune_rule *tr = tune__unit_rule(sk->units[tiled].kind);
    int n = 0;
    for (int v = 0; v < tr->heuristic_programs && n < max; v++) {
        out[n] = base;
        if (!tr->heuristic(&c, tiled, v, &out[n])) continue;
        /* The same program another way (one tile with or without a
         * tail, no window to order, no rows): once. */
        bool seen = false;
        for (int i = 0; i < n && !seen; i++)
            seen = !memcmp(out[i].vals, out[n].vals, sizeof out[n].vals);
        if (!seen) n++;
    }
    return n;
}

bool tune__program_structural(const tune_sketch *sk, int sketch_index, const tune_dag *dag,
                              int vlen, bool rows, tune_program *out) {
    /* GPU sketches too: those whose units all have a structural fill (a
     * tensor-core sketch: the template's default config) */
    if (!sk || !dag || !out || vlen < 1) return false;
    tune_heur c = {sk, dag, vlen, rows};
    memset(out, 0, sizeof *out);
    out->sketch = sketch_index;
    for (int u = 0; u < sk->nunits; u++) {
        const tune_rule *r = tune__unit_rule(sk->units[u].kind);
        if (!r->structural || !r->structural(&c, u, out)) return false;
    }
    return true;
}

int tune__structural_score(const tune_sketch *sk, const tune_dag *dag, int vlen) {
    tune_heur c = {sk, dag, vlen, false};
    int score = 0;
    for (int u = 0; u < sk->nunits; u++) {
        const tune_rule *r = tune__unit_rule(sk->units[u].kind);
        if (r->structural_score) score += r->structural_score(&c, u);
    }
    return score;
}

int tune_program_structural(const tune_sketch *sk, int sketch_index, const tune_workload *w,
                            int vlen, tune_program *out) {
    if (!sk || !w || !out || vlen < 1) return 0;
    tune_dag dag;
    te_ctx *ctx = w->outs && w->nouts > 0 ? w->outs[0]->ctx : NULL;
    if (!ctx || tune_dag_analyze(ctx, w->nouts, w->outs, &dag)) return 0;
    return tune__program_structural(sk, sketch_index, &dag, vlen, false, out) ? 1 : 0;
}
