/*
 * graph/infer_gridsample.c and lower_gridsample.c: GridSample as
 * one-node models run through gr_compile/gr_run on fresh random images
 * and grids reaching past [-1, 1] (outputs poisoned first) against a
 * naive double reference of PyTorch's grid_sample, which ONNX's opset 16
 * follows: every mode (bilinear, nearest, bicubic) with every padding
 * (zeros, border, reflection) and align_corners 0 and 1, float and
 * double, a grid of another float type than X; and every refusal's
 * message.
 *
 * Tolerance: 1e-5 (1 + |expected|) for float (one rounding of a float64
 * sum), 1e-12 for double.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, F64 = {kDLFloat, 64, 1};
static const char *const modes[] = {"bilinear", "nearest", "bicubic"};
static const char *const pads[] = {"zeros", "border", "reflection"};

static double unnorm(double g, int64_t size, int align)
{
    return align ? (g + 1) / 2 * (double)(size - 1) : ((g + 1) * (double)size - 1) / 2;
}

/* Reflection into [lo, hi] by repeated mirroring, one step at a time. */
static double mirror(double x, double lo, double hi)
{
    if (lo == hi) return 0;
    while (x < lo || x > hi) x = x < lo ? 2 * lo - x : 2 * hi - x;
    return x;
}

static double bring_inside(double x, int64_t size, int pad, int align)
{
    double hi = (double)(size - 1);
    if (pad == 1) return fmin(fmax(x, 0), hi);
    if (pad == 2) {
        x = align ? mirror(x, 0, hi) : mirror(x, -0.5, (double)size - 0.5);
        return fmin(fmax(x, 0), hi);
    }
    return x;
}

static double pixel(const DLTensor *x, int64_t n, int64_t c, double py, double px)
{
    int64_t C = x->shape[1], H = x->shape[2], W = x->shape[3];
    if (px < 0 || py < 0 || px > (double)(W - 1) || py > (double)(H - 1)) return 0;
    return ow_get(x, ((n * C + c) * H + (int64_t)py) * W + (int64_t)px);
}

static double keys(double d)
{
    const double a = -0.75;
    d = fabs(d);
    if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
    if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
    return 0;
}

static double sample(const DLTensor *x, int64_t n, int64_t c, double gx, double gy, int mode, int pad, int align)
{
    int64_t H = x->shape[2], W = x->shape[3];
    double ux = unnorm(gx, W, align), uy = unnorm(gy, H, align);
    if (mode == 1)
        return pixel(x, n, c, nearbyint(bring_inside(uy, H, pad, align)), nearbyint(bring_inside(ux, W, pad, align)));
    if (mode == 0) {
        double px = bring_inside(ux, W, pad, align), py = bring_inside(uy, H, pad, align);
        double x0 = floor(px), y0 = floor(py), tx = px - x0, ty = py - y0;
        return pixel(x, n, c, y0, x0) * (1 - tx) * (1 - ty) + pixel(x, n, c, y0, x0 + 1) * tx * (1 - ty) +
               pixel(x, n, c, y0 + 1, x0) * (1 - tx) * ty + pixel(x, n, c, y0 + 1, x0 + 1) * tx * ty;
    }
    double x0 = floor(ux), y0 = floor(uy), sum = 0;
    for (int j = -1; j <= 2; j++)
        for (int i = -1; i <= 2; i++)
            sum += keys(ux - (x0 + i)) * keys(uy - (y0 + j)) *
                   pixel(x, n, c, bring_inside(y0 + j, H, pad, align), bring_inside(x0 + i, W, pad, align));
    return sum;
}

