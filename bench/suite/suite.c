/*
 * bench/suite/suite.c — `bench_suite`: Loom against the vendor libraries,
 * side by side in one process, over a workloads file.
 *
 *   bench_suite [--workloads FILE] [--threads T] [--repeat R] [--min-ms MS]
 *               [--db FILE [--target KEY]] [--only NAME,...] [--csv FILE]
 *               [--plot-dir DIR] [--seed S] [--no-constants]
 *
 * For each workload (a line `name<TAB>op<TAB>params` of FILE, default
 * bench/workloads.tsv): Loom runs the best record of the tuning database
 * for the workload and target (tdb_apply_best), or the operator's default
 * schedule when there is no database or no valid record (marked
 * "default"); the peer is OpenBLAS sgemm (matmul, batch_matmul), oneDNN's
 * matmul (bfloat16 matmul and batch_matmul, a params' dtype=bfloat16) or
 * oneDNN (convolutions, NCHW in and out with its reorders; its
 * internal-layout time is shown too). Inputs are in the workload's type;
 * a bfloat16 row's %peak is of the CPU's bf16 dot-product peak where it
 * has AVX512-BF16. Both run with T threads on the same inputs, both
 * results are checked against the double-precision reference, then the two
 * are timed interleaved: R samples each, every sample repeating the call
 * for at least MS milliseconds; the table shows medians and the spread.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "../loom_module.h"

typedef struct {
    int threads, repeat;
    double min_ms;
    const char *workloads, *db, *target, *only, *csv, *plot_dir;
    uint64_t seed;
    bool no_constants; /* weights not constant: their stages run in every call */
} options;

static void usage(FILE *f, const char *argv0) {
    fprintf(f,
            "usage: %s [--workloads FILE] [--threads T] [--repeat R] [--min-ms MS]\n"
            "          [--db FILE [--target KEY]] [--only NAME,...] [--csv FILE]\n"
            "          [--plot-dir DIR] [--seed S] [--no-constants]\n"
            "Times Loom against OpenBLAS / oneDNN on each workload of FILE (default\n"
            "bench/workloads.tsv); see bench/README.md for the columns.\n",
            argv0);
}

/* A whole decimal number in [lo, hi] for option `name`, or -1 after saying
 * why: atoi read "4294967297" as 1 and "abc" as 0. */
