/*
 * graph/lower_math.c, lower_compare.c, lower_reduce.c and the variadic and
 * Mod rules of lower_elemwise.c: one-node ONNX models (written here) run
 * through gr_compile/gr_run on fresh random data, outputs poisoned first,
 * against naive double references — what ONNX's backend suite leaves out
 * (float64, integer types, non-default attributes, broadcasting of three
 * inputs, ties of Round, NaN and infinities (Max/Min propagate NaN from
 * any input), zero divisors, BitShift past the width, ties of
 * ArgMax, every Reduce with axes as attribute and as input) — and every
 * refusal's message (infer_math.c, gr_infer_argminmax).
 *
 * Tolerance: float32 results within 2e-6 relative + 1e-6 absolute of the
 * double reference of the same float32 inputs (libm's float functions are
 * within a few ulp), float64 within 1e-12 relative + 1e-12 absolute; a
 * reduction adds one rounding (2^-23, 2^-52) of the sum of the magnitudes
 * it combined (at most 60 terms); integers and bools exactly; NaN matches
 * NaN and an infinity the same infinity.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, F64 = {kDLFloat, 64, 1}, I8 = {kDLInt, 8, 1},
                        I32 = {kDLInt, 32, 1}, I64 = {kDLInt, 64, 1}, U8 = {kDLUInt, 8, 1},
                        BOOL = {kDLUInt, 1, 1};

/* scale: the sum of the magnitudes a reduction added (0 elsewhere), whose
 * rounding the result carries. */
static bool close_scaled(double got, double want, DLDataType t, double scale)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == want;
    if (t.code != kDLFloat) return got == want;
    double rtol = t.bits == 32 ? 2e-6 : 1e-12, atol = t.bits == 32 ? 1e-6 : 1e-12;
    double eps = t.bits == 32 ? 1.2e-7 : 2.3e-16;
    return fabs(got - want) <= atol + rtol * fabs(want) + eps * scale;
}

static bool close_to(double got, double want, DLDataType t) { return close_scaled(got, want, t, 0); }

/* ---------------- a one-node elementwise case ---------------- */

#define MAXIN 4
typedef double (*ref_fn)(const double *x);

typedef struct {
    const char *op;
    int opset, nin;
    DLDataType in_t, out_t;
    int nd[MAXIN];
    int64_t shape[MAXIN][4];
    double lo, hi;
    bool integral; /* inputs drawn as integers */
} ecase;

typedef void (*attr_fn)(ow_node *n);

/* Runs the case on random inputs (`special`, when given, overwrites the
 * first elements of input 0) and compares every output element with
 * ref(inputs at its broadcast positions). */
static void run_elem(uint64_t *rng, const ecase *c, attr_fn attrs, ref_fn ref, const double *special,
                     int nspecial)
{
    ow_model *w = ow_new(c->opset);
    char names[MAXIN][16], list[80] = "";
    int on = 0;
    int64_t os[4] = {1, 1, 1, 1};
    for (int k = 0; k < c->nin; k++) {
        snprintf(names[k], sizeof names[k], "x%d", k);
        ow_input(w, names[k], ow_elem_type(c->in_t), c->nd[k], c->shape[k]);
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? "," : "", names[k]);
        if (c->nd[k] > on) {
            for (int d = 3; d >= 0; d--) os[d] = 1;
            on = c->nd[k];
        }
    }
    for (int k = 0; k < c->nin; k++)
        for (int d = 0; d < c->nd[k]; d++) {
            int64_t *o = &os[on - c->nd[k] + d];
            if (c->shape[k][d] != 1) *o = c->shape[k][d];
        }
    ow_node *n = ow_node_add(w, "", c->op, list, "y");
    if (attrs) attrs(n);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *in[MAXIN];
    for (int k = 0; k < c->nin; k++) {
        in[k] = ow_tensor(c->in_t, c->nd[k], c->shape[k]);
        for (int64_t i = 0; i < ow_numel(in[k]); i++) {
            double v = tu_rand_uniform(rng, c->lo, c->hi);
            ow_set(in[k], i, c->integral ? floor(v) : v);
        }
    }
    for (int i = 0; i < nspecial && i < ow_numel(in[0]); i++) ow_set(in[0], i, special[i]);
    const DLTensor *y = ow_run(e, c->nin, in, 0);
    assert_int_equal(y->dtype.code, c->out_t.code);
    assert_int_equal(y->dtype.bits, c->out_t.bits);
    int64_t total = 1;
    for (int d = 0; d < on; d++) total *= os[d];
    assert_int_equal(ow_numel(y), total);
    for (int64_t o = 0; o < total; o++) {
        double x[MAXIN];
        for (int k = 0; k < c->nin; k++) x[k] = ow_get(in[k], ow_bcast_index(on, os, o, c->nd[k], c->shape[k]));
        double want = ref(x), got = ow_get(y, o);
        if (!close_to(got, want, c->out_t))
            fail_msg("%s (%s) element %lld of x0 = %.9g: got %.9g, expected %.9g", c->op,
                     c->in_t.code == kDLFloat ? (c->in_t.bits == 32 ? "float" : "double") : "integer",
                     (long long)o, x[0], got, want);
    }
    for (int k = 0; k < c->nin; k++) rt_tensor_free(in[k]);
    ow_finish(w, e, m);
}

/* Unary case over a [3,7] input. */
static void unary(uint64_t *rng, const char *op, DLDataType t, DLDataType out, double lo, double hi,
                  attr_fn attrs, ref_fn ref, const double *special, int nspecial)
{
    ecase c = {op, 18, 1, t, out, {2}, {{3, 7}}, lo, hi, t.code != kDLFloat};
    run_elem(rng, &c, attrs, ref, special, nspecial);
}

/* ---------------- unary functions ---------------- */

