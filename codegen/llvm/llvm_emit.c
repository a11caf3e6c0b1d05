/*
 * codegen/llvm/llvm_emit.c — the emitter's small services: error
 * recording, scoped bindings of variables and buffers, dtype to LLVM type,
 * entry-block allocas, intrinsic declarations, splats, attributes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/llvm/llvm_internal.h"

void cg_llvm__fail(cg_llvm_emitter *em, const char *fmt, ...) {
    if (em->failed) return;
    em->failed = true;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    te_error(em->ctx, "llvm: %s", buf);
}

void cg_llvm__bind(cg_llvm_emitter *em, const void *key, LLVMValueRef v) {
    if (em->nbinds == em->cap_binds) {
        int cap = em->cap_binds ? 2 * em->cap_binds : 32;
        cg_llvm_bind *p = realloc(em->binds, (size_t)cap * sizeof *p);
        if (!p) {
            cg_llvm__fail(em, "out of memory");
            return;
        }
        em->binds = p;
        em->cap_binds = cap;
    }
    em->binds[em->nbinds].key = key;
    em->binds[em->nbinds].val = v;
    em->nbinds++;
}

LLVMValueRef cg_llvm__lookup(const cg_llvm_emitter *em, const void *key) {
    for (int i = em->nbinds - 1; i >= 0; --i)
        if (em->binds[i].key == key) return em->binds[i].val;
    return NULL;
}

void cg_llvm__bind_buffer(cg_llvm_emitter *em, const tir_buffer *b, LLVMValueRef ptr) {
    cg_llvm__bind(em, b, ptr);
    if (b->data) cg_llvm__bind(em, b->data, ptr);
}

static LLVMTypeRef scalar_type(cg_llvm_emitter *em, te_dtype t) {
    switch (t.code) {
    case TE_INT:
    case TE_UINT:
        if (t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64)
            return LLVMIntTypeInContext(em->lc, t.bits);
        break;
    case TE_BOOL: return em->t_i1;
    case TE_FLOAT:
        if (t.bits == 16) return LLVMHalfTypeInContext(em->lc);
        if (t.bits == 32) return LLVMFloatTypeInContext(em->lc);
        if (t.bits == 64) return LLVMDoubleTypeInContext(em->lc);
        break;
    case TE_HANDLE: return em->t_ptr;
    /* bfloat16 lives in i16: its conversions are bit operations
     * (llvm_expr.c), so no bfloat libcall or AVX512-BF16 is needed */
    case TE_BFLOAT:
        if (t.bits == 16) return LLVMInt16TypeInContext(em->lc);
        break;
    default: break;
    }
    cg_llvm__fail(em, "type %s in function '%s' has no LLVM equivalent", te_dtype_str(t),
                  em->func);
    return NULL;
}

LLVMTypeRef cg_llvm__type(cg_llvm_emitter *em, te_dtype t) {
    LLVMTypeRef s = scalar_type(em, te_dtype_element(t));
    if (!s || t.lanes <= 1) return s;
    return LLVMVectorType(s, t.lanes);
}

LLVMTypeRef cg_llvm__mem_type(cg_llvm_emitter *em, te_dtype t) {
    te_dtype e = te_dtype_element(t);
    if (e.code == TE_BOOL) return em->t_i8;
    return scalar_type(em, e);
}

LLVMValueRef cg_llvm__entry_alloca(cg_llvm_emitter *em, LLVMTypeRef ty, LLVMValueRef count,
                                   unsigned align, const char *name) {
    LLVMBuilderRef ab = LLVMCreateBuilderInContext(em->lc);
    LLVMPositionBuilderAtEnd(ab, em->alloca_bb);
    LLVMValueRef a = count ? LLVMBuildArrayAlloca(ab, ty, count, name) : LLVMBuildAlloca(ab, ty, name);
    if (align) LLVMSetAlignment(a, align);
    LLVMDisposeBuilder(ab);
    return a;
}

