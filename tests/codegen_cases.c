/*
 * tests/codegen_cases.c — see codegen_cases.h. Each case builds its
 * program once, has the backend build every variant of it (checking the
 * backend's own expectations of the text), and runs each variant.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_cases.h"

tir_buffer *cgc_param1(te_ctx *ctx, const char *name, int64_t n) {
    tir_buffer *b = tir_buffer_new(ctx, name, TE_FLOAT32, 1, (int64_t[]){n}, TIR_SCOPE_GLOBAL);
    assert_non_null(b);
    b->is_param = true;
    return b;
}

te_expr *cgc_ld(te_ctx *ctx, tir_buffer *b, te_expr *i) { return tir_load(ctx, b, i, NULL); }

void cgc_call_ok(rt_module *m, int nargs, DLTensor *const *args) {
    int rc = rt_call(m, "default", nargs, args);
    if (rc) fprintf(stderr, "rt_call: %s\n", rt_module_errmsg(m));
    assert_int_equal(rc, 0);
}

float *cgc_f32(DLTensor *t) { return (float *)t->data; }

tir_func *cgc_tiny_func(te_ctx *ctx, tir_for_kind kind) {
    tir_buffer *C = cgc_param1(ctx, "C", 4);
    te_expr *i = te_var(ctx, "i.outer", TE_INT64);
    tir_stmt *loop = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, 4), kind,
                             tir_store(ctx, C, i, te_float(ctx, 1.0), NULL));
    return tir_func_new(ctx, "default", 1, (tir_buffer *[]){C}, loop);
}

/* Every variant of f built by b into ms, each checked by b->expect. */
static int build_all(const cgc_backend *b, cgc_id id, te_ctx *ctx, tir_func *f, rt_module **ms) {
    assert_non_null(f);
    const tir_func *fs[1] = {f};
    for (int v = 0; v < b->nvariants; v++) {
        ms[v] = b->build(ctx, 1, fs, v);
        if (!ms[v]) fprintf(stderr, "%s build (variant %d): %s\n", b->kind, v, te_ctx_errmsg(ctx));
        assert_non_null(ms[v]);
        assert_string_equal(rt_module_kind(ms[v]), b->kind);
        const char *text = rt_module_get_text(ms[v], b->text);
        if (getenv("LOOM_TEST_DUMP") && text) fputs(text, stderr);
        if (b->expect) b->expect(id, v, ms[v]);
    }
    return b->nvariants;
}

static void free_all(rt_module **ms, int n) {
    for (int v = 0; v < n; v++) rt_module_free(ms[v]);
}

/* C[i] = A[i] + B[i] */
static void case_vector_add(const cgc_backend *be) {
    uint64_t seed = tu_seed();
    const int64_t n = 1000;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = cgc_param1(ctx, "A", n), *B = cgc_param1(ctx, "B", n), *C = cgc_param1(ctx, "C", n);
    te_expr *i = te_var(ctx, "i", TE_INT64);
    tir_stmt *body = tir_store(ctx, C, i, te_add(cgc_ld(ctx, A, i), cgc_ld(ctx, B, i)), NULL);
    tir_stmt *loop = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, n), TIR_FOR_SERIAL, body);
    rt_module *ms[CGC_MAX_VARIANTS];
    int nv = build_all(be, CGC_VECTOR_ADD, ctx,
                       tir_func_new(ctx, "default", 3, (tir_buffer *[]){A, B, C}, loop), ms);
    DLTensor *a = tu_rand_f32(&seed, 1, &n), *b = tu_rand_f32(&seed, 1, &n), *c = tu_nan_f32(1, &n);
    double *want = malloc((size_t)n * sizeof *want);
    for (int64_t k = 0; k < n; ++k) want[k] = (double)cgc_f32(a)[k] + cgc_f32(b)[k];
    for (int v = 0; v < nv; ++v) {
        tu_poison_f32(c);
        cgc_call_ok(ms[v], RT_ARGS(a, b, c));
        assert_int_equal(tu_compare_f32("vector add", cgc_f32(c), want, n, 1e-6, 1e-7), 0);
    }
    /* the module checks its signature */
    int64_t n2 = n + 1;
    DLTensor *bad = tu_nan_f32(1, &n2);
    assert_int_equal(rt_call(ms[0], "default", RT_ARGS(a, b, bad)), -1);
    tu_assert_msg_has(rt_module_errmsg(ms[0]), "argument 2 ('C')", "shape [1001], expected [1000]");
    free(want);
    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_tensor_free(c);
    rt_tensor_free(bad);
    free_all(ms, nv);
    te_ctx_free(ctx);
}

