/*
 * tests/test_autotune_default.c — tune_default_schedule, the schedule of a
 * workload without a hand-written default: for operators of the registry
 * (matmul, strided padded conv2d, depthwise conv2d, softmax, layer_norm,
 * max_pool2d, broadcasting add, relu) and for registered builders' own
 * workloads (a convolution with a bias+relu epilogue; a chain of more
 * stages than the tuner analyses, which takes the fallback) and a fused
 * subgraph of an ONNX model (graph/group.h's key), the schedule
 * builds, matches a naive reference on fresh random inputs with
 * NaN-poisoned outputs, is the same step log twice, and says what it is;
 * and its errors name the rule broken.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "loom/autotune.h"

/* The default schedule of key for target in ctx, checked for a
 * non-empty *how. */
static sch_schedule *default_for(te_ctx *ctx, const char *key, const char *target,
                                 tune_workload *w, const char **how) {
    if (tune_build_workload(ctx, key, w)) fail_msg("%s: %s", key, te_ctx_errmsg(ctx));
    sch_schedule *s = tune_default_schedule(ctx, w, target, how);
    if (!s) fail_msg("%s: no schedule: %s", key, te_ctx_errmsg(ctx));
    assert_non_null(*how);
    assert_true(strlen(*how) > 0);
    return s;
}

/* The same for the host ("llvm"). */
static sch_schedule *default_of(te_ctx *ctx, const char *key, tune_workload *w, const char **how) {
    return default_for(ctx, key, "llvm", w, how);
}

/* The default schedule of key for target (in *s; its *how where how is
 * not NULL) lowered to text. */
static const char *target_text(te_ctx *ctx, const char *key, const char *target,
                               tune_workload *w, sch_schedule **s, const char **how) {
    const char *h = NULL;
    *s = default_for(ctx, key, target, w, &h);
    if (how) *how = h;
    const char *text = sch_lower_text(*s, w->nargs, w->args);
    assert_non_null(text);
    return text;
}

/* The default schedule of key for the host (in *s) lowered to text. */
static const char *default_text(te_ctx *ctx, const char *key, tune_workload *w, sch_schedule **s) {
    return target_text(ctx, key, "llvm", w, s, NULL);
}

/* Twice in fresh ctxs: the same log and choice. */
static void check_deterministic(const char *key) {
    char *first = NULL, how1[512] = "";
    for (int round = 0; round < 2; round++) {
        te_ctx *ctx = te_ctx_new();
        tune_workload w;
        const char *how = NULL;
        sch_schedule *s = default_of(ctx, key, &w, &how);
        const char *log = tune_steps_key(ctx, s);
        assert_non_null(log);
        if (round == 0) {
            first = strdup(log);
            snprintf(how1, sizeof how1, "%s", how);
        } else {
            assert_string_equal(first, log);
            assert_string_equal(how1, how);
        }
        te_ctx_free(ctx);
    }
    free(first);
}

typedef struct {
    const char *key;
    const char *how; /* a substring *how must hold */
} ops_case;

static const ops_case OPS_CASES[] = {
    /* The GEMM register tile with the packed column panels. */
    {"matmul(M=64,N=48,K=32)", "heuristic program"},
    /* The packed register tile of NCHW convolutions (vectors over output
     * channels), stride 2 and padding. */
    {"conv2d_nchw(N=1,C=8,H=15,W=15,K=16,R=3,S=3,stride=2,pad=1)", "vectorized on a packed axis"},
    /* Vectors over channels would gather the data: no packed tile, the
     * rules' register tile of rows x columns. */
    {"depthwise_conv2d_nchw(N=1,C=16,H=14,W=14,R=3,S=3,pad=1)", "rules"},
    /* Row reductions rfactored into vectors; a row not a whole number of
     * vectors; rows of a few vectors. */
    {"softmax(M=6,N=100)", "rules"},
    {"softmax(M=4,N=256)", "rules, row reductions in their consumers' rows"},
    {"layer_norm(M=6,N=96)", "SqSum: rfactor"},
    {"max_pool2d(N=1,C=4,H=15,W=15,R=3,S=3,stride=2,pad=1)", "O: annotate"},
    {"add(D0=2,D1=3,D2=5,D3=16,a_bcast=2,b_bcast=13)", "Y: annotate"},
    {"relu(D0=3,D1=7,D2=5,D3=9)", "rules"},
};

static void test_ops_workloads(void **st) {
    (void)st;
    for (size_t i = 0; i < sizeof OPS_CASES / sizeof OPS_CASES[0]; i++) {
        const ops_case *c = &OPS_CASES[i];
        te_ctx *ctx = te_ctx_new();
        tune_workload w;
        const char *how = NULL;
        sch_schedule *s = default_of(ctx, c->key, &w, &how);
        if (!strstr(how, c->how)) fail_msg("%s: chose '%s', expected '%s'", c->key, how, c->how);
        /* Something was scheduled: not the plain sch_create. */
        assert_true(sch_num_steps(s) > 0);
        cg_build_options opts = {0};
        opts.constant_args = w.constant_args;
        rt_module *m = cg_build(s, w.nargs, w.args, "llvm", &opts);
        if (!m) fail_msg("%s: build: %s", c->key, te_ctx_errmsg(ctx));
        /* ops_check_module: fresh inputs, NaN-poisoned outputs, the
         * double reference at the operator's tolerance. */
        ops_workload *ow = ops_from_key(ctx, c->key);
        assert_non_null(ow);
        int64_t bad = ops_check_module(ow, m, NULL, tu_seed() + i);
        if (bad) fail_msg("%s (%s): %lld wrong outputs", c->key, how, (long long)bad);
        rt_module_free(m);
        te_ctx_free(ctx);
        check_deterministic(c->key);
    }
}

/* ---- a registered builder's workload: conv2d (pad 1, 3x3) + bias + relu ---- */

