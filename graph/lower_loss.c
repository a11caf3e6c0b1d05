/* graph/lower_loss.c — NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss (shapes, types and attributes checked by
 * infer_loss.c).
 *
 * With P the log-probabilities [N, C, d...] (NLL's input; for
 * SoftmaxCrossEntropyLoss the log-softmax of the scores over C, output 1
 * when asked for), t = target[n, d...] and w = weight[t] (1 without
 * weights), the loss at [n, d...] is -P[n, t, d...] w, and 0 (weight 0)
 * where t is ignore_index. Reductions, as ONNX's reference computes them:
 * 'none' the loss itself, 'sum' its sum, 'mean' its sum divided by the
 * sum of the weights when there are weights or an ignore_index (NaN when
 * every target is ignored: 0 / 0), else by the count of targets.
 *
 * A target outside [0, C) that is not ignore_index, which ONNX makes an
 * error, reads class 0 or C - 1 (clamped): a read never leaves the input.
 *
 * FLOPs: 2 per loss element (product, negation) plus one per element
 * summed; the log-softmax 6 per input element (Softmax's count plus the
 * log and subtraction). */
#include "graph/infer_internal.h"
#include "graph/lower.h"

#include <string.h>

typedef struct {
    te_tensor *P, *T, *W; /* log-probabilities, target, weights (or NULL) */
    bool has_ii;
    int64_t ii, C;
    int r;                /* P's rank; the target's is r - 1 */
    te_dtype dt;
} loss_in;

/* The loss (weight_only: the weight) at target coordinates ti[0..r-2]. */
static te_expr *loss_at(gr_lctx *c, const loss_in *L, te_expr *const *ti, bool weight_only)
{
    te_ctx *ctx = c->ctx;
    te_expr *t = te_cast(TE_INT64, te_read_n(L->T, L->r - 1, ti));
    te_expr *tc = te_max(te_min(t, te_int(ctx, L->C - 1)), te_int(ctx, 0));
    te_expr *w = L->W ? te_read(L->W, tc) : te_const(ctx, L->dt, 1);
    te_expr *v;
    if (weight_only) {
        v = w;
    } else {
        te_expr *pi[TE_MAX_DIMS];
        pi[0] = ti[0];
        pi[1] = tc;
        for (int d = 2; d < L->r; d++) pi[d] = ti[d - 1];
        te_expr *p = te_read_n(L->P, L->r, pi);
        v = te_sub(te_const(ctx, L->dt, 0), L->W ? te_mul(p, w) : p);
    }
    if (!L->has_ii) return v;
    return te_select(te_eq(t, te_int(ctx, L->ii)), te_const(ctx, L->dt, 0), v);
}

/* The sum of the loss (or of the weights) over every target as a stage
 * of shape [1]. */
static te_tensor *sum_stage(gr_lctx *c, const loss_in *L, const char *suffix, bool weight_only)
{
    te_expr *rax[TE_MAX_DIMS], *one[1];
    const gr_type *tt = c->tin[1];
    int64_t ts[TE_MAX_DIMS], s1[1] = {1};
    for (int d = 0; d < L->r - 1; d++) ts[d] = tt->shape[d];
    if (!gr_lfresh_axes(c, "r", true, L->r - 1, ts, rax) || !gr_lfresh_axes(c, "s", false, 1, s1, one))
        return NULL;
    te_expr *body = te_reduce_n(TE_REDUCE_SUM, loss_at(c, L, rax, weight_only), L->r - 1, rax);
    return gr_lstage(c, suffix, 1, one, body);
}

/* Output 0 from the log-probabilities L->P. */
static bool loss_output(gr_lctx *c, loss_in *L)
{
    gr_loutput o;
    if (!gr_lout_get(c, 0, &o)) return false;
    const gr_attr *ia = gr_node_attr(c->n, "ignore_index");
    L->has_ii = ia != NULL;
    L->ii = ia ? ia->i : 0;
    L->C = L->P->shape[1];
    L->r = L->P->ndim;
    L->dt = o.dt;
    const gr_attr *ra = gr_node_attr(c->n, "reduction");
    const char *red = ra && ra->kind == GR_ATTR_STRING && ra->s.data ? ra->s.data : "mean";
    double count = 1;
    for (int d = 0; d < L->r - 1; d++) count *= (double)c->tin[1]->shape[d];
    c->flops += 3 * count;
    if (strcmp(red, "none") == 0) return gr_lout(c, 0, o.nd, o.ax, loss_at(c, L, o.ax, false));
    te_tensor *S = sum_stage(c, L, "sum", false);
    if (!S) return false;
    te_expr *zero = te_int(c->ctx, 0), *total = te_read(S, zero);
    if (strcmp(red, "sum") == 0) return gr_lout(c, 0, o.nd, o.ax, total);
    if (!L->W && !L->has_ii) return gr_lout(c, 0, o.nd, o.ax, te_div(total, te_const(c->ctx, o.dt, count)));
    te_tensor *SW = sum_stage(c, L, "weights", true);
    if (!SW) return false;
    c->flops += count;
    return gr_lout(c, 0, o.nd, o.ax, te_div(total, te_read(SW, zero)));
}

