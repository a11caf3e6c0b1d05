/*
 * codegen/llvm/llvm_stmt.c — statements as LLVM IR: loops (with
 * llvm.loop.unroll.full on UNROLLED ones), stores (vector, masked,
 * strided as one scalar store a lane, scatter), allocations (entry-block
 * allocas so SROA can promote register tiles; heap above
 * CG_LLVM_STACK_LIMIT, freed on every exit), IF, SEQ.
 */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "codegen/llvm/llvm_internal.h"

void cg_llvm__return(cg_llvm_emitter *em, LLVMValueRef rc) {
    if (em->nheap) {
        LLVMTypeRef fty = LLVMFunctionType(em->t_void, &em->t_ptr, 1, 0);
        LLVMValueRef fr = LLVMGetNamedFunction(em->mod, "free");
        if (!fr) fr = LLVMAddFunction(em->mod, "free", fty);
        for (int i = em->nheap - 1; i >= 0; --i)
            LLVMBuildCall2(em->b, fty, fr, &em->heap[i], 1, "");
    }
    LLVMBuildRet(em->b, rc);
}

/* !{!self, !{"llvm.loop.unroll.full"}} */
static LLVMValueRef unroll_md(cg_llvm_emitter *em) {
    const char *s = "llvm.loop.unroll.full";
    LLVMMetadataRef str = LLVMMDStringInContext2(em->lc, s, strlen(s));
    LLVMMetadataRef full = LLVMMDNodeInContext2(em->lc, &str, 1);
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(em->lc, NULL, 0);
    LLVMMetadataRef ops[2] = {tmp, full};
    LLVMMetadataRef loop = LLVMMDNodeInContext2(em->lc, ops, 2);
    LLVMMetadataReplaceAllUsesWith(tmp, loop); /* the self reference makes it distinct */
    return LLVMMetadataAsValue(em->lc, loop);
}

void cg_llvm__loop(cg_llvm_emitter *em, const te_expr *var, LLVMValueRef lo, LLVMValueRef hi,
                   const tir_stmt *body, bool unroll) {
    LLVMBuilderRef B = em->b;
    LLVMTypeRef ty = LLVMTypeOf(lo);
    const char *name = var->u.var.name ? var->u.var.name : "i";
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(em->lc, em->fn, "for.head");
    LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(em->lc, em->fn, "for.body");
    LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(em->lc, em->fn, "for.end");
    LLVMBuildBr(B, head);
    LLVMPositionBuilderAtEnd(B, head);
    LLVMValueRef phi = LLVMBuildPhi(B, ty, name);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, phi, hi, ""), bb, exit);
    LLVMPositionBuilderAtEnd(B, bb);
    int saved = em->nbinds;
    cg_llvm__bind(em, var, phi);
    cg_llvm__stmt(em, body);
    em->nbinds = saved;
    LLVMValueRef next = LLVMBuildNSWAdd(B, phi, LLVMConstInt(ty, 1, 0), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
    LLVMValueRef br = LLVMBuildBr(B, head);
    if (unroll) LLVMSetMetadata(br, LLVMGetMDKindIDInContext(em->lc, "llvm.loop", 9), unroll_md(em));
    LLVMValueRef vals[2] = {lo, next};
    LLVMBasicBlockRef bbs[2] = {pre, latch};
    LLVMAddIncoming(phi, vals, bbs, 2);
    LLVMPositionBuilderAtEnd(B, exit);
}

/* Loop bounds in the loop variable's type. */
static bool loop_bounds(cg_llvm_emitter *em, const tir_stmt *s, LLVMValueRef *lo,
                        LLVMValueRef *ext) {
    const te_expr *v = s->u.loop.var;
    if (v->dtype.code != TE_INT || v->dtype.lanes > 1) {
        cg_llvm__fail(em, "loop variable '%s' in function '%s' has type %s; loops need an integer",
                      v->u.var.name, em->func, te_dtype_str(v->dtype));
        return false;
    }
    LLVMTypeRef ty = cg_llvm__type(em, v->dtype);
    LLVMValueRef a = cg_llvm__expr(em, s->u.loop.min), b = cg_llvm__expr(em, s->u.loop.extent);
    if (!a || !b || !ty) return false;
    a = LLVMBuildIntCast2(em->b, a, ty, 1, "");
    b = LLVMBuildIntCast2(em->b, b, ty, 1, "");
    *lo = a;
    *ext = b;
    return true;
}

