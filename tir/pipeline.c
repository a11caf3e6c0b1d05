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
 *
 * Every pass runs through STEP, so that LOOM_DUMP_IR (tir/dump.c) sees
 * each one: a pass added outside it would be missing from the dump.
 */
#include "tir/tir_internal.h"

/* Runs one pass when the previous ones succeeded, and dumps its result
 * (LOOM_DUMP_IR). */
#define STEP(name, call)                                          \
    do {                                                          \
        if (g) {                                                  \
            double t0_ = tir__dump_now();                         \
            g = (call);                                           \
            tir__dump_step(&dump, (name), g, tir__dump_now() - t0_); \
        }                                                         \
    } while (0)

static tir_func *devectorize(te_ctx *ctx, tir_func *g) {
    tir_stmt *body = tir__devectorize(ctx, g->body);
    return body ? tir_func_with_body(ctx, g, body) : NULL;
}

tir_func *tir_run_pipeline(te_ctx *ctx, const tir_func *f, const tir_pipeline_options *opts) {
    if (!ctx) return NULL;
    if (!f || !f->body) return tir__null_operand(ctx, "pipeline");
    tir__dump dump;
    tir__dump_begin(&dump, f);
    double t0 = tir__dump_now();
    tir_func *g = tir_pass_storage_flatten(ctx, f);
    tir__dump_step(&dump, "storage_flatten", g, tir__dump_now() - t0);
    STEP("simplify", tir_pass_simplify(ctx, g));
    if (!(opts && opts->skip_loop_partition)) {
        STEP("loop_partition", tir_pass_loop_partition(ctx, g));
        STEP("simplify", tir_pass_simplify(ctx, g));
        STEP("remove_noop", tir_pass_remove_noop(ctx, g));
    }
    if (opts && opts->skip_vectorize) STEP("devectorize", devectorize(ctx, g));
    else STEP("vectorize", tir_pass_vectorize(ctx, g, opts ? opts->vectorize_why : NULL));
    bool gpu = opts && opts->gpu;
    if (gpu) {
        STEP("inject_vthread", tir_pass_inject_vthread(ctx, g));
        STEP("simplify", tir_pass_simplify(ctx, g));
    }
    if (opts && opts->unroll_hints_only) STEP("unroll_hinted", tir_pass_unroll_hinted(ctx, g));
    else STEP("unroll", tir_pass_unroll(ctx, g));
    STEP("storage_rewrite", tir_pass_storage_rewrite(ctx, g));
    STEP("simplify", tir_pass_simplify(ctx, g));
    STEP("remove_noop", tir_pass_remove_noop(ctx, g));
    if (gpu) {
        STEP("thread_sync", tir_pass_thread_sync(ctx, g));
        STEP("verify_gpu", tir_verify_gpu(ctx, g, &opts->gpu_limits) ? NULL : g);
    }
    tir__dump_end(&dump);
    return g;
}
