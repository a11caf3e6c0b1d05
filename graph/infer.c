/* graph/infer.c — shape inference: fixes the graph inputs' dynamic
 * dimensions, refuses unsupported operators all at once, then gives every
 * node output its static shape and element type in node order. The
 * operator table and the elementwise rules live here; the others are in
 * infer_nn.c (convolution, pooling, matrix products, normalization,
 * reductions) and infer_tensor.c (shape and layout operators, constants). */
#include "graph/infer_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- helpers shared by the rules ---------------- */

bool gr_ifail(gr_ictx *c, const char *fmt, ...)
{
    char msg[1024], label[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gr_set_err(c->err, "%s: %s: %s", c->m->path, gr_node_label(c->g, c->node_index, label, sizeof label), msg);
    return false;
}

const gr_type *gr_iin(const gr_ictx *c, int k)
{
    if (k >= c->n->n_inputs || c->n->inputs[k] < 0) return NULL;
    return &c->g->values[c->n->inputs[k]].type;
}

bool gr_iin_req(gr_ictx *c, int k, const char *what, const gr_type **out)
{
    *out = gr_iin(c, k);
    if (!*out) return gr_ifail(c, "input %d (%s) is missing", k, what);
    return true;
}

const gr_tensor *gr_iin_const(const gr_ictx *c, int k)
{
    if (k >= c->n->n_inputs || c->n->inputs[k] < 0) return NULL;
    return c->g->values[c->n->inputs[k]].data;
}

bool gr_tensor_ints(const gr_tensor *t, int64_t *out, int max, int *n)
{
    if (!t || t->numel > max || (t->elem_type != GR_INT64 && t->elem_type != GR_INT32)) return false;
    for (int64_t i = 0; i < t->numel; i++) {
        if (t->elem_type == GR_INT64) {
            memcpy(&out[i], (const char *)t->data + i * 8, 8);
        } else {
            int32_t v;
            memcpy(&v, (const char *)t->data + i * 4, 4);
            out[i] = v;
        }
    }
    *n = (int)t->numel;
    return true;
}

bool gr_iin_ints(gr_ictx *c, int k, const char *what, int64_t *out, int max, int *n)
{
    const gr_tensor *t = gr_iin_const(c, k);
    const char *name = c->g->values[c->n->inputs[k]].name;
    if (!t)
        return gr_ifail(c, "input '%s' ('%s') must be a constant (an initializer, a Constant "
                           "node or the Shape of a static value) to infer shapes",
                        what, name);
    if (!gr_tensor_ints(t, out, max, n))
        return gr_ifail(c, "input '%s' ('%s') must be int32 or int64 with at most %d values", what,
                        name, max);
    return true;
}

int64_t gr_iattr_int(const gr_ictx *c, const char *name, int64_t dflt)
{
    const gr_attr *a = gr_node_attr(c->n, name);
    return a && a->kind == GR_ATTR_INT ? a->i : dflt;
}

bool gr_iattr_ints(gr_ictx *c, const char *name, int64_t *out, int max, int *n, bool *bad)
{
    *bad = false;
    const gr_attr *a = gr_node_attr(c->n, name);
    if (!a) return false;
    if (a->kind != GR_ATTR_INTS || a->n > (size_t)max) {
        *bad = true;
        return gr_ifail(c, "attribute '%s' must be a list of at most %d ints", name, max);
    }
    if (a->n) memcpy(out, a->ints, a->n * sizeof *out);
    *n = (int)a->n;
    return true;
}

const char *gr_iattr_str(const gr_ictx *c, const char *name, const char *dflt)
{
    const gr_attr *a = gr_node_attr(c->n, name);
    return a && a->kind == GR_ATTR_STRING ? a->s.data : dflt;
}

bool gr_iaxis(gr_ictx *c, int64_t axis, int rank, const char *what, int *out)
{
    if (axis < -rank || axis >= rank)
        return gr_ifail(c, "%s %" PRId64 " is out of range for rank %d", what, axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

bool gr_iout(gr_ictx *c, int k, int elem_type, int ndim, const int64_t *shape)
{
    if (k >= c->n->n_outputs || c->n->outputs[k] < 0) return true;
    if (ndim > GR_MAX_DIMS) return gr_ifail(c, "output %d would have %d dimensions (at most %d)", k, ndim, GR_MAX_DIMS);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) return gr_ifail(c, "output %d dimension %d would be %" PRId64, k, i, shape[i]);
    gr_type *t = &c->g->values[c->n->outputs[k]].type;
    int64_t *s = gr_arena_alloc(c->a, ndim ? (size_t)ndim : 1, sizeof(int64_t));
    if (!s) return gr_ifail(c, "out of memory");
    if (ndim) memcpy(s, shape, (size_t)ndim * sizeof *s);
    memset(t, 0, sizeof *t);
    t->kind = GR_TYPE_TENSOR;
    t->elem_type = elem_type;
    gr_elem_type_dl(elem_type, &t->dtype);
    t->ndim = ndim;
    t->shape = s;
    return true;
}

void gr_iout_data(gr_ictx *c, int k, gr_tensor *t)
{
    if (k < c->n->n_outputs && c->n->outputs[k] >= 0) c->g->values[c->n->outputs[k]].data = t;
}

gr_tensor *gr_inew_tensor(gr_ictx *c, int elem_type, int ndim, const int64_t *shape)
{
    gr_tensor *t = gr_arena_alloc(c->a, 1, sizeof *t);
    int64_t *s = gr_arena_alloc(c->a, ndim ? (size_t)ndim : 1, sizeof(int64_t));
    if (!t || !s) {
        gr_ifail(c, "out of memory");
        return NULL;
    }
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) numel *= shape[i];
    if (ndim) memcpy(s, shape, (size_t)ndim * sizeof *s);
    t->name = "";
    t->elem_type = elem_type;
    gr_elem_type_dl(elem_type, &t->dtype);
    t->ndim = ndim;
    t->shape = s;
    t->numel = numel;
    t->nbytes = (size_t)numel * gr_elem_type_size(elem_type);
    t->data = gr_arena_alloc(c->a, t->nbytes ? t->nbytes : 1, 1);
    if (!t->data) {
        gr_ifail(c, "out of memory");
        return NULL;
    }
    t->dl = (DLTensor){.data = t->data, .device = {kDLCPU, 0}, .ndim = ndim, .dtype = t->dtype,
                       .shape = s};
    return t;
}

static void shape_str(char *buf, size_t size, int n, const int64_t *s)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, i ? "," : "", s[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

bool gr_ibroadcast(gr_ictx *c, int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                   int64_t *out)
{
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t x = i < n - na ? 1 : a[i - (n - na)];
        int64_t y = i < n - nb ? 1 : b[i - (n - nb)];
        if (x != y && x != 1 && y != 1) {
            char sa[256], sb[256];
            shape_str(sa, sizeof sa, na, a);
            shape_str(sb, sizeof sb, nb, b);
            return gr_ifail(c, "shapes %s and %s do not broadcast (dimension %d: %" PRId64
                               " vs %" PRId64 ")", sa, sb, i, x, y);
        }
        out[i] = x == 1 ? y : x;
    }
    *nout = n;
    return true;
}

/* ---------------- elementwise rules ---------------- */

/* Output 0 is input 0's type and shape (activations, Identity, Clip, Softmax). */
static bool infer_unary(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "input", &x)) return false;
    if (!gr_iout(c, 0, x->elem_type, x->ndim, x->shape)) return false;
    return true;
}

