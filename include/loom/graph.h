/*
 * loom/graph.h — whole models: ONNX models loaded into Loom's graph IR.
 *
 * gr_model_load reads an ONNX model file (a serialized onnx.ModelProto,
 * parsed with protobuf-c from ONNX's own onnx.proto) into plain C structs
 * that mirror ONNX's IR (https://onnx.ai/onnx/repo-docs/IR.html):
 *
 *   gr_model   ir_version, producer, opset imports, the main graph
 *   gr_graph   values (every named tensor the graph mentions), nodes in the
 *              file's (topological) order, graph inputs and outputs
 *   gr_value   name, where it comes from (graph input, initializer, node
 *              output, or an enclosing graph for a subgraph), its type:
 *              ONNX element type + DLPack dtype, rank and shape
 *   gr_node    op_type, domain, name, inputs/outputs as value indices,
 *              attributes
 *   gr_tensor  a constant: an initializer, a tensor attribute, or a
 *              TensorProto file; data packed row-major, little-endian
 *
 * Loading infers no shapes and checks no operators: a value's type is what
 * the file declares (graph inputs/outputs, value_info, initializers) and
 * is unknown (ndim -1) otherwise, until gr_infer_shapes gives every value
 * a static shape and dtype.
 *
 * Ownership: a gr_model owns everything reachable from it (strings,
 * arrays, tensors, subgraphs) until gr_model_free; a gr_tensor from
 * gr_tensor_load owns its data until gr_tensor_free. All of it is
 * read-only to the caller.
 *
 * Errors: loaders return NULL and, when err is not NULL, set *err to a
 * malloc'd message (the caller frees it) naming the file and the tensor,
 * node or value at fault; nothing aborts on bad input.
 *
 * Shapes are int64 arrays in ONNX order (outermost first). Element types
 * are ONNX's TensorProto.DataType numbers (gr_elem_type) together with the
 * DLPack dtype they map to; bool maps to {kDLUInt, 1, 1} as elsewhere in
 * Loom (cg_dl_type), stored one byte per element; string has no DLPack
 * form (dtype.bits 0).
 */
#ifndef LOOM_GRAPH_H
#define LOOM_GRAPH_H

#include "loom/api.h"
#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif
LOOM_API_BEGIN

/* ONNX TensorProto.DataType (onnx.proto, ONNX 1.12), same numbers. */
typedef enum {
    GR_UNDEFINED = 0,
    GR_FLOAT = 1,
    GR_UINT8 = 2,
    GR_INT8 = 3,
    GR_UINT16 = 4,
    GR_INT16 = 5,
    GR_INT32 = 6,
    GR_INT64 = 7,
    GR_STRING = 8,
    GR_BOOL = 9,
    GR_FLOAT16 = 10,
    GR_DOUBLE = 11,
    GR_UINT32 = 12,
    GR_UINT64 = 13,
    GR_COMPLEX64 = 14,
    GR_COMPLEX128 = 15,
    GR_BFLOAT16 = 16
} gr_elem_type;

/* ONNX's name of an element type ("float", "int64", ...; "?" if unknown). */
const char *gr_elem_type_name(int elem_type);
/* The DLPack dtype of an ONNX element type: true and *out set for every
 * type above except UNDEFINED and STRING. Complex types are
 * {kDLComplex, 64|128, 1}. */
bool gr_elem_type_dl(int elem_type, DLDataType *out);
/* Bytes per element (1 for bool, 16 for complex128); 0 for STRING and
 * unknown types. */
size_t gr_elem_type_size(int elem_type);

/* A byte string (ONNX `bytes`/string data): not NUL-terminated in
 * general; `data` has a NUL after `len` bytes for convenience. */
typedef struct {
    size_t len;
    char *data;
} gr_bytes;

/* A constant tensor. For fixed-width types `data` holds numel elements
 * packed row-major, little-endian (this host's order), `nbytes` =
 * numel * gr_elem_type_size; for STRING, `strings` holds numel entries and
 * data is NULL. `dl` is a DLTensor view of `data` on the CPU (compact,
 * strides NULL, shape = `shape`), dl.data NULL for STRING. ndim 0 is a
 * scalar (numel 1); a zero extent gives numel 0 and data may be NULL. */