static int conv_relu_build(te_ctx *ctx, const char *key, ops_built *out) {
    long long C, K, H;
    int used = 0;
    if (sscanf(key, "test.convrelu(C=%lld,K=%lld,H=%lld)%n", &C, &K, &H, &used) != 3 || key[used])
        return te_error(ctx, "test.convrelu: bad key '%s'", key);
    te_tensor *X = te_placeholder(ctx, "X", TE_FLOAT32, TE_SHAPE(1, C, H, H));
    te_tensor *Wt = te_placeholder(ctx, "Wt", TE_FLOAT32, TE_SHAPE(K, C, 3, 3));
    te_tensor *b = te_placeholder(ctx, "b", TE_FLOAT32, TE_SHAPE(K));
    te_expr *pn = te_axis(ctx, "pn", 1), *pc = te_axis(ctx, "pc", C), *py = te_axis(ctx, "py", H + 2),
            *px = te_axis(ctx, "px", H + 2);
    te_expr *one = te_int(ctx, 1), *lim = te_int(ctx, H);
    te_expr *iy = te_sub(py, one), *ix = te_sub(px, one);
    te_expr *in = te_and(te_and(te_ge(iy, te_int(ctx, 0)), te_lt(iy, lim)),
                         te_and(te_ge(ix, te_int(ctx, 0)), te_lt(ix, lim)));
    te_tensor *P = te_compute(ctx, "Pad", TE_AXES(pn, pc, py, px),
                              te_select(in, te_read(X, pn, pc, iy, ix), te_float(ctx, 0.0)));
    te_expr *n = te_axis(ctx, "n", 1), *k = te_axis(ctx, "k", K), *y = te_axis(ctx, "y", H),
            *x = te_axis(ctx, "x", H);
    te_expr *rc = te_reduce_axis(ctx, "rc", C), *ry = te_reduce_axis(ctx, "ry", 3),
            *rx = te_reduce_axis(ctx, "rx", 3);
    te_tensor *O = te_compute(
        ctx, "O", TE_AXES(n, k, y, x),
        te_sum(te_mul(te_read(P, n, rc, te_add(y, ry), te_add(x, rx)), te_read(Wt, k, rc, ry, rx)),
               rc, ry, rx));
    te_expr *n2 = te_axis(ctx, "n2", 1), *k2 = te_axis(ctx, "k2", K), *y2 = te_axis(ctx, "y2", H),
            *x2 = te_axis(ctx, "x2", H);
    te_tensor *Y = te_compute(
        ctx, "Y", TE_AXES(n2, k2, y2, x2),
        te_max(te_add(te_read(O, n2, k2, y2, x2), te_read(b, k2)), te_float(ctx, 0.0)));
    if (!Y || !(out->args = te_alloc(ctx, 4 * sizeof(te_tensor *)))) return -1;
    out->nargs = 4;
    out->args[0] = X, out->args[1] = Wt, out->args[2] = b, out->args[3] = Y;
    out->nouts = 1;
    out->outs = out->args + 3;
    out->flops = 2.0 * (double)(K * H * H * C * 9);
    out->constant_args = 0;
    return 0;
}

static void conv_relu_ref(int64_t C, int64_t K, int64_t H, const float *X, const float *W,
                          const float *b, double *Y) {
    for (int64_t k = 0; k < K; k++)
        for (int64_t y = 0; y < H; y++)
            for (int64_t x = 0; x < H; x++) {
                double acc = 0;
                for (int64_t c = 0; c < C; c++)
                    for (int64_t r = 0; r < 3; r++)
                        for (int64_t s = 0; s < 3; s++) {
                            int64_t iy = y + r - 1, ix = x + s - 1;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= H) continue;
                            acc += (double)X[(c * H + iy) * H + ix] *
                                   (double)W[((k * C + c) * 3 + r) * 3 + s];
                        }
                acc += b[k];
                Y[(k * H + y) * H + x] = acc > 0 ? acc : 0;
            }
}

static void test_registered_builder(void **st) {
    (void)st;
    assert_int_equal(tune_register_builder("test.convrelu(", conv_relu_build), 0);
    const char *key = "test.convrelu(C=8,K=16,H=13)";
    int64_t C = 8, K = 16, H = 13;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    const char *how = NULL;
    sch_schedule *s = default_of(ctx, key, &w, &how);
    /* The packed register tile of the convolution, the epilogue (bias,
     * Relu) computed in its copy-out. */
    tu_assert_msg_has(how, "heuristic program", "vectorized on a packed axis",
                      "fuse into its elementwise tail Y");
    rt_module *m = cg_build(s, w.nargs, w.args, "llvm", NULL);
    if (!m) fail_msg("build: %s", te_ctx_errmsg(ctx));
    uint64_t rng = tu_seed();
    DLTensor *X = tu_rand_f32(&rng, 4, (int64_t[]){1, C, H, H});
    DLTensor *Wt = tu_rand_f32(&rng, 4, (int64_t[]){K, C, 3, 3});
    DLTensor *b = tu_rand_f32(&rng, 1, (int64_t[]){K});
    DLTensor *Y = tu_nan_f32(4, (int64_t[]){1, K, H, H});
    double *want = malloc(sizeof(double) * (size_t)(K * H * H));
    assert_non_null(want);
    conv_relu_ref(C, K, H, X->data, Wt->data, b->data, want);
    assert_int_equal(rt_call(m, "default", RT_ARGS(X, Wt, b, Y)), 0);
    int64_t n = K * H * H;
    assert_int_equal(tu_compare_f32("conv+bias+relu", Y->data, want, n, 1e-4, 1e-4), 0);
    /* The check can fail: one wrong element is caught. */
    ((float *)Y->data)[n / 2] += 0.5f;
    assert_int_equal(tu_compare_f32("corrupted (expected)", Y->data, want, n, 1e-4, 1e-4), 1);
    rt_module_free(m);
    rt_tensor_free(X), rt_tensor_free(Wt), rt_tensor_free(b), rt_tensor_free(Y);
    free(want);
    te_ctx_free(ctx);
    check_deterministic(key);
}

