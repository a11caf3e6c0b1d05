/*
 * tests/test_codegen_llvm.c — the LLVM backend: the shared code generation
 * cases (codegen_cases.h) built as emitted and at every opt level, with
 * what the IR must hold (fmuladd, vector types and masked intrinsics,
 * rt_parallel_for, the allocations); then its own: the inlined float32
 * erf and exp against double precision in ulps, two functions with their
 * assembly, scheduled workloads through cg_build, target checking,
 * concurrent builds, and the error paths with their messages.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_cases.h"
#include "sched_harness.h"

/* Lines of text that hold both a and b. */
static int lines_with(const char *text, const char *a, const char *b) {
    int n = 0;
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *x = strstr(p, a), *y = strstr(p, b);
        if (x && y && (size_t)(x - p) < len && (size_t)(y - p) < len) n++;
        p += len + (e != NULL);
    }
    return n;
}

/* The builds of every shared case, IR kept: as emitted (-1), the default
 * (O3), O1 and O2. */
enum { AS_EMITTED, OPTIMISED };
static const int levels[] = {-1, 0, 1, 2};

static rt_module *llvm_build(te_ctx *ctx, int nfuncs, const tir_func *const *fs, int v) {
    cg_llvm_options o = {0};
    o.opt_level = levels[v];
    o.keep_ir = true;
    return cg_llvm_build(ctx, nfuncs, fs, &o);
}

/* What the IR of the shared cases holds. */
static void llvm_expect(cgc_id id, int v, rt_module *m) {
    const char *ir = rt_module_get_text(m, "ir");
    assert_non_null(ir);
    switch (id) {
    case CGC_MATMUL:
        if (v == OPTIMISED) tu_assert_msg_has(ir, "llvm.fmuladd.f32", "noalias");
        break;
    case CGC_PARALLEL:
        tu_assert_msg_has(ir, "@rt_parallel_for(", "loom_func_default_par0");
        assert_null(strstr(ir, "loom_func_default_par1")); /* the nested loop is not outlined */
        break;
    case CGC_ALLOCATE:
        /* unoptimised: the allocations as written */
        if (v == AS_EMITTED)
            tu_assert_msg_has(ir, "@aligned_alloc(i64 64, i64 102400)",
                              "alloca [72 x float], align 64" /* 8 + CG_LLVM_LOCAL_SLACK */,
                              "@free(", "llvm.loop.unroll.full");
        break;
    case CGC_VECTOR:
        if (v != OPTIMISED) break;
        tu_assert_msg_has(ir, "<8 x float>", "llvm.masked.load", "llvm.masked.store",
                          "llvm.masked.gather", "llvm.fmuladd.v8f32");
        /* Gathers for the predicated strided load (LLVM may unroll its
         * loop and copy it: twice on znver4) and the squares; the
         * unmasked strided load and store are one scalar access a lane,
         * so the squares' is the only gather with every lane on. */
        assert_true(tu_count_substr(ir, "call <8 x float> @llvm.masked.gather") >= 2);
        assert_int_equal(lines_with(ir, "call <8 x float> @llvm.masked.gather",
                                    "<8 x i1> <i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, "
                                    "i1 true, i1 true>"),
                         1);
        assert_null(strstr(ir, "llvm.masked.scatter"));
        break;
    case CGC_VECTOR_CLAMPED:
        /* As emitted: each of the six loads is a vector load where the
         * whole ramp is inside (plain for C, E, F, G; masked for D, H)
         * and, at the borders, a masked vector load of the lanes inside
         * plus the border elements it can need, each a masked load of one
         * lane (two for C and D; one for E and F, whose other bound folds
         * away, and for G and H, clamped on one side): no gather. */
        if (v != AS_EMITTED) break;
        assert_null(strstr(ir, "llvm.masked.gather"));
        assert_int_equal(tu_count_substr(ir, "call <8 x float> @llvm.masked.load"), 8);
        assert_int_equal(tu_count_substr(ir, "call <1 x float> @llvm.masked.load"), 8);
        assert_int_equal(tu_count_substr(ir, "load <8 x float>, ptr"), 4);
        break;
    case CGC_MATH:
        /* tanh inlined (tanh_f32); the rarer functions are libm's */
        assert_null(strstr(ir, "@tanhf"));
        tu_assert_msg_has(ir, "@atanhf");
        break;
    case CGC_BROADCAST_MASKED:
        /* one masked load of one lane, not a gather of one address */
        if (v != AS_EMITTED) break;
        assert_null(strstr(ir, "llvm.masked.gather"));
        assert_int_equal(tu_count_substr(ir, "call <1 x float> @llvm.masked.load"), 1);
        break;
    case CGC_LOCAL_BLEND: {
        /* The store into the local buffer is a load-blend-store (so the
         * buffer can live in registers): one masked store remains, the
         * one to parameter C. */
        if (v != OPTIMISED) break;
        const char *first = strstr(ir, "call void @llvm.masked.store");
        assert_non_null(first);
        assert_null(strstr(first + 1, "call void @llvm.masked.store"));
        break;
    }
    default:
        break;
    }
}