static bool infer_softmax(gr_ictx *c)
{
    const gr_type *x;
    int axis;
    if (!gr_iin_req(c, 0, "input", &x)) return false;
    if (!gr_iaxis(c, gr_iattr_int(c, "axis", c->opset >= 13 ? -1 : 1), x->ndim > 0 ? x->ndim : 1,
                  "attribute 'axis'", &axis))
        return false;
    return gr_iout(c, 0, x->elem_type, x->ndim, x->shape);
}

static bool infer_gelu(gr_ictx *c)
{
    const char *approx = gr_iattr_str(c, "approximate", "none");
    if (strcmp(approx, "none") != 0 && strcmp(approx, "tanh") != 0)
        return gr_ifail(c, "attribute 'approximate' is '%s', not 'none' or 'tanh'", approx);
    return infer_unary(c);
}

/* Identity also carries known contents (folded shape arithmetic). */
static bool infer_identity(gr_ictx *c)
{
    if (!infer_unary(c)) return false;
    gr_iout_data(c, 0, (gr_tensor *)gr_iin_const(c, 0));
    return true;
}

static bool infer_binary(gr_ictx *c)
{
    const gr_type *a, *b;
    if (c->opset < 7) return gr_infer_legacy_binary(c);
    if (!gr_iin_req(c, 0, "A", &a) || !gr_iin_req(c, 1, "B", &b)) return false;
    /* Pow's exponent may have another type; the others need one type. */
    if (strcmp(c->n->op_type, "Pow") != 0 && a->elem_type != b->elem_type)
        return gr_ifail(c, "inputs A (%s) and B (%s) must have one element type",
                        gr_elem_type_name(a->elem_type), gr_elem_type_name(b->elem_type));
    int n;
    int64_t s[GR_MAX_DIMS];
    if (!gr_ibroadcast(c, a->ndim, a->shape, b->ndim, b->shape, &n, s)) return false;
    return gr_iout(c, 0, a->elem_type, n, s);
}

