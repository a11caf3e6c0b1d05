/*
 * tests/test_codegen_llvm.c — the LLVM backend on hand-built, already
 * lowered loop programs (the form tir_run_pipeline hands to code
 * generation) and on scheduled workloads through cg_build: each is run
 * through rt_call on fresh random data with NaN-poisoned outputs and
 * compared with a double-precision reference. Also the IR/assembly texts
 * (fmuladd, vector types, rt_parallel_for), every opt level, concurrent
 * builds, and the error paths with their messages.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_harness.h"

static tir_buffer *param1(te_ctx *ctx, const char *name, int64_t n) {
    tir_buffer *b = tir_buffer_new(ctx, name, TE_FLOAT32, 1, (int64_t[]){n}, TIR_SCOPE_GLOBAL);
    assert_non_null(b);
    b->is_param = true;
    return b;
}

static te_expr *ld(te_ctx *ctx, tir_buffer *b, te_expr *i) { return tir_load(ctx, b, i, NULL); }

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

static void call_ok(rt_module *m, int nargs, DLTensor *const *args) {
    int rc = rt_call(m, "default", nargs, args);
    if (rc) fprintf(stderr, "rt_call: %s\n", rt_module_errmsg(m));
    assert_int_equal(rc, 0);
}

static float *f32(DLTensor *t) { return (float *)t->data; }

/* C[i] = A[i] + B[i], at every opt level. */
static void test_vector_add(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    const int64_t n = 1000;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = param1(ctx, "A", n), *B = param1(ctx, "B", n), *C = param1(ctx, "C", n);
    te_expr *i = te_var(ctx, "i", TE_INT64);
    tir_stmt *body = tir_store(ctx, C, i, te_add(ld(ctx, A, i), ld(ctx, B, i)), NULL);
    tir_stmt *loop = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, n), TIR_FOR_SERIAL, body);
    tir_func *f = tir_func_new(ctx, "default", 3, (tir_buffer *[]){A, B, C}, loop);
    DLTensor *a = tu_rand_f32(&seed, 1, &n), *b = tu_rand_f32(&seed, 1, &n), *c = tu_nan_f32(1, &n);
    double *want = malloc((size_t)n * sizeof *want);
    for (int64_t k = 0; k < n; ++k) want[k] = (double)f32(a)[k] + f32(b)[k];
    const int levels[] = {-1, 0, 1, 2, 3};
    for (int l = 0; l < 5; ++l) {
        cg_llvm_options o = {0};
        o.opt_level = levels[l];
        rt_module *m = build_opts(ctx, f, &o);
        tu_poison_f32(c);
        call_ok(m, RT_ARGS(a, b, c));
        assert_int_equal(tu_compare_f32("vector add", f32(c), want, n, 1e-6, 1e-7), 0);
        if (l == 0) {
            /* the module checks its signature like every module */
            int64_t n2 = n + 1;
            DLTensor *bad = tu_nan_f32(1, &n2);
            assert_int_equal(rt_call(m, "default", RT_ARGS(a, b, bad)), -1);
            tu_assert_msg_has(rt_module_errmsg(m), "argument 2 ('C')", "shape [1001], expected [1000]");
            rt_tensor_free(bad);
        }
        rt_module_free(m);
    }
    free(want);
    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_tensor_free(c);
    te_ctx_free(ctx);
}

/* C[i, j] = sum_k A[i, k] * B[k, j] as scalar loops: fmuladd in the IR. */
static void test_matmul_scalar(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    const int64_t M = 13, N = 17, K = 19;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = param1(ctx, "A", M * K), *B = param1(ctx, "B", K * N), *C = param1(ctx, "C", M * N);
    te_expr *i = te_var(ctx, "i", TE_INT64), *j = te_var(ctx, "j", TE_INT64);
    te_expr *k = te_var(ctx, "k", TE_INT64);
    te_expr *cij = te_add(te_mul(i, te_int(ctx, N)), j);
    tir_stmt *init = tir_store(ctx, C, cij, te_float(ctx, 0.0), NULL);
    te_expr *prod = te_mul(ld(ctx, A, te_add(te_mul(i, te_int(ctx, K)), k)),
                           ld(ctx, B, te_add(te_mul(k, te_int(ctx, N)), j)));
    tir_stmt *update = tir_store(ctx, C, cij, te_add(ld(ctx, C, cij), prod), NULL);
    tir_stmt *kloop = tir_for(ctx, k, te_int(ctx, 0), te_int(ctx, K), TIR_FOR_SERIAL, update);
    tir_stmt *jbody = tir_seq(ctx, 2, (tir_stmt *[]){init, kloop});
    tir_stmt *jloop = tir_for(ctx, j, te_int(ctx, 0), te_int(ctx, N), TIR_FOR_SERIAL, jbody);
    tir_stmt *iloop = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, M), TIR_FOR_SERIAL, jloop);
    rt_module *m = build(ctx, tir_func_new(ctx, "default", 3, (tir_buffer *[]){A, B, C}, iloop));
    tu_assert_msg_has(rt_module_get_text(m, "ir"), "llvm.fmuladd.f32", "noalias");

    int64_t na = M * K, nb = K * N, nc = M * N;
    DLTensor *a = tu_rand_f32(&seed, 1, &na), *b = tu_rand_f32(&seed, 1, &nb), *c = tu_nan_f32(1, &nc);
    call_ok(m, RT_ARGS(a, b, c));
    double want[13 * 17];
    for (int64_t x = 0; x < M; ++x)
        for (int64_t y = 0; y < N; ++y) {
            double s = 0;
            for (int64_t z = 0; z < K; ++z) s += (double)f32(a)[x * K + z] * f32(b)[z * N + y];
            want[x * N + y] = s;
        }
    assert_int_equal(tu_compare_f32("matmul", f32(c), want, nc, 1e-5, 1e-5), 0);
    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_tensor_free(c);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* Vector code over n = 100 with 8 lanes (13 vectors, the last partial):
 *   for v in [0, 13):
 *     C[ramp(v*8, 1, 8)] = A[ramp(v*8,1,8)] * bcast(B[v]) + A[ramp(v, 12, 8)] - D[bcast(v)]
 *                          + A[ramp(v + 1, 11, 8)]   if ramp(v*8, 1, 8) < bcast(100)
 *   E[ramp(0, 1, 8) + bcast(8)] ... (a dense index written as ramp + broadcast)
 *   E[ramp(7, -1, 8)] = B[ramp(0, 1, 8)]; E[ramp(16, 1, 8)] = A[ramp(0,1,8) * ramp(0,1,8)]
 * The predicated gather A[ramp(v, 12, 8)] reads v .. v+96 (< 100); the
 * predicate masks the dense loads and the store (lanes >= 100 do not
 * exist). Unmasked strided accesses (A[ramp(v + 1, 11, 8)], the reversed
 * store to E) are one scalar access a lane, no gather or scatter; the
 * squares are a gather (no ramp). */