/* ---- more stages than the tuner analyses: the fallback ---- */

enum { CHAIN = TUNE_MAX_STAGES + 8 };

static int chain_build(te_ctx *ctx, const char *key, ops_built *out) {
    (void)key;
    te_tensor *X = te_placeholder(ctx, "X", TE_FLOAT32, TE_SHAPE(6, 40));
    te_tensor *t = X;
    for (int s = 0; s < CHAIN; s++) {
        char name[16];
        snprintf(name, sizeof name, "S%d", s);
        te_expr *i = te_axis(ctx, "i", 6), *j = te_axis(ctx, "j", 40);
        te_expr *v = te_read(t, i, j);
        t = te_compute(ctx, name, TE_AXES(i, j),
                       s % 2 ? te_add(v, te_float(ctx, 1.0)) : te_mul(v, te_float(ctx, 0.5)));
    }
    if (!t || !(out->args = te_alloc(ctx, 2 * sizeof(te_tensor *)))) return -1;
    out->nargs = 2;
    out->args[0] = X, out->args[1] = t;
    out->nouts = 1;
    out->outs = out->args + 1;
    out->flops = 6.0 * 40 * CHAIN;
    out->constant_args = 0;
    return 0;
}

static void test_fallback(void **st) {
    (void)st;
    assert_int_equal(tune_register_builder("test.chain", chain_build), 0);
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    const char *how = NULL;
    sch_schedule *s = default_of(ctx, "test.chain", &w, &how);
    assert_string_equal(how, "sch_create, every stage parallel and vectorized, dot products "
                             "rfactored");
    rt_module *m = cg_build(s, w.nargs, w.args, "llvm", NULL);
    if (!m) fail_msg("build: %s", te_ctx_errmsg(ctx));
    uint64_t rng = tu_seed();
    DLTensor *X = tu_rand_f32(&rng, 2, (int64_t[]){6, 40});
    DLTensor *Y = tu_nan_f32(2, (int64_t[]){6, 40});
    double want[240];
    for (int e = 0; e < 240; e++) {
        double v = ((const float *)X->data)[e];
        for (int k = 0; k < CHAIN; k++) v = k % 2 ? v + 1.0 : v * 0.5;
        want[e] = v;
    }
    assert_int_equal(rt_call(m, "default", RT_ARGS(X, Y)), 0);
    assert_int_equal(tu_compare_f32("chain", Y->data, want, 240, 1e-5, 1e-5), 0);
    rt_module_free(m);
    rt_tensor_free(X), rt_tensor_free(Y);
    te_ctx_free(ctx);
    check_deterministic("test.chain");
}

/* A fused subgraph of an ONNX model (graph/group.h's key, its builder
 * registered when Loom loads): Add with a broadcast bias, then Relu. */
static void test_graph_group(void **st) {
    (void)st;
    const char *key = "onnx(opset=13;x v0:float[2,3,16];w v1:float[16];n v2=Add(v0,v1);"
                      "n v3=Relu(v2);out v3)";
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    const char *how = NULL;
    sch_schedule *s = default_of(ctx, key, &w, &how);
    tu_assert_msg_has(how, "inline", "annotate", "rules");
    assert_int_equal(w.nargs, 3);
    rt_module *m = cg_build(s, w.nargs, w.args, "llvm", NULL);
    if (!m) fail_msg("build: %s", te_ctx_errmsg(ctx));
    uint64_t rng = tu_seed();
    DLTensor *X = tu_rand_f32(&rng, 3, (int64_t[]){2, 3, 16});
    DLTensor *B = tu_rand_f32(&rng, 1, (int64_t[]){16});
    DLTensor *Y = tu_nan_f32(3, (int64_t[]){2, 3, 16});
    double want[96];
    for (int e = 0; e < 96; e++) {
        double v = (double)((const float *)X->data)[e] + ((const float *)B->data)[e % 16];
        want[e] = v > 0 ? v : 0;
    }
    assert_int_equal(rt_call(m, "default", RT_ARGS(X, B, Y)), 0);
    assert_int_equal(tu_compare_f32("add+relu group", Y->data, want, 96, 1e-6, 1e-6), 0);
    rt_module_free(m);
    rt_tensor_free(X), rt_tensor_free(B), rt_tensor_free(Y);
    te_ctx_free(ctx);
    check_deterministic(key);
}

/* A matrix-vector product (a classifier's Gemm: one row, transB, a bias)
 * sums into at least two vectors of columns, independent chains of
 * FMAs: its 200 columns in tiles of 8 lanes (the widest vector split)
 * ran one chain of dependent FMAs a tile, 2.4x ONNX Runtime's time. */
static void test_gemv_columns(void **st) {
    (void)st;
    const char *key = "onnx(opset=13;x v0:float[1,64];w v1:float[200,64];w v2:float[200];"
                      "n v3=Gemm(v0,v1,v2){transB=i1};out v3)";
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    sch_schedule *s;
    const char *text = default_text(ctx, key, &w, &s);
    /* the accumulator's initialisations, "Gemm0_mm[ramp(K, 1, L)] = xL(0.0f)": several
     * where the tile is wider than 16 lanes and not a power of two (vectorized in
     * pieces, tir/pass_vectorize.c) */
    long lanes = 0;
    for (const char *at = text; (at = strstr(at, "_mm[ramp(")) != NULL; at++) {
        const char *eq = strstr(at, "] = x"), *nl = strchr(at, '\n'), *z = strstr(at, "(0.0f)");
        if (eq && z && (!nl || z < nl) && eq < z) lanes += strtol(eq + 5, NULL, 10);
    }
    if (!lanes) fail_msg("no vector accumulator in:\n%s", text);
    if (lanes < 2 * tune_host_vector_lanes())
        fail_msg("%ld columns a tile, want two vectors or more:\n%s", lanes, text);
    rt_module *m = cg_build(s, w.nargs, w.args, "llvm", NULL);
    if (!m) fail_msg("build: %s", te_ctx_errmsg(ctx));
    uint64_t rng = tu_seed();
    DLTensor *X = tu_rand_f32(&rng, 2, (int64_t[]){1, 64});
    DLTensor *W = tu_rand_f32(&rng, 2, (int64_t[]){200, 64});
    DLTensor *B = tu_rand_f32(&rng, 1, (int64_t[]){200});
    DLTensor *Y = tu_nan_f32(2, (int64_t[]){1, 200});
    double want[200];
    for (int n = 0; n < 200; n++) {
        double acc = ((const float *)B->data)[n];
        for (int k = 0; k < 64; k++)
            acc += (double)((const float *)X->data)[k] * ((const float *)W->data)[n * 64 + k];
        want[n] = acc;
    }
    assert_int_equal(rt_call(m, "default", RT_ARGS(X, W, B, Y)), 0);
    /* 64 products of values in [-1, 1] summed in float32 */
    assert_int_equal(tu_compare_f32("gemv", Y->data, want, 200, 1e-5, 1e-5), 0);
    rt_module_free(m);
    rt_tensor_free(X), rt_tensor_free(W), rt_tensor_free(B), rt_tensor_free(Y);
    te_ctx_free(ctx);
}

