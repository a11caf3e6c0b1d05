/*
 * codegen/cuda/cuda_allreduce.c — the expansion of a tir ALLREDUCE (a
 * reduction across the T = blockDim.x threads that share threadIdx.y/z),
 * after TVM's lower_thread_allreduce.cc and the CUDA reduction patterns
 * (Harris, "Optimizing parallel reduction in CUDA"; warp shuffles,
 * CUDA C++ Programming Guide §7.22). Three forms, by T and the number of
 * x-rows G = blockDim.y * blockDim.z:
 *
 *  warp   T a multiple of 32, or G == 1: each warp folds its lanes with
 *         __shfl_down_sync (offsets 16..1; in a partial last warp only
 *         lanes below its width are combined, so a value shuffled from a
 *         missing lane is never used), lane 0 of each warp writes a
 *         __shared__ slot, __syncthreads, and the first warp of the row
 *         folds the slots (missing slots read as the identity), then a
 *         second __syncthreads so a later allreduce may reuse the slots;
 *  seg    T a power of two below 32: rows are aligned T-lane segments of
 *         a warp; __shfl_down_sync with width T, offsets T/2..1; the mask
 *         names the lanes of the block that exist in the thread's warp;
 *  tree   otherwise (G > 1, rows straddling warps): a __shared__ array
 *         of G * T values folded by halving strides, a barrier per step.
 *
 * Only threadIdx.x == 0 of a row holds the total afterwards (the body
 * guards its use by that, as lowering emits it).
 */
#include <stdio.h>
#include <string.h>

#include "codegen/cuda/cuda_internal.h"

static void put(cg_c_emitter *em, const char *s) { te_str_append(em->out, s); }
static void ind(cg_c_emitter *em) {
    for (int i = 0; i < em->indent; ++i) put(em, "    ");
}

static const char *suffix(te_dtype t) {
    if (t.code == TE_FLOAT) return t.bits == 32 ? "f32" : "f64";
    return t.bits == 32 ? "i32" : "i64";
}

/* "a = combine(a, b);" for the reduction op. */
static void combine_line(cg_c_emitter *em, te_reduce_op op, te_dtype t, const char *a,
                         const char *b) {
    switch (op) {
    case TE_REDUCE_SUM: cg_c_line(em, "%s = %s + %s;", a, a, b); return;
    case TE_REDUCE_PROD: cg_c_line(em, "%s = %s * %s;", a, a, b); return;
    case TE_REDUCE_MIN: cg_c_line(em, "%s = loom_min_%s(%s, %s);", a, suffix(t), a, b); return;
    case TE_REDUCE_MAX: cg_c_line(em, "%s = loom_max_%s(%s, %s);", a, suffix(t), a, b); return;
    }
}

static const char *identity(cg_c_emitter *em, te_reduce_op op, te_dtype t) {
    te_str s;
    te_str_init(&s);
    te_str *saved = em->out;
    em->out = &s;
    cg_c_expr(em, te_reduce_identity(em->ctx, op, t));
    em->out = saved;
    const char *r = te_strdup(em->ctx, s.data ? s.data : "0");
    te_str_free(&s);
    return r;
}

static bool pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

