/*
 * tests/test_cuda_wmma.c — tensorize with the WMMA intrinsics: a
 * tensor-core matmul schedule lowered, generated as CUDA C and compiled
 * with NVRTC for sm_80 and sm_90 (PTX checked for the mma instructions),
 * run on the GPU against a double reference where there is one; and the
 * errors of the primitive and of its match.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_skip.h"
#include "testutil.h"

typedef struct {
    te_ctx *ctx;
    te_tensor *A, *B, *C;
    int64_t M, N, K;
} mm;

static mm make_mm(te_dtype t, int64_t M, int64_t N, int64_t K) {
    mm m = {te_ctx_new(), NULL, NULL, NULL, M, N, K};
    m.C = tu_matmul(m.ctx, t, M, N, K, &m.A, &m.B);
    assert_non_null(m.C);
    return m;
}

/* Options of the test schedule; the defaults make a valid one. */
typedef struct {
    int64_t wm, wn;          /* warp tile */
    int64_t mma_tile;        /* 16; another value breaks the extent rule */
    bool acc_scope_local;    /* accumulator in "local": breaks the scope rule */
    bool skip_store;         /* C not tensorized */
    bool double_buffer;      /* the shared tiles double-buffered (cp.async) */
    bool vec;                /* 16-byte copies into shared memory */
} opts;

/* 2x2 warps of wm x wn; k chunks of 16 in shared memory. */
static sch_schedule *schedule(mm *m, opts o) {
    sch_schedule *s = sch_create(m->ctx, 1, &m->C);
    te_tensor *C = m->C;
    int64_t kk = m->A->dtype.bits == 32 ? 8 : 16;
    te_tensor *CF = sch_cache_write(s, C, o.acc_scope_local ? "local" : "wmma.accumulator");
    te_tensor *AS = sch_cache_read(s, m->A, "shared", 1, &CF);
    te_tensor *BS = sch_cache_read(s, m->B, "shared", 1, &CF);
    te_tensor *AF = sch_cache_read(s, AS, "wmma.matrix_a", 1, &CF);
    te_tensor *BF = sch_cache_read(s, BS, "wmma.matrix_b", 1, &CF);
    assert_non_null(AF);
    assert_non_null(BF);
    te_expr *bi, *i1, *wi, *i2, *ti, *ii, *bj, *j1, *wj, *j2, *tj, *ji;
    int64_t t16 = o.mma_tile;
    assert_int_equal(sch_split(s, C, sch_axis(C, 0), 2 * o.wm, &bi, &i1), 0);
    assert_int_equal(sch_split(s, C, i1, o.wm, &wi, &i2), 0);
    assert_int_equal(sch_split(s, C, i2, 16, &ti, &ii), 0);
    assert_int_equal(sch_split(s, C, sch_axis(C, 1), 2 * o.wn, &bj, &j1), 0);
    assert_int_equal(sch_split(s, C, j1, o.wn, &wj, &j2), 0);
    assert_int_equal(sch_split(s, C, j2, 16, &tj, &ji), 0);
    assert_int_equal(sch_reorder(s, C, 8, (te_expr *[]){bi, bj, wi, wj, ti, tj, ii, ji}), 0);
    assert_int_equal(sch_bind(s, C, bi, "blockIdx.y") || sch_bind(s, C, bj, "blockIdx.x") ||
                         sch_bind(s, C, wi, "threadIdx.z") || sch_bind(s, C, wj, "threadIdx.y"),
                     0);
    if (!o.skip_store) assert_int_equal(sch_tensorize(s, C, ii, "wmma.store"), 0);
    te_expr *cti, *cii, *ctj, *cji, *ko, *k1, *kf, *kii;
    assert_int_equal(sch_compute_at(s, CF, C, wj), 0);
    assert_int_equal(sch_split(s, CF, sch_axis(CF, 0), t16, &cti, &cii), 0);
    assert_int_equal(sch_split(s, CF, sch_axis(CF, 1), 16, &ctj, &cji), 0);
    assert_int_equal(sch_split(s, CF, sch_reduce_axis(CF, 0), 16, &ko, &k1), 0);
    assert_int_equal(sch_split(s, CF, k1, kk, &kf, &kii), 0);
    assert_int_equal(sch_reorder(s, CF, 7, (te_expr *[]){ko, kf, cti, ctj, cii, cji, kii}), 0);
    assert_int_equal(sch_tensorize(s, CF, cii, "wmma.mma"), 0);
    te_expr *ao, *ai, *bo, *bi2;
    assert_int_equal(sch_compute_at(s, AF, CF, kf), 0);
    assert_int_equal(sch_split(s, AF, sch_axis(AF, 0), 16, &ao, &ai), 0);
    assert_int_equal(sch_tensorize(s, AF, ai, "wmma.load_a"), 0);
    assert_int_equal(sch_compute_at(s, BF, CF, kf), 0);
    assert_int_equal(sch_split(s, BF, sch_axis(BF, 1), 16, &bo, &bi2), 0);
    assert_int_equal(sch_reorder(s, BF, 3, (te_expr *[]){bo, sch_axis(BF, 0), bi2}), 0);
    assert_int_equal(sch_tensorize(s, BF, sch_axis(BF, 0), "wmma.load_b"), 0);
    int bytes = te_dtype_bytes(m->A->dtype);
    int64_t pad = 16 / bytes;
    te_tensor *sh[2] = {AS, BS};
    for (int q = 0; q < 2; q++) {
        te_tensor *T = sh[q];
        assert_int_equal(sch_compute_at(s, T, CF, ko), 0);
        assert_int_equal(sch_storage_align(s, T, sch_axis(T, 0), 16, pad), 0);
        te_expr *f, *o2, *t, *w, *x, *z, *y, *v;
        assert_int_equal(sch_fuse(s, T, 2, (te_expr *[]){sch_axis(T, 0), sch_axis(T, 1)}, &f), 0);
        if (o.vec)
            assert_int_equal(sch_split(s, T, f, 16 / bytes, &f, &v) || sch_vectorize(s, T, v), 0);
        if (o.double_buffer) assert_int_equal(sch_double_buffer(s, T), 0);
        assert_int_equal(sch_split(s, T, f, 128, &o2, &t), 0);
        assert_int_equal(sch_split(s, T, t, 32, &w, &x), 0);
        assert_int_equal(sch_split(s, T, w, 2, &z, &y), 0);
        assert_int_equal(sch_bind(s, T, z, "threadIdx.z") || sch_bind(s, T, y, "threadIdx.y") ||
                             sch_bind(s, T, x, "threadIdx.x"),
                         0);
    }
    return s;
}

