/*
 * graph/infer_optimizer.c and lower_optimizer.c: the training optimizers
 * of ai.onnx.preview.training (Adagrad, Momentum standard and nesterov,
 * Adam) as one-node models run through gr_compile/gr_run on fresh random
 * weights, gradients and states (outputs poisoned first) against a naive
 * double reference of ONNX's definitions, with two weight tensors of
 * different shapes, update counts 0 and > 0, float and double; and every
 * refusal's message.
 *
 * Tolerance: 1e-5 relative (float outputs of a float64 computation).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_writer.h"
#include "testutil.h"

static const DLDataType F32 = {kDLFloat, 32, 1}, F64 = {kDLFloat, 64, 1}, I64 = {kDLInt, 64, 1};
static const char *const DOM = "ai.onnx.preview.training";

typedef struct {
    const char *op;
    const char *mode; /* Momentum */
    double a, b, eps, norm, post, decay;
} opt_case;

/* The model's default-domain opset: 0 for a model that imports only the
 * training domain (its workload keys then say opset=0). */
static int64_t default_opset = 13;

static void run_case(uint64_t *rng, DLDataType t, const opt_case *k, int64_t T)
{
    bool adam = strcmp(k->op, "Adam") == 0, mom = strcmp(k->op, "Momentum") == 0;
    int ig = adam ? 4 : 3, og = adam ? 3 : 2, n = 2;
    const int64_t shapes[2][2] = {{3, 4}, {5, 1}};
    static const char *const gname[] = {"x", "g", "v", "h"};
    ow_model *w = ow_new(default_opset);
    ow_opset_import(w, DOM, 1);
    ow_input(w, "r", ow_elem_type(t), 0, NULL);
    ow_input(w, "t", GR_INT64, 0, NULL);
    char ins[128] = "r,t", outs[128] = "", name[16];
    for (int gi = 0; gi < ig; gi++)
        for (int i = 0; i < n; i++) {
            snprintf(name, sizeof name, "%s%d", gname[gi], i);
            ow_input(w, name, ow_elem_type(t), 2, shapes[i]);
            strcat(ins, ",");
            strcat(ins, name);
        }
    for (int go = 0; go < og; go++)
        for (int i = 0; i < n; i++) {
            snprintf(name, sizeof name, "o%d_%d", go, i);
            if (*outs) strcat(outs, ",");
            strcat(outs, name);
        }
    ow_node *nd = ow_node_add(w, DOM, k->op, ins, outs);
    if (adam) {
        ow_attr_float(nd, "alpha", (float)k->a);
        ow_attr_float(nd, "beta", (float)k->b);
        ow_attr_float(nd, "epsilon", (float)k->eps);
        ow_attr_float(nd, "norm_coefficient", (float)k->norm);
        ow_attr_float(nd, "norm_coefficient_post", (float)k->post);
    } else if (mom) {
        ow_attr_float(nd, "alpha", (float)k->a);
        ow_attr_float(nd, "beta", (float)k->b);
        ow_attr_float(nd, "norm_coefficient", (float)k->norm);
        ow_attr_str(nd, "mode", k->mode);
    } else {
        ow_attr_float(nd, "decay_factor", (float)k->decay);
        ow_attr_float(nd, "epsilon", (float)k->eps);
        ow_attr_float(nd, "norm_coefficient", (float)k->norm);
    }
    for (int go = 0; go < og; go++)
        for (int i = 0; i < n; i++) {
            snprintf(name, sizeof name, "o%d_%d", go, i);
            ow_output(w, name);
        }
    gr_model *m;
    gr_exec *e = ow_compile_ok(w, &m);
    int64_t one = 1;
    DLTensor *args[16];
    int na = 0;
    DLTensor *R = ow_tensor(t, 0, &one), *TT = ow_tensor(I64, 0, &one);
    ow_set(R, 0, 0.1);
    ow_set(TT, 0, (double)T);
    args[na++] = R;
    args[na++] = TT;
    DLTensor *st[4][2];
    for (int gi = 0; gi < ig; gi++)
        for (int i = 0; i < n; i++) {
            st[gi][i] = ow_tensor(t, 2, shapes[i]);
            for (int64_t j = 0; j < ow_numel(st[gi][i]); j++)
                ow_set(st[gi][i], j, gi == 3 || (gi == 2 && !mom) ? tu_rand_uniform(rng, 0, 1) : tu_rand_uniform(rng, -1, 1));
            args[na++] = st[gi][i];
        }
    ow_run(e, na, args, 0);
    double r = ow_get(R, 0), tf = (double)T, a = (float)k->a, b = (float)k->b, eps = (float)k->eps,
           norm = (float)k->norm, post = (float)k->post, decay = (float)k->decay;
    for (int i = 0; i < n; i++)
        for (int64_t j = 0; j < ow_numel(st[0][i]); j++) {
            double x = ow_get(st[0][i], j), g = norm * x + ow_get(st[1][i], j), want[3];
            if (adam) {
                double v = a * ow_get(st[2][i], j) + (1 - a) * g, h = b * ow_get(st[3][i], j) + (1 - b) * g * g;
                double ra = T > 0 ? r * sqrt(1 - pow(b, tf)) / (1 - pow(a, tf)) : r;
                want[0] = (1 - post) * (x - ra * v / (sqrt(h) + eps));
                want[1] = v;
                want[2] = h;
            } else if (mom) {
                double v = a * ow_get(st[2][i], j) + (T > 0 ? b : 1) * g;
                want[0] = strcmp(k->mode, "nesterov") == 0 ? x - r * (g + a * v) : x - r * v;
                want[1] = v;
            } else {
                double h = ow_get(st[2][i], j) + g * g;
                want[0] = x - r / (1 + tf * decay) * g / (sqrt(h) + eps);
                want[1] = h;
            }
            for (int go = 0; go < og; go++) {
                const DLTensor *y = gr_exec_output(e, go * n + i);
                double got = ow_get(y, j);
                if (!(fabs(got - want[go]) <= 1e-5 * (1 + fabs(want[go]))))
                    fail_msg("%s T=%lld output %d tensor %d element %lld: got %.9g, expected %.9g", k->op, (long long)T,
                             go, i, (long long)j, got, want[go]);
            }
        }
    for (int q = 0; q < na; q++) rt_tensor_free(args[q]);
    ow_finish(w, e, m);
}

