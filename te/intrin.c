/*
 * te/intrin.c — intrinsic calls (exp, log, ...) and the name tables of
 * expression kinds, intrinsics and reduce ops.
 */
#include "te/te_internal.h"

static const char *const kind_names[] = {
#define TE_X_NAME(n) #n,
    TE_EXPR_KINDS(TE_X_NAME)
#undef TE_X_NAME
};

const char *te_expr_kind_name(te_expr_kind k) {
    if ((unsigned)k >= TE_EXPR_KIND_COUNT) return "UNKNOWN";
    return kind_names[k];
}

static const struct {
    const char *name;
    int arity;
} intrins[] = {
#define TE_X_INTRIN_ROW(n, s, a) {s, a},
    TE_INTRINSICS(TE_X_INTRIN_ROW)
#undef TE_X_INTRIN_ROW
};

const char *te_intrin_name(te_intrin op) {
    if ((unsigned)op >= TE_INTRIN_COUNT) return "unknown";
    return intrins[op].name;
}

int te_intrin_arity(te_intrin op) {
    if ((unsigned)op >= TE_INTRIN_COUNT) return -1;
    return intrins[op].arity;
}

const char *te_reduce_op_name(te_reduce_op op) {
    switch (op) {
    case TE_REDUCE_SUM: return "sum";
    case TE_REDUCE_PROD: return "prod";
    case TE_REDUCE_MIN: return "min";
    case TE_REDUCE_MAX: return "max";
    }
    return "unknown";
}

te_expr *te_call(te_intrin op, int nargs, te_expr *const *args) {
    if (nargs < 0 || nargs > 3 || (nargs > 0 && !args)) return NULL;
    te_expr *a[3] = {NULL, NULL, NULL};
    for (int i = 0; i < nargs; i++) {
        if (!args[i]) return NULL;
        a[i] = args[i];
    }
    if (nargs == 0) return NULL; /* no operand: no ctx to report in */
    te_ctx *ctx = a[0]->ctx;
    if ((unsigned)op >= TE_INTRIN_COUNT) {
        te_error(ctx, "call: unknown intrinsic %d", (int)op);
        return NULL;
    }
    const char *name = intrins[op].name;
    if (nargs != intrins[op].arity) {
        te_error(ctx, "%s: expects %d argument%s, got %d", name, intrins[op].arity,
                 intrins[op].arity == 1 ? "" : "s", nargs);
        return NULL;
    }
    /* Arguments share one type; immediates adopt it (pow(x, 2)). */
    int ref = 0;
    if (nargs == 2) {
        if (te__unify(name, &a[0], &a[1])) return NULL;
    } else if (nargs == 3) {
        if (te__unify(name, &a[0], &a[1]) || te__unify(name, &a[0], &a[2]) ||
            te__unify(name, &a[1], &a[2]))
            return NULL;
    }
    te_dtype t = a[ref]->dtype;
    if (op == TE_INTRIN_LIKELY) {
        if (t.code != TE_BOOL) {
            te_error(ctx, "%s: argument type %s is not bool", name, te_dtype_str(t));
            return NULL;
        }
    } else if (!te_dtype_is_float(t)) {
        te_error(ctx, "%s: argument type %s is not a float type", name, te_dtype_str(t));
        return NULL;
    }
    te_expr *e = te__node(ctx, TE_CALL, t);
    if (!e) return NULL;
    e->u.call.op = op;
    e->u.call.nargs = nargs;
    for (int i = 0; i < nargs; i++) e->u.call.args[i] = a[i];
    return e;
}

te_expr *te_exp(te_expr *a) { return te_call(TE_INTRIN_EXP, 1, &a); }
te_expr *te_log(te_expr *a) { return te_call(TE_INTRIN_LOG, 1, &a); }
te_expr *te_sqrt(te_expr *a) { return te_call(TE_INTRIN_SQRT, 1, &a); }
te_expr *te_tanh(te_expr *a) { return te_call(TE_INTRIN_TANH, 1, &a); }
te_expr *te_fabs(te_expr *a) { return te_call(TE_INTRIN_FABS, 1, &a); }
te_expr *te_sigmoid(te_expr *a) { return te_call(TE_INTRIN_SIGMOID, 1, &a); }
te_expr *te_erf(te_expr *a) { return te_call(TE_INTRIN_ERF, 1, &a); }

te_expr *te_pow(te_expr *a, te_expr *b) {
    te_expr *args[2] = {a, b};
    return te_call(TE_INTRIN_POW, 2, args);
}
