/* graph/lower_optimizer.c — Adagrad, Momentum and Adam (checked by
 * infer_optimizer.c; ONNX's definitions in the ai.onnx.preview.training
 * domain): one elementwise compute per output, in float64, rounded to
 * the weights' type. With g = norm_coefficient X + G:
 *   Adagrad  r = R / (1 + T decay_factor); H' = H + g^2;
 *            X' = X - r g / (sqrt(H') + epsilon)
 *   Momentum b = beta if T > 0 else 1; V' = alpha V + b g;
 *            X' = X - R V' (standard) or X - R (g + alpha V') (nesterov)
 *   Adam     V' = alpha V + (1 - alpha) g; H' = beta H + (1 - beta) g^2;
 *            r = R sqrt(1 - beta^T) / (1 - alpha^T) if T > 0 else R;
 *            X' = (1 - norm_coefficient_post) (X - r V' / (sqrt(H') + epsilon))
 * FLOPs: about 10 per element and output. */
#include <string.h>

#include "graph/infer_internal.h"
#include "graph/lower.h"

static double fattr(gr_lctx *c, const char *name, double dflt)
{
    const gr_attr *a = gr_node_attr(c->n, name);
    return a && a->kind == GR_ATTR_FLOAT ? a->f : dflt;
}

static bool lower_optimizer(gr_lctx *c)
{
    te_ctx *ctx = c->ctx;
    const char *op = c->n->op_type;
    int og, ig = gr_optimizer_groups(op, &og);
    int n = (c->n_inputs - 2) / ig;
    te_tensor *R, *T;
    if (!gr_lin(c, 0, "R", &R) || !gr_lin(c, 1, "T", &T)) return false;
    te_expr *zero = te_int(ctx, 0);
    te_expr *r = te_cast(TE_FLOAT64, te_read(R, zero)), *t = te_read(T, zero);
    te_expr *tf = te_cast(TE_FLOAT64, t), *tpos = te_gt(t, te_int(ctx, 0));
#define F(v) te_const(ctx, TE_FLOAT64, (v))
    bool adam = strcmp(op, "Adam") == 0, momentum = strcmp(op, "Momentum") == 0;
    double norm = fattr(c, "norm_coefficient", 0);
    for (int i = 0; i < n; i++) {
        te_tensor *in[4];
        for (int gi = 0; gi < ig; gi++)
            if (!gr_lin(c, 2 + gi * n + i, gi ? "state" : "X", &in[gi])) return false;
        for (int go = 0; go < og; go++) {
            int k = go * n + i;
            if (k >= c->n_outputs || !c->tout[k]) continue;
            gr_loutput o;
            if (!gr_lout_get(c, k, &o)) return false;
            te_expr *v[4];
            for (int gi = 0; gi < ig; gi++)
                v[gi] = te_cast(TE_FLOAT64, te_read_n(in[gi], o.nd, o.ax));
            te_expr *x = v[0], *g = te_add(te_mul(F(norm), x), v[1]), *y;
            if (adam) {
                double alpha = fattr(c, "alpha", 0.9), beta = fattr(c, "beta", 0.999), eps = fattr(c, "epsilon", 1e-6);
                te_expr *vn = te_add(te_mul(F(alpha), v[2]), te_mul(F(1 - alpha), g));
                te_expr *hn = te_add(te_mul(F(beta), v[3]), te_mul(F(1 - beta), te_mul(g, g)));
                if (go == 1) {
                    y = vn;
                } else if (go == 2) {
                    y = hn;
                } else {
                    te_expr *bt = te_pow(F(beta), tf), *at = te_pow(F(alpha), tf);
                    te_expr *ra = te_select(tpos, te_div(te_mul(r, te_sqrt(te_sub(F(1), bt))), te_sub(F(1), at)), r);
                    te_expr *xn = te_sub(x, te_mul(ra, te_div(vn, te_add(te_sqrt(hn), F(eps)))));
                    y = te_mul(F(1 - fattr(c, "norm_coefficient_post", 0)), xn);
                }
            } else if (momentum) {
                double alpha = fattr(c, "alpha", 0), beta = fattr(c, "beta", 0);
                const gr_attr *m = gr_node_attr(c->n, "mode");
                bool nesterov = m && m->kind == GR_ATTR_STRING && strcmp(m->s.data, "nesterov") == 0;
                te_expr *vn = te_add(te_mul(F(alpha), v[2]), te_mul(te_select(tpos, F(beta), F(1)), g));
                y = go == 1 ? vn : te_sub(x, te_mul(r, nesterov ? te_add(g, te_mul(F(alpha), vn)) : vn));
            } else {
                double decay = fattr(c, "decay_factor", 0), eps = fattr(c, "epsilon", 0);
                te_expr *hn = te_add(v[2], te_mul(g, g));
                te_expr *ra = te_div(r, te_add(F(1), te_mul(tf, F(decay))));
                y = go == 1 ? hn : te_sub(x, te_div(te_mul(ra, g), te_add(te_sqrt(hn), F(eps))));
            }
            double elems = gr_loutput_numel(&o);
            c->flops += 10 * elems;
            if (!gr_lout(c, k, o.nd, o.ax, te_cast(o.dt, y))) return false;
        }
    }
#undef F
    return true;
}

const gr_lower_rule gr_lower_rules_optimizer[] = {
    {"ai.onnx.preview.training", "Adagrad", lower_optimizer, 0, 0},
    {"ai.onnx.preview.training", "Momentum", lower_optimizer, 0, 0},
    {"ai.onnx.preview.training", "Adam", lower_optimizer, 0, 0},
    {0},
};
