/*
 * ops/matmul.c — matmul (either operand transposed), batch_matmul, dense
 * (+bias) and the fused dense+bias+gelu workload.
 *
 * Default CPU schedule: the register tile of BLIS / TVM's "How to optimize
 * GEMM on CPU" without packing (packing would make the computation depend
 * on the host's vector width, and a workload key must build the same
 * computation everywhere): MR rows x NB columns of the output accumulate
 * in vector registers while k runs outside them; column panels outermost
 * and parallel, row tiles inside them (the B panel stays in cache while
 * the rows sweep); bias and gelu tails computed on the finished tile.
 *
 * float16/bfloat16 (matmul, batch_matmul): the products and their sum are
 * float32 (C_acc, sum of float32(a) * float32(b)); the output C is C_acc
 * cast to the 16-bit type, a stage of its own that the register tile
 * treats like dense's bias tail. C_acc is the stage a tensor-core
 * schedule caches and tensorizes.
 */
#include "ops_internal.h"

#define EXT(n, d) {n, true, 0, 1, OPS__BIG, d}
#define FLAG(n, d) {n, false, 0, 0, 1, d}

enum { MM_M, MM_N, MM_K, MM_TA, MM_TB, MM_TF32 };
enum { BMM_B, BMM_M, BMM_N, BMM_K, BMM_TA, BMM_TB };
enum { DN_M, DN_N, DN_K, DN_BIAS };

/* C[b.., i, j] = sum_k A[b.., i|k, k|i] * B[b.., k|j, j|k]; batch 0: none.
 * For a 16-bit w->dtype: the float32 sum of float32 products, named
 * C_acc (the caller casts it to the output). */
static te_tensor *mm_declare(te_ctx *ctx, ops_workload *w, int64_t batch, int64_t M, int64_t N,
                             int64_t K, bool ta, bool tb, const char *an, const char *bn,
                             te_tensor **A, te_tensor **B) {
    int nb = batch ? 1 : 0;
    int64_t sa[3], sb[3];
    sa[0] = sb[0] = batch;
    sa[nb] = ta ? K : M, sa[nb + 1] = ta ? M : K;
    sb[nb] = tb ? N : K, sb[nb + 1] = tb ? K : N;
    *A = ops__input(ctx, w, an, 2 + nb, sa);
    *B = ops__input(ctx, w, bn, 2 + nb, sb);
    te_expr *b = batch ? te_axis(ctx, "b", batch) : NULL;
    te_expr *i = te_axis(ctx, "i", M), *j = te_axis(ctx, "j", N), *k = te_reduce_axis(ctx, "k", K);
    te_expr *ia[3] = {b, ta ? k : i, ta ? i : k}, *ib[3] = {b, tb ? j : k, tb ? k : j};
    te_expr *ra = te_read_n(*A, 2 + nb, ia + 1 - nb), *rb = te_read_n(*B, 2 + nb, ib + 1 - nb);
    bool half = te_dtype_is_half(w->dtype);
    if (half) ra = te_cast(TE_FLOAT32, ra), rb = te_cast(TE_FLOAT32, rb);
    te_expr *axes[3] = {b, i, j};
    return te_compute(ctx, half ? "C_acc" : "C", 2 + nb, axes + 1 - nb, te_sum(te_mul(ra, rb), k));
}

/* The output of a matmul-like reduce stage R: R itself, or for a 16-bit
 * w->dtype R cast to it (pv->t[0] = R, pv->t[1] = the cast stage). */
static te_tensor *mm_output(te_ctx *ctx, ops_workload *w, ops__priv *pv, te_tensor *R) {
    pv->t[0] = R;
    pv->t[1] = NULL;
    if (!R || !te_dtype_is_half(w->dtype)) return R;
    return pv->t[1] = ops__cast_output(ctx, w->dtype, R, "C");
}

static int mm_tile(sch_schedule *s, te_tensor *F, te_tensor *R, int vlen) {
    int64_t nb = vlen >= 16 ? 4 * vlen : 2 * vlen;
    return ops__sched_register_tile(s, F, R, F->ndim - 2, 6, nb, vlen, true);
}

/* ---- matmul ---- */

