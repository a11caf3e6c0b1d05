/*
 * The supported operators' versions before opset 11 (graph/infer_legacy.c
 * and the rules' opset branches): one-node models written here at old
 * opsets run through gr_compile/gr_run on fresh random data, outputs
 * poisoned first, against naive double references, for the forms ONNX's
 * backend suite (pytorch exports at opset 6) does not cover — legacy
 * broadcasting at an inner axis, of every arithmetic operator and of Pow,
 * with extent-1 expansion and 1-element B; Reshape-1's and Slice-1's
 * attributes; Concat-1's default axis; Cast-1's type names; Gemm-6
 * without broadcast; Softmax-6 on rank 3 — and every refusal's message.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, I32 = {kDLInt, 32, 1};

/* Tolerance of float32 kernels against the double reference. */
#define TOL 1e-5

static DLTensor *random_tensor(uint64_t *rng, int ndim, const int64_t *shape, double lo, double hi)
{
    DLTensor *t = ow_tensor(F32, ndim, shape);
    for (int64_t i = 0; i < ow_numel(t); i++) ow_set(t, i, tu_rand_uniform(rng, lo, hi));
    return t;
}

static void expect_close(const char *what, int64_t i, double got, double want)
{
    if (!(fabs(got - want) <= TOL * (1 + fabs(want)))) {
        printf("%s: element %lld is %.9g, reference %.9g\n", what, (long long)i, got, want);
        fail();
    }
}

/* ---------------- legacy broadcasting ---------------- */

static double apply(const char *op, double a, double b)
{
    if (!strcmp(op, "Add")) return a + b;
    if (!strcmp(op, "Sub")) return a - b;
    if (!strcmp(op, "Mul")) return a * b;
    if (!strcmp(op, "Div")) return a / b;
    return pow(a, b);
}

/* A [2,3,4,5] op B (shape sb, rank nb) with broadcast=1 and `axis` (< 0:
 * not given, suffix matching): B's dimension i is read at A's axis + i. */
static void check_legacy(uint64_t *rng, int64_t opset, const char *op, int nb, const int64_t *sb,
                         int64_t axis)
{
    const int64_t sa[4] = {2, 3, 4, 5};
    ow_model *w = ow_new(opset);
    ow_input(w, "a", GR_FLOAT, 4, sa);
    ow_input(w, "b", GR_FLOAT, nb, sb);
    ow_node *n = ow_node_add(w, "", op, "a,b", "y");
    ow_attr_int(n, "broadcast", 1);
    if (axis >= 0) ow_attr_int(n, "axis", axis);
    if (opset < 6) ow_attr_ints(n, "consumed_inputs", 2, (int64_t[]){0, 0}); /* no effect */
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    bool pw = !strcmp(op, "Pow");
    DLTensor *a = random_tensor(rng, 4, sa, pw ? 0.5 : -2, 2);
    DLTensor *b = random_tensor(rng, nb, sb, pw ? -2 : 0.5, 2);
    DLTensor *ins[2] = {a, b};
    const DLTensor *y = ow_run(e, 2, ins, 0);
    int64_t at = axis >= 0 ? axis : 4 - nb;
    for (int64_t o = 0; o < 120; o++) {
        int64_t idx[4], r = o, flat = 0;
        for (int d = 3; d >= 0; d--) {
            idx[d] = r % sa[d];
            r /= sa[d];
        }
        for (int d = 0; d < nb; d++) flat = flat * sb[d] + (sb[d] == 1 ? 0 : idx[at + d]);
        expect_close(op, o, ow_get(y, o), apply(op, ow_get(a, o), ow_get(b, flat)));
    }
    rt_tensor_free(a);
    rt_tensor_free(b);
    ow_finish(w, e, m);
}

static void test_legacy_broadcast(void **state)
{
    (void)state;
    uint64_t rng = 0x1e9ac1;
    const char *ops[] = {"Add", "Sub", "Mul", "Div", "Pow"};
    for (int i = 0; i < 5; i++) {
        check_legacy(&rng, 6, ops[i], 2, (int64_t[]){3, 4}, 1); /* inner axis */
        check_legacy(&rng, 6, ops[i], 2, (int64_t[]){4, 5}, -1); /* suffix */
        check_legacy(&rng, 6, ops[i], 2, (int64_t[]){3, 1}, 1);  /* extent-1 expansion */
        check_legacy(&rng, 6, ops[i], 2, (int64_t[]){1, 1}, -1); /* one element */
        check_legacy(&rng, 6, ops[i], 0, NULL, -1);              /* scalar */
    }
    /* Version 1 (opsets 1-5), with its consumed_inputs hint. */
    check_legacy(&rng, 1, "Add", 1, (int64_t[]){2}, 0);
    check_legacy(&rng, 5, "Mul", 3, (int64_t[]){3, 4, 5}, -1);
}

