/*
 * autotune/program_gpu.c — programs of GPU sketches: random annotation
 * (Ansor §4.2 for GPU: tile sizes whose thread level is the block's
 * thread count and whose vthread level is the virtual-thread count,
 * auto_unroll_max_step, cooperative-fetch vector lanes, threads of flat
 * stages), mutation of the same holes, and applying a program with
 * ordinary schedule primitives (cache_write "local", cache_read
 * "shared", split/fuse/reorder, bind, compute_at, pragma, vectorize) so
 * its step log replays anywhere.
 *
 * Tile constraints (rejection sampling, as Ansor's InitThreadBind and
 * the GPU verifier): threads per block within tune_gpu_limits, at least
 * one warp (32) when the stage has that many outputs, vthreads <= 8
 * (TVM's max_vthread_extent), at most 256 outputs per thread (the
 * accumulator lives in registers; more spills). Shared memory is left to
 * the verifier (tir_verify_gpu), which the search runs on every program.
 */
#include <pthread.h>
#include <string.h>

#include "autotune/tune_internal.h"
#include "loom/runtime.h"

static const int64_t gpu_unroll[TUNE__GPU_NUNROLL] = {0, 16, 64, 512, 1024};
static const int64_t gpu_threads[TUNE__GPU_NTHREADS] = {32, 64, 128, 256, 512, 1024};
static const int64_t gpu_fetch[TUNE__GPU_NFETCH] = {1, 2, 4};

enum { MAX_VTHREAD = 8, MAX_PER_THREAD = 256, MIN_THREADS = 32 };

/* Once per process: read by the search's threads (pthread_once). */
static tir_gpu_limits gpu_lim;
static pthread_once_t gpu_lim_once = PTHREAD_ONCE_INIT;

static void detect_gpu_limits(void) {
    rt_cuda_props p;
    gpu_lim.max_threads_per_block = 1024;
    gpu_lim.max_shared_bytes = 49152;
    if (rt_cuda_available() && rt_cuda_get_props(0, &p) == 0) {
        if (p.max_threads_per_block > 0) gpu_lim.max_threads_per_block = p.max_threads_per_block;
        if (p.shared_mem_per_block > 0) gpu_lim.max_shared_bytes = p.shared_mem_per_block;
    }
}

tir_gpu_limits tune_gpu_limits(void) {
    pthread_once(&gpu_lim_once, detect_gpu_limits);
    return gpu_lim;
}

/* ---- tile constraints ---- */

typedef struct {
    int64_t threads, vthreads, per_thread, outputs;
} tile_stats;

static tile_stats unit_stats(const tune_sketch *sk, int u, const int64_t *vals) {
    tile_stats st = {1, 1, 1, 1};
    for (int i = 0; i < sk->nholes; i++) {
        const tune_hole *h = &sk->holes[i];
        if (h->unit != u || h->kind != TUNE_HOLE_SPLIT || h->reduce) continue;
        const int64_t *f = vals + h->offset;
        st.vthreads *= f[0];
        st.threads *= f[1];
        st.per_thread *= f[0] * f[2] * f[3];
        st.outputs *= h->extent;
    }
    return st;
}

/* 0: fine; 1: only the soft rule (at least a warp) is broken; 2: a hard
 * rule is broken. */
static int tile_check(const tune_sketch *sk, int u, const int64_t *vals) {
    tile_stats st = unit_stats(sk, u, vals);
    tir_gpu_limits lim = tune_gpu_limits();
    if (st.threads > lim.max_threads_per_block || st.vthreads > MAX_VTHREAD ||
        st.per_thread > MAX_PER_THREAD)
        return 2;
    int64_t want = st.outputs < MIN_THREADS ? st.outputs : MIN_THREADS;
    return st.threads < want ? 1 : 0;
}

/* Random factors of one spatial axis: the four inner levels (vthread,
 * thread, inner, innermost) drawn in a random order, each a divisor of
 * what the others left (innermost <= 64, vthread <= 8). */
