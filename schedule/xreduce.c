/*
 * schedule/xreduce.c — cross-thread reduction: a reduce axis (or a split
 * part of one) bound to threadIdx.x (TVM: binding a reduce IterVar to a
 * thread axis, te/operation/cross_thread_reduction.cc, lowered to
 * tvm_thread_allreduce).
 *
 * The rules, checked when binding (sch_bind, replay) and again when
 * lowering (the loop order may change after the bind):
 *  - only threadIdx.x: the allreduce combines the threads of one x-row of
 *    the block, as warp shuffles do (TVM also allows y/z; Loom keeps one
 *    form the CUDA emitter expands well);
 *  - one bound reduce axis per stage, and no data-parallel axis of the
 *    same stage on threadIdx.x;
 *  - the element type is int32, int64, float32 or float64 (what
 *    __shfl_down_sync moves); every TE reduction (sum, prod, min, max) is
 *    associative and commutative, so the order of combination is free;
 *  - at lowering: every data-parallel loop of the stage is outside its
 *    reduce loops, and no stage is computed at one of its reduce loops.
 *
 * Lowering of such a stage C (inside its data-parallel loops):
 *   for (k.i, 0, T) threadIdx.x {            // the bound reduce leaf
 *     allocate C.red[1] local {
 *       C.red[0] = identity
 *       for (k.o ...) serial                  // the other reduce leaves
 *         if (guards) C.red[0] = combine(C.red[0], source)
 *       C.v = allreduce.op(C.red[0], threadIdx.x extent T) {
 *         if (k.i == 0) if (guards) C[...] = C.v
 *       }
 *   } }
 * Each thread reduces its serial part in a register, the allreduce
 * combines the partials of the T threads, and one thread stores. The
 * guards never surround the allreduce: every thread must reach it.
 */
#include <string.h>

#include "schedule/lower_internal.h"

static bool is_bound_to(const sch_stage *st, const te_expr *var, const char *tag) {
    const sch_iter_attr *a = sch__attr(st, var);
    return a && a->ann == SCH_ANN_BIND && a->thread_tag && !strcmp(a->thread_tag, tag);
}

te_expr *sch__xreduce_axis(const sch_stage *st) {
    for (int k = 0; k < st->nleaf; k++)
        if (st->leaf[k]->u.var.iter == TE_ITER_REDUCE && is_bound_to(st, st->leaf[k], "threadIdx.x"))
            return st->leaf[k];
    return NULL;
}

static bool allreduce_type(te_dtype t) {
    return t.lanes == 1 && ((t.code == TE_FLOAT && (t.bits == 32 || t.bits == 64)) ||
                            (t.code == TE_INT && (t.bits == 32 || t.bits == 64)));
}

int sch__xreduce_check_bind(te_ctx *ctx, const sch_stage *st, const te_expr *var,
                            const char *tag) {
    const char *name = st->op->name;
    bool reduce = var->u.var.iter == TE_ITER_REDUCE;
    if (!reduce) {
        /* A data-parallel axis on threadIdx.x next to a bound reduce axis
         * would give threadIdx.x two meanings in one loop nest. */
        te_expr *r = sch__xreduce_axis(st);
        if (r && !strcmp(tag, "threadIdx.x") && r != var)
            return te_error(ctx,
                            "bind: stage '%s' reduces across threadIdx.x (reduce axis '%s'); its "
                            "data-parallel axis '%s' cannot be bound to threadIdx.x too",
                            name, r->u.var.name, var->u.var.name);
        return 0;
    }
    if (strcmp(tag, "threadIdx.x"))
        return te_error(ctx,
                        "bind: reduce axis '%s' of stage '%s' can only be bound to threadIdx.x "
                        "(a cross-thread reduction), not '%s'",
                        var->u.var.name, name, tag);
    if (!st->op->body || st->op->body->kind != TE_REDUCE)
        return te_error(ctx, "bind: stage '%s' is not a reduction; axis '%s' cannot reduce "
                             "across threads",
                        name, var->u.var.name);
    if (!allreduce_type(st->op->dtype))
        return te_error(ctx,
                        "bind: stage '%s' has type %s; a cross-thread reduction (reduce axis '%s' "
                        "on threadIdx.x) needs int32, int64, float32 or float64",
                        name, te_dtype_str(st->op->dtype), var->u.var.name);
    te_expr *r = sch__xreduce_axis(st);
    if (r && r != var)
        return te_error(ctx,
                        "bind: stage '%s' already reduces across threadIdx.x over axis '%s'; only "
                        "one reduce axis ('%s' is another) can be bound",
                        name, r->u.var.name, var->u.var.name);
    for (int k = 0; k < st->nleaf; k++) {
        te_expr *v = st->leaf[k];
        if (v != var && v->u.var.iter != TE_ITER_REDUCE && is_bound_to(st, v, "threadIdx.x"))
            return te_error(ctx,
                            "bind: data-parallel axis '%s' of stage '%s' is already bound to "
                            "threadIdx.x; reduce axis '%s' cannot be bound to it too",
                            v->u.var.name, name, var->u.var.name);
    }
    return 0;
}

