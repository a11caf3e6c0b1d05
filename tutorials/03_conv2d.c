/*
 * Tutorial 3: a 2-D convolution (NCHW input, OIHW weights), ResNet-50's
 * 3x3 layer `r50_c3` by default: N=1, C=128, H=W=28, K=128, R=S=3,
 * stride 1, padding 1.
 *
 * The padding is a stage of its own (Pad), which a schedule can inline
 * into the convolution or compute at an inner loop. Steps: naive; Pad
 * inlined and the output row vectorized; a register tile of 6 output
 * channels x 16 output columns accumulated in local memory (cache_write),
 * parallel over channel blocks; and a tile whose weights are read from a
 * packed copy, which, the weights being constant, is computed once
 * (cg_build_options.constant_args, rt_prepare) instead of in every call.
 * Each is checked against a double-precision reference.
 *
 *   ./tutorial_03_conv2d            # r50_c3
 *   ./tutorial_03_conv2d --check    # a small layer, for the tests
 */
#include <loom/loom.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t N = 1, C = 128, H = 28, W = 28, K = 128, R = 3, S = 3, PAD = 1;
#define OH (H + 2 * PAD - R + 1)
#define OW (W + 2 * PAD - S + 1)

typedef struct {
    te_ctx *ctx;
    te_tensor *X, *Wt, *P, *O;
    te_expr *n, *k, *y, *x, *rc, *rr, *rs;
} conv;

static conv declare(void) {
    conv w = {.ctx = te_ctx_new()};
    te_ctx *ctx = w.ctx;
    w.X = te_placeholder(ctx, "X", TE_FLOAT32, TE_SHAPE(N, C, H, W));
    w.Wt = te_placeholder(ctx, "W", TE_FLOAT32, TE_SHAPE(K, C, R, S));
    te_expr *pn = te_axis(ctx, "pn", N), *pc = te_axis(ctx, "pc", C),
            *py = te_axis(ctx, "py", H + 2 * PAD), *px = te_axis(ctx, "px", W + 2 * PAD);
    te_expr *inside =
        te_and(te_and(te_ge(py, te_int(ctx, PAD)), te_lt(py, te_int(ctx, H + PAD))),
               te_and(te_ge(px, te_int(ctx, PAD)), te_lt(px, te_int(ctx, W + PAD))));
    /* Clamped so that the read stays in bounds whichever side is taken. */
    te_expr *iy = te_max(te_min(te_sub(py, te_int(ctx, PAD)), te_int(ctx, H - 1)), te_int(ctx, 0));
    te_expr *ix = te_max(te_min(te_sub(px, te_int(ctx, PAD)), te_int(ctx, W - 1)), te_int(ctx, 0));
    w.P = te_compute(ctx, "Pad", TE_AXES(pn, pc, py, px),
                     te_select(inside, te_read(w.X, pn, pc, iy, ix), te_float(ctx, 0)));
    w.n = te_axis(ctx, "n", N);
    w.k = te_axis(ctx, "k", K);
    w.y = te_axis(ctx, "y", OH);
    w.x = te_axis(ctx, "x", OW);
    w.rc = te_reduce_axis(ctx, "rc", C);
    w.rr = te_reduce_axis(ctx, "rr", R);
    w.rs = te_reduce_axis(ctx, "rs", S);
    w.O = te_compute(ctx, "O", TE_AXES(w.n, w.k, w.y, w.x),
                     te_sum(te_mul(te_read(w.P, w.n, w.rc, te_add(w.y, w.rr), te_add(w.x, w.rs)),
                                   te_read(w.Wt, w.k, w.rc, w.rr, w.rs)),
                            w.rc, w.rr, w.rs));
    return w;
}

static int s_naive(sch_schedule *s, conv *w) { (void)s, (void)w; return 0; }

static int s_inline_vectorize(sch_schedule *s, conv *w) {
    return sch_compute_inline(s, w->P) ||
           sch_reorder(s, w->O, TE_AXES(w->n, w->k, w->y, w->rc, w->rr, w->rs, w->x)) ||
           sch_vectorize(s, w->O, w->x);
}

/* The padded input stays materialised (a cheap pass over C x H x W) so the
 * inner loop reads it as contiguous vectors; an inlined Pad would turn each
 * read into a select over clamped indices, which no vector load can do.
 * The accumulator tile: KT output channels x 16 output columns stay in
 * vector registers while c, r, s run outside them; each step loads one
 * input vector and KT weights and does KT vector FMAs. */
