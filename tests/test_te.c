/*
 * tests/test_te.c — the tensor-expression core: the ctx arena and errors,
 * data types, builders and their type rules, folding of immediates,
 * every builder error message, te_compute's rules, the printer's exact
 * text, and the generic traversal (equal, hash, substitute, map).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define STR(e) te_expr_str(ctx, (e))
#define I(v) te_int(ctx, (v))

/* ---------------- ctx ---------------- */

static void test_arena(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    assert_non_null(ctx);
    size_t before = te_ctx_arena_bytes(ctx);
    uint64_t rng = 12345;
    for (int n = 0; n < 100000; n++) {
        size_t sz = 1 + (size_t)(tu_rand_u64(&rng) % 200);
        if (n % 5000 == 0) sz = 300000; /* larger than a chunk */
        unsigned char *p = te_alloc(ctx, sz);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
        for (size_t i = 0; i < sz; i++) assert_int_equal(p[i], 0);
        memset(p, 0xab, sz); /* writable in full (ASan) */
    }
    assert_true(te_ctx_arena_bytes(ctx) > before + 100000);
    /* zero-byte allocations are distinct, valid pointers */
    void *z1 = te_alloc(ctx, 0), *z2 = te_alloc(ctx, 0);
    assert_non_null(z1);
    assert_non_null(z2);
    te_ctx_free(ctx);
    te_ctx_free(NULL);
}

static void test_arena_many_nodes(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_expr *x = te_var(ctx, "x", TE_INT64);
    te_expr *e = x;
    for (int n = 0; n < 300000; n++) e = te_add(te_mul(e, I(3)), x);
    assert_non_null(e);
    assert_int_equal(e->kind, TE_ADD);
    /* ~600k nodes of <= 64 bytes: the arena must not be grossly larger */
    assert_true(te_ctx_arena_bytes(ctx) < (size_t)600000 * 64 * 2);
    te_ctx_free(ctx);
}

static void test_ctx_strings_and_errors(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    assert_string_equal(te_ctx_errmsg(ctx), "");
    char *s = te_strdup(ctx, "hello");
    assert_string_equal(s, "hello");
    char big[1000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char *f = te_sprintf(ctx, "%s-%d", big, 7);
    assert_int_equal(strlen(f), 1001);
    assert_string_equal(f + 999, "-7");
    assert_string_equal(te_sprintf(ctx, "%d:%s", 3, "x"), "3:x");
    int a = te_ctx_next_id(ctx), b = te_ctx_next_id(ctx);
    assert_true(b > a);
    assert_int_equal(te_error(ctx, "first %d", 1), -1);
    assert_string_equal(te_ctx_errmsg(ctx), "first 1");
    /* a message may quote the previous one */
    te_error(ctx, "outer: %s", te_ctx_errmsg(ctx));
    assert_string_equal(te_ctx_errmsg(ctx), "outer: first 1");
    te_ctx_clear_error(ctx);
    assert_string_equal(te_ctx_errmsg(ctx), "");
    assert_string_equal(te_ctx_errmsg(NULL), "");
    assert_int_equal(te_error(NULL, "x"), -1);
    te_ctx_free(ctx);
}

/* ---------------- dtypes ---------------- */

static void test_dtype(void **state) {
    (void)state;
    assert_string_equal(te_dtype_str(TE_FLOAT32), "float32");
    assert_string_equal(te_dtype_str(TE_INT64), "int64");
    assert_string_equal(te_dtype_str(TE_BOOL1), "bool");
    assert_string_equal(te_dtype_str(TE_HANDLE64), "handle");
    assert_string_equal(te_dtype_str(te_dtype_with_lanes(TE_FLOAT32, 16)), "float32x16");
    assert_string_equal(te_dtype_str(TE_DTYPE(TE_UINT, 8, 1)), "uint8");
    /* the ring keeps 8 results alive */
    const char *r[8];
    for (int i = 0; i < 8; i++) r[i] = te_dtype_str(TE_DTYPE(TE_INT, 8 << (i % 4), 1));
    assert_string_equal(r[0], "int8");
    assert_string_equal(r[3], "int64");
    assert_string_equal(r[7], "int64");

    te_dtype t;
    assert_true(te_dtype_parse("float64", &t));
    assert_true(te_dtype_eq(t, TE_FLOAT64));
    assert_true(te_dtype_parse("int32", &t));
    assert_true(te_dtype_eq(t, TE_INT32));
    assert_true(te_dtype_parse("bool", &t));
    assert_true(te_dtype_eq(t, TE_BOOL1));
    assert_true(te_dtype_parse("float32x8", &t));
    assert_true(te_dtype_eq(t, te_dtype_with_lanes(TE_FLOAT32, 8)));
    assert_false(te_dtype_parse("float", &t));
    assert_false(te_dtype_parse("int32x", &t));
    assert_false(te_dtype_parse("float32 ", &t));
    assert_false(te_dtype_parse("complex64", &t));
    assert_false(te_dtype_parse(NULL, &t));

    assert_int_equal(te_dtype_bytes(TE_FLOAT32), 4);
    assert_int_equal(te_dtype_bytes(TE_FLOAT64), 8);
    assert_int_equal(te_dtype_bytes(TE_BOOL1), 1);
    assert_int_equal(te_dtype_bytes(te_dtype_with_lanes(TE_INT32, 4)), 4);
    assert_true(te_dtype_is_float(TE_FLOAT32));
    assert_true(te_dtype_is_int(TE_DTYPE(TE_UINT, 16, 1)));
    assert_false(te_dtype_is_int(TE_BOOL1));
    assert_true(te_dtype_is_bool(TE_BOOL1));
    assert_true(te_dtype_eq(te_dtype_element(te_dtype_with_lanes(TE_INT32, 4)), TE_INT32));
    assert_false(te_dtype_eq(TE_INT32, TE_INT64));
}

/* ---------------- immediates and folding ---------------- */

static void test_immediates(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    int64_t v;
    double d;
    te_expr *e = I(42);
    assert_true(te_is_const_int(e, &v));
    assert_int_equal(v, 42);
    assert_true(te_dtype_eq(e->dtype, TE_INT64));
    assert_ptr_equal(te_expr_ctx(e), ctx);

    e = te_int_t(ctx, TE_INT32, (int64_t)1 << 31); /* wraps to int32's range */
    assert_true(te_is_const_int(e, &v));
    assert_int_equal(v, INT32_MIN);
    e = te_int_t(ctx, TE_DTYPE(TE_UINT, 8, 1), 300);
    assert_true(te_is_const_int(e, &v));
    assert_int_equal(v, 44);
    e = te_int_t(ctx, TE_FLOAT64, 3);
    assert_true(te_is_const_float(e, &d));
    assert_true(d == 3.0);

    e = te_float(ctx, 0.1);
    assert_true(te_is_const_float(e, &d));
    assert_true(d == (double)0.1f); /* float32 immediates are stored rounded */
    assert_false(te_is_const_int(e, NULL));
    e = te_float_t(ctx, TE_FLOAT64, 0.1);
    assert_true(te_is_const_float(e, &d));
    assert_true(d == 0.1);
    e = te_const(ctx, TE_INT32, 7.9);
    assert_true(te_is_const_int(e, &v));
    assert_int_equal(v, 7);
    assert_true(te_dtype_eq(e->dtype, TE_INT32));
    e = te_const(ctx, TE_FLOAT32, 2.5);
    assert_true(te_is_const_float(e, &d));
    assert_true(d == 2.5);
    e = te_bool(ctx, true);
    assert_true(te_is_const_int(e, &v));
    assert_int_equal(v, 1);
    assert_true(te_dtype_is_bool(e->dtype));

    e = te_const(ctx, te_dtype_with_lanes(TE_FLOAT32, 4), 1.0);
    assert_int_equal(e->kind, TE_BROADCAST);
    assert_int_equal(e->u.bcast.lanes, 4);
    assert_false(te_is_const_float(e, NULL)); /* only scalars count */

    assert_null(te_const(ctx, TE_HANDLE64, 0));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "te_const", "handle");
    assert_null(te_int(NULL, 1));
    te_ctx_free(ctx);
}

