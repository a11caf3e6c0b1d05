/*
 * loom/runtime.h — what compiled code runs on: DLPack tensors, the CPU
 * device, the thread pool behind `parallel` loops, compiled-module handles
 * and timing.
 *
 * Tensors are DLPack `DLTensor`s (dlpack/dlpack.h, v0.6): a caller may pass
 * its own, or allocate them here. Errors: functions return NULL or a
 * non-zero code and put the reason in the object they concern
 * (rt_module_errmsg) or in rt_last_error() for free functions; nothing
 * aborts on bad input.
 */
#ifndef LOOM_RUNTIME_H
#define LOOM_RUNTIME_H

#include "loom/api.h"
#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
LOOM_API_BEGIN

/* The message of the last failed free function in this thread ("" if none). */
const char *rt_last_error(void);

/* ---------------- tensors ---------------- */

/* Allocates a tensor on the CPU: row-major compact, data 64-byte aligned,
 * uninitialised. dtype e.g. {kDLFloat, 32, 1}; ndim 0..8 extents >= 0 (a
 * zero extent: an empty tensor, numel 0, its data still a valid pointer).
 * Free with rt_tensor_free. NULL (rt_last_error) on bad shape or no memory. */
DLTensor *rt_tensor_alloc(DLDataType dtype, int ndim, const int64_t *shape);
/* Frees a tensor from rt_tensor_alloc (data included). NULL is a no-op. */
void rt_tensor_free(DLTensor *t);
/* A DLTensor header over caller memory (not copied, not freed by
 * rt_tensor_free_header). shape is copied. */
DLTensor *rt_tensor_wrap(void *data, DLDataType dtype, int ndim, const int64_t *shape);
void rt_tensor_free_header(DLTensor *t);
/* Number of elements; bytes of data. */
int64_t rt_tensor_numel(const DLTensor *t);
size_t rt_tensor_nbytes(const DLTensor *t);
/* Element k (flat, row-major; 0 <= k < rt_tensor_numel, not checked) of a
 * host tensor of float16, bfloat16, float32 or float64, as a double. NaN
 * for a missing tensor or another dtype. */
double rt_tensor_get(const DLTensor *t, int64_t k);
/* Stores v into element k, rounded to the tensor's type to nearest even
 * (16-bit: infinity on overflow, NaN kept a quiet NaN). 0, or -1 with
 * rt_last_error for a missing tensor or another dtype. */
int rt_tensor_set(DLTensor *t, int64_t k, double v);

/* ---------------- thread pool ---------------- */

/* The body of a parallel loop: runs iterations [begin, end) of a loop of
 * `n` iterations. env is the closure the caller passed. Returns 0, or
 * non-zero to report failure. */
typedef int (*rt_parallel_body)(int64_t begin, int64_t end, void *env);
/* Runs body over [0, n) split into contiguous chunks, one per pool thread
 * (the caller's thread takes a chunk too), and waits for all. Nested calls
 * from inside a body run serially in the calling thread. Returns 0, or the
 * first non-zero a chunk returned (the lowest chunk's, whichever thread
 * ran it; the chunks already running finish), with rt_last_error() set to
 * the message that chunk's thread left. Called by generated code for
 * `parallel` loops. Idle pool threads, and the caller waiting for them,
 * poll for LOOM_SPIN_US microseconds (default 1000, 0 to 1000000; 0:
 * none) before they sleep, as OpenMP runtimes and ONNX Runtime's pool do,
 * so that back-to-back loops do not pay a thread wake-up each. */
int rt_parallel_for(int64_t n, rt_parallel_body body, void *env);
/* Threads the pool uses: LOOM_NUM_THREADS if set (>= 1), else
 * rt_num_cores(). */
int rt_num_threads(void);
/* The machine's online CPU cores (sysconf), at least 1 and at most 4096,
 * whatever LOOM_NUM_THREADS or the affinity mask say: the default count
 * of parallel builds and of the cost model's training threads. */
int rt_num_cores(void);
/* The CPUs this process may run on: its affinity mask's count (taskset or
 * mpirun's binding narrow it), rt_num_cores() where the mask cannot be
 * read. What a thread pool can really use at once. */
