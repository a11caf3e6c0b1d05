/*
 * codegen/cuda/cuda_wgmma.c — Hopper's warpgroup MMA (PTX wgmma.mma_async,
 * sm_90a): the TENSOR_CALLs wgmma.fill / wgmma.mma / wgmma.store and the
 * accumulator buffers (scope wgmma.accumulator).
 *
 * A warpgroup is 128 threads, here threadIdx.x (0..127) of a block whose
 * other thread axes number the warpgroups. An accumulator of M x n floats
 * (M a multiple of 64) is M/64 * n/2 registers a thread: tile t's are
 * acc[t * n/2 ...], the element (row, col) of a 64 x n tile held by lane
 * l of warp w of the group in register 4 * (col / 8) + 2 * (row % 16 >=
 * 8) + col % 2 where row % 16 = l / 4 (+ 8) and col % 8 = 2 * (l % 4)
 * (PTX ISA, "wgmma register fragments", the f32 accumulator D). The flat
 * index of a tile's first element (row r multiple of 64, col 0) is r * n,
 * so its first register is that index / 128.
 *
 * Operands a and b are read by the tensor cores from shared memory
 * through a matrix descriptor (PTX ISA, "matrix descriptor format"):
 * bits 0-13 the start address / 16, 16-29 the leading byte offset / 16,
 * 32-45 the stride byte offset / 16, 62-63 the swizzle mode (1: 128
 * bytes). Loom's swizzled buffers (tir_buffer.swizzle) are the canonical
 * 128-byte-swizzle layouts: k-major (rows of 128 bytes along k, 8-row
 * groups 1024 bytes apart: the stride byte offset), or m/n-major (panels
 * of 64 elements along m or n, tensorize's `ld` bytes apart: the leading
 * byte offset; 8 k-rows 1024 bytes apart). The start address is the
 * tile's logical (unswizzled) address, which the TIR's flat index is.
 * The instruction's transpose bits say which operands are m/n-major;
 * tf32's form (k8) has none and reads both k-major (tensorize checks). A
 * helper per form: loom_wgmma_n{N}_{f16|bf16|tf32}_{a}{b}, n for a
 * k-major operand, t for an m/n-major one.
 *
 * Ordering (PTX ISA, wgmma.fence / commit_group / wait_group): a fence
 * before the first mma after the registers were touched otherwise; each
 * mma committed as its own group, or a pipeline step's mmas as one
 * (cuda.wgmma_batch); every barrier of the kernel first waits for all
 * groups (the next chunk's copies overwrite the operands after it), or
 * in a loop tir_pass_double_buffer marked cuda.wgmma_inflight n for all
 * but the newest n, and fences the thread's generic-proxy writes to
 * shared memory for the tensor cores' async proxy; a store waits for all
 * and pins the registers.
 */
#include <stdio.h>
#include <string.h>

#include "codegen/cuda/cuda_internal.h"

static const tir_buffer *arg_buffer(const te_expr *e) {
    return e->kind == TE_LOAD ? e->u.load.buffer : e->u.bload.buffer;
}

static bool is_wgmma(tir_tensor_intrin k) {
    return k == TIR_WGMMA_FILL || k == TIR_WGMMA_MMA || k == TIR_WGMMA_STORE;
}

static cg_cuda_wgmma_form form_of(const tir_stmt *s) {
    const te_expr *const *a = (const te_expr *const *)s->u.tcall.args;
    te_dtype t = arg_buffer(a[1])->dtype;
    cg_cuda_wgmma_form f = {(int)arg_buffer(a[0])->shape[1],
                            t.code == TE_BFLOAT ? "bf16" : t.bits == 32 ? "tf32" : "f16",
                            s->u.tcall.col_major[1], s->u.tcall.col_major[2]};
    return f;
}

static bool same_form(cg_cuda_wgmma_form x, cg_cuda_wgmma_form y) {
    return x.n == y.n && !strcmp(x.type, y.type) && x.mn_a == y.mn_a && x.mn_b == y.mn_b;
}

