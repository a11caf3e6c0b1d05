/*
 * graph/infer_einsum.c and lower_einsum.c: Einsum as one-node models run
 * through gr_compile/gr_run on fresh random data (outputs poisoned
 * first) against a naive double reference that walks every point of the
 * labels' space: matrix and batched products, a chain of three inputs,
 * an inner product (a scalar output), a sum, a transpose, a diagonal,
 * implicit outputs (ASCII order: upper case first), and the ellipsis
 * (batch diagonal, broadcasting batch products); float, double and int32;
 * and every refusal's message.
 *
 * The reference reads a canonical form of each equation in which the
 * test spells out what the ellipsis covers (one letter per dimension).
 *
 * Tolerance: 1e-5 relative to the sum of the products' magnitudes
 * (float32 sums in another order); exact for int32.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, F64 = {kDLFloat, 64, 1}, I32 = {kDLInt, 32, 1};

typedef struct {
    const char *eq;    /* given to the model */
    const char *canon; /* explicit, one letter per dimension ("ab,bc->ac") */
    int n;
    int rank[3];
    int64_t shape[3][4];
} einsum_case;

static void run_case(uint64_t *rng, DLDataType t, const einsum_case *k)
{
    ow_model *w = ow_new(12);
    static const char *const names[3] = {"a", "b", "c"};
    char inputs[16] = "";
    for (int i = 0; i < k->n; i++) {
        ow_input(w, names[i], ow_elem_type(t), k->rank[i], k->shape[i]);
        strcat(inputs, i ? ",": "");
        strcat(inputs, names[i]);
    }
    ow_attr_str(ow_node_add(w, "", "Einsum", inputs, "y"), "equation", k->eq);
    ow_output(w, "y");
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    DLTensor *x[3];
    for (int i = 0; i < k->n; i++) {
        x[i] = ow_tensor(t, k->rank[i], k->shape[i]);
        for (int64_t j = 0; j < ow_numel(x[i]); j++)
            ow_set(x[i], j, t.code == kDLInt ? floor(tu_rand_uniform(rng, -5, 5)) : tu_rand_uniform(rng, -1, 1));
    }
    const DLTensor *y = ow_run(e, k->n, x, 0);
    /* the canonical labels */
    const char *terms[4];
    int nt = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", k->canon);
    char *arrow = strstr(buf, "->");
    *arrow = 0;
    terms[3] = arrow + 2;
    for (char *s = strtok(buf, ","); s; s = strtok(NULL, ",")) terms[nt++] = s;
    assert_int_equal(nt, k->n);
    int64_t ext[128] = {0};
    char labels[64];
    int nl = 0;
    for (int i = 0; i < k->n; i++)
        for (int d = 0; terms[i][d]; d++) {
            unsigned char ch = (unsigned char)terms[i][d];
            if (!ext[ch]) labels[nl++] = (char)ch;
            if (k->shape[i][d] > ext[ch]) ext[ch] = k->shape[i][d];
        }
    int no = (int)strlen(terms[3]);
    int64_t nout = 1;
    for (int d = 0; d < no; d++) nout *= ext[(unsigned char)terms[3][d]];
    assert_int_equal(ow_numel(y), nout);
    double *want = calloc((size_t)nout, sizeof *want), *mag = calloc((size_t)nout, sizeof *mag);
    int64_t pos[128] = {0};
    for (;;) {
        double p = 1;
        for (int i = 0; i < k->n; i++) {
            int64_t at = 0;
            for (int d = 0; terms[i][d]; d++) {
                int64_t ex = k->shape[i][d];
                at = at * ex + (ex == 1 ? 0 : pos[(unsigned char)terms[i][d]]);
            }
            p *= ow_get(x[i], at);
        }
        int64_t o = 0;
        for (int d = 0; d < no; d++) o = o * ext[(unsigned char)terms[3][d]] + pos[(unsigned char)terms[3][d]];
        want[o] += p;
        mag[o] += fabs(p);
        int l = nl - 1;
        while (l >= 0 && ++pos[(unsigned char)labels[l]] == ext[(unsigned char)labels[l]]) pos[(unsigned char)labels[l--]] = 0;
        if (l < 0) break;
    }
    for (int64_t o = 0; o < nout; o++) {
        double got = ow_get(y, o), tol = t.code == kDLInt ? 0 : 1e-5 * mag[o] + 1e-6;
        if (!(fabs(got - want[o]) <= tol))
            fail_msg("Einsum '%s' element %lld: got %.9g, expected %.9g", k->eq, (long long)o, got, want[o]);
    }
    free(want);
    free(mag);
    for (int i = 0; i < k->n; i++) rt_tensor_free(x[i]);
    ow_finish(w, e, m);
}

