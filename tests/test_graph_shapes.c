/*
 * graph/ shape inference: every ONNX node test whose operators are all
 * supported infers the dtype and shape of its outputs exactly as the
 * test's expected output tensors have them; the refusals (dynamic input
 * left unfixed, unknown or contradicting --shape, unsupported operators,
 * bad attributes, non-constant shape inputs) come with their messages.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_suite.h"
#include "testutil.h"

#define NODE_TESTS "/usr/share/libonnx-testdata/data/node"

/* ---------------- ONNX's node tests ---------------- */

typedef struct {
    char op[64];
    int tests;
} op_count;

typedef struct {
    int checked, skipped, failures;
    op_count ops[512];
    int n_ops;
    op_count checked_ops[256]; /* how many checked tests use each operator */
    int n_checked_ops;
} suite;

static void count_op(op_count *ops, int *n, int max, const char *op)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(ops[i].op, op) == 0) {
            ops[i].tests++;
            return;
        }
    assert_true(*n < max);
    snprintf(ops[*n].op, sizeof ops[0].op, "%s", op);
    ops[(*n)++].tests = 1;
}

static void count_unsupported(suite *s, const char *op) { count_op(s->ops, &s->n_ops, 512, op); }

/* Counts each operator of a checked test once. */
static void count_checked(suite *s, const gr_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = strcmp(g->nodes[j].op_type, g->nodes[i].op_type) == 0;
        if (!seen) count_op(s->checked_ops, &s->n_checked_ops, 256, g->nodes[i].op_type);
    }
}

static int by_count(const void *a, const void *b)
{
    const op_count *x = a, *y = b;
    return x->tests != y->tests ? y->tests - x->tests : strcmp(x->op, y->op);
}

/* Tests whose expected outputs legitimately differ from ONNX's shape
 * rules; none so far. */
static const char *const allowed[] = {NULL};

static bool is_allowed(const char *test)
{
    for (int i = 0; allowed[i]; i++)
        if (strcmp(allowed[i], test) == 0) return true;
    return false;
}

/* One test: false when it disagrees; *dynamic when the model computes a
 * shape from run-time values (an input inference needs as a constant is
 * not one: Loom's shapes are static), which counts as skipped. */
static bool check_test(const char *name, const char *dir, gr_model *m, bool *dynamic)
{
    gr_graph *g = m->graph;
    os_inputs ti;
    os_inputs_load(dir, m, &ti, true);
    char *err = NULL;
    bool ok = gr_infer_shapes(m, ti.nfixed, ti.fixed, &err) == 0;
    *dynamic = !ok && strstr(err, "must be a constant") != NULL;
    if (!ok && !*dynamic) printf("FAILED %s: %s\n", name, err);
    free(err);
    for (int o = 0; ok && o < g->n_outputs; o++) {
        gr_tensor *want = os_load_pb(dir, "output", o, true);
        if (!want) continue;
        const gr_type *got = &g->values[g->outputs[o]].type;
        /* ONNX's tests store bfloat16 data as uint16 (numpy has no bfloat16). */
        bool same = got->elem_type == want->elem_type ||
                    (got->elem_type == GR_BFLOAT16 && want->elem_type == GR_UINT16);
        same = same && got->ndim == want->ndim;
        for (int d = 0; same && d < got->ndim; d++) same = got->shape[d] == want->shape[d];
        if (!same) {
            printf("FAILED %s: output %d '%s' inferred %s[", name, o, g->values[g->outputs[o]].name,
                   gr_elem_type_name(got->elem_type));
            for (int d = 0; d < got->ndim; d++) printf("%s%lld", d ? "," : "", (long long)got->shape[d]);
            printf("], expected %s[", gr_elem_type_name(want->elem_type));
            for (int d = 0; d < want->ndim; d++) printf("%s%lld", d ? "," : "", (long long)want->shape[d]);
            printf("]\n");
            ok = false;
        }
        gr_tensor_free(want);
    }
    os_inputs_free(m, &ti);
    return ok;
}

