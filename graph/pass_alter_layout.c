/* graph/pass_alter_layout.c — convolutions on the blocked layout
 * NCHW[b]c, kept blocked from one convolution to the next (issue 32
 * part 4; ONNX Runtime's NCHWc transformer, TVM's conv2d_NCHWc and oneDNN
 * do the same).
 *
 * Why: an NCHW convolution vectorized over output channels writes each
 * register tile out with a transpose and reads its input by broadcast
 * from channel planes; in NCHW[b]c (b = the target's float32 lanes) the
 * output lanes are the innermost axis, so a tile stores whole vectors and
 * the weights (pre-blocked here, once) load as vectors.
 *
 * The rewrite, one walk over the nodes in order, building a new node list
 * (so everything inserted lands right before its first reader and the
 * order stays topological):
 *   - a float32 2-D Conv with initializer weights (and bias), with input
 *     and output channels multiples of b (or of b/2 where b >= 16: each
 *     tensor has its own block) or more than b channels that no block
 *     divides (twin_block: the last block padded, its padding lanes
 *     channels of zero weights and bias; their values pass only through
 *     padding_safe_ops), group 1, depthwise (group == C == K), or
 *     grouped with C/group a multiple of the input's block and K/group of
 *     the output's (ResNeXt-50 32x4d's 3x3 convolutions from 8 channels a
 *     group on 8 lanes, from 16 on 16), becomes loom:ConvNCHWc reading
 *     the blocked twin of its input (a loom:ToNCHWc added the first time
 *     one is needed) and writing a blocked twin of its output. A group-1
 *     Conv with fewer input channels than b (a network's stem: the 3
 *     channels of an image) reads its input as it is, plain NCHW (blocks
 *     of one channel, no ToNCHWc), and writes blocked: the transform of
 *     the stem's output goes away and the pool after the stem runs
 *     blocked (ONNX Runtime's NCHWc transformer reads a stem's NCHW input
 *     the same way). Other grouped convolutions (ResNeXt's first stage,
 *     4 channels a group) stay plain: a tensor has one block for all its
 *     readers, and a smaller block for one convolution would re-block its
 *     input and output, a copy each, which is what the FromNCHWc/ToNCHWc
 *     around the plain Conv already cost;
 *   - MaxPool, AveragePool (any ceil_mode, count_include_pad, dilations;
 *     auto_pad resolved to explicit pads), GlobalAveragePool and
 *     GlobalMaxPool of a blocked value become loom:*PoolNCHWc on its
 *     twin, the output blocked like the input: a pool between blocked
 *     convolutions (ResNet's last stage and its global pool) costs no
 *     transform. A pool of a plain value stays plain (blocking its input
 *     first would copy the larger tensor), as does a MaxPool whose
 *     Indices are asked for (plain NCHW positions) or a pool with an
 *     attribute the pass does not know;
 *   - the layout-agnostic unary operators (unary_ops: activations, math
 *     functions, Identity, Dropout) of a blocked value, and Add, Sub, Mul,
 *     Div, Pow, PRelu, Max, Min, Sum, Mean whose inputs are blocked
 *     values of the output's channels (the output's shape, or broadcast
 *     over batch or space: a squeeze-and-excitation scale [1,C,1,1]),
 *     scalars, or per-channel initializers ([1,C,1,1] or [C,1,1],
 *     re-laid out as [1,C/b,1,1,b]) with at least one blocked input, run
 *     on the blocked twins (ONNX elementwise operators take any shape);
 *   - a Concat or Split along channels whose parts and whole are all
 *     whole blocks of one size (no padding lanes) runs on the twins,
 *     along their axis 1 (Split's sizes counted in blocks): YOLO's and
 *     DenseNet's joins cost no transform. A Concat needs one input with a
 *     twin (the others get one); a Split, its input's twin;
 *   - a Resize of a blocked value over its spatial dimensions alone
 *     (resize_blocked: fixed scales or sizes, no ROI mode) resizes the
 *     twin, the block dimension read through at scale 1;
 *   - any other reader of a value that exists only blocked gets it back
 *     through a loom:FromNCHWc writing the original value (its name and
 *     index kept), as does a graph output, so the interface and every
 *     operator not known to be layout-agnostic see plain NCHW.
 * Values left unread (plain outputs of converted nodes nothing needs)
 * are dropped. Nothing else changes: Flatten, Gemm, Reshape read plain
 * NCHW through a FromNCHWc. */
#include "graph/infer_internal.h"
#include "graph/rewrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool in_list(const gr_node *n, const char *const *ops)
{
    for (int i = 0; ops[i]; i++)
        if (gr_rw_is_op(n, ops[i])) return true;
    return false;
}

/* Every elementwise operator of one float input whose output element is
 * a function of the input element at the same position alone (the other
 * inputs, Clip's bounds, Dropout's ratio, are scalars), with the input's
 * type: any layout of the tensor gives the same values. Left out: IsNaN,
 * IsInf and Not (bool outputs), Cast (another type). */
