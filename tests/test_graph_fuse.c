/*
 * graph/ fusion partition (graph/fuse.h, TVM's FuseOps): small graphs built
 * here give the groups TVM gives them (Conv+bias+Relu, a ResNet residual
 * block, a shared value, injective chains, Softmax between Div and MatMul,
 * opaque nodes, folded constants, the node limit); every model of ONNX's
 * test suite that shape inference accepts partitions into groups that are
 * in topological order, convex, and read outside only through their last
 * node.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/fuse.h"
#include "onnx.pb-c.h"
#include "onnx_suite.h"
#include "testutil.h"

#define TESTDATA "/usr/share/libonnx-testdata/data"

/* ---------------- a model to lend graphs to ---------------- */

/* Inference keeps types in a model's memory: the graphs below are built in
 * the test and lent to a model loaded from an empty file written here. */
static gr_model *empty_model(void)
{
    Onnx__ModelProto model;
    Onnx__OperatorSetIdProto opset, *opsets[1] = {&opset};
    Onnx__GraphProto graph;
    onnx__model_proto__init(&model);
    onnx__operator_set_id_proto__init(&opset);
    onnx__graph_proto__init(&graph);
    model.has_ir_version = 1;
    model.ir_version = 8;
    opset.domain = "";
    opset.has_version = 1;
    opset.version = 17;
    model.n_opset_import = 1;
    model.opset_import = opsets;
    graph.name = "empty";
    model.graph = &graph;
    size_t len = onnx__model_proto__get_packed_size(&model);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    assert_int_equal(onnx__model_proto__pack(&model, buf), len);
    const char *tmp = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/loom_fuse_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
    free(buf);
    char *err = NULL;
    gr_model *m = gr_model_load(path, &err);
    if (!m) printf("%s\n", err);
    assert_non_null(m);
    unlink(path);
    return m;
}

/* ---------------- building graphs ---------------- */

#define MAXV 1024
#define MAXN 512

typedef struct {
    gr_value v[MAXV];
    int nv;
    gr_node nodes[MAXN];
    int nn;
    int ins[MAXN][8], outs[MAXN][4];
    gr_attr attrs[MAXN][4];
    int64_t shapes[MAXV][8];
    int64_t ints[MAXV][8];
    gr_tensor tensors[MAXV];
    int g_in[16], g_out[16];
    gr_graph g;
    gr_model *m;
    gr_graph *loaded;
} builder;

static builder *gb_new(void)
{
    builder *b = calloc(1, sizeof *b);
    assert_non_null(b);
    b->m = empty_model();
    b->loaded = b->m->graph;
    b->g.name = "built";
    b->g.values = b->v;
    b->g.nodes = b->nodes;
    b->g.inputs = b->g_in;
    b->g.outputs = b->g_out;
    b->m->graph = &b->g;
    return b;
}

static void gb_free(builder *b)
{
    b->m->graph = b->loaded;
    gr_model_free(b->m);
    free(b);
}

static int gb_find(builder *b, const char *name)
{
    for (int i = 0; i < b->nv; i++)
        if (strcmp(b->v[i].name, name) == 0) return i;
    fail_msg("no value %s", name);
    return -1;
}

static int gb_value(builder *b, const char *name, gr_value_kind kind, int elem, int ndim,
                    const int64_t *shape)
{
    assert_true(b->nv < MAXV && ndim <= 8);
    int i = b->nv++;
    gr_value *v = &b->v[i];
    v->name = (char *)name;
    v->kind = kind;
    v->producer = -1;
    v->type.kind = GR_TYPE_TENSOR;
    v->type.elem_type = elem;
    assert_true(gr_elem_type_dl(elem, &v->type.dtype));
    v->type.ndim = ndim;
    if (ndim > 0) memcpy(b->shapes[i], shape, (size_t)ndim * sizeof *shape);
    v->type.shape = b->shapes[i];
    return i;
}

#define SHAPE(...) (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

/* A float graph input. */
static void gb_input(builder *b, const char *name, int ndim, const int64_t *shape)
{
    b->g_in[b->g.n_inputs++] = gb_value(b, name, GR_VALUE_INPUT, GR_FLOAT, ndim, shape);
}

/* A float initializer; its contents never matter to shapes or fusion. */
static void gb_weight(builder *b, const char *name, int ndim, const int64_t *shape)
{
    gb_value(b, name, GR_VALUE_CONST, GR_FLOAT, ndim, shape);
}

/* An int64 initializer with contents (Reshape's shape, axes). */
static void gb_ints(builder *b, const char *name, int n, const int64_t *vals)
{
    int64_t len = n;
    int i = gb_value(b, name, GR_VALUE_CONST, GR_INT64, 1, &len);
    memcpy(b->ints[i], vals, (size_t)n * sizeof *vals);
    b->tensors[i] = (gr_tensor){.name = "", .elem_type = GR_INT64, .dtype = {kDLInt, 64, 1},
                                .ndim = 1, .shape = b->shapes[i], .numel = n,
                                .nbytes = (size_t)n * 8, .data = b->ints[i]};
    b->v[i].data = &b->tensors[i];
}

#define NAMES(...) (const char *[]){__VA_ARGS__, NULL}

/* A node reading the named values and defining its outputs; its index. */
static int gb_node(builder *b, const char *op, const char *name, const char **in, const char **out)
{
    assert_true(b->nn < MAXN);
    int k = b->nn++;
    gr_node *n = &b->nodes[k];
    n->name = (char *)name;
    n->op_type = (char *)op;
    n->domain = "";
    n->inputs = b->ins[k];
    n->outputs = b->outs[k];
    n->attrs = b->attrs[k];
    for (; in[n->n_inputs]; n->n_inputs++) n->inputs[n->n_inputs] = gb_find(b, in[n->n_inputs]);
    for (; out[n->n_outputs]; n->n_outputs++) {
        int v = gb_value(b, out[n->n_outputs], GR_VALUE_NODE, GR_FLOAT, -1, NULL);
        b->v[v].producer = k;
        b->v[v].type.kind = GR_TYPE_UNKNOWN;
        n->outputs[n->n_outputs] = v;
    }
    b->g.n_nodes = b->nn;
    b->g.n_values = b->nv;
    return k;
}

static void gb_attr_int(builder *b, int node, const char *name, int64_t i)
{
    gr_node *n = &b->nodes[node];
    n->attrs[n->n_attrs++] = (gr_attr){.name = (char *)name, .kind = GR_ATTR_INT, .i = i};
}

static void gb_attr_ints(builder *b, int node, const char *name, int count, int64_t *ints)
{
    gr_node *n = &b->nodes[node];
    n->attrs[n->n_attrs++] =
        (gr_attr){.name = (char *)name, .kind = GR_ATTR_INTS, .n = (size_t)count, .ints = ints};
}

static void gb_output(builder *b, const char *name) { b->g_out[b->g.n_outputs++] = gb_find(b, name); }

static void gb_infer(builder *b)
{
    b->g.n_values = b->nv;
    char *err = NULL;
    int rc = gr_infer_shapes(b->m, 0, NULL, &err);
    if (rc) printf("%s\n", err);
    assert_int_equal(rc, 0);
}

/* ---------------- the properties every partition has ---------------- */

/* Whether value v carries data from one run node to another. */
static bool flows(const gr_graph *g, int v)
{
    return v >= 0 && g->values[v].kind == GR_VALUE_NODE && !g->values[v].data;
}

/* Checks p against g: -1 exactly for nodes whose outputs are all known;
 * groups numbered in topological order, non-empty, within the node limit,
 * with one node of kind >= reduce at most (the anchor; an attention chain
 * has three, its anchor the last) and the max kind;
 * only a group's last node read outside it (by a run node or as a graph
 * output); convex. Without fusion, one group per run node in node order. */
