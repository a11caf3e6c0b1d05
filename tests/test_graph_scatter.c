/*
 * graph/infer_scatter.c and lower_scatter.c: Scatter, ScatterElements and
 * ScatterND as one-node models run through gr_compile/gr_run on fresh
 * random data, indices and updates (outputs poisoned first) against a
 * naive reference that applies the updates one by one in index order
 * (so with no reduction the last duplicate wins, Loom's documented
 * choice), for every reduction (none, add, mul, max, min), negative
 * indices, int32 and int64 indices, indices shorter than data in a
 * non-axis dimension, ScatterND with partial and full index tuples and a
 * single tuple (rank-1 indices); float and int32 data; and every
 * refusal's message.
 *
 * Tolerance: exact for none, max, min and int32; float add and mul to
 * 1e-5 relative (the reduction's order differs from the reference's).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const char *const reds[] = {"none", "add", "mul", "max", "min"};

static double apply(int red, double acc, double u)
{
    switch (red) {
    case 1: return acc + u;
    case 2: return acc * u;
    case 3: return fmax(acc, u);
    case 4: return fmin(acc, u);
    default: return u;
    }
}

static void check_all(const char *what, int red, const DLTensor *y, const double *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double got = ow_get(y, i), tol = (red == 1 || red == 2) ? 1e-5 * fabs(want[i]) : 0;
        if (!(fabs(got - want[i]) <= tol))
            fail_msg("%s reduction %s element %lld: got %.9g, expected %.9g", what, reds[red], (long long)i, got,
                     want[i]);
    }
}

/* One node: data x (element type t, rank r), indices i (type it, rank q),
 * updates u: of indices' shape for ScatterElements and Scatter (which
 * also get `axis`), of shape is[:-1] + xs[k:] for ScatterND (k = is[q-1]);
 * the reduction reds[red] (none: no attribute), or each in turn. */
typedef struct {
    const char *op;
    int64_t opset;
    DLDataType t, it;
    int r;
    int64_t xs[3];
    int q;
    int64_t is[3];
    int axis, red;
} scatter_case;

#define EVERY (-1) /* the case once per reduction */
#define F32 {kDLFloat, 32, 1}
#define I32 {kDLInt, 32, 1}
#define I64 {kDLInt, 64, 1}
static const scatter_case cases[] = {
    {"ScatterElements", 18, F32, I64, 2, {4, 5}, 2, {6, 3}, 0, EVERY},
    {"ScatterElements", 16, I32, I32, 3, {3, 4, 5}, 3, {2, 4, 7}, 2, 1},
    {"ScatterElements", 11, I32, I64, 3, {3, 4, 5}, 3, {3, 2, 2}, 1, 0},
    {"Scatter", 9, F32, I32, 2, {3, 6}, 2, {3, 2}, 1, 0},
    {"ScatterND", 18, F32, I64, 3, {4, 3, 2}, 2, {5, 1}, 0, EVERY},
    {"ScatterND", 18, I32, I64, 3, {4, 3, 2}, 3, {2, 3, 2}, 0, 1},
    {"ScatterND", 18, F32, I64, 2, {4, 3}, 2, {6, 2}, 0, 0},
    {"ScatterND", 18, F32, I64, 2, {4, 3}, 1, {1}, 0, 2},
    {"ScatterND", 18, I32, I64, 2, {4, 3}, 1, {2}, 0, 0},
};
#undef F32
#undef I32
#undef I64
#undef EVERY

/* The flat index of x that update element ui goes to. ScatterElements,
 * Scatter: ui's position in indices with its axis coordinate replaced by
 * the index there. ScatterND: the tuple of k indices before ui's slice
 * picks the slice of x, ui's offset in its slice the element. */
static int64_t target(const scatter_case *c, const DLTensor *ix, int k, int64_t ui)
{
    const int64_t *xs = c->xs, *is = c->is;
    int64_t at = 0;
    if (k) {
        int64_t slice = 1;
        for (int d = k; d < c->r; d++) slice *= xs[d];
        int64_t tp = ui / slice;
        for (int j = 0; j < k; j++) {
            int64_t v = (int64_t)ow_get(ix, tp * k + j);
            at = at * xs[j] + (v < 0 ? v + xs[j] : v);
        }
        return at * slice + ui % slice;
    }
    int64_t rem = ui, stride = 1, pos[8];
    for (int d = c->r - 1; d >= 0; d--) {
        pos[d] = rem % is[d];
        rem /= is[d];
    }
    int64_t j = (int64_t)ow_get(ix, ui);
    pos[c->axis] = j < 0 ? j + xs[c->axis] : j;
    for (int d = c->r - 1; d >= 0; d--) {
        at += pos[d] * stride;
        stride *= xs[d];
    }
    return at;
}

/* Runs c on random data, indices and updates against the updates applied
 * one by one in order (with no reduction the last duplicate wins). */
