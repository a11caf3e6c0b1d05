/*
 * autotune/default_schedule.c — a good schedule for any workload without
 * records (a fused subgraph, a user's operator), derived from its
 * structure alone: no measurement, no randomness.
 *
 * Why: only the ops registry's operators have hand-written default
 * schedules; everything else (graph/exec.c's fused groups, builders of
 * tune_register_builder) used to run a plain sch_create schedule, 10-100x
 * slower than needed (issue 35 part 2).
 *
 * The order of attempts, the first whose schedule applies and lowers wins:
 * 0. a fused attention group's own schedule (autotune/default_attention.c:
 *    no sketch keeps its scores in cache);
 * 1. the heuristic programs (tune_program_heuristic: the rules of the
 *    library's default schedules) of the sketches that have them, a packed
 *    register tile first (the default NCHW convolution's), then the GEMM
 *    tile (the default matmul's); a packed tile is refused when another
 *    input is read at the vectorized axis (a depthwise convolution's data:
 *    vectors over channels would gather it: 0.25x of the hand default on
 *    a MobileNet layer, bench/RESULTS.md session 30), as the library's
 *    depthwise default never packs; in the generator's order, where a
 *    sketch with its register tile computed in its elementwise tail's
 *    loops (the generator's epilogue-fusion rule) comes right before the
 *    same sketch without;
 * 2. a filling of a sketch's holes by rules (fill_rules below), the
 *    sketches ranked by how well their units suit their stages (rule_score),
 *    then rfactored row reductions moved into their consumer's row loop
 *    (rows_into_consumers), as the library's softmax and layer_norm do;
 * 3. sch_create with the outputs' outer loops fused parallel and the
 *    innermost vectorized;
 * 4. sch_create as it is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/tune_internal.h"
#include "loom/codegen.h"
#include "loom/ops.h"


/* The largest divisor of n not above cap that is a multiple of m; 0 if none. */
static int64_t divisor_multiple(int64_t n, int64_t cap, int64_t m) {
    for (int64_t d = cap < n ? cap : n; d >= m; d--)
        if (n % d == 0 && d % m == 0) return d;
    return 0;
}

typedef struct {
    const te_expr *var;
    bool found;
} var_ctx;

static void find_var(const te_expr *e, void *user) {
    var_ctx *v = user;
    if (e == v->var) v->found = true;
    else if (!v->found) te_expr_visit_children(e, find_var, user);
}

static bool uses_var(const te_expr *e, const te_expr *var) {
    var_ctx v = {var, false};
    find_var(e, &v);
    return v.found;
}

typedef struct {
    const te_expr *var;
    bool found;
} scale_ctx;

static void find_scale(const te_expr *e, void *user) {
    scale_ctx *c = user;
    if (e->kind == TE_MUL) {
        const te_expr *a = e->u.bin.a, *b = e->u.bin.b;
        if ((a->kind == TE_INT_IMM && a->u.ival != 1 && uses_var(b, c->var)) ||
            (b->kind == TE_INT_IMM && b->u.ival != 1 && uses_var(a, c->var)))
            c->found = true;
    }
    if (!c->found) te_expr_visit_children(e, find_scale, user);
}

/* True when index e steps by more than 1 per step of var (a stride). */
static bool scaled(const te_expr *e, const te_expr *var) {
    scale_ctx c = {var, false};
    find_scale(e, &c);
    return c.found;
}

/* Reads of tensors other than `except`, checked for an index using `var`:
 * in the last position, one element per step (last), or elsewhere or with
 * a stride (other: a read that walks memory by more than one element per
 * step of var). */
typedef struct {
    const te_tensor *except;
    const te_expr *var;
    bool last, other;
} read_ctx;

static void find_read(const te_expr *e, void *user) {
    read_ctx *r = user;
    if (e->kind == TE_READ && e->u.read.tensor != r->except) {
        int n = e->u.read.ndim;
        for (int d = 0; d < n; d++)
            if (uses_var(e->u.read.indices[d], r->var)) {
                if (d == n - 1 && !scaled(e->u.read.indices[d], r->var)) r->last = true;
                else r->other = true;
            }
    }
    te_expr_visit_children(e, find_read, user);
}

