/*
 * bench/bench_matmul.c — Loom's hand-scheduled float32 matmul against
 * OpenBLAS sgemm in the same process, and the time from schedule to
 * callable function (lowering + tir passes + LLVM O3 + JIT).
 *
 *   bench_matmul [--size N] [--threads T] [--repeat R] [--tile MRxNR]
 *
 * The default tile is 6x64 on AVX-512 hosts and 6x16 otherwise.
 *
 * The schedule is the one the matmul tutorial ends with (array packing of
 * B into NR-wide panels, an MR x NR accumulator tile in registers via
 * cache_write("local") with k outside it, vectorized columns, parallel row
 * blocks), with the register tile as a parameter. Both sides run with the
 * same thread count; the two are timed interleaved, and each figure is the
 * median of R samples after warm-up (each sample at least 100 ms of calls).
 * The result is checked against a double-precision reference on a sample
 * of rows before anything is timed.
 */
#include <cblas.h>
#include <loom/loom.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    te_ctx *ctx;
    te_tensor *A, *B, *packedB, *C;
    te_expr *i, *j, *k;
} workload;

static workload declare(int64_t n, int64_t nr) {
    workload w = {.ctx = te_ctx_new()};
    te_ctx *ctx = w.ctx;
    w.A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(n, n));
    w.B = te_placeholder(ctx, "B", TE_FLOAT32, TE_SHAPE(n, n));
    te_expr *x = te_axis(ctx, "x", n / nr), *y = te_axis(ctx, "y", n), *z = te_axis(ctx, "z", nr);
    w.packedB = te_compute(ctx, "packedB", TE_AXES(x, y, z),
                           te_read(w.B, y, te_add(te_mul(x, te_int(ctx, nr)), z)));
    w.i = te_axis(ctx, "i", n);
    w.j = te_axis(ctx, "j", n);
    w.k = te_reduce_axis(ctx, "k", n);
    te_expr *b = te_read(w.packedB, te_floordiv(w.j, te_int(ctx, nr)), w.k,
                         te_floormod(w.j, te_int(ctx, nr)));
    w.C = te_compute(ctx, "C", TE_AXES(w.i, w.j), te_sum(te_mul(te_read(w.A, w.i, w.k), b), w.k));
    return w;
}

static int schedule(sch_schedule *s, workload *w, int64_t mr, int64_t nr) {
    te_tensor *CL = sch_cache_write(s, w->C, "local");
    te_expr *io, *jo, *ii, *ji, *cjo, *cji;
    if (!CL || sch_tile(s, w->C, w->i, w->j, mr, nr, &io, &jo, &ii, &ji) ||
        sch_compute_at(s, CL, w->C, jo))
        return -1;
    te_expr *ci = sch_axis(CL, 0), *cj = sch_axis(CL, 1), *ck = sch_reduce_axis(CL, 0);
    if (sch_split(s, CL, cj, 16, &cjo, &cji) || sch_reorder(s, CL, TE_AXES(ck, ci, cjo, cji)) ||
        sch_unroll(s, CL, ci) || sch_unroll(s, CL, cjo) || sch_vectorize(s, CL, cji) ||
        sch_vectorize(s, w->C, ji) || sch_vectorize(s, w->packedB, sch_axis(w->packedB, 2)) ||
        sch_parallel(s, w->C, io) || sch_parallel(s, w->packedB, sch_axis(w->packedB, 0)))
        return -1;
    return 0;
}

typedef struct {
    rt_module *m;
    DLTensor *a, *b, *c;
    int n;
} run_arg;

static int run_loom(void *u) {
    run_arg *r = u;
    return rt_call(r->m, "default", RT_ARGS(r->a, r->b, r->c));
}

