/*
 * tests/test_pad_guard.c — padding guards (schedule/pad_guard.c): a sum
 * reduction skips the taps that read zero padding.
 *
 * The witness is a weight of +inf on the filter's top-left tap (r = 0,
 * s = 0): where that tap faces the padding (the first output row and
 * column) a computed tap gives 0 * inf = NaN, a skipped one leaves the
 * sum of the real taps, which the double reference computes (it skips
 * out-of-range taps); elsewhere the output is +-inf. Every case is on
 * fresh random data with a NaN-poisoned output: a materialised padding
 * stage, an inlined one (the select is the factor), a copy of it
 * (cache_read), the default packed-tile schedule of conv2d, a vectorized
 * column loop (its conjunct not guarded, the row's still), a max
 * reduction (never guarded: its padding zeros count), a schedule with
 * thread bindings (never guarded) and a padding that is a sliver of the
 * taps (not guarded).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_harness.h"

/* Finite references within tolerance, infinite ones exactly; *nfinite_edge
 * counts finite outputs on the first row or column (the padded taps). */
static int64_t compare_inf(const float *got, const double *want, int64_t K, int64_t OH,
                           int64_t OW, double tol, int64_t *nfinite_edge, int64_t *ninf) {
    int64_t bad = 0;
    *nfinite_edge = *ninf = 0;
    for (int64_t i = 0; i < K * OH * OW; i++) {
        int64_t y = i / OW % OH, x = i % OW;
        bool ok;
        if (isinf(want[i])) {
            ok = got[i] == want[i];
            ++*ninf;
        } else {
            ok = fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i]));
            if (y == 0 || x == 0) ++*nfinite_edge;
        }
        if (!ok && bad++ < 4)
            fprintf(stderr, "  out[%lld] (y %lld, x %lld): got %g, want %g\n", (long long)i,
                    (long long)y, (long long)x, got[i], want[i]);
    }
    return bad;
}

typedef struct {
    int64_t bad, finite_edge, inf;
} inf_result;

/* Builds s (args X, W, O of case c) for target, runs it with W[k,0,r,s]
 * = +inf for every k and compares against c's reference. */
static inf_result run_inf(const sched_case *c, sch_schedule *s, int nargs, te_tensor *const *args,
                          const char *target, int r, int sidx) {
    inf_result res = {-1, 0, 0};
    rt_module *m = cg_build(s, nargs, args, target, NULL);
    if (!m) {
        fprintf(stderr, "build failed: %s\n", te_ctx_errmsg(c->ctx));
        return res;
    }
    uint64_t rng = tu_seed();
    DLTensor *X = tu_rand_f32(&rng, 4, c->in[0]->shape);
    DLTensor *W = tu_rand_f32(&rng, 4, c->in[1]->shape);
    DLTensor *O = tu_nan_f32(4, c->out->shape);
    int64_t C = c->p[1], K = c->p[4], R = c->p[5], S = c->p[6];
    float *w = W->data;
    for (int64_t k = 0; k < K; k++) w[((k * C + 0) * R + r) * S + sidx] = INFINITY;
    int64_t n = rt_tensor_numel(O);
    double *want = malloc(sizeof(double) * (size_t)n);
    c->reference(c, (DLTensor *[]){X, W}, want);
    if (rt_call(m, "default", 3, (DLTensor *[]){X, W, O}))
        fprintf(stderr, "run failed: %s\n", rt_module_errmsg(m));
    else
        res.bad = compare_inf(O->data, want, K, c->out->shape[2], c->out->shape[3],
                              1e-5 * sqrt((double)(C * R * S)), &res.finite_edge, &res.inf);
    free(want);
    rt_tensor_free(X), rt_tensor_free(W), rt_tensor_free(O);
    rt_module_free(m);
    return res;
}

static inf_result run_case(const sched_case *c, sch_schedule *s, const char *target) {
    return run_inf(c, s, 3, (te_tensor *[]){c->in[0], c->in[1], c->out}, target, 0, 0);
}

