/*
 * tir/pipeline.c — the pass pipeline between lowering and code
 * generation, in the one place its order is written (Halide Lower.cpp).
 *
 *   storage_flatten   multi-dimensional accesses become flat indices
 *   simplify          fold the index arithmetic, drop decided guards
 *   loop_partition    split loops around likely() guards
 *   simplify          clean up the partitions
 *   remove_noop       drop the loops left around pieces decided empty (so
 *                     unroll neither copies nor counts them)
 *   vectorize         VECTORIZED loops become RAMP/BROADCAST code
 *   unroll            UNROLLED loops and auto_unroll_max_step regions
 *   storage_rewrite   siblings share scratch memory
 *   simplify          fold what unrolling exposed
 *   remove_noop       drop statements with no effect
 *
 * The GPU pipeline (opts->gpu, target cuda) adds:
 *   inject_vthread    after vectorize: vthread loops become replicated code
 *   thread_sync       after remove_noop: __syncthreads around shared memory
 *   verify_gpu        last: limits and binding rules, checked at build time
 */
#include "tir/tir_internal.h"

tir_func *tir_run_pipeline(te_ctx *ctx, const tir_func *f, const tir_pipeline_options *opts) {
    if (!ctx) return NULL;
    if (!f || !f->body) return tir__null_operand(ctx, "pipeline");
    tir_func *g = tir_pass_storage_flatten(ctx, f);
    if (g) g = tir_pass_simplify(ctx, g);
    if (g && !(opts && opts->skip_loop_partition)) {
        g = tir_pass_loop_partition(ctx, g);
        if (g) g = tir_pass_simplify(ctx, g);
        if (g) g = tir_pass_remove_noop(ctx, g);
    }
    if (g) {
        if (opts && opts->skip_vectorize) {
            tir_stmt *body = tir__devectorize(ctx, g->body);
            g = body ? tir_func_with_body(ctx, g, body) : NULL;
        } else {
            g = tir_pass_vectorize(ctx, g, opts ? opts->vectorize_why : NULL);
        }
    }
    bool gpu = opts && opts->gpu;
    if (g && gpu) g = tir_pass_inject_vthread(ctx, g);
    if (g && gpu) g = tir_pass_simplify(ctx, g);
    if (g) g = opts && opts->unroll_hints_only ? tir_pass_unroll_hinted(ctx, g)
                                               : tir_pass_unroll(ctx, g);
    if (g) g = tir_pass_storage_rewrite(ctx, g);
    if (g) g = tir_pass_simplify(ctx, g);
    if (g) g = tir_pass_remove_noop(ctx, g);
    if (g && gpu) g = tir_pass_thread_sync(ctx, g);
    if (g && gpu && tir_verify_gpu(ctx, g, &opts->gpu_limits)) g = NULL;
    return g;
}