typedef struct gr_tensor {
    char *name;  /* "" when the TensorProto has none */
    int elem_type;
    DLDataType dtype;
    int ndim;
    int64_t *shape;
    int64_t numel;
    size_t nbytes;
    void *data;
    gr_bytes *strings;
    DLTensor dl;
} gr_tensor;

/* Reads a file holding one serialized onnx.TensorProto (ONNX's test
 * inputs and outputs, test_data_set_N/input_K.pb). Data in raw_data, in
 * the typed fields (float_data, int32_data, ...) or external (location
 * relative to the file's directory) are all read. NULL and *err on a
 * missing or unreadable file, a file that is not a TensorProto, an
 * unsupported element type, or data whose size does not match the shape.
 * Free with gr_tensor_free. */
gr_tensor *gr_tensor_load(const char *path, char **err);
/* Frees a tensor from gr_tensor_load. NULL is a no-op. */
void gr_tensor_free(gr_tensor *t);

/* What a value's type is (ONNX TypeProto's cases). */
typedef enum {
    GR_TYPE_UNKNOWN = 0, /* the file declares no type for it */
    GR_TYPE_TENSOR,
    GR_TYPE_SEQUENCE,
    GR_TYPE_MAP,
    GR_TYPE_OPTIONAL,
    GR_TYPE_SPARSE_TENSOR
} gr_type_kind;

/* A value's type. For TENSOR and SPARSE_TENSOR: elem_type/dtype and the
 * shape. For SEQUENCE and OPTIONAL: `elem` is the element type (owned).
 * For MAP: key_type (an elem_type) and `elem`, the value type.
 * ndim -1 when the rank is unknown. shape[i] is -1 for a dimension that is
 * not a number; dim_params is NULL when every dimension is a number, else
 * ndim entries, each the symbolic name (ONNX dim_param, "N", "batch") of a
 * dynamic dimension or NULL (a number, or a dimension with no name). */
typedef struct gr_type {
    gr_type_kind kind;
    int elem_type;
    DLDataType dtype; /* bits 0 when elem_type has no DLPack form */
    int ndim;
    int64_t *shape;
    char **dim_params;
    int key_type;
    struct gr_type *elem;
} gr_type;

/* Where a value comes from. */
typedef enum {
    GR_VALUE_INPUT = 0, /* a graph input with no initializer */
    GR_VALUE_CONST,     /* an initializer (perhaps also listed as an input,
                           which then may override it: ONNX IR < 4) */
    GR_VALUE_NODE,      /* an output of node `producer` */
    GR_VALUE_OUTER      /* a subgraph's use of an enclosing graph's value */
} gr_value_kind;

/* A named value of a graph. Its type is the initializer's own (CONST), the
 * enclosing graph's value's (OUTER), or what graph inputs, outputs and
 * value_info declare; GR_TYPE_UNKNOWN when nothing does (most node
 * outputs: shape inference is not done here). */
typedef struct gr_value {
    char *name;
    gr_value_kind kind;
    gr_type type;
    int producer;      /* node index for GR_VALUE_NODE, else -1 */
    /* GR_VALUE_CONST: the initializer's data. GR_VALUE_NODE, after
     * gr_infer_shapes: the contents where inference knows them (Constant
     * outputs, Shape of a static value, small integer tensors moved by
     * Identity/Reshape/Squeeze/Unsqueeze/Concat/Gather/Slice/Cast, and
     * Add/Sub/Mul/Div/Neg/Abs/Cast of small known int32/int64/float/double
     * tensors: graph/infer_fold.c), else NULL. */
    gr_tensor *data;
} gr_value;

typedef enum {
    GR_ATTR_FLOAT = 1,
    GR_ATTR_INT = 2,
    GR_ATTR_STRING = 3,
    GR_ATTR_TENSOR = 4,
    GR_ATTR_GRAPH = 5,
    GR_ATTR_FLOATS = 6,
    GR_ATTR_INTS = 7,
    GR_ATTR_STRINGS = 8,
    GR_ATTR_TENSORS = 9,
    GR_ATTR_GRAPHS = 10,
    GR_ATTR_TYPE = 13,
    GR_ATTR_TYPES = 14
} gr_attr_kind; /* ONNX AttributeProto.AttributeType numbers */

struct gr_graph;

/* A node attribute: the member that `kind` names is set; list kinds use
 * `n` entries of the matching array. */
