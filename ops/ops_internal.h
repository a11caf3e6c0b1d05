/*
 * ops/ops_internal.h — what the registry knows of each operator, and the
 * helpers the operator files share (shape-building shorthands, scheduling
 * patterns). Not part of the public API.
 */
#ifndef LOOM_OPS_INTERNAL_H
#define LOOM_OPS_INTERNAL_H

#include "loom/ops.h"
#include "loom/schedule.h"
#include "loom/te.h"

/* What a default CUDA schedule knows of its target. */
typedef struct {
    /* the shared memory a block may opt in to on the target's architecture
     * (cg_cuda_optin_shared), for templates whose deeper pipelines need
     * more than the static 48 KiB */
    int64_t smem;
    int cc; /* compute capability x 10 (sm_90: 90) */
} ops__gpu;

typedef struct ops__impl ops__impl;
/* Per-workload state kept in ops_workload.priv. */
typedef struct {
    const ops__impl *impl;
    int64_t reduce_len;  /* longest sum one output element accumulates (tolerance) */
    bool tf32;           /* the GPU rounds the products' operands to tf32 (tolerance) */
    te_tensor *t[8];     /* the operator's stages; meaning fixed per operator */
} ops__priv;

/* One operator. p: parameter values in info.params order, defaults filled. */
struct ops__impl {
    ops_op_info info;
    /* Impossible shapes beyond the per-parameter ranges: 0, or -1 with a
     * message in ctx. NULL: none. */
    int (*check)(te_ctx *ctx, const int64_t *p);
    /* Declares the computation: sets w->inputs/ninputs, w->outs/nouts,
     * w->flops and pv. 0 or -1 (message in ctx). */
    int (*build)(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p);
    /* in[i]: the inputs as double arrays; out[o]: the outputs. */
    void (*reference)(const ops_workload *w, const int64_t *p, const double *const *in,
                      double *const *out);
    /* Applies the default CPU schedule to s. vlen: vector lanes of float32. */
    int (*schedule)(const ops_workload *w, sch_schedule *s, const int64_t *p, int vlen);
    /* The default CPU schedule of a bfloat16 workload where the target
     * CPU has AVX512-BF16 (cg_target.bf16_dot): products summed in pairs
     * by tensorize "x86.dpbf16". Returns 1, s untouched, where the shape
     * does not allow it (schedule then applies). NULL: none. */
    int (*schedule_bf16_dot)(const ops_workload *w, sch_schedule *s, const int64_t *p);
    /* Applies the default CUDA schedule to s (ops/sched_cuda.c helpers)
     * for the target gpu. */
    int (*cuda_schedule)(const ops_workload *w, sch_schedule *s, const int64_t *p,
                         const ops__gpu *gpu);
    /* Accepts dtype=float16|bfloat16: 16-bit inputs, a float32 reduce
     * stage, the output cast back to the 16-bit type (ops__cast_output). */
    bool half;
};

/* Parameter ranges (ops_param_info.min/max). */
#define OPS__BIG INT64_MAX

/* Every operator (one object each in its file). */
extern const ops__impl ops__matmul, ops__batch_matmul, ops__dense, ops__dense_bias_gelu;
extern const ops__impl ops__conv2d_nchw, ops__conv2d_nhwc, ops__conv2d_bias_relu,
    ops__depthwise_conv2d_nchw;
extern const ops__impl ops__max_pool2d, ops__avg_pool2d, ops__global_avg_pool2d;
extern const ops__impl ops__softmax, ops__layer_norm;
extern const ops__impl ops__relu, ops__gelu, ops__sigmoid, ops__add, ops__mul;
extern const ops__impl ops__sum, ops__mean, ops__max;

/* ---- building ---- */

/* A placeholder of w's dtype. */
te_tensor *ops__input(te_ctx *ctx, ops_workload *w, const char *name, int ndim,
                      const int64_t *shape);
/* Sets w's inputs (n) and its single output. Returns 0 or -1. */
int ops__set_io(te_ctx *ctx, ops_workload *w, int n, te_tensor *const *ins, te_tensor *out);
/* out[axes] = dtype(acc[axes]) named `name`: the 16-bit output of a
 * float32 reduce stage acc, axes named after acc's. NULL with an error. */
