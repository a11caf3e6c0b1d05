/*
 * graph/lower_convt.c and infer_convt.c: ConvTranspose as one-node ONNX
 * models run through gr_compile/gr_run on fresh random data (outputs
 * poisoned first) against a naive double reference written the other way
 * round — every input scattered through every tap onto the output, the
 * definition — with groups, strides, dilations, pads, output_padding,
 * output_shape (longer than the natural output too), auto_pad SAME_UPPER,
 * SAME_LOWER and VALID, 1-D to 3-D, bias or none, float and double; with
 * constant weights, the phase decomposition into convolutions
 * (graph/pass_convt_phases.c) and the cases it leaves alone; and every
 * refusal's message.
 *
 * Tolerance: float32 within 1e-5 relative + 1e-5 absolute of the double
 * reference of the same float32 inputs, plus 2^-23 times the sum of the
 * magnitudes of the products summed (at most a few hundred); float64
 * within 1e-12 of the same.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, F64 = {kDLFloat, 64, 1};

typedef struct {
    int sp;
    int64_t N, C, K, group;      /* K: output channels */
    int64_t in[3], k[3], s[3], d[3], op[3];
    int64_t pads[6];             /* begin..., end... (NOTSET) */
    const char *auto_pad;        /* NULL: NOTSET */
    int64_t os[3];               /* output_shape, 0: none */
    bool bias;
    DLDataType t;
    /* weights and bias initializers (else graph inputs); then whether the
     * phase decomposition (graph/pass_convt_phases.c) must apply */
    bool cw, phases;
} ct_case;

static int64_t floor_half(int64_t a) { return a >= 0 ? a / 2 : -((-a + 1) / 2); }

