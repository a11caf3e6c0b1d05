/* graph/infer_rnn.c — RNN, GRU and LSTM (opsets 7 and 14: layout): a
 * recurrence over the sequence, per direction (forward, reverse,
 * bidirectional), from X [seq, batch, input] (layout 1: [batch, seq,
 * input]), weights W [dirs, gates x hidden, input] and R [dirs, gates x
 * hidden, hidden], optional biases B [dirs, 2 x gates x hidden],
 * sequence_lens [batch], initial_h (LSTM also initial_c, peepholes P
 * [dirs, 3 x hidden]). Outputs Y [seq, dirs, batch, hidden] (layout 1:
 * [batch, seq, dirs, hidden]), Y_h (LSTM also Y_c) [dirs, batch, hidden]
 * (layout 1: [batch, dirs, hidden]). Refused: sequence_lens with a
 * reverse or bidirectional direction (per-sequence reversal is not
 * implemented), activations ONNX does not list. */
#include "graph/rnn.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool is_float(int t) { return t == GR_FLOAT || t == GR_DOUBLE || t == GR_FLOAT16; }

static const struct {
    const char *name;
    gr_act_kind kind;
    double alpha, beta;
} acts[] = {
    {"Tanh", GR_ACT_TANH, 0, 0},
    {"Sigmoid", GR_ACT_SIGMOID, 0, 0},
    {"Relu", GR_ACT_RELU, 0, 0},
    {"HardSigmoid", GR_ACT_HARD_SIGMOID, 0.2, 0.5},
    {"Affine", GR_ACT_AFFINE, 1, 0},
    {"LeakyRelu", GR_ACT_LEAKY_RELU, 0.01, 0},
    {"ThresholdedRelu", GR_ACT_THRESHOLDED_RELU, 1, 0},
    {"ScaledTanh", GR_ACT_SCALED_TANH, 1, 1},
    {"Elu", GR_ACT_ELU, 1, 0},
    {"Softsign", GR_ACT_SOFTSIGN, 0, 0},
    {"Softplus", GR_ACT_SOFTPLUS, 0, 0},
};

static bool fail(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return false;
}

bool gr_rnn_read(const gr_node *n, const gr_type *x, const gr_type *w, const gr_type *rr, gr_rnn *r, char *why,
                 size_t size)
{
    memset(r, 0, sizeof *r);
    const char *op = n->op_type;
    r->kind = strcmp(op, "GRU") == 0 ? GR_GRU : strcmp(op, "LSTM") == 0 ? GR_LSTM : GR_RNN;
    r->gates = r->kind == GR_RNN ? 1 : r->kind == GR_GRU ? 3 : 4;
    r->nact = r->kind == GR_RNN ? 1 : r->kind == GR_GRU ? 2 : 3;
    const gr_attr *a = gr_node_attr(n, "direction");
    const char *dir = a && a->kind == GR_ATTR_STRING ? a->s.data : "forward";
    if (strcmp(dir, "forward") == 0) r->dirs = 1;
    else if (strcmp(dir, "reverse") == 0) r->dirs = 1, r->reverse = true;
    else if (strcmp(dir, "bidirectional") == 0) r->dirs = 2;
    else return fail(why, size, "attribute 'direction' must be forward, reverse or bidirectional");
    a = gr_node_attr(n, "layout");
    r->layout1 = a && a->kind == GR_ATTR_INT && a->i == 1;
    if (a && (a->kind != GR_ATTR_INT || (a->i != 0 && a->i != 1)))
        return fail(why, size, "attribute 'layout' must be 0 or 1");
    if (!is_float(x->elem_type) || w->elem_type != x->elem_type || rr->elem_type != x->elem_type)
        return fail(why, size, "inputs X, W and R must be of one float type (%s, %s, %s)", gr_elem_type_name(x->elem_type),
                    gr_elem_type_name(w->elem_type), gr_elem_type_name(rr->elem_type));
    if (x->ndim != 3) return fail(why, size, "input X has rank %d; it must be 3", x->ndim);
    r->seq = x->shape[r->layout1 ? 1 : 0];
    r->batch = x->shape[r->layout1 ? 0 : 1];
    r->input = x->shape[2];
    a = gr_node_attr(n, "hidden_size");
    if (a && a->kind != GR_ATTR_INT) return fail(why, size, "attribute 'hidden_size' must be an int");
    r->hidden = a ? a->i : w->ndim == 3 ? w->shape[1] / r->gates : 0;
    int64_t G = r->gates * r->hidden;
    if (r->hidden < 1) return fail(why, size, "attribute 'hidden_size' must be >= 1");
    if (w->ndim != 3 || w->shape[0] != r->dirs || w->shape[1] != G || w->shape[2] != r->input)
        return fail(why, size, "input W must have shape [%d, %" PRId64 ", %" PRId64 "]", r->dirs, G, r->input);
    if (rr->ndim != 3 || rr->shape[0] != r->dirs || rr->shape[1] != G || rr->shape[2] != r->hidden)
        return fail(why, size, "input R must have shape [%d, %" PRId64 ", %" PRId64 "]", r->dirs, G, r->hidden);
    /* activations: per direction, ONNX's defaults otherwise */
    const gr_attr *an = gr_node_attr(n, "activations"), *aa = gr_node_attr(n, "activation_alpha"),
                  *ab = gr_node_attr(n, "activation_beta");
    if (an && (an->kind != GR_ATTR_STRINGS || an->n != (size_t)(r->nact * r->dirs)))
        return fail(why, size, "attribute 'activations' must list %d names (%d per direction)", r->nact * r->dirs,
                    r->nact);
    size_t used_a = 0, used_b = 0;
    for (int d = 0; d < r->dirs; d++)
        for (int i = 0; i < r->nact; i++) {
            const char *name = an ? an->strings[d * r->nact + i].data : i == 0 && r->kind != GR_RNN ? "Sigmoid" : "Tanh";
            size_t k = 0;
            while (k < sizeof acts / sizeof *acts && strcmp(acts[k].name, name) != 0) k++;
            if (k == sizeof acts / sizeof *acts) return fail(why, size, "activation '%s' is not supported", name);
            gr_act *act = &r->act[d][i];
            act->kind = acts[k].kind;
            act->alpha = acts[k].alpha;
            act->beta = acts[k].beta;
            bool takes_a = act->kind >= GR_ACT_HARD_SIGMOID && act->kind <= GR_ACT_ELU;
            bool takes_b = act->kind == GR_ACT_HARD_SIGMOID || act->kind == GR_ACT_AFFINE || act->kind == GR_ACT_SCALED_TANH;
            /* each list is consumed in order by the activations taking it */
            if (takes_a && aa && aa->kind == GR_ATTR_FLOATS && used_a < aa->n) act->alpha = aa->floats[used_a];
            if (takes_a) used_a++;
            if (takes_b && ab && ab->kind == GR_ATTR_FLOATS && used_b < ab->n) act->beta = ab->floats[used_b];
            if (takes_b) used_b++;
        }
    a = gr_node_attr(n, "clip");
    r->clip = a && a->kind == GR_ATTR_FLOAT ? a->f : 0;
    if (r->clip < 0) return fail(why, size, "attribute 'clip' must be > 0");
    a = gr_node_attr(n, "linear_before_reset");
    r->linear_before_reset = r->kind == GR_GRU && a && a->kind == GR_ATTR_INT && a->i != 0;
    a = gr_node_attr(n, "input_forget");
    r->input_forget = r->kind == GR_LSTM && a && a->kind == GR_ATTR_INT && a->i != 0;
    return true;
}

