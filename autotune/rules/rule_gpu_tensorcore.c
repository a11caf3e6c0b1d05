/*
 * autotune/rules/rule_gpu_tensorcore.c — tensor-core GEMMs
 * (TUNE_UNIT_GPU_TENSORCORE; MetaSchedule's cuda-tensorcore rules): a
 * 2-D matmul-shaped reduction whose products the tensor cores can run
 * (float16 or bfloat16 inputs cast to float32; float32 inputs where the
 * workload allows tf32) with M, N and K multiples of 16 is scheduled by
 * the library's template (ops_schedule_tc_gemm: tensorize with WMMA,
 * shared and fragment caches, a cp.async pipeline), its knobs the unit's
 * holes. A sketch rule placed first in the CUDA list: its variant of the
 * sketch (the tile unit become a tensor-core unit) goes before the
 * CUDA-core sketch, since the tensor cores run 8-15x the CUDA cores'
 * FLOPs; the later sketch rules only touch tile units, so they pass over
 * it.
 *
 * On an sm_90 target (tune_gen.cc; tune_generate_sketches_gpu_for) a
 * GEMM of float16 or bfloat16 inputs, or float32 ones as tf32, whose shape
 * Hopper's warpgroup MMA template takes (ops_tc_wgmma_default_config) may
 * run on either engine:
 * its unit (vec_dim bit 16) has two more holes, the engine (0 WMMA, 1
 * wgmma) and group_m, and its first program is the wgmma default (what
 * matmul's default schedule runs there: the search starts from the
 * library's best).
 *
 * Programs: the holes hold the knobs' values themselves (bm, bn, wm, wn,
 * kc, unroll_k, stages[, engine, group_m]); a config is valid when the
 * template's own checks (ops_tc_check) take it and its shared memory is
 * within the GPU's limit. Knobs an engine does not read keep one value
 * (wgmma: unroll_k 1, WMMA: group_m 0), so that no two programs of the
 * space schedule the same kernel. The template decides nothing a program
 * does not say, so the steps it records are the program's whole log
 * (replayed from the database like any other).
 */
#include <string.h>

#include "autotune/rules/rule.h"
#include "loom/ops.h"
#include "loom/runtime.h"

enum { K_BM, K_BN, K_WM, K_WN, K_KC, K_UNROLL, K_STAGES, K_ENGINE, K_GROUP, NKNOBS };
enum { NKNOBS_WMMA = K_ENGINE };

/* vec_dim's bit of a unit that may run on wgmma too */
#define WGMMA_BIT 16

static int nknobs(const tune_sketch *sk, int u) {
    return sk->units[u].vec_dim & WGMMA_BIT ? NKNOBS : NKNOBS_WMMA;
}

/* What fits(): the stage's GEMM and the cast that reads it. */
typedef struct {
    int64_t M, N, K;
    te_dtype in;
    int cast; /* the float16/bfloat16 cast stage of the sum, -1 when none */
} tc_gemm;

typedef struct {
    const te_tensor *R;
    const te_tensor *A, *B; /* the two tensors read, A[i, k] and B[k, j] */
    bool ok;
} read_walk;

static void reads_visit(const te_expr *e, void *user) {
    read_walk *w = user;
    if (e->kind == TE_READ) {
        const te_tensor *t = e->u.read.tensor;
        const te_expr *const *ix = (const te_expr *const *)e->u.read.indices;
        const te_expr *i = w->R->axes[0], *j = w->R->axes[1];
        const te_expr *k = w->R->body->u.reduce.axes[0];
        if (e->u.read.ndim == 2 && ix[0] == i && ix[1] == k && (!w->A || w->A == t)) w->A = t;
        else if (e->u.read.ndim == 2 && ix[0] == k && ix[1] == j && (!w->B || w->B == t))
            w->B = t;
        else w->ok = false;
    }
    te_expr_visit_children(e, reads_visit, user);
}

/* Whether `stage` is a GEMM the template takes (as the library's
 * default schedule decides for a matmul: 16-bit inputs, or float32 ones
 * with tf32). */