static void test_node_suite(void **state)
{
    (void)state;
    os_need_testdata();
    suite *s = calloc(1, sizeof *s);
    assert_non_null(s);
    os_walk wk;
    assert_true(os_walk_open(&wk, NODE_TESTS));
    while (os_walk_next(&wk)) {
        char *err = NULL;
        gr_model *m = gr_model_load(wk.model, &err);
        if (!m) printf("%s\n", err);
        assert_non_null(m);
        /* Each unsupported operator counts once per test it skips. */
        char labels[64][64];
        int n_labels = 0;
        bool skipped = false;
        for (int i = 0; i < m->graph->n_nodes; i++) {
            const gr_node *n = &m->graph->nodes[i];
            int64_t opset = os_opset_of(m, n->domain);
            if (gr_op_supported(n->domain, n->op_type, opset)) continue;
            skipped = true;
            /* A supported operator at an opset outside 11..18 counts as Op@opset. */
            char label[64];
            if (gr_op_supported(n->domain, n->op_type, 13))
                snprintf(label, sizeof label, "%.40s@%lld", n->op_type, (long long)opset);
            else
                snprintf(label, sizeof label, "%.40s", n->op_type);
            bool seen = false;
            for (int j = 0; j < n_labels && !seen; j++) seen = strcmp(labels[j], label) == 0;
            if (seen || n_labels == 64) continue;
            snprintf(labels[n_labels++], sizeof labels[0], "%s", label);
            count_unsupported(s, label);
        }
        /* Identity of sequences and optionals: shapes are for tensors only. */
        for (int i = 0; !skipped && i < m->graph->n_inputs; i++)
            if (m->graph->values[m->graph->inputs[i]].type.kind != GR_TYPE_TENSOR) {
                skipped = true;
                count_unsupported(s, "sequence/optional values");
            }
        bool dynamic = false;
        if (skipped) {
            s->skipped++;
        } else if (check_test(wk.name, wk.dir, m, &dynamic)) {
            s->checked++;
            count_checked(s, m->graph);
        } else if (dynamic) {
            s->skipped++;
            count_unsupported(s, "shapes from run-time values");
        } else if (is_allowed(wk.name)) {
            printf("  (allowed: %s)\n", wk.name);
        } else {
            s->failures++;
        }
        gr_model_free(m);
    }
    qsort(s->ops, (size_t)s->n_ops, sizeof *s->ops, by_count);
    printf("%d tests checked, %d skipped (unsupported ops: ", s->checked, s->skipped);
    for (int i = 0; i < s->n_ops; i++) printf("%s%d of %s", i ? ", " : "", s->ops[i].tests, s->ops[i].op);
    printf("), %d failed\n", s->failures);
    qsort(s->checked_ops, (size_t)s->n_checked_ops, sizeof *s->checked_ops, by_count);
    printf("checked tests per operator: ");
    for (int i = 0; i < s->n_checked_ops; i++)
        printf("%s%s %d", i ? ", " : "", s->checked_ops[i].op, s->checked_ops[i].tests);
    printf("\n");
    int failures = s->failures, checked = s->checked;
    free(s);
    assert_int_equal(failures, 0);
    assert_true(checked > 200);
}

/* ---------------- refusals ---------------- */

static gr_model *load_node_test(const char *test)
{
    char path[4096];
    snprintf(path, sizeof path, NODE_TESTS "/%s/model.onnx", test);
    char *err = NULL;
    gr_model *m = gr_model_load(path, &err);
    if (!m) printf("%s\n", err);
    assert_non_null(m);
    return m;
}

/* Infers and expects failure with a message containing each of `want`. */
static void expect_error(gr_model *m, int nfixed, const gr_input_shape *fixed, const char *want1,
                         const char *want2)
{
    char *err = NULL;
    assert_int_equal(gr_infer_shapes(m, nfixed, fixed, &err), -1);
    assert_non_null(err);
    printf("  %s\n", err);
    assert_non_null(strstr(err, m->path));
    assert_non_null(strstr(err, want1));
    if (want2) assert_non_null(strstr(err, want2));
    free(err);
}

static void test_dynamic_input(void **state)
{
    (void)state;
    os_need_testdata();
    gr_model *m = load_node_test("test_relu"); /* x: float[3,4,5] */
    gr_type *t = &m->graph->values[m->graph->inputs[0]].type;
    char *params[3] = {"batch", NULL, NULL};
    t->shape[0] = -1;
    t->dim_params = params;
    expect_error(m, 0, NULL, "graph input 'x' dimension 0 ('batch') is dynamic",
                 "fix it with --shape x=");
    /* Unknown names, contradicting extents and ranks are refused... */
    int64_t s345[3] = {3, 4, 5}, s346[3] = {3, 4, 6}, s34[2] = {3, 4};
    gr_input_shape bad_name = {"y", 3, s345};
    expect_error(m, 1, &bad_name, "--shape y: the graph has no input 'y' (its inputs: 'x')", NULL);
    gr_input_shape contra = {"x", 3, s346};
    expect_error(m, 1, &contra, "--shape x=3x4x6: dimension 2 is 6, graph input 'x' declares 5", NULL);
    gr_input_shape rank = {"x", 2, s34};
    expect_error(m, 1, &rank, "--shape x=3x4 has 2 dimensions, graph input 'x' has 3", NULL);
    gr_input_shape twice[2] = {{"x", 3, s345}, {"x", 3, s345}};
    expect_error(m, 2, twice, "--shape x is given twice", NULL);
    /* ... and a fitting shape fixes the input and everything after it. */
    int64_t s745[3] = {7, 4, 5};
    gr_input_shape fix = {"x", 3, s745};
    char *err = NULL;
    assert_int_equal(gr_infer_shapes(m, 1, &fix, &err), 0);
    assert_null(err);
    assert_null(t->dim_params);
    const gr_type *y = &m->graph->values[m->graph->outputs[0]].type;
    assert_int_equal(y->ndim, 3);
    assert_int_equal(y->shape[0], 7);
    assert_int_equal(y->elem_type, GR_FLOAT);
    assert_int_equal(y->dtype.code, kDLFloat);
    assert_int_equal(y->dtype.bits, 32);
    /* Again with the same shape: nothing changes. */
    assert_int_equal(gr_infer_shapes(m, 1, &fix, &err), 0);
    assert_int_equal(y->shape[0], 7);
    /* An input with no shape at all. */
    t->ndim = -1;
    expect_error(m, 0, NULL, "graph input 'x' declares no shape: give one with --shape x=", NULL);
    gr_model_free(m);
}

