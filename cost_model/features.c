/*
 * cost_model/features.c — per-store feature vectors of a loop program
 * (Ansor's feature set; TVM src/auto_scheduler/feature.cc). The walk keeps
 * the stack of loops around the current statement; at each store it
 * counts operations, collects the buffers accessed with their index forms,
 * computes the elements each loop level touches (recorded on that loop
 * for the reuse analysis of later stores inside it, as Ansor does), and
 * writes one row. See loom/cost_model.h for the layout and the points
 * where Loom differs from Ansor.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost_model/cm_internal.h"

#define MAX_ACC_BUFS 16
#define MAX_IDX 4

enum { ACC_READ = 0, ACC_WRITE = 1, ACC_RW = 2, ACC_UNKNOWN = 3 };
enum { REUSE_LOOP = 0, REUSE_SERIAL = 1, REUSE_NONE = 2 };

typedef struct {
    const tir_buffer *buf;
    int acc;
    double elems;
    int ebytes;
} touch;

typedef struct {
    tir_for_kind kind;
    const char *tag;
    touch *t;
    int nt, cap;
} frame;

typedef struct {
    const tir_buffer *buf;
    double outer_prod;
} alloc_scope;

typedef struct {
    const tir_buffer *buf;
    int acc;
    int nidx;
    cm__affine idx[MAX_IDX];
} access;

typedef struct {
    te_ctx *ctx;
    bool raw;
    double line;
    double vector_bytes;
    cm__loop *loops;
    frame *fr;
    int n, cap;
    int64_t unroll_step;
    bool is_gpu;
    int64_t thr[7]; /* blockIdx.x y z, threadIdx.x y z, vthread */
    alloc_scope *allocs;
    int nalloc, capalloc;
    float *rows;
    const char **names;
    int nrows, caprows;
    double *scratch; /* per access-buffer x level touched elements */
    size_t capscratch;
    bool oom;
} walker;

/* ---- the loop stack ---- */

static bool push_loop(walker *w, const te_expr *var, int64_t min, int64_t extent,
                      tir_for_kind kind, const char *tag) {
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        cm__loop *l = realloc(w->loops, (size_t)cap * sizeof *l);
        if (!l) return w->oom = true, false;
        w->loops = l;
        frame *f = realloc(w->fr, (size_t)cap * sizeof *f);
        if (!f) return w->oom = true, false;
        w->fr = f;
        w->cap = cap;
    }
    w->loops[w->n] = (cm__loop){var, min, extent < 1 ? 1 : extent};
    w->fr[w->n] = (frame){kind, tag, NULL, 0, 0};
    w->n++;
    return true;
}

static void pop_loop(walker *w) {
    w->n--;
    free(w->fr[w->n].t);
}

static void add_touch(walker *w, int level, const tir_buffer *b, int acc, double elems,
                      int ebytes) {
    frame *f = &w->fr[level];
    if (f->nt == f->cap) {
        int cap = f->cap ? 2 * f->cap : 8;
        touch *t = realloc(f->t, (size_t)cap * sizeof *t);
        if (!t) {
            w->oom = true;
            return;
        }
        f->t = t, f->cap = cap;
    }
    f->t[f->nt++] = (touch){b, acc, elems, ebytes};
}

static double outer_prod(const walker *w) {
    double p = 1;
    for (int i = 0; i < w->n; i++) p *= (double)w->loops[i].extent;
    return p;
}

/* ---- expression scan: operation counts and reads ---- */

typedef struct {
    walker *w;
    double ops[16];
    access *acc;
    int nacc;
    int lane_level;
} scan_ctx;

static bool affine_equal(const cm__affine *a, const cm__affine *b) {
    if (a->c0 != b->c0 || a->nt != b->nt || a->no != b->no) return false;
    for (int i = 0; i < a->nt; i++)
        if (a->level[i] != b->level[i] || a->coef[i] != b->coef[i]) return false;
    for (int i = 0; i < a->no; i++)
        if (a->ocoef[i] != b->ocoef[i] || !te_expr_equal(a->op[i], b->op[i])) return false;
    return true;
}

/* The flat affine form of an access: multi-dimensional indices are
 * linearised with the buffer's strides. */