static void check_partition(const gr_model *m, const gr_partition *p, bool fuse)
{
    const gr_graph *g = m->graph;
    int n = g->n_nodes, ng = p->ngroups;
    int *count = calloc((size_t)ng + 1, sizeof *count), *last = calloc((size_t)ng + 1, sizeof *last);
    int *heavy = calloc((size_t)ng + 1, sizeof *heavy);
    gr_op_kind *kmax = calloc((size_t)ng + 1, sizeof *kmax);
    bool *reach = calloc((size_t)n + 1, sizeof *reach);
    assert_true(count && last && heavy && kmax && reach);
    int run = 0;
    for (int i = 0; i < n; i++) {
        const gr_node *nd = &g->nodes[i];
        bool runs = false;
        for (int k = 0; k < nd->n_outputs; k++) runs |= nd->outputs[k] >= 0 && !g->values[nd->outputs[k]].data;
        int gid = p->group_of[i];
        if (!runs) {
            assert_int_equal(gid, -1);
            continue;
        }
        run++;
        assert_true(gid >= 0 && gid < ng);
        if (!fuse) assert_int_equal(gid, run - 1);
        count[gid]++;
        last[gid] = i;
        gr_op_kind k = gr_node_kind(g, i);
        if (k > kmax[gid]) kmax[gid] = k;
        if (k == GR_KIND_REDUCE || k == GR_KIND_OUT_FUSABLE || k == GR_KIND_OPAQUE) heavy[gid]++;
        if (k == GR_KIND_OPAQUE) assert_int_equal(count[gid], 1);
    }
    if (!fuse) assert_int_equal(ng, run);
    for (int gid = 0; gid < ng; gid++) {
        assert_true(count[gid] >= 1 && count[gid] <= GR_FUSE_MAX_NODES);
        if (heavy[gid] > 1) {
            /* Only attention: the group's chain ends at its anchor. */
            int chain[5], len = 0;
            for (int i = 0; i < n && !len; i++)
                if (p->group_of[i] == gid) len = gr_attention_chain(m, i, chain);
            assert_int_equal(heavy[gid], 3);
            assert_true(len >= 3);
            assert_int_equal(chain[len - 1], p->anchor[gid]);
        }
        assert_int_equal(p->kind[gid], kmax[gid]);
        int a = p->anchor[gid];
        assert_int_equal(p->group_of[a], gid);
        if (heavy[gid]) {
            gr_op_kind ka = gr_node_kind(g, a);
            assert_true(ka == GR_KIND_REDUCE || ka == GR_KIND_OUT_FUSABLE || ka == GR_KIND_OPAQUE);
        } else {
            assert_int_equal(a, last[gid]);
        }
        if (gid > 0) assert_true(last[gid] > last[gid - 1]);
    }
    /* Edges: topological, and leaving a group only from its last node. */
    for (int c = 0; c < n; c++) {
        if (p->group_of[c] < 0) continue;
        const gr_node *nd = &g->nodes[c];
        for (int k = 0; k < nd->n_inputs; k++) {
            int v = nd->inputs[k];
            if (!flows(g, v)) continue;
            int q = g->values[v].producer, gq = p->group_of[q], gc = p->group_of[c];
            assert_true(gq >= 0);
            assert_true(gq <= gc);
            if (gq != gc) assert_int_equal(q, last[gq]);
        }
    }
    for (int o = 0; o < g->n_outputs; o++) {
        int v = g->outputs[o];
        if (!flows(g, v)) continue;
        int q = g->values[v].producer;
        assert_int_equal(q, last[p->group_of[q]]);
    }
    /* Convexity: nothing reachable from a group's members through a node
     * outside it is in the group (nodes are in topological order). */
    for (int gid = 0; gid < ng; gid++) {
        memset(reach, 0, (size_t)n * sizeof *reach);
        for (int c = 0; c <= last[gid]; c++) {
            if (p->group_of[c] < 0) continue;
            const gr_node *nd = &g->nodes[c];
            bool from_outside = false; /* reached through a node outside the group */
            for (int k = 0; k < nd->n_inputs; k++) {
                int v = nd->inputs[k];
                if (!flows(g, v)) continue;
                int q = g->values[v].producer;
                from_outside |= reach[q] || (p->group_of[q] == gid && p->group_of[c] != gid);
            }
            if (p->group_of[c] == gid) assert_false(from_outside);
            else reach[c] = from_outside;
        }
    }
    free(count);
    free(last);
    free(heavy);
    free(kmax);
    free(reach);
}

/* Partitions m (fused and not), checks both, and keeps the fused one. */
static void partition(const gr_model *m, gr_partition *p)
{
    char *err = NULL;
    gr_partition flat;
    assert_int_equal(gr_fuse(m, false, &flat, &err), 0);
    check_partition(m, &flat, false);
    gr_partition_free(&flat);
    int rc = gr_fuse(m, true, p, &err);
    if (rc) printf("%s\n", err);
    assert_int_equal(rc, 0);
    check_partition(m, p, true);
}

/* The printed partition, one group a line. */
static char *printed(const gr_model *m, const gr_partition *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    gr_partition_print(m, p, f);
    fclose(f);
    printf("%s", buf);
    return buf;
}

static void expect_print(const gr_model *m, const gr_partition *p, const char *want)
{
    char *got = printed(m, p);
    assert_string_equal(got, want);
    free(got);
}

/* ---------------- TVM's groups on small graphs ---------------- */

static void conv(builder *b, const char *name, const char *x, const char *w, const char *y)
{
    int k = gb_node(b, "Conv", name, NAMES(x, w), NAMES(y));
    static int64_t pads[4] = {1, 1, 1, 1};
    gb_attr_ints(b, k, "pads", 4, pads);
}

/* x [1,3,8,8] -> Conv(w [4,3,3,3]) -> c -> Add(bias [1,4,1,1]) -> a: the
 * convolution with its bias that several graphs start with. */
static void conv_bias(builder *b)
{
    gb_input(b, "x", SHAPE(1, 3, 8, 8));
    gb_weight(b, "w", SHAPE(4, 3, 3, 3));
    gb_weight(b, "bias", SHAPE(1, 4, 1, 1));
    conv(b, "conv", "x", "w", "c");
    gb_node(b, "Add", "bias_add", NAMES("c", "bias"), NAMES("a"));
}

static void g_conv_bias_relu(builder *b)
{
    conv_bias(b);
    gb_node(b, "Relu", "relu", NAMES("a"), NAMES("y"));
    gb_output(b, "y");
}

static void batchnorm(builder *b, const char *name, const char *x, const char *y)
{
    gb_node(b, "BatchNormalization", name, NAMES(x, "bn_s", "bn_b", "bn_m", "bn_v"), NAMES(y));
}

/* A stem Conv+Relu, then conv-bn-relu-conv-bn + Add(skip) + Relu. TVM
 * (SimplifyInference turns BN into a broadcast multiply-add) fuses
 * [conv0+relu0] [conv1+bn1+relu1] [conv2+bn2+add+relu2]: the skip value
 * relu0 also feeds conv1, an out-fusable edge, so its post-dominator (the
 * Add) is reached through a path that is not elementwise and relu0 ends
 * its group; conv2's chain reaches the Add elementwise and takes it. */
static void g_residual_block(builder *b)
{
    gb_input(b, "x", SHAPE(1, 8, 8, 8));
    gb_weight(b, "w0", SHAPE(8, 8, 3, 3));
    gb_weight(b, "w1", SHAPE(8, 8, 3, 3));
    gb_weight(b, "w2", SHAPE(8, 8, 3, 3));
    const char *bn[4] = {"bn_s", "bn_b", "bn_m", "bn_v"};
    for (int i = 0; i < 4; i++) gb_weight(b, bn[i], SHAPE(8));
    conv(b, "conv0", "x", "w0", "c0");
    gb_node(b, "Relu", "relu0", NAMES("c0"), NAMES("r0"));
    conv(b, "conv1", "r0", "w1", "c1");
    batchnorm(b, "bn1", "c1", "b1");
    gb_node(b, "Relu", "relu1", NAMES("b1"), NAMES("r1"));
    conv(b, "conv2", "r1", "w2", "c2");
    batchnorm(b, "bn2", "c2", "b2");
    gb_node(b, "Add", "skip", NAMES("b2", "r0"), NAMES("s"));
    gb_node(b, "Relu", "relu2", NAMES("s"), NAMES("y"));
    gb_output(b, "y");
}

