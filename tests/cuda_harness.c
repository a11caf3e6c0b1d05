/*
 * tests/cuda_harness.c — see cuda_harness.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_harness.h"

#define CHECK(x)                                                                              \
    do {                                                                                      \
        if (!(x)) {                                                                           \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #x,                 \
                    te_ctx_errmsg(c->ctx));                                                   \
            return NULL;                                                                      \
        }                                                                                     \
    } while (0)

sch_schedule *ch_matmul_naive(const sched_case *c, int64_t tile) {
    te_tensor *C = c->out;
    sch_schedule *s = sch_create(c->ctx, 1, &C);
    te_expr *io, *jo, *ii, *ji;
    CHECK(s && !sch_tile(s, C, c->ax[0], c->ax[1], tile, tile, &io, &jo, &ii, &ji));
    CHECK(!sch_bind(s, C, io, "blockIdx.y") && !sch_bind(s, C, jo, "blockIdx.x"));
    CHECK(!sch_bind(s, C, ii, "threadIdx.y") && !sch_bind(s, C, ji, "threadIdx.x"));
    return s;
}

/* Spreads a shared stage's copy over ty x tx threads: fuse its axes,
 * split off `vec` lanes (vectorized when > 1), then tx and ty. */
static int coop_fetch(sch_schedule *s, te_tensor *T, int64_t ty, int64_t tx, int64_t vec) {
    te_expr *f, *o, *v, *t, *y, *x;
    if (sch_fuse(s, T, 2, (te_expr *[]){sch_axis(T, 0), sch_axis(T, 1)}, &f)) return -1;
    if (vec > 1) {
        if (sch_split(s, T, f, vec, &f, &v) || sch_vectorize(s, T, v)) return -1;
    }
    if (sch_split(s, T, f, ty * tx, &o, &t) || sch_split(s, T, t, tx, &y, &x)) return -1;
    if (sch_bind(s, T, y, "threadIdx.y") || sch_bind(s, T, x, "threadIdx.x")) return -1;
    return 0;
}

sch_schedule *ch_matmul_shared(const sched_case *c, int64_t tile) {
    te_tensor *C = c->out, *A = c->in[0], *B = c->in[1];
    sch_schedule *s = sch_create(c->ctx, 1, &C);
    CHECK(s);
    te_tensor *CC = sch_cache_write(s, C, "local");
    CHECK(CC);
    te_tensor *AA = sch_cache_read(s, A, "shared", 1, &CC);
    te_tensor *BB = sch_cache_read(s, B, "shared", 1, &CC);
    CHECK(AA && BB);
    te_expr *io, *jo, *ii, *ji, *ko, *ki;
    CHECK(!sch_tile(s, C, sch_axis(C, 0), sch_axis(C, 1), tile, tile, &io, &jo, &ii, &ji));
    CHECK(!sch_bind(s, C, io, "blockIdx.y") && !sch_bind(s, C, jo, "blockIdx.x"));
    CHECK(!sch_bind(s, C, ii, "threadIdx.y") && !sch_bind(s, C, ji, "threadIdx.x"));
    CHECK(!sch_compute_at(s, CC, C, ji));
    CHECK(!sch_split(s, CC, sch_reduce_axis(CC, 0), tile, &ko, &ki));
    CHECK(!sch_compute_at(s, AA, CC, ko) && !sch_compute_at(s, BB, CC, ko));
    CHECK(!coop_fetch(s, AA, tile, tile, 1) && !coop_fetch(s, BB, tile, tile, 1));
    return s;
}

