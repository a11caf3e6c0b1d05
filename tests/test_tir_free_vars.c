/*
 * tir_stmt_free_vars: what a loop body needs from outside — variables and
 * buffers in first-use order, less loop variables, allocations and their
 * data VARs defined inside, less the keys the caller binds.
 */
#include "testutil.h"

static void test_free_vars(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    int64_t n = 16;
    tir_buffer *A = tir_buffer_new(ctx, "A", TE_FLOAT32, 1, &n, TIR_SCOPE_GLOBAL);
    tir_buffer *C = tir_buffer_new(ctx, "C", TE_FLOAT32, 1, &n, TIR_SCOPE_GLOBAL);
    tir_buffer *T = tir_buffer_new(ctx, "T", TE_FLOAT32, 1, &n, TIR_SCOPE_LOCAL);
    te_expr *i = te_var(ctx, "i", TE_INT64), *j = te_var(ctx, "j", TE_INT64);
    te_expr *m = te_var(ctx, "m", TE_INT64), *scale = te_var(ctx, "scale", TE_FLOAT32);
    /* for j in [0, m): T[j] = A[i + j] * scale; C[j] = T[j] */
    tir_stmt *body = tir_seq(ctx, 2, (tir_stmt *[]){
        tir_store(ctx, T, j, te_mul(tir_load(ctx, A, te_add(i, j), NULL), scale), NULL),
        tir_store(ctx, C, j, tir_load(ctx, T, j, NULL), NULL)});
    tir_stmt *s = tir_allocate(ctx, T, tir_for(ctx, j, te_int(ctx, 0), m, TIR_FOR_SERIAL, body));
    tir_free_vars fv;
    assert_int_equal(tir_stmt_free_vars(s, 1, (const void *[]){i}, &fv), 0);
    /* m (loop extent), A, scale, C: not i (bound), not j (loop), not T (allocated). */
    assert_int_equal(fv.n, 4);
    assert_ptr_equal(fv.keys[0], m);
    assert_false(fv.is_buffer[0]);
    assert_ptr_equal(fv.keys[1], A);
    assert_true(fv.is_buffer[1]);
    assert_ptr_equal(fv.keys[2], scale);
    assert_ptr_equal(fv.keys[3], C);
    assert_true(fv.is_buffer[3]);
    tir_free_vars_release(&fv);
    assert_int_equal(fv.n, 0);
    /* Without the binding, i is free too. */
    assert_int_equal(tir_stmt_free_vars(s, 0, NULL, &fv), 0);
    assert_int_equal(fv.n, 5);
    tir_free_vars_release(&fv);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_free_vars)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
