/* graph/lower_compare.c — comparisons (Equal, Greater, GreaterOrEqual,
 * Less, LessOrEqual) and logic (And, Or, Xor), numpy broadcasting, bool
 * outputs (one byte an element, as every bool value in Loom).
 *
 * A float comparison with a NaN operand is false, Equal included, as
 * numpy's. FLOPs: one per output element. */
#include "graph/infer_internal.h"
#include "graph/lower.h"

#include <string.h>

static bool lower_compare(gr_lctx *c)
{
    te_tensor *A, *B;
    gr_loutput o;
    if (!gr_lin(c, 0, "A", &A) || !gr_lin(c, 1, "B", &B) || !gr_lout_get(c, 0, &o))
        return false;
    te_expr *a = gr_read_bcast(A, gr_lin_rank(c, 0), o.nd, o.ax);
    te_expr *b = gr_read_bcast(B, gr_lin_rank(c, 1), o.nd, o.ax);
    const char *op = c->n->op_type;
    te_expr *y;
    if (strcmp(op, "Equal") == 0)
        y = te_eq(a, b);
    else if (strcmp(op, "Greater") == 0)
        y = te_gt(a, b);
    else if (strcmp(op, "GreaterOrEqual") == 0)
        y = te_ge(a, b);
    else if (strcmp(op, "Less") == 0)
        y = te_lt(a, b);
    else if (strcmp(op, "LessOrEqual") == 0)
        y = te_le(a, b);
    else if (strcmp(op, "And") == 0)
        y = te_and(a, b);
    else if (strcmp(op, "Or") == 0)
        y = te_or(a, b);
    else
        y = te_ne(a, b); /* Xor */
    double n = gr_loutput_numel(&o);
    c->flops += n;
    return gr_lout(c, 0, o.nd, o.ax, y);
}

const gr_lower_rule gr_lower_rules_compare[] = {
    {"", "Equal", lower_compare, 0, 0},
    {"", "Greater", lower_compare, 0, 0},
    {"", "GreaterOrEqual", lower_compare, 0, 0},
    {"", "Less", lower_compare, 0, 0},
    {"", "LessOrEqual", lower_compare, 0, 0},
    {"", "And", lower_compare, 0, 0},
    {"", "Or", lower_compare, 0, 0},
    {"", "Xor", lower_compare, 0, 0},
    {0},
};
