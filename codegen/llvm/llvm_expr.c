/*
 * codegen/llvm/llvm_expr.c — expressions as LLVM IR. Vector types are LLVM
 * vectors; a load at a dense ramp is one vector load, at a strided ramp
 * one scalar load a lane (unless masked), at a clamped dense ramp one
 * vector load where no lane is clamped (a runtime test), any other vector
 * index a masked gather; float32 exp and erf are inlined approximations
 * (exp_f32, erf_f32); float a*b+c is llvm.fmuladd (LLVM fuses nothing
 * without fast-math flags). Floats keep IEEE semantics: no fast-math.
 */
#include <math.h>
#include <string.h>

#include "codegen/llvm/llvm_internal.h"

static bool is_signed(te_dtype t) { return t.code == TE_INT; }

static int lanes_of(const te_expr *e) { return e->dtype.lanes > 1 ? e->dtype.lanes : 1; }

/* A constant (scalar or splat) of the type of e's elements. */
static LLVMValueRef const_splat(LLVMValueRef c, int lanes) {
    if (lanes <= 1) return c;
    LLVMValueRef v[256];
    LLVMValueRef *vals = v;
    for (int i = 0; i < lanes && i < 256; ++i) vals[i] = c;
    return LLVMConstVector(vals, (unsigned)(lanes < 256 ? lanes : 256));
}

/* The bits of a bfloat16 value (v already rounded to bfloat16). */
static unsigned long long bf16_bits(double v) {
    if (v != v) return 0x7fc0;
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u >> 16;
}

static LLVMValueRef int_imm(cg_llvm_emitter *em, const te_expr *e) {
    LLVMTypeRef t = cg_llvm__type(em, te_dtype_element(e->dtype));
    if (!t) return NULL;
    if (e->dtype.code == TE_BFLOAT)
        return const_splat(LLVMConstInt(t, bf16_bits((double)e->u.ival), 0), lanes_of(e));
    if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind) { /* an int immediate of float type */
        return const_splat(LLVMConstReal(t, (double)e->u.ival), lanes_of(e));
    }
    return const_splat(LLVMConstInt(t, (unsigned long long)e->u.ival, is_signed(e->dtype)),
                       lanes_of(e));
}

static LLVMValueRef float_imm(cg_llvm_emitter *em, const te_expr *e) {
    LLVMTypeRef t = cg_llvm__type(em, te_dtype_element(e->dtype));
    if (!t) return NULL;
    if (e->dtype.code == TE_BFLOAT)
        return const_splat(LLVMConstInt(t, bf16_bits(e->u.fval), 0), lanes_of(e));
    if (LLVMGetTypeKind(t) == LLVMIntegerTypeKind)
        return const_splat(LLVMConstInt(t, (unsigned long long)(int64_t)e->u.fval, 1), lanes_of(e));
    return const_splat(LLVMConstReal(t, e->u.fval), lanes_of(e));
}

/* Brings a scalar operand to `lanes` lanes. */
static LLVMValueRef widen(cg_llvm_emitter *em, LLVMValueRef v, int lanes) {
    if (!v || lanes <= 1 || LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind) return v;
    return cg_llvm__splat(em, v, lanes);
}

static bool contains_load(const te_expr *e);

static void find_load(const te_expr *child, void *user) {
    bool *found = user;
    if (!*found && contains_load(child)) *found = true;
}

static bool contains_load(const te_expr *e) {
    if (!e) return false;
    if (e->kind == TE_LOAD) return true;
    bool found = false;
    te_expr_visit_children(e, find_load, &found);
    return found;
}

static LLVMValueRef call1(cg_llvm_emitter *em, const char *intrin, LLVMValueRef x) {
    LLVMTypeRef ty = LLVMTypeOf(x), fty;
    LLVMValueRef fn = cg_llvm__intrinsic(em, intrin, &ty, 1, &fty);
    if (!fn) return NULL;
    return LLVMBuildCall2(em->b, fty, fn, &x, 1, "");
}

/* intrin(x, y), overloaded on x's type (llvm.pow, llvm.copysign). */
static LLVMValueRef call2(cg_llvm_emitter *em, const char *intrin, LLVMValueRef x, LLVMValueRef y) {
    LLVMTypeRef ty = LLVMTypeOf(x), fty;
    LLVMValueRef fn = cg_llvm__intrinsic(em, intrin, &ty, 1, &fty);
    return fn ? LLVMBuildCall2(em->b, fty, fn, (LLVMValueRef[]){x, y}, 2, "") : NULL;
}

/* fmuladd(a, b, c) on float scalars or vectors. */
static LLVMValueRef fmuladd(cg_llvm_emitter *em, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
    LLVMTypeRef ty = LLVMTypeOf(c), fty;
    LLVMValueRef fn = cg_llvm__intrinsic(em, "llvm.fmuladd", &ty, 1, &fty);
    if (!fn) return NULL;
    LLVMValueRef args[3] = {a, b, c};
    return LLVMBuildCall2(em->b, fty, fn, args, 3, "fma");
}

static bool is_fmul(const te_expr *e) {
    return e->kind == TE_MUL && te_dtype_element(e->dtype).code == TE_FLOAT;
}

/* ADD/SUB with a float MUL operand as one llvm.fmuladd; NULL if no match
 * (nothing emitted then). */
static LLVMValueRef try_fmuladd(cg_llvm_emitter *em, const te_expr *e) {
    if (te_dtype_element(e->dtype).code != TE_FLOAT) return NULL;
    const te_expr *a = e->u.bin.a, *b = e->u.bin.b;
    int L = lanes_of(e);
    if (e->kind == TE_ADD && (is_fmul(a) || is_fmul(b))) {
        const te_expr *m = is_fmul(a) ? a : b, *c = is_fmul(a) ? b : a;
        LLVMValueRef x = widen(em, cg_llvm__expr(em, m->u.bin.a), L);
        LLVMValueRef y = widen(em, cg_llvm__expr(em, m->u.bin.b), L);
        LLVMValueRef z = widen(em, cg_llvm__expr(em, c), L);
        return em->failed ? NULL : fmuladd(em, x, y, z);
    }
    if (e->kind == TE_SUB && is_fmul(a)) { /* a*b - c = fmuladd(a, b, -c), exactly */
        LLVMValueRef x = widen(em, cg_llvm__expr(em, a->u.bin.a), L);
        LLVMValueRef y = widen(em, cg_llvm__expr(em, a->u.bin.b), L);
        LLVMValueRef z = widen(em, cg_llvm__expr(em, b), L);
        return em->failed ? NULL : fmuladd(em, x, y, LLVMBuildFNeg(em->b, z, ""));
    }
    if (e->kind == TE_SUB && is_fmul(b)) { /* c - a*b = fmuladd(-a, b, c) */
        LLVMValueRef x = widen(em, cg_llvm__expr(em, b->u.bin.a), L);
        LLVMValueRef y = widen(em, cg_llvm__expr(em, b->u.bin.b), L);
        LLVMValueRef z = widen(em, cg_llvm__expr(em, a), L);
        return em->failed ? NULL : fmuladd(em, LLVMBuildFNeg(em->b, x, ""), y, z);
    }
    return NULL;
}

static bool pow2(int64_t v, unsigned *shift) {
    if (v <= 0 || (v & (v - 1))) return false;
    unsigned s = 0;
    while ((INT64_C(1) << s) != v) ++s;
    *shift = s;
    return true;
}

static LLVMValueRef floor_op(cg_llvm_emitter *em, const te_expr *e, LLVMValueRef a,
                             LLVMValueRef b) {
    bool div = e->kind == TE_FLOORDIV;
    te_dtype t = te_dtype_element(e->dtype);
    LLVMBuilderRef B = em->b;
    if (t.code == TE_FLOAT) {
        LLVMValueRef q = call1(em, "llvm.floor", LLVMBuildFDiv(B, a, b, ""));
        if (div || !q) return q;
        return LLVMBuildFSub(B, a, LLVMBuildFMul(B, b, q, ""), "fmod");
    }
    if (t.code != TE_INT) return div ? LLVMBuildUDiv(B, a, b, "") : LLVMBuildURem(B, a, b, "");
    const te_expr *be = e->u.bin.b;
    unsigned sh;
    int64_t bv;
    if (te_is_const_int(be, &bv) && pow2(bv, &sh)) {
        /* Two's complement shifts and masks already round toward -inf. */
        LLVMTypeRef ty = LLVMTypeOf(a);
        LLVMTypeRef et = LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? LLVMGetElementType(ty) : ty;
        int L = lanes_of(e);
        if (div) return LLVMBuildAShr(B, a, const_splat(LLVMConstInt(et, sh, 0), L), "fdiv");
        return LLVMBuildAnd(B, a, const_splat(LLVMConstInt(et, (unsigned long long)(bv - 1), 0), L),
                            "fmod");
    }
    if (te_is_const_int(be, &bv) && bv > 0 && lanes_of(e) == 1 && em->an) {
        int64_t lo = INT64_MIN, hi = INT64_MAX;
        te_analyzer_const_bound(em->an, e->u.bin.a, &lo, &hi);
        if (lo >= 0) return div ? LLVMBuildSDiv(B, a, b, "") : LLVMBuildSRem(B, a, b, "");
    }
    LLVMValueRef q = LLVMBuildSDiv(B, a, b, ""), r = LLVMBuildSRem(B, a, b, "");
    LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(a));
    LLVMValueRef adj = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, zero, ""),
                                    LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, r, b, ""), zero, ""),
                                    "adj");
    if (div) return LLVMBuildSub(B, q, LLVMBuildZExt(B, adj, LLVMTypeOf(q), ""), "floordiv");
    return LLVMBuildSelect(B, adj, LLVMBuildAdd(B, r, b, ""), r, "floormod");
}

