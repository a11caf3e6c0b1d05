/*
 * graph/pass_alter_layout.c through gr_compile: small models written
 * here, the graph inspected after compiling (before/after) and run on
 * fresh random data, outputs poisoned first, against a naive
 * double-precision reference and against the same model compiled with
 * gr_compile_options.no_layout:
 *   - conv -> relu -> conv runs blocked with exactly one ToNCHWc (at the
 *     input) and one FromNCHWc (at the output), and so does conv ->
 *     any layout-agnostic elementwise operator -> conv (numerically: the
 *     newer activations, PRelu and Max with per-channel constants, Pow);
 *   - a residual block keeps its Add (and a per-channel Mul by an
 *     initializer, re-laid out) blocked;
 *   - a depthwise convolution (strided) runs blocked;
 *   - with 16 lanes, 24-channel tensors are blocked by 8, convolutions
 *     changing block size;
 *   - a value that is a graph output and read further on comes back plain
 *     for the output and stays blocked for its reader;
 *   - a Conv whose channels are no multiple of the block, and every Conv
 *     under no_layout, is left alone;
 *   - LOOM_DUMP_GRAPH shows the graph after the pass;
 *   - the default schedule gives a blocked convolution its register tile
 *     (autotune/rules/rule_cache_write.c, autotune/default_schedule.c),
 *     its bias, residual Add and Relu computed in the tile's copy-out (a
 *     MatMul's bias and gelu alike);
 *   - keys with malformed layout operators are refused with the rule.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loom/autotune.h"
#include "loom/ops.h"
#include "loom/schedule.h"
#include "loom/tir.h"
#include "onnx_writer.h"
#include "testutil.h"


/* The block gr_compile uses for the host (llvm): its float32 lanes. */
static int64_t host_block(void) { return tune_target_vector_bytes("llvm") / 4; }

typedef struct {
    int64_t k, c, r, s; /* weight shape */
    float *w, *b;
} conv_w;

static conv_w rand_conv(uint64_t *rng, int64_t k, int64_t c, int64_t r, int64_t s)
{
    conv_w cw = {k, c, r, s, malloc(sizeof(float) * (size_t)(k * c * r * s)),
                 malloc(sizeof(float) * (size_t)k)};
    assert_non_null(cw.w);
    assert_non_null(cw.b);
    for (int64_t i = 0; i < k * c * r * s; i++) cw.w[i] = (float)tu_rand_uniform(rng, -0.5, 0.5);
    for (int64_t i = 0; i < k; i++) cw.b[i] = (float)tu_rand_uniform(rng, -0.5, 0.5);
    return cw;
}

static void free_conv(conv_w *cw)
{
    free(cw->w);
    free(cw->b);
}

/* Adds initializers NAME_w, NAME_b and a Conv node x -> y. */
static void add_conv(ow_model *m, const char *name, const conv_w *cw, const char *x, const char *y,
                     int64_t group, int64_t stride, int64_t pad)
{
    char w[64], b[64], ins[200];
    snprintf(w, sizeof w, "%s_w", name);
    snprintf(b, sizeof b, "%s_b", name);
    ow_init(m, w, GR_FLOAT, 4, (int64_t[]){cw->k, cw->c, cw->r, cw->s}, cw->w,
            sizeof(float) * (size_t)(cw->k * cw->c * cw->r * cw->s));
    ow_init(m, b, GR_FLOAT, 1, (int64_t[]){cw->k}, cw->b, sizeof(float) * (size_t)cw->k);
    snprintf(ins, sizeof ins, "%s,%s,%s", x, w, b);
    ow_node *n = ow_node_add(m, "", "Conv", ins, y);
    ow_attr_int(n, "group", group);
    ow_attr_ints(n, "strides", 2, (int64_t[]){stride, stride});
    ow_attr_ints(n, "pads", 4, (int64_t[]){pad, pad, pad, pad});
}

/* Naive NCHW convolution in double: x [1, C, H, W] -> y [1, K, OH, OW]. */
static double *ref_conv(const double *x, int64_t C, int64_t H, int64_t W, const conv_w *cw,
                        int64_t group, int64_t stride, int64_t pad, int64_t *oh, int64_t *ow)
{
    int64_t K = cw->k, Cg = cw->c, Kg = K / group;
    *oh = (H + 2 * pad - cw->r) / stride + 1;
    *ow = (W + 2 * pad - cw->s) / stride + 1;
    double *y = calloc((size_t)(K * *oh * *ow), sizeof *y);
    assert_non_null(y);
    for (int64_t k = 0; k < K; k++)
        for (int64_t i = 0; i < *oh; i++)
            for (int64_t j = 0; j < *ow; j++) {
                double acc = cw->b[k];
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t r = 0; r < cw->r; r++)
                        for (int64_t s = 0; s < cw->s; s++) {
                            int64_t h = i * stride + r - pad, v = j * stride + s - pad;
                            if (h < 0 || h >= H || v < 0 || v >= W) continue;
                            int64_t ch = (k / Kg) * Cg + c;
                            acc += x[(ch * H + h) * W + v] *
                                   (double)cw->w[((k * Cg + c) * cw->r + r) * cw->s + s];
                        }
                y[(k * *oh + i) * *ow + j] = acc;
            }
    (void)C;
    return y;
}

static void relu(double *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] = x[i] > 0 ? x[i] : 0;
}

/* ---------------- pools on NCHW ---------------- */

typedef struct {
    const char *op;       /* MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool */
    int64_t k[2], s[2], d[2];
    int64_t pads[4];      /* begin h, begin w, end h, end w */
    const char *auto_pad; /* NULL: not set */
    int ceil, incl;       /* ceil_mode, count_include_pad (-1: attribute not set) */
} pool_case;

