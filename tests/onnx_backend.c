/*
 * ONNX's own backend tests (Debian's libonnx-testdata) run through Loom:
 * every test directory holds model.onnx and test_data_set_N/ with
 * input_K.pb and output_K.pb (TensorProto). A test runs when every
 * operator of its model is one Loom runs (gr_op_runnable) at the model's
 * opset and its tensors have types and shapes Loom holds; it then
 * compiles (gr_compile), runs each data set and compares every output
 * with ONNX's tolerances: |got - want| <= atol + rtol |want|, rtol 1e-3,
 * atol 1e-7 (NaN matches NaN; integers and bools exactly; bfloat16, with
 * 8 significant bits, to rtol 2^-7). Outputs are poisoned with NaN before
 * each run. float16 and bfloat16 tensors are read as their bits (ONNX's
 * bfloat16 test data is stored as uint16 bits).
 *
 * Graph inputs that a node reads at compile time (gr_op_input_static:
 * Reshape's shape, Slice's starts, ... which ONNX's tests feed as inputs),
 * directly or through nodes computing such an input from them, become
 * constants holding data set 0's values; a later data set that
 * changes them fails the test. A model that computes such an input from
 * run-time values (inference: "must be a constant") is skipped: Loom's
 * shapes are static. Tests whose graph inputs are not tensors
 * of a type Loom holds (sequences, optionals, strings) are skipped, and
 * so are models Loom refuses because they train at random (Dropout with
 * training_mode: its expected outputs come from numpy's generator), and
 * so are models Loom refuses for an attribute value it does not
 * implement (a message saying "is not supported", Resize's antialias).
 *
 * Prints "N passed, M failed, K skipped" and the skipped tests grouped by
 * reason (the missing operators). Exit status 1 when a test fails (or
 * when fewer than --min-pass pass), 0 otherwise; 77 (skipped) when the
 * test data is not installed.
 *
 * Usage: onnx_backend [--data DIR] [--filter SUBSTR] [--min-pass N] [-v]
 */
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loom/graph.h"

/* Paths and messages here are cut at their buffers' sizes on purpose. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define SUITES 4
static const char *const suites[SUITES] = {"node", "pytorch-converted", "pytorch-operator",
                                           "simple"};

typedef struct {
    char reason[160];
    int count;
    char example[96];
} skip_group;

static skip_group groups[512];
static int ngroups;

static void add_skip(const char *reason, const char *test)
{
    for (int i = 0; i < ngroups; i++)
        if (strcmp(groups[i].reason, reason) == 0) {
            groups[i].count++;
            return;
        }
    if (ngroups == (int)(sizeof groups / sizeof *groups)) return;
    snprintf(groups[ngroups].reason, sizeof groups[ngroups].reason, "%s", reason);
    snprintf(groups[ngroups].example, sizeof groups[ngroups].example, "%s", test);
    groups[ngroups++].count = 1;
}

/* Whether err is one of Loom's refusals of what it does not implement
 * ("... is not supported"); why then holds the rule broken, without the
 * model and node (so that refusals group by reason). */
static bool refusal(const char *err, char *why, size_t size)
{
    if (!strstr(err, "is not supported")) return false;
    const char *at = strstr(err, "): ");
    snprintf(why, size, "refused: %s", at ? at + 3 : err);
    return true;
}

static int cmp_dirent(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted subdirectory names of dir (malloc'd). */
static char **list_dirs(const char *dir, int *n)
{
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) return NULL;
    char **names = NULL;
    int cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            names = realloc(names, (size_t)cap * sizeof *names);
        }
        names[(*n)++] = strdup(de->d_name);
    }
    closedir(d);
    if (*n) qsort(names, (size_t)*n, sizeof *names, cmp_dirent);
    return names;
}

