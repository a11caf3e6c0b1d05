/*
 * tests/test_autotune_dw_blocked.c — a depthwise convolution on NCHW[16]c
 * (graph/pass_alter_layout.c's loom:ConvNCHWc with one channel a group,
 * as in MobileNetV2) with its Clip tail: its padding, read plane by plane
 * in channel blocks (tune__plane_block), is inlined by the heuristic and
 * structural fills, so tune_default_schedule's program computes no padded
 * copy (a pass over memory that made the stride-2 kernels 2.8x slower);
 * the register tile vectorizes over the channel block; every such program
 * matches a naive double reference (NaN-poisoned output, fresh random
 * inputs), stride 1 and 2. A dense NCHW[16]c convolution, which sums over
 * the padded channels, keeps its padding at the root.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "loom/autotune.h"

enum { CB = 2, H = 10, LANES = 16 };

/* Depthwise, 32 channels in 2 blocks of 16, 10 x 10, 3 x 3, pad 1, then
 * Clip(v3, v4). */
static void dw_key(char *buf, size_t n, int stride) {
    snprintf(buf, n,
             "onnx(opset=13;x v0:float[1,%d,%d,%d,16];w v1:float[%d,1,3,3,1,16];"
             "w v2:float[%d,16];w v3:float[1];w v4:float[1];"
             "n v5=loom:ConvNCHWc(v0,v1,v2){dilations=I[1,1],group=i%d,pads=I[1,1,1,1],"
             "strides=I[%d,%d]};n v6=Clip(v5,v3,v4);out v6)",
             CB, H, H, CB, CB, CB * LANES, stride, stride);
}

static const char *DENSE =
    "onnx(opset=13;x v0:float[1,2,10,10,16];w v1:float[2,2,3,3,16,16];w v2:float[2,16];"
    "n v3=loom:ConvNCHWc(v0,v1,v2){dilations=I[1,1],group=i1,pads=I[1,1,1,1],"
    "strides=I[1,1]};out v3)";

/* The value of sketch sk's compute-location hole of its padding in p;
 * -1: the sketch places no padding. */
static int64_t pad_location(const tune_sketch *sk, const tune_program *p) {
    for (int k = 0; k < sk->nholes; k++)
        if (sk->holes[k].kind == TUNE_HOLE_LOCATION &&
            sk->units[sk->holes[k].unit].kind == TUNE_UNIT_PLACE)
            return p->vals[sk->holes[k].offset];
    return -1;
}

/* Builds s and checks it against the double reference on fresh inputs. */
static void check_numeric(te_ctx *ctx, const tune_workload *w, sch_schedule *s, int stride,
                          const char *what) {
    int oh = (H + 2 - 3) / stride + 1;
    assert_int_equal(w->nargs, 6);
    rt_module *m = cg_build(s, w->nargs, w->args, "llvm", NULL);
    if (!m) fail_msg("%s: build: %s", what, te_ctx_errmsg(ctx));
    uint64_t rng = tu_seed() + (uint64_t)stride;
    DLTensor *X = tu_rand_f32(&rng, 5, (int64_t[]){1, CB, H, H, LANES});
    DLTensor *Wt = tu_rand_f32(&rng, 6, (int64_t[]){CB, 1, 3, 3, 1, LANES});
    DLTensor *B = tu_rand_f32(&rng, 2, (int64_t[]){CB, LANES});
    DLTensor *Lo = tu_rand_f32(&rng, 1, (int64_t[]){1});
    DLTensor *Hi = tu_rand_f32(&rng, 1, (int64_t[]){1});
    /* Both bounds inside the sums' range, so the clip cuts both sides. */
    ((float *)Lo->data)[0] = -0.5f;
    ((float *)Hi->data)[0] = 0.75f;
    DLTensor *Y = tu_nan_f32(5, (int64_t[]){1, CB, oh, oh, LANES});
    const float *x = X->data, *wt = Wt->data, *b = B->data;
    int64_t n = (int64_t)CB * oh * oh * LANES;
    double *want = malloc(sizeof(double) * (size_t)n);
    assert_non_null(want);
    for (int cb = 0; cb < CB; cb++)
        for (int y = 0; y < oh; y++)
            for (int xo = 0; xo < oh; xo++)
                for (int l = 0; l < LANES; l++) {
                    double acc = b[cb * LANES + l];
                    for (int ry = 0; ry < 3; ry++)
                        for (int rx = 0; rx < 3; rx++) {
                            int iy = y * stride + ry - 1, ix = xo * stride + rx - 1;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= H) continue;
                            acc += (double)x[((cb * H + iy) * H + ix) * LANES + l] *
                                   wt[((cb * 3 + ry) * 3 + rx) * LANES + l];
                        }
                    acc = acc < -0.5 ? -0.5 : acc > 0.75 ? 0.75 : acc;
                    want[((cb * oh + y) * oh + xo) * LANES + l] = acc;
                }
    assert_int_equal(rt_call(m, "default", RT_ARGS(X, Wt, B, Lo, Hi, Y)), 0);
    assert_int_equal(tu_compare_f32(what, Y->data, want, n, 1e-5, 1e-5), 0);
    free(want);
    rt_module_free(m);
    rt_tensor_free(X), rt_tensor_free(Wt), rt_tensor_free(B), rt_tensor_free(Lo);
    rt_tensor_free(Hi), rt_tensor_free(Y);
}