static void test_unsupported_listed_together(void **state)
{
    (void)state;
    os_need_testdata();
    /* Many nodes: Mul, ReduceMean, Sub, ... */
    gr_model *m = load_node_test("test_layer_normalization_2d_axis0_expanded");
    gr_graph *g = m->graph;
    assert_true(g->n_nodes >= 8);
    g->nodes[1].op_type = "Foo";
    g->nodes[1].name = "n1";
    g->nodes[7].op_type = "Bar";
    g->nodes[7].name = "n7";
    /* A node without a name (#3, a Size that Loom supports) is named by its index. */
    g->nodes[3].op_type = "Baz";
    expect_error(m, 0, NULL, "unsupported operators: Foo (node 'n1', opset 17), Baz (node #3, "
                 "opset 17), Bar (node 'n7', opset 17)", NULL);
    /* Another domain, named with it. */
    g->nodes[1].domain = "com.example";
    expect_error(m, 0, NULL, "unsupported operators: com.example.Foo (node 'n1', opset 0), Baz", NULL);
    gr_model_free(m);

    /* Supported operators at an opset outside their range: the range is named. */
    m = load_node_test("test_relu");
    m->opset = 19;
    expect_error(m, 0, NULL, "unsupported operators: Relu (node #0, opset 19; supported at "
                 "opsets 1 to 18)", NULL);
    m->opset = 8;
    m->graph->nodes[0].op_type = "Erf";
    expect_error(m, 0, NULL, "unsupported operators: Erf (node #0, opset 8; supported at "
                 "opsets 9 to 18)", NULL);
    m->graph->nodes[0].op_type = "Relu";
    assert_false(gr_op_supported("", "Relu", 19));
    assert_true(gr_op_supported("ai.onnx", "Relu", 18));
    assert_true(gr_op_supported("com.microsoft", "Gelu", 1));
    assert_false(gr_op_supported("", "Loop", 13));
    gr_model_free(m);
}

static gr_attr *find_attr(gr_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    fail_msg("no attribute %s", name);
    return NULL;
}

static void test_bad_attributes(void **state)
{
    (void)state;
    os_need_testdata();
    gr_model *m = load_node_test("test_conv_with_autopad_same");
    gr_node *n = &m->graph->nodes[0];
    n->name = "c1";
    gr_attr *a = find_attr(n, "auto_pad");
    a->s.data = "SAME_MIDDLE";
    a->s.len = 11;
    expect_error(m, 0, NULL, "node 'c1' (Conv): attribute 'auto_pad' is 'SAME_MIDDLE', not NOTSET, "
                 "SAME_UPPER, SAME_LOWER or VALID", NULL);
    a->s.data = "VALID";
    a->s.len = 5;
    char *err = NULL;
    assert_int_equal(gr_infer_shapes(m, 0, NULL, &err), 0);
    a = find_attr(n, "strides");
    int64_t three[3] = {2, 2, 2};
    a->n = 3;
    a->ints = three;
    expect_error(m, 0, NULL, "node 'c1' (Conv): attribute 'strides' has 3 values, the input needs 2",
                 NULL);
    gr_model_free(m);

    /* Reshape's shape as a graph input: not known when shapes are inferred. */
    m = load_node_test("test_reshape_reordered_all_dims");
    expect_error(m, 0, NULL, "node #0 (Reshape): input 'shape' ('shape') must be a constant", NULL);
    gr_model_free(m);

    /* Shapes that do not broadcast. */
    m = load_node_test("test_add_bcast"); /* x [3,4,5] + y [5] */
    m->graph->values[m->graph->inputs[1]].type.shape[0] = 4;
    expect_error(m, 0, NULL, "node #0 (Add): shapes [3,4,5] and [4] do not broadcast", NULL);
    gr_model_free(m);
}

static gr_tensor int64_tensor(int64_t *data, int64_t *shape, int ndim, int64_t numel)
{
    return (gr_tensor){.name = "", .elem_type = GR_INT64, .dtype = {kDLInt, 64, 1}, .ndim = ndim,
                       .shape = shape, .numel = numel, .nbytes = (size_t)numel * 8, .data = data};
}

/* Shape -> Gather -> Concat -> Identity -> Reshape, as exporters write a
 * reshape that keeps some of the input's extents: folding the small int64
 * tensors makes the Reshape's shape a constant. The graph is built here
 * and lent to a loaded model (whose memory inference uses). */
