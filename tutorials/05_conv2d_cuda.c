/*
 * tutorials/05_conv2d_cuda.c — a 2-D convolution (NCHW, 3x3, padding 1;
 * the shape of ResNet-50's layer r50_c3: 128 channels in and out, 28x28)
 * on an NVIDIA GPU:
 *   1. naive: the padding stage inlined, the output's four axes fused and
 *      spread over blocks of 128 threads, the accumulator in a register
 *      (cache_write "local");
 *   2. weights in shared memory: a block computes 8 output channels x 4
 *      rows x 14 columns; for every 4 input channels the block's threads
 *      fetch the 8x4x3x3 weights into shared memory together;
 *   3. both operands in shared memory (the structure of Loom's default
 *      CUDA convolution and of the tuner's best programs): a block
 *      computes 16 channels x 2 rows x 28 columns with 8 x 28 threads,
 *      each thread 2 channels (vthreads) x 2 rows; for every 16 input
 *      channels the threads copy the padded 16x4x30 input tile and the
 *      16x16x3x3 weight tile, then read only shared memory. 112 blocks:
 *      about one per SM of a large GPU, which step 2's 7 x 2 x 16 = 224
 *      blocks of less work each also reach, but with every input read
 *      from global memory 9 times.
 * With a GPU both run and are checked against a CPU reference; without
 * one the CUDA source of step 3 is printed (compiled with NVRTC) and the
 * run is skipped (exit 0). Without NVRTC nothing can be compiled: exit 0,
 * or 77 with --check (what the test suite reads as "skipped").
 *
 * Usage: tutorial_05_conv2d_cuda [--check]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"

enum { N = 1, C = 128, H = 28, W = 28, K = 128, R = 3, S = 3 };

typedef struct {
    te_ctx *ctx;
    te_tensor *I, *Wt, *P, *O;
} conv;

static conv make(void) {
    conv c;
    te_ctx *ctx = c.ctx = te_ctx_new();
    c.I = te_placeholder(ctx, "I", TE_FLOAT32, TE_SHAPE(N, C, H, W));
    c.Wt = te_placeholder(ctx, "Wt", TE_FLOAT32, TE_SHAPE(K, C, R, S));
    te_expr *pn = te_axis(ctx, "pn", N), *pc = te_axis(ctx, "pc", C);
    te_expr *py = te_axis(ctx, "py", H + 2), *px = te_axis(ctx, "px", W + 2);
    te_expr *inside = te_and(te_and(te_ge(py, te_int(ctx, 1)), te_lt(py, te_int(ctx, H + 1))),
                             te_and(te_ge(px, te_int(ctx, 1)), te_lt(px, te_int(ctx, W + 1))));
    te_expr *yy = te_max(te_min(te_sub(py, te_int(ctx, 1)), te_int(ctx, H - 1)), te_int(ctx, 0));
    te_expr *xx = te_max(te_min(te_sub(px, te_int(ctx, 1)), te_int(ctx, W - 1)), te_int(ctx, 0));
    c.P = te_compute(ctx, "Pad", TE_AXES(pn, pc, py, px),
                     te_select(inside, te_read(c.I, pn, pc, yy, xx), te_float(ctx, 0)));
    te_expr *n = te_axis(ctx, "n", N), *k = te_axis(ctx, "k", K), *y = te_axis(ctx, "y", H),
            *x = te_axis(ctx, "x", W);
    te_expr *rc = te_reduce_axis(ctx, "rc", C), *rr = te_reduce_axis(ctx, "rr", R),
            *rs = te_reduce_axis(ctx, "rs", S);
    c.O = te_compute(ctx, "O", TE_AXES(n, k, y, x),
                     te_sum(te_mul(te_read(c.P, n, rc, te_add(y, rr), te_add(x, rs)),
                                   te_read(c.Wt, k, rc, rr, rs)),
                            rc, rr, rs));
    return c;
}

static sch_schedule *naive(conv *c) {
    sch_schedule *s = sch_create(c->ctx, TE_TENSORS(c->O));
    sch_compute_inline(s, c->P);
    te_tensor *OL = sch_cache_write(s, c->O, "local");
    te_tensor *O = c->O;
    te_expr *f, *bo, *ti;
    sch_fuse(s, O, 4, (te_expr *[]){sch_axis(O, 0), sch_axis(O, 1), sch_axis(O, 2), sch_axis(O, 3)}, &f);
    sch_split(s, O, f, 128, &bo, &ti);
    sch_bind(s, O, bo, "blockIdx.x");
    sch_bind(s, O, ti, "threadIdx.x");
    sch_compute_at(s, OL, O, ti);
    return s;
}

/* Stage T (a shared-memory copy) is copied by a block's ty x tx threads
 * together: its axes fused, then split over the threads (cooperative
 * fetching). */
