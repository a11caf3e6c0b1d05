/*
 * graph/lower_tensor.c: one-node ONNX models (written here) run through
 * gr_compile/gr_run on fresh random data, outputs poisoned first, against
 * naive references — what ONNX's backend suite lacks: Gather with
 * run-time indices that are negative or out of range (clamped), of int32,
 * a scalar, on any axis; GatherElements on every axis with negative
 * indices, indices longer or shorter than data on the axis; Slice with negative steps, clamped ends and
 * negative axes on integer data; Split by attribute (opset 11) and by
 * num_outputs (opset 18, uneven); Squeeze/Unsqueeze by attribute (opset
 * 11); Concat of three unequal inputs; Reshape with 0 and -1; Flatten at
 * axis 0; Identity of a run-time input; ConstantOfShape too large for
 * inference to fold. And te's data-dependent read (Gather's form) under
 * the schedules a tuner applies: vectorized, the index stage inlined or
 * computed at each loop, the gathered stage computed at the loop that
 * reads it (its region bounded by the clamp around the index).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, I32 = {kDLInt, 32, 1}, I64 = {kDLInt, 64, 1};

static DLTensor *rand_tensor(uint64_t *rng, DLDataType dt, int ndim, const int64_t *shape)
{
    DLTensor *t = ow_tensor(dt, ndim, shape);
    for (int64_t i = 0; i < ow_numel(t); i++) ow_set(t, i, tu_rand_uniform(rng, -1000, 1000));
    return t;
}

/* Output y compared element by element with want (exact: data moves). */
static void expect_values(const char *what, const DLTensor *y, int ndim, const int64_t *shape,
                          const double *want)
{
    assert_int_equal(y->ndim, ndim ? ndim : 1);
    for (int d = 0; d < ndim; d++) assert_int_equal(y->shape[d], shape[d]);
    for (int64_t i = 0; i < ow_numel(y); i++)
        if (ow_get(y, i) != want[i])
            fail_msg("%s element %lld: %.9g, expected %.9g", what, (long long)i, ow_get(y, i), want[i]);
}

/* ---------------- Gather ---------------- */

/* data[3,5,2] gathered on `axis` with indices of shape is (rank ni), the
 * indices a run-time input; values outside [-d, d) are clamped (ONNX
 * leaves them undefined). */
static void check_gather(uint64_t *rng, int axis, DLDataType it, int ni, const int64_t *is,
                         const int64_t *vals)
{
    int64_t ds[3] = {3, 5, 2};
    ow_model *w = ow_new(13);
    ow_input(w, "data", GR_FLOAT, 3, ds);
    ow_input(w, "idx", it.bits == 32 ? GR_INT32 : GR_INT64, ni, is);
    ow_node *n = ow_node_add(w, "", "Gather", "data,idx", "y");
    ow_attr_int(n, "axis", axis);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = rand_tensor(rng, F32, 3, ds), *ix = ow_tensor(it, ni, is);
    int64_t nidx = ow_numel(ix);
    for (int64_t j = 0; j < nidx; j++) ow_set(ix, j, (double)vals[j]);
    DLTensor *ins[2] = {x, ix};
    const DLTensor *y = ow_run(e, 2, ins, 0);
    int64_t outer = 1, inner = 1, d = ds[axis], os[8], no = 0;
    for (int k = 0; k < axis; k++) outer *= ds[k], os[no++] = ds[k];
    for (int k = 0; k < ni; k++) os[no++] = is[k];
    for (int k = axis + 1; k < 3; k++) inner *= ds[k], os[no++] = ds[k];
    double *want = malloc(sizeof *want * (size_t)(outer * nidx * inner));
    for (int64_t o = 0, at = 0; o < outer; o++)
        for (int64_t j = 0; j < nidx; j++) {
            int64_t q = vals[j] < 0 ? vals[j] + d : vals[j];
            q = q < 0 ? 0 : q >= d ? d - 1 : q;
            for (int64_t i = 0; i < inner; i++) want[at++] = ow_get(x, (o * d + q) * inner + i);
        }
    expect_values("Gather", y, no, os, want);
    free(want);
    rt_tensor_free(x);
    rt_tensor_free(ix);
    ow_finish(w, e, m);
}