/* The largest "allocate NAME[float32 * E] local" of a lowering: the
 * accumulator tile's E floats. */
static long largest_local(const char *text) {
    long elems = 0;
    for (const char *a = strstr(text, "allocate "); a; a = strstr(a + 1, "allocate ")) {
        const char *x = strstr(a, "[float32 * "), *eol = strchr(a, '\n');
        if (!x || !eol || x > eol || !strstr(x, "] local {") || strstr(x, "] local {") > eol)
            continue;
        long e = strtol(x + strlen("[float32 * "), NULL, 10);
        if (e > elems) elems = e;
    }
    return elems;
}

/* A convolution on NCHW[16]c over images 17 columns wide: its register
 * tile takes near 8 columns with a tail (6, 6, 5), not the one column that
 * divides 17 (2 accumulators: 2-3x slower than ONNX Runtime). */
static void test_blocked_conv_prime_width(void **st) {
    (void)st;
    const char *key =
        "onnx(opset=13;x v0:float[1,1,5,17,16];w v1:float[2,1,3,3,16,16];w v2:float[2,16];"
        "n v3=loom:ConvNCHWc(v0,v1,v2){dilations=I[1,1],group=i1,pads=I[1,1,1,1],"
        "strides=I[1,1]};out v3)";
    if (tune_host_vector_lanes() != 16) skip(); /* the tile is on 16-lane blocks */
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    sch_schedule *s;
    const char *text = default_text(ctx, key, &w, &s);
    /* E = channel blocks x columns x 16 */
    long elems = largest_local(text);
    if (elems < 4 * 16)
        fail_msg("a tile of %ld elements, want 4 columns of 16 or more:\n%s", elems, text);
    te_ctx_free(ctx);
}

/* With 16 vector registers (AVX2: 8 lanes) the blocked convolution's tile
 * holds 8 accumulators, 2 columns by 4 channel blocks; AVX-512's 7 x 2
 * spilled there (ResNet-50's 256->256 3x3 at 14x14 at 19 GFLOP/s on a
 * Zen 3 host; that image now takes the small-image tile, below; this
 * is ResNet-50's 128->128 3x3 at 28x28). The schedule is built for
 * "llvm -mcpu=haswell", whatever the host, and read, not run. */
static void test_blocked_conv_avx2_tile(void **st) {
    (void)st;
    const char *key =
        "onnx(opset=13;x v0:float[1,16,28,28,8];w v1:float[16,16,3,3,8,8];w v2:float[16,8];"
        "n v3=loom:ConvNCHWc(v0,v1,v2){dilations=I[1,1],group=i1,pads=I[1,1,1,1],"
        "strides=I[1,1]};out v3)";
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    sch_schedule *s;
    const char *text = target_text(ctx, key, "llvm -mcpu=haswell", &w, &s, NULL);
    long elems = largest_local(text);
    if (elems != 2 * 4 * 8)
        fail_msg("a tile of %ld elements, want 2 columns by 4 blocks of 8:\n%s", elems, text);
    te_ctx_free(ctx);
}

/* Builds schedule s of a stride-1 ConvNCHWc on 8-lane blocks (ib input
 * and ob output blocks, h x w images, a kh x kw window, "same" padding
 * kh/2, kw/2) for "llvm -mcpu=haswell", runs it and compares it with a
 * double reference, outputs poisoned. Skips where the host has no AVX2
 * (every x86-64 host of CI has). */
static void run_haswell_conv(te_ctx *ctx, sch_schedule *s, const tune_workload *w, int ib, int ob,
                             int h, int wd, int kh, int kw) {
    enum { L = 8 };
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) skip();
    rt_module *m = cg_build(s, w->nargs, w->args, "llvm -mcpu=haswell", NULL);
    if (!m) fail_msg("build: %s", te_ctx_errmsg(ctx));
    uint64_t rng = tu_seed();
    DLTensor *X = tu_rand_f32(&rng, 5, (int64_t[]){1, ib, h, wd, L});
    DLTensor *W = tu_rand_f32(&rng, 6, (int64_t[]){ob, ib, kh, kw, L, L});
    DLTensor *B = tu_rand_f32(&rng, 2, (int64_t[]){ob, L});
    DLTensor *Y = tu_nan_f32(5, (int64_t[]){1, ob, h, wd, L});
    const float *x = X->data, *wt = W->data, *b = B->data;
    size_t n = (size_t)ob * h * wd * L;
    double *ref = malloc(n * sizeof *ref);
    assert_non_null(ref);
    for (int o = 0; o < ob; o++)
        for (int y = 0; y < h; y++)
            for (int c = 0; c < wd; c++)
                for (int k = 0; k < L; k++) {
                    double acc = b[o * L + k];
                    for (int i = 0; i < ib; i++)
                        for (int ry = 0; ry < kh; ry++)
                            for (int rx = 0; rx < kw; rx++) {
                                int iy = y + ry - kh / 2, ix = c + rx - kw / 2;
                                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                                for (int l = 0; l < L; l++)
                                    acc += (double)x[((i * h + iy) * wd + ix) * L + l] *
                                           wt[((((o * ib + i) * kh + ry) * kw + rx) * L + l) * L + k];
                            }
                    ref[((o * h + y) * wd + c) * L + k] = acc;
                }
    assert_int_equal(rt_call(m, "default", RT_ARGS(X, W, B, Y)), 0);
    /* at most 1,600 products of values in [-1, 1] summed in float32 */
    assert_int_equal(tu_compare_f32("conv", Y->data, ref, n, 1e-4, 1e-4), 0);
    free(ref);
    rt_module_free(m);
    rt_tensor_free(X), rt_tensor_free(W), rt_tensor_free(B), rt_tensor_free(Y);
}