/* The lowering-time rules (loop order and attachments). */
static int check_lower(lower_state *L, int st, const te_expr *tx, int first_red) {
    const sch_stage *g = &L->s->stages[st];
    const char *name = g->op->name;
    for (int k = first_red; k < g->nleaf; k++)
        if (g->leaf[k]->u.var.iter != TE_ITER_REDUCE)
            return te_error(L->ctx,
                            "lower: stage '%s' reduces across threads (axis '%s' on threadIdx.x) "
                            "but its data-parallel loop '%s' is inside reduce loop '%s'; reorder "
                            "the data-parallel loops outside the reduce loops",
                            name, tx->u.var.name, g->leaf[k]->u.var.name,
                            g->leaf[first_red]->u.var.name);
    for (int i = 0; i < L->s->nstages; i++) {
        const sch_stage *o = &L->s->stages[i];
        if (o->attach != SCH_ATTACH_AT || o->attach_stage != st) continue;
        for (int k = first_red; k < g->nleaf; k++)
            if (o->attach_iter == g->leaf[k])
                return te_error(L->ctx,
                                "lower: stage '%s' is computed at reduce loop '%s' of stage '%s', "
                                "which reduces across threads; compute it at a data-parallel loop",
                                o->op->name, g->leaf[k]->u.var.name, name);
    }
    if (!allreduce_type(g->op->dtype))
        return te_error(L->ctx, "lower: stage '%s' of type %s cannot reduce across threads",
                        name, te_dtype_str(g->op->dtype));
    return 0;
}

tir_stmt *sch__lower_xreduce(lower_state *L, int st, te_expr *const *store_idx, te_expr *src,
                             int first_red) {
    const sch_stage *g = &L->s->stages[st];
    lower_stage *ls = &L->ls[st];
    te_ctx *ctx = L->ctx;
    const te_tensor *op = g->op;
    te_expr *tx = sch__xreduce_axis(g);
    if (!tx || check_lower(L, st, tx, first_red)) return NULL;
    te_reduce_op rop = op->body->u.reduce.op;
    tir_buffer *red = tir_buffer_new(ctx, te_sprintf(ctx, "%s.red", op->name), op->dtype, 1,
                                     (int64_t[]){1}, TIR_SCOPE_LOCAL);
    te_expr *result = te_var(ctx, te_sprintf(ctx, "%s.v", op->name), op->dtype);
    if (!red || !result) return NULL;
    te_expr *zero = te_int(ctx, 0);
    te_expr *acc = tir_buffer_load(red, 1, &zero);

    tir_stmt *init = tir_buffer_store(ctx, red, 1, &zero, te_reduce_identity(ctx, rop, op->dtype));
    tir_stmt *update = tir_buffer_store(ctx, red, 1, &zero, te_reduce_combine(rop, acc, src));
    update = sch__lower_guards(L, st, 0, g->nroot, update);
    for (int k = g->nleaf - 1; k >= first_red && update; k--)
        if (g->leaf[k] != tx) update = sch__lower_loop(L, st, g->leaf[k], update);

    tir_stmt *store = tir_buffer_store(ctx, ls->buf, op->ndim, store_idx, result);
    store = sch__lower_guards(L, st, 0, op->ndim, store);
    if (!init || !update || !store) return NULL;
    store = tir_if(ctx, te_eq(tx, te_int(ctx, 0)), store, NULL);
    int64_t T = sch__lower_ext(L, st, tx);
    tir_stmt *ar = tir_allreduce(ctx, rop, acc, result, T, store);
    if (!ar) return NULL;
    tir_stmt *body = tir_seq(ctx, 3, (tir_stmt *[]){init, update, ar});
    body = tir_allocate(ctx, red, body);
    return body ? sch__lower_loop(L, st, tx, body) : NULL;
}
