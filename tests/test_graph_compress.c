/*
 * graph/infer_compress.c and lower_compress.c: Compress with a constant
 * condition as one-node models run through gr_compile/gr_run on fresh
 * random data and conditions (outputs poisoned first) against a naive
 * reference: along each axis (negative too), without an axis (the
 * flattened input), conditions shorter than the axis, single runs and
 * many; float and int32 data; and every refusal's message (a condition
 * known only at run time among them: the output's shape would depend on
 * it).
 *
 * Tolerance: exact (Compress only moves elements).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, I32 = {kDLInt, 32, 1};

/* axis: -99 for none; `len` condition entries, random unless all true. */
static void compress_case(uint64_t *rng, DLDataType t, int r, const int64_t *xs, int axis, int64_t len)
{
    unsigned char cond[256];
    int64_t count = 0;
    assert_true(len <= 256);
    for (int64_t i = 0; i < len; i++) {
        cond[i] = tu_rand_uniform(rng, 0, 1) < 0.5;
        count += cond[i];
    }
    if (!count) {
        cond[len - 1] = 1;
        count = 1;
    }
    ow_model *w = ow_new(11);
    ow_input(w, "x", ow_elem_type(t), r, xs);
    ow_init(w, "c", GR_BOOL, 1, &len, cond, (size_t)len);
    ow_node *n = ow_node_add(w, "", "Compress", "x,c", "y");
    if (axis != -99) ow_attr_int(n, "axis", axis);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, r, xs);
    for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, floor(tu_rand_uniform(rng, -1000, 1000)));
    DLTensor *ins[1] = {x};
    const DLTensor *y = ow_run(e, 1, ins, 0);
    int64_t o = 0;
    if (axis == -99) {
        assert_int_equal(ow_numel(y), count);
        for (int64_t i = 0; i < len; i++)
            if (cond[i] && ow_get(y, o++) != ow_get(x, i))
                fail_msg("Compress (no axis) output %lld: got %g, expected %g", (long long)o - 1, ow_get(y, o - 1),
                         ow_get(x, i));
    } else {
        int a = axis < 0 ? axis + r : axis;
        int64_t outer = 1, inner = 1;
        for (int d = 0; d < a; d++) outer *= xs[d];
        for (int d = a + 1; d < r; d++) inner *= xs[d];
        assert_int_equal(ow_numel(y), outer * count * inner);
        for (int64_t p = 0; p < outer; p++)
            for (int64_t i = 0; i < len; i++) {
                if (!cond[i]) continue;
                for (int64_t q = 0; q < inner; q++, o++) {
                    double want = ow_get(x, (p * xs[a] + i) * inner + q);
                    if (ow_get(y, o) != want)
                        fail_msg("Compress axis %d output %lld: got %g, expected %g", axis, (long long)o, ow_get(y, o),
                                 want);
                }
            }
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

/* A condition selecting nothing: an empty output, known at compile time
 * (no kernel), its shape given back. */
static void test_compress_nothing(void **state)
{
    (void)state;
    ow_model *w = ow_new(11);
    ow_input(w, "x", GR_FLOAT, 2, (int64_t[]){3, 4});
    unsigned char none[3] = {0, 0, 0};
    ow_init(w, "c", GR_BOOL, 1, (int64_t[]){3}, none, 3);
    ow_attr_int(ow_node_add(w, "", "Compress", "x,c", "y"), "axis", 0);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    assert_int_equal(gr_exec_num_kernels(e), 0);
    DLTensor *x = ow_tensor((DLDataType){kDLFloat, 32, 1}, 2, (int64_t[]){3, 4});
    const DLTensor *y = ow_run(e, 1, &x, 0);
    assert_true(y->ndim == 2 && y->shape[0] == 0 && y->shape[1] == 4);
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_compress(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    compress_case(&rng, F32, 2, (int64_t[]){6, 4}, 0, 6);
    compress_case(&rng, I32, 3, (int64_t[]){3, 40, 2}, 1, 40);
    compress_case(&rng, F32, 3, (int64_t[]){3, 4, 9}, -1, 5);
    compress_case(&rng, F32, 2, (int64_t[]){5, 7}, -99, 35);
    compress_case(&rng, I32, 2, (int64_t[]){5, 7}, -99, 12);
}

#define XC OW_IN("x", GR_FLOAT, 2, 3, 4)
static const ow_error_case errors[] = {
    {{11, "Compress", "x,c", {XC, OW_IN("c", GR_BOOL, 1, 3)}, {OW_AI("axis", 0)}},
     {"node 'n0' (Compress)", "input 'condition' ('c') must be a constant"}},
    {{11, "Compress", "x,c", {XC, OW_VEC("c", GR_BOOL, 4, 0, 1, 0, 1)}, {OW_AI("axis", 0)}},
     {"(Compress)", "input 'condition' selects position 3, past the 3 positions along the axis"}},
    {{11, "Compress", "x,c", {XC, OW_VEC("c", GR_INT64, 2, 0, 1)}, {{0}}},
     {"(Compress)", "input 'condition' must be a rank-1 bool tensor (it is int64 of rank 1)"}},
    {{11, "Compress", "x,c", {XC, OW_VEC("c", GR_BOOL, 2, 0, 1)}, {OW_AI("axis", 2)}},
     {"(Compress)", "attribute 'axis' 2 is out of range for rank 2"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compress), cmocka_unit_test(test_compress_nothing),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
