/*
 * bench/bench_cuda.c — Loom's CUDA kernels over a workloads file, for the
 * GPU machine: the best record of a tuning database for the workload on
 * the GPU target, or the operator's default CUDA schedule. Each kernel is
 * checked against the double-precision reference (workloads up to 2e10
 * FLOP; larger ones are marked unchecked here and compared with PyTorch by
 * bench/gpu/bench_gpu.py), then timed with CUDA events: median of
 * --repeat samples after warm-up, each at least --min-ms of calls.
 *
 *   bench_cuda [--workloads FILE] [--db FILE] [--arch sm_XX] [--repeat R]
 *              [--min-ms MS] [--only NAME,...] [--dump DIR]
 *
 * Prints CSV on stdout: name,key,source,loom_ms,spread_ms,gflops,checked,error.
 * --dump DIR writes each workload's inputs and Loom's output as raw float32 (16-bit ones widened)
 * files (NAME.in0, NAME.in1, ..., NAME.out) for the PyTorch comparison.
 */
#include <getopt.h>
#include <loom/loom.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_module.h"

#define REF_MAX_FLOP 2e10

static bool selected(const char *only, const char *name) {
    if (!only) return true;
    size_t n = strlen(name);
    for (const char *p = only; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return true;
        p += len + (e != NULL);
    }
    return false;
}

static void dump(const char *dir, const char *name, const char *suffix, const DLTensor *t) {
    if (!dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, suffix);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(t->data, 1, rt_tensor_nbytes(t), f);
    fclose(f);
}

/* One workload: returns the CSV line's fields through printf. 16-bit
 * workloads run on 16-bit tensors whose values (and the dumps, float32)
 * are the float32 draws rounded to the type. */
static void bench_one(const char *name, const char *op, const char *params, tdb_db *db,
                      const char *target, const char *arch, int repeat, double min_ms,
                      const char *dumpdir, uint64_t seed) {
    te_ctx *ctx = te_ctx_new();
    char err[1024] = "", source[64] = "default";
    rt_module *m = NULL;
    ops_workload *w = NULL;
    DLTensor *host[16] = {0}, *dev[16] = {0}, *h16[16] = {0};
    double *want = NULL;
    double ms = NAN, spread = NAN;
    bool checked = false;
    const char *key = ops_canonical_key(ctx, op, params);
    if (!key) {
        snprintf(err, sizeof err, "%s", te_ctx_errmsg(ctx));
        goto out;
    }
    cg_build_options o = {0};
    o.cuda.arch = arch;
    m = bench_loom_module(db, ctx, key, target, "cuda", &o, &w, source, sizeof source, err,
                          sizeof err);
    if (!m) goto out;
    if (w->nargs > 16) {
        snprintf(err, sizeof err, "more than 16 tensors");
        goto out;
    }
    DLDataType f32 = {kDLFloat, 32, 1};
    for (int i = 0; i < w->nargs; ++i) {
        te_dtype t = w->args[i]->dtype;
        bool half = te_dtype_is_half(t);
        host[i] = rt_tensor_alloc(f32, w->args[i]->ndim, w->args[i]->shape);
        dev[i] = rt_cuda_tensor_alloc(cg_dl_type(t), w->args[i]->ndim, w->args[i]->shape, 0);
        if (half) h16[i] = rt_tensor_alloc(cg_dl_type(t), w->args[i]->ndim, w->args[i]->shape);
        if (!host[i] || !dev[i] || (half && !h16[i])) {
            snprintf(err, sizeof err, "allocating '%s': %s", w->args[i]->name, rt_last_error());
            goto out;
        }
        float *p = host[i]->data;
        for (int64_t k = 0; k < rt_tensor_numel(host[i]); ++k) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            double v = (double)(seed >> 11) / 9007199254740992.0 * 2 - 1;
            p[k] = i < w->ninputs ? (float)(half ? te_dtype_round(t, v) : v) : NAN;
        }
        for (int64_t k = 0; half && k < rt_tensor_numel(host[i]); ++k)
            rt_tensor_set(h16[i], k, p[k]); /* exact: p[k] is already rounded */
        if (rt_tensor_copy(dev[i], half ? h16[i] : host[i])) {
            snprintf(err, sizeof err, "copy to the GPU: %s", rt_last_error());
            goto out;
        }
    }
    if (rt_call(m, "default", w->nargs, dev)) {
        snprintf(err, sizeof err, "run: %s", rt_module_errmsg(m));
        goto out;
    }
    DLTensor *out = host[w->ninputs], *out16 = h16[w->ninputs];
    if (rt_tensor_copy(out16 ? out16 : out, dev[w->ninputs])) {
        snprintf(err, sizeof err, "copy from the GPU: %s", rt_last_error());
        goto out;
    }
    for (int64_t k = 0; out16 && k < rt_tensor_numel(out); ++k)
        ((float *)out->data)[k] = (float)rt_tensor_get(out16, k);
    for (int i = 0; i < w->ninputs; ++i) {
        char suffix[16];
        snprintf(suffix, sizeof suffix, "in%d", i);
        dump(dumpdir, name, suffix, host[i]);
    }
    dump(dumpdir, name, "out", out);
    if (w->flops <= REF_MAX_FLOP) {
        int64_t n = rt_tensor_numel(out), bad = 0;
        double rtol, atol;
        want = malloc(sizeof(double) * (size_t)n);
        DLTensor *ref_in[16];
        for (int i = 0; i < w->nargs; i++) ref_in[i] = h16[i] ? h16[i] : host[i];
        if (!want || ops_reference(w, ref_in, &want)) {
            snprintf(err, sizeof err, "reference failed");
            goto out;
        }
        ops_tolerance(w, &rtol, &atol);
        const float *got = out->data;
        for (int64_t k = 0; k < n; ++k)
            if (!(fabs(got[k] - want[k]) <= atol + rtol * fabs(want[k]))) bad++;
        checked = bad == 0;
        if (bad) snprintf(err, sizeof err, "%lld wrong output elements", (long long)bad);
    }
    rt_timer_config cfg = {.warmup = 3, .repeat = repeat, .min_repeat_ms = min_ms};
    rt_timing t;
    if (rt_cuda_time_call(m, "default", w->nargs, dev, &cfg, &t)) {
        snprintf(err, sizeof err, "timing: %s", rt_last_error());
        goto out;
    }
    ms = t.median * 1e3;
    spread = (t.max - t.min) * 1e3;
