/*
 * autotune/rules/rule_dot_bf16.c — a register tile on AVX512-BF16's
 * VDPBF16PS (TUNE_UNIT_TILE_DOT; MetaSchedule's MultiLevelTilingWithIntrin
 * for x86's VNNI dot products, in bfloat16): where the host CPU has it,
 * a float32 sum over one axis of bfloat16 products (a bfloat16 matmul's
 * C_acc, a fused group's bfloat16 MatMul) is tiled SSRSRS with the
 * reduction's pairs and the tile's 16-lane vectors innermost, tensorized
 * with "x86.dpbf16", the column operand packed [K/2, N/nb, nb, 2] (the
 * VNNI layout) at the root, and the tile computed in its elementwise tail
 * (the cast back to bfloat16) or a local cache_write copy.
 *
 * The holes count the columns in vectors of 16 and the reduction in
 * pairs: every filling is a valid tensorized program (no odd pair, no
 * ragged vector). Rows may leave a tail (guarded around the call). Random
 * and mutated fillings keep the accumulator within MAX_ACC_VECTORS.
 * Its sketch comes first; the float32 tiles follow it.
 *
 * Heuristic and structural program: the library's bfloat16 matmul tile
 * (ops__sched_register_tile_bf16_dot): rows near 6 that divide, 4 vectors
 * of columns, the reduction outside the tile, the tile wholly unrolled.
 */
#include <pthread.h>
#include <string.h>

#include "autotune/rules/rule.h"

enum { LANES = 16 };

static bool host_dot;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

static void detect_host(void) {
    cg_target t;
    if (!cg_target_parse("llvm", &t, NULL)) host_dot = t.bf16_dot;
    cg_target_free(&t);
}

static bool is_bf16_read(const te_expr *e) {
    return e && e->kind == TE_CAST && te_dtype_eq(e->dtype, TE_FLOAT32) &&
           e->u.un.a->kind == TE_READ && te_dtype_eq(e->u.un.a->dtype, TE_BFLOAT16);
}

/* Whether t is such a sum: float32, one reduce axis k (even), the last
 * axis a whole number of vectors, sum(float32(a[.., k]) * float32(b[...]))
 * with b an input (placeholder) read at t's last axis and walked by k
 * (*bt; its dimension there *bdim, k's *pair) and a an input whose pair is
 * contiguous (k indexes its last dimension). The tiles' rules themselves
 * are tensorize's, checked when the program is lowered. */
static bool dot_operands(const te_tensor *t, te_tensor **bt, int *bdim, int *pair) {
    const te_expr *body = t->body;
    int n = t->ndim;
    if (!body || body->kind != TE_REDUCE || body->u.reduce.naxes != 1 || n < 2 ||
        !te_dtype_eq(t->dtype, TE_FLOAT32) || t->shape[n - 1] % LANES)
        return false;
    const te_expr *k = body->u.reduce.axes[0], *src = body->u.reduce.source;
    if (k->u.var.extent % 2 || src->kind != TE_MUL || !is_bf16_read(src->u.bin.a) ||
        !is_bf16_read(src->u.bin.b))
        return false;
    /* a first, as the intrinsic's declaration has them */
    te_tensor *a = src->u.bin.a->u.un.a->u.read.tensor, *b = src->u.bin.b->u.un.a->u.read.tensor;
    int d = te_expr_read_dim(body, b, t->axes[n - 1]), pk = te_expr_read_dim(body, b, k);
    if (a == b || b->kind != TE_OP_PLACEHOLDER || d < 0 || pk < 0 ||
        te_expr_read_dim(body, a, k) != a->ndim - 1)
        return false;
    *bt = b, *bdim = d, *pair = pk;
    return true;
}

static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    (void)sk, (void)made_by;
    pthread_once(&host_once, detect_host);
    te_tensor *b;
    int bdim, pair;
    return host_dot && g->dag->stages[stage].needs_tiling &&
                   dot_operands(g->dag->stages[stage].tensor, &b, &bdim, &pair)
               ? TUNE_RULE_APPLY
               : TUNE_RULE_PASS;
}

static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    int cs = tune__fusable_consumer(g, sk, stage);
    if (cs >= 0) tune__drop_annotate(sk, cs);
    int rc = tune__add_unit(sk, g->dag, TUNE_UNIT_TILE_DOT, stage, cs, 0);
    return rc ? rc : tune__rebuild_holes(sk, g->dag);
}

/* SSRSRS over the rows and the other axes, the columns in vectors, the
 * reduction in pairs; then parallel, unroll and location holes. */
