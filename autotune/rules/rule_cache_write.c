/*
 * autotune/rules/rule_cache_write.c — multi-level tiling with a "local"
 * accumulator (TUNE_UNIT_TILE_CACHE; Ansor's RuleAddCacheWrite followed
 * by tiling with fusion): the stage's results accumulate in a register
 * tile (its cache_write copy, tiled SSRSRS) that is copied out by the
 * original stage's loops — or, once the epilogue-fusion rule derived the
 * variant (rule_epilogue.c), by its elementwise tail's. Not for an output
 * that is no reduction (nothing to accumulate).
 *
 * Heuristic program: the library's default GEMM register tile.
 */
#include "autotune/rules/rule.h"

static tune_rule_cond condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by) {
    (void)made_by;
    const tune_stage_info *si = &g->dag->stages[stage];
    return si->needs_tiling && tune__fusable_consumer(g, sk, stage) < 0 &&
                   (!si->is_output || si->is_reduction)
               ? TUNE_RULE_APPLY
               : TUNE_RULE_PASS;
}

static int apply(const tune_gen *g, tune_sketch *sk, int stage) {
    return tune__add_unit(sk, g->dag, TUNE_UNIT_TILE_CACHE, stage, -1, 0);
}

static const char *text(const tune_unit *un, const tune_dag *dag, const char **object) {
    *object = un->consumer >= 0 ? dag->stages[un->consumer].tensor->name : NULL;
    return un->consumer >= 0 ? "cache_write, tile SSRSRS, fuse into its elementwise tail"
                             : "cache_write, tile SSRSRS, fuse into copy";
}

typedef struct {
    const te_expr *a, *b;
    bool found;
} sum_read;

static void find_sum_read(const te_expr *e, void *user) {
    sum_read *sr = user;
    if (sr->found) return;
    if (e->kind == TE_READ)
        for (int d = 0; d < e->u.read.ndim; d++) {
            const te_expr *ix = e->u.read.indices[d];
            if (ix->kind == TE_ADD && ((ix->u.bin.a == sr->a && ix->u.bin.b == sr->b) ||
                                       (ix->u.bin.a == sr->b && ix->u.bin.b == sr->a)))
                sr->found = true;
        }
    te_expr_visit_children(e, find_sum_read, user);
}

/* The reduce axis that slides along the output's columns (axis 3) with
 * unit stride and dilation over more than one tap: a read index column +
 * r. -1 if none (a 1x1 convolution's column tap has one). */
static int unit_width_tap(const te_tensor *t) {
    const te_expr *col = t->axes[3];
    for (int r = 0; r < t->body->u.reduce.naxes; r++) {
        const te_expr *ra = t->body->u.reduce.axes[r];
        sum_read sr = {col, ra, false};
        if (ra->u.var.extent > 1 && te_reduce_axis_slides(t, r)) find_sum_read(t->body, &sr);
        if (sr.found) return r;
    }
    return -1;
}

/* The taps of the convolution's window: the product of its sliding
 * reduce axes' extents. */
static int64_t window_taps(const te_tensor *t) {
    int64_t n = 1;
    for (int r = 0; r < t->body->u.reduce.naxes; r++)
        if (te_reduce_axis_slides(t, r)) n *= t->body->u.reduce.axes[r]->u.var.extent;
    return n;
}

