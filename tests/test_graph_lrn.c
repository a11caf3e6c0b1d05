/*
 * graph/lower_lrn.c and infer_lrn.c: LRN as one-node models run through
 * gr_compile/gr_run on fresh random data (outputs poisoned first) against
 * a naive double reference of ONNX's definition: even and odd window
 * sizes (the window's halves differ for even ones), a window wider than
 * the channels, ranks 3 to 5, default and given attributes, float and
 * double; and every refusal's message.
 *
 * Tolerance: float32 within 1e-5 relative + 1e-6 absolute of the double
 * reference of the same float32 inputs (a sum of at most 9 squares, a pow
 * and a division), float64 within 1e-12.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, F64 = {kDLFloat, 64, 1};

static void run_case(uint64_t *rng, DLDataType t, int nd, const int64_t *xs, int64_t size, bool attrs)
{
    ow_model *w = ow_new(13);
    ow_input(w, "x", ow_elem_type(t), nd, xs);
    ow_node *n = ow_node_add(w, "", "LRN", "x", "y");
    ow_attr_int(n, "size", size);
    double alpha = 1e-4, beta = 0.75, bias = 1;
    if (attrs) {
        alpha = (double)0.3f, beta = (double)0.6f, bias = (double)2.5f;
        ow_attr_float(n, "alpha", 0.3f);
        ow_attr_float(n, "beta", 0.6f);
        ow_attr_float(n, "bias", 2.5f);
    }
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, nd, xs);
    for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, tu_rand_uniform(rng, -3, 3));
    const DLTensor *y = ow_run(e, 1, &x, 0);
    int64_t C = xs[1], inner = 1;
    for (int d = 2; d < nd; d++) inner *= xs[d];
    for (int64_t i = 0; i < ow_numel(x); i++) {
        int64_t c = (i / inner) % C, base = i - c * inner;
        double s = 0;
        for (int64_t q = c - (size - 1) / 2; q <= c + size / 2; q++)
            if (q >= 0 && q < C) s += ow_get(x, base + q * inner) * ow_get(x, base + q * inner);
        double want = ow_get(x, i) / pow(bias + alpha / (double)size * s, beta);
        double tol = t.bits == 32 ? 1e-6 + 1e-5 * fabs(want) : 1e-12 * (1 + fabs(want));
        if (!(fabs(ow_get(y, i) - want) <= tol))
            fail_msg("LRN size %lld element %lld: got %.9g, expected %.9g", (long long)size, (long long)i,
                     ow_get(y, i), want);
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_lrn(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    run_case(&rng, F32, 4, (int64_t[]){2, 7, 3, 4}, 3, false);
    run_case(&rng, F32, 4, (int64_t[]){1, 6, 2, 5}, 4, true);
    run_case(&rng, F64, 3, (int64_t[]){2, 5, 6}, 9, true);
    run_case(&rng, F32, 5, (int64_t[]){1, 8, 2, 2, 3}, 1, true);
}

static const ow_error_case errors[] = {
    {{13, "LRN", NULL, {OW_IN("x", GR_FLOAT, 4, 1, 3, 2, 2)}, {{0}}},
     {"node 'n0' (LRN)", "attribute 'size' (an int) is missing"}},
    {{13, "LRN", NULL, {OW_IN("x", GR_FLOAT, 4, 1, 3, 2, 2)}, {OW_AI("size", 0)}},
     {"(LRN)", "attribute 'size' is 0; it must be >= 1"}},
    {{13, "LRN", NULL, {OW_IN("x", GR_FLOAT, 4, 1, 3, 2, 2)}, {OW_AI("size", 3), OW_AI("beta", 1)}},
     {"(LRN)", "attribute 'beta' must be a float"}},
    {{13, "LRN", NULL, {OW_IN("x", GR_INT32, 4, 1, 3, 2, 2)}, {OW_AI("size", 3)}},
     {"(LRN)", "input X is int32; LRN is defined for float types only"}},
    {{13, "LRN", NULL, {OW_IN("x", GR_FLOAT, 1, 3)}, {OW_AI("size", 3)}},
     {"(LRN)", "input X has rank 1; LRN needs [N, C, ...]"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lrn),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