typedef struct gr_attr {
    char *name;
    gr_attr_kind kind;
    float f;
    int64_t i;
    gr_bytes s;
    gr_tensor *t;
    struct gr_graph *g;
    gr_type *tp;
    size_t n;
    float *floats;
    int64_t *ints;
    gr_bytes *strings;
    gr_tensor **tensors;
    struct gr_graph **graphs;
    gr_type **types;
} gr_attr;

typedef struct gr_node {
    char *name;    /* "" when the node has none */
    char *op_type;
    char *domain;  /* "" is the default ONNX domain (ai.onnx) */
    /* Value indices into the graph's values; -1 for an optional input or
     * output left out (an empty name in ONNX). */
    int n_inputs;
    int *inputs;
    int n_outputs;
    int *outputs;
    int n_attrs;
    gr_attr *attrs;
} gr_node;

/* A graph: the model's main graph or a subgraph (If/Loop/Scan bodies,
 * attributes of kind GRAPH). Node inputs are resolved in file order, so
 * each names a graph input, an initializer, an output of an earlier node
 * or (subgraphs) an enclosing graph's value, which appears here as a
 * GR_VALUE_OUTER value. */
typedef struct gr_graph {
    char *name;
    int n_values;
    gr_value *values;
    int n_nodes;
    gr_node *nodes;
    int n_inputs;  /* graph inputs in declared order (value indices) */
    int *inputs;
    int n_outputs; /* graph outputs in declared order (value indices) */
    int *outputs;
} gr_graph;

typedef struct {
    char *domain; /* "" for the default domain */
    int64_t version;
} gr_opset;

typedef struct gr_model {
    char *path;
    int64_t ir_version;
    char *producer_name;
    char *producer_version;
    int n_opsets;
    gr_opset *opsets;
    /* The version of the default domain ("" or "ai.onnx"); 0 when the
     * model imports none. */
    int64_t opset;
    gr_graph *graph;
    void *priv_;  /* the loader's memory: leave alone */
} gr_model;

/* Loads an ONNX model file. Initializers are read in full, external ones
 * (data_location EXTERNAL: location, offset, length relative to the
 * model's directory) included. NULL and *err (malloc'd) when the file is
 * missing, unreadable, truncated or not an ONNX ModelProto, has no graph,
 * when an initializer's data does not match its shape and type, external
 * data is missing or too short, a node input names no known value (nodes
 * must come in topological order, as ONNX requires), or a name is defined
 * twice (two initializers, two inputs, a node output reusing a name). */
gr_model *gr_model_load(const char *path, char **err);
/* Frees a model and everything it owns. NULL is a no-op. */
void gr_model_free(gr_model *m);

/* Index of the value named `name` in g, or -1. */
int gr_graph_find_value(const gr_graph *g, const char *name);
/* The attribute `name` of node n, or NULL. */
const gr_attr *gr_node_attr(const gr_node *n, const char *name);

/* A shape given for a graph input (--shape input=1x3x224x224). */
typedef struct {
    const char *name;
    int ndim;
    const int64_t *shape; /* ndim extents, each >= 0 */
} gr_input_shape;

/* Parses "name=1x3x224x224" (a scalar: "name="), as --shape takes it,
 * into out->name (a malloc'd copy) and out->shape (malloc'd, ndim
 * entries); free both. false and *err (malloc'd) on a spec with no '=',
 * an empty name, an extent that is not a number >= 0, or more than 64
 * extents. */
bool gr_input_shape_parse(const char *spec, gr_input_shape *out, char **err);