static void free_list(char **names, int n)
{
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* IEEE binary16 bits to a double (exact: every half is a double). */
static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f;
    double m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

/* bfloat16 bits are float32's upper half. */
static double bfloat_to_double(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static double elem_get(const void *data, int elem_type, int64_t i, bool *is_float)
{
    const char *p = data;
    *is_float = false;
    switch (elem_type) {
    case GR_FLOAT: *is_float = true; return ((const float *)p)[i];
    case GR_DOUBLE: *is_float = true; return ((const double *)p)[i];
    case GR_FLOAT16: *is_float = true; return half_to_double(((const uint16_t *)p)[i]);
    case GR_BFLOAT16: *is_float = true; return bfloat_to_double(((const uint16_t *)p)[i]);
    case GR_INT8: return ((const int8_t *)p)[i];
    case GR_UINT8:
    case GR_BOOL: return ((const uint8_t *)p)[i];
    case GR_INT16: return ((const int16_t *)p)[i];
    case GR_UINT16: return ((const uint16_t *)p)[i];
    case GR_INT32: return ((const int32_t *)p)[i];
    case GR_UINT32: return ((const uint32_t *)p)[i];
    case GR_INT64: return (double)((const int64_t *)p)[i];
    case GR_UINT64: return (double)((const uint64_t *)p)[i];
    default: return NAN;
    }
}

/* Compares an output; false and why when it differs. */
static bool compare(const gr_tensor *want, const DLTensor *got, int elem_type, char *why,
                    size_t size)
{
    int64_t n = 1;
    for (int d = 0; d < got->ndim; d++) n *= got->shape[d];
    if (n != want->numel) {
        snprintf(why, size, "%" PRId64 " elements, expected %" PRId64, n, want->numel);
        return false;
    }
    int64_t bad = 0, first = -1;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        bool fl;
        double w = elem_get(want->data, want->elem_type, i, &fl);
        double g = elem_get(got->data, elem_type, i, &fl);
        bool ok;
        if (fl) {
            /* bfloat16 holds 8 significant bits: its outputs are compared
             * to within one unit in the last place (the test data's
             * float-to-bfloat16 casts truncate, Loom rounds to nearest). */
            double rtol = elem_type == GR_BFLOAT16 ? 1.0 / 128 : 1e-3;
            ok = (isnan(w) && isnan(g)) || (isinf(w) && w == g) ||
                 fabs(g - w) <= 1e-7 + rtol * fabs(w);
        } else {
            ok = g == w;
        }
        if (!ok) {
            if (first < 0) first = i;
            if (fabs(g - w) > worst || isnan(g)) worst = isnan(g) ? INFINITY : fabs(g - w);
            bad++;
        }
    }
    if (bad) {
        bool fl;
        snprintf(why, size, "%" PRId64 " of %" PRId64 " elements differ (first at %" PRId64
                            ": got %.9g, expected %.9g; largest difference %.3g)",
                 bad, n, first, elem_get(got->data, elem_type, first, &fl),
                 elem_get(want->data, want->elem_type, first, &fl), worst);
        return false;
    }
    return true;
}

static void poison(const DLTensor *t, int elem_type)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    if (elem_type == GR_FLOAT)
        for (int64_t i = 0; i < n; i++) ((float *)t->data)[i] = NAN;
    else if (elem_type == GR_DOUBLE)
        for (int64_t i = 0; i < n; i++) ((double *)t->data)[i] = NAN;
    else if (elem_type == GR_FLOAT16 || elem_type == GR_BFLOAT16)
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)t->data)[i] = elem_type == GR_FLOAT16 ? 0x7e00 : 0x7fc0;
    else {
        size_t bytes = (size_t)n * (t->dtype.bits == 1 ? 1 : t->dtype.bits / 8u);
        memset(t->data, 0xA5, bytes);
    }
}

typedef enum { T_PASS, T_FAIL, T_SKIP } outcome;

/* ONNX's bfloat16 tests store their data as uint16 tensors holding the
 * bits: read as the model's bfloat16. */
static void bfloat16_bits(gr_tensor *t, int model_elem)
{
    if (!t || model_elem != GR_BFLOAT16 || t->elem_type != GR_UINT16) return;
    t->elem_type = GR_BFLOAT16;
    t->dtype = t->dl.dtype = (DLDataType){kDLBfloat, 16, 1};
}

/* The element type of the model's k-th run-time graph input (-1 if none). */
static int input_elem(const gr_model *m, int k)
{
    for (int i = 0; i < m->graph->n_inputs; i++) {
        const gr_value *v = &m->graph->values[m->graph->inputs[i]];
        if (v->kind == GR_VALUE_INPUT && k-- == 0) return v->type.elem_type;
    }
    return -1;
}

static int64_t node_opset(const gr_model *m, const gr_node *n)
{
    for (int j = 0; j < m->n_opsets; j++)
        if (n->domain[0] && strcmp(m->opsets[j].domain, n->domain) == 0) return m->opsets[j].version;
    return m->opset;
}

/* Whether some node reads value v when the model compiles, directly or
 * through nodes computing such a value from it (a window's size cast to
 * float and then Range's limit): memo[v] 0 unknown, 1 no, 2 yes. */
