/*
 * autotune/sketch.c — CPU sketch generation: the rules of the CPU list
 * (autotune/rules/targets.c) applied to the stages from the last to the
 * first (Ansor §4.1; TVM sketch_policy_rules.cc). Each partial sketch
 * goes through the stage rules in order; a rule that applies derives a
 * variant (APPLY_AND_SKIP: the stage's only one), and each variant of a
 * tiling rule is also derived by the variant rules: with its strided
 * input packed (rule_pack.c), and with its register tile copied out by
 * its elementwise tail (rule_epilogue.c). The rules themselves say which
 * stages they take and what they add (autotune/rules/rule_*.c).
 *
 * The partial sketches are capped (TUNE_MAX_PARTIAL_SKETCHES); variants
 * past the cap are counted in *dropped, never lost silently.
 */
#include <stdio.h>
#include <string.h>

#include "autotune/rules/rule.h"

typedef struct {
    tune_sketch sk;
} partial;

bool tune__reads_at_axes(const te_expr *e, const te_tensor *c, const te_tensor *p, bool ones,
                         bool *seen) {
    if (e->kind == TE_READ && e->u.read.tensor == p) {
        *seen = true;
        if (p->ndim != c->ndim) return false;
        for (int d = 0; d < c->ndim; d++)
            if ((e->u.read.indices[d] != c->axes[d] &&
                 !(ones && c->shape[d] == 1 && e->u.read.indices[d]->kind == TE_INT_IMM &&
                   e->u.read.indices[d]->u.ival == 0)) ||
                p->shape[d] != c->shape[d])
                return false;
    }
    struct { const te_expr *k[3]; int n; } ch = {{0}, 0};
    /* te_expr_visit_children gives no early exit: collect by kind. */
    switch (e->kind) {
    case TE_INT_IMM: case TE_FLOAT_IMM: case TE_VAR: return true;
    case TE_NOT: case TE_CAST: ch.k[0] = e->u.un.a; ch.n = 1; break;
    case TE_SELECT: ch.k[0] = e->u.sel.cond; ch.k[1] = e->u.sel.t; ch.k[2] = e->u.sel.f; ch.n = 3; break;
    case TE_CALL:
        for (int i = 0; i < e->u.call.nargs; i++)
            if (!tune__reads_at_axes(e->u.call.args[i], c, p, ones, seen)) return false;
        return true;
    case TE_READ:
        for (int i = 0; i < e->u.read.ndim; i++)
            if (!tune__reads_at_axes(e->u.read.indices[i], c, p, ones, seen)) return false;
        return true;
    case TE_REDUCE: return false;
    default:
        if (e->kind >= TE_ADD && e->kind <= TE_OR) {
            ch.k[0] = e->u.bin.a;
            ch.k[1] = e->u.bin.b;
            ch.n = 2;
        }
        break;
    }
    for (int i = 0; i < ch.n; i++)
        if (!tune__reads_at_axes(ch.k[i], c, p, ones, seen)) return false;
    return true;
}

int tune__add_hole(tune_sketch *sk, tune_hole_kind kind, int unit, int nvals, int64_t extent,
                   bool reduce) {
    if (sk->nholes >= TUNE_MAX_HOLES || sk->nvals + nvals > TUNE_MAX_HOLES * 3)
        return TUNE__CAP_HOLES;
    tune_hole *h = &sk->holes[sk->nholes++];
    *h = (tune_hole){kind, unit, sk->nvals, nvals, extent, reduce, false};
    sk->nvals += nvals;
    return 0;
}

int tune__add_unit(tune_sketch *sk, const tune_dag *dag, tune_unit_kind kind, int stage,
                   int consumer, int vec_dim) {
    if (sk->nunits >= TUNE_MAX_UNITS) return TUNE__CAP_UNITS;
    int u = sk->nunits++;
    sk->units[u] = (tune_unit){kind, stage, consumer, vec_dim};
    const tune_rule *r = tune__unit_rule(kind);
    return r && r->holes ? r->holes(sk, dag, u) : 0;
}

