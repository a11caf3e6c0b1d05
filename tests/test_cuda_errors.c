/*
 * tests/test_cuda_errors.c — the user mistakes of the cuda target, each
 * with its message: the GPU verifier's rules (threads per block, shared
 * memory, parallel loops in kernels, a thread axis bound with two
 * extents, stores outside bound loops, unbound loops around kernels),
 * bad targets, NVRTC failures, and the runtime without a driver.
 */
#include <stdio.h>
#include <string.h>

#include "cuda_harness.h"
#include "gpu_skip.h"

static te_tensor **mm_args(sched_case *c, te_tensor **a) {
    a[0] = c->in[0];
    a[1] = c->in[1];
    a[2] = c->out;
    return a;
}

/* Builds for cuda and expects failure with every needle in the message. */
static void expect_fail(sched_case *c, sch_schedule *s, const cg_build_options *o, const char *n1,
                        const char *n2, const char *n3) {
    assert_non_null(s);
    te_tensor *a[3];
    rt_module *m = cg_build(s, 3, mm_args(c, a), "cuda", o);
    if (m) fprintf(stderr, "unexpected success:\n%s\n", rt_module_get_text(m, "source"));
    assert_null(m);
    const char *msg = te_ctx_errmsg(c->ctx);
    if (n3) tu_assert_msg_has(msg, n1, n2, n3);
    else if (n2) tu_assert_msg_has(msg, n1, n2);
    else tu_assert_msg_has(msg, n1);
    te_ctx_free(c->ctx);
}

static void test_too_many_threads(void **state) {
    (void)state;
    sched_case c = sh_matmul(te_ctx_new(), 128, 128, 16);
    expect_fail(&c, ch_matmul_naive(&c, 64), NULL, "4096 threads per block", "limit is 1024",
                "stage 'C'");
}

static void test_too_much_shared(void **state) {
    (void)state;
    sched_case c = sh_matmul(te_ctx_new(), 64, 64, 64);
    cg_build_options o;
    memset(&o, 0, sizeof o);
    o.passes.gpu_limits.max_shared_bytes = 1024;
    expect_fail(&c, ch_matmul_shared(&c, 16), &o, "2048 bytes of shared memory", "A.shared 1024",
                "limit per block is 1024");
}

static void test_parallel_in_kernel(void **state) {
    (void)state;
    sched_case c = sh_matmul(te_ctx_new(), 64, 64, 16);
    sch_schedule *s = sch_create(c.ctx, 1, &c.out);
    te_expr *io, *jo, *ii, *ji;
    assert_int_equal(sch_tile(s, c.out, c.ax[0], c.ax[1], 16, 16, &io, &jo, &ii, &ji), 0);
    assert_int_equal(sch_bind(s, c.out, io, "blockIdx.x"), 0);
    assert_int_equal(sch_bind(s, c.out, jo, "threadIdx.x"), 0);
    assert_int_equal(sch_parallel(s, c.out, ii), 0);
    expect_fail(&c, s, NULL, "loop 'i.inner'", "is parallel", "bound to a thread axis or serial");
}

static void test_thread_axis_two_extents(void **state) {
    (void)state;
    /* C binds threadIdx.x over 16, the B tile fetch over 8. */
    sched_case e = sh_matmul(te_ctx_new(), 64, 64, 64);
    te_tensor *C = e.out;
    sch_schedule *t = sch_create(e.ctx, 1, &C);
    te_tensor *CC = sch_cache_write(t, C, "local");
    te_tensor *BB = sch_cache_read(t, e.in[1], "shared", 1, &CC);
    assert_non_null(BB);
    te_expr *io, *jo, *ii, *ji, *ko, *ki, *f, *fo, *fi;
    assert_int_equal(sch_tile(t, C, sch_axis(C, 0), sch_axis(C, 1), 16, 16, &io, &jo, &ii, &ji), 0);
    assert_int_equal(sch_bind(t, C, io, "blockIdx.y") | sch_bind(t, C, jo, "blockIdx.x"), 0);
    assert_int_equal(sch_bind(t, C, ii, "threadIdx.y") | sch_bind(t, C, ji, "threadIdx.x"), 0);
    assert_int_equal(sch_compute_at(t, CC, C, ji), 0);
    assert_int_equal(sch_split(t, CC, sch_reduce_axis(CC, 0), 16, &ko, &ki), 0);
    assert_int_equal(sch_compute_at(t, BB, CC, ko), 0);
    assert_int_equal(sch_fuse(t, BB, 2, (te_expr *[]){sch_axis(BB, 0), sch_axis(BB, 1)}, &f), 0);
    assert_int_equal(sch_split(t, BB, f, 8, &fo, &fi), 0);
    assert_int_equal(sch_bind(t, BB, fi, "threadIdx.x"), 0);
    expect_fail(&e, t, NULL, "threadIdx.x is bound twice with different extents",
                "loop 'j.inner' (stage 'C.local') has 16", "(stage 'B.shared') has 8");
}

