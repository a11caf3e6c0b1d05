/*
 * tests/test_cuda_workspace.c — a CUDA function's workspaces (device
 * buffers for intermediates, runtime/cuda_module.c) are allocated at its
 * first call and kept for the next ones: no allocation, synchronisation or
 * free per call, in a plain call or a timing loop; freed with the module;
 * kept through a failed launch; and shared safely by calls from two
 * threads.
 *
 * Runs on any machine against tests/fake_cuda's stand-in driver (ctest puts
 * it first on LD_LIBRARY_PATH): it counts what the runtime asks of the
 * driver, which a real GPU cannot tell.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <loom/loom.h>

#include "fake_cuda/fake_cuda.h"

static const int64_t ws_bytes[2] = {4096, 256};

/* A module of one function "f": "stage3" writes workspaces 0 and 1 from x,
 * then last_kernel (with its two pointer arguments) reads workspace 0 into
 * y. nworkspace 0: "stage2" x -> y only. */
static rt_module *module(int nworkspace, const char *last_kernel) {
    static const int a0[3] = {0, -1, -2}, a1[2] = {-1, 1}, plain[2] = {0, 1};
    rt_cuda_launch l[2] = {
        {.kernel = "stage3", .grid = {4, 1, 1}, .block = {64, 1, 1}, .nargs = 3, .args = a0},
        {.kernel = last_kernel, .grid = {1, 1, 1}, .block = {16, 1, 1}, .nargs = 2, .args = a1},
    };
    if (!nworkspace) l[0] = (rt_cuda_launch){.kernel = "stage2", .grid = {1, 1, 1}, .block = {16, 1, 1},
                                             .nargs = 2, .args = plain};
    rt_cuda_func f = {.name = "f", .nparams = 2, .params = fake_cuda_params, .nworkspace = nworkspace,
                      .workspace_bytes = ws_bytes, .nlaunches = nworkspace ? 2 : 1, .launches = l};
    rt_module *m = rt_cuda_module_new("// fake PTX\n", 1, &f);
    assert_non_null(m);
    return m;
}

/* Five calls: one allocation of each workspace, the same buffers in every
 * call, one synchronisation per launch (a plain call waits for each
 * kernel) and none more; a timing loop adds neither; freeing the module
 * frees them. */
static void test_kept(void **state) {
    (void)state;
    DLTensor *x = fake_cuda_tensor(0), *y = fake_cuda_tensor(0);
    rt_module *m = module(2, "copy2");
    fake_cu_stats s0 = fake_counts();
    unsigned long long ws0 = 0;
    for (int i = 0; i < 5; i++) {
        if (rt_call(m, "f", 2, (DLTensor *[]){x, y})) fail_msg("call %d: %s", i, rt_module_errmsg(m));
        fake_cu_stats s = fake_counts();
        assert_string_equal(s.last_kernel, "copy2");
        if (i == 0) ws0 = s.last_args[0];
        assert_true(ws0 == s.last_args[0]);
        assert_true(s.last_args[1] == (unsigned long long)(uintptr_t)y->data);
    }
    fake_cu_stats s1 = fake_counts();
    assert_int_equal(s1.allocs - s0.allocs, 2);
    assert_int_equal(s1.frees - s0.frees, 0);
    assert_int_equal(s1.launches - s0.launches, 10);
    assert_int_equal(s1.syncs - s0.syncs, 10);

    rt_timer_config c = {.warmup = 1, .repeat = 3, .min_repeat_ms = 0};
    rt_timing t;
    if (rt_cuda_time_call(m, "f", 2, (DLTensor *[]){x, y}, &c, &t)) fail_msg("%s", rt_last_error());
    fake_cu_stats s2 = fake_counts();
    assert_int_equal(s2.allocs, s1.allocs);
    assert_int_equal(s2.frees, s1.frees);
    /* the warm-up call waits for its two kernels; the timed calls do not */
    assert_int_equal(s2.syncs - s1.syncs, 2);
    assert_int_equal(s2.launches - s1.launches, 8);
    assert_true(s2.last_args[0] == ws0);

    rt_module_free(m);
    fake_cu_stats s3 = fake_counts();
    assert_int_equal(s3.frees - s2.frees, 2);
    /* what was live before the module: x and y */
    assert_int_equal(s3.live, s0.live);
    rt_tensor_free(x);
    rt_tensor_free(y);
}

