/* graph/lower_reduce.c — the Reduce operators (Sum, Mean, Max, Min, Prod,
 * L1, L2, LogSum, LogSumExp, SumSquare) and ArgMax/ArgMin.
 *
 * Each reduction is pre(x) combined over the reduced dimensions (sum,
 * max, min or product) and post(s) of the result: ReduceL2 is
 * sqrt(sum x^2), ReduceLogSumExp log(sum exp(x - m)) + m with m the
 * maximum (a stage of its own), so that exp never overflows. A te
 * reduction is the whole body of its compute, so post is a second stage.
 * ArgMax/ArgMin find the extreme first (a stage) and then the first (or,
 * with select_last_index, the last) position that holds it: a min (max)
 * reduction of the positions, as MaxPool's Indices are found.
 * A float ReduceMax/ReduceMin propagates a NaN as numpy does: a second
 * reduction sums each group's NaNs (0 without one) onto the result.
 *
 * FLOPs: the combine and pre's arithmetic per input element, post's per
 * output element (one more per input element for the NaN sum);
 * ArgMax/ArgMin two per input element (the extreme, the comparison). */
#include "graph/infer_internal.h"
#include "graph/lower.h"

#include <string.h>

static int64_t attr_int(const gr_lctx *c, const char *name, int64_t dflt)
{
    const gr_attr *a = gr_node_attr(c->n, name);
    return a && a->kind == GR_ATTR_INT ? a->i : dflt;
}

/* Which dimensions the node reduces; *noop when it reduces none. */
static bool reduce_mask(gr_lctx *c, int rank, bool *mask, bool *noop)
{
    bool axes_input = c->opset >= (strcmp(c->n->op_type, "ReduceSum") == 0 ? 13 : 18);
    int64_t axes[TE_MAX_DIMS];
    int na = 0;
    if (axes_input) {
        if (c->n_inputs > 1 && c->tin[1]) {
            if (!c->cin[1] || !gr_tensor_ints(c->cin[1], axes, TE_MAX_DIMS, &na))
                return gr_lfail(c, "input 1 (axes) must be a known int64 tensor of at most %d "
                                   "values",
                                TE_MAX_DIMS);
        }
    } else {
        const gr_attr *a = gr_node_attr(c->n, "axes");
        if (a && a->kind == GR_ATTR_INTS)
            for (size_t i = 0; i < a->n && na < TE_MAX_DIMS; i++) axes[na++] = a->ints[i];
    }
    *noop = na == 0 && axes_input && attr_int(c, "noop_with_empty_axes", 0) != 0;
    for (int d = 0; d < rank; d++) mask[d] = na == 0;
    for (int i = 0; i < na; i++) mask[axes[i] < 0 ? axes[i] + rank : axes[i]] = true;
    return true;
}

typedef enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LSE, R_SUMSQ } rkind;

