/*
 * tests/test_runtime.c — the runtime on its own: tensor allocation and its
 * errors, the thread pool's chunking, nesting and error propagation,
 * rt_call's argument checks on a hand-built module, and the timer.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1};

/* ---------------- tensors ---------------- */

static void test_tensor_alloc(void **state) {
    (void)state;
    int64_t shape[3] = {3, 5, 7};
    DLTensor *t = rt_tensor_alloc(F32, 3, shape);
    assert_non_null(t);
    assert_int_equal((uintptr_t)t->data % 64, 0);
    assert_int_equal(t->ndim, 3);
    assert_int_equal(t->device.device_type, kDLCPU);
    assert_int_equal(t->device.device_id, 0);
    assert_null(t->strides);
    assert_int_equal(t->byte_offset, 0);
    shape[1] = 99; /* the tensor keeps its own copy */
    assert_int_equal(t->shape[1], 5);
    assert_int_equal(rt_tensor_numel(t), 105);
    assert_int_equal(rt_tensor_nbytes(t), 420);
    memset(t->data, 0, rt_tensor_nbytes(t)); /* all of it writable (ASan) */
    rt_tensor_free(t);

    DLTensor *s = rt_tensor_alloc((DLDataType){kDLFloat, 64, 1}, 0, NULL);
    assert_non_null(s);
    assert_int_equal(rt_tensor_numel(s), 1);
    assert_int_equal(rt_tensor_nbytes(s), 8);
    rt_tensor_free(s);
    rt_tensor_free(NULL);
}

static void test_tensor_errors(void **state) {
    (void)state;
    int64_t shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_null(rt_tensor_alloc(F32, 9, shape));
    tu_assert_msg_has(rt_last_error(), "ndim 9", "[0, 8]");
    /* an empty tensor (a zero extent) is a tensor: numel 0, real data */
    int64_t bad[2] = {4, 0};
    DLTensor *empty = rt_tensor_alloc(F32, 2, bad);
    assert_non_null(empty);
    assert_non_null(empty->data);
    assert_int_equal(rt_tensor_numel(empty), 0);
    rt_tensor_free(empty);
    bad[1] = -3;
    assert_null(rt_tensor_alloc(F32, 2, bad));
    tu_assert_msg_has(rt_last_error(), "extent -3 of dimension 1 is negative");
    assert_null(rt_tensor_wrap(NULL, F32, -1, NULL));
    tu_assert_msg_has(rt_last_error(), "rt_tensor_wrap", "ndim -1");
}

static void test_tensor_wrap(void **state) {
    (void)state;
    float buf[6];
    int64_t shape[2] = {2, 3};
    DLTensor *t = rt_tensor_wrap(buf, F32, 2, shape);
    assert_non_null(t);
    assert_ptr_equal(t->data, buf);
    shape[0] = 7;
    assert_int_equal(t->shape[0], 2);
    assert_int_equal(rt_tensor_numel(t), 6);
    rt_tensor_free_header(t); /* buf is not freed (it is on the stack) */
}

/* ---------------- thread pool ---------------- */

typedef struct {
    int64_t n;
    atomic_int *hits;
    atomic_int calls;
} cover_env;

static int cover_body(int64_t b, int64_t e, void *env) {
    cover_env *c = env;
    atomic_fetch_add(&c->calls, 1);
    for (int64_t i = b; i < e; ++i) atomic_fetch_add(&c->hits[i], 1);
    return 0;
}

/* The core count is the machine's, not the pool's: setting the pool's
 * threads leaves it. */
static void test_num_cores(void **state) {
    (void)state;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    assert_int_equal(rt_num_cores(), online >= 1 ? online : 1);
    int before = rt_num_threads();
    assert_int_equal(rt_set_num_threads(before + 3), 0);
    assert_int_equal(rt_num_cores(), online >= 1 ? online : 1);
    assert_int_equal(rt_set_num_threads(before), 0);
    /* the affinity mask's count: at most the online cores, and what
     * sched_getaffinity says */
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    assert_int_equal(rt_available_cpus(), CPU_COUNT(&set));
    assert_true(rt_available_cpus() <= rt_num_cores());
}

