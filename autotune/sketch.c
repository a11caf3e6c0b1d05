/*
 * autotune/sketch.c — sketch generation by derivation rules, applied to
 * the stages from the last to the first (Ansor §4.1; TVM
 * sketch_policy_rules.cc): skip placeholders, always-inline strictly
 * inlinable stages, multi-level tiling ("SSRSRS" on CPU) of stages with
 * data reuse — fused into a single elementwise consumer when there is one,
 * otherwise both plain and with an added cache_write stage; and, where an
 * input can be packed, a packed register tile (with or without a consumer,
 * Loom's own rule: TUNE_UNIT_TILE_CACHE_PACKED) — and rfactor
 * for long reductions with little parallelism. Every other compute stage
 * keeps its loops and gets annotations (parallel, vectorize). A register
 * tile with an accumulator whose output ends in an elementwise tail (bias,
 * residual Add, Relu, gelu) also comes with that tail computed in its
 * copy-out (epilogue fusion, Loom's own rule: fuse_tail_variant).
 *
 * Inlinable stages with a branch (padding) read by one stage are not
 * always inlined: their compute location (inline, root, or an outer tile
 * loop of the consumer) is a hole, as Ansor's InitChangeComputeLocation
 * and MutateComputeLocation do for stages it does not strictly inline.
 *
 * Differences from Ansor: the fusion level of tiling-with-fusion (1 or 2
 * outer levels) is a hole (TUNE_HOLE_LOCATION, mutated as the compute
 * location) rather than two sketches; and the spatial split holes of a
 * tile but the vectorized axis's are marked `tail` (their innermost factor
 * need not divide the extent; see TUNE_HOLE_SPLIT).
 */
#include <stdio.h>
#include <string.h>

#include "autotune/tune_internal.h"

typedef struct {
    tune_sketch sk;
    bool dead;
} partial;

/* True when consumer c reads p, and only at exactly its own axes (with
 * `ones`, a constant 0 also where the extent is 1: the graph's
 * elementwise operators index a batch of one so). */
static bool reads_at_axes(const te_expr *e, const te_tensor *c, const te_tensor *p, bool ones,
                          bool *seen) {
    if (e->kind == TE_READ && e->u.read.tensor == p) {
        *seen = true;
        if (p->ndim != c->ndim) return false;
        for (int d = 0; d < c->ndim; d++)
            if ((e->u.read.indices[d] != c->axes[d] &&
                 !(ones && c->shape[d] == 1 && e->u.read.indices[d]->kind == TE_INT_IMM &&
                   e->u.read.indices[d]->u.ival == 0)) ||
                p->shape[d] != c->shape[d])
                return false;
    }
    struct { const te_expr *k[3]; int n; } ch = {{0}, 0};
    /* te_expr_visit_children gives no early exit: collect by kind. */
    switch (e->kind) {
    case TE_INT_IMM: case TE_FLOAT_IMM: case TE_VAR: return true;
    case TE_NOT: case TE_CAST: ch.k[0] = e->u.un.a; ch.n = 1; break;
    case TE_SELECT: ch.k[0] = e->u.sel.cond; ch.k[1] = e->u.sel.t; ch.k[2] = e->u.sel.f; ch.n = 3; break;
    case TE_CALL:
        for (int i = 0; i < e->u.call.nargs; i++)
            if (!reads_at_axes(e->u.call.args[i], c, p, ones, seen)) return false;
        return true;
    case TE_READ:
        for (int i = 0; i < e->u.read.ndim; i++)
            if (!reads_at_axes(e->u.read.indices[i], c, p, ones, seen)) return false;
        return true;
    case TE_REDUCE: return false;
    default:
        if (e->kind >= TE_ADD && e->kind <= TE_OR) {
            ch.k[0] = e->u.bin.a;
            ch.k[1] = e->u.bin.b;
            ch.n = 2;
        }
        break;
    }
    for (int i = 0; i < ch.n; i++)
        if (!reads_at_axes(ch.k[i], c, p, ones, seen)) return false;
    return true;
}

