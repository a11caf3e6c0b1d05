/*
 * codegen/llvm/llvm_internal.h — state shared by the LLVM backend's files:
 * the emitter (LLVM context, module, builder, the current function and the
 * values bound to loop variables and buffers), target set-up and the
 * lowering entry points.
 *
 * Every tir function becomes `i32 NAME(ptr args)` (rt_packed_fn) that loads
 * the buffer pointers and calls an internal, always-inlined body function
 * whose pointer parameters are noalias: inlining turns that into scoped
 * alias metadata, so LLVM knows distinct buffers never overlap. Parallel
 * loops are outlined the same way (llvm_parallel.c).
 */
#ifndef LOOM_CG_LLVM_INTERNAL_H
#define LOOM_CG_LLVM_INTERNAL_H

#include <stdbool.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>

#include "loom/codegen.h"

/* Elements added after every local buffer on the stack, so a vector
 * access starting inside the buffer never leaves the alloca: a register
 * tile whose last row is a masked partial vector stays promotable. */
#define CG_LLVM_LOCAL_SLACK 64
/* Allocations larger than this many bytes go on the heap, not the stack. */
#define CG_LLVM_STACK_LIMIT 65536

typedef struct {
    const void *key; /* a te_expr VAR, or a tir_buffer */
    LLVMValueRef val;
} cg_llvm_bind;

typedef struct {
    te_ctx *ctx;
    LLVMContextRef lc;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    const char *func;          /* tir name of the function, for messages */
    const char *sym;           /* its exported symbol, prefix of helpers */
    te_analyzer *an;           /* loop variables bound to their ranges */
    bool failed;               /* an error is recorded in ctx */
    bool in_parallel;          /* inside an outlined parallel body */
    int nclosures;
    /* The LLVM function being written: allocas go into its first block. */
    LLVMValueRef fn;
    LLVMBasicBlockRef alloca_bb;
    /* Scoped bindings, innermost last. */
    cg_llvm_bind *binds;
    int nbinds, cap_binds;
    /* Heap buffers open in the current function: freed on error exits. */
    LLVMValueRef *heap;
    int nheap, cap_heap;
    /* Common types. */
    LLVMTypeRef t_i1, t_i8, t_i32, t_i64, t_ptr, t_void;
    /* cg_llvm_options.bounds_check, and the name strings its error calls
     * pass (a buffer or a function name to its global constant). */
    bool bounds_check;
    /* The target CPU (for messages), whether it has AVX512-BF16
     * (x86.dpbf16 tensor calls), and AVX-512F (VSCALEFPS in exp). */
    const char *cpu;
    bool bf16_dot, avx512f;
    cg_llvm_bind *names;
    int nnames, cap_names;
} cg_llvm_emitter;

/* ---- llvm_target.c ---- */
/* Initialises the native target once per process. */
void cg_llvm__init(void);
/* A target machine for the host triple; NULL with an error in ctx. */
LLVMTargetMachineRef cg_llvm__target_machine(te_ctx *ctx, const char *cpu, const char *features,
                                             int opt_level);
/* The host triple (LLVM-owned message: LLVMDisposeMessage). */
char *cg_llvm__triple(void);
/* NULL when LLVM knows CPU name cpu and every feature of the
 * comma-separated list features ("+avx2,-fma") for the host triple (NULL
 * cpu or features: not checked); else the reason, malloc'd: "unknown CPU
 * 'x' for x86_64-pc-linux-gnu (this host's CPU is 'znver5')", "unknown
 * feature '+y' for ...", or a feature without its '+' or '-'. */
char *cg_llvm__check_cpu(const char *cpu, const char *features);

/* ---- llvm_cpu_names.cpp (C++: LLVM-C has no CPU or feature tables) ---- */
/* 0: cpu and features known (NULL: not checked); 1: unknown cpu; 2: an
 * unknown feature or one without '+'/'-' (*bad: that item, malloc'd);
 * -1: no target for the triple. */
int cg_llvm__mc_check(const char *triple, const char *cpu, const char *features, char **bad);
/* float32 lanes of one SIMD register of cpu with features (NULL: the
 * generic CPU, no extra features) for triple: 16 (AVX-512F), 8 (AVX), 4
 * (anything else, every non-x86 triple included). */
int cg_llvm__vector_lanes(const char *triple, const char *cpu, const char *features);
/* True when cpu with features has AVX512-BF16's VDPBF16PS (tensorize
 * x86.dpbf16); false for any non-x86 triple. */
bool cg_llvm__has_bf16_dot(const char *triple, const char *cpu, const char *features);

/* ---- llvm_jit.c ---- */
/* The error's text (malloc-owned); consumes err. */
char *cg_llvm__error_text(LLVMErrorRef err);
/* A JIT for target machine tm (which it takes over), with the runtime and
 * libm symbols defined and the process searched for the rest. */
LLVMOrcLLJITRef cg_llvm__jit_new(te_ctx *ctx, LLVMTargetMachineRef tm);
void cg_llvm__jit_free(void *jit);
/* Adds a module (taking it over); 0 or -1. */
int cg_llvm__jit_add(te_ctx *ctx, LLVMOrcLLJITRef jit, LLVMOrcThreadSafeModuleRef tsm);
/* The address of symbol sym (compiling on first use); NULL with an error. */
void *cg_llvm__jit_lookup(te_ctx *ctx, LLVMOrcLLJITRef jit, const char *sym, const char *func);