static read_ctx reads_at(const te_tensor *t, const te_tensor *except, const te_expr *var) {
    read_ctx r = {except, var, false, false};
    if (t->body) find_read(t->body, &r);
    return r;
}

/* A reduction annotated in place (TUNE_UNIT_ANNOTATE) vectorizes its last
 * spatial axis: worth it only when reads walk memory along that axis (a
 * pooling window's columns) and none across rows (softmax's row maxima:
 * each lane would read another row) or by a stride (a strided pooling,
 * 0.9x of the plain loop vectorized): gathers. */
static bool annotate_vectorizes(const te_tensor *t) {
    if (!t->body || t->body->kind != TE_REDUCE) return true;
    if (t->ndim < 1) return false;
    read_ctx r = reads_at(t, NULL, t->axes[t->ndim - 1]);
    return r.last && !r.other;
}

/* A packed register tile vectorizes stage `stage` over axis vec_dim,
 * packing one input along it; any other input read at that axis would be
 * gathered across the lanes. */
static bool packed_tile_fits(const tune_sketch *sk, const tune_dag *dag, int u) {
    const te_tensor *t = dag->stages[sk->units[u].stage].tensor;
    const te_tensor *packed = NULL;
    for (int k = 0; k < sk->nunits; k++)
        if (sk->units[k].kind == TUNE_UNIT_PACK && sk->units[k].consumer == sk->units[u].stage)
            packed = dag->stages[sk->units[k].stage].tensor;
    int vd = sk->units[u].vec_dim;
    if (!packed || vd < 0 || vd >= t->ndim) return false;
    read_ctx r = reads_at(t, packed, t->axes[vd]);
    return !r.last && !r.other;
}

/* 2: a packed register tile, 1: the GEMM tile, 0: no heuristic programs
 * wanted (a packed tile that would gather). */
static int heuristic_rank(const tune_sketch *sk, const tune_dag *dag) {
    int rank = 1;
    for (int u = 0; u < sk->nunits; u++)
        if (sk->units[u].kind == TUNE_UNIT_TILE_CACHE_PACKED) {
            if (!packed_tile_fits(sk, dag, u)) return 0;
            rank = 2;
        }
    return rank;
}

/* The vector split of an innermost axis: the widest power of two up to a
 * vector that divides it (1: none). Not any divisor: 14 lanes of a 56-wide
 * row with 16-lane vectors become 8 + 4 + 2 lane pieces, and ran 3x slower
 * than the plain loop LLVM vectorizes itself. */
static int64_t vector_factor(int64_t ext, int vlen) {
    for (int64_t f = vlen; f >= 2; f /= 2)
        if (ext % f == 0) return f;
    return 1;
}

/* The rows of a register tile: a divisor of the extent near 4 (no guard
 * in the tile), else 4 with a tail (the row holes allow one). */
static int64_t tile_rows(int64_t ext) {
    if (ext <= 4) return ext;
    for (int64_t f = 4; f >= 2; f--)
        if (ext % f == 0) return f;
    return 4;
}

/* The columns of a register tile (vectorized, so a divisor): the whole
 * axis up to two vectors, else the largest multiple of a vector up to two
 * vectors dividing it, else the largest divisor up to two vectors. */
static int64_t tile_cols(int64_t ext, int vlen) {
    int64_t cap = 2 * (int64_t)vlen;
    if (ext <= cap) return ext;
    int64_t f = divisor_multiple(ext, cap, vlen);
    return f ? f : vector_factor(ext, vlen);
}

/* Register tile of a tiling unit (TILE, TILE_CACHE, TILE_FUSE): rows x
 * columns in the innermost level (the library's ops__sched_register_tile:
 * 4 rows x 2 vectors), every other level 1, the reduction outside the tile,
 * the outer loops fused parallel, the tile unrolled (16 steps), the
 * accumulator at the innermost outer tile loop. */
