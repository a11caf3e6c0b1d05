/*
 * schedule/annotate.c — loop annotations (vectorize, unroll, parallel,
 * bind) and pragmas (auto_unroll_max_step, unroll_explicit). They change
 * no iteration space, only how lowering emits the loop.
 */
#include <string.h>

#include "schedule/lower_internal.h"

static const char *ann_name(sch_annotation a) {
    switch (a) {
    case SCH_ANN_VECTORIZE: return "vectorize";
    case SCH_ANN_UNROLL: return "unroll";
    case SCH_ANN_PARALLEL: return "parallel";
    case SCH_ANN_BIND: return "bind";
    default: return "none";
    }
}

static bool valid_thread_tag(const char *tag) {
    static const char *tags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                 "threadIdx.y", "threadIdx.z", "vthread"};
    for (size_t i = 0; tag && i < sizeof tags / sizeof *tags; i++)
        if (!strcmp(tag, tags[i])) return true;
    return false;
}

static sch_iter_attr attr_or_default(const sch_stage *st, te_expr *var) {
    const sch_iter_attr *a = sch__attr(st, var);
    if (a) return *a;
    return (sch_iter_attr){.var = var, .auto_unroll_max_step = -1, .unroll_explicit = -1};
}

/* The tensorize step (the intrinsic's match is checked when lowering,
 * once bound inference knows the loops' extents: schedule/tensorize.c). */
int sch__apply_tensorize(sch_schedule *s, const sch_step *step) {
    te_ctx *ctx = s->ctx;
    sch_stage *st = &s->stages[step->stage];
    if (st->op->kind != TE_OP_COMPUTE)
        return te_error(ctx, "tensorize: stage '%s' is a placeholder and has no loops",
                        st->op->name);
    if (step->iter < 0 || step->iter >= st->nleaf)
        return te_error(ctx, "tensorize: stage '%s' has no loop %d", st->op->name, step->iter);
    te_expr *var = st->leaf[step->iter];
    const char *name = step->str ? step->str : "(null)";
    if (!sch__tensor_intrin_known(name))
        return te_error(ctx,
                        "tensorize: unknown intrinsic '%s' for axis '%s' of stage '%s' (known: "
                        "%s)",
                        name, var->u.var.name, st->op->name, sch__tensor_intrin_list());
    for (int i = 0; i < st->nattr; i++)
        if (st->attrs[i].tensorize)
            return te_error(ctx,
                            "tensorize: stage '%s' is already tensorized at axis '%s' (one "
                            "intrinsic per stage)",
                            st->op->name, st->attrs[i].var->u.var.name);
    sch_iter_attr a = attr_or_default(st, var);
    a.tensorize = te_strdup(ctx, name);
    sch__set_attr(ctx, st, &a);
    return 0;
}

int sch_tensorize(sch_schedule *s, te_tensor *t, te_expr *axis, const char *intrin) {
    if (!s) return -1;
    int st = sch__find_stage(s, "tensorize", t);
    if (st < 0) return -1;
    int it = sch__leaf_index(s, "tensorize", st, axis);
    if (it < 0) return -1;
    sch_step step = {.kind = SCH_STEP_TENSORIZE, .stage = st, .iter = it, .str = intrin};
    return sch__apply(s, &step, NULL, NULL, NULL);
}

int sch__apply_annotate(sch_schedule *s, const sch_step *step) {
    te_ctx *ctx = s->ctx;
    sch_stage *st = &s->stages[step->stage];
    const char *prim = ann_name(step->ann);
    if (step->ann < SCH_ANN_VECTORIZE || step->ann > SCH_ANN_BIND)
        return te_error(ctx, "annotate: unknown annotation %d", (int)step->ann);
    if (st->op->kind != TE_OP_COMPUTE)
        return te_error(ctx, "%s: stage '%s' is a placeholder and has no loops", prim,
                        st->op->name);
    if (step->iter < 0 || step->iter >= st->nleaf)
        return te_error(ctx, "%s: stage '%s' has no loop %d", prim, st->op->name, step->iter);
    te_expr *var = st->leaf[step->iter];
    if (step->ann != SCH_ANN_UNROLL && step->ann != SCH_ANN_BIND &&
        var->u.var.iter == TE_ITER_REDUCE)
        return te_error(ctx,
                        "%s: axis '%s' of stage '%s' is a reduce axis; only data-parallel axes "
                        "can be %s",
                        prim, var->u.var.name, st->op->name,
                        step->ann == SCH_ANN_VECTORIZE  ? "vectorized"
                                                        : "parallelized");
    if (step->ann == SCH_ANN_BIND && !valid_thread_tag(step->str))
        return te_error(ctx,
                        "bind: thread tag '%s' for axis '%s' of stage '%s' is not one of "
                        "blockIdx.x|y|z, threadIdx.x|y|z, vthread",
                        step->str ? step->str : "(null)", var->u.var.name, st->op->name);
    /* A reduce axis on threadIdx.x is a cross-thread reduction (xreduce.c). */
    if (step->ann == SCH_ANN_BIND && sch__xreduce_check_bind(ctx, st, var, step->str)) return -1;
    sch_iter_attr a = attr_or_default(st, var);
    if (a.ann != SCH_ANN_NONE && a.ann != step->ann)
        return te_error(ctx, "%s: axis '%s' of stage '%s' is already annotated %s", prim,
                        var->u.var.name, st->op->name, ann_name(a.ann));
    a.ann = step->ann;
    a.thread_tag = step->ann == SCH_ANN_BIND ? te_strdup(ctx, step->str) : NULL;
    sch__set_attr(ctx, st, &a);
    return 0;
}