static bool reads_exactly(const te_expr *e, const te_tensor *c, const te_tensor *p, bool *seen) {
    return reads_at_axes(e, c, p, false, seen);
}

static void find_select(const te_expr *e, void *user) {
    if (e->kind == TE_SELECT) *(bool *)user = true;
    else te_expr_visit_children(e, find_select, user);
}

/* True when e contains a select (a branch). */
static bool has_branch(const te_expr *e) {
    bool found = false;
    find_select(e, &found);
    return found;
}

typedef struct {
    const te_tensor *input;
    const te_expr *const *raxes;
    int nr;
    bool found;
} reduce_read_ctx;

static void uses_reduce_visit(const te_expr *e, void *user) {
    reduce_read_ctx *rc = user;
    for (int k = 0; k < rc->nr; k++)
        if (e == rc->raxes[k]) rc->found = true;
    te_expr_visit_children(e, uses_reduce_visit, user);
}

static void reduce_read_visit(const te_expr *e, void *user) {
    reduce_read_ctx *rc = user;
    if (e->kind == TE_READ && e->u.read.tensor == rc->input)
        for (int d = 0; d < e->u.read.ndim; d++) uses_reduce_visit(e->u.read.indices[d], rc);
    te_expr_visit_children(e, reduce_read_visit, user);
}

/* The input (placeholder) stage worth packing for tiled stage i when its
 * spatial axis `axis` is the vectorized one: read at exactly that axis
 * (*dim: the input's dimension there) and walked by a reduce axis, so the
 * register tile's reduction loop strides through it (B[k, j] of a matmul,
 * W[j, k] of a dense layer, W[k, c, r, s] of a convolution vectorized over
 * output channels). -1: none. */
static int pack_candidate(const tune_dag *dag, int i, int axis, int *dim) {
    const te_tensor *t = dag->stages[i].tensor;
    if (!t->body || t->body->kind != TE_REDUCE || axis < 0 || axis >= t->ndim) return -1;
    const tune_stage_info *si = &dag->stages[i];
    for (int k = 0; k < si->nproducers; k++) {
        int p = si->producers[k];
        const te_tensor *in = dag->stages[p].tensor;
        if (!dag->stages[p].is_placeholder || in->ndim >= TE_MAX_DIMS) continue;
        int d = te_expr_read_dim(t->body, in, t->axes[axis]);
        if (d < 0) continue;
        reduce_read_ctx rc = {in, (const te_expr *const *)t->body->u.reduce.axes,
                              t->body->u.reduce.naxes, false};
        reduce_read_visit(t->body, &rc);
        if (rc.found) {
            *dim = d;
            return p;
        }
    }
    return -1;
}

/* The spatial axis (not the last) to vectorize with a packed accumulator
 * (TUNE_UNIT_TILE_CACHE_PACKED): one whose extent is a whole number of
 * host vectors and at which an input can be packed. -1: none. */
static int packed_vector_axis(const tune_dag *dag, int i, int *input, int *dim) {
    const te_tensor *t = dag->stages[i].tensor;
    int lanes = tune_host_vector_lanes();
    for (int d = t->ndim - 2; d >= 0; d--)
        if (t->shape[d] % lanes == 0 && (*input = pack_candidate(dag, i, d, dim)) >= 0) return d;
    return -1;
}

/* TUNE__CAP_HOLES when the sketch has no room for the hole. */
static int add_hole(tune_sketch *sk, tune_hole_kind kind, int unit, int nvals, int64_t extent,
                    bool reduce) {
    if (sk->nholes >= TUNE_MAX_HOLES || sk->nvals + nvals > TUNE_MAX_HOLES * 3)
        return TUNE__CAP_HOLES;
    tune_hole *h = &sk->holes[sk->nholes++];
    h->kind = kind;
    h->unit = unit;
    h->offset = sk->nvals;
    h->nvals = nvals;
    h->extent = extent;
    h->reduce = reduce;
    h->tail = false;
    sk->nvals += nvals;
    return 0;
}

