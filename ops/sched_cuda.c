/*
 * ops/sched_cuda.c — the default CUDA schedules' shared patterns: one
 * thread per element (elementwise, row reductions), the GEMM of TVM's
 * "How to optimize GEMM on GPU" (shared-memory tiles, vthreads, register
 * accumulators), the direct convolution (input and weight tiles staged in
 * shared memory per chunk of input channels, a register tile of channels
 * x rows per thread, a grid of at least CONV_MIN_BLOCKS blocks; only the
 * weights staged for NHWC and grouped convolutions) and window operators.
 *
 * A reduction over a long extent (>= XREDUCE_MIN elements: softmax and
 * layer_norm rows, sum/mean/max over a long axis, global average pool of
 * a large image) is a cross-thread reduction: one block per output, its
 * threads splitting the reduced range (thread t takes elements t, t + T,
 * ...: coalesced), combined by warp shuffles (TVM's default CUDA
 * reduction schedule, topi/cuda/reduction.py, does the same). Shorter
 * reductions run serially in the thread that owns their output. Every
 * kernel has at most 512 threads per block and at most 24 KiB of shared
 * memory, inside the verifier's limits (1024 threads, 48 KiB).
 */
#include "ops_internal.h"

static int64_t ext_of(const te_expr *axis) { return axis->u.var.extent; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static bool is_reduce(const te_tensor *t) { return t->body && t->body->kind == TE_REDUCE; }

static int64_t numel(const te_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

int ops__cuda_flat(sch_schedule *s, te_tensor *t, int64_t threads, te_expr **tx) {
    int n = t->ndim;
    te_expr *ax[TE_MAX_DIMS] = {0};
    if (n < 1) return -1;
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(t, d))) return -1;
    te_expr *f = ax[0], *bo, *ti;
    if (n > 1 && sch_fuse(s, t, n, ax, &f)) return -1;
    if (sch_split(s, t, f, threads, &bo, &ti)) return -1;
    if (sch_bind(s, t, bo, "blockIdx.x") || sch_bind(s, t, ti, "threadIdx.x")) return -1;
    if (tx) *tx = ti;
    return 0;
}

/* Reductions at least this long reduce across threads. */
enum { XREDUCE_MIN = 128, XREDUCE_MAX_THREADS = 512 };

static int64_t reduce_len(const te_tensor *t) {
    int64_t n = 1;
    for (int k = 0; is_reduce(t) && k < t->body->u.reduce.naxes; k++)
        n *= t->body->u.reduce.axes[k]->u.var.extent;
    return is_reduce(t) ? n : 0;
}

/* What the allreduce can move (int32, int64, float32, float64). */
static bool xreduce_type(te_dtype d) {
    return d.lanes == 1 && (d.code == TE_FLOAT || d.code == TE_INT) && (d.bits == 32 || d.bits == 64);
}

/* Reduction R at the root, one block per output (its axes fused on
 * blockIdx.x), its reduce axes fused and split by T, the inner part on
 * threadIdx.x: T = the largest power of two <= the reduced length, at
 * most XREDUCE_MAX_THREADS. */
static int cuda_xreduce(sch_schedule *s, te_tensor *R) {
    int n = R->ndim, nr = R->body->u.reduce.naxes;
    te_expr *ax[TE_MAX_DIMS] = {0}, *rx[TE_MAX_DIMS] = {0};
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(R, d))) return -1;
    for (int k = 0; k < nr; k++)
        if (!(rx[k] = sch_reduce_axis(R, k))) return -1;
    te_expr *f = ax[0], *rf = rx[0], *ro, *ri;
    if (n > 1 && sch_fuse(s, R, n, ax, &f)) return -1;
    if (nr > 1 && sch_fuse(s, R, nr, rx, &rf)) return -1;
    int64_t T = 32, len = reduce_len(R);
    while (T * 2 <= len && T * 2 <= XREDUCE_MAX_THREADS) T *= 2;
    if (sch_split(s, R, rf, T, &ro, &ri)) return -1;
    if ((n > 0 && sch_bind(s, R, f, "blockIdx.x")) || sch_bind(s, R, ri, "threadIdx.x")) return -1;
    return 0;
}