static void emit_for(cg_llvm_emitter *em, const tir_stmt *s) {
    const te_expr *v = s->u.loop.var;
    if (!v || v->kind != TE_VAR || !s->u.loop.min || !s->u.loop.extent || !s->u.loop.body) {
        cg_llvm__fail(em, "malformed loop in function '%s'", em->func);
        return;
    }
    if (s->u.loop.for_kind == TIR_FOR_THREAD) {
        cg_llvm__fail(em, "loop '%s' is bound to %s; the llvm target cannot run GPU thread bindings",
                      v->u.var.name, s->u.loop.thread_tag ? s->u.loop.thread_tag : "a GPU thread axis");
        return;
    }
    if (s->u.loop.for_kind == TIR_FOR_PARALLEL && !em->in_parallel) {
        cg_llvm__parallel_for(em, s);
        return;
    }
    /* nested PARALLEL and surviving VECTORIZED loops run serially */
    LLVMValueRef lo, ext;
    if (!loop_bounds(em, s, &lo, &ext)) return;
    LLVMValueRef hi = LLVMBuildNSWAdd(em->b, lo, ext, "");
    bool bound =
        em->an && tir_bind_loop(em->an, s->u.loop.var, s->u.loop.min, s->u.loop.extent);
    /* An UNROLLED loop the unroll pass left (it copies constant ones) gets
     * LLVM's full-unroll hint only when short: a long one would explode
     * code size and compile time. */
    int64_t n = 0;
    bool unroll = s->u.loop.for_kind == TIR_FOR_UNROLLED && te_is_const_int(s->u.loop.extent, &n) &&
                  n <= 64;
    cg_llvm__loop(em, v, lo, hi, s->u.loop.body, unroll);
    if (bound) te_analyzer_unbind(em->an, v);
}

static LLVMValueRef to_mem(cg_llvm_emitter *em, te_dtype elem, LLVMValueRef v, LLVMTypeRef mt) {
    if (elem.code != TE_BOOL) return v;
    LLVMTypeRef t = LLVMTypeOf(v);
    LLVMTypeRef to = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMVectorType(mt, LLVMGetVectorSize(t)) : mt;
    return LLVMBuildZExt(em->b, v, to, "");
}