static void transpose(builder *b, const char *x, const char *y, int64_t *perm)
{
    int t = gb_node(b, "Transpose", y, NAMES(x), NAMES(y));
    gb_attr_ints(b, t, "perm", 4, perm);
}

/* One BERT layer as exporters write it (2 heads of 4, sequence 4, GELU
 * through Erf), and the groups TVM gives it: each projection with its bias,
 * each head split and merge as one injective group, attention as one group
 * (Loom's rule; TVM: the scores' MatMul with the scaling and the mask,
 * Softmax alone, the V product alone), the output projection with bias and residual, each LayerNormalization
 * alone (their consumers are a MatMul and a residual Add reached through
 * it), the first FFN MatMul with the whole GELU diamond. */
static void g_bert_layer(builder *b)
{
    static int64_t heads[4] = {0, 2, 1, 3}, keys[4] = {0, 2, 3, 1};
    gb_input(b, "x", SHAPE(1, 4, 8));
    gb_input(b, "mask", SHAPE(1, 1, 1, 4));
    const char *w8[] = {"wq", "wk", "wv", "wo"}, *b8[] = {"bq", "bk", "bv", "bo", "b2"};
    for (int i = 0; i < 4; i++) gb_weight(b, w8[i], SHAPE(8, 8));
    for (int i = 0; i < 5; i++) gb_weight(b, b8[i], SHAPE(8));
    gb_weight(b, "w1", SHAPE(8, 16));
    gb_weight(b, "b1", SHAPE(16));
    gb_weight(b, "w2", SHAPE(16, 8));
    gb_weight(b, "ln_s", SHAPE(8));
    gb_weight(b, "ln_b", SHAPE(8));
    gb_weight(b, "c", SHAPE(1));
    gb_ints(b, "split_heads", 4, (int64_t[]){1, 4, 2, 4});
    gb_ints(b, "merge_heads", 3, (int64_t[]){1, 4, 8});
    const char *proj[3][5] = {{"wq", "bq", "q0", "q1", "q2"},
                              {"wk", "bk", "k0", "k1", "k2"},
                              {"wv", "bv", "v0", "v1", "v2"}};
    const char *heads_out[3] = {"q", "kt", "v"};
    for (int i = 0; i < 3; i++) {
        gb_node(b, "MatMul", proj[i][2], NAMES("x", proj[i][0]), NAMES(proj[i][2]));
        gb_node(b, "Add", proj[i][3], NAMES(proj[i][2], proj[i][1]), NAMES(proj[i][3]));
        gb_node(b, "Reshape", proj[i][4], NAMES(proj[i][3], "split_heads"), NAMES(proj[i][4]));
        transpose(b, proj[i][4], heads_out[i], i == 1 ? keys : heads);
    }
    gb_node(b, "MatMul", "qk", NAMES("q", "kt"), NAMES("qk"));
    gb_node(b, "Div", "scaled", NAMES("qk", "c"), NAMES("scaled"));
    gb_node(b, "Add", "masked", NAMES("scaled", "mask"), NAMES("masked"));
    gb_node(b, "Softmax", "probs", NAMES("masked"), NAMES("probs"));
    gb_node(b, "MatMul", "ctx", NAMES("probs", "v"), NAMES("ctx"));
    transpose(b, "ctx", "ctx_t", heads);
    gb_node(b, "Reshape", "ctx_r", NAMES("ctx_t", "merge_heads"), NAMES("ctx_r"));
    gb_node(b, "MatMul", "o", NAMES("ctx_r", "wo"), NAMES("o"));
    gb_node(b, "Add", "ob", NAMES("o", "bo"), NAMES("ob"));
    gb_node(b, "Add", "res1", NAMES("ob", "x"), NAMES("res1"));
    gb_node(b, "LayerNormalization", "ln1", NAMES("res1", "ln_s", "ln_b"), NAMES("ln1"));
    gb_node(b, "MatMul", "h0", NAMES("ln1", "w1"), NAMES("h0"));
    gb_node(b, "Add", "h", NAMES("h0", "b1"), NAMES("h"));
    gb_node(b, "Div", "g0", NAMES("h", "c"), NAMES("g0"));
    gb_node(b, "Erf", "g1", NAMES("g0"), NAMES("g1"));
    gb_node(b, "Add", "g2", NAMES("g1", "c"), NAMES("g2"));
    gb_node(b, "Mul", "g3", NAMES("h", "g2"), NAMES("g3"));
    gb_node(b, "Mul", "gelu", NAMES("g3", "c"), NAMES("gelu"));
    gb_node(b, "MatMul", "f0", NAMES("gelu", "w2"), NAMES("f0"));
    gb_node(b, "Add", "f", NAMES("f0", "b2"), NAMES("f"));
    gb_node(b, "Add", "res2", NAMES("f", "ln1"), NAMES("res2"));
    gb_node(b, "LayerNormalization", "ln2", NAMES("res2", "ln_s", "ln_b"), NAMES("y"));
    gb_output(b, "y");
}

/* Conv+Add whose sum feeds two graph outputs through Relu and Sigmoid:
 * the sum is needed twice, so the chain ends there. When the two uses
 * meet again (x * sigmoid(x)), the sum's post-dominator is the Mul, every
 * path to it is elementwise, and the whole diamond joins the Conv. */
static void g_shared_sum(builder *b)
{
    conv_bias(b);
    gb_node(b, "Relu", "relu", NAMES("a"), NAMES("y1"));
    gb_node(b, "Sigmoid", "sig", NAMES("a"), NAMES("y2"));
    gb_output(b, "y1");
    gb_output(b, "y2");
}

static void g_shared_swish(builder *b)
{
    gb_input(b, "x", SHAPE(1, 3, 8, 8));
    gb_weight(b, "w", SHAPE(4, 3, 3, 3));
    conv(b, "conv", "x", "w", "c");
    gb_node(b, "Sigmoid", "sig", NAMES("c"), NAMES("s"));
    gb_node(b, "Mul", "swish", NAMES("c", "s"), NAMES("y"));
    gb_output(b, "y");
}

/* A value that is both a graph output and read further: materialized. */
static void g_shared_output(builder *b)
{
    gb_input(b, "x", SHAPE(2, 3));
    gb_node(b, "Relu", "r", NAMES("x"), NAMES("r"));
    gb_node(b, "Sigmoid", "s", NAMES("r"), NAMES("y"));
    gb_output(b, "r");
    gb_output(b, "y");
}

/* Relu -> Reshape -> Transpose -> Reshape: one injective group (the Relu
 * joins its injective post-dominator in the first phase, the injective
 * chain merges in the second). */
static void g_injective_chain(builder *b)
{
    gb_input(b, "x", SHAPE(2, 3, 4));
    gb_ints(b, "s1", 2, (int64_t[]){6, 4});
    gb_ints(b, "s2", 2, (int64_t[]){2, 12});
    gb_node(b, "Reshape", "r1", NAMES("x", "s1"), NAMES("a"));
    gb_node(b, "Transpose", "t", NAMES("a"), NAMES("t"));
    gb_node(b, "Reshape", "r2", NAMES("t", "s2"), NAMES("y"));
    gb_output(b, "y");
}

static void g_relu_injective(builder *b)
{
    gb_input(b, "x", SHAPE(2, 3, 4));
    gb_ints(b, "s1", 2, (int64_t[]){6, 4});
    gb_node(b, "Relu", "relu", NAMES("x"), NAMES("r"));
    gb_node(b, "Reshape", "r1", NAMES("r", "s1"), NAMES("a"));
    gb_node(b, "Transpose", "t", NAMES("a"), NAMES("y"));
    gb_output(b, "y");
}