static const cgc_backend llvm_backend = {"llvm", "ir", (int)(sizeof levels / sizeof *levels),
                                         llvm_build, llvm_expect};

static rt_module *build_opts(te_ctx *ctx, tir_func *f, const cg_llvm_options *o) {
    assert_non_null(f);
    const tir_func *fs[1] = {f};
    rt_module *m = cg_llvm_build(ctx, 1, fs, o);
    if (!m) fprintf(stderr, "cg_llvm_build: %s\n", te_ctx_errmsg(ctx));
    assert_non_null(m);
    assert_string_equal(rt_module_kind(m), "llvm");
    if (getenv("LOOM_TEST_DUMP") && rt_module_get_text(m, "ir"))
        fputs(rt_module_get_text(m, "ir"), stderr);
    return m;
}

static rt_module *build(te_ctx *ctx, tir_func *f) {
    cg_llvm_options o = {0};
    o.keep_ir = true;
    return build_opts(ctx, f, &o);
}

/* ulp of float y's magnitude; of 0, the smallest denormal. */
static double ulp_of(float y) {
    float a = fabsf(y);
    return a == 0 ? 1.401298464e-45 : (double)nextafterf(a, INFINITY) - a;
}

/* A module "default"(A, S, V, G) over n floats: S[i] = f(A[i]) scalar,
 * V = f(A) and G = g(A) 8 lanes at a time (g NULL: G left unwritten). */
static rt_module *unary_module(te_ctx *ctx, int64_t n, int lanes, te_expr *(*f)(te_expr *),
                               te_expr *(*g)(te_expr *)) {
    tir_buffer *A = cgc_param1(ctx, "A", n), *S = cgc_param1(ctx, "S", n), *V = cgc_param1(ctx, "V", n);
    tir_buffer *G = cgc_param1(ctx, "G", n);
    te_expr *i = te_var(ctx, "i", TE_INT64), *v = te_var(ctx, "v", TE_INT64);
    tir_stmt *sl = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, n), TIR_FOR_SERIAL,
                           tir_store(ctx, S, i, f(cgc_ld(ctx, A, i)), NULL));
    te_expr *r = tir_ramp(te_mul(v, te_int(ctx, lanes)), te_int(ctx, 1), lanes);
    tir_stmt *vs[2] = {tir_store(ctx, V, r, f(tir_load(ctx, A, r, NULL)), NULL),
                       g ? tir_store(ctx, G, r, g(tir_load(ctx, A, r, NULL)), NULL) : NULL};
    tir_stmt *vl = tir_for(ctx, v, te_int(ctx, 0), te_int(ctx, n / lanes), TIR_FOR_SERIAL,
                           g ? tir_seq(ctx, 2, vs) : vs[0]);
    return build(ctx, tir_func_new(ctx, "default", 4, (tir_buffer *[]){A, S, V, G},
                                   tir_seq(ctx, 2, (tir_stmt *[]){sl, vl})));
}

