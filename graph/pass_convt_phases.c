/* graph/pass_convt_phases.c — a 2-D ConvTranspose as stride x stride
 * ordinary convolutions, one per output phase, joined by Concat and
 * DepthToSpace (the sub-pixel decomposition; TVM's conv2d_transpose
 * dilates the input with zeros instead, wasting stride^2 - 1 of every
 * stride^2 multiply-adds on them).
 *
 * Output row y = s j + p (phase p, 0 <= p < s) gathers the taps r with
 * y + pad_begin - r = s i, that is r = r0 + s m with r0 = (p + pad_begin)
 * mod s, m < M = ceil((k - r0) / s), and i = j + q - m with q = (p +
 * pad_begin - r0) / s. That is a stride-1 correlation of the input with
 * the M taps reversed, padded by M - 1 - q before and J - I + q after
 * (J = O / s output rows a phase), likewise for the columns. The phases'
 * outputs [N, K, J, J] are concatenated along channels in (p_row, p_col)
 * order and DepthToSpace(s, DCR) interleaves them: Y[n, k, s j + pr, s i +
 * pc] = phase (pr, pc)[n, k, j, i]. Each phase convolution then takes the
 * fast convolution path (graph/pass_alter_layout.c's blocked layout, the
 * tuned or default conv kernels) where the gather lowering
 * (graph/lower_convt.c) ran 18-58x slower than ONNX Runtime.
 *
 * Rewritten: float32 ConvTranspose of a 4-D input with constant weights
 * (and bias), group 1, dilations 1, equal strides s > 1 whose output
 * extents are multiples of s, every phase with a tap and no negative
 * padding (a crop). Others keep the gather lowering. */
#include "graph/infer_internal.h"
#include "graph/rewrite.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One axis of one phase: first tap, taps, padding before and after. */
typedef struct {
    int64_t r0, m, pb, pe;
} phase_axis;

/* Phase p of an axis with input extent in, kernel k, stride s, padding
 * before pb, output out: false when the phase has no tap or its padding
 * would be negative. */
static bool phase_of(int64_t p, int64_t in, int64_t k, int64_t s, int64_t pb, int64_t out,
                     phase_axis *a)
{
    a->r0 = (p + pb) % s;
    if (a->r0 >= k) return false;
    a->m = (k - a->r0 + s - 1) / s;
    int64_t q = (p + pb - a->r0) / s, j = out / s;
    a->pb = a->m - 1 - q;
    a->pe = j - in + q;
    return a->pb >= 0 && a->pe >= 0;
}

/* The largest stride rewritten (64 phase convolutions). */
#define MAX_STRIDE 8

typedef struct {
    int64_t s, in[2], k[2], out[2];
    phase_axis ax[2][MAX_STRIDE]; /* per axis, per phase */
} plan;

/* Whether node n is rewritten, and how. */
static bool plan_of(const gr_graph *g, const gr_node *n, plan *pl)
{
    if (!gr_rw_is_op(n, "ConvTranspose") || n->n_inputs < 2 || n->n_outputs != 1 ||
        n->outputs[0] < 0)
        return false;
    int x = n->inputs[0], w = n->inputs[1], b = n->n_inputs > 2 ? n->inputs[2] : -1;
    if (x < 0 || !gr_rw_is_fixed_const(g, w) || (b >= 0 && !gr_rw_is_fixed_const(g, b)))
        return false;
    const gr_type *xt = &g->values[x].type;
    const gr_tensor *wt = g->values[w].data;
    if (xt->kind != GR_TYPE_TENSOR || xt->elem_type != GR_FLOAT || xt->ndim != 4 ||
        wt->elem_type != GR_FLOAT || wt->ndim != 4)
        return false;
    const gr_attr *ga = gr_node_attr(n, "group");
    if (ga && (ga->kind != GR_ATTR_INT || ga->i != 1)) return false;
    int64_t s[2], d[2], pb[2], pe[2], out[2];
    char why[256];
    if (!gr_convt_geometry(n, 2, xt->shape + 2, wt->shape + 2, s, d, pb, pe, out, why, sizeof why))
        return false;
    if (s[0] != s[1] || s[0] < 2 || s[0] > MAX_STRIDE || d[0] != 1 || d[1] != 1) return false;
    pl->s = s[0];
    for (int a = 0; a < 2; a++) {
        pl->in[a] = xt->shape[2 + a], pl->k[a] = wt->shape[2 + a], pl->out[a] = out[a];
        if (out[a] % pl->s) return false;
        for (int64_t p = 0; p < pl->s; p++)
            if (!phase_of(p, pl->in[a], pl->k[a], pl->s, pb[a], out[a], &pl->ax[a][p])) return false;
    }
    return true;
}

typedef struct {
    gr_rw *rw;
    gr_rw_list out;
} walk;

/* A node of op with ninputs inputs (copied) and one new output value of
 * type float32 shape[4], named from base; its value index, -1 on failure. */
static int add_node(walk *w, const char *op, const char *name, int nin, const int *ins,
                    const int64_t *shape, int out, gr_attr *attrs, int nattrs)
{
    if (out < 0) out = gr_rw_add_node_value(w->rw, name, GR_FLOAT, 4, shape);
    return out < 0 ? -1 : gr_rw_emit_op(w->rw, &w->out, op, name, nin, ins, out, attrs, nattrs);
}

