/*
 * codegen/llvm/llvm_build.c — cg_llvm_build: one LLVM module per build in
 * a fresh context (several threads may build at once), each tir function
 * as an rt_packed_fn wrapper around a noalias body, verification, the
 * `default<On>` pipeline, optional IR/assembly texts, then ORC LLJIT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "codegen/llvm/llvm_internal.h"

/* "loom_func_<name>" with non-identifier characters as '_'. */
static const char *symbol_of(te_ctx *ctx, const char *name, int index, LLVMModuleRef mod) {
    char *s = te_sprintf(ctx, "loom_func_%s", name);
    if (!s) return NULL;
    for (char *p = s; *p; ++p)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            *p = '_';
    if (LLVMGetNamedFunction(mod, s)) s = te_sprintf(ctx, "%s_%d", s, index);
    return s;
}

/* Emits `i32 SYM(ptr args)` and its body. Returns 0 or -1. */
static int emit_func(cg_llvm_emitter *em, const tir_func *f, int index) {
    te_ctx *ctx = em->ctx;
    if (!f->name || !f->body || f->nparams < 0 || (f->nparams > 0 && !f->params))
        return te_error(ctx, "llvm: function %s is malformed (NULL name, body or params)",
                        f->name ? f->name : "(null)");
    for (int i = 0; i < f->nparams; ++i) {
        const tir_buffer *b = f->params[i];
        if (!b) return te_error(ctx, "llvm: parameter %d of function '%s' is NULL", i, f->name);
        if (b->dtype.code == TE_HANDLE)
            return te_error(ctx, "llvm: parameter '%s' of function '%s' has type %s", b->name,
                            f->name, te_dtype_str(b->dtype));
    }
    em->func = f->name;
    em->sym = symbol_of(ctx, f->name, index, em->mod);
    if (!em->sym) return -1;
    em->failed = false;
    em->in_parallel = false;
    em->nbinds = 0;

    LLVMTypeRef wty = LLVMFunctionType(em->t_i32, &em->t_ptr, 1, 0);
    LLVMValueRef wrapper = LLVMAddFunction(em->mod, em->sym, wty);
    cg_llvm__fn_attrs(em, wrapper);

    int np = f->nparams;
    LLVMTypeRef *pt = calloc((size_t)np + 1, sizeof *pt);
    LLVMValueRef *args = calloc((size_t)np + 1, sizeof *args);
    if (!pt || !args) {
        free(pt);
        free(args);
        return te_error(ctx, "llvm: out of memory");
    }
    for (int i = 0; i < np; ++i) pt[i] = em->t_ptr;
    LLVMTypeRef bty = LLVMFunctionType(em->t_i32, pt, (unsigned)np, 0);
    char *bname = te_sprintf(ctx, "%s_body", em->sym);
    LLVMValueRef body = LLVMAddFunction(em->mod, bname ? bname : "body", bty);
    LLVMSetLinkage(body, LLVMInternalLinkage);
    cg_llvm__add_attr(em, body, LLVMAttributeFunctionIndex, "alwaysinline");
    cg_llvm__fn_attrs(em, body);
    for (int i = 0; i < np; ++i) {
        /* Loom never passes one buffer as two parameters (cg_build refuses
         * it), so distinct parameters never overlap. */
        cg_llvm__add_attr(em, body, (unsigned)i + 1, "noalias");
        LLVMSetValueName2(LLVMGetParam(body, (unsigned)i), f->params[i]->name,
                          strlen(f->params[i]->name));
    }

    /* The wrapper: args[i] -> body(...). */
    LLVMBasicBlockRef wbb = LLVMAppendBasicBlockInContext(em->lc, wrapper, "entry");
    LLVMPositionBuilderAtEnd(em->b, wbb);
    LLVMValueRef argv = LLVMGetParam(wrapper, 0);
    for (int i = 0; i < np; ++i) {
        LLVMValueRef idx = LLVMConstInt(em->t_i64, (unsigned long long)i, 0);
        LLVMValueRef p = LLVMBuildInBoundsGEP2(em->b, em->t_ptr, argv, &idx, 1, "");
        args[i] = LLVMBuildLoad2(em->b, em->t_ptr, p, f->params[i]->name);
    }
    LLVMBuildRet(em->b, LLVMBuildCall2(em->b, bty, body, args, (unsigned)np, "rc"));
    free(args);
    free(pt);

    cg_llvm_fn_state st = cg_llvm__begin_fn(em, body);
    for (int i = 0; i < np; ++i) cg_llvm__bind_buffer(em, f->params[i], LLVMGetParam(body, (unsigned)i));
    cg_llvm__stmt(em, f->body);
    if (!em->failed) cg_llvm__return(em, LLVMConstInt(em->t_i32, 0, 0));
    cg_llvm__end_fn(em, st);
    return em->failed ? -1 : 0;
}

