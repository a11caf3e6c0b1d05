/*
 * codegen/build.c — one call from a schedule to a callable module: the
 * lowering list (sch_lower_program) up to the target's input, then the
 * target's compiler.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/codegen.h"

int cg_cuda_arch_cc(const char *arch) {
    if (!arch) return 0;
    if (!strncmp(arch, "sm_", 3)) arch += 3;
    else if (!strncmp(arch, "compute_", 8)) arch += 8;
    else return 0;
    int cc = 0;
    while (*arch >= '0' && *arch <= '9' && cc < 10000) cc = cc * 10 + (*arch++ - '0');
    return cc;
}

int64_t cg_cuda_optin_shared(const char *arch) {
    int cc = cg_cuda_arch_cc(arch);
    switch (cc) {
    case 70: case 72: return 98304;
    case 75: return 65536;
    case 80: case 87: return 166912;
    case 86: case 89: return 101376;
    case 90: return 232448;
    default: return cc > 90 ? 101376 : 49152;
    }
}

rt_module *cg_build(sch_schedule *s, int nargs, te_tensor *const *args, const char *target,
                    const cg_build_options *opts) {
    if (!s) return NULL;
    te_ctx *ctx = sch_ctx(s);
    cg_build_options defaults;
    memset(&defaults, 0, sizeof defaults);
    if (!opts) opts = &defaults;
    if (!target) target = "llvm";

    cg_llvm_options llvm = opts->llvm;
    cg_cuda_options cuda = opts->cuda;
    cg_target t;
    char *why = NULL;
    if (cg_target_parse(target, &t, &why)) {
        te_error(ctx, "cg_build: %s", why ? why : "out of memory");
        free(why);
        return NULL;
    }
    bool is_llvm = t.kind == CG_TARGET_LLVM, is_c = t.kind == CG_TARGET_C,
         is_cuda = t.kind == CG_TARGET_CUDA;
    if (t.cpu) llvm.mcpu = te_strdup(ctx, t.cpu);
    if (t.features) llvm.features = te_strdup(ctx, t.features);
    if (t.arch) cuda.arch = te_strdup(ctx, t.arch);
    cg_target_free(&t);

    if (opts->bounds_check && !is_llvm) {
        te_error(ctx, "cg_build: bounds_check is supported on the llvm target only, not '%s'",
                 target);
        return NULL;
    }
    llvm.bounds_check = llvm.bounds_check || opts->bounds_check;

    const char *name = opts->name ? opts->name : "default";
    if (opts->constant_args && is_cuda) {
        te_error(ctx, "build: constant arguments (pre-computed stages) are not supported on "
                      "target '%s' (llvm and c only)",
                 target);
        return NULL;
    }
    sch_lower_options lo = {.name = name, .constant_args = opts->constant_args,
                            .passes = opts->passes};
    if (is_cuda) {
        lo.passes.gpu = true;
        rt_cuda_props p;
        tir_gpu_limits *lim = &lo.passes.gpu_limits;
        bool dev = (!lim->max_threads_per_block || !lim->max_shared_bytes) &&
                   rt_cuda_available() && !rt_cuda_get_props(0, &p);
        if (dev && !lim->max_threads_per_block) lim->max_threads_per_block = p.max_threads_per_block;
        /* the opt-in limit: kernels over 48 KiB take dynamic shared
         * memory (codegen/cuda/cuda_smem.c) */
        if (!lim->max_shared_bytes)
            lim->max_shared_bytes =
                dev ? (p.shared_mem_per_block_optin > p.shared_mem_per_block
                           ? p.shared_mem_per_block_optin
                           : p.shared_mem_per_block)
                    : cg_cuda_optin_shared(cuda.arch ? cuda.arch : cg_cuda_default_arch(ctx));
    }
    sch_lowered split;
    if (sch_lower_program(s, nargs, args, &lo, &split)) return NULL;
    if (is_cuda) {
        const tir_device_program *progs[1] = {split.device};
        return cg_cuda_build(ctx, 1, progs, &cuda);
    }
    const tir_func *funcs[2] = {split.main, split.precompute};
    int nfuncs = split.precompute ? 2 : 1;
    rt_module *m = is_llvm ? cg_llvm_build(ctx, nfuncs, funcs, &llvm)
                           : is_c ? cg_c_build(ctx, nfuncs, funcs, &opts->c) : NULL;
    if (m && split.precompute) {
        /* rt_prepared_call checks that the constant tensors stay those
         * the stages were pre-computed from. */
        char list[64 * 3 + 1] = "", key[256];
        for (int i = 0; i < nargs && i < 64; i++)
            if (opts->constant_args >> i & 1)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d",
                         list[0] ? "," : "", i);
        snprintf(key, sizeof key, "%s.constant_args", name);
        rt_module_set_text(m, key, list);
    }
    return m;
}
