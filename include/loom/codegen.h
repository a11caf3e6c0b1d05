/*
 * loom/codegen.h — from lowered loop IR (tir_func) to callable modules.
 *
 * Backends:
 *   llvm — LLVM IR through LLVM-C, `default<O3>`, ORC LLJIT for the host
 *          CPU (name and features detected); parallel loops outlined and run
 *          on rt_parallel_for; vectors as LLVM vector types; llvm.fmuladd for
 *          float a*b+c; parameters noalias.
 *   c    — portable C source; compiled with the system C compiler into a
 *          shared object and loaded (a second path for tests, and the way to
 *          read what a schedule does).
 *
 * Every function in a module uses the rt_packed_fn convention
 * (loom/runtime.h): args[i] is the data pointer of tir_func param i.
 *
 * Errors: NULL with the reason in the ctx (te_ctx_errmsg).
 */
#ifndef LOOM_CODEGEN_H
#define LOOM_CODEGEN_H

#include "loom/api.h"
#include "loom/runtime.h"
#include "loom/schedule.h"
#include "loom/tir.h"

#ifdef __cplusplus
extern "C" {
#endif
LOOM_API_BEGIN

typedef struct {
    const char *mcpu;     /* LLVM CPU name; NULL: the host's */
    const char *features; /* LLVM feature string; NULL: the host's */
    int opt_level;        /* 0..3 (default 3 when the struct is zeroed: use -1 for O0) */
    bool keep_ir;         /* keep optimised LLVM IR as module text "ir" */
    bool keep_asm;        /* keep assembly as module text "asm" */
    /* Check every load and store against its buffer's extent: an access
     * outside makes the call fail (rt_call returns -1; rt_last_error() and
     * rt_module_errmsg: "rt_call: B[1000064] read outside B[64] in
     * 'default'", or "written outside"; flat element index and count)
     * instead of reading or writing wild memory. In a parallel loop the
     * first failing chunk's first error is reported. For debugging: the
     * checks keep loops from vectorizing. */
    bool bounds_check;
} cg_llvm_options;

/* Compiles nfuncs lowered functions (after tir_run_pipeline) into one
 * JIT module. opts may be NULL. The module owns its own LLVM context and
 * JIT; several threads may build at once. */
rt_module *cg_llvm_build(te_ctx *ctx, int nfuncs, const tir_func *const *funcs,
                         const cg_llvm_options *opts);
/* The host CPU name and features LLVM detects ("znver5", "+avx512f,..."),
 * malloc-owned by the caller. */
char *cg_llvm_host_cpu(void);
char *cg_llvm_host_features(void);

typedef struct {
    const char *cc;     /* compiler; NULL: $CC or "cc" */
    const char *cflags; /* NULL: "-O3 -march=native -ffp-contract=fast" */
} cg_c_options;

/* The C source of the functions: one `int32_t NAME(void **args)` each,
 * plus the parallel-loop closures. Arena-owned. */
const char *cg_c_source(te_ctx *ctx, int nfuncs, const tir_func *const *funcs);
/* Writes the source to a temporary directory, compiles it into a shared
 * object and loads it. The module keeps the source as text "source". */
rt_module *cg_c_build(te_ctx *ctx, int nfuncs, const tir_func *const *funcs,
                      const cg_c_options *opts);

/* cuda — CUDA C++ kernels compiled at run time with NVRTC (to PTX for the
 * virtual architecture of `arch`) and run through the driver API
 * (loom/runtime.h: rt_cuda_*). Input: functions after the GPU pipeline
 * (tir_pipeline_options.gpu) split by tir_split_host_device. */
typedef struct {
    const char *arch; /* "sm_90", "sm_80", ...; NULL: GPU 0's compute
                         capability, or sm_75 where there is no GPU */
} cg_cuda_options;

/* The CUDA C++ source of the kernels of nprogs programs (one
 * `extern "C" __global__` function per kernel, named as the tir kernel
 * with non-identifier characters replaced by '_'). Arena-owned. */
const char *cg_cuda_source(te_ctx *ctx, int nprogs, const tir_device_program *const *progs);
/* Source, NVRTC compile, and a module of kind "cuda" with one function
 * per program (named as its host function; arguments are kDLCUDA
 * tensors). The module keeps texts "source", "ptx" and "arch". It can be
 * built where there is no GPU driver (only NVRTC is needed); calling it
 * there fails with "CUDA driver not found (libcuda.so.1): ...". */
rt_module *cg_cuda_build(te_ctx *ctx, int nprogs, const tir_device_program *const *progs,
                         const cg_cuda_options *opts);
/* "sm_XY" of GPU 0, or "sm_75" when no GPU is available. Arena-owned. */
const char *cg_cuda_default_arch(te_ctx *ctx);
/* The shared memory a block may opt in to on architecture "sm_XY", bytes
 * (the CUDA programming guide's table of compute capabilities: 227 KiB on
 * sm_90, 163 KiB on sm_80 and sm_87, 99 KiB on sm_86 and sm_89, 64 KiB on
 * sm_75); 48 KiB, what every block may take, for NULL or an architecture
 * the table lacks. Above 48 KiB a kernel takes dynamic shared memory. */
int64_t cg_cuda_optin_shared(const char *arch);
/* The compute capability x 10 of architecture "sm_XY", "sm_XYa" or
 * "compute_XY" (sm_90a: 90); 0 for NULL or any other text. */
int cg_cuda_arch_cc(const char *arch);

/* ---- for backends ---- */

/* The DLPack type rt_call checks for a buffer of element type t (bool is
 * uint1 stored in a byte, TVM's convention). */
DLDataType cg_dl_type(te_dtype t);
/* Adds entry to m as function fn->name, its parameters described from
 * fn->params (name, dtype, shape), so rt_call checks arguments alike
 * whichever backend compiled it. Returns 0, or -1 when out of memory or
 * the name is taken (reason in rt_module_errmsg(m) for the latter). */
int cg_module_add_tir_func(rt_module *m, const tir_func *fn, rt_packed_fn entry);

/* ---- targets ---- */

typedef enum { CG_TARGET_LLVM, CG_TARGET_C, CG_TARGET_CUDA } cg_target_kind;

/* A target, parsed once from its string (cg_target_parse) and printed
 * back canonically (cg_target_str). The grammar, options separated by
 * spaces, each at most once:
 *   llvm [-mcpu=NAME] [-mattr=+FEATURE,-FEATURE,...]   (LLVM's names)
 *   c
 *   cuda [-arch=sm_XX]                                 (sm_80, sm_90a, ...)
 *   cuda sm_XX NAME    a GPU's tuning-database key (tdb_cuda_target,
 *                      "cuda sm_90 NVIDIA H100 80GB HBM3"): the
 *                      architecture, then the device's name, a label.
 * The strings belong to the struct: cg_target_free releases them. */
typedef struct {
    cg_target_kind kind;
    /* llvm: the triple code is generated for, the host's, normalised
     * ("x86_64-pc-linux-gnu"); NULL for c and cuda. */
    char *triple;
    /* llvm: -mcpu's CPU name; NULL: not given, the host's CPU. */
    char *cpu;
    /* llvm: -mattr's list as given ("+avx2,-fma"), applied after the
     * CPU's own features; NULL: not given (with no cpu either: the host's
     * features, else the CPU's). */
    char *features;
    /* cuda: the architecture, "sm_90"; NULL: not given (cg_build takes
     * GPU 0's compute capability, or sm_75 without a GPU). */
    char *arch;
    /* cuda: the device name of a database key ("NVIDIA H100 80GB HBM3");
     * NULL: none. It labels records, builds ignore it. */
    char *device;
    /* float32 lanes of one SIMD register, the vector width default
     * schedules and the tuner split by: llvm 16 with AVX-512F, 8 with AVX
     * or AVX2, else 4 (of cpu with features, as LLVM compiles for it); c
     * the host's (it compiles with -march=native); cuda 4 (a float4). */
    int vector_lanes;
    /* llvm: the CPU has AVX512-BF16's VDPBF16PS (tensorize "x86.dpbf16";
     * the bfloat16 matmul default uses it); false for c and cuda. */
    bool bf16_dot;
} cg_target;

/* Parses s (NULL is "llvm") into *out and checks it: the kind, each
 * option's name and that it appears once, -arch's form, and for llvm the
 * CPU and feature names against LLVM's tables for the host triple (LLVM
 * would take an unknown CPU with a warning and may abort the process when
 * compiling). Returns 0 (release *out with cg_target_free), or -1 with
 * *out zeroed and, when err is not NULL, *err a malloc'd message naming
 * the target and the rule, e.g. "unknown target 'opencl' (known: llvm
 * [-mcpu=NAME] [-mattr=+F,-G], c, cuda [-arch=sm_XX])", "target 'llvm
 * -O3': unknown option '-O3' (llvm takes ...)", "target 'llvm -mcpu=a
 * -mcpu=b': -mcpu is given twice", "target 'cuda -arch=gfx90a':
 * architecture 'gfx90a' is not sm_XX (...)", "target 'llvm
 * -mcpu=notacpu': unknown CPU 'notacpu' for x86_64-pc-linux-gnu (this
 * host's CPU is 'znver5')" (*err NULL when even that is out of memory). */
int cg_target_parse(const char *s, cg_target *out, char **err);
/* Releases t's strings and zeroes it (NULL: nothing). */
void cg_target_free(cg_target *t);
/* The canonical text of t, malloc'd (NULL when out of memory): the kind,
 * then -mcpu before -mattr ("llvm -mcpu=sapphirerapids -mattr=+avx2"),
 * "c", "cuda", "cuda -arch=sm_90", or with a device "cuda sm_90 NAME".
 * The tuning database's target keys are these texts (a plain "llvm" is
 * filed under the host's "llvm -mcpu=NAME", see tune_target_key), and
 * cg_target_parse gives t back from it. Reads only kind, cpu, features,
 * arch and device: a struct filled by hand prints too. */
char *cg_target_str(const cg_target *t);

/* ---- one call from schedule to module ---- */

typedef struct {
    const char *name;            /* function name; NULL: "default" */
    cg_llvm_options llvm;
    cg_c_options c;
    cg_cuda_options cuda;
    tir_pipeline_options passes; /* for cuda, gpu is set by cg_build; zero
                                    gpu_limits take GPU 0's limits (its
                                    opt-in shared memory per block), or
                                    without a GPU 1024 threads and the
                                    architecture's opt-in shared memory
                                    (227 KiB on sm_90, 163 KiB on sm_80;
                                    48 KiB for one it does not know).
                                    Kernels over 48 KiB of shared memory
                                    take it dynamically. */
    /* Bit i: args[i] is constant, its values the same in every call (a
     * weight). Where stages compute from constants alone
     * (sch_lower_constants), the module holds NAME__precompute and NAME,
     * both taking the args then one tensor per pre-computed stage: call
     * them through rt_prepare / rt_prepared_call, which keep those
     * tensors. Otherwise NAME as without the option. llvm and c targets. */
    uint64_t constant_args;
    /* Sets llvm.bounds_check (see cg_llvm_options); the llvm target only:
     * an error for c and cuda. */
    bool bounds_check;
} cg_build_options;

/* Lowers schedule s with the given argument tensors (inputs and outputs in
 * the order the caller will pass them), runs the tir pipeline and compiles
 * for target (cg_target's grammar; NULL is "llvm"): "llvm" (-mcpu and
 * -mattr override opts->llvm's mcpu and features), "c", or "cuda" (-arch,
 * or a GPU key's architecture, overrides opts->cuda.arch; loops bound with
 * sch_bind). opts may be NULL. Errors: an argument list that misses an
 * input or output of the schedule, a target cg_target_parse refuses
 * ("cg_build: target '...': ..."), constant_args on cuda or naming an
 * output or a missing argument, any lowering or compile error. */
rt_module *cg_build(sch_schedule *s, int nargs, te_tensor *const *args, const char *target,
                    const cg_build_options *opts);

/* Checks a target string as cg_build would, without building:
 * cg_target_parse without keeping the result. Returns 0, or -1 with *err
 * (when err is not NULL) cg_target_parse's message, malloc'd ("out of
 * memory" when there was none), which the caller frees. */
int cg_target_check(const char *target, char **err);

LOOM_API_END
#ifdef __cplusplus
}
#endif
#endif /* LOOM_CODEGEN_H */
