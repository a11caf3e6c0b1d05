/*
 * tests/test_autotune_seed.c — heuristic programs (tune_program_heuristic):
 * the default schedules' tile rule (ops_packed_tile_shape) on hand-worked
 * extents, the hole values it writes into the packed-convolution and GEMM
 * sketches, which sketches get none, that each program builds and matches
 * the reference (NaN-poisoned output, fresh random inputs), and that the
 * CPU sketches' unroll pragma copies the tile (no loop left only hinted);
 * structural programs (tune_program_structural): a depthwise convolution's
 * packed tile, which would gather its data, gets no heuristic programs,
 * and its best-ranked sketch's structural program (a plain tiling, the
 * padding per plane) is exactly tune_default_schedule's schedule, correct.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "loom/autotune.h"

/* K = 32: a whole number of vectors with 8 and 16 lanes. 14 x 14 image:
 * no divisor of 14 near 6 columns, so the tail and no-tail tiles differ. */
static const char *CONV = "conv2d(N=1,C=8,H=14,W=14,K=32,R=3,S=3,pad=1)";
static const char *MM = "matmul(M=32,N=32,K=16)";
static const char *CBR = "conv2d_bias_relu(N=1,C=8,H=14,W=14,K=32,R=3,S=3,pad=1)";

static void test_packed_tile_shape(void **st) {
    (void)st;
    ops_packed_tile t;
    /* ResNet-50 c3 (128 channels, 28 x 28), AVX2: 2 vectors x 1 row x 6
     * columns = 12 accumulators with a tail (28 = 4 x 6 + 4). Without a
     * tail the dividing tiles of 8 accumulators tie (1 x 4, 2 x 2, 4 x 1
     * rows x columns of 2 vectors): the widest row wins, 1 x 4. */
    assert_true(ops_packed_tile_shape(128, 28, 28, 8, true, &t));
    assert_true(t.lanes == 16 && t.rows == 1 && t.cols == 6);
    assert_true(ops_packed_tile_shape(128, 28, 28, 8, false, &t));
    assert_true(t.lanes == 16 && t.rows == 1 && t.cols == 4);
    /* c2 (64 channels, 56 x 56): 2 rows x 3 columns with a tail (56 = 18 x
     * 3 + 2), 1 x 4 without. */
    assert_true(ops_packed_tile_shape(64, 56, 56, 8, true, &t));
    assert_true(t.lanes == 16 && t.rows == 2 && t.cols == 3);
    assert_true(ops_packed_tile_shape(64, 56, 56, 8, false, &t));
    assert_true(t.lanes == 16 && t.rows == 1 && t.cols == 4);
    /* 8 channels: one vector of lanes only. */
    assert_true(ops_packed_tile_shape(8, 4, 4, 8, false, &t));
    assert_int_equal(t.lanes, 8);
    assert_true(t.lanes * t.rows * t.cols / 8 <= 12);
    /* Not a whole number of vectors; bad extents: false, out untouched. */
    t = (ops_packed_tile){-1, -1, -1};
    assert_false(ops_packed_tile_shape(12, 28, 28, 8, true, &t));
    assert_false(ops_packed_tile_shape(16, 0, 28, 8, true, &t));
    assert_false(ops_packed_tile_shape(16, 28, 28, 0, true, &t));
    assert_false(ops_packed_tile_shape(16, 28, 28, 8, true, NULL));
    assert_int_equal(t.lanes, -1);
    /* The reduction order: taps outside for several rows or two vectors,
     * inside for one vector of one row (r50_c5's 8 x 1 x 7). */
    assert_true(ops_packed_taps_outside(&(ops_packed_tile){16, 2, 3}, 8));
    assert_true(ops_packed_taps_outside(&(ops_packed_tile){16, 1, 6}, 8));
    assert_true(ops_packed_taps_outside(&(ops_packed_tile){8, 2, 4}, 8));
    assert_false(ops_packed_taps_outside(&(ops_packed_tile){8, 1, 7}, 8));
    assert_false(ops_packed_taps_outside(&(ops_packed_tile){16, 1, 6}, 16));
    assert_false(ops_packed_taps_outside(NULL, 8));
    /* The channel block of the taps-outside order: the largest divisor up
     * to OPS_PACKED_REDUCE_BLOCK. */
    assert_int_equal(ops_packed_reduce_block(128), 16);
    assert_int_equal(ops_packed_reduce_block(3), 3);  /* the stem's 3 channels */
    assert_int_equal(ops_packed_reduce_block(40), 10);
    assert_int_equal(ops_packed_reduce_block(17), 1); /* a prime beyond the block */
    assert_int_equal(ops_packed_reduce_block(0), 1);
    /* The parallel loop's order: the row tiles outside the blocks of
     * channels while all the weights fit in OPS_PACKED_ROWS_OUTSIDE_BYTES
     * (r50_1x1's 64 KiB, r50_c2's 144 KiB), inside beyond (r50_c3's 576). */
    te_ctx *ctx = te_ctx_new();
    const int64_t x1[4] = {64, 256, 1, 1}, c2[4] = {64, 64, 3, 3}, c3[4] = {128, 128, 3, 3};
    const int64_t edge[1] = {OPS_PACKED_ROWS_OUTSIDE_BYTES / 4};
    const int64_t past[1] = {OPS_PACKED_ROWS_OUTSIDE_BYTES / 4 + 1};
    assert_true(ops_packed_rows_outside(te_placeholder(ctx, "W", TE_FLOAT32, 4, x1)));
    assert_true(ops_packed_rows_outside(te_placeholder(ctx, "W", TE_FLOAT32, 4, c2)));
    assert_false(ops_packed_rows_outside(te_placeholder(ctx, "W", TE_FLOAT32, 4, c3)));
    assert_true(ops_packed_rows_outside(te_placeholder(ctx, "W", TE_FLOAT32, 1, edge)));
    assert_false(ops_packed_rows_outside(te_placeholder(ctx, "W", TE_FLOAT32, 1, past)));
    /* Bytes, not elements: c2's weights in float64 are 288 KiB. */
    assert_false(ops_packed_rows_outside(te_placeholder(ctx, "W", TE_FLOAT64, 4, c2)));
    assert_false(ops_packed_rows_outside(NULL));
    te_ctx_free(ctx);
}