static opts good(void) { return (opts){.wm = 32, .wn = 32, .mma_tile = 16}; }

/* Runs module m (C = A B) on the GPU: NaN-poisoned C, inputs uniform in
 * [-1, 1) rounded to the operand type, against a double reference with
 * |err| <= 2 u * sum_k |a_ik b_kj| + 1e-6: u = 2^-11 for tf32 (10
 * explicit mantissa bits; the product of two rounded operands is off by
 * at most 2u relatively) and exact for float16 / bfloat16 inputs, whose
 * products are exact in float32 (u = 0, then float32 accumulation bounds
 * it: K 2^-24 sum). Returns mismatches, -2 without a GPU. */
static int64_t run(mm *m, rt_module *mod) {
    if (!rt_cuda_available()) return -2;
    uint64_t rng = tu_seed();
    int64_t M = m->M, N = m->N, K = m->K;
    DLTensor *hA = tu_rand_f32(&rng, 2, (int64_t[]){M, K});
    DLTensor *hB = tu_rand_f32(&rng, 2, (int64_t[]){K, N});
    DLTensor *hC = tu_nan_f32(2, (int64_t[]){M, N});
    DLTensor *d[3] = {rt_cuda_tensor_alloc(hA->dtype, 2, hA->shape, 0),
                      rt_cuda_tensor_alloc(hB->dtype, 2, hB->shape, 0),
                      rt_cuda_tensor_alloc(hC->dtype, 2, hC->shape, 0)};
    assert_non_null(d[0]);
    assert_int_equal(rt_tensor_copy(d[0], hA) || rt_tensor_copy(d[1], hB) ||
                         rt_tensor_copy(d[2], hC),
                     0);
    if (rt_call(mod, "default", 3, d)) fail_msg("run: %s", rt_module_errmsg(mod));
    assert_int_equal(rt_tensor_copy(hC, d[2]), 0);
    const float *a = hA->data, *b = hB->data, *c = hC->data;
    double u = m->A->dtype.bits == 32 ? ldexp(1, -11) : K * ldexp(1, -24);
    int64_t bad = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double want = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                want += (double)a[i * K + k] * b[k * N + j];
                mag += fabs((double)a[i * K + k] * b[k * N + j]);
            }
            double got = c[i * N + j];
            if (!(fabs(got - want) <= 2 * u * mag + 1e-6)) {
                if (bad++ < 5)
                    fprintf(stderr, "C[%lld, %lld] = %g, want %g\n", (long long)i, (long long)j, got,
                            want);
            }
        }
    for (int q = 0; q < 3; q++) rt_tensor_free(d[q]);
    rt_tensor_free(hA);
    rt_tensor_free(hB);
    rt_tensor_free(hC);
    return bad;
}

static void build_and_check(mm *m, sch_schedule *s, const char *target) {
    te_tensor *args[3] = {m->A, m->B, m->C};
    rt_module *mod = cg_build(s, 3, args, target, NULL);
    if (!mod) fail_msg("build: %s", te_ctx_errmsg(m->ctx));
    const char *src = rt_module_get_text(mod, "source");
    const char *ptx = rt_module_get_text(mod, "ptx");
    if (getenv("LOOM_TEST_DUMP")) fputs(src, stderr);
    static const char *const needles[] = {"#include <mma.h>", "wmma::fill_fragment",
                                          "wmma::mma_sync", "wmma::store_matrix_sync",
                                          "__shared__", NULL};
    /* fragments load with WMMA's own call, or tf32 and bfloat16 ones from
     * shared memory with the .shared wmma.load */
    assert_true(strstr(src, "wmma::load_matrix_sync(") || strstr(src, "loom_wmma_ld_"));
    if (m->A->dtype.bits == 32) assert_non_null(strstr(ptx, ".shared.tf32"));
    for (int i = 0; needles[i]; i++) {
        if (!strstr(src, needles[i])) fprintf(stderr, "source lacks '%s':\n%s\n", needles[i], src);
        assert_non_null(strstr(src, needles[i]));
    }
    /* the tensor-core instructions made it to the PTX */
    assert_non_null(strstr(ptx, "mma.sync.aligned"));
    assert_non_null(strstr(ptx, "wmma.load.a.sync") ? ptx : strstr(ptx, "ld.shared"));
    int64_t bad = run(m, mod);
    rt_module_free(mod);
    if (bad == -2) tu_skip_part("the GPU run", rt_last_error());
    else assert_int_equal(bad, 0);
}

/* Double-buffered shared tiles: the copies of the next k chunk are
 * cp.async (16 bytes each) in flight while this chunk is computed. */
