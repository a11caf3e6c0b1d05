/*
 * tests/test_tir_legalize_half.c — tir_pass_legalize_half: after it (and
 * after the whole lowering list, which runs it after storage_flatten),
 * nothing 16-bit is computed: every arithmetic node, comparison, min/max,
 * select and call works on float32, and a 16-bit float is converted only
 * to or from float32. Checked with the traversal helpers on scalar and
 * vectorized float16 and bfloat16 programs; a float32 program is left
 * as it was.
 */
#include <string.h>

#include "testutil.h"

typedef struct {
    int computed_half; /* nodes computing on or producing 16-bit floats */
    int odd_casts;     /* 16-bit <-> non-float32 conversions */
    int half_loads;    /* LOADs of 16-bit values (the program does use them) */
} census;

static void count_expr(const te_expr *e, void *user) {
    census *c = user;
    if (!e) return;
    bool h = te_dtype_is_half(e->dtype);
    switch (e->kind) {
    case TE_CAST: {
        te_dtype from = e->u.un.a->dtype, to = e->dtype;
        if (te_dtype_is_half(from) && !(to.code == TE_FLOAT && to.bits == 32)) c->odd_casts++;
        if (h && !(from.code == TE_FLOAT && from.bits == 32)) c->odd_casts++;
        break;
    }
    case TE_LOAD: c->half_loads += h; break;
    case TE_SELECT:
    case TE_CALL: c->computed_half += h; break;
    default:
        if (e->kind >= TE_ADD && e->kind <= TE_GE)
            c->computed_half += h || te_dtype_is_half(e->u.bin.a->dtype) ||
                                te_dtype_is_half(e->u.bin.b->dtype);
        break;
    }
    te_expr_visit_children(e, count_expr, user);
}

static census take_census(const tir_func *f) {
    census c = {0, 0, 0};
    tir_stmt_visit(f->body, NULL, count_expr, &c);
    return c;
}

/* C = select(A < B, max(A * B + exp(A), 0.5), float16(I)) in type t, with
 * I an int32 input (a conversion not from float32); vectorized by 8
 * when vec. */
static sch_schedule *build(te_ctx *ctx, te_dtype t, bool vec, te_tensor **args) {
    te_tensor *A = te_placeholder(ctx, "A", t, TE_SHAPE(64));
    te_tensor *B = te_placeholder(ctx, "B", t, TE_SHAPE(64));
    te_tensor *I = te_placeholder(ctx, "I", TE_INT32, TE_SHAPE(64));
    te_expr *i = te_axis(ctx, "i", 64);
    te_expr *a = te_read(A, i), *b = te_read(B, i);
    te_expr *body = te_select(te_lt(a, b), te_max(te_add(te_mul(a, b), te_exp(a)), te_float(ctx, 0.5)),
                              te_cast(t, te_read(I, i)));
    te_tensor *C = te_compute(ctx, "C", TE_AXES(i), body);
    if (!C) fail_msg("%s", te_ctx_errmsg(ctx));
    assert_true(te_dtype_eq(C->dtype, t));
    sch_schedule *s = sch_create(ctx, 1, &C);
    assert_non_null(s);
    if (vec) {
        te_expr *o, *in;
        assert_int_equal(sch_split(s, C, C->axes[0], 8, &o, &in), 0);
        assert_int_equal(sch_vectorize(s, C, in), 0);
    }
    args[0] = A;
    args[1] = B;
    args[2] = I;
    args[3] = C;
    return s;
}