/* ---- llvm_emit.c: errors, bindings, types ---- */
/* Records an error (prefix "llvm: ") once: the first cause is reported. */
void cg_llvm__fail(cg_llvm_emitter *em, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void cg_llvm__bind(cg_llvm_emitter *em, const void *key, LLVMValueRef v);
LLVMValueRef cg_llvm__lookup(const cg_llvm_emitter *em, const void *key);
/* Binds a buffer's pointer (and its data VAR). */
void cg_llvm__bind_buffer(cg_llvm_emitter *em, const tir_buffer *b, LLVMValueRef ptr);
/* The LLVM type of a (scalar or vector) dtype; NULL with a failure. */
LLVMTypeRef cg_llvm__type(cg_llvm_emitter *em, te_dtype t);
/* The in-memory element type of a buffer (bool: i8). */
LLVMTypeRef cg_llvm__mem_type(cg_llvm_emitter *em, te_dtype t);
/* An alloca in the current function's entry block. */
LLVMValueRef cg_llvm__entry_alloca(cg_llvm_emitter *em, LLVMTypeRef ty, LLVMValueRef count,
                                   unsigned align, const char *name);
/* Declaration of an overloaded LLVM intrinsic; *fty receives its type. */
LLVMValueRef cg_llvm__intrinsic(cg_llvm_emitter *em, const char *name, LLVMTypeRef *over,
                                int nover, LLVMTypeRef *fty);
/* value repeated `lanes` times (a no-op when lanes == 1). */
LLVMValueRef cg_llvm__splat(cg_llvm_emitter *em, LLVMValueRef v, int lanes);
/* The pointer bound to buf, or NULL after failing with "buffer 'B' in
 * function 'F' is <use> outside its allocation or parameter list". */
LLVMValueRef cg_llvm__buffer_base(cg_llvm_emitter *em, const tir_buffer *buf, const char *use);
/* A string attribute or enum attribute on a function (index ~0u) or a
 * parameter (1-based). */
void cg_llvm__add_attr(cg_llvm_emitter *em, LLVMValueRef fn, unsigned idx, const char *name);

/* Attributes every generated function carries (nounwind, vector width). */
void cg_llvm__fn_attrs(cg_llvm_emitter *em, LLVMValueRef fn);

/* ---- llvm_expr.c ---- */
LLVMValueRef cg_llvm__expr(cg_llvm_emitter *em, const te_expr *e);

/* Dense vector index: ramp(b, 1, L), or that plus a broadcast. */
bool cg_llvm__is_dense(const te_expr *idx);
/* The scalar base of a dense index, emitted. */
LLVMValueRef cg_llvm__dense_base(cg_llvm_emitter *em, const te_expr *idx);
/* Vector accesses at a strided index of at most this many lanes are
 * emitted as one scalar access a lane (llvm_expr.c, load). */
enum { CG_LLVM_MAX_SCALARISED = 64 };
/* A strided index: ramp(b, s, L) with scalar b and s, possibly plus a
 * broadcast, of at most CG_LLVM_MAX_SCALARISED lanes. */
bool cg_llvm__is_strided(const te_expr *idx);
/* Emits the i64 index of each lane of a strided index into lanes[]
 * (idx->dtype.lanes of them); false when idx is not strided or an
 * operand failed to emit. */
bool cg_llvm__strided_lanes(cg_llvm_emitter *em, const te_expr *idx, LLVMValueRef *lanes);
/* Whether the L lanes of dense index idx provably lie inside the stack
 * allocation of local (per-thread) buffer buf, its slack included: then a
 * predicated access may touch every lane and blend, which keeps the
 * buffer promotable to registers (SROA gives up on allocas reached by
 * llvm.masked.* intrinsics). */
bool cg_llvm__lanes_inside_local(const tir_buffer *buf, const te_expr *idx, int L);
/* An index value of type t widened to i64 (scalar or vector). */
LLVMValueRef cg_llvm__index(cg_llvm_emitter *em, LLVMValueRef v, te_dtype t);

/* ---- llvm_stmt.c ---- */
void cg_llvm__stmt(cg_llvm_emitter *em, const tir_stmt *s);
/* Emits `ret rc` after freeing the open heap buffers. */
void cg_llvm__return(cg_llvm_emitter *em, LLVMValueRef rc);
/* A serial loop over [lo, hi) running body_fn at each value of var. */
void cg_llvm__loop(cg_llvm_emitter *em, const te_expr *var, LLVMValueRef lo, LLVMValueRef hi,
                   const tir_stmt *body, bool unroll);

/* ---- llvm_x86_dot.c ---- */
/* A TENSOR_CALL: x86.dpbf16 where the target CPU has AVX512-BF16; any
 * other intrinsic (the GPU's) or a CPU without it fails with a message. */
void cg_llvm__tensor_call(cg_llvm_emitter *em, const tir_stmt *s);

/* ---- llvm_bounds.c ---- */
/* With em->bounds_check: emits a test that every lane of index idx
 * (enabled by pred, NULL: all) lies inside buf, and on failure a call to
 * rt_bounds_error and a return of its code (freeing the open heap
 * buffers). Emitted before the access; a no-op without bounds_check. */
void cg_llvm__check_access(cg_llvm_emitter *em, const tir_buffer *buf, const te_expr *idx,
                           const te_expr *pred, bool is_write);

/* ---- llvm_parallel.c ---- */
void cg_llvm__parallel_for(cg_llvm_emitter *em, const tir_stmt *s);

/* Starts writing function fn: makes its alloca block and a first body
 * block, positions the builder there. Returns the old state to restore. */
typedef struct {
    LLVMValueRef fn;
    LLVMBasicBlockRef alloca_bb, insert_bb;
    int nbinds;
    LLVMValueRef *heap;
    int nheap, cap_heap;
} cg_llvm_fn_state;
cg_llvm_fn_state cg_llvm__begin_fn(cg_llvm_emitter *em, LLVMValueRef fn);
/* Closes the alloca block and restores the saved state. */
void cg_llvm__end_fn(cg_llvm_emitter *em, cg_llvm_fn_state saved);


#endif
