/*
 * loom/ops.h — the operator library: the workloads a user tunes, each with
 * its FLOP count, a naive double-precision reference, a default schedule
 * and a canonical workload key, behind a registry that looks operators up
 * by name and parses `--shape` strings.
 *
 * A *workload* is one operator with all its parameters fixed. Its *key* is
 * canonical text:
 *
 *   conv2d_nchw(N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1,dilation=1,groups=1,dtype=float32)
 *
 * the operator's registry name, then every parameter in the operator's
 * fixed order (defaults filled in, values in decimal), then the dtype. The
 * key is the same whatever order or alias the user wrote, on every
 * machine, so the tuning database can store records under it and the
 * tuner's workers can rebuild the computation from it (ops_from_key).
 * Keys follow TVM auto_scheduler's workload keys (a registered function
 * name plus its arguments), written as text instead of JSON.
 *
 * Operators (registry name; aliases in brackets; shapes row-major):
 *   matmul             M,N,K,transpose_a=0,transpose_b=0
 *                      A[M,K] (A[K,M] when transpose_a), B[K,N] (B[N,K]
 *                      when transpose_b) -> C[M,N] = A x B
 *   batch_matmul       B,M,N,K,transpose_a=0,transpose_b=0: as matmul with a
 *                      leading batch dimension of extent B on A, B and C
 *   dense              M,N,K,bias=1: X[M,K], W[N,K] (, bias[N]) ->
 *                      Y[M,N] = X W^T (+ bias)
 *   dense_bias_gelu    M,N,K: X[M,K], W[N,K], bias[N] -> gelu(X W^T + bias)
 *   conv2d_nchw [conv2d]
 *                      N,C,H,W,K,R,S,stride=1,pad=0,dilation=1,groups=1:
 *                      X[N,C,H,W], W[K,C/groups,R,S] -> Y[N,K,OH,OW]
 *   conv2d_nhwc        same parameters: X[N,H,W,C], W[R,S,C/groups,K] (HWIO)
 *                      -> Y[N,OH,OW,K]
 *   conv2d_bias_relu   as conv2d_nchw plus bias[K]: relu(conv + bias)
 *   depthwise_conv2d_nchw [depthwise_conv2d]
 *                      N,C,H,W,R,S,stride=1,pad=0,dilation=1:
 *                      X[N,C,H,W], W[C,1,R,S] -> Y[N,C,OH,OW]
 *   max_pool2d, avg_pool2d
 *                      N,C,H,W,R,S,stride=1,pad=0: NCHW -> [N,C,OH,OW];
 *                      padding never wins a max; the average divides by
 *                      the taps inside the input (count_include_pad false)
 *   global_avg_pool2d  N,C,H,W: X[N,C,H,W] -> Y[N,C]
 *   softmax            M,N: X[M,N] -> softmax over the last axis, computed
 *                      stably: m = max_j x, e = exp(x - m), y = e / sum e
 *   layer_norm         M,N: X[M,N], gamma[N], beta[N] -> Y[M,N], normalised
 *                      over the last axis with the biased variance and
 *                      eps = 1e-5 (as PyTorch's LayerNorm)
 *   relu, gelu, sigmoid
 *                      D0,D1=1,D2=1,D3=1: X[D0,D1,D2,D3] -> Y, same shape;
 *                      gelu is the exact form 0.5 x (1 + erf(x / sqrt 2))
 *   add, mul           D0,D1=1,D2=1,D3=1,a_bcast=0,b_bcast=0: A, B -> Y[D0..D3]
 *                      with numpy broadcasting: bit d of a_bcast (b_bcast)
 *                      set means A (B) has extent 1 in dimension d
 *   sum, mean, max     D0,D1=1,D2=1,D3=1,axes,keepdims=0: X[D0..D3] reduced
 *                      over the dimensions whose bit is set in `axes` (a
 *                      bit mask, 1..15: axes=6 reduces dimensions 1 and 2);
 *                      keepdims=1 keeps them with extent 1. Reducing every
 *                      dimension without keepdims gives shape [1].
 * OH = (H + 2 pad - dilation (R - 1) - 1) / stride + 1 (OW alike). Flags
 * (transpose_*, bias, keepdims) are 0 or 1. The dtype is float32 unless
 * the shape string says `dtype=float64`, or, for matmul, batch_matmul,
 * conv2d_nchw and conv2d_nhwc, `dtype=float16` or `dtype=bfloat16`: then
 * the inputs and the output have that type, the products are summed in
 * float32 in a reduce stage of their own (C_acc, O_acc), and the output
 * (C, O) is that stage cast to the 16-bit type (round to nearest even).
 * A 16-bit conv2d_nhwc with groups=1, K and R S C multiples of 16 is
 * declared as its implicit GEMM (cuDNN's and CUTLASS's tensor-core form):
 * Col [M, R S C] the im2col gather (M = N OH OW rounded up to 64; zero in
 * the padding and past the last position), W2 [R S C, K] the weights,
 * O_acc [M, K] their float32 product, O_gemm its 16-bit cast and O
 * [N, OH, OW, K] O_gemm's first N OH OW rows.
 *
 * FLOP counts count real work: a multiply-add is 2; padding taps of a
 * convolution are not counted (only taps that read the input); exp, erf,
 * divide and compare count 1 each.
 *
 * Errors: functions taking a ctx return NULL (or -1) and record the reason
 * in it (te_ctx_errmsg), naming the operator, the parameter and the rule.
 * Nothing aborts on bad input.
 */
