/*
 * graph/lower_elemwise.c: one-node ONNX models (written here) run through
 * gr_compile/gr_run on fresh random data, outputs poisoned first, against
 * naive double references — the operators and attribute combinations
 * ONNX's backend suite lacks (Gelu in both domains and both
 * approximations, integer Div's truncation, zero divisors and INT_MIN/-1,
 * integer Pow, Clip's optional bounds, Cast between many type pairs,
 * Where broadcasting all three inputs, Dropout at every opset form and
 * its removal) — and the refusals' messages.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, F64 = {kDLFloat, 64, 1}, I8 = {kDLInt, 8, 1},
                        I32 = {kDLInt, 32, 1}, I64 = {kDLInt, 64, 1}, U8 = {kDLUInt, 8, 1},
                        U16 = {kDLUInt, 16, 1}, BOOL = {kDLUInt, 1, 1};

static void fill_uniform(uint64_t *rng, DLTensor *t, double lo, double hi)
{
    /* bools: [0, 2) floored, half of them true */
    for (int64_t i = 0; i < ow_numel(t); i++) {
        double v = tu_rand_uniform(rng, lo, hi);
        ow_set(t, i, t->dtype.bits == 1 ? floor(v) : v);
    }
}

/* ---------------- unary ---------------- */

static double ref_unary(const char *op, const char *approx, double x)
{
    if (!strcmp(op, "Sigmoid")) return 1 / (1 + exp(-x));
    if (!strcmp(op, "Tanh")) return tanh(x);
    if (!strcmp(op, "Erf")) return erf(x);
    if (!strcmp(op, "Sqrt")) return sqrt(x);
    if (!strcmp(op, "Reciprocal")) return 1 / x;
    if (!strcmp(op, "Relu")) return x > 0 ? x : 0;
    if (!strcmp(op, "HardSwish")) return x * fmax(0, fmin(1, x / 6 + 0.5));
    if (approx && !strcmp(approx, "tanh"))
        return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1 + erf(x / sqrt(2)));
}

