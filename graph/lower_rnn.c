/* graph/lower_rnn.c — RNN, GRU and LSTM (checked by infer_rnn.c) with
 * the recurrence unrolled over the (static) sequence: per direction and
 * step, a stage of the input's gate sums X_t W^T and one of the hidden
 * state's H_{t-1} R^T (both [batch, gates x hidden]), then stages of the
 * new state from ONNX's equations (gate order: GRU z r h, LSTM i o f c;
 * biases Wb + Rb; clip on the activations' inputs; peepholes). A step
 * past a sequence's length (sequence_lens, forward only) keeps the state
 * and writes zeros to Y. Y picks each time's state through a balanced
 * tree of selects over the steps. The kernel grows with the sequence:
 * meant for the short sequences of ONNX's tests and small models.
 * FLOPs: 2 per multiply-add of the products, 10 per gate element. */
#include <math.h>
#include <string.h>

#include "graph/lower.h"
#include "graph/rnn.h"

typedef struct {
    gr_lctx *c;
    te_ctx *ctx;
    const gr_rnn *r;
    te_dtype dt;
    te_tensor *X, *W, *R, *B, *L, *h0, *c0, *P;
} rl;

static te_expr *K(const rl *s, double v) { return te_const(s->ctx, s->dt, v); }

static te_expr *act(const rl *s, const gr_act *a, te_expr *x)
{
    te_expr *zero = K(s, 0), *one = K(s, 1);
    switch (a->kind) {
    case GR_ACT_TANH: return te_tanh(x);
    case GR_ACT_SIGMOID: return te_sigmoid(x);
    case GR_ACT_RELU: return te_max(x, zero);
    case GR_ACT_HARD_SIGMOID: return te_max(zero, te_min(one, te_add(te_mul(K(s, a->alpha), x), K(s, a->beta))));
    case GR_ACT_AFFINE: return te_add(te_mul(K(s, a->alpha), x), K(s, a->beta));
    case GR_ACT_LEAKY_RELU: return te_select(te_ge(x, zero), x, te_mul(K(s, a->alpha), x));
    case GR_ACT_THRESHOLDED_RELU: return te_select(te_gt(x, K(s, a->alpha)), x, zero);
    case GR_ACT_SCALED_TANH: return te_mul(K(s, a->alpha), te_tanh(te_mul(K(s, a->beta), x)));
    case GR_ACT_ELU: return te_select(te_ge(x, zero), x, te_mul(K(s, a->alpha), te_sub(te_exp(x), one)));
    case GR_ACT_SOFTSIGN: return te_div(x, te_add(one, te_fabs(x)));
    default: return te_log(te_add(te_exp(x), one));
    }
}

static te_expr *clip(const rl *s, te_expr *x)
{
    if (s->r->clip <= 0) return x;
    return te_max(te_min(x, K(s, s->r->clip)), K(s, -s->r->clip));
}

/* A state (h or c) before the first step: initial (rank 3, layout-
 * dependent) or zero; else the previous step's stage [batch, hidden]. */
typedef struct {
    te_tensor *t;
    bool initial;
} state;

static te_expr *sread(const rl *s, state st, int d, te_expr *b, te_expr *j)
{
    if (!st.t) return K(s, 0);
    if (!st.initial) return te_read(st.t, b, j);
    te_expr *dd = te_int(s->ctx, d);
    return s->r->layout1 ? te_read(st.t, b, dd, j) : te_read(st.t, dd, b, j);
}

/* [batch, gates x hidden]: sum over k of A(b, k) M[d, g, k]. */
static te_tensor *gate_sums(rl *s, const char *name, int d, te_expr *(*a)(rl *, int, te_expr *, te_expr *, void *),
                            void *u, te_tensor *M, int64_t kext, int step)
{
    int64_t shape[2] = {s->r->batch, s->r->gates * s->r->hidden};
    te_expr *ax[2], *k = te_reduce_axis(s->ctx, "k", kext);
    char pre[24];
    snprintf(pre, sizeof pre, "%s%d_%d_", name, d, step);
    if (!k || !gr_lfresh_axes(s->c, pre, false, 2, shape, ax)) return NULL;
    te_expr *body = te_sum(te_mul(a(s, d, ax[0], k, u), te_read(M, te_int(s->ctx, d), ax[1], k)), k);
    s->c->flops += 2.0 * (double)(shape[0] * shape[1] * kext);
    char suffix[40];
    snprintf(suffix, sizeof suffix, "%s%d_%d", name, d, step);
    return gr_lstage(s->c, suffix, 2, ax, body);
}

