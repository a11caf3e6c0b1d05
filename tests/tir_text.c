/* tests/tir_text.c — see tir_text.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir_text.h"

tir_buffer *tu_param_buf(te_ctx *ctx, const char *name, te_dtype t, int64_t n) {
    tir_buffer *b = tir_buffer_new(ctx, name, t, 1, (int64_t[]){n}, TIR_SCOPE_GLOBAL);
    assert_non_null(b);
    b->is_param = true;
    return b;
}

const char *tu_tir_text(te_ctx *ctx, const tir_func *f) {
    const char *t = tir_func_str(ctx, f);
    assert_non_null(t);
    if (getenv("LOOM_TEST_DUMP")) fprintf(stderr, "%s\n", t);
    return t;
}

int tu_count(const char *s, const char *sub) {
    int n = 0;
    for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub)) n++;
    return n;
}

char *tu_between(const char *s, const char *a, const char *b) {
    const char *p = strstr(s, a);
    assert_non_null(p);
    const char *q = b ? strstr(p + strlen(a), b) : NULL;
    if (b) assert_non_null(q);
    size_t n = q ? (size_t)(q - p) : strlen(p);
    char *out = malloc(n + 1);
    assert_non_null(out);
    memcpy(out, p, n);
    out[n] = 0;
    return out;
}