static int nreduce(const te_tensor *t) {
    return t->body && t->body->kind == TE_REDUCE ? t->body->u.reduce.naxes : 0;
}

/* The outer spatial tile loops a stage placed into `consumer` can be
 * computed at: the tiled unit's 2 * ndim outer loops, an annotated unit's
 * fused parallel loop, none otherwise (rfactor, or no unit of its own). */
static int place_candidates(const tune_sketch *sk, const tune_dag *dag, int consumer) {
    for (int u = 0; u < sk->nunits; u++) {
        if (sk->units[u].stage != consumer) continue;
        switch (sk->units[u].kind) {
        case TUNE_UNIT_ANNOTATE: return 1;
        case TUNE_UNIT_TILE:
        case TUNE_UNIT_TILE_CACHE:
        case TUNE_UNIT_TILE_CACHE_PACKED:
        case TUNE_UNIT_TILE_FUSE: return 2 * dag->stages[consumer].tensor->ndim;
        default: break;
        }
    }
    return 0;
}

/* Appends a unit and its holes; TUNE__CAP_UNITS or TUNE__CAP_HOLES when
 * the sketch is full (which one: for the message). */
static int add_unit(tune_sketch *sk, const tune_dag *dag, tune_unit_kind kind, int stage,
                    int consumer, int vec_dim) {
    if (sk->nunits >= TUNE_MAX_UNITS) return TUNE__CAP_UNITS;
    const te_tensor *t = dag->stages[stage].tensor;
    int u = sk->nunits++;
    sk->units[u] = (tune_unit){kind, stage, consumer, vec_dim};
    int nsp = t->ndim, nr = nreduce(t);
    switch (kind) {
    case TUNE_UNIT_PLACE:
        return add_hole(sk, TUNE_HOLE_LOCATION, u, 1, 2 + place_candidates(sk, dag, consumer),
                        false);
    case TUNE_UNIT_PACK: return 0;
    case TUNE_UNIT_ANNOTATE:
        if (add_hole(sk, TUNE_HOLE_VECTOR, u, 1, t->shape[nsp - 1], false)) return TUNE__CAP_HOLES;
        return add_hole(sk, TUNE_HOLE_PARALLEL, u, 1, nsp, false);
    case TUNE_UNIT_RFACTOR:
        return add_hole(sk, TUNE_HOLE_SPLIT, u, 1,
                        t->body->u.reduce.axes[nr - 1]->u.var.extent, true);
    default:
        for (int d = 0; d < nsp; d++) {
            if (add_hole(sk, TUNE_HOLE_SPLIT, u, 3, t->shape[d], false)) return TUNE__CAP_HOLES;
            /* Rows of a register tile need not divide the extent (6 of
             * 1024); the vectorized axis's inner factor must, so that no
             * vector tail appears. */
            sk->holes[sk->nholes - 1].tail =
                d != (kind == TUNE_UNIT_TILE_CACHE_PACKED ? vec_dim : nsp - 1);
        }
        for (int r = 0; r < nr; r++)
            if (add_hole(sk, TUNE_HOLE_SPLIT, u, 1, t->body->u.reduce.axes[r]->u.var.extent,
                         true))
                return TUNE__CAP_HOLES;
        if (add_hole(sk, TUNE_HOLE_PARALLEL, u, 1, kind == TUNE_UNIT_TILE ? 2 * nsp : nsp,
                     false) ||
            add_hole(sk, TUNE_HOLE_UNROLL, u, 1, TUNE__NUNROLL - 1, false))
            return TUNE__CAP_HOLES;
        if (kind != TUNE_UNIT_TILE && add_hole(sk, TUNE_HOLE_LOCATION, u, 1, 2, false))
            return TUNE__CAP_HOLES;
        return 0;
    }
}

/* Removes the ANNOTATE unit of `stage` (a consumer taken over by fusion).
 * Holes are rebuilt by the caller afterwards. */
static void drop_unit_of(tune_sketch *sk, int stage) {
    for (int u = 0; u < sk->nunits; u++)
        if (sk->units[u].stage == stage && sk->units[u].kind == TUNE_UNIT_ANNOTATE) {
            memmove(&sk->units[u], &sk->units[u + 1],
                    (size_t)(sk->nunits - u - 1) * sizeof sk->units[0]);
            sk->nunits--;
            return;
        }
}

