/*
 * Cost-model features (cost_model/features.c): names and layout, values
 * on small programs worked out by hand, agreement before and after
 * vectorization, annotations, GPU thread extents, allocation, log scale,
 * determinism, the CSV dump, errors, and the extraction speed (printed,
 * not asserted).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched_harness.h"

#define F CM_NUM_FEATURES

static int idx(const char *name) {
    int i = cm_feature_index(name);
    if (i < 0) fprintf(stderr, "no feature named '%s'\n", name);
    assert_true(i >= 0);
    return i;
}
/* feature `name` of statement r */
static double fv(const float *v, int r, const char *name) { return v[(size_t)r * F + idx(name)]; }
static void check_feat(const float *v, int r, const char *name, double want, int line) {
    double got = fv(v, r, name);
    if (!(fabs(got - want) <= 1e-4 * (1 + fabs(want)))) {
        fprintf(stderr, "line %d: statement %d feature %s = %g, want %g\n", line, r, name, got,
                want);
        fail();
    }
}
#define assert_feat(v, r, name, want) check_feat((v), (r), (name), (double)(want), __LINE__)

static void test_names(void **state) {
    (void)state;
    assert_int_equal(cm_num_features(), 173);
    assert_string_equal(cm_feature_name(0), "float_mad");
    assert_string_equal(cm_feature_name(16), "vec_num");
    assert_string_equal(cm_feature_name(19), "vec_type.kPosNone");
    assert_string_equal(cm_feature_name(49), "is_gpu");
    assert_string_equal(cm_feature_name(57), "B0.acc_type.kRead");
    assert_string_equal(cm_feature_name(57 + 18 * 4 + 17), "B4.stride");
    assert_string_equal(cm_feature_name(147), "arith_intensity_curve_0");
    assert_string_equal(cm_feature_name(157), "alloc_size");
    assert_string_equal(cm_feature_name(163), "auto_unroll_max_step");
    assert_string_equal(cm_feature_name(164), "vec_lane_waste");
    assert_string_equal(cm_feature_name(165), "store.reuse_dis_iter");
    assert_string_equal(cm_feature_name(167), "store.reuse_ct");
    assert_string_equal(cm_feature_name(168), "tc_mma_flops");
    assert_string_equal(cm_feature_name(169), "tc_fragment_loads");
    assert_string_equal(cm_feature_name(170), "pipeline_stages");
    assert_string_equal(cm_feature_name(171), "tc_wgmma_calls");
    assert_string_equal(cm_feature_name(172), "tc_wgmma_n");
    assert_null(cm_feature_name(-1));
    assert_null(cm_feature_name(173));
    for (int i = 0; i < F; i++) {
        assert_int_equal(cm_feature_index(cm_feature_name(i)), i); /* names are unique */
        assert_true(strlen(cm_feature_name(i)) > 0);
    }
    assert_int_equal(cm_feature_index("no_such_feature"), -1);
}

/*
 * for (i, 0, 8) for (j, 0, 16) C[i*16 + j] = A[i*16 + j] + B[j]   (float32)
 * By hand (Ansor's definitions, cache line 64 bytes):
 *   float_addsub 128, int_mad 128 (A's index), outer_prod 128, 2 loops;
 *   C and A: bytes 512, unique 512, stride 1, lines 128*4/64 = 8,
 *            unique_lines 512/64 = 8, no reuse (both loops index them);
 *   B: bytes 512, unique 64, lines 8, unique_lines 1, reused across i:
 *      LoopMultipleRead, reuse_ct 8, distance 16 iterations and
 *      (16+16+16)*4 = 192 bytes (what loop j touches).
 *   Arithmetic intensity: loop j: 16 FLOP / 192 B; loop i: 128 / 1088
 *   (C 128 + A 128 + B 16 elements).
 * Ties in (lines, bytes) keep access order: C (written) first, then A, B.
 */