static int int_arg(const char *name, const char *text, long long lo, long long hi,
                   long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (!text[0] || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "bench_suite: --%s '%s' is not an integer from %lld to %lld\n", name,
                text, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse(int argc, char **argv, options *o) {
    static const struct option longs[] = {
        {"workloads", required_argument, 0, 'w'}, {"threads", required_argument, 0, 't'},
        {"repeat", required_argument, 0, 'r'},    {"min-ms", required_argument, 0, 'm'},
        {"db", required_argument, 0, 'd'},        {"target", required_argument, 0, 'T'},
        {"only", required_argument, 0, 'o'},      {"csv", required_argument, 0, 'c'},
        {"plot-dir", required_argument, 0, 'p'},  {"seed", required_argument, 0, 's'},
        {"no-constants", no_argument, 0, 'n'},    {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    *o = (options){.threads = 1, .repeat = 9, .min_ms = 50, .workloads = "bench/workloads.tsv",
                   .seed = 12345};
    int c;
    long long v;
    char *end;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 'w': o->workloads = optarg; break;
        case 't':
            if (int_arg("threads", optarg, 1, 1024, &v)) return -1;
            o->threads = (int)v;
            break;
        case 'r':
            if (int_arg("repeat", optarg, 1, 64, &v)) return -1;
            o->repeat = (int)v;
            break;
        case 'm':
            errno = 0;
            o->min_ms = strtod(optarg, &end);
            if (!optarg[0] || *end || errno || !(o->min_ms >= 0 && o->min_ms <= 60000)) {
                fprintf(stderr, "bench_suite: --min-ms '%s' is not a number of milliseconds "
                        "from 0 to 60000\n", optarg);
                return -1;
            }
            break;
        case 'd': o->db = optarg; break;
        case 'T': o->target = optarg; break;
        case 'o': o->only = optarg; break;
        case 'c': o->csv = optarg; break;
        case 'p': o->plot_dir = optarg; break;
        case 's':
            if (int_arg("seed", optarg, 0, LLONG_MAX, &v)) return -1;
            o->seed = (uint64_t)v;
            break;
        case 'n': o->no_constants = true; break;
        case 'h': usage(stdout, argv[0]); exit(0);
        default: usage(stderr, argv[0]); return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "bench_suite: unexpected argument '%s'\n", argv[optind]);
        usage(stderr, argv[0]);
        return -1;
    }
    return 0;
}

/* The length of the name at p in a comma-separated list; *next: the
 * next name (at the terminating NUL after the last). */
static size_t list_item(const char *p, const char **next) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    *next = p + len + (e != NULL);
    return len;
}

static bool selected(const char *only, const char *name) {
    if (!only) return true;
    size_t n = strlen(name);
    for (const char *p = only, *next; *p; p = next)
        if (list_item(p, &next) == n && !strncmp(p, name, n)) return true;
    return false;
}

/* Every name of --only must be a workload of the file: a misspelt name
 * would otherwise drop its workload from the table without a word.
 * Reads f to its end (the caller rewinds). Returns 0, or 2 after saying
 * which name is missing. */
static int check_only(FILE *f, const char *path, const char *only) {
    if (!only) return 0;
    if (!*only) {
        fprintf(stderr, "bench_suite: --only wants workload names, comma-separated\n");
        return 2;
    }
    char names[256][64];
    int n = 0;
    char line[1024];
    while (fgets(line, sizeof line, f) && n < 256) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        size_t len = strcspn(line, "\t");
        if (len >= sizeof names[0]) len = sizeof names[0] - 1;
        memcpy(names[n], line, len), names[n][len] = 0, n++;
    }
    for (const char *p = only, *next; *p; p = next) {
        size_t len = list_item(p, &next);
        char want[64];
        snprintf(want, sizeof want, "%.*s", (int)len, p);
        bool found = false;
        for (int i = 0; i < n && !found; i++) found = !strcmp(want, names[i]);
        if (!found) {
            fprintf(stderr, "bench_suite: --only '%.*s': no workload of that name in '%s'\n",
                    (int)len, p, path);
            return 2;
        }
    }
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Workloads above this many FLOP are checked against the peer instead of
 * the naive reference (see bench_one). */
#define REF_MAX_FLOP 2e10

typedef struct {
    rt_prepared *p; /* the module's function, constants pre-computed */
    int nargs;
    DLTensor **args;
} loom_call;

static int run_loom(void *u) {
    loom_call *c = u;
    return rt_prepared_call(c->p, c->nargs, c->args);
}
static int run_peer(void *u) { return bench_peer_run(u); }
static int run_internal(void *u) { return bench_peer_run_internal(u); }

/* Mismatches of n values against the reference at w's tolerance: the
 * floats got, or (got NULL) the elements of tensor t in its own type. */
static int64_t mismatches(const ops_workload *w, const float *got, const DLTensor *t,
                          const double *want, int64_t n) {
    double rtol, atol;
    ops_tolerance(w, &rtol, &atol);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
        double v = got ? got[i] : rt_tensor_get(t, i);
        if (!(fabs(v - want[i]) <= atol + rtol * fabs(want[i]))) bad++;
    }
    return bad;
}

