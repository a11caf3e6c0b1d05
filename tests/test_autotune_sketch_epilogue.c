/*
 * tests/test_autotune_sketch_epilogue.c — the epilogue-fusion rule of CPU
 * sketch generation: a register tile whose output ends in an elementwise
 * tail (bias, residual Add, Relu) also gets a sketch with the tail
 * computed in the tile's copy-out, right before the unfused one; random
 * programs of it compute the group (against a double reference, outputs
 * poisoned with NaN), mutate, and map back from their step logs; a
 * workload without a tail gets no extra sketch.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "loom/autotune.h"

/* Fused groups of a model (graph/group.h keys): a dense layer with bias
 * and Relu, and an NCHW convolution with padding, bias, a residual Add
 * and Relu. */
static const char *DENSE_RELU =
    "onnx(opset=13;x v0:float[12,24];w v1:float[24,32];w v2:float[32];n v3=MatMul(v0,v1);"
    "n v4=Add(v3,v2);n v5=Relu(v4);out v5)";
static const char *CONV_RES =
    "onnx(opset=13;x v0:float[1,4,6,6];w v1:float[16,4,3,3];w v2:float[16];"
    "x v3:float[1,16,6,6];n v4=Conv(v0,v1,v2){kernel_shape=I[3,3],pads=I[1,1,1,1]};"
    "n v5=Add(v4,v3);n v6=Relu(v5);out v6)";

static const char *TAIL = "fuse into its elementwise tail";

static int sketches_of(te_ctx *ctx, const char *key, tune_workload *w, tune_sketch *sk) {
    assert_int_equal(tune_build_workload(ctx, key, w), 0);
    int n = tune_generate_sketches(ctx, w, sk, TUNE_MAX_SKETCHES);
    for (int i = 0; i < n; i++) print_message("%s [%d] %s\n", key, i, sk[i].desc);
    assert_true(n > 0);
    return n;
}

/* The register tile unit of a fused sketch (its consumer set), -1: none. */
static int fused_unit(const tune_sketch *sk) {
    for (int u = 0; u < sk->nunits; u++)
        if ((sk->units[u].kind == TUNE_UNIT_TILE_CACHE ||
             sk->units[u].kind == TUNE_UNIT_TILE_CACHE_PACKED) &&
            sk->units[u].consumer >= 0)
            return u;
    return -1;
}

/* Each fused sketch names the tail, has no ANNOTATE unit of its own for
 * it, and is followed by its unfused twin (the tail annotated, the tile
 * copied out by a cache copy). Returns how many fused sketches there are. */
static int check_fused_pairs(const tune_sketch *sk, int n, const char *tail_name) {
    char annotate[64];
    snprintf(annotate, sizeof annotate, "%s: annotate", tail_name);
    int fused = 0;
    for (int i = 0; i < n; i++) {
        int u = fused_unit(&sk[i]);
        if (u < 0) {
            assert_null(strstr(sk[i].desc, TAIL));
            continue;
        }
        fused++;
        assert_non_null(strstr(sk[i].desc, TAIL));
        assert_non_null(strstr(sk[i].desc, tail_name));
        assert_null(strstr(sk[i].desc, annotate));
        assert_true(i + 1 < n);
        assert_int_equal(fused_unit(&sk[i + 1]), -1);
        assert_non_null(strstr(sk[i + 1].desc, "fuse into copy"));
        assert_non_null(strstr(sk[i + 1].desc, annotate));
        /* The same tile kind on the same stage; the twin has the tail's
         * holes (ANNOTATE: vector, parallel) besides. */
        int v = -1;
        for (int k = 0; k < sk[i + 1].nunits; k++)
            if (sk[i + 1].units[k].kind == sk[i].units[u].kind &&
                sk[i + 1].units[k].stage == sk[i].units[u].stage)
                v = k;
        assert_true(v >= 0);
        assert_true(sk[i + 1].nholes > sk[i].nholes);
    }
    return fused;
}

