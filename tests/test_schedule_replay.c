/*
 * The transform-step log: replaying a schedule's log on a freshly built
 * copy of the same computation gives the same loop program; a copy of a
 * schedule is independent of its original; a failing step is reported
 * with its index.
 */
#include <stdlib.h>
#include <string.h>

#include "sched_harness.h"

/* A schedule touching every kind of step (bind aside: it cannot lower on
 * the CPU). */
static void schedule_everything(sch_schedule *s, sched_case *c) {
    te_tensor *CL = sch_cache_write(s, c->out, "local");
    assert_non_null(CL);
    te_tensor *AL = sch_cache_read(s, c->in[0], "global", 1, &CL);
    assert_non_null(AL);
    te_expr *io, *jo, *ii, *ji, *f;
    assert_int_equal(sch_tile(s, c->out, c->ax[0], c->ax[1], 8, 16, &io, &jo, &ii, &ji), 0);
    assert_int_equal(sch_fuse(s, c->out, 2, (te_expr *[]){io, jo}, &f), 0);
    assert_int_equal(sch_parallel(s, c->out, f), 0);
    assert_int_equal(sch_vectorize(s, c->out, ji), 0);
    assert_int_equal(sch_compute_at(s, CL, c->out, f), 0);
    te_expr *ck = sch_reduce_axis(CL, 0), *ko, *ki;
    assert_int_equal(sch_split_nparts(s, CL, ck, 4, &ko, &ki), 0);
    assert_int_equal(sch_reorder(s, CL, 4, (te_expr *[]){ko, ki, sch_axis(CL, 0), sch_axis(CL, 1)}), 0);
    assert_int_equal(sch_unroll(s, CL, sch_axis(CL, 0)), 0);
    assert_int_equal(sch_vectorize(s, CL, sch_axis(CL, 1)), 0);
    assert_int_equal(sch_pragma(s, c->out, f, "auto_unroll_max_step", 64), 0);
    assert_int_equal(sch_storage_align(s, AL, sch_axis(AL, 0), 16, 4), 0);
    assert_int_equal(sch_compute_root(s, AL), 0);
}

static void test_replay_same_program(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_matmul(ctx, 40, 48, 36);
    sch_schedule *s = sch_create(ctx, 1, &c.out);
    schedule_everything(s, &c);
    const char *text = sch_lower_text(s, TE_TENSORS(c.in[0], c.in[1], c.out));
    assert_non_null(text);
    assert_true(sch_num_steps(s) >= 14);

    te_ctx *ctx2 = te_ctx_new();
    sched_case c2 = sh_matmul(ctx2, 40, 48, 36);
    int n = sch_num_steps(s);
    sch_step *steps = calloc((size_t)n, sizeof *steps);
    for (int i = 0; i < n; i++) steps[i] = *sch_get_step(s, i);
    sch_schedule *r = sch_replay(ctx2, 1, &c2.out, n, steps);
    assert_non_null(r);
    assert_int_equal(sch_num_steps(r), n);
    const char *text2 = sch_lower_text(r, TE_TENSORS(c2.in[0], c2.in[1], c2.out));
    assert_non_null(text2);
    assert_string_equal(text, text2);
    /* and it computes the right thing */
    assert_int_equal(sh_run(&c2, r, "llvm"), 0);
    free(steps);
    te_ctx_free(ctx2);
    te_ctx_free(ctx);
}

static void test_copy_is_independent(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_matmul(ctx, 16, 16, 16);
    sch_schedule *s = sch_create(ctx, 1, &c.out);
    te_expr *io, *ii;
    assert_int_equal(sch_split(s, c.out, c.ax[0], 4, &io, &ii), 0);
    const char *before = sch_lower_text(s, TE_TENSORS(c.in[0], c.in[1], c.out));
    sch_schedule *copy = sch_copy(s);
    te_expr *jo, *ji;
    assert_int_equal(sch_split(copy, c.out, c.ax[1], 8, &jo, &ji), 0);
    assert_int_equal(sch_vectorize(copy, c.out, ji), 0);
    assert_int_equal(sch_num_steps(s), 1);
    assert_int_equal(sch_num_steps(copy), 3);
    assert_string_equal(before, sch_lower_text(s, TE_TENSORS(c.in[0], c.in[1], c.out)));
    assert_string_not_equal(before, sch_lower_text(copy, TE_TENSORS(c.in[0], c.in[1], c.out)));
    te_ctx_free(ctx);
}

static void test_replay_bad_step(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_matmul(ctx, 16, 16, 16);
    sch_step steps[2] = {
        {.kind = SCH_STEP_SPLIT, .stage = 2, .iter = 0, .value = 4},
        {.kind = SCH_STEP_SPLIT, .stage = 2, .iter = 9, .value = 4},
    };
    assert_null(sch_replay(ctx, 1, &c.out, 2, steps));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "replay: step 1 (split)", "no loop 9");
    sch_step bad_stage = {.kind = SCH_STEP_FUSE, .stage = 17};
    assert_null(sch_replay(ctx, 1, &c.out, 1, &bad_stage));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "step 0 (fuse)", "no stage 17");
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_same_program),
        cmocka_unit_test(test_copy_is_independent),
        cmocka_unit_test(test_replay_bad_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