static void test_gather_runtime_indices(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    int64_t is23[2] = {2, 3}, is4[1] = {4};
    int64_t v6[6] = {0, 4, -1, -5, 2, 3};
    check_gather(&rng, 1, I64, 2, is23, v6);
    check_gather(&rng, 1, I32, 2, is23, v6);
    int64_t vout[4] = {7, -9, 100, -100}; /* clamped into [0, d) */
    check_gather(&rng, 1, I64, 1, is4, vout);
    int64_t v0[4] = {2, -3, 0, 1};
    check_gather(&rng, 0, I64, 1, is4, v0);
    int64_t v2[4] = {1, -2, 0, -1};
    check_gather(&rng, 2, I32, 1, is4, v2);
    int64_t vs[1] = {-1};
    check_gather(&rng, 1, I64, 0, NULL, vs); /* a scalar index drops the axis */
}

/* te's form of Gather, built directly, under the schedules a tuner
 * applies. Stage P (a copy of X) is what the index picks from, J (a copy
 * of I) the index: computing P at O's inner loop j used to leave the
 * unlowered read J[j] in P's region bound (it stood for itself), which
 * failed in code generation; a read inside an index now takes the
 * constant bounds of the clamp around it. */
static void check_gather_schedule(int variant, bool bounds_check)
{
    te_ctx *ctx = te_ctx_new();
    te_tensor *X = te_placeholder(ctx, "X", TE_FLOAT32, TE_SHAPE(4, 16));
    te_tensor *I = te_placeholder(ctx, "I", TE_INT64, TE_SHAPE(8));
    te_expr *p0 = te_axis(ctx, "p0", 4), *p1 = te_axis(ctx, "p1", 16), *j0 = te_axis(ctx, "j0", 8);
    te_tensor *P = te_compute(ctx, "P", TE_AXES(p0, p1), te_mul(te_read(X, p0, p1), te_float(ctx, 2)));
    te_tensor *J = te_compute(ctx, "J", TE_AXES(j0), te_add(te_read(I, j0), te_int(ctx, 1)));
    te_expr *i = te_axis(ctx, "i", 4), *j = te_axis(ctx, "j", 8);
    te_expr *k = te_read(J, j);
    k = te_select(te_lt(k, te_int(ctx, 0)), te_add(k, te_int(ctx, 16)), k);
    k = te_max(te_min(k, te_int(ctx, 15)), te_int(ctx, 0));
    te_tensor *O = te_compute(ctx, "O", TE_AXES(i, j), te_read(P, i, k));
    assert_non_null(O);
    sch_schedule *s = sch_create(ctx, TE_TENSORS(O));
    assert_non_null(s);
    te_expr *jo, *ji;
    int rc = 0;
    switch (variant) {
    case 1: rc = sch_split(s, O, j, 4, &jo, &ji) || sch_vectorize(s, O, ji); break;
    case 2: rc = sch_compute_inline(s, J) || sch_compute_inline(s, P); break;
    case 3: rc = sch_compute_at(s, J, O, j) || sch_compute_at(s, P, O, i); break;
    case 4: rc = sch_compute_at(s, P, O, j); break;
    case 5: rc = sch_compute_at(s, J, O, i) || sch_compute_at(s, P, O, j); break;
    default: break;
    }
    if (rc) fail_msg("variant %d: %s", variant, te_ctx_errmsg(ctx));
    cg_build_options bo = {0};
    bo.bounds_check = bounds_check;
    te_tensor *args[3] = {X, I, O};
    rt_module *mod = cg_build(s, 3, args, "llvm", &bo);
    if (!mod) fail_msg("variant %d: %s", variant, te_ctx_errmsg(ctx));
    DLTensor *x = ow_tensor(F32, 2, (int64_t[]){4, 16}), *ix = ow_tensor(I64, 1, (int64_t[]){8});
    DLTensor *o = ow_tensor(F32, 2, (int64_t[]){4, 8});
    for (int a = 0; a < 64; a++) ow_set(x, a, a);
    int64_t idx[8] = {0, 3, -2, -17, 14, 99, -100, 6};
    for (int a = 0; a < 8; a++) ow_set(ix, a, (double)idx[a]);
    for (int a = 0; a < 32; a++) ow_set(o, a, NAN);
    DLTensor *av[3] = {x, ix, o};
    if (rt_call(mod, "default", 3, av) != 0) fail_msg("variant %d: %s", variant, rt_module_errmsg(mod));
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 8; c++) {
            int64_t q = idx[c] + 1;
            q = q < 0 ? q + 16 : q;
            q = q < 0 ? 0 : q > 15 ? 15 : q;
            double want = 2.0 * (r * 16 + q);
            if (ow_get(o, r * 8 + c) != want)
                fail_msg("variant %d O[%d,%d] = %g, expected %g", variant, r, c, ow_get(o, r * 8 + c), want);
        }
    rt_tensor_free(x);
    rt_tensor_free(ix);
    rt_tensor_free(o);
    rt_module_free(mod);
    te_ctx_free(ctx);
}

