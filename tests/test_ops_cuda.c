/*
 * The operator library's default CUDA schedules: every operator on several
 * shapes (odd sizes included) scheduled with ops_default_schedule(w,
 * "cuda"), lowered through the GPU passes and verifier, turned into CUDA C
 * and compiled with NVRTC (everywhere NVRTC exists); the source checked
 * for the expected features (kernels, shared memory with its barriers,
 * vthread register tiles). Where a GPU is present, each module runs on
 * kDLCUDA tensors with NaN-poisoned outputs against the double reference
 * (ops_check_module); elsewhere the run part is left out (gpu_skip.h).
 * Also: every workload of bench/workloads.tsv passes the verifier, the
 * -arch option, the step log replaying on a rebuilt workload.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_skip.h"
#include "testutil.h"

typedef struct {
    const char *op, *shape;
    const char *needle; /* a further string the CUDA source must hold, or NULL */
} cuda_case;

static const cuda_case cases[] = {
    {"matmul", "M=128,N=128,K=64", "*(const float4 *)(A +"},
    {"matmul", "M=37,N=45,K=29", "A_shared"},
    {"matmul", "M=5,N=3,K=7,transpose_a=1", NULL},
    {"matmul", "M=19,N=70,K=13,transpose_b=1", "B_shared"},
    {"matmul", "M=1,N=17,K=9,transpose_a=1,transpose_b=1", NULL},
    {"matmul", "M=100,N=130,K=70", "C_local"},
    {"batch_matmul", "B=3,M=13,N=33,K=11", "blockIdx.z"},
    {"batch_matmul", "B=2,M=64,N=64,K=16,transpose_a=1,transpose_b=1", "float4"},
    {"dense", "M=7,N=37,K=19", "__shared__"},
    {"dense", "M=16,N=32,K=8,bias=0", NULL},
    {"dense_bias_gelu", "M=9,N=21,K=17", "erf"},
    {"conv2d", "N=1,C=8,H=12,W=12,K=16,R=3,S=3,stride=1,pad=1", "W_shared"},
    {"conv2d_nchw", "N=2,C=3,H=13,W=11,K=5,R=5,S=3,stride=2,pad=2", NULL},
    {"conv2d", "N=1,C=6,H=9,W=10,K=4,R=3,S=3,pad=2,dilation=2,groups=2", NULL},
    {"conv2d", "N=1,C=16,H=7,W=7,K=24,R=1,S=1", NULL},
    /* Both operands staged (NCHW, no groups): a strided 7x7 like
     * ResNet-50's stem, and an unpadded 1x1 (the input itself staged). */
    {"conv2d", "N=1,C=3,H=40,W=40,K=16,R=7,S=7,stride=2,pad=3", "Pad_shared"},
    {"conv2d", "N=1,C=32,H=28,W=28,K=32,R=1,S=1", "X_shared"},
    {"conv2d", "N=1,C=19,H=15,W=17,K=37,R=3,S=3,stride=1,pad=1", "O_local"},
    {"conv2d_nhwc", "N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1", "W_shared"},
    {"conv2d_nhwc", "N=2,C=6,H=9,W=7,K=9,R=3,S=2,stride=2,pad=1,groups=3", NULL},
    {"conv2d_bias_relu", "N=1,C=5,H=11,W=9,K=7,R=3,S=3,pad=1", "bias"},
    {"depthwise_conv2d", "N=1,C=8,H=14,W=14,R=3,S=3,pad=1", NULL},
    {"depthwise_conv2d_nchw", "N=2,C=5,H=11,W=9,R=5,S=5,stride=2,pad=2,dilation=1", NULL},
    {"max_pool2d", "N=1,C=4,H=12,W=12,R=2,S=2,stride=2", NULL},
    {"max_pool2d", "N=2,C=3,H=11,W=9,R=3,S=3,stride=2,pad=1", NULL},
    {"avg_pool2d", "N=1,C=4,H=10,W=13,R=3,S=3,stride=1,pad=1", NULL},
    {"avg_pool2d", "N=1,C=3,H=40,W=40,R=2,S=2,stride=2", NULL},
    {"global_avg_pool2d", "N=2,C=19,H=7,W=5", NULL},
    {"softmax", "M=16,N=64", "default_kernel2"},
    {"softmax", "M=5,N=37", NULL},
    {"layer_norm", "M=8,N=48", "default_kernel2"},
    {"layer_norm", "M=3,N=29", NULL},
    {"relu", "D0=3,D1=5,D2=7,D3=11", "blockIdx.x"},
    {"gelu", "D0=1000", "erf"},
    {"sigmoid", "D0=17,D1=33", NULL},
    {"add", "D0=4,D1=6,D2=5", NULL},
    {"add", "D0=3,D1=4,D2=5,D3=6,b_bcast=5", NULL},
    {"mul", "D0=7,D1=9,a_bcast=1,b_bcast=2", NULL},
    {"mul", "D0=2,D1=3,D2=4,D3=37,a_bcast=8", NULL},
    {"sum", "D0=4,D1=5,D2=6,D3=7,axes=6", NULL},
    {"sum", "D0=8,D1=33,axes=2", NULL},
    {"sum", "D0=3,D1=4,D2=5,D3=6,axes=15", NULL},
    {"mean", "D0=4,D1=5,D2=6,D3=7,axes=1,keepdims=1", NULL},
    {"mean", "D0=6,D1=19,axes=2", NULL},
    {"max", "D0=3,D1=10,D2=4,D3=33,axes=10", NULL},
    {"max", "D0=9,D1=31,axes=1", NULL},
};
#define NCASES ((int)(sizeof cases / sizeof *cases))

