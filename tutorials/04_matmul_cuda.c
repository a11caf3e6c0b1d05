/*
 * tutorials/04_matmul_cuda.c — matmul on an NVIDIA GPU, in the steps of
 * TVM's "How to optimize GEMM on GPU":
 *   1. naive: one thread per output, 16x16 threads per block;
 *   2. shared-memory tiling: the block's A and B tiles are fetched into
 *      shared memory by all its threads, then every thread reads them from
 *      there (__syncthreads() is inserted by Loom);
 *   3. register tiling with virtual threads: 64x64 per block, 8x8 threads,
 *      each thread 2x2 vthreads of 4x4 outputs held in registers, tiles
 *      fetched with float4 loads.
 * Each schedule is lowered, turned into CUDA C and compiled with NVRTC.
 * With a GPU it is run, checked against a CPU reference and timed with
 * CUDA events; without one the CUDA source of step 3 is printed and the
 * run is skipped (exit 0). Without NVRTC nothing can be compiled: exit 0,
 * or 77 with --check (what the test suite reads as "skipped").
 *
 * Usage: tutorial_04_matmul_cuda [--check] [N]   (N: matrix size, 1024)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"

typedef struct {
    te_ctx *ctx;
    te_tensor *A, *B, *C;
    te_expr *i, *j, *k;
} mm;

static mm make(int64_t n) {
    mm m;
    m.ctx = te_ctx_new();
    m.A = te_placeholder(m.ctx, "A", TE_FLOAT32, TE_SHAPE(n, n));
    m.B = te_placeholder(m.ctx, "B", TE_FLOAT32, TE_SHAPE(n, n));
    m.i = te_axis(m.ctx, "i", n);
    m.j = te_axis(m.ctx, "j", n);
    m.k = te_reduce_axis(m.ctx, "k", n);
    m.C = te_compute(m.ctx, "C", TE_AXES(m.i, m.j),
                     te_sum(te_mul(te_read(m.A, m.i, m.k), te_read(m.B, m.k, m.j)), m.k));
    return m;
}

static sch_schedule *naive(mm *m) {
    sch_schedule *s = sch_create(m->ctx, TE_TENSORS(m->C));
    te_expr *io, *jo, *ii, *ji;
    sch_tile(s, m->C, m->i, m->j, 16, 16, &io, &jo, &ii, &ji);
    sch_bind(s, m->C, io, "blockIdx.y");
    sch_bind(s, m->C, jo, "blockIdx.x");
    sch_bind(s, m->C, ii, "threadIdx.y");
    sch_bind(s, m->C, ji, "threadIdx.x");
    return s;
}

/* Fuse a shared stage's axes and spread them over ty x tx threads,
 * `vec` consecutive elements per thread (vectorized). */
static void fetch(sch_schedule *s, te_tensor *T, int64_t ty, int64_t tx, int64_t vec) {
    te_expr *f, *v, *o, *t, *y, *x;
    sch_fuse(s, T, 2, (te_expr *[]){sch_axis(T, 0), sch_axis(T, 1)}, &f);
    if (vec > 1) {
        sch_split(s, T, f, vec, &f, &v);
        sch_vectorize(s, T, v);
    }
    sch_split(s, T, f, ty * tx, &o, &t);
    sch_split(s, T, t, tx, &y, &x);
    sch_bind(s, T, y, "threadIdx.y");
    sch_bind(s, T, x, "threadIdx.x");
}

