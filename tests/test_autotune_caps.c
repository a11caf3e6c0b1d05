/*
 * tests/test_autotune_caps.c — every cap of DAG analysis and sketch
 * generation is reported when hit: an error naming the cap, its value and
 * the workload where leaving something out would make the space wrong; a
 * count of the sketches left out where truncation is by design.
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "loom/autotune.h"

/* A chain of n reductions S1..Sn, each summing its predecessor over a
 * short axis at its own indices: no data reuse, so each is a stage of its
 * own (one unit) that no rule inlines. */
static tune_workload chain(te_ctx *ctx, int n) {
    te_tensor *prev = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(4, 8));
    for (int j = 1; j <= n; j++) {
        char name[16];
        snprintf(name, sizeof name, "S%d", j);
        te_expr *i = te_axis(ctx, "i", 4), *k = te_axis(ctx, "k", 8);
        te_expr *r = te_reduce_axis(ctx, "r", 2);
        prev = te_compute(ctx, name, TE_AXES(i, k),
                          te_sum(te_mul(te_read(prev, i, k), te_cast(TE_FLOAT32, r)), r));
        assert_non_null(prev);
    }
    static te_tensor *outs[1];
    outs[0] = prev;
    return (tune_workload){.nargs = 1, .args = outs, .nouts = 1, .outs = outs};
}

/* A chain of n matrix products M1..Mn (each tiled: two or more sketch
 * variants per stage). */
static tune_workload matmuls(te_ctx *ctx, int n) {
    te_tensor *prev = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(16, 16));
    for (int j = 1; j <= n; j++) {
        char name[16];
        snprintf(name, sizeof name, "W%d", j);
        te_tensor *wt = te_placeholder(ctx, name, TE_FLOAT32, TE_SHAPE(16, 16));
        snprintf(name, sizeof name, "M%d", j);
        te_expr *i = te_axis(ctx, "i", 16), *k = te_axis(ctx, "k", 16);
        te_expr *r = te_reduce_axis(ctx, "r", 16);
        prev = te_compute(ctx, name, TE_AXES(i, k),
                          te_sum(te_mul(te_read(prev, i, r), te_read(wt, r, k)), r));
        assert_non_null(prev);
    }
    static te_tensor *outs[1];
    outs[0] = prev;
    return (tune_workload){.nargs = 1, .args = outs, .nouts = 1, .outs = outs};
}

static void expect_error(te_ctx *ctx, const tune_workload *w, bool gpu, const char *want) {
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int dropped = -1;
    int n = gpu ? tune_generate_sketches_gpu_ex(ctx, w, sk, TUNE_MAX_SKETCHES, &dropped)
                : tune_generate_sketches_ex(ctx, w, sk, TUNE_MAX_SKETCHES, &dropped);
    print_message("%s\n", te_ctx_errmsg(ctx));
    assert_int_equal(n, -1);
    assert_string_equal(te_ctx_errmsg(ctx), want);
}

static void test_units(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w = chain(ctx, TUNE_MAX_UNITS);
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int dropped = -1;
    assert_int_equal(tune_generate_sketches_ex(ctx, &w, sk, TUNE_MAX_SKETCHES, &dropped), 1);
    assert_int_equal(dropped, 0);
    assert_int_equal(sk[0].nunits, TUNE_MAX_UNITS);
    w = chain(ctx, TUNE_MAX_UNITS + 1);
    expect_error(ctx, &w, false,
                 "autotune: workload with outputs 'S9' needs more than TUNE_MAX_UNITS = 8 "
                 "units in a sketch");
    expect_error(ctx, &w, true,
                 "autotune: workload with outputs 'S9' needs more than TUNE_MAX_UNITS = 8 "
                 "units in a GPU sketch");
    te_ctx_free(ctx);
}

/* Four tiled stages of rank 8 with 4 reduce axes: about 15 holes each,
 * more than TUNE_MAX_HOLES in four units. */
static void test_holes(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    te_tensor *prev = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(2, 2, 2, 2, 2, 2, 2, 2));
    for (int j = 1; j <= 4; j++) {
        te_expr *ax[8], *red[4], *idx[8];
        for (int d = 0; d < 8; d++) ax[d] = te_axis(ctx, "i", 2);
        for (int d = 0; d < 4; d++) red[d] = te_reduce_axis(ctx, "r", 2);
        for (int d = 0; d < 4; d++) idx[d] = ax[d], idx[4 + d] = red[d];
        prev = te_compute(ctx, j == 4 ? "Wide" : "T", 8, ax,
                          te_reduce_n(TE_REDUCE_SUM, te_read_n(prev, 8, idx), 4, red));
        assert_non_null(prev);
    }
    te_tensor *outs[1] = {prev};
    tune_workload w = {.nargs = 1, .args = outs, .nouts = 1, .outs = outs};
    expect_error(ctx, &w, false,
                 "autotune: workload with outputs 'Wide' needs more than TUNE_MAX_HOLES = 48 "
                 "holes (or 144 hole values) in a sketch");
    expect_error(ctx, &w, true,
                 "autotune: workload with outputs 'Wide' needs more than TUNE_MAX_HOLES = 48 "
                 "holes (or 144 hole values) in a GPU sketch");
    te_ctx_free(ctx);
}