static void access_form(scan_ctx *c, const tir_buffer *b, int ndim, te_expr *const *idx,
                        const te_expr *flat, cm__affine *out) {
    memset(out, 0, sizeof *out);
    walker *w = c->w;
    if (flat) {
        cm__affine_add(out, flat, 1, w->loops, w->n, c->lane_level);
        return;
    }
    for (int d = 0; d < ndim; d++)
        cm__affine_add(out, idx[d], d < b->ndim ? b->strides[d] : 1, w->loops, w->n,
                       c->lane_level);
}

static void add_access(scan_ctx *c, const tir_buffer *b, bool write, int ndim,
                       te_expr *const *idx, const te_expr *flat) {
    if (!b) return;
    access *a = NULL;
    for (int i = 0; i < c->nacc; i++)
        if (c->acc[i].buf == b) a = &c->acc[i];
    if (!a) {
        if (c->nacc == MAX_ACC_BUFS) return;
        a = &c->acc[c->nacc++];
        a->buf = b, a->acc = ACC_UNKNOWN, a->nidx = 0;
    }
    if (write) a->acc = a->acc == ACC_READ ? ACC_RW : ACC_WRITE;
    else if (a->acc == ACC_WRITE) a->acc = ACC_RW;
    else if (a->acc == ACC_UNKNOWN) a->acc = ACC_READ;
    cm__affine f;
    access_form(c, b, ndim, idx, flat, &f);
    for (int i = 0; i < a->nidx; i++)
        if (affine_equal(&a->idx[i], &f)) return;
    if (a->nidx < MAX_IDX) a->idx[a->nidx++] = f;
}

static void scan(const te_expr *e, scan_ctx *c);
static void scan_cb(const te_expr *e, void *user) { scan(e, user); }

static void count(scan_ctx *c, const te_expr *operand, int fop, int iop) {
    te_dtype t = operand->dtype;
    c->ops[te_dtype_is_float(t) ? fop : iop] += t.lanes;
}

static void scan(const te_expr *e, scan_ctx *c) {
    if (!e) return;
    switch (e->kind) {
    case TE_ADD: {
        /* a multiply feeding an add is one multiply-add */
        const te_expr *m = e->u.bin.b->kind == TE_MUL   ? e->u.bin.b
                           : e->u.bin.a->kind == TE_MUL ? e->u.bin.a
                                                        : NULL;
        if (m) {
            count(c, e->u.bin.a, 0, 7);
            const te_expr *o = m == e->u.bin.b ? e->u.bin.a : e->u.bin.b;
            scan(o, c);
            scan(m->u.bin.a, c);
            scan(m->u.bin.b, c);
            return;
        }
        count(c, e->u.bin.a, 1, 8);
        break;
    }
    case TE_SUB: count(c, e->u.bin.a, 1, 8); break;
    case TE_MUL: count(c, e->u.bin.a, 2, 9); break;
    case TE_DIV: case TE_FLOORDIV: case TE_FLOORMOD: count(c, e->u.bin.a, 3, 10); break;
    case TE_MIN: case TE_MAX: case TE_EQ: case TE_NE: case TE_LT: case TE_LE: case TE_GT:
    case TE_GE:
        count(c, e->u.bin.a, 4, 11);
        break;
    case TE_AND: case TE_OR: case TE_NOT: c->ops[14] += 1; break;
    case TE_SELECT: c->ops[15] += 1; break;
    case TE_CALL:
        if (e->u.call.op != TE_INTRIN_LIKELY) c->ops[te_dtype_is_float(e->dtype) ? 5 : 12] += 1;
        break;
    case TE_LOAD:
        add_access(c, e->u.load.buffer, false, 0, NULL, e->u.load.index);
        break;
    case TE_BUFFER_LOAD:
        add_access(c, e->u.bload.buffer, false, e->u.bload.ndim, e->u.bload.indices, NULL);
        break;
    default: break;
    }
    te_expr_visit_children(e, scan_cb, c);
}

/* ---- per-statement features ---- */

static float slog(double x) { return (float)(x < 0 ? -log2(1 - x) : log2(1 + x)); }

/* One point of the intensity curve: log2 flops / log2 bytes (a footprint
 * of a single byte would divide by zero; two bytes is the floor). */
