/* graph/rewrite.c — the mutations graph passes make (graph/rewrite.h). */
#include "graph/rewrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gr_rw_begin(gr_rw *rw, gr_model *m, gr_pass_stats *st, char **err)
{
    memset(rw, 0, sizeof *rw);
    rw->m = m;
    rw->g = m->graph;
    rw->a = m->priv_;
    rw->st = st ? st : &rw->own;
    rw->err = err;
}

bool gr_rw_end(gr_rw *rw, bool ok)
{
    return ok && gr_rw_drop_unused(rw);
}

bool gr_rw_is_op(const gr_node *n, const char *op)
{
    return (!*n->domain || strcmp(n->domain, "ai.onnx") == 0) && strcmp(n->op_type, op) == 0;
}

bool gr_rw_is_graph_input(const gr_graph *g, int v)
{
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == v) return true;
    return false;
}

bool gr_rw_is_graph_output(const gr_graph *g, int v)
{
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v) return true;
    return false;
}

int gr_rw_uses(const gr_graph *g, int v)
{
    int uses = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++) uses += g->nodes[i].inputs[k] == v;
    for (int i = 0; i < g->n_outputs; i++) uses += g->outputs[i] == v;
    return uses;
}

bool gr_rw_is_fixed_const(const gr_graph *g, int v)
{
    return v >= 0 && g->values[v].kind == GR_VALUE_CONST && g->values[v].data &&
           !gr_rw_is_graph_input(g, v);
}

gr_tensor *gr_rw_new_tensor(gr_rw *rw, int elem_type, int ndim, const int64_t *shape)
{
    gr_tensor *t = gr_arena_alloc(rw->a, 1, sizeof *t);
    int64_t *s = gr_arena_alloc(rw->a, ndim ? (size_t)ndim : 1, sizeof(int64_t));
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) numel *= shape[i];
    size_t nbytes = (size_t)numel * gr_elem_type_size(elem_type);
    void *data = t && s ? gr_arena_alloc(rw->a, nbytes ? nbytes : 1, 1) : NULL;
    if (!data) {
        gr_set_err(rw->err, "%s: out of memory in a graph pass", rw->m->path);
        return NULL;
    }
    if (ndim) memcpy(s, shape, (size_t)ndim * sizeof *s);
    t->name = "";
    t->elem_type = elem_type;
    gr_elem_type_dl(elem_type, &t->dtype);
    t->ndim = ndim;
    t->shape = s;
    t->numel = numel;
    t->nbytes = nbytes;
    t->data = data;
    t->dl = (DLTensor){.data = data, .device = {kDLCPU, 0}, .ndim = ndim, .dtype = t->dtype,
                       .shape = s};
    return t;
}

/* A name the graph does not have: base, else base_1, base_2, ... */
static char *unique_name(gr_rw *rw, const char *base)
{
    size_t len = strlen(base) + 24;
    char *name = gr_arena_alloc(rw->a, len, 1);
    if (!name) return NULL;
    snprintf(name, len, "%s", base);
    for (long k = 1; gr_graph_find_value(rw->g, name) >= 0; k++) snprintf(name, len, "%s_%ld", base, k);
    return name;
}

/* A new zeroed value named base (made unique), room grown as needed;
 * -1 and *err when out of memory. */
static int add_value(gr_rw *rw, const char *base)
{
    gr_graph *g = rw->g;
    char *name = unique_name(rw, base);
    if (name && g->n_values + 1 > rw->values_cap) {
        /* Doubling keeps a pass that adds a value per node linear. */
        int cap = g->n_values < 8 ? 16 : g->n_values * 2;
        gr_value *values = gr_arena_alloc(rw->a, (size_t)cap, sizeof *values);
        if (values) {
            if (g->n_values) memcpy(values, g->values, (size_t)g->n_values * sizeof *values);
            g->values = values;
            rw->values_cap = cap;
        } else {
            name = NULL;
        }
    }
    if (!name) {
        gr_set_err(rw->err, "%s: out of memory in a graph pass", rw->m->path);
        return -1;
    }
    gr_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->producer = -1;
    return g->n_values++;
}

