/* graph/load.c — an ONNX ModelProto file into a gr_model: the graph, its
 * values and nodes, attributes and subgraphs, resolved by name. */
#include "graph/gr_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    gr_arena *a;
    const char *dir; /* where external data lives */
    char **err;
} loader;

/* The graphs a subgraph can see: itself, then its enclosing graphs. */
typedef struct scope {
    const struct scope *parent;
    gr_graph *g;
    gr_names names;
    const char *where; /* "model.onnx" or "model.onnx: subgraph 'body' of node 'loop'" */
} scope;

static gr_graph *load_graph(loader *L, const Onnx__GraphProto *gp, const scope *parent,
                            const char *where);

static char *fmt(loader *L, const char *f, ...) __attribute__((format(printf, 2, 3)));
static char *fmt(loader *L, const char *f, ...)
{
    va_list ap, ap2;
    va_start(ap, f);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, f, ap);
    va_end(ap);
    char *s = n >= 0 ? gr_arena_alloc(L->a, (size_t)n + 1, 1) : NULL;
    if (s) vsnprintf(s, (size_t)n + 1, f, ap2);
    va_end(ap2);
    if (!s) gr_set_err(L->err, "out of memory");
    return s;
}

static const char *node_label(loader *L, const Onnx__NodeProto *np, size_t i)
{
    const char *op = np->op_type ? np->op_type : "";
    if (np->name && *np->name) return fmt(L, "node '%s' (%s)", np->name, op);
    return fmt(L, "node #%zu (%s)", i, op);
}

static int add_value(scope *s, const char *name, gr_value_kind kind, int producer, loader *L)
{
    gr_graph *g = s->g;
    gr_value *v = &g->values[g->n_values];
    v->name = gr_arena_strdup(L->a, name);
    v->kind = kind;
    v->producer = producer;
    v->type.ndim = -1;
    if (!v->name || !gr_names_put(&s->names, v->name, g->n_values)) {
        gr_set_err(L->err, "out of memory");
        return -1;
    }
    return g->n_values++;
}

/* A name used in this graph: its own value, or an enclosing graph's, which
 * is then recorded here as GR_VALUE_OUTER. -1 when no graph has it. */
static int resolve(scope *s, const char *name, loader *L)
{
    int idx = gr_names_get(&s->names, name);
    if (idx >= 0) return idx;
    for (const scope *p = s->parent; p; p = p->parent) {
        int outer = gr_names_get(&p->names, name);
        if (outer < 0) continue;
        idx = add_value(s, name, GR_VALUE_OUTER, -1, L);
        if (idx >= 0) s->g->values[idx].type = p->g->values[outer].type;
        return idx < 0 ? -2 : idx;
    }
    return -1;
}

static bool load_tensor(loader *L, const Onnx__TensorProto *tp, const char *what, gr_tensor **out)
{
    *out = gr_arena_alloc(L->a, 1, sizeof(gr_tensor));
    if (!*out) {
        gr_set_err(L->err, "out of memory");
        return false;
    }
    return gr_tensor_from_proto(L->a, tp, L->dir, what, *out, L->err);
}