/* Both kinds of output there: the padded taps skipped (finite edges) and
 * the inf tap computed inside. */
static void assert_skipped(inf_result r) {
    assert_int_equal(r.bad, 0);
    assert_true(r.finite_edge > 0);
    assert_true(r.inf > 0);
}

typedef enum { PAD_ROOT, PAD_INLINED, PAD_COPIED } pad_placement;

/* A 6x5 image, 3x3 filter, padding 1, the padding stage scheduled as
 * `how`, built for each target. */
static void check_placement(pad_placement how, int ntargets, const char *const *targets) {
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_conv2d(ctx, 1, 3, 6, 5, 4, 3, 3, 1, 1);
    sch_schedule *s = sch_create(ctx, TE_TENSORS(c.out));
    if (how == PAD_INLINED) assert_int_equal(sch_compute_inline(s, c.mid), 0);
    if (how == PAD_COPIED)
        assert_non_null(sch_cache_read(s, c.mid, "global", 1, (te_tensor *[]){c.out}));
    for (int t = 0; t < ntargets; t++) assert_skipped(run_case(&c, s, targets[t]));
    te_ctx_free(ctx);
}

static void test_materialised_pad(void **state) {
    (void)state;
    check_placement(PAD_ROOT, 2, (const char *[]){"llvm", "c"});
    /* stride 2, padding 2: more taps over the edge */
    te_ctx *ctx = te_ctx_new();
    sched_case c2 = sh_conv2d(ctx, 1, 2, 9, 8, 3, 3, 3, 2, 2);
    assert_skipped(run_case(&c2, sch_create(ctx, TE_TENSORS(c2.out)), "llvm"));
    te_ctx_free(ctx);
}

static void test_inlined_pad(void **state) {
    (void)state;
    check_placement(PAD_INLINED, 2, (const char *[]){"llvm", "c"});
}

static void test_copy_of_pad(void **state) {
    (void)state;
    check_placement(PAD_COPIED, 1, (const char *[]){"llvm"});
}

/* ResNet-50's c5 shape scaled down: the default schedule's packed tile
 * (vectors over output channels, the 7-wide row in registers). */
static void test_default_conv_schedule(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_conv2d(ctx, 1, 8, 7, 7, 32, 3, 3, 1, 1);
    const char *key = ops_canonical_key(ctx, "conv2d", "N=1,C=8,H=7,W=7,K=32,R=3,S=3,pad=1");
    assert_non_null(key);
    const ops_workload *w = ops_from_key(ctx, key);
    assert_non_null(w);
    sch_schedule *s = ops_default_schedule(w, "llvm");
    assert_non_null(s);
    assert_skipped(run_inf(&c, s, w->nargs, w->args, "llvm", 0, 0));
    /* the bottom-right tap: the last row and column skipped */
    inf_result r = run_inf(&c, s, w->nargs, w->args, "llvm", 2, 2);
    assert_int_equal(r.bad, 0);
    assert_true(r.inf > 0);
    te_ctx_free(ctx);
}

/* Columns vectorized: the column conjunct would be a masked vector
 * operation, so it is not guarded (0 * inf = NaN at x = 0: the documented
 * exception); the rows' conjunct is, so the top-centre tap's inf is
 * skipped on the first row. */