/* Whether gr_infer_shapes knows operator `op_type` of `domain` ("" or
 * "ai.onnx" for the default domain) at that domain's opset version:
 * default-domain Conv, Gemm, MatMul, BatchNormalization, Relu, Clip,
 * Sigmoid, Tanh, Erf, Gelu, HardSwish, Add, Sub, Mul, Div, Pow, Sqrt,
 * Reciprocal, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool,
 * Flatten, Reshape, Transpose, Concat, Split, Slice, Gather, Squeeze,
 * Unsqueeze, Softmax, LayerNormalization, ReduceMean, ReduceSum, Cast,
 * Where, Shape, Constant, ConstantOfShape and Identity from their first
 * ONNX version to opset 18 (Erf, Where and ConstantOfShape from 9;
 * HardSwish, LayerNormalization and Gelu from 11; the others from 1), and
 * com.microsoft Gelu. The older versions' forms are read with their
 * semantics: Reshape-1's and Slice-1's attributes, Concat-1's default axis 1, Cast-1's type name, legacy
 * broadcasting (attributes broadcast and axis) of Add, Sub, Mul, Div and
 * Pow before opset 7 and of Gemm's C before 7. What they cannot compute
 * is refused by gr_infer_shapes naming the node and the attribute:
 * BatchNormalization with spatial=0 (before 9) or is_test=0 (before 7),
 * Split-1's second input. An attribute only an older version defines
 * (broadcast at opset 7 on, spatial at 9 on, ...) is refused too.
 * Loom's own layout operators of domain "loom" (ConvNCHWc, ToNCHWc,
 * FromNCHWc: convolutions on NCHW[x]c, which gr_compile writes; any opset;
 * graph/infer_layout.c defines them) are known too. Beyond these, the
 * table in graph/infer.c (its first versions in graph/infer_legacy.c)
 * holds the math, comparison, reduction, movement, fill, loss,
 * quantization and resize operators and, among others, TopK, Scatter,
 * ScatterElements, ScatterND, Einsum, GridSample, Compress (a constant
 * condition), MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv,
 * Upsample, RoiAlign, DFT, STFT, RNN, GRU, LSTM, and the ai.onnx.preview.training
 * optimizers Adagrad, Momentum and Adam (version 1). */
bool gr_op_supported(const char *domain, const char *op_type, int64_t opset);

/* Shape inference for the main graph. First fixes the graph inputs:
 * each of the nfixed shapes replaces the declared shape of the graph input
 * it names, which must agree with it (same rank, same extent where the
 * file gives a number). Then every input must have a static shape. Then
 * every node output, in node order, gets its element type and static
 * shape per the operator's ONNX definition at the model's opset; inputs
 * that decide a shape (Reshape's shape, Slice's starts/ends/axes/steps,
 * Squeeze/Unsqueeze/ReduceSum axes from opset 13, Split's split,
 * ConstantOfShape's shape) must be initializers, Constant outputs or
 * folded from Shape of a static value (see gr_value.data). Declared types
 * of node outputs (value_info, graph outputs) are replaced by the
 * inferred ones; fixed inputs lose their dim_params. Types live in the
 * model's memory. Fixed shapes replace the declared ones for good: calling
 * again with the same shapes changes nothing; other shapes need the model
 * loaded again. A refused call changes no graph input.
 *
 * Returns 0, or -1 and *err (malloc'd; the caller frees it), naming the
 * model file and:
 *   - a graph input with a dynamic dimension no shape fixes ("graph input
 *     'X' dimension 0 ('N') is dynamic: fix it with --shape X=..."), or
 *     with no declared shape, or not a tensor;
 *   - a given name that is no graph input, or given twice; a given shape
 *     of the wrong rank or contradicting a declared extent;
 *   - every unsupported operator in one list ("unsupported operators: Foo
 *     (node 'n1', opset 13), Bar (node 'n7', opset 13)");
 *   - a node whose attributes or inputs break the operator's rules (an
 *     unknown auto_pad, a non-constant Reshape shape, shapes that do not
 *     broadcast, an axis out of range, ...), naming the node and the
 *     attribute or input.
 * On an error the types already inferred stay; the model remains valid
 * to free. Subgraphs are not inferred (no supported operator has one). */
int gr_infer_shapes(gr_model *m, int nfixed, const gr_input_shape *fixed, char **err);

/* Prints a readable summary: a header line (ir version, opsets, counts of
 * nodes, initializers, initializer bytes), the inputs and outputs with
 * their types, and one line per node (op, name, inputs -> outputs,
 * attributes). Subgraphs are indented. */
void gr_model_print(const gr_model *m, FILE *out);

/* ---- graph passes ---- */

/* What one pass did in a gr_optimize call: its name (static), how many
 * rewrites it made (nodes folded or removed), and its wall time in
 * seconds. */
typedef struct {
    const char *name;
    int rewrites;
    double seconds;
} gr_pass_report;

