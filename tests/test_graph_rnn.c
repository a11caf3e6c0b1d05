/*
 * graph/infer_rnn.c and lower_rnn.c: RNN, GRU and LSTM as one-node models
 * run through gr_compile/gr_run on fresh random inputs, weights, biases
 * and states (outputs poisoned first) against a naive double reference
 * of ONNX's equations: forward, reverse and bidirectional, layout 0 and
 * 1, biases, initial states, sequence_lens (forward), clip, non-default
 * activations with alpha/beta, GRU's linear_before_reset 0 and 1,
 * LSTM's peepholes and input_forget, a single step (R never read); and
 * every refusal's message.
 *
 * Tolerance: 2e-5 (1 + |expected|): float gates, each step rounding.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, I32 = {kDLInt, 32, 1};

typedef struct {
    const char *op, *dir;
    int layout, bias, init, lens, peep, lbr, forget;
    double clip;
    const char *acts; /* comma-separated, per direction; NULL: defaults */
    double alpha;     /* for the activations that take one */
    int64_t S;
} rcase;

static double act(const char *name, double x, double alpha, double beta)
{
    if (strcmp(name, "Tanh") == 0) return tanh(x);
    if (strcmp(name, "Sigmoid") == 0) return 1 / (1 + exp(-x));
    if (strcmp(name, "Relu") == 0) return x > 0 ? x : 0;
    if (strcmp(name, "LeakyRelu") == 0) return x >= 0 ? x : alpha * x;
    if (strcmp(name, "HardSigmoid") == 0) return fmax(0, fmin(1, alpha * x + beta));
    fail_msg("reference: activation %s", name);
    return 0;
}

/* The file's tolerance, 2e-5 (1 + |expected|); a NaN fails it. */
static bool near(double got, double want) { return fabs(got - want) <= 2e-5 * (1 + fabs(want)); }