static double curve_y(double flops, double bytes) { return log2(flops) / log2(fmax(bytes, 2)); }

static bool uses_level(const access *a, const cm__loop *loops, int level) {
    for (int j = 0; j < a->nidx; j++)
        if (cm__stride_of(&a->idx[j], loops, level)) return true;
    return false;
}

/* Ansor's annotation position of loop `level` for this statement. */
static int position(const walker *w, const access *acc, int nacc, int level) {
    const access *wr = &acc[0]; /* the stored buffer */
    bool spatial = uses_level(wr, w->loops, level), reduce = false;
    if (!spatial)
        for (int i = 1; i < nacc && !reduce; i++) reduce = uses_level(&acc[i], w->loops, level);
    if (!spatial && !reduce) return CM__POS_OUTER_SPATIAL;
    int first = -1, last = -1;
    for (int l = 0; l < w->n; l++) {
        bool in = uses_level(wr, w->loops, l);
        if (reduce) {
            bool r = false;
            for (int i = 1; i < nacc && !r; i++) r = uses_level(&acc[i], w->loops, l);
            in = !in && r;
        }
        if (in) {
            if (first < 0) first = l;
            last = l;
        }
    }
    int base = spatial ? CM__POS_INNER_SPATIAL : CM__POS_INNER_REDUCE;
    if (level == last) return base;
    if (level == first) return base + 2;
    return base + 1;
}

static void annotation(const walker *w, const access *acc, int nacc, tir_for_kind kind,
                       double *v) {
    double num = 0, prod = 1, len = 0;
    int inner = -1;
    for (int l = 0; l < w->n; l++)
        if (w->fr[l].kind == kind) {
            num++, prod *= (double)w->loops[l].extent, len = (double)w->loops[l].extent;
            inner = l;
        }
    v[0] = num, v[1] = num ? prod : 0, v[2] = len;
    for (int p = 0; p < CM__POS_COUNT; p++) v[3 + p] = 0;
    v[3 + (inner < 0 ? CM__POS_NONE : position(w, acc, nacc, inner))] = 1;
}

typedef struct {
    double f[CM__BUF_STRIDE];
    double lines, bytes; /* sort keys */
    int order;          /* then first access first */
} buf_feat;

static void reuse(const walker *w, const access *a, double out[4]) {
    double dis_iter = 1, dis_bytes = -1;
    for (int i = w->n - 1; i >= 0; i--) {
        const frame *f = &w->fr[i];
        double ext = (double)w->loops[i].extent;
        if (uses_level(a, w->loops, i)) {
            dis_iter *= ext;
            dis_bytes = 0;
            for (int k = 0; k < f->nt; k++) dis_bytes += f->t[k].elems * f->t[k].ebytes;
        } else {
            if (dis_bytes < 0) {
                dis_bytes = 0;
                for (int k = 0; k < f->nt; k++) dis_bytes += f->t[k].ebytes;
            }
            out[0] = REUSE_LOOP, out[1] = dis_iter, out[2] = dis_bytes, out[3] = ext;
            return;
        }
        int same = 0;
        double mn = INFINITY;
        for (int k = 0; k < f->nt; k++)
            if (f->t[k].buf == a->buf) {
                same++;
                if (f->t[k].elems < mn) mn = f->t[k].elems;
            }
        if (same > 1) {
            out[0] = REUSE_SERIAL, out[1] = mn / ext, out[2] = dis_bytes / ext;
            out[3] = same - 1;
            return;
        }
    }
    out[0] = REUSE_NONE, out[1] = out[2] = out[3] = 0;
}

static int cmp_buf(const void *x, const void *y) {
    const buf_feat *a = x, *b = y;
    if (a->lines != b->lines) return a->lines > b->lines ? -1 : 1;
    if (a->bytes != b->bytes) return a->bytes > b->bytes ? -1 : 1;
    return a->order - b->order;
}

