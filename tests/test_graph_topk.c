/*
 * graph/infer_topk.c and lower_topk.c: TopK as one-node models run
 * through gr_compile/gr_run on fresh random data (outputs poisoned
 * first) against a naive reference: a stable selection per slice, ties
 * to the lower index, largest and smallest, axis first, middle and last
 * (negative), k from the attribute (opset 1) and from an initializer
 * (opset 11), float and int32 data with many ties; and every refusal's
 * message.
 *
 * Tolerance: exact (TopK only moves elements).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, I32 = {kDLInt, 32, 1};

/* Whether element at position a beats the one at b (values va, vb). */
static bool beats(double va, int64_t a, double vb, int64_t b, bool largest)
{
    if (va != vb) return largest ? va > vb : va < vb;
    return a < b;
}

static void topk_case(uint64_t *rng, DLDataType t, int r, const int64_t *xs, int axis, int64_t k,
                      bool largest, int64_t opset)
{
    ow_model *w = ow_new(opset);
    ow_input(w, "x", ow_elem_type(t), r, xs);
    ow_node *n;
    if (opset < 10) {
        n = ow_node_add(w, "", "TopK", "x", "v,i");
        ow_attr_int(n, "k", k);
    } else {
        ow_init(w, "k", GR_INT64, 1, (int64_t[]){1}, &k, sizeof k);
        n = ow_node_add(w, "", "TopK", "x,k", "v,i");
    }
    ow_attr_int(n, "axis", axis - (axis == r - 1 ? r : 0)); /* the last one as -1 */
    if (!largest) ow_attr_int(n, "largest", 0);
    ow_output(w, "v");
    ow_output(w, "i");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, r, xs);
    /* few distinct values: ties everywhere */
    for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, floor(tu_rand_uniform(rng, -4, 4)));
    DLTensor *ins[1] = {x};
    const DLTensor *v = ow_run(e, 1, ins, 0);
    const DLTensor *ix = gr_exec_output(e, 1);
    int64_t outer = 1, inner = 1, dim = xs[axis];
    for (int d = 0; d < axis; d++) outer *= xs[d];
    for (int d = axis + 1; d < r; d++) inner *= xs[d];
    assert_int_equal(ow_numel(v), outer * k * inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            bool taken[64] = {false};
            assert_true(dim <= 64);
            for (int64_t j = 0; j < k; j++) {
                int64_t best = -1;
                for (int64_t p = 0; p < dim; p++) {
                    if (taken[p]) continue;
                    double vp = ow_get(x, (o * dim + p) * inner + in);
                    if (best < 0 || beats(vp, p, ow_get(x, (o * dim + best) * inner + in), best, largest))
                        best = p;
                }
                taken[best] = true;
                int64_t at = (o * k + j) * inner + in;
                double want = ow_get(x, (o * dim + best) * inner + in);
                if (ow_get(v, at) != want || ow_get(ix, at) != (double)best)
                    fail_msg("TopK axis %d k %lld %s: output %lld is (%g, %g), expected (%g, %lld)", axis,
                             (long long)k, largest ? "largest" : "smallest", (long long)at, ow_get(v, at),
                             ow_get(ix, at), want, (long long)best);
            }
        }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_topk(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    topk_case(&rng, F32, 2, (int64_t[]){3, 9}, 1, 4, true, 11);
    topk_case(&rng, F32, 2, (int64_t[]){3, 9}, 1, 9, false, 11);
    topk_case(&rng, I32, 3, (int64_t[]){7, 2, 3}, 0, 3, true, 11);
    topk_case(&rng, F32, 3, (int64_t[]){2, 13, 3}, 1, 5, false, 11);
    topk_case(&rng, F32, 3, (int64_t[]){2, 3, 5}, 2, 1, true, 1);
    topk_case(&rng, I32, 1, (int64_t[]){40}, 0, 7, true, 10);
    topk_case(&rng, F32, 2, (int64_t[]){3, 9}, 1, 0, true, 11); /* empty outputs */
}

#define XT OW_IN("x", GR_FLOAT, 2, 3, 4)
static const ow_error_case errors[] = {
    {{11, "TopK", "x,k", {XT, OW_VEC("k", GR_INT64, 1, 5)}, {{0}}},
     {"node 'n0' (TopK)", "k is 5; it must be in [0, 4] (dimension 1 of X)"}},
    {{11, "TopK", "x,k", {XT, OW_VEC("k", GR_INT64, 1, 2)}, {OW_AI("axis", 2)}},
     {"(TopK)", "attribute 'axis' 2 is out of range for rank 2"}},
    {{11, "TopK", "x,k", {XT, OW_VEC("k", GR_INT32, 1, 2)}, {{0}}}, {"(TopK)", "input 'K' is int32, not int64"}},
    {{11, "TopK", "x,k", {XT, OW_IN("k", GR_INT64, 1, 1)}, {{0}}},
     {"(TopK)", "input 'K' ('k') must be a constant"}},
    {{11, "TopK", "x,k", {XT, OW_VEC("k", GR_INT64, 1, 2)}, {OW_AI("largest", 2)}},
     {"(TopK)", "attributes 'largest' (2) and 'sorted' (1) must be 0 or 1"}},
    {{10, "TopK", "x,k", {XT, OW_VEC("k", GR_INT64, 1, 2)}, {OW_AI("largest", 0)}},
     {"(TopK)", "attributes 'largest' and 'sorted' are not defined before opset 11"}},
    {{1, "TopK", "x", {XT}, {{0}}}, {"(TopK)", "attribute 'k' (an int) is required before opset 10"}},
    {{11, "TopK", "x,k", {OW_IN("x", GR_BOOL, 1, 4), OW_VEC("k", GR_INT64, 1, 2)}, {{0}}},
     {"(TopK)", "input X is bool; TopK takes numbers"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topk),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