static int matmul_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    te_tensor *A, *B;
    te_tensor *C = mm_declare(ctx, w, 0, p[MM_M], p[MM_N], p[MM_K], p[MM_TA], p[MM_TB], "A", "B",
                              &A, &B);
    w->flops = 2.0 * (double)p[MM_M] * (double)p[MM_N] * (double)p[MM_K];
    pv->reduce_len = p[MM_K];
    pv->tf32 = p[MM_TF32] != 0;
    return ops__set_io(ctx, w, 2, (te_tensor *[]){A, B}, mm_output(ctx, w, pv, C));
}

/* Naive double-precision product, each element summed over k in order.
 * Without tb the loops run i, k, j (B's rows read contiguously; the same
 * sums as i, j, k): a strided walk down B's columns costs seconds at
 * 1024^3, and the tuner's runners check every new best against this.
 * Rows run in parallel on the thread pool (each row's sums are the same in
 * any thread): mm4096 is 6.9e10 multiply-adds, over a minute on one core,
 * past the tuner's check timeout. */
typedef struct {
    int64_t M, N, K;
    bool ta, tb;
    const double *A, *B;
    double *C;
} mm_ref_job;

static int mm_ref_rows(int64_t begin, int64_t end, void *env) {
    const mm_ref_job *j = env;
    int64_t M = j->M, N = j->N, K = j->K;
    for (int64_t row = begin; row < end; row++) {
        int64_t b = row / M, i = row % M;
        const double *Ab = j->A + b * M * K, *Bb = j->B + b * K * N;
        double *c = j->C + b * M * N + i * N;
        if (j->tb) {
            for (int64_t n = 0; n < N; n++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += Ab[j->ta ? k * M + i : i * K + k] * Bb[n * K + k];
                c[n] = acc;
            }
            continue;
        }
        for (int64_t n = 0; n < N; n++) c[n] = 0;
        for (int64_t k = 0; k < K; k++) {
            double a = Ab[j->ta ? k * M + i : i * K + k];
            const double *brow = Bb + k * N;
            for (int64_t n = 0; n < N; n++) c[n] += a * brow[n];
        }
    }
    return 0;
}

static void mm_ref(int64_t batch, int64_t M, int64_t N, int64_t K, bool ta, bool tb,
                   const double *A, const double *B, double *C) {
    mm_ref_job j = {M, N, K, ta, tb, A, B, C};
    /* Small products stay on the calling thread: waking the pool costs
     * more than they do. */
    if ((double)batch * M * N * K < 1e7 || rt_parallel_for(batch * M, mm_ref_rows, &j))
        mm_ref_rows(0, batch * M, &j);
}

static void matmul_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                       double *const *out) {
    (void)w;
    mm_ref(1, p[MM_M], p[MM_N], p[MM_K], p[MM_TA], p[MM_TB], in[0], in[1], out[0]);
}

/* With a 16-bit output, the cast stage is the tile (F) and the float32
 * sum its reduction (R), as dense's bias tail and product. */
static int matmul_sched(const ops_workload *w, sch_schedule *s, const int64_t *p, int vlen) {
    (void)p;
    const ops__priv *pv = w->priv;
    if (!pv->t[1]) return mm_tile(s, pv->t[0], NULL, vlen);
    return mm_tile(s, pv->t[1], pv->t[0], vlen);
}

/* bfloat16 on a CPU with AVX512-BF16: the register tile with its
 * reduction's pairs on VDPBF16PS (1 where the shape does not allow it). */
static int matmul_sched_bf16_dot(const ops_workload *w, sch_schedule *s, const int64_t *p) {
    (void)p;
    const ops__priv *pv = w->priv;
    if (!pv->t[1]) return 1;
    return ops__sched_register_tile_bf16_dot(s, pv->t[1], pv->t[0], pv->t[1]->ndim - 2, 6, 64);
}

/* CUDA: the GEMM tile; R is C's local cache (matmul) or the product D
 * that the bias/gelu tail Y reads. */
