/* graph/infer_internal.h — shared by shape inference's files: the context
 * one node's rule sees, and the helpers that read its inputs and
 * attributes and write its outputs. Every rule is `bool f(gr_ictx *)`:
 * false after setting the error through gr_ifail. */
#ifndef LOOM_GR_INFER_INTERNAL_H
#define LOOM_GR_INFER_INTERNAL_H

#include "graph/gr_internal.h"

/* ONNX allows any rank; Loom's tensors stop at 64, as the loader does. */
#define GR_MAX_DIMS 64
/* Folded constants (shape arithmetic) are kept only up to this size. */
#define GR_FOLD_MAX 4096

typedef struct {
    gr_model *m;
    gr_graph *g;
    gr_arena *a;
    const gr_node *n;
    int node_index;
    int64_t opset; /* of the node's domain */
    char **err;
} gr_ictx;

typedef bool (*gr_infer_fn)(gr_ictx *c);

/* Sets the error, prefixed with the model and node ("m.onnx: node 'c1'
 * (Conv): ..."); always false. */
bool gr_ifail(gr_ictx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Input k's type, or NULL when the node leaves it out. */
const gr_type *gr_iin(const gr_ictx *c, int k);
/* Input k's type; an error naming the input when it is left out. */
bool gr_iin_req(gr_ictx *c, int k, const char *what, const gr_type **out);
/* Input k's contents when they are known (initializer, Constant, folded),
 * else NULL. */
const gr_tensor *gr_iin_const(const gr_ictx *c, int k);
/* Input k's contents as integers (int32 or int64, at most max of them);
 * an error naming the input when they are not known constants. */
bool gr_iin_ints(gr_ictx *c, int k, const char *what, int64_t *out, int max, int *n);
/* A tensor's integer contents; false when it is not int32/int64 or has
 * more than max elements. */
bool gr_tensor_ints(const gr_tensor *t, int64_t *out, int max, int *n);

int64_t gr_iattr_int(const gr_ictx *c, const char *name, int64_t dflt);
/* The INTS attribute `name` into out: false when absent, an error when it
 * has more than max entries or is not a list of ints (*bad set then). */
bool gr_iattr_ints(gr_ictx *c, const char *name, int64_t *out, int max, int *n, bool *bad);
/* The STRING attribute `name`, or dflt. */
const char *gr_iattr_str(const gr_ictx *c, const char *name, const char *dflt);

/* axis in [-rank, rank) to [0, rank); an error naming `what` otherwise. */
bool gr_iaxis(gr_ictx *c, int64_t axis, int rank, const char *what, int *out);

/* Sets output k (skipped when left out) to a tensor of this type and shape. */
bool gr_iout(gr_ictx *c, int k, int elem_type, int ndim, const int64_t *shape);
/* Sets output k's contents too (the tensor is the model's to keep). */
void gr_iout_data(gr_ictx *c, int k, gr_tensor *t);
/* A new tensor in the model's memory; NULL (and the error) when out of memory. */
gr_tensor *gr_inew_tensor(gr_ictx *c, int elem_type, int ndim, const int64_t *shape);

/* Numpy broadcasting of a and b into out (rank max of both). */
bool gr_ibroadcast(gr_ictx *c, int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                   int64_t *out);

/* The rules, by family. */
bool gr_infer_conv(gr_ictx *c);
bool gr_infer_pool(gr_ictx *c);
bool gr_infer_global_pool(gr_ictx *c);
/* The blocked pools (loom:MaxPoolNCHWc, AveragePoolNCHWc, and the
 * Global ones; graph/infer_layout.c describes them). */
bool gr_infer_pool_nchwc(gr_ictx *c);
bool gr_infer_global_pool_nchwc(gr_ictx *c);
bool gr_infer_gemm(gr_ictx *c);
bool gr_infer_matmul(gr_ictx *c);
bool gr_infer_batchnorm(gr_ictx *c);
bool gr_infer_layernorm(gr_ictx *c);
bool gr_infer_reduce(gr_ictx *c);
bool gr_infer_argminmax(gr_ictx *c);
bool gr_infer_instancenorm(gr_ictx *c);
/* infer_movement.c */
bool gr_infer_size(gr_ictx *c);
bool gr_infer_expand(gr_ictx *c);
bool gr_infer_tile(gr_ictx *c);
bool gr_infer_pad(gr_ictx *c);
bool gr_infer_depth_space(gr_ictx *c);
bool gr_infer_trilu(gr_ictx *c);
bool gr_infer_cumsum(gr_ictx *c);
bool gr_infer_range(gr_ictx *c);
/* Pad's amounts before (begin) and after (end) each of `rank` dimensions:
 * from the attribute 'paddings' (opset 1) or 'pads' (2-10), or the
 * inputs pads and axes (11 on; axes from 18, NULL when absent). False
 * and *why when they are missing or malformed. */
bool gr_pad_amounts(const gr_node *n, int64_t opset, const gr_tensor *pads_in,
                    const gr_tensor *axes_in, int rank, int64_t *begin, int64_t *end,
                    const char **why);
/* Range's length: max(ceil((limit - start) / delta), 0), in integers for
 * the integer types. */
int64_t gr_range_length(int elem_type, double start, double limit, double delta, int64_t istart,
                        int64_t ilimit, int64_t idelta);
/* infer_math.c: unary functions and activations, PRelu, comparisons,
 * logic, Mod, the variadic Max/Min/Mean/Sum. */
bool gr_infer_math_unary(gr_ictx *c);
bool gr_infer_prelu(gr_ictx *c);
/* Whether PRelu's slope is read per channel (X's dimension 1): a rank-1
 * slope of C > 1 values before opset 7 (numpy broadcasting otherwise). */
bool gr_prelu_per_channel(int64_t opset, int xrank, const int64_t *xshape, int srank,
                          const int64_t *sshape);
bool gr_infer_compare(gr_ictx *c);
bool gr_infer_logic(gr_ictx *c);
bool gr_infer_mod(gr_ictx *c);
bool gr_infer_bitshift(gr_ictx *c);
bool gr_infer_variadic(gr_ictx *c);
/* infer_dropout.c: Dropout as inference runs it (training refused). */
bool gr_infer_dropout(gr_ictx *c);
/* infer_loss.c: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss. */
bool gr_infer_loss(gr_ictx *c);
/* infer_convt.c: ConvTranspose, and its geometry for the lowering:
 * strides s, dilations d, pads pb/pe and output extents out of the sp
 * spatial dimensions of input extents in and kernel k; false and why
 * (an attribute broken) otherwise. */
bool gr_infer_conv_transpose(gr_ictx *c);
/* infer_quant.c: QuantizeLinear, DequantizeLinear. */
bool gr_infer_quant(gr_ictx *c);
bool gr_infer_dynamic_quant(gr_ictx *c);
/* infer_lrn.c: LRN. */
bool gr_infer_lrn(gr_ictx *c);
/* infer_det.c; lower_det.c expands determinants of up to this order */
#define GR_DET_MAX_M 5
bool gr_infer_det(gr_ictx *c);
/* infer_resize.c: Resize, and the geometry its lowering maps output
 * coordinates with (roi, scales, sizes: the known inputs or NULL). */
typedef enum { GR_RESIZE_NEAREST, GR_RESIZE_LINEAR, GR_RESIZE_CUBIC } gr_resize_mode;
typedef enum {
    GR_RESIZE_HALF_PIXEL,
    GR_RESIZE_PYTORCH_HALF_PIXEL,
    GR_RESIZE_ALIGN_CORNERS,
    GR_RESIZE_ASYMMETRIC,
    GR_RESIZE_TF_HALF_PIXEL_FOR_NN,
    GR_RESIZE_TF_CROP_AND_RESIZE
} gr_resize_coord;
typedef enum {
    GR_RESIZE_ROUND_PREFER_FLOOR,
    GR_RESIZE_ROUND_PREFER_CEIL,
    GR_RESIZE_FLOOR,
    GR_RESIZE_CEIL
} gr_resize_nearest;
typedef struct {
    gr_resize_mode mode;
    gr_resize_coord coord;
    gr_resize_nearest nearest;
    double cubic_a, extrapolation;
    bool exclude_outside;
    int64_t out[GR_MAX_DIMS];  /* output extents */
    double scale[GR_MAX_DIMS]; /* output / input as the coordinates use it */
    double roi_start[GR_MAX_DIMS], roi_end[GR_MAX_DIMS]; /* tf_crop_and_resize */
} gr_resize_geom;
bool gr_infer_resize(gr_ictx *c);
/* infer_select.c: GatherND, ReverseSequence. */
bool gr_infer_gather_nd(gr_ictx *c);
bool gr_infer_reverse_sequence(gr_ictx *c);
/* infer_mvn.c: MeanVarianceNormalization, and its reduced dimensions as
 * flags (false and why when 'axes' is broken). */
bool gr_infer_mvn(gr_ictx *c);
/* infer_topk.c: TopK. */
bool gr_infer_topk(gr_ictx *c);
/* infer_scatter.c: Scatter, ScatterElements, ScatterND. */
bool gr_infer_scatter_elements(gr_ictx *c);
bool gr_infer_scatter_nd(gr_ictx *c);
/* infer_einsum.c: Einsum. */
bool gr_infer_einsum(gr_ictx *c);
/* infer_gridsample.c: GridSample, and its modes for the lowering (false
 * and *why when an attribute is malformed). */
typedef enum { GR_GS_BILINEAR, GR_GS_NEAREST, GR_GS_BICUBIC } gr_gridsample_mode;
typedef enum { GR_GS_ZEROS, GR_GS_BORDER, GR_GS_REFLECTION } gr_gridsample_pad;
bool gr_gridsample_modes(const gr_node *n, gr_gridsample_mode *mode, gr_gridsample_pad *pad, bool *align,
                         const char **why);
bool gr_infer_gridsample(gr_ictx *c);
/* infer_compress.c: Compress, and the count of cond's true entries among
 * the first `extent` (false and *past: a true entry past them). */
bool gr_compress_plan(const gr_tensor *cond, int64_t extent, int64_t *count, int64_t *past);
bool gr_infer_compress(gr_ictx *c);
/* infer_qmatmul.c: MatMulInteger, QLinearMatMul. */
bool gr_infer_qmatmul(gr_ictx *c);
/* infer_fold.c: known contents for Add, Sub, Mul, Div, Neg, Abs, Cast of
 * known small int32/int64/float/double tensors (run after the node's
 * rule; false only when out of memory). */
bool gr_infer_fold_arith(gr_ictx *c);
/* infer_optimizer.c: Adagrad, Momentum, Adam (domain
 * ai.onnx.preview.training), and how many tensor groups each reads after
 * R and T (returned) and writes (*out_groups). */
int gr_optimizer_groups(const char *op, int *out_groups);
bool gr_infer_optimizer(gr_ictx *c);
/* infer_dft.c: DFT, and its signal axis (false when out of range). */
bool gr_dft_axis(const gr_node *n, int rank, int *axis);
bool gr_infer_dft(gr_ictx *c);
/* infer_rnn.c: RNN, GRU, LSTM (graph/rnn.h). */
bool gr_infer_rnn(gr_ictx *c);
/* infer_convinteger.c: ConvInteger, QLinearConv. */
bool gr_infer_convinteger(gr_ictx *c);
/* infer_upsample.c: Upsample, and its scales (the constant input at
 * opset 9 or the attribute before; false and *why when malformed). */
bool gr_upsample_scales(const gr_node *n, int64_t opset, const gr_tensor *in, int rank, double *scales,
                        const char **why);
bool gr_infer_upsample(gr_ictx *c);
/* infer_stft.c: STFT. */
bool gr_infer_stft(gr_ictx *c);
/* infer_roialign.c: RoiAlign. */
bool gr_infer_roialign(gr_ictx *c);
bool gr_mvn_axes(const gr_node *n, int rank, bool *reduced, char *why, size_t size);
/* False and why (an attribute or input broken, or refused) otherwise. */
bool gr_resize_geometry(const gr_node *n, int64_t opset, int rank, const int64_t *in,
                        const gr_tensor *roi, const gr_tensor *scales, const gr_tensor *sizes,
                        gr_resize_geom *g, char *why, size_t size);
bool gr_convt_geometry(const gr_node *n, int sp, const int64_t *in, const int64_t *k, int64_t *s,
                       int64_t *d, int64_t *pb, int64_t *pe, int64_t *out, char *why, size_t size);

bool gr_infer_flatten(gr_ictx *c);
bool gr_infer_reshape(gr_ictx *c);
bool gr_infer_transpose(gr_ictx *c);
bool gr_infer_concat(gr_ictx *c);
bool gr_infer_split(gr_ictx *c);
bool gr_infer_slice(gr_ictx *c);
bool gr_infer_gather(gr_ictx *c);
bool gr_infer_gather_elements(gr_ictx *c);
bool gr_infer_squeeze(gr_ictx *c);
bool gr_infer_unsqueeze(gr_ictx *c);

bool gr_infer_shape(gr_ictx *c);
bool gr_infer_constant(gr_ictx *c);
bool gr_infer_constant_of_shape(gr_ictx *c);
bool gr_infer_cast(gr_ictx *c);
bool gr_infer_castlike(gr_ictx *c);
/* infer_fill.c */
bool gr_infer_eyelike(gr_ictx *c);
bool gr_infer_window(gr_ictx *c);
bool gr_infer_onehot(gr_ictx *c);

/* The rule of a "loom" domain operator (graph/infer_layout.c), or NULL. */
gr_infer_fn gr_infer_layout_rule(const char *op);
/* Versions before opset 11 (infer_legacy.c). */
/* The first opset at which the default domain's `op` is accepted. */
int64_t gr_op_first_opset(const char *op);
/* Add/Sub/Mul/Div before opset 7, Pow before 7: legacy broadcasting. */
bool gr_infer_legacy_binary(gr_ictx *c);
/* Where B's dimensions start in A's under legacy broadcasting (attribute
 * 'axis', default ra - rb; checked by gr_infer_legacy_binary). */
int64_t gr_legacy_bcast_axis(const gr_node *n, int ra, int rb);
/* Gemm before opset 7: C required, [M, N] unless broadcast=1. */
bool gr_infer_legacy_gemm(gr_ictx *c, int64_t m, int64_t n);
/* BatchNormalization before opset 9: refuses spatial=0, and is_test=0
 * before opset 7. */
bool gr_infer_legacy_batchnorm(gr_ictx *c);
/* Cast-1's string attribute 'to' ("FLOAT", ...) as an element type;
 * false when it is not one. */
bool gr_legacy_cast_to(const gr_attr *to, int *elem_type);
/* Refuses, naming it, an attribute of an older version of the node's
 * operator that its opset's version no longer defines (broadcast at
 * opset 7+, spatial at 9+, ...): it would otherwise be passed over. */
bool gr_infer_dropped_attrs(gr_ictx *c);

#endif
