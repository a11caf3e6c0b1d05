/*
 * tests/fake_cuda/fake_cuda.h — what a test sees of the stand-in CUDA
 * driver (fake_libcuda.c): its counts and its failure switch, found with
 * dlsym once the runtime has opened it; and what the tests against it
 * share: the parameters x, y (float32[16]) of their functions and a
 * tensor of that shape. Include it after cmocka.h.
 */
#ifndef LOOM_TESTS_FAKE_CUDA_H
#define LOOM_TESTS_FAKE_CUDA_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>

#include <loom/loom.h>

typedef struct {
    long allocs, frees, syncs, launches;
    long live; /* buffers allocated and not freed */
    unsigned long long last_args[8];
    int last_nargs;
    char last_kernel[64];
    long memsets;
    size_t memset_bytes;
} fake_cu_stats;

static void (*fake_cu_counts)(fake_cu_stats *);
static void (*fake_cu_fail_next)(const char *entry, int code);

static inline fake_cu_stats fake_counts(void) {
    fake_cu_stats s;
    fake_cu_counts(&s);
    return s;
}

static const rt_param fake_cuda_params[2] = {
    {"x", {kDLFloat, 32, 1}, 1, {16}},
    {"y", {kDLFloat, 32, 1}, 1, {16}},
};

/* A float32[16] tensor on GPU `device` of the stand-in (the test fails
 * when it cannot be allocated). */
static inline DLTensor *fake_cuda_tensor(int device) {
    DLTensor *t = rt_cuda_tensor_alloc((DLDataType){kDLFloat, 32, 1}, 1, (int64_t[]){16}, device);
    if (!t) fail_msg("rt_cuda_tensor_alloc: %s", rt_last_error());
    return t;
}

/* A group setup: makes the runtime open the driver (rt_cuda_device_count),
 * then finds the stand-in's functions. -1 (with a message) when the
 * driver loaded is not the stand-in. */
static inline int fake_cuda_setup(void **state) {
    (void)state;
    int n = 0;
    bool opened = rt_cuda_device_count(&n) == 0;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h) {
        fake_cu_counts = (void (*)(fake_cu_stats *))dlsym(h, "fake_cu_counts");
        fake_cu_fail_next = (void (*)(const char *, int))dlsym(h, "fake_cu_fail_next");
    }
    if (!opened || !fake_cu_counts || !fake_cu_fail_next) {
        fprintf(stderr, "the CUDA driver loaded is not tests/fake_cuda's (%s): run this test "
                        "through ctest, which puts build/fake_cuda first on LD_LIBRARY_PATH\n",
                opened ? "no fake_cu_counts" : rt_last_error());
        return -1;
    }
    return 0;
}

#endif
