/*
 * ops/sched_cuda_wmma.c — a matmul on NVIDIA tensor cores through
 * tensorize and WMMA (the structure of CUTLASS's and TVM's tensor-core
 * GEMMs): a block computes a bm x bn tile of C with its warps in a
 * (bm/wm) x (bn/wn) grid (threadIdx.z, threadIdx.y; 32 lanes each on
 * threadIdx.x); per chunk of kc along k the block copies its A and B
 * tiles to shared memory (rows padded by 16 bytes against bank
 * conflicts), each warp loads 16-wide fragments from there and
 * accumulates its wm x wn tile in (wm/16) x (wn/16) accumulator
 * fragments, stored to C at the end. The shared tiles are a pipeline of
 * `stages` buffers (double-buffered by default): the next chunks' copies
 * (cp.async) are in flight while this one is multiplied; above two stages
 * the tiles take dynamic shared memory.
 */
#include "ops/ops_internal.h"

int ops__tile_fetch(sch_schedule *s, te_tensor *T, int64_t tz, int64_t ty, int64_t lanes,
                    int64_t vec) {
    te_expr *ax[2] = {sch_axis(T, 0), sch_axis(T, 1)}, *f, *v, *o, *t, *w, *x, *z, *y;
    if (!ax[0] || !ax[1] || sch_fuse(s, T, 2, ax, &f)) return -1;
    if (vec > 1 && (sch_split(s, T, f, vec, &f, &v) || sch_vectorize(s, T, v))) return -1;
    if (sch_split(s, T, f, tz * ty * lanes, &o, &t) || sch_split(s, T, t, lanes, &w, &x) ||
        sch_split(s, T, w, ty, &z, &y))
        return -1;
    return sch_bind(s, T, z, "threadIdx.z") || sch_bind(s, T, y, "threadIdx.y") ||
                   sch_bind(s, T, x, "threadIdx.x")
               ? -1
               : 0;
}

/* The largest of the candidates dividing n, or 0. */
static int64_t pick(int64_t n, const int64_t *c, int nc) {
    for (int i = 0; i < nc; i++)
        if (n % c[i] == 0) return c[i];
    return 0;
}

bool ops__cuda_wmma_fits(const te_tensor *R) {
    if (!R || R->ndim != 2 || !R->body || R->body->kind != TE_REDUCE) return false;
    int64_t K = R->body->u.reduce.axes[0]->u.var.extent;
    return R->shape[0] % 16 == 0 && R->shape[1] % 16 == 0 && K % 16 == 0;
}

/* The shared bytes of the tiles of one chunk (both operands, padded rows). */
static int64_t tile_bytes(int64_t bm, int64_t bn, int64_t kc, int bytes) {
    return (bm * (kc + 16 / bytes) + kc * (bn + 16 / bytes)) * bytes;
}

/* The reduction a 16-bit output F casts (F[i, j] = float16(R[i, j]) or
 * bfloat16(...)), or NULL. */
static te_tensor *cast_of(te_tensor *F) {
    const te_expr *b = F->body;
    if (!b || b->kind != TE_CAST || !te_dtype_is_half(F->dtype)) return NULL;
    const te_expr *r = b->u.un.a;
    if (r->kind != TE_READ || r->u.read.ndim != 2 || r->u.read.indices[0] != F->axes[0] ||
        r->u.read.indices[1] != F->axes[1])
        return NULL;
    te_tensor *R = r->u.read.tensor;
    return R->body && R->body->kind == TE_REDUCE ? R : NULL;
}

/* The template's checks of a complete config (the tiles, the shared
 * memory against `budget`, the warps, the copies). */
