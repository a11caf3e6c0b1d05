/*
 * runtime/cuda_internal.h — the CUDA driver API and NVRTC as tables of
 * function pointers filled by dlopen/dlsym, so libloom has no link-time
 * CUDA dependency and runs (with clear errors) where neither exists.
 *
 * Types and enum values are declared here with the numbers of CUDA 13's
 * cuda.h / nvrtc.h (checked against /usr/local/cuda/include), so building
 * Loom needs no CUDA headers either.
 */
#ifndef LOOM_RT_CUDA_INTERNAL_H
#define LOOM_RT_CUDA_INTERNAL_H

#include <stddef.h>

#include "runtime/rt_internal.h"

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;

/* CUresult values we test for (cuda.h's numbers). */
#define RT_CU_NO_BINARY_FOR_GPU 209

#define RT_CU_ATTR_MAX_THREADS_PER_BLOCK 1
#define RT_CU_ATTR_MAX_BLOCK_DIM_X 2
#define RT_CU_ATTR_MAX_GRID_DIM_X 5
#define RT_CU_ATTR_MAX_SHARED_PER_BLOCK 8
#define RT_CU_ATTR_WARP_SIZE 10
#define RT_CU_ATTR_MAX_REGISTERS_PER_BLOCK 12
#define RT_CU_ATTR_SM_COUNT 16
#define RT_CU_ATTR_L2_CACHE_SIZE 38
#define RT_CU_ATTR_CC_MAJOR 75
#define RT_CU_ATTR_CC_MINOR 76
#define RT_CU_ATTR_MAX_SHARED_PER_BLOCK_OPTIN 97
/* CUfunction_attribute: the dynamic shared memory a launch may ask for */
#define RT_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED 8

typedef struct {
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*FuncSetAttribute)(CUfunction, int, int);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*EventDestroy)(CUevent);
} rt_cu_api;

/* The driver, loaded and initialised once per process (cuInit(0)). NULL
 * with rt_last_error "CUDA driver not found (libcuda.so.1): <dlerror>" or
 * the cuInit failure. Thread-safe. */
const rt_cu_api *rt__cu(void);
/* Makes device `dev`'s primary context current in the calling thread.
 * 0, or -1 with rt_last_error. */
int rt__cu_ctx(int dev);
/* "what: CUDA_ERROR_X (text)" into rt_last_error; returns -1. */
int rt__cu_fail(CUresult r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* "CUDA_ERROR_X (text)" for r into buf. */
const char *rt__cu_errstr(CUresult r, char *buf, size_t size);

#endif