/* Div -> Softmax -> MatMul: the Div is inlined into the softmax group, the
 * MatMul is an anchor of its own (a reduction does not take an out-fusable
 * consumer). A LayerNormalization takes its elementwise consumer (Add of
 * the same shape), DESIGN.md's rule; a broadcasting consumer is not taken. */
static void g_softmax(builder *b)
{
    gb_input(b, "x", SHAPE(2, 4, 8));
    gb_weight(b, "scale", SHAPE(1));
    gb_weight(b, "w", SHAPE(8, 5));
    gb_node(b, "Div", "div", NAMES("x", "scale"), NAMES("d"));
    gb_node(b, "Softmax", "softmax", NAMES("d"), NAMES("s"));
    gb_node(b, "MatMul", "mm", NAMES("s", "w"), NAMES("y"));
    gb_output(b, "y");
}

/* The Mul broadcasts `row`, but reads the sum at its own shape: an
 * elementwise edge, so it joins too. */
static void g_layernorm(builder *b)
{
    gb_input(b, "x", SHAPE(2, 4, 8));
    gb_input(b, "res", SHAPE(2, 4, 8));
    gb_weight(b, "g", SHAPE(8));
    gb_weight(b, "beta", SHAPE(8));
    gb_weight(b, "row", SHAPE(2, 4, 1));
    gb_node(b, "LayerNormalization", "ln", NAMES("x", "g", "beta"), NAMES("l"));
    gb_node(b, "Add", "res_add", NAMES("l", "res"), NAMES("a"));
    gb_node(b, "Mul", "mul", NAMES("a", "row"), NAMES("y"));
    gb_output(b, "y");
}

/* The mean reaches the Sub through a broadcast edge: not an epilogue. */
static void g_reduce_broadcast(builder *b)
{
    gb_input(b, "x", SHAPE(2, 4, 8));
    int mean = gb_node(b, "ReduceMean", "mean", NAMES("x"), NAMES("m"));
    static int64_t axes[1] = {2}; /* an attribute up to opset 17 */
    gb_attr_ints(b, mean, "axes", 1, axes);
    gb_node(b, "Sub", "sub", NAMES("x", "m"), NAMES("y"));
    gb_output(b, "y");
}

/* TVM's finer points. (1) An elementwise side branch joins a reduction's
 * group through the injective node on its way (Relu -> Transpose ->
 * Add(relu, transposed) -> Softmax: one group), else the Transpose would be
 * left between two parts of the group. (2) Injective nodes wait for the
 * anchors: a Transpose feeding a Conv's bias Add does not take the Add
 * before the Conv does. (3) An anchor does not take consumers that
 * broadcast its output, even where the paths meet again elementwise. */
static int64_t perm_hw[4] = {0, 1, 3, 2};

static void g_side_branch(builder *b)
{
    gb_input(b, "x", SHAPE(1, 4, 6, 6));
    gb_node(b, "Relu", "relu", NAMES("x"), NAMES("r"));
    transpose(b, "r", "t", perm_hw);
    gb_node(b, "Add", "add", NAMES("r", "t"), NAMES("a"));
    gb_node(b, "Softmax", "softmax", NAMES("a"), NAMES("y"));
    gb_output(b, "y");
}

static void g_injective_waits(builder *b)
{
    gb_input(b, "x", SHAPE(1, 4, 6, 6));
    gb_input(b, "z", SHAPE(1, 4, 6, 6));
    gb_weight(b, "w", SHAPE(4, 4, 3, 3));
    transpose(b, "z", "t", perm_hw);
    conv(b, "conv", "x", "w", "c");
    gb_node(b, "Add", "add", NAMES("c", "t"), NAMES("y"));
    gb_output(b, "y");
}

static void g_broadcast_consumers(builder *b)
{
    gb_input(b, "x", SHAPE(1, 4, 1, 1));
    gb_input(b, "z", SHAPE(1, 4, 6, 6));
    gb_weight(b, "w", SHAPE(4, 4, 1, 1));
    gb_node(b, "Conv", "conv", NAMES("x", "w"), NAMES("c"));
    gb_node(b, "Relu", "relu", NAMES("c"), NAMES("r"));
    gb_node(b, "Sigmoid", "sig", NAMES("c"), NAMES("s"));
    gb_node(b, "Mul", "m1", NAMES("r", "z"), NAMES("m1"));
    gb_node(b, "Mul", "m2", NAMES("s", "z"), NAMES("m2"));
    gb_node(b, "Add", "add", NAMES("m1", "m2"), NAMES("y"));
    gb_output(b, "y");
}

/* A small graph, the groups TVM gives it (gr_partition_print: each line's
 * kind is the group's), node kinds after inference and group anchors. */
typedef struct {
    const char *name;
    void (*build)(builder *b); /* inputs, weights, nodes, outputs */
    const char *groups;
    int nkinds;
    struct {
        int node;
        gr_op_kind kind;
    } kinds[2];
    int nanchors;
    struct {
        int group, node;
    } anchors[2];
} fuse_case;

static const fuse_case fuse_cases[] = {
    {"conv_bias_relu", g_conv_bias_relu, "g0 out-fusable Conv: Conv+Add+Relu\n", 1,
     {{1, GR_KIND_BROADCAST}}, 1, {{0, 0}}},
    {"residual_block", g_residual_block,
     "g0 out-fusable Conv: Conv+Relu\n"
     "g1 out-fusable Conv: Conv+BatchNormalization+Relu\n"
     "g2 out-fusable Conv: Conv+BatchNormalization+Add+Relu\n",
     2, {{3, GR_KIND_BROADCAST}, {7, GR_KIND_ELEMWISE}}, 2, {{1, 2}, {2, 5}}},
    {"bert_layer", g_bert_layer,
     "g0 out-fusable MatMul: MatMul+Add\n"
     "g1 injective Transpose: Reshape+Transpose\n"
     "g2 out-fusable MatMul: MatMul+Add\n"
     "g3 injective Transpose: Reshape+Transpose\n"
     "g4 out-fusable MatMul: MatMul+Add\n"
     "g5 injective Transpose: Reshape+Transpose\n"
     "g6 out-fusable MatMul: MatMul+Div+Add+Softmax+MatMul\n"
     "g7 injective Reshape: Transpose+Reshape\n"
     "g8 out-fusable MatMul: MatMul+Add+Add\n"
     "g9 reduce LayerNormalization: LayerNormalization\n"
     "g10 out-fusable MatMul: MatMul+Add+Div+Erf+Add+Mul+Mul\n"
     "g11 out-fusable MatMul: MatMul+Add+Add\n"
     "g12 reduce LayerNormalization: LayerNormalization\n", 0, {{0}}, 0, {{0}}},
    {"shared_sum", g_shared_sum,
     "g0 out-fusable Conv: Conv+Add\n"
     "g1 elemwise Relu: Relu\n"
     "g2 elemwise Sigmoid: Sigmoid\n", 0, {{0}}, 0, {{0}}},
    {"shared_swish", g_shared_swish, "g0 out-fusable Conv: Conv+Sigmoid+Mul\n", 0, {{0}}, 0, {{0}}},
    {"shared_output", g_shared_output,
     "g0 elemwise Relu: Relu\ng1 elemwise Sigmoid: Sigmoid\n", 0, {{0}}, 0, {{0}}},
    {"injective_chain", g_injective_chain,
     "g0 injective Reshape: Reshape+Transpose+Reshape\n", 0, {{0}}, 0, {{0}}},
    {"relu_injective", g_relu_injective,
     "g0 injective Transpose: Relu+Reshape+Transpose\n", 0, {{0}}, 0, {{0}}},
    {"softmax", g_softmax, "g0 reduce Softmax: Div+Softmax\ng1 out-fusable MatMul: MatMul\n", 0,
     {{0}}, 1, {{0, 1}}},
    {"layernorm", g_layernorm,
     "g0 reduce LayerNormalization: LayerNormalization+Add+Mul\n", 0, {{0}}, 0, {{0}}},
    {"reduce_broadcast", g_reduce_broadcast,
     "g0 reduce ReduceMean: ReduceMean\ng1 broadcast Sub: Sub\n", 0, {{0}}, 0, {{0}}},
    {"side_branch", g_side_branch,
     "g0 reduce Softmax: Relu+Transpose+Add+Softmax\n", 0, {{0}}, 0, {{0}}},
    {"injective_waits", g_injective_waits,
     "g0 injective Transpose: Transpose\ng1 out-fusable Conv: Conv+Add\n", 0, {{0}}, 0, {{0}}},
    {"broadcast_consumers", g_broadcast_consumers,
     "g0 out-fusable Conv: Conv\n"
     "g1 broadcast Add: Relu+Sigmoid+Mul+Mul+Add\n", 0, {{0}}, 0, {{0}}},
};