static void test_gather_schedules(void **state)
{
    (void)state;
    for (int v = 0; v <= 5; v++) {
        check_gather_schedule(v, false);
        check_gather_schedule(v, true);
    }
}

/* ---------------- GatherElements ---------------- */

/* data [3,4,5] (float or int64) picked along `axis` by run-time indices
 * of shape is (at most data's off the axis, any extent on it) drawn from
 * [-d, d): out[i] = data[i with i[axis] = idx[i] (+ d when negative)]. */
static void check_gather_elements(uint64_t *rng, DLDataType dt, DLDataType it, int axis, const int64_t *is)
{
    int64_t ds[3] = {3, 4, 5};
    ow_model *w = ow_new(13);
    ow_input(w, "data", ow_elem_type(dt), 3, ds);
    ow_input(w, "idx", ow_elem_type(it), 3, is);
    ow_attr_int(ow_node_add(w, "", "GatherElements", "data,idx", "y"), "axis", axis);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    int ax = axis < 0 ? axis + 3 : axis;
    int64_t d = ds[ax];
    DLTensor *x = rand_tensor(rng, dt, 3, ds), *ix = ow_tensor(it, 3, is);
    for (int64_t j = 0; j < ow_numel(ix); j++) ow_set(ix, j, floor(tu_rand_uniform(rng, (double)-d, (double)d)));
    DLTensor *ins[2] = {x, ix};
    const DLTensor *y = ow_run(e, 2, ins, 0);
    double *want = malloc(sizeof *want * (size_t)ow_numel(ix));
    for (int64_t o = 0; o < ow_numel(ix); o++) {
        int64_t c[3] = {o / (is[1] * is[2]), (o / is[2]) % is[1], o % is[2]};
        int64_t q = (int64_t)ow_get(ix, o);
        c[ax] = q < 0 ? q + d : q;
        want[o] = ow_get(x, (c[0] * ds[1] + c[1]) * ds[2] + c[2]);
    }
    expect_values("GatherElements", y, 3, is, want);
    free(want);
    rt_tensor_free(x);
    rt_tensor_free(ix);
    ow_finish(w, e, m);
}

static void test_gather_elements(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    check_gather_elements(&rng, F32, I64, 1, (int64_t[]){3, 7, 5});
    check_gather_elements(&rng, F32, I32, -1, (int64_t[]){2, 4, 3});
    check_gather_elements(&rng, I64, I64, 0, (int64_t[]){5, 2, 5});
}

/* ---------------- Slice ---------------- */

