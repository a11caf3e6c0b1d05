/*
 * tests/test_cuda_driver_errors.c — what the CUDA runtime says when the
 * driver refuses something: a workspace or tensor it cannot allocate, an
 * image it cannot load, dynamic shared memory a kernel may not take, a
 * failure seen only at the end of a timing loop, a copy it fails; a call
 * whose tensors are on two GPUs or a GPU out of range; copies between
 * tensors that differ; malformed launch lists. Each message names the
 * object and the rule broken or the driver's error.
 *
 * Runs on any machine against tests/fake_cuda's stand-in driver (two
 * devices; fake_cu_fail_next makes one entry point fail once), which ctest
 * puts first on LD_LIBRARY_PATH.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <loom/loom.h>

#include "fake_cuda/fake_cuda.h"

/* "f": one launch of `kernel` (x, y and, with a workspace, workspace 0
 * of 4096 bytes; last character of the name: its pointer count) with
 * shared_bytes of dynamic shared memory. */
static rt_module *module(const char *kernel, bool workspace, int64_t shared_bytes) {
    static const int a2[2] = {0, 1}, a3[3] = {0, 1, -1};
    static const int64_t ws = 4096;
    rt_cuda_launch l = {.kernel = kernel, .grid = {2, 1, 1}, .block = {32, 1, 1},
                        .nargs = workspace ? 3 : 2, .args = workspace ? a3 : a2,
                        .shared_bytes = shared_bytes};
    rt_cuda_func f = {.name = "f", .nparams = 2, .params = fake_cuda_params, .nworkspace = workspace,
                      .workspace_bytes = &ws, .nlaunches = 1, .launches = &l};
    rt_module *m = rt_cuda_module_new("// fake PTX\n", 1, &f);
    assert_non_null(m);
    return m;
}

static void assert_has(const char *msg, const char *want) {
    if (!strstr(msg, want)) fail_msg("message '%s' lacks '%s'", msg, want);
}

/* A workspace the driver cannot allocate: named with its size and the
 * function; nothing launched; the next call allocates and runs. */
