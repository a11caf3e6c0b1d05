/* graph/print.c — a readable summary of a loaded model. */
#include "graph/gr_internal.h"

#include <inttypes.h>

static void print_type(const gr_type *t, FILE *out)
{
    switch (t->kind) {
    case GR_TYPE_UNKNOWN: fputs("?", out); return;
    case GR_TYPE_SEQUENCE:
    case GR_TYPE_OPTIONAL:
        fputs(t->kind == GR_TYPE_SEQUENCE ? "seq(" : "optional(", out);
        if (t->elem) print_type(t->elem, out);
        fputs(")", out);
        return;
    case GR_TYPE_MAP:
        fprintf(out, "map(%s,", gr_elem_type_name(t->key_type));
        if (t->elem) print_type(t->elem, out);
        fputs(")", out);
        return;
    default: break;
    }
    fprintf(out, "%s%s", t->kind == GR_TYPE_SPARSE_TENSOR ? "sparse " : "",
            gr_elem_type_name(t->elem_type));
    if (t->ndim < 0) {
        fputs("[?]", out);
        return;
    }
    fputs("[", out);
    for (int i = 0; i < t->ndim; i++) {
        if (i) fputs("x", out);
        if (t->shape[i] >= 0)
            fprintf(out, "%" PRId64, t->shape[i]);
        else
            fputs(t->dim_params && t->dim_params[i] ? t->dim_params[i] : "?", out);
    }
    fputs("]", out);
}

static void print_value_ref(const gr_graph *g, int idx, FILE *out)
{
    if (idx < 0)
        fputs("-", out);
    else
        fprintf(out, "%s", g->values[idx].name);
}

static void print_attr(const gr_attr *a, FILE *out)
{
    fprintf(out, " %s=", a->name);
    switch (a->kind) {
    case GR_ATTR_FLOAT: fprintf(out, "%g", a->f); break;
    case GR_ATTR_INT: fprintf(out, "%" PRId64, a->i); break;
    case GR_ATTR_STRING: fprintf(out, "\"%s\"", a->s.data); break;
    case GR_ATTR_TENSOR:
        fprintf(out, "tensor(%s, %" PRId64 " elements)", gr_elem_type_name(a->t->elem_type),
                a->t->numel);
        break;
    case GR_ATTR_FLOATS:
    case GR_ATTR_INTS:
        fputs("[", out);
        for (size_t i = 0; i < a->n; i++) {
            if (i) fputs(",", out);
            if (a->kind == GR_ATTR_FLOATS)
                fprintf(out, "%g", a->floats[i]);
            else
                fprintf(out, "%" PRId64, a->ints[i]);
        }
        fputs("]", out);
        break;
    case GR_ATTR_STRINGS:
        fputs("[", out);
        for (size_t i = 0; i < a->n; i++) fprintf(out, "%s\"%s\"", i ? "," : "", a->strings[i].data);
        fputs("]", out);
        break;
    case GR_ATTR_TENSORS: fprintf(out, "%zu tensors", a->n); break;
    case GR_ATTR_TYPE: print_type(a->tp, out); break;
    case GR_ATTR_TYPES: fprintf(out, "%zu types", a->n); break;
    case GR_ATTR_GRAPH: fprintf(out, "<graph '%s' below>", a->g->name); break;
    case GR_ATTR_GRAPHS: fprintf(out, "<%zu graphs below>", a->n); break;
    }
}

static void print_io(const gr_graph *g, const char *label, int n, const int *idx, int indent,
                     FILE *out)
{
    for (int i = 0; i < n; i++) {
        const gr_value *v = &g->values[idx[i]];
        fprintf(out, "%*s%s %s: ", indent, "", label, v->name);
        print_type(&v->type, out);
        fputs(v->kind == GR_VALUE_CONST ? " (initializer)\n" : "\n", out);
    }
}

static void print_graph(const gr_graph *g, int indent, FILE *out)
{
    int consts = 0;
    size_t bytes = 0;
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i].kind == GR_VALUE_CONST) {
            consts++;
            bytes += g->values[i].data->nbytes;
        }
    fprintf(out, "%*sgraph '%s': %d nodes, %d values, %d initializers (%zu bytes)\n", indent, "",
            g->name, g->n_nodes, g->n_values, consts, bytes);
    print_io(g, "input", g->n_inputs, g->inputs, indent + 2, out);
    print_io(g, "output", g->n_outputs, g->outputs, indent + 2, out);
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        fprintf(out, "%*s%s%s%s", indent + 2, "", *n->domain ? n->domain : "", *n->domain ? "." : "",
                n->op_type);
        if (*n->name) fprintf(out, " '%s'", n->name);
        fputs(" (", out);
        for (int k = 0; k < n->n_inputs; k++) {
            if (k) fputs(", ", out);
            print_value_ref(g, n->inputs[k], out);
        }
        fputs(") -> (", out);
        for (int k = 0; k < n->n_outputs; k++) {
            if (k) fputs(", ", out);
            print_value_ref(g, n->outputs[k], out);
        }
        fputs(")", out);
        for (int k = 0; k < n->n_attrs; k++) print_attr(&n->attrs[k], out);
        fputs("\n", out);
        for (int k = 0; k < n->n_attrs; k++) {
            const gr_attr *a = &n->attrs[k];
            if (a->kind == GR_ATTR_GRAPH) print_graph(a->g, indent + 4, out);
            for (size_t j = 0; a->kind == GR_ATTR_GRAPHS && j < a->n; j++)
                print_graph(a->graphs[j], indent + 4, out);
        }
    }
}

void gr_model_print(const gr_model *m, FILE *out)
{
    if (!m || !out) return;
    fprintf(out, "model %s: ir_version %" PRId64 ", producer '%s %s', opsets", m->path, m->ir_version,
            m->producer_name, m->producer_version);
    for (int i = 0; i < m->n_opsets; i++)
        fprintf(out, " %s:%" PRId64, *m->opsets[i].domain ? m->opsets[i].domain : "ai.onnx",
                m->opsets[i].version);
    fputs("\n", out);
    print_graph(m->graph, 0, out);
}
