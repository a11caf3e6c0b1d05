/*
 * graph/lower_nn.c: the network operators (Conv, Gemm, MatMul,
 * BatchNormalization, MaxPool, AveragePool, GlobalAveragePool, Softmax,
 * LayerNormalization, ReduceSum, ReduceMean) on the attribute
 * combinations ONNX's backend tests leave out (or hold only at opsets
 * Loom does not load: the pytorch-converted ones). Each case writes a
 * one-node model, runs it through gr_compile/gr_run on fresh random data
 * with the outputs poisoned with NaN, and compares with a naive
 * double-precision reference: |got - want| <= 1e-5 + 1e-4 |want|
 * (float32 sums of at most a few hundred terms of values in [-1, 1]).
 * The refusals a user can reach come with their messages.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "testutil.h"

#define RTOL 1e-4
#define ATOL 1e-5
#define MAXD 8

static char tmpdir[64];

/* ---------------- one-node models ---------------- */

typedef struct {
    const char *name;     /* "" leaves an optional input or output out */
    int elem;             /* GR_FLOAT when 0 */
    int ndim;
    int64_t shape[MAXD];
    const int64_t *ints;  /* an int64 initializer of shape[0] values */
} io_spec;

typedef struct {
    const char *name;
    char kind; /* 'i' int, 'f' float, 's' string, 'I' ints */
    int64_t i;
    float f;
    const char *s;
    int n;
    const int64_t *ints;
} attr_spec;

typedef struct {
    int64_t opset;
    const char *op;
    int nin, nout, nattr;
    io_spec in[8], out[4];
    attr_spec attr[12];
} node_spec;

static void value_info(Onnx__ValueInfoProto *vi, Onnx__TypeProto *tp, Onnx__TypeProto__Tensor *tt,
                       Onnx__TensorShapeProto *sh, Onnx__TensorShapeProto__Dimension *dims,
                       Onnx__TensorShapeProto__Dimension **dp, const io_spec *s, bool with_shape)
{
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    vi->name = (char *)s->name;
    vi->type = tp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = s->elem ? s->elem : GR_FLOAT;
    if (!with_shape) return;
    onnx__tensor_shape_proto__init(sh);
    tt->shape = sh;
    sh->n_dim = (size_t)s->ndim;
    sh->dim = dp;
    for (int d = 0; d < s->ndim; d++) {
        onnx__tensor_shape_proto__dimension__init(&dims[d]);
        dims[d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dims[d].dim_value = s->shape[d];
        dp[d] = &dims[d];
    }
}

/* Writes the node as a model file in tmpdir; returns its path (static). */
static const char *write_node(const node_spec *ns)
{
    static char path[128];
    static int serial;
    snprintf(path, sizeof path, "%s/m%d.onnx", tmpdir, serial++);

    Onnx__ModelProto model;
    Onnx__OperatorSetIdProto opset, *opsets[1] = {&opset};
    Onnx__GraphProto graph;
    Onnx__NodeProto node, *nodes[1] = {&node};
    Onnx__ValueInfoProto vin[8], vout[4], *pin[8], *pout[4];
    Onnx__TypeProto tin[8], tout[4];
    Onnx__TypeProto__Tensor ttin[8], ttout[4];
    Onnx__TensorShapeProto shin[8], shout[4];
    Onnx__TensorShapeProto__Dimension dims[8][MAXD], *dp[8][MAXD], odims[4][MAXD], *odp[4][MAXD];
    Onnx__TensorProto inits[8], *pinit[8];
    Onnx__AttributeProto attrs[12], *pattr[12];
    char *in_names[8], *out_names[4];
    int ngin = 0, ninit = 0;

    onnx__model_proto__init(&model);
    model.has_ir_version = 1;
    model.ir_version = 8;
    onnx__operator_set_id_proto__init(&opset);
    opset.domain = "";
    opset.has_version = 1;
    opset.version = ns->opset;
    model.n_opset_import = 1;
    model.opset_import = opsets;
    onnx__graph_proto__init(&graph);
    graph.name = "g";
    model.graph = &graph;
    onnx__node_proto__init(&node);
    node.name = "n0";
    node.op_type = (char *)ns->op;
    for (int k = 0; k < ns->nin; k++) {
        const io_spec *s = &ns->in[k];
        in_names[k] = (char *)s->name;
        if (!*s->name) continue;
        if (s->ints) {
            Onnx__TensorProto *t = &inits[ninit];
            onnx__tensor_proto__init(t);
            t->name = (char *)s->name;
            t->has_data_type = 1;
            t->data_type = GR_INT64;
            t->n_dims = 1;
            t->dims = (int64_t *)s->shape;
            t->n_int64_data = (size_t)s->shape[0];
            t->int64_data = (int64_t *)s->ints;
            pinit[ninit++] = t;
            continue;
        }
        value_info(&vin[ngin], &tin[ngin], &ttin[ngin], &shin[ngin], dims[ngin], dp[ngin], s, true);
        pin[ngin] = &vin[ngin];
        ngin++;
    }
    int ngout = 0;
    for (int k = 0; k < ns->nout; k++) {
        const io_spec *s = &ns->out[k];
        out_names[k] = (char *)s->name;
        if (!*s->name) continue;
        value_info(&vout[ngout], &tout[ngout], &ttout[ngout], &shout[ngout], odims[ngout],
                   odp[ngout], s, false);
        pout[ngout] = &vout[ngout];
        ngout++;
    }
    node.n_input = (size_t)ns->nin;
    node.input = in_names;
    node.n_output = (size_t)ns->nout;
    node.output = out_names;
    for (int a = 0; a < ns->nattr; a++) {
        const attr_spec *s = &ns->attr[a];
        Onnx__AttributeProto *p = &attrs[a];
        onnx__attribute_proto__init(p);
        p->name = (char *)s->name;
        p->has_type = 1;
        switch (s->kind) {
        case 'i':
            p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
            p->has_i = 1;
            p->i = s->i;
            break;
        case 'f':
            p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
            p->has_f = 1;
            p->f = s->f;
            break;
        case 's':
            p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
            p->has_s = 1;
            p->s = (ProtobufCBinaryData){strlen(s->s), (uint8_t *)s->s};
            break;
        default:
            p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
            p->n_ints = (size_t)s->n;
            p->ints = (int64_t *)s->ints;
        }
        pattr[a] = p;
    }
    node.n_attribute = (size_t)ns->nattr;
    node.attribute = pattr;
    graph.n_node = 1;
    graph.node = nodes;
    graph.n_input = (size_t)ngin;
    graph.input = pin;
    graph.n_output = (size_t)ngout;
    graph.output = pout;
    graph.n_initializer = (size_t)ninit;
    graph.initializer = pinit;

    size_t len = onnx__model_proto__get_packed_size(&model);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    assert_int_equal(onnx__model_proto__pack(&model, buf), len);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
    free(buf);
    return path;
}

/* ---------------- running ---------------- */

static int64_t numel(int nd, const int64_t *s)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= s[d];
    return n;
}

