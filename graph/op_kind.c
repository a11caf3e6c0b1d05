/* graph/op_kind.c — each operator's pattern kind, the input of fusion
 * (graph/fuse.h). The lists follow TVM's registered patterns of the
 * matching Relay operators, except where fuse.h says otherwise. */
#include <string.h>

#include "graph/fuse.h"
#include "graph/gr_internal.h"

static bool in_list(const char *op, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(op, list[i]) == 0) return true;
    return false;
}

static const char *const elemwise_ops[] = {"Relu", "Clip", "Sigmoid", "Tanh", "Erf", "Gelu",
                                           "HardSwish", "Sqrt", "Reciprocal", "Cast", "CastLike", "Identity",
                                           /* inference: a copy (and a mask of ones) */
                                           "Dropout",
                                           /* a fill, like TVM's `full` */
                                           "ConstantOfShape",
                                           /* graph/lower_math.c */
                                           "Abs", "Neg", "Sign", "Exp", "Log", "Ceil", "Floor",
                                           "Round", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
                                           "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus",
                                           "Softsign", "Mish", "IsNaN", "IsInf", "Not",
                                           "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid",
                                           "ThresholdedRelu", "Shrink",
                                           /* fills from scalars and shapes */
                                           "Range", "EyeLike", "HannWindow", "HammingWindow",
                                           "BlackmanWindow", NULL};
/* Elementwise when no input broadcasts. */
static const char *const binary_ops[] = {"Add", "Sub", "Mul", "Div", "Pow", "Where", "Mod", "BitShift",
                                         "PRelu", "Equal", "Greater", "GreaterOrEqual", "Less",
                                         "LessOrEqual", "And", "Or", "Xor", "Max", "Min",
                                         "Mean", "Sum",
                                         /* scale and zero point per tensor or per axis */
                                         "QuantizeLinear", "DequantizeLinear", NULL};
static const char *const injective_ops[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                            "Transpose", "Concat", "Split", "Slice", "Gather", "GatherElements",
                                            "Expand", "Tile", "Pad", "DepthToSpace",
                                            "SpaceToDepth", "Trilu",
                                            /* a new axis, each element a compare */
                                            "OneHot",
                                            /* reads at run-time indices */
                                            "GatherND", "ReverseSequence", NULL};
static const char *const reduce_ops[] = {
    "ReduceMean", "ReduceSum",  "ReduceMax",       "ReduceMin",       "ReduceProd",
    "ReduceL1",   "ReduceL2",   "ReduceLogSum",    "ReduceLogSumExp", "ReduceSumSquare",
    "ArgMax",     "ArgMin",     "Softmax",         "LayerNormalization", "LogSoftmax",
    "Hardmax",    "InstanceNormalization", "CumSum",
    /* a gather and a sum (SoftmaxCrossEntropyLoss: after a softmax) */
    "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss",
    /* a sum over a window of channels */
    "LRN",
    /* two means over the axes, then elementwise */
    "MeanVarianceNormalization",
    /* linear and cubic sum their taps in a reduction (lower_resize.c) */
    "Resize", NULL};
static const char *const out_fusable_ops[] = {"Conv", "Gemm", "MatMul", "MaxPool", "AveragePool",
                                              "GlobalAveragePool", "GlobalMaxPool", NULL};

static bool same_shape(const gr_type *a, const gr_type *b)
{
    if (a->ndim < 0 || a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] < 0 || a->shape[d] != b->shape[d]) return false;
    return true;
}

/* Whether every input of n has the shape of its first output: a binary op
 * that broadcasts nothing is elementwise (an unknown shape counts as
 * broadcasting, the safe side: broadcast fuses less than elementwise). */
static bool broadcasts(const gr_graph *g, const gr_node *n)
{
    if (n->n_outputs < 1 || n->outputs[0] < 0) return true;
    const gr_type *out = &g->values[n->outputs[0]].type;
    for (int k = 0; k < n->n_inputs; k++) {
        if (n->inputs[k] < 0) continue;
        if (!same_shape(&g->values[n->inputs[k]].type, out)) return true;
    }
    return false;
}

gr_op_kind gr_node_kind(const gr_graph *g, int node)
{
    if (!g || node < 0 || node >= g->n_nodes) return GR_KIND_OPAQUE;
    const gr_node *n = &g->nodes[node];
    const char *op = n->op_type;
    if (!op) return GR_KIND_OPAQUE;
    const char *dom = n->domain ? n->domain : "";
    if (strcmp(dom, "com.microsoft") == 0)
        return strcmp(op, "Gelu") == 0 ? GR_KIND_ELEMWISE : GR_KIND_OPAQUE;
    /* The layout operators (graph/infer_layout.c): a blocked convolution
     * or pool takes elementwise consumers as the plain one does; the transforms
     * move elements, as Transpose. */
    if (strcmp(dom, "loom") == 0) {
        if (strcmp(op, "ConvNCHWc") == 0 || strcmp(op, "MaxPoolNCHWc") == 0 ||
            strcmp(op, "AveragePoolNCHWc") == 0 || strcmp(op, "GlobalAveragePoolNCHWc") == 0 ||
            strcmp(op, "GlobalMaxPoolNCHWc") == 0)
            return GR_KIND_OUT_FUSABLE;
        if (strcmp(op, "ToNCHWc") == 0 || strcmp(op, "FromNCHWc") == 0) return GR_KIND_INJECTIVE;
        return GR_KIND_OPAQUE;
    }
    if (*dom && strcmp(dom, "ai.onnx") != 0) return GR_KIND_OPAQUE;
    if (in_list(op, elemwise_ops)) return GR_KIND_ELEMWISE;
    if (in_list(op, binary_ops)) return broadcasts(g, n) ? GR_KIND_BROADCAST : GR_KIND_ELEMWISE;
    if (in_list(op, injective_ops)) return GR_KIND_INJECTIVE;
    if (in_list(op, reduce_ops)) return GR_KIND_REDUCE;
    if (in_list(op, out_fusable_ops)) return GR_KIND_OUT_FUSABLE;
    if (strcmp(op, "BatchNormalization") == 0) {
        const gr_attr *t = gr_node_attr(n, "training_mode");
        bool training = t && t->kind == GR_ATTR_INT && t->i != 0;
        return training ? GR_KIND_REDUCE : GR_KIND_BROADCAST;
    }
    return GR_KIND_OPAQUE;
}

bool gr_input_type_only(const gr_node *n, int k)
{
    static const struct {
        const char *op;
        unsigned inputs;
    } type_only[] = {{"EyeLike", 1u << 0}, {"CastLike", 1u << 1},
                     /* read by inference alone (and only when training) */
                     {"Dropout", (1u << 1) | (1u << 2)}};
    const char *dom = n->domain ? n->domain : "";
    if ((*dom && strcmp(dom, "ai.onnx") != 0) || !n->op_type || k < 0 || k >= 32) return false;
    for (size_t i = 0; i < sizeof type_only / sizeof *type_only; i++)
        if (strcmp(n->op_type, type_only[i].op) == 0) return (type_only[i].inputs >> k) & 1u;
    return false;
}

const char *gr_op_kind_name(gr_op_kind k)
{
    switch (k) {
    case GR_KIND_ELEMWISE: return "elemwise";
    case GR_KIND_BROADCAST: return "broadcast";
    case GR_KIND_INJECTIVE: return "injective";
    case GR_KIND_REDUCE: return "reduce";
    case GR_KIND_OUT_FUSABLE: return "out-fusable";
    case GR_KIND_OPAQUE: return "opaque";
    }
    return "?";
}