static void check_unary(uint64_t *rng, const char *domain, const char *op, const char *approx,
                        DLDataType dt, double lo, double hi)
{
    int64_t shape[3] = {2, 3, 7};
    ow_model *w = ow_new(18);
    ow_input(w, "x", ow_elem_type(dt), 3, shape);
    ow_node *n = ow_node_add(w, domain, op, "x", "y");
    if (approx) ow_attr_str(n, "approximate", approx);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(dt, 3, shape);
    fill_uniform(rng, x, lo, hi);
    const DLTensor *y = ow_run(e, 1, &x, 0);
    int64_t n_el = ow_numel(x);
    double *want = malloc(sizeof *want * (size_t)n_el);
    float *got = malloc(sizeof *got * (size_t)n_el);
    for (int64_t i = 0; i < n_el; i++) {
        want[i] = ref_unary(op, approx, ow_get(x, i));
        got[i] = (float)ow_get(y, i);
    }
    /* float32 math (erf within 6.4 ulp, exp 1.05 ulp): 1e-5 relative;
     * the double cases are compared through float. */
    char what[64];
    snprintf(what, sizeof what, "%s%s%s", op, approx ? " " : "", approx ? approx : "");
    assert_int_equal(tu_compare_f32(what, got, want, n_el, 1e-5, 1e-6), 0);
    free(want);
    free(got);
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_unary(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const char *ops[] = {"Sigmoid", "Tanh", "Erf", "Reciprocal", "Relu", "HardSwish"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) check_unary(&rng, "", ops[i], NULL, F32, -4, 4);
    check_unary(&rng, "", "Sqrt", NULL, F32, 0, 9);
    check_unary(&rng, "", "Tanh", NULL, F64, -4, 4);
    check_unary(&rng, "", "Gelu", NULL, F32, -4, 4);
    check_unary(&rng, "", "Gelu", "none", F32, -4, 4);
    check_unary(&rng, "", "Gelu", "tanh", F32, -4, 4);
    check_unary(&rng, "com.microsoft", "Gelu", NULL, F32, -4, 4);
}

/* ---------------- binary ---------------- */

typedef double (*binop)(double a, double b);
static double op_sub(double a, double b) { return a - b; }
static double op_mul(double a, double b) { return a * b; }
static double op_div(double a, double b) { return a / b; }
static double op_pow(double a, double b) { return pow(a, b); }

/* A [2,1,4] op B [3,1] -> [2,3,4]. */
static void check_binary(uint64_t *rng, const char *op, binop f, DLDataType at, DLDataType bt,
                         double lo, double hi, double blo, double bhi)
{
    int64_t sa[3] = {2, 1, 4}, sb[2] = {3, 1}, so[3] = {2, 3, 4};
    ow_model *w = ow_new(13);
    ow_input(w, "a", ow_elem_type(at), 3, sa);
    ow_input(w, "b", ow_elem_type(bt), 2, sb);
    ow_node_add(w, "", op, "a,b", "y");
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *a = ow_tensor(at, 3, sa), *b = ow_tensor(bt, 2, sb);
    fill_uniform(rng, a, lo, hi);
    fill_uniform(rng, b, blo, bhi);
    DLTensor *ins[2] = {a, b};
    const DLTensor *y = ow_run(e, 2, ins, 0);
    assert_int_equal(y->dtype.code, at.code);
    assert_int_equal(y->dtype.bits, at.bits);
    double want[24];
    float got[24];
    for (int64_t o = 0; o < 24; o++) {
        double r = f(ow_get(a, ow_bcast_index(3, so, o, 3, sa)), ow_get(b, ow_bcast_index(3, so, o, 2, sb)));
        /* The output has A's type: integers truncate (C's conversion). */
        want[o] = at.code == kDLFloat ? r : trunc(r);
        got[o] = (float)ow_get(y, o);
    }
    assert_int_equal(tu_compare_f32(op, got, want, 24, 1e-5, 1e-6), 0);
    rt_tensor_free(a);
    rt_tensor_free(b);
    ow_finish(w, e, m);
}

static void test_binary_broadcast(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    /* automatic: the DLDataType constants are no constant expressions */
    const struct {
        const char *op;
        binop f;
        DLDataType at, bt;
        double lo, hi, blo, bhi;
    } cases[] = {
        {"Sub", op_sub, F32, F32, -2, 2, -2, 2},
        {"Mul", op_mul, F32, F32, -2, 2, -2, 2},
        {"Div", op_div, F32, F32, -2, 2, 0.5, 2},
        {"Pow", op_pow, F32, F32, 0.1, 3, -2, 2},
        {"Pow", op_pow, F32, I64, 0.1, 3, -3, 4},
        {"Sub", op_sub, I32, I32, -1000, 1000, -1000, 1000},
        {"Mul", op_mul, I64, I64, -1000, 1000, -1000, 1000},
        /* Integer bases: computed in double, truncated to the base's type. */
        {"Pow", op_pow, I32, I32, -9, 9, 0, 6},
        {"Pow", op_pow, I64, F32, 0, 20, 0, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_binary(&rng, cases[i].op, cases[i].f, cases[i].at, cases[i].bt, cases[i].lo, cases[i].hi,
                     cases[i].blo, cases[i].bhi);
}

/* Integer Div truncates toward zero; a zero divisor gives 0 and INT_MIN /
 * -1 wraps (ONNX leaves both undefined; the processor would trap). */
static void check_int_div(DLDataType dt, const double *a, const double *b, const double *want, int n)
{
    int64_t s[1] = {n};
    ow_model *w = ow_new(13);
    ow_input(w, "a", ow_elem_type(dt), 1, s);
    ow_input(w, "b", ow_elem_type(dt), 1, s);
    ow_node_add(w, "", "Div", "a,b", "y");
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *ta = ow_tensor(dt, 1, s), *tb = ow_tensor(dt, 1, s);
    for (int i = 0; i < n; i++) {
        ow_set(ta, i, a[i]);
        ow_set(tb, i, b[i]);
    }
    DLTensor *ins[2] = {ta, tb};
    const DLTensor *y = ow_run(e, 2, ins, 0);
    for (int i = 0; i < n; i++) {
        if (ow_get(y, i) != want[i])
            fail_msg("Div %s element %d: %g / %g gave %g, expected %g", dt.code == kDLUInt ? "uint" : "int",
                     i, a[i], b[i], ow_get(y, i), want[i]);
    }
    rt_tensor_free(ta);
    rt_tensor_free(tb);
    ow_finish(w, e, m);
}

/* Pow by an initializer scalar, read by value (gr_lower_input_by_value):
 * 1, 2 and 3 multiplied out, other values a constant operand; float and
 * double exponents, shapes [] and [1], float and double bases. */
static void test_pow_constant_exponent(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const struct {
        DLDataType base;
        int exp_type, exp_rank;
        double e, lo, hi;
    } cases[] = {
        {F32, GR_FLOAT, 0, 3, -2, 2},   {F32, GR_FLOAT, 1, 2, -2, 2},  {F32, GR_DOUBLE, 0, 1, -2, 2},
        {F32, GR_FLOAT, 0, 2.5, 0.1, 3}, {F32, GR_FLOAT, 1, -1, 0.5, 2}, {F64, GR_FLOAT, 0, 3, -2, 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int64_t shape[3] = {2, 3, 7}, one = 1;
        ow_model *w = ow_new(13);
        ow_input(w, "x", ow_elem_type(cases[c].base), 3, shape);
        float ef = (float)cases[c].e;
        double ed = cases[c].e;
        bool f = cases[c].exp_type == GR_FLOAT;
        ow_init(w, "e", cases[c].exp_type, cases[c].exp_rank, &one, f ? (void *)&ef : (void *)&ed,
                f ? sizeof ef : sizeof ed);
        ow_node_add(w, "", "Pow", "x,e", "y");
        ow_output(w, "y");
        gr_model *m;
        gr_exec *e = ow_compile_ok(w, &m);
        DLTensor *x = ow_tensor(cases[c].base, 3, shape);
        fill_uniform(&rng, x, cases[c].lo, cases[c].hi);
        const DLTensor *y = ow_run(e, 1, &x, 0);
        int64_t n = ow_numel(x);
        double want[42];
        float got[42];
        for (int64_t i = 0; i < n; i++) {
            want[i] = pow(ow_get(x, i), cases[c].e);
            got[i] = (float)ow_get(y, i);
        }
        char what[64];
        snprintf(what, sizeof what, "Pow by constant %g (case %zu)", cases[c].e, c);
        assert_int_equal(tu_compare_f32(what, got, want, n, 1e-6, 1e-6), 0);
        rt_tensor_free(x);
        ow_finish(w, e, m);
    }
}

static void test_div_integer(void **state)
{
    (void)state;
    const struct {
        DLDataType t;
        int n;
        double a[8], b[8], want[8];
    } cases[] = {
        {I32, 8, {7, -7, 7, -7, 5, -2147483648.0, 0, 9}, {2, 2, -2, -2, 0, -1, 3, 1},
         {3, -3, -3, 3, 0, -2147483648.0, 0, 9}},
        {I64, 4, {1e15 + 1, -9, 9, 4}, {10, 4, 0, -1}, {1e14, -2, 0, -4}},
        {U8, 4, {255, 7, 200, 0}, {2, 0, 255, 1}, {127, 0, 0, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_int_div(cases[i].t, cases[i].a, cases[i].b, cases[i].want, cases[i].n);
}

/* ---------------- Clip ---------------- */

/* Clip(x, min, max) with min/max graph inputs (run-time scalars) or left
 * out; numpy's order: max wins when min > max. */
static void check_clip(uint64_t *rng, DLDataType dt, bool have_min, bool have_max, double lo, double hi)
{
    int64_t s[2] = {3, 5};
    ow_model *w = ow_new(13);
    ow_input(w, "x", ow_elem_type(dt), 2, s);
    if (have_min) ow_input(w, "lo", ow_elem_type(dt), 0, NULL);
    if (have_max) ow_input(w, "hi", ow_elem_type(dt), 0, NULL);
    char ins_s[32];
    snprintf(ins_s, sizeof ins_s, "x,%s,%s", have_min ? "lo" : "", have_max ? "hi" : "");
    ow_node_add(w, "", "Clip", ins_s, "y");
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(dt, 2, s), *tl = ow_tensor(dt, 0, NULL), *th = ow_tensor(dt, 0, NULL);
    fill_uniform(rng, x, -10, 10);
    ow_set(tl, 0, lo);
    ow_set(th, 0, hi);
    DLTensor *ins[3] = {x};
    int nin = 1;
    if (have_min) ins[nin++] = tl;
    if (have_max) ins[nin++] = th;
    const DLTensor *y = ow_run(e, nin, ins, 0);
    double want[15];
    float got[15];
    for (int i = 0; i < 15; i++) {
        double v = ow_get(x, i);
        if (have_min) v = fmax(v, lo);
        if (have_max) v = fmin(v, hi);
        want[i] = v;
        got[i] = (float)ow_get(y, i);
    }
    assert_int_equal(tu_compare_f32("Clip", got, want, 15, 0, 0), 0);
    rt_tensor_free(x);
    rt_tensor_free(tl);
    rt_tensor_free(th);
    ow_finish(w, e, m);
}

static void test_clip(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const struct {
        DLDataType t;
        bool have_min, have_max;
        double lo, hi;
    } cases[] = {
        {F32, true, true, -2.5, 3.25}, {F32, false, true, 0, 1.5},
        {F32, true, false, -1, 0},     {F32, true, true, 2, -2},
        {I32, true, true, -3, 4},      {I8, false, true, 0, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_clip(&rng, cases[i].t, cases[i].have_min, cases[i].have_max, cases[i].lo, cases[i].hi);
}

/* Relu and Clip keep a NaN as numpy's maximum and clip do (every other
 * element as before). The outputs are poisoned with NaN, so a NaN
 * expected is checked together with the finite values around it. */
static void check_nan(uint64_t *rng, const char *op, int opset)
{
    int64_t s[1] = {64};
    ow_model *w = ow_new(opset);
    ow_input(w, "x", GR_FLOAT, 1, s);
    float lo = -0.5f, hi = 0.75f;
    bool clip = strcmp(op, "Clip") == 0;
    if (clip) {
        ow_init(w, "lo", GR_FLOAT, 0, NULL, &lo, 4);
        ow_init(w, "hi", GR_FLOAT, 0, NULL, &hi, 4);
    }
    ow_node_add(w, "", op, clip ? "x,lo,hi" : "x", "y");
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(F32, 1, s);
    fill_uniform(rng, x, -2, 2);
    for (int i = 0; i < 64; i += 5) ow_set(x, i, NAN);
    const DLTensor *y = ow_run(e, 1, &x, 0);
    for (int i = 0; i < 64; i++) {
        double v = ow_get(x, i), got = ow_get(y, i);
        double want = isnan(v) ? NAN : clip ? fmin(fmax(v, lo), hi) : fmax(v, 0);
        if (isnan(want) ? !isnan(got) : got != want)
            fail_msg("%s element %d: %g gave %g, expected %g", op, i, v, got, want);
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_nan_propagates(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    check_nan(&rng, "Relu", 13);
    check_nan(&rng, "Clip", 13);
}

/* ---------------- Cast ---------------- */

static double ref_cast(DLDataType to, double v)
{
    if (to.code == kDLFloat) return to.bits == 32 ? (double)(float)v : v;
    if (to.bits == 1) return v != 0;
    double t = trunc(v);
    if (to.code == kDLUInt) {
        double mod = ldexp(1, to.bits);
        t = fmod(t, mod);
        return t < 0 ? t + mod : t;
    }
    double mod = ldexp(1, to.bits), half = mod / 2;
    t = fmod(t, mod);
    if (t >= half) t -= mod;
    if (t < -half) t += mod;
    return t;
}

/* Values of `from` in [lo, hi) cast to `to` (values exact in from's type). */
static void check_cast(uint64_t *rng, DLDataType from, DLDataType to, double lo, double hi)
{
    int64_t s[1] = {64};
    ow_model *w = ow_new(13);
    ow_input(w, "x", ow_elem_type(from), 1, s);
    ow_node *n = ow_node_add(w, "", "Cast", "x", "y");
    ow_attr_int(n, "to", ow_elem_type(to));
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(from, 1, s);
    fill_uniform(rng, x, lo, hi);
    ow_set(x, 0, 0); /* a zero for the casts to bool */
    const DLTensor *y = ow_run(e, 1, &x, 0);
    assert_int_equal(y->dtype.code, to.code);
    assert_int_equal(y->dtype.bits, to.bits);
    for (int i = 0; i < 64; i++) {
        double want = ref_cast(to, ow_get(x, i)), got = ow_get(y, i);
        if (got != want)
            fail_msg("Cast %d/%d -> %d/%d element %d: %.17g gave %.17g, expected %.17g", from.code,
                     from.bits, to.code, to.bits, i, ow_get(x, i), got, want);
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_cast(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const struct {
        DLDataType from, to;
        double lo, hi;
    } cases[] = {
        {F32, I32, -100, 100}, /* truncation toward zero */
        {F32, I64, -1e6, 1e6},
        {F32, U8, 0, 255},
        {F32, BOOL, -2, 2},
        {F64, F32, -1e3, 1e3},
        {F32, F64, -1e3, 1e3},
        {BOOL, F32, 0, 2},
        {BOOL, I64, 0, 2},
        {I64, I8, -1000, 1000}, /* wraps */
        {I8, U16, -128, 128},  /* sign-extends, then wraps */
        {I32, F64, -1e9, 1e9},
        {U8, I64, 0, 256},
        {I32, BOOL, -3, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_cast(&rng, cases[i].from, cases[i].to, cases[i].lo, cases[i].hi);
}

/* ---------------- Where ---------------- */

static void test_where_broadcast(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    int64_t sc[3] = {2, 1, 4}, sx[2] = {3, 1}, sy[1] = {4}, so[3] = {2, 3, 4};
    DLDataType types[2] = {F32, I64};
    for (int t = 0; t < 2; t++) {
        ow_model *w = ow_new(16);
        ow_input(w, "c", GR_BOOL, 3, sc);
        ow_input(w, "x", ow_elem_type(types[t]), 2, sx);
        ow_input(w, "y", ow_elem_type(types[t]), 1, sy);
        ow_node_add(w, "", "Where", "c,x,y", "z");
        ow_output(w, "z");
        gr_model *m;
        gr_exec *e = ow_compile_ok(w, &m);
        DLTensor *c = ow_tensor(BOOL, 3, sc), *x = ow_tensor(types[t], 2, sx),
                 *y = ow_tensor(types[t], 1, sy);
        fill_uniform(&rng, c, 0, 2);
        fill_uniform(&rng, x, -100, 100);
        fill_uniform(&rng, y, -100, 100);
        DLTensor *ins[3] = {c, x, y};
        const DLTensor *z = ow_run(e, 3, ins, 0);
        for (int64_t o = 0; o < 24; o++) {
            double want = ow_get(c, ow_bcast_index(3, so, o, 3, sc)) != 0
                              ? ow_get(x, ow_bcast_index(3, so, o, 2, sx))
                              : ow_get(y, ow_bcast_index(3, so, o, 1, sy));
            if (ow_get(z, o) != want) fail_msg("Where element %d: %g, expected %g", (int)o, ow_get(z, o), want);
        }
        rt_tensor_free(c);
        rt_tensor_free(x);
        rt_tensor_free(y);
        ow_finish(w, e, m);
    }
}

/* ---------------- Dropout ---------------- */

/* Dropout at `opset` (ratio/training_mode as constants from 12 on, the
 * attributes before): the output must equal X exactly and the mask,
 * when asked for, be ones (bool from opset 10, X's type before). */
static void check_dropout(uint64_t *rng, int opset, DLDataType t, bool mask, bool training, float ratio)
{
    int64_t s[3] = {2, 3, 5};
    ow_model *w = ow_new(opset);
    ow_input(w, "x", ow_elem_type(t), 3, s);
    ow_node *n;
    if (opset >= 12) {
        uint8_t tm = training;
        ow_init(w, "r", GR_FLOAT, 0, NULL, &ratio, 4);
        ow_init(w, "t", GR_BOOL, 0, NULL, &tm, 1);
        n = ow_node_add(w, "", "Dropout", "x,r,t", mask ? "y,m" : "y");
    } else {
        n = ow_node_add(w, "", "Dropout", "x", mask ? "y,m" : "y");
        ow_attr_float(n, "ratio", ratio);
        if (opset < 7) ow_attr_int(n, "is_test", !training);
    }
    ow_output(w, "y");
    if (mask) ow_output(w, "m");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, 3, s);
    fill_uniform(rng, x, -5, 5);
    const DLTensor *y = ow_run(e, 1, &x, 0);
    for (int i = 0; i < 30; i++)
        if (ow_get(y, i) != ow_get(x, i))
            fail_msg("Dropout opset %d element %d: %g, expected %g", opset, i, ow_get(y, i), ow_get(x, i));
    if (mask) {
        const DLTensor *mk = ow_run(e, 1, &x, 1);
        DLDataType mt = opset >= 10 ? BOOL : t;
        assert_int_equal(mk->dtype.code, mt.code);
        assert_int_equal(mk->dtype.bits, mt.bits);
        for (int i = 0; i < 30; i++)
            if (ow_get(mk, i) != 1) fail_msg("Dropout opset %d mask %d: %g, expected 1", opset, i, ow_get(mk, i));
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_dropout(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const struct {
        int opset;
        DLDataType t;
        bool mask, training;
        float ratio;
    } cases[] = {
        {13, F32, true, false, 0.3f}, {13, F64, false, false, 0.5f}, {12, F32, true, true, 0},
        {10, F32, true, false, 0.2f}, {7, F64, true, false, 0.5f},   {6, F32, true, false, 0.5f},
        {6, F32, false, true, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_dropout(&rng, cases[i].opset, cases[i].t, cases[i].mask, cases[i].training, cases[i].ratio);
}

/* A Dropout without mask is dropped by the graph passes: x -> Dropout ->
 * Relu runs as the Relu alone. */
static void test_dropout_eliminated(void **state)
{
    (void)state;
    int64_t s[2] = {4, 8};
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 2, s);
    ow_node_add(w, "", "Dropout", "x", "d");
    ow_node_add(w, "", "Relu", "d", "y");
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    assert_int_equal(m->graph->n_nodes, 1);
    assert_string_equal(m->graph->nodes[0].op_type, "Relu");
    ow_finish(w, e, m);
}

/* A run-time ratio (a graph input) is never read in inference: the
 * Dropout between a graph input and output (which the passes keep) runs,
 * with and without its mask, the ratio no kernel argument. */
static void test_dropout_runtime_ratio(void **state)
{
    (void)state;
    for (int mask = 0; mask < 2; mask++) {
        ow_model *w = ow_new(13);
        ow_input(w, "x", GR_FLOAT, 1, (int64_t[]){4});
        ow_input(w, "r", GR_FLOAT, 0, NULL);
        ow_node_add(w, "", "Dropout", "x,r", mask ? "y,m" : "y");
        ow_output(w, "y");
        if (mask) ow_output(w, "m");
        gr_model *m;
        gr_exec *e = ow_compile_ok(w, &m);
        DLTensor *x = ow_tensor(F32, 1, (int64_t[]){4}), *r = ow_tensor(F32, 0, NULL);
        for (int i = 0; i < 4; i++) ow_set(x, i, i - 1.5);
        ow_set(r, 0, 0.5);
        DLTensor *ins[2] = {x, r};
        const DLTensor *y = ow_run(e, 2, ins, 0);
        for (int i = 0; i < 4; i++) assert_true(ow_get(y, i) == i - 1.5);
        if (mask) {
            const DLTensor *mk = ow_run(e, 2, ins, 1);
            for (int i = 0; i < 4; i++) assert_true(ow_get(mk, i) == 1);
        }
        rt_tensor_free(x);
        rt_tensor_free(r);
        ow_finish(w, e, m);
    }
}

/* ---------------- refusals ---------------- */

static const ow_error_case errors[] = {
    /* The math functions on an integer input. */
    {{13, "Sqrt", NULL, {OW_IN("x", GR_INT32, 1, 4)}, {{0}}},
     {"node 'n0' (Sqrt)", "input X is int32; Sqrt is computed for float and double only"}},
    /* Arithmetic on bools. */
    {{13, "Mul", "a,b", {OW_IN("a", GR_BOOL, 1, 4), OW_IN("b", GR_BOOL, 1, 4)}, {{0}}},
     {"node 'n0' (Mul)", "inputs are bool; Mul is computed for numbers only"}},
    /* A Clip bound that is no scalar. */
    {{13, "Clip", "x,lo", {OW_IN("x", GR_FLOAT, 1, 4), OW_IN("lo", GR_FLOAT, 1, 2)}, {{0}}},
     {"node 'n0' (Clip)", "input 1 (min) has 2 elements; it must be a scalar"}},
    /* Dropout: training drops at random; Loom runs inference only. */
    {{13, "Dropout", "x,r,t", {OW_IN("x", GR_FLOAT, 1, 4), OW_SCALAR("r", GR_FLOAT, 0.25), OW_SCALAR("t", GR_BOOL, 1)}, {{0}}},
     {"node 'n0' (Dropout)", "input training_mode is true with ratio 0.25 drops elements at random; "
                             "Loom runs inference only (training with ratio 0 is the identity)"}},
    {{13, "Dropout", "x,,t", {OW_IN("x", GR_FLOAT, 1, 4), OW_SCALAR("t", GR_BOOL, 1)}, {{0}}},
     {"node 'n0' (Dropout)", "input training_mode is true with ratio 0.5 drops elements at random"}},
    {{6, "Dropout", NULL, {OW_IN("x", GR_FLOAT, 1, 4)}, {{0}}},
     {"node 'n0' (Dropout)", "attribute 'is_test' is 0 (training mode) with ratio 0.5 drops elements at random"}},
    {{13, "Dropout", "x,r,t", {OW_IN("x", GR_FLOAT, 1, 4), OW_SCALAR("r", GR_FLOAT, 0), OW_IN("t", GR_BOOL, 0, 0)}, {{0}}},
     {"(Dropout)", "input 'training_mode' ('t') must be a constant: Loom decides between inference and training"}},
    {{13, "Dropout", "x,r,t", {OW_IN("x", GR_FLOAT, 1, 4), OW_IN("r", GR_FLOAT, 0, 0), OW_SCALAR("t", GR_BOOL, 1)}, {{0}}},
     {"(Dropout)", "input 'ratio' ('r') must be a constant when training_mode is true"}},
    {{13, "Dropout", "x,r", {OW_IN("x", GR_FLOAT, 1, 4), OW_SCALAR("r", GR_FLOAT, 1.5)}, {{0}}},
     {"(Dropout)", "input ratio is 1.5; it must be in [0, 1)"}},
    {{13, "Dropout", "x,r", {OW_IN("x", GR_FLOAT, 1, 4), OW_VEC("r", GR_FLOAT, 2, 0, 0)}, {{0}}},
     {"(Dropout)", "input ratio has 2 elements; it must be a scalar"}},
    {{13, "Dropout", "x,r", {OW_IN("x", GR_FLOAT, 1, 4), OW_SCALAR("r", GR_INT64, 0)}, {{0}}},
     {"(Dropout)", "input ratio is int64; it must be a float type"}},
    {{13, "Dropout", "x,,t", {OW_IN("x", GR_FLOAT, 1, 4), OW_SCALAR("t", GR_FLOAT, 1)}, {{0}}},
     {"(Dropout)", "input training_mode is float; it must be bool"}},
    {{13, "Dropout", "x,,t", {OW_IN("x", GR_FLOAT, 1, 4), OW_VEC("t", GR_BOOL, 2, 0, 0)}, {{0}}},
     {"(Dropout)", "input training_mode has 2 elements; it must be a scalar"}},
    {{13, "Dropout", "x,r,t", {OW_IN("x", GR_FLOAT, 1, 4), OW_SCALAR("r", GR_DOUBLE, 0.5), OW_SCALAR("t", GR_BOOL, 1)}, {{0}}},
     {"(Dropout)", "input training_mode is true with ratio 0.5"}},
    {{13, "Dropout", NULL, {OW_IN("x", GR_INT32, 1, 4)}, {{0}}},
     {"(Dropout)", "input data is int32; Dropout is defined for float types only"}},
    {{10, "Dropout", NULL, {OW_IN("x", GR_FLOAT, 1, 4)}, {OW_AI("ratio", 1)}},
     {"(Dropout)", "attribute 'ratio' must be a float"}},
    {{13, "Dropout", NULL, {OW_IN("x", GR_FLOAT, 1, 4)}, {OW_AF("ratio", 0.5f)}},
     {"(Dropout)", "attribute 'ratio' is not defined at opset 13 (Dropout has it up to opset 11)"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_binary_broadcast),
        cmocka_unit_test(test_pow_constant_exponent),
        cmocka_unit_test(test_div_integer),
        cmocka_unit_test(test_clip),
        cmocka_unit_test(test_nan_propagates),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_where_broadcast),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_dropout_eliminated),
        cmocka_unit_test(test_dropout_runtime_ratio),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