static bool infer_where(gr_ictx *c)
{
    const gr_type *cond, *x, *y;
    if (!gr_iin_req(c, 0, "condition", &cond) || !gr_iin_req(c, 1, "X", &x) ||
        !gr_iin_req(c, 2, "Y", &y))
        return false;
    if (cond->elem_type != GR_BOOL)
        return gr_ifail(c, "input condition is %s, not bool", gr_elem_type_name(cond->elem_type));
    if (x->elem_type != y->elem_type)
        return gr_ifail(c, "inputs X (%s) and Y (%s) must have one element type",
                        gr_elem_type_name(x->elem_type), gr_elem_type_name(y->elem_type));
    int n1, n2;
    int64_t s1[GR_MAX_DIMS], s2[GR_MAX_DIMS];
    if (!gr_ibroadcast(c, cond->ndim, cond->shape, x->ndim, x->shape, &n1, s1) ||
        !gr_ibroadcast(c, n1, s1, y->ndim, y->shape, &n2, s2))
        return false;
    return gr_iout(c, 0, x->elem_type, n2, s2);
}

/* ---------------- the operator table ---------------- */

typedef struct {
    const char *op;
    gr_infer_fn fn;
} op_rule;

static const op_rule rules[] = {
    {"Conv", gr_infer_conv},
    {"Gemm", gr_infer_gemm},
    {"MatMul", gr_infer_matmul},
    {"BatchNormalization", gr_infer_batchnorm},
    {"Relu", infer_unary},
    {"Clip", infer_unary},
    {"Sigmoid", infer_unary},
    {"Tanh", infer_unary},
    {"Erf", infer_unary},
    {"Gelu", infer_gelu},
    {"HardSwish", infer_unary},
    {"Add", infer_binary},
    {"Sub", infer_binary},
    {"Mul", infer_binary},
    {"Div", infer_binary},
    {"Pow", infer_binary},
    {"Sqrt", infer_unary},
    {"Reciprocal", infer_unary},
    {"MaxPool", gr_infer_pool},
    {"AveragePool", gr_infer_pool},
    {"GlobalAveragePool", gr_infer_global_pool},
    {"GlobalMaxPool", gr_infer_global_pool},
    {"Flatten", gr_infer_flatten},
    {"Reshape", gr_infer_reshape},
    {"Transpose", gr_infer_transpose},
    {"Concat", gr_infer_concat},
    {"Split", gr_infer_split},
    {"Slice", gr_infer_slice},
    {"Gather", gr_infer_gather},
    {"Squeeze", gr_infer_squeeze},
    {"Unsqueeze", gr_infer_unsqueeze},
    {"Softmax", infer_softmax},
    {"LayerNormalization", gr_infer_layernorm},
    {"ReduceMean", gr_infer_reduce},
    {"ReduceSum", gr_infer_reduce},
    {"Cast", gr_infer_cast},
    {"Where", infer_where},
    {"Shape", gr_infer_shape},
    {"Constant", gr_infer_constant},
    {"ConstantOfShape", gr_infer_constant_of_shape},
    {"Identity", infer_identity},
    {"Abs", gr_infer_math_unary},
    {"Neg", gr_infer_math_unary},
    {"Sign", gr_infer_math_unary},
    {"Exp", gr_infer_math_unary},
    {"Log", gr_infer_math_unary},
    {"Ceil", gr_infer_math_unary},
    {"Floor", gr_infer_math_unary},
    {"Round", gr_infer_math_unary},
    {"Sin", gr_infer_math_unary},
    {"Cos", gr_infer_math_unary},
    {"Tan", gr_infer_math_unary},
    {"Asin", gr_infer_math_unary},
    {"Acos", gr_infer_math_unary},
    {"Atan", gr_infer_math_unary},
    {"Sinh", gr_infer_math_unary},
    {"Cosh", gr_infer_math_unary},
    {"Asinh", gr_infer_math_unary},
    {"Acosh", gr_infer_math_unary},
    {"Atanh", gr_infer_math_unary},
    {"Softplus", gr_infer_math_unary},
    {"Softsign", gr_infer_math_unary},
    {"Mish", gr_infer_math_unary},
    {"IsNaN", gr_infer_math_unary},
    {"IsInf", gr_infer_math_unary},
    {"Not", gr_infer_math_unary},
    {"LeakyRelu", gr_infer_math_unary},
    {"Elu", gr_infer_math_unary},
    {"Selu", gr_infer_math_unary},
    {"Celu", gr_infer_math_unary},
    {"HardSigmoid", gr_infer_math_unary},
    {"ThresholdedRelu", gr_infer_math_unary},
    {"Shrink", gr_infer_math_unary},
    {"PRelu", gr_infer_prelu},
    {"Equal", gr_infer_compare},
    {"Greater", gr_infer_compare},
    {"GreaterOrEqual", gr_infer_compare},
    {"Less", gr_infer_compare},
    {"LessOrEqual", gr_infer_compare},
    {"And", gr_infer_logic},
    {"Or", gr_infer_logic},
    {"Xor", gr_infer_logic},
    {"Mod", gr_infer_mod},
    {"Max", gr_infer_variadic},
    {"Min", gr_infer_variadic},
    {"Mean", gr_infer_variadic},
    {"Sum", gr_infer_variadic},
    {"ReduceMax", gr_infer_reduce},
    {"ReduceMin", gr_infer_reduce},
    {"ReduceProd", gr_infer_reduce},
    {"ReduceL1", gr_infer_reduce},
    {"ReduceL2", gr_infer_reduce},
    {"ReduceLogSum", gr_infer_reduce},
    {"ReduceLogSumExp", gr_infer_reduce},
    {"ReduceSumSquare", gr_infer_reduce},
    {"ArgMax", gr_infer_argminmax},
    {"LogSoftmax", infer_softmax},
    {"Size", gr_infer_size},
    {"Expand", gr_infer_expand},
    {"Tile", gr_infer_tile},
    {"Pad", gr_infer_pad},
    {"DepthToSpace", gr_infer_depth_space},
    {"SpaceToDepth", gr_infer_depth_space},
    {"Trilu", gr_infer_trilu},
    {"CumSum", gr_infer_cumsum},
    {"Range", gr_infer_range},
    {"Hardmax", infer_softmax},
    {"InstanceNormalization", gr_infer_instancenorm},
    {"ArgMin", gr_infer_argminmax},
    {"Dropout", gr_infer_dropout},
    {"GatherElements", gr_infer_gather_elements},
    {"NegativeLogLikelihoodLoss", gr_infer_loss},
    {"SoftmaxCrossEntropyLoss", gr_infer_loss},
    {"CastLike", gr_infer_castlike},
    {"EyeLike", gr_infer_eyelike},
    {"HannWindow", gr_infer_window},
    {"HammingWindow", gr_infer_window},
    {"BlackmanWindow", gr_infer_window},
    {"OneHot", gr_infer_onehot},
    {"ConvTranspose", gr_infer_conv_transpose},
    {"BitShift", gr_infer_bitshift},
    {"QuantizeLinear", gr_infer_quant},
    {"DequantizeLinear", gr_infer_quant},
    {"LRN", gr_infer_lrn},
    {"Det", gr_infer_det},
    {"Resize", gr_infer_resize},
    {"GatherND", gr_infer_gather_nd},
    {"ReverseSequence", gr_infer_reverse_sequence},
    {"DynamicQuantizeLinear", gr_infer_dynamic_quant},
    {"MeanVarianceNormalization", gr_infer_mvn},
    {"TopK", gr_infer_topk},
    {"Scatter", gr_infer_scatter_elements},
    {"ScatterElements", gr_infer_scatter_elements},
    {"ScatterND", gr_infer_scatter_nd},
    {"Einsum", gr_infer_einsum},
    {"GridSample", gr_infer_gridsample},
    {"Compress", gr_infer_compress},
    {"MatMulInteger", gr_infer_qmatmul},
    {"QLinearMatMul", gr_infer_qmatmul},
    {"DFT", gr_infer_dft},
    {"RNN", gr_infer_rnn},
    {"GRU", gr_infer_rnn},
    {"LSTM", gr_infer_rnn},
    {"ConvInteger", gr_infer_convinteger},
    {"QLinearConv", gr_infer_convinteger},
    {"Upsample", gr_infer_upsample},
    {"STFT", gr_infer_stft},
    {"RoiAlign", gr_infer_roialign},
};