static void test_folded_shape(void **state)
{
    (void)state;
    os_need_testdata();
    gr_model *m = load_node_test("test_relu");
    gr_graph *loaded = m->graph;
    int64_t x_shape[3] = {2, 3, 4}, two[1] = {2}, one[1] = {1};
    int64_t idx_data[2] = {2, 0}, minus1[1] = {-1};
    gr_tensor idx = int64_tensor(idx_data, two, 1, 2), m1 = int64_tensor(minus1, one, 1, 1);
    gr_value v[8] = {
        {.name = "X", .kind = GR_VALUE_INPUT, .producer = -1,
         .type = {.kind = GR_TYPE_TENSOR, .elem_type = GR_FLOAT, .dtype = {kDLFloat, 32, 1},
                  .ndim = 3, .shape = x_shape}},
        {.name = "s", .kind = GR_VALUE_NODE, .producer = 0, .type = {.ndim = -1}},
        {.name = "idx", .kind = GR_VALUE_CONST, .producer = -1, .data = &idx,
         .type = {.kind = GR_TYPE_TENSOR, .elem_type = GR_INT64, .ndim = 1, .shape = two}},
        {.name = "g", .kind = GR_VALUE_NODE, .producer = 1, .type = {.ndim = -1}},
        {.name = "m1", .kind = GR_VALUE_CONST, .producer = -1, .data = &m1,
         .type = {.kind = GR_TYPE_TENSOR, .elem_type = GR_INT64, .ndim = 1, .shape = one}},
        {.name = "cat", .kind = GR_VALUE_NODE, .producer = 2, .type = {.ndim = -1}},
        {.name = "cat2", .kind = GR_VALUE_NODE, .producer = 3, .type = {.ndim = -1}},
        {.name = "Y", .kind = GR_VALUE_NODE, .producer = 4, .type = {.ndim = -1}},
    };
    int in_shape[1] = {0}, out_shape[1] = {1}, in_gather[2] = {1, 2}, out_gather[1] = {3};
    int in_cat[2] = {3, 4}, out_cat[1] = {5}, in_id[1] = {5}, out_id[1] = {6};
    int in_reshape[2] = {0, 6}, out_reshape[1] = {7};
    gr_attr axis0 = {.name = "axis", .kind = GR_ATTR_INT, .i = 0};
    gr_node nodes[5] = {
        {.name = "shape", .op_type = "Shape", .domain = "", .n_inputs = 1, .inputs = in_shape,
         .n_outputs = 1, .outputs = out_shape},
        {.name = "gather", .op_type = "Gather", .domain = "", .n_inputs = 2, .inputs = in_gather,
         .n_outputs = 1, .outputs = out_gather},
        {.name = "concat", .op_type = "Concat", .domain = "", .n_inputs = 2, .inputs = in_cat,
         .n_outputs = 1, .outputs = out_cat, .n_attrs = 1, .attrs = &axis0},
        {.name = "id", .op_type = "Identity", .domain = "", .n_inputs = 1, .inputs = in_id,
         .n_outputs = 1, .outputs = out_id},
        {.name = "reshape", .op_type = "Reshape", .domain = "", .n_inputs = 2, .inputs = in_reshape,
         .n_outputs = 1, .outputs = out_reshape},
    };
    int g_in[1] = {0}, g_out[1] = {7};
    gr_graph g = {.name = "folded", .n_values = 8, .values = v, .n_nodes = 5, .nodes = nodes,
                  .n_inputs = 1, .inputs = g_in, .n_outputs = 1, .outputs = g_out};
    m->graph = &g;
    char *err = NULL;
    assert_int_equal(gr_infer_shapes(m, 0, NULL, &err), 0);
    assert_null(err);
    const int64_t *cat = v[6].data->data;
    assert_int_equal(v[6].data->numel, 3);
    assert_int_equal(cat[0], 4);
    assert_int_equal(cat[1], 2);
    assert_int_equal(cat[2], -1);
    assert_int_equal(v[7].type.ndim, 3);
    assert_int_equal(v[7].type.shape[0], 4);
    assert_int_equal(v[7].type.shape[1], 2);
    assert_int_equal(v[7].type.shape[2], 3);
    assert_int_equal(v[7].type.elem_type, GR_FLOAT);
    /* An index out of range is refused by name. */
    idx_data[0] = 3;
    expect_error(m, 0, NULL, "node 'gather' (Gather): input 'indices' value 3 is out of range for "
                 "dimension 0 (3)", NULL);
    /* Without the constant index, the shape is no longer known. */
    v[2].kind = GR_VALUE_INPUT;
    v[2].data = NULL;
    g.n_inputs = 0;
    expect_error(m, 0, NULL, "node 'reshape' (Reshape): input 'shape' ('cat2') must be a constant",
                 NULL);
    m->graph = loaded;
    gr_model_free(m);
}

/* ---------------- forms the suite (ONNX 1.12: each test at one opset) lacks ---------------- */

static void test_dir(char *out, size_t size, const char *test)
{
    int n = snprintf(out, size, NODE_TESTS "/%s", test);
    assert_true(n > 0 && (size_t)n < size);
}

