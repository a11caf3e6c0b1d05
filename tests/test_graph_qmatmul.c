/*
 * graph/infer_qmatmul.c and lower_qmatmul.c: MatMulInteger and
 * QLinearMatMul as one-node models run through gr_compile/gr_run on
 * fresh random 8-bit data (outputs poisoned first) against a naive
 * reference: int8 and uint8 operands, zero points per tensor, per row of
 * A and per column of B, left out (MatMulInteger), batched and
 * broadcasting shapes, a vector operand; QLinearMatMul into uint8 and
 * int8 with scales that saturate some outputs; and every refusal's
 * message.
 *
 * Tolerance: exact (integer sums; the requantization rounds a float64
 * product to nearest even in both, ties being measure zero for these
 * random scales).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType U8 = {kDLUInt, 8, 1}, I8 = {kDLInt, 8, 1}, F32 = {kDLFloat, 32, 1};

static void fill8(uint64_t *rng, DLTensor *t)
{
    bool u = t->dtype.code == kDLUInt;
    for (int64_t i = 0; i < ow_numel(t); i++) ow_set(t, i, floor(tu_rand_uniform(rng, u ? 0 : -128, u ? 256 : 128)));
}

/* za/zb: 0 left out (MatMulInteger only), 1 per tensor, 2 per row/column. */
static void qmm_case(uint64_t *rng, bool qlinear, DLDataType at, DLDataType bt, DLDataType yt, int ra,
                     const int64_t *as, int rb, const int64_t *bs, int za, int zb)
{
    int64_t M = ra > 1 ? as[ra - 2] : 1, K = as[ra - 1], N = rb > 1 ? bs[rb - 1] : 1;
    int64_t one = 1, zas = za == 2 ? M : 1, zbs = zb == 2 ? N : 1;
    ow_model *w = ow_new(13);
    ow_input(w, "a", ow_elem_type(at), ra, as);
    ow_input(w, "b", ow_elem_type(bt), rb, bs);
    if (za) ow_input(w, "az", ow_elem_type(at), 1, &zas);
    if (zb) ow_input(w, "bz", ow_elem_type(bt), 1, &zbs);
    if (qlinear) {
        ow_input(w, "as", GR_FLOAT, 1, &zas);
        ow_input(w, "bs", GR_FLOAT, 1, &zbs);
        ow_input(w, "ys", GR_FLOAT, 0, NULL);
        ow_input(w, "yz", ow_elem_type(yt), 0, NULL);
        ow_node_add(w, "", "QLinearMatMul", "a,as,az,b,bs,bz,ys,yz", "y");
    } else {
        ow_node_add(w, "", "MatMulInteger", za && zb ? "a,b,az,bz" : za ? "a,b,az" : zb ? "a,b,,bz" : "a,b", "y");
    }
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *A = ow_tensor(at, ra, as), *B = ow_tensor(bt, rb, bs), *AZ = ow_tensor(at, 1, &zas),
             *BZ = ow_tensor(bt, 1, &zbs), *AS = ow_tensor(F32, 1, &zas), *BS = ow_tensor(F32, 1, &zbs),
             *YS = ow_tensor(F32, 0, &one), *YZ = ow_tensor(yt, 0, &one);
    fill8(rng, A);
    fill8(rng, B);
    fill8(rng, AZ);
    fill8(rng, BZ);
    fill8(rng, YZ);
    for (int64_t i = 0; i < zas; i++) ow_set(AS, i, tu_rand_uniform(rng, 0.001, 0.05));
    for (int64_t i = 0; i < zbs; i++) ow_set(BS, i, tu_rand_uniform(rng, 0.001, 0.05));
    ow_set(YS, 0, tu_rand_uniform(rng, 0.01, 0.1));
    DLTensor *ins[8];
    int nin = 0;
    ins[nin++] = A;
    ins[nin++] = B;
    if (za) ins[nin++] = AZ;
    if (zb) ins[nin++] = BZ;
    if (qlinear) {
        ins[nin++] = AS;
        ins[nin++] = BS;
        ins[nin++] = YS;
        ins[nin++] = YZ;
    }
    const DLTensor *y = ow_run(e, nin, ins, 0);
    /* batch: broadcast of the leading dimensions (at most one here) */
    int64_t nba = ra > 2 ? as[0] : 1, nbb = rb > 2 ? bs[0] : 1, batch = nba > nbb ? nba : nbb;
    assert_int_equal(ow_numel(y), batch * M * N);
    for (int64_t p = 0; p < batch; p++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++) {
                    double a = ow_get(A, ((nba > 1 ? p : 0) * M + i) * K + k) - (za ? ow_get(AZ, za == 2 ? i : 0) : 0);
                    double b = ow_get(B, ((nbb > 1 ? p : 0) * K + k) * N + j) - (zb ? ow_get(BZ, zb == 2 ? j : 0) : 0);
                    s += a * b;
                }
                if (qlinear) {
                    double sc = ow_get(AS, zas > 1 ? i : 0) * ow_get(BS, zbs > 1 ? j : 0) / ow_get(YS, 0);
                    s = nearbyint(s * sc) + ow_get(YZ, 0);
                    s = yt.code == kDLUInt ? fmin(fmax(s, 0), 255) : fmin(fmax(s, -128), 127);
                }
                int64_t o = (p * M + i) * N + j;
                if (ow_get(y, o) != s)
                    fail_msg("%s output %lld: got %g, expected %g", qlinear ? "QLinearMatMul" : "MatMulInteger",
                             (long long)o, ow_get(y, o), s);
            }
    DLTensor *all[8] = {A, B, AZ, BZ, AS, BS, YS, YZ};
    for (int i = 0; i < 8; i++) rt_tensor_free(all[i]);
    ow_finish(w, e, m);
}