static void emit_store(cg_llvm_emitter *em, const tir_stmt *s) {
    const tir_buffer *buf = s->u.store.buffer;
    const te_expr *idx = s->u.store.index, *val = s->u.store.value, *pred = s->u.store.predicate;
    if (!buf || !idx || !val) {
        cg_llvm__fail(em, "malformed store in function '%s'", em->func);
        return;
    }
    LLVMValueRef base = cg_llvm__buffer_base(em, buf, "stored to");
    if (!base) return;
    te_dtype elem = te_dtype_element(buf->dtype);
    LLVMTypeRef mt = cg_llvm__mem_type(em, elem);
    if (!mt) return;
    unsigned align = (unsigned)te_dtype_bytes(elem);
    int L = idx->dtype.lanes > val->dtype.lanes ? idx->dtype.lanes : val->dtype.lanes;
    if (idx->dtype.lanes == L) cg_llvm__check_access(em, buf, idx, pred, true);
    LLVMBuilderRef B = em->b;
    if (L <= 1) {
        LLVMValueRef i = cg_llvm__index(em, cg_llvm__expr(em, idx), idx->dtype);
        LLVMValueRef c = pred ? cg_llvm__expr(em, pred) : NULL;
        if (!i || (pred && !c)) return;
        LLVMBasicBlockRef join = NULL;
        if (c) {
            LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(em->lc, em->fn, "pstore");
            join = LLVMAppendBasicBlockInContext(em->lc, em->fn, "pstore.end");
            LLVMBuildCondBr(B, c, yes, join);
            LLVMPositionBuilderAtEnd(B, yes);
        }
        LLVMValueRef v = cg_llvm__expr(em, val);
        if (v) {
            LLVMValueRef p = LLVMBuildInBoundsGEP2(B, mt, base, &i, 1, "");
            LLVMValueRef st = LLVMBuildStore(B, to_mem(em, elem, v, mt), p);
            LLVMSetAlignment(st, align);
        }
        if (join) {
            LLVMBuildBr(B, join);
            LLVMPositionBuilderAtEnd(B, join);
        }
        return;
    }
    if (idx->dtype.lanes != L) {
        cg_llvm__fail(em, "store of %d lanes to buffer '%s' in function '%s' has a scalar index", L,
                      buf->name, em->func);
        return;
    }
    LLVMValueRef v = cg_llvm__expr(em, val);
    if (v && LLVMGetTypeKind(LLVMTypeOf(v)) != LLVMVectorTypeKind) v = cg_llvm__splat(em, v, L);
    LLVMValueRef mask = NULL;
    if (pred) {
        mask = cg_llvm__expr(em, pred);
        if (mask && LLVMGetTypeKind(LLVMTypeOf(mask)) != LLVMVectorTypeKind)
            mask = cg_llvm__splat(em, mask, L);
    }
    if (!v || (pred && !mask)) return;
    v = to_mem(em, elem, v, mt);
    LLVMTypeRef vt = LLVMVectorType(mt, (unsigned)L), fty;
    if (cg_llvm__is_dense(idx)) {
        LLVMValueRef i = cg_llvm__index(em, cg_llvm__dense_base(em, idx), te_dtype_element(idx->dtype));
        if (!i) return;
        LLVMValueRef p = LLVMBuildInBoundsGEP2(B, mt, base, &i, 1, "");
        if (mask && cg_llvm__lanes_inside_local(buf, idx, L)) {
            /* Per-thread memory: read, blend, write back; no other thread
             * can write the masked-off lanes in between. */
            LLVMValueRef old = LLVMBuildLoad2(B, vt, p, "");
            LLVMSetAlignment(old, align);
            v = LLVMBuildSelect(B, mask, v, old, "");
            mask = NULL;
        }
        if (!mask) {
            LLVMValueRef st = LLVMBuildStore(B, v, p);
            LLVMSetAlignment(st, align);
            return;
        }
        LLVMTypeRef over[2] = {vt, em->t_ptr};
        LLVMValueRef fn = cg_llvm__intrinsic(em, "llvm.masked.store", over, 2, &fty);
        if (!fn) return;
        LLVMValueRef args[4] = {v, p, LLVMConstInt(em->t_i32, align, 0), mask};
        LLVMBuildCall2(B, fty, fn, args, 4, "");
        return;
    }
    if (!mask && cg_llvm__is_strided(idx)) { /* a scalar store a lane, as loads */
        LLVMValueRef lanes[CG_LLVM_MAX_SCALARISED];
        if (!cg_llvm__strided_lanes(em, idx, lanes)) return;
        for (int l = 0; l < L; l++) {
            LLVMValueRef x =
                LLVMBuildExtractElement(B, v, LLVMConstInt(em->t_i32, (unsigned long long)l, 0), "");
            LLVMValueRef p = LLVMBuildInBoundsGEP2(B, mt, base, &lanes[l], 1, "");
            LLVMValueRef st = LLVMBuildStore(B, x, p);
            LLVMSetAlignment(st, align);
        }
        return;
    }
    LLVMValueRef i = cg_llvm__index(em, cg_llvm__expr(em, idx), idx->dtype);
    if (!i) return;
    LLVMValueRef ptrs = LLVMBuildInBoundsGEP2(B, mt, base, &i, 1, "");
    LLVMTypeRef over[2] = {vt, LLVMVectorType(em->t_ptr, (unsigned)L)};
    LLVMValueRef fn = cg_llvm__intrinsic(em, "llvm.masked.scatter", over, 2, &fty);
    if (!fn) return;
    if (!mask) {
        LLVMValueRef ones[256];
        for (int l = 0; l < L && l < 256; ++l) ones[l] = LLVMConstInt(em->t_i1, 1, 0);
        mask = LLVMConstVector(ones, (unsigned)(L < 256 ? L : 256));
    }
    LLVMValueRef args[4] = {v, ptrs, LLVMConstInt(em->t_i32, align, 0), mask};
    LLVMBuildCall2(B, fty, fn, args, 4, "");
}

