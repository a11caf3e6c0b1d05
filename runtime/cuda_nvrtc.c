/*
 * runtime/cuda_nvrtc.c — NVRTC (the CUDA run-time compiler) opened with
 * dlopen: CUDA C++ source to PTX for a virtual architecture compute_XX.
 *
 * Library search: $LOOM_NVRTC, then libnvrtc.so.13, .so.12, the unversioned
 * name, and /usr/local/cuda/lib64/libnvrtc.so (the loader path on CUDA
 * machines usually lists CUDA's lib64, the last entry covers the rest).
 *
 * Headers: NVRTC builds in CUDA's device runtime but not cuda_fp16.h /
 * cuda_bf16.h; a source including them gets -I with the directory
 * rt_cuda_include_dir finds (next to the NVRTC library that was loaded,
 * so the headers match the compiler).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <libgen.h>
#include <sys/stat.h>
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

static bool has_header(const char *dir, const char *header) {
    char path[4096];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", dir, header) >= (int)sizeof path) return false;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int rt_cuda_include_search(const char *header, const char *env, const char *const *dirs,
                            int ndirs, char *dir, size_t size) {
    if (!header || !dir || !size) return rt_set_error("rt_cuda_include_dir: NULL argument");
    if (env && *env) {
        if (has_header(env, header) && strlen(env) < size) {
            snprintf(dir, size, "%s", env);
            return 0;
        }
        return rt_set_error("CUDA header %s not found in LOOM_CUDA_INCLUDE='%s'; set "
                            "LOOM_CUDA_INCLUDE to the CUDA include directory that holds it",
                            header, env);
    }
    char looked[1024];
    size_t n = 0;
    looked[0] = 0;
    for (int i = 0; i < ndirs; i++) {
        if (!dirs[i] || !*dirs[i]) continue;
        if (has_header(dirs[i], header) && strlen(dirs[i]) < size) {
            snprintf(dir, size, "%s", dirs[i]);
            return 0;
        }
        if (n < sizeof looked)
            n += (size_t)snprintf(looked + n, sizeof looked - n, "%s%s", n ? ", " : "", dirs[i]);
    }
    return rt_set_error("CUDA header %s not found (looked in: %s); set LOOM_CUDA_INCLUDE to the "
                        "CUDA include directory that holds it",
                        header, n ? looked : "nowhere");
}

int rt_cuda_include_dir(const char *header, char *dir, size_t size) {
    char nv_inc[4096] = "", nv_lib[4096] = "";
    const char *dirs[3] = {NULL, NULL, "/usr/local/cuda/include"};
    Dl_info info;
    if (nv_get() && dladdr((void *)nv.Version, &info) && info.dli_fname &&
        strlen(info.dli_fname) < sizeof nv_lib) {
        snprintf(nv_lib, sizeof nv_lib, "%s", info.dli_fname);
        const char *lib = dirname(nv_lib);
        snprintf(nv_inc, sizeof nv_inc, "%s/../include", lib);
        dirs[0] = nv_inc;
        /* a distribution's NVRTC beside its other libraries: the toolkit's
         * headers are where NVIDIA's installers put them */
        if (!strcmp(lib, "/usr/lib/x86_64-linux-gnu")) dirs[1] = "/usr/local/cuda/include";
    }
    return rt_cuda_include_search(header, getenv("LOOM_CUDA_INCLUDE"), dirs, 3, dir, size);
}

void rt_nvrtc_output_free(rt_nvrtc_output *o) {
    if (!o) return;
    free(o->ptx);
    free(o->cubin);
    free(o->log);
    memset(o, 0, sizeof *o);
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
    char incopt[4200];
    const char *headers[] = {"cuda_fp16.h", "cuda_bf16.h", "mma.h"};
    for (int i = 0; i < 3 && nopts == 4; i++) {
        char inc[64];
        snprintf(inc, sizeof inc, "#include <%s>", headers[i]);
        if (!strstr(source, inc)) continue;
        char dir[4096];
        if (rt_cuda_include_dir(headers[i], dir, sizeof dir)) {
            char why[1024];
            snprintf(why, sizeof why, "%s", rt_last_error());
            return rt_set_error("NVRTC cannot compile %s: it uses %s: %s", name,
                                i == 2 ? "tensor cores (WMMA)" : "float16/bfloat16", why);
        }
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
