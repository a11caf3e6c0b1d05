/* graph/group_build.c — a group key read back into a model of its own, and
 * the ops builder that lowers it to a te computation (format in group.h). */
#include "graph/group.h"
#include "graph/lower.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX_ITEMS 4096
#define GR_MAX_DIMS_KEY 64

typedef struct {
    const char *key;
    const char *p;
    gr_arena *a;
    char **err;
    /* values and nodes as they are read (copied into the arena at the end) */
    gr_value *vals;
    int nvals, capvals;
    gr_node *nodes;
    int nnodes, capnodes;
    int *inputs, ninputs;
    int *outputs, noutputs;
    uint64_t constant; /* bit i: graph input i is a `w` item */
} kparse;

static bool kfail(kparse *k, const char *what)
{
    gr_set_err(k->err, "workload key '%.200s%s': %s at offset %d", k->key,
               strlen(k->key) > 200 ? "..." : "", what, (int)(k->p - k->key));
    return false;
}

static bool eat(kparse *k, const char *s)
{
    size_t n = strlen(s);
    if (strncmp(k->p, s, n) != 0) return false;
    k->p += n;
    return true;
}

static bool expect(kparse *k, const char *s)
{
    if (eat(k, s)) return true;
    char msg[64];
    snprintf(msg, sizeof msg, "expected '%s'", s);
    return kfail(k, msg);
}

static bool read_int(kparse *k, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(k->p, &end, 10);
    if (end == k->p || errno) return kfail(k, "expected an integer");
    k->p = end;
    *out = v;
    return true;
}

static bool read_double(kparse *k, double *out)
{
    char *end;
    double v = strtod(k->p, &end);
    if (end == k->p) return kfail(k, "expected a number");
    k->p = end;
    *out = v;
    return true;
}

/* An identifier of [A-Za-z0-9_.] into the arena. */
static char *read_ident(kparse *k)
{
    const char *s = k->p;
    while ((*k->p >= 'a' && *k->p <= 'z') || (*k->p >= 'A' && *k->p <= 'Z') ||
           (*k->p >= '0' && *k->p <= '9') || *k->p == '_' || *k->p == '.')
        k->p++;
    if (k->p == s) {
        kfail(k, "expected a name");
        return NULL;
    }
    char *r = gr_arena_strndup(k->a, s, (size_t)(k->p - s));
    if (!r) kfail(k, "out of memory");
    return r;
}

/* A quoted %XX-escaped string. */
static bool read_str(kparse *k, gr_bytes *out)
{
    if (!expect(k, "'")) return false;
    const char *s = k->p;
    while (*k->p && *k->p != '\'') k->p++;
    if (*k->p != '\'') return kfail(k, "unterminated string");
    size_t n = (size_t)(k->p - s);
    char *d = gr_arena_alloc(k->a, n + 1, 1);
    if (!d) return kfail(k, "out of memory");
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n + 1) {
            unsigned v;
            if (sscanf(s + i + 1, "%2x", &v) != 1) return kfail(k, "bad escape in a string");
            d[len++] = (char)v;
            i += 2;
        } else {
            d[len++] = s[i];
        }
    }
    k->p++;
    out->data = d;
    out->len = len;
    return true;
}

static bool read_elem_type(kparse *k, int *out)
{
    const char *s = k->p;
    while (*k->p && *k->p != '[') k->p++;
    size_t n = (size_t)(k->p - s);
    for (int t = 1; t <= GR_BFLOAT16; t++) {
        const char *name = gr_elem_type_name(t);
        if (strlen(name) == n && strncmp(name, s, n) == 0) {
            *out = t;
            return true;
        }
    }
    k->p = s;
    return kfail(k, "unknown element type");
}

/* TYPE[d0,...] */
static bool read_type(kparse *k, int *elem, int *ndim, int64_t *shape)
{
    if (!read_elem_type(k, elem) || !expect(k, "[")) return false;
    *ndim = 0;
    while (*k->p != ']') {
        if (*ndim == GR_MAX_DIMS_KEY) return kfail(k, "too many dimensions");
        if (*ndim && !expect(k, ",")) return false;
        if (!read_int(k, &shape[*ndim])) return false;
        if (shape[*ndim] < 0) return kfail(k, "negative extent");
        (*ndim)++;
    }
    k->p++;
    return true;
}

