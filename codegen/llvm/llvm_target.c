/*
 * codegen/llvm/llvm_target.c — native target initialisation (once per
 * process), host CPU name and features, and target machines.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Support.h>
#include <llvm-c/Target.h>

#include "codegen/llvm/llvm_internal.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_native(void) {
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    LLVMInitializeNativeAsmParser();
    /* The machine scheduler's dependence graph is quadratic in the memory
     * operations of a block: fully unrolled nests (auto_unroll_max_step
     * 512) spent seconds there, most of a tuner's build time. Past 50
     * pending memory nodes LLVM chains them instead (its default is 1000);
     * the tuned matmul and convolution kernels time the same. */
    const char *argv[] = {"loom", "-dag-maps-huge-region=50"};
    LLVMParseCommandLineOptions(2, argv, NULL);
}

void cg_llvm__init(void) { pthread_once(&init_once, init_native); }

static char *dup_message(char *m) {
    char *r = strdup(m ? m : "");
    if (m) LLVMDisposeMessage(m);
    return r;
}

char *cg_llvm_host_cpu(void) {
    cg_llvm__init();
    return dup_message(LLVMGetHostCPUName());
}

char *cg_llvm_host_features(void) {
    cg_llvm__init();
    return dup_message(LLVMGetHostCPUFeatures());
}

char *cg_llvm__triple(void) {
    char *t = LLVMGetDefaultTargetTriple();
    char *n = LLVMNormalizeTargetTriple(t);
    LLVMDisposeMessage(t);
    return n;
}

/* A CPU name LLVM could know: letters, digits, '-', '_', '.'. LLVM itself
 * only warns on stderr about an unknown name, so obvious junk is refused
 * here. */
static bool plausible_cpu(const char *s) {
    if (!*s) return false;
    for (const char *p = s; *p; ++p)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.'))
            return false;
    return true;
}

char *cg_llvm__check_cpu(const char *cpu, const char *features) {
    cg_llvm__init();
    char *triple = cg_llvm__triple(), *bad = NULL, *msg = NULL;
    int rc = cg_llvm__mc_check(triple, cpu, features, &bad);
    if (rc == 1) {
        char *host = cg_llvm_host_cpu();
        if (asprintf(&msg, "unknown CPU '%s' for %s (this host's CPU is '%s')", cpu, triple,
                     host ? host : "?") < 0)
            msg = NULL;
        free(host);
    } else if (rc == 2 && bad && bad[0] != '+' && bad[0] != '-') {
        if (asprintf(&msg, "feature '%s' needs a '+' (enable) or '-' (disable) in front", bad) < 0)
            msg = NULL;
    } else if (rc == 2) {
        if (asprintf(&msg, "unknown feature '%s' for %s", bad ? bad : "?", triple) < 0) msg = NULL;
    } else if (rc != 0) {
        if (asprintf(&msg, "LLVM has no target for triple '%s'", triple) < 0) msg = NULL;
    }
    if (rc != 0 && !msg) msg = strdup("out of memory");
    free(bad);
    LLVMDisposeMessage(triple);
    return msg;
}

LLVMTargetMachineRef cg_llvm__target_machine(te_ctx *ctx, const char *cpu, const char *features,
                                             int opt_level) {
    cg_llvm__init();
    if (cpu && !plausible_cpu(cpu)) {
        te_error(ctx, "llvm: -mcpu '%s' is not a CPU name (letters, digits, '-', '_' only)", cpu);
        return NULL;
    }
    /* LLVM builds an unknown CPU's subtarget without features, and for
     * x86-64 its code generator then aborts the process. */
    if (cpu || features) {
        char *why = cg_llvm__check_cpu(cpu, features);
        if (why) {
            te_error(ctx, "llvm: %s", why);
            free(why);
            return NULL;
        }
    }
    char *triple = cg_llvm__triple();
    LLVMTargetRef target = NULL;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &err)) {
        te_error(ctx, "llvm: no target for triple '%s': %s", triple, err ? err : "");
        LLVMDisposeMessage(err);
        LLVMDisposeMessage(triple);
        return NULL;
    }
    char *host_cpu = NULL, *host_features = NULL;
    if (!cpu) cpu = host_cpu = LLVMGetHostCPUName();
    /* Host features only belong with the host CPU: a named CPU brings its
     * own feature set. */
    if (!features) features = host_cpu ? (host_features = LLVMGetHostCPUFeatures()) : "";
    LLVMCodeGenOptLevel lvl = opt_level <= 0   ? LLVMCodeGenLevelNone
                              : opt_level == 1 ? LLVMCodeGenLevelLess
                              : opt_level == 2 ? LLVMCodeGenLevelDefault
                                               : LLVMCodeGenLevelAggressive;
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, cpu, features, lvl,
                                                      LLVMRelocPIC, LLVMCodeModelDefault);
    if (!tm) te_error(ctx, "llvm: cannot create a target machine for '%s' cpu '%s'", triple, cpu);
    if (host_cpu) LLVMDisposeMessage(host_cpu);
    if (host_features) LLVMDisposeMessage(host_features);
    LLVMDisposeMessage(triple);
    return tm;
}
