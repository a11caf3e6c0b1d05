/*
 * schedule/lower.c — from a schedule to loop IR (TVM te ScheduleOps +
 * MakeLoopNest): one loop nest per stage in its leaf order, with
 *  - stages computed at a loop placed (with their buffer) inside it;
 *  - reductions as an init nest (the data-parallel loops after the first
 *    reduce loop) then an update nest;
 *  - guards `if (likely(...))` where a split does not divide its extent
 *    or an attached region reaches past its tensor's edges, and padding
 *    guards on a sum's update (pad_guard.c: taps that read zero padding
 *    are skipped);
 *  - annotations as loop kinds and pragmas.
 * The result uses BUFFER_LOAD/BUFFER_STORE; tir_run_pipeline does the rest.
 */
#include <stdlib.h>
#include <string.h>

#include "schedule/lower_internal.h"

/* Padding guards a reduction takes (4 per padded 2-D factor). */
#define PAD_GUARDS_MAX 16

static lower_stage *stage_info(lower_state *L, const te_tensor *t, int *idx) {
    int i = sch__stage_index(L->s, t);
    if (idx) *idx = i;
    return i >= 0 ? &L->ls[i] : NULL;
}

/* ---- values: reads become buffer loads relative to the realised region ---- */

typedef struct {
    lower_state *L;
    int nsubst;
    te_expr **vars, **vals;
} value_ctx;

static te_expr *value_map(te_expr *e, void *user) {
    value_ctx *vc = user;
    if (e->kind == TE_VAR) {
        for (int i = 0; i < vc->nsubst; i++)
            if (vc->vars[i] == e) return vc->vals[i];
        return e;
    }
    te_expr *m = te_expr_map_children(vc->L->ctx, e, value_map, user);
    if (!m || m->kind != TE_READ) return m;
    lower_stage *pl = stage_info(vc->L, m->u.read.tensor, NULL);
    if (!pl || !pl->buf) {
        te_error(vc->L->ctx, "lower: tensor '%s' is read but has no buffer",
                 m->u.read.tensor->name);
        return NULL;
    }
    te_expr *idx[TE_MAX_DIMS];
    for (int d = 0; d < m->u.read.ndim; d++) {
        idx[d] = m->u.read.indices[d];
        if (pl->root_min[d]) idx[d] = te_sub(idx[d], pl->root_min[d]);
    }
    return tir_buffer_load(pl->buf, m->u.read.ndim, idx);
}

te_expr *sch__lower_reads(lower_state *L, int nsub, te_expr **vars, te_expr **vals, te_expr *e) {
    value_ctx vc = {L, nsub, vars, vals};
    return value_map(e, &vc);
}

/* ---- guards ---- */

static tir_stmt *guard(lower_state *L, te_expr *cond, tir_stmt *body) {
    te_expr *c = te_analyzer_simplify(L->an, cond);
    int64_t v;
    if (te_is_const_int(c, &v) && v) return body;
    te_expr *likely = te_call(TE_INTRIN_LIKELY, 1, (te_expr *[]){c});
    return tir_if(L->ctx, likely, body, NULL);
}

/* Wraps `body` in the guards dims [0, ndims) of stage st need. */
tir_stmt *sch__lower_guards(lower_state *L, int st, int from, int to, tir_stmt *body) {
    const sch_stage *g = &L->s->stages[st];
    lower_stage *ls = &L->ls[st];
    te_ctx *ctx = L->ctx;
    for (int d = to - 1; d >= from && body; d--) {
        te_expr *v = sch__lower_value(L, st, g->root[d]);
        int64_t ext = d < g->op->ndim ? ls->root_ext[d] : g->root[d]->u.var.extent;
        int64_t lo, hi;
        te_analyzer_const_bound(L->an, v, &lo, &hi);
        if (hi >= ext) body = guard(L, te_lt(v, te_int(ctx, ext)), body);
        if (d < g->op->ndim && ls->root_min[d]) {
            /* An attached region may hang over the tensor's edges. */
            te_expr *full = te_add(ls->root_min[d], v);
            te_analyzer_const_bound(L->an, full, &lo, &hi);
            if (hi >= g->op->shape[d])
                body = guard(L, te_lt(full, te_int(ctx, g->op->shape[d])), body);
            if (lo < 0) body = guard(L, te_ge(full, te_int(ctx, 0)), body);
        }
    }
    return body;
}

