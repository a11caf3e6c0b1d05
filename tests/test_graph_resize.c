/*
 * graph/lower_resize.c and infer_resize.c: Resize as one-node models run
 * through gr_compile/gr_run on fresh random data (outputs poisoned first)
 * against a naive double reference written as ONNX's reference states
 * it: one dimension at a time, each output coordinate mapped to the
 * input, its neighbours the n input positions closest to it (ties to the
 * lower one) in the input padded by its edge elements, weighed by the
 * mode's coefficients. Cases: nearest with each nearest_mode, linear and
 * cubic (cubic_coeff_a, exclude_outside), every coordinate mode, scales
 * and sizes, up and down, tf_crop_and_resize with its extrapolation
 * value, opset 18's axes, double and int32 data; and every refusal's
 * message.
 *
 * Tolerance: the lowering computes in double and rounds once to the
 * output type: float32 within 1e-6 relative + 1e-6 absolute of the
 * double reference of the same float32 inputs, float64 within 1e-12,
 * nearest (a copy) and int32 exactly.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, F64 = {kDLFloat, 64, 1}, I32 = {kDLInt, 32, 1};

typedef struct {
    const char *mode, *coord, *nearest; /* NULL: the default */
    double cubic_a;                     /* 0: the default */
    int exclude_outside;
    double extrapolation;
    int nscales;                        /* scales given (else sizes) */
    double scales[4];
    int64_t sizes[4];
    int nroi;
    double roi[8];
    int naxes; /* opset 18's axes */
    int64_t axes[4];
} rcase;

typedef struct {
    int mode;  /* 0 nearest, 1 linear, 2 cubic */
    int coord; /* as gr_resize_coord */
    int nearest;
    double a, extrap;
    int exclude;
} rparams;

static int pick(const char *s, const char *const *names, int n)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return 0;
}