static void check_slice(uint64_t *rng, const int64_t *st, const int64_t *en, const int64_t *ax,
                        const int64_t *sp, int n)
{
    int64_t ds[2] = {6, 7}, nn[1] = {n};
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_INT32, 2, ds);
    ow_init(w, "st", GR_INT64, 1, nn, st, 8 * (size_t)n);
    ow_init(w, "en", GR_INT64, 1, nn, en, 8 * (size_t)n);
    ow_init(w, "ax", GR_INT64, 1, nn, ax, 8 * (size_t)n);
    ow_init(w, "sp", GR_INT64, 1, nn, sp, 8 * (size_t)n);
    ow_node_add(w, "", "Slice", "x,st,en,ax,sp", "y");
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = rand_tensor(rng, I32, 2, ds);
    const DLTensor *y = ow_run(e, 1, &x, 0);
    /* numpy's slice rules per axis: the start, step and count. */
    int64_t b[2] = {0, 0}, s[2] = {1, 1}, cnt[2] = {6, 7};
    for (int i = 0; i < n; i++) {
        int a = (int)(ax[i] < 0 ? ax[i] + 2 : ax[i]);
        int64_t d = ds[a], lo = st[i], hi = en[i], step = sp[i];
        if (lo < 0) lo += d;
        if (hi < 0) hi += d;
        if (step > 0) {
            lo = lo < 0 ? 0 : lo > d ? d : lo;
            hi = hi < 0 ? 0 : hi > d ? d : hi;
        } else {
            lo = lo < 0 ? -1 : lo > d - 1 ? d - 1 : lo;
            hi = hi < -1 ? -1 : hi > d - 1 ? d - 1 : hi;
        }
        int64_t c = 0;
        for (int64_t v = lo; step > 0 ? v < hi : v > hi; v += step) c++;
        b[a] = lo;
        s[a] = step;
        cnt[a] = c;
    }
    double want[64];
    int at = 0;
    for (int64_t r = 0; r < cnt[0]; r++)
        for (int64_t c = 0; c < cnt[1]; c++) want[at++] = ow_get(x, (b[0] + r * s[0]) * 7 + b[1] + c * s[1]);
    expect_values("Slice", y, 2, cnt, want);
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_slice(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    check_slice(&rng, (int64_t[]){-1, 5}, (int64_t[]){-100, 0}, (int64_t[]){0, -1},
                (int64_t[]){-2, -2}, 2);
    check_slice(&rng, (int64_t[]){1}, (int64_t[]){INT64_MAX}, (int64_t[]){1}, (int64_t[]){3}, 1);
    check_slice(&rng, (int64_t[]){-20, 2}, (int64_t[]){4, 1000}, (int64_t[]){-2, 1},
                (int64_t[]){1, 2}, 2);
    check_slice(&rng, (int64_t[]){100}, (int64_t[]){-100}, (int64_t[]){0}, (int64_t[]){-1}, 1);
}

/* ---------------- Split ---------------- */

/* x[2,7] split on axis 1 into pieces of `sizes` (nout of them). */
static void check_split(uint64_t *rng, ow_model *w, int nout, const int64_t *sizes)
{
    int64_t ds[2] = {2, 7};
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = rand_tensor(rng, F32, 2, ds);
    int64_t off = 0;
    for (int k = 0; k < nout; k++) {
        const DLTensor *y = ow_run(e, 1, &x, k);
        double want[14];
        int at = 0;
        for (int r = 0; r < 2; r++)
            for (int64_t c = 0; c < sizes[k]; c++) want[at++] = ow_get(x, r * 7 + off + c);
        expect_values("Split", y, 2, (int64_t[]){2, sizes[k]}, want);
        off += sizes[k];
    }
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_split(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    int64_t ds[2] = {2, 7};
    /* opset 18: num_outputs, ceil(7 / 3) = 3 each, the last one 1 */
    ow_model *w = ow_new(18);
    ow_input(w, "x", GR_FLOAT, 2, ds);
    ow_node *n = ow_node_add(w, "", "Split", "x", "a,b,c");
    ow_attr_int(n, "axis", -1);
    ow_attr_int(n, "num_outputs", 3);
    ow_output(w, "a");
    ow_output(w, "b");
    ow_output(w, "c");
    check_split(&rng, w, 3, (int64_t[]){3, 3, 1});
    /* opset 11: the split attribute */
    w = ow_new(11);
    ow_input(w, "x", GR_FLOAT, 2, ds);
    n = ow_node_add(w, "", "Split", "x", "a,b");
    ow_attr_int(n, "axis", 1);
    ow_attr_ints(n, "split", 2, (int64_t[]){5, 2});
    ow_output(w, "a");
    ow_output(w, "b");
    check_split(&rng, w, 2, (int64_t[]){5, 2});
    /* opset 13: the split input */
    w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 2, ds);
    ow_init(w, "s", GR_INT64, 1, (int64_t[]){3}, (int64_t[]){1, 4, 2}, 24);
    n = ow_node_add(w, "", "Split", "x,s", "a,b,c");
    ow_attr_int(n, "axis", 1);
    ow_output(w, "a");
    ow_output(w, "b");
    ow_output(w, "c");
    check_split(&rng, w, 3, (int64_t[]){1, 4, 2});
}