static void test_workspace_alloc(void **state) {
    (void)state;
    DLTensor *x = fake_cuda_tensor(0), *y = fake_cuda_tensor(0);
    rt_module *m = module("k3", true, 0);
    fake_cu_stats s0 = fake_counts();
    fake_cu_fail_next("cuMemAlloc_v2", 2);
    assert_int_not_equal(rt_call(m, "f", 2, (DLTensor *[]){x, y}), 0);
    assert_has(rt_module_errmsg(m), "cuMemAlloc of workspace 0 (4096 bytes) for 'f': "
                                    "CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
    assert_int_equal(fake_counts().launches, s0.launches);
    assert_int_equal(fake_counts().live, s0.live);
    assert_int_equal(rt_call(m, "f", 2, (DLTensor *[]){x, y}), 0);
    assert_int_equal(fake_counts().launches, s0.launches + 1);
    rt_module_free(m);
    rt_tensor_free(x);
    rt_tensor_free(y);
}

/* A tensor the driver cannot allocate, and one on a device that does
 * not exist. */
static void test_tensor_alloc(void **state) {
    (void)state;
    fake_cu_fail_next("cuMemAlloc_v2", 2);
    assert_null(rt_cuda_tensor_alloc((DLDataType){kDLFloat, 32, 1}, 1, (int64_t[]){16}, 0));
    assert_has(rt_last_error(), "rt_cuda_tensor_alloc: cuMemAlloc of 64 bytes on device 0: "
                                "CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
    assert_null(rt_cuda_tensor_alloc((DLDataType){kDLFloat, 32, 1}, 1, (int64_t[]){16}, 5));
    assert_has(rt_last_error(), "CUDA: device 5 does not exist (2 devices)");
}

/* An image the driver refuses: the PTX's size and the device; a later
 * call loads it. */
static void test_image_refused(void **state) {
    (void)state;
    DLTensor *x = fake_cuda_tensor(0), *y = fake_cuda_tensor(0);
    rt_module *m = module("k2", false, 0);
    fake_cu_fail_next("cuModuleLoadData", 200);
    assert_int_not_equal(rt_call(m, "f", 2, (DLTensor *[]){x, y}), 0);
    assert_has(rt_module_errmsg(m), "cuModuleLoadData (PTX, 12 bytes) on device 0: "
                                    "CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)");
    assert_int_equal(rt_call(m, "f", 2, (DLTensor *[]){x, y}), 0);
    rt_module_free(m);
    rt_tensor_free(x);
    rt_tensor_free(y);
}

/* Dynamic shared memory above 48 KiB the device will not opt the kernel
 * in to. */
static void test_shared_refused(void **state) {
    (void)state;
    DLTensor *x = fake_cuda_tensor(0), *y = fake_cuda_tensor(0);
    rt_module *m = module("big2", false, 100000);
    fake_cu_fail_next("cuFuncSetAttribute", 1);
    assert_int_not_equal(rt_call(m, "f", 2, (DLTensor *[]){x, y}), 0);
    assert_has(rt_module_errmsg(m), "kernel 'big2' asks for 100000 bytes of dynamic shared memory; "
                                    "device 0 refuses (cuFuncSetAttribute): CUDA_ERROR_INVALID_VALUE "
                                    "(invalid argument)");
    rt_module_free(m);
    rt_tensor_free(x);
    rt_tensor_free(y);
}

/* Tensors on two GPUs in one call. */
static void test_two_gpus(void **state) {
    (void)state;
    DLTensor *x = fake_cuda_tensor(0), *y = fake_cuda_tensor(1);
    rt_module *m = module("k2", false, 0);
    fake_cu_stats s0 = fake_counts();
    assert_int_not_equal(rt_call(m, "f", 2, (DLTensor *[]){x, y}), 0);
    assert_has(rt_module_errmsg(m), "argument 1 is on GPU 1 but argument 0 on GPU 0; a call runs on "
                                    "one GPU");
    assert_int_equal(fake_counts().launches, s0.launches);
    rt_module_free(m);
    rt_tensor_free(x);
    rt_tensor_free(y);
}

/* A kernel's failure seen only when the timing loop waits for its end
 * event. */
static void test_timed_failure(void **state) {
    (void)state;
    DLTensor *x = fake_cuda_tensor(0), *y = fake_cuda_tensor(0);
    rt_module *m = module("k3", true, 0);
    fake_cu_fail_next("cuEventSynchronize", 719);
    rt_timer_config c = {.warmup = 1, .repeat = 3, .min_repeat_ms = 0};
    rt_timing t;
    assert_int_not_equal(rt_cuda_time_call(m, "f", 2, (DLTensor *[]){x, y}, &c, &t), 0);
    assert_has(rt_last_error(), "kernels of 'f' failed while timed (cuEventSynchronize): "
                                "CUDA_ERROR_LAUNCH_FAILED (unspecified launch failure)");
    rt_module_free(m);
    rt_tensor_free(x);
    rt_tensor_free(y);
}

/* A kernel the image lacks, and a device id beyond the module's table. */
static void test_missing_kernel_and_device(void **state) {
    (void)state;
    DLTensor *x = fake_cuda_tensor(0), *y = fake_cuda_tensor(0);
    rt_module *m = module("k2", false, 0);
    fake_cu_fail_next("cuModuleGetFunction", 500);
    assert_int_not_equal(rt_call(m, "f", 2, (DLTensor *[]){x, y}), 0);
    assert_has(rt_module_errmsg(m), "cuModuleGetFunction('k2'): CUDA_ERROR_NOT_FOUND (named symbol "
                                    "not found)");
    DLTensor fx = *x, fy = *y;
    fx.device.device_id = fy.device.device_id = 20;
    assert_int_not_equal(rt_call(m, "f", 2, (DLTensor *[]){&fx, &fy}), 0);
    assert_has(rt_module_errmsg(m), "cuda module: device id 20 is out of range [0, 16)");
    rt_module_free(m);
    rt_tensor_free(x);
    rt_tensor_free(y);
}

/* Copies: tensors that differ in rank, extent or dtype, a strided one,
 * and the driver failing each direction. */
static void test_copies(void **state) {
    (void)state;
    DLDataType f32 = {kDLFloat, 32, 1}, f16 = {kDLFloat, 16, 1};
    DLTensor *g = fake_cuda_tensor(0), *h = rt_tensor_alloc(f32, 1, (int64_t[]){16}),
             *h2 = rt_tensor_alloc(f32, 2, (int64_t[]){4, 4}), *h8 = rt_tensor_alloc(f32, 1, (int64_t[]){8}),
             *hh = rt_tensor_alloc(f16, 1, (int64_t[]){16});
    assert_int_not_equal(rt_tensor_copy(g, h2), 0);
    assert_has(rt_last_error(), "rt_tensor_copy: dst has 1 dimensions, src 2");
    assert_int_not_equal(rt_tensor_copy(g, h8), 0);
    assert_has(rt_last_error(), "rt_tensor_copy: dimension 0 differs (dst 16, src 8)");
    assert_int_not_equal(rt_tensor_copy(g, hh), 0);
    assert_has(rt_last_error(), "rt_tensor_copy: dst has dtype float32, src float16");
    DLTensor strided = *h;
    int64_t two = 2, eight = 8;
    strided.shape = &eight;
    strided.strides = &two;
    DLTensor g8 = *g;
    g8.shape = &eight;
    assert_int_not_equal(rt_tensor_copy(&g8, &strided), 0);
    assert_has(rt_last_error(), "rt_tensor_copy: only compact row-major tensors can be copied");
    fake_cu_fail_next("cuMemcpyHtoD_v2", 1);
    assert_int_not_equal(rt_tensor_copy(g, h), 0);
    assert_has(rt_last_error(), "rt_tensor_copy: cuMemcpyHtoD of 64 bytes: CUDA_ERROR_INVALID_VALUE");
    fake_cu_fail_next("cuMemcpyDtoH_v2", 1);
    assert_int_not_equal(rt_tensor_copy(h, g), 0);
    assert_has(rt_last_error(), "rt_tensor_copy: cuMemcpyDtoH of 64 bytes: CUDA_ERROR_INVALID_VALUE");
    assert_int_equal(rt_tensor_copy(g, h), 0);
    rt_tensor_free(g);
    rt_tensor_free(h);
    rt_tensor_free(h2);
    rt_tensor_free(h8);
    rt_tensor_free(hh);
}

/* Launch lists rt_cuda_module_new refuses, and timing a module that does
 * not run on the GPU. */
static void test_malformed(void **state) {
    (void)state;
    assert_null(rt_cuda_module_new(NULL, 1, NULL));
    assert_has(rt_last_error(), "rt_cuda_module_new: needs a PTX image and at least one function");
    static const int a2[2] = {0, 5};
    rt_cuda_launch l = {.kernel = "k2", .grid = {1, 1, 1}, .block = {2048, 1, 1}, .nargs = 2, .args = a2};
    rt_cuda_func f = {.name = "f", .nparams = 2, .params = fake_cuda_params, .nlaunches = 1, .launches = &l};
    assert_null(rt_cuda_module_new("// fake PTX\n", 1, &f));
    assert_has(rt_last_error(), "rt_cuda_module_new: launch 0 of 'f' is malformed (kernel, dimensions, "
                                "shared bytes or argument slots)");
    f.nworkspace = 65;
    assert_null(rt_cuda_module_new("// fake PTX\n", 1, &f));
    assert_has(rt_last_error(), "rt_cuda_module_new: function 0 is malformed");
    rt_module *cpu = rt_module_new("c", NULL, NULL);
    rt_timing t;
    assert_int_not_equal(rt_cuda_time_call(cpu, "f", 0, NULL, NULL, &t), 0);
    assert_has(rt_last_error(), "rt_cuda_time_call: module of kind 'c' does not run on the GPU");
    rt_module_free(cpu);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workspace_alloc), cmocka_unit_test(test_tensor_alloc),
        cmocka_unit_test(test_image_refused),   cmocka_unit_test(test_shared_refused),
        cmocka_unit_test(test_two_gpus),        cmocka_unit_test(test_timed_failure),
        cmocka_unit_test(test_missing_kernel_and_device), cmocka_unit_test(test_copies),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, fake_cuda_setup, NULL);
}
