/*
 * tests/ops_cases.h — operator cases shared by the tests that run every
 * operator (test_ops.c, test_bounds_check.c).
 */
#ifndef LOOM_TEST_OPS_CASES_H
#define LOOM_TEST_OPS_CASES_H

typedef struct {
    const char *op, *shape; /* registry name, shape string */
} ops_case;

/* Every registered operator appears at least once (test_ops checks). */
extern const ops_case tu_ops_cases[];
extern const int tu_ops_ncases;

#endif