/* The reference's 1-D interpolation of data[0..in) at output index x. */
static double interp_1d(const double *data, int64_t in, double scale, int64_t x, int64_t outlen,
                        double roi0, double roi1, const rparams *p)
{
    double outw = scale * (double)in, xo = 0;
    switch (p->coord) {
    case 0: xo = ((double)x + 0.5) / scale - 0.5; break;
    case 1: xo = outlen == 1 ? -0.5 : ((double)x + 0.5) / scale - 0.5; break;
    case 2: xo = outw == 1 ? 0 : (double)x * (double)(in - 1) / (outw - 1); break;
    case 3: xo = (double)x / scale; break;
    case 4: xo = ((double)x + 0.5) / scale; break;
    case 5:
        xo = outlen == 1 ? 0.5 * (roi0 + roi1) * (double)(in - 1)
                         : roi0 * (double)(in - 1) + (double)x * (roi1 - roi0) * (double)(in - 1) / (double)(outlen - 1);
        if (xo < 0 || xo > (double)(in - 1)) return p->extrap;
        break;
    }
    double ratio = xo == floor(xo) ? 1 : xo - floor(xo);
    double co[4];
    int n;
    if (p->mode == 0) {
        n = 2;
        bool hi = ratio == 1 ? true
                  : p->nearest == 0 ? ratio > 0.5
                  : p->nearest == 1 ? ratio >= 0.5
                  : p->nearest == 3;
        co[0] = hi ? 0 : 1;
        co[1] = hi ? 1 : 0;
    } else if (p->mode == 1) {
        n = 2;
        co[0] = 1 - ratio;
        co[1] = ratio;
    } else {
        n = 4;
        double A = p->a, r = ratio, s = 1 - ratio;
        co[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
        co[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
        co[2] = ((A + 2) * s - (A + 3)) * s * s + 1;
        co[3] = ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A;
    }
    /* the n positions of the padded input closest to xo, lower first on ties */
    int64_t pad = (n + 1) / 2, lo = -pad, hi = in - 1 + pad, idx[4];
    bool used[64] = {false};
    for (int t = 0; t < n; t++) {
        int64_t best = -1000;
        for (int64_t q = lo; q <= hi; q++) {
            if (used[q - lo]) continue;
            if (best == -1000 || fabs(xo - (double)q) < fabs(xo - (double)best)) best = q;
        }
        used[best - lo] = true;
        idx[t] = best;
    }
    for (int a = 0; a < n; a++) /* sorted */
        for (int b = a + 1; b < n; b++)
            if (idx[b] < idx[a]) {
                int64_t tmp = idx[a];
                idx[a] = idx[b];
                idx[b] = tmp;
            }
    if (p->exclude) {
        double sum = 0;
        for (int t = 0; t < n; t++) {
            if (idx[t] < 0 || idx[t] >= in) co[t] = 0;
            sum += co[t];
        }
        for (int t = 0; t < n; t++) co[t] /= sum;
    }
    double v = 0;
    for (int t = 0; t < n; t++) {
        int64_t q = idx[t] < 0 ? 0 : idx[t] >= in ? in - 1 : idx[t];
        v += co[t] * data[q];
    }
    return v;
}

/* Dimension `dim` onwards of x (extents in, strides st) at output index o. */
static double interp_nd(const double *x, int nd, int dim, const int64_t *in, const int64_t *st,
                        const int64_t *out, const double *scale, const int64_t *o, const double *roi,
                        const rparams *p)
{
    if (dim == nd) return x[0];
    double line[64];
    for (int64_t i = 0; i < in[dim]; i++)
        line[i] = interp_nd(x + i * st[dim], nd, dim + 1, in, st, out, scale, o, roi, p);
    return interp_1d(line, in[dim], scale[dim], o[dim], out[dim], roi[dim], roi[nd + dim], p);
}

static void run_case(uint64_t *rng, DLDataType t, int nd, const int64_t *xs, const rcase *rc)
{
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                         "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    rparams p = {pick(rc->mode, modes, 3), pick(rc->coord, coords, 6), pick(rc->nearest, nearests, 4),
                 rc->cubic_a ? (double)(float)rc->cubic_a : -0.75, (double)(float)rc->extrapolation, rc->exclude_outside};
    ow_model *w = ow_new(rc->naxes ? 18 : 13);
    ow_input(w, "x", ow_elem_type(t), nd, xs);
    int na = rc->naxes ? rc->naxes : nd;
    int64_t axes[4];
    for (int i = 0; i < na; i++) axes[i] = !rc->naxes ? i : rc->axes[i] < 0 ? rc->axes[i] + nd : rc->axes[i];
    if (rc->nroi) {
        float r[8];
        for (int i = 0; i < rc->nroi; i++) r[i] = (float)rc->roi[i];
        ow_init(w, "roi", GR_FLOAT, 1, (int64_t[]){rc->nroi}, r, 4 * (size_t)rc->nroi);
    }
    if (rc->nscales) {
        float s[4];
        for (int i = 0; i < na; i++) s[i] = (float)rc->scales[i];
        ow_init(w, "scales", GR_FLOAT, 1, (int64_t[]){na}, s, 4 * (size_t)na);
    } else {
        ow_init(w, "sizes", GR_INT64, 1, (int64_t[]){na}, rc->sizes, 8 * (size_t)na);
    }
    char ins[64];
    snprintf(ins, sizeof ins, "x,%s,%s%s", rc->nroi ? "roi" : "", rc->nscales ? "scales" : "",
             rc->nscales ? "" : ",sizes");
    ow_node *n = ow_node_add(w, "", "Resize", ins, "y");
    if (rc->mode) ow_attr_str(n, "mode", rc->mode);
    if (rc->coord) ow_attr_str(n, "coordinate_transformation_mode", rc->coord);
    if (rc->nearest) ow_attr_str(n, "nearest_mode", rc->nearest);
    if (rc->cubic_a) ow_attr_float(n, "cubic_coeff_a", (float)rc->cubic_a);
    if (rc->exclude_outside) ow_attr_int(n, "exclude_outside", 1);
    if (rc->extrapolation) ow_attr_float(n, "extrapolation_value", (float)rc->extrapolation);
    if (rc->naxes) ow_attr_ints(n, "axes", rc->naxes, rc->axes);
    ow_output(w, "y");
    /* the reference's geometry, every dimension */
    int64_t out[4], st[4];
    double scale[4], roi[8];
    for (int d = 0; d < nd; d++) {
        out[d] = xs[d];
        scale[d] = 1;
        roi[d] = 0;
        roi[nd + d] = 1;
    }
    for (int i = 0; i < na; i++) {
        int d = (int)axes[i];
        if (rc->nscales) {
            scale[d] = (double)(float)rc->scales[i];
            out[d] = (int64_t)floor((double)xs[d] * scale[d]);
        } else {
            out[d] = rc->sizes[i];
            scale[d] = (double)out[d] / (double)xs[d];
        }
        if (rc->nroi) {
            roi[d] = (double)(float)rc->roi[i];
            roi[nd + d] = (double)(float)rc->roi[na + i];
        }
    }
    st[nd - 1] = 1;
    for (int d = nd - 2; d >= 0; d--) st[d] = st[d + 1] * xs[d + 1];
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, nd, xs);
    int64_t nx = ow_numel(x);
    double *xd = malloc((size_t)nx * sizeof *xd);
    for (int64_t i = 0; i < nx; i++) {
        ow_set(x, i, t.code == kDLInt ? floor(tu_rand_uniform(rng, -100, 100)) : tu_rand_uniform(rng, -3, 3));
        xd[i] = ow_get(x, i);
    }
    const DLTensor *y = ow_run(e, 1, &x, 0);
    int64_t ny = 1;
    for (int d = 0; d < nd; d++) ny *= out[d];
    assert_int_equal(ow_numel(y), ny);
    for (int64_t i = 0; i < ny; i++) {
        int64_t o[4], rem = i;
        for (int d = nd - 1; d >= 0; d--) {
            o[d] = rem % out[d];
            rem /= out[d];
        }
        double want = interp_nd(xd, nd, 0, xs, st, out, scale, o, roi, &p);
        double tol = p.mode == 0 || t.code == kDLInt ? 0
                     : t.bits == 32                  ? 1e-6 + 1e-6 * fabs(want)
                                                     : 1e-12 * (1 + fabs(want));
        if (!(fabs(ow_get(y, i) - want) <= tol))
            fail_msg("Resize %s/%s element %lld: got %.9g, expected %.9g (tol %g)", modes[p.mode], coords[p.coord],
                     (long long)i, ow_get(y, i), want, tol);
    }
    free(xd);
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static const int64_t X4[4] = {1, 2, 4, 5}, X3[3] = {2, 3, 6};

static void test_nearest(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const char *const nm[] = {NULL, "round_prefer_ceil", "floor", "ceil"};
    static const char *const cm[] = {NULL, "asymmetric", "align_corners", "tf_half_pixel_for_nn",
                                     "pytorch_half_pixel"};
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 5; b++) {
            run_case(&rng, F32, 4, X4, &(rcase){.coord = cm[b], .nearest = nm[a], .nscales = 4, .scales = {1, 1, 2, 3}});
            run_case(&rng, F32, 4, X4, &(rcase){.coord = cm[b], .nearest = nm[a], .nscales = 4, .scales = {1, 1, 1.7, 0.6}});
            run_case(&rng, F32, 4, X4, &(rcase){.coord = cm[b], .nearest = nm[a], .sizes = {1, 2, 7, 3}});
        }
    /* an int32 input, resized in every dimension */
    run_case(&rng, I32, 3, X3, &(rcase){.nscales = 3, .scales = {1.5, 0.7, 2.5}});
}