/* Runs the node on `ins` (the run-time inputs in order) into `outs`
 * (allocated here with the expected shapes of ns->out, poisoned). */
static void run_node(const node_spec *ns, DLTensor **ins, int nins, DLTensor **outs)
{
    const char *path = write_node(ns);
    char *err = NULL;
    gr_model *m = gr_model_load(path, &err);
    if (!m) printf("%s\n", err);
    assert_non_null(m);
    gr_exec *e = gr_compile(m, NULL, &err);
    if (!e) printf("%s: %s\n", ns->op, err);
    assert_non_null(e);
    int nout = 0;
    for (int k = 0; k < ns->nout; k++) {
        const io_spec *s = &ns->out[k];
        if (!*s->name) continue;
        DLDataType dt = {kDLFloat, 32, 1};
        if (s->elem == GR_INT64) dt = (DLDataType){kDLInt, 64, 1};
        int nd = s->ndim ? s->ndim : 1;
        int64_t one = 1;
        outs[nout] = rt_tensor_alloc(dt, nd, s->ndim ? s->shape : &one);
        assert_non_null(outs[nout]);
        if (dt.code == kDLFloat) tu_poison_f32(outs[nout]);
        else memset(outs[nout]->data, 0x7f, (size_t)numel(nd, outs[nout]->shape) * 8);
        nout++;
    }
    if (gr_run(e, nins, ins, nout, outs, &err) != 0) printf("%s\n", err);
    assert_null(err);
    gr_exec_free(e);
    gr_model_free(m);
}

/* Compiling the node fails with a message holding `want` (and the node's name). */
static void expect_refusal(const node_spec *ns, const char *want)
{
    const char *path = write_node(ns);
    char *err = NULL;
    gr_model *m = gr_model_load(path, &err);
    assert_non_null(m);
    gr_exec *e = gr_compile(m, NULL, &err);
    assert_null(e);
    assert_non_null(err);
    tu_assert_msg_has(err, "node 'n0'", ns->op, want);
    free(err);
    gr_model_free(m);
}

static void check(const char *what, DLTensor *got, const double *want)
{
    int64_t n = numel(got->ndim, got->shape);
    assert_int_equal(tu_compare_f32(what, got->data, want, n, RTOL, ATOL), 0);
}

static void free_all(DLTensor **t, int n)
{
    for (int i = 0; i < n; i++) rt_tensor_free(t[i]);
}

static uint64_t rng;

static DLTensor *rnd(int nd, const int64_t *shape) { return tu_rand_f32(&rng, nd, shape); }

/* Row-major multi-index helpers. */
static bool next_index(int nd, const int64_t *shape, int64_t *idx)
{
    for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return true;
        idx[d] = 0;
    }
    return false;
}

static int64_t offset(int nd, const int64_t *shape, const int64_t *idx)
{
    int64_t o = 0;
    for (int d = 0; d < nd; d++) o = o * shape[d] + idx[d];
    return o;
}

#define F(t) ((const float *)(t)->data)

/* ---------------- Conv ---------------- */

typedef struct {
    int sp;
    int64_t s[MAXD], d[MAXD], pb[MAXD], k[MAXD];
} geom;

/* Naive convolution: y[n, m, o] = b[m] + sum x[n, g*Cg + c, o*s - pb + r*d] w[m, c, r]. */
static void ref_conv(const DLTensor *x, const DLTensor *w, const DLTensor *b, int64_t group,
                     const geom *g, int nd, const int64_t *ys, double *y)
{
    int64_t oi[MAXD] = {0};
    int64_t Cg = w->shape[1], Mg = ys[1] / group;
    int sp = nd - 2;
    do {
        double acc = b ? F(b)[oi[1]] : 0.0;
        int64_t ki[MAXD] = {0};
        do {
            int64_t xi[MAXD] = {oi[0], (oi[1] / Mg) * Cg + ki[0]}, wi[MAXD] = {oi[1], ki[0]};
            bool inside = true;
            for (int i = 0; i < sp; i++) {
                xi[2 + i] = oi[2 + i] * g->s[i] - g->pb[i] + ki[1 + i] * g->d[i];
                inside &= xi[2 + i] >= 0 && xi[2 + i] < x->shape[2 + i];
                wi[2 + i] = ki[1 + i];
            }
            if (inside)
                acc += (double)F(x)[offset(nd, x->shape, xi)] * F(w)[offset(nd, w->shape, wi)];
        } while (next_index(1 + sp, w->shape + 1, ki));
        y[offset(nd, ys, oi)] = acc;
    } while (next_index(nd, ys, oi));
}