static const char *const unary_ops[] = {
    "Relu", "Clip", "Sigmoid", "Tanh", "HardSwish", "Sqrt", "Reciprocal", "Erf", "Gelu",
    "Identity", "Dropout",
    /* graph/lower_math.c */
    "Abs", "Neg", "Sign", "Exp", "Log", "Ceil", "Floor", "Round", "Sin", "Cos", "Tan", "Asin",
    "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus", "Softsign", "Mish",
    "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "ThresholdedRelu", "Shrink", NULL};
/* Elementwise over inputs of the output's shape, scalars or per-channel
 * constants (PRelu's slope, a Max's bound). */
static const char *const binary_ops[] = {"Add", "Sub", "Mul", "Div", "Pow", "PRelu",
                                         "Max", "Min", "Sum", "Mean", NULL};

static int64_t attr_int(const gr_node *n, const char *name, int64_t dflt)
{
    const gr_attr *a = gr_node_attr(n, name);
    return a && a->kind == GR_ATTR_INT ? a->i : dflt;
}

static bool attr_ints(const gr_node *n, const char *name, int want, int64_t dflt, int64_t *out)
{
    const gr_attr *a = gr_node_attr(n, name);
    for (int i = 0; i < want; i++) out[i] = dflt;
    if (!a) return true;
    if (a->kind != GR_ATTR_INTS || a->n != (size_t)want) return false;
    for (int i = 0; i < want; i++) out[i] = a->ints[i];
    return true;
}

/* The block of a tensor of C channels: the target's lanes b, else, with
 * 16 lanes or more, half of them (MobileNet's 24-channel layers stay
 * blocked in 8s rather than going back and forth to NCHW); 0: none. */
static int64_t block_of(int64_t b, int64_t C)
{
    if (C % b == 0) return b;
    if (b >= 16 && C % (b / 2) == 0) return b / 2;
    return 0;
}

/* The block of C channels' blocked twin: block_of, else b with the last
 * block padded (more than b channels that no block divides: 30, 100,
 * ShuffleNet's 116; oneDNN pads its blocked formats the same way). The
 * plain convolutions those would run instead took 3-7x ONNX Runtime's
 * time. 0: none (fewer channels: a stem's 3 stay plain). */
static int64_t twin_block(int64_t b, int64_t C)
{
    int64_t bb = block_of(b, C);
    return bb ? bb : C > b ? b : 0;
}

static int64_t padded_channels(int64_t b, int64_t C)
{
    int64_t bb = twin_block(b, C);
    return bb ? (C + bb - 1) / bb * bb : C;
}

/* Operators that keep finite values finite: the only ones a padded
 * twin's padding lanes (zeros from its convolution, then whatever these
 * make of them) go through, so that the next convolution's zero weights
 * cancel them (0 * inf would not). Division, Pow, Log, Sqrt, Reciprocal
 * and the like read a padded value plain. */
static const char *const padding_safe_ops[] = {
    "Relu", "Clip", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "Erf", "Gelu", "LeakyRelu",
    "Elu", "Selu", "Celu", "Softsign", "Abs", "Neg", "Identity", "Dropout", "Add", "Sub", "Mul",
    "Max", "Min", "Sum", "Mean", "PRelu", NULL};

static bool is_float4(const gr_type *t)
{
    return t->kind == GR_TYPE_TENSOR && t->elem_type == GR_FLOAT && t->ndim == 4;
}

/* How a converted Conv reads its input. */
typedef enum {
    CONV_BLOCKED,   /* the blocked twin (group 1 or grouped) */
    CONV_DEPTHWISE, /* the blocked twin, one channel a group */
    CONV_PLAIN_IN   /* plain NCHW: fewer channels than a block (a network's stem) */
} conv_form;

/* A Conv the pass converts: its explicit pads, strides, dilations in
 * *geo (pads[4], strides[2], dilations[2]) and how it reads its input. */
static bool convertible_conv(const gr_graph *g, const gr_node *n, int64_t b, int64_t *geo,
                             conv_form *form)
{
    if (!gr_rw_is_op(n, "Conv") || n->n_inputs < 2 || n->n_outputs != 1 || n->outputs[0] < 0)
        return false;
    int x = n->inputs[0], w = n->inputs[1], bias = n->n_inputs > 2 ? n->inputs[2] : -1;
    if (x < 0 || !is_float4(&g->values[x].type) || !is_float4(&g->values[n->outputs[0]].type))
        return false;
    if (!gr_rw_is_fixed_const(g, w) || (bias >= 0 && !gr_rw_is_fixed_const(g, bias))) return false;
    const gr_tensor *wt = g->values[w].data;
    if (wt->elem_type != GR_FLOAT || wt->ndim != 4) return false;
    if (bias >= 0 && (g->values[bias].data->elem_type != GR_FLOAT ||
                      g->values[bias].data->numel != wt->shape[0]))
        return false;
    const int64_t *xs = g->values[x].type.shape, *ys = g->values[n->outputs[0]].type.shape;
    int64_t C = xs[1], K = wt->shape[0], group = attr_int(n, "group", 1);
    int64_t bi = twin_block(b, C), bo = twin_block(b, K);
    if (!bo) return false;
    if (!bi) {
        if (group != 1 || C >= b) return false;
        *form = CONV_PLAIN_IN;
    } else if (group == 1) {
        *form = CONV_BLOCKED;
    } else if (group == C && group == K && wt->shape[1] == 1) {
        *form = CONV_DEPTHWISE; /* padded channels: groups of their own */
    /* Grouped: each output block within one group, each group's inputs
     * whole input blocks (see the file's comment); no padding. */
    } else if (group > 1 && C % group == 0 && K % group == 0 && C % bi == 0 && K % bo == 0 &&
               (C / group) % bi == 0 && (K / group) % bo == 0) {
        *form = CONV_BLOCKED;
    } else {
        return false;
    }
    int64_t *pads = geo, *s = geo + 4, *d = geo + 6;
    if (!attr_ints(n, "strides", 2, 1, s) || !attr_ints(n, "dilations", 2, 1, d) ||
        !attr_ints(n, "pads", 4, 0, pads))
        return false;
    const gr_attr *ap = gr_node_attr(n, "auto_pad");
    const char *mode = ap && ap->kind == GR_ATTR_STRING ? ap->s.data : "NOTSET";
    if (strcmp(mode, "VALID") == 0) {
        memset(pads, 0, 4 * sizeof *pads);
    } else if (strcmp(mode, "SAME_UPPER") == 0 || strcmp(mode, "SAME_LOWER") == 0) {
        for (int i = 0; i < 2; i++) {
            int64_t total = (ys[2 + i] - 1) * s[i] + (wt->shape[2 + i] - 1) * d[i] + 1 - xs[2 + i];
            if (total < 0) total = 0;
            pads[i] = mode[5] == 'U' ? total / 2 : total - total / 2;
            pads[2 + i] = total - pads[i];
        }
    } else if (strcmp(mode, "NOTSET") != 0) {
        return false;
    }
    return true;
}

/* A per-channel initializer of C floats: [1,C,1,1] or [C,1,1]. */
static bool per_channel(const gr_graph *g, int v, int64_t C)
{
    if (!gr_rw_is_fixed_const(g, v)) return false;
    const gr_tensor *t = g->values[v].data;
    if (t->elem_type != GR_FLOAT || t->numel != C) return false;
    if (t->ndim == 4) return t->shape[0] == 1 && t->shape[1] == C && t->shape[2] == 1 && t->shape[3] == 1;
    return t->ndim == 3 && t->shape[0] == C && t->shape[1] == 1 && t->shape[2] == 1;
}

/* An input of a 4-D output `out` that keeps its channels and broadcasts
 * over batch or space alone (a squeeze-and-excitation scale [N,C,1,1]
 * against its feature map [N,C,H,W]): the blocked twins broadcast the
 * same way, [N,C/b,1,1,b] against [N,C/b,H,W,b]. */
static bool channel_aligned(const gr_type *t, const gr_type *out)
{
    if (t->ndim != 4 || out->ndim != 4 || t->shape[1] != out->shape[1]) return false;
    for (int d = 0; d < 4; d++)
        if (d != 1 && t->shape[d] != out->shape[d] && t->shape[d] != 1) return false;
    return true;
}

typedef struct {
    gr_rw *rw;
    int64_t b;
    int *blk;        /* per original value: its blocked twin, or -1 */
    bool *pending;   /* per original value: exists only blocked so far */
    int nv0;         /* values before the pass (blk/pending size) */
    gr_rw_list out;  /* the new node list */
    int rewrites;
} walk;

static bool oom(walk *w)
{
    gr_set_err(w->rw->err, "%s: out of memory in a graph pass", w->rw->m->path);
    return false;
}

static bool emit(walk *w, const gr_node *n) { return gr_rw_emit(w->rw, &w->out, n); }

static gr_node layout_node(walk *w, const char *op, const char *name, int in, int out)
{
    gr_arena *a = w->rw->a;
    gr_node n = {0};
    n.name = gr_arena_strdup(a, name);
    n.op_type = (char *)op;
    n.domain = "loom";
    n.inputs = gr_arena_alloc(a, 1, sizeof(int));
    n.outputs = gr_arena_alloc(a, 1, sizeof(int));
    if (n.inputs && n.outputs) {
        n.n_inputs = n.n_outputs = 1;
        n.inputs[0] = in;
        n.outputs[0] = out;
    }
    return n;
}

/* Whether value v's blocked twin has padding lanes. */
static bool is_padded(const walk *w, int v)
{
    const gr_type *t = &w->rw->g->values[v].type;
    return t->ndim == 4 && padded_channels(w->b, t->shape[1]) != t->shape[1];
}

static int blocked_shape_value(walk *w, int v)
{
    const gr_type *t = &w->rw->g->values[v].type;
    int64_t b = twin_block(w->b, t->shape[1]);
    int64_t s[5] = {t->shape[0], padded_channels(w->b, t->shape[1]) / b, t->shape[2],
                    t->shape[3], b};
    char base[1024];
    snprintf(base, sizeof base, "%s_nchwc", w->rw->g->values[v].name);
    return gr_rw_add_node_value(w->rw, base, t->elem_type, 5, s);
}

/* The blocked twin of plain value v, adding a ToNCHWc when it has none. */
static int to_blocked(walk *w, int v)
{
    if (v < w->nv0 && w->blk[v] >= 0) return w->blk[v];
    int bv = blocked_shape_value(w, v);
    if (bv < 0) return -1;
    gr_node n = layout_node(w, "ToNCHWc", "", v, bv);
    gr_attr *at = gr_arena_alloc(w->rw->a, 1, sizeof *at);
    if (!n.inputs || !n.outputs || !at) return oom(w), -1;
    at->name = "block";
    at->kind = GR_ATTR_INT;
    at->i = twin_block(w->b, w->rw->g->values[v].type.shape[1]);
    n.attrs = at;
    n.n_attrs = 1;
    if (!emit(w, &n)) return -1;
    if (v < w->nv0) w->blk[v] = bv;
    w->rewrites++;
    return bv;
}

/* Makes plain value v exist (a FromNCHWc of its twin) if it is pending. */
static bool to_plain(walk *w, int v)
{
    if (v < 0 || v >= w->nv0 || !w->pending[v]) return true;
    gr_node n = layout_node(w, "FromNCHWc", "", w->blk[v], v);
    if (!n.inputs || !n.outputs) return oom(w);
    if (is_padded(w, v)) { /* the channels without the padding lanes */
        gr_attr *at = gr_arena_alloc(w->rw->a, 1, sizeof *at);
        if (!at) return oom(w);
        *at = (gr_attr){.name = "channels", .kind = GR_ATTR_INT,
                        .i = w->rw->g->values[v].type.shape[1]};
        n.attrs = at;
        n.n_attrs = 1;
    }
    w->pending[v] = false;
    w->rewrites++;
    return emit(w, &n);
}

/* Original value y now exists only as its twin yb, written by the node
 * just emitted: readers that need it plain get a FromNCHWc (to_plain). */
static void twin_made(walk *w, int y, int yb)
{
    w->blk[y] = yb;
    w->pending[y] = true;
    w->rw->g->values[y].producer = -1;
    w->rewrites++;
}

/* W [K, C/group, R, S] as [K/bo, C/group/bi, R, S, bi, bo], bi the
 * input's block (1 when depthwise or read plain); padded channels (K or
 * C/group rounded up to whole blocks) have zero weights. */
static gr_tensor *block_weights(walk *w, const gr_tensor *wt, int64_t bi)
{
    int64_t K = wt->shape[0], Cg = wt->shape[1], R = wt->shape[2], S = wt->shape[3];
    int64_t bo = twin_block(w->b, K);
    int64_t shape[6] = {(K + bo - 1) / bo, (Cg + bi - 1) / bi, R, S, bi, bo};
    gr_tensor *t = gr_rw_new_tensor(w->rw, GR_FLOAT, 6, shape);
    if (!t) return NULL;
    const float *src = wt->data;
    float *dst = t->data;
    for (int64_t k = 0; k < K; k++)
        for (int64_t c = 0; c < Cg; c++)
            for (int64_t r = 0; r < R; r++)
                for (int64_t s = 0; s < S; s++) {
                    int64_t at = ((((k / bo) * shape[1] + c / bi) * R + r) * S + s) * bi + c % bi;
                    dst[at * bo + k % bo] = src[((k * Cg + c) * R + r) * S + s];
                }
    return t;
}

static int add_blocked_const(walk *w, int v, int64_t C, int ndim, const int64_t *shape)
{
    const gr_tensor *src = w->rw->g->values[v].data;
    gr_tensor *t = gr_rw_new_tensor(w->rw, GR_FLOAT, ndim, shape);
    if (!t) return -1;
    /* Channel c sits at block c / b, lane c % b: the same flat order;
     * padding lanes zero (the new tensor's). */
    memcpy(t->data, src->data, (size_t)C * sizeof(float));
    char base[1024];
    snprintf(base, sizeof base, "%s_nchwc", w->rw->g->values[v].name);
    return gr_rw_add_const(w->rw, base, t);
}

static bool convert_conv(walk *w, const gr_node *n, const int64_t *geo, conv_form form)
{
    gr_rw *rw = w->rw;
    int y = n->outputs[0];
    int xb = n->inputs[0];
    if (form == CONV_PLAIN_IN ? !to_plain(w, xb) : (xb = to_blocked(w, xb)) < 0) return false;
    const gr_tensor *wt = rw->g->values[n->inputs[1]].data;
    gr_tensor *wb =
        block_weights(w, wt, form == CONV_BLOCKED ? rw->g->values[xb].type.shape[4] : 1);
    char base[1024];
    snprintf(base, sizeof base, "%s_nchwc", rw->g->values[n->inputs[1]].name);
    int wv = wb ? gr_rw_add_const(rw, base, wb) : -1;
    if (wv < 0) return false;
    int bv = -1;
    if (n->n_inputs > 2 && n->inputs[2] >= 0) {
        int64_t bo = twin_block(w->b, wt->shape[0]);
        int64_t bs[2] = {padded_channels(w->b, wt->shape[0]) / bo, bo};
        bv = add_blocked_const(w, n->inputs[2], wt->shape[0], 2, bs);
        if (bv < 0) return false;
    }
    int yb = blocked_shape_value(w, y);
    if (yb < 0) return false;
    gr_node c = {0};
    c.name = n->name;
    c.op_type = "ConvNCHWc";
    c.domain = "loom";
    c.n_inputs = bv >= 0 ? 3 : 2;
    c.inputs = gr_arena_alloc(rw->a, 3, sizeof(int));
    c.outputs = gr_arena_alloc(rw->a, 1, sizeof(int));
    c.attrs = gr_arena_alloc(rw->a, 4, sizeof *c.attrs);
    if (!c.inputs || !c.outputs || !c.attrs) return oom(w);
    c.inputs[0] = xb, c.inputs[1] = wv, c.inputs[2] = bv;
    c.n_outputs = 1;
    c.outputs[0] = yb;
    c.attrs[0] = gr_rw_ints_attr(rw, "dilations", 2, geo + 6);
    /* depthwise over padded channels: each padding lane a group too */
    int64_t group = form == CONV_DEPTHWISE ? padded_channels(w->b, wt->shape[0])
                                           : attr_int(n, "group", 1);
    c.attrs[1] = (gr_attr){.name = "group", .kind = GR_ATTR_INT, .i = group};
    c.attrs[2] = gr_rw_ints_attr(rw, "pads", 4, geo);
    c.attrs[3] = gr_rw_ints_attr(rw, "strides", 2, geo + 4);
    if (!c.attrs[0].ints || !c.attrs[2].ints || !c.attrs[3].ints) return oom(w);
    c.n_attrs = 4;
    if (!emit(w, &c)) return false;
    twin_made(w, y, yb);
    return true;
}

/* A pool the pass converts: MaxPool, AveragePool, GlobalAveragePool or
 * GlobalMaxPool of a blocked float value, with one output. *geo gets
 * pads[4], strides[2], dilations[2], kernel_shape[2], ceil_mode and
 * count_include_pad, auto_pad resolved to explicit pads. An attribute the
 * pass does not know, or geometry whose explicit form would not give the
 * inferred output extents, leaves the node plain: never an attribute
 * dropped. */
static bool pool_blocked(const walk *w, const gr_node *n, int64_t *geo)
{
    static const char *const max_attrs[] = {"kernel_shape", "strides", "pads", "auto_pad",
                                            "dilations", "ceil_mode", "storage_order", NULL};
    static const char *const avg_attrs[] = {"kernel_shape", "strides", "pads", "auto_pad",
                                            "dilations", "ceil_mode", "count_include_pad", NULL};
    static const char *const none[] = {NULL};
    const gr_graph *g = w->rw->g;
    bool global = gr_rw_is_op(n, "GlobalAveragePool") || gr_rw_is_op(n, "GlobalMaxPool");
    bool max = gr_rw_is_op(n, "MaxPool");
    if (!global && !max && !gr_rw_is_op(n, "AveragePool")) return false;
    if (n->n_inputs != 1 || n->n_outputs < 1 || n->outputs[0] < 0) return false;
    /* MaxPool's Indices are positions in plain NCHW: a node asked for them stays plain. */
    for (int k = 1; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0) return false;
    int x = n->inputs[0], y = n->outputs[0];
    if (x < 0 || x >= w->nv0 || w->blk[x] < 0) return false;
    if (!is_float4(&g->values[x].type) || !is_float4(&g->values[y].type)) return false;
    const char *const *known = global ? none : max ? max_attrs : avg_attrs;
    for (int a = 0; a < n->n_attrs; a++) {
        bool ok = false;
        for (int k = 0; known[k] && !ok; k++) ok = strcmp(n->attrs[a].name, known[k]) == 0;
        if (!ok) return false;
    }
    if (global) return true;
    const int64_t *xs = g->values[x].type.shape, *ys = g->values[y].type.shape;
    int64_t *pads = geo, *s = geo + 4, *d = geo + 6, *k = geo + 8;
    const gr_attr *ks = gr_node_attr(n, "kernel_shape");
    if (!ks || !attr_ints(n, "kernel_shape", 2, 1, k) || !attr_ints(n, "strides", 2, 1, s) ||
        !attr_ints(n, "dilations", 2, 1, d) || !attr_ints(n, "pads", 4, 0, pads))
        return false;
    int64_t ceil_mode = attr_int(n, "ceil_mode", 0), incl = attr_int(n, "count_include_pad", 0);
    if ((ceil_mode != 0 && ceil_mode != 1) || (incl != 0 && incl != 1)) return false;
    const gr_attr *ap = gr_node_attr(n, "auto_pad");
    const char *mode = ap && ap->kind == GR_ATTR_STRING ? ap->s.data : "NOTSET";
    if (strcmp(mode, "VALID") == 0) {
        memset(pads, 0, 4 * sizeof *pads);
    } else if (strcmp(mode, "SAME_UPPER") == 0 || strcmp(mode, "SAME_LOWER") == 0) {
        /* SAME sets the extents itself: ceil_mode plays no part. */
        ceil_mode = 0;
        for (int i = 0; i < 2; i++) {
            int64_t total = (ys[2 + i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - xs[2 + i];
            if (total < 0) total = 0;
            pads[i] = mode[5] == 'U' ? total / 2 : total - total / 2;
            pads[2 + i] = total - pads[i];
        }
    } else if (strcmp(mode, "NOTSET") != 0) {
        return false;
    }
    for (int i = 0; i < 2; i++) {
        if (s[i] < 1 || d[i] < 1 || k[i] < 1 || pads[i] < 0 || pads[2 + i] < 0) return false;
        int64_t room = xs[2 + i] + pads[i] + pads[2 + i] - ((k[i] - 1) * d[i] + 1);
        if (room < 0) return false;
        int64_t o = (ceil_mode ? (room + s[i] - 1) / s[i] : room / s[i]) + 1;
        if (ceil_mode && (o - 1) * s[i] >= xs[2 + i] + pads[i]) o--;
        if (o != ys[2 + i]) return false;
    }
    geo[10] = ceil_mode;
    geo[11] = incl;
    return true;
}

static bool convert_pool(walk *w, const gr_node *n, const int64_t *geo)
{
    gr_rw *rw = w->rw;
    int y = n->outputs[0], yb = blocked_shape_value(w, y);
    if (yb < 0) return false;
    char op[64];
    snprintf(op, sizeof op, "%sNCHWc", n->op_type);
    gr_node p = layout_node(w, gr_arena_strdup(rw->a, op), n->name, w->blk[n->inputs[0]], yb);
    if (!p.inputs || !p.outputs || !p.op_type) return oom(w);
    if (!gr_rw_is_op(n, "GlobalAveragePool") && !gr_rw_is_op(n, "GlobalMaxPool")) {
        bool avg = gr_rw_is_op(n, "AveragePool");
        p.attrs = gr_arena_alloc(rw->a, 6, sizeof *p.attrs);
        if (!p.attrs) return oom(w);
        /* In name order, as ConvNCHWc's. */
        int na = 0;
        p.attrs[na++] = (gr_attr){.name = "ceil_mode", .kind = GR_ATTR_INT, .i = geo[10]};
        if (avg)
            p.attrs[na++] =
                (gr_attr){.name = "count_include_pad", .kind = GR_ATTR_INT, .i = geo[11]};
        p.attrs[na++] = gr_rw_ints_attr(rw, "dilations", 2, geo + 6);
        p.attrs[na++] = gr_rw_ints_attr(rw, "kernel_shape", 2, geo + 8);
        p.attrs[na++] = gr_rw_ints_attr(rw, "pads", 4, geo);
        p.attrs[na++] = gr_rw_ints_attr(rw, "strides", 2, geo + 4);
        for (int i = na - 4; i < na; i++)
            if (!p.attrs[i].ints) return oom(w);
        p.n_attrs = na;
    }
    if (!emit(w, &p)) return false;
    twin_made(w, y, yb);
    return true;
}

/* Whether elementwise node n runs blocked: see the file's comment. */
static bool elemwise_blocked(const walk *w, const gr_node *n)
{
    const gr_graph *g = w->rw->g;
    if (n->n_outputs != 1 || n->outputs[0] < 0) return false;
    const gr_type *out = &g->values[n->outputs[0]].type;
    if (out->ndim != 4) return false;
    bool unary = in_list(n, unary_ops);
    if (!unary && !in_list(n, binary_ops)) return false;
    if (is_padded(w, n->outputs[0]) && !in_list(n, padding_safe_ops)) return false;
    int nblocked = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        if (v < 0) continue;
        const gr_type *t = &g->values[v].type;
        if (v < w->nv0 && w->blk[v] >= 0 && channel_aligned(t, out) && (!unary || k == 0)) {
            nblocked++;
            continue;
        }
        if (unary && k == 0) return false;
        int64_t numel = 1;
        for (int d = 0; d < t->ndim; d++) numel *= t->shape[d];
        if (numel == 1 && t->ndim <= 4) continue; /* broadcasts over any shape */
        if (!unary && per_channel(g, v, out->shape[1])) continue;
        return false;
    }
    return nblocked > 0;
}

static bool convert_elemwise(walk *w, const gr_node *n)
{
    gr_rw *rw = w->rw;
    gr_node e = *n;
    e.inputs = gr_arena_alloc(rw->a, (size_t)n->n_inputs, sizeof(int));
    e.outputs = gr_arena_alloc(rw->a, 1, sizeof(int));
    if (!e.inputs || !e.outputs) return oom(w);
    int y = n->outputs[0];
    int64_t C = rw->g->values[y].type.shape[1];
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        e.inputs[k] = v;
        if (v < 0) continue;
        if (v < w->nv0 && w->blk[v] >= 0 &&
            channel_aligned(&rw->g->values[v].type, &rw->g->values[y].type))
            e.inputs[k] = w->blk[v];
        else if (rw->g->values[v].type.ndim >= 3 && per_channel(rw->g, v, C)) {
            int64_t bc = twin_block(w->b, C), s[5] = {1, padded_channels(w->b, C) / bc, 1, 1, bc};
            if ((e.inputs[k] = add_blocked_const(w, v, C, 5, s)) < 0) return false;
        }
    }
    int yb = blocked_shape_value(w, y);
    if (yb < 0) return false;
    e.outputs[0] = yb;
    if (!emit(w, &e)) return false;
    twin_made(w, y, yb);
    return true;
}

/* The channel axis of a Concat or Split over 4-D values (axis 1 or -3;
 * Concat before opset 4 defaults to 1, Split to 0). */
static bool on_channels(const walk *w, const gr_node *n, bool concat)
{
    int64_t dflt = concat && w->rw->m->opset < 4 ? 1 : 0;
    int64_t axis = attr_int(n, "axis", dflt);
    return axis == 1 || axis == -3;
}

/* Whether C channels sit in whole blocks of bb in their twin (no padding
 * lanes), so that parts of whole blocks join or split as the channels do. */
static bool whole_blocks(const walk *w, int64_t C, int64_t bb)
{
    return C > 0 && bb > 0 && C % bb == 0 && twin_block(w->b, C) == bb;
}

/* A Concat along channels (YOLO's and DenseNet's joins, Inception's
 * branches) runs on the blocked twins when one input has a twin and every
 * input and the output are whole blocks of one size: blocks are joined as
 * the channels are. */
static bool concat_blocked(const walk *w, const gr_node *n)
{
    const gr_graph *g = w->rw->g;
    if (!gr_rw_is_op(n, "Concat") || n->n_outputs != 1 || n->outputs[0] < 0 || n->n_inputs < 1)
        return false;
    const gr_type *out = &g->values[n->outputs[0]].type;
    if (!is_float4(out) || !on_channels(w, n, true)) return false;
    int64_t bb = twin_block(w->b, out->shape[1]);
    if (!whole_blocks(w, out->shape[1], bb)) return false;
    bool any = false;
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        if (v < 0 || !is_float4(&g->values[v].type) ||
            !whole_blocks(w, g->values[v].type.shape[1], bb))
            return false;
        any |= v < w->nv0 && w->blk[v] >= 0;
    }
    return any;
}