static int64_t ival_of(te_expr *e) {
    int64_t v = -999999;
    assert_true(te_is_const_int(e, &v));
    return v;
}

static void test_fold_int(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    assert_int_equal(ival_of(te_add(I(3), I(4))), 7);
    assert_int_equal(ival_of(te_sub(I(3), I(4))), -1);
    assert_int_equal(ival_of(te_mul(I(-3), I(4))), -12);
    assert_int_equal(ival_of(te_div(I(-7), I(2))), -3); /* C truncation */
    assert_int_equal(ival_of(te_div(I(7), I(-2))), -3);
    assert_int_equal(ival_of(te_floordiv(I(-7), I(2))), -4);
    assert_int_equal(ival_of(te_floordiv(I(7), I(-2))), -4);
    assert_int_equal(ival_of(te_floordiv(I(7), I(2))), 3);
    assert_int_equal(ival_of(te_floormod(I(-7), I(2))), 1);
    assert_int_equal(ival_of(te_floormod(I(7), I(-2))), -1);
    assert_int_equal(ival_of(te_floormod(I(-8), I(2))), 0);
    assert_int_equal(ival_of(te_min(I(-8), I(2))), -8);
    assert_int_equal(ival_of(te_max(I(-8), I(2))), 2);
    assert_int_equal(ival_of(te_div(I(INT64_MIN), I(-1))), INT64_MIN); /* wraps, no UB */
    assert_int_equal(ival_of(te_floormod(I(INT64_MIN), I(-1))), 0);

    te_expr *c = te_lt(I(3), I(4));
    assert_true(te_dtype_is_bool(c->dtype));
    assert_int_equal(ival_of(c), 1);
    assert_int_equal(ival_of(te_ge(I(3), I(4))), 0);
    assert_int_equal(ival_of(te_eq(I(4), I(4))), 1);
    assert_int_equal(ival_of(te_ne(I(4), I(4))), 0);
    assert_int_equal(ival_of(te_and(te_bool(ctx, true), te_bool(ctx, false))), 0);
    assert_int_equal(ival_of(te_or(te_bool(ctx, true), te_bool(ctx, false))), 1);
    assert_int_equal(ival_of(te_not(te_bool(ctx, false))), 1);

    /* int32 arithmetic wraps at 32 bits */
    te_expr *big = te_int_t(ctx, TE_INT32, INT32_MAX);
    te_expr *w = te_add(big, te_int_t(ctx, TE_INT32, 1));
    assert_true(te_dtype_eq(w->dtype, TE_INT32));
    assert_int_equal(ival_of(w), INT32_MIN);
    /* uint8 compares unsigned */
    te_dtype u8 = TE_DTYPE(TE_UINT, 8, 1);
    assert_int_equal(ival_of(te_lt(te_int_t(ctx, u8, 200), te_int_t(ctx, u8, 100))), 0);
    assert_int_equal(ival_of(te_sub(te_int_t(ctx, u8, 1), te_int_t(ctx, u8, 2))), 255);

    /* select with an immediate condition picks a side */
    te_expr *x = te_var(ctx, "x", TE_INT64), *y = te_var(ctx, "y", TE_INT64);
    assert_ptr_equal(te_select(te_bool(ctx, true), x, y), x);
    assert_ptr_equal(te_select(te_lt(I(5), I(1)), x, y), y);
    /* cast of an immediate folds */
    assert_int_equal(ival_of(te_cast(TE_INT32, te_float(ctx, -2.75))), -2);
    te_ctx_free(ctx);
}

static void test_fold_float(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    double d;
    te_expr *e = te_add(te_float(ctx, 0.5), te_float(ctx, 0.25));
    assert_true(te_is_const_float(e, &d));
    assert_true(d == 0.75);
    assert_true(te_dtype_eq(e->dtype, TE_FLOAT32));
    e = te_div(te_float(ctx, 1), te_float(ctx, 3));
    assert_true(te_is_const_float(e, &d));
    assert_true(d == (double)(1.0f / 3.0f)); /* rounded to float32 */
    e = te_mul(te_float_t(ctx, TE_FLOAT64, 0.1), te_int(ctx, 3)); /* int imm becomes float64 */
    assert_true(te_is_const_float(e, &d));
    assert_true(d == 0.1 * 3);
    assert_true(te_dtype_eq(e->dtype, TE_FLOAT64));
    e = te_add(te_int(ctx, 1), te_float(ctx, 0.5)); /* two immediates: float wins */
    assert_true(te_is_const_float(e, &d));
    assert_true(d == 1.5);
    assert_int_equal(ival_of(te_gt(te_float(ctx, 2), te_float(ctx, 1))), 1);
    e = te_min(te_float(ctx, 2), te_float(ctx, -1));
    assert_true(te_is_const_float(e, &d) && d == -1);
    /* vector immediates fold lane-wise */
    te_dtype v4 = te_dtype_with_lanes(TE_FLOAT32, 4);
    e = te_add(te_const(ctx, v4, 1), te_const(ctx, v4, 2));
    assert_int_equal(e->kind, TE_BROADCAST);
    assert_true(te_is_const_float(e->u.bcast.value, &d) && d == 3);
    te_ctx_free(ctx);
}

