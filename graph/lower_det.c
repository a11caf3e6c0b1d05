/* graph/lower_det.c — Det (checked by infer_det.c) by Leibniz's formula:
 *   det A = sum over the permutations s of 0..M-1 of sign(s) prod_i A[i, s(i)]
 * one output element per matrix, in float64 whatever X's type (the M!
 * terms cancel: a 16-bit or float32 sum would lose what LU's pivoting
 * keeps), cast to X's type. Permutations in Heap's order, each sign
 * flipping with every swap. FLOPs: M multiplies and an add per term. */
#include "graph/infer_internal.h"
#include "graph/lower.h"

static bool lower_det(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "X", &X) || !gr_lout_get(c, 0, &o)) return false;
    te_ctx *ctx = c->ctx;
    int r = X->ndim, m = (int)X->shape[r - 1];
    /* a scalar output is held as [1]: no leading index then */
    int lead = r - 2;
    int perm[GR_DET_MAX_M], cnt[GR_DET_MAX_M] = {0};
    for (int i = 0; i < m; i++) perm[i] = i;
    te_expr *idx[TE_MAX_DIMS], *sum = NULL;
    for (int d = 0; d < lead; d++) idx[d] = o.ax[d];
    double sign = 1, terms = 0;
    for (int i = 0;;) {
        te_expr *t = NULL;
        for (int row = 0; row < m; row++) {
            idx[lead] = te_int(ctx, row);
            idx[lead + 1] = te_int(ctx, perm[row]);
            te_expr *a = te_cast(TE_FLOAT64, te_read_n(X, r, idx));
            t = t ? te_mul(t, a) : a;
        }
        sum = !sum ? t : sign > 0 ? te_add(sum, t) : te_sub(sum, t);
        terms++;
        /* Heap's algorithm, iterative: the next permutation is one swap */
        while (i < m && cnt[i] >= i) cnt[i++] = 0;
        if (i >= m) break;
        int j = i % 2 ? cnt[i] : 0, tmp = perm[j];
        perm[j] = perm[i], perm[i] = tmp;
        sign = -sign;
        cnt[i]++;
        i = 1;
    }
    c->flops += gr_loutput_numel(&o) * terms * (double)m;
    return gr_lout(c, 0, o.nd, o.ax, te_cast(o.dt, sum));
}

const gr_lower_rule gr_lower_rules_det[] = {
    {"", "Det", lower_det, 0, 0},
    {0},
};