static void conv_case(int sp, const int64_t *xs, const int64_t *ws, int64_t group, bool bias,
                      const geom *g, const int64_t *ys, int nattr, const attr_spec *attrs)
{
    int nd = 2 + sp;
    node_spec ns = {.opset = 13, .op = "Conv", .nin = bias ? 3 : 2, .nout = 1, .nattr = nattr};
    ns.in[0] = (io_spec){"X", 0, nd, {0}, NULL};
    ns.in[1] = (io_spec){"W", 0, nd, {0}, NULL};
    ns.in[2] = (io_spec){"B", 0, 1, {ws[0]}, NULL};
    memcpy(ns.in[0].shape, xs, (size_t)nd * 8);
    memcpy(ns.in[1].shape, ws, (size_t)nd * 8);
    ns.out[0] = (io_spec){"Y", 0, nd, {0}, NULL};
    memcpy(ns.out[0].shape, ys, (size_t)nd * 8);
    memcpy(ns.attr, attrs, (size_t)nattr * sizeof *attrs);
    DLTensor *in[3] = {rnd(nd, xs), rnd(nd, ws), bias ? rnd(1, ws) : NULL}, *out[1];
    run_node(&ns, in, bias ? 3 : 2, out);
    double *want = malloc((size_t)numel(nd, ys) * sizeof *want);
    ref_conv(in[0], in[1], in[2], group, g, nd, ys, want);
    check("Conv", out[0], want);
    free(want);
    free_all(in, bias ? 3 : 2);
    free_all(out, 1);
}

/* Grouped, dilated, strided convolutions with asymmetric pads in 1, 2 and
 * 3 dimensions, depthwise with a channel multiplier, SAME_LOWER. */
static void test_conv(void **state)
{
    (void)state;
    /* 2-D, group 2, dilation 2x1, stride 2x1, pads (1,0) begin (2,1) end, bias. */
    {
        static const int64_t dil[] = {2, 1}, str[] = {2, 1}, pads[] = {1, 0, 2, 1}, grp = 2;
        attr_spec a[] = {{"dilations", 'I', .n = 2, .ints = dil}, {"strides", 'I', .n = 2, .ints = str},
                         {"pads", 'I', .n = 4, .ints = pads}, {"group", 'i', .i = grp}};
        geom g = {2, {2, 1}, {2, 1}, {1, 0}, {3, 2}};
        /* H: (7 + 3 - 5) / 2 + 1 = 3; W: (6 + 1 - 2) / 1 + 1 = 6. */
        conv_case(2, (int64_t[]){2, 4, 7, 6}, (int64_t[]){6, 2, 3, 2}, grp, true, &g,
                  (int64_t[]){2, 6, 3, 6}, 4, a);
    }
    /* Depthwise with multiplier 2 (group = C = 3, 6 outputs), no bias, pads 1. */
    {
        static const int64_t pads[] = {1, 1, 1, 1};
        attr_spec a[] = {{"pads", 'I', .n = 4, .ints = pads}, {"group", 'i', .i = 3}};
        geom g = {2, {1, 1}, {1, 1}, {1, 1}, {3, 3}};
        conv_case(2, (int64_t[]){1, 3, 5, 4}, (int64_t[]){6, 1, 3, 3}, 3, false, &g,
                  (int64_t[]){1, 6, 5, 4}, 2, a);
    }
    /* 1-D SAME_LOWER, stride 2: out = ceil(9 / 2) = 5, total pad
     * (5-1)*2 + 4 - 9 = 3, begin 2 (the odd one at the start). */
    {
        static const int64_t str[] = {2};
        attr_spec a[] = {{"auto_pad", 's', .s = "SAME_LOWER"}, {"strides", 'I', .n = 1, .ints = str}};
        geom g = {1, {2}, {1}, {2}, {4}};
        conv_case(1, (int64_t[]){2, 3, 9}, (int64_t[]){4, 3, 4}, 1, true, &g, (int64_t[]){2, 4, 5},
                  2, a);
    }
    /* 3-D, group 2, dilation, asymmetric pads, stride. */
    {
        static const int64_t dil[] = {1, 2, 1}, str[] = {1, 1, 2}, pads[] = {0, 1, 1, 1, 0, 0};
        attr_spec a[] = {{"dilations", 'I', .n = 3, .ints = dil}, {"strides", 'I', .n = 3, .ints = str},
                         {"pads", 'I', .n = 6, .ints = pads}, {"group", 'i', .i = 2}};
        geom g = {3, {1, 1, 2}, {1, 2, 1}, {0, 1, 1}, {2, 2, 2}};
        /* D: 4+1-2+1 = 4; H: 5+1-3+1 = 4; W: (5+1-2)/2+1 = 3. */
        conv_case(3, (int64_t[]){1, 4, 4, 5, 5}, (int64_t[]){2, 2, 2, 2, 2}, 2, true, &g,
                  (int64_t[]){1, 2, 4, 4, 3}, 4, a);
    }
}

/* ---------------- Gemm, MatMul ---------------- */

static void gemm_case(bool ta, bool tb, float alpha, float beta, int crank, const int64_t *cs,
                      bool c_nan)
{
    int64_t M = 3, K = 5, N = 4;
    int64_t as[2] = {ta ? K : M, ta ? M : K}, bs[2] = {tb ? N : K, tb ? K : N};
    node_spec ns = {.opset = 13, .op = "Gemm", .nin = crank >= 0 ? 3 : 2, .nout = 1, .nattr = 4};
    ns.in[0] = (io_spec){"A", 0, 2, {as[0], as[1]}, NULL};
    ns.in[1] = (io_spec){"B", 0, 2, {bs[0], bs[1]}, NULL};
    ns.in[2] = (io_spec){"C", 0, crank, {0}, NULL};
    if (crank > 0) memcpy(ns.in[2].shape, cs, (size_t)crank * 8);
    ns.out[0] = (io_spec){"Y", 0, 2, {M, N}, NULL};
    ns.attr[0] = (attr_spec){"transA", 'i', .i = ta};
    ns.attr[1] = (attr_spec){"transB", 'i', .i = tb};
    ns.attr[2] = (attr_spec){"alpha", 'f', .f = alpha};
    ns.attr[3] = (attr_spec){"beta", 'f', .f = beta};
    int64_t one = 1;
    DLTensor *in[3] = {rnd(2, as), rnd(2, bs), NULL}, *out[1];
    if (crank >= 0) in[2] = rnd(crank ? crank : 1, crank ? cs : &one);
    /* beta 0: ORT ignores C, NaN and all. */
    if (c_nan) tu_poison_f32(in[2]);
    run_node(&ns, in, crank >= 0 ? 3 : 2, out);
    double want[12];
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += (double)F(in[0])[ta ? k * M + i : i * K + k] * F(in[1])[tb ? j * K + k : k * N + j];
            acc *= alpha;
            if (crank >= 0 && beta != 0) {
                int64_t ci = 0;
                if (crank == 1) ci = cs[0] == 1 ? 0 : j;
                if (crank == 2) ci = (cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j);
                acc += beta * F(in[2])[ci];
            }
            want[i * N + j] = acc;
        }
    check("Gemm", out[0], want);
    free_all(in, crank >= 0 ? 3 : 2);
    free_all(out, 1);
}

