/*
 * graph/lower_select.c and infer_select.c: GatherND and ReverseSequence
 * as one-node models run through gr_compile/gr_run on fresh random data
 * and indices (outputs poisoned first) against a naive reference of
 * ONNX's definitions: GatherND with batch_dims 0, 1 and 2, index tuples
 * addressing all of data (scalar slices) or a prefix, negative indices;
 * ReverseSequence with either time axis, lengths from 1 to the full
 * time; float and int32 data; and every refusal's message.
 *
 * Tolerance: exact (both only move elements).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, I32 = {kDLInt, 32, 1}, I64 = {kDLInt, 64, 1};

static int64_t numel(int n, const int64_t *s)
{
    int64_t v = 1;
    for (int d = 0; d < n; d++) v *= s[d];
    return v;
}

static void gather_nd_case(uint64_t *rng, DLDataType t, int r, const int64_t *xs, int q, const int64_t *is,
                           int b)
{
    ow_model *w = ow_new(13);
    ow_input(w, "x", ow_elem_type(t), r, xs);
    ow_input(w, "i", GR_INT64, q, is);
    ow_node *n = ow_node_add(w, "", "GatherND", "x,i", "y");
    if (b) ow_attr_int(n, "batch_dims", b);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, r, xs), *ix = ow_tensor(I64, q, is);
    for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, floor(tu_rand_uniform(rng, -1000, 1000)));
    int k = (int)is[q - 1];
    for (int64_t i = 0; i < ow_numel(ix); i++) {
        int64_t dim = xs[b + i % k];
        ow_set(ix, i, floor(tu_rand_uniform(rng, (double)-dim, (double)dim)));
    }
    DLTensor *ins[2] = {x, ix};
    const DLTensor *y = ow_run(e, 2, ins, 0);
    int64_t nouter = numel(q - 1, is), ninner = numel(r - b - k, xs + b + k);
    assert_int_equal(ow_numel(y), nouter * ninner);
    for (int64_t o = 0; o < nouter; o++)
        for (int64_t j = 0; j < ninner; j++) {
            /* the batch part of o: its leading b dimensions */
            int64_t bidx = o / numel(q - 1 - b, is + b), at = bidx;
            for (int t2 = 0; t2 < k; t2++) {
                int64_t v = (int64_t)ow_get(ix, o * k + t2);
                at = at * xs[b + t2] + (v < 0 ? v + xs[b + t2] : v);
            }
            at = at * ninner + j;
            double want = ow_get(x, at), got = ow_get(y, o * ninner + j);
            if (got != want)
                fail_msg("GatherND batch_dims %d element %lld: got %g, expected %g", b, (long long)(o * ninner + j),
                         got, want);
        }
    rt_tensor_free(x);
    rt_tensor_free(ix);
    ow_finish(w, e, m);
}

static void test_gather_nd(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    gather_nd_case(&rng, F32, 3, (int64_t[]){3, 4, 5}, 2, (int64_t[]){6, 3}, 0);
    gather_nd_case(&rng, I32, 3, (int64_t[]){3, 4, 5}, 3, (int64_t[]){2, 2, 1}, 0);
    gather_nd_case(&rng, F32, 3, (int64_t[]){3, 4, 5}, 1, (int64_t[]){2}, 0);
    gather_nd_case(&rng, F32, 4, (int64_t[]){2, 3, 4, 5}, 3, (int64_t[]){2, 7, 2}, 1);
    gather_nd_case(&rng, I32, 4, (int64_t[]){2, 3, 4, 5}, 3, (int64_t[]){2, 3, 2}, 2);
}

