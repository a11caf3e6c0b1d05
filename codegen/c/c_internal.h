/*
 * codegen/c/c_internal.h — state shared by the C emitter's files: the
 * emitter (output streams, the C name of every variable and buffer, the
 * analyser that knows loop ranges) and the printing entry points.
 */
#ifndef LOOM_CG_C_INTERNAL_H
#define LOOM_CG_C_INTERNAL_H

#include <stdbool.h>

#include "loom/codegen.h"

/* Buffers larger than this go on the heap instead of the stack. */
#define CG_C_STACK_LIMIT 65536

typedef struct {
    const void *key; /* a te_expr VAR or a tir_buffer */
    const char *name;
} cg_c_name;

typedef struct {
    te_ctx *ctx;
    te_str *out;        /* the C function being written */
    te_str *decls;      /* env structs and closures, placed before it */
    int indent;
    const char *func;   /* tir name of the function, for messages */
    te_analyzer *an;    /* loop variables bound to their ranges */
    bool failed;        /* an error is recorded in ctx */
    const char *prefix; /* of error messages: NULL "c"; the cuda backend sets "cuda" */
    bool in_parallel;   /* inside an outlined parallel body */
    const char *lane;   /* the lane index while printing lanewise, else NULL */
    /* float16/bfloat16 as CUDA's __half/__nv_bfloat16 with its conversion
     * intrinsics (the cuda backend); the c target has no 16-bit floats.
     * uses_half: bit 1 float16, bit 2 bfloat16 was printed. */
    bool half_types;
    unsigned uses_half;
    int nclosures, ntemps;
    cg_c_name *names;
    int nnames, cap_names;
    /* Heap buffers open in the current C function: freed on error exits. */
    const char **heap;
    int nheap, cap_heap;
} cg_c_emitter;

/* Records an error (prefix "c: ") once; later errors are dropped so the
 * first cause is the one reported. */
void cg_c_fail(cg_c_emitter *em, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The C identifier of a variable or buffer: the sanitised name ('.' and
 * other non-identifier characters -> '_'), prefixed with "x_" when it is
 * a C keyword or a name the generated code uses, suffixed with "_<n>" when
 * another object already has it. Stable for a key. */
const char *cg_c_name_of(cg_c_emitter *em, const void *key, const char *raw);
/* A name only when key was named before, else NULL. */
const char *cg_c_name_lookup(const cg_c_emitter *em, const void *key);
/* The name of a buffer's pointer (also given to its data VAR). */
const char *cg_c_buffer_name(cg_c_emitter *em, const tir_buffer *b);
/* The exported symbol of a tir function: "loom_func_<sanitised name>". */
const char *cg_c_symbol(te_ctx *ctx, const char *func_name);

/* The C type of a scalar element type ("float", "int64_t", "bool",
 * "void *"); NULL when C has none (e.g. float16). */
const char *cg_c_type(te_dtype t);

/* cg_c_type, plus __half / __nv_bfloat16 for the 16-bit floats when
 * em->half_types (recorded in em->uses_half); NULL when none. */
const char *cg_c_type_em(cg_c_emitter *em, te_dtype t);

/* Prints expression e in C into em->out. With em->lane set, vector
 * subexpressions print lane em->lane (RAMP(b, s, L) -> (b + s*lane)). */
void cg_c_expr(cg_c_emitter *em, const te_expr *e);
/* Prints flat index idx of buffer b: as it is, or for a swizzled shared
 * buffer (tir_buffer.swizzle; CUDA only) through the prelude's
 * loom_swz<log2 bytes>(), which XORs its 16-byte chunk with its row mod 8. */
void cg_c_index(cg_c_emitter *em, const tir_buffer *b, const te_expr *idx);
/* C source of the helpers generated code may call (floor division and
 * modulo, sigmoid, min/max per type), written with a LOOM_HELPER macro
 * the including prelude defines first (static inline in C, static
 * __device__ __forceinline__ in CUDA). */
extern const char cg_c_helper_defs[];
/* Statement emission (c_stmt.c). */
void cg_c_stmt(cg_c_emitter *em, const tir_stmt *s);
/* Emits the statements every C-family backend writes alike (IF, SEQ,
 * EVALUATE, NOOP, LET, ATTR), their children through emit(user, child). Returns
 * false, emitting nothing, for any other kind. */
typedef void (*cg_c_stmt_fn)(void *user, const tir_stmt *s);
bool cg_c_control_stmt(cg_c_emitter *em, const tir_stmt *s, cg_c_stmt_fn emit, void *user);
void cg_c_line(cg_c_emitter *em, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