static double r_abs(const double *x) { return fabs(x[0]); }
static double r_neg(const double *x) { return -x[0]; }
static double r_sign(const double *x) { return isnan(x[0]) ? x[0] : x[0] > 0 ? 1 : x[0] < 0 ? -1 : 0; }
static double r_exp(const double *x) { return exp(x[0]); }
static double r_log(const double *x) { return log(x[0]); }
static double r_ceil(const double *x) { return ceil(x[0]); }
static double r_floor(const double *x) { return floor(x[0]); }
static double r_round(const double *x) { return nearbyint(x[0]); }
static double r_sin(const double *x) { return sin(x[0]); }
static double r_cos(const double *x) { return cos(x[0]); }
static double r_tan(const double *x) { return tan(x[0]); }
static double r_asin(const double *x) { return asin(x[0]); }
static double r_acos(const double *x) { return acos(x[0]); }
static double r_atan(const double *x) { return atan(x[0]); }
static double r_sinh(const double *x) { return sinh(x[0]); }
static double r_cosh(const double *x) { return cosh(x[0]); }
static double r_asinh(const double *x) { return asinh(x[0]); }
static double r_acosh(const double *x) { return acosh(x[0]); }
static double r_atanh(const double *x) { return atanh(x[0]); }
static double r_softplus(const double *x) { return log1p(exp(x[0])); }
static double r_softsign(const double *x) { return x[0] / (1 + fabs(x[0])); }
static double r_mish(const double *x) { return x[0] * tanh(log1p(exp(x[0]))); }
static double r_isnan(const double *x) { return isnan(x[0]); }
static double r_isinf(const double *x) { return isinf(x[0]) != 0; }
static double r_not(const double *x) { return !x[0]; }

static void test_unary_functions(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const struct {
        const char *op;
        ref_fn ref;
        double lo, hi;
    } fl[] = {
        {"Abs", r_abs, -5, 5},        {"Neg", r_neg, -5, 5},       {"Sign", r_sign, -3, 3},
        {"Exp", r_exp, -10, 10},      {"Log", r_log, 1e-3, 100},   {"Ceil", r_ceil, -9, 9},
        {"Floor", r_floor, -9, 9},    {"Round", r_round, -9, 9},   {"Sin", r_sin, -6, 6},
        {"Cos", r_cos, -6, 6},        {"Tan", r_tan, -1.4, 1.4},   {"Asin", r_asin, -1, 1},
        {"Acos", r_acos, -1, 1},      {"Atan", r_atan, -20, 20},   {"Sinh", r_sinh, -5, 5},
        {"Cosh", r_cosh, -5, 5},      {"Asinh", r_asinh, -50, 50}, {"Acosh", r_acosh, 1, 50},
        {"Atanh", r_atanh, -0.99, 0.99}, {"Softplus", r_softplus, -30, 30},
        {"Softsign", r_softsign, -9, 9}, {"Mish", r_mish, -10, 10},
    };
    for (size_t i = 0; i < sizeof fl / sizeof *fl; i++) {
        unary(&rng, fl[i].op, F32, F32, fl[i].lo, fl[i].hi, NULL, fl[i].ref, NULL, 0);
        unary(&rng, fl[i].op, F64, F64, fl[i].lo, fl[i].hi, NULL, fl[i].ref, NULL, 0);
    }
    /* Round: ties to even (numpy's round), not away from zero. */
    const double ties[] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 1e7 + 0.5, -0.0, 0.49999997};
    unary(&rng, "Round", F32, F32, -9, 9, NULL, r_round, ties, 10);
    unary(&rng, "Round", F64, F64, -9, 9, NULL, r_round, ties, 10);
    /* Softplus stays finite where exp overflows; Sign of NaN is NaN. */
    const double big[] = {100, 89, -100, 1e-30};
    unary(&rng, "Softplus", F32, F32, -3, 3, NULL, r_softplus, big, 4);
    const double sgn[] = {NAN, 0, -0.0, INFINITY, -INFINITY};
    unary(&rng, "Sign", F32, F32, -3, 3, NULL, r_sign, sgn, 5);
    /* Integers: Abs, Neg, Sign. */
    unary(&rng, "Abs", I32, I32, -1000, 1000, NULL, r_abs, NULL, 0);
    unary(&rng, "Abs", U8, U8, 0, 255, NULL, r_abs, NULL, 0);
    unary(&rng, "Neg", I64, I64, -1e12, 1e12, NULL, r_neg, NULL, 0);
    unary(&rng, "Sign", I8, I8, -100, 100, NULL, r_sign, NULL, 0);
    /* Bool outputs. */
    const double odd[] = {NAN, INFINITY, -INFINITY, 0, -NAN, 1e38};
    unary(&rng, "IsNaN", F32, BOOL, -3, 3, NULL, r_isnan, odd, 6);
    unary(&rng, "IsNaN", F64, BOOL, -3, 3, NULL, r_isnan, odd, 6);
    unary(&rng, "IsInf", F32, BOOL, -3, 3, NULL, r_isinf, odd, 6);
    unary(&rng, "Not", BOOL, BOOL, 0, 2, NULL, r_not, NULL, 0);
}

/* IsInf's detect_positive / detect_negative, all four combinations. */
static int isinf_pos, isinf_neg;
static void a_isinf(ow_node *n)
{
    ow_attr_int(n, "detect_positive", isinf_pos);
    ow_attr_int(n, "detect_negative", isinf_neg);
}
static double r_isinf_sel(const double *x)
{
    return (isinf_pos && x[0] == INFINITY) || (isinf_neg && x[0] == -INFINITY);
}

static void test_isinf_attributes(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const double odd[] = {NAN, INFINITY, -INFINITY, 0, 1e38, -INFINITY, INFINITY};
    for (isinf_pos = 0; isinf_pos < 2; isinf_pos++)
        for (isinf_neg = 0; isinf_neg < 2; isinf_neg++)
            unary(&rng, "IsInf", F64, BOOL, -3, 3, a_isinf, r_isinf_sel, odd, 7);
}

/* ---------------- activations with attributes ---------------- */

