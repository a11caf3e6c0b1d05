/*
 * tests/test_tir_partition_fused.c — loop_partition on guards that use the
 * loop's variable other than linearly: the tail of a non-dividing split
 * whose outer loop is fused into a parallel loop (`floordiv(fused, 2)*4 +
 * ii < 10`), split off at the first fused iteration that reaches the
 * tail; a lower-bound guard of the same kind (a suffix); a guard that no
 * prefix or suffix satisfies (split by a per-iteration test instead); and
 * a matmul whose 6-row tiles (30 = 5*6 ... 33 rows: a tail) are fused with
 * the column tiles into the parallel loop, rows outside or inside the
 * columns (then the full tiles are floormod(fused, tiles)*6 <= M - 6, no
 * range of fused), checked numerically on both backends. The parallel
 * loop is never cut: it branches per iteration between the pieces. And a
 * padding guard (1 <= y + r, r a reduction's loop): the reduction's loop
 * is split, not y outside it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_harness.h"
#include "tir_text.h"

static te_expr *I(te_ctx *ctx, int64_t v) { return te_int(ctx, v); }
static te_expr *likely(te_expr *c) { return te_call(TE_INTRIN_LIKELY, 1, &c); }

/* for (f, 0, 6) parallel { for (ii, 0, 4) {
 *   if (likely(cond(f, ii))) B[row] = A[row] * 2 } }, row = floordiv(f, 2)*4 + ii:
 * 3 row tiles of 4 over 10 rows (a tail of 2) fused with 2 column tiles. */
static tir_func *fused_tail(te_ctx *ctx, int which, te_expr **fv) {
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, 12), *B = tu_param_buf(ctx, "B", TE_FLOAT32, 12);
    te_expr *f = te_var(ctx, "fused", TE_INT64), *ii = te_var(ctx, "ii", TE_INT64);
    te_expr *row = te_add(te_mul(te_floordiv(f, I(ctx, 2)), I(ctx, 4)), ii);
    te_expr *cond = which == 0   ? te_lt(row, I(ctx, 10))
                    : which == 1 ? te_ge(row, I(ctx, 3))
                                 : te_lt(te_floormod(f, I(ctx, 3)), I(ctx, 1));
    tir_stmt *st =
        tir_store(ctx, B, row, te_mul(tir_load(ctx, A, row, NULL), te_float(ctx, 2)), NULL);
    tir_stmt *g = tir_if(ctx, likely(cond), st, NULL);
    tir_stmt *inner = tir_for(ctx, ii, I(ctx, 0), I(ctx, 4), TIR_FOR_SERIAL, g);
    tir_stmt *outer = tir_for(ctx, f, I(ctx, 0), I(ctx, 6), TIR_FOR_PARALLEL, inner);
    if (fv) *fv = f;
    tir_func *fn = tir_func_new(ctx, "default", 2, (tir_buffer *[]){A, B}, outer);
    assert_non_null(fn);
    return fn;
}

static void test_fused_tail_prefix(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_func *f = fused_tail(ctx, 0, NULL);
    tir_func *g = tir_pass_loop_partition(ctx, f);
    assert_non_null(g);
    const char *t = tu_tir_text(ctx, g);
    /* one parallel loop; row tiles 0 and 1 (fused 0..3) never reach row
     * 10: no guard there */
    assert_int_equal(tu_count(t, "parallel"), 1);
    assert_non_null(strstr(t, "for (fused, 0, 6) parallel {"));
    char *main_part = tu_between(t, "if (fused < 4) {", "} else {");
    assert_int_equal(tu_count(main_part, "likely"), 0);
    assert_int_equal(tu_count(main_part, "for (ii, 0, 4)"), 1);
    free(main_part);
    /* the last row tile: rows 8, 9 unguarded, the guard kept on the rest */
    char *tail = tu_between(t, "} else {", NULL);
    assert_non_null(strstr(tail, "for (ii, 0, 2) {"));
    assert_non_null(strstr(tail, "for (ii, 2, 2) {"));
    assert_int_equal(tu_count(tail, "likely"), 1);
    free(tail);
    /* the pipeline then drops the dead rows */
    tir_func *p = tir_run_pipeline(ctx, f, NULL);
    assert_non_null(p);
    assert_int_equal(tu_count(tu_tir_text(ctx, p), "likely"), 0);
    te_ctx_free(ctx);
}

