/*
 * tests/test_cuda_driver_errors.c — what the CUDA runtime says when the
 * driver refuses something: a workspace or tensor it cannot allocate, an
 * image it cannot load, dynamic shared memory a kernel may not take, a
 * failure seen only at the end of a timing loop; and a call whose tensors
 * are on two GPUs. Each message names the object and the driver's error.
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

static const rt_param params[2] = {
    {"x", {kDLFloat, 32, 1}, 1, {16}},
    {"y", {kDLFloat, 32, 1}, 1, {16}},
};

/* "f": one launch of `kernel` (x, y and, with a workspace, workspace 0
 * of 4096 bytes; last character of the name: its pointer count) with
 * shared_bytes of dynamic shared memory. */
static rt_module *module(const char *kernel, bool workspace, int64_t shared_bytes) {
    static const int a2[2] = {0, 1}, a3[3] = {0, 1, -1};
    static const int64_t ws = 4096;
    rt_cuda_launch l = {.kernel = kernel, .grid = {2, 1, 1}, .block = {32, 1, 1},
                        .nargs = workspace ? 3 : 2, .args = workspace ? a3 : a2,
                        .shared_bytes = shared_bytes};
    rt_cuda_func f = {.name = "f", .nparams = 2, .params = params, .nworkspace = workspace,
                      .workspace_bytes = &ws, .nlaunches = 1, .launches = &l};
    rt_module *m = rt_cuda_module_new("// fake PTX\n", 1, &f);
    assert_non_null(m);
    return m;
}

static DLTensor *tensor(int device) {
    DLTensor *t = rt_cuda_tensor_alloc((DLDataType){kDLFloat, 32, 1}, 1, (int64_t[]){16}, device);
    if (!t) fail_msg("rt_cuda_tensor_alloc: %s", rt_last_error());
    return t;
}

static void assert_has(const char *msg, const char *want) {
    if (!strstr(msg, want)) fail_msg("message '%s' lacks '%s'", msg, want);
}

/* A workspace the driver cannot allocate: named with its size and the
 * function; nothing launched; the next call allocates and runs. */
static void test_workspace_alloc(void **state) {
    (void)state;
    DLTensor *x = tensor(0), *y = tensor(0);
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
    DLTensor *x = tensor(0), *y = tensor(0);
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
    DLTensor *x = tensor(0), *y = tensor(0);
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
    DLTensor *x = tensor(0), *y = tensor(1);
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
    DLTensor *x = tensor(0), *y = tensor(0);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workspace_alloc), cmocka_unit_test(test_tensor_alloc),
        cmocka_unit_test(test_image_refused),   cmocka_unit_test(test_shared_refused),
        cmocka_unit_test(test_two_gpus),        cmocka_unit_test(test_timed_failure),
    };
    return cmocka_run_group_tests(tests, fake_cuda_setup, NULL);
}
