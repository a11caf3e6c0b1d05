/*
 * codegen/cuda/cuda_emit.c — kernels as CUDA C++ (TVM codegen_cuda):
 *   extern "C" __global__ void __launch_bounds__(T) NAME(float *__restrict__ A, ...)
 * - a loop bound to blockIdx/threadIdx becomes `const int v = threadIdx.x;`
 * - serial loops stay loops; UNROLLED loops get `#pragma unroll`;
 * - shared allocations are `__shared__` arrays, local ones per-thread
 *   arrays (registers once indices are constant), 32- and 16-byte aligned;
 *   a kernel's shared buffers over 48 KiB together live in one dynamic
 *   `extern __shared__` array instead (cuda_smem.c);
 * - a BARRIER is __syncthreads();
 * - an ALLREDUCE is warp shuffles and shared memory (cuda_allreduce.c);
 * - a vector store of 2 or 4 lanes of a 32-bit type at an index whose
 *   alignment the analyser proves becomes one float2/float4 (int2/int4)
 *   store, and a value that is such a load one vector load; 2 lanes of
 *   float16/bfloat16 likewise one __half2/__nv_bfloat162; a copy of 8 or
 *   16 bytes with no such type (4 or 8 float16 lanes) one uint2/uint4
 *   move; other vector stores are written lane by lane;
 * - float16/bfloat16 are __half/__nv_bfloat16, converted with
 *   __half2float/__float2half_rn/__bfloat162float/__float2bfloat16_rn
 *   (legalize_half leaves nothing else to do with them); cuda_fp16.h and
 *   cuda_bf16.h are included only by a source that uses them (NVRTC
 *   finds them through rt_cuda_include_dir).
 * Loop variables are `int` when every buffer has fewer than 2^31
 * elements (32-bit index arithmetic is much cheaper on GPUs), else
 * `long long`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda/cuda_internal.h"

typedef struct {
    cg_c_emitter em;
    const char *ivar; /* C type of loop variables */
    int64_t block[3]; /* the kernel's threadIdx.x/y/z extents */
    cg_cuda_wmma wmma; /* its fragment buffers */
    cg_cuda_wgmma wgmma; /* its warpgroup MMAs */
    cg_cuda_smem smem; /* its shared buffers in dynamic shared memory, if any */
    int async;         /* inside cuda.async_copy: shared <- global copies may be cp.async */
} cuda_emitter;

static void put(cg_c_emitter *em, const char *s) { te_str_append(em->out, s); }
static void ind(cg_c_emitter *em) {
    for (int i = 0; i < em->indent; ++i) put(em, "    ");
}

static void emit(cuda_emitter *ce, const tir_stmt *s);
static void emit_cb(void *ce, const tir_stmt *s) { emit(ce, s); }

typedef struct {
    const tir_buffer *b;
    bool found;
} store_q;

static void store_visit(const tir_stmt *s, void *user) {
    store_q *q = user;
    if (s->kind == TIR_STORE && s->u.store.buffer == q->b) q->found = true;
    if (s->kind == TIR_TENSOR_CALL && s->u.tcall.args[0]->kind == TE_LOAD &&
        s->u.tcall.args[0]->u.load.buffer == q->b)
        q->found = true;
}

static bool stores_buffer(const tir_stmt *s, const tir_buffer *b) {
    store_q q = {b, false};
    tir_stmt_visit(s, store_visit, NULL, &q);
    return q.found;
}

static bool real_thread_tag(const char *tag) {
    return tag && (!strncmp(tag, "blockIdx.", 9) || !strncmp(tag, "threadIdx.", 10)) &&
           strlen(tag) == (tag[0] == 'b' ? 10u : 11u) && tag[strlen(tag) - 1] >= 'x' &&
           tag[strlen(tag) - 1] <= 'z';
}

static bool is_zero(const te_expr *e) { return e && e->kind == TE_INT_IMM && e->u.ival == 0; }