static void reverse_case(uint64_t *rng, DLDataType t, int nd, const int64_t *xs, int tax)
{
    int bax = 1 - tax;
    ow_model *w = ow_new(10);
    ow_input(w, "x", ow_elem_type(t), nd, xs);
    ow_input(w, "l", GR_INT64, 1, &xs[bax]);
    ow_node *n = ow_node_add(w, "", "ReverseSequence", "x,l", "y");
    if (tax) {
        ow_attr_int(n, "time_axis", 1);
        ow_attr_int(n, "batch_axis", 0);
    }
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, nd, xs), *l = ow_tensor(I64, 1, &xs[bax]);
    for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, floor(tu_rand_uniform(rng, -1000, 1000)));
    for (int64_t i = 0; i < xs[bax]; i++)
        ow_set(l, i, i == 0 ? (double)xs[tax] : floor(tu_rand_uniform(rng, 1, (double)xs[tax] + 1)));
    DLTensor *ins[2] = {x, l};
    const DLTensor *y = ow_run(e, 2, ins, 0);
    int64_t inner = numel(nd - 2, xs + 2);
    for (int64_t i = 0; i < ow_numel(x); i++) {
        int64_t a0 = i / (xs[1] * inner), a1 = (i / inner) % xs[1], rest = i % inner;
        int64_t tt = tax ? a1 : a0, bb = tax ? a0 : a1, len = (int64_t)ow_get(l, bb);
        int64_t src = tt < len ? len - 1 - tt : tt;
        int64_t s0 = tax ? a0 : src, s1 = tax ? src : a1;
        double want = ow_get(x, (s0 * xs[1] + s1) * inner + rest);
        if (ow_get(y, i) != want)
            fail_msg("ReverseSequence element %lld: got %g, expected %g", (long long)i, ow_get(y, i), want);
    }
    rt_tensor_free(x);
    rt_tensor_free(l);
    ow_finish(w, e, m);
}

static void test_reverse_sequence(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    reverse_case(&rng, F32, 3, (int64_t[]){5, 4, 3}, 0);
    reverse_case(&rng, I32, 2, (int64_t[]){3, 6}, 1);
    reverse_case(&rng, F32, 4, (int64_t[]){4, 7, 2, 2}, 1);
}

#define XI OW_IN("x", GR_FLOAT, 2, 3, 4)
static const ow_error_case errors[] = {
    {{13, "GatherND", "x,i", {XI, OW_IN("i", GR_INT32, 2, 2, 2)}, {{0}}},
     {"node 'n0' (GatherND)", "input 'indices' is int32, not int64"}},
    {{13, "GatherND", "x,i", {OW_IN("x", GR_FLOAT, 0, 0), OW_IN("i", GR_INT64, 1, 1)}, {{0}}},
     {"(GatherND)", "inputs data and indices must have rank >= 1 (0, 1)"}},
    {{11, "GatherND", "x,i", {XI, OW_IN("i", GR_INT64, 2, 3, 1)}, {OW_AI("batch_dims", 1)}},
     {"(GatherND)", "attribute 'batch_dims' is not defined before opset 12"}},
    {{13, "GatherND", "x,i", {XI, OW_IN("i", GR_INT64, 2, 3, 1)}, {OW_AF("batch_dims", 1)}},
     {"(GatherND)", "attribute 'batch_dims' must be an int"}},
    {{13, "GatherND", "x,i", {XI, OW_IN("i", GR_INT64, 2, 3, 1)}, {OW_AI("batch_dims", 2)}},
     {"(GatherND)", "attribute 'batch_dims' is 2; it must be in [0, 2) (below both ranks)"}},
    {{13, "GatherND", "x,i", {XI, OW_IN("i", GR_INT64, 2, 2, 1)}, {OW_AI("batch_dims", 1)}},
     {"(GatherND)", "batch dimension 0 differs: indices 2, data 3"}},
    {{13, "GatherND", "x,i", {XI, OW_IN("i", GR_INT64, 2, 2, 3)}, {{0}}},
     {"(GatherND)", "input indices' last dimension is 3; it must be in [1, 2] (data's rank less batch_dims)"}},
    {{10, "ReverseSequence", "x,l", {OW_IN("x", GR_FLOAT, 1, 3), OW_IN("l", GR_INT64, 1, 3)}, {{0}}},
     {"(ReverseSequence)", "input has rank 1; ReverseSequence needs rank >= 2"}},
    {{10, "ReverseSequence", "x,l", {XI, OW_IN("l", GR_INT64, 1, 4)}, {OW_AI("time_axis", 1)}},
     {"(ReverseSequence)", "attributes time_axis (1) and batch_axis (1) must be 0 and 1 in some order"}},
    {{10, "ReverseSequence", "x,l", {XI, OW_IN("l", GR_INT32, 1, 4)}, {{0}}},
     {"(ReverseSequence)", "input 'sequence_lens' is int32, not int64"}},
    {{10, "ReverseSequence", "x,l", {XI, OW_IN("l", GR_INT64, 1, 3)}, {{0}}},
     {"(ReverseSequence)", "input 'sequence_lens' must have shape [4] (the batch)"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gather_nd),
        cmocka_unit_test(test_reverse_sequence),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