#ifndef LOOM_OPS_H
#define LOOM_OPS_H

#include "loom/api.h"
#include <stdbool.h>
#include <stdint.h>

#include "loom/runtime.h"
#include "loom/schedule.h"
#include "loom/te.h"

#ifdef __cplusplus
extern "C" {
#endif
LOOM_API_BEGIN

/* Most parameters an operator has. */
#define OPS_MAX_PARAMS 16

/* One parameter of an operator. */
typedef struct {
    const char *name;   /* as written in shape strings and keys: "stride" */
    bool required;      /* no default: the shape string must give it */
    int64_t def;        /* the default when not required */
    int64_t min, max;   /* the accepted range (extents: 1..INT64_MAX,
                           padding 0.., flags 0..1, masks 1..15) */
    const char *doc;    /* one line: what it means */
    /* Written in keys only when not `def`: a parameter added after keys
     * were stored (tuning databases), whose keys must stay as they were. */
    bool key_when_set;
} ops_param_info;

/* One operator of the registry. Static storage; valid for the program. */
typedef struct {
    const char *name;          /* registry name: "conv2d_nchw" */
    const char *alias;         /* another accepted name ("conv2d") or NULL */
    const char *doc;           /* one line: what it computes, tensor layouts */
    int nparams;
    ops_param_info params[OPS_MAX_PARAMS]; /* in canonical (key) order */
} ops_op_info;

/* Number of registered operators. */
int ops_count(void);
/* Operator i (0 <= i < ops_count()), in a fixed order; NULL out of range. */
const ops_op_info *ops_info(int i);
/* The operator with this name or alias; NULL when unknown (no error). */
const ops_op_info *ops_find(const char *name);
/* The registry names, comma-separated ("matmul, batch_matmul, ..."):
 * static storage. */
const char *ops_names(void);

/* A built workload. Lives in the ctx arena (with every array and string
 * it points to) until te_ctx_free. */
typedef struct ops_workload {
    const ops_op_info *info;   /* the operator */
    const char *op;            /* info->name */
    const char *key;           /* the canonical workload key */
    te_dtype dtype;            /* element type of every tensor */
    int nparams;               /* == info->nparams */
    const char *const *param_names;  /* canonical order, as info->params */
    const int64_t *param_values;     /* defaults filled in */
    int ninputs;               /* placeholders, in the documented order */
    te_tensor **inputs;
    int nouts;                 /* output tensors (1 for every op now) */
    te_tensor **outs;
    int nargs;                 /* ninputs + nouts */
    te_tensor **args;          /* inputs then outputs: the order of cg_build
                                  args and rt_call tensors */
    double flops;              /* FLOP of one call (see the file comment) */
    /* Bit i: args[i] is a weight, fixed while the operator serves
     * inference (TVM's bound params): the convolutions' weights (and
     * bias). The tuner and the bench build with these as
     * cg_build_options.constant_args, so stages that read only weights
     * (a packed copy) run once, as oneDNN reorders weights once. */
    uint64_t constant_args;
    void *priv;                /* the operator's handles for its default
                                  schedule; not for callers */
} ops_workload;

/* Builds operator `op` (a name or alias) with the parameters of `shape`:
 * comma-separated NAME=VALUE pairs in any order, e.g.
 * "N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1"; spaces around items
 * are ignored; VALUE is a decimal integer, except
 * `dtype=float32|float64|float16|bfloat16` (16-bit: see above).
 * Missing parameters take their defaults. NULL or "" is an empty list.
 * Errors (NULL, message in ctx): unknown operator (the message lists the
 * known ones), malformed shape string (an item without '=' or a value that
 * is not an integer), unknown parameter (the message lists the operator's
 * parameters), a parameter given twice, a missing required parameter, a
 * non-positive extent, a flag other than 0/1, a kernel larger than the
 * padded input, channels not divisible by groups, an axes mask out of
 * range, an unsupported dtype ("ops: OP: unsupported dtype 'T' for
 * parameter 'dtype' (allowed: ...)", naming the operators that take the
 * 16-bit types when OP does not). */
ops_workload *ops_build(te_ctx *ctx, const char *op, const char *shape);
/* Builds the workload a key names: "OP(P=V,...,dtype=T)". Accepts any key
 * ops_build accepts the parts of (so a non-canonical key is canonicalised:
 * ops_from_key(k)->key is canonical; for a canonical k it equals k).
 * Errors: those of ops_build, and a malformed key (no "(" after the name,
 * no ")" at the end, text after it). */
ops_workload *ops_from_key(te_ctx *ctx, const char *key);
/* The canonical key of (op, shape) without building the computation;
 * arena string in ctx, NULL with an error as ops_build. */
const char *ops_canonical_key(te_ctx *ctx, const char *op, const char *shape);
/* The value of parameter `name` of w; false when w has no such parameter. */
bool ops_param(const ops_workload *w, const char *name, int64_t *value);
/* The parameters as a JSON object in canonical order, dtype last:
 * {"M":64,"N":64,"K":64,"transpose_a":0,"transpose_b":0,"dtype":"float32"}.
 * Arena string in w's ctx. */
const char *ops_params_json(const ops_workload *w);

/* A fresh default schedule of w for target "llvm" (optionally with
 * options, "llvm -mcpu=znver5"), "c" or "cuda" (optionally "cuda
 * -arch=sm_XX"; the schedule does not depend on the architecture): not
 * tuned, but not naive. Each call returns a new schedule (in w's ctx)
 * made of ordinary primitives, so its step log replays on a rebuilt
 * workload. NULL with an error for a target cg_target_parse refuses
 * ("ops: OP: no default schedule for unknown target 'opencl' (known:
 * ...)"), and for cuda where the operator has no GPU schedule.
 *
 * CPU (llvm, c): reductions as register tiles (cache_write or compute_at
 * into the output tile, reduction loops outside a vectorized inner axis),
 * padding stages materialised or computed at the output loop, elementwise
 * tails inlined, the innermost axis vectorized, the outer loops fused and
 * parallel. Tile widths follow the target's vector width
 * (cg_target.vector_lanes: a named CPU's, else the host's); the
 * computation itself never depends on the host. A bfloat16 matmul,
 * batch_matmul or conv2d_nhwc implicit GEMM on an llvm target whose CPU
 * has AVX512-BF16 (cg_target.bf16_dot) sums its products in pairs with
 * VDPBF16PS (tensorize "x86.dpbf16"): B packed [K/2, N/nb, nb, 2] per
 * column panel (the convolution's W2 once, pre-computed), a register
 * tile of rows near 6 by 4 vectors; K odd or A transposed keep the
 * float32 tile.
 *
 * CUDA (loops bound with sch_bind; at most 256 threads per block and at
 * most 16 KiB of shared memory per block for any shape, so the GPU
 * verifier accepts every workload; TVM's GPU schedules are the model):
 *   matmul, batch_matmul, dense, dense_bias_gelu — a 64x64 output tile
 *     per block (the next power of two for smaller extents; batch on
 *     blockIdx.z), 8x8 threads each holding 2x2 vthreads of 4x4
 *     accumulators in registers; k in steps of 8 with the A and B tiles
 *     fetched into shared memory by all the block's threads (float4 loads
 *     when every tile divides its extent); bias/gelu on the finished
 *     tile ("How to optimize GEMM on GPU"). A float16/bfloat16 matmul,
 *     and a float32 one with tf32=1, runs on tensor cores instead
 *     (ops_schedule_tc_gemm) when M, N and K are multiples of 16: on
 *     sm_90 on wgmma where its tiles divide the shape (M and N multiples
 *     of 64, K of 64, or 32 for tf32), either operand transposed or not;
 *     else on WMMA when neither is transposed. A 16-bit matmul that
 *     neither takes, and every batch_matmul, keeps the CUDA-core tile
 *     above (tf32=1 that neither takes is refused).
 *   conv2d_nchw, conv2d_nhwc, conv2d_bias_relu — padding inlined; a block
 *     per (n, 4 x tk output channels, 4 output rows, tx output columns),
 *     threads over channels and columns (columns on threadIdx.x for NCHW,
 *     channels for NHWC), each thread 4 vthreads of channels x 4 rows in
 *     registers; the input-channel reduction split in steps of up to 8
 *     with the weight tile of each step in shared memory. The 16-bit
 *     conv2d_nhwc's implicit GEMM (above) runs on tensor cores as a
 *     matmul does (ops_schedule_tc_gemm: wgmma on sm_90 where its tiles
 *     divide the GEMM, else WMMA), the gather computed in the copies to
 *     shared memory (zero-filling cp.async in the padding), then a copy
 *     into O, 16 bytes a thread.
 *   depthwise_conv2d_nchw, max_pool2d, avg_pool2d — padding inlined; a
 *     block per (n, c, output tile) of up to 256 threads, one output each,
 *     the window serial in the thread.
 *   softmax, layer_norm, global_avg_pool2d, sum, mean, max — one thread
 *     per output row (per output element), its reduction serial in the
 *     thread (the backend has no cross-thread reduction); softmax and
 *     layer_norm run as three kernels: row reductions, then the
 *     elementwise normalisation.
 *   relu, gelu, sigmoid, add, mul — every axis fused, blocks of 256
 *     threads, one element each. */
sch_schedule *ops_default_schedule(const ops_workload *w, const char *target);

/* The tensor-core GEMM's knobs (ops_schedule_tc_gemm). 0 fields take the
 * shape-based defaults. bm x bn: a block's tile of C (multiples of wm and
 * wn); wm x wn: a warp's tile (multiples of 16); kc: the k chunk staged in
 * shared memory (a multiple of 16 dividing K); stages: how many chunks'
 * shared tiles are in flight (the software pipeline's depth: 1 none, 2
 * double buffering, up to 4; 0 the default, 2; above 2 the tiles take
 * more than the 48 KiB of static shared memory and the kernel asks for
 * dynamic shared memory up to the GPU's opt-in limit); single_buffer: the
 * same as stages = 1 (kept for old callers); unroll_k: the k steps within
 * a chunk unrolled.
 * wgmma: the GEMM on Hopper's warpgroup MMA instead (sm_90a; float16 and
 * bfloat16 inputs, or float32 as tf32): wm x wn is then a warpgroup's
 * tile (128 threads; wm a multiple of 64, wn of 8 up to 256 and, when it
 * is narrower than the block and B is copied n-major, of 64 (a
 * warpgroup's B tile starts on a 128-byte panel), wm * wn / 128 sums a
 * thread at most 128), the shared tiles take the 128-byte swizzled
 * layout with no padding (kc whole 128-byte rows: multiples of 64, 32
 * for tf32; and bn, or bm for A [K, M], where a 16-bit operand is
 * copied mn-major), and the
 * defaults are 128 x 256 blocks of two 64 x 256 warpgroups on grids of
 * 100 blocks or more, else 128 x 128 (or 64 wide where N asks) of 64-row
 * warpgroups as wide as the block (two blocks an SM), both in three
 * stages of chunks of 64 (the H200 sweeps, bench/RESULTS.md sessions 36
 * and 42); unroll_k is implied. */
typedef struct {
    int64_t bm, bn, wm, wn, kc;
    bool single_buffer, unroll_k;
    int stages;
    int64_t max_shared; /* defaults only: the shared memory a block may take
                           on the target (cg_cuda_optin_shared); 0 or up to
                           48 KiB: two stages within the static 48 KiB;
                           more: three stages with the longest chunk up to
                           64 that fits (the H200 sweep, bench/RESULTS.md
                           session 35) */
    bool wgmma; /* Hopper's warpgroup MMA (above) instead of WMMA */
    int64_t group_m; /* wgmma: blocks launched one after another go down
                        group_m block rows before the next column (Triton's
                        GROUP_SIZE_M), so that the blocks running together
                        share B's tiles in L2; 0 the default (8 where it
                        divides the block rows), 1 plain row-major order */
} ops_tc_config;
/* Schedules C[i, j] = sum_k f(A[i, k]) * f(B[k, j]) (C float32 and 2-D,
 * computed at the root; A, B row-major [M, K], [K, N] of float16,
 * bfloat16, or float32 run as tf32; f a cast to float32 or nothing; with
 * cfg->wgmma also A stored [K, M] and B [N, K]: a 16-bit operand is
 * copied as stored and read mn-major through wgmma's transpose bit, a
 * tf32 one is copied k-major, transposed on the way) on
 * NVIDIA tensor cores through sch_tensorize with the WMMA intrinsics
 * (CUTLASS's and TVM's structure): blocks of bm x bn on blockIdx.y/x,
 * (bm/wm) x (bn/wn) warps on threadIdx.z/y (32 lanes on threadIdx.x), the
 * A and B tiles of each k chunk copied to shared memory with rows padded
 * by 16 bytes (a pipeline of cfg->stages buffers filled with cp.async;
 * double-buffered by default), each warp accumulating its tile in 16x16
 * fragments. cfg NULL: defaults. M, N and K must be multiples of 16;
 * tiles that do not divide them, a depth outside 1..4, or shared tiles
 * over 48 KiB (2 stages or fewer) or 227 KiB (more; the GPU verifier
 * then checks the target's own opt-in limit) are refused: -1 with a
 * message in s's ctx. */
int ops_schedule_tc_gemm(sch_schedule *s, te_tensor *C, te_tensor *A, te_tensor *B,
                         const ops_tc_config *cfg);
/* The checks ops_schedule_tc_gemm makes of a complete config (every knob
 * set: bm, bn, wm, wn, kc non-zero; stages 1..4 or 0 for 2) for an M x N
 * x K GEMM over inputs of type `in` (float16, bfloat16, float32 as tf32)
 * with output type `out` (float32, float16, bfloat16): 0 when the
 * template takes it, else -1 with the template's own message in ctx
 * ("tc_gemm: ..."). *shared_bytes (may be NULL) is set to the shared
 * memory the config's tiles take, bytes, whenever the tiles are
 * well-formed. The search draws and mutates its tensor-core programs with
 * it, and checks the shared memory against the GPU's limit itself. ctx
 * may be NULL (no message). */
int ops_tc_check(te_ctx *ctx, int64_t M, int64_t N, int64_t K, te_dtype in, te_dtype out,
                 const ops_tc_config *cfg, int64_t *shared_bytes);
/* The config ops_schedule_tc_gemm takes for an M x N x K GEMM of `in`
 * inputs and `out` output with only max_shared set (its default; every
 * knob filled in, stages included): 0, or -1 with the message in ctx
 * (ctx may be NULL, as for ops_tc_check). The search's first tensor-core
 * program. */
int ops_tc_default_config(te_ctx *ctx, int64_t M, int64_t N, int64_t K, te_dtype in, te_dtype out,
                          int64_t max_shared, ops_tc_config *cfg);
/* The config ops_schedule_tc_gemm takes for an M x N x K GEMM of `in`
 * inputs on Hopper's warpgroup MMA (cfg->wgmma set, only max_shared
 * given: the defaults above; every knob filled in, stages and group_m
 * included): what matmul's default CUDA schedule runs on sm_90, and the
 * search's first tensor-core program there. 0, or -1 with the message in
 * ctx (ctx may be NULL) when `in` is not float16, bfloat16 or float32
 * (tf32: chunks of 32) or no default tile divides the shape ("tc_gemm:
 * wgmma ..."). */
int ops_tc_wgmma_default_config(te_ctx *ctx, int64_t M, int64_t N, int64_t K, te_dtype in,
                                int64_t max_shared, ops_tc_config *cfg);

/* The CUDA-core GEMM's knobs (ops_schedule_cuda_gemm; TVM's GEMM
 * tutorial structure). Per output dimension (m rows, n columns) a block
 * tile of vt x th x in: vt virtual threads (a thread's outputs in vt
 * groups th x in apart, so a warp's shared reads do not conflict), th
 * threads (threadIdx.y for m, threadIdx.x for n) and in consecutive
 * outputs a thread; kt: the k chunk of A and B staged in shared memory;
 * stages: the pipeline's depth over those chunks (0 or 1 none, 2 to 4,
 * sch_multi_buffer). */
typedef struct {
    int64_t vt_m, th_m, in_m, vt_n, th_n, in_n, kt;
    int stages;
} ops_cuda_gemm_config;
/* Schedules C = A B (C float32, [M, N] or batched [B, M, N], one reduce
 * axis; A, B placeholders) on CUDA cores: blocks of the tile above,
 * accumulators in registers (a local cache_write), A and B tiles of each
 * k chunk in shared memory fetched by the block's threads (float4 where
 * the tiles divide the shape). cfg NULL: the default (2 x 8 x 4 a
 * dimension, kt 8, no pipeline). -1 with "cuda_gemm: ..." in s's ctx for
 * a C that is no matmul, a knob below 1, over 1024 threads, a depth
 * outside 0..4, or a pipeline whose tiles do not divide M, N and K. */
int ops_schedule_cuda_gemm(sch_schedule *s, te_tensor *C, te_tensor *A, te_tensor *B,
                           const ops_cuda_gemm_config *cfg);

/* The register tile of the CPU default convolution's micro-kernel
 * (vectors over output channels, an accumulator packed on them): `lanes`
 * output channels (vlen or 2 vlen, dividing vec_extent) x `rows` x `cols`
 * output elements, at most 12 accumulator vectors. */
typedef struct {
    int64_t lanes, rows, cols;
} ops_packed_tile;
/* The tile ops_default_schedule picks for a vectorized axis of vec_extent
 * elements (output channels), `rows` (image rows; the tile's rows divide
 * them) and `cols` (image columns; with col_tail the tile's columns need
 * not divide them), vlen float32 lanes per vector register. The rule:
 * the least FMA cost, each tile costed by its columns over min(accumulators,
 * 10)/10 of peak (10 independent accumulators keep two FMA pipes of 4-5
 * cycles' latency busy), ties to no tail, more accumulators, two vectors,
 * wider rows. The tuner starts its search from it. Returns false (out
 * untouched) when vec_extent is not a whole number of vectors or an
 * extent is below 1. */
bool ops_packed_tile_shape(int64_t vec_extent, int64_t rows, int64_t cols, int vlen,
                           bool col_tail, ops_packed_tile *out);
/* The reduction order of a packed tile: with the taps outside, a window's
 * taps (reduce axes for which te_reduce_axis_slides holds) run outside
 * blocks of OPS_PACKED_REDUCE_BLOCK steps of the last other reduce axis
 * (the largest divisor up to it): rc.o, ry, rx, rc.i for an NCHW
 * convolution; else the reduce axes keep their order, the taps innermost.
 * Outside for a tile of several rows or of more than one vector of lanes:
 * unrolled inside, the taps' overlapping inputs are loaded once and kept
 * live across taps, which spills a two-row tile's accumulators and gains
 * nothing for two vectors; a one-vector, one-row tile (8 lanes x 7
 * columns: 7 broadcasts per weight vector) is load-bound, and the shared
 * inputs (9 loads a row instead of 21) win it 15-20 % (bench/RESULTS.md,
 * session 18). */
#define OPS_PACKED_REDUCE_BLOCK 16
bool ops_packed_taps_outside(const ops_packed_tile *t, int vlen);
/* The block of that reduce axis, of `extent` steps: its largest divisor
 * up to OPS_PACKED_REDUCE_BLOCK (1 for an extent below 1). The default
 * schedule and the tuner's heuristic programs both block by it. */
int64_t ops_packed_reduce_block(int64_t extent);
/* The order of a packed tile's parallel loop: the row tiles outside the
 * blocks of lanes (n, y.o, k.o, x.o for an NCHW convolution) when the
 * operand packed along the lanes (the weights, all of them) fits in
 * OPS_PACKED_ROWS_OUTSIDE_BYTES, else inside them
 * (n, k.o, y.o, x.o). Outside, every block of output channels reuses a
 * row block's inputs from the cache while the weights stay cached across
 * row blocks; inside, each block of channels keeps its own weights cached
 * while it streams the whole input, once per block. One thread, rows
 * outside: r50_1x1 (64 KiB of weights, a 3 MiB input read by 4 blocks of
 * channels) 6 % fewer cycles, r50_c2 and the stem (144 and 37 KiB) within
 * 1 %, r50_c3 (576 KiB) 5 % more (bench/RESULTS.md, session 19). */
#define OPS_PACKED_ROWS_OUTSIDE_BYTES (256 * 1024)
bool ops_packed_rows_outside(const te_tensor *operand); /* false for NULL */

/* The naive double-precision reference: computes every output of w from
 * the input tensors (ins[i] matches w->inputs[i]: CPU, compact, w's dtype
 * and shape) into out[o], a caller-owned array of the output's element
 * count, row-major. Returns 0, or -1 with a message in w's ctx when an
 * input does not match. */
int ops_reference(const ops_workload *w, DLTensor *const *ins, double *const *out);

/* Tolerance to compare w's outputs against its reference with:
 * |got - want| <= atol + rtol |want| holds for a correct kernel on inputs
 * uniform in [-1, 1) (it grows with the reduction length). A 16-bit
 * output (rounded once from a float32 sum) has rtol 2^-10 (float16) or
 * 2^-7 (bfloat16): twice the unit roundoff. A matmul with tf32=1 adds
 * 2^-9 K to atol (its GPU kernels cut A and B to tf32's 10 mantissa bits,
 * rounded by WMMA, truncated by wgmma: each product off by at most
 * 2^-9). 16-bit tensors are read and
 * written as their bit patterns (ops_reference, ops_check_module; inputs
 * rounded to nearest even). */
void ops_tolerance(const ops_workload *w, double *rtol, double *atol);

/* Checks a compiled module of w: fills fresh inputs uniform in [-1, 1)
 * from `seed`, poisons the outputs with NaN, calls function `fn` (NULL:
 * "default") with w's args (through rt_prepare, so a module built with
 * constant_args works as well), compares with the reference at
 * ops_tolerance. A CUDA module (rt_module_device kDLCUDA) is called on
 * device copies of the tensors on GPU 0 (poisoned outputs included) and
 * its outputs copied back; without a driver or GPU that fails (-1, the
 * driver's message in w's ctx). Returns the number of mismatching output elements (0:
 * correct), or -1 with the reason in w's ctx when the call fails. */
int64_t ops_check_module(const ops_workload *w, rt_module *m, const char *fn, uint64_t seed);

/* ------------------------------------------------------------------ */
/* Workloads of registered builders (a user's own operators)           */
/* ------------------------------------------------------------------ */

/* A workload as its builder made it, in some ctx: the tensors to lower
 * with (inputs then outputs, the order of cg_build args and rt_call
 * tensors) and the outputs. Arrays live in the ctx arena. The autotuner
 * knows it as tune_workload. */
typedef struct ops_built {
    int nargs;
    te_tensor **args;
    int nouts;
    te_tensor **outs;
    double flops; /* FLOP of one call; 0 when unknown */
    /* Bit i: args[i] is constant (ops_workload.constant_args): on the
     * CPU, candidates are built with it and timed without the stages
     * that read only constants (cg_build_options.constant_args). */
    uint64_t constant_args;
    /* The float32 products may run on tensor cores with their operands
     * cut to tf32 (matmul tf32=1; ops_workload.tf32): the tuner then
     * proposes tensor-core schedules for float32 GEMMs too. */
    bool tf32;
} ops_built;

/* Builds the workload named `key` in ctx. Returns 0, or -1 with an error
 * in ctx. Must build the same computation every time (same stage order):
 * the tuner's runner processes, the tuning database's replay
 * (tdb_apply_best) and the tuner itself each rebuild it from the key. */
typedef int (*ops_builder_fn)(te_ctx *ctx, const char *key, ops_built *out);

/* Registers a builder for the workload keys that start with `prefix`
 * (computations outside the registry: a user's fused operator, tests),
 * for every module of the process: the tuner (tune_register_builder is
 * this function), the tuning database (tdb_apply_best, tdb_commit_*) and
 * the ops lookups below. Keys of the form "OP(...)" keep tools' output
 * uniform; any text works. A prefix registered again gets the new
 * builder; otherwise the first registered prefix that matches a key wins.
 * Thread-safe. At most 32 prefixes of at most 127 bytes; returns 0, or -1
 * (prefix or fn NULL, prefix too long, table full). */
int ops_register_builder(const char *prefix, ops_builder_fn fn);
/* The builder registered for key (the first prefix that matches), or
 * NULL. */
ops_builder_fn ops_builder_for(const char *key);
/* True when key can be built: a builder is registered for it, or its
 * operator name (the text before '(') names an operator of the registry
 * (the key may still be malformed: ops_build_key says how). */
bool ops_has_builder(const char *key);
/* Builds `key` in ctx: the registered builder whose prefix matches, else
 * the registry (ops_from_key; out then copies the workload's tensors).
 * Returns 0, or -1 with an error in ctx: the builder's or the registry's,
 * or for a key that neither knows (ops_has_builder false) "workload 'K'
 * has no builder: ...". */
int ops_build_key(te_ctx *ctx, const char *key, ops_built *out);

LOOM_API_END
#ifdef __cplusplus
}
#endif
#endif /* LOOM_OPS_H */
