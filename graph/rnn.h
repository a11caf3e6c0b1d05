/* graph/rnn.h — the recurrent operators' geometry and attributes, read
 * once for inference and lowering (graph/infer_rnn.c). */
#ifndef LOOM_GR_RNN_H
#define LOOM_GR_RNN_H

#include <stddef.h>

#include "graph/infer_internal.h"

typedef enum { GR_RNN, GR_GRU, GR_LSTM } gr_rnn_kind;

/* An activation: f(x) with its alpha and beta (ONNX's defaults filled). */
typedef enum {
    GR_ACT_TANH,
    GR_ACT_SIGMOID,
    GR_ACT_RELU,
    GR_ACT_HARD_SIGMOID,
    GR_ACT_AFFINE,
    GR_ACT_LEAKY_RELU,
    GR_ACT_THRESHOLDED_RELU,
    GR_ACT_SCALED_TANH,
    GR_ACT_ELU,
    GR_ACT_SOFTSIGN,
    GR_ACT_SOFTPLUS
} gr_act_kind;

typedef struct {
    gr_act_kind kind;
    double alpha, beta;
} gr_act;

typedef struct {
    gr_rnn_kind kind;
    int gates;                  /* 1, 3 (z r h), 4 (i o f c) */
    int dirs;                   /* 1 or 2 */
    bool reverse;               /* direction reverse (dirs 1) */
    bool layout1;               /* X [batch, seq, input] */
    int64_t seq, batch, input, hidden;
    gr_act act[2][3];           /* per direction: f (and g, h) */
    int nact;                   /* activations per direction */
    double clip;                /* 0: none */
    bool linear_before_reset;   /* GRU */
    bool input_forget;          /* LSTM */
} gr_rnn;

/* Reads node n (inputs X, W, R of the given types) into r; false and why
 * when an attribute or a shape breaks the operator's rules. */
bool gr_rnn_read(const gr_node *n, const gr_type *x, const gr_type *w, const gr_type *rr, gr_rnn *r, char *why,
                 size_t size);

#endif