static void test_gemm(void **state)
{
    (void)state;
    gemm_case(true, true, 0.5f, 2.0f, 1, (int64_t[]){4}, false);
    gemm_case(false, true, 1.0f, 1.0f, 2, (int64_t[]){3, 1}, false);
    gemm_case(true, false, 1.0f, -1.5f, 0, NULL, false);
    gemm_case(false, false, 1.0f, 0.0f, 2, (int64_t[]){3, 4}, true);
    gemm_case(false, false, 2.0f, 1.0f, -1, NULL, false);
}

static void matmul_case(int ra, const int64_t *as, int rb, const int64_t *bs, int ry, const int64_t *ys)
{
    node_spec ns = {.opset = 13, .op = "MatMul", .nin = 2, .nout = 1};
    ns.in[0] = (io_spec){"A", 0, ra, {0}, NULL};
    ns.in[1] = (io_spec){"B", 0, rb, {0}, NULL};
    memcpy(ns.in[0].shape, as, (size_t)ra * 8);
    memcpy(ns.in[1].shape, bs, (size_t)rb * 8);
    ns.out[0] = (io_spec){"Y", 0, ry, {0}, NULL};
    if (ry) memcpy(ns.out[0].shape, ys, (size_t)ry * 8);
    DLTensor *in[2] = {rnd(ra, as), rnd(rb, bs)}, *out[1];
    run_node(&ns, in, 2, out);
    /* Vectors as matrices: A [1, K], B [K, 1]; batch dimensions broadcast. */
    int64_t K = as[ra - 1];
    int64_t M = ra > 1 ? as[ra - 2] : 1, N = rb > 1 ? bs[rb - 1] : 1;
    int nb = ry - (ra > 1) - (rb > 1);
    int64_t bshape[MAXD], bi[MAXD] = {0};
    for (int d = 0; d < nb; d++) bshape[d] = ys[d];
    double *want = malloc((size_t)numel(ry ? ry : 1, ry ? ys : (int64_t[]){1}) * sizeof *want);
    int64_t o = 0;
    do {
        int64_t aoff = 0, boff = 0;
        for (int d = 0; d < ra - 2; d++) {
            int od = nb - (ra - 2) + d;
            aoff = aoff * as[d] + (as[d] == 1 ? 0 : bi[od]);
        }
        for (int d = 0; d < rb - 2; d++) {
            int od = nb - (rb - 2) + d;
            boff = boff * bs[d] + (bs[d] == 1 ? 0 : bi[od]);
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (double)F(in[0])[aoff * M * K + i * K + k] * F(in[1])[boff * K * N + k * N + j];
                want[o++] = acc;
            }
    } while (nb > 0 && next_index(nb, bshape, bi));
    check("MatMul", out[0], want);
    free(want);
    free_all(in, 2);
    free_all(out, 1);
}

/* Vector operands (rank 0, 1 and batched results) and broadcast batches. */
static void test_matmul(void **state)
{
    (void)state;
    matmul_case(1, (int64_t[]){4}, 3, (int64_t[]){2, 4, 3}, 2, (int64_t[]){2, 3});
    matmul_case(3, (int64_t[]){2, 3, 4}, 1, (int64_t[]){4}, 2, (int64_t[]){2, 3});
    matmul_case(1, (int64_t[]){5}, 1, (int64_t[]){5}, 0, NULL);
    matmul_case(4, (int64_t[]){2, 1, 3, 4}, 3, (int64_t[]){5, 4, 2}, 4, (int64_t[]){2, 5, 3, 2});
    matmul_case(2, (int64_t[]){3, 4}, 3, (int64_t[]){2, 4, 2}, 3, (int64_t[]){2, 3, 2});
}

/* ---------------- BatchNormalization ---------------- */