static bool default_domain(const char *d) { return !d || !*d || strcmp(d, "ai.onnx") == 0; }

static gr_infer_fn find_rule(const char *domain, const char *op, int64_t opset)
{
    if (!op) return NULL;
    /* ONNX's training optimizers: deterministic updates, version 1. */
    if (domain && strcmp(domain, "ai.onnx.preview.training") == 0)
        return opset == 1 && (strcmp(op, "Adagrad") == 0 || strcmp(op, "Momentum") == 0 || strcmp(op, "Adam") == 0)
                   ? gr_infer_optimizer
                   : NULL;
    if (domain && strcmp(domain, "com.microsoft") == 0)
        return strcmp(op, "Gelu") == 0 ? infer_gelu : NULL;
    /* Loom's own operators have no opset: only Loom writes them. */
    if (domain && strcmp(domain, "loom") == 0) return gr_infer_layout_rule(op);
    if (!default_domain(domain) || opset < gr_op_first_opset(op) || opset > 18) return NULL;
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
        if (strcmp(rules[i].op, op) == 0) return rules[i].fn;
    return NULL;
}

bool gr_op_supported(const char *domain, const char *op_type, int64_t opset)
{
    return find_rule(domain, op_type, opset) != NULL;
}

static int64_t domain_opset(const gr_model *m, const char *domain)
{
    if (default_domain(domain)) return m->opset;
    for (int i = 0; i < m->n_opsets; i++)
        if (strcmp(m->opsets[i].domain, domain) == 0) return m->opsets[i].version;
    return 0;
}

