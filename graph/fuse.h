/* graph/fuse.h — operator fusion: which nodes of a model's main graph run
 * together as one kernel (TVM's FuseOps, DESIGN.md "Fusion rules").
 * Internal to Loom: the lowering of nodes and the executor read it. */
#ifndef LOOM_GR_FUSE_H
#define LOOM_GR_FUSE_H

#include "loom/graph.h"

/* Operator pattern kinds, in TVM's order: a group's kind is the max of its
 * members'. */
typedef enum {
    GR_KIND_ELEMWISE = 0,
    GR_KIND_BROADCAST = 1,
    GR_KIND_INJECTIVE = 2,
    GR_KIND_REDUCE = 3,
    GR_KIND_OUT_FUSABLE = 4,
    GR_KIND_OPAQUE = 8
} gr_op_kind;

/* The most nodes one group may hold (TVM's default max fuse depth). */
#define GR_FUSE_MAX_NODES 256

/* The kind of node `node` of g, from its op_type and domain, and where they
 * matter its attributes and the inferred shapes:
 *   elementwise  Relu Clip Sigmoid Tanh Erf Gelu (and com.microsoft Gelu)
 *                HardSwish Sqrt Reciprocal Cast CastLike Identity Dropout
 *                ConstantOfShape, the math functions and activations of
 *                lower_math.c, the fills (Range, EyeLike, the windows),
 *                and Add Sub Mul Div Pow Where (and the other binary and
 *                variadic operators, QuantizeLinear, DequantizeLinear)
 *                when every input has the output's shape;
 *   broadcast    those binary ops and Where when some input broadcasts (or
 *                shapes are not inferred yet); BatchNormalization in
 *                inference mode (an affine map per channel);
 *   injective    Reshape Flatten Squeeze Unsqueeze Transpose Concat Split
 *                Slice Gather GatherElements, the movement operators, OneHot,
 *                GatherND, ReverseSequence;
 *   reduce       ReduceMean ReduceSum Softmax LayerNormalization (and the
 *                other reductions, the losses, LRN, MeanVarianceNormalization,
 *                Resize: its taps are a reduction), and
 *                BatchNormalization with training_mode 1 (batch statistics);
 *   out-fusable  Conv Gemm MatMul, and MaxPool AveragePool GlobalAveragePool
 *                GlobalMaxPool (and their loom:*NCHWc twins) as TVM
 *                registers pools (OUT_ELEMWISE_FUSABLE): a pool reads
 *                a window of a materialized (padded) input, so producers are
 *                not inlined into it, while its consumers' elementwise work
 *                folds into its output loop;
 *   opaque       everything else, other domains, and a node index out of
 *                range. */
gr_op_kind gr_node_kind(const gr_graph *g, int node);
/* "elemwise", "broadcast", "injective", "reduce", "out-fusable", "opaque". */
const char *gr_op_kind_name(gr_op_kind k);

typedef struct {
    int ngroups;
    int *group_of;    /* per node of the main graph: its group, or -1 when the
                         node is not run (every output of it has known
                         contents after inference, gr_value.data != NULL) */
    int *anchor;      /* per group: the node whose computation dominates (the
                         out-fusable or reduce node, else the group's last
                         node) */
    gr_op_kind *kind; /* per group: the max of its members' kinds */
} gr_partition;

/* Partitions the main graph of m (after gr_infer_shapes) into fused groups.
 * With fuse false every run node is its own group. Group ids are a
 * topological order: running groups 0..ngroups-1 in order is valid. Every
 * group is convex (no path leaves it and comes back), has at most
 * GR_FUSE_MAX_NODES nodes and at most one node of kind reduce or
 * out-fusable, except an attention chain (gr_attention_chain), which runs
 * as one group with its two MatMuls and Softmax (and its anchor is the
 * second MatMul); only its last node's outputs are read outside it (by other
 * groups or as graph outputs). Returns 0, or -1 and *err (malloc'd; *out
 * is then empty, safe to free) when m or out is NULL, when a run node's
 * output has no inferred shape ("m.onnx: node 'n1' (Relu) output 'r' has
 * no inferred shape: fusion runs after gr_infer_shapes"), when a node reads
 * a value a later node writes (a graph built in memory out of order), or
 * when out of memory. */
int gr_fuse(const gr_model *m, bool fuse, gr_partition *out, char **err);
/* Whether node `softmax` of m's main graph (after gr_infer_shapes) ends a
 * scaled dot-product attention chain, MatMul -> [Div|Mul by a constant
 * scalar] -> [Add] -> Softmax over the last axis -> MatMul reading the
 * softmax as its left operand (graph/fuse_attention.c says exactly when):
 * the chain's node count (3 to 5) with its nodes in order in nodes[0..),
 * which has room for 5; 0 when it is not one. */
int gr_attention_chain(const gr_model *m, int softmax, int *nodes);
/* Frees the arrays of p and empties it. NULL is a no-op. */
void gr_partition_free(gr_partition *p);
/* One line per group: id, kind, anchor op, member ops in node order
 * ("g3 out-fusable Conv: Conv+Add+Relu"). */
void gr_partition_print(const gr_model *m, const gr_partition *p, FILE *out);

#endif