static void check_type(te_dtype t, bool vec) {
    te_ctx *ctx = te_ctx_new();
    te_tensor *args[4];
    sch_schedule *s = build(ctx, t, vec, args);
    tir_func *f = sch_lower(s, 4, args, "half");
    assert_non_null(f);
    tir_func *flat = tir_pass_storage_flatten(ctx, f);
    assert_non_null(flat);
    assert_true(tir_func_uses_half(flat));
    census before = take_census(flat);
    assert_true(before.computed_half >= 5); /* lt, mul, add, exp, max, select */
    assert_int_equal(before.odd_casts, 1);   /* float16(I) from int32 */

    tir_func *g = tir_pass_legalize_half(ctx, flat);
    assert_non_null(g);
    census after = take_census(g);
    assert_int_equal(after.computed_half, 0);
    assert_int_equal(after.odd_casts, 0);
    assert_true(after.half_loads >= 2);
    /* the value stored keeps C's type */
    const tir_stmt *st = g->body;
    while (st->kind == TIR_FOR) st = st->u.loop.body;
    assert_int_equal(st->kind, TIR_STORE);
    assert_true(te_dtype_eq(te_dtype_element(st->u.store.value->dtype), t));

    /* the whole list: nothing later brings 16-bit arithmetic back */
    tir_func *p = tir_run_pipeline(ctx, f, NULL);
    if (!p) fail_msg("%s", te_ctx_errmsg(ctx));
    census full = take_census(p);
    assert_int_equal(full.computed_half, 0);
    assert_int_equal(full.odd_casts, 0);
    assert_true(full.half_loads >= 2);
    if (vec) {
        const char *txt = tir_func_str(ctx, p);
        assert_non_null(strstr(txt, "float32x8(")); /* vector lifted to float32 */
    }
    te_ctx_free(ctx);
}

static void test_float16_scalar(void **state) { (void)state; check_type(TE_FLOAT16, false); }
static void test_bfloat16_scalar(void **state) { (void)state; check_type(TE_BFLOAT16, false); }
static void test_float16_vector(void **state) { (void)state; check_type(TE_FLOAT16, true); }
static void test_bfloat16_vector(void **state) { (void)state; check_type(TE_BFLOAT16, true); }

/* A float32 program is unchanged, node for node. */
static void test_float32_unchanged(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_tensor *args[4];
    sch_schedule *s = build(ctx, TE_FLOAT32, true, args);
    tir_func *f = tir_pass_storage_flatten(ctx, sch_lower(s, 4, args, "f32"));
    assert_non_null(f);
    assert_false(tir_func_uses_half(f));
    tir_func *g = tir_pass_legalize_half(ctx, f);
    assert_non_null(g);
    assert_ptr_equal(g->body, f->body);
    te_ctx_free(ctx);
}

/* Values: float16 arithmetic rounds once per operation, in float32 then
 * back (a + b with a = 2048, b = 1: 2049 ties to 2048). */
static void test_rounding_per_operation(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_expr *x = te_var(ctx, "x", TE_FLOAT16);
    te_expr *e = te_add(te_add(x, te_float(ctx, 1)), te_float(ctx, 1));
    tir_buffer *out = tir_buffer_new(ctx, "out", TE_FLOAT16, 1, (int64_t[]){1}, TIR_SCOPE_GLOBAL);
    out->is_param = true;
    tir_stmt *st = tir_store(ctx, out, te_int(ctx, 0), e, NULL);
    assert_non_null(st);
    tir_func *f = tir_func_new(ctx, "r", 1, &out, st);
    tir_func *g = tir_pass_legalize_half(ctx, f);
    assert_non_null(g);
    assert_string_equal(te_expr_str(ctx, g->body->u.store.value),
                        "float16(float32(float16(float32(x) + 1.0f)) + 1.0f)");
    te_ctx_free(ctx);
}

static void test_null_function(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    assert_null(tir_pass_legalize_half(ctx, NULL));
    assert_non_null(strstr(te_ctx_errmsg(ctx), "legalize_half"));
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float16_scalar),   cmocka_unit_test(test_bfloat16_scalar),
        cmocka_unit_test(test_float16_vector),   cmocka_unit_test(test_bfloat16_vector),
        cmocka_unit_test(test_float32_unchanged), cmocka_unit_test(test_rounding_per_operation),
        cmocka_unit_test(test_null_function),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