/* Runs the graph passes in their one fixed, visible order on m's main
 * graph, which gr_infer_shapes must have accepted:
 *   0 fold_constants  nodes whose outputs inference knows (Constant, Shape
 *                     of a static value, ConstantOfShape, folded integer
 *                     arithmetic: gr_value.data) become initializers
 *                     (GR_VALUE_CONST) and go;
 *   1 fold_batchnorm  a BatchNormalization (inference form) whose input
 *                     is read only by it (and is no graph output) and
 *                     comes from a Conv with initializer weights (and
 *                     bias), its own parameters initializers too, folds
 *                     into new Conv weights and bias (float32/float64,
 *                     computed in double); one that cannot fold, its
 *                     parameters initializers of its input's type (opset
 *                     7 or later), becomes Mul by scale/sqrt(var+eps) and
 *                     Add of beta - mean*scale/sqrt(var+eps), both
 *                     [C,1,...,1] initializers (elementwise: it stays in
 *                     the blocked layout and fuses); others stay;
 *   2 eliminate       Identity, and Reshape/Flatten/Squeeze/Unsqueeze/Cast
 *                     that change nothing, go (readers read their input);
 *                     then nodes none of whose outputs reaches a graph
 *                     output;
 *   3 convt_phases    a 2-D float32 ConvTranspose with initializer
 *                     weights, group 1, no dilation, equal strides s
 *                     dividing its output extents becomes s x s Conv
 *                     nodes (one per output phase, the taps landing
 *                     there), a Concat and a DepthToSpace (DCR): the
 *                     sub-pixel decomposition (graph/pass_convt_phases.c);
 *                     others stay.
 * "Initializer" here means one not also listed as a graph input (those a
 * caller may override, ONNX IR < 4, so nothing folds them).
 *
 * The graph stays a valid inferred graph after every pass (nodes in
 * topological order, producers right, gr_infer_shapes accepts it again
 * with the same results), and its interface does not change: the graph
 * inputs stay, and each graph output keeps its name and type (when a
 * removed node wrote a graph output, the value that replaces it takes the
 * name over; a node whose input cannot take it, a graph input or another
 * graph output, is kept). Values nothing refers to any more (outputs of
 * removed nodes, initializers no node reads) are dropped from values[],
 * so value indices change: look values up again by name.
 * New values (folded weights) live in the model's memory and are named
 * after what they replace, unique in the graph.
 *
 * report: NULL, or an array of gr_pass_count() entries, filled in pass
 * order (on a refusal: the names, 0 rewrites, 0 seconds). With the
 * environment variable LOOM_DUMP_GRAPH=DIR, the model is
 * written after every pass (gr_model_print) to DIR/NN-name.txt, NN the
 * pass's index (00-fold_constants.txt, ...); DIR is created if needed; a
 * dump that cannot be written says so on stderr and stops, never failing
 * the call.
 *
 * Returns the number of rewrites of all passes, or -1 and *err (malloc'd,
 * the caller frees it) naming the model file and: a node whose operator
 * gr_infer_shapes does not support, or a node output with no inferred
 * shape (run gr_infer_shapes first); both leave the model unchanged. Out
 * of memory in a pass leaves the model valid to free only. */
int gr_optimize(gr_model *m, gr_pass_report *report, char **err);
/* How many passes gr_optimize runs. */
int gr_pass_count(void);
/* The name of pass i (0 <= i < gr_pass_count()), static; NULL otherwise. */
const char *gr_pass_name(int i);
/* Runs pass i alone on m, with gr_optimize's rules and errors (and none
 * of its dumps): the number of rewrites, or -1 and *err, also for an i
 * out of range. */
int gr_pass_run(gr_model *m, int i, char **err);

/* ---- compiling and running a model ---- */

/* Whether gr_compile can run operator op_type of domain at that opset:
 * gr_op_supported knows it and it has a lowering to a te computation. */
bool gr_op_runnable(const char *domain, const char *op_type, int64_t opset);
/* Whether gr_compile reads input k (from 0) of operator op_type of domain
 * at that opset when it compiles, not when it runs: Reshape's shape,
 * Slice's starts/ends/axes/steps, Split's split and Squeeze/Unsqueeze axes
 * from opset 13, ConstantOfShape's shape. Such an input must be a known
 * constant (an initializer, a Constant output, folded shape arithmetic);
 * a caller holding its value can make a graph input one (the backend
 * test runner does). False for an unknown operator or k out of range. */