static void test_double_buffer(void **state) {
    (void)state;
    tu_require_nvrtc();
    mm m = make_mm(TE_FLOAT32, 128, 128, 64);
    opts o = good();
    o.double_buffer = o.vec = true;
    sch_schedule *s = schedule(&m, o);
    te_tensor *args[3] = {m.A, m.B, m.C};
    rt_module *mod = cg_build(s, 3, args, "cuda -arch=sm_80", NULL);
    if (!mod) fail_msg("build: %s", te_ctx_errmsg(m.ctx));
    const char *src = rt_module_get_text(mod, "source"), *ptx = rt_module_get_text(mod, "ptx");
    if (getenv("LOOM_TEST_DUMP")) fputs(src, stderr);
    /* a prologue copy, a copy in the loop, each committed; one wait */
    assert_int_equal(tu_count_substr(src, "loom_cp_async16(&A_shared["), 2);
    assert_int_equal(tu_count_substr(src, "loom_cp_async_commit();"), 2);
    assert_int_equal(tu_count_substr(src, "loom_cp_async_wait<1>();"), 1);
    assert_non_null(strstr(ptx, "cp.async.cg.shared.global"));
    assert_non_null(strstr(ptx, "cp.async.wait_group 1"));
    int64_t bad = run(&m, mod);
    rt_module_free(mod);
    if (bad == -2) tu_skip_part("the GPU run", rt_last_error());
    else assert_int_equal(bad, 0);
    te_ctx_free(m.ctx);
    /* a double-buffered stage must be copied at a loop's start */
    m = make_mm(TE_FLOAT32, 64, 64, 32);
    s = sch_create(m.ctx, 1, &m.C);
    te_tensor *AS = sch_cache_read(s, m.A, "shared", 1, &m.C);
    assert_int_equal(sch_double_buffer(s, AS), 0);
    te_tensor *args2[3] = {m.A, m.B, m.C};
    assert_null(cg_build(s, 3, args2, "llvm", NULL));
    assert_non_null(strstr(te_ctx_errmsg(m.ctx), "double_buffer: stage 'A.shared' is computed at the "
                                                 "root; it must be computed at a serial loop"));
    te_ctx_free(m.ctx);
    /* at a loop, but not at its start: another stage's copy comes first */
    m = make_mm(TE_FLOAT32, 64, 64, 32);
    s = sch_create(m.ctx, 1, &m.C);
    te_tensor *BL = sch_cache_read(s, m.B, "local", 1, &m.C);
    te_tensor *AL = sch_cache_read(s, m.A, "local", 1, &m.C);
    te_expr *ko, *ki;
    assert_int_equal(sch_split(s, m.C, sch_reduce_axis(m.C, 0), 8, &ko, &ki), 0);
    assert_int_equal(sch_compute_at(s, BL, m.C, ko) || sch_compute_at(s, AL, m.C, ko), 0);
    assert_int_equal(sch_double_buffer(s, BL), 0);
    te_tensor *args3[3] = {m.A, m.B, m.C};
    assert_null(cg_build(s, 3, args3, "llvm", NULL));
    assert_non_null(strstr(te_ctx_errmsg(m.ctx), "double_buffer: the copy into 'B.local' is not at "
                                                 "the start of the body of the loop"));
    te_ctx_free(m.ctx);
    /* the pipelined order computes the same on the CPU (synchronous copies) */
    m = make_mm(TE_FLOAT32, 48, 40, 56);
    s = sch_create(m.ctx, 1, &m.C);
    AL = sch_cache_read(s, m.A, "local", 1, &m.C);
    assert_int_equal(sch_split(s, m.C, sch_reduce_axis(m.C, 0), 8, &ko, &ki), 0);
    assert_int_equal(sch_compute_at(s, AL, m.C, ko) || sch_double_buffer(s, AL), 0);
    te_tensor *args4[3] = {m.A, m.B, m.C};
    rt_module *cpu = cg_build(s, 3, args4, "llvm", NULL);
    if (!cpu) fail_msg("build: %s", te_ctx_errmsg(m.ctx));
    uint64_t rng = tu_seed();
    DLTensor *h[3] = {tu_rand_f32(&rng, 2, (int64_t[]){48, 56}), tu_rand_f32(&rng, 2, (int64_t[]){56, 40}),
                      tu_nan_f32(2, (int64_t[]){48, 40})};
    assert_int_equal(rt_call(cpu, "default", 3, h), 0);
    double want[48 * 40];
    const float *a = h[0]->data, *b = h[1]->data;
    for (int i = 0; i < 48; i++)
        for (int j = 0; j < 40; j++) {
            want[i * 40 + j] = 0;
            for (int k = 0; k < 56; k++) want[i * 40 + j] += (double)a[i * 56 + k] * b[k * 40 + j];
        }
    /* float32 sums of 56 products of magnitude < 1: |err| < 56 * 2^-24 * 56 */
    assert_int_equal(tu_compare_f32("double_buffer", h[2]->data, want, 48 * 40, 0, 2e-4), 0);
    for (int q = 0; q < 3; q++) rt_tensor_free(h[q]);
    rt_module_free(cpu);
    assert_int_equal(sch_double_buffer(s, m.C), -1);
    assert_non_null(strstr(te_ctx_errmsg(m.ctx), "double_buffer: stage 'C' is an output"));
    te_ctx_free(m.ctx);
}

static void test_tf32_matmul(void **state) {
    (void)state;
    tu_require_nvrtc();
    mm m = make_mm(TE_FLOAT32, 128, 192, 96);
    build_and_check(&m, schedule(&m, good()), "cuda -arch=sm_80");
    te_ctx_free(m.ctx);
    m = make_mm(TE_FLOAT32, 64, 64, 32);
    build_and_check(&m, schedule(&m, good()), "cuda -arch=sm_90");
    te_ctx_free(m.ctx);
}

/* The lowered program: one fill per accumulator tile before the k loop,
 * the mma inside it, no scalar loop left over a fragment. */
static void test_lowered_form(void **state) {
    (void)state;
    mm m = make_mm(TE_FLOAT32, 64, 64, 32);
    sch_schedule *s = schedule(&m, good());
    te_tensor *args[3] = {m.A, m.B, m.C};
    const char *text = sch_lower_text(s, 3, args);
    if (!text) fail_msg("lower: %s", te_ctx_errmsg(m.ctx));
    if (getenv("LOOM_TEST_DUMP")) fputs(text, stderr);
    assert_non_null(strstr(text, "wmma.fill(&C.wmma.accumulator["));
    assert_non_null(strstr(text, "wmma.mma(&C.wmma.accumulator["));
    assert_non_null(strstr(text, "wmma.load_a(&"));
    assert_non_null(strstr(text, " ld 20)")); /* the shared row padded to 20 */
    assert_non_null(strstr(text, "wmma.store(&C["));
    te_ctx_free(m.ctx);
}

/* Each refusal: the message names the stage, the axis, the intrinsic and
 * the rule. */
static void expect_build_error(mm *m, sch_schedule *s, const char *target, const char *const *parts) {
    te_tensor *args[3] = {m->A, m->B, m->C};
    rt_module *mod = s ? cg_build(s, 3, args, target, NULL) : NULL;
    assert_null(mod);
    const char *msg = te_ctx_errmsg(m->ctx);
    for (int i = 0; parts[i]; i++) {
        if (!strstr(msg, parts[i])) fprintf(stderr, "message lacks '%s': %s\n", parts[i], msg);
        assert_non_null(strstr(msg, parts[i]));
    }
}