/* ---- loop nests ---- */

static tir_stmt *stage_nest(lower_state *L, int st);

/* Stages computed at leaf `var` of stage st, each allocated around the rest. */
static tir_stmt *with_attached(lower_state *L, int st, const te_expr *var, tir_stmt *inner) {
    sch_schedule *s = L->s;
    int n = 0;
    int ids[64];
    for (int i = 0; i < s->nstages && n < 64; i++)
        if (s->stages[i].attach == SCH_ATTACH_AT && s->stages[i].attach_stage == st &&
            s->stages[i].attach_iter == var)
            ids[n++] = i;
    if (n == 0) return inner;
    tir_stmt *parts[65];
    for (int k = 0; k < n; k++) {
        if (!(parts[k] = stage_nest(L, ids[k]))) return NULL;
        /* tir_pass_double_buffer finds the copy by this mark */
        /* a loop of one iteration has nothing to copy ahead: its copy
         * stays as it is (the same program either way) */
        int nb = var->kind == TE_VAR && var->u.var.extent == 1 ? 0 : s->stages[ids[k]].buffers;
        if (nb && !(parts[k] = tir_attr(L->ctx, TIR_ATTR_DOUBLE_BUFFER, te_int(L->ctx, nb),
                                        parts[k])))
            return NULL;
    }
    parts[n] = inner;
    tir_stmt *body = tir_seq(L->ctx, n + 1, parts);
    for (int k = n - 1; k >= 0; k--) body = tir_allocate(L->ctx, L->ls[ids[k]].buf, body);
    return body;
}

tir_stmt *sch__lower_loop(lower_state *L, int st, te_expr *var, tir_stmt *body) {
    const sch_stage *g = &L->s->stages[st];
    const sch_iter_attr *a = sch__attr(g, var);
    tir_for_kind kind = TIR_FOR_SERIAL;
    if (a) {
        switch (a->ann) {
        case SCH_ANN_VECTORIZE: kind = TIR_FOR_VECTORIZED; break;
        case SCH_ANN_UNROLL: kind = TIR_FOR_UNROLLED; break;
        case SCH_ANN_PARALLEL: kind = TIR_FOR_PARALLEL; break;
        case SCH_ANN_BIND: kind = TIR_FOR_THREAD; break;
        default: break;
        }
    }
    tir_stmt *f = tir_for(L->ctx, var, te_int(L->ctx, 0),
                          te_int(L->ctx, sch__lower_ext(L, st, var)), kind, body);
    if (f && a) {
        if (a->ann == SCH_ANN_BIND) f->u.loop.thread_tag = a->thread_tag;
        if (a->auto_unroll_max_step >= 0) f->u.loop.auto_unroll_max_step = a->auto_unroll_max_step;
        if (a->unroll_explicit >= 0) f->u.loop.unroll_explicit = a->unroll_explicit != 0;
    }
    return f;
}

/* Loops leaf[from..to) (skipping reduce leaves if data_par_only) around body. */
static tir_stmt *wrap_loops(lower_state *L, int st, int from, int to, bool data_par_only,
                            bool attach, tir_stmt *body) {
    const sch_stage *g = &L->s->stages[st];
    for (int k = to - 1; k >= from && body; k--) {
        te_expr *v = g->leaf[k];
        if (data_par_only && v->u.var.iter == TE_ITER_REDUCE) continue;
        if (attach) body = with_attached(L, st, v, body);
        if (body) body = sch__lower_loop(L, st, v, body);
    }
    return body;
}

/* wrap_loops for a reduction's update: each padding guard just inside the
 * loop of its level, those of no level in [from, to) around the nest. */
static tir_stmt *wrap_guarded(lower_state *L, int st, int from, int to, int nguards,
                              const lower_pad_guard *guards, tir_stmt *body) {
    for (int k = to - 1; k >= from - 1 && body; k--) {
        te_expr *c = NULL;
        for (int i = 0; i < nguards; i++)
            if (k >= from ? guards[i].level == k : guards[i].level < from)
                c = c ? te_and(c, guards[i].cond) : guards[i].cond;
        if (c) body = guard(L, c, body);
        if (k >= from && body) body = wrap_loops(L, st, k, k + 1, false, true, body);
    }
    return body;
}