static bool fill_tile(const tune_sketch *sk, int u, const te_tensor *t, int vlen,
                      tune_program *p) {
    int nsp = t->ndim, col = nsp - 1, row = nsp - 2;
    const tune_hole *h;
    int k = 0;
    /* A blocked convolution without a register-tile sketch (no epilogue
     * to cache its writes: a bias alone, a downsample) takes the tile of
     * its heuristic programs, not 2 rows by one vector (0.5x). */
    int64_t blv[TE_MAX_DIMS][3];
    for (int d = 0; d < nsp && d < TE_MAX_DIMS; d++) blv[d][0] = blv[d][1] = blv[d][2] = 1;
    bool blocked = tune__blocked_conv_tile(t, vlen, blv);
    for (int d = 0; d < nsp; d++, k++) {
        if (!(h = tune__unit_hole(sk, u, k)) || h->kind != TUNE_HOLE_SPLIT || h->nvals != 3)
            return false;
        int64_t *v = p->vals + h->offset;
        v[0] = v[1] = v[2] = 1;
        if (blocked) v[2] = blv[d][2];
        else if (d == col) v[2] = tile_cols(t->shape[d], vlen);
        else if (d == row) v[2] = tile_rows(t->shape[d]);
        if (!tune_split_valid(h, v)) return false;
    }
    for (; (h = tune__unit_hole(sk, u, k)) && h->kind == TUNE_HOLE_SPLIT; k++)
        p->vals[h->offset] = 1;
    if (!h || h->kind != TUNE_HOLE_PARALLEL) return false;
    p->vals[h->offset] = nsp < h->extent ? nsp : h->extent;
    if (!(h = tune__unit_hole(sk, u, ++k)) || h->kind != TUNE_HOLE_UNROLL) return false;
    p->vals[h->offset] = blocked ? 2 : 1; /* 64 steps: the whole blocked tile */
    if (sk->units[u].kind == TUNE_UNIT_TILE) return true;
    if (!(h = tune__unit_hole(sk, u, ++k)) || h->kind != TUNE_HOLE_LOCATION) return false;
    p->vals[h->offset] = 2;
    return true;
}

/* Iterations of a parallel loop that keep the threads busy and balanced. */
#define PARALLEL_MIN_ITERS 64

/* How many outer loops of an annotated stage (its axes, the last split by
 * vec) to fuse into its parallel loop: the fewest whose iterations reach
 * PARALLEL_MIN_ITERS (at most max). A loop fused needlessly costs a
 * division and a remainder per iteration to recover its index, which the
 * plain nested loops do not pay (an elementwise add ran at 0.4x of
 * sch_create's schedule with every loop fused). */
static int64_t parallel_loops(const te_tensor *t, int64_t vec, int64_t max) {
    int64_t prod = 1, k = 0;
    while (k < max && k < t->ndim && prod < PARALLEL_MIN_ITERS) {
        int64_t e = t->shape[k];
        prod *= k == t->ndim - 1 ? (e + vec - 1) / vec : e;
        k++;
    }
    return k < 1 ? 1 : k;
}

/* The rfactor split: OPS_ROW_REDUCE_VECTORS, ..., 2, 1 vectors of partial
 * results where they divide the reduction at least twice (the library's
 * row reductions), else the widest divisor up to a vector. */
static int64_t rfactor_factor(int64_t ext, int vlen) {
    for (int64_t m = 4; m >= 1; m /= 2)
        if (ext % (m * vlen) == 0 && ext / (m * vlen) >= 2) return m * vlen;
    int64_t f = divisor_multiple(ext, vlen, 1);
    return f ? f : 1;
}

/* Reads of r in c's body: all at exactly c's leading axes? */
typedef struct {
    const te_tensor *r, *c;
    bool seen, leading;
} lead_ctx;

static void find_lead(const te_expr *e, void *user) {
    lead_ctx *l = user;
    if (e->kind == TE_READ && e->u.read.tensor == l->r) {
        l->seen = true;
        if (e->u.read.ndim != l->r->ndim) l->leading = false;
        for (int d = 0; d < e->u.read.ndim && l->leading; d++)
            if (e->u.read.indices[d] != l->c->axes[d]) l->leading = false;
    }
    te_expr_visit_children(e, find_lead, user);
}

/* The consumer unit whose row loop an rfactored reduction (unit u) can be
 * computed in, as the library's row reductions are (a row stays in cache
 * between the stages): the stage's only consumer, annotated, reading it at
 * exactly its own leading axes. -1: none (computed at the root). */