int rt_available_cpus(void);
/* Sets the pool size (>= 1) for later parallel loops; returns 0 or -1. */
int rt_set_num_threads(int n);

/* ---------------- modules ---------------- */

/* A compiled function's calling convention: args[i] is the data pointer
 * (byte_offset applied) of the i-th parameter. Returns 0 on success. */
typedef int32_t (*rt_packed_fn)(void **args);

/* What a parameter must look like. */
typedef struct {
    const char *name;
    DLDataType dtype;
    int ndim;
    int64_t shape[8];
} rt_param;

typedef struct rt_module rt_module;

/* Creates an empty module. `impl` is the backend's state, released with
 * impl_free(impl) when the module is freed (both may be NULL). `kind` is a
 * short name for messages ("llvm", "c", "cuda"). */
rt_module *rt_module_new(const char *kind, void *impl, void (*impl_free)(void *impl));
/* Adds a function; params are copied. Returns 0 or -1 (duplicate name). */
int rt_module_add_func(rt_module *m, const char *name, rt_packed_fn fn, int nparams,
                       const rt_param *params);
/* A function that needs its module's state (the CUDA backend: loaded
 * kernels): called as fn(self, nargs, args) with the checked tensors.
 * Returns 0, or non-zero with the reason in rt_last_error(). */
typedef int32_t (*rt_closure_fn)(void *self, int nargs, DLTensor *const *args);
/* Adds a closure function; self stays owned by the backend (free it in
 * impl_free). rt_module_get_func returns NULL for it: call it with rt_call.
 * Returns 0 or -1 (duplicate name). */
int rt_module_add_closure(rt_module *m, const char *name, rt_closure_fn fn, void *self,
                          int nparams, const rt_param *params);
/* The DLDeviceType every argument must be on (kDLCPU unless set; the
 * CUDA backend sets kDLCUDA). */
void rt_module_set_device(rt_module *m, int device_type);
int rt_module_device(const rt_module *m);
/* Frees the module and its backend state. NULL is a no-op. */
void rt_module_free(rt_module *m);
const char *rt_module_kind(const rt_module *m);
/* Function names, in the order added. */
int rt_module_num_funcs(const rt_module *m);
const char *rt_module_func_name(const rt_module *m, int i);
/* The raw entry point, or NULL when the module has no such function. */
rt_packed_fn rt_module_get_func(const rt_module *m, const char *name);
/* The last error of an operation on m ("" if none). Owned by m. */
const char *rt_module_errmsg(const rt_module *m);
/* Text the backend kept (generated source, LLVM IR, assembly) by name:
 * "source", "ir", "asm". NULL when not kept. Owned by m. */
const char *rt_module_get_text(const rt_module *m, const char *what);
void rt_module_set_text(rt_module *m, const char *what, const char *text);

/* Calls function `name` with nargs tensors, checking that the count,
 * dtypes, ranks, shapes, device type (rt_module_device) and compactness
 * match its parameters.
 * Returns 0, or -1 with rt_module_errmsg(m) (and rt_last_error()) naming
 * the function, the parameter and the mismatch, or the failure of the
 * function itself (see RT_ERR_REPORTED). */
int rt_call(rt_module *m, const char *name, int nargs, DLTensor *const *args);
/* The parameters of function `name` (*nparams of them, owned by m), or
 * NULL when m has no such function. */
const rt_param *rt_module_func_params(const rt_module *m, const char *name, int *nparams);

/* ---- pre-computed constants (cg_build_options.constant_args) ----
 * A module built with constant arguments may hold NAME__precompute,
 * which computes the stages that read only constants (a packed copy of
 * the weights) into tensors of their own, and NAME, which takes the
 * arguments followed by those tensors. rt_prepare runs the first once and
 * keeps its tensors; rt_prepared_call runs the second with them. For a
 * function without pre-computed stages both just call NAME. */
typedef struct rt_prepared rt_prepared;
/* Allocates the pre-computed tensors (CPU modules) and fills them from
 * args (the nargs arguments of NAME as the caller will pass them; only
 * the constant ones are read). The constant tensors must keep their data
 * pointer and values for as long as the prepared function is used (after
 * changing their values, prepare again). m must outlive the result.
 * NULL with rt_last_error(): no function `name`, fewer parameters than
 * nargs, a module on another device than the CPU, and rt_call's argument
 * errors for NAME__precompute. */
