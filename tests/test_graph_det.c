/*
 * graph/infer_det.c and lower_det.c: Det as one-node models run through
 * gr_compile/gr_run on fresh random data (the output poisoned first)
 * against a double-precision LU decomposition with partial pivoting (a
 * different algorithm from Loom's Leibniz expansion): a batch of 4 x 4
 * float matrices, one 5 x 5 double matrix (a scalar output), 1 x 1, and
 * float16 3 x 3; and every refusal's message.
 *
 * Tolerance: Loom sums the M! products of float-typed entries exactly
 * enough in float64 and rounds once to X's type, so |err| <= u |det| +
 * 1e-12 (u = 2^-24 float, 2^-53 double, 2^-11 float16) plus the
 * reference's own error, bounded by 1e-12 relative to the products'
 * sizes (entries in [-1, 1]: at most M! = 120).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

/* det of the m x m row-major a (destroyed), by LU with partial pivoting */
static double lu_det(double *a, int m)
{
    double det = 1;
    for (int k = 0; k < m; k++) {
        int p = k;
        for (int i = k + 1; i < m; i++)
            if (fabs(a[i * m + k]) > fabs(a[p * m + k])) p = i;
        if (a[p * m + k] == 0) return 0;
        if (p != k) {
            for (int j = 0; j < m; j++) {
                double t = a[k * m + j];
                a[k * m + j] = a[p * m + j], a[p * m + j] = t;
            }
            det = -det;
        }
        det *= a[k * m + k];
        for (int i = k + 1; i < m; i++) {
            double f = a[i * m + k] / a[k * m + k];
            for (int j = k; j < m; j++) a[i * m + j] -= f * a[k * m + j];
        }
    }
    return det;
}

static void det_case(uint64_t *rng, DLDataType t, int r, const int64_t *xs, double u)
{
    ow_model *w = ow_new(11);
    ow_input(w, "x", ow_elem_type(t), r, xs);
    ow_node_add(w, "", "Det", "x", "y");
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(t, r, xs);
    for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, tu_rand_uniform(rng, -1, 1));
    DLTensor *ins[1] = {x};
    const DLTensor *y = ow_run(e, 1, ins, 0);
    int mm = (int)xs[r - 1];
    int64_t batch = ow_numel(x) / (mm * mm);
    assert_int_equal(ow_numel(y), batch);
    double a[25];
    for (int64_t b = 0; b < batch; b++) {
        for (int i = 0; i < mm * mm; i++) a[i] = ow_get(x, b * mm * mm + i); /* the rounded inputs */
        double want = lu_det(a, mm), got = ow_get(y, b);
        if (!(fabs(got - want) <= u * fabs(want) + 1e-12 * 120))
            fail_msg("Det %dx%d matrix %lld: got %.17g, want %.17g", mm, mm, (long long)b, got, want);
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_det(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    det_case(&rng, (DLDataType){kDLFloat, 32, 1}, 3, (int64_t[]){3, 4, 4}, 0x1p-24);
    det_case(&rng, (DLDataType){kDLFloat, 64, 1}, 2, (int64_t[]){5, 5}, 0x1p-52);
    det_case(&rng, (DLDataType){kDLFloat, 32, 1}, 4, (int64_t[]){2, 2, 1, 1}, 0x1p-24);
    det_case(&rng, (DLDataType){kDLFloat, 16, 1}, 3, (int64_t[]){2, 3, 3}, 0x1p-11);
}

static const ow_error_case errors[] = {
    {{11, "Det", "x", {OW_IN("x", GR_FLOAT, 2, 6, 6)}, {{0}}},
     {"node 'n0' (Det)", "input X's matrices are 6 x 6; Loom expands a determinant into its M! products "
                         "(Leibniz's formula), for M up to 5"}},
    {{11, "Det", "x", {OW_IN("x", GR_FLOAT, 3, 2, 3, 4)}, {{0}}},
     {"(Det)", "input X's matrices are 3 x 4; Det needs square ones"}},
    {{11, "Det", "x", {OW_IN("x", GR_FLOAT, 1, 4)}, {{0}}}, {"(Det)", "input X has rank 1; Det needs [..., M, M]"}},
    {{11, "Det", "x", {OW_IN("x", GR_INT32, 2, 2, 2)}, {{0}}},
     {"(Det)", "input X is int32; Det is defined for float types only"}},
    {{10, "Det", "x", {OW_IN("x", GR_FLOAT, 2, 2, 2)}, {{0}}}, {"Det (node 'n0', opset 10;", "supported at opsets 11"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_det),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
