/*
 * codegen/llvm/llvm_x86_dot.c — the x86.dpbf16 tensor call (tensorize on
 * the CPU): AVX512-BF16's VDPBF16PS, through LLVM's
 * llvm.x86.avx512bf16.dpbf16ps.512 (<16 x float> acc, <32 x bfloat> a,
 * <32 x bfloat> b).
 *
 * One call adds to 16 float32 sums (16 contiguous elements of the
 * accumulator) the products of a pair of bfloat16 from a (2 contiguous
 * elements, broadcast as one 32-bit word to every lane) with 16 pairs of
 * b (32 contiguous elements, pair j at 2j), the two products of a pair
 * summed first: TVM's dot_16x4 VNNI intrinsic for int8, in bfloat16.
 * The accumulator is loaded and stored around the call; where it is a
 * register tile's local buffer LLVM keeps it in registers.
 */
#include "codegen/llvm/llvm_internal.h"

/* The address of a tensor call's operand (a flat scalar load of the
 * tile's first element), with its last element bounds-checked too. */
static LLVMValueRef operand_ptr(cg_llvm_emitter *em, const te_expr *a, int64_t elems) {
    const tir_buffer *buf = a->u.load.buffer;
    LLVMValueRef base = cg_llvm__buffer_base(em, buf, "used");
    if (!base) return NULL;
    cg_llvm__check_access(em, buf, a->u.load.index, NULL, false);
    cg_llvm__check_access(em, buf, te_add(a->u.load.index, te_int(em->ctx, elems - 1)), NULL,
                          false);
    LLVMValueRef i = cg_llvm__index(em, cg_llvm__expr(em, a->u.load.index), a->u.load.index->dtype);
    LLVMTypeRef mt = cg_llvm__mem_type(em, te_dtype_element(buf->dtype));
    if (!i || !mt) return NULL;
    return LLVMBuildInBoundsGEP2(em->b, mt, base, &i, 1, "");
}

void cg_llvm__tensor_call(cg_llvm_emitter *em, const tir_stmt *s) {
    if (s->u.tcall.intrin != TIR_X86_DPBF16) {
        cg_llvm__fail(em, "tensor intrinsic %s in function '%s' runs only on the GPU (target cuda); "
                          "the llvm target has no tensor cores (remove the tensorize step)",
                      tir_tensor_intrin_name(s->u.tcall.intrin), em->func);
        return;
    }
    if (!em->bf16_dot) {
        cg_llvm__fail(em, "tensor intrinsic x86.dpbf16 in function '%s' needs a CPU with "
                          "AVX512-BF16 (VDPBF16PS); the target CPU '%s' lacks it (build for one "
                          "that has it, e.g. -mcpu=sapphirerapids or znver4, or leave the step "
                          "out)",
                      em->func, em->cpu ? em->cpu : "?");
        return;
    }
    const te_expr *const *a = (const te_expr *const *)s->u.tcall.args;
    static const int64_t elems[3] = {16, 2, 32};
    static const int bits[3] = {32, 16, 16};
    for (int i = 0; i < 3; i++)
        if (a[i]->kind != TE_LOAD || a[i]->u.load.predicate || a[i]->dtype.lanes != 1 ||
            a[i]->dtype.bits != bits[i]) {
            cg_llvm__fail(em, "x86.dpbf16 in function '%s': operand %d is not a flat scalar load "
                              "of %s",
                          em->func, i, i ? "bfloat16" : "float32");
            return;
        }
    LLVMValueRef pc = operand_ptr(em, a[0], elems[0]), pa = operand_ptr(em, a[1], elems[1]),
                 pb = operand_ptr(em, a[2], elems[2]);
    if (!pc || !pa || !pb) return;
    LLVMBuilderRef B = em->b;
    LLVMTypeRef f32x16 = LLVMVectorType(LLVMFloatTypeInContext(em->lc), 16);
    LLVMTypeRef bf16x32 = LLVMVectorType(LLVMBFloatTypeInContext(em->lc), 32);
    LLVMValueRef acc = LLVMBuildLoad2(B, f32x16, pc, "acc");
    LLVMSetAlignment(acc, 4);
    /* The pair as a one-lane vector, splat by a shuffle: a scalar load
     * put into a vector (insertelement) is what LLVM's VectorCombine tries
     * to widen, scanning the whole block back for a proof that the wider
     * load is safe; in a tile unrolled to thousands of calls that took
     * the build past the tuner's 15 s timeout. The shuffle still becomes
     * a broadcast from memory (vbroadcastss). */
    LLVMTypeRef i32x1 = LLVMVectorType(em->t_i32, 1), i32x16 = LLVMVectorType(em->t_i32, 16);
    LLVMValueRef pair = LLVMBuildLoad2(B, i32x1, pa, "pair");
    LLVMSetAlignment(pair, 2);
    LLVMValueRef splat = LLVMBuildShuffleVector(B, pair, LLVMGetPoison(i32x1),
                                                LLVMConstNull(i32x16), "");
    LLVMValueRef av = LLVMBuildBitCast(B, splat, bf16x32, "");
    LLVMValueRef bv = LLVMBuildLoad2(B, bf16x32, pb, "pairs");
    LLVMSetAlignment(bv, 2);
    LLVMTypeRef fty;
    LLVMValueRef fn = cg_llvm__intrinsic(em, "llvm.x86.avx512bf16.dpbf16ps.512", NULL, 0, &fty);
    if (!fn) return;
    LLVMValueRef args[3] = {acc, av, bv};
    LLVMValueRef r = LLVMBuildCall2(B, fty, fn, args, 3, "");
    LLVMValueRef st = LLVMBuildStore(B, r, pc);
    LLVMSetAlignment(st, 4);
}