static void test_small_graphs(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof fuse_cases / sizeof *fuse_cases; i++) {
        const fuse_case *c = &fuse_cases[i];
        /* partition()'s own checks fail without the case's name: it comes first. */
        printf("case %s\n", c->name);
        builder *b = gb_new();
        c->build(b);
        gb_infer(b);
        for (int k = 0; k < c->nkinds; k++) {
            gr_op_kind got = gr_node_kind(&b->g, c->kinds[k].node);
            if (got != c->kinds[k].kind)
                fail_msg("%s: node %d is %s (want %s)", c->name, c->kinds[k].node,
                         gr_op_kind_name(got), gr_op_kind_name(c->kinds[k].kind));
        }
        gr_partition p;
        partition(b->m, &p);
        char *got = printed(b->m, &p);
        if (strcmp(got, c->groups) != 0)
            fail_msg("%s: groups\n%swant\n%s", c->name, got, c->groups);
        /* One printed line a group, with the group's kind. */
        int lines = 0;
        for (const char *s = c->groups; *s; s++) lines += *s == '\n';
        if (p.ngroups != lines) fail_msg("%s: %d groups (want %d)", c->name, p.ngroups, lines);
        const char *line = c->groups;
        for (int g = 0; g < p.ngroups; g++, line = strchr(line, '\n') + 1) {
            char head[64];
            snprintf(head, sizeof head, "g%d %s ", g, gr_op_kind_name(p.kind[g]));
            if (strncmp(line, head, strlen(head)) != 0)
                fail_msg("%s: group %d is %s", c->name, g, gr_op_kind_name(p.kind[g]));
        }
        for (int k = 0; k < c->nanchors; k++)
            if (p.anchor[c->anchors[k].group] != c->anchors[k].node)
                fail_msg("%s: group %d's anchor is node %d (want %d)", c->name,
                         c->anchors[k].group, p.anchor[c->anchors[k].group], c->anchors[k].node);
        free(got);
        gr_partition_free(&p);
        gb_free(b);
    }
}

/* Scaled dot-product attention: q [1,2,4,8] x kt [1,2,8,6], scaled, masked,
 * softmax over the 6 keys, times v [1,2,6,8]. `variant` changes one thing. */
typedef enum {
    ATT_BERT,         /* Div by a constant, Add(mask) */
    ATT_MUL_NO_MASK,  /* Mul by a constant (on the left), no mask */
    ATT_BARE,         /* MatMul -> Softmax -> MatMul */
    ATT_SCORES_OUT,   /* the scaled scores are also a graph output */
    ATT_PROBS_READ,   /* the probabilities also feed a Relu (a second reader) */
    ATT_AXIS,         /* softmax over the query axis */
    ATT_P_RIGHT,      /* the second MatMul reads the probabilities on the right */
    ATT_RUNTIME_SCALE /* divided by a run-time input, not a constant */
} att_variant;

static builder *attention(att_variant variant)
{
    builder *b = gb_new();
    gb_input(b, "q", SHAPE(1, 2, 4, 8));
    gb_input(b, "kt", SHAPE(1, 2, 8, 6));
    gb_input(b, "mask", SHAPE(1, 1, 1, 6));
    gb_input(b, "s", SHAPE(1));
    gb_weight(b, "c", SHAPE(1));
    if (variant == ATT_P_RIGHT) gb_input(b, "v", SHAPE(1, 2, 8, 4));
    else gb_input(b, "v", SHAPE(1, 2, 6, 8));
    gb_node(b, "MatMul", "qk", NAMES("q", "kt"), NAMES("qk"));
    const char *scores = "qk";
    if (variant == ATT_MUL_NO_MASK) {
        gb_node(b, "Mul", "scaled", NAMES("c", "qk"), NAMES("scaled"));
        scores = "scaled";
    } else if (variant != ATT_BARE) {
        gb_node(b, "Div", "scaled", NAMES("qk", variant == ATT_RUNTIME_SCALE ? "s" : "c"),
                NAMES("scaled"));
        gb_node(b, "Add", "masked", NAMES("scaled", "mask"), NAMES("masked"));
        scores = "masked";
    }
    int sm = gb_node(b, "Softmax", "probs", NAMES(scores), NAMES("probs"));
    if (variant == ATT_AXIS) gb_attr_int(b, sm, "axis", 2);
    if (variant == ATT_P_RIGHT) gb_node(b, "MatMul", "ctx", NAMES("v", "probs"), NAMES("y"));
    else gb_node(b, "MatMul", "ctx", NAMES("probs", "v"), NAMES("y"));
    gb_output(b, "y");
    if (variant == ATT_SCORES_OUT) gb_output(b, "scaled");
    if (variant == ATT_PROBS_READ) {
        gb_node(b, "Relu", "r", NAMES("probs"), NAMES("r"));
        gb_output(b, "r");
    }
    gb_infer(b);
    return b;
}

/* The attention chain becomes one group (TVM's rules alone give three:
 * [MatMul+Div+Add], [Softmax], [MatMul]); only when nothing else reads the
 * scores or probabilities, the softmax runs over the keys, and the
 * probabilities are the second product's left operand. */