static tir_func *two_level(te_ctx *ctx) {
    tir_buffer *A = tir_buffer_new(ctx, "A", TE_FLOAT32, 1, (int64_t[]){128}, TIR_SCOPE_GLOBAL);
    tir_buffer *B = tir_buffer_new(ctx, "B", TE_FLOAT32, 1, (int64_t[]){16}, TIR_SCOPE_GLOBAL);
    tir_buffer *C = tir_buffer_new(ctx, "C", TE_FLOAT32, 1, (int64_t[]){128}, TIR_SCOPE_GLOBAL);
    A->is_param = B->is_param = C->is_param = true;
    te_expr *i = te_var(ctx, "i", TE_INT64), *j = te_var(ctx, "j", TE_INT64);
    te_expr *ij = te_add(te_mul(i, te_int(ctx, 16)), j);
    te_expr *val = te_add(tir_load(ctx, A, ij, NULL), tir_load(ctx, B, j, NULL));
    tir_stmt *st = tir_store(ctx, C, ij, val, NULL);
    tir_stmt *lj = tir_for(ctx, j, te_int(ctx, 0), te_int(ctx, 16), TIR_FOR_SERIAL, st);
    tir_stmt *li = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, 8), TIR_FOR_SERIAL, lj);
    return tir_func_new(ctx, "two_level", 3, (tir_buffer *[]){A, B, C}, li);
}

static void test_two_level_by_hand(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_func *f = two_level(ctx);
    assert_non_null(f);
    float *v;
    int n;
    const char **names;
    cm_extract_options raw = {.raw = true};
    assert_int_equal(cm_extract_ex(ctx, f, &raw, &v, &n, &names), 0);
    assert_int_equal(n, 1);
    assert_string_equal(names[0], "C");
    assert_feat(v, 0, "float_addsub", 128);
    assert_feat(v, 0, "float_mul", 0);
    assert_feat(v, 0, "int_mad", 128);
    assert_feat(v, 0, "outer_prod", 128);
    assert_feat(v, 0, "num_loops", 2);
    assert_feat(v, 0, "vec_num", 0);
    assert_feat(v, 0, "vec_type.kPosNone", 1);
    assert_feat(v, 0, "is_gpu", 0);
    assert_feat(v, 0, "threadIdx_x_len", 0);
    /* C */
    assert_feat(v, 0, "B0.acc_type.kWrite", 1);
    assert_feat(v, 0, "B0.bytes", 512);
    assert_feat(v, 0, "B0.unique_bytes", 512);
    assert_feat(v, 0, "B0.lines", 8);
    assert_feat(v, 0, "B0.unique_lines", 8);
    assert_feat(v, 0, "B0.reuse_type.kNoReuse", 1);
    assert_feat(v, 0, "B0.bytes_d_reuse_ct", 1024); /* no reuse: x2 (Ansor) */
    assert_feat(v, 0, "B0.stride", 1);
    assert_feat(v, 0, "store.reuse_ct", 0); /* C: no reuse */
    assert_feat(v, 0, "store.reuse_dis_iter", 0);
    /* A */
    assert_feat(v, 0, "B1.acc_type.kRead", 1);
    assert_feat(v, 0, "B1.unique_bytes", 512);
    assert_feat(v, 0, "B1.reuse_type.kNoReuse", 1);
    /* B: reused by every iteration of i */
    assert_feat(v, 0, "B2.acc_type.kRead", 1);
    assert_feat(v, 0, "B2.bytes", 512);
    assert_feat(v, 0, "B2.unique_bytes", 64);
    assert_feat(v, 0, "B2.lines", 8);
    assert_feat(v, 0, "B2.unique_lines", 1);
    assert_feat(v, 0, "B2.reuse_type.kLoopMultipleRead", 1);
    assert_feat(v, 0, "B2.reuse_dis_iter", 16);
    assert_feat(v, 0, "B2.reuse_dis_bytes", 192);
    assert_feat(v, 0, "B2.reuse_ct", 8);
    assert_feat(v, 0, "B2.bytes_d_reuse_ct", 64);
    assert_feat(v, 0, "B2.unique_bytes_d_reuse_ct", 8);
    assert_feat(v, 0, "B2.stride", 1);
    assert_feat(v, 0, "B3.bytes", 0); /* absent buffers are zero */
    /* The curve (log scale) runs from log2 16 / log2 192 (inner loop) to
     * log2 128 / log2 1088 (whole nest); x = log2 flops = 4 then 7, the
     * samples at 0.7, 1.4, ..., 7: the first five (x <= 4) take the inner
     * loop's point, the rest interpolate towards the whole nest's. */
    double y0 = 4 / log2(192), y1 = 7 / log2(1088);
    assert_feat(v, 0, "arith_intensity_curve_0", y0);
    assert_feat(v, 0, "arith_intensity_curve_4", y0);
    assert_feat(v, 0, "arith_intensity_curve_5", y0 + (y1 - y0) / (7 - 4) * (4.2 - 4));
    assert_feat(v, 0, "arith_intensity_curve_9", y1);
    assert_feat(v, 0, "alloc_size", 0);
    free(v);
    free(names);
    te_ctx_free(ctx);
}