static void emit_for(cuda_emitter *ce, const tir_stmt *s) {
    cg_c_emitter *em = &ce->em;
    const te_expr *v = s->u.loop.var;
    const char *name = cg_c_name_of(em, v, v->u.var.name);
    if (s->u.loop.for_kind == TIR_FOR_THREAD) {
        const char *tag = s->u.loop.thread_tag;
        if (!real_thread_tag(tag)) {
            cg_c_fail(em, "loop '%s' in function '%s' has thread tag '%s' (vthread loops must be "
                          "removed by tir_pass_inject_vthread)",
                      v->u.var.name, em->func, tag ? tag : "(none)");
            return;
        }
        cg_c_line(em, "{");
        em->indent++;
        ind(em);
        te_str_printf(em->out, "const %s %s = ", ce->ivar, name);
        if (!is_zero(s->u.loop.min)) {
            cg_c_expr(em, s->u.loop.min);
            put(em, " + ");
        }
        te_str_printf(em->out, "(%s)%s; /* extent ", ce->ivar, tag);
        cg_c_expr(em, s->u.loop.extent);
        put(em, " */\n");
        bool bound = tir_bind_loop(em->an, v, s->u.loop.min, s->u.loop.extent);
        emit(ce, s->u.loop.body);
        if (bound) te_analyzer_unbind(em->an, v);
        em->indent--;
        cg_c_line(em, "}");
        return;
    }
    if (s->u.loop.for_kind == TIR_FOR_PARALLEL) {
        cg_c_fail(em, "loop '%s' in function '%s' is parallel; inside a GPU kernel loops are bound "
                      "or serial",
                  v->u.var.name, em->func);
        return;
    }
    if (s->u.loop.for_kind == TIR_FOR_UNROLLED) cg_c_line(em, "#pragma unroll");
    ind(em);
    te_str_printf(em->out, "for (%s %s = ", ce->ivar, name);
    cg_c_expr(em, s->u.loop.min);
    te_str_printf(em->out, "; %s < ", name);
    if (!is_zero(s->u.loop.min)) {
        cg_c_expr(em, s->u.loop.min);
        put(em, " + ");
    }
    cg_c_expr(em, s->u.loop.extent);
    te_str_printf(em->out, "; ++%s) {\n", name);
    bool bound = tir_bind_loop(em->an, v, s->u.loop.min, s->u.loop.extent);
    em->indent++;
    emit(ce, s->u.loop.body);
    em->indent--;
    if (bound) te_analyzer_unbind(em->an, v);
    cg_c_line(em, "}");
}

/* The CUDA vector type of `lanes` elements of t, or NULL. */
static const char *vec_type(te_dtype t, int lanes) {
    if (lanes != 2 && lanes != 4) return NULL;
    if (t.code == TE_FLOAT && t.bits == 32) return lanes == 2 ? "float2" : "float4";
    if (t.code == TE_INT && t.bits == 32) return lanes == 2 ? "int2" : "int4";
    if (te_dtype_is_half(t) && lanes == 2) return t.code == TE_BFLOAT ? "__nv_bfloat162" : "__half2";
    return NULL;
}

/* The constructor of vector type vt from its lanes ("make_float4"). */
static const char *vec_make(const char *vt) {
    if (!strcmp(vt, "__half2")) return "__halves2half2";
    if (!strcmp(vt, "__nv_bfloat162")) return "__halves2bfloat162";
    return NULL;
}

/* Whether idx is RAMP(base, 1, lanes) with base provably a multiple of lanes. */
static bool aligned_ramp(cg_c_emitter *em, const te_expr *idx, int lanes) {
    int64_t st;
    if (!idx || idx->kind != TE_RAMP || idx->u.ramp.lanes != lanes ||
        !te_is_const_int(idx->u.ramp.stride, &st) || st != 1)
        return false;
    int64_t coeff, base;
    te_analyzer_modular(em->an, idx->u.ramp.base, &coeff, &base);
    if (coeff == 0) return base % lanes == 0;
    return coeff % lanes == 0 && base % lanes == 0;
}

