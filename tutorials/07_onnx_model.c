/*
 * Tutorial 7: a whole ONNX model — load, compile, run, check.
 *
 * Loom reads an ONNX file with its own graph module (loom/graph.h): the
 * model's nodes become fused groups (a convolution with its bias,
 * BatchNormalization, residual Add and Relu is one kernel), each group a
 * te computation with a workload key of its own, built with the best
 * record of a tuning database when one is given (autotune --model
 * tunes them) and with its default schedule otherwise.
 *
 * This program compiles tests/data/cnn_small/model.onnx (a small CNN with
 * residual blocks, BatchNormalization, pooling and Gemm; or the model
 * directory given as argument: DIR/model.onnx and DIR/test_data_set_0/),
 * runs it on the committed input and compares with the output ONNX
 * Runtime computed for it.
 *
 *   build/tutorial_07_onnx_model [MODEL_DIR] [--check]
 *
 * With --check the exit status says whether every output element is
 * within |got - want| <= 1e-5 + 1e-3 |want| of ONNX Runtime's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <loom/loom.h>

#ifndef LOOM_DATA_DIR
#define LOOM_DATA_DIR "tests/data"
#endif

int main(int argc, char **argv)
{
    const char *dir = LOOM_DATA_DIR "/cnn_small";
    bool check = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--check") == 0) check = true;
        else dir = argv[i];
    }
    char path[4096];
    char *err = NULL;
    int rc = 1;

    /* 1. Load: the ONNX protobuf into plain C structs (nodes, values,
     *    initializers). Nothing is inferred yet. */
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    gr_model *m = gr_model_load(path, &err);
    if (!m) {
        fprintf(stderr, "%s\n", err);
        free(err);
        return 1;
    }

    /* 2. Compile: shapes inferred (a dynamic input would need
     *    gr_compile_options.shapes, as loomrun --shape), nodes lowered to te
     *    computations and fused, one kernel per distinct group, each built
     *    with LLVM for this CPU. `explain` prints every kernel: its ops,
     *    how often it runs, its schedule and its workload key. */
    gr_compile_options opts = {.target = "llvm", .explain = stdout};
    gr_exec *e = gr_compile(m, &opts, &err);
    if (!e) {
        fprintf(stderr, "%s\n", err);
        goto done;
    }
    size_t arena, unshared;
    gr_exec_memory(e, &arena, &unshared);
    printf("%d kernels for %d groups; intermediate values in %zu bytes (%zu without reuse)\n",
           gr_exec_num_kernels(e), gr_exec_num_groups(e), arena, unshared);

    /* 3. Run on the committed input (an ONNX TensorProto file). Inputs are
     *    DLTensors of the model's shapes and dtypes; gr_run checks them. */
    DLTensor *inputs[16];
    gr_tensor *files[16] = {0};
    int nin = gr_exec_num_inputs(e);
    for (int i = 0; i < nin && i < 16; i++) {
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, i);
        if (!(files[i] = gr_tensor_load(path, &err))) {
            fprintf(stderr, "%s\n", err);
            goto done;
        }
        inputs[i] = &files[i]->dl;
    }
    if (gr_run(e, nin, inputs, 0, NULL, &err) != 0) {
        fprintf(stderr, "%s\n", err);
        goto done;
    }

    /* 4. Compare with ONNX Runtime's output for the same input. */
    rc = 0;
    for (int o = 0; o < gr_exec_num_outputs(e); o++) {
        snprintf(path, sizeof path, "%s/test_data_set_0/output_%d.pb", dir, o);
        gr_tensor *want = gr_tensor_load(path, &err);
        if (!want) {
            fprintf(stderr, "%s\n", err);
            rc = 1;
            break;
        }
        const DLTensor *got = gr_exec_output(e, o);
        const float *g = got->data, *w = want->data;
        double max_abs = 0;
        int64_t bad = 0;
        for (int64_t k = 0; k < want->numel; k++) {
            double d = fabs((double)g[k] - w[k]);
            if (!(d <= max_abs)) max_abs = d;
            if (!(d <= 1e-5 + 1e-3 * fabs(w[k]))) bad++;
        }
        printf("output %d: %lld values, max |loom - onnxruntime| = %.3g, %lld beyond tolerance\n",
               o, (long long)want->numel, max_abs, (long long)bad);
        if (bad) rc = 1;
        gr_tensor_free(want);
    }
    for (int i = 0; i < 16; i++) gr_tensor_free(files[i]);
done:
    free(err);
    gr_exec_free(e);
    gr_model_free(m);
    return check ? rc : (rc ? 1 : 0);
}