static void random_spatial(const tune_hole *h, uint64_t *rng, int64_t *f) {
    int order[4] = {0, 1, 2, 3};
    for (int k = 3; k > 0; k--) {
        int j = (int)tune__rand_below(rng, k + 1), t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    static const int64_t cap[4] = {MAX_VTHREAD, 1024, MAX_PER_THREAD, TUNE__MAX_INNER};
    int64_t left = h->extent;
    for (int k = 0; k < 4; k++) {
        int lv = order[k];
        f[lv] = tune__rand_divisor(rng, left, cap[lv]);
        left /= f[lv];
    }
}

static void random_reduce(const tune_hole *h, uint64_t *rng, int64_t *f) {
    f[1] = tune__rand_divisor(rng, h->extent, TUNE__MAX_INNER);
    f[0] = tune__rand_divisor(rng, h->extent / f[1], h->extent / f[1]);
}

static void random_simple(const tune_hole *h, uint64_t *rng, int64_t *v) {
    switch (h->kind) {
    case TUNE_HOLE_GPU_UNROLL:
    case TUNE_HOLE_GPU_FETCH: v[0] = tune__rand_below(rng, h->extent); break;
    case TUNE_HOLE_GPU_THREADS: {
        int64_t lim = tune_gpu_limits().max_threads_per_block, n = 0;
        while (n < h->extent && gpu_threads[n] <= lim) n++;
        v[0] = tune__rand_below(rng, n);
        break;
    }
    default: break;
    }
}

/* Draws the tile sizes of unit u until they meet the constraints (kept:
 * the last draw meeting the hard ones, else the last draw). */
static void random_tile(const tune_sketch *sk, int u, uint64_t *rng, int64_t *vals) {
    int64_t keep[TUNE_MAX_HOLES * 3];
    bool have = false;
    for (int tries = 0; tries < 256; tries++) {
        for (int i = 0; i < sk->nholes; i++) {
            const tune_hole *h = &sk->holes[i];
            if (h->unit != u || h->kind != TUNE_HOLE_SPLIT) continue;
            if (h->reduce) random_reduce(h, rng, vals + h->offset);
            else random_spatial(h, rng, vals + h->offset);
        }
        int c = tile_check(sk, u, vals);
        if (c == 0) return;
        if (c == 1 && !have) {
            memcpy(keep, vals, sizeof keep);
            have = true;
        }
    }
    if (have) memcpy(vals, keep, sizeof keep);
}

void tune__gpu_program_random(const tune_sketch *sk, int sketch_index, uint64_t *rng,
                              tune_program *out) {
    memset(out, 0, sizeof *out);
    out->sketch = sketch_index;
    for (int i = 0; i < sk->nholes; i++) random_simple(&sk->holes[i], rng, out->vals + sk->holes[i].offset);
    for (int u = 0; u < sk->nunits; u++)
        if (sk->units[u].kind == TUNE_UNIT_GPU_TILE) random_tile(sk, u, rng, out->vals);
}

/* Moves a prime factor of one level of a split to another (the outermost
 * level, the block count, is implicit: extent / product). */
int tune__gpu_program_mutate(const tune_sketch *sk, uint64_t *rng, tune_program *p) {
    if (sk->nholes == 0) return -1;
    for (int tries = 0; tries < 32; tries++) {
        const tune_hole *h = &sk->holes[tune__rand_below(rng, sk->nholes)];
        int64_t *v = p->vals + h->offset;
        int64_t old[4];
        memcpy(old, v, sizeof(int64_t) * (size_t)h->nvals);
        if (h->kind == TUNE_HOLE_SPLIT) {
            if (tune__move_split_factor(h, rng, v)) continue;
            if (tile_check(sk, h->unit, p->vals) == 2) {
                memcpy(v, old, sizeof(int64_t) * (size_t)h->nvals);
                continue;
            }
            return 0;
        }
        random_simple(h, rng, v);
        if (v[0] != old[0]) return 0;
    }
    return -1;
}

/* ---- applying ---- */

typedef struct {
    sch_schedule *s;
    const tune_sketch *sk;
    const tune_program *p;
    const tune_workload *w;
    te_tensor *stage[TUNE_MAX_STAGES];
    te_tensor *local[TUNE_MAX_STAGES];  /* the "local" cache of a stage */
    te_tensor *shared[TUNE_MAX_UNITS];  /* per SHARED unit: the copy */
    te_expr *fetch_at[TUNE_MAX_STAGES]; /* per tiled stage: its last outer reduce loop */
    int64_t threads[TUNE_MAX_STAGES];   /* per tiled stage: threads per block */
} gapplier;

static const tune_hole *hole(const gapplier *a, int u, int k) {
    return tune__unit_hole(a->sk, u, k);
}
static const int64_t *hv(const gapplier *a, int u, int k) {
    return a->p->vals + hole(a, u, k)->offset;
}

static te_expr *fuse_all(gapplier *a, te_tensor *t, te_expr **ax, int n) {
    te_expr *f = ax[0];
    if (n > 1 && sch_fuse(a->s, t, n, ax, &f)) return NULL;
    return f;
}

/* Tiles the "local" cache L of stage t (unit u) SSSRRSRS and computes it
 * at the thread loop of holder H, whose block, vthread and thread levels
 * are fused and bound. */
static int apply_tile(gapplier *a, int u, te_tensor *t, te_tensor *L, te_tensor *H) {
    int nsp = t->ndim, nr = nreduce_of(t);
    te_expr *b[TE_MAX_DIMS], *v[TE_MAX_DIMS], *th[TE_MAX_DIMS], *in[TE_MAX_DIMS];
    int64_t threads = 1;
    for (int d = 0; d < nsp; d++) {
        const int64_t *f = hv(a, u, d);
        te_expr *x = sch_axis(H, d), *r;
        if (!x || sch_split(a->s, H, x, f[0] * f[1] * f[2] * f[3], &b[d], &r) ||
            sch_split(a->s, H, r, f[1] * f[2] * f[3], &v[d], &r) ||
            sch_split(a->s, H, r, f[2] * f[3], &th[d], &in[d]))
            return -1;
        threads *= f[1];
    }
    te_expr *order[4 * TE_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < nsp; d++) order[n++] = b[d];
    for (int d = 0; d < nsp; d++) order[n++] = v[d];
    for (int d = 0; d < nsp; d++) order[n++] = th[d];
    for (int d = 0; d < nsp; d++) order[n++] = in[d];
    if (sch_reorder(a->s, H, n, order)) return -1;
    te_expr *fb = fuse_all(a, H, b, nsp), *fv = fb ? fuse_all(a, H, v, nsp) : NULL;
    te_expr *ft = fv ? fuse_all(a, H, th, nsp) : NULL;
    if (!ft || sch_bind(a->s, H, fb, "blockIdx.x") || sch_bind(a->s, H, fv, "vthread") ||
        sch_bind(a->s, H, ft, "threadIdx.x"))
        return -1;
    /* The accumulator: every level split, in SSSRRSRS order. */
    te_expr *s[TE_MAX_DIMS][5], *r[TE_MAX_DIMS][3];
    for (int d = 0; d < nsp; d++) {
        const int64_t *f = hv(a, u, d);
        te_expr *x = sch_axis(L, d);
        if (!x || sch_split(a->s, L, x, f[3], &x, &s[d][4]) ||
            sch_split(a->s, L, x, f[2], &x, &s[d][3]) ||
            sch_split(a->s, L, x, f[1], &x, &s[d][2]) ||
            sch_split(a->s, L, x, f[0], &s[d][0], &s[d][1]))
            return -1;
    }
    for (int k = 0; k < nr; k++) {
        const int64_t *f = hv(a, u, nsp + k);
        te_expr *x = sch_reduce_axis(L, k);
        if (!x || sch_split(a->s, L, x, f[1], &x, &r[k][2]) ||
            sch_split(a->s, L, x, f[0], &r[k][0], &r[k][1]))
            return -1;
    }
    n = 0;
    for (int lv = 0; lv < 3; lv++)
        for (int d = 0; d < nsp; d++) order[n++] = s[d][lv];
    for (int k = 0; k < nr; k++) order[n++] = r[k][0];
    for (int k = 0; k < nr; k++) order[n++] = r[k][1];
    for (int d = 0; d < nsp; d++) order[n++] = s[d][3];
    for (int k = 0; k < nr; k++) order[n++] = r[k][2];
    for (int d = 0; d < nsp; d++) order[n++] = s[d][4];
    if (sch_reorder(a->s, L, n, order) || sch_compute_at(a->s, L, H, ft)) return -1;
    int64_t unroll = gpu_unroll[hv(a, u, nsp + nr)[0]];
    if (unroll && sch_pragma(a->s, L, order[0], "auto_unroll_max_step", unroll)) return -1;
    a->fetch_at[a->sk->units[u].stage] = nr ? r[nr - 1][0] : NULL;
    a->threads[a->sk->units[u].stage] = threads;
    return 0;
}

/* The lanes a shared copy of p for tiled stage t can load at once: every
 * read of p in t's body must index p's innermost dimension with one and
 * the same axis of t, whose block tile and p's row both take whole
 * vectors (so each vector is contiguous and aligned). */
typedef struct {
    const te_tensor *p;
    const te_expr *var;
    bool ok;
} inner_walk;

static void inner_visit(const te_expr *e, void *user) {
    inner_walk *w = user;
    if (e->kind == TE_READ && e->u.read.tensor == w->p) {
        const te_expr *ix = e->u.read.indices[e->u.read.ndim - 1];
        if (ix->kind != TE_VAR || (w->var && w->var != ix)) w->ok = false;
        else w->var = ix;
    }
    te_expr_visit_children(e, inner_visit, user);
}

static int64_t fetch_lanes(const gapplier *a, int tu, const te_tensor *t, const te_tensor *p,
                           int64_t want) {
    if (want <= 1 || p->kind != TE_OP_PLACEHOLDER) return 1;
    inner_walk w = {p, NULL, true};
    inner_visit(t->body, &w);
    if (!w.ok || !w.var) return 1;
    int64_t tile = 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->axes[d] == w.var) {
            const int64_t *f = hv(a, tu, d);
            tile = f[0] * f[1] * f[2] * f[3];
        }
    for (int k = 0; k < nreduce_of(t); k++)
        if (t->body->u.reduce.axes[k] == w.var) {
            const int64_t *f = hv(a, tu, t->ndim + k);
            tile = f[0] * f[1];
        }
    int64_t lanes = want;
    while (lanes > 1 && (tile % lanes || p->shape[p->ndim - 1] % lanes)) lanes /= 2;
    return lanes;
}