static void add_pool(ow_model *m, const pool_case *pc, const char *x, const char *y)
{
    ow_node *n = ow_node_add(m, "", pc->op, x, y);
    if (strncmp(pc->op, "Global", 6) == 0) return;
    ow_attr_ints(n, "kernel_shape", 2, pc->k);
    ow_attr_ints(n, "strides", 2, pc->s);
    if (pc->d[0] != 1 || pc->d[1] != 1) ow_attr_ints(n, "dilations", 2, pc->d);
    if (pc->auto_pad) ow_attr_str(n, "auto_pad", pc->auto_pad);
    else ow_attr_ints(n, "pads", 4, pc->pads);
    if (pc->ceil >= 0) ow_attr_int(n, "ceil_mode", pc->ceil);
    if (pc->incl >= 0) ow_attr_int(n, "count_include_pad", pc->incl);
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ONNX's pooling in double over x [1, C, H, W]. */
static double *ref_pool(const double *x, int64_t C, int64_t H, int64_t W, const pool_case *pc,
                        int64_t *oh, int64_t *ow)
{
    bool global = strncmp(pc->op, "Global", 6) == 0, max = strstr(pc->op, "Max") != NULL;
    int64_t in[2] = {H, W}, out[2], pb[2], pe[2], k[2], s[2], d[2];
    for (int i = 0; i < 2; i++) {
        k[i] = global ? in[i] : pc->k[i];
        s[i] = global ? 1 : pc->s[i];
        d[i] = global ? 1 : pc->d[i];
        int64_t span = (k[i] - 1) * d[i] + 1;
        if (!global && pc->auto_pad && strncmp(pc->auto_pad, "SAME", 4) == 0) {
            out[i] = cdiv(in[i], s[i]);
            int64_t total = (out[i] - 1) * s[i] + span - in[i];
            if (total < 0) total = 0;
            pb[i] = strcmp(pc->auto_pad, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
            pe[i] = total - pb[i];
        } else {
            bool valid = global || (pc->auto_pad && strcmp(pc->auto_pad, "VALID") == 0);
            pb[i] = valid ? 0 : pc->pads[i];
            pe[i] = valid ? 0 : pc->pads[2 + i];
            int64_t room = in[i] + pb[i] + pe[i] - span;
            out[i] = (pc->ceil == 1 ? cdiv(room, s[i]) : room / s[i]) + 1;
            if (pc->ceil == 1 && (out[i] - 1) * s[i] >= in[i] + pb[i]) out[i]--;
        }
    }
    *oh = out[0];
    *ow = out[1];
    double *y = malloc(sizeof *y * (size_t)(C * out[0] * out[1]));
    assert_non_null(y);
    for (int64_t c = 0; c < C; c++)
        for (int64_t i = 0; i < out[0]; i++)
            for (int64_t j = 0; j < out[1]; j++) {
                double acc = max ? -INFINITY : 0;
                int64_t inside = 0, counted[2] = {0, 0};
                for (int64_t r = 0; r < k[0]; r++)
                    for (int64_t t = 0; t < k[1]; t++) {
                        int64_t h = i * s[0] - pb[0] + r * d[0], v = j * s[1] - pb[1] + t * d[1];
                        if (h < 0 || h >= H || v < 0 || v >= W) continue;
                        double e = x[(c * H + h) * W + v];
                        acc = max ? (e > acc ? e : acc) : acc + e;
                        inside++;
                    }
                /* count_include_pad counts the pads, not past the end pad. */
                int64_t pos[2] = {i, j};
                for (int a = 0; a < 2; a++)
                    for (int64_t r = 0; r < k[a]; r++) {
                        int64_t q = pos[a] * s[a] - pb[a] + r * d[a];
                        counted[a] += q >= -pb[a] && q < in[a] + pe[a];
                    }
                double div = pc->incl == 1 ? (double)(counted[0] * counted[1]) : (double)inside;
                y[(c * out[0] + i) * out[1] + j] = max ? acc : acc / div;
            }
    return y;
}

static char *pool_op_name(const pool_case *pc, char *buf, size_t n)
{
    snprintf(buf, n, "%sNCHWc", pc->op);
    return buf;
}

/* conv -> OP -> conv: the activation between the convolutions, x its
 * input, per-channel constants for the binary ones (PRelu's slope
 * [C,1,1], a Max's or Pow's second input [1,C,1,1] or a scalar). */
static void add_activation(ow_model *w, const char *op, int64_t C, const char *x, const char *y)
{
    static float pc[64];
    for (int c = 0; c < 64; c++) pc[c] = 0.05f * (float)c - 0.75f;
    char ins[64];
    snprintf(ins, sizeof ins, "%s", x);
    if (strcmp(op, "PRelu") == 0) {
        ow_init(w, "pc", GR_FLOAT, 3, (int64_t[]){C, 1, 1}, pc, (size_t)C * 4);
        snprintf(ins, sizeof ins, "%s,pc", x);
    } else if (strcmp(op, "Max") == 0 || strcmp(op, "Min") == 0 || strcmp(op, "Sum") == 0 ||
               strcmp(op, "Mean") == 0) {
        ow_init(w, "pc", GR_FLOAT, 4, (int64_t[]){1, C, 1, 1}, pc, (size_t)C * 4);
        snprintf(ins, sizeof ins, "%s,pc", x);
    } else if (strcmp(op, "Pow") == 0) {
        float two = 2;
        ow_init(w, "two", GR_FLOAT, 0, NULL, &two, 4);
        snprintf(ins, sizeof ins, "%s,two", x);
    }
    ow_node *n = ow_node_add(w, "", op, ins, y);
    if (strcmp(op, "LeakyRelu") == 0 || strcmp(op, "Elu") == 0) ow_attr_float(n, "alpha", 0.25f);
}

#define LAY_MAX_STEPS 8

/* One model under test, named for failure messages: written with the
 * graph input x [1, C, H, W], loaded twice and compiled with the layout
 * pass (e1, its graph g) and without (e2), then given one random x. */
typedef struct {
    const char *name;
    int64_t C, H, W;
    ow_model *w;
    gr_model *m1, *m2;
    gr_exec *e1, *e2;
    const gr_graph *g;
    DLTensor *x;
    double *xd; /* x in double, for the reference */
    /* a chain's (lay_chain): weights, per-channel scale, graph outputs'
     * references and sizes, the last one's spatial extents */
    conv_w conv[LAY_MAX_STEPS];
    int nconv;
    float scale[64];
    float bn[4][64]; /* a BatchNormalization's scale, beta, mean, var */
    double *ref[2];
    int64_t nval[2];
    int nref;
    int64_t oh, ow;
} lay_run;

/* Starts t's model: opset, the input x; the caller adds the rest. */
static ow_model *lay_begin(lay_run *t, const char *name, int64_t opset, int64_t C, int64_t H,
                          int64_t W)
{
    *t = (lay_run){.name = name, .C = C, .H = H, .W = W, .w = ow_new(opset)};
    ow_input(t->w, "x", GR_FLOAT, 4, (int64_t[]){1, C, H, W});
    return t->w;
}

/* Loads t's model twice, compiles it both ways, draws x from rng. */
static void lay_compile(lay_run *t, uint64_t *rng)
{
    t->m1 = ow_load_ok(t->w);
    t->m2 = ow_load_ok(t->w);
    char *err = NULL;
    t->e1 = gr_compile(t->m1, &(gr_compile_options){0}, &err);
    if (!t->e1) fail_msg("%s: gr_compile: %s", t->name, err);
    t->e2 = gr_compile(t->m2, &(gr_compile_options){.no_layout = true}, &err);
    if (!t->e2) fail_msg("%s: gr_compile (no_layout): %s", t->name, err);
    t->g = t->m1->graph;
    t->x = tu_rand_f32(rng, 4, (int64_t[]){1, t->C, t->H, t->W});
    t->xd = malloc(sizeof(double) * (size_t)ow_numel(t->x));
    assert_non_null(t->xd);
    for (int64_t i = 0; i < ow_numel(t->x); i++) t->xd[i] = ow_get(t->x, i);
}

/* assert_int_equal naming t's case and the expression. */
#define LAY_EQ(t, got, want) lay_eq((t), (int64_t)(got), (int64_t)(want), #got)
static void lay_eq(const lay_run *t, int64_t got, int64_t want, const char *what)
{
    if (got != want) fail_msg("%s: %s is %ld (want %ld)", t->name, what, (long)got, (long)want);
}

static void lay_end(lay_run *t)
{
    for (int i = 0; i < t->nconv; i++) free_conv(&t->conv[i]);
    for (int i = 0; i < t->nref; i++) free(t->ref[i]);
    free(t->xd);
    rt_tensor_free(t->x);
    gr_exec_free(t->e1);
    gr_exec_free(t->e2);
    gr_model_free(t->m1);
    gr_model_free(t->m2);
    ow_free(t->w);
}

static int count_op(const gr_graph *g, const char *domain, const char *op)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        n += strcmp(g->nodes[i].domain, domain) == 0 && strcmp(g->nodes[i].op_type, op) == 0;
    return n;
}

static int find_op(const gr_graph *g, const char *domain, const char *op, int from)
{
    for (int i = from; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].domain, domain) == 0 && strcmp(g->nodes[i].op_type, op) == 0) return i;
    return -1;
}

static const gr_type *out_type(const gr_graph *g, int node)
{
    return &g->values[g->nodes[node].outputs[0]].type;
}

/* Counts of operators in g, each "[domain.]Op=N" of spec (space
 * separated) a check naming t's case. */
static void lay_ops(const lay_run *t, const gr_graph *g, const char *spec)
{
    char item[64];
    for (const char *p = spec; *p;) {
        size_t len = strcspn(p, " ");
        assert_true(len < sizeof item);
        memcpy(item, p, len);
        item[len] = 0;
        p += len + (p[len] == ' ');
        char *eq = strchr(item, '='), *dot = strchr(item, '.');
        assert_non_null(eq);
        *eq = 0;
        const char *domain = dot ? item : "", *op = dot ? dot + 1 : item;
        if (dot) *dot = 0;
        int got = count_op(g, domain, op), want = atoi(eq + 1);
        if (got != want)
            fail_msg("%s: %d %s%s%s (want %d)", t->name, got, domain, *domain ? "." : "", op, want);
    }
}

/* Runs both of t's execs on its x; checks output k of each against ref
 * (n values). */
static void lay_check(const lay_run *t, int k, const double *ref, int64_t n)
{
    const DLTensor *a = ow_run(t->e1, 1, (DLTensor *[]){t->x}, k);
    assert_int_equal(ow_numel(a), n);
    double *got = malloc(sizeof(double) * (size_t)n);
    assert_non_null(got);
    for (int64_t i = 0; i < n; i++) got[i] = ow_get(a, i);
    const DLTensor *b = ow_run(t->e2, 1, (DLTensor *[]){t->x}, k);
    for (int64_t i = 0; i < n; i++) {
        double tol = 1e-4 + 1e-4 * fabs(ref[i]);
        if (!(fabs(got[i] - ref[i]) <= tol))
            fail_msg("%s: blocked output %d[%ld] = %.8g, reference %.8g", t->name, k, (long)i,
                     got[i], ref[i]);
        if (!(fabs(ow_get(b, i) - ref[i]) <= tol))
            fail_msg("%s: plain output %d[%ld] = %.8g, reference %.8g", t->name, k, (long)i,
                     ow_get(b, i), ref[i]);
        if (!(fabs(got[i] - ow_get(b, i)) <= tol))
            fail_msg("%s: output %d[%ld]: blocked %.8g, plain %.8g", t->name, k, (long)i, got[i],
                     ow_get(b, i));
    }
    free(got);
}

/* One step of a chain from the graph input x to the graph output y. */
typedef struct {
    char op; /* 'c' Conv, 'r' Relu, 'k' Clip (no bounds), 'p' a pool, 'f' an
              * activation (add_activation), '+' Add(., x), '*' Mul(., scale)
              * by a per-channel initializer [1, C, 1, 1] in [0.5, 2], 'n'
              * BatchNormalization (random parameters, epsilon 1e-5) */
    int64_t k, r, group, stride, pad; /* Conv: output channels, r x r kernel */
    const pool_case *pool;
    const char *act;
    double (*act_ref)(double v, int64_t channel);
    const char *out; /* also a graph output of this name (before y) */
} lay_step;

#define L_CONV(K, R, G, S, P)                                                                      \
    {.op = 'c', .k = (K), .r = (R), .group = (G), .stride = (S), .pad = (P)}
#define L_RELU {.op = 'r'}
#define L_POOL(pc) {.op = 'p', .pool = (pc)}
#define L_ACT(name, ref) {.op = 'f', .act = (name), .act_ref = (ref)}
#define L_ADD_X {.op = '+'}
#define L_SCALE {.op = '*'}
#define L_BN {.op = 'n'}
#define L_CHAIN(run, name, opset, C, H, W, rng, steps)                                            \
    lay_chain((run), (name), (opset), (C), (H), (W), (rng), (steps),                              \
              (int)(sizeof(steps) / sizeof *(steps)))

/* Builds the chain into run's model (random weights from rng), compiles
 * it both ways (lay_compile) and computes each graph output's reference
 * in double, its spatial extents in run->oh, run->ow (the last). */