static void test_linear(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const char *const cm[] = {NULL, "asymmetric", "align_corners", "pytorch_half_pixel",
                                     "tf_half_pixel_for_nn"};
    for (int b = 0; b < 5; b++) {
        run_case(&rng, F32, 4, X4, &(rcase){.mode = "linear", .coord = cm[b], .nscales = 4, .scales = {1, 1, 2, 1.5}});
        run_case(&rng, F32, 4, X4, &(rcase){.mode = "linear", .coord = cm[b], .nscales = 4, .scales = {1, 1, 0.6, 0.6}});
        /* an output extent of 1 (pytorch_half_pixel's special case) */
        run_case(&rng, F32, 4, X4, &(rcase){.mode = "linear", .coord = cm[b], .sizes = {1, 2, 1, 8}});
    }
    run_case(&rng, F64, 3, X3, &(rcase){.mode = "linear", .nscales = 3, .scales = {2, 1.5, 0.5}});
}

static void test_cubic(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const char *const cm[] = {NULL, "asymmetric", "align_corners", "pytorch_half_pixel"};
    for (int b = 0; b < 4; b++)
        for (int ex = 0; ex < 2; ex++) {
            run_case(&rng, F32, 4, X4,
                     &(rcase){.mode = "cubic", .coord = cm[b], .exclude_outside = ex, .nscales = 4, .scales = {1, 1, 2, 1.5}});
            run_case(&rng, F32, 4, X4,
                     &(rcase){.mode = "cubic", .coord = cm[b], .exclude_outside = ex, .cubic_a = -0.5, .sizes = {1, 2, 3, 2}});
        }
    run_case(&rng, F64, 3, X3, &(rcase){.mode = "cubic", .cubic_a = -0.6, .exclude_outside = 1, .nscales = 3, .scales = {1, 2.5, 0.8}});
}

