/*
 * tests/codegen_cases.h — the code generation cases every CPU backend must
 * pass (test_codegen_c.c and test_codegen_llvm.c run them all): hand-built,
 * already lowered loop programs (the form tir_run_pipeline hands to code
 * generation), each built by the backend, run through rt_call on fresh
 * random data with NaN-poisoned outputs and compared with a double-
 * precision reference. What a backend's text must hold (C source, LLVM
 * IR) is its own: it checks that in its `expect` hook.
 */
#ifndef LOOM_TEST_CODEGEN_CASES_H
#define LOOM_TEST_CODEGEN_CASES_H

#include "testutil.h"

typedef enum {
    CGC_VECTOR_ADD,      /* C = A + B; the module checks its signature */
    CGC_MATMUL,          /* scalar loops, init + update stores */
    CGC_PARALLEL,        /* parallel loop outlined, a nested one not */
    CGC_ALLOCATE,        /* a heap scratch and a per-thread local one */
    CGC_FLOOR_DIV_MOD,   /* negative operands, variable divisors, vectors */
    CGC_VECTOR,          /* predicated, strided, gathered, dense lanes */
    CGC_VECTOR_CLAMPED,  /* a clamped ramp (a padding stage's read) */
    CGC_VECTOR_IN_PLACE, /* every lane read before any is written */
    CGC_MATH,            /* every intrinsic, scalar and vector; NaN in min/max */
    CGC_TYPES_AND_GUARDS,
    CGC_LOCAL_BLEND,     /* predicated store to a local buffer keeps lanes */
    CGC_BROADCAST_MASKED, /* one element for every lane, under a mask */
    CGC_NCASES
} cgc_id;

/* Most builds a backend makes of one program. */
#define CGC_MAX_VARIANTS 4

typedef struct {
    const char *kind; /* rt_module_kind of its modules: "c", "llvm" */
    const char *text; /* the module text LOOM_TEST_DUMP prints: "source", "ir" */
    int nvariants;    /* builds of each program, 1..CGC_MAX_VARIANTS (opt levels, ...) */
    /* Builds the functions as variant v; NULL with the error in ctx. */
    rt_module *(*build)(te_ctx *ctx, int nfuncs, const tir_func *const *fs, int v);
    /* The backend's own checks of variant v of case id (its text); NULL: none. */
    void (*expect)(cgc_id id, int v, rt_module *m);
} cgc_backend;

/* Fills tests[0 .. CGC_NCASES) with one cmocka test per case, run against
 * b (which must outlive the run); returns CGC_NCASES. */
int cgc_add_tests(const cgc_backend *b, struct CMUnitTest *tests);

/* Runs a test array built at run time (shared cases plus the backend's
 * own) and returns cmocka's failure count. */
#define cgc_run_tests(tests, n) _cmocka_run_group_tests(__FILE__, (tests), (size_t)(n), NULL, NULL)

/* Helpers the backend files share. */
/* A 1-D float32 parameter buffer of n elements. */
tir_buffer *cgc_param1(te_ctx *ctx, const char *name, int64_t n);
/* b[i], unpredicated. */
te_expr *cgc_ld(te_ctx *ctx, tir_buffer *b, te_expr *i);
/* rt_call(m, "default", ...) must succeed (the module's error printed). */
void cgc_call_ok(rt_module *m, int nargs, DLTensor *const *args);
float *cgc_f32(DLTensor *t);
/* "default"(C[4]): for i.outer in [0, 4) of kind: C[i.outer] = 1. */
tir_func *cgc_tiny_func(te_ctx *ctx, tir_for_kind kind);

#endif
