/*
 * codegen/target.c — target strings: "llvm [-mcpu=NAME] [-mattr=+F,-G]",
 * "c", "cuda [-arch=sm_XX]", options separated by spaces. The llvm CPU and
 * features are checked here, before anything is lowered: LLVM itself takes
 * unknown names with a warning and may then abort the process.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/llvm/llvm_internal.h"
#include "codegen/target.h"

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

/* sm_ then digits, then at most one letter (sm_90a). */
static bool cuda_arch_ok(const char *a) {
    if (strncmp(a, "sm_", 3) != 0) return false;
    const char *p = a + 3;
    if (*p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') p++;
    if (*p >= 'a' && *p <= 'z') p++;
    return *p == '\0';
}

static int parse_options(const char *target, cg_target *t, char **err) {
    char *save = NULL;
    char *tok = strtok_r(t->buf, " ", &save); /* the kind, checked by the caller */
    while ((tok = strtok_r(NULL, " ", &save))) {
        const char **slot = NULL;
        const char *name = NULL;
        if (t->kind == CG_TARGET_LLVM && !strncmp(tok, "-mcpu=", 6)) slot = &t->mcpu, name = "-mcpu";
        else if (t->kind == CG_TARGET_LLVM && !strncmp(tok, "-mattr=", 7)) slot = &t->mattr, name = "-mattr";
        else if (t->kind == CG_TARGET_CUDA && !strncmp(tok, "-arch=", 6)) slot = &t->arch, name = "-arch";
        if (!slot) {
            if (t->kind == CG_TARGET_LLVM)
                return fail(err, target, "unknown option '%s' (llvm takes -mcpu=NAME and "
                                         "-mattr=+FEATURE,-FEATURE)",
                            tok);
            if (t->kind == CG_TARGET_CUDA)
                return fail(err, target, "unknown option '%s'; the only cuda option is -arch=sm_XX",
                            tok);
            return fail(err, target, "unknown option '%s'; the c target takes no options", tok);
        }
        if (*slot) return fail(err, target, "%s is given twice", name);
        const char *value = strchr(tok, '=') + 1;
        if (!*value) return fail(err, target, "%s has no value", name);
        *slot = value;
    }
    if (t->arch && !cuda_arch_ok(t->arch))
        return fail(err, target, "architecture '%s' is not sm_XX (sm_80, sm_90a, ...)", t->arch);
    return 0;
}

int cg__target_parse(const char *target, cg_target *out, char **err) {
    memset(out, 0, sizeof *out);
    if (err) *err = NULL;
    if (!target) target = "llvm";
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
    if (!(out->buf = strdup(target))) return fail(err, target, "out of memory");
    int rc = parse_options(target, out, err);
    if (!rc && out->kind == CG_TARGET_LLVM && (out->mcpu || out->mattr)) {
        char *why = cg_llvm__check_cpu(out->mcpu, out->mattr);
        if (why) rc = fail(err, target, "%s", why);
        free(why);
    }
    if (rc) {
        free(out->buf);
        memset(out, 0, sizeof *out);
    }
    return rc;
}

int cg_target_check(const char *target, char **err) {
    cg_target t;
    if (cg__target_parse(target, &t, err)) {
        if (err && !*err) *err = strdup("out of memory");
        return -1;
    }
    free(t.buf);
    return 0;
}