static bool fits(const tune_dag *dag, const tune_workload *w, int stage, tc_gemm *out) {
    const te_tensor *R = dag->stages[stage].tensor;
    if (!R->body || R->body->kind != TE_REDUCE || R->ndim != 2 || nreduce_of(R) != 1 ||
        R->body->u.reduce.op != TE_REDUCE_SUM || R->dtype.code != TE_FLOAT || R->dtype.bits != 32 ||
        R->dtype.lanes != 1)
        return false;
    read_walk rw = {R, NULL, NULL, true};
    reads_visit(R->body->u.reduce.source, &rw);
    if (!rw.ok || !rw.A || !rw.B || rw.A == rw.B || rw.A->dtype.bits != rw.B->dtype.bits ||
        rw.A->dtype.code != rw.B->dtype.code)
        return false;
    te_dtype in = rw.A->dtype;
    bool f32 = in.code == TE_FLOAT && in.bits == 32 && in.lanes == 1;
    if (!te_dtype_is_half(in) && !(f32 && w && w->tf32)) return false;
    int64_t M = R->shape[0], N = R->shape[1], K = R->body->u.reduce.axes[0]->u.var.extent;
    if (M % 16 || N % 16 || K % 16) return false;
    /* the output: the sum itself, or its one reader casting it to 16 bits */
    const tune_stage_info *si = &dag->stages[stage];
    int cast = -1;
    if (si->nconsumers == 1) {
        const te_tensor *F = dag->stages[si->consumers[0]].tensor;
        const te_expr *b = F->body;
        if (!b || b->kind != TE_CAST || !te_dtype_is_half(F->dtype) || F->ndim != 2 ||
            b->u.un.a->kind != TE_READ || b->u.un.a->u.read.tensor != R ||
            b->u.un.a->u.read.indices[0] != F->axes[0] || b->u.un.a->u.read.indices[1] != F->axes[1])
            return false;
        cast = si->consumers[0];
    } else if (si->nconsumers > 1) {
        return false;
    }
    if (out) *out = (tc_gemm){M, N, K, in, cast};
    return true;
}

/* The tile unit of a fitting stage, or -1. */
static int tile_unit(const tune_gen *g, const tune_sketch *sk, tc_gemm *gm) {
    for (int u = 0; u < sk->nunits; u++)
        if (sk->units[u].kind == TUNE_UNIT_GPU_TILE && fits(g->dag, g->w, sk->units[u].stage, gm))
            return u;
    return -1;
}

static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    (void)stage, (void)made_by;
    return tile_unit(g, sk, NULL) >= 0 ? TUNE_RULE_APPLY : TUNE_RULE_PASS;
}

/* Every fitting tile becomes a tensor-core unit; the template schedules
 * the cast too, so its own unit (when the tile did not absorb it) goes. */
static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    (void)stage;
    tc_gemm gm;
    int u;
    while ((u = tile_unit(g, sk, &gm)) >= 0) {
        int bytes = te_dtype_bytes(gm.in);
        bool bf16 = gm.cast >= 0 && g->dag->stages[gm.cast].tensor->dtype.code == TE_BFLOAT;
        ops_tc_config wg;
        bool wgmma = g->cc == 90 && !ops_tc_wgmma_default_config(NULL, gm.M, gm.N, gm.K, gm.in,
                                                                 tune__tc_shared_limit(), &wg);
        sk->units[u] = (tune_unit){TUNE_UNIT_GPU_TENSORCORE, sk->units[u].stage, gm.cast,
                                   bytes | (bf16 ? 8 : 0) | (wgmma ? WGMMA_BIT : 0)};
        /* a cast with a reader of its own (an implicit GEMM's copy into
         * the convolution's output) is not inlined: it is the template's
         * output */
        for (int k = 0; gm.cast >= 0 && k < sk->ninline; k++)
            if (sk->inlined[k] == gm.cast) {
                memmove(&sk->inlined[k], &sk->inlined[k + 1],
                        (size_t)(sk->ninline - k - 1) * sizeof sk->inlined[0]);
                sk->ninline--;
                break;
            }
        int fu = gm.cast >= 0 ? tune__unit_of(sk, gm.cast, TUNE_UNIT_GPU_FLAT) : -1;
        if (fu >= 0) {
            memmove(&sk->units[fu], &sk->units[fu + 1],
                    (size_t)(sk->nunits - fu - 1) * sizeof sk->units[0]);
            sk->nunits--;
        }
    }
    return 0;
}

/* The knobs' holes; extent: the largest value (M, N for the tiles, K for
 * the chunk, 1 for the engine, 8 for group_m). */
