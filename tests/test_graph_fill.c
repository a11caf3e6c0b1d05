/*
 * graph/lower_fill.c (EyeLike, HannWindow, HammingWindow, BlackmanWindow,
 * OneHot) and CastLike: one-node ONNX models run through gr_compile/gr_run,
 * outputs poisoned first, against naive double references written from
 * ONNX's definitions — what the backend suite leaves out: EyeLike's k off
 * the matrix, every output type, its input read for the shape alone (no
 * kernel argument, a `t` item of its key, no fusion with the producer);
 * both window forms of every size from 1 (a symmetric window of 1 is 0/0,
 * NaN, as ONNX's reference computes it), integer outputs; OneHot on every
 * axis with negative, out-of-range and float indices and run-time on/off
 * values; CastLike to a run-time input's type — and every refusal's
 * message (infer_fill.c).
 *
 * Tolerance: exact for moves, compares and integer outputs; the windows
 * within 1e-6 (float32: values in [0, 1], a rounding of the double value)
 * and 1e-14 (float64) of the double reference.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, F64 = {kDLFloat, 64, 1}, I32 = {kDLInt, 32, 1},
                        I64 = {kDLInt, 64, 1}, BOOL = {kDLUInt, 1, 1};

/* ---------------- EyeLike ---------------- */

/* EyeLike of x [4,5] (int32, run-time; through Abs when `fused`, so the
 * input is produced in the EyeLike's own kernel) with diagonal k and
 * output type out (dtype attribute unless it is the input's). */
static void check_eyelike(int64_t k, DLDataType out, bool fused)
{
    int64_t s[2] = {4, 5};
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_INT32, 2, s);
    if (fused) ow_node_add(w, "", "Abs", "x", "a");
    ow_node *n = ow_node_add(w, "", "EyeLike", fused ? "a" : "x", "y");
    if (k) ow_attr_int(n, "k", k);
    if (out.code != kDLInt || out.bits != 32) ow_attr_int(n, "dtype", ow_elem_type(out));
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(I32, 2, s);
    for (int i = 0; i < 20; i++) ow_set(x, i, i - 7);
    const DLTensor *y = ow_run(e, 1, &x, 0);
    assert_int_equal(y->dtype.code, out.code);
    assert_int_equal(y->dtype.bits, out.bits);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++)
            if (ow_get(y, i * 5 + j) != (j - i == k))
                fail_msg("EyeLike k %lld [%d,%d]: %g", (long long)k, i, j, ow_get(y, i * 5 + j));
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

/* EyeLike's input is read for its shape alone: its kernel takes no
 * argument for it, and its key holds it as a `t` item. */
static void test_eyelike_key(void **state)
{
    (void)state;
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_INT32, 2, (int64_t[]){4, 5});
    ow_node_add(w, "", "Abs", "x", "a");
    ow_node_add(w, "", "EyeLike", "a", "y");
    ow_output(w, "y");
    ow_output(w, "a");
    gr_model *m = ow_load_ok(w);
    char *err = NULL;
    gr_task *tasks;
    int n;
    if (gr_extract_tasks(m, NULL, &tasks, &n, &err) != 0) fail_msg("%s", err);
    /* Abs and EyeLike in kernels of their own: no data flows between them. */
    assert_int_equal(n, 2);
    bool found = false;
    for (int i = 0; i < n; i++)
        if (strstr(tasks[i].key, "EyeLike")) {
            found = true;
            tu_assert_msg_has(tasks[i].key, ";t v0:int32[4,5]", "=EyeLike(v0)");
            assert_null(strstr(tasks[i].key, ";x "));
        }
    assert_true(found);
    gr_tasks_free(tasks, n);
    gr_model_free(m);
    ow_free(w);
}

static void test_eyelike(void **state)
{
    (void)state;
    check_eyelike(0, I32, false);
    check_eyelike(2, F32, false);
    check_eyelike(-1, F64, true);
    check_eyelike(7, I64, false); /* off the matrix: zeros */
    check_eyelike(1, BOOL, true);
}

/* ---------------- CastLike ---------------- */