static void test_errors(void **state) {
    (void)state;
    /* an unknown intrinsic, at the step */
    mm m = make_mm(TE_FLOAT32, 64, 64, 32);
    sch_schedule *s = sch_create(m.ctx, 1, &m.C);
    assert_int_equal(sch_tensorize(s, m.C, sch_axis(m.C, 0), "wmma.fma"), -1);
    assert_non_null(strstr(te_ctx_errmsg(m.ctx), "tensorize: unknown intrinsic 'wmma.fma' for axis "
                                                 "'i' of stage 'C' (known: wmma.mma"));
    /* twice on one stage */
    assert_int_equal(sch_tensorize(s, m.C, sch_axis(m.C, 1), "wmma.store"), 0);
    assert_int_equal(sch_tensorize(s, m.C, sch_axis(m.C, 0), "wmma.store"), -1);
    assert_non_null(strstr(te_ctx_errmsg(m.ctx), "already tensorized at axis 'j'"));
    te_ctx_free(m.ctx);

    /* the wrong tile extent */
    m = make_mm(TE_FLOAT32, 64, 64, 32);
    opts o = good();
    o.mma_tile = 8;
    expect_build_error(&m, schedule(&m, o), "cuda",
                       (const char *[]){"tensorize: stage 'C.wmma.accumulator' at axis",
                                        "(wmma.mma)", "has extent 8", "needs 16", NULL});
    te_ctx_free(m.ctx);

    /* the accumulator in the wrong scope */
    m = make_mm(TE_FLOAT32, 64, 64, 32);
    o = good();
    o.acc_scope_local = true;
    expect_build_error(&m, schedule(&m, o), "cuda",
                       (const char *[]){"tensorize: stage", "is in scope local",
                                        "must be in scope wmma.accumulator", NULL});
    te_ctx_free(m.ctx);

    /* a computation that is not the intrinsic's: a max reduction */
    m.ctx = te_ctx_new();
    te_tensor *A = te_placeholder(m.ctx, "A", TE_FLOAT32, TE_SHAPE(16, 16));
    te_expr *i = te_axis(m.ctx, "i", 16), *j = te_axis(m.ctx, "j", 16);
    te_tensor *C = te_compute(m.ctx, "C", TE_AXES(i, j), te_read(A, j, i));
    s = sch_create(m.ctx, 1, &C);
    assert_int_equal(sch_tensorize(s, C, sch_axis(C, 0), "wmma.store"), 0);
    te_tensor *args[2] = {A, C};
    assert_null(cg_build(s, 2, args, "cuda", NULL));
    assert_non_null(strstr(te_ctx_errmsg(m.ctx), "tensorize: stage 'C' at axis 'i' (wmma.store)"));
    te_ctx_free(m.ctx);

    /* a store of another type than float32/float16/bfloat16 is refused */
    m.ctx = te_ctx_new();
    A = te_placeholder(m.ctx, "A", TE_FLOAT32, TE_SHAPE(16, 16));
    i = te_axis(m.ctx, "i", 16), j = te_axis(m.ctx, "j", 16);
    C = te_compute(m.ctx, "C", TE_AXES(i, j), te_cast(TE_FLOAT64, te_read(A, i, j)));
    s = sch_create(m.ctx, 1, &C);
    assert_int_equal(sch_tensorize(s, C, sch_axis(C, 0), "wmma.store"), 0);
    args[0] = A, args[1] = C;
    assert_null(cg_build(s, 2, args, "cuda", NULL));
    assert_non_null(strstr(te_ctx_errmsg(m.ctx), "the output is float64; WMMA stores float32, or "
                                                 "float16 or bfloat16 rounded from the float32 sums"));
    te_ctx_free(m.ctx);

    /* the CPU has no tensor cores */
    m = make_mm(TE_FLOAT32, 64, 64, 32);
    s = sch_create(m.ctx, 1, &m.C);
    te_tensor *CF = sch_cache_write(s, m.C, "wmma.accumulator");
    te_expr *io, *ii, *jo, *ji;
    assert_int_equal(sch_tile(s, m.C, sch_axis(m.C, 0), sch_axis(m.C, 1), 16, 16, &io, &jo, &ii,
                              &ji),
                     0);
    assert_int_equal(sch_tensorize(s, m.C, ii, "wmma.store") || sch_compute_at(s, CF, m.C, jo), 0);
    expect_build_error(&m, s, "llvm",
                       (const char *[]){"tensor intrinsic wmma.store", "runs only on the GPU",
                                        NULL});
    /* a fragment written element by element (its stage not tensorized) */
    assert_int_equal(sch_bind(s, m.C, io, "blockIdx.y") || sch_bind(s, m.C, jo, "blockIdx.x"), 0);
    expect_build_error(&m, s, "cuda",
                       (const char *[]){"fragment buffer 'C.wmma.accumulator'",
                                        "element by element", NULL});
    te_ctx_free(m.ctx);
}

/* A tensorize step survives the step log (JSON) and replays. */
static void test_step_log(void **state) {
    (void)state;
    mm m = make_mm(TE_FLOAT32, 64, 64, 32);
    sch_schedule *s = schedule(&m, good());
    char *json = tdb_steps_to_json(sch_num_steps(s), sch_get_step(s, 0));
    assert_non_null(json);
    assert_non_null(strstr(json, "\"kind\":\"tensorize\""));
    assert_non_null(strstr(json, "\"intrin\":\"wmma.mma\""));
    free(json);
    te_ctx_free(m.ctx);
}

/* matmul tf32=1: the ops default CUDA schedule is the tensor-core GEMM
 * (ops/sched_cuda_wmma.c) at several tile shapes; shapes it cannot take
 * are refused with the rule. */
static void test_ops_tf32(void **state) {
    (void)state;
    tu_require_nvrtc();
    static const char *const shapes[] = {"M=256,N=128,K=64,tf32=1", "M=48,N=80,K=32,tf32=1",
                                         "M=128,N=256,K=96,tf32=1"};
    for (int i = 0; i < 3; i++) {
        te_ctx *ctx = te_ctx_new();
        ops_workload *w = ops_build(ctx, "matmul", shapes[i]);
        assert_non_null(w);
        /* sm_80: WMMA's (sm_90 runs tf32 on wgmma: tests/test_cuda_wgmma.c) */
        sch_schedule *s = ops_default_schedule(w, "cuda -arch=sm_80");
        if (!s) fail_msg("%s: %s", w->key, te_ctx_errmsg(ctx));
        mm m = {ctx, w->args[0], w->args[1], w->args[2], w->args[0]->shape[0],
                w->args[1]->shape[1], w->args[0]->shape[1]};
        build_and_check(&m, s, "cuda -arch=sm_80");
        te_ctx_free(ctx);
    }
    te_ctx *ctx = te_ctx_new();
    /* checked at tf32's tolerance: 2^-9 K more than float32's */
    ops_workload *w = ops_build(ctx, "matmul", "M=32,N=32,K=96,tf32=1");
    ops_workload *f = ops_build(ctx, "matmul", "M=32,N=32,K=96");
    double rtol, atol, atol32;
    ops_tolerance(w, &rtol, &atol);
    ops_tolerance(f, &rtol, &atol32);
    assert_true(fabs(atol - atol32 - 0x1p-9 * 96) < 1e-12);
    w = ops_build(ctx, "matmul", "M=100,N=64,K=64,tf32=1");
    assert_non_null(w);
    assert_null(ops_default_schedule(w, "cuda"));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "matmul tf32=1: no tensor-core schedule takes M=100 "
                                          "N=64 K=64 on sm_",
                      "(WMMA: M, N and K multiples of 16, no transposes;");
    te_ctx_free(ctx);
}

