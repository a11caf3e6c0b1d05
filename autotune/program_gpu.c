/*
 * autotune/program_gpu.c — what the GPU rules (autotune/rules/rule_gpu_*.c)
 * share for programs: the GPU limits, the tables of the GPU holes'
 * values, the tile constraints, and the random draw and mutation of a
 * GPU hole (Ansor §4.2 for GPU: auto_unroll_max_step, cooperative-fetch
 * vector lanes, threads of flat stages; tile sizes by moving a prime
 * factor, kept within the hard rules below). The tile sizes' random draw
 * is the GPU tile rule's (rule_gpu_tile.c).
 *
 * Tile constraints (rejection sampling, as Ansor's InitThreadBind and
 * the GPU verifier): threads per block within tune_gpu_limits, at least
 * one warp (32) when the stage has that many outputs, vthreads <= 8
 * (TVM's max_vthread_extent), at most 256 outputs per thread (the
 * accumulator lives in registers; more spills). Shared memory is left to
 * the verifier (tir_verify_gpu), which the search runs on every program.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/rules/rule.h"
#include "loom/codegen.h"
#include "loom/runtime.h"

const int64_t tune__gpu_unroll[TUNE__GPU_NUNROLL] = {0, 16, 64, 512, 1024};
const int64_t tune__gpu_threads[TUNE__GPU_NTHREADS] = {32, 64, 128, 256, 512, 1024};
const int64_t tune__gpu_fetch[TUNE__GPU_NFETCH] = {1, 2, 4};

enum { MIN_THREADS = 32 };

/* Once per process: read by the search's threads (pthread_once). */
static tir_gpu_limits gpu_lim;
static pthread_once_t gpu_lim_once = PTHREAD_ONCE_INIT;

static void detect_gpu_limits(void) {
    rt_cuda_props p;
    gpu_lim.max_threads_per_block = 1024;
    gpu_lim.max_shared_bytes = 49152;
    if (rt_cuda_available() && rt_cuda_get_props(0, &p) == 0) {
        if (p.max_threads_per_block > 0) gpu_lim.max_threads_per_block = p.max_threads_per_block;
        /* the opt-in limit, as cg_build checks: a kernel over 48 KiB takes
         * dynamic shared memory (the tensor-core defaults' pipelines do) */
        int sh = p.shared_mem_per_block_optin > p.shared_mem_per_block ? p.shared_mem_per_block_optin
                                                                     : p.shared_mem_per_block;
        if (sh > 0) gpu_lim.max_shared_bytes = sh;
    }
}

tir_gpu_limits tune_gpu_limits(void) {
    pthread_once(&gpu_lim_once, detect_gpu_limits);
    return gpu_lim;
}

tir_gpu_limits tune_gpu_limits_for(const char *target) {
    tir_gpu_limits lim = tune_gpu_limits();
    if (rt_cuda_available()) return lim;
    cg_target t;
    char *why = NULL;
    if (!target || cg_target_parse(target, &t, &why)) {
        free(why);
        return lim;
    }
    if (t.kind == CG_TARGET_CUDA) {
        te_ctx *ctx = t.arch ? NULL : te_ctx_new();
        const char *arch = t.arch ? t.arch : ctx ? cg_cuda_default_arch(ctx) : NULL;
        int64_t sh = arch ? cg_cuda_optin_shared(arch) : 0;
        if (sh > lim.max_shared_bytes) lim.max_shared_bytes = sh;
        te_ctx_free(ctx);
    }
    cg_target_free(&t);
    return lim;
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
int tune__gpu_tile_check(const tune_sketch *sk, int u, const int64_t *vals) {
    tile_stats st = unit_stats(sk, u, vals);
    tir_gpu_limits lim = tune_gpu_limits();
    if (st.threads > lim.max_threads_per_block || st.vthreads > TUNE__GPU_MAX_VTHREAD ||
        st.per_thread > TUNE__GPU_MAX_PER_THREAD)
        return 2;
    int64_t want = st.outputs < MIN_THREADS ? st.outputs : MIN_THREADS;
    return st.threads < want ? 1 : 0;
}

void tune__random_hole_gpu(const tune_hole *h, uint64_t *rng, int64_t *v) {
    switch (h->kind) {
    case TUNE_HOLE_GPU_UNROLL:
    case TUNE_HOLE_GPU_FETCH: v[0] = tune__rand_below(rng, h->extent); break;
    case TUNE_HOLE_GPU_THREADS: {
        int64_t lim = tune_gpu_limits().max_threads_per_block, n = 0;
        while (n < h->extent && tune__gpu_threads[n] <= lim) n++;
        v[0] = tune__rand_below(rng, n);
        break;
    }
    default: break;
    }
}

int tune__mutate_hole_gpu(const tune_sketch *sk, const tune_hole *h, uint64_t *rng,
                          int64_t *vals) {
    int64_t *v = vals + h->offset;
    int64_t old[4];
    memcpy(old, v, sizeof(int64_t) * (size_t)h->nvals);
    if (h->kind == TUNE_HOLE_SPLIT) {
        /* A prime factor moved from one level to another (the outermost
         * level, the block count, is implicit: extent / product). */
        if (tune__move_split_factor(h, rng, v)) return -1;
        if (tune__gpu_tile_check(sk, h->unit, vals) == 2) {
            memcpy(v, old, sizeof(int64_t) * (size_t)h->nvals);
            return -1;
        }
        return 0;
    }
    tune__random_hole_gpu(h, rng, v);
    return v[0] != old[0] ? 0 : -1;
}

te_expr *tune__fuse_all(tune_decoder *a, te_tensor *t, te_expr **ax, int n) {
    te_expr *f = ax[0];
    if (n > 1 && sch_fuse(a->s, t, n, ax, &f)) return NULL;
    return f;
}