/* ---------------- element order kept ---------------- */

/* y keeps x's elements in order with shape ys (Reshape, Flatten, Squeeze,
 * Unsqueeze, Identity). */
static void check_same_order(uint64_t *rng, ow_model *w, int xn, const int64_t *xs, int yn,
                             const int64_t *ys, const char *what)
{
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = rand_tensor(rng, I64, xn, xs);
    const DLTensor *y = ow_run(e, 1, &x, 0);
    double want[256];
    for (int64_t i = 0; i < ow_numel(x); i++) want[i] = ow_get(x, i);
    expect_values(what, y, yn, ys, want);
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

static void test_reshape_family(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    int64_t xs[4] = {2, 1, 3, 4};
    /* Reshape with 0 (copy) and -1 (infer) */
    ow_model *w = ow_new(14);
    ow_input(w, "x", GR_INT64, 4, xs);
    ow_init(w, "s", GR_INT64, 1, (int64_t[]){3}, (int64_t[]){0, -1, 2}, 24);
    ow_node_add(w, "", "Reshape", "x,s", "y");
    ow_output(w, "y");
    check_same_order(&rng, w, 4, xs, 3, (int64_t[]){2, 6, 2}, "Reshape");
    /* Flatten at axis 0 */
    w = ow_new(13);
    ow_input(w, "x", GR_INT64, 4, xs);
    ow_attr_int(ow_node_add(w, "", "Flatten", "x", "y"), "axis", 0);
    ow_output(w, "y");
    check_same_order(&rng, w, 4, xs, 2, (int64_t[]){1, 24}, "Flatten");
    /* Squeeze and Unsqueeze by attribute (opset 11) */
    w = ow_new(11);
    ow_input(w, "x", GR_INT64, 4, xs);
    ow_attr_ints(ow_node_add(w, "", "Squeeze", "x", "y"), "axes", 1, (int64_t[]){-3});
    ow_output(w, "y");
    check_same_order(&rng, w, 4, xs, 3, (int64_t[]){2, 3, 4}, "Squeeze");
    w = ow_new(11);
    ow_input(w, "x", GR_INT64, 4, xs);
    ow_attr_ints(ow_node_add(w, "", "Unsqueeze", "x", "y"), "axes", 2, (int64_t[]){0, -1});
    ow_output(w, "y");
    check_same_order(&rng, w, 4, xs, 6, (int64_t[]){1, 2, 1, 3, 4, 1}, "Unsqueeze");
    /* Squeeze with no axes drops every extent-1 dimension (opset 13) */
    w = ow_new(13);
    ow_input(w, "x", GR_INT64, 4, xs);
    ow_node_add(w, "", "Squeeze", "x", "y");
    ow_output(w, "y");
    check_same_order(&rng, w, 4, xs, 3, (int64_t[]){2, 3, 4}, "Squeeze");
    /* Identity of a run-time input */
    w = ow_new(13);
    ow_input(w, "x", GR_INT64, 4, xs);
    ow_node_add(w, "", "Identity", "x", "y");
    ow_output(w, "y");
    check_same_order(&rng, w, 4, xs, 4, xs, "Identity");
}

/* ---------------- Concat, Transpose ---------------- */

static void test_concat_transpose(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    int64_t s0[3] = {2, 2, 3}, s1[3] = {2, 1, 3}, s2[3] = {2, 3, 3};
    ow_model *w = ow_new(13);
    ow_input(w, "a", GR_INT32, 3, s0);
    ow_input(w, "b", GR_INT32, 3, s1);
    ow_input(w, "c", GR_INT32, 3, s2);
    ow_attr_int(ow_node_add(w, "", "Concat", "a,b,c", "y"), "axis", -2);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *ins[3] = {rand_tensor(&rng, I32, 3, s0), rand_tensor(&rng, I32, 3, s1),
                        rand_tensor(&rng, I32, 3, s2)};
    const DLTensor *y = ow_run(e, 3, ins, 0);
    double want[36];
    int at = 0;
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++) {
            int64_t len = k == 0 ? 2 : k == 1 ? 1 : 3;
            for (int64_t r = 0; r < len * 3; r++) want[at++] = ow_get(ins[k], i * len * 3 + r);
        }
    expect_values("Concat", y, 3, (int64_t[]){2, 6, 3}, want);
    for (int k = 0; k < 3; k++) rt_tensor_free(ins[k]);
    ow_finish(w, e, m);
    /* Transpose without perm reverses the dimensions. */
    w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 3, s2);
    ow_node_add(w, "", "Transpose", "x", "y");
    ow_output(w, "y");
    e = ow_compile_ok(w, &m);
    DLTensor *x = rand_tensor(&rng, F32, 3, s2);
    y = ow_run(e, 1, &x, 0);
    at = 0;
    for (int c = 0; c < 3; c++)
        for (int b = 0; b < 3; b++)
            for (int a = 0; a < 2; a++) want[at++] = ow_get(x, (a * 3 + b) * 3 + c);
    expect_values("Transpose", y, 3, (int64_t[]){3, 3, 2}, want);
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