static void store(walker *w, const tir_stmt *s) {
    const tir_buffer *b;
    const te_expr *value;
    scan_ctx c;
    memset(&c, 0, sizeof c);
    c.w = w;
    c.lane_level = -1;
    access acc[MAX_ACC_BUFS];
    c.acc = acc;
    int pushed = 0, lanes = 1;
    if (s->kind == TIR_STORE) {
        b = s->u.store.buffer, value = s->u.store.value;
        const te_expr *ix = s->u.store.index;
        if (ix && ix->kind == TE_RAMP && ix->u.ramp.lanes > 1) {
            /* a vector store: its lanes are the innermost vectorized loop */
            lanes = ix->u.ramp.lanes;
            if (!push_loop(w, NULL, 0, lanes, TIR_FOR_VECTORIZED, NULL)) return;
            pushed = 1;
            c.lane_level = w->n - 1;
        }
        add_access(&c, b, true, 0, NULL, ix);
    } else {
        b = s->u.bstore.buffer, value = s->u.bstore.value;
        add_access(&c, b, true, s->u.bstore.ndim, s->u.bstore.indices, NULL);
    }
    scan(value, &c);

    if (w->nrows == w->caprows) {
        int cap = w->caprows ? 2 * w->caprows : 16;
        float *r = realloc(w->rows, (size_t)cap * CM_NUM_FEATURES * sizeof *r);
        if (!r) goto oom;
        w->rows = r;
        const char **nm = realloc(w->names, (size_t)cap * sizeof *nm);
        if (!nm) goto oom;
        w->names = nm;
        w->caprows = cap;
    }
    size_t need = (size_t)(c.nacc * (w->n + 1) + 2 * (w->n + 1));
    if (need > w->capscratch) {
        double *sc = realloc(w->scratch, need * sizeof *sc);
        if (!sc) goto oom;
        w->scratch = sc, w->capscratch = need;
    }
    double v[CM_NUM_FEATURES];
    memset(v, 0, sizeof v);
    const int n = w->n;
    const double prod = outer_prod(w);

    /* Group 1: operation counts per lane, times the iterations */
    for (int i = 0; i < 16; i++) v[CM__OPS + i] = c.ops[i] / lanes * prod;
    annotation(w, acc, c.nacc, TIR_FOR_VECTORIZED, &v[CM__VEC]);
    annotation(w, acc, c.nacc, TIR_FOR_UNROLLED, &v[CM__UNROLL]);
    annotation(w, acc, c.nacc, TIR_FOR_PARALLEL, &v[CM__PARALLEL]);
    v[CM__GPU] = w->is_gpu;
    for (int i = 0; i < 7; i++) v[CM__GPU + 1 + i] = w->is_gpu ? (double)w->thr[i] : 0;

    /* touched elements per buffer and loop level; memory per level */
    double *touched = w->scratch;            /* [acc][level] */
    double *mem = touched + c.nacc * (n + 1); /* [level] */
    double *flops = mem + (n + 1);           /* [level], cumulative outwards */
    double fops = 0;
    for (int i = 0; i < 7; i++) fops += c.ops[i];
    fops /= lanes;
    double cur = fops;
    for (int l = n - 1; l >= 0; l--) {
        mem[l] = 0;
        for (int a = 0; a < c.nacc; a++) {
            double sum = 0, lo = INFINITY, hi = -INFINITY;
            for (int j = 0; j < acc[a].nidx; j++) {
                double cnt, l0, h0;
                cm__footprint(&acc[a].idx[j], w->loops, n, c.lane_level, l, &cnt, &l0, &h0, NULL);
                sum += cnt, lo = fmin(lo, l0), hi = fmax(hi, h0);
            }
            double t = acc[a].nidx > 1 ? fmin(sum, hi - lo + 1) : sum;
            touched[a * (n + 1) + l] = t;
            int eb = te_dtype_bytes(acc[a].buf->dtype);
            add_touch(w, l, acc[a].buf, acc[a].acc, t, eb);
            mem[l] += t * eb;
        }
        cur *= (double)w->loops[l].extent;
        flops[l] = cur;
    }
    if (w->oom) goto oom;

    /* Group 2: per buffer */
    buf_feat bf[MAX_ACC_BUFS];
    for (int a = 0; a < c.nacc; a++) {
        const access *ac = &acc[a];
        double eb = te_dtype_bytes(ac->buf->dtype);
        double bytes = prod * eb * (ac->nidx ? ac->nidx : 1), ubytes, lines, ulines;
        double stride = 0;
        if (n == 0) {
            ubytes = eb, lines = 1, ulines = 1;
        } else {
            ubytes = touched[a * (n + 1) + 0] * eb;
            double ratio = 1;
            int l;
            for (l = n - 1; l >= 0; l--) {
                int64_t st = 0;
                for (int j = 0; j < ac->nidx; j++) {
                    int64_t sj = cm__stride_of(&ac->idx[j], w->loops, l);
                    if (sj && (!st || sj < st)) st = sj;
                }
                stride = (double)st;
                if (st) break;
                ratio *= (double)w->loops[l].extent;
            }
            lines = prod / ratio * fmin(1.0, stride * eb / w->line);
            if (lines < 1) lines = 1;
            if (l != n - 1) stride = 0;
            double contig = 1;
            for (int j = 0; j < ac->nidx; j++) {
                double cnt, cg;
                cm__footprint(&ac->idx[j], w->loops, n, c.lane_level, 0, &cnt, NULL, NULL, &cg);
                if (cg > contig) contig = cg;
            }
            ulines = ubytes / fmin(contig * eb, w->line);
            if (ulines < 1) ulines = 1;
        }
        double r[4];
        reuse(w, ac, r);
        double *f = bf[a].f;
        memset(f, 0, sizeof bf[a].f);
        if (ac->acc <= ACC_RW) f[ac->acc] = 1;
        f[3] = bytes, f[4] = ubytes, f[5] = lines, f[6] = ulines;
        f[7 + (int)r[0]] = 1;
        f[10] = r[1], f[11] = r[2], f[12] = r[3];
        double div = r[3] > 0.5 ? r[3] : 0.5; /* no reuse: Ansor's factor 2 */
        f[13] = bytes / div, f[14] = ubytes / div, f[15] = lines / div, f[16] = ulines / div;
        f[17] = stride;
        bf[a].lines = lines, bf[a].bytes = bytes, bf[a].order = a;
        if (a == 0) /* the stored buffer (added first), at fixed positions */
            v[CM__STORE + 0] = r[1], v[CM__STORE + 1] = r[2], v[CM__STORE + 2] = r[3];
    }
    qsort(bf, (size_t)c.nacc, sizeof bf[0], cmp_buf);
    for (int a = 0; a < c.nacc && a < CM_MAX_BUFFERS; a++)
        memcpy(&v[CM__BUF + a * CM__BUF_STRIDE], bf[a].f, sizeof bf[a].f);

    /* Group 3: arithmetic intensity curve, in Ansor's log scale: x is
     * log2 of the flops below a loop level, y = log2 flops / log2 bytes
     * touched there; 10 samples evenly spaced in x, so each loop level
     * gets its share of the curve (in linear flops the outermost level
     * would take nearly every sample and the tile levels none). flops[]
     * grows from the innermost level n-1 to the outermost 0. */
    if (fops > 0 && n > 0) {
        int pt = n - 1;
        double total = log2(flops[0]);
        for (int i = 0; i < CM_CURVE_SAMPLES; i++) {
            double x = total * (i + 1) / CM_CURVE_SAMPLES;
            while (pt > 0 && log2(flops[pt]) < x - 1e-4) pt--;
            double y = curve_y(flops[pt], mem[pt]);
            if (pt < n - 1) {
                double x0 = log2(flops[pt + 1]), y0 = curve_y(flops[pt + 1], mem[pt + 1]);
                double dx = log2(flops[pt]) - x0;
                if (dx > 0) y = y0 + (y - y0) / dx * (x - x0);
            }
            v[CM__CURVE + i] = y;
        }
    }

    /* Group 4: allocation of the stored buffer */
    for (int i = w->nalloc - 1; i >= 0; i--)
        if (w->allocs[i].buf == b) {
            double elems = (double)tir_buffer_size(b), op = w->allocs[i].outer_prod;
            v[CM__ALLOC + 0] = elems * te_dtype_bytes(b->dtype);
            v[CM__ALLOC + 1] = elems * op;
            v[CM__ALLOC + 2] = op;
            v[CM__ALLOC + 3] = prod / op;
            break;
        }

    /* Group 5: outer scope */
    v[CM__OUTER + 0] = prod;
    v[CM__OUTER + 1] = n;
    v[CM__OUTER + 2] = (double)w->unroll_step;

    /* Loom's: lanes of the innermost vectorized loop left idle in the
     * target's registers (a 24-lane loop on 16-lane registers fills one
     * and half of another) */
    double vlen = v[CM__VEC + 2];
    if (vlen > 0) {
        double ebytes = fmax(1, te_dtype_bytes(b->dtype));
        double lanes_per_reg = fmax(1, floor(w->vector_bytes / ebytes));
        double whole = ceil(vlen / lanes_per_reg) * lanes_per_reg;
        v[CM__LANE_WASTE] = (whole - vlen) / whole;
    }

    float *row = &w->rows[(size_t)w->nrows * CM_NUM_FEATURES];
    for (int i = 0; i < CM_NUM_FEATURES; i++) {
        bool onehot = (i >= CM__VEC + 3 && i < CM__VEC + 11) ||
                      (i >= CM__UNROLL + 3 && i < CM__UNROLL + 11) ||
                      (i >= CM__PARALLEL + 3 && i < CM__PARALLEL + 11) || i == CM__GPU;
        if (i >= CM__BUF && i < CM__CURVE) {
            int j = (i - CM__BUF) % CM__BUF_STRIDE;
            onehot = j < 3 || (j >= 7 && j < 10);
        }
        row[i] = (w->raw || onehot) ? (float)v[i] : slog(v[i]);
    }
    w->names[w->nrows++] = b->name;
    if (pushed) pop_loop(w);
    return;
oom:
    w->oom = true;
    if (pushed) pop_loop(w);
}