/* The sketch index whose description mentions `what`, -1 if none. */
static int sketch_with(const tune_sketch *sk, int n, const char *what) {
    for (int i = 0; i < n; i++)
        if (strstr(sk[i].desc, what)) return i;
    return -1;
}

/* Builds p, checks it against the reference and that no loop of its main
 * function is left unrolled only as a hint. */
static void check_program(te_ctx *ctx, const char *key, const tune_workload *w,
                          const tune_sketch *sk, const tune_program *p) {
    ops_workload *ow = ops_from_key(ctx, key);
    assert_non_null(ow);
    sch_schedule *s = tune_program_apply(ctx, w, sk, p);
    if (!s) fail_msg("%s: heuristic program does not apply: %s", key, te_ctx_errmsg(ctx));
    rt_module *m = cg_build(s, w->nargs, w->args, "llvm", NULL);
    if (!m) fail_msg("%s: build: %s", key, te_ctx_errmsg(ctx));
    assert_int_equal(ops_check_module(ow, m, NULL, tu_seed()), 0);
    rt_module_free(m);
    tir_func *f = sch_lower(s, w->nargs, w->args, "f");
    assert_non_null(f);
    f = tir_run_pipeline(ctx, f, NULL);
    assert_non_null(f);
    const char *text = tir_func_str(ctx, f);
    if (strstr(text, "unrolled")) fail_msg("%s: a loop only hinted to unroll:\n%s", key, text);
}

/* Builds workload key in ctx and its CPU sketches; returns their count. */
static int sketches_of(te_ctx *ctx, const char *key, tune_workload *w, tune_sketch *sk) {
    assert_int_equal(tune_build_workload(ctx, key, w), 0);
    int n = tune_generate_sketches(ctx, w, sk, TUNE_MAX_SKETCHES);
    assert_true(n > 0);
    return n;
}