/* A blocked convolution on an image of at most TUNE__SMALL_IMAGE output
 * pixels (ResNet-50's 7x7 layers, Inception-v3's 8x8), or at most
 * TUNE__SMALL_IMAGE_WINDOW with a window of more than one tap (3x3 at
 * 14x14), AVX2 and older (vlen <= 8): the whole image by 2 output blocks
 * in the accumulator's tile (lv[d] level 1: 784 floats, 3 KB, in L1 at
 * 7x7; 3136, 12.5 KB, at 14x14), the input blocks outside it (the
 * accumulator sits at the outer tile loop) and 4 of each block's lanes
 * inside, so each of the 8 weight vectors a step holds is loaded once
 * per image rather than once per 2 columns. The register tile (2 columns
 * by 4 blocks) streamed its 64-590 KB of weights from L2 or L3 for each
 * of its 21-28 tiles: 1x1 512->2048 at 7x7 ran at 57 GFLOP/s, 3x3 stride
 * 2 to 7x7 at 39. This way, inside the models (1 thread, Zen 3, session
 * 50), ResNet-50's five 7x7 kernels took 21-56 % less time, and
 * Inception-v3's 8x8 layers 18-32 % less (the tuner's records for these
 * layers had found the order). At 14x14 (session 51, in the model) its
 * 3x3 256->256 took 18 % less time and the 3x3 stride-2 128->128 from
 * 28x28 13 % less, while the 1x1 256->1024 took 18 % more (1024->256
 * level), so 1x1 windows keep the 64-pixel limit. At 28x28 (a 50 KB
 * accumulator) the 3x3 was level and the stride-2 one from 56x56 slower.
 * Dense convolutions only: the reduction's last axis is the input
 * block's lanes (a depthwise one reduces over taps alone). Returns that
 * axis with lv[1..4] set and *inner_n the lanes inside
 * (TUNE__SMALL_IMAGE_LANES), or -1 with lv untouched. */
#define TUNE__SMALL_IMAGE 64
#define TUNE__SMALL_IMAGE_WINDOW 196
#define TUNE__SMALL_IMAGE_LANES 4
static int small_image_tile(const te_tensor *t, int vlen, int64_t lv[][3], int64_t *inner_n) {
    const int64_t *shape = t->shape;
    int lanes = t->body->u.reduce.naxes - 1;
    int64_t most = window_taps(t) > 1 ? TUNE__SMALL_IMAGE_WINDOW : TUNE__SMALL_IMAGE;
    if (vlen > 8 || shape[2] * shape[3] > most || lanes < 1 ||
        te_reduce_axis_slides(t, lanes) || t->body->u.reduce.axes[lanes]->u.var.extent != shape[4])
        return -1;
    tune__set3(lv[1], 1, 1, shape[1] % 2 == 0 ? 2 : 1);
    tune__set3(lv[2], 1, shape[2], 1);
    tune__set3(lv[3], 1, shape[3], 1);
    tune__set3(lv[4], 1, 1, shape[4]);
    *inner_n = TUNE__SMALL_IMAGE_LANES;
    return lanes;
}

/* A convolution on NCHW[vlen]c (graph/pass_alter_layout.c: output
 * [N, K/vlen, OH, OW, vlen], one vector of columns): the GEMM tile's 6
 * rows by one vector leave registers idle and put a guard in every row
 * tile of a 56-wide image; instead output columns (a divisor of OW: no
 * tail) by output channel blocks (TVM's conv2d_NCHWc tiles ow by oc
 * blocks the same way), every other axis outside in level 0 (lv[d] =
 * {1, 1, inner}, the columns' level 1 below; other axes' entries are
 * left alone); where no divisor of OW near the width wanted exists, near
 * it with a balanced tail.
 * The tile's size follows the vector registers:
 * - 32 (AVX-512): up to 8 columns by 2 blocks (16 accumulators).
 *   Measured (1 thread, 64->64 3x3 and 64->256 1x1 at 56x56): 8x2 and
 *   7x2 run 1.8-2x the NCHW default; 14x2 (28 accumulators) spills and
 *   runs at 0.57x of 8x2, 14x1 at 0.95x.
 *   A window read with unit stride on an image wider than 8 takes its
 *   column taps inside the lanes (*inner_axis): a step then loads 10
 *   input broadcasts and 6 weight vectors for 48 FMAs, where taps
 *   outside load 8 and 2 for 16. On a core with two 512-bit FMA units
 *   and two load ports (Ice Lake server, session 55) the loads were the
 *   bound: ResNet-50's 3x3 stride-1 layers took 24-27 % less time in the
 *   model (as the tuner's best records for them had found), its 7x7
 *   ones (one block of whole rows that way) 7 % more, so those keep the
 *   taps outside. Not measured where one FMA unit leaves the loads idle
 *   (Zen 4).
 * - 16 (AVX2 and older, vlen 8 or less): 8 accumulators, 2 columns by 4
 *   blocks where 4 divide the blocks (oneDNN's AVX2 kernel also loads
 *   fewer weight vectors than it broadcasts inputs), else 4 by 2, else 8
 *   by 1. The AVX-512 tile spilled its accumulators there and ran
 *   ResNet-50 at 0.35-0.47x ONNX Runtime on a Zen 3 host: 3x3 convs at
 *   19-35 GFLOP/s, 1x1 256->64 at 56x56 at 11; with 2x4, 56-77 and 59-82
 *   (bench/RESULTS.md, session 47).
 *   An image of at most TUNE__SMALL_IMAGE pixels (TUNE__SMALL_IMAGE_WINDOW
 *   with a window) takes small_image_tile's tile (above), whatever its
 *   stride.
 *   A taller image of at most 8 columns read with unit stride takes its
 *   whole rows by one block instead (ResNet-50's 7x7 layers did until
 *   session 50), with the window's column taps inside the lanes
 *   (*inner_axis, wholly: *inner_n 0; -1 otherwise): a tile of 2 of 7
 *   columns left the padding's column guards in its body, as the tile's
 *   columns are fused outside the reduction and loop partitioning does
 *   not split them (schedule/pad_guard.c), and ran at 22-24 GFLOP/s;
 *   whole rows fold the guards away, and taps inside the lanes let each
 *   broadcast input meet its 3 weights at once instead of being kept
 *   live across the taps (391 stack accesses with the taps outside):
 *   45-53 GFLOP/s at 512 channels, 77-80 at 256 (session 48). At stride
 *   2 it ran no faster than 2 by 4.
 *   A window of 25 taps or more (5x5) read with unit stride keeps the
 *   usual tile but its column taps inside the lanes too: with them
 *   outside, the 2 by 4 tile spilled (198 stack accesses; 4 inside) and
 *   ran at 30-37 GFLOP/s, inside at 58-67 (Inception-v3's 48->64 at
 *   35x35, 64->64 at 28x28); 3x3 and 1x7 windows ran 10-20 % faster
 *   with their taps outside. */
