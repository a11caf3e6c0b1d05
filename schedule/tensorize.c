/*
 * schedule/tensorize.c — tensorize (TVM te tensorize): a stage's loop nest
 * from one leaf inwards replaced with a call of a tensor intrinsic.
 *
 * Each intrinsic is declared as a TE computation on its own small tiles
 * (the mma: c[i, j] = sum_k float32(a[i, k]) * float32(b[k, j]) on 16x16
 * tiles). Lowering a tensorized stage:
 *  1. matches the stage's body against the declaration, node by node:
 *     the same operations and types, the intrinsic's tensors standing for
 *     the stage's, its axes for the stage's root variables (one to one);
 *  2. maps each tensorized leaf to the root variable it steps and so to
 *     an intrinsic axis, with the intrinsic's extent;
 *  3. for each operand, finds its tile: the buffer indices with the
 *     tensorized leaves at 0 are the tile's first element, and each index
 *     must step by exactly one tensorized leaf (or none) — that gives the
 *     tile's row and column dimensions, hence its layout and row stride;
 *  4. checks the intrinsic's rules (scopes, fragment grid, 16-byte row
 *     strides, 32-byte aligned tiles) and builds the TENSOR_CALL; a
 *     reduction's init becomes the intrinsic's fill.
 * Every refusal names the stage, the intrinsic and the rule.
 */
#include <string.h>

#include "schedule/lower_internal.h"

#define MAXOP 3

typedef enum {
    IN_MMA,
    IN_LOAD_A,
    IN_LOAD_B,
    IN_STORE,
    IN_WG_MMA,
    IN_WG_STORE,
    IN_X86_DPBF16
} intrin_kind;

static const struct {
    const char *name;
    intrin_kind kind;
} intrinsics[] = {
    {"wmma.mma", IN_MMA},
    {"wmma.load_a", IN_LOAD_A},
    {"wmma.load_b", IN_LOAD_B},
    {"wmma.store", IN_STORE},
    {"wgmma.mma", IN_WG_MMA},
    {"wgmma.store", IN_WG_STORE},
    {"x86.dpbf16", IN_X86_DPBF16},
};
#define NINTRIN ((int)(sizeof intrinsics / sizeof intrinsics[0]))

bool sch__tensor_intrin_known(const char *name) {
    for (int i = 0; name && i < NINTRIN; i++)
        if (!strcmp(name, intrinsics[i].name)) return true;
    return false;
}

const char *sch__tensor_intrin_list(void) {
    return "wmma.mma, wmma.load_a, wmma.load_b, wmma.store, wgmma.mma, wgmma.store, x86.dpbf16";
}

/* ---- declarations ---- */

/* One declaration: the output's body over its axes, the tensors it reads
 * in operand order (after the output), the extents of its axes (data
 * parallel ones, then the reduce axis). */
typedef struct {
    te_tensor *out;
    int nin;
    te_tensor *in[2];
    int naxes;
    te_expr *axes[3];
} decl;

/* The declaration of kind k for element type t (the operands' type);
 * out: the output's type (a store may round the float32 sums to
 * float16); n: a wgmma tile's width (WMMA's is 16). */
static int declare(te_ctx *ctx, intrin_kind k, te_dtype t, te_dtype out, int64_t n, decl *d) {
    memset(d, 0, sizeof *d);
    int64_t kk = tir_wmma_k(t);
    int64_t m = 16;
    te_dtype f32 = TE_FLOAT32;
    te_expr *i, *j;
    if (k == IN_WG_MMA) k = IN_MMA, m = 64;
    else if (k == IN_WG_STORE) k = IN_STORE, m = 64;
    else n = 16;
    switch (k) {
    case IN_MMA: {
        te_tensor *a = te_placeholder(ctx, "a", t, TE_SHAPE(m, kk));
        te_tensor *b = te_placeholder(ctx, "b", t, TE_SHAPE(kk, n));
        i = te_axis(ctx, "i", m);
        j = te_axis(ctx, "j", n);
        te_expr *r = te_reduce_axis(ctx, "k", kk);
        if (!a || !b || !i || !j || !r) return -1;
        te_expr *x = te_read(a, i, r), *y = te_read(b, r, j);
        if (t.bits != 32) {
            x = te_cast(f32, x);
            y = te_cast(f32, y);
        }
        d->out = te_compute(ctx, "c", TE_AXES(i, j), te_sum(te_mul(x, y), r));
        d->nin = 2;
        d->in[0] = a;
        d->in[1] = b;
        d->naxes = 3;
        d->axes[2] = r;
        break;
    }
    case IN_LOAD_A:
    case IN_LOAD_B:
    case IN_STORE: {
        int64_t rows = k == IN_LOAD_B ? kk : m, cols = k == IN_LOAD_A ? kk : n;
        te_tensor *src = te_placeholder(ctx, "src", k == IN_STORE ? f32 : t, TE_SHAPE(rows, cols));
        i = te_axis(ctx, "i", rows);
        j = te_axis(ctx, "j", cols);
        if (!src || !i || !j) return -1;
        te_expr *v = te_read(src, i, j);
        if (k == IN_STORE && !te_dtype_eq(out, f32)) v = te_cast(out, v);
        d->out = te_compute(ctx, "c", TE_AXES(i, j), v);
        d->nin = 1;
        d->in[0] = src;
        d->naxes = 2;
        break;
    }
    default: break;
    }
    if (!d->out) return -1;
    d->axes[0] = i;
    d->axes[1] = j;
    return 0;
}

