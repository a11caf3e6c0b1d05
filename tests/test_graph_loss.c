/*
 * graph/lower_loss.c: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
 * as one-node models run through gr_compile/gr_run on fresh random data
 * (outputs poisoned first) against a naive double reference written from
 * ONNX's definition: every reduction, with and without weights, with an
 * ignore_index inside and outside [0, C) (targets hitting it), ranks 2 to
 * 4, float and double, SoftmaxCrossEntropyLoss's log-probabilities, the
 * mean over nothing but ignored targets (NaN) — and every refusal's
 * message (infer_loss.c).
 *
 * Tolerance: float32 within 1e-5 relative + 1e-5 absolute of the double
 * reference of the same float32 inputs, plus 2^-23 times the sum of the
 * magnitudes a reduction adds (at most 60 terms); float64 within 1e-12
 * of both. NaN matches NaN.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, F64 = {kDLFloat, 64, 1}, I32 = {kDLInt, 32, 1},
                        I64 = {kDLInt, 64, 1};

typedef struct {
    bool sce;            /* SoftmaxCrossEntropyLoss, else NLL */
    const char *reduction; /* NULL: the default, mean */
    bool weights, has_ii, log_prob;
    int64_t ii;
    int r;               /* the input's rank */
    int64_t shape[4];    /* [N, C, d...] */
    DLDataType t, tt;    /* input and target types */
    bool all_ignored;    /* every target is ignore_index */
} loss_case;

static bool close_to(double got, double want, DLDataType t, double scale)
{
    if (isnan(want)) return isnan(got);
    double tol = t.bits == 32 ? 1e-5 + 1e-5 * fabs(want) + 1.2e-7 * scale : 1e-12 + 1e-12 * (fabs(want) + scale);
    return fabs(got - want) <= tol;
}