/* x of type from cast like t (a run-time input, or an initializer). */
static void check_castlike(uint64_t *rng, DLDataType from, DLDataType to, bool like_input)
{
    int64_t s[1] = {16}, one[1] = {1};
    ow_model *w = ow_new(15);
    ow_input(w, "x", ow_elem_type(from), 1, s);
    if (like_input) {
        ow_input(w, "t", ow_elem_type(to), 1, one);
    } else {
        int64_t zero = 0;
        ow_init(w, "t", ow_elem_type(to), 1, one, &zero, (size_t)(to.bits == 1 ? 1 : to.bits / 8));
    }
    ow_node_add(w, "", "CastLike", "x,t", "y");
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(from, 1, s), *t = ow_tensor(to, 1, one);
    for (int i = 0; i < 16; i++) ow_set(x, i, tu_rand_uniform(rng, -100, 100));
    ow_set(x, 0, 0);
    ow_set(t, 0, 1);
    DLTensor *ins[2] = {x, t};
    const DLTensor *y = ow_run(e, like_input ? 2 : 1, ins, 0);
    assert_int_equal(y->dtype.code, to.code);
    assert_int_equal(y->dtype.bits, to.bits);
    for (int i = 0; i < 16; i++) {
        double v = ow_get(x, i);
        double want = to.code == kDLFloat ? (to.bits == 32 ? (double)(float)v : v) : to.bits == 1 ? v != 0 : trunc(v);
        if (ow_get(y, i) != want) fail_msg("CastLike element %d: %.9g gave %.9g, expected %.9g", i, v, ow_get(y, i), want);
    }
    rt_tensor_free(x);
    rt_tensor_free(t);
    ow_finish(w, e, m);
}

static void test_castlike(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    check_castlike(&rng, F32, I32, true);
    check_castlike(&rng, F32, F64, false);
    check_castlike(&rng, F64, BOOL, true);
    check_castlike(&rng, I64, F32, false);
}

/* ---------------- windows ---------------- */

static double window_ref(const char *op, int64_t n, int64_t size, bool periodic)
{
    double N = (double)(periodic ? size : size - 1), x = 2 * M_PI * (double)n / N;
    if (strcmp(op, "HannWindow") == 0) {
        double s = sin(M_PI * (double)n / N);
        return s * s;
    }
    if (strcmp(op, "HammingWindow") == 0) return 25.0 / 46.0 - 21.0 / 46.0 * cos(x);
    return 0.42 - 0.5 * cos(x) + 0.08 * cos(2 * x);
}