static void a_alpha(ow_node *n) { ow_attr_float(n, "alpha", 0.375f); }
static void a_selu(ow_node *n)
{
    ow_attr_float(n, "alpha", 1.5f);
    ow_attr_float(n, "gamma", 0.75f);
}
static void a_hsig(ow_node *n)
{
    ow_attr_float(n, "alpha", 0.25f);
    ow_attr_float(n, "beta", 0.625f);
}
static void a_shrink(ow_node *n)
{
    ow_attr_float(n, "lambd", 1.5f);
    ow_attr_float(n, "bias", 0.25f);
}
static double r_leaky(const double *x) { return x[0] < 0 ? 0.375 * x[0] : x[0]; }
static double r_leaky_default(const double *x) { return x[0] < 0 ? 0.01 * x[0] : x[0]; }
static double r_elu(const double *x) { return x[0] < 0 ? 0.375 * expm1(x[0]) : x[0]; }
static double r_selu(const double *x) { return 0.75 * (x[0] > 0 ? x[0] : 1.5 * expm1(x[0])); }
static double r_selu_default(const double *x)
{
    double a = 1.67326319217681884765625, g = 1.05070102214813232421875;
    return g * (x[0] > 0 ? x[0] : a * expm1(x[0]));
}
static double r_celu(const double *x) { return fmax(0, x[0]) + fmin(0, 0.375 * expm1(x[0] / 0.375)); }
static double r_hsig(const double *x) { return fmax(0, fmin(1, 0.25 * x[0] + 0.625)); }
static double r_hsig_default(const double *x) { return fmax(0, fmin(1, 0.2 * x[0] + 0.5)); }
static double r_thr(const double *x) { return x[0] > 0.375 ? x[0] : 0; }
static double r_thr_default(const double *x) { return x[0] > 1 ? x[0] : 0; }
static double r_shrink(const double *x) { return x[0] < -1.5 ? x[0] + 0.25 : x[0] > 1.5 ? x[0] - 0.25 : 0; }
static double r_shrink_int(const double *x) { return x[0] < -1.5 ? x[0] : x[0] > 1.5 ? x[0] : 0; }
static void a_shrink_int(ow_node *n) { ow_attr_float(n, "lambd", 1.5f); }
static double r_shrink_default(const double *x) { return x[0] < -0.5 ? x[0] : x[0] > 0.5 ? x[0] : 0; }

static void test_activations(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const struct {
        const char *op;
        double lo, hi;
        attr_fn attrs;
        ref_fn ref;
    } acts[] = {
        {"LeakyRelu", -5, 5, a_alpha, r_leaky},
        {"LeakyRelu", -5, 5, NULL, r_leaky_default},
        {"Elu", -5, 5, a_alpha, r_elu},
        {"Selu", -5, 5, a_selu, r_selu},
        {"Selu", -5, 5, NULL, r_selu_default},
        {"Celu", -5, 5, a_alpha, r_celu},
        {"HardSigmoid", -6, 6, a_hsig, r_hsig},
        {"HardSigmoid", -6, 6, NULL, r_hsig_default},
        {"ThresholdedRelu", -2, 2, a_alpha, r_thr},
        {"ThresholdedRelu", -2, 2, NULL, r_thr_default},
        {"Shrink", -3, 3, a_shrink, r_shrink},
        {"Shrink", -3, 3, NULL, r_shrink_default},
    };
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++) {
        unary(&rng, acts[i].op, F32, F32, acts[i].lo, acts[i].hi, acts[i].attrs, acts[i].ref, NULL, 0);
        unary(&rng, acts[i].op, F64, F64, acts[i].lo, acts[i].hi, acts[i].attrs, acts[i].ref, NULL, 0);
    }
    /* Integer Shrink compares with the float lambd: 1 is not above 1.5. */
    unary(&rng, "Shrink", I32, I32, -4, 5, a_shrink_int, r_shrink_int, NULL, 0);
    unary(&rng, "Shrink", I8, I8, -4, 5, NULL, r_shrink_default, NULL, 0);
}

static double r_prelu(const double *x) { return x[0] < 0 ? x[0] * x[1] : x[0]; }