static bool load_attr(loader *L, scope *s, const Onnx__AttributeProto *ap, const char *nlabel,
                      gr_attr *at)
{
    at->name = gr_arena_strdup(L->a, ap->name);
    const char *what = fmt(L, "%s: %s attribute '%s'", s->where, nlabel, at->name ? at->name : "");
    if (!at->name || !what) return false;
    if (!ap->has_type) {
        gr_set_err(L->err, "%s: has no type", what);
        return false;
    }
    at->kind = (gr_attr_kind)ap->type;
    switch (ap->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: at->f = ap->f; return true;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: at->i = ap->i; return true;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        at->s.len = ap->s.len;
        at->s.data = gr_arena_strndup(L->a, (const char *)ap->s.data, ap->s.len);
        if (!at->s.data) gr_set_err(L->err, "out of memory");
        return at->s.data != NULL;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
        if (!ap->t) {
            gr_set_err(L->err, "%s: of type TENSOR has no tensor", what);
            return false;
        }
        return load_tensor(L, ap->t, what, &at->t);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
        if (!ap->g) {
            gr_set_err(L->err, "%s: of type GRAPH has no graph", what);
            return false;
        }
        at->g = load_graph(L, ap->g, s, what);
        return at->g != NULL;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO:
        at->tp = gr_arena_alloc(L->a, 1, sizeof(gr_type));
        if (!at->tp) {
            gr_set_err(L->err, "out of memory");
            return false;
        }
        return gr_type_from_proto(L->a, ap->tp, what, at->tp, L->err);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        at->n = ap->n_floats;
        at->floats = gr_arena_alloc(L->a, at->n ? at->n : 1, sizeof(float));
        if (at->floats && at->n) memcpy(at->floats, ap->floats, at->n * sizeof(float));
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        at->n = ap->n_ints;
        at->ints = gr_arena_alloc(L->a, at->n ? at->n : 1, sizeof(int64_t));
        if (at->ints && at->n) memcpy(at->ints, ap->ints, at->n * sizeof(int64_t));
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        at->n = ap->n_strings;
        at->strings = gr_arena_alloc(L->a, at->n ? at->n : 1, sizeof(gr_bytes));
        for (size_t k = 0; at->strings && k < at->n; k++) {
            at->strings[k].len = ap->strings[k].len;
            at->strings[k].data = gr_arena_strndup(L->a, (const char *)ap->strings[k].data,
                                                   ap->strings[k].len);
            if (!at->strings[k].data) at->strings = NULL;
        }
        if (!at->strings) break;
        return true;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
        at->n = ap->n_tensors;
        at->tensors = gr_arena_alloc(L->a, at->n ? at->n : 1, sizeof(gr_tensor *));
        if (!at->tensors) break;
        for (size_t k = 0; k < at->n; k++) {
            const char *w = fmt(L, "%s tensor %zu", what, k);
            if (!w || !load_tensor(L, ap->tensors[k], w, &at->tensors[k])) return false;
        }
        return true;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
        at->n = ap->n_graphs;
        at->graphs = gr_arena_alloc(L->a, at->n ? at->n : 1, sizeof(gr_graph *));
        if (!at->graphs) break;
        for (size_t k = 0; k < at->n; k++) {
            const char *w = fmt(L, "%s graph %zu", what, k);
            if (!w || !(at->graphs[k] = load_graph(L, ap->graphs[k], s, w))) return false;
        }
        return true;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS:
        at->n = ap->n_type_protos;
        at->types = gr_arena_alloc(L->a, at->n ? at->n : 1, sizeof(gr_type *));
        if (!at->types) break;
        for (size_t k = 0; k < at->n; k++) {
            at->types[k] = gr_arena_alloc(L->a, 1, sizeof(gr_type));
            if (!at->types[k]) {
                gr_set_err(L->err, "out of memory");
                return false;
            }
            if (!gr_type_from_proto(L->a, ap->type_protos[k], what, at->types[k], L->err))
                return false;
        }
        return true;
    default:
        gr_set_err(L->err, "%s: attribute type %d (sparse tensors and unknown types) is not supported",
                   what, (int)ap->type);
        return false;
    }
    if (!at->floats && !at->ints && !at->strings) {
        gr_set_err(L->err, "out of memory");
        return false;
    }
    return true;
}

static bool declare_type(loader *L, scope *s, int idx, const Onnx__ValueInfoProto *vi,
                         const char *what)
{
    gr_value *v = &s->g->values[idx];
    if (v->type.kind != GR_TYPE_UNKNOWN) return true; /* an initializer's own type wins */
    return gr_type_from_proto(L->a, vi->type, what, &v->type, L->err);
}