static void check_window(const char *op, int64_t size, int periodic, DLDataType out, bool size32)
{
    ow_model *w = ow_new(17);
    if (size32) {
        int32_t s = (int32_t)size;
        ow_init(w, "s", GR_INT32, 0, NULL, &s, 4);
    } else {
        ow_init(w, "s", GR_INT64, 0, NULL, &size, 8);
    }
    ow_input(w, "x", GR_FLOAT, 1, (int64_t[]){1});
    ow_node *n = ow_node_add(w, "", op, "s", "y");
    if (periodic >= 0) ow_attr_int(n, "periodic", periodic);
    if (out.code != kDLFloat || out.bits != 32) ow_attr_int(n, "output_datatype", ow_elem_type(out));
    ow_node_add(w, "", "Identity", "x", "z");
    ow_output(w, "y");
    ow_output(w, "z");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(F32, 1, (int64_t[]){1});
    const DLTensor *y = ow_run(e, 1, &x, 0);
    assert_int_equal(ow_numel(y), size);
    assert_int_equal(y->dtype.code, out.code);
    assert_int_equal(y->dtype.bits, out.bits);
    double tol = out.code != kDLFloat ? 0 : out.bits == 32 ? 1e-6 : 1e-14;
    for (int64_t i = 0; i < size; i++) {
        double want = window_ref(op, i, size, periodic != 0);
        if (out.code != kDLFloat) want = trunc(want);
        double got = ow_get(y, i);
        if (isnan(want) ? !isnan(got) : !(fabs(got - want) <= tol))
            fail_msg("%s size %lld periodic %d element %lld: got %.17g, expected %.17g", op, (long long)size,
                     periodic, (long long)i, got, want);
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_windows(void **state)
{
    (void)state;
    const char *ops[3] = {"HannWindow", "HammingWindow", "BlackmanWindow"};
    for (int k = 0; k < 3; k++) {
        check_window(ops[k], 10, -1, F32, true);
        check_window(ops[k], 10, 0, F32, false);
        check_window(ops[k], 7, 1, F64, false);
        check_window(ops[k], 33, 0, F64, true);
        check_window(ops[k], 1, 1, F32, false);
        check_window(ops[k], 1, 0, F64, false); /* 0/0: NaN */
        check_window(ops[k], 9, 0, I32, false);
    }
}

/* ---------------- OneHot ---------------- */

/* indices [2,3] (of type it: negative, out of range, and for floats
 * fractional values) one-hot along axis, depth a constant of type dt,
 * values [off, on] a run-time input. */
static void check_onehot(DLDataType it, int depth_type, int axis)
{
    const int64_t depth = 4, is[2] = {2, 3};
    const double vals[6] = {0, 3, -1, 5, -4, -5}, fvals[6] = {1.7, -1.2, 3.9, 0, 2.5, -3.5};
    ow_model *w = ow_new(11);
    ow_input(w, "i", ow_elem_type(it), 2, is);
    if (depth_type == GR_FLOAT) {
        float d = (float)depth;
        ow_init(w, "d", GR_FLOAT, 0, NULL, &d, 4);
    } else {
        ow_init(w, "d", GR_INT64, 1, (int64_t[]){1}, &depth, 8);
    }
    ow_input(w, "v", GR_FLOAT, 1, (int64_t[]){2});
    ow_node *n = ow_node_add(w, "", "OneHot", "i,d,v", "y");
    if (axis != -1) ow_attr_int(n, "axis", axis);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *ix = ow_tensor(it, 2, is), *v = ow_tensor(F32, 1, (int64_t[]){2});
    for (int j = 0; j < 6; j++) ow_set(ix, j, it.code == kDLFloat ? fvals[j] : vals[j]);
    ow_set(v, 0, -2.5);
    ow_set(v, 1, 7.25);
    DLTensor *ins[2] = {ix, v};
    const DLTensor *y = ow_run(e, 2, ins, 0);
    int ax = axis < 0 ? axis + 3 : axis;
    int64_t os[3];
    for (int d = 0, k = 0; d < 3; d++) os[d] = d == ax ? depth : is[k++];
    assert_int_equal(y->ndim, 3);
    for (int d = 0; d < 3; d++) assert_int_equal(y->shape[d], os[d]);
    for (int64_t o = 0; o < 2 * 3 * depth; o++) {
        int64_t c[3] = {o / (os[1] * os[2]), (o / os[2]) % os[1], o % os[2]}, ic[2];
        for (int d = 0, k = 0; d < 3; d++)
            if (d != ax) ic[k++] = c[d];
        int64_t q = (int64_t)trunc(ow_get(ix, ic[0] * 3 + ic[1]));
        if (q < 0) q += depth;
        double want = q == c[ax] ? 7.25 : -2.5;
        if (ow_get(y, o) != want)
            fail_msg("OneHot axis %d output %lld (index %g): %g, expected %g", axis, (long long)o,
                     ow_get(ix, ic[0] * 3 + ic[1]), ow_get(y, o), want);
    }
    rt_tensor_free(ix);
    rt_tensor_free(v);
    ow_finish(w, e, m);
}

static void test_onehot(void **state)
{
    (void)state;
    check_onehot(I64, GR_INT64, -1);
    check_onehot(I32, GR_FLOAT, 0);
    check_onehot(F32, GR_INT64, 1);
    check_onehot(I64, GR_FLOAT, -3);
}

/* ---------------- refusals ---------------- */

#define NOATTR {{0}}
#define X45 OW_IN("x", GR_FLOAT, 2, 4, 5)

static const ow_error_case errors[] = {
    {{13, "EyeLike", NULL, {OW_IN("x", GR_FLOAT, 1, 4)}, NOATTR},
     {"node 'n0' (EyeLike)", "input has rank 1; EyeLike takes a matrix (rank 2)"}},
    {{13, "EyeLike", NULL, {X45}, {OW_AF("k", 1)}}, {"(EyeLike)", "attribute 'k' must be an int"}},
    {{13, "EyeLike", NULL, {X45}, {OW_AI("dtype", 8)}},
     {"(EyeLike)", "attribute 'dtype' must be an element type number (1 float, 7 int64, ...)"}},
    {{8, "EyeLike", NULL, {X45}, NOATTR}, {"EyeLike (node 'n0', opset 8;", "supported at opsets 9 to 18)"}},
    {{15, "CastLike", "x", {X45}, NOATTR}, {"(CastLike)", "input 1 (target_type) is missing"}},
    {{17, "HannWindow", "s", {OW_IN("s", GR_INT64, 0, 0)}, NOATTR},
     {"(HannWindow)", "input 'size' ('s') must be a constant"}},
    {{17, "HammingWindow", "s", {OW_SCALAR("s", GR_FLOAT, 4)}, NOATTR},
     {"(HammingWindow)", "input size is float, not int32 or int64"}},
    {{17, "BlackmanWindow", "s", {OW_SCALAR("s", GR_INT64, 0)}, NOATTR},
     {"(BlackmanWindow)", "input size is 0; it must be >= 1"}},
    {{17, "BlackmanWindow", "s", {OW_VEC("s", GR_INT64, 2, 3, 4)}, NOATTR},
     {"(BlackmanWindow)", "input size has 2 values; it must be a scalar"}},
    {{17, "HannWindow", "s", {OW_SCALAR("s", GR_INT32, 4)}, {OW_AI("periodic", 2)}},
     {"(HannWindow)", "attribute 'periodic' must be 0 or 1"}},
    {{17, "HannWindow", "s", {OW_SCALAR("s", GR_INT32, 4)}, {OW_AI("output_datatype", 9)}},
     {"(HannWindow)", "attribute 'output_datatype' bool is no number"}},
    {{16, "HannWindow", "s", {OW_SCALAR("s", GR_INT32, 4)}, NOATTR},
     {"HannWindow (node 'n0', opset 16;", "supported at opsets 17 to 18)"}},
    {{11, "OneHot", "i,d,v", {OW_IN("i", GR_INT64, 1, 3), OW_IN("d", GR_INT64, 0, 0), OW_IN("v", GR_FLOAT, 1, 2)}, NOATTR},
     {"(OneHot)", "input 'depth' ('d') must be a constant (the output's extent on the new axis)"}},
    {{11, "OneHot", "i,d,v", {OW_IN("i", GR_INT64, 1, 3), OW_VEC("d", GR_INT64, 2, 3, 4), OW_IN("v", GR_FLOAT, 1, 2)}, NOATTR},
     {"(OneHot)", "input depth has 2 values; it must be one"}},
    {{11, "OneHot", "i,d,v", {OW_IN("i", GR_INT64, 1, 3), OW_SCALAR("d", GR_FLOAT, 0.5), OW_IN("v", GR_FLOAT, 1, 2)}, NOATTR},
     {"(OneHot)", "input depth is 0.5; it must be >= 1"}},
    {{11, "OneHot", "i,d,v", {OW_IN("i", GR_INT64, 1, 3), OW_SCALAR("d", GR_INT64, 4), OW_IN("v", GR_FLOAT, 1, 3)}, NOATTR},
     {"(OneHot)", "input values must be [2] (off, on), not of 3 values in rank 1"}},
    {{11, "OneHot", "i,d,v", {OW_IN("i", GR_INT64, 1, 3), OW_SCALAR("d", GR_INT64, 4), OW_IN("v", GR_FLOAT, 1, 2)}, {OW_AI("axis", 2)}},
     {"(OneHot)", "attribute 'axis' 2 is out of range for rank 2"}},
    {{11, "OneHot", "i,d,v", {OW_IN("i", GR_BOOL, 1, 3), OW_SCALAR("d", GR_INT64, 4), OW_IN("v", GR_FLOAT, 1, 2)}, NOATTR},
     {"(OneHot)", "input indices is bool; it must be a number"}},
    {{11, "OneHot", "i,d,v", {OW_IN("i", GR_INT64, 1, 3), OW_SCALAR("d", GR_BOOL, 1), OW_IN("v", GR_FLOAT, 1, 2)}, NOATTR},
     {"(OneHot)", "input depth is bool; it must be a number"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eyelike),  cmocka_unit_test(test_eyelike_key), cmocka_unit_test(test_castlike), cmocka_unit_test(test_windows),
        cmocka_unit_test(test_onehot),   cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