static tir_stmt *stage_nest(lower_state *L, int st) {
    const sch_stage *g = &L->s->stages[st];
    lower_stage *ls = &L->ls[st];
    te_ctx *ctx = L->ctx;
    const te_tensor *op = g->op;
    int ndim = op->ndim;

    /* Root variables of the body, as functions of the leaves. */
    te_expr *vars[TE_MAX_DIMS + 64], *vals[TE_MAX_DIMS + 64];
    int nsub = 0;
    te_expr *store_idx[TE_MAX_DIMS];
    for (int d = 0; d < g->nroot && nsub < TE_MAX_DIMS + 64; d++) {
        te_expr *v = sch__lower_value(L, st, g->root[d]);
        if (d < ndim) store_idx[d] = v;
        if (d < ndim && ls->root_min[d]) v = te_add(ls->root_min[d], v);
        vars[nsub] = g->root[d];
        vals[nsub++] = v;
    }
    value_ctx vc = {L, nsub, vars, vals};
    te_expr *body = ls->body;
    int first_red = g->nleaf;
    for (int k = 0; k < g->nleaf; k++)
        if (g->leaf[k]->u.var.iter == TE_ITER_REDUCE) {
            first_red = k;
            break;
        }

    for (int k = 0; k < g->nleaf; k++) {
        const sch_iter_attr *a = sch__attr(g, g->leaf[k]);
        if (!a || !a->tensorize) continue;
        sch_tensorized tz = {0};
        if (sch__lower_tensorize(L, st, k, a->tensorize, store_idx, nsub, vars, vals, &tz))
            return NULL;
        /* init (a reduction's fill) before the reduce loops, over the
         * data-parallel loops between them and the intrinsic. */
        tir_stmt *update = wrap_loops(L, st, first_red < k ? first_red : k, k, false, true,
                                      tz.call);
        if (tz.init) {
            tir_stmt *init = wrap_loops(L, st, first_red, k, true, false, tz.init);
            if (!init || !update) return NULL;
            update = tir_seq(ctx, 2, (tir_stmt *[]){init, update});
        }
        if (!update) return NULL;
        return wrap_loops(L, st, 0, first_red < k ? first_red : k, false, true, update);
    }

    tir_stmt *inner;
    if (body->kind != TE_REDUCE) {
        te_expr *value = value_map(body, &vc);
        if (!value) return NULL;
        inner = tir_buffer_store(ctx, ls->buf, ndim, store_idx, value);
        inner = sch__lower_guards(L, st, 0, g->nroot, inner);
        inner = wrap_loops(L, st, first_red, g->nleaf, false, true, inner);
    } else {
        te_reduce_op rop = body->u.reduce.op;
        bool xreduce = sch__xreduce_axis(g) != NULL;
        lower_pad_guard pg[PAD_GUARDS_MAX];
        te_expr *te_src = body->u.reduce.source;
        int npg = xreduce ? 0
                          : sch__lower_pad_guards(L, st, nsub, vars, vals, &te_src, pg,
                                                  PAD_GUARDS_MAX);
        if (npg < 0) return NULL;
        te_expr *src = value_map(te_src, &vc);
        if (!src) return NULL;
        if (xreduce) {
            /* A reduce axis on threadIdx.x: reduced across threads. */
            inner = sch__lower_xreduce(L, st, store_idx, src, first_red);
            if (!inner) return NULL;
            return wrap_loops(L, st, 0, first_red, false, true, inner);
        }
        te_expr *acc = tir_buffer_load(ls->buf, ndim, store_idx);
        tir_stmt *init = tir_buffer_store(ctx, ls->buf, ndim, store_idx,
                                          te_reduce_identity(ctx, rop, op->dtype));
        init = sch__lower_guards(L, st, 0, ndim, init);
        init = wrap_loops(L, st, first_red, g->nleaf, true, false, init);
        tir_stmt *update = tir_buffer_store(ctx, ls->buf, ndim, store_idx,
                                            te_reduce_combine(rop, acc, src));
        update = sch__lower_guards(L, st, 0, g->nroot, update);
        update = wrap_guarded(L, st, first_red, g->nleaf, npg, pg, update);
        if (!init || !update) return NULL;
        inner = tir_seq(ctx, 2, (tir_stmt *[]){init, update});
    }
    return wrap_loops(L, st, 0, first_red, false, true, inner);
}

