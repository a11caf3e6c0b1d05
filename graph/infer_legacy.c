/* graph/infer_legacy.c — the operators' versions before opset 11: from
 * which opset each operator exists, and the rules of the forms that
 * changed since (ONNX's Changelog.md): legacy broadcasting of Add, Sub,
 * Mul, Div (1, 6) and Pow (1), Gemm's broadcast attribute (1, 6),
 * BatchNormalization's is_test and spatial (1, 6, 7), Cast's type name
 * (1). The other old forms (Reshape-1, Slice-1, Concat-1, Split-1/2,
 * Squeeze/Unsqueeze-1) are read where their rules are, under their
 * opset. Attributes that later versions dropped are read here, never
 * passed over: `consumed_inputs` (versions 1) only told a runtime it may
 * write the output over an input and changes no value, so it is the one
 * accepted without a check. */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <string.h>

typedef struct {
    const char *op;
    int64_t first;
} op_first;

/* The first ONNX version of each supported operator of the default
 * domain. Those introduced after opset 11 (HardSwish 14,
 * LayerNormalization 17, Gelu 20) are kept at 11, where Loom accepted
 * them before. */
static const op_first firsts[] = {
    {"Conv", 1},       {"Gemm", 1},          {"MatMul", 1},
    {"BatchNormalization", 1},               {"Relu", 1},
    {"Clip", 1},       {"Sigmoid", 1},       {"Tanh", 1},
    {"Erf", 9},        {"Add", 1},           {"Sub", 1},
    {"Mul", 1},        {"Div", 1},           {"Pow", 1},
    {"Sqrt", 1},       {"Reciprocal", 1},    {"MaxPool", 1},
    {"AveragePool", 1}, {"GlobalAveragePool", 1}, {"GlobalMaxPool", 1}, {"Flatten", 1},
    {"Reshape", 1},    {"Transpose", 1},     {"Concat", 1},
    {"Split", 1},      {"Slice", 1},         {"Gather", 1},
    {"Squeeze", 1},    {"Unsqueeze", 1},     {"Softmax", 1},
    {"ReduceMean", 1}, {"ReduceSum", 1},     {"Cast", 1},
    {"Where", 9},      {"Shape", 1},         {"Constant", 1},
    {"ConstantOfShape", 9},                  {"Identity", 1},
    /* Equal, Greater, Less, And, Or, Xor before 7 broadcast in ways
     * numpy does not: refused there. PRelu before 7: infer_math.c. */
    {"Abs", 1}, {"Neg", 1}, {"Sign", 9}, {"Exp", 1},
    {"Log", 1}, {"Ceil", 1}, {"Floor", 1}, {"Round", 11},
    {"Sin", 7}, {"Cos", 7}, {"Tan", 7}, {"Asin", 7},
    {"Acos", 7}, {"Atan", 7}, {"Sinh", 9}, {"Cosh", 9},
    {"Asinh", 9}, {"Acosh", 9}, {"Atanh", 9}, {"Softplus", 1},
    {"Softsign", 1}, {"Mish", 18}, {"IsNaN", 9}, {"IsInf", 10},
    {"Not", 1}, {"LeakyRelu", 1}, {"Elu", 1}, {"Selu", 1},
    {"Celu", 12}, {"HardSigmoid", 1}, {"ThresholdedRelu", 10}, {"Shrink", 9},
    {"PRelu", 1}, {"Equal", 7}, {"Greater", 7}, {"Less", 7},
    {"GreaterOrEqual", 12}, {"LessOrEqual", 12}, {"And", 7}, {"Or", 7},
    {"Xor", 7}, {"Mod", 10}, {"Max", 1}, {"Min", 1},
    {"Sum", 1}, {"Mean", 1}, {"ReduceMax", 1}, {"ReduceMin", 1},
    {"ReduceProd", 1}, {"ReduceL1", 1}, {"ReduceL2", 1}, {"ReduceLogSum", 1},
    {"ReduceLogSumExp", 1}, {"ReduceSumSquare", 1}, {"ArgMax", 1}, {"ArgMin", 1},
    {"LogSoftmax", 1}, {"Hardmax", 1}, {"InstanceNormalization", 1}, {"Size", 1},
    {"Expand", 8}, {"Tile", 6}, {"Pad", 1}, {"DepthToSpace", 1}, {"SpaceToDepth", 1},
    {"Trilu", 14}, {"CumSum", 11}, {"Range", 11}, {"Dropout", 1},
    {"GatherElements", 11}, {"NegativeLogLikelihoodLoss", 12}, {"SoftmaxCrossEntropyLoss", 12},
    {"CastLike", 15}, {"EyeLike", 9}, {"HannWindow", 17}, {"HammingWindow", 17},
    {"BlackmanWindow", 17}, {"OneHot", 9}, {"ConvTranspose", 1},
    {"BitShift", 11}, {"QuantizeLinear", 10}, {"DequantizeLinear", 10}, {"LRN", 1}, {"Det", 11}, {"ReverseSequence", 10},
    {"MeanVarianceNormalization", 9}, {"TopK", 1},
    {"Scatter", 9}, {"ScatterElements", 11}, {"ScatterND", 11}, {"Einsum", 12}, {"GridSample", 16}, {"Compress", 9},
    {"MatMulInteger", 10}, {"QLinearMatMul", 10}, {"DFT", 17}, {"RNN", 7}, {"GRU", 7}, {"LSTM", 7}, {"ConvInteger", 10}, {"QLinearConv", 10}, {"Upsample", 7}, {"STFT", 17}, {"RoiAlign", 10},
};