/* C[i, j] = sum_k A[i, k] * B[k, j], flattened, init + update stores. */
static void case_matmul(const cgc_backend *be) {
    uint64_t seed = tu_seed();
    const int64_t M = 13, N = 17, K = 19;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = cgc_param1(ctx, "A", M * K), *B = cgc_param1(ctx, "B", K * N);
    tir_buffer *C = cgc_param1(ctx, "C", M * N);
    te_expr *i = te_var(ctx, "i", TE_INT64), *j = te_var(ctx, "j", TE_INT64);
    te_expr *k = te_var(ctx, "k", TE_INT64);
    te_expr *cij = te_add(te_mul(i, te_int(ctx, N)), j);
    tir_stmt *init = tir_store(ctx, C, cij, te_float(ctx, 0.0), NULL);
    te_expr *prod = te_mul(cgc_ld(ctx, A, te_add(te_mul(i, te_int(ctx, K)), k)),
                           cgc_ld(ctx, B, te_add(te_mul(k, te_int(ctx, N)), j)));
    tir_stmt *update = tir_store(ctx, C, cij, te_add(cgc_ld(ctx, C, cij), prod), NULL);
    tir_stmt *kloop = tir_for(ctx, k, te_int(ctx, 0), te_int(ctx, K), TIR_FOR_SERIAL, update);
    tir_stmt *jbody = tir_seq(ctx, 2, (tir_stmt *[]){init, kloop});
    tir_stmt *jloop = tir_for(ctx, j, te_int(ctx, 0), te_int(ctx, N), TIR_FOR_SERIAL, jbody);
    tir_stmt *iloop = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, M), TIR_FOR_SERIAL, jloop);
    rt_module *ms[CGC_MAX_VARIANTS];
    int nv = build_all(be, CGC_MATMUL, ctx,
                       tir_func_new(ctx, "default", 3, (tir_buffer *[]){A, B, C}, iloop), ms);
    int64_t na = M * K, nb = K * N, nc = M * N;
    DLTensor *a = tu_rand_f32(&seed, 1, &na), *b = tu_rand_f32(&seed, 1, &nb), *c = tu_nan_f32(1, &nc);
    double want[13 * 17];
    for (int64_t x = 0; x < M; ++x)
        for (int64_t y = 0; y < N; ++y) {
            double s = 0;
            for (int64_t z = 0; z < K; ++z) s += (double)cgc_f32(a)[x * K + z] * cgc_f32(b)[z * N + y];
            want[x * N + y] = s;
        }
    for (int v = 0; v < nv; ++v) {
        tu_poison_f32(c);
        cgc_call_ok(ms[v], RT_ARGS(a, b, c));
        assert_int_equal(tu_compare_f32("matmul", cgc_f32(c), want, nc, 1e-5, 1e-5), 0);
    }
    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_tensor_free(c);
    free_all(ms, nv);
    te_ctx_free(ctx);
}

/* for o in [0, 3):                 serial, captured by the closure
 *   for p in [0, 64) parallel:
 *     for q in [0, 4) parallel:    nested: runs serially
 *       C[o*256 + p*4 + q] = A[...] * float(o) + B[p]
 * on 1 and 4 threads. */
static void case_parallel(const cgc_backend *be) {
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 3 * 64 * 4;
    tir_buffer *A = cgc_param1(ctx, "A", n), *B = cgc_param1(ctx, "B", 64), *C = cgc_param1(ctx, "C", n);
    te_expr *o = te_var(ctx, "o", TE_INT64), *p = te_var(ctx, "p.outer", TE_INT64);
    te_expr *q = te_var(ctx, "q", TE_INT64);
    te_expr *idx = te_add(te_add(te_mul(o, te_int(ctx, 256)), te_mul(p, te_int(ctx, 4))), q);
    te_expr *val = te_add(te_mul(cgc_ld(ctx, A, idx), te_cast(TE_FLOAT32, o)), cgc_ld(ctx, B, p));
    tir_stmt *st = tir_store(ctx, C, idx, val, NULL);
    tir_stmt *ql = tir_for(ctx, q, te_int(ctx, 0), te_int(ctx, 4), TIR_FOR_PARALLEL, st);
    tir_stmt *pl = tir_for(ctx, p, te_int(ctx, 0), te_int(ctx, 64), TIR_FOR_PARALLEL, ql);
    tir_stmt *ol = tir_for(ctx, o, te_int(ctx, 0), te_int(ctx, 3), TIR_FOR_SERIAL, pl);
    rt_module *ms[CGC_MAX_VARIANTS];
    int nv = build_all(be, CGC_PARALLEL, ctx,
                       tir_func_new(ctx, "default", 3, (tir_buffer *[]){A, B, C}, ol), ms);
    int64_t nb = 64;
    DLTensor *a = tu_rand_f32(&seed, 1, &n), *b = tu_rand_f32(&seed, 1, &nb), *c = tu_nan_f32(1, &n);
    double *want = malloc((size_t)n * sizeof *want);
    for (int64_t x = 0; x < 3; ++x)
        for (int64_t y = 0; y < 64; ++y)
            for (int64_t z = 0; z < 4; ++z) {
                int64_t k = x * 256 + y * 4 + z;
                want[k] = (double)cgc_f32(a)[k] * (double)x + cgc_f32(b)[y];
            }
    for (int v = 0; v < nv; ++v)
        for (int T = 1; T <= 4; T += 3) {
            assert_int_equal(rt_set_num_threads(T), 0);
            tu_poison_f32(c);
            cgc_call_ok(ms[v], RT_ARGS(a, b, c));
            assert_int_equal(tu_compare_f32("parallel", cgc_f32(c), want, n, 1e-6, 1e-6), 0);
        }
    free(want);
    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_tensor_free(c);
    free_all(ms, nv);
    te_ctx_free(ctx);
}

/* A LOCAL scratch per row (stack, inside a parallel loop: one per thread)
 * and a GLOBAL 100 KB scratch (heap):
 *   allocate G[25600] global
 *   for r in [0, 25600): G[r] = A[r] * 2
 *   for i in [0, 3200) parallel:
 *     allocate T[8] local
 *     for j in [0, 8): T[j] = G[i*8 + j] + 1
 *     for j in [0, 8) unrolled: C[i*8 + j] = T[7 - j] */
