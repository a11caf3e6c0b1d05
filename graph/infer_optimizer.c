/* graph/infer_optimizer.c — the optimizers of domain
 * ai.onnx.preview.training (version 1): Adagrad, Momentum and Adam. Each
 * takes a learning rate R and an update count T (scalars), then n
 * tensors X (the weights) and one group per state of the same shapes
 * (G gradients; Adagrad H; Momentum V; Adam V, H), and writes the new X
 * and states, group by group (Adagrad X', H'; Momentum X', V'; Adam X',
 * V', H'). Deterministic elementwise updates: what a training step
 * computes, run as inference runs any other node. */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <string.h>

/* Tensor groups after R and T (inputs) and of the outputs. */
int gr_optimizer_groups(const char *op, int *out_groups)
{
    if (strcmp(op, "Adam") == 0) {
        *out_groups = 3;
        return 4;
    }
    *out_groups = 2;
    return 3;
}

bool gr_infer_optimizer(gr_ictx *c)
{
    int og, ig = gr_optimizer_groups(c->n->op_type, &og);
    const gr_type *r, *t;
    if (!gr_iin_req(c, 0, "R", &r) || !gr_iin_req(c, 1, "T", &t)) return false;
    if ((r->elem_type != GR_FLOAT && r->elem_type != GR_DOUBLE) || r->ndim != 0)
        return gr_ifail(c, "input R must be a float or double scalar");
    if (t->elem_type != GR_INT64 || t->ndim != 0) return gr_ifail(c, "input T must be an int64 scalar");
    int rest = c->n->n_inputs - 2;
    if (rest < ig || rest % ig != 0)
        return gr_ifail(c, "%d tensor inputs after R and T; %s takes %d per weight tensor", rest, c->n->op_type, ig);
    int n = rest / ig;
    if (c->n->n_outputs > og * n)
        return gr_ifail(c, "%d outputs; %s writes at most %d for %d weight tensors", c->n->n_outputs, c->n->op_type,
                        og * n, n);
    if (strcmp(c->n->op_type, "Momentum") == 0) {
        const gr_attr *m = gr_node_attr(c->n, "mode");
        if (!m || m->kind != GR_ATTR_STRING || (strcmp(m->s.data, "standard") != 0 && strcmp(m->s.data, "nesterov") != 0))
            return gr_ifail(c, "attribute 'mode' must be standard or nesterov");
        static const char *const need[] = {"alpha", "beta", "norm_coefficient"};
        for (int i = 0; i < 3; i++) {
            const gr_attr *a = gr_node_attr(c->n, need[i]);
            if (!a || a->kind != GR_ATTR_FLOAT) return gr_ifail(c, "attribute '%s' (a float) is required", need[i]);
        }
    }
    for (int i = 0; i < n; i++) {
        const gr_type *x;
        if (!gr_iin_req(c, 2 + i, "X", &x)) return false;
        if (x->elem_type != GR_FLOAT && x->elem_type != GR_DOUBLE)
            return gr_ifail(c, "input %d is %s; the weights must be float or double", 2 + i,
                            gr_elem_type_name(x->elem_type));
        for (int gi = 1; gi < ig; gi++) {
            const gr_type *s;
            int k = 2 + gi * n + i;
            if (!gr_iin_req(c, k, "state", &s)) return false;
            bool same = s->elem_type == x->elem_type && s->ndim == x->ndim;
            for (int d = 0; same && d < x->ndim; d++) same = s->shape[d] == x->shape[d];
            if (!same) return gr_ifail(c, "input %d must have input %d's type and shape (the weight it updates)", k, 2 + i);
        }
        for (int go = 0; go < og; go++)
            if (!gr_iout(c, go * n + i, x->elem_type, x->ndim, x->shape)) return false;
    }
    return true;
}