static LLVMValueRef compare(cg_llvm_emitter *em, te_expr_kind k, te_dtype t, LLVMValueRef a,
                            LLVMValueRef b) {
    if (te_dtype_element(t).code == TE_FLOAT) {
        /* C semantics: every comparison with a NaN is false except != */
        LLVMRealPredicate p = k == TE_EQ   ? LLVMRealOEQ
                              : k == TE_NE ? LLVMRealUNE
                              : k == TE_LT ? LLVMRealOLT
                              : k == TE_LE ? LLVMRealOLE
                              : k == TE_GT ? LLVMRealOGT
                                           : LLVMRealOGE;
        return LLVMBuildFCmp(em->b, p, a, b, "");
    }
    bool s = is_signed(t);
    LLVMIntPredicate p = k == TE_EQ   ? LLVMIntEQ
                         : k == TE_NE ? LLVMIntNE
                         : k == TE_LT ? (s ? LLVMIntSLT : LLVMIntULT)
                         : k == TE_LE ? (s ? LLVMIntSLE : LLVMIntULE)
                         : k == TE_GT ? (s ? LLVMIntSGT : LLVMIntUGT)
                                      : (s ? LLVMIntSGE : LLVMIntUGE);
    return LLVMBuildICmp(em->b, p, a, b, "");
}

static LLVMValueRef min_max(cg_llvm_emitter *em, const te_expr *e, LLVMValueRef a,
                            LLVMValueRef b) {
    bool mn = e->kind == TE_MIN;
    te_dtype t = te_dtype_element(e->dtype);
    if (t.code == TE_BOOL) return mn ? LLVMBuildAnd(em->b, a, b, "") : LLVMBuildOr(em->b, a, b, "");
    /* a < b ? a : b (C's choice: b when a comparison involves a NaN) */
    LLVMValueRef c = compare(em, mn ? TE_LT : TE_GT, t, a, b);
    return LLVMBuildSelect(em->b, c, a, b, mn ? "min" : "max");
}

/* <lanes x i32> (or i32) and <lanes x float> (or float). */
static LLVMTypeRef lanes_type(LLVMTypeRef s, int lanes) {
    return lanes > 1 ? LLVMVectorType(s, (unsigned)lanes) : s;
}

/* bfloat16 bits (i16) to float32: the bits are float32's upper half. */
static LLVMValueRef bf16_to_f32(cg_llvm_emitter *em, LLVMValueRef v, int lanes) {
    LLVMBuilderRef B = em->b;
    LLVMTypeRef i32 = lanes_type(LLVMInt32TypeInContext(em->lc), lanes);
    LLVMValueRef w = LLVMBuildZExt(B, v, i32, "");
    w = LLVMBuildShl(B, w, const_splat(LLVMConstInt(LLVMInt32TypeInContext(em->lc), 16, 0), lanes), "");
    return LLVMBuildBitCast(B, w, lanes_type(LLVMFloatTypeInContext(em->lc), lanes), "bf2f");
}

/* float32 to bfloat16 bits, round to nearest even: add 0x7fff plus the
 * lowest kept bit, keep the upper half (a carry into the exponent is the
 * right result, up to infinity). A NaN keeps its sign and upper bits and
 * is made quiet, so the rounding carry never turns it into infinity. */
static LLVMValueRef f32_to_bf16(cg_llvm_emitter *em, LLVMValueRef v, int lanes) {
    LLVMBuilderRef B = em->b;
    LLVMTypeRef s32 = LLVMInt32TypeInContext(em->lc);
    LLVMTypeRef i32 = lanes_type(s32, lanes);
#define K(c) const_splat(LLVMConstInt(s32, (c), 0), lanes)
    LLVMValueRef u = LLVMBuildBitCast(B, v, i32, "");
    LLVMValueRef hi = LLVMBuildLShr(B, u, K(16), "");
    LLVMValueRef lsb = LLVMBuildAnd(B, hi, K(1), "");
    LLVMValueRef r = LLVMBuildAdd(B, u, LLVMBuildAdd(B, lsb, K(0x7fff), ""), "");
    r = LLVMBuildLShr(B, r, K(16), "");
    LLVMValueRef qnan = LLVMBuildOr(B, hi, K(0x40), "");
    LLVMValueRef isnan = LLVMBuildFCmp(B, LLVMRealUNO, v, v, "");
    r = LLVMBuildSelect(B, isnan, qnan, r, "");
#undef K
    return LLVMBuildTrunc(B, r, lanes_type(LLVMInt16TypeInContext(em->lc), lanes), "f2bf");
}

static LLVMValueRef convert(cg_llvm_emitter *em, const te_expr *e, const te_expr *x,
                            LLVMValueRef v, te_dtype from, te_dtype dst, LLVMTypeRef to);

static LLVMValueRef cast(cg_llvm_emitter *em, const te_expr *e) {
    const te_expr *x = e->u.un.a;
    LLVMValueRef v = cg_llvm__expr(em, x);
    LLVMTypeRef to = cg_llvm__type(em, e->dtype);
    if (!v || !to) return NULL;
    int lanes = lanes_of(e);
    v = widen(em, v, lanes);
    te_dtype from = te_dtype_element(x->dtype), dst = te_dtype_element(e->dtype);
    if (from.code == dst.code && from.bits == dst.bits) return v;
    /* bfloat16 meets other types through float32 (legalize_half leaves
     * only float32 here; other sources are converted the same way) */
    if (from.code == TE_BFLOAT) {
        v = bf16_to_f32(em, v, lanes);
        from = TE_FLOAT32;
        if (te_dtype_eq(dst, from)) return v;
    }
    if (dst.code == TE_BFLOAT) {
        if (!te_dtype_eq(from, TE_FLOAT32)) {
            v = convert(em, e, x, v, from, TE_FLOAT32, lanes_type(LLVMFloatTypeInContext(em->lc), lanes));
            if (!v) return NULL;
        }
        return f32_to_bf16(em, v, lanes);
    }
    return convert(em, e, x, v, from, dst, to);
}

static LLVMValueRef convert(cg_llvm_emitter *em, const te_expr *e, const te_expr *x,
                            LLVMValueRef v, te_dtype from, te_dtype dst, LLVMTypeRef to) {
    LLVMBuilderRef B = em->b;
    if (from.code == dst.code && from.bits == dst.bits) return v;
    if (dst.code == TE_BOOL) {
        LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(v));
        if (from.code == TE_FLOAT) return LLVMBuildFCmp(B, LLVMRealUNE, v, zero, "tobool");
        if (from.code == TE_INT || from.code == TE_UINT)
            return LLVMBuildICmp(B, LLVMIntNE, v, zero, "tobool");
    } else if (dst.code == TE_FLOAT) {
        if (from.code == TE_FLOAT)
            return dst.bits > from.bits ? LLVMBuildFPExt(B, v, to, "") : LLVMBuildFPTrunc(B, v, to, "");
        if (from.code == TE_INT) return LLVMBuildSIToFP(B, v, to, "");
        if (from.code == TE_UINT || from.code == TE_BOOL) return LLVMBuildUIToFP(B, v, to, "");
    } else if (dst.code == TE_INT || dst.code == TE_UINT) {
        if (from.code == TE_FLOAT)
            return dst.code == TE_INT ? LLVMBuildFPToSI(B, v, to, "") : LLVMBuildFPToUI(B, v, to, "");
        if (from.code == TE_BOOL) return LLVMBuildZExt(B, v, to, "");
        if (from.code == TE_INT || from.code == TE_UINT) {
            if (dst.bits == from.bits) return v; /* int <-> uint: same bits */
            if (dst.bits < from.bits) return LLVMBuildTrunc(B, v, to, "");
            return from.code == TE_INT ? LLVMBuildSExt(B, v, to, "") : LLVMBuildZExt(B, v, to, "");
        }
    }
    cg_llvm__fail(em, "cast from %s to %s in function '%s' is not supported",
                  te_dtype_str(x->dtype), te_dtype_str(e->dtype), em->func);
    return NULL;
}

