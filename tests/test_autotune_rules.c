/*
 * tests/test_autotune_rules.c — the search space's rules (autotune/rules/)
 * seen through the public API: every kind of unit a rule adds is
 * described, decodes its random and heuristic fills into steps, and the
 * log decoder maps such steps back to a program with the same steps (the
 * decoder is a coordinate search, which may miss a log: at least one per
 * kind must come back, and none may fail with an error), and has every
 * hole reached by mutation (no rule's holes frozen by a mutation weight
 * of 0 or a rule that never changes them), and has no program leave a
 * nest to one thread by a parallel loop of one iteration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "loom/autotune.h"
#include "loom/tuning_db.h"

/* Small workloads whose sketches hold every kind of unit between them:
 * tiles with and without an accumulator and a packed input (matmul), a
 * placed padding stage and a packed register tile (conv2d), tiling with
 * fusion (conv2d_bias_relu), annotation and rfactor (layer_norm); on
 * CUDA the GPU tile with shared copies, flat stages and cross-thread
 * reductions. */
static const char *KEYS[] = {
    "matmul(M=32,N=32,K=16)",
    "conv2d(N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1)",
    "conv2d_bias_relu(N=1,C=4,H=8,W=8,K=16,R=3,S=3,pad=1)",
    "layer_norm(M=6,N=96)",
};

enum { NKINDS = TUNE_UNIT_GPU_XREDUCE + 1 };

/* One sketch of a test workload, with what the checks need. */
typedef struct {
    te_ctx *ctx;
    const char *key;
    bool gpu;
    const tune_workload *w;
    const tune_sketch *sk; /* all the workload's sketches */
    int n, i;              /* how many; this one */
} sketch_case;

/* Calls check on every sketch of every test workload, CPU and CUDA. */
static void each_sketch(void (*check)(const sketch_case *c, void *user), void *user) {
    for (int gpu = 0; gpu < 2; gpu++)
        for (size_t k = 0; k < sizeof KEYS / sizeof *KEYS; k++) {
            te_ctx *ctx = te_ctx_new();
            tune_workload w;
            tune_sketch sk[TUNE_MAX_SKETCHES];
            assert_int_equal(tune_build_workload(ctx, KEYS[k], &w), 0);
            int n = gpu ? tune_generate_sketches_gpu(ctx, &w, sk, TUNE_MAX_SKETCHES)
                        : tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
            if (n < 1) fail_msg("%s: %s", KEYS[k], te_ctx_errmsg(ctx));
            for (int i = 0; i < n; i++) {
                sketch_case c = {ctx, KEYS[k], gpu, &w, sk, n, i};
                check(&c, user);
            }
            te_ctx_free(ctx);
        }
}

/* Whether p's log decoded back (tune_program_from_steps) gives a program
 * with the same log: 1 yes, 0 not found, -1 p does not apply (an invalid
 * random program). */
static int round_trips(te_ctx *ctx, const char *key, const tune_workload *w,
                       const tune_sketch *sk, int nsk, const tune_program *p) {
    sch_schedule *s = tune_program_apply(ctx, w, &sk[p->sketch], p);
    if (!s) return -1;
    const char *want = tune_steps_key(ctx, s);
    char *json = tdb_schedule_to_json(s), *err = NULL;
    assert_non_null(json);
    tune_program q;
    int rc = tune_program_from_steps(key, sk, nsk, json, &q, &err);
    if (rc < 0) fail_msg("%s sketch %d (%s): %s", key, p->sketch, sk[p->sketch].desc, err);
    free(json);
    if (rc == 0) return 0;
    sch_schedule *s2 = tune_program_apply(ctx, w, &sk[q.sketch], &q);
    assert_non_null(s2);
    assert_string_equal(tune_steps_key(ctx, s2), want);
    return 1;
}

/* Sketch c: described, of its target, and its random fills (and the
 * heuristic ones, where its rules have a heuristic) decode to steps and
 * back; counts per unit kind the programs decoded back in user. */
static void decodes(const sketch_case *c, void *user) {
    int *back = user;
    const tune_sketch *sk = &c->sk[c->i];
    /* A unit without a text would show as '?'. */
    assert_null(strchr(sk->desc, '?'));
    assert_int_equal(tune_sketch_is_gpu(sk), c->gpu);
    uint64_t rng = 7 + (uint64_t)c->i;
    int applied = 0, found = 0;
    for (int r = 0; r < 16 && applied < 3; r++) {
        tune_program p;
        tune_program_random(sk, c->i, &rng, &p);
        int rc = round_trips(c->ctx, c->key, c->w, c->sk, c->n, &p);
        applied += rc >= 0;
        found += rc > 0;
    }
    if (applied == 0) fail_msg("%s: no random program of '%s' applies", c->key, sk->desc);
    tune_program hp[TUNE_MAX_HEURISTIC];
    int nh = tune_program_heuristic(sk, c->i, c->w, 8, hp, TUNE_MAX_HEURISTIC);
    for (int h = 0; h < nh; h++) {
        int rc = round_trips(c->ctx, c->key, c->w, c->sk, c->n, &hp[h]);
        assert_true(rc >= 0); /* a heuristic program always applies */
        found += rc;
    }
    for (int u = 0; u < sk->nunits; u++) back[sk->units[u].kind] += found;
}