static int row_consumer(const tune_sketch *sk, const tune_dag *dag, int u) {
    const tune_stage_info *si = &dag->stages[sk->units[u].stage];
    const te_tensor *r = si->tensor;
    if (sk->units[u].kind != TUNE_UNIT_RFACTOR || si->is_output || si->nconsumers != 1 ||
        r->ndim < 1)
        return -1;
    int cu = -1;
    for (int k = 0; k < sk->nunits; k++)
        if (sk->units[k].stage == si->consumers[0] && sk->units[k].kind == TUNE_UNIT_ANNOTATE)
            cu = k;
    if (cu < 0) return -1;
    const te_tensor *c = dag->stages[si->consumers[0]].tensor;
    if (c->ndim <= r->ndim || !c->body) return -1;
    lead_ctx lc = {r, c, false, true};
    find_lead(c->body, &lc);
    return lc.seen && lc.leading ? cu : -1;
}

/* Fills every hole of a CPU sketch by rules; false for a unit they do not
 * cover (a packed tile: its heuristic programs cover it, or nothing does). */
static bool fill_rules(const tune_sketch *sk, const tune_dag *dag, int vlen, bool rows,
                       tune_program *p) {
    for (int u = 0; u < sk->nunits; u++) {
        const tune_unit *un = &sk->units[u];
        const te_tensor *t = dag->stages[un->stage].tensor;
        const tune_hole *h0 = tune__unit_hole(sk, u, 0), *h1 = tune__unit_hole(sk, u, 1);
        switch (un->kind) {
        case TUNE_UNIT_PLACE:
            if (!h0) return false;
            p->vals[h0->offset] = 2; /* the root, rows parallel, vectorized */
            break;
        case TUNE_UNIT_PACK: break;
        case TUNE_UNIT_ANNOTATE:
            if (!h0 || !h1) return false;
            p->vals[h0->offset] =
                annotate_vectorizes(t) ? vector_factor(h0->extent, vlen) : 1;
            p->vals[h1->offset] = parallel_loops(t, p->vals[h0->offset], h1->extent);
            /* Only the rows where a row reduction is computed in them. */
            for (int r = 0; rows && r < sk->nunits; r++)
                if (row_consumer(sk, dag, r) == u)
                    p->vals[h1->offset] = dag->stages[sk->units[r].stage].tensor->ndim;
            break;
        case TUNE_UNIT_RFACTOR:
            if (!h0) return false;
            p->vals[h0->offset] = rfactor_factor(h0->extent, vlen);
            break;
        case TUNE_UNIT_TILE:
        case TUNE_UNIT_TILE_CACHE:
        case TUNE_UNIT_TILE_FUSE:
            if (t->ndim < 1 || !fill_tile(sk, u, t, vlen, p)) return false;
            break;
        default: return false;
        }
    }
    return true;
}

/* True when a register tile of sk computes its elementwise tail (the
 * epilogue-fusion rule's sketches). The rules (attempt 2) fill only the
 * other sketches: they were written and measured for those, and a sketch
 * with a tail fused has an unfused twin that the rules then take. */
static bool fused_tail(const tune_sketch *sk) {
    for (int u = 0; u < sk->nunits; u++)
        if ((sk->units[u].kind == TUNE_UNIT_TILE_CACHE ||
             sk->units[u].kind == TUNE_UNIT_TILE_CACHE_PACKED) &&
            sk->units[u].consumer >= 0)
            return true;
    return false;
}

/* How well a sketch's units suit their stages (higher first): a register
 * tile with an accumulator or fused with its consumer over a plain tiling,
 * a packed operand, and for a reduction without data reuse an rfactor into
 * vectors where annotating in place would not vectorize (and the reverse). */
static int rule_score(const tune_sketch *sk, const tune_dag *dag) {
    int score = 0;
    for (int u = 0; u < sk->nunits; u++) {
        const te_tensor *t = dag->stages[sk->units[u].stage].tensor;
        switch (sk->units[u].kind) {
        case TUNE_UNIT_TILE_CACHE:
        case TUNE_UNIT_TILE_FUSE: score += 3; break;
        case TUNE_UNIT_TILE: score += 1; break;
        case TUNE_UNIT_PACK: score += 1; break;
        case TUNE_UNIT_RFACTOR: score += annotate_vectorizes(t) ? 0 : 2; break;
        case TUNE_UNIT_ANNOTATE:
            if (t->body && t->body->kind == TE_REDUCE) score += annotate_vectorizes(t) ? 2 : 0;
            break;
        default: break;
        }
    }
    return score;
}

