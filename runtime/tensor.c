/*
 * runtime/tensor.c — CPU DLTensors. The header and its shape array are one
 * allocation so a tensor is freed with one call and never dangles a shape
 * pointer; data is separate and 64-byte aligned (a cache line, and the
 * widest vector loads the backends emit).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

#define RT_ALIGN 64
#define RT_MAX_DIMS 8

/* Header with room for the shape right after it. */
typedef struct {
    DLTensor t;
    int64_t shape[RT_MAX_DIMS];
} rt_tensor_box;

int rt__check_shape(const char *who, DLDataType dtype, int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > RT_MAX_DIMS)
        return rt_set_error("%s: ndim %d is out of range [0, %d]", who, ndim, RT_MAX_DIMS);
    if (ndim > 0 && !shape) return rt_set_error("%s: shape is NULL for ndim %d", who, ndim);
    if (dtype.bits == 0 || dtype.lanes == 0)
        return rt_set_error("%s: dtype has %u bits and %u lanes; both must be positive", who,
                            (unsigned)dtype.bits, (unsigned)dtype.lanes);
    for (int d = 0; d < ndim; ++d)
        if (shape[d] < 0)
            return rt_set_error("%s: extent %lld of dimension %d is negative", who,
                                (long long)shape[d], d);
    return 0;
}

DLTensor *rt__tensor_header(void *data, DLDataType dtype, int ndim, const int64_t *shape) {
    rt_tensor_box *b = calloc(1, sizeof *b);
    if (!b) {
        rt_set_error("rt_tensor: out of memory for a tensor header");
        return NULL;
    }
    if (ndim > 0) memcpy(b->shape, shape, (size_t)ndim * sizeof(int64_t));
    b->t.data = data;
    b->t.device.device_type = kDLCPU;
    b->t.device.device_id = 0;
    b->t.ndim = ndim;
    b->t.dtype = dtype;
    b->t.shape = b->shape;
    b->t.strides = NULL; /* compact row-major */
    b->t.byte_offset = 0;
    return &b->t;
}

size_t rt__elem_bytes(DLDataType t) { return ((size_t)t.bits * t.lanes + 7) / 8; }

DLTensor *rt_tensor_alloc(DLDataType dtype, int ndim, const int64_t *shape) {
    if (rt__check_shape("rt_tensor_alloc", dtype, ndim, shape)) return NULL;
    size_t n = 1;
    for (int d = 0; d < ndim; ++d) {
        if (n && (uint64_t)shape[d] > SIZE_MAX / n) {
            rt_set_error("rt_tensor_alloc: shape overflows the address space");
            return NULL;
        }
        n *= (size_t)shape[d];
    }
    size_t eb = rt__elem_bytes(dtype);
    if (n > (SIZE_MAX - RT_ALIGN) / eb) {
        rt_set_error("rt_tensor_alloc: %zu elements overflow the address space", n);
        return NULL;
    }
    /* aligned_alloc needs a size that is a multiple of the alignment (and
     * an empty tensor one block, so that its data is a real pointer). */
    size_t bytes = n ? (n * eb + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN : RT_ALIGN;
    void *data = aligned_alloc(RT_ALIGN, bytes);
    if (!data) {
        rt_set_error("rt_tensor_alloc: out of memory for %zu bytes", bytes);
        return NULL;
    }
    DLTensor *t = rt__tensor_header(data, dtype, ndim, shape);
    if (!t) free(data);
    return t;
}

void rt_tensor_free(DLTensor *t) {
    if (!t) return;
    if (t->device.device_type == kDLCUDA) rt__cuda_free_data(t);
    else free(t->data);
    free(t); /* t is the first member of its rt_tensor_box */
}

DLTensor *rt_tensor_wrap(void *data, DLDataType dtype, int ndim, const int64_t *shape) {
    if (rt__check_shape("rt_tensor_wrap", dtype, ndim, shape)) return NULL;
    return rt__tensor_header(data, dtype, ndim, shape);
}

void rt_tensor_free_header(DLTensor *t) { free(t); }

int64_t rt_tensor_numel(const DLTensor *t) {
    if (!t) return 0;
    int64_t n = 1;
    for (int d = 0; d < t->ndim; ++d) n *= t->shape[d];
    return n;
}

size_t rt_tensor_nbytes(const DLTensor *t) {
    if (!t) return 0;
    return (size_t)rt_tensor_numel(t) * rt__elem_bytes(t->dtype);
}

/* ---- elements as double ---- */

static bool elem_kind(const DLTensor *t, int *bits, bool *bf) {
    if (!t || !t->data || t->dtype.lanes != 1) return false;
    *bits = t->dtype.bits;
    *bf = t->dtype.code == kDLBfloat;
    if (*bf) return *bits == 16;
    return t->dtype.code == kDLFloat && (*bits == 16 || *bits == 32 || *bits == 64);
}

double rt_tensor_get(const DLTensor *t, int64_t k) {
    int bits;
    bool bf;
    if (!elem_kind(t, &bits, &bf)) return NAN;
    const char *base = (const char *)t->data + t->byte_offset;
    if (bits == 64) return ((const double *)base)[k];
    if (bits == 32) return ((const float *)base)[k];
    uint16_t h = ((const uint16_t *)base)[k];
    if (bf) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    _Float16 x;
    memcpy(&x, &h, sizeof x);
    return (double)x;
}

int rt_tensor_set(DLTensor *t, int64_t k, double v) {
    int bits;
    bool bf;
    if (!elem_kind(t, &bits, &bf))
        return rt_set_error("rt_tensor_set: the tensor is missing or not of a float type");
    char *base = (char *)t->data + t->byte_offset;
    if (bits == 64) {
        ((double *)base)[k] = v;
    } else if (bits == 32) {
        ((float *)base)[k] = (float)v;
    } else if (bf) {
        /* nearest even from float32 (bfloat16 keeps float32's exponent) */
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        ((uint16_t *)base)[k] =
            isnan(f) ? (uint16_t)((u >> 16) | 0x40) : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    } else {
        _Float16 x = (_Float16)v; /* nearest even, overflow to infinity */
        memcpy(&((uint16_t *)base)[k], &x, sizeof x);
    }
    return 0;
}