static const einsum_case cases[] = {
    {"ij,jk->ik", "ij,jk->ik", 2, {2, 2}, {{5, 7}, {7, 3}}},
    {"bij, bjk -> bik", "bij,bjk->bik", 2, {3, 3}, {{2, 3, 4}, {2, 4, 5}}},
    {"ij,jk,kl->il", "ij,jk,kl->il", 3, {2, 2, 2}, {{3, 4}, {4, 5}, {5, 2}}},
    {"i,i", "i,i->", 2, {1, 1}, {{17}, {17}}},
    {"ij->i", "ij->i", 1, {2}, {{4, 9}}},
    {"ij->ji", "ij->ji", 1, {2}, {{4, 9}}},
    {"ii->i", "ii->i", 1, {2}, {{6, 6}}},
    {"ii", "ii->", 1, {2}, {{6, 6}}},
    {"ba", "ba->ab", 1, {2}, {{3, 5}}},
    {"bA,Ac", "bA,Ac->bc", 2, {2, 2}, {{3, 4}, {4, 2}}},
    {"...ii->...i", "xyii->xyi", 1, {4}, {{2, 3, 4, 4}}},
    {"...ij,...jk->...ik", "xyij,yjk->xyik", 2, {4, 3}, {{2, 3, 4, 5}, {3, 5, 2}}},
    {"...ij,...jk", "xyij,yjk->xyik", 2, {4, 3}, {{2, 3, 4, 5}, {1, 5, 2}}},
    {"i...->...", "ixy->xy", 1, {3}, {{4, 2, 3}}},
};

static void test_einsum(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&rng, F32, &cases[i]);
    run_case(&rng, I32, &cases[1]);
    run_case(&rng, F64, &cases[11]);
}

#define A2 OW_IN("a", GR_FLOAT, 2, 3, 4)
#define B2 OW_IN("b", GR_FLOAT, 2, 4, 5)
static const ow_error_case errors[] = {
    {{12, "Einsum", "a,b", {A2, B2}, {OW_AS("equation", "ij,kl->im")}},
     {"node 'n0' (Einsum)", "equation 'ij,kl->im': output label 'm' is in no input"}},
    {{12, "Einsum", "a,b", {A2, B2}, {OW_AS("equation", "ij,jk->ii")}},
     {"(Einsum)", "output label 'i' is repeated"}},
    {{12, "Einsum", "a,b", {A2, B2}, {OW_AS("equation", "ij,ik->jk")}},
     {"(Einsum)", "label 'i' has extents 3 and 4"}},
    {{12, "Einsum", "a,b", {A2, B2}, {OW_AS("equation", "ijk,jk->i")}},
     {"(Einsum)", "term 0 has 3 labels; input 0 has rank 2"}},
    {{12, "Einsum", "a,b", {A2, B2}, {OW_AS("equation", "ij->i")}},
     {"(Einsum)", "the equation has 1 input terms; the node has 2 inputs"}},
    {{12, "Einsum", "a", {A2}, {OW_AS("equation", "ij,jk->ik")}},
     {"(Einsum)", "more input terms than the node's 1 inputs"}},
    {{12, "Einsum", "a", {A2}, {OW_AS("equation", "i2->i")}},
     {"(Einsum)", "character '2' is not a label (a-z, A-Z), '...', ',' or '->'"}},
    {{12, "Einsum", "a", {A2}, {OW_AS("equation", "..i->i")}}, {"(Einsum)", "a term holds '.' outside one '...'"}},
    {{12, "Einsum", "a", {A2}, {OW_AS("equation", "...i->i")}},
     {"(Einsum)", "the output drops the ellipsis' 1 dimensions (summing them is not supported)"}},
    {{12, "Einsum", "a,b", {OW_IN("a", GR_FLOAT, 3, 3, 3, 4), OW_IN("b", GR_FLOAT, 3, 2, 4, 5)},
      {OW_AS("equation", "...ij,...jk->...ik")}},
     {"(Einsum)", "the ellipsis' dimensions do not broadcast (3 and 2)"}},
    {{12, "Einsum", "a", {A2}, {{0}}}, {"(Einsum)", "attribute 'equation' (a string) is required"}},
    {{12, "Einsum", "a,b", {A2, OW_IN("b", GR_INT32, 2, 4, 5)}, {OW_AS("equation", "ij,jk->ik")}},
     {"(Einsum)", "input 1 is int32, input 0 is float: they must match"}},
};

static void test_errors(void **state)
{
    (void)state;
    ow_expect_errors(errors, sizeof errors / sizeof *errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_einsum),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
