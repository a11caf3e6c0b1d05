/* graph/lower.c — the lowering rules' lookup, the context a rule sees, and
 * the helpers rules share (types, shapes, broadcasting reads). */
#include "graph/lower.h"
#include "graph/rewrite.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool default_domain(const char *d) { return !d || !*d || strcmp(d, "ai.onnx") == 0; }

const gr_lower_rule *gr_lower_rule_for(const char *domain, const char *op_type)
{
    static const gr_lower_rule *const tables[] = {
        gr_lower_rules_nn,   gr_lower_rules_elemwise, gr_lower_rules_tensor, gr_lower_rules_layout,
        gr_lower_rules_math, gr_lower_rules_compare,  gr_lower_rules_reduce, gr_lower_rules_movement,
        gr_lower_rules_loss, gr_lower_rules_fill, gr_lower_rules_convt,
        gr_lower_rules_quant, gr_lower_rules_lrn, gr_lower_rules_det, gr_lower_rules_resize,
        gr_lower_rules_select, gr_lower_rules_mvn, gr_lower_rules_topk,
        gr_lower_rules_scatter, gr_lower_rules_einsum, gr_lower_rules_gridsample,
        gr_lower_rules_compress, gr_lower_rules_qmatmul, gr_lower_rules_optimizer,
        gr_lower_rules_dft, gr_lower_rules_rnn, gr_lower_rules_upsample,
        gr_lower_rules_stft, gr_lower_rules_roialign};
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        for (const gr_lower_rule *r = tables[t]; r->op_type; r++) {
            bool dom = default_domain(r->domain) ? default_domain(domain)
                                                 : (domain && strcmp(domain, r->domain) == 0);
            if (dom && strcmp(r->op_type, op_type) == 0) return r;
        }
    return NULL;
}

bool gr_lower_input_static(const gr_node *n, int k, int64_t opset)
{
    const gr_lower_rule *r = gr_lower_rule_for(n->domain, n->op_type);
    if (!r || k >= 32 || !((r->static_inputs >> k) & 1u)) return false;
    return opset >= r->static_from;
}

bool gr_lower_input_by_value(const gr_graph *g, const gr_node *n, int k)
{
    if (k != 1 || n->n_inputs < 2 || !default_domain(n->domain) || strcmp(n->op_type, "Pow") != 0)
        return false;
    int v = n->inputs[1];
    const gr_tensor *t = v >= 0 ? g->values[v].data : NULL;
    if (!t || t->numel != 1 || (t->elem_type != GR_FLOAT && t->elem_type != GR_DOUBLE))
        return false;
    return !gr_rw_is_graph_input(g, v); /* an initializer a caller may override */
}

bool gr_lfail(gr_lctx *c, const char *fmt, ...)
{
    char msg[1024], label[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gr_set_err(c->err, "%s: %s: %s", c->m->path ? c->m->path : "model",
               gr_node_label(c->g, c->node_index, label, sizeof label), msg);
    return false;
}

bool gr_te_dtype(int elem_type, te_dtype *out)
{
    switch (elem_type) {
    case GR_FLOAT: *out = TE_FLOAT32; return true;
    case GR_DOUBLE: *out = TE_FLOAT64; return true;
    case GR_FLOAT16: *out = TE_FLOAT16; return true;
    case GR_BFLOAT16: *out = TE_BFLOAT16; return true;
    case GR_INT8: *out = TE_DTYPE(TE_INT, 8, 1); return true;
    case GR_INT16: *out = TE_DTYPE(TE_INT, 16, 1); return true;
    case GR_INT32: *out = TE_INT32; return true;
    case GR_INT64: *out = TE_INT64; return true;
    case GR_UINT8: *out = TE_DTYPE(TE_UINT, 8, 1); return true;
    case GR_UINT16: *out = TE_DTYPE(TE_UINT, 16, 1); return true;
    case GR_UINT32: *out = TE_DTYPE(TE_UINT, 32, 1); return true;
    case GR_UINT64: *out = TE_DTYPE(TE_UINT, 64, 1); return true;
    case GR_BOOL: *out = TE_BOOL1; return true;
    default: return false;
    }
}

bool gr_te_shape(const gr_type *t, int *ndim, int64_t *shape)
{
    if (!t || t->kind != GR_TYPE_TENSOR || t->ndim < 0 || t->ndim > TE_MAX_DIMS) return false;
    if (t->ndim == 0) {
        *ndim = 1;
        shape[0] = 1;
        return true;
    }
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] <= 0) return false;
        shape[d] = t->shape[d];
    }
    *ndim = t->ndim;
    return true;
}