/* A Split along channels of a blocked value into parts of whole blocks of
 * its block: each part's twin is a run of the input's blocks. */
static bool split_blocked(const walk *w, const gr_node *n)
{
    const gr_graph *g = w->rw->g;
    if (!gr_rw_is_op(n, "Split") || n->n_inputs < 1 || n->n_outputs < 1 || n->n_outputs > 64)
        return false;
    int x = n->inputs[0];
    if (x < 0 || x >= w->nv0 || w->blk[x] < 0 || !on_channels(w, n, false)) return false;
    int64_t bb = g->values[w->blk[x]].type.shape[4];
    if (!whole_blocks(w, g->values[x].type.shape[1], bb)) return false;
    for (int k = 0; k < n->n_outputs; k++) {
        int v = n->outputs[k];
        if (v < 0 || !is_float4(&g->values[v].type) ||
            !whole_blocks(w, g->values[v].type.shape[1], bb))
            return false;
    }
    return true;
}

/* Concat or Split on the twins: axis 1 of the 5-D twins, Split's sizes
 * counted in blocks (an input from opset 13, an attribute before). */
static bool convert_join(walk *w, const gr_node *n, bool concat)
{
    gr_rw *rw = w->rw;
    gr_node e = *n;
    int nin = concat ? n->n_inputs : rw->m->opset >= 13 ? 2 : 1;
    e.n_inputs = nin;
    e.inputs = gr_arena_alloc(rw->a, (size_t)nin, sizeof(int));
    e.outputs = gr_arena_alloc(rw->a, (size_t)n->n_outputs, sizeof(int));
    e.attrs = gr_arena_alloc(rw->a, 2, sizeof *e.attrs);
    if (!e.inputs || !e.outputs || !e.attrs) return oom(w);
    e.attrs[0] = (gr_attr){.name = "axis", .kind = GR_ATTR_INT, .i = 1};
    e.n_attrs = 1;
    if (concat) {
        for (int k = 0; k < nin; k++)
            if ((e.inputs[k] = to_blocked(w, n->inputs[k])) < 0) return false;
    } else {
        e.inputs[0] = w->blk[n->inputs[0]];
        int64_t bb = rw->g->values[e.inputs[0]].type.shape[4], sizes[64]; /* split_blocked */
        for (int k = 0; k < n->n_outputs; k++)
            sizes[k] = rw->g->values[n->outputs[k]].type.shape[1] / bb;
        if (nin == 2) {
            int64_t len = n->n_outputs;
            gr_tensor *t = gr_rw_new_tensor(rw, GR_INT64, 1, &len);
            if (!t) return false;
            memcpy(t->data, sizes, (size_t)len * sizeof *sizes);
            char base[1024];
            snprintf(base, sizeof base, "%s_split_blocks", n->name ? n->name : "Split");
            if ((e.inputs[1] = gr_rw_add_const(rw, base, t)) < 0) return false;
        } else {
            e.attrs[1] = gr_rw_ints_attr(rw, "split", n->n_outputs, sizes);
            if (!e.attrs[1].ints) return oom(w);
            e.n_attrs = 2;
        }
    }
    for (int k = 0; k < n->n_outputs; k++)
        if ((e.outputs[k] = blocked_shape_value(w, n->outputs[k])) < 0) return false;
    if (!emit(w, &e)) return false;
    for (int k = 0; k < n->n_outputs; k++) twin_made(w, n->outputs[k], e.outputs[k]);
    return true;
}