/* Recomputes the holes of sk from its units (after a unit was dropped). */
static int rebuild_holes(tune_sketch *sk, const tune_dag *dag) {
    tune_unit units[TUNE_MAX_UNITS];
    int n = sk->nunits;
    memcpy(units, sk->units, sizeof units);
    sk->nunits = sk->nholes = sk->nvals = 0;
    for (int u = 0; u < n; u++) {
        int rc = add_unit(sk, dag, units[u].kind, units[u].stage, units[u].consumer,
                          units[u].vec_dim);
        if (rc) return rc;
    }
    return 0;
}

static const char *unit_text(tune_unit_kind k, bool consumer) {
    if (consumer && k == TUNE_UNIT_TILE_CACHE)
        return "cache_write, tile SSRSRS, fuse into its elementwise tail";
    if (consumer && k == TUNE_UNIT_TILE_CACHE_PACKED)
        return "cache_write, pack, tile SSRSRS vectorized on a packed axis, fuse into its "
               "elementwise tail";
    switch (k) {
    case TUNE_UNIT_ANNOTATE: return "annotate";
    case TUNE_UNIT_TILE: return "tile SSRSRS";
    case TUNE_UNIT_TILE_CACHE: return "cache_write, tile SSRSRS, fuse into copy";
    case TUNE_UNIT_TILE_CACHE_PACKED:
        return "cache_write, pack, tile SSRSRS vectorized on a packed axis, fuse into copy";
    case TUNE_UNIT_TILE_FUSE: return "tile SSRSRS, fuse into";
    case TUNE_UNIT_RFACTOR: return "rfactor";
    case TUNE_UNIT_PLACE: return "inline|root|at";
    case TUNE_UNIT_PACK: return "cache_read, pack for";
    default: break; /* GPU units: sketch_gpu.c */
    }
    return "?";
}

static void describe(tune_sketch *sk, const tune_dag *dag) {
    size_t len = 0;
    sk->desc[0] = 0;
    /* Stages in their natural order (units were added last to first). */
    for (int i = 0; i < dag->nstages; i++) {
        const char *name = dag->stages[i].tensor->name;
        for (int k = 0; k < sk->ninline; k++)
            if (sk->inlined[k] == i)
                len += (size_t)snprintf(sk->desc + len, sizeof sk->desc - len, "%s%s: inline",
                                        len ? "; " : "", name);
        for (int u = 0; u < sk->nunits && len < sizeof sk->desc; u++) {
            if (sk->units[u].stage != i) continue;
            len += (size_t)snprintf(sk->desc + len, sizeof sk->desc - len, "%s%s: %s%s%s",
                                    len ? "; " : "", name,
                                    unit_text(sk->units[u].kind, sk->units[u].consumer >= 0),
                                    sk->units[u].consumer >= 0 ? " " : "",
                                    sk->units[u].consumer >= 0
                                        ? dag->stages[sk->units[u].consumer].tensor->name
                                        : "");
        }
        if (len >= sizeof sk->desc) break;
    }
}

static bool inlined_in(const tune_sketch *sk, int stage) {
    for (int k = 0; k < sk->ninline; k++)
        if (sk->inlined[k] == stage) return true;
    return false;
}

static bool annotated_in(const tune_sketch *sk, int stage) {
    for (int u = 0; u < sk->nunits; u++)
        if (sk->units[u].stage == stage && sk->units[u].kind == TUNE_UNIT_ANNOTATE) return true;
    return false;
}

/* The elementwise tail of stage t in sk: the one output stage, annotated,
 * that everything reading t ends in, through stages the sketch inlines or
 * annotates (an expensive one such as gelu's Erf, read by one stage, so
 * that inlining it computes it once per element), each reading t or a
 * stage between at exactly its own axes (conv -> Add(residual) -> Relu:
 * Relu, the Add inlined). The annotated stages between are set in
 * between[] (*nbetween). -1: none (t an output, or read by a reduction,
 * at other indices, or by two outputs). */
