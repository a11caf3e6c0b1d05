/*
 * tests/test_autotune_neighbour.c — tune_program_neighbour: from the
 * depthwise convolution's structural program (the search's best start),
 * every neighbour differs in exactly one hole by one step (a split's
 * prime factor moved between adjacent levels, a location, parallel or
 * unrolling depth +-1), stays valid, applies, and a few compute the
 * operator (ops_check_module: NaN-poisoned output, fresh inputs); the
 * neighbours reach several holes; bad arguments and GPU sketches: -1,
 * the program unchanged.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "loom/autotune.h"

static const char *DW = "depthwise_conv2d_nchw(N=1,C=16,H=14,W=14,R=3,S=3,pad=1)";

/* The levels of split hole h (outermost implicit, then v[0..nvals-1]). */
static int levels(const tune_hole *h, const int64_t *v, int64_t *lv) {
    int m = h->nvals;
    int64_t prod = 1;
    for (int j = 0; j < m - 1; j++) prod *= v[j];
    lv[0] = (h->extent + v[m - 1] - 1) / v[m - 1] / prod;
    for (int j = 0; j < m; j++) lv[j + 1] = v[j];
    return m + 1;
}

/* One prime factor q moved from level a to an adjacent level b. */
static bool one_step_split(const tune_hole *h, const int64_t *old, const int64_t *now) {
    int64_t lo[8], ln[8];
    int n = levels(h, old, lo);
    levels(h, now, ln);
    int from = -1, to = -1, changed = 0;
    for (int j = 0; j < n; j++) {
        if (lo[j] == ln[j]) continue;
        changed++;
        if (ln[j] < lo[j]) from = j;
        else to = j;
    }
    if (changed != 2 || from < 0 || to < 0 || abs(from - to) != 1) return false;
    int64_t q = lo[from] / ln[from];
    if (lo[from] % ln[from] || ln[to] != lo[to] * q) return false;
    /* The smallest prime factor of the level it left. */
    for (int64_t d = 2; d < q; d++)
        if (lo[from] % d == 0) return false;
    return true;
}

static void test_steps(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    assert_int_equal(tune_build_workload(ctx, DW, &w), 0);
    tune_sketch *sk = malloc(sizeof(tune_sketch) * TUNE_MAX_SKETCHES);
    assert_non_null(sk);
    int nsk = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    assert_true(nsk > 0);
    int vlen = tune_host_vector_lanes();
    ops_workload *ow = ops_from_key(ctx, DW);
    assert_non_null(ow);
    uint64_t rng = tu_seed() | 1;
    int checked = 0, tried = 0;
    for (int k = 0; k < nsk; k++) {
        tune_program base;
        if (!tune_program_structural(&sk[k], k, &w, vlen, &base)) continue;
        tried++;
        bool hit[TUNE_MAX_HOLES] = {false};
        for (int it = 0; it < 200; it++) {
            tune_program p = base;
            if (tune_program_neighbour(&sk[k], &rng, &p)) continue;
            int diff = -1, ndiff = 0;
            for (int i = 0; i < sk[k].nholes; i++) {
                const tune_hole *h = &sk[k].holes[i];
                if (memcmp(p.vals + h->offset, base.vals + h->offset,
                           sizeof(int64_t) * (size_t)h->nvals))
                    diff = i, ndiff++;
            }
            if (ndiff != 1) fail_msg("sketch %d: %d holes changed in one step", k, ndiff);
            const tune_hole *h = &sk[k].holes[diff];
            const int64_t *o = base.vals + h->offset, *n = p.vals + h->offset;
            hit[diff] = true;
            if (h->kind == TUNE_HOLE_SPLIT) {
                assert_true(tune_split_valid(h, n));
                if (!one_step_split(h, o, n)) fail_msg("sketch %d hole %d: not one step", k, diff);
            } else {
                assert_int_equal(llabs(n[0] - o[0]), 1);
                assert_true(n[0] >= (h->kind == TUNE_HOLE_UNROLL ? 0 : 1));
                if (h->kind != TUNE_HOLE_UNROLL) assert_true(n[0] <= h->extent);
            }
            sch_schedule *s = tune_program_apply(ctx, &w, &sk[k], &p);
            if (!s) fail_msg("sketch %d: neighbour does not apply: %s", k, te_ctx_errmsg(ctx));
            if (it < 3) {
                rt_module *m = cg_build(s, w.nargs, w.args, "llvm", NULL);
                if (!m) fail_msg("sketch %d: build: %s", k, te_ctx_errmsg(ctx));
                assert_int_equal(ops_check_module(ow, m, NULL, tu_seed() + (uint64_t)it), 0);
                rt_module_free(m);
                checked++;
            }
        }
        int nhit = 0;
        for (int i = 0; i < sk[k].nholes; i++) nhit += hit[i];
        assert_true(nhit >= 3);
    }
    assert_true(tried > 0 && checked > 0);
    /* Bad arguments and GPU sketches: -1, p unchanged. */
    tune_program p, q;
    assert_int_equal(tune_program_structural(&sk[0], 0, &w, vlen, &p), 1);
    q = p;
    assert_int_equal(tune_program_neighbour(NULL, &rng, &p), -1);
    assert_int_equal(tune_program_neighbour(&sk[0], NULL, &p), -1);
    assert_int_equal(tune_program_neighbour(&sk[0], &rng, NULL), -1);
    assert_memory_equal(&p, &q, sizeof p);
    int ng = tune_generate_sketches_gpu(ctx, &w, sk, TUNE_MAX_SKETCHES);
    assert_true(ng > 0);
    assert_int_equal(tune_program_neighbour(&sk[0], &rng, &p), -1);
    assert_memory_equal(&p, &q, sizeof p);
    free(sk);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
