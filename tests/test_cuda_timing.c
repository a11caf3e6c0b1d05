/*
 * tests/test_cuda_timing.c — rt_cuda_time_call's options on the GPU:
 * flush_cache overwrites a buffer twice the L2 before every sample,
 * outside the time; before_call runs before every call, warm-up included,
 * and each call is then timed on its own; min_repeat_ms repeats the calls
 * of a sample; the flush's own failures are named.
 *
 * Runs on any machine against tests/fake_cuda's stand-in driver (an L2 of
 * 1 MiB; every event pair measures 1 ms), which ctest puts first on
 * LD_LIBRARY_PATH.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <loom/loom.h>

#include "fake_cuda/fake_cuda.h"

/* "f": one launch of "k2" over x and y. */
static rt_module *module(void) {
    static const int a2[2] = {0, 1};
    rt_cuda_launch l = {.kernel = "k2", .grid = {1, 1, 1}, .block = {32, 1, 1}, .nargs = 2, .args = a2};
    rt_cuda_func f = {.name = "f", .nparams = 2, .params = fake_cuda_params, .nlaunches = 1, .launches = &l};
    rt_module *m = rt_cuda_module_new("// fake PTX\n", 1, &f);
    assert_non_null(m);
    return m;
}

typedef struct {
    rt_module *m;
    DLTensor *x, *y;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->m = module();
    f->x = fake_cuda_tensor(0);
    f->y = fake_cuda_tensor(0);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rt_module_free(f->m);
    rt_tensor_free(f->x);
    rt_tensor_free(f->y);
    free(f);
    return 0;
}

/* rt_cuda_time_call of f's kernel on its two tensors. */
static int time_f(const fixture *f, const rt_timer_config *c, rt_timing *t) {
    return rt_cuda_time_call(f->m, "f", 2, (DLTensor *[]){f->x, f->y}, c, t);
}

static int hooks;
static void count_hook(void *user) {
    (void)user;
    hooks++;
}

/* Without options: no memset, no hook; a sample's calls share one event
 * pair (1 ms for 4 calls: 0.25 ms a call). */
static void test_plain(void **state) {
    fixture *f = *state;
    fake_cu_stats s0 = fake_counts();
    rt_timer_config c = {.warmup = 1, .repeat = 3, .min_repeat_ms = 3};
    rt_timing t;
    assert_int_equal(time_f(f, &c, &t), 0);
    fake_cu_stats s1 = fake_counts();
    assert_int_equal(s1.memsets, s0.memsets);
    /* the one-call probe took 1 ms; 3 ms wants 3 / 1 + 1 = 4 calls */
    assert_int_equal(s1.launches - s0.launches, 1 + 1 + 3 * 4);
    assert_int_equal(t.n, 3);
    assert_float_equal(t.median, 0.25e-3, 1e-9);
}

/* flush_cache: one memset of twice the L2 before each sample, from one
 * buffer allocated and freed by the call. */
static void test_flush(void **state) {
    fixture *f = *state;
    fake_cu_stats s0 = fake_counts();
    rt_timer_config c = {.warmup = 1, .repeat = 5, .flush_cache = true};
    rt_timing t;
    assert_int_equal(time_f(f, &c, &t), 0);
    fake_cu_stats s1 = fake_counts();
    assert_int_equal(s1.memsets - s0.memsets, 5);
    assert_int_equal(s1.memset_bytes, 2 << 20);
    assert_int_equal(s1.allocs - s0.allocs, 1);
    assert_int_equal(s1.live, s0.live);
    assert_int_equal(s1.launches - s0.launches, 1 + 5);
}

/* before_call: before every call, warm-up included; each call timed on
 * its own, so a sample of 4 calls is their mean (1 ms each). */
static void test_hook(void **state) {
    fixture *f = *state;
    fake_cu_stats s0 = fake_counts();
    hooks = 0;
    rt_timer_config c = {.warmup = 2, .repeat = 3, .min_repeat_ms = 3, .before_call = count_hook};
    rt_timing t;
    assert_int_equal(time_f(f, &c, &t), 0);
    fake_cu_stats s1 = fake_counts();
    assert_int_equal(hooks, 2 + 1 + 3 * 4);
    assert_int_equal(s1.launches - s0.launches, 2 + 1 + 3 * 4);
    assert_float_equal(t.median, 1e-3, 1e-9);
}

/* The L2 flush's buffer the driver cannot allocate, and its overwrite
 * failing: named, and nothing left allocated. */
static void test_flush_errors(void **state) {
    fixture *f = *state;
    fake_cu_stats s0 = fake_counts();
    rt_timer_config c = {.warmup = 1, .repeat = 2, .flush_cache = true};
    rt_timing t;
    fake_cu_fail_next("cuMemAlloc_v2", 2);
    assert_int_not_equal(time_f(f, &c, &t), 0);
    if (!strstr(rt_last_error(), "rt_cuda_time_call: cuMemAlloc of the 2097152-byte buffer that "
                                 "flushes L2: CUDA_ERROR_OUT_OF_MEMORY"))
        fail_msg("message: %s", rt_last_error());
    fake_cu_fail_next("cuMemsetD8_v2", 1);
    assert_int_not_equal(time_f(f, &c, &t), 0);
    if (!strstr(rt_last_error(), "rt_cuda_time_call: cuMemsetD8 flushing L2: "
                                 "CUDA_ERROR_INVALID_VALUE"))
        fail_msg("message: %s", rt_last_error());
    assert_int_equal(fake_counts().live, s0.live);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_plain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hook, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, fake_cuda_setup, NULL);
}
