/*
 * runtime/cuda_nvrtc.c — NVRTC (the CUDA run-time compiler) opened with
 * dlopen: CUDA C++ source to PTX for a virtual architecture compute_XX.
 *
 * Library search: $LOOM_NVRTC, then libnvrtc.so.13, .so.12, the unversioned
 * name, and /usr/local/cuda/lib64/libnvrtc.so (the loader path on CUDA
 * machines usually lists CUDA's lib64, the last entry covers the rest).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cuda_internal.h"

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

static struct {
    nvrtcResult (*Version)(int *, int *);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int,
                                 const char *const *, const char *const *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetPTX)(nvrtcProgram, char *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    /* Optional (NVRTC 11.1 on): machine code of a real architecture. */
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    const char *(*GetErrorString)(nvrtcResult);
} nv;
static bool nv_ok;
static char nv_err[768];
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

static void nv_load(void) {
    const char *names[] = {getenv("LOOM_NVRTC"), "libnvrtc.so.13", "libnvrtc.so.12",
                           "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"};
    void *h = NULL;
    const char *last = "not found";
    for (size_t i = 0; i < sizeof names / sizeof *names && !h; ++i) {
        if (!names[i] || !*names[i]) continue;
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            if (e) last = e;
        }
    }
    if (!h) {
        snprintf(nv_err, sizeof nv_err,
                 "NVRTC not found (libnvrtc.so.13, libnvrtc.so.12, "
                 "/usr/local/cuda/lib64/libnvrtc.so; or set LOOM_NVRTC): %s",
                 last);
        return;
    }
    struct {
        void **slot;
        const char *name;
    } t[] = {{(void **)&nv.Version, "nvrtcVersion"},
             {(void **)&nv.CreateProgram, "nvrtcCreateProgram"},
             {(void **)&nv.CompileProgram, "nvrtcCompileProgram"},
             {(void **)&nv.GetProgramLogSize, "nvrtcGetProgramLogSize"},
             {(void **)&nv.GetProgramLog, "nvrtcGetProgramLog"},
             {(void **)&nv.GetPTXSize, "nvrtcGetPTXSize"},
             {(void **)&nv.GetPTX, "nvrtcGetPTX"},
             {(void **)&nv.DestroyProgram, "nvrtcDestroyProgram"},
             {(void **)&nv.GetErrorString, "nvrtcGetErrorString"}};
    for (size_t i = 0; i < sizeof t / sizeof *t; ++i)
        if (!(*t[i].slot = dlsym(h, t[i].name))) {
            snprintf(nv_err, sizeof nv_err, "NVRTC library lacks %s", t[i].name);
            return;
        }
    nv.GetCUBINSize = (nvrtcResult(*)(nvrtcProgram, size_t *))dlsym(h, "nvrtcGetCUBINSize");
    nv.GetCUBIN = (nvrtcResult(*)(nvrtcProgram, char *))dlsym(h, "nvrtcGetCUBIN");
    nv_ok = true;
}

static bool nv_get(void) {
    pthread_once(&nv_once, nv_load);
    if (!nv_ok) rt_set_error("%s", nv_err);
    return nv_ok;
}

bool rt_nvrtc_available(void) { return nv_get(); }

int rt_nvrtc_version(int *major, int *minor) {
    if (!major || !minor) return rt_set_error("rt_nvrtc_version: NULL output");
    if (!nv_get()) return -1;
    nvrtcResult r = nv.Version(major, minor);
    return r ? rt_set_error("nvrtcVersion: %s", nv.GetErrorString(r)) : 0;
}

/* "sm_90", "sm_90a", "compute_90" -> "compute_90"/"compute_90a"; 0 or -1. */
static int virtual_arch(const char *arch, char *out, size_t size) {
    const char *num = NULL;
    if (!strncmp(arch, "sm_", 3)) num = arch + 3;
    else if (!strncmp(arch, "compute_", 8)) num = arch + 8;
    if (!num || !*num) return -1;
    size_t n = strlen(num);
    for (size_t i = 0; i < n; ++i) {
        bool digit = num[i] >= '0' && num[i] <= '9';
        bool suffix = i == n - 1 && i > 0 && (num[i] == 'a' || num[i] == 'f');
        if (!digit && !suffix) return -1;
    }
    if (n > 8) return -1;
    snprintf(out, size, "compute_%s", num);
    return 0;
}

void rt_nvrtc_output_free(rt_nvrtc_output *o) {
    if (!o) return;
    free(o->ptx);
    free(o->cubin);
    free(o->log);
    memset(o, 0, sizeof *o);
}

/* CUDA's include directory (cuda_fp16.h, mma.h: headers NVRTC does not
 * build in), for sources that include them: $LOOM_CUDA_INCLUDE, else the
 * include/ beside the loaded libnvrtc's lib directory, else
 * /usr/local/cuda/include; the first holding mma.h. NULL when none does. */
