/* tests/onnx_suite.c — see onnx_suite.h. */
#include "onnx_suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

void os_need_testdata(void)
{
    struct stat st;
    if (stat(OS_NODE_TESTS, &st) != 0) {
        printf("libonnx-testdata is not installed (" OS_NODE_TESTS "): skipped\n");
        skip();
    }
}

int64_t os_opset_of(const gr_model *m, const char *domain)
{
    if (!*domain || strcmp(domain, "ai.onnx") == 0) return m->opset;
    for (int i = 0; i < m->n_opsets; i++)
        if (strcmp(m->opsets[i].domain, domain) == 0) return m->opsets[i].version;
    return 0;
}

bool os_walk_open(os_walk *wk, const char *root)
{
    int len = snprintf(wk->root, sizeof wk->root, "%s", root);
    assert_true(len > 0 && (size_t)len < sizeof wk->root);
    wk->d = opendir(root);
    return wk->d != NULL;
}

bool os_walk_next(os_walk *wk)
{
    struct dirent *e;
    while ((e = readdir(wk->d))) {
        if (e->d_name[0] == '.') continue;
        int len = snprintf(wk->dir, sizeof wk->dir, "%s/%s", wk->root, e->d_name);
        assert_true(len > 0 && (size_t)len < sizeof wk->dir);
        len = snprintf(wk->model, sizeof wk->model, "%s/model.onnx", wk->dir);
        assert_true(len > 0 && (size_t)len < sizeof wk->model);
        if (access(wk->model, R_OK) != 0) continue;
        wk->name = e->d_name;
        return true;
    }
    closedir(wk->d);
    wk->d = NULL;
    return false;
}

gr_tensor *os_load_pb(const char *dir, const char *kind, int k, bool must_load)
{
    char path[8448];
    int len = snprintf(path, sizeof path, "%s/test_data_set_0/%s_%d.pb", dir, kind, k);
    assert_true(len > 0 && (size_t)len < sizeof path);
    if (access(path, R_OK) != 0) return NULL;
    char *err = NULL;
    gr_tensor *t = gr_tensor_load(path, must_load ? &err : NULL);
    if (!t && must_load) fail_msg("%s: %s", path, err);
    return t;
}

void os_inputs_load(const char *dir, gr_model *m, os_inputs *in, bool must_load)
{
    gr_graph *g = m->graph;
    memset(in, 0, sizeof *in);
    for (int i = 0; i < g->n_inputs && in->k < 64; i++) {
        gr_value *v = &g->values[g->inputs[i]];
        if (v->kind != GR_VALUE_INPUT) continue;
        /* Sequences and optionals are not TensorProto files. */
        gr_tensor *t =
            v->type.kind == GR_TYPE_TENSOR ? os_load_pb(dir, "input", in->k, must_load) : NULL;
        in->inputs[in->k++] = t;
        if (!t) continue;
        if (t->elem_type == GR_INT64 || t->elem_type == GR_INT32) {
            v->kind = GR_VALUE_CONST;
            v->data = t;
            v->type.ndim = t->ndim;
            v->type.shape = t->shape;
            v->type.dim_params = NULL;
            continue;
        }
        bool dynamic = v->type.ndim < 0;
        for (int d = 0; d < v->type.ndim; d++) dynamic |= v->type.shape[d] < 0;
        if (dynamic) in->fixed[in->nfixed++] = (gr_input_shape){v->name, t->ndim, t->shape};
    }
}

void os_inputs_free(gr_model *m, os_inputs *in)
{
    if (m) {
        gr_graph *g = m->graph;
        for (int i = 0; i < g->n_values; i++)
            for (int j = 0; j < in->k; j++)
                if (in->inputs[j] && g->values[i].data == in->inputs[j]) g->values[i].data = NULL;
    }
    for (int j = 0; j < in->k; j++) gr_tensor_free(in->inputs[j]);
    in->k = 0;
}