/* Builds w with its default CUDA schedule for `target`; fails the test
 * with the reason when that does not work. */
static rt_module *build_cuda(ops_workload *w, const char *target) {
    te_ctx *ctx = w->args[0]->ctx;
    sch_schedule *s = ops_default_schedule(w, target);
    if (!s) fprintf(stderr, "%s: %s\n", w->key, te_ctx_errmsg(ctx));
    assert_non_null(s);
    rt_module *m = cg_build(s, w->nargs, w->args, target, NULL);
    if (!m) fprintf(stderr, "%s (%s): %s\n", w->key, target, te_ctx_errmsg(ctx));
    assert_non_null(m);
    assert_string_equal(rt_module_kind(m), "cuda");
    return m;
}

static void expect_in(const char *key, const char *src, const char *needle) {
    if (!strstr(src, needle)) fprintf(stderr, "%s: the CUDA source lacks '%s':\n%s\n", key, needle, src);
    assert_non_null(strstr(src, needle));
}

/* The features every default CUDA schedule's source has. */
static void check_source(const ops_workload *w, const char *src, const char *needle) {
    expect_in(w->key, src, "extern \"C\" __global__");
    expect_in(w->key, src, "threadIdx.x");
    /* Shared memory is only ever read after a barrier. */
    if (strstr(src, "__shared__")) expect_in(w->key, src, "__syncthreads();");
    /* The GEMM and conv schedules stage operands in shared memory and
     * hold a register tile across vthreads. */
    const char *op = w->op;
    bool gemm = strstr(op, "matmul") || strstr(op, "dense");
    if (gemm || (strstr(op, "conv2d") && !strstr(op, "depthwise"))) {
        /* The accumulators: a cache_write ("C_local") or the product
         * stage a fused tail reads ("C" of dense, "O" of conv2d). */
        bool acc = strstr(src, "_local[") || strstr(src, "float C[") || strstr(src, "float O[");
        if (!acc) fprintf(stderr, "%s: no local accumulator array:\n%s\n", w->key, src);
        assert_true(acc);
    }
    if (needle) expect_in(w->key, src, needle);
}

static void test_every_op_cuda(void **state) {
    (void)state;
    tu_require_nvrtc();
    bool gpu = rt_cuda_available();
    char reason[512] = "";
    if (!gpu) snprintf(reason, sizeof reason, "%s", rt_last_error());
    int64_t bad = 0;
    for (int i = 0; i < NCASES; i++) {
        te_ctx *ctx = te_ctx_new();
        ops_workload *w = ops_build(ctx, cases[i].op, cases[i].shape);
        if (!w) fprintf(stderr, "%s(%s): %s\n", cases[i].op, cases[i].shape, te_ctx_errmsg(ctx));
        assert_non_null(w);
        rt_module *m = build_cuda(w, "cuda");
        check_source(w, rt_module_get_text(m, "source"), cases[i].needle);
        if (gpu) {
            int64_t nbad = ops_check_module(w, m, NULL, tu_seed() + (uint64_t)i);
            if (nbad) {
                fprintf(stderr, "%s: %lld mismatches (%s)\n%s\n", w->key, (long long)nbad,
                        nbad < 0 ? te_ctx_errmsg(ctx) : "",
                        rt_module_get_text(m, "source"));
                bad++;
            }
        }
        rt_module_free(m);
        te_ctx_free(ctx);
    }
    assert_int_equal(bad, 0);
    /* Every operator's CUDA source was generated and compiled above. */
    if (!gpu) tu_skip_part("the GPU runs of the operators", reason);
}

