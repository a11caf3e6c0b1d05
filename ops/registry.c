/*
 * ops/registry.c — the operator registry: lookup by name or alias, shape
 * strings, canonical workload keys, building a workload, and rebuilding
 * one from its key.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"

/* The fixed order of ops_info(i) and of ops_names(). */
static const ops__impl *const registry[] = {
    &ops__matmul,       &ops__batch_matmul,  &ops__dense,
    &ops__dense_bias_gelu, &ops__conv2d_nchw, &ops__conv2d_nhwc,
    &ops__conv2d_bias_relu, &ops__depthwise_conv2d_nchw, &ops__max_pool2d,
    &ops__avg_pool2d,   &ops__global_avg_pool2d, &ops__softmax,
    &ops__layer_norm,   &ops__relu,          &ops__gelu,
    &ops__sigmoid,      &ops__add,           &ops__mul,
    &ops__sum,          &ops__mean,          &ops__max,
};
#define NOPS ((int)(sizeof registry / sizeof *registry))

int ops_count(void) { return NOPS; }

const ops_op_info *ops_info(int i) { return i >= 0 && i < NOPS ? &registry[i]->info : NULL; }

static const ops__impl *find_impl(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < NOPS; i++) {
        const ops_op_info *in = &registry[i]->info;
        if (!strcmp(in->name, name) || (in->alias && !strcmp(in->alias, name))) return registry[i];
    }
    return NULL;
}

const ops_op_info *ops_find(const char *name) {
    const ops__impl *im = find_impl(name);
    return im ? &im->info : NULL;
}

static char names_buf[1024];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void build_names(void) {
    size_t n = 0;
    for (int i = 0; i < NOPS; i++) {
        const char *nm = registry[i]->info.name;
        size_t l = strlen(nm);
        if (n + l + 3 >= sizeof names_buf) break;
        if (i) names_buf[n++] = ',', names_buf[n++] = ' ';
        memcpy(names_buf + n, nm, l + 1);
        n += l;
    }
}

const char *ops_names(void) {
    pthread_once(&names_once, build_names);
    return names_buf;
}

/* The operators that take dtype=float16|bfloat16, comma-separated. */
static char half_buf[256];
static pthread_once_t half_once = PTHREAD_ONCE_INIT;

static void build_half_ops(void) {
    size_t n = 0;
    for (int i = 0; i < ops_count(); i++) {
        const ops__impl *im = find_impl(ops_info(i)->name);
        if (!im || !im->half || n + 40 >= sizeof half_buf) continue;
        n += (size_t)snprintf(half_buf + n, sizeof half_buf - n, "%s%s", n ? ", " : "", im->info.name);
    }
}

static const char *half_ops(void) {
    pthread_once(&half_once, build_half_ops);
    return half_buf;
}

/* ---- shape strings ---- */

typedef struct {
    const ops__impl *impl;
    int64_t v[OPS_MAX_PARAMS];
    te_dtype dtype;
} parsed;

static const char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
    return s;
}

static int param_list_error(te_ctx *ctx, const ops_op_info *in, const char *name) {
    char list[512];
    size_t n = 0;
    list[0] = 0;
    for (int i = 0; i < in->nparams && n + 40 < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
                              in->params[i].name);
    return te_error(ctx, "ops: operator '%s' has no parameter '%s' (its parameters: %s, dtype)",
                    in->name, name, list);
}