/* ---- buffers ---- */

static tir_buffer *stage_buffer(lower_state *L, int st, bool param) {
    const sch_stage *g = &L->s->stages[st];
    const te_tensor *op = g->op;
    lower_stage *ls = &L->ls[st];
    int64_t shape[TE_MAX_DIMS];
    for (int d = 0; d < op->ndim; d++)
        shape[d] = (op->kind == TE_OP_COMPUTE && !param) ? ls->root_ext[d] : op->shape[d];
    tir_scope scope = g->scope >= 0                ? (tir_scope)g->scope
                      : g->attach == SCH_ATTACH_AT ? TIR_SCOPE_LOCAL
                                                   : TIR_SCOPE_GLOBAL;
    if (param) scope = TIR_SCOPE_GLOBAL;
    tir_buffer *b = tir_buffer_new(L->ctx, op->name, op->dtype, op->ndim, shape, scope);
    if (!b) return NULL;
    b->is_param = param;
    if (g->nalign && !param) {
        int64_t stride = 1;
        for (int d = op->ndim - 1; d >= 0; d--) {
            for (int k = 0; k < g->nalign; k++) {
                const sch_align *a = &g->aligns[k];
                if (a->dim != d) continue;
                int64_t r = ((stride - a->offset) % a->factor + a->factor) % a->factor;
                if (r) stride += a->factor - r;
            }
            b->strides[d] = stride;
            stride *= shape[d];
        }
    }
    return b;
}

int sch__lower_args(lower_state *L, int nargs, te_tensor *const *args) {
    sch_schedule *s = L->s;
    te_ctx *ctx = L->ctx;
    /* Arguments: every placeholder read and every output, each once. */
    int *arg_stage = te_alloc(ctx, sizeof(int) * (size_t)(nargs > 0 ? nargs : 1));
    if (!arg_stage) return -1;
    for (int i = 0; i < nargs; i++) {
        if (!args || !args[i]) return te_error(ctx, "lower: argument %d is NULL", i);
        arg_stage[i] = sch__stage_index(s, args[i]);
        if (arg_stage[i] < 0)
            return te_error(ctx, "lower: argument %d ('%s') is not a tensor of this schedule", i,
                            args[i]->name);
        for (int j = 0; j < i; j++)
            if (arg_stage[j] == arg_stage[i])
                return te_error(ctx, "lower: tensor '%s' is passed twice (arguments %d and %d)",
                                args[i]->name, j, i);
        const sch_stage *g = &s->stages[arg_stage[i]];
        if (g->op->kind == TE_OP_COMPUTE && g->attach != SCH_ATTACH_ROOT)
            return te_error(ctx,
                            "lower: argument '%s' is %s; a tensor passed by the caller must be "
                            "computed at the root",
                            args[i]->name,
                            g->attach == SCH_ATTACH_INLINE ? "inlined"
                                                           : "computed at another stage");
    }
    for (int i = 0; i < s->nstages; i++) {
        const sch_stage *g = &s->stages[i];
        bool passed = false;
        for (int j = 0; j < nargs; j++) passed |= arg_stage[j] == i;
        if (passed) continue;
        if (g->op->kind == TE_OP_PLACEHOLDER)
            return te_error(ctx, "lower: the arguments miss input '%s', which the schedule reads",
                            g->op->name);
        if (g->is_output) return te_error(ctx, "lower: the arguments miss output '%s'", g->op->name);
    }
    L->nargs = nargs;
    L->args = args;
    L->arg_stage = arg_stage;
    return 0;
}

int sch__lower_add_args(lower_state *L, int n, te_tensor *const *extra) {
    te_ctx *ctx = L->ctx;
    int total = L->nargs + n;
    te_tensor **all = te_alloc(ctx, sizeof(te_tensor *) * (size_t)(total > 0 ? total : 1));
    int *st = te_alloc(ctx, sizeof(int) * (size_t)(total > 0 ? total : 1));
    if (!all || !st) return -1;
    if (L->nargs) {
        memcpy(all, L->args, sizeof(te_tensor *) * (size_t)L->nargs);
        memcpy(st, L->arg_stage, sizeof(int) * (size_t)L->nargs);
    }
    for (int i = 0; i < n; i++) {
        all[L->nargs + i] = extra[i];
        st[L->nargs + i] = sch__stage_index(L->s, extra[i]);
    }
    L->args = all;
    L->arg_stage = st;
    L->nargs = total;
    return 0;
}