/* C[i, j] = sum_k A[i, k] * B[k, j], 8x8x8, default schedule:
 *   for i, for j { C = 0; for k: C = C + A[i*8+k] * B[k*8+j] } */
static void test_matmul_reuse(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_matmul(ctx, 8, 8, 8);
    sch_schedule *s = sch_create(ctx, TE_TENSORS(c.out));
    float *v;
    int n;
    cm_extract_options raw = {.raw = true};
    assert_int_equal(
        cm_extract_schedule(s, TE_TENSORS(c.in[0], c.in[1], c.out), &raw, &v, &n), 0);
    assert_int_equal(n, 2); /* init and update */
    /* init: 64 stores of a constant */
    assert_feat(v, 0, "float_addsub", 0);
    assert_feat(v, 0, "outer_prod", 64);
    assert_feat(v, 0, "B0.acc_type.kWrite", 1);
    assert_feat(v, 0, "B0.unique_bytes", 256);
    /* update: one multiply-add per iteration */
    assert_feat(v, 1, "float_mad", 512);
    assert_feat(v, 1, "float_addsub", 0);
    assert_feat(v, 1, "float_mul", 0);
    assert_feat(v, 1, "outer_prod", 512);
    assert_feat(v, 1, "num_loops", 3);
    /* B (stride 8 along k: a cache line per 2 iterations) has most lines */
    assert_feat(v, 1, "B0.acc_type.kRead", 1);
    assert_feat(v, 1, "B0.lines", 512 * 0.5);
    assert_feat(v, 1, "B0.stride", 8);
    assert_feat(v, 1, "B0.reuse_type.kLoopMultipleRead", 1);
    assert_feat(v, 1, "B0.reuse_ct", 8);       /* across i */
    assert_feat(v, 1, "B0.reuse_dis_iter", 64); /* j x k */
    /* A: reused across j, distance the k loop */
    assert_feat(v, 1, "B1.acc_type.kRead", 1);
    assert_feat(v, 1, "B1.reuse_ct", 8);
    assert_feat(v, 1, "B1.reuse_dis_iter", 8);
    assert_feat(v, 1, "B1.reuse_dis_bytes", (1 + 8 + 8) * 4);
    /* C: read and written, reused by every k */
    assert_feat(v, 1, "B2.acc_type.kReadWrite", 1);
    assert_feat(v, 1, "B2.unique_bytes", 256);
    assert_feat(v, 1, "B2.reuse_type.kLoopMultipleRead", 1);
    assert_feat(v, 1, "B2.reuse_ct", 8);
    assert_feat(v, 1, "B2.stride", 0); /* not indexed by the innermost loop */
    assert_feat(v, 1, "B2.lines", 512 / 8 * (4.0 / 64));
    /* the stored buffer's reuse at fixed positions, whichever slot C takes:
     * k (innermost) does not index C, so the distance is one iteration and
     * the bytes of one access to each buffer (C, A, B: 3 x 4) */
    assert_feat(v, 1, "store.reuse_dis_iter", 1);
    assert_feat(v, 1, "store.reuse_dis_bytes", 12);
    assert_feat(v, 1, "store.reuse_ct", 8);
    assert_feat(v, 1, "store.reuse_dis_iter", fv(v, 1, "B2.reuse_dis_iter"));
    assert_feat(v, 1, "store.reuse_dis_bytes", fv(v, 1, "B2.reuse_dis_bytes"));
    assert_feat(v, 0, "store.reuse_ct", 0); /* init: C written once per element */
    /* the same from sch_lower's multi-dimensional accesses (linearised by
     * the buffers' strides), except the integer operations that flattening
     * adds to the indices */
    tir_func *f = sch_lower(s, TE_TENSORS(c.in[0], c.in[1], c.out), "mm");
    assert_non_null(f);
    float *w;
    int m;
    assert_int_equal(cm_extract_ex(ctx, f, &raw, &w, &m, NULL), 0);
    assert_int_equal(m, 2);
    for (int i = 0; i < 2 * F; i++)
        if ((i % F < idx("int_mad") || i % F > idx("int_otherfunc")) && fabsf(v[i] - w[i]) > 1e-4f * (1 + fabsf(v[i])))
            fail_msg("feature %s of statement %d: %g flat, %g multi-dimensional",
                     cm_feature_name(i % F), i / F, v[i], w[i]);
    free(w);
    free(v);
    te_ctx_free(ctx);
}