static void test_legacy_broadcast_errors(void **state)
{
    (void)state;
    const int64_t sa[2] = {2, 3}, s3[1] = {3}, s2[1] = {2}, s23[2] = {2, 3}, s32[2] = {3, 2};
    struct {
        const int64_t *sb;
        int nb;
        int64_t bcast, axis; /* -1: attribute left out */
        const char *want;
    } cases[] = {
        {s3, 1, -1, -1, "inputs A and B differ in shape and attribute 'broadcast' is not 1 (at "
                        "opset 6 only broadcast=1 broadcasts B)"},
        {s3, 1, 0, 1, "attribute 'axis' is given but attribute 'broadcast' is not 1"},
        {s3, 1, 2, -1, "attribute 'broadcast' must be 0 or 1"},
        {s2, 1, 1, -1, "input B dimension 0 is 2, A's dimension 1 is 3 (B's dimensions match A's "
                       "from axis 1)"},
        {s3, 1, 1, 2, "attribute 'axis' is 2: B's 1 dimensions do not fit in A's 2 from there"},
        {s3, 1, 1, -1 - 100, "attribute 'axis' is -1: B's 1 dimensions do not fit"},
        {s23, 2, 1, 1, "attribute 'axis' is 1: B's 2 dimensions do not fit in A's 2"},
        {s32, 2, 1, -1, "input B dimension 0 is 3, A's dimension 0 is 2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ow_model *w = ow_new(6);
        ow_input(w, "a", GR_FLOAT, 2, sa);
        ow_input(w, "b", GR_FLOAT, cases[i].nb, cases[i].sb);
        ow_node *n = ow_node_add(w, "", "Sub", "a,b", "y");
        if (cases[i].bcast >= 0) ow_attr_int(n, "broadcast", cases[i].bcast);
        if (cases[i].axis >= 0) ow_attr_int(n, "axis", cases[i].axis);
        if (cases[i].axis == -1 - 100) ow_attr_int(n, "axis", -1);
        ow_output(w, "y");
        ow_expect_error(w, "node 'n0' (Sub)", cases[i].want);
    }
    /* B of higher rank than A. */
    ow_model *w = ow_new(6);
    ow_input(w, "a", GR_FLOAT, 1, s3);
    ow_input(w, "b", GR_FLOAT, 2, s23);
    ow_attr_int(ow_node_add(w, "", "Pow", "a,b", "y"), "broadcast", 1);
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Pow)", "input B has rank 2, above A's 1 (B broadcasts to A)");
    /* From opset 7 on numpy broadcasting applies: no attribute needed. */
    w = ow_new(7);
    ow_input(w, "a", GR_FLOAT, 2, sa);
    ow_input(w, "b", GR_FLOAT, 1, s3);
    ow_node_add(w, "", "Add", "a,b", "y");
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    ow_finish(w, e, m);
}

/* ---------------- Gemm 6 ---------------- */