int sch__lower_check_attach(lower_state *L) {
    sch_schedule *s = L->s;
    te_ctx *ctx = L->ctx;
    /* Each stage read outside its attach point would read garbage. */
    for (int p = 0; p < s->nstages; p++) {
        const sch_stage *g = &s->stages[p];
        if (g->buffers && g->attach != SCH_ATTACH_AT)
            return te_error(ctx,
                            "double_buffer: stage '%s' is computed %s; it must be computed at a "
                            "serial loop of its consumer (compute_at), whose next iteration it "
                            "copies ahead",
                            g->op->name, g->attach == SCH_ATTACH_INLINE ? "inline" : "at the root");
        if (g->attach != SCH_ATTACH_AT) continue;
        if (s->stages[g->attach_stage].attach == SCH_ATTACH_INLINE)
            return te_error(ctx, "lower: stage '%s' is computed at stage '%s', which is inlined",
                            g->op->name, s->stages[g->attach_stage].op->name);
        int pos = sch__leaf_pos(&s->stages[g->attach_stage], g->attach_iter);
        for (int c = 0; c < s->nstages; c++) {
            if (c == g->attach_stage || c == p || s->stages[c].attach == SCH_ATTACH_INLINE ||
                !L->ls[c].body || sch__nested_in(s, c, g->attach_stage, pos))
                continue;
            const sch_stage *cg = &s->stages[c];
            if (sch__expr_reads(s, L->ls[c].body, p))
                return te_error(ctx,
                                "lower: stage '%s' is computed at stage '%s' but is also read "
                                "by stage '%s', which is not computed inside that loop",
                                g->op->name, s->stages[g->attach_stage].op->name, cg->op->name);
        }
    }
    return 0;
}

int sch__lower_buffers(lower_state *L) {
    sch_schedule *s = L->s;
    int nargs = L->nargs;
    L->params = te_alloc(L->ctx, sizeof(tir_buffer *) * (size_t)(nargs > 0 ? nargs : 1));
    if (!L->params) return -1;
    for (int i = 0; i < nargs; i++) {
        L->ls[L->arg_stage[i]].buf = stage_buffer(L, L->arg_stage[i], true);
        L->params[i] = L->ls[L->arg_stage[i]].buf;
        if (!L->params[i]) return -1;
    }
    for (int i = 0; i < s->nstages; i++) {
        const sch_stage *g = &s->stages[i];
        if (L->ls[i].buf || g->op->kind != TE_OP_COMPUTE || g->attach == SCH_ATTACH_INLINE)
            continue;
        if (!(L->ls[i].buf = stage_buffer(L, i, false))) return -1;
        if (g->swizzle) {
            if (sch__lower_check_swizzle(L->ctx, g, L->ls[i].buf, L->gpu)) return -1;
            L->ls[i].buf->swizzle = g->swizzle;
        }
    }
    return 0;
}

tir_func *sch__lower_nests(lower_state *L, const char *name, const bool *emit) {
    sch_schedule *s = L->s;
    te_ctx *ctx = L->ctx;
    /* Root stages in order, intermediates allocated around everything. */
    int nroot = 0;
    tir_stmt **parts = te_alloc(ctx, sizeof(tir_stmt *) * (size_t)(s->nstages + 1));
    if (!parts) return NULL;
    for (int i = 0; i < s->nstages; i++) {
        const sch_stage *g = &s->stages[i];
        if (g->op->kind != TE_OP_COMPUTE || g->attach != SCH_ATTACH_ROOT) continue;
        if (emit && !emit[i]) continue;
        if (!(parts[nroot++] = stage_nest(L, i))) return NULL;
    }
    tir_stmt *body = tir_seq(ctx, nroot, parts);
    for (int i = s->nstages - 1; i >= 0 && body; i--) {
        const sch_stage *g = &s->stages[i];
        if (g->op->kind != TE_OP_COMPUTE || g->attach != SCH_ATTACH_ROOT ||
            L->ls[i].buf->is_param || (emit && !emit[i]))
            continue;
        body = tir_allocate(ctx, L->ls[i].buf, body);
    }
    return body ? tir_func_new(ctx, name, L->nargs, L->params, body) : NULL;
}