/* ---- matching a body against a declaration ---- */

typedef struct {
    int nv;
    const te_expr *pv[8], *ev[8]; /* intrinsic axis -> stage root var */
    int nt;
    const te_tensor *pt[4], *et[4]; /* intrinsic tensor -> stage tensor */
    const te_expr *reads[4];        /* the stage's read of each intrinsic tensor */
    /* Reads match whatever their indices (x86.dpbf16, whose b is read
     * through a packed copy's rewritten indices): the tiles' analysis
     * checks how each index steps. */
    bool loose_reads;
} match_map;

static bool pair(const void **ps, const void **es, int *n, int cap, const void *p, const void *e) {
    for (int i = 0; i < *n; i++) {
        if (ps[i] == p) return es[i] == e;
        if (es[i] == e) return false; /* one to one */
    }
    if (*n == cap) return false;
    ps[*n] = p;
    es[(*n)++] = e;
    return true;
}

typedef struct {
    int n;
    const te_expr *c[8];
} kids;

static void kid(const te_expr *c, void *user) {
    kids *k = user;
    if (k->n < 8) k->c[k->n] = c;
    k->n++;
}

static bool match(const te_expr *p, const te_expr *e, match_map *m) {
    if (!p || !e) return p == e;
    if (p->kind != e->kind || !te_dtype_eq(p->dtype, e->dtype)) return false;
    switch (p->kind) {
    case TE_VAR: return pair((const void **)m->pv, (const void **)m->ev, &m->nv, 8, p, e);
    case TE_INT_IMM: return p->u.ival == e->u.ival;
    case TE_FLOAT_IMM: return p->u.fval == e->u.fval;
    case TE_CALL:
        if (p->u.call.op != e->u.call.op) return false;
        break;
    case TE_READ: {
        const te_tensor *pt = p->u.read.tensor, *et = e->u.read.tensor;
        if ((!m->loose_reads && p->u.read.ndim != e->u.read.ndim) ||
            !pair((const void **)m->pt, (const void **)m->et, &m->nt, 4, pt, et))
            return false;
        for (int i = 0; i < m->nt; i++)
            if (m->pt[i] == pt) m->reads[i] = e;
        if (m->loose_reads) return true;
        break;
    }
    case TE_REDUCE:
        if (p->u.reduce.op != e->u.reduce.op || p->u.reduce.naxes != e->u.reduce.naxes)
            return false;
        for (int a = 0; a < p->u.reduce.naxes; a++)
            if (!pair((const void **)m->pv, (const void **)m->ev, &m->nv, 8, p->u.reduce.axes[a],
                      e->u.reduce.axes[a]))
                return false;
        return match(p->u.reduce.source, e->u.reduce.source, m);
    default: break;
    }
    kids a = {0}, b = {0};
    te_expr_visit_children(p, kid, &a);
    te_expr_visit_children(e, kid, &b);
    if (a.n != b.n || a.n > 8) return false;
    for (int i = 0; i < a.n; i++)
        if (!match(a.c[i], b.c[i], m)) return false;
    return true;
}

/* ---- lowering ---- */

typedef struct {
    lower_state *L;
    const sch_stage *g;
    const char *name; /* the intrinsic */
    int pos;          /* first tensorized leaf */
    te_expr *zero_vars[8], *zeros[8];
    int nzero;
} tz_ctx;

static int refuse(tz_ctx *z, const char *fmt, const char *detail) {
    return te_error(z->L->ctx, "tensorize: stage '%s' at axis '%s' (%s): %s%s", z->g->op->name,
                    z->g->leaf[z->pos]->u.var.name, z->name, fmt, detail ? detail : "");
}

/* One operand's tile: its first element, layout and row stride. axes_rc:
 * the stage root vars standing for the tile's row and column (NULL for a
 * dimension the intrinsic does not step, impossible here). */
typedef struct {
    tir_buffer *buf;
    te_expr *start[TE_MAX_DIMS];
    int drow, dcol; /* buffer dimensions of the tile's rows and columns */
} tile;

/* The leaf each index dimension steps by, from index idx. -1 none, -2
 * not a single tensorized leaf with coefficient 1. */
static int stepping_leaf(tz_ctx *z, te_expr *idx, te_expr *start) {
    te_analyzer *an = z->L->an;
    te_expr *delta = te_analyzer_simplify(an, te_sub(idx, start));
    int64_t c;
    if (te_is_const_int(delta, &c) && c == 0) return -1;
    for (int i = 0; i < z->nzero; i++)
        if (delta == z->zero_vars[i] || te_expr_equal(delta, z->zero_vars[i])) return i;
    return -2;
}

/* Fills t from a buffer access (buffer, indices); rows/cols: the
 * tensorized leaf (index in zero_vars) that steps the tile's rows and
 * columns (row_leaf -1: a tile of one row, t->drow stays -1). */
