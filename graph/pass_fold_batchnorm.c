/* graph/pass_fold_batchnorm.c — a BatchNormalization in inference form
 * right after a Conv folds into the Conv's weights and bias
 * (onnxruntime/core/optimizer/conv_bn_fusion.cc does the same):
 *
 *   s[k] = scale[k] / sqrt(var[k] + epsilon)
 *   W'[k, ...] = W[k, ...] * s[k]
 *   B'[k] = (B[k] - mean[k]) * s[k] + beta[k]     (B = 0 when absent)
 *
 * computed in double and rounded once to the weight's type (float32 or
 * float64; other types are left alone). W' and B' are new initializers:
 * W and B may feed other nodes.
 *
 * A BatchNormalization that cannot fold (DenseNet's and pre-activation
 * ResNets' BN-ReLU before each convolution, after a Concat), its
 * parameters initializers of the input's type, becomes the affine map it
 * is, y = x * s + t per channel:
 *
 *   Mul(x, s[C, 1, ..., 1]) then Add(., t[C, 1, ..., 1]),
 *   s = scale / sqrt(var + epsilon), t = beta - mean * s
 *
 * (ONNX Runtime's optimizer does not; TVM's SimplifyInference does the
 * same). Elementwise, the layout pass runs both on blocked twins with the
 * convolutions around them, and fusion merges them into their neighbours:
 * kept whole, every DenseNet join went back to NCHW for its BN. Others
 * stay for the lowering. */
#include "graph/rewrite.h"

#include <math.h>
#include <string.h>

static double elem(const gr_tensor *t, int64_t i)
{
    if (t->elem_type == GR_DOUBLE) return ((const double *)t->data)[i];
    return ((const float *)t->data)[i];
}

static bool floating(const gr_tensor *t)
{
    return t->elem_type == GR_FLOAT || t->elem_type == GR_DOUBLE;
}

/* A per-channel initializer of m floats. */
static const gr_tensor *channel_param(const gr_graph *g, int v, int64_t m)
{
    if (!gr_rw_is_fixed_const(g, v)) return NULL;
    const gr_tensor *t = g->values[v].data;
    return floating(t) && t->ndim == 1 && t->numel == m ? t : NULL;
}

/* The Conv that bn (node b) can fold into, or -1. */
static int foldable(const gr_graph *g, int b)
{
    const gr_node *bn = &g->nodes[b];
    if (!gr_rw_is_op(bn, "BatchNormalization") || bn->n_inputs < 5 || bn->n_outputs < 1 ||
        bn->outputs[0] < 0)
        return -1;
    for (int k = 1; k < bn->n_outputs; k++)
        if (bn->outputs[k] >= 0) return -1; /* training outputs */
    const gr_attr *tm = gr_node_attr(bn, "training_mode");
    if (tm && tm->kind == GR_ATTR_INT && tm->i != 0) return -1;
    int x = bn->inputs[0];
    if (x < 0 || g->values[x].kind != GR_VALUE_NODE || g->values[x].producer < 0) return -1;
    int c = g->values[x].producer;
    const gr_node *conv = &g->nodes[c];
    if (!gr_rw_is_op(conv, "Conv") || conv->n_outputs < 1 || conv->outputs[0] != x ||
        conv->n_inputs < 2)
        return -1;
    /* The Conv's output must mean "before the normalization" nowhere else. */
    if (gr_rw_uses(g, x) != 1) return -1;
    int w = conv->inputs[1];
    if (!gr_rw_is_fixed_const(g, w)) return -1;
    const gr_tensor *wt = g->values[w].data;
    if (!floating(wt) || wt->ndim < 2 || wt->shape[0] < 1) return -1;
    int64_t m = wt->shape[0];
    if (conv->n_inputs >= 3 && conv->inputs[2] >= 0) {
        const gr_tensor *bt = channel_param(g, conv->inputs[2], m);
        if (!bt || bt->elem_type != wt->elem_type) return -1;
    }
    for (int k = 1; k < 5; k++)
        if (!channel_param(g, bn->inputs[k], m)) return -1;
    if (!gr_rw_can_replace(g, bn->outputs[0], x)) return -1;
    return c;
}

/* Whether node b is a BatchNormalization in inference form whose
 * parameters are initializers of its input's type (float32 or float64),
 * the input of rank 2 or more with known channels: the affine rewrite's
 * condition (checked after folding, on a node that did not fold). Opset 7
 * or later: before it Mul and Add broadcast only with an attribute. */
