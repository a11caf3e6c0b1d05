/*
 * tests/test_autotune_sketch.c — compute-DAG analysis, sketch rules
 * (golden sketch sets), random annotation (every program lowers, builds
 * and matches the reference), mutation keeps validity, step-log dedup.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "loom/autotune.h"

static const char *MM = "matmul(M=32,N=32,K=16)";
/* K = 16: a whole number of host vectors on AVX2 (8 lanes) and AVX-512 (16),
 * so the packed-vector sketch exists on either and the golden sets hold. */
static const char *CONV = "conv2d(N=1,C=4,H=8,W=8,K=16,R=3,S=3,pad=1)";
static const char *CBR = "conv2d_bias_relu(N=1,C=4,H=8,W=8,K=16,R=3,S=3,pad=1)";
static const char *DENSE = "dense_bias_gelu(M=16,N=32,K=24)";
static const char *NHWC = "conv2d_nhwc(N=1,H=6,W=6,C=4,K=16,R=3,S=3,pad=1)";

static int stage_named(const tune_dag *d, const char *name) {
    for (int i = 0; i < d->nstages; i++)
        if (!strcmp(d->stages[i].tensor->name, name)) return i;
    return -1;
}

static void test_dag(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_dag d;
    assert_int_equal(tune_build_workload(ctx, CBR, &w), 0);
    assert_int_equal(tune_dag_analyze(ctx, w.nouts, w.outs, &d), 0);
    int pad = stage_named(&d, "Pad"), o = stage_named(&d, "O"), y = stage_named(&d, "Y");
    int x = stage_named(&d, "X");
    assert_true(pad >= 0 && o >= 0 && y >= 0 && x >= 0);
    assert_true(d.stages[x].is_placeholder);
    assert_true(d.stages[pad].strictly_inlinable);
    assert_false(d.stages[pad].is_reduction);
    assert_true(d.stages[o].is_reduction && d.stages[o].has_data_reuse && d.stages[o].needs_tiling);
    assert_true(d.stages[y].is_output && !d.stages[y].strictly_inlinable);
    assert_int_equal(d.stages[o].nconsumers, 1);
    assert_int_equal(d.stages[o].consumers[0], y);
    assert_int_equal(d.stages[pad].consumers[0], o);
    /* An elementwise op: elementwise, not a reduction, nothing to tile. */
    assert_int_equal(tune_build_workload(ctx, "relu(D0=4,D1=8)", &w), 0);
    assert_int_equal(tune_dag_analyze(ctx, w.nouts, w.outs, &d), 0);
    int r = stage_named(&d, "Y");
    assert_true(d.stages[r].is_elementwise && !d.stages[r].needs_tiling);
    te_ctx_free(ctx);
}

static void expect_sketches(const char *key, int n, const char *const *golden) {
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, key, &w), 0);
    int got = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    for (int i = 0; i < got; i++) print_message("%s [%d] %s\n", key, i, sk[i].desc);
    assert_int_equal(got, n);
    for (int i = 0; i < n; i++) assert_string_equal(sk[i].desc, golden[i]);
    te_ctx_free(ctx);
}

static void test_sketch_golden(void **st) {
    (void)st;
    /* B[k, j] is walked by k at the vectorized j: each tiling also comes
     * with B packed. */
    expect_sketches(MM, 4,
                    (const char *[]){"C: tile SSRSRS", "B: cache_read, pack for C; C: tile SSRSRS",
                                     "C: cache_write, tile SSRSRS, fuse into copy",
                                     "B: cache_read, pack for C; C: cache_write, tile SSRSRS, "
                                     "fuse into copy"});
    /* W[j, k] (dense): packed on its first dimension. */
    expect_sketches(DENSE, 2, (const char *[]){"C: tile SSRSRS, fuse into Y",
                                               "W: cache_read, pack for C; C: tile SSRSRS, "
                                               "fuse into Y"});
    /* Padding (a branch) keeps a compute location: inline, root or at a
     * tile loop of the convolution. */
    expect_sketches(CONV, 3,
                    (const char *[]){"Pad: inline|root|at O; O: tile SSRSRS",
                                     "Pad: inline|root|at O; O: cache_write, tile SSRSRS, "
                                     "fuse into copy",
                                     "Pad: inline|root|at O; W: cache_read, pack for O; O: "
                                     "cache_write, pack, tile SSRSRS vectorized on a packed "
                                     "axis, fuse into copy"});
    /* The packed register tile with its elementwise tail Y in its
     * copy-out (epilogue fusion) first, then with Y as a stage of its own. */
    expect_sketches(CBR, 3,
                    (const char *[]){"Pad: inline|root|at O; O: tile SSRSRS, fuse into Y",
                                     "Pad: inline|root|at O; W: cache_read, pack for O; O: "
                                     "cache_write, pack, tile SSRSRS vectorized on a packed axis, "
                                     "fuse into its elementwise tail Y",
                                     "Pad: inline|root|at O; W: cache_read, pack for O; O: "
                                     "cache_write, pack, tile SSRSRS vectorized on a packed axis, "
                                     "fuse into copy; Y: annotate"});
    expect_sketches("relu(D0=4,D1=32)", 1, (const char *[]){"Y: annotate"});
    /* A long reduction with a tiny output: rfactor is offered. */
    expect_sketches("sum(D0=2,D1=4096,axes=2)", 2, (const char *[]){"Y: annotate", "Y: rfactor"});
}