/* A vectorized, parallel, pragma'd tile: the annotation features; and the
 * same program after the whole pipeline (vector code) gives the same
 * counts and vector length. */
static void test_annotations_and_vector_code(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_matmul(ctx, 64, 64, 32);
    sch_schedule *s = sch_create(ctx, TE_TENSORS(c.out));
    te_expr *io, *jo, *ii, *ji, *ko, *ki;
    te_tensor *C = c.out;
    assert_int_equal(sch_tile(s, C, c.ax[0], c.ax[1], 8, 16, &io, &jo, &ii, &ji) ||
                         sch_split(s, C, c.rax[0], 4, &ko, &ki) ||
                         sch_reorder(s, C, TE_AXES(io, jo, ko, ki, ii, ji)) ||
                         sch_vectorize(s, C, ji) || sch_parallel(s, C, io) ||
                         sch_pragma(s, C, io, "auto_unroll_max_step", 16),
                     0);
    te_tensor *args[3] = {c.in[0], c.in[1], C};
    float *v;
    int n;
    cm_extract_options raw = {.raw = true};
    assert_int_equal(cm_extract_schedule(s, 3, args, &raw, &v, &n), 0);
    assert_int_equal(n, 2);
    int u = 1; /* the update */
    assert_feat(v, u, "float_mad", 64.0 * 64 * 32);
    assert_feat(v, u, "vec_num", 1);
    assert_feat(v, u, "vec_len", 16);
    assert_feat(v, u, "vec_prod", 16);
    assert_feat(v, u, "vec_type.kPosInnerSpatial", 1);
    assert_feat(v, u, "parallel_num", 1);
    assert_feat(v, u, "parallel_len", 8);
    assert_feat(v, u, "parallel_type.kPosOuterSpatial", 1);
    /* The tuner's view: the loop the pragma would unroll is marked (one
     * UNROLLED loop), not copied. */
    assert_feat(v, u, "unroll_num", 1);
    assert_feat(v, u, "auto_unroll_max_step", 16);
    assert_feat(v, u, "outer_prod", 64.0 * 64 * 32);

    /* after tir_run_pipeline: vector stores carry the lanes */
    tir_func *f = sch_lower(s, 3, args, "mm");
    assert_non_null(f);
    f = tir_run_pipeline(ctx, f, NULL);
    assert_non_null(f);
    float *w;
    int m;
    assert_int_equal(cm_extract_ex(ctx, f, &raw, &w, &m, NULL), 0);
    assert_true(m >= 2);
    int wu = m - 1; /* the last store is an update */
    assert_feat(w, wu, "vec_len", 16);
    assert_feat(w, wu, "vec_type.kPosInnerSpatial", 1);
    assert_feat(w, wu, "parallel_len", 8);
    double mad = 0;
    for (int r = 0; r < m; r++) mad += fv(w, r, "float_mad");
    assert_float_equal(mad, 64.0 * 64 * 32, 1e-3);
    free(v);
    free(w);
    te_ctx_free(ctx);
}

/* for (i, 0, 4) for (j, 0, len) vectorized: C[i*len + j] = A[i*len + j] * 2, in dtype t */
static tir_func *vector_loop(te_ctx *ctx, int64_t len, te_dtype t, tir_for_kind kind) {
    tir_buffer *A = tir_buffer_new(ctx, "A", t, 1, (int64_t[]){4 * len}, TIR_SCOPE_GLOBAL);
    tir_buffer *C = tir_buffer_new(ctx, "C", t, 1, (int64_t[]){4 * len}, TIR_SCOPE_GLOBAL);
    A->is_param = C->is_param = true;
    te_expr *i = te_var(ctx, "i", TE_INT64), *j = te_var(ctx, "j", TE_INT64);
    te_expr *ij = te_add(te_mul(i, te_int(ctx, len)), j);
    te_expr *val = te_mul(tir_load(ctx, A, ij, NULL), te_float_t(ctx, t, 2.0));
    tir_stmt *st = tir_store(ctx, C, ij, val, NULL);
    tir_stmt *lj = tir_for(ctx, j, te_int(ctx, 0), te_int(ctx, len), kind, st);
    tir_stmt *li = tir_for(ctx, i, te_int(ctx, 0), te_int(ctx, 4), TIR_FOR_SERIAL, lj);
    return tir_func_new(ctx, "vector_loop", 2, (tir_buffer *[]){A, C}, li);
}

