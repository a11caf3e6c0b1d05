/*
 * runtime/rt_internal.h — helpers shared by the runtime's files.
 */
#ifndef LOOM_RT_INTERNAL_H
#define LOOM_RT_INTERNAL_H

#include <stddef.h>

#include "loom/runtime.h"

/* Records the calling thread's last error (printf format); returns -1. */
int rt_set_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* "float32", "int64", "uint8", "float32x4" ... into buf (size >= 32). */
const char *rt_dtype_name(DLDataType t, char *buf, size_t size);

/* tensor.c: shape checks ("who: ..." errors), a CPU tensor header over
 * data (device set by the caller), bytes per element. */
int rt__check_shape(const char *who, DLDataType dtype, int ndim, const int64_t *shape);
DLTensor *rt__tensor_header(void *data, DLDataType dtype, int ndim, const int64_t *shape);
size_t rt__elem_bytes(DLDataType t);
/* Writes a buffer larger than any last-level cache (runtime/timer.c). */
void rt__flush_all_caches(void);
/* module.c: whether t's strides are the compact row-major ones (NULL
 * strides; extent-1 dimensions may carry any stride, as DLPack exporters
 * differ). */
bool rt__tensor_is_compact(const DLTensor *t);
/* cuda_tensor.c: frees a kDLCUDA tensor's device memory. */
void rt__cuda_free_data(DLTensor *t);

#endif