static void run_case(uint64_t *rng, const ct_case *c)
{
    int sp = c->sp, nd = sp + 2;
    int64_t Kg = c->K / c->group, Cg = c->C / c->group, pb[3], pe[3], out[3];
    bool upper = c->auto_pad && strcmp(c->auto_pad, "SAME_UPPER") == 0;
    bool same = c->auto_pad && strncmp(c->auto_pad, "SAME", 4) == 0;
    bool valid = c->auto_pad && strcmp(c->auto_pad, "VALID") == 0;
    for (int i = 0; i < sp; i++) {
        int64_t natural = c->s[i] * (c->in[i] - 1) + c->op[i] + (c->k[i] - 1) * c->d[i] + 1;
        if (c->os[0] || same) {
            out[i] = c->os[0] ? c->os[i] : c->in[i] * c->s[i];
            int64_t total = natural - out[i];
            pb[i] = upper ? floor_half(total) : total - floor_half(total);
            pe[i] = total - pb[i];
        } else {
            pb[i] = valid ? 0 : c->pads[i];
            pe[i] = valid ? 0 : c->pads[sp + i];
            out[i] = natural - pb[i] - pe[i];
        }
    }
    int64_t xs[5] = {c->N, c->C}, ws[5] = {c->C, Kg}, ys[5] = {c->N, c->K};
    for (int i = 0; i < sp; i++) xs[2 + i] = c->in[i], ws[2 + i] = c->k[i], ys[2 + i] = out[i];
    int et = ow_elem_type(c->t);
    ow_model *w = ow_new(13);
    DLTensor *x = ow_tensor(c->t, nd, xs), *wt = ow_tensor(c->t, nd, ws), *b = ow_tensor(c->t, 1, &c->K);
    for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, tu_rand_uniform(rng, -1, 1));
    for (int64_t i = 0; i < ow_numel(wt); i++) ow_set(wt, i, tu_rand_uniform(rng, -1, 1));
    for (int64_t i = 0; i < c->K; i++) ow_set(b, i, tu_rand_uniform(rng, -1, 1));
    ow_input(w, "x", et, nd, xs);
    if (c->cw) {
        size_t eb = c->t.bits / 8;
        ow_init(w, "w", et, nd, ws, wt->data, (size_t)ow_numel(wt) * eb);
        if (c->bias) ow_init(w, "b", et, 1, &c->K, b->data, (size_t)c->K * eb);
    } else {
        ow_input(w, "w", et, nd, ws);
        if (c->bias) ow_input(w, "b", et, 1, &c->K);
    }
    ow_node *n = ow_node_add(w, "", "ConvTranspose", c->bias ? "x,w,b" : "x,w", "y");
    if (c->group != 1) ow_attr_int(n, "group", c->group);
    ow_attr_ints(n, "strides", sp, c->s);
    ow_attr_ints(n, "dilations", sp, c->d);
    ow_attr_ints(n, "output_padding", sp, c->op);
    if (c->auto_pad) ow_attr_str(n, "auto_pad", c->auto_pad);
    else if (!c->os[0]) ow_attr_ints(n, "pads", 2 * sp, c->pads);
    if (c->os[0]) ow_attr_ints(n, "output_shape", sp, c->os);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    if (c->cw) {
        int convt = 0, d2s = 0;
        for (int i = 0; i < m->graph->n_nodes; i++) {
            convt += strcmp(m->graph->nodes[i].op_type, "ConvTranspose") == 0;
            d2s += strcmp(m->graph->nodes[i].op_type, "DepthToSpace") == 0;
        }
        if (convt != !c->phases || d2s != c->phases)
            fail_msg("ConvTranspose %dd stride %lld: %d ConvTranspose and %d DepthToSpace after the "
                     "passes (phases %s)", sp, (long long)c->s[0], convt, d2s, c->phases ? "yes" : "no");
    }
    DLTensor *ins[3] = {x, wt, b};
    const DLTensor *y = ow_run(e, c->cw ? 1 : c->bias ? 3 : 2, ins, 0);
    int64_t ny = 1, osp = 1, isp = 1, ksp = 1;
    for (int i = 0; i < nd; i++) ny *= ys[i];
    for (int i = 0; i < sp; i++) osp *= out[i], isp *= c->in[i], ksp *= c->k[i];
    assert_int_equal(ow_numel(y), ny);
    for (int i = 0; i < nd; i++) assert_int_equal(y->shape[i], ys[i]);
    /* Scatter every input through every tap. */
    double *want = calloc((size_t)ny, sizeof *want), *mag = calloc((size_t)ny, sizeof *mag);
    for (int64_t a = 0; a < c->N; a++)
        for (int64_t ic = 0; ic < c->C; ic++)
            for (int64_t ii = 0; ii < isp; ii++)
                for (int64_t kk = 0; kk < Kg; kk++)
                    for (int64_t tt = 0; tt < ksp; tt++) {
                        int64_t o = 0, rem_i = ii, rem_t = tt, ic_[3], tc[3];
                        for (int q = sp - 1; q >= 0; q--) {
                            ic_[q] = rem_i % c->in[q], rem_i /= c->in[q];
                            tc[q] = rem_t % c->k[q], rem_t /= c->k[q];
                        }
                        bool inside = true;
                        for (int q = 0; q < sp; q++) {
                            int64_t oq = ic_[q] * c->s[q] - pb[q] + tc[q] * c->d[q];
                            inside &= oq >= 0 && oq < out[q];
                            o = o * out[q] + oq;
                        }
                        if (!inside) continue;
                        int64_t oc = (ic / Cg) * Kg + kk;
                        double p = ow_get(x, (a * c->C + ic) * isp + ii) * ow_get(wt, (ic * Kg + kk) * ksp + tt);
                        want[(a * c->K + oc) * osp + o] += p;
                        mag[(a * c->K + oc) * osp + o] += fabs(p);
                    }
    for (int64_t i = 0; i < ny; i++) {
        if (c->bias) want[i] += ow_get(b, (i / osp) % c->K);
        double tol = c->t.bits == 32 ? 1e-5 + 1e-5 * fabs(want[i]) + 1.2e-7 * mag[i] : 1e-12 * (1 + mag[i]);
        if (!(fabs(ow_get(y, i) - want[i]) <= tol))
            fail_msg("ConvTranspose %dd (group %lld, auto_pad %s) element %lld: got %.9g, expected %.9g", sp,
                     (long long)c->group, c->auto_pad ? c->auto_pad : "NOTSET", (long long)i, ow_get(y, i), want[i]);
    }
    free(want);
    free(mag);
    rt_tensor_free(x);
    rt_tensor_free(wt);
    rt_tensor_free(b);
    ow_finish(w, e, m);
}