int64_t gr_op_first_opset(const char *op)
{
    for (size_t i = 0; op && i < sizeof firsts / sizeof *firsts; i++)
        if (strcmp(firsts[i].op, op) == 0) return firsts[i].first;
    return 11;
}

/* ---------------- legacy broadcasting (Add/Sub/Mul/Div 1 and 6, Pow 1) ---------------- */

int64_t gr_legacy_bcast_axis(const gr_node *n, int ra, int rb)
{
    const gr_attr *aa = gr_node_attr(n, "axis");
    return aa && aa->kind == GR_ATTR_INT ? aa->i : ra - rb;
}

/* Before opset 7, B broadcasts to A only with broadcast=1, its dimensions
 * matching A's from `axis` on (default: A's last ones); the output is A's
 * shape. ONNX's tests (pytorch exports) also expand B's extent-1
 * dimensions there, which numpy would too: accepted. */
bool gr_infer_legacy_binary(gr_ictx *c)
{
    const gr_type *a, *b;
    if (!gr_iin_req(c, 0, "A", &a) || !gr_iin_req(c, 1, "B", &b)) return false;
    if (a->elem_type != b->elem_type)
        return gr_ifail(c, "inputs A (%s) and B (%s) must have one element type",
                        gr_elem_type_name(a->elem_type), gr_elem_type_name(b->elem_type));
    const gr_attr *ba = gr_node_attr(c->n, "broadcast");
    if (ba && (ba->kind != GR_ATTR_INT || (ba->i != 0 && ba->i != 1)))
        return gr_ifail(c, "attribute 'broadcast' must be 0 or 1");
    bool bcast = ba && ba->i == 1;
    if (!bcast) {
        if (gr_node_attr(c->n, "axis"))
            return gr_ifail(c, "attribute 'axis' is given but attribute 'broadcast' is not 1");
        bool same = a->ndim == b->ndim;
        for (int i = 0; same && i < a->ndim; i++) same = a->shape[i] == b->shape[i];
        if (!same)
            return gr_ifail(c, "inputs A and B differ in shape and attribute 'broadcast' is not 1 "
                               "(at opset %" PRId64 " only broadcast=1 broadcasts B)", c->opset);
        return gr_iout(c, 0, a->elem_type, a->ndim, a->shape);
    }
    const gr_attr *xa = gr_node_attr(c->n, "axis");
    if (xa && xa->kind != GR_ATTR_INT) return gr_ifail(c, "attribute 'axis' must be an int");
    if (b->ndim > a->ndim)
        return gr_ifail(c, "input B has rank %d, above A's %d (B broadcasts to A)", b->ndim, a->ndim);
    int64_t axis = gr_legacy_bcast_axis(c->n, a->ndim, b->ndim);
    if (axis < 0 || axis + b->ndim > a->ndim)
        return gr_ifail(c, "attribute 'axis' is %" PRId64 ": B's %d dimensions do not fit in A's "
                           "%d from there", axis, b->ndim, a->ndim);
    for (int i = 0; i < b->ndim; i++) {
        int64_t x = a->shape[axis + i], y = b->shape[i];
        if (y != x && y != 1)
            return gr_ifail(c, "input B dimension %d is %" PRId64 ", A's dimension %" PRId64
                               " is %" PRId64 " (B's dimensions match A's from axis %" PRId64 ")",
                            i, y, axis + i, x, axis);
    }
    return gr_iout(c, 0, a->elem_type, a->ndim, a->shape);
}

/* ---------------- Gemm 1 and 6 ---------------- */

bool gr_infer_legacy_gemm(gr_ictx *c, int64_t m, int64_t n)
{
    const gr_type *cc;
    if (!gr_iin_req(c, 2, "C", &cc)) return false;
    const gr_attr *ba = gr_node_attr(c->n, "broadcast");
    if (ba && (ba->kind != GR_ATTR_INT || (ba->i != 0 && ba->i != 1)))
        return gr_ifail(c, "attribute 'broadcast' must be 0 or 1");
    if (ba && ba->i == 1) return true; /* C broadcasts as from opset 7 on */
    if (cc->ndim != 2 || cc->shape[0] != m || cc->shape[1] != n)
        return gr_ifail(c, "input C is not [%" PRId64 ",%" PRId64 "] and attribute 'broadcast' "
                           "is not 1 (at opset %" PRId64 " only broadcast=1 broadcasts C)",
                        m, n, c->opset);
    return true;
}