static bool read_at_compile_time(const gr_model *m, int v, signed char *memo)
{
    if (memo[v]) return memo[v] == 2;
    memo[v] = 1;
    const gr_graph *g = m->graph;
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] != v) continue;
            bool hit = gr_op_input_static(n->domain, n->op_type, node_opset(m, n), k);
            /* Shape and Size read no values: X stays an input. */
            bool values = strcmp(n->op_type, "Shape") != 0 && strcmp(n->op_type, "Size") != 0;
            for (int o = 0; !hit && values && o < n->n_outputs; o++)
                hit = n->outputs[o] >= 0 && read_at_compile_time(m, n->outputs[o], memo);
            if (hit) {
                memo[v] = 2;
                return true;
            }
        }
    }
    return false;
}

/* Makes graph input v a constant holding t (the model keeps the pointer;
 * t must outlive it). */
static void freeze_input(gr_model *m, int v, gr_tensor *t)
{
    gr_value *val = &m->graph->values[v];
    val->kind = GR_VALUE_CONST;
    val->data = t;
    val->type.ndim = t->ndim;
    val->type.shape = t->shape;
    val->type.dim_params = NULL;
}

static bool type_holdable(const gr_type *t, char *why, size_t size)
{
    if (t->kind != GR_TYPE_TENSOR) {
        snprintf(why, size, "non-tensor value");
        return false;
    }
    switch (t->elem_type) {
    case GR_FLOAT:
    case GR_DOUBLE:
    case GR_INT8:
    case GR_INT16:
    case GR_INT32:
    case GR_INT64:
    case GR_UINT8:
    case GR_UINT16:
    case GR_UINT32:
    case GR_UINT64:
    case GR_FLOAT16:
    case GR_BFLOAT16:
    case GR_BOOL: break;
    default: snprintf(why, size, "element type %s", gr_elem_type_name(t->elem_type)); return false;
    }
    if (t->ndim > 8) {
        snprintf(why, size, "rank above 8");
        return false;
    }
    return true;
}

/* Tests whose expected outputs contradict their own model (checked by
 * hand against ONNX's operator definition): skipped, with the reason. */
static const struct {
    const char *test, *why;
} contradictions[] = {
    {"node/test_adam_multiple", "test data: expected outputs use epsilon 1e-2, the node leaves it at its default 1e-6"},
};