sch_schedule *ch_matmul_vthread(const sched_case *c) {
    te_tensor *C = c->out, *A = c->in[0], *B = c->in[1];
    sch_schedule *s = sch_create(c->ctx, 1, &C);
    CHECK(s);
    te_tensor *CC = sch_cache_write(s, C, "local");
    CHECK(CC);
    te_tensor *AA = sch_cache_read(s, A, "shared", 1, &CC);
    te_tensor *BB = sch_cache_read(s, B, "shared", 1, &CC);
    CHECK(AA && BB);
    te_expr *by, *bx, *yi, *xi, *tyz, *txz, *ty, *tx;
    CHECK(!sch_split(s, C, sch_axis(C, 0), 64, &by, &yi));
    CHECK(!sch_split(s, C, sch_axis(C, 1), 64, &bx, &xi));
    CHECK(!sch_split_nparts(s, C, yi, 2, &tyz, &yi) && !sch_split_nparts(s, C, yi, 8, &ty, &yi));
    CHECK(!sch_split_nparts(s, C, xi, 2, &txz, &xi) && !sch_split_nparts(s, C, xi, 8, &tx, &xi));
    CHECK(!sch_reorder(s, C, 8, (te_expr *[]){by, bx, tyz, txz, ty, tx, yi, xi}));
    CHECK(!sch_bind(s, C, by, "blockIdx.y") && !sch_bind(s, C, bx, "blockIdx.x"));
    CHECK(!sch_bind(s, C, tyz, "vthread") && !sch_bind(s, C, txz, "vthread"));
    CHECK(!sch_bind(s, C, ty, "threadIdx.y") && !sch_bind(s, C, tx, "threadIdx.x"));
    CHECK(!sch_compute_at(s, CC, C, tx));
    te_expr *yo = sch_axis(CC, 0), *xo = sch_axis(CC, 1), *ko, *ki;
    CHECK(!sch_split(s, CC, sch_reduce_axis(CC, 0), 8, &ko, &ki));
    CHECK(!sch_reorder(s, CC, 4, (te_expr *[]){ko, ki, yo, xo}));
    CHECK(!sch_unroll(s, CC, ki) && !sch_unroll(s, CC, yo) && !sch_unroll(s, CC, xo));
    CHECK(!sch_compute_at(s, AA, CC, ko) && !sch_compute_at(s, BB, CC, ko));
    CHECK(!coop_fetch(s, AA, 8, 8, 4) && !coop_fetch(s, BB, 8, 8, 4));
    return s;
}

sch_schedule *ch_conv2d_naive(const sched_case *c, int64_t threads) {
    te_tensor *O = c->out;
    sch_schedule *s = sch_create(c->ctx, 1, &O);
    CHECK(s && !sch_compute_inline(s, c->mid));
    te_tensor *OL = sch_cache_write(s, O, "local");
    CHECK(OL);
    te_expr *f, *bo, *ti;
    CHECK(!sch_fuse(s, O, 4, (te_expr *[]){sch_axis(O, 0), sch_axis(O, 1), sch_axis(O, 2), sch_axis(O, 3)}, &f));
    CHECK(!sch_split(s, O, f, threads, &bo, &ti));
    CHECK(!sch_bind(s, O, bo, "blockIdx.x") && !sch_bind(s, O, ti, "threadIdx.x"));
    CHECK(!sch_compute_at(s, OL, O, ti));
    return s;
}