/* The index of Resize's scales and sizes inputs (Resize-10 has scales
 * alone); -1 where the node leaves one out or gives it empty. */
static void resize_inputs(const walk *w, const gr_node *n, int *scales, int *sizes)
{
    const gr_graph *g = w->rw->g;
    int at[2] = {w->rw->m->opset < 11 ? 1 : 2, w->rw->m->opset < 11 ? -1 : 3};
    for (int k = 0; k < 2; k++) {
        int v = at[k] >= 0 && at[k] < n->n_inputs ? n->inputs[at[k]] : -1;
        if (v >= 0 && gr_rw_is_fixed_const(g, v) && g->values[v].data->numel == 0) v = -1;
        *(k ? sizes : scales) = v;
    }
}

/* A Resize of a blocked value over its spatial dimensions alone (an
 * FPN's or YOLO's upsampling): the block dimension, of scale 1, reads
 * through unchanged in every coordinate mode but tf_crop_and_resize and
 * tf_half_pixel_for_nn, so the twin resizes as the plain value does.
 * Scales or sizes must be fixed, and no `axes` is given. */
static bool resize_blocked(const walk *w, const gr_node *n)
{
    const gr_graph *g = w->rw->g;
    if (!gr_rw_is_op(n, "Resize") || n->n_inputs < 2 || n->n_outputs != 1 || n->outputs[0] < 0)
        return false;
    int x = n->inputs[0], y = n->outputs[0], sc, sz;
    if (x < 0 || x >= w->nv0 || w->blk[x] < 0 || gr_node_attr(n, "axes")) return false;
    if (!is_float4(&g->values[x].type) || !is_float4(&g->values[y].type)) return false;
    resize_inputs(w, n, &sc, &sz);
    if ((sc < 0) == (sz < 0) || !gr_rw_is_fixed_const(g, sc < 0 ? sz : sc)) return false;
    const gr_tensor *ts = sc >= 0 ? g->values[sc].data : NULL;
    const gr_tensor *tz = sz >= 0 ? g->values[sz].data : NULL;
    if (ts && ts->elem_type != GR_FLOAT) return false;
    gr_resize_geom geo;
    char why[256];
    if (!gr_resize_geometry(n, w->rw->m->opset, 4, g->values[x].type.shape, NULL, ts, tz, &geo,
                            why, sizeof why))
        return false;
    if (geo.coord == GR_RESIZE_TF_CROP_AND_RESIZE || geo.coord == GR_RESIZE_TF_HALF_PIXEL_FOR_NN)
        return false;
    const int64_t *xs = g->values[x].type.shape, *ys = g->values[y].type.shape;
    return geo.scale[0] == 1.0 && geo.scale[1] == 1.0 && xs[0] == ys[0] && xs[1] == ys[1];
}