te_tensor *ops__cast_output(te_ctx *ctx, te_dtype dtype, te_tensor *acc, const char *name);
/* An immediate of w's dtype. */
te_expr *ops__const(te_ctx *ctx, const ops_workload *w, double v);
/* A padding stage: out[..] = X[..] inside, `value` outside, for the two
 * spatial dimensions hd, wd of a rank-4 X padded by pad on each side.
 * Indices are clamped so the read stays in bounds on both sides of the
 * select. */
te_tensor *ops__pad(te_ctx *ctx, te_tensor *X, int hd, int wd, int64_t pad, te_expr *value);
/* Output extent of a (dilated) window: (in + 2 pad - dil (k - 1) - 1) / stride + 1. */
int64_t ops__out_extent(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil);
/* Number of (output position, tap) pairs of one spatial dimension whose
 * tap reads the input (not the padding). */
int64_t ops__real_taps(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad,
                       int64_t dil);
/* gelu(x) = 0.5 x (1 + erf(x / sqrt 2)). */
te_expr *ops__gelu_expr(te_ctx *ctx, const ops_workload *w, te_expr *x);
double ops__gelu_ref(double x);

/* ---- checks ---- */

/* "kernel larger than the padded input" for one spatial dimension. */
int ops__check_window(te_ctx *ctx, const char *op, const char *dim, int64_t in, int64_t k,
                      int64_t pad, int64_t dil);

/* ---- scheduling ---- */

/* An elementwise stage: the last axis split by the vector width and the
 * inner part vectorized, the rest fused and parallel. *par (may be NULL)
 * receives the parallel axis. */
int ops__sched_elemwise(sch_schedule *s, te_tensor *t, int vlen, te_expr **par);
/* A register tile: output F (ndim axes) is tiled by `mr` along axis `row`
 * and `nb` along its last axis (factors moved to nearby divisors of the
 * extents when there are such, so tiles need no guards). Loop order: the
 * other axes with the row tiles in place of `row`, then the column tiles
 * (or, with col_outer, the column tiles just before the row tiles), then
 * the tile. The loops up to the row tiles (col_outer: up to the column
 * tiles) are fused and parallel, with more outer loops fused while that
 * gives fewer than 16 iterations; the inner last axis is vectorized. The
 * reduction R (a separate stage F reads elementwise, or NULL: a
 * cache_write of F in "local") is computed at the innermost outer loop
 * with its reduce loops outside the tile, the row loop unrolled and the
 * last axis split by vlen, unrolled and vectorized: the accumulators stay
 * in registers (TVM's "How to optimize GEMM on CPU", tutorial 2). */
int ops__sched_register_tile(sch_schedule *s, te_tensor *F, te_tensor *R, int row, int64_t mr,
                             int64_t nb, int vlen, bool col_outer);
/* ops__sched_register_tile (col_outer, 16 float32 lanes) for R a float32
 * sum over one axis of bfloat16 products, the pairs of the reduction
 * summed by AVX512-BF16's VDPBF16PS: the operand R reads at its columns
 * (an input's copy, or a stage of the computation itself: the implicit
 * GEMM's weights) is packed into panels of nb columns and then by 2 on
 * the reduction ([K/2, N/nb, nb, 2]: the VNNI layout, sch_pack_vnni),
 * the reduce loop split by 2 and the tile's
 * 16-lane vectors tensorized with "x86.dpbf16" (a tail of rows is
 * guarded, as in the float32 tile). Returns 1, s untouched, where it does
 * not apply: R not such a sum, the other operand's pair not contiguous (a
 * transposed A), K odd, or no column tile of whole vectors dividing N. */
int ops__sched_register_tile_bf16_dot(sch_schedule *s, te_tensor *F, te_tensor *R, int row,
                                      int64_t mr, int64_t nb);