/* A growing message. */
typedef struct {
    char *s;
    size_t len, cap;
    bool oom;
} strbuf;

static void sb_add(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(strbuf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n >= 0 && !b->oom && b->len + (size_t)n + 1 > b->cap) {
        size_t cap = (b->len + (size_t)n + 1) * 2;
        char *s = realloc(b->s, cap);
        if (s) {
            b->s = s;
            b->cap = cap;
        } else {
            b->oom = true;
        }
    }
    if (n >= 0 && !b->oom) {
        vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

/* Every node the table lacks, in one message. */
static bool check_supported(const gr_model *m, char **err)
{
    strbuf b = {0};
    int count = 0;
    const gr_graph *g = m->graph;
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        int64_t opset = domain_opset(m, n->domain);
        if (find_rule(n->domain, n->op_type, opset)) continue;
        /* An operator Loom knows at other opsets says which. */
        char range[64] = "";
        if (default_domain(n->domain) && find_rule("", n->op_type, 18))
            snprintf(range, sizeof range, "; supported at opsets %" PRId64 " to 18",
                     gr_op_first_opset(n->op_type));
        sb_add(&b, "%s", count++ ? ", " : "");
        if (!default_domain(n->domain)) sb_add(&b, "%s.", n->domain);
        if (*n->name)
            sb_add(&b, "%s (node '%s', opset %" PRId64 "%s)", n->op_type, n->name, opset, range);
        else
            sb_add(&b, "%s (node #%d, opset %" PRId64 "%s)", n->op_type, i, opset, range);
    }
    if (count) {
        if (b.oom)
            gr_set_err(err, "%s: %d unsupported operators", m->path, count);
        else
            gr_set_err(err, "%s: unsupported operators: %s", m->path, b.s);
    }
    free(b.s);
    return count == 0;
}

/* ---------------- graph inputs ---------------- */

static void dims_str(char *buf, size_t size, int n, const int64_t *s)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, i ? "x" : "", s[i]);
}

