/*
 * tests/test_cuda_xreduce.c — cross-thread reduction (a reduce axis bound
 * to threadIdx.x): lowering to ALLREDUCE, CUDA C with warp shuffles and
 * barriers compiled by NVRTC for several extents and block shapes (the
 * warp, segment and shared-memory tree forms of the expansion), runs
 * against the double reference on a GPU (left out without one, see
 * gpu_skip.h), and every rule's error message.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda_harness.h"
#include "gpu_skip.h"

/* C[r] = op_k A[r, k]; p[0] = op, p[1] = R, p[2] = K. */
static void ref_rows(const sched_case *c, DLTensor *const *ins, double *out) {
    const float *a = ins[0]->data;
    int64_t R = c->p[1], K = c->p[2];
    for (int64_t r = 0; r < R; r++) {
        double acc = c->p[0] == TE_REDUCE_SUM    ? 0
                     : c->p[0] == TE_REDUCE_PROD ? 1
                     : c->p[0] == TE_REDUCE_MIN  ? INFINITY
                                                 : -INFINITY;
        for (int64_t k = 0; k < K; k++) {
            double x = a[r * K + k];
            switch (c->p[0]) {
            case TE_REDUCE_SUM: acc += x; break;
            case TE_REDUCE_PROD: acc *= x; break;
            case TE_REDUCE_MIN: acc = x < acc ? x : acc; break;
            default: acc = x > acc ? x : acc; break;
            }
        }
        out[r] = acc;
    }
}

static sched_case rows_case(te_reduce_op op, int64_t R, int64_t K) {
    sched_case c;
    memset(&c, 0, sizeof c);
    c.ctx = te_ctx_new();
    te_tensor *A = te_placeholder(c.ctx, "A", TE_FLOAT32, TE_SHAPE(R, K));
    te_expr *r = te_axis(c.ctx, "r", R), *k = te_reduce_axis(c.ctx, "k", K);
    te_expr *body = te_reduce_n(op, te_read(A, r, k), 1, &k);
    c.out = te_compute(c.ctx, "C", TE_AXES(r), body);
    assert_non_null(c.out);
    c.nin = 1;
    c.in[0] = A;
    c.ax[0] = r;
    c.rax[0] = k;
    c.reference = ref_rows;
    c.p[0] = op;
    c.p[1] = R;
    c.p[2] = K;
    return c;
}

/* k split by T (inner on threadIdx.x, outer serial); rows: `ty` per block
 * on threadIdx.y (1: one row per block), the rest on blockIdx.x. With
 * outer_bound, k is split into T parts and the outer part is bound. */
static sch_schedule *rows_sched(sched_case *c, int64_t T, int64_t ty, bool outer_bound) {
    sch_schedule *s = sch_create(c->ctx, 1, &c->out);
    assert_non_null(s);
    te_expr *ko, *ki, *ro, *ri;
    if (outer_bound) {
        assert_int_equal(sch_split_nparts(s, c->out, c->rax[0], T, &ko, &ki), 0);
        assert_int_equal(sch_bind(s, c->out, ko, "threadIdx.x"), 0);
    } else {
        assert_int_equal(sch_split(s, c->out, c->rax[0], T, &ko, &ki), 0);
        assert_int_equal(sch_bind(s, c->out, ki, "threadIdx.x"), 0);
    }
    if (ty > 1) {
        assert_int_equal(sch_split(s, c->out, c->ax[0], ty, &ro, &ri), 0);
        assert_int_equal(sch_bind(s, c->out, ro, "blockIdx.x"), 0);
        assert_int_equal(sch_bind(s, c->out, ri, "threadIdx.y"), 0);
    } else {
        assert_int_equal(sch_bind(s, c->out, c->ax[0], "blockIdx.x"), 0);
    }
    return s;
}