static void case_allocate(const cgc_backend *be) {
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 25600;
    tir_buffer *A = cgc_param1(ctx, "A", n), *C = cgc_param1(ctx, "C", n);
    tir_buffer *G = tir_buffer_new(ctx, "G", TE_FLOAT32, 1, (int64_t[]){n}, TIR_SCOPE_GLOBAL);
    tir_buffer *T = tir_buffer_new(ctx, "T.local", TE_FLOAT32, 1, (int64_t[]){8}, TIR_SCOPE_LOCAL);
    te_expr *r = te_var(ctx, "r", TE_INT64), *i = te_var(ctx, "i", TE_INT64);
    te_expr *j = te_var(ctx, "j", TE_INT64), *j2 = te_var(ctx, "j", TE_INT64);
    tir_stmt *fill = tir_for(ctx, r, te_int(ctx, 0), te_int(ctx, n), TIR_FOR_SERIAL,
                             tir_store(ctx, G, r, te_mul(cgc_ld(ctx, A, r), te_float(ctx, 2.0)), NULL));
    te_expr *ij = te_add(te_mul(i, te_int(ctx, 8)), j);
    tir_stmt *t1 = tir_for(ctx, j, te_int(ctx, 0), te_int(ctx, 8), TIR_FOR_SERIAL,
                           tir_store(ctx, T, j, te_add(cgc_ld(ctx, G, ij), te_float(ctx, 1.0)), NULL));
    tir_stmt *t2 = tir_for(ctx, j2, te_int(ctx, 0), te_int(ctx, 8), TIR_FOR_UNROLLED,
                           tir_store(ctx, C, te_add(te_mul(i, te_int(ctx, 8)), j2),
                                     cgc_ld(ctx, T, te_sub(te_int(ctx, 7), j2)), NULL));
    tir_stmt *ibody = tir_allocate(ctx, T, tir_seq(ctx, 2, (tir_stmt *[]){t1, t2}));
    tir_stmt *il = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, n / 8), TIR_FOR_PARALLEL, ibody);
    tir_stmt *body = tir_allocate(ctx, G, tir_seq(ctx, 2, (tir_stmt *[]){fill, il}));
    rt_module *ms[CGC_MAX_VARIANTS];
    int nv = build_all(be, CGC_ALLOCATE, ctx,
                       tir_func_new(ctx, "default", 2, (tir_buffer *[]){A, C}, body), ms);
    DLTensor *a = tu_rand_f32(&seed, 1, &n), *c = tu_nan_f32(1, &n);
    double *want = malloc((size_t)n * sizeof *want);
    for (int64_t x = 0; x < n / 8; ++x)
        for (int64_t y = 0; y < 8; ++y) want[x * 8 + y] = (double)cgc_f32(a)[x * 8 + 7 - y] * 2 + 1;
    assert_int_equal(rt_set_num_threads(4), 0);
    for (int v = 0; v < nv; ++v) {
        tu_poison_f32(c);
        cgc_call_ok(ms[v], RT_ARGS(a, c));
        assert_int_equal(tu_compare_f32("allocate", cgc_f32(c), want, n, 1e-6, 1e-6), 0);
    }
    free(want);
    rt_tensor_free(a);
    rt_tensor_free(c);
    free_all(ms, nv);
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
static void case_floor_div_mod(const cgc_backend *be) {
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 100, nk = 7 * n;
    tir_buffer *Q = cgc_param1(ctx, "Q", nk), *R = cgc_param1(ctx, "R", nk), *K = cgc_param1(ctx, "K", nk);
    tir_buffer *V = cgc_param1(ctx, "V", n);
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
    rt_module *ms[CGC_MAX_VARIANTS];
    int nv = build_all(be, CGC_FLOOR_DIV_MOD, ctx,
                       tir_func_new(ctx, "default", 4, (tir_buffer *[]){Q, R, K, V}, body), ms);

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
    DLTensor *tq = tu_nan_f32(1, &nk), *tr = tu_nan_f32(1, &nk), *tk = tu_nan_f32(1, &nk);
    DLTensor *tv = tu_nan_f32(1, &n);
    for (int u = 0; u < nv; ++u) {
        DLTensor *outs[4] = {tq, tr, tk, tv};
        for (int o = 0; o < 4; ++o) tu_poison_f32(outs[o]);
        cgc_call_ok(ms[u], RT_ARGS(tq, tr, tk, tv));
        assert_int_equal(tu_compare_f32("floordiv var", cgc_f32(tq), wq, nk, 0, 0), 0);
        assert_int_equal(tu_compare_f32("floormod var", cgc_f32(tr), wr, nk, 0, 0), 0);
        assert_int_equal(tu_compare_f32("floor const", cgc_f32(tk), wk, nk, 0, 0), 0);
        assert_int_equal(tu_compare_f32("floor vector", cgc_f32(tv), wv, n, 0, 0), 0);
    }
    free(wq);
    free(wr);
    free(wk);
    rt_tensor_free(tq);
    rt_tensor_free(tr);
    rt_tensor_free(tk);
    rt_tensor_free(tv);
    free_all(ms, nv);
    te_ctx_free(ctx);
}

/* Vector code over n = 100 with 8 lanes (13 vectors, the last partial):
 *   for v in [0, 13):
 *     C[ramp(v*8, 1, 8)] = A[ramp(v*8,1,8)] * bcast(B[v]) + A[ramp(v, 12, 8)] - D[bcast(v)]
 *                          + A[ramp(v + 1, 11, 8)]   if ramp(v*8, 1, 8) < bcast(100)
 *   E[ramp(0, 1, 8) + bcast(8)] = float(ramp(0, 1, 8)) * 2  (a dense index as ramp + broadcast)
 *   E[ramp(7, -1, 8)] = B[ramp(0, 1, 8)]; E[ramp(16, 1, 8)] = A[ramp(0,1,8) * ramp(0,1,8)]
 * The predicated gather A[ramp(v, 12, 8)] reads v .. v+96 (< 100); the
 * predicate masks the dense loads and the store (lanes >= 100 do not
 * exist, so the guard matters). A[ramp(v + 1, 11, 8)] is unmasked and
 * strided, E[ramp(7, -1, 8)] a reversed store, the squares a gather
 * without a ramp. */
