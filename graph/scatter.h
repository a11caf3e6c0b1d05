/* graph/scatter.h — what the scatters' inference and lowering share:
 * the reduction attribute (graph/infer_scatter.c). */
#ifndef LOOM_GR_SCATTER_H
#define LOOM_GR_SCATTER_H

#include "graph/gr_internal.h"

typedef enum { GR_SCATTER_NONE, GR_SCATTER_ADD, GR_SCATTER_MUL, GR_SCATTER_MAX, GR_SCATTER_MIN } gr_scatter_red;

/* Node n's reduction at opset (none when absent); false and *why when the
 * attribute is malformed or not defined at the opset. */
bool gr_scatter_reduction(const gr_node *n, int64_t opset, gr_scatter_red *out, const char **why);

#endif
