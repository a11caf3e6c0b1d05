/*
 * tests/fake_cuda/fake_libcuda.c — a stand-in for the CUDA driver
 * (libcuda.so.1) for tests of the runtime's host side on machines with no
 * GPU: test_cuda_workspace runs with it first on LD_LIBRARY_PATH.
 *
 * Device memory is host memory (cuMemAlloc is malloc); a "kernel" runs no
 * code: cuLaunchKernel records the launch (kernel name, and its pointer
 * arguments: as many as the name's last character says, "gemm3" three)
 * and succeeds, except for a kernel named "fault", whose launch
 * fails with CUDA_ERROR_LAUNCH_FAILED (719). There are two devices.
 * fake_cu_counts() tells the test what the runtime asked of the driver:
 * allocations, frees, synchronisations, launches, memsets, and the
 * buffers still allocated; every event pair measures 1 ms; fake_cu_fail_next(entry, code) makes the next call of one
 * entry point ("cuMemAlloc_v2", "cuModuleLoadData", ...) return code.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

typedef struct {
    long allocs, frees, syncs, launches;
    long live;          /* buffers allocated and not freed */
    CUdeviceptr last_args[8]; /* the last launch's pointer arguments */
    int last_nargs;
    char last_kernel[64];
    long memsets;
    size_t memset_bytes; /* the last cuMemsetD8's */
} fake_cu_stats;

static fake_cu_stats st;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int ctx_token, mod_token;

static char fail_entry[64];
static int fail_code;

__attribute__((visibility("default"))) void fake_cu_fail_next(const char *entry, int code) {
    pthread_mutex_lock(&mu);
    snprintf(fail_entry, sizeof fail_entry, "%s", entry);
    fail_code = code;
    pthread_mutex_unlock(&mu);
}

/* The code the entry point should fail with this time (once), or 0. */
static int failing(const char *entry) {
    pthread_mutex_lock(&mu);
    int c = 0;
    if (fail_code && !strcmp(fail_entry, entry)) {
        c = fail_code;
        fail_code = 0;
    }
    pthread_mutex_unlock(&mu);
    return c;
}

/* A copy of the counts so far. */
__attribute__((visibility("default"))) void fake_cu_counts(fake_cu_stats *out) {
    pthread_mutex_lock(&mu);
    *out = st;
    pthread_mutex_unlock(&mu);
}

CUresult cuInit(unsigned flags) { (void)flags; return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 2; return 0; }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal < 2 ? 0 : 101; }
CUresult cuDeviceGetName(char *name, int len, int dev) {
    (void)dev;
    strncpy(name, "Fake GPU", (size_t)len);
    if (len > 0) name[len - 1] = 0;
    return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
    (void)dev;
    switch (attr) {
    case 1: case 2: *v = 1024; break;           /* threads per block, block x */
    case 5: *v = 2147483647; break;             /* grid x */
    case 8: *v = 49152; break;                  /* shared per block */
    case 10: *v = 32; break;                    /* warp */
    case 12: *v = 65536; break;                 /* registers per block */
    case 16: *v = 132; break;                   /* SMs */
    case 38: *v = 1 << 20; break;               /* L2 bytes */
    case 75: *v = 9; break;                     /* compute capability */
    case 76: *v = 0; break;
    case 97: *v = 232448; break;                /* shared per block, opt-in */
    default: *v = 0;
    }
    return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *b, int dev) { (void)dev; *b = (size_t)1 << 34; return 0; }