static void print_vec_ptr(cg_c_emitter *em, const char *vt, const tir_buffer *b, const te_expr *idx,
                          bool is_const) {
    te_str_printf(em->out, "*(%s%s *)(%s + ", is_const ? "const " : "", vt, cg_c_buffer_name(em, b));
    /* an aligned vector stays inside one 16-byte chunk: the swizzle of
     * its first element is the vector's */
    cg_c_index(em, b, idx->u.ramp.base);
    put(em, ")");
}

static bool is_zero_value(const te_expr *e) {
    if (e->kind == TE_BROADCAST) e = e->u.bcast.value;
    if (e->kind == TE_CAST) e = e->u.un.a;
    return (e->kind == TE_FLOAT_IMM && e->u.fval == 0) || (e->kind == TE_INT_IMM && e->u.ival == 0);
}

typedef struct {
    bool varies;
} lanes_q;

static void lanes_visit(const te_expr *e, void *user) {
    lanes_q *q = user;
    if (q->varies || e->dtype.lanes == 1 || e->kind == TE_BROADCAST) return;
    if (e->kind == TE_RAMP || e->kind == TE_LOAD || e->kind == TE_CALL) {
        q->varies = true;
        return;
    }
    te_expr_visit_children(e, lanes_visit, user);
}

/* Whether every lane of e has the same value: its vectors are broadcasts
 * combined lane by lane. */
static bool lane_invariant(const te_expr *e) {
    lanes_q q = {false};
    lanes_visit(e, &q);
    return !q.varies;
}

/* A copy's value `select(c, x, 0)` with c the same for every lane (a
 * scalar, or broadcasts combined lane by lane) — what an implicit GEMM's gather of one
 * padded tap vectorizes to, maybe through legalize_half's float32 casts:
 * t(select(c, float32(x), 0)) with x of type t, x unmasked or masked by c.
 * Sets *cond and *load to c and x; false for anything else. */
static bool zero_fill_of(const te_expr *val, const te_expr **cond, const te_expr **load) {
    const te_expr *v = val;
    te_dtype t = val->dtype;
    if (v->kind == TE_CAST) v = v->u.un.a;
    if (v->kind != TE_SELECT || !is_zero_value(v->u.sel.f)) return false;
    const te_expr *c = v->u.sel.cond, *x = v->u.sel.t;
    if (x->kind == TE_CAST) x = x->u.un.a;
    if (x->kind != TE_LOAD || !te_dtype_eq(x->dtype, t) || (val->kind != TE_CAST && x != v->u.sel.t))
        return false;
    if (c->kind == TE_BROADCAST) c = c->u.bcast.value;
    if (!lane_invariant(c)) return false;
    /* The vectorizer masks the chosen arm's load by the condition itself
     * (tir/pass_vectorize.c): the zero fill already guards it. */
    const te_expr *p = x->u.load.predicate;
    if (p && p->kind == TE_BROADCAST) p = p->u.bcast.value;
    if (p && !te_expr_equal(p, c)) return false;
    *cond = c;
    *load = x;
    return true;
}

/* Inside cuda.async_copy: a copy of 4, 8 or 16 bytes from global to
 * shared memory, both sides aligned to its size, as one asynchronous copy
 * (cp.async on sm_80 and later; the prelude's helper copies synchronously
 * before). A copy of select(c, x, 0), c the same for every lane, is one
 * zero-filling cp.async: c false reads nothing and writes zeros (its
 * source then names the buffer's start, which exists). False: the caller
 * writes a plain store. */