LLVMValueRef cg_llvm__intrinsic(cg_llvm_emitter *em, const char *name, LLVMTypeRef *over,
                                int nover, LLVMTypeRef *fty) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    if (!id) {
        cg_llvm__fail(em, "LLVM has no intrinsic '%s'", name);
        return NULL;
    }
    *fty = LLVMIntrinsicGetType(em->lc, id, over, (size_t)nover);
    return LLVMGetIntrinsicDeclaration(em->mod, id, over, (size_t)nover);
}

LLVMValueRef cg_llvm__buffer_base(cg_llvm_emitter *em, const tir_buffer *buf, const char *use) {
    LLVMValueRef base = cg_llvm__lookup(em, buf);
    if (!base)
        cg_llvm__fail(em, "buffer '%s' in function '%s' is %s outside its allocation or "
                          "parameter list",
                      buf->name, em->func, use);
    return base;
}

LLVMValueRef cg_llvm__splat(cg_llvm_emitter *em, LLVMValueRef v, int lanes) {
    if (lanes <= 1 || !v) return v;
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(v), (unsigned)lanes);
    LLVMValueRef ins = LLVMBuildInsertElement(em->b, LLVMGetPoison(vt), v,
                                              LLVMConstInt(em->t_i32, 0, 0), "");
    LLVMValueRef mask = LLVMConstNull(LLVMVectorType(em->t_i32, (unsigned)lanes));
    return LLVMBuildShuffleVector(em->b, ins, LLVMGetPoison(vt), mask, "splat");
}

void cg_llvm__add_attr(cg_llvm_emitter *em, LLVMValueRef fn, unsigned idx, const char *name) {
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    if (!kind) return;
    LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(em->lc, kind, 0));
}

void cg_llvm__fn_attrs(cg_llvm_emitter *em, LLVMValueRef fn) {
    cg_llvm__add_attr(em, fn, LLVMAttributeFunctionIndex, "nounwind");
    /* Loom chooses vector widths itself: keep explicit <16 x float> in zmm
     * registers instead of splitting it for CPUs that prefer 256 bits. */
    const char *k = "min-legal-vector-width", *v = "512";
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(em->lc, k, (unsigned)strlen(k), v,
                                                      (unsigned)strlen(v)));
}

cg_llvm_fn_state cg_llvm__begin_fn(cg_llvm_emitter *em, LLVMValueRef fn) {
    cg_llvm_fn_state s;
    s.fn = em->fn;
    s.alloca_bb = em->alloca_bb;
    s.insert_bb = LLVMGetInsertBlock(em->b);
    s.nbinds = em->nbinds;
    s.heap = em->heap;
    s.nheap = em->nheap;
    s.cap_heap = em->cap_heap;
    em->fn = fn;
    em->alloca_bb = LLVMAppendBasicBlockInContext(em->lc, fn, "allocas");
    em->heap = NULL;
    em->nheap = em->cap_heap = 0;
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(em->lc, fn, "body");
    LLVMPositionBuilderAtEnd(em->b, body);
    return s;
}

void cg_llvm__end_fn(cg_llvm_emitter *em, cg_llvm_fn_state s) {
    LLVMBuilderRef ab = LLVMCreateBuilderInContext(em->lc);
    LLVMPositionBuilderAtEnd(ab, em->alloca_bb);
    LLVMBuildBr(ab, LLVMGetNextBasicBlock(em->alloca_bb));
    LLVMDisposeBuilder(ab);
    free(em->heap);
    em->fn = s.fn;
    em->alloca_bb = s.alloca_bb;
    em->nbinds = s.nbinds;
    em->heap = s.heap;
    em->nheap = s.nheap;
    em->cap_heap = s.cap_heap;
    if (s.insert_bb) LLVMPositionBuilderAtEnd(em->b, s.insert_bb);
}
