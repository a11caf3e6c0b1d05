/* graph/group_key.c — a group of nodes written as its canonical key
 * (format in group.h). */
#include "graph/group.h"
#include "graph/lower.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable string; `oom` once an allocation failed. */
typedef struct {
    char *s;
    size_t len, cap;
    bool oom;
} kbuf;

static void kb_add(kbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void kb_add(kbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        va_end(ap2);
        return;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = true;
            va_end(ap2);
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)n;
}

/* Strings are kept to a safe alphabet so the key stays one parseable line. */
static void kb_str(kbuf *b, const char *s, size_t len)
{
    kb_add(b, "'");
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '_' || ch == '-' || ch == '.')
            kb_add(b, "%c", ch);
        else
            kb_add(b, "%%%02X", ch);
    }
    kb_add(b, "'");
}

static void kb_float(kbuf *b, double v, bool dbl)
{
    if (isnan(v)) kb_add(b, "nan");
    else if (isinf(v)) kb_add(b, v > 0 ? "inf" : "-inf");
    else kb_add(b, dbl ? "%.17g" : "%.9g", v);
}

static void kb_type(kbuf *b, int elem_type, int ndim, const int64_t *shape)
{
    kb_add(b, "%s[", gr_elem_type_name(elem_type));
    for (int d = 0; d < ndim; d++) kb_add(b, "%s%" PRId64, d ? "," : "", shape[d]);
    kb_add(b, "]");
}

/* A tensor literal: TYPE[dims]{v,...}. false for types a key cannot hold. */
static bool kb_tensor(kbuf *b, const gr_tensor *t)
{
    if (t->elem_type == GR_STRING || t->elem_type == GR_FLOAT16 ||
        t->elem_type == GR_BFLOAT16 || t->elem_type == GR_COMPLEX64 ||
        t->elem_type == GR_COMPLEX128)
        return false;
    kb_type(b, t->elem_type, t->ndim, t->shape);
    kb_add(b, "{");
    const unsigned char *p = t->data;
    for (int64_t i = 0; i < t->numel; i++) {
        if (i) kb_add(b, ",");
        switch (t->elem_type) {
        case GR_FLOAT: {
            float v;
            memcpy(&v, p + i * 4, 4);
            kb_float(b, v, false);
            break;
        }
        case GR_DOUBLE: {
            double v;
            memcpy(&v, p + i * 8, 8);
            kb_float(b, v, true);
            break;
        }
        case GR_INT8: kb_add(b, "%d", (int)((const int8_t *)p)[i]); break;
        case GR_UINT8:
        case GR_BOOL: kb_add(b, "%u", (unsigned)p[i]); break;
        case GR_INT16: {
            int16_t v;
            memcpy(&v, p + i * 2, 2);
            kb_add(b, "%d", v);
            break;
        }
        case GR_UINT16: {
            uint16_t v;
            memcpy(&v, p + i * 2, 2);
            kb_add(b, "%u", v);
            break;
        }
        case GR_INT32: {
            int32_t v;
            memcpy(&v, p + i * 4, 4);
            kb_add(b, "%" PRId32, v);
            break;
        }
        case GR_UINT32: {
            uint32_t v;
            memcpy(&v, p + i * 4, 4);
            kb_add(b, "%" PRIu32, v);
            break;
        }
        case GR_INT64: {
            int64_t v;
            memcpy(&v, p + i * 8, 8);
            kb_add(b, "%" PRId64, v);
            break;
        }
        case GR_UINT64: {
            uint64_t v;
            memcpy(&v, p + i * 8, 8);
            kb_add(b, "%" PRIu64, v);
            break;
        }
        default: return false;
        }
    }
    kb_add(b, "}");
    return true;
}

static int cmp_attr(const void *a, const void *b)
{
    return strcmp((*(const gr_attr *const *)a)->name, (*(const gr_attr *const *)b)->name);
}

/* Writes a node's attributes sorted by name; false (and *bad the attribute)
 * for a kind a key cannot hold. */