/* ---------------- ConstantOfShape ---------------- */

/* 70x80 = 5600 elements: more than inference folds (4096), so it runs. */
static void test_constant_of_shape(void **state)
{
    (void)state;
    int64_t shape[2] = {70, 80};
    for (int variant = 0; variant < 2; variant++) {
        ow_model *w = ow_new(13);
        ow_input(w, "x", GR_FLOAT, 1, (int64_t[]){1});
        ow_init(w, "s", GR_INT64, 1, (int64_t[]){2}, shape, 16);
        ow_node *n = ow_node_add(w, "", "ConstantOfShape", "s", "c");
        int64_t big = INT64_C(1) << 60;
        if (variant == 1) ow_attr_tensor(n, "value", GR_INT64, 1, (int64_t[]){1}, &big, 8);
        ow_node_add(w, "", "Identity", "x", "y");
        ow_output(w, "c");
        ow_output(w, "y");
        gr_model *m;
        gr_exec *e = ow_compile_ok(w, &m);
        DLTensor *x = ow_tensor(F32, 1, (int64_t[]){1});
        ow_set(x, 0, 1);
        const DLTensor *c = ow_run(e, 1, &x, 0);
        assert_int_equal(c->ndim, 2);
        assert_int_equal(c->shape[0] * c->shape[1], 5600);
        for (int64_t i = 0; i < 5600; i++) {
            if (variant == 0) assert_true(((const float *)c->data)[i] == 0.0f);
            else assert_true(((const int64_t *)c->data)[i] == big);
        }
        rt_tensor_free(x);
        ow_finish(w, e, m);
    }
}

/* ---------------- static inputs ---------------- */

/* The inputs gr_compile reads when it compiles, as callers (the backend
 * test runner) ask for them. */
static void test_input_static(void **state)
{
    (void)state;
    assert_true(gr_op_input_static("", "Reshape", 13, 1));
    assert_false(gr_op_input_static("", "Reshape", 13, 0));
    assert_true(gr_op_input_static("ai.onnx", "Squeeze", 13, 1));
    assert_false(gr_op_input_static("", "Squeeze", 11, 1));
    assert_false(gr_op_input_static("", "Split", 12, 1));
    assert_true(gr_op_input_static("", "Split", 18, 1));
    for (int k = 1; k <= 4; k++) assert_true(gr_op_input_static("", "Slice", 13, k));
    assert_false(gr_op_input_static("", "Slice", 13, 0));
    assert_true(gr_op_input_static("", "ConstantOfShape", 11, 0));
    assert_false(gr_op_input_static("", "Gather", 13, 1)); /* indices are read at run time */
    assert_false(gr_op_input_static("", "NoSuchOp", 13, 1));
    assert_false(gr_op_input_static("", "Reshape", 13, -1));
    assert_false(gr_op_input_static("", "Reshape", 13, 40));
    assert_false(gr_op_input_static("", NULL, 13, 1));
}

/* ---------------- refusals ---------------- */

/* Compiling w with one kernel a node (gr_compile_options.no_fuse) fails
 * with a message holding a and b; frees w. */
static void expect_unfused_error(ow_model *w, const char *a, const char *b)
{
    gr_model *m = ow_load_ok(w);
    char *err = NULL;
    gr_exec *e = gr_compile(m, &(gr_compile_options){.no_fuse = true}, &err);
    assert_null(e);
    tu_assert_msg_has(err, a, b);
    free(err);
    gr_model_free(m);
    ow_free(w);
}