/* ---------------- type rules and errors ---------------- */

static void test_type_rules(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_expr *x = te_var(ctx, "x", TE_FLOAT32);
    te_expr *i = te_var(ctx, "i", TE_INT64);
    te_expr *n = te_var(ctx, "n", TE_INT32);

    /* an immediate adopts the other operand's type */
    te_expr *e = te_add(x, I(1));
    assert_int_equal(e->kind, TE_ADD);
    assert_true(te_dtype_eq(e->dtype, TE_FLOAT32));
    assert_int_equal(e->u.bin.b->kind, TE_FLOAT_IMM);
    assert_true(te_dtype_eq(e->u.bin.b->dtype, TE_FLOAT32));
    e = te_mul(te_float_t(ctx, TE_FLOAT64, 2), x); /* float64 imm to float32 */
    assert_true(te_dtype_eq(e->dtype, TE_FLOAT32));
    e = te_sub(n, I(1));
    assert_true(te_dtype_eq(e->dtype, TE_INT32));
    assert_true(te_dtype_eq(e->u.bin.b->dtype, TE_INT32));
    e = te_lt(i, I(4));
    assert_true(te_dtype_eq(e->dtype, TE_BOOL1));

    /* mismatches name both types */
    assert_null(te_add(x, te_var(ctx, "y", TE_FLOAT64)));
    assert_string_equal(te_ctx_errmsg(ctx), "add: operand types float32 and float64 differ");
    assert_null(te_mul(i, n));
    assert_string_equal(te_ctx_errmsg(ctx), "mul: operand types int64 and int32 differ");
    assert_null(te_add(i, te_float(ctx, 0.5))); /* a float imm never becomes an int */
    assert_string_equal(te_ctx_errmsg(ctx), "add: operand types int64 and float32 differ");
    assert_null(te_lt(x, i));
    assert_string_equal(te_ctx_errmsg(ctx), "lt: operand types float32 and int64 differ");

    /* operand classes */
    assert_null(te_floordiv(x, te_float(ctx, 2)));
    assert_string_equal(te_ctx_errmsg(ctx), "floordiv: operand type float32 is not an integer type");
    assert_null(te_floormod(x, x));
    assert_string_equal(te_ctx_errmsg(ctx), "floormod: operand type float32 is not an integer type");
    assert_null(te_and(i, i));
    assert_string_equal(te_ctx_errmsg(ctx), "and: operand type int64 is not bool");
    assert_null(te_or(te_lt(i, I(1)), I(1)));
    assert_string_equal(te_ctx_errmsg(ctx), "or: operand types bool and int64 differ");
    assert_null(te_not(x));
    assert_string_equal(te_ctx_errmsg(ctx), "not: operand type float32 is not bool");
    assert_null(te_add(te_lt(i, I(1)), te_lt(i, I(2))));
    assert_string_equal(te_ctx_errmsg(ctx), "add: operand type bool is not a number");

    /* division by an immediate zero */
    assert_null(te_div(x, te_float(ctx, 0)));
    assert_string_equal(te_ctx_errmsg(ctx), "div: division by an immediate zero");
    assert_null(te_div(i, I(0)));
    assert_string_equal(te_ctx_errmsg(ctx), "div: division by an immediate zero");
    assert_null(te_floordiv(i, I(0)));
    assert_string_equal(te_ctx_errmsg(ctx), "floordiv: division by an immediate zero");
    assert_null(te_floormod(I(5), I(0)));
    assert_string_equal(te_ctx_errmsg(ctx), "floormod: division by an immediate zero");

    /* select and cast */
    assert_null(te_select(i, x, x));
    assert_string_equal(te_ctx_errmsg(ctx), "select: condition type int64 is not bool");
    assert_null(te_select(te_lt(i, I(1)), x, i));
    assert_string_equal(te_ctx_errmsg(ctx), "select: operand types float32 and int64 differ");
    e = te_select(te_lt(i, I(1)), x, I(0));
    assert_true(te_dtype_eq(e->dtype, TE_FLOAT32));
    assert_ptr_equal(te_cast(TE_FLOAT32, x), x);
    e = te_cast(TE_FLOAT64, x);
    assert_int_equal(e->kind, TE_CAST);
    assert_true(te_dtype_eq(e->dtype, TE_FLOAT64));

    /* intrinsics */
    te_expr *one[1] = {x}, *two[2] = {x, I(2)};
    assert_null(te_call(TE_INTRIN_POW, 1, one));
    assert_string_equal(te_ctx_errmsg(ctx), "pow: expects 2 arguments, got 1");
    assert_null(te_call(TE_INTRIN_EXP, 2, two));
    assert_string_equal(te_ctx_errmsg(ctx), "exp: expects 1 argument, got 2");
    assert_null(te_exp(i));
    assert_string_equal(te_ctx_errmsg(ctx), "exp: argument type int64 is not a float type");
    assert_null(te_pow(x, te_var(ctx, "z", TE_FLOAT64)));
    assert_string_equal(te_ctx_errmsg(ctx), "pow: operand types float32 and float64 differ");
    e = te_pow(x, I(2));
    assert_int_equal(e->kind, TE_CALL);
    assert_true(te_dtype_eq(e->u.call.args[1]->dtype, TE_FLOAT32));
    te_expr *lk[1] = {te_lt(i, I(3))};
    e = te_call(TE_INTRIN_LIKELY, 1, lk);
    assert_true(te_dtype_is_bool(e->dtype));
    assert_null(te_call(TE_INTRIN_LIKELY, 1, one));
    assert_string_equal(te_ctx_errmsg(ctx), "likely: argument type float32 is not bool");
    assert_string_equal(te_intrin_name(TE_INTRIN_SIGMOID), "sigmoid");
    assert_int_equal(te_intrin_arity(TE_INTRIN_POW), 2);
    assert_string_equal(te_expr_kind_name(TE_FLOORMOD), "FLOORMOD");
    assert_string_equal(te_expr_kind_name(TE_BROADCAST), "BROADCAST");
    assert_string_equal(te_reduce_op_name(TE_REDUCE_PROD), "prod");
    te_ctx_free(ctx);
}

