/*
 * tests/test_lower_constants.c — constant arguments and pre-computed
 * stages (sch_lower_constants, cg_build_options.constant_args,
 * rt_prepare): a convolution whose packed weights are computed once gives
 * the reference's output, also after its weights change and it is
 * prepared again; a computation without such a stage keeps its plain
 * signature; every error a caller can reach says what is wrong.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "loom/ops.h"
#include "loom/tuning_db.h"

/* Random inputs, poisoned output, one prepared call, compared with the
 * reference; returns the mismatches. */
static int64_t prepared_matches(const ops_workload *w, rt_prepared *p, DLTensor **t) {
    DLTensor *y = t[w->ninputs];
    tu_poison_f32(y);
    assert_int_equal(rt_prepared_call(p, w->nargs, t), 0);
    int64_t n = rt_tensor_numel(y);
    double *want = malloc(sizeof(double) * (size_t)n);
    assert_int_equal(ops_reference(w, t, &want), 0);
    double rtol, atol;
    ops_tolerance(w, &rtol, &atol);
    int64_t bad = tu_compare_f32(w->key, y->data, want, n, rtol, atol);
    free(want);
    return bad;
}

static void check_conv(const char *target) {
    uint64_t rng = tu_seed();
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "conv2d", "N=1,C=32,H=14,W=14,K=32,R=3,S=3,pad=1");
    assert_non_null(w);
    assert_int_equal(w->constant_args, 0x2); /* the weights */
    sch_schedule *s = ops_default_schedule(w, "llvm");
    assert_non_null(s);
    /* The packed weights are the one pre-computed stage; the padded input
     * reads X, which changes per call, and stays in the main function. */
    sch_split_lowering sp;
    assert_int_equal(sch_lower_constants(s, w->nargs, w->args, w->constant_args, "f", &sp), 0);
    assert_int_equal(sp.nstages, 1);
    assert_non_null(sp.precompute);
    assert_string_equal(sp.precompute->name, "f__precompute");
    assert_string_equal(sp.main->name, "f");
    cg_build_options o;
    memset(&o, 0, sizeof o);
    o.constant_args = w->constant_args;
    rt_module *m = cg_build(s, w->nargs, w->args, target, &o);
    if (!m) fprintf(stderr, "%s\n", te_ctx_errmsg(ctx));
    assert_non_null(m);
    int np;
    const rt_param *pp = rt_module_func_params(m, "default", &np);
    assert_non_null(pp);
    assert_int_equal(np, w->nargs + 1);
    assert_non_null(rt_module_func_params(m, "default__precompute", &np));
    DLTensor *t[3];
    for (int i = 0; i < w->nargs; i++)
        t[i] = tu_rand_f32(&rng, w->args[i]->ndim, w->args[i]->shape);
    rt_prepared *p = rt_prepare(m, "default", w->nargs, t);
    if (!p) fprintf(stderr, "%s\n", rt_last_error());
    assert_non_null(p);
    assert_int_equal(prepared_matches(w, p, t), 0);
    /* New input, same weights: the pre-computed copy still serves. */
    rt_tensor_free(t[0]);
    t[0] = tu_rand_f32(&rng, w->args[0]->ndim, w->args[0]->shape);
    assert_int_equal(prepared_matches(w, p, t), 0);
    /* New weight values in place: the output keeps the old weights until
     * prepared again (the contract; it shows the main function does not
     * repack), and is right after it. The mismatches printed here are
     * expected. */
    DLTensor *fresh = tu_rand_f32(&rng, w->args[1]->ndim, w->args[1]->shape);
    memcpy(t[1]->data, fresh->data, rt_tensor_nbytes(fresh));
    rt_tensor_free(fresh);
    assert_true(prepared_matches(w, p, t) > 0);
    rt_prepared_free(p);
    p = rt_prepare(m, "default", w->nargs, t);
    assert_non_null(p);
    assert_int_equal(prepared_matches(w, p, t), 0);
    /* Another weight tensor: refused, not silently ignored. */
    DLTensor *other = tu_rand_f32(&rng, w->args[1]->ndim, w->args[1]->shape);
    DLTensor *t2[3] = {t[0], other, t[2]};
    assert_int_equal(rt_prepared_call(p, w->nargs, t2), -1);
    tu_assert_msg_has(rt_last_error(), "argument 1 is constant", "prepare again");
    assert_int_equal(rt_prepared_call(p, 2, t), -1);
    tu_assert_msg_has(rt_last_error(), "prepared with 3 arguments", "called with 2");
    /* Called directly, the function wants the pre-computed tensor too. */
    assert_int_equal(rt_call(m, "default", w->nargs, t), -1);
    rt_tensor_free(other);
    rt_prepared_free(p);
    for (int i = 0; i < w->nargs; i++) rt_tensor_free(t[i]);
    rt_module_free(m);
    te_ctx_free(ctx);
}

static void test_conv_llvm(void **st) {
    (void)st;
    check_conv("llvm");
}

static void test_conv_c(void **st) {
    (void)st;
    check_conv("c");
}

