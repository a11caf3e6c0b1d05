/* graph/gr_internal.h — shared by the ONNX loader's files: the arena that
 * owns a model's memory, the error helper, the name table. */
#ifndef LOOM_GR_INTERNAL_H
#define LOOM_GR_INTERNAL_H

#include "loom/graph.h"
#include "onnx.pb-c.h"

/* Everything a model or a loaded tensor owns comes from one arena, so that
 * an error anywhere in loading frees it all at once. Blocks are zeroed. */
typedef struct gr_arena gr_arena;
gr_arena *gr_arena_new(void);
void gr_arena_free(gr_arena *a);
/* NULL when out of memory (or n * size overflows). */
void *gr_arena_alloc(gr_arena *a, size_t n, size_t size);
/* A copy of s (NULL copies as ""); NULL when out of memory. */
char *gr_arena_strdup(gr_arena *a, const char *s);
char *gr_arena_strndup(gr_arena *a, const char *s, size_t len);

/* Sets *err (when err is not NULL and not yet set) to a malloc'd message. */
void gr_set_err(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* How messages name node i of g: "node 'conv1' (Conv)", or "node #3 (Conv)"
 * when it has no name. Writes buf (size bytes) and returns it. */
const char *gr_node_label(const gr_graph *g, int i, char *buf, size_t size);

/* Reads a whole file; NULL and *err naming the file on failure. */
unsigned char *gr_read_file(const char *path, size_t *len, char **err);
/* The directory part of path ("." when it has none), in the arena. */
char *gr_dirname(gr_arena *a, const char *path);

/* Name -> index, open addressing; keys are not copied. */
typedef struct {
    size_t cap;
    const char **keys;
    int *vals;
    size_t count;
} gr_names;
bool gr_names_init(gr_names *t, size_t expect);
void gr_names_free(gr_names *t);
int gr_names_get(const gr_names *t, const char *key);
bool gr_names_put(gr_names *t, const char *key, int val);

/* Whether input k of node n is read for its type and shape alone
 * (EyeLike's input, CastLike's target_type; Dropout's ratio and
 * training_mode, which only inference reads): it carries no data between
 * kernels (fusion draws no edge for it), the lowering gets no tensor for
 * it, and a group key holds it as a `t` item, no argument, unless it is
 * a static input with known contents (then a `c` item) (op_kind.c). */
bool gr_input_type_only(const gr_node *n, int k);
/* Whether t is an empty tensor: known extents, one of them 0. */
bool gr_type_empty(const gr_type *t);

/* Converts one TensorProto into *out. `what` names it in messages
 * ("initializer 'w'", "file x.pb"); `dir` is where external data lives. */
bool gr_tensor_from_proto(gr_arena *a, const Onnx__TensorProto *tp, const char *dir,
                          const char *what, gr_tensor *out, char **err);
/* Converts a TypeProto; false and *err on an element type Loom does not know. */
bool gr_type_from_proto(gr_arena *a, const Onnx__TypeProto *tp, const char *what, gr_type *out,
                        char **err);

#endif
