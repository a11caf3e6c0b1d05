/*
 * graph/lower_quant.c and infer_quant.c: QuantizeLinear and
 * DequantizeLinear as one-node models run through gr_compile/gr_run on
 * fresh random data (outputs poisoned first) against a naive reference of
 * ONNX's definition in float32 (as ONNX's reference computes): values
 * saturating at both ends of uint8 and int8, ties of the rounding (to
 * even), no zero point, int32 inputs, per-axis scales and zero points on
 * the middle and the last axis; DynamicQuantizeLinear on data of both
 * signs and of one sign (its range then ends at 0); and every refusal's
 * message.
 *
 * Tolerance: exact (quantized values are integers; a dequantized value is
 * one float32 subtraction of integers and one product, computed the same
 * way).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, I8 = {kDLInt, 8, 1}, U8 = {kDLUInt, 8, 1},
                        I32 = {kDLInt, 32, 1};

/* x [2,3,4] (type xt) through the operator with a scale (and a zero
 * point of type zt unless `nozp`) per tensor (axis 99) or per axis. */
static void run_case(uint64_t *rng, bool quantize, DLDataType xt, DLDataType zt, bool nozp, int opset,
                     int axis)
{
    int64_t xs[3] = {2, 3, 4};
    int ax = axis < 0 ? axis + 3 : axis;
    int64_t ns = axis == 99 ? 1 : xs[ax];
    bool per_axis = axis != 99;
    ow_model *w = ow_new(opset);
    ow_input(w, "x", ow_elem_type(xt), 3, xs);
    ow_input(w, "s", GR_FLOAT, per_axis ? 1 : 0, &ns);
    if (!nozp) ow_input(w, "z", ow_elem_type(zt), per_axis ? 1 : 0, &ns);
    ow_node *n = ow_node_add(w, "", quantize ? "QuantizeLinear" : "DequantizeLinear", nozp ? "x,s" : "x,s,z", "y");
    if (per_axis && axis != 1) ow_attr_int(n, "axis", axis);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(xt, 3, xs), *s = ow_tensor(F32, per_axis ? 1 : 0, &ns), *z = ow_tensor(zt, per_axis ? 1 : 0, &ns);
    double zlo = zt.code == kDLUInt ? 0 : -128, zhi = zt.code == kDLUInt ? 256 : 128;
    for (int64_t i = 0; i < ns; i++) {
        /* scales that are powers of two make ties exact: x / s = k + 0.5 */
        ow_set(s, i, quantize && i % 2 ? ldexp(1, -(int)i) : tu_rand_uniform(rng, 0.01, 0.5));
        ow_set(z, i, floor(tu_rand_uniform(rng, zlo, zhi)));
    }
    for (int64_t i = 0; i < 24; i++) {
        double v;
        if (!quantize) v = floor(tu_rand_uniform(rng, xt.bits == 8 ? zlo : -1000, xt.bits == 8 ? zhi : 1000));
        else if (xt.code == kDLInt) v = floor(tu_rand_uniform(rng, -300, 300));
        else if (i % 3 == 0) v = (floor(tu_rand_uniform(rng, -20, 20)) + 0.5) * ow_get(s, per_axis ? (i / (ax == 1 ? 4 : 1)) % ns : 0);
        else v = tu_rand_uniform(rng, -200, 200);
        ow_set(x, i, v);
    }
    if (!quantize && xt.code == kDLInt && xt.bits == 32)
        for (int64_t i = 0; i < ns; i++) ow_set(z, i, 0);
    DLTensor *ins[3] = {x, s, z};
    const DLTensor *y = ow_run(e, nozp ? 2 : 3, ins, 0);
    DLDataType yt = quantize ? (nozp ? U8 : zt) : F32;
    assert_int_equal(y->dtype.code, yt.code);
    assert_int_equal(y->dtype.bits, yt.bits);
    for (int64_t i = 0; i < 24; i++) {
        int64_t c[3] = {i / 12, (i / 4) % 3, i % 4}, k = per_axis ? c[ax] : 0;
        float sv = (float)ow_get(s, k), zv = nozp ? 0.0f : (float)ow_get(z, k), xv = (float)ow_get(x, i);
        double want;
        if (quantize) {
            double lo = yt.code == kDLUInt ? 0 : -128, hi = yt.code == kDLUInt ? 255 : 127;
            want = fmin(fmax((double)(nearbyintf(xv / sv) + zv), lo), hi);
        } else {
            want = (double)((xv - zv) * sv);
        }
        if (ow_get(y, i) != want)
            fail_msg("%s element %lld (x %.9g, scale %.9g, zero point %g): got %.9g, expected %.9g",
                     quantize ? "QuantizeLinear" : "DequantizeLinear", (long long)i, (double)xv, (double)sv,
                     (double)zv, ow_get(y, i), want);
    }
    rt_tensor_free(x);
    rt_tensor_free(s);
    rt_tensor_free(z);
    ow_finish(w, e, m);
}

static void test_quantize(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    run_case(&rng, true, F32, U8, false, 10, 99);
    run_case(&rng, true, F32, I8, false, 13, 99);
    run_case(&rng, true, F32, U8, true, 13, 99);
    run_case(&rng, true, F32, U8, false, 13, 1);
    run_case(&rng, true, F32, I8, false, 13, -1);
    run_case(&rng, true, I32, I8, false, 13, 99);
}