static void test_attention_group(void **state)
{
    (void)state;
    static const struct {
        att_variant v;
        const char *groups;
    } cases[] = {
        {ATT_BERT, "g0 out-fusable MatMul: MatMul+Div+Add+Softmax+MatMul\n"},
        {ATT_MUL_NO_MASK, "g0 out-fusable MatMul: MatMul+Mul+Softmax+MatMul\n"},
        {ATT_BARE, "g0 out-fusable MatMul: MatMul+Softmax+MatMul\n"},
        /* Needed outside: the scores end their group (the mask's Add then
         * joins the Softmax); the V product stays apart as TVM has it. */
        {ATT_SCORES_OUT, "g0 out-fusable MatMul: MatMul+Div\n"
                         "g1 reduce Softmax: Add+Softmax\n"
                         "g2 out-fusable MatMul: MatMul\n"},
        {ATT_PROBS_READ, "g0 out-fusable MatMul: MatMul+Div+Add\n"
                         "g1 reduce Softmax: Softmax\n"
                         "g2 out-fusable MatMul: MatMul\n"
                         "g3 elemwise Relu: Relu\n"},
        {ATT_AXIS, "g0 out-fusable MatMul: MatMul+Div+Add\n"
                   "g1 reduce Softmax: Softmax\n"
                   "g2 out-fusable MatMul: MatMul\n"},
        {ATT_P_RIGHT, "g0 out-fusable MatMul: MatMul+Div+Add\n"
                      "g1 reduce Softmax: Softmax\n"
                      "g2 out-fusable MatMul: MatMul\n"},
        {ATT_RUNTIME_SCALE, "g0 out-fusable MatMul: MatMul+Div+Add\n"
                            "g1 reduce Softmax: Softmax\n"
                            "g2 out-fusable MatMul: MatMul\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        builder *b = attention(cases[i].v);
        gr_partition p;
        partition(b->m, &p);
        expect_print(b->m, &p, cases[i].groups);
        /* The anchor of a fused chain is its last MatMul. */
        if (p.ngroups == 1) assert_string_equal(b->nodes[p.anchor[0]].op_type, "MatMul");
        if (p.ngroups == 1) assert_int_equal(p.anchor[0], b->nn - 1);
        gr_partition_free(&p);
        /* Without fusion: one group a node, the chain or not. */
        gr_partition flat;
        char *err = NULL;
        assert_int_equal(gr_fuse(b->m, false, &flat, &err), 0);
        assert_int_equal(flat.ngroups, b->nn);
        gr_partition_free(&flat);
        gb_free(b);
    }
    /* The chain itself, in node order. */
    builder *b = attention(ATT_BERT);
    int chain[5];
    assert_int_equal(gr_attention_chain(b->m, 3, chain), 5);
    for (int k = 0; k < 5; k++) assert_int_equal(chain[k], k);
    assert_int_equal(gr_attention_chain(b->m, 0, chain), 0); /* not a Softmax */
    assert_int_equal(gr_attention_chain(b->m, 99, chain), 0);
    assert_int_equal(gr_attention_chain(NULL, 3, chain), 0);
    gb_free(b);
}

/* An operator fusion does not know is opaque and stops fusion both ways:
 * the graph is inferred with an Add, which is then renamed. */
static void test_opaque_stops_fusion(void **state)
{
    (void)state;
    builder *b = gb_new();
    conv_bias(b);
    gb_node(b, "Relu", "relu", NAMES("a"), NAMES("r"));
    gb_node(b, "Sigmoid", "sig", NAMES("r"), NAMES("y"));
    gb_output(b, "y");
    gb_infer(b);
    b->nodes[2].op_type = "MyOp";
    assert_int_equal(gr_node_kind(&b->g, 2), GR_KIND_OPAQUE);
    gr_partition p;
    partition(b->m, &p);
    expect_print(b->m, &p,
                 "g0 out-fusable Conv: Conv+Add\n"
                 "g1 opaque MyOp: MyOp\n"
                 "g2 elemwise Sigmoid: Sigmoid\n");
    gr_partition_free(&p);
    /* A known op_type in another domain is opaque too. */
    b->nodes[2].op_type = "Relu";
    b->nodes[2].domain = "com.example";
    assert_int_equal(gr_node_kind(&b->g, 2), GR_KIND_OPAQUE);
    partition(b->m, &p);
    assert_int_equal(p.ngroups, 3);
    gr_partition_free(&p);
    b->nodes[2].domain = "ai.onnx";
    assert_int_equal(gr_node_kind(&b->g, 2), GR_KIND_ELEMWISE);
    gb_free(b);
}

/* Without fusion every run node is a group; folded nodes (Shape of a
 * static value, Constant, arithmetic on them) are not run, and reading a
 * value only to fold its shape is no use of it: the Relu still fuses into
 * the Reshape, its one real consumer. */
static void test_unfused_and_constants(void **state)
{
    (void)state;
    builder *b = gb_new();
    gb_input(b, "x", SHAPE(2, 3, 4));
    gb_ints(b, "idx", 2, (int64_t[]){2, 0});
    gb_node(b, "Relu", "relu", NAMES("x"), NAMES("r"));
    gb_node(b, "Shape", "shape", NAMES("r"), NAMES("s"));
    gb_node(b, "Gather", "gather", NAMES("s", "idx"), NAMES("gs"));
    int c = gb_node(b, "Constant", "const", (const char *[]){NULL}, NAMES("m1"));
    static int64_t minus1[1] = {-1}, one[1] = {1};
    static gr_tensor t = {.name = "", .elem_type = GR_INT64, .dtype = {kDLInt, 64, 1}, .ndim = 1,
                          .shape = one, .numel = 1, .nbytes = 8, .data = minus1};
    b->nodes[c].attrs[b->nodes[c].n_attrs++] = (gr_attr){.name = "value", .kind = GR_ATTR_TENSOR,
                                                         .t = &t};
    int cat = gb_node(b, "Concat", "concat", NAMES("gs", "m1"), NAMES("cat"));
    gb_attr_int(b, cat, "axis", 0);
    gb_node(b, "Reshape", "reshape", NAMES("r", "cat"), NAMES("y"));
    gb_output(b, "y");
    gb_infer(b);
    assert_non_null(b->v[gb_find(b, "cat")].data);
    gr_partition p;
    char *err = NULL;
    assert_int_equal(gr_fuse(b->m, false, &p, &err), 0);
    check_partition(b->m, &p, false);
    assert_int_equal(p.ngroups, 2);
    assert_int_equal(p.group_of[0], 0);
    for (int i = 1; i < 5; i++) assert_int_equal(p.group_of[i], -1);
    assert_int_equal(p.group_of[5], 1);
    expect_print(b->m, &p, "g0 elemwise Relu: Relu\ng1 injective Reshape: Reshape\n");
    gr_partition_free(&p);
    partition(b->m, &p);
    for (int i = 1; i < 5; i++) assert_int_equal(p.group_of[i], -1);
    expect_print(b->m, &p, "g0 injective Reshape: Relu+Reshape\n");
    gr_partition_free(&p);
    gb_free(b);
}

/* A chain longer than GR_FUSE_MAX_NODES splits at the limit. */
static void test_node_limit(void **state)
{
    (void)state;
    enum { N = GR_FUSE_MAX_NODES + 44 };
    static char names[N + 1][16];
    builder *b = gb_new();
    snprintf(names[0], sizeof names[0], "v0");
    gb_input(b, names[0], SHAPE(4));
    for (int i = 1; i <= N; i++) {
        snprintf(names[i], sizeof names[i], "v%d", i);
        gb_node(b, "Relu", names[i], NAMES(names[i - 1]), NAMES(names[i]));
    }
    gb_output(b, names[N]);
    gb_infer(b);
    gr_partition p;
    partition(b->m, &p);
    assert_int_equal(p.ngroups, 2);
    assert_int_equal(p.group_of[GR_FUSE_MAX_NODES - 1], 0);
    assert_int_equal(p.group_of[GR_FUSE_MAX_NODES], 1);
    assert_int_equal(p.group_of[N - 1], 1);
    gr_partition_free(&p);
    gb_free(b);
}

/* ---------------- random graphs ---------------- */

/* Random DAGs of every kind of node on [1,4,6,6] values (Split+Concat for
 * a node with two outputs, ReduceMean+Sub for a broadcast edge out of a
 * reduction, renamed nodes for opaque ones), diamonds and shared values
 * everywhere: every partition keeps the properties. */
static int pick(uint64_t *rng, int n)
{
    /* Recent values more often: long chains as well as wide fan-out. */
    int a = (int)(tu_rand_u64(rng) % (uint64_t)n), c = (int)(tu_rand_u64(rng) % (uint64_t)n);
    return a > c ? a : c;
}

static void random_graph(uint64_t *rng, int nops, gr_partition *p, int *fused_groups)
{
    static char names[MAXV][16];
    static int64_t perm[4] = {0, 1, 3, 2}, kernel[2] = {3, 3}, pads[4] = {1, 1, 1, 1};
    static int64_t axes1[1] = {1};
    builder *b = gb_new();
    int avail[MAXV], navail = 0, nnames = 0;
    int64_t one = 1;
#define FRESH() (snprintf(names[nnames], sizeof names[0], "v%d", nnames), names[nnames++])
#define AV(k) b->v[avail[k]].name
    for (int i = 0; i < 2; i++) {
        gb_input(b, FRESH(), SHAPE(1, 4, 6, 6));
        avail[navail++] = b->nv - 1;
    }
    gb_weight(b, "w", SHAPE(4, 4, 3, 3));
    gb_weight(b, "bias", SHAPE(1, 4, 1, 1));
    const char *bn[4] = {"bn_s", "bn_b", "bn_m", "bn_v"};
    for (int i = 0; i < 4; i++) gb_weight(b, bn[i], 1, (int64_t[]){4});
    (void)one;
    bool opaque[MAXN] = {false};
    for (int k = 0; k < nops && b->nn + 2 < MAXN; k++) {
        const char *x = AV(pick(rng, navail)), *y = AV(pick(rng, navail));
        const char *out = FRESH();
        int node = -1;
        switch (tu_rand_u64(rng) % 13) {
        case 0: node = gb_node(b, "Relu", out, NAMES(x), NAMES(out)); break;
        case 1: node = gb_node(b, "Sigmoid", out, NAMES(x), NAMES(out)); break;
        case 2: node = gb_node(b, "Add", out, NAMES(x, y), NAMES(out)); break;
        case 3: node = gb_node(b, "Mul", out, NAMES(x, y), NAMES(out)); break;
        case 4: node = gb_node(b, "Add", out, NAMES(x, "bias"), NAMES(out)); break;
        case 5: batchnorm(b, out, x, out); break;
        case 6: conv(b, out, x, "w", out); break;
        case 7:
            node = gb_node(b, "MaxPool", out, NAMES(x), NAMES(out));
            gb_attr_ints(b, node, "kernel_shape", 2, kernel);
            gb_attr_ints(b, node, "pads", 4, pads);
            break;
        case 8: node = gb_node(b, "Softmax", out, NAMES(x), NAMES(out)); break;
        case 9:
            node = gb_node(b, "Transpose", out, NAMES(x), NAMES(out));
            gb_attr_ints(b, node, "perm", 4, perm);
            break;
        case 10: {
            const char *mean = out;
            node = gb_node(b, "ReduceMean", mean, NAMES(x), NAMES(mean));
            gb_attr_ints(b, node, "axes", 1, axes1);
            out = FRESH();
            gb_node(b, "Sub", out, NAMES(x, mean), NAMES(out));
            break;
        }
        case 11: {
            const char *lo = out, *hi = FRESH();
            node = gb_node(b, "Split", lo, NAMES(x), NAMES(lo, hi));
            gb_attr_int(b, node, "axis", 1);
            out = FRESH();
            int cat = gb_node(b, "Concat", out, NAMES(hi, lo), NAMES(out));
            gb_attr_int(b, cat, "axis", 1);
            break;
        }
        default:
            node = gb_node(b, "Relu", out, NAMES(x), NAMES(out));
            opaque[node] = true;
            break;
        }
        avail[navail++] = gb_find(b, out);
    }
    /* Unread values are graph outputs, and now and then a read one too. */
    for (int v = 0; v < b->nv; v++) {
        if (b->v[v].kind != GR_VALUE_NODE || b->g.n_outputs == 16) continue;
        bool read = false;
        for (int n = 0; n < b->nn && !read; n++)
            for (int k = 0; k < b->nodes[n].n_inputs; k++) read |= b->nodes[n].inputs[k] == v;
        if (!read || tu_rand_u64(rng) % 10 == 0) b->g_out[b->g.n_outputs++] = v;
    }
#undef FRESH
#undef AV
    gb_infer(b);
    for (int n = 0; n < b->nn; n++)
        if (opaque[n]) b->nodes[n].op_type = "MyOp";
    partition(b->m, p);
    for (int gid = 0; gid < p->ngroups; gid++) {
        int members = 0;
        for (int i = 0; i < b->nn; i++) members += p->group_of[i] == gid;
        *fused_groups += members > 1;
    }
    gr_partition_free(p);
    gb_free(b);
}

static void test_random_graphs(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    int fused = 0;
    for (int i = 0; i < 300; i++) {
        gr_partition p;
        random_graph(&rng, 3 + (int)(tu_rand_u64(&rng) % 40), &p, &fused);
    }
    printf("300 random graphs: %d fused groups\n", fused);
    assert_true(fused > 300);
}

/* ---------------- kinds ---------------- */

static void test_kinds(void **state)
{
    (void)state;
    static const struct {
        const char *op;
        gr_op_kind kind;
    } table[] = {
        {"Relu", GR_KIND_ELEMWISE}, {"Clip", GR_KIND_ELEMWISE}, {"Sigmoid", GR_KIND_ELEMWISE},
        {"Tanh", GR_KIND_ELEMWISE}, {"Erf", GR_KIND_ELEMWISE}, {"Gelu", GR_KIND_ELEMWISE},
        {"HardSwish", GR_KIND_ELEMWISE}, {"Sqrt", GR_KIND_ELEMWISE},
        {"Reciprocal", GR_KIND_ELEMWISE}, {"Cast", GR_KIND_ELEMWISE},
        {"Identity", GR_KIND_ELEMWISE}, {"Reshape", GR_KIND_INJECTIVE},
        {"Flatten", GR_KIND_INJECTIVE}, {"Squeeze", GR_KIND_INJECTIVE},
        {"Unsqueeze", GR_KIND_INJECTIVE}, {"Transpose", GR_KIND_INJECTIVE},
        {"Concat", GR_KIND_INJECTIVE}, {"Split", GR_KIND_INJECTIVE}, {"Slice", GR_KIND_INJECTIVE},
        {"Gather", GR_KIND_INJECTIVE}, {"ReduceMean", GR_KIND_REDUCE},
        {"ReduceSum", GR_KIND_REDUCE}, {"Softmax", GR_KIND_REDUCE},
        {"LayerNormalization", GR_KIND_REDUCE}, {"Conv", GR_KIND_OUT_FUSABLE},
        {"Gemm", GR_KIND_OUT_FUSABLE}, {"MatMul", GR_KIND_OUT_FUSABLE},
        {"MaxPool", GR_KIND_OUT_FUSABLE}, {"AveragePool", GR_KIND_OUT_FUSABLE},
        {"GlobalAveragePool", GR_KIND_OUT_FUSABLE}, {"BatchNormalization", GR_KIND_BROADCAST},
        {"Loop", GR_KIND_OPAQUE}, {"Foo", GR_KIND_OPAQUE},
    };
    /* Synthetic nodes: kinds of these ops need no shapes. */
    int64_t s23[2] = {2, 3}, s3[1] = {3};
    gr_value v[3] = {{.name = "a", .type = {.kind = GR_TYPE_TENSOR, .ndim = 2, .shape = s23}},
                     {.name = "b", .type = {.kind = GR_TYPE_TENSOR, .ndim = 2, .shape = s23}},
                     {.name = "y", .type = {.kind = GR_TYPE_TENSOR, .ndim = 2, .shape = s23}}};
    int in[2] = {0, 1}, out[1] = {2};
    gr_attr train = {.name = "training_mode", .kind = GR_ATTR_INT, .i = 1};
    gr_node n = {.name = "", .op_type = "", .domain = "", .n_inputs = 2, .inputs = in,
                 .n_outputs = 1, .outputs = out};
    gr_graph g = {.n_values = 3, .values = v, .n_nodes = 1, .nodes = &n};
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        n.op_type = (char *)table[i].op;
        assert_int_equal(gr_node_kind(&g, 0), table[i].kind);
    }
    n.op_type = "BatchNormalization";
    n.n_attrs = 1;
    n.attrs = &train;
    assert_int_equal(gr_node_kind(&g, 0), GR_KIND_REDUCE);
    n.n_attrs = 0;
    /* Binary ops and Where: elementwise unless an input broadcasts. */
    const char *binary[] = {"Add", "Sub", "Mul", "Div", "Pow", "Where"};
    for (int i = 0; i < 6; i++) {
        n.op_type = (char *)binary[i];
        v[1].type.ndim = 2;
        v[1].type.shape = s23;
        assert_int_equal(gr_node_kind(&g, 0), GR_KIND_ELEMWISE);
        v[1].type.ndim = 1;
        v[1].type.shape = s3;
        assert_int_equal(gr_node_kind(&g, 0), GR_KIND_BROADCAST);
        v[1].type.ndim = -1; /* not inferred: the safe side */
        assert_int_equal(gr_node_kind(&g, 0), GR_KIND_BROADCAST);
    }
    n.op_type = "Gelu";
    n.domain = "com.microsoft";
    assert_int_equal(gr_node_kind(&g, 0), GR_KIND_ELEMWISE);
    n.op_type = "Relu";
    assert_int_equal(gr_node_kind(&g, 0), GR_KIND_OPAQUE);
    assert_int_equal(gr_node_kind(&g, 1), GR_KIND_OPAQUE);
    assert_int_equal(gr_node_kind(&g, -1), GR_KIND_OPAQUE);
    assert_int_equal(gr_node_kind(NULL, 0), GR_KIND_OPAQUE);
    assert_string_equal(gr_op_kind_name(GR_KIND_ELEMWISE), "elemwise");
    assert_string_equal(gr_op_kind_name(GR_KIND_BROADCAST), "broadcast");
    assert_string_equal(gr_op_kind_name(GR_KIND_INJECTIVE), "injective");
    assert_string_equal(gr_op_kind_name(GR_KIND_REDUCE), "reduce");
    assert_string_equal(gr_op_kind_name(GR_KIND_OUT_FUSABLE), "out-fusable");
    assert_string_equal(gr_op_kind_name(GR_KIND_OPAQUE), "opaque");
    assert_string_equal(gr_op_kind_name((gr_op_kind)5), "?");
}

