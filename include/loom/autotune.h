/*
 * loom/autotune.h — the Ansor-style autotuner: compute-DAG analysis,
 * sketch generation by derivation rules, random annotation, evolutionary
 * search ranked by a pluggable scorer (the cost model), and sandboxed
 * measurement in runner processes.
 *
 * Sources: Zheng et al., "Ansor: Generating High-Performance Tensor
 * Programs for Deep Learning", OSDI 2020 (sketch rules, annotation,
 * evolutionary search, task scheduler), and TVM auto_scheduler
 * (sketch_policy_rules.cc, search_policy/utils, measure.cc).
 *
 * Vocabulary.
 *   task     — a workload (rebuilt on demand in any te_ctx from its key or
 *              a registered builder) plus a target ("llvm").
 *   sketch   — a program structure with holes: which stages are inlined,
 *              which are multi-level tiled ("SSRSRS" on CPU), which get a
 *              cache_write, which fuse into their consumer. It lists its
 *              holes (tile sizes, parallel granularity, unroll depth,
 *              compute location).
 *   program  — a sketch with every hole filled (tune_program: a sketch
 *              index and a small value vector; cheap to copy). Applying it
 *              to a fresh schedule of the workload gives a transform-step
 *              log; programs are deduplicated by that log.
 *
 * Measurement never runs candidate code in the tuning process: a runner
 * process (the loom-runner program installed beside libloom, see
 * TUNE_RUNNER_ENV; or, for a builder only this program has, this program
 * re-executed: tune_runner_maybe_run) rebuilds the workload, replays the
 * log, compiles it (`threads`
 * runners compile in parallel, each next build going to the first runner
 * free) and, one at a time, times it. A runner that crashes or exceeds its timeout is
 * killed and restarted; the candidate gets an error code.
 *
 * Errors: functions taking a ctx return NULL/-1 with the reason in
 * te_ctx_errmsg(ctx); the tuner's own errors go to tune_errmsg-style
 * buffers named per function. Nothing aborts on bad input.
 */
#ifndef LOOM_AUTOTUNE_H
#define LOOM_AUTOTUNE_H

#include "loom/api.h"
#include <stdbool.h>
#include <stdint.h>

#include "loom/cost_model.h"
#include "loom/ops.h"
#include "loom/schedule.h"
#include "loom/te.h"
#include "loom/tir.h"
#include "loom/tuning_db.h"

