/*
 * schedule/lower_constants.c — a lowering split in two around constant
 * arguments: the root stages computed from constants alone (a packed copy
 * of the weights) go to a function run once, the rest to the function run
 * in every call. Both halves are sch_lower of the same schedule with the
 * pre-computed stages passed as extra arguments, each emitting its share
 * of the root stages, so bound inference and buffer layouts agree.
 */
#include <stdio.h>
#include <string.h>

#include "schedule/lower_internal.h"

/* Marks the pre-computed stages (see schedule.h) in pre[]; count. */
static int find_precomputed(lower_state *L, int nargs, const int *arg_stage, uint64_t constant,
                            bool *pre) {
    const sch_schedule *s = L->s;
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

int sch_lower_constants(sch_schedule *s, int nargs, te_tensor *const *args,
                        uint64_t constant_args, const char *name, sch_split_lowering *out) {
    if (!s || !out) return -1;
    te_ctx *ctx = s->ctx;
    memset(out, 0, sizeof *out);
    if (!name || !*name) name = "default";
    if (nargs < 0 || (nargs > 0 && !args))
        return te_error(ctx, "lower: %d arguments and no argument array", nargs);
    for (int b = nargs; b < 64; b++)
        if (constant_args >> b & 1)
            return te_error(ctx,
                            "lower: constant_args 0x%llx marks argument %d, but there are %d "
                            "arguments",
                            (unsigned long long)constant_args, b, nargs);
    if (!constant_args) {
        out->main = sch_lower(s, nargs, args, name);
        return out->main ? 0 : -1;
    }
    int *arg_stage = te_alloc(ctx, sizeof(int) * (size_t)(nargs > 0 ? nargs : 1));
    if (!arg_stage) return -1;
    for (int j = 0; j < nargs; j++) {
        /* sch_lower names NULL and foreign arguments; here only the
         * constant ones matter. */
        arg_stage[j] = args[j] ? sch__stage_index(s, args[j]) : -1;
        if (!(constant_args >> j & 1) || arg_stage[j] < 0) continue;
        if (s->stages[arg_stage[j]].op->kind != TE_OP_PLACEHOLDER)
            return te_error(ctx,
                            "lower: argument %d ('%s') is marked constant but is computed; "
                            "only inputs (placeholders) can be constant",
                            j, args[j]->name);
    }
    lower_state L = {.s = s, .ctx = ctx};
    L.ls = te_alloc(ctx, sizeof(lower_stage) * (size_t)s->nstages);
    bool *pre = te_alloc(ctx, sizeof(bool) * (size_t)s->nstages);
    if (!L.ls || !pre || sch__lower_inline(&L)) return -1;
    int npre = find_precomputed(&L, nargs, arg_stage, constant_args, pre);
    if (npre == 0) {
        out->main = sch_lower(s, nargs, args, name);
        return out->main ? 0 : -1;
    }
    te_tensor **all = te_alloc(ctx, sizeof(te_tensor *) * (size_t)(nargs + npre));
    bool *rest = te_alloc(ctx, sizeof(bool) * (size_t)s->nstages);
    if (!all || !rest) return -1;
    if (nargs) memcpy(all, args, sizeof(te_tensor *) * (size_t)nargs);
    int k = nargs;
    for (int i = 0; i < s->nstages; i++) {
        rest[i] = !pre[i];
        if (pre[i]) all[k++] = s->stages[i].op;
    }
    size_t len = strlen(name) + sizeof "__precompute";
    char *pname = te_alloc(ctx, len);
    if (!pname) return -1;
    snprintf(pname, len, "%s__precompute", name);
    out->main = sch__lower_masked(s, k, all, name, rest);
    out->precompute = out->main ? sch__lower_masked(s, k, all, pname, pre) : NULL;
    if (!out->main || !out->precompute) {
        out->main = out->precompute = NULL;
        return -1;
    }
    out->nstages = npre;
    out->stages = all + nargs;
    return 0;
}