static bool use_xreduce(const te_tensor *R) {
    return R && is_reduce(R) && reduce_len(R) >= XREDUCE_MIN && xreduce_type(R->dtype) &&
           R->ndim >= 1;
}

int ops__cuda_flat_reduce(sch_schedule *s, te_tensor *F, te_tensor *R) {
    /* A long reduction: across threads, in its own kernel (a separate R
     * is computed at the root, F then reads it flat). */
    if (!R && use_xreduce(F)) return cuda_xreduce(s, F);
    if (R && use_xreduce(R)) return cuda_xreduce(s, R) || ops__cuda_flat(s, F, 256, NULL) ? -1 : 0;
    if (!R && is_reduce(F) && !(R = sch_cache_write(s, F, "local"))) return -1;
    te_expr *tx;
    if (ops__cuda_flat(s, F, 256, &tx)) return -1;
    return R ? sch_compute_at(s, R, F, tx) : 0;
}

int ops__cuda_rows(sch_schedule *s, te_tensor *R) { return ops__cuda_flat_reduce(s, R, NULL); }

/* Spreads the copy of shared stage T over ty x tx threads: its axes
 * fused, `vec` lanes split off and vectorized (when > 1), then the
 * threads (cooperative fetching, as TVM's GPU schedules). */
static int coop_fetch(sch_schedule *s, te_tensor *T, int64_t ty, int64_t tx, int64_t vec) {
    int n = T->ndim;
    te_expr *ax[TE_MAX_DIMS] = {0};
    if (n < 1) return -1;
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(T, d))) return -1;
    te_expr *f = ax[0], *v, *o, *t, *y, *x;
    if (n > 1 && sch_fuse(s, T, n, ax, &f)) return -1;
    if (vec > 1 && (sch_split(s, T, f, vec, &f, &v) || sch_vectorize(s, T, v))) return -1;
    if (sch_split(s, T, f, ty * tx, &o, &t) || sch_split(s, T, t, tx, &y, &x)) return -1;
    return sch_bind(s, T, y, "threadIdx.y") || sch_bind(s, T, x, "threadIdx.x") ? -1 : 0;
}

/* Whether placeholder P can be staged in shared memory over nthreads
 * threads: its copy loop, split by the thread count, must keep that
 * extent (a split never makes a loop longer than its axis), or the
 * thread axes of the copy would disagree with the compute's. */
static bool can_stage(const te_tensor *P, int64_t nthreads, int64_t vec) {
    return numel(P) / vec >= nthreads;
}

/* ---- GEMM ---- */

/* One output dimension of the GEMM block tile: vt vthreads x th threads x
 * in rows per thread. 64 = 2 x 8 x 4 (TVM's GEMM tutorial); smaller
 * extents get the next power of two, threads first. */
typedef struct {
    int64_t vt, th, in;
} gemm_dim;

static gemm_dim pick_gemm_dim(int64_t ext) {
    if (ext >= 64) return (gemm_dim){2, 8, 4};
    int64_t b = 1;
    while (b < ext) b <<= 1;
    gemm_dim d;
    d.th = b < 8 ? b : 8;
    int64_t rest = b / d.th;
    d.vt = rest >= 2 ? 2 : 1;
    d.in = rest / d.vt;
    return d;
}

/* Splits axis a of F by the block tile of d: block, vthread, thread and
 * inner loops. */
static int gemm_split(sch_schedule *s, te_tensor *F, te_expr *a, gemm_dim d, te_expr **blk,
                      te_expr **vt, te_expr **th, te_expr **in) {
    te_expr *r1, *r2;
    return sch_split(s, F, a, d.vt * d.th * d.in, blk, &r1) ||
                   sch_split_nparts(s, F, r1, d.vt, vt, &r2) ||
                   sch_split_nparts(s, F, r2, d.th, th, in)
               ? -1
               : 0;
}