static void test_fused_tail_suffix_and_none(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    /* rows >= 3: row tile 0 (fused 0, 1) needs the guard, the rest not */
    tir_func *g = tir_pass_loop_partition(ctx, fused_tail(ctx, 1, NULL));
    assert_non_null(g);
    const char *t = tu_tir_text(ctx, g);
    assert_non_null(strstr(t, "for (fused, 0, 6) parallel {"));
    char *main_part = tu_between(t, "if (fused >= 2) {", "} else {");
    assert_int_equal(tu_count(main_part, "likely"), 0);
    free(main_part);
    assert_int_equal(tu_count(t, "likely"), 1);
    /* floormod(fused, 3) < 1 holds at fused 0 and 3, which no range says:
     * the parallel loop tests it each iteration, the guard dropped where
     * it holds and kept elsewhere. */
    tir_func *m = fused_tail(ctx, 2, NULL);
    tir_func *r = tir_pass_loop_partition(ctx, m);
    assert_non_null(r);
    const char *rt = tu_tir_text(ctx, r);
    assert_non_null(strstr(rt, "for (fused, 0, 6) parallel {"));
    char *main3 = tu_between(rt, "if (floormod(fused, 3) <= 0) {", "} else {");
    assert_int_equal(tu_count(main3, "likely"), 0);
    free(main3);
    char *rest = tu_between(rt, "} else {", NULL);
    assert_int_equal(tu_count(rest, "likely"), 1);
    free(rest);
    te_ctx_free(ctx);
}

/* for (y, 0, 8) { for (r, 0, 3) reduce { if (likely(1 <= y + r)) B[y] += A[y + r] } }:
 * a padding guard. y is outside the reduction and the conjunct varies with
 * its loop r, so y is not split (each piece would copy the reduction); r
 * is: r = 0 keeps the guard, r in [1, 3) runs without it. */
static void test_reduction_conjunct_splits_reduce_loop(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_buffer *A = tu_param_buf(ctx, "A", TE_FLOAT32, 10), *B = tu_param_buf(ctx, "B", TE_FLOAT32, 8);
    te_expr *y = te_iter_var(ctx, "y", TE_ITER_DATA_PAR, 8);
    te_expr *r = te_iter_var(ctx, "r", TE_ITER_REDUCE, 3);
    te_expr *add = te_add(tir_load(ctx, B, y, NULL), tir_load(ctx, A, te_add(y, r), NULL));
    tir_stmt *st = tir_store(ctx, B, y, add, NULL);
    tir_stmt *g = tir_if(ctx, likely(te_le(I(ctx, 1), te_add(y, r))), st, NULL);
    tir_stmt *inner = tir_for(ctx, r, I(ctx, 0), I(ctx, 3), TIR_FOR_SERIAL, g);
    tir_stmt *outer = tir_for(ctx, y, I(ctx, 0), I(ctx, 8), TIR_FOR_SERIAL, inner);
    tir_func *f = tir_func_new(ctx, "default", 2, (tir_buffer *[]){A, B}, outer);
    assert_non_null(f);
    tir_func *p = tir_pass_loop_partition(ctx, f);
    assert_non_null(p);
    const char *t = tu_tir_text(ctx, p);
    assert_int_equal(tu_count(t, "for (y, "), 1);
    assert_non_null(strstr(t, "for (y, 0, 8) {"));
    assert_non_null(strstr(t, "for (r, 1, 2) {"));
    assert_int_equal(tu_count(t, "likely"), 1);
    char *main_part = tu_between(t, "for (r, 1, 2) {", NULL);
    assert_int_equal(tu_count(main_part, "likely"), 0);
    free(main_part);
    /* the same guard over a plain (data-parallel) inner loop splits y */
    te_expr *x = te_iter_var(ctx, "x", TE_ITER_DATA_PAR, 3);
    tir_stmt *g2 = tir_if(ctx, likely(te_le(I(ctx, 1), te_add(y, x))),
                          tir_store(ctx, B, y, tir_load(ctx, A, te_add(y, x), NULL), NULL), NULL);
    tir_stmt *o2 = tir_for(ctx, y, I(ctx, 0), I(ctx, 8), TIR_FOR_SERIAL,
                           tir_for(ctx, x, I(ctx, 0), I(ctx, 3), TIR_FOR_SERIAL, g2));
    tir_func *f2 = tir_func_new(ctx, "default", 2, (tir_buffer *[]){A, B}, o2);
    tir_func *p2 = tir_pass_loop_partition(ctx, f2);
    assert_non_null(p2);
    assert_non_null(strstr(tu_tir_text(ctx, p2), "for (y, 1, 7) {"));
    te_ctx_free(ctx);
}

/* A matmul of M rows tiled 6 x 8 (rows: a tail when 6 does not divide M),
 * the row and column tiles fused into the parallel loop (the column tiles
 * outside with cols_outer, as the CPU's register tile has them), the 8
 * columns vectorized: the tail is a branch of the parallel loop and the
 * result matches the reference on both backends. */
