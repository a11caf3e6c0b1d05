/*
 * tests/test_bounds_check.c — cg_build_options.bounds_check (llvm): a
 * kernel that reads or writes outside a buffer fails its call with a
 * message naming the buffer, the index and the extent instead of
 * faulting, in serial, vectorized and parallel loops (the first failing
 * chunk's first error); the same kernels without the option are built but
 * never run. In-bounds kernels with the checks compute what the double
 * reference says (NaN-poisoned outputs), every operator's default
 * schedule included, so the checks raise no false alarm.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_cases.h"
#include "sched_harness.h"

static const DLDataType F32 = {kDLFloat, 32, 1};

/* B[i] = A[i * scale + shift] over i < n, A of extent na. */
typedef struct {
    te_ctx *ctx;
    te_tensor *A, *B;
    te_expr *i;
    sch_schedule *s;
} shifted;

static shifted shifted_read(int64_t na, int64_t n, int64_t scale, int64_t shift) {
    shifted k;
    k.ctx = te_ctx_new();
    k.A = te_placeholder(k.ctx, "A", TE_FLOAT32, TE_SHAPE(na));
    k.i = te_axis(k.ctx, "i", n);
    te_expr *at = te_add(te_mul(k.i, te_int(k.ctx, scale)), te_int(k.ctx, shift));
    k.B = te_compute(k.ctx, "B", TE_AXES(k.i), te_read(k.A, at));
    assert_non_null(k.B);
    k.s = sch_create(k.ctx, 1, &k.B);
    assert_non_null(k.s);
    return k;
}

static rt_module *build_checked(shifted *k, bool check, const char *name) {
    cg_build_options o;
    memset(&o, 0, sizeof o);
    o.bounds_check = check;
    o.name = name;
    o.llvm.keep_ir = true;
    rt_module *m = cg_build(k->s, TE_TENSORS(k->A, k->B), "llvm", &o);
    if (!m) fprintf(stderr, "cg_build: %s\n", te_ctx_errmsg(k->ctx));
    assert_non_null(m);
    return m;
}

/* Calls function `name` of m on fresh tensors and expects the failure
 * `want` (rt_module_errmsg and rt_last_error alike). */
static void expect_call_error(rt_module *m, const char *name, int64_t na, int64_t n,
                              const char *want) {
    DLTensor *a = rt_tensor_alloc(F32, 1, &na), *b = tu_nan_f32(1, &n);
    for (int64_t x = 0; x < na; x++) ((float *)a->data)[x] = (float)x;
    assert_int_equal(rt_call(m, name, RT_ARGS(a, b)), -1);
    assert_string_equal(rt_module_errmsg(m), want);
    assert_string_equal(rt_last_error(), want);
    rt_tensor_free(a);
    rt_tensor_free(b);
}

/* A read far past the end: the first iteration reports it. Without the
 * option the same kernel has no check (it would fault: not run). */
static void test_read_outside(void **state) {
    (void)state;
    shifted k = shifted_read(64, 64, 1, 1000000);
    rt_module *m = build_checked(&k, true, "shift");
    assert_non_null(strstr(rt_module_get_text(m, "ir"), "rt_bounds_error"));
    expect_call_error(m, "shift", 64, 64, "rt_call: A[1000000] read outside A[64] in 'shift'");
    /* the module stays usable: the next call fails the same way */
    expect_call_error(m, "shift", 64, 64, "rt_call: A[1000000] read outside A[64] in 'shift'");
    rt_module_free(m);

    rt_module *unchecked = build_checked(&k, false, NULL);
    assert_null(strstr(rt_module_get_text(unchecked, "ir"), "rt_bounds_error"));
    rt_module_free(unchecked);
    te_ctx_free(k.ctx);

    /* negative: an index below 0 is outside too */
    k = shifted_read(64, 64, 1, -3);
    m = build_checked(&k, true, NULL);
    expect_call_error(m, "default", 64, 64, "rt_call: A[-3] read outside A[64] in 'default'");
    rt_module_free(m);
    te_ctx_free(k.ctx);
}

/* B[i] = A[2i] over 64 i with A of 64: iterations 32.. read outside. In
 * a parallel loop (4 threads, on any core count) the lowest failing
 * chunk holds i = 32 and starts at or before it, so the report is always
 * A[64]; the same vectorized by 8 (the first bad lane of a vector), and
 * A[i + 3] in vectors of 8 whose last vector straddles the end. */