/* The test's model, as changed by the caller, still infers its expected outputs. */
static void expect_outputs(const char *test, gr_model *m)
{
    char dir[4096];
    test_dir(dir, sizeof dir, test);
    bool dynamic;
    assert_true(check_test(test, dir, m, &dynamic));
}

/* Adds an attribute to node n, its array in `storage` (room for n_attrs + 1). */
static void add_attr(gr_node *n, gr_attr *storage, gr_attr a)
{
    if (n->n_attrs) memcpy(storage, n->attrs, (size_t)n->n_attrs * sizeof *storage);
    storage[n->n_attrs++] = a;
    n->attrs = storage;
}

/* ConstantOfShape and GlobalAveragePool are tested at opsets 9 and 1 by
 * ONNX 1.12 (their first versions, accepted); their definitions did not
 * change up to 18. Gelu arrives in
 * ONNX 1.15 (opset 20) and in com.microsoft: Relu's test model stands in
 * for its shapes. */
static void test_operators_at_other_opsets(void **state)
{
    (void)state;
    os_need_testdata();
    const char *tests[] = {"test_constantofshape_float_ones", "test_constantofshape_int_zeros",
                           "test_constantofshape_int_shape_zero", "test_globalaveragepool",
                           "test_globalaveragepool_precomputed"};
    for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
        gr_model *m = load_node_test(tests[i]);
        assert_true(gr_op_supported("", m->graph->nodes[0].op_type, m->opset));
        assert_false(gr_op_supported("", m->graph->nodes[0].op_type, m->opset - 1));
        expect_outputs(tests[i], m);
        gr_model_free(m);
        m = load_node_test(tests[i]); /* check_test leaves the inputs frozen */
        m->opset = 13;
        expect_outputs(tests[i], m);
        gr_model_free(m);
    }
    gr_model *m = load_node_test("test_relu");
    m->graph->nodes[0].op_type = "Gelu";
    expect_outputs("test_relu", m);
    m->graph->nodes[0].domain = "com.microsoft";
    expect_outputs("test_relu", m);
    gr_attr attrs[4];
    add_attr(&m->graph->nodes[0], attrs,
             (gr_attr){.name = "approximate", .kind = GR_ATTR_STRING, .s = {5, "exact"}});
    expect_error(m, 0, NULL, "node #0 (Gelu): attribute 'approximate' is 'exact', not 'none' or 'tanh'",
                 NULL);
    gr_model_free(m);
}

/* Axes and splits were attributes before opset 13 (ReduceMean: 18) and
 * inputs from it; Split's num_outputs comes at 18. */
static void test_attribute_and_input_forms(void **state)
{
    (void)state;
    os_need_testdata();
    gr_attr attrs[8];
    int64_t zero[1] = {0}, one[1] = {1}, parts[2] = {2, 4};

    gr_model *m = load_node_test("test_squeeze"); /* x [1,3,4,5], axes input [0] */
    gr_node *n = &m->graph->nodes[0];
    add_attr(n, attrs, (gr_attr){.name = "axes", .kind = GR_ATTR_INTS, .n = 1, .ints = zero});
    expect_error(m, 0, NULL, "node #0 (Squeeze): attribute 'axes' is not allowed at opset 13 (axes "
                 "is an input)", NULL);
    m->opset = 11;
    n->n_inputs = 1;
    expect_outputs("test_squeeze", m);
    gr_model_free(m);

    m = load_node_test("test_unsqueeze_axis_0"); /* x [3,4,5], axes input [0] */
    n = &m->graph->nodes[0];
    m->opset = 11;
    n->n_inputs = 1;
    expect_error(m, 0, NULL, "node #0 (Unsqueeze): axes are missing", NULL);
    add_attr(n, attrs, (gr_attr){.name = "axes", .kind = GR_ATTR_INTS, .n = 1, .ints = zero});
    expect_outputs("test_unsqueeze_axis_0", m);
    gr_model_free(m);

    m = load_node_test("test_split_variable_parts_1d"); /* [6], split input [2,4] */
    n = &m->graph->nodes[0];
    m->opset = 11;
    n->n_inputs = 1;
    add_attr(n, attrs, (gr_attr){.name = "split", .kind = GR_ATTR_INTS, .n = 2, .ints = parts});
    expect_outputs("test_split_variable_parts_1d", m);
    parts[1] = 5;
    expect_error(m, 0, NULL, "node #0 (Split): 'split' sums to 7, dimension 0 is 6", NULL);
    gr_model_free(m);

    m = load_node_test("test_reduce_sum_keepdims_example"); /* [3,2,2], axes input [1] */
    n = &m->graph->nodes[0];
    m->opset = 11;
    n->n_inputs = 1;
    add_attr(n, attrs, (gr_attr){.name = "axes", .kind = GR_ATTR_INTS, .n = 1, .ints = one});
    expect_outputs("test_reduce_sum_keepdims_example", m);
    gr_model_free(m);

    /* ReduceMean takes its axes as an input at 18. */
    m = load_node_test("test_reduce_sum_keepdims_example");
    m->opset = 18;
    m->graph->nodes[0].op_type = "ReduceMean";
    expect_outputs("test_reduce_sum_keepdims_example", m);
    gr_model_free(m);

    /* No axes: everything is reduced, unless noop_with_empty_axes. */
    m = load_node_test("test_reduce_sum_keepdims_example");
    n = &m->graph->nodes[0];
    n->n_inputs = 1;
    char *err = NULL;
    assert_int_equal(gr_infer_shapes(m, 0, NULL, &err), 0);
    const gr_type *y = &m->graph->values[m->graph->outputs[0]].type;
    assert_int_equal(y->ndim, 3);
    assert_int_equal(y->shape[0] * y->shape[1] * y->shape[2], 1);
    add_attr(n, attrs, (gr_attr){.name = "noop_with_empty_axes", .kind = GR_ATTR_INT, .i = 1});
    assert_int_equal(gr_infer_shapes(m, 0, NULL, &err), 0);
    y = &m->graph->values[m->graph->outputs[0]].type;
    assert_int_equal(y->shape[0] * y->shape[1] * y->shape[2], 12);
    gr_model_free(m);

    /* Split at 18: num_outputs chunks of ceil(7 / 3) = 3, the last one smaller. */
    m = load_node_test("test_split_equal_parts_1d"); /* [6] into 3 outputs */
    n = &m->graph->nodes[0];
    m->opset = 18;
    expect_error(m, 0, NULL, "node #0 (Split): attribute 'num_outputs' is 0, the node has 3 outputs",
                 NULL);
    add_attr(n, attrs, (gr_attr){.name = "num_outputs", .kind = GR_ATTR_INT, .i = 3});
    expect_outputs("test_split_equal_parts_1d", m);
    m->graph->values[m->graph->inputs[0]].type.shape[0] = 7;
    assert_int_equal(gr_infer_shapes(m, 0, NULL, &err), 0);
    for (int k = 0; k < 3; k++)
        assert_int_equal(m->graph->values[n->outputs[k]].type.shape[0], k < 2 ? 3 : 1);
    gr_model_free(m);
}