/* Parses `shape` for impl into p (defaults filled, ranges checked). */
static int parse_shape(te_ctx *ctx, const ops__impl *impl, const char *shape, parsed *p) {
    const ops_op_info *in = &impl->info;
    bool given[OPS_MAX_PARAMS] = {0};
    bool dtype_given = false;
    p->impl = impl;
    p->dtype = TE_FLOAT32;
    char *copy = te_strdup(ctx, shape ? shape : "");
    if (!copy) return -1;
    if (*trim(copy)) {
        /* strtok_r would skip empty items; walk the commas by hand. */
        char *item = copy;
        for (;;) {
            char *comma = strchr(item, ',');
            if (comma) *comma = 0;
            char *eq = strchr(item, '=');
            if (!eq) {
                const char *t = trim(item);
                return te_error(ctx,
                                "ops: malformed shape string '%s': item '%s' is not NAME=VALUE",
                                shape, t);
            }
            *eq = 0;
            const char *name = trim(item);
            const char *val = trim(eq + 1);
            if (!*name)
                return te_error(ctx, "ops: malformed shape string '%s': an item has no name",
                                shape);
            if (!strcmp(name, "dtype")) {
                te_dtype t;
                if (dtype_given)
                    return te_error(ctx, "ops: %s: parameter 'dtype' given twice", in->name);
                bool ok = te_dtype_parse(val, &t) && te_dtype_is_float(t) && t.lanes == 1;
                if (ok && te_dtype_is_half(t) && !impl->half)
                    return te_error(ctx,
                                    "ops: %s: unsupported dtype '%s' for parameter 'dtype' "
                                    "(allowed: float32, float64; float16 and bfloat16 only for "
                                    "%s)",
                                    in->name, val, half_ops());
                if (!ok)
                    return te_error(ctx,
                                    "ops: %s: unsupported dtype '%s' for parameter 'dtype' "
                                    "(allowed: %s)",
                                    in->name, val,
                                    impl->half ? "float32, float64, float16, bfloat16"
                                               : "float32, float64");
                p->dtype = t;
                dtype_given = true;
            } else {
                int k = -1;
                for (int i = 0; i < in->nparams; i++)
                    if (!strcmp(in->params[i].name, name)) k = i;
                if (k < 0) return param_list_error(ctx, in, name);
                if (given[k])
                    return te_error(ctx, "ops: %s: parameter '%s' given twice", in->name, name);
                char *end = NULL;
                errno = 0;
                long long x = *val ? strtoll(val, &end, 10) : 0;
                if (!*val || *end || errno)
                    return te_error(ctx,
                                    "ops: malformed shape string '%s': value '%s' of '%s' is "
                                    "not an integer",
                                    shape, val, name);
                p->v[k] = (int64_t)x;
                given[k] = true;
            }
            if (!comma) break;
            item = comma + 1;
        }
    }
    for (int i = 0; i < in->nparams; i++) {
        const ops_param_info *pi = &in->params[i];
        if (!given[i]) {
            if (pi->required)
                return te_error(ctx, "ops: %s: missing required parameter '%s' (%s)", in->name,
                                pi->name, pi->doc);
            p->v[i] = pi->def;
        }
        int64_t v = p->v[i];
        if (v >= pi->min && v <= pi->max) continue;
        if (pi->min == 1 && pi->max == OPS__BIG)
            return te_error(ctx, "ops: %s: parameter '%s' = %lld must be a positive extent",
                            in->name, pi->name, (long long)v);
        if (pi->max == OPS__BIG)
            return te_error(ctx, "ops: %s: parameter '%s' = %lld must be >= %lld", in->name,
                            pi->name, (long long)v, (long long)pi->min);
        if (pi->min == 0 && pi->max == 1)
            return te_error(ctx, "ops: %s: parameter '%s' = %lld must be 0 or 1", in->name,
                            pi->name, (long long)v);
        return te_error(ctx, "ops: %s: parameter '%s' = %lld must be in [%lld, %lld]", in->name,
                        pi->name, (long long)v, (long long)pi->min, (long long)pi->max);
    }
    if (impl->check && impl->check(ctx, p->v)) return -1;
    return 0;
}

static int parse(te_ctx *ctx, const char *op, const char *shape, parsed *p) {
    if (!ctx) return -1;
    const ops__impl *impl = find_impl(op);
    if (!impl)
        return te_error(ctx, "ops: unknown operator '%s'; known operators: %s", op ? op : "(null)",
                        ops_names());
    return parse_shape(ctx, impl, shape, p);
}

static const char *make_key(te_ctx *ctx, const parsed *p) {
    te_str s;
    te_str_init(&s);
    te_str_printf(&s, "%s(", p->impl->info.name);
    for (int i = 0; i < p->impl->info.nparams; i++) {
        const ops_param_info *pi = &p->impl->info.params[i];
        if (pi->key_when_set && p->v[i] == pi->def) continue;
        te_str_printf(&s, "%s=%lld,", pi->name, (long long)p->v[i]);
    }
    te_str_printf(&s, "dtype=%s)", te_dtype_str(p->dtype));
    const char *key = s.data ? te_strdup(ctx, s.data) : NULL;
    te_str_free(&s);
    if (!key) te_error(ctx, "ops: out of memory");
    return key;
}