bool tune__blocked_conv_tile(const te_tensor *t, int vlen, int64_t lv[][3], int *inner_axis,
                             int64_t *inner_n) {
    const int64_t *shape = t->shape;
    /* Half a vector too: a tensor blocked by half the lanes (24 channels
     * on AVX-512, graph/pass_alter_layout.c). */
    if (t->ndim != 5 || (shape[4] != vlen && 2 * shape[4] != vlen) || !t->body ||
        t->body->kind != TE_REDUCE)
        return false;
    int64_t lanes_inside;
    int lanes = small_image_tile(t, vlen, lv, &lanes_inside);
    if (lanes >= 0) {
        if (inner_axis) *inner_axis = lanes, *inner_n = lanes_inside;
        return true;
    }
    int64_t kb = shape[1] % 2 == 0 ? 2 : 1, want = 8;
    int tap = unit_width_tap(t);
    bool whole_rows = vlen <= 8 && tap >= 0 && shape[3] <= 8;
    /* Taps inside the lanes: on AVX2 for whole rows and windows of 25
     * taps or more, on AVX-512 on images wider than 8 (above). */
    bool inside = vlen <= 8 ? whole_rows || window_taps(t) >= 25 : shape[3] > 8;
    if (!inside) tap = -1;
    if (inner_axis) *inner_axis = tap, *inner_n = 0;
    if (whole_rows) kb = 1;
    else if (vlen <= 8) {
        kb = shape[1] % 4 == 0 ? 4 : kb;
        want = 8 / kb;
    }
    int64_t ow = shape[3] <= want ? shape[3] : tune__divisor_multiple(shape[3], want, 1);
    /* No divisor of half the width or more, or of 2 (17 columns for 8:
     * 1): tiles of near the width with a tail, balanced (17: 6, 6, 5),
     * each of them its own loop body after loop partitioning; one column
     * by 2 blocks ran 2-3x slower than ONNX Runtime (64->64 3x3 at
     * 17x17). */
    if (ow < (want > 4 ? want / 2 : 2) && shape[3] > ow)
        ow = tune__ceil_div(shape[3], tune__ceil_div(shape[3], want));
    lv[1][0] = lv[1][1] = lv[3][0] = lv[3][1] = lv[4][0] = lv[4][1] = 1;
    lv[1][2] = kb;
    lv[3][2] = ow;
    lv[4][2] = shape[4];
    /* AVX2: the row's column tiles in level 1, a loop of their own inside
     * the parallel one, which loop partitioning splits at the padding's
     * edges (schedule/pad_guard.c); fused into the parallel loop they
     * kept the column guards in every tile's body: 1x7 convolutions on
     * 17-wide images (Inception-v3) ran at 31 GFLOP/s, 65 this way, 5x5
     * at 35 wide 27 -> 37, other ResNet-50 and DenseNet shapes the same
     * (session 48, Zen 3). Not measured on AVX-512 yet. */
    if (vlen <= 8) lv[3][0] = tune__ceil_div(shape[3], ow);
    return true;
}