static int holes(tune_sketch *sk, const tune_dag *dag, int u) {
    const te_tensor *R = dag->stages[sk->units[u].stage].tensor;
    int64_t M = R->shape[0], N = R->shape[1], K = R->body->u.reduce.axes[0]->u.var.extent;
    const int64_t ext[NKNOBS] = {M, N, M, N, K, 1, 4, 1, 8};
    for (int k = 0; k < nknobs(sk, u); k++)
        if (tune__add_hole(sk, TUNE_HOLE_GPU_TC, u, 1, ext[k], false)) return TUNE__CAP_HOLES;
    return 0;
}

static const char *text(const tune_unit *un, const tune_dag *dag, const char **object) {
    (void)dag;
    *object = "";
    return un->vec_dim & WGMMA_BIT ? "tensor cores (wmma or wgmma), shared pipeline"
                                   : "tensor cores (wmma), shared pipeline";
}

/* ---- configs ---- */

/* The GEMM of unit u, from its holes (extents) and its vec_dim. */
static void unit_gemm(const tune_sketch *sk, int u, int64_t *M, int64_t *N, int64_t *K,
                      te_dtype *in, te_dtype *out) {
    *M = tune__unit_hole(sk, u, K_BM)->extent;
    *N = tune__unit_hole(sk, u, K_BN)->extent;
    *K = tune__unit_hole(sk, u, K_KC)->extent;
    int code = sk->units[u].vec_dim;
    *in = (code & 7) == 4 ? TE_FLOAT32 : TE_FLOAT16;
    *out = code & 8 ? TE_BFLOAT16 : TE_FLOAT32;
}

int64_t tune__tc_shared_limit(void) {
    /* with a GPU, its opt-in limit (tune_gpu_limits); without, the largest
     * any GPU has (sm_90): the verifier then checks the target's own */
    return rt_cuda_available() ? tune_gpu_limits().max_shared_bytes : 232448;
}

static void load(const tune_sketch *sk, int u, const int64_t *vals, int64_t *v) {
    v[K_ENGINE] = v[K_GROUP] = 0;
    for (int k = 0; k < nknobs(sk, u); k++) v[k] = vals[tune__unit_hole(sk, u, k)->offset];
}

static ops_tc_config config_of(const tune_sketch *sk, int u, const int64_t *vals) {
    int64_t v[NKNOBS];
    load(sk, u, vals, v);
    return (ops_tc_config){.bm = v[K_BM], .bn = v[K_BN], .wm = v[K_WM], .wn = v[K_WN],
                           .kc = v[K_KC], .unroll_k = v[K_UNROLL] != 0, .stages = (int)v[K_STAGES],
                           .wgmma = v[K_ENGINE] == 1, .group_m = v[K_GROUP]};
}

bool tune__tc_valid(const tune_sketch *sk, int u, const int64_t *vals) {
    int64_t M, N, K, shared = 0;
    te_dtype in, out;
    unit_gemm(sk, u, &M, &N, &K, &in, &out);
    int64_t v[NKNOBS];
    load(sk, u, vals, v);
    ops_tc_config c = config_of(sk, u, vals);
    if (c.stages < 1 || c.stages > 4 || v[K_ENGINE] < 0 || v[K_ENGINE] > 1) return false;
    /* the knobs the engine does not read keep one value */
    if (c.wgmma ? !c.unroll_k || c.group_m < 1 : c.group_m != 0) return false;
    return ops_tc_check(NULL, M, N, K, in, out, &c, &shared) == 0 &&
           shared <= tune__tc_shared_limit();
}

static void store(const tune_sketch *sk, int u, const int64_t *v, int64_t *vals) {
    for (int k = 0; k < nknobs(sk, u); k++) vals[tune__unit_hole(sk, u, k)->offset] = v[k];
}

/* A power of two from 16 up to cap dividing n, at random (16 always
 * divides: M, N and K are multiples of 16). */
static int64_t rand_pow2(uint64_t *rng, int64_t n, int64_t cap) {
    int64_t c[8];
    int nc = 0;
    for (int64_t p = 16; p <= cap && nc < 8; p *= 2)
        if (n % p == 0) c[nc++] = p;
    return nc ? c[tune__rand_below(rng, nc)] : 16;
}