/* x [4, 3] -> Slice rows 2:2 (z, empty) -> Concat with x. */
static ow_model *empty_slice_model(void)
{
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 2, (int64_t[]){4, 3});
    ow_init(w, "s", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){2}, 8);
    ow_node_add(w, "", "Slice", "x,s,s", "z");
    ow_attr_int(ow_node_add(w, "", "Concat", "z,x", "y"), "axis", 0);
    ow_output(w, "y");
    return w;
}

/* x [2, 3] -> Reshape to rank 10 (z) -> Reshape to [3, 2]. */
static ow_model *rank10_model(void)
{
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 2, (int64_t[]){2, 3});
    ow_init(w, "s10", GR_INT64, 1, (int64_t[]){10}, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 2, 3}, 80);
    ow_init(w, "s2", GR_INT64, 1, (int64_t[]){2}, (int64_t[]){3, 2}, 16);
    ow_node_add(w, "", "Reshape", "x,s10", "z");
    ow_node_add(w, "", "Reshape", "z,s2", "y");
    ow_output(w, "y");
    return w;
}

/* Empty tensors (a zero extent) are known without running anything:
 * Concat drops an empty piece (fused or not, the output poisoned first),
 * an empty graph output comes back with its shape, an empty graph input
 * may be bound with no data; none of them gets a kernel. */
static void test_empty_tensors(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    for (int unfused = 0; unfused < 2; unfused++) {
        ow_model *w = empty_slice_model();
        gr_model *m = ow_load_ok(w);
        char *err = NULL;
        gr_exec *e = gr_compile(m, &(gr_compile_options){.no_fuse = unfused}, &err);
        if (!e) fail_msg("%s", err);
        /* the Concat of one piece left copies graph input x to output y */
        assert_int_equal(gr_exec_num_kernels(e), 1);
        DLTensor *x = ow_tensor((DLDataType){kDLFloat, 32, 1}, 2, (int64_t[]){4, 3});
        for (int i = 0; i < 12; i++) ow_set(x, i, tu_rand_uniform(&rng, -1, 1));
        const DLTensor *y = ow_run(e, 1, &x, 0);
        assert_int_equal(y->ndim, 2);
        assert_int_equal(y->shape[0], 4);
        for (int i = 0; i < 12; i++) assert_true(ow_get(y, i) == ow_get(x, i));
        rt_tensor_free(x);
        gr_exec_free(e);
        gr_model_free(m);
        ow_free(w);
    }
    /* x [0, 3] -> Transpose -> y [3, 0]; and a Slice of nothing */
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 2, (int64_t[]){0, 3});
    ow_input(w, "u", GR_FLOAT, 2, (int64_t[]){4, 3});
    ow_init(w, "s", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){2}, 8);
    ow_node_add(w, "", "Transpose", "x", "y");
    ow_node_add(w, "", "Slice", "u,s,s", "v");
    ow_output(w, "y");
    ow_output(w, "v");
    gr_model *m = NULL;
    gr_exec *e = ow_compile_ok(w, &m);
    assert_int_equal(gr_exec_num_kernels(e), 0);
    DLTensor x = {.data = NULL, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1},
                  .shape = (int64_t[]){0, 3}};
    DLTensor *u = ow_tensor((DLDataType){kDLFloat, 32, 1}, 2, (int64_t[]){4, 3});
    DLTensor *ins[2] = {&x, u};
    const DLTensor *y = ow_run(e, 2, ins, 0), *v = ow_run(e, 2, ins, 1);
    assert_true(y->ndim == 2 && y->shape[0] == 3 && y->shape[1] == 0);
    assert_true(v->ndim == 2 && v->shape[0] == 0 && v->shape[1] == 3);
    rt_tensor_free(u);
    ow_finish(w, e, m);
}

