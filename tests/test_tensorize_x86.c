/*
 * tests/test_tensorize_x86.c — tensorize "x86.dpbf16" (AVX512-BF16's
 * VDPBF16PS) and the bfloat16 matmul default that uses it on a CPU that
 * has it: numbers against the double reference, the lowered call, and
 * every refusal's message.
 *
 * Numbers: ops_check_module (outputs poisoned with NaN; the reference in
 * double from the rounded bfloat16 inputs; ops_tolerance's bfloat16
 * bound, rtol 2^-7 and atol 1e-4 + 1e-6 K). VDPBF16PS forms each product
 * exactly in float32 (8-bit significands) and adds the pair's two
 * products and the sum with float32 roundings, denormals flushed: an
 * order of float32 additions the bound already covers (inputs in [-1, 1)
 * have no denormal products that matter at that tolerance).
 *
 * Runs where the host CPU has AVX512-BF16 (cg_target.bf16_dot); the
 * refusals that need no such CPU run everywhere.
 */
#include <math.h>
#include <string.h>

#include "half_util.h"
#include "testutil.h"

static bool host_has_bf16_dot(void) {
    cg_target t;
    if (cg_target_parse("llvm", &t, NULL)) return false;
    bool has = t.bf16_dot;
    cg_target_free(&t);
    return has;
}

/* The matmul's sum: C_acc, which a 16-bit matmul casts to C, or C. */
static te_tensor *acc_of(ops_workload *w) {
    te_tensor *c = w->outs[0];
    return c->body->kind == TE_CAST ? c->inputs[0] : c;
}

/* B's copy packed [K/2, N/16, 16, 2] (by 16 on N, then by 2 on K), read
 * by acc; pair_first packs by 2 first instead ([N/16, K/2, 2, 16]: the
 * pairs not innermost). */
static te_tensor *pack_b(sch_schedule *s, ops_workload *w, bool pair_first) {
    te_tensor *acc = acc_of(w);
    te_tensor *c = sch_cache_read(s, w->inputs[1], "global", 1, &acc);
    assert_non_null(c);
    if (!pair_first) {
        te_tensor *p = sch_pack_vnni(s, c, 1, 0, 16);
        if (!p) fail_msg("%s", te_ctx_errmsg(sch_ctx(s)));
        return p;
    }
    te_tensor *p = sch_pack(s, c, sch_axis(c, 0), 2);
    assert_non_null(p);
    p = sch_pack(s, p, sch_axis(p, 1), 16);
    assert_non_null(p);
    return p;
}

/* The accumulator's loops [i, j.outer, k.outer, j.inner (lanes), k.inner
 * (ki)], j.inner tensorized; 0 or -1 (the error in ctx). */
static int tile_acc(sch_schedule *s, ops_workload *w, int64_t lanes, int64_t ki) {
    te_tensor *acc = acc_of(w);
    te_expr *jo, *ji, *ko, *kk;
    if (sch_split(s, acc, sch_axis(acc, 1), lanes, &jo, &ji) ||
        sch_split(s, acc, sch_reduce_axis(acc, 0), ki, &ko, &kk) ||
        sch_reorder(s, acc, 5, (te_expr *[]){sch_axis(acc, 0), jo, ko, ji, kk}))
        return -1;
    return sch_tensorize(s, acc, ji, "x86.dpbf16");
}

/* Builds s for target; NULL with the error in w's ctx. */
static rt_module *build(sch_schedule *s, ops_workload *w, const char *target) {
    return cg_build(s, w->nargs, w->args, target, NULL);
}

static void expect_build_error(sch_schedule *s, ops_workload *w, const char *target,
                               const char *a, const char *b) {
    te_ctx *ctx = w->args[0]->ctx;
    rt_module *m = build(s, w, target);
    if (m) {
        rt_module_free(m);
        fail_msg("built for %s; wanted the error '%s ... %s'", target, a, b);
    }
    tu_assert_msg_has(te_ctx_errmsg(ctx), a, b);
}