typedef struct {
    LLVMOrcThreadSafeContextRef tsc;
    LLVMModuleRef mod;
    LLVMTargetMachineRef tm;
    LLVMOrcLLJITRef jit;
    char *ir, *asm_text;
} build_state;

static void state_free(build_state *s) {
    if (s->mod) LLVMDisposeModule(s->mod);
    if (s->tm) LLVMDisposeTargetMachine(s->tm);
    if (s->jit) cg_llvm__jit_free(s->jit);
    if (s->tsc) LLVMOrcDisposeThreadSafeContext(s->tsc);
    if (s->ir) LLVMDisposeMessage(s->ir);
    free(s->asm_text);
}

static int emit_module(te_ctx *ctx, build_state *s, int nfuncs, const tir_func *const *funcs,
                       const char **syms, bool bounds_check) {
    cg_llvm_emitter em;
    memset(&em, 0, sizeof em);
    em.ctx = ctx;
    em.bounds_check = bounds_check;
    char *triple = LLVMGetTargetMachineTriple(s->tm), *cpu = LLVMGetTargetMachineCPU(s->tm),
         *feats = LLVMGetTargetMachineFeatureString(s->tm);
    em.bf16_dot = cg_llvm__has_bf16_dot(triple, cpu, feats);
    em.avx512f = cg_llvm__vector_lanes(triple, cpu, feats) >= 16;
    em.cpu = te_strdup(ctx, cpu);
    LLVMDisposeMessage(triple);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(feats);
    em.lc = LLVMOrcThreadSafeContextGetContext(s->tsc);
    em.mod = s->mod;
    em.b = LLVMCreateBuilderInContext(em.lc);
    em.t_i1 = LLVMInt1TypeInContext(em.lc);
    em.t_i8 = LLVMInt8TypeInContext(em.lc);
    em.t_i32 = LLVMInt32TypeInContext(em.lc);
    em.t_i64 = LLVMInt64TypeInContext(em.lc);
    em.t_ptr = LLVMPointerTypeInContext(em.lc, 0);
    em.t_void = LLVMVoidTypeInContext(em.lc);
    em.an = te_analyzer_new(ctx);
    int rc = em.an ? 0 : te_error(ctx, "llvm: no memory for the analyser");
    for (int i = 0; i < nfuncs && !rc; ++i) {
        rc = emit_func(&em, funcs[i], i);
        syms[i] = em.sym;
    }
    LLVMDisposeBuilder(em.b);
    if (em.an) te_analyzer_free(em.an);
    free(em.binds);
    free(em.heap);
    free(em.names);
    return rc;
}

static void module_text(rt_module *m, const char *what, const char *text) {
    if (text) rt_module_set_text(m, what, text);
}

