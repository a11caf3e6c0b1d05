/*
 * tests/test_runtime_half.c — DLTensors of float16 ({kDLFloat, 16, 1})
 * and bfloat16 ({kDLBfloat, 16, 1}): allocation (2 bytes an element),
 * wrapping, copies on the CPU and to and from a GPU (where there is one),
 * bit for bit, and the dtype names in messages.
 */
#include <math.h>
#include <string.h>

#include "gpu_skip.h"

static const DLDataType F16 = {kDLFloat, 16, 1}, BF16 = {kDLBfloat, 16, 1};

static void fill(DLTensor *t, uint16_t seed) {
    uint16_t *p = t->data;
    for (int64_t i = 0; i < rt_tensor_numel(t); i++) p[i] = (uint16_t)(seed + i * 40503u);
}

static void test_alloc_copy_cpu(void **state) {
    (void)state;
    const DLDataType types[2] = {F16, BF16};
    for (int k = 0; k < 2; k++) {
        int64_t shape[2] = {37, 53};
        DLTensor *a = rt_tensor_alloc(types[k], 2, shape), *b = rt_tensor_alloc(types[k], 2, shape);
        assert_non_null(a);
        assert_non_null(b);
        assert_int_equal(rt_tensor_nbytes(a), 37 * 53 * 2);
        assert_int_equal(a->dtype.code, types[k].code);
        fill(a, (uint16_t)(k + 1));
        memset(b->data, 0xff, rt_tensor_nbytes(b));
        assert_int_equal(rt_tensor_copy(b, a), 0);
        assert_memory_equal(a->data, b->data, rt_tensor_nbytes(a));
        DLTensor *w = rt_tensor_wrap(a->data, types[k], 2, shape);
        assert_non_null(w);
        assert_int_equal(rt_tensor_nbytes(w), rt_tensor_nbytes(a));
        rt_tensor_free_header(w);
        /* a copy between the 16-bit types is refused: it would reinterpret bits */
        DLTensor *o = rt_tensor_alloc(types[1 - k], 2, shape);
        assert_int_not_equal(rt_tensor_copy(o, a), 0);
        tu_assert_msg_has(rt_last_error(), k ? "bfloat16" : "float16", k ? "float16" : "bfloat16");
        rt_tensor_free(o);
        rt_tensor_free(a);
        rt_tensor_free(b);
    }
}

static void test_copy_gpu(void **state) {
    (void)state;
    if (!rt_cuda_available()) tu_skip_test(rt_last_error());
    const DLDataType types[2] = {F16, BF16};
    for (int k = 0; k < 2; k++) {
        int64_t n = 1001;
        DLTensor *a = rt_tensor_alloc(types[k], 1, &n), *b = rt_tensor_alloc(types[k], 1, &n);
        DLTensor *d = rt_cuda_tensor_alloc(types[k], 1, &n, 0);
        if (!d) fail_msg("%s", rt_last_error());
        fill(a, (uint16_t)(7 * k + 3));
        memset(b->data, 0, rt_tensor_nbytes(b));
        assert_int_equal(rt_tensor_copy(d, a), 0);
        assert_int_equal(rt_tensor_copy(b, d), 0);
        assert_memory_equal(a->data, b->data, rt_tensor_nbytes(a));
        rt_tensor_free(a);
        rt_tensor_free(b);
        rt_tensor_free(d);
    }
}

/* rt_tensor_get/set: values rounded to nearest even per type, NaN and
 * overflow, and the refusal of a non-float tensor. */
static void test_get_set(void **state) {
    (void)state;
    int64_t n = 4;
    DLTensor *h = rt_tensor_alloc((DLDataType){kDLFloat, 16, 1}, 1, &n);
    DLTensor *b = rt_tensor_alloc((DLDataType){kDLBfloat, 16, 1}, 1, &n);
    DLTensor *f = rt_tensor_alloc((DLDataType){kDLFloat, 32, 1}, 1, &n);
    DLTensor *i = rt_tensor_alloc((DLDataType){kDLInt, 32, 1}, 1, &n);
    assert_non_null(h), assert_non_null(b), assert_non_null(f), assert_non_null(i);
    /* 1 + 2^-11 is a tie in float16: to even (1); 1 + 3 * 2^-11 rounds up */
    assert_int_equal(rt_tensor_set(h, 0, 1 + 0x1p-11), 0);
    assert_true(rt_tensor_get(h, 0) == 1.0);
    assert_int_equal(rt_tensor_set(h, 1, 1 + 3 * 0x1p-11), 0);
    assert_true(rt_tensor_get(h, 1) == 1 + 0x1p-9);
    assert_int_equal(rt_tensor_set(h, 2, 70000.0), 0); /* over 65504 */
    assert_true(isinf(rt_tensor_get(h, 2)));
    assert_int_equal(rt_tensor_set(h, 3, NAN), 0);
    assert_true(isnan(rt_tensor_get(h, 3)));
    /* bfloat16 keeps 8 bits: 1 + 2^-8 is a tie (to 1), 1 + 3 * 2^-8 up */
    assert_int_equal(rt_tensor_set(b, 0, 1 + 0x1p-8), 0);
    assert_true(rt_tensor_get(b, 0) == 1.0);
    assert_int_equal(rt_tensor_set(b, 1, 1 + 3 * 0x1p-8), 0);
    assert_true(rt_tensor_get(b, 1) == 1 + 0x1p-6);
    assert_int_equal(rt_tensor_set(b, 2, NAN), 0);
    assert_true(isnan(rt_tensor_get(b, 2)));
    assert_int_equal(rt_tensor_set(f, 0, 0.1), 0);
    assert_true(rt_tensor_get(f, 0) == (double)0.1f);
    assert_int_equal(rt_tensor_set(i, 0, 1.0), -1);
    assert_non_null(strstr(rt_last_error(), "rt_tensor_set: the tensor is missing or not of a float type"));
    assert_true(isnan(rt_tensor_get(i, 0)));
    assert_int_equal(rt_tensor_set(NULL, 0, 1.0), -1);
    rt_tensor_free(h), rt_tensor_free(b), rt_tensor_free(f), rt_tensor_free(i);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_copy_cpu),
        cmocka_unit_test(test_copy_gpu),
        cmocka_unit_test(test_get_set),
    };
    return tu_run_group(tests);
}