static const char *cuda_include_dir(char *buf, size_t cap) {
    const char *env = getenv("LOOM_CUDA_INCLUDE");
    if (env && *env) {
        snprintf(buf, cap, "%s/mma.h", env);
        if (access(buf, R_OK) == 0) return snprintf(buf, cap, "%s", env), buf;
        return NULL; /* an explicit choice is not second-guessed */
    }
    Dl_info info;
    if (nv.CompileProgram && dladdr((void *)nv.CompileProgram, &info) && info.dli_fname) {
        char lib[512];
        snprintf(lib, sizeof lib, "%s", info.dli_fname);
        char *slash = strrchr(lib, '/');
        if (slash) {
            *slash = 0;
            snprintf(buf, cap, "%s/../include/mma.h", lib);
            if (access(buf, R_OK) == 0) return snprintf(buf, cap, "%s/../include", lib), buf;
        }
    }
    snprintf(buf, cap, "/usr/local/cuda/include/mma.h");
    if (access(buf, R_OK) == 0) return snprintf(buf, cap, "/usr/local/cuda/include"), buf;
    return NULL;
}

int rt_nvrtc_compile(const char *source, const char *name, const char *arch,
                     rt_nvrtc_output *out) {
    if (!out) return rt_set_error("rt_nvrtc_compile: out is NULL");
    memset(out, 0, sizeof *out);
    if (!source) return rt_set_error("rt_nvrtc_compile: source is NULL");
    if (!name || !*name) name = "loom_kernel.cu";
    if (!arch || !*arch) arch = "compute_75";
    char varch[32];
    if (virtual_arch(arch, varch, sizeof varch))
        return rt_set_error("rt_nvrtc_compile: architecture '%s' is not sm_XX or compute_XX "
                            "(e.g. sm_90)",
                            arch);
    if (!nv_get()) return -1;
    /* A real architecture is compiled as such when NVRTC can hand over the
     * machine code: PTX and cubin both come out of one compilation. */
    bool real = !strncmp(arch, "sm_", 3) && nv.GetCUBINSize && nv.GetCUBIN;
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s%s", real ? "sm_" : "",
             real ? varch + 8 : varch);
    const char *opts[] = {archopt, "--std=c++17", "-default-device", "--fmad=true", NULL};
    int nopts = 4;
    char inc[600], incopt[640];
    if (strstr(source, "#include <")) {
        const char *dir = cuda_include_dir(inc, sizeof inc);
        if (!dir)
            return rt_set_error(
                "NVRTC: %s includes CUDA headers (mma.h, cuda_fp16.h) and no CUDA include "
                "directory holds them (%s; else beside libnvrtc's lib directory, "
                "/usr/local/cuda/include): set LOOM_CUDA_INCLUDE to CUDA's include directory",
                name, getenv("LOOM_CUDA_INCLUDE") ? "LOOM_CUDA_INCLUDE has no mma.h"
                                                  : "LOOM_CUDA_INCLUDE is not set");
        snprintf(incopt, sizeof incopt, "-I%s", dir);
        opts[nopts++] = incopt;
    }
    nvrtcProgram prog = NULL;
    nvrtcResult r = nv.CreateProgram(&prog, source, name, 0, NULL, NULL);
    if (r) return rt_set_error("nvrtcCreateProgram(%s): %s", name, nv.GetErrorString(r));
    r = nv.CompileProgram(prog, nopts, opts);
    size_t logsize = 0;
    if (!nv.GetProgramLogSize(prog, &logsize) && logsize > 1) {
        out->log = calloc(logsize + 1, 1);
        if (out->log) nv.GetProgramLog(prog, out->log);
    }
    int rc = 0;
    if (r) {
        rc = rt_set_error("NVRTC failed to compile %s for %s: %s\n%s", name, varch,
                          nv.GetErrorString(r), out->log ? out->log : "(no log)");
    } else {
        size_t n = 0;
        if ((r = nv.GetPTXSize(prog, &n)) || !(out->ptx = calloc(n + 1, 1)) ||
            (r = nv.GetPTX(prog, out->ptx))) {
            rc = rt_set_error("nvrtcGetPTX(%s): %s", name, r ? nv.GetErrorString(r) : "out of memory");
        } else {
            out->ptx_size = n;
        }
        if (!rc && real) {
            if ((r = nv.GetCUBINSize(prog, &n)) || !(out->cubin = malloc(n ? n : 1)) ||
                (r = nv.GetCUBIN(prog, out->cubin)))
                rc = rt_set_error("nvrtcGetCUBIN(%s): %s", name,
                                  r ? nv.GetErrorString(r) : "out of memory");
            else
                out->cubin_size = n;
        }
    }
    nv.DestroyProgram(&prog);
    if (rc) rt_nvrtc_output_free(out);
    return rc;
}