/* PRelu: the slope broadcasts to X (per channel [C,1,1], a scalar, X's own shape). */
static void test_prelu(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const ecase cases[] = {
        {"PRelu", 16, 2, F32, F32, {4, 3}, {{2, 3, 4, 5}, {3, 1, 1}}, -3, 3, false},
        {"PRelu", 9, 2, F64, F64, {2, 1}, {{4, 5}, {1}}, -3, 3, false},
        {"PRelu", 16, 2, I32, I32, {2, 2}, {{4, 5}, {4, 5}}, -30, 30, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_elem(&rng, &cases[i], NULL, r_prelu, NULL, 0);
}

/* PRelu before opset 7: a rank-1 slope of C values is per channel (X's
 * dimension 1, not numpy's last); one value is shared; other shapes
 * broadcast as numpy. */
static void test_prelu_legacy(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const struct {
        int opset, xnd;
        int64_t xs[5];
        int64_t sn;
    } cases[] = {{6, 3, {2, 3, 4}, 3}, {6, 5, {2, 3, 4, 5, 6}, 3}, {1, 4, {2, 5, 3, 3}, 5}, {6, 4, {2, 3, 4, 5}, 1}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        ow_model *w = ow_new(cases[k].opset);
        ow_input(w, "x", GR_FLOAT, cases[k].xnd, cases[k].xs);
        float slope[5];
        for (int c = 0; c < cases[k].sn; c++) slope[c] = (float)tu_rand_uniform(&rng, -2, 2);
        ow_init(w, "s", GR_FLOAT, 1, &cases[k].sn, slope, (size_t)cases[k].sn * 4);
        ow_node_add(w, "", "PRelu", "x,s", "y");
        ow_output(w, "y");
        gr_model *m;
        gr_exec *e = ow_compile_ok(w, &m);
        DLTensor *x = ow_tensor(F32, cases[k].xnd, cases[k].xs);
        int64_t inner = 1;
        for (int d = 2; d < cases[k].xnd; d++) inner *= cases[k].xs[d];
        for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, tu_rand_uniform(&rng, -3, 3));
        const DLTensor *y = ow_run(e, 1, &x, 0);
        for (int64_t i = 0; i < ow_numel(x); i++) {
            int64_t c = cases[k].sn == 1 ? 0 : (i / inner) % cases[k].xs[1];
            double xv = ow_get(x, i), want = xv < 0 ? xv * (double)slope[c] : xv;
            if (!close_to(ow_get(y, i), want, F32))
                fail_msg("PRelu opset %d case %zu element %lld: got %.9g, expected %.9g", cases[k].opset, k,
                         (long long)i, ow_get(y, i), want);
        }
        rt_tensor_free(x);
        ow_finish(w, e, m);
    }
}

/* ---------------- comparisons and logic ---------------- */

static double r_eq(const double *x) { return x[0] == x[1]; }
static double r_gt(const double *x) { return x[0] > x[1]; }
static double r_ge(const double *x) { return x[0] >= x[1]; }
static double r_lt(const double *x) { return x[0] < x[1]; }
static double r_le(const double *x) { return x[0] <= x[1]; }
static double r_and(const double *x) { return x[0] && x[1]; }
static double r_or(const double *x) { return x[0] || x[1]; }
static double r_xor(const double *x) { return (x[0] != 0) != (x[1] != 0); }

static void test_compare_logic(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const struct {
        const char *op;
        ref_fn ref;
    } cmp[] = {{"Equal", r_eq}, {"Greater", r_gt}, {"GreaterOrEqual", r_ge}, {"Less", r_lt},
               {"LessOrEqual", r_le}};
    /* [2,1,4] vs [3,1]: both broadcast; integers drawn from a small range
     * so that ties occur; NaN compares false (Equal too). */
    const double odd[] = {NAN, INFINITY, -INFINITY, 1};
    for (size_t i = 0; i < sizeof cmp / sizeof *cmp; i++) {
        ecase f = {cmp[i].op, 13, 2, F32, BOOL, {3, 2}, {{2, 1, 4}, {3, 1}}, -2, 2, true};
        run_elem(&rng, &f, NULL, cmp[i].ref, odd, 4);
        ecase d = {cmp[i].op, 13, 2, F64, BOOL, {3, 2}, {{2, 1, 4}, {3, 1}}, -2, 2, false};
        run_elem(&rng, &d, NULL, cmp[i].ref, NULL, 0);
        ecase n = {cmp[i].op, 18, 2, I64, BOOL, {2, 3}, {{3, 4}, {2, 3, 4}}, -3, 3, true};
        run_elem(&rng, &n, NULL, cmp[i].ref, NULL, 0);
        ecase u = {cmp[i].op, 13, 2, U8, BOOL, {1, 1}, {{12}, {1}}, 0, 4, true};
        run_elem(&rng, &u, NULL, cmp[i].ref, NULL, 0);
    }
    ecase b = {"Equal", 13, 2, BOOL, BOOL, {2, 1}, {{3, 4}, {4}}, 0, 2, true};
    run_elem(&rng, &b, NULL, r_eq, NULL, 0);
    static const struct {
        const char *op;
        ref_fn ref;
    } lg[] = {{"And", r_and}, {"Or", r_or}, {"Xor", r_xor}};
    for (size_t i = 0; i < sizeof lg / sizeof *lg; i++) {
        ecase c = {lg[i].op, 7, 2, BOOL, BOOL, {3, 2}, {{2, 3, 4}, {3, 1}}, 0, 2, true};
        run_elem(&rng, &c, NULL, lg[i].ref, NULL, 0);
    }
}

/* ---------------- Max, Min, Mean, Sum, Mod ---------------- */

static double r_max3(const double *x) { return fmax(fmax(x[0], x[1]), x[2]); }
static double r_min3(const double *x) { return fmin(fmin(x[0], x[1]), x[2]); }
static double r_sum3(const double *x) { return x[0] + x[1] + x[2]; }
static double r_mean3(const double *x) { return (x[0] + x[1] + x[2]) / 3; }
static double r_one(const double *x) { return x[0]; }

static void test_variadic(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const struct {
        const char *op;
        ref_fn ref;
    } v[] = {{"Max", r_max3}, {"Min", r_min3}, {"Sum", r_sum3}, {"Mean", r_mean3}};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        /* [2,1,4], [3,1], [4]: every input broadcasts somewhere. */
        ecase f = {v[i].op, 13, 3, F32, F32, {3, 2, 1}, {{2, 1, 4}, {3, 1}, {4}}, -5, 5, false};
        run_elem(&rng, &f, NULL, v[i].ref, NULL, 0);
        ecase d = {v[i].op, 8, 3, F64, F64, {1, 3, 2}, {{5}, {2, 3, 5}, {3, 1}}, -5, 5, false};
        run_elem(&rng, &d, NULL, v[i].ref, NULL, 0);
        /* one input: a copy */
        ecase one = {v[i].op, 13, 1, F32, F32, {2}, {{3, 4}}, -5, 5, false};
        run_elem(&rng, &one, NULL, r_one, NULL, 0);
    }
    ecase mx = {"Max", 13, 3, I32, I32, {1, 1, 1}, {{6}, {6}, {1}}, -50, 50, true};
    run_elem(&rng, &mx, NULL, r_max3, NULL, 0);
    ecase sm = {"Sum", 13, 3, I64, I64, {1, 1, 1}, {{6}, {6}, {6}}, -1e9, 1e9, true};
    run_elem(&rng, &sm, NULL, r_sum3, NULL, 0);
    /* Before opset 8 the inputs have one shape. */
    ecase old = {"Sum", 6, 3, F32, F32, {2, 2, 2}, {{2, 3}, {2, 3}, {2, 3}}, -5, 5, false};
    run_elem(&rng, &old, NULL, r_sum3, NULL, 0);
}

/* Max/Min with a NaN operand give NaN, whichever input holds it (numpy's
 * maximum/minimum, ONNX's reference): each of 3 inputs [12] gets NaNs at
 * its own positions, the others random. */
static void test_variadic_nan(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const char *ops[2] = {"Max", "Min"};
    DLDataType ts[2] = {F32, F64};
    for (int k = 0; k < 4; k++) {
        DLDataType t = ts[k % 2];
        int64_t s[1] = {12};
        ow_model *w = ow_new(13);
        ow_input(w, "a", ow_elem_type(t), 1, s);
        ow_input(w, "b", ow_elem_type(t), 1, s);
        ow_input(w, "c", ow_elem_type(t), 1, s);
        ow_node_add(w, "", ops[k / 2], "a,b,c", "y");
        ow_output(w, "y");
        gr_model *m;
        gr_exec *e = ow_compile_ok(w, &m);
        DLTensor *in[3];
        for (int j = 0; j < 3; j++) {
            in[j] = ow_tensor(t, 1, s);
            for (int i = 0; i < 12; i++) ow_set(in[j], i, tu_rand_uniform(&rng, -5, 5));
        }
        /* NaN in a alone (0), b alone (1), c alone (2), a and c (3),
         * every input (4); next to infinities (5, 6). */
        const int nan_at[3][3] = {{0, 3, 4}, {1, 4, 4}, {2, 3, 4}};
        for (int j = 0; j < 3; j++)
            for (int q = 0; q < 3; q++) ow_set(in[j], nan_at[j][q], NAN);
        ow_set(in[0], 5, INFINITY);
        ow_set(in[1], 5, NAN);
        ow_set(in[0], 6, NAN);
        ow_set(in[2], 6, -INFINITY);
        const DLTensor *y = ow_run(e, 3, in, 0);
        for (int i = 0; i < 12; i++) {
            double v[3] = {ow_get(in[0], i), ow_get(in[1], i), ow_get(in[2], i)};
            double want = k / 2 == 0 ? fmax(fmax(v[0], v[1]), v[2]) : fmin(fmin(v[0], v[1]), v[2]);
            if (isnan(v[0]) || isnan(v[1]) || isnan(v[2])) want = NAN;
            if (!close_to(ow_get(y, i), want, t))
                fail_msg("%s %s element %d (%g, %g, %g): got %g, expected %g", ops[k / 2],
                         t.bits == 32 ? "float" : "double", i, v[0], v[1], v[2], ow_get(y, i), want);
        }
        for (int j = 0; j < 3; j++) rt_tensor_free(in[j]);
        ow_finish(w, e, m);
    }
}

