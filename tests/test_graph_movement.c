/*
 * graph/lower_movement.c and the LogSoftmax, Hardmax and
 * InstanceNormalization rules of lower_nn.c: one-node ONNX models run
 * through gr_compile/gr_run on fresh random data (outputs poisoned
 * first) against naive double references — the modes and attributes
 * ONNX's backend suite leaves out (Pad's reflect and edge with negative
 * pads, the attribute form of opset 2, axes at 18; both DepthToSpace
 * modes; Trilu's k both ways; CumSum's four flag combinations; Hardmax's
 * ties and its flattened form before opset 13; float64) — and the
 * refusals' messages (infer_movement.c, gr_infer_instancenorm).
 *
 * Tolerance: element moves exactly; float32 arithmetic (LogSoftmax,
 * InstanceNormalization, CumSum) within 1e-5 relative + 1e-5 absolute of
 * the double reference of the same inputs (a few roundings of sums of at
 * most 60 terms of magnitude <= 3), float64 within 1e-12.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, F64 = {kDLFloat, 64, 1}, I32 = {kDLInt, 32, 1},
                        I64 = {kDLInt, 64, 1};

static void coords(int nd, const int64_t *s, int64_t flat, int64_t *c)
{
    for (int d = nd - 1; d >= 0; d--) {
        c[d] = flat % s[d];
        flat /= s[d];
    }
}

static int64_t flat_of(int nd, const int64_t *s, const int64_t *c)
{
    int64_t f = 0;
    for (int d = 0; d < nd; d++) f = f * s[d] + c[d];
    return f;
}

/* The model w (input "x" of type t, shape xs) run once; y compared with
 * want(coords of y) element by element. */
typedef double (*want_fn)(const DLTensor *x, const int64_t *yc);

static void run_check(uint64_t *rng, ow_model *w, DLDataType t, int xnd, const int64_t *xs,
                      int ynd, const int64_t *ys, want_fn want, double lo, double hi, const char *what)
{
    gr_model *m = NULL;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, xnd, xs);
    for (int64_t i = 0; i < ow_numel(x); i++) {
        double v = tu_rand_uniform(rng, lo, hi);
        ow_set(x, i, t.code == kDLFloat ? v : floor(v));
    }
    const DLTensor *y = ow_run(e, 1, &x, 0);
    assert_int_equal(y->ndim, ynd);
    for (int d = 0; d < ynd; d++) assert_int_equal(y->shape[d], ys[d]);
    double rtol = t.code != kDLFloat ? 0 : t.bits == 32 ? 1e-5 : 1e-12;
    for (int64_t o = 0; o < ow_numel(y); o++) {
        int64_t c[8];
        coords(ynd, ys, o, c);
        double wv = want(x, c), g = ow_get(y, o);
        if (!(fabs(g - wv) <= rtol * (1 + fabs(wv))))
            fail_msg("%s: output %lld: got %.9g, expected %.9g", what, (long long)o, g, wv);
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static int64_t g_xs[8];
static int g_xnd;
static double at(const DLTensor *x, const int64_t *c) { return ow_get(x, flat_of(g_xnd, g_xs, c)); }

/* ---------------- Expand, Tile ---------------- */

static double w_expand(const DLTensor *x, const int64_t *yc)
{
    /* x [3,1] to [2,3,4] */
    int64_t c[2] = {yc[1], 0};
    return at(x, c);
}
static double w_tile(const DLTensor *x, const int64_t *yc)
{
    int64_t c[2] = {yc[0] % g_xs[0], yc[1] % g_xs[1]};
    return at(x, c);
}

static void test_expand_tile(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    int64_t xs[2] = {3, 1}, ys[3] = {2, 3, 4};
    memcpy(g_xs, xs, sizeof xs);
    g_xnd = 2;
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 2, xs);
    ow_init(w, "s", GR_INT64, 1, (int64_t[]){3}, (int64_t[]){2, 1, 4}, 24);
    ow_node_add(w, "", "Expand", "x,s", "y");
    ow_output(w, "y");
    run_check(&rng, w, F32, 2, xs, 3, ys, w_expand, -5, 5, "Expand");
    int64_t ts[2] = {2, 3}, tys[2] = {6, 6};
    memcpy(g_xs, ts, sizeof ts);
    w = ow_new(13);
    ow_input(w, "x", GR_INT64, 2, ts);
    ow_init(w, "r", GR_INT64, 1, (int64_t[]){2}, (int64_t[]){3, 2}, 16);
    ow_node_add(w, "", "Tile", "x,r", "y");
    ow_output(w, "y");
    run_check(&rng, w, I64, 2, ts, 2, tys, w_tile, -100, 100, "Tile");
}