/* Builds for cuda (NVRTC), checks the source, runs where a GPU exists. */
static void check(sched_case *c, sch_schedule *s, const char *const *needles) {
    rt_module *m = ch_build(c, s, "cuda");
    assert_non_null(m);
    const char *src = rt_module_get_text(m, "source");
    assert_non_null(src);
    assert_non_null(strstr(rt_module_get_text(m, "ptx"), "shfl.sync.down"));
    for (int i = 0; needles && needles[i]; i++) {
        if (!strstr(src, needles[i])) fprintf(stderr, "source lacks '%s':\n%s\n", needles[i], src);
        assert_non_null(strstr(src, needles[i]));
    }
    int64_t bad = ch_run(c, m);
    rt_module_free(m);
    te_ctx_free(c->ctx);
    if (bad == -2) {
        /* The cross-thread reduction was generated and compiled above. */
        tu_skip_part("the GPU run", rt_last_error());
        return;
    }
    assert_int_equal(bad, 0);
}

static const char *const warp_needles[] = {"__shfl_down_sync", "__syncthreads();", "__shared__",
                                           "threadIdx.x", NULL};

static void test_sum_32(void **state) {
    (void)state;
    tu_require_nvrtc();
    sched_case c = rows_case(TE_REDUCE_SUM, 5, 32);
    const char *needles[] = {"__shfl_down_sync", "allreduce.sum", NULL};
    check(&c, rows_sched(&c, 32, 1, false), needles);
}

static void test_sum_100_partial_warp(void **state) {
    (void)state;
    tu_require_nvrtc();
    /* 100 threads: 3 full warps and one of 4 lanes (masked). */
    sched_case c = rows_case(TE_REDUCE_SUM, 3, 100);
    const char *needles[] = {"__shfl_down_sync", "min(32, 100 -", NULL};
    check(&c, rows_sched(&c, 100, 1, false), needles);
}

static void test_max_1000(void **state) {
    (void)state;
    tu_require_nvrtc();
    sched_case c = rows_case(TE_REDUCE_MAX, 4, 1000);
    check(&c, rows_sched(&c, 1000, 1, false), warp_needles);
}

static void test_sum_1000_by_256_guarded(void **state) {
    (void)state;
    tu_require_nvrtc();
    /* 1000 = 3 * 256 + 232: the serial part has a guard, the partials of
     * the threads past the end stay the identity. */
    sched_case c = rows_case(TE_REDUCE_SUM, 4, 1000);
    check(&c, rows_sched(&c, 256, 1, false), warp_needles);
}

static void test_sum_4096(void **state) {
    (void)state;
    tu_require_nvrtc();
    sched_case c = rows_case(TE_REDUCE_SUM, 2, 4096);
    check(&c, rows_sched(&c, 512, 1, false), warp_needles);
}

static void test_min_outer_part_bound(void **state) {
    (void)state;
    tu_require_nvrtc();
    sched_case c = rows_case(TE_REDUCE_MIN, 3, 4096);
    check(&c, rows_sched(&c, 128, 1, true), warp_needles);
}

static void test_rows_on_threadidx_y(void **state) {
    (void)state;
    tu_require_nvrtc();
    /* Several rows per block: each row is its own allreduce. */
    sched_case c = rows_case(TE_REDUCE_SUM, 10, 300);
    const char *warp[] = {"threadIdx.y", "__shfl_down_sync", NULL};
    check(&c, rows_sched(&c, 64, 4, false), warp);
    c = rows_case(TE_REDUCE_MAX, 12, 70);
    const char *seg[] = {"threadIdx.y", "__shfl_down_sync", ", 8);", NULL};
    check(&c, rows_sched(&c, 8, 4, false), seg);
    c = rows_case(TE_REDUCE_SUM, 7, 9);
    const char *seg_partial[] = {"min(32, 12 -", NULL};
    check(&c, rows_sched(&c, 4, 3, false), seg_partial);
}