static void test_optimizers(void **state)
{
    (void)state;
    uint64_t rng = tu_seed();
    static const opt_case cases[] = {
        {"Adagrad", NULL, 0, 0, 1e-2, 0.001, 0, 0.1},
        {"Momentum", "standard", 0.95, 0.1, 0, 0.001, 0, 0},
        {"Momentum", "nesterov", 0.9, 0.2, 0, 0.01, 0, 0},
        {"Adam", NULL, 0.95, 0.85, 1e-2, 0.001, 0.1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        run_case(&rng, F32, &cases[i], 0);
        run_case(&rng, F32, &cases[i], 3);
    }
    run_case(&rng, F64, &cases[3], 5);
    default_opset = 0;
    run_case(&rng, F32, &cases[0], 2);
    default_opset = 13;
}

static void expect(const char *op, const char *ins, const char *attr, const char *a, const char *b)
{
    ow_model *w = ow_new(13);
    ow_opset_import(w, DOM, 1);
    ow_input(w, "r", GR_FLOAT, 0, NULL);
    ow_input(w, "t", GR_INT64, 0, NULL);
    ow_input(w, "x", GR_FLOAT, 1, (int64_t[]){3});
    ow_input(w, "y", GR_FLOAT, 1, (int64_t[]){4});
    ow_input(w, "d", GR_DOUBLE, 1, (int64_t[]){3});
    ow_input(w, "ri", GR_INT32, 0, NULL);
    ow_node *n = ow_node_add(w, DOM, op, ins, "o");
    if (attr) ow_attr_str(n, "mode", attr);
    ow_output(w, "o");
    ow_expect_error(w, a, b);
}

static void test_errors(void **state)
{
    (void)state;
    expect("Adagrad", "r,t,x,x", NULL, "(Adagrad)", "2 tensor inputs after R and T; Adagrad takes 3 per weight tensor");
    expect("Adagrad", "ri,t,x,x,x", NULL, "(Adagrad)", "input R must be a float or double scalar");
    expect("Adagrad", "r,r,x,x,x", NULL, "(Adagrad)", "input T must be an int64 scalar");
    expect("Adagrad", "r,t,x,y,x", NULL, "(Adagrad)", "input 3 must have input 2's type and shape (the weight it updates)");
    expect("Adagrad", "r,t,x,d,x", NULL, "(Adagrad)", "input 3 must have input 2's type and shape");
    expect("Adam", "r,t,t,t,t,t", NULL, "(Adam)", "input 2 is int64; the weights must be float or double");
    expect("Momentum", "r,t,x,x,x", "fast", "(Momentum)", "attribute 'mode' must be standard or nesterov");
    expect("Momentum", "r,t,x,x,x", "standard", "(Momentum)", "attribute 'alpha' (a float) is required");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_optimizers),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