bool gr_infer_rnn(gr_ictx *c)
{
    const gr_type *x, *w, *rr;
    if (!gr_iin_req(c, 0, "X", &x) || !gr_iin_req(c, 1, "W", &w) || !gr_iin_req(c, 2, "R", &rr)) return false;
    gr_rnn r;
    char why[200];
    if (!gr_rnn_read(c->n, x, w, rr, &r, why, sizeof why)) return gr_ifail(c, "%s", why);
    if (gr_node_attr(c->n, "layout") && c->opset < 14) return gr_ifail(c, "attribute 'layout' is not defined before opset 14");
    int64_t G = r.gates * r.hidden;
    const gr_type *t;
    if ((t = gr_iin(c, 3)) && (t->elem_type != x->elem_type || t->ndim != 2 || t->shape[0] != r.dirs || t->shape[1] != 2 * G))
        return gr_ifail(c, "input B must be %s of shape [%d, %" PRId64 "]", gr_elem_type_name(x->elem_type), r.dirs, 2 * G);
    if ((t = gr_iin(c, 4))) {
        if (t->elem_type != GR_INT32 || t->ndim != 1 || t->shape[0] != r.batch)
            return gr_ifail(c, "input sequence_lens must be int32 of shape [%" PRId64 "]", r.batch);
        if (r.dirs == 2 || r.reverse)
            return gr_ifail(c, "input sequence_lens with direction %s is not supported",
                            r.dirs == 2 ? "bidirectional" : "reverse");
    }
    int64_t hs[3] = {r.layout1 ? r.batch : r.dirs, r.layout1 ? r.dirs : r.batch, r.hidden};
    static const char *const states[] = {"initial_h", "initial_c"};
    for (int k = 5; k <= (r.kind == GR_LSTM ? 6 : 5); k++)
        if ((t = gr_iin(c, k)) && (t->elem_type != x->elem_type || t->ndim != 3 || t->shape[0] != hs[0] ||
                                   t->shape[1] != hs[1] || t->shape[2] != hs[2]))
            return gr_ifail(c, "input %s must be %s of shape [%" PRId64 ", %" PRId64 ", %" PRId64 "]", states[k - 5],
                            gr_elem_type_name(x->elem_type), hs[0], hs[1], hs[2]);
    if (r.kind == GR_LSTM && (t = gr_iin(c, 7)) &&
        (t->elem_type != x->elem_type || t->ndim != 2 || t->shape[0] != r.dirs || t->shape[1] != 3 * r.hidden))
        return gr_ifail(c, "input P must be %s of shape [%d, %" PRId64 "]", gr_elem_type_name(x->elem_type), r.dirs,
                        3 * r.hidden);
    int64_t ys[4] = {r.layout1 ? r.batch : r.seq, r.layout1 ? r.seq : r.dirs, r.layout1 ? r.dirs : r.batch, r.hidden};
    if (!gr_iout(c, 0, x->elem_type, 4, ys)) return false;
    for (int k = 1; k <= (r.kind == GR_LSTM ? 2 : 1); k++)
        if (!gr_iout(c, k, x->elem_type, 3, hs)) return false;
    return true;
}
