/*
 * codegen/cuda/cuda_smem.c — where a kernel's shared buffers live.
 *
 * A block may declare at most 48 KiB of static shared memory (__shared__
 * arrays). Above that (a tensor-core GEMM's pipeline of three or four
 * staged tiles, say) the memory must be dynamic: one extern __shared__
 * array whose size the launch passes, after the kernel opted in to more
 * than 48 KiB (cuFuncSetAttribute, up to the GPU's opt-in limit: 227 KiB
 * on sm_90). Kernels within 48 KiB keep their static arrays, so their
 * code does not change; a kernel over it gets every shared buffer of the
 * TIR at its own 128-byte aligned offset of the dynamic array (no reuse
 * between buffers, as the verifier counts them); a swizzled buffer at a
 * 1024-byte aligned one, the array's start aligned in the kernel.
 */
#include <string.h>

#include "codegen/cuda/cuda_internal.h"

typedef struct {
    cg_cuda_smem *L;
    bool overflow;
} layout_q;

static void add(const tir_stmt *s, void *user) {
    layout_q *q = user;
    if (s->kind != TIR_ALLOCATE || s->u.alloc.buffer->scope != TIR_SCOPE_SHARED) return;
    cg_cuda_smem *L = q->L;
    if (L->n == CG_CUDA_MAX_SMEM) {
        q->overflow = true;
        return;
    }
    const tir_buffer *b = s->u.alloc.buffer;
    if (b->swizzle) { /* a swizzle atom: 1024 bytes, aligned */
        L->bytes = (L->bytes + 1023) / 1024 * 1024;
        L->align = 1024;
    }
    L->b[L->n] = b;
    L->off[L->n++] = L->bytes;
    int64_t bytes = tir_buffer_size(b) * te_dtype_bytes(b->dtype);
    L->bytes += (bytes + 127) / 128 * 128;
}

int cg_cuda__smem_layout(te_ctx *ctx, const tir_stmt *body, const char *kernel, cg_cuda_smem *L) {
    memset(L, 0, sizeof *L);
    layout_q q = {L, false};
    tir_stmt_visit(body, add, NULL, &q);
    if (q.overflow)
        return te_error(ctx, "cuda: kernel '%s' allocates more than %d shared buffers", kernel,
                        CG_CUDA_MAX_SMEM);
    if (L->bytes <= CG_CUDA_STATIC_SMEM) memset(L, 0, sizeof *L);
    else if (L->align > 128) L->bytes += L->align; /* room to align the array's start */
    return 0;
}

int64_t cg_cuda__smem_offset(const cg_cuda_smem *L, const tir_buffer *b) {
    for (int i = 0; i < L->n; i++)
        if (L->b[i] == b) return L->off[i];
    return -1;
}