static void bn_case(bool training, int nout)
{
    int64_t xs[3] = {2, 3, 5}, C = 3;
    float eps = 1e-3f, mom = 0.8f;
    node_spec ns = {.opset = 15, .op = "BatchNormalization", .nin = 5, .nout = nout, .nattr = 3};
    static const char *names[] = {"X", "scale", "B", "mean", "var"};
    ns.in[0] = (io_spec){"X", 0, 3, {2, 3, 5}, NULL};
    for (int k = 1; k < 5; k++) ns.in[k] = (io_spec){names[k], 0, 1, {C}, NULL};
    ns.out[0] = (io_spec){"Y", 0, 3, {2, 3, 5}, NULL};
    ns.out[1] = (io_spec){"rmean", 0, 1, {C}, NULL};
    ns.out[2] = (io_spec){"rvar", 0, 1, {C}, NULL};
    ns.attr[0] = (attr_spec){"epsilon", 'f', .f = eps};
    ns.attr[1] = (attr_spec){"momentum", 'f', .f = mom};
    ns.attr[2] = (attr_spec){"training_mode", 'i', .i = training};
    DLTensor *in[5] = {rnd(3, xs)}, *out[3];
    for (int k = 1; k < 5; k++) in[k] = rnd(1, &C);
    float *var = in[4]->data;
    for (int c = 0; c < C; c++) var[c] = 0.1f + fabsf(var[c]);
    run_node(&ns, in, 5, out);
    double want[30], rm[3], rv[3];
    for (int c = 0; c < C; c++) {
        double mean = F(in[3])[c], v = F(in[4])[c];
        if (training) {
            double s = 0, q = 0;
            for (int n = 0; n < 2; n++)
                for (int l = 0; l < 5; l++) s += F(in[0])[(n * 3 + c) * 5 + l];
            s /= 10;
            for (int n = 0; n < 2; n++)
                for (int l = 0; l < 5; l++) q += pow(F(in[0])[(n * 3 + c) * 5 + l] - s, 2);
            q /= 10;
            rm[c] = mean * mom + s * (1 - mom);
            rv[c] = v * mom + q * (1 - mom);
            mean = s;
            v = q;
        }
        for (int n = 0; n < 2; n++)
            for (int l = 0; l < 5; l++) {
                int i = (n * 3 + c) * 5 + l;
                want[i] = F(in[1])[c] * (F(in[0])[i] - mean) / sqrt(v + eps) + F(in[2])[c];
            }
    }
    check("BatchNormalization Y", out[0], want);
    if (nout > 1) check("BatchNormalization running_mean", out[1], rm);
    if (nout > 2) check("BatchNormalization running_var", out[2], rv);
    free_all(in, 5);
    free_all(out, nout);
}

/* Inference on a 3-D input; training mode with and without the running
 * statistics (the running inputs still reach the kernel). */
static void test_batchnorm(void **state)
{
    (void)state;
    bn_case(false, 1);
    bn_case(true, 3);
    bn_case(true, 1);
}

/* ---------------- pools ---------------- */

typedef enum { P_MAX, P_AVG, P_AVG_PAD } pool_kind;

/* Naive pool over the windows o*s - pb + r*d; AVG counts the taps inside
 * the input, AVG_PAD those inside input and pads (not past the end pad,
 * as ORT counts). idx: MaxPool's first maximum, flat (row- or
 * column-major spatial). */
static void ref_pool(pool_kind kind, const DLTensor *x, const geom *g, const int64_t *pe, int nd,
                     const int64_t *ys, double *y, double *idx, bool colmajor)
{
    int64_t oi[MAXD] = {0};
    int sp = nd - 2;
    do {
        double acc = kind == P_MAX ? -INFINITY : 0, first = -1;
        int64_t count = 0, ki[MAXD] = {0};
        do {
            int64_t xi[MAXD] = {oi[0], oi[1]};
            bool inside = true, padded = true;
            for (int i = 0; i < sp; i++) {
                xi[2 + i] = oi[2 + i] * g->s[i] - g->pb[i] + ki[i] * g->d[i];
                inside &= xi[2 + i] >= 0 && xi[2 + i] < x->shape[2 + i];
                padded &= xi[2 + i] < x->shape[2 + i] + pe[i];
            }
            if (kind == P_AVG_PAD && padded) count++;
            if (!inside) continue;
            double v = F(x)[offset(nd, x->shape, xi)];
            if (kind == P_AVG) count++;
            if (kind != P_MAX) {
                acc += v;
            } else if (v > acc) {
                acc = v;
                int64_t f = xi[0] * x->shape[1] + xi[1];
                int64_t q = 0;
                if (!colmajor) {
                    for (int i = 0; i < sp; i++) q = q * x->shape[2 + i] + xi[2 + i];
                } else {
                    for (int i = sp - 1; i >= 0; i--) q = q * x->shape[2 + i] + xi[2 + i];
                }
                first = (double)(f * numel(sp, x->shape + 2) + q);
            }
        } while (next_index(sp, g->k, ki));
        int64_t o = offset(nd, ys, oi);
        y[o] = kind == P_MAX ? acc : acc / (double)count;
        if (idx) idx[o] = first;
    } while (next_index(nd, ys, oi));
}

static void pool_case(pool_kind kind, int nd, const int64_t *xs, const geom *g, const int64_t *pe,
                      const int64_t *ys, int nattr, const attr_spec *attrs, int order)
{
    node_spec ns = {.opset = 13, .op = kind == P_MAX ? "MaxPool" : "AveragePool", .nin = 1,
                    .nout = kind == P_MAX && order >= 0 ? 2 : 1, .nattr = nattr};
    ns.in[0] = (io_spec){"X", 0, nd, {0}, NULL};
    memcpy(ns.in[0].shape, xs, (size_t)nd * 8);
    ns.out[0] = (io_spec){"Y", 0, nd, {0}, NULL};
    memcpy(ns.out[0].shape, ys, (size_t)nd * 8);
    ns.out[1] = ns.out[0];
    ns.out[1].name = "I";
    ns.out[1].elem = GR_INT64;
    memcpy(ns.attr, attrs, (size_t)nattr * sizeof *attrs);
    DLTensor *in[1] = {rnd(nd, xs)}, *out[2];
    run_node(&ns, in, 1, out);
    int64_t n = numel(nd, ys);
    double *want = malloc((size_t)n * sizeof *want), *idx = malloc((size_t)n * sizeof *idx);
    ref_pool(kind, in[0], g, pe, nd, ys, want, idx, order == 1);
    check(ns.op, out[0], want);
    if (ns.nout == 2) {
        const int64_t *got = out[1]->data;
        for (int64_t i = 0; i < n; i++) {
            if (got[i] != (int64_t)idx[i])
                printf("MaxPool Indices[%ld]: %ld, want %ld\n", (long)i, (long)got[i],
                       (long)idx[i]);
            assert_int_equal(got[i], (int64_t)idx[i]);
        }
    }
    free(want);
    free(idx);
    free_all(in, 1);
    free_all(out, ns.nout);
}

/* ceil_mode with pads and dilations, Indices in both storage orders,
 * count_include_pad with asymmetric pads, SAME_LOWER, 1-D and 3-D. */
