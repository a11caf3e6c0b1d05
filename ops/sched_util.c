/*
 * ops/sched_util.c — the default schedules' shared patterns (elementwise,
 * register tile, inner reduction) and ops_default_schedule, which picks
 * the target's vector width and applies the operator's CPU or CUDA
 * schedule.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/codegen.h"
#include "ops_internal.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Loops ax[0..k-1] of t fused (k > 1) and the result parallel (*par). */
static int fuse_parallel(sch_schedule *s, te_tensor *t, te_expr **ax, int k, te_expr **par) {
    te_expr *p = ax[0];
    if ((k > 1 && sch_fuse(s, t, k, ax, &p)) || sch_parallel(s, t, p)) return -1;
    *par = p;
    return 0;
}

/* t's last axis split by the vector width, the inner part vectorized; the
 * first nfuse loops of (the other axes..., the column blocks) fused and
 * parallel. */
static int rows_and_vectors(sch_schedule *s, te_tensor *t, int vlen, int nfuse, te_expr **par) {
    int n = t->ndim;
    te_expr *ax[TE_MAX_DIMS + 1], *lo, *li, *p;
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(t, d))) return -1;
    if (sch_split(s, t, ax[n - 1], min64(vlen, t->shape[n - 1]), &lo, &li)) return -1;
    ax[n - 1] = lo;
    if (fuse_parallel(s, t, ax, nfuse, &p) || sch_vectorize(s, t, li)) return -1;
    if (par) *par = p;
    return 0;
}

int ops__sched_elemwise(sch_schedule *s, te_tensor *t, int vlen, te_expr **par) {
    return rows_and_vectors(s, t, vlen, t->ndim, par);
}

int ops__sched_pad(sch_schedule *s, te_tensor *t, int vlen, te_expr **par) {
    return rows_and_vectors(s, t, vlen, t->ndim > 1 ? t->ndim - 1 : 1, par);
}

/* A factor near `want` that divides ext (and is a multiple of `mult`),
 * searched down to want / 2; else `want`. Dividing factors leave no
 * guards in the tile, so the inner loops stay branch-free. */
static int64_t pick_factor(int64_t ext, int64_t want, int64_t mult) {
    if (ext <= want) return ext;
    for (int64_t f = want; f * 2 >= want && f >= 1; f--)
        if (ext % f == 0 && f % mult == 0) return f;
    return want;
}

/* The placeholder (with stages: or compute stage) R reads at exactly its
 * axis `axis`, with that dimension's extent a multiple of f: the operand
 * to pack (*dim: its dimension there). NULL when there is none. */
static te_tensor *operand_at(te_tensor *R, int axis, int64_t f, bool stages, int *dim) {
    for (int i = 0; i < R->ninputs; i++) {
        te_tensor *in = R->inputs[i];
        int d = te_expr_read_dim(R->body, in, R->axes[axis]);
        if ((stages || in->kind == TE_OP_PLACEHOLDER) && d >= 0 && in->ndim < TE_MAX_DIMS &&
            in->shape[d] % f == 0) {
            *dim = d;
            return in;
        }
    }
    return NULL;
}

/* A copy of `in` read by R, packed on dimension dim by f at the root
 * (sch_pack), its block loop parallel and its lanes vectorized. With
 * pair >= 0 the copy is packed in the VNNI layout instead (sch_pack_vnni:
 * then by 2 on its dimension `pair`, the pairs innermost), and not
 * vectorized. */
static int pack_operand(sch_schedule *s, te_tensor *R, te_tensor *in, int dim, int64_t f,
                        int pair, te_tensor **packed) {
    /* an input through a copy; a stage of the computation (the implicit
     * GEMM's weights W2) packed itself */
    te_tensor *copy = in->kind == TE_OP_PLACEHOLDER ? sch_cache_read(s, in, "global", 1, &R) : in;
    te_tensor *p = !copy ? NULL
                   : pair >= 0 ? sch_pack_vnni(s, copy, dim, pair, f)
                               : sch_pack(s, copy, sch_axis(copy, dim), f);
    if (packed) *packed = p;
    if (!p || (pair < 0 && sch_parallel(s, p, sch_axis(p, 0)))) return -1;
    return f > 1 && pair < 0 ? sch_vectorize(s, p, sch_axis(p, p->ndim - 1)) : 0;
}

