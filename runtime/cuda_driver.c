/*
 * runtime/cuda_driver.c — the CUDA driver API opened with dlopen: one
 * process-wide table, initialised once; device properties; primary
 * contexts; device-wide synchronisation; error text from cuGetErrorName and
 * cuGetErrorString.
 *
 * The stub library in the toolkit (lib/stubs/libcuda.so) is never loaded:
 * it satisfies the linker but every call fails (CUDA_ERROR_STUB_LIBRARY).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/cuda_internal.h"

static rt_cu_api cu_api;
static const rt_cu_api *cu_ok;
static char cu_err[768];
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t ctx_mu = PTHREAD_MUTEX_INITIALIZER;
static CUcontext ctx_of[64];

static void *sym(void *h, const char *a, const char *b) {
    void *p = dlsym(h, a);
    if (!p && b) p = dlsym(h, b);
    return p;
}

static void cu_load(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(cu_err, sizeof cu_err,
                 "CUDA driver not found (libcuda.so.1): %s; no NVIDIA GPU driver is installed "
                 "on this machine",
                 e ? e : "dlopen failed");
        return;
    }
    rt_cu_api *a = &cu_api;
    struct {
        void **slot;
        const char *name, *alt;
    } t[] = {
        {(void **)&a->Init, "cuInit", NULL},
        {(void **)&a->DriverGetVersion, "cuDriverGetVersion", NULL},
        {(void **)&a->DeviceGetCount, "cuDeviceGetCount", NULL},
        {(void **)&a->DeviceGet, "cuDeviceGet", NULL},
        {(void **)&a->DeviceGetName, "cuDeviceGetName", NULL},
        {(void **)&a->DeviceGetAttribute, "cuDeviceGetAttribute", NULL},
        {(void **)&a->DeviceTotalMem, "cuDeviceTotalMem_v2", NULL},
        {(void **)&a->DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL},
        {(void **)&a->CtxSetCurrent, "cuCtxSetCurrent", NULL},
        {(void **)&a->CtxSynchronize, "cuCtxSynchronize", NULL},
        {(void **)&a->MemAlloc, "cuMemAlloc_v2", NULL},
        {(void **)&a->MemFree, "cuMemFree_v2", NULL},
        {(void **)&a->MemcpyHtoD, "cuMemcpyHtoD_v2", NULL},
        {(void **)&a->MemcpyDtoH, "cuMemcpyDtoH_v2", NULL},
        {(void **)&a->MemcpyDtoD, "cuMemcpyDtoD_v2", NULL},
        {(void **)&a->MemsetD8, "cuMemsetD8_v2", NULL},
        {(void **)&a->ModuleLoadData, "cuModuleLoadData", NULL},
        {(void **)&a->ModuleGetFunction, "cuModuleGetFunction", NULL},
        {(void **)&a->ModuleUnload, "cuModuleUnload", NULL},
        {(void **)&a->FuncSetAttribute, "cuFuncSetAttribute", NULL},
        {(void **)&a->LaunchKernel, "cuLaunchKernel", NULL},
        {(void **)&a->GetErrorName, "cuGetErrorName", NULL},
        {(void **)&a->GetErrorString, "cuGetErrorString", NULL},
        {(void **)&a->EventCreate, "cuEventCreate", NULL},
        {(void **)&a->EventRecord, "cuEventRecord", NULL},
        {(void **)&a->EventSynchronize, "cuEventSynchronize", NULL},
        {(void **)&a->EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"},
        {(void **)&a->EventDestroy, "cuEventDestroy_v2", "cuEventDestroy"},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; ++i) {
        *t[i].slot = sym(h, t[i].name, t[i].alt);
        if (!*t[i].slot) {
            snprintf(cu_err, sizeof cu_err,
                     "CUDA driver found (libcuda.so.1) but it lacks %s: the driver is too old",
                     t[i].name);
            return;
        }
    }
    CUresult r = a->Init(0);
    if (r != 0) {
        char buf[256];
        snprintf(cu_err, sizeof cu_err, "CUDA driver (libcuda.so.1): cuInit failed: %s",
                 rt__cu_errstr(r, buf, sizeof buf));
        return;
    }
    cu_ok = a;
}

const rt_cu_api *rt__cu(void) {
    pthread_once(&cu_once, cu_load);
    if (!cu_ok) rt_set_error("%s", cu_err);
    return cu_ok;
}

const char *rt__cu_errstr(CUresult r, char *buf, size_t size) {
    const char *name = NULL, *text = NULL;
    if (cu_api.GetErrorName) cu_api.GetErrorName(r, &name);
    if (cu_api.GetErrorString) cu_api.GetErrorString(r, &text);
    snprintf(buf, size, "%s (%s)", name ? name : "CUDA_ERROR_UNKNOWN_CODE",
             text ? text : "no description");
    if (!name) {
        size_t n = strlen(buf);
        snprintf(buf + n, size - n, " [code %d]", r);
    }
    return buf;
}

int rt__cu_fail(CUresult r, const char *fmt, ...) {
    char what[640], err[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return rt_set_error("%s: %s", what, rt__cu_errstr(r, err, sizeof err));
}

int rt__cu_ctx(int dev) {
    const rt_cu_api *a = rt__cu();
    if (!a) return -1;
    if (dev < 0 || dev >= 64) return rt_set_error("CUDA: device id %d is out of range", dev);
    pthread_mutex_lock(&ctx_mu);
    CUcontext c = ctx_of[dev];
    int rc = 0;
    if (!c) {
        int n = 0;
        CUresult r = a->DeviceGetCount(&n);
        if (r) rc = rt__cu_fail(r, "cuDeviceGetCount");
        else if (dev >= n) rc = rt_set_error("CUDA: device %d does not exist (%d devices)", dev, n);
        CUdevice d = 0;
        if (!rc && (r = a->DeviceGet(&d, dev))) rc = rt__cu_fail(r, "cuDeviceGet(%d)", dev);
        if (!rc && (r = a->DevicePrimaryCtxRetain(&c, d)))
            rc = rt__cu_fail(r, "cuDevicePrimaryCtxRetain(device %d)", dev);
        if (!rc) ctx_of[dev] = c;
    }
    pthread_mutex_unlock(&ctx_mu);
    if (rc) return rc;
    CUresult r = a->CtxSetCurrent(c);
    return r ? rt__cu_fail(r, "cuCtxSetCurrent(device %d)", dev) : 0;
}

bool rt_cuda_available(void) {
    const rt_cu_api *a = rt__cu();
    if (!a) return false;
    int n = 0;
    CUresult r = a->DeviceGetCount(&n);
    if (r) {
        rt__cu_fail(r, "cuDeviceGetCount");
        return false;
    }
    if (n < 1) {
        rt_set_error("CUDA driver loaded but it reports no GPU");
        return false;
    }
    return true;
}

int rt_cuda_device_count(int *count) {
    if (!count) return rt_set_error("rt_cuda_device_count: count is NULL");
    *count = 0;
    const rt_cu_api *a = rt__cu();
    if (!a) return -1;
    CUresult r = a->DeviceGetCount(count);
    return r ? rt__cu_fail(r, "cuDeviceGetCount") : 0;
}

int rt_cuda_get_props(int dev, rt_cuda_props *p) {
    if (!p) return rt_set_error("rt_cuda_get_props: props is NULL");
    memset(p, 0, sizeof *p);
    const rt_cu_api *a = rt__cu();
    if (!a) return -1;
    int n = 0;
    CUresult r = a->DeviceGetCount(&n);
    if (r) return rt__cu_fail(r, "cuDeviceGetCount");
    if (dev < 0 || dev >= n)
        return rt_set_error("rt_cuda_get_props: device %d does not exist (%d devices)", dev, n);
    CUdevice d;
    if ((r = a->DeviceGet(&d, dev))) return rt__cu_fail(r, "cuDeviceGet(%d)", dev);
    if ((r = a->DeviceGetName(p->name, (int)sizeof p->name, d)))
        return rt__cu_fail(r, "cuDeviceGetName(%d)", dev);
    struct {
        int *out;
        int attr;
    } q[] = {{&p->max_threads_per_block, RT_CU_ATTR_MAX_THREADS_PER_BLOCK},
             {&p->max_block_dim[0], RT_CU_ATTR_MAX_BLOCK_DIM_X},
             {&p->max_block_dim[1], RT_CU_ATTR_MAX_BLOCK_DIM_X + 1},
             {&p->max_block_dim[2], RT_CU_ATTR_MAX_BLOCK_DIM_X + 2},
             {&p->max_grid_dim[0], RT_CU_ATTR_MAX_GRID_DIM_X},
             {&p->max_grid_dim[1], RT_CU_ATTR_MAX_GRID_DIM_X + 1},
             {&p->max_grid_dim[2], RT_CU_ATTR_MAX_GRID_DIM_X + 2},
             {&p->shared_mem_per_block, RT_CU_ATTR_MAX_SHARED_PER_BLOCK},
             {&p->shared_mem_per_block_optin, RT_CU_ATTR_MAX_SHARED_PER_BLOCK_OPTIN},
             {&p->warp_size, RT_CU_ATTR_WARP_SIZE},
             {&p->regs_per_block, RT_CU_ATTR_MAX_REGISTERS_PER_BLOCK},
             {&p->sm_count, RT_CU_ATTR_SM_COUNT},
             {&p->cc_major, RT_CU_ATTR_CC_MAJOR},
             {&p->cc_minor, RT_CU_ATTR_CC_MINOR}};
    for (size_t i = 0; i < sizeof q / sizeof *q; ++i)
        if ((r = a->DeviceGetAttribute(q[i].out, q[i].attr, d)))
            return rt__cu_fail(r, "cuDeviceGetAttribute(%d, device %d)", q[i].attr, dev);
    size_t mem = 0;
    if ((r = a->DeviceTotalMem(&mem, d))) return rt__cu_fail(r, "cuDeviceTotalMem(%d)", dev);
    p->total_mem = (int64_t)mem;
    return 0;
}

int rt_cuda_synchronize(int dev) {
    if (rt__cu_ctx(dev)) return -1;
    CUresult r = rt__cu()->CtxSynchronize();
    return r ? rt__cu_fail(r, "cuCtxSynchronize(device %d)", dev) : 0;
}
