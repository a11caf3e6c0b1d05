/*
 * autotune/default_attention.c — the default schedule of a fused attention
 * group (graph/fuse_attention.c: MatMul(Q, K^T), scaling, mask, Softmax,
 * MatMul(P, V) as one workload).
 *
 * Why a rule of its own: the sketches see two matrix products and four row
 * reductions, and every filling of them computes each stage over the whole
 * batch x heads x M x N at the root, so the scores still go through memory
 * (a 12 x 128 x 128 float buffer per BERT layer, written and read three
 * times). Here they never leave the cache: per (batch, head, block of R
 * query rows), in one parallel iteration,
 *   the R x N score rows (Q K^T, a vectorized loop over the key axis with
 *   the head dimension outside it),
 *   the masked/scaled rows and the exponentials (vectorized),
 *   the rows' max and sum, and the probabilities (exp / sum, vectorized),
 * are computed into buffers of R x N (bound inference sizes them from the
 * loop they are computed in), and the probabilities times V accumulate into an R x 2-vector register tile of the output.
 * FlashAttention (Dao et al., 2022) does this with one pass over the keys;
 * with a whole row of keys in L1 (N = 128: 512 bytes a row) the plain
 * three-pass softmax costs no memory traffic here.
 */
#include <string.h>

#include "autotune/tune_internal.h"

/* Whether the workload's only output o reads, through compute stages all
 * in o's rows, a row of scores: o a sum over one reduce axis of extent N;
 * every other compute stage of o's rank with o's leading extents and a
 * last extent of N (scores, probabilities) or 1 (a row's max or sum); at
 * least one of them a reduction over rows of N (the scores' product). */
static bool is_attention(const tune_dag *dag, const te_tensor *o)
{
    int r = o->ndim;
    if (r < 2 || !o->body || o->body->kind != TE_REDUCE || o->body->u.reduce.naxes != 1 ||
        o->body->u.reduce.op != TE_REDUCE_SUM)
        return false;
    int64_t n = o->body->u.reduce.axes[0]->u.var.extent;
    int scores = 0, stats = 0;
    for (int i = 0; i < dag->nstages; i++) {
        const tune_stage_info *si = &dag->stages[i];
        const te_tensor *t = si->tensor;
        if (si->is_placeholder || t == o) continue;
        if (si->is_output || t->ndim != r) return false;
        for (int d = 0; d < r - 1; d++)
            if (t->shape[d] != o->shape[d]) return false;
        int64_t last = t->shape[r - 1];
        if (last != n && last != 1) return false;
        if (si->is_reduction && last == n) scores++;
        if (si->is_reduction && last == 1) stats++;
    }
    return scores == 1 && stats >= 1;
}

/* The largest divisor of n up to cap (1 at least). */
static int64_t divisor_upto(int64_t n, int64_t cap)
{
    for (int64_t d = cap < n ? cap : n; d > 1; d--)
        if (n % d == 0) return d;
    return 1;
}

/* One or two whole vectors: the split of a vectorized axis of extent n
 * (a tail where they do not divide it; where n is shorter, bound
 * inference narrows the vector to n). */
static int64_t vector_split(int64_t n, int vlen)
{
    int64_t v2 = 2 * (int64_t)vlen;
    return n % v2 == 0 ? v2 : n % vlen == 0 || n < v2 ? vlen : v2;
}

/* A stage's own loops in its block: the last axis split by one or two
 * whole vectors and vectorized, with a tail where they do not divide it
 * (BERT at sequence 100: the tail's lanes masked; scalar rows, and then
 * 25-lane vectors, took 2.8x as long as at sequence 128). The scores' product
 * becomes a register tile: per column block, the head dimension outside
 * the block's rows (unrolled) and columns, so each step of it loads one
 * row of K^T and does rows x 2 vector FMAs into accumulators that stay in
 * registers. */
static int row_loops(sch_schedule *s, te_tensor *t, int vlen)
{
    int r = t->ndim;
    int64_t last = t->shape[r - 1];
    int64_t f = vector_split(last, vlen);
    if (last == 1) return 0;
    te_expr *ax = sch_axis(t, r - 1), *row = sch_axis(t, r - 2), *outer, *inner;
    if (!ax || !row || sch_split(s, t, ax, f, &outer, &inner)) return -1;
    if (t->body->kind == TE_REDUCE) {
        te_expr *k = sch_reduce_axis(t, 0);
        te_expr *order[4] = {outer, k, row, inner};
        if (!k || sch_reorder(s, t, 4, order) || sch_unroll(s, t, row)) return -1;
    }
    return sch_vectorize(s, t, inner);
}

/* A row statistic (max, sum) over the keys, rfactored as the library's
 * softmax is: partial results a vector wide, combined over the row in
 * vector steps (the last one masked where a vector does not divide the
 * row), then across the vector. Its partials' stage, or t itself where
 * the row is a vector or less; NULL on failure. */