static int run_blas(void *u) {
    run_arg *r = u;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r->n, r->n, r->n, 1.0f, r->a->data,
                r->n, r->b->data, r->n, 0.0f, r->c->data, r->n);
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    /* OpenBLAS's idle pthreads spin ~0.1 s after each call, on the cores
     * Loom's next sample needs; it reads the timeout when it loads (4 is
     * its shortest). */
    if (!getenv("OPENBLAS_THREAD_TIMEOUT")) {
        setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
        execv("/proc/self/exe", argv);
    }
    /* Default register tile, as in the matmul tutorial: 6 x 64 with
     * AVX-512, 6 x 16 with AVX2 (see the tutorial for why). */
    char *features = cg_llvm_host_features();
    int64_t n = 1024, mr = 6, nr = features && strstr(features, "+avx512f") ? 64 : 16;
    free(features);
    int threads = 1, repeat = 15;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--size") && a + 1 < argc) n = atoll(argv[++a]);
        else if (!strcmp(argv[a], "--threads") && a + 1 < argc) threads = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--repeat") && a + 1 < argc) repeat = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--tile") && a + 1 < argc &&
                 sscanf(argv[a + 1], "%" SCNd64 "x%" SCNd64, &mr, &nr) == 2) a++;
        else {
            fprintf(stderr, "usage: %s [--size N] [--threads T] [--repeat R] [--tile MRxNR]\n",
                    argv[0]);
            return 2;
        }
    }
    if (n <= 0 || threads <= 0 || repeat <= 0 || mr <= 0 || nr <= 0 || nr % 16 || n % nr) {
        fprintf(stderr, "bench_matmul: need N, T, R > 0, NR a multiple of 16 dividing N\n");
        return 2;
    }
    rt_set_num_threads(threads);
    openblas_set_num_threads(threads);

    /* Compile time: lowering + passes + O3 + JIT, median of 7 builds. */
    double build_s[7];
    rt_module *m = NULL;
    workload w;
    for (int r = 0; r < 7; r++) {
        if (m) rt_module_free(m), te_ctx_free(w.ctx);
        w = declare(n, nr);
        sch_schedule *s = sch_create(w.ctx, TE_TENSORS(w.C));
        if (!s || schedule(s, &w, mr, nr)) {
            fprintf(stderr, "schedule: %s\n", te_ctx_errmsg(w.ctx));
            return 1;
        }
        double t0 = rt_now();
        m = cg_build(s, TE_TENSORS(w.A, w.B, w.C), "llvm", NULL);
        build_s[r] = rt_now() - t0;
        if (!m) {
            fprintf(stderr, "build: %s\n", te_ctx_errmsg(w.ctx));
            return 1;
        }
    }
    qsort(build_s, 7, sizeof(double), cmp_double);

    DLDataType f32 = {kDLFloat, 32, 1};
    int64_t shape[2] = {n, n};
    DLTensor *a = rt_tensor_alloc(f32, 2, shape), *b = rt_tensor_alloc(f32, 2, shape),
             *c = rt_tensor_alloc(f32, 2, shape), *cb = rt_tensor_alloc(f32, 2, shape);
    srand(7);
    for (int64_t x = 0; x < n * n; x++) {
        ((float *)a->data)[x] = (float)rand() / RAND_MAX * 2 - 1;
        ((float *)b->data)[x] = (float)rand() / RAND_MAX * 2 - 1;
        ((float *)c->data)[x] = NAN;
    }
    run_arg lr = {m, a, b, c, (int)n}, br = {m, a, b, cb, (int)n};
    if (run_loom(&lr)) {
        fprintf(stderr, "run: %s\n", rt_module_errmsg(m));
        return 1;
    }
    /* Check 16 rows spread over C against a double reference. */
    const float *A = a->data, *B = b->data, *C = c->data;
    int64_t bad = 0;
    for (int64_t r = 0; r < 16; r++) {
        int64_t i = r * (n - 1) / 15;
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t k = 0; k < n; k++) acc += (double)A[i * n + k] * B[k * n + j];
            if (!(fabs(C[i * n + j] - acc) <= 1e-4 * sqrt((double)n) + 1e-4)) bad++;
        }
    }
    if (bad) {
        fprintf(stderr, "bench_matmul: %lld wrong elements\n", (long long)bad);
        return 1;
    }

    rt_timer_config cfg = {.warmup = 2, .repeat = 1, .min_repeat_ms = 100};
    double tl[64], tb[64];
    if (repeat > 64) repeat = 64;
    for (int r = 0; r < repeat; r++) {
        rt_timing t;
        if (rt_time(run_loom, &lr, &cfg, &t)) return 1;
        tl[r] = t.median;
        rt_time(run_blas, &br, &cfg, &t);
        tb[r] = t.median;
        cfg.warmup = 0;
    }
    qsort(tl, (size_t)repeat, sizeof(double), cmp_double);
    qsort(tb, (size_t)repeat, sizeof(double), cmp_double);
    double flop = 2.0 * (double)n * n * n;
    double ml = tl[repeat / 2], mb = tb[repeat / 2];
    printf("matmul %lldx%lldx%lld float32, %d thread(s), tile %lldx%lld, %d samples\n",
           (long long)n, (long long)n, (long long)n, threads, (long long)mr, (long long)nr,
           repeat);
    printf("  openblas sgemm : %8.3f ms  %7.1f GFLOP/s  (spread %.3f-%.3f ms)\n", mb * 1e3,
           flop / mb * 1e-9, tb[0] * 1e3, tb[repeat - 1] * 1e3);
    printf("  loom           : %8.3f ms  %7.1f GFLOP/s  (spread %.3f-%.3f ms)\n", ml * 1e3,
           flop / ml * 1e-9, tl[0] * 1e3, tl[repeat - 1] * 1e3);
    printf("  ratio loom/openblas (throughput): %.2f\n", mb / ml);
    printf("  schedule -> callable (lower + passes + O3 + JIT): median %.1f ms (min %.1f, max %.1f)\n",
           build_s[3] * 1e3, build_s[0] * 1e3, build_s[6] * 1e3);
    rt_module_free(m);
    te_ctx_free(w.ctx);
    rt_tensor_free(a), rt_tensor_free(b), rt_tensor_free(c), rt_tensor_free(cb);
    return 0;
}