static bool new_tensor(kparse *k, int elem, int ndim, const int64_t *shape, gr_tensor **out)
{
    gr_tensor *t = gr_arena_alloc(k->a, 1, sizeof *t);
    int64_t *s = gr_arena_alloc(k->a, ndim ? (size_t)ndim : 1, sizeof *s);
    if (!t || !s) return kfail(k, "out of memory");
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        s[d] = shape[d];
        if (shape[d] && numel > INT64_MAX / shape[d]) return kfail(k, "tensor too large");
        numel *= shape[d];
    }
    if (numel > 1 << 20) return kfail(k, "constant too large for a key");
    t->name = "";
    t->elem_type = elem;
    if (!gr_elem_type_dl(elem, &t->dtype) || gr_elem_type_size(elem) == 0 ||
        elem == GR_FLOAT16 || elem == GR_BFLOAT16 || elem == GR_COMPLEX64 || elem == GR_COMPLEX128)
        return kfail(k, "element type not allowed in a constant");
    t->ndim = ndim;
    t->shape = s;
    t->numel = numel;
    t->nbytes = (size_t)numel * gr_elem_type_size(elem);
    t->data = gr_arena_alloc(k->a, t->nbytes ? t->nbytes : 1, 1);
    if (!t->data) return kfail(k, "out of memory");
    t->dl = (DLTensor){.data = t->data, .device = {kDLCPU, 0}, .ndim = ndim, .dtype = t->dtype,
                       .shape = s};
    *out = t;
    return true;
}

/* TYPE[dims]{v,...} */
static bool read_tensor(kparse *k, gr_tensor **out)
{
    int elem, ndim;
    int64_t shape[GR_MAX_DIMS_KEY];
    if (!read_type(k, &elem, &ndim, shape) || !new_tensor(k, elem, ndim, shape, out)) return false;
    gr_tensor *t = *out;
    if (!expect(k, "{")) return false;
    unsigned char *p = t->data;
    for (int64_t i = 0; i < t->numel; i++) {
        if (i && !expect(k, ",")) return false;
        if (elem == GR_FLOAT || elem == GR_DOUBLE) {
            double v;
            if (!read_double(k, &v)) return false;
            if (elem == GR_FLOAT) {
                float f = (float)v;
                memcpy(p + i * 4, &f, 4);
            } else {
                memcpy(p + i * 8, &v, 8);
            }
            continue;
        }
        int64_t v;
        if (elem == GR_UINT64) {
            char *end;
            errno = 0;
            unsigned long long u = strtoull(k->p, &end, 10);
            if (end == k->p || errno) return kfail(k, "expected an integer");
            k->p = end;
            memcpy(p + i * 8, &u, 8);
            continue;
        }
        if (!read_int(k, &v)) return false;
        size_t sz = gr_elem_type_size(elem);
        if (sz == 1) {
            uint8_t x = (uint8_t)v;
            memcpy(p + i, &x, 1);
        } else if (sz == 2) {
            uint16_t x = (uint16_t)v;
            memcpy(p + i * 2, &x, 2);
        } else if (sz == 4) {
            uint32_t x = (uint32_t)v;
            memcpy(p + i * 4, &x, 4);
        } else {
            memcpy(p + i * 8, &v, 8);
        }
    }
    return expect(k, "}");
}

static int add_value(kparse *k, const char *what)
{
    char name[32];
    snprintf(name, sizeof name, "v%d", k->nvals);
    int64_t n;
    if (!expect(k, "v") || !read_int(k, &n)) return -1;
    if (n != k->nvals) {
        kfail(k, "value numbers must count up from v0");
        return -1;
    }
    (void)what;
    if (k->nvals == k->capvals) {
        int cap = k->capvals ? 2 * k->capvals : 16;
        gr_value *v = realloc(k->vals, (size_t)cap * sizeof *v);
        if (!v) {
            kfail(k, "out of memory");
            return -1;
        }
        k->vals = v;
        k->capvals = cap;
    }
    gr_value *v = &k->vals[k->nvals];
    memset(v, 0, sizeof *v);
    v->name = gr_arena_strdup(k->a, name);
    v->producer = -1;
    if (!v->name) {
        kfail(k, "out of memory");
        return -1;
    }
    return k->nvals++;
}

/* A value reference vN to an existing value. */
static bool read_ref(kparse *k, int *out)
{
    int64_t n;
    if (!expect(k, "v") || !read_int(k, &n)) return false;
    if (n < 0 || n >= k->nvals) return kfail(k, "reference to an undefined value");
    *out = (int)n;
    return true;
}

static bool set_tensor_type(kparse *k, gr_type *t, int elem, int ndim, const int64_t *shape)
{
    t->kind = GR_TYPE_TENSOR;
    t->elem_type = elem;
    gr_elem_type_dl(elem, &t->dtype);
    t->ndim = ndim;
    t->shape = gr_arena_alloc(k->a, ndim ? (size_t)ndim : 1, sizeof(int64_t));
    if (!t->shape) return kfail(k, "out of memory");
    if (ndim) memcpy(t->shape, shape, (size_t)ndim * sizeof(int64_t));
    return true;
}