static sch_schedule *shared(mm *m) {
    sch_schedule *s = sch_create(m->ctx, TE_TENSORS(m->C));
    te_tensor *CC = sch_cache_write(s, m->C, "local");
    te_tensor *AA = sch_cache_read(s, m->A, "shared", 1, &CC);
    te_tensor *BB = sch_cache_read(s, m->B, "shared", 1, &CC);
    te_expr *io, *jo, *ii, *ji, *ko, *ki;
    sch_tile(s, m->C, sch_axis(m->C, 0), sch_axis(m->C, 1), 16, 16, &io, &jo, &ii, &ji);
    sch_bind(s, m->C, io, "blockIdx.y");
    sch_bind(s, m->C, jo, "blockIdx.x");
    sch_bind(s, m->C, ii, "threadIdx.y");
    sch_bind(s, m->C, ji, "threadIdx.x");
    sch_compute_at(s, CC, m->C, ji);
    sch_split(s, CC, sch_reduce_axis(CC, 0), 16, &ko, &ki);
    sch_compute_at(s, AA, CC, ko);
    sch_compute_at(s, BB, CC, ko);
    fetch(s, AA, 16, 16, 1);
    fetch(s, BB, 16, 16, 1);
    return s;
}

static sch_schedule *vthread(mm *m) {
    sch_schedule *s = sch_create(m->ctx, TE_TENSORS(m->C));
    te_tensor *CC = sch_cache_write(s, m->C, "local");
    te_tensor *AA = sch_cache_read(s, m->A, "shared", 1, &CC);
    te_tensor *BB = sch_cache_read(s, m->B, "shared", 1, &CC);
    te_expr *by, *bx, *yi, *xi, *tyz, *txz, *ty, *tx;
    sch_split(s, m->C, sch_axis(m->C, 0), 64, &by, &yi);
    sch_split(s, m->C, sch_axis(m->C, 1), 64, &bx, &xi);
    sch_split_nparts(s, m->C, yi, 2, &tyz, &yi);
    sch_split_nparts(s, m->C, yi, 8, &ty, &yi);
    sch_split_nparts(s, m->C, xi, 2, &txz, &xi);
    sch_split_nparts(s, m->C, xi, 8, &tx, &xi);
    sch_reorder(s, m->C, 8, (te_expr *[]){by, bx, tyz, txz, ty, tx, yi, xi});
    sch_bind(s, m->C, by, "blockIdx.y");
    sch_bind(s, m->C, bx, "blockIdx.x");
    sch_bind(s, m->C, tyz, "vthread");
    sch_bind(s, m->C, txz, "vthread");
    sch_bind(s, m->C, ty, "threadIdx.y");
    sch_bind(s, m->C, tx, "threadIdx.x");
    sch_compute_at(s, CC, m->C, tx);
    te_expr *yo = sch_axis(CC, 0), *xo = sch_axis(CC, 1), *ko, *ki;
    sch_split(s, CC, sch_reduce_axis(CC, 0), 8, &ko, &ki);
    sch_reorder(s, CC, 4, (te_expr *[]){ko, ki, yo, xo});
    sch_unroll(s, CC, ki);
    sch_unroll(s, CC, yo);
    sch_unroll(s, CC, xo);
    sch_compute_at(s, AA, CC, ko);
    sch_compute_at(s, BB, CC, ko);
    fetch(s, AA, 8, 8, 4);
    fetch(s, BB, 8, 8, 4);
    return s;
}

static void fill(float *p, int64_t n, unsigned seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
}

/* Copies in, times with CUDA events, copies back and checks 512 sampled
 * outputs against a double-precision dot product. */