static int make_tile(tz_ctx *z, const char *what, tir_buffer *b, int ndim, te_expr *const *idx,
                     int row_leaf, int col_leaf, tile *t) {
    te_ctx *ctx = z->L->ctx;
    t->buf = b;
    t->drow = t->dcol = -1;
    for (int d = 0; d < ndim; d++) {
        t->start[d] = te_analyzer_simplify(
            z->L->an, te_substitute(ctx, idx[d], z->nzero, z->zero_vars, z->zeros));
        int l = stepping_leaf(z, idx[d], t->start[d]);
        if (l == -1) continue;
        if (l == row_leaf && t->drow < 0) t->drow = d;
        else if (l == col_leaf && t->dcol < 0) t->dcol = d;
        else
            return refuse(z, te_sprintf(ctx, "%s '%s' is indexed in dimension %d by ", what,
                                        b->name, d),
                          te_sprintf(ctx, "'%s', which does not step one row or column of the "
                                          "tile by one element",
                                     te_expr_str(ctx, idx[d])));
    }
    if ((row_leaf >= 0 && t->drow < 0) || t->dcol < 0)
        return refuse(z, te_sprintf(ctx, "%s '%s' does not span the tile's rows and columns", what,
                                    b->name),
                      NULL);
    return 0;
}

static bool multiple(te_analyzer *an, te_expr *e, int64_t m) {
    int64_t coeff, base;
    te_analyzer_modular(an, e, &coeff, &base);
    return coeff % m == 0 && base % m == 0;
}

/* A fragment operand: a 2-D buffer of the fragment scope, indexed [row,
 * column] on the grid of tr x tc tiles. */
static int check_fragment(tz_ctx *z, const tile *t, tir_scope scope, int64_t tr, int64_t tc) {
    te_ctx *ctx = z->L->ctx;
    const tir_buffer *b = t->buf;
    if (b->scope != scope)
        return refuse(z, te_sprintf(ctx, "'%s' is in scope %s; this operand must be in scope ",
                                    b->name, tir_scope_name(b->scope)),
                      tir_scope_name(scope));
    if (b->ndim != 2 || t->drow != 0 || t->dcol != 1)
        return refuse(z, te_sprintf(ctx, "fragment '%s' must be a 2-D tensor indexed [row, column]",
                                    b->name),
                      NULL);
    if (b->shape[0] % tr || b->shape[1] % tc)
        return refuse(z, te_sprintf(ctx, "fragment '%s' of shape %lldx%lld is not a grid of ",
                                    b->name, (long long)b->shape[0], (long long)b->shape[1]),
                      te_sprintf(ctx, "%lldx%lld tiles", (long long)tr, (long long)tc));
    if (!multiple(z->L->an, t->start[0], tr) || !multiple(z->L->an, t->start[1], tc))
        return refuse(z, te_sprintf(ctx, "the tile of fragment '%s' at (%s, %s) does not start on ",
                                    b->name, te_expr_str(ctx, t->start[0]),
                                    te_expr_str(ctx, t->start[1])),
                      te_sprintf(ctx, "its grid of %lldx%lld tiles", (long long)tr, (long long)tc));
    return 0;
}

/* A memory operand (global or shared): contiguous rows or columns, a row
 * stride of 16 bytes' multiple, a first element 32-byte aligned. */
static int check_memory(tz_ctx *z, const tile *t, int64_t *ld, bool *col_major) {
    te_ctx *ctx = z->L->ctx;
    const tir_buffer *b = t->buf;
    if (b->scope != TIR_SCOPE_GLOBAL && b->scope != TIR_SCOPE_SHARED)
        return refuse(z, te_sprintf(ctx, "'%s' is in scope %s; this operand must be in global or ",
                                    b->name, tir_scope_name(b->scope)),
                      "shared memory");
    if (b->swizzle)
        return refuse(z, te_sprintf(ctx, "'%s' is swizzled; WMMA reads tiles of plain rows ",
                                    b->name),
                      "(the swizzled layout is wgmma's)");
    int64_t sr = b->strides[t->drow], sc = b->strides[t->dcol];
    if (sc == 1) {
        *ld = sr;
        *col_major = false;
    } else if (sr == 1) {
        *ld = sc;
        *col_major = true;
    } else {
        return refuse(z, te_sprintf(ctx, "the tile of '%s' has neither contiguous rows nor columns",
                                    b->name),
                      NULL);
    }
    int bytes = te_dtype_bytes(b->dtype);
    if ((*ld * bytes) % 16)
        return refuse(z, te_sprintf(ctx, "the row stride of '%s' is %lld elements (%lld bytes); ",
                                    b->name, (long long)*ld, (long long)(*ld * bytes)),
                      "WMMA needs a multiple of 16 bytes (storage_align can pad it)");
    te_expr *off = NULL;
    for (int d = 0; d < b->ndim; d++) {
        te_expr *x = te_mul(t->start[d], te_int(ctx, b->strides[d]));
        off = off ? te_add(off, x) : x;
    }
    if (!off || !multiple(z->L->an, off, 32 / bytes))
        return refuse(z, te_sprintf(ctx, "the tile of '%s' starting at element %s is not ", b->name,
                                    off ? te_expr_str(ctx, off) : "?"),
                      "32-byte aligned, as WMMA needs");
    return 0;
}

/* ---- wgmma's rules ---- */

/* The extent of the first loop from pos inwards that steps the output's
 * columns (a wgmma tile's n), or -1. */
static int64_t wg_width(lower_state *L, int st, int pos) {
    const sch_stage *g = &L->s->stages[st];
    if (g->op->ndim != 2) return -1;
    te_expr *col = sch__lower_value(L, st, g->op->axes[1]);
    for (int l = pos; col && l < g->nleaf; l++)
        if (te_expr_uses_var(col, g->leaf[l])) return sch__lower_ext(L, st, g->leaf[l]);
    return -1;
}