static void run_case(uint64_t *rng, const scatter_case *c, int red)
{
    const int64_t *xs = c->xs, *is = c->is;
    int r = c->r, q = c->q;
    int k = strcmp(c->op, "ScatterND") == 0 ? (int)is[q - 1] : 0; /* 0: not ScatterND */
    int64_t us[8];
    int nu = 0;
    if (k) {
        for (int d = 0; d < q - 1; d++) us[nu++] = is[d];
        for (int d = k; d < r; d++) us[nu++] = xs[d];
    } else {
        for (; nu < q; nu++) us[nu] = is[nu];
    }
    ow_model *w = ow_new(c->opset);
    ow_input(w, "x", ow_elem_type(c->t), r, xs);
    ow_input(w, "i", ow_elem_type(c->it), q, is);
    ow_input(w, "u", ow_elem_type(c->t), nu, us);
    ow_node *n = ow_node_add(w, "", c->op, "x,i,u", "y");
    if (!k) ow_attr_int(n, "axis", c->axis == r - 1 ? -1 : c->axis);
    if (red) ow_attr_str(n, "reduction", reds[red]);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor(c->t, r, xs), *ix = ow_tensor(c->it, q, is), *u = ow_tensor(c->t, nu, us);
    for (int64_t i = 0; i < ow_numel(x); i++) ow_set(x, i, floor(tu_rand_uniform(rng, -9, 9)));
    for (int64_t i = 0; i < ow_numel(u); i++) ow_set(u, i, floor(tu_rand_uniform(rng, -9, 9)));
    for (int64_t i = 0; i < ow_numel(ix); i++) {
        int64_t dim = k ? xs[i % k] : xs[c->axis];
        ow_set(ix, i, floor(tu_rand_uniform(rng, (double)-dim, (double)dim)));
    }
    DLTensor *ins[3] = {x, ix, u};
    const DLTensor *y = ow_run(e, 3, ins, 0);
    int64_t nx = ow_numel(x);
    double *want = malloc((size_t)nx * sizeof *want);
    for (int64_t i = 0; i < nx; i++) want[i] = ow_get(x, i);
    for (int64_t ui = 0; ui < ow_numel(u); ui++) {
        int64_t at = target(c, ix, k, ui);
        want[at] = apply(red, want[at], ow_get(u, ui));
    }
    check_all(c->op, red, y, want, nx);
    free(want);
    rt_tensor_free(x);
    rt_tensor_free(ix);
    rt_tensor_free(u);
    ow_finish(w, e, m);
}

static void test_scatter(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int red = 0; red < 5; red++)
            if (cases[i].red < 0 || cases[i].red == red) run_case(&rng, &cases[i], red);
}

#define XS OW_IN("x", GR_FLOAT, 2, 3, 4)
#define IS OW_IN("i", GR_INT64, 2, 2, 4)
#define US OW_IN("u", GR_FLOAT, 2, 2, 4)
static const ow_error_case errors[] = {
    {{16, "ScatterElements", "x,i,u", {XS, IS, US}, {OW_AS("reduction", "max")}},
     {"node 'n0' (ScatterElements)", "reductions 'max' and 'min' are not defined before opset 18"}},
    {{13, "ScatterElements", "x,i,u", {XS, IS, US}, {OW_AS("reduction", "add")}},
     {"(ScatterElements)", "attribute 'reduction' is not defined before opset 16"}},
    {{18, "ScatterElements", "x,i,u", {XS, IS, US}, {OW_AS("reduction", "sub")}},
     {"(ScatterElements)", "attribute 'reduction' must be none, add, mul, max or min"}},
    {{13, "ScatterElements", "x,i,u", {XS, OW_IN("i", GR_FLOAT, 2, 2, 4), US}, {{0}}},
     {"(ScatterElements)", "input 'indices' is float, not int32 or int64"}},
    {{13, "ScatterElements", "x,i,u", {XS, IS, OW_IN("u", GR_INT32, 2, 2, 4)}, {{0}}},
     {"(ScatterElements)", "input updates is int32, data is float: they must match"}},
    {{13, "ScatterElements", "x,i,u", {XS, OW_IN("i", GR_INT64, 1, 2), OW_IN("u", GR_FLOAT, 1, 2)}, {{0}}},
     {"(ScatterElements)", "input indices has rank 1; it must have data's rank 2"}},
    {{13, "ScatterElements", "x,i,u", {XS, IS, OW_IN("u", GR_FLOAT, 2, 2, 3)}, {{0}}},
     {"(ScatterElements)", "input updates must have indices' shape"}},
    {{13, "ScatterElements", "x,i,u", {XS, OW_IN("i", GR_INT64, 2, 2, 5), OW_IN("u", GR_FLOAT, 2, 2, 5)}, {{0}}},
     {"(ScatterElements)", "input indices dimension 1 (5) exceeds data's (4); only the axis (0) may"}},
    {{18, "ScatterElements", "x,i,u",
      {OW_IN("x", GR_BOOL, 1, 3), OW_IN("i", GR_INT64, 1, 2), OW_IN("u", GR_BOOL, 1, 2)},
      {OW_AS("reduction", "add")}},
     {"(ScatterElements)", "a reduction on bool data is not supported"}},
    {{11, "Scatter", "x,i,u", {XS, IS, US}, {{0}}},
     {"(Scatter)", "Scatter is replaced by ScatterElements from opset 11"}},
    {{13, "ScatterND", "x,i,u", {XS, OW_IN("i", GR_INT32, 2, 2, 1), OW_IN("u", GR_FLOAT, 2, 2, 4)}, {{0}}},
     {"(ScatterND)", "input 'indices' is int32, not int64"}},
    {{13, "ScatterND", "x,i,u", {XS, OW_IN("i", GR_INT64, 2, 2, 3), OW_IN("u", GR_FLOAT, 1, 2)}, {{0}}},
     {"(ScatterND)", "input indices' last dimension is 3; it must be in [1, 2] (data's rank)"}},
    {{13, "ScatterND", "x,i,u", {XS, OW_IN("i", GR_INT64, 2, 2, 1), OW_IN("u", GR_FLOAT, 2, 2, 3)}, {{0}}},
     {"(ScatterND)", "input updates must have shape indices.shape[:-1] + data.shape[1:]"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scatter),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