sch_schedule *ch_conv2d_shared(const sched_case *c) {
    te_tensor *O = c->out, *Wt = c->in[1];
    sch_schedule *s = sch_create(c->ctx, 1, &O);
    CHECK(s && !sch_compute_inline(s, c->mid));
    te_tensor *OL = sch_cache_write(s, O, "local");
    CHECK(OL);
    te_tensor *WS = sch_cache_read(s, Wt, "shared", 1, &OL);
    CHECK(WS);
    /* O[n, k, y, x]: block (k / 8, y / 4 .. ) threads (k % 8, x) */
    te_expr *ko, *ki, *yo, *yi, *xo, *xi, *f;
    CHECK(!sch_split(s, O, sch_axis(O, 1), 8, &ko, &ki));
    CHECK(!sch_split(s, O, sch_axis(O, 2), 4, &yo, &yi));
    CHECK(!sch_split(s, O, sch_axis(O, 3), 16, &xo, &xi));
    CHECK(!sch_reorder(s, O, 7, (te_expr *[]){sch_axis(O, 0), ko, yo, xo, ki, yi, xi}));
    CHECK(!sch_fuse(s, O, 4, (te_expr *[]){sch_axis(O, 0), ko, yo, xo}, &f));
    CHECK(!sch_bind(s, O, f, "blockIdx.x"));
    CHECK(!sch_bind(s, O, ki, "threadIdx.y") && !sch_bind(s, O, xi, "threadIdx.x"));
    CHECK(!sch_compute_at(s, OL, O, xi));
    te_expr *rc = sch_reduce_axis(OL, 0), *rco, *rci;
    CHECK(!sch_split(s, OL, rc, 4, &rco, &rci));
    CHECK(!sch_reorder(s, OL, 2, (te_expr *[]){rco, sch_axis(OL, 2)}));
    CHECK(!sch_compute_at(s, WS, OL, rco));
    /* WS[k 8, c 4, r, s]: its 4 axes fused and spread over 8 x 16 threads. */
    te_expr *wf, *w1, *wo, *wt, *wy, *wx;
    CHECK(!sch_fuse(s, WS, 2, (te_expr *[]){sch_axis(WS, 0), sch_axis(WS, 1)}, &w1));
    CHECK(!sch_fuse(s, WS, 3, (te_expr *[]){w1, sch_axis(WS, 2), sch_axis(WS, 3)}, &wf));
    CHECK(!sch_split(s, WS, wf, 128, &wo, &wt) && !sch_split(s, WS, wt, 16, &wy, &wx));
    CHECK(!sch_bind(s, WS, wy, "threadIdx.y") && !sch_bind(s, WS, wx, "threadIdx.x"));
    return s;
}

rt_module *ch_build(const sched_case *c, sch_schedule *s, const char *target) {
    if (!s) return NULL;
    te_tensor *args[5];
    for (int i = 0; i < c->nin; i++) args[i] = c->in[i];
    args[c->nin] = c->out;
    rt_module *m = cg_build(s, c->nin + 1, args, target, NULL);
    if (!m) {
        fprintf(stderr, "build (%s) failed: %s\n", target, te_ctx_errmsg(c->ctx));
        return NULL;
    }
    if (getenv("LOOM_TEST_DUMP")) fputs(rt_module_get_text(m, "source"), stderr);
    return m;
}

int64_t ch_run(const sched_case *c, rt_module *m) {
    if (!rt_cuda_available()) return -2;
    uint64_t rng = tu_seed() ^ (uint64_t)c->out->shape[0] * 7919u;
    DLTensor *h[5] = {0}, *d[5] = {0};
    int n = c->nin + 1;
    int64_t bad = -1;
    for (int i = 0; i < c->nin; i++) h[i] = tu_rand_f32(&rng, c->in[i]->ndim, c->in[i]->shape);
    h[c->nin] = tu_nan_f32(c->out->ndim, c->out->shape);
    for (int i = 0; i < n; i++) {
        d[i] = rt_cuda_tensor_alloc(h[i]->dtype, h[i]->ndim, h[i]->shape, 0);
        if (!d[i] || rt_tensor_copy(d[i], h[i])) {
            fprintf(stderr, "device tensor %d: %s\n", i, rt_last_error());
            goto out;
        }
    }
    int64_t numel = rt_tensor_numel(h[c->nin]);
    double *want = malloc(sizeof(double) * (size_t)numel);
    c->reference(c, h, want);
    if (rt_call(m, "default", n, d)) {
        fprintf(stderr, "run (cuda) failed: %s\n", rt_module_errmsg(m));
    } else if (rt_tensor_copy(h[c->nin], d[c->nin])) {
        fprintf(stderr, "copy back: %s\n", rt_last_error());
    } else {
        double red = 1;
        if (c->out->body && c->out->body->kind == TE_REDUCE)
            for (int k = 0; k < c->out->body->u.reduce.naxes; k++)
                red *= (double)c->out->body->u.reduce.axes[k]->u.var.extent;
        bad = tu_compare_f32("cuda", h[c->nin]->data, want, numel, 1e-5 * sqrt(red) + 1e-5, 1e-4);
    }
    free(want);
out:
    for (int i = 0; i < n; i++) {
        rt_tensor_free(h[i]);
        rt_tensor_free(d[i]);
    }
    return bad;
}
