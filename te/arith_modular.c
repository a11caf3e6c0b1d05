/*
 * te/arith_modular.c — modular set analysis: e == coeff * k + base for some
 * integer k (the lattice of TVM's ModularSetAnalyzer and Halide's
 * ModulusRemainder). coeff == 0: e == base exactly; coeff 1: nothing known.
 * Any overflow gives up to "nothing known".
 */
#include "te/arith_internal.h"

typedef struct {
    int64_t c, b;
} mset;

static const mset UNKNOWN = {1, 0};

static mset norm(int64_t c, int64_t b) {
    if (c < 0) c = c == INT64_MIN ? 1 : -c;
    if (c == 0) return (mset){0, b};
    return (mset){c, te__fmod(b, c)};
}

static mset unite(mset x, mset y) {
    int64_t d;
    if (__builtin_sub_overflow(x.b, y.b, &d)) return UNKNOWN;
    int64_t g = te__gcd(te__gcd(x.c, y.c), d);
    return norm(g, x.b);
}

static mset mod_of(const te_analyzer *an, const te_expr *e);

static mset mod_add(mset x, mset y, int sign) {
    int64_t b;
    if (sign > 0 ? __builtin_add_overflow(x.b, y.b, &b) : __builtin_sub_overflow(x.b, y.b, &b))
        return UNKNOWN;
    return norm(te__gcd(x.c, y.c), b);
}

static mset mod_mul(mset x, mset y) {
    int64_t cc, cb, bc, bb;
    if (__builtin_mul_overflow(x.c, y.c, &cc) || __builtin_mul_overflow(x.c, y.b, &cb) ||
        __builtin_mul_overflow(x.b, y.c, &bc) || __builtin_mul_overflow(x.b, y.b, &bb))
        return UNKNOWN;
    return norm(te__gcd(te__gcd(cc, cb), bc), bb);
}

static mset mod_of(const te_analyzer *an, const te_expr *e) {
    if (!e || te_dtype_element(e->dtype).code != TE_INT) return UNKNOWN;
    int64_t c;
    switch (e->kind) {
    case TE_INT_IMM: return (mset){0, e->u.ival};
    case TE_VAR: {
        int64_t lo, hi;
        te__var_range(an, e, &lo, &hi);
        return lo == hi ? (mset){0, lo} : UNKNOWN;
    }
    case TE_ADD: return mod_add(mod_of(an, e->u.bin.a), mod_of(an, e->u.bin.b), 1);
    case TE_SUB: return mod_add(mod_of(an, e->u.bin.a), mod_of(an, e->u.bin.b), -1);
    case TE_MUL: return mod_mul(mod_of(an, e->u.bin.a), mod_of(an, e->u.bin.b));
    case TE_FLOORDIV:
    case TE_DIV:
        if (!te_is_const_int(e->u.bin.b, &c) || c <= 0) return UNKNOWN;
        if (e->kind == TE_DIV) { /* truncation equals floor only for a >= 0 */
            int64_t lo, hi;
            te__bound(an, e->u.bin.a, &lo, &hi);
            if (lo < 0) return UNKNOWN;
        }
        {
            mset x = mod_of(an, e->u.bin.a);
            if (x.c == 0) return (mset){0, te__fdiv(x.b, c)};
            if (x.c % c == 0) return norm(x.c / c, te__fdiv(x.b, c));
            return UNKNOWN;
        }
    case TE_FLOORMOD:
        if (!te_is_const_int(e->u.bin.b, &c) || c <= 0) return UNKNOWN;
        {
            mset x = mod_of(an, e->u.bin.a);
            if (x.c % c == 0) return (mset){0, te__fmod(x.b, c)}; /* includes x.c == 0 */
            return norm(te__gcd(x.c, c), x.b);
        }
    case TE_MIN:
    case TE_MAX: return unite(mod_of(an, e->u.bin.a), mod_of(an, e->u.bin.b));
    case TE_SELECT: return unite(mod_of(an, e->u.sel.t), mod_of(an, e->u.sel.f));
    case TE_CAST:
        if (te_dtype_element(e->u.un.a->dtype).code == TE_INT) return mod_of(an, e->u.un.a);
        return UNKNOWN;
    case TE_BROADCAST: return mod_of(an, e->u.bcast.value);
    case TE_RAMP: {
        mset s = mod_of(an, e->u.ramp.stride);
        /* lanes l: base + stride * l, l any of 0..lanes-1 */
        return mod_add(mod_of(an, e->u.ramp.base), mod_mul(s, UNKNOWN), 1);
    }
    default: return UNKNOWN;
    }
}

void te__modular(const te_analyzer *an, const te_expr *e, int64_t *coeff, int64_t *base) {
    mset m = mod_of(an, e);
    /* A constant bound pins the value too. */
    if (m.c != 0 && e && te_dtype_element(e->dtype).code == TE_INT) {
        int64_t lo, hi;
        te__bound(an, e, &lo, &hi);
        if (lo == hi) m = (mset){0, lo};
    }
    *coeff = m.c;
    *base = m.b;
}