/* ---- the walk ---- */

static int thread_slot(const char *tag) {
    static const char *const tags[6] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                        "threadIdx.x", "threadIdx.y", "threadIdx.z"};
    if (!tag) return -1;
    for (int i = 0; i < 6; i++)
        if (!strcmp(tag, tags[i])) return i;
    return !strcmp(tag, "vthread") ? 6 : -1;
}

/* The walk is a tir_visitor (its user the walker) with the cases below;
 * it ends when memory runs out. */
static int walk_loop(tir_visitor *v, const tir_stmt *s) {
    walker *w = v->user;
    int64_t mn, ext, lo, hi;
    if (!te_is_const_int(s->u.loop.min, &mn)) {
        cm__interval(s->u.loop.min, w->loops, w->n, -1, 0, &lo, &hi);
        mn = lo;
    }
    if (!te_is_const_int(s->u.loop.extent, &ext)) {
        cm__interval(s->u.loop.extent, w->loops, w->n, -1, 0, &lo, &hi);
        ext = hi; /* the largest extent, as Ansor's const-int bound */
    }
    if (ext < 1) ext = 1;
    int slot = s->u.loop.for_kind == TIR_FOR_THREAD ? thread_slot(s->u.loop.thread_tag) : -1;
    int64_t saved_thr = slot >= 0 ? w->thr[slot] : 0, saved_step = w->unroll_step;
    if (slot == 6) w->thr[6] *= ext;
    else if (slot >= 0) w->thr[slot] = ext;
    if (s->u.loop.auto_unroll_max_step > 0) w->unroll_step = s->u.loop.auto_unroll_max_step;
    if (!push_loop(w, s->u.loop.var, mn, ext, s->u.loop.for_kind, s->u.loop.thread_tag)) return 1;
    int rc = tir_visit_children(v, s);
    pop_loop(w);
    if (slot >= 0) w->thr[slot] = saved_thr;
    w->unroll_step = saved_step;
    return rc;
}