static int cuda_gemm(sch_schedule *s, te_tensor *F, te_tensor *R, te_tensor *A, te_tensor *B,
                     const ops_cuda_gemm_config *cfg) {
    int nd = F->ndim;
    bool batch = nd == 3;
    if (!R && !(R = sch_cache_write(s, F, "local"))) return -1;
    int64_t M = F->shape[nd - 2], N = F->shape[nd - 1];
    int64_t K = R->body->u.reduce.axes[0]->u.var.extent;
    gemm_dim dm = pick_gemm_dim(M), dn = pick_gemm_dim(N);
    int64_t kt = 8;
    int stages = 1;
    /* A grid of at least a block per SM of 128 x 128 tiles: 256 threads
     * of 8 x 8 outputs, chunks of 16, double-buffered — on the H200 at
     * 4096³ 42.9 TFLOP/s against 34.5 for the 64 x 64 tiles
     * (bench_cuda_gemm, bench/RESULTS.md session 35) */
    int64_t nblocks = (batch ? F->shape[0] : 1) * (M / 128) * (N / 128);
    if (!cfg && M % 128 == 0 && N % 128 == 0 && K % 16 == 0 && K > 16 && nblocks >= 132) {
        dm = dn = (gemm_dim){2, 16, 4};
        kt = 16;
        stages = 2;
    }
    if (cfg) {
        dm = (gemm_dim){cfg->vt_m, cfg->th_m, cfg->in_m};
        dn = (gemm_dim){cfg->vt_n, cfg->th_n, cfg->in_n};
        kt = cfg->kt;
        stages = cfg->stages ? cfg->stages : 1;
    }
    int64_t bm = dm.vt * dm.th * dm.in, bn = dn.vt * dn.th * dn.in;
    /* float4 fetches need aligned tiles: every tile dividing its extent
     * and whole vectors along every tile dimension. */
    int64_t vec = M % bm == 0 && N % bn == 0 && K % kt == 0 && bm % 4 == 0 && bn % 4 == 0 ? 4 : 1;
    te_expr *bi, *vi, *ti, *ii, *bj, *vj, *tj, *ij;
    if (gemm_split(s, F, sch_axis(F, nd - 2), dm, &bi, &vi, &ti, &ii) ||
        gemm_split(s, F, sch_axis(F, nd - 1), dn, &bj, &vj, &tj, &ij))
        return -1;
    te_expr *ord[9];
    int k = 0;
    te_expr *b = batch ? sch_axis(F, 0) : NULL;
    if (b) ord[k++] = b;
    te_expr *rest[8] = {bi, bj, vi, vj, ti, tj, ii, ij};
    for (int q = 0; q < 8; q++) ord[k++] = rest[q];
    if (sch_reorder(s, F, k, ord)) return -1;
    if ((b && sch_bind(s, F, b, "blockIdx.z")) || sch_bind(s, F, bi, "blockIdx.y") ||
        sch_bind(s, F, bj, "blockIdx.x") || sch_bind(s, F, vi, "vthread") ||
        sch_bind(s, F, vj, "vthread") || sch_bind(s, F, ti, "threadIdx.y") ||
        sch_bind(s, F, tj, "threadIdx.x"))
        return -1;
    if (sch_compute_at(s, R, F, tj)) return -1;
    /* The accumulator tile: k outermost in steps of kt, the tile unrolled
     * inside each step. */
    te_expr *ko, *ki, *rord[6];
    if (sch_split(s, R, sch_reduce_axis(R, 0), kt, &ko, &ki)) return -1;
    int r = 0;
    rord[r++] = ko;
    rord[r++] = ki;
    for (int d = 0; d < nd; d++)
        if (!(rord[r++] = sch_axis(R, d))) return -1;
    if (sch_reorder(s, R, r, rord) || sch_unroll(s, R, ki) ||
        sch_unroll(s, R, sch_axis(R, nd - 2)) || sch_unroll(s, R, sch_axis(R, nd - 1)))
        return -1;
    /* The operand tiles, fetched by the block's threads. */
    int64_t ty = ext_of(ti), tx = ext_of(tj);
    bool sa = can_stage(A, ty * tx, vec), sb = can_stage(B, ty * tx, vec);
    te_tensor *AS = sa ? sch_cache_read(s, A, "shared", 1, &R) : NULL;
    te_tensor *BS = sb ? sch_cache_read(s, B, "shared", 1, &R) : NULL;
    if ((sa && !AS) || (sb && !BS)) return -1;
    if (AS && (sch_compute_at(s, AS, R, ko) || coop_fetch(s, AS, ty, tx, vec))) return -1;
    if (BS && (sch_compute_at(s, BS, R, ko) || coop_fetch(s, BS, ty, tx, vec))) return -1;
    /* the next chunks' copies in flight while this one is multiplied */
    if (stages > 1 && K > kt &&
        ((AS && sch_multi_buffer(s, AS, stages)) || (BS && sch_multi_buffer(s, BS, stages))))
        return -1;
    return 0;
}