/* ReduceMax and ReduceMin propagate a NaN of their group as numpy's max
 * and min do (infinities elsewhere stay): X [3,4,5] over one axis, two
 * axes and all, float and double. */
static void test_reduce_nan(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t axes_of[3][2] = {{1, 0}, {0, 2}, {0, 0}};
    const int naxes[3] = {1, 2, 0};
    for (int k = 0; k < 12; k++) {
        bool mx = k % 2 == 0;
        DLDataType t = (k / 2) % 2 ? F64 : F32;
        int a = k / 4;
        int64_t s[3] = {3, 4, 5};
        ow_model *w = ow_new(13);
        ow_input(w, "x", ow_elem_type(t), 3, s);
        ow_node *n = ow_node_add(w, "", mx ? "ReduceMax" : "ReduceMin", "x", "y");
        if (naxes[a]) ow_attr_ints(n, "axes", naxes[a], axes_of[a]);
        ow_attr_int(n, "keepdims", 0);
        ow_output(w, "y");
        gr_model *m;
        gr_exec *e = ow_compile_ok(w, &m);
        DLTensor *x = ow_tensor(t, 3, s);
        for (int64_t i = 0; i < 60; i++) ow_set(x, i, tu_rand_uniform(&rng, -3, 3));
        /* NaNs first, inside and last in groups, infinities elsewhere */
        ow_set(x, 0, NAN);
        ow_set(x, 27, NAN);
        ow_set(x, 59, NAN);
        ow_set(x, 33, INFINITY);
        ow_set(x, 41, -INFINITY);
        const DLTensor *y = ow_run(e, 1, &x, 0);
        bool red[3] = {naxes[a] == 0, naxes[a] == 0, naxes[a] == 0};
        for (int i = 0; i < naxes[a]; i++) red[axes_of[a][i]] = true;
        for (int64_t o = 0; o < ow_numel(y); o++) {
            int64_t c[3] = {0, 0, 0}, r = o;
            for (int d = 2; d >= 0; d--) {
                if (red[d]) continue;
                c[d] = r % s[d];
                r /= s[d];
            }
            double want = mx ? -INFINITY : INFINITY;
            for (int64_t i = 0; i < 60; i++) {
                int64_t ci[3] = {i / 20, (i / 5) % 4, i % 5};
                bool in = true;
                for (int d = 0; d < 3; d++) in &= red[d] || ci[d] == c[d];
                if (!in) continue;
                double v = ow_get(x, i);
                want = isnan(v) || isnan(want) ? NAN : mx ? fmax(want, v) : fmin(want, v);
            }
            double got = ow_get(y, o);
            if (isnan(want) ? !isnan(got) : got != want)
                fail_msg("%s %s (%d axes) output %lld: got %g, expected %g", mx ? "ReduceMax" : "ReduceMin",
                         t.bits == 32 ? "float" : "double", naxes[a], (long long)o, got, want);
        }
        rt_tensor_free(x);
        ow_finish(w, e, m);
    }
}

static void a_fmod(ow_node *n) { ow_attr_int(n, "fmod", 1); }
/* Python's %: the divisor's sign; 0 for a zero divisor and for x mod -1. */
static double r_pymod(const double *x)
{
    if (x[1] == 0 || x[1] == -1) return 0;
    double r = fmod(x[0], x[1]);
    return r != 0 && ((r < 0) != (x[1] < 0)) ? r + x[1] : r;
}
static double r_cmod(const double *x) { return x[1] == 0 || x[1] == -1 ? 0 : fmod(x[0], x[1]); }
static double r_fmod(const double *x) { return fmod(x[0], x[1]); }

static void test_mod(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    DLDataType ints[3] = {I32, I64, I8};
    /* x0 in [-40, 40), divisors [-7, 7] including 0 and -1; INT_MIN mod -1. */
    for (int k = 0; k < 3; k++) {
        ecase c = {"Mod", 13, 2, ints[k], ints[k], {2, 1}, {{5, 8}, {8}}, -7, 8, true};
        run_elem(&rng, &c, NULL, r_pymod, NULL, 0);
        run_elem(&rng, &c, a_fmod, r_cmod, NULL, 0);
    }
    const double imin[] = {-2147483648.0, -2147483648.0, 2147483647.0};
    ecase m = {"Mod", 13, 2, I32, I32, {1, 1}, {{3}, {1}}, -1, 0, true};
    run_elem(&rng, &m, NULL, r_pymod, imin, 3);
    run_elem(&rng, &m, a_fmod, r_cmod, imin, 3);
    ecase u = {"Mod", 13, 2, U8, U8, {1, 1}, {{16}, {16}}, 0, 256, true};
    run_elem(&rng, &u, NULL, r_pymod, NULL, 0);
    /* Floats need fmod=1: C's fmod, the dividend's sign. */
    ecase f = {"Mod", 13, 2, F32, F32, {2, 2}, {{4, 6}, {4, 6}}, -10, 10, false};
    run_elem(&rng, &f, a_fmod, r_fmod, NULL, 0);
    ecase d = {"Mod", 10, 2, F64, F64, {2, 1}, {{4, 6}, {6}}, -10, 10, false};
    run_elem(&rng, &d, a_fmod, r_fmod, NULL, 0);
}

/* ---------------- BitShift ---------------- */

/* X [3,4] shifted by Y [4] (broadcast) in every unsigned type, both
 * directions; shifts from 0 to past the width (0: numpy's result).
 * X stays below 2^32 so that doubles hold every value exactly. */