static void test_store_outside_bound_loops(void **state) {
    (void)state;
    sched_case c = sh_matmul(te_ctx_new(), 32, 32, 8);
    sch_schedule *s = sch_create(c.ctx, 1, &c.out);
    expect_fail(&c, s, NULL, "stage 'C'", "stores to global memory outside any bound loop", NULL);
}

static void test_unbound_loop_around_kernel(void **state) {
    (void)state;
    sched_case c = sh_matmul(te_ctx_new(), 32, 32, 8);
    sch_schedule *s = sch_create(c.ctx, 1, &c.out);
    assert_int_equal(sch_bind(s, c.out, c.ax[1], "threadIdx.x"), 0);
    expect_fail(&c, s, NULL, "loop 'i'", "not bound to a thread axis but encloses bound loops",
                NULL);
}

static void test_llvm_rejects_bound_axes(void **state) {
    (void)state;
    sched_case c = sh_matmul(te_ctx_new(), 32, 32, 8);
    sch_schedule *s = ch_matmul_naive(&c, 16);
    te_tensor *a[3];
    assert_null(cg_build(s, 3, mm_args(&c, a), "llvm", NULL));
    tu_assert_msg_has(te_ctx_errmsg(c.ctx), "is bound to blockIdx.y", "llvm target");
    te_ctx_free(c.ctx);
}

static void test_bad_cuda_target(void **state) {
    (void)state;
    sched_case c = sh_matmul(te_ctx_new(), 32, 32, 8);
    sch_schedule *s = ch_matmul_naive(&c, 16);
    te_tensor *a[3];
    assert_null(cg_build(s, 3, mm_args(&c, a), "cuda -mcpu=x", NULL));
    tu_assert_msg_has(te_ctx_errmsg(c.ctx), "the only cuda option is -arch=sm_XX");
    if (rt_nvrtc_available()) {
        assert_null(cg_build(s, 3, mm_args(&c, a), "cuda -arch=gfx90a", NULL));
        tu_assert_msg_has(te_ctx_errmsg(c.ctx), "architecture 'gfx90a'", "sm_XX");
    }
    te_ctx_free(c.ctx);
}

static void test_nvrtc_error(void **state) {
    (void)state;
    tu_require_nvrtc();
    rt_nvrtc_output out;
    assert_int_equal(rt_nvrtc_compile("extern \"C\" __global__ void k() { undeclared_x = 1; }",
                                      "bad.cu", "sm_90", &out),
                     -1);
    tu_assert_msg_has(rt_last_error(), "NVRTC failed to compile bad.cu for compute_90",
                      "undeclared_x");
    assert_null(out.ptx);
    assert_int_equal(rt_nvrtc_compile("extern \"C\" __global__ void k(float *a) { a[0] = 1; }",
                                      "ok.cu", "sm_90", &out),
                     0);
    assert_non_null(strstr(out.ptx, ".entry k"));
    /* A real architecture also gives its machine code (an ELF image), a
     * virtual one PTX alone. */
    assert_non_null(out.cubin);
    assert_true(out.cubin_size > 4);
    assert_memory_equal(out.cubin, "\x7f" "ELF", 4);
    rt_nvrtc_output_free(&out);
    assert_int_equal(rt_nvrtc_compile("extern \"C\" __global__ void k(float *a) { a[0] = 1; }",
                                      "ok.cu", "compute_90", &out),
                     0);
    assert_non_null(strstr(out.ptx, ".entry k"));
    assert_null(out.cubin);
    assert_int_equal(out.cubin_size, 0);
    rt_nvrtc_output_free(&out);
}