static int mm_cuda(const ops_workload *w, sch_schedule *s, const int64_t *p,
                   const ops__gpu *gpu) {
    const ops__priv *pv = w->priv;
    te_tensor *A = w->inputs[0], *B = w->inputs[1];
    bool half = te_dtype_is_half(w->dtype);
    if (pv->impl == &ops__matmul && p[MM_TF32] && half)
        return te_error(sch_ctx(s), "matmul tf32=1 applies to float32 matmuls, not %s (whose "
                                    "products run on tensor cores already)",
                        te_dtype_str(w->dtype));
    /* 16-bit, or float32 with tf32: tensor cores when the shape allows
     * (a 16-bit output: the sums rounded as they are stored) */
    bool tc = half || p[MM_TF32];
    te_tensor *F = half ? pv->t[1] : pv->t[0];
    if (pv->impl == &ops__matmul && tc && ops__cuda_wmma_fits(pv->t[0])) {
        /* sm_90: the warpgroup MMA where its tiles divide the shape, A
         * and B in either layout */
        ops_tc_config wg;
        if (gpu->cc == 90 && !ops_tc_wgmma_default_config(NULL, p[MM_M], p[MM_N], p[MM_K],
                                                          w->dtype, gpu->smem, &wg))
            return ops_schedule_tc_gemm(s, F, A, B, &wg);
        /* WMMA: A [M, K] and B [K, N] */
        if (!p[MM_TA] && !p[MM_TB])
            return ops_schedule_tc_gemm(s, F, A, B, &(ops_tc_config){.max_shared = gpu->smem});
    }
    if (pv->impl == &ops__matmul && p[MM_TF32])
        return te_error(sch_ctx(s),
                        "matmul tf32=1: no tensor-core schedule takes M=%lld N=%lld K=%lld%s on "
                        "sm_%d (WMMA: M, N and K multiples of 16, no transposes; wgmma, sm_90 "
                        "only: M and N multiples of 64, K of 32)",
                        (long long)p[MM_M], (long long)p[MM_N], (long long)p[MM_K],
                        p[MM_TA] || p[MM_TB] ? ", transposed," : "", gpu->cc);
    if (!pv->t[1]) return ops__cuda_gemm(s, pv->t[0], NULL, A, B);
    return ops__cuda_gemm(s, pv->t[1], pv->t[0], A, B);
}

const ops__impl ops__matmul = {
    .info = {"matmul", NULL,
             "C[M,N] = A[M,K] x B[K,N]; A stored [K,M] when transpose_a, B stored [N,K] when "
             "transpose_b",
             6,
             {EXT("M", "rows of the output"), EXT("N", "columns of the output"),
              EXT("K", "reduction length"), FLAG("transpose_a", "A is stored as [K,M]"),
              FLAG("transpose_b", "B is stored as [N,K]"),
              {"tf32", false, 0, 0, 1,
               "cuda: products on tensor cores with A and B cut to tf32 (10-bit mantissa; "
               "PyTorch's allow_tf32); the CPU computes in float32",
               true}}},
    .build = matmul_build,
    .reference = matmul_ref,
    .schedule = matmul_sched,
    .schedule_bf16_dot = matmul_sched_bf16_dot,
    .cuda_schedule = mm_cuda,
    .half = true,
};

/* ---- batch_matmul ---- */

static int bmm_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    te_tensor *A, *B;
    te_tensor *C = mm_declare(ctx, w, p[BMM_B], p[BMM_M], p[BMM_N], p[BMM_K], p[BMM_TA],
                              p[BMM_TB], "A", "B", &A, &B);
    w->flops = 2.0 * (double)p[BMM_B] * (double)p[BMM_M] * (double)p[BMM_N] * (double)p[BMM_K];
    pv->reduce_len = p[BMM_K];
    return ops__set_io(ctx, w, 2, (te_tensor *[]){A, B}, mm_output(ctx, w, pv, C));
}

static void bmm_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                    double *const *out) {
    (void)w;
    mm_ref(p[BMM_B], p[BMM_M], p[BMM_N], p[BMM_K], p[BMM_TA], p[BMM_TB], in[0], in[1], out[0]);
}