void cg_cuda__emit_allreduce(cg_c_emitter *em, const tir_stmt *s, const int64_t block[3],
                             void (*emit_body)(void *, const tir_stmt *), void *user) {
    te_reduce_op op = s->u.allreduce.op;
    te_dtype t = s->u.allreduce.value->dtype;
    int64_t T = s->u.allreduce.extent, G = block[1] * block[2];
    const char *ty = cg_c_type(t);
    if (T != block[0]) {
        cg_c_fail(em, "allreduce over %lld threads in kernel '%s', whose threadIdx.x extent is "
                      "%lld",
                  (long long)T, em->func, (long long)block[0]);
        return;
    }
    int n = em->ntemps++;
    char v[32], buf[32], o[32], gid[64];
    snprintf(v, sizeof v, "loom_r%d", n);
    snprintf(buf, sizeof buf, "loom_rbuf%d", n);
    snprintf(o, sizeof o, "loom_ro%d", n);
    if (G == 1) snprintf(gid, sizeof gid, "0");
    else
        snprintf(gid, sizeof gid, "((int)threadIdx.z * %lld + (int)threadIdx.y)",
                 (long long)block[1]);
    const char *id = identity(em, op, t);
    cg_c_line(em, "{");
    em->indent++;
    ind(em);
    te_str_printf(em->out, "%s %s = ", ty, v);
    cg_c_expr(em, s->u.allreduce.value);
    put(em, ";\n");
    if (T > 1 && (T % 32 == 0 || (G == 1 && !(T < 32 && pow2(T))))) {
        /* warp: lanes, then the warps' slots. */
        int64_t W = (T + 31) / 32;
        cg_c_line(em, "// allreduce.%s over threadIdx.x (%lld threads): warp shuffles%s",
                  te_reduce_op_name(op), (long long)T,
                  W > 1 ? ", then one slot per warp in shared memory" : "");
        cg_c_line(em, "const int %s_lane = (int)threadIdx.x & 31;", v);
        if (T % 32 == 0) {
            cg_c_line(em, "const int %s_nl = 32;", v);
            cg_c_line(em, "const unsigned %s_mask = 0xffffffffu;", v);
        } else {
            cg_c_line(em, "const int %s_nl = min(32, %lld - ((int)threadIdx.x & ~31));", v,
                      (long long)T);
            cg_c_line(em, "const unsigned %s_mask = %s_nl == 32 ? 0xffffffffu : ((1u << %s_nl) - 1u);",
                      v, v, v);
        }
        cg_c_line(em, "#pragma unroll");
        cg_c_line(em, "for (int %s = 16; %s > 0; %s >>= 1) {", o, o, o);
        em->indent++;
        cg_c_line(em, "%s %s_o = __shfl_down_sync(%s_mask, %s, %s);", ty, v, v, v, o);
        cg_c_line(em, "if (%s_lane + %s < %s_nl) {", v, o, v);
        em->indent++;
        char other[48];
        snprintf(other, sizeof other, "%s_o", v);
        combine_line(em, op, t, v, other);
        em->indent--;
        cg_c_line(em, "}");
        em->indent--;
        cg_c_line(em, "}");
        if (W > 1) {
            cg_c_line(em, "__shared__ %s %s[%lld];", ty, buf, (long long)(G * W));
            cg_c_line(em, "if (%s_lane == 0) %s[%s * %lld + ((int)threadIdx.x >> 5)] = %s;", v, buf,
                      gid, (long long)W, v);
            cg_c_line(em, "__syncthreads();");
            cg_c_line(em, "if ((int)threadIdx.x < 32) {");
            em->indent++;
            cg_c_line(em, "%s = (int)threadIdx.x < %lld ? %s[%s * %lld + (int)threadIdx.x] : %s;", v,
                      (long long)W, buf, gid, (long long)W, id);
            int64_t first = 1;
            while (first * 2 < W) first *= 2;
            cg_c_line(em, "#pragma unroll");
            cg_c_line(em, "for (int %s = %lld; %s > 0; %s >>= 1) {", o, (long long)first, o, o);
            em->indent++;
            cg_c_line(em, "%s %s_o = __shfl_down_sync(0xffffffffu, %s, %s);", ty, v, v, o);
            combine_line(em, op, t, v, other);
            em->indent--;
            cg_c_line(em, "}");
            em->indent--;
            cg_c_line(em, "}");
            cg_c_line(em, "__syncthreads();");
        }
    } else if (T > 1 && T < 32 && pow2(T)) {
        /* seg: rows are aligned T-lane segments of the warps. */
        int64_t N = T * G;
        cg_c_line(em, "// allreduce.%s over threadIdx.x (%lld threads): warp shuffles of width %lld",
                  te_reduce_op_name(op), (long long)T, (long long)T);
        if (N % 32 == 0) {
            cg_c_line(em, "const unsigned %s_mask = 0xffffffffu;", v);
        } else {
            cg_c_line(em, "const int %s_lid = %s * %lld + (int)threadIdx.x;", v, gid, (long long)T);
            cg_c_line(em, "const int %s_nl = min(32, %lld - (%s_lid & ~31));", v, (long long)N, v);
            cg_c_line(em, "const unsigned %s_mask = %s_nl == 32 ? 0xffffffffu : ((1u << %s_nl) - 1u);",
                      v, v, v);
        }
        cg_c_line(em, "#pragma unroll");
        cg_c_line(em, "for (int %s = %lld; %s > 0; %s >>= 1) {", o, (long long)(T / 2), o, o);
        em->indent++;
        cg_c_line(em, "%s %s_o = __shfl_down_sync(%s_mask, %s, %s, %lld);", ty, v, v, v, o,
                  (long long)T);
        char other[48];
        snprintf(other, sizeof other, "%s_o", v);
        combine_line(em, op, t, v, other);
        em->indent--;
        cg_c_line(em, "}");
    } else if (T > 1) {
        /* tree: rows straddle warps. */
        int64_t P = 1;
        while (P < T) P *= 2;
        cg_c_line(em, "// allreduce.%s over threadIdx.x (%lld threads in each of %lld rows): "
                      "shared-memory tree",
                  te_reduce_op_name(op), (long long)T, (long long)G);
        cg_c_line(em, "__shared__ %s %s[%lld];", ty, buf, (long long)(G * T));
        cg_c_line(em, "%s *%s_row = %s + %s * %lld;", ty, v, buf, gid, (long long)T);
        cg_c_line(em, "%s_row[threadIdx.x] = %s;", v, v);
        cg_c_line(em, "__syncthreads();");
        cg_c_line(em, "for (int %s = %lld; %s > 0; %s >>= 1) {", o, (long long)(P / 2), o, o);
        em->indent++;
        cg_c_line(em, "if ((int)threadIdx.x < %s && (int)threadIdx.x + %s < %lld) {", o, o,
                  (long long)T);
        em->indent++;
        char a[96], b[128];
        snprintf(a, sizeof a, "%s_row[threadIdx.x]", v);
        snprintf(b, sizeof b, "%s_row[threadIdx.x + %s]", v, o);
        combine_line(em, op, t, a, b);
        em->indent--;
        cg_c_line(em, "}");
        cg_c_line(em, "__syncthreads();");
        em->indent--;
        cg_c_line(em, "}");
        cg_c_line(em, "%s = %s_row[0];", v, v);
        cg_c_line(em, "__syncthreads();");
    }
    const te_expr *r = s->u.allreduce.result;
    cg_c_line(em, "const %s %s = %s;", ty, cg_c_name_of(em, r, r->u.var.name), v);
    emit_body(user, s->u.allreduce.body);
    em->indent--;
    cg_c_line(em, "}");
}