static void test_rows_tree(void **state) {
    (void)state;
    tu_require_nvrtc();
    /* 100 threads per row, 2 rows per block: rows straddle warps, so the
     * shared-memory tree; no shuffles needed there, but the PTX check of
     * check() wants them: use the source check only. */
    sched_case c = rows_case(TE_REDUCE_SUM, 6, 1000);
    sch_schedule *s = rows_sched(&c, 100, 2, false);
    rt_module *m = ch_build(&c, s, "cuda");
    assert_non_null(m);
    const char *src = rt_module_get_text(m, "source");
    assert_non_null(strstr(src, "shared-memory tree"));
    assert_non_null(strstr(src, "__syncthreads();"));
    int64_t bad = ch_run(&c, m);
    rt_module_free(m);
    te_ctx_free(c.ctx);
    if (bad == -2) {
        tu_skip_part("the GPU run", rt_last_error());
        return;
    }
    assert_int_equal(bad, 0);
}

static void test_lowered_text(void **state) {
    (void)state;
    sched_case c = rows_case(TE_REDUCE_SUM, 4, 100);
    sch_schedule *s = rows_sched(&c, 32, 1, false);
    te_tensor *args[2] = {c.in[0], c.out};
    const char *txt = sch_lower_text(s, 2, args);
    assert_non_null(txt);
    tu_assert_msg_has(txt, "allreduce.sum(", "threadIdx.x extent 32", "C.red", "C.v");
    te_ctx_free(c.ctx);
}

static void test_cpu_targets_reject(void **state) {
    (void)state;
    const char *targets[] = {"llvm", "c"};
    for (int i = 0; i < 2; i++) {
        sched_case c = rows_case(TE_REDUCE_SUM, 4, 64);
        sch_schedule *s = rows_sched(&c, 32, 1, false);
        te_tensor *args[2] = {c.in[0], c.out};
        rt_module *m = cg_build(s, 2, args, targets[i], NULL);
        assert_null(m);
        tu_assert_msg_has(te_ctx_errmsg(c.ctx), "bound to");
        te_ctx_free(c.ctx);
    }
}

static void test_bind_errors(void **state) {
    (void)state;
    sched_case c = rows_case(TE_REDUCE_SUM, 4, 64);
    sch_schedule *s = sch_create(c.ctx, 1, &c.out);
    te_expr *ko, *ki, *r = c.ax[0];
    assert_int_equal(sch_split(s, c.out, c.rax[0], 8, &ko, &ki), 0);
    assert_int_equal(sch_bind(s, c.out, ki, "blockIdx.x"), -1);
    tu_assert_msg_has(te_ctx_errmsg(c.ctx), "reduce axis 'k.inner'", "stage 'C'",
                      "only be bound to threadIdx.x");
    assert_int_equal(sch_bind(s, c.out, ki, "threadIdx.y"), -1);
    tu_assert_msg_has(te_ctx_errmsg(c.ctx), "not 'threadIdx.y'");
    assert_int_equal(sch_bind(s, c.out, ki, "threadIdx.x"), 0);
    assert_int_equal(sch_bind(s, c.out, ko, "threadIdx.x"), -1);
    tu_assert_msg_has(te_ctx_errmsg(c.ctx), "already reduces across threadIdx.x over axis "
                                            "'k.inner'");
    assert_int_equal(sch_bind(s, c.out, r, "threadIdx.x"), -1);
    tu_assert_msg_has(te_ctx_errmsg(c.ctx), "data-parallel axis 'r'", "cannot be bound to "
                                            "threadIdx.x too");
    /* Vectorize and parallel stay data-parallel only. */
    assert_int_equal(sch_vectorize(s, c.out, ko), -1);
    tu_assert_msg_has(te_ctx_errmsg(c.ctx), "only data-parallel axes can be vectorized");
    te_ctx_free(c.ctx);

    /* The other order: data-parallel first, then the reduce axis. */
    c = rows_case(TE_REDUCE_SUM, 4, 64);
    s = sch_create(c.ctx, 1, &c.out);
    assert_int_equal(sch_bind(s, c.out, c.ax[0], "threadIdx.x"), 0);
    assert_int_equal(sch_bind(s, c.out, c.rax[0], "threadIdx.x"), -1);
    tu_assert_msg_has(te_ctx_errmsg(c.ctx), "data-parallel axis 'r' of stage 'C' is already bound",
                      "reduce axis 'k'");
    te_ctx_free(c.ctx);

    /* A type shuffles do not move. */
    te_ctx *ctx = te_ctx_new();
    te_tensor *A = te_placeholder(ctx, "A", TE_DTYPE(TE_INT, 8, 1), TE_SHAPE(4, 64));
    te_expr *i = te_axis(ctx, "i", 4), *k = te_reduce_axis(ctx, "k", 64);
    te_tensor *B = te_compute(ctx, "B", TE_AXES(i), te_sum(te_read(A, i, k), k));
    assert_non_null(B);
    s = sch_create(ctx, 1, &B);
    assert_int_equal(sch_bind(s, B, k, "threadIdx.x"), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "stage 'B' has type int8", "int32, int64, float32 or "
                                                                     "float64");
    te_ctx_free(ctx);
}