static int holes(tune_sketch *sk, const tune_dag *dag, int u) {
    const te_tensor *t = dag->stages[sk->units[u].stage].tensor;
    int n = t->ndim;
    for (int d = 0; d < n; d++) {
        int64_t ext = d == n - 1 ? t->shape[d] / LANES : t->shape[d];
        if (tune__add_hole(sk, TUNE_HOLE_SPLIT, u, 3, ext, false)) return TUNE__CAP_HOLES;
        sk->holes[sk->nholes - 1].tail = d != n - 1;
    }
    if (tune__add_hole(sk, TUNE_HOLE_SPLIT, u, 1, t->body->u.reduce.axes[0]->u.var.extent / 2,
                       true) ||
        tune__add_hole(sk, TUNE_HOLE_PARALLEL, u, 1, n, false) ||
        tune__add_hole(sk, TUNE_HOLE_UNROLL, u, 1, TUNE__NUNROLL - 1, false) ||
        tune__add_hole(sk, TUNE_HOLE_LOCATION, u, 1, 2, false))
        return TUNE__CAP_HOLES;
    return 0;
}

/* The accumulator's vectors in a filling of unit u: the tile levels
 * inside the fusion point (LOCATION 1: levels 1-3, 2: levels 2-3) of
 * every spatial axis, the last one's counting vectors. */
static int64_t acc_vectors(const tune_sketch *sk, int u, const int64_t *vals) {
    int64_t v = 1, level = 2;
    const tune_hole *h;
    for (int k = 0; (h = tune__unit_hole(sk, u, k)) != NULL; k++)
        if (h->kind == TUNE_HOLE_LOCATION) level = vals[h->offset];
    for (int k = 0; (h = tune__unit_hole(sk, u, k)) != NULL; k++)
        if (h->kind == TUNE_HOLE_SPLIT && !h->reduce)
            for (int i = level == 1 ? 0 : 1; i < 3; i++) v *= vals[h->offset + i];
    return v;
}

/* At most 96 vectors of sums (6 KB; the library's tile holds 24, the
 * CPU has 32 registers): a tile of thousands, wholly unrolled, took LLVM
 * past the 15 s build timeout (its load-safety scans are quadratic in a
 * block's length), and could never keep its sums in registers. */
enum { MAX_ACC_VECTORS = 96 };

/* Random tile sizes drawn again (64 tries) while the accumulator is over
 * the limit; the smallest draw is kept. */
static void random_unit(const tune_sketch *sk, int u, uint64_t *rng, int64_t *vals) {
    int64_t keep[TUNE_MAX_HOLES * 3], best = acc_vectors(sk, u, vals);
    memcpy(keep, vals, sizeof keep);
    for (int tries = 0; tries < 64 && best > MAX_ACC_VECTORS; tries++) {
        for (int i = 0; i < sk->nholes; i++) {
            const tune_hole *h = &sk->holes[i];
            if (h->unit == u && (h->kind == TUNE_HOLE_SPLIT || h->kind == TUNE_HOLE_LOCATION))
                tune__random_hole_cpu(h, rng, vals + h->offset);
        }
        int64_t acc = acc_vectors(sk, u, vals);
        if (acc < best) {
            best = acc;
            memcpy(keep, vals, sizeof keep);
        }
    }
    memcpy(vals, keep, sizeof keep);
}

/* A mutation that would take the accumulator over the limit is undone. */
static int mutate_hole(const tune_sketch *sk, const tune_hole *h, uint64_t *rng, int64_t *vals) {
    int64_t old[8];
    int n = h->nvals < 8 ? h->nvals : 8;
    memcpy(old, vals + h->offset, (size_t)n * sizeof old[0]);
    if (tune__mutate_hole_cpu(sk, h, rng, vals)) return -1;
    if (acc_vectors(sk, h->unit, vals) <= MAX_ACC_VECTORS) return 0;
    memcpy(vals + h->offset, old, (size_t)n * sizeof old[0]);
    return -1;
}

static const char *text(const tune_unit *un, const tune_dag *dag, const char **object) {
    *object = un->consumer >= 0 ? dag->stages[un->consumer].tensor->name : NULL;
    return un->consumer >= 0 ? "tile SSRSRS on x86.dpbf16 (operand packed VNNI), fuse into"
                             : "cache_write, tile SSRSRS on x86.dpbf16 (operand packed VNNI)";
}

/* The library's tile: rows near 6 dividing them (else 6 with a tail), 4
 * vectors of columns (a divisor of the vectors), the rows in level 1 so
 * the column panels stay outer, the reduction outside the tile, the outer
 * loops fused parallel, 64 steps unrolled (the 6 x 4 calls of the tile). */
static bool heuristic(const tune_heur *c, int u, int variant, tune_program *p) {
    (void)variant;
    const tune_sketch *sk = c->sk;
    const te_tensor *t = c->dag->stages[sk->units[u].stage].tensor;
    int n = t->ndim, row = n - 2, col = n - 1;
    int64_t rows = t->shape[row], vecs = t->shape[col] / LANES;
    int64_t mr = rows <= 6 ? rows : tune__divisor_multiple(rows, 6, 1);
    if (mr < 3 && rows > 6) mr = 6;
    int64_t nv = tune__divisor_multiple(vecs, 4, 1);
    int64_t lv[TE_MAX_DIMS][3];
    for (int d = 0; d < n; d++) tune__set3(lv[d], 1, 1, 1);
    tune__set3(lv[row], tune__ceil_div(rows, mr), 1, mr);
    tune__set3(lv[col], 1, 1, nv);
    if (!tune__fill_tile(sk, u, t, lv, n, false, p)) return false;
    const tune_hole *h;
    for (int k = 0; (h = tune__unit_hole(sk, u, k)) != NULL; k++)
        if (h->kind == TUNE_HOLE_UNROLL) p->vals[h->offset] = 2;
    return true;
}