/* ---------------- refusals ---------------- */

static void test_errors(void **state)
{
    (void)state;
    gr_partition p;
    char *err = NULL;
    assert_int_equal(gr_fuse(NULL, true, &p, &err), -1);
    assert_string_equal(err, "gr_fuse: the model is NULL");
    assert_int_equal(p.ngroups, 0);
    assert_null(p.group_of);
    free(err);
    err = NULL;

    builder *b = gb_new();
    gb_input(b, "x", SHAPE(2, 3));
    gb_node(b, "Relu", "", NAMES("x"), NAMES("r"));
    gb_node(b, "Sigmoid", "sig", NAMES("r"), NAMES("y"));
    gb_output(b, "y");
    assert_int_equal(gr_fuse(b->m, true, NULL, &err), -1);
    assert_string_equal(err, "gr_fuse: the partition is NULL");
    free(err);
    err = NULL;
    /* Before shape inference. */
    assert_int_equal(gr_fuse(b->m, true, &p, &err), -1);
    printf("  %s\n", err);
    assert_non_null(strstr(err, b->m->path));
    assert_non_null(strstr(err, ": node #0 (Relu) output 'r' has no inferred shape: fusion runs "
                                "after gr_infer_shapes"));
    free(err);
    err = NULL;
    b->v[gb_find(b, "r")].type.ndim = 2;
    assert_int_equal(gr_fuse(b->m, true, &p, &err), -1);
    assert_non_null(strstr(err, ": node 'sig' (Sigmoid) output 'y' has no inferred shape"));
    free(err);
    err = NULL;
    gb_infer(b);
    partition(b->m, &p);
    assert_int_equal(p.ngroups, 1);
    gr_partition_free(&p);
    /* Nodes out of order (the loader refuses such files; a graph built in
     * memory can have them). */
    gr_node swap = b->nodes[0];
    b->nodes[0] = b->nodes[1];
    b->nodes[1] = swap;
    int r = gb_find(b, "r"), y = gb_find(b, "y");
    b->v[r].producer = 1;
    b->v[y].producer = 0;
    assert_int_equal(gr_fuse(b->m, true, &p, &err), -1);
    assert_non_null(strstr(err, ": node #0 (Sigmoid) reads 'r' before node #1 writes it: nodes "
                                "must be in topological order"));
    free(err);
    b->nodes[1] = b->nodes[0];
    b->nodes[0] = swap;
    b->v[r].producer = 0;
    b->v[y].producer = 1;
    partition(b->m, &p);
    gr_partition_free(&p);
    gr_partition_free(&p); /* emptied: freeing again is harmless */
    gr_partition_free(NULL);
    gb_free(b);
}