/* ---------------- BatchNormalization 1, 6, 7 ---------------- */

bool gr_infer_legacy_batchnorm(gr_ictx *c)
{
    /* spatial=0 normalizes every element (C x D1 x ... statistics). */
    if (c->opset < 9 && gr_iattr_int(c, "spatial", 1) != 1)
        return gr_ifail(c, "attribute 'spatial' is %" PRId64 " (per-element statistics): not "
                           "supported, only spatial=1 (per channel) is",
                        gr_iattr_int(c, "spatial", 1));
    /* is_test=0, the default, computes the batch's statistics. */
    if (c->opset < 7 && gr_iattr_int(c, "is_test", 0) == 0)
        return gr_ifail(c, "attribute 'is_test' is 0 (training mode: the batch's statistics): "
                           "not supported at opset %" PRId64 ", only is_test=1 (inference) is",
                        c->opset);
    return true;
}

/* ---------------- Cast 1 ---------------- */

bool gr_legacy_cast_to(const gr_attr *to, int *elem_type)
{
    static const struct {
        const char *name;
        int type;
    } names[] = {
        {"FLOAT", GR_FLOAT},   {"UINT8", GR_UINT8},   {"INT8", GR_INT8},
        {"UINT16", GR_UINT16}, {"INT16", GR_INT16},   {"INT32", GR_INT32},
        {"INT64", GR_INT64},   {"BOOL", GR_BOOL},     {"FLOAT16", GR_FLOAT16},
        {"DOUBLE", GR_DOUBLE}, {"UINT32", GR_UINT32}, {"UINT64", GR_UINT64},
    };
    if (!to || to->kind != GR_ATTR_STRING || !to->s.data) return false;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(names[i].name, to->s.data) == 0) {
            *elem_type = names[i].type;
            return true;
        }
    return false;
}

/* ---------------- attributes later versions dropped ---------------- */

typedef struct {
    const char *op, *attr;
    int64_t last; /* the last opset whose version defines it */
} dropped_attr;

static const dropped_attr dropped[] = {
    {"Add", "broadcast", 6},  {"Add", "axis", 6},  {"Add", "consumed_inputs", 5},
    {"Sub", "broadcast", 6},  {"Sub", "axis", 6},  {"Sub", "consumed_inputs", 5},
    {"Mul", "broadcast", 6},  {"Mul", "axis", 6},  {"Mul", "consumed_inputs", 5},
    {"Div", "broadcast", 6},  {"Div", "axis", 6},  {"Div", "consumed_inputs", 5},
    {"Pow", "broadcast", 6},  {"Pow", "axis", 6},  {"Gemm", "broadcast", 6},
    {"BatchNormalization", "spatial", 8},          {"BatchNormalization", "is_test", 6},
    {"BatchNormalization", "consumed_inputs", 5},  {"Reshape", "shape", 4},
    {"Reshape", "consumed_inputs", 4},             {"Slice", "starts", 9},
    {"Slice", "ends", 9},     {"Slice", "axes", 9},
    {"Relu", "consumed_inputs", 5},                {"Sigmoid", "consumed_inputs", 5},
    {"Tanh", "consumed_inputs", 5},                {"Sqrt", "consumed_inputs", 5},
    {"Reciprocal", "consumed_inputs", 5},          {"Clip", "consumed_inputs", 5},
    {"Abs", "consumed_inputs", 5}, {"Neg", "consumed_inputs", 5}, {"Exp", "consumed_inputs", 5},
    {"Log", "consumed_inputs", 5}, {"Ceil", "consumed_inputs", 5}, {"Floor", "consumed_inputs", 5},
    {"LeakyRelu", "consumed_inputs", 5}, {"Elu", "consumed_inputs", 5}, {"Selu", "consumed_inputs", 5},
    {"HardSigmoid", "consumed_inputs", 5}, {"Max", "consumed_inputs", 5}, {"InstanceNormalization", "consumed_inputs", 5}, {"Min", "consumed_inputs", 5},
    {"Sum", "consumed_inputs", 5}, {"Mean", "consumed_inputs", 5},
    {"PRelu", "consumed_inputs", 5}, {"Dropout", "consumed_inputs", 5}, {"Dropout", "is_test", 6}, {"Dropout", "ratio", 11},
};

bool gr_infer_dropped_attrs(gr_ictx *c)
{
    for (size_t i = 0; i < sizeof dropped / sizeof *dropped; i++)
        if (c->opset > dropped[i].last && strcmp(dropped[i].op, c->n->op_type) == 0 &&
            gr_node_attr(c->n, dropped[i].attr))
            return gr_ifail(c, "attribute '%s' is not defined at opset %" PRId64 " (%s has it up "
                               "to opset %" PRId64 "): refused rather than ignored",
                            dropped[i].attr, c->opset, dropped[i].op, dropped[i].last);
    return true;
}
