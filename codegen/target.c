/*
 * codegen/target.c — the one parser and printer of target strings
 * (grammar in loom/codegen.h: cg_target). The llvm CPU and features are
 * checked here, before anything is lowered: LLVM itself takes unknown
 * names with a warning and may then abort the process.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/llvm/llvm_internal.h"
#include "loom/codegen.h"

static int fail(char **err, const char *target, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int fail(char **err, const char *target, const char *fmt, ...) {
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (err && asprintf(err, "target '%s': %s", target, why) < 0) *err = NULL;
    return -1;
}

/* The host's triple and vector width, asked of LLVM once: every parse of
 * "llvm" and "c" needs them, and the tuner parses per program. */
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static char *host_triple;
static int host_lanes = 4;
static bool host_bf16_dot;

static void detect_host(void) {
    cg_llvm__init();
    char *t = cg_llvm__triple(), *cpu = cg_llvm_host_cpu(), *feats = cg_llvm_host_features();
    host_triple = t ? strdup(t) : NULL;
    if (t) LLVMDisposeMessage(t);
    if (host_triple) {
        host_lanes = cg_llvm__vector_lanes(host_triple, cpu, feats);
        host_bf16_dot = cg_llvm__has_bf16_dot(host_triple, cpu, feats);
    }
    free(cpu);
    free(feats);
}