/* The shared copy of unit u: at the reader's last outer reduce loop,
 * fetched by all the block's threads. */
static int apply_shared(gapplier *a, int u) {
    const tune_unit *un = &a->sk->units[u];
    te_tensor *S = a->shared[u], *L = a->local[un->consumer];
    te_expr *at = a->fetch_at[un->consumer];
    int64_t threads = a->threads[un->consumer];
    int tu = -1;
    for (int k = 0; k < a->sk->nunits; k++)
        if (a->sk->units[k].kind == TUNE_UNIT_GPU_TILE && a->sk->units[k].stage == un->consumer)
            tu = k;
    if (!S || !L || !at || tu < 0) {
        te_error(sch_ctx(a->s), "autotune: shared copy of '%s' has no tiled reader",
                 a->stage[un->stage]->name);
        return -1;
    }
    if (sch_compute_at(a->s, S, L, at)) return -1;
    te_expr *ax[TE_MAX_DIMS], *f, *vi, *o, *tx;
    for (int d = 0; d < S->ndim; d++)
        if (!(ax[d] = sch_axis(S, d))) return -1;
    if (!(f = fuse_all(a, S, ax, S->ndim))) return -1;
    int64_t lanes = fetch_lanes(a, tu, a->stage[un->consumer], a->stage[un->stage],
                                gpu_fetch[hv(a, u, 0)[0]]);
    if (lanes > 1 && (sch_split(a->s, S, f, lanes, &f, &vi) || sch_vectorize(a->s, S, vi)))
        return -1;
    if (sch_split(a->s, S, f, threads, &o, &tx) || sch_bind(a->s, S, tx, "threadIdx.x"))
        return -1;
    return 0;
}