static bool push_int(kparse *k, int **arr, int *n, int v)
{
    int *a = realloc(*arr, (size_t)(*n + 1) * sizeof *a);
    if (!a) return kfail(k, "out of memory");
    a[(*n)++] = v;
    *arr = a;
    return true;
}

static bool read_attr(kparse *k, gr_attr *at)
{
    if (!(at->name = read_ident(k)) || !expect(k, "=")) return false;
    char kind = *k->p++;
    switch (kind) {
    case 'i': at->kind = GR_ATTR_INT; return read_int(k, &at->i);
    case 'f': {
        double v;
        at->kind = GR_ATTR_FLOAT;
        if (!read_double(k, &v)) return false;
        at->f = (float)v;
        return true;
    }
    case 's': at->kind = GR_ATTR_STRING; return read_str(k, &at->s);
    case 't': at->kind = GR_ATTR_TENSOR; return read_tensor(k, &at->t);
    case 'I':
    case 'F':
    case 'S': {
        at->kind = kind == 'I' ? GR_ATTR_INTS : kind == 'F' ? GR_ATTR_FLOATS : GR_ATTR_STRINGS;
        if (!expect(k, "[")) return false;
        size_t n = 0;
        for (const char *q = k->p; *q && *q != ']'; q++) n += *q == ',';
        n += *k->p != ']';
        at->ints = gr_arena_alloc(k->a, n ? n : 1, sizeof(int64_t));
        at->floats = gr_arena_alloc(k->a, n ? n : 1, sizeof(float));
        at->strings = gr_arena_alloc(k->a, n ? n : 1, sizeof(gr_bytes));
        if (!at->ints || !at->floats || !at->strings) return kfail(k, "out of memory");
        for (size_t j = 0; j < n; j++) {
            if (j && !expect(k, ",")) return false;
            if (kind == 'I') {
                if (!read_int(k, &at->ints[j])) return false;
            } else if (kind == 'F') {
                double v;
                if (!read_double(k, &v)) return false;
                at->floats[j] = (float)v;
            } else if (!read_str(k, &at->strings[j])) {
                return false;
            }
        }
        at->n = n;
        return expect(k, "]");
    }
    default: k->p--; return kfail(k, "unknown attribute kind");
    }
}

/* n OUTS=[DOMAIN:]OP(INS){ATTRS} */
static bool read_node(kparse *k)
{
    if (k->nnodes == k->capnodes) {
        int cap = k->capnodes ? 2 * k->capnodes : 16;
        gr_node *nn = realloc(k->nodes, (size_t)cap * sizeof *nn);
        if (!nn) return kfail(k, "out of memory");
        k->nodes = nn;
        k->capnodes = cap;
    }
    int self = k->nnodes;
    gr_node *n = &k->nodes[self];
    memset(n, 0, sizeof *n);
    k->nnodes++;
    int outs[64], nouts = 0;
    for (;;) {
        if (nouts == 64) return kfail(k, "too many outputs");
        if (*k->p == 'v') {
            int v = add_value(k, "output");
            if (v < 0) return false;
            k->vals[v].kind = GR_VALUE_NODE;
            k->vals[v].producer = self;
            outs[nouts++] = v;
        } else {
            outs[nouts++] = -1;
        }
        if (!eat(k, ",")) break;
    }
    if (!expect(k, "=")) return false;
    char *op = read_ident(k);
    if (!op) return false;
    n->domain = "";
    if (eat(k, ":")) {
        n->domain = op;
        if (!(op = read_ident(k))) return false;
    }
    n->op_type = op;
    n->name = "";
    if (!expect(k, "(")) return false;
    int ins[64], nins = 0;
    while (*k->p != ')') {
        if (nins == 64) return kfail(k, "too many inputs");
        if (nins && !expect(k, ",")) return false;
        ins[nins] = -1;
        if (*k->p == 'v' && !read_ref(k, &ins[nins])) return false;
        nins++;
    }
    k->p++;
    /* "f()" has no inputs, but "f(,v1)" has an empty first one. */
    n->n_inputs = nins;
    n->inputs = gr_arena_alloc(k->a, nins ? (size_t)nins : 1, sizeof(int));
    n->n_outputs = nouts;
    n->outputs = gr_arena_alloc(k->a, (size_t)nouts, sizeof(int));
    if (!n->inputs || !n->outputs) return kfail(k, "out of memory");
    memcpy(n->inputs, ins, (size_t)nins * sizeof(int));
    memcpy(n->outputs, outs, (size_t)nouts * sizeof(int));
    if (eat(k, "{")) {
        int cap = 1;
        for (const char *q = k->p; *q && *q != ';' && *q != ')'; q++) cap += *q == '=';
        n->attrs = gr_arena_alloc(k->a, (size_t)cap, sizeof(gr_attr));
        if (!n->attrs) return kfail(k, "out of memory");
        while (*k->p != '}') {
            if (n->n_attrs == cap) return kfail(k, "malformed attributes");
            if (n->n_attrs && !expect(k, ",")) return false;
            if (!read_attr(k, &n->attrs[n->n_attrs])) return false;
            n->n_attrs++;
        }
        k->p++;
    }
    return true;
}