static int run_on_gpu(rt_module *mod, const char *name, int64_t n, DLTensor *a, DLTensor *b,
                      DLTensor *c) {
    DLDataType f32 = {kDLFloat, 32, 1};
    int64_t shape[2] = {n, n};
    DLTensor *d[3] = {rt_cuda_tensor_alloc(f32, 2, shape, 0), rt_cuda_tensor_alloc(f32, 2, shape, 0),
                      rt_cuda_tensor_alloc(f32, 2, shape, 0)};
    rt_timer_config cfg = rt_timer_default();
    cfg.repeat = 10;
    cfg.min_repeat_ms = 50;
    rt_timing t;
    int rc = 0;
    /* NaN in the output first: an element the kernel never writes fails. */
    for (int64_t q = 0; q < n * n; q++) ((float *)c->data)[q] = NAN;
    if (!d[0] || !d[1] || !d[2] || rt_tensor_copy(d[0], a) || rt_tensor_copy(d[1], b) ||
        rt_tensor_copy(d[2], c) || rt_cuda_time_call(mod, "default", 3, d, &cfg, &t) || rt_tensor_copy(c, d[2])) {
        fprintf(stderr, "%s: %s\n", name, rt_last_error());
        rc = 1;
    } else {
        const float *A = a->data, *B = b->data, *C = c->data;
        int bad = 0;
        for (int q = 0; q < 512; q++) {
            int64_t i = (q * 7919) % n, j = (q * 104729 + 13) % n;
            double want = 0;
            for (int64_t k = 0; k < n; k++) want += (double)A[i * n + k] * B[k * n + j];
            if (!(fabs(C[i * n + j] - want) <= 1e-3 + 1e-4 * fabs(want) * sqrt((double)n))) bad++;
        }
        printf("%-28s %9.3f ms  %8.1f GFLOP/s  %s\n", name, t.median * 1e3,
               2.0 * n * n * n / t.median * 1e-9, bad ? "WRONG" : "ok");
        rc = bad != 0;
    }
    for (int i = 0; i < 3; i++) rt_tensor_free(d[i]);
    return rc;
}

int main(int argc, char **argv) {
    bool check = argc > 1 && !strcmp(argv[1], "--check");
    int64_t n = argc > 1 + check ? atoll(argv[1 + check]) : (check ? 256 : 1024);
    if (n < 64 || n % 64) {
        fprintf(stderr, "N must be a positive multiple of 64\n");
        return 1;
    }
    if (!rt_nvrtc_available()) {
        printf("NVRTC is not available (%s): nothing to compile; skipped.\n", rt_last_error());
        return check ? 77 : 0;
    }
    bool gpu = rt_cuda_available();
    const char *why = gpu ? "" : rt_last_error();
    static const char *names[3] = {"naive", "shared-memory tiling", "register tiling + vthreads"};
    sch_schedule *(*makers[3])(mm *) = {naive, shared, vthread};
    DLDataType f32 = {kDLFloat, 32, 1};
    int64_t shape[2] = {n, n};
    if (gpu) printf("matmul %lld^3 float32 on the GPU:\n", (long long)n);
    DLTensor *a = rt_tensor_alloc(f32, 2, shape), *b = rt_tensor_alloc(f32, 2, shape);
    DLTensor *c = rt_tensor_alloc(f32, 2, shape);
    fill(a->data, n * n, 1);
    fill(b->data, n * n, 2);
    int rc = 0;
    for (int step = 0; step < 3 && !rc; step++) {
        mm m = make(n);
        sch_schedule *s = makers[step](&m);
        rt_module *mod = cg_build(s, TE_TENSORS(m.A, m.B, m.C), "cuda", NULL);
        if (!mod) {
            fprintf(stderr, "%s: %s\n", names[step], te_ctx_errmsg(m.ctx));
            rc = 1;
        } else if (!gpu) {
            printf("step %d (%s): CUDA C %zu bytes, PTX %zu bytes for %s\n", step + 1, names[step],
                   strlen(rt_module_get_text(mod, "source")), strlen(rt_module_get_text(mod, "ptx")),
                   rt_module_get_text(mod, "arch"));
            if (step == 2 && !check) puts(rt_module_get_text(mod, "source"));
        } else {
            rc = run_on_gpu(mod, names[step], n, a, b, c);
        }
        rt_module_free(mod);
        te_ctx_free(m.ctx);
    }
    if (!gpu) printf("GPU run skipped: %s\n", why);
    rt_tensor_free(a);
    rt_tensor_free(b);
    rt_tensor_free(c);
    return rc;
}