static void check_mm_fused_rows(int64_t M, int64_t N, bool cols_outer, const char *target) {
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_matmul(ctx, M, N, 9);
    sch_schedule *s = sch_create(ctx, 1, &c.out);
    te_expr *io, *jo, *ii, *ji, *fused;
    assert_int_equal(sch_tile(s, c.out, c.ax[0], c.ax[1], 6, 8, &io, &jo, &ii, &ji), 0);
    if (cols_outer) assert_int_equal(sch_reorder(s, c.out, 2, (te_expr *[]){jo, io}), 0);
    te_expr *outer[2] = {cols_outer ? jo : io, cols_outer ? io : jo};
    assert_int_equal(sch_fuse(s, c.out, 2, outer, &fused), 0);
    assert_int_equal(sch_parallel(s, c.out, fused), 0);
    assert_int_equal(sch_vectorize(s, c.out, ji), 0);
    const char *text = sch_lower_text(s, TE_TENSORS(c.in[0], c.in[1], c.out));
    assert_non_null(text);
    if (getenv("LOOM_TEST_DUMP")) fprintf(stderr, "%s\n", text);
    int64_t full = M / 6 * ((N + 7) / 8); /* fused iterations of whole row tiles */
    assert_int_equal(tu_count(text, "parallel"), 1);
    if (M % 6 && N % 8 == 0) {
        /* the whole row tiles run unguarded, the tail in the same loop */
        char want[96];
        if (cols_outer)
            snprintf(want, sizeof want, "if ((floormod(j.outer.i.outer.fused, %lld)*6) <= %lld) {",
                     (long long)(M / 6 + 1), (long long)(M - 6));
        else
            snprintf(want, sizeof want, "if (i.outer.j.outer.fused < %lld) {", (long long)full);
        char *main_part = tu_between(text, want, "} else {");
        assert_non_null(main_part);
        assert_int_equal(tu_count(main_part, "likely"), 0);
        assert_int_equal(tu_count(main_part, "if ("), 1); /* the branch itself */
        free(main_part);
    }
    if (M % 6 && N % 8) {
        /* Both tails: the full tiles, the column tails of full row tiles,
         * the row tails of full column tiles, and the corner, each its own
         * body. The row tail's floormod (floordiv) is pinned there, so its
         * dead rows are gone: the only guards left are the column tail's,
         * on the vectorized lanes. */
        char rows[96], cols[96], lanes[48];
        const char *f = cols_outer ? "j.outer.i.outer.fused" : "i.outer.j.outer.fused";
        int64_t R = M / 6 + 1, J = (N + 7) / 8;
        const char *rop = cols_outer ? "floormod" : "floordiv";
        const char *cop = cols_outer ? "floordiv" : "floormod";
        long long by = cols_outer ? R : J;
        snprintf(rows, sizeof rows, "(%s(%s, %lld)*6) <= %lld)", rop, f, by, (long long)(M - 6));
        snprintf(cols, sizeof cols, "(%s(%s, %lld)*8) <= %lld)", cop, f, by, (long long)(N - 8));
        snprintf(lanes, sizeof lanes, "likely(j.inner <= %lld)", (long long)(N % 8 - 1));
        /* if (rows && cols) full; else if (rows) column tail; else if
         * (cols) row tail; else the corner */
        assert_int_equal(tu_count(text, rows), 2);
        assert_int_equal(tu_count(text, cols), 2);
        assert_int_equal(tu_count(text, "likely("), tu_count(text, lanes));
    }
    int64_t bad = sh_run(&c, s, target);
    if (bad) fprintf(stderr, "%s\n", text);
    assert_int_equal(bad, 0);
    te_ctx_free(ctx);
}

static void test_fused_tail_matmul(void **state) {
    (void)state;
    const char *targets[] = {"llvm", "c"};
    for (int t = 0; t < 2; t++)
        for (int outer = 0; outer < 2; outer++) {
            for (int64_t N = 16; N <= 20; N += 4) { /* 20: a column tail of 4 */
                check_mm_fused_rows(33, N, outer, targets[t]); /* 5 tiles of 6 and a tail of 3 */
                check_mm_fused_rows(31, N, outer, targets[t]); /* a tail of 1 */
                check_mm_fused_rows(30, N, outer, targets[t]); /* no tail */
            }
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_tail_prefix),
        cmocka_unit_test(test_fused_tail_suffix_and_none),
        cmocka_unit_test(test_fused_tail_matmul),
        cmocka_unit_test(test_reduction_conjunct_splits_reduce_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