static void test_pools(void **state)
{
    (void)state;
    static const int64_t k33[] = {3, 3}, s22[] = {2, 2}, d21[] = {2, 1};
    static const int64_t p1021[] = {1, 0, 0, 1}, p1111[] = {1, 1, 1, 1};
    /* MaxPool 2-D, ceil, dilation 2x1, stride 2, pads (1,0)/(0,1):
     * H: ceil((7 + 1 - 5) / 2) + 1 = 3; W: ceil((6 + 1 - 3) / 2) + 1 = 3. */
    {
        attr_spec a[] = {{"kernel_shape", 'I', .n = 2, .ints = k33}, {"strides", 'I', .n = 2, .ints = s22},
                         {"dilations", 'I', .n = 2, .ints = d21}, {"pads", 'I', .n = 4, .ints = p1021},
                         {"ceil_mode", 'i', .i = 1}, {"storage_order", 'i', .i = 0}};
        geom g = {2, {2, 2}, {2, 1}, {1, 0}, {3, 3}};
        for (int order = 0; order < 2; order++) {
            a[5].i = order;
            pool_case(P_MAX, 4, (int64_t[]){2, 3, 7, 6}, &g, (int64_t[]){0, 1},
                      (int64_t[]){2, 3, 3, 3}, 6, a, order);
        }
        pool_case(P_MAX, 4, (int64_t[]){2, 3, 7, 6}, &g, (int64_t[]){0, 1}, (int64_t[]){2, 3, 3, 3},
                  5, a, -1);
    }
    /* AveragePool 2-D, ceil, pads 1, count_include_pad 0 and 1:
     * H, W: ceil((6 + 2 - 3) / 2) + 1 = 4 (the last window starts at 6 <
     * 6 + 1 and reaches past the end pad). */
    {
        attr_spec a[] = {{"kernel_shape", 'I', .n = 2, .ints = k33}, {"strides", 'I', .n = 2, .ints = s22},
                         {"pads", 'I', .n = 4, .ints = p1111}, {"ceil_mode", 'i', .i = 1},
                         {"count_include_pad", 'i', .i = 0}};
        geom g = {2, {2, 2}, {1, 1}, {1, 1}, {3, 3}};
        pool_case(P_AVG, 4, (int64_t[]){1, 2, 6, 6}, &g, (int64_t[]){1, 1}, (int64_t[]){1, 2, 4, 4},
                  5, a, -1);
        a[4].i = 1;
        pool_case(P_AVG_PAD, 4, (int64_t[]){1, 2, 6, 6}, &g, (int64_t[]){1, 1},
                  (int64_t[]){1, 2, 4, 4}, 5, a, -1);
    }
    /* AveragePool 1-D SAME_LOWER with count_include_pad: out 4, total
     * pad (4-1)*2 + 3 - 7 = 2, one each side. */
    {
        static const int64_t k3[] = {3}, s2[] = {2};
        attr_spec a[] = {{"kernel_shape", 'I', .n = 1, .ints = k3}, {"strides", 'I', .n = 1, .ints = s2},
                         {"auto_pad", 's', .s = "SAME_LOWER"}, {"count_include_pad", 'i', .i = 1}};
        geom g = {1, {2}, {1}, {1}, {3}};
        pool_case(P_AVG_PAD, 3, (int64_t[]){2, 2, 7}, &g, (int64_t[]){1}, (int64_t[]){2, 2, 4}, 4, a, -1);
        a[3].i = 0;
        pool_case(P_AVG, 3, (int64_t[]){2, 2, 7}, &g, (int64_t[]){1}, (int64_t[]){2, 2, 4}, 4, a, -1);
    }
    /* 3-D MaxPool with Indices, pads, and AveragePool excluding pads. */
    {
        static const int64_t k3d[] = {2, 2, 2}, p3d[] = {1, 0, 1, 0, 1, 0};
        attr_spec a[] = {{"kernel_shape", 'I', .n = 3, .ints = k3d}, {"pads", 'I', .n = 6, .ints = p3d}};
        geom g = {3, {1, 1, 1}, {1, 1, 1}, {1, 0, 1}, {2, 2, 2}};
        pool_case(P_MAX, 5, (int64_t[]){1, 2, 3, 4, 3}, &g, (int64_t[]){0, 1, 0},
                  (int64_t[]){1, 2, 3, 4, 3}, 2, a, 0);
        pool_case(P_AVG, 5, (int64_t[]){1, 2, 3, 4, 3}, &g, (int64_t[]){0, 1, 0},
                  (int64_t[]){1, 2, 3, 4, 3}, 2, a, -1);
    }
}

static void test_global_avgpool(void **state)
{
    (void)state;
    for (int nd = 2; nd <= 5; nd += 3) {
        int64_t xs[5] = {2, 3, 4, 2, 3}, ys[5] = {2, 3, 1, 1, 1};
        node_spec ns = {.opset = 13, .op = "GlobalAveragePool", .nin = 1, .nout = 1};
        ns.in[0] = (io_spec){"X", 0, nd, {0}, NULL};
        memcpy(ns.in[0].shape, xs, (size_t)nd * 8);
        ns.out[0] = (io_spec){"Y", 0, nd, {0}, NULL};
        memcpy(ns.out[0].shape, ys, (size_t)nd * 8);
        DLTensor *in[1] = {rnd(nd, xs)}, *out[1];
        run_node(&ns, in, 1, out);
        int64_t plane = numel(nd - 2, xs + 2);
        double want[6];
        for (int i = 0; i < 6; i++) {
            double s = 0;
            for (int64_t p = 0; p < plane; p++) s += F(in[0])[i * plane + p];
            want[i] = s / (double)plane;
        }
        check("GlobalAveragePool", out[0], want);
        free_all(in, 1);
        free_all(out, 1);
    }
}

/* ---------------- Softmax ---------------- */

