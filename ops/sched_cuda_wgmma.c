/*
 * ops/sched_cuda_wgmma.c — a matmul on Hopper's warpgroup MMA (wgmma,
 * sm_90a) through tensorize (the structure of CUTLASS's sm90 GEMMs and
 * Triton's Hopper matmul, without their TMA): a block computes a bm x bn
 * tile of C with (bm/wm) x (bn/wn) warpgroups (threadIdx.z, threadIdx.y;
 * 128 threads each on threadIdx.x); per chunk of kc along k the block
 * copies its A and B tiles (cp.async, 16 bytes a thread) to shared memory
 * in the 128-byte swizzled layout the tensor cores read (sch_swizzle), in
 * a pipeline of `stages` buffers; each warpgroup multiplies its wm x wn
 * tile as wm/64 calls of m64 x wn x 16 a k step, the operands read by the
 * tensor cores straight from shared memory (no fragment loads: the
 * difference from WMMA, whose mma.sync needs every operand in registers
 * first), the sums in registers until the store.
 *
 * Layouts: A [M, K] or [K, M], B [K, N] or [N, K], as the computation
 * reads them. 16-bit operands are copied as they are stored and the
 * instruction's transpose bits say which are mn-major. tf32's wgmma has
 * no transpose bits and reads both operands k-major (k8 steps), so an
 * mn-major tf32 operand is copied transposed (sch_swizzle_transposed; 4
 * bytes a copy, a warp's lanes on 8 rows x one 16-byte chunk so that its
 * writes hit 32 different banks of the swizzled tile and its reads four
 * whole 32-byte sectors) — what CUTLASS does for tf32 with MN-major
 * global tensors.
 */
#include "ops/ops_internal.h"

/* Whether an operand's shared copy is mn-major: a 16-bit one stored so
 * (A [K, M], B [K, N]); a tf32 one never (copied transposed). */
static bool mn_major(int bytes, bool stored_mn) { return stored_mn && bytes == 2; }

/* Whether an operand's shared copy is stored transposed (tf32, mn-major
 * in global memory). */
static bool copied_transposed(int bytes, bool stored_mn) { return stored_mn && bytes == 4; }