/* A libm function applied lane by lane. */
static LLVMValueRef libm_call(cg_llvm_emitter *em, const char *name, int nargs,
                              LLVMValueRef *args) {
    LLVMTypeRef vt = LLVMTypeOf(args[0]);
    bool vec = LLVMGetTypeKind(vt) == LLVMVectorTypeKind;
    LLVMTypeRef st = vec ? LLVMGetElementType(vt) : vt;
    LLVMTypeRef ps[2] = {st, st};
    LLVMTypeRef fty = LLVMFunctionType(st, ps, (unsigned)nargs, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(em->mod, name);
    if (!fn) {
        fn = LLVMAddFunction(em->mod, name, fty);
        cg_llvm__add_attr(em, fn, LLVMAttributeFunctionIndex, "nounwind");
        cg_llvm__add_attr(em, fn, LLVMAttributeFunctionIndex, "willreturn");
        /* memory(none): the enum value 0 means no memory access at all */
        cg_llvm__add_attr(em, fn, LLVMAttributeFunctionIndex, "memory");
    }
    if (!vec) return LLVMBuildCall2(em->b, fty, fn, args, (unsigned)nargs, "");
    unsigned L = LLVMGetVectorSize(vt);
    LLVMValueRef out = LLVMGetPoison(vt);
    for (unsigned l = 0; l < L; ++l) {
        LLVMValueRef idx = LLVMConstInt(em->t_i32, l, 0), sargs[2];
        for (int k = 0; k < nargs; ++k) sargs[k] = LLVMBuildExtractElement(em->b, args[k], idx, "");
        LLVMValueRef r = LLVMBuildCall2(em->b, fty, fn, sargs, (unsigned)nargs, "");
        out = LLVMBuildInsertElement(em->b, out, r, idx, "");
    }
    return out;
}

/* A float32 constant splat over `lanes` (a scalar for lanes <= 1). */
static LLVMValueRef f32_const(cg_llvm_emitter *em, double v, int lanes) {
    return const_splat(LLVMConstReal(LLVMFloatTypeInContext(em->lc), v), lanes);
}

/* x clamped to [lo, hi] by compares, so that NaN passes through. */
static LLVMValueRef clamp_f32(cg_llvm_emitter *em, LLVMValueRef x, double lo, double hi,
                              int lanes) {
    LLVMBuilderRef B = em->b;
    LLVMValueRef l = f32_const(em, lo, lanes), h = f32_const(em, hi, lanes);
    LLVMValueRef c = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, x, l, ""), l, x, "");
    return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, c, h, ""), h, c, "");
}

/* c[0] + c[1] t + ... + c[n-1] t^(n-1) in float32 by Horner's rule. */
static LLVMValueRef horner_f32(cg_llvm_emitter *em, const double *c, int n, LLVMValueRef t,
                               int lanes) {
    LLVMValueRef p = f32_const(em, c[n - 1], lanes);
    for (int k = n - 2; k >= 0 && p; k--) p = fmuladd(em, p, t, f32_const(em, c[k], lanes));
    return p;
}

/* float32 erf, scalar or vector: x * P(x^2) / Q(x^2), x clamped to
 * [-4, 4] (where float32 erf is +-1 within half an ulp), P and Q of
 * degree 5 in x^2. The coefficients are Loom's own fit (iteratively
 * reweighted least squares on the relative error, 2.8e-8 in exact
 * arithmetic); evaluated in float32 with FMA, every float32 input is
 * within 6.4 ulp (3.8e-7) of erf, checked exhaustively. Why: erff from
 * libm is called lane by lane (about 20 cycles an element, the bulk of a
 * GELU layer); this vectorizes. TVM's fast_erf is the same kind of
 * rational approximation. NaN propagates (the clamp compares). */
static LLVMValueRef erf_f32(cg_llvm_emitter *em, LLVMValueRef x, int lanes) {
    static const double P[6] = {1.1283791065216064,  0.1916702538728714,
                                0.05285225808620453, 0.00380330765619874,
                                2.828315773513168e-4, 2.001509528781753e-6};
    static const double Q[6] = {1.0,
                                0.5031962394714355,
                                0.11457382887601852,
                                0.015045922249555588,
                                1.1663488112390041e-3,
                                3.748329618247226e-5};
    LLVMBuilderRef B = em->b;
    LLVMValueRef c = clamp_f32(em, x, -4.0, 4.0, lanes), t = LLVMBuildFMul(B, c, c, "");
    LLVMValueRef p = horner_f32(em, P, 6, t, lanes), q = horner_f32(em, Q, 6, t, lanes);
    if (!p || !q) return NULL;
    return LLVMBuildFDiv(B, LLVMBuildFMul(B, c, p, ""), q, "erf");
}

/* float32 exp, scalar or vector: x clamped to [-104, 89] (beyond, float32
 * exp is 0 or inf, which the clamped value still yields), n = rint(x
 * log2 e), r = x - n ln2 in two steps (Cody and Waite: ln2's high part
 * has 12 bits, so n times it is exact), e^r by a degree-6 polynomial
 * (Loom's own fit on [-ln2/2, ln2/2], 1.9e-9 relative in exact
 * arithmetic), scaled by 2^(n/2) and 2^(n - n/2) so that overflow to inf
 * and results below FLT_MIN (denormals) round once, as exp's; with
 * AVX-512F, 16 lanes are scaled by one VSCALEFPS (p * 2^n, rounded once)
 * instead of eight integer and float operations, which made a sigmoid
 * over a 1x96x112x112 tensor 1.4x faster (its loop is throughput-bound).
 * Within 1.04 ulp of exp on every 7th float32 in [-110, 95] (320 M
 * inputs), either way. Why: llvm.exp on a vector is expf called lane by
 * lane (softmax: 18 cycles an element). NaN propagates through r; its n
 * is taken as 0 so that the float-to-int conversion stays defined. */
static LLVMValueRef exp_f32(cg_llvm_emitter *em, LLVMValueRef x, int lanes) {
    static const double E[7] = {1.0,
                                1.0,
                                0.49999991059303284,
                                0.16666419804096222,
                                0.041668232530355453,
                                0.008374813944101334,
                                0.0013836491852998734};
    LLVMBuilderRef B = em->b;
    LLVMTypeRef it = lanes > 1 ? LLVMVectorType(em->t_i32, (unsigned)lanes) : em->t_i32;
#define EXP_I(v) const_splat(LLVMConstInt(em->t_i32, (unsigned long long)(v), 1), lanes)
    LLVMValueRef c = clamp_f32(em, x, -104.0, 89.0, lanes);
    LLVMValueRef t = LLVMBuildFMul(B, c, f32_const(em, 1.4426950408889634, lanes), "");
    LLVMValueRef nf = call1(em, "llvm.rint", t);
    if (!nf) return NULL;
    LLVMValueRef r = fmuladd(em, nf, f32_const(em, -0.693115234375, lanes), c);
    r = r ? fmuladd(em, nf, f32_const(em, -3.194618329871446e-05, lanes), r) : NULL;
    LLVMValueRef p = r ? horner_f32(em, E, 7, r, lanes) : NULL;
    if (!p) return NULL;
    if (em->avx512f && lanes == 16) {
        /* VSCALEFPS: p * 2^nf rounded once, denormals and overflow
         * included, NaN kept: one instruction for the eight below. */
        LLVMTypeRef fty;
        LLVMValueRef fn =
            cg_llvm__intrinsic(em, "llvm.x86.avx512.mask.scalef.ps.512", NULL, 0, &fty);
        LLVMValueRef args[5] = {p, nf, p, LLVMConstInt(LLVMInt16TypeInContext(em->lc), 0xffff, 0),
                                LLVMConstInt(em->t_i32, 4, 0)};
        return fn ? LLVMBuildCall2(B, fty, fn, args, 5, "exp") : NULL;
    }
    nf = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNO, nf, nf, ""), f32_const(em, 0.0, lanes),
                         nf, "");
    LLVMValueRef n = LLVMBuildFPToSI(B, nf, it, "");
    LLVMValueRef n1 = LLVMBuildSDiv(B, n, EXP_I(2), ""), n2 = LLVMBuildSub(B, n, n1, "");
    LLVMValueRef s1 = LLVMBuildShl(B, LLVMBuildAdd(B, n1, EXP_I(127), ""), EXP_I(23), "");
    LLVMValueRef s2 = LLVMBuildShl(B, LLVMBuildAdd(B, n2, EXP_I(127), ""), EXP_I(23), "");
    LLVMTypeRef vt = LLVMTypeOf(p);
