/*
 * graph/infer_roialign.c and lower_roialign.c: RoiAlign (avg) as
 * one-node models run through gr_compile/gr_run on fresh random images
 * and rois (outputs poisoned first) against a naive double reference of
 * ONNX Runtime's definition: half_pixel and output_half_pixel (and
 * opset 10, which has only the latter), spatial_scale, sampling ratios 1
 * to 3, rois reaching outside the image and narrower than a pixel,
 * several batch images; and every refusal's message.
 *
 * Tolerance: 1e-5 (1 + |expected|) (float output of a float64 sum).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, I64 = {kDLInt, 64, 1};

static double bilinear(const DLTensor *x, int64_t b, int64_t c, double y, double xx)
{
    int64_t C = x->shape[1], H = x->shape[2], W = x->shape[3];
    if (y < -1.0 || y > (double)H || xx < -1.0 || xx > (double)W) return 0;
    if (y <= 0) y = 0;
    if (xx <= 0) xx = 0;
    int64_t yl = (int64_t)y, xl = (int64_t)xx, yh, xh;
    if (yl >= H - 1) {
        yh = yl = H - 1;
        y = (double)yl;
    } else {
        yh = yl + 1;
    }
    if (xl >= W - 1) {
        xh = xl = W - 1;
        xx = (double)xl;
    } else {
        xh = xl + 1;
    }
    double ly = y - (double)yl, lx = xx - (double)xl, hy = 1 - ly, hx = 1 - lx;
#define P(a, bb) ow_get(x, ((b * C + c) * H + (a)) * W + (bb))
    return hy * hx * P(yl, xl) + hy * lx * P(yl, xh) + ly * hx * P(yh, xl) + ly * lx * P(yh, xh);
#undef P
}

static void roi_case(uint64_t *rng, int64_t opset, const char *mode, double scale, int64_t sr, int64_t oh, int64_t ow)
{
    const int64_t xs[4] = {2, 3, 7, 9}, R = 5, rs[2] = {R, 4};
    ow_model *w = ow_new(opset);
    ow_input(w, "x", GR_FLOAT, 4, xs);
    ow_input(w, "r", GR_FLOAT, 2, rs);
    ow_input(w, "b", GR_INT64, 1, &R);
    ow_node *n = ow_node_add(w, "", "RoiAlign", "x,r,b", "y");
    if (mode) ow_attr_str(n, "coordinate_transformation_mode", mode);
    ow_attr_float(n, "spatial_scale", (float)scale);
    ow_attr_int(n, "sampling_ratio", sr);
    ow_attr_int(n, "output_height", oh);
    ow_attr_int(n, "output_width", ow);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(F32, 4, xs), *r = ow_tensor(F32, 2, rs), *b = ow_tensor(I64, 1, &R);
    for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, tu_rand_uniform(rng, -1, 1));
    for (int64_t i = 0; i < R; i++) {
        double x1 = tu_rand_uniform(rng, -3, 9 / scale), y1 = tu_rand_uniform(rng, -3, 7 / scale);
        double wd = i == 0 ? 0.3 : tu_rand_uniform(rng, 0.5, 8 / scale), hd = i == 0 ? 0.2 : tu_rand_uniform(rng, 0.5, 6 / scale);
        ow_set(r, i * 4, x1);
        ow_set(r, i * 4 + 1, y1);
        ow_set(r, i * 4 + 2, x1 + wd);
        ow_set(r, i * 4 + 3, y1 + hd);
        ow_set(b, i, (double)(i % 2));
    }
    DLTensor *ins[3] = {x, r, b};
    const DLTensor *y = ow_run(e, 3, ins, 0);
    bool half = mode ? strcmp(mode, "half_pixel") == 0 : opset >= 16;
    double off = half ? 0.5 : 0;
    for (int64_t i = 0; i < R; i++)
        for (int64_t c = 0; c < 3; c++)
            for (int64_t ph = 0; ph < oh; ph++)
                for (int64_t pw = 0; pw < ow; pw++) {
                    double x1 = (float)ow_get(r, i * 4) * (float)scale - off, y1 = (float)ow_get(r, i * 4 + 1) * (float)scale - off;
                    double x2 = (float)ow_get(r, i * 4 + 2) * (float)scale - off, y2 = (float)ow_get(r, i * 4 + 3) * (float)scale - off;
                    double rw = x2 - x1, rh = y2 - y1;
                    if (!half) {
                        rw = fmax(rw, 1);
                        rh = fmax(rh, 1);
                    }
                    double bh = rh / (double)oh, bw = rw / (double)ow, sum = 0;
                    for (int64_t iy = 0; iy < sr; iy++)
                        for (int64_t ix = 0; ix < sr; ix++)
                            sum += bilinear(x, (int64_t)ow_get(b, i), c, y1 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)sr,
                                            x1 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)sr);
                    double want = sum / (double)(sr * sr);
                    int64_t o = ((i * 3 + c) * oh + ph) * ow + pw;
                    if (!(fabs(ow_get(y, o) - want) <= 1e-5 * (1 + fabs(want))))
                        fail_msg("RoiAlign %s roi %lld (%lld, %lld, %lld): got %.9g, expected %.9g", mode ? mode : "(default)",
                                 (long long)i, (long long)c, (long long)ph, (long long)pw, ow_get(y, o), want);
                }
    rt_tensor_free(x);
    rt_tensor_free(r);
    rt_tensor_free(b);
    ow_finish(w, e, m);
}

static void test_roialign(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    roi_case(&rng, 16, "half_pixel", 1.0, 2, 3, 4);
    roi_case(&rng, 16, "output_half_pixel", 0.5, 1, 2, 2);
    roi_case(&rng, 16, NULL, 0.25, 3, 4, 3);
    roi_case(&rng, 10, NULL, 1.0, 2, 2, 3);
}

#define RX OW_IN("x", GR_FLOAT, 4, 1, 2, 5, 5)
#define RR OW_IN("r", GR_FLOAT, 2, 3, 4)
#define RB OW_IN("b", GR_INT64, 1, 3)
static const ow_error_case errors[] = {
    {{16, "RoiAlign", "x,r,b", {RX, RR, RB}, {OW_AI("sampling_ratio", 0)}},
     {"node 'n0' (RoiAlign)", "sampling_ratio 0 (adaptive, from each roi's size at run time) is not supported"}},
    {{16, "RoiAlign", "x,r,b", {RX, RR, RB}, {OW_AI("sampling_ratio", 2), OW_AS("mode", "max")}},
     {"(RoiAlign)", "mode 'max' is not supported (only avg)"}},
    {{16, "RoiAlign", "x,r,b", {RX, OW_IN("r", GR_FLOAT, 2, 3, 5), RB}, {OW_AI("sampling_ratio", 2)}},
     {"(RoiAlign)", "input rois must have shape [R, 4]"}},
    {{16, "RoiAlign", "x,r,b", {RX, RR, OW_IN("b", GR_INT32, 1, 3)}, {OW_AI("sampling_ratio", 2)}},
     {"(RoiAlign)", "input batch_indices must be int64 of shape [3]"}},
    {{10, "RoiAlign", "x,r,b", {RX, RR, RB}, {OW_AI("sampling_ratio", 2), OW_AS("coordinate_transformation_mode", "half_pixel")}},
     {"(RoiAlign)", "attribute 'coordinate_transformation_mode' is not defined before opset 16"}},
    {{16, "RoiAlign", "x,r,b", {RX, RR, RB}, {OW_AI("sampling_ratio", 2), OW_AS("coordinate_transformation_mode", "asym")}},
     {"(RoiAlign)", "attribute 'coordinate_transformation_mode' must be half_pixel or output_half_pixel"}},
    {{16, "RoiAlign", "x,r,b", {OW_IN("x", GR_FLOAT, 3, 1, 2, 5), RR, RB}, {OW_AI("sampling_ratio", 2)}},
     {"(RoiAlign)", "input X has rank 3; RoiAlign takes [N, C, H, W]"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roialign),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