/* The Resize on the twin: its scales with 1 for the block dimension, or
 * its sizes as the output twin's shape; the ROI (read only by
 * tf_crop_and_resize) left out. */
static bool convert_resize(walk *w, const gr_node *n)
{
    gr_rw *rw = w->rw;
    int sc, sz, y = n->outputs[0], yb = blocked_shape_value(w, y);
    if (yb < 0) return false;
    resize_inputs(w, n, &sc, &sz);
    int64_t five = 5;
    gr_tensor *t = gr_rw_new_tensor(rw, sc >= 0 ? GR_FLOAT : GR_INT64, 1, &five);
    if (!t) return false;
    if (sc >= 0) { /* float32: resize_blocked */
        float *d = t->data;
        memcpy(d, rw->g->values[sc].data->data, 4 * sizeof *d);
        d[4] = 1.0f;
    } else {
        memcpy(t->data, rw->g->values[yb].type.shape, 5 * sizeof(int64_t));
    }
    char base[1024];
    snprintf(base, sizeof base, "%s_nchwc", rw->g->values[sc >= 0 ? sc : sz].name);
    int cv = gr_rw_add_const(rw, base, t);
    if (cv < 0) return false;
    gr_node e = *n;
    e.n_inputs = rw->m->opset < 11 ? 2 : sc >= 0 ? 3 : 4;
    e.inputs = gr_arena_alloc(rw->a, (size_t)e.n_inputs, sizeof(int));
    e.outputs = gr_arena_alloc(rw->a, 1, sizeof(int));
    if (!e.inputs || !e.outputs) return oom(w);
    for (int k = 1; k < e.n_inputs; k++) e.inputs[k] = -1;
    e.inputs[0] = w->blk[n->inputs[0]];
    e.inputs[e.n_inputs - 1] = cv;
    e.outputs[0] = yb;
    if (!emit(w, &e)) return false;
    twin_made(w, y, yb);
    return true;
}