CUresult cuDevicePrimaryCtxRetain(void **c, int dev) { (void)dev; *c = &ctx_token; return 0; }
CUresult cuCtxSetCurrent(void *c) { (void)c; return 0; }
CUresult cuCtxSynchronize(void) {
    pthread_mutex_lock(&mu);
    st.syncs++;
    pthread_mutex_unlock(&mu);
    return 0;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    int c = failing("cuMemAlloc_v2");
    if (c) return c;
    void *q = malloc(n ? n : 1);
    if (!q) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    *p = (CUdeviceptr)(uintptr_t)q;
    pthread_mutex_lock(&mu);
    st.allocs++;
    st.live++;
    pthread_mutex_unlock(&mu);
    return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
    free((void *)(uintptr_t)p);
    pthread_mutex_lock(&mu);
    st.frees++;
    st.live--;
    pthread_mutex_unlock(&mu);
    return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
    int c = failing("cuMemcpyHtoD_v2");
    if (!c) memcpy((void *)(uintptr_t)d, s, n);
    return c;
}
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
    int c = failing("cuMemcpyDtoH_v2");
    if (!c) memcpy(d, (void *)(uintptr_t)s, n);
    return c;
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
    memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
    return 0;
}
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
    int c = failing("cuMemsetD8_v2");
    if (c) return c;
    memset((void *)(uintptr_t)d, v, n);
    pthread_mutex_lock(&mu);
    st.memsets++;
    st.memset_bytes = n;
    pthread_mutex_unlock(&mu);
    return 0;
}
CUresult cuModuleLoadData(void **m, const void *image) {
    (void)image;
    int c = failing("cuModuleLoadData");
    if (c) return c;
    *m = &mod_token;
    return 0;
}
/* A function handle points at its name, kept in a table (no allocation
 * for a leak checker to report: handles live as long as the process). */
static char fn_names[64][64];
static int nfn;
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
    (void)m;
    int c = failing("cuModuleGetFunction");
    if (c) return c;
    pthread_mutex_lock(&mu);
    int i = 0;
    while (i < nfn && strcmp(fn_names[i], name)) i++;
    if (i == nfn && nfn < 64) snprintf(fn_names[nfn++], sizeof fn_names[0], "%s", name);
    *f = i < nfn ? fn_names[i] : NULL;
    pthread_mutex_unlock(&mu);
    return *f ? 0 : 500; /* CUDA_ERROR_NOT_FOUND */
}
CUresult cuModuleUnload(void *m) { (void)m; return 0; }
CUresult cuFuncSetAttribute(void *f, int attr, int v) {
    (void)f; (void)attr; (void)v;
    return failing("cuFuncSetAttribute");
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)stream;
    (void)extra;
    const char *name = f;
    pthread_mutex_lock(&mu);
    st.launches++;
    snprintf(st.last_kernel, sizeof st.last_kernel, "%s", name);
    size_t len = strlen(name);
    int n = len && name[len - 1] >= '0' && name[len - 1] <= '8' ? name[len - 1] - '0' : 0;
    for (int i = 0; i < n; ++i) st.last_args[i] = *(CUdeviceptr *)params[i];
    st.last_nargs = n;
    pthread_mutex_unlock(&mu);
    return strcmp(name, "fault") ? 0 : 719;
}
/* The names and texts of the codes the stand-in returns (cuda.h's). */
static const struct {
    int code;
    const char *name, *text;
} errs[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
};
CUresult cuGetErrorName(CUresult r, const char **s) {
    for (size_t i = 0; i < sizeof errs / sizeof *errs; i++)
        if (errs[i].code == r) return *s = errs[i].name, 0;
    *s = NULL;
    return 1;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
    for (size_t i = 0; i < sizeof errs / sizeof *errs; i++)
        if (errs[i].code == r) return *s = errs[i].text, 0;
    *s = NULL;
    return 1;
}
static int event_token;
CUresult cuEventCreate(void **e, unsigned flags) { (void)flags; *e = &event_token; return 0; }
CUresult cuEventRecord(void *e, void *s) { (void)e; (void)s; return 0; }
CUresult cuEventSynchronize(void *e) { (void)e; return failing("cuEventSynchronize"); }
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 1.0f; return 0; }
CUresult cuEventDestroy_v2(void *e) { (void)e; return 0; }