/* vec_lane_waste = (ceil(len/L)*L - len) / (ceil(len/L)*L), L = vector
 * bytes / element bytes, by hand; the same after tir_pass_vectorize (a
 * vector store's lanes); 0 without a vectorized loop; log-scaled like the
 * rest unless raw. */
static void test_vec_lane_waste(void **state) {
    (void)state;
    static const struct {
        int64_t len;
        te_dtype t;
        int vector_bytes; /* 0: the default, 64 */
        tir_for_kind kind;
        double want;
    } cases[] = {
        {24, TE_FLOAT32, 0, TIR_FOR_VECTORIZED, 8.0 / 32},  /* 16 lanes: 1.5 registers */
        {16, TE_FLOAT32, 0, TIR_FOR_VECTORIZED, 0},
        {8, TE_FLOAT32, 64, TIR_FOR_VECTORIZED, 0.5},       /* half a register */
        {24, TE_FLOAT32, 32, TIR_FOR_VECTORIZED, 0},        /* 8 lanes: 3 registers */
        {12, TE_FLOAT32, 32, TIR_FOR_VECTORIZED, 4.0 / 16},
        {12, TE_FLOAT64, 64, TIR_FOR_VECTORIZED, 4.0 / 16}, /* 8 double lanes */
        {3, TE_FLOAT32, 16, TIR_FOR_VECTORIZED, 1.0 / 4},   /* a float4 with one idle */
        {24, TE_FLOAT32, 0, TIR_FOR_SERIAL, 0},             /* nothing vectorized */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        te_ctx *ctx = te_ctx_new();
        tir_func *f = vector_loop(ctx, cases[k].len, cases[k].t, cases[k].kind);
        assert_non_null(f);
        cm_extract_options raw = {.raw = true, .vector_bytes = cases[k].vector_bytes};
        cm_extract_options scaled = {.vector_bytes = cases[k].vector_bytes};
        float *v, *g;
        int n;
        assert_int_equal(cm_extract_ex(ctx, f, &raw, &v, &n, NULL), 0);
        assert_int_equal(n, 1);
        if (fabs(fv(v, 0, "vec_lane_waste") - cases[k].want) > 1e-6)
            fail_msg("case %zu (len %lld, %d bytes): vec_lane_waste %g, want %g", k,
                     (long long)cases[k].len, cases[k].vector_bytes, fv(v, 0, "vec_lane_waste"),
                     cases[k].want);
        assert_int_equal(cm_extract_ex(ctx, f, &scaled, &g, &n, NULL), 0);
        assert_feat(g, 0, "vec_lane_waste", log2(1 + cases[k].want));
        if (cases[k].kind == TIR_FOR_VECTORIZED) {
            tir_func *vf = tir_pass_vectorize(ctx, f, NULL);
            assert_non_null(vf);
            float *x;
            assert_int_equal(cm_extract_ex(ctx, vf, &raw, &x, &n, NULL), 0);
            /* More than 16 lanes and not a power of two: pieces of 8
             * (tir/pass_vectorize.c), each store its own vector. */
            int64_t len = cases[k].len, piece = len > 16 && (len & (len - 1)) ? 8 : len;
            int64_t lanes = (cases[k].vector_bytes ? cases[k].vector_bytes : 64) / (cases[k].t.bits / 8);
            int64_t regs = (piece + lanes - 1) / lanes * lanes;
            assert_int_equal(n, len / piece);
            assert_feat(x, 0, "vec_len", piece);
            assert_feat(x, 0, "vec_lane_waste", (double)(regs - piece) / (double)regs);
            free(x);
        }
        free(v), free(g);
        te_ctx_free(ctx);
    }
}