static void lay_chain(lay_run *run, const char *name, int64_t opset, int64_t C, int64_t H,
                      int64_t W, uint64_t *rng, const lay_step *steps, int n)
{
    ow_model *w = lay_begin(run, name, opset, C, H, W);
    assert_true(n <= LAY_MAX_STEPS && C <= 64);
    char names[LAY_MAX_STEPS + 1][16];
    snprintf(names[0], sizeof names[0], "x");
    int64_t c = C;
    for (int i = 0; i < n; i++) {
        const lay_step *st = &steps[i];
        const char *x = names[i], *y = names[i + 1];
        if (st->out) snprintf(names[i + 1], sizeof names[0], "%s", st->out);
        else if (i == n - 1) snprintf(names[i + 1], sizeof names[0], "y");
        else snprintf(names[i + 1], sizeof names[0], "v%d", i + 1);
        char in2[200], cname[16];
        switch (st->op) {
        case 'c':
            snprintf(cname, sizeof cname, "c%d", (run->nconv + 1) % 100);
            run->conv[run->nconv] = rand_conv(rng, st->k, c / st->group, st->r, st->r);
            add_conv(w, cname, &run->conv[run->nconv++], x, y, st->group, st->stride, st->pad);
            c = st->k;
            break;
        case 'r': ow_node_add(w, "", "Relu", x, y); break;
        case 'k': ow_node_add(w, "", "Clip", x, y); break;
        case 'p': add_pool(w, st->pool, x, y); break;
        case 'f': add_activation(w, st->act, c, x, y); break;
        case '+':
            snprintf(in2, sizeof in2, "%s,x", x);
            ow_node_add(w, "", "Add", in2, y);
            break;
        case '*':
            for (int64_t j = 0; j < c; j++) run->scale[j] = (float)tu_rand_uniform(rng, 0.5, 2.0);
            ow_init(w, "scale", GR_FLOAT, 4, (int64_t[]){1, c, 1, 1}, run->scale,
                    sizeof(float) * (size_t)c);
            snprintf(in2, sizeof in2, "%s,scale", x);
            ow_node_add(w, "", "Mul", in2, y);
            break;
        case 'n': {
            static const char *const pn[4] = {"bn_scale", "bn_beta", "bn_mean", "bn_var"};
            static const double lo[4] = {0.5, -1, -1, 0.2}, hi[4] = {2, 1, 1, 2};
            for (int k = 0; k < 4; k++) {
                for (int64_t j = 0; j < c; j++) run->bn[k][j] = (float)tu_rand_uniform(rng, lo[k], hi[k]);
                ow_init(w, pn[k], GR_FLOAT, 1, (int64_t[]){c}, run->bn[k], sizeof(float) * (size_t)c);
            }
            snprintf(in2, sizeof in2, "%s,bn_scale,bn_beta,bn_mean,bn_var", x);
            ow_node_add(w, "", "BatchNormalization", in2, y);
            break;
        }
        default: fail_msg("%s: step %d: unknown op '%c'", name, i, st->op);
        }
        if (st->out) ow_output(w, st->out);
    }
    ow_output(w, names[n]);
    lay_compile(run, rng);

    /* The reference, step by step, on [c, h, w]. */
    int64_t h = H, wd = W, conv = 0;
    c = C;
    double *cur = malloc(sizeof(double) * (size_t)(C * H * W));
    assert_non_null(cur);
    memcpy(cur, run->xd, sizeof(double) * (size_t)(C * H * W));
    for (int i = 0; i < n; i++) {
        const lay_step *st = &steps[i];
        double *next = NULL;
        int64_t oh = h, ow = wd;
        if (st->op == 'c') {
            next = ref_conv(cur, c, h, wd, &run->conv[conv++], st->group, st->stride, st->pad, &oh,
                            &ow);
            c = st->k;
        } else if (st->op == 'p') {
            next = ref_pool(cur, c, h, wd, st->pool, &oh, &ow);
        }
        if (next) {
            free(cur);
            cur = next;
            h = oh;
            wd = ow;
        }
        for (int64_t j = 0; j < c * h * wd; j++) {
            if (st->op == 'r') cur[j] = cur[j] > 0 ? cur[j] : 0;
            else if (st->op == 'f') cur[j] = st->act_ref(cur[j], j / (h * wd));
            else if (st->op == '+') cur[j] += run->xd[j];
            else if (st->op == '*') cur[j] *= (double)run->scale[j / (h * wd)];
            else if (st->op == 'n') {
                int64_t ch = j / (h * wd);
                cur[j] = (cur[j] - run->bn[2][ch]) / sqrt((double)run->bn[3][ch] + (double)1e-5f) *
                             run->bn[0][ch] + run->bn[1][ch];
            }
        }
        if (st->out || i == n - 1) {
            assert_true(run->nref < 2);
            run->nval[run->nref] = c * h * wd;
            run->ref[run->nref] = malloc(sizeof(double) * (size_t)(c * h * wd));
            assert_non_null(run->ref[run->nref]);
            memcpy(run->ref[run->nref++], cur, sizeof(double) * (size_t)(c * h * wd));
        }
    }
    free(cur);
    run->oh = h;
    run->ow = wd;
}

/* Every graph output of run's chain against its reference, both ways. */
static void lay_chain_check(const lay_run *run)
{
    for (int k = 0; k < run->nref; k++) lay_check(run, k, run->ref[k], run->nval[k]);
}

static void test_conv_relu_conv(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t C = 32, H = 9, W = 10;
    const lay_step chain[] = {L_CONV(C, 3, 1, 1, 1), L_RELU, L_CONV(2 * C, 1, 1, 1, 0)};
    lay_run run;
    L_CHAIN(&run, "conv-relu-conv", 13, C, H, W, &rng, chain);
    const gr_graph *g = run.g;
    /* After: To, ConvNCHWc, Relu (blocked), ConvNCHWc, From. */
    lay_ops(&run, g, "Conv=0 loom.ConvNCHWc=2 loom.ToNCHWc=1 loom.FromNCHWc=1");
    assert_int_equal(g->n_nodes, 5);
    assert_int_equal(find_op(g, "loom", "ToNCHWc", 0), 0);
    assert_int_equal(find_op(g, "loom", "FromNCHWc", 0), g->n_nodes - 1);
    int r = find_op(g, "", "Relu", 0);
    assert_true(r >= 0);
    const gr_type *rt = out_type(g, r);
    int64_t b = host_block();
    assert_int_equal(rt->ndim, 5);
    assert_int_equal(rt->shape[1], C / b);
    assert_int_equal(rt->shape[4], b);
    /* The interface is unchanged: the graph output keeps name and type. */
    const gr_value *y = &g->values[g->outputs[0]];
    assert_string_equal(y->name, "y");
    assert_int_equal(y->type.ndim, 4);
    assert_int_equal(y->type.shape[1], 2 * C);
    /* Before (no_layout): two Conv, no loom operator. */
    lay_ops(&run, run.m2->graph, "Conv=2 loom.ConvNCHWc=0");

    lay_chain_check(&run);
    lay_end(&run);
}

/* Images 17 columns wide (a prime: no register tile of 4-8 columns
 * divides them): the blocked convolutions' tiles leave a tail of columns,
 * computed in its own loop body; the results match the reference. */
static void test_conv_prime_width(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t C = 32, H = 5, W = 17;
    const lay_step chain[] = {L_CONV(C, 3, 1, 1, 1), L_RELU, L_CONV(2 * C, 1, 1, 1, 0)};
    lay_run run;
    L_CHAIN(&run, "conv-relu-conv at 17 columns", 13, C, H, W, &rng, chain);
    lay_ops(&run, run.g, "Conv=0 loom.ConvNCHWc=2");
    lay_chain_check(&run);
    lay_end(&run);
}

/* Every layout-agnostic elementwise operator between two blocked
 * convolutions runs on the blocked twins: no FromNCHWc/ToNCHWc between
 * them (gr_extract_tasks: the graph as gr_compile plans it, nothing
 * built). Identity and Dropout are removed before the layout pass. */
static void test_activations_stay_blocked(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const char *const ops[] = {
        "Relu", "Clip", "Sigmoid", "Tanh", "HardSwish", "Sqrt", "Reciprocal", "Erf", "Gelu",
        "Identity", "Dropout", "Abs", "Neg", "Sign", "Exp", "Log", "Ceil", "Floor", "Round", "Sin",
        "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus",
        "Softsign", "Mish", "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "ThresholdedRelu",
        "Shrink", "PRelu", "Max", "Min", "Sum", "Mean", "Pow"};
    const int64_t b = host_block(), C = 2 * b, H = 4, W = 4;
    conv_w c1 = rand_conv(&rng, C, C, 1, 1), c2 = rand_conv(&rng, C, C, 1, 1);
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        ow_model *w = ow_new(18);
        ow_input(w, "x", GR_FLOAT, 4, (int64_t[]){1, C, H, W});
        add_conv(w, "c1", &c1, "x", "h", 1, 1, 0);
        add_activation(w, ops[i], C, "h", "a");
        add_conv(w, "c2", &c2, "a", "y", 1, 1, 0);
        ow_output(w, "y");
        gr_model *m = ow_load_ok(w);
        char *err = NULL;
        gr_task *tasks;
        int ntasks;
        if (gr_extract_tasks(m, NULL, &tasks, &ntasks, &err) != 0) fail_msg("%s: %s", ops[i], err);
        const gr_graph *g = m->graph;
        bool removed = strcmp(ops[i], "Identity") == 0 || strcmp(ops[i], "Dropout") == 0;
        int a = find_op(g, "", ops[i], 0);
        if (count_op(g, "loom", "ToNCHWc") != 1 || count_op(g, "loom", "FromNCHWc") != 1 ||
            count_op(g, "loom", "ConvNCHWc") != 2 || g->n_nodes != (removed ? 4 : 5) ||
            find_op(g, "loom", "FromNCHWc", 0) != g->n_nodes - 1 || (!removed && a < 0))
            fail_msg("%s between blocked convolutions: %d nodes, %d ToNCHWc, %d FromNCHWc", ops[i],
                     g->n_nodes, count_op(g, "loom", "ToNCHWc"), count_op(g, "loom", "FromNCHWc"));
        if (!removed && out_type(g, a)->ndim != 5) fail_msg("%s: its output is not blocked", ops[i]);
        gr_tasks_free(tasks, ntasks);
        gr_model_free(m);
        ow_free(w);
    }
    free_conv(&c1), free_conv(&c2);
}

static double a_leaky(double v, int64_t c) { return v < 0 ? 0.25 * v : v; }
static double a_hsig(double v, int64_t c) { return fmax(0, fmin(1, 0.2 * v + 0.5)); }
static double a_mish(double v, int64_t c) { return v * tanh(log1p(exp(v))); }
static double a_softsign(double v, int64_t c) { return v / (1 + fabs(v)); }
static double a_elu(double v, int64_t c) { return v < 0 ? 0.25 * expm1(v) : v; }
static double a_gelu(double v, int64_t c) { return 0.5 * v * (1 + erf(v / sqrt(2))); }
static double a_prelu(double v, int64_t c) { return v < 0 ? v * (double)(0.05f * (float)c - 0.75f) : v; }
static double a_max(double v, int64_t c) { return fmax(v, (double)(0.05f * (float)c - 0.75f)); }
static double a_pow(double v, int64_t c) { return v * v; }

/* conv -> activation -> conv on the blocked layout against a naive double
 * reference and the plain (no_layout) compile of the same model. */