static void test_crop_and_axes(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const char *const mm[] = {"nearest", "linear", "cubic"};
    for (int a = 0; a < 3; a++) {
        /* a window partly outside the input: the extrapolation value there */
        run_case(&rng, F32, 4, X4,
                 &(rcase){.mode = mm[a], .coord = "tf_crop_and_resize", .extrapolation = 7.5, .sizes = {1, 2, 5, 4},
                          .nroi = 8, .roi = {0, 0, -0.2, 0.3, 1, 1, 0.8, 1.4}});
        /* an output extent of 1: the window's middle */
        run_case(&rng, F32, 4, X4,
                 &(rcase){.mode = mm[a], .coord = "tf_crop_and_resize", .sizes = {1, 2, 1, 3},
                          .nroi = 8, .roi = {0, 0, 0.1, 0.2, 1, 1, 0.7, 0.9}});
    }
    /* opset 18: scales, sizes and roi of the listed axes only */
    run_case(&rng, F32, 4, X4, &(rcase){.mode = "linear", .naxes = 2, .axes = {3, -2}, .nscales = 2, .scales = {1.6, 2}});
    run_case(&rng, F32, 4, X4, &(rcase){.mode = "cubic", .naxes = 1, .axes = {2}, .sizes = {9}});
    run_case(&rng, F32, 4, X4,
             &(rcase){.mode = "linear", .coord = "tf_crop_and_resize", .naxes = 2, .axes = {2, 3}, .sizes = {3, 3},
                      .nroi = 4, .roi = {0.2, 0.1, 0.9, 1.2}});
}

/* Resize between two elementwise nodes (x + x, then Relu): the groups
 * fusion forms around it compute what the nodes do one by one. */