static bool load_nodes(loader *L, scope *s, const Onnx__GraphProto *gp)
{
    gr_graph *g = s->g;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        gr_node *n = &g->nodes[i];
        const char *label = node_label(L, np, i);
        n->name = gr_arena_strdup(L->a, np->name);
        n->op_type = gr_arena_strdup(L->a, np->op_type);
        n->domain = gr_arena_strdup(L->a, np->domain);
        n->inputs = gr_arena_alloc(L->a, np->n_input + 1, sizeof(int));
        n->outputs = gr_arena_alloc(L->a, np->n_output + 1, sizeof(int));
        n->attrs = gr_arena_alloc(L->a, np->n_attribute + 1, sizeof(gr_attr));
        if (!label || !n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs || !n->attrs) {
            gr_set_err(L->err, "out of memory");
            return false;
        }
        for (size_t k = 0; k < np->n_input; k++) {
            const char *in = np->input[k];
            if (!in || !*in) {
                n->inputs[n->n_inputs++] = -1;
                continue;
            }
            int idx = resolve(s, in, L);
            if (idx == -1)
                gr_set_err(L->err,
                           "%s: %s input %zu names unknown value '%s' (not a graph input, an "
                           "initializer or an output of an earlier node)",
                           s->where, label, k, in);
            if (idx < 0) return false;
            n->inputs[n->n_inputs++] = idx;
        }
        /* Before the outputs: a subgraph sees the values before its node. */
        for (size_t k = 0; k < np->n_attribute; k++)
            if (!load_attr(L, s, np->attribute[k], label, &n->attrs[n->n_attrs++])) return false;
        for (size_t k = 0; k < np->n_output; k++) {
            const char *out = np->output[k];
            if (!out || !*out) {
                n->outputs[n->n_outputs++] = -1;
                continue;
            }
            if (gr_names_get(&s->names, out) >= 0) {
                gr_set_err(L->err, "%s: %s output %zu '%s' is already defined in the graph",
                           s->where, label, k, out);
                return false;
            }
            int idx = add_value(s, out, GR_VALUE_NODE, (int)i, L);
            if (idx < 0) return false;
            n->outputs[n->n_outputs++] = idx;
        }
        g->n_nodes++;
    }
    return true;
}

static gr_graph *load_graph(loader *L, const Onnx__GraphProto *gp, const scope *parent,
                            const char *where)
{
    scope s = {.parent = parent, .where = where};
    gr_graph *g = s.g = gr_arena_alloc(L->a, 1, sizeof(gr_graph));
    size_t cap = gp->n_input + gp->n_initializer + gp->n_output + 1;
    for (size_t i = 0; i < gp->n_node; i++) cap += gp->node[i]->n_input + gp->node[i]->n_output;
    if (!g || cap > INT32_MAX || !gr_names_init(&s.names, cap)) {
        gr_set_err(L->err, "%s: out of memory", where);
        return NULL;
    }
    bool ok = false;
    g->name = gr_arena_strdup(L->a, gp->name);
    g->values = gr_arena_alloc(L->a, cap, sizeof(gr_value));
    g->nodes = gr_arena_alloc(L->a, gp->n_node + 1, sizeof(gr_node));
    g->inputs = gr_arena_alloc(L->a, gp->n_input + 1, sizeof(int));
    g->outputs = gr_arena_alloc(L->a, gp->n_output + 1, sizeof(int));
    if (!g->name || !g->values || !g->nodes || !g->inputs || !g->outputs) {
        gr_set_err(L->err, "%s: out of memory", where);
        goto done;
    }
    if (gp->n_sparse_initializer) {
        gr_set_err(L->err, "%s: sparse initializer '%s' is not supported", where,
                   gp->sparse_initializer[0]->values && gp->sparse_initializer[0]->values->name
                       ? gp->sparse_initializer[0]->values->name : "");
        goto done;
    }
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        const char *name = tp->name ? tp->name : "";
        const char *what = fmt(L, "%s: initializer '%s'", where, name);
        if (!what) goto done;
        if (!*name) {
            gr_set_err(L->err, "%s: initializer %zu has no name", where, i);
            goto done;
        }
        if (gr_names_get(&s.names, name) >= 0) {
            gr_set_err(L->err, "%s: appears twice", what);
            goto done;
        }
        int idx = add_value(&s, name, GR_VALUE_CONST, -1, L);
        if (idx < 0) goto done;
        gr_value *v = &g->values[idx];
        if (!load_tensor(L, tp, what, &v->data)) goto done;
        v->type.kind = GR_TYPE_TENSOR;
        v->type.elem_type = v->data->elem_type;
        v->type.dtype = v->data->dtype;
        v->type.ndim = v->data->ndim;
        v->type.shape = v->data->shape;
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        const char *name = vi->name ? vi->name : "";
        const char *what = fmt(L, "%s: graph input '%s'", where, name);
        if (!what) goto done;
        int idx = gr_names_get(&s.names, name);
        if (idx >= 0 && g->values[idx].kind != GR_VALUE_CONST) {
            gr_set_err(L->err, "%s: appears twice", what);
            goto done;
        }
        if (!*name) {
            gr_set_err(L->err, "%s: graph input %zu has no name", where, i);
            goto done;
        }
        if (idx < 0 && (idx = add_value(&s, name, GR_VALUE_INPUT, -1, L)) < 0) goto done;
        if (!declare_type(L, &s, idx, vi, what)) goto done;
        g->inputs[g->n_inputs++] = idx;
    }
    if (!load_nodes(L, &s, gp)) goto done;
    for (size_t i = 0; i < gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = gp->value_info[i];
        int idx = vi->name ? gr_names_get(&s.names, vi->name) : -1;
        /* value_info may describe values this graph never uses: nothing to type then. */
        if (idx < 0) continue;
        const char *what = fmt(L, "%s: value_info '%s'", where, vi->name);
        if (!what || !declare_type(L, &s, idx, vi, what)) goto done;
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        const char *name = vi->name ? vi->name : "";
        const char *what = fmt(L, "%s: graph output '%s'", where, name);
        if (!what) goto done;
        int idx = *name ? resolve(&s, name, L) : -1;
        if (idx == -1)
            gr_set_err(L->err, "%s: is not a graph input, an initializer or a node output", what);
        if (idx < 0 || !declare_type(L, &s, idx, vi, what)) goto done;
        g->outputs[g->n_outputs++] = idx;
    }
    ok = true;