static bool emit_async_copy(cuda_emitter *ce, const tir_stmt *s, int lanes) {
    cg_c_emitter *em = &ce->em;
    const tir_buffer *b = s->u.store.buffer;
    const te_expr *idx = s->u.store.index, *val = s->u.store.value, *cond = NULL, *x;
    if (ce->async && zero_fill_of(val, &cond, &x)) val = x;
    if (!ce->async || s->u.store.predicate || b->scope != TIR_SCOPE_SHARED ||
        val->kind != TE_LOAD || (val->u.load.predicate && !cond) ||
        val->u.load.buffer->scope != TIR_SCOPE_GLOBAL ||
        !te_dtype_eq(val->u.load.buffer->dtype, b->dtype))
        return false;
    int bytes = lanes * te_dtype_bytes(b->dtype);
    if ((bytes != 4 && bytes != 8 && bytes != 16) || (cond && bytes != 16)) return false;
    const te_expr *si = idx, *gi = val->u.load.index;
    if (lanes > 1) {
        if (!aligned_ramp(em, idx, lanes) || !aligned_ramp(em, gi, lanes)) return false;
        si = idx->u.ramp.base;
        gi = gi->u.ramp.base;
    }
    ind(em);
    te_str_printf(em->out, "loom_cp_async%d%s(&%s[", bytes, cond ? "_zfill" : "",
                  cg_c_buffer_name(em, b));
    cg_c_index(em, b, si);
    const char *src = cg_c_buffer_name(em, val->u.load.buffer);
    if (cond) {
        /* every lane's condition is lane 0's */
        put(em, "], ");
        em->lane = "0";
        cg_c_expr(em, cond);
        te_str_printf(em->out, ", %s + (", src);
        cg_c_expr(em, cond);
        em->lane = NULL;
        put(em, " ? (");
        cg_c_expr(em, gi);
        put(em, ") : 0));\n");
        return true;
    }
    te_str_printf(em->out, "], &%s[", src);
    cg_c_expr(em, gi);
    put(em, "]);\n");
    return true;
}

static void emit_store(cuda_emitter *ce, const tir_stmt *s) {
    cg_c_emitter *em = &ce->em;
    const tir_buffer *b = s->u.store.buffer;
    const te_expr *idx = s->u.store.index, *val = s->u.store.value, *pred = s->u.store.predicate;
    const char *name = cg_c_buffer_name(em, b);
    int lanes = idx->dtype.lanes > val->dtype.lanes ? idx->dtype.lanes : val->dtype.lanes;
    if (emit_async_copy(ce, s, lanes)) return;
    if (lanes == 1) {
        ind(em);
        if (pred) {
            put(em, "if (");
            cg_c_expr(em, pred);
            put(em, ") ");
        }
        te_str_printf(em->out, "%s[", name);
        cg_c_index(em, b, idx);
        put(em, "] = ");
        cg_c_expr(em, val);
        put(em, ";\n");
        return;
    }
    if (idx->dtype.lanes != lanes) {
        cg_c_fail(em, "store of %d lanes to buffer '%s' in function '%s' has a scalar index",
                  lanes, b->name, em->func);
        return;
    }
    const char *vt = vec_type(b->dtype, lanes);
    /* a copy with no vector type of its own (4 or 8 float16 lanes): one
     * move of 8 or 16 bytes of raw bits */
    int64_t bytes = (int64_t)te_dtype_bytes(b->dtype) * lanes;
    const char *raw = bytes == 8 ? "uint2" : bytes == 16 ? "uint4" : NULL;
    if (!vt && raw && !pred && val->kind == TE_LOAD && !val->u.load.predicate &&
        te_dtype_eq(val->u.load.buffer->dtype, b->dtype) && aligned_ramp(em, idx, lanes) &&
        aligned_ramp(em, val->u.load.index, lanes)) {
        ind(em);
        print_vec_ptr(em, raw, b, idx, false);
        put(em, " = ");
        print_vec_ptr(em, raw, val->u.load.buffer, val->u.load.index, true);
        put(em, ";\n");
        return;
    }
    if (vt && !pred && aligned_ramp(em, idx, lanes)) {
        ind(em);
        print_vec_ptr(em, vt, b, idx, false);
        put(em, " = ");
        if (val->kind == TE_LOAD && !val->u.load.predicate &&
            aligned_ramp(em, val->u.load.index, lanes) &&
            te_dtype_eq(val->u.load.buffer->dtype, b->dtype)) {
            print_vec_ptr(em, vt, val->u.load.buffer, val->u.load.index, true);
        } else {
            const char *mk = vec_make(vt);
            if (mk) te_str_printf(em->out, "%s(", mk);
            else te_str_printf(em->out, "make_%s(", vt);
            static const char *lane_names[4] = {"0", "1", "2", "3"};
            for (int l = 0; l < lanes; ++l) {
                if (l) put(em, ", ");
                em->lane = lane_names[l];
                cg_c_expr(em, val);
            }
            em->lane = NULL;
            put(em, ")");
        }
        put(em, ";\n");
        return;
    }
    /* Lane by lane, through a temporary (all lanes read before any write). */
    const char *ty = cg_c_type_em(em, b->dtype);
    int t = em->ntemps++;
    cg_c_line(em, "{");
    em->indent++;
    cg_c_line(em, "%s loom_t%d[%d];", ty, t, lanes);
    cg_c_line(em, "#pragma unroll");
    ind(em);
    te_str_printf(em->out, "for (int loom_l = 0; loom_l < %d; ++loom_l) loom_t%d[loom_l] = ", lanes, t);
    em->lane = "loom_l";
    cg_c_expr(em, val);
    put(em, ";\n");
    cg_c_line(em, "#pragma unroll");
    ind(em);
    te_str_printf(em->out, "for (int loom_l = 0; loom_l < %d; ++loom_l) ", lanes);
    if (pred) {
        put(em, "if (");
        cg_c_expr(em, pred);
        put(em, ") ");
    }
    te_str_printf(em->out, "%s[", name);
    cg_c_index(em, b, idx);
    te_str_printf(em->out, "] = loom_t%d[loom_l];\n", t);
    em->lane = NULL;
    em->indent--;
    cg_c_line(em, "}");
}