/* Packs the input that R's reduction walks at its column axis (B[k, j] of
 * a matmul, W[j, k] of a dense layer) into panels of nb columns (GEMM
 * packing, Goto and van de Geijn 2008): the register tile's reduction
 * loop then reads one contiguous panel instead of rows a matrix width
 * apart. Nothing to do when no input is read so, or nb does not divide
 * its extent, or one panel is the whole operand. */
static int pack_column_operand(sch_schedule *s, te_tensor *R, int64_t nb) {
    int dim;
    if (!R->body || R->body->kind != TE_REDUCE || nb <= 1) return 0;
    te_tensor *in = operand_at(R, R->ndim - 1, nb, false, &dim);
    return in && in->shape[dim] != nb ? pack_operand(s, R, in, dim, nb, -1, NULL) : 0;
}

/* ops__sched_register_tile; with dot (16 lanes, mr and nb dividing the
 * shape, R's column operand at dot_in, its pair dimension dot_pair) the
 * pairs of the reduction go to x86.dpbf16. */
static int register_tile(sch_schedule *s, te_tensor *F, te_tensor *R, int row, int64_t mr,
                         int64_t nb, int vlen, bool col_outer, te_tensor *dot_in, int dot_dim,
                         int dot_pair) {
    int n = F->ndim, col = n - 1;
    if (!R && !(R = sch_cache_write(s, F, "local"))) return -1;
    te_expr *ax[TE_MAX_DIMS];
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(F, d))) return -1;
    /* A row tail is cheap when the row-tile loop stays serial (col_outer):
     * loop partitioning splits its guard off. */
    mr = col_outer ? (mr < F->shape[row] ? mr : F->shape[row]) : pick_factor(F->shape[row], mr, 1);
    nb = pick_factor(F->shape[col], nb, nb > vlen ? vlen : 1);
    te_tensor *packed = NULL;
    if (dot_in ? pack_operand(s, R, dot_in, dot_dim, nb, dot_pair, &packed)
               : pack_column_operand(s, R, nb))
        return -1;
    te_expr *ro, *ri, *co, *ci;
    if (sch_split(s, F, ax[row], mr, &ro, &ri) || sch_split(s, F, ax[col], nb, &co, &ci))
        return -1;
    /* Loop order: the other axes and the outer tile loops, then the tile. */
    te_expr *order[TE_MAX_DIMS + 2];
    int64_t ext[TE_MAX_DIMS + 2];
    int k = 0, prow = row;
    for (int d = 0; d < col; d++) {
        if (d == row && col_outer) {
            /* Column panels outside the row tiles: the panel of the
             * right-hand operand stays in cache while the rows sweep. */
            ext[k] = (F->shape[col] + nb - 1) / nb;
            order[k++] = co;
            prow = k;
        }
        ext[k] = d == row ? (F->shape[d] + mr - 1) / mr : F->shape[d];
        order[k++] = d == row ? ro : ax[d];
    }
    if (!col_outer) {
        ext[k] = (F->shape[col] + nb - 1) / nb;
        order[k++] = co;
    }
    int nouter = k;
    order[k++] = ri;
    order[k++] = ci;
    if (sch_reorder(s, F, k, order)) return -1;
    /* Parallel: the loops up to the row tiles, fused, and more outer loops
     * while that gives fewer than 16 iterations. The loops left serial
     * keep their tail guards on loops that loop partitioning can split. */
    int nfuse = col_outer ? prow : row + 1;
    int64_t prod = 1;
    for (int d = 0; d < nfuse; d++) prod *= ext[d];
    while (nfuse < nouter && prod < 16) prod *= ext[nfuse++];
    te_expr *par = order[0];
    if (nfuse > 1 && sch_fuse(s, F, nfuse, order, &par)) return -1;
    /* The copy out of the tile moves whole vectors, like the tile's own
     * accesses: a wider copy would read slices straddling two of the
     * tile's vectors, which keeps the tile in memory. */
    te_expr *cv = ci;
    if (nb > vlen) {
        te_expr *cvo;
        if (sch_split(s, F, ci, vlen, &cvo, &cv) || sch_unroll(s, F, cvo)) return -1;
    }
    if (sch_parallel(s, F, par) || sch_vectorize(s, F, cv)) return -1;
    /* dot: the VNNI copy of an input's column panel made where the
     * panel's tiles run (it stays in cache for them) when the parallel
     * loop holds no row tiles; else, and for a stage of the computation
     * (weights: pre-computed once where they are constant), once at the
     * root, its blocks parallel. */
    if (packed && (col_outer && nfuse <= prow && dot_in->kind == TE_OP_PLACEHOLDER
                       ? sch_compute_at(s, packed, F, par)
                       : sch_parallel(s, packed, sch_axis(packed, 0))))
        return -1;
    te_expr *at = nfuse == nouter ? par : order[nouter - 1];
    if (sch_compute_at(s, R, F, at)) return -1;
    /* The accumulator tile: reduce loops outside, row unrolled, columns in
     * vector registers. */
    te_expr *rax[TE_MAX_DIMS];
    for (int d = 0; d < n; d++)
        if (!(rax[d] = sch_axis(R, d))) return -1;
    te_expr *rord[TE_MAX_DIMS + 4];
    int nr = 0;
    int nred = R->body && R->body->kind == TE_REDUCE ? R->body->u.reduce.naxes : 0;
    for (int r = 0; r < nred; r++)
        if (!(rord[nr++] = sch_reduce_axis(R, r))) return -1;
    te_expr *pair = NULL; /* dot: the reduction's pair, innermost */
    if (dot_in && sch_split(s, R, rord[nr - 1], 2, &rord[nr - 1], &pair)) return -1;
    te_expr *cjo = NULL, *cji = rax[col];
    if (nb > vlen && sch_split(s, R, rax[col], vlen, &cjo, &cji)) return -1;
    rord[nr++] = rax[row];
    if (cjo) rord[nr++] = cjo;
    rord[nr++] = cji;
    if (pair) rord[nr++] = pair;
    if (sch_reorder(s, R, nr, rord)) return -1;
    if (mr > 1 && sch_unroll(s, R, rax[row])) return -1;
    if (cjo && sch_unroll(s, R, cjo)) return -1;
    if (pair) return sch_tensorize(s, R, cji, "x86.dpbf16");
    /* Rows of a tile whose width is not a whole number of vectors would
     * overlap in the vector accesses of neighbouring rows, and LLVM keeps
     * overlapping slices of the tile in memory, not registers: pad each
     * row to whole vectors. */
    if (mr > 1 && nb % vlen && sch_storage_align(s, R, rax[row], vlen, 0)) return -1;
    return sch_vectorize(s, R, cji);
}