void tune__drop_annotate(tune_sketch *sk, int stage) {
    int u = tune__unit_of(sk, stage, TUNE_UNIT_ANNOTATE);
    if (u < 0) return;
    memmove(&sk->units[u], &sk->units[u + 1], (size_t)(sk->nunits - u - 1) * sizeof sk->units[0]);
    sk->nunits--;
}

int tune__rebuild_holes(tune_sketch *sk, const tune_dag *dag) {
    tune_unit units[TUNE_MAX_UNITS];
    int n = sk->nunits;
    memcpy(units, sk->units, sizeof units);
    sk->nunits = sk->nholes = sk->nvals = 0;
    for (int u = 0; u < n; u++) {
        int rc = tune__add_unit(sk, dag, units[u].kind, units[u].stage, units[u].consumer,
                                units[u].vec_dim);
        if (rc) return rc;
    }
    return 0;
}

void tune__describe_cpu(tune_sketch *sk, const tune_dag *dag) {
    size_t len = 0;
    sk->desc[0] = 0;
    /* Stages in their natural order (units were added last to first). */
    for (int i = 0; i < dag->nstages; i++) {
        const char *name = dag->stages[i].tensor->name;
        for (int k = 0; k < sk->ninline; k++)
            if (sk->inlined[k] == i)
                len += (size_t)snprintf(sk->desc + len, sizeof sk->desc - len, "%s%s: inline",
                                        len ? "; " : "", name);
        for (int u = 0; u < sk->nunits && len < sizeof sk->desc; u++) {
            if (sk->units[u].stage != i) continue;
            const char *object = NULL;
            const tune_rule *r = tune__unit_rule(sk->units[u].kind);
            const char *text = r->text(&sk->units[u], dag, &object);
            len += (size_t)snprintf(sk->desc + len, sizeof sk->desc - len, "%s%s: %s%s%s",
                                    len ? "; " : "", name, text, object ? " " : "",
                                    object ? object : "");
        }
        if (len >= sizeof sk->desc) break;
    }
}

bool tune__inlined_in(const tune_sketch *sk, int stage) {
    for (int k = 0; k < sk->ninline; k++)
        if (sk->inlined[k] == stage) return true;
    return false;
}

int tune__unit_of(const tune_sketch *sk, int stage, tune_unit_kind k) {
    for (int u = 0; u < sk->nunits; u++)
        if (sk->units[u].stage == stage && sk->units[u].kind == k) return u;
    return -1;
}

/* The partial sketches derived from one stage so far. */
typedef struct {
    partial *next;
    int nnext;
    int lost; /* variants left out by the cap */
} partials;

static void keep(partials *out, const partial *p) {
    if (out->nnext < TUNE_MAX_PARTIAL_SKETCHES) out->next[out->nnext++] = *p;
    else out->lost++;
}

/* The epilogue-fusion variant of p (its unit of rule r at `stage`), kept
 * before p so that a cut by max keeps it: 0, or a TUNE__CAP_ code. */
static int keep_fused(const tune_gen *g, const partial *p, int stage, partials *out) {
    partial f = *p;
    int rc = tune_rule_epilogue_fusion.apply(g, &f.sk, stage);
    if (rc < 0) return rc;
    if (rc > 0) keep(out, &f);
    return 0;
}

/* The variant of stage rule r on `base`, and those the variant rules
 * derive from it, in this order: fused(p), p, fused(q), q, where q is p
 * with its strided input packed (an extra variant: a full sketch only
 * loses it). 0, or a TUNE__CAP_ code. */