/* The default schedule of a ConvNCHWc for "llvm -mcpu=haswell" and its
 * lowering. */
static const char *haswell_conv(te_ctx *ctx, int ib, int ob, int h, int w, int kh, int kw,
                                int stride, tune_workload *wl, sch_schedule **s) {
    char key[512];
    int ih = stride == 1 ? h : stride * h, iw = stride == 1 ? w : stride * w;
    snprintf(key, sizeof key,
             "onnx(opset=13;x v0:float[1,%d,%d,%d,8];w v1:float[%d,%d,%d,%d,8,8];"
             "w v2:float[%d,8];n v3=loom:ConvNCHWc(v0,v1,v2){dilations=I[1,1],group=i1,"
             "pads=I[%d,%d,%d,%d],strides=I[%d,%d]};out v3)",
             ib, ih, iw, ob, ib, kh, kw, ob, kh / 2, kw / 2, kh / 2, kw / 2, stride, stride);
    return target_text(ctx, key, "llvm -mcpu=haswell", wl, s, NULL);
}

/* With 16 vector registers an image of at most 8 columns read with unit
 * stride takes whole rows by one channel block, the window's column taps
 * inside the lanes: the reduction's lane loop stays (kw x 7 columns
 * unrolled in it); 2 columns by 4 blocks left the padding's column
 * guards in the tile (22-24 GFLOP/s on a Zen 3 host, 45-80 whole). At
 * stride 2 the tile stays as other images'. A 29x7 image: those of 196
 * pixels or fewer take the small-image tile (below). Run against a double
 * reference. */
static void test_blocked_conv_avx2_whole_rows(void **st) {
    (void)st;
    for (int stride = 1; stride <= 2; stride++) {
        te_ctx *ctx = te_ctx_new();
        tune_workload w;
        sch_schedule *s;
        const char *text = haswell_conv(ctx, 4, 2, 29, 7, 3, 3, stride, &w, &s);
        long elems = largest_local(text);
        if ((elems == 7 * 8) != (stride == 1))
            fail_msg("stride %d: a tile of %ld elements, want %s56:\n%s", stride, elems,
                     stride == 1 ? "" : "other than ", text);
        if (stride == 1) {
            if (!strstr(text, "for (r3.outer, 0, 8)"))
                fail_msg("no loop over the input lanes outside the taps:\n%s", text);
            run_haswell_conv(ctx, s, &w, 4, 2, 29, 7, 3, 3);
        }
        te_ctx_free(ctx);
    }
}

/* With 16 vector registers an image of at most 64 output pixels
 * (ResNet-50's 7x7 layers, Inception-v3's 8x8), or 196 with a window of
 * more than one tap (3x3 at 14x14), accumulates the whole image by 2
 * output blocks (2 x 49 x 8 floats at 7x7) with the input blocks and half
 * of each block's lanes outside it (the lane loop split 2 x 4), so that a
 * weight vector is loaded once per image: ResNet-50's 7x7 kernels took
 * 21-56 % less time in the model, its 3x3 at 14x14 18 % less (Zen 3). At
 * stride 2 too, and for 1x1 windows up to 64 pixels; an odd number of
 * output blocks takes one at a time. Run against a double reference. A
 * 1x1 window at 14x14 keeps the register tile (it ran 18 % slower). */