/* matmul dtype=float16|bfloat16: the default CUDA schedule is the
 * tensor-core GEMM into a float32 buffer, then the cast; checked against
 * the operator's reference at ops_tolerance (products of 16-bit inputs
 * are exact in float32, so only the sums' order and the final rounding
 * differ). */
static void test_ops_half(void **state) {
    (void)state;
    tu_require_nvrtc();
    static const char *const shapes[] = {"M=256,N=128,K=96,dtype=float16",
                                         "M=64,N=48,K=32,dtype=bfloat16",
                                         "M=128,N=256,K=256,dtype=float16"};
    for (int i = 0; i < 3; i++) {
        te_ctx *ctx = te_ctx_new();
        ops_workload *w = ops_build(ctx, "matmul", shapes[i]);
        if (!w) fail_msg("%s: %s", shapes[i], te_ctx_errmsg(ctx));
        sch_schedule *s = ops_default_schedule(w, "cuda -arch=sm_80");
        if (!s) fail_msg("%s: %s", w->key, te_ctx_errmsg(ctx));
        rt_module *m = cg_build(s, w->nargs, w->args, "cuda -arch=sm_80", NULL);
        if (!m) fail_msg("%s: %s", w->key, te_ctx_errmsg(ctx));
        const char *src = rt_module_get_text(m, "source");
        if (getenv("LOOM_TEST_DUMP")) fputs(src, stderr);
        assert_non_null(strstr(src, "wmma::mma_sync"));
        assert_non_null(strstr(src, i == 1 ? "__nv_bfloat16, nvcuda::wmma::row_major>"
                                           : "__half, nvcuda::wmma::row_major>"));
        /* one kernel: the rounding is in the accumulator store */
        assert_int_equal(tu_count_substr(src, "__global__"), 1);
        if (i == 1) assert_non_null(strstr(src, "loom_wmma_stage["));
        if (i != 1) assert_non_null(strstr(src, "loom_cp_async16(")); /* K > one chunk */
        assert_non_null(strstr(rt_module_get_text(m, "ptx"), "mma.sync.aligned"));
        tu_check_on_gpu(w, m);
        rt_module_free(m);
        te_ctx_free(ctx);
    }
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", "M=64,N=64,K=64,tf32=1,dtype=float16");
    assert_non_null(w);
    assert_null(ops_default_schedule(w, "cuda"));
    assert_non_null(strstr(te_ctx_errmsg(ctx), "matmul tf32=1 applies to float32 matmuls, not "
                                               "float16"));
    te_ctx_free(ctx);
}

/* A pipeline of 3 and 4 buffers (sch_multi_buffer, ops_tc_config.stages):
 * the CPU result of the pipelined order (synchronous copies), including a
 * loop shorter than the prologue; the tensor-core GEMM's form (dynamic
 * shared memory above 48 KiB, buffers - 1 groups in flight) and its GPU
 * result at the operator's tolerance; the step log; the refusals. */
static void cpu_pipeline(int buffers, int64_t K, int64_t chunk) {
    mm m = make_mm(TE_FLOAT32, 24, 40, K);
    sch_schedule *s = sch_create(m.ctx, 1, &m.C);
    te_tensor *AL = sch_cache_read(s, m.A, "local", 1, &m.C);
    te_expr *ko, *ki;
    assert_int_equal(sch_split(s, m.C, sch_reduce_axis(m.C, 0), chunk, &ko, &ki), 0);
    assert_int_equal(sch_compute_at(s, AL, m.C, ko) || sch_multi_buffer(s, AL, buffers), 0);
    te_tensor *args[3] = {m.A, m.B, m.C};
    rt_module *cpu = cg_build(s, 3, args, "llvm", NULL);
    if (!cpu) fail_msg("build: %s", te_ctx_errmsg(m.ctx));
    uint64_t rng = tu_seed();
    DLTensor *h[3] = {tu_rand_f32(&rng, 2, (int64_t[]){24, K}),
                      tu_rand_f32(&rng, 2, (int64_t[]){K, 40}), tu_nan_f32(2, (int64_t[]){24, 40})};
    assert_int_equal(rt_call(cpu, "default", 3, h), 0);
    double *want = malloc(sizeof(double) * 24 * 40);
    const float *a = h[0]->data, *b = h[1]->data;
    for (int i = 0; i < 24; i++)
        for (int j = 0; j < 40; j++) {
            want[i * 40 + j] = 0;
            for (int k = 0; k < K; k++) want[i * 40 + j] += (double)a[i * K + k] * b[k * 40 + j];
        }
    /* float32 sums of K products of magnitude < 1: |err| < K * 2^-24 * K */
    assert_int_equal(tu_compare_f32("multi_buffer", h[2]->data, want, 24 * 40, 0, 2e-4), 0);
    free(want);
    for (int q = 0; q < 3; q++) rt_tensor_free(h[q]);
    rt_module_free(cpu);
    te_ctx_free(m.ctx);
}