static void run(uint64_t *rng, const rcase *k)
{
    bool gru = strcmp(k->op, "GRU") == 0, lstm = strcmp(k->op, "LSTM") == 0;
    int G = gru ? 3 : lstm ? 4 : 1, nact = gru ? 2 : lstm ? 3 : 1;
    int dirs = strcmp(k->dir, "bidirectional") == 0 ? 2 : 1;
    bool rev = strcmp(k->dir, "reverse") == 0;
    const int64_t S = k->S, B = 2, I = 3, H = 4;
    int64_t xs[3] = {k->layout ? B : S, k->layout ? S : B, I}, ws[3] = {dirs, G * H, I}, rs[3] = {dirs, G * H, H},
            bs[2] = {dirs, 2 * G * H}, ls[1] = {B}, hs[3] = {k->layout ? B : dirs, k->layout ? dirs : B, H},
            ps[2] = {dirs, 3 * H};
    ow_model *w = ow_new(14);
    ow_input(w, "x", GR_FLOAT, 3, xs);
    ow_input(w, "w", GR_FLOAT, 3, ws);
    ow_input(w, "r", GR_FLOAT, 3, rs);
    char ins[64] = "x,w,r";
    if (k->bias) ow_input(w, "b", GR_FLOAT, 2, bs);
    if (k->lens) ow_input(w, "l", GR_INT32, 1, ls);
    if (k->init) ow_input(w, "h", GR_FLOAT, 3, hs);
    if (k->init && lstm) ow_input(w, "c", GR_FLOAT, 3, hs);
    if (k->peep) ow_input(w, "p", GR_FLOAT, 2, ps);
    strcat(ins, k->bias ? ",b" : ",");
    strcat(ins, k->lens ? ",l" : ",");
    strcat(ins, k->init ? ",h" : ",");
    if (lstm) {
        strcat(ins, k->init ? ",c" : ",");
        strcat(ins, k->peep ? ",p" : "");
    }
    ow_node *n = ow_node_add(w, "", k->op, ins, lstm ? "y,yh,yc" : "y,yh");
    ow_attr_int(n, "hidden_size", H);
    ow_attr_str(n, "direction", k->dir);
    if (k->layout) ow_attr_int(n, "layout", 1);
    if (k->clip > 0) ow_attr_float(n, "clip", (float)k->clip);
    if (k->lbr) ow_attr_int(n, "linear_before_reset", 1);
    if (k->forget) ow_attr_int(n, "input_forget", 1);
    const char *names[6];
    char abuf[128];
    int na = 0;
    if (k->acts) {
        snprintf(abuf, sizeof abuf, "%s", k->acts);
        for (char *p = strtok(abuf, ","); p; p = strtok(NULL, ",")) names[na++] = p;
        assert_int_equal(na, nact * dirs);
        ow_attr_strs(n, "activations", na, names);
        /* one alpha (and beta) per activation that takes them */
        float al[6], be[6];
        int np = 0;
        for (int i = 0; i < na; i++)
            if (strcmp(names[i], "LeakyRelu") == 0 || strcmp(names[i], "HardSigmoid") == 0) {
                al[np] = (float)k->alpha;
                be[np++] = 0.5f;
            }
        if (np) {
            ow_attr_floats(n, "activation_alpha", np, al);
            ow_attr_floats(n, "activation_beta", np, be);
        }
    }
    ow_output(w, "y");
    ow_output(w, "yh");
    if (lstm) ow_output(w, "yc");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *X = ow_tensor(F32, 3, xs), *W = ow_tensor(F32, 3, ws), *R = ow_tensor(F32, 3, rs), *Bt = ow_tensor(F32, 2, bs),
             *L = ow_tensor(I32, 1, ls), *H0 = ow_tensor(F32, 3, hs), *C0 = ow_tensor(F32, 3, hs), *P = ow_tensor(F32, 2, ps);
    DLTensor *all[8] = {X, W, R, Bt, L, H0, C0, P};
    for (int q = 0; q < 8; q++)
        if (q != 4)
            for (int64_t i = 0; i < ow_numel(all[q]); i++) ow_set(all[q], i, tu_rand_uniform(rng, -0.8, 0.8));
    ow_set(L, 0, (double)S);
    ow_set(L, 1, (double)(S > 1 ? S - 1 : 1));
    DLTensor *args[8];
    int nargs = 0;
    args[nargs++] = X;
    args[nargs++] = W;
    args[nargs++] = R;
    if (k->bias) args[nargs++] = Bt;
    if (k->lens) args[nargs++] = L;
    if (k->init) args[nargs++] = H0;
    if (k->init && lstm) args[nargs++] = C0;
    if (k->peep) args[nargs++] = P;
    ow_run(e, nargs, args, 0);
    const DLTensor *Y = gr_exec_output(e, 0), *YH = gr_exec_output(e, 1), *YC = lstm ? gr_exec_output(e, 2) : NULL;
#define XA(t, b, i) ow_get(X, k->layout ? ((b) * S + (t)) * I + (i) : ((t) * B + (b)) * I + (i))
#define HI(st, d, b, j) ow_get(st, k->layout ? ((b) * dirs + (d)) * H + (j) : ((d) * B + (b)) * H + (j))
    for (int d = 0; d < dirs; d++) {
        const char *f = lstm || gru ? "Sigmoid" : "Tanh", *g = "Tanh", *hh = "Tanh";
        if (k->acts) {
            f = names[d * nact];
            if (nact > 1) g = names[d * nact + 1];
            if (nact > 2) hh = names[d * nact + 2];
        }
        double hb[2][4], cb[2][4];
        for (int b = 0; b < B; b++)
            for (int j = 0; j < H; j++) {
                hb[b][j] = k->init ? HI(H0, d, b, j) : 0;
                cb[b][j] = k->init && lstm ? HI(C0, d, b, j) : 0;
            }
        for (int64_t s = 0; s < S; s++) {
            int64_t t = rev || d == 1 ? S - 1 - s : s;
            for (int b = 0; b < B; b++) {
                double yv[4];
                bool valid = !k->lens || t < (int64_t)ow_get(L, b);
                double pre[4][4]; /* gate, j: x part + h part + biases (GRU h: x part + Wb only) */
                for (int gi = 0; gi < G; gi++)
                    for (int j = 0; j < H; j++) {
                        int64_t row = gi * H + j;
                        double v = 0;
                        for (int i = 0; i < I; i++) v += XA(t, b, i) * ow_get(W, (d * G * H + row) * I + i);
                        if (k->bias) v += ow_get(Bt, d * 2 * G * H + row);
                        double hp = 0;
                        for (int i = 0; i < H; i++) hp += hb[b][i] * ow_get(R, (d * G * H + row) * H + i);
                        double rb = k->bias ? ow_get(Bt, d * 2 * G * H + G * H + row) : 0;
                        if (gru && gi == 2) pre[gi][j] = v; /* the h gate adds its own parts */
                        else pre[gi][j] = v + hp + rb;
                    }
#define CL(x) (k->clip > 0 ? fmax(-k->clip, fmin(k->clip, (x))) : (x))
                if (!gru && !lstm) {
                    for (int j = 0; j < H; j++) yv[j] = act(f, CL(pre[0][j]), k->alpha, 0.5);
                } else if (gru) {
                    double z[4], rr[4];
                    for (int j = 0; j < H; j++) {
                        z[j] = act(f, CL(pre[0][j]), k->alpha, 0.5);
                        rr[j] = act(f, CL(pre[1][j]), k->alpha, 0.5);
                    }
                    for (int j = 0; j < H; j++) {
                        int64_t row = 2 * H + j;
                        double rb = k->bias ? ow_get(Bt, d * 2 * G * H + G * H + row) : 0, hp = 0;
                        for (int i = 0; i < H; i++)
                            hp += (k->lbr ? hb[b][i] : rr[i] * hb[b][i]) * ow_get(R, (d * G * H + row) * H + i);
                        double hv = k->lbr ? pre[2][j] + rr[j] * (hp + rb) : pre[2][j] + hp + rb;
                        double hc = act(g, CL(hv), k->alpha, 0.5);
                        yv[j] = (1 - z[j]) * hc + z[j] * hb[b][j];
                    }
                } else {
                    for (int j = 0; j < H; j++) {
                        double pi = k->peep ? ow_get(P, d * 3 * H + j) * cb[b][j] : 0;
                        double pf = k->peep ? ow_get(P, d * 3 * H + 2 * H + j) * cb[b][j] : 0;
                        double ig = act(f, CL(pre[0][j] + pi), k->alpha, 0.5);
                        double fg = k->forget ? 1 - ig : act(f, CL(pre[2][j] + pf), k->alpha, 0.5);
                        double cc = act(g, CL(pre[3][j]), k->alpha, 0.5);
                        double cn = fg * cb[b][j] + ig * cc;
                        double po = k->peep ? ow_get(P, d * 3 * H + H + j) * cn : 0;
                        double og = act(f, CL(pre[1][j] + po), k->alpha, 0.5);
                        yv[j] = og * act(hh, cn, k->alpha, 0.5);
                        pre[3][j] = cn; /* the new c, kept below */
                    }
                }
                for (int j = 0; j < H; j++) {
                    if (valid) {
                        hb[b][j] = yv[j];
                        if (lstm) cb[b][j] = pre[3][j];
                    }
                    int64_t at = k->layout ? (((int64_t)b * S + t) * dirs + d) * H + j : ((t * dirs + d) * B + b) * H + j;
                    double want = valid ? yv[j] : 0, got = ow_get(Y, at);
                    if (!near(got, want))
                        fail_msg("%s %s Y (t %lld, d %d, b %d, j %d): got %.9g, expected %.9g", k->op, k->dir, (long long)t,
                                 d, b, j, got, want);
                }
            }
        }
        for (int b = 0; b < B; b++)
            for (int j = 0; j < H; j++) {
                double got = HI(YH, d, b, j);
                if (!near(got, hb[b][j]))
                    fail_msg("%s %s Y_h (d %d, b %d, j %d): got %.9g, expected %.9g", k->op, k->dir, d, b, j, got, hb[b][j]);
                if (YC && !near(HI(YC, d, b, j), cb[b][j]))
                    fail_msg("LSTM Y_c (d %d, b %d, j %d): got %.9g, expected %.9g", d, b, j, HI(YC, d, b, j), cb[b][j]);
            }
    }
    for (int q = 0; q < 8; q++) rt_tensor_free(all[q]);
    ow_finish(w, e, m);
}