bool gr_op_input_static(const char *domain, const char *op_type, int64_t opset, int k);

/* A model compiled for a target: one kernel per group of nodes, buffers
 * for every intermediate value. Opaque; gr_exec_free. */
typedef struct gr_exec gr_exec;

struct tdb_db; /* loom/tuning_db.h */

typedef struct {
    const char *target;  /* "llvm" (NULL) with options as cg_build takes them */
    /* Shapes for graph inputs with dynamic dimensions (gr_infer_shapes). */
    int nshapes;
    const gr_input_shape *shapes;
    /* Fuse nodes into groups (graph/fuse.c); true: one kernel per node. */
    bool no_fuse;
    /* Skip the graph passes (gr_optimize: constants folded, BatchNormalization
     * folded into convolutions, no-op nodes removed) that run first. */
    bool no_passes;
    /* Keep every convolution in NCHW. Otherwise (llvm targets) 2-D float32
     * convolutions whose channels are multiples of the target's float32
     * vector lanes (or half of them), or more than the lanes (the last
     * block then padded with zero channels), run on the blocked layout
     * NCHW[lanes]c, kept between convolutions through their elementwise
     * consumers (graph passes' LOOM_DUMP_GRAPH shows the graph after it as
     * NN-alter_layout.txt). */
    bool no_layout;
    /* Tuning records: each kernel runs the best valid record of its key
     * for the target on the pool's threads (tdb_best under
     * tune_record_key(target, rt_num_threads()): set the thread count
     * before compiling); kernels without one run their default schedule
     * (gr_exec_db_note: when the records are all for another thread
     * count). NULL: defaults only. */
    struct tdb_db *db;
    /* Threads building kernels at once (0: one per core). */
    int jobs;
    /* One line per kernel, after compiling: its key, uses, and whether it
     * runs a tuned record (which, its latency) or the default schedule
     * (NULL: quiet). */
    FILE *explain;
} gr_compile_options;

/* A tuning task of a model: one distinct group key. */
typedef struct {
    char *key;     /* the group's workload key (malloc'd) */
    int uses;      /* group instances with this key: the task's weight */
    char *label;   /* the ops of its first instance and the node names,
                      "Conv+Add+Relu (node 'conv1')" (malloc'd) */
} gr_task;

/* The tasks gr_compile would build, without building anything: shapes
 * inferred (o->shapes), groups formed (o->no_fuse), keys written, equal
 * keys merged (first-use order). Returns 0 with *tasks (malloc'd,
 * gr_tasks_free) and *ntasks, or -1 and *err as gr_compile's checks. */
int gr_extract_tasks(gr_model *m, const gr_compile_options *o, gr_task **tasks, int *ntasks,
                     char **err);
void gr_tasks_free(gr_task *tasks, int ntasks);

/* Compiles m's main graph, in this order (TVM's ONNX -> Relax -> FuseOps
 * -> build, ONNX Runtime's optimizers then its allocation planner):
 *   1. shapes inferred with o->shapes (gr_infer_shapes; m's types change);
 *      every operator must have a lowering (gr_op_runnable);
 *   2. graph passes (gr_optimize; o->no_passes skips them): m is rewritten
 *      in place (value indices change);
 *   3. fusion into groups (TVM's FuseOps rules, and each scaled dot-product
 *      attention chain MatMul -> scale -> [mask] -> Softmax -> MatMul whose
 *      scores nothing else reads as one group; o->no_fuse: one group per
 *      node); nodes whose outputs are all known constants are not run;
 *   4. each group written as its workload key; groups with the same key
 *      (repeated blocks) share one kernel, built once from the key: the
 *      best valid record of o->db for the target, else the default
 *      schedule derived from the group's structure (tune_default_schedule),
 *      o->jobs kernels at a time;
 *   5. the values kernels exchange placed in one arena by liveness
 *      (gr_exec_memory).
 * o may be NULL. m must outlive the result (its initializers are read at
 * run time without a copy). NULL and *err (malloc'd) naming the model and
 * node: a shape inference error; unsupported operators (every one, with
 * its opset and nodes); an attribute value, element type or shape Loom
 * cannot compute; a database whose records of the model's kernels are all
 * for another target; a build error; out of memory. */