#undef EXP_I
    p = LLVMBuildFMul(B, p, LLVMBuildBitCast(B, s1, vt, ""), "");
    return LLVMBuildFMul(B, p, LLVMBuildBitCast(B, s2, vt, ""), "exp");
}

/* float32 tanh, scalar or vector, branch-free: for |x| < 0.625, x + x^3
 * P(x^2) with P of degree 4 (Loom's own fit on [0, 0.625], iteratively
 * reweighted least squares on the relative error: 4.4e-9 in exact
 * arithmetic); beyond, 1 - 2 / (exp(2|x|) + 1) through exp_f32 (tanh >=
 * 0.55 there, so the subtraction loses under a bit). Both on |x|, the
 * sign copied from x (-0 stays -0). Within 1.35 ulp of tanh on every 7th
 * float32 in [-20, 20] (315 M inputs). NaN propagates through the exp
 * side (a comparison with NaN is false). Why: tanhf from libm is called
 * lane by lane (about 20 cycles an element), which made a GELU in its
 * tanh form (GPT-2) or an LSTM's gates cost as much as the matrix
 * products around them. */
static LLVMValueRef tanh_f32(cg_llvm_emitter *em, LLVMValueRef x, int lanes) {
    static const double P[5] = {-0.3333328198988201, 0.13331443557451256, -0.05373983260304238,
                                0.020639481967925737, -0.005705439135928115};
    LLVMBuilderRef B = em->b;
    LLVMValueRef ax = call1(em, "llvm.fabs", x);
    if (!ax) return NULL;
    LLVMValueRef t = LLVMBuildFMul(B, ax, ax, ""), p = horner_f32(em, P, 5, t, lanes);
    LLVMValueRef small = p ? fmuladd(em, LLVMBuildFMul(B, ax, t, ""), p, ax) : NULL;
    LLVMValueRef ex = exp_f32(em, LLVMBuildFAdd(B, ax, ax, ""), lanes);
    if (!small || !ex) return NULL;
    LLVMValueRef one = f32_const(em, 1.0, lanes);
    LLVMValueRef q = LLVMBuildFDiv(B, f32_const(em, 2.0, lanes), LLVMBuildFAdd(B, ex, one, ""), "");
    LLVMValueRef near0 = LLVMBuildFCmp(B, LLVMRealOLT, ax, f32_const(em, 0.625, lanes), "");
    LLVMValueRef mag = LLVMBuildSelect(B, near0, small, LLVMBuildFSub(B, one, q, ""), "");
    return call2(em, "llvm.copysign", mag, x);
}

static LLVMValueRef call(cg_llvm_emitter *em, const te_expr *e) {
    te_intrin op = e->u.call.op;
    if (op == TE_INTRIN_LIKELY) return cg_llvm__expr(em, e->u.call.args[0]); /* a hint only */
    te_dtype t = te_dtype_element(e->dtype);
    if (t.code != TE_FLOAT || (t.bits != 32 && t.bits != 64)) {
        cg_llvm__fail(em, "intrinsic %s on type %s in function '%s': only float32 and float64 "
                          "are supported",
                      te_intrin_name(op), te_dtype_str(e->dtype), em->func);
        return NULL;
    }
    LLVMValueRef a[3] = {NULL, NULL, NULL};
    int n = e->u.call.nargs;
    for (int i = 0; i < n && i < 3; ++i) a[i] = widen(em, cg_llvm__expr(em, e->u.call.args[i]), lanes_of(e));
    if (em->failed) return NULL;
    bool f = t.bits == 32;
    switch (op) {
    case TE_INTRIN_EXP: return f ? exp_f32(em, a[0], lanes_of(e)) : call1(em, "llvm.exp", a[0]);
    case TE_INTRIN_LOG: return call1(em, "llvm.log", a[0]);
    case TE_INTRIN_SQRT: return call1(em, "llvm.sqrt", a[0]);
    case TE_INTRIN_FABS: return call1(em, "llvm.fabs", a[0]);
    case TE_INTRIN_FLOOR: return call1(em, "llvm.floor", a[0]);
    case TE_INTRIN_CEIL: return call1(em, "llvm.ceil", a[0]);
    case TE_INTRIN_POW: return call2(em, "llvm.pow", a[0], a[1]);
    /* The default rounding mode (never changed by generated code) rounds
     * ties to even, as ONNX's Round does. */
    case TE_INTRIN_RINT: return call1(em, "llvm.rint", a[0]);
    case TE_INTRIN_FMOD: return LLVMBuildFRem(em->b, a[0], a[1], "fmod"); /* C's fmod */
    case TE_INTRIN_TANH: return f ? tanh_f32(em, a[0], lanes_of(e)) : libm_call(em, "tanh", 1, a);
    case TE_INTRIN_SIN: return libm_call(em, f ? "sinf" : "sin", 1, a);
    case TE_INTRIN_COS: return libm_call(em, f ? "cosf" : "cos", 1, a);
    case TE_INTRIN_TAN: return libm_call(em, f ? "tanf" : "tan", 1, a);
    case TE_INTRIN_ASIN: return libm_call(em, f ? "asinf" : "asin", 1, a);
    case TE_INTRIN_ACOS: return libm_call(em, f ? "acosf" : "acos", 1, a);
    case TE_INTRIN_ATAN: return libm_call(em, f ? "atanf" : "atan", 1, a);
    case TE_INTRIN_SINH: return libm_call(em, f ? "sinhf" : "sinh", 1, a);
    case TE_INTRIN_COSH: return libm_call(em, f ? "coshf" : "cosh", 1, a);
    case TE_INTRIN_ASINH: return libm_call(em, f ? "asinhf" : "asinh", 1, a);
    case TE_INTRIN_ACOSH: return libm_call(em, f ? "acoshf" : "acosh", 1, a);
    case TE_INTRIN_ATANH: return libm_call(em, f ? "atanhf" : "atanh", 1, a);
    case TE_INTRIN_ERF: return f ? erf_f32(em, a[0], lanes_of(e)) : libm_call(em, "erf", 1, a);
    case TE_INTRIN_SIGMOID: {
        LLVMTypeRef ty = LLVMTypeOf(a[0]);
        LLVMValueRef one = const_splat(LLVMConstReal(f ? LLVMFloatTypeInContext(em->lc)
                                                       : LLVMDoubleTypeInContext(em->lc),
                                                     1.0),
                                       lanes_of(e));
        (void)ty;
        LLVMValueRef neg = LLVMBuildFNeg(em->b, a[0], "");
        LLVMValueRef ex = f ? exp_f32(em, neg, lanes_of(e)) : call1(em, "llvm.exp", neg);
        if (!ex) return NULL;
        return LLVMBuildFDiv(em->b, one, LLVMBuildFAdd(em->b, one, ex, ""), "sigmoid");
    }
    default:
        cg_llvm__fail(em, "intrinsic %s in function '%s' is unknown to the llvm target",
                      te_intrin_name(op), em->func);
        return NULL;
    }
}

/* ---------------- loads ---------------- */

static bool is_dense_ramp(const te_expr *e) {
    return e->kind == TE_RAMP && e->u.ramp.base->dtype.lanes <= 1 &&
           e->u.ramp.stride->kind == TE_INT_IMM && e->u.ramp.stride->u.ival == 1;
}

/* The scalar base of a dense index (ramp(b, 1, L), possibly plus a
 * broadcast), emitted; NULL (nothing emitted) when the index is not dense. */
LLVMValueRef cg_llvm__dense_base(cg_llvm_emitter *em, const te_expr *idx) {
    if (is_dense_ramp(idx)) return cg_llvm__expr(em, idx->u.ramp.base);
    if (idx->kind == TE_ADD) {
        const te_expr *a = idx->u.bin.a, *b = idx->u.bin.b;
        if (b->kind == TE_RAMP) {
            const te_expr *t = a;
            a = b;
            b = t;
        }
        if (is_dense_ramp(a) && b->kind == TE_BROADCAST) {
            LLVMValueRef x = cg_llvm__expr(em, a->u.ramp.base);
            LLVMValueRef y = cg_llvm__expr(em, b->u.bcast.value);
            if (!x || !y) return NULL;
            return LLVMBuildNSWAdd(em->b, x, y, "");
        }
    }
    return NULL;
}

