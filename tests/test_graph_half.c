/*
 * float16 and bfloat16 graph inputs and outputs end to end: one-node
 * models (Add with broadcasting, Max, Sigmoid, Cast to and from the
 * 16-bit kinds) compiled by gr_compile and run by gr_run on fresh random
 * data, outputs poisoned with NaN, against a naive double reference
 * rounded to the output's type; and the run-time refusal of a float32
 * tensor fed to a float16 input.
 *
 * Tolerance: one unit in the last place of the output type (2^-10
 * relative for float16, 2^-7 for bfloat16): Add, Max and the casts are
 * exact after rounding, Sigmoid is computed in float32 and rounded once.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1};

/* The DLPack dtype of an ONNX element type of these tests. */
static DLDataType dl_type(int elem_type)
{
    switch (elem_type) {
    case GR_FLOAT16: return (DLDataType){kDLFloat, 16, 1};
    case GR_BFLOAT16: return (DLDataType){kDLBfloat, 16, 1};
    case GR_FLOAT: return (DLDataType){kDLFloat, 32, 1};
    case GR_DOUBLE: return (DLDataType){kDLFloat, 64, 1};
    default: fail_msg("dl_type: element type %d", elem_type); return (DLDataType){0, 0, 0};
    }
}

/* v rounded to t (a scratch tensor does the rounding ow_set does). */
static double round_to(DLDataType t, double v)
{
    int64_t one = 1;
    DLTensor *s = ow_tensor(t, 1, &one);
    ow_set(s, 0, v);
    double r = ow_get(s, 0);
    rt_tensor_free(s);
    return r;
}

static double ulp_rel(DLDataType t)
{
    return t.code == kDLBfloat ? ldexp(1, -7) : t.bits == 16 ? ldexp(1, -10) : t.bits == 32 ? 1e-6 : 1e-12;
}

static void check(const char *what, DLDataType t, const DLTensor *y, int64_t i, double want)
{
    double got = ow_get(y, i);
    if (!(fabs(got - want) <= 1e-6 + ulp_rel(t) * fabs(want)))
        fail_msg("%s element %lld: got %.9g, expected %.9g", what, (long long)i, got, want);
}

static void fill(uint64_t *rng, DLTensor *x, double lo, double hi)
{
    for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, tu_rand_uniform(rng, lo, hi));
}

static double ref_add(const double *x) { return x[0] + x[1]; }
static double ref_max(const double *x) { return fmax(x[0], x[1]); }
static double ref_sigmoid(const double *x) { return 1 / (1 + exp(-x[0])); }
static double ref_copy(const double *x) { return x[0]; }

/* One node (ow_one_node: inputs as listed, output y of element type
 * `out`) on inputs drawn from [lo, hi), with `fixed` the first input's
 * elements 0 and 1 set to 1/3 and a float16 subnormal; each output
 * element checked against ref of the input elements it reads (numpy
 * broadcasting to input 0's shape), rounded to the output type. */
typedef struct {
    const char *name;
    ow_node_spec node;
    int out;
    double lo, hi;
    bool fixed;
    double (*ref)(const double *x);
} half_case;

#define CAST(from, to, name)                                                                           \
    {name, {13, "Cast", "x", {OW_IN("x", from, 2, 4, 6)}, {OW_AI("to", to)}}, to, -1000, 1000, true, \
     ref_copy}
static const half_case cases[] = {
    {"Add float16", {13, "Add", "a,b", {OW_IN("a", GR_FLOAT16, 2, 3, 5), OW_IN("b", GR_FLOAT16, 1, 5)}, {{0}}},
     GR_FLOAT16, -50, 50, false, ref_add},
    {"Max float16", {13, "Max", "a,b", {OW_IN("a", GR_FLOAT16, 2, 3, 5), OW_IN("b", GR_FLOAT16, 1, 5)}, {{0}}},
     GR_FLOAT16, -50, 50, false, ref_max},
    {"Add bfloat16", {13, "Add", "a,b", {OW_IN("a", GR_BFLOAT16, 2, 3, 5), OW_IN("b", GR_BFLOAT16, 1, 5)}, {{0}}},
     GR_BFLOAT16, -50, 50, false, ref_add},
    {"Sigmoid float16", {13, "Sigmoid", "x", {OW_IN("x", GR_FLOAT16, 3, 2, 3, 7)}, {{0}}}, GR_FLOAT16, -8, 8, false,
     ref_sigmoid},
    CAST(GR_FLOAT, GR_FLOAT16, "Cast float to float16"),
    CAST(GR_DOUBLE, GR_FLOAT16, "Cast double to float16"),
    CAST(GR_FLOAT16, GR_FLOAT, "Cast float16 to float"),
    CAST(GR_FLOAT16, GR_DOUBLE, "Cast float16 to double"),
    CAST(GR_FLOAT, GR_BFLOAT16, "Cast float to bfloat16"),
    CAST(GR_BFLOAT16, GR_FLOAT, "Cast bfloat16 to float"),
};
#undef CAST

static void run_case(uint64_t *rng, const half_case *c)
{
    const ow_value_spec *v = c->node.vals;
    ow_model *w = ow_one_node(&c->node);
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *ins[2];
    int nin = 0;
    for (; nin < 2 && v[nin].name; nin++) {
        ins[nin] = ow_tensor(dl_type(v[nin].elem_type), v[nin].ndim, v[nin].shape);
        fill(rng, ins[nin], c->lo, c->hi);
    }
    if (c->fixed) {
        ow_set(ins[0], 0, 0.333333333333);
        ow_set(ins[0], 1, -1e-6); /* a float16 subnormal */
    }
    const DLTensor *y = ow_run(e, nin, ins, 0);
    DLDataType t = dl_type(c->out);
    assert_true(y->dtype.code == t.code && y->dtype.bits == t.bits);
    for (int64_t i = 0; i < ow_numel(ins[0]); i++) {
        double x[2];
        for (int k = 0; k < nin; k++)
            x[k] = ow_get(ins[k], ow_bcast_index(v[0].ndim, v[0].shape, i, v[k].ndim, v[k].shape));
        check(c->name, t, y, i, round_to(t, c->ref(x)));
    }
    for (int k = 0; k < nin; k++) rt_tensor_free(ins[k]);
    ow_finish(w, e, m);
}

static void test_cases(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        /* ow_compile_ok's and ow_run's failures do not name the case: it comes first. */
        printf("case %s\n", cases[i].name);
        run_case(&rng, &cases[i]);
    }
}

/* A float32 tensor for a float16 input is refused by name. */
static void test_wrong_dtype(void **state)
{
    (void)state;
    const int64_t xs[1] = {4};
    ow_model *w = ow_one_node(&(ow_node_spec){13, "Relu", "x", {OW_IN("x", GR_FLOAT16, 1, 4)}, {{0}}});
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(F32, 1, xs);
    char *err = NULL;
    assert_int_not_equal(gr_run(e, 1, &x, 0, NULL, &err), 0);
    assert_non_null(err);
    if (!strstr(err, "input 0 ('x') has dtype code 2 bits 32, the model's is float16"))
        fail_msg("unexpected message: %s", err);
    free(err);
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_wrong_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