int ops__wgmma_check(te_ctx *ctx, int64_t M, int64_t N, int64_t K, int bytes, bool ta, bool tb,
                     const ops_tc_config *c, int stages, int64_t budget, int64_t *shared) {
    int64_t bm = c->bm, bn = c->bn, wm = c->wm, wn = c->wn, kc = c->kc;
    if (bytes != 2 && bytes != 4)
        return te_error(ctx, "tc_gemm: wgmma takes float16, bfloat16 and float32 (as tf32) "
                             "inputs (%d-byte elements given)",
                        bytes);
    /* the shared tiles' 128-byte rows: along k for a k-major copy, along
     * m (n) for an mn-major one */
    bool a_mn = mn_major(bytes, ta), b_mn = mn_major(bytes, !tb);
    bool rows_ok = ((a_mn && b_mn) || (kc * bytes) % 128 == 0) &&
                   (!a_mn || (bm * bytes) % 128 == 0) && (!b_mn || (bn * bytes) % 128 == 0);
    if (kc <= 0 || bm <= 0 || bn <= 0 || wm <= 0 || wn <= 0 || M % bm || N % bn || bm % wm ||
        bn % wn || wm % 64 || wn % 8 || wn > 256 || K % kc || kc % (32 / bytes) || !rows_ok)
        return te_error(ctx,
                        "tc_gemm: wgmma block %lldx%lld, warpgroup %lldx%lld, chunk %lld do not "
                        "tile %lldx%lldx%lld (blocks must divide M and N, warpgroups the blocks; "
                        "a warpgroup's rows a multiple of 64 and columns of 8 up to 256; the "
                        "chunk and the block's columns whole 128-byte rows; the chunk K)",
                        (long long)bm, (long long)bn, (long long)wm, (long long)wn, (long long)kc,
                        (long long)M, (long long)N, (long long)K);
    int64_t tz = bm / wm, ty = bn / wn, threads = tz * ty * 128, vec = 16 / bytes;
    /* a wgmma descriptor addresses an mn-major B tile from the start of a
     * 128-byte panel of the swizzled layout (tensorize refuses any other
     * start) */
    if (b_mn && ty > 1 && (wn * bytes) % 128)
        return te_error(ctx,
                        "tc_gemm: wgmma warpgroups %lld columns wide side by side in a %lld-wide "
                        "block start inside a 128-byte panel of B's tile; make them whole "
                        "128-byte rows (multiples of %lld) or as wide as the block",
                        (long long)wn, (long long)bn, (long long)(128 / bytes));
    if (c->group_m < 0 || (c->group_m > 1 && (M / bm) % c->group_m))
        return te_error(ctx, "tc_gemm: a group of %lld block rows does not divide the %lld block "
                             "rows",
                        (long long)c->group_m, (long long)(M / bm));
    if (tz * ty > 8)
        return te_error(ctx, "tc_gemm: %lld warpgroups a block; at most 8", (long long)(tz * ty));
    if (wm * wn / 128 > 128)
        return te_error(ctx,
                        "tc_gemm: a %lldx%lld warpgroup tile holds %lld sums a thread; at most "
                        "128 fit the registers",
                        (long long)wm, (long long)wn, (long long)(wm * wn / 128));
    int64_t bytes_tiles = (bm * kc + kc * bn) * bytes * stages;
    if (shared) *shared = bytes_tiles;
    if (bytes_tiles > budget)
        return te_error(ctx, "tc_gemm: the shared tiles take %lld bytes; a block has %lld",
                        (long long)bytes_tiles, (long long)budget);
    /* a straight copy moves 16-byte vectors a thread; a transposed one
     * single elements (a warp's lanes on 8 rows x one 16-byte chunk of k,
     * which a chunk of whole 32-byte k steps covers) */
    int64_t per_a = copied_transposed(bytes, ta) ? 1 : vec;
    int64_t per_b = copied_transposed(bytes, !tb) ? 1 : vec;
    if ((bm * kc / per_a) % threads || (kc * bn / per_b) % threads)
        return te_error(ctx,
                        "tc_gemm: the %lldx%lld and %lldx%lld tiles of a chunk are not a "
                        "multiple of %lld threads x %lld elements; use a longer chunk or fewer "
                        "warpgroups",
                        (long long)bm, (long long)kc, (long long)kc, (long long)bn,
                        (long long)threads, (long long)vec);
    return 0;
}

int ops__wgmma_complete(te_ctx *ctx, int64_t M, int64_t N, int64_t K, int bytes, bool ta,
                        bool tb, const ops_tc_config *cfg, ops_tc_config *out) {
    ops_tc_config c = *cfg;
    bool dflt = !c.bm && !c.bn && !c.wm && !c.wn && !c.kc && !c.stages;
    /* From the H200 sweeps (bench/RESULTS.md, sessions 36 and 42): 128 x
     * 256 blocks of two 64 x 256 warpgroups, chunks of 64 in three stages
     * (144 KiB; on random inputs 3 % ahead of four in two sessions) on
     * grids of 100 blocks or more; else 128 x 128 in three stages (96 KiB:
     * two blocks an SM, which beat four stages by 11 %) */
    if (!c.bm) c.bm = M % 128 == 0 ? 128 : 64;
    bool wide = N % 256 == 0 && (M / c.bm) * (N / 256) >= 100;
    if (!c.bn) c.bn = wide ? 256 : N % 128 == 0 ? 128 : 64;
    if (!c.wm) c.wm = 64;
    if (!c.wn) c.wn = c.bn;
    if (!c.kc) c.kc = 128 / bytes; /* one 128-byte row of k */
    if (!c.group_m) c.group_m = (M / c.bm) % 8 == 0 ? 8 : 1;
    int stages = c.stages ? c.stages : dflt ? 3 : 2;
    if (stages < 1 || stages > 4)
        return te_error(ctx, "tc_gemm: %d pipeline stages; a pipeline has 1 to 4", stages);
    /* any depth may take dynamic shared memory; without the target's
     * limit, the largest any GPU with wgmma has (sm_90's 227 KiB) */
    int64_t budget = c.max_shared > 0 ? c.max_shared : 232448;
    while (dflt && stages > 2 && (c.bm * c.kc + c.kc * c.bn) * bytes * stages > budget) stages--;
    if (ops__wgmma_check(ctx, M, N, K, bytes, ta, tb, &c, stages, budget, NULL)) return -1;
    c.stages = stages;
    c.single_buffer = false;
    *out = c;
    return 0;
}