/* ---------------- Pad ---------------- */

static int64_t p_begin[2];
static int p_mode; /* 0 constant 2.5, 1 reflect, 2 edge */
static double w_pad(const DLTensor *x, const int64_t *yc)
{
    int64_t c[2];
    for (int d = 0; d < 2; d++) {
        int64_t i = yc[d] - p_begin[d], n = g_xs[d];
        if (i < 0 || i >= n) {
            if (p_mode == 0) return 2.5;
            if (p_mode == 1) i = i < 0 ? -i : 2 * (n - 1) - i;
            else i = i < 0 ? 0 : n - 1;
        }
        c[d] = i;
    }
    return at(x, c);
}

static void check_pad(uint64_t *rng, int opset, int mode, const int64_t *pads, DLDataType t)
{
    static const char *const modes[3] = {"constant", "reflect", "edge"};
    int64_t xs[2] = {4, 5}, ys[2] = {4 + pads[0] + pads[2], 5 + pads[1] + pads[3]};
    memcpy(g_xs, xs, sizeof xs);
    g_xnd = 2;
    p_begin[0] = pads[0];
    p_begin[1] = pads[1];
    p_mode = mode;
    ow_model *w = ow_new(opset);
    ow_input(w, "x", ow_elem_type(t), 2, xs);
    ow_node *n;
    if (opset < 11) {
        n = ow_node_add(w, "", "Pad", "x", "y");
        ow_attr_ints(n, "pads", 4, pads);
        if (mode == 0) ow_attr_float(n, "value", 2.5f);
    } else {
        ow_init(w, "p", GR_INT64, 1, (int64_t[]){4}, pads, 32);
        if (t.code == kDLFloat) {
            double v = 2.5;
            float f = 2.5f;
            ow_init(w, "v", ow_elem_type(t), 0, NULL, t.bits == 32 ? (void *)&f : (void *)&v, t.bits / 8);
        }
        n = ow_node_add(w, "", "Pad", mode == 0 ? "x,p,v" : "x,p", "y");
    }
    ow_attr_str(n, "mode", modes[mode]);
    ow_output(w, "y");
    char what[64];
    snprintf(what, sizeof what, "Pad %s opset %d", modes[mode], opset);
    run_check(rng, w, t, 2, xs, 2, ys, w_pad, -5, 5, what);
}

static void test_pad(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t grow[4] = {1, 2, 3, 1}, crop[4] = {-1, 3, 2, -2}, big[4] = {3, 4, 3, 4};
    for (int mode = 0; mode < 3; mode++) {
        check_pad(&rng, 13, mode, grow, F32);
        check_pad(&rng, 13, mode, crop, F64);
        check_pad(&rng, 2, mode, grow, F32);
    }
    check_pad(&rng, 13, 0, big, F32);
    check_pad(&rng, 13, 2, big, F64);
    /* axes (opset 18): pad only the last dimension, 1 before and 2 after */
    int64_t xs[2] = {4, 5}, ys[2] = {4, 8};
    memcpy(g_xs, xs, sizeof xs);
    p_begin[0] = 0;
    p_begin[1] = 1;
    p_mode = 2;
    ow_model *w = ow_new(18);
    ow_input(w, "x", GR_FLOAT, 2, xs);
    ow_init(w, "p", GR_INT64, 1, (int64_t[]){2}, (int64_t[]){1, 2}, 16);
    ow_init(w, "a", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){-1}, 8);
    ow_node *n = ow_node_add(w, "", "Pad", "x,p,,a", "y");
    ow_attr_str(n, "mode", "edge");
    ow_output(w, "y");
    run_check(&rng, w, F32, 2, xs, 2, ys, w_pad, -5, 5, "Pad axes");
}

/* ---------------- DepthToSpace, SpaceToDepth ---------------- */