static int walk_alloc(tir_visitor *v, const tir_stmt *s) {
    walker *w = v->user;
    if (w->nalloc == w->capalloc) {
        int cap = w->capalloc ? 2 * w->capalloc : 8;
        alloc_scope *a = realloc(w->allocs, (size_t)cap * sizeof *a);
        if (!a) {
            w->oom = true;
            return 1;
        }
        w->allocs = a, w->capalloc = cap;
    }
    w->allocs[w->nalloc++] = (alloc_scope){s->u.alloc.buffer, outer_prod(w)};
    int rc = tir_visit_children(v, s);
    w->nalloc--;
    return rc;
}

static int walk_store(tir_visitor *v, const tir_stmt *s) {
    walker *w = v->user;
    store(w, s);
    return w->oom;
}

static void walk(walker *w, const tir_stmt *s) {
    tir_visitor v = {
        .user = w,
        .kind = {
            [TIR_FOR] = walk_loop,
            [TIR_ALLOCATE] = walk_alloc,
            [TIR_STORE] = walk_store,
            [TIR_BUFFER_STORE] = walk_store,
        },
    };
    tir_visit(&v, s);
}

/* ---- tensor cores (function-wide) ---- */

typedef struct {
    double iters; /* of the loops around, but a warp's lanes */
    double mma_flops, frag_loads, wgmma_calls;
    int64_t stages, wgmma_n;
} tc_walk;