/* Fills one row: builds, checks and times the workload. */
static void bench_one(const options *o, tdb_db *db, const char *target, const char *name,
                      const char *op, const char *params, bench_row *row) {
    memset(row, 0, sizeof *row);
    row->name = strdup(name);
    row->op = strdup(op);
    row->internal_ms = NAN;
    char err[1024] = "";
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = NULL;
    rt_module *m = NULL;
    rt_prepared *prep = NULL;
    bench_peer *peer = NULL;
    DLTensor *args[16] = {0};
    double *want = NULL;
    char source[64] = "default";
    const char *key = ops_canonical_key(ctx, op, params);
    if (!key) {
        snprintf(err, sizeof err, "%s", te_ctx_errmsg(ctx));
        goto done;
    }
    row->key = strdup(key);
    /* The weights are constants, pre-computed stages run once (as the
     * peer's weights are reordered once: bench/README.md). */
    const ops_workload *kw = ops_from_key(ctx, key);
    cg_build_options bo;
    memset(&bo, 0, sizeof bo);
    bo.constant_args = kw && !o->no_constants ? kw->constant_args : 0;
    m = bench_loom_module(db, ctx, key, target, "llvm", &bo, &w, source, sizeof source, err,
                          sizeof err);
    if (!m) goto done;
    row->loom_source = strdup(source);
    row->flops = w->flops;
    row->bf16_dot = te_dtype_eq(w->dtype, TE_BFLOAT16) && __builtin_cpu_supports("avx512f") &&
                    __builtin_cpu_supports("avx512bf16");
    if (w->nargs > 16 || w->nouts != 1) {
        snprintf(err, sizeof err, "workload has %d tensors; the suite handles 16 and one output",
                 w->nargs);
        goto done;
    }
    uint64_t rng = o->seed;
    for (int i = 0; i < w->nargs; ++i) {
        /* in the workload's type (16-bit values rounded to nearest even) */
        args[i] = rt_tensor_alloc(cg_dl_type(w->args[i]->dtype), w->args[i]->ndim,
                                  w->args[i]->shape);
        if (!args[i]) {
            snprintf(err, sizeof err, "cannot allocate '%s': %s", w->args[i]->name, rt_last_error());
            goto done;
        }
        for (int64_t k = 0; k < rt_tensor_numel(args[i]); ++k) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            rt_tensor_set(args[i], k,
                          i < w->ninputs ? (double)(rng >> 11) / 9007199254740992.0 * 2 - 1 : NAN);
        }
    }
    DLTensor *out = args[w->ninputs];
    int64_t n = rt_tensor_numel(out);
    loom_call lc = {rt_prepare(m, "default", w->nargs, args), w->nargs, args};
    prep = lc.p;
    if (!lc.p || run_loom(&lc)) {
        snprintf(err, sizeof err, "loom: %s", rt_last_error());
        goto done;
    }
    peer = bench_peer_new(w, args, err, sizeof err);
    if (!peer) goto done;
    row->peer = strdup(bench_peer_name(peer));
    if (bench_peer_run(peer)) {
        snprintf(err, sizeof err, "%s failed", row->peer);
        goto done;
    }
    /* The naive double reference of the largest workloads (mm4096: 69 G
     * multiply-adds) would take minutes: above REF_MAX_FLOP both results
     * are checked against each other instead, the peer standing in for
     * the reference. */
    want = malloc(sizeof(double) * (size_t)n);
    if (!want) {
        snprintf(err, sizeof err, "out of memory");
        goto done;
    }
    const char *judge = "reference";
    if (w->flops <= REF_MAX_FLOP) {
        if (ops_reference(w, args, &want)) {
            snprintf(err, sizeof err, "reference: %s", te_ctx_errmsg(ctx));
            goto done;
        }
    } else {
        judge = row->peer;
        const float *pf = bench_peer_output(peer);
        for (int64_t k = 0; k < n; ++k) want[k] = pf[k];
    }
    int64_t bad_loom = mismatches(w, NULL, out, want, n);
    int64_t bad_peer =
        w->flops <= REF_MAX_FLOP ? mismatches(w, bench_peer_output(peer), NULL, want, n) : 0;
    row->checked = !bad_loom && !bad_peer;
    if (bad_loom || bad_peer)
        fprintf(stderr, "bench: %s: against the %s, %lld wrong elements from loom, %lld from %s\n",
                name, judge, (long long)bad_loom, (long long)bad_peer, row->peer);

    double tl[64], tp[64], ti[64];
    rt_timer_config cfg = {.warmup = 2, .repeat = 1, .min_repeat_ms = o->min_ms};
    bool internal = bench_peer_has_internal(peer);
    int R = 0; /* samples taken (a call that fails ends the timing) */
    for (; R < o->repeat; ++R) {
        rt_timing t;
        if (rt_time(run_loom, &lc, &cfg, &t)) break;
        tl[R] = t.median;
        if (rt_time(run_peer, peer, &cfg, &t)) break;
        tp[R] = t.median;
        if (internal) {
            if (rt_time(run_internal, peer, &cfg, &t)) break;
            ti[R] = t.median;
        }
        cfg.warmup = 0;
    }
    if (R == 0) {
        snprintf(err, sizeof err, "a timed call failed: %s", rt_last_error());
        goto done;
    }
    double pair[64];
    for (int r = 0; r < R; ++r) pair[r] = tp[r] / tl[r];
    qsort(pair, (size_t)R, sizeof(double), cmp_double);
    row->ratio = R % 2 ? pair[R / 2] : 0.5 * (pair[R / 2 - 1] + pair[R / 2]);
    qsort(tl, (size_t)R, sizeof(double), cmp_double);
    qsort(tp, (size_t)R, sizeof(double), cmp_double);
    row->loom_ms = tl[R / 2] * 1e3, row->loom_spread_ms = (tl[R - 1] - tl[0]) * 1e3;
    row->peer_ms = tp[R / 2] * 1e3, row->peer_spread_ms = (tp[R - 1] - tp[0]) * 1e3;
    if (internal) {
        qsort(ti, (size_t)R, sizeof(double), cmp_double);
        row->internal_ms = ti[R / 2] * 1e3;
    }
