/*
 * Group keys: a group of nodes written as canonical text and rebuilt from
 * it by the builder graph/ registers when Loom loads (ops_build_key), so
 * that the executor, the tuner's runners and the tuning database all
 * build the same computation; malformed keys are refused with the offset.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "loom/graph.h"
#include "loom/ops.h"

#define NODE_TESTS "/usr/share/libonnx-testdata/data/node"

static void build_ok(const char *key, int nargs, double flops, uint64_t constant)
{
    te_ctx *ctx = te_ctx_new();
    ops_built w;
    int rc = ops_build_key(ctx, key, &w);
    if (rc != 0) fail_msg("%s: %s", key, te_ctx_errmsg(ctx));
    assert_int_equal(w.nargs, nargs);
    assert_int_equal(w.nouts, 1);
    if (flops >= 0) assert_true(fabs(w.flops - flops) < 1e-9);
    assert_true(w.constant_args == constant);
    te_ctx_free(ctx);
}

static void build_fails(const char *key, const char *want)
{
    te_ctx *ctx = te_ctx_new();
    ops_built w;
    assert_int_equal(ops_build_key(ctx, key, &w), -1);
    if (!strstr(te_ctx_errmsg(ctx), want)) fail_msg("'%s': got '%s', want '%s'", key, te_ctx_errmsg(ctx), want);
    te_ctx_free(ctx);
}

/* Keys build without calling graph/ first: the builder is registered
 * when the library loads. */
static void test_key_builds(void **state)
{
    (void)state;
    build_ok("onnx(opset=13;x v0:float[2,3];x v1:float[3];n v2=Add(v0,v1);out v2)", 3, -1, 0);
    build_ok("onnx(opset=13;x v0:float[2,3];w v1:float[3];n v2=Add(v0,v1);n v3=Relu(v2);out v3)",
             3, -1, 2);
    /* A scalar (rank 0) input is a te tensor of shape [1]. */
    build_ok("onnx(opset=13;x v0:float[4];w v1:float[];n v2=Add(v0,v1);out v2)", 3, -1, 2);
}

static void test_key_errors(void **state)
{
    (void)state;
    build_fails("onnx(opset=13;x v0:float[2,3];n v1=Relu(v0))", "no 'out' item");
    build_fails("onnx(opset=13;x v1:float[2,3];n v2=Relu(v1);out v2)", "count up from v0");
    build_fails("onnx(opset=13;x v0:float[2,3];n v1=Relu(v7);out v1)", "undefined value");
    build_fails("onnx(opset=13;x v0:floaty[2,3];n v1=Relu(v0);out v1)", "unknown element type");
    build_fails("onnx(opset=13;x v0:float[2,3];n v1=Relu(v0);out v1)junk", "after the closing");
    build_fails("onnx(opset=13;q v0:float[2,3])", "expected an item");
    /* The model inside the key is checked like any model. */
    build_fails("onnx(opset=13;x v0:float[2,3];x v1:float[4];n v2=Add(v0,v1);out v2)",
                "broadcast");
    build_fails("onnx(opset=13;x v0:float[2,3];n v1=NoSuchOp(v0);out v1)", "NoSuchOp");
}

/* A model's kernels are keyed by their group's text; the same text builds. */
static void test_exec_keys(void **state)
{
    (void)state;
    char *err = NULL;
    gr_model *m = gr_model_load(NODE_TESTS "/test_add_bcast/model.onnx", &err);
    if (!m) {
        print_message("SKIPPED: %s\n", err);
        free(err);
        skip();
    }
    gr_exec *e = gr_compile(m, NULL, &err);
    if (!e) fail_msg("%s", err);
    assert_int_equal(gr_exec_num_kernels(e), 1);
    assert_int_equal(gr_exec_kernel_uses(e, 0), 1);
    const char *key = gr_exec_kernel_key(e, 0);
    assert_non_null(key);
    assert_string_equal(key, "onnx(opset=14;x v0:float[3,4,5];x v1:float[5];n v2=Add(v0,v1);out v2)");
    build_ok(key, 3, -1, 0);
    assert_null(gr_exec_kernel_key(e, 1));
    /* gr_run refuses inputs that do not match, naming them. */
    float xa[60], ya[5], za[4];
    DLTensor x = {.data = xa, .device = {kDLCPU, 0}, .ndim = 3, .dtype = {kDLFloat, 32, 1},
                  .shape = (int64_t[]){3, 4, 5}};
    DLTensor y = {.data = ya, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1},
                  .shape = (int64_t[]){5}};
    DLTensor z = {.data = za, .device = {kDLCPU, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1},
                  .shape = (int64_t[]){4}};
    DLTensor yi = y;
    yi.dtype = (DLDataType){kDLInt, 32, 1};
    assert_int_equal(gr_run(e, 1, (DLTensor *[]){&x}, 0, NULL, &err), -1);
    tu_assert_msg_has(err, "1 inputs given, the model takes 2");
    free(err), err = NULL;
    assert_int_equal(gr_run(e, 2, (DLTensor *[]){&x, &z}, 0, NULL, &err), -1);
    tu_assert_msg_has(err, "input 1 ('y') has shape [4], the model's is [5]");
    free(err), err = NULL;
    assert_int_equal(gr_run(e, 2, (DLTensor *[]){&x, &yi}, 0, NULL, &err), -1);
    tu_assert_msg_has(err, "input 1 ('y') has dtype code 0 bits 32, the model's is float");
    free(err), err = NULL;
    assert_int_equal(gr_run(e, 2, (DLTensor *[]){&x, &y}, 2, (DLTensor *[]){&x, &x}, &err), -1);
    tu_assert_msg_has(err, "2 outputs given, the model has 1");
    free(err), err = NULL;
    assert_int_equal(gr_run(e, 2, (DLTensor *[]){&x, &y}, 1, (DLTensor *[]){&y}, &err), -1);
    tu_assert_msg_has(err, "output 0 ('sum') has shape [5], the model's is [3,4,5]");
    free(err), err = NULL;
    gr_exec_free(e);
    gr_model_free(m);
}

/* Every operator inference accepts has a lowering rule (or is always
 * folded), so gr_compile needs no check of its own. */
static void test_supported_ops_lower(void **state)
{
    (void)state;
    static const char *const ops[] = {
        "Conv", "Gemm", "MatMul", "BatchNormalization", "Relu", "Clip", "Sigmoid", "Tanh", "Erf",
        "Gelu", "HardSwish", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "MaxPool",
        "AveragePool", "GlobalAveragePool", "Flatten", "Reshape", "Transpose", "Concat", "Split",
        "Slice", "Gather", "Squeeze", "Unsqueeze", "Softmax", "LayerNormalization", "ReduceMean",
        "ReduceSum", "Cast", "Where", "Shape", "Constant", "ConstantOfShape", "Identity"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        for (int64_t opset = 11; opset <= 18; opset++)
            if (gr_op_supported("", ops[i], opset) && !gr_op_runnable("", ops[i], opset))
                fail_msg("%s at opset %lld: inferred but not lowered", ops[i], (long long)opset);
    assert_true(gr_op_runnable("com.microsoft", "Gelu", 1));
    assert_true(gr_op_runnable("loom", "ConvNCHWc", 1));
    assert_false(gr_op_runnable("", "NoSuchOp", 13));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_builds),
        cmocka_unit_test(test_key_errors),
        cmocka_unit_test(test_exec_keys),
        cmocka_unit_test(test_supported_ops_lower),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