static int tc_loop(tir_visitor *v, const tir_stmt *s) {
    tc_walk *t = v->user;
    int64_t ext = 1;
    bool lanes = s->u.loop.for_kind == TIR_FOR_THREAD && s->u.loop.thread_tag &&
                 !strcmp(s->u.loop.thread_tag, "threadIdx.x");
    if (!te_is_const_int(s->u.loop.extent, &ext) || ext < 1) ext = 1;
    double saved = t->iters;
    if (!lanes) t->iters *= (double)ext;
    int rc = tir_visit_children(v, s);
    t->iters = saved;
    return rc;
}

static int tc_call(tir_visitor *v, const tir_stmt *s) {
    tc_walk *t = v->user;
    tir_tensor_intrin k = s->u.tcall.intrin;
    if (k == TIR_WMMA_MMA && s->u.tcall.nargs > 1 && s->u.tcall.args[1])
        t->mma_flops += t->iters * 2.0 * 16 * 16 * tir_wmma_k(s->u.tcall.args[1]->dtype);
    else if (k == TIR_X86_DPBF16) /* 16 lanes, each a pair of multiply-adds */
        t->mma_flops += t->iters * 2.0 * 16 * 2;
    else if (k == TIR_WMMA_LOAD_A || k == TIR_WMMA_LOAD_B)
        t->frag_loads += t->iters;
    else if (k == TIR_WGMMA_MMA && s->u.tcall.nargs > 0 && s->u.tcall.args[0]) {
        /* the accumulator's tile is 64 x n */
        const te_expr *a = s->u.tcall.args[0];
        const tir_buffer *acc = a->kind == TE_LOAD ? a->u.load.buffer
                                : a->kind == TE_BUFFER_LOAD ? a->u.bload.buffer
                                                            : NULL;
        int64_t n = acc && acc->ndim >= 2 ? acc->shape[acc->ndim - 1] : 0;
        /* k: 16 for 16-bit operands, 8 for tf32 (tir_wmma_k) */
        int64_t k = s->u.tcall.nargs > 1 && s->u.tcall.args[1]
                        ? tir_wmma_k(s->u.tcall.args[1]->dtype)
                        : 16;
        t->mma_flops += t->iters * 2.0 * 64 * (double)n * (double)k;
        t->wgmma_calls += t->iters;
        if (n > t->wgmma_n) t->wgmma_n = n;
    }
    return 0;
}

static int tc_attr(tir_visitor *v, const tir_stmt *s) {
    tc_walk *t = v->user;
    int64_t n;
    if (!strcmp(s->u.attr.key, TIR_ATTR_ASYNC_WAIT) && s->u.attr.value &&
        te_is_const_int(s->u.attr.value, &n) && n + 1 > t->stages)
        t->stages = n + 1;
    else if (!strcmp(s->u.attr.key, TIR_ATTR_DOUBLE_BUFFER) && t->stages < 2)
        t->stages = 2;
    return tir_visit_children(v, s);
}

static void tensor_cores(const tir_stmt *body, double *out) {
    tc_walk t = {1, 0, 0, 0, 0, 0};
    tir_visitor v = {
        .user = &t,
        .kind = {[TIR_FOR] = tc_loop, [TIR_TENSOR_CALL] = tc_call, [TIR_ATTR] = tc_attr},
    };
    tir_visit(&v, body);
    out[0] = t.mma_flops, out[1] = t.frag_loads, out[2] = (double)t.stages;
    out[3] = t.wgmma_calls, out[4] = (double)t.wgmma_n;
}

