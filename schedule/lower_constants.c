/*
 * schedule/lower_constants.c — a lowering split in two around constant
 * arguments: the root stages computed from constants alone (a packed copy
 * of the weights) go to a function run once, the rest to the function run
 * in every call. Both halves come from one run of the lowering list
 * (lower_list.c) with the pre-computed stages passed as extra arguments,
 * each emitting its share of the root stages, so bound inference and
 * buffer layouts agree.
 */
#include <string.h>

#include "schedule/lower_internal.h"

int sch__lower_precomputed(lower_state *L, uint64_t constant, bool *pre) {
    const sch_schedule *s = L->s;
    int nargs = L->nargs;
    const int *arg_stage = L->arg_stage;
    int n = 0;
    for (int i = 0; i < s->nstages; i++) {
        const sch_stage *g = &s->stages[i];
        pre[i] = false;
        if (g->op->kind != TE_OP_COMPUTE || g->attach != SCH_ATTACH_ROOT || g->is_output)
            continue;
        bool passed = false, attached = false, ok = true;
        for (int j = 0; j < nargs; j++) passed |= arg_stage[j] == i;
        for (int c = 0; c < s->nstages; c++)
            attached |= s->stages[c].attach == SCH_ATTACH_AT && s->stages[c].attach_stage == i;
        if (passed || attached) continue;
        /* Producers come first: pre[p] is final for every p < i. */
        for (int p = 0; p < s->nstages && ok; p++) {
            if (p == i || s->stages[p].attach == SCH_ATTACH_INLINE ||
                !sch__expr_reads(s, L->ls[i].body, p))
                continue;
            bool constant_input = false;
            for (int j = 0; j < nargs; j++)
                constant_input |= arg_stage[j] == p && (constant >> j & 1) &&
                                  s->stages[p].op->kind == TE_OP_PLACEHOLDER;
            ok = constant_input || pre[p];
        }
        if (ok) pre[i] = true, n++;
    }
    return n;
}

int sch__lower_check_constants(lower_state *L, uint64_t constant_args) {
    te_ctx *ctx = L->ctx;
    int nargs = L->nargs;
    for (int b = nargs; b < 64; b++)
        if (constant_args >> b & 1)
            return te_error(ctx,
                            "lower: constant_args 0x%llx marks argument %d, but there are %d "
                            "arguments",
                            (unsigned long long)constant_args, b, nargs);
    for (int j = 0; j < nargs; j++)
        if (constant_args >> j & 1 && L->s->stages[L->arg_stage[j]].op->kind != TE_OP_PLACEHOLDER)
            return te_error(ctx,
                            "lower: argument %d ('%s') is marked constant but is computed; "
                            "only inputs (placeholders) can be constant",
                            j, L->args[j]->name);
    return 0;
}

int sch_lower_constants(sch_schedule *s, int nargs, te_tensor *const *args,
                        uint64_t constant_args, const char *name, sch_split_lowering *out) {
    if (!s || !out) return -1;
    memset(out, 0, sizeof *out);
    if (nargs < 0 || (nargs > 0 && !args))
        return te_error(s->ctx, "lower: %d arguments and no argument array", nargs);
    sch_lower_options o = {.name = name, .constant_args = constant_args, .loop_nest_only = true};
    sch_lowered r;
    if (sch_lower_program(s, nargs, args, &o, &r)) return -1;
    out->main = r.main;
    out->precompute = r.precompute;
    out->nstages = r.nstages;
    out->stages = r.stages;
    return 0;
}
