/*
 * graph/infer_stft.c and lower_stft.c: STFT as one-node models run
 * through gr_compile/gr_run on fresh random signals and windows (outputs
 * poisoned first) against a naive double reference of the definition:
 * real and complex signals, with a window and with frame_length alone,
 * onesided and full, frame steps that leave samples over; float and
 * double; and every refusal's message.
 *
 * Tolerance: 1e-5 times (1 + the sum of the terms' magnitudes) for
 * float, 1e-12 for double.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, F64 = {kDLFloat, 64, 1};

static void stft_case(uint64_t *rng, DLDataType t, int64_t len, int parts, int64_t step, int64_t flen, bool window,
                      int onesided)
{
    const int64_t xs[3] = {2, len, parts};
    ow_model *w = ow_new(17);
    ow_input(w, "x", ow_elem_type(t), 3, xs);
    ow_init(w, "st", GR_INT64, 0, NULL, &step, 8);
    if (window) ow_input(w, "w", ow_elem_type(t), 1, &flen);
    else ow_init(w, "fl", GR_INT64, 0, NULL, &flen, 8);
    ow_node *n = ow_node_add(w, "", "STFT", window ? "x,st,w" : "x,st,,fl", "y");
    if (onesided >= 0) ow_attr_int(n, "onesided", onesided);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, 3, xs), *win = ow_tensor(t, 1, &flen);
    for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, tu_rand_uniform(rng, -1, 1));
    for (int64_t i = 0; i < flen; i++) ow_set(win, i, tu_rand_uniform(rng, 0, 1));
    DLTensor *ins[2] = {x, win};
    const DLTensor *y = ow_run(e, window ? 2 : 1, ins, 0);
    int64_t frames = (len - flen) / step + 1, bins = onesided != 0 ? flen / 2 + 1 : flen;
    assert_int_equal(ow_numel(y), 2 * frames * bins * 2);
    for (int64_t b = 0; b < 2; b++)
        for (int64_t f = 0; f < frames; f++)
            for (int64_t k = 0; k < bins; k++) {
                double re = 0, im = 0, mag = 0;
                for (int64_t j = 0; j < flen; j++) {
                    int64_t at = (b * len + f * step + j) * parts;
                    double wv = window ? ow_get(win, j) : 1;
                    double xr = ow_get(x, at) * wv, xi = parts == 2 ? ow_get(x, at + 1) * wv : 0;
                    double th = 2 * M_PI * (double)((j * k) % flen) / (double)flen;
                    re += xr * cos(th) + xi * sin(th);
                    im += xi * cos(th) - xr * sin(th);
                    mag += fabs(xr) + fabs(xi);
                }
                int64_t o = ((b * frames + f) * bins + k) * 2;
                double tol = (t.bits == 32 ? 1e-5 : 1e-12) * (1 + mag);
                if (!(fabs(ow_get(y, o) - re) <= tol && fabs(ow_get(y, o + 1) - im) <= tol))
                    fail_msg("STFT (%lld, %lld, %lld): got (%.9g, %.9g), expected (%.9g, %.9g)", (long long)b, (long long)f,
                             (long long)k, ow_get(y, o), ow_get(y, o + 1), re, im);
            }
    rt_tensor_free(x);
    rt_tensor_free(win);
    ow_finish(w, e, m);
}

static void test_stft(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    stft_case(&rng, F32, 32, 1, 8, 16, true, -1);
    stft_case(&rng, F32, 30, 2, 7, 9, false, 0);
    stft_case(&rng, F32, 25, 1, 4, 10, false, 1);
    stft_case(&rng, F64, 20, 2, 3, 8, true, 0);
}

#define SX OW_IN("x", GR_FLOAT, 3, 1, 16, 1)
static const ow_error_case errors[] = {
    {{17, "STFT", "x,s", {SX, OW_SCALAR("s", GR_INT64, 4)}, {{0}}},
     {"node 'n0' (STFT)", "a window or a frame_length is required"}},
    {{17, "STFT", "x,s,,l", {SX, OW_SCALAR("s", GR_INT64, 0), OW_SCALAR("l", GR_INT64, 4)}, {{0}}},
     {"(STFT)", "input 'frame_step' must be one value >= 1"}},
    {{17, "STFT", "x,s,,l", {SX, OW_SCALAR("s", GR_INT64, 2), OW_SCALAR("l", GR_INT64, 20)}, {{0}}},
     {"(STFT)", "frames of 20 samples do not fit the signal's 16"}},
    {{17, "STFT", "x,s,w,l", {SX, OW_SCALAR("s", GR_INT64, 2), OW_IN("w", GR_FLOAT, 1, 5), OW_SCALAR("l", GR_INT64, 4)}, {{0}}},
     {"(STFT)", "input window has 5 values; frame_length is 4"}},
    {{17, "STFT", "x,s,,l", {OW_IN("x", GR_FLOAT, 2, 1, 16), OW_SCALAR("s", GR_INT64, 2), OW_SCALAR("l", GR_INT64, 4)}, {{0}}},
     {"(STFT)", "input signal must have shape [batch, length, 1 or 2]"}},
    {{17, "STFT", "x,s,,l", {SX, OW_IN("s", GR_INT64, 0, 0), OW_SCALAR("l", GR_INT64, 4)}, {{0}}},
     {"(STFT)", "input 'frame_step' ('s') must be a constant"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stft),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