static te_expr *x_at(rl *s, int d, te_expr *b, te_expr *k, void *u)
{
    (void)d;
    te_expr *t = te_int(s->ctx, *(int64_t *)u);
    return s->r->layout1 ? te_read(s->X, b, t, k) : te_read(s->X, t, b, k);
}

static te_expr *h_at(rl *s, int d, te_expr *b, te_expr *k, void *u) { return sread(s, *(state *)u, d, b, k); }

/* Gate g's sum at (b, j) plus its biases: Wb + Rb (either sum may be absent). */
static te_expr *gate(const rl *s, int d, te_tensor *PX, te_tensor *PH, int g, te_expr *b, te_expr *j, bool with_h)
{
    te_ctx *ctx = s->ctx;
    int64_t H = s->r->hidden, G = s->r->gates * H;
    te_expr *col = te_add(te_int(ctx, g * H), j);
    te_expr *v = te_read(PX, b, col);
    if (with_h && PH) v = te_add(v, te_read(PH, b, col));
    if (s->B) {
        v = te_add(v, te_read(s->B, te_int(ctx, d), col));
        if (with_h) v = te_add(v, te_read(s->B, te_int(ctx, d), te_add(te_int(ctx, G), col)));
    }
    return v;
}

static te_expr *hbias(const rl *s, int d, int g, te_expr *j)
{
    if (!s->B) return K(s, 0);
    int64_t H = s->r->hidden, G = s->r->gates * H;
    return te_read(s->B, te_int(s->ctx, d), te_add(te_int(s->ctx, G + g * H), j));
}

static te_tensor *stage(rl *s, const char *name, int d, int step, te_expr *const *ax, te_expr *body)
{
    char suffix[40];
    snprintf(suffix, sizeof suffix, "%s%d_%d", name, d, step);
    s->c->flops += 10.0 * (double)(s->r->batch * s->r->hidden);
    return gr_lstage(s->c, suffix, 2, ax, body);
}

static bool fresh(rl *s, const char *name, int d, int step, te_expr **ax)
{
    char pre[24];
    snprintf(pre, sizeof pre, "%s%d_%d_", name, d, step);
    int64_t shape[2] = {s->r->batch, s->r->hidden};
    return gr_lfresh_axes(s->c, pre, false, 2, shape, ax);
}

/* Masks a new state with the sequence lengths: past the end, the old. */
static te_expr *masked(const rl *s, int64_t t, te_expr *b, te_expr *nv, te_expr *old)
{
    if (!s->L) return nv;
    return te_select(te_lt(te_int(s->ctx, t), te_cast(TE_INT64, te_read(s->L, b))), nv, old);
}