static void test_gemm_legacy(void **state)
{
    (void)state;
    uint64_t rng = 0x6e33;
    const int64_t sa[2] = {3, 4}, sb[2] = {4, 5}, sc[2] = {3, 5}, sn[1] = {5};
    /* broadcast=0 with C of the output's shape. */
    ow_model *w = ow_new(6);
    ow_input(w, "a", GR_FLOAT, 2, sa);
    ow_input(w, "b", GR_FLOAT, 2, sb);
    ow_input(w, "c", GR_FLOAT, 2, sc);
    ow_node *n = ow_node_add(w, "", "Gemm", "a,b,c", "y");
    ow_attr_float(n, "alpha", 0.5f);
    ow_attr_float(n, "beta", 2.0f);
    ow_attr_int(n, "broadcast", 0);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *a = random_tensor(&rng, 2, sa, -1, 1), *b = random_tensor(&rng, 2, sb, -1, 1);
    DLTensor *c = random_tensor(&rng, 2, sc, -1, 1);
    DLTensor *ins[3] = {a, b, c};
    const DLTensor *y = ow_run(e, 3, ins, 0);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) {
            double s = 0;
            for (int k = 0; k < 4; k++) s += ow_get(a, i * 4 + k) * ow_get(b, k * 5 + j);
            expect_close("Gemm", i * 5 + j, ow_get(y, i * 5 + j), 0.5 * s + 2.0 * ow_get(c, i * 5 + j));
        }
    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_tensor_free(c);
    ow_finish(w, e, m);

    /* C of another shape needs broadcast=1. */
    w = ow_new(6);
    ow_input(w, "a", GR_FLOAT, 2, sa);
    ow_input(w, "b", GR_FLOAT, 2, sb);
    ow_input(w, "c", GR_FLOAT, 1, sn);
    ow_node_add(w, "", "Gemm", "a,b,c", "y");
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Gemm)", "input C is not [3,5] and attribute 'broadcast' is not 1 "
                                         "(at opset 6 only broadcast=1 broadcasts C)");
    /* C is required before opset 11 (checked from the legacy form on). */
    w = ow_new(6);
    ow_input(w, "a", GR_FLOAT, 2, sa);
    ow_input(w, "b", GR_FLOAT, 2, sb);
    ow_node_add(w, "", "Gemm", "a,b", "y");
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Gemm)", "input 2 (C) is missing");
    w = ow_new(1);
    ow_input(w, "a", GR_FLOAT, 2, sa);
    ow_input(w, "b", GR_FLOAT, 2, sb);
    ow_input(w, "c", GR_FLOAT, 1, sn);
    ow_attr_int(ow_node_add(w, "", "Gemm", "a,b,c", "y"), "broadcast", 3);
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Gemm)", "attribute 'broadcast' must be 0 or 1");
}

/* ---------------- BatchNormalization 1, 6, 7 ---------------- */

static ow_model *bn_model(int64_t opset)
{
    const int64_t sx[3] = {2, 3, 4}, sp[1] = {3};
    float ones[3] = {1, 1, 1}, zeros[3] = {0, 0, 0};
    ow_model *w = ow_new(opset);
    ow_input(w, "x", GR_FLOAT, 3, sx);
    ow_init(w, "s", GR_FLOAT, 1, sp, ones, sizeof ones);
    ow_init(w, "b", GR_FLOAT, 1, sp, zeros, sizeof zeros);
    ow_init(w, "mean", GR_FLOAT, 1, sp, zeros, sizeof zeros);
    ow_init(w, "var", GR_FLOAT, 1, sp, ones, sizeof ones);
    ow_output(w, "y");
    return w;
}

static void test_batchnorm_legacy(void **state)
{
    (void)state;
    /* spatial=1 and is_test=1 are today's inference: accepted. */
    ow_model *w = bn_model(7);
    ow_attr_int(ow_node_add(w, "", "BatchNormalization", "x,s,b,mean,var", "y"), "spatial", 1);
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    ow_finish(w, e, m);
    w = bn_model(1);
    ow_node *n = ow_node_add(w, "", "BatchNormalization", "x,s,b,mean,var", "y");
    ow_attr_int(n, "is_test", 1);
    ow_attr_ints(n, "consumed_inputs", 2, (int64_t[]){0, 0});
    e = ow_compile_ok(w, &m);
    ow_finish(w, e, m);

    w = bn_model(7);
    ow_attr_int(ow_node_add(w, "", "BatchNormalization", "x,s,b,mean,var", "y"), "spatial", 0);
    ow_expect_error(w, "node 'n0' (BatchNormalization)", "attribute 'spatial' is 0 (per-element "
                 "statistics): not supported, only spatial=1 (per channel) is");
    w = bn_model(6);
    ow_node_add(w, "", "BatchNormalization", "x,s,b,mean,var", "y");
    ow_expect_error(w, "node 'n0' (BatchNormalization)", "attribute 'is_test' is 0 (training mode: "
                 "the batch's statistics): not supported at opset 6, only is_test=1 (inference) is");
}

/* ---------------- layout operators' old forms ---------------- */

/* Runs a one-input float model on 0, 1, 2, ... and returns the exec's
 * output (valid until finish). */
