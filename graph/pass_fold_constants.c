/* graph/pass_fold_constants.c — nodes whose outputs shape inference
 * already knows (Constant, Shape of a static value, ConstantOfShape,
 * small integer arithmetic on those: gr_value.data) become initializers
 * and the nodes go (onnxruntime/core/optimizer/constant_folding.cc does
 * the same by running the nodes; here inference has run them).
 *
 * The outputs turn into GR_VALUE_CONST values rather than staying node
 * outputs with data, so that an executor sees one kind of known tensor
 * (initializers) and runs every node it is given. */
#include "graph/rewrite.h"

int gr_pass_fold_constants(gr_model *m, gr_pass_stats *st, char **err)
{
    gr_rw rw;
    gr_rw_begin(&rw, m, st, err);
    gr_graph *g = rw.g;
    bool *dead = gr_arena_alloc(rw.a, g->n_nodes ? (size_t)g->n_nodes : 1, sizeof *dead);
    if (!dead) {
        gr_set_err(err, "%s: out of memory in a graph pass", m->path);
        return -1;
    }
    int folded = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        int known = 0, present = 0;
        for (int k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k] < 0) continue;
            present++;
            known += g->values[n->outputs[k]].data != NULL;
        }
        if (!present || known != present) continue;
        for (int k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k] < 0) continue;
            gr_value *v = &g->values[n->outputs[k]];
            /* Inference may share one tensor among values (Identity): each
             * initializer gets its own header, named like its value. */
            gr_tensor *t = gr_arena_alloc(rw.a, 1, sizeof *t);
            if (!t) {
                gr_set_err(err, "%s: out of memory in a graph pass", m->path);
                return -1;
            }
            *t = *v->data;
            t->name = v->name;
            v->data = t;
            v->kind = GR_VALUE_CONST;
            /* The node still lists it until it is removed just below. */
            v->producer = -1;
        }
        dead[i] = true;
        folded++;
    }
    /* gr_rw_remove_nodes checks that no removed output is still used; the
     * folded outputs are initializers now, which nothing needs to write. */
    for (int i = 0; i < g->n_nodes; i++) {
        if (!dead[i]) continue;
        gr_node *n = &g->nodes[i];
        n->n_outputs = 0;
    }
    if (!gr_rw_remove_nodes(&rw, dead)) return -1;
    return gr_rw_end(&rw, true) ? folded : -1;
}