/* A hand schedule: B packed, the accumulator tensorized, checked. */
static void test_hand_schedule(void **state) {
    (void)state;
    if (!host_has_bf16_dot()) skip();
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", "M=5,N=48,K=34,dtype=bfloat16");
    assert_non_null(w);
    sch_schedule *s = sch_create(ctx, 1, w->outs);
    pack_b(s, w, false);
    assert_int_equal(tile_acc(s, w, 16, 2), 0);
    const char *text = sch_lower_text(s, w->nargs, w->args);
    if (!text) fail_msg("%s", te_ctx_errmsg(ctx));
    assert_int_equal(tu_count_substr(text, "x86.dpbf16("), 1);
    rt_module *m = build(s, w, "llvm");
    if (!m) fail_msg("%s", te_ctx_errmsg(ctx));
    int64_t bad = ops_check_module(w, m, NULL, tu_seed());
    if (bad) fail_msg("%lld mismatches (%s)", (long long)bad, te_ctx_errmsg(ctx));
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* The bfloat16 matmul default on this host: tensorized where the shape
 * allows it (the lowered text has the call), the plain float32 tile where
 * it does not (K odd, A transposed), and right either way. */
static void check_default_op(const char *op, const char *shape, bool dot) {
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, op, shape);
    if (!w) fail_msg("%s", te_ctx_errmsg(ctx));
    sch_schedule *s = ops_default_schedule(w, "llvm");
    if (!s) fail_msg("%s: %s", shape, te_ctx_errmsg(ctx));
    const char *text = sch_lower_text(s, w->nargs, w->args);
    if (!text) fail_msg("%s: %s", shape, te_ctx_errmsg(ctx));
    if ((tu_count_substr(text, "x86.dpbf16(") > 0) != dot)
        fail_msg("%s: the default %s x86.dpbf16", shape, dot ? "does not call" : "calls");
    cg_build_options o = {0};
    o.constant_args = w->constant_args;
    rt_module *m = cg_build(s, w->nargs, w->args, "llvm", &o);
    if (!m) fail_msg("%s: %s", shape, te_ctx_errmsg(ctx));
    int64_t bad = ops_check_module(w, m, NULL, tu_seed());
    if (bad) fail_msg("%s: %lld mismatches (%s)", shape, (long long)bad, te_ctx_errmsg(ctx));
    rt_module_free(m);
    te_ctx_free(ctx);
}

static void check_default(const char *shape, bool dot) { check_default_op("matmul", shape, dot); }

static void test_default_schedule(void **state) {
    (void)state;
    if (!host_has_bf16_dot()) skip();
    check_default("M=64,N=128,K=96,dtype=bfloat16", true);
    check_default("M=18,N=48,K=130,transpose_b=1,dtype=bfloat16", true);
    check_default("M=128,N=192,K=256,dtype=bfloat16", true);
    check_default("M=16,N=64,K=33,dtype=bfloat16", false);
    check_default("M=16,N=64,K=32,transpose_a=1,dtype=bfloat16", false);
    check_default("M=16,N=40,K=32,dtype=bfloat16", false);
    /* rows that no tile height near 6 divides: the tail guarded */
    check_default("M=7,N=32,K=32,dtype=bfloat16", true);
    check_default("M=37,N=96,K=64,dtype=bfloat16", true);
    check_default_op("batch_matmul", "B=3,M=10,N=32,K=18,dtype=bfloat16", true);
    /* conv2d_nhwc's implicit GEMM: its weights W2 packed in the VNNI
     * layout (pre-computed: constant), Col the a operand; padded,
     * strided, and the GEMM's rows padded to 64 */
    check_default_op("conv2d_nhwc", "N=1,C=16,H=9,W=9,K=32,R=3,S=3,pad=1,dtype=bfloat16", true);
    check_default_op("conv2d_nhwc", "N=2,C=32,H=8,W=8,K=16,R=1,S=1,stride=2,dtype=bfloat16",
                     true);
    /* float16 has no such instruction: the float32 tile */
    check_default_op("conv2d_nhwc", "N=1,C=16,H=9,W=9,K=32,R=3,S=3,pad=1,dtype=float16", false);
}

/* A CPU without AVX512-BF16 gets the float32 tile by default, and an
 * explicit x86.dpbf16 call refused with the CPU named. */
