/* graph/lower_qmatmul.c — MatMulInteger and QLinearMatMul (checked by
 * infer_qmatmul.c): MatMul's batched, broadcasting product on operands
 * less their zero points, accumulated in int32 as ONNX defines it
 * (exact while K stays below 33,000: each product is at most 255^2). QLinearMatMul then scales the
 * sum by a_scale b_scale / y_scale in float64, rounds to nearest even,
 * adds y's zero point and saturates to y's type, as ONNX's reference.
 * FLOPs: 2 per multiply-add. */
#include <string.h>

#include "graph/infer_internal.h"
#include "graph/lower.h"

/* Input k (NULL when left out: 0) at row i or column j as type t: one
 * value, or one per row/column. */
static te_expr *per(gr_lctx *c, int k, te_expr *ij, te_dtype t)
{
    te_tensor *P = k < c->n_inputs ? c->in[k] : NULL;
    if (!P) return te_const(c->ctx, t, 0);
    bool one = P->shape[0] == 1 || !ij;
    return te_cast(t, te_read(P, one ? te_int(c->ctx, 0) : ij));
}

static bool lower_qmatmul(gr_lctx *c)
{
    bool qlinear = c->n->op_type[0] == 'Q';
    int ia = 0, ib = qlinear ? 3 : 1, za = 2, zb = qlinear ? 5 : 3;
    te_tensor *A, *B;
    gr_loutput prod;
    te_expr *ai[TE_MAX_DIMS], *bi[TE_MAX_DIMS];
    if (!gr_lin(c, ia, "A", &A) || !gr_lin(c, ib, "B", &B)) return false;
    te_ctx *ctx = c->ctx;
    int ra = gr_lin_rank(c, ia), rb = gr_lin_rank(c, ib);
    int64_t K = A->shape[ra - 1];
    /* the int32 product: the output itself, or a stage before requantizing */
    int onr = c->tout[0]->ndim;
    if (!gr_te_shape(c->tout[0], &prod.nd, prod.shape))
        return gr_lfail(c, "output 0 has no te shape");
    if (qlinear) {
        if (!gr_lfresh_axes(c, "p", false, prod.nd, prod.shape, prod.ax)) return false;
    } else if (!gr_lout_get(c, 0, &prod)) {
        return false;
    }
    te_expr *k = te_reduce_axis(ctx, "k", K);
    if (!k) return gr_lfail(c, "%s", te_ctx_errmsg(ctx));
    int nb = onr - (ra > 1) - (rb > 1);
    te_expr *i = ra > 1 ? prod.ax[nb] : NULL, *j = rb > 1 ? prod.ax[nb + (ra > 1)] : NULL;
    for (int d = 0; d < ra - 2; d++) ai[d] = A->shape[d] == 1 ? te_int(ctx, 0) : prod.ax[nb - (ra - 2) + d];
    for (int d = 0; d < rb - 2; d++) bi[d] = B->shape[d] == 1 ? te_int(ctx, 0) : prod.ax[nb - (rb - 2) + d];
    ai[ra - 1] = k;
    if (ra > 1) ai[ra - 2] = i;
    bi[rb > 1 ? rb - 2 : 0] = k;
    if (rb > 1) bi[rb - 1] = j;
    te_expr *a = te_sub(te_cast(TE_INT32, te_read_n(A, ra, ai)), per(c, za, i, TE_INT32));
    te_expr *b = te_sub(te_cast(TE_INT32, te_read_n(B, rb, bi)), per(c, zb, j, TE_INT32));
    double outs = gr_loutput_numel(&prod);
    c->flops += 2.0 * outs * (double)K;
    te_expr *sum = te_sum(te_mul(a, b), k);
    if (!qlinear) return gr_lout(c, 0, prod.nd, prod.ax, sum);
    te_tensor *S = gr_lstage(c, "acc", prod.nd, prod.ax, sum);
    if (!S) return false;
    gr_loutput o;
    if (!gr_lout_get(c, 0, &o)) return false;
    te_expr *oi = ra > 1 ? o.ax[nb] : NULL, *oj = rb > 1 ? o.ax[nb + (ra > 1)] : NULL;
    te_expr *scale = te_div(te_mul(per(c, 1, oi, TE_FLOAT64), per(c, 4, oj, TE_FLOAT64)), per(c, 6, NULL, TE_FLOAT64));
    te_expr *q = te_call(TE_INTRIN_RINT, 1, (te_expr *[]){te_mul(te_cast(TE_FLOAT64, te_read_n(S, o.nd, o.ax)), scale)});
    q = te_add(q, per(c, 7, NULL, TE_FLOAT64));
    bool is_u8 = c->tout[0]->elem_type == GR_UINT8;
    q = te_min(te_max(q, te_const(ctx, TE_FLOAT64, is_u8 ? 0 : -128)), te_const(ctx, TE_FLOAT64, is_u8 ? 255 : 127));
    c->flops += 4.0 * outs;
    return gr_lout(c, 0, o.nd, o.ax, te_cast(o.dt, q));
}

const gr_lower_rule gr_lower_rules_qmatmul[] = {
    {"", "MatMulInteger", lower_qmatmul, 0, 0},
    {"", "QLinearMatMul", lower_qmatmul, 0, 0},
    {0},
};
