/* graph/lower_compress.c — Compress (checked by infer_compress.c) with
 * its constant condition: output position j reads the position of the
 * j-th true entry. The selected positions form runs of consecutive
 * entries; within a run the source is j plus the run's offset, and a
 * balanced tree of selects on j picks the run (depth log2 of the runs).
 * Without an axis the source is a flat index into the input, split back
 * into its coordinates. FLOPs: 0. */
#include <stdlib.h>

#include "graph/infer_internal.h"
#include "graph/lower.h"

/* The source position of output j among runs [lo, hi): run r starts at
 * output position start[r], with source = j + off[r]. */
static te_expr *pick(te_ctx *ctx, te_expr *j, const int64_t *start, const int64_t *off, int64_t lo, int64_t hi)
{
    if (hi - lo == 1) return te_add(j, te_int(ctx, off[lo]));
    int64_t mid = lo + (hi - lo) / 2;
    return te_select(te_lt(j, te_int(ctx, start[mid])), pick(ctx, j, start, off, lo, mid),
                     pick(ctx, j, start, off, mid, hi));
}

static bool lower_compress(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput o;
    if (!gr_lin(c, 0, "input", &X) || !gr_lout_get(c, 0, &o)) return false;
    const gr_tensor *cond = c->cin[1];
    if (!cond) return gr_lfail(c, "input 'condition' is not a constant");
    te_ctx *ctx = c->ctx;
    int r = gr_lin_rank(c, 0);
    const gr_attr *aa = gr_node_attr(c->n, "axis");
    int axis = aa ? (int)(aa->i < 0 ? aa->i + r : aa->i) : -1;
    int64_t *start = malloc((size_t)cond->numel * sizeof *start), *off = malloc((size_t)cond->numel * sizeof *off);
    if (!start || !off) {
        free(start);
        free(off);
        return gr_lfail(c, "out of memory");
    }
    const unsigned char *b = cond->data;
    int64_t runs = 0, j = 0;
    for (int64_t i = 0; i < cond->numel; i++) {
        if (!b[i]) continue;
        if (i == 0 || !b[i - 1]) {
            start[runs] = j;
            off[runs++] = i - j;
        }
        j++;
    }
    te_expr *src = pick(ctx, axis >= 0 ? o.ax[axis] : o.ax[0], start, off, 0, runs);
    free(start);
    free(off);
    te_expr *xi[TE_MAX_DIMS];
    if (axis >= 0) {
        for (int d = 0; d < r; d++) xi[d] = d == axis ? src : o.ax[d];
    } else {
        int64_t stride = 1;
        for (int d = r - 1; d >= 0; d--) {
            xi[d] = te_floormod(te_floordiv(src, te_int(ctx, stride)), te_int(ctx, X->shape[d]));
            stride *= X->shape[d];
        }
        if (r == 0) xi[r++] = te_int(ctx, 0);
    }
    return gr_lout(c, 0, o.nd, o.ax, te_read_n(X, r, xi));
}

const gr_lower_rule gr_lower_rules_compress[] = {
    {"", "Compress", lower_compress, 1u << 1, 0},
    {0},
};