static void coop_fetch(sch_schedule *s, te_tensor *T, int64_t ty, int64_t tx) {
    te_expr *f, *o, *t, *y, *x;
    sch_fuse(s, T, 4, (te_expr *[]){sch_axis(T, 0), sch_axis(T, 1), sch_axis(T, 2), sch_axis(T, 3)}, &f);
    sch_split(s, T, f, ty * tx, &o, &t);
    sch_split(s, T, t, tx, &y, &x);
    sch_bind(s, T, y, "threadIdx.y");
    sch_bind(s, T, x, "threadIdx.x");
}

static sch_schedule *shared_weights(conv *c) {
    sch_schedule *s = sch_create(c->ctx, TE_TENSORS(c->O));
    sch_compute_inline(s, c->P);
    te_tensor *O = c->O;
    te_tensor *OL = sch_cache_write(s, O, "local");
    te_tensor *WS = sch_cache_read(s, c->Wt, "shared", 1, &OL);
    te_expr *ko, *ki, *yo, *yi, *xo, *xi, *f;
    sch_split(s, O, sch_axis(O, 1), 8, &ko, &ki);
    sch_split(s, O, sch_axis(O, 2), 4, &yo, &yi);
    sch_split(s, O, sch_axis(O, 3), 14, &xo, &xi);
    sch_reorder(s, O, 7, (te_expr *[]){sch_axis(O, 0), ko, yo, xo, ki, yi, xi});
    sch_fuse(s, O, 4, (te_expr *[]){sch_axis(O, 0), ko, yo, xo}, &f);
    sch_bind(s, O, f, "blockIdx.x");
    sch_bind(s, O, ki, "threadIdx.y");
    sch_bind(s, O, xi, "threadIdx.x");
    sch_compute_at(s, OL, O, xi);
    te_expr *rco, *rci;
    sch_split(s, OL, sch_reduce_axis(OL, 0), 4, &rco, &rci);
    sch_reorder(s, OL, 2, (te_expr *[]){rco, sch_axis(OL, 2)});
    sch_compute_at(s, WS, OL, rco);
    coop_fetch(s, WS, 8, 14);
    return s;
}

static sch_schedule *shared_both(conv *c) {
    sch_schedule *s = sch_create(c->ctx, TE_TENSORS(c->O));
    te_tensor *O = c->O;
    te_tensor *OL = sch_cache_write(s, O, "local");
    /* The copy reads the padding stage, which is then inlined into it: the
     * padded tile is built in shared memory, never in global memory. */
    te_tensor *PS = sch_cache_read(s, c->P, "shared", 1, &OL);
    te_tensor *WS = sch_cache_read(s, c->Wt, "shared", 1, &OL);
    sch_compute_inline(s, c->P);
    te_expr *kb, *k1, *kv, *kt, *yo, *yi, *xo, *xi, *f;
    sch_split(s, O, sch_axis(O, 1), 16, &kb, &k1);
    sch_split_nparts(s, O, k1, 2, &kv, &kt);
    sch_split(s, O, sch_axis(O, 2), 2, &yo, &yi);
    sch_split(s, O, sch_axis(O, 3), 28, &xo, &xi);
    sch_reorder(s, O, 8, (te_expr *[]){sch_axis(O, 0), kb, yo, xo, kv, kt, xi, yi});
    sch_fuse(s, O, 4, (te_expr *[]){sch_axis(O, 0), kb, yo, xo}, &f);
    sch_bind(s, O, f, "blockIdx.x");
    /* Virtual threads: a thread's two channels are 8 apart, so the 28
     * threads of a row read the same weight (a broadcast). */
    sch_bind(s, O, kv, "vthread");
    sch_bind(s, O, kt, "threadIdx.y");
    sch_bind(s, O, xi, "threadIdx.x");
    sch_compute_at(s, OL, O, xi);
    te_expr *rco, *rci;
    sch_split(s, OL, sch_reduce_axis(OL, 0), 16, &rco, &rci);
    te_expr *rr = sch_reduce_axis(OL, 1), *rs = sch_reduce_axis(OL, 2);
    sch_reorder(s, OL, 7,
                (te_expr *[]){rco, rci, rr, rs, sch_axis(OL, 1), sch_axis(OL, 2), sch_axis(OL, 3)});
    sch_unroll(s, OL, rs);
    sch_unroll(s, OL, sch_axis(OL, 2));
    sch_compute_at(s, PS, OL, rco);
    coop_fetch(s, PS, 8, 28);
    sch_compute_at(s, WS, OL, rco);
    coop_fetch(s, WS, 8, 28);
    return s;
}

