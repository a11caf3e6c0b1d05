/*
 * codegen/llvm/llvm_jit.c — one ORC LLJIT per module. The runtime entry
 * points and the C library functions generated code may call are defined
 * as absolute symbols (so they resolve even when libloom was loaded
 * RTLD_LOCAL); anything else comes from the process's loaded libraries.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>

#include "codegen/llvm/llvm_internal.h"

/* The error's text (malloc-owned), consuming the error. */
char *cg_llvm__error_text(LLVMErrorRef err) {
    char *m = LLVMGetErrorMessage(err);
    char *r = strdup(m ? m : "unknown LLVM error");
    LLVMDisposeErrorMessage(m);
    return r;
}

static int fail_err(te_ctx *ctx, const char *what, LLVMErrorRef err) {
    char *m = cg_llvm__error_text(err);
    te_error(ctx, "llvm: %s: %s", what, m ? m : "");
    free(m);
    return -1;
}

typedef float (*f1)(float);
typedef double (*d1)(double);
typedef float (*f2)(float, float);
typedef double (*d2)(double, double);

typedef struct {
    const char *name;
    void (*fn)(void);
} known_symbol;

#define KS(n, p) {n, (void (*)(void))(p)}

static int define_runtime(te_ctx *ctx, LLVMOrcLLJITRef jit, LLVMOrcJITDylibRef jd) {
    const known_symbol syms[] = {
        KS("rt_parallel_for", rt_parallel_for), KS("rt_bounds_error", rt_bounds_error),
        KS("aligned_alloc", aligned_alloc), KS("free", free), KS("malloc", malloc),
        KS("memset", memset), KS("memcpy", memcpy), KS("memmove", memmove),
        KS("expf", (f1)expf), KS("exp", (d1)exp), KS("exp2f", (f1)exp2f), KS("exp2", (d1)exp2),
        KS("logf", (f1)logf), KS("log", (d1)log), KS("log2f", (f1)log2f), KS("log2", (d1)log2),
        KS("tanhf", (f1)tanhf), KS("tanh", (d1)tanh), KS("erff", (f1)erff), KS("erf", (d1)erf),
        KS("sqrtf", (f1)sqrtf), KS("sqrt", (d1)sqrt), KS("floorf", (f1)floorf),
        KS("floor", (d1)floor), KS("ceilf", (f1)ceilf), KS("ceil", (d1)ceil),
        KS("fabsf", (f1)fabsf), KS("fabs", (d1)fabs), KS("powf", (f2)powf), KS("pow", (d2)pow),
        KS("fmaf", (float (*)(float, float, float))fmaf),
        KS("fma", (double (*)(double, double, double))fma),
        KS("fmodf", (f2)fmodf), KS("fmod", (d2)fmod),
        KS("rintf", (f1)rintf), KS("rint", (d1)rint),
        KS("sinf", (f1)sinf), KS("sin", (d1)sin), KS("cosf", (f1)cosf), KS("cos", (d1)cos),
        KS("tanf", (f1)tanf), KS("tan", (d1)tan), KS("asinf", (f1)asinf), KS("asin", (d1)asin),
        KS("acosf", (f1)acosf), KS("acos", (d1)acos), KS("atanf", (f1)atanf),
        KS("atan", (d1)atan), KS("sinhf", (f1)sinhf), KS("sinh", (d1)sinh),
        KS("coshf", (f1)coshf), KS("cosh", (d1)cosh), KS("asinhf", (f1)asinhf),
        KS("asinh", (d1)asinh), KS("acoshf", (f1)acoshf), KS("acosh", (d1)acosh),
        KS("atanhf", (f1)atanhf), KS("atanh", (d1)atanh),
    };
    enum { N = sizeof syms / sizeof syms[0] };
    LLVMOrcCSymbolMapPair pairs[N];
    for (int i = 0; i < N; ++i) {
        uintptr_t addr;
        memcpy(&addr, &syms[i].fn, sizeof addr); /* function pointer to address */
        pairs[i].Name = LLVMOrcLLJITMangleAndIntern(jit, syms[i].name);
        pairs[i].Sym.Address = (LLVMOrcExecutorAddress)addr;
        pairs[i].Sym.Flags.GenericFlags =
            LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
        pairs[i].Sym.Flags.TargetFlags = 0;
    }
    LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, N);
    LLVMErrorRef err = LLVMOrcJITDylibDefine(jd, mu);
    if (err) {
        LLVMOrcDisposeMaterializationUnit(mu);
        return fail_err(ctx, "cannot define the runtime symbols in the JIT", err);
    }
    return 0;
}

LLVMOrcLLJITRef cg_llvm__jit_new(te_ctx *ctx, LLVMTargetMachineRef tm) {
    LLVMOrcJITTargetMachineBuilderRef jtmb = LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm);
    LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb);
    LLVMOrcLLJITRef jit = NULL;
    LLVMErrorRef err = LLVMOrcCreateLLJIT(&jit, builder); /* takes the builder */
    if (err) {
        fail_err(ctx, "cannot create the JIT", err);
        return NULL;
    }
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(jit);
    if (define_runtime(ctx, jit, jd)) {
        cg_llvm__jit_free(jit);
        return NULL;
    }
    LLVMOrcDefinitionGeneratorRef gen = NULL;
    err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit),
                                                               NULL, NULL);
    if (err) {
        fail_err(ctx, "cannot search the process for symbols", err);
        cg_llvm__jit_free(jit);
        return NULL;
    }
    LLVMOrcJITDylibAddGenerator(jd, gen);
    return jit;
}

void cg_llvm__jit_free(void *jit) {
    if (!jit) return;
    LLVMErrorRef err = LLVMOrcDisposeLLJIT((LLVMOrcLLJITRef)jit);
    if (err) LLVMConsumeError(err);
}

int cg_llvm__jit_add(te_ctx *ctx, LLVMOrcLLJITRef jit, LLVMOrcThreadSafeModuleRef tsm) {
    LLVMErrorRef err = LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit), tsm);
    if (err) return fail_err(ctx, "cannot add the module to the JIT", err);
    return 0;
}

void *cg_llvm__jit_lookup(te_ctx *ctx, LLVMOrcLLJITRef jit, const char *sym, const char *func) {
    LLVMOrcExecutorAddress addr = 0;
    LLVMErrorRef err = LLVMOrcLLJITLookup(jit, &addr, sym);
    if (err) {
        char what[512];
        snprintf(what, sizeof what, "cannot link function '%s' (symbol '%s')", func, sym);
        fail_err(ctx, what, err);
        return NULL;
    }
    void *p = (void *)(uintptr_t)addr;
    return p;
}
