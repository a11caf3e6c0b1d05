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

/* ---- sizes, folded over the tree with a visitor ---- */

typedef struct {
    const unroll_ctx *uc; /* statements after unrolling under it; NULL: as they are */
    int64_t n;
} counter;

/* What a loop's body alone adds to the count. */
static int64_t body_count(tir_visitor *v, const tir_stmt *loop) {
    counter *c = v->user;
    int64_t before = c->n;
    c->n = 0;
    tir_visit(v, loop->u.loop.body);
    int64_t body = c->n;
    c->n = before;
    return body;
}

/* Statements that do work count one step each (an ALLREDUCE's body
 * counts as well, and a tensor intrinsic's call: counted as nothing, a
 * loop of calls looked free to unroll, and LLVM, told to unroll a
 * reduction loop of 48 around 768 x86.dpbf16 calls, took over 15 s),
 * times the extents of the loops around them. */
static int step_stmt(tir_visitor *v, const tir_stmt *s) {
    counter *c = v->user;
    if (s->kind == TIR_STORE || s->kind == TIR_BUFFER_STORE || s->kind == TIR_EVALUATE ||
        s->kind == TIR_BARRIER || s->kind == TIR_ALLREDUCE || s->kind == TIR_TENSOR_CALL)
        c->n = sat_add(c->n, 1);
    return 0;
}

static int step_loop(tir_visitor *v, const tir_stmt *s) {
    counter *c = v->user;
    int64_t ext, body = body_count(v, s);
    c->n = sat_add(c->n, te_is_const_int(s->u.loop.extent, &ext) ? sat_mul(ext < 0 ? 0 : ext, body)
                                                                  : STEPS_INF);
    return 0;
}

static int64_t steps(const tir_stmt *s) {
    counter c = {NULL, 0};
    tir_visitor v = {.user = &c, .pre = step_stmt, .kind = {[TIR_FOR] = step_loop}};
    tir_visit(&v, s);
    return c.n;
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
 * UNROLL_MAX_STMTS. The one decision unroll_loop acts on and size_of
 * counts. */
static bool copied_out(const unroll_ctx *uc, const tir_stmt *f, int64_t body_stmts,
                       int64_t *ext) {
    if (!te_is_const_int(f->u.loop.extent, ext) || sat_mul(*ext, body_stmts) > UNROLL_MAX_STMTS)
        return false;
    return f->u.loop.for_kind == TIR_FOR_UNROLLED || (uc->explicit_ && under_pragma(uc, f));
}

/* Every statement but a SEQ counts one; a loop copied out counts its
 * body times its extent. */
static int size_stmt(tir_visitor *v, const tir_stmt *s) {
    counter *c = v->user;
    if (s->kind != TIR_SEQ && s->kind != TIR_FOR) c->n = sat_add(c->n, 1);
    return 0;
}

static int size_loop(tir_visitor *v, const tir_stmt *s) {
    counter *c = v->user;
    const unroll_ctx *outer = c->uc;
    unroll_ctx inner;
    if (outer) {
        inner = *outer;
        enter_pragma(&inner, s);
        c->uc = &inner;
    }
    int64_t body = body_count(v, s), ext;
    c->uc = outer;
    bool copied = outer && copied_out(outer, s, body, &ext);
    c->n = sat_add(c->n, copied ? sat_mul(ext, body) : sat_add(1, body));
    return 0;
}

/* Statements s holds after unroll(uc, s) (uc NULL: as it is), counted
 * without copying. */
static int64_t size_of(const unroll_ctx *uc, const tir_stmt *s) {
    counter c = {uc, 0};
    tir_visitor v = {.user = &c, .pre = size_stmt, .kind = {[TIR_FOR] = size_loop}};
    tir_visit(&v, s);
    return c.n;
}

/* A copy of loop f of another kind (nodes are shared, so never in place). */
static tir_stmt *with_kind(te_ctx *ctx, const tir_stmt *f, tir_for_kind kind) {
    tir_stmt *g = tir_for_with_body(ctx, f, f->u.loop.body);
    if (g) g->u.loop.for_kind = kind;
    return g;
}

/* The unroll walk's one case; its user is the unroll_ctx in force. */
static tir_stmt *unroll_loop(tir_mutator *m, tir_stmt *s) {
    unroll_ctx *uc = m->user, outer = *uc;
    enter_pragma(uc, s);
    tir_stmt *body = tir_mutate(m, s->u.loop.body);
    *uc = outer;
    if (!body) return NULL;
    tir_stmt *f = body == s->u.loop.body ? s : tir_for_with_body(uc->ctx, s, body);
    if (!f) return NULL;

    int64_t ext;
    if (copied_out(uc, f, size_of(NULL, f->u.loop.body), &ext)) return expand(uc->ctx, f, ext);
    if (f->u.loop.for_kind == TIR_FOR_UNROLLED && !te_is_const_int(f->u.loop.extent, &ext))
        return with_kind(uc->ctx, f, TIR_FOR_SERIAL); /* nothing to copy */
    if (under_pragma(uc, f)) /* not explicit, or too big: a hint */
        return with_kind(uc->ctx, f, TIR_FOR_UNROLLED);
    return f; /* an UNROLLED loop too big to copy stays a hint */
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
           size_of(&uc, f->body) > UNROLL_FUNC_MAX_STMTS)
        uc.shift++;
    uc.hints_only = hints_only;
    tir_mutator m = {.ctx = ctx, .user = &uc, .kind = {[TIR_FOR] = unroll_loop}};
    tir_stmt *body = tir_mutate(&m, f->body);
    if (!body) return NULL;
    return body == f->body ? (tir_func *)f : tir_func_with_body(ctx, f, body);
}

tir_func *tir_pass_unroll(te_ctx *ctx, const tir_func *f) { return run_unroll(ctx, f, false); }

tir_func *tir_pass_unroll_hinted(te_ctx *ctx, const tir_func *f) {
    return run_unroll(ctx, f, true);
}