static int elementwise_tail(const tune_sketch *sk, const tune_dag *dag, int t, int *between,
                            int *nbetween) {
    *nbetween = 0;
    if (dag->stages[t].is_output || dag->stages[t].nconsumers < 1) return -1;
    bool reach[TUNE_MAX_STAGES] = {false};
    reach[t] = true;
    int tail = -1;
    /* Stages come producers first: one pass sees every path from t. */
    for (int j = t + 1; j < dag->nstages; j++) {
        const tune_stage_info *sj = &dag->stages[j];
        bool reads = false;
        for (int k = 0; k < sj->nproducers; k++) {
            int p = sj->producers[k];
            if (!reach[p]) continue;
            bool seen = false;
            if (nreduce(sj->tensor) > 0 ||
                !reads_at_axes(sj->tensor->body, sj->tensor, dag->stages[p].tensor, true,
                               &seen))
                return -1;
            reads = true;
        }
        if (!reads) continue;
        if (inlined_in(sk, j) && !sj->is_output) reach[j] = true;
        else if (!annotated_in(sk, j)) return -1;
        else if (sj->is_output) {
            if (tail >= 0 || sj->nconsumers > 0) return -1;
            tail = j;
        } else if (sj->nconsumers == 1) {
            reach[j] = true;
            between[(*nbetween)++] = j;
        } else
            return -1;
    }
    return tail;
}

int tune__sketch_fuse_epilogue(const tune_dag *dag, tune_sketch *sk, int u) {
    if (u < 0 || u >= sk->nunits) return 0;
    tune_sketch f = *sk;
    tune_unit *un = &f.units[u];
    if ((un->kind != TUNE_UNIT_TILE_CACHE && un->kind != TUNE_UNIT_TILE_CACHE_PACKED) ||
        un->consumer >= 0)
        return 0;
    int between[TUNE_MAX_STAGES], nb;
    int e = elementwise_tail(&f, dag, un->stage, between, &nb);
    if (e < 0) return 0;
    un->consumer = e;
    drop_unit_of(&f, e);
    for (int k = 0; k < nb; k++) {
        drop_unit_of(&f, between[k]);
        f.inlined[f.ninline++] = between[k];
    }
    int rc = rebuild_holes(&f, dag);
    if (rc) return rc;
    describe(&f, dag);
    *sk = f;
    return 1;
}

/* Rule "epilogue fusion" (Loom's own). Condition: a
 * register tile with an accumulator (TUNE_UNIT_TILE_CACHE or
 * TUNE_UNIT_TILE_CACHE_PACKED) of a stage whose every reader ends in one
 * annotated elementwise output through stages the sketch inlines or
 * annotates, each reading at exactly its own axes (elementwise_tail: a
 * bias or residual Add, Relu or Clip, gelu's Erf chain). Variant: the
 * same sketch with the tile's copy-out computed in the tail's loops, the
 * stage itself and the annotated stages between inlined
 * (tune__sketch_fuse_epilogue): the epilogue runs on the tile while it is
 * in registers, not as a second pass over the whole output (1.1-1.7x
 * on ResNet-50 and MobileNetV2 groups, bench/RESULTS.md session 31). The
 * unfused sketch stays beside it, so the rule only adds to the space.
 * The fused variant comes first, so that a cut by max keeps it. Appends it to next (or counts it in *lost
 * when next is full); 0, or a TUNE__CAP_ code. */
static int fuse_tail_variant(const partial *p, int tu, const tune_dag *dag, partial *next,
                             int *nnext, int *lost) {
    partial f = *p;
    int rc = tune__sketch_fuse_epilogue(dag, &f.sk, tu);
    if (rc < 0) return rc;
    if (rc == 0) return 0;
    if (*nnext < TUNE_MAX_PARTIAL_SKETCHES) next[(*nnext)++] = f;
    else (*lost)++;
    return 0;
}