bool cg_llvm__lanes_inside_local(const tir_buffer *buf, const te_expr *idx, int L) {
    if (buf->is_param || buf->scope != TIR_SCOPE_LOCAL || !is_dense_ramp(idx)) return false;
    int64_t b, n = tir_buffer_size(buf);
    return n * te_dtype_bytes(buf->dtype) <= CG_LLVM_STACK_LIMIT &&
           te_is_const_int(idx->u.ramp.base, &b) && b >= 0 && b < n &&
           b + L <= n + CG_LLVM_LOCAL_SLACK;
}

static bool is_dense(const te_expr *idx) {
    if (is_dense_ramp(idx)) return true;
    if (idx->kind != TE_ADD) return false;
    const te_expr *a = idx->u.bin.a, *b = idx->u.bin.b;
    return (is_dense_ramp(a) && b->kind == TE_BROADCAST) ||
           (is_dense_ramp(b) && a->kind == TE_BROADCAST);
}
bool cg_llvm__is_dense(const te_expr *idx) { return is_dense(idx); }

/* A vector index as core [+ broadcast]: *offset the broadcast (NULL when
 * idx is no sum); false for a sum with no broadcast side. */
static bool offset_parts(const te_expr *idx, const te_expr **core, const te_expr **offset) {
    *core = idx, *offset = NULL;
    if (idx->kind != TE_ADD) return true;
    const te_expr *a = idx->u.bin.a, *b = idx->u.bin.b;
    if (b->kind == TE_BROADCAST) *core = a, *offset = b;
    else if (a->kind == TE_BROADCAST) *core = b, *offset = a;
    return *offset != NULL;
}

/* The i64 value of index expression e of type t, emitted. */
static LLVMValueRef index_of(cg_llvm_emitter *em, const te_expr *e, te_dtype t) {
    return cg_llvm__index(em, cg_llvm__expr(em, e), t);
}

/* A strided index: ramp(b, s, L) with a scalar base and stride, possibly
 * plus a broadcast; its lanes are b + l * s (+ the broadcast value). */
static bool strided_parts(const te_expr *idx, const te_expr **ramp, const te_expr **offset) {
    const te_expr *r, *o;
    if (!offset_parts(idx, &r, &o)) return false;
    if (r->kind != TE_RAMP || r->u.ramp.base->dtype.lanes > 1 || r->u.ramp.stride->dtype.lanes > 1)
        return false;
    *ramp = r, *offset = o;
    return true;
}

bool cg_llvm__is_strided(const te_expr *idx) {
    const te_expr *r, *o;
    return idx->dtype.lanes <= CG_LLVM_MAX_SCALARISED && strided_parts(idx, &r, &o);
}

bool cg_llvm__strided_lanes(cg_llvm_emitter *em, const te_expr *idx, LLVMValueRef *lanes) {
    const te_expr *r, *o;
    if (!strided_parts(idx, &r, &o)) return false;
    te_dtype t = te_dtype_element(idx->dtype);
    LLVMValueRef b = index_of(em, r->u.ramp.base, t), s = index_of(em, r->u.ramp.stride, t);
    if (!b || !s) return false;
    if (o) {
        LLVMValueRef v = index_of(em, o->u.bcast.value, t);
        if (!v) return false;
        b = LLVMBuildNSWAdd(em->b, b, v, "");
    }
    lanes[0] = b;
    for (int l = 1; l < r->u.ramp.lanes; l++) {
        LLVMValueRef step = LLVMConstInt(em->t_i64, (unsigned long long)l, 0);
        lanes[l] = LLVMBuildNSWAdd(em->b, b, LLVMBuildNSWMul(em->b, s, step, ""), "");
    }
    return true;
}

/* A dense ramp clamped into [lo, hi], possibly plus a broadcast:
 * [x(o) +] max(min(ramp(b, 1, L), x(hi)), x(lo)) or with min and max the
 * other way round, or clamped on one side only, max(ramp, x(lo)) or
 * min(ramp, x(hi)), where the simplifier proved the other bound holds (a
 * padding stage's reads, ops__pad, keep the reads in bounds whichever
 * side of the select is taken). */
typedef struct {
    const te_expr *ramp, *offset, *lo, *hi; /* broadcasts; NULL: no offset, no bound */
    bool max_outer; /* max(min(...)); else min(max(...)) */
} clamped_ramp;

static bool clamped_ramp_parts(const te_expr *idx, clamped_ramp *out) {
    const te_expr *c, *o;
    if (!offset_parts(idx, &c, &o) || (c->kind != TE_MAX && c->kind != TE_MIN)) return false;
    const te_expr *inner = c->u.bin.a, *outer_b = c->u.bin.b;
    if (inner->kind == TE_BROADCAST) inner = c->u.bin.b, outer_b = c->u.bin.a;
    if (outer_b->kind != TE_BROADCAST) return false;
    const te_expr *r = inner, *inner_b = NULL;
    if (inner->kind == (c->kind == TE_MAX ? TE_MIN : TE_MAX)) {
        r = inner->u.bin.a, inner_b = inner->u.bin.b;
        if (r->kind == TE_BROADCAST) r = inner->u.bin.b, inner_b = inner->u.bin.a;
        if (inner_b->kind != TE_BROADCAST) return false;
    }
    if (!is_dense_ramp(r)) return false;
    out->ramp = r, out->offset = o, out->max_outer = c->kind == TE_MAX;
    out->lo = c->kind == TE_MAX ? outer_b : inner_b;
    out->hi = c->kind == TE_MAX ? inner_b : outer_b;
    return true;
}

/* Index to i64 (scalar or vector). */
LLVMValueRef cg_llvm__index(cg_llvm_emitter *em, LLVMValueRef v, te_dtype t) {
    if (!v) return NULL;
    if (t.bits == 64) return v;
    LLVMTypeRef to = t.lanes > 1 ? LLVMVectorType(em->t_i64, t.lanes) : em->t_i64;
    return t.code == TE_INT ? LLVMBuildSExt(em->b, v, to, "") : LLVMBuildZExt(em->b, v, to, "");
}