/* sm_ then digits, then at most one letter (sm_90a). */
static bool cuda_arch_ok(const char *a) {
    if (strncmp(a, "sm_", 3) != 0) return false;
    const char *p = a + 3;
    if (*p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') p++;
    if (*p >= 'a' && *p <= 'z') p++;
    return *p == '\0';
}

static int set(char **slot, const char *v, size_t n, const char *target, char **err) {
    if (!(*slot = strndup(v, n))) return fail(err, target, "out of memory");
    return 0;
}

/* A GPU's database key after "cuda ": "sm_XX NAME" (NAME may be empty). */
static int parse_gpu_key(const char *target, const char *rest, cg_target *t, char **err) {
    size_t n = strcspn(rest, " ");
    if (set(&t->arch, rest, n, target, err)) return -1;
    if (!cuda_arch_ok(t->arch))
        return fail(err, target,
                    "'%s' is neither an option (the only cuda option is -arch=sm_XX) nor an "
                    "architecture sm_XX as in a GPU's database key 'cuda sm_90 NAME'",
                    t->arch);
    const char *name = rest[n] == ' ' ? rest + n + 1 : "";
    return *name ? set(&t->device, name, strlen(name), target, err) : 0;
}

static int parse_options(const char *target, const char *opts, cg_target *t, char **err) {
    for (const char *p = opts;;) {
        while (*p == ' ') p++;
        if (!*p) break;
        size_t n = strcspn(p, " ");
        if (t->kind == CG_TARGET_CUDA && p == opts + strspn(opts, " ") && *p != '-')
            return parse_gpu_key(target, p, t, err);
        char **slot = NULL;
        const char *name = NULL;
        if (t->kind == CG_TARGET_LLVM && !strncmp(p, "-mcpu=", 6)) slot = &t->cpu, name = "-mcpu";
        else if (t->kind == CG_TARGET_LLVM && !strncmp(p, "-mattr=", 7))
            slot = &t->features, name = "-mattr";
        else if (t->kind == CG_TARGET_CUDA && !strncmp(p, "-arch=", 6))
            slot = &t->arch, name = "-arch";
        if (!slot) {
            int len = n > 200 ? 200 : (int)n;
            if (t->kind == CG_TARGET_LLVM)
                return fail(err, target, "unknown option '%.*s' (llvm takes -mcpu=NAME and "
                                         "-mattr=+FEATURE,-FEATURE)",
                            len, p);
            if (t->kind == CG_TARGET_CUDA)
                return fail(err, target,
                            "unknown option '%.*s'; the only cuda option is -arch=sm_XX", len, p);
            return fail(err, target, "unknown option '%.*s'; the c target takes no options", len,
                        p);
        }
        if (*slot) return fail(err, target, "%s is given twice", name);
        size_t at = strlen(name) + 1;
        if (n == at) return fail(err, target, "%s has no value", name);
        if (set(slot, p + at, n - at, target, err)) return -1;
        p += n;
    }
    if (t->arch && !cuda_arch_ok(t->arch))
        return fail(err, target, "architecture '%s' is not sm_XX (sm_80, sm_90a, ...)", t->arch);
    return 0;
}

/* The kind and what follows from it alone: the triple and vector width. */
static int parse_kind(const char *target, cg_target *out, char **err) {
    size_t n = strcspn(target, " ");
    if (n == 4 && !strncmp(target, "llvm", 4)) out->kind = CG_TARGET_LLVM;
    else if (n == 1 && target[0] == 'c') out->kind = CG_TARGET_C;
    else if (n == 4 && !strncmp(target, "cuda", 4)) out->kind = CG_TARGET_CUDA;
    else {
        if (err && asprintf(err, "unknown target '%s' (known: llvm [-mcpu=NAME] "
                                 "[-mattr=+F,-G], c, cuda [-arch=sm_XX])",
                            target) < 0)
            *err = NULL;
        return -1;
    }
    if (out->kind == CG_TARGET_CUDA) {
        out->vector_lanes = 4;
        return 0;
    }
    pthread_once(&host_once, detect_host);
    out->vector_lanes = host_lanes;
    out->bf16_dot = out->kind == CG_TARGET_LLVM && host_bf16_dot;
    if (out->kind == CG_TARGET_LLVM && !(out->triple = host_triple ? strdup(host_triple) : NULL))
        return fail(err, target, host_triple ? "out of memory" : "LLVM reports no host triple");
    return 0;
}

int cg_target_parse(const char *target, cg_target *out, char **err) {
    memset(out, 0, sizeof *out);
    if (err) *err = NULL;
    if (!target) target = "llvm";
    int rc = parse_kind(target, out, err);
    if (!rc) rc = parse_options(target, target + strcspn(target, " "), out, err);
    if (!rc && out->kind == CG_TARGET_LLVM && (out->cpu || out->features)) {
        char *why = cg_llvm__check_cpu(out->cpu, out->features);
        if (why) rc = fail(err, target, "%s", why);
        free(why);
        /* As cg_llvm__target_machine compiles: the host's CPU when none is
         * named, the host's features only with the host's CPU. */
        char *host = rc || out->cpu ? NULL : cg_llvm_host_cpu();
        if (!rc) {
            out->vector_lanes = cg_llvm__vector_lanes(out->triple, out->cpu ? out->cpu : host,
                                                      out->features);
            out->bf16_dot = cg_llvm__has_bf16_dot(out->triple, out->cpu ? out->cpu : host,
                                                  out->features);
        }
        free(host);
    }
    if (rc) cg_target_free(out);
    return rc;
}

void cg_target_free(cg_target *t) {
    if (!t) return;
    free(t->triple);
    free(t->cpu);
    free(t->features);
    free(t->arch);
    free(t->device);
    memset(t, 0, sizeof *t);
}

char *cg_target_str(const cg_target *t) {
    char *s = NULL;
    int rc = -1;
    if (!t) return NULL;
    switch (t->kind) {
    case CG_TARGET_LLVM:
        rc = asprintf(&s, "llvm%s%s%s%s", t->cpu ? " -mcpu=" : "", t->cpu ? t->cpu : "",
                      t->features ? " -mattr=" : "", t->features ? t->features : "");
        break;
    case CG_TARGET_C: rc = asprintf(&s, "c"); break;
    case CG_TARGET_CUDA:
        rc = t->arch && t->device ? asprintf(&s, "cuda %s %s", t->arch, t->device)
             : t->arch            ? asprintf(&s, "cuda -arch=%s", t->arch)
                                  : asprintf(&s, "cuda");
        break;
    }
    return rc < 0 ? NULL : s;
}

int cg_target_check(const char *target, char **err) {
    cg_target t;
    if (cg_target_parse(target, &t, err)) {
        if (err && !*err) *err = strdup("out of memory");
        return -1;
    }
    cg_target_free(&t);
    return 0;
}