/* A flat stage: all axes fused, split by the thread count, bound; a
 * reduction's local accumulator computed in the thread. */
static int apply_flat(gapplier *a, int u, te_tensor *t) {
    te_expr *ax[TE_MAX_DIMS], *f, *bo, *ti;
    for (int d = 0; d < t->ndim; d++)
        if (!(ax[d] = sch_axis(t, d))) return -1;
    if (!(f = fuse_all(a, t, ax, t->ndim))) return -1;
    if (sch_split(a->s, t, f, gpu_threads[hv(a, u, 0)[0]], &bo, &ti) ||
        sch_bind(a->s, t, bo, "blockIdx.x") || sch_bind(a->s, t, ti, "threadIdx.x"))
        return -1;
    te_tensor *L = a->local[a->sk->units[u].stage];
    return L ? sch_compute_at(a->s, L, t, ti) : 0;
}

/* A cross-thread reduction: the spatial axes fused on blockIdx.x, the
 * reduce axes fused and split by the thread count, the inner part on
 * threadIdx.x (lowered to an allreduce). */
static int apply_xreduce(gapplier *a, int u, te_tensor *t) {
    int nr = nreduce_of(t);
    te_expr *ax[TE_MAX_DIMS], *rx[TE_MAX_DIMS], *f, *rf, *ro, *ri;
    for (int d = 0; d < t->ndim; d++)
        if (!(ax[d] = sch_axis(t, d))) return -1;
    for (int k = 0; k < nr; k++)
        if (!(rx[k] = sch_reduce_axis(t, k))) return -1;
    if (!(f = fuse_all(a, t, ax, t->ndim)) || !(rf = fuse_all(a, t, rx, nr))) return -1;
    if (sch_split(a->s, t, rf, gpu_threads[hv(a, u, 0)[0]], &ro, &ri) ||
        sch_bind(a->s, t, f, "blockIdx.x") || sch_bind(a->s, t, ri, "threadIdx.x"))
        return -1;
    return 0;
}