static void emit_allocate(cuda_emitter *ce, const tir_stmt *s) {
    cg_c_emitter *em = &ce->em;
    const tir_buffer *b = s->u.alloc.buffer;
    const char *ty = cg_c_type_em(em, b->dtype);
    if (!ty || b->dtype.code == TE_HANDLE) {
        cg_c_fail(em, "allocation '%s' in function '%s' has type %s; no CUDA equivalent", b->name,
                  em->func, te_dtype_str(b->dtype));
        return;
    }
    if (b->scope == TIR_SCOPE_GLOBAL) {
        cg_c_fail(em, "global allocation '%s' inside kernel '%s'", b->name, em->func);
        return;
    }
    if (tir_scope_is_fragment(b->scope)) {
        cg_c_line(em, "{");
        em->indent++;
        if (b->scope == TIR_SCOPE_WGMMA_ACC) cg_cuda__wgmma_declare(em, b);
        else cg_cuda__wmma_declare(em, &ce->wmma, b);
        emit(ce, s->u.alloc.body);
        em->indent--;
        cg_c_line(em, "}");
        return;
    }
    const char *name = cg_c_buffer_name(em, b);
    cg_c_line(em, "{");
    em->indent++;
    int64_t off = b->scope == TIR_SCOPE_SHARED ? cg_cuda__smem_offset(&ce->smem, b) : -1;
    if (off >= 0) {
        cg_c_line(em, "%s *%s = (%s *)(loom_smem + %lld);", ty, name, ty, (long long)off);
        emit(ce, s->u.alloc.body);
        em->indent--;
        cg_c_line(em, "}");
        return;
    }
    /* 32 bytes: what WMMA's loads and stores need of a shared tile; a
     * swizzled one starts on its 1024-byte swizzle atom */
    cg_c_line(em, "%s__align__(%d) %s %s[%lld];", b->scope == TIR_SCOPE_SHARED ? "__shared__ " : "",
              b->scope == TIR_SCOPE_SHARED ? (b->swizzle ? 1024 : 32) : 16,
              ty, name, (long long)tir_buffer_size(b));
    emit(ce, s->u.alloc.body);
    em->indent--;
    cg_c_line(em, "}");
}