static bool d2s_crd;
static double w_d2s(const DLTensor *x, const int64_t *yc)
{
    int64_t b = 2, cp = g_xs[1] / 4;
    int64_t i = yc[2] % b, j = yc[3] % b;
    int64_t ch = d2s_crd ? yc[1] * b * b + i * b + j : (i * b + j) * cp + yc[1];
    int64_t c[4] = {yc[0], ch, yc[2] / b, yc[3] / b};
    return at(x, c);
}
static double w_s2d(const DLTensor *x, const int64_t *yc)
{
    int64_t b = 2, C = g_xs[1], q = yc[1] / C;
    int64_t c[4] = {yc[0], yc[1] % C, yc[2] * b + q / b, yc[3] * b + q % b};
    return at(x, c);
}

static void test_depth_space(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    int64_t xs[4] = {2, 8, 3, 2}, ys[4] = {2, 2, 6, 4};
    memcpy(g_xs, xs, sizeof xs);
    g_xnd = 4;
    for (int crd = 0; crd < 2; crd++) {
        d2s_crd = crd;
        ow_model *w = ow_new(13);
        ow_input(w, "x", GR_FLOAT, 4, xs);
        ow_node *n = ow_node_add(w, "", "DepthToSpace", "x", "y");
        ow_attr_int(n, "blocksize", 2);
        if (crd) ow_attr_str(n, "mode", "CRD");
        ow_output(w, "y");
        run_check(&rng, w, F32, 4, xs, 4, ys, w_d2s, -5, 5, crd ? "DepthToSpace CRD" : "DepthToSpace DCR");
    }
    int64_t ss[4] = {2, 3, 4, 6}, sys[4] = {2, 12, 2, 3};
    memcpy(g_xs, ss, sizeof ss);
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_DOUBLE, 4, ss);
    ow_node *n = ow_node_add(w, "", "SpaceToDepth", "x", "y");
    ow_attr_int(n, "blocksize", 2);
    ow_output(w, "y");
    run_check(&rng, w, F64, 4, ss, 4, sys, w_s2d, -5, 5, "SpaceToDepth");
}

/* ---------------- Trilu, CumSum ---------------- */

static int64_t tr_k;
static int tr_upper;
static double w_trilu(const DLTensor *x, const int64_t *yc)
{
    int64_t dj = yc[2] - yc[1];
    bool keep = tr_upper ? dj >= tr_k : dj <= tr_k;
    return keep ? at(x, yc) : 0;
}

static int cs_axis, cs_excl, cs_rev;
static double w_cumsum(const DLTensor *x, const int64_t *yc)
{
    double s = 0;
    int64_t c[3] = {yc[0], yc[1], yc[2]};
    for (int64_t r = 0; r < g_xs[cs_axis]; r++) {
        int64_t i = yc[cs_axis];
        bool take = cs_rev ? (cs_excl ? r > i : r >= i) : (cs_excl ? r < i : r <= i);
        c[cs_axis] = r;
        if (take) s += at(x, c);
    }
    return s;
}

static void test_trilu_cumsum(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    int64_t xs[3] = {2, 4, 5};
    memcpy(g_xs, xs, sizeof xs);
    g_xnd = 3;
    const int64_t ks[3] = {0, 2, -1};
    for (tr_upper = 0; tr_upper < 2; tr_upper++)
        for (int i = 0; i < 3; i++) {
            tr_k = ks[i];
            ow_model *w = ow_new(14);
            ow_input(w, "x", GR_INT32, 3, xs);
            if (i) ow_init(w, "k", GR_INT64, 0, NULL, &ks[i], 8);
            ow_node *n = ow_node_add(w, "", "Trilu", i ? "x,k" : "x", "y");
            if (!tr_upper) ow_attr_int(n, "upper", 0);
            ow_output(w, "y");
            run_check(&rng, w, I32, 3, xs, 3, xs, w_trilu, -50, 50, "Trilu");
        }
    for (cs_excl = 0; cs_excl < 2; cs_excl++)
        for (cs_rev = 0; cs_rev < 2; cs_rev++)
            for (cs_axis = 0; cs_axis < 3; cs_axis += 2) {
                ow_model *w = ow_new(14);
                ow_input(w, "x", cs_rev ? GR_DOUBLE : GR_FLOAT, 3, xs);
                int64_t a = cs_axis == 2 ? -1 : 0;
                ow_init(w, "a", GR_INT64, 0, NULL, &a, 8);
                ow_node *n = ow_node_add(w, "", "CumSum", "x,a", "y");
                if (cs_excl) ow_attr_int(n, "exclusive", 1);
                if (cs_rev) ow_attr_int(n, "reverse", 1);
                ow_output(w, "y");
                run_check(&rng, w, cs_rev ? F64 : F32, 3, xs, 3, xs, w_cumsum, -3, 3, "CumSum");
            }
}

