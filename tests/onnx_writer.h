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
/* Imports one more operator set (the model imports "" at the opset given
 * to ow_new and com.microsoft 1); at most once per model. */
void ow_opset_import(ow_model *w, const char *domain, int64_t version);
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
void ow_attr_strs(ow_node *n, const char *name, int count, const char *const *v);
void ow_attr_floats(ow_node *n, const char *name, int count, const float *v);
/* A TENSOR attribute: ndim/shape, raw contents. */
void ow_attr_tensor(ow_node *n, const char *name, int elem_type, int ndim, const int64_t *shape,
                    const void *data, size_t nbytes);
/* Writes the model to path. */
void ow_write(ow_model *w, const char *path);

/* ---- one-node models as data (tables of cases) ---- */

/* A graph input (nvals 0) or an initializer holding vals[0..nvals)
 * converted to elem_type; a NULL name ends a list. */
typedef struct {
    const char *name;
    int elem_type, ndim;
    int64_t shape[4];
    int nvals;
    double vals[4];
} ow_value_spec;

/* An attribute: kind 'i' (i), 'f' (f), 's' (s) or 'I' (ints[0..n));
 * a NULL name ends a list. */
typedef struct {
    const char *name;
    char kind;
    int64_t i;
    float f;
    const char *s;
    int n;
    int64_t ints[4];
} ow_attr_spec;

/* One node of op at opset reading `inputs` (NULL: "x"; "" none) and
 * writing the graph output "y", its values and attributes declared. */
typedef struct {
    int64_t opset;
    const char *op;
    const char *inputs;
    ow_value_spec vals[4];
    ow_attr_spec attrs[3];
} ow_node_spec;

ow_model *ow_one_node(const ow_node_spec *s);

/* A one-node model that must be refused, and two pieces its message
 * must hold (ow_expect_error). */
typedef struct {
    ow_node_spec m;
    const char *want[2];
} ow_error_case;

/* ow_expect_error on each of the n cases. */
#define ow_expect_errors(cases, n) ow_expect_errors_((cases), (n), __FILE__, __LINE__)
void ow_expect_errors_(const ow_error_case *cases, size_t n, const char *file, int line);

/* Spec entries with every field given: a graph input of rank nd (its
 * extents follow), a scalar initializer, a rank-1 initializer of n
 * values; INT, FLOAT, STRING and INTS attributes. */
#define OW_IN(name, t, nd, ...) {name, t, nd, {__VA_ARGS__}, 0, {0}}
#define OW_SCALAR(name, t, v) {name, t, 0, {0}, 1, {v}}
#define OW_VEC(name, t, n, ...) {name, t, 1, {n}, n, {__VA_ARGS__}}
#define OW_AI(name, v) {name, 'i', v, 0, NULL, 0, {0}}
#define OW_AF(name, v) {name, 'f', 0, v, NULL, 0, {0}}
#define OW_AS(name, v) {name, 's', 0, 0, v, 0, {0}}
#define OW_AIS(name, n, ...) {name, 'I', 0, 0, NULL, n, {__VA_ARGS__}}

/* ---- running what was written ---- */
#include "loom/graph.h"

/* Writes w to a fresh file and loads it; NULL and *err (malloc'd) when
 * loading fails. */
gr_model *ow_load(ow_model *w, char **err);
/* ow_load that must succeed: fails the running test (at the caller's
 * line) with loading's message otherwise. */
#define ow_load_ok(w) ow_load_ok_((w), __FILE__, __LINE__)
gr_model *ow_load_ok_(ow_model *w, const char *file, int line);
/* Writes w to a fresh file and compiles it for llvm; NULL and *err
 * (malloc'd) when loading or compiling fails. *m receives the model
 * (gr_model_free after gr_exec_free; NULL when loading failed). */
gr_exec *ow_compile(ow_model *w, gr_model **m, char **err);
/* ow_compile that must succeed: fails the running test (at the caller's
 * line) with loading's or compiling's message otherwise. */
#define ow_compile_ok(w, m) ow_compile_ok_((w), (m), __FILE__, __LINE__)
gr_exec *ow_compile_ok_(ow_model *w, gr_model **m, const char *file, int line);
/* ow_compile that must fail with a message holding both a and b; frees w. */
#define ow_expect_error(w, a, b) ow_expect_error_((w), (a), (b), __FILE__, __LINE__)
void ow_expect_error_(ow_model *w, const char *a, const char *b, const char *file, int line);
/* Frees what ow_compile_ok returned and the writer. */
void ow_finish(ow_model *w, gr_exec *e, gr_model *m);
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
/* The ONNX element type (GR_FLOAT, ...) of a DLPack dtype. */
int ow_elem_type(DLDataType t);
/* The flat index of a tensor of shape s (rank n) that numpy broadcasting
 * reads for flat index o of the output shape os (rank on >= n). */
int64_t ow_bcast_index(int on, const int64_t *os, int64_t o, int n, const int64_t *s);

#endif