/* A wgmma accumulator tile: 64 rows of the whole width n, on the grid. */
static int check_wg_acc(tz_ctx *z, const tile *t, int64_t n) {
    te_ctx *ctx = z->L->ctx;
    const tir_buffer *b = t->buf;
    if (check_fragment(z, t, TIR_SCOPE_WGMMA_ACC, 64, n)) return -1;
    if (b->shape[1] != n)
        return refuse(z, te_sprintf(ctx, "accumulator '%s' is %lld columns wide and the tile %lld; ",
                                    b->name, (long long)b->shape[1], (long long)n),
                      "a wgmma tile spans the accumulator's whole width");
    return 0;
}

/* A wgmma operand in shared memory: swizzled, its tile inside the 128-byte
 * panels as the descriptor describes it. The tile spans m (a) or n (b)
 * and k; whichever runs along the stored 128-byte rows is the operand's
 * major (PTX ISA, "shared memory matrix layout"): k-major, the rows along
 * k (a [m, k], b [n, k] stored as they are, or a transposed copy of the
 * other order: sch_swizzle_transposed), or mn-major (wgmma's transpose
 * bit; 16-bit types only). kdim: the buffer dimension k steps. ld: the
 * descriptor's leading byte offset (mn-major: from one 128-byte panel of
 * m or n to the next; unused by a swizzled k-major operand). */
static int check_wg_operand(tz_ctx *z, const tile *t, const char *which, int kdim, int64_t *ld,
                            bool *mn_major) {
    te_ctx *ctx = z->L->ctx;
    const tir_buffer *b = t->buf;
    if (b->scope != TIR_SCOPE_SHARED || !b->swizzle)
        return refuse(z, te_sprintf(ctx, "operand %s '%s' is %s memory%s; wgmma reads its ", which,
                                    b->name, tir_scope_name(b->scope),
                                    b->scope == TIR_SCOPE_SHARED ? " not swizzled" : ""),
                      "operands from shared memory in the swizzled layout (sch_swizzle)");
    if (b->ndim != 2)
        return refuse(z, te_sprintf(ctx, "operand %s '%s' must be a 2-D tile", which, b->name),
                      NULL);
    int bytes = te_dtype_bytes(b->dtype), mndim = 1 - kdim;
    int cont = b->swizzle == TIR_SWIZZLE_COLS ? 0 : 1; /* along the stored rows */
    const char *mn = which[0] == 'a' ? "m" : "n";
    *mn_major = cont == mndim;
    if (*mn_major && bytes == 4)
        return refuse(z, te_sprintf(ctx, "operand %s '%s' is stored %s-major; tf32's wgmma reads ",
                                    which, b->name, mn),
                      "both operands k-major, its rows along k (sch_swizzle_transposed stores an "
                      "[k, m] or [k, n] copy so)");
    int64_t w = 128 / bytes;
    if (!*mn_major) {
        /* rows of 128 bytes along k, in core matrices of 8 rows; a k step
         * of 32 bytes inside one panel */
        if (!multiple(z->L->an, t->start[mndim], 8))
            return refuse(z, te_sprintf(ctx, "the tile of operand %s '%s' starts at %s %s; ",
                                        which, b->name, mn, te_expr_str(ctx, t->start[mndim])),
                          "wgmma's core matrices need a multiple of 8");
        if (!multiple(z->L->an, t->start[kdim], 32 / bytes))
            return refuse(z, te_sprintf(ctx, "the tile of operand %s '%s' starts at k %s; ", which,
                                        b->name, te_expr_str(ctx, t->start[kdim])),
                          te_sprintf(ctx, "a k step starts on a multiple of %d", 32 / bytes));
        *ld = 16;
        return 0;
    }
    /* the m or n of the tile across whole panels, one after another;
     * k rows in core matrices of 8 */
    if (!multiple(z->L->an, t->start[kdim], 8))
        return refuse(z, te_sprintf(ctx, "the tile of operand %s '%s' starts at k %s; ", which,
                                    b->name, te_expr_str(ctx, t->start[kdim])),
                      "wgmma's core matrices need a multiple of 8");
    if (!multiple(z->L->an, t->start[mndim], w))
        return refuse(z, te_sprintf(ctx, "the tile of operand %s '%s' starts at %s %s; ", which,
                                    b->name, mn, te_expr_str(ctx, t->start[mndim])),
                      te_sprintf(ctx, "it starts on a 128-byte panel (a multiple of %lld)",
                                 (long long)w));
    *ld = b->shape[kdim] * 128;
    return 0;
}

/* The memory tile wgmma.store writes: row-major, pairs of elements
 * aligned (each thread stores two neighbours at once). */
static int check_wg_store(tz_ctx *z, const tile *t, int64_t *ld) {
    te_ctx *ctx = z->L->ctx;
    const tir_buffer *b = t->buf;
    if (b->scope != TIR_SCOPE_GLOBAL && b->scope != TIR_SCOPE_SHARED)
        return refuse(z, te_sprintf(ctx, "'%s' is in scope %s; wgmma.store writes global or ",
                                    b->name, tir_scope_name(b->scope)),
                      "shared memory");
    if (b->strides[t->dcol] != 1 || b->swizzle)
        return refuse(z, te_sprintf(ctx, "the tile of '%s' does not have contiguous rows; ", b->name),
                      "wgmma.store writes row-major tiles");
    *ld = b->strides[t->drow];
    te_expr *off = NULL;
    for (int d = 0; d < b->ndim; d++) {
        te_expr *x = te_mul(t->start[d], te_int(ctx, b->strides[d]));
        off = off ? te_add(off, x) : x;
    }
    if (*ld % 2 || !off || !multiple(z->L->an, off, 2))
        return refuse(z, te_sprintf(ctx, "the tile of '%s' (row stride %lld) is not ", b->name,
                                    (long long)*ld),
                      "aligned to pairs of elements, which wgmma.store writes at once");
    return 0;
}