/* A register tile vectorized over F's axis `vec` (output channels of an
 * NCHW convolution) instead of its last axis: the reduction R (a separate
 * stage F reads elementwise, or NULL: a cache_write of F in "local") is
 * packed on `vec` by f = 2 or 1 host vectors (sch_pack: its vectors
 * contiguous), the input R reads at exactly `vec` (the weights) packed
 * alike at the root, and R computed per tile of f lanes x th (axis `row`)
 * x tw (axis `col`) elements, both unrolled, at most 12 accumulator
 * vectors, with its reduce loops outside the tile: TVM's NCHW[x]c x86
 * convolution without changing the operator's layout. tw may leave a tail
 * of columns (more accumulators where the columns have no divisor near 6;
 * ops_packed_tile_shape with col_tail). Returns 1 (nothing done) when
 * vec's extent is no multiple of a vector or no input is read at it, so
 * the caller can fall back. */
int ops__sched_packed_tile(sch_schedule *s, te_tensor *F, te_tensor *R, int vec, int row,
                           int col, int vlen);
/* A padding stage computed at the root: its rows (every axis but the
 * last, fused) parallel, each row's columns split by the vector width, the
 * inner part vectorized. Unlike ops__sched_elemwise the column blocks stay
 * a loop of their own: fused into the parallel loop, every vector
 * recomputed its row and column by a division (r50_c2's padding, 64 x 58
 * rows of 58: 11 % of the layer fused, 5 % by rows; bench/RESULTS.md,
 * session 19). *par (may be NULL) receives the parallel axis. */
int ops__sched_pad(sch_schedule *s, te_tensor *t, int vlen, te_expr **par);
/* A reduction over the last axis of rows (softmax's max and sum,
 * layer_norm's sums): R (data-parallel axes, then one reduce axis) computed
 * at loop `at` of its consumer C, or at the root with its data-parallel
 * axes fused and parallel when `at` is NULL. The reduce axis is split by f (the largest
 * of OPS_ROW_REDUCE_VECTORS, ..., 2, 1 vectors dividing it at least twice)
 * and rfactored (TVM's rfactor): f partial results, vectorized, each
 * accumulating every f-th element, then R reduces those f. A serial
 * reduction waits on its own previous step (3-4 cycles an element for an
 * add); OPS_ROW_REDUCE_VECTORS independent vector accumulators hide that
 * latency. Without such an f the reduction stays serial. Changes the
 * order of a float sum (within ops_tolerance). */
#define OPS_ROW_REDUCE_VECTORS 4
int ops__sched_row_reduce(sch_schedule *s, te_tensor *R, te_tensor *C, te_expr *at, int vlen);
/* A reduction stage R computed inside its consumer: its reduce loops moved
 * outside its last data-parallel axis, which is vectorized when
 * `vectorize`. */
int ops__sched_reduce_inner(sch_schedule *s, te_tensor *R, bool vectorize);

/* ---- CUDA scheduling (ops/sched_cuda.c) ----
 * Threads per block stay at or below 256 and shared memory well below
 * 48 KiB for every shape, so the schedules pass the GPU verifier. */

/* Every data-parallel axis of t fused and split by `threads`, the outer
 * part on blockIdx.x and the inner on threadIdx.x (one thread per
 * element). *tx (may be NULL) receives the thread axis. */
int ops__cuda_flat(sch_schedule *s, te_tensor *t, int64_t threads, te_expr **tx);
/* One thread per output element of the reduction R (computed at the
 * root): a local accumulator (cache_write) computed at the thread, its
 * reduce loops serial inside it; or, when the reduced length is long
 * (XREDUCE_MIN in sched_cuda.c), one block per output element with the
 * reduction split over the block's threads (cross-thread reduction). */
int ops__cuda_rows(sch_schedule *s, te_tensor *R);
/* An output F computed by ops__cuda_flat with the reduction R (a separate
 * stage F reads, or NULL: F itself when it is a reduction, through a
 * local cache_write) computed at F's thread; a long reduction instead
 * gets a cross-thread reduction kernel of its own (F then flat in a
 * second kernel, when R is a separate stage). */
int ops__cuda_flat_reduce(sch_schedule *s, te_tensor *F, te_tensor *R);
/* GEMM-shaped F (rank 2, or 3 with a leading batch axis on blockIdx.z):
 * TVM's "How to optimize GEMM on GPU" — a 64x64 block tile (smaller for
 * small extents) of 8x8 threads, each 2x2 vthreads of 4x4 outputs in
 * registers; k in steps of 8 with the A and B tiles (the operands R
 * reads) staged in shared memory by all threads (float4 loads when every
 * tile divides its extent). R: the reduction (NULL: a local cache_write
 * of F). */
