/*
 * schedule/lower_print.c — the lowering state as text, for the IR dump of
 * the list's steps that come before loop nests exist (LOOM_DUMP_IR):
 * what inlining made of each stage's body, and what bound inference
 * decided (each stage's realised region and loop extents).
 */
#include "schedule/lower_internal.h"

void sch__lower_print_bodies(const lower_state *L, te_str *out) {
    for (int i = 0; i < L->s->nstages; i++) {
        const sch_stage *g = &L->s->stages[i];
        if (g->op->kind != TE_OP_COMPUTE) continue;
        te_str_printf(out, "%s", g->op->name);
        if (g->attach == SCH_ATTACH_INLINE) {
            te_str_append(out, ": inlined\n");
            continue;
        }
        te_str_append(out, " = ");
        if (L->ls[i].body) te_expr_print(out, L->ls[i].body);
        te_str_append(out, "\n");
    }
}

void sch__lower_print_bounds(const lower_state *L, te_str *out) {
    for (int i = 0; i < L->s->nstages; i++) {
        const sch_stage *g = &L->s->stages[i];
        const lower_stage *ls = &L->ls[i];
        if (g->op->kind != TE_OP_COMPUTE || g->attach == SCH_ATTACH_INLINE) continue;
        te_str_printf(out, "%s: region", g->op->name);
        for (int d = 0; d < g->op->ndim; d++) {
            te_str_append(out, d ? ", [" : " [");
            if (ls->root_min[d]) te_expr_print(out, ls->root_min[d]);
            else te_str_append(out, "0");
            te_str_printf(out, ", +%lld)", (long long)ls->root_ext[d]);
        }
        te_str_append(out, "; loops");
        for (int k = 0; k < g->nleaf; k++)
            te_str_printf(out, " %s:%lld", g->leaf[k]->u.var.name,
                          (long long)sch__lower_ext(L, i, g->leaf[k]));
        te_str_append(out, "\n");
    }
}