static void test_vector_rules(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_dtype f4 = te_dtype_with_lanes(TE_FLOAT32, 4);
    te_expr *v = te_var(ctx, "v", f4), *x = te_var(ctx, "x", TE_FLOAT32);
    /* a scalar immediate is broadcast to the vector's lanes */
    te_expr *e = te_mul(v, te_float(ctx, 2));
    assert_true(te_dtype_eq(e->dtype, f4));
    assert_int_equal(e->u.bin.b->kind, TE_BROADCAST);
    assert_int_equal(e->u.bin.b->u.bcast.lanes, 4);
    assert_true(te_dtype_eq(e->u.bin.b->dtype, f4));
    assert_string_equal(STR(e), "(v*x4(2.0f))");
    e = te_lt(I(0), v);
    assert_true(te_dtype_eq(e->dtype, te_dtype_with_lanes(TE_BOOL1, 4)));
    /* a scalar non-immediate is not */
    assert_null(te_add(v, x));
    assert_string_equal(te_ctx_errmsg(ctx), "add: operand types float32x4 and float32 differ");
    assert_null(te_add(v, te_var(ctx, "w", te_dtype_with_lanes(TE_FLOAT32, 8))));
    assert_string_equal(te_ctx_errmsg(ctx), "add: operand types float32x4 and float32x8 differ");
    /* a vector condition with immediate values */
    e = te_select(te_lt(v, te_float(ctx, 0)), te_float(ctx, 0), te_float(ctx, 1));
    assert_true(te_dtype_eq(e->dtype, f4));
    /* cast: scalar to vector broadcasts; lane mismatch is an error */
    e = te_cast(te_dtype_with_lanes(TE_FLOAT64, 4), x);
    assert_int_equal(e->kind, TE_BROADCAST);
    assert_null(te_cast(te_dtype_with_lanes(TE_FLOAT32, 8), v));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "cast", "float32x4", "float32x8", "lane");
    te_ctx_free(ctx);
}

static void test_vars_and_axes(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_expr *v = te_var(ctx, "v", TE_FLOAT32);
    assert_int_equal(v->kind, TE_VAR);
    assert_int_equal(v->u.var.iter, TE_ITER_NONE);
    assert_int_equal(v->u.var.extent, 0);
    assert_string_equal(v->u.var.name, "v");
    te_expr *i = te_axis(ctx, "i", 10), *k = te_reduce_axis(ctx, "k", 5);
    assert_int_equal(i->u.var.iter, TE_ITER_DATA_PAR);
    assert_int_equal(i->u.var.extent, 10);
    assert_true(te_dtype_eq(i->dtype, TE_INT64));
    assert_int_equal(k->u.var.iter, TE_ITER_REDUCE);
    assert_true(i->u.var.id != k->u.var.id);
    te_expr *s = te_iter_var(ctx, "i.outer", TE_ITER_DATA_PAR, 3);
    assert_int_equal(s->u.var.extent, 3);

    assert_null(te_axis(ctx, "i", 0));
    assert_string_equal(te_ctx_errmsg(ctx), "axis 'i': extent 0 must be positive");
    assert_null(te_reduce_axis(ctx, "k", -2));
    assert_string_equal(te_ctx_errmsg(ctx), "reduce axis 'k': extent -2 must be positive");
    assert_null(te_iter_var(ctx, "s", TE_ITER_REDUCE, 0));
    assert_string_equal(te_ctx_errmsg(ctx), "iter var 's': extent 0 must be positive");
    assert_null(te_var(ctx, NULL, TE_INT64));
    assert_string_equal(te_ctx_errmsg(ctx), "var: name is NULL");
    te_ctx_free(ctx);
}

/* ---------------- tensors ---------------- */

static void test_tensors(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(8, 4));
    te_tensor *B = te_placeholder(ctx, "B", TE_FLOAT32, TE_SHAPE(4, 6));
    assert_non_null(A);
    assert_int_equal(A->kind, TE_OP_PLACEHOLDER);
    assert_int_equal(A->ndim, 2);
    assert_int_equal(A->shape[1], 4);
    assert_true(A->id != B->id);
    te_expr *i = te_axis(ctx, "i", 8), *j = te_axis(ctx, "j", 6), *k = te_reduce_axis(ctx, "k", 4);
    te_expr *r = te_read(A, i, k);
    assert_int_equal(r->kind, TE_READ);
    assert_ptr_equal(r->u.read.tensor, A);
    assert_true(te_dtype_eq(r->dtype, TE_FLOAT32));
    /* B read first in the body: inputs keep first-read order */
    te_expr *body = te_sum(te_mul(te_read(B, k, j), te_read(A, i, k)), k);
    te_tensor *C = te_compute(ctx, "C", TE_AXES(i, j), body);
    assert_non_null(C);
    assert_string_equal(te_ctx_errmsg(ctx), "");
    assert_int_equal(C->kind, TE_OP_COMPUTE);
    assert_int_equal(C->ndim, 2);
    assert_int_equal(C->shape[0], 8);
    assert_int_equal(C->shape[1], 6);
    assert_ptr_equal(C->axes[0], i);
    assert_ptr_equal(C->body, body);
    assert_int_equal(C->ninputs, 2);
    assert_ptr_equal(C->inputs[0], B);
    assert_ptr_equal(C->inputs[1], A);
    assert_true(te_dtype_eq(C->dtype, TE_FLOAT32));

    /* an elementwise op reading C twice lists it once */
    te_expr *x = te_axis(ctx, "x", 8), *y = te_axis(ctx, "y", 6);
    te_tensor *D = te_compute(ctx, "D", TE_AXES(x, y),
                              te_add(te_read(C, x, y), te_exp(te_read(C, x, y))));
    assert_non_null(D);
    assert_int_equal(D->ninputs, 1);
    assert_ptr_equal(D->inputs[0], C);

    /* read errors */
    assert_null(te_read(A, i));
    assert_string_equal(te_ctx_errmsg(ctx), "read 'A': 1 indices for a tensor of rank 2");
    assert_null(te_read(A, i, te_float(ctx, 1)));
    assert_string_equal(te_ctx_errmsg(ctx),
                        "read 'A': index 1 has type float32, expected a scalar integer");

    /* placeholder errors */
    assert_null(te_placeholder(ctx, "P", TE_FLOAT32, TE_SHAPE(3, 0)));
    assert_string_equal(te_ctx_errmsg(ctx),
                        "placeholder 'P': extent 0 of dimension 1 must be positive");
    int64_t shape9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_null(te_placeholder(ctx, "P", TE_FLOAT32, 9, shape9));
    assert_string_equal(te_ctx_errmsg(ctx), "placeholder 'P': rank 9 is outside [0, 8]");
    assert_null(te_placeholder(ctx, "P", te_dtype_with_lanes(TE_FLOAT32, 4), TE_SHAPE(3)));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "placeholder 'P'", "float32x4", "scalar");
    te_ctx_free(ctx);
}