/* Every public benchmark workload passes the GPU verifier and compiles. */
static void test_bench_workloads(void **state) {
    (void)state;
    tu_require_nvrtc();
    tu_suite_line l[64];
    int n = tu_read_suite("bench/workloads.tsv", l, 64);
    for (int i = 0; i < n; i++) {
        te_ctx *ctx = te_ctx_new();
        ops_workload *w = ops_build(ctx, l[i].op, l[i].shape);
        if (!w) fprintf(stderr, "%s: %s\n", l[i].name, te_ctx_errmsg(ctx));
        assert_non_null(w);
        rt_module *m = build_cuda(w, "cuda -arch=sm_90");
        check_source(w, rt_module_get_text(m, "source"), "__shared__");
        rt_module_free(m);
        te_ctx_free(ctx);
    }
    assert_true(n >= 10);
}

/* "cuda -arch=sm_XX" reaches NVRTC; unknown targets still fail. */
static void test_targets(void **state) {
    (void)state;
    tu_require_nvrtc();
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "matmul", "M=64,N=64,K=64");
    assert_non_null(w);
    rt_module *m = build_cuda(w, "cuda -arch=sm_80");
    assert_string_equal(rt_module_get_text(m, "arch"), "sm_80");
    assert_non_null(strstr(rt_module_get_text(m, "ptx"), ".target sm_80"));
    /* Without a GPU, checking a CUDA module fails with the driver's reason. */
    if (!rt_cuda_available()) {
        assert_int_equal(ops_check_module(w, m, NULL, 1), -1);
        tu_assert_msg_has(te_ctx_errmsg(ctx), "matmul", "device tensor 'A'", "CUDA driver");
    }
    rt_module_free(m);
    assert_null(ops_default_schedule(w, "opencl"));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "matmul", "unknown target 'opencl'", "cuda");
    assert_null(ops_default_schedule(w, "cudax"));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "unknown target 'cudax'");
    te_ctx_free(ctx);
}

/* The schedule's step log replays on the workload rebuilt from its key
 * (what the tuner's workers and the tuning database do) and gives the
 * same CUDA source. */
static void test_replay(void **state) {
    (void)state;
    tu_require_nvrtc();
    static const char *keys[][2] = {
        {"matmul", "M=70,N=33,K=20,transpose_b=1"},
        {"conv2d_bias_relu", "N=1,C=8,H=9,W=9,K=12,R=3,S=3,pad=1"},
        {"softmax", "M=7,N=19"},
        {"mean", "D0=5,D1=6,axes=2"},
    };
    for (int i = 0; i < 4; i++) {
        te_ctx *c1 = te_ctx_new(), *c2 = te_ctx_new();
        ops_workload *w1 = ops_build(c1, keys[i][0], keys[i][1]);
        assert_non_null(w1);
        ops_workload *w2 = ops_from_key(c2, w1->key);
        assert_non_null(w2);
        sch_schedule *s1 = ops_default_schedule(w1, "cuda");
        assert_non_null(s1);
        int n = sch_num_steps(s1);
        sch_step *steps = malloc(sizeof(sch_step) * (size_t)n);
        for (int k = 0; k < n; k++) steps[k] = *sch_get_step(s1, k);
        sch_schedule *s2 = sch_replay(c2, w2->nouts, w2->outs, n, steps);
        if (!s2) fprintf(stderr, "%s: %s\n", w1->key, te_ctx_errmsg(c2));
        assert_non_null(s2);
        rt_module *m1 = cg_build(s1, w1->nargs, w1->args, "cuda", NULL);
        rt_module *m2 = cg_build(s2, w2->nargs, w2->args, "cuda", NULL);
        assert_non_null(m1);
        assert_non_null(m2);
        assert_string_equal(rt_module_get_text(m1, "source"), rt_module_get_text(m2, "source"));
        rt_module_free(m1);
        rt_module_free(m2);
        free(steps);
        te_ctx_free(c1);
        te_ctx_free(c2);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_replay),
        cmocka_unit_test(test_bench_workloads),
        cmocka_unit_test(test_every_op_cuda),
    };
    return tu_run_group(tests);
}
