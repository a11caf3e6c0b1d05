/*
 * tests/testutil.h — helpers shared by the unit tests: fresh random data,
 * NaN poisoning of outputs, and comparison against double-precision
 * references with a stated tolerance. Tests use cmocka.
 */
#ifndef LOOM_TESTUTIL_H
#define LOOM_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "loom/loom.h"

/* A seed that changes per run (time and pid), printed once so a failure
 * can be reproduced with LOOM_TEST_SEED=<seed>. */
uint64_t tu_seed(void);
/* xorshift64* generator. */
uint64_t tu_rand_u64(uint64_t *state);
/* Uniform in [lo, hi). */
double tu_rand_uniform(uint64_t *state, double lo, double hi);

/* Allocates a float32 tensor (rt_tensor_alloc) filled with uniform random
 * values in [-1, 1) from *state. */
DLTensor *tu_rand_f32(uint64_t *state, int ndim, const int64_t *shape);
/* Allocates a float32 tensor filled with NaN (an output poisoned so that
 * unwritten elements fail comparison). */
DLTensor *tu_nan_f32(int ndim, const int64_t *shape);
/* Fills an existing float32 tensor with NaN. */
void tu_poison_f32(DLTensor *t);

/* Compares n float32 values against a double reference: every element must
 * satisfy |got - want| <= atol + rtol * |want| (NaN always fails). Returns
 * the number of mismatches and prints the first few with `what`. */
int64_t tu_compare_f32(const char *what, const float *got, const double *want, int64_t n,
                       double rtol, double atol);

/* One line of a suite file (bench/workloads.tsv format: name<TAB>op<TAB>params). */
typedef struct {
    char name[64], op[64], shape[256];
} tu_suite_line;
/* Reads the lines of the suite file at path (relative to the source tree,
 * where the tests run) into lines, skipping '#' comments and blank lines;
 * fails the test when the file cannot be read, holds more than cap lines
 * or has a line of fewer than three fields. Returns the count. */
int tu_read_suite(const char *path, tu_suite_line *lines, int cap);

/* Removes directory tree dir (a test's mkdtemp): 0, or -1 when rm fails. */
int tu_rmtree(const char *dir);

/* C[i, j] = sum over k of A[i, k] * B[k, j] in ctx: A [M, K] and B [K, N]
 * placeholders of type t (*A, *B), float32 sums (16-bit operands cast to
 * float32 first, as the tensor-core intrinsics declare them). */
te_tensor *tu_matmul(te_ctx *ctx, te_dtype t, int64_t M, int64_t N, int64_t K, te_tensor **A,
                     te_tensor **B);

/* Non-overlapping occurrences of `what` in text (a lowered function's
 * printed loops, generated code, ...). */
int tu_count_substr(const char *text, const char *what);

/* The directory of the running test program (where the built tools are),
 * or fails the test. */
const char *tu_bindir(void);
/* Runs the shell command made of fmt, its stderr joined to its stdout,
 * the output (cut to size - 1 bytes) in out; returns its exit status, -1
 * when a signal ended it. */
int tu_run(char *out, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Asserts that `msg` contains every one of the NULL-terminated substrings. */
#define tu_assert_msg_has(msg, ...) tu_assert_msg_has_((msg), __FILE__, __LINE__, __VA_ARGS__, (const char *)NULL)
void tu_assert_msg_has_(const char *msg, const char *file, int line, ...);

#endif
