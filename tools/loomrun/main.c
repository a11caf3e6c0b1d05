/*
 * tools/loomrun/main.c — the `loomrun` command: compiles an ONNX model
 * (gr_compile: fused kernels, the best tuning record of each when a
 * database is given, the default schedule otherwise), runs it on given or
 * random inputs, writes or checks the outputs, and times it.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loom/graph.h"
#include "loom/runtime.h"
#include "loom/tuning_db.h"
#include "tools/loomrun/npy.h"

static const char usage[] =
    "usage: loomrun MODEL.onnx [--db FILE] [--target llvm[ -mcpu=...]] [--shape NAME=DIMS]...\n"
    "               [--input NAME=FILE]... [--output FILE.npy|DIR] [--check DIR]\n"
    "               [--bench N] [--warmup W] [--threads T] [--seed S] [--explain] [--no-fuse]\n"
    "Compiles an ONNX model with Loom and runs it.\n"
    "  --db FILE     run each kernel with its best record in this tuning database\n"
    "                (autotune --model MODEL --db FILE tunes them); others run their\n"
    "                default schedule\n"
    "  --shape N=D   fix a dynamic input's shape, e.g. --shape input=1x3x224x224\n"
    "  --input N=F   the input's data from F: .npy, or .pb (an ONNX TensorProto);\n"
    "                inputs not given are random: floats uniform in [-1, 1), integers 0\n"
    "  --output F    write the output as .npy (a model with several outputs: a\n"
    "                directory, one NAME.npy each)\n"
    "  --check DIR   compare with DIR/output_K.pb (ONNX's test layout, inputs from\n"
    "                DIR/input_K.pb unless --input gives them): max differences, and\n"
    "                exit status 1 beyond rtol 1e-3, atol 1e-5\n"
    "  --bench N     time N runs after the warm-up: mean, median, p90, and the time of\n"
    "                each kernel (share of the total, tuned or default)\n"
    "  --warmup W    runs before timing (default 3)\n"
    "  --threads T   threads the kernels use (default: all cores); --db's records\n"
    "                of that thread count apply (autotune --threads T tunes them)\n"
    "  --explain     print each kernel: ops, uses, tuned record or default, key\n"
    "  --no-fuse     one kernel per node (no fusion)\n";

__attribute__((format(printf, 1, 2))) static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("loomrun: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

static bool int_value(const char *name, const char *s, long long lo, long long hi, long long *v) {
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (!s[0] || *end || errno || x < lo || x > hi) {
        fail("option --%s: '%s' is not an integer from %lld to %lld", name, s, lo, hi);
        return false;
    }
    *v = x;
    return true;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A tensor from .npy or .pb; *owner_pb / *owner_rt keep what frees it. */
static DLTensor *load_tensor(const char *path, gr_tensor **owner_pb, DLTensor **owner_rt,
                             char *why, size_t size) {
    if (ends_with(path, ".npy")) {
        *owner_rt = npy_read(path, why, size);
        return *owner_rt;
    }
    char *err = NULL;
    *owner_pb = gr_tensor_load(path, &err);
    if (!*owner_pb) {
        snprintf(why, size, "%s", err ? err : "out of memory");
        free(err);
        return NULL;
    }
    return &(*owner_pb)->dl;
}

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A random input of value v's type: floats uniform in [-1, 1), else 0. */
static DLTensor *random_input(const gr_value *v, uint64_t *rng) {
    int64_t shape[64];
    for (int d = 0; d < v->type.ndim; d++) shape[d] = v->type.shape[d];
    DLTensor *t = rt_tensor_alloc(v->type.dtype, v->type.ndim, shape);
    if (!t) return NULL;
    int64_t n = rt_tensor_numel(t);
    memset(t->data, 0, rt_tensor_nbytes(t));
    for (int64_t i = 0; i < n; i++) {
        double x = (double)(rng_next(rng) >> 11) / 9007199254740992.0 * 2 - 1;
        if (v->type.elem_type == GR_FLOAT) ((float *)t->data)[i] = (float)x;
        else if (v->type.elem_type == GR_DOUBLE) ((double *)t->data)[i] = x;
    }
    return t;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double elem(const DLTensor *t, int64_t i) {
    switch (t->dtype.code) {
    case kDLFloat: return t->dtype.bits == 32 ? ((float *)t->data)[i] : ((double *)t->data)[i];
    case kDLInt:
        return t->dtype.bits == 64 ? (double)((int64_t *)t->data)[i]
               : t->dtype.bits == 32 ? ((int32_t *)t->data)[i]
               : t->dtype.bits == 16 ? ((int16_t *)t->data)[i]
                                     : ((int8_t *)t->data)[i];
    default:
        return t->dtype.bits == 64 ? (double)((uint64_t *)t->data)[i]
               : t->dtype.bits == 32 ? ((uint32_t *)t->data)[i]
               : t->dtype.bits == 16 ? ((uint16_t *)t->data)[i]
                                     : ((uint8_t *)t->data)[i];
    }
}

/* Compares output o with want: prints max differences; false beyond
 * the tolerance. */
static bool check_output(const char *name, const DLTensor *got, const DLTensor *want) {
    int64_t n = rt_tensor_numel(got);
    if (rt_tensor_numel(want) != n) {
        printf("check %s: %" PRId64 " elements, expected %" PRId64 "\n", name, n,
               rt_tensor_numel(want));
        return false;
    }
    double max_abs = 0, max_rel = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = elem(got, i), w = elem(want, i);
        double d = fabs(g - w);
        if (isnan(g) != isnan(w)) d = INFINITY;
        else if (isnan(g)) d = 0;
        if (d > max_abs) max_abs = d;
        if (fabs(w) > 0 && d / fabs(w) > max_rel) max_rel = d / fabs(w);
        if (!(d <= 1e-5 + 1e-3 * fabs(w))) bad++;
    }
    printf("check %s: max abs diff %.3g, max rel diff %.3g, %" PRId64 " of %" PRId64
           " beyond rtol 1e-3 atol 1e-5\n",
           name, max_abs, max_rel, bad, n);
    return bad == 0;
}

