/*
 * loom/te.h — tensor expressions: the arena context, data types, expression
 * nodes, tensors (placeholders and compute ops), reductions, traversal, the
 * expression printer and the arithmetic analyser.
 *
 * Model: TVM's `te` and `tir` PrimExpr (one expression language shared by
 * the tensor level and the loop level), Halide's IR.h (plain node structs,
 * one list of kinds, one generic traversal).
 *
 * Ownership: every node, string and array made through a te_ctx lives in the
 * ctx's arena until te_ctx_free. Nodes are immutable once built; passes build
 * new nodes and share unchanged subtrees.
 *
 * Errors: builders never abort. On bad input they return NULL and record a
 * message readable with te_ctx_errmsg(ctx). Every builder returns NULL when
 * given a NULL operand, so a chain of calls can be checked once at the end.
 */
#ifndef LOOM_TE_H
#define LOOM_TE_H

#include "loom/api.h"
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
LOOM_API_BEGIN

/* Largest tensor rank Loom supports. */
#define TE_MAX_DIMS 8

typedef struct te_ctx te_ctx;
typedef struct te_expr te_expr;
typedef struct te_tensor te_tensor;
typedef struct tir_buffer tir_buffer; /* defined in loom/tir.h */

/* ------------------------------------------------------------------ */
/* Context                                                             */
/* ------------------------------------------------------------------ */

/* A new, empty context. Returns NULL only when memory is exhausted.
 * One ctx is used by one thread at a time. */
te_ctx *te_ctx_new(void);
/* Frees the ctx and everything allocated in it. NULL is a no-op. */
void te_ctx_free(te_ctx *ctx);
/* The last error recorded in ctx ("" when none). Owned by ctx; valid until
 * the next error or te_ctx_free. */
