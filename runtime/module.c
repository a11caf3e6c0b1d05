/*
 * runtime/module.c — a compiled module: a name -> function table with the
 * parameter signature of each function, texts the backend kept, and the
 * backend's state. rt_call checks every argument against the signature
 * before jumping into generated code, which trusts its pointers blindly.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

typedef struct {
    char *name;
    rt_packed_fn fn;
    rt_closure_fn cfn; /* set instead of fn for closure functions */
    void *self;
    int nparams;
    rt_param *params; /* names strdup'd */
} rt_func_entry;

typedef struct {
    char *what;
    char *text;
} rt_text_entry;

struct rt_module {
    char *kind;
    void *impl;
    void (*impl_free)(void *impl);
    int nfuncs, cap_funcs;
    rt_func_entry *funcs;
    int ntexts, cap_texts;
    rt_text_entry *texts;
    int device_type; /* DLDeviceType every argument must be on */
    char err[2048];
};

static char *dup_str(const char *s) {
    if (!s) s = "";
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int mod_error(rt_module *m, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int mod_error(rt_module *m, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, sizeof m->err, fmt, ap);
    va_end(ap);
    rt_set_error("%s", m->err);
    return -1;
}

rt_module *rt_module_new(const char *kind, void *impl, void (*impl_free)(void *impl)) {
    rt_module *m = calloc(1, sizeof *m);
    if (!m || !(m->kind = dup_str(kind ? kind : "?"))) {
        free(m);
        rt_set_error("rt_module_new: out of memory");
        return NULL;
    }
    m->impl = impl;
    m->impl_free = impl_free;
    m->device_type = kDLCPU;
    return m;
}

static void free_entry(rt_func_entry *e) {
    for (int i = 0; i < e->nparams; ++i) free((char *)e->params[i].name);
    free(e->params);
    free(e->name);
}

static rt_func_entry *find_func(const rt_module *m, const char *name) {
    if (!m || !name) return NULL;
    for (int i = 0; i < m->nfuncs; ++i)
        if (!strcmp(m->funcs[i].name, name)) return &m->funcs[i];
    return NULL;
}

static int add_entry(rt_module *m, const char *name, rt_packed_fn fn, rt_closure_fn cfn,
                     void *self, int nparams, const rt_param *params) {
    if (!m) return rt_set_error("rt_module_add_func: module is NULL");
    if (!name || (!fn && !cfn))
        return mod_error(m, "rt_module_add_func: name and function must be non-NULL");
    if (nparams < 0 || (nparams > 0 && !params))
        return mod_error(m, "rt_module_add_func: function '%s' has %d params but no param list",
                         name, nparams);
    if (find_func(m, name))
        return mod_error(m, "rt_module_add_func: module already has a function '%s'", name);
    for (int i = 0; i < nparams; ++i)
        if (params[i].ndim < 0 || params[i].ndim > 8)
            return mod_error(m, "rt_module_add_func: param %d of '%s' has ndim %d (0..8)", i,
                             name, params[i].ndim);
    if (m->nfuncs == m->cap_funcs) {
        int cap = m->cap_funcs ? 2 * m->cap_funcs : 4;
        rt_func_entry *f = realloc(m->funcs, (size_t)cap * sizeof *f);
        if (!f) return mod_error(m, "rt_module_add_func: out of memory");
        m->funcs = f;
        m->cap_funcs = cap;
    }
    rt_func_entry e = {dup_str(name), fn, cfn, self, nparams, NULL};
    if (nparams > 0) e.params = calloc((size_t)nparams, sizeof *e.params);
    bool ok = e.name && (nparams == 0 || e.params);
    for (int i = 0; ok && i < nparams; ++i) {
        e.params[i] = params[i];
        e.params[i].name = dup_str(params[i].name);
        if (!e.params[i].name) {
            e.nparams = i;
            ok = false;
        }
    }
    if (!ok) {
        free_entry(&e);
        return mod_error(m, "rt_module_add_func: out of memory");
    }
    m->funcs[m->nfuncs++] = e;
    return 0;
}

int rt_module_add_func(rt_module *m, const char *name, rt_packed_fn fn, int nparams,
                       const rt_param *params) {
    if (m && !fn) return mod_error(m, "rt_module_add_func: name and function must be non-NULL");
    return add_entry(m, name, fn, NULL, NULL, nparams, params);
}

int rt_module_add_closure(rt_module *m, const char *name, rt_closure_fn fn, void *self,
                          int nparams, const rt_param *params) {
    if (m && !fn) return mod_error(m, "rt_module_add_closure: name and function must be non-NULL");
    return add_entry(m, name, NULL, fn, self, nparams, params);
}

void rt_module_set_device(rt_module *m, int device_type) {
    if (m) m->device_type = device_type;
}
int rt_module_device(const rt_module *m) { return m ? m->device_type : kDLCPU; }

void rt_module_free(rt_module *m) {
    if (!m) return;
    for (int i = 0; i < m->nfuncs; ++i) free_entry(&m->funcs[i]);
    free(m->funcs);
    for (int i = 0; i < m->ntexts; ++i) {
        free(m->texts[i].what);
        free(m->texts[i].text);
    }
    free(m->texts);
    if (m->impl_free) m->impl_free(m->impl);
    free(m->kind);
    free(m);
}

const char *rt_module_kind(const rt_module *m) { return m ? m->kind : ""; }
int rt_module_num_funcs(const rt_module *m) { return m ? m->nfuncs : 0; }
const char *rt_module_func_name(const rt_module *m, int i) {
    return m && i >= 0 && i < m->nfuncs ? m->funcs[i].name : NULL;
}
rt_packed_fn rt_module_get_func(const rt_module *m, const char *name) {
    rt_func_entry *e = find_func(m, name);
    return e ? e->fn : NULL;
}
const rt_param *rt_module_func_params(const rt_module *m, const char *name, int *nparams) {
    rt_func_entry *e = find_func(m, name);
    if (nparams) *nparams = e ? e->nparams : 0;
    return e ? e->params : NULL;
}
const char *rt_module_errmsg(const rt_module *m) { return m ? m->err : "rt_module is NULL"; }

const char *rt_module_get_text(const rt_module *m, const char *what) {
    if (!m || !what) return NULL;
    for (int i = 0; i < m->ntexts; ++i)
        if (!strcmp(m->texts[i].what, what)) return m->texts[i].text;
    return NULL;
}

void rt_module_set_text(rt_module *m, const char *what, const char *text) {
    if (!m || !what) return;
    for (int i = 0; i < m->ntexts; ++i)
        if (!strcmp(m->texts[i].what, what)) {
            char *t = text ? dup_str(text) : NULL;
            if (text && !t) return; /* keep the old text on no memory */
            free(m->texts[i].text);
            m->texts[i].text = t;
            return;
        }
    if (!text) return;
    if (m->ntexts == m->cap_texts) {
        int cap = m->cap_texts ? 2 * m->cap_texts : 4;
        rt_text_entry *t = realloc(m->texts, (size_t)cap * sizeof *t);
        if (!t) return;
        m->texts = t;
        m->cap_texts = cap;
    }
    rt_text_entry e = {dup_str(what), dup_str(text)};
    if (!e.what || !e.text) {
        free(e.what);
        free(e.text);
        return;
    }
    m->texts[m->ntexts++] = e;
}

/* "[1024, 512]" into buf. */
static const char *shape_str(int ndim, const int64_t *shape, char *buf, size_t size) {
    size_t len = 0;
    len += (size_t)snprintf(buf + len, size - len, "[");
    for (int d = 0; d < ndim && len < size; ++d)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (len < size) snprintf(buf + len, size - len, "]");
    return buf;
}

bool rt__tensor_is_compact(const DLTensor *t) {
    if (!t->strides) return true;
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; --d) {
        /* Extent-1 dimensions may carry any stride (DLPack exporters differ). */
        if (t->shape[d] != 1 && t->strides[d] != expect) return false;
        expect *= t->shape[d];
    }
    return true;
}