/* What a unary_module test made: its module, inputs and results, ctx. */
static void free_unary(te_ctx *ctx, rt_module *m, DLTensor *ta, DLTensor *ts, DLTensor *tv,
                       DLTensor *tg) {
    rt_tensor_free(ta);
    rt_tensor_free(ts);
    rt_tensor_free(tv);
    rt_tensor_free(tg);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* x[k] = lo + (hi - lo) (u + 1) / 2 for the uniform u in [-1, 1) already
 * there, then the edges and a NaN over the first elements. */
static void spread_inputs(float *x, int64_t n, float lo, float hi, const float *edges,
                          int nedges) {
    for (int64_t k = 0; k < n; ++k) x[k] = lo + (hi - lo) * (x[k] + 1.0f) / 2.0f;
    memcpy(x, edges, sizeof *edges * (size_t)nedges);
    x[nedges] = NAN;
}

/* Every got[k] of the scalar (S) and vector (V) results within max_ulp of
 * ref(x[k]) in double precision; an infinite float result must be met
 * exactly, NaN by NaN. */
static void check_ulp(const char *name, double (*ref)(double), const float *x, const float *s,
                      const float *v, int64_t n, double max_ulp) {
    for (int64_t k = 0; k < n; ++k)
        for (int g = 0; g < 2; ++g) {
            float got = g ? v[k] : s[k];
            if (isnan(x[k])) {
                assert_true(isnan(got));
                continue;
            }
            double want = ref((double)x[k]);
            float wf = (float)want;
            if (isinf(wf)) {
                if (got != wf) fail_msg("%s(%.9g) = %.9g, want %g", name, (double)x[k], (double)got, (double)wf);
                continue;
            }
            double err = fabs((double)got - want);
            if (!(err <= max_ulp * ulp_of(wf)))
                fail_msg("%s(%.9g): %s %.9g, want %.9g (%.1f ulp)", name, (double)x[k],
                         g ? "vector" : "scalar", (double)got, want, err / ulp_of(wf));
        }
}

/* float32 erf is a rational approximation inlined as vector code, not
 * erff called lane by lane: within 8 ulp of the double-precision erf,
 * scalar and 8-lane vector alike, on 4,083 random inputs in [-6, 6] and
 * the edges (0, -0, tiny, denormal, the clamp at +-4, the worst input of
 * the exhaustive check, +-inf, NaN). */
static void test_erf_f32(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 4096;
    rt_module *m = unary_module(ctx, n, 8, te_erf, NULL);
    const char *ir = rt_module_get_text(m, "ir");
    assert_null(strstr(ir, "erff"));
    tu_assert_msg_has(ir, "fdiv <8 x float>");

    DLTensor *ta = tu_rand_f32(&seed, 1, &n), *ts = tu_nan_f32(1, &n), *tv = tu_nan_f32(1, &n);
    DLTensor *tg = tu_nan_f32(1, &n);
    const float edges[] = {0.0f,     -0.0f,     1e-30f,    -1e-30f,  1e-40f, -1e-40f,
                           4.0f,     -4.0f,     3.64075f,  -3.64075f, INFINITY, -INFINITY};
    spread_inputs(cgc_f32(ta), n, -6.0f, 6.0f, edges, (int)(sizeof edges / sizeof edges[0]));
    cgc_call_ok(m, RT_ARGS(ta, ts, tv, tg));
    check_ulp("erf", erf, cgc_f32(ta), cgc_f32(ts), cgc_f32(tv), n, 8);
    free_unary(ctx, m, ta, ts, tv, tg);
}

/* float32 tanh is inlined (a polynomial near 0, exp beyond): within 2
 * ulp of the double-precision tanh, scalar and vector (8 and 16 lanes),
 * on 4,084 random inputs in [-12, 12] and the edges (+-0, tiny, denormal,
 * either side of the switch at 0.625, large, +-inf, NaN). */
static void test_tanh_f32(void **state) {
    (void)state;
    for (int lanes = 8; lanes <= 16; lanes += 8) {
        uint64_t seed = tu_seed();
        te_ctx *ctx = te_ctx_new();
        const int64_t n = 4096;
        rt_module *m = unary_module(ctx, n, lanes, te_tanh, NULL);
        assert_null(strstr(rt_module_get_text(m, "ir"), "@tanhf"));
        DLTensor *ta = tu_rand_f32(&seed, 1, &n), *ts = tu_nan_f32(1, &n), *tv = tu_nan_f32(1, &n);
        DLTensor *tg = tu_nan_f32(1, &n);
        const float edges[] = {0.0f,      -0.0f,   1e-30f,   -1e-40f,   0.6249999f, 0.625f,
                               -0.625f,   9.0f,    50.0f,    -1e4f,     INFINITY,   -INFINITY};
        spread_inputs(cgc_f32(ta), n, -12.0f, 12.0f, edges, (int)(sizeof edges / sizeof edges[0]));
        cgc_call_ok(m, RT_ARGS(ta, ts, tv, tg));
        check_ulp("tanh", tanh, cgc_f32(ta), cgc_f32(ts), cgc_f32(tv), n, 2);
        assert_true(signbit(cgc_f32(tv)[1]) && cgc_f32(tv)[1] == 0.0f);
        free_unary(ctx, m, ta, ts, tv, tg);
    }
}

/* float32 exp is inlined too (range reduction, a polynomial, two power-
 * of-two scalings, or VSCALEFPS for 16 lanes where the target has
 * AVX-512F): within 2 ulp of the double-precision exp, scalar
 * and vector (8 and 16 lanes), on 4,081 random inputs in [-110, 95] and
 * the edges (0, the clamp, overflow to inf, denormal results, +-inf,
 * NaN); sigmoid uses it. */
static void check_exp_f32(int lanes) {
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 4096;
    rt_module *m = unary_module(ctx, n, lanes, te_exp, te_sigmoid);
    const char *ir = rt_module_get_text(m, "ir");
    assert_null(strstr(ir, "@expf"));
    assert_null(strstr(ir, "@llvm.exp."));

    DLTensor *ta = tu_rand_f32(&seed, 1, &n), *ts = tu_nan_f32(1, &n), *tv = tu_nan_f32(1, &n);
    DLTensor *tg = tu_nan_f32(1, &n);
    const float edges[] = {0.0f,    -0.0f,   1e-30f,   -104.0f, -103.5f, -90.0f,    -87.5f,
                           88.72f,  88.73f,  89.0f,    100.0f,  -1e4f,   INFINITY,  -INFINITY};
    const float *x = cgc_f32(ta);
    spread_inputs(cgc_f32(ta), n, -110.0f, 95.0f, edges, (int)(sizeof edges / sizeof edges[0]));
    cgc_call_ok(m, RT_ARGS(ta, ts, tv, tg));
    check_ulp("exp", exp, x, cgc_f32(ts), cgc_f32(tv), n, 2);
    for (int64_t k = 0; k < n; ++k) {
        double sg = 1.0 / (1.0 + exp(-(double)x[k]));
        if (isnan(x[k])) assert_true(isnan(cgc_f32(tg)[k]));
        else if (!(fabs(cgc_f32(tg)[k] - sg) <= 1e-6 * fabs(sg) + 1e-37))
            fail_msg("sigmoid(%.9g) = %.9g, want %.9g (%d lanes)", (double)x[k],
                     (double)cgc_f32(tg)[k], sg, lanes);
    }
    free_unary(ctx, m, ta, ts, tv, tg);
}

static void test_exp_f32(void **state) {
    (void)state;
    check_exp_f32(8);
    check_exp_f32(16);
}


/* Two functions in one module, with the assembly kept. */
static void test_two_funcs_and_asm(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 64;
    tir_buffer *A = cgc_param1(ctx, "A", n), *B = cgc_param1(ctx, "B", n);
    te_expr *i = te_var(ctx, "i", TE_INT64), *j = te_var(ctx, "j", TE_INT64);
    te_expr *two = te_float(ctx, 2.0);
    tir_func *f1 = tir_func_new(ctx, "double.it", 2, (tir_buffer *[]){A, B},
                                tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, n), TIR_FOR_SERIAL,
                                        tir_store(ctx, B, i, te_mul(cgc_ld(ctx, A, i), two), NULL)));
    te_expr *r = tir_ramp(te_mul(j, te_int(ctx, 16)), te_int(ctx, 1), 16);
    te_expr *fma = te_add(te_mul(tir_load(ctx, A, r, NULL), tir_load(ctx, B, r, NULL)),
                          tir_broadcast(te_float(ctx, 1.0), 16));
    tir_func *f2 = tir_func_new(ctx, "fma", 2, (tir_buffer *[]){A, B},
                                tir_for(ctx, j, te_int(ctx, 0), te_int(ctx, n / 16), TIR_FOR_SERIAL,
                                        tir_store(ctx, B, r, fma, NULL)));
    const tir_func *fs[2] = {f1, f2};
    cg_llvm_options o = {0};
    o.keep_asm = true;
    o.keep_ir = true;
    rt_module *m = cg_llvm_build(ctx, 2, fs, &o);
    if (!m) fprintf(stderr, "%s\n", te_ctx_errmsg(ctx));
    assert_non_null(m);
    assert_int_equal(rt_module_num_funcs(m), 2);
    const char *asm_text = rt_module_get_text(m, "asm");
    assert_non_null(asm_text);
    tu_assert_msg_has(asm_text, "loom_func_double_it", "loom_func_fma", "vfmadd");
    tu_assert_msg_has(rt_module_get_text(m, "ir"), "@loom_func_fma(", "<16 x float>");

    DLTensor *a = tu_rand_f32(&seed, 1, &n), *b = tu_nan_f32(1, &n);
    assert_int_equal(rt_call(m, "double.it", RT_ARGS(a, b)), 0);
    double want[64];
    for (int k = 0; k < n; ++k) want[k] = 2.0 * cgc_f32(a)[k];
    assert_int_equal(tu_compare_f32("func 1", cgc_f32(b), want, n, 0, 0), 0);
    assert_int_equal(rt_call(m, "fma", RT_ARGS(a, b)), 0);
    for (int k = 0; k < n; ++k) want[k] = (double)cgc_f32(a)[k] * (2.0 * cgc_f32(a)[k]) + 1.0;
    assert_int_equal(tu_compare_f32("func 2", cgc_f32(b), want, n, 1e-6, 1e-6), 0);
    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_module_free(m);
    te_ctx_free(ctx);
}