static void find_threads(const tir_stmt *s, void *user) {
    if (s->kind == TIR_FOR && s->u.loop.for_kind == TIR_FOR_THREAD) *(bool *)user = true;
}

int cm_extract_ex(te_ctx *ctx, const tir_func *f, const cm_extract_options *opts, float **out,
                  int *nstmts, const char ***names) {
    if (out) *out = NULL;
    if (nstmts) *nstmts = 0;
    if (names) *names = NULL;
    if (!f || !f->body || !out || !nstmts) {
        if (ctx) te_error(ctx, "cm_extract: the function%s is NULL", f ? "'s body" : "");
        return -1;
    }
    walker w;
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    w.raw = opts && opts->raw;
    w.line = opts && opts->cache_line_bytes > 0 ? opts->cache_line_bytes : 64;
    w.vector_bytes = opts && opts->vector_bytes > 0 ? opts->vector_bytes : 64;
    tir_stmt_visit(f->body, find_threads, NULL, &w.is_gpu);
    for (int i = 0; i < 7; i++) w.thr[i] = 1;
    walk(&w, f->body);
    while (w.n > 0) pop_loop(&w);
    double tc[CM__END - CM__TC];
    tensor_cores(f->body, tc);
    for (int r = 0; r < w.nrows; r++)
        for (int i = 0; i < CM__END - CM__TC; i++)
            w.rows[(size_t)r * CM_NUM_FEATURES + CM__TC + i] = w.raw ? (float)tc[i] : slog(tc[i]);
    free(w.loops), free(w.fr), free(w.allocs), free(w.scratch);
    if (w.oom) {
        free(w.rows), free(w.names);
        if (ctx) te_error(ctx, "cm_extract: out of memory on function '%s'", f->name);
        return -1;
    }
    *out = w.rows;
    *nstmts = w.nrows;
    if (names) *names = w.names;
    else free(w.names);
    if (!w.nrows) free(w.rows), *out = NULL;
    return 0;
}

int cm_extract(te_ctx *ctx, const tir_func *f, float **out, int *nstmts) {
    return cm_extract_ex(ctx, f, NULL, out, nstmts, NULL);
}

int cm_extract_schedule(sch_schedule *s, int nargs, te_tensor *const *args,
                        const cm_extract_options *opts, float **out, int *nstmts) {
    if (out) *out = NULL;
    if (nstmts) *nstmts = 0;
    if (!s) return -1;
    te_ctx *ctx = sch_ctx(s);
    /* The tuner's view (the same list, the same flags), so that the
     * model scores here what it scored while tuning. */
    sch_lower_options o = {.constant_args = opts && !opts->gpu ? opts->constant_args : 0,
                           .model_view = true};
    o.passes.gpu = opts && opts->gpu;
    if (opts && opts->gpu) o.passes.gpu_limits = opts->gpu_limits;
    sch_lowered r;
    if (sch_lower_program(s, nargs, args, &o, &r)) return -1;
    return cm_extract_ex(ctx, r.main, opts, out, nstmts, NULL);
}

int cm_features_csv(te_ctx *ctx, const tir_func *f, const cm_extract_options *opts, te_str *out) {
    float *v;
    int n;
    const char **names;
    if (!out) {
        if (ctx) te_error(ctx, "cm_features_csv: the output string is NULL");
        return -1;
    }
    if (cm_extract_ex(ctx, f, opts, &v, &n, &names)) return -1;
    te_str_append(out, "stmt,buffer");
    for (int i = 0; i < CM_NUM_FEATURES; i++) te_str_printf(out, ",%s", cm_feature_name(i));
    te_str_append(out, "\n");
    for (int r = 0; r < n; r++) {
        te_str_printf(out, "%d,%s", r, names[r] ? names[r] : "");
        for (int i = 0; i < CM_NUM_FEATURES; i++)
            te_str_printf(out, ",%.6g", (double)v[(size_t)r * CM_NUM_FEATURES + i]);
        te_str_append(out, "\n");
    }
    free(v);
    free(names);
    return 0;
}
