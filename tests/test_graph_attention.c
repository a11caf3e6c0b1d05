/*
 * Fused attention (graph/fuse_attention.c, autotune/default_attention.c):
 * models of scaled dot-product attention written here compile to ONE
 * kernel whose default schedule is the attention rule, keep no buffer of
 * the whole batch x heads x M x N scores, and agree with a naive
 * double-precision reference on fresh random data (outputs poisoned with
 * NaN first): |got - want| <= 1e-5 + 1e-4 |want| (float32 dot products of
 * at most 64 terms of values in [-1, 1], a softmax over at most 100 keys).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/autotune.h"
#include "loom/ops.h"
#include "onnx_writer.h"
#include "testutil.h"

#define RTOL 1e-4
#define ATOL 1e-5

static const DLDataType F32 = {kDLFloat, 32, 1};

typedef struct {
    int64_t b, h, m, n, d; /* batch, heads, queries, keys, head size */
    bool mul;              /* scale by Mul(c, x) instead of Div(x, c) */
    bool mask;             /* Add a [b, 1, 1, n] mask */
    int64_t opset;
} att_case;

static uint64_t rng;

static DLTensor *rnd(int nd, const int64_t *shape)
{
    DLTensor *t = ow_tensor(F32, nd, shape);
    for (int64_t i = 0; i < ow_numel(t); i++) ow_set(t, i, tu_rand_uniform(&rng, -1, 1));
    return t;
}

static ow_model *write_attention(const att_case *c, float scale)
{
    ow_model *w = ow_new(c->opset);
    ow_input(w, "q", GR_FLOAT, 4, (int64_t[]){c->b, c->h, c->m, c->d});
    ow_input(w, "kt", GR_FLOAT, 4, (int64_t[]){c->b, c->h, c->d, c->n});
    ow_input(w, "v", GR_FLOAT, 4, (int64_t[]){c->b, c->h, c->n, c->d});
    if (c->mask) ow_input(w, "mask", GR_FLOAT, 4, (int64_t[]){c->b, 1, 1, c->n});
    ow_init(w, "c", GR_FLOAT, 0, NULL, &scale, sizeof scale);
    ow_node_add(w, "", "MatMul", "q,kt", "qk");
    ow_node_add(w, "", c->mul ? "Mul" : "Div", c->mul ? "c,qk" : "qk,c", "scaled");
    if (c->mask) ow_node_add(w, "", "Add", "scaled,mask", "masked");
    ow_node *sm = ow_node_add(w, "", "Softmax", c->mask ? "masked" : "scaled", "p");
    /* Before opset 13 the default axis is 1 (and softmax flattens from it
     * on): the last axis named. */
    if (c->opset < 13) ow_attr_int(sm, "axis", 3);
    ow_node_add(w, "", "MatMul", "p,v", "y");
    ow_output(w, "y");
    return w;
}

/* softmax(q kt * s + mask) v, in double. */
static void reference(const att_case *c, double s, const DLTensor *q, const DLTensor *kt,
                      const DLTensor *v, const DLTensor *mask, double *y)
{
    double *row = malloc((size_t)c->n * sizeof *row);
    assert_non_null(row);
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t h = 0; h < c->h; h++)
            for (int64_t i = 0; i < c->m; i++) {
                int64_t bh = b * c->h + h;
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < c->n; j++) {
                    double acc = 0;
                    for (int64_t k = 0; k < c->d; k++)
                        acc += ow_get(q, (bh * c->m + i) * c->d + k) *
                               ow_get(kt, (bh * c->d + k) * c->n + j);
                    row[j] = acc * s + (mask ? ow_get(mask, b * c->n + j) : 0);
                    if (row[j] > mx) mx = row[j];
                }
                for (int64_t j = 0; j < c->n; j++) sum += row[j] = exp(row[j] - mx);
                for (int64_t k = 0; k < c->d; k++) {
                    double acc = 0;
                    for (int64_t j = 0; j < c->n; j++)
                        acc += row[j] / sum * ow_get(v, (bh * c->n + j) * c->d + k);
                    y[(bh * c->m + i) * c->d + k] = acc;
                }
            }
    free(row);
}

/* The kernel's default schedule is the attention rule, and its lowered
 * program allocates nothing larger than a block of score rows. */
static void check_schedule(const att_case *c, const char *key)
{
    te_ctx *ctx = te_ctx_new();
    assert_non_null(ctx);
    ops_built w;
    assert_int_equal(ops_build_key(ctx, key, &w), 0);
    const char *how = NULL;
    sch_schedule *s = tune_default_schedule(ctx, &w, "llvm", &how);
    assert_non_null(s);
    assert_non_null(how);
    tu_assert_msg_has(how, "attention", "per block of rows");
    const char *text = sch_lower_text(s, w.nargs, w.args);
    assert_non_null(text);
    /* Every allocation's element count ("allocate NAME[float32 * E]"): a
     * block of at most 8 query rows of N keys, never all the scores. */
    int allocs = 0;
    for (const char *p = strstr(text, "allocate"); p; p = strstr(p + 1, "allocate")) {
        const char *x = strstr(p, " * ");
        const char *eol = strchr(p, '\n');
        assert_non_null(x);
        assert_true(!eol || x < eol);
        long long elems = strtoll(x + 3, NULL, 10);
        bool small = elems > 0 && elems <= 8 * c->n && elems < c->b * c->h * c->m * c->n;
        if (!small) printf("%.*s\n", (int)(eol ? eol - p : 80), p);
        assert_true(small);
        allocs++;
    }
    assert_true(allocs >= 3); /* scores, exponentials, the statistics */
    /* Vectors are whole registers (8 lanes or a multiple), with masked
     * tails where the sizes do not divide: never the 25-lane vectors of
     * 100 keys split by their divisor 25, which ran 4x slower. A row
     * shorter than a vector is one vector of its length. */
    int vectors = 0;
    for (const char *p = text + 1; (p = strchr(p, 'x')); p++) {
        char before = p[-1];
        if ((before >= 'a' && before <= 'z') || (before >= 'A' && before <= 'Z') ||
            (before >= '0' && before <= '9') || before == '_' || before == '.')
            continue;
        char *end;
        long lanes = strtol(p + 1, &end, 10);
        if (end == p + 1 || *end != '(') continue;
        bool whole = lanes % 8 == 0 || (lanes < 16 && (lanes == c->n || lanes == c->d));
        if (!whole) printf("a vector of %ld lanes in:\n%s\n", lanes, text);
        assert_true(whole);
        vectors++;
    }
    assert_true(vectors > 0);
    te_ctx_free(ctx);
}

