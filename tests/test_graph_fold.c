/*
 * graph/infer_fold.c and Slice's folding in infer_tensor.c: shape
 * arithmetic on known small tensors gets known contents during
 * gr_infer_shapes. Add, Sub, Mul, Div (with broadcasting), Neg, Abs and
 * Cast of random int32/int64/float/double initializers against a naive
 * reference; the cases left unfolded (integer division by zero, a cast
 * out of int32's range); a 1-D Slice of a shape (negative step too); and
 * end to end, an expanded LayerNormalization's reshape target computed
 * from Shape, Size, Sub, Slice, ConstantOfShape and Concat, and a Range
 * whose limit is a Cast of arithmetic on initializers, both compiled and
 * run; a limit computed from a graph input is still refused.
 *
 * Tolerance: exact (float results are rounded to float as the node would).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

/* Writes w, loads and infers it; the known contents of value `name`. */
static const gr_tensor *folded(ow_model *w, const char *name, gr_model **m)
{
    *m = ow_load_ok(w);
    char *err = NULL;
    if (gr_infer_shapes(*m, 0, NULL, &err) != 0) fail_msg("infer: %s", err);
    int v = gr_graph_find_value((*m)->graph, name);
    assert_true(v >= 0);
    return (*m)->graph->values[v].data;
}

static double tget(const gr_tensor *t, int64_t i)
{
    switch (t->elem_type) {
    case GR_INT32: return ((const int32_t *)t->data)[i];
    case GR_INT64: return (double)((const int64_t *)t->data)[i];
    case GR_FLOAT: return ((const float *)t->data)[i];
    default: return ((const double *)t->data)[i];
    }
}

static void put(int et, void *p, int64_t i, double v)
{
    switch (et) {
    case GR_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case GR_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case GR_FLOAT: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v;
    }
}

static size_t esize(int et) { return et == GR_INT32 || et == GR_FLOAT ? 4 : 8; }

static void binary_case(uint64_t *rng, const char *op, int et)
{
    double a[6], b[3];
    unsigned char ab[48], bb[24];
    for (int i = 0; i < 6; i++) {
        a[i] = floor(tu_rand_uniform(rng, -50, 50));
        if (et == GR_FLOAT || et == GR_DOUBLE) a[i] += 0.25;
        put(et, ab, i, a[i]);
    }
    for (int i = 0; i < 3; i++) {
        b[i] = floor(tu_rand_uniform(rng, 1, 9)) * (i == 1 ? -1 : 1);
        put(et, bb, i, b[i]);
    }
    ow_model *w = ow_new(13);
    ow_init(w, "a", et, 2, (int64_t[]){2, 3}, ab, 6 * esize(et));
    ow_init(w, "b", et, 1, (int64_t[]){3}, bb, 3 * esize(et));
    ow_node_add(w, "", op, "a,b", "y");
    ow_output(w, "y");
    gr_model *m;
    const gr_tensor *y = folded(w, "y", &m);
    if (!y) fail_msg("%s of %s constants was not folded", op, gr_elem_type_name(et));
    assert_int_equal(y->numel, 6);
    for (int i = 0; i < 6; i++) {
        double x = a[i], z = b[i % 3], want;
        switch (op[0]) {
        case 'A': want = x + z; break;
        case 'S': want = x - z; break;
        case 'M': want = x * z; break;
        default: want = et == GR_INT32 || et == GR_INT64 ? trunc(x / z) : x / z;
        }
        if (et == GR_FLOAT) want = (float)want;
        if (tget(y, i) != want)
            fail_msg("%s %s element %d: got %.17g, expected %.17g", op, gr_elem_type_name(et), i, tget(y, i), want);
    }
    gr_model_free(m);
    ow_free(w);
}

static void test_binary(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div"};
    static const int types[] = {GR_INT32, GR_INT64, GR_FLOAT, GR_DOUBLE};
    for (int o = 0; o < 4; o++)
        for (int t = 0; t < 4; t++) binary_case(&rng, ops[o], types[t]);
}

static void unary_case(const char *op, int from, int to, const double *vals, int n, const double *want)
{
    unsigned char buf[64];
    for (int i = 0; i < n; i++) put(from, buf, i, vals[i]);
    ow_model *w = ow_new(13);
    ow_init(w, "a", from, 1, (int64_t[]){n}, buf, (size_t)n * esize(from));
    ow_node *nd = ow_node_add(w, "", op, "a", "y");
    if (strcmp(op, "Cast") == 0) ow_attr_int(nd, "to", to);
    ow_output(w, "y");
    gr_model *m;
    const gr_tensor *y = folded(w, "y", &m);
    if (!want) {
        assert_null(y);
    } else {
        if (!y) fail_msg("%s was not folded", op);
        for (int i = 0; i < n; i++)
            if (tget(y, i) != want[i]) fail_msg("%s element %d: got %.17g, expected %.17g", op, i, tget(y, i), want[i]);
    }
    gr_model_free(m);
    ow_free(w);
}

static void test_unary(void **state)
{
    (void)state;
    unary_case("Neg", GR_INT64, 0, (double[]){3, -4, 0}, 3, (double[]){-3, 4, 0});
    unary_case("Abs", GR_FLOAT, 0, (double[]){-2.5, 1.5}, 2, (double[]){2.5, 1.5});
    unary_case("Cast", GR_INT64, GR_FLOAT, (double[]){7, -3}, 2, (double[]){7, -3});
    unary_case("Cast", GR_DOUBLE, GR_INT32, (double[]){2.75, -2.75}, 2, (double[]){2, -2});
    unary_case("Cast", GR_FLOAT, GR_DOUBLE, (double[]){0.1}, 1, (double[]){(float)0.1});
    /* out of int32's range: left to run */
    unary_case("Cast", GR_DOUBLE, GR_INT32, (double[]){3e9}, 1, NULL);
}