static void test_conv_packed(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int nsk = sketches_of(ctx, CONV, &w, sk);
    int pk = sketch_with(sk, nsk, "vectorized on a packed axis");
    assert_true(pk >= 0);
    int vlen = tune_host_vector_lanes();
    tune_program p[TUNE_MAX_HEURISTIC];
    /* The other sketches (the tile on the image row, no packing) get none. */
    for (int k = 0; k < nsk; k++)
        if (k != pk)
            assert_int_equal(tune_program_heuristic(&sk[k], k, &w, vlen, p, TUNE_MAX_HEURISTIC), 0);
    int n = tune_program_heuristic(&sk[pk], pk, &w, vlen, p, TUNE_MAX_HEURISTIC);
    ops_packed_tile with, without;
    assert_true(ops_packed_tile_shape(32, 14, 14, vlen, true, &with));
    assert_true(ops_packed_tile_shape(32, 14, 14, vlen, false, &without));
    bool same = with.rows == without.rows && with.cols == without.cols;
    /* Each tile with the reduction in both orders and the row tiles in
     * both places, the default's first (9 KiB of weights: rows outside the
     * channel blocks). */
    assert_int_equal(n, same ? 4 : 8);
    assert_true(ops_packed_rows_outside(w.args[1]));
    for (int i = 0; i < n; i++) {
        const ops_packed_tile *t = i < 4 ? &with : &without;
        bool outside = ops_packed_taps_outside(t, vlen) != ((i / 2) % 2 == 1);
        bool rows_outside = i % 2 == 0;
        assert_int_equal(p[i].sketch, pk);
        /* Holes of the tile unit: N, K, OH, OW splits (3 values each,
         * innermost last), then rc, r, s, parallel, unroll, location. */
        const tune_hole *h = sk[pk].holes;
        assert_int_equal(h[0].kind, TUNE_HOLE_SPLIT);
        const int64_t *v = p[i].vals;
        assert_int_equal(v[h[0].offset + 2], 1);
        assert_int_equal(v[h[1].offset + 2], t->lanes);
        assert_int_equal(v[h[2].offset + 2], t->rows);
        assert_int_equal(v[h[3].offset + 2], t->cols);
        /* Rows outside: level 0 (outermost) holds the row tiles alone, the
         * channel blocks and the column tiles sit in level 1, inside them;
         * else every block in level 0. */
        assert_int_equal(v[h[1].offset], rows_outside ? 32 / t->lanes : 1);
        assert_int_equal(v[h[3].offset], rows_outside ? (14 + t->cols - 1) / t->cols : 1);
        for (int d = 0; d < 4; d++) {
            if (d == 0 || d == 2) assert_int_equal(v[h[d].offset], 1);
            assert_int_equal(v[h[d].offset + 1], 1);
            assert_true(tune_split_valid(&h[d], v + h[d].offset));
        }
        /* The reduction in the outer level, or the taps outside the 8
         * input channels (inner level): the default's order first. */
        assert_int_equal(v[h[4].offset], outside ? 8 : 1);
        for (int r = 5; r < 7; r++) assert_int_equal(v[h[r].offset], 1);
        assert_int_equal(h[7].kind, TUNE_HOLE_PARALLEL);
        assert_int_equal(v[h[7].offset], 3); /* level 0 of N, K and the rows */
        assert_int_equal(h[8].kind, TUNE_HOLE_UNROLL);
        assert_int_equal(v[h[8].offset], 1); /* 16 steps */
        assert_int_equal(h[9].kind, TUNE_HOLE_LOCATION);
        assert_int_equal(v[h[9].offset], 2);
        assert_int_equal(h[10].kind, TUNE_HOLE_LOCATION); /* Pad at the root */
        assert_int_equal(v[h[10].offset], 2);
        check_program(ctx, CONV, &w, &sk[pk], &p[i]);
    }
    /* max bounds what is written. */
    assert_int_equal(tune_program_heuristic(&sk[pk], pk, &w, vlen, p, 1), 1);
    assert_int_equal(tune_program_heuristic(&sk[pk], pk, &w, vlen, p, 0), 0);
    assert_int_equal(tune_program_heuristic(NULL, pk, &w, vlen, p, 2), 0);
    te_ctx_free(ctx);
}

/* A convolution with an elementwise consumer (bias, relu) has the packed
 * sketch twice: the consumer annotated as its own stage, and (the
 * epilogue-fusion rule) computed in the tile's copy-out; the heuristic
 * programs of both compute the fused operator right. Tiling with fusion
 * gets none. */