static int derive(const tune_gen *g, const partial *base, int stage, const tune_rule *r,
                  partials *out) {
    bool twin = tune_rule_pack.condition(g, &base->sk, stage, r) != TUNE_RULE_PASS;
    bool fusable = tune_rule_epilogue_fusion.condition(g, &base->sk, stage, r) != TUNE_RULE_PASS;
    /* Past the cap the variant (and its packed and fused twins) is left
     * out of the search: counted, so that the caller can say the space
     * was cut (a lower bound: each would have grown into one or more
     * sketches). */
    if (out->nnext >= TUNE_MAX_PARTIAL_SKETCHES) {
        out->lost += (1 + twin) * (1 + fusable);
        return 0;
    }
    partial p = *base;
    int rc = r->apply(g, &p.sk, stage);
    if (!rc && fusable) rc = keep_fused(g, &p, stage, out);
    if (rc) return rc;
    keep(out, &p);
    if (twin) {
        partial q = p;
        if (tune_rule_pack.apply(g, &q.sk, stage) != 0) {
            out->lost += 1 + fusable;
            return 0;
        }
        if (fusable && (rc = keep_fused(g, &q, stage, out))) return rc;
        keep(out, &q);
    }
    return 0;
}

int tune_generate_sketches_ex(te_ctx *ctx, const tune_workload *w, tune_sketch *sketches,
                              int max, int *dropped) {
    if (dropped) *dropped = 0;
    if (max < 1) return te_error(ctx, "autotune: no room for a sketch (max %d)", max);
    tune_dag dag;
    if (tune_dag_analyze(ctx, w->nouts, w->outs, &dag)) return tune__workload_error(ctx, w);
    const tune_rule_list *list = &tune__rules_cpu;
    tune_gen g = {&dag, w, 0};
    enum { MAXP = TUNE_MAX_PARTIAL_SKETCHES };
    partial cur[MAXP], next[MAXP];
    int ncur = 1, lost = 0;
    memset(&cur[0], 0, sizeof cur[0]);
    for (int i = dag.nstages - 1; i >= 0; i--) {
        partials out = {next, 0, 0};
        for (int c = 0; c < ncur; c++)
            for (int k = 0; k < list->nrules; k++) {
                const tune_rule *r = list->rules[k].rule;
                if (r->when != TUNE_RULE_ON_STAGE) continue;
                tune_rule_cond cond = r->condition(&g, &cur[c].sk, i, NULL);
                if (cond == TUNE_RULE_PASS) continue;
                int rc = derive(&g, &cur[c], i, r, &out);
                if (rc) return tune__cap_error(ctx, w, rc, "a sketch");
                if (cond == TUNE_RULE_APPLY_AND_SKIP) break;
            }
        lost += out.lost;
        memcpy(cur, next, sizeof(partial) * (size_t)out.nnext);
        ncur = out.nnext;
    }
    int n = ncur < max ? ncur : max;
    lost += ncur - n; /* by design: the first max sketches */
    for (int k = 0; k < n; k++) {
        sketches[k] = cur[k].sk;
        tune__describe_cpu(&sketches[k], &dag);
    }
    if (n == 0) return te_error(ctx, "autotune: no sketch for the workload");
    if (dropped) *dropped = lost;
    return n;
}

int tune_generate_sketches(te_ctx *ctx, const tune_workload *w, tune_sketch *sketches, int max) {
    return tune_generate_sketches_ex(ctx, w, sketches, max, NULL);
}

/* Names a workload by its outputs, for messages. */
static void workload_name(const tune_workload *w, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < w->nouts && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", w->outs[i]->name);
}

int tune__cap_error(te_ctx *ctx, const tune_workload *w, int cap, const char *what) {
    char name[128];
    workload_name(w, name, sizeof name);
    if (cap == TUNE__CAP_UNITS)
        return te_error(ctx, "autotune: workload with outputs '%s' needs more than "
                             "TUNE_MAX_UNITS = %d units in %s",
                        name, TUNE_MAX_UNITS, what);
    return te_error(ctx, "autotune: workload with outputs '%s' needs more than "
                         "TUNE_MAX_HOLES = %d holes (or %d hole values) in %s",
                    name, TUNE_MAX_HOLES, TUNE_MAX_HOLES * 3, what);
}

int tune__workload_error(te_ctx *ctx, const tune_workload *w) {
    char name[128], msg[512];
    workload_name(w, name, sizeof name);
    const char *m = te_ctx_errmsg(ctx);
    if (!strncmp(m, "autotune: ", 10)) m += 10;
    snprintf(msg, sizeof msg, "%s", m);
    return te_error(ctx, "autotune: workload with outputs '%s': %s", name, msg);
}