static outcome run_test(const char *dir, const char *name, char *why, size_t size)
{
    for (size_t i = 0; i < sizeof contradictions / sizeof *contradictions; i++)
        if (strcmp(name, contradictions[i].test) == 0) {
            snprintf(why, size, "%s", contradictions[i].why);
            return T_SKIP;
        }
    char path[4096];
    char *err = NULL;
    outcome res = T_FAIL;
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    gr_model *m = gr_model_load(path, &err);
    gr_exec *e = NULL;
    gr_tensor *ins[64] = {0};
    int nin = 0;
    gr_input_shape shapes[64];
    bool frozen[64] = {false};
    signed char *memo = NULL;
    if (!m) {
        snprintf(why, size, "load: %s", err);
        goto done;
    }
    /* Operators first: the skip reason lists every missing one. */
    {
        char missing[160] = "";
        for (int i = 0; i < m->graph->n_nodes; i++) {
            const gr_node *n = &m->graph->nodes[i];
            int64_t opset = node_opset(m, n);
            if (gr_op_runnable(n->domain, n->op_type, opset)) continue;
            /* An operator known at other opsets names the model's. */
            char item[80];
            if (gr_op_runnable(n->domain, n->op_type, 13))
                snprintf(item, sizeof item, "%s(opset %" PRId64 ")", n->op_type, opset);
            else
                snprintf(item, sizeof item, "%s", n->op_type);
            if (!strstr(missing, item)) {
                size_t l = strlen(missing);
                snprintf(missing + l, sizeof missing - l, "%s%s", l ? " " : "", item);
            }
        }
        if (missing[0]) {
            snprintf(why, size, "operator %s", missing);
            res = T_SKIP;
            goto done;
        }
    }
    /* Inputs Loom cannot hold are skipped before their files are read
     * (a sequence's file is no tensor). */
    for (int i = 0; i < m->graph->n_inputs; i++) {
        const gr_value *v = &m->graph->values[m->graph->inputs[i]];
        char tw[96];
        if (v->kind == GR_VALUE_INPUT && !type_holdable(&v->type, tw, sizeof tw)) {
            snprintf(why, size, "graph input: %s", tw);
            res = T_SKIP;
            goto done;
        }
    }
    /* Inputs of data set 0 fix the shapes (or, read at compile time, the
     * values). */
    for (int k = 0; k < 64; k++) {
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, k);
        struct stat st;
        if (stat(path, &st) != 0) break;
        ins[k] = gr_tensor_load(path, &err);
        if (!ins[k]) {
            snprintf(why, size, "input: %s", err);
            goto done;
        }
        bfloat16_bits(ins[k], input_elem(m, k));
        nin = k + 1;
    }
    {
        int ns = 0, k = 0;
        memo = calloc((size_t)m->graph->n_values + 1, 1);
        if (!memo) {
            snprintf(why, size, "out of memory");
            goto done;
        }
        for (int i = 0; i < m->graph->n_inputs && k < nin; i++) {
            const gr_value *v = &m->graph->values[m->graph->inputs[i]];
            if (v->kind != GR_VALUE_INPUT) continue;
            if (read_at_compile_time(m, m->graph->inputs[i], memo)) {
                frozen[k] = true;
                freeze_input(m, m->graph->inputs[i], ins[k++]);
                continue;
            }
            /* ONNX's CastLike bfloat16 tests feed a rank-1 'like' to an
             * input declared rank 2: the data contradicts the model. */
            if (v->type.kind == GR_TYPE_TENSOR && v->type.ndim >= 0 &&
                v->type.ndim != ins[k]->ndim) {
                snprintf(why, size, "test data: an input's rank differs from the model's");
                res = T_SKIP;
                goto done;
            }
            shapes[ns].name = v->name;
            shapes[ns].ndim = ins[k]->ndim;
            shapes[ns].shape = ins[k]->shape;
            ns++;
            k++;
        }
        if (gr_infer_shapes(m, ns, shapes, &err) != 0) {
            /* A shape computed from run-time values (Range's limit from a
             * graph input through a Cast): Loom's shapes are static. */
            if (strstr(err, "must be a constant")) {
                snprintf(why, size, "a shape computed from run-time values");
                res = T_SKIP;
                goto done;
            }
            /* Training-mode Dropout: the expected outputs come from
             * numpy's random generator. */
            if (strstr(err, "Loom runs inference only")) {
                snprintf(why, size, "random training (refused: Loom runs inference only)");
                res = T_SKIP;
                goto done;
            }
            /* A deliberate refusal (an attribute value Loom does not
             * implement, named by its message) is a skip, not a failure. */
            if (refusal(err, why, size)) {
                res = T_SKIP;
                goto done;
            }
            snprintf(why, size, "shapes: %s", err);
            goto done;
        }
    }
    for (int v = 0; v < m->graph->n_values; v++) {
        const gr_value *val = &m->graph->values[v];
        /* Folded values are never held, except graph outputs (returned). */
        bool is_output = false;
        for (int o = 0; o < m->graph->n_outputs; o++) is_output |= m->graph->outputs[o] == v;
        if (val->kind == GR_VALUE_OUTER || (val->kind == GR_VALUE_NODE && val->data && !is_output))
            continue;
        char tw[96];
        if (!type_holdable(&val->type, tw, sizeof tw)) {
            snprintf(why, size, "%s", tw);
            res = T_SKIP;
            goto done;
        }
    }
    e = gr_compile(m, NULL, &err);
    if (!e) {
        if (refusal(err, why, size)) {
            res = T_SKIP;
            goto done;
        }
        snprintf(why, size, "compile: %s", err);
        goto done;
    }
    int nrun = 0;
    for (int k = 0; k < nin; k++) nrun += !frozen[k];
    if (gr_exec_num_inputs(e) != nrun) {
        snprintf(why, size, "%d input files (%d read at compile time), the model takes %d inputs",
                 nin, nin - nrun, gr_exec_num_inputs(e));
        goto done;
    }
    for (int set = 0;; set++) {
        char sdir[4096];
        struct stat st;
        snprintf(sdir, sizeof sdir, "%s/test_data_set_%d", dir, set);
        if (stat(sdir, &st) != 0) break;
        DLTensor *args[64];
        gr_tensor *cur[64] = {0};
        bool ok = true;
        for (int k = 0; k < nin && ok; k++) {
            if (set == 0) {
                cur[k] = ins[k];
            } else {
                snprintf(path, sizeof path, "%s/input_%d.pb", sdir, k);
                cur[k] = gr_tensor_load(path, &err);
                if (!cur[k]) {
                    snprintf(why, size, "input: %s", err);
                    ok = false;
                }
                bfloat16_bits(cur[k], input_elem(m, k));
            }
            if (ok && set > 0 && frozen[k] &&
                (cur[k]->nbytes != ins[k]->nbytes ||
                 (ins[k]->nbytes && memcmp(cur[k]->data, ins[k]->data, ins[k]->nbytes) != 0))) {
                snprintf(why, size, "data set %d changes input %d, which Loom reads at compile time",
                         set, k);
                ok = false;
            }
        }
        int na = 0;
        for (int k = 0; ok && k < nin; k++)
            if (!frozen[k]) args[na++] = &cur[k]->dl;
        for (int o = 0; ok && o < gr_exec_num_outputs(e); o++) {
            const gr_value *v = &m->graph->values[gr_exec_output_value(e, o)];
            if (v->kind == GR_VALUE_NODE && !v->data) poison(gr_exec_output(e, o), v->type.elem_type);
        }
        if (ok && gr_run(e, na, args, 0, NULL, &err) != 0) {
            snprintf(why, size, "run: %s", err);
            ok = false;
        }
        for (int o = 0; ok && o < gr_exec_num_outputs(e); o++) {
            snprintf(path, sizeof path, "%s/output_%d.pb", sdir, o);
            gr_tensor *want = gr_tensor_load(path, &err);
            if (!want) {
                snprintf(why, size, "output: %s", err);
                ok = false;
                break;
            }
            const gr_value *v = &m->graph->values[gr_exec_output_value(e, o)];
            bfloat16_bits(want, v->type.elem_type);
            char cw[400];
            if (!compare(want, gr_exec_output(e, o), v->type.elem_type, cw, sizeof cw)) {
                snprintf(why, size, "data set %d output %d ('%s'): %s", set, o, v->name, cw);
                ok = false;
            }
            gr_tensor_free(want);
        }
        for (int k = 0; set > 0 && k < nin; k++) gr_tensor_free(cur[k]);
        if (!ok) goto done;
    }
    res = T_PASS;