const char *ops_canonical_key(te_ctx *ctx, const char *op, const char *shape) {
    parsed p;
    if (parse(ctx, op, shape, &p)) return NULL;
    return make_key(ctx, &p);
}

static ops_workload *build_parsed(te_ctx *ctx, const parsed *p) {
    const ops_op_info *in = &p->impl->info;
    ops_workload *w = te_alloc(ctx, sizeof *w);
    ops__priv *pv = te_alloc(ctx, sizeof *pv);
    const char **names = te_alloc(ctx, sizeof(char *) * (size_t)(in->nparams + 1));
    int64_t *vals = te_alloc(ctx, sizeof(int64_t) * (size_t)(in->nparams + 1));
    if (!w || !pv || !names || !vals) return NULL;
    for (int i = 0; i < in->nparams; i++) names[i] = in->params[i].name, vals[i] = p->v[i];
    w->info = in;
    w->op = in->name;
    w->dtype = p->dtype;
    w->nparams = in->nparams;
    w->param_names = names;
    w->param_values = vals;
    w->priv = pv;
    pv->impl = p->impl;
    pv->reduce_len = 1;
    if (!(w->key = make_key(ctx, p))) return NULL;
    if (p->impl->build(ctx, w, pv, vals)) {
        if (!*te_ctx_errmsg(ctx)) te_error(ctx, "ops: %s: building the computation failed", in->name);
        return NULL;
    }
    w->nargs = w->ninputs + w->nouts;
    w->args = te_alloc(ctx, sizeof(te_tensor *) * (size_t)w->nargs);
    if (!w->args) return NULL;
    for (int i = 0; i < w->ninputs; i++) w->args[i] = w->inputs[i];
    for (int i = 0; i < w->nouts; i++) w->args[w->ninputs + i] = w->outs[i];
    return w;
}

ops_workload *ops_build(te_ctx *ctx, const char *op, const char *shape) {
    parsed p;
    if (parse(ctx, op, shape, &p)) return NULL;
    return build_parsed(ctx, &p);
}

ops_workload *ops_from_key(te_ctx *ctx, const char *key) {
    if (!ctx) return NULL;
    if (!key) {
        te_error(ctx, "ops: malformed workload key (null): expected OP(NAME=VALUE,...)");
        return NULL;
    }
    const char *open = strchr(key, '(');
    size_t n = strlen(key);
    if (!open || open == key || n < 2 || key[n - 1] != ')' || strchr(open + 1, '(') ||
        strchr(open, ')') != key + n - 1) {
        te_error(ctx, "ops: malformed workload key '%s': expected OP(NAME=VALUE,...)", key);
        return NULL;
    }
    char *name = te_strdup(ctx, key);
    if (!name) return NULL;
    name[open - key] = 0;
    char *shape = name + (open - key) + 1;
    shape[strlen(shape) - 1] = 0;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_') {
            te_error(ctx, "ops: malformed workload key '%s': bad operator name '%s'", key, name);
            return NULL;
        }
    return ops_build(ctx, name, shape);
}

bool ops_param(const ops_workload *w, const char *name, int64_t *value) {
    if (!w || !name) return false;
    for (int i = 0; i < w->nparams; i++)
        if (!strcmp(w->param_names[i], name)) {
            if (value) *value = w->param_values[i];
            return true;
        }
    return false;
}

const char *ops_params_json(const ops_workload *w) {
    if (!w) return NULL;
    te_ctx *ctx = w->args[0]->ctx;
    te_str s;
    te_str_init(&s);
    te_str_append(&s, "{");
    const ops__priv *pv = w->priv;
    for (int i = 0; i < w->nparams; i++) {
        const ops_param_info *pi =
            pv && pv->impl && i < pv->impl->info.nparams ? &pv->impl->info.params[i] : NULL;
        if (pi && pi->key_when_set && w->param_values[i] == pi->def) continue;
        te_str_printf(&s, "\"%s\":%lld,", w->param_names[i], (long long)w->param_values[i]);
    }
    te_str_printf(&s, "\"dtype\":\"%s\"}", te_dtype_str(w->dtype));
    const char *out = s.data ? te_strdup(ctx, s.data) : NULL;
    te_str_free(&s);
    return out;
}