/* The async-copy marks of tir_pass_double_buffer; false for other ATTRs. */
static bool emit_async_attr(cuda_emitter *ce, const tir_stmt *s) {
    cg_c_emitter *em = &ce->em;
    const char *key = s->u.attr.key;
    if (!strcmp(key, TIR_ATTR_ASYNC_COPY)) {
        ce->async++;
        emit(ce, s->u.attr.body);
        ce->async--;
        return true;
    }
    if (!strcmp(key, TIR_ATTR_ASYNC_COMMIT)) {
        cg_c_line(em, "loom_cp_async_commit();");
        emit(ce, s->u.attr.body);
        return true;
    }
    int64_t n;
    if (!strcmp(key, TIR_ATTR_WGMMA_BATCH)) {
        ce->wgmma.batch++;
        emit(ce, s->u.attr.body);
        ce->wgmma.batch--;
        cg_c_line(em, "loom_wgmma_commit();");
        return true;
    }
    if (!strcmp(key, TIR_ATTR_WGMMA_INFLIGHT) && s->u.attr.value &&
        te_is_const_int(s->u.attr.value, &n)) {
        int64_t was = ce->wgmma.inflight;
        ce->wgmma.inflight = n;
        emit(ce, s->u.attr.body);
        ce->wgmma.inflight = was;
        return true;
    }
    if (!strcmp(key, TIR_ATTR_ASYNC_WAIT) && s->u.attr.value &&
        te_is_const_int(s->u.attr.value, &n)) {
        cg_c_line(em, "loom_cp_async_wait<%lld>();", (long long)n);
        emit(ce, s->u.attr.body);
        return true;
    }
    return false;
}

static void emit(cuda_emitter *ce, const tir_stmt *s) {
    cg_c_emitter *em = &ce->em;
    if (em->failed || !s) return;
    if (s->kind == TIR_ATTR && emit_async_attr(ce, s)) return;
    if (cg_c_control_stmt(em, s, emit_cb, ce)) return;
    switch (s->kind) {
    case TIR_FOR: emit_for(ce, s); return;
    case TIR_STORE: emit_store(ce, s); return;
    case TIR_ALLOCATE: emit_allocate(ce, s); return;
    case TIR_BARRIER:
        cg_cuda__wgmma_sync(em, &ce->wgmma);
        cg_c_line(em, "__syncthreads();");
        return;
    case TIR_ALLREDUCE: cg_cuda__emit_allreduce(em, s, ce->block, emit_cb, ce); return;
    case TIR_TENSOR_CALL:
        if (s->u.tcall.intrin == TIR_X86_DPBF16)
            cg_c_fail(em, "tensor intrinsic x86.dpbf16 in kernel '%s' is an x86 CPU instruction; "
                          "the cuda target cannot run it (tensorize with wmma.mma or wgmma.mma)",
                      em->func);
        else if (s->u.tcall.intrin >= TIR_WGMMA_FILL) cg_cuda__wgmma_call(em, &ce->wgmma, s);
        else cg_cuda__wmma_call(em, &ce->wmma, s);
        return;
    default:
        cg_c_fail(em, "statement kind %d in kernel '%s' is not supported by the cuda target "
                      "(run tir_run_pipeline first)",
                  (int)s->kind, em->func);
        return;
    }
}

