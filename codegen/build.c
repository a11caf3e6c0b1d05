/*
 * codegen/build.c — one call from a schedule to a callable module: lower,
 * run the loop-IR pipeline, compile for the named target.
 */
#include <string.h>

#include "loom/codegen.h"

rt_module *cg_build(sch_schedule *s, int nargs, te_tensor *const *args, const char *target,
                    const cg_build_options *opts) {
    if (!s) return NULL;
    te_ctx *ctx = sch_ctx(s);
    cg_build_options defaults;
    memset(&defaults, 0, sizeof defaults);
    if (!opts) opts = &defaults;
    if (!target) target = "llvm";

    cg_llvm_options llvm = opts->llvm;
    bool is_llvm = false, is_c = false;
    if (!strcmp(target, "llvm")) {
        is_llvm = true;
    } else if (!strncmp(target, "llvm ", 5)) {
        is_llvm = true;
        const char *m = strstr(target, "-mcpu=");
        if (!m) {
            te_error(ctx, "build: target '%s': the only llvm option is -mcpu=NAME", target);
            return NULL;
        }
        llvm.mcpu = te_strdup(ctx, m + 6);
    } else if (!strcmp(target, "c")) {
        is_c = true;
    } else {
        te_error(ctx, "build: unknown target '%s' (known: llvm, llvm -mcpu=NAME, c)", target);
        return NULL;
    }

    tir_func *f = sch_lower(s, nargs, args, opts->name ? opts->name : "default");
    if (!f) return NULL;
    tir_func *g = tir_run_pipeline(ctx, f, &opts->passes);
    if (!g) return NULL;
    const tir_func *funcs[1] = {g};
    if (is_llvm) return cg_llvm_build(ctx, 1, funcs, &llvm);
    if (is_c) return cg_c_build(ctx, 1, funcs, &opts->c);
    return NULL;
}