static void test_cpu_without_it(void **state) {
    (void)state;
    const char *old = "llvm -mcpu=skylake-avx512";
    cg_target t;
    assert_int_equal(cg_target_parse(old, &t, NULL), 0);
    assert_false(t.bf16_dot);
    cg_target_free(&t);
    assert_int_equal(cg_target_parse("c", &t, NULL), 0);
    assert_false(t.bf16_dot);
    cg_target_free(&t);
    assert_int_equal(cg_target_parse("llvm -mcpu=sapphirerapids", &t, NULL), 0);
    assert_true(t.bf16_dot);
    cg_target_free(&t);

    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", "M=16,N=32,K=32,dtype=bfloat16");
    sch_schedule *s = ops_default_schedule(w, old);
    assert_non_null(s);
    const char *text = sch_lower_text(s, w->nargs, w->args);
    assert_non_null(text);
    assert_int_equal(tu_count_substr(text, "x86.dpbf16("), 0);

    s = sch_create(ctx, 1, w->outs);
    pack_b(s, w, false);
    assert_int_equal(tile_acc(s, w, 16, 2), 0);
    expect_build_error(s, w, "cuda -arch=sm_90",
                       "tensorize: stage 'C_acc' at axis 'j.inner' (x86.dpbf16): an x86 CPU "
                       "instruction; the cuda target cannot run it",
                       "(tensorize with wmma.mma or wgmma.mma)");
    expect_build_error(s, w, old, "tensor intrinsic x86.dpbf16 in function 'default' needs a CPU "
                                  "with AVX512-BF16 (VDPBF16PS)",
                       "the target CPU 'skylake-avx512' lacks it");
    te_ctx_free(ctx);
}

/* Each rule the lowering checks, refused with the stage, the axis and the
 * rule named (lowering needs no AVX512-BF16: these run everywhere). */
static void expect_lower_error(const char *shape, bool pack, bool pair_first, int64_t lanes,
                               int64_t ki, const char *a, const char *b) {
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", shape);
    if (!w) fail_msg("%s", te_ctx_errmsg(ctx));
    sch_schedule *s = sch_create(ctx, 1, w->outs);
    if (pack) pack_b(s, w, pair_first);
    assert_int_equal(tile_acc(s, w, lanes, ki), 0);
    assert_null(sch_lower_text(s, w->nargs, w->args));
    tu_assert_msg_has(te_ctx_errmsg(ctx), a, b);
    te_ctx_free(ctx);
}

static void test_refusals(void **state) {
    (void)state;
    const char *bf = "M=4,N=32,K=32,dtype=bfloat16";
    expect_lower_error(bf, false, false, 16, 2,
                       "tensorize: stage 'C_acc' at axis 'j.inner' (x86.dpbf16): operand b 'B' "
                       "has strides 1 along the lanes and 32 within a pair",
                       "x86.dpbf16 needs 2 and 1 (pack the operand by 16 on its columns, then by "
                       "2 on its rows: the VNNI layout)");
    expect_lower_error(bf, true, true, 16, 2,
                       "operand b 'B.global' has strides 1 along the lanes and 16 within a pair",
                       "x86.dpbf16 needs 2 and 1");
    expect_lower_error(bf, true, false, 8, 2, "loop 'j.inner' has extent 8",
                       "the lanes need 16");
    expect_lower_error(bf, true, false, 16, 4, "loop 'k.inner' has extent 4",
                       "the reduction's pair needs 2");
    expect_lower_error("M=4,N=32,K=32,transpose_a=1,dtype=bfloat16", true, false, 16, 2,
                       "operand a 'A' has stride 4 along its pair",
                       "x86.dpbf16 needs 1 (contiguous)");
    expect_lower_error("M=4,N=32,K=32,dtype=float16", true, false, 16, 2,
                       "does not match the intrinsic's",
                       "sum(float32(a[i, k])*float32(b[k, j]), axis=[k])");
    expect_lower_error("M=4,N=40,K=32,dtype=bfloat16", false, false, 16, 2,
                       "the tiles do not divide the extent of 'j' (the nest needs bounds guards "
                       "there)",
                       "choose split factors that divide it");
    expect_lower_error("M=4,N=32,K=32", true, false, 16, 2, "its computation",
                       "does not match the intrinsic's");
    expect_lower_error("M=4,N=32,K=32,dtype=float64", false, false, 16, 2,
                       "stage 'C' at axis 'j.inner' (x86.dpbf16): the stage is float64; "
                       "x86.dpbf16 sums in float32",
                       NULL);
    /* sch_pack_vnni's own refusals: one dimension for both, or none */
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", bf);
    assert_non_null(w);
    te_tensor *acc = acc_of(w);
    sch_schedule *s = sch_create(ctx, w->nouts, w->outs);
    te_tensor *c = sch_cache_read(s, w->inputs[1], "global", 1, &acc);
    assert_non_null(c);
    assert_null(sch_pack_vnni(s, c, 1, 1, 16));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "pack_vnni: stage 'B.global' (rank 2) needs two "
                                          "different dimensions for the columns and the pairs, "
                                          "not 1 and 1");
    assert_null(sch_pack_vnni(s, c, 2, 0, 16));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "not 2 and 0");
    te_ctx_free(ctx);
}

