/*
 * ops/reduce.c — sum, mean and max of a rank-4 X[D0,D1,D2,D3] over the
 * dimensions of a bit mask (`axes`), with or without keepdims.
 *
 * Default CPU schedule: the kept dimensions fused and parallel; when the
 * innermost dimension is kept, it is split by the vector width and
 * vectorized with the reduce loops outside it (contiguous vector
 * accumulators); otherwise the reduction runs scalar along memory.
 */
#include <math.h>

#include "ops_internal.h"

#define EXT(n, d) {n, true, 0, 1, OPS__BIG, d}
#define EXT1(n, d) {n, false, 1, 1, OPS__BIG, d}

enum { RD_D0, RD_D1, RD_D2, RD_D3, RD_AXES, RD_KEEP };
enum { K_SUM, K_MEAN, K_MAX };

static int kind_of(const ops_workload *w) {
    const ops__impl *im = ((const ops__priv *)w->priv)->impl;
    return im == &ops__sum ? K_SUM : im == &ops__mean ? K_MEAN : K_MAX;
}

static int rd_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    int kind = kind_of(w);
    int64_t mask = p[RD_AXES];
    bool keep = p[RD_KEEP] != 0;
    static const char *on[4] = {"o0", "o1", "o2", "o3"}, *rn[4] = {"r0", "r1", "r2", "r3"};
    te_tensor *X = ops__input(ctx, w, "X", 4, p);
    te_expr *idx[4], *oax[4], *rax[4];
    int64_t oshape[4];
    int no = 0, nr = 0;
    int64_t rlen = 1;
    for (int d = 0; d < 4; d++) {
        if ((mask >> d) & 1) {
            idx[d] = rax[nr++] = te_reduce_axis(ctx, rn[d], p[d]);
            rlen *= p[d];
            if (keep) oshape[no] = 1, oax[no] = te_axis(ctx, on[d], 1), no++;
        } else {
            oshape[no] = p[d];
            idx[d] = oax[no] = te_axis(ctx, on[d], p[d]);
            no++;
        }
    }
    if (no == 0) oshape[0] = 1, oax[0] = te_axis(ctx, "o", 1), no = 1;
    te_expr *src = te_read_n(X, 4, idx);
    te_tensor *R = te_compute(ctx, kind == K_MEAN ? "Sum" : "Y", no, oax,
                              te_reduce_n(kind == K_MAX ? TE_REDUCE_MAX : TE_REDUCE_SUM, src, nr, rax));
    int64_t n = p[0] * p[1] * p[2] * p[3];
    w->flops = (double)n;
    pv->reduce_len = rlen;
    pv->t[0] = pv->t[1] = R;
    if (kind != K_MEAN) return ops__set_io(ctx, w, 1, (te_tensor *[]){X}, R);
    te_expr *yax[4];
    for (int d = 0; d < no; d++) yax[d] = te_axis(ctx, on[d], oshape[d]);
    te_tensor *Y = te_compute(ctx, "Y", no, yax,
                              te_div(te_read_n(R, no, yax), ops__const(ctx, w, (double)rlen)));
    w->flops += (double)(n / rlen);
    pv->t[0] = Y;
    return ops__set_io(ctx, w, 1, (te_tensor *[]){X}, Y);
}

static void rd_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                   double *const *out) {
    int kind = kind_of(w);
    int64_t mask = p[RD_AXES], rlen = 1, ostride[4], on = 1;
    /* Output offset of input index: row-major over kept dimensions. */
    for (int d = 3; d >= 0; d--) {
        bool r = (mask >> d) & 1;
        ostride[d] = r ? 0 : on;
        if (r) rlen *= p[d];
        else on *= p[d];
    }
    for (int64_t i = 0; i < on; i++) out[0][i] = kind == K_MAX ? -INFINITY : 0;
    int64_t x[4], k = 0;
    for (x[0] = 0; x[0] < p[0]; x[0]++)
        for (x[1] = 0; x[1] < p[1]; x[1]++)
            for (x[2] = 0; x[2] < p[2]; x[2]++)
                for (x[3] = 0; x[3] < p[3]; x[3]++, k++) {
                    int64_t o = x[0] * ostride[0] + x[1] * ostride[1] + x[2] * ostride[2] +
                                x[3] * ostride[3];
                    double v = in[0][k];
                    if (kind == K_MAX) out[0][o] = v > out[0][o] ? v : out[0][o];
                    else out[0][o] += v;
                }
    if (kind == K_MEAN)
        for (int64_t i = 0; i < on; i++) out[0][i] /= (double)rlen;
}

