/*
 * tests/gpu_sample.c — random GPU programs for the GPU autotuning tests
 * (gpu_sample.h).
 */
#include "gpu_sample.h"

#include <string.h>

#include "loom/codegen.h"
#include "loom/runtime.h"
#include "testutil.h"

void gs_open(gs_sampler *g, const char *key, uint64_t seed) {
    memset(g, 0, sizeof *g);
    g->key = key;
    g->ctx = te_ctx_new();
    assert_non_null(g->ctx);
    assert_int_equal(tune_build_workload(g->ctx, key, &g->w), 0);
    g->ow = ops_from_key(g->ctx, key);
    assert_non_null(g->ow);
    assert_int_equal(tune_generate_sketches_gpu(g->ctx, &g->w, &g->sk, 1), 1);
    g->po.gpu = true;
    g->po.gpu_limits = tune_gpu_limits();
    g->rng = seed;
}

void gs_close(gs_sampler *g) {
    te_ctx_free(g->ctx);
    g->ctx = NULL;
}

sch_schedule *gs_draw(gs_sampler *g, int k, tir_func **f) {
    tune_program p;
    tune_program_random(&g->sk, 0, &g->rng, &p);
    sch_schedule *s = tune_program_apply(g->ctx, &g->w, &g->sk, &p);
    if (!s) fail_msg("%s: program %d does not apply: %s", g->key, k, te_ctx_errmsg(g->ctx));
    *f = sch_lower(s, g->w.nargs, g->w.args, "default");
    if (!*f) fail_msg("%s: program %d does not lower: %s", g->key, k, te_ctx_errmsg(g->ctx));
    return s;
}

rt_module *gs_build(gs_sampler *g, sch_schedule *s, int k, const char *what) {
    rt_module *m = cg_build(s, g->w.nargs, g->w.args, "cuda", NULL);
    if (!m)
        fail_msg("%s: program %d: %s but does not compile: %s", g->key, k, what,
                 te_ctx_errmsg(g->ctx));
    return m;
}

int gs_check(gs_sampler *g, rt_module *m, sch_schedule *s, int k) {
    if (!rt_cuda_available()) return 0;
    int64_t bad = ops_check_module(g->ow, m, NULL, tune_rand(&g->rng));
    if (bad != 0)
        fail_msg("%s: program %d: %lld mismatches (%s)\n%s", g->key, k, (long long)bad,
                 te_ctx_errmsg(g->ctx), tune_steps_key(g->ctx, s));
    return 1;
}