static void test_driver_missing(void **state) {
    (void)state;
    if (rt_cuda_available()) tu_skip_test("a CUDA driver and GPU are present");
    tu_assert_msg_has(rt_last_error(), "CUDA driver not found (libcuda.so.1)");
    int64_t shape[1] = {16};
    DLDataType f32 = {kDLFloat, 32, 1};
    assert_null(rt_cuda_tensor_alloc(f32, 1, shape, 0));
    tu_assert_msg_has(rt_last_error(), "CUDA driver not found (libcuda.so.1)");
    rt_cuda_props p;
    assert_int_equal(rt_cuda_get_props(0, &p), -1);
    tu_assert_msg_has(rt_last_error(), "CUDA driver not found (libcuda.so.1)");
    assert_int_equal(rt_cuda_synchronize(0), -1);
    tu_assert_msg_has(rt_last_error(), "CUDA driver not found (libcuda.so.1)");
    int n = 5;
    assert_int_equal(rt_cuda_device_count(&n), -1);
    assert_int_equal(n, 0);
    if (!rt_nvrtc_available()) return;
    /* A module builds without a driver; calling it says why it cannot run. */
    sched_case c = sh_matmul(te_ctx_new(), 32, 32, 8);
    sch_schedule *s = ch_matmul_naive(&c, 16);
    te_tensor *a[3];
    rt_module *m = cg_build(s, 3, mm_args(&c, a), "cuda", NULL);
    assert_non_null(m);
    assert_string_equal(rt_module_get_text(m, "arch"), "sm_75");
    DLTensor *h = rt_tensor_alloc(f32, 2, (int64_t[]){32, 8});
    DLTensor *hb = rt_tensor_alloc(f32, 2, (int64_t[]){8, 32});
    DLTensor *hc = rt_tensor_alloc(f32, 2, (int64_t[]){32, 32});
    assert_int_equal(rt_call(m, "default", RT_ARGS(h, hb, hc)), -1);
    tu_assert_msg_has(rt_module_errmsg(m), "argument 0 ('A')", "runs on the GPU (kDLCUDA");
    h->device.device_type = hb->device.device_type = hc->device.device_type = kDLCUDA;
    assert_int_equal(rt_call(m, "default", RT_ARGS(h, hb, hc)), -1);
    tu_assert_msg_has(rt_module_errmsg(m), "'default' failed", "CUDA driver not found (libcuda.so.1)");
    rt_timing t;
    assert_int_equal(rt_cuda_time_call(m, "default", RT_ARGS(h, hb, hc), NULL, &t), -1);
    tu_assert_msg_has(rt_last_error(), "CUDA driver not found (libcuda.so.1)");
    h->device.device_type = hb->device.device_type = hc->device.device_type = kDLCPU;
    assert_int_equal(rt_tensor_copy(hc, h), -1);
    tu_assert_msg_has(rt_last_error(), "rt_tensor_copy: dimension 1 differs (dst 32, src 8)");
    rt_tensor_free(h);
    rt_tensor_free(hb);
    rt_tensor_free(hc);
    rt_module_free(m);
    te_ctx_free(c.ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_too_many_threads),
        cmocka_unit_test(test_too_much_shared),
        cmocka_unit_test(test_parallel_in_kernel),
        cmocka_unit_test(test_thread_axis_two_extents),
        cmocka_unit_test(test_store_outside_bound_loops),
        cmocka_unit_test(test_unbound_loop_around_kernel),
        cmocka_unit_test(test_llvm_rejects_bound_axes),
        cmocka_unit_test(test_bad_cuda_target),
        cmocka_unit_test(test_nvrtc_error),
        cmocka_unit_test(test_driver_missing),
    };
    return tu_run_group(tests);
}