static bool add_form(cg_cuda_wgmma *g, cg_cuda_wgmma_form f) {
    for (int i = 0; i < g->nforms; i++)
        if (same_form(g->forms[i], f)) return true;
    if (g->nforms == CG_CUDA_MAX_WGMMA_FORMS) return false;
    g->forms[g->nforms++] = f;
    return true;
}

typedef struct {
    cg_c_emitter *em;
    cg_cuda_wgmma *g, *all;
} scan_ctx;

static void scan_stmt(const tir_stmt *s, void *user) {
    scan_ctx *sc = user;
    if (s->kind != TIR_TENSOR_CALL || !is_wgmma(s->u.tcall.intrin) || sc->em->failed) return;
    sc->g->used = sc->all->used = true;
    if (s->u.tcall.intrin != TIR_WGMMA_MMA) return;
    cg_cuda_wgmma_form f = form_of(s);
    if (!add_form(sc->g, f) || !add_form(sc->all, f))
        cg_c_fail(sc->em, "kernel '%s' uses more than %d forms of wgmma", sc->em->func,
                  CG_CUDA_MAX_WGMMA_FORMS);
}

void cg_cuda__wgmma_scan(cg_c_emitter *em, const tir_stmt *body, const int64_t block[3],
                         cg_cuda_wgmma *g, cg_cuda_wgmma *all) {
    memset(g, 0, sizeof *g);
    scan_ctx sc = {em, g, all};
    tir_stmt_visit(body, scan_stmt, NULL, &sc);
    if (g->used && !em->failed && block[0] != 128)
        cg_c_fail(em,
                  "kernel '%s' calls wgmma with threadIdx.x of extent %lld; a warpgroup is "
                  "threadIdx.x of 128 (bind the warpgroups to threadIdx.y and threadIdx.z)",
                  em->func, (long long)block[0]);
}

void cg_cuda__wgmma_declare(cg_c_emitter *em, const tir_buffer *b) {
    if (b->ndim != 2 || b->shape[0] % 64 || b->shape[1] % 8) {
        cg_c_fail(em, "accumulator '%s' in kernel '%s' is not a column of 64 x n tiles", b->name,
                  em->func);
        return;
    }
    cg_c_line(em, "float %s[%lld]; // %lld x %lld, wgmma fragments", cg_c_buffer_name(em, b),
              (long long)(b->shape[0] * b->shape[1] / 128), (long long)b->shape[0],
              (long long)b->shape[1]);
}

static void indent(cg_c_emitter *em) {
    for (int i = 0; i < em->indent; ++i) te_str_append(em->out, "    ");
}

/* &acc[first register of the tile at flat load e] */
static void print_regs(cg_c_emitter *em, const te_expr *e) {
    te_str_printf(em->out, "&%s[(", cg_c_buffer_name(em, e->u.load.buffer));
    cg_c_expr(em, e->u.load.index);
    te_str_append(em->out, ") / 128]");
}

static void print_desc(cg_c_emitter *em, const te_expr *e, int64_t lbo) {
    te_str_printf(em->out, "loom_wgmma_desc(&%s[", cg_c_buffer_name(em, e->u.load.buffer));
    cg_c_expr(em, e->u.load.index);
    te_str_printf(em->out, "], %lldu)", (long long)lbo);
}

static void helper_name(te_str *out, cg_cuda_wgmma_form f) {
    te_str_printf(out, "loom_wgmma_n%d_%s_%c%c", f.n, f.type, f.mn_a ? 't' : 'n',
                  f.mn_b ? 't' : 'n');
}

void cg_cuda__wgmma_sync(cg_c_emitter *em, cg_cuda_wgmma *g) {
    if (!g->used) return;
    if (g->inflight > 0)
        cg_c_line(em, "loom_wgmma_wait<%lld>(); loom_async_proxy_fence();", (long long)g->inflight);
    else
        cg_c_line(em, "loom_wgmma_wait<0>(); loom_async_proxy_fence();");
    g->issued = false;
}

