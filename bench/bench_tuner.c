/*
 * bench/bench_tuner.c — the compiler's own speed on the tuner's hot paths
 * (DESIGN.md, "The compiler's own speed"), for random candidates of mm1024
 * and r50_c3 (../shared/bench/workloads.tsv):
 *   apply    — a program's steps applied to a fresh schedule
 *              (tune_program_apply), per candidate
 *   lower    — sch_lower + tir_run_pipeline of it
 *   extract  — cm_extract of the lowered function
 *   total    — apply + lower + extract: what scoring one candidate costs
 *              (target: well under 1 ms)
 *   predict  — one batched cm_model_predict of a 2048-program population
 *              with a model trained on 256 programs (fabricated labels)
 *   build    — cg_build(..., "llvm") of a candidate (LLVM O3 + JIT)
 *   decode   — tune_program_from_steps of a candidate's stored log (what
 *              --resume spends per seeded program)
 * Medians over the samples; one thread. Usage: bench_tuner [samples]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/autotune.h"
#include "loom/codegen.h"
#include "loom/cost_model.h"
#include "loom/ops.h"
#include "loom/runtime.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int bench(const char *name, const char *op, const char *shape, int samples) {
    te_ctx *kctx = te_ctx_new();
    const char *k = ops_canonical_key(kctx, op, shape);
    if (!k) {
        fprintf(stderr, "bench_tuner: %s: %s\n", name, te_ctx_errmsg(kctx));
        return -1;
    }
    char *key = strdup(k);
    te_ctx_free(kctx);
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    if (tune_build_workload(ctx, key, &w)) return -1;
    int nsk = tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    if (nsk <= 0) return -1;
    int cap = samples < 256 ? 256 : samples;
    double *ta = calloc((size_t)cap, sizeof *ta), *tl = calloc((size_t)cap, sizeof *tl);
    double *te = calloc((size_t)cap, sizeof *te), *tt = calloc((size_t)cap, sizeof *tt);
    cm_program *progs = calloc((size_t)cap, sizeof *progs);
    double *lat = calloc((size_t)cap, sizeof *lat);
    uint64_t rng = 12345;
    int n = 0, tries = 0;
    /* Featurise `cap` random candidates (the first `samples` timed). */
    while (n < cap && tries++ < 10 * cap) {
        if (n % 32 == 0) { /* a fresh arena now and then, as the tuner does */
            te_ctx_free(ctx);
            ctx = te_ctx_new();
            tune_build_workload(ctx, key, &w);
        }
        tune_program p;
        int s_i = (int)(tune_rand(&rng) % (uint64_t)nsk);
        tune_program_random(&sk[s_i], s_i, &rng, &p);
        double t0 = rt_now();
        sch_schedule *s = tune_program_apply(ctx, &w, &sk[s_i], &p);
        double t1 = rt_now();
        if (!s) continue;
        tir_func *f = sch_lower(s, w.nargs, w.args, "default");
        f = f ? tir_run_pipeline(ctx, f, NULL) : NULL;
        double t2 = rt_now();
        float *x = NULL;
        int ns = 0;
        if (!f || cm_extract(NULL, f, &x, &ns)) continue;
        double t3 = rt_now();
        ta[n] = t1 - t0, tl[n] = t2 - t1, te[n] = t3 - t2, tt[n] = t3 - t0;
        progs[n] = (cm_program){x, ns};
        /* fabricated label: a smooth function of two features */
        double g = 0;
        for (int r = 0; r < ns; r++)
            g += x[r * CM_NUM_FEATURES + cm_feature_index("vec_len")] +
                 0.5 * x[r * CM_NUM_FEATURES + cm_feature_index("parallel_len")];
        lat[n++] = 1e-3 / (1 + g);
    }
    int ns = n < samples ? n : samples;
    double ma = median(ta, ns), ml = median(tl, ns), me = median(te, ns), mt = median(tt, ns);

    /* Batched prediction of a 2048 population. */
    cm_params cp;
    cm_params_default(&cp);
    cp.nthread = 1;
    cp.num_warmup_samples = 1;
    cm_model *m = cm_model_new(&cp);
    cm_model_train(m, n, progs, lat, NULL);
    enum { POP = 2048 };
    cm_program *pop = malloc(sizeof *pop * POP);
    double *sc = malloc(sizeof *sc * POP), tp[5];
    for (int i = 0; i < POP; i++) pop[i] = progs[i % n];
    for (int r = 0; r < 5; r++) {
        double t0 = rt_now();
        cm_model_predict(m, POP, pop, sc);
        tp[r] = rt_now() - t0;
    }
    double mp = median(tp, 5);

    /* LLVM build of candidates. */
    double tb[5];
    int nb = 0;
    for (int i = 0; i < 40 && nb < 5; i++) {
        te_ctx_free(ctx);
        ctx = te_ctx_new();
        tune_build_workload(ctx, key, &w);
        tune_program p;
        int s_i = (int)(tune_rand(&rng) % (uint64_t)nsk);
        tune_program_random(&sk[s_i], s_i, &rng, &p);
        sch_schedule *s = tune_program_apply(ctx, &w, &sk[s_i], &p);
        if (!s) continue;
        double t0 = rt_now();
        rt_module *mod = cg_build(s, w.nargs, w.args, "llvm", NULL);
        double t1 = rt_now();
        if (!mod) continue;
        rt_module_free(mod);
        tb[nb++] = t1 - t0;
    }
    double mb = median(tb, nb);

    /* Mapping a stored log back to its program (resume seeding). */
    double td[5];
    int nd = 0;
    for (int i = 0; i < 40 && nd < 5; i++) {
        tune_program p, q;
        int s_i = (int)(tune_rand(&rng) % (uint64_t)nsk);
        tune_program_random(&sk[s_i], s_i, &rng, &p);
        sch_schedule *s = tune_program_apply(ctx, &w, &sk[s_i], &p);
        char *json = s ? tdb_schedule_to_json(s) : NULL;
        if (!json) continue;
        double t0 = rt_now();
        int found = tune_program_from_steps(key, sk, nsk, json, &q, NULL);
        double t1 = rt_now();
        free(json);
        if (found == 1) td[nd++] = t1 - t0;
    }
    double md = median(td, nd);
    printf("| %-7s | %6d | %8.1f | %8.1f | %8.1f | %8.1f | %15.2f | %8.1f | %9.1f |\n", name, ns,
           ma * 1e6, ml * 1e6, me * 1e6, mt * 1e6, mp * 1e3, mb * 1e3, md * 1e3);
    fflush(stdout);
    for (int i = 0; i < n; i++) free((void *)progs[i].features);
    free(ta), free(tl), free(te), free(tt), free(progs), free(lat), free(pop), free(sc);
    cm_model_free(m);
    te_ctx_free(ctx);
    free(key);
    return 0;
}

int main(int argc, char **argv) {
    int samples = argc > 1 ? atoi(argv[1]) : 200;
    if (samples < 5) samples = 5;
    printf("Tuner hot paths, medians (one thread). apply/lower/extract/total per candidate;\n"
           "predict: one batched call for a 2048-program population; build: LLVM of one candidate;\n"
           "decode: a stored log mapped back to its program (resume).\n\n");
    printf("| task    | cands  | apply us | lower us | extr. us | total us | predict 2048 ms | build ms | decode ms |\n");
    printf("| ------- | ------ | -------- | -------- | -------- | -------- | --------------- | -------- | --------- |\n");
    int rc = 0;
    rc |= bench("mm1024", "matmul", "M=1024,N=1024,K=1024", samples);
    rc |= bench("r50_c3", "conv2d", "N=1,C=128,H=28,W=28,K=128,R=3,S=3,stride=1,pad=1", samples);
    return rc ? 1 : 0;
}