/* ---------------- each rule's refusals ---------------- */

typedef struct {
    const char *test;
    const char *want;
} bad_case;

/* Each case changes one thing in an ONNX node test (mutate below). */
static const bad_case bad_cases[] = {
    {"test_basic_conv_without_padding", "node #0 (Conv): attribute 'group' is 0 (must be >= 1)"},
    {"test_basic_conv_without_padding", "X has 1 channels, W expects 1 x group 2"},
    {"test_basic_conv_without_padding", "W has 3 output channels, not a multiple of group 2"},
    {"test_basic_conv_without_padding", "input X has rank 2 (needs N, C and spatial dimensions)"},
    {"test_basic_conv_without_padding", "input W has rank 3, X has rank 4"},
    {"test_basic_conv_without_padding", "attribute 'kernel_shape' value 0 is 2, W has 3"},
    {"test_basic_conv_without_padding", "the window (3 with dilation 1) is larger than spatial "
                                        "dimension 0 (2 with pads 0+0)"},
    {"test_basic_conv_without_padding", "attribute 'pads' has 3 values, the input needs 4"},
    {"test_basic_conv_without_padding", "attribute 'strides' value 0 is 0 (must be >= 1)"},
    {"test_maxpool_2d_default", "node #0 (MaxPool): attribute 'kernel_shape' is missing"},
    {"test_maxpool_2d_default", "attribute 'ceil_mode' is 2 (0 or 1)"},
    {"test_globalaveragepool", "node #0 (GlobalAveragePool): input X has rank 1 (needs N and C)"},
    {"test_gemm_default_no_bias", "node #0 (Gemm): A gives K = 10, B gives K = 9 (transA 0, transB 0)"},
    {"test_gemm_default_no_bias", "inputs A and B must be matrices (ranks 1 and 2)"},
    {"test_matmul_2d", "node #0 (MatMul): A has K = 4, B has K = 5"},
    {"test_batchnorm_example", "node #0 (BatchNormalization): input scale must have shape [3]"},
    {"test_layer_normalization_2d_axis0", "attribute 'axis' 2 is out of range for rank 2"},
    {"test_layer_normalization_2d_axis0", "attribute 'stash_type' is 8, not a numeric element type"},
    {"test_reduce_mean_keepdims_example", "node #0 (ReduceMean): attribute 'axes' is not allowed at "
                                          "opset 18 (axes is an input)"},
    {"test_reduce_mean_keepdims_example", "axes names dimension 1 twice"},
    {"test_reduce_mean_keepdims_example", "axes value 3 is out of range for rank 3"},
    {"test_flatten_axis0", "node #0 (Flatten): attribute 'axis' 5 is out of range for rank 4"},
    {"test_reshape_reordered_all_dims", "node #0 (Reshape): input 'shape' has more than one -1"},
    {"test_reshape_reordered_all_dims", "input 'shape' has 40 elements, the data 24"},
    {"test_reshape_reordered_all_dims", "input 'shape' leaves -1 no whole extent (24 elements over 5)"},
    {"test_reshape_reordered_all_dims", "input 'shape' value 2 is -3"},
    {"test_transpose_default", "node #0 (Transpose): attribute 'perm' has 2 values, the input has rank 3"},
    {"test_transpose_default", "attribute 'perm' is not a permutation of 0..2"},
    {"test_concat_2d_axis_0", "node #0 (Concat): input 1 dimension 1 is 3, input 0 has 2"},
    {"test_concat_2d_axis_0", "input 1 is float of rank 1, input 0 float of rank 2"},
    {"test_concat_2d_axis_0", "attribute 'axis' is missing"},
    {"test_split_equal_parts_1d", "node #0 (Split): dimension 0 (7) does not split evenly into 3 outputs"},
    {"test_split_equal_parts_1d", "attribute 'split' is not allowed at opset 13 (split is an input)"},
    {"test_split_variable_parts_1d", "'split' value 0 is -1"},
    {"test_slice", "node #0 (Slice): input 'steps' value 1 is 0"},
    {"test_slice", "input 'axes' names dimension 0 twice"},
    {"test_slice", "input 'axes' value 3 is out of range for rank 3"},
    {"test_gather_0", "node #0 (Gather): attribute 'axis' 4 is out of range for rank 4"},
    {"test_gather_0", "input 'indices' is float, not int32 or int64"},
    {"test_squeeze", "node #0 (Squeeze): axes value 1 names dimension 1 of extent 3 (must be 1)"},
    {"test_unsqueeze_two_axes", "node #0 (Unsqueeze): axes names dimension 1 twice"},
    {"test_unsqueeze_two_axes", "axes value 5 is out of range for rank 5"},
    {"test_constant", "node #0 (Constant): attribute 'sparse_value' is not supported"},
    {"test_constantofshape_float_ones", "node #0 (ConstantOfShape): input 'input' value 0 is -2"},
    {"test_cast_FLOAT_to_DOUBLE", "node #0 (Cast): attribute 'to' is 99, not an element type"},
    {"test_add", "node #0 (Add): inputs A (float) and B (int64) must have one element type"},
    {"test_where_example", "node #0 (Where): input condition is float, not bool"},
    {"test_softmax_axis_0", "node #0 (Softmax): attribute 'axis' 3 is out of range for rank 3"},
    {"test_gemm_default_no_bias", "node #0 (Gemm): input 1 (B) is missing"},
    {"test_identity_sequence", "graph input 'x' is not a tensor (a sequence, map or optional): "
                               "shapes are inferred for tensors only"},
};