/* The template's default config on one engine (1: wgmma), every knob set
 * (what the library's default schedule runs on this GPU). */
static bool engine_default(const tune_sketch *sk, int u, int engine, int64_t *v) {
    int64_t M, N, K;
    te_dtype in, out;
    unit_gemm(sk, u, &M, &N, &K, &in, &out);
    ops_tc_config c;
    if (engine ? ops_tc_wgmma_default_config(NULL, M, N, K, in, tune__tc_shared_limit(), &c)
               : ops_tc_default_config(NULL, M, N, K, in, out, tune__tc_shared_limit(), &c))
        return false;
    const int64_t d[NKNOBS] = {c.bm, c.bn, c.wm, c.wn, c.kc, engine ? 1 : c.unroll_k, c.stages,
                               engine, engine ? c.group_m : 0};
    memcpy(v, d, sizeof d);
    return true;
}

/* The unit's first program: on wgmma where the unit may (sm_90, as
 * matmul's default schedule there), else WMMA. */
static bool default_config(const tune_sketch *sk, int u, int64_t *v) {
    return (nknobs(sk, u) == NKNOBS && engine_default(sk, u, 1, v)) || engine_default(sk, u, 0, v);
}

/* One of n values at random. */
static int64_t pick(uint64_t *rng, const int64_t *c, int n) { return c[tune__rand_below(rng, n)]; }

/* A wgmma config at random: blocks 64, 128 or 256 each way, warpgroups
 * of 64-row multiples as tall as or shorter than the block and as wide as
 * it or half, chunks of one or two 128-byte rows (64 or 128 16-bit
 * elements, 32 or 64 tf32 ones), 2 to 4 stages, group_m 1, 4 or 8 (rule
 * breakers are rejected by the caller's check). */
static void draw_wgmma(uint64_t *rng, int bytes, int64_t *v) {
    static const int64_t tiles[] = {64, 128, 256}, groups[] = {1, 4, 8};
    v[K_BM] = pick(rng, tiles, 3);
    v[K_BN] = pick(rng, tiles, 3);
    v[K_WM] = pick(rng, tiles, 3);
    v[K_WN] = tune__rand_below(rng, 2) ? v[K_BN] : v[K_BN] / 2;
    v[K_KC] = (tune__rand_below(rng, 2) ? 128 : 256) / bytes;
    v[K_UNROLL] = 1;
    v[K_STAGES] = 2 + tune__rand_below(rng, 3);
    v[K_ENGINE] = 1;
    v[K_GROUP] = pick(rng, groups, 3);
}

/* Rejection sampling over one engine's knobs (WMMA: block tiles up to
 * 256, warp tiles up to 128 dividing them, chunks up to 128; wgmma:
 * draw_wgmma); that engine's default config when no draw passes (a small
 * GEMM with few valid configs). False when it has none. */
static bool random_engine(const tune_sketch *sk, int u, int engine, uint64_t *rng,
                          int64_t *vals) {
    int64_t M = tune__unit_hole(sk, u, K_BM)->extent, N = tune__unit_hole(sk, u, K_BN)->extent;
    int64_t K = tune__unit_hole(sk, u, K_KC)->extent;
    int bytes = (sk->units[u].vec_dim & 7) == 4 ? 4 : 2;
    for (int tries = 0; tries < 256; tries++) {
        int64_t v[NKNOBS];
        if (engine) {
            draw_wgmma(rng, bytes, v);
            store(sk, u, v, vals);
            if (tune__tc_valid(sk, u, vals)) return true;
            continue;
        }
        v[K_ENGINE] = v[K_GROUP] = 0;
        v[K_BM] = rand_pow2(rng, M, 256);
        v[K_BN] = rand_pow2(rng, N, 256);
        v[K_WM] = rand_pow2(rng, v[K_BM], 128);
        v[K_WN] = rand_pow2(rng, v[K_BN], 128);
        v[K_KC] = rand_pow2(rng, K, 128);
        v[K_UNROLL] = tune__rand_below(rng, 2);
        v[K_STAGES] = 1 + tune__rand_below(rng, 4);
        store(sk, u, v, vals);
        if (tune__tc_valid(sk, u, vals)) return true;
    }
    int64_t d[NKNOBS];
    if (!engine_default(sk, u, engine, d)) return false;
    store(sk, u, d, vals);
    return true;
}