rt_prepared *rt_prepare(rt_module *m, const char *name, int nargs, DLTensor *const *args);
/* Calls NAME with args then the pre-computed tensors; threads may call
 * it on one rt_prepared at once. Returns 0, or -1 with rt_last_error(): a
 * different nargs than rt_prepare's, a constant argument whose data
 * pointer is not the one prepared from, and rt_call's errors. */
int rt_prepared_call(rt_prepared *p, int nargs, DLTensor *const *args);
/* Frees the pre-computed tensors. NULL is a no-op. */
void rt_prepared_free(rt_prepared *p);
/* rt_tensor_cache_flush of each pre-computed tensor (a packed copy of the
 * weights is what the kernel reads, not the argument it came from). NULL
 * is a no-op. */
void rt_prepared_cache_flush(const rt_prepared *p);

/* ---- for generated code ---- */

/* The code a generated function returns after leaving the reason of its
 * failure in rt_last_error() of the thread it ran on (rt_parallel_for
 * carries a chunk's message to its caller): rt_call then reports that
 * text, "rt_call: <reason>". Any other non-zero code is reported as
 * "rt_call: 'NAME' failed with code N". */
#define RT_ERR_REPORTED (-2)
/* An access outside a buffer, found by code built with bounds checks
 * (cg_build_options.bounds_check): records "B[1000064] read outside B[64]
 * in 'default'" ("written outside" when is_write) in rt_last_error() and
 * returns RT_ERR_REPORTED. index and extent count elements of the
 * flattened buffer. */
int32_t rt_bounds_error(const char *func, const char *buffer, int64_t index, int64_t extent,
                        int32_t is_write);

#define RT_ARGS(...) ((int)(sizeof((DLTensor *[]){__VA_ARGS__}) / sizeof(DLTensor *))), (DLTensor *[]){__VA_ARGS__}

/* ---------------- timing ---------------- */

typedef struct {
    int warmup;           /* untimed calls first (default 1) */
    int repeat;           /* timed samples (default 5) */
    double min_repeat_ms; /* each sample repeats the call until it lasts at
                             least this long, and reports the mean (default 0) */
    bool flush_cache;     /* overwrite a 64 MiB buffer before every sample */
    /* Run before every call, warm-up included, outside the time taken
     * (NULL: none); e.g. rt_tensor_cache_flush of the operands, so that
     * each call reads them from memory as a kernel inside a model does.
     * With it every call is timed on its own, and a sample is the mean
     * of its calls' times, without the hook's; min_repeat_ms then bounds
     * the sample's wall time, hooks included. */
    void (*before_call)(void *user);
    void *before_call_user;
} rt_timer_config;

/* Per-call times in seconds. */
typedef struct {
    int n;
    double samples[64]; /* the first min(repeat, 64) samples */
    double median, mean, min, max;
    double stddev;
} rt_timing;

/* Default config: warmup 1, repeat 5, min_repeat_ms 0, no flush, no hook. */
rt_timer_config rt_timer_default(void);
/* Times fn(user) (which returns 0 or an error code). Returns 0, or the
 * first non-zero fn returned. */
int rt_time(int (*fn)(void *user), void *user, const rt_timer_config *cfg, rt_timing *out);
/* Times rt_call(m, name, nargs, args). */
int rt_time_call(rt_module *m, const char *name, int nargs, DLTensor *const *args,
                 const rt_timer_config *cfg, rt_timing *out);
/* Seconds on a monotonic clock. */
double rt_now(void);

/* Evicts the bytes [data, data + bytes) from every level of the CPU's
 * caches (written back where dirty): clflush per 64-byte line on x86,
 * `dc civac` on AArch64, elsewhere a 64 MiB buffer overwritten. For
 * timing a kernel as it runs inside a model (rt_timer_config.before_call;
 * TVM's enable_cpu_cache_flush). NULL or 0 bytes: nothing. */
void rt_cache_flush(const void *data, size_t bytes);
/* rt_cache_flush of a CPU tensor's elements (from data + byte_offset,
 * rt_tensor_nbytes of them). NULL, NULL data, or a tensor on a device
 * other than the CPU (kDLCPU, kDLCUDAHost): nothing. */