/* ---------------- Range, Size ---------------- */

static void test_range_size(void **state)
{
    (void)state;
    gr_model *m = NULL;
    /* Range(10, -3, -4) of int32: 10, 6, 2, -2 */
    ow_model *w = ow_new(11);
    int32_t s = 10, l = -3, d = -4;
    ow_init(w, "s", GR_INT32, 0, NULL, &s, 4);
    ow_init(w, "l", GR_INT32, 0, NULL, &l, 4);
    ow_init(w, "d", GR_INT32, 0, NULL, &d, 4);
    ow_input(w, "x", GR_FLOAT, 1, (int64_t[]){2});
    ow_input(w, "z", GR_INT64, 0, NULL);
    ow_node_add(w, "", "Range", "s,l,d", "r");
    ow_node_add(w, "", "Size", "x", "n");
    ow_node_add(w, "", "Add", "z,n", "zn");
    ow_output(w, "r");
    ow_output(w, "zn");
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(F32, 1, (int64_t[]){2}), *z = ow_tensor(I64, 0, NULL);
    ow_set(z, 0, 40);
    DLTensor *ins[2] = {x, z};
    const DLTensor *r = ow_run(e, 2, ins, 0);
    assert_int_equal(r->shape[0], 4);
    for (int i = 0; i < 4; i++) assert_true(ow_get(r, i) == 10 - 4 * i);
    /* Size folds to 2: z + 2 */
    const DLTensor *n = ow_run(e, 2, ins, 1);
    assert_int_equal(ow_numel(n), 1);
    assert_true(ow_get(n, 0) == 42);
    rt_tensor_free(x);
    rt_tensor_free(z);
    ow_finish(w, e, m);
    /* float64: 0.5, 0.75, ... below 2: 6 values */
    w = ow_new(11);
    double fs = 0.5, fl = 2, fd = 0.25;
    ow_init(w, "s", GR_DOUBLE, 0, NULL, &fs, 8);
    ow_init(w, "l", GR_DOUBLE, 0, NULL, &fl, 8);
    ow_init(w, "d", GR_DOUBLE, 0, NULL, &fd, 8);
    ow_input(w, "x", GR_FLOAT, 1, (int64_t[]){2});
    ow_node_add(w, "", "Range", "s,l,d", "r");
    ow_node_add(w, "", "Identity", "x", "z");
    ow_output(w, "r");
    ow_output(w, "z");
    e = ow_compile_ok(w, &m);
    x = ow_tensor(F32, 1, (int64_t[]){2});
    r = ow_run(e, 1, &x, 0);
    assert_int_equal(r->shape[0], 6);
    for (int i = 0; i < 6; i++) assert_true(ow_get(r, i) == 0.5 + 0.25 * i);
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

/* ---------------- LogSoftmax, Hardmax, InstanceNormalization ---------------- */

static int sm_opset;
static int64_t sm_axis;
/* The reduced dimensions' indices of X [3,4,5] for output coordinates yc:
 * from opset 13 the axis alone, before it every dimension from the axis on. */
static bool sm_reduced(int d) { return sm_opset >= 13 ? d == sm_axis : d >= sm_axis; }

static void each_row(const DLTensor *x, const int64_t *yc, double *vals, int *n, int *self)
{
    *n = 0;
    for (int64_t i = 0; i < 60; i++) {
        int64_t c[3];
        coords(3, g_xs, i, c);
        bool same = true;
        for (int d = 0; d < 3; d++) same &= sm_reduced(d) || c[d] == yc[d];
        if (!same) continue;
        bool me = c[0] == yc[0] && c[1] == yc[1] && c[2] == yc[2];
        if (me) *self = *n;
        vals[(*n)++] = ow_get(x, i);
    }
}

static double w_logsoftmax(const DLTensor *x, const int64_t *yc)
{
    double v[60], mx = -INFINITY, s = 0;
    int n, self = 0;
    each_row(x, yc, v, &n, &self);
    for (int i = 0; i < n; i++) mx = fmax(mx, v[i]);
    for (int i = 0; i < n; i++) s += exp(v[i] - mx);
    return v[self] - mx - log(s);
}

static double w_hardmax(const DLTensor *x, const int64_t *yc)
{
    double v[60];
    int n, self = 0, first = 0;
    each_row(x, yc, v, &n, &self);
    for (int i = 1; i < n; i++)
        if (v[i] > v[first]) first = i;
    return self == first;
}

static double w_instnorm(const DLTensor *x, const int64_t *yc)
{
    /* X [2,3,4,5]: scale[c] = c + 1, B[c] = -c, epsilon 1e-3 */
    double s = 0, q = 0;
    for (int64_t h = 0; h < 4; h++)
        for (int64_t w = 0; w < 5; w++) s += ow_get(x, ((yc[0] * 3 + yc[1]) * 4 + h) * 5 + w);
    double mean = s / 20;
    for (int64_t h = 0; h < 4; h++)
        for (int64_t w = 0; w < 5; w++) {
            double dv = ow_get(x, ((yc[0] * 3 + yc[1]) * 4 + h) * 5 + w) - mean;
            q += dv * dv;
        }
    double xv = ow_get(x, ((yc[0] * 3 + yc[1]) * 4 + yc[2]) * 5 + yc[3]);
    return (double)(yc[1] + 1) * (xv - mean) / sqrt(q / 20 + (double)1e-3f) - (double)yc[1];
}

static void test_softmax_family(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    int64_t xs[3] = {3, 4, 5};
    memcpy(g_xs, xs, sizeof xs);
    g_xnd = 3;
    const struct {
        int opset;
        int64_t axis;
    } forms[] = {{13, -1}, {13, 1}, {11, 1}, {11, 0}};
    for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
        sm_opset = forms[f].opset;
        sm_axis = forms[f].axis < 0 ? forms[f].axis + 3 : forms[f].axis;
        for (int op = 0; op < 2; op++) {
            ow_model *w = ow_new(sm_opset);
            ow_input(w, "x", op ? GR_FLOAT : GR_DOUBLE, 3, xs);
            ow_node *n = ow_node_add(w, "", op ? "Hardmax" : "LogSoftmax", "x", "y");
            ow_attr_int(n, "axis", forms[f].axis);
            ow_output(w, "y");
            /* Hardmax on integers drawn as floats: ties, the first wins. */
            if (op)
                run_check(&rng, w, F32, 3, xs, 3, xs, w_hardmax, -3, 3, "Hardmax");
            else
                run_check(&rng, w, F64, 3, xs, 3, xs, w_logsoftmax, -30, 30, "LogSoftmax");
        }
    }
    int64_t is[4] = {2, 3, 4, 5};
    ow_model *w = ow_new(6);
    ow_input(w, "x", GR_FLOAT, 4, is);
    float sc[3] = {1, 2, 3}, b[3] = {0, -1, -2};
    ow_init(w, "s", GR_FLOAT, 1, (int64_t[]){3}, sc, 12);
    ow_init(w, "b", GR_FLOAT, 1, (int64_t[]){3}, b, 12);
    ow_node *n = ow_node_add(w, "", "InstanceNormalization", "x,s,b", "y");
    ow_attr_float(n, "epsilon", 1e-3f);
    ow_output(w, "y");
    run_check(&rng, w, F32, 4, is, 4, is, w_instnorm, -3, 3, "InstanceNormalization");
}