static void test_multi_stage(void **state) {
    (void)state;
    tu_require_nvrtc();
    cpu_pipeline(3, 56, 8);  /* 7 chunks */
    cpu_pipeline(4, 56, 8);
    cpu_pipeline(4, 16, 8);  /* 2 chunks: the prologue's third copy is past the end */
    cpu_pipeline(3, 8, 8);   /* one chunk */
    static const struct {
        const char *shape;
        ops_tc_config c;
    } cases[] = {
        {"M=256,N=256,K=320,dtype=float16", {.bm = 128, .bn = 128, .wm = 64, .wn = 64, .kc = 32, .stages = 3}},
        {"M=256,N=128,K=192,dtype=float16", {.bm = 128, .bn = 128, .wm = 64, .wn = 64, .kc = 64, .stages = 4}},
        {"M=128,N=256,K=64,dtype=bfloat16", {.bm = 128, .bn = 256, .wm = 64, .wn = 64, .kc = 16, .stages = 4, .unroll_k = true}},
        {"M=128,N=128,K=96,tf32=1", {.bm = 128, .bn = 128, .wm = 64, .wn = 64, .kc = 32, .stages = 3}},
        /* the 16-bit defaults where the target has 107 KiB or more */
        {"M=256,N=128,K=384,dtype=bfloat16", {.bm = 128, .bn = 128, .wm = 64, .wn = 64, .kc = 64, .stages = 3, .unroll_k = true}},
        {"M=128,N=256,K=384,dtype=float16", {.bm = 128, .bn = 128, .wm = 64, .wn = 64, .kc = 64, .stages = 3, .unroll_k = true}},
    };
    for (int i = 0; i < 6; i++) {
        te_ctx *ctx = te_ctx_new();
        ops_workload *w = ops_build(ctx, "matmul", cases[i].shape);
        if (!w) fail_msg("%s: %s", cases[i].shape, te_ctx_errmsg(ctx));
        sch_schedule *s = sch_create(ctx, 1, &w->args[2]);
        if (ops_schedule_tc_gemm(s, w->args[2], w->args[0], w->args[1], &cases[i].c))
            fail_msg("%s: %s", w->key, te_ctx_errmsg(ctx));
        /* the step log keeps the depth */
        char *json = tdb_schedule_to_json(s);
        assert_non_null(strstr(json, cases[i].c.stages == 3 ? "\"buffers\":3" : "\"buffers\":4"));
        free(json);
        rt_module *m = cg_build(s, w->nargs, w->args, "cuda -arch=sm_90", NULL);
        if (!m) fail_msg("%s: %s", w->key, te_ctx_errmsg(ctx));
        const char *src = rt_module_get_text(m, "source"), *ptx = rt_module_get_text(m, "ptx");
        if (getenv("LOOM_TEST_DUMP")) fputs(src, stderr);
        char wait[64];
        snprintf(wait, sizeof wait, "cp.async.wait_group %d", cases[i].c.stages - 1);
        assert_non_null(strstr(ptx, wait));
        assert_non_null(strstr(ptx, "mma.sync.aligned"));
        /* bfloat16 and tf32 fragments load from shared memory as such (the
         * generic form cannot use ldmatrix) */
        if (i == 2 || i == 4)
            assert_non_null(strstr(ptx, "wmma.load.b.sync.aligned.row.m16n16k16.shared.bf16"));
        if (i == 3) assert_non_null(strstr(ptx, "wmma.load.a.sync.aligned.row.m16n16k8.shared.tf32"));
        /* 3 x (128 x 40 + 32 x 136) x 2 bytes and more: over 48 KiB */
        if (i != 2 && i != 3)
            assert_non_null(strstr(src, "extern __shared__ __align__(128) unsigned char loom_smem[]"));
        tu_check_on_gpu(w, m);
        rt_module_free(m);
        te_ctx_free(ctx);
    }
    /* the depth's bounds */
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", "M=128,N=128,K=128,dtype=float16");
    sch_schedule *s = sch_create(ctx, 1, &w->args[2]);
    assert_int_equal(ops_schedule_tc_gemm(s, w->args[2], w->args[0], w->args[1],
                                          &(ops_tc_config){.stages = 5}),
                     -1);
    assert_non_null(strstr(te_ctx_errmsg(ctx), "tc_gemm: 5 pipeline stages; a pipeline has 1 to 4"));
    mm m = make_mm(TE_FLOAT32, 64, 64, 32);
    s = sch_create(m.ctx, 1, &m.C);
    te_tensor *AS = sch_cache_read(s, m.A, "shared", 1, &m.C);
    assert_int_equal(sch_multi_buffer(s, AS, 9), -1);
    assert_non_null(strstr(te_ctx_errmsg(m.ctx), "double_buffer: stage 'A.shared' asks for 9 "
                                                 "buffers; a pipeline cycles through 2 to 8"));
    assert_int_equal(sch_multi_buffer(s, AS, 1), -1);
    te_ctx_free(m.ctx);
    /* two copies at one loop are one pipeline: one depth */
    m = make_mm(TE_FLOAT32, 24, 40, 32);
    s = sch_create(m.ctx, 1, &m.C);
    te_tensor *AL = sch_cache_read(s, m.A, "local", 1, &m.C), *BL = sch_cache_read(s, m.B, "local", 1, &m.C);
    te_expr *ko, *ki;
    assert_int_equal(sch_split(s, m.C, sch_reduce_axis(m.C, 0), 8, &ko, &ki), 0);
    assert_int_equal(sch_compute_at(s, AL, m.C, ko) || sch_compute_at(s, BL, m.C, ko) ||
                         sch_multi_buffer(s, AL, 3) || sch_multi_buffer(s, BL, 2),
                     0);
    assert_null(cg_build(s, 3, (te_tensor *[]){m.A, m.B, m.C}, "llvm", NULL));
    if (!strstr(te_ctx_errmsg(m.ctx), "buffers; copies of one loop form one pipeline"))
        fail_msg("got '%s'", te_ctx_errmsg(m.ctx));
    te_ctx_free(m.ctx);
    /* a step log asking for one buffer */
    int n = 0;
    sch_step *steps = NULL;
    assert_int_equal(tdb_steps_from_json(ctx, "[{\"kind\":\"double_buffer\",\"stage\":0,\"buffers\":1}]",
                                         &n, &steps),
                     -1);
    assert_non_null(strstr(te_ctx_errmsg(ctx), "buffers"));
    /* without a GPU, the architecture's opt-in shared memory is the limit:
     * 4 x 35840 bytes fit sm_90's 227 KiB, not sm_86's 99 KiB */
    if (!rt_cuda_available()) {
        s = sch_create(ctx, 1, &w->args[2]);
        assert_int_equal(ops_schedule_tc_gemm(s, w->args[2], w->args[0], w->args[1],
                                              &(ops_tc_config){.bm = 128, .bn = 128, .wm = 64,
                                                               .wn = 64, .kc = 64, .stages = 4}),
                         0);
        assert_null(cg_build(s, w->nargs, w->args, "cuda -arch=sm_86", NULL));
        assert_non_null(strstr(te_ctx_errmsg(ctx), "the limit per block is 101376"));
    }
    te_ctx_free(ctx);
}