static void test_fused_sketches(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    /* Both register tiles (with and without the weights packed). */
    int n = sketches_of(ctx, DENSE_RELU, &w, sk);
    assert_int_equal(check_fused_pairs(sk, n, "Relu2"), 2);
    assert_int_equal(n, 6);
    /* The GEMM tile with the weights packed, fused: heuristic programs. */
    int vlen = tune_host_vector_lanes(), with = 0;
    for (int i = 0; i < n; i++) {
        tune_program p[TUNE_MAX_HEURISTIC];
        if (fused_unit(&sk[i]) >= 0 && strstr(sk[i].desc, "pack for MatMul0"))
            with += tune_program_heuristic(&sk[i], i, &w, vlen, p, TUNE_MAX_HEURISTIC) > 0;
    }
    assert_int_equal(with, 1);
    /* The convolution's cached tile and its packed register tile. */
    n = sketches_of(ctx, CONV_RES, &w, sk);
    assert_int_equal(check_fused_pairs(sk, n, "Relu2"), 2);
    /* The residual Add stays inlined in both forms. */
    for (int i = 0; i < n; i++) assert_non_null(strstr(sk[i].desc, "Add1: inline"));
    te_ctx_free(ctx);
}

/* No tail, no extra sketch: an output tile (a plain matmul), a tile fused
 * with its consumer already (a dense layer's bias, tiling with fusion),
 * a tile whose reader is a reduction, and a pure elementwise workload. */
static void test_no_tail(void **st) {
    (void)st;
    static const struct {
        const char *key;
        int n;
    } cases[] = {
        {"matmul(M=32,N=32,K=16)", 4},
        {"dense_bias_gelu(M=16,N=32,K=24)", 2},
        {"conv2d(N=1,C=4,H=8,W=8,K=16,R=3,S=3,pad=1)", 3},
        {"onnx(opset=13;x v0:float[1,4,6,6,16];w v1:float[1,4,1,1,16,16];w v2:float[1,16];"
         "n v3=loom:ConvNCHWc(v0,v1,v2){pads=I[0,0,0,0]};out v3)",
         2},
        {"relu(D0=4,D1=32)", 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        te_ctx *ctx = te_ctx_new();
        tune_workload w;
        tune_sketch sk[TUNE_MAX_SKETCHES];
        int n = sketches_of(ctx, cases[c].key, &w, sk);
        assert_int_equal(n, cases[c].n);
        for (int i = 0; i < n; i++) {
            assert_int_equal(fused_unit(&sk[i]), -1);
            assert_null(strstr(sk[i].desc, TAIL));
        }
        te_ctx_free(ctx);
    }
}

/* The double reference of DENSE_RELU: relu(x W + b). */
static void ref_dense(DLTensor *const *a, double *want) {
    const float *x = a[0]->data, *wt = a[1]->data, *b = a[2]->data;
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 32; j++) {
            double s = b[j];
            for (int k = 0; k < 24; k++) s += (double)x[i * 24 + k] * wt[k * 32 + j];
            want[i * 32 + j] = s > 0 ? s : 0;
        }
}

/* The double reference of CONV_RES: relu(conv(x, W, pad 1) + b + r). */
static void ref_conv(DLTensor *const *a, double *want) {
    const float *x = a[0]->data, *wt = a[1]->data, *b = a[2]->data, *r = a[3]->data;
    for (int k = 0; k < 16; k++)
        for (int y = 0; y < 6; y++)
            for (int z = 0; z < 6; z++) {
                double s = b[k];
                for (int c = 0; c < 4; c++)
                    for (int dy = 0; dy < 3; dy++)
                        for (int dz = 0; dz < 3; dz++) {
                            int iy = y + dy - 1, iz = z + dz - 1;
                            if (iy < 0 || iy >= 6 || iz < 0 || iz >= 6) continue;
                            s += (double)x[(c * 6 + iy) * 6 + iz] * wt[((k * 4 + c) * 3 + dy) * 3 + dz];
                        }
                int o = (k * 6 + y) * 6 + z;
                s += r[o];
                want[o] = s > 0 ? s : 0;
            }
}

typedef void (*ref_fn)(DLTensor *const *args, double *want);