static void test_dequantize(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    run_case(&rng, false, U8, U8, false, 10, 99);
    run_case(&rng, false, I8, I8, false, 13, 1);
    run_case(&rng, false, I8, I8, true, 13, 2);
    run_case(&rng, false, I32, I32, false, 13, 99);
    run_case(&rng, false, U8, U8, false, 13, -3);
}

/* DynamicQuantizeLinear on x of `kind` 0 (both signs), 1 (positive: the
 * range starts at 0), 2 (negative: it ends at 0), against the reference
 * in float32 (C float arithmetic, as numpy's float32). */
static void dynamic_case(uint64_t *rng, int kind, int nd, const int64_t *xs)
{
    ow_model *w = ow_new(11);
    ow_input(w, "x", GR_FLOAT, nd, xs);
    ow_node_add(w, "", "DynamicQuantizeLinear", "x", "y,s,z");
    ow_output(w, "y");
    ow_output(w, "s");
    ow_output(w, "z");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(F32, nd, xs);
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < ow_numel(x); i++) {
        float v = (float)tu_rand_uniform(rng, kind == 1 ? 0.5 : -7, kind == 2 ? -0.5 : 11);
        ow_set(x, i, v);
        lo = fminf(lo, v);
        hi = fmaxf(hi, v);
    }
    const DLTensor *y = ow_run(e, 1, &x, 0);
    const DLTensor *s = gr_exec_output(e, 1), *z = gr_exec_output(e, 2);
    float scale = (hi - lo) / 255.0f;
    float zp = fminf(fmaxf(rintf(0.0f - lo / scale), 0), 255);
    assert_true(ow_get(s, 0) == (double)scale);
    assert_true(ow_get(z, 0) == (double)zp);
    for (int64_t i = 0; i < ow_numel(x); i++) {
        float want = fminf(fmaxf(rintf((float)ow_get(x, i) / scale) + zp, 0), 255);
        if (ow_get(y, i) != (double)want)
            fail_msg("DynamicQuantizeLinear element %lld: got %g, expected %g", (long long)i, ow_get(y, i),
                     (double)want);
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_dynamic_quantize(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    dynamic_case(&rng, 0, 3, (int64_t[]){3, 4, 5});
    dynamic_case(&rng, 1, 2, (int64_t[]){7, 9});
    dynamic_case(&rng, 2, 1, (int64_t[]){33});
}

/* ---------------- refusals ---------------- */

#define X(t) OW_IN("x", t, 2, 3, 4)
#define S0 OW_IN("s", GR_FLOAT, 0, 0)

static const ow_error_case errors[] = {
    {{13, "QuantizeLinear", "x,s", {X(GR_DOUBLE), S0}, {{0}}},
     {"node 'n0' (QuantizeLinear)", "input x is double; QuantizeLinear takes float or int32"}},
    {{13, "DequantizeLinear", "x,s", {X(GR_FLOAT), S0}, {{0}}},
     {"(DequantizeLinear)", "input x is float; DequantizeLinear takes int8, uint8 or int32"}},
    {{13, "QuantizeLinear", "x,s", {X(GR_FLOAT), OW_IN("s", GR_DOUBLE, 0, 0)}, {{0}}},
     {"(QuantizeLinear)", "input y_scale is double, not float"}},
    {{13, "QuantizeLinear", "x,s,z", {X(GR_FLOAT), S0, OW_IN("z", GR_INT32, 0, 0)}, {{0}}},
     {"(QuantizeLinear)", "input y_zero_point is int32, not uint8 or int8"}},
    {{13, "DequantizeLinear", "x,s,z", {X(GR_UINT8), S0, OW_IN("z", GR_INT8, 0, 0)}, {{0}}},
     {"(DequantizeLinear)", "inputs x (uint8) and x_zero_point (int8) must have one element type"}},
    {{10, "QuantizeLinear", "x,s", {X(GR_FLOAT), OW_IN("s", GR_FLOAT, 1, 3)}, {{0}}},
     {"(QuantizeLinear)", "input y_scale must be a scalar before opset 13"}},
    {{13, "QuantizeLinear", "x,s", {X(GR_FLOAT), OW_IN("s", GR_FLOAT, 2, 3, 1)}, {{0}}},
     {"(QuantizeLinear)", "input y_scale must be a scalar or 1-D"}},
    {{13, "QuantizeLinear", "x,s", {X(GR_FLOAT), OW_IN("s", GR_FLOAT, 1, 2)}, {{0}}},
     {"(QuantizeLinear)", "input y_scale has 2 values; x's dimension 1 (the axis) has 4"}},
    {{13, "DequantizeLinear", "x,s", {X(GR_INT8), OW_IN("s", GR_FLOAT, 1, 4)}, {OW_AI("axis", 3)}},
     {"(DequantizeLinear)", "attribute 'axis' 3 is out of range for rank 2"}},
    {{13, "QuantizeLinear", "x,s,z", {X(GR_FLOAT), OW_IN("s", GR_FLOAT, 1, 4), OW_IN("z", GR_UINT8, 0, 0)}, {{0}}},
     {"(QuantizeLinear)", "input y_zero_point must have y_scale's shape"}},
    {{11, "DynamicQuantizeLinear", "x", {X(GR_DOUBLE)}, {{0}}},
     {"(DynamicQuantizeLinear)", "input x is double; DynamicQuantizeLinear takes float"}},
    {{9, "QuantizeLinear", "x,s", {X(GR_FLOAT), S0}, {{0}}},
     {"QuantizeLinear (node 'n0', opset 9;", "supported at opsets 10 to 18)"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize),
        cmocka_unit_test(test_dequantize),
        cmocka_unit_test(test_dynamic_quantize),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