static int check(te_ctx *ctx, int64_t M, int64_t N, int64_t K, int bytes, bool bf16_out,
                 const ops_tc_config *c, int stages, int64_t budget, int64_t *shared) {
    int64_t bm = c->bm, bn = c->bn, wm = c->wm, wn = c->wn, kc = c->kc;
    /* a bfloat16 output is staged through 1 KiB of shared memory a warp */
    int64_t stage = 0;
    if (kc <= 0 || bm <= 0 || bn <= 0 || wm <= 0 || wn <= 0 || M % bm || N % bn || bm % wm || bn % wn || wm % 16 || wn % 16 || kc % 16 || K % kc)
        return te_error(ctx,
                        "tc_gemm: block %lldx%lld, warp %lldx%lld, chunk %lld do not tile "
                        "%lldx%lldx%lld (blocks must divide M and N, warps the blocks, 16 the "
                        "warps, the chunk K)",
                        (long long)bm, (long long)bn, (long long)wm, (long long)wn, (long long)kc,
                        (long long)M, (long long)N, (long long)K);
    if (bf16_out) stage = (bm / wm) * (bn / wn) * 1024;
    if (shared) *shared = tile_bytes(bm, bn, kc, bytes) * stages + stage;
    if (tile_bytes(bm, bn, kc, bytes) * stages + stage > budget)
        return te_error(ctx, "tc_gemm: the shared tiles take %lld bytes; a block has %lld",
                        (long long)(tile_bytes(bm, bn, kc, bytes) * stages + stage),
                        (long long)budget);
    int64_t tz = bm / wm, ty = bn / wn, vec = 16 / bytes;
    if (tz * ty > 32)
        return te_error(ctx, "tc_gemm: %lld warps a block; at most 32", (long long)(tz * ty));
    /* every thread copies whole 16-byte vectors of both tiles (a copy
     * shorter than the block would bind the thread axes with other
     * extents than the warps' loops) */
    int64_t threads = tz * ty * 32;
    if ((bm * kc / vec) % threads || (kc * bn / vec) % threads)
        return te_error(ctx,
                        "tc_gemm: the %lldx%lld and %lldx%lld tiles of a chunk are not a "
                        "multiple of %lld threads x %lld elements; use a longer chunk or fewer "
                        "warps",
                        (long long)bm, (long long)kc, (long long)kc, (long long)bn,
                        (long long)threads, (long long)vec);

    return 0;
}

/* The defaults of the knobs cfg leaves 0, then the checks: 0 with *out
 * complete (stages set), or -1 with the message in ctx. */
static int complete(te_ctx *ctx, int64_t M, int64_t N, int64_t K, int bytes, bool bf16_out,
                    const ops_tc_config *cfg, ops_tc_config *out) {
    ops_tc_config c = *cfg;
    /* only max_shared set (or nothing): the shape's defaults */
    bool dflt = !c.bm && !c.bn && !c.wm && !c.wn && !c.kc && !c.stages && !c.single_buffer &&
                !c.unroll_k;
    int stages = c.stages ? c.stages : c.single_buffer ? 1 : 2;
    if (stages < 1 || stages > 4 || (c.single_buffer && stages != 1))
        return te_error(ctx,
                        "tc_gemm: %d pipeline stages%s; a pipeline has 1 to 4 (single_buffer "
                        "means 1)",
                        stages, c.single_buffer ? " with single_buffer" : "");
    /* Two stages fit the 48 KiB of static shared memory; deeper pipelines
     * take dynamic shared memory, up to the largest opt-in any GPU has
     * (sm_90's 227 KiB; the GPU verifier checks the target's own). */
    int64_t budget = stages <= 2 ? 49152 : 232448;
    static const int64_t blk[] = {128, 64, 32, 16};
    /* Defaults from the H200 sweep of bench_tc_gemm (bench/RESULTS.md,
     * session 32): 128 x 128 blocks of four 64 x 64 warps where that makes
     * a block for each of the GPU's ~132 SMs, else 64 x 64 of 32 x 32 */
    int64_t big = (M % 128 == 0 && N % 128 == 0 && (M / 128) * (N / 128) >= 132) ? 128 : 64;
    if (!c.bm) c.bm = pick(M, blk + (big == 128 ? 0 : 1), big == 128 ? 4 : 3);
    if (!c.bn) c.bn = pick(N, blk + (big == 128 ? 0 : 1), big == 128 ? 4 : 3);
    if (!c.wm) c.wm = c.bm >= 64 ? c.bm / 2 : c.bm;
    if (!c.wn) c.wn = c.bn >= 64 ? c.bn / 2 : c.bn;
    if (dflt) c.unroll_k = bytes == 4; /* tf32's k steps: unrolled was faster */
    /* kc: the longest chunk whose (double-buffered) tiles fit the 48 KiB
     * of static shared memory a block has */
    /* a bfloat16 output is staged through 1 KiB of shared memory a warp */
    int64_t stage = bf16_out && c.wm && c.wn && c.bm % c.wm == 0 &&
                            c.bn % c.wn == 0
                        ? (c.bm / c.wm) * (c.bn / c.wn) * 1024
                        : 0;
    /* where the target takes more shared memory, for the large grids of
     * 128 x 128 blocks: three stages of the longest chunk (32 to 128
     * bytes a row) that fits it, the k steps unrolled — on the H200 +9 %
     * (float16), +22 % (bfloat16), +3 % (tf32) at 4096³ against two
     * stages in 48 KiB. On a grid of 64 x 64 blocks (mm1024 tf32) three
     * stages were 25 % slower: fewer blocks fit an SM */
    bool deep = dflt && c.bm == 128 && c.bn == 128;
    for (int64_t k = 128 / bytes; deep && k >= 32 && !c.kc; k /= 2) /* rows of 128 bytes at most */
        if (K % k == 0 && K > k && tile_bytes(c.bm, c.bn, k, bytes) * 3 + stage <= c.max_shared)
            c.kc = k, stages = 3, budget = c.max_shared, c.unroll_k = true;
    for (int64_t k = 64; k >= 16 && !c.kc; k /= 2)
        if (K % k == 0 && tile_bytes(c.bm, c.bn, k, bytes) * stages + stage <= budget) c.kc = k;
    if (check(ctx, M, N, K, bytes, bf16_out, &c, stages, budget, NULL)) return -1;
    c.stages = stages;
    c.single_buffer = false;
    *out = c;
    return 0;
}