static te_expr *first_element(tz_ctx *z, const tile *t) {
    return tir_buffer_load(t->buf, t->buf->ndim, t->start);
}

/* ---- x86.dpbf16: AVX512-BF16's VDPBF16PS on the CPU ---- */

/* A tile of the x86 call: in global or local memory, its columns (c's
 * lanes, a's pair, b's lanes) `col` elements apart and, for b (a tile
 * with rows), its rows (the pair) `row` apart. */
static int check_x86_tile(tz_ctx *z, const tile *t, const char *what, int64_t row, int64_t col) {
    te_ctx *ctx = z->L->ctx;
    const tir_buffer *b = t->buf;
    if (b->scope != TIR_SCOPE_GLOBAL && b->scope != TIR_SCOPE_LOCAL)
        return refuse(z, te_sprintf(ctx, "%s '%s' is in scope %s; x86.dpbf16 reads and writes ",
                                    what, b->name, tir_scope_name(b->scope)),
                      "global or local memory");
    int64_t sc = b->strides[t->dcol];
    if (t->drow < 0 && sc != col)
        return refuse(z, te_sprintf(ctx, "%s '%s' has stride %lld along its %s; ", what, b->name,
                                    (long long)sc, strcmp(what, "output") ? "pair" : "lanes"),
                      te_sprintf(ctx, "x86.dpbf16 needs %lld (contiguous)", (long long)col));
    if (t->drow >= 0 && (sc != col || b->strides[t->drow] != row))
        return refuse(z, te_sprintf(ctx, "%s '%s' has strides %lld along the lanes and %lld "
                                         "within a pair; ",
                                    what, b->name, (long long)sc,
                                    (long long)b->strides[t->drow]),
                      te_sprintf(ctx, "x86.dpbf16 needs %lld and %lld (pack the operand by 16 on "
                                      "its columns, then by 2 on its rows: the VNNI layout)",
                                 (long long)col, (long long)row));
    return 0;
}

/* Lowers a stage tensorized with x86.dpbf16: the declaration c[0, j] =
 * sum over k < 2 of float32(a[0, k]) * float32(b[k, j]), j < 16, matched
 * on a float32 sum over one axis of bfloat16 products (the reads' indices
 * free: b is read through its packed copy); j is the output's last axis.
 * The two tensorized loops step j (16) and k (2), in either order, and
 * the stage's other loops (the row among them) stay outside. The tiles
 * then fix the layouts: c's lanes and a's pair contiguous, b's pair
 * contiguous and its lanes 2 apart. The init (a sum's zero) becomes a
 * 16-lane vector store. Bounds guards of the other dimensions (a tail of
 * rows) wrap the call and the init. */
