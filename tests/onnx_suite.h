/*
 * tests/onnx_suite.h — the inputs of one test of ONNX's own suite
 * (libonnx-testdata: DIR/model.onnx, DIR/test_data_set_0/input_K.pb) given
 * to its model the way a real model has them, for the tests that infer,
 * optimize or partition every model of the suite.
 */
#ifndef LOOM_TESTS_ONNX_SUITE_H
#define LOOM_TESTS_ONNX_SUITE_H

#include <dirent.h>
#include <stdbool.h>

#include "loom/graph.h"

#define OS_TESTDATA "/usr/share/libonnx-testdata/data"
#define OS_NODE_TESTS OS_TESTDATA "/node"

/* Skips the running test when libonnx-testdata is not installed. */
void os_need_testdata(void);

/* The version of `domain` ("" or "ai.onnx": the default one) m imports;
 * 0 when it imports none. */
int64_t os_opset_of(const gr_model *m, const char *domain);

/* The tests of one folder of the suite (root: OS_TESTDATA/node, ...):
 *   os_walk wk;
 *   if (os_walk_open(&wk, root)) while (os_walk_next(&wk)) use(wk.name, wk.dir, wk.model);
 * os_walk_next skips dot entries and folders without a model.onnx, and
 * closes the folder when it returns false. */
typedef struct {
    DIR *d;
    char root[4096];
    const char *name;   /* the test's folder name */
    char dir[8192];     /* root/name */
    char model[8448];   /* root/name/model.onnx */
} os_walk;
/* false when root cannot be opened. */
bool os_walk_open(os_walk *wk, const char *root);
bool os_walk_next(os_walk *wk);

/* DIR/test_data_set_0/KIND_K.pb (KIND "input" or "output"); NULL when the
 * file is absent, or (must_load false) when it does not load. With
 * must_load, a file that does not load fails the running test. */
gr_tensor *os_load_pb(const char *dir, const char *kind, int k, bool must_load);

/* The data set's inputs, one per graph input in order (NULL: no file, or
 * not a tensor input). */
typedef struct {
    gr_tensor *inputs[64];
    int k;
    gr_input_shape fixed[64]; /* the dynamic inputs' shapes, for gr_infer_shapes */
    int nfixed;
} os_inputs;

/* Loads in's inputs for m: the integer ones become constants of m,
 * contents and all (ONNX's tests pass as inputs what a real model has as
 * initializers: Reshape's shape, Slice's starts, axes); the others with a
 * dynamic dimension fix their shape in in->fixed. */
void os_inputs_load(const char *dir, gr_model *m, os_inputs *in, bool must_load);
/* Frees in's tensors, first taking them back from m's values (m NULL:
 * the model is already freed). */
void os_inputs_free(gr_model *m, os_inputs *in);

#endif
