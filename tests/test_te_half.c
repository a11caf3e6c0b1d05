/*
 * tests/test_te_half.c — the 16-bit float types in te/: names, parsing,
 * rounding of immediates (round-to-nearest-even, infinity on overflow,
 * gradual underflow), folding of casts to and from them, printing, and
 * the error for a bfloat width that does not exist.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "testutil.h"

#define STR(e) te_expr_str(ctx, (e))

static void test_half_names(void **state) {
    (void)state;
    assert_string_equal(te_dtype_str(TE_FLOAT16), "float16");
    assert_string_equal(te_dtype_str(TE_BFLOAT16), "bfloat16");
    assert_string_equal(te_dtype_str(te_dtype_with_lanes(TE_BFLOAT16, 2)), "bfloat16x2");
    te_dtype t;
    assert_true(te_dtype_parse("bfloat16", &t));
    assert_true(te_dtype_eq(t, TE_BFLOAT16));
    assert_true(te_dtype_parse("float16x8", &t));
    assert_true(te_dtype_eq(t, te_dtype_with_lanes(TE_FLOAT16, 8)));
    assert_true(te_dtype_parse("bfloat16x4", &t));
    assert_true(te_dtype_eq(t, te_dtype_with_lanes(TE_BFLOAT16, 4)));
    assert_false(te_dtype_parse("bfloat32", &t));
    assert_false(te_dtype_parse("bfloat16x", &t));
    assert_int_equal(te_dtype_bytes(TE_FLOAT16), 2);
    assert_int_equal(te_dtype_bytes(TE_BFLOAT16), 2);
    assert_true(te_dtype_is_float(TE_FLOAT16));
    assert_true(te_dtype_is_float(TE_BFLOAT16));
    assert_true(te_dtype_is_half(TE_BFLOAT16));
    assert_true(te_dtype_is_half(te_dtype_with_lanes(TE_FLOAT16, 8)));
    assert_false(te_dtype_is_half(TE_FLOAT32));
    assert_false(te_dtype_is_half(TE_DTYPE(TE_INT, 16, 1)));
    assert_false(te_dtype_is_int(TE_BFLOAT16));
    /* distinct from TE_HANDLE, whose number DLPack gives to bfloat */
    assert_int_not_equal(TE_BFLOAT, TE_HANDLE);
}

static double imm(te_ctx *ctx, te_dtype t, double v) {
    te_expr *e = te_float_t(ctx, t, v);
    assert_non_null(e);
    assert_int_equal(e->kind, TE_FLOAT_IMM);
    assert_true(te_dtype_eq(e->dtype, t));
    return e->u.fval;
}

static void test_half_rounding(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_dtype h = TE_FLOAT16, b = TE_BFLOAT16;
    /* float16: 10 fraction bits, largest finite 65504 */
    assert_true(imm(ctx, h, 1.0 / 3) == 1365.0 / 4096);
    assert_true(imm(ctx, h, 2049) == 2048); /* a tie goes to the even neighbour */
    assert_true(imm(ctx, h, 2051) == 2052);
    assert_true(imm(ctx, h, 65504) == 65504);
    assert_true(imm(ctx, h, 65519) == 65504);
    assert_true(isinf(imm(ctx, h, 65520)) && imm(ctx, h, 65520) > 0);
    assert_true(isinf(imm(ctx, h, -1e5)) && imm(ctx, h, -1e5) < 0);
    assert_true(imm(ctx, h, ldexp(1, -24)) == ldexp(1, -24)); /* smallest subnormal */
    assert_true(imm(ctx, h, ldexp(1, -25)) == 0);             /* tie to even: 0 */
    assert_true(imm(ctx, h, ldexp(3, -26)) == ldexp(1, -24));
    assert_true(isnan(imm(ctx, h, NAN)));
    /* bfloat16: 7 fraction bits, float32's exponent range */
    assert_true(imm(ctx, b, 1.0 / 3) == 171.0 / 512);
    assert_true(imm(ctx, b, 257) == 256);
    assert_true(imm(ctx, b, 259) == 260);
    assert_true(imm(ctx, b, 3.39e38) == 0x1.fep127);
    assert_true(isinf(imm(ctx, b, FLT_MAX))); /* 0x7f7fffff rounds up to 0x7f80 */
    assert_true(imm(ctx, b, ldexp(1, -133)) == ldexp(1, -133));
    te_ctx_free(ctx);
}