int tune_generate_sketches_ex(te_ctx *ctx, const tune_workload *w, tune_sketch *sketches,
                              int max, int *dropped) {
    if (dropped) *dropped = 0;
    if (max < 1) return te_error(ctx, "autotune: no room for a sketch (max %d)", max);
    tune_dag dag;
    if (tune_dag_analyze(ctx, w->nouts, w->outs, &dag)) return tune__workload_error(ctx, w);
    enum { MAXP = TUNE_MAX_PARTIAL_SKETCHES };
    partial cur[MAXP], next[MAXP];
    int ncur = 1, lost = 0;
    memset(&cur[0], 0, sizeof cur[0]);
    for (int i = dag.nstages - 1; i >= 0; i--) {
        const tune_stage_info *si = &dag.stages[i];
        int nnext = 0;
        for (int c = 0; c < ncur; c++) {
            partial base = cur[c];
            tune_sketch *sk = &base.sk;
            if (si->is_placeholder) {
                next[nnext++] = base;
                continue;
            }
            /* A branchy inlinable stage (padding) read by one stage gets a
             * compute location instead: inlined, its select lands in the
             * consumer's innermost loop as masked loads (TVM does not count
             * such a stage as strictly inlinable either). */
            if (si->strictly_inlinable && si->nconsumers == 1 && has_branch(si->tensor->body)) {
                int rc = add_unit(sk, &dag, TUNE_UNIT_PLACE, i, si->consumers[0], 0);
                if (rc) return tune__cap_error(ctx, w, rc, "a sketch");
                next[nnext++] = base;
                continue;
            }
            if (si->strictly_inlinable) {
                sk->inlined[sk->ninline++] = i;
                next[nnext++] = base;
                continue;
            }
            int variants[4], nv = 0, consumer = -1, pack = -1, pack_dim = 0;
            int vaxis = -1, vinput = -1, vdim = 0;
            if (si->needs_tiling) {
                /* A single consumer, elementwise on this stage, left with
                 * annotations only: tiling with fusion. */
                if (si->nconsumers == 1) {
                    int cs = si->consumers[0];
                    bool annotated = false, seen = false;
                    for (int u = 0; u < sk->nunits; u++)
                        if (sk->units[u].stage == cs && sk->units[u].kind == TUNE_UNIT_ANNOTATE)
                            annotated = true;
                    const te_tensor *ct = dag.stages[cs].tensor;
                    if (annotated && nreduce(ct) == 0 &&
                        reads_exactly(ct->body, ct, si->tensor, &seen) && seen)
                        consumer = cs;
                }
                if (consumer >= 0) variants[nv++] = TUNE_UNIT_TILE_FUSE;
                else {
                    variants[nv++] = TUNE_UNIT_TILE;
                    if (!si->is_output || si->is_reduction) variants[nv++] = TUNE_UNIT_TILE_CACHE;
                }
                pack = pack_candidate(&dag, i, si->tensor->ndim - 1, &pack_dim);
                /* Vectors over another axis only when no input is walked
                 * along the last one (NCHW convolution: the image row).
                 * With an elementwise consumer too, beside tiling with
                 * fusion: the packed register tile is the one that reaches
                 * the default's speed on the CPU, and the consumer then
                 * runs as its own stage. */
                if (pack < 0 && (!si->is_output || si->is_reduction) &&
                    (vaxis = packed_vector_axis(&dag, i, &vinput, &vdim)) >= 0)
                    variants[nv++] = TUNE_UNIT_TILE_CACHE_PACKED;
                if (si->needs_rfactor) variants[nv++] = TUNE_UNIT_RFACTOR;
            } else {
                variants[nv++] = TUNE_UNIT_ANNOTATE;
                if (si->needs_rfactor) variants[nv++] = TUNE_UNIT_RFACTOR;
            }
            /* The rule of epilogue fusion (fuse_tail_variant): whether
             * this stage has an elementwise tail in this partial sketch
             * (the later stages are decided already). */
            int between[TUNE_MAX_STAGES], nbetween;
            bool tail = elementwise_tail(sk, &dag, i, between, &nbetween) >= 0;
            for (int v = 0; v < nv; v++) {
                bool packed = variants[v] == TUNE_UNIT_TILE_CACHE_PACKED;
                bool twin = pack >= 0 && !packed && variants[v] != TUNE_UNIT_RFACTOR;
                bool fusable = tail && (packed || variants[v] == TUNE_UNIT_TILE_CACHE);
                /* Past the cap the variant (and its packed and fused
                 * twins) is left out of the search: counted, so that the
                 * caller can say the space was cut (a lower bound: each
                 * would have grown into one or more sketches). */
                if (nnext >= MAXP) {
                    lost += (1 + twin) * (1 + fusable);
                    continue;
                }
                partial p = base;
                int cs = variants[v] == TUNE_UNIT_TILE_FUSE ? consumer : -1;
                if (cs >= 0) drop_unit_of(&p.sk, cs);
                int tu = p.sk.nunits;
                int rc = add_unit(&p.sk, &dag, variants[v], i, cs, packed ? vaxis : 0);
                if (!rc && cs >= 0) rc = rebuild_holes(&p.sk, &dag);
                if (!rc && packed) rc = add_unit(&p.sk, &dag, TUNE_UNIT_PACK, vinput, i, vdim);
                if (!rc && fusable) rc = fuse_tail_variant(&p, tu, &dag, next, &nnext, &lost);
                if (rc) return tune__cap_error(ctx, w, rc, "a sketch");
                if (nnext < MAXP) next[nnext++] = p;
                else lost++;
                /* The same tiling with the strided input packed: an extra
                 * variant, so a full sketch only loses it (counted). */
                if (twin) {
                    partial q = p;
                    if (add_unit(&q.sk, &dag, TUNE_UNIT_PACK, pack, i, pack_dim) != 0) {
                        lost += 1 + fusable;
                        continue;
                    }
                    if (fusable && (rc = fuse_tail_variant(&q, tu, &dag, next, &nnext, &lost)))
                        return tune__cap_error(ctx, w, rc, "a sketch");
                    if (nnext < MAXP) next[nnext++] = q;
                    else lost++;
                }
            }
        }
        memcpy(cur, next, sizeof(partial) * (size_t)nnext);
        ncur = nnext;
    }
    int n = ncur < max ? ncur : max;
    lost += ncur - n; /* by design: the first max sketches */
    for (int k = 0; k < n; k++) {
        sketches[k] = cur[k].sk;
        describe(&sketches[k], &dag);
    }
    if (n == 0) return te_error(ctx, "autotune: no sketch for the workload");
    if (dropped) *dropped = lost;
    return n;
}