/* Every kind of unit is in some sketch and decodes. */
static void test_every_unit_kind_decodes(void **st) {
    (void)st;
    int back[NKINDS] = {0}; /* programs with a unit of the kind decoded back */
    each_sketch(decodes, back);
    for (int kind = 0; kind < NKINDS; kind++)
        if (!back[kind]) fail_msg("unit kind %d: no program with it decoded back", kind);
}

/* The values a hole can take more than one of (a hole with one value
 * cannot be mutated). */
static bool has_choice(const tune_hole *h) {
    switch (h->kind) {
    case TUNE_HOLE_SPLIT: return h->extent > 1;
    case TUNE_HOLE_VECTOR: return h->extent > 1;
    case TUNE_HOLE_UNROLL: return true;
    case TUNE_HOLE_GPU_UNROLL:
    case TUNE_HOLE_GPU_FETCH: return h->extent > 1;
    case TUNE_HOLE_GPU_THREADS: return true;
    default: return h->extent > 1; /* PARALLEL, LOCATION: 1..extent */
    }
}

/* Mutation reaches every hole of sketch c that has a choice, of every
 * rule. */
static void mutates(const sketch_case *c, void *user) {
    (void)user;
    const tune_sketch *sk = &c->sk[c->i];
    uint64_t rng = 99 + (uint64_t)c->i;
    tune_program p;
    tune_program_random(sk, c->i, &rng, &p);
    bool reached[TUNE_MAX_HOLES] = {false};
    for (int t = 0; t < 4000; t++) {
        tune_program q = p;
        if (tune_program_mutate(sk, &rng, &q)) continue;
        for (int h = 0; h < sk->nholes; h++)
            if (memcmp(q.vals + sk->holes[h].offset, p.vals + sk->holes[h].offset,
                       sizeof(int64_t) * (size_t)sk->holes[h].nvals))
                reached[h] = true;
        /* From the mutated program too, so a hole whose one start value
         * allows no move gets other starts. */
        if (t % 64 == 63) p = q;
    }
    for (int h = 0; h < sk->nholes; h++)
        if (has_choice(&sk->holes[h]) && !reached[h])
            fail_msg("%s %s sketch %d (%s): hole %d (kind %d, unit kind %d) never mutated",
                     c->gpu ? "cuda" : "llvm", c->key, c->i, sk->desc, h, sk->holes[h].kind,
                     sk->units[sk->holes[h].unit].kind);
}

static void test_mutation_reaches_every_hole(void **st) {
    (void)st;
    each_sketch(mutates, NULL);
}

/* Whether lowered text holds a parallel loop of more than one iteration
 * ("for (v, 0, EXTENT) parallel" with EXTENT not 1). */
static bool has_wide_parallel_loop(const char *text) {
    for (const char *l = strstr(text, ") parallel"); l; l = strstr(l + 1, ") parallel")) {
        const char *comma = l;
        while (comma > text && *comma != ',') comma--;
        if (strncmp(comma, ", 1)", 4)) return true;
    }
    return false;
}

/* The lowered text of sketch sk's program p, with every PARALLEL hole
 * set to its largest value (all outer loops fused) when `widest`. */
static const char *lowered(te_ctx *ctx, const tune_workload *w, const tune_sketch *sk,
                           tune_program p, bool widest) {
    for (int h = 0; widest && h < sk->nholes; h++)
        if (sk->holes[h].kind == TUNE_HOLE_PARALLEL) p.vals[sk->holes[h].offset] = sk->holes[h].extent;
    sch_schedule *s = tune_program_apply(ctx, w, sk, &p);
    return s ? sch_lower_text(s, w->nargs, w->args) : NULL;
}

/* The extent of the loop each packed copy's parallel annotation names
 * in s (the first parallel annotation on a packed stage after its pack
 * step), smallest of them; INT64_MAX when s packs nothing. */
static int64_t packed_parallel_extent(const tune_workload *w, te_ctx *ctx, sch_schedule *s) {
    int n = sch_num_steps(s);
    const sch_step *st[512];
    assert_true(n <= 512);
    for (int i = 0; i < n; i++) st[i] = sch_get_step(s, i);
    int64_t least = INT64_MAX;
    for (int i = 0; i < n; i++) {
        if (st[i]->kind != SCH_STEP_PACK) continue;
        int k = i + 1;
        while (k < n && !(st[k]->kind == SCH_STEP_ANNOTATE && st[k]->ann == SCH_ANN_PARALLEL &&
                          st[k]->stage == st[i]->stage))
            k++;
        assert_true(k < n);
        sch_step pre[512];
        for (int j = 0; j < k; j++) pre[j] = *st[j];
        sch_schedule *p = sch_replay(ctx, w->nouts, w->outs, k, pre);
        assert_non_null(p);
        te_expr *const *ax;
        int nl = sch_stage_leaf_axes(p, st[k]->stage, &ax);
        assert_true(st[k]->iter < nl);
        if (ax[st[k]->iter]->u.var.extent < least) least = ax[st[k]->iter]->u.var.extent;
    }
    return least;
}