static void run_case(uint64_t *rng, const loss_case *k)
{
    int r = k->r;
    int64_t N = k->shape[0], C = k->shape[1], D = 1, ts[3];
    ts[0] = N;
    for (int d = 2; d < r; d++) D *= (ts[d - 1] = k->shape[d]);
    const char *op = k->sce ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss";
    ow_model *w = ow_new(13);
    ow_input(w, "x", ow_elem_type(k->t), r, k->shape);
    ow_input(w, "t", ow_elem_type(k->tt), r - 1, ts);
    if (k->weights) ow_input(w, "w", ow_elem_type(k->t), 1, &C);
    ow_node *n = ow_node_add(w, "", op, k->weights ? "x,t,w" : "x,t", k->log_prob ? "y,lp" : "y");
    if (k->reduction) ow_attr_str(n, "reduction", k->reduction);
    if (k->has_ii) ow_attr_int(n, "ignore_index", k->ii);
    ow_output(w, "y");
    if (k->log_prob) ow_output(w, "lp");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(k->t, r, k->shape), *t = ow_tensor(k->tt, r - 1, ts), *wt = ow_tensor(k->t, 1, &C);
    for (int64_t i = 0; i < ow_numel(x); i++)
        ow_set(x, i, k->sce ? tu_rand_uniform(rng, -4, 4) : tu_rand_uniform(rng, -3, 0));
    for (int64_t i = 0; i < ow_numel(t); i++) {
        /* about one in four targets ignored */
        bool ign = k->has_ii && (k->all_ignored || tu_rand_uniform(rng, 0, 1) < 0.25);
        ow_set(t, i, ign ? (double)k->ii : floor(tu_rand_uniform(rng, 0, (double)C)));
    }
    for (int64_t c = 0; c < C; c++) ow_set(wt, c, tu_rand_uniform(rng, 0.5, 2));
    DLTensor *ins[3] = {x, t, wt};
    int nin = k->weights ? 3 : 2;
    /* The log-probabilities [N, C, D] in double. */
    double *lp = malloc(sizeof *lp * (size_t)(N * C * D));
    for (int64_t a = 0; a < N; a++)
        for (int64_t d = 0; d < D; d++) {
            double mx = -INFINITY, s = 0;
            for (int64_t c = 0; c < C; c++) mx = fmax(mx, ow_get(x, (a * C + c) * D + d));
            for (int64_t c = 0; c < C; c++) s += exp(ow_get(x, (a * C + c) * D + d) - mx);
            for (int64_t c = 0; c < C; c++) {
                double v = ow_get(x, (a * C + c) * D + d);
                lp[(a * C + c) * D + d] = k->sce ? v - mx - log(s) : v;
            }
        }
    double *loss = malloc(sizeof *loss * (size_t)(N * D)), sum = 0, wsum = 0, mag = 0;
    for (int64_t a = 0; a < N; a++)
        for (int64_t d = 0; d < D; d++) {
            int64_t tv = (int64_t)ow_get(t, a * D + d);
            bool ign = k->has_ii && tv == k->ii;
            double wv = ign ? 0 : k->weights ? ow_get(wt, tv) : 1;
            double v = ign ? 0 : -lp[(a * C + tv) * D + d] * wv;
            loss[a * D + d] = v;
            sum += v;
            wsum += wv;
            mag += fabs(v);
        }
    const char *red = k->reduction ? k->reduction : "mean";
    const DLTensor *y = ow_run(e, nin, ins, 0);
    if (strcmp(red, "none") == 0) {
        assert_int_equal(ow_numel(y), N * D);
        for (int64_t i = 0; i < N * D; i++)
            if (!close_to(ow_get(y, i), loss[i], k->t, 0))
                fail_msg("%s none element %lld: got %.9g, expected %.9g", op, (long long)i, ow_get(y, i), loss[i]);
    } else {
        assert_int_equal(ow_numel(y), 1);
        bool mean = strcmp(red, "mean") == 0;
        double want = !mean ? sum : (k->weights || k->has_ii) ? sum / wsum : sum / (double)(N * D);
        double scale = mean ? mag / fmax(fabs(wsum), 1) + N * D : mag;
        if (!close_to(ow_get(y, 0), want, k->t, scale))
            fail_msg("%s %s (weights %d, ignore_index %d): got %.9g, expected %.9g", op, red, k->weights,
                     k->has_ii, ow_get(y, 0), want);
    }
    if (k->log_prob) {
        const DLTensor *l = ow_run(e, nin, ins, 1);
        assert_int_equal(ow_numel(l), N * C * D);
        for (int64_t i = 0; i < N * C * D; i++)
            if (!close_to(ow_get(l, i), lp[i], k->t, 0))
                fail_msg("%s log_prob %lld: got %.9g, expected %.9g", op, (long long)i, ow_get(l, i), lp[i]);
    }
    free(lp);
    free(loss);
    rt_tensor_free(x);
    rt_tensor_free(t);
    rt_tensor_free(wt);
    ow_finish(w, e, m);
}