static void test_vector(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 100, L = 8, nv = (n + L - 1) / L;
    tir_buffer *A = param1(ctx, "A", n), *B = param1(ctx, "B", nv), *C = param1(ctx, "C", n);
    tir_buffer *D = param1(ctx, "D", nv), *E = param1(ctx, "E", 24);
    te_expr *v = te_var(ctx, "v", TE_INT64);
    te_expr *base = te_mul(v, te_int(ctx, L));
    te_expr *ramp = tir_ramp(base, te_int(ctx, 1), (int)L);
    te_expr *pred = te_lt(ramp, tir_broadcast(te_int(ctx, n), (int)L));
    te_expr *a = tir_load(ctx, A, ramp, pred);
    te_expr *gather = tir_load(ctx, A, tir_ramp(v, te_int(ctx, 12), (int)L), pred);
    te_expr *strided = tir_load(ctx, A, tir_ramp(te_add(v, te_int(ctx, 1)), te_int(ctx, 11), (int)L), NULL);
    te_expr *dv = tir_load(ctx, D, tir_broadcast(v, (int)L), NULL);
    te_expr *val = te_add(te_sub(te_add(te_mul(a, tir_broadcast(ld(ctx, B, v), (int)L)), gather), dv),
                          strided);
    assert_non_null(val);
    assert_int_equal(val->dtype.lanes, L);
    tir_stmt *st = tir_store(ctx, C, ramp, val, pred);
    tir_stmt *loop = tir_for(ctx, v, te_int(ctx, 0), te_int(ctx, nv), TIR_FOR_SERIAL, st);
    /* E[8..15] = float(ramp(0,1,8)) * 2 ; E[0..7] = scatter of reversed B */
    te_expr *eidx = te_add(tir_ramp(te_int(ctx, 0), te_int(ctx, 1), 8), tir_broadcast(te_int(ctx, 8), 8));
    tir_stmt *e1 = tir_store(ctx, E, eidx,
                             te_mul(te_cast(TE_DTYPE(TE_FLOAT, 32, 8), tir_ramp(te_int(ctx, 0), te_int(ctx, 1), 8)),
                                    tir_broadcast(te_float(ctx, 2.0), 8)),
                             NULL);
    tir_stmt *e2 = tir_store(ctx, E, tir_ramp(te_int(ctx, 7), te_int(ctx, -1), 8),
                             tir_load(ctx, B, tir_ramp(te_int(ctx, 0), te_int(ctx, 1), 8), NULL), NULL);
    te_expr *iota = tir_ramp(te_int(ctx, 0), te_int(ctx, 1), 8);
    tir_stmt *e3 = tir_store(ctx, E, tir_ramp(te_int(ctx, 16), te_int(ctx, 1), 8),
                             tir_load(ctx, A, te_mul(iota, iota), NULL), NULL);
    tir_stmt *body = tir_seq(ctx, 4, (tir_stmt *[]){loop, e1, e2, e3});
    rt_module *m = build(ctx, tir_func_new(ctx, "default", 5, (tir_buffer *[]){A, B, C, D, E}, body));
    const char *ir = rt_module_get_text(m, "ir");
    tu_assert_msg_has(ir, "<8 x float>", "llvm.masked.load", "llvm.masked.store",
                      "llvm.masked.gather", "llvm.fmuladd.v8f32");
    /* Gathers for the predicated strided load (LLVM may unroll its loop
     * and copy it: twice on znver4) and the squares; the unmasked strided
     * load and store are scalar, so the squares' is the only gather with
     * every lane on. */
    assert_true(tu_count_substr(ir, "call <8 x float> @llvm.masked.gather") >= 2);
    assert_int_equal(lines_with(ir, "call <8 x float> @llvm.masked.gather",
                                "<8 x i1> <i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, "
                                "i1 true, i1 true>"),
                     1);
    assert_null(strstr(ir, "llvm.masked.scatter"));

    int64_t ne = 24;
    DLTensor *ta = tu_rand_f32(&seed, 1, &n), *tb = tu_rand_f32(&seed, 1, &nv), *tc = tu_nan_f32(1, &n);
    DLTensor *td = tu_rand_f32(&seed, 1, &nv), *te = tu_nan_f32(1, &ne);
    call_ok(m, RT_ARGS(ta, tb, tc, td, te));
    double want[100];
    for (int64_t x = 0; x < nv; ++x)
        for (int64_t l = 0; l < L && x * L + l < n; ++l)
            want[x * L + l] = (double)f32(ta)[x * L + l] * f32(tb)[x] + f32(ta)[x + 12 * l] -
                              f32(td)[x] + f32(ta)[x + 1 + 11 * l];
    double wante[24];
    for (int l = 0; l < 8; ++l) {
        wante[8 + l] = 2.0 * l;
        wante[7 - l] = f32(tb)[l];
        wante[16 + l] = f32(ta)[l * l];
    }
    assert_int_equal(tu_compare_f32("vector predicated", f32(tc), want, n, 1e-5, 1e-6), 0);
    assert_int_equal(tu_compare_f32("vector dense/strided/gather", f32(te), wante, 24, 0, 0), 0);
    rt_tensor_free(ta);
    rt_tensor_free(tb);
    rt_tensor_free(tc);
    rt_tensor_free(td);
    rt_tensor_free(te);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* A dense ramp clamped into [lo, hi] (a padding stage's read): one
 * contiguous vector load where the whole ramp is inside, the gather at the
 * borders. C[ramp(8v, 1, 8)] = A[x8(5) + max(min(ramp(8v - 2, 1, 8), 20), 0)]
 * for v = 0, 1, 2: chunk 0 straddles lo, chunk 1 is inside, chunk 2
 * straddles hi; D the same with min(max(...)) and a predicate (22 of 24
 * lanes written); E with lo > hi. */
static void test_vector_clamped(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t na = 30, nc = 24, nd = 22, L = 8, lo = 0, hi = 20, off = 5;
    tir_buffer *A = param1(ctx, "A", na), *C = param1(ctx, "C", nc), *D = param1(ctx, "D", nd);
    te_expr *v = te_var(ctx, "v", TE_INT64);
    te_expr *out = tir_ramp(te_mul(v, te_int(ctx, L)), te_int(ctx, 1), (int)L);
    te_expr *r =
        tir_ramp(te_sub(te_mul(v, te_int(ctx, L)), te_int(ctx, 2)), te_int(ctx, 1), (int)L);
    te_expr *xlo = tir_broadcast(te_int(ctx, lo), (int)L);
    te_expr *xhi = tir_broadcast(te_int(ctx, hi), (int)L);
    te_expr *xoff = tir_broadcast(te_int(ctx, off), (int)L);
    te_expr *ic = te_add(xoff, te_max(te_min(r, xhi), xlo));
    te_expr *id = te_add(te_min(te_max(r, xlo), xhi), xoff);
    te_expr *pred = te_lt(out, tir_broadcast(te_int(ctx, nd), (int)L));
    tir_stmt *sc = tir_store(ctx, C, out, tir_load(ctx, A, ic, NULL), NULL);
    tir_stmt *sd = tir_store(ctx, D, out, tir_load(ctx, A, id, pred), pred);
    /* E: bounds the wrong way round (lo 12 > hi 3): every lane is 12, and
     * no ramp passes the test. */
    tir_buffer *E = param1(ctx, "E", nc);
    te_expr *ie = te_add(xoff, te_max(te_min(r, tir_broadcast(te_int(ctx, 3), (int)L)),
                                      tir_broadcast(te_int(ctx, 12), (int)L)));
    tir_stmt *se = tir_store(ctx, E, out, tir_load(ctx, A, ie, NULL), NULL);
    tir_stmt *loop = tir_for(ctx, v, te_int(ctx, 0), te_int(ctx, nc / L), TIR_FOR_SERIAL,
                             tir_seq(ctx, 3, (tir_stmt *[]){sc, sd, se}));
    tir_func *f = tir_func_new(ctx, "default", 4, (tir_buffer *[]){A, C, D, E}, loop);
    /* As emitted (LLVM folds the constant bounds away): each load is a
     * vector load inside (plain for C, masked for D), the gather at the
     * borders. */
    cg_llvm_options o0 = {0};
    o0.keep_ir = true;
    o0.opt_level = -1;
    rt_module *m0 = build_opts(ctx, f, &o0);
    const char *ir = rt_module_get_text(m0, "ir");
    assert_int_equal(tu_count_substr(ir, "call <8 x float> @llvm.masked.gather"), 3);
    assert_int_equal(tu_count_substr(ir, "call <8 x float> @llvm.masked.load"), 1);
    assert_int_equal(tu_count_substr(ir, "load <8 x float>, ptr"), 2);
    rt_module *m = build(ctx, f);
    DLTensor *ta = tu_rand_f32(&seed, 1, &na);
    double want[24], wante[24];
    for (int64_t p = 0; p < nc; p++) {
        int64_t i = p - 2 < lo ? lo : p - 2 > hi ? hi : p - 2;
        want[p] = f32(ta)[off + i];
        wante[p] = f32(ta)[off + 12];
    }
    rt_module *ms[2] = {m0, m};
    for (int k = 0; k < 2; k++) {
        DLTensor *tc = tu_nan_f32(1, &nc), *td = tu_nan_f32(1, &nd), *tE = tu_nan_f32(1, &nc);
        call_ok(ms[k], RT_ARGS(ta, tc, td, tE));
        assert_int_equal(tu_compare_f32("clamped ramp", f32(tc), want, nc, 0, 0), 0);
        assert_int_equal(tu_compare_f32("clamped ramp, predicated", f32(td), want, nd, 0, 0), 0);
        assert_int_equal(tu_compare_f32("clamped ramp, lo > hi", f32(tE), wante, nc, 0, 0), 0);
        rt_tensor_free(tc);
        rt_tensor_free(td);
        rt_tensor_free(tE);
    }
    rt_tensor_free(ta);
    rt_module_free(m0);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* In-place vector shift: C[ramp(1,1,8)] = C[ramp(0,1,8)] reads all lanes
 * before writing any. */
static void test_vector_in_place(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 9;
    tir_buffer *C = param1(ctx, "C", n);
    te_expr *one = te_int(ctx, 1);
    tir_stmt *st = tir_store(ctx, C, tir_ramp(te_int(ctx, 1), one, 8),
                             tir_load(ctx, C, tir_ramp(te_int(ctx, 0), one, 8), NULL), NULL);
    rt_module *m = build(ctx, tir_func_new(ctx, "default", 1, (tir_buffer *[]){C}, st));
    DLTensor *c = tu_rand_f32(&seed, 1, &n);
    double want[9];
    want[0] = f32(c)[0];
    for (int k = 1; k < 9; ++k) want[k] = f32(c)[k - 1];
    call_ok(m, RT_ARGS(c));
    assert_int_equal(tu_compare_f32("vector shift", f32(c), want, n, 0, 0), 0);
    rt_tensor_free(c);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* for o in [0, 3):                 serial, captured by the closure
 *   for p in [0, 64) parallel:
 *     for q in [0, 4) parallel:    nested: runs serially
 *       C[o*256 + p*4 + q] = A[...] * float(o) + B[p] */
static void test_parallel(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 3 * 64 * 4;
    tir_buffer *A = param1(ctx, "A", n), *B = param1(ctx, "B", 64), *C = param1(ctx, "C", n);
    te_expr *o = te_var(ctx, "o", TE_INT64), *p = te_var(ctx, "p.outer", TE_INT64);
    te_expr *q = te_var(ctx, "q", TE_INT64);
    te_expr *idx = te_add(te_add(te_mul(o, te_int(ctx, 256)), te_mul(p, te_int(ctx, 4))), q);
    te_expr *val = te_add(te_mul(ld(ctx, A, idx), te_cast(TE_FLOAT32, o)), ld(ctx, B, p));
    tir_stmt *st = tir_store(ctx, C, idx, val, NULL);
    tir_stmt *ql = tir_for(ctx, q, te_int(ctx, 0), te_int(ctx, 4), TIR_FOR_PARALLEL, st);
    tir_stmt *pl = tir_for(ctx, p, te_int(ctx, 0), te_int(ctx, 64), TIR_FOR_PARALLEL, ql);
    tir_stmt *ol = tir_for(ctx, o, te_int(ctx, 0), te_int(ctx, 3), TIR_FOR_SERIAL, pl);
    rt_module *m = build(ctx, tir_func_new(ctx, "default", 3, (tir_buffer *[]){A, B, C}, ol));
    const char *ir = rt_module_get_text(m, "ir");
    tu_assert_msg_has(ir, "@rt_parallel_for(", "loom_func_default_par0");
    assert_null(strstr(ir, "loom_func_default_par1")); /* the nested loop is not outlined */

    int64_t nb = 64;
    DLTensor *a = tu_rand_f32(&seed, 1, &n), *b = tu_rand_f32(&seed, 1, &nb), *c = tu_nan_f32(1, &n);
    double *want = malloc((size_t)n * sizeof *want);
    for (int64_t x = 0; x < 3; ++x)
        for (int64_t y = 0; y < 64; ++y)
            for (int64_t z = 0; z < 4; ++z) {
                int64_t k = x * 256 + y * 4 + z;
                want[k] = (double)f32(a)[k] * (double)x + f32(b)[y];
            }
    for (int T = 1; T <= 4; T += 3) {
        assert_int_equal(rt_set_num_threads(T), 0);
        tu_poison_f32(c);
        call_ok(m, RT_ARGS(a, b, c));
        assert_int_equal(tu_compare_f32("parallel", f32(c), want, n, 1e-6, 1e-6), 0);
    }
    free(want);
    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_tensor_free(c);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* A LOCAL scratch per row (stack, inside a parallel loop: one per thread)
 * and a GLOBAL 100 KB scratch (heap):
 *   allocate G[25600] global
 *   for r in [0, 25600): G[r] = A[r] * 2
 *   for i in [0, 3200) parallel:
 *     allocate T[8] local
 *     for j in [0, 8): T[j] = G[i*8 + j] + 1
 *     for j in [0, 8): C[i*8 + j] = T[7 - j] */
static void test_allocate(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 25600;
    tir_buffer *A = param1(ctx, "A", n), *C = param1(ctx, "C", n);
    tir_buffer *G = tir_buffer_new(ctx, "G", TE_FLOAT32, 1, (int64_t[]){n}, TIR_SCOPE_GLOBAL);
    tir_buffer *T = tir_buffer_new(ctx, "T.local", TE_FLOAT32, 1, (int64_t[]){8}, TIR_SCOPE_LOCAL);
    te_expr *r = te_var(ctx, "r", TE_INT64), *i = te_var(ctx, "i", TE_INT64);
    te_expr *j = te_var(ctx, "j", TE_INT64), *j2 = te_var(ctx, "j", TE_INT64);
    tir_stmt *fill = tir_for(ctx, r, te_int(ctx, 0), te_int(ctx, n), TIR_FOR_SERIAL,
                             tir_store(ctx, G, r, te_mul(ld(ctx, A, r), te_float(ctx, 2.0)), NULL));
    te_expr *ij = te_add(te_mul(i, te_int(ctx, 8)), j);
    tir_stmt *t1 = tir_for(ctx, j, te_int(ctx, 0), te_int(ctx, 8), TIR_FOR_SERIAL,
                           tir_store(ctx, T, j, te_add(ld(ctx, G, ij), te_float(ctx, 1.0)), NULL));
    tir_stmt *t2 = tir_for(ctx, j2, te_int(ctx, 0), te_int(ctx, 8), TIR_FOR_UNROLLED,
                           tir_store(ctx, C, te_add(te_mul(i, te_int(ctx, 8)), j2),
                                     ld(ctx, T, te_sub(te_int(ctx, 7), j2)), NULL));
    tir_stmt *ibody = tir_allocate(ctx, T, tir_seq(ctx, 2, (tir_stmt *[]){t1, t2}));
    tir_stmt *il = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, n / 8), TIR_FOR_PARALLEL, ibody);
    tir_stmt *body = tir_allocate(ctx, G, tir_seq(ctx, 2, (tir_stmt *[]){fill, il}));
    tir_func *f = tir_func_new(ctx, "default", 2, (tir_buffer *[]){A, C}, body);
    cg_llvm_options o0 = {0};
    o0.opt_level = -1;
    o0.keep_ir = true;
    rt_module *m0 = build_opts(ctx, f, &o0);
    /* unoptimised: the allocations as written */
    tu_assert_msg_has(rt_module_get_text(m0, "ir"), "@aligned_alloc(i64 64, i64 102400)",
                      "alloca [72 x float], align 64" /* 8 + CG_LLVM_LOCAL_SLACK */, "@free(",
                      "llvm.loop.unroll.full");
    rt_module *m = build(ctx, f);

    DLTensor *a = tu_rand_f32(&seed, 1, &n), *c = tu_nan_f32(1, &n);
    double *want = malloc((size_t)n * sizeof *want);
    for (int64_t x = 0; x < n / 8; ++x)
        for (int64_t y = 0; y < 8; ++y) want[x * 8 + y] = (double)f32(a)[x * 8 + 7 - y] * 2 + 1;
    assert_int_equal(rt_set_num_threads(4), 0);
    rt_module *ms[2] = {m0, m};
    for (int k = 0; k < 2; ++k) {
        tu_poison_f32(c);
        call_ok(ms[k], RT_ARGS(a, c));
        assert_int_equal(tu_compare_f32("allocate", f32(c), want, n, 1e-6, 1e-6), 0);
        rt_module_free(ms[k]);
    }
    free(want);
    rt_tensor_free(a);
    rt_tensor_free(c);
    te_ctx_free(ctx);
}

static int64_t ref_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* floordiv/floormod of x = i - 50 by 7, -3, 8 (a power of two) and by a
 * variable divisor d(j) in {-3, -2, -1, 1, 2, 3, 4}, and of i (non-negative)
 * by 8, scalar and as 4-lane vectors:
 *   Q[j*100 + i] = floordiv(x, d), R[j*100 + i] = floormod(x, d)
 *   K[c*100 + i] = floordiv/floormod(x, 7 | -3 | 8), then floordiv(i, 8)*10 + floormod(i, 8) */
static void test_floor_div_mod(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 100, nk = 7 * n;
    tir_buffer *Q = param1(ctx, "Q", nk), *R = param1(ctx, "R", nk), *K = param1(ctx, "K", nk);
    tir_buffer *V = param1(ctx, "V", n);
    te_expr *i = te_var(ctx, "i", TE_INT64), *j = te_var(ctx, "j", TE_INT64);
    te_expr *x = te_sub(i, te_int(ctx, 50));
    te_expr *d = te_select(te_lt(j, te_int(ctx, 3)), te_sub(j, te_int(ctx, 3)), te_sub(j, te_int(ctx, 2)));
    te_expr *qj = te_add(te_mul(j, te_int(ctx, n)), i);
    tir_stmt *sq = tir_store(ctx, Q, qj, te_cast(TE_FLOAT32, te_floordiv(x, d)), NULL);
    tir_stmt *sr = tir_store(ctx, R, qj, te_cast(TE_FLOAT32, te_floormod(x, d)), NULL);
    tir_stmt *iv = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, n), TIR_FOR_SERIAL,
                           tir_seq(ctx, 2, (tir_stmt *[]){sq, sr}));
    tir_stmt *jv = tir_for(ctx, j, te_int(ctx, 0), te_int(ctx, 7), TIR_FOR_SERIAL, iv);
    te_expr *i2 = te_var(ctx, "i2", TE_INT64);
    te_expr *x2 = te_sub(i2, te_int(ctx, 50));
    te_expr *kv[7] = {
        te_floordiv(x2, te_int(ctx, 7)), te_floormod(x2, te_int(ctx, 7)),
        te_floordiv(x2, te_int(ctx, -3)), te_floormod(x2, te_int(ctx, -3)),
        te_floordiv(x2, te_int(ctx, 8)), te_floormod(x2, te_int(ctx, 8)),
        te_add(te_mul(te_floordiv(i2, te_int(ctx, 8)), te_int(ctx, 10)), te_floormod(i2, te_int(ctx, 8))),
    };
    tir_stmt *ks[7];
    for (int c = 0; c < 7; ++c) {
        assert_non_null(kv[c]);
        ks[c] = tir_store(ctx, K, te_add(te_int(ctx, c * n), i2), te_cast(TE_FLOAT32, kv[c]), NULL);
    }
    tir_stmt *kl = tir_for(ctx, i2, te_int(ctx, 0), te_int(ctx, n), TIR_FOR_SERIAL, tir_seq(ctx, 7, ks));
    /* vector: V[ramp(4v,1,4)] = floordiv(ramp(4v-50,1,4), bcast(-3)) + floormod(.., bcast(7)) */
    te_expr *v = te_var(ctx, "v", TE_INT64);
    te_expr *rv = tir_ramp(te_sub(te_mul(v, te_int(ctx, 4)), te_int(ctx, 50)), te_int(ctx, 1), 4);
    te_expr *vval = te_add(te_floordiv(rv, tir_broadcast(te_int(ctx, -3), 4)),
                           te_floormod(rv, tir_broadcast(te_int(ctx, 7), 4)));
    assert_non_null(vval);
    tir_stmt *vs = tir_store(ctx, V, tir_ramp(te_mul(v, te_int(ctx, 4)), te_int(ctx, 1), 4),
                             te_cast(TE_DTYPE(TE_FLOAT, 32, 4), vval), NULL);
    tir_stmt *vl = tir_for(ctx, v, te_int(ctx, 0), te_int(ctx, n / 4), TIR_FOR_SERIAL, vs);
    tir_stmt *body = tir_seq(ctx, 3, (tir_stmt *[]){jv, kl, vl});
    rt_module *m = build(ctx, tir_func_new(ctx, "default", 4, (tir_buffer *[]){Q, R, K, V}, body));

    DLTensor *tq = tu_nan_f32(1, &nk), *tr = tu_nan_f32(1, &nk), *tk = tu_nan_f32(1, &nk), *tv = tu_nan_f32(1, &n);
    call_ok(m, RT_ARGS(tq, tr, tk, tv));
    double *wq = malloc(sizeof(double) * (size_t)nk), *wr = malloc(sizeof(double) * (size_t)nk);
    double *wk = malloc(sizeof(double) * (size_t)nk), wv[100];
    const int64_t divs[3] = {7, -3, 8};
    for (int64_t k = 0; k < n; ++k) {
        int64_t xv = k - 50;
        for (int64_t jj = 0; jj < 7; ++jj) {
            int64_t dv = jj < 3 ? jj - 3 : jj - 2;
            wq[jj * n + k] = (double)ref_floordiv(xv, dv);
            wr[jj * n + k] = (double)(xv - dv * ref_floordiv(xv, dv));
        }
        for (int c = 0; c < 3; ++c) {
            wk[2 * c * n + k] = (double)ref_floordiv(xv, divs[c]);
            wk[(2 * c + 1) * n + k] = (double)(xv - divs[c] * ref_floordiv(xv, divs[c]));
        }
        wk[6 * n + k] = (double)(k / 8 * 10 + k % 8);
        wv[k] = (double)ref_floordiv(xv, -3) + (double)(xv - 7 * ref_floordiv(xv, 7));
    }
    /* spot-check the reference itself: floor semantics */
    assert_true(wk[0] == -8 && wk[n] == 6 && wk[2 * n] == 16 && wk[3 * n] == -2 && wk[4 * n] == -7 &&
                wk[5 * n] == 6);
    assert_int_equal(tu_compare_f32("floordiv var", f32(tq), wq, nk, 0, 0), 0);
    assert_int_equal(tu_compare_f32("floormod var", f32(tr), wr, nk, 0, 0), 0);
    assert_int_equal(tu_compare_f32("floor const", f32(tk), wk, nk, 0, 0), 0);
    assert_int_equal(tu_compare_f32("floor vector", f32(tv), wv, n, 0, 0), 0);
    free(wq);
    free(wr);
    free(wk);
    rt_tensor_free(tq);
    rt_tensor_free(tr);
    rt_tensor_free(tk);
    rt_tensor_free(tv);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* The math terms of test_math for element expression a. */
static te_expr *math_expr(te_ctx *ctx, te_expr *a, int lanes) {
    te_dtype ft = TE_DTYPE(TE_FLOAT, 32, lanes);
#define C(v) (lanes > 1 ? tir_broadcast(te_float(ctx, (v)), lanes) : te_float(ctx, (v)))
    (void)ft;
    te_expr *abs1 = te_add(te_fabs(a), C(1.0));
    te_expr *a4 = te_mul(a, C(4.0));
    te_expr *terms[] = {
        te_sigmoid(a),
        te_mul(te_exp(a), te_tanh(a)),
        te_sqrt(te_fabs(a)),
        te_pow(abs1, C(1.5)),
        te_erf(a),
        te_call(TE_INTRIN_FLOOR, 1, &a4),
        te_call(TE_INTRIN_CEIL, 1, &a4),
        te_log(abs1),
        te_select(te_lt(a, C(0.0)), C(-1.0), C(1.0)),
        te_min(a, C(0.25)),
        te_max(a, C(-0.25)),
    };
#undef C
    te_expr *sum = terms[0];
    for (size_t k = 1; k < sizeof terms / sizeof terms[0]; ++k) sum = te_add(sum, terms[k]);
    assert_non_null(sum);
    return sum;
}

static double math_ref(double x) {
    return 1 / (1 + exp(-x)) + exp(x) * tanh(x) + sqrt(fabs(x)) + pow(fabs(x) + 1, 1.5) + erf(x) +
           floor(4 * x) + ceil(4 * x) + log(fabs(x) + 1) + (x < 0 ? -1 : 1) + (x < 0.25 ? x : 0.25) +
           (x > -0.25 ? x : -0.25);
}

/* Every intrinsic, select, min/max and a LIKELY guard, scalar and in
 * 8-lane vectors, against libm in double:
 *   if likely(i < n): C[i] = f(A[i]);  V[ramp(8v,1,8)] = f(A[ramp(8v,1,8)])
 * plus min/max with a NaN operand (C's a < b ? a : b picks b). */
static void test_math(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 256;
    tir_buffer *A = param1(ctx, "A", n), *C = param1(ctx, "C", n), *V = param1(ctx, "V", n);
    tir_buffer *N2 = param1(ctx, "N2", 2);
    te_expr *i = te_var(ctx, "i", TE_INT64);
    te_expr *cmp = te_lt(i, te_int(ctx, n));
    te_expr *guard = te_call(TE_INTRIN_LIKELY, 1, &cmp);
    tir_stmt *sbody = tir_if(ctx, guard, tir_store(ctx, C, i, math_expr(ctx, ld(ctx, A, i), 1), NULL), NULL);
    tir_stmt *sl = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, n), TIR_FOR_SERIAL, sbody);
    te_expr *v = te_var(ctx, "v", TE_INT64);
    te_expr *r = tir_ramp(te_mul(v, te_int(ctx, 8)), te_int(ctx, 1), 8);
    tir_stmt *vl = tir_for(ctx, v, te_int(ctx, 0), te_int(ctx, n / 8), TIR_FOR_SERIAL,
                           tir_store(ctx, V, r, math_expr(ctx, tir_load(ctx, A, r, NULL), 8), NULL));
    te_expr *nan = te_float(ctx, NAN);
    tir_stmt *n0 = tir_store(ctx, N2, te_int(ctx, 0),
                             te_add(te_min(ld(ctx, N2, te_int(ctx, 0)), te_float(ctx, 0.25)),
                                    te_max(ld(ctx, N2, te_int(ctx, 0)), te_float(ctx, -0.5))),
                             NULL);
    tir_stmt *n1 = tir_store(ctx, N2, te_int(ctx, 1), te_min(te_float(ctx, 3.0), nan), NULL);
    tir_stmt *body = tir_seq(ctx, 4, (tir_stmt *[]){sl, vl, n0, n1});
    rt_module *m = build(ctx, tir_func_new(ctx, "default", 4, (tir_buffer *[]){A, C, V, N2}, body));
    tu_assert_msg_has(rt_module_get_text(m, "ir"), "@tanhf");

    int64_t two = 2;
    DLTensor *ta = tu_rand_f32(&seed, 1, &n), *tc = tu_nan_f32(1, &n), *tv = tu_nan_f32(1, &n);
    DLTensor *tn = tu_nan_f32(1, &two);
    call_ok(m, RT_ARGS(ta, tc, tv, tn));
    double want[256];
    for (int64_t k = 0; k < n; ++k) want[k] = math_ref(f32(ta)[k]);
    assert_int_equal(tu_compare_f32("math scalar", f32(tc), want, n, 1e-5, 1e-5), 0);
    assert_int_equal(tu_compare_f32("math vector", f32(tv), want, n, 1e-5, 1e-5), 0);
    double wn[2] = {0.25 + -0.5, 3.0 < NAN ? 3.0 : NAN};
    assert_true(f32(tn)[0] == (float)wn[0]);
    assert_true(isnan(f32(tn)[1])); /* min(3, NaN) = NaN like C */
    rt_tensor_free(ta);
    rt_tensor_free(tc);
    rt_tensor_free(tv);
    rt_tensor_free(tn);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* ulp of float y's magnitude; of 0, the smallest denormal. */
static double ulp_of(float y) {
    float a = fabsf(y);
    return a == 0 ? 1.401298464e-45 : (double)nextafterf(a, INFINITY) - a;
}

/* A module "default"(A, S, V, G) over n floats: S[i] = f(A[i]) scalar,
 * V = f(A) and G = g(A) 8 lanes at a time (g NULL: G left unwritten). */
static rt_module *unary_module(te_ctx *ctx, int64_t n, te_expr *(*f)(te_expr *),
                               te_expr *(*g)(te_expr *)) {
    tir_buffer *A = param1(ctx, "A", n), *S = param1(ctx, "S", n), *V = param1(ctx, "V", n);
    tir_buffer *G = param1(ctx, "G", n);
    te_expr *i = te_var(ctx, "i", TE_INT64), *v = te_var(ctx, "v", TE_INT64);
    tir_stmt *sl = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, n), TIR_FOR_SERIAL,
                           tir_store(ctx, S, i, f(ld(ctx, A, i)), NULL));
    te_expr *r = tir_ramp(te_mul(v, te_int(ctx, 8)), te_int(ctx, 1), 8);
    tir_stmt *vs[2] = {tir_store(ctx, V, r, f(tir_load(ctx, A, r, NULL)), NULL),
                       g ? tir_store(ctx, G, r, g(tir_load(ctx, A, r, NULL)), NULL) : NULL};
    tir_stmt *vl = tir_for(ctx, v, te_int(ctx, 0), te_int(ctx, n / 8), TIR_FOR_SERIAL,
                           g ? tir_seq(ctx, 2, vs) : vs[0]);
    return build(ctx, tir_func_new(ctx, "default", 4, (tir_buffer *[]){A, S, V, G},
                                   tir_seq(ctx, 2, (tir_stmt *[]){sl, vl})));
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
    rt_module *m = unary_module(ctx, n, te_erf, NULL);
    const char *ir = rt_module_get_text(m, "ir");
    assert_null(strstr(ir, "erff"));
    tu_assert_msg_has(ir, "fdiv <8 x float>");

    DLTensor *ta = tu_rand_f32(&seed, 1, &n), *ts = tu_nan_f32(1, &n), *tv = tu_nan_f32(1, &n);
    DLTensor *tg = tu_nan_f32(1, &n);
    const float edges[] = {0.0f,     -0.0f,     1e-30f,    -1e-30f,  1e-40f, -1e-40f,
                           4.0f,     -4.0f,     3.64075f,  -3.64075f, INFINITY, -INFINITY};
    spread_inputs(f32(ta), n, -6.0f, 6.0f, edges, (int)(sizeof edges / sizeof edges[0]));
    call_ok(m, RT_ARGS(ta, ts, tv, tg));
    check_ulp("erf", erf, f32(ta), f32(ts), f32(tv), n, 8);
    rt_tensor_free(ta);
    rt_tensor_free(ts);
    rt_tensor_free(tv);
    rt_tensor_free(tg);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* float32 exp is inlined too (range reduction, a polynomial, two power-
 * of-two scalings): within 2 ulp of the double-precision exp, scalar and
 * vector, on 4,081 random inputs in [-110, 95] and the edges (0, the
 * clamp, overflow to inf, denormal results, +-inf, NaN); sigmoid uses it. */