static void case_vector(const cgc_backend *be) {
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 100, L = 8, nv = (n + L - 1) / L;
    tir_buffer *A = cgc_param1(ctx, "A", n), *B = cgc_param1(ctx, "B", nv), *C = cgc_param1(ctx, "C", n);
    tir_buffer *D = cgc_param1(ctx, "D", nv), *E = cgc_param1(ctx, "E", 24);
    te_expr *v = te_var(ctx, "v", TE_INT64);
    te_expr *base = te_mul(v, te_int(ctx, L));
    te_expr *ramp = tir_ramp(base, te_int(ctx, 1), (int)L);
    te_expr *pred = te_lt(ramp, tir_broadcast(te_int(ctx, n), (int)L));
    assert_non_null(pred);
    assert_int_equal(pred->dtype.lanes, L);
    te_expr *a = tir_load(ctx, A, ramp, pred);
    te_expr *gather = tir_load(ctx, A, tir_ramp(v, te_int(ctx, 12), (int)L), pred);
    te_expr *strided = tir_load(ctx, A, tir_ramp(te_add(v, te_int(ctx, 1)), te_int(ctx, 11), (int)L), NULL);
    te_expr *dv = tir_load(ctx, D, tir_broadcast(v, (int)L), NULL);
    te_expr *val = te_add(te_sub(te_add(te_mul(a, tir_broadcast(cgc_ld(ctx, B, v), (int)L)), gather), dv),
                          strided);
    assert_non_null(val);
    assert_int_equal(val->dtype.lanes, L);
    tir_stmt *st = tir_store(ctx, C, ramp, val, pred);
    tir_stmt *loop = tir_for(ctx, v, te_int(ctx, 0), te_int(ctx, nv), TIR_FOR_SERIAL, st);
    te_expr *eidx = te_add(tir_ramp(te_int(ctx, 0), te_int(ctx, 1), 8), tir_broadcast(te_int(ctx, 8), 8));
    te_expr *fiota = te_cast(TE_DTYPE(TE_FLOAT, 32, 8), tir_ramp(te_int(ctx, 0), te_int(ctx, 1), 8));
    tir_stmt *e1 = tir_store(ctx, E, eidx, te_mul(fiota, tir_broadcast(te_float(ctx, 2.0), 8)), NULL);
    tir_stmt *e2 = tir_store(ctx, E, tir_ramp(te_int(ctx, 7), te_int(ctx, -1), 8),
                             tir_load(ctx, B, tir_ramp(te_int(ctx, 0), te_int(ctx, 1), 8), NULL), NULL);
    te_expr *iota = tir_ramp(te_int(ctx, 0), te_int(ctx, 1), 8);
    tir_stmt *e3 = tir_store(ctx, E, tir_ramp(te_int(ctx, 16), te_int(ctx, 1), 8),
                             tir_load(ctx, A, te_mul(iota, iota), NULL), NULL);
    tir_stmt *body = tir_seq(ctx, 4, (tir_stmt *[]){loop, e1, e2, e3});
    rt_module *ms[CGC_MAX_VARIANTS];
    int nvar = build_all(be, CGC_VECTOR, ctx,
                         tir_func_new(ctx, "default", 5, (tir_buffer *[]){A, B, C, D, E}, body), ms);

    int64_t ne = 24;
    DLTensor *ta = tu_rand_f32(&seed, 1, &n), *tb = tu_rand_f32(&seed, 1, &nv), *tc = tu_nan_f32(1, &n);
    DLTensor *td = tu_rand_f32(&seed, 1, &nv), *te = tu_nan_f32(1, &ne);
    double want[100];
    for (int64_t x = 0; x < nv; ++x)
        for (int64_t l = 0; l < L && x * L + l < n; ++l)
            want[x * L + l] = (double)cgc_f32(ta)[x * L + l] * cgc_f32(tb)[x] + cgc_f32(ta)[x + 12 * l] -
                              cgc_f32(td)[x] + cgc_f32(ta)[x + 1 + 11 * l];
    double wante[24];
    for (int l = 0; l < 8; ++l) {
        wante[8 + l] = 2.0 * l;
        wante[7 - l] = cgc_f32(tb)[l];
        wante[16 + l] = cgc_f32(ta)[l * l];
    }
    for (int u = 0; u < nvar; ++u) {
        tu_poison_f32(tc);
        tu_poison_f32(te);
        cgc_call_ok(ms[u], RT_ARGS(ta, tb, tc, td, te));
        assert_int_equal(tu_compare_f32("vector predicated", cgc_f32(tc), want, n, 1e-5, 1e-6), 0);
        assert_int_equal(tu_compare_f32("vector dense/strided/gather", cgc_f32(te), wante, 24, 0, 0), 0);
    }
    rt_tensor_free(ta);
    rt_tensor_free(tb);
    rt_tensor_free(tc);
    rt_tensor_free(td);
    rt_tensor_free(te);
    free_all(ms, nvar);
    te_ctx_free(ctx);
}

/* A dense ramp clamped into [lo, hi] (a padding stage's read):
 * C[ramp(8v, 1, 8)] = A[x8(5) + max(min(ramp(8v - 2, 1, 8), 20), 0)]
 * for v = 0, 1, 2: chunk 0 straddles lo, chunk 1 is inside, chunk 2
 * straddles hi; D the same with min(max(...)) and a predicate (22 of 24
 * lanes written); E with lo > hi (max outside: every lane lo), F likewise
 * with min outside (every lane hi); G clamped below only, max(ramp, lo),
 * H above only, min(ramp, hi), with D's predicate (the forms the
 * simplifier leaves where it proves the other bound). */