int ops__sched_register_tile(sch_schedule *s, te_tensor *F, te_tensor *R, int row, int64_t mr,
                             int64_t nb, int vlen, bool col_outer) {
    return register_tile(s, F, R, row, mr, nb, vlen, col_outer, NULL, -1, -1);
}

int ops__sched_register_tile_bf16_dot(sch_schedule *s, te_tensor *F, te_tensor *R, int row,
                                      int64_t mr, int64_t nb) {
    int n = F->ndim, col = n - 1, bdim = -1, pair;
    if (!R || R->ndim != n || !R->body || R->body->kind != TE_REDUCE ||
        R->body->u.reduce.naxes != 1 || !te_dtype_eq(R->dtype, TE_FLOAT32) || R->ninputs != 2 ||
        n < 2 || row >= col)
        return 1;
    te_expr *k = R->body->u.reduce.axes[0];
    /* Rows: a height that divides them where one is near (a tail's guard
     * sits on every VDPBF16PS of the tile: mm1024 ran 5 % slower with 6
     * rows and a tail than with 4 dividing), else mr with a tail. */
    mr = pick_factor(F->shape[row], mr, 1);
    nb = pick_factor(F->shape[col], nb, 16);
    if (k->u.var.extent % 2 || F->shape[col] % nb || nb % 16) return 1;
    /* b: read at the columns (packed); a: its pair contiguous, the
     * reduction at its last dimension */
    te_tensor *b = operand_at(R, col, nb, false, &bdim), *a = NULL;
    if (!b) b = operand_at(R, col, nb, true, &bdim); /* the implicit GEMM's W2 */
    for (int i = 0; i < 2; i++)
        if (R->inputs[i] != b) a = R->inputs[i];
    if (!a || !b || !te_dtype_eq(a->dtype, TE_BFLOAT16) || !te_dtype_eq(b->dtype, TE_BFLOAT16) ||
        te_expr_read_dim(R->body, a, k) != a->ndim - 1 ||
        (pair = te_expr_read_dim(R->body, b, k)) < 0)
        return 1;
    return register_tile(s, F, R, row, mr, nb, 16, true, b, bdim, pair);
}