/* No CPU program leaves a whole nest to one thread when its outer loops
 * allow more (a batch loop of extent 1 alone parallel did, on 2
 * threads: bench/RESULTS.md session 40). On matrix-vector products and
 * a row reduction of batch 1, for every random and heuristic program of
 * every sketch: when the same program with all its outer loops fused
 * has a parallel loop of more than one iteration, so does the program;
 * and a packed copy's parallel loop has more than one iteration. */
static void test_parallel_loop_never_degenerate(void **st) {
    (void)st;
    static const char *keys[] = {"matmul(M=1,N=64,K=32)", "matmul(M=1,N=16,K=32)",
                                 "dense(M=1,N=40,K=24)", "layer_norm(M=1,N=96)"};
    int checked = 0, packs = 0;
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        te_ctx *ctx = te_ctx_new();
        tune_workload w;
        tune_sketch sk[TUNE_MAX_SKETCHES];
        assert_int_equal(tune_build_workload(ctx, keys[k], &w), 0);
        int n = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
        if (n < 1) fail_msg("%s: %s", keys[k], te_ctx_errmsg(ctx));
        uint64_t rng = 11;
        for (int i = 0; i < n; i++) {
            tune_program p[40];
            int np = tune_program_heuristic(&sk[i], i, &w, 8, p, TUNE_MAX_HEURISTIC);
            while (np < 40) tune_program_random(&sk[i], i, &rng, &p[np++]);
            for (int j = 0; j < np; j++) {
                const char *wide = lowered(ctx, &w, &sk[i], p[j], true);
                if (!wide || !has_wide_parallel_loop(wide)) continue;
                const char *text = lowered(ctx, &w, &sk[i], p[j], false);
                assert_non_null(text);
                if (!has_wide_parallel_loop(text))
                    fail_msg("%s sketch %d (%s), program %d: no parallel loop of more than "
                             "one iteration:\n%s",
                             keys[k], i, sk[i].desc, j, text);
                checked++;
            }
            /* A packed copy whose block loop has extent 1 (the whole
             * dimension one block) is parallel over its next loops. */
            for (int j = 0; j < np; j++) {
                sch_schedule *s = tune_program_apply(ctx, &w, &sk[i], &p[j]);
                if (!s) continue;
                int64_t e = packed_parallel_extent(&w, ctx, s);
                if (e != INT64_MAX) packs++;
                if (e <= 1) fail_msg("%s sketch %d (%s), program %d: a packed copy's parallel "
                                     "loop has extent %lld", keys[k], i, sk[i].desc, j, (long long)e);
            }
        }
        te_ctx_free(ctx);
    }
    assert_true(checked >= 40);
    assert_true(packs >= 10);
}

/* A constant input's packed copy runs once, before the calls, so it
 * keeps the steps stored logs have (its block loop alone parallel, right
 * after the pack step) and those logs still decode: only the copies that
 * run at each call take in their next loops. */
static void test_constant_pack_unchanged(void **st) {
    (void)st;
    const char *key = "onnx(opset=13;x v0:float[1,24];w v1:float[24,16];n v2=MatMul(v0,v1);out v2)";
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    if (tune_build_workload(ctx, key, &w)) fail_msg("%s", te_ctx_errmsg(ctx));
    assert_true(w.constant_args != 0);
    int n = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES), packs = 0;
    uint64_t rng = 5;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 40; j++) {
            tune_program p;
            tune_program_random(&sk[i], i, &rng, &p);
            sch_schedule *s = tune_program_apply(ctx, &w, &sk[i], &p);
            if (!s) continue;
            for (int k = 0; k + 1 < sch_num_steps(s); k++) {
                const sch_step *a = sch_get_step(s, k), *b = sch_get_step(s, k + 1);
                if (a->kind != SCH_STEP_PACK) continue;
                packs++;
                assert_int_equal(b->kind, SCH_STEP_ANNOTATE);
                assert_int_equal(b->ann, SCH_ANN_PARALLEL);
                assert_int_equal(b->iter, 0);
            }
        }
    assert_true(packs >= 10);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_unit_kind_decodes),
        cmocka_unit_test(test_mutation_reaches_every_hole),
        cmocka_unit_test(test_parallel_loop_never_degenerate),
        cmocka_unit_test(test_constant_pack_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