static bool affine_able(const gr_model *m, const gr_graph *g, int b)
{
    const gr_node *bn = &g->nodes[b];
    if (m->opset < 7 || !gr_rw_is_op(bn, "BatchNormalization") || bn->n_inputs < 5 ||
        bn->n_outputs < 1 || bn->outputs[0] < 0 || bn->inputs[0] < 0)
        return false;
    for (int k = 1; k < bn->n_outputs; k++)
        if (bn->outputs[k] >= 0) return false;
    const gr_attr *tm = gr_node_attr(bn, "training_mode");
    if (tm && tm->kind == GR_ATTR_INT && tm->i != 0) return false;
    const gr_type *xt = &g->values[bn->inputs[0]].type;
    if (xt->kind != GR_TYPE_TENSOR || xt->ndim < 2 || xt->ndim > 8 || xt->shape[1] < 1 ||
        (xt->elem_type != GR_FLOAT && xt->elem_type != GR_DOUBLE))
        return false;
    for (int k = 1; k < 5; k++) {
        const gr_tensor *t = channel_param(g, bn->inputs[k], xt->shape[1]);
        if (!t || t->elem_type != xt->elem_type) return false;
    }
    return true;
}

/* A node of op reading a and b and writing out, a new value of type xt
 * when out < 0. Its output value, -1 with *err when out of memory. */
static int emit_binary(gr_rw *rw, gr_rw_list *l, const char *op, const char *name, int a, int b,
                       int out, const gr_type *xt)
{
    if (out < 0) out = gr_rw_add_node_value(rw, name, xt->elem_type, xt->ndim, xt->shape);
    return out < 0 ? -1 : gr_rw_emit_op(rw, l, op, name, 2, (int[]){a, b}, out, NULL, 0);
}

/* bn (node b) as Mul then Add by per-channel initializers, appended to l. */
static bool to_affine(gr_rw *rw, gr_rw_list *l, int b)
{
    gr_graph *g = rw->g;
    const gr_node *bn = &g->nodes[b];
    const gr_type xt = g->values[bn->inputs[0]].type; /* g->values may move below */
    int64_t C = xt.shape[1], ps[8] = {C, 1, 1, 1, 1, 1, 1, 1};
    const gr_tensor *scale = g->values[bn->inputs[1]].data, *beta = g->values[bn->inputs[2]].data;
    const gr_tensor *mean = g->values[bn->inputs[3]].data, *var = g->values[bn->inputs[4]].data;
    const gr_attr *ea = gr_node_attr(bn, "epsilon");
    double eps = ea && ea->kind == GR_ATTR_FLOAT ? ea->f : 1e-5;
    gr_tensor *st = gr_rw_new_tensor(rw, xt.elem_type, xt.ndim - 1, ps);
    gr_tensor *tt = st ? gr_rw_new_tensor(rw, xt.elem_type, xt.ndim - 1, ps) : NULL;
    if (!tt) return false;
    for (int64_t k = 0; k < C; k++) {
        double sk = elem(scale, k) / sqrt(elem(var, k) + eps), tk = elem(beta, k) - elem(mean, k) * sk;
        if (xt.elem_type == GR_DOUBLE)
            ((double *)st->data)[k] = sk, ((double *)tt->data)[k] = tk;
        else
            ((float *)st->data)[k] = (float)sk, ((float *)tt->data)[k] = (float)tk;
    }
    char name[1024];
    int x = bn->inputs[0], y = bn->outputs[0];
    const char *bname = bn->name && *bn->name ? bn->name : g->values[y].name;
    snprintf(name, sizeof name, "%s_scale", bname);
    int sv = gr_rw_add_const(rw, name, st);
    snprintf(name, sizeof name, "%s_shift", bname);
    int tv = sv >= 0 ? gr_rw_add_const(rw, name, tt) : -1;
    if (tv < 0) return false;
    snprintf(name, sizeof name, "%s/Mul", bname);
    int mv = emit_binary(rw, l, "Mul", name, x, sv, -1, &xt);
    snprintf(name, sizeof name, "%s/Add", bname);
    return mv >= 0 && emit_binary(rw, l, "Add", name, mv, tv, y, &xt) >= 0;
}

/* Every BatchNormalization left that affine_able accepts, rewritten by
 * to_affine; how many. -1 with *err when out of memory. */