/* Integer division by zero is not folded (the node runs). */
static void test_div_zero(void **state)
{
    (void)state;
    int64_t a[2] = {4, 5}, b[2] = {2, 0};
    ow_model *w = ow_new(13);
    ow_init(w, "a", GR_INT64, 1, (int64_t[]){2}, a, sizeof a);
    ow_init(w, "b", GR_INT64, 1, (int64_t[]){2}, b, sizeof b);
    ow_node_add(w, "", "Div", "a,b", "y");
    ow_output(w, "y");
    gr_model *m;
    assert_null(folded(w, "y", &m));
    gr_model_free(m);
    ow_free(w);
}

static void test_slice(void **state)
{
    (void)state;
    int64_t d[5] = {10, 11, 12, 13, 14};
    ow_model *w = ow_new(13);
    ow_init(w, "d", GR_INT64, 1, (int64_t[]){5}, d, sizeof d);
    ow_init(w, "s", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){-1}, 8);
    ow_init(w, "e", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){0}, 8);
    ow_init(w, "x", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){0}, 8);
    ow_init(w, "t", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){-2}, 8);
    ow_node_add(w, "", "Slice", "d,s,e,x,t", "y");
    ow_output(w, "y");
    gr_model *m;
    const gr_tensor *y = folded(w, "y", &m);
    if (!y) fail_msg("Slice of a known 1-D tensor was not folded");
    assert_int_equal(y->numel, 2);
    assert_int_equal(((int64_t *)y->data)[0], 14);
    assert_int_equal(((int64_t *)y->data)[1], 12);
    gr_model_free(m);
    ow_free(w);
}

/* x [3, 4, 5] reshaped to [3, -1], the target built as an expanded
 * LayerNormalization builds its own: Concat(Slice(Shape(x), [0], [1]),
 * ConstantOfShape([Size(Shape(x)) - 2], -1)). */
static void test_end_to_end(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    ow_model *w = ow_new(13);
    int64_t xs[3] = {3, 4, 5};
    ow_input(w, "x", GR_FLOAT, 3, xs);
    ow_init(w, "z", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){0}, 8);
    ow_init(w, "o", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){1}, 8);
    ow_init(w, "two", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){2}, 8);
    ow_init(w, "m1", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){-1}, 8);
    ow_node_add(w, "", "Shape", "x", "sh");
    ow_node_add(w, "", "Slice", "sh,z,o", "pre");
    ow_node_add(w, "", "Size", "sh", "rank");
    ow_node_add(w, "", "Sub", "rank,two", "n"); /* 1 */
    ow_node *c = ow_node_add(w, "", "ConstantOfShape", "n", "suf");
    ow_attr_tensor(c, "value", GR_INT64, 1, (int64_t[]){1}, (int64_t[]){-1}, 8);
    ow_attr_int(ow_node_add(w, "", "Concat", "pre,suf", "target"), "axis", 0);
    ow_node_add(w, "", "Reshape", "x,target", "y");
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x = ow_tensor((DLDataType){kDLFloat, 32, 1}, 3, xs);
    for (int64_t i = 0; i < 60; i++) ow_set(x, i, tu_rand_uniform(&rng, -1, 1));
    const DLTensor *y = ow_run(e, 1, &x, 0);
    assert_int_equal(y->ndim, 2);
    assert_int_equal(y->shape[0], 3);
    assert_int_equal(y->shape[1], 20);
    for (int64_t i = 0; i < 60; i++) assert_true(ow_get(y, i) == ow_get(x, i));
    rt_tensor_free(x);
    ow_finish(w, e, m);
}

/* Range(0, Cast(Mul(a, b)), 1.5) with initializers b = 2 and a = 3 (a
 * static length), or with a a graph input (a_input). */
static ow_model *range_model(bool a_input)
{
    ow_model *w = ow_new(13);
    if (a_input) ow_input(w, "a", GR_INT64, 0, NULL);
    else ow_init(w, "a", GR_INT64, 0, NULL, (int64_t[]){3}, 8);
    ow_init(w, "b", GR_INT64, 0, NULL, (int64_t[]){2}, 8);
    ow_init(w, "s", GR_FLOAT, 0, NULL, (float[]){0}, 4);
    ow_init(w, "d", GR_FLOAT, 0, NULL, (float[]){1.5f}, 4);
    ow_node_add(w, "", "Mul", "a,b", "p");
    ow_attr_int(ow_node_add(w, "", "Cast", "p", "lim"), "to", GR_FLOAT);
    ow_node_add(w, "", "Range", "s,lim,d", "y");
    ow_output(w, "y");
    return w;
}

static void test_range_limit(void **state)
{
    (void)state;
    ow_model *w = range_model(false);
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    const DLTensor *y = ow_run(e, 0, NULL, 0);
    assert_int_equal(ow_numel(y), 4);
    for (int i = 0; i < 4; i++) assert_true(ow_get(y, i) == 1.5 * i);
    ow_finish(w, e, m);
    /* the same limit from a graph input: refused */
    ow_expect_error(range_model(true), "(Range)", "input 'limit' ('lim') must be a constant");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_div_zero),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_end_to_end),
        cmocka_unit_test(test_range_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
