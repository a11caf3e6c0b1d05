/*
 * graph/infer_dft.c and lower_dft.c: DFT as one-node models run through
 * gr_compile/gr_run on fresh random signals (outputs poisoned first)
 * against a naive double reference of the transform's definition: real
 * and complex input, the signal on axis 1, 2 and -2 (negative: counted
 * before the parts' dimension), dft_length shorter (cut) and longer
 * (zero padding) than the signal, onesided, inverse; float and double;
 * and every refusal's message.
 *
 * Tolerance: 1e-5 times the sum of the magnitudes of the terms (float
 * output of a float64 sum); 1e-12 for double.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, F64 = {kDLFloat, 64, 1};

/* x [2, a, b, parts]; axis 1 or 2 (or -2 = 1 given as negative). */
static void dft_case(uint64_t *rng, DLDataType t, int64_t a, int64_t b, int parts, int axis, int64_t len, int onesided,
                     int inverse)
{
    const int64_t xs[4] = {2, a, b, parts};
    int ax = axis < 0 ? axis + 3 : axis;
    int64_t n = xs[ax], L = len ? len : n, nout = onesided ? L / 2 + 1 : L;
    ow_model *w = ow_new(17);
    ow_input(w, "x", ow_elem_type(t), 4, xs);
    if (len) ow_init(w, "l", GR_INT64, 0, NULL, &len, 8);
    ow_node *nd = ow_node_add(w, "", "DFT", len ? "x,l" : "x", "y");
    ow_attr_int(nd, "axis", axis);
    if (onesided) ow_attr_int(nd, "onesided", 1);
    if (inverse) ow_attr_int(nd, "inverse", 1);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, 4, xs);
    for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, tu_rand_uniform(rng, -1, 1));
    const DLTensor *y = ow_run(e, 1, &x, 0);
    int64_t ys[4] = {2, a, b, 2};
    ys[ax] = nout;
    assert_int_equal(ow_numel(y), 2 * ys[1] * ys[2] * 2);
    for (int64_t p = 0; p < 2; p++)
        for (int64_t u = 0; u < ys[1]; u++)
            for (int64_t v = 0; v < ys[2]; v++) {
                int64_t k = ax == 1 ? u : v;
                double re = 0, im = 0, mag = 0;
                for (int64_t j = 0; j < n && j < L; j++) {
                    int64_t i1 = ax == 1 ? j : u, i2 = ax == 1 ? v : j;
                    int64_t at = ((p * a + i1) * b + i2) * parts;
                    double xr = ow_get(x, at), xi = parts == 2 ? ow_get(x, at + 1) : 0;
                    double th = 2 * M_PI * (double)((j * k) % L) / (double)L, sg = inverse ? 1 : -1;
                    re += xr * cos(th) - sg * xi * sin(th);
                    im += xi * cos(th) + sg * xr * sin(th);
                    mag += fabs(xr) + fabs(xi);
                }
                if (inverse) {
                    re /= (double)L;
                    im /= (double)L;
                    mag /= (double)L;
                }
                int64_t o = ((p * ys[1] + u) * ys[2] + v) * 2;
                double tol = (t.bits == 32 ? 1e-5 : 1e-12) * (mag + 1);
                if (!(fabs(ow_get(y, o) - re) <= tol && fabs(ow_get(y, o + 1) - im) <= tol))
                    fail_msg("DFT axis %d L %lld%s%s output (%lld, %lld, %lld): got (%.9g, %.9g), expected (%.9g, %.9g)", axis,
                             (long long)L, onesided ? " onesided" : "", inverse ? " inverse" : "", (long long)p,
                             (long long)u, (long long)v, ow_get(y, o), ow_get(y, o + 1), re, im);
            }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_dft(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    dft_case(&rng, F32, 8, 3, 1, 1, 0, 0, 0);
    dft_case(&rng, F32, 3, 10, 2, 2, 0, 0, 0);
    dft_case(&rng, F32, 7, 2, 2, -2, 0, 0, 1);
    dft_case(&rng, F32, 9, 2, 1, 1, 0, 1, 0);
    dft_case(&rng, F32, 6, 2, 2, 1, 4, 0, 0);
    dft_case(&rng, F32, 6, 2, 1, 1, 11, 1, 0);
    dft_case(&rng, F64, 5, 4, 2, 2, 7, 0, 1);
}

#define XD OW_IN("x", GR_FLOAT, 3, 2, 8, 1)
static const ow_error_case errors[] = {
    {{17, "DFT", "x", {XD}, {OW_AI("axis", 2)}},
     {"node 'n0' (DFT)", "attribute 'axis' 2 is out of range: the signal axes are 0 to 1"}},
    {{17, "DFT", "x", {OW_IN("x", GR_FLOAT, 3, 2, 8, 3)}, {{0}}},
     {"(DFT)", "input must have rank >= 2 and a last dimension of 1 (real) or 2 (complex)"}},
    {{17, "DFT", "x", {OW_IN("x", GR_INT32, 3, 2, 8, 1)}, {{0}}}, {"(DFT)", "input is int32; DFT takes floats"}},
    {{17, "DFT", "x,l", {XD, OW_SCALAR("l", GR_INT64, 0)}, {{0}}},
     {"(DFT)", "input 'dft_length' must be one value >= 1"}},
    {{17, "DFT", "x,l", {XD, OW_IN("l", GR_INT64, 0, 0)}, {{0}}}, {"(DFT)", "input 'dft_length' ('l') must be a constant"}},
    {{17, "DFT", "x", {XD}, {OW_AI("inverse", 1), OW_AI("onesided", 1)}},
     {"(DFT)", "an inverse onesided DFT is not supported"}},
    {{17, "DFT", "x", {XD}, {OW_AI("inverse", 2)}}, {"(DFT)", "attributes 'inverse' and 'onesided' must be 0 or 1"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dft),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