rt_module *cg_llvm_build(te_ctx *ctx, int nfuncs, const tir_func *const *funcs,
                         const cg_llvm_options *opts) {
    if (!ctx) return NULL;
    cg_llvm_options defaults;
    memset(&defaults, 0, sizeof defaults);
    if (!opts) opts = &defaults;
    if (nfuncs < 1 || !funcs) {
        te_error(ctx, "llvm: cg_llvm_build needs at least one function (got %d)", nfuncs);
        return NULL;
    }
    for (int i = 0; i < nfuncs; ++i) {
        if (!funcs[i] || !funcs[i]->name) {
            te_error(ctx, "llvm: function %d is NULL or unnamed", i);
            return NULL;
        }
        for (int j = 0; j < i; ++j)
            if (!strcmp(funcs[i]->name, funcs[j]->name)) {
                te_error(ctx, "llvm: two functions are named '%s'", funcs[i]->name);
                return NULL;
            }
    }
    int opt = opts->opt_level;
    if (opt < -1 || opt > 3) {
        te_error(ctx, "llvm: opt_level %d is out of range (-1 for O0, 1..3, 0 for the default 3)",
                 opt);
        return NULL;
    }
    if (opt == 0) opt = 3;
    if (opt == -1) opt = 0;

    cg_llvm__init();
    build_state s;
    memset(&s, 0, sizeof s);
    s.tsc = LLVMOrcCreateNewThreadSafeContext();
    LLVMContextRef lc = LLVMOrcThreadSafeContextGetContext(s.tsc);
    s.mod = LLVMModuleCreateWithNameInContext("loom", lc);
    s.tm = cg_llvm__target_machine(ctx, opts->mcpu, opts->features, opt);
    if (!s.tm) {
        state_free(&s);
        return NULL;
    }
    char *triple = cg_llvm__triple();
    LLVMSetTarget(s.mod, triple);
    LLVMDisposeMessage(triple);
    LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(s.tm);
    LLVMSetModuleDataLayout(s.mod, dl);
    LLVMDisposeTargetData(dl);

    const char **syms = te_alloc(ctx, (size_t)nfuncs * sizeof *syms);
    if (!syms || emit_module(ctx, &s, nfuncs, funcs, syms, opts->bounds_check)) {
        state_free(&s);
        return NULL;
    }
    char *msg = NULL;
    if (LLVMVerifyModule(s.mod, LLVMReturnStatusAction, &msg)) {
        te_error(ctx, "llvm: internal error: the generated IR for function '%s' fails "
                      "verification: %.1500s",
                 funcs[0]->name, msg ? msg : "");
        LLVMDisposeMessage(msg);
        state_free(&s);
        return NULL;
    }
    LLVMDisposeMessage(msg);

    LLVMPassBuilderOptionsRef pbo = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(pbo, opt >= 2);
    LLVMPassBuilderOptionsSetSLPVectorization(pbo, opt >= 2); /* off unless asked */
    LLVMPassBuilderOptionsSetLoopUnrolling(pbo, opt >= 2);
    LLVMPassBuilderOptionsSetLoopInterleaving(pbo, opt >= 2);
    char pipeline[32];
    snprintf(pipeline, sizeof pipeline, "default<O%d>", opt);
    LLVMErrorRef err = LLVMRunPasses(s.mod, pipeline, s.tm, pbo);
    LLVMDisposePassBuilderOptions(pbo);
    if (err) {
        char *m = cg_llvm__error_text(err);
        te_error(ctx, "llvm: the %s pipeline failed: %s", pipeline, m ? m : "");
        free(m);
        state_free(&s);
        return NULL;
    }
    if (opts->keep_ir) s.ir = LLVMPrintModuleToString(s.mod);
    if (opts->keep_asm) {
        LLVMModuleRef copy = LLVMCloneModule(s.mod);
        LLVMMemoryBufferRef buf = NULL;
        char *emsg = NULL;
        if (LLVMTargetMachineEmitToMemoryBuffer(s.tm, copy, LLVMAssemblyFile, &emsg, &buf)) {
            te_error(ctx, "llvm: cannot write assembly: %s", emsg ? emsg : "");
            LLVMDisposeMessage(emsg);
            LLVMDisposeModule(copy);
            state_free(&s);
            return NULL;
        }
        size_t n = LLVMGetBufferSize(buf);
        s.asm_text = malloc(n + 1);
        if (s.asm_text) {
            memcpy(s.asm_text, LLVMGetBufferStart(buf), n);
            s.asm_text[n] = '\0';
        }
        LLVMDisposeMemoryBuffer(buf);
        LLVMDisposeModule(copy);
    }

    /* The JIT takes over a second target machine. */
    LLVMTargetMachineRef jtm = cg_llvm__target_machine(ctx, opts->mcpu, opts->features, opt);
    if (!jtm) {
        state_free(&s);
        return NULL;
    }
    s.jit = cg_llvm__jit_new(ctx, jtm);
    if (!s.jit) {
        state_free(&s);
        return NULL;
    }
    LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(s.mod, s.tsc);
    s.mod = NULL; /* owned by tsm, then by the JIT */
    if (cg_llvm__jit_add(ctx, s.jit, tsm)) {
        state_free(&s);
        return NULL;
    }
    LLVMOrcDisposeThreadSafeContext(s.tsc); /* the JIT's module keeps it alive */
    s.tsc = NULL;

    void **addrs = te_alloc(ctx, (size_t)nfuncs * sizeof *addrs);
    for (int i = 0; i < nfuncs; ++i)
        if (!addrs || !(addrs[i] = cg_llvm__jit_lookup(ctx, s.jit, syms[i], funcs[i]->name))) {
            state_free(&s);
            return NULL;
        }
    rt_module *m = rt_module_new("llvm", s.jit, cg_llvm__jit_free);
    if (!m) {
        te_error(ctx, "llvm: %s", rt_last_error());
        state_free(&s);
        return NULL;
    }
    s.jit = NULL; /* owned by m */
    for (int i = 0; i < nfuncs; ++i) {
        const tir_func *fn = funcs[i];
        rt_packed_fn entry;
        memcpy(&entry, &addrs[i], sizeof entry); /* object pointer to function pointer */
        int rc = cg_module_add_tir_func(m, fn, entry);
        if (rc) {
            te_error(ctx, "llvm: %s", rt_module_errmsg(m));
            rt_module_free(m);
            state_free(&s);
            return NULL;
        }
    }
    module_text(m, "ir", s.ir);
    module_text(m, "asm", s.asm_text);
    state_free(&s);
    return m;
}