done:
    /* The model may hold frozen inputs: freed after it. */
    free(memo);
    gr_exec_free(e);
    gr_model_free(m);
    for (int k = 0; k < nin; k++) gr_tensor_free(ins[k]);
    free(err);
    return res;
}

int main(int argc, char **argv)
{
    const char *data = "/usr/share/libonnx-testdata/data";
    const char *filter = NULL;
    int min_pass = 0;
    bool verbose = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) data = argv[++i];
        else if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc) filter = argv[++i];
        else if (strcmp(argv[i], "--min-pass") == 0 && i + 1 < argc) min_pass = atoi(argv[++i]);
        else if (strcmp(argv[i], "-v") == 0) verbose = true;
        else {
            fprintf(stderr, "usage: onnx_backend [--data DIR] [--filter SUBSTR] [--min-pass N] [-v]\n");
            return 2;
        }
    }
    struct stat st;
    if (stat(data, &st) != 0) {
        printf("SKIPPED: %s not found (apt-get install libonnx-testdata)\n", data);
        return 77;
    }
    int pass = 0, fail = 0, skip = 0;
    for (int s = 0; s < SUITES; s++) {
        char sdir[4096];
        snprintf(sdir, sizeof sdir, "%s/%s", data, suites[s]);
        int n;
        char **tests = list_dirs(sdir, &n);
        for (int t = 0; t < n; t++) {
            char tdir[4096], full[512], why[2048] = "";
            snprintf(full, sizeof full, "%s/%s", suites[s], tests[t]);
            if (filter && !strstr(full, filter)) continue;
            snprintf(tdir, sizeof tdir, "%s/%s", sdir, tests[t]);
            outcome r = run_test(tdir, full, why, sizeof why);
            if (r == T_PASS) {
                pass++;
                if (verbose) printf("PASS %s\n", full);
            } else if (r == T_SKIP) {
                skip++;
                add_skip(why, full);
                if (verbose) printf("SKIP %s: %s\n", full, why);
            } else {
                fail++;
                printf("FAIL %s: %s\n", full, why);
            }
            fflush(stdout);
        }
        free_list(tests, n);
    }
    printf("\nskipped, by reason (count, an example):\n");
    for (int i = 0; i < ngroups; i++)
        printf("  %4d  %s  (%s)\n", groups[i].count, groups[i].reason, groups[i].example);
    printf("\nONNX backend tests: %d passed, %d failed, %d skipped\n", pass, fail, skip);
    if (fail) return 1;
    if (pass < min_pass) {
        printf("fewer than %d passed\n", min_pass);
        return 1;
    }
    return 0;
}