/* Builds p, runs it on fresh inputs with its output poisoned, compares. */
static void check_program(te_ctx *ctx, const char *key, const tune_workload *w,
                          const tune_sketch *sk, const tune_program *p, ref_fn ref,
                          uint64_t *rng) {
    sch_schedule *s = tune_program_apply(ctx, w, sk, p);
    if (!s) fail_msg("%s: program of '%s' does not apply: %s", key, sk->desc, te_ctx_errmsg(ctx));
    rt_module *m = cg_build(s, w->nargs, w->args, "llvm", NULL);
    if (!m) fail_msg("%s: build: %s", key, te_ctx_errmsg(ctx));
    DLTensor *args[8];
    assert_true(w->nargs <= 8);
    int64_t nout = 1;
    for (int i = 0; i < w->nargs; i++) {
        const te_tensor *t = w->args[i];
        args[i] = i == w->nargs - 1 ? tu_nan_f32(t->ndim, t->shape)
                                    : tu_rand_f32(rng, t->ndim, t->shape);
        if (i == w->nargs - 1)
            for (int d = 0; d < t->ndim; d++) nout *= t->shape[d];
    }
    double *want = malloc(sizeof(double) * (size_t)nout);
    assert_non_null(want);
    ref(args, want);
    assert_int_equal(rt_call(m, "default", w->nargs, args), 0);
    if (tu_compare_f32(sk->desc, args[w->nargs - 1]->data, want, nout, 1e-5, 1e-5))
        fail_msg("%s: program of '%s' computes wrong values", key, sk->desc);
    free(want);
    for (int i = 0; i < w->nargs; i++) rt_tensor_free(args[i]);
    rt_module_free(m);
}

/* Random programs of every fused sketch, and mutations of them, compute
 * the group; each one's log maps back to a program of a fused sketch
 * with the same log. */
static void check_fused_programs(const char *key, ref_fn ref, int per_sketch) {
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int n = sketches_of(ctx, key, &w, sk);
    uint64_t rng = tu_seed() | 1;
    int checked = 0;
    for (int s = 0; s < n; s++) {
        if (fused_unit(&sk[s]) < 0) continue;
        for (int k = 0; k < per_sketch; k++) {
            tune_program p;
            tune_program_random(&sk[s], s, &rng, &p);
            check_program(ctx, key, &w, &sk[s], &p, ref, &rng);
            tune_program q = p;
            for (int r = 0; r < 3; r++) assert_int_equal(tune_program_mutate(&sk[s], &rng, &q), 0);
            check_program(ctx, key, &w, &sk[s], &q, ref, &rng);
            /* The stored log maps back (a seed for a resumed search). */
            sch_schedule *sc = tune_program_apply(ctx, &w, &sk[s], &p);
            assert_non_null(sc);
            char *json = tdb_schedule_to_json(sc), *err = NULL;
            assert_non_null(json);
            tune_program back;
            if (tune_program_from_steps(key, sk, n, json, &back, &err) != 1)
                fail_msg("%s: a program of '%s' does not map back: %s", key, sk[s].desc,
                         err ? err : "no sketch reproduces it");
            assert_true(fused_unit(&sk[back.sketch]) >= 0);
            sch_schedule *sc2 = tune_program_apply(ctx, &w, &sk[back.sketch], &back);
            assert_non_null(sc2);
            assert_string_equal(tune_steps_key(ctx, sc), tune_steps_key(ctx, sc2));
            free(json);
            free(err);
            checked++;
        }
    }
    assert_true(checked >= 2 * per_sketch);
    te_ctx_free(ctx);
}

static void test_dense_programs(void **st) {
    (void)st;
    check_fused_programs(DENSE_RELU, ref_dense, 4);
}

static void test_conv_programs(void **st) {
    (void)st;
    check_fused_programs(CONV_RES, ref_conv, 3);
}

/* Sketches past max are counted, the fused ones first kept. */
static void test_dropped(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    assert_int_equal(tune_build_workload(ctx, DENSE_RELU, &w), 0);
    int dropped = -1;
    assert_int_equal(tune_generate_sketches_ex(ctx, &w, sk, TUNE_MAX_SKETCHES, &dropped), 6);
    assert_int_equal(dropped, 0);
    assert_int_equal(tune_generate_sketches_ex(ctx, &w, sk, 3, &dropped), 3);
    assert_int_equal(dropped, 3);
    assert_true(fused_unit(&sk[2]) >= 0);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_sketches), cmocka_unit_test(test_no_tail),
        cmocka_unit_test(test_dense_programs), cmocka_unit_test(test_conv_programs),
        cmocka_unit_test(test_dropped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
