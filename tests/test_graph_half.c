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

static const DLDataType F16 = {kDLFloat, 16, 1}, BF16 = {kDLBfloat, 16, 1}, F32 = {kDLFloat, 32, 1},
                        F64 = {kDLFloat, 64, 1};

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

static void binary_case(uint64_t *rng, DLDataType t, const char *op)
{
    const int64_t xs[2] = {3, 5}, bs[1] = {5};
    ow_model *w = ow_new(13);
    ow_input(w, "a", ow_elem_type(t), 2, xs);
    ow_input(w, "b", ow_elem_type(t), 1, bs);
    ow_node_add(w, "", op, "a,b", "y");
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *a = ow_tensor(t, 2, xs), *b = ow_tensor(t, 1, bs);
    fill(rng, a, -50, 50);
    fill(rng, b, -50, 50);
    DLTensor *ins[2] = {a, b};
    const DLTensor *y = ow_run(e, 2, ins, 0);
    assert_true(y->dtype.code == t.code && y->dtype.bits == 16);
    for (int64_t i = 0; i < 15; i++) {
        double x0 = ow_get(a, i), x1 = ow_get(b, i % 5);
        double r = strcmp(op, "Add") == 0 ? x0 + x1 : fmax(x0, x1);
        check(op, t, y, i, round_to(t, r));
    }
    rt_tensor_free(a);
    rt_tensor_free(b);
    ow_finish(w, e, m);
}

static void test_binary(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    binary_case(&rng, F16, "Add");
    binary_case(&rng, F16, "Max");
    binary_case(&rng, BF16, "Add");
}

static void test_sigmoid_float16(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t xs[3] = {2, 3, 7};
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT16, 3, xs);
    ow_node_add(w, "", "Sigmoid", "x", "y");
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(F16, 3, xs);
    fill(&rng, x, -8, 8);
    DLTensor *ins[1] = {x};
    const DLTensor *y = ow_run(e, 1, ins, 0);
    for (int64_t i = 0; i < ow_numel(x); i++)
        check("Sigmoid", F16, y, i, round_to(F16, 1 / (1 + exp(-ow_get(x, i)))));
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void cast_case(uint64_t *rng, DLDataType from, DLDataType to)
{
    const int64_t xs[2] = {4, 6};
    ow_model *w = ow_new(13);
    ow_input(w, "x", ow_elem_type(from), 2, xs);
    ow_node *n = ow_node_add(w, "", "Cast", "x", "y");
    ow_attr_int(n, "to", ow_elem_type(to));
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(from, 2, xs);
    fill(rng, x, -1000, 1000);
    ow_set(x, 0, 0.333333333333);
    ow_set(x, 1, -1e-6); /* a float16 subnormal */
    DLTensor *ins[1] = {x};
    const DLTensor *y = ow_run(e, 1, ins, 0);
    char what[64];
    snprintf(what, sizeof what, "Cast %d/%d to %d/%d", from.code, from.bits, to.code, to.bits);
    for (int64_t i = 0; i < ow_numel(x); i++) check(what, to, y, i, round_to(to, ow_get(x, i)));
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_cast(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    cast_case(&rng, F32, F16);
    cast_case(&rng, F64, F16);
    cast_case(&rng, F16, F32);
    cast_case(&rng, F16, F64);
    cast_case(&rng, F32, BF16);
    cast_case(&rng, BF16, F32);
}

/* A float32 tensor for a float16 input is refused by name. */
static void test_wrong_dtype(void **state)
{
    (void)state;
    const int64_t xs[1] = {4};
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT16, 1, xs);
    ow_node_add(w, "", "Relu", "x", "y");
    ow_output(w, "y");
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
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_sigmoid_float16),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_wrong_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