static const DLTensor *run_iota(ow_model *w, int ndim, const int64_t *shape, gr_exec **e,
                                gr_model **m, DLTensor **x)
{
    *e = ow_compile_ok(w, m);
    *x = ow_tensor(F32, ndim, shape);
    for (int64_t i = 0; i < ow_numel(*x); i++) ow_set(*x, i, (double)i);
    return ow_run(*e, 1, x, 0);
}

static void test_reshape_1(void **state)
{
    (void)state;
    const int64_t sx[3] = {2, 3, 4};
    ow_model *w = ow_new(4);
    ow_input(w, "x", GR_FLOAT, 3, sx);
    ow_node *n = ow_node_add(w, "", "Reshape", "x", "y");
    ow_attr_ints(n, "shape", 2, (int64_t[]){0, -1});
    ow_attr_ints(n, "consumed_inputs", 1, (int64_t[]){0});
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e;
    DLTensor *x;
    const DLTensor *y = run_iota(w, 3, sx, &e, &m, &x);
    assert_int_equal(y->ndim, 2);
    assert_int_equal(y->shape[0], 2);
    assert_int_equal(y->shape[1], 12);
    for (int64_t i = 0; i < 24; i++) expect_close("Reshape-1", i, ow_get(y, i), (double)i);
    rt_tensor_free(x);
    ow_finish(w, e, m);

    w = ow_new(4);
    ow_input(w, "x", GR_FLOAT, 3, sx);
    ow_node_add(w, "", "Reshape", "x", "y");
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Reshape)", "attribute 'shape' is missing");
    w = ow_new(4);
    ow_input(w, "x", GR_FLOAT, 3, sx);
    ow_init(w, "s", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){24}, 8);
    ow_node_add(w, "", "Reshape", "x,s", "y");
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Reshape)", "has a second input: at opset 4 the shape is attribute 'shape'");
}

/* Slice-1: x [4,5] sliced with starts/ends/axes attributes. */
static void check_slice_1(int n, const int64_t *starts, const int64_t *ends, const int64_t *axes,
                          int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
    const int64_t sx[2] = {4, 5};
    ow_model *w = ow_new(9);
    ow_input(w, "x", GR_FLOAT, 2, sx);
    ow_node *nd = ow_node_add(w, "", "Slice", "x", "y");
    ow_attr_ints(nd, "starts", n, starts);
    ow_attr_ints(nd, "ends", n, ends);
    if (axes) ow_attr_ints(nd, "axes", n, axes);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e;
    DLTensor *x;
    const DLTensor *y = run_iota(w, 2, sx, &e, &m, &x);
    assert_int_equal(y->shape[0], r1 - r0);
    assert_int_equal(y->shape[1], c1 - c0);
    for (int64_t i = r0, o = 0; i < r1; i++)
        for (int64_t j = c0; j < c1; j++, o++) expect_close("Slice-1", o, ow_get(y, o), (double)(i * 5 + j));
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_slice_1(void **state)
{
    (void)state;
    /* Axis 1 from the end, end past the extent; then both axes, no 'axes'. */
    check_slice_1(1, (int64_t[]){-3}, (int64_t[]){1000}, (int64_t[]){1}, 0, 4, 2, 5);
    check_slice_1(2, (int64_t[]){1, 0}, (int64_t[]){3, -1}, NULL, 1, 3, 0, 4);

    const int64_t sx[2] = {4, 5};
    ow_model *w = ow_new(9);
    ow_input(w, "x", GR_FLOAT, 2, sx);
    ow_attr_ints(ow_node_add(w, "", "Slice", "x", "y"), "ends", 1, (int64_t[]){2});
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Slice)", "attribute 'starts' is missing");
    w = ow_new(9);
    ow_input(w, "x", GR_FLOAT, 2, sx);
    ow_node *n = ow_node_add(w, "", "Slice", "x", "y");
    ow_attr_ints(n, "starts", 1, (int64_t[]){0});
    ow_attr_ints(n, "ends", 2, (int64_t[]){2, 2});
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Slice)", "attributes 'starts' (1 values) and 'ends' (2) differ in length");
    w = ow_new(9);
    ow_input(w, "x", GR_FLOAT, 2, sx);
    ow_init(w, "st", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){0}, 8);
    ow_init(w, "en", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){2}, 8);
    ow_node_add(w, "", "Slice", "x,st,en", "y");
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Slice)", "has more than one input: at opset 9 starts, ends and axes "
                                          "are attributes");
}