static void test_blocked_conv_avx2_small_image(void **st) {
    (void)st;
    static const struct { int ib, ob, h, w, k, stride; bool small; long elems; } cases[] = {
        {4, 2, 7, 7, 3, 2, true, 2 * 49 * 8},    {4, 2, 7, 7, 3, 1, true, 2 * 49 * 8},
        {4, 4, 7, 7, 1, 1, true, 2 * 49 * 8},    {3, 3, 8, 8, 3, 1, true, 64 * 8},
        {2, 4, 14, 14, 3, 1, true, 2 * 196 * 8}, {2, 4, 14, 14, 3, 2, true, 2 * 196 * 8},
        {2, 4, 14, 14, 1, 1, false, 2 * 4 * 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        te_ctx *ctx = te_ctx_new();
        tune_workload w;
        sch_schedule *s;
        const char *text = haswell_conv(ctx, cases[i].ib, cases[i].ob, cases[i].h, cases[i].w,
                                        cases[i].k, cases[i].k, cases[i].stride, &w, &s);
        long elems = largest_local(text);
        if (elems != cases[i].elems)
            fail_msg("case %zu: a tile of %ld elements, want %ld:\n%s", i, elems, cases[i].elems,
                     text);
        bool small = cases[i].small;
        if (small != (strstr(text, "for (r3.outer, 0, 2)") != NULL))
            fail_msg("case %zu: the input lanes %s 2 x 4 outside the image:\n%s", i,
                     small ? "not split" : "split", text);
        if (cases[i].stride == 1)
            run_haswell_conv(ctx, s, &w, cases[i].ib, cases[i].ob, cases[i].h, cases[i].w,
                             cases[i].k, cases[i].k);
        te_ctx_free(ctx);
    }
}

/* With 16 vector registers a row's column tiles are a loop of their own
 * inside the parallel one, so that loop partitioning splits the window's
 * column taps at the padding's edges: no padding guard is left on the
 * parallel loop's index (a 1x7 convolution on a 17-wide image, as
 * Inception-v3's: 31 GFLOP/s with them, 65 without, on a Zen 3 host).
 * Run against a double reference (the tiles' tail, the edge pieces). */
static void test_blocked_conv_avx2_column_loop(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    sch_schedule *s;
    const char *text = haswell_conv(ctx, 3, 4, 5, 17, 1, 7, 1, &w, &s);
    for (const char *g = strstr(text, "if (likely("); g; g = strstr(g + 1, "if (likely(")) {
        const char *eol = strchr(g, '\n');
        const char *f = strstr(g, ".fused");
        if (f && (!eol || f < eol))
            fail_msg("a padding guard on the parallel loop's index:\n%.*s\nin:\n%s",
                     (int)(eol ? eol - g : 200), g, text);
    }
    run_haswell_conv(ctx, s, &w, 3, 4, 5, 17, 1, 7);
    te_ctx_free(ctx);
}

/* With 16 vector registers a window of 25 taps or more (5x5) read with
 * unit stride has its column taps inside the lanes (the lane loop stays
 * around them): outside, the tile spilled and ran at 30-37 GFLOP/s, inside
 * at 58-67 (Zen 3). A 3x3 window keeps them outside (10-20 % faster).
 * A 17x12 image, above the small-image tile's 196 pixels. The 5x5 one run
 * against a double reference. */
static void test_blocked_conv_avx2_wide_window(void **st) {
    (void)st;
    for (int k = 3; k <= 5; k += 2) {
        te_ctx *ctx = te_ctx_new();
        tune_workload w;
        sch_schedule *s;
        const char *text = haswell_conv(ctx, 2, 4, 17, 12, k, k, 1, &w, &s);
        if ((strstr(text, "for (r3.outer, 0, 8)") != NULL) != (k == 5))
            fail_msg("%dx%d: want the input lanes' loop %s the taps:\n%s", k, k,
                     k == 5 ? "outside" : "inside", text);
        if (k == 5) run_haswell_conv(ctx, s, &w, 2, 4, 17, 12, 5, 5);
        te_ctx_free(ctx);
    }
}

/* The fused attention's output tile holds 8 accumulators or more: with
 * 16 registers (AVX2), 4 rows by 2 vectors of a head of 40 (a tail of one
 * vector), not by the one vector that divides 40 (4 accumulators: the
 * attention of a 320-channel block of 8 heads ran 14-18 % slower). Read
 * for "llvm -mcpu=haswell" on any host; its values: test_graph_attention. */
static void test_attention_tile_avx2(void **st) {
    (void)st;
    const char *key = "onnx(opset=17;x v0:float[1,2,8,40];x v1:float[1,2,40,24];w v2:float[1];"
                      "x v3:float[1,2,24,40];n v4=MatMul(v0,v1);n v5=Mul(v4,v2);"
                      "n v6=Softmax(v5){axis=i-1};n v7=MatMul(v6,v3);out v7)";
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    sch_schedule *s;
    const char *how = NULL;
    const char *text = target_text(ctx, key, "llvm -mcpu=haswell", &w, &s, &how);
    if (!strstr(how, "attention")) fail_msg("not the attention schedule: %s", how);
    const char *a = strstr(text, "allocate MatMul3.local[float32 * ");
    long elems = a ? strtol(a + strlen("allocate MatMul3.local[float32 * "), NULL, 10) : 0;
    if (elems != 4 * 16)
        fail_msg("an output tile of %ld elements, want 4 rows by 16:\n%s", elems, text);
    te_ctx_free(ctx);
}

/* The default schedule of ONNX's Softmax over R rows of N for
 * "llvm -mcpu=haswell", checked against a double reference with its
 * outputs poisoned; its lowering returned. */
static const char *haswell_softmax(te_ctx *ctx, int R, int N) {
    char key[160];
    snprintf(key, sizeof key, "onnx(opset=13;x v0:float[%d,%d];n v1=Softmax(v0){axis=i-1};out v1)", R,
             N);
    tune_workload w;
    sch_schedule *s;
    const char *text = target_text(ctx, key, "llvm -mcpu=haswell", &w, &s, NULL);
    rt_module *m = cg_build(s, w.nargs, w.args, "llvm -mcpu=haswell", NULL);
    if (!m) fail_msg("build: %s", te_ctx_errmsg(ctx));
    uint64_t rng = tu_seed();
    DLTensor *X = tu_rand_f32(&rng, 2, (int64_t[]){R, N});
    DLTensor *Y = tu_nan_f32(2, (int64_t[]){R, N});
    const float *x = X->data;
    double *want = malloc(sizeof(double) * (size_t)(R * N));
    assert_non_null(want);
    for (int r = 0; r < R; r++) {
        double mx = x[r * N], sum = 0;
        for (int c = 1; c < N; c++) mx = x[r * N + c] > mx ? x[r * N + c] : mx;
        for (int c = 0; c < N; c++) sum += want[r * N + c] = exp((double)x[r * N + c] - mx);
        for (int c = 0; c < N; c++) want[r * N + c] /= sum;
    }
    assert_int_equal(rt_call(m, "default", RT_ARGS(X, Y)), 0);
    /* float32 exp and a float32 sum of N terms */
    assert_int_equal(tu_compare_f32("softmax", Y->data, want, (size_t)(R * N), 1e-5, 1e-6), 0);
    free(want);
    rt_module_free(m);
    rt_tensor_free(X), rt_tensor_free(Y);
    check_deterministic(key);
    return text;
}

/* ONNX's Softmax along rows no vector divides (its statistics keep the
 * reduced dimension: max[i, 0]). Each pass takes whole 8-lane vectors
 * and a masked tail: rows of 100 ran in 4 lanes (exp, normalization) and
 * 5 (maxima, sums), 0.6x ONNX Runtime (AVX2); the normalization is exp
 * times the sum's reciprocal. exp(x - max), its sum and the
 * normalization run a row at a time in one parallel loop, exp in a
 * local row (a tensor-sized exp made two more passes over memory); the
 * maxima too in rows of 1,024 elements or more, before in a loop of their
 * own. No parallel loop inside the rows' (37 rows fused exp's columns
 * into its parallel loop). */
static void test_softmax_rows(void **st) {
    (void)st;
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) skip();
    te_ctx *ctx = te_ctx_new();
    const char *text = haswell_softmax(ctx, 37, 100);
    if (tu_count_substr(text, "parallel") != 2 || !strstr(text, "allocate Softmax0_exp[float32 * 100] local"))
        fail_msg("rows of 100: not the maxima, then exp and sum in rows:\n%s", text);
    if (!strstr(text, "Softmax0_max.rf[ramp(s0*8, 1, 8)]") ||
        !strstr(text, "Softmax0_sum.rf[ramp(0, 1, 8)]") ||
        tu_count_substr(text, "x8(Softmax0_max[") != 2 || tu_count_substr(text, "x8(1.0f / Softmax0_sum[") != 2)
        fail_msg("rows of 100: not whole 8-lane vectors and a tail:\n%s", text);
    text = haswell_softmax(ctx, 5, 1100);
    if (tu_count_substr(text, "parallel") != 1 || !strstr(text, "allocate Softmax0_exp[float32 * 1100] local"))
        fail_msg("rows of 1,100: not one parallel loop, exp a row at a time:\n%s", text);
    te_ctx_free(ctx);
}