static void test_exp_f32(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 4096;
    rt_module *m = unary_module(ctx, n, te_exp, te_sigmoid);
    const char *ir = rt_module_get_text(m, "ir");
    assert_null(strstr(ir, "@expf"));
    assert_null(strstr(ir, "@llvm.exp."));

    DLTensor *ta = tu_rand_f32(&seed, 1, &n), *ts = tu_nan_f32(1, &n), *tv = tu_nan_f32(1, &n);
    DLTensor *tg = tu_nan_f32(1, &n);
    const float edges[] = {0.0f,    -0.0f,   1e-30f,   -104.0f, -103.5f, -90.0f,    -87.5f,
                           88.72f,  88.73f,  89.0f,    100.0f,  -1e4f,   INFINITY,  -INFINITY};
    const float *x = f32(ta);
    spread_inputs(f32(ta), n, -110.0f, 95.0f, edges, (int)(sizeof edges / sizeof edges[0]));
    call_ok(m, RT_ARGS(ta, ts, tv, tg));
    check_ulp("exp", exp, x, f32(ts), f32(tv), n, 2);
    for (int64_t k = 0; k < n; ++k) {
        double sg = 1.0 / (1.0 + exp(-(double)x[k]));
        if (isnan(x[k])) assert_true(isnan(f32(tg)[k]));
        else if (!(fabs(f32(tg)[k] - sg) <= 1e-6 * fabs(sg) + 1e-37))
            fail_msg("sigmoid(%.9g) = %.9g, want %.9g", (double)x[k], (double)f32(tg)[k], sg);
    }
    rt_tensor_free(ta);
    rt_tensor_free(ts);
    rt_tensor_free(tv);
    rt_tensor_free(tg);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* Integer and float64 buffers, casts both ways, a padding-style select
 * whose untaken side would read out of bounds, and AND guards:
 *   I[i] = int32(A[i] * 100)      (truncation toward zero)
 *   D[i] = float64(I[i]) / 4 + (i >= 1 && A[i-1] > 0 ? 1 : 0)
 *   P[i] = select(i >= 2 and i < 102, A[i - 2], -7)   i in [0, 104) */
static void test_types_and_guards(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 100, np = 104;
    tir_buffer *A = param1(ctx, "A", n);
    tir_buffer *I = tir_buffer_new(ctx, "I", TE_INT32, 1, &n, TIR_SCOPE_GLOBAL);
    tir_buffer *D = tir_buffer_new(ctx, "D", TE_FLOAT64, 1, &n, TIR_SCOPE_GLOBAL);
    tir_buffer *P = param1(ctx, "P", np);
    I->is_param = D->is_param = true;
    te_expr *i = te_var(ctx, "i", TE_INT64);
    tir_stmt *s1 = tir_store(ctx, I, i, te_cast(TE_INT32, te_mul(ld(ctx, A, i), te_float(ctx, 100.0))), NULL);
    te_expr *prev = te_and(te_ge(i, te_int(ctx, 1)),
                           te_gt(ld(ctx, A, te_sub(i, te_int(ctx, 1))), te_float(ctx, 0.0)));
    te_expr *dv = te_add(te_div(te_cast(TE_FLOAT64, ld(ctx, I, i)), te_float_t(ctx, TE_FLOAT64, 4.0)),
                         te_select(prev, te_float_t(ctx, TE_FLOAT64, 1.0), te_float_t(ctx, TE_FLOAT64, 0.0)));
    tir_stmt *s2 = tir_store(ctx, D, i, dv, NULL);
    tir_stmt *l1 = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, n), TIR_FOR_SERIAL,
                           tir_seq(ctx, 2, (tir_stmt *[]){s1, s2}));
    te_expr *p = te_var(ctx, "p", TE_INT64);
    te_expr *inb = te_and(te_ge(p, te_int(ctx, 2)), te_lt(p, te_int(ctx, 102)));
    tir_stmt *l2 = tir_for(ctx, p, te_int(ctx, 0), te_int(ctx, np), TIR_FOR_SERIAL,
                           tir_store(ctx, P, p, te_select(inb, ld(ctx, A, te_sub(p, te_int(ctx, 2))),
                                                          te_float(ctx, -7.0)), NULL));
    rt_module *m = build(ctx, tir_func_new(ctx, "default", 4, (tir_buffer *[]){A, I, D, P},
                                           tir_seq(ctx, 2, (tir_stmt *[]){l1, l2})));
    DLTensor *ta = tu_rand_f32(&seed, 1, &n), *tp = tu_nan_f32(1, &np);
    DLTensor *ti = rt_tensor_alloc((DLDataType){kDLInt, 32, 1}, 1, &n);
    DLTensor *td = rt_tensor_alloc((DLDataType){kDLFloat, 64, 1}, 1, &n);
    memset(ti->data, 0x7f, (size_t)n * 4);
    for (int64_t k = 0; k < n; ++k) ((double *)td->data)[k] = NAN;
    call_ok(m, RT_ARGS(ta, ti, td, tp));
    double wp[104];
    for (int64_t k = 0; k < n; ++k) {
        int32_t want_i = (int32_t)(f32(ta)[k] * 100.0f);
        assert_int_equal(((int32_t *)ti->data)[k], want_i);
        double wd = (double)want_i / 4 + ((k >= 1 && f32(ta)[k - 1] > 0) ? 1 : 0);
        assert_true(((double *)td->data)[k] == wd);
    }
    for (int64_t k = 0; k < np; ++k) wp[k] = (k >= 2 && k < 102) ? f32(ta)[k - 2] : -7.0;
    assert_int_equal(tu_compare_f32("padding select", f32(tp), wp, np, 0, 0), 0);
    rt_tensor_free(ta);
    rt_tensor_free(tp);
    rt_tensor_free(ti);
    rt_tensor_free(td);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* Two functions in one module, with the assembly kept. */