void rt_tensor_cache_flush(const DLTensor *t);

/* ---------------- CUDA (driver API and NVRTC, opened with dlopen) ----------------
 * Nothing here links against CUDA. Where libcuda.so.1 cannot be loaded,
 * every driver entry point fails with rt_last_error() starting
 * "CUDA driver not found (libcuda.so.1): ..."; where NVRTC cannot be
 * loaded, "NVRTC not found ...". */

/* Properties of one GPU (cuDeviceGetAttribute). Sizes in bytes. */
typedef struct {
    char name[256];
    int cc_major, cc_minor;        /* compute capability, e.g. 9.0 */
    int sm_count;                  /* streaming multiprocessors */
    int max_threads_per_block;
    int max_block_dim[3], max_grid_dim[3];
    int shared_mem_per_block;      /* static limit (48 KiB) */
    int shared_mem_per_block_optin;/* with the opt-in attribute */
    int regs_per_block, warp_size;
    int64_t total_mem;
} rt_cuda_props;

/* True when the driver loads, cuInit succeeds and there is a GPU; else
 * false with the reason in rt_last_error(). */
bool rt_cuda_available(void);
/* Number of GPUs; 0 or -1. */
int rt_cuda_device_count(int *count);
/* Properties of GPU `device` (0-based). 0 or -1. */
int rt_cuda_get_props(int device, rt_cuda_props *out);
/* Waits for all work on the device. 0 or -1 (the first asynchronous
 * error of earlier launches). */
int rt_cuda_synchronize(int device);

/* A compact row-major tensor in the memory of GPU `device` (kDLCUDA,
 * cuMemAlloc: 256-byte aligned), uninitialised. Free with rt_tensor_free
 * (which frees device memory for kDLCUDA tensors). NULL with
 * rt_last_error on a bad shape, no driver or no memory. */
DLTensor *rt_cuda_tensor_alloc(DLDataType dtype, int ndim, const int64_t *shape, int device);
/* Copies src's data into dst: any combination of CPU and CUDA tensors of
 * the same dtype and shape, both compact. Synchronous. 0 or -1. */
int rt_tensor_copy(DLTensor *dst, const DLTensor *src);

/* NVRTC output: PTX text (NUL-terminated, ptx_size bytes without the
 * NUL), the machine code (cubin, cubin_size bytes) when compiled for a
 * real architecture (else NULL), and the compiler log (NULL when empty).
 * malloc-owned; free with rt_nvrtc_output_free. */
typedef struct {
    char *ptx;
    size_t ptx_size;
    void *cubin;
    size_t cubin_size;
    char *log;
} rt_nvrtc_output;
bool rt_nvrtc_available(void);
int rt_nvrtc_version(int *major, int *minor);
/* Compiles CUDA C++ `source` (program name `name`, for messages) for
 * `arch`: a real architecture ("sm_90", "sm_90a") gives PTX and that
 * GPU's machine code (so loading it needs no PTX compilation by the
 * driver), a virtual one ("compute_90"; NULL: compute_75, the oldest
 * NVRTC 13 accepts) PTX alone. A source that includes <cuda_fp16.h> or
 * <cuda_bf16.h> (which NVRTC does not build in) is compiled with
 * -I<rt_cuda_include_dir>. Returns 0, or -1 with rt_last_error holding
 * NVRTC's message and log, or the include lookup's error. */
int rt_nvrtc_compile(const char *source, const char *name, const char *arch,
                     rt_nvrtc_output *out);
/* The directory holding CUDA header `header` (e.g. "cuda_fp16.h") into
 * dir (size bytes). Looked up: $LOOM_CUDA_INCLUDE when set and non-empty
 * (then only there: a wrong setting is reported, not passed over); else
 * <dir of the loaded libnvrtc>/../include (and /usr/local/cuda/include
 * when that library is in /usr/lib/x86_64-linux-gnu), then
 * /usr/local/cuda/include. Returns 0, or -1 with rt_last_error naming the
 * header, the places looked in, and LOOM_CUDA_INCLUDE. */