/* The accumulator's vectors of a program of a dot sketch (unit u): the
 * spatial tile levels inside its fusion point (LOCATION 1: 1-3, 2: 2-3). */
static int64_t acc_vectors(const tune_sketch *sk, int u, const tune_program *p) {
    int64_t v = 1, level = 2;
    for (int i = 0; i < sk->nholes; i++)
        if (sk->holes[i].unit == u && sk->holes[i].kind == TUNE_HOLE_LOCATION)
            level = p->vals[sk->holes[i].offset];
    for (int i = 0; i < sk->nholes; i++) {
        const tune_hole *h = &sk->holes[i];
        if (h->unit == u && h->kind == TUNE_HOLE_SPLIT && !h->reduce)
            for (int k = level == 1 ? 0 : 1; k < 3; k++) v *= p->vals[h->offset + k];
    }
    return v;
}

/* Builds program p and checks it against the reference. */
static void check_program(te_ctx *ctx, const tune_workload *w, ops_workload *ow,
                          const tune_sketch *sk, const tune_program *p) {
    sch_schedule *s = tune_program_apply(ctx, w, sk, p);
    if (!s) fail_msg("apply: %s", te_ctx_errmsg(ctx));
    rt_module *m = cg_build(s, w->nargs, w->args, "llvm", NULL);
    if (!m) fail_msg("build: %s", te_ctx_errmsg(ctx));
    int64_t bad = ops_check_module(ow, m, NULL, tu_seed());
    if (bad) fail_msg("%lld mismatches (%s)", (long long)bad, te_ctx_errmsg(ctx));
    rt_module_free(m);
}

/* The tuner's dot sketch (autotune/rules/rule_dot_bf16.c): first among
 * the sketches, its heuristic program the library's tile, and every
 * random or mutated program a valid tensorized one, its accumulator
 * within 96 vectors; some of each built and checked. */
static void test_search_programs(void **state) {
    (void)state;
    if (!host_has_bf16_dot()) skip();
    te_ctx *ctx = te_ctx_new();
    const char *key = "matmul(M=60,N=96,K=64,transpose_a=0,transpose_b=0,dtype=bfloat16)";
    ops_built w;
    if (ops_build_key(ctx, key, &w)) fail_msg("%s", te_ctx_errmsg(ctx));
    ops_workload *ow = ops_from_key(ctx, key);
    assert_non_null(ow);
    tune_sketch sk[8];
    int n = tune_generate_sketches(ctx, &w, sk, 8);
    assert_true(n >= 2);
    tu_assert_msg_has(sk[0].desc, "C_acc: tile SSRSRS on x86.dpbf16 (operand packed VNNI), "
                                  "fuse into C");
    int u = -1;
    for (int k = 0; k < sk[0].nunits; k++)
        if (sk[0].units[k].kind == TUNE_UNIT_TILE_DOT) u = k;
    assert_true(u >= 0);
    tune_program progs[TUNE_MAX_HEURISTIC];
    assert_int_equal(tune_program_heuristic(&sk[0], 0, &w, 16, progs, TUNE_MAX_HEURISTIC), 1);
    assert_int_equal(acc_vectors(&sk[0], u, &progs[0]), 6 * 3); /* 6 rows x 3 of 6 vectors */
    check_program(ctx, &w, ow, &sk[0], &progs[0]);
    uint64_t rng = tu_seed();
    for (int i = 0; i < 200; i++) {
        tune_program p;
        tune_program_random(&sk[0], 0, &rng, &p);
        for (int m = 0; m < 3; m++) (void)tune_program_mutate(&sk[0], &rng, &p);
        int64_t acc = acc_vectors(&sk[0], u, &p);
        if (acc > 96) fail_msg("program %d: an accumulator of %lld vectors", i, (long long)acc);
        sch_schedule *s = tune_program_apply(ctx, &w, &sk[0], &p);
        if (!s || !sch_lower_text(s, w.nargs, w.args))
            fail_msg("program %d: %s", i, te_ctx_errmsg(ctx));
        if (i % 50 == 0) check_program(ctx, &w, ow, &sk[0], &p);
    }
    te_ctx_free(ctx);
}

