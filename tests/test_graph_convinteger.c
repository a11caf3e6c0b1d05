/*
 * graph/infer_convinteger.c and the lowering of ConvInteger and
 * QLinearConv (graph/lower_nn.c, Conv's): one-node models run through
 * gr_compile/gr_run on fresh random 8-bit data (outputs poisoned first)
 * against a naive reference: uint8 and int8 operands, zero points per
 * tensor, per output channel and left out, padding (which holds x's zero
 * point and adds nothing), strides, dilations, groups; QLinearConv with
 * per-tensor and per-channel w_scale, with and without B, into uint8 and
 * int8 (some outputs saturate); and every refusal's message.
 *
 * Tolerance: exact (int32 sums; the requantization rounds a float64
 * product to nearest even in both, ties being measure zero here).
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
/* QLinearConv instead when yt is given (zx, zw then 1 or 2; bias: B). */
static DLDataType qy;
static int qbias;

static void ci_case(uint64_t *rng, DLDataType xt, DLDataType wt, int64_t C, int64_t M, int64_t group, int pad, int stride,
                    int dil, int zx, int zw)
{
    bool ql = qy.bits != 0;
    const int64_t xs[4] = {1, C, 6, 7}, ws[4] = {M, C / group, 3, 2};
    int64_t zws = zw == 2 ? M : 1;
    ow_model *w = ow_new(10);
    ow_input(w, "x", ow_elem_type(xt), 4, xs);
    ow_input(w, "w", ow_elem_type(wt), 4, ws);
    if (zx) ow_input(w, "zx", ow_elem_type(xt), 0, NULL);
    if (zw) ow_input(w, "zw", ow_elem_type(wt), 1, &zws);
    if (ql) {
        ow_input(w, "xs", GR_FLOAT, 0, NULL);
        ow_input(w, "ws", GR_FLOAT, 1, &zws);
        ow_input(w, "ys", GR_FLOAT, 0, NULL);
        ow_input(w, "yz", ow_elem_type(qy), 0, NULL);
        if (qbias) ow_input(w, "b", GR_INT32, 1, &M);
    }
    ow_node *n = ql ? ow_node_add(w, "", "QLinearConv", qbias ? "x,xs,zx,w,ws,zw,ys,yz,b" : "x,xs,zx,w,ws,zw,ys,yz", "y")
                    : ow_node_add(w, "", "ConvInteger", zx && zw ? "x,w,zx,zw" : zx ? "x,w,zx" : zw ? "x,w,,zw" : "x,w", "y");
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
    DLTensor *XS = ow_tensor((DLDataType){kDLFloat, 32, 1}, 0, &one), *WS = ow_tensor((DLDataType){kDLFloat, 32, 1}, 1, &zws),
             *YS = ow_tensor((DLDataType){kDLFloat, 32, 1}, 0, &one), *YZ = ow_tensor(ql ? qy : xt, 0, &one),
             *Bt = ow_tensor((DLDataType){kDLInt, 32, 1}, 1, &M);
    ow_set(XS, 0, tu_rand_uniform(rng, 0.01, 0.05));
    for (int64_t i = 0; i < zws; i++) ow_set(WS, i, tu_rand_uniform(rng, 0.01, 0.05));
    ow_set(YS, 0, tu_rand_uniform(rng, 0.02, 0.2));
    fill8(rng, YZ);
    for (int64_t i = 0; i < M; i++) ow_set(Bt, i, floor(tu_rand_uniform(rng, -5000, 5000)));
    DLTensor *ins[9];
    int ni = 0;
    /* in the graph inputs' order */
    ins[ni++] = X;
    ins[ni++] = W;
    if (zx) ins[ni++] = ZX;
    if (zw) ins[ni++] = ZW;
    if (ql) {
        ins[ni++] = XS;
        ins[ni++] = WS;
        ins[ni++] = YS;
        ins[ni++] = YZ;
        if (qbias) ins[ni++] = Bt;
    }
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
                if (ql) {
                    if (qbias) s += ow_get(Bt, mo);
                    s = nearbyint(s * (ow_get(XS, 0) * ow_get(WS, zws > 1 ? mo : 0) / ow_get(YS, 0))) + ow_get(YZ, 0);
                    s = qy.code == kDLUInt ? fmin(fmax(s, 0), 255) : fmin(fmax(s, -128), 127);
                }
                int64_t o = (mo * oh + oy) * ow_ + ox;
                if (ow_get(y, o) != s)
                    fail_msg("ConvInteger output %lld: got %g, expected %g", (long long)o, ow_get(y, o), s);
            }
    DLTensor *all[9] = {X, W, ZX, ZW, XS, WS, YS, YZ, Bt};
    for (int i = 0; i < 9; i++) rt_tensor_free(all[i]);
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

static void test_qlinearconv(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    qy = U8;
    qbias = 1;
    ci_case(&rng, U8, U8, 2, 3, 1, 1, 1, 1, 1, 1);
    qy = I8;
    ci_case(&rng, U8, I8, 4, 4, 2, 0, 2, 1, 1, 2);
    qbias = 0;
    ci_case(&rng, I8, I8, 3, 2, 1, 2, 1, 2, 1, 1);
    qy = (DLDataType){0, 0, 0};
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
    {{10, "QLinearConv", "x,s,z,w,s,z,s", {CX, OW_SCALAR("s", GR_FLOAT, 0.5), OW_SCALAR("z", GR_UINT8, 1), CW}, {{0}}},
     {"(QLinearConv)", "input 7 (y_zero_point) is missing"}},
    {{10, "QLinearConv", "x,,z,w,s,z,s,z", {CX, OW_SCALAR("s", GR_FLOAT, 0.5), OW_SCALAR("z", GR_UINT8, 1), CW}, {{0}}},
     {"(QLinearConv)", "input 'x_scale' is missing"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
    /* a bias of another type than int32 */
    ow_model *w = ow_new(10);
    ow_input(w, "x", GR_UINT8, 4, (int64_t[]){1, 2, 5, 5});
    ow_input(w, "w", GR_UINT8, 4, (int64_t[]){3, 2, 3, 3});
    ow_input(w, "s", GR_FLOAT, 0, NULL);
    ow_input(w, "z", GR_UINT8, 0, NULL);
    ow_input(w, "b", GR_INT64, 1, (int64_t[]){3});
    ow_node_add(w, "", "QLinearConv", "x,s,z,w,s,z,s,z,b", "y");
    ow_output(w, "y");
    ow_expect_error(w, "(QLinearConv)", "input B must be int32 of shape [3]");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_convinteger),
        cmocka_unit_test(test_qlinearconv),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
