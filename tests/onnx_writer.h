/*
 * tests/onnx_writer.h — tiny ONNX models written from tests (protobuf-c),
 * so that an operator's lowering can be run through the public
 * gr_model_load / gr_compile / gr_run on attribute combinations ONNX's
 * own test suite lacks. Every call fails the running cmocka test on an
 * error; all memory is the writer's until ow_free.
 *
 *   ow_model *w = ow_new(13);
 *   ow_input(w, "x", GR_FLOAT, 2, (int64_t[]){2, 3});
 *   ow_node *n = ow_node_add(w, "", "Gelu", "x", "y");
 *   ow_attr_str(n, "approximate", "tanh");
 *   ow_output(w, "y");
 *   ow_write(w, path);
 */
#ifndef LOOM_TESTS_ONNX_WRITER_H
#define LOOM_TESTS_ONNX_WRITER_H

#include <stddef.h>
#include <stdint.h>

typedef struct ow_model ow_model;
typedef struct ow_node ow_node;

/* A model importing the default domain at `opset` (and com.microsoft 1). */
ow_model *ow_new(int64_t opset);
void ow_free(ow_model *w);
/* A graph input of an element type (GR_FLOAT, ...) and a shape; a
 * negative extent is a dynamic dimension (dim_param "N"). */
void ow_input(ow_model *w, const char *name, int elem_type, int ndim, const int64_t *shape);
/* An initializer with raw little-endian contents of nbytes bytes. */
void ow_init(ow_model *w, const char *name, int elem_type, int ndim, const int64_t *shape,
             const void *data, size_t nbytes);
/* A graph output (its type is left to inference). */
void ow_output(ow_model *w, const char *name);
/* A node; inputs and outputs are comma-separated names ("" entries leave
 * an optional one out: "x,,max"). */
ow_node *ow_node_add(ow_model *w, const char *domain, const char *op, const char *inputs,
                     const char *outputs);
void ow_attr_int(ow_node *n, const char *name, int64_t v);
void ow_attr_float(ow_node *n, const char *name, float v);
void ow_attr_str(ow_node *n, const char *name, const char *v);
void ow_attr_ints(ow_node *n, const char *name, int count, const int64_t *v);
/* A TENSOR attribute: ndim/shape, raw contents. */
void ow_attr_tensor(ow_node *n, const char *name, int elem_type, int ndim, const int64_t *shape,
                    const void *data, size_t nbytes);
/* Writes the model to path. */
void ow_write(ow_model *w, const char *path);

#endif

/* ---- running what was written ---- */
#include "loom/graph.h"

/* Writes w to a fresh file and compiles it for llvm; NULL and *err
 * (malloc'd) when loading or compiling fails. *m receives the model
 * (gr_model_free after gr_exec_free; NULL when loading failed). */
gr_exec *ow_compile(ow_model *w, gr_model **m, char **err);
/* Runs e once on inputs (in graph input order) after poisoning every
 * output (NaN for float/double, 0xA5 bytes otherwise); fails the test if
 * the run fails. Returns output k (the exec's view). */
const DLTensor *ow_run(gr_exec *e, int nin, DLTensor *const *ins, int k);
/* A compact CPU tensor (rt_tensor_alloc; rt_tensor_free). */
DLTensor *ow_tensor(DLDataType dt, int ndim, const int64_t *shape);
/* Element i of t as a double / set from a double (C conversion). */
double ow_get(const DLTensor *t, int64_t i);
void ow_set(DLTensor *t, int64_t i, double v);
int64_t ow_numel(const DLTensor *t);