/* The fixed shape naming graph input `name`, or NULL. */
static const gr_input_shape *fixed_for(int nfixed, const gr_input_shape *fixed, const char *name)
{
    for (int f = 0; f < nfixed; f++)
        if (fixed[f].name && strcmp(fixed[f].name, name) == 0) return &fixed[f];
    return NULL;
}

/* Checks every given shape and every input first, so that a refusal
 * leaves the inputs as they were. */
static bool check_inputs(const gr_model *m, int nfixed, const gr_input_shape *fixed, char **err)
{
    const gr_graph *g = m->graph;
    for (int f = 0; f < nfixed; f++) {
        const gr_input_shape *fs = &fixed[f];
        const char *name = fs->name ? fs->name : "";
        if (fixed_for(f, fixed, name)) {
            gr_set_err(err, "%s: --shape %s is given twice", m->path, name);
            return false;
        }
        int idx = gr_graph_find_value(g, name);
        bool is_input = false;
        for (int i = 0; idx >= 0 && i < g->n_inputs; i++) is_input |= g->inputs[i] == idx;
        if (!is_input || g->values[idx].kind != GR_VALUE_INPUT) {
            strbuf b = {0};
            for (int i = 0, k = 0; i < g->n_inputs; i++)
                if (g->values[g->inputs[i]].kind == GR_VALUE_INPUT)
                    sb_add(&b, "%s'%s'", k++ ? ", " : "", g->values[g->inputs[i]].name);
            gr_set_err(err, "%s: --shape %s: the graph has no input '%s' (its inputs: %s)", m->path,
                       name, name, b.s && !b.oom ? b.s : "none");
            free(b.s);
            return false;
        }
        const gr_type *t = &g->values[idx].type;
        char given[1024];
        if (fs->ndim < 0 || fs->ndim > GR_MAX_DIMS || (fs->ndim && !fs->shape)) {
            gr_set_err(err, "%s: --shape %s: %d dimensions (0 to %d)", m->path, name, fs->ndim,
                       GR_MAX_DIMS);
            return false;
        }
        dims_str(given, sizeof given, fs->ndim, fs->shape);
        if (t->kind != GR_TYPE_TENSOR) {
            gr_set_err(err, "%s: --shape %s=%s: graph input '%s' is not a tensor of a declared "
                            "element type", m->path, name, given, name);
            return false;
        }
        if (t->ndim >= 0 && t->ndim != fs->ndim) {
            gr_set_err(err, "%s: --shape %s=%s has %d dimensions, graph input '%s' has %d",
                       m->path, name, given, fs->ndim, name, t->ndim);
            return false;
        }
        for (int i = 0; i < fs->ndim; i++) {
            if (fs->shape[i] < 0) {
                gr_set_err(err, "%s: --shape %s=%s: dimension %d is negative", m->path, name,
                           given, i);
                return false;
            }
            if (t->ndim >= 0 && t->shape[i] >= 0 && t->shape[i] != fs->shape[i]) {
                gr_set_err(err, "%s: --shape %s=%s: dimension %d is %" PRId64
                                ", graph input '%s' declares %" PRId64, m->path, name, given, i,
                           fs->shape[i], name, t->shape[i]);
                return false;
            }
        }
    }
    for (int i = 0; i < g->n_inputs; i++) {
        const gr_value *v = &g->values[g->inputs[i]];
        const gr_type *t = &v->type;
        if (v->kind != GR_VALUE_INPUT) continue;
        if (t->kind != GR_TYPE_TENSOR) {
            gr_set_err(err, "%s: graph input '%s' is not a tensor (%s): shapes are inferred for "
                            "tensors only", m->path, v->name,
                       t->kind == GR_TYPE_UNKNOWN ? "no type declared" : "a sequence, map or optional");
            return false;
        }
        if (fixed_for(nfixed, fixed, v->name)) continue;
        if (t->ndim < 0) {
            gr_set_err(err, "%s: graph input '%s' declares no shape: give one with --shape %s=...",
                       m->path, v->name, v->name);
            return false;
        }
        for (int d = 0; d < t->ndim; d++) {
            if (t->shape[d] >= 0) continue;
            const char *param = t->dim_params ? t->dim_params[d] : NULL;
            char pbuf[256] = "";
            if (param) snprintf(pbuf, sizeof pbuf, " ('%s')", param);
            gr_set_err(err, "%s: graph input '%s' dimension %d%s is dynamic: fix it with --shape "
                            "%s=<d0>x<d1>x...", m->path, v->name, d, pbuf, v->name);
            return false;
        }
    }
    return true;
}