int ops__cuda_gemm(sch_schedule *s, te_tensor *F, te_tensor *R, te_tensor *A, te_tensor *B) {
    return cuda_gemm(s, F, R, A, B, NULL);
}

int ops_schedule_cuda_gemm(sch_schedule *s, te_tensor *C, te_tensor *A, te_tensor *B,
                           const ops_cuda_gemm_config *cfg) {
    if (!s || !C || !A || !B) return -1;
    te_ctx *ctx = sch_ctx(s);
    if ((C->ndim != 2 && C->ndim != 3) || !C->body || C->body->kind != TE_REDUCE ||
        C->body->u.reduce.naxes != 1)
        return te_error(ctx, "cuda_gemm: '%s' is not a matmul (a 2-D or batched 3-D sum over one "
                             "reduce axis)",
                        C->name);
    if (!cfg) return cuda_gemm(s, C, NULL, A, B, NULL);
    const ops_cuda_gemm_config *c = cfg;
    int64_t knobs[7] = {c->vt_m, c->th_m, c->in_m, c->vt_n, c->th_n, c->in_n, c->kt};
    for (int i = 0; i < 7; i++)
        if (knobs[i] < 1)
            return te_error(ctx, "cuda_gemm: every tile knob must be at least 1 (got vt %lldx%lld, "
                                 "th %lldx%lld, in %lldx%lld, kt %lld)",
                            (long long)c->vt_m, (long long)c->vt_n, (long long)c->th_m,
                            (long long)c->th_n, (long long)c->in_m, (long long)c->in_n,
                            (long long)c->kt);
    if (c->th_m * c->th_n > 1024)
        return te_error(ctx, "cuda_gemm: %lld x %lld threads a block; at most 1024",
                        (long long)c->th_m, (long long)c->th_n);
    if (c->stages < 0 || c->stages > 4)
        return te_error(ctx, "cuda_gemm: %d pipeline stages; 0 or 1 (none) to 4", c->stages);
    /* a pipeline's copies are whole tiles (a partial one would need
     * predicated asynchronous copies) */
    int64_t M = C->shape[C->ndim - 2], N = C->shape[C->ndim - 1];
    int64_t K = C->body->u.reduce.axes[0]->u.var.extent;
    int64_t bm = c->vt_m * c->th_m * c->in_m, bn = c->vt_n * c->th_n * c->in_n;
    if (c->stages > 1 && (M % bm || N % bn || K % c->kt))
        return te_error(ctx,
                        "cuda_gemm: a pipeline of %d stages needs tiles that divide the shape: "
                        "%lldx%lldx%lld by %lldx%lldx%lld",
                        c->stages, (long long)M, (long long)N, (long long)K, (long long)bm,
                        (long long)bn, (long long)c->kt);
    return cuda_gemm(s, C, NULL, A, B, cfg);
}