out:
    printf("%s,\"%s\",%s,%.6f,%.6f,%.3f,%d,\"%s\"\n", name, key ? key : "", source, ms, spread,
           w && ms > 0 ? w->flops / (ms * 1e-3) * 1e-9 : NAN, checked, err);
    fflush(stdout);
    for (int i = 0; i < 16; ++i) rt_tensor_free(host[i]), rt_tensor_free(dev[i]), rt_tensor_free(h16[i]);
    free(want);
    rt_module_free(m);
    te_ctx_free(ctx);
}

int main(int argc, char **argv) {
    const char *workloads = "bench/workloads.tsv", *dbpath = NULL, *arch = NULL, *only = NULL,
               *dumpdir = NULL;
    int repeat = 20;
    double min_ms = 20;
    static const struct option longs[] = {
        {"workloads", required_argument, 0, 'w'}, {"db", required_argument, 0, 'd'},
        {"arch", required_argument, 0, 'a'},      {"repeat", required_argument, 0, 'r'},
        {"min-ms", required_argument, 0, 'm'},    {"only", required_argument, 0, 'o'},
        {"dump", required_argument, 0, 'D'},      {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 'w': workloads = optarg; break;
        case 'd': dbpath = optarg; break;
        case 'a': arch = optarg; break;
        case 'r': repeat = atoi(optarg); break;
        case 'm': min_ms = atof(optarg); break;
        case 'o': only = optarg; break;
        case 'D': dumpdir = optarg; break;
        default:
            fprintf(stderr, "usage: %s [--workloads FILE] [--db FILE] [--arch sm_XX] [--repeat R] "
                            "[--min-ms MS] [--only NAME,...] [--dump DIR]\n", argv[0]);
            return 2;
        }
    }
    if (repeat < 1 || repeat > 64 || !(min_ms >= 0)) {
        fprintf(stderr, "bench_cuda: need 1 <= R <= 64 and MS >= 0\n");
        return 2;
    }
    if (!rt_cuda_available()) {
        fprintf(stderr, "bench_cuda: no GPU: %s\n", rt_last_error());
        return 1;
    }
    te_ctx *tctx = te_ctx_new();
    const char *a = arch ? arch : cg_cuda_default_arch(tctx);
    /* Records are stored under the GPU's key, as autotune --target cuda
     * writes them. */
    char *target = tdb_cuda_target(0);
    if (!target) {
        fprintf(stderr, "bench_cuda: %s\n", rt_last_error());
        return 1;
    }
    tdb_db *db = NULL;
    if (dbpath) {
        char *e = NULL;
        if (!(db = tdb_open(dbpath, NULL, &e))) {
            fprintf(stderr, "bench_cuda: %s\n", e ? e : "cannot open the database");
            return 2;
        }
    }
    FILE *f = fopen(workloads, "r");
    if (!f) {
        fprintf(stderr, "bench_cuda: cannot open '%s'\n", workloads);
        return 2;
    }
    printf("name,key,source,loom_ms,spread_ms,gflops,checked,error\n");
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        char *name = strtok(line, "\t"), *op = strtok(NULL, "\t"), *params = strtok(NULL, "\t");
        if (!name || !op || !params || !strcmp(name, "name") || !selected(only, name)) continue;
        bench_one(name, op, params, db, target, a, repeat, min_ms, dumpdir, 12345);
    }
    fclose(f);
    tdb_close(db);
    free(target);
    te_ctx_free(tctx);
    return 0;
}