int tune_generate_sketches(te_ctx *ctx, const tune_workload *w, tune_sketch *sketches, int max) {
    return tune_generate_sketches_ex(ctx, w, sketches, max, NULL);
}

/* Names a workload by its outputs, for messages. */
static void workload_name(const tune_workload *w, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < w->nouts && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", w->outs[i]->name);
}

int tune__cap_error(te_ctx *ctx, const tune_workload *w, int cap, const char *what) {
    char name[128];
    workload_name(w, name, sizeof name);
    if (cap == TUNE__CAP_UNITS)
        return te_error(ctx, "autotune: workload with outputs '%s' needs more than "
                             "TUNE_MAX_UNITS = %d units in %s",
                        name, TUNE_MAX_UNITS, what);
    return te_error(ctx, "autotune: workload with outputs '%s' needs more than "
                         "TUNE_MAX_HOLES = %d holes (or %d hole values) in %s",
                    name, TUNE_MAX_HOLES, TUNE_MAX_HOLES * 3, what);
}

int tune__workload_error(te_ctx *ctx, const tune_workload *w) {
    char name[128], msg[512];
    workload_name(w, name, sizeof name);
    const char *m = te_ctx_errmsg(ctx);
    if (!strncmp(m, "autotune: ", 10)) m += 10;
    snprintf(msg, sizeof msg, "%s", m);
    return te_error(ctx, "autotune: workload with outputs '%s': %s", name, msg);
}