done:
    if (err[0]) row->error = strdup(err);
    bench_peer_free(peer);
    for (int i = 0; i < 16; ++i) rt_tensor_free(args[i]);
    free(want);
    rt_prepared_free(prep);
    rt_module_free(m);
    te_ctx_free(ctx);
}

static double probe_again(void *threads) { return bench_fp32_peak(*(int *)threads); }
static double probe_bf16_again(void *threads) { return bench_bf16_dot_peak(*(int *)threads); }

int main(int argc, char **argv) {
    /* Idle peer threads spin by default and would steal the cores Loom's
     * next sample runs on: OpenMP's (oneDNN's runtime) until told to be
     * passive, OpenBLAS's pthreads for 2^28 cycles (~0.1 s, longer than a
     * sample) after every call. Both read their settings when they load,
     * so set them and start again; 4 is OpenBLAS's shortest timeout. */
    if (!getenv("OMP_WAIT_POLICY") || !getenv("OPENBLAS_THREAD_TIMEOUT")) {
        setenv("OMP_WAIT_POLICY", "passive", 0);
        setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
        execv("/proc/self/exe", argv);
    }
    options o;
    if (parse(argc, argv, &o)) return 2;
    FILE *f = fopen(o.workloads, "r");
    if (!f) {
        fprintf(stderr, "bench_suite: cannot open workloads file '%s'\n", o.workloads);
        return 2;
    }
    if (check_only(f, o.workloads, o.only)) {
        fclose(f);
        return 2;
    }
    rewind(f);
    tdb_db *db = NULL;
    char *host_target = NULL;
    if (o.db) {
        char *err = NULL;
        if (!(db = tdb_open(o.db, NULL, &err))) {
            fprintf(stderr, "bench_suite: %s\n", err ? err : "cannot open the database");
            free(err);
            return 2;
        }
    }
    /* The records of programs timed on the threads this run uses. */
    char *host = o.target ? NULL : tdb_host_target();
    if (host) host_target = tune_threads_key(host, o.threads);
    free(host);
    const char *target = o.target ? o.target : host_target;
    if (!target) {
        fprintf(stderr, "bench_suite: out of memory\n");
        tdb_close(db);
        fclose(f);
        return 2;
    }
    rt_set_num_threads(o.threads);
    bench_peers_set_threads(o.threads);
    double peak = bench_fp32_peak(o.threads);

    bench_row rows[256];
    int n = 0;
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, f) && n < 256) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        char *name = strtok(line, "\t"), *op = strtok(NULL, "\t"), *params = strtok(NULL, "\t");
        if (!name || !op || !params) {
            fprintf(stderr, "bench_suite: %s:%d: want name<TAB>op<TAB>params\n", o.workloads, lineno);
            continue;
        }
        if (!selected(o.only, name) || !strcmp(name, "name")) continue;
        fprintf(stderr, "bench: %s ...\n", name);
        bench_one(&o, db, target, name, op, params, &rows[n++]);
    }
    fclose(f);
    peak = bench_settle_peak(rows, n, peak, false, probe_again, &o.threads, stderr);
    /* bfloat16 rows on a CPU with AVX512-BF16 against its dot-product peak */
    double bf16_peak = 0;
    for (int i = 0; i < n && bf16_peak == 0; ++i)
        if (rows[i].bf16_dot) bf16_peak = bench_bf16_dot_peak(o.threads);
    if (bf16_peak > 0)
        bf16_peak = bench_settle_peak(rows, n, bf16_peak, true, probe_bf16_again, &o.threads,
                                      stderr);
    printf("bench_suite, %s, target %s\n", o.db ? o.db : "no database (default schedules)", target);
    bench_print_table(stdout, rows, n, peak, bf16_peak, o.threads);
    int rc = 0;
    if (o.csv && bench_write_csv(o.csv, rows, n, peak, bf16_peak)) rc = 1;
    if (o.plot_dir) {
        if (bench_plot_ratios(o.plot_dir, rows, n)) rc = 1;
        if (db && bench_plot_curves(o.plot_dir, db, target, rows, n)) rc = 1;
    }
    for (int i = 0; i < n; ++i) {
        free((char *)rows[i].name), free((char *)rows[i].op), free((char *)rows[i].peer);
        free((char *)rows[i].loom_source), free((char *)rows[i].error), free((char *)rows[i].key);
    }
    free(host_target);
    tdb_close(db);
    return rc;
}