static bool read_item(kparse *k)
{
    bool fixed = strncmp(k->p, "w ", 2) == 0;
    if (eat(k, "x ") || eat(k, "w ")) {
        if (fixed && k->ninputs < 64) k->constant |= 1ull << k->ninputs;
        int v = add_value(k, "input");
        int elem, ndim;
        int64_t shape[GR_MAX_DIMS_KEY];
        if (v < 0 || !expect(k, ":") || !read_type(k, &elem, &ndim, shape)) return false;
        k->vals[v].kind = GR_VALUE_INPUT;
        return set_tensor_type(k, &k->vals[v].type, elem, ndim, shape) &&
               push_int(k, &k->inputs, &k->ninputs, v);
    }
    if (eat(k, "c ")) {
        int v = add_value(k, "constant");
        gr_tensor *t;
        if (v < 0 || !expect(k, ":") || !read_tensor(k, &t)) return false;
        k->vals[v].kind = GR_VALUE_CONST;
        k->vals[v].data = t;
        return set_tensor_type(k, &k->vals[v].type, t->elem_type, t->ndim, t->shape);
    }
    if (eat(k, "t ")) {
        /* Known by its type alone: no tensor, no argument (lowering never
         * reads it: gr_input_type_only). */
        int v = add_value(k, "typed");
        int elem, ndim;
        int64_t shape[GR_MAX_DIMS_KEY];
        if (v < 0 || !expect(k, ":") || !read_type(k, &elem, &ndim, shape)) return false;
        k->vals[v].kind = GR_VALUE_OUTER;
        return set_tensor_type(k, &k->vals[v].type, elem, ndim, shape);
    }
    if (eat(k, "n ")) return read_node(k);
    if (eat(k, "out ")) {
        do {
            int v;
            if (!read_ref(k, &v) || !push_int(k, &k->outputs, &k->noutputs, v)) return false;
        } while (eat(k, ","));
        return true;
    }
    return kfail(k, "expected an item (x, w, c, t, n or out)");
}

/* gr_model_from_key, and *constant (may be NULL) the `w` inputs' bits. */
static gr_model *model_from_key(const char *key, uint64_t *constant, char **err)
{
    kparse k = {.key = key, .p = key, .err = err};
    gr_model *m = NULL;
    k.a = gr_arena_new();
    if (!k.a) {
        gr_set_err(err, "out of memory");
        return NULL;
    }
    int64_t opset;
    bool ok = expect(&k, GR_KEY_PREFIX "opset=") && read_int(&k, &opset);
    int items = 0;
    while (ok && eat(&k, ";")) {
        if (++items > KEY_MAX_ITEMS) ok = kfail(&k, "too many items");
        else ok = read_item(&k);
    }
    ok = ok && expect(&k, ")");
    if (ok && *k.p) ok = kfail(&k, "text after the closing ')'");
    if (ok && k.noutputs == 0) ok = kfail(&k, "no 'out' item");
    /* 0: the model imports no default-domain opset (only another domain's operators) */
    if (ok && (opset < 0 || opset > 1000)) ok = kfail(&k, "opset out of range");
    if (ok) {
        m = gr_arena_alloc(k.a, 1, sizeof *m);
        gr_graph *g = gr_arena_alloc(k.a, 1, sizeof *g);
        gr_opset *os = gr_arena_alloc(k.a, 4, sizeof *os);
        gr_value *vals = gr_arena_alloc(k.a, k.nvals ? (size_t)k.nvals : 1, sizeof *vals);
        gr_node *nodes = gr_arena_alloc(k.a, k.nnodes ? (size_t)k.nnodes : 1, sizeof *nodes);
        int *ins = gr_arena_alloc(k.a, k.ninputs ? (size_t)k.ninputs : 1, sizeof(int));
        int *outs = gr_arena_alloc(k.a, (size_t)k.noutputs, sizeof(int));
        if (!m || !g || !os || !vals || !nodes || !ins || !outs) {
            ok = kfail(&k, "out of memory");
            m = NULL;
        } else {
            memcpy(vals, k.vals, (size_t)k.nvals * sizeof *vals);
            memcpy(nodes, k.nodes, (size_t)k.nnodes * sizeof *nodes);
            /* A group may have no run-time input (ConstantOfShape). */
            if (k.ninputs) memcpy(ins, k.inputs, (size_t)k.ninputs * sizeof(int));
            memcpy(outs, k.outputs, (size_t)k.noutputs * sizeof(int));
            m->priv_ = k.a;
            m->path = gr_arena_strdup(k.a, "workload");
            m->ir_version = 8;
            m->producer_name = m->producer_version = "";
            os[0] = (gr_opset){"", opset};
            os[1] = (gr_opset){"com.microsoft", 1};
            os[2] = (gr_opset){"loom", 1};
            os[3] = (gr_opset){"ai.onnx.preview.training", 1};
            m->opsets = os;
            m->n_opsets = 4;
            m->opset = opset;
            g->name = "workload";
            g->values = vals;
            g->n_values = k.nvals;
            g->nodes = nodes;
            g->n_nodes = k.nnodes;
            g->inputs = ins;
            g->n_inputs = k.ninputs;
            g->outputs = outs;
            g->n_outputs = k.noutputs;
            m->graph = g;
        }
    }
    free(k.vals);
    free(k.nodes);
    free(k.inputs);
    free(k.outputs);
    if (!m) {
        gr_arena_free(k.a);
        return NULL;
    }
    if (gr_infer_shapes(m, 0, NULL, err) != 0) {
        gr_model_free(m);
        return NULL;
    }
    if (constant) *constant = k.constant;
    return m;
}