/* Past TUNE_MAX_PARTIAL_SKETCHES and past max, sketches are counted. */
static void test_dropped(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int dropped = -1;
    tune_workload w = matmuls(ctx, 1);
    int all = tune_generate_sketches_ex(ctx, &w, sk, TUNE_MAX_SKETCHES, &dropped);
    assert_true(all > 1);
    assert_int_equal(dropped, 0);
    assert_int_equal(tune_generate_sketches_ex(ctx, &w, sk, 1, &dropped), 1);
    assert_int_equal(dropped, all - 1);
    assert_int_equal(tune_generate_sketches_ex(ctx, &w, sk, 0, &dropped), -1);
    assert_string_equal(te_ctx_errmsg(ctx), "autotune: no room for a sketch (max 0)");
    w = matmuls(ctx, 6);
    int n = tune_generate_sketches_ex(ctx, &w, sk, TUNE_MAX_SKETCHES, &dropped);
    print_message("6 matmuls: %d sketches (%s), %d dropped\n", n,
                  n > 0 ? sk[0].desc : te_ctx_errmsg(ctx), dropped);
    assert_int_equal(n, TUNE_MAX_SKETCHES);
    /* At least the partial sketches past the cap, and those past max. */
    assert_true(dropped >= TUNE_MAX_PARTIAL_SKETCHES - TUNE_MAX_SKETCHES + 1);
    /* The old entry point still truncates to max, quietly by request. */
    assert_int_equal(tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES), TUNE_MAX_SKETCHES);
    te_ctx_free(ctx);
}

static void test_gpu_dropped(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_sketch sk[2];
    int dropped = -1;
    /* A long row sum: a cross-thread sketch and a flat one. */
    te_tensor *a = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(4, 256));
    te_expr *i = te_axis(ctx, "i", 4), *r = te_reduce_axis(ctx, "r", 256);
    te_tensor *o = te_compute(ctx, "RowSum", TE_AXES(i), te_sum(te_read(a, i, r), r));
    te_tensor *outs[1] = {o};
    tune_workload w = {.nargs = 1, .args = outs, .nouts = 1, .outs = outs};
    assert_int_equal(tune_generate_sketches_gpu_ex(ctx, &w, sk, 2, &dropped), 2);
    assert_int_equal(dropped, 0);
    assert_int_equal(tune_generate_sketches_gpu_ex(ctx, &w, sk, 1, &dropped), 1);
    assert_int_equal(dropped, 1);
    te_ctx_free(ctx);
}

static void test_stages_edges(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    /* TUNE_MAX_STAGES: a chain of elementwise stages. */
    te_tensor *prev = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(8));
    for (int j = 0; j < TUNE_MAX_STAGES; j++) {
        te_expr *i = te_axis(ctx, "i", 8);
        prev = te_compute(ctx, j == TUNE_MAX_STAGES - 1 ? "Last" : "E", TE_AXES(i),
                          te_add(te_read(prev, i), te_float(ctx, 1)));
    }
    te_tensor *outs[1] = {prev};
    tune_workload w = {.nargs = 1, .args = outs, .nouts = 1, .outs = outs};
    expect_error(ctx, &w, false,
                 "autotune: workload with outputs 'Last': 33 stages; the tuner handles at most "
                 "TUNE_MAX_STAGES = 32");
    expect_error(ctx, &w, true,
                 "autotune: workload with outputs 'Last': 33 stages; the tuner handles at most "
                 "TUNE_MAX_STAGES = 32");
    /* TUNE_MAX_EDGES: a stage reading nine inputs. */
    te_expr *i = te_axis(ctx, "i", 8), *sum = NULL;
    for (int k = 0; k <= TUNE_MAX_EDGES; k++) {
        char name[8];
        snprintf(name, sizeof name, "I%d", k);
        te_expr *x = te_read(te_placeholder(ctx, name, TE_FLOAT32, TE_SHAPE(8)), i);
        sum = sum ? te_add(sum, x) : x;
    }
    outs[0] = te_compute(ctx, "Nine", TE_AXES(i), sum);
    expect_error(ctx, &w, false,
                 "autotune: workload with outputs 'Nine': stage 'Nine' has more than "
                 "TUNE_MAX_EDGES = 8 producers or consumers");
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units),      cmocka_unit_test(test_holes),
        cmocka_unit_test(test_dropped),    cmocka_unit_test(test_gpu_dropped),
        cmocka_unit_test(test_stages_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