typedef struct {
    const te_tensor *t;
    const te_expr *k;
    int kdim; /* the index of t's read that k steps, -1 not found */
} kdim_walk;

static void kdim_visit(const te_expr *e, void *user) {
    kdim_walk *w = user;
    if (e->kind == TE_READ && e->u.read.tensor == w->t && e->u.read.ndim == 2 && w->kdim < 0)
        for (int d = 0; d < 2; d++)
            if (te_expr_uses_var(e->u.read.indices[d], w->k)) w->kdim = d;
    te_expr_visit_children(e, kdim_visit, user);
}

int ops__read_k_dim(const te_tensor *R, const te_tensor *T) {
    kdim_walk w = {T, R->body->u.reduce.axes[0], -1};
    kdim_visit(R->body, &w);
    return w.kdim;
}

/* T's copy on the block's threads: as ops__tile_fetch, or transposed
 * (T [R, C] stored as [C, R]: scalar copies, a warp's 32 lanes on the
 * `vec` rows of one 16-byte chunk of the stored rows x 32 / vec columns;
 * R a multiple of vec and C of 32 / vec). */
static int fetch(sch_schedule *s, te_tensor *T, bool transposed, int64_t tz, int64_t ty,
                 int64_t vec) {
    if (!transposed)
        return sch_swizzle(s, T) || ops__tile_fetch(s, T, tz, ty, 128, vec) ? -1 : 0;
    te_expr *ro, *ri, *co, *ci, *lane, *f, *o, *t, *zy, *w, *z, *y, *x;
    if (sch_swizzle_transposed(s, T) || sch_split(s, T, sch_axis(T, 0), vec, &ro, &ri) ||
        sch_split(s, T, sch_axis(T, 1), 32 / vec, &co, &ci) ||
        sch_reorder(s, T, 4, (te_expr *[]){ro, co, ri, ci}) ||
        sch_fuse(s, T, 2, (te_expr *[]){ri, ci}, &lane) ||
        sch_fuse(s, T, 2, (te_expr *[]){ro, co}, &f) || sch_split(s, T, f, tz * ty * 4, &o, &t) ||
        sch_split(s, T, t, 4, &zy, &w) || sch_split(s, T, zy, ty, &z, &y) ||
        sch_fuse(s, T, 2, (te_expr *[]){w, lane}, &x))
        return -1;
    return sch_bind(s, T, z, "threadIdx.z") || sch_bind(s, T, y, "threadIdx.y") ||
                   sch_bind(s, T, x, "threadIdx.x")
               ? -1
               : 0;
}