/* From memory representation to value: bytes to bools. */
static LLVMValueRef from_mem(cg_llvm_emitter *em, te_dtype elem, LLVMValueRef v) {
    if (elem.code != TE_BOOL) return v;
    return LLVMBuildICmp(em->b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
}

/* A vector load of type vt at p, masked by mask (NULL: every lane). */
static LLVMValueRef contiguous_load(cg_llvm_emitter *em, const tir_buffer *buf, LLVMValueRef p,
                                    LLVMTypeRef vt, LLVMValueRef mask, unsigned align) {
    if (!mask) {
        LLVMValueRef v = LLVMBuildLoad2(em->b, vt, p, buf->name);
        LLVMSetAlignment(v, align);
        return v;
    }
    LLVMTypeRef over[2] = {vt, em->t_ptr}, fty;
    LLVMValueRef fn = cg_llvm__intrinsic(em, "llvm.masked.load", over, 2, &fty);
    if (!fn) return NULL;
    LLVMValueRef args[4] = {p, LLVMConstInt(em->t_i32, align, 0), mask, LLVMConstNull(vt)};
    return LLVMBuildCall2(em->b, fty, fn, args, 4, buf->name);
}

/* A masked gather at the lanes of vector index idx (mask NULL: all lanes). */
static LLVMValueRef gather(cg_llvm_emitter *em, const tir_buffer *buf, LLVMValueRef base,
                           LLVMTypeRef mt, LLVMTypeRef vt, const te_expr *idx, LLVMValueRef mask,
                           unsigned align) {
    int L = idx->dtype.lanes;
    LLVMValueRef i = index_of(em, idx, idx->dtype);
    if (!i) return NULL;
    LLVMValueRef ptrs = LLVMBuildInBoundsGEP2(em->b, mt, base, &i, 1, "");
    LLVMTypeRef pvt = LLVMVectorType(em->t_ptr, (unsigned)L), fty;
    LLVMTypeRef over[2] = {vt, pvt};
    LLVMValueRef fn = cg_llvm__intrinsic(em, "llvm.masked.gather", over, 2, &fty);
    if (!fn) return NULL;
    if (!mask) mask = const_splat(LLVMConstInt(em->t_i1, 1, 0), L);
    LLVMValueRef args[4] = {ptrs, LLVMConstInt(em->t_i32, align, 0), mask, LLVMConstNull(vt)};
    return LLVMBuildCall2(em->b, fty, fn, args, 4, buf->name);
}

/* Element i of buf as a scalar, loaded only when `when` (i1) holds, else
 * zero: a masked load of one lane, so that a border element no active
 * lane needs is never touched (AVX-512: one masked scalar move). */
static LLVMValueRef load_one_if(cg_llvm_emitter *em, const tir_buffer *buf, LLVMValueRef base,
                                LLVMTypeRef mt, LLVMValueRef i, LLVMValueRef when,
                                unsigned align) {
    LLVMBuilderRef B = em->b;
    LLVMValueRef zero = LLVMConstInt(em->t_i32, 0, 0);
    LLVMValueRef m1 =
        LLVMBuildInsertElement(B, LLVMGetUndef(LLVMVectorType(em->t_i1, 1)), when, zero, "");
    LLVMValueRef v = contiguous_load(em, buf, LLVMBuildInBoundsGEP2(B, mt, base, &i, 1, ""),
                                     LLVMVectorType(mt, 1), m1, align);
    return v ? LLVMBuildExtractElement(B, v, zero, "") : NULL;
}

/* The lanes of a clamped dense ramp that straddles a border (r its lanes,
 * b the first, o its offset or NULL): the lanes inside [lo, hi] are one masked
 * contiguous load; the lanes below lo (above hi) all read element lo
 * (hi), loaded once when an active lane needs it and broadcast. Lanes
 * mask turns off are zero, as a gather's. A gather of L lanes costs
 * about a cycle a lane on Zen 4 and on Intel's cores; this is a handful
 * of vector instructions. */
static LLVMValueRef clamped_edge(cg_llvm_emitter *em, const tir_buffer *buf, LLVMValueRef base,
                                 LLVMTypeRef mt, LLVMTypeRef vt, int L, LLVMValueRef r,
                                 LLVMValueRef b, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef o,
                                 bool max_outer, LLVMValueRef mask, unsigned align) {
    LLVMBuilderRef B = em->b;
    /* The clamped lane c as the index computes it, the outer operation
     * last (with lo > hi every lane is the outer bound); a lane that moved
     * reads lo or hi, the others lie inside. */
    LLVMValueRef vlo = lo ? cg_llvm__splat(em, lo, L) : NULL;
    LLVMValueRef vhi = hi ? cg_llvm__splat(em, hi, L) : NULL, c = r;
    for (int k = 0; k < 2; k++) {
        bool upper = (k == 0) == max_outer;
        if (upper && vhi)
            c = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, c, vhi, ""), vhi, c, "");
        if (!upper && vlo)
            c = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, c, vlo, ""), vlo, c, "");
    }
    LLVMValueRef moved = LLVMBuildICmp(B, LLVMIntNE, c, r, "");
    LLVMValueRef in = LLVMBuildNot(B, moved, "");
    LLVMValueRef below = NULL, above = NULL;
    if (lo && hi) {
        LLVMValueRef at_lo = LLVMBuildICmp(B, LLVMIntEQ, c, vlo, "");
        below = LLVMBuildAnd(B, moved, at_lo, "below");
        above = LLVMBuildAnd(B, moved, LLVMBuildNot(B, at_lo, ""), "above");
    } else if (lo) {
        below = moved;
    } else {
        above = moved;
    }
    if (mask) {
        in = LLVMBuildAnd(B, in, mask, "");
        if (below) below = LLVMBuildAnd(B, below, mask, "");
        if (above) above = LLVMBuildAnd(B, above, mask, "");
    }
    LLVMValueRef at = o ? LLVMBuildNSWAdd(B, b, o, "") : b;
    LLVMValueRef v =
        contiguous_load(em, buf, LLVMBuildInBoundsGEP2(B, mt, base, &at, 1, ""), vt, in, align);
    LLVMTypeRef bv = LLVMVectorType(em->t_i1, (unsigned)L), fty;
    LLVMValueRef any = cg_llvm__intrinsic(em, "llvm.vector.reduce.or", &bv, 1, &fty);
    if (!v || !any) return NULL;
    /* below and above are disjoint: each select fills its own lanes. */
    LLVMValueRef sides[2][2] = {{above, hi}, {below, lo}};
    for (int k = 0; k < 2; k++) {
        LLVMValueRef lanes = sides[k][0], bound = sides[k][1];
        if (!lanes) continue;
        LLVMValueRef need = LLVMBuildCall2(B, fty, any, &lanes, 1, "");
        LLVMValueRef i = o ? LLVMBuildNSWAdd(B, bound, o, "") : bound;
        LLVMValueRef x = load_one_if(em, buf, base, mt, i, need, align);
        if (!x) return NULL;
        v = LLVMBuildSelect(B, lanes, cg_llvm__splat(em, x, L), v, "");
    }
    return v;
}

/* A load at clamped dense ramp idx (its parts cr): where the whole
 * ramp lies in [lo, hi] the clamp changes no lane, and the lanes are one
 * contiguous vector (masked by mask, NULL: all); only the ramps that
 * straddle a border take clamped_edge, chosen by a runtime test. A padding
 * stage vectorized along its rows (ops__pad) reads that way; its gather a
 * vector of 8 was 11 % of r50_c2 (bench/RESULTS.md, session 19); the
 * border vectors' gathers, left until session 38, made the depthwise
 * mb_dw56's default schedule 2.6x slower on Zen 4 (0.27 against 0.11 ms). */
static LLVMValueRef clamped_load(cg_llvm_emitter *em, const tir_buffer *buf, LLVMValueRef base,
                                 LLVMTypeRef mt, LLVMTypeRef vt, const te_expr *idx,
                                 const clamped_ramp *cr, LLVMValueRef mask, unsigned align) {
    LLVMBuilderRef B = em->b;
    te_dtype it = te_dtype_element(idx->dtype);
    LLVMValueRef b = index_of(em, cr->ramp->u.ramp.base, it);
    LLVMValueRef lo = cr->lo ? index_of(em, cr->lo->u.bcast.value, it) : NULL;
    LLVMValueRef hi = cr->hi ? index_of(em, cr->hi->u.bcast.value, it) : NULL;
    LLVMValueRef o = cr->offset ? index_of(em, cr->offset->u.bcast.value, it) : NULL;
    if (!b || (cr->lo && !lo) || (cr->hi && !hi) || (cr->offset && !o)) return NULL;
    LLVMValueRef span = LLVMConstInt(em->t_i64, (unsigned long long)(idx->dtype.lanes - 1), 0);
    LLVMValueRef last = LLVMBuildNSWAdd(B, b, span, "");
    LLVMValueRef inside = LLVMConstInt(em->t_i1, 1, 0);
    if (lo) inside = LLVMBuildAnd(B, inside, LLVMBuildICmp(B, LLVMIntSGE, b, lo, ""), "");
    if (hi) inside = LLVMBuildAnd(B, inside, LLVMBuildICmp(B, LLVMIntSLE, last, hi, ""), "inside");
    LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(em->lc, em->fn, "clamp.in");
    LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(em->lc, em->fn, "clamp.edge");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(em->lc, em->fn, "clamp.end");
    LLVMBuildCondBr(B, inside, fast, slow);
    LLVMPositionBuilderAtEnd(B, fast);
    LLVMValueRef i = o ? LLVMBuildNSWAdd(B, b, o, "") : b;
    LLVMValueRef vin = contiguous_load(em, buf, LLVMBuildInBoundsGEP2(B, mt, base, &i, 1, ""),
                                       vt, mask, align);
    if (!vin) return NULL;
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, slow);
    LLVMValueRef r = index_of(em, cr->ramp, cr->ramp->dtype);
    LLVMValueRef vedge = r ? clamped_edge(em, buf, base, mt, vt, idx->dtype.lanes, r, b, lo, hi, o,
                                          cr->max_outer, mask, align)
                           : NULL;
    if (!vedge) return NULL;
    LLVMBasicBlockRef eslow = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, join);
    LLVMValueRef phi = LLVMBuildPhi(B, vt, "");
    LLVMValueRef vals[2] = {vin, vedge};
    LLVMBasicBlockRef bbs[2] = {fast, eslow};
    LLVMAddIncoming(phi, vals, bbs, 2);
    return phi;
}