static void test_parallel_cover(void **state) {
    (void)state;
    const int64_t ns[] = {0, 1, 3, 1000};
    for (int T = 1; T <= 4; ++T) {
        assert_int_equal(rt_set_num_threads(T), 0);
        assert_int_equal(rt_num_threads(), T);
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; ++k) {
            int64_t n = ns[k];
            cover_env c = {n, calloc((size_t)n + 1, sizeof(atomic_int)), 0};
            assert_int_equal(rt_parallel_for(n, cover_body, &c), 0);
            for (int64_t i = 0; i < n; ++i) assert_int_equal(atomic_load(&c.hits[i]), 1);
            int64_t chunks = n < T ? n : T;
            assert_int_equal(atomic_load(&c.calls), chunks);
            free(c.hits);
        }
    }
}

typedef struct {
    atomic_int *hits;   /* 8 x 8 */
    pthread_t outer_tid[8];
    atomic_int same_thread;
} nest_env;
typedef struct {
    nest_env *e;
    int64_t row;
} nest_inner;

static int inner_body(int64_t b, int64_t e, void *env) {
    nest_inner *in = env;
    if (pthread_equal(pthread_self(), in->e->outer_tid[in->row])) atomic_fetch_add(&in->e->same_thread, 1);
    for (int64_t j = b; j < e; ++j) atomic_fetch_add(&in->e->hits[in->row * 8 + j], 1);
    return 0;
}

static int outer_body(int64_t b, int64_t e, void *env) {
    nest_env *ne = env;
    for (int64_t i = b; i < e; ++i) {
        ne->outer_tid[i] = pthread_self();
        nest_inner in = {ne, i};
        int rc = rt_parallel_for(8, inner_body, &in);
        if (rc) return rc;
    }
    return 0;
}

static void test_parallel_nested(void **state) {
    (void)state;
    assert_int_equal(rt_set_num_threads(4), 0);
    nest_env ne;
    memset(&ne, 0, sizeof ne);
    ne.hits = calloc(64, sizeof(atomic_int));
    assert_int_equal(rt_parallel_for(8, outer_body, &ne), 0);
    for (int i = 0; i < 64; ++i) assert_int_equal(atomic_load(&ne.hits[i]), 1);
    /* Nested loops ran serially in the thread of their outer iteration:
     * one call per outer row, each on that row's thread. */
    assert_int_equal(atomic_load(&ne.same_thread), 8);
    free(ne.hits);
}

static int fail_body(int64_t b, int64_t e, void *env) {
    (void)env;
    for (int64_t i = b; i < e; ++i)
        if (i == 700) return 42;
    return 0;
}

static int fail_all_body(int64_t b, int64_t e, void *env) {
    (void)e;
    (void)env;
    return b == 0 ? 5 : 9; /* chunk 0 fails with 5, the others with 9 */
}

static void test_parallel_errors(void **state) {
    (void)state;
    for (int T = 1; T <= 4; ++T) {
        assert_int_equal(rt_set_num_threads(T), 0);
        assert_int_equal(rt_parallel_for(1000, fail_body, NULL), 42);
        /* The lowest failing chunk wins, whatever order threads finish in. */
        assert_int_equal(rt_parallel_for(1000, fail_all_body, NULL), 5);
        /* The pool still works after a failure. */
        cover_env c = {10, calloc(11, sizeof(atomic_int)), 0};
        assert_int_equal(rt_parallel_for(10, cover_body, &c), 0);
        for (int i = 0; i < 10; ++i) assert_int_equal(atomic_load(&c.hits[i]), 1);
        free(c.hits);
    }
    assert_int_equal(rt_set_num_threads(0), -1);
    tu_assert_msg_has(rt_last_error(), "rt_set_num_threads", "at least 1");
    assert_int_equal(rt_parallel_for(10, NULL, NULL), -1);
    tu_assert_msg_has(rt_last_error(), "body is NULL");
}

/* Several non-pool threads calling rt_parallel_for at once. */
static void *concurrent_caller(void *arg) {
    intptr_t bad = 0;
    for (int rep = 0; rep < 50; ++rep) {
        cover_env c = {257, calloc(258, sizeof(atomic_int)), 0};
        if (rt_parallel_for(257, cover_body, &c) != 0) bad++;
        for (int i = 0; i < 257; ++i)
            if (atomic_load(&c.hits[i]) != 1) bad++;
        free(c.hits);
    }
    (void)arg;
    return (void *)bad;
}

static void test_parallel_concurrent_callers(void **state) {
    (void)state;
    assert_int_equal(rt_set_num_threads(3), 0);
    pthread_t th[4];
    for (int i = 0; i < 4; ++i) assert_int_equal(pthread_create(&th[i], NULL, concurrent_caller, NULL), 0);
    for (int i = 0; i < 4; ++i) {
        void *r;
        pthread_join(th[i], &r);
        assert_int_equal((intptr_t)r, 0);
    }
}