static void test_fused_conv_packed(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int nsk = sketches_of(ctx, CBR, &w, sk);
    int pk = sketch_with(sk, nsk, "vectorized on a packed axis, fuse into copy");
    int pt = sketch_with(sk, nsk, "vectorized on a packed axis, fuse into its elementwise tail Y");
    int fu = sketch_with(sk, nsk, "fuse into Y");
    assert_true(pk >= 0 && pt >= 0 && fu >= 0);
    assert_non_null(strstr(sk[pk].desc, "Y: annotate"));
    assert_null(strstr(sk[pt].desc, "Y: annotate"));
    int vlen = tune_host_vector_lanes();
    tune_program p[2];
    assert_int_equal(tune_program_heuristic(&sk[fu], fu, &w, vlen, p, 2), 0);
    for (int k = 0; k < 2; k++) {
        int s = k ? pt : pk;
        int n = tune_program_heuristic(&sk[s], s, &w, vlen, p, 2);
        assert_true(n >= 1);
        for (int i = 0; i < n; i++) check_program(ctx, CBR, &w, &sk[s], &p[i]);
    }
    te_ctx_free(ctx);
}

static void test_gemm(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int nsk = sketches_of(ctx, MM, &w, sk);
    int vlen = tune_host_vector_lanes();
    int got = 0;
    for (int k = 0; k < nsk; k++) {
        tune_program p[2];
        int n = tune_program_heuristic(&sk[k], k, &w, vlen, p, 2);
        /* Only the cached tile with B packed: "B: cache_read, pack for C;
         * C: cache_write, tile SSRSRS, fuse into copy". */
        bool want = strstr(sk[k].desc, "pack for C") && strstr(sk[k].desc, "cache_write");
        assert_int_equal(n, want ? 1 : 0);
        if (!n) continue;
        got++;
        const tune_hole *h = sk[k].holes;
        const int64_t *v = p[0].vals;
        /* Rows: 6 a tile (32 = 5 x 6 + 2, a tail), ceil(32 / 6) = 6 tiles
         * in level 1; columns: 2 vectors (4 with 16 lanes: all 32). */
        int64_t nb = vlen >= 16 ? 32 : 2 * vlen;
        assert_int_equal(v[h[0].offset], 6);
        assert_int_equal(v[h[0].offset + 1], 1);
        assert_int_equal(v[h[0].offset + 2], 6);
        assert_int_equal(v[h[1].offset], 1);
        assert_int_equal(v[h[1].offset + 2], nb);
        assert_int_equal(v[h[2].offset], 1);              /* k unsplit */
        assert_int_equal(v[h[3].offset], 2);              /* both outer loops parallel */
        check_program(ctx, MM, &w, &sk[k], &p[0]);
    }
    assert_int_equal(got, 1);
    /* GPU sketches: none. */
    int ng = tune_generate_sketches_gpu(ctx, &w, sk, TUNE_MAX_SKETCHES);
    assert_true(ng > 0);
    tune_program p[2];
    for (int k = 0; k < ng; k++) assert_int_equal(tune_program_heuristic(&sk[k], k, &w, vlen, p, 2), 0);
    te_ctx_free(ctx);
}

static const char *DW = "depthwise_conv2d_nchw(N=1,C=16,H=14,W=14,R=3,S=3,pad=1)";

