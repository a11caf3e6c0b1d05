/*
 * graph/infer_upsample.c and lower_upsample.c: Upsample (nearest) as
 * one-node models run through gr_compile/gr_run on fresh random data
 * (outputs poisoned first) against a naive reference, with the scales
 * as the attribute (opset 7) and as a constant input (opset 9), integer
 * and fractional scales, float and int32 data; and every refusal's
 * message.
 *
 * Tolerance: exact (Upsample only copies elements).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, I32 = {kDLInt, 32, 1};

static void up_case(uint64_t *rng, DLDataType t, int64_t opset, const int64_t *xs, const float *sc)
{
    ow_model *w = ow_new(opset);
    ow_input(w, "x", ow_elem_type(t), 4, xs);
    ow_node *n;
    if (opset >= 9) {
        ow_init(w, "s", GR_FLOAT, 1, (int64_t[]){4}, sc, 16);
        n = ow_node_add(w, "", "Upsample", "x,s", "y");
    } else {
        n = ow_node_add(w, "", "Upsample", "x", "y");
        float f[4] = {sc[0], sc[1], sc[2], sc[3]};
        ow_attr_floats(n, "scales", 4, f);
    }
    ow_attr_str(n, "mode", "nearest");
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, 4, xs);
    for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, floor(tu_rand_uniform(rng, -100, 100)));
    const DLTensor *y = ow_run(e, 1, &x, 0);
    int64_t ys[4];
    for (int d = 0; d < 4; d++) ys[d] = (int64_t)floor((double)xs[d] * sc[d]);
    assert_int_equal(ow_numel(y), ys[0] * ys[1] * ys[2] * ys[3]);
    for (int64_t o = 0; o < ow_numel(y); o++) {
        int64_t r = o, src = 0, stride = 1, idx[4];
        for (int d = 3; d >= 0; d--) {
            idx[d] = r % ys[d];
            r /= ys[d];
        }
        for (int d = 3; d >= 0; d--) {
            int64_t s = (int64_t)floor((double)idx[d] / sc[d]);
            src += (s < xs[d] ? s : xs[d] - 1) * stride;
            stride *= xs[d];
        }
        if (ow_get(y, o) != ow_get(x, src))
            fail_msg("Upsample output %lld: got %g, expected %g", (long long)o, ow_get(y, o), ow_get(x, src));
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_upsample(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    up_case(&rng, F32, 9, (int64_t[]){1, 2, 3, 4}, (float[]){1, 1, 2, 3});
    up_case(&rng, I32, 7, (int64_t[]){2, 1, 3, 3}, (float[]){1, 2, 1.5f, 2});
    up_case(&rng, F32, 9, (int64_t[]){1, 1, 5, 2}, (float[]){1, 1, 1.7f, 2.5f});
}

#define UX OW_IN("x", GR_FLOAT, 2, 3, 4)
static const ow_error_case errors[] = {
    {{9, "Upsample", "x,s", {UX, OW_VEC("s", GR_FLOAT, 2, 1, 2)}, {OW_AS("mode", "linear")}},
     {"node 'n0' (Upsample)", "mode 'linear' is not supported (only nearest)"}},
    {{9, "Upsample", "x,s", {UX, OW_VEC("s", GR_FLOAT, 2, 1, 0.5)}, {{0}}},
     {"(Upsample)", "scales must be >= 1 (Upsample only enlarges)"}},
    {{9, "Upsample", "x,s", {UX, OW_VEC("s", GR_FLOAT, 3, 1, 2, 2)}, {{0}}},
     {"(Upsample)", "scales must hold one value per dimension of X"}},
    {{9, "Upsample", "x,s", {UX, OW_IN("s", GR_FLOAT, 1, 2)}, {{0}}},
     {"(Upsample)", "input 'scales' ('s') must be a constant"}},
    {{9, "Upsample", "x,s", {UX, OW_VEC("s", GR_DOUBLE, 2, 1, 2)}, {{0}}},
     {"(Upsample)", "input 'scales' must be a constant 1-D float tensor"}},
    {{7, "Upsample", "x", {UX}, {{0}}}, {"(Upsample)", "attribute 'scales' (floats) is required before opset 9"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upsample),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