static void emit_allocate(cg_llvm_emitter *em, const tir_stmt *s) {
    const tir_buffer *b = s->u.alloc.buffer;
    if (!b) {
        cg_llvm__fail(em, "malformed allocation in function '%s'", em->func);
        return;
    }
    if (b->dtype.code == TE_HANDLE) {
        cg_llvm__fail(em, "allocation '%s' in function '%s' has type %s", b->name, em->func,
                      te_dtype_str(b->dtype));
        return;
    }
    if (b->scope == TIR_SCOPE_SHARED) {
        cg_llvm__fail(em, "allocation '%s' in function '%s' is in GPU shared memory; the llvm "
                          "target has none",
                      b->name, em->func);
        return;
    }
    LLVMTypeRef mt = cg_llvm__mem_type(em, b->dtype);
    if (!mt) return;
    int64_t n = tir_buffer_size(b);
    int64_t esize = te_dtype_bytes(b->dtype);
    if (n <= 0 || n > INT64_MAX / 64 / (esize > 0 ? esize : 1)) {
        cg_llvm__fail(em, "allocation '%s' in function '%s' has %lld elements", b->name, em->func,
                      (long long)n);
        return;
    }
    int64_t bytes = n * esize;
    int saved = em->nbinds;
    if (bytes <= CG_LLVM_STACK_LIMIT) {
        int64_t slack = b->scope == TIR_SCOPE_LOCAL ? CG_LLVM_LOCAL_SLACK : 0;
        LLVMValueRef a = cg_llvm__entry_alloca(em, LLVMArrayType2(mt, (uint64_t)(n + slack)), NULL,
                                               64, b->name);
        cg_llvm__bind_buffer(em, b, a);
        cg_llvm__stmt(em, s->u.alloc.body);
        em->nbinds = saved;
        return;
    }
    LLVMBuilderRef B = em->b;
    LLVMTypeRef ps[2] = {em->t_i64, em->t_i64};
    LLVMTypeRef aty = LLVMFunctionType(em->t_ptr, ps, 2, 0);
    LLVMValueRef af = LLVMGetNamedFunction(em->mod, "aligned_alloc");
    if (!af) af = LLVMAddFunction(em->mod, "aligned_alloc", aty);
    LLVMValueRef args[2] = {LLVMConstInt(em->t_i64, 64, 0),
                            LLVMConstInt(em->t_i64, (unsigned long long)((bytes + 63) / 64 * 64), 0)};
    LLVMValueRef p = LLVMBuildCall2(B, aty, af, args, 2, b->name);
    LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(em->lc, em->fn, "alloc.fail");
    LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(em->lc, em->fn, "alloc.ok");
    LLVMBuildCondBr(B, LLVMBuildIsNull(B, p, ""), fail, ok);
    LLVMPositionBuilderAtEnd(B, fail);
    cg_llvm__return(em, LLVMConstInt(em->t_i32, (unsigned long long)-1, 1));
    LLVMPositionBuilderAtEnd(B, ok);
    if (em->nheap == em->cap_heap) {
        int cap = em->cap_heap ? 2 * em->cap_heap : 8;
        LLVMValueRef *h = realloc(em->heap, (size_t)cap * sizeof *h);
        if (!h) {
            cg_llvm__fail(em, "out of memory");
            return;
        }
        em->heap = h;
        em->cap_heap = cap;
    }
    em->heap[em->nheap++] = p;
    cg_llvm__bind_buffer(em, b, p);
    cg_llvm__stmt(em, s->u.alloc.body);
    em->nbinds = saved;
    em->nheap--;
    LLVMTypeRef fty = LLVMFunctionType(em->t_void, &em->t_ptr, 1, 0);
    LLVMValueRef fr = LLVMGetNamedFunction(em->mod, "free");
    if (!fr) fr = LLVMAddFunction(em->mod, "free", fty);
    LLVMBuildCall2(B, fty, fr, &p, 1, "");
}