static void softmax_case(int64_t opset, int64_t axis, bool has_axis, double scale)
{
    int64_t xs[4] = {2, 3, 2, 4};
    node_spec ns = {.opset = opset, .op = "Softmax", .nin = 1, .nout = 1, .nattr = has_axis};
    ns.in[0] = (io_spec){"X", 0, 4, {2, 3, 2, 4}, NULL};
    ns.out[0] = (io_spec){"Y", 0, 4, {2, 3, 2, 4}, NULL};
    ns.attr[0] = (attr_spec){"axis", 'i', .i = axis};
    DLTensor *in[1] = {rnd(4, xs)}, *out[1];
    float *x = in[0]->data;
    for (int i = 0; i < 48; i++) x[i] = (float)(x[i] * scale);
    run_node(&ns, in, 1, out);
    if (!has_axis) axis = opset >= 13 ? -1 : 1;
    if (axis < 0) axis += 4;
    /* Rows: before opset 13 everything from `axis` on is one row;
     * from 13 on, the elements along `axis` (stride `inner`). */
    int64_t inner = 1, len;
    for (int d = (int)axis + 1; d < 4; d++) inner *= xs[d];
    len = opset >= 13 ? xs[axis] : xs[axis] * inner;
    if (opset < 13) inner = 1;
    double want[48];
    for (int64_t start = 0; start < 48; start++) {
        /* start is a row's first element when its position along the row is 0. */
        if ((start / inner) % len != 0) continue;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < len; j++) mx = fmax(mx, x[start + j * inner]);
        for (int64_t j = 0; j < len; j++) sum += exp(x[start + j * inner] - mx);
        for (int64_t j = 0; j < len; j++) want[start + j * inner] = exp(x[start + j * inner] - mx) / sum;
    }
    check("Softmax", out[0], want);
    free_all(in, 1);
    free_all(out, 1);
}

/* Opset 11's flattening (default axis 1, axis 2) against opset 13's
 * single axis (default -1, axis 1); inputs of +-1000 stay finite. */
static void test_softmax(void **state)
{
    (void)state;
    softmax_case(11, 0, false, 1);
    softmax_case(11, 2, true, 1);
    softmax_case(13, 0, false, 1);
    softmax_case(13, 1, true, 1);
    softmax_case(13, -3, true, 1000);
    softmax_case(11, 1, true, 1000);
}

/* ---------------- LayerNormalization ---------------- */

static void layernorm_case(int64_t axis, bool bias, bool stats)
{
    int64_t xs[3] = {2, 3, 4};
    int a = (int)(axis < 0 ? axis + 3 : axis);
    int64_t ss[3], ps[3], rows = 1, len = 1;
    for (int d = 0; d < 3; d++) {
        ss[d] = d < a ? xs[d] : 1;
        if (d < a) rows *= xs[d];
        else len *= xs[d];
    }
    int np = 3 - a;
    for (int d = 0; d < np; d++) ps[d] = xs[a + d];
    node_spec ns = {.opset = 17, .op = "LayerNormalization", .nin = bias ? 3 : 2,
                    .nout = stats ? 3 : 1, .nattr = 2};
    ns.in[0] = (io_spec){"X", 0, 3, {2, 3, 4}, NULL};
    ns.in[1] = (io_spec){"S", 0, np, {0}, NULL};
    memcpy(ns.in[1].shape, ps, (size_t)np * 8);
    ns.in[2] = ns.in[1];
    ns.in[2].name = "B";
    ns.out[0] = (io_spec){"Y", 0, 3, {2, 3, 4}, NULL};
    ns.out[1] = (io_spec){"Mean", 0, 3, {ss[0], ss[1], ss[2]}, NULL};
    ns.out[2] = ns.out[1];
    ns.out[2].name = "InvStd";
    ns.attr[0] = (attr_spec){"axis", 'i', .i = axis};
    ns.attr[1] = (attr_spec){"epsilon", 'f', .f = 1e-2f};
    DLTensor *in[3] = {rnd(3, xs), rnd(np, ps), bias ? rnd(np, ps) : NULL}, *out[3];
    run_node(&ns, in, bias ? 3 : 2, out);
    double want[24], mean[24], inv[24];
    for (int64_t r = 0; r < rows; r++) {
        const float *x = F(in[0]) + r * len;
        double m = 0, v = 0;
        for (int64_t j = 0; j < len; j++) m += x[j];
        m /= (double)len;
        for (int64_t j = 0; j < len; j++) v += (x[j] - m) * (x[j] - m);
        v /= (double)len;
        mean[r] = m;
        inv[r] = 1 / sqrt(v + 1e-2f);
        for (int64_t j = 0; j < len; j++)
            want[r * len + j] = (x[j] - m) * inv[r] * F(in[1])[j] + (bias ? F(in[2])[j] : 0);
    }
    check("LayerNormalization Y", out[0], want);
    if (stats) {
        check("LayerNormalization Mean", out[1], mean);
        check("LayerNormalization InvStdDev", out[2], inv);
    }
    free_all(in, bias ? 3 : 2);
    free_all(out, stats ? 3 : 1);
}

static void test_layernorm(void **state)
{
    (void)state;
    layernorm_case(1, false, true);
    layernorm_case(-1, true, true);
    layernorm_case(0, true, false);
}

/* ---------------- ReduceSum, ReduceMean ---------------- */