static void test_concat_1(void **state)
{
    (void)state;
    const int64_t sa[2] = {2, 3}, sb[2] = {2, 2};
    ow_model *w = ow_new(3);
    ow_input(w, "a", GR_FLOAT, 2, sa);
    ow_input(w, "b", GR_FLOAT, 2, sb);
    ow_node_add(w, "", "Concat", "a,b", "y"); /* axis 1 by default */
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *a = ow_tensor(F32, 2, sa), *b = ow_tensor(F32, 2, sb);
    for (int i = 0; i < 6; i++) ow_set(a, i, i);
    for (int i = 0; i < 4; i++) ow_set(b, i, 100 + i);
    DLTensor *ins[2] = {a, b};
    const DLTensor *y = ow_run(e, 2, ins, 0);
    assert_int_equal(y->shape[0], 2);
    assert_int_equal(y->shape[1], 5);
    const double want[10] = {0, 1, 2, 100, 101, 3, 4, 5, 102, 103};
    for (int i = 0; i < 10; i++) expect_close("Concat-1", i, ow_get(y, i), want[i]);
    rt_tensor_free(a);
    rt_tensor_free(b);
    ow_finish(w, e, m);
    /* From Concat-4 on the axis is required. */
    w = ow_new(4);
    ow_input(w, "a", GR_FLOAT, 2, sa);
    ow_input(w, "b", GR_FLOAT, 2, sb);
    ow_node_add(w, "", "Concat", "a,b", "y");
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Concat)", "attribute 'axis' is missing");
}

static void test_cast_1(void **state)
{
    (void)state;
    const int64_t s[1] = {4};
    ow_model *w = ow_new(5);
    ow_input(w, "x", GR_FLOAT, 1, s);
    ow_attr_str(ow_node_add(w, "", "Cast", "x", "y"), "to", "INT32");
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(F32, 1, s);
    const double in[4] = {2.75, -2.75, 0.5, 7};
    for (int i = 0; i < 4; i++) ow_set(x, i, in[i]);
    const DLTensor *y = ow_run(e, 1, &x, 0);
    assert_true(y->dtype.code == I32.code && y->dtype.bits == I32.bits);
    const double want[4] = {2, -2, 0, 7}; /* truncation toward zero */
    for (int i = 0; i < 4; i++) expect_close("Cast-1", i, ow_get(y, i), want[i]);
    rt_tensor_free(x);
    ow_finish(w, e, m);

    w = ow_new(5);
    ow_input(w, "x", GR_FLOAT, 1, s);
    ow_attr_str(ow_node_add(w, "", "Cast", "x", "y"), "to", "float");
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Cast)", "attribute 'to' is 'float', not a TensorProto type name "
                                         "(FLOAT, INT64, ...)");
    w = ow_new(5);
    ow_input(w, "x", GR_FLOAT, 1, s);
    ow_attr_int(ow_node_add(w, "", "Cast", "x", "y"), "to", GR_INT32);
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Cast)", "attribute 'to' (a type name) is missing");
}

static void test_split_1(void **state)
{
    (void)state;
    const int64_t s[1] = {6};
    float lens[2] = {2, 4};
    ow_model *w = ow_new(1);
    ow_input(w, "x", GR_FLOAT, 1, s);
    ow_init(w, "split", GR_FLOAT, 1, (int64_t[]){2}, lens, sizeof lens);
    ow_node_add(w, "", "Split", "x,split", "y,z");
    ow_output(w, "y");
    ow_output(w, "z");
    ow_expect_error(w, "node 'n0' (Split)", "input 'split' (Split-1) is not supported: give the "
                                          "lengths as attribute 'split'");
}