static int lower_x86_dpbf16(tz_ctx *z, int st, te_expr *const *store_idx, int nsub,
                            te_expr **vars, te_expr **vals, sch_tensorized *out) {
    lower_state *L = z->L;
    te_ctx *ctx = L->ctx;
    const sch_stage *g = z->g;
    lower_stage *ls = &L->ls[st];
    te_dtype bf = TE_BFLOAT16, f32 = TE_FLOAT32;
    if (L->gpu)
        return refuse(z, "an x86 CPU instruction; the cuda target cannot run it (tensorize with ",
                      "wmma.mma or wgmma.mma)");
    if (!te_dtype_eq(g->op->dtype, f32))
        return refuse(z, te_sprintf(ctx, "the stage is %s; x86.dpbf16 sums in float32",
                                    te_dtype_str(g->op->dtype)),
                      NULL);
    te_tensor *a = te_placeholder(ctx, "a", bf, TE_SHAPE(1, 2));
    te_tensor *b = te_placeholder(ctx, "b", bf, TE_SHAPE(2, 16));
    te_expr *i = te_axis(ctx, "i", 1), *j = te_axis(ctx, "j", 16), *k = te_reduce_axis(ctx, "k", 2);
    if (!a || !b || !i || !j || !k) return -1;
    te_expr *prod = te_mul(te_cast(f32, te_read(a, i, k)), te_cast(f32, te_read(b, k, j)));
    te_tensor *c = te_compute(ctx, "c", TE_AXES(i, j), te_sum(prod, k));
    if (!c) return -1;
    match_map m = {.loose_reads = true};
    if (!match(c->body, ls->body, &m) || m.nt != 2)
        return refuse(z, te_sprintf(ctx, "its computation %s does not match the intrinsic's ",
                                    te_expr_str(ctx, ls->body)),
                      te_expr_str(ctx, c->body));
    /* the lanes: the output's last axis; the pair: the reduction's axis
     * (the tiles below check that the reads step by them as declared) */
    int n = g->op->ndim;
    const te_expr *root_j = n >= 2 ? g->op->axes[n - 1] : NULL, *root_k = NULL;
    for (int v = 0; v < m.nv; v++)
        if (m.pv[v] == k) root_k = m.ev[v];
    if (!root_j || !root_k)
        return refuse(z, "the output must have a row and a column axis, summed over one axis",
                      NULL);
    /* the two tensorized loops: j's 16 lanes and k's pair */
    if (g->nleaf - z->pos != 2)
        return refuse(z, te_sprintf(ctx, "%d loops from this axis inwards; ", g->nleaf - z->pos),
                      "x86.dpbf16 takes 2 (16 lanes and a pair of the reduction)");
    te_expr *vj = sch__lower_value(L, st, (te_expr *)root_j);
    te_expr *vk = sch__lower_value(L, st, (te_expr *)root_k);
    int leaf_j = -1, leaf_k = -1;
    for (int l = 0; l < 2; l++) {
        te_expr *lv = g->leaf[z->pos + l];
        bool sj = vj && te_expr_uses_var(vj, lv), sk = vk && te_expr_uses_var(vk, lv);
        int64_t ext = sch__lower_ext(L, st, lv), want = sj ? 16 : 2;
        if (sj == sk)
            return refuse(z, te_sprintf(ctx, "loop '%s' steps ", lv->u.var.name),
                          sj ? "both the lanes and the reduction (a fused loop)"
                             : "neither the output's last axis nor the reduction");
        if (ext != want)
            return refuse(z, te_sprintf(ctx, "loop '%s' has extent %lld; ", lv->u.var.name,
                                        (long long)ext),
                          sj ? "the lanes need 16" : "the reduction's pair needs 2");
        if ((sj && leaf_j >= 0) || (sk && leaf_k >= 0))
            return refuse(z, "two loops step the same tile dimension", NULL);
        *(sj ? &leaf_j : &leaf_k) = l;
        z->zero_vars[z->nzero] = lv;
        z->zeros[z->nzero++] = te_int(ctx, 0);
        for (int s2 = 0; s2 < L->s->nstages; s2++)
            if (L->s->stages[s2].attach == SCH_ATTACH_AT && L->s->stages[s2].attach_stage == st &&
                L->s->stages[s2].attach_iter == lv)
                return refuse(z, te_sprintf(ctx, "stage '%s' is computed at tensorized loop '%s'",
                                            L->s->stages[s2].op->name, lv->u.var.name),
                              NULL);
    }
    /* bounds guards: none on the lanes or the pair (a tile is whole);
     * those of the other dimensions (a tail of rows) wrap the call */
    bool guarded[TE_MAX_DIMS + 8] = {false};
    for (int d = 0; d < g->nroot && d < TE_MAX_DIMS + 8; d++) {
        tir_stmt *marker = tir_noop(ctx);
        if (sch__lower_guards(L, st, d, d + 1, marker) == marker) continue;
        if (g->root[d] == root_j || g->root[d] == root_k)
            return refuse(z, te_sprintf(ctx, "the tiles do not divide the extent of '%s' (the "
                                             "nest needs bounds guards there); ",
                                        g->root[d]->u.var.name),
                          "choose split factors that divide it");
        guarded[d] = true;
    }
    /* the tiles: c's 16 lanes, a's pair, b's 16 pairs */
    tile tiles[3];
    if (make_tile(z, "output", ls->buf, n, store_idx, -1, leaf_j, &tiles[0])) return -1;
    const te_tensor *decl_in[2] = {a, b};
    for (int q = 0; q < 2; q++) {
        const te_expr *rd = NULL;
        for (int t = 0; t < m.nt; t++)
            if (m.pt[t] == decl_in[q]) rd = m.reads[t];
        te_expr *ld = rd ? sch__lower_reads(L, nsub, vars, vals, (te_expr *)rd) : NULL;
        if (!ld || ld->kind != TE_BUFFER_LOAD) return -1;
        if (make_tile(z, "input", ld->u.bload.buffer, ld->u.bload.ndim, ld->u.bload.indices,
                      q ? leaf_k : -1, q ? leaf_j : leaf_k, &tiles[1 + q]))
            return -1;
    }
    if (check_x86_tile(z, &tiles[0], "output", 0, 1) ||
        check_x86_tile(z, &tiles[1], "operand a", 0, 1) ||
        check_x86_tile(z, &tiles[2], "operand b", 1, 2))
        return -1;
    te_expr *args[3];
    for (int q = 0; q < 3; q++)
        if (!(args[q] = first_element(z, &tiles[q]))) return -1;
    tir_stmt *call = tir_tensor_call(ctx, TIR_X86_DPBF16, 3, args, NULL, NULL);
    /* the sums' zero: the 16 lanes stored at once */
    te_expr *lanes = g->leaf[z->pos + leaf_j];
    tir_stmt *zero = tir_buffer_store(ctx, ls->buf, n, store_idx, te_float(ctx, 0.0));
    tir_stmt *init = zero ? tir_for(ctx, lanes, te_int(ctx, 0), te_int(ctx, 16),
                                    TIR_FOR_VECTORIZED, zero)
                          : NULL;
    for (int d = 0; d < g->nroot && d < TE_MAX_DIMS + 8 && call && init; d++) {
        if (!guarded[d]) continue;
        call = sch__lower_guards(L, st, d, d + 1, call);
        if (d < n) init = sch__lower_guards(L, st, d, d + 1, init);
    }
    out->call = call;
    out->init = init;
    return call && init ? 0 : -1;
}