static void test_parallel_first_error(void **state) {
    (void)state;
    int threads = rt_num_threads();
    assert_int_equal(rt_set_num_threads(4), 0);
    for (int variant = 0; variant < 3; variant++) {
        shifted k = variant < 2 ? shifted_read(64, 64, 2, 0) : shifted_read(64, 64, 1, 3);
        if (variant == 0) {
            assert_int_equal(sch_parallel(k.s, k.B, k.i), 0);
        } else {
            te_expr *o, *in;
            assert_int_equal(sch_split(k.s, k.B, k.i, 8, &o, &in), 0);
            assert_int_equal(sch_vectorize(k.s, k.B, in), 0);
            assert_int_equal(sch_parallel(k.s, k.B, o), 0);
        }
        rt_module *m = build_checked(&k, true, NULL);
        const char *ir = rt_module_get_text(m, "ir");
        assert_non_null(strstr(ir, "rt_parallel_for"));
        if (variant > 0) assert_non_null(strstr(ir, "llvm.cttz"));
        for (int rep = 0; rep < 20; rep++)
            expect_call_error(m, "default", 64, 64, "rt_call: A[64] read outside A[64] in 'default'");
        rt_module_free(m);
        te_ctx_free(k.ctx);
    }
    assert_int_equal(rt_set_num_threads(threads), 0);
}

static tir_buffer *param1(te_ctx *ctx, const char *name, int64_t n) {
    tir_buffer *b = tir_buffer_new(ctx, name, TE_FLOAT32, 1, (int64_t[]){n}, TIR_SCOPE_GLOBAL);
    assert_non_null(b);
    b->is_param = true;
    return b;
}

static rt_module *build_tir(te_ctx *ctx, tir_func *f) {
    cg_llvm_options o = {0};
    o.bounds_check = true;
    const tir_func *fs[1] = {f};
    rt_module *m = cg_llvm_build(ctx, 1, fs, &o);
    if (!m) fprintf(stderr, "cg_llvm_build: %s\n", te_ctx_errmsg(ctx));
    assert_non_null(m);
    return m;
}

static int call1(rt_module *m, DLTensor *c) { return rt_call(m, "default", RT_ARGS(c)); }

/* Stores, on loop programs as lowering hands them over: scalar and
 * vector, plain and predicated, to a parameter and to a local buffer. */
static void test_write_outside(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 20;
    tir_buffer *C = param1(ctx, "C", n);
    te_expr *one = te_float(ctx, 1.0);

    /* C[i] = 1 for i < 23 */
    te_expr *i = te_var(ctx, "i", TE_INT64);
    tir_func *f = tir_func_new(ctx, "default", 1, (tir_buffer *[]){C},
                               tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, n + 3), TIR_FOR_SERIAL,
                                       tir_store(ctx, C, i, one, NULL)));
    rt_module *m = build_tir(ctx, f);
    DLTensor *c = tu_nan_f32(1, &n);
    assert_int_equal(call1(m, c), -1);
    assert_string_equal(rt_module_errmsg(m), "rt_call: C[20] written outside C[20] in 'default'");
    for (int64_t x = 0; x < n; x++) assert_true(((float *)c->data)[x] == 1.0f); /* before it */
    rt_module_free(m);

    /* the same guarded by i < 20: in bounds */
    te_expr *g = te_var(ctx, "g", TE_INT64);
    f = tir_func_new(ctx, "default", 1, (tir_buffer *[]){C},
                     tir_for(ctx, g, te_int(ctx, 0), te_int(ctx, n + 3), TIR_FOR_SERIAL,
                             tir_store(ctx, C, g, one, te_lt(g, te_int(ctx, n)))));
    m = build_tir(ctx, f);
    tu_poison_f32(c);
    assert_int_equal(call1(m, c), 0);
    for (int64_t x = 0; x < n; x++) assert_true(((float *)c->data)[x] == 1.0f);
    rt_module_free(m);

    /* vectors of 8 at 8v for v < 3: lanes 20..23 of the last are outside,
     * the first of them reported; masked to lanes < 20 they are not */
    for (int masked = 0; masked < 2; masked++) {
        te_expr *v = te_var(ctx, "v", TE_INT64);
        te_expr *ramp = tir_ramp(te_mul(v, te_int(ctx, 8)), te_int(ctx, 1), 8);
        te_expr *mask = masked ? te_lt(ramp, tir_broadcast(te_int(ctx, n), 8)) : NULL;
        f = tir_func_new(ctx, "default", 1, (tir_buffer *[]){C},
                         tir_for(ctx, v, te_int(ctx, 0), te_int(ctx, 3), TIR_FOR_SERIAL,
                                 tir_store(ctx, C, ramp, tir_broadcast(one, 8), mask)));
        m = build_tir(ctx, f);
        tu_poison_f32(c);
        if (masked) {
            assert_int_equal(call1(m, c), 0);
            for (int64_t x = 0; x < n; x++) assert_true(((float *)c->data)[x] == 1.0f);
        } else {
            assert_int_equal(call1(m, c), -1);
            assert_string_equal(rt_module_errmsg(m),
                                "rt_call: C[20] written outside C[20] in 'default'");
        }
        rt_module_free(m);
    }

    /* a local buffer T[4]: T[j] = 1 for j < 5, then C[0] = T[0] */
    tir_buffer *T = tir_buffer_new(ctx, "T", TE_FLOAT32, 1, (int64_t[]){4}, TIR_SCOPE_LOCAL);
    te_expr *j = te_var(ctx, "j", TE_INT64), *z = te_int(ctx, 0);
    tir_stmt *body = tir_seq(ctx, 2, (tir_stmt *[]){
        tir_for(ctx, j, z, te_int(ctx, 5), TIR_FOR_SERIAL, tir_store(ctx, T, j, one, NULL)),
        tir_store(ctx, C, z, tir_load(ctx, T, z, NULL), NULL)});
    f = tir_func_new(ctx, "default", 1, (tir_buffer *[]){C}, tir_allocate(ctx, T, body));
    m = build_tir(ctx, f);
    assert_int_equal(call1(m, c), -1);
    assert_string_equal(rt_module_errmsg(m), "rt_call: T[4] written outside T[4] in 'default'");
    rt_module_free(m);
    rt_tensor_free(c);
    te_ctx_free(ctx);
}