const char *gr_shape_problem(const gr_type *t, char *buf, size_t n)
{
    int nd;
    int64_t shape[TE_MAX_DIMS];
    if (gr_te_shape(t, &nd, shape)) return NULL;
    snprintf(buf, n, "its shape");
    if (!t || t->kind != GR_TYPE_TENSOR) snprintf(buf, n, "it is not a tensor");
    else if (t->ndim < 0) snprintf(buf, n, "its rank is unknown");
    else if (t->ndim > TE_MAX_DIMS)
        snprintf(buf, n, "rank %d, above the %d Loom holds", t->ndim, TE_MAX_DIMS);
    else
        for (int d = 0; d < t->ndim; d++)
            if (t->shape[d] <= 0) {
                if (t->shape[d] == 0)
                    snprintf(buf, n, "dimension %d is 0 (an empty tensor, which Loom does not "
                                     "compute)", d);
                else snprintf(buf, n, "dimension %d is unknown", d);
                break;
            }
    return buf;
}

bool gr_lin(gr_lctx *c, int k, const char *what, te_tensor **out)
{
    *out = k < c->n_inputs ? c->in[k] : NULL;
    if (*out) return true;
    if (k < c->n_inputs && c->tin[k])
        return gr_lfail(c, "input %d (%s) is not available as a tensor", k, what);
    return gr_lfail(c, "input %d (%s) is missing", k, what);
}

int gr_lin_rank(const gr_lctx *c, int k)
{
    if (k >= c->n_inputs || !c->tin[k]) return -1;
    return c->tin[k]->ndim;
}

bool gr_lout_get(gr_lctx *c, int k, gr_loutput *o)
{
    const gr_type *t = k < c->n_outputs ? c->tout[k] : NULL;
    if (!t) return gr_lfail(c, "output %d is missing", k);
    if (!gr_te_dtype(t->elem_type, &o->dt))
        return gr_lfail(c, "output %d has element type %s, which Loom cannot compute", k,
                        gr_elem_type_name(t->elem_type));
    char why[96];
    if (!gr_te_shape(t, &o->nd, o->shape))
        return gr_lfail(c, "output %d has no shape Loom can compute: %s", k,
                        gr_shape_problem(t, why, sizeof why));
    for (int d = 0; d < o->nd; d++) {
        char name[16];
        snprintf(name, sizeof name, "i%d", d);
        o->ax[d] = te_axis(c->ctx, name, o->shape[d]);
        if (!o->ax[d]) return gr_lfail(c, "%s", te_ctx_errmsg(c->ctx));
    }
    return true;
}

double gr_numel(int nd, const int64_t *shape)
{
    double n = 1;
    for (int d = 0; d < nd; d++) n *= (double)shape[d];
    return n;
}

double gr_loutput_numel(const gr_loutput *o)
{
    return gr_numel(o->nd, o->shape);
}