static LLVMValueRef load(cg_llvm_emitter *em, const te_expr *e) {
    const tir_buffer *buf = e->u.load.buffer;
    const te_expr *idx = e->u.load.index, *pred = e->u.load.predicate;
    if (!buf || !idx) {
        cg_llvm__fail(em, "malformed load in function '%s'", em->func);
        return NULL;
    }
    LLVMValueRef base = cg_llvm__buffer_base(em, buf, "used");
    if (!base) return NULL;
    te_dtype elem = te_dtype_element(buf->dtype);
    LLVMTypeRef mt = cg_llvm__mem_type(em, elem);
    if (!mt) return NULL;
    unsigned align = (unsigned)te_dtype_bytes(elem);
    int L = lanes_of(e);
    if (idx->dtype.lanes <= 1 && L > 1) {
        cg_llvm__fail(em, "load of %d lanes from buffer '%s' in function '%s' has a scalar index",
                      L, buf->name, em->func);
        return NULL;
    }
    cg_llvm__check_access(em, buf, idx, pred, false);
    LLVMBuilderRef B = em->b;
    if (L == 1) {
        LLVMValueRef i = cg_llvm__index(em, cg_llvm__expr(em, idx), idx->dtype);
        if (!i) return NULL;
        if (!pred) {
            LLVMValueRef p = LLVMBuildInBoundsGEP2(B, mt, base, &i, 1, "");
            LLVMValueRef v = LLVMBuildLoad2(B, mt, p, buf->name);
            LLVMSetAlignment(v, align);
            return from_mem(em, elem, v);
        }
        /* A predicated scalar load must not touch memory when false. */
        LLVMValueRef c = cg_llvm__expr(em, pred);
        if (!c) return NULL;
        LLVMBasicBlockRef from = LLVMGetInsertBlock(B);
        LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(em->lc, em->fn, "pload");
        LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(em->lc, em->fn, "pload.end");
        LLVMBuildCondBr(B, c, yes, join);
        LLVMPositionBuilderAtEnd(B, yes);
        LLVMValueRef p = LLVMBuildInBoundsGEP2(B, mt, base, &i, 1, "");
        LLVMValueRef v = LLVMBuildLoad2(B, mt, p, buf->name);
        LLVMSetAlignment(v, align);
        v = from_mem(em, elem, v);
        LLVMBuildBr(B, join);
        LLVMPositionBuilderAtEnd(B, join);
        LLVMValueRef phi = LLVMBuildPhi(B, LLVMTypeOf(v), "");
        LLVMValueRef vals[2] = {v, LLVMConstNull(LLVMTypeOf(v))};
        LLVMBasicBlockRef bbs[2] = {yes, from};
        LLVMAddIncoming(phi, vals, bbs, 2);
        return phi;
    }
    LLVMTypeRef vt = LLVMVectorType(mt, (unsigned)L);
    LLVMValueRef mask = NULL;
    if (pred) {
        mask = widen(em, cg_llvm__expr(em, pred), L);
        if (!mask) return NULL;
    }
    if (is_dense(idx)) {
        LLVMValueRef i = cg_llvm__index(em, cg_llvm__dense_base(em, idx), te_dtype_element(idx->dtype));
        if (!i) return NULL;
        LLVMValueRef p = LLVMBuildInBoundsGEP2(B, mt, base, &i, 1, "");
        if (mask && cg_llvm__lanes_inside_local(buf, idx, L)) {
            LLVMValueRef v = contiguous_load(em, buf, p, vt, NULL, align);
            return from_mem(em, elem, LLVMBuildSelect(B, mask, v, LLVMConstNull(vt), ""));
        }
        LLVMValueRef v = contiguous_load(em, buf, p, vt, mask, align);
        return v ? from_mem(em, elem, v) : NULL;
    }
    /* Broadcast of one element: a scalar load and a splat. Under a mask
     * (a row's A[i, k] in a tile's column tail) the element is loaded
     * once when a lane needs it, not gathered from one address L times;
     * inactive lanes are zero, as a gather's. */
    if (idx->kind == TE_BROADCAST) {
        LLVMValueRef i = cg_llvm__index(em, cg_llvm__expr(em, idx->u.bcast.value),
                                        te_dtype_element(idx->dtype));
        if (!i) return NULL;
        if (!mask) {
            LLVMValueRef p = LLVMBuildInBoundsGEP2(B, mt, base, &i, 1, "");
            LLVMValueRef v = LLVMBuildLoad2(B, mt, p, buf->name);
            LLVMSetAlignment(v, align);
            return cg_llvm__splat(em, from_mem(em, elem, v), L);
        }
        LLVMTypeRef bv = LLVMVectorType(em->t_i1, (unsigned)L), fty;
        LLVMValueRef any = cg_llvm__intrinsic(em, "llvm.vector.reduce.or", &bv, 1, &fty);
        if (!any) return NULL;
        LLVMValueRef need = LLVMBuildCall2(B, fty, any, &mask, 1, "");
        LLVMValueRef x = load_one_if(em, buf, base, mt, i, need, align);
        if (!x) return NULL;
        LLVMValueRef v = LLVMBuildSelect(B, mask, cg_llvm__splat(em, x, L), LLVMConstNull(vt), "");
        return from_mem(em, elem, v);
    }
    /* A strided access without a mask: one scalar load a lane. LLVM
     * scalarises a gather where the target has no fast one (AVX2 on AMD,
     * SSE) with the lane addresses computed in vector registers and moved
     * out one at a time; scalar loads at b + l * s fold a constant stride
     * into each load's displacement (TVM's CodeGenLLVM scalarises them too). */
    if (!mask && idx->dtype.lanes == L && cg_llvm__is_strided(idx)) {
        LLVMValueRef lanes[CG_LLVM_MAX_SCALARISED];
        if (!cg_llvm__strided_lanes(em, idx, lanes)) return NULL;
        LLVMValueRef v = LLVMGetUndef(vt);
        for (int l = 0; l < L; l++) {
            LLVMValueRef p = LLVMBuildInBoundsGEP2(B, mt, base, &lanes[l], 1, "");
            LLVMValueRef x = LLVMBuildLoad2(B, mt, p, buf->name);
            LLVMSetAlignment(x, align);
            LLVMValueRef at = LLVMConstInt(em->t_i32, (unsigned long long)l, 0);
            v = LLVMBuildInsertElement(B, v, x, at, "");
        }
        return from_mem(em, elem, v);
    }
    clamped_ramp cr;
    if (idx->dtype.lanes == L && clamped_ramp_parts(idx, &cr)) {
        LLVMValueRef v = clamped_load(em, buf, base, mt, vt, idx, &cr, mask, align);
        return v ? from_mem(em, elem, v) : NULL;
    }
    LLVMValueRef g = gather(em, buf, base, mt, vt, idx, mask, align);
    return g ? from_mem(em, elem, g) : NULL;
}

static LLVMValueRef ramp(cg_llvm_emitter *em, const te_expr *e) {
    int L = e->u.ramp.lanes;
    LLVMValueRef base = cg_llvm__expr(em, e->u.ramp.base);
    LLVMValueRef stride = cg_llvm__expr(em, e->u.ramp.stride);
    if (!base || !stride) return NULL;
    if (LLVMGetTypeKind(LLVMTypeOf(base)) == LLVMVectorTypeKind) {
        cg_llvm__fail(em, "ramp with a vector base in function '%s' is not supported", em->func);
        return NULL;
    }
    LLVMTypeRef st = LLVMTypeOf(base);
    bool fl = LLVMGetTypeKind(st) != LLVMIntegerTypeKind;
    LLVMValueRef steps[256];
    if (L > 256) {
        cg_llvm__fail(em, "ramp of %d lanes in function '%s' (at most 256)", L, em->func);
        return NULL;
    }
    for (int l = 0; l < L; ++l)
        steps[l] = fl ? LLVMConstReal(st, l) : LLVMConstInt(st, (unsigned long long)l, 0);
    LLVMValueRef iota = LLVMConstVector(steps, (unsigned)L);
    LLVMValueRef vb = cg_llvm__splat(em, base, L), vs = cg_llvm__splat(em, stride, L);
    if (fl) return LLVMBuildFAdd(em->b, vb, LLVMBuildFMul(em->b, vs, iota, ""), "ramp");
    return LLVMBuildNSWAdd(em->b, vb, LLVMBuildNSWMul(em->b, vs, iota, ""), "ramp");
}

/* cond ? t : f evaluating only the chosen side (scalars with loads: the
 * other side's load may be out of bounds, e.g. padding). */
static LLVMValueRef branchy_select(cg_llvm_emitter *em, LLVMValueRef c, const te_expr *t,
                                   const te_expr *f) {
    LLVMBuilderRef B = em->b;
    LLVMBasicBlockRef bt = LLVMAppendBasicBlockInContext(em->lc, em->fn, "sel.t");
    LLVMBasicBlockRef bf = LLVMAppendBasicBlockInContext(em->lc, em->fn, "sel.f");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(em->lc, em->fn, "sel.end");
    LLVMBuildCondBr(B, c, bt, bf);
    LLVMPositionBuilderAtEnd(B, bt);
    LLVMValueRef vt = cg_llvm__expr(em, t);
    LLVMBasicBlockRef et = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, bf);
    LLVMValueRef vf = cg_llvm__expr(em, f);
    LLVMBasicBlockRef ef = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, join);
    if (!vt || !vf) return NULL;
    LLVMValueRef phi = LLVMBuildPhi(B, LLVMTypeOf(vt), "sel");
    LLVMValueRef vals[2] = {vt, vf};
    LLVMBasicBlockRef bbs[2] = {et, ef};
    LLVMAddIncoming(phi, vals, bbs, 2);
    return phi;
}