static void test_two_funcs_and_asm(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 64;
    tir_buffer *A = param1(ctx, "A", n), *B = param1(ctx, "B", n);
    te_expr *i = te_var(ctx, "i", TE_INT64), *j = te_var(ctx, "j", TE_INT64);
    tir_func *f1 = tir_func_new(ctx, "double.it", 2, (tir_buffer *[]){A, B},
                                tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, n), TIR_FOR_SERIAL,
                                        tir_store(ctx, B, i, te_mul(ld(ctx, A, i), te_float(ctx, 2.0)), NULL)));
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
    for (int k = 0; k < n; ++k) want[k] = 2.0 * f32(a)[k];
    assert_int_equal(tu_compare_f32("func 1", f32(b), want, n, 0, 0), 0);
    assert_int_equal(rt_call(m, "fma", RT_ARGS(a, b)), 0);
    for (int k = 0; k < n; ++k) want[k] = (double)f32(a)[k] * (2.0 * f32(a)[k]) + 1.0;
    assert_int_equal(tu_compare_f32("func 2", f32(b), want, n, 1e-6, 1e-6), 0);
    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_module_free(m);
    te_ctx_free(ctx);
}

static tir_func *tiny_func(te_ctx *ctx, tir_for_kind kind) {
    tir_buffer *C = param1(ctx, "C", 4);
    te_expr *i = te_var(ctx, "i.outer", TE_INT64);
    tir_stmt *loop = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, 4), kind,
                             tir_store(ctx, C, i, te_float(ctx, 1.0), NULL));
    return tir_func_new(ctx, "default", 1, (tir_buffer *[]){C}, loop);
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
    tir_func *f = tiny_func(ctx, TIR_FOR_THREAD);
    f->body->u.loop.thread_tag = "blockIdx.x";
    const tir_func *fs[1] = {f};
    assert_null(cg_llvm_build(ctx, 1, fs, NULL));
    assert_string_equal(te_ctx_errmsg(ctx), "llvm: loop 'i.outer' is bound to blockIdx.x; the llvm "
                                            "target cannot run GPU thread bindings");
    /* leftovers of lowering */
    tir_buffer *C = param1(ctx, "C", 4);
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
    tir_buffer *X = param1(ctx, "X", 4);
    expect_error(ctx, tir_func_new(ctx, "default", 1, (tir_buffer *[]){C},
                                   tir_store(ctx, C, z, ld(ctx, X, z), NULL)),
                 NULL, "buffer 'X'", "outside its allocation");
    /* options */
    tir_func *ok = tiny_func(ctx, TIR_FOR_SERIAL);
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
    call_ok(m, RT_ARGS(c));
    for (int k = 0; k < 4; ++k) assert_true(f32(c)[k] == 1.0f);
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
    tir_func *ok = tiny_func(ctx, TIR_FOR_SERIAL);
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