static double reference(const float *I, const float *Wt, int k, int y, int x) {
    double acc = 0;
    for (int c = 0; c < C; c++)
        for (int r = 0; r < R; r++)
            for (int q = 0; q < S; q++) {
                int iy = y + r - 1, ix = x + q - 1;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                acc += (double)I[(c * H + iy) * W + ix] * Wt[((k * C + c) * R + r) * S + q];
            }
    return acc;
}

static int run_on_gpu(rt_module *mod, const char *name, DLTensor *i, DLTensor *w, DLTensor *o) {
    DLTensor *d[3] = {rt_cuda_tensor_alloc(i->dtype, 4, i->shape, 0),
                      rt_cuda_tensor_alloc(w->dtype, 4, w->shape, 0),
                      rt_cuda_tensor_alloc(o->dtype, 4, o->shape, 0)};
    rt_timing t;
    int rc = 0;
    /* NaN in the output first: an element the kernel never writes fails. */
    for (int64_t q = 0; q < rt_tensor_numel(o); q++) ((float *)o->data)[q] = NAN;
    if (!d[0] || !d[1] || !d[2] || rt_tensor_copy(d[0], i) || rt_tensor_copy(d[1], w) ||
        rt_tensor_copy(d[2], o) ||
        rt_cuda_time_call(mod, "default", 3, d, NULL, &t) || rt_tensor_copy(o, d[2])) {
        fprintf(stderr, "%s: %s\n", name, rt_last_error());
        rc = 1;
    } else {
        int bad = 0;
        const float *out = o->data;
        for (int k = 0; k < K; k++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    double want = reference(i->data, w->data, k, y, x);
                    if (!(fabs(out[(k * H + y) * W + x] - want) <= 1e-4 + 1e-4 * fabs(want))) bad++;
                }
        printf("%-24s %8.3f ms  %s\n", name, t.median * 1e3, bad ? "WRONG" : "ok");
        rc = bad != 0;
    }
    for (int q = 0; q < 3; q++) rt_tensor_free(d[q]);
    return rc;
}

int main(int argc, char **argv) {
    bool check = argc > 1 && !strcmp(argv[1], "--check");
    if (!rt_nvrtc_available()) {
        printf("NVRTC is not available (%s): nothing to compile; skipped.\n", rt_last_error());
        return check ? 77 : 0;
    }
    bool gpu = rt_cuda_available();
    const char *why = gpu ? "" : rt_last_error();
    DLDataType f32 = {kDLFloat, 32, 1};
    DLTensor *in = rt_tensor_alloc(f32, 4, (int64_t[]){N, C, H, W});
    DLTensor *wt = rt_tensor_alloc(f32, 4, (int64_t[]){K, C, R, S});
    DLTensor *out = rt_tensor_alloc(f32, 4, (int64_t[]){N, K, H, W});
    unsigned seed = 7;
    for (int64_t q = 0; q < rt_tensor_numel(in); q++)
        ((float *)in->data)[q] = (float)((seed = seed * 1103515245u + 12345u) >> 16 & 0xff) / 256.0f;
    for (int64_t q = 0; q < rt_tensor_numel(wt); q++)
        ((float *)wt->data)[q] = (float)((seed = seed * 1103515245u + 12345u) >> 16 & 0xff) / 256.0f - 0.5f;
    static const char *names[3] = {"naive", "shared weights", "shared input and weights"};
    sch_schedule *(*makers[3])(conv *) = {naive, shared_weights, shared_both};
    int rc = 0;
    for (int step = 0; step < 3 && !rc; step++) {
        conv c = make();
        rt_module *mod = cg_build(makers[step](&c), TE_TENSORS(c.I, c.Wt, c.O), "cuda", NULL);
        if (!mod) {
            fprintf(stderr, "%s: %s\n", names[step], te_ctx_errmsg(c.ctx));
            rc = 1;
        } else if (gpu) {
            rc = run_on_gpu(mod, names[step], in, wt, out);
        } else {
            printf("step %d (%s): CUDA C %zu bytes, PTX %zu bytes for %s\n", step + 1, names[step],
                   strlen(rt_module_get_text(mod, "source")), strlen(rt_module_get_text(mod, "ptx")),
                   rt_module_get_text(mod, "arch"));
            if (step == 2 && !check) puts(rt_module_get_text(mod, "source"));
        }
        rt_module_free(mod);
        te_ctx_free(c.ctx);
    }
    if (!gpu) printf("GPU run skipped: %s\n", why);
    rt_tensor_free(in);
    rt_tensor_free(wt);
    rt_tensor_free(out);
    return rc;
}
