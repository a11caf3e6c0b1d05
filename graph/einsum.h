/* graph/einsum.h — Einsum's equation, parsed once for inference and
 * lowering (graph/infer_einsum.c). */
#ifndef LOOM_GR_EINSUM_H
#define LOOM_GR_EINSUM_H

#include <stddef.h>
#include <stdint.h>

#include "graph/infer_internal.h"

#define GR_EINSUM_MAX_IN 8
/* Labels: 0..51 the letters (a-z, A-Z), 52 + e dimension e of the
 * ellipsis (right-aligned: the ellipsis of an input covering m of the
 * n_ell dimensions takes the last m). */
#define GR_EINSUM_LETTERS 52
#define GR_EINSUM_LABELS (GR_EINSUM_LETTERS + GR_MAX_DIMS)

typedef struct {
    int n_in;
    int rank[GR_EINSUM_MAX_IN];
    int lab[GR_EINSUM_MAX_IN][GR_MAX_DIMS]; /* per input dimension */
    int n_out;
    int out[GR_MAX_DIMS]; /* the output's labels in order */
    int n_ell;            /* the ellipsis' dimensions (the most any input covers) */
    bool used[GR_EINSUM_LABELS];
    int64_t ext[GR_EINSUM_LABELS];
} gr_einsum;

/* Parses `eq` for n_in inputs of the given ranks and shapes: labels per
 * dimension, the output's labels (implicit: the ellipsis, then the
 * letters used once, in ASCII order), each label's extent (ellipsis
 * dimensions broadcast numpy's way). False and why (the rule broken)
 * otherwise. */
bool gr_einsum_parse(const char *eq, int n_in, const int *ranks, const int64_t *const *shapes, gr_einsum *out,
                     char *why, size_t size);

#endif