/* One step of direction d at time t: the new h (and c) stages. */
static bool step(rl *s, int d, int n, int64_t t, state *h, state *cst)
{
    const gr_rnn *r = s->r;
    te_tensor *PX = gate_sums(s, "x", d, x_at, &t, s->W, r->input, n);
    if (!PX) return false;
    te_tensor *PH = NULL;
    if (h->t && !(PH = gate_sums(s, "h", d, h_at, h, s->R, r->hidden, n))) return false;
    const gr_act *A = r->act[d];
    te_expr *ax[2];
    if (r->kind == GR_RNN) {
        if (!fresh(s, "H", d, n, ax)) return false;
        te_expr *nv = act(s, &A[0], clip(s, gate(s, d, PX, PH, 0, ax[0], ax[1], true)));
        te_tensor *Hn = stage(s, "H", d, n, ax, masked(s, t, ax[0], nv, sread(s, *h, d, ax[0], ax[1])));
        if (!Hn) return false;
        *h = (state){Hn, false};
        return true;
    }
    if (r->kind == GR_GRU) {
        te_expr *rx[2];
        if (!fresh(s, "r", d, n, rx)) return false;
        te_tensor *Rg = stage(s, "r", d, n, rx, act(s, &A[0], clip(s, gate(s, d, PX, PH, 1, rx[0], rx[1], true))));
        if (!Rg) return false;
        if (!fresh(s, "H", d, n, ax)) return false;
        te_expr *b = ax[0], *j = ax[1];
        te_expr *z = act(s, &A[0], clip(s, gate(s, d, PX, PH, 0, b, j, true)));
        te_expr *hx = gate(s, d, PX, NULL, 2, b, j, false), *hh;
        if (r->linear_before_reset) {
            te_expr *ph = PH ? te_read(PH, b, te_add(te_int(s->ctx, 2 * r->hidden), j)) : K(s, 0);
            hh = te_mul(te_read(Rg, b, j), te_add(ph, hbias(s, d, 2, j)));
        } else if (h->t) {
            /* (r * H_{t-1}) R_h^T: a product of its own */
            int64_t shape[2] = {r->batch, r->hidden};
            te_expr *qx[2], *k = te_reduce_axis(s->ctx, "k", r->hidden);
            char pre[24];
            snprintf(pre, sizeof pre, "q%d_%d_", d, n);
            if (!k || !gr_lfresh_axes(s->c, pre, false, 2, shape, qx)) return false;
            te_expr *rh = te_mul(te_read(Rg, qx[0], k), sread(s, *h, d, qx[0], k));
            te_expr *w = te_read(s->R, te_int(s->ctx, d), te_add(te_int(s->ctx, 2 * r->hidden), qx[1]), k);
            s->c->flops += 2.0 * (double)(shape[0] * shape[1] * r->hidden);
            te_tensor *Q = stage(s, "q", d, n, qx, te_sum(te_mul(rh, w), k));
            if (!Q) return false;
            hh = te_add(te_read(Q, b, j), hbias(s, d, 2, j));
        } else {
            hh = hbias(s, d, 2, j);
        }
        te_expr *hc = act(s, &A[1], clip(s, te_add(hx, hh)));
        te_expr *old = sread(s, *h, d, b, j);
        te_expr *nv = te_add(te_mul(te_sub(K(s, 1), z), hc), te_mul(z, old));
        te_tensor *Hn = stage(s, "H", d, n, ax, masked(s, t, b, nv, old));
        if (!Hn) return false;
        *h = (state){Hn, false};
        return true;
    }
    /* LSTM: i o f c */
    te_expr *cx[2];
    if (!fresh(s, "C", d, n, cx)) return false;
    te_expr *b = cx[0], *j = cx[1], *cold = sread(s, *cst, d, b, j);
    te_expr *pi = s->P ? te_mul(te_read(s->P, te_int(s->ctx, d), j), cold) : K(s, 0);
    te_expr *pf = s->P ? te_mul(te_read(s->P, te_int(s->ctx, d), te_add(te_int(s->ctx, 2 * r->hidden), j)), cold) : K(s, 0);
    te_expr *ig = act(s, &A[0], clip(s, te_add(gate(s, d, PX, PH, 0, b, j, true), pi)));
    te_expr *fg = r->input_forget ? te_sub(K(s, 1), ig) : act(s, &A[0], clip(s, te_add(gate(s, d, PX, PH, 2, b, j, true), pf)));
    te_expr *cc = act(s, &A[1], clip(s, gate(s, d, PX, PH, 3, b, j, true)));
    te_expr *cn = te_add(te_mul(fg, cold), te_mul(ig, cc));
    te_tensor *Cn = stage(s, "C", d, n, cx, masked(s, t, b, cn, cold));
    if (!Cn) return false;
    if (!fresh(s, "H", d, n, ax)) return false;
    b = ax[0];
    j = ax[1];
    te_expr *cnew = te_read(Cn, b, j);
    te_expr *po = s->P ? te_mul(te_read(s->P, te_int(s->ctx, d), te_add(te_int(s->ctx, r->hidden), j)), cnew) : K(s, 0);
    te_expr *og = act(s, &A[0], clip(s, te_add(gate(s, d, PX, PH, 1, b, j, true), po)));
    te_expr *hn = te_mul(og, act(s, &A[2], cnew));
    te_tensor *Hn = stage(s, "H", d, n, ax, masked(s, t, b, hn, sread(s, *h, d, b, j)));
    if (!Hn) return false;
    *h = (state){Hn, false};
    *cst = (state){Cn, false};
    return true;
}

/* A kernel argument must be read: R is not when one step starts from a
 * zero state (seq 1, no initial_h); a select that never holds reads it. */