int gr_pass_alter_layout(gr_model *m, int block, gr_pass_stats *st, char **err)
{
    if (err) *err = NULL;
    if (!m || !m->graph) {
        gr_set_err(err, "gr_pass_alter_layout: no model");
        return -1;
    }
    if (block < 2) return 0;
    gr_rw rw;
    gr_rw_begin(&rw, m, st, err);
    gr_graph *g = rw.g;
    int64_t geo[8], pgeo[12];
    conv_form form;
    bool any = false;
    size_t cap = (size_t)g->n_outputs + 1;
    for (int i = 0; i < g->n_nodes; i++) {
        any |= convertible_conv(g, &g->nodes[i], block, geo, &form);
        cap += (size_t)g->nodes[i].n_inputs + 1;
    }
    if (!any) return 0;
    walk w = {.rw = &rw, .b = block, .nv0 = g->n_values};
    w.blk = malloc((size_t)g->n_values * sizeof *w.blk);
    w.pending = calloc((size_t)g->n_values, sizeof *w.pending);
    bool ok = w.blk && w.pending;
    if (!ok) oom(&w);
    ok = ok && gr_rw_list_init(&rw, &w.out, (int)cap);
    for (int v = 0; ok && v < g->n_values; v++) w.blk[v] = -1;
    for (int i = 0; ok && i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        if (convertible_conv(g, n, block, geo, &form)) {
            ok = convert_conv(&w, n, geo, form);
        } else if (elemwise_blocked(&w, n)) {
            ok = convert_elemwise(&w, n);
        } else if (pool_blocked(&w, n, pgeo)) {
            ok = convert_pool(&w, n, pgeo);
        } else if (concat_blocked(&w, n) || split_blocked(&w, n)) {
            ok = convert_join(&w, n, gr_rw_is_op(n, "Concat"));
        } else if (resize_blocked(&w, n)) {
            ok = convert_resize(&w, n);
        } else {
            for (int k = 0; ok && k < n->n_inputs; k++) ok = to_plain(&w, n->inputs[k]);
            ok = ok && emit(&w, n);
        }
    }
    for (int i = 0; ok && i < g->n_outputs; i++) ok = to_plain(&w, g->outputs[i]);
    if (ok) gr_rw_list_install(&rw, &w.out);
    free(w.blk);
    free(w.pending);
    return gr_rw_end(&rw, ok) ? w.rewrites : -1;
}