static void case_vector_clamped(const cgc_backend *be) {
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t na = 30, nc = 24, nd = 22, L = 8, lo = 0, hi = 20, off = 5;
    tir_buffer *A = cgc_param1(ctx, "A", na), *C = cgc_param1(ctx, "C", nc), *D = cgc_param1(ctx, "D", nd);
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
    /* E: bounds the wrong way round (lo 12 > hi 3): every lane is 12. */
    tir_buffer *E = cgc_param1(ctx, "E", nc);
    te_expr *ie = te_add(xoff, te_max(te_min(r, tir_broadcast(te_int(ctx, 3), (int)L)),
                                      tir_broadcast(te_int(ctx, 12), (int)L)));
    tir_stmt *se = tir_store(ctx, E, out, tir_load(ctx, A, ie, NULL), NULL);
    tir_buffer *F = cgc_param1(ctx, "F", nc);
    te_expr *iF = te_add(te_min(te_max(r, tir_broadcast(te_int(ctx, 12), (int)L)),
                                tir_broadcast(te_int(ctx, 3), (int)L)),
                         xoff);
    tir_stmt *sf = tir_store(ctx, F, out, tir_load(ctx, A, iF, NULL), NULL);
    tir_buffer *G = cgc_param1(ctx, "G", nc), *H = cgc_param1(ctx, "H", nd);
    tir_stmt *sg = tir_store(ctx, G, out, tir_load(ctx, A, te_add(xoff, te_max(r, xlo)), NULL), NULL);
    tir_stmt *sh = tir_store(ctx, H, out, tir_load(ctx, A, te_add(te_min(xhi, r), xoff), pred), pred);
    tir_stmt *loop = tir_for(ctx, v, te_int(ctx, 0), te_int(ctx, nc / L), TIR_FOR_SERIAL,
                             tir_seq(ctx, 6, (tir_stmt *[]){sc, sd, se, sf, sg, sh}));
    rt_module *ms[CGC_MAX_VARIANTS];
    int nv = build_all(
        be, CGC_VECTOR_CLAMPED, ctx,
        tir_func_new(ctx, "default", 7, (tir_buffer *[]){A, C, D, E, F, G, H}, loop), ms);
    DLTensor *ta = tu_rand_f32(&seed, 1, &na);
    double want[24], wante[24], wantf[24], wantg[24], wanth[24];
    for (int64_t p = 0; p < nc; p++) {
        int64_t i = p - 2 < lo ? lo : p - 2 > hi ? hi : p - 2;
        want[p] = cgc_f32(ta)[off + i];
        wante[p] = cgc_f32(ta)[off + 12];
        wantf[p] = cgc_f32(ta)[off + 3];
        wantg[p] = cgc_f32(ta)[off + (p - 2 < lo ? lo : p - 2)];
        wanth[p] = cgc_f32(ta)[off + (p - 2 > hi ? hi : p - 2)];
    }
    for (int k = 0; k < nv; k++) {
        DLTensor *tc = tu_nan_f32(1, &nc), *td = tu_nan_f32(1, &nd), *tE = tu_nan_f32(1, &nc);
        DLTensor *tF = tu_nan_f32(1, &nc), *tG = tu_nan_f32(1, &nc), *tH = tu_nan_f32(1, &nd);
        cgc_call_ok(ms[k], RT_ARGS(ta, tc, td, tE, tF, tG, tH));
        assert_int_equal(tu_compare_f32("clamped ramp", cgc_f32(tc), want, nc, 0, 0), 0);
        assert_int_equal(tu_compare_f32("clamped ramp, predicated", cgc_f32(td), want, nd, 0, 0), 0);
        assert_int_equal(tu_compare_f32("clamped ramp, lo > hi", cgc_f32(tE), wante, nc, 0, 0), 0);
        assert_int_equal(tu_compare_f32("clamped ramp, lo > hi, min outside", cgc_f32(tF), wantf,
                                        nc, 0, 0),
                         0);
        assert_int_equal(tu_compare_f32("clamped below only", cgc_f32(tG), wantg, nc, 0, 0), 0);
        assert_int_equal(tu_compare_f32("clamped above only, predicated", cgc_f32(tH), wanth, nd,
                                        0, 0),
                         0);
        rt_tensor_free(tG);
        rt_tensor_free(tH);
        rt_tensor_free(tc);
        rt_tensor_free(td);
        rt_tensor_free(tE);
        rt_tensor_free(tF);
    }
    rt_tensor_free(ta);
    free_all(ms, nv);
    te_ctx_free(ctx);
}

/* In-place vector shift: C[ramp(1,1,8)] = C[ramp(0,1,8)] reads all lanes
 * before writing any. */
static void case_vector_in_place(const cgc_backend *be) {
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 9;
    tir_buffer *C = cgc_param1(ctx, "C", n);
    te_expr *one = te_int(ctx, 1);
    tir_stmt *st = tir_store(ctx, C, tir_ramp(te_int(ctx, 1), one, 8),
                             tir_load(ctx, C, tir_ramp(te_int(ctx, 0), one, 8), NULL), NULL);
    rt_module *ms[CGC_MAX_VARIANTS];
    int nv = build_all(be, CGC_VECTOR_IN_PLACE, ctx,
                       tir_func_new(ctx, "default", 1, (tir_buffer *[]){C}, st), ms);
    DLTensor *c = tu_rand_f32(&seed, 1, &n);
    float in[9];
    memcpy(in, c->data, sizeof in);
    double want[9];
    want[0] = in[0];
    for (int k = 1; k < 9; ++k) want[k] = in[k - 1];
    for (int v = 0; v < nv; ++v) {
        memcpy(c->data, in, sizeof in);
        cgc_call_ok(ms[v], RT_ARGS(c));
        assert_int_equal(tu_compare_f32("vector shift", cgc_f32(c), want, n, 0, 0), 0);
    }
    rt_tensor_free(c);
    free_all(ms, nv);
    te_ctx_free(ctx);
}