static void check_depthwise(int stride) {
    char key[512];
    dw_key(key, sizeof key, stride);
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    if (tune_build_workload(ctx, key, &w)) fail_msg("%s: %s", key, te_ctx_errmsg(ctx));
    int vlen = tune_host_vector_lanes();
    const char *how = NULL;
    sch_schedule *d = tune_default_schedule(ctx, &w, "llvm", &how);
    assert_non_null(d);
    /* The library's register tile (a heuristic program) of the sketch
     * that places the padding and fuses the tile into the Clip. */
    tu_assert_msg_has(how, "heuristic program 0", "inline|root|at",
                      "fuse into its elementwise tail");
    int si = -1;
    assert_int_equal(sscanf(how, "sketch %d", &si), 1);
    tune_sketch *sk = malloc(sizeof(tune_sketch) * TUNE_MAX_SKETCHES);
    assert_non_null(sk);
    int nsk = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    assert_true(si >= 0 && si < nsk);
    tune_program p[TUNE_MAX_HEURISTIC];
    assert_true(tune_program_heuristic(&sk[si], si, &w, vlen, p, TUNE_MAX_HEURISTIC) >= 1);
    /* Inlined (location 1), not at the root (2). */
    assert_int_equal(pad_location(&sk[si], &p[0]), 1);
    sch_schedule *hs = tune_program_apply(ctx, &w, &sk[si], &p[0]);
    assert_non_null(hs);
    char *mine = strdup(tune_steps_key(ctx, hs));
    assert_string_equal(mine, tune_steps_key(ctx, d));
    free(mine);
    /* The tile's vectors are the channel block's 16 lanes where the host
     * has 16 (the blocked register tile). */
    if (vlen == LANES)
        for (int k = sk[si].nholes - 1; k >= 0; k--) {
            const tune_hole *h = &sk[si].holes[k];
            if (h->kind == TUNE_HOLE_SPLIT && !h->reduce &&
                sk[si].units[h->unit].kind == TUNE_UNIT_TILE_CACHE && h->extent == LANES) {
                assert_int_equal(p[0].vals[h->offset + 2], LANES);
                break;
            }
        }
    /* No padded copy is computed: the lowered program allocates nothing
     * for the padding stage. */
    tir_func *f = sch_lower(d, w.nargs, w.args, "f");
    assert_non_null(f);
    f = tir_run_pipeline(ctx, f, NULL);
    assert_non_null(f);
    const char *text = tir_func_str(ctx, f);
    if (strstr(text, "_pad")) fail_msg("stride %d: a padded copy:\n%s", stride, text);
    check_numeric(ctx, &w, d, stride, "default");
    /* Every sketch's structural program inlines it too, and computes the
     * operator. */
    for (int k = 0; k < nsk; k++) {
        if (!tune_program_structural(&sk[k], k, &w, vlen, p)) continue;
        int64_t loc = pad_location(&sk[k], &p[0]);
        assert_true(loc == 1 || loc == -1);
        sch_schedule *s = tune_program_apply(ctx, &w, &sk[k], &p[0]);
        if (!s) fail_msg("sketch %d (%s): %s", k, sk[k].desc, te_ctx_errmsg(ctx));
        check_numeric(ctx, &w, s, stride, sk[k].desc);
    }
    free(sk);
    te_ctx_free(ctx);
}

static void test_stride1(void **st) {
    (void)st;
    check_depthwise(1);
}

static void test_stride2(void **st) {
    (void)st;
    check_depthwise(2);
}

/* Summing over the padded channels, a dense convolution reads no plane
 * alone: its padding stays at the root in every heuristic and structural
 * program. */
static void test_dense_keeps_root(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    if (tune_build_workload(ctx, DENSE, &w)) fail_msg("%s", te_ctx_errmsg(ctx));
    int vlen = tune_host_vector_lanes();
    tune_sketch *sk = malloc(sizeof(tune_sketch) * TUNE_MAX_SKETCHES);
    assert_non_null(sk);
    int nsk = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    tune_program p[TUNE_MAX_HEURISTIC];
    int seen = 0;
    for (int k = 0; k < nsk; k++) {
        int n = tune_program_heuristic(&sk[k], k, &w, vlen, p, TUNE_MAX_HEURISTIC);
        for (int i = 0; i < n; i++)
            if (pad_location(&sk[k], &p[i]) >= 0) {
                assert_int_equal(pad_location(&sk[k], &p[i]), 2);
                seen++;
            }
        if (tune_program_structural(&sk[k], k, &w, vlen, p) && pad_location(&sk[k], &p[0]) >= 0) {
            assert_int_equal(pad_location(&sk[k], &p[0]), 2);
            seen++;
        }
    }
    assert_true(seen > 0);
    free(sk);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stride1),
        cmocka_unit_test(test_stride2),
        cmocka_unit_test(test_dense_keeps_root),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
