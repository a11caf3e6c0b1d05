/*
 * The operator registry: lookup by name and alias, parameter listing,
 * canonical workload keys (the same whatever order or alias the user
 * wrote), the round trip key -> rebuild -> same key for every operator,
 * the default schedule's step log replaying on a rebuilt workload, and
 * every user error with its message.
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

static void test_registry(void **state) {
    (void)state;
    assert_true(ops_count() >= 21);
    assert_null(ops_info(-1));
    assert_null(ops_info(ops_count()));
    assert_ptr_equal(ops_find("conv2d"), ops_find("conv2d_nchw"));
    assert_ptr_equal(ops_find("depthwise_conv2d"), ops_find("depthwise_conv2d_nchw"));
    assert_null(ops_find("conv3d"));
    assert_null(ops_find(NULL));
    const ops_op_info *c = ops_find("conv2d");
    assert_string_equal(c->name, "conv2d_nchw");
    assert_int_equal(c->nparams, 11);
    assert_string_equal(c->params[7].name, "stride");
    assert_false(c->params[7].required);
    assert_int_equal(c->params[7].def, 1);
    assert_true(c->params[0].required);
    for (int i = 0; i < ops_count(); i++) {
        const ops_op_info *in = ops_info(i);
        assert_non_null(in->doc);
        assert_ptr_equal(ops_find(in->name), in);
        assert_non_null(strstr(ops_names(), in->name));
        for (int p = 0; p < in->nparams; p++) assert_non_null(in->params[p].doc);
    }
}

static void test_key_canonical(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    const char *want =
        "conv2d_nchw(N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1,dilation=1,groups=1,"
        "dtype=float32)";
    const char *k1 = ops_canonical_key(ctx, "conv2d", "N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1");
    const char *k2 = ops_canonical_key(ctx, "conv2d_nchw",
                                       " pad=1 , S=3,R=3,K=64,W=56,H=56,C=64,N=1,dtype=float32");
    assert_string_equal(k1, want);
    assert_string_equal(k2, want);
    ops_workload *w = ops_build(ctx, "matmul", "K=3,N=2,M=1");
    assert_string_equal(w->key, "matmul(M=1,N=2,K=3,transpose_a=0,transpose_b=0,dtype=float32)");
    ops_workload *w2 = ops_build(ctx, "matmul", "transpose_b=0,M=1,K=3,N=2,transpose_a=0");
    assert_string_equal(w2->key, w->key);
    int64_t v = 0;
    assert_true(ops_param(w, "K", &v));
    assert_int_equal(v, 3);
    assert_false(ops_param(w, "Q", &v));
    assert_string_equal(ops_params_json(w),
                        "{\"M\":1,\"N\":2,\"K\":3,\"transpose_a\":0,\"transpose_b\":0,"
                        "\"dtype\":\"float32\"}");
    /* Different parameters, different keys. */
    assert_string_not_equal(ops_canonical_key(ctx, "matmul", "M=1,N=2,K=3,dtype=float64"), w->key);
    te_ctx_free(ctx);
}

/* One shape per operator: key -> ops_from_key -> the same key, the same
 * tensors, and the default schedule's log replays on the rebuilt one. */
static const char *const shapes[][2] = {
    {"matmul", "M=8,N=16,K=4,transpose_b=1"},
    {"batch_matmul", "B=2,M=3,N=4,K=5"},
    {"dense", "M=2,N=3,K=4"},
    {"dense_bias_gelu", "M=2,N=3,K=4"},
    {"conv2d", "N=1,C=4,H=6,W=6,K=4,R=3,S=3,pad=1,groups=2"},
    {"conv2d_nhwc", "N=1,C=4,H=6,W=6,K=4,R=3,S=3,pad=1"},
    {"conv2d_bias_relu", "N=1,C=4,H=6,W=6,K=4,R=3,S=3"},
    {"depthwise_conv2d", "N=1,C=4,H=6,W=6,R=3,S=3,stride=2,pad=1"},
    {"max_pool2d", "N=1,C=2,H=6,W=6,R=2,S=2,stride=2"},
    {"avg_pool2d", "N=1,C=2,H=6,W=6,R=3,S=3,pad=1"},
    {"global_avg_pool2d", "N=1,C=2,H=6,W=6"},
    {"softmax", "M=2,N=9"},
    {"layer_norm", "M=2,N=9"},
    {"relu", "D0=5"},
    {"gelu", "D0=5,D1=2"},
    {"sigmoid", "D0=5"},
    {"add", "D0=5,D1=3,a_bcast=2"},
    {"mul", "D0=5,D1=3,b_bcast=1"},
    {"sum", "D0=5,D1=3,axes=3"},
    {"mean", "D0=5,D1=3,axes=2,keepdims=1"},
    {"max", "D0=5,D1=3,D2=2,axes=5"},
};