/* The stage of s that now produces a tensor named `name` (rfactor and
 * cache rewrites replace a stage's tensor but keep its name); -1: none. */
static int stage_named(const sch_schedule *s, const char *name) {
    for (int i = 0; i < sch_num_stages(s); i++)
        if (!strcmp(sch_stage_tensor(s, i)->name, name)) return i;
    return -1;
}

/* Computes each rfactored row reduction that has a row consumer
 * (row_consumer), and its partial results, in that consumer's parallel row
 * loop. 0 or -1. */
static int rows_into_consumers(sch_schedule *s, const tune_sketch *sk, const tune_dag *dag) {
    for (int u = 0; u < sk->nunits; u++) {
        int cu = row_consumer(sk, dag, u);
        if (cu < 0) continue;
        const te_tensor *r = dag->stages[sk->units[u].stage].tensor;
        const te_tensor *c = dag->stages[sk->units[cu].stage].tensor;
        char rf_name[256];
        snprintf(rf_name, sizeof rf_name, "%s.rf", r->name);
        int ri = stage_named(s, r->name), fi = stage_named(s, rf_name), ci = stage_named(s, c->name);
        te_expr *const *leaf;
        if (ri < 0 || fi < 0 || ci < 0 || sch_stage_leaf_axes(s, ci, &leaf) < 1) return -1;
        te_expr *at = leaf[0];
        te_tensor *ct = sch_stage_tensor(s, ci);
        if (sch_compute_at(s, sch_stage_tensor(s, ri), ct, at) ||
            sch_compute_at(s, sch_stage_tensor(s, fi), ct, at))
            return -1;
    }
    return 0;
}

/* A schedule that lowers: the last check before one is returned, so that
 * the caller's build cannot fail on something the next attempt avoids. */
static bool lowers(sch_schedule *s, const tune_workload *w) {
    return s && sch_lower(s, w->nargs, w->args, "default") != NULL;
}

/* The outputs' loops: spatial axes fused parallel (for a reduction) or all
 * but the innermost fused parallel and the innermost split by a vector and
 * vectorized where a vector divides it. */
static int annotate_output(sch_schedule *s, te_tensor *t, int vlen) {
    int n = t->ndim;
    if (n < 1) return 0;
    te_expr *ax[TE_MAX_DIMS + 1], *f;
    for (int d = 0; d < n; d++)
        if (!(ax[d] = sch_axis(t, d))) return -1;
    bool red = t->body && t->body->kind == TE_REDUCE;
    te_expr *li = NULL;
    if (!red && t->shape[n - 1] % vlen == 0 && sch_split(s, t, ax[n - 1], vlen, &ax[n - 1], &li))
        return -1;
    f = ax[0];
    if (n > 1 && sch_fuse(s, t, n, ax, &f)) return -1;
    if (sch_parallel(s, t, f)) return -1;
    return li && vlen > 1 ? sch_vectorize(s, t, li) : 0;
}

/* "sketch 2 (C: ...), heuristic program 0", or (program -1) "sketch 2
 * (C: ...), rules", or (-2) the rules with rows_into_consumers. */
static void set_how(te_ctx *ctx, const char **how, int sketch, const char *desc, int program) {
    if (!how) return;
    char buf[400];
    if (program >= 0)
        snprintf(buf, sizeof buf, "sketch %d (%s), heuristic program %d", sketch, desc, program);
    else if (program == -2)
        snprintf(buf, sizeof buf, "sketch %d (%s), rules, row reductions in their consumers' rows",
                 sketch, desc);
    else
        snprintf(buf, sizeof buf, "sketch %d (%s), rules", sketch, desc);
    *how = te_strdup(ctx, buf);
}