static void test_lower_errors(void **state) {
    (void)state;
    /* A data-parallel loop inside the reduce loops. */
    sched_case c = rows_case(TE_REDUCE_SUM, 4, 64);
    sch_schedule *s = sch_create(c.ctx, 1, &c.out);
    te_expr *ko, *ki;
    assert_int_equal(sch_split(s, c.out, c.rax[0], 32, &ko, &ki), 0);
    assert_int_equal(sch_bind(s, c.out, ki, "threadIdx.x"), 0);
    assert_int_equal(sch_reorder(s, c.out, 2, (te_expr *[]){ko, c.ax[0]}), 0);
    te_tensor *args[2] = {c.in[0], c.out};
    assert_null(sch_lower(s, 2, args, "f"));
    tu_assert_msg_has(te_ctx_errmsg(c.ctx), "stage 'C' reduces across threads",
                      "data-parallel loop 'r' is inside reduce loop 'k.outer'");
    te_ctx_free(c.ctx);

    /* A stage computed at a reduce loop of the cross-thread stage. */
    te_ctx *ctx = te_ctx_new();
    te_tensor *A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(4, 64));
    te_expr *i = te_axis(ctx, "i", 4), *j = te_axis(ctx, "j", 64);
    te_tensor *E = te_compute(ctx, "E", TE_AXES(i, j), te_exp(te_read(A, i, j)));
    te_expr *r = te_axis(ctx, "r", 4), *k = te_reduce_axis(ctx, "k", 64);
    te_tensor *S = te_compute(ctx, "S", TE_AXES(r), te_sum(te_read(E, r, k), k));
    s = sch_create(ctx, 1, &S);
    assert_int_equal(sch_split(s, S, k, 32, &ko, &ki), 0);
    assert_int_equal(sch_bind(s, S, ki, "threadIdx.x"), 0);
    assert_int_equal(sch_bind(s, S, r, "blockIdx.x"), 0);
    assert_int_equal(sch_compute_at(s, E, S, ko), 0);
    te_tensor *args2[2] = {A, S};
    assert_null(sch_lower(s, 2, args2, "f"));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "stage 'E' is computed at reduce loop 'k.outer'",
                      "stage 'S'", "reduces across threads");
    te_ctx_free(ctx);
}

