/*
 * Tutorial 2: how to optimize a matrix multiplication on the CPU.
 *
 * C[M, N] = sum_k A[M, K] * B[K, N], float32, scheduled step by step as in
 * TVM's "How to optimize GEMM on CPU": naive loops; blocking for the
 * cache; vectorization; array packing of B; a register-blocked
 * accumulator tile (cache_write to local memory) with the k loop outside
 * it; and parallel outer blocks. The last step packs B with schedule
 * primitives (cache_read + pack) instead of declaring packedB. Each step prints its loop program (the
 * first time) and its speed, and is checked against a double-precision
 * reference.
 *
 *   ./tutorial_02_matmul_schedule            # M = N = K = 1024
 *   ./tutorial_02_matmul_schedule --check    # M = N = K = 256 (used by the tests)
 *   ./tutorial_02_matmul_schedule --quiet    # no loop programs
 * Exits non-zero when any step computes a wrong result.
 */
#include <loom/loom.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    te_ctx *ctx;
    te_tensor *A, *B, *C, *packedB;
    te_expr *i, *j, *k;
} matmul;

static int64_t M, N, K;
/* The register tile: MR rows of C by BN columns (the width of a packed B
 * panel), accumulated in vector registers while k runs outside it. It must
 * fit the register file: with AVX-512 (32 registers of 16 floats) 6 x 64
 * takes 24 registers; with AVX2 (16 registers of 8 floats) 6 x 16 takes 12.
 * Leaving room for the B vectors and the broadcast A value matters: a tile
 * that spills runs at a third of the speed. */
static int64_t MR = 6, BN = 16;

static void pick_register_tile(void) {
    /* The target we build for says how many floats a vector register
     * holds (16 with AVX-512). */
    cg_target t;
    bool avx512 = cg_target_parse("llvm", &t, NULL) == 0 && t.vector_lanes >= 16;
    cg_target_free(&t);
    BN = avx512 ? 64 : 16;
}

static matmul declare(bool packed) {
    matmul w = {.ctx = te_ctx_new()};
    te_ctx *ctx = w.ctx;
    w.A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(M, K));
    w.B = te_placeholder(ctx, "B", TE_FLOAT32, TE_SHAPE(K, N));
    w.i = te_axis(ctx, "i", M);
    w.j = te_axis(ctx, "j", N);
    w.k = te_reduce_axis(ctx, "k", K);
    te_expr *b = te_read(w.B, w.k, w.j);
    if (packed) {
        /* packedB[jo, k, ji] = B[k, jo*BN + ji]: the panel a tile of C
         * needs is contiguous in memory. */
        te_expr *x = te_axis(ctx, "x", N / BN), *y = te_axis(ctx, "y", K),
                *z = te_axis(ctx, "z", BN);
        w.packedB = te_compute(ctx, "packedB", TE_AXES(x, y, z),
                               te_read(w.B, y, te_add(te_mul(x, te_int(ctx, BN)), z)));
        b = te_read(w.packedB, te_floordiv(w.j, te_int(ctx, BN)), w.k,
                    te_floormod(w.j, te_int(ctx, BN)));
    }
    w.C = te_compute(ctx, "C", TE_AXES(w.i, w.j), te_sum(te_mul(te_read(w.A, w.i, w.k), b), w.k));
    return w;
}

typedef int (*schedule_fn)(sch_schedule *s, matmul *w);

static int s_naive(sch_schedule *s, matmul *w) { (void)s, (void)w; return 0; }

static int s_blocking(sch_schedule *s, matmul *w) {
    te_expr *io, *jo, *ii, *ji, *ko, *ki;
    return sch_tile(s, w->C, w->i, w->j, 32, 32, &io, &jo, &ii, &ji) ||
           sch_split(s, w->C, w->k, 4, &ko, &ki) ||
           sch_reorder(s, w->C, TE_AXES(io, jo, ko, ki, ii, ji));
}

static int s_vectorize(sch_schedule *s, matmul *w) {
    te_expr *io, *jo, *ii, *ji, *ko, *ki;
    return sch_tile(s, w->C, w->i, w->j, 32, 32, &io, &jo, &ii, &ji) ||
           sch_split(s, w->C, w->k, 4, &ko, &ki) ||
           sch_reorder(s, w->C, TE_AXES(io, jo, ko, ki, ii, ji)) ||
           sch_vectorize(s, w->C, ji);
}

/* Packing, a register tile and parallel blocks; `parallel` picks the last. */
static int packed_tile(sch_schedule *s, matmul *w, bool parallel) {
    te_tensor *CL = sch_cache_write(s, w->C, "local");
    te_expr *io, *jo, *ii, *ji;
    if (!CL || sch_tile(s, w->C, w->i, w->j, MR, BN, &io, &jo, &ii, &ji)) return -1;
    if (sch_compute_at(s, CL, w->C, jo)) return -1;
    /* The accumulator tile: MR rows x BN/16 vectors of 16 floats stay in
     * registers while k runs outside them. */
    te_expr *ci = sch_axis(CL, 0), *cj = sch_axis(CL, 1), *ck = sch_reduce_axis(CL, 0);
    te_expr *cjo, *cji;
    if (sch_split(s, CL, cj, 16, &cjo, &cji) ||
        sch_reorder(s, CL, TE_AXES(ck, ci, cjo, cji)) || sch_unroll(s, CL, ci) ||
        sch_unroll(s, CL, cjo) || sch_vectorize(s, CL, cji))
        return -1;
    if (sch_vectorize(s, w->C, ji)) return -1;
    /* Without packedB in the computation, the schedule packs: a copy of B
     * that the accumulator reads (cache_read), stored as [N/BN, K, BN]
     * (pack) — the same layout, the same computation as declared. */
    te_tensor *P = w->packedB;
    if (!P) {
        te_tensor *BG = sch_cache_read(s, w->B, "global", 1, &CL);
        if (!BG || !(P = sch_pack(s, BG, sch_axis(BG, 1), BN))) return -1;
    }
    te_expr *px = sch_axis(P, 0), *pz = sch_axis(P, 2);
    if (sch_vectorize(s, P, pz)) return -1;
    if (parallel && (sch_parallel(s, w->C, io) || sch_parallel(s, P, px))) return -1;
    return 0;
}