static bool kb_attrs(kbuf *b, const gr_node *n, const gr_attr **bad)
{
    if (!n->n_attrs) return true;
    const gr_attr **sorted = malloc((size_t)n->n_attrs * sizeof *sorted);
    if (!sorted) {
        b->oom = true;
        return true;
    }
    for (int i = 0; i < n->n_attrs; i++) sorted[i] = &n->attrs[i];
    qsort(sorted, (size_t)n->n_attrs, sizeof *sorted, cmp_attr);
    kb_add(b, "{");
    bool ok = true;
    for (int i = 0; i < n->n_attrs && ok; i++) {
        const gr_attr *a = sorted[i];
        kb_add(b, "%s%s=", i ? "," : "", a->name);
        switch (a->kind) {
        case GR_ATTR_INT: kb_add(b, "i%" PRId64, a->i); break;
        case GR_ATTR_FLOAT:
            kb_add(b, "f");
            kb_float(b, a->f, false);
            break;
        case GR_ATTR_STRING:
            kb_add(b, "s");
            kb_str(b, a->s.data ? a->s.data : "", a->s.len);
            break;
        case GR_ATTR_INTS:
            kb_add(b, "I[");
            for (size_t j = 0; j < a->n; j++) kb_add(b, "%s%" PRId64, j ? "," : "", a->ints[j]);
            kb_add(b, "]");
            break;
        case GR_ATTR_FLOATS:
            kb_add(b, "F[");
            for (size_t j = 0; j < a->n; j++) {
                if (j) kb_add(b, ",");
                kb_float(b, a->floats[j], false);
            }
            kb_add(b, "]");
            break;
        case GR_ATTR_STRINGS:
            kb_add(b, "S[");
            for (size_t j = 0; j < a->n; j++) {
                if (j) kb_add(b, ",");
                kb_str(b, a->strings[j].data ? a->strings[j].data : "", a->strings[j].len);
            }
            kb_add(b, "]");
            break;
        case GR_ATTR_TENSOR:
            kb_add(b, "t");
            ok = a->t && kb_tensor(b, a->t);
            break;
        default: ok = false; break;
        }
        if (!ok) *bad = a;
    }
    kb_add(b, "}");
    free(sorted);
    return ok;
}

void gr_group_io_free(gr_group_io *io)
{
    if (!io) return;
    free(io->inputs);
    free(io->outputs);
    memset(io, 0, sizeof *io);
}