enum { KT = 6, XT = 16 };

static int s_register_tile(sch_schedule *s, conv *w) {
    te_tensor *OL = sch_cache_write(s, w->O, "local");
    te_expr *ko, *ki, *xo, *xi;
    if (!OL || sch_split(s, w->O, w->k, KT, &ko, &ki) || sch_split(s, w->O, w->x, XT, &xo, &xi) ||
        sch_reorder(s, w->O, TE_AXES(w->n, ko, w->y, xo, ki, xi)) ||
        sch_compute_at(s, OL, w->O, xo) || sch_vectorize(s, w->O, xi) ||
        sch_parallel(s, w->O, ko))
        return -1;
    te_expr *ln = sch_axis(OL, 0), *lk = sch_axis(OL, 1), *ly = sch_axis(OL, 2),
            *lx = sch_axis(OL, 3);
    te_expr *lc = sch_reduce_axis(OL, 0), *lr = sch_reduce_axis(OL, 1),
            *ls = sch_reduce_axis(OL, 2);
    return sch_reorder(s, OL, TE_AXES(ln, ly, lc, lr, ls, lk, lx)) || sch_unroll(s, OL, lk) ||
           sch_vectorize(s, OL, lx);
}

/* The same idea with the weights packed: W [K, C, R, S] copied to
 * [K/8, C, R, S, 8] (cache_read + pack), so the 8 weights a step
 * broadcasts sit side by side in one cache line. The copy reads only W;
 * built with W marked constant, it moves to a function of its own that
 * rt_prepare runs once (as a framework packs a layer's weights at load
 * time), and every call reads the packed copy. Tile: 8 channels x 8
 * columns, 8 accumulators. */
enum { KP = 8, XP = 8 };

static int s_packed_weights(sch_schedule *s, conv *w) {
    te_tensor *OL = sch_cache_write(s, w->O, "local");
    te_tensor *WC = OL ? sch_cache_read(s, w->Wt, "global", 1, (te_tensor *[]){OL}) : NULL;
    te_tensor *WP = WC ? sch_pack(s, WC, sch_axis(WC, 0), KP) : NULL;
    te_expr *ko, *ki, *xo, *xi;
    if (!WP || sch_parallel(s, WP, sch_axis(WP, 0)) || sch_vectorize(s, WP, sch_axis(WP, 4)) ||
        sch_split(s, w->O, w->k, KP, &ko, &ki) || sch_split(s, w->O, w->x, XP, &xo, &xi) ||
        sch_reorder(s, w->O, TE_AXES(w->n, ko, w->y, xo, ki, xi)) ||
        sch_compute_at(s, OL, w->O, xo) || sch_vectorize(s, w->O, xi) ||
        sch_parallel(s, w->O, ko))
        return -1;
    te_expr *ln = sch_axis(OL, 0), *lk = sch_axis(OL, 1), *ly = sch_axis(OL, 2),
            *lx = sch_axis(OL, 3);
    te_expr *lc = sch_reduce_axis(OL, 0), *lr = sch_reduce_axis(OL, 1),
            *ls = sch_reduce_axis(OL, 2);
    return sch_reorder(s, OL, TE_AXES(ln, ly, lc, lr, ls, lk, lx)) || sch_unroll(s, OL, lk) ||
           sch_vectorize(s, OL, lx);
}

static const struct {
    const char *name;
    int (*fn)(sch_schedule *, conv *);
    bool constant_weights; /* build with W constant (cg_build_options.constant_args) */
} steps[] = {
    {"naive (Pad computed at the root)", s_naive, false},
    {"Pad inlined, output row vectorized", s_inline_vectorize, false},
    {"6-channel x 16-column register tile (cache_write local), parallel", s_register_tile,
     false},
    {"8x8 tile, weights packed once (constant W, rt_prepare)", s_packed_weights, true},
};

typedef struct {
    rt_prepared *p;
    DLTensor **args;
} call;

static int call_once(void *u) {
    call *c = u;
    return rt_prepared_call(c->p, 3, c->args);
}