static void test_reduce(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(8, 4));
    te_expr *i = te_axis(ctx, "i", 8), *k = te_reduce_axis(ctx, "k", 4);
    te_expr *r = te_rmax(te_read(A, i, k), k);
    assert_int_equal(r->kind, TE_REDUCE);
    assert_int_equal(r->u.reduce.op, TE_REDUCE_MAX);
    assert_int_equal(r->u.reduce.naxes, 1);
    assert_ptr_equal(r->u.reduce.axes[0], k);
    assert_null(te_sum(te_read(A, i, k), i));
    assert_string_equal(te_ctx_errmsg(ctx),
                        "sum: 'i' is not a reduce axis (make it with te_reduce_axis)");
    assert_null(te_prod(te_read(A, i, k), k, k));
    assert_string_equal(te_ctx_errmsg(ctx), "prod: reduce axis 'k' is listed twice");
    assert_null(te_reduce_n(TE_REDUCE_MIN, te_read(A, i, k), 0, NULL));
    assert_string_equal(te_ctx_errmsg(ctx), "min: needs at least one reduce axis");
    assert_null(te_sum(te_lt(i, I(2)), k));
    assert_string_equal(te_ctx_errmsg(ctx), "sum: source type bool is not a number");

    double d;
    int64_t v;
    assert_true(te_is_const_float(te_reduce_identity(ctx, TE_REDUCE_SUM, TE_FLOAT32), &d) && d == 0);
    assert_true(te_is_const_float(te_reduce_identity(ctx, TE_REDUCE_PROD, TE_FLOAT64), &d) && d == 1);
    assert_true(te_is_const_float(te_reduce_identity(ctx, TE_REDUCE_MIN, TE_FLOAT32), &d));
    assert_true(isinf(d) && d > 0);
    assert_true(te_is_const_float(te_reduce_identity(ctx, TE_REDUCE_MAX, TE_FLOAT32), &d));
    assert_true(isinf(d) && d < 0);
    assert_true(te_is_const_int(te_reduce_identity(ctx, TE_REDUCE_MIN, TE_INT64), &v));
    assert_int_equal(v, INT64_MAX);
    assert_true(te_is_const_int(te_reduce_identity(ctx, TE_REDUCE_MAX, TE_INT32), &v));
    assert_int_equal(v, INT32_MIN);
    te_expr *u8 = te_reduce_identity(ctx, TE_REDUCE_MIN, TE_DTYPE(TE_UINT, 8, 1));
    assert_true(te_is_const_int(u8, &v));
    assert_int_equal(v, 255);
    assert_true(te_dtype_eq(u8->dtype, TE_DTYPE(TE_UINT, 8, 1)));
    assert_true(te_is_const_int(te_reduce_identity(ctx, TE_REDUCE_SUM, TE_INT32), &v) && v == 0);
    assert_null(te_reduce_identity(ctx, TE_REDUCE_SUM, TE_HANDLE64));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "sum", "handle");

    te_expr *acc = te_var(ctx, "acc", TE_FLOAT32), *x = te_var(ctx, "x", TE_FLOAT32);
    assert_int_equal(te_reduce_combine(TE_REDUCE_SUM, acc, x)->kind, TE_ADD);
    assert_int_equal(te_reduce_combine(TE_REDUCE_PROD, acc, x)->kind, TE_MUL);
    assert_int_equal(te_reduce_combine(TE_REDUCE_MIN, acc, x)->kind, TE_MIN);
    assert_int_equal(te_reduce_combine(TE_REDUCE_MAX, acc, x)->kind, TE_MAX);
    te_ctx_free(ctx);
}

/* te_reduce_axis_slides: a 1-D convolution's tap slides (x + rs), its
 * channels and a matmul's k do not; no reduction or an axis out of range:
 * false. */
static void test_reduce_axis_slides(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_tensor *X = te_placeholder(ctx, "X", TE_FLOAT32, TE_SHAPE(4, 10));
    te_tensor *W = te_placeholder(ctx, "W", TE_FLOAT32, TE_SHAPE(2, 4, 3));
    te_expr *k = te_axis(ctx, "k", 2), *x = te_axis(ctx, "x", 8);
    te_expr *rc = te_reduce_axis(ctx, "rc", 4), *rs = te_reduce_axis(ctx, "rs", 3);
    te_tensor *Y = te_compute(ctx, "Y", TE_AXES(k, x),
                              te_sum(te_mul(te_read(X, rc, te_add(x, rs)), te_read(W, k, rc, rs)),
                                     rc, rs));
    assert_non_null(Y);
    assert_false(te_reduce_axis_slides(Y, 0));
    assert_true(te_reduce_axis_slides(Y, 1));
    assert_false(te_reduce_axis_slides(Y, 2));
    assert_false(te_reduce_axis_slides(Y, -1));
    te_expr *i = te_axis(ctx, "i", 4), *kk = te_reduce_axis(ctx, "kk", 10);
    te_tensor *M = te_compute(ctx, "M", TE_AXES(i), te_sum(te_read(X, i, kk), kk));
    assert_false(te_reduce_axis_slides(M, 0));
    te_expr *i2 = te_axis(ctx, "i", 4), *j2 = te_axis(ctx, "j", 10);
    te_tensor *E = te_compute(ctx, "E", TE_AXES(i2, j2), te_read(X, i2, j2));
    assert_false(te_reduce_axis_slides(E, 0));
    assert_false(te_reduce_axis_slides(NULL, 0));
    te_ctx_free(ctx);
}