int gr_rw_add_const(gr_rw *rw, const char *base, gr_tensor *t)
{
    int i = add_value(rw, base);
    if (i < 0) return -1;
    gr_value *v = &rw->g->values[i];
    t->name = v->name;
    v->kind = GR_VALUE_CONST;
    v->data = t;
    v->type.kind = GR_TYPE_TENSOR;
    v->type.elem_type = t->elem_type;
    v->type.dtype = t->dtype;
    v->type.ndim = t->ndim;
    v->type.shape = t->shape;
    rw->st->consts_added++;
    return i;
}

int gr_rw_add_node_value(gr_rw *rw, const char *base, int elem_type, int ndim,
                         const int64_t *shape)
{
    int64_t *s = gr_arena_alloc(rw->a, ndim ? (size_t)ndim : 1, sizeof *s);
    if (!s) {
        gr_set_err(rw->err, "%s: out of memory in a graph pass", rw->m->path);
        return -1;
    }
    int i = add_value(rw, base);
    if (i < 0) return -1;
    if (ndim) memcpy(s, shape, (size_t)ndim * sizeof *s);
    gr_value *v = &rw->g->values[i];
    v->kind = GR_VALUE_NODE;
    v->type.kind = GR_TYPE_TENSOR;
    v->type.elem_type = elem_type;
    gr_elem_type_dl(elem_type, &v->type.dtype);
    v->type.ndim = ndim;
    v->type.shape = s;
    return i;
}

bool gr_rw_list_init(gr_rw *rw, gr_rw_list *l, int cap)
{
    l->n = 0;
    l->cap = cap;
    l->nodes = gr_arena_alloc(rw->a, cap > 0 ? (size_t)cap : 1, sizeof *l->nodes);
    if (!l->nodes) gr_set_err(rw->err, "%s: out of memory in a graph pass", rw->m->path);
    return l->nodes != NULL;
}

bool gr_rw_emit(gr_rw *rw, gr_rw_list *l, const gr_node *n)
{
    if (l->n >= l->cap) {
        gr_set_err(rw->err, "%s: a graph pass emitted more than the %d nodes it made room for",
                   rw->m->path, l->cap);
        return false;
    }
    l->nodes[l->n] = *n;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0) rw->g->values[n->outputs[k]].producer = l->n;
    l->n++;
    return true;
}

int gr_rw_emit_op(gr_rw *rw, gr_rw_list *l, const char *op, const char *name, int nin,
                  const int *ins, int out, gr_attr *attrs, int nattrs)
{
    gr_node e = {0};
    e.name = gr_arena_strdup(rw->a, name);
    e.op_type = (char *)op;
    e.domain = "";
    e.inputs = gr_arena_alloc(rw->a, nin > 0 ? (size_t)nin : 1, sizeof(int));
    e.outputs = gr_arena_alloc(rw->a, 1, sizeof(int));
    if (!e.name || !e.inputs || !e.outputs) {
        gr_set_err(rw->err, "%s: out of memory in a graph pass", rw->m->path);
        return -1;
    }
    memcpy(e.inputs, ins, (size_t)nin * sizeof *ins);
    e.n_inputs = nin;
    e.outputs[0] = out;
    e.n_outputs = 1;
    e.attrs = attrs;
    e.n_attrs = nattrs;
    return gr_rw_emit(rw, l, &e) ? out : -1;
}

void gr_rw_list_install(gr_rw *rw, const gr_rw_list *l)
{
    rw->g->nodes = l->nodes;
    rw->g->n_nodes = l->n;
}

gr_attr gr_rw_ints_attr(gr_rw *rw, const char *name, int n, const int64_t *v)
{
    gr_attr at = {.name = (char *)name, .kind = GR_ATTR_INTS};
    at.ints = gr_arena_alloc(rw->a, n > 0 ? (size_t)n : 1, sizeof *at.ints);
    if (!at.ints) {
        gr_set_err(rw->err, "%s: out of memory in a graph pass", rw->m->path);
        return at;
    }
    memcpy(at.ints, v, (size_t)n * sizeof *v);
    at.n = (size_t)n;
    return at;
}

