/*
 * bench/default_schedule_bench.c — the quality of tune_default_schedule
 * (a schedule derived from a workload's structure alone) against the
 * operator library's hand-written default (ops_default_schedule) and the
 * plain sch_create schedule, on one thread: GFLOP/s of each and the ratio
 * derived / hand. Target: at least 0.8 everywhere, far above plain (where
 * the hand default is: memory-bound elementwise loops run as fast plain,
 * LLVM vectorizes them itself).
 *
 * Workloads: mm1024 and r50_c3 of ../shared/bench/workloads.tsv (copied
 * here: the project does not need ../shared), and a depthwise
 * convolution, softmax, layer_norm, elementwise add (with and without
 * broadcasting), relu and max_pool2d (stride 2 and 1) of
 * MobileNet/ResNet/BERT sizes.
 * Each module is built with the workload's constant arguments
 * (weights pre-computed once, as bench_suite does), checked against the
 * naive reference (ops_check_module), then timed in `rounds` rounds that
 * alternate the three schedules (a shared host drifts): per round the
 * median of `repeat` samples after warm-up, reported: the median over
 * rounds. Usage: bench_default_schedule [rounds] [name,...]
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/autotune.h"
#include "loom/codegen.h"
#include "loom/ops.h"
#include "loom/runtime.h"

typedef struct {
    const char *name, *op, *shape;
} bench_workload;

static const bench_workload workloads[] = {
    {"mm1024", "matmul", "M=1024,N=1024,K=1024"},
    {"r50_c3", "conv2d_nchw", "N=1,C=128,H=28,W=28,K=128,R=3,S=3,stride=1,pad=1"},
    {"mb_dw56", "depthwise_conv2d_nchw", "N=1,C=128,H=56,W=56,R=3,S=3,stride=1,pad=1"},
    {"mb_dw14s2", "depthwise_conv2d_nchw", "N=1,C=512,H=28,W=28,R=3,S=3,stride=2,pad=1"},
    {"softmax", "softmax", "M=1024,N=1024"},
    {"layer_norm", "layer_norm", "M=512,N=768"},
    {"add", "add", "D0=1,D1=256,D2=56,D3=56"},
    {"add_bias", "add", "D0=1,D1=256,D2=56,D3=56,b_bcast=13"},
    {"relu", "relu", "D0=1,D1=256,D2=56,D3=56"},
    {"max_pool", "max_pool2d", "N=1,C=64,H=112,W=112,R=3,S=3,stride=2,pad=1"},
    {"max_pool_s1", "max_pool2d", "N=1,C=64,H=56,W=56,R=3,S=3,stride=1,pad=1"},
};
#define NWORK ((int)(sizeof workloads / sizeof workloads[0]))

typedef struct {
    rt_prepared *p;
    int nargs;
    DLTensor **args;
} call;

static int run_call(void *user) {
    call *c = user;
    return rt_prepared_call(c->p, c->nargs, c->args);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { HAND, YOURS, PLAIN, NSCHED };
static const char *sched_name[NSCHED] = {"hand", "derived", "plain"};

/* One workload: builds the three modules, checks them, times them.
 * Returns 0 and prints a table row, or -1 with a message. */