static int annotate(sch_schedule *s, te_tensor *t, te_expr *axis, sch_annotation ann,
                    const char *tag) {
    if (!s) return -1;
    const char *prim = ann_name(ann);
    int st = sch__find_stage(s, prim, t);
    if (st < 0) return -1;
    int it = sch__leaf_index(s, prim, st, axis);
    if (it < 0) return -1;
    sch_step step = {.kind = SCH_STEP_ANNOTATE, .stage = st, .iter = it, .ann = ann,
                     .str = tag};
    return sch__apply(s, &step, NULL, NULL, NULL);
}

int sch_vectorize(sch_schedule *s, te_tensor *t, te_expr *axis) {
    return annotate(s, t, axis, SCH_ANN_VECTORIZE, NULL);
}
int sch_unroll(sch_schedule *s, te_tensor *t, te_expr *axis) {
    return annotate(s, t, axis, SCH_ANN_UNROLL, NULL);
}
int sch_parallel(sch_schedule *s, te_tensor *t, te_expr *axis) {
    return annotate(s, t, axis, SCH_ANN_PARALLEL, NULL);
}
int sch_bind(sch_schedule *s, te_tensor *t, te_expr *axis, const char *thread_tag) {
    return annotate(s, t, axis, SCH_ANN_BIND, thread_tag);
}

int sch__apply_pragma(sch_schedule *s, const sch_step *step) {
    te_ctx *ctx = s->ctx;
    sch_stage *st = &s->stages[step->stage];
    if (st->op->kind != TE_OP_COMPUTE)
        return te_error(ctx, "pragma: stage '%s' is a placeholder and has no loops",
                        st->op->name);
    if (step->iter < 0 || step->iter >= st->nleaf)
        return te_error(ctx, "pragma: stage '%s' has no loop %d", st->op->name, step->iter);
    te_expr *var = st->leaf[step->iter];
    sch_iter_attr a = attr_or_default(st, var);
    const char *name = step->str ? step->str : "(null)";
    if (!strcmp(name, "auto_unroll_max_step")) {
        if (step->value < 0)
            return te_error(ctx,
                            "pragma: auto_unroll_max_step %lld on axis '%s' of stage '%s' must "
                            "be >= 0",
                            (long long)step->value, var->u.var.name, st->op->name);
        a.auto_unroll_max_step = step->value;
    } else if (!strcmp(name, "unroll_explicit")) {
        if (step->value != 0 && step->value != 1)
            return te_error(ctx,
                            "pragma: unroll_explicit %lld on axis '%s' of stage '%s' must be 0 "
                            "or 1",
                            (long long)step->value, var->u.var.name, st->op->name);
        a.unroll_explicit = (int)step->value;
    } else {
        return te_error(ctx,
                        "pragma: unknown pragma '%s' on axis '%s' of stage '%s' (known: "
                        "auto_unroll_max_step, unroll_explicit)",
                        name, var->u.var.name, st->op->name);
    }
    sch__set_attr(ctx, st, &a);
    return 0;
}

int sch_pragma(sch_schedule *s, te_tensor *t, te_expr *axis, const char *pragma, int64_t value) {
    if (!s) return -1;
    int st = sch__find_stage(s, "pragma", t);
    if (st < 0) return -1;
    int it = sch__leaf_index(s, "pragma", st, axis);
    if (it < 0) return -1;
    sch_step step = {.kind = SCH_STEP_PRAGMA, .stage = st, .iter = it, .value = value,
                     .str = pragma};
    return sch__apply(s, &step, NULL, NULL, NULL);
}