static void test_key_round_trip(void **state) {
    (void)state;
    assert_int_equal(sizeof shapes / sizeof *shapes, ops_count());
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        te_ctx *a = te_ctx_new(), *b = te_ctx_new();
        ops_workload *w = ops_build(a, shapes[i][0], shapes[i][1]);
        if (!w) fprintf(stderr, "%s: %s\n", shapes[i][0], te_ctx_errmsg(a));
        assert_non_null(w);
        ops_workload *r = ops_from_key(b, w->key);
        if (!r) fprintf(stderr, "%s: %s\n", w->key, te_ctx_errmsg(b));
        assert_non_null(r);
        assert_string_equal(r->key, w->key);
        assert_ptr_equal(r->info, w->info);
        assert_true(r->flops == w->flops);
        assert_int_equal(r->nargs, w->nargs);
        for (int k = 0; k < w->nargs; k++) {
            assert_int_equal(r->args[k]->ndim, w->args[k]->ndim);
            assert_memory_equal(r->args[k]->shape, w->args[k]->shape,
                                sizeof(int64_t) * (size_t)w->args[k]->ndim);
        }
        /* The default schedule is made of logged steps: replaying them on
         * the rebuilt workload gives the same loop program. */
        sch_schedule *s = ops_default_schedule(w, "llvm");
        assert_non_null(s);
        int n = sch_num_steps(s);
        sch_step *steps = te_alloc(a, sizeof(sch_step) * (size_t)(n ? n : 1));
        for (int k = 0; k < n; k++) steps[k] = *sch_get_step(s, k);
        sch_schedule *s2 = sch_replay(b, r->nouts, r->outs, n, steps);
        if (!s2) fprintf(stderr, "%s: %s\n", w->key, te_ctx_errmsg(b));
        assert_non_null(s2);
        const char *t1 = sch_lower_text(s, w->nargs, w->args);
        const char *t2 = sch_lower_text(s2, r->nargs, r->args);
        assert_non_null(t1);
        assert_non_null(t2);
        assert_string_equal(t1, t2);
        te_ctx_free(a);
        te_ctx_free(b);
    }
}

static void test_key_non_canonical(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_from_key(ctx, "conv2d(pad=1,N=1,C=8,H=8,W=8,K=8,R=3,S=3)");
    assert_non_null(w);
    assert_string_equal(w->key, "conv2d_nchw(N=1,C=8,H=8,W=8,K=8,R=3,S=3,stride=1,pad=1,"
                                "dilation=1,groups=1,dtype=float32)");
    te_ctx_free(ctx);
}

/* Builds and expects failure with the message holding the fragments. */
#define EXPECT_ERR(op, shape, ...)                                    \
    do {                                                              \
        te_ctx *ctx_ = te_ctx_new();                                  \
        assert_null(ops_build(ctx_, (op), (shape)));                  \
        tu_assert_msg_has(te_ctx_errmsg(ctx_), __VA_ARGS__);          \
        te_ctx_free(ctx_);                                            \
    } while (0)
#define EXPECT_KEY_ERR(key, ...)                                      \
    do {                                                              \
        te_ctx *ctx_ = te_ctx_new();                                  \
        assert_null(ops_from_key(ctx_, (key)));                       \
        tu_assert_msg_has(te_ctx_errmsg(ctx_), __VA_ARGS__);          \
        te_ctx_free(ctx_);                                            \
    } while (0)