static void emit_if(cg_llvm_emitter *em, const tir_stmt *s) {
    LLVMValueRef c = cg_llvm__expr(em, s->u.if_.cond);
    if (!c) return;
    if (LLVMGetTypeKind(LLVMTypeOf(c)) == LLVMVectorTypeKind) {
        cg_llvm__fail(em, "if condition of type %s in function '%s' must be a scalar bool",
                      te_dtype_str(s->u.if_.cond->dtype), em->func);
        return;
    }
    LLVMBuilderRef B = em->b;
    bool has_else = s->u.if_.else_s && s->u.if_.else_s->kind != TIR_NOOP;
    LLVMBasicBlockRef then_bb = LLVMAppendBasicBlockInContext(em->lc, em->fn, "if.then");
    LLVMBasicBlockRef else_bb = has_else ? LLVMAppendBasicBlockInContext(em->lc, em->fn, "if.else") : NULL;
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(em->lc, em->fn, "if.end");
    LLVMBuildCondBr(B, c, then_bb, has_else ? else_bb : join);
    LLVMPositionBuilderAtEnd(B, then_bb);
    cg_llvm__stmt(em, s->u.if_.then_s);
    LLVMBuildBr(B, join);
    if (has_else) {
        LLVMPositionBuilderAtEnd(B, else_bb);
        cg_llvm__stmt(em, s->u.if_.else_s);
        LLVMBuildBr(B, join);
    }
    LLVMPositionBuilderAtEnd(B, join);
}

void cg_llvm__stmt(cg_llvm_emitter *em, const tir_stmt *s) {
    if (em->failed || !s) return;
    switch (s->kind) {
    case TIR_FOR: emit_for(em, s); return;
    case TIR_STORE: emit_store(em, s); return;
    case TIR_ALLOCATE: emit_allocate(em, s); return;
    case TIR_IF: emit_if(em, s); return;
    case TIR_SEQ:
        for (int i = 0; i < s->u.seq.n && !em->failed; ++i) cg_llvm__stmt(em, s->u.seq.stmts[i]);
        return;
    case TIR_EVALUATE: cg_llvm__expr(em, s->u.eval.value); return;
    case TIR_NOOP: return;
    case TIR_LET: {
        LLVMValueRef v = cg_llvm__expr(em, s->u.let.value);
        if (!v) return;
        cg_llvm__bind(em, s->u.let.var, v);
        cg_llvm__stmt(em, s->u.let.body);
        return;
    }
    case TIR_ATTR: cg_llvm__stmt(em, s->u.attr.body); return;
    case TIR_BARRIER:
        cg_llvm__fail(em, "barrier (__syncthreads) in function '%s'; the llvm target has no GPU "
                          "threads",
                      em->func);
        return;
    case TIR_BUFFER_STORE:
        cg_llvm__fail(em, "BUFFER_STORE to '%s' in function '%s' reached code generation; run "
                          "tir_pass_storage_flatten (tir_run_pipeline) first",
                      s->u.bstore.buffer ? s->u.bstore.buffer->name : "?", em->func);
        return;
    case TIR_TENSOR_CALL: cg_llvm__tensor_call(em, s); return;
    default:
        cg_llvm__fail(em, "statement kind %d in function '%s' is not supported by the llvm target",
                      (int)s->kind, em->func);
        return;
    }
}
