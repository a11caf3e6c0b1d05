/*
 * tests/test_cuda_wgmma.c — Hopper's warpgroup MMA: the wgmma GEMM
 * template (ops_schedule_tc_gemm with .wgmma) and the matmul default on
 * sm_90, generated as CUDA C and compiled with NVRTC for sm_90a (the PTX
 * checked for wgmma, its fences and the swizzled copies), run on an sm_90
 * GPU against the workload's double reference where there is one; and the
 * errors of sch_swizzle, of the wgmma intrinsics and of the template.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_skip.h"
#include "testutil.h"

/* Runs m on the GPU when it is an sm_90 one (the code is sm_90a's). */
static void check_on_sm90(const ops_workload *w, rt_module *m) {
    if (rt_cuda_available() && tu_gpu_cc() != 90) {
        tu_skip_part("the GPU run", "the GPU is not sm_90 (wgmma is sm_90a's)");
        return;
    }
    tu_check_on_gpu(w, m);
}

static void build_check(const char *shape, const ops_tc_config *c, const char *form) {
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", shape);
    if (!w) fail_msg("%s: %s", shape, te_ctx_errmsg(ctx));
    sch_schedule *s = sch_create(ctx, 1, &w->args[2]);
    if (ops_schedule_tc_gemm(s, w->args[2], w->args[0], w->args[1], c))
        fail_msg("%s: %s", shape, te_ctx_errmsg(ctx));
    char *json = tdb_schedule_to_json(s);
    assert_non_null(strstr(json, "{\"kind\":\"swizzle\""));
    free(json);
    rt_module *m = cg_build(s, w->nargs, w->args, "cuda -arch=sm_90", NULL);
    if (!m) fail_msg("%s: %s", shape, te_ctx_errmsg(ctx));
    const char *src = rt_module_get_text(m, "source"), *ptx = rt_module_get_text(m, "ptx");
    if (getenv("LOOM_TEST_DUMP")) fputs(src, stderr);
    /* compiled for the architecture-specific target wgmma needs */
    assert_string_equal(rt_module_get_text(m, "arch"), "sm_90a");
    if (!strstr(ptx, form)) fail_msg("%s: the PTX lacks '%s'", shape, form);
    /* a pipeline of S >= 3 stages copies S-2 chunks ahead and leaves the
     * newest chunk's wgmma group in flight at its barriers */
    char wait[64];
    snprintf(wait, sizeof wait, "cp.async.wait_group %d", c->stages - 2);
    if (c->stages >= 3) {
        assert_non_null(strstr(src, "loom_wgmma_wait<1>(); loom_async_proxy_fence();"));
        assert_non_null(strstr(ptx, wait));
        assert_non_null(strstr(ptx, "wgmma.wait_group.sync.aligned 1"));
    } else {
        assert_null(strstr(src, "loom_wgmma_wait<1>"));
    }
    /* a grouped launch order is one grid axis */
    if (c->group_m > 1) assert_non_null(strstr(src, "// grid (16, 1, 1)"));
    static const char *const needles[] = {"wgmma.fence.sync.aligned", "wgmma.commit_group",
                                          "wgmma.wait_group.sync.aligned 0",
                                          "fence.proxy.async.shared::cta", NULL};
    for (int i = 0; needles[i]; i++)
        if (!strstr(ptx, needles[i])) fail_msg("%s: the PTX lacks '%s'", shape, needles[i]);
    /* the operand copies go through the swizzle, 16 bytes a copy (with a
     * pipeline a cp.async, else a uint4 move) */
    const char *a = c->stages > 1 ? "loom_cp_async16(&A_shared[loom_swz<1>("
                                  : "*(uint4 *)(A_shared + loom_swz<1>(";
    const char *b = c->stages > 1 ? "loom_cp_async16(&B_shared[loom_swz<1>("
                                  : "*(uint4 *)(B_shared + loom_swz<1>(";
    if (!strstr(src, a) || !strstr(src, b)) fail_msg("%s: the source lacks '%s' or '%s'", shape, a, b);
    check_on_sm90(w, m);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* The template over its shapes: one and two 128-byte panels of B, one
 * and two warpgroups, 1 to 4 stages, float16 and
 * bfloat16 inputs with float16/bfloat16 outputs (rounded as stored). */
static void test_gemm(void **state) {
    (void)state;
    tu_require_nvrtc();
    build_check("M=256,N=256,K=320,dtype=float16",
                &(ops_tc_config){.bm = 128, .bn = 128, .wm = 64, .wn = 128, .kc = 64, .stages = 3, .wgmma = true},
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16");
    build_check("M=128,N=256,K=256,dtype=bfloat16",
                &(ops_tc_config){.bm = 128, .bn = 256, .wm = 64, .wn = 256, .kc = 64, .stages = 4, .wgmma = true},
                "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16");
    build_check("M=192,N=64,K=128,dtype=float16",
                &(ops_tc_config){.bm = 64, .bn = 64, .wm = 64, .wn = 64, .kc = 64, .stages = 2, .wgmma = true},
                "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16");
    build_check("M=128,N=192,K=128,dtype=float16",
                &(ops_tc_config){.bm = 128, .bn = 64, .wm = 128, .wn = 64, .kc = 64, .stages = 1, .wgmma = true},
                "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16");
    /* blocks launched in groups of 4 block rows (one grid axis) */
    build_check("M=1024,N=256,K=128,dtype=float16",
                &(ops_tc_config){.bm = 128, .bn = 128, .wm = 64, .wn = 128, .kc = 64, .stages = 3, .wgmma = true, .group_m = 4},
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16");
    build_check("M=128,N=128,K=256,dtype=float16",
                &(ops_tc_config){.bm = 128, .bn = 128, .wm = 64, .wn = 64, .kc = 128, .stages = 2, .wgmma = true},
                "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16");
    /* both operands m/n-major (A [K, M], B [K, N]): their 128-byte rows
     * run along m and n, so a chunk of 32 (64 bytes of k) will do */
    build_check("M=128,N=128,K=96,transpose_a=1,dtype=float16",
                &(ops_tc_config){.bm = 128, .bn = 128, .wm = 64, .wn = 128, .kc = 32, .stages = 3, .wgmma = true},
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16");
}

/* matmul's default on sm_90 is the wgmma template; on sm_80 WMMA's. */
static void test_default(void **state) {
    (void)state;
    tu_require_nvrtc();
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", "M=256,N=512,K=256,dtype=float16");
    assert_non_null(w);
    sch_schedule *s = ops_default_schedule(w, "cuda -arch=sm_90");
    if (!s) fail_msg("default: %s", te_ctx_errmsg(ctx));
    rt_module *m = cg_build(s, w->nargs, w->args, "cuda -arch=sm_90", NULL);
    if (!m) fail_msg("build: %s", te_ctx_errmsg(ctx));
    assert_non_null(strstr(rt_module_get_text(m, "ptx"), "wgmma.mma_async"));
    check_on_sm90(w, m);
    rt_module_free(m);
    s = ops_default_schedule(w, "cuda -arch=sm_80");
    assert_non_null(s);
    m = cg_build(s, w->nargs, w->args, "cuda -arch=sm_80", NULL);
    if (!m) fail_msg("build: %s", te_ctx_errmsg(ctx));
    assert_null(strstr(rt_module_get_text(m, "ptx"), "wgmma"));
    assert_non_null(strstr(rt_module_get_text(m, "ptx"), "mma.sync.aligned"));
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* matmul's sm_90 default takes A and B in either layout on wgmma: 16-bit
 * operands copied as stored (the transpose bits say which are
 * mn-major), tf32 ones k-major (an mn-major one copied transposed, one
 * element a copy); the form's helper is named by the two operands' major
 * (n: k-major, t: mn-major). On an sm_90 GPU each runs against the double
 * reference at the operator's tolerance, NaN-poisoned output. */
static void test_layouts(void **state) {
    (void)state;
    tu_require_nvrtc();
    static const struct {
        const char *shape, *ptx, *helper;
        bool copy4;  /* an operand copied transposed, 4 bytes a copy */
        bool copy16; /* an operand copied as stored, 16 bytes a copy */
    } cases[] = {
        {"M=256,N=256,K=192,transpose_b=1,dtype=float16", "m64n128k16.f32.f16.f16", "_f16_nn(", false, true},
        {"M=256,N=256,K=192,transpose_a=1,dtype=float16", "m64n128k16.f32.f16.f16", "_f16_tt(", false, true},
        {"M=128,N=192,K=128,transpose_a=1,transpose_b=1,dtype=bfloat16", "m64n64k16.f32.bf16.bf16",
         "_bf16_tn(", false, true},
        {"M=256,N=256,K=96,tf32=1", "m64n128k8.f32.tf32.tf32", "_tf32_nn(", true, true},
        {"M=256,N=128,K=64,tf32=1,transpose_b=1", "m64n128k8.f32.tf32.tf32", "_tf32_nn(", false, true},
        /* both operands copied transposed */
        {"M=128,N=256,K=160,tf32=1,transpose_a=1", "m64n128k8.f32.tf32.tf32", "_tf32_nn(", true, false},
        {"M=4096,N=4096,K=4096,tf32=1", "m64n256k8.f32.tf32.tf32", "_tf32_nn(", true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        te_ctx *ctx = te_ctx_new();
        ops_workload *w = ops_build(ctx, "matmul", cases[i].shape);
        if (!w) fail_msg("%s: %s", cases[i].shape, te_ctx_errmsg(ctx));
        sch_schedule *s = ops_default_schedule(w, "cuda -arch=sm_90");
        if (!s) fail_msg("%s: %s", w->key, te_ctx_errmsg(ctx));
        char *json = tdb_schedule_to_json(s);
        assert_int_equal(strstr(json, "\"transposed\":1") != NULL, cases[i].copy4);
        free(json);
        rt_module *m = cg_build(s, w->nargs, w->args, "cuda -arch=sm_90", NULL);
        if (!m) fail_msg("%s: %s", w->key, te_ctx_errmsg(ctx));
        const char *src = rt_module_get_text(m, "source"), *ptx = rt_module_get_text(m, "ptx");
        if (getenv("LOOM_TEST_DUMP")) fputs(src, stderr);
        if (!strstr(ptx, cases[i].ptx)) fail_msg("%s: the PTX lacks '%s'", w->key, cases[i].ptx);
        if (!strstr(src, cases[i].helper)) fail_msg("%s: no helper '%s'", w->key, cases[i].helper);
        assert_int_equal(strstr(src, "loom_cp_async4(") != NULL, cases[i].copy4);
        assert_int_equal(strstr(src, "loom_cp_async16(") != NULL, cases[i].copy16);
        check_on_sm90(w, m);
        rt_module_free(m);
        te_ctx_free(ctx);
    }
    /* no tensor-core schedule for a transposed tf32 matmul wgmma's tiles
     * do not divide, nor before sm_90 */
    static const struct {
        const char *shape, *target, *msg;
    } refused[] = {
        {"M=48,N=80,K=32,tf32=1,transpose_b=1", "cuda -arch=sm_90",
         "matmul tf32=1: no tensor-core schedule takes M=48 N=80 K=32, transposed, on sm_90 "
         "(WMMA: M, N and K multiples of 16, no transposes; wgmma, sm_90 only: M and N "
         "multiples of 64, K of 32)"},
        {"M=128,N=128,K=64,tf32=1,transpose_a=1", "cuda -arch=sm_80",
         "no tensor-core schedule takes M=128 N=128 K=64, transposed, on sm_80"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        te_ctx *ctx = te_ctx_new();
        ops_workload *w = ops_build(ctx, "matmul", refused[i].shape);
        assert_non_null(w);
        assert_null(ops_default_schedule(w, refused[i].target));
        tu_assert_msg_has(te_ctx_errmsg(ctx), refused[i].msg);
        te_ctx_free(ctx);
    }
    /* WMMA's template: no transposed operand */
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", "M=64,N=64,K=64,transpose_b=1,dtype=float16");
    assert_non_null(w);
    sch_schedule *s = sch_create(ctx, 1, &w->args[2]);
    assert_int_equal(ops_schedule_tc_gemm(s, w->args[2], w->args[0], w->args[1], NULL), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "tc_gemm: 'C' reads A as [K, M] or B as [N, K]; WMMA's "
                                          "template takes A [M, K] and B [K, N] (wgmma, on sm_90, "
                                          "takes either)");
    te_ctx_free(ctx);
}

static void expect_tc(const char *shape, ops_tc_config c, const char *msg) {
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", shape);
    assert_non_null(w);
    sch_schedule *s = sch_create(ctx, 1, &w->args[2]);
    c.wgmma = true;
    assert_int_equal(ops_schedule_tc_gemm(s, w->args[2], w->args[0], w->args[1], &c), -1);
    if (!strstr(te_ctx_errmsg(ctx), msg)) fail_msg("got '%s', want '%s'", te_ctx_errmsg(ctx), msg);
    te_ctx_free(ctx);
}

/* The architecture names the defaults read: compute capability and the
 * shared memory a block may opt in to. */
static void test_arch_cc(void **state) {
    (void)state;
    assert_int_equal(cg_cuda_arch_cc("sm_90"), 90);
    assert_int_equal(cg_cuda_arch_cc("sm_90a"), 90);
    assert_int_equal(cg_cuda_arch_cc("compute_80"), 80);
    assert_int_equal(cg_cuda_arch_cc("sm_"), 0);
    assert_int_equal(cg_cuda_arch_cc("gfx90a"), 0);
    assert_int_equal(cg_cuda_arch_cc(NULL), 0);
    assert_int_equal(cg_cuda_optin_shared("sm_90a"), 232448);
    assert_int_equal(cg_cuda_optin_shared("sm_80"), 166912);
    assert_int_equal(cg_cuda_optin_shared("gfx90a"), 49152);
}

static void test_template_errors(void **state) {
    (void)state;
    expect_tc("M=128,N=128,K=96,tf32=1", (ops_tc_config){.kc = 16},
              "the chunk and the block's columns whole 128-byte rows");
    expect_tc("M=128,N=128,K=128,dtype=float16", (ops_tc_config){.wm = 32},
              "tc_gemm: wgmma block 128x128, warpgroup 32x128, chunk 64 do not tile 128x128x128");
    expect_tc("M=128,N=128,K=96,dtype=float16", (ops_tc_config){.kc = 32},
              "the chunk and the block's columns whole 128-byte rows");
    expect_tc("M=256,N=256,K=128,dtype=float16", (ops_tc_config){.bm = 256, .bn = 256, .wm = 128, .wn = 256},
              "tc_gemm: a 128x256 warpgroup tile holds 256 sums a thread; at most 128 fit the registers");
    expect_tc("M=1024,N=128,K=128,dtype=float16", (ops_tc_config){.bm = 1024, .bn = 128, .wm = 64, .wn = 128},
              "tc_gemm: 16 warpgroups a block; at most 8");
    expect_tc("M=256,N=256,K=256,dtype=float16",
              (ops_tc_config){.bm = 256, .bn = 256, .wm = 64, .wn = 128, .kc = 64, .stages = 4},
              "tc_gemm: the shared tiles take 262144 bytes; a block has 232448");
    expect_tc("M=128,N=128,K=128,dtype=float16", (ops_tc_config){.stages = 5},
              "tc_gemm: 5 pipeline stages; a pipeline has 1 to 4");
    expect_tc("M=384,N=128,K=128,dtype=float16", (ops_tc_config){.group_m = 2},
              "tc_gemm: a group of 2 block rows does not divide the 3 block rows");
}

typedef struct {
    te_ctx *ctx;
    te_tensor *A, *B, *C;
} mm;

static mm make_mm(te_dtype t, int64_t M, int64_t N, int64_t K) {
    mm m = {te_ctx_new(), NULL, NULL, NULL};
    m.C = tu_matmul(m.ctx, t, M, N, K, &m.A, &m.B);
    assert_non_null(m.C);
    return m;
}

static void expect_build(mm *m, sch_schedule *s, const char *target, const char *msg) {
    te_tensor *args[3] = {m->A, m->B, m->C};
    rt_module *mod = cg_build(s, 3, args, target, NULL);
    if (mod) fail_msg("built; want '%s'", msg);
    if (!strstr(te_ctx_errmsg(m->ctx), msg))
        fail_msg("got '%s', want '%s'", te_ctx_errmsg(m->ctx), msg);
}

/* A one-warpgroup wgmma GEMM written out by hand, with knobs that break
 * one rule each. */
typedef struct {
    bool no_swizzle_b, local_a, acc_width_half;
    bool warp_copies;  /* the copies on 64 threads: no whole warpgroup */
    bool transposed_b; /* B's copy stored k-major (sch_swizzle_transposed) */
} knobs;

static sch_schedule *hand(mm *m, knobs o) {
    sch_schedule *s = sch_create(m->ctx, 1, &m->C);
    te_tensor *C = m->C;
    te_tensor *CF = sch_cache_write(s, C, "wgmma.accumulator");
    te_tensor *AS = sch_cache_read(s, m->A, o.local_a ? "local" : "shared", 1, &CF);
    te_tensor *BS = sch_cache_read(s, m->B, "shared", 1, &CF);
    te_expr *bi, *ii, *bj, *jj, *cii, *cj, *cjj, *ko, *k1, *kf, *kii;
    assert_int_equal(sch_split(s, C, sch_axis(C, 0), 64, &bi, &ii) ||
                         sch_split(s, C, sch_axis(C, 1), 64, &bj, &jj) ||
                         sch_reorder(s, C, 4, (te_expr *[]){bi, bj, ii, jj}) ||
                         sch_bind(s, C, bi, "blockIdx.y") || sch_bind(s, C, bj, "blockIdx.x"),
                     0);
    assert_int_equal(sch_tensorize(s, C, ii, "wgmma.store"), 0);
    assert_int_equal(sch_compute_at(s, CF, C, bj), 0);
    cii = sch_axis(CF, 0);
    cj = sch_axis(CF, 1);
    int bytes = te_dtype_bytes(m->A->dtype);
    assert_int_equal(sch_split(s, CF, sch_reduce_axis(CF, 0), 128 / bytes, &ko, &k1) ||
                         sch_split(s, CF, k1, 32 / bytes, &kf, &kii),
                     0);
    if (o.acc_width_half) {
        assert_int_equal(sch_split(s, CF, cj, 32, &cjj, &cj), 0);
        assert_int_equal(sch_reorder(s, CF, 6, (te_expr *[]){ko, kf, cjj, cii, cj, kii}), 0);
    } else {
        assert_int_equal(sch_reorder(s, CF, 5, (te_expr *[]){ko, kf, cii, cj, kii}), 0);
    }
    assert_int_equal(sch_tensorize(s, CF, cii, "wgmma.mma"), 0);
    te_tensor *sh[2] = {AS, BS};
    for (int q = 0; q < 2; q++) {
        te_tensor *T = sh[q];
        te_expr *f, *v, *o2, *x;
        assert_int_equal(sch_compute_at(s, T, CF, ko), 0);
        bool tb = q == 1 && o.transposed_b;
        if (tb) assert_int_equal(sch_swizzle_transposed(s, T), 0);
        else if (!(q == 1 && o.no_swizzle_b) && !(q == 0 && o.local_a))
            assert_int_equal(sch_swizzle(s, T), 0);
        assert_int_equal(sch_fuse(s, T, 2, (te_expr *[]){sch_axis(T, 0), sch_axis(T, 1)}, &f), 0);
        if (!tb)
            assert_int_equal(sch_split(s, T, f, 16 / bytes, &f, &v) || sch_vectorize(s, T, v), 0);
        assert_int_equal(sch_split(s, T, f, o.warp_copies ? 64 : 128, &o2, &x) ||
                             sch_bind(s, T, x, "threadIdx.x"),
                         0);
    }
    return s;
}

static void test_intrinsic_errors(void **state) {
    (void)state;
    tu_require_nvrtc();
    /* the hand schedule builds as it is */
    mm m = make_mm(TE_FLOAT16, 128, 128, 128);
    te_tensor *args[3] = {m.A, m.B, m.C};
    rt_module *mod = cg_build(hand(&m, (knobs){0}), 3, args, "cuda -arch=sm_90", NULL);
    if (!mod) fail_msg("build: %s", te_ctx_errmsg(m.ctx));
    assert_non_null(strstr(rt_module_get_text(mod, "ptx"), "m64n64k16.f32.f16.f16"));
    rt_module_free(mod);
    te_ctx_free(m.ctx);

    m = make_mm(TE_FLOAT16, 128, 128, 128);
    expect_build(&m, hand(&m, (knobs){.no_swizzle_b = true}), "cuda -arch=sm_90",
                 "(wgmma.mma): operand b 'B.shared' is shared memory not swizzled; wgmma reads its "
                 "operands from shared memory in the swizzled layout (sch_swizzle)");
    te_ctx_free(m.ctx);
    m = make_mm(TE_FLOAT16, 128, 128, 128);
    expect_build(&m, hand(&m, (knobs){.acc_width_half = true}), "cuda -arch=sm_90",
                 "accumulator 'C.wgmma.accumulator' is 64 columns wide and the tile 32; a wgmma "
                 "tile spans the accumulator's whole width");
    te_ctx_free(m.ctx);
    m = make_mm(TE_FLOAT16, 128, 128, 128);
    expect_build(&m, hand(&m, (knobs){.warp_copies = true}), "cuda -arch=sm_90",
                 "calls wgmma with threadIdx.x of extent 64; a warpgroup is threadIdx.x of 128 "
                 "(bind the warpgroups to threadIdx.y and threadIdx.z)");
    te_ctx_free(m.ctx);
    /* tf32: both operands k-major, B's copy stored transposed */
    m = make_mm(TE_FLOAT32, 128, 128, 128);
    expect_build(&m, hand(&m, (knobs){0}), "cuda -arch=sm_90",
                 "(wgmma.mma): operand b 'B.shared' is stored n-major; tf32's wgmma reads both "
                 "operands k-major, its rows along k (sch_swizzle_transposed stores an [k, m] or "
                 "[k, n] copy so)");
    te_ctx_free(m.ctx);
    m = make_mm(TE_FLOAT32, 128, 128, 128);
    args[0] = m.A, args[1] = m.B, args[2] = m.C;
    sch_schedule *s = hand(&m, (knobs){.transposed_b = true});
    char *json = tdb_schedule_to_json(s);
    assert_int_equal(tu_count_substr(json, "\"kind\":\"swizzle\""), 2);
    assert_int_equal(tu_count_substr(json, "\"transposed\":1}"), 1);
    free(json);
    mod = cg_build(s, 3, args, "cuda -arch=sm_90", NULL);
    if (!mod) fail_msg("build: %s", te_ctx_errmsg(m.ctx));
    assert_non_null(strstr(rt_module_get_text(mod, "ptx"), "m64n64k8.f32.tf32.tf32"));
    assert_non_null(strstr(rt_module_get_text(mod, "source"), "loom_wgmma_n64_tf32_nn("));
    /* B's column (k) runs along the stored rows: one element a copy */
    assert_non_null(strstr(rt_module_get_text(mod, "source"), "B_shared[loom_swz<2>("));
    rt_module_free(mod);
    te_ctx_free(m.ctx);
    /* 16-bit B stored k-major too: the plain form of wgmma ("nn") */
    m = make_mm(TE_FLOAT16, 128, 128, 128);
    args[0] = m.A, args[1] = m.B, args[2] = m.C;
    mod = cg_build(hand(&m, (knobs){.transposed_b = true}), 3, args, "cuda -arch=sm_90", NULL);
    if (!mod) fail_msg("build: %s", te_ctx_errmsg(m.ctx));
    assert_non_null(strstr(rt_module_get_text(mod, "source"), "loom_wgmma_n64_f16_nn("));
    rt_module_free(mod);
    te_ctx_free(m.ctx);
    /* the swizzle's own rules */
    m = make_mm(TE_FLOAT16, 128, 128, 128);
    expect_build(&m, hand(&m, (knobs){.local_a = true}), "cuda -arch=sm_90",
                 "'A.local' is local memory; wgmma reads its operands");
    te_ctx_free(m.ctx);
    m = make_mm(TE_FLOAT16, 128, 128, 128);
    s = hand(&m, (knobs){0});
    expect_build(&m, s, "llvm",
                 "swizzle: stage 'A.shared' is in shared memory of a CPU function; the swizzled "
                 "layout is for shared memory of a GPU kernel");
    te_ctx_free(m.ctx);
    m = make_mm(TE_FLOAT16, 64, 64, 32);
    s = sch_create(m.ctx, 1, &m.C);
    te_tensor *AS = sch_cache_read(s, m.A, "shared", 1, &m.C);
    te_expr *o, *i, *ko, *ki;
    assert_int_equal(sch_split(s, m.C, sch_axis(m.C, 0), 8, &o, &i) ||
                         sch_bind(s, m.C, o, "blockIdx.x") || sch_bind(s, m.C, i, "threadIdx.x") ||
                         sch_split(s, m.C, sch_reduce_axis(m.C, 0), 32, &ko, &ki) ||
                         sch_compute_at(s, AS, m.C, ko) || sch_swizzle(s, AS),
                     0);
    expect_build(&m, s, "cuda -arch=sm_90",
                 "swizzle: buffer 'A.shared' is 8x32 elements of 2 bytes; the swizzled layout "
                 "needs rows of a multiple of 128 bytes and a multiple of 8 rows");
    /* transposed, its 8 rows of 32 (64 bytes) are its stored columns */
    sch_step st = *sch_get_step(s, sch_num_steps(s) - 1);
    assert_int_equal(st.kind, SCH_STEP_SWIZZLE);
    st.value = 1;
    assert_int_equal(sch_apply_step(s, &st), 0);
    expect_build(&m, s, "cuda -arch=sm_90",
                 "swizzle: buffer 'A.shared' is 8x32 elements of 2 bytes, stored transposed (its "
                 "columns the rows); the swizzled layout needs rows of a multiple of 128 bytes "
                 "and a multiple of 8 rows");
    st.value = 2;
    assert_int_equal(sch_apply_step(s, &st), -1);
    tu_assert_msg_has(te_ctx_errmsg(m.ctx), "swizzle: stage 'A.shared': transposed is 2; it is 0 "
                                            "or 1");
    assert_int_equal(sch_storage_align(s, AS, sch_axis(AS, 0), 64, 8), 0);
    expect_build(&m, s, "cuda -arch=sm_90",
                 "swizzle: stage 'A.shared' also has storage_align; the swizzled layout fixes its "
                 "rows at 128 bytes (no padding)");
    /* what cannot take a layout */
    assert_int_equal(sch_swizzle(s, m.A), -1);
    assert_non_null(strstr(te_ctx_errmsg(m.ctx), "swizzle: stage 'A' is a placeholder"));
    assert_int_equal(sch_swizzle(s, m.C), -1);
    assert_non_null(strstr(te_ctx_errmsg(m.ctx), "swizzle: stage 'C' is an output; only a "
                                                 "shared-memory copy (cache_read) can change its layout"));
    te_ctx_free(m.ctx);
}

/* An NHWC implicit-GEMM convolution (3x3, pad 1) on wgmma: the im2col
 * gather computed as it is copied, each 8-channel chunk of one tap one
 * zero-filling cp.async (the padding reads nothing); on an sm_90 GPU
 * against a double reference, NaN-poisoned output, float16 inputs and
 * float32 sums of at most 576 exact products: |err| <= 576 * 2^-24 * sum
 * |products| + half a float16 ulp of the result. */
static void test_conv_nhwc(void **state) {
    (void)state;
    tu_require_nvrtc();
    enum { N = 2, C = 64, H = 8, W = 8, K = 64, R = 3, S = 3 };
    const int64_t P = N * H * W, Q = R * S * C;
    te_ctx *ctx = te_ctx_new();
    te_tensor *X = te_placeholder(ctx, "X", TE_FLOAT16, TE_SHAPE(N, H, W, C));
    te_tensor *Wt = te_placeholder(ctx, "W", TE_FLOAT16, TE_SHAPE(Q, K));
    te_expr *p = te_axis(ctx, "p", P), *q = te_axis(ctx, "q", Q);
    te_expr *n = te_floordiv(p, te_int(ctx, H * W)),
            *oh = te_floordiv(te_floormod(p, te_int(ctx, H * W)), te_int(ctx, W)),
            *ow = te_floormod(p, te_int(ctx, W));
    te_expr *r = te_floordiv(q, te_int(ctx, S * C)),
            *sx = te_floordiv(te_floormod(q, te_int(ctx, S * C)), te_int(ctx, C)),
            *c = te_floormod(q, te_int(ctx, C));
    te_expr *ih = te_sub(te_add(oh, r), te_int(ctx, 1)), *iw = te_sub(te_add(ow, sx), te_int(ctx, 1));
    te_expr *in = te_and(te_and(te_ge(ih, te_int(ctx, 0)), te_lt(ih, te_int(ctx, H))),
                         te_and(te_ge(iw, te_int(ctx, 0)), te_lt(iw, te_int(ctx, W))));
    te_tensor *Col = te_compute(ctx, "Col", TE_AXES(p, q),
                                te_select(in, te_read(X, n, ih, iw, c),
                                          te_cast(TE_FLOAT16, te_float(ctx, 0))));
    te_expr *p2 = te_axis(ctx, "p", P), *k2 = te_axis(ctx, "k", K), *rq = te_reduce_axis(ctx, "rq", Q);
    te_tensor *F = te_compute(ctx, "F", TE_AXES(p2, k2),
                              te_sum(te_mul(te_cast(TE_FLOAT32, te_read(Col, p2, rq)),
                                            te_cast(TE_FLOAT32, te_read(Wt, rq, k2))),
                                     rq));
    sch_schedule *s = sch_create(ctx, 1, &F);
    ops_tc_config cfg = {.bm = 64, .bn = 64, .wm = 64, .wn = 64, .kc = 64, .stages = 3, .wgmma = true};
    if (ops_schedule_tc_gemm(s, F, Col, Wt, &cfg)) fail_msg("%s", te_ctx_errmsg(ctx));
    te_tensor *args[3] = {X, Wt, F};
    rt_module *m = cg_build(s, 3, args, "cuda -arch=sm_90", NULL);
    if (!m) fail_msg("build: %s", te_ctx_errmsg(ctx));
    const char *src = rt_module_get_text(m, "source");
    if (getenv("LOOM_TEST_DUMP")) fputs(src, stderr);
    assert_non_null(strstr(src, "loom_cp_async16_zfill(&Col_shared[loom_swz<1>("));
    assert_non_null(strstr(rt_module_get_text(m, "ptx"), "cp.async.cg.shared.global"));
    if (tu_gpu_cc() != 90) {
        tu_skip_part("the GPU run", rt_cuda_available() ? "the GPU is not sm_90" : rt_last_error());
    } else {
        uint64_t rng = tu_seed();
        DLDataType h = {kDLFloat, 16, 1}, f = {kDLFloat, 32, 1};
        DLTensor *hx = rt_tensor_alloc(h, 4, (int64_t[]){N, H, W, C}),
                 *hw = rt_tensor_alloc(h, 2, (int64_t[]){Q, K}), *hf = tu_nan_f32(2, (int64_t[]){P, K});
        for (int64_t e = 0; e < rt_tensor_numel(hx); e++) rt_tensor_set(hx, e, tu_rand_uniform(&rng, -1, 1));
        for (int64_t e = 0; e < rt_tensor_numel(hw); e++) rt_tensor_set(hw, e, tu_rand_uniform(&rng, -1, 1));
        DLTensor *d[3] = {rt_cuda_tensor_alloc(h, 4, hx->shape, 0), rt_cuda_tensor_alloc(h, 2, hw->shape, 0),
                          rt_cuda_tensor_alloc(f, 2, hf->shape, 0)};
        assert_int_equal(rt_tensor_copy(d[0], hx) || rt_tensor_copy(d[1], hw) || rt_tensor_copy(d[2], hf), 0);
        if (rt_call(m, "default", 3, d)) fail_msg("run: %s", rt_module_errmsg(m));
        assert_int_equal(rt_tensor_copy(hf, d[2]), 0);
        int64_t bad = 0;
        for (int64_t pp = 0; pp < P; pp++)
            for (int64_t k = 0; k < K; k++) {
                int64_t b = pp / (H * W), y = pp % (H * W) / W, x = pp % W;
                double want = 0, mag = 0;
                for (int64_t rr = 0; rr < R; rr++)
                    for (int64_t ss = 0; ss < S; ss++)
                        for (int64_t cc = 0; cc < C; cc++) {
                            int64_t yy = y + rr - 1, xx = x + ss - 1;
                            if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                            double v = rt_tensor_get(hx, ((b * H + yy) * W + xx) * C + cc) *
                                       rt_tensor_get(hw, ((rr * S + ss) * C + cc) * K + k);
                            want += v;
                            mag += v < 0 ? -v : v;
                        }
                double got = ((float *)hf->data)[pp * K + k];
                if (!(got - want <= Q * 0x1p-24 * mag + 1e-6 && want - got <= Q * 0x1p-24 * mag + 1e-6) &&
                    bad++ < 5)
                    fprintf(stderr, "F[%lld, %lld] = %g, want %g\n", (long long)pp, (long long)k, got, want);
            }
        assert_int_equal(bad, 0);
        for (int i = 0; i < 3; i++) rt_tensor_free(d[i]);
        rt_tensor_free(hx);
        rt_tensor_free(hw);
        rt_tensor_free(hf);
    }
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* conv2d_nhwc's 16-bit default on the GPU: the implicit GEMM on wgmma
 * (sm_90, where its tiles divide the GEMM: 64-row blocks in four stages)
 * or WMMA (sm_80, and sm_90 where wgmma's 64 columns do not divide the
 * output channels), the GEMM's rows padded to 64, the im2col gather's
 * taps zero-filling cp.asyncs, the output copied 16 bytes a thread; on the GPU against the operator's
 * double reference at ops_tolerance, output NaN-poisoned. */
static void test_conv_default(void **state) {
    (void)state;
    tu_require_nvrtc();
    static const struct {
        const char *shape, *arch, *ptx;
    } cases[] = {
        {"N=2,C=64,H=8,W=8,K=64,R=3,S=3,pad=1,dtype=float16", "sm_90",
         "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"},
        /* 4 blocks of 64 x 128, under half the SMs: 64 wide instead */
        {"N=4,C=64,H=8,W=8,K=128,R=3,S=3,stride=1,pad=1,dtype=bfloat16", "sm_90",
         "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"},
        /* 72 x 2 blocks of 64 x 128 */
        {"N=2,C=64,H=48,W=48,K=256,R=3,S=3,stride=1,pad=1,dtype=float16", "sm_90",
         "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"},
        /* 16 output positions, the GEMM's rows padded to 64 */
        {"N=1,C=64,H=7,W=7,K=64,R=3,S=3,stride=2,pad=1,dtype=float16", "sm_90",
         "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"},
        /* 48 output channels: no wgmma tile */
        {"N=1,C=32,H=7,W=7,K=48,R=3,S=3,pad=1,dtype=float16", "sm_90", "mma.sync.aligned"},
        {"N=2,C=64,H=8,W=8,K=64,R=3,S=3,pad=1,dtype=float16", "sm_80", "mma.sync.aligned"},
        {"N=1,C=32,H=8,W=8,K=48,R=1,S=1,dtype=bfloat16", "sm_80", "mma.sync.aligned"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        te_ctx *ctx = te_ctx_new();
        ops_workload *w = ops_build(ctx, "conv2d_nhwc", cases[i].shape);
        if (!w) fail_msg("%s: %s", cases[i].shape, te_ctx_errmsg(ctx));
        char target[64];
        snprintf(target, sizeof target, "cuda -arch=%s", cases[i].arch);
        sch_schedule *s = ops_default_schedule(w, target);
        if (!s) fail_msg("%s: %s", w->key, te_ctx_errmsg(ctx));
        rt_module *m = cg_build(s, w->nargs, w->args, target, NULL);
        if (!m) fail_msg("%s: %s", w->key, te_ctx_errmsg(ctx));
        const char *src = rt_module_get_text(m, "source"), *ptx = rt_module_get_text(m, "ptx");
        if (getenv("LOOM_TEST_DUMP")) fputs(src, stderr);
        if (!strstr(ptx, cases[i].ptx)) fail_msg("%s on %s: the PTX lacks '%s'", w->key, target, cases[i].ptx);
        if (strstr(cases[i].ptx, "mma.sync")) assert_null(strstr(ptx, "wgmma"));
        /* the GEMM, then the copy into O */
        assert_int_equal(tu_count_substr(src, "__global__"), 2);
        assert_non_null(strstr(src, "*(uint4 *)(O + "));
        if (strstr(cases[i].shape, "pad=1")) assert_non_null(strstr(src, "loom_cp_async16_zfill(&Col_shared["));
        if (!strcmp(cases[i].arch, "sm_90")) check_on_sm90(w, m);
        else tu_check_on_gpu(w, m);
        rt_module_free(m);
        te_ctx_free(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_default),
        cmocka_unit_test(test_layouts),
        cmocka_unit_test(test_arch_cc),
        cmocka_unit_test(test_template_errors),
        cmocka_unit_test(test_intrinsic_errors),
        cmocka_unit_test(test_conv_nhwc),
        cmocka_unit_test(test_conv_default),
    };
    return tu_run_group(tests);
}