static void test_errors(void **state) {
    (void)state;
    EXPECT_ERR("conv3d", "N=1", "unknown operator 'conv3d'", "known operators", "matmul",
               "conv2d_nchw", "softmax", "layer_norm");
    EXPECT_ERR("matmul", "M=1,N=2,K=3,Q=4", "matmul", "no parameter 'Q'", "M, N, K");
    EXPECT_ERR("conv2d", "N=1,C=3,H=8,W=8,R=3,S=3", "conv2d_nchw", "missing required parameter 'K'");
    EXPECT_ERR("matmul", "M=0,N=2,K=3", "matmul", "'M' = 0", "positive extent");
    EXPECT_ERR("conv2d", "N=1,C=3,H=-8,W=8,K=2,R=3,S=3", "'H' = -8", "positive extent");
    EXPECT_ERR("conv2d", "N=1,C=3,H=8,W=8,K=2,R=3,S=3,pad=-1", "'pad' = -1", ">= 0");
    EXPECT_ERR("matmul", "M=1,N=2,K=3,transpose_a=2", "'transpose_a' = 2", "0 or 1");
    EXPECT_ERR("sum", "D0=4,axes=16", "'axes' = 16", "[1, 15]");
    EXPECT_ERR("sum", "D0=4", "missing required parameter 'axes'");
    EXPECT_ERR("matmul", "M=1,N", "malformed shape string", "item 'N' is not NAME=VALUE");
    EXPECT_ERR("matmul", "M=1,,N=2,K=3", "malformed shape string", "not NAME=VALUE");
    EXPECT_ERR("matmul", "M=1x,N=2,K=3", "malformed shape string", "value '1x' of 'M'",
               "not an integer");
    EXPECT_ERR("matmul", "M=,N=2,K=3", "malformed shape string", "of 'M'", "not an integer");
    EXPECT_ERR("matmul", "=1,N=2,K=3", "malformed shape string", "no name");
    EXPECT_ERR("matmul", "M=1,M=2,N=2,K=3", "'M' given twice");
    EXPECT_ERR("matmul", "M=1,N=2,K=3,dtype=int8", "unsupported dtype 'int8'");
    EXPECT_ERR("conv2d", "N=1,C=3,H=4,W=8,K=2,R=7,S=3,pad=1", "conv2d_nchw", "kernel extent 7",
               "larger than the padded input 6", "H=4", "pad=1");
    EXPECT_ERR("conv2d_nhwc", "N=1,C=3,H=8,W=4,K=2,R=3,S=3,dilation=2", "conv2d_nhwc",
               "along W", "dilated: 5", "padded input 4");
    EXPECT_ERR("depthwise_conv2d", "N=1,C=3,H=8,W=2,R=3,S=3", "depthwise_conv2d_nchw",
               "larger than the padded input");
    EXPECT_ERR("max_pool2d", "N=1,C=3,H=2,W=8,R=3,S=3", "max_pool2d", "larger than the padded input");
    EXPECT_ERR("avg_pool2d", "N=1,C=3,H=8,W=8,R=2,S=2,pad=2", "avg_pool2d", "pad=2",
               "smaller than the window");
    EXPECT_ERR("conv2d", "N=1,C=6,H=8,W=8,K=8,R=3,S=3,groups=4", "conv2d_nchw",
               "input channels C=6", "not divisible by groups=4");
    EXPECT_ERR("conv2d_bias_relu", "N=1,C=8,H=8,W=8,K=6,R=3,S=3,groups=4", "conv2d_bias_relu",
               "output channels K=6", "not divisible by groups=4");
    EXPECT_KEY_ERR("matmul", "malformed workload key 'matmul'", "OP(NAME=VALUE");
    EXPECT_KEY_ERR("matmul(M=1,N=2,K=3", "malformed workload key");
    EXPECT_KEY_ERR("matmul(M=1,N=2,K=3)x", "malformed workload key");
    EXPECT_KEY_ERR("(M=1)", "malformed workload key");
    EXPECT_KEY_ERR("mat mul(M=1)", "malformed workload key", "bad operator name");
    EXPECT_KEY_ERR("matmul((M=1))", "malformed workload key");
    EXPECT_KEY_ERR("matmul(M=1,N=2,K=3,Z=1)", "no parameter 'Z'");
    EXPECT_KEY_ERR("nosuch(M=1)", "unknown operator 'nosuch'");
    te_ctx *ctx = te_ctx_new();
    assert_null(ops_from_key(ctx, NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "malformed workload key");
    /* Targets. */
    ops_workload *w = ops_build(ctx, "relu", "D0=4");
    assert_non_null(ops_default_schedule(w, "cuda"));
    assert_non_null(ops_default_schedule(w, "cuda -arch=sm_80"));
    assert_null(ops_default_schedule(w, "opencl"));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "unknown target 'opencl'");
    assert_non_null(ops_default_schedule(w, "llvm -mcpu=generic"));
    te_ctx_free(ctx);
}

/* Canonical keys of a suite file's lines. */
static int suite_keys(const char *path, te_ctx *ctx, const char **keys, int cap) {
    tu_suite_line l[256];
    int n = tu_read_suite(path, l, cap < 256 ? cap : 256);
    for (int i = 0; i < n; i++) {
        keys[i] = ops_canonical_key(ctx, l[i].op, l[i].shape);
        if (!keys[i]) fprintf(stderr, "%s: %s: %s\n", path, l[i].name, te_ctx_errmsg(ctx));
        assert_non_null(keys[i]);
    }
    return n;
}

/* The cost model's corpus (bench/corpus.tsv) is training data for
 * workloads it does not contain: every line builds, no shape twice, none
 * of the benchmark suite's. */
static void test_corpus_disjoint_from_suite(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    const char *corpus[256], *suite[64];
    int nc = suite_keys("bench/corpus.tsv", ctx, corpus, 256);
    int ns = suite_keys("bench/workloads.tsv", ctx, suite, 64);
    assert_int_equal(nc, 180);
    assert_true(ns >= 10);
    for (int i = 0; i < nc; i++) {
        for (int j = 0; j < i; j++) assert_string_not_equal(corpus[i], corpus[j]);
        for (int j = 0; j < ns; j++) assert_string_not_equal(corpus[i], suite[j]);
    }
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_key_canonical),
        cmocka_unit_test(test_key_round_trip),
        cmocka_unit_test(test_key_non_canonical),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_corpus_disjoint_from_suite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