sch_schedule *tune__gpu_program_apply(te_ctx *ctx, const tune_workload *w, const tune_sketch *sk,
                                      const tune_program *p) {
    gapplier a;
    memset(&a, 0, sizeof a);
    a.s = sch_create(ctx, w->nouts, w->outs);
    a.sk = sk;
    a.p = p;
    a.w = w;
    if (!a.s) return NULL;
    int n = sch_num_stages(a.s);
    if (n > TUNE_MAX_STAGES) {
        te_error(ctx, "autotune: %d stages; at most %d", n, TUNE_MAX_STAGES);
        return NULL;
    }
    for (int i = 0; i < n; i++) a.stage[i] = sch_stage_tensor(a.s, i);
    /* 1. Accumulators: tiled stages and flat reductions. Stages first to
     * last, so a producer's cache exists before its reader's. */
    for (int u = sk->nunits - 1; u >= 0; u--) {
        const tune_unit *un = &sk->units[u];
        te_tensor *t = a.stage[un->stage];
        bool acc = (un->kind == TUNE_UNIT_GPU_TILE && un->consumer < 0) ||
                   (un->kind == TUNE_UNIT_GPU_FLAT && nreduce_of(t) > 0);
        if (acc && !(a.local[un->stage] = sch_cache_write(a.s, t, "local"))) return NULL;
        /* Fused into its consumer, the stage itself is the accumulator:
         * computed inside the consumer's thread loop, it is allocated
         * there, per thread. */
        if (un->kind == TUNE_UNIT_GPU_TILE && un->consumer >= 0) a.local[un->stage] = t;
    }
    /* 2. Shared copies, read by the tiled stage's accumulator. */
    for (int u = 0; u < sk->nunits; u++) {
        const tune_unit *un = &sk->units[u];
        if (un->kind != TUNE_UNIT_GPU_SHARED) continue;
        te_tensor *reader = a.local[un->consumer];
        if (!reader) {
            te_error(ctx, "autotune: shared copy of '%s' for untiled stage %d",
                     a.stage[un->stage]->name, un->consumer);
            return NULL;
        }
        if (!(a.shared[u] = sch_cache_read(a.s, a.stage[un->stage], "shared", 1, &reader)))
            return NULL;
    }
    /* 3. Inlining: the always-inlined stages (a padding stage into its
     * shared copy). */
    for (int k = 0; k < sk->ninline; k++)
        if (sch_compute_inline(a.s, a.stage[sk->inlined[k]])) return NULL;
    /* 4. Tiles, 5. their shared copies, 6. flat and cross-thread stages. */
    for (int u = sk->nunits - 1; u >= 0; u--) {
        const tune_unit *un = &sk->units[u];
        if (un->kind != TUNE_UNIT_GPU_TILE) continue;
        te_tensor *t = a.stage[un->stage];
        te_tensor *H = un->consumer >= 0 ? a.stage[un->consumer] : t;
        if (apply_tile(&a, u, t, a.local[un->stage], H)) return NULL;
    }
    for (int u = 0; u < sk->nunits; u++)
        if (sk->units[u].kind == TUNE_UNIT_GPU_SHARED && apply_shared(&a, u)) return NULL;
    for (int u = sk->nunits - 1; u >= 0; u--)
        if ((sk->units[u].kind == TUNE_UNIT_GPU_FLAT &&
             apply_flat(&a, u, a.stage[sk->units[u].stage])) ||
            (sk->units[u].kind == TUNE_UNIT_GPU_XREDUCE &&
             apply_xreduce(&a, u, a.stage[sk->units[u].stage])))
            return NULL;
    return a.s;
}
