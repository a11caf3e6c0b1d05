/*
 * bench/ir_hashes.c — for each workload key given, a hash (64-bit FNV-1a)
 * and the length of the optimised LLVM IR of its default schedule and of
 * four random programs of every CPU sketch (a fixed seed). Two builds of
 * the library that print the same lines compile the same kernels: a
 * refactoring of lowering or of the tir passes is checked for speed
 * without timing anything (bench/RESULTS.md, session 29).
 * Usage: bench_ir_hashes KEY...   (e.g. "matmul(M=1024,N=1024,K=1024)")
 * The hash is computed here, not with te_hash_str, so that the program
 * builds against older versions of the library too.
 */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <loom/loom.h>

static uint64_t h64(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static void dump(const char *tag, te_ctx *ctx, sch_schedule *s, const tune_workload *w) {
    cg_build_options o;
    memset(&o, 0, sizeof o);
    o.llvm.keep_ir = true;
    rt_module *m = s ? cg_build(s, w->nargs, w->args, "llvm", &o) : NULL;
    const char *ir = m ? rt_module_get_text(m, "ir") : NULL;
    printf("%s %016llx %zu\n", tag, ir ? (unsigned long long)h64(ir) : 0ull, ir ? strlen(ir) : 0);
    if (!m) printf("  error: %s\n", te_ctx_errmsg(ctx));
    rt_module_free(m);
}

int main(int argc, char **argv) {
    for (int a = 1; a < argc; a++) {
        te_ctx *ctx = te_ctx_new();
        tune_workload w;
        if (tune_build_workload(ctx, argv[a], &w)) { printf("bad key\n"); return 1; }
        ops_workload *ow = ops_from_key(ctx, argv[a]);
        tune_workload wd = w;
        wd.nargs = ow->nargs, wd.args = ow->args;
        dump("default", ctx, ops_default_schedule(ow, "llvm"), &wd);
        tune_sketch sk[TUNE_MAX_SKETCHES];
        int n = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
        uint64_t rng = 12345;
        for (int i = 0; i < n; i++)
            for (int r = 0; r < 4; r++) {
                tune_program p;
                tune_program_random(&sk[i], i, &rng, &p);
                char tag[32];
                snprintf(tag, sizeof tag, "sk%d.%d", i, r);
                te_ctx *c2 = te_ctx_new();
                tune_workload w2;
                tune_build_workload(c2, argv[a], &w2);
                dump(tag, c2, tune_program_apply(c2, &w2, &sk[i], &p), &w2);
                te_ctx_free(c2);
            }
        te_ctx_free(ctx);
    }
    return 0;
}