static void test_bitshift(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const DLDataType ts[4] = {U8, {kDLUInt, 16, 1}, {kDLUInt, 32, 1}, {kDLUInt, 64, 1}};
    for (int k = 0; k < 8; k++) {
        DLDataType t = ts[k / 2];
        bool left = k % 2 == 0;
        int64_t xs[2] = {3, 4}, ys[1] = {4};
        ow_model *w = ow_new(11);
        ow_input(w, "x", ow_elem_type(t), 2, xs);
        ow_input(w, "y", ow_elem_type(t), 1, ys);
        ow_attr_str(ow_node_add(w, "", "BitShift", "x,y", "z"), "direction", left ? "LEFT" : "RIGHT");
        ow_output(w, "z");
        gr_model *m;
        gr_exec *e = ow_compile_ok(w, &m);
        DLTensor *x = ow_tensor(t, 2, xs), *y = ow_tensor(t, 1, ys);
        double top = ldexp(1, t.bits < 32 ? t.bits : 32);
        for (int i = 0; i < 12; i++) ow_set(x, i, floor(tu_rand_uniform(&rng, 0, top)));
        const double shifts[4] = {0, floor(tu_rand_uniform(&rng, 1, t.bits)), t.bits - 1, t.bits + 3};
        for (int i = 0; i < 4; i++) ow_set(y, i, shifts[i]);
        DLTensor *ins[2] = {x, y};
        const DLTensor *z = ow_run(e, 2, ins, 0);
        for (int i = 0; i < 12; i++) {
            double xv = ow_get(x, i), s = shifts[i % 4], want;
            if (s >= t.bits) want = 0;
            else if (left) want = fmod(ldexp(xv, (int)s), ldexp(1, t.bits));
            else want = floor(ldexp(xv, -(int)s));
            if (ow_get(z, i) != want)
                fail_msg("BitShift %s uint%d: %.17g by %g gave %.17g, expected %.17g", left ? "LEFT" : "RIGHT",
                         t.bits, xv, s, ow_get(z, i), want);
        }
        rt_tensor_free(x);
        rt_tensor_free(y);
        ow_finish(w, e, m);
    }
}

/* ---------------- reductions ---------------- */

