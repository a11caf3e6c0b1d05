/*
 * tests/tir_text.h — helpers of the tests that read lowered loop programs
 * as text (tir_func_str): parameter buffers, the program's text, counting
 * and cutting out pieces of it.
 */
#ifndef LOOM_TESTS_TIR_TEXT_H
#define LOOM_TESTS_TIR_TEXT_H

#include "testutil.h"

/* A 1-D parameter buffer of n elements of type t (asserts success). */
tir_buffer *tu_param_buf(te_ctx *ctx, const char *name, te_dtype t, int64_t n);
/* f's text (arena-owned); printed to stderr when LOOM_TEST_DUMP is set. */
const char *tu_tir_text(te_ctx *ctx, const tir_func *f);
/* How many times sub occurs in s (overlapping occurrences counted). */
int tu_count(const char *s, const char *sub);
/* A malloc'd copy of s from the first occurrence of a up to the next
 * occurrence of b after it (to the end when b is NULL); asserts that both
 * are found. */
char *tu_between(const char *s, const char *a, const char *b);

#endif