static void gs_case(uint64_t *rng, DLDataType t, DLDataType gt, int mode, int pad, int align)
{
    const int64_t xs[4] = {2, 3, 4, 5}, gs[4] = {2, 3, 6, 2};
    ow_model *w = ow_new(16);
    ow_input(w, "x", ow_elem_type(t), 4, xs);
    ow_input(w, "g", ow_elem_type(gt), 4, gs);
    ow_node *n = ow_node_add(w, "", "GridSample", "x,g", "y");
    ow_attr_str(n, "mode", modes[mode]);
    ow_attr_str(n, "padding_mode", pads[pad]);
    ow_attr_int(n, "align_corners", align);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, 4, xs), *g = ow_tensor(gt, 4, gs);
    for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, tu_rand_uniform(rng, -1, 1));
    for (int64_t i = 0; i < ow_numel(g); i++) ow_set(g, i, tu_rand_uniform(rng, -2.2, 2.2));
    DLTensor *ins[2] = {x, g};
    const DLTensor *y = ow_run(e, 2, ins, 0);
    assert_int_equal(ow_numel(y), 2 * 3 * 3 * 6);
    for (int64_t nn = 0; nn < 2; nn++)
        for (int64_t c = 0; c < 3; c++)
            for (int64_t p = 0; p < 18; p++) {
                double gx = ow_get(g, (nn * 18 + p) * 2), gy = ow_get(g, (nn * 18 + p) * 2 + 1);
                double want = sample(x, nn, c, gx, gy, mode, pad, align);
                double got = ow_get(y, (nn * 3 + c) * 18 + p);
                double tol = (t.bits == 32 ? 1e-5 : 1e-12) * (1 + fabs(want));
                if (!(fabs(got - want) <= tol))
                    fail_msg("GridSample %s %s align %d: output (%lld, %lld, %lld) got %.9g, expected %.9g", modes[mode],
                             pads[pad], align, (long long)nn, (long long)c, (long long)p, got, want);
            }
    rt_tensor_free(x);
    rt_tensor_free(g);
    ow_finish(w, e, m);
}

static void test_gridsample(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    for (int mode = 0; mode < 3; mode++)
        for (int pad = 0; pad < 3; pad++)
            for (int align = 0; align < 2; align++) gs_case(&rng, F32, F32, mode, pad, align);
    gs_case(&rng, F64, F32, 2, 2, 0);
    gs_case(&rng, F32, F64, 0, 2, 1);
}

#define XG OW_IN("x", GR_FLOAT, 4, 1, 2, 3, 4)
#define GG OW_IN("g", GR_FLOAT, 4, 1, 5, 6, 2)
static const ow_error_case errors[] = {
    {{16, "GridSample", "x,g", {XG, GG}, {OW_AS("mode", "linear")}},
     {"node 'n0' (GridSample)", "attribute 'mode' must be bilinear, nearest or bicubic"}},
    {{16, "GridSample", "x,g", {XG, GG}, {OW_AS("padding_mode", "wrap")}},
     {"(GridSample)", "attribute 'padding_mode' must be zeros, border or reflection"}},
    {{16, "GridSample", "x,g", {XG, GG}, {OW_AI("align_corners", 2)}},
     {"(GridSample)", "attribute 'align_corners' must be 0 or 1"}},
    {{16, "GridSample", "x,g", {OW_IN("x", GR_FLOAT, 3, 1, 2, 3), GG}, {{0}}},
     {"(GridSample)", "input X has rank 3; GridSample takes [N, C, H, W]"}},
    {{16, "GridSample", "x,g", {XG, OW_IN("g", GR_FLOAT, 4, 2, 5, 6, 2)}, {{0}}},
     {"(GridSample)", "input grid must have shape [1, Ho, Wo, 2]"}},
    {{16, "GridSample", "x,g", {XG, OW_IN("g", GR_FLOAT, 4, 1, 5, 6, 3)}, {{0}}},
     {"(GridSample)", "input grid must have shape [1, Ho, Wo, 2]"}},
    {{16, "GridSample", "x,g", {OW_IN("x", GR_INT32, 4, 1, 2, 3, 4), GG}, {{0}}},
     {"(GridSample)", "inputs X (int32) and grid (float) must hold floats"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gridsample),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