/* In-bounds kernels with the checks on give the reference's results:
 * tiled, vectorized, parallel schedules and every operator's default
 * schedule (packing, padding, clamped and strided reads, local tiles). */
static void test_in_bounds_results(void **state) {
    (void)state;
    cg_build_options o;
    memset(&o, 0, sizeof o);
    o.bounds_check = true;
    te_ctx *ctx = te_ctx_new();

    sched_case mm = sh_matmul(ctx, 37, 45, 29);
    sch_schedule *s = sch_create(ctx, 1, &mm.out);
    te_expr *io, *jo, *ii, *ji, *ko, *ki;
    assert_int_equal(sch_tile(s, mm.out, mm.ax[0], mm.ax[1], 8, 16, &io, &jo, &ii, &ji), 0);
    assert_int_equal(sch_split(s, mm.out, mm.rax[0], 4, &ko, &ki), 0);
    assert_int_equal(sch_reorder(s, mm.out, 6, (te_expr *[]){io, jo, ko, ki, ii, ji}), 0);
    assert_int_equal(sch_vectorize(s, mm.out, ji), 0);
    assert_int_equal(sch_parallel(s, mm.out, io), 0);
    assert_int_equal(sh_run_opts(&mm, s, "llvm", &o), 0);

    sched_case cv = sh_conv2d(ctx, 1, 3, 11, 9, 4, 3, 3, 2, 1);
    s = sch_create(ctx, 1, &cv.out);
    assert_int_equal(sch_compute_at(s, cv.mid, cv.out, cv.ax[1]), 0);
    assert_int_equal(sh_run_opts(&cv, s, "llvm", &o), 0);

    sched_case ch = sh_chain(ctx, 13, 21);
    s = sch_create(ctx, 1, &ch.out);
    te_expr *xo, *xi;
    assert_int_equal(sch_split(s, ch.out, ch.ax[1], 8, &xo, &xi), 0);
    assert_int_equal(sch_vectorize(s, ch.out, xi), 0);
    assert_int_equal(sch_compute_at(s, ch.mid, ch.out, xo), 0);
    assert_int_equal(sh_run_opts(&ch, s, "llvm", &o), 0);
    te_ctx_free(ctx);

    uint64_t seed = tu_seed();
    int bad = 0;
    for (int i = 0; i < tu_ops_ncases; i++) {
        const ops_case *oc = &tu_ops_cases[i];
        te_ctx *c = te_ctx_new();
        ops_workload *w = ops_build(c, oc->op, oc->shape);
        sch_schedule *ds = w ? ops_default_schedule(w, "llvm") : NULL;
        rt_module *m = NULL;
        if (ds) {
            o.constant_args = w->constant_args;
            m = cg_build(ds, w->nargs, w->args, "llvm", &o);
        }
        int64_t r = m ? ops_check_module(w, m, NULL, seed + (uint64_t)i) : -1;
        if (r != 0) {
            fprintf(stderr, "%s(%s): %lld mismatches: %s\n", oc->op, oc->shape, (long long)r,
                    te_ctx_errmsg(c));
            bad++;
        }
        rt_module_free(m);
        te_ctx_free(c);
    }
    assert_int_equal(bad, 0);
}

/* The option belongs to the llvm target. */
static void test_other_targets(void **state) {
    (void)state;
    shifted k = shifted_read(64, 64, 1, 0);
    cg_build_options o;
    memset(&o, 0, sizeof o);
    o.bounds_check = true;
    assert_null(cg_build(k.s, TE_TENSORS(k.A, k.B), "c", &o));
    assert_string_equal(te_ctx_errmsg(k.ctx),
                        "cg_build: bounds_check is supported on the llvm target only, not 'c'");
    te_ctx_clear_error(k.ctx);
    assert_null(cg_build(k.s, TE_TENSORS(k.A, k.B), "cuda -arch=sm_90", &o));
    tu_assert_msg_has(te_ctx_errmsg(k.ctx), "bounds_check", "llvm target only",
                      "'cuda -arch=sm_90'");
    te_ctx_free(k.ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_outside),
        cmocka_unit_test(test_parallel_first_error),
        cmocka_unit_test(test_write_outside),
        cmocka_unit_test(test_in_bounds_results),
        cmocka_unit_test(test_other_targets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