static void test_compute_errors(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(8, 4));
    te_expr *i = te_axis(ctx, "i", 8), *j = te_axis(ctx, "j", 4);
    te_expr *k = te_reduce_axis(ctx, "k", 4), *k2 = te_reduce_axis(ctx, "k2", 4);
    te_tensor *B = te_compute(ctx, "B", TE_AXES(i, j), te_read(A, i, j));
    assert_non_null(B);

    /* an axis belongs to one op */
    assert_null(te_compute(ctx, "B2", TE_AXES(i, j), te_read(A, i, j)));
    assert_string_equal(te_ctx_errmsg(ctx), "compute 'B2': axis 'i' already belongs to compute "
                                             "op 'B' (each op needs its own axes)");

    te_expr *x = te_axis(ctx, "x", 8), *y = te_axis(ctx, "y", 4);
    assert_null(te_compute(ctx, "C", TE_AXES(x, x), te_read(A, x, I(0))));
    assert_string_equal(te_ctx_errmsg(ctx), "compute 'C': axis 'x' is listed twice");
    assert_null(te_compute(ctx, "C", TE_AXES(x, k), te_read(A, x, k)));
    assert_string_equal(te_ctx_errmsg(ctx), "compute 'C': axis 'k' is not a data-parallel axis "
                                             "(make it with te_axis)");
    assert_null(te_compute(ctx, "C", TE_AXES(x, I(3)), te_read(A, x, I(0))));
    assert_string_equal(te_ctx_errmsg(ctx), "compute 'C': axis 1 is a INT_IMM, not a "
                                             "data-parallel axis");

    /* a reduction nested inside the body */
    assert_null(te_compute(ctx, "C", TE_AXES(x),
                           te_add(te_sum(te_read(A, x, k), k), te_float(ctx, 1))));
    assert_string_equal(te_ctx_errmsg(ctx), "compute 'C': a reduction (sum) may only be the "
                                             "whole body, not nested inside it");
    /* a reduce axis the top reduction does not list */
    assert_null(te_compute(ctx, "C", TE_AXES(x),
                           te_sum(te_mul(te_read(A, x, k), te_read(A, x, k2)), k)));
    assert_string_equal(te_ctx_errmsg(ctx), "compute 'C': reduce axis 'k2' is not listed by a "
                                             "reduction at the top of the body");
    assert_null(te_compute(ctx, "C", TE_AXES(x), te_read(A, x, k)));
    assert_string_equal(te_ctx_errmsg(ctx), "compute 'C': reduce axis 'k' is not listed by a "
                                             "reduction at the top of the body");
    /* an axis of another op, or of none */
    assert_null(te_compute(ctx, "C", TE_AXES(x), te_read(A, x, j)));
    assert_string_equal(te_ctx_errmsg(ctx),
                        "compute 'C': body uses axis 'j', which is not an axis of this op");
    assert_null(te_compute(ctx, "C", TE_AXES(x, y), te_read(A, te_add(x, te_int(ctx, 0)), te_var(ctx, "n", TE_INT64))));
    assert_string_equal(te_ctx_errmsg(ctx),
                        "compute 'C': body uses variable 'n', which is not an axis of this op");
    assert_null(te_compute(ctx, "C", TE_AXES(x),
                           te_var(ctx, "v", te_dtype_with_lanes(TE_FLOAT32, 4))));
    assert_string_equal(te_ctx_errmsg(ctx), "compute 'C': body type float32x4 is not a scalar");

    /* a constant index outside the tensor, at the top or in a reduction */
    assert_null(te_compute(ctx, "C", TE_AXES(x, y), te_read(A, x, I(4))));
    assert_string_equal(te_ctx_errmsg(ctx), "compute 'C': read of 'A' at index 4 in dimension "
                                             "1, outside its extent 4 (indices 0..3)");
    assert_null(te_compute(ctx, "C", TE_AXES(x),
                           te_sum(te_mul(te_read(A, x, k), te_read(A, I(-1), k)), k)));
    assert_string_equal(te_ctx_errmsg(ctx), "compute 'C': read of 'A' at index -1 in dimension "
                                             "0, outside its extent 8 (indices 0..7)");
    assert_null(te_compute(ctx, "C", TE_AXES(x, y), te_read(B, I(100000), y)));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "'B' at index 100000 in dimension 0", "extent 8");
    /* the last index of each dimension is fine */
    te_expr *z = te_axis(ctx, "z", 8);
    assert_non_null(te_compute(ctx, "E", TE_AXES(z), te_read(A, I(7), I(3))));

    /* failed attempts did not claim x and y */
    te_tensor *C = te_compute(ctx, "C", TE_AXES(x, y), te_sum(te_read(A, x, k), k));
    assert_non_null(C);
    assert_string_equal(STR(C->body), "sum(A[x, k], axis=[k])");
    te_ctx_free(ctx);
}

/* Every builder returns NULL for a NULL operand without replacing the
 * error that caused it. */
static void test_null_propagation(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(8));
    te_expr *i = te_axis(ctx, "i", 8), *x = te_var(ctx, "x", TE_FLOAT32);
    te_expr *bad = te_axis(ctx, "bad", 0);
    assert_null(bad);
    const char *first = "axis 'bad': extent 0 must be positive";
    assert_string_equal(te_ctx_errmsg(ctx), first);
    assert_null(te_add(x, bad));
    assert_null(te_mul(bad, x));
    assert_null(te_floordiv(bad, I(0)));
    assert_null(te_lt(bad, x));
    assert_null(te_and(bad, NULL));
    assert_null(te_not(NULL));
    assert_null(te_select(bad, x, x));
    assert_null(te_select(te_lt(i, I(1)), bad, x));
    assert_null(te_cast(TE_FLOAT64, bad));
    assert_null(te_exp(bad));
    assert_null(te_pow(x, bad));
    assert_null(te_read(A, bad));
    assert_null(te_read_n(NULL, 1, &i));
    assert_null(te_sum(x, bad));
    assert_null(te_sum(bad, i));
    assert_null(te_reduce_combine(TE_REDUCE_SUM, bad, x));
    assert_null(te_compute(ctx, "C", TE_AXES(i), bad));
    assert_null(te_compute(ctx, "C", TE_AXES(bad), x));
    assert_null(te_substitute(ctx, NULL, 1, &i, &x));
    assert_string_equal(te_ctx_errmsg(ctx), first);
    te_ctx_free(ctx);
}

/* ---------------- printer ---------------- */