static void test_dtype_round(void **state) {
    (void)state;
    assert_true(te_dtype_round(TE_FLOAT16, 2049) == 2048);
    assert_true(te_dtype_round(TE_BFLOAT16, 259) == 260);
    assert_true(te_dtype_round(TE_FLOAT32, 1.0 / 3) == (double)(1.0f / 3));
    assert_true(te_dtype_round(TE_FLOAT64, 1.0 / 3) == 1.0 / 3);
    assert_true(te_dtype_round(TE_INT32, 2.5) == 2.5);
    assert_true(isinf(te_dtype_round(TE_FLOAT16, 7e4)));
}

static void test_half_cast_folding(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_expr *third = te_float(ctx, 1.0 / 3);
    te_expr *c = te_cast(TE_FLOAT16, third);
    assert_int_equal(c->kind, TE_FLOAT_IMM);
    assert_true(c->u.fval == 1365.0 / 4096);
    te_expr *back = te_cast(TE_FLOAT32, c);
    assert_int_equal(back->kind, TE_FLOAT_IMM);
    assert_true(back->u.fval == 1365.0 / 4096);
    c = te_cast(TE_BFLOAT16, te_int(ctx, 257));
    assert_true(c->kind == TE_FLOAT_IMM && c->u.fval == 256);
    c = te_cast(TE_BFLOAT16, te_float_t(ctx, TE_FLOAT16, 2051)); /* 2052 -> 2048 in bf16 */
    assert_true(c->kind == TE_FLOAT_IMM && c->u.fval == 2048);
    c = te_cast(TE_INT32, te_float_t(ctx, TE_FLOAT16, 65519));
    assert_true(c->kind == TE_INT_IMM && c->u.ival == 65504);
    /* an immediate beside a 16-bit operand adopts its type, rounded */
    te_expr *v = te_var(ctx, "v", TE_BFLOAT16);
    te_expr *sum = te_add(v, te_float(ctx, 257));
    assert_non_null(sum);
    assert_true(te_dtype_eq(sum->dtype, TE_BFLOAT16));
    assert_true(sum->u.bin.b->u.fval == 256);
    te_ctx_free(ctx);
}

static void test_half_print(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    assert_string_equal(STR(te_float_t(ctx, TE_FLOAT16, 1.0 / 3)), "float16(0.3333)");
    assert_string_equal(STR(te_float_t(ctx, TE_BFLOAT16, 1.0 / 3)), "bfloat16(0.334)");
    assert_string_equal(STR(te_float_t(ctx, TE_FLOAT16, 2)), "float16(2.0)");
    assert_string_equal(STR(te_float_t(ctx, TE_BFLOAT16, 1e6)), "bfloat16(9.99e+05)");
    assert_string_equal(STR(te_float_t(ctx, TE_FLOAT16, 1e6)), "float16(inf)");
    te_expr *v = te_var(ctx, "v", TE_BFLOAT16);
    assert_string_equal(STR(te_cast(TE_FLOAT32, v)), "float32(v)");
    assert_string_equal(STR(te_exp(te_cast(TE_FLOAT16, te_var(ctx, "w", TE_FLOAT32)))),
                        "exp(float16(w))");
    te_ctx_free(ctx);
}

static void test_half_errors(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_expr *x = te_var(ctx, "x", TE_FLOAT32);
    assert_null(te_cast(TE_DTYPE(TE_BFLOAT, 32, 1), x));
    assert_string_equal(te_ctx_errmsg(ctx), "cast: unknown target type bfloat32");
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_names),
        cmocka_unit_test(test_half_rounding),
        cmocka_unit_test(test_dtype_round),
        cmocka_unit_test(test_half_cast_folding),
        cmocka_unit_test(test_half_print),
        cmocka_unit_test(test_half_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
