/* graph/passes.c — the graph passes in their one fixed order
 * (gr_optimize), each alone (gr_pass_run), and LOOM_DUMP_GRAPH=DIR: the
 * model after every pass as gr_model_print text, for whoever debugs a
 * pass (tir/dump.c does the same for the loop IR).
 *
 * The order: folding constants first makes shape subgraphs initializers
 * (so Reshape shapes are plain data); batch normalizations fold next,
 * which leaves their Conv's old weights unused; elimination last removes
 * no-ops and whatever the two before left without a reader. */
#define _POSIX_C_SOURCE 200809L
#include "graph/rewrite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef int (*pass_fn)(gr_model *, gr_pass_stats *, char **);

static const struct {
    const char *name;
    pass_fn fn;
} passes[] = {
    {"fold_constants", gr_pass_fold_constants},
    {"fold_batchnorm", gr_pass_fold_batchnorm},
    {"eliminate", gr_pass_eliminate},
    {"convt_phases", gr_pass_convt_phases},
};

#define N_PASSES ((int)(sizeof passes / sizeof *passes))

int gr_pass_count(void) { return N_PASSES; }

const char *gr_pass_name(int i) { return i >= 0 && i < N_PASSES ? passes[i].name : NULL; }

static bool default_domain(const char *d) { return !*d || strcmp(d, "ai.onnx") == 0; }

static int64_t domain_opset(const gr_model *m, const char *domain)
{
    if (default_domain(domain)) return m->opset;
    for (int i = 0; i < m->n_opsets; i++)
        if (strcmp(m->opsets[i].domain, domain) == 0) return m->opsets[i].version;
    return 0;
}

/* Passes read inferred types and contents: only a model gr_infer_shapes
 * accepted (every operator supported, every node output a static tensor). */
static bool check_model(const gr_model *m, const char *what, char **err)
{
    if (!m || !m->graph) {
        gr_set_err(err, "%s: no model", what);
        return false;
    }
    const gr_graph *g = m->graph;
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        char label[512];
        gr_node_label(g, i, label, sizeof label);
        if (!gr_op_supported(n->domain, n->op_type, domain_opset(m, n->domain))) {
            gr_set_err(err, "%s: %s: %s is not an operator gr_infer_shapes supports: the graph "
                            "passes run on inferred models only", m->path, what, label);
            return false;
        }
        for (int k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k] < 0) continue;
            const gr_value *v = &g->values[n->outputs[k]];
            if (v->type.kind != GR_TYPE_TENSOR || v->type.ndim < 0) {
                gr_set_err(err, "%s: %s: %s output '%s' has no inferred shape: run "
                                "gr_infer_shapes first", m->path, what, label, v->name);
                return false;
            }
        }
    }
    return true;
}

int gr_pass_run(gr_model *m, int i, char **err)
{
    if (err) *err = NULL;
    if (i < 0 || i >= N_PASSES) {
        gr_set_err(err, "gr_pass_run: pass %d does not exist (0 to %d)", i, N_PASSES - 1);
        return -1;
    }
    if (!check_model(m, "gr_pass_run", err)) return -1;
    return passes[i].fn(m, NULL, err);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A dump is a debugging aid, never a reason for gr_optimize to fail: a
 * file that cannot be written turns the dump off for this call, said on
 * stderr. */
static const char *dump_dir(void)
{
    const char *dir = getenv("LOOM_DUMP_GRAPH");
    if (!dir || !*dir) return NULL;
    if (mkdir(dir, 0777) && errno != EEXIST) {
        fprintf(stderr, "loom: LOOM_DUMP_GRAPH: cannot create '%s': %s; graph dumps are off\n", dir,
                strerror(errno));
        return NULL;
    }
    return dir;
}

static bool dump_named(const char *dir, int i, const char *name, const gr_model *m)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%02d-%s.txt", dir, i, name);
    FILE *f = fopen(path, "w");
    if (f) {
        gr_model_print(m, f);
        if (fclose(f) == 0) return true;
    }
    fprintf(stderr, "loom: LOOM_DUMP_GRAPH: cannot write '%s': %s; graph dumps are off\n", path,
            strerror(errno));
    return false;
}

static bool dump(const char *dir, int i, const gr_model *m)
{
    return dump_named(dir, i, passes[i].name, m);
}

void gr_dump_graph(const gr_model *m, int index, const char *name)
{
    const char *dir = dump_dir();
    if (dir) (void)dump_named(dir, index, name, m);
}

int gr_optimize(gr_model *m, gr_pass_report *report, char **err)
{
    if (err) *err = NULL;
    if (report)
        for (int i = 0; i < N_PASSES; i++) report[i] = (gr_pass_report){passes[i].name, 0, 0.0};
    if (!check_model(m, "gr_optimize", err)) return -1;
    const char *dir = dump_dir();
    int total = 0;
    for (int i = 0; i < N_PASSES; i++) {
        double t0 = now_s();
        int n = passes[i].fn(m, NULL, err);
        if (report) {
            report[i].rewrites = n < 0 ? 0 : n;
            report[i].seconds = now_s() - t0;
        }
        if (n < 0) return -1;
        total += n;
        if (dir && !dump(dir, i, m)) dir = NULL;
    }
    return total;
}