/* A hand-built GPU kernel: thread extents, vthread, is_gpu. */
static void test_gpu_threads(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = tir_buffer_new(ctx, "A", TE_FLOAT32, 1, (int64_t[]){256}, TIR_SCOPE_GLOBAL);
    te_expr *bx = te_var(ctx, "blockIdx.x", TE_INT64), *tx = te_var(ctx, "threadIdx.x", TE_INT64);
    te_expr *ix = te_add(te_mul(bx, te_int(ctx, 64)), tx);
    tir_stmt *st = tir_store(ctx, A, ix, te_mul(tir_load(ctx, A, ix, NULL), te_float(ctx, 2)), NULL);
    tir_stmt *lt = tir_for(ctx, tx, te_int(ctx, 0), te_int(ctx, 64), TIR_FOR_THREAD, st);
    lt->u.loop.thread_tag = "threadIdx.x";
    tir_stmt *lb = tir_for(ctx, bx, te_int(ctx, 0), te_int(ctx, 4), TIR_FOR_THREAD, lt);
    lb->u.loop.thread_tag = "blockIdx.x";
    tir_func *f = tir_func_new(ctx, "k", 1, (tir_buffer *[]){A}, lb);
    float *v;
    int n;
    cm_extract_options raw = {.raw = true};
    assert_int_equal(cm_extract_ex(ctx, f, &raw, &v, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_feat(v, 0, "is_gpu", 1);
    assert_feat(v, 0, "blockIdx_x_len", 4);
    assert_feat(v, 0, "threadIdx_x_len", 64);
    assert_feat(v, 0, "threadIdx_y_len", 1);
    assert_feat(v, 0, "vthread_len", 1);
    assert_feat(v, 0, "float_mul", 256);
    assert_feat(v, 0, "parallel_num", 0); /* thread loops are not parallel loops */
    assert_feat(v, 0, "B0.acc_type.kReadWrite", 1);
    assert_feat(v, 0, "B0.unique_bytes", 1024);
    free(v);
    te_ctx_free(ctx);
}

/* cache_write to a local buffer computed at an outer loop: the local
 * store carries the allocation's size and position. */
static void test_allocation(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_matmul(ctx, 32, 32, 16);
    sch_schedule *s = sch_create(ctx, TE_TENSORS(c.out));
    te_tensor *CL = sch_cache_write(s, c.out, "local");
    assert_non_null(CL);
    te_expr *io, *jo, *ii, *ji;
    assert_int_equal(sch_tile(s, c.out, c.ax[0], c.ax[1], 4, 8, &io, &jo, &ii, &ji), 0);
    assert_int_equal(sch_compute_at(s, CL, c.out, jo), 0);
    float *v;
    int n;
    const char **names;
    cm_extract_options raw = {.raw = true};
    tir_func *f = sch_lower(s, TE_TENSORS(c.in[0], c.in[1], c.out), "mm");
    assert_non_null(f);
    f = tir_run_pipeline(ctx, f, NULL);
    assert_non_null(f);
    assert_int_equal(cm_extract_ex(ctx, f, &raw, &v, &n, &names), 0);
    int found = 0;
    for (int r = 0; r < n; r++) {
        if (fv(v, r, "alloc_size") == 0) continue;
        found++;
        assert_feat(v, r, "alloc_size", 4 * 8 * 4);        /* a 4x8 float tile */
        assert_feat(v, r, "alloc_outer_prod", 8 * 4);       /* io x jo */
        assert_feat(v, r, "alloc_prod", 4 * 8 * 8 * 4);
        assert_float_equal(fv(v, r, "alloc_inner_prod") * 32,
                           fv(v, r, "outer_prod"), 1e-3);
    }
    assert_true(found >= 2); /* init and update of the local tile */
    free(v);
    free(names);
    te_ctx_free(ctx);
}

static void test_log_scale_and_determinism(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_func *f = two_level(ctx);
    float *raw, *lg, *again;
    int n1, n2, n3;
    cm_extract_options ro = {.raw = true};
    assert_int_equal(cm_extract_ex(ctx, f, &ro, &raw, &n1, NULL), 0);
    assert_int_equal(cm_extract(ctx, f, &lg, &n2), 0);
    assert_int_equal(cm_extract(ctx, f, &again, &n3), 0);
    assert_int_equal(n1, n2);
    assert_memory_equal(lg, again, sizeof(float) * F * (size_t)n2);
    for (int i = 0; i < F; i++) {
        const char *nm = cm_feature_name(i);
        bool onehot = strstr(nm, "_type.") || strstr(nm, "acc_type") || !strcmp(nm, "is_gpu");
        double want = onehot ? raw[i] : log2(1 + raw[i]);
        assert_float_equal(lg[i], want, 1e-5 * (1 + fabs(want)));
    }
    free(raw), free(lg), free(again);
    te_ctx_free(ctx);
}

static void test_csv(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_func *f = two_level(ctx);
    te_str out;
    te_str_init(&out);
    assert_int_equal(cm_features_csv(ctx, f, NULL, &out), 0);
    assert_non_null(strstr(out.data, "stmt,buffer,float_mad,float_addsub,"));
    assert_non_null(strstr(out.data, ",auto_unroll_max_step,vec_lane_waste,store.reuse_dis_iter,"
                              "store.reuse_dis_bytes,store.reuse_ct,tc_mma_flops,tc_fragment_loads,"
                              "pipeline_stages,tc_wgmma_calls,tc_wgmma_n\n0,C,"));
    int lines = 0, commas = 0;
    for (const char *p = out.data; *p; p++) lines += *p == '\n', commas += *p == ',';
    assert_int_equal(lines, 2);
    assert_int_equal(commas, 2 * (F + 1));
    te_str_free(&out);
    te_ctx_free(ctx);
}

static void test_errors(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    float *v = (float *)1;
    int n = 5;
    assert_int_equal(cm_extract(ctx, NULL, &v, &n), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "cm_extract", "NULL");
    assert_null(v);
    assert_int_equal(n, 0);
    assert_int_equal(cm_features_csv(ctx, two_level(ctx), NULL, NULL), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "cm_features_csv", "NULL");
    /* a program without stores has no rows */
    tir_func *g = tir_func_new(ctx, "empty", 0, NULL, tir_noop(ctx));
    assert_int_equal(cm_extract(ctx, g, &v, &n), 0);
    assert_int_equal(n, 0);
    assert_null(v);
    te_ctx_free(ctx);
}

/* Lowering + extraction of a tiled 512^3 matmul, timed (printed only). */
static void test_speed(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_matmul(ctx, 512, 512, 512);
    sch_schedule *s = sch_create(ctx, TE_TENSORS(c.out));
    te_expr *io, *jo, *ii, *ji, *ko, *ki;
    assert_int_equal(sch_tile(s, c.out, c.ax[0], c.ax[1], 32, 32, &io, &jo, &ii, &ji) ||
                         sch_split(s, c.out, c.rax[0], 4, &ko, &ki) ||
                         sch_reorder(s, c.out, TE_AXES(io, jo, ko, ii, ki, ji)) ||
                         sch_vectorize(s, c.out, ji) || sch_parallel(s, c.out, io),
                     0);
    tir_func *f = sch_lower(s, TE_TENSORS(c.in[0], c.in[1], c.out), "mm");
    assert_non_null(f);
    f = tir_run_pipeline(ctx, f, NULL);
    assert_non_null(f);
    struct timespec t0, t1;
    int reps = 200, n = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < reps; r++) {
        float *v;
        assert_int_equal(cm_extract(ctx, f, &v, &n), 0);
        free(v);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / reps;
    printf("cost model: features of a tiled matmul (%d statements): %.1f us per extraction\n", n,
           us);
    assert_true(n >= 2);

    /* a 3x3 convolution with a padding stage (selects): the padding stage,
     * the init, and the update, split at the image's edges by its padding
     * guards (schedule/pad_guard.c) */
    sched_case cv = sh_conv2d(ctx, 1, 32, 28, 28, 32, 3, 3, 1, 1);
    sch_schedule *s2 = sch_create(ctx, TE_TENSORS(cv.out));
    tir_func *g = sch_lower(s2, TE_TENSORS(cv.in[0], cv.in[1], cv.out), "conv");
    assert_non_null(g);
    g = tir_run_pipeline(ctx, g, NULL);
    assert_non_null(g);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    float *v = NULL;
    for (int r = 0; r < reps; r++) {
        free(v);
        assert_int_equal(cm_extract(ctx, g, &v, &n), 0);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / reps;
    printf("cost model: features of a conv2d (%d statements): %.1f us per extraction\n", n, us);
    assert_true(n > 3);
    assert_true(v[idx("select_op")] > 0); /* the padding stage */
    free(v);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_two_level_by_hand),
        cmocka_unit_test(test_matmul_reuse),
        cmocka_unit_test(test_annotations_and_vector_code),
        cmocka_unit_test(test_vec_lane_waste),
        cmocka_unit_test(test_gpu_threads),
        cmocka_unit_test(test_allocation),
        cmocka_unit_test(test_log_scale_and_determinism),
        cmocka_unit_test(test_csv),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_speed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
