/*
 * tests/test_tune_scheduler.c — the task scheduler (tune_scheduler_pick,
 * tune_scheduler_groups): Ansor's gradient-based allocation with its
 * similarity term, on states whose gains are worked out by hand below
 * (alpha 0.2, beta 2, backward window 3).
 */
#include <math.h>

#include "testutil.h"
#include "loom/autotune.h"

/* Without similarity. gain = w * (0.2 * backward + 0.8 * forward):
 *   task 0: 4 rounds, best 10, 8, 6, 5: backward (10 - 5) / 3 = 1.6667,
 *           forward 5 / 4 = 1.25: gain 0.3333 + 1.0 = 1.3333
 *   task 1: 2 rounds, best 4, 4: backward 0 (fewer than 4 rounds),
 *           forward 4 / 2 = 2: gain 1.6
 * so task 1; with weight 2 on task 0 (gain 2.6667), task 0. */
static void test_gradient(void **st) {
    (void)st;
    const double h0[] = {10, 8, 6, 5}, h1[] = {4, 4};
    const double *hist[] = {h0, h1};
    const int nr[] = {4, 2};
    const double best[] = {5, 4};
    assert_int_equal(tune_scheduler_pick(2, NULL, nr, hist, best, NULL, NULL), 1);
    const double w[] = {2, 1};
    assert_int_equal(tune_scheduler_pick(2, w, nr, hist, best, NULL, NULL), 0);
    /* The backward term counts: without history task 0's gain is 0.8 *
     * 1.25 * 2 = 2.0 > 1.6 still; at weight 1.5 it is 1.5 (no history)
     * against 1.6: task 1, but 1.5 * 1.3333 = 2.0 with history: task 0. */
    const double w15[] = {1.5, 1};
    assert_int_equal(tune_scheduler_pick(2, w15, nr, NULL, best, NULL, NULL), 1);
    assert_int_equal(tune_scheduler_pick(2, w15, nr, hist, best, NULL, NULL), 0);
    /* The window is 3 rounds back: task 0 with 5 rounds 10, 8, 6, 5, 4.9:
     * backward (8 - 4.9) / 3 = 1.0333, forward 4.9 / 5 = 0.98: gain
     * 0.2067 + 0.784 = 0.9907 at weight 1; at weight 1.6: 1.5851 < 1.6 and
     * at 1.62: 1.6049 > 1.6. (A window of 4 gives 1.0390 * 1.6 = 1.662 >
     * 1.6, failing the first check; a window of 2 gives 0.894 * 1.62 =
     * 1.448 < 1.6, failing the second.) */
    const double h0b[] = {10, 8, 6, 5, 4.9};
    const double *histb[] = {h0b, h1};
    const int nrb[] = {5, 2};
    const double bestb[] = {4.9, 4};
    assert_int_equal(tune_scheduler_pick(2, (double[]){1.6, 1}, nrb, histb, bestb, NULL, NULL), 1);
    assert_int_equal(tune_scheduler_pick(2, (double[]){1.62, 1}, nrb, histb, bestb, NULL, NULL), 0);
}

/* Three tasks of 4 rounds; 0 and 1 similar (one group), 2 alone.
 *   task 0: 2e9 FLOP, best 0.01 s (200 GFLOP/s), history .012 .011 .0105 .01:
 *           backward .002 / 3 = .000667; forward: min(.01 - .0025,
 *           2 * 2e9 / 2e11 = .02) = .0075, so .0025: gain .0021333
 *   task 1: 1e9 FLOP, best 0.05 s (20 GFLOP/s), flat history: backward 0;
 *           forward without similarity .05 / 4 = .0125: gain .01;
 *           with it: min(.0375, 2 * 1e9 / 2e11 = .01) = .01, so .04: gain .032
 *   task 2: 1e9 FLOP, best 0.06, history .1 .08 .07 .06: backward
 *           .04 / 3 = .013333, forward .015: gain .0026667 + .012 = .0146667
 * Without similarity task 2 wins (.01467 > .01), with it task 1 (.032). */
