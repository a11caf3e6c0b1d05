/*
 * runtime/cuda_module.c — modules of kind "cuda": a PTX image and host
 * functions (launch lists). The image is loaded into a device's primary
 * context at the first call on that device (cuModuleLoadData), so
 * building needs no GPU. Each call launches its kernels in order on the
 * default stream and synchronises after each one (so an asynchronous fault
 * is reported against the kernel that caused it), unless a CUDA-event
 * timing loop is running (then only at the end).
 *
 * Workspaces (device buffers for a function's intermediates) are allocated
 * at a function's first call on a device and kept until the module is
 * freed, as TVM's workspace pool and PyTorch's caching allocator keep
 * theirs. Allocating and freeing them in every call cost a cuMemAlloc, a
 * device-wide synchronisation and a cuMemFree each time, timed with the
 * kernels: a batch-16 implicit-GEMM convolution (a GEMM kernel and a copy,
 * a 3.2 MB workspace between them) timed 0.094 ms on an H200 where its
 * GEMM kernel alone had timed 0.015 ms (bench/RESULTS.md, sessions 36,
 * 49 and 53). Reuse needs no
 * synchronisation because every call launches on the one legacy default
 * stream, which runs kernels in the order they were launched, from any
 * host thread: a later call's kernels start after the earlier call's end.
 * A call that finds the kept set taken by a concurrent call on another
 * thread allocates its own and frees it after synchronising, as before.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda_internal.h"

#define CUDA_MAX_DEVICES 16

typedef struct cuda_impl cuda_impl;

typedef struct {
    char *kernel;
    int64_t grid[3], block[3];
    int nargs;
    int *args;
    int64_t shared_bytes;
    CUfunction fn[CUDA_MAX_DEVICES];
} cuda_launch;

typedef struct {
    cuda_impl *impl;
    char *name;
    int nparams;
    int nworkspace;
    int64_t *ws_bytes;
    /* The kept workspaces: nworkspace pointers per device (device d's at
     * ws_kept[d * nworkspace], all 0 until the first call there), and
     * whether a call is using a device's set; under the module's mutex. */
    CUdeviceptr *ws_kept;
    bool ws_taken[CUDA_MAX_DEVICES];
    int nlaunches;
    cuda_launch *launches;
} cuda_func;

struct cuda_impl {
    char *ptx;
    void *cubin; /* NULL: none (the driver reads its size from its header) */
    int nfuncs;
    cuda_func *funcs;
    pthread_mutex_t mu;
    CUmodule mod[CUDA_MAX_DEVICES];
};

/* Set while rt_cuda_time_call runs its loop: no per-kernel host sync. */
static _Thread_local bool timing_loop;

/* Whether f keeps a workspace set on device d. */
static bool has_kept(const cuda_func *f, int d) {
    return f->nworkspace && f->ws_kept[d * f->nworkspace];
}

/* Frees the n non-zero buffers of ws. */
static void free_set(const rt_cu_api *a, const CUdeviceptr *ws, int n) {
    for (int w = 0; w < n; ++w)
        if (ws[w]) a->MemFree(ws[w]);
}