static int rd_sched(const ops_workload *w, sch_schedule *s, const int64_t *p, int vlen) {
    const ops__priv *pv = w->priv;
    te_tensor *R = pv->t[1], *Y = pv->t[0];
    bool last_kept = !((p[RD_AXES] >> 3) & 1);
    /* The last axis reduced: rows parallel, a lone reduce axis in vectors
     * of partial results (mean: the divide a pass of its own over the
     * outputs, a row's worth fewer elements than the reduction reads). */
    if (!last_kept)
        return ops__sched_row_reduce(s, R, NULL, NULL, vlen) ||
               (Y != R && ops__sched_elemwise(s, Y, vlen, NULL));
    if (Y != R) {
        te_expr *par;
        if (ops__sched_elemwise(s, Y, vlen, &par) || sch_compute_at(s, R, Y, par)) return -1;
        return ops__sched_reduce_inner(s, R, true);
    }
    int n = R->ndim;
    te_expr *ax[TE_MAX_DIMS + 8] = {0};
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(R, d))) return -1;
    te_expr *lo, *li;
    int64_t f = R->shape[n - 1] < vlen ? R->shape[n - 1] : vlen;
    if (sch_split(s, R, ax[n - 1], f, &lo, &li)) return -1;
    ax[n - 1] = lo;
    te_expr *ord[TE_MAX_DIMS + 8];
    int k = 0;
    for (int d = 0; d < n; d++) ord[k++] = ax[d];
    for (int r = 0; r < R->body->u.reduce.naxes; r++) ord[k++] = sch_reduce_axis(R, r);
    ord[k++] = li;
    if (sch_reorder(s, R, k, ord)) return -1;
    te_expr *par = lo;
    if (n > 1 && sch_fuse(s, R, n, ax, &par)) return -1;
    return sch_parallel(s, R, par) || sch_vectorize(s, R, li);
}

/* CUDA: one thread per output, its reduction serial (mean: the divide
 * on the thread's sum). */
static int rd_cuda(const ops_workload *w, sch_schedule *s, const int64_t *p,
                   const ops__gpu *gpu) {
    (void)p;
    const ops__priv *pv = w->priv;
    return ops__cuda_flat_reduce(s, pv->t[0], pv->t[0] == pv->t[1] ? NULL : pv->t[1]);
}

#define RED(sym, nm, doc)                                                                   \
    const ops__impl sym = {                                                                 \
        .info = {nm, NULL, doc, 6,                                                          \
                 {EXT("D0", "extent of dimension 0"), EXT1("D1", "extent of dimension 1"),  \
                  EXT1("D2", "extent of dimension 2"), EXT1("D3", "extent of dimension 3"), \
                  {"axes", true, 0, 1, 15, "bit mask of the reduced dimensions (6: 1 and 2)"}, \
                  {"keepdims", false, 0, 0, 1, "keep reduced dimensions with extent 1"}}},   \
        .build = rd_build,                                                                  \
        .reference = rd_ref,                                                                \
        .schedule = rd_sched,                                                               \
        .cuda_schedule = rd_cuda,                                                           \
    }

RED(ops__sum, "sum", "Y = sum of X[D0,D1,D2,D3] over the dimensions in `axes`");
RED(ops__mean, "mean", "Y = mean of X[D0,D1,D2,D3] over the dimensions in `axes`");
RED(ops__max, "max", "Y = max of X[D0,D1,D2,D3] over the dimensions in `axes`");
