/*
 * tir/tir_internal.h — helpers shared by the files of tir/ (builders,
 * traversal, printer, passes). Not part of the public API.
 */
#ifndef LOOM_TIR_INTERNAL_H
#define LOOM_TIR_INTERNAL_H

#include "loom/tir.h"

/* A zeroed statement of the given kind in the ctx arena; NULL on exhaustion. */
tir_stmt *tir__new_stmt(te_ctx *ctx, tir_stmt_kind kind);

/* True for NULL and NOOP: "nothing happens here". */
bool tir__is_noop(const tir_stmt *s);

/* Records "what: NULL operand" unless an earlier error already explains
 * the NULL (builders chain, so the first cause is the one worth keeping).
 * Returns NULL for `return tir__null_operand(...)`. */
void *tir__null_operand(te_ctx *ctx, const char *what);

/* Deep post-order expression rewrite: every node's children are rewritten
 * first, then fn(rebuilt node, user) decides its replacement. Unchanged
 * subtrees are shared; fn returning NULL propagates NULL. */
te_expr *tir__expr_rewrite(te_ctx *ctx, te_expr *e, te_expr_map_fn fn, void *user);

/* True when s (or any expression in it) stores to or loads from buffer b. */
bool tir__stmt_uses_buffer(const tir_stmt *s, const tir_buffer *b);
/* True when e loads from buffer b (LOAD or BUFFER_LOAD), at any depth. */
bool tir__expr_uses_buffer(const te_expr *e, const tir_buffer *b);

/* Replaces every reference to buffer `from` (stores, loads, the data
 * VAR) by buffer `to` in s. */
tir_stmt *tir__replace_buffer(te_ctx *ctx, tir_stmt *s, const tir_buffer *from, tir_buffer *to);

/* Turns every VECTORIZED loop into a SERIAL one (the pipeline's
 * skip_vectorize). */
tir_stmt *tir__devectorize(te_ctx *ctx, tir_stmt *s);

/* GPU helpers (pass_verify_gpu.c): the index of a thread tag in
 * blockIdx.x..z, threadIdx.x..z, vthread (0..6) or -1; the first buffer
 * stored in s (names a loop's stage in messages, "?" if none); whether s
 * holds a thread-bound loop. */
int tir__thread_tag_index(const char *tag);
const char *tir__stage_of(const tir_stmt *s);
bool tir__has_thread_loop(const tir_stmt *s);

#endif
