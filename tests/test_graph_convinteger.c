/*
 * graph/infer_convinteger.c and ConvInteger's lowering (graph/lower_nn.c,
 * Conv's): one-node models run through gr_compile/gr_run on fresh random
 * 8-bit data (outputs poisoned first) against a naive reference: uint8
 * and int8 operands, zero points per tensor, per output channel and left
 * out, padding (which holds x's zero point and adds nothing), strides,
 * dilations, groups; and every refusal's message.
 *
 * Tolerance: exact (int32 sums).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType U8 = {kDLUInt, 8, 1}, I8 = {kDLInt, 8, 1};

static void fill8(uint64_t *rng, DLTensor *t)
{
    bool u = t->dtype.code == kDLUInt;
    for (int64_t i = 0; i < ow_numel(t); i++) ow_set(t, i, floor(tu_rand_uniform(rng, u ? 0 : -128, u ? 256 : 128)));
}

/* x [1, C, 6, 7], w [M, C/group, 3, 2]; zx/zw: 0 none, 1 per tensor, 2 per channel (w). */
static void ci_case(uint64_t *rng, DLDataType xt, DLDataType wt, int64_t C, int64_t M, int64_t group, int pad, int stride,
                    int dil, int zx, int zw)
{
    const int64_t xs[4] = {1, C, 6, 7}, ws[4] = {M, C / group, 3, 2};
    int64_t zws = zw == 2 ? M : 1;
    ow_model *w = ow_new(10);
    ow_input(w, "x", ow_elem_type(xt), 4, xs);
    ow_input(w, "w", ow_elem_type(wt), 4, ws);
    if (zx) ow_input(w, "zx", ow_elem_type(xt), 0, NULL);
    if (zw) ow_input(w, "zw", ow_elem_type(wt), 1, &zws);
    ow_node *n = ow_node_add(w, "", "ConvInteger", zx && zw ? "x,w,zx,zw" : zx ? "x,w,zx" : zw ? "x,w,,zw" : "x,w", "y");
    ow_attr_int(n, "group", group);
    ow_attr_ints(n, "pads", 4, (int64_t[]){pad, pad, pad, pad});
    ow_attr_ints(n, "strides", 2, (int64_t[]){stride, stride});
    ow_attr_ints(n, "dilations", 2, (int64_t[]){dil, dil});
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    int64_t one = 1;
    DLTensor *X = ow_tensor(xt, 4, xs), *W = ow_tensor(wt, 4, ws), *ZX = ow_tensor(xt, 0, &one), *ZW = ow_tensor(wt, 1, &zws);
    fill8(rng, X);
    fill8(rng, W);
    fill8(rng, ZX);
    fill8(rng, ZW);
    DLTensor *ins[4];
    int ni = 0;
    ins[ni++] = X;
    ins[ni++] = W;
    if (zx) ins[ni++] = ZX;
    if (zw) ins[ni++] = ZW;
    const DLTensor *y = ow_run(e, ni, ins, 0);
    int64_t oh = (6 + 2 * pad - dil * 2 - 1) / stride + 1, ow_ = (7 + 2 * pad - dil * 1 - 1) / stride + 1;
    assert_int_equal(ow_numel(y), M * oh * ow_);
    int64_t Cg = C / group, Mg = M / group;
    for (int64_t mo = 0; mo < M; mo++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow_; ox++) {
                double s = 0;
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t ky = 0; ky < 3; ky++)
                        for (int64_t kx = 0; kx < 2; kx++) {
                            int64_t iy = oy * stride - pad + ky * dil, ix = ox * stride - pad + kx * dil;
                            if (iy < 0 || iy >= 6 || ix < 0 || ix >= 7) continue;
                            int64_t ci = (mo / Mg) * Cg + c;
                            double xv = ow_get(X, (ci * 6 + iy) * 7 + ix) - (zx ? ow_get(ZX, 0) : 0);
                            double wv = ow_get(W, ((mo * Cg + c) * 3 + ky) * 2 + kx) - (zw ? ow_get(ZW, zw == 2 ? mo : 0) : 0);
                            s += xv * wv;
                        }
                int64_t o = (mo * oh + oy) * ow_ + ox;
                if (ow_get(y, o) != s)
                    fail_msg("ConvInteger output %lld: got %g, expected %g", (long long)o, ow_get(y, o), s);
            }
    DLTensor *all[4] = {X, W, ZX, ZW};
    for (int i = 0; i < 4; i++) rt_tensor_free(all[i]);
    ow_finish(w, e, m);
}

static void test_convinteger(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    ci_case(&rng, U8, U8, 2, 3, 1, 0, 1, 1, 1, 1);
    ci_case(&rng, U8, I8, 4, 4, 2, 1, 2, 1, 1, 2);
    ci_case(&rng, I8, I8, 3, 2, 1, 2, 1, 2, 0, 0);
    ci_case(&rng, U8, U8, 2, 2, 1, 1, 1, 1, 0, 2);
}

#define CX OW_IN("x", GR_UINT8, 4, 1, 2, 5, 5)
#define CW OW_IN("w", GR_UINT8, 4, 3, 2, 3, 3)
static const ow_error_case errors[] = {
    {{10, "ConvInteger", "x,w", {OW_IN("x", GR_FLOAT, 4, 1, 2, 5, 5), CW}, {{0}}},
     {"node 'n0' (ConvInteger)", "inputs x (float) and w (uint8) must be int8 or uint8"}},
    {{10, "ConvInteger", "x,w,z", {CX, CW, OW_VEC("z", GR_UINT8, 2, 1, 2)}, {{0}}},
     {"(ConvInteger)", "input 'x_zero_point' must hold one value"}},
    {{10, "ConvInteger", "x,w,,z", {CX, CW, OW_VEC("z", GR_UINT8, 2, 1, 2)}, {{0}}},
     {"(ConvInteger)", "input 'w_zero_point' must hold one value or one per output channel"}},
    {{10, "ConvInteger", "x,w,z", {CX, CW, OW_SCALAR("z", GR_INT8, 1)}, {{0}}},
     {"(ConvInteger)", "input 'x_zero_point' is int8, not uint8"}},
    {{10, "ConvInteger", "x,w", {CX, OW_IN("w", GR_UINT8, 4, 3, 3, 3, 3)}, {{0}}},
     {"(ConvInteger)", "X has 2 channels, W expects 3 x group 1"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_convinteger),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