/* ---- direct convolution ---- */

/* The largest divisor of n that is at most cap (1 when none above 1). */
static int64_t divisor_le(int64_t n, int64_t cap) {
    for (int64_t d = min64(n, cap); d > 1; d--)
        if (n % d == 0) return d;
    return 1;
}

/* Blocks a convolution grid should have at least: about one per SM of a
 * large GPU (an H100 has 132, an A100 108); below that SMs idle, which
 * cost the batch-1 ResNet-50 layers up to 10x against cuDNN (measured
 * 2026-11-23). */
#define CONV_MIN_BLOCKS 100
/* Shared memory for one chunk of input channels (input and weight
 * tiles): half the 48 KiB a block may take without opting in to more,
 * leaving room for several blocks on an SM. */
#define CONV_STAGE_BYTES 24576

/* NCHW, no groups: blocks of (tk x rk) channels x ry rows x tx columns;
 * threads tk (threadIdx.y) x tx (threadIdx.x); each thread rk channels
 * (vthreads: a warp's threads share each weight, a broadcast) x ry rows
 * in registers. The reduction goes over chunks of rct input channels; per
 * chunk the block's threads copy the padded input tile and the weight
 * tile into shared memory, then every thread reads only shared memory.
 * The register tile shrinks (the larger side first, rows on a tie) until
 * the grid has CONV_MIN_BLOCKS blocks. Returns 1 when the shapes do not
 * suit it (F and R untouched). */
static int cuda_conv_staged(sch_schedule *s, te_tensor *F, te_tensor *R, const ops__conv_io *io) {
    te_expr *rc = sch_reduce_axis(R, 0), *rr = sch_reduce_axis(R, 1), *rs = sch_reduce_axis(R, 2);
    if (!rc || !rr || !rs) return -1;
    int64_t N = F->shape[0], K = F->shape[1], OH = F->shape[2], OW = F->shape[3];
    int64_t C = ext_of(rc), RR = ext_of(rr), SS = ext_of(rs), bytes = te_dtype_bytes(F->dtype);
    int64_t tx = divisor_le(OW, 32), tk = divisor_le(K, 256 / tx > 1 ? 256 / tx : 1);
    int64_t rk = divisor_le(K / tk, 4), ry = divisor_le(OH, 4);
    while (N * (K / (tk * rk)) * (OH / ry) * (OW / tx) < CONV_MIN_BLOCKS && (rk > 1 || ry > 1)) {
        if (ry >= rk && ry > 1) ry = divisor_le(OH, ry - 1);
        else rk = divisor_le(K / tk, rk - 1);
    }
    int64_t rows = (ry - 1) * io->stride + (RR - 1) * io->dilation + 1;
    int64_t cols = (tx - 1) * io->stride + (SS - 1) * io->dilation + 1;
    int64_t in_tile = rows * cols, w_tile = tk * rk * RR * SS, nthreads = tk * tx;
    /* A width with no divisor from 4 to 32 (a prime, say) would leave a
     * warp mostly idle: the tail-handling schedule does better there. */
    if (tx < 4 && OW >= 8) return 1;
    /* Input channels per chunk: a divisor of C whose two tiles fit
     * CONV_STAGE_BYTES and are each at least one element per thread (a
     * copy loop is split over the block's threads and must be as long,
     * see can_stage); the largest up to 16, else the smallest above. */
    int64_t rct = 0;
    for (int64_t d = 1; d <= C; d++) {
        bool fits = d * (in_tile + w_tile) * bytes <= CONV_STAGE_BYTES;
        bool fills = d * in_tile >= nthreads && d * w_tile >= nthreads;
        if (C % d == 0 && fits && fills && (d <= 16 || !rct)) rct = d;
    }
    if (!rct) return 1;

    te_expr *kb, *k1, *kv, *kt, *yo, *yi, *xo, *xt, *blk;
    if (sch_split(s, F, sch_axis(F, 1), tk * rk, &kb, &k1) ||
        sch_split_nparts(s, F, k1, rk, &kv, &kt) || sch_split(s, F, sch_axis(F, 2), ry, &yo, &yi) ||
        sch_split(s, F, sch_axis(F, 3), tx, &xo, &xt))
        return -1;
    te_expr *ord[8] = {sch_axis(F, 0), kb, yo, xo, kv, kt, xt, yi};
    if (sch_reorder(s, F, 8, ord) || sch_fuse(s, F, 4, ord, &blk) ||
        sch_bind(s, F, blk, "blockIdx.x") || sch_bind(s, F, kv, "vthread") ||
        sch_bind(s, F, kt, "threadIdx.y") || sch_bind(s, F, xt, "threadIdx.x"))
        return -1;
    /* The padded input staged as it is read; the padding stage is then
     * inlined into the copy (a select on the load), never materialised. */
    te_tensor *in = io->pad ? io->pad : io->X;
    te_tensor *XS = sch_cache_read(s, in, "shared", 1, &R);
    te_tensor *WS = sch_cache_read(s, io->W, "shared", 1, &R);
    if (!XS || !WS || (io->pad && sch_compute_inline(s, io->pad))) return -1;
    if (sch_compute_at(s, R, F, xt)) return -1;
    te_expr *rco, *rci;
    if (sch_split(s, R, rc, rct, &rco, &rci)) return -1;
    te_expr *rord[7] = {rco, rci, rr, rs};
    for (int d = 0; d < 3; d++)
        if (!(rord[4 + d] = sch_axis(R, d + 1))) return -1;
    if (sch_reorder(s, R, 7, rord) || sch_unroll(s, R, rs) || sch_unroll(s, R, sch_axis(R, 2)))
        return -1;
    if (sch_compute_at(s, XS, R, rco) || coop_fetch(s, XS, tk, tx, 1) ||
        sch_compute_at(s, WS, R, rco) || coop_fetch(s, WS, tk, tx, 1))
        return -1;
    return 0;
}