static void test_between_nodes(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const char *modes[3] = {"nearest", "linear", "cubic"};
    for (int md = 0; md < 3; md++) {
        ow_model *w = ow_new(13);
        ow_input(w, "x", GR_FLOAT, 4, X4);
        const float sc[4] = {1, 1, 1.5f, 2};
        ow_init(w, "scales", GR_FLOAT, 1, (int64_t[]){4}, sc, sizeof sc);
        ow_node_add(w, "", "Add", "x,x", "d");
        ow_node *n = ow_node_add(w, "", "Resize", "d,,scales", "r");
        ow_attr_str(n, "mode", modes[md]);
        ow_node_add(w, "", "Relu", "r", "y");
        ow_output(w, "y");
        gr_model *m;
        gr_exec *e = ow_compile_ok(w, &m);
        DLTensor *x = ow_tensor(F32, 4, X4);
        double xd[40];
        for (int64_t i = 0; i < 40; i++) {
            ow_set(x, i, tu_rand_uniform(&rng, -3, 3));
            xd[i] = 2 * ow_get(x, i);
        }
        const DLTensor *y = ow_run(e, 1, &x, 0);
        rparams p = {md, 0, 0, -0.75, 0, 0};
        int64_t out[4] = {1, 2, 6, 10}, st[4] = {40, 20, 5, 1}, o[4];
        double scale[4] = {1, 1, 1.5, 2}, roi[8] = {0, 0, 0, 0, 1, 1, 1, 1};
        assert_int_equal(ow_numel(y), 120);
        for (int64_t i = 0; i < 120; i++) {
            int64_t rem = i;
            for (int d = 3; d >= 0; d--) {
                o[d] = rem % out[d];
                rem /= out[d];
            }
            double want = fmax(interp_nd(xd, 4, 0, X4, st, out, scale, o, roi, &p), 0);
            if (!(fabs(ow_get(y, i) - want) <= 1e-6 + 1e-6 * fabs(want)))
                fail_msg("Add, Resize %s, Relu element %lld: got %.9g, expected %.9g", modes[md], (long long)i,
                         ow_get(y, i), want);
        }
        rt_tensor_free(x);
        ow_finish(w, e, m);
    }
}