static int s_packed(sch_schedule *s, matmul *w) { return packed_tile(s, w, false); }
static int s_parallel(sch_schedule *s, matmul *w) { return packed_tile(s, w, true); }

static const struct {
    const char *name;
    schedule_fn fn;
    bool packed;
} steps[] = {
    {"naive", s_naive, false},
    {"blocking (32x32 tiles, k split by 4)", s_blocking, false},
    {"+ vectorize the inner j loop", s_vectorize, false},
    {"array packing + register tile (cache_write local)", s_packed, true},
    {"+ parallel outer blocks", s_parallel, true},
    {"the same, B packed by the schedule (cache_read + pack)", s_parallel, false},
};

static void reference(const float *A, const float *B, double *C) {
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) C[i * N + j] = 0;
        for (int64_t k = 0; k < K; k++) {
            double a = A[i * K + k];
            for (int64_t j = 0; j < N; j++) C[i * N + j] += a * B[k * N + j];
        }
    }
}

int main(int argc, char **argv) {
    bool check = false, quiet = false;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--check")) check = true;
        else if (!strcmp(argv[a], "--quiet")) quiet = true;
        else {
            fprintf(stderr, "usage: %s [--check] [--quiet]\n", argv[0]);
            return 2;
        }
    }
    M = N = K = check ? 256 : 1024;
    pick_register_tile();
    DLDataType f32 = {kDLFloat, 32, 1};
    DLTensor *a = rt_tensor_alloc(f32, 2, (int64_t[]){M, K});
    DLTensor *b = rt_tensor_alloc(f32, 2, (int64_t[]){K, N});
    DLTensor *c = rt_tensor_alloc(f32, 2, (int64_t[]){M, N});
    double *want = malloc(sizeof(double) * (size_t)(M * N));
    srand(42);
    for (int64_t x = 0; x < M * K; x++) ((float *)a->data)[x] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t x = 0; x < K * N; x++) ((float *)b->data)[x] = (float)rand() / RAND_MAX - 0.5f;
    reference(a->data, b->data, want);

    printf("matmul %lldx%lldx%lld float32, %d threads, register tile %lldx%lld\n",
           (long long)M, (long long)N, (long long)K, rt_num_threads(), (long long)MR,
           (long long)BN);
    int failures = 0;
    for (size_t st = 0; st < sizeof steps / sizeof *steps; st++) {
        matmul w = declare(steps[st].packed);
        sch_schedule *s = sch_create(w.ctx, TE_TENSORS(w.C));
        if (!s || steps[st].fn(s, &w)) {
            fprintf(stderr, "%s: %s\n", steps[st].name, te_ctx_errmsg(w.ctx));
            return 1;
        }
        if (!quiet) {
            const char *ir = sch_lower_text(s, TE_TENSORS(w.A, w.B, w.C));
            printf("\n== %s ==\n%s", steps[st].name, ir ? ir : te_ctx_errmsg(w.ctx));
        }
        double t0 = rt_now();
        rt_module *m = cg_build(s, TE_TENSORS(w.A, w.B, w.C), "llvm", NULL);
        double build_ms = (rt_now() - t0) * 1e3;
        if (!m) {
            fprintf(stderr, "%s: build failed: %s\n", steps[st].name, te_ctx_errmsg(w.ctx));
            return 1;
        }
        float *pc = c->data;
        for (int64_t x = 0; x < M * N; x++) pc[x] = NAN;
        if (rt_call(m, "default", RT_ARGS(a, b, c))) {
            fprintf(stderr, "%s\n", rt_module_errmsg(m));
            return 1;
        }
        int64_t bad = 0;
        for (int64_t x = 0; x < M * N; x++)
            if (!(fabs(pc[x] - want[x]) <= 1e-4 + 1e-4 * fabs(want[x]))) bad++;
        rt_timer_config cfg = rt_timer_default();
        cfg.repeat = st == 0 ? 1 : 5;
        rt_timing t;
        rt_time_call(m, "default", RT_ARGS(a, b, c), &cfg, &t);
        printf("%-58s %8.2f ms %8.1f GFLOP/s  build %5.1f ms  %s\n", steps[st].name,
               t.median * 1e3, 2.0 * (double)(M * N * K) / t.median * 1e-9, build_ms,
               bad ? "WRONG" : "correct");
        failures += bad != 0;
        rt_module_free(m);
        te_ctx_free(w.ctx);
    }
    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_tensor_free(c);
    free(want);
    return failures ? 1 : 0;
}