typedef enum { K_SUM, K_MEAN, K_MAX, K_MIN, K_PROD, K_L1, K_L2, K_LOGSUM, K_LSE, K_SUMSQ } rk;
static const char *const rnames[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                     "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                                     "ReduceLogSumExp", "ReduceSumSquare"};

static double reduce_ref(rk k, const double *v, int n, bool integral)
{
    double acc = k == K_PROD ? 1 : k == K_MAX ? -INFINITY : k == K_MIN ? INFINITY : 0, m = -INFINITY;
    for (int i = 0; i < n; i++) m = fmax(m, v[i]);
    for (int i = 0; i < n; i++) {
        double x = v[i];
        switch (k) {
        case K_MAX: acc = fmax(acc, x); break;
        case K_MIN: acc = fmin(acc, x); break;
        case K_PROD: acc *= x; break;
        case K_L1: acc += fabs(x); break;
        case K_L2:
        case K_SUMSQ: acc += x * x; break;
        case K_LSE: acc += exp(x - m); break;
        default: acc += x;
        }
    }
    switch (k) {
    case K_MEAN: return integral ? trunc(acc / n) : acc / n;
    case K_L2: return integral ? trunc(sqrt(acc)) : sqrt(acc);
    case K_LOGSUM: return integral ? trunc(log(acc)) : log(acc);
    case K_LSE: return log(acc) + m;
    default: return acc;
    }
}

/* Reduces X [3,4,5] over `axes` (none: all), axes as attribute (opset 13)
 * or input (18), keepdims 0 or 1; noop_with_empty_axes with no axes at
 * 18 is a copy. */
static void check_reduce(uint64_t *rng, rk k, DLDataType t, int na, const int64_t *axes, int keep,
                         bool as_input, bool noop)
{
    int64_t s[3] = {3, 4, 5};
    const char *op = rnames[k];
    int opset = as_input ? 18 : 13;
    if (k == K_SUM && !as_input) opset = 11;
    ow_model *w = ow_new(opset);
    ow_input(w, "x", ow_elem_type(t), 3, s);
    if (as_input && na) ow_init(w, "axes", GR_INT64, 1, (int64_t[]){na}, axes, (size_t)na * 8);
    ow_node *n = ow_node_add(w, "", op, as_input && na ? "x,axes" : "x", "y");
    if (!as_input && na) ow_attr_ints(n, "axes", na, axes);
    if (keep >= 0) ow_attr_int(n, "keepdims", keep);
    if (noop) ow_attr_int(n, "noop_with_empty_axes", 1);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, 3, s);
    bool integral = t.code != kDLFloat;
    for (int64_t i = 0; i < 60; i++) {
        double lo = k == K_LOGSUM ? 0.1 : k == K_PROD ? 0.5 : -3, hi = k == K_PROD ? 1.5 : 3;
        double v = tu_rand_uniform(rng, integral ? 1 : lo, integral ? 9 : hi);
        ow_set(x, i, integral ? floor(v) : v);
    }
    const DLTensor *y = ow_run(e, 1, &x, 0);
    bool red[3] = {na == 0 && !noop, na == 0 && !noop, na == 0 && !noop};
    for (int i = 0; i < na; i++) red[axes[i] < 0 ? axes[i] + 3 : axes[i]] = true;
    int64_t os[3], on = 0, total = 1;
    bool kept = keep != 0;
    for (int d = 0; d < 3; d++)
        if (!red[d] || kept || noop) total *= (os[on++] = red[d] ? 1 : s[d]);
    assert_int_equal(y->ndim, on);
    for (int d = 0; d < on; d++) assert_int_equal(y->shape[d], os[d]);
    for (int64_t o = 0; o < total; o++) {
        /* The output index as X's kept coordinates. */
        int64_t c[3] = {0, 0, 0}, r = o;
        for (int d = 2; d >= 0; d--) {
            if (red[d] && !kept && !noop) continue;
            int64_t ext = red[d] ? 1 : s[d];
            c[d] = r % ext;
            r /= ext;
        }
        double v[60];
        int nv = 0;
        for (int64_t i = 0; i < 60; i++) {
            int64_t ci[3] = {i / 20, (i / 5) % 4, i % 5};
            bool in = true;
            for (int d = 0; d < 3; d++) in &= red[d] || ci[d] == c[d];
            if (in) v[nv++] = ow_get(x, i);
        }
        double want = noop ? v[0] : reduce_ref(k, v, nv, integral), got = ow_get(y, o);
        double scale = 0;
        for (int i = 0; i < nv; i++) scale += k == K_L2 || k == K_SUMSQ ? v[i] * v[i] : fabs(v[i]);
        if (k == K_LSE || k == K_LOGSUM || k == K_L2 || k == K_MEAN) scale = scale / fmax(fabs(want), 1e-3) + nv;
        if (!close_scaled(got, want, t, scale))
            fail_msg("%s %s (%d axes, keepdims %d, axes %s) output %lld: got %.9g, expected %.9g",
                     op, integral ? "int" : t.bits == 32 ? "float" : "double", na, keep,
                     as_input ? "input" : "attribute", (long long)o, got, want);
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_reduce(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t a1[] = {1}, a02[] = {0, -1}, a2[] = {-1};
    for (int k = 0; k <= K_SUMSQ; k++) {
        for (int as_input = 0; as_input < 2; as_input++) {
            check_reduce(&rng, (rk)k, F32, 1, a1, 1, as_input, false);
            check_reduce(&rng, (rk)k, F32, 2, a02, 0, as_input, false);
            check_reduce(&rng, (rk)k, F64, 0, NULL, -1, as_input, false);
            check_reduce(&rng, (rk)k, F64, 1, a2, 0, as_input, false);
        }
        check_reduce(&rng, (rk)k, F32, 0, NULL, 1, true, true);
        if (k != K_LSE) {
            check_reduce(&rng, (rk)k, I32, 1, a1, 0, true, false);
            check_reduce(&rng, (rk)k, I64, 2, a02, 1, false, false);
        }
    }
}

/* ArgMax/ArgMin with ties (integers from a small range): the first
 * position, or the last with select_last_index; int64 outputs. */
static void check_arg(uint64_t *rng, const char *op, DLDataType t, int64_t axis, int keep, int last)
{
    int64_t s[3] = {3, 4, 5};
    ow_model *w = ow_new(13);
    ow_input(w, "x", ow_elem_type(t), 3, s);
    ow_node *n = ow_node_add(w, "", op, "x", "y");
    if (axis != 0) ow_attr_int(n, "axis", axis);
    if (keep >= 0) ow_attr_int(n, "keepdims", keep);
    if (last >= 0) ow_attr_int(n, "select_last_index", last);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, 3, s);
    for (int64_t i = 0; i < 60; i++) ow_set(x, i, floor(tu_rand_uniform(rng, 0, 4)));
    const DLTensor *y = ow_run(e, 1, &x, 0);
    assert_int_equal(y->dtype.code, kDLInt);
    assert_int_equal(y->dtype.bits, 64);
    int ax = (int)(axis < 0 ? axis + 3 : axis);
    assert_int_equal(y->ndim, keep == 0 ? 2 : 3);
    bool is_max = strcmp(op, "ArgMax") == 0;
    int64_t st[3] = {20, 5, 1};
    for (int64_t i = 0; i < 60; i++) {
        int64_t ci[3] = {i / 20, (i / 5) % 4, i % 5};
        if (ci[ax] != 0) continue;
        double best = ow_get(x, i);
        int64_t pos = 0;
        for (int64_t p = 1; p < s[ax]; p++) {
            double v = ow_get(x, i + p * st[ax]);
            if ((is_max ? v > best : v < best) || (last == 1 && v == best)) {
                best = v;
                pos = p;
            }
        }
        int64_t o = 0;
        for (int d = 0; d < 3; d++) {
            if (d == ax && keep == 0) continue;
            o = o * (d == ax ? 1 : s[d]) + (d == ax ? 0 : ci[d]);
        }
        if (ow_get(y, o) != (double)pos)
            fail_msg("%s axis %lld keepdims %d last %d at %lld: got %g, expected %lld", op,
                     (long long)axis, keep, last, (long long)o, ow_get(y, o), (long long)pos);
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_argminmax(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const char *ops[2] = {"ArgMax", "ArgMin"};
    for (int k = 0; k < 2; k++) {
        check_arg(&rng, ops[k], F32, 0, -1, -1);
        check_arg(&rng, ops[k], F32, 1, 0, 1);
        check_arg(&rng, ops[k], F64, -1, 1, 0);
        check_arg(&rng, ops[k], I32, 2, 0, 1);
        check_arg(&rng, ops[k], U8, -2, 1, 1);
    }
}

/* ---------------- refusals ---------------- */

#define X23(t) {OW_IN("x", t, 2, 2, 3)}
#define NOATTR {{0}}

static const ow_error_case errors[] = {
    {{13, "Sin", NULL, X23(GR_INT32), NOATTR},
     {"node 'n0' (Sin)", "input X is int32; Sin is defined for float types only"}},
    {{13, "Abs", NULL, X23(GR_BOOL), NOATTR}, {"(Abs)", "input X is bool; Abs is defined for numbers only"}},
    {{13, "Not", NULL, X23(GR_FLOAT), NOATTR}, {"(Not)", "input X is float; Not is defined for bool only"}},
    {{13, "LeakyRelu", NULL, X23(GR_FLOAT), {OW_AI("alpha", 1)}},
     {"(LeakyRelu)", "attribute 'alpha' must be a float"}},
    {{13, "IsInf", NULL, X23(GR_FLOAT), {OW_AI("detect_positive", 2)}},
     {"(IsInf)", "attribute 'detect_positive' must be 0 or 1"}},
    {{13, "Celu", NULL, X23(GR_FLOAT), {OW_AF("alpha", 0)}},
     {"(Celu)", "attribute 'alpha' is 0 (Celu divides by it)"}},
    {{13, "Shrink", NULL, X23(GR_FLOAT), {OW_AF("lambd", -1)}},
     {"(Shrink)", "attribute 'lambd' is -1; it must be >= 0"}},
    {{13, "Exp", "x,x", X23(GR_FLOAT), NOATTR}, {"(Exp)", "takes 1 input, not 2"}},
    /* PRelu's slope may not widen X. */
    {{13, "PRelu", "x,s", {OW_IN("x", GR_FLOAT, 1, 3), OW_IN("s", GR_FLOAT, 2, 2, 3)}, NOATTR},
     {"(PRelu)", "input slope (rank 2) must broadcast to X's shape (rank 1), not widen it"}},
    {{13, "PRelu", "x,s", {OW_IN("x", GR_FLOAT, 2, 2, 3), OW_IN("s", GR_DOUBLE, 1, 3)}, NOATTR},
     {"(PRelu)", "inputs X (float) and slope (double) must have one element type"}},
    {{6, "PRelu", "x,s", {OW_IN("x", GR_FLOAT, 3, 2, 3, 4), OW_IN("s", GR_FLOAT, 1, 4)}, NOATTR},
     {"(PRelu)", "input slope has 4 values; at opset 6 it must hold 1 or one per channel of X (3)"}},
    {{6, "PRelu", "x,s", {OW_IN("x", GR_FLOAT, 2, 2, 3), OW_IN("s", GR_FLOAT, 1, 3)}, {OW_AIS("consumed_inputs", 1, 0)}},
     {"(PRelu)", "attribute 'consumed_inputs' is not defined at opset 6 (PRelu has it up to opset 5)"}},
    /* comparisons and logic */
    {{13, "Less", "a,b", {OW_IN("a", GR_BOOL, 2, 2, 3), OW_IN("b", GR_BOOL, 2, 2, 3)}, NOATTR},
     {"(Less)", "inputs are bool; Less compares numbers only"}},
    {{13, "Equal", "a,b", {OW_IN("a", GR_FLOAT, 2, 2, 3), OW_IN("b", GR_INT32, 2, 2, 3)}, NOATTR},
     {"(Equal)", "inputs A (float) and B (int32) must have one element type"}},
    {{13, "Xor", "a,b", {OW_IN("a", GR_BOOL, 2, 2, 3), OW_IN("b", GR_INT32, 2, 2, 3)}, NOATTR},
     {"(Xor)", "input B is int32; Xor is defined for bool only"}},
    {{13, "Greater", "a,b", {OW_IN("a", GR_FLOAT, 2, 2, 3), OW_IN("b", GR_FLOAT, 1, 4)}, NOATTR},
     {"(Greater)", "do not broadcast"}},
    /* Mod */
    {{13, "Mod", "a,b", {OW_IN("a", GR_FLOAT, 2, 2, 3), OW_IN("b", GR_FLOAT, 2, 2, 3)}, NOATTR},
     {"(Mod)", "input A is float and attribute 'fmod' is 0: floats need fmod=1"}},
    {{13, "Mod", "a,b", {OW_IN("a", GR_INT32, 2, 2, 3), OW_IN("b", GR_INT32, 2, 2, 3)}, {OW_AI("fmod", 3)}},
     {"(Mod)", "attribute 'fmod' must be 0 or 1"}},
    /* BitShift */
    {{11, "BitShift", "a,b", {OW_IN("a", GR_UINT8, 1, 3), OW_IN("b", GR_UINT8, 1, 3)}, NOATTR},
     {"(BitShift)", "attribute 'direction' (LEFT or RIGHT) is missing"}},
    {{11, "BitShift", "a,b", {OW_IN("a", GR_UINT8, 1, 3), OW_IN("b", GR_UINT8, 1, 3)}, {OW_AS("direction", "UP")}},
     {"(BitShift)", "attribute 'direction' is 'UP', not LEFT or RIGHT"}},
    {{11, "BitShift", "a,b", {OW_IN("a", GR_INT32, 1, 3), OW_IN("b", GR_INT32, 1, 3)}, {OW_AS("direction", "LEFT")}},
     {"(BitShift)", "input X is int32; BitShift is defined for unsigned integers only"}},
    {{11, "BitShift", "a,b", {OW_IN("a", GR_UINT8, 1, 3), OW_IN("b", GR_UINT16, 1, 3)}, {OW_AS("direction", "LEFT")}},
     {"(BitShift)", "inputs A (uint8) and B (uint16) must have one element type"}},
    /* variadic */
    {{13, "Max", "a,b", {OW_IN("a", GR_FLOAT, 2, 2, 3), OW_IN("b", GR_DOUBLE, 2, 2, 3)}, NOATTR},
     {"(Max)", "inputs data_0 (float) and data_1 (double) must have one element type"}},
    {{7, "Sum", "a,b", {OW_IN("a", GR_FLOAT, 2, 2, 3), OW_IN("b", GR_FLOAT, 1, 3)}, NOATTR},
     {"(Sum)", "input data_1 differs in shape from data_0 (at opset 7 Sum does not broadcast)"}},
    {{13, "Mean", "", {{0}}, NOATTR}, {"(Mean)", "takes at least 1 input, not 0"}},
    {{13, "Min", NULL, X23(GR_BOOL), NOATTR}, {"(Min)", "input data_0 is bool; Min is defined for numbers only"}},
    /* ArgMax / ArgMin */
    {{13, "ArgMax", NULL, X23(GR_FLOAT), {OW_AI("axis", 2)}},
     {"(ArgMax)", "attribute 'axis' 2 is out of range for rank 2"}},
    {{13, "ArgMin", NULL, X23(GR_FLOAT), {OW_AI("select_last_index", 2)}},
     {"(ArgMin)", "attribute 'select_last_index' must be 0 or 1"}},
    {{11, "ArgMin", NULL, X23(GR_FLOAT), {OW_AI("select_last_index", 1)}},
     {"(ArgMin)", "attribute 'select_last_index' is not defined at opset 11 (from 12 on)"}},
    {{13, "ArgMax", NULL, {OW_IN("x", GR_FLOAT, 0, 0)}, NOATTR},
     {"(ArgMax)", "input data is a scalar; it needs rank >= 1"}},
    {{13, "ArgMax", NULL, X23(GR_BOOL), NOATTR},
     {"(ArgMax)", "input data is bool; ArgMax is defined for numbers only"}},
    /* reductions */
    {{13, "ReduceMax", NULL, X23(GR_FLOAT), {OW_AIS("axes", 2, 1, -1)}},
     {"(ReduceMax)", "axes names dimension 1 twice"}},
    {{18, "ReduceProd", NULL, X23(GR_FLOAT), {OW_AIS("axes", 1, 1)}},
     {"(ReduceProd)", "attribute 'axes' is not allowed at opset 18 (axes is an input)"}},
    {{13, "ReduceLogSumExp", NULL, X23(GR_INT32), NOATTR},
     {"(ReduceLogSumExp)", "input data is int32; ReduceLogSumExp is computed for float types only"}},
    /* Before their first opsets the operators are not Loom's. */
    {{6, "Equal", NULL, X23(GR_FLOAT), NOATTR},
     {"unsupported operators: Equal (node 'n0', opset 6;", "supported at opsets 7 to 18)"}},
    {{17, "Mish", NULL, X23(GR_FLOAT), NOATTR}, {"Mish (node 'n0', opset 17;", "supported at opsets 18 to 18)"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_functions),
        cmocka_unit_test(test_isinf_attributes),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_prelu),
        cmocka_unit_test(test_prelu_legacy),
        cmocka_unit_test(test_compare_logic),
        cmocka_unit_test(test_variadic),
        cmocka_unit_test(test_variadic_nan),
        cmocka_unit_test(test_mod),
        cmocka_unit_test(test_bitshift),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_reduce_nan),
        cmocka_unit_test(test_argminmax),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