/* A forked child (a measurement runner) gets a working pool of its own. */
static void test_parallel_after_fork(void **state) {
    (void)state;
    assert_int_equal(rt_set_num_threads(3), 0);
    cover_env c = {100, calloc(101, sizeof(atomic_int)), 0};
    assert_int_equal(rt_parallel_for(100, cover_body, &c), 0); /* workers started */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cover_env d = {100, calloc(101, sizeof(atomic_int)), 0};
        int bad = rt_parallel_for(100, cover_body, &d) != 0 || atomic_load(&d.calls) != 3;
        for (int i = 0; i < 100; ++i) bad |= atomic_load(&d.hits[i]) != 1;
        _exit(bad ? 1 : 0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    free(c.hits);
}

/* ---------------- modules ---------------- */

/* C[i] = A[i] + B[i] over 4 elements, the rt_packed_fn convention. */
static int32_t add4(void **args) {
    const float *a = args[0], *b = args[1];
    float *c = args[2];
    for (int i = 0; i < 4; ++i) c[i] = a[i] + b[i];
    return 0;
}
static int32_t fails(void **args) {
    (void)args;
    return 7;
}

static int impl_freed;
static void impl_free(void *p) { impl_freed += *(int *)p; }

static rt_module *make_module(int *impl) {
    rt_module *m = rt_module_new("test", impl, impl_free);
    assert_non_null(m);
    rt_param p[3] = {{"A", F32, 1, {4}}, {"B", F32, 1, {4}}, {"C", F32, 1, {4}}};
    assert_int_equal(rt_module_add_func(m, "default", add4, 3, p), 0);
    assert_int_equal(rt_module_add_func(m, "broken", fails, 0, NULL), 0);
    return m;
}

static void test_module_call(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    int impl = 3;
    rt_module *m = make_module(&impl);
    assert_string_equal(rt_module_kind(m), "test");
    assert_int_equal(rt_module_num_funcs(m), 2);
    assert_string_equal(rt_module_func_name(m, 1), "broken");
    assert_ptr_equal(rt_module_get_func(m, "default"), add4);
    assert_null(rt_module_get_func(m, "nope"));

    int64_t shape[1] = {4};
    DLTensor *a = tu_rand_f32(&seed, 1, shape), *b = tu_rand_f32(&seed, 1, shape);
    DLTensor *c = tu_nan_f32(1, shape);
    assert_int_equal(rt_call(m, "default", RT_ARGS(a, b, c)), 0);
    double want[4];
    for (int i = 0; i < 4; ++i) want[i] = (double)((float *)a->data)[i] + ((float *)b->data)[i];
    assert_int_equal(tu_compare_f32("add4", c->data, want, 4, 1e-6, 1e-7), 0);

    /* byte_offset is applied: a view of the elements 1.. of a 5-element buffer */
    int64_t five[1] = {5};
    DLTensor *big = tu_rand_f32(&seed, 1, five);
    DLTensor *view = rt_tensor_wrap(big->data, F32, 1, shape);
    view->byte_offset = sizeof(float);
    tu_poison_f32(c);
    assert_int_equal(rt_call(m, "default", RT_ARGS(view, b, c)), 0);
    for (int i = 0; i < 4; ++i) want[i] = (double)((float *)big->data)[i + 1] + ((float *)b->data)[i];
    assert_int_equal(tu_compare_f32("add4 offset", c->data, want, 4, 1e-6, 1e-7), 0);
    rt_tensor_free_header(view);
    rt_tensor_free(big);

    rt_module_set_text(m, "source", "int x;");
    rt_module_set_text(m, "source", "int y;");
    assert_string_equal(rt_module_get_text(m, "source"), "int y;");
    assert_null(rt_module_get_text(m, "asm"));

    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_tensor_free(c);
    impl_freed = 0;
    rt_module_free(m);
    assert_int_equal(impl_freed, 3);
}

static void test_module_errors(void **state) {
    (void)state;
    int impl = 1;
    rt_module *m = make_module(&impl);
    int64_t s4[1] = {4}, s5[1] = {5}, s22[2] = {2, 2};
    DLTensor *a = rt_tensor_alloc(F32, 1, s4), *b = rt_tensor_alloc(F32, 1, s4);
    DLTensor *c = rt_tensor_alloc(F32, 1, s4);
    DLTensor *c5 = rt_tensor_alloc(F32, 1, s5), *c22 = rt_tensor_alloc(F32, 2, s22);
    DLTensor *d = rt_tensor_alloc((DLDataType){kDLFloat, 64, 1}, 1, s4);

    assert_int_equal(rt_call(m, "foo", RT_ARGS(a, b, c)), -1);
    assert_string_equal(rt_module_errmsg(m),
                        "rt_call: module has no function 'foo' (it has: default, broken)");
    assert_int_equal(rt_call(m, "default", RT_ARGS(a, b)), -1);
    assert_string_equal(rt_module_errmsg(m), "rt_call: function 'default' takes 3 tensors, got 2");
    assert_int_equal(rt_call(m, "default", RT_ARGS(a, b, c5)), -1);
    assert_string_equal(rt_module_errmsg(m),
                        "rt_call: argument 2 ('C') of 'default' has shape [5], expected [4]");
    assert_int_equal(rt_call(m, "default", RT_ARGS(a, c22, c)), -1);
    tu_assert_msg_has(rt_module_errmsg(m), "argument 1 ('B')", "2 dimensions", "expected 1");
    assert_int_equal(rt_call(m, "default", RT_ARGS(d, b, c)), -1);
    tu_assert_msg_has(rt_module_errmsg(m), "argument 0 ('A')", "dtype float64, expected float32");
    assert_int_equal(rt_call(m, "default", RT_ARGS(a, NULL, c)), -1);
    tu_assert_msg_has(rt_module_errmsg(m), "argument 1 ('B')", "is NULL");

    c->device.device_type = kDLCUDA;
    assert_int_equal(rt_call(m, "default", RT_ARGS(a, b, c)), -1);
    tu_assert_msg_has(rt_module_errmsg(m), "argument 2 ('C')", "device type 2", "kDLCPU");
    c->device.device_type = kDLCPU;

    int64_t strides[1] = {2};
    c->strides = strides;
    assert_int_equal(rt_call(m, "default", RT_ARGS(a, b, c)), -1);
    tu_assert_msg_has(rt_module_errmsg(m), "argument 2 ('C')", "strides [2]", "compact");
    strides[0] = 1; /* explicit compact strides are fine */
    assert_int_equal(rt_call(m, "default", RT_ARGS(a, b, c)), 0);
    assert_string_equal(rt_module_errmsg(m), "");
    c->strides = NULL;

    assert_int_equal(rt_call(m, "broken", 0, NULL), -1);
    assert_string_equal(rt_module_errmsg(m), "rt_call: 'broken' failed with code 7");

    rt_param p[1] = {{"X", F32, 1, {4}}};
    assert_int_equal(rt_module_add_func(m, "default", add4, 1, p), -1);
    tu_assert_msg_has(rt_module_errmsg(m), "already has a function 'default'");

    assert_int_equal(rt_call(NULL, "default", 0, NULL), -1);
    tu_assert_msg_has(rt_last_error(), "module is NULL");

    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_tensor_free(c);
    rt_tensor_free(c5);
    rt_tensor_free(c22);
    rt_tensor_free(d);
    rt_module_free(m);
}

/* ---------------- timing ---------------- */

static int sleep_1ms(void *user) {
    atomic_int *calls = user;
    atomic_fetch_add(calls, 1);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    return 0;
}

static int fail_third(void *user) {
    int *n = user;
    return ++*n == 3 ? 11 : 0;
}

static int noop(void *user) {
    atomic_int *calls = user;
    atomic_fetch_add(calls, 1);
    return 0;
}

static void test_timer(void **state) {
    (void)state;
    double t0 = rt_now();
    rt_timer_config cfg = rt_timer_default();
    assert_int_equal(cfg.warmup, 1);
    assert_int_equal(cfg.repeat, 5);
    atomic_int calls = 0;
    rt_timing t;
    assert_int_equal(rt_time(sleep_1ms, &calls, &cfg, &t), 0);
    assert_int_equal(atomic_load(&calls), 6);
    assert_int_equal(t.n, 5);
    assert_true(t.median >= 0.5e-3 && t.median <= 50e-3);
    assert_true(t.min <= t.median && t.median <= t.max);
    assert_true(t.min <= t.mean && t.mean <= t.max);
    assert_true(t.stddev >= 0 && t.stddev <= t.max - t.min + 1e-12);
    for (int i = 0; i < 5; ++i) assert_true(t.samples[i] >= t.min && t.samples[i] <= t.max);
    assert_true(rt_now() - t0 >= 5e-3);

    /* min_repeat_ms: each sample runs the call many times. */
    cfg.repeat = 3;
    cfg.min_repeat_ms = 5;
    cfg.flush_cache = true;
    atomic_store(&calls, 0);
    double s0 = rt_now();
    assert_int_equal(rt_time(noop, &calls, &cfg, &t), 0);
    assert_true(rt_now() - s0 >= 15e-3);
    assert_true(atomic_load(&calls) > 100);
    assert_true(t.median > 0 && t.median < 1e-4);

    int n = 0;
    cfg = rt_timer_default();
    assert_int_equal(rt_time(fail_third, &n, &cfg, &t), 11);
}

/* A before_call hook: counts, and takes 2 ms that must stay out of the
 * samples. */
static void slow_hook(void *user) {
    atomic_int *hooks = user;
    atomic_fetch_add(hooks, 1);
    double t0 = rt_now();
    while (rt_now() - t0 < 2e-3) {
    }
}

static void test_timer_before_call(void **state) {
    (void)state;
    rt_timer_config cfg = rt_timer_default();
    atomic_int calls = 0, hooks = 0;
    cfg.before_call = slow_hook;
    cfg.before_call_user = &hooks;
    rt_timing t;
    assert_int_equal(rt_time(noop, &calls, &cfg, &t), 0);
    /* One hook per call, the warm-up's included. */
    assert_int_equal(atomic_load(&calls), 6);
    assert_int_equal(atomic_load(&hooks), 6);
    assert_int_equal(t.n, 5);
    /* The hook's 2 ms are outside every sample (a no-op call). */
    assert_true(t.max < 1e-3);

    /* With min_repeat_ms every call of a sample still gets its hook, the
     * sample is the mean of the calls alone, and its length counts the
     * hooks: 10 ms a sample is about 5 calls, not the millions a no-op
     * call alone would take. */
    cfg.repeat = 2;
    cfg.min_repeat_ms = 10;
    atomic_store(&calls, 0), atomic_store(&hooks, 0);
    double t0 = rt_now();
    assert_int_equal(rt_time(noop, &calls, &cfg, &t), 0);
    assert_int_equal(atomic_load(&hooks), atomic_load(&calls));
    assert_true(atomic_load(&calls) >= 1 + 2 * 4 && atomic_load(&calls) < 200);
    assert_true(rt_now() - t0 < 2.0);
    assert_true(t.median < 1e-4);
}

static void test_cache_flush(void **state) {
    (void)state;
    /* Eviction writes dirty lines back and keeps every value, at any
     * alignment and for a tensor with a byte offset. */
    int64_t shape[1] = {100003};
    DLTensor *x = rt_tensor_alloc((DLDataType){kDLFloat, 32, 1}, 1, shape);
    assert_non_null(x);
    float *p = x->data;
    for (int64_t i = 0; i < shape[0]; i++) p[i] = (float)i * 0.5f;
    rt_tensor_cache_flush(x);
    rt_cache_flush(p + 3, 17);
    rt_cache_flush(NULL, 64);
    rt_cache_flush(p, 0);
    rt_tensor_cache_flush(NULL);
    for (int64_t i = 0; i < shape[0]; i++) assert_true(p[i] == (float)i * 0.5f);
    DLTensor view = *x;
    view.byte_offset = 4 * 1000;
    view.shape = &(int64_t){5};
    rt_tensor_cache_flush(&view);
    assert_true(p[1002] == 501.0f);
    /* A GPU tensor's pointer is not dereferenced (it would fault). */
    DLTensor dev = *x;
    dev.data = (void *)(uintptr_t)0x10;
    dev.device.device_type = kDLCUDA;
    rt_tensor_cache_flush(&dev);
    rt_tensor_free(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_alloc),
        cmocka_unit_test(test_tensor_errors),
        cmocka_unit_test(test_tensor_wrap),
        cmocka_unit_test(test_num_cores),
        cmocka_unit_test(test_parallel_cover),
        cmocka_unit_test(test_parallel_nested),
        cmocka_unit_test(test_parallel_errors),
        cmocka_unit_test(test_parallel_concurrent_callers),
        cmocka_unit_test(test_parallel_after_fork),
        cmocka_unit_test(test_module_call),
        cmocka_unit_test(test_module_errors),
        cmocka_unit_test(test_timer),
        cmocka_unit_test(test_timer_before_call),
        cmocka_unit_test(test_cache_flush),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