static int bench_one(const bench_workload *b, int rounds) {
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, b->op, b->shape);
    if (!w) {
        fprintf(stderr, "%s: %s\n", b->name, te_ctx_errmsg(ctx));
        te_ctx_free(ctx);
        return -1;
    }
    tune_workload tw = {w->nargs, w->args, w->nouts, w->outs, w->flops, w->constant_args, false};
    const char *how = NULL;
    sch_schedule *s[NSCHED] = {ops_default_schedule(w, "llvm"),
                               tune_default_schedule(ctx, &tw, "llvm", &how),
                               sch_create(ctx, w->nouts, w->outs)};
    rt_module *m[NSCHED] = {0};
    rt_prepared *p[NSCHED] = {0};
    DLTensor **args = calloc((size_t)w->nargs, sizeof *args);
    int rc = -1;
    cg_build_options opts = {0};
    opts.constant_args = w->constant_args;
    for (int k = 0; k < NSCHED; k++) {
        if (!s[k] || !(m[k] = cg_build(s[k], w->nargs, w->args, "llvm", &opts))) {
            fprintf(stderr, "%s: %s schedule: %s\n", b->name, sched_name[k], te_ctx_errmsg(ctx));
            goto done;
        }
        int64_t bad = ops_check_module(w, m[k], NULL, 7 + (uint64_t)k);
        if (bad != 0) {
            fprintf(stderr, "%s: %s schedule: %lld wrong outputs (%s)\n", b->name,
                    sched_name[k], (long long)bad, bad < 0 ? te_ctx_errmsg(ctx) : "");
            goto done;
        }
    }
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < w->nargs; i++) {
        te_tensor *t = w->args[i];
        args[i] = rt_tensor_alloc(cg_dl_type(t->dtype), t->ndim, t->shape);
        if (!args[i]) goto done;
        float *d = args[i]->data;
        for (int64_t e = 0; e < rt_tensor_numel(args[i]); e++)
            d[e] = (float)((double)(tune_rand(&rng) >> 11) / 9007199254740992.0 * 2 - 1);
    }
    for (int k = 0; k < NSCHED; k++)
        if (!(p[k] = rt_prepare(m[k], "default", w->nargs, args))) {
            fprintf(stderr, "%s: %s\n", b->name, rt_last_error());
            goto done;
        }
    double med[NSCHED][16];
    bool slow[NSCHED];
    for (int k = 0; k < NSCHED; k++) {
        /* A schedule that takes over 50 ms a call (the plain one of a
         * matmul: a second) gets fewer samples; every other the same. */
        call c = {p[k], w->nargs, args};
        double t0 = rt_now();
        if (run_call(&c)) {
            fprintf(stderr, "%s: %s: %s\n", b->name, sched_name[k], rt_last_error());
            goto done;
        }
        slow[k] = rt_now() - t0 > 0.05;
    }
    if (rounds > 16) rounds = 16;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < NSCHED; k++) {
            rt_timer_config cfg = {.warmup = slow[k] ? 1 : 3,
                                   .repeat = slow[k] ? 3 : 9,
                                   .min_repeat_ms = slow[k] ? 0 : 20};
            call c = {p[k], w->nargs, args};
            rt_timing t;
            if (rt_time(run_call, &c, &cfg, &t)) {
                fprintf(stderr, "%s: %s: %s\n", b->name, sched_name[k], rt_last_error());
                goto done;
            }
            med[k][r] = t.median;
        }
    double gf[NSCHED];
    for (int k = 0; k < NSCHED; k++) {
        qsort(med[k], (size_t)rounds, sizeof med[k][0], cmp_d);
        gf[k] = w->flops / med[k][rounds / 2] * 1e-9;
    }
    printf("| %-10s | %8.2f | %8.2f | %8.2f | %5.2f | %s |\n", b->name, gf[HAND], gf[YOURS],
           gf[PLAIN], gf[YOURS] / gf[HAND], how ? how : "?");
    fflush(stdout);
    rc = 0;
done:
    for (int k = 0; k < NSCHED; k++) {
        rt_prepared_free(p[k]);
        rt_module_free(m[k]);
    }
    for (int i = 0; i < w->nargs; i++) rt_tensor_free(args[i]);
    free(args);
    te_ctx_free(ctx);
    return rc;
}

/* True when name is an item of the comma-separated list. */
static bool listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && !strncmp(p, name, n)) return true;
        p += len + (p[len] == ',');
    }
    return false;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    const char *only = argc > 2 ? argv[2] : NULL;
    if (rounds < 1 || rounds > 16) {
        fprintf(stderr, "usage: bench_default_schedule [rounds 1..16] [name,...]\n");
        return 2;
    }
    rt_set_num_threads(1);
    printf("| workload   | hand GFLOP/s | derived | plain | derived/hand | derived schedule |\n"
           "|---|---|---|---|---|---|\n");
    int fails = 0;
    for (int i = 0; i < NWORK; i++) {
        if (only && !listed(only, workloads[i].name)) continue;
        fails += bench_one(&workloads[i], rounds) != 0;
    }
    return fails ? 1 : 0;
}