void cg_cuda__wgmma_call(cg_c_emitter *em, cg_cuda_wgmma *g, const tir_stmt *s) {
    const te_expr *const *a = (const te_expr *const *)s->u.tcall.args;
    for (int i = 0; i < s->u.tcall.nargs; i++)
        if (a[i]->kind != TE_LOAD || a[i]->u.load.predicate || a[i]->dtype.lanes != 1) {
            cg_c_fail(em, "%s in kernel '%s': operand %d is not a flat scalar load",
                      tir_tensor_intrin_name(s->u.tcall.intrin), em->func, i);
            return;
        }
    int n = (int)(s->u.tcall.intrin == TIR_WGMMA_STORE ? arg_buffer(a[1]) : arg_buffer(a[0]))->shape[1];
    switch (s->u.tcall.intrin) {
    case TIR_WGMMA_FILL:
        indent(em);
        te_str_append(em->out, "{ float *loom_d = ");
        print_regs(em, a[0]);
        te_str_printf(em->out, ";\n");
        cg_c_line(em, "#pragma unroll");
        cg_c_line(em, "  for (int loom_i = 0; loom_i < %d; ++loom_i) loom_d[loom_i] = 0.0f; }", n / 2);
        g->issued = false;
        return;
    case TIR_WGMMA_MMA: {
        if (!g->issued) cg_c_line(em, "loom_wgmma_fence();");
        indent(em);
        helper_name(em->out, form_of(s));
        te_str_append(em->out, "(");
        print_regs(em, a[0]);
        te_str_append(em->out, ", ");
        print_desc(em, a[1], s->u.tcall.ld[1]);
        te_str_append(em->out, ", ");
        print_desc(em, a[2], s->u.tcall.ld[2]);
        te_str_append(em->out, ");\n");
        if (!g->batch) cg_c_line(em, "loom_wgmma_commit();");
        g->issued = true;
        return;
    }
    case TIR_WGMMA_STORE: {
        const tir_buffer *c = arg_buffer(a[0]);
        const char *store;
        if (c->dtype.code == TE_BFLOAT) {
            store = "*(__nv_bfloat162 *)(%s) = __floats2bfloat162_rn(%s, %s);";
            em->uses_half |= 2u;
        } else if (c->dtype.code == TE_FLOAT && c->dtype.bits == 16) {
            store = "*(__half2 *)(%s) = __floats2half2_rn(%s, %s);";
            em->uses_half |= 1u;
        } else if (c->dtype.code == TE_FLOAT && c->dtype.bits == 32) {
            store = "*(float2 *)(%s) = make_float2(%s, %s);";
        } else {
            cg_c_fail(em, "wgmma.store in kernel '%s' writes %s; it writes float32, float16 or "
                          "bfloat16",
                      em->func, te_dtype_str(c->dtype));
            return;
        }
        long long ld = (long long)s->u.tcall.ld[0];
        cg_c_line(em, "{");
        em->indent++;
        cg_c_line(em, "loom_wgmma_wait<0>();");
        indent(em);
        te_str_append(em->out, "float *loom_d = ");
        print_regs(em, a[1]);
        te_str_append(em->out, ";\n");
        cg_c_line(em, "#pragma unroll");
        cg_c_line(em, "for (int loom_i = 0; loom_i < %d; ++loom_i) loom_wgmma_pin(loom_d[loom_i]);",
                  n / 2);
        indent(em);
        te_str_printf(em->out, "%s *loom_p = &%s[", cg_c_type_em(em, c->dtype), cg_c_buffer_name(em, c));
        cg_c_expr(em, a[0]->u.load.index);
        te_str_printf(em->out,
                      " + ((int)threadIdx.x / 32 * 16 + (int)threadIdx.x %% 32 / 4) * %lld + "
                      "(int)threadIdx.x %% 4 * 2];\n",
                      ld);
        cg_c_line(em, "#pragma unroll");
        cg_c_line(em, "for (int loom_i = 0; loom_i < %d; ++loom_i) {", n / 8);
        em->indent++;
        char lo[64], hi[64];
        snprintf(lo, sizeof lo, "loom_p + 8 * loom_i");
        snprintf(hi, sizeof hi, "loom_p + %lld + 8 * loom_i", 8 * ld);
        indent(em);
        te_str_printf(em->out, store, lo, "loom_d[4 * loom_i]", "loom_d[4 * loom_i + 1]");
        te_str_append(em->out, "\n");
        indent(em);
        te_str_printf(em->out, store, hi, "loom_d[4 * loom_i + 2]", "loom_d[4 * loom_i + 3]");
        te_str_append(em->out, "\n");
        em->indent--;
        cg_c_line(em, "}");
        em->indent--;
        cg_c_line(em, "}");
        g->issued = false;
        return;
    }
    default:
        cg_c_fail(em, "tensor intrinsic %d in kernel '%s' is not a wgmma call",
                  (int)s->u.tcall.intrin, em->func);
    }
}