/* Softmax before 13: the input as a matrix [d0..axis-1, axis..]. */
static void test_softmax_6(void **state)
{
    (void)state;
    uint64_t rng = 0x50f7;
    const int64_t sx[3] = {2, 3, 4};
    ow_model *w = ow_new(6);
    ow_input(w, "x", GR_FLOAT, 3, sx);
    ow_node_add(w, "", "Softmax", "x", "y"); /* axis 1 by default */
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = random_tensor(&rng, 3, sx, -3, 3);
    const DLTensor *y = ow_run(e, 1, &x, 0);
    for (int r = 0; r < 2; r++) {
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < 12; j++) mx = fmax(mx, ow_get(x, r * 12 + j));
        for (int j = 0; j < 12; j++) sum += exp(ow_get(x, r * 12 + j) - mx);
        for (int j = 0; j < 12; j++)
            expect_close("Softmax-6", r * 12 + j, ow_get(y, r * 12 + j),
                         exp(ow_get(x, r * 12 + j) - mx) / sum);
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

/* An operator below its first version, and above 18, is refused by name. */
static void test_out_of_range(void **state)
{
    (void)state;
    assert_false(gr_op_supported("", "Erf", 8));
    assert_true(gr_op_supported("", "Erf", 9));
    assert_true(gr_op_supported("", "Conv", 1));
    assert_true(gr_op_supported("", "Reshape", 4));
    assert_false(gr_op_supported("", "ConstantOfShape", 8));
    assert_false(gr_op_supported("", "Where", 8));
    assert_false(gr_op_supported("", "LayerNormalization", 10));
    assert_false(gr_op_supported("", "Conv", 0));
    assert_false(gr_op_supported("", "Conv", 19));
    const int64_t s[1] = {4};
    ow_model *w = ow_new(8);
    ow_input(w, "x", GR_FLOAT, 1, s);
    ow_node_add(w, "", "Erf", "x", "y");
    ow_output(w, "y");
    ow_expect_error(w, "Erf (node 'n0', opset 8; supported at opsets 9 to 18)", "");
}

/* An attribute only older versions define is refused, not passed over. */
static void test_dropped_attributes(void **state)
{
    (void)state;
    const int64_t s[2] = {2, 3}, s3[1] = {3};
    ow_model *w = ow_new(7);
    ow_input(w, "a", GR_FLOAT, 2, s);
    ow_input(w, "b", GR_FLOAT, 1, s3);
    ow_attr_int(ow_node_add(w, "", "Add", "a,b", "y"), "broadcast", 1);
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Add)", "attribute 'broadcast' is not defined at opset 7 (Add has "
                                        "it up to opset 6): refused rather than ignored");
    w = ow_new(9);
    ow_input(w, "x", GR_FLOAT, 2, s);
    ow_attr_ints(ow_node_add(w, "", "Reshape", "x", "y"), "shape", 1, (int64_t[]){6});
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Reshape)", "attribute 'shape' is not defined at opset 9 (Reshape "
                                            "has it up to opset 4)");
    w = ow_new(6);
    ow_input(w, "x", GR_FLOAT, 2, s);
    ow_attr_ints(ow_node_add(w, "", "Relu", "x", "y"), "consumed_inputs", 1, (int64_t[]){0});
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Relu)", "attribute 'consumed_inputs' is not defined at opset 6");
    w = bn_model(9);
    ow_attr_int(ow_node_add(w, "", "BatchNormalization", "x,s,b,mean,var", "y"), "spatial", 1);
    ow_expect_error(w, "node 'n0' (BatchNormalization)", "attribute 'spatial' is not defined at opset 9");
    w = bn_model(7);
    ow_attr_int(ow_node_add(w, "", "BatchNormalization", "x,s,b,mean,var", "y"), "is_test", 1);
    ow_expect_error(w, "node 'n0' (BatchNormalization)", "attribute 'is_test' is not defined at opset 7");
    w = ow_new(10);
    ow_input(w, "x", GR_FLOAT, 2, s);
    ow_init(w, "st", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){0}, 8);
    ow_init(w, "en", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){1}, 8);
    ow_attr_ints(ow_node_add(w, "", "Slice", "x,st,en", "y"), "axes", 1, (int64_t[]){1});
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Slice)", "attribute 'axes' is not defined at opset 10");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_legacy_broadcast),
        cmocka_unit_test(test_legacy_broadcast_errors),
        cmocka_unit_test(test_gemm_legacy),
        cmocka_unit_test(test_batchnorm_legacy),
        cmocka_unit_test(test_reshape_1),
        cmocka_unit_test(test_slice_1),
        cmocka_unit_test(test_concat_1),
        cmocka_unit_test(test_cast_1),
        cmocka_unit_test(test_split_1),
        cmocka_unit_test(test_softmax_6),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_dropped_attributes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