gr_model *gr_model_from_key(const char *key, char **err) { return model_from_key(key, NULL, err); }

int gr_build_key(te_ctx *ctx, const char *key, ops_built *out)
{
    char *err = NULL;
    uint64_t constant = 0;
    gr_model *m = model_from_key(key, &constant, &err);
    if (!m) {
        te_error(ctx, "%s", err ? err : "out of memory");
        free(err);
        return -1;
    }
    const gr_graph *g = m->graph;
    te_tensor **vals = te_alloc(ctx, (size_t)(g->n_values ? g->n_values : 1) * sizeof *vals);
    te_tensor **args = te_alloc(ctx, (size_t)(g->n_inputs + g->n_outputs) * sizeof *args);
    int rc = -1;
    double flops = 0;
    if (!vals || !args) goto done;
    for (int i = 0; i < g->n_inputs; i++) {
        const gr_value *v = &g->values[g->inputs[i]];
        te_dtype dt;
        int nd;
        int64_t shape[TE_MAX_DIMS];
        if (!gr_te_dtype(v->type.elem_type, &dt) || !gr_te_shape(&v->type, &nd, shape)) {
            te_error(ctx, "workload: input %s of type %s with %d dimensions has no te form",
                     v->name, gr_elem_type_name(v->type.elem_type), v->type.ndim);
            goto done;
        }
        vals[g->inputs[i]] = args[i] = te_placeholder(ctx, v->name, dt, nd, shape);
        if (!args[i]) goto done;
    }
    for (int i = 0; i < g->n_nodes; i++)
        if (!gr_lower_node(ctx, m, g, i, vals, &flops, &err)) {
            te_error(ctx, "%s", err ? err : "out of memory");
            goto done;
        }
    for (int o = 0; o < g->n_outputs; o++) {
        te_tensor *t = vals[g->outputs[o]];
        if (!t || t->kind != TE_OP_COMPUTE) {
            te_error(ctx, "workload: output %s is not computed by the group",
                     g->values[g->outputs[o]].name);
            goto done;
        }
        args[g->n_inputs + o] = t;
    }
    out->nargs = g->n_inputs + g->n_outputs;
    out->args = args;
    out->nouts = g->n_outputs;
    out->outs = args + g->n_inputs;
    out->flops = flops;
    out->constant_args = constant;
    out->tf32 = false; /* a model's float32 products stay float32 */
    rc = 0;
done:
    free(err);
    gr_model_free(m);
    return rc;
}

int gr_register_builder(void) { return ops_register_builder(GR_KEY_PREFIX, gr_build_key); }

/* Group keys are first-class workload keys: every process that links
 * Loom (the tuner's runner processes, tunedb, a program fetching records)
 * can rebuild them without calling into graph/ first. */
__attribute__((constructor)) static void register_at_load(void) { (void)gr_register_builder(); }