#define X22 OW_IN("x", GR_FLOAT, 2, 2, 3)
#define SC2 OW_VEC("s", GR_FLOAT, 2, 2, 2)
static const ow_error_case errors[] = {
    {{13, "Resize", "x,,s", {X22, SC2}, {OW_AS("mode", "bilinear")}},
     {"node 'n0' (Resize)", "attribute 'mode' is 'bilinear'; it must be nearest, linear or cubic"}},
    {{13, "Resize", "x,,s", {X22, SC2}, {OW_AI("mode", 1)}}, {"(Resize)", "attribute 'mode' must be a string"}},
    {{13, "Resize", "x,,s", {X22, SC2}, {OW_AS("coordinate_transformation_mode", "corners")}},
     {"(Resize)", "attribute 'coordinate_transformation_mode' is 'corners'; it must be half_pixel, "
                  "pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn or tf_crop_and_resize"}},
    {{13, "Resize", "x,,s", {X22, SC2}, {OW_AS("nearest_mode", "round")}},
     {"(Resize)", "attribute 'nearest_mode' is 'round'; it must be round_prefer_floor, round_prefer_ceil, floor or ceil"}},
    {{13, "Resize", "x,,s", {X22, SC2}, {OW_AI("cubic_coeff_a", 1)}},
     {"(Resize)", "attribute 'cubic_coeff_a' must be a float"}},
    {{13, "Resize", "x,,s", {X22, SC2}, {OW_AS("extrapolation_value", "0")}},
     {"(Resize)", "attribute 'extrapolation_value' must be a float"}},
    {{13, "Resize", "x,,s", {X22, SC2}, {OW_AI("exclude_outside", 2)}},
     {"(Resize)", "attribute 'exclude_outside' must be 0 or 1"}},
    {{13, "Resize", "x,,s", {X22, SC2}, {OW_AI("antialias", 0)}},
     {"(Resize)", "attribute 'antialias' is not defined before opset 18"}},
    {{18, "Resize", "x,,s", {X22, SC2}, {OW_AI("antialias", 1)}},
     {"(Resize)", "attribute 'antialias' other than 0 is not supported"}},
    {{18, "Resize", "x,,s", {X22, SC2}, {OW_AS("keep_aspect_ratio_policy", "not_larger")}},
     {"(Resize)", "attribute 'keep_aspect_ratio_policy' other than 'stretch' is not supported"}},
    {{18, "Resize", "x,,s", {X22, SC2}, {OW_AI("axes", 1)}},
     {"(Resize)", "attribute 'axes' must be a list of at most 2 ints (the rank)"}},
    {{18, "Resize", "x,,s", {X22, SC2}, {OW_AIS("axes", 2, 0, 2)}},
     {"(Resize)", "attribute 'axes' value 2 is out of range for rank 2"}},
    {{18, "Resize", "x,,s", {X22, SC2}, {OW_AIS("axes", 2, 1, -1)}},
     {"(Resize)", "attribute 'axes' repeats axis 1"}},
    {{13, "Resize", "x", {X22}, {{0}}},
     {"(Resize)", "exactly one of the inputs 'scales' and 'sizes' must be given (neither is)"}},
    {{13, "Resize", "x,,s,z", {X22, SC2, OW_VEC("z", GR_INT64, 2, 4, 4)}, {{0}}},
     {"(Resize)", "exactly one of the inputs 'scales' and 'sizes' must be given (both are)"}},
    {{13, "Resize", "x,,s", {X22, OW_VEC("s", GR_FLOAT, 3, 1, 2, 2)}, {{0}}},
     {"(Resize)", "input 'scales' must be a 1-D float tensor of 2 values"}},
    {{13, "Resize", "x,,s", {X22, OW_VEC("s", GR_FLOAT, 2, 1, -2)}, {{0}}},
     {"(Resize)", "input 'scales' value 1 is -2; it must be > 0"}},
    {{13, "Resize", "x,,s", {X22, OW_VEC("s", GR_FLOAT, 2, 0.25, 1)}, {{0}}},
     {"(Resize)", "input 'scales' value 0 (0.25) leaves dimension 0 of extent 2 empty"}},
    {{13, "Resize", "x,r,s", {X22, OW_VEC("r", GR_FLOAT, 4, 0, 0, 1, 1), SC2},
      {OW_AS("coordinate_transformation_mode", "tf_crop_and_resize")}},
     {"(Resize)", "coordinate_transformation_mode 'tf_crop_and_resize' with input 'scales' is not supported (give 'sizes')"}},
    {{13, "Resize", "x,,,z", {X22, OW_VEC("z", GR_INT64, 1, 4)}, {{0}}},
     {"(Resize)", "input 'sizes' must be a 1-D int64 tensor of 2 values"}},
    {{13, "Resize", "x,,,z", {X22, OW_VEC("z", GR_INT64, 2, 4, 0)}, {{0}}},
     {"(Resize)", "input 'sizes' value 1 is 0; it must be >= 1"}},
    {{13, "Resize", "x,,,z", {X22, OW_VEC("z", GR_INT64, 2, 4, 4)},
      {OW_AS("coordinate_transformation_mode", "tf_crop_and_resize")}},
     {"(Resize)", "coordinate_transformation_mode 'tf_crop_and_resize' needs input 'roi'"}},
    {{13, "Resize", "x,r,,z", {X22, OW_VEC("r", GR_FLOAT, 2, 0, 1), OW_VEC("z", GR_INT64, 2, 4, 4)},
      {OW_AS("coordinate_transformation_mode", "tf_crop_and_resize")}},
     {"(Resize)", "input 'roi' must be a 1-D float tensor of 4 values (starts, ends)"}},
    {{13, "Resize", "x,,s", {OW_IN("x", GR_FLOAT, 0, 0), OW_VEC("s", GR_FLOAT, 1, 2)}, {{0}}},
     {"(Resize)", "input X is a scalar; Resize needs rank >= 1"}},
    {{13, "Resize", "x,,s", {OW_IN("x", GR_INT32, 2, 2, 3), SC2}, {OW_AS("mode", "linear")}},
     {"(Resize)", "input X is int32; mode 'linear' is defined for float and double only"}},
    {{13, "Resize", "x,,s", {X22, OW_IN("s", GR_FLOAT, 1, 2)}, {{0}}},
     {"(Resize)", "input 'scales' ('s') must be a constant"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nearest),
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_cubic),
        cmocka_unit_test(test_crop_and_axes),
        cmocka_unit_test(test_between_nodes),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