static bool fix_inputs(gr_model *m, int nfixed, const gr_input_shape *fixed, char **err)
{
    if (!check_inputs(m, nfixed, fixed, err)) return false;
    for (int f = 0; f < nfixed; f++) {
        gr_type *t = &m->graph->values[gr_graph_find_value(m->graph, fixed[f].name)].type;
        int n = fixed[f].ndim;
        int64_t *s = gr_arena_alloc(m->priv_, n ? (size_t)n : 1, sizeof(int64_t));
        if (!s) {
            gr_set_err(err, "%s: out of memory", m->path);
            return false;
        }
        if (n) memcpy(s, fixed[f].shape, (size_t)n * sizeof *s);
        t->ndim = n;
        t->shape = s;
        t->dim_params = NULL;
    }
    return true;
}

/* An output with a zero extent holds no elements, so its value is known
 * whatever the inputs: it gets its (empty) data, which makes the node one
 * that never runs (as ONNX Runtime, which allocates nothing and launches
 * nothing for an empty tensor). A node that reads an empty tensor into a
 * non-empty output still runs, and gr_compile refuses it. */
static bool known_empty_outputs(gr_ictx *c)
{
    const gr_node *n = c->n;
    for (int k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] < 0) continue;
        gr_value *v = &c->g->values[n->outputs[k]];
        if (!v->data && v->type.elem_type != GR_STRING && gr_type_empty(&v->type) &&
            !(v->data = gr_inew_tensor(c, v->type.elem_type, v->type.ndim, v->type.shape)))
            return false;
    }
    return true;
}