bool ops_packed_tile_shape(int64_t vec_extent, int64_t rows, int64_t cols, int vlen,
                           bool col_tail, ops_packed_tile *out) {
    if (vlen < 1 || vec_extent < 1 || rows < 1 || cols < 1 || vec_extent % vlen || !out)
        return false;
    /* The tile: fv vectors of lanes x th rows x tw columns, at most 12
     * accumulators (of 16 vector registers, beside the operands). With
     * col_tail tw need not divide the columns (loop partitioning splits
     * the tail off, a narrower tile); th always divides the rows (they
     * are split in the parallel loop). Each tile is costed by its columns
     * over its FMA throughput, min(acc, SAT)/SAT of peak: SAT independent
     * accumulators keep both FMA pipes busy (4-5 cycles of latency x 2
     * pipes); the least total cost wins, then no tail, more accumulators,
     * two vectors of lanes, wide rows. */
    enum { SAT = 10 };
    int64_t f = vlen, th = 1, tw = 1, best_acc = 0;
    double best = INFINITY;
    bool best_tail = true;
    for (int64_t fv = 2; fv >= 1; fv--) {
        if (vec_extent % (fv * vlen)) continue;
        for (int64_t w = 1; w <= 12 && w <= cols; w++)
            for (int64_t h = 1; fv * w * h <= 12 && h <= rows; h++) {
                bool tail = cols % w != 0;
                if (rows % h || (tail && !col_tail)) continue;
                int64_t acc = fv * h * w, racc = fv * h * (cols % w);
                double cost = (double)(cols / w * w) * SAT / (double)(acc < SAT ? acc : SAT);
                if (tail) cost += (double)(cols % w) * SAT / (double)(racc < SAT ? racc : SAT);
                bool better = cost < best - 1e-9;
                if (!better && cost < best + 1e-9)
                    better = tail != best_tail ? !tail
                             : acc != best_acc ? acc > best_acc
                                               : fv * vlen == f && w > tw;
                if (better)
                    best = cost, best_tail = tail, best_acc = acc, f = fv * vlen, th = h, tw = w;
            }
    }
    *out = (ops_packed_tile){f, th, tw};
    return true;
}

bool ops_packed_rows_outside(const te_tensor *operand) {
    if (!operand) return false;
    double bytes = te_dtype_bytes(operand->dtype);
    for (int d = 0; d < operand->ndim; d++) bytes *= (double)operand->shape[d];
    return bytes <= OPS_PACKED_ROWS_OUTSIDE_BYTES;
}

int64_t ops_packed_reduce_block(int64_t extent) {
    int64_t b = extent < OPS_PACKED_REDUCE_BLOCK ? extent : OPS_PACKED_REDUCE_BLOCK;
    while (b > 1 && extent % b) b--;
    return b < 1 ? 1 : b;
}

bool ops_packed_taps_outside(const ops_packed_tile *t, int vlen) {
    return t && (t->rows > 1 || t->lanes > vlen);
}