static void test_conv_transpose(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const ct_case cases[] = {
        /* plain, stride 1 */
        {2, 1, 3, 2, 1, {4, 5}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0}, NULL, {0}, true, F32, false, false},
        /* strides, pads, output_padding, groups */
        {2, 2, 4, 6, 2, {3, 4}, {3, 2}, {2, 3}, {1, 1}, {1, 2}, {1, 0, 0, 1}, NULL, {0}, true, F32, false, false},
        /* dilations, depthwise-like groups, no bias, double */
        {2, 1, 4, 4, 4, {5, 3}, {2, 3}, {1, 2}, {2, 2}, {0, 1}, {0, 1, 1, 0}, NULL, {0}, false, F64, false, false},
        /* output_shape: the natural one plus one row and column (extended at the end) */
        {2, 1, 2, 3, 1, {3, 3}, {3, 3}, {3, 2}, {1, 1}, {0, 0}, {0}, NULL, {10, 8}, true, F32, false, false},
        {2, 1, 2, 2, 1, {3, 4}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0}, "SAME_UPPER", {0}, false, F32, false, false},
        {2, 1, 2, 2, 1, {3, 4}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0}, "SAME_LOWER", {0}, true, F64, false, false},
        {2, 1, 3, 3, 3, {3, 3}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0}, "VALID", {0}, true, F32, false, false},
        /* 1-D and 3-D */
        {1, 2, 3, 4, 1, {7}, {4}, {3}, {1}, {2}, {2, 1}, NULL, {0}, true, F32, false, false},
        {3, 1, 2, 2, 1, {3, 2, 3}, {2, 2, 3}, {2, 1, 2}, {1, 2, 1}, {1, 0, 0}, {0, 1, 0, 1, 0, 2}, NULL, {0}, true, F32, false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&rng, &cases[i]);
}

/* Constant weights: the phase decomposition where it applies (U-Net's k2
 * s2, a decoder's k3 s2 p1 output_padding 1, a GAN's k4 s2 p1, stride 3
 * with k5, SAME_UPPER, output_shape, channels of whole blocks and not),
 * the gather lowering where it does not (k1 s2: phases without a tap; k3
 * s2 p2: a phase's padding would be negative; unequal strides; groups;
 * dilations), the values the same definition's. */
static void test_conv_transpose_phases(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const ct_case cases[] = {
        {2, 1, 32, 16, 1, {5, 6}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0}, NULL, {0}, true, F32, true, true},
        {2, 1, 16, 8, 1, {5, 4}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, {0}, false, F32,
         true, true},
        {2, 2, 8, 20, 1, {4, 5}, {4, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1, 1, 1}, NULL, {0}, true, F32,
         true, true},
        {2, 1, 5, 3, 1, {3, 4}, {5, 5}, {3, 3}, {1, 1}, {0, 0}, {1, 1, 1, 1}, NULL, {0}, true, F32,
         true, true},
        {2, 1, 4, 6, 1, {3, 5}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0}, "SAME_UPPER", {0}, true, F32,
         true, true},
        {2, 1, 3, 4, 1, {3, 3}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0}, NULL, {6, 6}, true, F32, true, true},
        {2, 1, 3, 4, 1, {3, 3}, {1, 1}, {2, 2}, {1, 1}, {1, 1}, {0}, NULL, {0}, true, F32, true, false},
        {2, 1, 3, 4, 1, {4, 4}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {2, 2, 1, 1}, NULL, {0}, true, F32, true,
         false},
        {2, 1, 3, 4, 1, {4, 4}, {2, 2}, {2, 1}, {1, 1}, {0, 0}, {0}, NULL, {0}, true, F32, true, false},
        {2, 1, 4, 4, 2, {4, 4}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0}, NULL, {0}, true, F32, true, false},
        {2, 1, 3, 4, 1, {4, 4}, {2, 2}, {2, 2}, {2, 2}, {1, 1}, {0}, NULL, {0}, true, F32, true, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&rng, &cases[i]);
}

/* ---------------- refusals ---------------- */