/* NHWC or grouped: the padding inlined, the weight tile staged. */
static int cuda_conv_weights_staged(sch_schedule *s, te_tensor *F, te_tensor *R, te_tensor *Wt,
                                    te_tensor *pad, bool nhwc) {
    if (pad && sch_compute_inline(s, pad)) return -1;
    if (!R && !(R = sch_cache_write(s, F, "local"))) return -1;
    int ka = nhwc ? 3 : 1, ya = nhwc ? 1 : 2, xa = nhwc ? 2 : 3;
    int64_t K = F->shape[ka], OH = F->shape[ya], OW = F->shape[xa];
    /* Channels: tk threads x rk vthreads; columns: tx threads; rows: ry
     * per thread. NCHW puts the columns on threadIdx.x (contiguous
     * outputs and inputs), NHWC the channels. */
    int64_t tk = min64(K, nhwc ? 16 : 8), rk = min64(4, ceil_div(K, tk));
    int64_t tx = min64(OW, nhwc ? 8 : 16), ry = min64(OH, 4);
    te_expr *kb, *k1, *kv, *kt, *yo, *yi, *xo, *xt;
    if (sch_split(s, F, sch_axis(F, ka), tk * rk, &kb, &k1) ||
        sch_split_nparts(s, F, k1, rk, &kv, &kt) || sch_split(s, F, sch_axis(F, ya), ry, &yo, &yi) ||
        sch_split(s, F, sch_axis(F, xa), tx, &xo, &xt))
        return -1;
    te_expr *n = sch_axis(F, 0), *blk;
    te_expr *inner_t = nhwc ? kt : xt, *outer_t = nhwc ? xt : kt;
    te_expr *ord[8] = {n, kb, yo, xo, kv, outer_t, inner_t, yi};
    if (sch_reorder(s, F, 8, ord) || sch_fuse(s, F, 4, ord, &blk)) return -1;
    if (sch_bind(s, F, blk, "blockIdx.x") || sch_bind(s, F, kv, "vthread") ||
        sch_bind(s, F, outer_t, "threadIdx.y") || sch_bind(s, F, inner_t, "threadIdx.x"))
        return -1;
    int64_t nty = ext_of(outer_t), ntx = ext_of(inner_t);
    /* The weight tile of one reduction step: kb channels x rct input
     * channels x R x S, at most 16 KiB. */
    te_expr *rc = sch_reduce_axis(R, 0), *rr = sch_reduce_axis(R, 1), *rs = sch_reduce_axis(R, 2);
    if (!rc || !rr || !rs) return -1;
    int64_t Cg = ext_of(rc), taps = ext_of(rr) * ext_of(rs);
    int64_t kbx = ext_of(k1), bytes = te_dtype_bytes(F->dtype);
    int64_t rct = min64(Cg, 8);
    while (rct > 1 && kbx * rct * taps * bytes > 16384) rct--;
    bool stage = kbx * rct * taps * bytes <= 32768 && can_stage(Wt, nty * ntx, 1);
    te_tensor *WS = stage ? sch_cache_read(s, Wt, "shared", 1, &R) : NULL;
    if (stage && !WS) return -1;
    if (sch_compute_at(s, R, F, inner_t)) return -1;
    te_expr *rco, *rci;
    if (sch_split(s, R, rc, rct, &rco, &rci)) return -1;
    te_expr *rord[8];
    int q = 0;
    rord[q++] = rco;
    rord[q++] = rci;
    rord[q++] = rr;
    rord[q++] = rs;
    for (int d = 0; d < 4; d++)
        if (!(rord[q++] = sch_axis(R, d))) return -1;
    if (sch_reorder(s, R, q, rord) || sch_unroll(s, R, sch_axis(R, ya))) return -1;
    if (WS && (sch_compute_at(s, WS, R, rco) || coop_fetch(s, WS, nty, ntx, 1))) return -1;
    return 0;
}