int ops__sched_packed_tile(sch_schedule *s, te_tensor *F, te_tensor *R, int vec, int row,
                           int col, int vlen) {
    int n = F->ndim, dim;
    te_tensor *Rs = R ? R : F;
    ops_packed_tile tile;
    if (F->shape[vec] % vlen || !Rs->body || Rs->body->kind != TE_REDUCE ||
        Rs->body->u.reduce.naxes > TE_MAX_DIMS || vec == col ||
        vec == row || row == col || !operand_at(Rs, vec, vlen, false, &dim) ||
        !ops_packed_tile_shape(F->shape[vec], F->shape[row], F->shape[col], vlen, true, &tile))
        return 1;
    int64_t f = tile.lanes, th = tile.rows, tw = tile.cols;
    if (!R && !(R = sch_cache_write(s, F, "local"))) return -1;
    te_tensor *in = operand_at(R, vec, f, false, &dim);
    if (!in) return te_error(sch_ctx(s), "ops: no operand of '%s' to pack", R->name);
    if (pack_operand(s, R, in, dim, f, -1, NULL)) return -1;
    te_tensor *Rp = sch_pack(s, R, sch_axis(R, vec), f);
    if (!Rp) return -1;
    /* F: the other axes with the vector blocks in place of `vec` and the
     * row tiles, then the column tiles, then the tile; parallel down to
     * the column tiles. */
    te_expr *ax[TE_MAX_DIMS], *vo, *vi, *ho, *hi, *co, *ci;
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(F, d))) return -1;
    if (sch_split(s, F, ax[vec], f, &vo, &vi) || sch_split(s, F, ax[row], th, &ho, &hi) ||
        sch_split(s, F, ax[col], tw, &co, &ci))
        return -1;
    te_expr *order[TE_MAX_DIMS + 3];
    int k = 0;
    bool rows_outside = ops_packed_rows_outside(in);
    for (int d = 0; d < n; d++)
        if (d != col && !(rows_outside && d == vec))
            order[k++] = d == vec ? vo : d == row ? ho : ax[d];
    if (rows_outside) order[k++] = vo;
    int nouter = k;
    order[k++] = co;
    order[k++] = vi;
    order[k++] = hi;
    order[k++] = ci;
    te_expr *par = order[0];
    if (sch_reorder(s, F, k, order) || (nouter > 1 && sch_fuse(s, F, nouter, order, &par)) ||
        sch_parallel(s, F, par) || sch_compute_at(s, Rp, F, co))
        return -1;
    if (tw > 1 && sch_vectorize(s, F, ci)) return -1;
    /* Rp: [vec blocks, the other axes..., vec lanes]; the reduction outside
     * the tile's rows, columns and lanes. */
    int pr = row < vec ? row + 1 : row, pc = col < vec ? col + 1 : col;
    int nr = Rp->body->u.reduce.naxes;
    te_expr *ro[2 * TE_MAX_DIMS + 4], *rax[TE_MAX_DIMS];
    bool slides[TE_MAX_DIMS];
    k = 0;
    for (int d = 0; d < n; d++)
        if (d != pc && d != pr) ro[k++] = sch_axis(Rp, d);
    /* The order of ops_packed_taps_outside (TVM's x86 convolutions order
     * ic_outer, kh, kw, ic_block too). */
    int last = -1, nslide = 0;
    for (int r = 0; r < nr; r++) {
        if (!(rax[r] = sch_reduce_axis(Rp, r))) return -1;
        if ((slides[r] = te_reduce_axis_slides(R, r))) nslide++;
        else last = r;
    }
    te_expr *lo = NULL, *li = NULL;
    if (ops_packed_taps_outside(&tile, vlen) && nslide > 0 && last >= 0) {
        if (sch_split(s, Rp, rax[last], ops_packed_reduce_block(rax[last]->u.var.extent), &lo,
                      &li))
            return -1;
    }
    for (int r = 0; r < nr; r++)
        if (!lo || !slides[r]) ro[k++] = lo && r == last ? lo : rax[r];
    if (lo) {
        for (int r = 0; r < nr; r++)
            if (slides[r]) ro[k++] = rax[r];
        ro[k++] = li;
    }
    ro[k++] = sch_axis(Rp, pr);
    ro[k++] = sch_axis(Rp, pc);
    ro[k++] = sch_axis(Rp, n);
    for (int i = 0; i < k; i++)
        if (!ro[i]) return -1;
    if (sch_reorder(s, Rp, k, ro) || (th > 1 && sch_unroll(s, Rp, sch_axis(Rp, pr))) ||
        (tw > 1 && sch_unroll(s, Rp, sch_axis(Rp, pc))))
        return -1;
    return sch_vectorize(s, Rp, sch_axis(Rp, n));
}