static void test_matmul_integer(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    qmm_case(&rng, false, U8, U8, U8, 2, (int64_t[]){4, 7}, 2, (int64_t[]){7, 5}, 1, 1);
    qmm_case(&rng, false, I8, U8, U8, 2, (int64_t[]){4, 7}, 2, (int64_t[]){7, 5}, 2, 2);
    qmm_case(&rng, false, U8, I8, U8, 3, (int64_t[]){3, 4, 6}, 2, (int64_t[]){6, 2}, 0, 0);
    qmm_case(&rng, false, I8, I8, U8, 2, (int64_t[]){4, 6}, 3, (int64_t[]){2, 6, 3}, 0, 2);
    qmm_case(&rng, false, U8, U8, U8, 1, (int64_t[]){9}, 2, (int64_t[]){9, 3}, 1, 0);
}

static void test_qlinear_matmul(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    qmm_case(&rng, true, U8, U8, U8, 2, (int64_t[]){4, 7}, 2, (int64_t[]){7, 5}, 1, 1);
    qmm_case(&rng, true, I8, I8, I8, 3, (int64_t[]){2, 4, 7}, 3, (int64_t[]){2, 7, 5}, 2, 2);
    qmm_case(&rng, true, U8, I8, I8, 3, (int64_t[]){3, 4, 6}, 2, (int64_t[]){6, 2}, 1, 2);
}

#define QA OW_IN("a", GR_UINT8, 2, 3, 4)
#define QB OW_IN("b", GR_UINT8, 2, 4, 5)
static const ow_error_case errors[] = {
    {{10, "MatMulInteger", "a,b", {OW_IN("a", GR_FLOAT, 2, 3, 4), QB}, {{0}}},
     {"node 'n0' (MatMulInteger)", "inputs A (float) and B (uint8) must be int8 or uint8"}},
    {{10, "MatMulInteger", "a,b", {QA, OW_IN("b", GR_UINT8, 2, 5, 5)}, {{0}}},
     {"(MatMulInteger)", "A has K = 4, B has K = 5"}},
    {{10, "MatMulInteger", "a,b,z", {QA, QB, OW_VEC("z", GR_UINT8, 2, 1, 2)}, {{0}}},
     {"(MatMulInteger)", "input 'a_zero_point' must hold one value or 3 (one per row of A)"}},
    {{10, "MatMulInteger", "a,b,z", {QA, QB, OW_VEC("z", GR_INT8, 1, 1)}, {{0}}},
     {"(MatMulInteger)", "input 'a_zero_point' is int8, not uint8"}},
    {{10, "QLinearMatMul", "a,s,z,b,s,z,s", {QA, OW_SCALAR("s", GR_FLOAT, 0.5), OW_SCALAR("z", GR_UINT8, 1), QB}, {{0}}},
     {"(QLinearMatMul)", "input 7 (y_zero_point) is missing"}},
    {{10, "QLinearMatMul", "a,,z,b,s,z,s,z", {QA, OW_SCALAR("s", GR_FLOAT, 0.5), OW_SCALAR("z", GR_UINT8, 1), QB}, {{0}}},
     {"(QLinearMatMul)", "input 'a_scale' is missing"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
    /* a scale of another type than float */
    ow_model *w = ow_new(10);
    ow_input(w, "a", GR_UINT8, 2, (int64_t[]){3, 4});
    ow_input(w, "b", GR_UINT8, 2, (int64_t[]){4, 5});
    ow_input(w, "s", GR_DOUBLE, 0, NULL);
    ow_input(w, "z", GR_UINT8, 0, NULL);
    ow_node_add(w, "", "QLinearMatMul", "a,s,z,b,s,z,s,z", "y");
    ow_output(w, "y");
    ow_expect_error(w, "(QLinearMatMul)", "input 'a_scale' is double, not float");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_integer),
        cmocka_unit_test(test_qlinear_matmul),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