static void run_case(const att_case *c)
{
    float scale = c->mul ? 0.125f : 8.0f;
    ow_model *w = write_attention(c, scale);
    gr_model *m = NULL;
    gr_exec *e = ow_compile_ok(w, &m);
    /* One kernel: the chain fused. */
    assert_int_equal(gr_exec_num_kernels(e), 1);
    tu_assert_msg_has(gr_exec_kernel_label(e, 0),
                      c->mask ? (c->mul ? "MatMul+Mul+Add+Softmax+MatMul"
                                        : "MatMul+Div+Add+Softmax+MatMul")
                              : (c->mul ? "MatMul+Mul+Softmax+MatMul"
                                        : "MatMul+Div+Softmax+MatMul"),
                      "node");
    check_schedule(c, gr_exec_kernel_key(e, 0));

    DLTensor *q = rnd(4, (int64_t[]){c->b, c->h, c->m, c->d});
    DLTensor *kt = rnd(4, (int64_t[]){c->b, c->h, c->d, c->n});
    DLTensor *v = rnd(4, (int64_t[]){c->b, c->h, c->n, c->d});
    DLTensor *mask = c->mask ? rnd(4, (int64_t[]){c->b, 1, 1, c->n}) : NULL;
    DLTensor *ins[4] = {q, kt, v, mask};
    const DLTensor *y = ow_run(e, c->mask ? 4 : 3, ins, 0);
    int64_t total = c->b * c->h * c->m * c->d;
    assert_int_equal(ow_numel(y), total);
    double *want = malloc((size_t)total * sizeof *want);
    assert_non_null(want);
    reference(c, c->mul ? scale : 1.0 / scale, q, kt, v, mask, want);
    for (int64_t i = 0; i < total; i++) {
        double got = ow_get(y, i);
        if (!(fabs(got - want[i]) <= ATOL + RTOL * fabs(want[i])))
            fail_msg("attention %lldx%lldx%lldx%lldx%lld: y[%lld] = %.9g, want %.9g",
                     (long long)c->b, (long long)c->h, (long long)c->m, (long long)c->n,
                     (long long)c->d, (long long)i, got, want[i]);
    }
    free(want);
    rt_tensor_free(q);
    rt_tensor_free(kt);
    rt_tensor_free(v);
    if (mask) rt_tensor_free(mask);
    gr_exec_free(e);
    gr_model_free(m);
    ow_free(w);
}

/* BERT's form (Div, mask) at vector-friendly sizes, and sizes that divide
 * neither a register tile nor a vector (rows 5, 7 and 13, 24, 9, 37 and
 * 100 keys, head size 12, 3, 20 and 40), with Mul and without a mask, at
 * opsets before and after Softmax's change of axis semantics (13). */
static void test_attention_numeric(void **state)
{
    (void)state;
    static const att_case cases[] = {
        {1, 3, 32, 48, 64, false, true, 17},
        {2, 2, 20, 24, 12, true, true, 13},
        {1, 2, 7, 9, 3, false, false, 17},
        {1, 1, 16, 32, 16, true, false, 12},
        {1, 2, 13, 37, 20, false, true, 17},
        {1, 1, 10, 100, 40, true, false, 17},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
}

/* The tuner's sketches and search accept the fused group: its task builds,
 * sketches generate (or the default schedule stands alone), and the
 * default schedule is what trial 1 would measure. */
static void test_attention_sketches(void **state)
{
    (void)state;
    att_case c = {1, 2, 16, 32, 16, false, true, 17};
    ow_model *w = write_attention(&c, 4.0f);
    gr_model *m = NULL;
    gr_exec *e = ow_compile_ok(w, &m);
    te_ctx *ctx = te_ctx_new();
    ops_built wl;
    assert_int_equal(ops_build_key(ctx, gr_exec_kernel_key(e, 0), &wl), 0);
    tune_sketch sk[TUNE_MAX_PARTIAL_SKETCHES];
    int n = tune_generate_sketches(ctx, &wl, sk, TUNE_MAX_PARTIAL_SKETCHES);
    if (n < 0) printf("%s\n", te_ctx_errmsg(ctx));
    assert_true(n >= 1);
    te_ctx_free(ctx);
    gr_exec_free(e);
    gr_model_free(m);
    ow_free(w);
}

static int setup(void **state)
{
    (void)state;
    rng = tu_seed();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention_numeric),
        cmocka_unit_test(test_attention_sketches),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