done:
    gr_names_free(&s.names);
    return ok ? g : NULL;
}

gr_model *gr_model_load(const char *path, char **err)
{
    if (err) *err = NULL;
    if (!path) {
        gr_set_err(err, "gr_model_load: path is NULL");
        return NULL;
    }
    size_t len = 0;
    unsigned char *buf = gr_read_file(path, &len, err);
    if (!buf) return NULL;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);
    free(buf);
    if (!mp) {
        gr_set_err(err, "%s: cannot parse as an ONNX model (truncated, or not an ONNX file)", path);
        return NULL;
    }
    gr_arena *a = gr_arena_new();
    gr_model *m = a ? gr_arena_alloc(a, 1, sizeof(gr_model)) : NULL;
    loader L = {.a = a, .err = err};
    bool ok = false;
    if (!m) {
        gr_set_err(err, "%s: out of memory", path);
        goto done;
    }
    /* Protobuf accepts many byte strings; ir_version is the field every
     * ONNX model must have, so a file without it is not one. */
    if (!mp->has_ir_version) {
        gr_set_err(err, "%s: not an ONNX model (it has no ir_version)", path);
        goto done;
    }
    if (!mp->graph) {
        gr_set_err(err, "%s: the model has no graph", path);
        goto done;
    }
    m->priv_ = a;
    m->path = gr_arena_strdup(a, path);
    m->ir_version = mp->ir_version;
    m->producer_name = gr_arena_strdup(a, mp->producer_name);
    m->producer_version = gr_arena_strdup(a, mp->producer_version);
    m->opsets = gr_arena_alloc(a, mp->n_opset_import + 1, sizeof(gr_opset));
    L.dir = gr_dirname(a, path);
    if (!m->path || !m->producer_name || !m->producer_version || !m->opsets || !L.dir) {
        gr_set_err(err, "%s: out of memory", path);
        goto done;
    }
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *op = mp->opset_import[i];
        gr_opset *o = &m->opsets[m->n_opsets++];
        o->domain = gr_arena_strdup(a, op->domain);
        o->version = op->version;
        if (!o->domain) {
            gr_set_err(err, "%s: out of memory", path);
            goto done;
        }
        if (!*o->domain || strcmp(o->domain, "ai.onnx") == 0) m->opset = o->version;
    }
    m->graph = load_graph(&L, mp->graph, NULL, path);
    ok = m->graph != NULL;
done:
    onnx__model_proto__free_unpacked(mp, NULL);
    if (!ok) {
        gr_arena_free(a);
        return NULL;
    }
    return m;
}

void gr_model_free(gr_model *m)
{
    if (m) gr_arena_free(m->priv_);
}

int gr_graph_find_value(const gr_graph *g, const char *name)
{
    for (int i = 0; g && name && i < g->n_values; i++)
        if (strcmp(g->values[i].name, name) == 0) return i;
    return -1;
}

const gr_attr *gr_node_attr(const gr_node *n, const char *name)
{
    for (int i = 0; n && name && i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}
