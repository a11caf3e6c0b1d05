/*
 * loom/schedule.h — schedules over tensor expressions: stages, the
 * primitives, the transform-step log and its replay, bound inference, and
 * lowering to loop IR.
 *
 * Model: TVM te.Schedule (stages, IterVar relations split/fuse, InferBound,
 * ScheduleOps) and Ansor's transform steps (auto_scheduler/transform_step):
 * every primitive appends a step naming its stage and iterators by index,
 * so that a log replayed on a freshly built copy of the same computation
 * reproduces the same program.
 *
 * Axes are te_expr VARs: the compute op's axes, its reduce axes, and the
 * new VARs that split and fuse return. A stage is named by the tensor its
 * op produces.
 *
 * Errors: every primitive returns 0 (or a non-NULL result) on success and
 * -1 (or NULL) on misuse, leaving the schedule unchanged and recording a
 * message in the ctx that names the primitive, the stage, the axis and the
 * rule, e.g. "split: factor 0 for axis 'i' of stage 'C' must be positive".
 */
#ifndef LOOM_SCHEDULE_H
#define LOOM_SCHEDULE_H

#include "loom/api.h"
#include "loom/te.h"
#include "loom/tir.h"

#ifdef __cplusplus
extern "C" {
#endif
LOOM_API_BEGIN

typedef struct sch_schedule sch_schedule;

/* A schedule for the computation producing `outs` (the op of every tensor
 * they depend on gets a stage, placeholders included). The schedule lives
 * in ctx's arena. NULL with an error if outs is empty or holds a
 * placeholder only. */
sch_schedule *sch_create(te_ctx *ctx, int nouts, te_tensor *const *outs);
/* A copy that can be changed independently (the log and the derived
 * stage tables are copied; nodes are shared). */
sch_schedule *sch_copy(const sch_schedule *s);
te_ctx *sch_ctx(const sch_schedule *s);

/* ---- loop-structure primitives ---- */

/* Splits `axis` of t's stage into outer and inner with inner extent
 * `factor` (> 0). A factor that does not divide the extent leaves a guard
 * on the last outer iteration. outer/inner may be NULL. */
int sch_split(sch_schedule *s, te_tensor *t, te_expr *axis, int64_t factor, te_expr **outer,
              te_expr **inner);
/* Splits into `nparts` (> 0) outer iterations. */
int sch_split_nparts(sch_schedule *s, te_tensor *t, te_expr *axis, int64_t nparts,
                     te_expr **outer, te_expr **inner);
/* Fuses n >= 2 axes adjacent in the current loop order, outermost first,
 * into one. */
int sch_fuse(sch_schedule *s, te_tensor *t, int n, te_expr *const *axes, te_expr **fused);
/* Puts the n distinct axes in this relative order (others keep theirs). */
int sch_reorder(sch_schedule *s, te_tensor *t, int n, te_expr *const *axes);
/* split x by xf and y by yf, then reorder to (xo, yo, xi, yi). */
int sch_tile(sch_schedule *s, te_tensor *t, te_expr *x, te_expr *y, int64_t xf, int64_t yf,
             te_expr **xo, te_expr **yo, te_expr **xi, te_expr **yi);

/* ---- annotations ---- */

/* Vectorize a data-parallel axis (its loop must become innermost by the
 * time of lowering to vectorize; otherwise it stays scalar and the
 * vectorizer says why). */
int sch_vectorize(sch_schedule *s, te_tensor *t, te_expr *axis);
int sch_unroll(sch_schedule *s, te_tensor *t, te_expr *axis);
/* Run a data-parallel axis's iterations on the thread pool. */
int sch_parallel(sch_schedule *s, te_tensor *t, te_expr *axis);
/* Bind to "blockIdx.x|y|z", "threadIdx.x|y|z" or "vthread". Validated and
 * stored; lowered by the CUDA target only (the llvm and c targets reject a
 * schedule with bound axes). */
int sch_bind(sch_schedule *s, te_tensor *t, te_expr *axis, const char *thread_tag);
/* Pragmas on a loop: "auto_unroll_max_step" (value >= 0) and
 * "unroll_explicit" (value 0 or 1). The unroll pass caps what they copy
 * (tir_pass_unroll: 4,096 statements a function). */
int sch_pragma(sch_schedule *s, te_tensor *t, te_expr *axis, const char *pragma, int64_t value);
/* Replaces the loop nest of stage t from leaf `axis` inwards with a call
 * of a tensor intrinsic (TVM's tensorize). Intrinsics for the GPU
 * (target cuda; one warp, or for wgmma one warpgroup, executes a call):
 *   "wmma.mma"    t in scope wmma.accumulator: t[i, j] = sum over k of
 *                 a[i, k] * b[k, j], a in wmma.matrix_a and b in
 *                 wmma.matrix_b, both float16 or bfloat16 (each cast to
 *                 float32; 16x16x16 tiles) or both float32 (rounded to
 *                 tf32; 16x16x8). Its reduction's init becomes a fill.
 *   "wmma.load_a" t in wmma.matrix_a copied from a shared or global
 *                 tensor (16x16 tiles; 16x8 for float32);
 *   "wmma.load_b" likewise in wmma.matrix_b (16x16; 8x16 for float32);
 *   "wmma.store"  t (global or shared, float32) copied from a
 *                 wmma.accumulator tensor (16x16 tiles), or t float16
 *                 holding float16(accumulator) (rounded on the way out).
 *   "wgmma.mma"   t in scope wgmma.accumulator: t[i, j] = sum over k of
 *                 a[i, k] * b[k, j] on tiles of 64 x n x 16 (n, the
 *                 tensorized column loop's extent: 8 to 256, a multiple
 *                 of 8, the accumulator's whole width), a and b float16
 *                 or bfloat16 (64 x n x 8 for float32, as tf32) in
 *                 shared memory in the swizzled layout (sch_swizzle), 2-D,
 *                 each read in either order of its dimensions (a [i, k]
 *                 or [k, i], b [k, j] or [j, k]). An operand whose
 *                 stored 128-byte rows run along k is k-major: its tile
 *                 starts on an m (n) multiple of 8 and a k step of 32
 *                 bytes; otherwise mn-major (16-bit types only; tf32
 *                 needs both k-major): on a k multiple of 8 and a 128-byte
 *                 panel of m (n). The 128 threads of a warpgroup
 *                 (threadIdx.x extent 128) execute it, sm_90a.
 *   "wgmma.store" t (global or shared; float32, or float16/bfloat16
 *                 rounded from the sums) copied from a wgmma.accumulator
 *                 tensor, tiles of 64 x (the accumulator's width).
 * And for the CPU (target llvm, a CPU with AVX512-BF16: Cooper Lake,
 * Sapphire Rapids, Zen 4 and later; elsewhere the build fails naming the
 * CPU):
 *   "x86.dpbf16"  t float32, t[..., i, j] = sum over k of
 *                 float32(a[i, k]) * float32(b[k, j]) with a and b
 *                 bfloat16 (read through any copy or packing): the two
 *                 loops from `axis` step j by 16 lanes and k by a pair,
 *                 in either order; one VDPBF16PS adds the pair's two
 *                 products to each lane. t's 16 lanes and a's pair are
 *                 contiguous; b's tile is 16 contiguous pairs (pack b's
 *                 copy by 16 on j, then by 2 on k: the VNNI layout
 *                 [K/2, N/16, 16, 2]); global or local memory; no bounds
 *                 guards on the tile. The init becomes a 16-lane store.
 * The loops from `axis` inwards must be exactly the intrinsic's (two,
 * three for mma: one per tile dimension, in any order), each of the
 * tile's extent, over a computation of the intrinsic's form; fragment
 * tensors are indexed [row, column] and memory tiles have contiguous rows
 * or columns with a row stride that is a multiple of 16 bytes and a
 * first element 32-byte aligned. The step records the intrinsic; the
 * match is checked when the schedule is lowered, with an error naming the
 * stage and the rule broken. 0 or -1 (unknown intrinsic, an axis not a
 * loop of t, t already tensorized). */
int sch_tensorize(sch_schedule *s, te_tensor *t, te_expr *axis, const char *intrin);
/* Double buffering (TVM's double_buffer; software pipelining in two
 * stages): t, a shared-memory stage computed at a loop L of its consumer,
 * gets two copies of its buffer; the copy for iteration k + 1 of L is
 * issued before iteration k's computation (on the GPU as asynchronous
 * copies, cp.async, on sm_80 and later), so loading overlaps computing.
 * Checked when lowering (t in scope shared, computed at a serial loop):
 * an error names the stage and the rule. 0 or -1 (t a placeholder or an
 * output). */
int sch_double_buffer(sch_schedule *s, te_tensor *t);
/* A software pipeline of `buffers` stages (CUTLASS's and Triton's
 * "stages", Halide's ring_buffer): t's buffer gets that many copies and
 * the copies for iterations k + 1 .. k + buffers - 1 of L are in flight
 * while iteration k computes (on sm_80 and later, buffers - 1 groups of
 * cp.async outstanding). buffers 2 is sch_double_buffer; 2 to
 * SCH_MAX_BUFFERS, else -1 with "double_buffer: stage 'T' asks for N
 * buffers; ...". The same checks as sch_double_buffer otherwise. */
#define SCH_MAX_BUFFERS 8
int sch_multi_buffer(sch_schedule *s, te_tensor *t, int buffers);
/* Stores t's shared-memory buffer in the 128-byte swizzled layout that
 * Hopper's tensor cores read their operands in (wgmma's "128B swizzle";
 * CUTLASS's Swizzle<3,4,3>, Triton's NVMMA shared layout): the rows are
 * cut into panels of 128 bytes stored one after the other, and within
 * each run of 8 rows of a panel the 16-byte chunks of row r are permuted
 * by XOR with r mod 8 — so the 8 rows of a tensor core's 8x8 core matrix,
 * and 8 threads copying one 16-byte chunk each down a column, fall in
 * different banks. Every access goes through the layout; it only changes
 * where the elements live. Checked when lowering, with an error naming
 * the stage and the rule: t in scope shared on a GPU target, a 2-D
 * buffer (before double_buffer's copies) whose rows are a multiple of 128
 * bytes and whose row count is a multiple of 8, no storage_align, and
 * vector accesses that stay within one 16-byte chunk. 0, or -1 when t is
 * a placeholder or an output. */
int sch_swizzle(sch_schedule *s, te_tensor *t);
/* sch_swizzle with t's 2-D buffer [R, C] stored as the swizzled layout of
 * its transpose [C, R]: its columns are the 128-byte rows (so R * bytes
 * a multiple of 128 and C of 8). A copy of an mn-major operand, B [K, N]
 * or A [K, M], becomes k-major in shared memory, as tf32's wgmma reads
 * both operands (CUTLASS's K-major smem layout of an MN-major global
 * tensor). Indices and readers are unchanged; a vectorized copy along
 * R's rows is done element by element (only a column is contiguous
 * there). The same errors as sch_swizzle. */
int sch_swizzle_transposed(sch_schedule *s, te_tensor *t);

/* ---- compute location ---- */

/* Computes t inside `consumer`'s loop `axis`, over the region the loop
 * needs (bound inference). consumer reads t directly or through other
 * stages (TVM's attach path: a shared tile computed at the loop of the
 * stage that reads its per-thread copy); then every stage that reads t
 * directly must be computed inside that loop too, else sch_lower fails
 * naming the stage read outside. Errors (-1, message in ctx): t is a
 * placeholder or an output, consumer is t, consumer does not read t at
 * all, consumer is inlined, axis is not a loop of consumer. */
int sch_compute_at(sch_schedule *s, te_tensor *t, te_tensor *consumer, te_expr *axis);
/* Substitutes t's body into its consumers (t must not be a reduction nor
 * an output). */
int sch_compute_inline(sch_schedule *s, te_tensor *t);
/* Computes t at the root (the default). */
int sch_compute_root(sch_schedule *s, te_tensor *t);

/* ---- data-flow primitives ---- */

/* A copy of t in `scope` ("global", "local", "shared") that the listed
 * readers read instead of t. Returns the new tensor (its stage is new). */
te_tensor *sch_cache_read(sch_schedule *s, te_tensor *t, const char *scope, int nreaders,
                          te_tensor *const *readers);
/* t's computation moves into a new stage writing a buffer in `scope`; t's
 * stage becomes a copy out of it. Returns the cache tensor. t must be a
 * compute op. */
te_tensor *sch_cache_write(sch_schedule *s, te_tensor *t, const char *scope);
/* Factors the reduction of t over reduce axis `axis` into a new stage
 * whose extra data-parallel dimension (at position factor_axis) is that
 * axis; t's stage then reduces over it. Returns the rfactor tensor.
 * Call it before compute_at: t attached by compute_at, or another stage
 * attached to t's loops, is an error naming both stages (rfactor rebuilds
 * t's loops). */
te_tensor *sch_rfactor(sch_schedule *s, te_tensor *t, te_expr *axis, int factor_axis);
/* Pads the stride of t's buffer dimension `axis` (a root axis of t) to
 * (k * factor + offset) elements: avoids bank or set conflicts. */
int sch_storage_align(sch_schedule *s, te_tensor *t, te_expr *axis, int64_t factor,
                      int64_t offset);
/* Packs the buffer of intermediate stage t: dimension `axis` (a root axis
 * of t, extent E) is split into E/factor blocks of `factor`; the block
 * index becomes the outermost dimension, the position in the block the
 * innermost. t of shape [K, N] packed on N by 16 is stored as
 * [N/16, K, 16]; readers' index n becomes (n / 16, ..., n % 16). This is
 * GEMM operand packing (Goto and van de Geijn, 2008) and TVM's NCHW[x]c
 * layout; pack a cache_read copy to pack an input. Returns the packed
 * tensor, whose stage replaces t's: t no longer names a stage; schedule
 * the loops (outer, the other axes in order, inner) through the result; a cache_write stage packed on its
 * vectorized axis keeps a register tile's vectors contiguous. Errors
 * (NULL): t is a placeholder or an output; factor not positive or not
 * dividing E; t already scheduled (pack first) or has stages computed at
 * its loops. */
te_tensor *sch_pack(sch_schedule *s, te_tensor *t, te_expr *axis, int64_t factor);
/* The VNNI layout x86.dpbf16 reads its column operand in (Intel's and
 * oneDNN's for bfloat16 dot products): t's dimension `dim` (the columns,
 * extent N) packed by nb, then its dimension `pair` (the reduction, K)
 * by 2, so that t [K, N] is stored as [N/nb, K/2, nb, 2] (dimensions
 * numbered as in t; other dimensions keep their order between the
 * blocks and the lanes). Two sch_packs; returns the packed tensor, whose
 * stage replaces t's. Errors (NULL): dim or pair not a dimension of t's
 * stage, or the same one; then sch_pack's (nb not dividing N, K odd,
 * ...). */
te_tensor *sch_pack_vnni(sch_schedule *s, te_tensor *t, int dim, int pair, int64_t nb);

/* ---- the transform-step log ---- */

typedef enum {
    SCH_STEP_SPLIT,
    SCH_STEP_FUSE,
    SCH_STEP_REORDER,
    SCH_STEP_ANNOTATE,
    SCH_STEP_PRAGMA,
    SCH_STEP_COMPUTE_AT,
    SCH_STEP_COMPUTE_INLINE,
    SCH_STEP_COMPUTE_ROOT,
    SCH_STEP_CACHE_READ,
    SCH_STEP_CACHE_WRITE,
    SCH_STEP_RFACTOR,
    SCH_STEP_STORAGE_ALIGN,
    SCH_STEP_PACK,
    SCH_STEP_TENSORIZE,
    SCH_STEP_DOUBLE_BUFFER,
    SCH_STEP_SWIZZLE,
    SCH_STEP_KIND_COUNT
} sch_step_kind;
const char *sch_step_kind_name(sch_step_kind k); /* "split", "fuse", ... */

typedef enum {
    SCH_ANN_NONE = 0,
    SCH_ANN_VECTORIZE,
    SCH_ANN_UNROLL,
    SCH_ANN_PARALLEL,
    SCH_ANN_BIND
} sch_annotation;

/* One step. Stages are named by index in the schedule's stage list, axes
 * by index in that stage's current leaf order (root order for
 * storage_align, pack and rfactor). */
typedef struct {
    sch_step_kind kind;
    int stage;
    int iter;            /* split, annotate, pragma, tensorize, rfactor, storage_align,
                            pack (root axis), compute_at (the consumer's
                            leaf index) */
    int64_t value;       /* split: factor or nparts; pragma value;
                            storage_align and pack factor; rfactor
                            factor_axis; double_buffer: buffers (0 = 2) */
    int64_t value2;      /* storage_align offset */
    bool nparts;         /* split by nparts */
    int n;               /* fuse, reorder: count; cache_read: readers */
    int *iters;          /* fuse, reorder: leaf indices (arena) */
    int target_stage;    /* compute_at: consumer stage */
    int *stages;         /* cache_read: reader stages (arena) */
    sch_annotation ann;
    const char *str;     /* bind: thread tag; pragma: name; cache: scope;
                            tensorize: intrinsic */
} sch_step;

int sch_num_steps(const sch_schedule *s);
const sch_step *sch_get_step(const sch_schedule *s, int i);
/* A schedule for outs with the steps applied in order: the same program
 * as the schedule that recorded them, when outs is the same computation
 * rebuilt. NULL with an error naming the failing step. */
sch_schedule *sch_replay(te_ctx *ctx, int nouts, te_tensor *const *outs, int nsteps,
                         const sch_step *steps);
/* Applies one step to s (what sch_replay does for each). */
int sch_apply_step(sch_schedule *s, const sch_step *step);

/* ---- stages (read-only view) ---- */

int sch_num_stages(const sch_schedule *s);
/* The tensor stage i produces now (after cache and rfactor rewrites). */
te_tensor *sch_stage_tensor(const sch_schedule *s, int i);
/* The stage index of t, or -1. */
int sch_stage_of(const sch_schedule *s, const te_tensor *t);
/* Current loop order of stage i: n axes. The array is arena-owned and
 * valid until the next primitive on s. */
int sch_stage_leaf_axes(const sch_schedule *s, int i, te_expr *const **axes);

/* The i-th data-parallel axis of a compute tensor (e.g. of the tensor
 * sch_cache_write returns), or NULL with an error. */
te_expr *sch_axis(te_tensor *t, int i);
/* The i-th reduce axis of a compute tensor whose body is a reduction. */
te_expr *sch_reduce_axis(te_tensor *t, int i);

/* ---- lowering ---- */

/* Bound inference, loop-nest construction (with guards for
 * non-divisible splits) and realization of every stage: a tir_func named
 * `name` whose params are the buffers of args, in order. args must hold
 * every placeholder the outputs read and every output. The result is
 * before tir_run_pipeline (sch_lower_program up to schedule_ops).
 * Padding guards: on the CPU (a schedule without thread bindings) a sum
 * whose source multiplies a factor that is zero outside a condition
 * (select(c, x, 0), inlined or a stage of its own, as a convolution's
 * zero padding) skips the terms where it is zero, as oneDNN's direct
 * convolutions do: exact for finite values, but a weight of inf or NaN
 * facing the padding no longer makes the output NaN. Conditions over a
 * vectorized loop, or false on under 1 % of their variables' iterations,
 * are not used (schedule/pad_guard.c). */
tir_func *sch_lower(sch_schedule *s, int nargs, te_tensor *const *args, const char *name);
/* A lowering split for constant arguments (weights: the same values in
 * every call). A *pre-computed stage* is a compute stage at the root, not
 * an output and not an argument, with no stage computed at its loops,
 * that reads (through inlined stages too) only constant arguments and
 * other pre-computed stages: a packed copy of the weights, say. Such
 * stages run once, in `precompute`, instead of in every call; `main` does
 * the rest. This is Ansor's layout rewrite for pre-transformed weights
 * (TVM auto_scheduler, LayoutRewriteOption) and what TVM's constant
 * folding does to a layout transform of bound parameters.
 * Both functions take the args (in order), then one buffer per
 * pre-computed stage (in stage order): precompute writes them, main reads
 * them. */
typedef struct {
    tir_func *precompute; /* named NAME__precompute; NULL when no stage qualifies */
    tir_func *main;       /* named NAME; without pre-computed stages sch_lower's function */
    int nstages;          /* pre-computed stages */
    te_tensor **stages;   /* their tensors (arena-owned): the extra parameters */
} sch_split_lowering;

/* Lowers s over args as sch_lower does, with bit i of constant_args
 * marking args[i] constant. Returns 0 and fills *out (functions before
 * tir_run_pipeline), or -1 with an error in the ctx: a bit at or past
 * nargs (or past 63), a constant argument that is not an input
 * (placeholder), and every error of sch_lower. */
int sch_lower_constants(sch_schedule *s, int nargs, te_tensor *const *args,
                        uint64_t constant_args, const char *name, sch_split_lowering *out);
/* ---- the lowering list (schedule/lower_list.c) ----
 * Every step from a schedule to what a target's code generator takes, in
 * one function whose body is the list (model: Halide's Lower.cpp):
 *   check_arguments  args are every input read and every output, once
 *   inline           inlined stages substituted into their readers
 *   precompute_split with constant_args: the stages computed once
 *   bound_inference  each stage's realised region and loop extents
 *   check_attach     no stage read outside the loop it is computed at
 *   buffers          one per argument and per realised stage
 *   schedule_ops     the loop nests (one function; two with pre-computed
 *                    stages, each running the passes below)
 *   storage_flatten, legalize_half (when 16-bit floats occur), simplify,
 *   loop_partition, simplify,
 *   remove_noop,
 *   vectorize, [gpu: inject_vthread, simplify,] unroll, storage_rewrite,
 *   simplify, remove_noop, double_buffer, [gpu: thread_sync, verify_gpu]
 *   split_host_device  gpu: the kernels and their launch (target input)
 * sch_lower, sch_lower_constants, tir_run_pipeline, cg_build, the tuner's
 * scorer and cm_extract_schedule all run this list, with the flags below.
 *
 * LOOM_DUMP_IR=DIR writes the program after each step (from
 * schedule_ops on; the steps before it as text: the stages' bodies after
 * inline, their regions and extents after bound_inference) as
 * DIR/<name>-NN-<step>.txt, and the steps' times to DIR/times.txt (see
 * tir_run_pipeline). Not for loop_nest_only runs (sch_lower).
 *
 * IR verification: in Debug builds (NDEBUG unset), or with the
 * environment variable LOOM_VERIFY_IR=1 (LOOM_VERIFY_IR=0 turns it off
 * in a Debug build), tir_verify runs after schedule_ops and after every
 * pass; a program it rejects fails the list with "IR verifier: after
 * step 'STEP' of function 'NAME': <what tir_verify says>". The verifier
 * blames steps, not the user: a rule the loop nests (schedule_ops, or a
 * tir_run_pipeline input) already break because of the computation or
 * the schedule is not verified after the later steps — accesses outside
 * a tensor that the computation itself makes (cg_build's bounds_check
 * reports those at run time) and, on gpu, a store outside any
 * thread-bound loop (verify_gpu reports that, naming stage and loop). */
typedef struct {
    const char *name;       /* the function's name; NULL or "": "default" */
    uint64_t constant_args; /* bit i: args[i] is constant (sch_lower_constants) */
    /* Flags of the pass steps: gpu (target cuda) and its limits,
     * skip_vectorize, vectorize_why, unroll_hints_only,
     * skip_loop_partition (tir_pipeline_options). */
    tir_pipeline_options passes;
    /* The cost model's view of a program, what the tuner scores and
     * cm_extract_schedule extracts: unrolling only marked
     * (unroll_hints_only), on a CPU no loop partitioning, on gpu no
     * split_host_device. Sets those flags over `passes`. */
    bool model_view;
    /* Stop after schedule_ops (sch_lower, sch_lower_constants). */
    bool loop_nest_only;
} sch_lower_options;

typedef struct {
    tir_func *main;         /* named NAME; on gpu the function split into `device` */
    tir_func *precompute;   /* NAME__precompute, with pre-computed stages; else NULL */
    int nstages;            /* pre-computed stages */
    te_tensor **stages;     /* their tensors: main's and precompute's extra params */
    tir_device_program *device; /* gpu, unless model_view or loop_nest_only */
} sch_lowered;

/* Runs the list above on s over args. Returns 0 and fills *out (all
 * arena-owned), or -1 with an error in the ctx naming the step's rule:
 * the errors of sch_lower_constants, of each pass, of verify_gpu and
 * split_host_device, constant arguments on gpu, and the IR verifier's.
 * opts may be NULL (the build of a CPU target). */
int sch_lower_program(sch_schedule *s, int nargs, te_tensor *const *args,
                      const sch_lower_options *opts, sch_lowered *out);
/* sch_lower + tir_run_pipeline, printed (arena-owned text), for reading. */
const char *sch_lower_text(sch_schedule *s, int nargs, te_tensor *const *args);

LOOM_API_END
#ifdef __cplusplus
}
#endif
#endif /* LOOM_SCHEDULE_H */
