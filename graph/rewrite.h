/* graph/rewrite.h — the few mutations graph passes make on a model's main
 * graph (graph/pass_*.c, run by graph/passes.c), in the model's memory.
 *
 * Invariants every primitive keeps, as tests/test_graph_load.c checks them
 * on a loaded model: nodes stay in topological order, every node output is
 * a GR_VALUE_NODE value whose `producer` is its node's index, value names
 * are unique, and the graph's outputs keep their names (the model's
 * interface does not change). Passes see the main graph only: gr_optimize
 * runs them on models gr_infer_shapes accepts, which have no subgraphs. */
#ifndef LOOM_GR_REWRITE_H
#define LOOM_GR_REWRITE_H

#include "graph/gr_internal.h"

/* What the primitives did, summed over a pass (the passes' own rewrite
 * counts are their return values). */
typedef struct {
    int nodes_removed;
    int consts_added;
    int values_replaced; /* values whose uses moved to another value */
    int values_dropped;  /* values nothing referred to any more */
} gr_pass_stats;

/* One pass's handle on the graph. values_cap is the room of g->values the
 * rewriter allocated itself: the loader's (or a caller's) array is never
 * assumed to have room, so the first added value moves the array into
 * the arena, with room to spare for the next ones. */
typedef struct {
    gr_model *m;
    gr_graph *g;
    gr_arena *a;
    gr_pass_stats *st; /* never NULL: `own` when the caller gave none */
    gr_pass_stats own;
    char **err;
    int values_cap;
} gr_rw;

void gr_rw_begin(gr_rw *rw, gr_model *m, gr_pass_stats *st, char **err);
/* Drops the values nothing refers to any more (gr_rw_drop_unused) and
 * returns ok, or false when that fails. */
bool gr_rw_end(gr_rw *rw, bool ok);

/* Whether node n is op_type op of the default domain ("" or "ai.onnx"). */
bool gr_rw_is_op(const gr_node *n, const char *op);
/* Whether value v is one of the graph's inputs / outputs. */
bool gr_rw_is_graph_input(const gr_graph *g, int v);
bool gr_rw_is_graph_output(const gr_graph *g, int v);
/* How many node inputs and graph outputs read value v. */
int gr_rw_uses(const gr_graph *g, int v);
/* An initializer whose contents are fixed: GR_VALUE_CONST with data and
 * not also a graph input (which a caller may override, ONNX IR < 4). */
bool gr_rw_is_fixed_const(const gr_graph *g, int v);

/* A new tensor in the model's memory, contents zeroed; NULL and *err when
 * out of memory. */
gr_tensor *gr_rw_new_tensor(gr_rw *rw, int elem_type, int ndim, const int64_t *shape);
/* Adds an initializer (GR_VALUE_CONST) holding t, which must live in the
 * model's memory, named `base` or, when the graph has that name, base_1,
 * base_2, ...; t->name becomes that name. Returns its value index, or -1
 * and *err when out of memory. Pointers into g->values are invalid after
 * it (the array may move); indices stay. */
int gr_rw_add_const(gr_rw *rw, const char *base, gr_tensor *t);

/* Adds a node output value (GR_VALUE_NODE, producer -1 until the caller
 * sets it) of this tensor type, named as gr_rw_add_const names. Returns
 * its index or -1 and *err (out of memory); g->values may move. */
int gr_rw_add_node_value(gr_rw *rw, const char *base, int elem_type, int ndim,
                         const int64_t *shape);

/* A main graph's node list rebuilt in order by a pass that inserts nodes
 * (each appended where it runs, so the list stays topological). */
typedef struct {
    gr_node *nodes;
    int n, cap;
} gr_rw_list;
/* Room for cap nodes in the model's memory; false and *err when out of
 * memory. */
bool gr_rw_list_init(gr_rw *rw, gr_rw_list *l, int cap);
/* Appends a copy of node n; its outputs' producer becomes its index in
 * l. false and *err past the room asked for. */
bool gr_rw_emit(gr_rw *rw, gr_rw_list *l, const gr_node *n);
/* Appends a node of the default domain: op (a static string), a copy of
 * name, reading ins[0..nin) and writing the value out (its producer set),
 * with attrs (in the model's memory). Returns out, or -1 and *err (out of
 * memory, or past the room asked for). */
int gr_rw_emit_op(gr_rw *rw, gr_rw_list *l, const char *op, const char *name, int nin,
                  const int *ins, int out, gr_attr *attrs, int nattrs);
/* Makes l the graph's node list. */
void gr_rw_list_install(gr_rw *rw, const gr_rw_list *l);
/* An INTS attribute `name` holding v[0..n), in the model's memory; its
 * ints NULL and *err when out of memory. */
gr_attr gr_rw_ints_attr(gr_rw *rw, const char *name, int n, const int64_t *v);

/* Whether every use of value a can read value b instead: always, unless a
 * is a graph output. A graph output keeps its name, so b takes it over
 * (and a takes b's): b must then be a node output or an initializer that
 * is neither a graph input nor already a graph output. */
bool gr_rw_can_replace(const gr_graph *g, int a, int b);
/* Makes every node input and graph output that reads a read b instead,
 * swapping the names as above when a is a graph output. a is left unused
 * (its producer, if any, still writes it). false, changing nothing, when
 * gr_rw_can_replace says no. */
bool gr_rw_replace(gr_rw *rw, int a, int b);

/* Removes the nodes with dead[i] set, keeping the others' order, and
 * renumbers producers. Every output of a removed node must be unused by
 * then (false and *err naming it otherwise, changing nothing); those
 * values get producer -1 until gr_rw_drop_unused drops them. */
bool gr_rw_remove_nodes(gr_rw *rw, const bool *dead);

/* Drops from g->values every value that no node reads or writes and that
 * is neither a graph input nor a graph output (outputs of removed nodes,
 * initializers no node reads any more), renumbering every index. false
 * and *err when out of memory (nothing changed). */
bool gr_rw_drop_unused(gr_rw *rw);

/* The passes, in gr_optimize's order; each returns its rewrites or -1
 * and *err. st may be NULL. */
int gr_pass_fold_constants(gr_model *m, gr_pass_stats *st, char **err);
int gr_pass_fold_batchnorm(gr_model *m, gr_pass_stats *st, char **err);
int gr_pass_eliminate(gr_model *m, gr_pass_stats *st, char **err);
int gr_pass_convt_phases(gr_model *m, gr_pass_stats *st, char **err);

/* Not in gr_optimize's list (it needs the target's vector width; gr_compile
 * runs it after gr_optimize unless gr_compile_options.no_layout): 2-D
 * convolutions whose channels are multiples of `block` become
 * loom:ConvNCHWc on the blocked layout NCHW[block]c (graph/infer_layout.c),
 * elementwise consumers of blocked values stay blocked, loom:ToNCHWc /
 * loom:FromNCHWc where plain NCHW is needed (graph/pass_alter_layout.c).
 * Returns the nodes rewritten and added, or -1 and *err. */
int gr_pass_alter_layout(gr_model *m, int block, gr_pass_stats *st, char **err);
/* With LOOM_DUMP_GRAPH=DIR, writes m to DIR/NN-name.txt as gr_optimize's
 * dumps are (a failure said on stderr only). */
void gr_dump_graph(const gr_model *m, int index, const char *name);

#endif