static bool lower_nll(gr_lctx *c)
{
    loss_in L = {0};
    if (!gr_lin(c, 0, "input", &L.P) || !gr_lin(c, 1, "target", &L.T)) return false;
    if (c->n_inputs > 2 && c->tin[2] && !gr_lin(c, 2, "weight", &L.W)) return false;
    return loss_output(c, &L);
}

/* log_softmax over C: x - max - log(sum(exp(x - max))), no exp that
 * overflows and no log of one that underflowed. */
static te_tensor *log_softmax(gr_lctx *c, te_tensor *X)
{
    int r = X->ndim;
    int64_t ks[TE_MAX_DIMS], cs[1] = {X->shape[1]};
    for (int d = 0; d < r; d++) ks[d] = d == 1 ? 1 : X->shape[d];
    te_expr *ax[TE_MAX_DIMS], *rc[1], *idx[TE_MAX_DIMS], *st[TE_MAX_DIMS];
    if (!gr_lfresh_axes(c, "m", false, r, ks, ax) || !gr_lfresh_axes(c, "c", true, 1, cs, rc)) return NULL;
    for (int d = 0; d < r; d++) idx[d] = d == 1 ? rc[0] : ax[d];
    te_tensor *M = gr_lstage(c, "max", r, ax, te_reduce_n(TE_REDUCE_MAX, te_read_n(X, r, idx), 1, rc));
    if (!M) return NULL;
    if (!gr_lfresh_axes(c, "n", false, r, ks, ax) || !gr_lfresh_axes(c, "k", true, 1, cs, rc)) return NULL;
    for (int d = 0; d < r; d++) {
        idx[d] = d == 1 ? rc[0] : ax[d];
        st[d] = d == 1 ? te_int(c->ctx, 0) : ax[d];
    }
    te_expr *e = te_exp(te_sub(te_read_n(X, r, idx), te_read_n(M, r, st)));
    te_tensor *S = gr_lstage(c, "sum", r, ax, te_reduce_n(TE_REDUCE_SUM, e, 1, rc));
    if (!S) return NULL;
    if (!gr_lfresh_axes(c, "p", false, r, X->shape, ax)) return NULL;
    for (int d = 0; d < r; d++) st[d] = d == 1 ? te_int(c->ctx, 0) : ax[d];
    te_expr *lp = te_sub(te_sub(te_read_n(X, r, ax), te_read_n(M, r, st)), te_log(te_read_n(S, r, st)));
    double n = 1;
    for (int d = 0; d < r; d++) n *= (double)X->shape[d];
    c->flops += 6 * n;
    /* Output 1 when asked for: the log-probabilities themselves. */
    if (c->n_outputs > 1 && c->tout[1]) {
        if (!gr_lout(c, 1, r, ax, lp)) return NULL;
        return c->out[1];
    }
    return gr_lstage(c, "logp", r, ax, lp);
}

static bool lower_sce(gr_lctx *c)
{
    loss_in L = {0};
    te_tensor *X;
    if (!gr_lin(c, 0, "scores", &X) || !gr_lin(c, 1, "labels", &L.T)) return false;
    if (c->n_inputs > 2 && c->tin[2] && !gr_lin(c, 2, "weights", &L.W)) return false;
    if (!te_dtype_is_float(X->dtype))
        return gr_lfail(c, "input scores is %s; Loom computes float and double only", te_dtype_str(X->dtype));
    if (!(L.P = log_softmax(c, X))) return false;
    return loss_output(c, &L);
}

const gr_lower_rule gr_lower_rules_loss[] = {
    {"", "NegativeLogLikelihoodLoss", lower_nll, 0, 0},
    {"", "SoftmaxCrossEntropyLoss", lower_sce, 0, 0},
    {0},
};