#define XW(xn, ...) OW_IN("x", GR_FLOAT, 4, 1, xn, 5, 5), OW_IN("w", GR_FLOAT, __VA_ARGS__)

static const ow_error_case errors[] = {
    {{13, "ConvTranspose", "x,w", {XW(4, 3, 4, 2, 3)}, {{0}}},
     {"node 'n0' (ConvTranspose)", "input W has rank 3, X has rank 4"}},
    {{13, "ConvTranspose", "x,w", {XW(4, 4, 3, 2, 3, 3)}, {{0}}},
     {"(ConvTranspose)", "X has 4 channels; W [C, K/group, ...] has 3 and group 1 must divide them"}},
    {{13, "ConvTranspose", "x,w", {XW(4, 4, 4, 2, 3, 3)}, {OW_AI("group", 3)}},
     {"(ConvTranspose)", "X has 4 channels; W [C, K/group, ...] has 4 and group 3 must divide them"}},
    {{13, "ConvTranspose", "x,w", {XW(4, 4, 4, 2, 3, 3)}, {OW_AI("group", 0)}},
     {"(ConvTranspose)", "attribute 'group' is 0 (must be >= 1)"}},
    {{13, "ConvTranspose", "x,w,b", {XW(4, 4, 4, 2, 3, 3), OW_IN("b", GR_FLOAT, 1, 3)}, {{0}}},
     {"(ConvTranspose)", "input B must have shape [2]"}},
    {{13, "ConvTranspose", "x,w", {XW(4, 4, 4, 2, 3, 3)}, {OW_AIS("kernel_shape", 2, 3, 2)}},
     {"(ConvTranspose)", "attribute 'kernel_shape' value 1 is 2, W has 3"}},
    {{13, "ConvTranspose", "x,w", {XW(4, 4, 4, 2, 3, 3)}, {OW_AS("auto_pad", "SAME")}},
     {"(ConvTranspose)", "attribute 'auto_pad' is 'SAME', not NOTSET, SAME_UPPER, SAME_LOWER or VALID"}},
    {{13, "ConvTranspose", "x,w", {XW(4, 4, 4, 2, 3, 3)}, {OW_AIS("strides", 1, 2)}},
     {"(ConvTranspose)", "attribute 'strides' must hold 2 ints"}},
    {{13, "ConvTranspose", "x,w", {XW(4, 4, 4, 2, 3, 3)}, {OW_AIS("strides", 2, 1, 0)}},
     {"(ConvTranspose)", "attribute 'strides' value 1 is 0 (must be >= 1)"}},
    {{13, "ConvTranspose", "x,w", {XW(4, 4, 4, 2, 3, 3)}, {OW_AIS("output_padding", 2, -1, 0)}},
     {"(ConvTranspose)", "attribute 'output_padding' value 0 is -1 (must be >= 0)"}},
    {{13, "ConvTranspose", "x,w", {XW(4, 4, 4, 2, 3, 3)}, {OW_AIS("pads", 4, 4, 0, 3, 0)}},
     {"(ConvTranspose)", "pads 4 and 3 leave spatial dimension 0 no output (0)"}},
    {{13, "ConvTranspose", "x,w", {OW_IN("x", GR_INT32, 4, 1, 4, 5, 5), OW_IN("w", GR_INT32, 4, 4, 2, 3, 3)}, {{0}}},
     {"(ConvTranspose)", "input X is int32; Loom computes ConvTranspose in float and double only"}},
    {{13, "ConvTranspose", "x,w", {OW_IN("x", GR_FLOAT, 4, 1, 4, 5, 5), OW_IN("w", GR_DOUBLE, 4, 4, 2, 3, 3)}, {{0}}},
     {"(ConvTranspose)", "inputs X (float) and W (double) must have one element type"}},
    {{13, "ConvTranspose", "x,w", {OW_IN("x", GR_FLOAT, 2, 4, 5), OW_IN("w", GR_FLOAT, 2, 4, 2)}, {{0}}},
     {"(ConvTranspose)", "input X has rank 2 (needs N, C and spatial dimensions)"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_transpose),
        cmocka_unit_test(test_conv_transpose_phases),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