static void test_activation_chain_numeric(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const struct {
        const char *op;
        double (*ref)(double, int64_t);
    } acts[] = {{"LeakyRelu", a_leaky}, {"HardSigmoid", a_hsig}, {"Mish", a_mish},
                {"Softsign", a_softsign}, {"Elu", a_elu}, {"Gelu", a_gelu},
                {"PRelu", a_prelu}, {"Max", a_max}, {"Pow", a_pow}};
    const int64_t b = host_block(), C = 2 * b, H = 6, W = 5;
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++) {
        const lay_step chain[] = {L_CONV(C, 3, 1, 1, 1), L_ACT(acts[i].op, acts[i].ref),
                                  L_CONV(C, 1, 1, 1, 0)};
        lay_run run;
        L_CHAIN(&run, acts[i].op, 18, C, H, W, &rng, chain);
        if (count_op(run.g, "loom", "FromNCHWc") != 1)
            fail_msg("%s: %d FromNCHWc (want 1)", run.name, count_op(run.g, "loom", "FromNCHWc"));
        lay_chain_check(&run);
        lay_end(&run);
    }
}

static void test_residual_block(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t C = 32, H = 8, W = 8;
    const lay_step chain[] = {L_CONV(C, 1, 1, 1, 0), L_RELU,  L_CONV(C, 3, 1, 1, 1),
                              L_ADD_X,               L_SCALE, L_RELU};
    lay_run run;
    L_CHAIN(&run, "residual block", 13, C, H, W, &rng, chain);
    const gr_graph *g = run.g;
    assert_int_equal(count_op(g, "loom", "ConvNCHWc"), 2);
    /* x is blocked once, for the first Conv and the residual Add alike. */
    lay_ops(&run, g, "loom.ToNCHWc=1 loom.FromNCHWc=1");
    int add = find_op(g, "", "Add", 0), mul = find_op(g, "", "Mul", 0);
    assert_true(add >= 0 && mul >= 0);
    assert_int_equal(out_type(g, add)->ndim, 5);
    assert_int_equal(out_type(g, mul)->ndim, 5);
    /* The scale re-laid out as [1, C/b, 1, 1, b]. */
    const gr_value *sv = &g->values[g->nodes[mul].inputs[1]];
    assert_int_equal(sv->type.ndim, 5);
    assert_int_equal(sv->type.shape[4], host_block());
    lay_chain_check(&run);
    lay_end(&run);
}

static void test_depthwise_and_middle_output(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t C = 32, H = 11, W = 9;
    /* "ac" is read further on and is a graph output too. */
    const lay_step chain[] = {L_CONV(C, 1, 1, 1, 0), {.op = 'k', .out = "ac"},
                              L_CONV(C, 3, C, 2, 1)};
    lay_run run;
    L_CHAIN(&run, "depthwise and middle output", 13, C, H, W, &rng, chain);
    const gr_graph *g = run.g;
    lay_ops(&run, g, "Conv=0 loom.ConvNCHWc=2 loom.ToNCHWc=1 loom.FromNCHWc=2");
    assert_string_equal(g->values[g->outputs[0]].name, "ac");
    assert_string_equal(g->values[g->outputs[1]].name, "y");
    lay_chain_check(&run);
    lay_end(&run);
}

/* With 16 lanes or more, 24 channels are blocked by 8: a block of 24 ->
 * 32 -> 24 channels with its residual Add stays blocked, the convolutions
 * changing block size on the way. */
static void test_half_blocks(void **state)
{
    (void)state;
    int64_t b = host_block();
    if (b < 16) skip();
    uint64_t rng = tu_seed();
    const int64_t C = b / 2 * 3, K = 2 * b, H = 7, W = 9;
    const lay_step chain[] = {L_CONV(K, 1, 1, 1, 0), L_RELU, L_CONV(C, 3, 1, 1, 1), L_ADD_X};
    lay_run run;
    L_CHAIN(&run, "half blocks", 13, C, H, W, &rng, chain);
    const gr_graph *g = run.g;
    lay_ops(&run, g, "Conv=0 loom.ToNCHWc=1 loom.FromNCHWc=1");
    int to = find_op(g, "loom", "ToNCHWc", 0), add = find_op(g, "", "Add", 0);
    assert_int_equal(out_type(g, to)->shape[4], b / 2);
    assert_int_equal(out_type(g, find_op(g, "", "Relu", 0))->shape[4], b);
    assert_int_equal(out_type(g, add)->shape[4], b / 2);
    lay_chain_check(&run);
    lay_end(&run);
}

/* Fewer channels than a block that no block divides (12 with 16 lanes, 6
 * with 8) stay plain: more than a block would be blocked and padded. */
static void test_channels_not_blocked(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t C = 3 * host_block() / 4, H = 6, W = 6;
    const lay_step chain[] = {L_CONV(C, 3, 1, 1, 1), L_RELU};
    lay_run run;
    L_CHAIN(&run, "channels not blocked", 13, C, H, W, &rng, chain);
    const gr_graph *g = run.g;
    assert_int_equal(count_op(g, "", "Conv"), 1);
    assert_int_equal(count_op(g, "loom", "ConvNCHWc") + count_op(g, "loom", "ToNCHWc") +
                         count_op(g, "loom", "FromNCHWc"),
                     0);
    lay_chain_check(&run);
    lay_end(&run);
}

/* Channels no block divides (20 and 30 on 8 or 16 lanes, more than a
 * block) run blocked with the last block padded: three convolutions
 * (dense, depthwise, 1x1) and their activations on padded twins, one
 * FromNCHWc with the real channel count for the output; the values those
 * of the reference and of the plain graph. */
static void test_padded_channels(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t C = 20, H = 7, W = 9, b = host_block();
    if (C % b == 0 || C <= b) skip(); /* a 4-lane host divides; 32 lanes: fewer than a block */
    const lay_step chain[] = {L_CONV(C, 3, 1, 1, 1), L_RELU, L_CONV(C, 3, C, 1, 1), {.op = 'k'},
                              L_CONV(30, 1, 1, 1, 0), L_RELU};
    lay_run run;
    L_CHAIN(&run, "padded channels", 13, C, H, W, &rng, chain);
    const gr_graph *g = run.g;
    lay_ops(&run, g, "Conv=0 loom.ConvNCHWc=3 loom.ToNCHWc=1 loom.FromNCHWc=1");
    int from = find_op(g, "loom", "FromNCHWc", 0);
    const gr_attr *ch = gr_node_attr(&g->nodes[from], "channels");
    assert_non_null(ch);
    assert_int_equal(ch->i, 30);
    const gr_type *t = out_type(g, find_op(g, "loom", "ConvNCHWc", 0));
    assert_int_equal(t->shape[1] * t->shape[4], (C + t->shape[4] - 1) / t->shape[4] * t->shape[4]);
    lay_chain_check(&run);
    lay_end(&run);
}

static double a_sqrt(double v, int64_t c) { return sqrt(v); }

/* Padding lanes go only through operators that keep them finite: Sqrt
 * (NaN of a negative padding lane, times the next convolution's zero
 * weight, would be NaN) reads the padded value plain, and the next
 * convolution blocks it again. */
static void test_padded_channels_unsafe_op(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t C = 20, H = 5, W = 6, b = host_block();
    if (C % b == 0 || C <= b) skip();
    const lay_step chain[] = {L_CONV(C, 3, 1, 1, 1), L_RELU, L_ACT("Sqrt", a_sqrt),
                              L_CONV(C, 1, 1, 1, 0)};
    lay_run run;
    L_CHAIN(&run, "padded channels, Sqrt", 13, C, H, W, &rng, chain);
    const gr_graph *g = run.g;
    lay_ops(&run, g, "Conv=0 loom.ConvNCHWc=2 loom.ToNCHWc=2 loom.FromNCHWc=2 Sqrt=1");
    int sq = find_op(g, "", "Sqrt", 0);
    assert_int_equal(g->values[g->nodes[sq].inputs[0]].type.ndim, 4);
    lay_chain_check(&run);
    lay_end(&run);
}

/* ---------------- pools and grouped convolutions on NCHW[b]c ---------------- */

/* Each pool (every attribute the plain lowering takes) after a blocked
 * convolution runs on the blocked twin: no transform between the two, one
 * FromNCHWc after the pool for the graph output; the values those of
 * ONNX's pool in double and of the plain graph. Odd spatial sizes; whole
 * and half blocks. */