static void test_print(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(64, 32));
    te_tensor *B = te_placeholder(ctx, "B", TE_FLOAT32, TE_SHAPE(32, 16));
    te_expr *i = te_axis(ctx, "i", 64), *j = te_axis(ctx, "j", 16), *k = te_reduce_axis(ctx, "k", 32);
    te_expr *x = te_var(ctx, "x", TE_FLOAT32), *b = te_var(ctx, "b", TE_BOOL1);

    assert_string_equal(STR(te_add(te_mul(i, I(32)), j)), "((i*32) + j)");
    assert_string_equal(STR(te_sub(i, te_div(j, I(2)))), "(i - (j / 2))");
    assert_string_equal(STR(te_floordiv(te_add(i, j), I(4))), "floordiv(i + j, 4)");
    assert_string_equal(STR(te_floormod(i, I(4))), "floormod(i, 4)");
    assert_string_equal(STR(te_min(i, te_max(j, I(0)))), "min(i, max(j, 0))");
    assert_string_equal(STR(te_sum(te_mul(te_read(A, i, k), te_read(B, k, j)), k)),
                        "sum(A[i, k]*B[k, j], axis=[k])");
    assert_string_equal(STR(te_read(A, te_add(te_mul(i, I(2)), I(1)), k)), "A[(i*2) + 1, k]");
    assert_string_equal(STR(te_select(te_lt(i, I(4)), x, te_float(ctx, 0))),
                        "select(i < 4, x, 0.0f)");
    assert_string_equal(STR(te_and(te_le(i, j), te_not(b))), "((i <= j) && !b)");
    assert_string_equal(STR(te_or(te_ne(i, j), te_eq(i, I(0)))), "((i != j) || (i == 0))");
    assert_string_equal(STR(te_not(te_gt(i, j))), "!(i > j)");
    assert_string_equal(STR(te_ge(i, j)), "(i >= j)");
    assert_string_equal(STR(te_cast(TE_FLOAT32, i)), "float32(i)");
    assert_string_equal(STR(te_exp(te_mul(x, x))), "exp(x*x)");
    assert_string_equal(STR(te_pow(x, te_float(ctx, 0.5))), "pow(x, 0.5f)");
    assert_string_equal(STR(te_sigmoid(x)), "sigmoid(x)");
    assert_string_equal(STR(te_rmin(te_read(A, i, k), k)), "min(A[i, k], axis=[k])");

    /* immediates */
    assert_string_equal(STR(I(-7)), "-7");
    assert_string_equal(STR(te_int_t(ctx, TE_INT32, 5)), "int32(5)");
    assert_string_equal(STR(te_bool(ctx, true)), "True");
    assert_string_equal(STR(te_bool(ctx, false)), "False");
    assert_string_equal(STR(te_float(ctx, 0.5)), "0.5f");
    assert_string_equal(STR(te_float(ctx, 1)), "1.0f");
    assert_string_equal(STR(te_float(ctx, 0.1)), "0.1f");
    assert_string_equal(STR(te_float(ctx, -3.25)), "-3.25f");
    assert_string_equal(STR(te_float(ctx, 1e20)), "1e+20f");
    assert_string_equal(STR(te_float_t(ctx, TE_FLOAT64, 0.1)), "0.1");
    assert_string_equal(STR(te_float_t(ctx, TE_FLOAT64, 2)), "2.0");
    assert_string_equal(STR(te_float_t(ctx, TE_FLOAT64, 1.0 / 3)), "0.3333333333333333");
    assert_string_equal(STR(te_reduce_identity(ctx, TE_REDUCE_MAX, TE_FLOAT32)), "float32(-inf)");
    assert_string_equal(STR(te_float_t(ctx, TE_FLOAT64, NAN)), "float64(nan)");
    assert_string_equal(STR(te_const(ctx, te_dtype_with_lanes(TE_FLOAT32, 16), 1)), "x16(1.0f)");

    /* the printed float reads back to the same value */
    uint64_t rng = tu_seed();
    for (int n = 0; n < 200; n++) {
        float f = (float)tu_rand_uniform(&rng, -1000, 1000);
        const char *s = STR(te_float(ctx, f));
        assert_true((float)strtod(s, NULL) == f);
        double g = tu_rand_uniform(&rng, -1, 1) * 1e-5;
        s = STR(te_float_t(ctx, TE_FLOAT64, g));
        assert_true(strtod(s, NULL) == g);
    }

    te_str s;
    te_str_init(&s);
    assert_string_equal(s.data, "");
    te_str_append(&s, "a");
    te_str_printf(&s, "%d-%s", 12, "b");
    for (int n = 0; n < 100; n++) te_str_append(&s, "0123456789");
    assert_int_equal(s.len, 5 + 1000);
    assert_memory_equal(s.data, "a12-b0123", 9);
    assert_int_equal(strlen(s.data), s.len);
    te_str_free(&s);
    te_ctx_free(ctx);
}

/* Loop-level nodes made by hand, as tir passes make them. */
static te_expr *node(te_ctx *ctx, te_expr_kind k, te_dtype t) {
    te_expr *e = te_alloc(ctx, sizeof *e);
    e->kind = k;
    e->dtype = t;
    e->ctx = ctx;
    return e;
}

static void test_loop_level_nodes(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer buf = {0};
    buf.name = "Abuf";
    buf.id = 99;
    buf.dtype = TE_FLOAT32;
    te_expr *i = te_var(ctx, "i", TE_INT64), *j = te_var(ctx, "j", TE_INT64);
    te_expr *ramp = node(ctx, TE_RAMP, te_dtype_with_lanes(TE_INT64, 16));
    ramp->u.ramp.base = te_mul(i, I(16));
    ramp->u.ramp.stride = I(1);
    ramp->u.ramp.lanes = 16;
    assert_string_equal(STR(ramp), "ramp(i*16, 1, 16)");
    te_expr *load = node(ctx, TE_LOAD, te_dtype_with_lanes(TE_FLOAT32, 16));
    load->u.load.buffer = &buf;
    load->u.load.index = ramp;
    assert_string_equal(STR(load), "Abuf[ramp(i*16, 1, 16)]");
    te_expr *pl = node(ctx, TE_LOAD, TE_FLOAT32);
    pl->u.load.buffer = &buf;
    pl->u.load.index = j;
    pl->u.load.predicate = te_lt(j, I(3));
    assert_string_equal(STR(pl), "Abuf[j, pred=j < 3]");
    te_expr *idx[2] = {i, te_add(j, I(1))};
    te_expr *bl = node(ctx, TE_BUFFER_LOAD, TE_FLOAT32);
    bl->u.bload.buffer = &buf;
    bl->u.bload.ndim = 2;
    bl->u.bload.indices = idx;
    assert_string_equal(STR(bl), "Abuf[i, j + 1]");
    te_expr *bc = node(ctx, TE_BROADCAST, te_dtype_with_lanes(TE_FLOAT32, 16));
    bc->u.bcast.value = bl;
    bc->u.bcast.lanes = 16;
    assert_string_equal(STR(te_add(load, bc)), "(Abuf[ramp(i*16, 1, 16)] + x16(Abuf[i, j + 1]))");

    /* substitution reaches inside every loop-level kind */
    te_expr *k = te_var(ctx, "k", TE_INT64);
    te_expr *vals[2] = {k, I(5)}, *vars[2] = {i, j};
    assert_string_equal(STR(te_substitute(ctx, load, 2, vars, vals)), "Abuf[ramp(k*16, 1, 16)]");
    assert_string_equal(STR(te_substitute(ctx, pl, 2, vars, vals)), "Abuf[5, pred=5 < 3]"); /* no folding */
    assert_string_equal(STR(te_substitute(ctx, bc, 2, vars, vals)), "x16(Abuf[k, 5 + 1])");
    assert_string_equal(STR(bc), "x16(Abuf[i, j + 1])"); /* the original is untouched */
    assert_true(te_expr_uses_var(load, i));
    assert_false(te_expr_uses_var(load, j));
    assert_true(te_expr_uses_var(pl, j));
    /* equal/hash see through the loop-level kinds */
    te_expr *load2 = te_substitute(ctx, load, 1, &i, &i);
    assert_ptr_equal(load2, load);
    te_expr *z = te_var(ctx, "z", TE_INT64);
    te_expr *load3 = te_substitute(ctx, te_substitute(ctx, load, 1, &i, &z), 1, &z, &i);
    assert_ptr_not_equal(load3, load);
    assert_true(te_expr_equal(load3, load));
    assert_true(te_expr_hash(load3) == te_expr_hash(load));
    te_ctx_free(ctx);
}