/* A transposing copy (tune__transpose_axis): FromNCHWc's vectors along
 * the columns read across the channel block (a gather of stride 16), so
 * the channels are split by the vector and their inner part unrolled
 * right outside the vector loop: one store a vector lane in a body (16
 * with AVX-512, 8 with AVX2), each reading the same lanes x lanes block.
 * Also ONNX's Transpose of the attention key, [s, d] -> [d, s]. Values
 * exact against the copy done by hand, outputs poisoned. */
static void test_transpose_tiled(void **st) {
    (void)st;
    const char *keys[2] = {
        "onnx(opset=13;x v0:float[1,3,5,32,16];n v1=loom:FromNCHWc(v0);out v1)",
        "onnx(opset=13;x v0:float[1,32,4,16];n v1=Transpose(v0){perm=I[0,2,3,1]};out v1)"};
    for (int k = 0; k < 2; k++) {
        te_ctx *ctx = te_ctx_new();
        tune_workload w;
        sch_schedule *s;
        const char *text = default_text(ctx, keys[k], &w, &s);
        int lanes = tune_host_vector_lanes();
        if (tu_count_substr(text, "] = v0[") != lanes || !strstr(text, ".outer"))
            fail_msg("%s: not %d copies of a tile:\n%s", keys[k], lanes, text);
        rt_module *m = cg_build(s, w.nargs, w.args, "llvm", NULL);
        if (!m) fail_msg("build: %s", te_ctx_errmsg(ctx));
        uint64_t rng = tu_seed();
        const int64_t *xs = w.args[0]->shape, *ys = w.args[1]->shape;
        DLTensor *X = tu_rand_f32(&rng, w.args[0]->ndim, xs);
        DLTensor *Y = tu_nan_f32(w.args[1]->ndim, ys);
        const float *x = X->data;
        double want[3 * 5 * 32 * 16];
        int64_t n = 0;
        if (k == 0) {
            for (int64_t c = 0; c < 48; c++)
                for (int64_t h = 0; h < 5; h++)
                    for (int64_t q = 0; q < 32; q++)
                        want[n++] = x[(((c / 16) * 5 + h) * 32 + q) * 16 + c % 16];
        } else {
            for (int64_t a = 0; a < 4; a++)
                for (int64_t d = 0; d < 16; d++)
                    for (int64_t c = 0; c < 32; c++) want[n++] = x[(c * 4 + a) * 16 + d];
        }
        assert_int_equal(rt_call(m, "default", RT_ARGS(X, Y)), 0);
        assert_int_equal(tu_compare_f32(keys[k], Y->data, want, n, 0, 0), 0);
        rt_module_free(m);
        rt_tensor_free(X);
        rt_tensor_free(Y);
        te_ctx_free(ctx);
    }
}

/* A workload with more stages than a sketch holds (an LSTM unrolled over
 * 3 steps: 12 stages) gets every stage parallel and vectorized and its
 * dot products rfactored by a vector (attempt 3), not the outputs alone;
 * its values those of the plain sch_create schedule on the same inputs
 * within float32 rounding. */
static void test_many_stages(void **st) {
    (void)st;
    const char *key = "onnx(opset=13;x v0:float[3,1,32];w v1:float[1,256,32];w v2:float[1,256,64];"
                      "w v3:float[1,512];n v4,v5,v6=LSTM(v0,v1,v2,v3){hidden_size=i64};out v4)";
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    const char *how = NULL;
    sch_schedule *s = default_of(ctx, key, &w, &how);
    if (!strstr(how, "every stage parallel and vectorized"))
        fail_msg("%s: the default is '%s'", key, how);
    const char *text = sch_lower_text(s, w.nargs, w.args);
    assert_non_null(text);
    if (tu_count_substr(text, ".rf[ramp(") < 6) fail_msg("the dot products are not rfactored:\n%s", text);
    rt_module *m = cg_build(s, w.nargs, w.args, "llvm", NULL);
    sch_schedule *plain = sch_create(ctx, w.nouts, w.outs);
    rt_module *mp = plain ? cg_build(plain, w.nargs, w.args, "llvm", NULL) : NULL;
    if (!m || !mp) fail_msg("build: %s", te_ctx_errmsg(ctx));
    uint64_t rng = tu_seed();
    DLTensor *args[5], *ref = NULL;
    for (int a = 0; a < w.nargs; a++) {
        te_tensor *t = w.args[a];
        args[a] = a < w.nargs - 1 ? tu_rand_f32(&rng, t->ndim, t->shape) : tu_nan_f32(t->ndim, t->shape);
        if (a == w.nargs - 1) ref = tu_nan_f32(t->ndim, t->shape);
    }
    /* weights scaled down so that the gates stay off their saturation */
    for (int a = 1; a < w.nargs - 1; a++)
        for (int64_t i = 0; i < rt_tensor_numel(args[a]); i++) ((float *)args[a]->data)[i] *= 0.2f;
    assert_int_equal(rt_call(m, "default", w.nargs, args), 0);
    DLTensor *pargs[5];
    memcpy(pargs, args, sizeof pargs);
    pargs[w.nargs - 1] = ref;
    assert_int_equal(rt_call(mp, "default", w.nargs, pargs), 0);
    int64_t n = rt_tensor_numel(ref);
    double *want = malloc(sizeof *want * (size_t)n);
    for (int64_t i = 0; i < n; i++) want[i] = ((const float *)ref->data)[i];
    assert_int_equal(tu_compare_f32("LSTM every stage", args[w.nargs - 1]->data, want, n, 1e-5, 1e-6), 0);
    free(want);
    for (int a = 0; a < w.nargs; a++) rt_tensor_free(args[a]);
    rt_tensor_free(ref);
    rt_module_free(m);
    rt_module_free(mp);
    te_ctx_free(ctx);
}