/* Either engine, as likely, where the unit may run on wgmma. */
static void random_unit(const tune_sketch *sk, int u, uint64_t *rng, int64_t *vals) {
    int engine = nknobs(sk, u) == NKNOBS ? (int)tune__rand_below(rng, 2) : 0;
    if (!random_engine(sk, u, engine, rng, vals) && engine) random_engine(sk, u, 0, rng, vals);
}

/* One knob moved: a tile or the chunk halved or doubled, the unroll flag
 * flipped, the depth changed, another group_m; the engine flipped (the
 * other knobs then drawn anew for it: the two engines' valid tiles hardly
 * meet); undone (-1) when the config breaks a rule. */
static int mutate_hole(const tune_sketch *sk, const tune_hole *h, uint64_t *rng, int64_t *vals) {
    int u = h->unit, k = 0, n = nknobs(sk, u);
    while (k < n && tune__unit_hole(sk, u, k) != h) k++;
    if (k == n) return -1;
    int64_t old = vals[h->offset], nv;
    if (k == K_ENGINE) {
        int64_t keep[NKNOBS];
        load(sk, u, vals, keep);
        if (random_engine(sk, u, !old, rng, vals) && tune__tc_valid(sk, u, vals)) return 0;
        store(sk, u, keep, vals);
        return -1;
    }
    if (k == K_GROUP) {
        static const int64_t groups[] = {1, 4, 8};
        nv = pick(rng, groups, 3);
    } else if (k == K_UNROLL) nv = !old;
    else if (k == K_STAGES) {
        nv = 1 + tune__rand_below(rng, 3);
        if (nv >= old) nv++;
    } else nv = tune__rand_below(rng, 2) ? old * 2 : old / 2;
    if (nv == old || (k < K_UNROLL && (nv < 16 || h->extent % nv))) return -1;
    vals[h->offset] = nv;
    if (tune__tc_valid(sk, u, vals)) return 0;
    vals[h->offset] = old;
    return -1;
}

static bool structural(const tune_heur *c, int u, tune_program *p) {
    int64_t d[NKNOBS];
    if (!default_config(c->sk, u, d)) return false;
    store(c->sk, u, d, p->vals);
    return true;
}

static int structural_score(const tune_heur *c, int u) {
    (void)c, (void)u;
    return 1;
}

/* The template on the stage's output (the cast when there is one) and
 * the two tensors the sum reads. */
static int decode(tune_decoder *d, int u) {
    const tune_unit *un = &d->sk->units[u];
    te_tensor *R = d->stage[un->stage];
    read_walk rw = {R, NULL, NULL, true};
    reads_visit(R->body->u.reduce.source, &rw);
    if (!rw.ok || !rw.A || !rw.B)
        return te_error(sch_ctx(d->s), "autotune: '%s' is no longer a tensor-core GEMM", R->name);
    te_tensor *F = un->consumer >= 0 ? d->stage[un->consumer] : R;
    ops_tc_config c = config_of(d->sk, u, d->p->vals);
    /* every knob explicit: a 0 would take the template's default, and the
     * program would not say its own schedule */
    if (c.stages < 1 || !tune__tc_valid(d->sk, u, d->p->vals))
        return te_error(sch_ctx(d->s),
                        "autotune: tensor-core config (%s) %lldx%lld, %s %lldx%lld, chunk %lld, "
                        "%d stages of '%s' is not valid here",
                        c.wgmma ? "wgmma" : "wmma", (long long)c.bm, (long long)c.bn,
                        c.wgmma ? "warpgroup" : "warp", (long long)c.wm, (long long)c.wn,
                        (long long)c.kc, c.stages, F->name);
    return ops_schedule_tc_gemm(d->s, F, (te_tensor *)rw.A, (te_tensor *)rw.B, &c) ? -1 : 0;
}

const tune_rule tune_rule_gpu_tensorcore = {
    .name = "GPU tensor cores",
    .when = TUNE_RULE_ON_SKETCH,
    .gpu = true,
    .unit = TUNE_UNIT_GPU_TENSORCORE,
    .condition = condition,
    .apply = apply,
    .holes = holes,
    .text = text,
    .random_unit = random_unit,
    .mutate_hole = mutate_hole,
    .structural = structural,
    .structural_score = structural_score,
    .decode = {[TUNE_PHASE_MAIN] = decode},
};