gr_exec *gr_compile(gr_model *m, const gr_compile_options *o, char **err);
/* Frees the compiled model (its kernels and buffers). NULL is a no-op. */
void gr_exec_free(gr_exec *e);

/* The graph inputs a caller supplies (those without an initializer), in
 * declared order, and the graph outputs: their count and value index in
 * m's main graph. */
int gr_exec_num_inputs(const gr_exec *e);
int gr_exec_input_value(const gr_exec *e, int i);
int gr_exec_num_outputs(const gr_exec *e);
int gr_exec_output_value(const gr_exec *e, int i);

/* Runs the model once. inputs[i] is the i-th input (gr_exec_num_inputs):
 * a compact CPU tensor of the input's dtype and shape (a scalar: ndim 0,
 * or ndim 1 with shape [1]; an empty one, a zero extent, may have NULL
 * data). Empty values are known at compile time and get no kernel; a
 * node that would make elements out of one (ReduceSum over an empty
 * axis) is refused by gr_compile, Concat's empty pieces are dropped.
 * outputs[i] (gr_exec_num_outputs of them)
 * receive copies of the results: compact CPU tensors of the output's dtype
 * and shape, allocated by the caller; outputs may be NULL when the caller
 * reads them with gr_exec_output instead. Returns 0, or -1 and *err
 * (malloc'd) naming the input or output whose count, dtype, shape or
 * device is wrong, or the kernel that failed. Not thread-safe: one run of
 * an exec at a time. */
int gr_run(gr_exec *e, int ninputs, DLTensor *const *inputs, int noutputs,
           DLTensor *const *outputs, char **err);
/* The i-th output of the last run, as a view of the exec's own buffer
 * (valid until the next gr_run or gr_exec_free); NULL out of range. */
const DLTensor *gr_exec_output(const gr_exec *e, int i);
/* Number of kernels (distinct group keys) and of group instances. */
int gr_exec_num_kernels(const gr_exec *e);
int gr_exec_num_groups(const gr_exec *e);
/* Kernel k's workload key: the canonical text of its group ("onnx(opset=
 * 13;x v0:float[1,3,8,8];...;out v4)"; the format is in graph/group.h),
 * a key like any other: the tuning database stores records under it and
 * ops_build_key / tune_build_workload / tdb_apply_best rebuild its
 * computation from it in any process linking Loom. Owned by e; NULL out
 * of range. */
const char *gr_exec_kernel_key(const gr_exec *e, int k);
/* How many group instances run kernel k (its weight as a tuning task). */
int gr_exec_kernel_uses(const gr_exec *e, int k);
/* Kernel k's ops and first node, "Conv+Add+Relu (node 'conv1')". Owned by
 * e; NULL out of range. */
const char *gr_exec_kernel_label(const gr_exec *e, int k);
/* Whether kernel k runs a tuned record (true) or its default schedule. */
bool gr_exec_kernel_tuned(const gr_exec *e, int k);
/* Whether kernel k runs a record while the database has never timed the
 * default schedule this Loom derives for it (tune_default_steps): the
 * record was tuned against an older default (or with the default left
 * out, autotune --skip-default) and may be the slower of the two.
 * autotune --resume times the current default of every such task first
 * (one trial each). */
bool gr_exec_kernel_stale(const gr_exec *e, int k);
/* What the user should know about the database's records: why it gave
 * the kernels nothing although it has records of them (records for this
 * machine on another thread count only: records are kept per count,
 * tune_threads_key; the kernels run their default schedules), or that
 * some tuned kernels run records never timed against this Loom's default
 * schedule (gr_exec_kernel_stale). NULL when there is nothing to say. Owned by e. */
const char *gr_exec_db_note(const gr_exec *e);

/* Memory of the values kernels exchange: *arena_bytes, the one arena
 * they share by liveness (a value's bytes are reused once every group
 * reading it has run), and *unshared_bytes, what one buffer per value
 * would take. Either pointer may be NULL. */
void gr_exec_memory(const gr_exec *e, size_t *arena_bytes, size_t *unshared_bytes);

/* Per-kernel time of one run: gr_run adds each kernel's wall time (all
 * its instances) into seconds[k] (gr_exec_num_kernels entries) when
 * profiling is on. */
void gr_exec_profile(gr_exec *e, double *seconds);

LOOM_API_END
#ifdef __cplusplus
}
#endif
#endif