int main(int argc, char **argv) {
    bool check = argc > 1 && !strcmp(argv[1], "--check");
    if (check) C = 16, H = 14, W = 13, K = 16;
    DLDataType f32 = {kDLFloat, 32, 1};
    DLTensor *x = rt_tensor_alloc(f32, 4, (int64_t[]){N, C, H, W});
    DLTensor *wt = rt_tensor_alloc(f32, 4, (int64_t[]){K, C, R, S});
    DLTensor *o = rt_tensor_alloc(f32, 4, (int64_t[]){N, K, OH, OW});
    int64_t nout = N * K * OH * OW;
    double *want = malloc(sizeof(double) * (size_t)nout);
    float *px = x->data, *pw = wt->data, *po = o->data;
    srand(3);
    for (int64_t i = 0; i < rt_tensor_numel(x); i++) px[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t i = 0; i < rt_tensor_numel(wt); i++) pw[i] = (float)rand() / RAND_MAX - 0.5f;
    double flops = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t y = 0; y < OH; y++)
                for (int64_t xx = 0; xx < OW; xx++) {
                    double acc = 0;
                    for (int64_t c = 0; c < C; c++)
                        for (int64_t r = 0; r < R; r++)
                            for (int64_t s = 0; s < S; s++) {
                                int64_t iy = y + r - PAD, ix = xx + s - PAD;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                acc += (double)px[((n * C + c) * H + iy) * W + ix] *
                                       pw[((k * C + c) * R + r) * S + s];
                                flops += 2; /* only real taps count as work */
                            }
                    want[((n * K + k) * OH + y) * OW + xx] = acc;
                }
    printf("conv2d N=%lld C=%lld H=%lld W=%lld K=%lld R=S=%lld pad=%lld, %d threads\n",
           (long long)N, (long long)C, (long long)H, (long long)W, (long long)K, (long long)R,
           (long long)PAD, rt_num_threads());
    int failures = 0;
    for (size_t st = 0; st < sizeof steps / sizeof *steps; st++) {
        conv w = declare();
        sch_schedule *s = sch_create(w.ctx, TE_TENSORS(w.O));
        if (!s || steps[st].fn(s, &w)) {
            fprintf(stderr, "%s: %s\n", steps[st].name, te_ctx_errmsg(w.ctx));
            return 1;
        }
        if (st == sizeof steps / sizeof *steps - 1) {
            const char *ir = sch_lower_text(s, TE_TENSORS(w.X, w.Wt, w.O));
            printf("\nLoop program of the last step:\n%s\n", ir ? ir : te_ctx_errmsg(w.ctx));
        }
        /* Argument 1 (W) is constant where the step says so: stages that
         * read only W then run in rt_prepare, once. Without constant
         * arguments, rt_prepare and rt_prepared_call just call "default". */
        cg_build_options opts;
        memset(&opts, 0, sizeof opts);
        opts.constant_args = steps[st].constant_weights ? 1u << 1 : 0;
        rt_module *m = cg_build(s, TE_TENSORS(w.X, w.Wt, w.O), "llvm", &opts);
        if (!m) {
            fprintf(stderr, "%s: build failed: %s\n", steps[st].name, te_ctx_errmsg(w.ctx));
            return 1;
        }
        DLTensor *args[3] = {x, wt, o};
        call c = {rt_prepare(m, "default", 3, args), args};
        for (int64_t i = 0; i < nout; i++) po[i] = NAN;
        if (!c.p || call_once(&c)) {
            fprintf(stderr, "%s\n", rt_last_error());
            return 1;
        }
        int64_t bad = 0;
        for (int64_t i = 0; i < nout; i++)
            if (!(fabs(po[i] - want[i]) <= 1e-4 + 1e-4 * fabs(want[i]))) bad++;
        rt_timer_config cfg = rt_timer_default();
        rt_timing t;
        rt_time(call_once, &c, &cfg, &t);
        printf("%-62s %8.3f ms %8.1f GFLOP/s  %s\n", steps[st].name, t.median * 1e3,
               flops / t.median * 1e-9, bad ? "WRONG" : "correct");
        failures += bad != 0;
        rt_prepared_free(c.p);
        rt_module_free(m);
        te_ctx_free(w.ctx);
    }
    rt_tensor_free(x);
    rt_tensor_free(wt);
    rt_tensor_free(o);
    free(want);
    return failures ? 1 : 0;
}
