/*
 * codegen/c/c_names.c — C identifiers for loop-IR objects, C and DLPack
 * types, and the emitter's error reporting.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/c/c_internal.h"

void cg_c_fail(cg_c_emitter *em, const char *fmt, ...) {
    if (em->failed) return;
    em->failed = true;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    te_error(em->ctx, "%s: %s", em->prefix ? em->prefix : "c", buf);
}

/* Identifiers the generated code cannot give to a variable: C keywords,
 * and what it uses from the headers it includes. Names beginning with
 * "loom_" are the emitter's own and are rejected separately. */
static const char *const reserved[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "asm", "typeof", "bool", "true", "false",
    "NULL", "NAN", "INFINITY", "size_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
    "uint16_t", "uint32_t", "uint64_t", "exp", "expf", "log", "logf", "sqrt", "sqrtf", "tanh",
    "tanhf", "fabs", "fabsf", "pow", "powf", "erf", "erff", "floor", "floorf", "ceil", "ceilf",
    "rint", "rintf", "fmod", "fmodf", "sin", "sinf", "cos", "cosf", "tan", "tanf", "asin", "asinf",
    "acos", "acosf", "atan", "atanf", "sinh", "sinhf", "cosh", "coshf", "asinh", "asinhf", "acosh",
    "acoshf", "atanh", "atanhf",
    "free", "aligned_alloc", "malloc", "rt_parallel_for", "errno", "main", "abs", "min", "max",
    "signbit", "isnan", "isinf", "assert", "offsetof", "alignas", "alignof",
};

static bool is_reserved(const char *s) {
    if (!strncmp(s, "loom_", 5) || s[0] == '_' || isdigit((unsigned char)s[0])) return true;
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; ++i)
        if (!strcmp(s, reserved[i])) return true;
    return false;
}

const char *cg_c_name_lookup(const cg_c_emitter *em, const void *key) {
    for (int i = 0; i < em->nnames; ++i)
        if (em->names[i].key == key) return em->names[i].name;
    return NULL;
}

static bool name_taken(const cg_c_emitter *em, const char *name) {
    for (int i = 0; i < em->nnames; ++i)
        if (!strcmp(em->names[i].name, name)) return true;
    return false;
}

static void add_name(cg_c_emitter *em, const void *key, const char *name) {
    if (em->nnames == em->cap_names) {
        int cap = em->cap_names ? 2 * em->cap_names : 32;
        cg_c_name *n = realloc(em->names, (size_t)cap * sizeof *n);
        if (!n) {
            cg_c_fail(em, "out of memory naming '%s'", name);
            return;
        }
        em->names = n;
        em->cap_names = cap;
    }
    em->names[em->nnames++] = (cg_c_name){key, name};
}

/* Sanitised identifier in the arena. */
static char *sanitise(te_ctx *ctx, const char *raw) {
    if (!raw || !*raw) raw = "t";
    char *s = te_strdup(ctx, raw);
    if (!s) return NULL;
    for (char *p = s; *p; ++p)
        if (!isalnum((unsigned char)*p) && *p != '_') *p = '_';
    return s;
}

const char *cg_c_name_of(cg_c_emitter *em, const void *key, const char *raw) {
    const char *known = cg_c_name_lookup(em, key);
    if (known) return known;
    char *base = sanitise(em->ctx, raw);
    if (!base) return "loom_oom";
    if (is_reserved(base)) base = te_sprintf(em->ctx, "x_%s", base);
    const char *name = base;
    for (int n = 2; name && name_taken(em, name); ++n) name = te_sprintf(em->ctx, "%s_%d", base, n);
    if (!name) return "loom_oom";
    add_name(em, key, name);
    return name;
}

const char *cg_c_buffer_name(cg_c_emitter *em, const tir_buffer *b) {
    const char *known = cg_c_name_lookup(em, b);
    if (known) return known;
    const char *name = cg_c_name_of(em, b, b->name);
    if (b->data && !cg_c_name_lookup(em, b->data)) add_name(em, b->data, name);
    return name;
}

const char *cg_c_symbol(te_ctx *ctx, const char *func_name) {
    char *s = sanitise(ctx, func_name);
    return s ? te_sprintf(ctx, "loom_func_%s", s) : NULL;
}

const char *cg_c_type(te_dtype t) {
    switch (t.code) {
    case TE_FLOAT:
        return t.bits == 32 ? "float" : t.bits == 64 ? "double" : NULL;
    case TE_INT:
        switch (t.bits) {
        case 8: return "int8_t";
        case 16: return "int16_t";
        case 32: return "int32_t";
        case 64: return "int64_t";
        default: return NULL;
        }
    case TE_UINT:
        switch (t.bits) {
        case 8: return "uint8_t";
        case 16: return "uint16_t";
        case 32: return "uint32_t";
        case 64: return "uint64_t";
        default: return NULL;
        }
    case TE_BOOL: return "bool";
    case TE_HANDLE: return "void *";
    default: return NULL;
    }
}