#ifdef __cplusplus
extern "C" {
#endif
LOOM_API_BEGIN

/* ------------------------------------------------------------------ */
/* Workloads                                                           */
/* ------------------------------------------------------------------ */

/* A workload built in some ctx (ops_built, loom/ops.h): the tensors to
 * lower with (inputs then outputs, the order of cg_build args), the
 * outputs, the FLOP of one call and the constant arguments. */
typedef ops_built tune_workload;

/* Builds the workload named `key` in ctx (ops_builder_fn). Returns 0, or
 * -1 with an error in ctx. Must build the same computation every time
 * (same stage order). */
typedef ops_builder_fn tune_build_fn;

/* Registers a builder for workloads whose key starts with `prefix` (for
 * computations outside the ops registry: a user's own operator, tests);
 * the same as ops_register_builder, whose registry the tuning database
 * sees too (tdb_apply_best rebuilds such a workload with it). Runner
 * processes are other processes: register it from a plugin
 * (tune_load_plugin), which loom-runner loads too; or register it before
 * tune_runner_maybe_run, and the runners of its workloads are this
 * program re-executed (without either, tune_measurer_new refuses its
 * workloads naming both ways). A key of
 * the form "OP(...)" keeps the tools' output uniform (autotune --op OP
 * --shape S forms "OP(S)"). At most 32 builders; returns 0 or -1. */
int tune_register_builder(const char *prefix, tune_build_fn fn);
/* Builds `key`: a registered builder whose prefix matches, else the ops
 * registry (ops_build_key). 0 or -1 with an error in ctx; a key that
 * neither knows gets "workload 'K' has no builder: ...". */
int tune_build_workload(te_ctx *ctx, const char *key, tune_workload *out);
/* The workload key the tools form from --op OP --shape SHAPE (SHAPE may
 * be NULL: ""): for an operator of the ops registry its canonical key
 * (ops_canonical_key); else, when a builder is registered for the key
 * "OP(SHAPE)" (SHAPE exactly as written; the builder parses the text in
 * the parentheses, so the same text finds the same records again), that
 * key, checked by building it once. An arena string in ctx, or NULL with
 * an error in ctx: "unknown op 'X' (known: ...)" when neither knows OP,
 * "bad shape 'S' for OP: ..." with the registry's or the builder's
 * reason. */
const char *tune_workload_key(te_ctx *ctx, const char *op, const char *shape);
/* Bytes a measurement of w holds: its arguments, plus the double-precision
 * reference of its outputs that every candidate is checked against. */
double tune_workload_bytes(const tune_workload *w);
/* Refuses a workload whose measurement could not fit in this machine's
 * physical memory (tune_workload_bytes above it), before anything is
 * built. Returns 0 when it fits; -1 with a malloc'd message in *err (err
 * may be NULL) naming the key, the bytes needed and the bytes the machine
 * has, or saying why the key does not build. */
int tune_check_fits(const char *key, char **err);

/* ------------------------------------------------------------------ */
/* Plugins: a shared library of a user's operators                     */
/* ------------------------------------------------------------------ */

/* The entry point a plugin defines (extern "C" in C++): it registers the
 * plugin's builders with tune_register_builder and returns 0, or
 * non-zero when it cannot (tune_load_plugin then fails). It is called
 * once per process that loads the plugin: the tuning process and each of
 * its runner processes. Declared here so that a plugin's definition is
 * checked against it. */
int loom_register_ops(void);
#define TUNE_PLUGIN_ENTRY "loom_register_ops"
/* The environment variable through which runner processes learn the
 * plugins to load: the real paths loaded so far, ':'-separated. Set by
 * tune_load_plugin; read by tune_runner_maybe_run in a runner. */
#define TUNE_PLUGINS_ENV "LOOM_TUNE_PLUGINS"

/* Loads the plugin at `path` (a file path, relative to the working
 * directory or absolute; the library search path is not used): dlopen,
 * then its entry point loom_register_ops, then the path joins
 * TUNE_PLUGINS_ENV so that runner processes started afterwards
 * (tune_measurer_new, tune_task) load it before serving (a runner that
 * cannot answers every build with an instantiation error naming the
 * plugin). A plugin already loaded (same real path) is not loaded again:
 * returns 0. The library stays loaded for the life of the process. Call
 * it from main before any tuning starts (it sets an environment
 * variable: not while other threads read the environment). Returns 0, or
 * -1 with a malloc'd message in *err (err may be NULL) naming the file:
 * "plugin 'P': No such file or directory", "plugin 'P': cannot load it:
 * <dlerror>", "plugin 'P' has no entry point loom_register_ops: ...",
 * "plugin 'P': loom_register_ops() returned 3", a path with ':', more
 * than 16 plugins. */
int tune_load_plugin(const char *path, char **err);

/* ------------------------------------------------------------------ */
/* Compute-DAG analysis                                                */
/* ------------------------------------------------------------------ */

/* Caps of the analysis. A workload over either is refused (ignoring a
 * stage or an edge would make the search space wrong): tune_dag_analyze
 * fails with "autotune: 40 stages; the tuner handles at most
 * TUNE_MAX_STAGES = 32" or "autotune: stage 'S' has more than
 * TUNE_MAX_EDGES = 8 producers or consumers"; the sketch generators
 * prefix it with "autotune: workload with outputs 'O': ". */
#define TUNE_MAX_STAGES 32
#define TUNE_MAX_EDGES 8

typedef struct {
    te_tensor *tensor;
    bool is_placeholder;
    bool is_output;
    bool is_reduction;       /* body is a REDUCE */
    bool is_elementwise;     /* no reduction, reads every input at exactly
                                its own axes (same shape) */
    bool strictly_inlinable; /* compute, no reduction, not an output, reads
                                inputs only at affine indices of its axes
                                (padding, broadcasts, elementwise) */
    bool has_data_reuse;     /* reduction where some input read ignores a
                                data-parallel axis: tiling pays */
    bool needs_tiling;       /* Ansor's NeedsMultiLevelTiling */
    bool needs_rfactor;      /* reduction much longer than its output */
    int nconsumers, consumers[TUNE_MAX_EDGES]; /* stage indices */
    int nproducers, producers[TUNE_MAX_EDGES];
} tune_stage_info;

typedef struct {
    int nstages; /* in sch_create's stage order */
    tune_stage_info stages[TUNE_MAX_STAGES];
} tune_dag;

/* Analyses the computation producing outs, stage indices as in
 * sch_create(ctx, nouts, outs). Returns 0, or -1 (more than
 * TUNE_MAX_STAGES stages or TUNE_MAX_EDGES edges). */
int tune_dag_analyze(te_ctx *ctx, int nouts, te_tensor *const *outs, tune_dag *out);

/* ------------------------------------------------------------------ */
/* Sketches                                                            */
/* ------------------------------------------------------------------ */

/* Caps of sketch generation; none truncates silently.
 * - TUNE_MAX_UNITS, TUNE_MAX_HOLES (and 3 * TUNE_MAX_HOLES hole values):
 *   a sketch that needs more is refused, since one missing unit or hole
 *   would leave a stage unscheduled: the generators fail with "autotune:
 *   workload with outputs 'O' needs more than TUNE_MAX_UNITS = 8 units in
 *   a sketch" (or "... TUNE_MAX_HOLES = 48 holes (or 144 hole values) in
 *   a (GPU) sketch"). Only the optional packed twin of a CPU tiling is
 *   left out instead (counted as dropped, below).
 * - TUNE_MAX_PARTIAL_SKETCHES: sketches under construction (CPU); the
 *   variants of a stage past it are left out by design, as are sketches
 *   past `max` (the first max are kept): the _ex generators count them
 *   in *dropped and tune_task reports the count in
 *   tune_summary.sketches_dropped.
 * - TUNE_MAX_SKETCHES: the `max` tune_task passes. */
#define TUNE_MAX_UNITS 8
#define TUNE_MAX_HOLES 48
#define TUNE_MAX_SKETCHES 8
#define TUNE_MAX_PARTIAL_SKETCHES 32

typedef enum {
    TUNE_UNIT_ANNOTATE,   /* no tiling: fuse outer axes parallel, vectorize inner */
    TUNE_UNIT_TILE,       /* multi-level tiling SSRSRS */
    TUNE_UNIT_TILE_CACHE, /* cache_write local, tile the cache, fuse into the copy */
    TUNE_UNIT_TILE_FUSE,  /* tile, fuse into the (elementwise) consumer stage */
    TUNE_UNIT_RFACTOR,    /* split the reduction, rfactor the inner part */
    /* Compute location of an inlinable stage with a branch (padding):
     * one LOCATION hole, 1 = inline, 2 = root (outer axes fused parallel,
     * innermost vectorized), 3.. = computed at outer spatial tile loop
     * (value - 3) of its consumer's unit (innermost vectorized); Ansor's
     * InitChangeComputeLocation / MutateComputeLocation. */
    TUNE_UNIT_PLACE,
    /* Packing of input `stage` read by the tiled stage `consumer`: a
     * cache_read copy computed at the root, packed (sch_pack) on the
     * dimension the consumer's vectorized axis indexes by that axis's
     * innermost tile factor, so the register tile's reduction loop reads
     * one contiguous panel (GEMM packing; TVM's layout rewrite). No
     * holes: the factor follows the consumer's tile sizes. */
    TUNE_UNIT_PACK,
    /* GPU (tune_generate_sketches_gpu). Multi-level tiling "SSSRRSRS":
     * cache_write "local" of the stage, its tile computed at the thread
     * loop of the holder, the cache copy (consumer -1); or, fused, the
     * stage itself computed at the thread loop of its single elementwise
     * consumer (allocated there: per thread, in registers); the
     * holder's block / vthread / thread tile loops fused and bound to
     * blockIdx.x / vthread / threadIdx.x. Holes: one SPLIT of 4 factors
     * (vthread, thread, inner, innermost) per spatial axis, one SPLIT of
     * 2 per reduce axis, one GPU_UNROLL. */
    TUNE_UNIT_GPU_TILE,
    /* GPU: cache_read "shared" of stage `stage` for the tiled stage
     * `consumer` (its only reader), computed at the innermost outer
     * reduction tile loop, copied cooperatively (loops fused, split by the
     * block's thread count, bound to threadIdx.x, a vectorized inner part
     * of GPU_FETCH lanes where the tiles allow). */
    TUNE_UNIT_GPU_SHARED,
    /* GPU: a stage without data reuse: outer axes fused, split by a
     * GPU_THREADS count, bound to blockIdx.x / threadIdx.x (a reduction
     * accumulates in a "local" cache, serially in its thread). */
    TUNE_UNIT_GPU_FLAT,
    /* CPU: as TILE_CACHE, but the vectorized axis is spatial axis vec_dim
     * (not the last one): the local accumulator is packed on it by its
     * innermost factor (its vectors contiguous), that level goes
     * innermost, and the input read at that axis is packed alike (a PACK
     * unit) — the NCHW[x]c idea of TVM's x86 conv2d: vectors over output
     * channels when the image rows are short. Same holes as TILE_CACHE.
     * Also for a stage with an elementwise consumer (conv2d_bias_relu),
     * beside tiling with fusion: the consumer then keeps its own loops. */
    TUNE_UNIT_TILE_CACHE_PACKED,
    /* GPU: cross-thread reduction (Ansor's RuleCrossThreadReduction) of a
     * reduction stage without data reuse whose reduced length exceeds a
     * warp (32): its spatial axes fused on blockIdx.x, its reduce axes
     * fused and split by a GPU_THREADS count, the inner part bound to
     * threadIdx.x (the partials combined by an allreduce). */
    TUNE_UNIT_GPU_XREDUCE,
    /* GPU: a 2-D matmul-shaped reduction on tensor cores (MetaSchedule's
     * cuda-tensorcore rules): the stage (and its cast to float16 or
     * bfloat16, the unit's consumer, else -1) scheduled by the tensor-core
     * GEMM template ops_schedule_tc_gemm with the config of the unit's
     * seven GPU_TC holes: bm, bn, wm, wn, kc, unroll_k (0/1), stages
     * (1..4), in that order; vec_dim: the inputs' bytes (2 or 4), plus 8
     * for a bfloat16 output, plus 16 for a unit that may run on Hopper's
     * warpgroup MMA (tune_generate_sketches_gpu_for on sm_90), which has
     * two holes more: the engine (0 WMMA, 1 wgmma: ops_tc_config.wgmma)
     * and group_m (wgmma: 1, 4 or 8; WMMA: 0), and whose wgmma programs
     * keep unroll_k 1. For float16 and bfloat16 inputs cast to
     * float32, or float32 inputs of a workload with tf32 set, with M, N
     * and K multiples of 16. */
    TUNE_UNIT_GPU_TENSORCORE,
    /* CPU with AVX512-BF16: a float32 sum over one axis k of bfloat16
     * products whose column operand is an input (a bfloat16 matmul's
     * C_acc), tiled SSRSRS with its 16-lane vectors and k's pairs
     * innermost, tensorized with "x86.dpbf16", the column operand packed
     * [K/2, N/nb, nb, 2] at the root, the tile computed in its
     * elementwise consumer (the cast back to bfloat16; else a local
     * cache_write copy). Holes as TILE_CACHE, but the last axis's count
     * vectors of 16 and the reduction's count pairs. */
    TUNE_UNIT_TILE_DOT
} tune_unit_kind;

typedef enum {
    /* nvals factors of an axis (its inner levels, innermost last; the
     * outermost level is implicit). The innermost factor f is a divisor of
     * the extent of at most 64, or, when the hole's `tail` is set, any
     * integer 1..TUNE_MAX_TAIL_INNER (at most the extent): the axis is
     * split by f first, leaving a tail (a likely() guard that loop
     * partitioning splits off) when f does not divide it; the other
     * factors' product divides ceil(extent / f), so only the innermost
     * level has a tail. Without `tail` the product divides the extent.
     * tune_split_valid checks the rule. */
    TUNE_HOLE_SPLIT,
    TUNE_HOLE_PARALLEL, /* how many outer loops to fuse into the parallel loop: 1..max */
    TUNE_HOLE_UNROLL,   /* auto_unroll_max_step: an index into {0,16,64,512}; with
                           unroll_explicit (the loops copied, as TVM on the CPU) */
    TUNE_HOLE_LOCATION, /* compute location: fusion level 1..max (TILE_CACHE,
                           TILE_FUSE); for PLACE see TUNE_UNIT_PLACE */
    TUNE_HOLE_VECTOR,   /* vector split of the innermost axis (a factor) */
    /* GPU holes: values are indices 0..extent-1 into a table. */
    TUNE_HOLE_GPU_UNROLL,  /* auto_unroll_max_step: {0, 16, 64, 512, 1024} */
    TUNE_HOLE_GPU_THREADS, /* threads per block: {32, 64, 128, 256, 512, 1024} */
    TUNE_HOLE_GPU_FETCH,   /* cooperative-fetch vector lanes: {1, 2, 4} */
    TUNE_HOLE_GPU_TC       /* a knob of the tensor-core GEMM (TUNE_UNIT_GPU_TENSORCORE),
                              its value itself; extent: the largest value */
} tune_hole_kind;

typedef struct {
    tune_hole_kind kind;
    int unit;      /* the unit it belongs to */
    int offset;    /* first value in tune_program.vals */
    int nvals;     /* SPLIT: levels - 1 factors, innermost last; others 1 */
    int64_t extent;/* SPLIT/VECTOR: the axis extent; others: the maximum value */
    bool reduce;   /* SPLIT: a reduce axis */
    bool tail;     /* SPLIT: the innermost factor may leave a tail (see
                      TUNE_HOLE_SPLIT). Set on the spatial axes of CPU
                      multi-level tiles except the vectorized one (its
                      inner factor stays a divisor: no vector tail), and
                      on an rfactor's split (the tail's partial sums read
                      the reduction's identity); never on a tile's reduce
                      axes or GPU holes. VECTOR: besides the divisors, 4,
                      8 or 16 lanes with a masked tail; set where the
                      extent is no multiple of 8 (a softmax row of 100). */
} tune_hole;

/* Largest innermost factor of a SPLIT hole with `tail` that need not
 * divide the extent: 16 covers register tiles such as 6 rows x 2 vectors
 * (12 accumulators of 16 AVX2 registers, the OpenBLAS/BLIS sgemm kernel
 * shape) on extents 6 does not divide. */
#define TUNE_MAX_TAIL_INNER 16

/* True when v (h->nvals values) is a valid filling of SPLIT hole h: every
 * factor >= 1; the innermost f a divisor of h->extent of at most 64 or,
 * with h->tail, any f <= min(TUNE_MAX_TAIL_INNER, extent); the other
 * factors' product dividing ceil(extent / f). False for other kinds. */
bool tune_split_valid(const tune_hole *h, const int64_t *v);

typedef struct {
    tune_unit_kind kind;
    int stage;    /* stage (index in the original schedule) */
    int consumer; /* TILE_FUSE: consumer stage; PLACE: the stage reading it;
                     PACK: the tiled stage reading it; TILE_CACHE(_PACKED):
                     -1, or the elementwise tail whose loops compute the
                     tile's copy-out (the stage itself then inlined); else -1 */
    int vec_dim;  /* TILE_CACHE_PACKED: the vectorized spatial axis; PACK:
                     the dimension of the input packed; else unused */
} tune_unit;

typedef struct {
    int ninline;
    int inlined[TUNE_MAX_STAGES]; /* stages always computed inline */
    int nunits;
    tune_unit units[TUNE_MAX_UNITS];
    int nholes;
    tune_hole holes[TUNE_MAX_HOLES];
    int nvals;                    /* values a program of this sketch holds */
    char desc[256];               /* "C: cache_write, tile SSRSRS, fuse" ... */
} tune_sketch;

/* Generates the CPU sketches of a workload (rules applied last stage to
 * first: skip, always-inline, multi-level tiling, tiling with consumer
 * fusion, add cache_write, add rfactor; the ordered list is in
 * autotune/rules/targets.c, one file per rule beside it). An inlinable
 * stage with a branch (a select: padding) read by a single stage is not
 * always inlined: it gets a TUNE_UNIT_PLACE unit whose LOCATION hole
 * picks inline, root or an outer tile loop of its consumer. The SPLIT holes of a tiled stage's
 * spatial axes other than the vectorized one have `tail` set (their
 * innermost factor need not divide the extent: TUNE_HOLE_SPLIT).
 * Epilogue fusion: a register tile with an accumulator (TILE_CACHE,
 * TILE_CACHE_PACKED) of a stage whose readers all end in one annotated
 * elementwise output, through stages inlined or annotated that read at
 * exactly their own axes (a fused group's bias, residual Add, Relu, Clip,
 * gelu's Erf chain), also gets a sketch whose tile is copied out by that
 * tail's loops (the unit's consumer; the stage and the annotated stages
 * between inlined), placed right before the unfused one. Returns
 * the count (1..max) and fills sketches, or -1 with an error in ctx. */
int tune_generate_sketches(te_ctx *ctx, const tune_workload *w, tune_sketch *sketches, int max);

/* As tune_generate_sketches; *dropped (dropped may be NULL) is set to how
 * many sketches were left out by TUNE_MAX_PARTIAL_SKETCHES, by `max` or
 * for lack of units (a packed twin): 0 when the whole space is kept. A
 * lower bound when the partial cap was hit (a dropped partial sketch
 * would have grown into one or more). max < 1 is an error ("autotune: no
 * room for a sketch (max 0)"). */
int tune_generate_sketches_ex(te_ctx *ctx, const tune_workload *w, tune_sketch *sketches,
                              int max, int *dropped);

/* Generates the GPU sketches of a workload (Ansor §4.1 and TVM
 * sketch_policy_rules.cc for GPU, applied last stage to first): skip
 * placeholders, always inline strictly inlinable stages (padding
 * included), multi-level tiling "SSSRRSRS" with a "local" cache_write for
 * stages with data reuse (fused into a single elementwise consumer when
 * there is one: TUNE_UNIT_GPU_TILE), shared-memory cache_read with
 * cooperative fetching of each producer read only by a tiled stage
 * (TUNE_UNIT_GPU_SHARED; an inlined padding stage is computed into its
 * shared copy), and thread binding of every other stage
 * (TUNE_UNIT_GPU_FLAT). Cross-thread reduction (TVM's
 * RuleCrossThreadReduction, for stages without data reuse): when a flat
 * reduction stage reduces more than 32 elements, a first sketch has it as
 * TUNE_UNIT_GPU_XREDUCE, and the second is the all-flat one; otherwise
 * one sketch. Not generated: rfactor, and cross-thread reduction of
 * stages with data reuse. Tensor cores (MetaSchedule's cuda-tensorcore
 * rules): where a tiled stage is a 2-D matmul-shaped sum over float16 or
 * bfloat16 inputs cast to float32 (or float32 inputs of a workload with
 * tf32 set), with M, N and K multiples of 16 and an output of float32 or
 * a 16-bit cast of it, a first sketch schedules it with the tensor-core
 * template (TUNE_UNIT_GPU_TENSORCORE), the CUDA-core sketches following.
 * Returns the count (1..max: the first max sketches) or -1 with an error
 * in ctx. */
int tune_generate_sketches_gpu(te_ctx *ctx, const tune_workload *w, tune_sketch *sketches,
                               int max);
/* As tune_generate_sketches_gpu; *dropped (dropped may be NULL) is set to
 * how many sketches past max were left out (0 or 1). */
int tune_generate_sketches_gpu_ex(te_ctx *ctx, const tune_workload *w, tune_sketch *sketches,
                                  int max, int *dropped);
/* As tune_generate_sketches_gpu_ex for a CUDA target ("cuda -arch=sm_90";
 * without -arch GPU 0's architecture, or sm_75 where there is no GPU, as
 * cg_build takes): where it is sm_90, a tensor-core unit over float16 or
 * bfloat16 inputs whose shape Hopper's warpgroup MMA template takes
 * (ops_tc_wgmma_default_config) may run on either engine (two more
 * holes, see TUNE_UNIT_GPU_TENSORCORE); elsewhere, and in
 * tune_generate_sketches_gpu(_ex), which know no target, WMMA only. The
 * search and `autotune --list-sketches` generate with it. -1 with an
 * error in ctx for a malformed or non-CUDA target ("autotune: target 'llvm'
 * is not a CUDA target; GPU sketches need one"). */
int tune_generate_sketches_gpu_for(te_ctx *ctx, const tune_workload *w, const char *target,
                                   tune_sketch *sketches, int max, int *dropped);
/* True for a sketch of tune_generate_sketches_gpu (it has GPU units). */
bool tune_sketch_is_gpu(const tune_sketch *sk);
/* True when target parses (cg_target_parse) as a CUDA target ("cuda",
 * "cuda -arch=sm_90", a GPU's key "cuda sm_90 NAME"); false for any other
 * target and for a malformed one ("cudax", "cuda -O3"). */
bool tune_target_is_cuda(const char *target);
/* The GPU limits programs are annotated and verified against: GPU 0's
 * max threads per block and shared memory per block where a device
 * exists, else 1024 threads and 48 KiB (49152 bytes). */
tir_gpu_limits tune_gpu_limits(void);
/* The limits for tuning `target` (a CUDA target string): GPU 0's where a
 * device exists (the programs run there); else 1024 threads and the
 * shared memory the target's architecture lets a block opt in to
 * (cg_cuda_optin_shared: 227 KiB on sm_90, 163 KiB on sm_80; with no
 * -arch, cg_cuda_default_arch's), so that a search without a local GPU
 * (a rank 0 sending its candidates to GPU workers, a fake measurer) keeps
 * the deep pipelines the target takes. tune_gpu_limits() for a target
 * that does not parse. */
tir_gpu_limits tune_gpu_limits_for(const char *target);

/* ------------------------------------------------------------------ */
/* Programs                                                            */
/* ------------------------------------------------------------------ */

typedef struct {
    int sketch;
    int64_t vals[TUNE_MAX_HOLES * 3];
} tune_program;

/* Random generator (xorshift64*); state must be non-zero. */
uint64_t tune_rand(uint64_t *state);

/* Host SIMD width in float32 lanes: the vector_lanes of target "llvm"
 * (cg_target: 16 with AVX-512F, 8 with AVX or AVX2, else 4). The CPU
 * search space (sketches, programs) is the host's: the tuner measures
 * CPU targets on the host. */
int tune_host_vector_lanes(void);
/* The vector register width in bytes that the cost model's features
 * (vec_lane_waste) assume for target: 16 on cuda (a thread's widest
 * load, a float4); else the host's (4 x tune_host_vector_lanes: the
 * tuner measures CPU targets on the host). NULL counts as a CPU target. */
int tune_target_vector_bytes(const char *target);

/* Fills every hole of sketch sk at random: tile sizes from the
 * factorisations of each extent (the innermost first: uniform over the
 * divisors <= 64, joined for a hole with `tail` by every integer up to
 * TUNE_MAX_TAIL_INNER; then the outer levels from the divisors of what
 * is left, ceil(extent / innermost)), parallel granularity,
 * unroll depth from {0,16,64,512}, compute location. GPU sketches: tile
 * sizes whose thread-level product is within tune_gpu_limits' threads
 * per block (and at least 32 where the tile allows), vthreads <= 8, at
 * most 256 outputs per thread; unroll from {0,16,64,512,1024}; fetch
 * lanes; threads of flat stages (rejection sampling, so the program may
 * still break a shared-memory limit: the GPU verifier filters those). */
void tune_program_random(const tune_sketch *sk, int sketch_index, uint64_t *rng,
                         tune_program *out);
/* Programs of CPU sketch sk (its index sketch_index; w the workload it
 * was generated from) whose holes follow the rules of the operator
 * library's CPU default schedules rather than chance (autotune/seed.c,
 * each unit by its rule's heuristic in autotune/rules/):
 * a packed register tile (TUNE_UNIT_TILE_CACHE_PACKED) of
 * ops_packed_tile_shape's size, with and without a column tail, each with
 * the reduction in the default's order (ops_packed_taps_outside) and in
 * the other (a window's taps inside or outside the channels), each with
 * its row tiles in the default's place (ops_packed_rows_outside) and in
 * the other (outside or inside the blocks of output channels); a GEMM
 * register tile (TUNE_UNIT_TILE_CACHE) of 6 rows by 2 vectors of columns
 * (4 with 16 lanes); padding at the root, or inlined where the tile's
 * stage reads it plane by plane in channel blocks whose lanes share its
 * condition (a depthwise convolution on NCHW[x]c); the reduction unsplit; outer
 * loops fused parallel. vlen: float32 lanes per vector
 * (tune_host_vector_lanes). The search measures them first and evolution
 * starts from them (TVM MetaSchedule seeds its search with its schedule
 * rules' traces). Writes up to max programs to out and returns how many:
 * 0 for GPU sketches, sketches with more than one register tile or with
 * another unit (tiling with fusion, rfactor), and extents the rules do
 * not fit (output channels not a whole number of vectors). Every program
 * returned satisfies tune_split_valid for its SPLIT holes. */
int tune_program_heuristic(const tune_sketch *sk, int sketch_index, const tune_workload *w,
                           int vlen, tune_program *out, int max);
/* The most programs tune_program_heuristic returns for one sketch. */
#define TUNE_MAX_HEURISTIC 8
/* The structural program of CPU sketch sk (its index sketch_index; w the
 * workload it was generated from): each hole filled from its stage's
 * shape and reads alone (autotune/seed.c, each unit by its rule's
 * structural fill in autotune/rules/), for any computation, a user's
 * operator or a fused subgraph included: a register tile of up to 4 rows
 * by 2 vectors of columns (a blocked convolution's tile on NCHW[x]c), the
 * reduction outside it, the outer loops fused parallel; an elementwise or
 * pooling stage vectorized where its reads walk memory along the last
 * axis, its fewest outer loops parallel that give 64 iterations; an
 * rfactor into up to 4 vectors of partial results; padding at the root,
 * or, where a plain tiling's stage reads it plane by plane (window taps
 * on rows and columns only: a depthwise convolution), per plane at the
 * planes' parallel loop, the rows and columns tiled inside it; inlined
 * where it is read so in channel blocks (NCHW[x]c, the block's lanes one
 * test of its condition).
 * These are tune_default_schedule's rules; the search measures the
 * structural program of every sketch that has no heuristic program first
 * (the depthwise convolution's packed heuristic tile gathers its data,
 * and its structural program is the library default's speed). vlen:
 * float32 lanes per vector. GPU: a tensor-core sketch's program is the
 * tensor-core template's default config (ops_tc_default_config; the
 * search measures it first). Writes *out and returns 1; 0 for another
 * GPU sketch, a sketch with a packed register tile (its unpacked twin has
 * the fill), or NULL arguments. */
int tune_program_structural(const tune_sketch *sk, int sketch_index, const tune_workload *w,
                            int vlen, tune_program *out);
/* A good schedule for any workload without records (a fused subgraph, a
 * user's operator), derived from its structure, deterministic (no
 * measurement): the first of these that applies and lowers (sch_lower).
 * 1. The heuristic programs (tune_program_heuristic) of w's sketches
 *    (tune_generate_sketches, in its order: a tile with its elementwise
 *    tail in its copy-out before the same tile without), a tile on
 *    AVX512-BF16's dot product first (TUNE_UNIT_TILE_DOT: a bfloat16
 *    matmul's, where the host has it), then a packed register tile's
 *    sketches (the default NCHW convolution's), then the GEMM tile's (the
 *    default matmul's); a packed tile whose
 *    vectorized axis also indexes another input (a depthwise
 *    convolution's data: a gather) is skipped.
 * 2. A sketch's holes filled by rules (sketches without a tail fused
 *    into a tile; elementwise and injective stages,
 *    reductions without data reuse: softmax, layer_norm, pooling, tiles
 *    without a packed operand), the sketches ranked by how their units
 *    suit their stages (a register tile with an accumulator or fused with
 *    its consumer before a plain tiling, a packed operand, an rfactor into
 *    vectors for a reduction whose reads run along the reduced axis, else
 *    the reduction annotated in place): padding at the root (inlined
 *    into a consumer reading it in channel blocks); outer loops
 *    fused parallel (the fewest reaching 64 iterations); the innermost
 *    axis vectorized by its widest power-of-two divisor up to a vector (a
 *    reduction's only where its reads walk that axis one element a step
 *    and none reads across it: no gathers); rfactor by 4, 2 or 1 vectors dividing the reduction at least twice,
 *    computed (with its partial results) in the parallel row loop of its
 *    only consumer when that reads it at exactly its leading axes
 *    (softmax, layer_norm: a row stays in cache), else at the root;
 *    register tiles of 4 rows (a divisor of the rows near it, else 4 with
 *    a tail) by up to 2 vectors of columns, the reduction outside the
 *    tile, unrolled 16 steps, the accumulator at the innermost outer tile
 *    loop. A blocked convolution (NCHW[x]c) tiles output columns by
 *    channel blocks sized to the vector registers: up to 8 by 2 with 32
 *    registers (AVX-512), 2 by 4 (else 4 by 2, 8 by 1) with 16 (AVX2).
 * 3. A workload more stages than a sketch holds (an unrolled LSTM):
 *    sch_create with every stage's outer loops fused parallel and its
 *    innermost axis vectorized, dot products (reads along the last
 *    reduce axis) split by a vector and rfactored.
 * 4. sch_create with each output's outer loops fused parallel and (not a
 *    reduction) its innermost axis split by a vector and vectorized where
 *    a vector divides it.
 * 5. The plain sch_create schedule.
 * target: "llvm" (with options: vectors of the target's width,
 * cg_target.vector_lanes) or "c" (the host's width). Returns a new
 * schedule in ctx (w built in ctx), or NULL with an error in ctx: w NULL
 * or without outputs ("autotune: tune_default_schedule: no workload
 * ..."), a target cg_target_parse refuses (its message), cuda
 * ("autotune: tune_default_schedule: unknown target 'cuda' (llvm, c)"),
 * or sch_create's error (it refuses the workload). Never fails for a
 * workload sch_create accepts. *how (how may be NULL) receives what was
 * chosen, an arena string in ctx: "sketch 2 (C: cache_write, ...),
 * heuristic program 0", "sketch 1 (...), rules" (", row reductions in
 * their consumers' rows" where they are), "sch_create, every stage
 * parallel and vectorized, dot products rfactored", "sch_create, outputs
 * parallel and vectorized" or "sch_create". */
sch_schedule *tune_default_schedule(te_ctx *ctx, const tune_workload *w, const char *target,
                                    const char **how);
/* Mutates one hole of p (tile size: moves a prime factor between two
 * levels, or, for a hole with `tail`, half of the time draws another
 * innermost factor and keeps of each outer factor what still divides;
 * unroll; parallel granularity; compute location). Returns 0, or -1 when
 * the sketch has no hole to mutate. The result stays valid
 * (tune_split_valid holds for every SPLIT hole). */
int tune_program_mutate(const tune_sketch *sk, uint64_t *rng, tune_program *p);
/* Moves p one step on one CPU hole picked at random: a split hole's
 * smallest prime factor of one level into an adjacent level (the result
 * valid: tune_split_valid), a compute location or parallel depth one up
 * or down within [1, extent], an unrolling depth one up or down: a
 * local-search step (TVM MetaSchedule's MutateTileSize likewise moves a
 * factor of a tile size between two levels, but between any two; here
 * only adjacent ones). The search measures such neighbours of its
 * fastest programs each round (half of each round's batch).
 * Returns 0, or -1 with p unchanged when sk, rng or p is NULL, sk is a
 * GPU sketch or has no CPU hole, or no try found a step. */
int tune_program_neighbour(const tune_sketch *sk, uint64_t *rng, tune_program *p);
/* Applies program p of sketch sk to a fresh schedule of w (built in ctx).
 * Returns the schedule, or NULL with the failing primitive's error in
 * ctx (an invalid program). */
sch_schedule *tune_program_apply(te_ctx *ctx, const tune_workload *w, const tune_sketch *sk,
                                 const tune_program *p);
/* The step log of s in its one canonical text, in ctx's arena: byte for
 * byte what tdb_schedule_to_json writes, the database stores and the
 * search hashes (tune_hash) to deduplicate programs, so two schedules
 * are the same program to the tuner exactly when their keys are equal.
 * NULL when out of memory. */
const char *tune_steps_key(te_ctx *ctx, const sch_schedule *s);
/* Re-derives the program of a stored step log: the sketch and hole values
 * whose tune_program_apply gives exactly this log (same tune_steps_key),
 * so a measured program from the database can seed a new search.
 * sketches: tune_generate_sketches of workload `key` (built here in
 * private ctxs with tune_build_workload). Method: for each sketch, a
 * coordinate search over the holes (each hole's candidate values: for
 * SPLIT/VECTOR holes the valid factor tuples made of the log's split
 * factors, innermost tails included, else the hole's whole range), maximising the multiset overlap of the
 * applied log's steps with the stored ones, then an exact comparison.
 * Returns 1 and *out filled when found, 0 when no sketch reproduces the
 * log (a log written by hand or by another version of the rules), -1 with
 * a malloc'd message in *err (err may be NULL) when the log does not
 * parse or replay, or the workload does not build. Cost: a few hundred
 * applications per sketch (milliseconds on small workloads). */
int tune_program_from_steps(const char *key, const tune_sketch *sketches, int nsketches,
                            const char *steps_json, tune_program *out, char **err);
/* 64-bit FNV-1a hash of a string: te_hash_str, under the tuner's name. */
uint64_t tune_hash(const char *s);

/* ------------------------------------------------------------------ */
/* Scorer (cost-model seam)                                            */
/* ------------------------------------------------------------------ */

/* Ranks candidates: higher score = expected faster. The funcs are the
 * lowering list's model view of each candidate (sch_lower_program,
 * model_view). predict returns 0 or -1.
 * update learns from measured candidates of the workload the scorer knows
 * as `task` (labels are normalised per workload: the search passes
 * tune_scorer.task, which tune_warm_start assigns): latencies in seconds,
 * <= 0 for a failed candidate. NULL predict: no search at all, each
 * round measures programs of random annotation (random sampling); a
 * predict that returns random scores gives the evolutionary search with
 * Ansor's random model (autotune --random-model). NULL update: the
 * scorer never learns. */
typedef struct {
    void *user;
    int task; /* the searched workload's id in the scorer's sample set */
    int (*predict)(void *user, int n, const tir_func *const *funcs, double *scores);
    int (*update)(void *user, int task, int n, const tir_func *const *funcs,
                  const double *latencies);
} tune_scorer;

/* ------------------------------------------------------------------ */
/* Measurement                                                         */
/* ------------------------------------------------------------------ */

/* The argument that turns a program into a runner process. */
#define TUNE_RUNNER_FLAG "--loom-tune-runner"

/* The runner program, installed with the library (libexec directory;
 * in a build tree, beside libloom). A measurer (tune_measurer_new,
 * tune_task) starts it as `loom-runner --loom-tune-runner` with this
 * process's environment, so it loads the plugins of TUNE_PLUGINS_ENV and
 * has every builder of libloom (graph groups' "onnx(" keys). Where it is:
 * the path in the environment variable TUNE_RUNNER_ENV when set (a path
 * that is no executable file is an error naming it), else the first of
 * LIBDIR/<libexec dir of the install>, LIBDIR/../libexec, LIBDIR/../bin
 * and LIBDIR itself that holds it (LIBDIR: the directory of the libloom
 * the process loaded). When none does, a program that called
 * tune_runner_maybe_run is re-executed instead; any other gets "no
 * loom-runner program to measure with (tried P1, P2, ...)". */
#define TUNE_RUNNER_NAME "loom-runner"
#define TUNE_RUNNER_ENV "LOOM_RUNNER"

/* When argv[1] is TUNE_RUNNER_FLAG, loads the plugins TUNE_PLUGINS_ENV
 * names (those the tuning process loaded with tune_load_plugin), serves
 * measurement requests on stdin/stdout until EOF and exits the process;
 * else it notes that this program can serve as a runner, and returns.
 * loom-runner is this call. A program needs it only for builders it
 * registers itself, outside a plugin (tune_register_builder): their
 * workloads are measured by re-executing the program, so call it first
 * thing in main, after registering them. Every other workload is
 * measured by loom-runner, so a program that embeds Loom (an
 * interpreter, a server, an MPI rank) need not call it. */
void tune_runner_maybe_run(int argc, char **argv);

typedef enum {
    TUNE_OK = 0,
    TUNE_ERR_INSTANTIATION = 1, /* the log does not apply to the workload */
    TUNE_ERR_COMPILE_HOST = 2,  /* lowering or host compile failed (or crashed) */
    TUNE_ERR_COMPILE_DEVICE = 3,
    TUNE_ERR_RUNTIME_DEVICE = 4, /* the run failed or crashed (signal) */
    TUNE_ERR_WRONG_ANSWER = 5,
    TUNE_ERR_BUILD_TIMEOUT = 6,
    TUNE_ERR_RUN_TIMEOUT = 7,
    TUNE_ERR_UNKNOWN = 8
} tune_error_code;
/* "ok", "instantiation", "compile host", ... */
const char *tune_error_name(int code);

/* Test hooks: make a candidate misbehave inside the runner. */
typedef enum {
    TUNE_HOOK_NONE = 0,
    TUNE_HOOK_SEGV,        /* the run raises SIGSEGV */
    TUNE_HOOK_HANG,        /* the run never returns */
    TUNE_HOOK_WRONG,       /* the output is corrupted after the run */
    TUNE_HOOK_BUILD_HANG,  /* the build never returns */
    TUNE_HOOK_BUILD_CRASH, /* the build raises SIGSEGV */
    /* The run times as usual, then reports its samples as 3 ms and the
     * baseline's as 1 ms (FULL) or 2 ms (HALF: a host at half the speed):
     * the baseline's arithmetic, free of timing noise. */
    TUNE_HOOK_BASELINE_FULL_SPEED,
    TUNE_HOOK_BASELINE_HALF_SPEED,
    /* The first timed sample set (CPU) is replaced by one that drifts
     * (1, 1.5, 2, 2.5, 3 ms...), as under a host that moved: the runner
     * must see the spread and measure again (TUNE_SPREAD_LIMIT). */
    TUNE_HOOK_DRIFT
} tune_hook;

/* On the CPU a candidate's timed samples are taken after its calls have
 * run for TUNE_WARM_MS milliseconds (the runner's pages and the thread
 * pool's threads awake, the caches and the clock settled), and a sample
 * set whose median is more than TUNE_SPREAD_LIMIT above its fastest
 * sample is taken again, up to TUNE_SPREAD_RETRIES times, keeping the
 * set with the smallest spread: a set that spread says the host changed
 * speed while it was taken (another process's burst, a frequency step),
 * so its median would rank the program by the load it met. */
#define TUNE_WARM_MS 10.0
#define TUNE_SPREAD_LIMIT 0.10
#define TUNE_SPREAD_RETRIES 2

/* Where candidates are measured: see tune_measure_backend below. */
typedef struct tune_measure_backend tune_measure_backend;

typedef struct {
    int threads;           /* parallel builds (0: 1; at most 64). On the CPU
                              the measurer keeps up to 4 runner processes
                              per build so that a slow build does not hold
                              the others; on the GPU one. */
    double build_timeout;  /* seconds per build (0: 30) */
    double run_timeout;    /* seconds per run incl. repeats (0: 10) */
    int repeat;            /* timed samples (0: 5) */
    double min_repeat_ms;  /* each sample lasts at least this long (0: none) */
    int check;             /* 0: check new bests only, 1: every candidate */
    uint64_t seed;         /* input data seed */
    int num_threads;       /* LOOM_NUM_THREADS of the runners (0: inherit) */
    /* Step log (JSON) of a baseline program of the same workload (NULL:
     * none; CPU targets). Each runner builds it once; after every
     * candidate's samples it is timed TUNE_BASELINE_REPEAT times, and the
     * candidate's latencies are scaled by (the baseline's median in the
     * measurer's first paired run) / (its median now). On a shared host
     * whose speed drifts by tens of percent over minutes, this keeps
     * latencies taken at different times comparable (bench_suite pairs
     * its samples with the peer's for the same reason). Borrowed. */
    const char *baseline_steps;
    /* NULL: measure in this process's runner processes (above). Else
     * every measurer made with these options hands its candidates to the
     * backend (borrowed; it outlives the measurers). The re-timing at the
     * end of tune_task_db / tune_tasks_db ignores it: it compares programs
     * side by side, on one machine, this one. */
    const tune_measure_backend *backend;
    /* CPU targets: evict the candidate's tensors (its arguments and its
     * pre-computed constants) from the caches before every timed call,
     * outside the time taken (rt_tensor_cache_flush), so that it is
     * ranked as it runs when its operands come from memory, where
     * back-to-back calls find everything a kernel of a few MiB touches
     * in L2 or L3. TVM offers the same for networks
     * (enable_cpu_cache_flush); inside ResNet-50 on a Zen 3 host it
     * ranked worse programs than warm timing (the activations arrive
     * warm from the kernel before), so it is off by default. Latencies
     * so measured are not comparable with warm ones: tune_task_db and
     * tune_tasks_db mark their records cold (tdb_record_in.cold) and
     * refuse a run whose setting differs from the database's records of
     * the target. Ignored on the GPU. */
    bool cache_flush;
} tune_measure_options;

/* Baseline samples after each candidate (tune_measure_options). */
#define TUNE_BASELINE_REPEAT 2

/* One measured candidate. */
typedef struct {
    int trial;               /* 1-based, in measurement order */
    const char *steps_json;  /* the log (tdb_steps_to_json format) */
    int nlatencies;
    double latencies[64];    /* seconds */
    double median, mean, spread; /* seconds; spread = (max - min) / median */
    int error_code;          /* tune_error_code */
    char error_msg[256];
    double build_s;          /* compile seconds */
    bool checked;            /* compared with the reference */
    /* The factor the latencies were scaled by to follow the host's speed
     * (tune_measure_options.baseline_steps); 1 when not paired (no
     * baseline, a slow candidate timed once, or the baseline failed). */
    double host_scale;
    /* The record key of the machine that measured it, where a backend's
     * worker measures another target key than the run's (a mixed MPI job,
     * `autotune --allow-mixed`): tune_task_db / tune_tasks_db commit the
     * record under it. Borrowed from the backend (valid until tune_measure
     * returns the next batch); NULL: the run's key. */
    const char *target_key;
    /* Not measured: a backend's candidate still in flight when the run
     * was asked to stop (tune_options.stop; an MPI job's Ctrl-C). It is
     * no trial: tune_task neither counts nor records it, so a --resume
     * measures it then. Only a backend sets it (tune_measure_backend). */
    bool dropped;
} tune_result;

/* Where a measurer's candidates are measured when not in this process's
 * own runner processes (tune_measure_options.backend): e.g. the worker
 * ranks of an MPI job (tools/autotune), which measure each candidate with
 * a tune_measurer of their own. The tuner's search, model and database
 * stay in this process; only measurement moves. Every function is called
 * from the thread that calls tune_measurer_new / tune_measure (or
 * tune_task_db / tune_tasks_db). */
struct tune_measure_backend {
    void *user;
    /* Candidates tune_task hands to one tune_measure call (1..64; 0:
     * tune_measure_options.threads): enough to keep every remote worker
     * busy. Results are taken in the order the candidates were proposed,
     * whatever order they arrive in. */
    int batch;
    /* A session measuring workload `key` on `target` with opts (whose
     * backend field is this backend): non-NULL, or NULL with a malloc'd
     * message in *err (err may be NULL). */
    void *(*open)(void *user, const char *key, const char *target,
                  const tune_measure_options *opts, char **err);
    /* As tune_measure (results[i] zeroed, steps_json set and host_scale 1
     * before the call); -1 when nothing can measure any more (the
     * session's error then says why: errmsg). A backend that is told to
     * stop (as the run's tune_options.stop) may return at once with the
     * results it has and the others marked dropped. */
    int (*measure)(void *session, int n, const char *const *steps_json, const int *hooks,
                   double best_so_far, tune_result *results);
    /* As tune_measurer_times, over the session (either pointer may be
     * NULL). */
    void (*times)(void *session, double *build_s, double *run_s);
    /* Why measure last returned -1 (may be NULL: "no runner"). */
    const char *(*errmsg)(void *session);
    void (*close)(void *session);
    /* Optional, both or neither: measuring while the tuner searches.
     * With them, tune_task_db / tune_tasks_db search one round behind
     * (see tune_tasks_db): each round is submitted as soon as it is
     * proposed, and the next one searched while it is measured. submit
     * hands the session's n candidates over and returns without waiting
     * for them (steps_json and hooks are copied); tags[i] names candidate
     * i in poll's answers. 0, or -1 when nothing can measure any more
     * (errmsg says why). */
    int (*submit)(void *session, int n, const char *const *steps_json, const int *hooks,
                  double best_so_far, const int64_t *tags);
    /* The results of submitted candidates, of every session, as they
     * arrive: waits up to wait_s seconds for one, then writes up to max
     * results (zeroed first, host_scale 1, steps_json NULL: the caller
     * knows the candidate by its tag) and their tags; returns how many.
     * Once the backend is told to stop (as the run's tune_options.stop),
     * every candidate not measured comes back with `dropped` set. -1 when
     * nothing can measure any more (the errmsg of any of its sessions
     * says why); the candidates not returned are lost. */
    int (*poll)(void *user, double wait_s, int max, tune_result *results, int64_t *tags);
};

typedef struct tune_measurer tune_measurer;

/* A measurer for task `key` on target ("llvm..." or, with a CUDA device,
 * "cuda..."): it starts one runner process now (TUNE_RUNNER_NAME says
 * which program) and the others (see tune_measure_options.threads) when
 * first needed. Returns NULL and a malloc'd message in *err: among them
 * cg_target_parse's refusal of target ("autotune: unknown target 'tpu'
 * (known: ...)"; a measurement backend gets target unchecked: it may
 * measure elsewhere), "autotune: target 'c' cannot be measured here",
 * "LOOM_RUNNER names 'P', which is no program to run: ...", "no
 * loom-runner program to measure with (tried ...)", and "workload 'K' is
 * built by a builder this program registered (tune_register_builder),
 * which the loom-runner process cannot have: register it from a plugin
 * (tune_load_plugin) or call tune_runner_maybe_run(argc, argv) ..." for
 * a builder registered outside a plugin by a program that did not call
 * tune_runner_maybe_run. */
tune_measurer *tune_measurer_new(const char *key, const char *target,
                                 const tune_measure_options *opts, char **err);
void tune_measurer_free(tune_measurer *m);
/* Measures n candidates (step logs as JSON; hooks may be NULL): builds up
 * to `threads` at once, runs them one at a time. results[i] is filled
 * for each (trial left 0). `best_so_far` (seconds, <= 0: none): a
 * candidate faster than it is checked against the reference. Returns 0
 * (individual failures are in results), -1 when no runner can start. */
int tune_measure(tune_measurer *m, int n, const char *const *steps_json, const int *hooks,
                 double best_so_far, tune_result *results);
/* Re-timing (after a run, on a shared machine): measures the n programs
 * `rounds` times over, all n in each round (builds at once, runs one at a
 * time; round r starts at program r), so that programs first timed under
 * different loads are compared under the same one; every run is checked
 * against the reference. hooks (may be NULL): test hooks per program, as
 * tune_measure's. rounds is clamped to 1..64. results[i] (n of them, the
 * caller's): steps_json = steps_json[i] (borrowed), latencies = its
 * rounds' medians (seconds), with their median, mean and spread;
 * error_code set when a round failed (the first failure kept). Returns 0,
 * or -1 when no runner can start or an argument is missing (m, results;
 * steps_json with n > 0; n < 0). */
int tune_retime(tune_measurer *m, int n, const char *const *steps_json, const int *hooks,
                int rounds, tune_result *results);
/* Wall seconds this measurer has spent, since it started, waiting for
 * builds (*build_s: from sending the builds to the last reply) and for
 * runs and reference checks (*run_s). Either pointer may be NULL. */
void tune_measurer_times(const tune_measurer *m, double *build_s, double *run_s);

/* ------------------------------------------------------------------ */
/* Tuning one task                                                     */
/* ------------------------------------------------------------------ */

typedef struct {
    int trials;              /* measurements in total (> 0) */
    int per_round;           /* measured per round (0: 64) */
    int population;          /* evolutionary population (0: 2048) */
    int generations;         /* (0: 4) */
    double mutation_prob;    /* (0: 0.85) */
    double eps_greedy;       /* share of random candidates (0: 0.05) */
    uint64_t seed;           /* (0: 1) */
    tune_measure_options measure;
    tune_scorer scorer;      /* cost model; zero: random sampling, no search */
    /* Called for every measured candidate as it arrives (the DB commit);
     * a non-zero return stops the tuning. */
    int (*on_record)(void *user, const tune_result *r);
    /* Called after every round with the progress. */
    void (*on_progress)(void *user, int done, int total, double best_s, double best_gflops);
    void *user;
    /* Test hook: the hook for trial number t (1-based), or NULL. */
    int (*hook_for_trial)(void *user, int trial);
    /* Stop early when *stop becomes non-zero: e.g. a flag a SIGINT handler
     * sets (a volatile sig_atomic_t, which is int on the platforms Loom
     * builds for: the header need not pull <signal.h> into users' code). */
    volatile int *stop;
    /* Step logs (JSON) of earlier programs (resume): never re-measured. */
    int nknown;
    const char *const *known_steps;
    /* The first nseed known logs (put the best first) are mapped back to
     * programs (tune_program_from_steps) and seed the initial population
     * of every round, beside the random ones (Ansor samples its initial
     * population from the sketches and the best measured programs). Logs
     * that no sketch reproduces are skipped. With a scorer, the fastest
     * programs measured in this run join them, the two together at most
     * a fifth of the population (Ansor's sample_init_use_measured_ratio,
     * 0.2). */
    int nseed;
    /* Test hook: called with each round's initial population (seeds
     * first) before evolution; may be NULL. */
    void (*on_population)(void *user, int n, const tune_program *progs);
    /* By default the first trial is the operator's default schedule
     * (ops_default_schedule for the target for an ops workload; on the
     * CPU tune_default_schedule for any other, e.g. a registered operator
     * or a model's fused group) when that schedule was not measured
     * before (resume): the best record is then never worse than what an
     * untuned user gets. true: it is not measured (the search alone). */
    bool skip_default;
    /* By default, on the CPU, the first round starts with the heuristic
     * programs (tune_program_heuristic) of every sketch, then the
     * structural program (tune_program_structural) of each sketch that
     * has none: tiling rules
     * derived from the workload's structure, inside the search space,
     * where evolution can refine them; they are part of the search, and
     * apply to any workload (skip_default leaves them in). true: the
     * first round is random programs only (Ansor's behaviour). */
    bool no_heuristic;
    /* true: on the CPU, the operator's default schedule is the baseline
     * program of the measurements (tune_measure_options.baseline_steps,
     * unless set). Off by default: it adds a third to the run time, and
     * latencies are then those of the host's speed when the first
     * candidate ran (bench/RESULTS.md, session 15). */
    bool baseline;
    /* A schedule of the user's own as a step log (tdb_steps_to_json,
     * e.g. tdb_schedule_to_json of a schedule made with sch_* calls on
     * the workload as its builder makes it; borrowed; NULL: none). It is
     * the first trial (before the default schedule; not measured again
     * when known_steps has it), and when tune_program_from_steps maps it
     * onto a sketch it seeds every round's initial population, so
     * evolution mutates it. When no sketch reproduces it (a schedule
     * written by hand rarely has a sketch's exact structure) it is still
     * measured as it is, and the valid sketch program whose step log is
     * nearest to it (the fewest steps in the symmetric difference of the
     * two logs' step multisets) seeds the population instead;
     * tune_summary.first_steps_note says so, with the steps in common.
     * tune_task fails (-1, *err naming the workload) when the log does
     * not parse or replay on the workload. */
    const char *first_steps_json;
} tune_options;

typedef struct {
    int measured;        /* trials done */
    int valid;           /* of which error-free */
    int best_trial;      /* 1-based trial of the best; 0 when none */
    double best_s;       /* best median latency, seconds; 0 when none */
    double best_gflops;
    char *best_steps_json; /* malloc'd; NULL when none */
    double seconds;      /* wall time */
    /* Where the wall time went, seconds: choosing candidates (sketch
     * annotation, evolution, scoring), waiting for builds, for runs and
     * checks, and retraining the scorer. */
    double search_s, build_s, run_s, train_s;
    bool stopped;        /* stopped by *stop or on_record */
    /* Empty when tune_options.first_steps_json seeded the search as it
     * is; else what seeded it instead (the nearest sketch program) or why
     * nothing could (the steps were measured all the same). */
    char first_steps_note[320];
    /* Sketches the generator left out (TUNE_MAX_PARTIAL_SKETCHES,
     * TUNE_MAX_SKETCHES; see tune_generate_sketches_ex): 0 when the
     * search covered the whole sketch space. */
    int sketches_dropped;
} tune_summary;

/* The step log (JSON, malloc'd) of the default schedule of workload
 * `key` for target: ops_default_schedule for an ops workload, else (CPU
 * targets) tune_default_schedule of the registered workload; NULL when
 * the key builds no workload or the target has no default schedule. */
char *tune_default_steps(const char *key, const char *target);

/* Tunes workload `key` on `target`: sketches, random annotation,
 * evolutionary search, measurement of per_round candidates per round
 * until `trials` are measured (tune_options.first_steps_json and the
 * default schedule first). Returns 0 (summary filled; free
 * summary->best_steps_json), or -1 with a malloc'd message in *err (err
 * may be NULL): bad options, a workload that does not build, no runner
 * process, and a run whose every trial failed with the same error
 * ("every one of the 16 trials of workload 'K' failed: instantiation
 * error: ...", with a hint when the runners had no builder for the
 * workload: registered after tune_runner_maybe_run). A run whose trials
 * failed in different ways returns 0 with summary->valid == 0. */
int tune_task(const char *key, const char *target, const tune_options *opts,
              tune_summary *summary, char **err);

/* ------------------------------------------------------------------ */
/* Cost-model data from the tuning database (warm start, evaluation)   */
/* ------------------------------------------------------------------ */

/* Programs of a tuning database, featurised exactly as the tuner's scorer
 * sees its candidates on the records' target: each record's workload
 * rebuilt from its key (tune_build_workload), its log parsed
 * (tdb_steps_from_json) and replayed (sch_replay), lowered by the
 * lowering list in its model view (sch_lower_program, "default",
 * model_view: unrolling only marked, on a CPU target without loop
 * partitioning and the constant arguments' pre-computed stages split off;
 * on cuda the GPU passes with verify_gpu), and cm_extract'ed at the
 * target's vector width (tune_target_vector_bytes) — what
 * cm_extract_schedule gives for the same schedule and options. Only valid records (error code 0)
 * are loaded; a record whose log no longer replays or lowers is skipped
 * and counted. All arrays are malloc'd and owned by the struct. */
typedef struct {
    int n;               /* programs */
    cm_program *progs;   /* features of each (rows of CM_NUM_FEATURES) */
    double *latencies;   /* median latency of each, seconds */
    int *task_ids;       /* index of the program's workload in keys */
    int ntasks;
    char **keys;         /* workload keys, one per task id */
    int skipped;         /* records that did not rebuild, replay or lower */
} tune_dataset;

/* Loads the valid records of target (the exact target key, as stored)
 * of every workload in db, task ids in the database's order (tdb_list).
 * max_per_task > 0 keeps only that many best records per workload.
 * Returns 0 (an empty dataset when there are no records), or -1 with a
 * malloc'd message in *err (err may be NULL) on a database error. Free
 * with tune_dataset_free. */
int tune_dataset_load(tdb_db *db, const char *target, int max_per_task, tune_dataset *out,
                      char **err);
void tune_dataset_free(tune_dataset *d);
/* The task id of workload `key` in d (an index of d->keys), or -1 when d
 * holds no programs of it. */
int tune_dataset_task(const tune_dataset *d, const char *key);

/* What tune_warm_start did. */
typedef struct {
    int programs;     /* records trained on */
    int tasks;        /* workloads they came from */
    bool trained;     /* the model has trees before the first measurement */
    bool from_blob;   /* the trees came from the stored model blob */
    char message[512];/* one line for the user */
} tune_warm_info;

/* Warm start (Ansor's transfer across workloads, issue 6 part 3): a new
 * cost model (params NULL: cm_params_default) trained on the database's
 * valid records for target — every workload's, normalised per workload
 * (label = the workload's min latency / latency). keys are the nkeys
 * workloads about to be tuned; task_ids[i] (nkeys entries, written) is the
 * id under which the tuner files keys[i]'s measurements (tune_scorer.task):
 * the id of its stored records, or for a workload without records a new
 * id of its own, so that no workload's labels are normalised by another's
 * latencies. When there are fewer than params->num_warmup_samples usable
 * records and the database holds a model blob for target
 * (tdb_get_cost_model, format CM_BLOB_FORMAT), that model is loaded
 * instead and keeps its trees until the tuner's own samples reach the
 * warm-up count (cm_params.keep_trees_below_warmup), unless it was
 * saved with another vector width (info->message says why it was not
 * used). Otherwise the model starts random. Its vector width
 * (cm_params.vector_bytes) is always the target's,
 * tune_target_vector_bytes, whatever params say. The records are added
 * to the model's sample set, so the tuner's updates retrain on them and
 * on its new measurements together.
 * Returns the model (the caller frees it with cm_model_free) and fills
 * info (may be NULL); NULL with a malloc'd message in *err on a database
 * error, exhausted memory, or keys or task_ids NULL with nkeys > 0. */
cm_model *tune_warm_start(tdb_db *db, const char *target, int nkeys, const char *const *keys,
                          const cm_params *params, int *task_ids, tune_warm_info *info,
                          char **err);

/* ------------------------------------------------------------------ */
/* Tuning into a database: what the `autotune` command does            */
/* ------------------------------------------------------------------ */

/* The record key of a tuning target: "llvm" without options -> the
 * host's (tdb_host_target, "llvm -mcpu=NAME"); "llvm" with -mcpu or
 * -mattr -> its canonical text (cg_target_str: "llvm -mcpu=X -mattr=Y",
 * -mcpu first whatever the order given); a CUDA target ("cuda", "cuda
 * -arch=...") -> GPU 0's (tdb_cuda_target, "cuda sm_90 NVIDIA H100 80GB
 * HBM3"). Returns it malloc'd, or NULL with a malloc'd message in *err
 * (err may be NULL): a target cg_target_parse refuses ("autotune:
 * unknown target 'tpu' (known: ...)", an unknown -mcpu or -mattr name),
 * "c" ("autotune: target 'c' cannot be tuned (known: llvm, cuda)"), or a
 * CUDA target where no device is available. */
char *tune_target_key(const char *target, char **err);
/* The key records are filed under when their programs ran on num_threads
 * threads (num_threads <= 0: the runtime's default, rt_num_threads):
 * target_key itself for one thread or a GPU target, else a CPU key with
 * " -num-cores N" after it ("llvm -mcpu=znver4 -num-cores 2", the name
 * of TVM's llvm target attribute; MetaSchedule likewise keeps records
 * per target string). A program's best tile and loop split change with
 * the threads it shares its loops among: on a 2-core host, ResNet-50's
 * 1-thread records run on 2 threads were about 9 % slower than the
 * default schedules (bench/RESULTS.md, session 38). One thread keeps the plain
 * key, so databases tuned with one thread before thread counts were
 * keyed read as they did; records tuned with more threads before then
 * are under the plain key too and read as 1-thread ones. Returns a
 * malloc'd key, NULL when target_key is NULL or out of memory. */
char *tune_threads_key(const char *target_key, int num_threads);
/* tune_threads_key(tune_target_key(target), num_threads): the key
 * tune_task_db / tune_tasks_db commit under (num_threads: their
 * measure.num_threads) and the graph executor reads (the pool's threads).
 * NULL and *err as tune_target_key. */
char *tune_record_key(const char *target, int num_threads, char **err);

/* The cost model of a run of tune_task_db / tune_tasks_db. */
typedef enum {
    /* XGBoost (cost_model.h), warm-started from the database's records of
     * the target (tune_warm_start: every workload's records, or the stored
     * model blob when they are too few), retrained after every round, and
     * stored back in the database at the end (tdb_put_cost_model) when
     * trained. */
    TUNE_DB_MODEL_WARM = 0,
    /* No model: each round measures programs of random annotation. */
    TUNE_DB_MODEL_NONE,
    /* The evolutionary search ranked by an untrained model's random
     * scores (Ansor's RandomModel; no warm start, nothing stored). */
    TUNE_DB_MODEL_RANDOM
} tune_db_model;

/* What a run reports as it goes (tune_db_options.on_event). */
typedef enum {
    TUNE_DB_STARTED,  /* set up (workloads committed, model made, stored
                         trials counted); nothing measured yet */
    TUNE_DB_ROUND,    /* a round of task `task` starts: `trials` trials */
    TUNE_DB_TRIAL,    /* trial `result` of task `task` was committed */
    TUNE_DB_PROGRESS, /* a round ended */
    TUNE_DB_SEARCHED, /* the search ended (budget, exhausted space, stop
                         request or error); the re-timing follows */
    TUNE_DB_RETIMED,  /* task `task`'s best programs were re-timed: its
                         summary's retime fields are set */
    TUNE_DB_WARNING   /* `message`: a record that could not be committed,
                         a re-timing that failed; the run goes on */
} tune_db_event;

typedef struct tune_db_summary tune_db_summary;

typedef struct {
    tune_db_event event;
    int task;                 /* index into the keys (0 for tune_task_db) */
    int trials;               /* TUNE_DB_ROUND: trials of the round */
    const tune_result *result;/* TUNE_DB_TRIAL: the trial (this call's numbering) */
    const char *message;      /* TUNE_DB_WARNING: one line, "autotune: ..." */
    const tune_db_summary *summary; /* the figures so far (every event) */
} tune_db_report;

typedef struct {
    /* The search, as tune_task takes it: trials is the budget of the whole
     * run (for several keys: of all of them together); per_round,
     * population, generations, mutation_prob, eps_greedy, seed, measure,
     * stop, skip_default, no_heuristic, baseline and first_steps_json (one
     * key only) as documented there; on_record, on_progress, hook_for_trial and
     * on_population are called as by tune_task, with `user` (on_record
     * after the record is committed). Set by this call, so left zero:
     * scorer, nknown, known_steps. nseed: how many of the best stored
     * programs seed each round (0: 8 with resume, else none). */
    tune_options tune;
    /* The trials of (key, target) already in the database seed the search,
     * enter the figures (best trial, 95% trial) and count toward
     * tune.trials (of all keys together); with several keys they also
     * stand for the task scheduler's rounds (tune.per_round each, in
     * commit order), so a resumed model run goes on where it stopped
     * instead of giving every task its first round again. Stored programs
     * are never measured again, with or without resume. Before the rounds,
     * a resumed run times the current default schedule of each stored key
     * whose records never met it (tune_db_summary.defaults_retried; not
     * with tune.skip_default), so that records tuned with an older Loom
     * are compared with the default that Loom now derives. */
    bool resume;
    tune_db_model model;
    /* The cost model's parameters (NULL: cm_params_default with seed
     * tune.seed). Whatever they say, the model predicts on one thread
     * (the search calls it from each of its workers, and XGBoost's
     * OpenMP teams would spin between calls, taking the cores from the
     * lowering) and trains on every core (between rounds, when nothing
     * else runs). */
    const cm_params *cost_params;
    /* After the search, the `retime` best distinct programs of each key
     * with a valid trial (the database's best, then the best by first
     * timing, and the operator's default schedule) are timed again side
     * by side in TUNE_DB_RETIME_ROUNDS rounds (tune_retime) and the re-timings stored
     * (tdb_commit_retime), so that the database ranks programs timed
     * under different loads on equal terms. 0: 8; 1 or less: none.
     * Skipped after a stop request. */
    int retime;
    /* Called for every event (may be NULL), with `user` (tune.user). */
    void (*on_event)(void *user, const tune_db_report *r);
    /* tune_tasks_db: each key's weight for the task scheduler (n entries,
     * each > 0: how often the workload runs per inference, as a model's
     * repeated blocks; gr_task.uses); NULL: 1 each. A key's share of the
     * objective is weight x latency (Ansor's task scheduler). */
    const double *weights;
    /* The other record keys this run's results may carry (tune_result.
     * target_key; n_mixed_keys entries, NULL/0: none): programs stored
     * under any of them are known as well (never measured again) and,
     * with resume, enter the figures and the budget like the run's own
     * (in commit order), so that a mixed run resumed measures nothing
     * twice. Borrowed. */
    int n_mixed_keys;
    const char *const *mixed_keys;
} tune_db_options;

/* The rounds of the re-timing at the end of a run. */
#define TUNE_DB_RETIME_ROUNDS 5

/* One key's figures. Trials are counted in the key's series: the stored
 * ones first (with resume), then this run's. */
typedef struct {
    const char *key;       /* borrowed from the caller */
    double flops;          /* FLOP of one call (0: unknown) */
    int resumed;           /* stored trials counted (resume) */
    int trials;            /* resumed + measured */
    int measured, valid;   /* in this run */
    int rounds;            /* rounds the task scheduler gave it */
    int best_trial;        /* 1-based in the series; 0: no valid trial */
    double best_s;         /* its median latency, seconds (0: none) */
    double best_gflops;
    int reach95;           /* first trial at 95% of the best GFLOP/s
                              (tdb_history_reach); 0: none */
    char *best_steps_json; /* this run's best log (malloc'd; NULL: none) */
    char first_steps_note[320]; /* tune_summary's, from the first round */
    int sketches_dropped;       /* tune_summary's, from the first round */
    /* Re-timing (TUNE_DB_RETIMED): programs re-timed and stored (0: none),
     * seconds it took, and the database's best afterwards: its record id,
     * fastest re-timed latency and first-timed median (seconds). */
    int retimed;
    double retime_s;
    int64_t retime_best_id;
    double retime_best_s, retime_best_median;
} tune_db_task;

struct tune_db_summary {
    char *target_key;      /* the records' key (tune_record_key; malloc'd) */
    int ntasks;
    tune_db_task *tasks;   /* one per key (malloc'd) */
    int done;              /* trials toward the budget (resumed included) */
    int total;             /* the budget, tune.trials */
    int resumed;           /* of done: found stored */
    /* Keys whose stored records never timed their current default
     * schedule (tuned with an older Loom, which derived another, or with
     * skip_default): on resume each such default is timed first, one
     * trial each, before the rounds. */
    int defaults_retried;
    tune_warm_info warm;   /* TUNE_DB_MODEL_WARM: what the warm start did */
    double seconds;        /* wall time */
    /* Where the wall time went over all keys (tune_summary's). */
    double search_s, build_s, run_s, train_s;
    /* Of search_s + train_s: the seconds spent while candidates were
     * being measured (a backend with submit and poll; else 0). */
    double overlap_s;
    bool stopped;          /* by *tune.stop or on_record */
    int commit_errors;     /* records that could not be committed */
};

/* Frees what a summary holds (not the struct); NULL is a no-op. */
void tune_db_summary_free(tune_db_summary *s);

/* Tunes workload `key` (an ops registry key, or a key a registered
 * builder knows) on `target` ("llvm", "llvm -mcpu=...", "cuda") and
 * commits every measured trial to db as it arrives, under the record key
 * tune_record_key(target, o->tune.measure.num_threads) (or the result's
 * own target_key): what `autotune --op OP --shape S --db FILE`
 * does. In order: the key's workload is committed (tdb_commit_workload_key)
 * and checked to fit in memory (tune_check_fits); the model is made
 * (o->model; the warm start trains it on db's records); the stored
 * programs of (key, target) are read (never measured again; with resume
 * they count and seed); tune_task runs (the default schedule or
 * o->tune.first_steps_json first) with every record committed before
 * on_record sees it; the best programs are re-timed (o->retime); the
 * trained model is stored. o may not be NULL; o->tune.trials > 0.
 * Returns 0 with *out filled (free with tune_db_summary_free, also after
 * -1), or -1 with a malloc'd message in *err (err may be NULL): a bad
 * target, a workload that does not build or fit, a database error before
 * the search, tune_task's errors (every trial failed alike, no runner),
 * or more than 3 records that could not be committed (each reported as a
 * TUNE_DB_WARNING first). A run without any valid trial returns 0 with
 * out->tasks[0].best_trial == 0. */
int tune_task_db(tdb_db *db, const char *key, const char *target, const tune_db_options *o,
                 tune_db_summary *out, char **err);

/* The same for n keys sharing the budget o->tune.trials, round by round
 * (o->tune.per_round trials each), the next round going to the key the
 * task scheduler picks (tune_scheduler_pick: gradient-based, with
 * similarity groups of the keys' operator names, the text before '(',
 * and FLOP counts; a key whose search has nothing left to measure drops
 * out); one cost model for all, warm-started with every key
 * (tune_warm_start). first_steps_json is refused with more than one key.
 * Returns as tune_task_db, out->tasks[i] for keys[i].
 *
 * With a measurement backend that has submit and poll (tune.measure.
 * backend; the MPI workers of `mpirun autotune`), tune_task_db and
 * tune_tasks_db search one round behind the measurements instead, so
 * that the backend's workers measure while the search and the model's
 * training run: round k+1 (per_round candidates, the first steps and the
 * default schedule first in a key's first round) is proposed while round
 * k is measured, by the model trained on the rounds up to k-1, with round
 * k's candidates counted as proposed (never proposed twice); its key is
 * picked by the task scheduler from the results of rounds up to k-1, with
 * round k counted as a round of its key, so rounds of different keys are
 * in flight at once. Each key keeps one search for the whole run
 * (seeded with tune.seed plus the trials before its first round), and
 * every result is committed as it arrives. The candidates proposed, in
 * order, then depend on the seed, the database and the results of the
 * rounds before, never on when results arrive or how many workers
 * measure. The search and the training run on a thread of their own; the
 * backend's functions and on_event, on_record and on_progress are called
 * from the calling thread, on_population from the search's. The budget
 * counts candidates proposed; a run whose every learnt trial of a key
 * failed alike stops at the round that shows it. */
int tune_tasks_db(tdb_db *db, int n, const char *const *keys, const char *target,
                  const tune_db_options *o, tune_db_summary *out, char **err);

/* Leave-one-workload-out evaluation of the cost model (issue 6 part 4). */
typedef struct {
    char *key;            /* the held-out workload (malloc'd) */
    int programs;         /* its programs */
    double pairwise;      /* model: pairwise ranking accuracy (cm_pairwise_accuracy); -1: no pair */
    double pairwise_random;
    bool top1, top5;      /* model: the truly best program is among the 1 / 5 highest scored */
    bool top1_random, top5_random;
} tune_eval_row;

typedef struct {
    int nrows;
    tune_eval_row *rows;  /* one per workload with at least 2 programs (malloc'd) */
    /* Means over the rows (pairwise: over rows with a pair; recall: the
     * share of rows whose best program is in the top k). */
    double pairwise, pairwise_random;
    double top1, top5, top1_random, top5_random;
} tune_eval;

/* For each workload of d in turn (held_out NULL), or each workload t with
 * held_out[t] (d->ntasks flags): trains a fresh model (params NULL:
 * defaults; num_warmup_samples is lowered to 1 so that the model is
 * always trained) on the programs of all other workloads, held out or
 * not, scores the held-out workload's programs with it and with the
 * random model (cm_model_new untrained, seeded with params->seed), and
 * compares the rankings with the measured latencies. Flags let records
 * of workloads outside a benchmark suite serve as training data only
 * (TenSet's use of a corpus of other workloads). top-k recall of a
 * workload: 1 when its lowest-latency program is among the k programs
 * with the highest scores (ties broken by lower index), else 0. Needs at
 * least 2 workloads and a held-out one with 2 or more programs. Returns
 * 0 and fills out (free with tune_eval_free), or -1 with a malloc'd
 * message in *err. */
int tune_eval_model(const tune_dataset *d, const cm_params *params, const bool *held_out,
                    tune_eval *out, char **err);
void tune_eval_free(tune_eval *e);

/* ------------------------------------------------------------------ */
/* Task scheduler                                                      */
/* ------------------------------------------------------------------ */

/* Splits a trial budget over ntasks tasks, round by round: the next round
 * goes to the task whose best latency is expected to fall the most, by
 * Ansor's gradient-based allocation (Zheng et al., OSDI 2020, §6; TVM
 * auto_scheduler task_scheduler.py): with t_i rounds and best latency
 * g_i, gain_i = weights[i] * (0.2 * backward + 0.8 * forward), where
 *   backward = (g_i three rounds ago - g_i now) / 3  (0 before 4 rounds),
 *   forward  = g_i - min(g_i - g_i / t_i, 2 * flops[i] / S),
 * S the best throughput (FLOP/s) among the tasks of i's similarity group
 * (the similarity term, used when flops and groups are given and the
 * group has another member; a member that has had more than 5 rounds more
 * than every other one and still runs at < 1/2 of S stops counting, as in
 * Ansor). A task that has had no round goes first (lowest index); a task
 * with weights[i] <= 0 is never picked (dead: its search has nothing left
 * to measure); a task with rounds but no valid measurement only when no
 * other task is alive. Ties go to the lowest index.
 * weights: per-task weight (NULL: all 1), e.g. how often the network runs
 * it; nrounds[i]: rounds given so far; history[i]: the best latency after
 * each of those rounds (nrounds[i] entries, seconds; history may be NULL:
 * no backward term); best[i]: current best latency (seconds, <= 0: none);
 * flops[i]: FLOP of one call (0: unknown); groups[i]: similarity group
 * (tune_scheduler_groups; -1: none). flops and groups may be NULL (no
 * similarity term). Returns the chosen task, or -1 when no task is alive
 * (or ntasks <= 0, nrounds or best NULL). */
int tune_scheduler_pick(int ntasks, const double *weights, const int *nrounds,
                        const double *const *history, const double *best, const double *flops,
                        const int *groups);

/* Similarity groups for tune_scheduler_pick, as Ansor derives them (its
 * derive_similarity_tag): tasks of the same operator name (ops[i], e.g.
 * "conv2d") whose FLOP counts fall in the same bucket
 * floor(log(flops + 1) / log(1.618)) share a group, numbered 0, 1, ... in
 * order of first appearance; a task with unknown FLOP (<= 0) or no name
 * gets -1. Writes groups[0..ntasks-1]. */
void tune_scheduler_groups(int ntasks, const char *const *ops, const double *flops, int *groups);

LOOM_API_END
#ifdef __cplusplus
}
#endif
#endif /* LOOM_AUTOTUNE_H */
