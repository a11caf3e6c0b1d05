/* graph/fuse_attention.c — which chains of a model's main graph are
 * scaled dot-product attention, MatMul(Q, K^T) -> [Div|Mul by a constant]
 * -> [Add(mask)] -> Softmax(last axis) -> MatMul(P, V), so that fusion
 * (fuse.c) can run each as one kernel.
 *
 * Why a rule of its own: by TVM's rules the chain is three groups (an
 * out-fusable MatMul takes no reduce consumer, a Softmax no out-fusable
 * one), and the batch x heads x M x N scores then go through memory twice
 * (BERT-base: 12 x 128 x 128 floats per layer, written and read back by
 * each of the three kernels). In one group the schedule computes the
 * scores of a block of query rows next to the product that consumes them
 * (autotune/default_attention.c).
 *
 * The chain is accepted only where that is sound and the rows line up:
 * every intermediate value has exactly one reader (the next node of the
 * chain) and is no graph output, so nothing outside needs the scores; the
 * softmax runs along the last axis, the K-length one the first MatMul
 * produces; the second MatMul reads the probabilities as its left operand
 * (row i of P gives row i of the output) and keeps their leading
 * dimensions; every value is float.
 */
#include <string.h>

#include "graph/fuse.h"

static bool default_domain(const gr_node *n)
{
    return !n->domain || !*n->domain || strcmp(n->domain, "ai.onnx") == 0;
}

static bool is_op(const gr_graph *g, int node, const char *op)
{
    return node >= 0 && node < g->n_nodes && g->nodes[node].op_type &&
           strcmp(g->nodes[node].op_type, op) == 0 && default_domain(&g->nodes[node]);
}

/* A float tensor value of known shape (no unknown extent). */
static const gr_type *float_type(const gr_graph *g, int v)
{
    if (v < 0 || v >= g->n_values) return NULL;
    const gr_type *t = &g->values[v].type;
    if (t->kind != GR_TYPE_TENSOR || t->elem_type != GR_FLOAT || t->ndim < 0) return NULL;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] <= 0) return NULL;
    return t;
}

static bool same_shape(const gr_type *a, const gr_type *b)
{
    if (!a || !b || a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

/* A value computed by a run node whose only reader is one input slot of
 * one node (returned; -1 otherwise), and which is no graph output. */
static int only_reader(const gr_graph *g, int v)
{
    if (v < 0 || g->values[v].kind != GR_VALUE_NODE || g->values[v].data) return -1;
    for (int o = 0; o < g->n_outputs; o++)
        if (g->outputs[o] == v) return -1;
    int reader = -1, uses = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] == v) {
                reader = i;
                uses++;
            }
    return uses == 1 ? reader : -1;
}

/* The single output of node i, or -1. */
static int out0(const gr_graph *g, int i)
{
    const gr_node *n = &g->nodes[i];
    return n->n_outputs == 1 ? n->outputs[0] : -1;
}

/* A scalar the model fixes: an initializer or contents inference knows. */
static bool constant_scalar(const gr_graph *g, int v)
{
    if (v < 0 || v >= g->n_values) return false;
    const gr_value *x = &g->values[v];
    if (x->kind != GR_VALUE_CONST && !x->data) return false;
    const gr_type *t = float_type(g, v);
    if (!t) return false;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] != 1) return false;
    return true;
}

int gr_attention_chain(const gr_model *m, int softmax, int *nodes)
{
    if (!m || !m->graph || !nodes) return 0;
    const gr_graph *g = m->graph;
    if (!is_op(g, softmax, "Softmax")) return 0;
    const gr_node *sm = &g->nodes[softmax];
    if (sm->n_inputs != 1) return 0;
    int x = sm->inputs[0], p = out0(g, softmax);
    const gr_type *tx = float_type(g, x), *tp = float_type(g, p);
    if (!tx || !same_shape(tx, tp) || tx->ndim < 2) return 0;
    int r = tx->ndim;
    int64_t axis = m->opset >= 13 ? -1 : 1;
    const gr_attr *a = gr_node_attr(sm, "axis");
    if (a && a->kind == GR_ATTR_INT) axis = a->i;
    if (axis < 0) axis += r;
    /* Before opset 13 softmax flattens the dimensions from `axis` on: the
     * last axis alone either way. */
    if (axis != r - 1) return 0;

    /* Forward: P's only reader is a MatMul taking it as A. */
    int mm2 = only_reader(g, p);
    if (!is_op(g, mm2, "MatMul") || g->nodes[mm2].n_inputs != 2 || g->nodes[mm2].inputs[0] != p)
        return 0;
    int vv = g->nodes[mm2].inputs[1], o = out0(g, mm2);
    const gr_type *tv = float_type(g, vv), *to = float_type(g, o);
    if (!tv || !to || tv->ndim < 2 || to->ndim != r || tv->shape[tv->ndim - 2] != tx->shape[r - 1])
        return 0;
    for (int d = 0; d < r - 1; d++)
        if (to->shape[d] != tx->shape[d]) return 0;

    /* Backward: [Add(mask)] <- [Div|Mul by a constant] <- MatMul. */
    int chain[5], n = 0;
    int v = x;
    int prod = g->values[v].kind == GR_VALUE_NODE ? g->values[v].producer : -1;
    if (only_reader(g, v) != softmax) return 0;
    if (is_op(g, prod, "Add") && g->nodes[prod].n_inputs == 2) {
        const gr_node *add = &g->nodes[prod];
        int side = add->inputs[0];
        for (int k = 0; k < 2; k++) {
            int in = add->inputs[k], other = add->inputs[1 - k];
            if (in == other || !same_shape(float_type(g, in), tx) || !float_type(g, other)) continue;
            if (g->values[in].kind != GR_VALUE_NODE || only_reader(g, in) != prod) continue;
            side = in;
            chain[n++] = prod;
            break;
        }
        if (n == 1) {
            v = side;
            prod = g->values[v].producer;
        }
    }
    if ((is_op(g, prod, "Div") || is_op(g, prod, "Mul")) && g->nodes[prod].n_inputs == 2) {
        const gr_node *sc = &g->nodes[prod];
        /* x / c, or a product either way round. */
        int kmax = is_op(g, prod, "Mul") ? 2 : 1;
        for (int k = 0; k < kmax; k++) {
            int in = sc->inputs[k], other = sc->inputs[1 - k];
            if (!same_shape(float_type(g, in), tx) || !constant_scalar(g, other)) continue;
            if (g->values[in].kind != GR_VALUE_NODE || only_reader(g, in) != prod) continue;
            chain[n++] = prod;
            v = in;
            prod = g->values[v].producer;
            break;
        }
    }
    if (!is_op(g, prod, "MatMul") || g->nodes[prod].n_inputs != 2) return 0;
    const gr_node *mm1 = &g->nodes[prod];
    const gr_type *qa = float_type(g, mm1->inputs[0]), *kb = float_type(g, mm1->inputs[1]);
    if (!qa || !kb || qa->ndim < 2 || kb->ndim < 2 || !same_shape(float_type(g, v), tx))
        return 0;
    if (n == 0 && only_reader(g, v) != softmax) return 0;
    chain[n++] = prod;
    /* Node order: the first MatMul, the scaling, the mask, Softmax, the
     * second MatMul. */
    int k = 0;
    for (int i = n - 1; i >= 0; i--) nodes[k++] = chain[i];
    nodes[k++] = softmax;
    nodes[k++] = mm2;
    return k;
}