/* Nothing to pre-compute: the plain function, and rt_prepare just calls it. */
static void test_nothing_to_precompute(void **st) {
    (void)st;
    uint64_t rng = tu_seed() ^ 0x77;
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "add", "D0=37,D1=5");
    assert_non_null(w);
    sch_schedule *s = ops_default_schedule(w, "llvm");
    cg_build_options o;
    memset(&o, 0, sizeof o);
    o.constant_args = 0x2;
    rt_module *m = cg_build(s, w->nargs, w->args, "llvm", &o);
    assert_non_null(m);
    int np;
    assert_non_null(rt_module_func_params(m, "default", &np));
    assert_int_equal(np, w->nargs);
    assert_null(rt_module_func_params(m, "default__precompute", &np));
    DLTensor *t[3];
    for (int i = 0; i < w->nargs; i++)
        t[i] = tu_rand_f32(&rng, w->args[i]->ndim, w->args[i]->shape);
    rt_prepared *p = rt_prepare(m, "default", w->nargs, t);
    assert_non_null(p);
    assert_int_equal(prepared_matches(w, p, t), 0);
    rt_prepared_free(p);
    assert_null(rt_prepare(m, "nosuch", w->nargs, t));
    tu_assert_msg_has(rt_last_error(), "no function 'nosuch'");
    assert_null(rt_prepare(m, "default", w->nargs + 1, t));
    tu_assert_msg_has(rt_last_error(), "takes 3 tensors", "called with 4");
    assert_null(rt_prepare(NULL, "default", w->nargs, t));
    tu_assert_msg_has(rt_last_error(), "module and name must be non-NULL");
    assert_int_equal(rt_prepared_call(NULL, w->nargs, t), -1);
    tu_assert_msg_has(rt_last_error(), "prepared function is NULL");
    for (int i = 0; i < w->nargs; i++) rt_tensor_free(t[i]);
    rt_module_free(m);
    te_ctx_free(ctx);
}

/* A stored record built with the workload's constant weights
 * (tdb_apply_best_with): the packed copy is pre-computed, the output right. */
static void test_apply_best_with_constants(void **st) {
    (void)st;
    uint64_t rng = tu_seed() ^ 0x99;
    char path[256];
    snprintf(path, sizeof path, "/tmp/loom_constants_%d.db", (int)getpid());
    unlink(path);
    tdb_db *db = tdb_open(path, NULL, NULL);
    assert_non_null(db);
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "conv2d", "N=1,C=16,H=10,W=10,K=16,R=3,S=3,pad=1");
    assert_non_null(w);
    char *steps = tdb_schedule_to_json(ops_default_schedule(w, "llvm"));
    assert_non_null(steps);
    char *target = tdb_host_target();
    double lat = 1e-4;
    assert_true(tdb_commit_workload_key(db, w->key) > 0);
    tdb_record_in in = {.workload_key = w->key, .target = target, .steps_json = steps,
                        .nlatencies = 1, .latencies = &lat};
    assert_true(tdb_commit_record(db, &in) > 0);
    cg_build_options o;
    memset(&o, 0, sizeof o);
    o.constant_args = w->constant_args;
    tdb_apply_info info;
    rt_module *m = tdb_apply_best_with(db, ctx, w->key, target, &o, &info);
    assert_non_null(m);
    assert_false(info.fallback);
    int np;
    assert_non_null(rt_module_func_params(m, "default__precompute", &np));
    const ops_workload *aw = info.workload;
    DLTensor *t[3];
    for (int i = 0; i < aw->nargs; i++)
        t[i] = tu_rand_f32(&rng, aw->args[i]->ndim, aw->args[i]->shape);
    rt_prepared *p = rt_prepare(m, "default", aw->nargs, t);
    assert_non_null(p);
    assert_int_equal(prepared_matches(aw, p, t), 0);
    rt_prepared_free(p);
    for (int i = 0; i < aw->nargs; i++) rt_tensor_free(t[i]);
    rt_module_free(m);
    free(steps);
    free(target);
    te_ctx_free(ctx);
    tdb_close(db);
    unlink(path);
}

static void test_errors(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "conv2d", "N=1,C=8,H=8,W=8,K=16,R=3,S=3,pad=1");
    assert_non_null(w);
    sch_schedule *s = ops_default_schedule(w, "llvm");
    sch_split_lowering sp;
    assert_int_equal(sch_lower_constants(s, w->nargs, w->args, 0x4, "f", &sp), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "argument 2 ('O')", "only inputs");
    assert_int_equal(sch_lower_constants(s, w->nargs, w->args, 0x10, "f", &sp), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "marks argument 4", "there are 3 arguments");
    assert_int_equal(sch_lower_constants(s, w->nargs, NULL, 0x2, "f", &sp), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "3 arguments and no argument array");
    cg_build_options o;
    memset(&o, 0, sizeof o);
    o.constant_args = 0x2;
    sch_schedule *g = ops_default_schedule(w, "cuda");
    assert_non_null(g);
    assert_null(cg_build(g, w->nargs, w->args, "cuda", &o));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "constant arguments", "not supported on target 'cuda'");
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_llvm),
        cmocka_unit_test(test_conv_c),
        cmocka_unit_test(test_nothing_to_precompute),
        cmocka_unit_test(test_apply_best_with_constants),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
