/* graph/pass_eliminate.c — nodes that do nothing go, then nodes nothing
 * needs (onnxruntime/core/optimizer/identity_elimination.cc,
 * noop_elimination.cc and the graph's dead-node removal):
 *
 *   - Concat's empty pieces (a zero extent: they add no element).
 *   - Identity, Dropout; Reshape, Flatten, Squeeze and Unsqueeze whose output has
 *     the input's shape; Cast to the input's own type; Concat of one
 *     piece. Their readers read
 *     the input instead. One whose output is a graph output stays when
 *     its input cannot take over the output's name (a graph input, or
 *     another graph output): the model's interface does not change.
 *   - Dead code: nodes none of whose outputs reaches a graph output.
 *
 * Dropout whose mask nobody asks for is a no-op too (inference refused
 * every Dropout that would drop anything). */
#include "graph/rewrite.h"

#include <string.h>

static bool default_domain(const gr_node *n) { return !*n->domain || strcmp(n->domain, "ai.onnx") == 0; }

static bool same_type(const gr_type *a, const gr_type *b)
{
    if (a->kind != GR_TYPE_TENSOR || b->kind != GR_TYPE_TENSOR || a->elem_type != b->elem_type ||
        a->ndim != b->ndim || a->ndim < 0)
        return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

/* Whether node n passes its input 0 on unchanged as its output 0. */
static bool is_noop(const gr_graph *g, const gr_node *n)
{
    /* Dropout's mask left out counts as its only output. */
    int nout = strcmp(n->op_type, "Dropout") == 0 && n->n_outputs == 2 && n->outputs[1] < 0 ? 1
                                                                                            : n->n_outputs;
    if (!default_domain(n) || n->n_inputs < 1 || n->inputs[0] < 0 || nout != 1 || n->outputs[0] < 0)
        return false;
    const gr_type *in = &g->values[n->inputs[0]].type, *out = &g->values[n->outputs[0]].type;
    const char *op = n->op_type;
    if (strcmp(op, "Identity") == 0 || strcmp(op, "Dropout") == 0) return true;
    if (strcmp(op, "Reshape") == 0 || strcmp(op, "Flatten") == 0 || strcmp(op, "Squeeze") == 0 ||
        strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Cast") == 0 ||
        (strcmp(op, "Concat") == 0 && n->n_inputs == 1))
        return same_type(in, out);
    return false;
}

/* Drops node n's empty pieces when n is a Concat with elements: no kernel
 * reads an empty tensor (gr_infer_shapes makes them known, never run). */
static void drop_empty_pieces(const gr_graph *g, gr_node *n)
{
    if (!default_domain(n) || strcmp(n->op_type, "Concat") != 0 || n->n_outputs < 1 ||
        n->outputs[0] < 0 || gr_type_empty(&g->values[n->outputs[0]].type))
        return;
    int k2 = 0;
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] < 0 || !gr_type_empty(&g->values[n->inputs[k]].type)) n->inputs[k2++] = n->inputs[k];
    n->n_inputs = k2;
}

int gr_pass_eliminate(gr_model *m, gr_pass_stats *st, char **err)
{
    gr_rw rw;
    gr_rw_begin(&rw, m, st, err);
    gr_graph *g = rw.g;
    size_t nn = g->n_nodes ? (size_t)g->n_nodes : 1;
    bool *dead = gr_arena_alloc(rw.a, nn, sizeof *dead);
    bool *live = gr_arena_alloc(rw.a, g->n_values ? (size_t)g->n_values : 1, sizeof *live);
    if (!dead || !live) {
        gr_set_err(err, "%s: out of memory in a graph pass", m->path);
        return -1;
    }
    int removed = 0;
    for (int i = 0; i < g->n_nodes; i++) drop_empty_pieces(g, &g->nodes[i]);
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        if (!is_noop(g, n) || !gr_rw_replace(&rw, n->outputs[0], n->inputs[0])) continue;
        dead[i] = true;
        removed++;
    }
    /* Backwards from the graph outputs; a node removed above reads
     * nothing any more. */
    for (int i = 0; i < g->n_outputs; i++) live[g->outputs[i]] = true;
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        const gr_node *n = &g->nodes[i];
        if (dead[i]) continue;
        bool needed = false;
        for (int k = 0; k < n->n_outputs; k++) needed |= n->outputs[k] >= 0 && live[n->outputs[k]];
        if (!needed) {
            dead[i] = true;
            removed++;
            continue;
        }
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) live[n->inputs[k]] = true;
    }
    if (!gr_rw_remove_nodes(&rw, dead)) return -1;
    return gr_rw_end(&rw, true) ? removed : -1;
}
