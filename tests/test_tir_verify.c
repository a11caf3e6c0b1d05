/*
 * tests/test_tir_verify.c — the IR verifier (tir_verify) on hand-built
 * bad programs, one per rule, each message checked; the lowering list
 * naming the step after which a program went bad (LOOM_VERIFY_IR); and
 * the builders refusing bad operands.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "loom/tir.h"

static te_expr *I(te_ctx *ctx, int64_t v) { return te_int(ctx, v); }

/* A float32 parameter buffer of n elements. */
static tir_buffer *param(te_ctx *ctx, const char *name, int64_t n) {
    tir_buffer *b = tir_buffer_new(ctx, name, TE_FLOAT32, 1, (int64_t[]){n}, TIR_SCOPE_GLOBAL);
    assert_non_null(b);
    b->is_param = true;
    return b;
}

/* for (i, 0, ext) { B[i] = A[i] * 2 } over parameters A, B of n elements;
 * *store is the store, for the tests to break. */
static tir_func *scale(te_ctx *ctx, int64_t n, int64_t ext, tir_stmt **store) {
    tir_buffer *a = param(ctx, "A", n), *b = param(ctx, "B", n);
    te_expr *i = te_var(ctx, "i", TE_INT64);
    tir_stmt *st = tir_store(ctx, b, i, te_mul(tir_load(ctx, a, i, NULL), te_float(ctx, 2.0)), NULL);
    assert_non_null(st);
    if (store) *store = st;
    tir_stmt *body = tir_for(ctx, i, I(ctx, 0), I(ctx, ext), TIR_FOR_SERIAL, st);
    return tir_func_new(ctx, "scale", 2, (tir_buffer *[]){a, b}, body);
}

static void expect_rejected(te_ctx *ctx, const tir_func *f, bool gpu, const char *rule,
                            const char *stmt) {
    tir_verify_options o = {.gpu = gpu};
    assert_int_equal(tir_verify(ctx, f, &o), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), rule, stmt);
}

static void test_good_program_passes(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    assert_int_equal(tir_verify(ctx, scale(ctx, 16, 16, NULL), NULL), 0);
    te_ctx_free(ctx);
}

/* dtypes and lanes: a vector value stored at a scalar index, and
 * arithmetic on operands of two types. */
static void test_dtype_mismatch(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tir_stmt *s;
    tir_func *f = scale(ctx, 16, 16, &s);
    s->u.store.value = tir_broadcast(te_float(ctx, 1.0), 4);
    expect_rejected(ctx, f, false, "type mismatch: a store to 'B' (float32) of a float32x4 value",
                    "in statement `B[i] = x4(1.0f)`");

    f = scale(ctx, 16, 16, &s);
    te_expr *mul = s->u.store.value;
    mul->u.bin.b = te_float_t(ctx, TE_FLOAT64, 2.0);
    expect_rejected(ctx, f, false, "type mismatch: MUL", "both operands must have the result's type");
    te_ctx_free(ctx);
}

/* Every access inside a declared buffer: a buffer nobody declared, and
 * an index past the end. */
static void test_buffer_access(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tir_stmt *s;
    tir_func *f = scale(ctx, 16, 16, &s);
    s->u.store.buffer = param(ctx, "C", 16);
    expect_rejected(ctx, f, false,
                    "access to buffer 'C', which is neither a parameter nor allocated around it",
                    "in statement `C[i] =");

    f = scale(ctx, 16, 17, NULL);
    expect_rejected(ctx, f, false,
                    "access outside its buffer: 'B' holds 16 elements, index i takes values in "
                    "[0, 16]",
                    "in statement `B[i] =");
    te_ctx_free(ctx);
}

/* A loop variable defined once: the same variable bound by a loop inside
 * its own loop; and a variable read outside its loop. */
static void test_loop_variable(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tir_stmt *s;
    tir_func *f = scale(ctx, 16, 4, &s);
    te_expr *i = f->body->u.loop.var;
    f->body->u.loop.body = tir_for(ctx, i, I(ctx, 0), I(ctx, 4), TIR_FOR_SERIAL, s);
    expect_rejected(ctx, f, false, "variable 'i' is defined again inside its own loop",
                    "in statement `for (i, 0, 4) {`");

    f = scale(ctx, 16, 4, &s);
    f->body = s; /* the store without its loop */
    expect_rejected(ctx, f, false, "variable 'i' is used outside the loop or let that defines it",
                    "in statement `B[i] =");
    te_ctx_free(ctx);
}