void cg_cuda__wgmma_helpers(te_str *out, const cg_cuda_wgmma *all) {
    if (!all->used) return;
    te_str_append(
        out,
        "// Hopper's warpgroup MMA (wgmma.mma_async): needs sm_90a.\n"
        "#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)\n"
        "#error \"Loom: this kernel uses wgmma, which needs the sm_90a target\"\n"
        "#endif\n"
        "LOOM_HELPER uint64_t loom_wgmma_desc(const void *p, unsigned lbo) {\n"
        "    uint64_t a = (unsigned)__cvta_generic_to_shared(p);\n"
        "    return ((a & 0x3FFFF) >> 4) | ((uint64_t)((lbo & 0x3FFFF) >> 4) << 16) |\n"
        "           ((uint64_t)(1024 >> 4) << 32) | (1ull << 62); }\n"
        "LOOM_HELPER void loom_wgmma_fence() { asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\"); }\n"
        "LOOM_HELPER void loom_wgmma_commit() { asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\"); }\n"
        "template <int N> LOOM_HELPER void loom_wgmma_wait() {\n"
        "    asm volatile(\"wgmma.wait_group.sync.aligned %0;\\n\" :: \"n\"(N) : \"memory\"); }\n"
        "LOOM_HELPER void loom_async_proxy_fence() { asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\"); }\n"
        "LOOM_HELPER void loom_wgmma_pin(float &r) { asm volatile(\"\" : \"+f\"(r) :: \"memory\"); }\n");
    for (int i = 0; i < all->nforms; i++) {
        cg_cuda_wgmma_form f = all->forms[i];
        int nr = f.n / 2;
        te_str_append(out, "LOOM_HELPER void ");
        helper_name(out, f);
        te_str_append(out, "(float *d, uint64_t da, uint64_t db) {\n    asm volatile(\"{\\n.reg .pred p;\\n");
        te_str_printf(out, "setp.ne.b32 p, %%%d, 0;\\n", nr + 2);
        /* tf32: k8 and no transpose operands (both operands k-major) */
        bool tf32 = !strcmp(f.type, "tf32");
        te_str_printf(out, "wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {", f.n,
                      tf32 ? 8 : 16, f.type, f.type);
        for (int r = 0; r < nr; r++) te_str_printf(out, "%s%%%d", r ? ", " : "", r);
        te_str_printf(out, "}, %%%d, %%%d, p, 1, 1", nr, nr + 1);
        if (!tf32) te_str_printf(out, ", %d, %d", f.mn_a ? 1 : 0, f.mn_b ? 1 : 0);
        te_str_append(out, ";\\n}\\n\"\n        : ");
        for (int r = 0; r < nr; r++) te_str_printf(out, "%s\"+f\"(d[%d])", r ? ", " : "", r);
        te_str_append(out, "\n        : \"l\"(da), \"l\"(db), \"r\"(1) : \"memory\"); }\n");
    }
}