static int check_arg(rt_module *m, const rt_func_entry *f, int i, const DLTensor *t) {
    const rt_param *p = &f->params[i];
    char a[256], b[256];
    if (!t) return mod_error(m, "rt_call: argument %d ('%s') of '%s' is NULL", i, p->name, f->name);
    if ((int)t->device.device_type != m->device_type)
        return mod_error(m,
                         "rt_call: argument %d ('%s') of '%s' is on device type %d id %d; "
                         "a '%s' module runs on %s",
                         i, p->name, f->name, (int)t->device.device_type, t->device.device_id,
                         m->kind,
                         m->device_type == kDLCUDA ? "the GPU (kDLCUDA: allocate with "
                                                     "rt_cuda_tensor_alloc)"
                                                   : "the CPU (kDLCPU)");
    if (t->dtype.code != p->dtype.code || t->dtype.bits != p->dtype.bits ||
        t->dtype.lanes != p->dtype.lanes)
        return mod_error(m, "rt_call: argument %d ('%s') of '%s' has dtype %s, expected %s", i,
                         p->name, f->name, rt_dtype_name(t->dtype, a, sizeof a),
                         rt_dtype_name(p->dtype, b, sizeof b));
    if (t->ndim != p->ndim)
        return mod_error(m, "rt_call: argument %d ('%s') of '%s' has %d dimensions %s, expected %d %s",
                         i, p->name, f->name, t->ndim, shape_str(t->ndim, t->shape, a, sizeof a),
                         p->ndim, shape_str(p->ndim, p->shape, b, sizeof b));
    for (int d = 0; d < p->ndim; ++d)
        if (t->shape[d] != p->shape[d])
            return mod_error(m, "rt_call: argument %d ('%s') of '%s' has shape %s, expected %s", i,
                             p->name, f->name, shape_str(t->ndim, t->shape, a, sizeof a),
                             shape_str(p->ndim, p->shape, b, sizeof b));
    if (!rt__tensor_is_compact(t))
        return mod_error(m, "rt_call: argument %d ('%s') of '%s' has strides %s; only compact "
                            "row-major tensors are supported",
                         i, p->name, f->name, shape_str(t->ndim, t->strides, a, sizeof a));
    if (!t->data) return mod_error(m, "rt_call: argument %d ('%s') of '%s' has NULL data", i, p->name, f->name);
    return 0;
}