/* A function without workspaces allocates nothing. */
static void test_none(void **state) {
    (void)state;
    DLTensor *x = fake_cuda_tensor(0), *y = fake_cuda_tensor(0);
    rt_module *m = module(0, "copy2");
    fake_cu_stats s0 = fake_counts();
    for (int i = 0; i < 3; i++)
        if (rt_call(m, "f", 2, (DLTensor *[]){x, y})) fail_msg("%s", rt_module_errmsg(m));
    fake_cu_stats s1 = fake_counts();
    assert_int_equal(s1.allocs, s0.allocs);
    assert_int_equal(s1.launches - s0.launches, 3);
    rt_module_free(m);
    assert_int_equal(fake_counts().frees, s1.frees);
    rt_tensor_free(x);
    rt_tensor_free(y);
}

/* A launch that fails names its kernel and the driver's error; the kept
 * workspaces stay for the next call (no new allocation) and are freed
 * with the module. */
static void test_fault(void **state) {
    (void)state;
    DLTensor *x = fake_cuda_tensor(0), *y = fake_cuda_tensor(0);
    rt_module *m = module(2, "fault");
    fake_cu_stats s0 = fake_counts();
    for (int i = 0; i < 2; i++) {
        assert_int_not_equal(rt_call(m, "f", 2, (DLTensor *[]){x, y}), 0);
        const char *e = rt_module_errmsg(m);
        assert_non_null(strstr(e, "cuLaunchKernel kernel 'fault' grid (1, 1, 1) block (16, 1, 1)"));
        assert_non_null(strstr(e, "CUDA_ERROR_LAUNCH_FAILED (unspecified launch failure)"));
    }
    fake_cu_stats s1 = fake_counts();
    assert_int_equal(s1.allocs - s0.allocs, 2);
    assert_int_equal(s1.frees, s0.frees);
    rt_module_free(m);
    assert_int_equal(fake_counts().live, s0.live);
    rt_tensor_free(x);
    rt_tensor_free(y);
}

typedef struct {
    rt_module *m;
    DLTensor *x, *y;
    int failed;
} worker;

static void *calls(void *p) {
    worker *w = p;
    for (int i = 0; i < 300; i++) w->failed += rt_call(w->m, "f", 2, (DLTensor *[]){w->x, w->y}) != 0;
    return NULL;
}

/* Two threads calling one function: every call succeeds; a call that finds
 * the kept set in use allocates its own and frees it, so afterwards only
 * the kept set is live, and nothing once the module is freed. */
static void test_threads(void **state) {
    (void)state;
    rt_module *m = module(2, "copy2");
    worker w[2];
    fake_cu_stats s0 = fake_counts();
    for (int i = 0; i < 2; i++) w[i] = (worker){m, fake_cuda_tensor(0), fake_cuda_tensor(0), 0};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, calls, &w[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    assert_int_equal(w[0].failed + w[1].failed, 0);
    fake_cu_stats s1 = fake_counts();
    /* 4 tensors and the kept set's 2 buffers */
    assert_int_equal(s1.live - s0.live, 4 + 2);
    assert_int_equal(s1.launches - s0.launches, 2 * 300 * 2);
    rt_module_free(m);
    assert_int_equal(fake_counts().live - s0.live, 4);
    for (int i = 0; i < 2; i++) {
        rt_tensor_free(w[i].x);
        rt_tensor_free(w[i].y);
    }
    assert_int_equal(fake_counts().live, s0.live);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kept),
        cmocka_unit_test(test_none),
        cmocka_unit_test(test_fault),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, fake_cuda_setup, NULL);
}