/* A predicated vector store into a local buffer is a load-blend-store (so
 * the buffer can live in registers); masked-off lanes keep their values.
 * A predicated store to a parameter stays a masked store. */
static void test_local_predicated_blend(void **state) {
    (void)state;
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int L = 16;
    tir_buffer *A = param1(ctx, "A", L), *C = param1(ctx, "C", L);
    tir_buffer *T = tir_buffer_new(ctx, "T", TE_FLOAT32, 1, (int64_t[]){L}, TIR_SCOPE_LOCAL);
    te_expr *ramp = tir_ramp(te_int(ctx, 0), te_int(ctx, 1), L);
    te_expr *mask = te_lt(ramp, tir_broadcast(te_int(ctx, 5), L));
    te_expr *a = ld(ctx, A, ramp);
    tir_stmt *body = tir_seq(ctx, 3, (tir_stmt *[]){
        tir_store(ctx, T, ramp, a, NULL),
        tir_store(ctx, T, ramp, te_mul(a, a), mask),
        tir_store(ctx, C, ramp, te_add(ld(ctx, T, ramp), tir_broadcast(te_float(ctx, 1), L)),
                  te_lt(ramp, tir_broadcast(te_int(ctx, 12), L)))});
    tir_func *f = tir_func_new(ctx, "default", 2, (tir_buffer *[]){A, C}, tir_allocate(ctx, T, body));
    rt_module *m = build(ctx, f);
    const char *ir = rt_module_get_text(m, "ir");
    assert_non_null(ir);
    /* One masked store remains: the one to parameter C. */
    const char *first = strstr(ir, "call void @llvm.masked.store");
    assert_non_null(first);
    assert_null(strstr(first + 1, "call void @llvm.masked.store"));
    DLTensor *ta = tu_rand_f32(&seed, 1, (int64_t[]){L}), *tc = tu_nan_f32(1, (int64_t[]){L});
    call_ok(m, RT_ARGS(ta, tc));
    double want[16];
    for (int l = 0; l < L; ++l) {
        double x = f32(ta)[l];
        want[l] = l < 5 ? x * x + 1 : x + 1;
    }
    assert_int_equal(tu_compare_f32("blend", f32(tc), want, 12, 1e-6, 1e-6), 0);
    for (int l = 12; l < L; ++l) assert_true(isnan(f32(tc)[l])); /* never written */
    rt_tensor_free(ta);
    rt_tensor_free(tc);
    rt_module_free(m);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vector_add),
        cmocka_unit_test(test_matmul_scalar),
        cmocka_unit_test(test_vector),
        cmocka_unit_test(test_vector_clamped),
        cmocka_unit_test(test_vector_in_place),
        cmocka_unit_test(test_parallel),
        cmocka_unit_test(test_allocate),
        cmocka_unit_test(test_floor_div_mod),
        cmocka_unit_test(test_math),
        cmocka_unit_test(test_erf_f32),
        cmocka_unit_test(test_exp_f32),
        cmocka_unit_test(test_types_and_guards),
        cmocka_unit_test(test_two_funcs_and_asm),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_schedule_matmul),
        cmocka_unit_test(test_target_check),
        cmocka_unit_test(test_concurrent_builds),
        cmocka_unit_test(test_local_predicated_blend),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
