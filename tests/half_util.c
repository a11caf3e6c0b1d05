/*
 * tests/half_util.c — see half_util.h.
 */
#include <math.h>
#include <string.h>

#include "half_util.h"
#include "testutil.h"

double hu_f16_value(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp(m, -24);
    else v = ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

double hu_bf16_value(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

double hu_value(te_dtype t, uint16_t bits) {
    return t.code == TE_BFLOAT ? hu_bf16_value(bits) : hu_f16_value(bits);
}

uint16_t hu_bits(te_dtype t, double v) {
    bool bf = t.code == TE_BFLOAT;
    if (isnan(v)) return (uint16_t)((signbit(v) ? 0x8000 : 0) | (bf ? 0x7fc0 : 0x7e00));
    double r = te_dtype_round(t, v);
    if (bf) {
        float f = (float)r;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        return (uint16_t)(u >> 16);
    }
    uint16_t s = signbit(r) ? 0x8000 : 0;
    r = fabs(r);
    if (isinf(r)) return s | 0x7c00;
    if (r < ldexp(1, -14)) return s | (uint16_t)(r * ldexp(1, 24)); /* subnormal, exact */
    int e;
    double m = frexp(r, &e); /* r = m 2^e, m in [0.5, 1) */
    return s | (uint16_t)((e + 14) << 10) | (uint16_t)((m * 2 - 1) * 1024);
}

DLDataType hu_dl(te_dtype t) {
    return (DLDataType){t.code == TE_BFLOAT ? kDLBfloat : kDLFloat, 16, 1};
}

static int64_t numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

DLTensor *hu_rand(te_dtype t, uint64_t *state, int ndim, const int64_t *shape) {
    DLTensor *x = rt_tensor_alloc(hu_dl(t), ndim, shape);
    if (!x) return NULL;
    uint16_t *p = x->data;
    for (int64_t i = 0; i < numel(ndim, shape); i++) p[i] = hu_bits(t, tu_rand_uniform(state, -1, 1));
    return x;
}

DLTensor *hu_nan(te_dtype t, int ndim, const int64_t *shape) {
    DLTensor *x = rt_tensor_alloc(hu_dl(t), ndim, shape);
    if (!x) return NULL;
    uint16_t *p = x->data;
    for (int64_t i = 0; i < numel(ndim, shape); i++) p[i] = t.code == TE_BFLOAT ? 0x7fc0 : 0x7e00;
    return x;
}