static void expect_error(te_ctx *ctx, tir_func *f, const cg_llvm_options *o, const char *msg1,
                         const char *msg2) {
    const tir_func *fs[1] = {f};
    te_ctx_clear_error(ctx);
    assert_null(cg_llvm_build(ctx, 1, fs, o));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "llvm: ", msg1, msg2);
}

static void test_errors(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_func *f = cgc_tiny_func(ctx, TIR_FOR_THREAD);
    f->body->u.loop.thread_tag = "blockIdx.x";
    const tir_func *fs[1] = {f};
    assert_null(cg_llvm_build(ctx, 1, fs, NULL));
    assert_string_equal(te_ctx_errmsg(ctx), "llvm: loop 'i.outer' is bound to blockIdx.x; the llvm "
                                            "target cannot run GPU thread bindings");
    /* leftovers of lowering */
    tir_buffer *C = cgc_param1(ctx, "C", 4);
    te_expr *z = te_int(ctx, 0);
    expect_error(ctx, tir_func_new(ctx, "default", 1, (tir_buffer *[]){C},
                                   tir_buffer_store(ctx, C, 1, &z, te_float(ctx, 1.0))),
                 NULL, "BUFFER_STORE to 'C'", "tir_pass_storage_flatten");
    expect_error(ctx, tir_func_new(ctx, "default", 1, (tir_buffer *[]){C},
                                   tir_store(ctx, C, z, tir_buffer_load(C, 1, &z), NULL)),
                 NULL, "BUFFER_LOAD in function 'default'", "storage_flatten");
    expect_error(ctx, tir_func_new(ctx, "k", 1, (tir_buffer *[]){C}, tir_barrier(ctx)), NULL,
                 "barrier", "function 'k'");
    /* a variable no loop defines */
    te_expr *w = te_var(ctx, "w", TE_INT64);
    expect_error(ctx, tir_func_new(ctx, "default", 1, (tir_buffer *[]){C},
                                   tir_store(ctx, C, w, te_float(ctx, 1.0), NULL)),
                 NULL, "variable 'w'", "outside the loop");
    /* a buffer neither a parameter nor allocated */
    tir_buffer *X = cgc_param1(ctx, "X", 4);
    expect_error(ctx, tir_func_new(ctx, "default", 1, (tir_buffer *[]){C},
                                   tir_store(ctx, C, z, cgc_ld(ctx, X, z), NULL)),
                 NULL, "buffer 'X'", "outside its allocation");
    /* options */
    tir_func *ok = cgc_tiny_func(ctx, TIR_FOR_SERIAL);
    cg_llvm_options bad_cpu = {0};
    bad_cpu.mcpu = "not a cpu!";
    expect_error(ctx, ok, &bad_cpu, "-mcpu 'not a cpu!'", "not a CPU name");
    cg_llvm_options bad_opt = {0};
    bad_opt.opt_level = 7;
    expect_error(ctx, ok, &bad_opt, "opt_level 7", "out of range");
    te_ctx_clear_error(ctx);
    assert_null(cg_llvm_build(ctx, 0, NULL, NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "at least one function");
    const tir_func *dup[2] = {ok, ok};
    assert_null(cg_llvm_build(ctx, 2, dup, NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "two functions are named 'default'");
    /* a named CPU works */
    cg_llvm_options named = {0};
    named.mcpu = "x86-64";
    named.keep_asm = true;
    rt_module *m = build_opts(ctx, ok, &named);
    int64_t four = 4;
    DLTensor *c = tu_nan_f32(1, &four);
    cgc_call_ok(m, RT_ARGS(c));
    for (int k = 0; k < 4; ++k) assert_true(cgc_f32(c)[k] == 1.0f);
    rt_tensor_free(c);
    rt_module_free(m);
    /* host queries */
    char *cpu = cg_llvm_host_cpu(), *feat = cg_llvm_host_features();
    assert_non_null(cpu);
    assert_non_null(feat);
    assert_true(strlen(cpu) > 0);
    free(cpu);
    free(feat);
    te_ctx_free(ctx);
}

/* A tiled, vectorized, parallel matmul through cg_build: correct, fast to
 * compile, vector fmuladd in the IR; and through build errors. */
static void test_schedule_matmul(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_matmul(ctx, 128, 128, 128);
    sch_schedule *s = sch_create(ctx, 1, &c.out);
    te_expr *io, *jo, *ii, *ji, *ko, *ki;
    assert_int_equal(sch_tile(s, c.out, c.ax[0], c.ax[1], 8, 32, &io, &jo, &ii, &ji), 0);
    assert_int_equal(sch_split(s, c.out, c.rax[0], 4, &ko, &ki), 0);
    assert_int_equal(sch_reorder(s, c.out, 6, (te_expr *[]){io, jo, ko, ki, ii, ji}), 0);
    assert_int_equal(sch_vectorize(s, c.out, ji), 0);
    assert_int_equal(sch_unroll(s, c.out, ii), 0);
    assert_int_equal(sch_parallel(s, c.out, io), 0);
    assert_int_equal(sh_run(&c, s, "llvm"), 0);

    cg_build_options o;
    memset(&o, 0, sizeof o);
    o.llvm.keep_ir = true;
    double best = 1e9;
    for (int rep = 0; rep < 3; ++rep) {
        double t0 = rt_now();
        rt_module *m = cg_build(s, TE_TENSORS(c.in[0], c.in[1], c.out), "llvm", &o);
        double t = rt_now() - t0;
        if (!m) fprintf(stderr, "%s\n", te_ctx_errmsg(ctx));
        assert_non_null(m);
        if (t < best) best = t;
        if (rep == 0) tu_assert_msg_has(rt_module_get_text(m, "ir"), "fmuladd.v", "rt_parallel_for");
        rt_module_free(m);
    }
    fprintf(stderr, "[llvm] 128^3 tiled matmul: lower + O3 + JIT in %.1f ms (best of 3)\n", best * 1e3);
    assert_true(best < 2.0); /* generous: a loaded 2-core machine */

    /* target options through cg_build */
    rt_module *m = cg_build(s, TE_TENSORS(c.in[0], c.in[1], c.out), "llvm -mcpu=x86-64-v3", NULL);
    if (!m) fprintf(stderr, "%s\n", te_ctx_errmsg(ctx));
    assert_non_null(m);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* Asserts that cg_target_check refuses target with a message holding
 * every one of the NULL-terminated substrings. */
#define expect_target_refused(target, ...)                                     \
    do {                                                                       \
        char *err_ = NULL;                                                     \
        assert_int_equal(cg_target_check((target), &err_), -1);               \
        assert_non_null(err_);                                                 \
        tu_assert_msg_has(err_, __VA_ARGS__);                                  \
        free(err_);                                                            \
    } while (0)

/* CPU and feature names LLVM does not know are refused with a message,
 * by cg_target_check, cg_build and cg_llvm_build: LLVM took them with a
 * warning and then aborted the process ("64-bit code requested on a
 * subtarget that doesn't support it"). */
static void test_target_check(void **state) {
    (void)state;
    char *host = cg_llvm_host_cpu(), *feats = cg_llvm_host_features();
    assert_non_null(host);
    assert_non_null(feats);
    char host_msg[256], host_target[256], feat_target[512], first[128] = "";
    snprintf(host_msg, sizeof host_msg, "(this host's CPU is '%s')", host);
    snprintf(host_target, sizeof host_target, "llvm -mcpu=%s", host);
    /* the host's first enabled feature, as LLVM spells it ("+sse2", ...) */
    const char *plus = feats[0] == '+' ? feats : strstr(feats, ",+");
    if (plus) {
        plus += *plus == ',';
        size_t flen = strcspn(plus, ",");
        if (flen < sizeof first) memcpy(first, plus, flen), first[flen] = '\0';
    }
    snprintf(feat_target, sizeof feat_target, "llvm -mcpu=%s -mattr=%s", host, first);

    /* accepted: every feature LLVM reports for this host too */
    char *err = (char *)"untouched";
    assert_int_equal(cg_target_check("llvm", &err), 0);
    assert_null(err);
    assert_int_equal(cg_target_check(NULL, NULL), 0);
    assert_int_equal(cg_target_check(host_target, &err), 0);
    assert_int_equal(cg_target_check("llvm -mcpu=x86-64-v3", &err), 0);
    if (first[0]) assert_int_equal(cg_target_check(feat_target, &err), 0);
    char *all = malloc(strlen(host) + strlen(feats) + 32);
    assert_non_null(all);
    sprintf(all, "llvm -mcpu=%s -mattr=%s", host, feats);
    if (feats[0]) assert_int_equal(cg_target_check(all, &err), 0);
    free(all);
    assert_int_equal(cg_target_check("c", &err), 0);
    assert_int_equal(cg_target_check("cuda -arch=sm_90a", &err), 0);

    /* refused */
    expect_target_refused("llvm -mcpu=notacpu", "target 'llvm -mcpu=notacpu': unknown CPU "
                                                "'notacpu' for ",
                          host_msg);
    expect_target_refused("llvm -mattr=+notafeature", "target 'llvm -mattr=+notafeature': "
                                                      "unknown feature '+notafeature' for ");
    expect_target_refused("llvm -mattr=avx2", "feature 'avx2' needs a '+' (enable) or '-'");
    expect_target_refused("llvm -mcpu=", "-mcpu has no value");
    expect_target_refused("llvm -mcpu=a -mcpu=b", "-mcpu is given twice");
    expect_target_refused("llvm -O3", "unknown option '-O3'", "-mcpu=NAME and -mattr");
    expect_target_refused("c -O3", "the c target takes no options");
    expect_target_refused("cuda -arch=gfx90a", "architecture 'gfx90a' is not sm_XX");
    expect_target_refused("opencl", "unknown target 'opencl' (known: llvm");
    assert_int_equal(cg_target_check("llvm -mcpu=notacpu", NULL), -1);

    /* cg_build and cg_llvm_build report the same, without aborting */
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_matmul(ctx, 16, 16, 16);
    sch_schedule *s = sch_create(ctx, 1, &c.out);
    assert_null(cg_build(s, TE_TENSORS(c.in[0], c.in[1], c.out), "llvm -mcpu=notacpu", NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "cg_build: target 'llvm -mcpu=notacpu': unknown CPU "
                                          "'notacpu' for ",
                      host_msg);
    cg_build_options bo;
    memset(&bo, 0, sizeof bo);
    bo.llvm.mcpu = "notacpu";
    te_ctx_clear_error(ctx);
    assert_null(cg_build(s, TE_TENSORS(c.in[0], c.in[1], c.out), "llvm", &bo));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "llvm: unknown CPU 'notacpu' for ", host_msg);
    tir_func *ok = cgc_tiny_func(ctx, TIR_FOR_SERIAL);
    cg_llvm_options lo = {0};
    lo.features = "+notafeature";
    expect_error(ctx, ok, &lo, "unknown feature '+notafeature'", "for ");
    /* the host's CPU, and its first feature, build and compute */
    assert_int_equal(sh_run(&c, s, host_target), 0);
    if (first[0]) assert_int_equal(sh_run(&c, s, feat_target), 0);
    te_ctx_free(ctx);
    free(host);
    free(feats);
}

/* Builds from two threads at once, each with its own ctx. */
static void *build_thread(void *arg) {
    int *bad = arg;
    for (int r = 0; r < 2; ++r) {
        te_ctx *ctx = te_ctx_new();
        sched_case c = sh_chain(ctx, 33, 40);
        sch_schedule *s = sch_create(ctx, 1, &c.out);
        te_expr *o, *in;
        sch_split(s, c.out, c.ax[1], 8, &o, &in);
        sch_vectorize(s, c.out, in);
        sch_parallel(s, c.out, c.ax[0]);
        if (sh_run(&c, s, "llvm") != 0) (*bad)++;
        te_ctx_free(ctx);
    }
    return NULL;
}

static void test_concurrent_builds(void **state) {
    (void)state;
    pthread_t th[2];
    int bad[2] = {0, 0};
    for (int t = 0; t < 2; ++t) assert_int_equal(pthread_create(&th[t], NULL, build_thread, &bad[t]), 0);
    for (int t = 0; t < 2; ++t) pthread_join(th[t], NULL);
    assert_int_equal(bad[0] + bad[1], 0);
}

int main(void) {
    static const struct CMUnitTest own[] = {
        cmocka_unit_test(test_erf_f32),
        cmocka_unit_test(test_exp_f32),
        cmocka_unit_test(test_tanh_f32),
        cmocka_unit_test(test_two_funcs_and_asm),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_schedule_matmul),
        cmocka_unit_test(test_target_check),
        cmocka_unit_test(test_concurrent_builds),
    };
    struct CMUnitTest tests[CGC_NCASES + sizeof own / sizeof *own];
    int n = cgc_add_tests(&llvm_backend, tests);
    memcpy(tests + n, own, sizeof own);
    return cgc_run_tests(tests, n + (int)(sizeof own / sizeof *own));
}