char *gr_group_key(const gr_model *m, int nnodes, const int *nodes, gr_group_io *io, char **err)
{
    const gr_graph *g = m->graph;
    int nv = g->n_values;
    /* Canonical numbers: runtime and static uses of one value are distinct
     * key values (a static use carries the contents). */
    int *num = malloc((size_t)(nv ? nv : 1) * sizeof *num);
    int *cnum = malloc((size_t)(nv ? nv : 1) * sizeof *cnum);
    bool *member = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *member);
    int *ins = malloc((size_t)(nv ? nv : 1) * sizeof *ins);
    int *outs = malloc((size_t)(nv ? nv : 1) * sizeof *outs);
    kbuf b = {0}, body = {0};
    char label[512];
    int next = 0, nin = 0, nout = 0;
    uint64_t constant = 0;
    bool ok = num && cnum && member && ins && outs;
    if (!ok) goto oom;
    for (int v = 0; v < nv; v++) num[v] = cnum[v] = -1;
    for (int i = 0; i < nnodes; i++) member[nodes[i]] = true;

    kb_add(&b, GR_KEY_PREFIX "opset=%" PRId64, m->opset);
    for (int i = 0; i < nnodes && ok; i++) {
        const gr_node *n = &g->nodes[nodes[i]];
        int64_t opset = m->opset;
        for (int k = 0; k < n->n_inputs && ok; k++) {
            int v = n->inputs[k];
            if (v < 0) continue;
            const gr_value *val = &g->values[v];
            bool produced_here = val->kind == GR_VALUE_NODE && val->producer >= 0 &&
                                 member[val->producer];
            if (gr_lower_input_static(n, k, opset) || gr_lower_input_by_value(g, n, k)) {
                if (cnum[v] >= 0) continue;
                /* Static only when inference needs its value (Dropout's
                 * ratio in training): a run-time one is a `t` item. */
                if (!val->data && gr_input_type_only(n, k)) {
                    cnum[v] = next++;
                    kb_add(&b, ";t v%d:", cnum[v]);
                    kb_type(&b, val->type.elem_type, val->type.ndim, val->type.shape);
                    continue;
                }
                if (!val->data) {
                    gr_set_err(err, "%s: %s: input %d ('%s') must be a constant (an initializer, a "
                                    "Constant node or folded shape arithmetic)",
                               m->path, gr_node_label(g, nodes[i], label, sizeof label), k, val->name);
                    ok = false;
                    break;
                }
                cnum[v] = next++;
                kb_add(&b, ";c v%d:", cnum[v]);
                if (!kb_tensor(&b, val->data)) {
                    gr_set_err(err, "%s: %s: constant input '%s' has element type %s, which a "
                                    "workload key cannot hold",
                               m->path, gr_node_label(g, nodes[i], label, sizeof label), val->name,
                               gr_elem_type_name(val->data->elem_type));
                    ok = false;
                }
                continue;
            }
            /* Read for its type and shape alone: a `t` item, no argument. */
            if (gr_input_type_only(n, k) && !produced_here) {
                if (cnum[v] >= 0) continue;
                cnum[v] = next++;
                kb_add(&b, ";t v%d:", cnum[v]);
                kb_type(&b, val->type.elem_type, val->type.ndim, val->type.shape);
                continue;
            }
            if (num[v] >= 0 || produced_here) continue;
            if (nin == 64) {
                gr_set_err(err, "%s: a group of %d nodes from %s has more than 64 inputs", m->path,
                           nnodes, gr_node_label(g, nodes[0], label, sizeof label));
                ok = false;
                break;
            }
            num[v] = next++;
            bool fixed = val->data != NULL;
            if (fixed) constant |= 1ull << nin;
            ins[nin++] = v;
            kb_add(&b, ";%c v%d:", fixed ? 'w' : 'x', num[v]);
            kb_type(&b, val->type.elem_type, val->type.ndim, val->type.shape);
        }
    }
    /* Then the nodes, their outputs numbered after every input, so that a
     * key's values count up in the order its items define them. */
    for (int i = 0; i < nnodes && ok; i++) {
        const gr_node *n = &g->nodes[nodes[i]];
        int64_t opset = m->opset;
        /* The node itself. */
        kb_add(&body, ";n ");
        for (int k = 0, w = 0; k < n->n_outputs; k++) {
            if (w++) kb_add(&body, ",");
            if (n->outputs[k] < 0) continue; /* left out: an empty name */
            num[n->outputs[k]] = next++;
            kb_add(&body, "v%d", num[n->outputs[k]]);
        }
        kb_add(&body, "=");
        if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0)
            kb_add(&body, "%s:", n->domain);
        kb_add(&body, "%s(", n->op_type);
        for (int k = 0; k < n->n_inputs; k++) {
            if (k) kb_add(&body, ",");
            int v = n->inputs[k];
            if (v < 0) continue;
            bool by_cnum = gr_lower_input_static(n, k, opset) || gr_lower_input_by_value(g, n, k) ||
                           (gr_input_type_only(n, k) && cnum[v] >= 0);
            kb_add(&body, "v%d", by_cnum ? cnum[v] : num[v]);
        }
        kb_add(&body, ")");
        const gr_attr *bad = NULL;
        if (!kb_attrs(&body, n, &bad)) {
            if (bad->kind == GR_ATTR_TENSOR && bad->t)
                gr_set_err(err, "%s: %s: attribute '%s' is a %s tensor, an element type Loom "
                                "cannot compute",
                           m->path, gr_node_label(g, nodes[i], label, sizeof label), bad->name,
                           gr_elem_type_name(bad->t->elem_type));
            else
                gr_set_err(err, "%s: %s: attribute '%s' is of a kind a workload key cannot hold",
                           m->path, gr_node_label(g, nodes[i], label, sizeof label), bad->name);
            ok = false;
        }
    }
    if (!ok) goto fail;
    /* Outputs: produced here and read outside the group or by the graph. */
    for (int i = 0; i < nnodes; i++) {
        const gr_node *n = &g->nodes[nodes[i]];
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v < 0) continue;
            bool used = false;
            for (int o = 0; o < g->n_outputs && !used; o++) used = g->outputs[o] == v;
            for (int j = 0; j < g->n_nodes && !used; j++) {
                if (member[j]) continue;
                for (int q = 0; q < g->nodes[j].n_inputs && !used; q++)
                    used = g->nodes[j].inputs[q] == v;
            }
            if (used) outs[nout++] = v;
        }
    }
    if (nout == 0) {
        gr_set_err(err, "%s: a group of %d nodes from %s has no output anything reads", m->path,
                   nnodes, gr_node_label(g, nodes[0], label, sizeof label));
        goto fail;
    }
    kb_add(&b, "%s;out ", body.s ? body.s : "");
    for (int o = 0; o < nout; o++) kb_add(&b, "%sv%d", o ? "," : "", num[outs[o]]);
    kb_add(&b, ")");
    if (b.oom || body.oom) goto oom;
    if (io) {
        io->ninputs = nin;
        io->inputs = ins;
        io->constant = constant;
        io->noutputs = nout;
        io->outputs = outs;
        ins = outs = NULL;
    }
    free(num);
    free(cnum);
    free(member);
    free(ins);
    free(outs);
    free(body.s);
    return b.s;
oom:
    gr_set_err(err, "%s: out of memory writing a group's key", m->path);
fail:
    free(num);
    free(cnum);
    free(member);
    free(ins);
    free(outs);
    free(body.s);
    free(b.s);
    return NULL;
}
