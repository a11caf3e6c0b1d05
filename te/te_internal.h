/*
 * te/te_internal.h — helpers shared by the files of te/ (builders, printer,
 * traversal, the arithmetic analyser). Not a public header.
 *
 * The ctx struct lives here so that node allocation — the hottest path of
 * the autotuner, which builds millions of nodes — is an inline bump of a
 * pointer rather than a call.
 */
#ifndef LOOM_TE_INTERNAL_H
#define LOOM_TE_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "loom/te.h"

/* One arena chunk: a header followed by the memory handed out. Chunks are
 * calloc'ed and never reused, so every allocation is already zero. */
typedef struct te__chunk {
    struct te__chunk *next;
    size_t size; /* usable bytes after the (16-rounded) header */
} te__chunk;
#define TE__CHUNK_HDR ((sizeof(te__chunk) + 15u) & ~(size_t)15u)

/* Compute-op ownership of axes: an open-addressing map axis -> tensor. */
typedef struct {
    const te_expr **keys;
    te_tensor **vals;
    size_t cap, n;
} te__axis_map;

struct te_ctx {
    char *cur, *end;        /* free part of the current chunk */
    te__chunk *chunks;      /* every chunk, newest first */
    size_t next_chunk_size; /* grows geometrically */
    size_t arena_bytes;     /* sum of chunk sizes */
    char *errmsg;           /* malloc'ed; NULL means "" */
    int next_id;
    te__axis_map owned;     /* axes of compute ops */
};

/* Slow path of te__alloc: a new chunk. */
void *te__alloc_slow(te_ctx *ctx, size_t size);

/* 16-aligned zeroed arena memory (inline fast path of te_alloc). */
static inline void *te__alloc(te_ctx *ctx, size_t size) {
    size_t need = (size + 15u) & ~(size_t)15u;
    if (need >= size && (size_t)(ctx->end - ctx->cur) >= need) {
        void *p = ctx->cur;
        ctx->cur += need;
        return p;
    }
    return te__alloc_slow(ctx, size);
}

/* A zeroed node of the given kind and type; NULL on exhaustion. */
static inline te_expr *te__node(te_ctx *ctx, te_expr_kind kind, te_dtype t) {
    te_expr *e = (te_expr *)te__alloc(ctx, sizeof(te_expr));
    if (!e) return NULL;
    e->kind = kind;
    e->dtype = t;
    e->ctx = ctx;
    return e;
}

/* A copy of e in ctx (for rebuilding a node with other children). */
static inline te_expr *te__clone(te_ctx *ctx, const te_expr *e) {
    te_expr *n = (te_expr *)te__alloc(ctx, sizeof(te_expr));
    if (!n) return NULL;
    *n = *e;
    n->ctx = ctx;
    return n;
}

/* The compute op that owns axis (NULL if none) / records ownership. */
te_tensor *te__axis_owner(const te_ctx *ctx, const te_expr *axis);
int te__set_axis_owner(te_ctx *ctx, const te_expr *axis, te_tensor *t);

/* ---- immediates and folding (te/expr.c) ---- */

/* True for INT_IMM / FLOAT_IMM nodes (any lanes value in dtype is 1). */
static inline bool te__is_imm(const te_expr *e) {
    return e->kind == TE_INT_IMM || e->kind == TE_FLOAT_IMM;
}
/* A scalar immediate, or a BROADCAST of one: such operands adopt the
 * other operand's type in binary builders. */
bool te__is_imm_like(const te_expr *e);
/* v wrapped to the width and signedness of integer type t (two's
 * complement truncation; bool: v != 0). */
int64_t te__wrap_int(te_dtype t, int64_t v);
/* v rounded to float type t (float32 values are stored rounded). */
double te__round_float(te_dtype t, double v);
/* An immediate of scalar type t holding v (no validation). */
te_expr *te__int_imm(te_ctx *ctx, te_dtype t, int64_t v);
te_expr *te__float_imm(te_ctx *ctx, te_dtype t, double v);
/* Brings *pa and *pb to one dtype under the builders' rule (an
 * immediate adopts the other operand's type, broadcast to its lanes), or
 * records "<op>: operand types X and Y differ" and returns -1. */
int te__unify(const char *op, te_expr **pa, te_expr **pb);
/* A BROADCAST node of a scalar value (lanes > 1), built without checks.
 * Same meaning as tir_broadcast. */
te_expr *te__broadcast(te_expr *value, int lanes);
/* A binary node built directly with the given result type (no checks, no
 * folding): for passes that have already validated their operands. */
te_expr *te__bin(te_expr_kind kind, te_dtype t, te_expr *a, te_expr *b);

/* Folds integer op `kind` (ADD..GE, AND, OR) on scalar values of type t
 * (the operands' type). Returns false for division by zero. For
 * comparisons *out is 0/1. Unsigned types use unsigned semantics. */
bool te__fold_int(te_expr_kind kind, te_dtype t, int64_t a, int64_t b, int64_t *out);
/* Folds a float op (ADD..MAX, comparisons). For comparisons *is_bool is
 * set and *bout holds the result. Returns false for unsupported kinds. */
bool te__fold_float(te_expr_kind kind, te_dtype t, double a, double b, double *out,
                    bool *is_bool, bool *bout);

/* Lower-case name of a binary kind for messages: "add", "floordiv". */
const char *te__op_name(te_expr_kind k);

#endif
