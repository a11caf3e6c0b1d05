/*
 * autotune/dag.c — compute-DAG analysis: what kind of stage each op is
 * (elementwise, reduction, strictly inlinable, with data reuse) and who
 * reads whom. Follows Ansor's AccessAnalyzer (auto_scheduler/compute_dag.cc).
 */
#include <string.h>

#include "autotune/tune_internal.h"
#include "loom/runtime.h"

typedef struct {
    const te_tensor *self;
    bool elementwise;   /* every read at exactly the own axes */
    bool reuse;         /* some read ignores a data-parallel axis */
    bool expensive;     /* exp, log, erf, ... */
} walk_state;

static void walk(const te_expr *e, void *user);

static void walk_read(const te_expr *e, walk_state *w) {
    const te_tensor *t = w->self;
    const te_tensor *in = e->u.read.tensor;
    bool exact = in->ndim == t->ndim && e->u.read.ndim == t->ndim;
    for (int d = 0; exact && d < t->ndim; d++)
        if (e->u.read.indices[d] != t->axes[d] || in->shape[d] != t->shape[d]) exact = false;
    if (!exact) w->elementwise = false;
    for (int d = 0; d < t->ndim; d++) {
        bool used = false;
        for (int k = 0; k < e->u.read.ndim && !used; k++)
            used = te_expr_uses_var(e->u.read.indices[k], t->axes[d]);
        if (!used && t->shape[d] > 1) w->reuse = true;
    }
}

static void walk(const te_expr *e, void *user) {
    walk_state *w = user;
    if (e->kind == TE_READ) walk_read(e, w);
    if (e->kind == TE_CALL && e->u.call.op != TE_INTRIN_FABS && e->u.call.op != TE_INTRIN_LIKELY &&
        e->u.call.op != TE_INTRIN_FLOOR && e->u.call.op != TE_INTRIN_CEIL)
        w->expensive = true;
    te_expr_visit_children(e, walk, user);
}

static int add_edge(te_ctx *ctx, const char *stage, int *n, int *arr, int v) {
    for (int i = 0; i < *n; i++)
        if (arr[i] == v) return 0;
    if (*n >= TUNE_MAX_EDGES)
        return te_error(ctx, "autotune: stage '%s' has more than TUNE_MAX_EDGES = %d producers "
                             "or consumers",
                        stage, TUNE_MAX_EDGES);
    arr[(*n)++] = v;
    return 0;
}

int tune_dag_analyze(te_ctx *ctx, int nouts, te_tensor *const *outs, tune_dag *out) {
    memset(out, 0, sizeof *out);
    sch_schedule *s = sch_create(ctx, nouts, outs);
    if (!s) return -1;
    int n = sch_num_stages(s);
    if (n > TUNE_MAX_STAGES)
        return te_error(ctx,
                        "autotune: %d stages; the tuner handles at most TUNE_MAX_STAGES = %d", n,
                        TUNE_MAX_STAGES);
    out->nstages = n;
    int64_t cores = rt_num_cores();
    for (int i = 0; i < n; i++) {
        tune_stage_info *si = &out->stages[i];
        te_tensor *t = sch_stage_tensor(s, i);
        si->tensor = t;
        si->is_placeholder = t->kind == TE_OP_PLACEHOLDER;
        for (int o = 0; o < nouts; o++)
            if (outs[o] == t) si->is_output = true;
        if (si->is_placeholder) continue;
        si->is_reduction = t->body->kind == TE_REDUCE;
        walk_state w = {t, true, false, false};
        walk(t->body, &w);
        si->is_elementwise = !si->is_reduction && w.elementwise;
        si->strictly_inlinable = !si->is_reduction && !si->is_output && !w.expensive;
        si->has_data_reuse = si->is_reduction && w.reuse;
        si->needs_tiling = si->has_data_reuse;
        if (si->is_reduction) {
            /* Doubles: only compared, and a product of extents can pass
             * 2^63 (a shape refused later for its memory is still analysed). */
            double space = 1, red = 1;
            for (int d = 0; d < t->ndim; d++) space *= (double)t->shape[d];
            for (int r = 0; r < t->body->u.reduce.naxes; r++)
                red *= (double)t->body->u.reduce.axes[r]->u.var.extent;
            if (si->needs_tiling)
                si->needs_rfactor = !(space > red || space > cores * 16);
            else
                si->needs_rfactor = red > cores && red >= 64;
        }
        for (int k = 0; k < t->ninputs; k++) {
            int p = sch_stage_of(s, t->inputs[k]);
            if (p < 0) continue;
            if (add_edge(ctx, t->name, &si->nproducers, si->producers, p) ||
                add_edge(ctx, t->inputs[k]->name, &out->stages[p].nconsumers,
                         out->stages[p].consumers, i))
                return -1;
        }
    }
    return 0;
}