bool gr_rw_can_replace(const gr_graph *g, int a, int b)
{
    if (a < 0 || b < 0 || a == b) return false;
    if (!gr_rw_is_graph_output(g, a)) return true;
    gr_value_kind k = g->values[b].kind;
    return (k == GR_VALUE_NODE || k == GR_VALUE_CONST) && !gr_rw_is_graph_input(g, b) &&
           !gr_rw_is_graph_output(g, b);
}

bool gr_rw_replace(gr_rw *rw, int a, int b)
{
    gr_graph *g = rw->g;
    if (!gr_rw_can_replace(g, a, b)) return false;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] == a) g->nodes[i].inputs[k] = b;
    bool renamed = false;
    for (int i = 0; i < g->n_outputs; i++) {
        if (g->outputs[i] != a) continue;
        g->outputs[i] = b;
        if (renamed) continue;
        /* The interface keeps the name; swapping keeps names unique. */
        char *name = g->values[a].name;
        g->values[a].name = g->values[b].name;
        g->values[b].name = name;
        if (g->values[b].kind == GR_VALUE_CONST && g->values[b].data) {
            /* The tensor may be shared: the initializer gets its own header. */
            gr_tensor *t = gr_arena_alloc(rw->a, 1, sizeof *t);
            if (t) {
                *t = *g->values[b].data;
                t->name = name;
                g->values[b].data = t;
            }
        }
        renamed = true;
    }
    rw->st->values_replaced++;
    return true;
}

bool gr_rw_remove_nodes(gr_rw *rw, const bool *dead)
{
    gr_graph *g = rw->g;
    /* Refuse before changing anything: a removed output still read would
     * leave a value no node writes. */
    bool *read = calloc(g->n_values ? (size_t)g->n_values : 1, sizeof *read);
    if (!read) {
        gr_set_err(rw->err, "%s: out of memory in a graph pass", rw->m->path);
        return false;
    }
    for (int i = 0; i < g->n_outputs; i++) read[g->outputs[i]] = true;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; !dead[i] && k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0) read[g->nodes[i].inputs[k]] = true;
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        for (int k = 0; dead[i] && k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v < 0 || !read[v]) continue;
            char label[512];
            gr_set_err(rw->err, "%s: graph pass: cannot remove %s: its output '%s' is still used",
                       rw->m->path, gr_node_label(g, i, label, sizeof label), g->values[v].name);
            free(read);
            return false;
        }
    }
    free(read);
    int kept = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        gr_node *n = &g->nodes[i];
        if (dead[i]) {
            for (int k = 0; k < n->n_outputs; k++)
                if (n->outputs[k] >= 0) g->values[n->outputs[k]].producer = -1;
            rw->st->nodes_removed++;
            continue;
        }
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) g->values[n->outputs[k]].producer = kept;
        if (kept != i) g->nodes[kept] = *n;
        kept++;
    }
    g->n_nodes = kept;
    return true;
}

bool gr_rw_drop_unused(gr_rw *rw)
{
    gr_graph *g = rw->g;
    int *map = calloc(g->n_values ? (size_t)g->n_values : 1, sizeof *map);
    if (!map) {
        gr_set_err(rw->err, "%s: out of memory in a graph pass", rw->m->path);
        return false;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) map[n->inputs[k]] = 1;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) map[n->outputs[k]] = 1;
    }
    for (int i = 0; i < g->n_inputs; i++) map[g->inputs[i]] = 1;
    for (int i = 0; i < g->n_outputs; i++) map[g->outputs[i]] = 1;
    int kept = 0;
    for (int v = 0; v < g->n_values; v++) {
        if (!map[v]) {
            map[v] = -1;
            rw->st->values_dropped++;
            continue;
        }
        map[v] = kept;
        if (kept != v) g->values[kept] = g->values[v];
        kept++;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        gr_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) n->inputs[k] = map[n->inputs[k]];
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) n->outputs[k] = map[n->outputs[k]];
    }
    for (int i = 0; i < g->n_inputs; i++) g->inputs[i] = map[g->inputs[i]];
    for (int i = 0; i < g->n_outputs; i++) g->outputs[i] = map[g->outputs[i]];
    g->n_values = kept;
    free(map);
    return true;
}