static void test_pools_blocked(void **state)
{
    (void)state;
    static const pool_case cases[] = {
        {"MaxPool", {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, NULL, -1, -1},
        {"MaxPool", {3, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, NULL, 1, -1},
        {"MaxPool", {2, 2}, {1, 2}, {2, 2}, {1, 0, 0, 1}, NULL, 0, -1},
        {"MaxPool", {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, "SAME_UPPER", -1, -1},
        {"MaxPool", {2, 3}, {3, 2}, {1, 1}, {1, 1, 1, 1}, NULL, 1, -1},
        {"AveragePool", {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, NULL, -1, 0},
        {"AveragePool", {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, NULL, -1, 1},
        {"AveragePool", {3, 2}, {2, 2}, {1, 1}, {1, 0, 1, 1}, NULL, 1, 1},
        {"AveragePool", {3, 2}, {2, 2}, {1, 1}, {1, 0, 1, 1}, NULL, 1, 0},
        {"AveragePool", {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, "SAME_LOWER", -1, 1},
        {"AveragePool", {2, 3}, {1, 2}, {1, 1}, {0, 0, 0, 0}, "VALID", 0, 0},
        {"AveragePool", {2, 2}, {1, 1}, {2, 1}, {1, 1, 1, 1}, NULL, 0, 1},
        {"GlobalAveragePool", {0}, {0}, {1, 1}, {0}, NULL, -1, -1},
        {"GlobalMaxPool", {0}, {0}, {1, 1}, {0}, NULL, -1, -1},
    };
    uint64_t rng = tu_seed();
    const int64_t b = host_block(), H = 9, W = 11;
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        const pool_case *pc = &cases[t];
        /* Every other case on 1.5 blocks: blocked by half the lanes where
         * there are 16 or more. */
        bool half = t % 2 == 1 && b >= 16;
        const int64_t C = half ? b / 2 * 3 : 2 * b;
        char name[64];
        snprintf(name, sizeof name, "case %zu (%s)", t, pc->op);
        const lay_step chain[] = {L_CONV(C, 1, 1, 1, 0), L_POOL(pc)};
        lay_run run;
        L_CHAIN(&run, name, 13, C, H, W, &rng, chain);
        const gr_graph *g = run.g;
        char op[64];
        pool_op_name(pc, op, sizeof op);
        int p = find_op(g, "loom", op, 0), from = find_op(g, "loom", "FromNCHWc", 0);
        if (p < 0) fail_msg("%s: no %s", name, op);
        LAY_EQ(&run, count_op(g, "", pc->op), 0);
        lay_ops(&run, g, "loom.ToNCHWc=1 loom.FromNCHWc=1");
        LAY_EQ(&run, from, p + 1);
        LAY_EQ(&run, g->nodes[from].inputs[0], g->nodes[p].outputs[0]);
        LAY_EQ(&run, out_type(g, p)->ndim, 5);
        LAY_EQ(&run, out_type(g, p)->shape[4], half ? b / 2 : b);
        LAY_EQ(&run, out_type(g, from)->shape[2], run.oh);
        LAY_EQ(&run, out_type(g, from)->shape[3], run.ow);
        lay_chain_check(&run);
        lay_end(&run);
    }
}

/* conv -> relu -> maxpool -> conv (ResNet's stem, blocked): nothing
 * between the convolutions leaves the blocked layout. */
static void test_conv_maxpool_conv(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t C = 2 * host_block(), H = 11, W = 9;
    const pool_case mp = {"MaxPool", {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, NULL, -1, -1};
    const lay_step chain[] = {L_CONV(C, 3, 1, 1, 1), L_RELU, L_POOL(&mp),
                              L_CONV(2 * C, 1, 1, 1, 0)};
    lay_run run;
    L_CHAIN(&run, "conv maxpool conv", 13, C, H, W, &rng, chain);
    const gr_graph *g = run.g;
    /* To, ConvNCHWc, Relu, MaxPoolNCHWc, ConvNCHWc, From. */
    assert_int_equal(g->n_nodes, 6);
    assert_int_equal(find_op(g, "loom", "ToNCHWc", 0), 0);
    assert_int_equal(find_op(g, "loom", "MaxPoolNCHWc", 0), 3);
    assert_int_equal(find_op(g, "loom", "ConvNCHWc", 2), 4);
    assert_int_equal(find_op(g, "loom", "FromNCHWc", 0), 5);
    assert_int_equal(count_op(g, "loom", "ToNCHWc") + count_op(g, "loom", "FromNCHWc"), 2);
    /* Before: the pool read plain NCHW, a FromNCHWc and a ToNCHWc around it. */
    assert_int_equal(count_op(run.m2->graph, "", "MaxPool"), 1);
    lay_chain_check(&run);
    lay_end(&run);
}

/* conv -> relu -> GlobalAveragePool -> Flatten -> Gemm (a classifier
 * head): the pool blocked, one FromNCHWc on its [N, C, 1, 1] output. */
static void test_global_pool_classifier(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t C = 2 * host_block(), H = 7, W = 5, M = 10;
    conv_w c1 = rand_conv(&rng, C, C, 3, 3);
    float *gw = malloc(sizeof(float) * (size_t)(C * M)), gb[10];
    assert_non_null(gw);
    for (int64_t i = 0; i < C * M; i++) gw[i] = (float)tu_rand_uniform(&rng, -0.5, 0.5);
    for (int64_t i = 0; i < M; i++) gb[i] = (float)tu_rand_uniform(&rng, -0.5, 0.5);
    lay_run run;
    ow_model *w = lay_begin(&run, "global pool classifier", 13, C, H, W);
    ow_init(w, "gw", GR_FLOAT, 2, (int64_t[]){C, M}, gw, sizeof(float) * (size_t)(C * M));
    ow_init(w, "gb", GR_FLOAT, 1, (int64_t[]){M}, gb, sizeof gb);
    add_conv(w, "c1", &c1, "x", "h", 1, 1, 1);
    ow_node_add(w, "", "Relu", "h", "hr");
    ow_node_add(w, "", "GlobalAveragePool", "hr", "p");
    ow_node_add(w, "", "Flatten", "p", "f");
    ow_node_add(w, "", "Gemm", "f,gw,gb", "y");
    ow_output(w, "y");
    lay_compile(&run, &rng);
    const gr_graph *g = run.g;
    lay_ops(&run, g, "loom.ToNCHWc=1 loom.FromNCHWc=1 GlobalAveragePool=0");
    int p = find_op(g, "loom", "GlobalAveragePoolNCHWc", 0);
    int from = find_op(g, "loom", "FromNCHWc", 0);
    assert_true(p >= 0);
    assert_int_equal(from, p + 1);
    const gr_type *ft = out_type(g, from);
    assert_int_equal(ft->ndim, 4);
    assert_int_equal(ft->shape[1], C);
    assert_int_equal(ft->shape[2], 1);
    assert_int_equal(ft->shape[3], 1);
    int64_t oh, ow;
    double *h = ref_conv(run.xd, C, H, W, &c1, 1, 1, 1, &oh, &ow);
    relu(h, C * oh * ow);
    double ref[10];
    for (int64_t m = 0; m < M; m++) {
        ref[m] = gb[m];
        for (int64_t c = 0; c < C; c++) {
            double mean = 0;
            for (int64_t i = 0; i < oh * ow; i++) mean += h[c * oh * ow + i];
            ref[m] += mean / (double)(oh * ow) * (double)gw[c * M + m];
        }
    }
    lay_check(&run, 0, ref, M);
    free(h), free(gw);
    lay_end(&run);
    free_conv(&c1);
}

/* A squeeze-and-excitation block (EfficientNet, MobileNetV3): the feature
 * map times a per-channel scale computed from it, [1,C,H,W] * [1,C,1,1].
 * The Mul broadcasts the blocked twins as they are: no transform around
 * it (there were two FromNCHWc and a ToNCHWc). Whole blocks and padded
 * ones (20 channels). */
/* A BatchNormalization that follows no Conv (DenseNet's and pre-activation
 * ResNets' BN-ReLU before a convolution) runs on the blocked twins as the
 * Mul and Add it becomes (graph/pass_fold_batchnorm.c): one transform in,
 * one out, no BatchNormalization left. */
static void test_batchnorm_blocked(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t C = 2 * host_block(), H = 6, W = 7;
    const lay_step chain[] = {L_CONV(C, 3, 1, 1, 1), L_RELU, L_BN, L_RELU, L_CONV(C, 1, 1, 1, 0)};
    lay_run run;
    L_CHAIN(&run, "bn-relu before a conv", 13, C, H, W, &rng, chain);
    const gr_graph *g = run.g;
    lay_ops(&run, g, "BatchNormalization=0 Conv=0 loom.ConvNCHWc=2 loom.ToNCHWc=1 loom.FromNCHWc=1");
    assert_int_equal(out_type(g, find_op(g, "", "Mul", 0))->ndim, 5);
    lay_chain_check(&run);
    lay_end(&run);
}

static void test_squeeze_excitation(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t b = host_block(), H = 5, W = 7;
    const int64_t sizes[2] = {2 * b, 20};
    for (int t = 0; t < 2; t++) {
        const int64_t C = sizes[t];
        if (t == 1 && (C % b == 0 || C <= b)) continue;
        conv_w c1 = rand_conv(&rng, C, C, 3, 3), c2 = rand_conv(&rng, C, C, 1, 1);
        conv_w c3 = rand_conv(&rng, C, C, 1, 1);
        lay_run run;
        ow_model *w = lay_begin(&run, "squeeze and excitation", 13, C, H, W);
        add_conv(w, "c1", &c1, "x", "h", 1, 1, 1);
        ow_node_add(w, "", "GlobalAveragePool", "h", "p");
        add_conv(w, "c2", &c2, "p", "q", 1, 1, 0);
        ow_node_add(w, "", "Sigmoid", "q", "s");
        ow_node_add(w, "", "Mul", "h,s", "m");
        add_conv(w, "c3", &c3, "m", "y", 1, 1, 0);
        ow_output(w, "y");
        lay_compile(&run, &rng);
        const gr_graph *g = run.g;
        lay_ops(&run, g, "Conv=0 loom.ConvNCHWc=3 loom.ToNCHWc=1 loom.FromNCHWc=1");
        int mul = find_op(g, "", "Mul", 0);
        assert_true(mul >= 0);
        assert_int_equal(out_type(g, mul)->ndim, 5);
        assert_int_equal(g->values[g->nodes[mul].inputs[1]].type.ndim, 5);
        int64_t oh, ow, one;
        double *h = ref_conv(run.xd, C, H, W, &c1, 1, 1, 1, &oh, &ow);
        double *pm = calloc((size_t)C, sizeof *pm);
        assert_non_null(pm);
        for (int64_t c = 0; c < C; c++) {
            for (int64_t i = 0; i < oh * ow; i++) pm[c] += h[c * oh * ow + i];
            pm[c] /= (double)(oh * ow);
        }
        double *q = ref_conv(pm, C, 1, 1, &c2, 1, 1, 0, &one, &one);
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < oh * ow; i++) h[c * oh * ow + i] *= 1.0 / (1.0 + exp(-q[c]));
        double *y = ref_conv(h, C, oh, ow, &c3, 1, 1, 0, &oh, &ow);
        lay_check(&run, 0, y, C * oh * ow);
        free(h), free(pm), free(q), free(y);
        lay_end(&run);
        free_conv(&c1), free_conv(&c2), free_conv(&c3);
    }
}

/* conv -> Split into channel parts (sizes s0, s1) -> conv of the second
 * part -> Concat(parts, that conv) -> 1x1 conv: YOLOv8's C2f block. */
static void split_concat_case(int64_t opset, int64_t s0, int64_t s1, bool blocked)
{
    uint64_t rng = tu_seed();
    const int64_t C = s0 + s1, H = 6, W = 7;
    conv_w c1 = rand_conv(&rng, C, C, 3, 3), c2 = rand_conv(&rng, s1, s1, 3, 3);
    conv_w c3 = rand_conv(&rng, C, C + s1, 1, 1);
    lay_run run;
    ow_model *w = lay_begin(&run, "split and concat", opset, C, H, W);
    add_conv(w, "c1", &c1, "x", "h", 1, 1, 1);
    int64_t sizes[2] = {s0, s1};
    ow_node *sp;
    if (opset >= 13) {
        ow_init(w, "sizes", GR_INT64, 1, (int64_t[]){2}, sizes, sizeof sizes);
        sp = ow_node_add(w, "", "Split", "h,sizes", "p0,p1");
    } else {
        sp = ow_node_add(w, "", "Split", "h", "p0,p1");
        ow_attr_ints(sp, "split", 2, sizes);
    }
    ow_attr_int(sp, "axis", 1);
    add_conv(w, "c2", &c2, "p1", "t", 1, 1, 1);
    ow_attr_int(ow_node_add(w, "", "Concat", "p0,p1,t", "cat"), "axis", -3);
    add_conv(w, "c3", &c3, "cat", "y", 1, 1, 0);
    ow_output(w, "y");
    lay_compile(&run, &rng);
    const gr_graph *g = run.g;
    int split = find_op(g, "", "Split", 0), cat = find_op(g, "", "Concat", 0);
    assert_true(split >= 0 && cat >= 0);
    if (blocked) {
        lay_ops(&run, g, "Conv=0 loom.ConvNCHWc=3 loom.ToNCHWc=1 loom.FromNCHWc=1");
        assert_int_equal(out_type(g, split)->ndim, 5);
        assert_int_equal(out_type(g, cat)->ndim, 5);
        assert_int_equal(out_type(g, cat)->shape[1] * out_type(g, cat)->shape[4], C + s1);
    } else {
        assert_int_equal(out_type(g, split)->ndim, 4);
    }
    int64_t oh, ow;
    double *h = ref_conv(run.xd, C, H, W, &c1, 1, 1, 1, &oh, &ow);
    double *t = ref_conv(h + s0 * oh * ow, s1, oh, ow, &c2, 1, 1, 1, &oh, &ow);
    double *cat_d = malloc(sizeof(double) * (size_t)((C + s1) * oh * ow));
    assert_non_null(cat_d);
    memcpy(cat_d, h, sizeof(double) * (size_t)(C * oh * ow));
    memcpy(cat_d + C * oh * ow, t, sizeof(double) * (size_t)(s1 * oh * ow));
    double *y = ref_conv(cat_d, C + s1, oh, ow, &c3, 1, 1, 0, &oh, &ow);
    lay_check(&run, 0, y, C * oh * ow);
    free(h), free(t), free(cat_d), free(y);
    lay_end(&run);
    free_conv(&c1), free_conv(&c2), free_conv(&c3);
}

/* Split and Concat along channels run on the blocked twins where every
 * part is whole blocks of one size (Split's sizes an input from opset 13,
 * an attribute before; Concat's axis -3); parts of another block size
 * (8 channels, blocked by 8, beside blocks of 16) stay plain. */
static void test_split_concat(void **state)
{
    (void)state;
    int64_t b = host_block();
    split_concat_case(13, b, b, true);
    split_concat_case(11, b, 2 * b, true);
    if (b >= 16) split_concat_case(13, b / 2, b + b / 2, false);
}

/* Resize in half_pixel coordinates along one dimension of extent n to m
 * (scale m/n), nearest (round_prefer_floor) or linear: the source index
 * and weight of the upper tap. */
static void half_pixel_tap(int64_t i, int64_t n, int64_t m, bool linear, int64_t *i0, double *f)
{
    double x = ((double)i + 0.5) * (double)n / (double)m - 0.5;
    if (!linear) {
        double r = x - floor(x) == 0.5 ? floor(x) : round(x);
        *i0 = r < 0 ? 0 : r > (double)(n - 1) ? n - 1 : (int64_t)r;
        *f = 0;
        return;
    }
    if (x < 0) x = 0;
    if (x > (double)(n - 1)) x = (double)(n - 1);
    *i0 = (int64_t)floor(x);
    *f = x - (double)*i0;
}

/* conv -> Resize -> 1x1 conv: the Resize runs on the blocked twin (an
 * FPN's upsampling), nearest with scales (opset 13) and linear with sizes
 * (opset 11, its ROI and scales given empty). */
static void test_resize_blocked(void **state)
{
    (void)state;
    const int64_t b = host_block(), C = 2 * b, H = 5, W = 6;
    for (int t = 0; t < 2; t++) {
        uint64_t rng = tu_seed();
        bool linear = t == 1;
        int64_t OH = linear ? 2 * H - 1 : 2 * H, OW = linear ? 2 * W + 1 : 2 * W;
        conv_w c1 = rand_conv(&rng, C, C, 3, 3), c2 = rand_conv(&rng, C, C, 1, 1);
        lay_run run;
        ow_model *w = lay_begin(&run, linear ? "resize linear" : "resize nearest", linear ? 11 : 13,
                                C, H, W);
        add_conv(w, "c1", &c1, "x", "h", 1, 1, 1);
        if (linear) {
            int64_t sizes[4] = {1, C, OH, OW};
            ow_init(w, "roi", GR_FLOAT, 1, (int64_t[]){0}, NULL, 0);
            ow_init(w, "scales", GR_FLOAT, 1, (int64_t[]){0}, NULL, 0);
            ow_init(w, "sizes", GR_INT64, 1, (int64_t[]){4}, sizes, sizeof sizes);
            ow_node *r = ow_node_add(w, "", "Resize", "h,roi,scales,sizes", "u");
            ow_attr_str(r, "mode", "linear");
            ow_attr_str(r, "coordinate_transformation_mode", "half_pixel");
        } else {
            float scales[4] = {1, 1, 2, 2};
            ow_init(w, "scales", GR_FLOAT, 1, (int64_t[]){4}, scales, sizeof scales);
            ow_attr_str(ow_node_add(w, "", "Resize", "h,,scales", "u"), "mode", "nearest");
        }
        add_conv(w, "c2", &c2, "u", "y", 1, 1, 0);
        ow_output(w, "y");
        lay_compile(&run, &rng);
        const gr_graph *g = run.g;
        lay_ops(&run, g, "Conv=0 loom.ConvNCHWc=2 loom.ToNCHWc=1 loom.FromNCHWc=1");
        assert_int_equal(out_type(g, find_op(g, "", "Resize", 0))->ndim, 5);
        int64_t oh, ow;
        double *h = ref_conv(run.xd, C, H, W, &c1, 1, 1, 1, &oh, &ow);
        double *u = malloc(sizeof(double) * (size_t)(C * OH * OW));
        assert_non_null(u);
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < OH; i++)
                for (int64_t j = 0; j < OW; j++) {
                    int64_t y0, x0;
                    double fy, fx;
                    half_pixel_tap(i, H, OH, linear, &y0, &fy);
                    half_pixel_tap(j, W, OW, linear, &x0, &fx);
                    int64_t y1 = y0 + 1 < H ? y0 + 1 : y0, x1 = x0 + 1 < W ? x0 + 1 : x0;
                    const double *p = h + c * H * W;
                    u[(c * OH + i) * OW + j] =
                        (1 - fy) * ((1 - fx) * p[y0 * W + x0] + fx * p[y0 * W + x1]) +
                        fy * ((1 - fx) * p[y1 * W + x0] + fx * p[y1 * W + x1]);
                }
        double *y = ref_conv(u, C, OH, OW, &c2, 1, 1, 0, &oh, &ow);
        lay_check(&run, 0, y, C * oh * ow);
        free(h), free(u), free(y);
        lay_end(&run);
        free_conv(&c1), free_conv(&c2);
    }
}

/* Pools that stay plain: of a graph input (blocking it first would copy
 * the larger tensor), of channels no multiple of the block, and a MaxPool
 * whose Indices are asked for. */
static void test_pools_left_plain(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t b = host_block(), H = 6, W = 7;
    const pool_case mp = {"MaxPool", {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, NULL, -1, -1};
    /* A pool of a graph input and one of 3 channels: no layout operator. */
    for (int t = 0; t < 2; t++) {
        int64_t C = t == 0 ? 2 * b : 3;
        ow_model *w = ow_new(13);
        ow_input(w, "x", GR_FLOAT, 4, (int64_t[]){1, C, H, W});
        add_pool(w, &mp, "x", "y");
        ow_output(w, "y");
        gr_model *m;
        gr_exec *e = ow_compile_ok(w, &m);
        assert_int_equal(count_op(m->graph, "", "MaxPool"), 1);
        assert_int_equal(m->graph->n_nodes, 1);
        gr_exec_free(e);
        gr_model_free(m);
        ow_free(w);
    }
    /* Indices asked for: plain NCHW positions, so the pool reads plain. */
    const int64_t C = 2 * b;
    conv_w c1 = rand_conv(&rng, C, C, 1, 1);
    lay_run run;
    ow_model *w = lay_begin(&run, "MaxPool with Indices", 13, C, H, W);
    add_conv(w, "c1", &c1, "x", "a", 1, 1, 0);
    ow_node *n = ow_node_add(w, "", "MaxPool", "a", "y,idx");
    ow_attr_ints(n, "kernel_shape", 2, (int64_t[]){2, 2});
    ow_output(w, "y");
    ow_output(w, "idx");
    lay_compile(&run, &rng);
    lay_ops(&run, run.g, "MaxPool=1 loom.MaxPoolNCHWc=0");
    assert_int_equal(find_op(run.g, "loom", "FromNCHWc", 0) + 1,
                     find_op(run.g, "", "MaxPool", 0));
    lay_end(&run);
    free_conv(&c1);
}

/* A network's stem (3 channels, no block) reads its image as it is and
 * writes blocked, so its pool runs blocked too: image -> conv -> relu ->
 * maxpool -> conv has no transform but the FromNCHWc of the output. */
static void test_stem_plain_input(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t C = 3, K = 2 * host_block(), H = 13, W = 10;
    const pool_case mp = {"MaxPool", {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, NULL, -1, -1};
    const lay_step chain[] = {L_CONV(K, 3, 1, 2, 1), L_RELU, L_POOL(&mp), L_CONV(K, 1, 1, 1, 0)};
    lay_run run;
    L_CHAIN(&run, "stem plain input", 13, C, H, W, &rng, chain);
    const gr_graph *g = run.g;
    /* ConvNCHWc (reading x), Relu, MaxPoolNCHWc, ConvNCHWc, From. */
    assert_int_equal(g->n_nodes, 5);
    lay_ops(&run, g, "loom.ToNCHWc=0 loom.FromNCHWc=1");
    assert_int_equal(find_op(g, "loom", "ConvNCHWc", 0), 0);
    assert_int_equal(find_op(g, "loom", "MaxPoolNCHWc", 0), 2);
    assert_string_equal(g->values[g->nodes[0].inputs[0]].name, "x");
    const gr_value *wv = &g->values[g->nodes[0].inputs[1]];
    assert_int_equal(wv->type.ndim, 6);
    assert_int_equal(wv->type.shape[1], C);
    assert_int_equal(wv->type.shape[4], 1);
    lay_chain_check(&run);
    lay_end(&run);
}

/* Grouped convolutions whose groups are whole blocks run blocked (two
 * and four groups, strided, padded); one with half a block a group stays
 * a plain Conv between a FromNCHWc and a ToNCHWc. */
static void test_grouped_conv(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    const int64_t b = host_block(), C = 4 * b, H = 9, W = 7;
    const int64_t groups[] = {2, 4, 8};
    for (int t = 0; t < 3; t++) {
        int64_t group = groups[t];
        bool blocked = (C / group) % b == 0;
        char name[32];
        snprintf(name, sizeof name, "group %ld", (long)group);
        const lay_step chain[] = {L_CONV(C, 1, 1, 1, 0), L_RELU, L_CONV(C, 3, group, 2, 1)};
        lay_run run;
        L_CHAIN(&run, name, 13, C, H, W, &rng, chain);
        const gr_graph *g = run.g;
        LAY_EQ(&run, count_op(g, "loom", "ConvNCHWc"), blocked ? 2 : 1);
        LAY_EQ(&run, count_op(g, "", "Conv"), blocked ? 0 : 1);
        LAY_EQ(&run, count_op(g, "loom", "FromNCHWc"), 1);
        if (blocked) {
            int gcn = find_op(g, "loom", "ConvNCHWc", 2);
            const gr_value *wv = &g->values[g->nodes[gcn].inputs[1]];
            LAY_EQ(&run, wv->type.ndim, 6);
            LAY_EQ(&run, wv->type.shape[1], C / group / b);
        } else {
            LAY_EQ(&run, find_op(g, "loom", "FromNCHWc", 0) + 1, find_op(g, "", "Conv", 0));
        }
        lay_chain_check(&run);
        lay_end(&run);
    }
}

static void test_dump_graph(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    conv_w c1 = rand_conv(&rng, 32, 32, 1, 1);
    ow_model *w = ow_new(13);
    ow_input(w, "x", GR_FLOAT, 4, (int64_t[]){1, 32, 4, 4});
    add_conv(w, "c1", &c1, "x", "y", 1, 1, 0);
    ow_output(w, "y");
    char dir[] = "/tmp/loom_layout_dump_XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("LOOM_DUMP_GRAPH", dir, 1);
    gr_model *m;
    char *err = NULL;
    gr_exec *e = ow_compile(w, &m, &err);
    /* unset before any check can end the test: later tests dump nothing */
    unsetenv("LOOM_DUMP_GRAPH");
    if (!e) fail_msg("%s", err);
    char path[256];
    snprintf(path, sizeof path, "%s/%02d-alter_layout.txt", dir, gr_pass_count());
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    assert_non_null(strstr(text, "loom.ConvNCHWc"));
    assert_non_null(strstr(text, "loom.ToNCHWc"));
    assert_int_equal(tu_rmtree(dir), 0);
    gr_exec_free(e);
    gr_model_free(m);
    ow_free(w);
    free_conv(&c1);
}

/* The default schedule of a blocked convolution key (block = the host's
 * lanes): lowered text, and how it was chosen. */
static const char *blocked_schedule(te_ctx *ctx, const char *key, const char **how)
{
    tune_workload w;
    if (tune_build_workload(ctx, key, &w) != 0) fail_msg("%s", te_ctx_errmsg(ctx));
    sch_schedule *s = tune_default_schedule(ctx, &w, "llvm", how);
    assert_non_null(s);
    tir_func *f = sch_lower(s, w.nargs, w.args, "f");
    assert_non_null(f);
    return tir_func_str(ctx, f);
}

static void expect_loop(const char *text, const char *loop)
{
    if (!strstr(text, loop)) fail_msg("no loop '%s' in:\n%s", loop, text);
}

/* The register tile of a blocked convolution, whether a heuristic
 * program (an epilogue: Relu) or the rules (a bias alone) fill it: with
 * 16 lanes 8 output columns (7 of a 14-wide image) by 2 channel blocks by
 * one vector; with fewer (16 vector registers) 2 columns by 4 blocks. */
static void test_blocked_conv_schedule(void **state)
{
    (void)state;
    int v = tune_host_vector_lanes();
    int kb = v >= 16 ? 2 : 4, ow56 = v >= 16 ? 8 : 2, ow14 = v >= 16 ? 7 : 2;
    char key[512], loop[64];
    te_ctx *ctx = te_ctx_new();
    const char *how, *text;
    snprintf(key, sizeof key,
             "onnx(opset=13;x v0:float[1,4,56,56,%d];w v1:float[4,4,3,3,%d,%d];w v2:float[4,%d];"
             "n v3=loom:ConvNCHWc(v0,v1,v2){pads=I[1,1,1,1]};n v4=Relu(v3);out v4)", v, v, v, v);
    text = blocked_schedule(ctx, key, &how);
    assert_non_null(strstr(how, "heuristic program"));
    snprintf(loop, sizeof loop, "for (c1.c.inner, 0, %d)", kb);
    expect_loop(text, loop);
    snprintf(loop, sizeof loop, "for (c3.c.inner, 0, %d)", ow56);
    expect_loop(text, loop);
    snprintf(loop, sizeof loop, "for (c4.c.inner, 0, %d) vectorized", v);
    expect_loop(text, loop);
    snprintf(key, sizeof key,
             "onnx(opset=13;x v0:float[1,4,28,28,%d];w v1:float[4,4,1,1,%d,%d];w v2:float[4,%d];"
             "n v3=loom:ConvNCHWc(v0,v1,v2){strides=I[2,2]};out v3)", v, v, v, v);
    text = blocked_schedule(ctx, key, &how);
    assert_non_null(strstr(how, "rules"));
    snprintf(loop, sizeof loop, "for (c1.inner, 0, %d)", kb);
    expect_loop(text, loop);
    snprintf(loop, sizeof loop, "for (c3.inner, 0, %d)", ow14);
    expect_loop(text, loop);
    snprintf(loop, sizeof loop, "for (c4.inner, 0, %d) vectorized", v);
    expect_loop(text, loop);
    te_ctx_free(ctx);
}

static int count_substr(const char *text, const char *sub)
{
    int n = 0;
    for (const char *p = strstr(text, sub); p; p = strstr(p + 1, sub)) n++;
    return n;
}

/* A blocked convolution's bias, residual Add and Relu computed in its
 * register tile's copy-out (tune__sketch_fuse_epilogue,
 * autotune/rules/rule_epilogue.c): one parallel loop nest writing the
 * output, no second pass over a whole-output buffer of the convolution. */
static void test_blocked_conv_epilogue_in_tile(void **state)
{
    (void)state;
    int v = tune_host_vector_lanes();
    char key[640];
    te_ctx *ctx = te_ctx_new();
    const char *how, *text;
    snprintf(key, sizeof key,
             "onnx(opset=13;x v0:float[1,4,14,14,%d];w v1:float[4,4,3,3,%d,%d];w v2:float[4,%d];"
             "x v3:float[1,4,14,14,%d];n v4=loom:ConvNCHWc(v0,v1,v2){pads=I[1,1,1,1]};"
             "n v5=Add(v4,v3);n v6=Relu(v5);out v6)", v, v, v, v, v);
    text = blocked_schedule(ctx, key, &how);
    if (!strstr(how, "heuristic program") || !strstr(how, "elementwise tail Relu2"))
        fail_msg("schedule: %s", how);
    /* The padding and the packed weights at the root, then one nest. */
    int par = count_substr(text, ") parallel");
    if (par != 3) fail_msg("%d parallel loops (want 3: pad, weights, tile) in:\n%s", par, text);
    /* No buffer of the whole convolution output (4 * 14 * 14 * v). */
    char whole[64];
    snprintf(whole, sizeof whole, "* %d]", 4 * 14 * 14 * v);
    if (count_substr(text, whole) > 0) fail_msg("a whole-output buffer in:\n%s", text);
    te_ctx_free(ctx);
}

/* The same for a dense layer's bias and gelu (BERT's intermediate
 * layer), Erf annotated on its own in the sketch but inlined here: one
 * nest after the packed weights, no whole-output buffer of the MatMul. */
static void test_matmul_gelu_in_tile(void **state)
{
    (void)state;
    te_ctx *ctx = te_ctx_new();
    const char *how;
    const char *key =
        "onnx(opset=17;x v0:float[1,24,64];w v1:float[64,96];w v2:float[96];w v3:float[1];"
        "w v4:float[1];w v5:float[1];n v6=MatMul(v0,v1);n v7=Add(v2,v6);n v8=Div(v7,v3);"
        "n v9=Erf(v8);n v10=Add(v9,v4);n v11=Mul(v7,v10);n v12=Mul(v11,v5);out v12)";
    const char *text = blocked_schedule(ctx, key, &how);
    if (!strstr(how, "heuristic program") || !strstr(how, "elementwise tail Mul6") ||
        !strstr(how, "Erf3: inline"))
        fail_msg("schedule: %s", how);
    int par = count_substr(text, ") parallel");
    if (par != 2) fail_msg("%d parallel loops (want 2: weights, tile) in:\n%s", par, text);
    if (count_substr(text, "* 2304]") > 0) fail_msg("a whole-output buffer in:\n%s", text);
    te_ctx_free(ctx);
}

static void expect_key_error(const char *key, const char *want)
{
    te_ctx *ctx = te_ctx_new();
    ops_built b;
    assert_int_equal(ops_build_key(ctx, key, &b), -1);
    const char *msg = te_ctx_errmsg(ctx);
    if (!strstr(msg, want)) fail_msg("error '%s' lacks '%s'", msg, want);
    te_ctx_free(ctx);
}

static void test_key_refusals(void **state)
{
    (void)state;
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8];n v1=loom:FromNCHWc(v0);out v1)",
                     "node #0 (FromNCHWc): input X has rank 4 (needs 5: N, C/b, H, W, b)");
    expect_key_error("onnx(opset=13;x v0:float[1,24,8,8];n v1=loom:ToNCHWc(v0){block=i0};out v1)",
                     "attribute 'block' is 0: must be at least 1");
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8,16];n v1=loom:FromNCHWc(v0){channels=i16};"
                     "out v1)",
                     "attribute 'channels' is 16: must be in the last of the 2 blocks of 16 (17 "
                     "to 32)");
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8,16];n v1=loom:FromNCHWc(v0){channels=i33};"
                     "out v1)",
                     "attribute 'channels' is 33");
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8,16];w v1:float[2,1,3,3,16,16];"
                     "n v2=loom:ConvNCHWc(v0,v1){pads=I[1,1,1,1]};out v2)",
                     "does not fit X with 32 channels in blocks of 16 and group 1");
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8,16];w v1:float[2,2,3,3,16,16];w v2:float[32];"
                     "n v3=loom:ConvNCHWc(v0,v1,v2){pads=I[1,1,1,1]};out v3)",
                     "input B must have shape [2,16]");
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8,16];w v1:float[2,2,3,3,16,16];"
                     "n v2=loom:ConvNCHWc(v0,v1){pads=I[1,1]};out v2)",
                     "attribute 'pads' has 2 values (needs 4)");
    expect_key_error("onnx(opset=13;x v0:float[1,2,2,2,16];w v1:float[2,2,3,3,16,16];"
                     "n v2=loom:ConvNCHWc(v0,v1);out v2)",
                     "the kernel is larger than the padded input");
    /* Grouped: W's input blocks are those of one group. */
    expect_key_error("onnx(opset=13;x v0:float[1,4,8,8,16];w v1:float[4,4,3,3,16,16];"
                     "n v2=loom:ConvNCHWc(v0,v1){group=i2};out v2)",
                     "does not fit X with 64 channels in blocks of 16 and group 2 (group 1, "
                     "depthwise, or groups of whole input and output blocks)");
    expect_key_error("onnx(opset=13;x v0:float[1,4,8,8,16];w v1:float[4,1,3,3,16,16];"
                     "n v2=loom:ConvNCHWc(v0,v1){group=i8};out v2)",
                     "does not fit X with 64 channels in blocks of 16 and group 8");
    /* A plain X: group 1, W of one-channel input blocks. */
    expect_key_error("onnx(opset=13;x v0:float[1,4,8,8];w v1:float[2,2,3,3,1,16];"
                     "n v2=loom:ConvNCHWc(v0,v1){group=i2};out v2)",
                     "a plain (rank 4) X needs group 1, not 2");
    expect_key_error("onnx(opset=13;x v0:float[1,3,8,8];w v1:float[2,3,3,3,4,16];"
                     "n v2=loom:ConvNCHWc(v0,v1);out v2)",
                     "does not fit X with 3 channels in blocks of 1 and group 1");
    expect_key_error("onnx(opset=13;x v0:float[1,3,8];w v1:float[2,3,3,3,1,16];"
                     "n v2=loom:ConvNCHWc(v0,v1);out v2)",
                     "input X has rank 3 (needs 5: N, C/b, H, W, b; or 4: N, C, H, W with "
                     "group 1)");
    /* Blocked pools: explicit pads, no Indices, no attribute they would ignore. */
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8,16];"
                     "n v1=loom:MaxPoolNCHWc(v0){kernel_shape=I[2,2],auto_pad=s'SAME_UPPER'};"
                     "out v1)",
                     "node #0 (MaxPoolNCHWc): attribute 'auto_pad' is not taken by MaxPoolNCHWc "
                     "(kernel_shape, strides, pads, dilations, ceil_mode; pads are explicit, no "
                     "Indices)");
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8,16];"
                     "n v1=loom:MaxPoolNCHWc(v0){kernel_shape=I[2,2],storage_order=i1};out v1)",
                     "attribute 'storage_order' is not taken by MaxPoolNCHWc");
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8,16];"
                     "n v1=loom:MaxPoolNCHWc(v0){kernel_shape=I[2,2],count_include_pad=i1};out v1)",
                     "attribute 'count_include_pad' is not taken by MaxPoolNCHWc");
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8,16];"
                     "n v1=loom:AveragePoolNCHWc(v0){kernel_shape=I[2,2],auto_pad=s'VALID'};"
                     "out v1)",
                     "attribute 'auto_pad' is not taken by AveragePoolNCHWc (kernel_shape, "
                     "strides, pads, dilations, ceil_mode, count_include_pad; pads are explicit)");
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8,16];"
                     "n v1=loom:AveragePoolNCHWc(v0){kernel_shape=I[2,2],count_include_pad=i2};"
                     "out v1)",
                     "attribute 'count_include_pad' is 2 (0 or 1)");
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8,16];"
                     "n v1=loom:AveragePoolNCHWc(v0){kernel_shape=I[2,2],ceil_mode=i3};out v1)",
                     "attribute 'ceil_mode' is 3 (0 or 1)");
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8,16];"
                     "n v1=loom:MaxPoolNCHWc(v0){strides=I[2,2]};out v1)",
                     "attribute 'kernel_shape' is missing");
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8,16];"
                     "n v1=loom:MaxPoolNCHWc(v0){kernel_shape=I[2,2,2]};out v1)",
                     "attribute 'kernel_shape' has 3 values, the input needs 2");
    expect_key_error("onnx(opset=13;x v0:float[1,32,8,8];"
                     "n v1=loom:MaxPoolNCHWc(v0){kernel_shape=I[2,2]};out v1)",
                     "node #0 (MaxPoolNCHWc): input X has rank 4 (needs 5: N, C/b, H, W, b)");
    expect_key_error("onnx(opset=13;x v0:float[1,32,8,8];n v1=loom:GlobalMaxPoolNCHWc(v0);out v1)",
                     "node #0 (GlobalMaxPoolNCHWc): input X has rank 4 (needs 5: N, C/b, H, W, b)");
    expect_key_error("onnx(opset=13;x v0:float[1,2,8,8,16];"
                     "n v1=loom:GlobalAveragePoolNCHWc(v0){kernel_shape=I[2,2]};out v1)",
                     "attribute 'kernel_shape' is not taken by GlobalAveragePoolNCHWc (it has "
                     "none)");
}

