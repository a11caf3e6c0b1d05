/*
 * tir/pass_unroll.c — loop unrolling (TVM UnrollLoop, Halide UnrollLoops).
 *
 * - An UNROLLED loop of constant extent is replaced by one copy of its body
 *   per iteration, v := min + k in copy k, each copy's expressions
 *   simplified. One with a non-constant extent becomes SERIAL.
 * - Under a loop carrying the pragma auto_unroll_max_step = S > 0, every
 *   SERIAL loop nested inside it whose step count is at most S is unrolled
 *   too: copied when the pragma loop says unroll_explicit, otherwise marked
 *   UNROLLED and left as a loop, a hint the backends turn into an unroll
 *   pragma. The pragma loop itself is not a candidate (as in TVM, where
 *   the pragma sits inside the loop it annotates). An inner pragma
 *   overrides an outer one.
 * - The step count of a statement follows TVM: a store or call counts 1, a
 *   sequence the sum of its parts, a loop its extent times its body's. Loops
 *   of non-constant extent count as unbounded.
 * - Copying is capped twice. A loop whose unrolled form would hold more
 *   than UNROLL_MAX_STMTS statements is left as an UNROLLED hint loop. And
 *   a function whose copies would make it larger than UNROLL_FUNC_MAX_STMTS
 *   statements has every pragma's step limit halved (the same for all
 *   pragmas, so hot and cold parts of the nest shrink alike), as often as
 *   it takes to fit or until no pragma unrolls anything: the code that
 *   loop partitioning duplicates (a padded convolution's edge pieces, each
 *   a copy of the whole register tile) would otherwise reach tens of
 *   thousands of statements, and LLVM's time grows with them (a tuning
 *   candidate of 12,004 statements outlasted the tuner's 15 s build
 *   timeout). The function's limit equals a loop's: at 8,192, r50_c3
 *   candidates between the two took up to 16 s to build (in LLVM's
 *   InstCombine, mostly) and ran no faster than at 4,096, where the same
 *   48 programs of four searches built in 60 s instead of 244 s and the
 *   24 within 2x of the best ran 1.2 % faster at the median
 *   (bench/RESULTS.md, session 26). The size is counted before anything
 *   is copied, and tir_pass_unroll_hinted uses the limits tir_pass_unroll
 *   would, so the cost model sees the loops the build unrolls.
 */
#include <stdint.h>

#include "loom/tir.h"

#define UNROLL_MAX_STMTS 4096
#define UNROLL_FUNC_MAX_STMTS 4096
#define STEPS_INF INT64_MAX

typedef struct {
    te_ctx *ctx;
    int64_t max_step; /* auto_unroll_max_step in force, halved `shift` times (0: none) */
    bool explicit_;   /* unroll_explicit of the pragma in force */
    bool hints_only;  /* unroll_explicit ignored (tir_pass_unroll_hinted) */
    int shift;        /* halvings of every pragma's step limit */
} unroll_ctx;

static int64_t sat_mul(int64_t a, int64_t b) {
    if (a == STEPS_INF || b == STEPS_INF) return STEPS_INF;
    if (a != 0 && b > STEPS_INF / a) return STEPS_INF;
    return a * b;
}
static int64_t sat_add(int64_t a, int64_t b) {
    if (a == STEPS_INF || b == STEPS_INF || a > STEPS_INF - b) return STEPS_INF;
    return a + b;
}

static int64_t steps(const tir_stmt *s) {
    if (!s) return 0;
    switch (s->kind) {
    case TIR_FOR: {
        int64_t ext;
        if (!te_is_const_int(s->u.loop.extent, &ext)) return STEPS_INF;
        return sat_mul(ext < 0 ? 0 : ext, steps(s->u.loop.body));
    }
    case TIR_SEQ: {
        int64_t n = 0;
        for (int i = 0; i < s->u.seq.n; i++) n = sat_add(n, steps(s->u.seq.stmts[i]));
        return n;
    }
    case TIR_IF: return sat_add(steps(s->u.if_.then_s), steps(s->u.if_.else_s));
    case TIR_ALLOCATE: return steps(s->u.alloc.body);
    case TIR_NOOP: return 0;
    default: return 1;
    }
}