/* Every randomly annotated program of every sketch lowers, builds and
 * matches the ops reference. */
static void check_random_programs(const char *key, int per_sketch, uint64_t seed) {
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, key, &w), 0);
    ops_workload *ow = ops_from_key(ctx, key);
    assert_non_null(ow);
    int n = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    assert_true(n > 0);
    uint64_t rng = seed;
    for (int s = 0; s < n; s++)
        for (int k = 0; k < per_sketch; k++) {
            tune_program p;
            tune_program_random(&sk[s], s, &rng, &p);
            sch_schedule *sc = tune_program_apply(ctx, &w, &sk[s], &p);
            if (!sc) fail_msg("%s sketch %d: invalid program: %s", key, s, te_ctx_errmsg(ctx));
            rt_module *m = cg_build(sc, w.nargs, w.args, "llvm", NULL);
            if (!m) fail_msg("%s: build: %s", key, te_ctx_errmsg(ctx));
            assert_int_equal(ops_check_module(ow, m, NULL, tune_rand(&rng)), 0);
            rt_module_free(m);
        }
    te_ctx_free(ctx);
}

static void test_annotation_correct(void **st) {
    (void)st;
    uint64_t seed = tu_seed();
    check_random_programs(MM, 3, seed);
    check_random_programs(DENSE, 3, seed);
    check_random_programs(NHWC, 2, seed);
    check_random_programs(CONV, 4, seed);
    check_random_programs(CBR, 2, seed);
    check_random_programs("sum(D0=2,D1=4096,axes=2)", 2, seed);
}

static void test_mutation_valid_and_dedup(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, CONV, &w), 0);
    int n = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    uint64_t rng = tu_seed() | 1;
    int changed = 0;
    for (int s = 0; s < n; s++) {
        tune_program p;
        tune_program_random(&sk[s], s, &rng, &p);
        for (int k = 0; k < 40; k++) {
            tune_program q = p;
            assert_int_equal(tune_program_mutate(&sk[s], &rng, &q), 0);
            /* Split factors still divide their extents (but a tailed
             * innermost one: tune_split_valid); innermost <= 64. */
            for (int h = 0; h < sk[s].nholes; h++) {
                const tune_hole *ho = &sk[s].holes[h];
                if (ho->kind != TUNE_HOLE_SPLIT) continue;
                assert_true(tune_split_valid(ho, q.vals + ho->offset));
                assert_true(q.vals[ho->offset + ho->nvals - 1] <= 64);
            }
            sch_schedule *a = tune_program_apply(ctx, &w, &sk[s], &p);
            sch_schedule *b = tune_program_apply(ctx, &w, &sk[s], &q);
            if (!b) fail_msg("mutated program invalid: %s", te_ctx_errmsg(ctx));
            assert_non_null(a);
            /* Same program, same key; a changed program, another key. */
            sch_schedule *a2 = tune_program_apply(ctx, &w, &sk[s], &p);
            assert_string_equal(tune_steps_key(ctx, a), tune_steps_key(ctx, a2));
            if (memcmp(p.vals, q.vals, sizeof p.vals)) {
                if (!strcmp(tune_steps_key(ctx, a), tune_steps_key(ctx, b))) {
                    /* Only a compute location may alias (outer loops fused
                     * into the parallel loop are one loop), and the count
                     * of loops fused parallel (loops of extent 1 after
                     * them are taken in: tune__fuse_parallel). */
                    for (int h = 0; h < sk[s].nholes; h++) {
                        const tune_hole *ho = &sk[s].holes[h];
                        bool place = sk[s].units[ho->unit].kind == TUNE_UNIT_PLACE;
                        if (ho->kind == TUNE_HOLE_PARALLEL) continue;
                        if (!place)
                            assert_memory_equal(p.vals + ho->offset, q.vals + ho->offset,
                                                sizeof(int64_t) * (size_t)ho->nvals);
                        else if (p.vals[ho->offset] != q.vals[ho->offset])
                            assert_true(p.vals[ho->offset] > 2 && q.vals[ho->offset] > 2);
                    }
                } else
                    changed++;
            }
            p = q;
        }
    }
    assert_true(changed > 20);
    te_ctx_free(ctx);
}

/* Random conv2d programs put Pad inline, at the root and at a loop of its
 * consumer; each placement shows in the log and computes the reference. */
