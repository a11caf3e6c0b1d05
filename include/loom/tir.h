/*
 * loom/tir.h — the loop IR: buffers, statements, functions, the printer and
 * the passes that run between lowering and code generation.
 *
 * Model: TVM `tir` (For/BufferStore/Allocate/IfThenElse/SeqStmt, the
 * passes in `src/tir/transforms`) and Halide's `Lower.cpp` (one flat list of
 * passes, one file and one function per pass).
 *
 * Expressions are te_expr nodes (loom/te.h); loop-level expression kinds
 * are BUFFER_LOAD (multi-dimensional, before storage flatten), LOAD
 * (flattened), RAMP and BROADCAST (after vectorize).
 *
 * Ownership: all nodes live in the te_ctx arena they were built in.
 * Errors: functions that can fail return NULL and record the reason in the
 * ctx (te_ctx_errmsg).
 */
#ifndef LOOM_TIR_H
#define LOOM_TIR_H

#include "loom/api.h"
#include "loom/te.h"

#ifdef __cplusplus
extern "C" {
#endif
LOOM_API_BEGIN

typedef struct tir_stmt tir_stmt;

/* Where a buffer lives. GLOBAL: a function argument or heap memory;
 * LOCAL: per-thread scratch (stack/registers); SHARED: a GPU block's
 * shared memory. */
typedef enum {
    TIR_SCOPE_GLOBAL = 0,
    TIR_SCOPE_LOCAL = 1,
    TIR_SCOPE_SHARED = 2,
    /* A warp's tensor-core fragments (CUDA WMMA): the buffer is an array
     * of opaque per-warp tiles that only TENSOR_CALL statements touch.
     * Its (row, column) element lives in the tile (row / R, column / C)
     * of a row-major grid of tiles, R x C the intrinsic's tile of that
     * operand (16 x 16; 16 x 8 and 8 x 16 for tf32's a and b). */
    TIR_SCOPE_WMMA_A = 3,  /* "wmma.matrix_a": the m x k operand */
    TIR_SCOPE_WMMA_B = 4,  /* "wmma.matrix_b": the k x n operand */
    TIR_SCOPE_WMMA_ACC = 5, /* "wmma.accumulator": the m x n float32 sums */
    /* A warpgroup's float32 sums of Hopper's wgmma (128 threads, each
     * holding n/2 registers of every 64 x n tile; PTX ISA, wgmma's
     * accumulator fragments). Only TENSOR_CALL statements touch it. */
    TIR_SCOPE_WGMMA_ACC = 6 /* "wgmma.accumulator" */
} tir_scope;
/* "global", "local", "shared", "wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator",
 * "wgmma.accumulator" */
const char *tir_scope_name(tir_scope s);
/* Whether s is one of the tensor-core fragment scopes. */
bool tir_scope_is_fragment(tir_scope s);

/* How a shared buffer is swizzled (tir_buffer.swizzle): not at all, as
 * stored [R, C], or stored as its transpose [C, R]. */
typedef enum { TIR_SWIZZLE_NONE = 0, TIR_SWIZZLE_ROWS, TIR_SWIZZLE_COLS } tir_swizzle;

/* A region of memory holding a tensor (or a part of one, for stages
 * computed at an inner loop). Elements are dtype scalars; the element at
 * indices (i0..in-1) lives at offset sum(i_d * strides[d]). */
struct tir_buffer {
    const char *name;
    int id;
    te_dtype dtype;              /* scalar element type */
    int ndim;
    int64_t shape[TE_MAX_DIMS];  /* extents in elements */
    int64_t strides[TE_MAX_DIMS];/* in elements; row-major compact unless
                                    storage_align padded a dimension */
    tir_scope scope;
    bool is_param;               /* a function argument (caller memory) */
    te_expr *data;               /* the HANDLE var naming its base pointer */
    /* Shared memory in the 128-byte swizzled layout of Hopper's wgmma
     * operands (sch_swizzle; CUTLASS's Swizzle<3,4,3>): the last
     * dimension is cut into panels of 128 bytes, panel after panel, each
     * a run of rows of 128 bytes (storage_flatten); and the code
     * generator XORs the 16-byte chunk of every flat index with its row
     * mod 8, so that the 8 rows of a core matrix fall in different banks.
     * The flat indices of the TIR stay unswizzled (a wgmma descriptor
     * names that logical address; the hardware swizzles it).
     * TIR_SWIZZLE_COLS stores a 2-D buffer [R, C] as the swizzled layout
     * of its transpose [C, R] (its columns are the 128-byte rows): a
     * k-major copy of an operand whose source is mn-major. */
    tir_swizzle swizzle;
};

/* A buffer with compact row-major strides. shape: ndim extents > 0. */
tir_buffer *tir_buffer_new(te_ctx *ctx, const char *name, te_dtype t, int ndim,
                           const int64_t *shape, tir_scope scope);
/* Total elements covered by the strides (what an allocation needs). */
int64_t tir_buffer_size(const tir_buffer *b);

#define TIR_STMT_KINDS(X)                                                  \
    X(FOR)          /* loop                                              */ \
    X(BUFFER_STORE) /* bstore: buffer[indices] = value (before flatten)  */ \
    X(STORE)        /* store: buffer[index] = value (flattened)          */ \
    X(ALLOCATE)     /* alloc: scratch for a buffer, live in body         */ \
    X(IF)           /* if_                                               */ \
    X(SEQ)          /* seq: statements in order                          */ \
    X(EVALUATE)     /* eval: an expression for its effect (a call)       */ \
    X(BARRIER)      /* GPU: __syncthreads() over the block               */ \
    X(ALLREDUCE)    /* GPU: allreduce: a reduction across threadIdx.x    */ \
    X(NOOP)                                                                \
    X(LET)          /* let: var bound to value in body                   */ \
    X(ATTR)         /* attr: an annotation (key, value) on body          */ \
    X(TENSOR_CALL)  /* tcall: a tensor intrinsic on tiles (tensorize)    */

typedef enum {
#define TIR_X_ENUM(n) TIR_##n,
    TIR_STMT_KINDS(TIR_X_ENUM)
#undef TIR_X_ENUM
    TIR_STMT_KIND_COUNT
} tir_stmt_kind;

typedef enum {
    TIR_FOR_SERIAL = 0,
    TIR_FOR_PARALLEL = 1,   /* iterations run on the thread pool */
    TIR_FOR_VECTORIZED = 2, /* becomes RAMP/BROADCAST vector code */
    TIR_FOR_UNROLLED = 3,   /* fully unrolled by the unroll pass */
    TIR_FOR_THREAD = 4      /* bound to a GPU thread axis (thread_tag) */
} tir_for_kind;
const char *tir_for_kind_name(tir_for_kind k); /* "serial", "parallel", ... */

/* Tensor intrinsics of TENSOR_CALL: NVIDIA's warp-level matrix
 * operations (CUDA WMMA, nvcuda::wmma), one warp executing each call.
 * Operands (args[0] written): FILL acc := 0; LOAD_A a := memory tile;
 * LOAD_B b := memory tile; MMA acc := acc + a * b (float16 or bfloat16
 * operands in 16x16x16 tiles, or float32 ones computed as tf32 in
 * 16x16x8); STORE memory tile := acc. */
typedef enum {
    TIR_WMMA_FILL = 0,
    TIR_WMMA_LOAD_A,
    TIR_WMMA_LOAD_B,
    TIR_WMMA_MMA,
    TIR_WMMA_STORE,
    /* Hopper's warpgroup MMA (PTX wgmma.mma_async, sm_90a), the 128
     * threads of a warpgroup executing each call: FILL acc := 0; MMA acc
     * (64 x n, wgmma.accumulator) := acc + a (64 x k) * b (k x n), a and
     * b read by the tensor cores straight from swizzled shared memory
     * (float16 or bfloat16, k 16); STORE memory tile (64 x n) := acc, or
     * acc rounded to float16 or bfloat16. */
    TIR_WGMMA_FILL,
    TIR_WGMMA_MMA,
    TIR_WGMMA_STORE,
    /* x86 AVX512-BF16's VDPBF16PS (the llvm target), one thread: acc (16
     * contiguous float32) := acc + the sums of pairs of products of a (2
     * contiguous bfloat16, the same pair for every lane) and b (16 pairs
     * of bfloat16, pair j at 2j: the "VNNI" layout), lane j adding
     * a[0] * b[2j] + a[1] * b[2j + 1]. */
    TIR_X86_DPBF16,
    TIR_TENSOR_INTRIN_COUNT
} tir_tensor_intrin;
#define TIR_TCALL_MAX_ARGS 4
/* "wmma.fill", "wmma.load_a", "wmma.load_b", "wmma.mma", "wmma.store",
 * "wgmma.fill", "wgmma.mma", "wgmma.store", "x86.dpbf16" */
const char *tir_tensor_intrin_name(tir_tensor_intrin k);
/* Operands of intrinsic k (args[0] included). */
int tir_tensor_intrin_nargs(tir_tensor_intrin k);
/* The k extent of the WMMA tile for operands of element type t: 8 for
 * float32 (tf32, 16x16x8), 16 for float16 and bfloat16 (16x16x16). */
int tir_wmma_k(te_dtype t);

struct tir_stmt {
    tir_stmt_kind kind;
    union {
        struct {
            te_expr *var;        /* int64 VAR */
            te_expr *min;        /* int64 */
            te_expr *extent;     /* int64 */
            tir_for_kind for_kind;
            const char *thread_tag; /* "blockIdx.x", "threadIdx.y", "vthread"; else NULL */
            /* pragma auto_unroll_max_step: loops inside this one whose
             * total iteration count is <= this are unrolled (0: none). */
            int64_t auto_unroll_max_step;
            bool unroll_explicit; /* pragma unroll_explicit: the unroll pass
                                     copies bodies (else codegen hints) */
            tir_stmt *body;
        } loop;
        struct { tir_buffer *buffer; int ndim; te_expr **indices; te_expr *value; } bstore;
        struct {
            tir_buffer *buffer;
            te_expr *index;     /* RAMP for a vector store */
            te_expr *value;
            te_expr *predicate; /* NULL, or bool vector: lanes stored */
        } store;
        struct { tir_buffer *buffer; tir_stmt *body; } alloc; /* size: tir_buffer_size */
        struct { te_expr *cond; tir_stmt *then_s; tir_stmt *else_s; /* may be NULL */ } if_;
        struct { int n; tir_stmt **stmts; } seq;
        struct { te_expr *value; } eval;
        /* Cross-thread reduction (TVM tvm_thread_allreduce): every thread
         * of the block evaluates `value` (its partial), the partials of the
         * `extent` threads along threadIdx.x that share threadIdx.y/z are
         * combined with `op`, and `body` runs with `result` (a plain VAR
         * of value's type) bound to the total. Only the thread with
         * threadIdx.x == 0 is guaranteed to see the total; the body must
         * guard what it does with it by that. Every thread of the block
         * must reach the statement (it holds barriers). Expanded by the
         * CUDA emitter into warp shuffles and shared memory; the llvm and c
         * targets reject it. */
        struct {
            te_reduce_op op;
            te_expr *value;
            te_expr *result;
            int64_t extent;
            tir_stmt *body;
        } allreduce;
        /* `var` (a VAR of value's type, bound nowhere else) holds value,
         * evaluated once, while body runs. */
        struct { te_expr *var; te_expr *value; tir_stmt *body; } let;
        /* A note on body for the passes that look for it (as TVM's
         * AttrStmt: a pragma, a storage scope); code generation emits
         * body alone. key: a string in the arena; value may be NULL. */
        struct { const char *key; te_expr *value; tir_stmt *body; } attr;
        /* A tensor intrinsic (schedule/tensorize.c made it from a loop
         * nest). args[i] is a load of the first element of operand i's
         * tile (BUFFER_LOAD before flatten, LOAD after); the operand the
         * intrinsic writes is args[0]. ld[i]: the tile's row stride in
         * elements, col_major[i]: the tile's rows are contiguous instead
         * of its columns (memory operands; 0/false for fragments). */
        struct {
            tir_tensor_intrin intrin;
            int nargs;
            te_expr *args[TIR_TCALL_MAX_ARGS];
            int64_t ld[TIR_TCALL_MAX_ARGS];
            bool col_major[TIR_TCALL_MAX_ARGS];
        } tcall;
    } u;
};

/* ---- builders (arena-allocated) ----
 * Each checks what is cheap to check of its operands (kinds, dtypes,
 * lanes, index counts) and returns NULL with "<builder>: <rule>" in the
 * ctx when one is wrong; the IR verifier (tir_verify) checks the rest. */
tir_stmt *tir_for(te_ctx *ctx, te_expr *var, te_expr *min, te_expr *extent,
                  tir_for_kind kind, tir_stmt *body);
/* A copy of loop s with a new body (keeps kind, tag and pragmas). */
tir_stmt *tir_for_with_body(te_ctx *ctx, const tir_stmt *s, tir_stmt *body);
tir_stmt *tir_buffer_store(te_ctx *ctx, tir_buffer *b, int ndim, te_expr *const *indices,
                           te_expr *value);
tir_stmt *tir_store(te_ctx *ctx, tir_buffer *b, te_expr *index, te_expr *value,
                    te_expr *predicate);
tir_stmt *tir_allocate(te_ctx *ctx, tir_buffer *b, tir_stmt *body);
tir_stmt *tir_if(te_ctx *ctx, te_expr *cond, tir_stmt *then_s, tir_stmt *else_s);
/* A sequence; nested SEQs are flattened and NOOPs dropped; one statement
 * returns itself, none returns a NOOP. */
tir_stmt *tir_seq(te_ctx *ctx, int n, tir_stmt *const *stmts);
tir_stmt *tir_evaluate(te_ctx *ctx, te_expr *value);
tir_stmt *tir_barrier(te_ctx *ctx);
/* An ALLREDUCE (see the union above): value of a scalar int32, int64,
 * float32 or float64 type, result a VAR of the same type, extent >= 1. */
tir_stmt *tir_allreduce(te_ctx *ctx, te_reduce_op op, te_expr *value, te_expr *result,
                        int64_t extent, tir_stmt *body);
tir_stmt *tir_noop(te_ctx *ctx);
/* LET: var must be a VAR of value's dtype. */
tir_stmt *tir_let(te_ctx *ctx, te_expr *var, te_expr *value, tir_stmt *body);
/* ATTR keys the passes and code generators know:
 *  double_buffer        (lowering) body: the copy nest of a double-buffered stage;
 *  cuda.async_copy      body: copies into shared memory the GPU may do
 *                       asynchronously (cp.async), completed at a later
 *                       cuda.async_wait (plain copies where it cannot);
 *  cuda.async_commit    body NOOP: closes the group of async copies issued
 *                       since the last commit;
 *  cuda.async_wait      value: n (int); body NOOP: waits until at most n
 *                       committed groups are in flight;
 *  cuda.wgmma_batch     body: a pipeline step's wgmma calls, committed as one
 *                       group after it (not one group a call);
 *  cuda.wgmma_inflight  value: n (int); body: a pipelined loop whose barriers
 *                       wait for all but the newest n wgmma groups (the
 *                       operands a barrier protects are n steps old). */
#define TIR_ATTR_DOUBLE_BUFFER "double_buffer"
#define TIR_ATTR_WGMMA_BATCH "cuda.wgmma_batch"
#define TIR_ATTR_WGMMA_INFLIGHT "cuda.wgmma_inflight"
#define TIR_ATTR_ASYNC_COPY "cuda.async_copy"
#define TIR_ATTR_ASYNC_COMMIT "cuda.async_commit"
#define TIR_ATTR_ASYNC_WAIT "cuda.async_wait"
/* ATTR: key is copied into the arena; value may be NULL. */
tir_stmt *tir_attr(te_ctx *ctx, const char *key, te_expr *value, tir_stmt *body);
/* TENSOR_CALL: tir_tensor_intrin_nargs(k) operands, each a BUFFER_LOAD
 * or LOAD (see the union above); ld and col_major as there (arrays of
 * nargs, or NULL for zeros). */
tir_stmt *tir_tensor_call(te_ctx *ctx, tir_tensor_intrin k, int nargs, te_expr *const *args,
                          const int64_t *ld, const bool *col_major);
te_expr *tir_buffer_load(tir_buffer *b, int ndim, te_expr *const *indices);
te_expr *tir_load(te_ctx *ctx, tir_buffer *b, te_expr *index, te_expr *predicate);
te_expr *tir_ramp(te_expr *base, te_expr *stride, int lanes);
te_expr *tir_broadcast(te_expr *value, int lanes);

/* ---- mutator and visitor (tir/traverse.c) ----
 * The one statement walk (model: Halide IRMutator / IRVisitor). A pass
 * is a table of the cases it cares about; every other statement kind is
 * walked by the default, which knows each kind's children, so a new kind
 * is reached by every pass as soon as traverse.c lists its children.
 *
 * Children, in walk order (expressions are the ones "held directly"):
 *   FOR          min, extent; body (loop variable in scope)
 *   BUFFER_STORE indices, value        STORE  index, value, predicate
 *   ALLOCATE     body                  IF     cond; then_s, else_s
 *   SEQ          stmts                 EVALUATE value
 *   ALLREDUCE    value; body           BARRIER, NOOP: none
 *   LET          value; body (var in scope)
 *   ATTR         value; body
 *   TENSOR_CALL  args
 *
 * Scope: when `an` is set, the default walk of a FOR binds the loop
 * variable in that analyser (tir_bind_loop) while the body is walked,
 * and that of a LET binds its variable to the constant bounds of its
 * value (when both are known), so a pass that asks the analyser sees the
 * ranges of the variables around it. A per-kind function that replaces
 * the default for FOR or LET binds itself (or calls the default, which
 * does).
 *
 * Ownership: nodes live in the ctx arena and are shared; a mutator never
 * edits a node in place, and returns the very node it was given when
 * nothing under it changed. */

/* Binds loop variable `var` in `an` to every value its loop can take,
 * [lo(min), hi(min) + hi(extent)), with min and extent bounded by the
 * analyser. Returns false, binding nothing, when the extent can be < 1
 * or a bound is unknown or beyond +-TIR_BIND_LIMIT: ranges that large are
 * treated as unbounded, so that sums and products of a few bounds in the
 * analyser and in the passes' solvers never overflow int64. Undo with
 * te_analyzer_unbind(an, var). */
#define TIR_BIND_LIMIT ((int64_t)1 << 40)
bool tir_bind_loop(te_analyzer *an, const te_expr *var, const te_expr *min, const te_expr *extent);

typedef struct tir_mutator tir_mutator;
typedef tir_stmt *(*tir_mutate_fn)(tir_mutator *m, tir_stmt *s);
struct tir_mutator {
    te_ctx *ctx;
    void *user;
    /* kind[k]: replaces the default for statements of kind k. It may call
     * tir_mutate_children(m, s) for the default, or tir_mutate(m, child)
     * on the children it chooses. NULL: the default. */
    tir_mutate_fn kind[TIR_STMT_KIND_COUNT];
    /* Pre-order hook, before the kind function. Returns the node to go on
     * with (s itself, or a replacement), NULL on failure; setting *final
     * makes the returned node the result as it is (no kind function, no
     * post hook, its children not walked). */
    tir_stmt *(*pre)(tir_mutator *m, tir_stmt *s, bool *final);
    /* Post-order hook: applied to what the kind function returned (its
     * children already mutated). Not applied a second time to a SEQ
     * that collapsed into one of its own, already mutated, statements. */
    tir_mutate_fn post;
    /* Applied by the default to each expression a statement holds
     * directly (deep rewrites use tir__expr_rewrite inside). NULL: kept. */
    te_expr *(*expr)(tir_mutator *m, te_expr *e);
    te_analyzer *an; /* see Scope above; NULL: no binding */
    bool failed;     /* set when a function returned NULL; the walk stops */
};
/* Mutates s (NULL gives NULL without failing). Returns NULL, with
 * m->failed set, when a function returned NULL (the ctx says why). */
tir_stmt *tir_mutate(tir_mutator *m, tir_stmt *s);
/* The default for s: its expressions through m->expr, its child
 * statements through tir_mutate, a new node only when one changed. */
tir_stmt *tir_mutate_children(tir_mutator *m, tir_stmt *s);
/* m->expr(m, e) when both are non-NULL, else e (NULL with m->failed set
 * when m->expr returned NULL). */
te_expr *tir_mutate_expr(tir_mutator *m, te_expr *e);

/* A visitor function returns 0 to go on; any other value ends the walk
 * and is what tir_visit returns (a pre hook's TIR_VISIT_SKIP instead
 * skips the statement's kind function, children and post hook). */
#define TIR_VISIT_SKIP INT32_MAX
typedef struct tir_visitor tir_visitor;
typedef int (*tir_visit_fn)(tir_visitor *v, const tir_stmt *s);
struct tir_visitor {
    void *user;
    tir_visit_fn kind[TIR_STMT_KIND_COUNT]; /* replaces the default, as in tir_mutator */
    tir_visit_fn pre;                        /* before the kind function */
    tir_visit_fn post;                       /* after it */
    int (*expr)(tir_visitor *v, const te_expr *e); /* each directly held expression */
    te_analyzer *an;                         /* see Scope above */
};
int tir_visit(tir_visitor *v, const tir_stmt *s);
/* The default for s: its expressions, then its child statements. */
int tir_visit_children(tir_visitor *v, const tir_stmt *s);

/* Conveniences on the mutator and visitor.
 * tir_stmt_map rebuilds s bottom-up: each child statement is first mapped
 * recursively, then stmt_fn (if non-NULL) is applied to the rebuilt node
 * (the mutator's post hook); every expression directly held by a
 * statement is replaced by expr_fn(e, user) when expr_fn is non-NULL.
 * Unchanged nodes are shared. Returns NULL if a callback does. */
typedef tir_stmt *(*tir_stmt_map_fn)(tir_stmt *s, void *user);
tir_stmt *tir_stmt_map(te_ctx *ctx, tir_stmt *s, tir_stmt_map_fn stmt_fn,
                       te_expr_map_fn expr_fn, void *user);
/* Pre-order visit of every statement (and, when expr_fn is non-NULL, of
 * each expression directly held by a statement). */
typedef void (*tir_stmt_visit_fn)(const tir_stmt *s, void *user);
void tir_stmt_visit(const tir_stmt *s, tir_stmt_visit_fn stmt_fn, te_expr_visit_fn expr_fn,
                    void *user);
/* Replaces variables in every expression of s. */
tir_stmt *tir_stmt_substitute(te_ctx *ctx, tir_stmt *s, int n, te_expr *const *vars,
                              te_expr *const *values);

/* ---- free variables (tir/free_vars.c) ----
 * What s needs from its surroundings, for outlining a parallel loop body
 * or a kernel into a function of its own: every VAR its expressions read
 * and every buffer it loads or stores, in first-use order, less what s
 * defines itself (variables of loops inside it, buffers allocated inside
 * it and their data VARs) and less the nbound keys in `bound` (e.g. the
 * outlined loop's own variable). */
typedef struct {
    int n;
    const void **keys; /* each a te_expr VAR or a tir_buffer; malloc-owned */
    bool *is_buffer;   /* is_buffer[i]: keys[i] is a tir_buffer */
} tir_free_vars;
/* Fills *out (release it with tir_free_vars_release). Returns 0, or -1
 * when memory is exhausted (then *out is empty). */
int tir_stmt_free_vars(const tir_stmt *s, int nbound, const void *const *bound,
                       tir_free_vars *out);
void tir_free_vars_release(tir_free_vars *fv);

/* ---- functions ---- */

/* A lowered function: its parameters are the caller's buffers, in the
 * order the caller passes them. */
typedef struct {
    const char *name;
    int nparams;
    tir_buffer **params;
    tir_stmt *body;
} tir_func;

tir_func *tir_func_new(te_ctx *ctx, const char *name, int nparams, tir_buffer *const *params,
                       tir_stmt *body);
/* A copy of f with another body. */
tir_func *tir_func_with_body(te_ctx *ctx, const tir_func *f, tir_stmt *body);

/* ---- printer ----
 * Text in the spirit of TVM's lower(..., simple_mode=True):
 *   for (i.outer, 0, 32) parallel {
 *     C[((i.outer*32) + i.inner)*1024 + j] = ...
 *   }
 * Deterministic: goldens compare it verbatim. `indent` counts levels of
 * two spaces. */
void tir_stmt_print(te_str *out, const tir_stmt *s, int indent);
void tir_func_print(te_str *out, const tir_func *f);
const char *tir_func_str(te_ctx *ctx, const tir_func *f);

/* ---- passes (each in tir/pass_<name>.c) ----
 * Each takes a function and returns the transformed function, or NULL with
 * an error in the ctx. */

/* Multi-dimensional BUFFER_LOAD/BUFFER_STORE to flat LOAD/STORE using each
 * buffer's strides (TVM StorageFlatten). */
tir_func *tir_pass_storage_flatten(te_ctx *ctx, const tir_func *f);
/* float16/bfloat16 arithmetic, comparisons, min/max, select and
 * intrinsic calls rebuilt in float32 with casts around them, and every
 * conversion of a 16-bit float to or from a type other than float32 made
 * to go through float32: afterwards 16-bit floats are only loaded, stored,
 * broadcast and converted to or from float32 (TVM's FP16/BF16
 * legalization). Functions without 16-bit floats come back unchanged. */
tir_func *tir_pass_legalize_half(te_ctx *ctx, const tir_func *f);
/* True when f has a float16/bfloat16 parameter, buffer or value: the
 * lowering list runs legalize_half (and dumps it) only then, so float32
 * programs keep their step list. */
bool tir_func_uses_half(const tir_func *f);
/* Canonical simplification of every expression with loop ranges bound;
 * IFs with decided conditions and loops of extent 0/1 removed (TVM
 * Simplify). */
tir_func *tir_pass_simplify(te_ctx *ctx, const tir_func *f);
/* Splits loops whose bodies hold a LIKELY guard into a main range where
 * the guard is provably true (guard removed) and tails (TVM LoopPartition,
 * Halide PartitionLoops). */
tir_func *tir_pass_loop_partition(te_ctx *ctx, const tir_func *f);
/* VECTORIZED loops of constant extent become RAMP/BROADCAST vector code;
 * a loop that cannot be vectorized becomes SERIAL, and the reason is
 * appended to `why` when why is non-NULL (TVM VectorizeLoop). */
tir_func *tir_pass_vectorize(te_ctx *ctx, const tir_func *f, te_str *why);
/* Unrolls UNROLLED loops and, under auto_unroll_max_step pragmas, inner
 * loops with constant total extent within the limit (TVM UnrollLoop).
 * Copies are capped: a loop whose copies would exceed 4,096 statements
 * stays an UNROLLED hint, and when the copies would make the function
 * larger than 4,096 statements, every pragma's limit is halved until they
 * fit (or nothing is left to halve); the loops that then fall outside the
 * limit stay loops, as under a smaller auto_unroll_max_step. */
tir_func *tir_pass_unroll(te_ctx *ctx, const tir_func *f);
/* As tir_pass_unroll, but a pragma's unroll_explicit is ignored: the loops
 * it would copy are marked UNROLLED and kept (loops the schedule unrolled
 * with sch_unroll are still copied). The cost model's view of a program:
 * TVM extracts features before UnrollLoop, and copying a 512-step tile
 * for each of thousands of scored candidates costs seconds and
 * gigabytes. */
tir_func *tir_pass_unroll_hinted(te_ctx *ctx, const tir_func *f);
/* Shrinks and reuses LOCAL allocations whose lifetimes do not overlap
 * (TVM StorageRewrite). */
tir_func *tir_pass_storage_rewrite(te_ctx *ctx, const tir_func *f);
/* Removes statements with no effect: empty loops, IFs with empty
 * branches, stores of a location to itself (TVM RemoveNoOp). */
tir_func *tir_pass_remove_noop(te_ctx *ctx, const tir_func *f);

/* ---- GPU passes ---- */

/* Removes loops bound to "vthread": buffers allocated inside that depend on
 * the vthread index get one copy per vthread, the loop is pushed down to
 * the statements that use the index and those are replicated (TVM
 * InjectVirtualThread). After storage_flatten, before unroll. */
tir_func *tir_pass_inject_vthread(te_ctx *ctx, const tir_func *f);
/* Inserts BARRIERs (__syncthreads) between a write of a shared buffer and
 * later reads of it, and between reads and a later overwrite (also across
 * the back edge of serial loops) (TVM ThreadSync("shared")). */
tir_func *tir_pass_thread_sync(te_ctx *ctx, const tir_func *f);
/* Double buffering of the copies lowering marked TIR_ATTR_DOUBLE_BUFFER
 * (sch_double_buffer): each copied buffer doubled, the copy of a loop's
 * next iteration issued (as cuda.async_copy, then async_commit and
 * async_wait 1) before the current one's computation (TVM
 * InjectDoubleBuffer); see tir/pass_double_buffer.c. Before thread_sync.
 * NULL with "double_buffer: ..." when a marked copy is not at the start
 * of a serial loop's body. */
tir_func *tir_pass_double_buffer(te_ctx *ctx, const tir_func *f);

/* Limits a GPU function is checked against; 0 fields take the defaults
 * (1024 threads per block, 48 KiB = 49152 bytes of shared memory). */
typedef struct {
    int64_t max_threads_per_block;
    int64_t max_shared_bytes;
} tir_gpu_limits;
/* Checks a GPU function after the passes: 0, or -1 with a message naming
 * the kernel, stage and loop when threads per block or shared memory
 * exceed the limits, a kernel loop is neither bound nor serial, a thread
 * axis is bound twice in a kernel with different extents, or a stage
 * stores to global memory outside any bound loop (TVM VerifyGPUCode). */
int tir_verify_gpu(te_ctx *ctx, const tir_func *f, const tir_gpu_limits *limits);

/* The IR verifier (tir/verify.c), run by the lowering list after each
 * pass in Debug builds. Checks that
 *  - every expression's dtype and lanes agree with its operands' (both
 *    sides of arithmetic and comparisons, bool conditions, a load's or
 *    store's value in its buffer's element type and its index's lanes,
 *    RAMP/BROADCAST lanes), and no tensor-level READ/REDUCE is left;
 *  - every access is to a parameter or a buffer allocated around it,
 *    with as many indices as the buffer has dimensions, and inside it:
 *    an index affine in the loops around, all of constant bounds, must
 *    have every value inside; any other index (the analyser's bounds
 *    being loose there) is rejected when every value is outside; an
 *    access under a guard (IF, select, likely, predicate) is not
 *    range-checked;
 *  - a loop, LET or ALLREDUCE does not define a variable again inside
 *    its own scope, and no variable is used outside its scope;
 *    (not with opts->skip_ranges);
 *  - with opts->gpu, no store lies outside a thread-bound loop.
 * Returns 0, or -1 with "<rule broken>: <detail>, in statement `<the
 * statement's first printed line>`" in the ctx. opts may be NULL. */
typedef struct {
    bool gpu;         /* also: no store outside a thread-bound loop */
    bool skip_ranges; /* no range checks (declared buffers still checked) */
} tir_verify_options;
int tir_verify(te_ctx *ctx, const tir_func *f, const tir_verify_options *opts);

/* VECTORIZED loops become SERIAL (the list's skip_vectorize). */
tir_func *tir_pass_devectorize(te_ctx *ctx, const tir_func *f);

/* One kernel of a split GPU function. */
typedef struct {
    tir_func *func;     /* name "<host>_kernel<i>"; params: the global buffers
                           it touches; body: the thread-bound loop nest */
    int64_t grid[3];    /* blockIdx.x/y/z extents (1 when unbound) */
    int64_t block[3];   /* threadIdx.x/y/z extents (1 when unbound) */
    int *arg_slots;     /* per kernel param: i >= 0 host param i, else
                           workspace -i-1 */
} tir_kernel;
typedef struct {
    const tir_func *host;    /* the function split */
    int nworkspace;          /* global buffers the host allocates */
    tir_buffer **workspace;
    int nkernels;            /* launched in this order */
    tir_kernel *kernels;
} tir_device_program;
/* Outlines each outermost thread-bound loop nest of a verified GPU
 * function as a kernel (TVM SplitHostDevice). Arena-owned; NULL with an
 * error when host code holds anything but kernels and allocations. */
tir_device_program *tir_split_host_device(te_ctx *ctx, const tir_func *f);

/* Options of the lowering pipeline. */
typedef struct {
    bool skip_vectorize; /* leave VECTORIZED loops scalar (debugging) */
    te_str *vectorize_why; /* collects reasons loops stayed scalar */
    bool gpu;            /* the GPU pipeline (target cuda), see below */
    tir_gpu_limits gpu_limits; /* checked when gpu is set */
    bool unroll_hints_only; /* tir_pass_unroll_hinted instead of tir_pass_unroll */
    /* No loop partitioning: tails stay guarded inside their loops. The
     * cost model's CPU view (TVM extracts features before LoopPartition):
     * partitioned tails copy a tile's statements, and the model, which
     * sums per-statement predictions (pack-sum), then ranks programs by
     * their statement count (bench/RESULTS.md, session 16). */
    bool skip_loop_partition;
} tir_pipeline_options;

/* The pass steps of the lowering list (sch_lower_program in
 * loom/schedule.h; its body, in schedule/lower_list.c, is the one place
 * their order is written) on a function already lowered:
 * storage_flatten, legalize_half (only for a function that uses 16-bit
 * floats: tir_func_uses_half), simplify, loop_partition, simplify, remove_noop (the
 * three skipped with opts->skip_loop_partition), vectorize, unroll
 * (tir_pass_unroll_hinted with opts->unroll_hints_only), storage_rewrite,
 * simplify, remove_noop, double_buffer. With opts->gpu: inject_vthread
 * after vectorize, thread_sync after remove_noop, then tir_verify_gpu.
 * opts may be NULL. The IR verifier runs as in sch_lower_program.
 * With the environment variable LOOM_DUMP_IR=DIR (read at each call),
 * writes f as DIR/<name>-00-input.txt and the program after each pass as
 * DIR/<name>-NN-<pass>.txt (tir_func_print text; <name> is f->name with
 * characters other than [A-Za-z0-9_.-] as '_'; numbering restarts for
 * each function, a later build of the same name overwrites), and appends
 * "<name>-NN-<pass>\t<ms>" lines (the pass's wall time) to DIR/times.txt.
 * DIR is created if missing (not its parents). A file that cannot be
 * written stops the dump for the call and prints, once per process,
 * "loom: LOOM_DUMP_IR: cannot write 'PATH': <reason>; IR dumps are off"
 * on stderr; the pipeline's result is the same either way. */
tir_func *tir_run_pipeline(te_ctx *ctx, const tir_func *f, const tir_pipeline_options *opts);

LOOM_API_END
#ifdef __cplusplus
}
#endif
#endif /* LOOM_TIR_H */