int ops__sched_row_reduce(sch_schedule *s, te_tensor *R, te_tensor *C, te_expr *at, int vlen) {
    if (!R->body || R->body->kind != TE_REDUCE)
        return te_error(sch_ctx(s), "ops: '%s' is not a reduction", R->name);
    te_expr *k = sch_reduce_axis(R, R->body->u.reduce.naxes - 1);
    if (!k) return -1;
    int64_t n = k->u.var.extent, f = 0;
    for (int64_t m = OPS_ROW_REDUCE_VECTORS; m >= 1 && !f; m /= 2)
        if (n % (m * vlen) == 0 && n / (m * vlen) >= 2) f = m * vlen;
    te_tensor *rf = NULL;
    if (R->body->u.reduce.naxes == 1 && R->ndim > 0 && vlen > 1 && f) {
        te_expr *ko, *ki;
        if (sch_split(s, R, k, f, &ko, &ki) || !(rf = sch_rfactor(s, R, ki, R->ndim))) return -1;
        /* rf[rows..., ki]: the row's blocks of f outside, ki vectorized */
        te_expr *ord[TE_MAX_DIMS + 2];
        int q = 0;
        for (int d = 0; d < R->ndim; d++)
            if (!(ord[q++] = sch_axis(rf, d))) return -1;
        if (!(ord[q++] = sch_reduce_axis(rf, 0)) || !(ord[q++] = sch_axis(rf, R->ndim)))
            return -1;
        if (sch_reorder(s, rf, q, ord) || sch_vectorize(s, rf, ord[q - 1])) return -1;
    }
    te_expr *par = NULL;
    if (at) {
        if (sch_compute_at(s, R, C, at)) return -1;
    } else if (R->ndim > 0) {
        te_expr *ax[TE_MAX_DIMS];
        for (int d = 0; d < R->ndim; d++)
            if (!(ax[d] = sch_axis(R, d))) return -1;
        if (fuse_parallel(s, R, ax, R->ndim, &par)) return -1;
    }
    if (!rf) return 0;
    return at ? sch_compute_at(s, rf, C, at) : par ? sch_compute_at(s, rf, R, par) : 0;
}

int ops__sched_reduce_inner(sch_schedule *s, te_tensor *R, bool vectorize) {
    if (!R->body || R->body->kind != TE_REDUCE) return 0;
    int nred = R->body->u.reduce.naxes;
    te_expr *ord[2 * TE_MAX_DIMS];
    int k = 0;
    for (int r = 0; r < nred; r++)
        if (!(ord[k++] = sch_reduce_axis(R, r))) return -1;
    te_expr *last = sch_axis(R, R->ndim - 1);
    if (!last) return -1;
    ord[k++] = last;
    if (sch_reorder(s, R, k, ord)) return -1;
    return vectorize ? sch_vectorize(s, R, last) : 0;
}

sch_schedule *ops_default_schedule(const ops_workload *w, const char *target) {
    if (!w) return NULL;
    te_ctx *ctx = w->args[0]->ctx;
    cg_target t;
    char *why = NULL;
    if (cg_target_parse(target ? target : "", &t, &why)) {
        te_error(ctx, "ops: %s: no default schedule for %s", w->op, why ? why : "out of memory");
        free(why);
        return NULL;
    }
    bool cuda = t.kind == CG_TARGET_CUDA;
    int vlen = t.vector_lanes;
    bool bf16_dot = t.bf16_dot;
    const char *arch = cuda ? (t.arch ? t.arch : cg_cuda_default_arch(ctx)) : NULL;
    ops__gpu gpu = {arch ? cg_cuda_optin_shared(arch) : 0, cg_cuda_arch_cc(arch)};
    cg_target_free(&t);
    const ops__priv *pv = w->priv;
    if (cuda && !pv->impl->cuda_schedule) {
        te_error(ctx, "ops: %s: no default schedule for target 'cuda'", w->op);
        return NULL;
    }
    sch_schedule *s = sch_create(ctx, w->nouts, w->outs);
    if (!s) return NULL;
    int rc = 1;
    if (!cuda && bf16_dot && pv->impl->schedule_bf16_dot && te_dtype_eq(w->dtype, TE_BFLOAT16))
        rc = pv->impl->schedule_bf16_dot(w, s, w->param_values);
    if (rc == 1)
        rc = cuda ? pv->impl->cuda_schedule(w, s, w->param_values, &gpu)
                  : pv->impl->schedule ? pv->impl->schedule(w, s, w->param_values, vlen) : 0;
    if (rc) {
        const char *why = te_ctx_errmsg(ctx);
        te_error(ctx, "ops: %s: default %s schedule failed: %s", w->op, cuda ? "cuda" : "cpu",
                 te_strdup(ctx, why));
        return NULL;
    }
    return s;
}