/* The math terms of case_math for element expression a. */
static te_expr *math_expr(te_ctx *ctx, te_expr *a, int lanes) {
#define K(v) (lanes > 1 ? tir_broadcast(te_float(ctx, (v)), lanes) : te_float(ctx, (v)))
    te_expr *abs1 = te_add(te_fabs(a), K(1.0));
    te_expr *a4 = te_mul(a, K(4.0)), *half = te_mul(a, K(0.5));
    te_expr *terms[] = {
        te_sigmoid(a),
        te_mul(te_exp(a), te_tanh(a)),
        te_sqrt(te_fabs(a)),
        te_pow(abs1, K(1.5)),
        te_erf(a),
        te_call(TE_INTRIN_FLOOR, 1, &a4),
        te_call(TE_INTRIN_CEIL, 1, &a4),
        te_log(abs1),
        te_select(te_lt(a, K(0.0)), K(-1.0), K(1.0)),
        te_min(a, K(0.25)),
        te_max(a, K(-0.25)),
        /* rint: ties to even (2.5 -> 2), not C round's away from zero */
        te_call(TE_INTRIN_RINT, 1, &a4),
        te_call(TE_INTRIN_RINT, 1, (te_expr *[]){K(2.5)}),
        te_call(TE_INTRIN_FMOD, 2, (te_expr *[]){a4, K(0.75)}),
        te_call(TE_INTRIN_SIN, 1, &a),
        te_call(TE_INTRIN_COS, 1, &a),
        te_call(TE_INTRIN_TAN, 1, &a),
        te_call(TE_INTRIN_ASIN, 1, &half),
        te_call(TE_INTRIN_ACOS, 1, &half),
        te_call(TE_INTRIN_ATAN, 1, &a4),
        te_call(TE_INTRIN_SINH, 1, &a),
        te_call(TE_INTRIN_COSH, 1, &a),
        te_call(TE_INTRIN_ASINH, 1, &a4),
        te_call(TE_INTRIN_ACOSH, 1, &abs1),
        te_call(TE_INTRIN_ATANH, 1, &half),
    };
#undef K
    te_expr *sum = terms[0];
    for (size_t k = 1; k < sizeof terms / sizeof terms[0]; ++k) sum = te_add(sum, terms[k]);
    assert_non_null(sum);
    return sum;
}

static double math_ref(double x) {
    return 1 / (1 + exp(-x)) + exp(x) * tanh(x) + sqrt(fabs(x)) + pow(fabs(x) + 1, 1.5) + erf(x) +
           floor(4 * x) + ceil(4 * x) + log(fabs(x) + 1) + (x < 0 ? -1 : 1) + (x < 0.25 ? x : 0.25) +
           (x > -0.25 ? x : -0.25) + nearbyint(4 * x) + 2 + fmod(4 * x, 0.75) + sin(x) + cos(x) +
           tan(x) + asin(x / 2) + acos(x / 2) + atan(4 * x) + sinh(x) + cosh(x) + asinh(4 * x) +
           acosh(fabs(x) + 1) + atanh(x / 2);
}

/* Every intrinsic, select, min/max and a LIKELY guard, scalar and in
 * 8-lane vectors, against libm in double:
 *   if likely(i < n): C[i] = f(A[i]);  V[ramp(8v,1,8)] = f(A[ramp(8v,1,8)])
 * plus min/max with a NaN operand (C's a < b ? a : b picks b). */
static void case_math(const cgc_backend *be) {
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 256;
    tir_buffer *A = cgc_param1(ctx, "A", n), *C = cgc_param1(ctx, "C", n), *V = cgc_param1(ctx, "V", n);
    tir_buffer *N2 = cgc_param1(ctx, "N2", 2);
    te_expr *i = te_var(ctx, "i", TE_INT64);
    te_expr *cmp = te_lt(i, te_int(ctx, n));
    te_expr *guard = te_call(TE_INTRIN_LIKELY, 1, &cmp);
    tir_stmt *sbody =
        tir_if(ctx, guard, tir_store(ctx, C, i, math_expr(ctx, cgc_ld(ctx, A, i), 1), NULL), NULL);
    tir_stmt *sl = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, n), TIR_FOR_SERIAL, sbody);
    te_expr *v = te_var(ctx, "v", TE_INT64);
    te_expr *r = tir_ramp(te_mul(v, te_int(ctx, 8)), te_int(ctx, 1), 8);
    tir_stmt *vl = tir_for(ctx, v, te_int(ctx, 0), te_int(ctx, n / 8), TIR_FOR_SERIAL,
                           tir_store(ctx, V, r, math_expr(ctx, tir_load(ctx, A, r, NULL), 8), NULL));
    te_expr *nan = te_float(ctx, NAN);
    tir_stmt *n0 = tir_store(ctx, N2, te_int(ctx, 0),
                             te_add(te_min(cgc_ld(ctx, N2, te_int(ctx, 0)), te_float(ctx, 0.25)),
                                    te_max(cgc_ld(ctx, N2, te_int(ctx, 0)), te_float(ctx, -0.5))),
                             NULL);
    tir_stmt *n1 = tir_store(ctx, N2, te_int(ctx, 1), te_min(te_float(ctx, 3.0), nan), NULL);
    tir_stmt *body = tir_seq(ctx, 4, (tir_stmt *[]){sl, vl, n0, n1});
    rt_module *ms[CGC_MAX_VARIANTS];
    int nv = build_all(be, CGC_MATH, ctx,
                       tir_func_new(ctx, "default", 4, (tir_buffer *[]){A, C, V, N2}, body), ms);
    int64_t two = 2;
    DLTensor *ta = tu_rand_f32(&seed, 1, &n), *tc = tu_nan_f32(1, &n), *tv = tu_nan_f32(1, &n);
    DLTensor *tn = tu_nan_f32(1, &two);
    double want[256];
    for (int64_t k = 0; k < n; ++k) want[k] = math_ref(cgc_f32(ta)[k]);
    for (int u = 0; u < nv; ++u) {
        tu_poison_f32(tc);
        tu_poison_f32(tv);
        tu_poison_f32(tn); /* N2[0] is read: min/max of NaN */
        cgc_call_ok(ms[u], RT_ARGS(ta, tc, tv, tn));
        assert_int_equal(tu_compare_f32("math scalar", cgc_f32(tc), want, n, 1e-5, 1e-5), 0);
        assert_int_equal(tu_compare_f32("math vector", cgc_f32(tv), want, n, 1e-5, 1e-5), 0);
        assert_true(cgc_f32(tn)[0] == (float)(0.25 + -0.5));
        assert_true(isnan(cgc_f32(tn)[1])); /* min(3, NaN) = NaN like C */
    }
    rt_tensor_free(ta);
    rt_tensor_free(tc);
    rt_tensor_free(tv);
    rt_tensor_free(tn);
    free_all(ms, nv);
    te_ctx_free(ctx);
}