/* A computation with no ops default (a fused group's bfloat16 MatMul
 * with a bias and a ReLU, rounded to bfloat16): tune_default_schedule
 * takes the dot sketch's heuristic program, and it is right. */
static void test_default_of_a_fused_group(void **state) {
    (void)state;
    if (!host_has_bf16_dot()) skip();
    te_ctx *ctx = te_ctx_new();
    int64_t M = 24, N = 48, K = 40;
    te_tensor *X = te_placeholder(ctx, "X", TE_BFLOAT16, TE_SHAPE(M, K));
    te_tensor *W = te_placeholder(ctx, "W", TE_BFLOAT16, TE_SHAPE(K, N));
    te_tensor *bias = te_placeholder(ctx, "bias", TE_FLOAT32, TE_SHAPE(N));
    te_expr *i = te_axis(ctx, "i", M), *j = te_axis(ctx, "j", N), *k = te_reduce_axis(ctx, "k", K);
    te_expr *prod =
        te_mul(te_cast(TE_FLOAT32, te_read(X, i, k)), te_cast(TE_FLOAT32, te_read(W, k, j)));
    te_tensor *acc = te_compute(ctx, "acc", TE_AXES(i, j), te_sum(prod, k));
    te_expr *y = te_axis(ctx, "y", M), *x = te_axis(ctx, "x", N);
    te_expr *v = te_max(te_add(te_read(acc, y, x), te_read(bias, x)), te_float(ctx, 0.0));
    te_tensor *out = te_compute(ctx, "out", TE_AXES(y, x), te_cast(TE_BFLOAT16, v));
    assert_non_null(out);
    te_tensor *args[4] = {X, W, bias, out};
    tune_workload w = {.nargs = 4, .args = args, .nouts = 1, .outs = &args[3],
                       .flops = 2.0 * M * N * K};
    const char *how = NULL;
    sch_schedule *s = tune_default_schedule(ctx, &w, "llvm", &how);
    if (!s) fail_msg("%s", te_ctx_errmsg(ctx));
    tu_assert_msg_has(how, "on x86.dpbf16", "heuristic program 0");
    rt_module *m = cg_build(s, 4, args, "llvm", NULL);
    if (!m) fail_msg("%s", te_ctx_errmsg(ctx));
    uint64_t seed = tu_seed();
    DLTensor *dx = hu_rand(TE_BFLOAT16, &seed, 2, (int64_t[]){M, K});
    DLTensor *dw = hu_rand(TE_BFLOAT16, &seed, 2, (int64_t[]){K, N});
    DLTensor *db = rt_tensor_alloc((DLDataType){kDLFloat, 32, 1}, 1, (int64_t[]){N});
    for (int64_t q = 0; q < N; q++) ((float *)db->data)[q] = (float)(0.01 * (double)(q % 7) - 0.03);
    DLTensor *dout = hu_nan(TE_BFLOAT16, 2, (int64_t[]){M, N});
    if (rt_call(m, "default", 4, (DLTensor *[]){dx, dw, db, dout}))
        fail_msg("%s", rt_module_errmsg(m));
    const uint16_t *px = dx->data, *pw = dw->data, *po = dout->data;
    int bad = 0;
    for (int64_t r = 0; r < M; r++)
        for (int64_t c = 0; c < N; c++) {
            double want = ((float *)db->data)[c];
            for (int64_t q = 0; q < K; q++)
                want += hu_value(TE_BFLOAT16, px[r * K + q]) * hu_value(TE_BFLOAT16, pw[q * N + c]);
            want = want > 0 ? want : 0;
            double got = hu_value(TE_BFLOAT16, po[r * N + c]);
            /* bfloat16's rounding (2^-8 relative) twice, and float32 sums */
            if (!(fabs(got - want) <= 1e-4 + 1e-6 * (double)K + 0x1p-7 * fabs(want)) && bad++ < 5)
                print_error("out[%lld,%lld] = %.6g, want %.6g\n", (long long)r, (long long)c, got,
                            want);
        }
    assert_int_equal(bad, 0);
    rt_tensor_free(dx), rt_tensor_free(dw), rt_tensor_free(db), rt_tensor_free(dout);
    rt_module_free(m);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_schedule),
        cmocka_unit_test(test_default_schedule),
        cmocka_unit_test(test_cpu_without_it),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_search_programs),
        cmocka_unit_test(test_default_of_a_fused_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