int ops__cuda_conv(sch_schedule *s, te_tensor *F, te_tensor *R, const ops__conv_io *io) {
    if (!io->nhwc && io->groups == 1) {
        if (!R && !(R = sch_cache_write(s, F, "local"))) return -1;
        int rc = cuda_conv_staged(s, F, R, io);
        if (rc <= 0) return rc;
    }
    return cuda_conv_weights_staged(s, F, R, io->W, io->pad, io->nhwc);
}

/* ---- direct convolution ---- */

/* ---- window operators ---- */

int ops__cuda_spatial(sch_schedule *s, te_tensor *F, te_tensor *R, te_tensor *pad) {
    if (pad && sch_compute_inline(s, pad)) return -1;
    if (!R && is_reduce(F) && !(R = sch_cache_write(s, F, "local"))) return -1;
    int64_t OH = F->shape[2], OW = F->shape[3];
    int64_t tx = min64(OW, 32), ty = min64(OH, 256 / tx);
    te_expr *yo, *yt, *xo, *xt, *blk;
    if (sch_split(s, F, sch_axis(F, 2), ty, &yo, &yt) ||
        sch_split(s, F, sch_axis(F, 3), tx, &xo, &xt))
        return -1;
    te_expr *ord[6] = {sch_axis(F, 0), sch_axis(F, 1), yo, xo, yt, xt};
    if (sch_reorder(s, F, 6, ord) || sch_fuse(s, F, 4, ord, &blk)) return -1;
    if (sch_bind(s, F, blk, "blockIdx.x") || sch_bind(s, F, yt, "threadIdx.y") ||
        sch_bind(s, F, xt, "threadIdx.x"))
        return -1;
    return R ? sch_compute_at(s, R, F, xt) : 0;
}
