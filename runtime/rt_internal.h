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

#endif