/* Arithmetic, comparison, select or call on 16-bit floats: what
 * legalize_half rewrites; bfloat16 (i16 here) would otherwise compute on
 * its bits as integers. */
static bool computes_half(const te_expr *e) {
    if (e->kind == TE_SELECT || e->kind == TE_CALL) return te_dtype_is_half(e->dtype);
    if (e->kind < TE_ADD || e->kind > TE_GE) return false;
    return te_dtype_is_half(e->dtype) || te_dtype_is_half(e->u.bin.a->dtype);
}

LLVMValueRef cg_llvm__expr(cg_llvm_emitter *em, const te_expr *e) {
    if (em->failed) return NULL;
    if (!e) {
        cg_llvm__fail(em, "NULL expression in function '%s'", em->func);
        return NULL;
    }
    if (computes_half(e)) {
        bool cmp = e->kind >= TE_EQ && e->kind <= TE_GE;
        cg_llvm__fail(em, "%s on %s in function '%s' reached code generation; run "
                          "tir_pass_legalize_half (tir_run_pipeline does) first",
                      te_expr_kind_name(e->kind), te_dtype_str(cmp ? e->u.bin.a->dtype : e->dtype),
                      em->func);
        return NULL;
    }
    LLVMBuilderRef B = em->b;
    int L = lanes_of(e);
    switch (e->kind) {
    case TE_INT_IMM: return int_imm(em, e);
    case TE_FLOAT_IMM: return float_imm(em, e);
    case TE_VAR: {
        LLVMValueRef v = cg_llvm__lookup(em, e);
        if (!v)
            cg_llvm__fail(em, "variable '%s' in function '%s' is used outside the loop or "
                              "allocation that defines it",
                          e->u.var.name ? e->u.var.name : "?", em->func);
        return v;
    }
    case TE_ADD:
    case TE_SUB:
    case TE_MUL:
    case TE_DIV:
    case TE_FLOORDIV:
    case TE_FLOORMOD:
    case TE_MIN:
    case TE_MAX: {
        if (e->kind == TE_ADD || e->kind == TE_SUB) {
            LLVMValueRef f = try_fmuladd(em, e);
            if (f || em->failed) return f;
        }
        LLVMValueRef a = widen(em, cg_llvm__expr(em, e->u.bin.a), L);
        LLVMValueRef b = widen(em, cg_llvm__expr(em, e->u.bin.b), L);
        if (!a || !b) return NULL;
        te_dtype t = te_dtype_element(e->dtype);
        bool fl = t.code == TE_FLOAT;
        /* Loom's int64 index arithmetic never overflows: nsw helps SCEV. */
        bool nsw = t.code == TE_INT && t.bits == 64;
        switch (e->kind) {
        case TE_ADD:
            return fl ? LLVMBuildFAdd(B, a, b, "") : nsw ? LLVMBuildNSWAdd(B, a, b, "") : LLVMBuildAdd(B, a, b, "");
        case TE_SUB:
            return fl ? LLVMBuildFSub(B, a, b, "") : nsw ? LLVMBuildNSWSub(B, a, b, "") : LLVMBuildSub(B, a, b, "");
        case TE_MUL:
            return fl ? LLVMBuildFMul(B, a, b, "") : nsw ? LLVMBuildNSWMul(B, a, b, "") : LLVMBuildMul(B, a, b, "");
        case TE_DIV:
            if (fl) return LLVMBuildFDiv(B, a, b, "");
            if (t.code == TE_BOOL) return a;
            return is_signed(t) ? LLVMBuildSDiv(B, a, b, "") : LLVMBuildUDiv(B, a, b, "");
        case TE_FLOORDIV:
        case TE_FLOORMOD: return floor_op(em, e, a, b);
        default: return min_max(em, e, a, b);
        }
    }
    case TE_EQ:
    case TE_NE:
    case TE_LT:
    case TE_LE:
    case TE_GT:
    case TE_GE: {
        int la = lanes_of(e->u.bin.a) > lanes_of(e->u.bin.b) ? lanes_of(e->u.bin.a) : lanes_of(e->u.bin.b);
        LLVMValueRef a = widen(em, cg_llvm__expr(em, e->u.bin.a), la);
        LLVMValueRef b = widen(em, cg_llvm__expr(em, e->u.bin.b), la);
        if (!a || !b) return NULL;
        return widen(em, compare(em, e->kind, e->u.bin.a->dtype, a, b), L);
    }
    case TE_AND:
    case TE_OR: {
        LLVMValueRef a = widen(em, cg_llvm__expr(em, e->u.bin.a), L);
        if (!a) return NULL;
        if (L == 1 && contains_load(e->u.bin.b)) {
            /* Short-circuit like C: the right side may load out of bounds
             * exactly when the left side decides. */
            LLVMValueRef t = LLVMConstInt(em->t_i1, 1, 0), f = LLVMConstInt(em->t_i1, 0, 0);
            LLVMBasicBlockRef from = LLVMGetInsertBlock(B);
            LLVMBasicBlockRef rhs = LLVMAppendBasicBlockInContext(em->lc, em->fn, "sc.rhs");
            LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(em->lc, em->fn, "sc.end");
            if (e->kind == TE_AND)
                LLVMBuildCondBr(B, a, rhs, join);
            else
                LLVMBuildCondBr(B, a, join, rhs);
            LLVMPositionBuilderAtEnd(B, rhs);
            LLVMValueRef b = cg_llvm__expr(em, e->u.bin.b);
            LLVMBasicBlockRef rend = LLVMGetInsertBlock(B);
            LLVMBuildBr(B, join);
            LLVMPositionBuilderAtEnd(B, join);
            if (!b) return NULL;
            LLVMValueRef phi = LLVMBuildPhi(B, em->t_i1, "");
            LLVMValueRef vals[2] = {e->kind == TE_AND ? f : t, b};
            LLVMBasicBlockRef bbs[2] = {from, rend};
            LLVMAddIncoming(phi, vals, bbs, 2);
            return phi;
        }
        LLVMValueRef b = widen(em, cg_llvm__expr(em, e->u.bin.b), L);
        if (!b) return NULL;
        return e->kind == TE_AND ? LLVMBuildAnd(B, a, b, "") : LLVMBuildOr(B, a, b, "");
    }
    case TE_NOT: {
        LLVMValueRef a = cg_llvm__expr(em, e->u.un.a);
        return a ? LLVMBuildNot(B, a, "") : NULL;
    }
    case TE_SELECT: {
        LLVMValueRef c = cg_llvm__expr(em, e->u.sel.cond);
        if (!c) return NULL;
        if (L == 1 && (contains_load(e->u.sel.t) || contains_load(e->u.sel.f)))
            return branchy_select(em, c, e->u.sel.t, e->u.sel.f);
        LLVMValueRef t = widen(em, cg_llvm__expr(em, e->u.sel.t), L);
        LLVMValueRef f = widen(em, cg_llvm__expr(em, e->u.sel.f), L);
        if (!t || !f) return NULL;
        return LLVMBuildSelect(B, c, t, f, "");
    }
    case TE_CAST: return cast(em, e);
    case TE_CALL: return call(em, e);
    case TE_LOAD: return load(em, e);
    case TE_RAMP: return ramp(em, e);
    case TE_BROADCAST: {
        LLVMValueRef v = cg_llvm__expr(em, e->u.bcast.value);
        if (v && LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind) {
            cg_llvm__fail(em, "broadcast of a vector in function '%s' is not supported", em->func);
            return NULL;
        }
        return cg_llvm__splat(em, v, e->u.bcast.lanes);
    }
    case TE_READ:
    case TE_REDUCE:
    case TE_BUFFER_LOAD:
        cg_llvm__fail(em, "%s in function '%s' reached code generation; lower the schedule and "
                          "run tir_pass_storage_flatten (tir_run_pipeline) first",
                      te_expr_kind_name(e->kind), em->func);
        return NULL;
    default:
        cg_llvm__fail(em, "expression kind %s in function '%s' is not supported by the llvm "
                          "target",
                      te_expr_kind_name(e->kind), em->func);
        return NULL;
    }
}