static te_expr *keep_r(const rl *s, te_expr *v, te_expr *ax0)
{
    if (s->h0 || s->r->seq > 1) return v;
    te_expr *z = te_int(s->ctx, 0);
    return te_select(te_lt(ax0, z), te_cast(v->dtype, te_read(s->R, z, z, z)), v);
}

/* hs[t] read at (b, j), picked by the time axis t over [lo, hi). */
static te_expr *pick(const rl *s, te_tensor *const *hs, te_expr *t, int64_t lo, int64_t hi, te_expr *b, te_expr *j)
{
    if (hi - lo == 1) return te_read(hs[lo], b, j);
    int64_t mid = lo + (hi - lo) / 2;
    return te_select(te_lt(t, te_int(s->ctx, mid)), pick(s, hs, t, lo, mid, b, j), pick(s, hs, t, mid, hi, b, j));
}

static bool lower_rnn(gr_lctx *c)
{
    rl s = {.c = c, .ctx = c->ctx};
    if (!gr_lin(c, 0, "X", &s.X) || !gr_lin(c, 1, "W", &s.W) || !gr_lin(c, 2, "R", &s.R)) return false;
    gr_rnn r;
    char why[200];
    if (!gr_rnn_read(c->n, c->tin[0], c->tin[1], c->tin[2], &r, why, sizeof why)) return gr_lfail(c, "%s", why);
    s.r = &r;
    if (!gr_te_dtype(c->tin[0]->elem_type, &s.dt)) return gr_lfail(c, "input X has no te type");
    te_tensor **opt[5] = {&s.B, &s.L, &s.h0, &s.c0, &s.P};
    for (int k = 3; k < 8 && k < c->n_inputs; k++)
        if (c->tin[k] && !gr_lin(c, k, "optional input", opt[k - 3])) return false;
    /* every direction's states per time */
    te_tensor **hs = te_alloc(s.ctx, (size_t)(2 * r.seq) * sizeof *hs);
    if (!hs) return gr_lfail(c, "out of memory");
    state last_h[2], last_c[2];
    for (int d = 0; d < r.dirs; d++) {
        bool rev = r.reverse || d == 1;
        state h = {s.h0, s.h0 != NULL}, cs = {s.c0, s.c0 != NULL};
        for (int64_t n = 0; n < r.seq; n++) {
            int64_t t = rev ? r.seq - 1 - n : n;
            if (!step(&s, d, (int)n, t, &h, &cs)) return false;
            hs[d * r.seq + t] = h.t;
        }
        last_h[d] = h;
        last_c[d] = cs;
    }
    gr_loutput o;
    if (c->n_outputs > 0 && c->tout[0]) {
        if (!gr_lout_get(c, 0, &o)) return false;
        te_expr *t = o.ax[r.layout1 ? 1 : 0], *d = o.ax[r.layout1 ? 2 : 1], *b = o.ax[r.layout1 ? 0 : 2], *j = o.ax[3];
        te_expr *y = pick(&s, hs, t, 0, r.seq, b, j);
        if (r.dirs == 2) y = te_select(te_eq(d, te_int(s.ctx, 0)), y, pick(&s, hs + r.seq, t, 0, r.seq, b, j));
        if (s.L) y = te_select(te_lt(t, te_cast(TE_INT64, te_read(s.L, b))), y, K(&s, 0));
        if (!gr_lout(c, 0, o.nd, o.ax, keep_r(&s, y, o.ax[0]))) return false;
    }
    for (int k = 1; k <= (r.kind == GR_LSTM ? 2 : 1); k++) {
        if (k >= c->n_outputs || !c->tout[k]) continue;
        if (!gr_lout_get(c, k, &o)) return false;
        te_expr *d = o.ax[r.layout1 ? 1 : 0], *b = o.ax[r.layout1 ? 0 : 1], *j = o.ax[2];
        state *last = k == 1 ? last_h : last_c;
        te_expr *y = sread(&s, last[0], 0, b, j);
        if (r.dirs == 2) y = te_select(te_eq(d, te_int(s.ctx, 0)), y, sread(&s, last[1], 1, b, j));
        if (!gr_lout(c, k, o.nd, o.ax, keep_r(&s, y, o.ax[0]))) return false;
    }
    return true;
}

const gr_lower_rule gr_lower_rules_rnn[] = {
    {"", "RNN", lower_rnn, 0, 0},
    {"", "GRU", lower_rnn, 0, 0},
    {"", "LSTM", lower_rnn, 0, 0},
    {0},
};