static void test_errors(void **state)
{
    (void)state;
    /* A ConstantOfShape value of a type Loom cannot compute (refused
     * where the node becomes a workload key). */
    ow_model *w = ow_new(13);
    ow_init(w, "s", GR_INT64, 1, (int64_t[]){2}, (int64_t[]){70, 80}, 16);
    uint16_t half = 0x3c00;
    ow_attr_tensor(ow_node_add(w, "", "ConstantOfShape", "s", "c"), "value", GR_FLOAT16, 1,
                   (int64_t[]){1}, &half, 2);
    ow_output(w, "c");
    ow_expect_error(w, "node 'n0' (ConstantOfShape)",
                    "attribute 'value' is a float16 tensor, an element type Loom cannot compute");
    /* Values without a type or shape Loom computes, each named with the
     * reason: where the node is lowered (an output of element type string,
     * an empty tensor, one of rank 10), and, one kernel a node, where the
     * executor places the values. */
    w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 2, (int64_t[]){2, 3});
    ow_attr_int(ow_node_add(w, "", "Cast", "x", "y"), "to", GR_STRING);
    ow_output(w, "y");
    ow_expect_error(w, "node 'n0' (Cast)", "output 0 has element type string, which Loom cannot compute");
    ow_expect_error(rank10_model(), "node 'n0' (Reshape)",
                    "output 0 has no shape Loom can compute: rank 10, above the 8 Loom holds");
    /* An empty tensor read into elements (ReduceSum over an empty axis):
     * refused, the value and the reason named, fused or not. */
    for (int unfused = 0; unfused < 2; unfused++) {
        w = ow_new(13);
        ow_input(w, "x", GR_FLOAT, 2, (int64_t[]){4, 3});
        ow_init(w, "s", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){2}, 8);
        ow_init(w, "a", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){0}, 8);
        ow_node_add(w, "", "Slice", "x,s,s", "z");
        ow_node_add(w, "", "ReduceSum", "z,a", "y");
        ow_output(w, "y");
        const char *a = "node 'n1' (ReduceSum)",
                   *b = "reads value 'z', an empty tensor (dimension 0 is 0), into elements";
        if (unfused) expect_unfused_error(w, a, b);
        else ow_expect_error(w, a, b);
    }
    expect_unfused_error(rank10_model(), "node 'n0' (Reshape)",
                         "value 'z' has no shape Loom can hold: rank 10, above the 8");
    /* GatherElements */
    static const ow_error_case errors[] = {
        {{13, "GatherElements", "x,i", {OW_IN("x", GR_FLOAT, 2, 3, 4), OW_IN("i", GR_INT64, 1, 3)}, {{0}}},
         {"node 'n0' (GatherElements)", "input indices has rank 1; it must have data's rank 2"}},
        {{13, "GatherElements", "x,i", {OW_IN("x", GR_FLOAT, 2, 3, 4), OW_IN("i", GR_INT64, 2, 3, 5)}, {{0}}},
         {"(GatherElements)", "input indices dimension 1 (5) exceeds data's (4); only the axis (0) may differ"}},
        {{13, "GatherElements", "x,i", {OW_IN("x", GR_FLOAT, 2, 3, 4), OW_IN("i", GR_FLOAT, 2, 3, 4)}, {{0}}},
         {"(GatherElements)", "input 'indices' is float, not int32 or int64"}},
        {{13, "GatherElements", "x,i", {OW_IN("x", GR_FLOAT, 2, 3, 4), OW_IN("i", GR_INT32, 2, 3, 4)}, {OW_AI("axis", 2)}},
         {"(GatherElements)", "attribute 'axis' 2 is out of range for rank 2"}},
        {{13, "GatherElements", "x,i", {OW_IN("x", GR_FLOAT, 0, 0), OW_IN("i", GR_INT64, 0, 0)}, {{0}}},
         {"(GatherElements)", "input data is a scalar; GatherElements needs rank >= 1"}},
        {{10, "GatherElements", "x,i", {OW_IN("x", GR_FLOAT, 2, 3, 4), OW_IN("i", GR_INT64, 2, 3, 4)}, {{0}}},
         {"GatherElements (node 'n0', opset 10;", "supported at opsets 11 to 18)"}},
    };
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_tensors),
        cmocka_unit_test(test_gather_runtime_indices),
        cmocka_unit_test(test_gather_schedules),
        cmocka_unit_test(test_gather_elements),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_reshape_family),
        cmocka_unit_test(test_concat_transpose),
        cmocka_unit_test(test_constant_of_shape),
        cmocka_unit_test(test_input_static),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