static te_tensor *stat_partials(sch_schedule *s, te_tensor *t, int vlen)
{
    te_expr *k = sch_reduce_axis(t, 0), *ko, *ki;
    if (!k) return NULL;
    if (k->u.var.extent <= vlen) return t;
    if (sch_split(s, t, k, vlen, &ko, &ki)) return NULL;
    te_tensor *rf = sch_rfactor(s, t, ki, t->ndim);
    if (!rf) return NULL;
    te_expr *lane = sch_axis(rf, t->ndim), *rko = sch_reduce_axis(rf, 0);
    te_expr *order[2] = {rko, lane};
    if (!lane || !rko || sch_reorder(s, rf, 2, order) || sch_vectorize(s, rf, lane)) return NULL;
    return rf;
}

sch_schedule *tune__attention_schedule(te_ctx *ctx, const tune_workload *w, int vlen)
{
    if (!ctx || !w || w->nouts != 1 || !w->outs[0] || w->outs[0]->kind != TE_OP_COMPUTE)
        return NULL;
    te_tensor *o = w->outs[0];
    tune_dag dag;
    if (tune_dag_analyze(ctx, 1, &o, &dag) || !is_attention(&dag, o)) return NULL;
    sch_schedule *s = sch_create(ctx, 1, &o);
    if (!s) return NULL;
    int r = o->ndim;
    int64_t m = o->shape[r - 2], dim = o->shape[r - 1];
    /* A register tile of rows x 2 vectors of the output: 16 accumulators
     * with 32 vector registers (AVX-512), 8 with 16. */
    int64_t rmax = vlen >= 16 ? 8 : 4, rows = divisor_upto(m, rmax);
    if (rows < rmax / 2) rows = rmax < m ? rmax : m; /* a prime m: a tail */
    int64_t cols = dim < vlen ? dim : vector_split(dim, vlen);
    /* At least 8 accumulators (4-cycle FMAs on 2 pipes), with a tail where
     * one vector is all that divides the head: AVX2's 4 rows by the one
     * vector of 40 (a 320-channel block of 8 heads) ran the fused
     * attention at 0.6-0.7x ONNX Runtime, 10-15 % slower than 2 vectors. */
    if (rows * (cols / vlen) < 8 && dim > cols) cols = 2 * (int64_t)vlen;

    /* Stages read once by another block stage are inlined (the scaling
     * into the mask's Add); the rest are computed per row block: the
     * reductions, stages read twice (the masked scores: by max and exp;
     * the exponentials: by sum and the division; recomputing the scaling
     * in both readers measured slower, a vector division each) and the
     * probabilities (inlined into the V product, their division would run
     * scalar in its inner loop, once per key and row). */
    te_tensor *block[2 * TUNE_MAX_STAGES];
    bool partials[2 * TUNE_MAX_STAGES];
    int nblock = 0;
    for (int i = 0; i < dag.nstages; i++) {
        const tune_stage_info *si = &dag.stages[i];
        te_tensor *t = si->tensor;
        if (si->is_placeholder || t == o) continue;
        if (!si->is_reduction && si->nconsumers == 1 && dag.stages[si->consumers[0]].tensor != o) {
            if (sch_compute_inline(s, t)) return NULL;
            continue;
        }
        /* rfactor before any compute_at (it rebuilds the stage's loops). */
        if (si->is_reduction && t->shape[r - 1] == 1) {
            te_tensor *rf = stat_partials(s, t, vlen);
            if (!rf) return NULL;
            if (rf != t) {
                partials[nblock] = true;
                block[nblock++] = rf;
            }
        }
        partials[nblock] = false;
        block[nblock++] = t;
    }

    te_tensor *acc = sch_cache_write(s, o, "local");
    if (!acc) return NULL;
    te_expr *ax[TE_MAX_DIMS + 2], *io, *ii, *dout, *din, *par;
    for (int d = 0; d < r; d++)
        if (!(ax[d] = sch_axis(o, d))) return NULL;
    if (sch_split(s, o, ax[r - 2], rows, &io, &ii) || sch_split(s, o, ax[r - 1], cols, &dout, &din))
        return NULL;
    te_expr *order[TE_MAX_DIMS + 2];
    int n = 0;
    for (int d = 0; d < r - 2; d++) order[n++] = ax[d];
    order[n++] = io;
    order[n++] = dout;
    order[n++] = ii;
    order[n++] = din;
    if (sch_reorder(s, o, n, order)) return NULL;
    par = io;
    if (r > 2 && sch_fuse(s, o, r - 1, order, &par)) return NULL;
    if (sch_parallel(s, o, par) || sch_vectorize(s, o, din)) return NULL;

    /* The accumulator tile at the output's column block: keys outside,
     * rows unrolled, columns vectorized. */
    if (sch_compute_at(s, acc, o, dout)) return NULL;
    te_expr *aax[TE_MAX_DIMS + 2], *kj = sch_reduce_axis(acc, 0);
    for (int d = 0; d < r; d++)
        if (!(aax[d] = sch_axis(acc, d))) return NULL;
    if (!kj) return NULL;
    te_expr *aorder[3] = {kj, aax[r - 2], aax[r - 1]};
    if (sch_reorder(s, acc, 3, aorder) || sch_unroll(s, acc, aax[r - 2]) ||
        sch_vectorize(s, acc, aax[r - 1]))
        return NULL;

    /* The score rows and their statistics at the row block. */
    for (int b = 0; b < nblock; b++) {
        if (sch_compute_at(s, block[b], o, par)) return NULL;
        if (!partials[b] && row_loops(s, block[b], vlen)) return NULL;
    }
    return s;
}