static void impl_free(void *p) {
    cuda_impl *m = p;
    if (!m) return;
    const rt_cu_api *a = NULL;
    for (int d = 0; d < CUDA_MAX_DEVICES; ++d) {
        bool kept = false;
        for (int i = 0; i < m->nfuncs; ++i) kept = kept || has_kept(&m->funcs[i], d);
        if (!(m->mod[d] || kept) || !(a || (a = rt__cu())) || rt__cu_ctx(d)) continue;
        /* kernels launched without a wait (a timing loop's) may still use
         * the workspaces */
        if (kept) a->CtxSynchronize();
        for (int i = 0; i < m->nfuncs; ++i)
            if (has_kept(&m->funcs[i], d))
                free_set(a, &m->funcs[i].ws_kept[d * m->funcs[i].nworkspace], m->funcs[i].nworkspace);
        if (m->mod[d]) a->ModuleUnload(m->mod[d]);
    }
    for (int i = 0; i < m->nfuncs; ++i) {
        cuda_func *f = &m->funcs[i];
        free(f->ws_kept);
        for (int k = 0; k < f->nlaunches; ++k) {
            free(f->launches[k].kernel);
            free(f->launches[k].args);
        }
        free(f->launches);
        free(f->ws_bytes);
        free(f->name);
    }
    free(m->funcs);
    free(m->ptx);
    free(m->cubin);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static char *dupz(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Loads the image into device dev and resolves every kernel. */
static int ensure_loaded(cuda_impl *m, int dev) {
    if (dev < 0 || dev >= CUDA_MAX_DEVICES)
        return rt_set_error("cuda module: device id %d is out of range [0, %d)", dev,
                            CUDA_MAX_DEVICES);
    if (rt__cu_ctx(dev)) return -1;
    const rt_cu_api *a = rt__cu();
    pthread_mutex_lock(&m->mu);
    int rc = 0;
    if (!m->mod[dev]) {
        CUmodule mod = NULL;
        /* The cubin when this GPU takes it; else the PTX, which the driver
         * compiles for whatever GPU it is. */
        CUresult r = m->cubin ? a->ModuleLoadData(&mod, m->cubin) : RT_CU_NO_BINARY_FOR_GPU;
        if (r) {
            mod = NULL;
            r = a->ModuleLoadData(&mod, m->ptx);
        }
        if (r) rc = rt__cu_fail(r, "cuModuleLoadData (PTX, %zu bytes) on device %d", strlen(m->ptx), dev);
        for (int i = 0; !rc && i < m->nfuncs; ++i)
            for (int k = 0; !rc && k < m->funcs[i].nlaunches; ++k) {
                cuda_launch *l = &m->funcs[i].launches[k];
                if ((r = a->ModuleGetFunction(&l->fn[dev], mod, l->kernel)))
                    rc = rt__cu_fail(r, "cuModuleGetFunction('%s')", l->kernel);
                /* beyond the 48 KiB every kernel may take, the kernel
                 * must opt in to its dynamic shared memory */
                else if (l->shared_bytes > 49152 &&
                         (r = a->FuncSetAttribute(l->fn[dev], RT_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED,
                                                  (int)l->shared_bytes)))
                    rc = rt__cu_fail(r,
                                     "kernel '%s' asks for %lld bytes of dynamic shared memory; "
                                     "device %d refuses (cuFuncSetAttribute)",
                                     l->kernel, (long long)l->shared_bytes, dev);
            }
        if (rc && mod) a->ModuleUnload(mod);
        if (!rc) m->mod[dev] = mod;
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int launch_fail(CUresult r, const char *what, const cuda_launch *l) {
    return rt__cu_fail(r, "%s kernel '%s' grid (%lld, %lld, %lld) block (%lld, %lld, %lld)", what,
                       l->kernel, (long long)l->grid[0], (long long)l->grid[1],
                       (long long)l->grid[2], (long long)l->block[0], (long long)l->block[1],
                       (long long)l->block[2]);
}

/* The workspaces of a call of f on device dev: the kept set when no other
 * call holds it (*kept true), else a set of the call's own. The first
 * call on a device allocates the set it keeps. 0, or -1 with rt_last_error
 * (nothing held). */
static int take_workspaces(cuda_func *f, int dev, CUdeviceptr *ws, bool *kept) {
    cuda_impl *m = f->impl;
    CUdeviceptr *k = &f->ws_kept[dev * f->nworkspace];
    pthread_mutex_lock(&m->mu);
    bool have = k[0] != 0;
    *kept = have && !f->ws_taken[dev];
    if (*kept) {
        memcpy(ws, k, sizeof *ws * (size_t)f->nworkspace);
        f->ws_taken[dev] = true;
    }
    pthread_mutex_unlock(&m->mu);
    if (*kept) return 0;
    const rt_cu_api *a = rt__cu();
    for (int w = 0; w < f->nworkspace; ++w) {
        CUresult r = a->MemAlloc(&ws[w], (size_t)f->ws_bytes[w]);
        if (r) {
            ws[w] = 0;
            free_set(a, ws, w);
            return rt__cu_fail(r, "cuMemAlloc of workspace %d (%lld bytes) for '%s'", w,
                               (long long)f->ws_bytes[w], f->name);
        }
    }
    if (!have) {
        /* the first call keeps its set (unless another first call on this
         * device kept one meanwhile) */
        pthread_mutex_lock(&m->mu);
        if (!k[0]) {
            memcpy(k, ws, sizeof *k * (size_t)f->nworkspace);
            f->ws_taken[dev] = *kept = true;
        }
        pthread_mutex_unlock(&m->mu);
    }
    return 0;
}

/* Gives back what take_workspaces gave: the kept set for the next call
 * (stream order makes that safe at once), a call's own set freed once its
 * kernels are done. */
static void give_workspaces(cuda_func *f, int dev, const CUdeviceptr *ws, bool kept) {
    if (!kept) {
        free_set(rt__cu(), ws, f->nworkspace);
        return;
    }
    pthread_mutex_lock(&f->impl->mu);
    f->ws_taken[dev] = false;
    pthread_mutex_unlock(&f->impl->mu);
}

static int32_t call_func(void *self, int nargs, DLTensor *const *args) {
    cuda_func *f = self;
    int dev = nargs > 0 ? args[0]->device.device_id : 0;
    for (int i = 1; i < nargs; ++i)
        if (args[i]->device.device_id != dev)
            return rt_set_error("argument %d is on GPU %d but argument 0 on GPU %d; a call "
                                "runs on one GPU",
                                i, args[i]->device.device_id, dev);
    if (ensure_loaded(f->impl, dev)) return -1;
    const rt_cu_api *a = rt__cu();
    CUdeviceptr ws[64] = {0}; /* rt_cuda_module_new refuses more than 64 */
    bool kept = false;
    if (f->nworkspace && take_workspaces(f, dev, ws, &kept)) return -1;
    int rc = 0;
    for (int k = 0; k < f->nlaunches && !rc; ++k) {
        cuda_launch *l = &f->launches[k];
        CUdeviceptr ptrs[128];
        void *kp[128];
        for (int i = 0; i < l->nargs && i < 128; ++i) {
            int s = l->args[i];
            ptrs[i] = s >= 0 ? (CUdeviceptr)(uintptr_t)((char *)args[s]->data + args[s]->byte_offset)
                             : ws[-s - 1];
            kp[i] = &ptrs[i];
        }
        CUresult r = a->LaunchKernel(l->fn[dev], (unsigned)l->grid[0], (unsigned)l->grid[1],
                                     (unsigned)l->grid[2], (unsigned)l->block[0],
                                     (unsigned)l->block[1], (unsigned)l->block[2],
                                     (unsigned)l->shared_bytes, NULL, kp,
                                     NULL);
        if (r) rc = launch_fail(r, "cuLaunchKernel", l);
        else if (!timing_loop && (r = a->CtxSynchronize())) rc = launch_fail(r, "running", l);
    }
    if (rc || (f->nworkspace && !kept)) {
        /* A call's own workspaces may be freed only after its kernels ran;
         * after a failure nothing of it may still be running. */
        CUresult r = a->CtxSynchronize();
        if (r && !rc) rc = rt__cu_fail(r, "cuCtxSynchronize after '%s'", f->name);
    }
    if (f->nworkspace) give_workspaces(f, dev, ws, kept);
    return rc;
}

rt_module *rt_cuda_module_new(const char *ptx, int nfuncs, const rt_cuda_func *funcs) {
    return rt_cuda_module_new_image(ptx, NULL, 0, nfuncs, funcs);
}

rt_module *rt_cuda_module_new_image(const char *ptx, const void *cubin, size_t cubin_size,
                                    int nfuncs, const rt_cuda_func *funcs) {
    if (!ptx || nfuncs < 1 || !funcs) {
        rt_set_error("rt_cuda_module_new: needs a PTX image and at least one function");
        return NULL;
    }
    for (int i = 0; i < nfuncs; ++i) {
        const rt_cuda_func *f = &funcs[i];
        if (!f->name || f->nparams < 0 || f->nworkspace < 0 || f->nworkspace > 64 ||
            f->nlaunches < 0 || (f->nlaunches && !f->launches)) {
            rt_set_error("rt_cuda_module_new: function %d is malformed", i);
            return NULL;
        }
        for (int k = 0; k < f->nlaunches; ++k) {
            const rt_cuda_launch *l = &f->launches[k];
            bool ok = l->kernel && l->nargs >= 0 && l->nargs <= 128 && (!l->nargs || l->args);
            for (int d = 0; ok && d < 3; ++d)
                ok = l->grid[d] >= 1 && l->block[d] >= 1 && l->grid[d] <= INT32_MAX &&
                     l->block[d] <= 1024;
            ok = ok && l->shared_bytes >= 0 && l->shared_bytes <= INT32_MAX;
            for (int j = 0; ok && j < l->nargs; ++j)
                ok = l->args[j] < f->nparams && -l->args[j] - 1 < f->nworkspace;
            if (!ok) {
                rt_set_error("rt_cuda_module_new: launch %d of '%s' is malformed (kernel, "
                             "dimensions, shared bytes or argument slots)",
                             k, f->name);
                return NULL;
            }
        }
    }
    cuda_impl *m = calloc(1, sizeof *m);
    if (!m) goto oom;
    pthread_mutex_init(&m->mu, NULL);
    m->ptx = dupz(ptx);
    m->funcs = calloc((size_t)nfuncs, sizeof *m->funcs);
    if (!m->ptx || !m->funcs) goto oom;
    if (cubin && cubin_size) {
        if (!(m->cubin = malloc(cubin_size))) goto oom;
        memcpy(m->cubin, cubin, cubin_size);
    }
    m->nfuncs = nfuncs;
    for (int i = 0; i < nfuncs; ++i) {
        const rt_cuda_func *s = &funcs[i];
        cuda_func *f = &m->funcs[i];
        f->impl = m;
        f->nparams = s->nparams;
        if (!(f->name = dupz(s->name))) goto oom;
        f->nworkspace = s->nworkspace;
        if (s->nworkspace) {
            if (!(f->ws_bytes = malloc(sizeof(int64_t) * (size_t)s->nworkspace)) ||
                !(f->ws_kept = calloc((size_t)s->nworkspace * CUDA_MAX_DEVICES, sizeof *f->ws_kept)))
                goto oom;
            memcpy(f->ws_bytes, s->workspace_bytes, sizeof(int64_t) * (size_t)s->nworkspace);
        }
        f->nlaunches = s->nlaunches;
        if (s->nlaunches && !(f->launches = calloc((size_t)s->nlaunches, sizeof *f->launches)))
            goto oom;
        for (int k = 0; k < s->nlaunches; ++k) {
            const rt_cuda_launch *sl = &s->launches[k];
            cuda_launch *l = &f->launches[k];
            memcpy(l->grid, sl->grid, sizeof l->grid);
            memcpy(l->block, sl->block, sizeof l->block);
            l->nargs = sl->nargs;
            l->shared_bytes = sl->shared_bytes;
            if (!(l->kernel = dupz(sl->kernel))) goto oom;
            if (sl->nargs) {
                if (!(l->args = malloc(sizeof(int) * (size_t)sl->nargs))) goto oom;
                memcpy(l->args, sl->args, sizeof(int) * (size_t)sl->nargs);
            }
        }
    }
    rt_module *mod = rt_module_new("cuda", m, impl_free);
    if (!mod) {
        impl_free(m);
        return NULL;
    }
    rt_module_set_device(mod, kDLCUDA);
    for (int i = 0; i < nfuncs; ++i)
        if (rt_module_add_closure(mod, funcs[i].name, call_func, &m->funcs[i], funcs[i].nparams,
                                  funcs[i].params)) {
            rt_set_error("%s", rt_module_errmsg(mod));
            rt_module_free(mod);
            return NULL;
        }
    rt_module_set_text(mod, "ptx", ptx);
    return mod;
oom:
    impl_free(m);
    rt_set_error("rt_cuda_module_new: out of memory");
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Seconds for `n` back-to-back calls, measured with events. */
static int timed_calls(rt_module *m, const char *name, int nargs, DLTensor *const *args, int n,
                       CUevent e0, CUevent e1, double *sec) {
    const rt_cu_api *a = rt__cu();
    CUresult r = a->EventRecord(e0, NULL);
    if (r) return rt__cu_fail(r, "cuEventRecord");
    timing_loop = true;
    int rc = 0;
    for (int i = 0; i < n && !rc; ++i) rc = rt_call(m, name, nargs, args);
    timing_loop = false;
    if (rc) return -1;
    if ((r = a->EventRecord(e1, NULL))) return rt__cu_fail(r, "cuEventRecord");
    if ((r = a->EventSynchronize(e1)))
        return rt__cu_fail(r, "kernels of '%s' failed while timed (cuEventSynchronize)", name);
    float ms = 0;
    if ((r = a->EventElapsedTime(&ms, e0, e1))) return rt__cu_fail(r, "cuEventElapsedTime");
    *sec = (double)ms * 1e-3;
    return 0;
}

/* Seconds for n calls: back to back between one pair of events, or with
 * a before_call hook each call timed on its own, the hook (outside the
 * time) ahead of it: rt_timer_config.before_call's contract. */
static int timed_sample(rt_module *m, const char *name, int nargs, DLTensor *const *args, int n,
                        const rt_timer_config *c, CUevent e0, CUevent e1, double *sec) {
    if (!c->before_call) return timed_calls(m, name, nargs, args, n, e0, e1, sec);
    double sum = 0;
    for (int i = 0; i < n; ++i) {
        c->before_call(c->before_call_user);
        double t = 0;
        if (timed_calls(m, name, nargs, args, 1, e0, e1, &t)) return -1;
        sum += t;
    }
    *sec = sum;
    return 0;
}

/* A device buffer twice the GPU's L2 (256 MiB where the driver does not
 * say), for rt_timer_config.flush_cache: writing it before a sample leaves
 * none of the kernels' operands in L2, as Triton's do_bench and nvbench
 * do. */
static int l2_flush_buffer(int dev, CUdeviceptr *buf, size_t *bytes) {
    const rt_cu_api *a = rt__cu();
    int l2 = 0;
    CUresult r = a->DeviceGetAttribute(&l2, RT_CU_ATTR_L2_CACHE_SIZE, dev);
    *bytes = !r && l2 > 0 ? 2 * (size_t)l2 : (size_t)256 << 20;
    if ((r = a->MemAlloc(buf, *bytes)))
        return rt__cu_fail(r, "rt_cuda_time_call: cuMemAlloc of the %zu-byte buffer that flushes L2",
                           *bytes);
    return 0;
}

int rt_cuda_time_call(rt_module *m, const char *name, int nargs, DLTensor *const *args,
                      const rt_timer_config *cfg, rt_timing *out) {
    if (!m || !out) return rt_set_error("rt_cuda_time_call: module and out must be non-NULL");
    if (rt_module_device(m) != kDLCUDA)
        return rt_set_error("rt_cuda_time_call: module of kind '%s' does not run on the GPU",
                            rt_module_kind(m));
    memset(out, 0, sizeof *out);
    rt_timer_config c = cfg ? *cfg : rt_timer_default();
    if (c.repeat < 1) c.repeat = 1;
    if (c.warmup < 0) c.warmup = 0;
    /* The first call checks the arguments, loads the image and warms up. */
    for (int i = 0; i < (c.warmup > 0 ? c.warmup : 1); ++i) {
        if (c.before_call) c.before_call(c.before_call_user);
        if (rt_call(m, name, nargs, args)) return rt_set_error("%s", rt_module_errmsg(m));
    }
    int dev = nargs > 0 && args[0] ? args[0]->device.device_id : 0;
    if (rt__cu_ctx(dev)) return -1;
    const rt_cu_api *a = rt__cu();
    CUdeviceptr flush = 0;
    size_t flush_bytes = 0;
    if (c.flush_cache && l2_flush_buffer(dev, &flush, &flush_bytes)) return -1;
    CUevent e0 = NULL, e1 = NULL;
    CUresult r;
    if ((r = a->EventCreate(&e0, 0)) || (r = a->EventCreate(&e1, 0))) {
        if (e0) a->EventDestroy(e0);
        if (flush) a->MemFree(flush);
        return rt__cu_fail(r, "cuEventCreate");
    }
    int rc = 0, per = 1;
    if (c.min_repeat_ms > 0) {
        double once = 0;
        rc = timed_sample(m, name, nargs, args, 1, &c, e0, e1, &once);
        if (!rc && once * 1e3 < c.min_repeat_ms)
            per = (int)(c.min_repeat_ms / (once * 1e3 > 1e-6 ? once * 1e3 : 1e-6)) + 1;
        if (per > 100000) per = 100000;
    }
    int n = c.repeat < 64 ? c.repeat : 64;
    double sum = 0;
    for (int i = 0; i < n && !rc; ++i) {
        double t = 0;
        /* the flush runs on the stream ahead of the sample's start event:
         * outside the time */
        if (flush && (r = a->MemsetD8(flush, (unsigned char)i, flush_bytes)))
            rc = rt__cu_fail(r, "rt_cuda_time_call: cuMemsetD8 flushing L2");
        if (!rc) rc = timed_sample(m, name, nargs, args, per, &c, e0, e1, &t);
        out->samples[i] = t / per;
        sum += out->samples[i];
    }
    a->EventDestroy(e0);
    a->EventDestroy(e1);
    if (flush) {
        a->CtxSynchronize();
        a->MemFree(flush);
    }
    if (rc) return -1;
    out->n = n;
    double sorted[64];
    memcpy(sorted, out->samples, sizeof(double) * (size_t)n);
    qsort(sorted, (size_t)n, sizeof(double), cmp_double);
    out->min = sorted[0];
    out->max = sorted[n - 1];
    out->median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    out->mean = sum / n;
    double var = 0;
    for (int i = 0; i < n; ++i) var += (out->samples[i] - out->mean) * (out->samples[i] - out->mean);
    out->stddev = n > 1 ? __builtin_sqrt(var / (n - 1)) : 0;
    return 0;
}