static void test_similarity(void **st) {
    (void)st;
    const double h0[] = {.012, .011, .0105, .01}, h1[] = {.05, .05, .05, .05},
                 h2[] = {.1, .08, .07, .06};
    const double *hist[] = {h0, h1, h2};
    const int nr[] = {4, 4, 4};
    const double best[] = {.01, .05, .06}, flops[] = {2e9, 1e9, 1e9};
    const int groups[] = {0, 0, 1};
    assert_int_equal(tune_scheduler_pick(3, NULL, nr, hist, best, NULL, NULL), 2);
    assert_int_equal(tune_scheduler_pick(3, NULL, nr, hist, best, flops, groups), 1);
    /* No group (-1) or a group of one: no similarity term. */
    assert_int_equal(tune_scheduler_pick(3, NULL, nr, hist, best, flops, (int[]){-1, -1, -1}), 2);
    assert_int_equal(tune_scheduler_pick(3, NULL, nr, hist, best, flops, (int[]){0, 1, 2}), 2);
    /* When task 0 is slower (best .04 s: 5e10 FLOP/s, the group's best),
     * task 1's similarity guess is 2 * 1e9 / 5e10 = .04, above its
     * optimistic guess .05 - .0125 = .0375: forward .0125, gain .01; task
     * 0: forward .01, gain .008 (flat); task 2 (.0146667) wins. */
    const double best_slow0[] = {.04, .05, .06};
    const double h0s[] = {.04, .04, .04, .04};
    const double *hists[] = {h0s, h1, h2};
    assert_int_equal(tune_scheduler_pick(3, NULL, nr, hists, best_slow0, flops, groups), 2);

    /* Ansor drops a member that has had more than 5 rounds more than every
     * other member and still runs at < 1/2 of the group's best: task 1
     * with 10 rounds (> 5 + 4), 20 < 200 / 2 GFLOP/s. Its gain is then
     * .8 * .05 / 10 = .004 (backward 0, flat): task 2 (.0146667). With 9
     * rounds it still counts: forward min(.05 - .05 / 9, .01) = .01, so
     * .04: gain .032: task 1. */
    const double h1l[] = {.05, .05, .05, .05, .05, .05, .05, .05, .05, .05};
    const double *histl[] = {h0, h1l, h2};
    assert_int_equal(tune_scheduler_pick(3, NULL, (int[]){4, 10, 4}, histl, best, flops, groups), 2);
    assert_int_equal(tune_scheduler_pick(3, NULL, (int[]){4, 9, 4}, histl, best, flops, groups), 1);
}

static void test_first_rounds_and_dead_tasks(void **st) {
    (void)st;
    const double h[] = {1, 1, 1, 1};
    const double *hist[] = {h, h, h};
    /* A task without a round goes first (lowest index). */
    assert_int_equal(tune_scheduler_pick(3, NULL, (int[]){4, 0, 0}, hist, (double[]){1, 0, 0},
                                         NULL, NULL), 1);
    /* ... unless it is dead (weight 0). */
    assert_int_equal(tune_scheduler_pick(3, (double[]){1, 0, 1}, (int[]){4, 0, 0}, hist,
                                         (double[]){1, 0, 0}, NULL, NULL), 2);
    /* A task with rounds but nothing valid waits while another is alive. */
    assert_int_equal(tune_scheduler_pick(2, NULL, (int[]){4, 4}, hist, (double[]){0, 1}, NULL,
                                         NULL), 1);
    assert_int_equal(tune_scheduler_pick(2, (double[]){1, 0}, (int[]){4, 4}, hist,
                                         (double[]){0, 1}, NULL, NULL), 0);
    /* Everything dead, or nothing to pick from. */
    assert_int_equal(tune_scheduler_pick(2, (double[]){0, 0}, (int[]){4, 4}, hist,
                                         (double[]){1, 1}, NULL, NULL), -1);
    assert_int_equal(tune_scheduler_pick(0, NULL, NULL, NULL, NULL, NULL, NULL), -1);
    /* Ties: the lowest index. */
    assert_int_equal(tune_scheduler_pick(3, NULL, (int[]){4, 4, 4}, hist, (double[]){1, 1, 1},
                                         NULL, NULL), 0);
}

/* Buckets floor(log(flops + 1) / log(1.618)): 1e9 -> 43, 1.2e9 -> 43,
 * 5e9 -> 46, 1.3e9 -> 43 (log 1.3e9 / log 1.618 = 43.62). */
static void test_groups(void **st) {
    (void)st;
    const char *ops[] = {"conv2d", "conv2d", "matmul", "conv2d", "matmul", "conv2d", NULL};
    const double flops[] = {1e9, 1.2e9, 1e9, 5e9, 1.3e9, 0, 1e9};
    int g[7];
    tune_scheduler_groups(7, ops, flops, g);
    assert_int_equal(g[0], 0);
    assert_int_equal(g[1], 0); /* same op, same bucket */
    assert_int_equal(g[2], 1); /* another op */
    assert_int_equal(g[3], 2); /* same op, 5x the FLOP */
    assert_int_equal(g[4], 1);
    assert_int_equal(g[5], -1); /* FLOP unknown */
    assert_int_equal(g[6], -1); /* no op name */
    tune_scheduler_groups(2, NULL, flops, g);
    assert_int_equal(g[0], -1);
    assert_int_equal(g[1], -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradient),
        cmocka_unit_test(test_similarity),
        cmocka_unit_test(test_first_rounds_and_dead_tasks),
        cmocka_unit_test(test_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