/* The padding of a pooling on NCHW[16]c is inlined into the pooling: its
 * bounds checks test rows and columns, never the 16 channels a vector
 * runs over, so no padded copy is written and read back; a pooling on
 * NCHW (vectors along the columns, each lane its own bound) keeps the
 * padded copy at the root. */
static void test_pool_padding_inlined(void **st) {
    (void)st;
    const char *key = "onnx(opset=13;x v0:float[1,2,9,9,16];n v1=loom:MaxPoolNCHWc(v0){ceil_mode=i0,"
                      "dilations=I[1,1],kernel_shape=I[3,3],pads=I[1,1,1,1],strides=I[2,2]};out v1)";
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    sch_schedule *s;
    const char *text = default_text(ctx, key, &w, &s);
    if (strstr(text, "allocate")) fail_msg("the padding is not inlined:\n%s", text);
    rt_module *m = cg_build(s, w.nargs, w.args, "llvm", NULL);
    if (!m) fail_msg("build: %s", te_ctx_errmsg(ctx));
    uint64_t rng = tu_seed();
    DLTensor *X = tu_rand_f32(&rng, 5, (int64_t[]){1, 2, 9, 9, 16});
    DLTensor *Y = tu_nan_f32(5, (int64_t[]){1, 2, 5, 5, 16});
    double want[2 * 5 * 5 * 16];
    const float *x = X->data;
    for (int b = 0; b < 2; b++)
        for (int oy = 0; oy < 5; oy++)
            for (int ox = 0; ox < 5; ox++)
                for (int c = 0; c < 16; c++) {
                    double m2 = -INFINITY;
                    for (int r = 0; r < 3; r++)
                        for (int q = 0; q < 3; q++) {
                            int iy = 2 * oy + r - 1, ix = 2 * ox + q - 1;
                            if (iy < 0 || iy >= 9 || ix < 0 || ix >= 9) continue;
                            double v = x[((b * 9 + iy) * 9 + ix) * 16 + c];
                            if (v > m2) m2 = v;
                        }
                    want[((b * 5 + oy) * 5 + ox) * 16 + c] = m2;
                }
    assert_int_equal(rt_call(m, "default", RT_ARGS(X, Y)), 0);
    assert_int_equal(tu_compare_f32("NCHW16c max pool", Y->data, want, 2 * 5 * 5 * 16, 0, 0), 0);
    rt_module_free(m);
    rt_tensor_free(X), rt_tensor_free(Y);
    te_ctx_free(ctx);
    check_deterministic(key);

    ctx = te_ctx_new();
    text = default_text(ctx, "max_pool2d(N=1,C=4,H=15,W=15,R=3,S=3,stride=2,pad=1)", &w, &s);
    if (!strstr(text, "allocate Pad[")) fail_msg("NCHW: the padding is not at the root:\n%s", text);
    te_ctx_free(ctx);
}

static void test_errors(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    assert_int_equal(tune_build_workload(ctx, "relu(D0=4)", &w), 0);
    const char *how = "unchanged";
    assert_null(tune_default_schedule(ctx, &w, "cuda", &how));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "tune_default_schedule: unknown target 'cuda'",
                      "(llvm, c)");
    assert_null(how);
    assert_null(tune_default_schedule(ctx, NULL, "llvm", NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "tune_default_schedule: no workload");
    tune_workload none = w;
    none.nouts = 0;
    assert_null(tune_default_schedule(ctx, &none, "llvm", NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "no workload");
    /* Options after the target name are the build's business; "c" works. */
    assert_non_null(tune_default_schedule(ctx, &w, "llvm -mcpu=x86-64", NULL));
    assert_non_null(tune_default_schedule(ctx, &w, "c", &how));
    assert_non_null(how);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops_workloads),
        cmocka_unit_test(test_registered_builder),
        cmocka_unit_test(test_fallback),
        cmocka_unit_test(test_graph_group),
        cmocka_unit_test(test_gemv_columns),
        cmocka_unit_test(test_blocked_conv_prime_width),
        cmocka_unit_test(test_blocked_conv_avx2_tile),
        cmocka_unit_test(test_blocked_conv_avx2_whole_rows),
        cmocka_unit_test(test_blocked_conv_avx2_small_image),
        cmocka_unit_test(test_blocked_conv_avx2_column_loop),
        cmocka_unit_test(test_blocked_conv_avx2_wide_window),
        cmocka_unit_test(test_attention_tile_avx2),
        cmocka_unit_test(test_softmax_rows),
        cmocka_unit_test(test_pool_padding_inlined),
        cmocka_unit_test(test_transpose_tiled),
        cmocka_unit_test(test_many_stages),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
