/*
 * tests/onnx_backend.c (the runner of ONNX's backend tests) on a data
 * directory of its own: a model that Loom refuses on purpose (an
 * attribute value it does not implement, "... is not supported") counts
 * as skipped with the refusal as its reason, never as a failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx_writer.h"
#include "testutil.h"

static char out[65536];
static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/loom_onnx_backend_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rmtree(dir);
}

static void test_refusal_is_a_skip(void **state)
{
    (void)state;
    char cmd[1024], path[512];
    /* one test: Resize with antialias at opset 18, input [1,3,32,32] */
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/node/test_resize_antialias/test_data_set_0 && cp tests/data/cnn_small/test_data_set_0/input_0.pb "
             "%s/node/test_resize_antialias/test_data_set_0/",
             dir, dir);
    assert_int_equal(system(cmd), 0);
    ow_model *w = ow_new(18);
    ow_input(w, "x", GR_FLOAT, 4, (int64_t[]){1, 3, 32, 32});
    const float sc[4] = {1, 1, 0.5f, 0.5f};
    ow_init(w, "scales", GR_FLOAT, 1, (int64_t[]){4}, sc, sizeof sc);
    ow_node *n = ow_node_add(w, "", "Resize", "x,,scales", "y");
    ow_attr_str(n, "mode", "linear");
    ow_attr_int(n, "antialias", 1);
    ow_output(w, "y");
    snprintf(path, sizeof path, "%s/node/test_resize_antialias/model.onnx", dir);
    ow_write(w, path);
    ow_free(w);
    int rc = tu_run(out, sizeof out, "%s/onnx_backend --data %s", tu_bindir(), dir);
    if (rc != 0) fail_msg("exit %d: %s", rc, out);
    tu_assert_msg_has(out, "refused: attribute 'antialias' other than 0 is not supported",
                      "(node/test_resize_antialias)");
    tu_assert_msg_has(out, "ONNX backend tests: 0 passed, 0 failed, 1 skipped", "skipped");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusal_is_a_skip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