/* An operand computed from a placeholder (an implicit GEMM's reshaped
 * weights or im2col gather) is computed in the copy to shared memory:
 * A2[i, k] = A3[i, k / 16, k % 16] never becomes a buffer, and the result
 * matches the double reference on the GPU. */
static void test_computed_operand(void **state) {
    (void)state;
    tu_require_nvrtc();
    te_ctx *ctx = te_ctx_new();
    te_tensor *A3 = te_placeholder(ctx, "A3", TE_FLOAT16, TE_SHAPE(64, 4, 16));
    te_tensor *B = te_placeholder(ctx, "B", TE_FLOAT16, TE_SHAPE(64, 64));
    te_expr *i = te_axis(ctx, "i", 64), *k = te_axis(ctx, "k", 64);
    te_tensor *A2 = te_compute(ctx, "A2", TE_AXES(i, k),
                               te_read(A3, i, te_floordiv(k, te_int(ctx, 16)),
                                       te_floormod(k, te_int(ctx, 16))));
    te_expr *i2 = te_axis(ctx, "i", 64), *j = te_axis(ctx, "j", 64), *r = te_reduce_axis(ctx, "r", 64);
    te_tensor *C = te_compute(ctx, "C", TE_AXES(i2, j),
                              te_sum(te_mul(te_cast(TE_FLOAT32, te_read(A2, i2, r)),
                                            te_cast(TE_FLOAT32, te_read(B, r, j))),
                                     r));
    sch_schedule *s = sch_create(ctx, 1, &C);
    ops_tc_config c = {.bm = 32, .bn = 32, .wm = 16, .wn = 16, .kc = 32, .stages = 3};
    if (ops_schedule_tc_gemm(s, C, A2, B, &c)) fail_msg("%s", te_ctx_errmsg(ctx));
    te_tensor *args[3] = {A3, B, C};
    rt_module *m = cg_build(s, 3, args, "cuda -arch=sm_80", NULL);
    if (!m) fail_msg("build: %s", te_ctx_errmsg(ctx));
    const char *src = rt_module_get_text(m, "source");
    assert_non_null(strstr(src, "A2_shared"));
    assert_null(strstr(src, "A2["));
    if (!rt_cuda_available()) {
        tu_skip_part("the GPU run", rt_last_error());
    } else {
        DLDataType h = {kDLFloat, 16, 1};
        DLTensor *ha = rt_tensor_alloc(h, 3, A3->shape), *hb = rt_tensor_alloc(h, 2, B->shape);
        DLTensor *hc = tu_nan_f32(2, (int64_t[]){64, 64});
        uint64_t rng = tu_seed();
        DLTensor *ra = tu_rand_f32(&rng, 3, A3->shape), *rb = tu_rand_f32(&rng, 2, B->shape);
        for (int64_t e = 0; e < 64 * 64; e++) {
            rt_tensor_set(ha, e, ((float *)ra->data)[e]);
            rt_tensor_set(hb, e, ((float *)rb->data)[e]);
        }
        DLTensor *d[3] = {rt_cuda_tensor_alloc(h, 3, A3->shape, 0), rt_cuda_tensor_alloc(h, 2, B->shape, 0),
                          rt_cuda_tensor_alloc(hc->dtype, 2, hc->shape, 0)};
        assert_int_equal(rt_tensor_copy(d[0], ha) || rt_tensor_copy(d[1], hb) || rt_tensor_copy(d[2], hc), 0);
        if (rt_call(m, "default", 3, d)) fail_msg("run: %s", rt_module_errmsg(m));
        assert_int_equal(rt_tensor_copy(hc, d[2]), 0);
        double want[64 * 64];
        for (int a = 0; a < 64; a++)
            for (int b = 0; b < 64; b++) {
                want[a * 64 + b] = 0;
                for (int q = 0; q < 64; q++)
                    want[a * 64 + b] += rt_tensor_get(ha, a * 64 + q) * rt_tensor_get(hb, q * 64 + b);
            }
        /* exact products of float16 inputs, float32 sums of 64 terms < 1 */
        assert_int_equal(tu_compare_f32("computed operand", hc->data, want, 64 * 64, 0, 1e-4), 0);
        DLTensor *all[] = {ha, hb, hc, ra, rb, d[0], d[1], d[2]};
        for (int q = 0; q < 8; q++) rt_tensor_free(all[q]);
    }
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* The WMMA 16-bit and tf32 defaults follow the target's shared memory: three
 * stages of 64 (128 bytes a row) where sm_90's 227 KiB or sm_80's 163 KiB
 * hold them, of 32 on sm_86 (99 KiB), two in 48 KiB where nothing more is
 * known, and on grids of 64 x 64 blocks; the CUDA-core float32 GEMM
 * takes 128 x 128 tiles, chunks of 16,
 * two stages on a grid of 132 blocks or more. Compiled, not run (the
 * configurations run in test_multi_stage and test_cuda_gemm). */
static void test_default_depth(void **state) {
    (void)state;
    tu_require_nvrtc();
    static const struct {
        const char *shape, *target, *wait, *smem;
    } cases[] = {
        {"M=4096,N=4096,K=4096,dtype=float16", "cuda -arch=sm_80", "cp.async.wait_group 2", "107520 bytes"},
        /* sm_90's 16-bit default is wgmma's: 128 x 256 tiles, three
         * stages of 64, the copies one chunk ahead while one chunk's wgmma
         * is in flight (tests/test_cuda_wgmma.c), 1 KiB more to align them */
        {"M=4096,N=4096,K=4096,dtype=float16", "cuda -arch=sm_90", "wgmma.wait_group.sync.aligned 1", "148480 bytes"},
        {"M=4096,N=4096,K=4096,dtype=bfloat16", "cuda -arch=sm_80", "cp.async.wait_group 2", NULL},
        {"M=4096,N=4096,K=4096,dtype=float16", "cuda -arch=sm_86", "cp.async.wait_group 2", "56832 bytes"},
        {"M=4096,N=4096,K=4096,tf32=1", "cuda -arch=sm_80", "cp.async.wait_group 2", "105984 bytes"},
        /* sm_90's tf32 default is wgmma's too: chunks of 32 (128 bytes) */
        {"M=4096,N=4096,K=4096,tf32=1", "cuda -arch=sm_90", "wgmma.wait_group.sync.aligned 1", "148480 bytes"},
        {"M=4096,N=4096,K=4096", "cuda -arch=sm_90", "cp.async.wait_group 1", NULL},
        /* a grid of 64 x 64 blocks keeps two stages (three were slower) */
        {"M=1024,N=1024,K=1024,tf32=1", "cuda -arch=sm_80", "cp.async.wait_group 1", NULL},
    };
    for (int i = 0; i < 8; i++) {
        te_ctx *ctx = te_ctx_new();
        ops_workload *w = ops_build(ctx, "matmul", cases[i].shape);
        sch_schedule *s = ops_default_schedule(w, cases[i].target);
        if (!s) fail_msg("%s: %s", cases[i].shape, te_ctx_errmsg(ctx));
        rt_module *m = cg_build(s, w->nargs, w->args, cases[i].target, NULL);
        if (!m) fail_msg("%s: %s", cases[i].shape, te_ctx_errmsg(ctx));
        const char *src = rt_module_get_text(m, "source"), *ptx = rt_module_get_text(m, "ptx");
        if (!strstr(ptx, cases[i].wait)) fail_msg("%s on %s: no '%s'", cases[i].shape, cases[i].target, cases[i].wait);
        if (cases[i].smem && !strstr(src, cases[i].smem))
            fail_msg("%s on %s: not %s of dynamic shared memory", cases[i].shape, cases[i].target, cases[i].smem);
        rt_module_free(m);
        te_ctx_free(ctx);
    }
}

/* ops_schedule_tc_gemm refuses what it cannot tile, with the rule. */
static void expect_tc_error(te_dtype t, int64_t M, int64_t N, int64_t K, ops_tc_config c,
                            const char *msg) {
    mm m = make_mm(t, M, N, K);
    sch_schedule *s = sch_create(m.ctx, 1, &m.C);
    assert_int_equal(ops_schedule_tc_gemm(s, m.C, m.A, m.B, &c), -1);
    if (!strstr(te_ctx_errmsg(m.ctx), msg)) fprintf(stderr, "got: %s\n", te_ctx_errmsg(m.ctx));
    assert_non_null(strstr(te_ctx_errmsg(m.ctx), msg));
    te_ctx_free(m.ctx);
}

/* C (a store from the accumulator) tiled 16x16 with blocks bound, then
 * tensorized at axis `at` (0: the outer i loop, 2: the inner one). */
static void store_error(int64_t M, int at, const char *msg) {
    mm m = make_mm(TE_FLOAT32, M, 64, 32);
    sch_schedule *s = sch_create(m.ctx, 1, &m.C);
    te_tensor *CF = sch_cache_write(s, m.C, "wmma.accumulator");
    te_expr *io, *ii, *jo, *ji;
    assert_int_equal(sch_tile(s, m.C, sch_axis(m.C, 0), sch_axis(m.C, 1), 16, 16, &io, &jo, &ii, &ji) ||
                         sch_bind(s, m.C, io, "blockIdx.y") || sch_bind(s, m.C, jo, "blockIdx.x") ||
                         sch_tensorize(s, m.C, at ? ii : io, "wmma.store") ||
                         sch_compute_at(s, CF, m.C, jo),
                     0);
    te_tensor *args[3] = {m.A, m.B, m.C};
    assert_null(cg_build(s, 3, args, "cuda", NULL));
    if (!strstr(te_ctx_errmsg(m.ctx), msg)) fprintf(stderr, "got: %s\n", te_ctx_errmsg(m.ctx));
    assert_non_null(strstr(te_ctx_errmsg(m.ctx), msg));
    te_ctx_free(m.ctx);
}

static void test_tc_gemm_errors(void **state) {
    (void)state;
    store_error(64, 0, "4 loops from this axis inwards; the intrinsic takes 2 (one per tile "
                       "dimension)");
    store_error(40, 2, "the tiles do not divide the stage's extents (the nest needs bounds guards)");
    expect_tc_error(TE_FLOAT32, 64, 64, 40, (ops_tc_config){0},
                    "tc_gemm: 'C' is not a 2-D matmul with M, N and K multiples of 16");
    expect_tc_error(TE_FLOAT16, 64, 64, 32, (ops_tc_config){.bm = 48, .bn = 64, .wm = 16, .wn = 32},
                    "tc_gemm: block 48x64, warp 16x32, chunk 32 do not tile 64x64x32");
    expect_tc_error(TE_FLOAT32, 128, 128, 128,
                    (ops_tc_config){.bm = 128, .bn = 128, .wm = 64, .wn = 64, .kc = 64},
                    "tc_gemm: the shared tiles take 137216 bytes; a block has 49152");
    expect_tc_error(TE_FLOAT16, 256, 256, 32,
                    (ops_tc_config){.bm = 256, .bn = 256, .wm = 16, .wn = 16, .kc = 16,
                                    .single_buffer = true},
                    "tc_gemm: 256 warps a block; at most 32");
    expect_tc_error(TE_FLOAT16, 64, 64, 32,
                    (ops_tc_config){.bm = 32, .bn = 32, .wm = 16, .wn = 16, .kc = 16},
                    "tc_gemm: the 32x16 and 16x32 tiles of a chunk are not a multiple of 128 "
                    "threads x 8 elements");
    /* double buffering needs a serial loop */
    mm m = make_mm(TE_FLOAT32, 64, 64, 32);
    sch_schedule *s = sch_create(m.ctx, 1, &m.C);
    te_tensor *AL = sch_cache_read(s, m.A, "local", 1, &m.C);
    te_expr *io, *ii;
    assert_int_equal(sch_split(s, m.C, sch_axis(m.C, 0), 16, &io, &ii) ||
                         sch_parallel(s, m.C, io) || sch_compute_at(s, AL, m.C, io) ||
                         sch_double_buffer(s, AL),
                     0);
    te_tensor *args[3] = {m.A, m.B, m.C};
    assert_null(cg_build(s, 3, args, "llvm", NULL));
    assert_non_null(strstr(te_ctx_errmsg(m.ctx), "double_buffer: the loop 'i.outer' that the copies "
                                                 "are computed at is parallel; it must be serial"));
    te_ctx_free(m.ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tf32_matmul),
        cmocka_unit_test(test_double_buffer),
        cmocka_unit_test(test_lowered_form),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_step_log),
        cmocka_unit_test(test_ops_tf32),
        cmocka_unit_test(test_ops_half),
        cmocka_unit_test(test_tc_gemm_errors),
        cmocka_unit_test(test_multi_stage),
        cmocka_unit_test(test_computed_operand),
        cmocka_unit_test(test_default_depth),
    };
    return tu_run_group(tests);
}