/* Statements a tree holds (the size copying multiplies). */
static int64_t count_stmts(const tir_stmt *s) {
    if (!s) return 0;
    switch (s->kind) {
    case TIR_FOR: return 1 + count_stmts(s->u.loop.body);
    case TIR_SEQ: {
        int64_t n = 0;
        for (int i = 0; i < s->u.seq.n; i++) n = sat_add(n, count_stmts(s->u.seq.stmts[i]));
        return n;
    }
    case TIR_IF: return sat_add(1 + count_stmts(s->u.if_.then_s), count_stmts(s->u.if_.else_s));
    case TIR_ALLOCATE: return 1 + count_stmts(s->u.alloc.body);
    default: return 1;
    }
}

static te_expr *simplify_expr(te_expr *e, void *user) {
    return te_simplify((te_ctx *)user, e);
}

/* The copies of loop s's body, k = 0..ext-1; NULL on failure. */
static tir_stmt *expand(te_ctx *ctx, const tir_stmt *s, int64_t ext) {
    if (ext <= 0) return tir_noop(ctx);
    tir_stmt **copies = te_alloc(ctx, sizeof(tir_stmt *) * (size_t)ext);
    if (!copies) return NULL;
    te_expr *v = s->u.loop.var;
    for (int64_t k = 0; k < ext; k++) {
        te_expr *val = te_simplify(ctx, te_add(s->u.loop.min, te_int_t(ctx, v->dtype, k)));
        tir_stmt *c = val ? tir_stmt_substitute(ctx, s->u.loop.body, 1, &v, &val) : NULL;
        if (c) c = tir_stmt_map(ctx, c, NULL, simplify_expr, ctx);
        if (!c) return NULL;
        copies[k] = c;
    }
    return tir_seq(ctx, (int)ext, copies);
}

static tir_stmt *unroll(unroll_ctx *uc, tir_stmt *s);

/* The limits in force inside loop s (an inner pragma overrides). */
static void enter_pragma(unroll_ctx *uc, const tir_stmt *s) {
    if (s->u.loop.auto_unroll_max_step <= 0) return;
    uc->max_step = uc->shift < 63 ? s->u.loop.auto_unroll_max_step >> uc->shift : 0;
    uc->explicit_ = s->u.loop.unroll_explicit && !uc->hints_only;
}

/* Whether serial loop f lies within the pragma in force (uc's limit). */
static bool under_pragma(const unroll_ctx *uc, const tir_stmt *f) {
    int64_t ext;
    return f->u.loop.for_kind == TIR_FOR_SERIAL && uc->max_step > 0 &&
           te_is_const_int(f->u.loop.extent, &ext) && steps(f) <= uc->max_step;
}

/* Whether unroll copies loop f out (its body, already unrolled, holding
 * body_stmts statements), and then its extent in *ext: an UNROLLED loop,
 * or a serial one under an explicit pragma, whose copies fit in
 * UNROLL_MAX_STMTS. The one decision unroll_loop acts on and
 * unrolled_size counts. */
static bool copied_out(const unroll_ctx *uc, const tir_stmt *f, int64_t body_stmts,
                       int64_t *ext) {
    if (!te_is_const_int(f->u.loop.extent, ext) || sat_mul(*ext, body_stmts) > UNROLL_MAX_STMTS)
        return false;
    return f->u.loop.for_kind == TIR_FOR_UNROLLED || (uc->explicit_ && under_pragma(uc, f));
}

/* Statements s would hold after unroll(uc, s), counted without copying. */
static int64_t unrolled_size(const unroll_ctx *uc, const tir_stmt *s) {
    if (!s) return 0;
    switch (s->kind) {
    case TIR_FOR: {
        unroll_ctx inner = *uc;
        enter_pragma(&inner, s);
        int64_t body = unrolled_size(&inner, s->u.loop.body), ext;
        return copied_out(uc, s, body, &ext) ? sat_mul(ext, body) : sat_add(1, body);
    }
    case TIR_SEQ: {
        int64_t n = 0;
        for (int i = 0; i < s->u.seq.n; i++) n = sat_add(n, unrolled_size(uc, s->u.seq.stmts[i]));
        return n;
    }
    case TIR_IF:
        return sat_add(sat_add(1, unrolled_size(uc, s->u.if_.then_s)),
                       unrolled_size(uc, s->u.if_.else_s));
    case TIR_ALLOCATE: return sat_add(1, unrolled_size(uc, s->u.alloc.body));
    default: return 1;
    }
}