int ops_tc_default_config(te_ctx *ctx, int64_t M, int64_t N, int64_t K, te_dtype in, te_dtype out,
                          int64_t max_shared, ops_tc_config *cfg) {
    if (!cfg) return te_error(ctx, "tc_gemm: no config to fill");
    if (M <= 0 || N <= 0 || K <= 0 || M % 16 || N % 16 || K % 16)
        return te_error(ctx, "tc_gemm: %lldx%lldx%lld is not a GEMM with M, N and K multiples of 16",
                        (long long)M, (long long)N, (long long)K);
    return complete(ctx, M, N, K, te_dtype_bytes(in), out.code == TE_BFLOAT,
                    &(ops_tc_config){.max_shared = max_shared}, cfg);
}

int ops_tc_check(te_ctx *ctx, int64_t M, int64_t N, int64_t K, te_dtype in, te_dtype out,
                 const ops_tc_config *cfg, int64_t *shared_bytes) {
    if (!cfg) return te_error(ctx, "tc_gemm: no config to check");
    if (M <= 0 || N <= 0 || K <= 0 || M % 16 || N % 16 || K % 16)
        return te_error(ctx, "tc_gemm: %lldx%lldx%lld is not a GEMM with M, N and K multiples of 16",
                        (long long)M, (long long)N, (long long)K);
    if (!(te_dtype_is_half(in) || (in.code == TE_FLOAT && in.bits == 32)))
        return te_error(ctx, "tc_gemm: inputs of %s; tensor cores take float16, bfloat16 or "
                             "float32 (as tf32)",
                        te_dtype_str(in));
    int stages = cfg->stages ? cfg->stages : cfg->single_buffer ? 1 : 2;
    if (cfg->wgmma)
        return ops__wgmma_check(ctx, M, N, K, te_dtype_bytes(in), false, false, cfg, stages,
                                232448, shared_bytes);
    if (stages < 1 || stages > 4 || (cfg->single_buffer && stages != 1))
        return te_error(ctx,
                        "tc_gemm: %d pipeline stages%s; a pipeline has 1 to 4 (single_buffer "
                        "means 1)",
                        stages, cfg->single_buffer ? " with single_buffer" : "");
    return check(ctx, M, N, K, te_dtype_bytes(in), out.code == TE_BFLOAT, cfg, stages,
                 stages <= 2 ? 49152 : 232448, shared_bytes);
}