/* The default GEMM register tile: 6 rows (a tail allowed) by 2 host
 * vectors of columns (4 on AVX-512; a divisor of the columns, else the
 * largest multiple of a vector that divides them), the rows in the
 * second level so the column panels stay outer, the outer loops fused
 * parallel. Only when the column operand is packed (a PACK unit: the
 * default's panels); without that, 6 rows by 16 columns is no fast point
 * (an NCHW convolution tiled on its image rows: 1.8-4x the default). */
static bool heuristic(const tune_heur *c, int u, int variant, tune_program *p) {
    (void)variant;
    const tune_sketch *sk = c->sk;
    int vlen = c->vlen;
    bool packs = false;
    for (int k = 0; k < sk->nunits; k++) packs |= sk->units[k].kind == TUNE_UNIT_PACK;
    if (!packs) return false;
    const te_tensor *t = c->dag->stages[sk->units[u].stage].tensor;
    int nsp = t->ndim;
    const int64_t *shape = t->shape;
    int col = nsp - 1, row = nsp - 2;
    if (row < 0) return false;
    int64_t nb = vlen >= 16 ? 4 * vlen : 2 * vlen;
    nb = shape[col] <= nb ? shape[col] : tune__divisor_multiple(shape[col], nb, vlen);
    if (!nb) return false;
    int64_t mr = shape[row] < 6 ? shape[row] : 6;
    int64_t lv[TE_MAX_DIMS][3];
    for (int d = 0; d < nsp; d++) tune__set3(lv[d], 1, 1, 1);
    int inner_axis;
    int64_t inner_n;
    if (tune__blocked_conv_tile(t, vlen, lv, &inner_axis, &inner_n)) {
        if (!tune__fill_tile(sk, u, t, lv, nsp, false, p)) return false;
        tune__reduce_inner(sk, u, nsp, inner_axis, inner_n, p);
        /* The whole tile unrolled (64 steps), so that its accumulators
         * live in registers: 16 steps leave a 2 x 8 tile a loop (0.55x). */
        const tune_hole *h;
        for (int k = 0; (h = tune__unit_hole(sk, u, k)) != NULL; k++)
            if (h->kind == TUNE_HOLE_UNROLL) p->vals[h->offset] = 2;
        return true;
    }
    /* Rows in level 1, so the column panels' level-0 loop is outside them. */
    tune__set3(lv[row], tune__ceil_div(shape[row], mr), 1, mr);
    tune__set3(lv[col], 1, 1, nb);
    return tune__fill_tile(sk, u, t, lv, nsp, false, p);
}

/* A register tile with an accumulator. */
static int score(const tune_heur *c, int u) {
    (void)c, (void)u;
    return 3;
}

static int decode(tune_decoder *a, int u) {
    const tune_unit *un = &a->sk->units[u];
    te_tensor *t = a->stage[un->stage];
    te_tensor *cache = sch_cache_write(a->s, t, "local");
    return cache ? tune__tile_fused(a, u, cache, tune__copy_out(a, un, t), -1) : -1;
}

const tune_rule tune_rule_cache_write = {
    .name = "add cache_write",
    .when = TUNE_RULE_ON_STAGE,
    .unit = TUNE_UNIT_TILE_CACHE,
    .condition = condition,
    .apply = apply,
    .tiles_last_axis = true,
    .accumulates = true,
    .holes = tune__tile_holes,
    .text = text,
    .random_hole = tune__random_hole_cpu,
    .mutate_hole = tune__mutate_hole_cpu,
    .heuristic = heuristic,
    .heuristic_programs = 1,
    .structural = tune__structural_tile,
    .structural_score = score,
    .decode = {[TUNE_PHASE_MAIN] = decode},
};
