/* graph/group.h — a group of nodes (one fused kernel) as a workload key,
 * and the builder that turns such a key back into a te computation.
 *
 * A group's key is the canonical text of its subgraph, so identical
 * groups (the 16 residual blocks of ResNet-50 that share shapes, BERT's
 * 12 layers) share one key, one tuning task and one set of records, and
 * every tool that rebuilds workloads from keys (the tuner's runners,
 * tdb_apply_best, the executor itself) builds exactly the same
 * computation. The text, names stripped and renumbered in order of
 * appearance, shapes and attributes kept:
 *
 *   onnx(opset=13;x v0:float[1,64,56,56];w v1:float[64,64,3,3];
 *        n v2=Conv(v0,v1){dilations=I[1,1],group=i1,pads=I[1,1,1,1],...};
 *        n v3=Relu(v2);out v3)
 *
 * (one line; items separated by ';'). `x` is a run-time input, `w` an input
 * that stays fixed while the model serves (an initializer or a folded
 * constant: cg_build_options.constant_args), `c` a compile-time constant
 * with its contents (`c v2:int64[2]{1,-1}`: Reshape's shape, Slice's
 * starts...), `t` a value read for its type and shape alone (`t v1:int32[4,5]`:
 * EyeLike's input, CastLike's target_type; no argument, no contents).
 * Attributes are sorted by name: i (int), f (float, %.9g), s
 * (string, %XX-escaped), I/F/S (lists), t (a tensor literal). A node of
 * another domain is written DOMAIN:OP.
 */
#ifndef LOOM_GR_GROUP_H
#define LOOM_GR_GROUP_H

#include "graph/gr_internal.h"
#include "loom/ops.h"

/* The prefix of every group key (the builder's registration prefix). */
#define GR_KEY_PREFIX "onnx("

/* Which values of the model a group's key maps to its arguments. */
typedef struct {
    int ninputs;        /* run-time tensor arguments, in key order */
    int *inputs;        /* value indices of the model's main graph */
    uint64_t constant;  /* bit i: inputs[i] is a `w` (fixed) input */
    int noutputs;
    int *outputs;       /* value indices, in key order */
} gr_group_io;

/* The key of the group made of nodes[0..nnodes) of m's main graph (node
 * indices in topological order; after gr_infer_shapes). Its outputs are
 * the values the group produces that a node outside it reads or that are
 * graph outputs. io (may be NULL) receives the argument mapping (malloc'd
 * arrays: gr_group_io_free). Returns a malloc'd key, or NULL and *err: an
 * attribute kind a key cannot hold (graphs, types), a static input whose
 * contents are not known, more than 64 inputs. */
char *gr_group_key(const gr_model *m, int nnodes, const int *nodes, gr_group_io *io, char **err);
void gr_group_io_free(gr_group_io *io);

/* Parses a group key into a model of its own (path "workload"): its `x`
 * and `w` values are graph inputs, `c` values initializers, `out` values
 * graph outputs; shapes are inferred (gr_infer_shapes). NULL and *err
 * (naming the key's item) on a malformed key. */
gr_model *gr_model_from_key(const char *key, char **err);

/* The ops builder for keys that start with GR_KEY_PREFIX: the group's
 * computation (lowered node by node, lower.h) with args = the `x`/`w`
 * inputs in key order then the outputs, constant_args = the `w` inputs,
 * flops = the rules' count. Registered by gr_register_builder. */
int gr_build_key(te_ctx *ctx, const char *key, ops_built *out);
/* Registers gr_build_key for GR_KEY_PREFIX (ops_register_builder); safe to
 * call repeatedly and from several threads. Returns 0 or -1. */
int gr_register_builder(void);

#endif