int gr_infer_shapes(gr_model *m, int nfixed, const gr_input_shape *fixed, char **err)
{
    if (!m || !m->graph) {
        gr_set_err(err, "gr_infer_shapes: no model");
        return -1;
    }
    if (nfixed < 0 || (nfixed > 0 && !fixed)) {
        gr_set_err(err, "%s: gr_infer_shapes: %d input shapes given", m->path, nfixed);
        return -1;
    }
    if (!check_supported(m, err) || !fix_inputs(m, nfixed, fixed, err)) return -1;
    gr_graph *g = m->graph;
    for (int i = 0; i < g->n_nodes; i++) {
        gr_node *n = &g->nodes[i];
        gr_ictx c = {.m = m, .g = g, .a = m->priv_, .n = n, .node_index = i,
                     .opset = domain_opset(m, n->domain), .err = err};
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] < 0) continue;
            const gr_value *v = &g->values[n->inputs[k]];
            if (v->type.kind != GR_TYPE_TENSOR || v->type.ndim < 0) {
                gr_ifail(&c, "input '%s' has no known tensor shape", v->name);
                return -1;
            }
        }
        /* Declared types (value_info, graph outputs) give way to inferred ones. */
        for (int k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k] < 0) continue;
            gr_value *v = &g->values[n->outputs[k]];
            v->data = NULL;
            memset(&v->type, 0, sizeof v->type);
            v->type.ndim = -1;
        }
        if ((default_domain(n->domain) && !gr_infer_dropped_attrs(&c)) ||
            !find_rule(n->domain, n->op_type, c.opset)(&c) || !gr_infer_fold_arith(&c))
            return -1;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0 && g->values[n->outputs[k]].type.kind != GR_TYPE_TENSOR) {
                gr_ifail(&c, "output %d ('%s') is not one the operator defines", k,
                         g->values[n->outputs[k]].name);
                return -1;
            }
        if (!known_empty_outputs(&c)) return -1;
    }
    return 0;
}

/* ---------------- --shape ---------------- */

bool gr_input_shape_parse(const char *spec, gr_input_shape *out, char **err)
{
    memset(out, 0, sizeof *out);
    const char *eq = spec ? strrchr(spec, '=') : NULL;
    if (!eq || eq == spec) {
        gr_set_err(err, "--shape '%s': expected name=d0xd1x... (e.g. input=1x3x224x224)",
                   spec ? spec : "");
        return false;
    }
    int64_t dims[GR_MAX_DIMS];
    int n = 0;
    for (const char *p = eq + 1; *p;) {
        if (n == GR_MAX_DIMS) {
            gr_set_err(err, "--shape '%s': more than %d dimensions", spec, GR_MAX_DIMS);
            return false;
        }
        char *end;
        errno = 0;
        long long v = *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) : -1;
        if (v < 0 || errno || (*end && *end != 'x')) {
            gr_set_err(err, "--shape '%s': dimension %d is not a number >= 0", spec, n);
            return false;
        }
        dims[n++] = v;
        p = *end == 'x' ? end + 1 : end;
        if (*end == 'x' && !*p) {
            gr_set_err(err, "--shape '%s': dimension %d is not a number >= 0", spec, n);
            return false;
        }
    }
    char *name = malloc((size_t)(eq - spec) + 1);
    int64_t *shape = malloc(n ? (size_t)n * sizeof *shape : 1);
    if (!name || !shape) {
        free(name);
        free(shape);
        gr_set_err(err, "--shape '%s': out of memory", spec);
        return false;
    }
    memcpy(name, spec, (size_t)(eq - spec));
    name[eq - spec] = 0;
    if (n) memcpy(shape, dims, (size_t)n * sizeof *shape);
    out->name = name;
    out->ndim = n;
    out->shape = shape;
    return true;
}