static bool structural(const tune_heur *c, int u, tune_program *p) {
    return heuristic(c, u, 0, p);
}

/* Twice the float32 register tile's rate: ranks first. */
static int score(const tune_heur *c, int u) {
    (void)c, (void)u;
    return 4;
}

/* The column operand's copy packed by nb columns and by pairs of the
 * reduction ([K/2, N/nb, nb, 2]) for reader pr, its block loop parallel
 * (a constant operand is packed once, before the calls). */
static int pack_operand(tune_decoder *a, te_tensor *pr, te_tensor *b, int bdim, int pair,
                        int64_t nb) {
    te_tensor *copy = sch_cache_read(a->s, b, "global", 1, &pr);
    te_tensor *p = copy ? sch_pack_vnni(a->s, copy, bdim, pair, nb) : NULL;
    return p ? sch_parallel(a->s, p, sch_axis(p, 0)) : -1;
}

static int decode(tune_decoder *a, int u) {
    const tune_unit *un = &a->sk->units[u];
    te_ctx *ctx = sch_ctx(a->s);
    te_tensor *t = a->stage[un->stage], *pr = t, *co = NULL, *b;
    int bdim, pair;
    if (!dot_operands(t, &b, &bdim, &pair))
        return te_error(ctx, "autotune: stage '%s' is no float32 sum of bfloat16 products for "
                             "x86.dpbf16",
                        t->name);
    if (un->consumer >= 0) co = a->stage[un->consumer];
    else if (!(pr = sch_cache_write(a->s, t, "local"))) return -1;
    else co = t;
    int n = co->ndim, col = n - 1;
    const int64_t *fc = tune__hv(a, u, col);
    if (pack_operand(a, pr, b, bdim, pair, fc[2] * LANES)) return -1;
    /* pr: the lanes and the pair split off, then the levels */
    te_expr *l[TE_MAX_DIMS][4], *r[2], *lanes, *pairs, *x;
    for (int d = 0; d < n; d++) {
        const int64_t *f = tune__hv(a, u, d);
        if (!(x = sch_axis(pr, d))) return -1;
        if (d == col && sch_split(a->s, pr, x, LANES, &x, &lanes)) return -1;
        if (sch_split(a->s, pr, x, f[2], &x, &l[d][3]) ||
            sch_split(a->s, pr, x, f[1], &x, &l[d][2]) ||
            sch_split(a->s, pr, x, f[0], &l[d][0], &l[d][1]))
            return -1;
    }
    if (!(x = sch_reduce_axis(pr, 0)) || sch_split(a->s, pr, x, 2, &x, &pairs) ||
        sch_split(a->s, pr, x, tune__hv(a, u, n)[0], &r[0], &r[1]))
        return -1;
    te_expr *order[4 * TE_MAX_DIMS + 4];
    int k = 0;
    for (int lv = 0; lv < 2; lv++)
        for (int d = 0; d < n; d++) order[k++] = l[d][lv];
    order[k++] = r[0];
    for (int d = 0; d < n; d++) order[k++] = l[d][2];
    order[k++] = r[1];
    for (int d = 0; d < n; d++) order[k++] = l[d][3];
    order[k++] = lanes;
    order[k++] = pairs;
    if (sch_reorder(a->s, pr, k, order) || sch_tensorize(a->s, pr, lanes, "x86.dpbf16"))
        return -1;
    /* The accumulator's loops inside the fusion point copied out (at most
     * MAX_ACC_VECTORS calls), as the library's tile: its sums then sit at
     * constant offsets, which LLVM keeps in registers. */
    int64_t level = tune__hv(a, u, n + 3)[0];
    for (int d = 0; d < n; d++)
        for (int lv = level == 1 ? 1 : 2; lv < 4; lv++)
            if (sch_unroll(a->s, pr, l[d][lv])) return -1;
    a->holder[u] = pr;
    a->nloops[u] = 2 * n;
    for (int d = 0; d < n; d++) a->loops[u][d] = l[d][0], a->loops[u][n + d] = l[d][1];
    /* co: the tile's levels (its columns in lanes), pr computed in them */
    return tune__tile_copy_out(a, u, pr, co, n + 1, LANES);
}

const tune_rule tune_rule_dot_bf16 = {
    .name = "multi-level tiling on x86.dpbf16",
    .when = TUNE_RULE_ON_STAGE,
    .unit = TUNE_UNIT_TILE_DOT,
    .condition = condition,
    .apply = apply,
    .holes = holes,
    .text = text,
    .random_hole = tune__random_hole_cpu,
    .random_unit = random_unit,
    .mutate_hole = mutate_hole,
    .heuristic = heuristic,
    .heuristic_programs = 1,
    .structural = structural,
    .structural_score = score,
    .decode = {[TUNE_PHASE_MAIN] = decode},
};