static void set_int(gr_node *n, gr_attr *storage, const char *name, int64_t v)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) {
            n->attrs[i].i = v;
            return;
        }
    add_attr(n, storage, (gr_attr){.name = (char *)name, .kind = GR_ATTR_INT, .i = v});
}

static void set_ints(gr_node *n, gr_attr *storage, const char *name, int64_t *v, size_t count)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) {
            n->attrs[i].ints = v;
            n->attrs[i].n = count;
            return;
        }
    add_attr(n, storage, (gr_attr){.name = (char *)name, .kind = GR_ATTR_INTS, .n = count, .ints = v});
}

static gr_type *in_type(gr_model *m, int k) { return &m->graph->values[m->graph->nodes[0].inputs[k]].type; }

static int64_t *in_data(gr_model *m, int k)
{
    gr_tensor *t = m->graph->values[m->graph->nodes[0].inputs[k]].data;
    assert_non_null(t);
    assert_int_equal(t->elem_type, GR_INT64);
    return t->data;
}

static void mutate(int i, gr_model *m, gr_attr *storage)
{
    static int64_t two[2] = {2, 2}, three0[3] = {0, 0, 0}, s01[2] = {0, 1}, s011[3] = {0, 1, 1};
    static int64_t one_m2[2] = {1, -2}, s3[1] = {3}, split0[2] = {0, 1};
    gr_node *n = &m->graph->nodes[0];
    switch (i) {
    case 0: set_int(n, storage, "group", 0); break;
    case 1: set_int(n, storage, "group", 2); break;
    case 2: in_type(m, 0)->shape[1] = 2; in_type(m, 1)->shape[0] = 3; set_int(n, storage, "group", 2); break;
    case 3: in_type(m, 0)->ndim = 2; break;
    case 4: in_type(m, 1)->ndim = 3; break;
    case 5: set_ints(n, storage, "kernel_shape", two, 2); break;
    case 6: in_type(m, 0)->shape[2] = 2; break;
    case 7: set_ints(n, storage, "pads", three0, 3); break;
    case 8: split0[0] = 0; split0[1] = 1; set_ints(n, storage, "strides", split0, 2); break;
    case 9: n->attrs[0].name = "kernel"; break;
    case 10: set_int(n, storage, "ceil_mode", 2); break;
    case 11: m->opset = 13; in_type(m, 0)->ndim = 1; break;
    case 12: in_type(m, 1)->shape[0] = 9; break;
    case 13: in_type(m, 0)->ndim = 1; break;
    case 14: in_type(m, 1)->shape[0] = 5; break;
    case 15: in_type(m, 1)->shape[0] = 4; break;
    case 16: set_int(n, storage, "axis", 2); break;
    case 17: set_int(n, storage, "stash_type", GR_STRING); break;
    case 18: m->opset = 18; break;
    case 19: set_ints(n, storage, "axes", one_m2, 2); break;
    case 20: set_ints(n, storage, "axes", s3, 1); break;
    case 21: set_int(n, storage, "axis", 5); break;
    case 22: in_data(m, 1)[0] = -1; in_data(m, 1)[1] = -1; break;
    case 23: in_data(m, 1)[2] = 5; break;
    case 24: in_data(m, 1)[0] = -1; in_data(m, 1)[1] = 5; in_data(m, 1)[2] = 1; break;
    case 25: in_data(m, 1)[2] = -3; break;
    case 26: set_ints(n, storage, "perm", s01, 2); break;
    case 27: set_ints(n, storage, "perm", s011, 3); break;
    case 28: in_type(m, 1)->shape[1] = 3; break;
    case 29: in_type(m, 1)->ndim = 1; break;
    case 30: n->attrs[0].name = "axes"; break;
    case 31: in_type(m, 0)->shape[0] = 7; break;
    case 32: set_ints(n, storage, "split", two, 2); break;
    case 33: in_data(m, 1)[0] = -1; in_data(m, 1)[1] = 7; break;
    case 34: in_data(m, 4)[1] = 0; break;
    case 35: in_data(m, 3)[1] = 0; break;
    case 36: in_data(m, 3)[1] = 3; break;
    case 37: set_int(n, storage, "axis", 4); break;
    case 38: in_type(m, 1)->elem_type = GR_FLOAT; break;
    case 39: in_data(m, 1)[0] = 1; break;
    case 40: in_data(m, 1)[1] = 1; in_data(m, 1)[0] = 1; break;
    case 41: in_data(m, 1)[1] = 5; break;
    case 42: n->attrs[0].name = "sparse_value"; break;
    case 43: m->opset = 13; in_data(m, 0)[0] = -2; break;
    case 44: set_int(n, storage, "to", 99); break;
    case 45: in_type(m, 1)->elem_type = GR_INT64; break;
    case 46: in_type(m, 0)->elem_type = GR_FLOAT; break;
    case 47: set_int(n, storage, "axis", 3); break;
    case 48: n->n_inputs = 1; break;
    default: break;
    }
}