/* On a GPU every store is inside a thread-bound loop. */
static void test_gpu_store_outside_thread_loop(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tir_func *f = scale(ctx, 16, 16, NULL);
    assert_int_equal(tir_verify(ctx, f, NULL), 0); /* fine on a CPU */
    expect_rejected(ctx, f, true,
                    "store to 'B' outside any thread-bound loop of a GPU function",
                    "in statement `B[i] =");
    f->body->u.loop.for_kind = TIR_FOR_THREAD;
    f->body->u.loop.thread_tag = "threadIdx.x";
    tir_verify_options gpu = {.gpu = true};
    assert_int_equal(tir_verify(ctx, f, &gpu), 0);
    te_ctx_free(ctx);
}

/* Guarded accesses are not range-checked: a tail loop partitioning
 * leaves behind, dead under its guard, is correct. */
static void test_guarded_access_passes(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tir_stmt *s;
    tir_func *f = scale(ctx, 16, 20, &s);
    te_expr *i = f->body->u.loop.var;
    te_expr *cond = te_call(TE_INTRIN_LIKELY, 1, (te_expr *[]){te_lt(i, I(ctx, 16))});
    f->body->u.loop.body = tir_if(ctx, cond, s, NULL);
    assert_int_equal(tir_verify(ctx, f, NULL), 0);
    te_ctx_free(ctx);
}

/* The list verifies after each step (LOOM_VERIFY_IR=1 in any build) and
 * names it; LOOM_VERIFY_IR=0 turns the verifier off. */
static void test_list_names_the_step(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    assert_int_equal(setenv("LOOM_VERIFY_IR", "1", 1), 0);
    tir_stmt *s;
    tir_func *f = scale(ctx, 16, 16, &s);
    s->u.store.buffer = param(ctx, "C", 16);
    assert_null(tir_run_pipeline(ctx, f, NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx),
                      "IR verifier: after step 'input' of function 'scale': access to buffer 'C', "
                      "which is neither a parameter nor allocated around it",
                      "in statement `C[i] =");
    assert_int_equal(setenv("LOOM_VERIFY_IR", "0", 1), 0);
    te_ctx_clear_error(ctx);
    assert_non_null(tir_run_pipeline(ctx, f, NULL));
    unsetenv("LOOM_VERIFY_IR");
    te_ctx_free(ctx);
}

/* Accesses outside a tensor that the input already makes (the user's
 * computation reads outside its input: cg_build's bounds_check reports
 * it at run time) are not blamed on a step. */
static void test_list_inherited_range(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    assert_int_equal(setenv("LOOM_VERIFY_IR", "1", 1), 0);
    tir_func *f = scale(ctx, 16, 17, NULL);
    assert_int_equal(tir_verify(ctx, f, NULL), -1);
    assert_int_equal(tir_verify(ctx, f, &(tir_verify_options){.skip_ranges = true}), 0);
    te_ctx_clear_error(ctx);
    assert_non_null(tir_run_pipeline(ctx, f, NULL));
    unsetenv("LOOM_VERIFY_IR");
    te_ctx_free(ctx);
}

/* The builders check their operands' kinds, types and lanes. */
static void test_builders_validate(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *b = param(ctx, "B", 16);
    te_expr *i = te_var(ctx, "i", TE_INT64), *x = te_float(ctx, 1.0);
    tir_stmt *nop = tir_noop(ctx);

    assert_null(tir_for(ctx, x, I(ctx, 0), I(ctx, 4), TIR_FOR_SERIAL, nop));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "for: the loop variable", "must be an integer variable");
    assert_null(tir_for(ctx, i, I(ctx, 0), x, TIR_FOR_SERIAL, nop));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "for: loop 'i': min (int64) and extent (float32)", "must be scalar integers");

    assert_null(tir_store(ctx, b, i, tir_broadcast(x, 4), NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "store: a float32x4 value to 'B' (float32)",
                      "at an index of type int64");
    assert_null(tir_store(ctx, b, x, x, NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "store: the index of 'B' has type float32",
                      "an integer");
    assert_null(tir_store(ctx, b, i, te_int(ctx, 1), NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "store: a int64 value to 'B' (float32)");

    assert_null(tir_buffer_store(ctx, b, 1, (te_expr *[]){i}, te_int(ctx, 1)));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "buffer_store: a int64 value to 'B' (float32)");
    assert_null(tir_buffer_store(ctx, b, 2, (te_expr *[]){i, i}, x));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "buffer_store: 2 indices for buffer 'B' of 1 dimensions");

    assert_null(tir_if(ctx, i, nop, NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "if: the condition has type int64", "a scalar bool");

    assert_null(tir_load(ctx, b, x, NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "load: the index of 'B' has type float32", "an integer");
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_program_passes),
        cmocka_unit_test(test_dtype_mismatch),
        cmocka_unit_test(test_buffer_access),
        cmocka_unit_test(test_loop_variable),
        cmocka_unit_test(test_gpu_store_outside_thread_loop),
        cmocka_unit_test(test_guarded_access_passes),
        cmocka_unit_test(test_list_names_the_step),
        cmocka_unit_test(test_list_inherited_range),
        cmocka_unit_test(test_builders_validate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