const char *te_ctx_errmsg(const te_ctx *ctx);
/* Records an error (printf format) and returns -1, for `return te_error(...)`. */
int te_error(te_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
int te_verror(te_ctx *ctx, const char *fmt, va_list ap);
/* Forgets the last error. */
void te_ctx_clear_error(te_ctx *ctx);
/* Zeroed arena memory of `size` bytes, 16-byte aligned; NULL on exhaustion
 * (with an error recorded). Lives until te_ctx_free. */
void *te_alloc(te_ctx *ctx, size_t size);
/* A copy of `s` in the arena. */
char *te_strdup(te_ctx *ctx, const char *s);
/* printf into the arena. */
char *te_sprintf(te_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A fresh id, unique within ctx (variables, tensors, buffers use these). */
int te_ctx_next_id(te_ctx *ctx);
/* Bytes of arena memory in use (for the tuner's memory accounting). */
size_t te_ctx_arena_bytes(const te_ctx *ctx);

/* ------------------------------------------------------------------ */
/* Data types                                                          */
/* ------------------------------------------------------------------ */

typedef enum {
    TE_INT = 0,
    TE_UINT = 1,
    TE_FLOAT = 2,
    TE_BOOL = 3,
    TE_HANDLE = 4, /* an opaque pointer: a buffer's data */
    /* bfloat16: float32's sign and 8 exponent bits, 7 mantissa bits. Not
     * DLPack's number (kDLBfloat is 4, taken here by TE_HANDLE): code that
     * crosses to DLDataType converts explicitly (cg_dtype_to_dl). */
    TE_BFLOAT = 5
} te_type_code;

/* A scalar or vector type: `lanes` > 1 is a vector of `lanes` scalars. */
typedef struct {
    uint8_t code;  /* te_type_code */
    uint8_t bits;  /* 1 for bool, 8..64 otherwise */
    uint16_t lanes;
} te_dtype;

#define TE_DTYPE(c, b, l) ((te_dtype){(uint8_t)(c), (uint8_t)(b), (uint16_t)(l)})
#define TE_INT32 TE_DTYPE(TE_INT, 32, 1)
#define TE_INT64 TE_DTYPE(TE_INT, 64, 1)
#define TE_FLOAT32 TE_DTYPE(TE_FLOAT, 32, 1)
#define TE_FLOAT64 TE_DTYPE(TE_FLOAT, 64, 1)
#define TE_BOOL1 TE_DTYPE(TE_BOOL, 1, 1)
#define TE_FLOAT16 TE_DTYPE(TE_FLOAT, 16, 1)
#define TE_BFLOAT16 TE_DTYPE(TE_BFLOAT, 16, 1)
#define TE_HANDLE64 TE_DTYPE(TE_HANDLE, 64, 1)

bool te_dtype_eq(te_dtype a, te_dtype b);
/* The same type with `lanes` lanes. */
te_dtype te_dtype_with_lanes(te_dtype t, int lanes);
/* Scalar element type of a vector type. */
te_dtype te_dtype_element(te_dtype t);
/* True for float16/32/64 and bfloat16. */
bool te_dtype_is_float(te_dtype t);
/* True for the 16-bit float kinds (float16, bfloat16), which are only
 * loaded, stored and converted once tir_pass_legalize_half has run. */
bool te_dtype_is_half(te_dtype t);
bool te_dtype_is_int(te_dtype t); /* signed or unsigned integer, not bool */
bool te_dtype_is_bool(te_dtype t);
/* v rounded to float type t as its immediates are: round to nearest
 * even, infinity beyond the largest finite value, gradual underflow
 * (float16: 10 fraction bits, bfloat16: 7 with float32's exponent range,
 * float32: (float)v; float64 and non-float types: v). */
double te_dtype_round(te_dtype t, double v);
/* Storage size of one scalar element in bytes (bool: 1). */
int te_dtype_bytes(te_dtype t);
/* "float32", "int64", "bool", "float32x16", "handle". Static or ctx-free
 * storage: the returned string is owned by a small thread-local ring of
 * buffers and valid until 8 further calls in the same thread. */
const char *te_dtype_str(te_dtype t);
/* Parses "float16", "bfloat16", "float32", "float64", "int8".."int64",
 * "uint8".."uint64", "bool", "handle", each optionally with lanes
 * ("float16x8"); false if unknown. */
bool te_dtype_parse(const char *s, te_dtype *out);

/* ------------------------------------------------------------------ */
/* Expression nodes                                                    */
/* ------------------------------------------------------------------ */

/* Every expression kind, once. X(NAME) expands for each. */
#define TE_EXPR_KINDS(X)                                                    \
    X(INT_IMM)     /* ival; dtype int*, uint* or bool                    */ \
    X(FLOAT_IMM)   /* fval (already rounded to the dtype); float*, bfloat16 */ \
    X(VAR)         /* var                                                */ \
    X(ADD) X(SUB) X(MUL)                                                    \
    X(DIV)         /* float: a / b. int: truncating (C semantics)        */ \
    X(FLOORDIV)    /* int: floor(a / b)                                  */ \
    X(FLOORMOD)    /* int: a - b * floordiv(a, b); sign of b             */ \
    X(MIN) X(MAX)                                                           \
    X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE) /* bin; result bool              */ \
    X(AND) X(OR)   /* bin; bool operands                                 */ \
    X(NOT)         /* un                                                 */ \
    X(SELECT)      /* sel: cond ? t : f (both sides evaluated)           */ \
    X(CAST)        /* un: value converted to this node's dtype           */ \
    X(CALL)        /* call: an intrinsic                                 */ \
    X(READ)        /* read: tensor[indices] (tensor level)               */ \
    X(REDUCE)      /* reduce: only as the whole body of a compute op     */ \
    X(BUFFER_LOAD) /* bload: buffer[indices] (loop level, multi-dim)     */ \
    X(LOAD)        /* load: buffer[index] (flattened; index may be RAMP) */ \
    X(RAMP)        /* ramp: base + stride * [0, lanes)                   */ \
    X(BROADCAST)   /* bcast: value repeated lanes times                  */

typedef enum {
#define TE_X_ENUM(n) TE_##n,
    TE_EXPR_KINDS(TE_X_ENUM)
#undef TE_X_ENUM
    TE_EXPR_KIND_COUNT
} te_expr_kind;

/* Name of an expression kind: "ADD", "FLOORDIV", ... */
const char *te_expr_kind_name(te_expr_kind k);

/* Intrinsic functions (CALL). All are elementwise on float32/float64. */
#define TE_INTRINSICS(X)                                                   \
    X(EXP, "exp", 1) X(LOG, "log", 1) X(SQRT, "sqrt", 1)                   \
    X(TANH, "tanh", 1) X(FABS, "fabs", 1) X(POW, "pow", 2)                 \
    X(SIGMOID, "sigmoid", 1) X(ERF, "erf", 1)                              \
    X(FLOOR, "floor", 1) X(CEIL, "ceil", 1)                                \
    X(LIKELY, "likely", 1) /* bool hint: a guard that is usually true;     \
                              loop partition splits on it */              \
    /* after LIKELY, so that the numbers above stay what they were */      \
    X(RINT, "rint", 1) /* nearest integer, ties to even (not C round) */   \
    X(FMOD, "fmod", 2) /* C fmod: a - b trunc(a / b), a's sign */          \
    X(SIN, "sin", 1) X(COS, "cos", 1) X(TAN, "tan", 1)                     \
    X(ASIN, "asin", 1) X(ACOS, "acos", 1) X(ATAN, "atan", 1)               \
    X(SINH, "sinh", 1) X(COSH, "cosh", 1) X(ASINH, "asinh", 1)             \
    X(ACOSH, "acosh", 1) X(ATANH, "atanh", 1)

typedef enum {
#define TE_X_INTRIN(n, s, a) TE_INTRIN_##n,
    TE_INTRINSICS(TE_X_INTRIN)
#undef TE_X_INTRIN
    TE_INTRIN_COUNT
} te_intrin;

const char *te_intrin_name(te_intrin op);
int te_intrin_arity(te_intrin op);

/* What a variable iterates over. */
typedef enum {
    TE_ITER_NONE = 0,     /* a plain variable (loop variables in tir, handles) */
    TE_ITER_DATA_PAR = 1, /* a compute op's axis, or a split/fuse of one */
    TE_ITER_REDUCE = 2    /* a reduce axis, or a split/fuse of one */
} te_iter_type;

typedef enum {
    TE_REDUCE_SUM = 0,
    TE_REDUCE_PROD = 1,
    TE_REDUCE_MIN = 2,
    TE_REDUCE_MAX = 3
} te_reduce_op;

const char *te_reduce_op_name(te_reduce_op op); /* "sum", "prod", "min", "max" */

struct te_expr {
    te_expr_kind kind;
    te_dtype dtype;
    te_ctx *ctx; /* the ctx that owns the node */
    union {
        int64_t ival; /* INT_IMM (bool: 0 or 1) */
        double fval;  /* FLOAT_IMM */
        struct {
            const char *name;
            int id;           /* unique in the ctx; identity is the pointer */
            te_iter_type iter;
            int64_t extent;   /* axes: the domain is [0, extent); else 0 */
        } var;
        struct { te_expr *a, *b; } bin;  /* ADD..OR */
        struct { te_expr *a; } un;       /* NOT, CAST */
        struct { te_expr *cond, *t, *f; } sel;
        struct { te_intrin op; int nargs; te_expr *args[3]; } call;
        struct { te_tensor *tensor; int ndim; te_expr **indices; } read;
        struct {
            te_reduce_op op;
            te_expr *source;  /* the value combined over the axes */
            int naxes;
            te_expr **axes;   /* VAR nodes with iter == TE_ITER_REDUCE */
        } reduce;
        struct { tir_buffer *buffer; int ndim; te_expr **indices; } bload;
        struct {
            tir_buffer *buffer;
            te_expr *index;      /* element index; RAMP for a vector load */
            te_expr *predicate;  /* NULL, or a bool vector: masked lanes */
        } load;
        struct { te_expr *base, *stride; int lanes; } ramp;
        struct { te_expr *value; int lanes; } bcast;
    } u;
};

/* ------------------------------------------------------------------ */
/* Tensors                                                             */
/* ------------------------------------------------------------------ */

typedef enum { TE_OP_PLACEHOLDER = 0, TE_OP_COMPUTE = 1 } te_op_kind;

/* A tensor and the op that produces it (one output per op). */
struct te_tensor {
    te_ctx *ctx;
    const char *name;
    int id;
    te_op_kind kind;
    te_dtype dtype;          /* scalar element type */
    int ndim;
    int64_t shape[TE_MAX_DIMS]; /* row-major extents, all > 0 */
    /* COMPUTE only: */
    te_expr **axes;  /* ndim data-parallel VARs; axes[d]->u.var.extent == shape[d] */
    te_expr *body;   /* the value at the axes; a REDUCE only at the top */
    int ninputs;     /* distinct tensors the body reads, in first-read order */
    te_tensor **inputs;
};

/* ------------------------------------------------------------------ */
/* Builders                                                            */
/* ------------------------------------------------------------------ */

/* Immediates. te_int: int64. te_const: an integer or float immediate of any
 * scalar type (value converted). te_float: float32. */
te_expr *te_int(te_ctx *ctx, int64_t v);
te_expr *te_int_t(te_ctx *ctx, te_dtype t, int64_t v);
te_expr *te_float(te_ctx *ctx, double v);
te_expr *te_float_t(te_ctx *ctx, te_dtype t, double v);
te_expr *te_bool(te_ctx *ctx, bool v);
te_expr *te_const(te_ctx *ctx, te_dtype t, double v);

/* A plain variable of type t (TE_ITER_NONE). */
te_expr *te_var(te_ctx *ctx, const char *name, te_dtype t);
/* A data-parallel axis over [0, extent), int64. Error if extent <= 0. */
te_expr *te_axis(te_ctx *ctx, const char *name, int64_t extent);
/* A reduce axis over [0, extent), int64. Error if extent <= 0. */
te_expr *te_reduce_axis(te_ctx *ctx, const char *name, int64_t extent);
/* An iteration variable of the given kind (used by the schedule for the
 * products of split and fuse). */
te_expr *te_iter_var(te_ctx *ctx, const char *name, te_iter_type it, int64_t extent);

/* Arithmetic. Operands must have the same dtype, except that an immediate
 * operand is converted to the other operand's type (so `x + 1` works for a
 * float32 x). Two immediates fold to an immediate. Mismatched types are an
 * error naming both types. DIV/FLOORDIV/FLOORMOD by an immediate zero is an
 * error. */
te_expr *te_add(te_expr *a, te_expr *b);
te_expr *te_sub(te_expr *a, te_expr *b);
te_expr *te_mul(te_expr *a, te_expr *b);
te_expr *te_div(te_expr *a, te_expr *b);
te_expr *te_floordiv(te_expr *a, te_expr *b); /* integers only */
te_expr *te_floormod(te_expr *a, te_expr *b); /* integers only */
te_expr *te_min(te_expr *a, te_expr *b);
te_expr *te_max(te_expr *a, te_expr *b);
te_expr *te_eq(te_expr *a, te_expr *b);
te_expr *te_ne(te_expr *a, te_expr *b);
te_expr *te_lt(te_expr *a, te_expr *b);
te_expr *te_le(te_expr *a, te_expr *b);
te_expr *te_gt(te_expr *a, te_expr *b);
te_expr *te_ge(te_expr *a, te_expr *b);
te_expr *te_and(te_expr *a, te_expr *b); /* bool operands */
te_expr *te_or(te_expr *a, te_expr *b);  /* bool operands */
te_expr *te_not(te_expr *a);             /* bool operand */
/* cond ? t : f; cond bool (lanes 1 or matching), t and f of one type. */
te_expr *te_select(te_expr *cond, te_expr *t, te_expr *f);
/* Converts a to type t (a no-op when a already has type t). */
te_expr *te_cast(te_dtype t, te_expr *a);
/* An intrinsic call; nargs must equal te_intrin_arity(op). Float operands
 * (LIKELY: bool). Accuracy on the llvm target: float32 exp (and sigmoid)
 * within 1.05 ulp and float32 erf within 6.4 ulp, inlined vector code
 * (codegen/llvm/llvm_expr.c); the other functions and float64 are libm's.
 * The c and cuda targets use their own libraries. */
te_expr *te_call(te_intrin op, int nargs, te_expr *const *args);
te_expr *te_exp(te_expr *a);
te_expr *te_log(te_expr *a);
te_expr *te_sqrt(te_expr *a);
te_expr *te_tanh(te_expr *a);
te_expr *te_fabs(te_expr *a);
te_expr *te_pow(te_expr *a, te_expr *b);
te_expr *te_sigmoid(te_expr *a);
te_expr *te_erf(te_expr *a);

/* tensor[indices]: ndim must equal the tensor's rank, indices integers. */
te_expr *te_read_n(te_tensor *t, int ndim, te_expr *const *indices);
#define TE_NARGS_(...) ((int)(sizeof((te_expr *[]){__VA_ARGS__}) / sizeof(te_expr *)))
/* te_read(A, i, k) */
#define te_read(T, ...) te_read_n((T), TE_NARGS_(__VA_ARGS__), (te_expr *[]){__VA_ARGS__})

/* A reduction of `source` over reduce axes. Axes must be reduce axes
 * (te_reduce_axis), distinct. The identity is 0 for sum, 1 for prod, the
 * type's largest value for min and smallest for max. */
te_expr *te_reduce_n(te_reduce_op op, te_expr *source, int naxes, te_expr *const *axes);
#define te_sum(src, ...) te_reduce_n(TE_REDUCE_SUM, (src), TE_NARGS_(__VA_ARGS__), (te_expr *[]){__VA_ARGS__})
#define te_prod(src, ...) te_reduce_n(TE_REDUCE_PROD, (src), TE_NARGS_(__VA_ARGS__), (te_expr *[]){__VA_ARGS__})
#define te_rmin(src, ...) te_reduce_n(TE_REDUCE_MIN, (src), TE_NARGS_(__VA_ARGS__), (te_expr *[]){__VA_ARGS__})
#define te_rmax(src, ...) te_reduce_n(TE_REDUCE_MAX, (src), TE_NARGS_(__VA_ARGS__), (te_expr *[]){__VA_ARGS__})
/* The identity of op for type t, as an immediate. */
te_expr *te_reduce_identity(te_ctx *ctx, te_reduce_op op, te_dtype t);
/* combine(op, acc, x): acc + x, acc * x, min(acc, x), max(acc, x). */
te_expr *te_reduce_combine(te_reduce_op op, te_expr *acc, te_expr *x);

/* An input tensor of the given shape (ndim extents, each > 0). */
te_tensor *te_placeholder(te_ctx *ctx, const char *name, te_dtype t, int ndim,
                          const int64_t *shape);
#define TE_SHAPE(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))), (int64_t[]){__VA_ARGS__}
/* A compute op: out[axes] = body. `axes` are ndim distinct data-parallel
 * axes (te_axis) not used by another compute op; the shape is their
 * extents. `body` may use only these axes and the reduce axes of a REDUCE
 * at its top; every reduce axis of the body must be listed by that REDUCE.
 * A read whose index in some dimension is a constant (an INT_IMM) outside
 * that dimension's extent is an error naming the tensors, the dimension,
 * the index and the extent. The tensor's dtype is the body's. */
te_tensor *te_compute(te_ctx *ctx, const char *name, int ndim, te_expr *const *axes,
                      te_expr *body);
#define TE_AXES(...) TE_NARGS_(__VA_ARGS__), (te_expr *[]){__VA_ARGS__}
#define TE_TENSORS(...) ((int)(sizeof((te_tensor *[]){__VA_ARGS__}) / sizeof(te_tensor *))), (te_tensor *[]){__VA_ARGS__}

/* The ctx a node was built in (every node records it). */
te_ctx *te_expr_ctx(const te_expr *e);

/* ------------------------------------------------------------------ */
/* Queries and traversal                                               */
/* ------------------------------------------------------------------ */

bool te_is_const_int(const te_expr *e, int64_t *value); /* INT_IMM (lanes 1) */
bool te_is_const_float(const te_expr *e, double *value);
/* Structural equality (variables by identity). */
bool te_expr_equal(const te_expr *a, const te_expr *b);
/* A structural hash consistent with te_expr_equal. */
uint64_t te_expr_hash(const te_expr *e);

/* Visits each direct child expression of e in order (not tensors). */
typedef void (*te_expr_visit_fn)(const te_expr *child, void *user);
void te_expr_visit_children(const te_expr *e, te_expr_visit_fn fn, void *user);
/* Returns e rebuilt with each direct child replaced by fn(child, user); e
 * itself when no child changed. fn returning NULL propagates NULL. */
typedef te_expr *(*te_expr_map_fn)(te_expr *child, void *user);
te_expr *te_expr_map_children(te_ctx *ctx, te_expr *e, te_expr_map_fn fn, void *user);
/* Replaces each occurrence of vars[i] (by identity) with values[i]. */
te_expr *te_substitute(te_ctx *ctx, te_expr *e, int n, te_expr *const *vars,
                       te_expr *const *values);
/* True when v (a VAR) occurs in e. */
bool te_expr_uses_var(const te_expr *e, const te_expr *v);
/* The dimension of tensor t that some read of t in e indexes with exactly
 * v (a VAR, by identity), or -1 when none does (the first such read and
 * dimension in a pre-order walk). */
int te_expr_read_dim(const te_expr *e, const te_tensor *t, const te_expr *v);
/* True when reduce axis r of t's reduction slides a window over an input:
 * some read in t's body indexes a dimension with an expression of both r
 * and a spatial axis of t (the y + ry and x + rx of a convolution; not its
 * input channels rc, nor the k of a matmul). False for a t without a
 * reduction or an r out of range. The packed register tile orders its
 * reduction by it (ops_packed_taps_outside). */
bool te_reduce_axis_slides(const te_tensor *t, int r);

/* ------------------------------------------------------------------ */
/* Hashing                                                             */
/* ------------------------------------------------------------------ */

/* 64-bit FNV-1a of n bytes at data (the "" hash is 0xcbf29ce484222325).
 * Stable across versions and hosts: the tuning database and the cost
 * model's blobs store its values. Not a cryptographic hash. */
uint64_t te_hash_bytes(const void *data, size_t n);
/* te_hash_bytes of a NUL-terminated string (without its NUL). */
uint64_t te_hash_str(const char *s);

/* ------------------------------------------------------------------ */
/* Printing                                                            */
/* ------------------------------------------------------------------ */

/* Appends the text of e to a growable string (see te_str). */
typedef struct {
    char *data;   /* NUL-terminated; malloc-owned by the te_str */
    size_t len, cap;
} te_str;
void te_str_init(te_str *s);
void te_str_free(te_str *s);
void te_str_append(te_str *s, const char *text);
void te_str_printf(te_str *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The expression in infix form, as TVM prints it: `((i*32) + j)`,
 * `floordiv(x, 4)`, `A[i, k]`, `sum(A[i, k]*B[k, j], axis=[k])`,
 * `ramp(x, 1, 16)`, `float32(x)`. */
void te_expr_print(te_str *out, const te_expr *e);
/* te_expr_print into the ctx arena. */
const char *te_expr_str(te_ctx *ctx, const te_expr *e);

/* ------------------------------------------------------------------ */
/* Arithmetic analyser                                                 */
/* ------------------------------------------------------------------ */

/* The analyser knows integer ranges of variables (loop variables, axes)
 * and answers: constant folding and canonical simplification, constant
 * integer bounds, modular (divisibility) facts, and proofs of comparisons.
 * Sources: TVM arith (CanonicalSimplifier, ConstIntBoundAnalyzer,
 * ModularSetAnalyzer), Halide Simplify / ModulusRemainder. */
typedef struct te_analyzer te_analyzer;

/* A new analyser allocating its results in ctx. Free with
 * te_analyzer_free (it owns malloc memory for its bindings). Axis VARs
 * with extent > 0 are known to lie in [0, extent) without binding. */
te_analyzer *te_analyzer_new(te_ctx *ctx);
void te_analyzer_free(te_analyzer *an);
/* Declares that var lies in [min, min + extent). A later bind of the same
 * var replaces the range; unbind restores the previous one (bindings
 * nest like scopes). */
void te_analyzer_bind(te_analyzer *an, const te_expr *var, int64_t min, int64_t extent);
void te_analyzer_unbind(te_analyzer *an, const te_expr *var);

/* Canonical simplification: constants folded, affine integer expressions
 * in a canonical sum-of-products order with like terms combined,
 * floordiv/floormod of affine forms simplified using bounds and
 * divisibility (so `floordiv(io*32 + ii, 32)` with ii in [0, 32) becomes
 * `io`, `floormod(io*32 + ii, 32)` becomes `ii`, and the fused-index
 * expressions of fuse-then-split collapse), comparisons decided by bounds
 * become true/false, select/min/max with decided conditions collapse.
 * Float expressions: constants folded only (no reassociation). Never
 * fails; returns e itself when nothing changed. */
te_expr *te_analyzer_simplify(te_analyzer *an, te_expr *e);
/* Simplify with no variable bindings beyond axis extents. */
te_expr *te_simplify(te_ctx *ctx, te_expr *e);
/* The affine form of integer expression e over the n variables vars:
 * e == sum(coef[i] * vars[i]) + *k, read off e's sums, differences and
 * products by immediates (simplify e first to expand anything else).
 * Writes coef (n entries, caller's storage) and *k and returns true; false
 * when e holds another term (a floordiv, a variable not in vars, ...), a
 * coefficient overflows int64, or memory runs out. */
bool te_affine_form(te_expr *e, int n, te_expr *const *vars, int64_t *coef, int64_t *k);

/* Constant bounds of an integer expression: *lo <= e <= *hi. Unbounded
 * sides are INT64_MIN / INT64_MAX. */
void te_analyzer_const_bound(te_analyzer *an, const te_expr *e, int64_t *lo, int64_t *hi);
/* Modular set: e == coeff * k + base for some integer k, 0 <= base < coeff
 * when coeff > 0; coeff == 0 means e == base exactly. Unknown: coeff 1,
 * base 0. */
void te_analyzer_modular(te_analyzer *an, const te_expr *e, int64_t *coeff, int64_t *base);
/* True when the bool expression is provably true under the bindings. */
bool te_analyzer_can_prove(te_analyzer *an, const te_expr *cond);

LOOM_API_END
#ifdef __cplusplus
}
#endif
#endif /* LOOM_TE_H */
