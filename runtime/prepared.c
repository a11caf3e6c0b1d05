/*
 * runtime/prepared.c — a module function with its pre-computed constants
 * (cg_build_options.constant_args): the tensors of the stages that read
 * only constant arguments, computed once by NAME__precompute and passed
 * to NAME after the caller's arguments in every call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

struct rt_prepared {
    rt_module *m;
    char *name;
    int nargs;       /* the caller's arguments */
    int nextra;      /* pre-computed tensors after them */
    DLTensor **all;  /* [nargs, nargs + nextra): the pre-computed tensors */
    int nconst;      /* constant arguments and their data when prepared */
    int *cidx;
    void **cdata;
};

void rt_prepared_free(rt_prepared *p) {
    if (!p) return;
    for (int i = 0; p->all && i < p->nextra; i++) rt_tensor_free(p->all[p->nargs + i]);
    free(p->all), free(p->name), free(p->cidx), free(p->cdata);
    free(p);
}

void rt_prepared_cache_flush(const rt_prepared *p) {
    for (int i = 0; p && p->all && i < p->nextra; i++) rt_tensor_cache_flush(p->all[p->nargs + i]);
}

/* The constant argument positions cg_build recorded ("0,2"). */
static int constant_positions(rt_prepared *p) {
    char key[256];
    snprintf(key, sizeof key, "%s.constant_args", p->name);
    const char *list = rt_module_get_text(p->m, key);
    if (!list) return 0;
    p->cidx = calloc((size_t)p->nargs + 1, sizeof *p->cidx);
    p->cdata = calloc((size_t)p->nargs + 1, sizeof *p->cdata);
    if (!p->cidx || !p->cdata) return rt_set_error("rt_prepare: out of memory");
    for (const char *c = list; *c;) {
        char *end;
        long v = strtol(c, &end, 10);
        if (end == c) break;
        if (v >= 0 && v < p->nargs) p->cidx[p->nconst++] = (int)v;
        c = *end == ',' ? end + 1 : end;
    }
    return 0;
}

rt_prepared *rt_prepare(rt_module *m, const char *name, int nargs, DLTensor *const *args) {
    if (!m || !name) {
        rt_set_error("rt_prepare: module and name must be non-NULL");
        return NULL;
    }
    bool found = false;
    for (int i = 0; i < rt_module_num_funcs(m); i++) found |= !strcmp(rt_module_func_name(m, i), name);
    if (!found) {
        rt_set_error("rt_prepare: module has no function '%s'", name);
        return NULL;
    }
    int np;
    const rt_param *params = rt_module_func_params(m, name, &np);
    if (nargs < 0 || np < nargs || (nargs > 0 && !args)) {
        rt_set_error("rt_prepare: function '%s' takes %d tensors, called with %d", name, np,
                     nargs);
        return NULL;
    }
    if (np > nargs && rt_module_device(m) != kDLCPU) {
        rt_set_error("rt_prepare: function '%s': pre-computed tensors live on the CPU only "
                     "(module device %d)",
                     name, rt_module_device(m));
        return NULL;
    }
    rt_prepared *p = calloc(1, sizeof *p);
    if (!p) {
        rt_set_error("rt_prepare: out of memory");
        return NULL;
    }
    p->m = m;
    p->nargs = nargs;
    p->name = malloc(strlen(name) + 1);
    p->all = calloc((size_t)np + 1, sizeof *p->all);
    if (!p->name || !p->all) {
        rt_set_error("rt_prepare: out of memory");
        goto fail;
    }
    strcpy(p->name, name);
    for (int i = nargs; i < np; i++) {
        if (!(p->all[i] = rt_tensor_alloc(params[i].dtype, params[i].ndim, params[i].shape)))
            goto fail;
        p->nextra++;
    }
    if (p->nextra == 0) return p;
    if (constant_positions(p)) goto fail;
    for (int i = 0; i < nargs; i++) p->all[i] = args[i];
    char pre[256];
    snprintf(pre, sizeof pre, "%s__precompute", name);
    int rc = rt_call(m, pre, np, p->all);
    for (int i = 0; i < nargs; i++) p->all[i] = NULL; /* the caller's, not kept */
    if (rc) goto fail;
    for (int k = 0; k < p->nconst; k++) p->cdata[k] = args[p->cidx[k]]->data;
    return p;
fail:
    rt_prepared_free(p);
    return NULL;
}

int rt_prepared_call(rt_prepared *p, int nargs, DLTensor *const *args) {
    if (!p) return rt_set_error("rt_prepared_call: prepared function is NULL");
    if (nargs != p->nargs || (nargs > 0 && !args))
        return rt_set_error("rt_prepared_call: function '%s' was prepared with %d arguments, "
                            "called with %d",
                            p->name, p->nargs, nargs);
    for (int k = 0; k < p->nconst; k++) {
        const DLTensor *t = args[p->cidx[k]];
        if (!t || t->data != p->cdata[k])
            return rt_set_error("rt_prepared_call: function '%s': argument %d is constant and "
                                "was prepared from other data; prepare again for new values",
                                p->name, p->cidx[k]);
    }
    /* The caller's tensors then the pre-computed ones, in an array of
     * this call's own: threads may share p. */
    int n = p->nargs + p->nextra;
    DLTensor *local[16] = {0}, **all = n <= 16 ? local : malloc(sizeof *all * (size_t)n);
    if (!all) return rt_set_error("rt_prepared_call: out of memory");
    for (int i = 0; i < n; i++) all[i] = i < nargs ? args[i] : p->all[i];
    int rc = rt_call(p->m, p->name, n, all);
    if (all != local) free(all);
    return rc;
}