static bool rewrite(walk *w, const gr_node *n, const plan *pl)
{
    gr_rw *rw = w->rw;
    gr_graph *g = rw->g;
    int y = n->outputs[0], x = n->inputs[0], b = n->n_inputs > 2 ? n->inputs[2] : -1;
    const gr_tensor *wt = g->values[n->inputs[1]].data;
    int64_t C = wt->shape[0], K = wt->shape[1], s = pl->s, J[2] = {pl->out[0] / s, pl->out[1] / s};
    const char *base = n->name && *n->name ? n->name : "ConvTranspose";
    char name[1024];
    int *phases = gr_arena_alloc(rw->a, (size_t)(s * s), sizeof(int));
    if (!phases) return false;
    for (int64_t pr = 0; pr < s; pr++)
        for (int64_t pc = 0; pc < s; pc++) {
            const phase_axis *ar = &pl->ax[0][pr], *ac = &pl->ax[1][pc];
            int64_t ws[4] = {K, C, ar->m, ac->m};
            gr_tensor *pw = gr_rw_new_tensor(rw, GR_FLOAT, 4, ws);
            if (!pw) return false;
            const float *src = wt->data;
            float *dst = pw->data;
            for (int64_t k = 0; k < K; k++)
                for (int64_t c = 0; c < C; c++)
                    for (int64_t t = 0; t < ar->m; t++)
                        for (int64_t u = 0; u < ac->m; u++) {
                            int64_t r = ar->r0 + s * (ar->m - 1 - t), q = ac->r0 + s * (ac->m - 1 - u);
                            dst[((k * C + c) * ar->m + t) * ac->m + u] =
                                src[((c * K + k) * pl->k[0] + r) * pl->k[1] + q];
                        }
            snprintf(name, sizeof name, "%s_phase%" PRId64 "%" PRId64, base, pr, pc);
            int wv = gr_rw_add_const(rw, name, pw);
            if (wv < 0) return false;
            gr_attr *at = gr_arena_alloc(rw->a, 4, sizeof *at);
            if (!at) return false;
            int64_t one[2] = {1, 1}, pads[4] = {ar->pb, ac->pb, ar->pe, ac->pe}, ks[2] = {ar->m, ac->m};
            at[0] = gr_rw_ints_attr(rw, "dilations", 2, one);
            at[1] = gr_rw_ints_attr(rw, "kernel_shape", 2, ks);
            at[2] = gr_rw_ints_attr(rw, "pads", 4, pads);
            at[3] = gr_rw_ints_attr(rw, "strides", 2, one);
            for (int i = 0; i < 4; i++)
                if (!at[i].ints) return false;
            int ins[3] = {x, wv, b};
            int64_t shape[4] = {g->values[x].type.shape[0], K, J[0], J[1]};
            phases[pr * s + pc] = add_node(w, "Conv", name, b >= 0 ? 3 : 2, ins, shape, -1, at, 4);
            if (phases[pr * s + pc] < 0) return false;
        }
    int64_t cs[4] = {g->values[x].type.shape[0], s * s * K, J[0], J[1]};
    gr_attr *ca = gr_arena_alloc(rw->a, 1, sizeof *ca), *da = gr_arena_alloc(rw->a, 2, sizeof *da);
    if (!ca || !da) return false;
    ca[0] = (gr_attr){.name = "axis", .kind = GR_ATTR_INT, .i = 1};
    snprintf(name, sizeof name, "%s_phases", base);
    int cat = add_node(w, "Concat", name, (int)(s * s), phases, cs, -1, ca, 1);
    if (cat < 0) return false;
    da[0] = (gr_attr){.name = "blocksize", .kind = GR_ATTR_INT, .i = s};
    da[1] = (gr_attr){.name = "mode", .kind = GR_ATTR_STRING};
    da[1].s.data = "DCR";
    da[1].s.len = 3;
    return add_node(w, "DepthToSpace", base, 1, &cat, NULL, y, da, 2) >= 0;
}

int gr_pass_convt_phases(gr_model *m, gr_pass_stats *st, char **err)
{
    gr_rw rw;
    gr_rw_begin(&rw, m, st, err);
    gr_graph *g = rw.g;
    plan pl;
    int cap = 0, rewritten = 0;
    for (int i = 0; i < g->n_nodes; i++)
        cap += plan_of(g, &g->nodes[i], &pl) ? (int)(pl.s * pl.s) + 2 : 1;
    if (cap == g->n_nodes) return 0;
    walk w = {.rw = &rw};
    bool ok = gr_rw_list_init(&rw, &w.out, cap);
    for (int i = 0; ok && i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        if (plan_of(g, n, &pl)) {
            ok = rewrite(&w, n, &pl);
            rewritten++;
        } else {
            ok = gr_rw_emit(&rw, &w.out, n);
        }
    }
    if (ok) gr_rw_list_install(&rw, &w.out);
    else if (err && !*err) gr_set_err(err, "%s: out of memory in a graph pass", m->path);
    return gr_rw_end(&rw, ok) ? rewritten : -1;
}