int ops__schedule_wgmma_gemm(sch_schedule *s, te_tensor *F, te_tensor *R, te_tensor *A,
                             te_tensor *B, const ops_tc_config *cfg) {
    te_ctx *ctx = sch_ctx(s);
    int64_t M = F->shape[0], N = F->shape[1];
    int64_t K = R->body->u.reduce.axes[0]->u.var.extent;
    int bytes = te_dtype_bytes(A->dtype);
    bool ta = ops__read_k_dim(R, A) == 0, tb = ops__read_k_dim(R, B) == 1;
    ops_tc_config c;
    if (ops__wgmma_complete(ctx, M, N, K, bytes, ta, tb, cfg, &c)) return -1;
    int64_t bm = c.bm, bn = c.bn, wm = c.wm, wn = c.wn, kc = c.kc;
    int64_t tz = bm / wm, ty = bn / wn, vec = 16 / bytes;
    /* a 16-bit output: the sums rounded as they are stored */
    te_tensor *CF = sch_cache_write(s, R, "wgmma.accumulator");
    if (CF && R != F && sch_compute_inline(s, R)) return -1;
    te_tensor *AS = CF ? sch_cache_read(s, A, "shared", 1, &CF) : NULL;
    te_tensor *BS = CF ? sch_cache_read(s, B, "shared", 1, &CF) : NULL;
    if (!AS || !BS) return -1;
    if ((A->body && sch_compute_inline(s, A)) || (B->body && sch_compute_inline(s, B))) return -1;

    /* C: blocks, warpgroups, 64-row tiles stored from the registers */
    te_expr *bi, *i1, *wi, *i2, *ti, *ii, *bj, *j1, *wj, *jj;
    if (sch_split(s, F, sch_axis(F, 0), bm, &bi, &i1) || sch_split(s, F, i1, wm, &wi, &i2) ||
        sch_split(s, F, i2, 64, &ti, &ii) || sch_split(s, F, sch_axis(F, 1), bn, &bj, &j1) ||
        sch_split(s, F, j1, wn, &wj, &jj) ||
        sch_reorder(s, F, 7, (te_expr *[]){bi, bj, wi, wj, ti, ii, jj}))
        return -1;
    if (c.group_m > 1) {
        /* the blocks in launch order: group_m block rows, one column after
         * another, then the next group of rows (one grid axis) */
        te_expr *go, *gi, *blk;
        if (sch_split(s, F, bi, c.group_m, &go, &gi) ||
            sch_reorder(s, F, 3, (te_expr *[]){go, bj, gi}) ||
            sch_fuse(s, F, 3, (te_expr *[]){go, bj, gi}, &blk) ||
            sch_bind(s, F, blk, "blockIdx.x"))
            return -1;
    } else if (sch_bind(s, F, bi, "blockIdx.y") || sch_bind(s, F, bj, "blockIdx.x")) {
        return -1;
    }
    if (sch_bind(s, F, wi, "threadIdx.z") || sch_bind(s, F, wj, "threadIdx.y") ||
        sch_unroll(s, F, ti) || sch_tensorize(s, F, ii, "wgmma.store"))
        return -1;

    /* the warpgroup's accumulation: chunks of kc, k steps of 32 bytes */
    te_expr *cti, *cii, *ko, *k1, *kf, *kii;
    if (sch_compute_at(s, CF, F, wj) || sch_split(s, CF, sch_axis(CF, 0), 64, &cti, &cii) ||
        sch_split(s, CF, sch_reduce_axis(CF, 0), kc, &ko, &k1) ||
        sch_split(s, CF, k1, 32 / bytes, &kf, &kii) ||
        sch_reorder(s, CF, 6, (te_expr *[]){ko, kf, cti, cii, sch_axis(CF, 1), kii}) ||
        sch_unroll(s, CF, cti) || sch_tensorize(s, CF, cii, "wgmma.mma") ||
        sch_unroll(s, CF, kf))
        return -1;

    /* the block's operand tiles of this chunk, swizzled */
    if (sch_compute_at(s, AS, CF, ko) || fetch(s, AS, copied_transposed(bytes, ta), tz, ty, vec) ||
        sch_compute_at(s, BS, CF, ko) || fetch(s, BS, copied_transposed(bytes, !tb), tz, ty, vec) ||
        (c.stages >= 2 && K > kc &&
         (sch_multi_buffer(s, AS, c.stages) || sch_multi_buffer(s, BS, c.stages))))
        return -1;
    return 0;
}

int ops_tc_wgmma_default_config(te_ctx *ctx, int64_t M, int64_t N, int64_t K, te_dtype in,
                                int64_t max_shared, ops_tc_config *cfg) {
    if (!cfg) return te_error(ctx, "tc_gemm: no config to fill");
    if (M <= 0 || N <= 0 || K <= 0 || M % 16 || N % 16 || K % 16)
        return te_error(ctx, "tc_gemm: %lldx%lldx%lld is not a GEMM with M, N and K multiples of 16",
                        (long long)M, (long long)N, (long long)K);
    if (!te_dtype_is_half(in) && !(in.code == TE_FLOAT && in.bits == 32 && in.lanes == 1))
        return te_error(ctx,
                        "tc_gemm: wgmma takes float16, bfloat16 and float32 (as tf32) inputs (%s "
                        "given)",
                        te_dtype_str(in));
    return ops__wgmma_complete(ctx, M, N, K, te_dtype_bytes(in), false, false,
                               &(ops_tc_config){.max_shared = max_shared, .wgmma = true}, cfg);
}