static void test_rule_refusals(void **state)
{
    (void)state;
    os_need_testdata();
    for (int i = 0; i < (int)(sizeof bad_cases / sizeof *bad_cases); i++) {
        gr_model *m = load_node_test(bad_cases[i].test);
        char dir[4096];
        test_dir(dir, sizeof dir, bad_cases[i].test);
        os_inputs ti;
        os_inputs_load(dir, m, &ti, true);
        gr_attr storage[16];
        mutate(i, m, storage);
        printf("[%d]", i);
        expect_error(m, ti.nfixed, ti.fixed, bad_cases[i].want, NULL);
        os_inputs_free(m, &ti);
        gr_model_free(m);
    }
}

static void test_shape_parse(void **state)
{
    (void)state;
    gr_input_shape s;
    char *err = NULL;
    assert_true(gr_input_shape_parse("input=1x3x224x224", &s, &err));
    assert_string_equal(s.name, "input");
    assert_int_equal(s.ndim, 4);
    assert_int_equal(s.shape[2], 224);
    free((char *)s.name);
    free((int64_t *)s.shape);
    assert_true(gr_input_shape_parse("scalar=", &s, &err));
    assert_int_equal(s.ndim, 0);
    free((char *)s.name);
    free((int64_t *)s.shape);
    const char *bad[][2] = {{"input", "expected name=d0xd1x..."},
                            {"=1x2", "expected name=d0xd1x..."},
                            {"x=1x-2", "dimension 1 is not a number >= 0"},
                            {"x=1xx2", "dimension 1 is not a number >= 0"},
                            {"x=1x", "dimension 1 is not a number >= 0"},
                            {"x=3y", "dimension 0 is not a number >= 0"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err = NULL;
        assert_false(gr_input_shape_parse(bad[i][0], &s, &err));
        assert_non_null(err);
        assert_non_null(strstr(err, bad[i][1]));
        assert_null(s.name);
        free(err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_suite),
        cmocka_unit_test(test_dynamic_input),
        cmocka_unit_test(test_unsupported_listed_together),
        cmocka_unit_test(test_bad_attributes),
        cmocka_unit_test(test_folded_shape),
        cmocka_unit_test(test_operators_at_other_opsets),
        cmocka_unit_test(test_attribute_and_input_forms),
        cmocka_unit_test(test_rule_refusals),
        cmocka_unit_test(test_shape_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
