/*
 * codegen/llvm/llvm_bounds.c — bounds checks (cg_llvm_options.bounds_check):
 * before each load and store, the index of every enabled lane is compared
 * with the buffer's extent; the first lane outside goes to rt_bounds_error,
 * whose code the function returns, so a wrong kernel reports the buffer,
 * index and extent instead of corrupting memory or faulting. Inside a
 * parallel body the return ends that chunk and rt_parallel_for carries
 * the message to the caller.
 *
 * The index expression is emitted again for the test; LLVM's CSE merges
 * it with the access's own copy.
 */
#include <stdlib.h>

#include "codegen/llvm/llvm_internal.h"

/* A global string constant for name, one per key (a buffer, a function). */
static LLVMValueRef name_constant(cg_llvm_emitter *em, const void *key, const char *name) {
    for (int i = 0; i < em->nnames; i++)
        if (em->names[i].key == key) return em->names[i].val;
    LLVMValueRef g = LLVMBuildGlobalStringPtr(em->b, name ? name : "?", "loom.name");
    if (em->nnames == em->cap_names) {
        int cap = em->cap_names ? 2 * em->cap_names : 16;
        cg_llvm_bind *p = realloc(em->names, (size_t)cap * sizeof *p);
        if (!p) return g; /* still correct, only not shared */
        em->names = p;
        em->cap_names = cap;
    }
    em->names[em->nnames].key = key;
    em->names[em->nnames].val = g;
    em->nnames++;
    return g;
}

void cg_llvm__check_access(cg_llvm_emitter *em, const tir_buffer *buf, const te_expr *idx,
                           const te_expr *pred, bool is_write) {
    if (!em->bounds_check || em->failed) return;
    int64_t n = tir_buffer_size(buf);
    if (n <= 0) return;
    int L = idx->dtype.lanes > 1 ? idx->dtype.lanes : 1;
    LLVMBuilderRef B = em->b;
    LLVMValueRef i = cg_llvm__index(em, cg_llvm__expr(em, idx), idx->dtype);
    LLVMValueRef c = pred ? cg_llvm__expr(em, pred) : NULL;
    if (!i || (pred && !c)) return;
    /* Unsigned: a negative index is as far outside as a large one. */
    LLVMValueRef ext = cg_llvm__splat(em, LLVMConstInt(em->t_i64, (unsigned long long)n, 0), L);
    LLVMValueRef bad = LLVMBuildICmp(B, LLVMIntUGE, i, ext, "oob");
    if (c) {
        if (L > 1 && LLVMGetTypeKind(LLVMTypeOf(c)) != LLVMVectorTypeKind) c = cg_llvm__splat(em, c, L);
        bad = LLVMBuildAnd(B, bad, c, "");
    }
    LLVMValueRef any = bad, mask = NULL;
    if (L > 1) {
        /* The lanes as the bits of an iL: any lane is a non-zero, the
         * first lane its trailing zero count. */
        LLVMTypeRef it = LLVMIntTypeInContext(em->lc, (unsigned)L);
        mask = LLVMBuildBitCast(B, bad, it, "");
        any = LLVMBuildICmp(B, LLVMIntNE, mask, LLVMConstNull(it), "");
    }
    LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(em->lc, em->fn, "oob.fail");
    LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(em->lc, em->fn, "oob.ok");
    LLVMBuildCondBr(B, any, fail, ok);
    LLVMPositionBuilderAtEnd(B, fail);
    LLVMValueRef at = i;
    if (L > 1) {
        LLVMTypeRef it = LLVMTypeOf(mask), fty;
        LLVMValueRef cttz = cg_llvm__intrinsic(em, "llvm.cttz", &it, 1, &fty);
        if (!cttz) return;
        LLVMValueRef args[2] = {mask, LLVMConstInt(em->t_i1, 1, 0)};
        LLVMValueRef lane = LLVMBuildCall2(B, fty, cttz, args, 2, "lane");
        at = LLVMBuildExtractElement(B, i, lane, "");
    }
    LLVMTypeRef pt[5] = {em->t_ptr, em->t_ptr, em->t_i64, em->t_i64, em->t_i32};
    LLVMTypeRef rty = LLVMFunctionType(em->t_i32, pt, 5, 0);
    LLVMValueRef rf = LLVMGetNamedFunction(em->mod, "rt_bounds_error");
    if (!rf) {
        rf = LLVMAddFunction(em->mod, "rt_bounds_error", rty);
        /* Cold: keeps the checks' branches out of the hot layout. */
        cg_llvm__add_attr(em, rf, LLVMAttributeFunctionIndex, "cold");
    }
    LLVMValueRef args[5] = {name_constant(em, em->func, em->func),
                            name_constant(em, buf, buf->name), at,
                            LLVMConstInt(em->t_i64, (unsigned long long)n, 0),
                            LLVMConstInt(em->t_i32, is_write ? 1 : 0, 0)};
    LLVMValueRef rc = LLVMBuildCall2(B, rty, rf, args, 5, "oob.rc");
    cg_llvm__return(em, rc);
    LLVMPositionBuilderAtEnd(B, ok);
}
