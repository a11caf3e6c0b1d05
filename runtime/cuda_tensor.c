/*
 * runtime/cuda_tensor.c — DLTensors in GPU memory (kDLCUDA) and copies
 * between host and device. A CUDA tensor's data is the CUdeviceptr cast to
 * a pointer, as DLPack specifies for CUDA memory.
 */
#include <stdint.h>
#include <string.h>

#include "runtime/cuda_internal.h"

DLTensor *rt_cuda_tensor_alloc(DLDataType dtype, int ndim, const int64_t *shape, int device) {
    if (rt__check_shape("rt_cuda_tensor_alloc", dtype, ndim, shape)) return NULL;
    size_t n = 1;
    for (int d = 0; d < ndim; ++d) {
        if (n && (uint64_t)shape[d] > SIZE_MAX / n / 16) {
            rt_set_error("rt_cuda_tensor_alloc: shape overflows the address space");
            return NULL;
        }
        n *= (size_t)shape[d];
    }
    size_t bytes = n * rt__elem_bytes(dtype);
    if (rt__cu_ctx(device)) return NULL;
    CUdeviceptr p = 0;
    CUresult r = rt__cu()->MemAlloc(&p, bytes ? bytes : 1);
    if (r) {
        rt__cu_fail(r, "rt_cuda_tensor_alloc: cuMemAlloc of %zu bytes on device %d", bytes, device);
        return NULL;
    }
    DLTensor *t = rt__tensor_header((void *)(uintptr_t)p, dtype, ndim, shape);
    if (!t) {
        rt__cu()->MemFree(p);
        return NULL;
    }
    t->device.device_type = kDLCUDA;
    t->device.device_id = device;
    return t;
}

void rt__cuda_free_data(DLTensor *t) {
    if (!t->data || rt__cu_ctx(t->device.device_id)) return;
    rt__cu()->MemFree((CUdeviceptr)(uintptr_t)t->data);
}

int rt_tensor_copy(DLTensor *dst, const DLTensor *src) {
    if (!dst || !src) return rt_set_error("rt_tensor_copy: dst and src must be non-NULL");
    if (dst->ndim != src->ndim)
        return rt_set_error("rt_tensor_copy: dst has %d dimensions, src %d", dst->ndim, src->ndim);
    for (int d = 0; d < dst->ndim; ++d)
        if (dst->shape[d] != src->shape[d])
            return rt_set_error("rt_tensor_copy: dimension %d differs (dst %lld, src %lld)", d,
                                (long long)dst->shape[d], (long long)src->shape[d]);
    if (dst->dtype.code != src->dtype.code || dst->dtype.bits != src->dtype.bits ||
        dst->dtype.lanes != src->dtype.lanes) {
        char a[32], b[32];
        return rt_set_error("rt_tensor_copy: dst has dtype %s, src %s",
                            rt_dtype_name(dst->dtype, a, sizeof a),
                            rt_dtype_name(src->dtype, b, sizeof b));
    }
    if (!rt__tensor_is_compact(dst) || !rt__tensor_is_compact(src))
        return rt_set_error("rt_tensor_copy: only compact row-major tensors can be copied");
    int dt = dst->device.device_type, st = src->device.device_type;
    if ((dt != kDLCPU && dt != kDLCUDA) || (st != kDLCPU && st != kDLCUDA))
        return rt_set_error("rt_tensor_copy: device types %d -> %d are not supported (CPU and "
                            "CUDA only)",
                            st, dt);
    size_t n = rt_tensor_nbytes(src);
    char *d = (char *)dst->data + dst->byte_offset;
    const char *s = (const char *)src->data + src->byte_offset;
    if (!dst->data || !src->data) return rt_set_error("rt_tensor_copy: NULL data");
    if (dt == kDLCPU && st == kDLCPU) {
        memmove(d, s, n);
        return 0;
    }
    int dev = dt == kDLCUDA ? dst->device.device_id : src->device.device_id;
    if (rt__cu_ctx(dev)) return -1;
    const rt_cu_api *a = rt__cu();
    CUresult r;
    if (dt == kDLCUDA && st == kDLCPU) {
        r = a->MemcpyHtoD((CUdeviceptr)(uintptr_t)d, s, n);
        return r ? rt__cu_fail(r, "rt_tensor_copy: cuMemcpyHtoD of %zu bytes", n) : 0;
    }
    if (dt == kDLCPU) {
        r = a->MemcpyDtoH(d, (CUdeviceptr)(uintptr_t)s, n);
        return r ? rt__cu_fail(r, "rt_tensor_copy: cuMemcpyDtoH of %zu bytes", n) : 0;
    }
    r = a->MemcpyDtoD((CUdeviceptr)(uintptr_t)d, (CUdeviceptr)(uintptr_t)s, n);
    return r ? rt__cu_fail(r, "rt_tensor_copy: cuMemcpyDtoD of %zu bytes", n) : 0;
}