/* A copy of loop f of another kind (nodes are shared, so never in place). */
static tir_stmt *with_kind(te_ctx *ctx, const tir_stmt *f, tir_for_kind kind) {
    tir_stmt *g = tir_for_with_body(ctx, f, f->u.loop.body);
    if (g) g->u.loop.for_kind = kind;
    return g;
}

static tir_stmt *unroll_loop(unroll_ctx *uc, tir_stmt *s) {
    unroll_ctx inner = *uc;
    enter_pragma(&inner, s);
    tir_stmt *body = unroll(&inner, s->u.loop.body);
    if (!body) return NULL;
    tir_stmt *f = body == s->u.loop.body ? s : tir_for_with_body(uc->ctx, s, body);
    if (!f) return NULL;

    int64_t ext;
    if (copied_out(uc, f, count_stmts(f->u.loop.body), &ext)) return expand(uc->ctx, f, ext);
    if (f->u.loop.for_kind == TIR_FOR_UNROLLED && !te_is_const_int(f->u.loop.extent, &ext))
        return with_kind(uc->ctx, f, TIR_FOR_SERIAL); /* nothing to copy */
    if (under_pragma(uc, f)) /* not explicit, or too big: a hint */
        return with_kind(uc->ctx, f, TIR_FOR_UNROLLED);
    return f; /* an UNROLLED loop too big to copy stays a hint */
}

static tir_stmt *unroll(unroll_ctx *uc, tir_stmt *s) {
    if (!s) return NULL;
    switch (s->kind) {
    case TIR_FOR: return unroll_loop(uc, s);
    case TIR_SEQ: {
        tir_stmt **parts = te_alloc(uc->ctx, sizeof(tir_stmt *) * (size_t)(s->u.seq.n + 1));
        if (!parts) return NULL;
        bool changed = false;
        for (int i = 0; i < s->u.seq.n; i++) {
            if (!(parts[i] = unroll(uc, s->u.seq.stmts[i]))) return NULL;
            changed |= parts[i] != s->u.seq.stmts[i];
        }
        return changed ? tir_seq(uc->ctx, s->u.seq.n, parts) : s;
    }
    case TIR_IF: {
        tir_stmt *t = unroll(uc, s->u.if_.then_s);
        tir_stmt *f = s->u.if_.else_s ? unroll(uc, s->u.if_.else_s) : NULL;
        if (!t || (s->u.if_.else_s && !f)) return NULL;
        if (t == s->u.if_.then_s && f == s->u.if_.else_s) return s;
        return tir_if(uc->ctx, s->u.if_.cond, t, f);
    }
    case TIR_ALLOCATE: {
        tir_stmt *b = unroll(uc, s->u.alloc.body);
        if (!b) return NULL;
        return b == s->u.alloc.body ? s : tir_allocate(uc->ctx, s->u.alloc.buffer, b);
    }
    default: return s;
    }
}

static void note_pragma_step(const tir_stmt *s, void *user) {
    int64_t *largest = user;
    if (s->kind == TIR_FOR && s->u.loop.auto_unroll_max_step > *largest)
        *largest = s->u.loop.auto_unroll_max_step;
}

static tir_func *run_unroll(te_ctx *ctx, const tir_func *f, bool hints_only) {
    if (!ctx || !f) return NULL;
    /* The sizes are those of the explicit copies even when only hinting,
     * so both passes settle on the same limits. */
    unroll_ctx uc = {ctx, 0, false, false, 0};
    int64_t largest = 0; /* the largest auto_unroll_max_step (0: no pragma) */
    tir_stmt_visit(f->body, note_pragma_step, NULL, &largest);
    while (uc.shift < 63 && largest >> uc.shift > 0 &&
           unrolled_size(&uc, f->body) > UNROLL_FUNC_MAX_STMTS)
        uc.shift++;
    uc.hints_only = hints_only;
    tir_stmt *body = unroll(&uc, f->body);
    if (!body) return NULL;
    return body == f->body ? (tir_func *)f : tir_func_with_body(ctx, f, body);
}

tir_func *tir_pass_unroll(te_ctx *ctx, const tir_func *f) { return run_unroll(ctx, f, false); }

tir_func *tir_pass_unroll_hinted(te_ctx *ctx, const tir_func *f) {
    return run_unroll(ctx, f, true);
}
