/* graph/lower.h — ONNX nodes as te computations (issue 32, part 3).
 *
 * Each supported operator has one lowering rule: given te tensors for the
 * node's inputs it declares the te computation of its outputs (TVM's topi
 * compute functions, one per ONNX operator). The node's output shapes and
 * element types are already known (gr_infer_shapes), so a rule builds
 * computes of exactly those shapes and the checks of attribute values live
 * in inference; a rule refuses only what Loom cannot compute (an element
 * type te has no form for, a mode not implemented), naming the node.
 *
 * Shapes: a value of ONNX rank r >= 1 is a te tensor of the same rank and
 * extents; a rank-0 value (a scalar) is a te tensor of shape [1] (te has
 * no rank 0), and the executor passes it as such. Values with a zero
 * extent or a rank above TE_MAX_DIMS have no te form.
 *
 * Inputs the operator reads at compile time (Reshape's shape, Slice's
 * starts/ends/axes/steps, Squeeze/Unsqueeze/ReduceSum axes, Split's split,
 * ConstantOfShape's shape: gr_lower_rule.static_inputs) are never tensors:
 * their contents are in cin[k] (and in[k] is NULL). Every other input is
 * a te tensor (a placeholder or an earlier stage of the same group).
 */
#ifndef LOOM_GR_LOWER_H
#define LOOM_GR_LOWER_H

#include "graph/gr_internal.h"
#include "loom/te.h"

typedef struct {
    te_ctx *ctx;
    const gr_model *m;
    const gr_graph *g;
    const gr_node *n;
    int node_index;
    int64_t opset;         /* of the node's domain */
    int n_inputs;          /* == n->n_inputs */
    te_tensor **in;        /* per input: NULL when left out or static */
    const gr_tensor **cin; /* per input: known contents or NULL */
    const gr_type **tin;   /* per input: its type (NULL when left out) */
    int n_outputs;         /* == n->n_outputs */
    const gr_type **tout;  /* per output: the inferred type (NULL when left out) */
    te_tensor **out;       /* per output: set by the rule (left out: leave NULL) */
    double flops;          /* the rule adds the FLOP count of its work */
    char **err;
} gr_lctx;

typedef bool (*gr_lower_fn)(gr_lctx *c);

typedef struct {
    const char *domain;     /* "" for the default domain */
    const char *op_type;
    gr_lower_fn fn;
    unsigned static_inputs; /* bit k: input k is read at compile time
                               (from opset `static_from` on; 0: always) */
    int64_t static_from;
} gr_lower_rule;

/* The rules, one table per family file, each ended by an entry with a
 * NULL op_type: lower_nn.c (convolution, pooling, matrix products,
 * normalization, reductions, softmax), lower_elemwise.c (unary, binary,
 * Clip, Where, Cast), lower_tensor.c (shape and layout operators). */
extern const gr_lower_rule gr_lower_rules_nn[];
extern const gr_lower_rule gr_lower_rules_elemwise[];
extern const gr_lower_rule gr_lower_rules_tensor[];
/* lower_math.c (unary functions, activations, PRelu), lower_compare.c
 * (comparisons, logic), lower_reduce.c (Reduce*, ArgMax, ArgMin). */
extern const gr_lower_rule gr_lower_rules_math[];
extern const gr_lower_rule gr_lower_rules_compare[];
extern const gr_lower_rule gr_lower_rules_reduce[];
/* lower_movement.c (Expand, Tile, Pad, DepthToSpace, SpaceToDepth, Trilu,
 * Range, CumSum). */
extern const gr_lower_rule gr_lower_rules_movement[];
/* lower_loss.c (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss). */
extern const gr_lower_rule gr_lower_rules_loss[];
/* lower_fill.c (EyeLike, the window functions, OneHot). */
extern const gr_lower_rule gr_lower_rules_fill[];
/* lower_convt.c (ConvTranspose). */
extern const gr_lower_rule gr_lower_rules_convt[];
/* lower_quant.c (QuantizeLinear, DequantizeLinear). */
extern const gr_lower_rule gr_lower_rules_quant[];
/* lower_lrn.c (LRN). */
extern const gr_lower_rule gr_lower_rules_lrn[];
extern const gr_lower_rule gr_lower_rules_det[];
/* lower_resize.c (Resize). */
extern const gr_lower_rule gr_lower_rules_resize[];
/* lower_select.c (GatherND, ReverseSequence). */
extern const gr_lower_rule gr_lower_rules_select[];
/* lower_mvn.c (MeanVarianceNormalization). */
extern const gr_lower_rule gr_lower_rules_mvn[];
/* lower_topk.c (TopK). */
extern const gr_lower_rule gr_lower_rules_topk[];
/* lower_scatter.c (Scatter, ScatterElements, ScatterND). */
extern const gr_lower_rule gr_lower_rules_scatter[];
/* lower_einsum.c (Einsum). */
extern const gr_lower_rule gr_lower_rules_einsum[];
/* lower_gridsample.c (GridSample). */
extern const gr_lower_rule gr_lower_rules_gridsample[];
/* lower_compress.c (Compress with a constant condition). */
extern const gr_lower_rule gr_lower_rules_compress[];
/* lower_qmatmul.c (MatMulInteger, QLinearMatMul). */
extern const gr_lower_rule gr_lower_rules_qmatmul[];
/* lower_optimizer.c (ai.onnx.preview.training Adagrad, Momentum, Adam). */
extern const gr_lower_rule gr_lower_rules_optimizer[];
/* lower_dft.c (DFT). */
extern const gr_lower_rule gr_lower_rules_dft[];
/* lower_rnn.c (RNN, GRU, LSTM). */
extern const gr_lower_rule gr_lower_rules_rnn[];
/* lower_upsample.c (Upsample, nearest). */
extern const gr_lower_rule gr_lower_rules_upsample[];
/* lower_stft.c (STFT). */
extern const gr_lower_rule gr_lower_rules_stft[];
/* lower_roialign.c (RoiAlign, mode avg). */
extern const gr_lower_rule gr_lower_rules_roialign[];
/* Loom's layout operators, domain "loom" (lower_layout.c). */
extern const gr_lower_rule gr_lower_rules_layout[];

