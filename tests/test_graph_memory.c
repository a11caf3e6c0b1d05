/*
 * The memory planner: values whose lifetimes overlap never share bytes,
 * values that do not overlap reuse them, and the arena of a chain needs
 * a small multiple of its largest neighbours.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "graph/memory_plan.h"

/* No two values alive at once overlap in memory; all fit in the arena. */
static void check_plan(int n, const gr_mem_value *v, const size_t *off, size_t arena)
{
    for (int i = 0; i < n; i++) {
        assert_true(off[i] % 64 == 0);
        assert_true(off[i] + v[i].size <= arena);
        for (int j = i + 1; j < n; j++) {
            bool live = v[i].first <= v[j].last && v[j].first <= v[i].last;
            bool overlap = off[i] < off[j] + v[j].size && off[j] < off[i] + v[i].size;
            if (live && overlap && v[i].size && v[j].size)
                fail_msg("values %d and %d are alive together and overlap", i, j);
        }
    }
}

/* A chain: value i written by group i, read by group i + 1. */
static void test_chain_reuses(void **state)
{
    (void)state;
    enum { N = 10 };
    gr_mem_value v[N];
    size_t off[N], arena, total = 0;
    for (int i = 0; i < N; i++) {
        v[i] = (gr_mem_value){(size_t)(1000 * (i % 3 + 1)), i, i + 1};
        total += v[i].size;
    }
    assert_int_equal(gr_plan_memory(N, v, off, &arena), 0);
    check_plan(N, v, off, arena);
    /* Two values are alive at a time; greedy placement may need one of
     * each size (3000 + 2000 + 1000, rounded to 64 bytes), far below one
     * buffer each. */
    assert_true(arena <= 3008 + 2048 + 1024);
    assert_true(arena * 3 < total);
}

/* Values alive for the whole run never share. */
static void test_all_live(void **state)
{
    (void)state;
    gr_mem_value v[4] = {{100, 0, 5}, {200, 1, 5}, {300, 2, 5}, {64, 3, 5}};
    size_t off[4], arena;
    assert_int_equal(gr_plan_memory(4, v, off, &arena), 0);
    check_plan(4, v, off, arena);
    assert_int_equal(arena, 128 + 256 + 320 + 64);
}

/* Random lifetimes: the invariants hold, and the arena is never larger
 * than the sum. */
static void test_random(void **state)
{
    (void)state;
    srand(7);
    for (int trial = 0; trial < 200; trial++) {
        int n = 1 + rand() % 40;
        gr_mem_value v[40];
        size_t off[40], arena, total = 0;
        for (int i = 0; i < n; i++) {
            int a = rand() % 30, b = a + rand() % 6;
            v[i] = (gr_mem_value){(size_t)(rand() % 5000), a, b};
            total += (v[i].size + 63) / 64 * 64 + (v[i].size ? 0 : 64);
        }
        assert_int_equal(gr_plan_memory(n, v, off, &arena), 0);
        check_plan(n, v, off, arena);
        assert_true(arena <= total);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_reuses),
        cmocka_unit_test(test_all_live),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