static const char prelude[] =
    "// Generated by Loom's CUDA backend; compiled with NVRTC.\n"
    "typedef signed char int8_t;\n"
    "typedef short int16_t;\n"
    "typedef int int32_t;\n"
    "typedef long long int64_t;\n"
    "typedef unsigned char uint8_t;\n"
    "typedef unsigned short uint16_t;\n"
    "typedef unsigned int uint32_t;\n"
    "typedef unsigned long long uint64_t;\n"
    "#define NAN __int_as_float(0x7fc00000)\n"
    "#define INFINITY __int_as_float(0x7f800000)\n"
    "#define LOOM_HELPER static __device__ __forceinline__\n"
    "// Asynchronous global -> shared copies (cp.async, sm_80 on; plain copies before).\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "#define LOOM_CP_ASYNC(n, cache) LOOM_HELPER void loom_cp_async##n(void *d, const void *s) { \\\n"
    "    asm volatile(\"cp.async.\" cache \".shared.global [%0], [%1], \" #n \";\\n\" \\\n"
    "                 :: \"r\"((unsigned)__cvta_generic_to_shared(d)), \"l\"(s)); }\n"
    "LOOM_HELPER void loom_cp_async16_zfill(void *d, bool p, const void *s) {\n"
    "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\"\n"
    "                 :: \"r\"((unsigned)__cvta_generic_to_shared(d)), \"l\"(s), \"r\"(p ? 16 : 0)); }\n"
    "LOOM_HELPER void loom_cp_async_commit() { asm volatile(\"cp.async.commit_group;\\n\" ::); }\n"
    "template <int N> LOOM_HELPER void loom_cp_async_wait() {\n"
    "    asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(N)); }\n"
    "#else\n"
    "#define LOOM_CP_ASYNC(n, cache) LOOM_HELPER void loom_cp_async##n(void *d, const void *s) { \\\n"
    "    struct c { unsigned char b[n]; }; *(c *)d = *(const c *)s; }\n"
    "LOOM_HELPER void loom_cp_async16_zfill(void *d, bool p, const void *s) {\n"
    "    struct c { unsigned char b[16]; }; c z = {}; *(c *)d = p ? *(const c *)s : z; }\n"
    "LOOM_HELPER void loom_cp_async_commit() {}\n"
    "template <int N> LOOM_HELPER void loom_cp_async_wait() {}\n"
    "#endif\n"
    "LOOM_CP_ASYNC(4, \"ca\")\n"
    "LOOM_CP_ASYNC(8, \"ca\")\n"
    "LOOM_CP_ASYNC(16, \"cg\")\n"
    "// The 128-byte swizzle of shared tiles (sch_swizzle): the 16-byte chunk\n"
    "// of flat index i (elements of 2^S bytes) XOR its 128-byte row mod 8.\n"
    "template <int S, class I> LOOM_HELPER I loom_swz(I i) { return i ^ (((i >> (7 - S)) & 7) << (4 - S)); }\n"
    "\n";