static void test_vectorized_columns(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_conv2d(ctx, 1, 3, 6, 8, 4, 3, 3, 1, 1);
    sch_schedule *s = sch_create(ctx, TE_TENSORS(c.out));
    te_expr *xo, *xi;
    assert_int_equal(sch_split(s, c.out, c.ax[3], 8, &xo, &xi), 0);
    assert_int_equal(
        sch_reorder(s, c.out, TE_AXES(c.ax[0], c.ax[1], c.ax[2], xo, c.rax[0], c.rax[1],
                                      c.rax[2], xi)),
        0);
    assert_int_equal(sch_vectorize(s, c.out, xi), 0);
    inf_result top = run_inf(&c, s, 3, (te_tensor *[]){c.in[0], c.in[1], c.out}, "llvm", 0, 1);
    assert_skipped(top);
    /* the top-left tap: the first row's outputs finite (skipped by the row
     * guard), the first column's below it NaN */
    rt_module *m = cg_build(s, 3, (te_tensor *[]){c.in[0], c.in[1], c.out}, "llvm", NULL);
    assert_non_null(m);
    uint64_t rng = tu_seed();
    DLTensor *X = tu_rand_f32(&rng, 4, c.in[0]->shape), *W = tu_rand_f32(&rng, 4, c.in[1]->shape);
    DLTensor *O = tu_nan_f32(4, c.out->shape);
    float *w = W->data;
    for (int k = 0; k < 4; k++) w[k * 27] = INFINITY;
    assert_int_equal(rt_call(m, "default", 3, (DLTensor *[]){X, W, O}), 0);
    const float *o = O->data;
    for (int k = 0; k < 4; k++) {
        for (int x = 0; x < 8; x++) assert_true(isfinite(o[(k * 6 + 0) * 8 + x]));
        for (int y = 1; y < 6; y++) assert_true(isnan(o[(k * 6 + y) * 8 + 0]));
    }
    rt_tensor_free(X), rt_tensor_free(W), rt_tensor_free(O);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* M[y,x] = max over a 3x3 window of P, P = select(inside, X, 0) with X
 * negative: the padding zeros are the maxima at the edges, so a max
 * reduction must read them. */
static void test_max_not_guarded(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    int64_t H = 5, W = 6;
    te_tensor *X = te_placeholder(ctx, "X", TE_FLOAT32, TE_SHAPE(H, W));
    te_expr *py = te_axis(ctx, "py", H + 2), *px = te_axis(ctx, "px", W + 2);
    te_expr *inside = te_and(te_and(te_ge(py, te_int(ctx, 1)), te_lt(py, te_int(ctx, H + 1))),
                             te_and(te_ge(px, te_int(ctx, 1)), te_lt(px, te_int(ctx, W + 1))));
    te_expr *iy = te_max(te_min(te_sub(py, te_int(ctx, 1)), te_int(ctx, H - 1)), te_int(ctx, 0));
    te_expr *ix = te_max(te_min(te_sub(px, te_int(ctx, 1)), te_int(ctx, W - 1)), te_int(ctx, 0));
    te_tensor *P = te_compute(ctx, "P", TE_AXES(py, px),
                              te_select(inside, te_read(X, iy, ix), te_float(ctx, 0)));
    te_expr *y = te_axis(ctx, "y", H), *x = te_axis(ctx, "x", W);
    te_expr *ry = te_reduce_axis(ctx, "ry", 3), *rx = te_reduce_axis(ctx, "rx", 3);
    te_tensor *M = te_compute(ctx, "M", TE_AXES(y, x),
                              te_rmax(te_read(P, te_add(y, ry), te_add(x, rx)), ry, rx));
    assert_non_null(M);
    sch_schedule *s = sch_create(ctx, TE_TENSORS(M));
    rt_module *m = cg_build(s, 2, (te_tensor *[]){X, M}, "llvm", NULL);
    assert_non_null(m);
    uint64_t rng = tu_seed();
    DLTensor *Xt = tu_rand_f32(&rng, 2, X->shape), *Mt = tu_nan_f32(2, M->shape);
    float *xv = Xt->data;
    for (int64_t i = 0; i < H * W; i++) xv[i] = -0.01f - fabsf(xv[i]); /* negative */
    assert_int_equal(rt_call(m, "default", 2, (DLTensor *[]){Xt, Mt}), 0);
    double want[5 * 6];
    for (int64_t yy = 0; yy < H; yy++)
        for (int64_t xx = 0; xx < W; xx++) {
            double v = -INFINITY;
            for (int64_t a = -1; a <= 1; a++)
                for (int64_t b = -1; b <= 1; b++) {
                    int64_t sy = yy + a, sx = xx + b;
                    double p = sy < 0 || sy >= H || sx < 0 || sx >= W ? 0 : xv[sy * W + sx];
                    v = p > v ? p : v;
                }
            want[yy * W + xx] = v;
        }
    assert_int_equal(tu_compare_f32("max", Mt->data, want, H * W, 0, 0), 0);
    assert_true(want[0] == 0 && want[W + 1] < 0); /* padding at the corner, none inside */
    rt_tensor_free(Xt), rt_tensor_free(Mt);
    rt_module_free(m);
    te_ctx_free(ctx);
}

static int count_ifs(const tir_stmt *s) {
    if (!s) return 0;
    switch (s->kind) {
    case TIR_FOR: return count_ifs(s->u.loop.body);
    case TIR_IF: return 1 + count_ifs(s->u.if_.then_s) + count_ifs(s->u.if_.else_s);
    case TIR_SEQ: {
        int n = 0;
        for (int i = 0; i < s->u.seq.n; i++) n += count_ifs(s->u.seq.stmts[i]);
        return n;
    }
    case TIR_ALLOCATE: return count_ifs(s->u.alloc.body);
    default: return 0;
    }
}

/* Lowered (before the pipeline) with and without a thread binding of the
 * output channels: guards only without. */
static void test_thread_bound_not_guarded(void **state) {
    (void)state;
    for (int bind = 0; bind < 2; bind++) {
        te_ctx *ctx = te_ctx_new();
        sched_case c = sh_conv2d(ctx, 1, 3, 6, 5, 4, 3, 3, 1, 1);
        sch_schedule *s = sch_create(ctx, TE_TENSORS(c.out));
        assert_int_equal(sch_compute_inline(s, c.mid), 0);
        if (bind) assert_int_equal(sch_bind(s, c.out, c.ax[1], "threadIdx.x"), 0);
        tir_func *f = sch_lower(s, TE_TENSORS(c.in[0], c.in[1], c.out), "default");
        assert_non_null(f);
        int n = count_ifs(f->body);
        if (bind) assert_int_equal(n, 0);
        else assert_true(n > 0);
        te_ctx_free(ctx);
    }
}

/* A padding that is a sliver of the taps (64x64, 3x3, padding 1: 1 of
 * 192 (y, ry) pairs a side) is not guarded; 6x5 (1 of 18) is. */
static void test_sliver_not_guarded(void **state) {
    (void)state;
    int64_t sizes[2] = {6, 64};
    for (int i = 0; i < 2; i++) {
        te_ctx *ctx = te_ctx_new();
        sched_case c = sh_conv2d(ctx, 1, 2, sizes[i], sizes[i], 2, 3, 3, 1, 1);
        sch_schedule *s = sch_create(ctx, TE_TENSORS(c.out));
        assert_int_equal(sch_compute_inline(s, c.mid), 0);
        tir_func *f = sch_lower(s, TE_TENSORS(c.in[0], c.in[1], c.out), "default");
        assert_non_null(f);
        if (i == 0) assert_true(count_ifs(f->body) > 0);
        else assert_int_equal(count_ifs(f->body), 0);
        assert_int_equal(sh_run(&c, s, "llvm"), 0);
        te_ctx_free(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_materialised_pad),
        cmocka_unit_test(test_inlined_pad),
        cmocka_unit_test(test_copy_of_pad),
        cmocka_unit_test(test_default_conv_schedule),
        cmocka_unit_test(test_vectorized_columns),
        cmocka_unit_test(test_max_not_guarded),
        cmocka_unit_test(test_thread_bound_not_guarded),
        cmocka_unit_test(test_sliver_not_guarded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