static void test_nll(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const loss_case cases[] = {
        {false, NULL, false, false, false, 0, 2, {5, 4}, F32, I64, false},
        {false, "none", true, false, false, 0, 3, {3, 5, 4}, F32, I64, false},
        {false, "sum", true, true, false, 2, 4, {2, 3, 4, 5}, F64, I32, false},
        {false, "mean", true, true, false, -1, 3, {3, 4, 5}, F32, I64, false},
        {false, "mean", false, true, false, 7, 4, {2, 3, 2, 5}, F64, I64, false},
        {false, "none", false, true, false, -5, 2, {6, 3}, F32, I32, false},
        {false, "sum", false, false, false, 0, 3, {4, 6, 2}, F32, I64, false},
        /* every target ignored: the weighted mean is 0 / 0 */
        {false, "mean", true, true, false, 1, 2, {4, 3}, F32, I64, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&rng, &cases[i]);
}

static void test_sce(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const loss_case cases[] = {
        {true, NULL, false, false, false, 0, 2, {5, 4}, F32, I64, false},
        {true, "none", true, false, true, 0, 3, {3, 5, 4}, F32, I64, false},
        {true, "sum", true, true, true, 2, 4, {2, 3, 4, 5}, F64, I32, false},
        {true, "mean", true, true, false, -1, 3, {3, 4, 5}, F32, I64, false},
        {true, "mean", false, true, true, 7, 4, {2, 3, 2, 5}, F64, I64, false},
        {true, "none", false, false, true, 0, 2, {6, 3}, F32, I32, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&rng, &cases[i]);
}

/* ---------------- refusals ---------------- */

#define XT(ts, ...) {OW_IN("x", GR_FLOAT, 3, 2, 3, 4), OW_IN("t", ts, __VA_ARGS__)}

static const ow_error_case errors[] = {
    {{13, "NegativeLogLikelihoodLoss", "x,t", XT(GR_INT64, 2, 2, 3), {{0}}},
     {"node 'n0' (NegativeLogLikelihoodLoss)", "input target has shape [2,3]; it must be [N, d1, ...] = [2,4]"}},
    {{13, "NegativeLogLikelihoodLoss", "x,t", XT(GR_FLOAT, 2, 2, 4), {{0}}},
     {"(NegativeLogLikelihoodLoss)", "input target is float, not int32 or int64"}},
    {{13, "SoftmaxCrossEntropyLoss", "x,t", {OW_IN("x", GR_FLOAT, 1, 3), OW_IN("t", GR_INT64, 1, 3)}, {{0}}},
     {"(SoftmaxCrossEntropyLoss)", "input scores has rank 1; it must be [N, C] or [N, C, d1, ...]"}},
    {{13, "SoftmaxCrossEntropyLoss", "x,t", {OW_IN("x", GR_INT32, 2, 2, 3), OW_IN("t", GR_INT64, 1, 2)}, {{0}}},
     {"(SoftmaxCrossEntropyLoss)", "input scores is int32; SoftmaxCrossEntropyLoss is defined for float types only"}},
    {{13, "NegativeLogLikelihoodLoss", "x,t,w",
      {OW_IN("x", GR_FLOAT, 3, 2, 3, 4), OW_IN("t", GR_INT64, 2, 2, 4), OW_IN("w", GR_FLOAT, 1, 4)}, {{0}}},
     {"(NegativeLogLikelihoodLoss)", "input weights must be [C] = [3]"}},
    {{13, "NegativeLogLikelihoodLoss", "x,t,w",
      {OW_IN("x", GR_FLOAT, 3, 2, 3, 4), OW_IN("t", GR_INT64, 2, 2, 4), OW_IN("w", GR_DOUBLE, 1, 3)}, {{0}}},
     {"(NegativeLogLikelihoodLoss)", "inputs input (float) and weights (double) must have one element type"}},
    {{13, "NegativeLogLikelihoodLoss", "x,t", XT(GR_INT64, 2, 2, 4), {OW_AS("reduction", "avg")}},
     {"(NegativeLogLikelihoodLoss)", "attribute 'reduction' is 'avg'; it must be 'none', 'sum' or 'mean'"}},
    {{13, "NegativeLogLikelihoodLoss", "x,t", XT(GR_INT64, 2, 2, 4), {OW_AI("reduction", 1)}},
     {"(NegativeLogLikelihoodLoss)", "attribute 'reduction' must be a string"}},
    {{13, "SoftmaxCrossEntropyLoss", "x,t", XT(GR_INT64, 2, 2, 4), {OW_AF("ignore_index", 1)}},
     {"(SoftmaxCrossEntropyLoss)", "attribute 'ignore_index' must be an int"}},
    {{11, "SoftmaxCrossEntropyLoss", "x,t", XT(GR_INT64, 2, 2, 4), {{0}}},
     {"SoftmaxCrossEntropyLoss (node 'n0', opset 11;", "supported at opsets 12 to 18)"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
    /* NegativeLogLikelihoodLoss has one output. */
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 2, (int64_t[]){2, 3});
    ow_input(w, "t", GR_INT64, 1, (int64_t[]){2});
    ow_node_add(w, "", "NegativeLogLikelihoodLoss", "x,t", "y,z");
    ow_output(w, "y");
    ow_output(w, "z");
    ow_expect_error(w, "(NegativeLogLikelihoodLoss)", "output 1 ('z') is not one the operator defines");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nll),
        cmocka_unit_test(test_sce),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