int ops_schedule_tc_gemm(sch_schedule *s, te_tensor *F, te_tensor *A, te_tensor *B,
                         const ops_tc_config *cfg) {
    te_ctx *ctx = sch_ctx(s);
    te_tensor *R = cast_of(F);
    if (!R) R = F;
    if (!ops__cuda_wmma_fits(R) || A->ndim != 2 || B->ndim != 2)
        return te_error(ctx, "tc_gemm: '%s' is not a 2-D matmul with M, N and K multiples of 16",
                        F->name);
    if (cfg && cfg->wgmma) return ops__schedule_wgmma_gemm(s, F, R, A, B, cfg);
    if (ops__read_k_dim(R, A) == 0 || ops__read_k_dim(R, B) == 1)
        return te_error(ctx,
                        "tc_gemm: '%s' reads A as [K, M] or B as [N, K]; WMMA's template takes A "
                        "[M, K] and B [K, N] (wgmma, on sm_90, takes either)",
                        F->name);
    int64_t M = F->shape[0], N = F->shape[1];
    int64_t K = R->body->u.reduce.axes[0]->u.var.extent;
    te_dtype t = A->dtype;
    int bytes = te_dtype_bytes(t);
    int64_t kk = tir_wmma_k(t);
    ops_tc_config c;
    if (complete(ctx, M, N, K, bytes, F->dtype.code == TE_BFLOAT,
                 cfg ? cfg : &(ops_tc_config){0}, &c))
        return -1;
    int stages = c.stages;
    int64_t bm = c.bm, bn = c.bn, wm = c.wm, wn = c.wn, kc = c.kc;
    int64_t tz = bm / wm, ty = bn / wn, vec = 16 / bytes;
    /* a float16 output: the accumulators rounded as they are stored (the
     * float32 copy stage of R inlined into the cast) */
    te_tensor *CF = sch_cache_write(s, R, "wmma.accumulator");
    if (CF && R != F && sch_compute_inline(s, R)) return -1;
    te_tensor *AS = CF ? sch_cache_read(s, A, "shared", 1, &CF) : NULL;
    te_tensor *BS = CF ? sch_cache_read(s, B, "shared", 1, &CF) : NULL;
    te_tensor *AF = AS ? sch_cache_read(s, AS, "wmma.matrix_a", 1, &CF) : NULL;
    te_tensor *BF = BS ? sch_cache_read(s, BS, "wmma.matrix_b", 1, &CF) : NULL;
    if (!AF || !BF) return -1;
    /* an operand computed from others (an implicit GEMM's im2col gather
     * or reshaped weights) is computed as it is copied to shared memory,
     * never stored */
    if ((A->body && sch_compute_inline(s, A)) || (B->body && sch_compute_inline(s, B))) return -1;

    /* C: blocks, warps, 16x16 tiles stored from the accumulators */
    te_expr *bi, *i1, *wi, *i2, *ti, *ii, *bj, *j1, *wj, *j2, *tj, *ji;
    if (sch_split(s, F, sch_axis(F, 0), bm, &bi, &i1) || sch_split(s, F, i1, wm, &wi, &i2) ||
        sch_split(s, F, i2, 16, &ti, &ii) || sch_split(s, F, sch_axis(F, 1), bn, &bj, &j1) ||
        sch_split(s, F, j1, wn, &wj, &j2) || sch_split(s, F, j2, 16, &tj, &ji) ||
        sch_reorder(s, F, 8, (te_expr *[]){bi, bj, wi, wj, ti, tj, ii, ji}) ||
        sch_bind(s, F, bi, "blockIdx.y") || sch_bind(s, F, bj, "blockIdx.x") ||
        sch_bind(s, F, wi, "threadIdx.z") || sch_bind(s, F, wj, "threadIdx.y") ||
        sch_tensorize(s, F, ii, "wmma.store"))
        return -1;

    /* the warp's accumulation: chunks of kc, steps of the mma's k */
    te_expr *cti, *cii, *ctj, *cji, *ko, *k1, *kf, *kii;
    if (sch_compute_at(s, CF, F, wj) || sch_split(s, CF, sch_axis(CF, 0), 16, &cti, &cii) ||
        sch_split(s, CF, sch_axis(CF, 1), 16, &ctj, &cji) ||
        sch_split(s, CF, sch_reduce_axis(CF, 0), kc, &ko, &k1) ||
        sch_split(s, CF, k1, kk, &kf, &kii) ||
        sch_reorder(s, CF, 7, (te_expr *[]){ko, kf, cti, ctj, cii, cji, kii}) ||
        sch_unroll(s, CF, cti) || sch_unroll(s, CF, ctj) || sch_tensorize(s, CF, cii, "wmma.mma") ||
        (c.unroll_k && sch_unroll(s, CF, kf)))
        return -1;

    /* fragments of this k step */
    te_expr *ao, *ai, *bo, *bi2;
    if (sch_compute_at(s, AF, CF, kf) || sch_split(s, AF, sch_axis(AF, 0), 16, &ao, &ai) ||
        sch_unroll(s, AF, ao) || sch_tensorize(s, AF, ai, "wmma.load_a") ||
        sch_compute_at(s, BF, CF, kf) || sch_split(s, BF, sch_axis(BF, 1), 16, &bo, &bi2) ||
        sch_reorder(s, BF, 3, (te_expr *[]){bo, sch_axis(BF, 0), bi2}) || sch_unroll(s, BF, bo) ||
        sch_tensorize(s, BF, sch_axis(BF, 0), "wmma.load_b"))
        return -1;

    /* the block's operand tiles of this chunk, rows padded by 16 bytes */
    int64_t pad = 16 / bytes;
    if (sch_compute_at(s, AS, CF, ko) || sch_storage_align(s, AS, sch_axis(AS, 0), kc, pad) ||
        ops__tile_fetch(s, AS, tz, ty, 32, vec) || sch_compute_at(s, BS, CF, ko) ||
        sch_storage_align(s, BS, sch_axis(BS, 0), bn, pad) || ops__tile_fetch(s, BS, tz, ty, 32, vec) ||
        (stages >= 2 && K > kc &&
         (sch_multi_buffer(s, AS, stages) || sch_multi_buffer(s, BS, stages))))
        return -1;
    return 0;
}
