/*
 * codegen/llvm/llvm_parallel.c — PARALLEL loops outlined for
 * rt_parallel_for (the way TVM's CodeGenCPU::CreateParallelLaunch does):
 *
 *   i32 SYM_parK(i64 begin, i64 end, ptr env)      the rt_parallel_body
 *     loads the captured values from env and calls
 *   i32 SYM_parK_body(i64 begin, i64 end, min, ptr noalias buf..., vals...)
 *     alwaysinline: runs iterations [min+begin, min+end); inlining turns
 *     its noalias pointers into alias scopes, as for the top function.
 *
 * The env is a stack struct in the caller holding the loop's min and every
 * value the body uses but does not define (outer loop variables, buffer
 * pointers). A non-zero return of rt_parallel_for is returned after
 * freeing the caller's open heap buffers. Parallel loops nested inside run
 * serially.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/llvm/llvm_internal.h"

typedef struct {
    LLVMValueRef val;
    bool is_buf;
} capture;

void cg_llvm__parallel_for(cg_llvm_emitter *em, const tir_stmt *s) {
    const te_expr *v = s->u.loop.var;
    if (v->dtype.code != TE_INT || v->dtype.lanes > 1) {
        cg_llvm__fail(em, "loop variable '%s' in function '%s' has type %s; loops need an integer",
                      v->u.var.name, em->func, te_dtype_str(v->dtype));
        return;
    }
    LLVMTypeRef vty = cg_llvm__type(em, v->dtype);
    LLVMValueRef lo = cg_llvm__expr(em, s->u.loop.min), ext = cg_llvm__expr(em, s->u.loop.extent);
    if (!lo || !ext || !vty) return;
    lo = LLVMBuildIntCast2(em->b, lo, vty, 1, "");
    ext = LLVMBuildIntCast2(em->b, ext, em->t_i64, 1, "");
    int id = em->nclosures++;

    /* What the body needs from outside: distinct LLVM values, so two
     * buffers sharing storage stay one pointer (noalias stays true). */
    tir_free_vars fv;
    if (tir_stmt_free_vars(s->u.loop.body, 1, (const void *[]){v}, &fv)) {
        cg_llvm__fail(em, "out of memory outlining parallel loop '%s'", v->u.var.name);
        return;
    }
    int ncap = 0;
    capture *caps = calloc((size_t)(fv.n + 1), sizeof *caps);
    const void **keys = calloc((size_t)(fv.n + 1), sizeof *keys);
    int *slot = calloc((size_t)(fv.n + 1), sizeof *slot);
    int nkeys = 0;
    if (!caps || !keys || !slot) {
        cg_llvm__fail(em, "out of memory");
        goto done;
    }
    for (int i = 0; i < fv.n; ++i) {
        const void *k = fv.keys[i];
        LLVMValueRef val = cg_llvm__lookup(em, k);
        if (!val) continue; /* unbound: reported when the body uses it */
        bool is_buf = fv.is_buffer[i];
        int c = 0;
        while (c < ncap && caps[c].val != val) ++c;
        if (c == ncap) {
            caps[ncap].val = val;
            caps[ncap].is_buf = is_buf;
            ncap++;
        } else if (!is_buf) {
            caps[c].is_buf = false; /* also used as a plain value: no noalias */
        }
        keys[nkeys] = k;
        slot[nkeys++] = c;
    }

    /* Types: env = {min, captures...}; body(begin, end, min, captures...). */
    {
        int nf = ncap + 1;
        LLVMTypeRef *ft = calloc((size_t)nf + 2, sizeof *ft);
        if (!ft) {
            cg_llvm__fail(em, "out of memory");
            goto done;
        }
        ft[0] = vty;
        for (int c = 0; c < ncap; ++c) ft[c + 1] = LLVMTypeOf(caps[c].val);
        LLVMTypeRef env_ty = LLVMStructTypeInContext(em->lc, ft, (unsigned)nf, 0);

        LLVMTypeRef pty[3] = {em->t_i64, em->t_i64, em->t_ptr};
        LLVMTypeRef outer_ty = LLVMFunctionType(em->t_i32, pty, 3, 0);
        char name[512];
        snprintf(name, sizeof name, "%s_par%d", em->sym, id);
        LLVMValueRef outer = LLVMAddFunction(em->mod, name, outer_ty);
        LLVMSetLinkage(outer, LLVMInternalLinkage);
        cg_llvm__fn_attrs(em, outer);

        LLVMTypeRef *bt = calloc((size_t)nf + 2, sizeof *bt);
        if (!bt) {
            free(ft);
            cg_llvm__fail(em, "out of memory");
            goto done;
        }
        bt[0] = em->t_i64;
        bt[1] = em->t_i64;
        for (int f = 0; f < nf; ++f) bt[f + 2] = ft[f];
        LLVMTypeRef body_ty = LLVMFunctionType(em->t_i32, bt, (unsigned)nf + 2, 0);
        snprintf(name, sizeof name, "%s_par%d_body", em->sym, id);
        LLVMValueRef body = LLVMAddFunction(em->mod, name, body_ty);
        LLVMSetLinkage(body, LLVMInternalLinkage);
        cg_llvm__add_attr(em, body, LLVMAttributeFunctionIndex, "alwaysinline");
        cg_llvm__fn_attrs(em, body);
        for (int c = 0; c < ncap; ++c)
            if (caps[c].is_buf) cg_llvm__add_attr(em, body, (unsigned)c + 4, "noalias");

        /* The call site. */
        LLVMValueRef env = cg_llvm__entry_alloca(em, env_ty, NULL, 8, "env");
        LLVMBuilderRef B = em->b;
        for (int f = 0; f < nf; ++f) {
            LLVMValueRef p = LLVMBuildStructGEP2(B, env_ty, env, (unsigned)f, "");
            LLVMBuildStore(B, f == 0 ? lo : caps[f - 1].val, p);
        }
        LLVMTypeRef rpty[3] = {em->t_i64, em->t_ptr, em->t_ptr};
        LLVMTypeRef rty = LLVMFunctionType(em->t_i32, rpty, 3, 0);
        LLVMValueRef rpf = LLVMGetNamedFunction(em->mod, "rt_parallel_for");
        if (!rpf) rpf = LLVMAddFunction(em->mod, "rt_parallel_for", rty);
        LLVMValueRef args[3] = {ext, outer, env};
        LLVMValueRef rc = LLVMBuildCall2(B, rty, rpf, args, 3, "prc");
        LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(em->lc, em->fn, "par.fail");
        LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(em->lc, em->fn, "par.ok");
        LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntNE, rc, LLVMConstInt(em->t_i32, 0, 0), ""),
                        fail, ok);
        LLVMPositionBuilderAtEnd(B, fail);
        cg_llvm__return(em, rc);
        LLVMPositionBuilderAtEnd(B, ok);

        /* The rt_parallel_body: unpack and call the body. */
        cg_llvm_fn_state st = cg_llvm__begin_fn(em, outer);
        LLVMValueRef *bargs = calloc((size_t)nf + 2, sizeof *bargs);
        if (!bargs) {
            cg_llvm__fail(em, "out of memory");
        } else {
            bargs[0] = LLVMGetParam(outer, 0);
            bargs[1] = LLVMGetParam(outer, 1);
            LLVMValueRef envp = LLVMGetParam(outer, 2);
            for (int f = 0; f < nf; ++f) {
                LLVMValueRef p = LLVMBuildStructGEP2(B, env_ty, envp, (unsigned)f, "");
                bargs[f + 2] = LLVMBuildLoad2(B, ft[f], p, "");
            }
            LLVMValueRef r = LLVMBuildCall2(B, body_ty, body, bargs, (unsigned)nf + 2, "");
            LLVMBuildRet(B, r);
            free(bargs);
        }
        cg_llvm__end_fn(em, st);

        /* The body: the loop over this chunk. */
        st = cg_llvm__begin_fn(em, body);
        for (int k = 0; k < nkeys; ++k) {
            LLVMValueRef p = LLVMGetParam(body, (unsigned)slot[k] + 3);
            cg_llvm__bind(em, keys[k], p);
        }
        LLVMValueRef min = LLVMGetParam(body, 2);
        LLVMValueRef b0 = LLVMBuildIntCast2(B, LLVMGetParam(body, 0), vty, 1, "");
        LLVMValueRef b1 = LLVMBuildIntCast2(B, LLVMGetParam(body, 1), vty, 1, "");
        bool bound =
            em->an && tir_bind_loop(em->an, s->u.loop.var, s->u.loop.min, s->u.loop.extent);
        em->in_parallel = true;
        cg_llvm__loop(em, v, LLVMBuildNSWAdd(B, min, b0, ""), LLVMBuildNSWAdd(B, min, b1, ""),
                      s->u.loop.body, false);
        em->in_parallel = false;
        if (bound) te_analyzer_unbind(em->an, v);
        LLVMBuildRet(B, LLVMConstInt(em->t_i32, 0, 0));
        cg_llvm__end_fn(em, st);
        free(ft);
        free(bt);
    }
done:
    free(caps);
    free(keys);
    free(slot);
    tir_free_vars_release(&fv);
}