int rt_cuda_include_dir(const char *header, char *dir, size_t size);
/* rt_cuda_include_dir's search over given places (for callers with their
 * own, and for testing the errors): `env` (LOOM_CUDA_INCLUDE's value;
 * NULL or "": unset) alone when set, else dirs[0..ndirs) in order (NULL
 * entries skipped). 0 with dir filled, or -1 with rt_last_error:
 * "CUDA header H not found in LOOM_CUDA_INCLUDE='D'; set ..." or
 * "CUDA header H not found (looked in: D1, D2); set LOOM_CUDA_INCLUDE to
 * the CUDA include directory that holds it". */
int rt_cuda_include_search(const char *header, const char *env, const char *const *dirs,
                           int ndirs, char *dir, size_t size);
void rt_nvrtc_output_free(rt_nvrtc_output *out);

/* One kernel launch of a CUDA host function. */
typedef struct {
    const char *kernel;  /* symbol in the image (extern "C") */
    int64_t grid[3];     /* blocks per grid, x y z (each >= 1) */
    int64_t block[3];    /* threads per block, x y z (each >= 1) */
    int nargs;           /* kernel pointer arguments, in order: */
    const int *args;     /* i >= 0: host param i; i < 0: workspace -i-1 */
    int64_t shared_bytes; /* dynamic shared memory per block (extern
                             __shared__), bytes; 0 none. Above 48 KiB the
                             module opts the kernel in
                             (cuFuncSetAttribute) when it loads it. */
} rt_cuda_launch;

/* A host function: checks its tensors, runs the launches in order on the
 * (legacy) default stream and waits for them. Its workspaces (device
 * buffers for intermediates, workspace_bytes[i] bytes each) are allocated
 * at its first call on a GPU and kept for the next calls there until the
 * module is freed (a call that overlaps another on a second host thread
 * allocates and frees its own). */
typedef struct {
    const char *name;
    int nparams;
    const rt_param *params;
    int nworkspace;
    const int64_t *workspace_bytes;
    int nlaunches;
    const rt_cuda_launch *launches;
} rt_cuda_func;

/* A module of kind "cuda" (rt_module_device: kDLCUDA) over a PTX image
 * (NUL-terminated text). Everything is copied. The image is loaded
 * (cuModuleLoadData) into the GPU of the first argument at the first call,
 * so a module can be built, inspected and freed without a driver; calling
 * it then fails with the driver's message. Errors of a launch name the
 * kernel, its grid and block and the CUDA error (cuGetErrorName and
 * cuGetErrorString). NULL with rt_last_error on malformed input. */
rt_module *rt_cuda_module_new(const char *ptx, int nfuncs, const rt_cuda_func *funcs);
/* The same with machine code beside the PTX (rt_nvrtc_output's cubin,
 * copied; NULL: none): loaded in its place when the GPU runs that
 * architecture, which skips the driver's PTX compilation (tens of
 * milliseconds for a large kernel); the PTX is loaded when the GPU
 * refuses the cubin (another architecture). */
rt_module *rt_cuda_module_new_image(const char *ptx, const void *cubin, size_t cubin_size,
                                    int nfuncs, const rt_cuda_func *funcs);

/* Times rt_call(m, name, ...) on the GPU with CUDA events (cuEventRecord
 * around the launches, no host synchronisation between calls in a
 * sample): warmup, repeat and min_repeat_ms as in rt_time. flush_cache:
 * before every sample a device buffer twice the GPU's L2 is overwritten
 * (cuMemsetD8, ahead of the sample's start event), so the sample's first
 * call finds none of its operands in L2 (Triton's do_bench and nvbench
 * flush likewise). before_call: run on the host before every call,
 * warm-up included; each call is then timed on its own (an event pair
 * around it, a wait after it) and a sample is the mean of its calls'
 * event times, the hook outside them (min_repeat_ms then counts the
 * calls' event times, not the hooks'). Per-call seconds in out. 0 or -1
 * (rt_last_error, or rt_module_errmsg(m) for a failed call). */
int rt_cuda_time_call(rt_module *m, const char *name, int nargs, DLTensor *const *args,
                      const rt_timer_config *cfg, rt_timing *out);

LOOM_API_END
#ifdef __cplusplus
}
#endif
#endif /* LOOM_RUNTIME_H */