static void test_replay(void **state) {
    (void)state;
    /* The step log of a cross-thread schedule replays to the same text. */
    sched_case c = rows_case(TE_REDUCE_MAX, 4, 200);
    sch_schedule *s = rows_sched(&c, 64, 1, false);
    te_tensor *args[2] = {c.in[0], c.out};
    const char *a = sch_lower_text(s, 2, args);
    assert_non_null(a);
    sched_case d = rows_case(TE_REDUCE_MAX, 4, 200);
    int n = sch_num_steps(s);
    sch_step steps[16];
    assert_true(n <= 16);
    for (int i = 0; i < n; i++) steps[i] = *sch_get_step(s, i);
    sch_schedule *r = sch_replay(d.ctx, 1, &d.out, n, steps);
    assert_non_null(r);
    te_tensor *args2[2] = {d.in[0], d.out};
    const char *b = sch_lower_text(r, 2, args2);
    assert_non_null(b);
    assert_string_equal(a, b);
    te_ctx_free(c.ctx);
    te_ctx_free(d.ctx);
}

/* The default CUDA schedules of the operators reduce long extents across
 * threads: the source has the shuffles; on a GPU the results match the
 * operators' double references. */
static void test_ops_long_reductions(void **state) {
    (void)state;
    tu_require_nvrtc();
    static const char *const cases[][2] = {
        {"softmax", "M=4,N=1000"},
        {"layer_norm", "M=3,N=4096"},
        {"sum", "D0=2,D1=4096,axes=2"},
        {"sum", "D0=8,D1=9,D2=10,axes=7"},
        {"sum", "D0=6,D1=5,D2=40,axes=5"},
        {"mean", "D0=3,D1=500,axes=2"},
        {"max", "D0=300,D1=7,axes=1"},
        {"global_avg_pool2d", "N=1,C=8,H=56,W=56"},
    };
    bool gpu = rt_cuda_available();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        te_ctx *ctx = te_ctx_new();
        ops_workload *w = ops_build(ctx, cases[i][0], cases[i][1]);
        if (!w) fprintf(stderr, "%s(%s): %s\n", cases[i][0], cases[i][1], te_ctx_errmsg(ctx));
        assert_non_null(w);
        sch_schedule *s = ops_default_schedule(w, "cuda");
        if (!s) fprintf(stderr, "%s: %s\n", w->key, te_ctx_errmsg(ctx));
        assert_non_null(s);
        rt_module *m = cg_build(s, w->nargs, w->args, "cuda", NULL);
        if (!m) fprintf(stderr, "%s: %s\n", w->key, te_ctx_errmsg(ctx));
        assert_non_null(m);
        const char *src = rt_module_get_text(m, "source");
        if (!strstr(src, "__shfl_down_sync")) fprintf(stderr, "%s: no shuffles:\n%s\n", w->key, src);
        assert_non_null(strstr(src, "__shfl_down_sync"));
        if (gpu) {
            int64_t bad = ops_check_module(w, m, NULL, tu_seed() + (uint64_t)i);
            if (bad) fprintf(stderr, "%s: %lld mismatches (%s)\n%s\n", w->key, (long long)bad,
                             bad < 0 ? te_ctx_errmsg(ctx) : "", src);
            assert_int_equal(bad, 0);
        }
        rt_module_free(m);
        te_ctx_free(ctx);
    }
    if (!gpu) tu_skip_part("the GPU runs of the operators", rt_last_error());
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lowered_text),
        cmocka_unit_test(test_cpu_targets_reject),
        cmocka_unit_test(test_bind_errors),
        cmocka_unit_test(test_lower_errors),
        cmocka_unit_test(test_replay),
        cmocka_unit_test(test_sum_32),
        cmocka_unit_test(test_sum_100_partial_warp),
        cmocka_unit_test(test_max_1000),
        cmocka_unit_test(test_sum_1000_by_256_guarded),
        cmocka_unit_test(test_sum_4096),
        cmocka_unit_test(test_min_outer_part_bound),
        cmocka_unit_test(test_rows_on_threadidx_y),
        cmocka_unit_test(test_rows_tree),
        cmocka_unit_test(test_ops_long_reductions),
    };
    return tu_run_group(tests);
}
