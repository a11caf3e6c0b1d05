/* graph/lower_elemwise.c — elementwise operators: unary functions, binary
 * arithmetic with numpy broadcasting, Clip, Where, Cast. */
#include "graph/lower.h"

/* Relu: max(x, 0). */
static bool lower_relu(gr_lctx *c)
{
    te_tensor *X;
    te_dtype dt;
    int nd;
    int64_t shape[TE_MAX_DIMS];
    te_expr *ax[TE_MAX_DIMS];
    if (!gr_lin(c, 0, "X", &X) || !gr_lout_axes(c, 0, &dt, &nd, shape, ax)) return false;
    te_expr *x = gr_read_bcast(X, gr_lin_rank(c, 0), nd, ax);
    return gr_lout(c, 0, nd, ax, te_max(x, te_const(c->ctx, dt, 0)));
}

/* Add: numpy broadcasting of A and B. */
static bool lower_add(gr_lctx *c)
{
    te_tensor *A, *B;
    te_dtype dt;
    int nd;
    int64_t shape[TE_MAX_DIMS];
    te_expr *ax[TE_MAX_DIMS];
    if (!gr_lin(c, 0, "A", &A) || !gr_lin(c, 1, "B", &B) ||
        !gr_lout_axes(c, 0, &dt, &nd, shape, ax))
        return false;
    te_expr *a = gr_read_bcast(A, gr_lin_rank(c, 0), nd, ax);
    te_expr *b = gr_read_bcast(B, gr_lin_rank(c, 1), nd, ax);
    return gr_lout(c, 0, nd, ax, te_add(a, b));
}

const gr_lower_rule gr_lower_rules_elemwise[] = {
    {"", "Relu", lower_relu, 0, 0},
    {"", "Add", lower_add, 0, 0},
    {0},
};