static void test_rnn(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const rcase cases[] = {
        {"RNN", "forward", 0, 1, 1, 0, 0, 0, 0, 0, NULL, 0, 4},
        {"RNN", "reverse", 1, 0, 0, 0, 0, 0, 0, 0, NULL, 0, 3},
        {"RNN", "bidirectional", 0, 1, 1, 0, 0, 0, 0, 0.5, NULL, 0, 3},
        {"RNN", "forward", 0, 1, 0, 1, 0, 0, 0, 0, NULL, 0, 3},
        {"RNN", "forward", 0, 0, 0, 0, 0, 0, 0, 0, NULL, 0, 1},
        {"GRU", "forward", 0, 1, 1, 0, 0, 0, 0, 0, NULL, 0, 3},
        {"GRU", "forward", 1, 1, 1, 1, 0, 1, 0, 0, NULL, 0, 3},
        {"GRU", "bidirectional", 0, 1, 0, 0, 0, 0, 0, 0, NULL, 0, 2},
        {"GRU", "reverse", 0, 0, 0, 0, 0, 1, 0, 0, NULL, 0, 1},
        {"LSTM", "forward", 0, 1, 1, 0, 1, 0, 0, 0, NULL, 0, 3},
        {"LSTM", "forward", 1, 1, 1, 1, 1, 0, 1, 0, NULL, 0, 3},
        {"LSTM", "bidirectional", 0, 1, 1, 0, 0, 0, 0, 0.7, NULL, 0, 2},
        {"LSTM", "reverse", 0, 0, 0, 0, 0, 0, 0, 0, NULL, 0, 1},
        {"RNN", "bidirectional", 0, 1, 0, 0, 0, 0, 0, 0, "Relu,LeakyRelu", 0.25, 3},
        {"GRU", "forward", 0, 1, 0, 0, 0, 0, 0, 0, "HardSigmoid,Tanh", 0.3, 3},
        {"LSTM", "forward", 0, 1, 0, 0, 0, 0, 0, 0, "HardSigmoid,LeakyRelu,Tanh", 0.3, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run(&rng, &cases[i]);
}

#define RX OW_IN("x", GR_FLOAT, 3, 2, 2, 3)
#define RW OW_IN("w", GR_FLOAT, 3, 1, 4, 3)
#define RR OW_IN("r", GR_FLOAT, 3, 1, 4, 4)
static const ow_error_case errors[] = {
    {{14, "RNN", "x,w,r", {RX, RW, RR}, {OW_AI("hidden_size", 4), OW_AS("direction", "up")}},
     {"node 'n0' (RNN)", "attribute 'direction' must be forward, reverse or bidirectional"}},
    {{14, "RNN", "x,w,r", {RX, OW_IN("w", GR_FLOAT, 3, 1, 4, 2), RR}, {OW_AI("hidden_size", 4)}},
     {"(RNN)", "input W must have shape [1, 4, 3]"}},
    {{14, "RNN", "x,w,r", {RX, RW, OW_IN("r", GR_FLOAT, 3, 1, 4, 3)}, {OW_AI("hidden_size", 4)}},
     {"(RNN)", "input R must have shape [1, 4, 4]"}},
    {{14, "RNN", "x,w,r", {OW_IN("x", GR_FLOAT, 2, 2, 3), RW, RR}, {OW_AI("hidden_size", 4)}},
     {"(RNN)", "input X has rank 2; it must be 3"}},
    {{14, "RNN", "x,w,r", {OW_IN("x", GR_INT32, 3, 2, 2, 3), RW, RR}, {OW_AI("hidden_size", 4)}},
     {"(RNN)", "inputs X, W and R must be of one float type (int32, float, float)"}},
    {{14, "RNN", "x,w,r,,l", {RX, RW, RR, OW_IN("l", GR_INT32, 1, 2)}, {OW_AI("hidden_size", 4), OW_AS("direction", "reverse")}},
     {"(RNN)", "input sequence_lens with direction reverse is not supported"}},
    {{14, "RNN", "x,w,r,,l", {RX, RW, RR, OW_IN("l", GR_INT64, 1, 2)}, {OW_AI("hidden_size", 4)}},
     {"(RNN)", "input sequence_lens must be int32 of shape [2]"}},
    {{14, "RNN", "x,w,r,b", {RX, RW, RR, OW_IN("b", GR_FLOAT, 2, 1, 4)}, {OW_AI("hidden_size", 4)}},
     {"(RNN)", "input B must be float of shape [1, 8]"}},
    {{14, "RNN", "x,w,r,,,h", {RX, RW, RR, OW_IN("h", GR_FLOAT, 3, 1, 3, 4)}, {OW_AI("hidden_size", 4)}},
     {"(RNN)", "input initial_h must be float of shape [1, 2, 4]"}},
    {{13, "RNN", "x,w,r", {RX, RW, RR}, {OW_AI("hidden_size", 4), OW_AI("layout", 1)}},
     {"(RNN)", "attribute 'layout' is not defined before opset 14"}},
    {{14, "RNN", "x,w,r", {RX, RW, RR}, {OW_AI("hidden_size", 4), OW_AF("clip", -1)}},
     {"(RNN)", "attribute 'clip' must be > 0"}},
    {{14, "RNN", "x,w,r", {RX, RW, RR}, {OW_AI("hidden_size", 4), OW_AS("activations", "Tanh")}},
     {"(RNN)", "attribute 'activations' must list 1 names (1 per direction)"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rnn),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