/* Whether --input spec "NAME=FILE" (checked to have its '=') names input
 * `name`. */
static bool spec_names(const char *spec, const char *name) {
    size_t len = (size_t)(strchr(spec, '=') - spec);
    return strlen(name) == len && !strncmp(name, spec, len);
}

int main(int argc, char **argv) {
    static const struct option options[] = {
        {"db", required_argument, NULL, 0},     {"target", required_argument, NULL, 0},
        {"shape", required_argument, NULL, 0},  {"input", required_argument, NULL, 0},
        {"output", required_argument, NULL, 0}, {"check", required_argument, NULL, 0},
        {"bench", required_argument, NULL, 0},  {"warmup", required_argument, NULL, 0},
        {"threads", required_argument, NULL, 0}, {"seed", required_argument, NULL, 0},
        {"explain", no_argument, NULL, 0},      {"no-fuse", no_argument, NULL, 0},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0}};
    enum { MAXN = 64 };
    const char *db_path = NULL, *target = "llvm", *output = NULL, *check = NULL;
    const char *shape_specs[MAXN], *input_specs[MAXN];
    int nshape = 0, ninput = 0, given[16] = {0};
    long long bench = 0, warmup = 3, threads = 0, seed = 1;
    bool explain = false, no_fuse = false;
    opterr = 0;
    for (;;) {
        int li = -1, c = getopt_long(argc, argv, ":h", options, &li);
        if (c == -1) break;
        if (c == 'h') {
            fputs(usage, stdout);
            return 0;
        }
        if (c == '?') return fail("unknown option '%s'\n%s", argv[optind - 1], usage);
        if (c == ':') return fail("option %s needs a value\n%s", argv[optind - 1], usage);
        const char *name = options[li].name, *v = optarg;
        bool multi = !strcmp(name, "shape") || !strcmp(name, "input");
        if (given[li]++ && !multi) return fail("option --%s is given more than once", name);
        bool ok = true;
        if (!strcmp(name, "db")) db_path = v;
        else if (!strcmp(name, "target")) target = v;
        else if (!strcmp(name, "output")) output = v;
        else if (!strcmp(name, "check")) check = v;
        else if (!strcmp(name, "explain")) explain = true;
        else if (!strcmp(name, "no-fuse")) no_fuse = true;
        else if (!strcmp(name, "bench")) ok = int_value(name, v, 1, 1000000, &bench);
        else if (!strcmp(name, "warmup")) ok = int_value(name, v, 0, 1000000, &warmup);
        else if (!strcmp(name, "threads")) ok = int_value(name, v, 1, 1024, &threads);
        else if (!strcmp(name, "seed")) ok = int_value(name, v, 0, LLONG_MAX, &seed);
        else if (!strcmp(name, "shape")) {
            if (nshape == MAXN) return fail("at most %d --shape options", MAXN);
            shape_specs[nshape++] = v;
        } else if (!strcmp(name, "input")) {
            if (ninput == MAXN) return fail("at most %d --input options", MAXN);
            const char *eq = strchr(v, '=');
            if (!eq || eq == v) return fail("--input '%s': expected NAME=FILE", v);
            input_specs[ninput++] = v;
        }
        if (!ok) return 2;
    }
    if (optind >= argc) return fail("no model given\n%s", usage);
    if (optind + 1 < argc) return fail("unexpected argument '%s' (one model)", argv[optind + 1]);
    const char *path = argv[optind];
    if (threads > 0 && rt_set_num_threads((int)threads) != 0)
        return fail("cannot use %lld threads", threads);

    int rc = 2;
    char *err = NULL, why[1024];
    gr_input_shape shapes[MAXN];
    memset(shapes, 0, sizeof shapes);
    gr_model *m = NULL;
    gr_exec *e = NULL;
    tdb_db *db = NULL;
    DLTensor *ins[MAXN] = {0}, *rt_own[MAXN] = {0};
    gr_tensor *pb_own[MAXN] = {0};
    double *prof = NULL;
    for (int i = 0; i < nshape; i++)
        if (!gr_input_shape_parse(shape_specs[i], &shapes[i], &err)) {
            fail("--shape: %s", err ? err : "out of memory");
            goto done;
        }
    if (!(m = gr_model_load(path, &err))) {
        fail("%s", err ? err : "out of memory");
        goto done;
    }
    /* an --input naming no graph input, said before the compile's seconds */
    for (int s = 0; s < ninput; s++) {
        bool found = false;
        for (int i = 0; i < m->graph->n_inputs && !found; i++)
            found = spec_names(input_specs[s], m->graph->values[m->graph->inputs[i]].name);
        if (!found) {
            fail("--input '%s': the model has no input of that name", input_specs[s]);
            goto done;
        }
    }
    if (db_path) {
        struct stat st;
        if (stat(db_path, &st) != 0) {
            fail("--db %s: %s (autotune --model %s --db %s creates it)", db_path, strerror(errno),
                 path, db_path);
            goto done;
        }
        tdb_open_options oo = {0};
        if (!(db = tdb_open(db_path, &oo, &err))) {
            fail("cannot open the database: %s", err ? err : db_path);
            goto done;
        }
    }
    gr_compile_options co = {.target = target, .nshapes = nshape, .shapes = shapes,
                             .no_fuse = no_fuse, .db = db, .explain = explain ? stdout : NULL};
    double t0 = rt_now();
    if (!(e = gr_compile(m, &co, &err))) {
        fail("%s", err ? err : "out of memory");
        goto done;
    }
    double compile_s = rt_now() - t0;
    int nk = gr_exec_num_kernels(e), ntuned = 0;
    for (int k = 0; k < nk; k++) ntuned += gr_exec_kernel_tuned(e, k);
    size_t arena, unshared;
    gr_exec_memory(e, &arena, &unshared);
    printf("compiled %s in %.2f s: %d kernels (%d tuned, %d default) for %d groups; "
           "intermediate values in %.2f MB (%.2f MB without reuse)\n",
           path, compile_s, nk, ntuned, nk - ntuned, gr_exec_num_groups(e), arena / 1048576.0,
           unshared / 1048576.0);
    if (gr_exec_db_note(e)) fprintf(stderr, "loomrun: note: %s\n", gr_exec_db_note(e));

    /* Inputs: --input, then --check's files, then random ones. */
    const gr_graph *g = m->graph;
    int nin = gr_exec_num_inputs(e);
    if (nin > MAXN) {
        fail("the model has %d inputs; loomrun takes at most %d", nin, MAXN);
        goto done;
    }
    for (int s = 0; s < ninput; s++) {
        const char *eq = strchr(input_specs[s], '=');
        int k = -1;
        for (int i = 0; i < nin; i++)
            if (spec_names(input_specs[s], g->values[gr_exec_input_value(e, i)].name)) k = i;
        if (k < 0) {
            fail("--input '%s': the model has no input of that name", input_specs[s]);
            goto done;
        }
        if (ins[k]) {
            fail("--input: input '%.*s' is given twice", (int)(eq - input_specs[s]), input_specs[s]);
            goto done;
        }
        if (!(ins[k] = load_tensor(eq + 1, &pb_own[k], &rt_own[k], why, sizeof why))) {
            fail("--input: %s", why);
            goto done;
        }
    }
    uint64_t rng = (uint64_t)seed * 0x9E3779B97F4A7C15ull + 1;
    for (int i = 0; i < nin; i++) {
        if (ins[i]) continue;
        if (check) {
            char file[4096];
            snprintf(file, sizeof file, "%s/input_%d.pb", check, i);
            if (!(ins[i] = load_tensor(file, &pb_own[i], &rt_own[i], why, sizeof why))) {
                fail("--check: %s", why);
                goto done;
            }
        } else if (!(ins[i] = rt_own[i] = random_input(&g->values[gr_exec_input_value(e, i)], &rng))) {
            fail("out of memory");
            goto done;
        }
    }
    if (gr_run(e, nin, ins, 0, NULL, &err) != 0) {
        fail("%s", err ? err : "run failed");
        goto done;
    }
    rc = 0;
    int nout = gr_exec_num_outputs(e);
    if (check) {
        for (int o = 0; o < nout; o++) {
            char file[4096];
            snprintf(file, sizeof file, "%s/output_%d.pb", check, o);
            gr_tensor *want = gr_tensor_load(file, &err);
            if (!want) {
                fail("--check: %s", err ? err : "out of memory");
                rc = 2;
                goto done;
            }
            if (!check_output(g->values[gr_exec_output_value(e, o)].name, gr_exec_output(e, o),
                              &want->dl))
                rc = 1;
            gr_tensor_free(want);
        }
    }
    if (output) {
        for (int o = 0; o < nout; o++) {
            char file[4096];
            if (nout == 1) {
                snprintf(file, sizeof file, "%s", output);
            } else {
                mkdir(output, 0777);
                snprintf(file, sizeof file, "%s/%s.npy", output,
                         g->values[gr_exec_output_value(e, o)].name);
                for (char *p = file + strlen(output) + 1; *p; p++)
                    if (*p == '/') *p = '_';
            }
            if (!npy_write(file, gr_exec_output(e, o), why, sizeof why)) {
                fail("--output: %s", why);
                rc = 2;
                goto done;
            }
            printf("wrote %s\n", file);
        }
    }
    if (bench > 0) {
        double *lat = malloc((size_t)bench * sizeof *lat);
        prof = calloc((size_t)(nk ? nk : 1), sizeof *prof);
        if (!lat || !prof) {
            free(lat);
            fail("out of memory");
            rc = 2;
            goto done;
        }
        for (long long i = 0; i < warmup; i++)
            if (gr_run(e, nin, ins, 0, NULL, &err) != 0) break;
        gr_exec_profile(e, prof);
        for (long long i = 0; i < bench && !err; i++) {
            double s = rt_now();
            if (gr_run(e, nin, ins, 0, NULL, &err) != 0) break;
            lat[i] = rt_now() - s;
        }
        gr_exec_profile(e, NULL);
        if (err) {
            free(lat);
            fail("%s", err);
            rc = 2;
            goto done;
        }
        double sum = 0;
        for (long long i = 0; i < bench; i++) sum += lat[i];
        qsort(lat, (size_t)bench, sizeof *lat, cmp_double);
        printf("latency over %lld runs (%d threads): mean %.3f ms, median %.3f ms, p90 %.3f ms\n",
               bench, rt_num_threads(), sum / (double)bench * 1e3, lat[bench / 2] * 1e3,
               lat[(bench * 9) / 10 < bench ? (bench * 9) / 10 : bench - 1] * 1e3);
        double ktotal = 0;
        for (int k = 0; k < nk; k++) ktotal += prof[k];
        printf("%-7s %10s %6s %5s  %-8s %s\n", "kernel", "ms/run", "share", "uses", "schedule",
               "ops");
        /* Largest first. */
        int *order = malloc((size_t)(nk ? nk : 1) * sizeof *order);
        for (int k = 0; order && k < nk; k++) order[k] = k;
        for (int a = 0; order && a < nk; a++)
            for (int b = a + 1; b < nk; b++)
                if (prof[order[b]] > prof[order[a]]) {
                    int t = order[a];
                    order[a] = order[b];
                    order[b] = t;
                }
        for (int j = 0; order && j < nk; j++) {
            int k = order[j];
            const char *label = gr_exec_kernel_label(e, k);
            printf("%-7d %10.4f %5.1f%% %5d  %-8s %s\n", k, prof[k] / (double)bench * 1e3,
                   ktotal > 0 ? 100 * prof[k] / ktotal : 0, gr_exec_kernel_uses(e, k),
                   gr_exec_kernel_stale(e, k)   ? "tuned*"
                   : gr_exec_kernel_tuned(e, k) ? "tuned"
                                                : "default",
                   label);
        }
        int nstale = 0;
        for (int k = 0; k < nk; k++) nstale += gr_exec_kernel_stale(e, k);
        if (nstale)
            printf("tuned*: a record never timed against this Loom's default schedule\n");
        free(order);
        free(lat);
    }
done:
    for (int i = 0; i < MAXN; i++) {
        rt_tensor_free(rt_own[i]);
        gr_tensor_free(pb_own[i]);
        free((void *)shapes[i].name);
        free((void *)shapes[i].shape);
    }
    free(prof);
    free(err);
    gr_exec_free(e);
    gr_model_free(m);
    tdb_close(db);
    return rc;
}