int sch__lower_tensorize(lower_state *L, int st, int pos, const char *name,
                         te_expr *const *store_idx, int nsub, te_expr **vars, te_expr **vals,
                         sch_tensorized *out) {
    te_ctx *ctx = L->ctx;
    const sch_stage *g = &L->s->stages[st];
    lower_stage *ls = &L->ls[st];
    tz_ctx z = {.L = L, .g = g, .name = name, .pos = pos};
    intrin_kind wkind = IN_MMA;
    bool known = false;
    for (int i = 0; i < NINTRIN; i++)
        if (!strcmp(name, intrinsics[i].name)) wkind = intrinsics[i].kind, known = true;
    if (!known) return refuse(&z, "unknown intrinsic", NULL);
    if (wkind == IN_X86_DPBF16) return lower_x86_dpbf16(&z, st, store_idx, nsub, vars, vals, out);
    /* wgmma's calls match as WMMA's of 64-row tiles; `kind` is the form */
    bool wg = wkind == IN_WG_MMA || wkind == IN_WG_STORE;
    intrin_kind kind = wkind == IN_WG_MMA ? IN_MMA : wkind == IN_WG_STORE ? IN_STORE : wkind;
    int64_t width = 16;
    if (wg && (width = wg_width(L, st, pos)) < 0)
        return refuse(&z, "no loop from this axis inwards steps the output's columns", NULL);

    /* 1. the declaration for the operands' element type, and the match */
    te_expr *body = ls->body;
    te_dtype t = g->op->dtype;
    if (kind == IN_MMA) {
        const te_expr *src = body->kind == TE_REDUCE ? body->u.reduce.source : NULL;
        while (src && src->kind != TE_READ) {
            kids k = {0};
            te_expr_visit_children(src, kid, &k);
            src = k.n ? k.c[0] : NULL;
        }
        if (!src)
            return refuse(&z, "the stage is not a sum of products of two tensors", NULL);
        t = src->u.read.tensor->dtype;
    } else if (kind == IN_STORE) {
        t = TE_FLOAT32;
    }
    if (!(t.code == TE_FLOAT && t.bits == 32) && !(t.bits == 16 && te_dtype_is_float(t)))
        return refuse(&z, te_sprintf(ctx, "element type %s; WMMA takes float16, bfloat16 and ",
                                     te_dtype_str(t)),
                      "float32 (as tf32)");
    if (wg && (width < 8 || width > 256 || width % 8))
        return refuse(&z, te_sprintf(ctx, "the tile is %lld columns wide; ", (long long)width),
                      "wgmma's n is a multiple of 8 from 8 to 256");
    te_dtype out_t = g->op->dtype;
    if (kind == IN_STORE && !te_dtype_eq(out_t, TE_FLOAT32) && !te_dtype_is_half(out_t))
        return refuse(&z, te_sprintf(ctx, "the output is %s; WMMA stores float32, or float16 or ",
                                     te_dtype_str(out_t)),
                      "bfloat16 rounded from the float32 sums");
    decl d;
    if (declare(ctx, wkind, t, out_t, width, &d)) return -1;
    /* wgmma reads its operands in either order of their dimensions (a
     * [m, k] or [k, m], b [k, n] or [n, k]): its reads match whatever
     * their indices, and the tiles below check that each index steps
     * one tile dimension; the other axes are then the output's own */
    match_map m = {.loose_reads = wkind == IN_WG_MMA};
    if (!match(d.out->body, body, &m) || m.nt != d.nin)
        return refuse(&z, te_sprintf(ctx, "its computation %s does not match the intrinsic's ",
                                     te_expr_str(ctx, body)),
                      te_expr_str(ctx, d.out->body));
    /* the output's indices are the declaration's axes in order */
    const te_expr *root_of_axis[3];
    for (int a = 0; a < d.naxes; a++) {
        root_of_axis[a] = NULL;
        for (int v = 0; v < m.nv; v++)
            if (m.pv[v] == d.axes[a]) root_of_axis[a] = m.ev[v];
        if (!root_of_axis[a] && m.loose_reads && a < 2 && a < g->op->ndim)
            root_of_axis[a] = g->op->axes[a];
        if (!root_of_axis[a])
            return refuse(&z, "the intrinsic's axes do not all appear in the computation", NULL);
    }
    if (root_of_axis[0] != g->op->axes[0] || root_of_axis[1] != g->op->axes[1] ||
        g->op->ndim != 2)
        return refuse(&z, "the output must be a 2-D tensor indexed by its own axes [row, column]",
                      NULL);

    /* 2. the tensorized leaves, one per intrinsic axis, of its extent */
    int nt = g->nleaf - pos;
    if (nt != d.naxes)
        return refuse(&z, te_sprintf(ctx, "%d loops from this axis inwards; the intrinsic takes ",
                                     nt),
                      te_sprintf(ctx, "%d (one per tile dimension)", d.naxes));
    int leaf_axis[3];
    te_expr *root_val[3];
    for (int a = 0; a < d.naxes; a++) root_val[a] = sch__lower_value(L, st, (te_expr *)root_of_axis[a]);
    for (int l = 0; l < nt; l++) {
        te_expr *lv = g->leaf[pos + l];
        leaf_axis[l] = -1;
        for (int a = 0; a < d.naxes; a++) {
            if (root_val[a] && te_expr_uses_var(root_val[a], lv)) {
                if (leaf_axis[l] >= 0)
                    return refuse(&z, te_sprintf(ctx, "loop '%s' steps more than one tile ",
                                                 lv->u.var.name),
                                  "dimension (a fused loop)");
                leaf_axis[l] = a;
            }
        }
        if (leaf_axis[l] < 0)
            return refuse(&z, te_sprintf(ctx, "loop '%s' steps no dimension of the intrinsic",
                                         lv->u.var.name),
                          NULL);
        int64_t ext = sch__lower_ext(L, st, lv), want = d.axes[leaf_axis[l]]->u.var.extent;
        if (ext != want)
            return refuse(&z, te_sprintf(ctx, "loop '%s' has extent %lld; the intrinsic's ",
                                         lv->u.var.name, (long long)ext),
                          te_sprintf(ctx, "dimension %s needs %lld", d.axes[leaf_axis[l]]->u.var.name,
                                     (long long)want));
        for (int q = 0; q < l; q++)
            if (leaf_axis[q] == leaf_axis[l])
                return refuse(&z, "two loops step the same tile dimension", NULL);
        z.zero_vars[z.nzero] = lv;
        z.zeros[z.nzero++] = te_int(ctx, 0);
        for (int s2 = 0; s2 < L->s->nstages; s2++)
            if (L->s->stages[s2].attach == SCH_ATTACH_AT && L->s->stages[s2].attach_stage == st &&
                L->s->stages[s2].attach_iter == lv)
                return refuse(&z, te_sprintf(ctx, "stage '%s' is computed at tensorized loop '%s'",
                                             L->s->stages[s2].op->name, lv->u.var.name),
                              NULL);
    }
    int leaf_of[3] = {-1, -1, -1}; /* intrinsic axis -> index in zero_vars */
    for (int l = 0; l < nt; l++) leaf_of[leaf_axis[l]] = l;
    tir_stmt *marker = tir_noop(ctx);
    if (sch__lower_guards(L, st, 0, g->nroot, marker) != marker)
        return refuse(&z, "the tiles do not divide the stage's extents (the nest needs bounds ",
                      "guards); choose split factors that divide them");

    /* 3. the operands' tiles: the output, then the declaration's inputs */
    tile tiles[MAXOP];
    int nops = 1 + d.nin;
    if (make_tile(&z, "output", ls->buf, g->op->ndim, store_idx, leaf_of[0], leaf_of[1],
                  &tiles[0]))
        return -1;
    for (int i = 0; i < d.nin; i++) {
        const te_expr *rd = NULL;
        for (int q = 0; q < m.nt; q++)
            if (m.pt[q] == d.in[i]) rd = m.reads[q];
        te_expr *ld = rd ? sch__lower_reads(L, nsub, vars, vals, (te_expr *)rd) : NULL;
        if (!ld || ld->kind != TE_BUFFER_LOAD) return -1;
        /* the declaration's axes of this input's rows and columns */
        int ra = 0, ca = 1;
        if (kind == IN_MMA) {
            ra = i == 0 ? 0 : 2; /* a[i, k], b[k, j] */
            ca = i == 0 ? 2 : 1;
        }
        if (make_tile(&z, "input", ld->u.bload.buffer, ld->u.bload.ndim, ld->u.bload.indices,
                      leaf_of[ra], leaf_of[ca], &tiles[1 + i]))
            return -1;
    }

    /* 4. the intrinsic's rules and the call */
    int64_t kk = tir_wmma_k(t);
    int64_t ld[MAXOP] = {0};
    bool cm[MAXOP] = {false};
    tir_tensor_intrin call = TIR_WMMA_MMA;
    switch (wkind) {
    case IN_WG_MMA:
        call = TIR_WGMMA_MMA;
        if (check_wg_acc(&z, &tiles[0], width) ||
            check_wg_operand(&z, &tiles[1], "a", tiles[1].dcol, &ld[1], &cm[1]) ||
            check_wg_operand(&z, &tiles[2], "b", tiles[2].drow, &ld[2], &cm[2]))
            return -1;
        break;
    case IN_WG_STORE:
        call = TIR_WGMMA_STORE;
        if (check_wg_store(&z, &tiles[0], &ld[0]) || check_wg_acc(&z, &tiles[1], width)) return -1;
        break;
    case IN_MMA:
        if (check_fragment(&z, &tiles[0], TIR_SCOPE_WMMA_ACC, 16, 16) ||
            check_fragment(&z, &tiles[1], TIR_SCOPE_WMMA_A, 16, kk) ||
            check_fragment(&z, &tiles[2], TIR_SCOPE_WMMA_B, kk, 16))
            return -1;
        break;
    case IN_LOAD_A:
    case IN_LOAD_B:
        call = kind == IN_LOAD_A ? TIR_WMMA_LOAD_A : TIR_WMMA_LOAD_B;
        if (check_fragment(&z, &tiles[0], kind == IN_LOAD_A ? TIR_SCOPE_WMMA_A : TIR_SCOPE_WMMA_B,
                           kind == IN_LOAD_A ? 16 : kk, kind == IN_LOAD_A ? kk : 16) ||
            check_memory(&z, &tiles[1], &ld[1], &cm[1]))
            return -1;
        break;
    case IN_STORE:
        call = TIR_WMMA_STORE;
        if (check_memory(&z, &tiles[0], &ld[0], &cm[0]) ||
            check_fragment(&z, &tiles[1], TIR_SCOPE_WMMA_ACC, 16, 16))
            return -1;
        break;
    case IN_X86_DPBF16: break; /* lower_x86_dpbf16 */
    }
    te_expr *args[MAXOP];
    for (int i = 0; i < nops; i++)
        if (!(args[i] = first_element(&z, &tiles[i]))) return -1;
    out->call = tir_tensor_call(ctx, call, nops, args, ld, cm);
    if (!out->call) return -1;
    out->init = NULL;
    if (kind == IN_MMA) {
        if (!(out->init = tir_tensor_call(ctx, wg ? TIR_WGMMA_FILL : TIR_WMMA_FILL, 1, args, NULL,
                                          NULL)))
            return -1;
    }
    return 0;
}