const ops__impl ops__batch_matmul = {
    .info = {"batch_matmul", NULL,
             "C[B,M,N] = A[B,M,K] x B[B,K,N] per batch; transposes as matmul (A[B,K,M], B[B,N,K])",
             6,
             {EXT("B", "batch count"), EXT("M", "rows of each output"),
              EXT("N", "columns of each output"), EXT("K", "reduction length"),
              FLAG("transpose_a", "A is stored as [B,K,M]"),
              FLAG("transpose_b", "B is stored as [B,N,K]")}},
    .build = bmm_build,
    .reference = bmm_ref,
    .schedule = matmul_sched,
    .schedule_bf16_dot = matmul_sched_bf16_dot,
    .cuda_schedule = mm_cuda,
    .half = true,
};

/* ---- dense, dense_bias_gelu ---- */

static int dense_common(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p,
                        bool bias, bool gelu) {
    int64_t M = p[DN_M], N = p[DN_N], K = p[DN_K];
    te_tensor *X, *Wt;
    te_tensor *D = mm_declare(ctx, w, 0, M, N, K, false, true, "X", "W", &X, &Wt);
    if (!D) return -1;
    w->flops = 2.0 * (double)M * (double)N * (double)K;
    pv->reduce_len = K;
    pv->t[0] = D;
    pv->t[1] = NULL;
    if (!bias) return ops__set_io(ctx, w, 2, (te_tensor *[]){X, Wt}, D);
    te_tensor *b = ops__input(ctx, w, "bias", 1, (int64_t[]){N});
    te_expr *i = te_axis(ctx, "yi", M), *j = te_axis(ctx, "yj", N);
    te_expr *v = te_add(te_read(D, i, j), te_read(b, j));
    w->flops += (double)M * (double)N;
    if (gelu) {
        v = ops__gelu_expr(ctx, w, v);
        w->flops += 5.0 * (double)M * (double)N;
    }
    te_tensor *Y = te_compute(ctx, "Y", TE_AXES(i, j), v);
    pv->t[1] = Y;
    return ops__set_io(ctx, w, 3, (te_tensor *[]){X, Wt, b}, Y);
}

static int dense_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    return dense_common(ctx, w, pv, p, p[DN_BIAS] != 0, false);
}

static int dbg_build(te_ctx *ctx, ops_workload *w, ops__priv *pv, const int64_t *p) {
    return dense_common(ctx, w, pv, p, true, true);
}

static void dense_ref_common(const int64_t *p, const double *const *in, double *out, bool bias,
                             bool gelu) {
    int64_t M = p[DN_M], N = p[DN_N], K = p[DN_K];
    mm_ref(1, M, N, K, false, true, in[0], in[1], out);
    if (!bias) return;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double v = out[i * N + j] + in[2][j];
            out[i * N + j] = gelu ? ops__gelu_ref(v) : v;
        }
}

static void dense_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                      double *const *out) {
    (void)w;
    dense_ref_common(p, in, out[0], p[DN_BIAS] != 0, false);
}

static void dbg_ref(const ops_workload *w, const int64_t *p, const double *const *in,
                    double *const *out) {
    (void)w;
    dense_ref_common(p, in, out[0], true, true);
}

static int dense_sched(const ops_workload *w, sch_schedule *s, const int64_t *p, int vlen) {
    (void)p;
    const ops__priv *pv = w->priv;
    if (!pv->t[1]) return mm_tile(s, pv->t[0], NULL, vlen);
    return mm_tile(s, pv->t[1], pv->t[0], vlen);
}

const ops__impl ops__dense = {
    .info = {"dense", NULL, "Y[M,N] = X[M,K] x W[N,K]^T (+ bias[N])", 4,
             {EXT("M", "rows (batch) of X and Y"), EXT("N", "output features"),
              EXT("K", "input features"), {"bias", false, 1, 0, 1, "add a bias[N] input"}}},
    .build = dense_build,
    .reference = dense_ref,
    .schedule = dense_sched,
    .cuda_schedule = mm_cuda,
};

const ops__impl ops__dense_bias_gelu = {
    .info = {"dense_bias_gelu", NULL,
             "Y[M,N] = gelu(X[M,K] x W[N,K]^T + bias[N]), one fused workload", 3,
             {EXT("M", "rows (batch) of X and Y"), EXT("N", "output features"),
              EXT("K", "input features")}},
    .build = dbg_build,
    .reference = dbg_ref,
    .schedule = dense_sched,
    .cuda_schedule = mm_cuda,
};