/* Integer and float64 buffers, casts both ways, a padding-style select
 * whose untaken side would read out of bounds, and AND guards:
 *   I[i] = int32(A[i] * 100)      (truncation toward zero)
 *   D[i] = float64(I[i]) / 4 + (i >= 1 && A[i-1] > 0 ? 1 : 0)
 *   P[i] = select(i >= 2 and i < 102, A[i - 2], -7)   i in [0, 104) */
static void case_types_and_guards(const cgc_backend *be) {
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int64_t n = 100, np = 104;
    tir_buffer *A = cgc_param1(ctx, "A", n);
    tir_buffer *I = tir_buffer_new(ctx, "I", TE_INT32, 1, &n, TIR_SCOPE_GLOBAL);
    tir_buffer *D = tir_buffer_new(ctx, "D", TE_FLOAT64, 1, &n, TIR_SCOPE_GLOBAL);
    tir_buffer *P = cgc_param1(ctx, "P", np);
    I->is_param = D->is_param = true;
    te_expr *i = te_var(ctx, "i", TE_INT64);
    te_expr *a100 = te_mul(cgc_ld(ctx, A, i), te_float(ctx, 100.0));
    tir_stmt *s1 = tir_store(ctx, I, i, te_cast(TE_INT32, a100), NULL);
    te_expr *prev = te_and(te_ge(i, te_int(ctx, 1)),
                           te_gt(cgc_ld(ctx, A, te_sub(i, te_int(ctx, 1))), te_float(ctx, 0.0)));
    te_expr *dv = te_add(te_div(te_cast(TE_FLOAT64, cgc_ld(ctx, I, i)), te_float_t(ctx, TE_FLOAT64, 4.0)),
                         te_select(prev, te_float_t(ctx, TE_FLOAT64, 1.0), te_float_t(ctx, TE_FLOAT64, 0.0)));
    tir_stmt *s2 = tir_store(ctx, D, i, dv, NULL);
    tir_stmt *l1 = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, n), TIR_FOR_SERIAL,
                           tir_seq(ctx, 2, (tir_stmt *[]){s1, s2}));
    te_expr *p = te_var(ctx, "p", TE_INT64);
    te_expr *inb = te_and(te_ge(p, te_int(ctx, 2)), te_lt(p, te_int(ctx, 102)));
    tir_stmt *l2 = tir_for(ctx, p, te_int(ctx, 0), te_int(ctx, np), TIR_FOR_SERIAL,
                           tir_store(ctx, P, p, te_select(inb, cgc_ld(ctx, A, te_sub(p, te_int(ctx, 2))),
                                                          te_float(ctx, -7.0)), NULL));
    rt_module *ms[CGC_MAX_VARIANTS];
    int nv = build_all(be, CGC_TYPES_AND_GUARDS, ctx,
                       tir_func_new(ctx, "default", 4, (tir_buffer *[]){A, I, D, P},
                                    tir_seq(ctx, 2, (tir_stmt *[]){l1, l2})),
                       ms);
    DLTensor *ta = tu_rand_f32(&seed, 1, &n), *tp = tu_nan_f32(1, &np);
    DLTensor *ti = rt_tensor_alloc((DLDataType){kDLInt, 32, 1}, 1, &n);
    DLTensor *td = rt_tensor_alloc((DLDataType){kDLFloat, 64, 1}, 1, &n);
    double wp[104];
    for (int64_t k = 0; k < np; ++k) wp[k] = (k >= 2 && k < 102) ? cgc_f32(ta)[k - 2] : -7.0;
    for (int u = 0; u < nv; ++u) {
        memset(ti->data, 0x7f, (size_t)n * 4);
        for (int64_t k = 0; k < n; ++k) ((double *)td->data)[k] = NAN;
        tu_poison_f32(tp);
        cgc_call_ok(ms[u], RT_ARGS(ta, ti, td, tp));
        for (int64_t k = 0; k < n; ++k) {
            int32_t want_i = (int32_t)(cgc_f32(ta)[k] * 100.0f);
            assert_int_equal(((int32_t *)ti->data)[k], want_i);
            double wd = (double)want_i / 4 + ((k >= 1 && cgc_f32(ta)[k - 1] > 0) ? 1 : 0);
            assert_true(((double *)td->data)[k] == wd);
        }
        assert_int_equal(tu_compare_f32("padding select", cgc_f32(tp), wp, np, 0, 0), 0);
    }
    rt_tensor_free(ta);
    rt_tensor_free(tp);
    rt_tensor_free(ti);
    rt_tensor_free(td);
    free_all(ms, nv);
    te_ctx_free(ctx);
}

/* A predicated vector store into a local buffer keeps the masked-off
 * lanes' values; a predicated store to a parameter leaves its masked-off
 * elements unwritten:
 *   T[0..16) = A;  T[l] = A[l]^2 where l < 5;  C[l] = T[l] + 1 where l < 12 */