/* Keys of blocked pools and a grouped blocked convolution build. */
static void test_blocked_keys_build(void **state)
{
    (void)state;
    const char *keys[] = {
        "onnx(opset=13;x v0:float[1,2,9,9,16];n v1=loom:MaxPoolNCHWc(v0){ceil_mode=i1,"
        "kernel_shape=I[3,3],pads=I[1,1,1,1],strides=I[2,2]};out v1)",
        "onnx(opset=13;x v0:float[1,2,9,9,16];n v1=loom:AveragePoolNCHWc(v0){ceil_mode=i0,"
        "count_include_pad=i1,kernel_shape=I[3,3],pads=I[1,1,1,1],strides=I[2,2]};out v1)",
        "onnx(opset=13;x v0:float[1,2,9,9,16];n v1=loom:GlobalMaxPoolNCHWc(v0);out v1)",
        "onnx(opset=13;x v0:float[1,4,8,8,16];w v1:float[4,2,3,3,16,16];"
        "n v2=loom:ConvNCHWc(v0,v1){group=i2,pads=I[1,1,1,1]};out v2)",
        "onnx(opset=13;x v0:float[1,3,9,9];w v1:float[2,3,3,3,1,16];w v2:float[2,16];"
        "n v3=loom:ConvNCHWc(v0,v1,v2){pads=I[1,1,1,1],strides=I[2,2]};out v3)",
    };
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        te_ctx *ctx = te_ctx_new();
        ops_built bt;
        if (ops_build_key(ctx, keys[i], &bt) != 0) fail_msg("%s: %s", keys[i], te_ctx_errmsg(ctx));
        te_ctx_free(ctx);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_relu_conv),
        cmocka_unit_test(test_conv_prime_width),
        cmocka_unit_test(test_activations_stay_blocked),
        cmocka_unit_test(test_activation_chain_numeric),
        cmocka_unit_test(test_residual_block),
        cmocka_unit_test(test_depthwise_and_middle_output),
        cmocka_unit_test(test_half_blocks),
        cmocka_unit_test(test_channels_not_blocked),
        cmocka_unit_test(test_padded_channels),
        cmocka_unit_test(test_padded_channels_unsafe_op),
        cmocka_unit_test(test_pools_blocked),
        cmocka_unit_test(test_conv_maxpool_conv),
        cmocka_unit_test(test_global_pool_classifier),
        cmocka_unit_test(test_squeeze_excitation),
        cmocka_unit_test(test_batchnorm_blocked),
        cmocka_unit_test(test_split_concat),
        cmocka_unit_test(test_resize_blocked),
        cmocka_unit_test(test_pools_left_plain),
        cmocka_unit_test(test_grouped_conv),
        cmocka_unit_test(test_stem_plain_input),
        cmocka_unit_test(test_dump_graph),
        cmocka_unit_test(test_blocked_conv_schedule),
        cmocka_unit_test(test_blocked_conv_epilogue_in_tile),
        cmocka_unit_test(test_matmul_gelu_in_tile),
        cmocka_unit_test(test_key_refusals),
        cmocka_unit_test(test_blocked_keys_build),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
