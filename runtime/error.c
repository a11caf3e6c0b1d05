/*
 * runtime/error.c — the per-thread last error of the runtime's free
 * functions. Thread-local so concurrent measurement threads never see each
 * other's messages.
 */
#include <stdarg.h>
#include <stdio.h>

#include "runtime/rt_internal.h"

static _Thread_local char rt_errbuf[1024];

const char *rt_last_error(void) { return rt_errbuf; }

int rt_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rt_errbuf, sizeof rt_errbuf, fmt, ap);
    va_end(ap);
    return -1;
}

int32_t rt_bounds_error(const char *func, const char *buffer, int64_t index, int64_t extent,
                        int32_t is_write) {
    rt_set_error("%s[%lld] %s outside %s[%lld] in '%s'", buffer ? buffer : "?", (long long)index,
                 is_write ? "written" : "read", buffer ? buffer : "?", (long long)extent,
                 func ? func : "?");
    return RT_ERR_REPORTED;
}

const char *rt_dtype_name(DLDataType t, char *buf, size_t size) {
    const char *base;
    switch (t.code) {
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    case kDLOpaqueHandle: base = "handle"; break;
    default: base = "code?"; break;
    }
    if (t.lanes > 1)
        snprintf(buf, size, "%s%ux%u", base, (unsigned)t.bits, (unsigned)t.lanes);
    else
        snprintf(buf, size, "%s%u", base, (unsigned)t.bits);
    return buf;
}