static void case_local_blend(const cgc_backend *be) {
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int L = 16;
    tir_buffer *A = cgc_param1(ctx, "A", L), *C = cgc_param1(ctx, "C", L);
    tir_buffer *T = tir_buffer_new(ctx, "T", TE_FLOAT32, 1, (int64_t[]){L}, TIR_SCOPE_LOCAL);
    te_expr *ramp = tir_ramp(te_int(ctx, 0), te_int(ctx, 1), L);
    te_expr *mask = te_lt(ramp, tir_broadcast(te_int(ctx, 5), L));
    te_expr *a = cgc_ld(ctx, A, ramp);
    tir_stmt *body = tir_seq(ctx, 3, (tir_stmt *[]){
        tir_store(ctx, T, ramp, a, NULL),
        tir_store(ctx, T, ramp, te_mul(a, a), mask),
        tir_store(ctx, C, ramp, te_add(cgc_ld(ctx, T, ramp), tir_broadcast(te_float(ctx, 1), L)),
                  te_lt(ramp, tir_broadcast(te_int(ctx, 12), L)))});
    rt_module *ms[CGC_MAX_VARIANTS];
    int nv = build_all(be, CGC_LOCAL_BLEND, ctx,
                       tir_func_new(ctx, "default", 2, (tir_buffer *[]){A, C}, tir_allocate(ctx, T, body)),
                       ms);
    DLTensor *ta = tu_rand_f32(&seed, 1, (int64_t[]){L}), *tc = tu_nan_f32(1, (int64_t[]){L});
    double want[16];
    for (int l = 0; l < L; ++l) {
        double x = cgc_f32(ta)[l];
        want[l] = l < 5 ? x * x + 1 : x + 1;
    }
    for (int u = 0; u < nv; ++u) {
        tu_poison_f32(tc);
        cgc_call_ok(ms[u], RT_ARGS(ta, tc));
        assert_int_equal(tu_compare_f32("blend", cgc_f32(tc), want, 12, 1e-6, 1e-6), 0);
        for (int l = 12; l < L; ++l) assert_true(isnan(cgc_f32(tc)[l])); /* never written */
    }
    rt_tensor_free(ta);
    rt_tensor_free(tc);
    free_all(ms, nv);
    te_ctx_free(ctx);
}

/* A load of one element for all lanes under a mask (a row's A[i, k] in a
 * register tile's column tail), read only where a lane is on:
 *   for (j, 0, 3) C[j*16 + l] = A[j] * B[j*16 + l] where j*16 + l < 20
 * A has 2 elements: j = 2 has no lane on and must not read A[2]. */
static void case_broadcast_masked(const cgc_backend *be) {
    uint64_t seed = tu_seed();
    te_ctx *ctx = te_ctx_new();
    const int L = 16, n = 48, m = 20;
    tir_buffer *A = cgc_param1(ctx, "A", 2), *B = cgc_param1(ctx, "B", n),
               *C = cgc_param1(ctx, "C", n);
    te_expr *j = te_var(ctx, "j", TE_INT64);
    te_expr *ramp = tir_ramp(te_mul(j, te_int(ctx, L)), te_int(ctx, 1), L);
    te_expr *mask = te_lt(ramp, tir_broadcast(te_int(ctx, m), L));
    te_expr *a = tir_load(ctx, A, tir_broadcast(j, L), mask);
    tir_stmt *st = tir_store(ctx, C, ramp, te_mul(a, tir_load(ctx, B, ramp, mask)), mask);
    rt_module *ms[CGC_MAX_VARIANTS];
    int nv = build_all(be, CGC_BROADCAST_MASKED, ctx,
                       tir_func_new(ctx, "default", 3, (tir_buffer *[]){A, B, C},
                                    tir_for(ctx, j, te_int(ctx, 0), te_int(ctx, 3),
                                            TIR_FOR_SERIAL, st)),
                       ms);
    int64_t two = 2, nn = n;
    DLTensor *ta = tu_rand_f32(&seed, 1, &two), *tb = tu_rand_f32(&seed, 1, &nn),
             *tc = tu_nan_f32(1, &nn);
    double want[20];
    for (int k = 0; k < m; ++k) want[k] = (double)cgc_f32(ta)[k / L] * cgc_f32(tb)[k];
    for (int u = 0; u < nv; ++u) {
        tu_poison_f32(tc);
        cgc_call_ok(ms[u], RT_ARGS(ta, tb, tc));
        assert_int_equal(tu_compare_f32("broadcast under a mask", cgc_f32(tc), want, m, 1e-6, 1e-6),
                         0);
        for (int k = m; k < n; ++k) assert_true(isnan(cgc_f32(tc)[k])); /* never written */
    }
    rt_tensor_free(ta);
    rt_tensor_free(tb);
    rt_tensor_free(tc);
    free_all(ms, nv);
    te_ctx_free(ctx);
}

static const struct {
    const char *name;
    void (*run)(const cgc_backend *b);
} cases[CGC_NCASES] = {
    [CGC_VECTOR_ADD] = {"vector_add", case_vector_add},
    [CGC_MATMUL] = {"matmul", case_matmul},
    [CGC_PARALLEL] = {"parallel", case_parallel},
    [CGC_ALLOCATE] = {"allocate", case_allocate},
    [CGC_FLOOR_DIV_MOD] = {"floor_div_mod", case_floor_div_mod},
    [CGC_VECTOR] = {"vector", case_vector},
    [CGC_VECTOR_CLAMPED] = {"vector_clamped", case_vector_clamped},
    [CGC_VECTOR_IN_PLACE] = {"vector_in_place", case_vector_in_place},
    [CGC_MATH] = {"math", case_math},
    [CGC_TYPES_AND_GUARDS] = {"types_and_guards", case_types_and_guards},
    [CGC_LOCAL_BLEND] = {"local_predicated_blend", case_local_blend},
    [CGC_BROADCAST_MASKED] = {"broadcast_masked", case_broadcast_masked},
};

/* cmocka hands each test its own state: the backend and the case. */
typedef struct {
    const cgc_backend *b;
    cgc_id id;
} cgc_run;
static cgc_run runs[CGC_NCASES];

static void run_case(void **state) {
    const cgc_run *r = *state;
    cases[r->id].run(r->b);
}

int cgc_add_tests(const cgc_backend *b, struct CMUnitTest *tests) {
    for (int k = 0; k < CGC_NCASES; k++) {
        runs[k].b = b;
        runs[k].id = (cgc_id)k;
        tests[k] = (struct CMUnitTest){cases[k].name, run_case, NULL, NULL, &runs[k]};
    }
    return CGC_NCASES;
}