/* axes: NULL for none; axes_input: as an initializer input (else the attribute). */
static void reduce_case(const char *op, int64_t opset, int na, const int64_t *axes, bool axes_input,
                        int keepdims, int noop)
{
    int64_t xs[4] = {2, 3, 4, 2};
    bool red[4] = {false};
    for (int d = 0; d < 4; d++) red[d] = na == 0 && !noop;
    for (int i = 0; i < na; i++) red[axes[i] < 0 ? axes[i] + 4 : axes[i]] = true;
    int64_t ys[4], ks[4];
    int ny = 0;
    for (int d = 0; d < 4; d++) {
        ks[d] = red[d] ? 1 : xs[d];
        if (!red[d] || keepdims) ys[ny++] = ks[d];
    }
    node_spec ns = {.opset = opset, .op = op, .nin = axes_input ? 2 : 1, .nout = 1};
    ns.in[0] = (io_spec){"X", 0, 4, {2, 3, 4, 2}, NULL};
    static const int64_t none[1] = {0};
    ns.in[1] = (io_spec){"axes", GR_INT64, 1, {na}, axes ? axes : none};
    ns.out[0] = (io_spec){"Y", 0, ny, {0}, NULL};
    if (ny) memcpy(ns.out[0].shape, ys, (size_t)ny * 8);
    if (!axes_input && na) ns.attr[ns.nattr++] = (attr_spec){"axes", 'I', .n = na, .ints = axes};
    if (keepdims >= 0) ns.attr[ns.nattr++] = (attr_spec){"keepdims", 'i', .i = keepdims};
    if (noop) ns.attr[ns.nattr++] = (attr_spec){"noop_with_empty_axes", 'i', .i = 1};
    DLTensor *in[1] = {rnd(4, xs)}, *out[1];
    run_node(&ns, in, 1, out);
    double want[48] = {0}, count = 0;
    int64_t xi[4] = {0}, ki[4];
    do {
        for (int d = 0; d < 4; d++) ki[d] = red[d] ? 0 : xi[d];
        want[offset(4, ks, ki)] += F(in[0])[offset(4, xs, xi)];
    } while (next_index(4, xs, xi));
    count = (double)(48 / numel(4, ks));
    if (strcmp(op, "ReduceMean") == 0)
        for (int i = 0; i < numel(4, ks); i++) want[i] /= count;
    check(op, out[0], want);
    free_all(in, 1);
    free_all(out, 1);
}

/* The axes attribute before opset 13 (ReduceSum) / 18 (ReduceMean) and
 * the axes input after; keepdims 0; negative axes; every axis reduced
 * (a rank-0 result); noop_with_empty_axes. */
static void test_reduce(void **state)
{
    (void)state;
    static const int64_t a13[] = {1, -1}, a0[] = {0}, a2[] = {2, 0};
    reduce_case("ReduceSum", 11, 2, a13, false, 0, 0);
    reduce_case("ReduceSum", 13, 2, a13, true, 1, 0);
    reduce_case("ReduceSum", 13, 1, a0, true, 0, 0);
    reduce_case("ReduceSum", 13, 0, NULL, false, 0, 0);
    reduce_case("ReduceSum", 13, 0, NULL, false, 1, 1);
    reduce_case("ReduceSum", 13, 0, NULL, true, -1, 1);
    reduce_case("ReduceMean", 13, 2, a2, false, 0, 0);
    reduce_case("ReduceMean", 18, 2, a13, true, -1, 0);
    reduce_case("ReduceMean", 18, 0, NULL, false, 0, 0);
    reduce_case("ReduceMean", 18, 0, NULL, false, 1, 1);
}

/* ---------------- refusals ---------------- */

static void test_refusals(void **state)
{
    (void)state;
    static const int64_t k2[] = {2, 2};
    node_spec mp = {.opset = 13, .op = "MaxPool", .nin = 1, .nout = 2, .nattr = 2};
    mp.in[0] = (io_spec){"X", 0, 4, {1, 1, 4, 4}, NULL};
    mp.out[0] = (io_spec){"Y", 0, 4, {0}, NULL};
    mp.out[1] = (io_spec){"I", GR_INT64, 4, {0}, NULL};
    mp.attr[0] = (attr_spec){"kernel_shape", 'I', .n = 2, .ints = k2};
    mp.attr[1] = (attr_spec){"storage_order", 'i', .i = 2};
    expect_refusal(&mp, "attribute 'storage_order' is 2 (0 or 1)");

    /* Training statistics before opset 14 (no training_mode attribute). */
    node_spec bn = {.opset = 11, .op = "BatchNormalization", .nin = 5, .nout = 3};
    static const char *names[] = {"X", "s", "b", "m", "v"};
    bn.in[0] = (io_spec){"X", 0, 2, {2, 3}, NULL};
    for (int k = 1; k < 5; k++) bn.in[k] = (io_spec){names[k], 0, 1, {3}, NULL};
    bn.out[0] = (io_spec){"Y", 0, 2, {0}, NULL};
    bn.out[1] = (io_spec){"rm", 0, 1, {0}, NULL};
    bn.out[2] = (io_spec){"rv", 0, 1, {0}, NULL};
    expect_refusal(&bn, "output 1 (a training statistic) is requested but attribute "
                        "'training_mode' is not 1");

    node_spec ln = {.opset = 17, .op = "LayerNormalization", .nin = 2, .nout = 1, .nattr = 1};
    ln.in[0] = (io_spec){"X", 0, 2, {2, 3}, NULL};
    ln.in[1] = (io_spec){"S", 0, 1, {3}, NULL};
    ln.out[0] = (io_spec){"Y", 0, 2, {0}, NULL};
    ln.attr[0] = (attr_spec){"stash_type", 'i', .i = GR_INT32};
    expect_refusal(&ln, "attribute 'stash_type' is 6 (int32)");

    node_spec sm = {.opset = 13, .op = "Softmax", .nin = 1, .nout = 1};
    sm.in[0] = (io_spec){"X", GR_INT32, 2, {2, 3}, NULL};
    sm.out[0] = (io_spec){"Y", GR_INT32, 2, {0}, NULL};
    expect_refusal(&sm, "input has element type int32 (Softmax needs floats)");
}

/* ---------------- main ---------------- */

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/loom_graph_nn_XXXXXX");
    if (!mkdtemp(tmpdir)) return -1;
    rng = tu_seed();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rmtree(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv),           cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_matmul),         cmocka_unit_test(test_batchnorm),
        cmocka_unit_test(test_pools),          cmocka_unit_test(test_global_avgpool),
        cmocka_unit_test(test_softmax),        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_reduce),         cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
