/*
 * te/dtype.c — scalar and vector data types: predicates, sizes, names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "te/te_internal.h"

bool te_dtype_eq(te_dtype a, te_dtype b) {
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

te_dtype te_dtype_with_lanes(te_dtype t, int lanes) {
    t.lanes = (uint16_t)lanes;
    return t;
}

te_dtype te_dtype_element(te_dtype t) {
    t.lanes = 1;
    return t;
}

bool te_dtype_is_float(te_dtype t) { return t.code == TE_FLOAT || t.code == TE_BFLOAT; }
bool te_dtype_is_half(te_dtype t) { return te_dtype_is_float(t) && t.bits == 16; }
bool te_dtype_is_int(te_dtype t) { return t.code == TE_INT || t.code == TE_UINT; }
bool te_dtype_is_bool(te_dtype t) { return t.code == TE_BOOL; }

int te_dtype_bytes(te_dtype t) {
    if (t.code == TE_BOOL) return 1;
    return (t.bits + 7) / 8;
}

const char *te_dtype_str(te_dtype t) {
    static _Thread_local char ring[8][32];
    static _Thread_local unsigned next;
    char *buf = ring[next++ % 8];
    const char *base;
    switch (t.code) {
    case TE_INT: base = "int"; break;
    case TE_UINT: base = "uint"; break;
    case TE_FLOAT: base = "float"; break;
    case TE_BOOL: base = "bool"; break;
    case TE_HANDLE: base = "handle"; break;
    case TE_BFLOAT: base = "bfloat"; break;
    default: base = "unknown"; break;
    }
    int n;
    if (t.code == TE_BOOL || t.code == TE_HANDLE) n = snprintf(buf, 32, "%s", base);
    else n = snprintf(buf, 32, "%s%d", base, t.bits);
    if (t.lanes > 1 && n > 0 && n < 32) snprintf(buf + n, (size_t)(32 - n), "x%d", t.lanes);
    return buf;
}

bool te_dtype_parse(const char *s, te_dtype *out) {
    if (!s) return false;
    static const struct {
        const char *name;
        uint8_t code, bits;
    } names[] = {
        {"bool", TE_BOOL, 1},      {"handle", TE_HANDLE, 64}, {"float16", TE_FLOAT, 16},
        {"bfloat16", TE_BFLOAT, 16},
        {"float32", TE_FLOAT, 32}, {"float64", TE_FLOAT, 64}, {"int8", TE_INT, 8},
        {"int16", TE_INT, 16},     {"int32", TE_INT, 32},     {"int64", TE_INT, 64},
        {"uint8", TE_UINT, 8},     {"uint16", TE_UINT, 16},   {"uint32", TE_UINT, 32},
        {"uint64", TE_UINT, 64},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i].name);
        if (strncmp(s, names[i].name, n) != 0) continue;
        long lanes = 1;
        if (s[n] == 'x') {
            char *end;
            if (s[n + 1] < '0' || s[n + 1] > '9') continue;
            lanes = strtol(s + n + 1, &end, 10);
            if (*end || lanes < 1 || lanes > 65535) continue;
        } else if (s[n]) {
            continue;
        }
        if (out) *out = TE_DTYPE(names[i].code, names[i].bits, lanes);
        return true;
    }
    return false;
}