static rkind kind_of(const char *op)
{
    static const char *const names[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                        "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                                        "ReduceLogSumExp", "ReduceSumSquare"};
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (strcmp(names[i], op) == 0) return (rkind)i;
    return R_SUM;
}

static te_reduce_op combine_of(rkind k)
{
    return k == R_MAX ? TE_REDUCE_MAX : k == R_MIN ? TE_REDUCE_MIN
                                      : k == R_PROD ? TE_REDUCE_PROD : TE_REDUCE_SUM;
}

/* pre(x); m is the maximum (ReduceLogSumExp only). */
static te_expr *pre_of(rkind k, te_dtype dt, te_expr *x, te_expr *m)
{
    te_ctx *ctx = x->ctx;
    switch (k) {
    case R_L1:
        if (te_dtype_is_float(dt)) return te_fabs(x);
        return dt.code == TE_UINT ? x : te_select(te_lt(x, te_const(ctx, dt, 0)),
                                                  te_sub(te_const(ctx, dt, 0), x), x);
    case R_L2:
    case R_SUMSQ: return te_mul(x, x);
    case R_LSE: return te_exp(te_sub(x, m));
    default: return x;
    }
}

/* post(s) for an output of type dt: integer results of sqrt and log are
 * computed in double and truncated back, as ONNX's reference casts. */
static te_expr *post_of(rkind k, te_dtype dt, te_expr *s, te_expr *m, double count)
{
    te_ctx *ctx = s->ctx;
    bool fl = te_dtype_is_float(dt);
    switch (k) {
    case R_MEAN: return te_div(s, te_const(ctx, dt, count));
    case R_L2: return fl ? te_sqrt(s) : te_cast(dt, te_sqrt(te_cast(TE_FLOAT64, s)));
    case R_LOGSUM: return fl ? te_log(s) : te_cast(dt, te_log(te_cast(TE_FLOAT64, s)));
    case R_LSE: return te_add(te_log(s), m);
    default: return s;
    }
}

static int pre_flops(rkind k) { return k == R_L2 || k == R_SUMSQ || k == R_L1 ? 2 : k == R_LSE ? 3 : 1; }
static int post_flops(rkind k) { return k == R_LSE ? 2 : (k == R_MEAN || k == R_L2 || k == R_LOGSUM); }

static bool lower_reduce(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput out;
    te_expr *sax[TE_MAX_DIMS], *xi[TE_MAX_DIMS], *r[TE_MAX_DIMS];
    te_expr *mi[TE_MAX_DIMS], *mo[TE_MAX_DIMS];
    if (!gr_lin(c, 0, "data", &X) || !gr_lout_get(c, 0, &out)) return false;
    rkind k = kind_of(c->n->op_type);
    if (k == R_LSE && !te_dtype_is_float(out.dt))
        return gr_lfail(c, "input data is %s; ReduceLogSumExp is computed for float types only",
                        te_dtype_str(out.dt));
    int rank = gr_lin_rank(c, 0);
    bool mask[TE_MAX_DIMS] = {false}, noop = false;
    if (!reduce_mask(c, rank, mask, &noop)) return false;
    if (noop) return gr_lout(c, 0, out.nd, out.ax, te_read_n(X, X->ndim, out.ax));
    if (rank == 0) { /* one element: post(pre(x)), the maximum being x */
        te_expr *x = te_read_n(X, 1, out.ax);
        c->flops += pre_flops(k) + post_flops(k);
        return gr_lout(c, 0, out.nd, out.ax, post_of(k, out.dt, pre_of(k, out.dt, x, x), x, 1));
    }
    bool keep = attr_int(c, "keepdims", 1) != 0;
    int64_t rshape[TE_MAX_DIMS];
    int nr = 0;
    for (int d = 0; d < rank; d++)
        if (mask[d]) rshape[nr++] = X->shape[d];
    /* numpy's max and min propagate a NaN; te's max/min combine (a > b ?
     * a : b) drops it, so a float ReduceMax/ReduceMin adds a stage that
     * sums the NaNs of each group (0 without one) to the result. */
    bool nanp = (k == R_MAX || k == R_MIN) && te_dtype_is_float(out.dt);
    bool staged = post_flops(k) > 0 || nanp;
    if (!gr_lfresh_axes(c, "r", true, nr, rshape, r)) return false;
    if (staged && !gr_lfresh_axes(c, "a", false, out.nd, out.shape, sax)) return false;
    te_expr *const *oax = staged ? sax : out.ax;
    /* Output dimensions follow the kept ones (and the reduced ones with
     * keepdims); mi/mo index the maximum stage (extent 1 where reduced)
     * from the reduction and from the output. */
    for (int d = 0, o = 0, j = 0; d < rank; d++) {
        if (mask[d]) {
            xi[d] = r[j++];
            mi[d] = mo[d] = te_int(c->ctx, 0);
            if (keep) o++;
        } else {
            mi[d] = xi[d] = oax[o];
            mo[d] = out.ax[o++];
        }
    }
    te_tensor *M = NULL, *N = NULL;
    int64_t mshape[TE_MAX_DIMS];
    for (int d = 0; d < rank; d++) mshape[d] = mask[d] ? 1 : X->shape[d];
    if (nanp) {
        te_expr *n_ax[TE_MAX_DIMS], *n_r[TE_MAX_DIMS], *n_xi[TE_MAX_DIMS];
        if (!gr_lfresh_axes(c, "n", false, rank, mshape, n_ax) || !gr_lfresh_axes(c, "p", true, nr, rshape, n_r))
            return false;
        for (int d = 0, j = 0; d < rank; d++) n_xi[d] = mask[d] ? n_r[j++] : n_ax[d];
        te_expr *xv = te_read_n(X, rank, n_xi);
        N = gr_lstage(c, "nan", rank, n_ax,
                      te_reduce_n(TE_REDUCE_SUM, te_select(te_ne(xv, xv), xv, te_const(c->ctx, out.dt, 0)), nr, n_r));
        if (!N) return false;
        c->flops += gr_numel(rank, X->shape);
    }
    if (k == R_LSE) {
        te_expr *max_ax[TE_MAX_DIMS], *max_r[TE_MAX_DIMS], *max_xi[TE_MAX_DIMS];
        if (!gr_lfresh_axes(c, "m", false, rank, mshape, max_ax) ||
            !gr_lfresh_axes(c, "q", true, nr, rshape, max_r))
            return false;
        for (int d = 0, j = 0; d < rank; d++) max_xi[d] = mask[d] ? max_r[j++] : max_ax[d];
        M = gr_lstage(c, "max", rank, max_ax,
                      te_reduce_n(TE_REDUCE_MAX, te_read_n(X, rank, max_xi), nr, max_r));
        if (!M) return false;
        c->flops += gr_numel(rank, X->shape);
    }
    te_expr *x = te_read_n(X, rank, xi);
    te_expr *red = te_reduce_n(combine_of(k), pre_of(k, out.dt, x, M ? te_read_n(M, rank, mi) : NULL), nr, r);
    c->flops += pre_flops(k) * gr_numel(rank, X->shape);
    if (!staged) return gr_lout(c, 0, out.nd, out.ax, red);
    te_tensor *S = gr_lstage(c, "sum", out.nd, sax, red);
    if (!S) return false;
    c->flops += post_flops(k) * gr_numel(out.nd, out.shape);
    te_expr *post = post_of(k, out.dt, te_read_n(S, out.nd, out.ax),
                            M ? te_read_n(M, rank, mo) : NULL, gr_numel(nr, rshape));
    if (N) post = te_add(post, te_read_n(N, rank, mo));
    return gr_lout(c, 0, out.nd, out.ax, post);
}

/* ---------------- ArgMax, ArgMin ---------------- */

static bool lower_argminmax(gr_lctx *c)
{
    te_tensor *X;
    gr_loutput out;
    if (!gr_lin(c, 0, "data", &X) || !gr_lout_get(c, 0, &out)) return false;
    int rank = X->ndim;
    int64_t axis = attr_int(c, "axis", 0);
    if (axis < 0) axis += rank;
    bool keep = attr_int(c, "keepdims", 1) != 0, last = attr_int(c, "select_last_index", 0) != 0;
    bool is_max = strcmp(c->n->op_type, "ArgMax") == 0;
    te_ctx *ctx = c->ctx;
    /* The extreme along the axis, extent 1 there. */
    int64_t eshape[TE_MAX_DIMS];
    te_expr *eax[TE_MAX_DIMS], *er, *ei[TE_MAX_DIMS];
    for (int d = 0; d < rank; d++) eshape[d] = d == axis ? 1 : X->shape[d];
    if (!gr_lfresh_axes(c, "e", false, rank, eshape, eax)) return false;
    er = te_reduce_axis(ctx, "er", X->shape[axis]);
    if (!er) return gr_lfail(c, "%s", te_ctx_errmsg(ctx));
    for (int d = 0; d < rank; d++) ei[d] = d == axis ? er : eax[d];
    te_tensor *E = gr_lstage(c, is_max ? "max" : "min", rank, eax,
                             te_reduce_n(is_max ? TE_REDUCE_MAX : TE_REDUCE_MIN,
                                         te_read_n(X, rank, ei), 1, &er));
    if (!E) return false;
    /* The positions holding it: the smallest, or the largest with
     * select_last_index. */
    te_expr *p = te_reduce_axis(ctx, "p", X->shape[axis]);
    if (!p) return gr_lfail(c, "%s", te_ctx_errmsg(ctx));
    te_expr *xi[TE_MAX_DIMS], *mi[TE_MAX_DIMS];
    for (int d = 0, o = 0; d < rank; d++) {
        if (d == axis) {
            xi[d] = p;
            mi[d] = te_int(ctx, 0);
            if (keep) o++;
        } else {
            xi[d] = mi[d] = out.ax[o++];
        }
    }
    te_expr *hit = te_eq(te_read_n(X, rank, xi), te_read_n(E, rank, mi));
    te_expr *pos = te_cast(out.dt, p);
    te_expr *body = last ? te_reduce_n(TE_REDUCE_MAX, te_select(hit, pos, te_const(ctx, out.dt, -1)), 1, &p)
                         : te_reduce_n(TE_REDUCE_MIN, te_select(hit, pos, te_const(ctx, out.dt, (double)X->shape[axis])), 1, &p);
    c->flops += 2 * gr_numel(rank, X->shape);
    return gr_lout(c, 0, out.nd, out.ax, body);
}

const gr_lower_rule gr_lower_rules_reduce[] = {
    /* Axes became an input: ReduceSum at opset 13, the others at 18. */
    {"", "ReduceSum", lower_reduce, 1u << 1, 13},
    {"", "ReduceMean", lower_reduce, 1u << 1, 18},
    {"", "ReduceMax", lower_reduce, 1u << 1, 18},
    {"", "ReduceMin", lower_reduce, 1u << 1, 18},
    {"", "ReduceProd", lower_reduce, 1u << 1, 18},
    {"", "ReduceL1", lower_reduce, 1u << 1, 18},
    {"", "ReduceL2", lower_reduce, 1u << 1, 18},
    {"", "ReduceLogSum", lower_reduce, 1u << 1, 18},
    {"", "ReduceLogSumExp", lower_reduce, 1u << 1, 18},
    {"", "ReduceSumSquare", lower_reduce, 1u << 1, 18},
    {"", "ArgMax", lower_argminmax, 0, 0},
    {"", "ArgMin", lower_argminmax, 0, 0},
    {0},
};
