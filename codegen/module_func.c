/*
 * codegen/module_func.c — what every backend does once it has an entry
 * point: describe the function's parameters from its tir_func (so rt_call
 * checks dtypes and shapes the same way whichever backend compiled it) and
 * add it to the module.
 */
#include <stdlib.h>

#include "loom/codegen.h"

DLDataType cg_dl_type(te_dtype t) {
    DLDataType d = {kDLFloat, t.bits, 1};
    switch (t.code) {
    case TE_INT: d.code = kDLInt; break;
    case TE_UINT: d.code = kDLUInt; break;
    case TE_FLOAT: d.code = kDLFloat; break;
    /* explicit: TE_BFLOAT's number is not kDLBfloat's (TE_HANDLE holds 4) */
    case TE_BFLOAT: d.code = kDLBfloat; break;
    /* DLPack 0.6 has no bool: TVM's convention is uint1, stored in a byte. */
    case TE_BOOL: d.code = kDLUInt; d.bits = 1; break;
    default: d.code = kDLOpaqueHandle; break;
    }
    return d;
}

int cg_module_add_tir_func(rt_module *m, const tir_func *fn, rt_packed_fn entry) {
    rt_param *params = calloc((size_t)(fn->nparams > 0 ? fn->nparams : 1), sizeof *params);
    if (!params) return -1;
    for (int j = 0; j < fn->nparams; ++j) {
        const tir_buffer *b = fn->params[j];
        params[j].name = b->name;
        params[j].dtype = cg_dl_type(b->dtype);
        params[j].ndim = b->ndim;
        for (int d = 0; d < b->ndim && d < 8; ++d) params[j].shape[d] = b->shape[d];
    }
    int rc = rt_module_add_func(m, fn->name, entry, fn->nparams, params);
    free(params);
    return rc;
}