sch_schedule *tune_default_schedule(te_ctx *ctx, const tune_workload *w, const char *target,
                                    const char **how) {
    if (how) *how = NULL;
    if (!ctx) return NULL;
    if (!w || !w->outs || w->nouts < 1 || !w->args || w->nargs < 1) {
        te_error(ctx, "autotune: tune_default_schedule: no workload (NULL or without outputs)");
        return NULL;
    }
    cg_target tg;
    char *why = NULL;
    if (cg_target_parse(target ? target : "", &tg, &why)) {
        te_error(ctx, "autotune: tune_default_schedule: %s", why ? why : "out of memory");
        free(why);
        return NULL;
    }
    int vlen = tg.vector_lanes;
    bool cuda = tg.kind == CG_TARGET_CUDA;
    cg_target_free(&tg);
    if (cuda) {
        te_error(ctx, "autotune: tune_default_schedule: unknown target '%s' (llvm, c): "
                      "schedules derived from a workload's structure are for CPUs (on cuda, "
                      "operators have ops_default_schedule)",
                 target);
        return NULL;
    }
    /* A plain schedule first: if sch_create refuses the workload, so is
     * every attempt below, with sch_create's message. */
    sch_schedule *plain = sch_create(ctx, w->nouts, w->outs);
    if (!plain) return NULL;
    sch_schedule *att = tune__attention_schedule(ctx, w, vlen);
    if (lowers(att, w)) {
        if (how) *how = te_strdup(ctx, "attention: scores, softmax and V product per block of rows");
        return att;
    }
    enum { MAXS = TUNE_MAX_PARTIAL_SKETCHES };
    tune_sketch *sk = te_alloc(ctx, sizeof(tune_sketch) * MAXS);
    tune_dag dag;
    int nsk = 0;
    if (sk && !tune_dag_analyze(ctx, w->nouts, w->outs, &dag))
        nsk = tune_generate_sketches(ctx, w, sk, MAXS);
    if (nsk < 0) nsk = 0;

    /* 1. Heuristic programs, a packed tile's sketches before GEMM tiles',
     * in the generator's order: a register tile fused into its
     * elementwise tail (the epilogue-fusion rule: the bias/residual Add
     * and activation computed in the tile's copy-out, not in a second pass
     * over the output) comes right before the same tile unfused. */
    for (int rank = 2; rank >= 1; rank--)
        for (int i = 0; i < nsk; i++) {
            if (heuristic_rank(&sk[i], &dag) != rank) continue;
            tune_program progs[TUNE_MAX_HEURISTIC];
            int np = tune_program_heuristic(&sk[i], i, w, vlen, progs, TUNE_MAX_HEURISTIC);
            for (int k = 0; k < np; k++) {
                sch_schedule *s = tune_program_apply(ctx, w, &sk[i], &progs[k]);
                if (lowers(s, w)) {
                    set_how(ctx, how, i, sk[i].desc, k);
                    return s;
                }
            }
        }

    /* 2. Rules, best-suited sketch first (ties: the generator's order). */
    bool tried[MAXS] = {false};
    for (;;) {
        int best = -1, best_score = -1;
        for (int i = 0; i < nsk; i++) {
            if (tried[i] || fused_tail(&sk[i])) continue;
            int sc = rule_score(&sk[i], &dag);
            if (sc > best_score) best = i, best_score = sc;
        }
        if (best < 0) break;
        tried[best] = true;
        /* Row reductions in their consumers' row loops, else at the root. */
        bool any_rows = false;
        for (int u = 0; u < sk[best].nunits; u++) any_rows |= row_consumer(&sk[best], &dag, u) >= 0;
        for (int rows = any_rows; rows >= 0; rows--) {
            tune_program p;
            memset(&p, 0, sizeof p);
            p.sketch = best;
            if (!fill_rules(&sk[best], &dag, vlen, rows, &p)) break;
            sch_schedule *s = tune_program_apply(ctx, w, &sk[best], &p);
            if (s && rows && rows_into_consumers(s, &sk[best], &dag)) s = NULL;
            if (lowers(s, w)) {
                set_how(ctx, how, best, sk[best].desc, rows ? -2 : -1);
                return s;
            }
        }
    }

    /* 3. The outputs parallel and vectorized. */
    sch_schedule *s = sch_create(ctx, w->nouts, w->outs);
    bool ok = s != NULL;
    for (int o = 0; ok && o < w->nouts; o++) ok = annotate_output(s, w->outs[o], vlen) == 0;
    if (ok && lowers(s, w)) {
        if (how) *how = te_strdup(ctx, "sch_create, outputs parallel and vectorized");
        return s;
    }

    /* 4. As created. */
    if (how) *how = te_strdup(ctx, "sch_create");
    return plain;
}