int ops__cuda_gemm(sch_schedule *s, te_tensor *F, te_tensor *R, te_tensor *A, te_tensor *B);
/* Tensor cores (sched_cuda_wmma.c): whether reduction R (a 2-D matmul
 * C[i, j] = sum_k f(A[i, k]) * f(B[k, j])) has the multiples of 16 the
 * WMMA schedule (ops_schedule_tc_gemm) needs. */
bool ops__cuda_wmma_fits(const te_tensor *R);
/* The threads of a tensor-core block copy its shared stage T (2-D): T's
 * axes fused, `vec` elements a thread (one 16-byte access; 1 none), the
 * tz x ty groups of `lanes` threads (warps of 32, warpgroups of 128) on
 * threadIdx.z, threadIdx.y, their lanes on threadIdx.x. 0 or -1 with the
 * primitive's message. */
int ops__tile_fetch(sch_schedule *s, te_tensor *T, int64_t tz, int64_t ty, int64_t lanes,
                    int64_t vec);
/* The wgmma GEMM (ops/sched_cuda_wgmma.c): ops_schedule_tc_gemm with
 * cfg->wgmma. F the output, R its float32 reduction (F itself, or what F
 * casts). check/complete: as ops_tc_check and the defaults, for inputs
 * of `bytes` (2, or 4 as tf32) stored A [K, M] when ta, B [N, K] when tb;
 * budget: the shared bytes a block may take. */
int ops__wgmma_check(te_ctx *ctx, int64_t M, int64_t N, int64_t K, int bytes, bool ta, bool tb,
                     const ops_tc_config *c, int stages, int64_t budget, int64_t *shared);
int ops__wgmma_complete(te_ctx *ctx, int64_t M, int64_t N, int64_t K, int bytes, bool ta,
                        bool tb, const ops_tc_config *cfg, ops_tc_config *out);
int ops__schedule_wgmma_gemm(sch_schedule *s, te_tensor *F, te_tensor *R, te_tensor *A,
                             te_tensor *B, const ops_tc_config *cfg);
/* The index of T's read in the 2-D matmul-shaped reduction R that R's
 * reduce axis steps: 0 for A stored [K, M] or B [K, N], 1 for A [M, K]
 * or B [N, K]; -1 when R reads no 2-D T so. */
int ops__read_k_dim(const te_tensor *R, const te_tensor *T);
/* What the CUDA convolution schedule needs of a conv2d workload. */
typedef struct {
    te_tensor *X;     /* the input placeholder */
    te_tensor *W;     /* the weights placeholder */
    te_tensor *pad;   /* the padding stage, NULL when pad = 0 */
    int64_t stride, dilation, groups;
    bool nhwc;        /* F is [N,OH,OW,K] (else [N,K,OH,OW]) */
} ops__conv_io;
/* A 2-D convolution output F ([N,K,OH,OW], or [N,OH,OW,K] when nhwc) of
 * reduction R (NULL: a local cache_write of F) over (rc, rr, rs).
 * NCHW without groups: both operands staged in shared memory per chunk
 * of input channels (the structure Ansor's GPU sketch finds: blocks of
 * channels x rows x columns, enough blocks to fill the GPU). Otherwise
 * the padding inlined and only the weight tile staged; blocks over (n, k
 * tile, y tile, x tile), threads over output channels and columns, each
 * thread vthreads of channels x rows of outputs in registers. */
int ops__cuda_conv(sch_schedule *s, te_tensor *F, te_tensor *R, const ops__conv_io *io);
/* A window operator's output F [N,C,OH,OW] (pooling, depthwise): blocks
 * over (n, c, y tile, x tile), threads over rows and columns of the tile,
 * one output each; R (NULL: F's own reduction through a local
 * cache_write) at the thread; pad inlined (NULL: none). */
int ops__cuda_spatial(sch_schedule *s, te_tensor *F, te_tensor *R, te_tensor *pad);

#endif
