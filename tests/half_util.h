/*
 * tests/half_util.h — float16 and bfloat16 bit patterns for the tests of
 * the 16-bit float types: decoding to double (exact), and encoding a
 * double with round-to-nearest-even through te_dtype_round (te/expr.c's
 * rounding, which test_te_half checks against hand-computed values).
 */
#ifndef LOOM_TEST_HALF_UTIL_H
#define LOOM_TEST_HALF_UTIL_H

#include <stdint.h>

#include "loom/loom.h"

/* The value of float16 bits h / bfloat16 bits b. */
double hu_f16_value(uint16_t h);
double hu_bf16_value(uint16_t b);
/* The bits of v rounded to type t (float16 or bfloat16); NaN gives the
 * quiet NaN 0x7e00 / 0x7fc0 with v's sign. */
uint16_t hu_bits(te_dtype t, double v);
/* The value of bits of type t. */
double hu_value(te_dtype t, uint16_t bits);
/* A CPU tensor of type t (float16 or bfloat16) with values uniform in
 * [-1, 1), rounded to t. */
DLTensor *hu_rand(te_dtype t, uint64_t *state, int ndim, const int64_t *shape);
/* A CPU tensor of type t filled with NaN bits. */
DLTensor *hu_nan(te_dtype t, int ndim, const int64_t *shape);
/* The DLPack type of a te type (kDLBfloat for bfloat16). */
DLDataType hu_dl(te_dtype t);

#endif