/* Hardmax's ties need equal values: floor of the draws. */
static void test_hardmax_ties(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    int64_t xs[3] = {3, 4, 5};
    memcpy(g_xs, xs, sizeof xs);
    g_xnd = 3;
    sm_opset = 13;
    sm_axis = 2;
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 3, xs);
    ow_node_add(w, "", "Floor", "x", "f");
    ow_attr_int(ow_node_add(w, "", "Hardmax", "f", "y"), "axis", 2);
    ow_output(w, "y");
    gr_model *m = NULL;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(F32, 3, xs);
    for (int64_t i = 0; i < 60; i++) ow_set(x, i, tu_rand_uniform(&rng, 0, 3));
    const DLTensor *y = ow_run(e, 1, &x, 0);
    for (int64_t row = 0; row < 12; row++) {
        int first = 0;
        for (int i = 1; i < 5; i++)
            if (floor(ow_get(x, row * 5 + i)) > floor(ow_get(x, row * 5 + first))) first = i;
        for (int i = 0; i < 5; i++) assert_true(ow_get(y, row * 5 + i) == (i == first));
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

/* ---------------- refusals ---------------- */

#define X23 OW_IN("x", GR_FLOAT, 2, 2, 3)
#define X1344 OW_IN("x", GR_FLOAT, 4, 1, 3, 4, 4)
#define NOATTR {{0}}

static const ow_error_case errors[] = {
    {{13, "Expand", "x,s", {X23, OW_IN("s", GR_INT64, 1, 2)}, NOATTR},
     {"node 'n0' (Expand)", "input 'shape' ('s') must be a constant"}},
    {{13, "Expand", "x,s", {X23, OW_VEC("s", GR_INT64, 1, 4)}, NOATTR},
     {"(Expand)", "shapes [2,3] and [4] do not broadcast"}},
    {{13, "Tile", "x,r", {X23, OW_VEC("r", GR_INT64, 1, 2)}, NOATTR},
     {"(Tile)", "input 'repeats' has 1 values; input has rank 2 (one each)"}},
    {{13, "Pad", "x,p", {X23, OW_VEC("p", GR_INT64, 4, 0, 3, 0, 0)}, {OW_AS("mode", "reflect")}},
     {"(Pad)", "mode 'reflect' pads dimension 1 (3) by 3 and 0; each must be below the extent"}},
    {{13, "Pad", "x,p", {X23, OW_VEC("p", GR_INT64, 4, 0, 0, 0, 0)}, {OW_AS("mode", "wrap")}},
     {"(Pad)", "attribute 'mode' is 'wrap'; Loom pads with 'constant', 'reflect' or 'edge'"}},
    {{13, "Pad", "x,p", {X23, OW_VEC("p", GR_INT64, 2, 1, 1)}, NOATTR},
     {"(Pad)", "input 'pads' must hold two values (begin, end) per padded axis"}},
    {{13, "Pad", "x,p", {X23, OW_VEC("p", GR_INT64, 4, -2, 0, -1, 0)}, NOATTR},
     {"(Pad)", "pads -2 and -1 crop dimension 0 (2) below 0"}},
    {{13, "DepthToSpace", NULL, {X1344}, {OW_AI("blocksize", 2)}},
     {"(DepthToSpace)", "channels 3 are not a multiple of blocksize^2 = 4"}},
    {{13, "DepthToSpace", NULL, {X1344}, {OW_AI("blocksize", 1), OW_AS("mode", "ABC")}},
     {"(DepthToSpace)", "attribute 'mode' is 'ABC', not 'DCR' or 'CRD'"}},
    {{13, "SpaceToDepth", NULL, {X1344}, {OW_AI("blocksize", 3)}},
     {"(SpaceToDepth)", "height 4 and width 4 must be multiples of blocksize 3"}},
    {{13, "SpaceToDepth", NULL, {X23}, NOATTR}, {"(SpaceToDepth)", "input has rank 2; it must be [N, C, H, W]"}},
    {{14, "Trilu", NULL, {OW_IN("x", GR_FLOAT, 1, 3)}, NOATTR}, {"(Trilu)", "input has rank 1; Trilu needs rank >= 2"}},
    {{14, "CumSum", "x,a", {X23, OW_SCALAR("a", GR_INT64, 2)}, NOATTR},
     {"(CumSum)", "input 'axis' 2 is out of range for rank 2"}},
    {{11, "Range", "s,s,d", {OW_SCALAR("s", GR_INT64, 1), OW_SCALAR("d", GR_INT64, 0)}, NOATTR},
     {"(Range)", "input 'delta' is 0"}},
    {{11, "Range", "s,l,s", {OW_IN("l", GR_INT64, 0, 0), OW_SCALAR("s", GR_INT64, 1)}, NOATTR},
     {"(Range)", "input 'limit' ('l') must be a constant (Range's length is its shape)"}},
    {{13, "InstanceNormalization", "x,s,s", {X1344, OW_VEC("s", GR_FLOAT, 2, 1, 1)}, NOATTR},
     {"(InstanceNormalization)", "input scale must be [C] = [3]"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expand_tile),
        cmocka_unit_test(test_pad),
        cmocka_unit_test(test_depth_space),
        cmocka_unit_test(test_trilu_cumsum),
        cmocka_unit_test(test_range_size),
        cmocka_unit_test(test_softmax_family),
        cmocka_unit_test(test_hardmax_ties),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