/* ---------------- ONNX's test suite ---------------- */

typedef struct {
    int models, unsupported, refused, partitioned, nodes, groups, fused_groups, not_run;
} counts;

/* Every model.onnx under TESTDATA/set whose operators are all supported
 * and whose shapes infer: partitioned with and without fusion, checked. */
static void run_set(const char *set, counts *c, bool print_groups)
{
    char root[4096];
    snprintf(root, sizeof root, TESTDATA "/%s", set);
    os_walk wk;
    if (!os_walk_open(&wk, root)) return;
    while (os_walk_next(&wk)) {
        c->models++;
        char *err = NULL;
        gr_model *m = gr_model_load(wk.model, &err);
        if (!m) {
            printf("  %s/%s does not load: %s\n", set, wk.name, err);
            free(err);
            c->refused++;
            continue;
        }
        bool supported = true;
        for (int i = 0; i < m->graph->n_nodes && supported; i++) {
            const gr_node *n = &m->graph->nodes[i];
            supported =
                gr_op_supported(n->domain, n->op_type, os_opset_of(m, n->domain));
        }
        for (int i = 0; i < m->graph->n_inputs && supported; i++)
            supported = m->graph->values[m->graph->inputs[i]].type.kind == GR_TYPE_TENSOR;
        if (!supported) {
            c->unsupported++;
            gr_model_free(m);
            continue;
        }
        os_inputs in;
        os_inputs_load(wk.dir, m, &in, false);
        if (gr_infer_shapes(m, in.nfixed, in.fixed, &err) != 0) {
            printf("  %s/%s: %s\n", set, wk.name, err);
            free(err);
            err = NULL;
            c->refused++;
        } else {
            gr_partition p;
            partition(m, &p);
            c->partitioned++;
            c->nodes += m->graph->n_nodes;
            c->groups += p.ngroups;
            for (int gid = 0; gid < p.ngroups; gid++) {
                int members = 0;
                for (int i = 0; i < m->graph->n_nodes; i++) members += p.group_of[i] == gid;
                c->fused_groups += members > 1;
            }
            for (int i = 0; i < m->graph->n_nodes; i++) c->not_run += p.group_of[i] < 0;
            if (print_groups) {
                printf("  %s/%s: %d nodes, %d groups\n", set, wk.name, m->graph->n_nodes,
                       p.ngroups);
                char *text = printed(m, &p);
                free(text);
            }
            gr_partition_free(&p);
        }
        os_inputs_free(m, &in);
        gr_model_free(m);
    }
    printf("%s: %d models, %d with unsupported operators, %d refused, %d partitioned: %d nodes "
           "(%d not run) in %d groups, %d of them fused\n",
           set, c->models, c->unsupported, c->refused, c->partitioned, c->nodes, c->not_run,
           c->groups, c->fused_groups);
}

static void test_onnx_suite(void **state)
{
    (void)state;
    os_need_testdata();
    const char *sets[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};
    int partitioned = 0;
    for (int i = 0; i < 4; i++) {
        counts c = {0};
        run_set(sets[i], &c, false);
        partitioned += c.partitioned;
    }
    assert_true(partitioned > 200);
    /* The real models: Debian ships only their download addresses. */
    counts real = {0};
    run_set("real", &real, true);
    if (real.models == 0)
        printf("real: no model.onnx (the package ships only each model's data.json with its "
               "download address)\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_graphs),
        cmocka_unit_test(test_attention_group),
        cmocka_unit_test(test_opaque_stops_fusion),
        cmocka_unit_test(test_unfused_and_constants),
        cmocka_unit_test(test_node_limit),
        cmocka_unit_test(test_random_graphs),
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_onnx_suite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