static int emit_kernel(te_ctx *ctx, const tir_kernel *k, te_str *out, unsigned *uses_half,
                       cg_cuda_wgmma *wgmma) {
    const tir_func *f = k->func;
    cuda_emitter ce;
    memset(&ce, 0, sizeof ce);
    cg_c_emitter *em = &ce.em;
    te_str body;
    te_str_init(&body);
    em->ctx = ctx;
    em->prefix = "cuda";
    em->half_types = true;
    em->func = f->name;
    em->out = &body;
    em->decls = &body;
    em->an = te_analyzer_new(ctx);
    if (!em->an) cg_c_fail(em, "no memory for the analyser");
    bool small = true;
    for (int i = 0; i < f->nparams; ++i)
        if (tir_buffer_size(f->params[i]) >= ((int64_t)1 << 31) / 4) small = false;
    ce.ivar = small ? "int" : "long long";
    memcpy(ce.block, k->block, sizeof ce.block);
    cg_cuda__wmma_scan(em, f->body, k->block, &ce.wmma);
    cg_cuda__wgmma_scan(em, f->body, k->block, &ce.wgmma, wgmma);
    if (cg_cuda__smem_layout(ctx, f->body, f->name, &ce.smem)) em->failed = true;
    int64_t threads = k->block[0] * k->block[1] * k->block[2];
    te_str_printf(&body, "extern \"C\" __global__ void __launch_bounds__(%lld) %s(",
                  (long long)threads, cg_c_name_of(em, f, f->name));
    for (int i = 0; i < f->nparams && !em->failed; ++i) {
        const tir_buffer *b = f->params[i];
        const char *ty = cg_c_type_em(em, b->dtype);
        if (!ty || b->dtype.code == TE_HANDLE) {
            cg_c_fail(em, "parameter '%s' of kernel '%s' has type %s; no CUDA equivalent", b->name,
                      f->name, te_dtype_str(b->dtype));
            break;
        }
        bool written = stores_buffer(f->body, b);
        te_str_printf(&body, "%s%s%s *__restrict__ %s", i ? ", " : "", written ? "" : "const ", ty,
                      cg_c_buffer_name(em, b));
    }
    te_str_printf(&body, ") {\n  // grid (%lld, %lld, %lld), block (%lld, %lld, %lld)\n",
                  (long long)k->grid[0], (long long)k->grid[1], (long long)k->grid[2],
                  (long long)k->block[0], (long long)k->block[1], (long long)k->block[2]);
    em->indent = 1;
    if (ce.smem.n && ce.smem.align > 128) {
        /* the dynamic array is only sure to be 16-byte aligned: start the
         * buffers on the next 1024-byte boundary (the launch has room) */
        cg_c_line(em, "extern __shared__ __align__(1024) unsigned char loom_smem_raw[]; // %lld bytes",
                  (long long)ce.smem.bytes);
        cg_c_line(em, "unsigned char *loom_smem = loom_smem_raw + ((1024u - ((unsigned)"
                      "__cvta_generic_to_shared(loom_smem_raw) & 1023u)) & 1023u);");
    } else if (ce.smem.n) {
        cg_c_line(em, "extern __shared__ __align__(128) unsigned char loom_smem[]; // %lld bytes",
                  (long long)ce.smem.bytes);
    }
    cg_cuda__wmma_prologue(em, &ce.wmma);
    emit(&ce, f->body);
    te_str_append(&body, "}\n\n");
    if (!em->failed) te_str_append(out, body.data ? body.data : "");
    *uses_half |= em->uses_half | (ce.wmma.used ? 4u : 0u);
    te_str_free(&body);
    if (em->an) te_analyzer_free(em->an);
    free(em->names);
    free(em->heap);
    return em->failed ? -1 : 0;
}

const char *cg_cuda__source(te_ctx *ctx, int nprogs, const tir_device_program *const *progs) {
    te_str kernels, out;
    te_str_init(&kernels);
    te_str_init(&out);
    unsigned uses_half = 0;
    cg_cuda_wgmma wgmma;
    memset(&wgmma, 0, sizeof wgmma);
    for (int p = 0; p < nprogs; ++p)
        for (int k = 0; k < progs[p]->nkernels; ++k)
            if (emit_kernel(ctx, &progs[p]->kernels[k], &kernels, &uses_half, &wgmma)) {
                te_str_free(&kernels);
                te_str_free(&out);
                return NULL;
            }
    /* The headers only for kernels that use the types: float32 kernels
     * compile where CUDA's include directory is absent. */
    if (uses_half & 1u) te_str_append(&out, "#include <cuda_fp16.h>\n");
    if (uses_half & 2u) te_str_append(&out, "#include <cuda_bf16.h>\n");
    /* tensor-core kernels: WMMA */
    if (uses_half & 4u) te_str_append(&out, "#include <mma.h>\n");
    te_str_append(&out, prelude);
    if (uses_half & 4u) te_str_append(&out, cg_cuda__wmma_helpers);
    cg_cuda__wgmma_helpers(&out, &wgmma);
    te_str_append(&out, cg_c_helper_defs);
    te_str_append(&out, kernels.data ? kernels.data : "");
    const char *src = te_strdup(ctx, out.data ? out.data : "");
    te_str_free(&kernels);
    te_str_free(&out);
    return src;
}