/* The rule for a node's operator, or NULL. */
const gr_lower_rule *gr_lower_rule_for(const char *domain, const char *op_type);
/* Whether input k of node n is static (read at compile time) at opset. */
bool gr_lower_input_static(const gr_node *n, int k, int64_t opset);
/* Whether input k of node n is read by value where the graph knows it:
 * Pow's exponent when it is a constant float scalar (multiplied out for
 * 1, 2, 3; a workload key holds it as a `c` item, so exponents 2 and 3
 * are different kernels). */
bool gr_lower_input_by_value(const gr_graph *g, const gr_node *n, int k);
/* Inputs read for their type and shape alone (gr_input_type_only,
 * gr_internal.h) are never tensors either: in[k] is NULL. */

/* Sets the error, prefixed with the model and node, as gr_ifail does;
 * always false. */
bool gr_lfail(gr_lctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- helpers for rules ---- */

/* The te dtype of an ONNX element type; false for types te cannot hold
 * (string, complex). */
bool gr_te_dtype(int elem_type, te_dtype *out);
/* The te shape of a type: rank and extents (rank 0 -> [1]); false when it
 * has none (a zero extent, rank > TE_MAX_DIMS). */
bool gr_te_shape(const gr_type *t, int *ndim, int64_t *shape);
/* Why gr_te_shape has no shape for t, as a phrase written to buf (size
 * n): "rank 10, above the 8 Loom holds", "dimension 0 is 0 (an empty
 * tensor, which Loom does not compute)", ...; NULL when it has one. */
const char *gr_shape_problem(const gr_type *t, char *buf, size_t n);
/* Input k as a te tensor: an error naming the input when it is left out
 * or static. */
bool gr_lin(gr_lctx *c, int k, const char *what, te_tensor **out);
/* An output's te dtype, rank, shape and axes, as gr_lout_get fills them. */
typedef struct {
    te_dtype dt;
    int nd;
    int64_t shape[TE_MAX_DIMS];
    te_expr *ax[TE_MAX_DIMS];
} gr_loutput;
/* Output k into *o: its te dtype, rank and shape (from the inferred type)
 * in o->dt, o->nd and o->shape, and fresh axes named after the node
 * ("i0".."iN") for a te_compute of that shape in o->ax. An error when
 * output k is missing, its element type or shape has no te form (a zero
 * extent, rank above TE_MAX_DIMS), or te refuses an axis (te's message). */
bool gr_lout_get(gr_lctx *c, int k, gr_loutput *o);
/* The number of elements of a shape of rank nd (the product of
 * shape[0..nd-1]; 1 at rank 0), as a double: for FLOP counts. */
double gr_numel(int nd, const int64_t *shape);
/* gr_numel of o's shape. */
double gr_loutput_numel(const gr_loutput *o);
/* Defines output k as te_compute(name, axes, body); an error (with te's
 * message) when te refuses. */
bool gr_lout(gr_lctx *c, int k, int ndim, te_expr *const *axes, te_expr *body);
/* Reads tensor t at the output axes `axes` (rank nout) with numpy
 * broadcasting: t's dimensions align with the last ones of the output;
 * extent-1 dimensions read index 0. A rank-0 ONNX value (te shape [1])
 * is passed with its ONNX rank `trank` = 0. */
te_expr *gr_read_bcast(te_tensor *t, int trank, int nout, te_expr *const *axes);
/* Fresh axes (data-parallel, or reduce when `reduce`) of the given
 * extents, named prefix0, prefix1, ...; an error when te refuses one. */
bool gr_lfresh_axes(gr_lctx *c, const char *prefix, bool reduce, int nd, const int64_t *shape,
                    te_expr **ax);
/* An intermediate stage of the node: te_compute named after the node and
 * `suffix`; NULL after the error when body is NULL or te refuses. */
te_tensor *gr_lstage(gr_lctx *c, const char *suffix, int nd, te_expr *const *ax, te_expr *body);
/* The ONNX rank of input k (0 for a scalar), -1 when left out. */
int gr_lin_rank(const gr_lctx *c, int k);

/* The start of a rule whose output 0 reads input 0 elementwise (unary
 * functions, Cast, Expand, ...): input 0 into *x (gr_lin, `what` naming
 * it; x may be NULL), output 0's dtype, shape and axes into *o
 * (gr_lout_get), and input 0 read at those axes with numpy broadcasting
 * (gr_read_bcast), returned. NULL after the error: input 0 left out or
 * static (gr_lin's), output 0 without a te form (gr_lout_get's), or te
 * refusing the read (te's message, as gr_lout gives it). */
te_expr *gr_lunary_read(gr_lctx *c, const char *what, te_tensor **x, gr_loutput *o);

/* Lowers node `node_index` of g with c's ctx: fills c (in/cin/tin/tout
 * from `vals`, which maps every value index of g to its te tensor or
 * NULL) and calls the rule. On success, the outputs are stored into
 * vals[]. */
bool gr_lower_node(te_ctx *ctx, const gr_model *m, const gr_graph *g, int node_index,
                   te_tensor **vals, double *flops, char **err);

#endif