static void test_pad_locations(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, CONV, &w), 0);
    ops_workload *ow = ops_from_key(ctx, CONV);
    assert_non_null(ow);
    int n = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    assert_true(n > 0);
    uint64_t rng = tu_seed() | 1;
    for (int s = 0; s < n; s++) {
        int place = -1;
        for (int u = 0; u < sk[s].nunits; u++)
            if (sk[s].units[u].kind == TUNE_UNIT_PLACE) place = u;
        assert_true(place >= 0);
        const tune_hole *loc = NULL;
        for (int h = 0; h < sk[s].nholes; h++)
            if (sk[s].holes[h].unit == place) loc = &sk[s].holes[h];
        assert_non_null(loc);
        assert_int_equal(loc->kind, TUNE_HOLE_LOCATION);
        assert_int_equal(loc->extent, 2 + 2 * 4); /* inline, root, 8 outer tile loops */
        bool checked[3] = {false, false, false};
        for (int k = 0; k < 200 && !(checked[0] && checked[1] && checked[2]); k++) {
            tune_program p;
            tune_program_random(&sk[s], s, &rng, &p);
            int64_t v = p.vals[loc->offset];
            int cat = v == 1 ? 0 : v == 2 ? 1 : 2;
            if (checked[cat]) continue;
            sch_schedule *sc = tune_program_apply(ctx, &w, &sk[s], &p);
            if (!sc) fail_msg("sketch %d location %lld: %s", s, (long long)v, te_ctx_errmsg(ctx));
            int inl = 0, at = 0, par = 0;
            for (int i = 0; i < sch_num_steps(sc); i++) {
                const sch_step *stp = sch_get_step(sc, i);
                if (strcmp(sch_stage_tensor(sc, stp->stage)->name, "Pad")) continue;
                inl += stp->kind == SCH_STEP_COMPUTE_INLINE;
                at += stp->kind == SCH_STEP_COMPUTE_AT;
                par += stp->kind == SCH_STEP_ANNOTATE && stp->ann == SCH_ANN_PARALLEL;
            }
            assert_int_equal(inl, cat == 0);
            assert_int_equal(at, cat == 2);
            assert_int_equal(par, cat == 1);
            rt_module *m = cg_build(sc, w.nargs, w.args, "llvm", NULL);
            if (!m) fail_msg("build: %s", te_ctx_errmsg(ctx));
            assert_int_equal(ops_check_module(ow, m, NULL, tune_rand(&rng)), 0);
            rt_module_free(m);
            /* The stored log maps back to a program with the same log. */
            char *json = tdb_schedule_to_json(sc), *err = NULL;
            tune_program q;
            assert_non_null(json);
            if (tune_program_from_steps(CONV, sk, n, json, &q, &err) != 1)
                fail_msg("location %lld does not decode: %s", (long long)v, err ? err : "no sketch");
            sch_schedule *sc2 = tune_program_apply(ctx, &w, &sk[q.sketch], &q);
            assert_non_null(sc2);
            assert_string_equal(tune_steps_key(ctx, sc), tune_steps_key(ctx, sc2));
            free(json);
            checked[cat] = true;
        }
        assert_true(checked[0] && checked[1] && checked[2]);
    }
    te_ctx_free(ctx);
}

/* Random annotation of a workload with extents up to 2^36 (issue
 * 30, item 2): the tile sizes come from the extents' divisors, which were
 * enumerated one by one up to the extent (a hang at 100 % CPU). Nothing
 * is built or run, so the buffers' size does not matter here. */
static void test_huge_extent_annotation(void **st) {
    (void)st;
    static const char *const keys[] = {"matmul(M=2147483648,N=16,K=16)",
                                       "matmul(M=68719476736,N=2147483647,K=16)"};
    for (size_t q = 0; q < sizeof keys / sizeof *keys; q++) {
        te_ctx *ctx = te_ctx_new();
        tune_workload w;
        tune_sketch sk[TUNE_MAX_SKETCHES];
        assert_int_equal(tune_build_workload(ctx, keys[q], &w), 0);
        int n = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
        assert_true(n > 0);
        uint64_t rng = 7;
        for (int i = 0; i < n; i++)
            for (int r = 0; r < 8; r++) {
                tune_program p;
                tune_program_random(&sk[i], i, &rng, &p);
                for (int h = 0; h < sk[i].nholes; h++) {
                    const tune_hole *ho = &sk[i].holes[h];
                    if (ho->kind == TUNE_HOLE_SPLIT)
                        assert_true(tune_split_valid(ho, &p.vals[ho->offset]));
                }
            }
        te_ctx_free(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dag),
        cmocka_unit_test(test_sketch_golden),
        cmocka_unit_test(test_annotation_correct),
        cmocka_unit_test(test_mutation_valid_and_dedup),
        cmocka_unit_test(test_pad_locations),
        cmocka_unit_test(test_huge_extent_annotation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