/* ---------------- traversal ---------------- */

static te_expr *count_map(te_expr *e, void *user) {
    (*(int *)user)++;
    return e;
}

static te_expr *bump_imm(te_expr *e, void *user) {
    (void)user;
    int64_t v;
    if (te_is_const_int(e, &v)) return te_int(e->ctx, v + 100);
    return e;
}

static te_expr *fail_map(te_expr *e, void *user) {
    (void)e;
    (void)user;
    return NULL;
}

typedef struct {
    const te_expr *seen[8];
    int n;
} visit_log;

static void log_visit(const te_expr *e, void *user) {
    visit_log *l = user;
    if (l->n < 8) l->seen[l->n] = e;
    l->n++;
}

static void test_traversal(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(64, 32));
    te_expr *i = te_var(ctx, "i", TE_INT64), *j = te_var(ctx, "j", TE_INT64);
    te_expr *e1 = te_add(te_mul(i, I(32)), j);
    te_expr *e2 = te_add(te_mul(i, I(32)), j);
    te_expr *e3 = te_add(te_mul(j, I(32)), i);
    assert_true(te_expr_equal(e1, e2));
    assert_true(te_expr_hash(e1) == te_expr_hash(e2));
    assert_false(te_expr_equal(e1, e3));
    assert_false(te_expr_equal(e1, NULL));
    assert_true(te_expr_equal(NULL, NULL));
    /* variables compare by identity, not by name */
    te_expr *i2 = te_var(ctx, "i", TE_INT64);
    assert_false(te_expr_equal(i, i2));
    assert_false(te_expr_equal(te_add(i, j), te_add(i2, j)));
    /* dtype matters */
    assert_false(te_expr_equal(I(1), te_int_t(ctx, TE_INT32, 1)));
    assert_false(te_expr_equal(te_float(ctx, 1), te_float_t(ctx, TE_FLOAT64, 1)));
    te_expr *r1 = te_read(A, e1, j), *r2 = te_read(A, e2, j);
    assert_true(te_expr_equal(r1, r2));
    assert_true(te_expr_hash(r1) == te_expr_hash(r2));
    assert_false(te_expr_equal(r1, te_read(A, e3, j)));
    te_expr *sel = te_select(te_lt(i, j), te_exp(r1), te_float(ctx, 0));
    te_expr *sel2 = te_select(te_lt(i, j), te_exp(r2), te_float(ctx, 0));
    assert_true(te_expr_equal(sel, sel2));
    assert_true(te_expr_hash(sel) == te_expr_hash(sel2));

    /* visit order */
    visit_log lg = {{0}, 0};
    te_expr_visit_children(sel, log_visit, &lg);
    assert_int_equal(lg.n, 3);
    assert_ptr_equal(lg.seen[0], sel->u.sel.cond);
    assert_ptr_equal(lg.seen[2], sel->u.sel.f);
    lg.n = 0;
    te_expr_visit_children(r1, log_visit, &lg);
    assert_int_equal(lg.n, 2);
    lg.n = 0;
    te_expr_visit_children(i, log_visit, &lg);
    assert_int_equal(lg.n, 0);

    /* map: identity keeps the node, a change rebuilds only the path */
    int calls = 0;
    assert_ptr_equal(te_expr_map_children(ctx, e1, count_map, &calls), e1);
    assert_int_equal(calls, 2);
    te_expr *m = te_expr_map_children(ctx, te_mul(i, I(32)), bump_imm, NULL);
    assert_string_equal(STR(m), "(i*132)");
    assert_null(te_expr_map_children(ctx, e1, fail_map, NULL));
    assert_ptr_equal(te_expr_map_children(ctx, i, fail_map, NULL), i); /* no children */

    /* substitute */
    te_expr *k = te_var(ctx, "k", TE_INT64);
    te_expr *vars[2] = {i, j}, *vals[2] = {te_add(k, I(1)), I(3)};
    te_expr *s = te_substitute(ctx, r1, 2, vars, vals);
    assert_string_equal(STR(s), "A[((k + 1)*32) + 3, 3]");
    assert_string_equal(STR(r1), "A[(i*32) + j, j]");
    assert_ptr_equal(te_substitute(ctx, r1, 1, &k, &i), r1); /* k absent: unchanged */
    assert_true(te_expr_uses_var(r1, i));
    assert_false(te_expr_uses_var(r1, k));
    assert_true(te_expr_uses_var(s, k));
    te_expr *red_k = te_reduce_axis(ctx, "rk", 4);
    te_expr *red = te_sum(te_read(A, i, red_k), red_k);
    assert_true(te_expr_uses_var(red, red_k));
    te_expr *rs = te_substitute(ctx, red, 1, &i, &j);
    assert_int_equal(rs->kind, TE_REDUCE);
    assert_string_equal(STR(rs), "sum(A[j, rk], axis=[rk])");
    assert_ptr_equal(rs->u.reduce.axes[0], red_k);
    te_ctx_free(ctx);
}

/* FNV-1a's published 64-bit vectors: the values are on disk (workload-key
 * hashes, cost-model checksums), so they must stay bit-identical. */
static void test_hash(void **st) {
    (void)st;
    assert_true(te_hash_str("") == 0xcbf29ce484222325ull);
    assert_true(te_hash_str("a") == 0xaf63dc4c8601ec8cull);
    assert_true(te_hash_str("foobar") == 0x85944171f73967e8ull);
    assert_true(te_hash_bytes("foobar", 3) == te_hash_str("foo"));
    const unsigned char zero[1] = {0};
    assert_true(te_hash_bytes(zero, 1) == 0xaf63bd4c8601b7dfull);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena),
        cmocka_unit_test(test_arena_many_nodes),
        cmocka_unit_test(test_ctx_strings_and_errors),
        cmocka_unit_test(test_dtype),
        cmocka_unit_test(test_immediates),
        cmocka_unit_test(test_fold_int),
        cmocka_unit_test(test_fold_float),
        cmocka_unit_test(test_type_rules),
        cmocka_unit_test(test_vector_rules),
        cmocka_unit_test(test_vars_and_axes),
        cmocka_unit_test(test_tensors),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_reduce_axis_slides),
        cmocka_unit_test(test_compute_errors),
        cmocka_unit_test(test_null_propagation),
        cmocka_unit_test(test_print),
        cmocka_unit_test(test_loop_level_nodes),
        cmocka_unit_test(test_traversal),
        cmocka_unit_test(test_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
