/*
 * codegen/cuda/cuda_build.c — from split GPU functions to a "cuda" module:
 * CUDA C++ source, NVRTC to PTX for the chosen architecture, and a host
 * function per program that launches its kernels in order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda/cuda_internal.h"

const char *cg_cuda_source(te_ctx *ctx, int nprogs, const tir_device_program *const *progs) {
    if (!ctx) return NULL;
    if (nprogs < 1 || !progs) {
        te_error(ctx, "cuda: cg_cuda_source needs at least one program (got %d)", nprogs);
        return NULL;
    }
    for (int i = 0; i < nprogs; ++i)
        if (!progs[i] || !progs[i]->host) {
            te_error(ctx, "cuda: program %d is NULL", i);
            return NULL;
        }
    return cg_cuda__source(ctx, nprogs, progs);
}

const char *cg_cuda_default_arch(te_ctx *ctx) {
    rt_cuda_props p;
    if (rt_cuda_available() && !rt_cuda_get_props(0, &p))
        return te_sprintf(ctx, "sm_%d%d", p.cc_major, p.cc_minor);
    return "sm_75";
}

rt_module *cg_cuda_build(te_ctx *ctx, int nprogs, const tir_device_program *const *progs,
                         const cg_cuda_options *opts) {
    const char *src = cg_cuda_source(ctx, nprogs, progs);
    if (!src) return NULL;
    const char *arch = opts && opts->arch ? opts->arch : cg_cuda_default_arch(ctx);
    /* wgmma exists only in sm_90's architecture-specific target */
    if (strstr(src, "wgmma.mma_async") && (!strcmp(arch, "sm_90") || !strcmp(arch, "compute_90")))
        arch = te_sprintf(ctx, "%sa", arch);
    rt_nvrtc_output out;
    if (rt_nvrtc_compile(src, te_sprintf(ctx, "%s.cu", progs[0]->host->name), arch, &out)) {
        te_error(ctx, "cuda: %s", rt_last_error());
        return NULL;
    }
    rt_cuda_func *funcs = te_alloc(ctx, sizeof *funcs * (size_t)nprogs);
    if (!funcs) {
        rt_nvrtc_output_free(&out);
        return NULL;
    }
    for (int i = 0; i < nprogs; ++i) {
        const tir_device_program *p = progs[i];
        const tir_func *h = p->host;
        rt_cuda_func *f = &funcs[i];
        f->name = h->name;
        f->nparams = h->nparams;
        rt_param *params = te_alloc(ctx, sizeof *params * (size_t)(h->nparams + 1));
        int64_t *ws = te_alloc(ctx, sizeof(int64_t) * (size_t)(p->nworkspace + 1));
        rt_cuda_launch *ls = te_alloc(ctx, sizeof *ls * (size_t)(p->nkernels + 1));
        if (!params || !ws || !ls) {
            rt_nvrtc_output_free(&out);
            return NULL;
        }
        for (int j = 0; j < h->nparams; ++j) {
            const tir_buffer *b = h->params[j];
            params[j].name = b->name;
            params[j].dtype = cg_dl_type(b->dtype);
            params[j].ndim = b->ndim;
            for (int d = 0; d < b->ndim && d < 8; ++d) params[j].shape[d] = b->shape[d];
        }
        for (int w = 0; w < p->nworkspace; ++w)
            ws[w] = tir_buffer_size(p->workspace[w]) * te_dtype_bytes(p->workspace[w]->dtype);
        for (int k = 0; k < p->nkernels; ++k) {
            const tir_kernel *kn = &p->kernels[k];
            /* The emitter names kernels by their sanitised tir names. */
            cg_c_emitter tmp;
            memset(&tmp, 0, sizeof tmp);
            tmp.ctx = ctx;
            tmp.prefix = "cuda";
            ls[k].kernel = cg_c_name_of(&tmp, kn->func, kn->func->name);
            free(tmp.names);
            memcpy(ls[k].grid, kn->grid, sizeof ls[k].grid);
            memcpy(ls[k].block, kn->block, sizeof ls[k].block);
            ls[k].nargs = kn->func->nparams;
            ls[k].args = kn->arg_slots;
            cg_cuda_smem smem;
            if (cg_cuda__smem_layout(ctx, kn->func->body, kn->func->name, &smem)) {
                rt_nvrtc_output_free(&out);
                return NULL;
            }
            ls[k].shared_bytes = smem.bytes;
        }
        f->params = params;
        f->nworkspace = p->nworkspace;
        f->workspace_bytes = ws;
        f->nlaunches = p->nkernels;
        f->launches = ls;
    }
    rt_module *m = rt_cuda_module_new_image(out.ptx, out.cubin, out.cubin_size, nprogs, funcs);
    rt_nvrtc_output_free(&out);
    if (!m) {
        te_error(ctx, "cuda: %s", rt_last_error());
        return NULL;
    }
    rt_module_set_text(m, "source", src);
    rt_module_set_text(m, "arch", arch);
    return m;
}