static void test_depthwise_structural(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int nsk = sketches_of(ctx, DW, &w, sk);
    int vlen = tune_host_vector_lanes();
    int pk = sketch_with(sk, nsk, "vectorized on a packed axis");
    int cw = sketch_with(sk, nsk, "O: cache_write, tile SSRSRS, fuse into copy");
    int pl = sketch_with(sk, nsk, "O: tile SSRSRS");
    assert_true(pk >= 0 && cw >= 0 && pl >= 0);
    tune_program p[TUNE_MAX_HEURISTIC];
    /* Vectors over channels would gather the data: no heuristic program,
     * and no structural one (its unpacked twin has it). */
    assert_int_equal(tune_program_heuristic(&sk[pk], pk, &w, vlen, p, TUNE_MAX_HEURISTIC), 0);
    assert_int_equal(tune_program_structural(&sk[pk], pk, &w, vlen, p), 0);
    /* The plain tiling reads its padding plane by plane: its structural
     * program is the default schedule's. */
    assert_int_equal(tune_program_heuristic(&sk[pl], pl, &w, vlen, p, TUNE_MAX_HEURISTIC), 0);
    assert_int_equal(tune_program_structural(&sk[pl], pl, &w, vlen, p), 1);
    assert_int_equal(p[0].sketch, pl);
    sch_schedule *s = tune_program_apply(ctx, &w, &sk[pl], &p[0]);
    assert_non_null(s);
    char *mine = strdup(tune_steps_key(ctx, s));
    const char *how = NULL;
    sch_schedule *d = tune_default_schedule(ctx, &w, "llvm", &how);
    assert_non_null(d);
    tu_assert_msg_has(how, "rules");
    assert_string_equal(mine, tune_steps_key(ctx, d));
    free(mine);
    /* The planes (N, C) outermost and parallel, each plane's rows and
     * columns inside it (level 1) in tiles of 2 rows (14: 4 does not
     * divide) x 14 columns (the whole row up to two vectors), the
     * padding computed at the planes' loop (location 3 + 1). */
    const tune_hole *h = sk[pl].holes;
    const int64_t *v = p[0].vals;
    int64_t cols = 14 <= 2 * vlen ? 14 : 7;
    assert_int_equal(v[h[2].offset + 2], 2);
    assert_int_equal(v[h[2].offset], 7);
    assert_int_equal(v[h[3].offset + 2], cols);
    assert_int_equal(v[h[3].offset], 14 / cols);
    assert_int_equal(v[h[1].offset], 1);
    for (int k = 0; k < sk[pl].nholes; k++) {
        if (h[k].kind == TUNE_HOLE_PARALLEL) assert_int_equal(v[h[k].offset], 2);
        if (h[k].kind == TUNE_HOLE_LOCATION) assert_int_equal(v[h[k].offset], 4);
    }
    check_program(ctx, DW, &w, &sk[pl], &p[0]);
    /* The register tile's sketch keeps the padding at the root (at its
     * loops it would be computed per tile). */
    assert_int_equal(tune_program_structural(&sk[cw], cw, &w, vlen, p), 1);
    h = sk[cw].holes;
    for (int k = 0; k < sk[cw].nholes; k++)
        if (h[k].kind == TUNE_HOLE_LOCATION && sk[cw].units[h[k].unit].kind == TUNE_UNIT_PLACE)
            assert_int_equal(p[0].vals[h[k].offset], 2);
    /* Every sketch without heuristic programs but the packed one has one,
     * and each builds and computes the operator. */
    for (int k = 0; k < nsk; k++) {
        if (k == pk) continue;
        assert_int_equal(tune_program_structural(&sk[k], k, &w, vlen, p), 1);
        check_program(ctx, DW, &w, &sk[k], &p[0]);
    }
    /* A dense convolution sums over the padded input's channels: no
     * sketch of it computes its padding per plane. */
    te_ctx *cctx = te_ctx_new();
    tune_workload cw_;
    tune_sketch csk[TUNE_MAX_SKETCHES];
    int ncsk = sketches_of(cctx, CONV, &cw_, csk);
    for (int k = 0; k < ncsk; k++) {
        if (!tune_program_structural(&csk[k], k, &cw_, vlen, p)) continue;
        for (int i = 0; i < csk[k].nholes; i++)
            if (csk[k].holes[i].kind == TUNE_HOLE_LOCATION &&
                csk[k].units[csk[k].holes[i].unit].kind == TUNE_UNIT_PLACE)
                assert_int_equal(p[0].vals[csk[k].holes[i].offset], 2);
    }
    te_ctx_free(cctx);
    /* GPU sketches and bad arguments: none. */
    int ng = tune_generate_sketches_gpu(ctx, &w, sk, TUNE_MAX_SKETCHES);
    assert_true(ng > 0);
    assert_int_equal(tune_program_structural(&sk[0], 0, &w, vlen, p), 0);
    assert_int_equal(tune_program_structural(NULL, 0, &w, vlen, p), 0);
    assert_int_equal(tune_program_structural(&sk[0], 0, NULL, vlen, p), 0);
    assert_int_equal(tune_program_structural(&sk[0], 0, &w, 0, p), 0);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packed_tile_shape),
        cmocka_unit_test(test_conv_packed),
        cmocka_unit_test(test_fused_conv_packed),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_depthwise_structural),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
