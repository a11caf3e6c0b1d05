/*
 * graph/lower_mvn.c and infer_mvn.c: MeanVarianceNormalization as
 * one-node models run through gr_compile/gr_run on fresh random data
 * (outputs poisoned first) against a naive double reference of ONNX's
 * function body ((x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over the
 * axes): the default axes [0, 2, 3], one axis, a negative axis, every
 * axis, float and double; and every refusal's message.
 *
 * Tolerance: float32 within 1e-4 relative + 1e-4 absolute (the variance
 * is E[x^2] - E[x]^2 in float32, as ONNX's function computes it, which
 * cancels digits: data has mean about 1 and variance about 3 here);
 * float64 within 1e-9.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, F64 = {kDLFloat, 64, 1};

static void run_case(uint64_t *rng, DLDataType t, int nd, const int64_t *xs, int na, const int64_t *axes)
{
    ow_model *w = ow_new(13);
    ow_input(w, "x", ow_elem_type(t), nd, xs);
    ow_node *n = ow_node_add(w, "", "MeanVarianceNormalization", "x", "y");
    if (na) ow_attr_ints(n, "axes", na, axes);
    ow_output(w, "y");
    bool red[8] = {false};
    if (!na) red[0] = red[2] = red[3] = true;
    for (int i = 0; i < na; i++) red[axes[i] < 0 ? axes[i] + nd : axes[i]] = true;
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, nd, xs);
    int64_t nx = ow_numel(x), st[8];
    for (int64_t i = 0; i < nx; i++) ow_set(x, i, tu_rand_uniform(rng, -2, 4));
    st[nd - 1] = 1;
    for (int d = nd - 2; d >= 0; d--) st[d] = st[d + 1] * xs[d + 1];
    const DLTensor *y = ow_run(e, 1, &x, 0);
    for (int64_t i = 0; i < nx; i++) {
        /* the group of i: the elements equal to it off the reduced axes */
        double s = 0, sq = 0, cnt = 0;
        for (int64_t j = 0; j < nx; j++) {
            bool same = true;
            for (int d = 0; d < nd && same; d++)
                same = red[d] || (i / st[d]) % xs[d] == (j / st[d]) % xs[d];
            if (!same) continue;
            s += ow_get(x, j);
            sq += ow_get(x, j) * ow_get(x, j);
            cnt++;
        }
        double mean = s / cnt, want = (ow_get(x, i) - mean) / (sqrt(sq / cnt - mean * mean) + 1e-9);
        double tol = t.bits == 32 ? 1e-4 * (1 + fabs(want)) : 1e-9 * (1 + fabs(want));
        if (!(fabs(ow_get(y, i) - want) <= tol))
            fail_msg("MVN element %lld: got %.9g, expected %.9g", (long long)i, ow_get(y, i), want);
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_mvn(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    run_case(&rng, F32, 4, (int64_t[]){2, 3, 4, 5}, 0, NULL);
    run_case(&rng, F64, 4, (int64_t[]){3, 2, 3, 2}, 0, NULL);
    run_case(&rng, F32, 3, (int64_t[]){4, 6, 5}, 1, (int64_t[]){1});
    run_case(&rng, F32, 3, (int64_t[]){4, 6, 5}, 2, (int64_t[]){0, -1});
    run_case(&rng, F64, 2, (int64_t[]){5, 7}, 2, (int64_t[]){1, 0});
}

static const ow_error_case errors[] = {
    {{13, "MeanVarianceNormalization", NULL, {OW_IN("x", GR_INT32, 4, 1, 2, 2, 2)}, {{0}}},
     {"node 'n0' (MeanVarianceNormalization)", "input X is int32; MeanVarianceNormalization takes float or double"}},
    {{13, "MeanVarianceNormalization", NULL, {OW_IN("x", GR_FLOAT, 4, 1, 2, 2, 2)}, {OW_AI("axes", 1)}},
     {"(MeanVarianceNormalization)", "attribute 'axes' must be a list of at most 4 ints (the rank)"}},
    {{13, "MeanVarianceNormalization", NULL, {OW_IN("x", GR_FLOAT, 3, 1, 2, 2)}, {{0}}},
     {"(MeanVarianceNormalization)", "axis 3 of attribute 'axes' (default [0, 2, 3]) is out of range for rank 3"}},
    {{13, "MeanVarianceNormalization", NULL, {OW_IN("x", GR_FLOAT, 3, 1, 2, 2)}, {OW_AIS("axes", 1, -4)}},
     {"(MeanVarianceNormalization)", "axis -4 of attribute 'axes' is out of range for rank 3"}},
    {{13, "MeanVarianceNormalization", NULL, {OW_IN("x", GR_FLOAT, 3, 1, 2, 2)}, {OW_AIS("axes", 2, 1, -2)}},
     {"(MeanVarianceNormalization)", "attribute 'axes' repeats axis 1"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mvn),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