int rt_call(rt_module *m, const char *name, int nargs, DLTensor *const *args) {
    if (!m) return rt_set_error("rt_call: module is NULL");
    if (!name) name = "(null)";
    rt_func_entry *f = find_func(m, name);
    if (!f) {
        char list[1024];
        size_t len = 0;
        list[0] = '\0';
        for (int i = 0; i < m->nfuncs && len < sizeof list; ++i)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                    m->funcs[i].name);
        return mod_error(m, "rt_call: module has no function '%s' (it has: %s)", name,
                         m->nfuncs ? list : "no functions");
    }
    if (nargs != f->nparams || (nargs > 0 && !args))
        return mod_error(m, "rt_call: function '%s' takes %d tensors, got %d", f->name, f->nparams,
                         nargs);
    for (int i = 0; i < nargs; ++i)
        if (check_arg(m, f, i, args[i])) return -1;
    if (f->cfn) {
        int32_t rc = f->cfn(f->self, nargs, args);
        if (rc != 0) return mod_error(m, "rt_call: '%s' failed: %s", f->name, rt_last_error());
        m->err[0] = '\0';
        return 0;
    }
    void *small[16];
    void **ptrs = nargs <= 16 ? small : malloc((size_t)nargs * sizeof *ptrs);
    if (!ptrs) return mod_error(m, "rt_call: out of memory for %d arguments", nargs);
    for (int i = 0; i < nargs; ++i) ptrs[i] = (char *)args[i]->data + args[i]->byte_offset;
    int32_t rc = f->fn(ptrs);
    if (ptrs != small) free(ptrs);
    if (rc == RT_ERR_REPORTED) {
        char why[1024];
        snprintf(why, sizeof why, "%s", rt_last_error());
        return mod_error(m, "rt_call: %s", why);
    }
    if (rc != 0) return mod_error(m, "rt_call: '%s' failed with code %d", f->name, (int)rc);
    m->err[0] = '\0';
    return 0;
}