static int rewrite_affine(gr_rw *rw)
{
    gr_graph *g = rw->g;
    int cap = 0, n = 0;
    for (int i = 0; i < g->n_nodes; i++) cap += affine_able(rw->m, g, i) ? 2 : 1;
    if (cap == g->n_nodes) return 0;
    gr_rw_list l;
    bool ok = gr_rw_list_init(rw, &l, cap);
    for (int i = 0; ok && i < g->n_nodes; i++) {
        if (affine_able(rw->m, g, i)) {
            ok = to_affine(rw, &l, i);
            n++;
        } else {
            ok = gr_rw_emit(rw, &l, &g->nodes[i]);
        }
    }
    if (!ok) return -1;
    gr_rw_list_install(rw, &l);
    return n;
}

static bool fold(gr_rw *rw, int b, int c)
{
    gr_graph *g = rw->g;
    const gr_node *bn = &g->nodes[b];
    const gr_tensor *wt = g->values[g->nodes[c].inputs[1]].data;
    const gr_tensor *bt = g->nodes[c].n_inputs >= 3 && g->nodes[c].inputs[2] >= 0
                              ? g->values[g->nodes[c].inputs[2]].data : NULL;
    const gr_tensor *scale = g->values[bn->inputs[1]].data, *beta = g->values[bn->inputs[2]].data;
    const gr_tensor *mean = g->values[bn->inputs[3]].data, *var = g->values[bn->inputs[4]].data;
    const gr_attr *ea = gr_node_attr(bn, "epsilon");
    double eps = ea && ea->kind == GR_ATTR_FLOAT ? ea->f : 1e-5;
    int64_t m = wt->shape[0], per = m ? wt->numel / m : 0;
    gr_tensor *w2 = gr_rw_new_tensor(rw, wt->elem_type, wt->ndim, wt->shape);
    gr_tensor *b2 = w2 ? gr_rw_new_tensor(rw, wt->elem_type, 1, &m) : NULL;
    if (!b2) return false;
    for (int64_t k = 0; k < m; k++) {
        double s = elem(scale, k) / sqrt(elem(var, k) + eps);
        double bias = ((bt ? elem(bt, k) : 0.0) - elem(mean, k)) * s + elem(beta, k);
        for (int64_t j = k * per; j < (k + 1) * per; j++) {
            double w = elem(wt, j) * s;
            if (wt->elem_type == GR_DOUBLE)
                ((double *)w2->data)[j] = w;
            else
                ((float *)w2->data)[j] = (float)w;
        }
        if (wt->elem_type == GR_DOUBLE)
            ((double *)b2->data)[k] = bias;
        else
            ((float *)b2->data)[k] = (float)bias;
    }
    int y = bn->outputs[0], x = bn->inputs[0];
    const char *wname = g->values[g->nodes[c].inputs[1]].name;
    char bname[1024];
    snprintf(bname, sizeof bname, "%s_bias", g->values[x].name);
    int wv = gr_rw_add_const(rw, wname, w2);
    int bv = wv >= 0 ? gr_rw_add_const(rw, bname, b2) : -1;
    int *inputs = bv >= 0 ? gr_arena_alloc(rw->a, 3, sizeof *inputs) : NULL;
    if (!inputs) {
        gr_set_err(rw->err, "%s: out of memory in a graph pass", rw->m->path);
        return false;
    }
    gr_node *conv = &g->nodes[c];
    inputs[0] = conv->inputs[0];
    inputs[1] = wv;
    inputs[2] = bv;
    conv->inputs = inputs;
    conv->n_inputs = 3;
    return gr_rw_replace(rw, y, x);
}

int gr_pass_fold_batchnorm(gr_model *m, gr_pass_stats *st, char **err)
{
    gr_rw rw;
    gr_rw_begin(&rw, m, st, err);
    bool *dead = gr_arena_alloc(rw.a, rw.g->n_nodes ? (size_t)rw.g->n_nodes : 1, sizeof *dead);
    if (!dead) {
        gr_set_err(err, "%s: out of memory in a graph pass", m->path);
        return -1;
    }
    int folded = 0;
    for (int b = 0; b < rw.g->n_nodes; b++) {
        int c = foldable(rw.g, b);
        if (c < 0) continue;
        if (!fold(&rw, b, c)) return -1;
        dead[b] = true;
        folded++;
    }
    if (!gr_rw_remove_nodes(&rw, dead)) return -1;
    int affine = rewrite_affine(&rw);
    if (affine < 0) {
        if (err && !*err) gr_set_err(err, "%s: out of memory in a graph pass", m->path);
        gr_rw_end(&rw, false);
        return -1;
    }
    return gr_rw_end(&rw, true) ? folded + affine : -1;
}
