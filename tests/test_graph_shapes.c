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

#include "testutil.h"

#define NODE_TESTS "/usr/share/libonnx-testdata/data/node"

static void need_testdata(void)
{
    struct stat st;
    if (stat(NODE_TESTS, &st) != 0) {
        printf("libonnx-testdata is not installed (" NODE_TESTS "): skipped\n");
        skip();
    }
}

static int64_t opset_of(const gr_model *m, const char *domain)
{
    if (!*domain || strcmp(domain, "ai.onnx") == 0) return m->opset;
    for (int i = 0; i < m->n_opsets; i++)
        if (strcmp(m->opsets[i].domain, domain) == 0) return m->opsets[i].version;
    return 0;
}

/* ---------------- ONNX's node tests ---------------- */

typedef struct {
    char op[64];
    int tests;
} op_count;

typedef struct {
    int checked, skipped, failures;
    op_count ops[512];
    int n_ops;
    op_count checked_ops[128]; /* how many checked tests use each operator */
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
        if (!seen) count_op(s->checked_ops, &s->n_checked_ops, 128, g->nodes[i].op_type);
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

static gr_tensor *load_pb(const char *dir, const char *kind, int k)
{
    char path[4096];
    int len = snprintf(path, sizeof path, "%s/test_data_set_0/%s_%d.pb", dir, kind, k);
    assert_true(len > 0 && (size_t)len < sizeof path);
    if (access(path, R_OK) != 0) return NULL;
    char *err = NULL;
    gr_tensor *t = gr_tensor_load(path, &err);
    if (!t) printf("%s\n", err);
    assert_non_null(t);
    return t;
}

/* One test: false when it disagrees. */
static bool check_test(const char *name, const char *dir, gr_model *m)
{
    gr_graph *g = m->graph;
    gr_tensor *inputs[64] = {NULL};
    gr_input_shape fixed[64];
    int nfixed = 0, k = 0;
    for (int i = 0; i < g->n_inputs && k < 64; i++) {
        gr_value *v = &g->values[g->inputs[i]];
        if (v->kind != GR_VALUE_INPUT) continue;
        /* Sequences and optionals are not TensorProto files. */
        gr_tensor *t = v->type.kind == GR_TYPE_TENSOR ? load_pb(dir, "input", k) : NULL;
        inputs[k++] = t;
        if (!t) continue;
        /* Integer inputs of ONNX's tests carry what a real model has as
         * initializers (Reshape's shape, Slice's starts, axes): they
         * become constants here, contents and all. */
        if (t->elem_type == GR_INT64 || t->elem_type == GR_INT32) {
            v->kind = GR_VALUE_CONST;
            v->data = t;
            v->type.ndim = t->ndim;
            v->type.shape = t->shape;
            v->type.dim_params = NULL;
            continue;
        }
        bool dynamic = v->type.ndim < 0;
        for (int d = 0; d < v->type.ndim; d++) dynamic |= v->type.shape[d] < 0;
        if (dynamic) fixed[nfixed++] = (gr_input_shape){v->name, t->ndim, t->shape};
    }
    char *err = NULL;
    bool ok = gr_infer_shapes(m, nfixed, fixed, &err) == 0;
    if (!ok) printf("FAILED %s: %s\n", name, err);
    free(err);
    for (int o = 0; ok && o < g->n_outputs; o++) {
        gr_tensor *want = load_pb(dir, "output", o);
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
    /* The model must not keep pointers to the tensors freed here. */
    for (int i = 0; i < g->n_values; i++)
        for (int j = 0; j < k; j++)
            if (inputs[j] && g->values[i].data == inputs[j]) g->values[i].data = NULL;
    for (int j = 0; j < k; j++) gr_tensor_free(inputs[j]);
    return ok;
}

static void test_node_suite(void **state)
{
    (void)state;
    need_testdata();
    suite *s = calloc(1, sizeof *s);
    assert_non_null(s);
    DIR *d = opendir(NODE_TESTS);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char dir[4096], model[4096];
        int len = snprintf(dir, sizeof dir, "%s/%s", NODE_TESTS, e->d_name);
        assert_true(len > 0 && (size_t)len < sizeof dir);
        len = snprintf(model, sizeof model, "%s/model.onnx", dir);
        assert_true(len > 0 && (size_t)len < sizeof model);
        if (access(model, R_OK) != 0) continue;
        char *err = NULL;
        gr_model *m = gr_model_load(model, &err);
        if (!m) printf("%s\n", err);
        assert_non_null(m);
        /* Each unsupported operator counts once per test it skips. */
        char labels[64][64];
        int n_labels = 0;
        bool skipped = false;
        for (int i = 0; i < m->graph->n_nodes; i++) {
            const gr_node *n = &m->graph->nodes[i];
            int64_t opset = opset_of(m, n->domain);
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
        if (skipped) {
            s->skipped++;
        } else if (check_test(e->d_name, dir, m)) {
            s->checked++;
            count_checked(s, m->graph);
        } else if (is_allowed(e->d_name)) {
            printf("  (allowed: %s)\n", e->d_name);
        } else {
            s->failures++;
        }
        gr_model_free(m);
    }
    closedir(d);
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
    need_testdata();
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
    need_testdata();
    /* Many nodes: Mul, ReduceMean, Sub, ... */
    gr_model *m = load_node_test("test_layer_normalization_2d_axis0_expanded");
    gr_graph *g = m->graph;
    assert_true(g->n_nodes >= 8);
    g->nodes[1].op_type = "Foo";
    g->nodes[1].name = "n1";
    g->nodes[7].op_type = "Bar";
    g->nodes[7].name = "n7";
    /* Size (node #3) is unsupported as it is. */
    expect_error(m, 0, NULL, "unsupported operators: Foo (node 'n1', opset 17), Size (node #3, "
                 "opset 17), Bar (node 'n7', opset 17)", NULL);
    /* Another domain, named with it. */
    g->nodes[1].domain = "com.example";
    expect_error(m, 0, NULL, "unsupported operators: com.example.Foo (node 'n1', opset 0), Size", NULL);
    gr_model_free(m);

    /* Supported operators at an opset outside 11..18. */
    m = load_node_test("test_relu");
    m->opset = 9;
    expect_error(m, 0, NULL, "unsupported operators: Relu (node #0, opset 9) (operators are "
                 "supported at opsets 11 to 18)", NULL);
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
    need_testdata();
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
    a->n = 3;
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

/* Shape -> Gather -> Unsqueeze -> Concat -> Reshape: folding makes the
 * shape a constant. */
static void test_folded_shape(void **state)
{
    (void)state;
    need_testdata();
    gr_model *m = load_node_test("test_reshape_reordered_all_dims");
    gr_graph *g = m->graph; /* Reshape(data [2,3,4], shape int64[3]) */
    assert_int_equal(g->n_nodes, 1);
    /* Make the shape a folded constant: an initializer's Shape. */
    int s = gr_graph_find_value(g, "shape");
    assert_true(s >= 0);
    static int64_t dims[3] = {4, 2, 3};
    static gr_tensor t;
    t.name = "";
    t.elem_type = GR_INT64;
    t.ndim = 1;
    static int64_t tshape[1] = {3};
    t.shape = tshape;
    t.numel = 3;
    t.nbytes = 24;
    t.data = dims;
    g->values[s].kind = GR_VALUE_CONST;
    g->values[s].data = &t;
    char *err = NULL;
    assert_int_equal(gr_infer_shapes(m, 0, NULL, &err), 0);
    const gr_type *y = &g->values[g->outputs[0]].type;
    assert_int_equal(y->ndim, 3);
    assert_int_equal(y->shape[0], 4);
    assert_int_equal(y->shape[1], 2);
    assert_int_equal(y->shape[2], 3);
    gr_model_free(m);
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
        cmocka_unit_test(test_shape_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