bool gr_lout(gr_lctx *c, int k, int ndim, te_expr *const *axes, te_expr *body)
{
    if (!body) return gr_lfail(c, "%s", te_ctx_errmsg(c->ctx));
    char name[64];
    snprintf(name, sizeof name, "%s%d", c->n->op_type, c->node_index);
    for (char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            *p = '_';
    if (k > 0) snprintf(name + strlen(name), sizeof name - strlen(name), "_%d", k);
    te_tensor *t = te_compute(c->ctx, name, ndim, axes, body);
    if (!t) return gr_lfail(c, "%s", te_ctx_errmsg(c->ctx));
    c->out[k] = t;
    return true;
}

bool gr_lfresh_axes(gr_lctx *c, const char *prefix, bool reduce, int nd, const int64_t *shape,
                    te_expr **ax)
{
    for (int d = 0; d < nd; d++) {
        char name[24];
        snprintf(name, sizeof name, "%s%d", prefix, d);
        ax[d] = reduce ? te_reduce_axis(c->ctx, name, shape[d]) : te_axis(c->ctx, name, shape[d]);
        if (!ax[d]) return gr_lfail(c, "%s", te_ctx_errmsg(c->ctx));
    }
    return true;
}

te_tensor *gr_lstage(gr_lctx *c, const char *suffix, int nd, te_expr *const *ax, te_expr *body)
{
    if (!body) {
        gr_lfail(c, "%s", te_ctx_errmsg(c->ctx));
        return NULL;
    }
    char name[96];
    snprintf(name, sizeof name, "%s%d_%s", c->n->op_type, c->node_index, suffix);
    /* Stage names become C identifiers in generated code and dumps. */
    for (char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            *p = '_';
    te_tensor *t = te_compute(c->ctx, name, nd, ax, body);
    if (!t) gr_lfail(c, "%s", te_ctx_errmsg(c->ctx));
    return t;
}

te_expr *gr_read_bcast(te_tensor *t, int trank, int nout, te_expr *const *axes)
{
    te_ctx *ctx = t->ctx;
    te_expr *idx[TE_MAX_DIMS];
    if (trank == 0) {
        idx[0] = te_int(ctx, 0);
        return te_read_n(t, 1, idx);
    }
    for (int d = 0; d < trank; d++) {
        int od = nout - trank + d;
        idx[d] = (t->shape[d] == 1 || od < 0) ? te_int(ctx, 0) : axes[od];
    }
    return te_read_n(t, trank, idx);
}

te_expr *gr_lunary_read(gr_lctx *c, const char *what, te_tensor **x, gr_loutput *o)
{
    te_tensor *X;
    if (!gr_lin(c, 0, what, &X) || !gr_lout_get(c, 0, o)) return NULL;
    if (x) *x = X;
    te_expr *r = gr_read_bcast(X, gr_lin_rank(c, 0), o->nd, o->ax);
    if (!r) gr_lfail(c, "%s", te_ctx_errmsg(c->ctx));
    return r;
}

bool gr_lower_node(te_ctx *ctx, const gr_model *m, const gr_graph *g, int node_index,
                   te_tensor **vals, double *flops, char **err)
{
    const gr_node *n = &g->nodes[node_index];
    te_tensor *in[64] = {0}, *out[64] = {0};
    const gr_tensor *cin[64] = {0};
    const gr_type *tin[64] = {0}, *tout[64] = {0};
    gr_lctx c = {.ctx = ctx, .m = m, .g = g, .n = n, .node_index = node_index,
                 .n_inputs = n->n_inputs, .in = in, .cin = cin, .tin = tin,
                 .n_outputs = n->n_outputs, .tout = tout, .out = out, .err = err};
    c.opset = m->opset;
    for (int i = 0; i < m->n_opsets; i++)
        if (!default_domain(n->domain) && strcmp(m->opsets[i].domain, n->domain) == 0)
            c.opset = m->opsets[i].version;
    if (n->n_inputs > 64 || n->n_outputs > 64)
        return gr_lfail(&c, "has more than 64 inputs or outputs");
    const gr_lower_rule *r = gr_lower_rule_for(n->domain, n->op_type);
    if (!r) return gr_lfail(&c, "operator %s has no lowering in Loom", n->op_type);
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        if (v < 0) continue;
        tin[k] = &g->values[v].type;
        cin[k] = g->values[v].data;
        if (!gr_lower_input_static(n, k, c.opset) && !gr_input_type_only(n, k) &&
            !gr_lower_input_by_value(g, n, k))
            in[k] = vals[v];
    }
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0) tout[k] = &g->values[n->outputs[k]].type;
    if (!r->fn(&c)) return false;
    for (int k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] < 0) continue;
        if (!out[k]) return gr_lfail(&c, "the lowering left output %d undefined", k);
        vals[n->outputs[k]] = out[k];
    }
    if (flops) *flops += c.flops;
    return true;
}

bool gr_op_runnable(const char *domain, const char *op_type, int64_t opset)
{
    if (!domain || !op_type || !gr_op_supported(domain, op_type, opset)) return false;
    /* Inference always knows these outputs: they are folded, never run. */
    if (default_domain(domain) && (strcmp(op_type, "Constant") == 0 || strcmp(op_type, "Shape") == 0 ||
                                   strcmp(op_type, "Size") == 0))
        return true;
    return gr_lower_rule_for(domain, op_type) != NULL;
}

bool gr_op_input_static(const char *domain, const char *op_type, int64_t opset, int k)
{
    if (!op_type || k < 0 || k >= 32) return false;
    const gr_lower_rule *r = gr_lower_rule_for(domain, op_type);
    return r && ((r->static_inputs >> k) & 1u) && opset >= r->static_from;
}
