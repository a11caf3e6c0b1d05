/*
 * codegen/cuda/cuda_internal.h — the CUDA C emitter (cuda_emit.c) and the
 * build (cuda_build.c). Expressions are printed by the C backend's
 * expression printer (codegen/c), which CUDA C++ accepts once the prelude
 * defines the fixed-width types and the loom_* helpers as __device__
 * functions; statements, kernels and vector accesses are CUDA's own.
 */
#ifndef LOOM_CG_CUDA_INTERNAL_H
#define LOOM_CG_CUDA_INTERNAL_H

#include "codegen/c/c_internal.h"

/* The CUDA C++ source of the kernels of nprogs split functions. Arena-owned;
 * NULL with "cuda: ..." in the ctx. */
const char *cg_cuda__source(te_ctx *ctx, int nprogs, const tir_device_program *const *progs);

/* Writes the expansion of ALLREDUCE s (cuda_allreduce.c) in a kernel of
 * the given block dimensions; emit_body(user, stmt) writes its body. */
void cg_cuda__emit_allreduce(cg_c_emitter *em, const tir_stmt *s, const int64_t block[3],
                             void (*emit_body)(void *, const tir_stmt *), void *user);

/* ---- shared memory (cuda_smem.c) ---- */
#define CG_CUDA_MAX_SMEM 64
#define CG_CUDA_STATIC_SMEM 49152 /* what a block may declare statically */
typedef struct {
    int n;                             /* 0: the buffers are static arrays */
    const tir_buffer *b[CG_CUDA_MAX_SMEM];
    int64_t off[CG_CUDA_MAX_SMEM];     /* bytes into the dynamic array */
    int64_t bytes;                     /* the launch's dynamic shared memory */
    int64_t align;                     /* 1024 with a swizzled buffer: the kernel
                                          aligns the array's start (bytes has room) */
} cg_cuda_smem;
/* The layout of a kernel's shared buffers: all of them in one dynamic
 * array (128-byte aligned offsets, in the order they are allocated) when
 * together they take more than CG_CUDA_STATIC_SMEM bytes, else none (n
 * and bytes 0). -1 with "cuda: ..." in ctx over CG_CUDA_MAX_SMEM buffers. */
int cg_cuda__smem_layout(te_ctx *ctx, const tir_stmt *body, const char *kernel, cg_cuda_smem *L);
/* b's offset in L, or -1 when b is not there (a static array). */
int64_t cg_cuda__smem_offset(const cg_cuda_smem *L, const tir_buffer *b);

/* ---- tensor cores (cuda_wmma.c) ---- */
#define CG_CUDA_MAX_FRAGS 32
typedef struct {
    const tir_buffer *b;
    int layout; /* a, b: 0 row_major, 1 col_major, -1 never loaded */
    int k;      /* accumulator: its mma's k (16, or 8 for tf32), 0 unknown */
} cg_cuda_frag;
typedef struct {
    bool used; /* the kernel has TENSOR_CALLs (needs <mma.h>) */
    bool staged; /* a store to bfloat16 goes through the per-warp staging tile */
    int64_t warps; /* warps of the block (its threads / 32) */
    int n;
    cg_cuda_frag frags[CG_CUDA_MAX_FRAGS];
} cg_cuda_wmma;
/* Reads the TENSOR_CALLs of a kernel body into w (fails em on a conflict);
 * block: the kernel's thread extents. */
void cg_cuda__wmma_scan(cg_c_emitter *em, const tir_stmt *body, const int64_t block[3],
                        cg_cuda_wmma *w);
/* Declares the kernel-wide state w needs (the staging tiles) at the top
 * of the kernel body. */
void cg_cuda__wmma_prologue(cg_c_emitter *em, const cg_cuda_wmma *w);
/* Declares fragment buffer b (scope wmma.*) as an array of fragments. */
void cg_cuda__wmma_declare(cg_c_emitter *em, const cg_cuda_wmma *w, const tir_buffer *b);
/* The device helpers the WMMA calls use (loom_wmma_ld_*: bfloat16 and
 * tf32 fragment loads from shared memory), after the prelude. */
extern const char cg_cuda__wmma_helpers[];
/* Writes TENSOR_CALL s as a WMMA call. */
void cg_cuda__wmma_call(cg_c_emitter *em, const cg_cuda_wmma *w, const tir_stmt *s);

/* ---- Hopper's warpgroup MMA (cuda_wgmma.c) ---- */
#define CG_CUDA_MAX_WGMMA_FORMS 16
/* One form of wgmma.mma_async a source uses: its helper function. */
typedef struct {
    int n;               /* the tile's width (8..256) */
    const char *type;    /* the operands' PTX type: "f16", "bf16" or "tf32" */
    bool mn_a, mn_b;     /* "transposed" operands: a m-contiguous, b n-contiguous */
} cg_cuda_wgmma_form;
typedef struct {
    bool used;           /* the kernel has wgmma calls (sm_90a) */
    int nforms;
    cg_cuda_wgmma_form forms[CG_CUDA_MAX_WGMMA_FORMS];
    bool issued;         /* emission: an mma issued since the last wait */
    int batch;           /* emission: inside cuda.wgmma_batch (its end commits) */
    int64_t inflight;    /* emission: wgmma groups a barrier leaves in flight */
} cg_cuda_wgmma;
/* Reads the wgmma calls of a kernel body into g, adding their forms to
 * all's (the source's helpers); fails em where the block is not whole
 * warpgroups along threadIdx.x (128 threads) or on too many forms. */
void cg_cuda__wgmma_scan(cg_c_emitter *em, const tir_stmt *body, const int64_t block[3],
                         cg_cuda_wgmma *g, cg_cuda_wgmma *all);
/* Declares accumulator b (scope wgmma.accumulator): n/2 float registers a
 * thread for each 64 x n tile. */
void cg_cuda__wgmma_declare(cg_c_emitter *em, const tir_buffer *b);
/* Writes wgmma TENSOR_CALL s. */
void cg_cuda__wgmma_call(cg_c_emitter *em, cg_cuda_wgmma *g, const tir_stmt *s);
/* Before a barrier of a wgmma kernel: waits for the issued mmas but the
 * newest g->inflight groups (the shared operands of older ones may be
 * overwritten after it) and fences this thread's shared-memory writes
 * for the tensor cores' async proxy. */
void cg_cuda__wgmma_sync(cg_c_emitter *em, cg_cuda_wgmma *g);
/* Appends the device helpers of all's forms (after the prelude). */
void cg_cuda__wgmma_helpers(te_str *out, const cg_cuda_wgmma *all);

#endif
