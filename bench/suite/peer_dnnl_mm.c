/*
 * bench/suite/peer_dnnl_mm.c — oneDNN's matmul primitive (dnnl 2.x C API)
 * as the peer of bfloat16 matmul and batch_matmul: OpenBLAS 0.3.21 as
 * Debian builds it has no sbgemm, and oneDNN runs its AVX512-BF16 kernels
 * ("brg:avx512_core_bf16" in DNNL_VERBOSE) where the CPU has them.
 *
 * Operands in the workload's plain row-major layouts (transposes as
 * strides), bfloat16 in and out, float32 sums: the same bytes Loom reads
 * and writes, and, as for sgemm, no weights packed ahead (Loom packs B in
 * every call too: a matmul has no constant operand). The bfloat16 result
 * is widened into the float output only when it is read
 * (bench__dnnl_mm_output), outside the timing.
 */
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdlib.h>
#include <string.h>

#include "peer_internal.h"

struct dnnl_mm_peer {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_t mm;
    dnnl_memory_t a, b, c;
    DLTensor *dst; /* bfloat16 */
    float *out;
};

#define TRY BENCH_DNNL_TRY

/* A [batch,] rows x cols bfloat16 descriptor, stored transposed (cols x
 * rows) when t. */
static dnnl_status_t desc(dnnl_memory_desc_t *md, int64_t batch, int64_t rows, int64_t cols,
                          bool t) {
    int nd = batch ? 3 : 2;
    dnnl_dims_t dims = {0}, strides = {0};
    if (batch) dims[0] = batch, strides[0] = rows * cols;
    dims[nd - 2] = rows, dims[nd - 1] = cols;
    strides[nd - 2] = t ? 1 : cols, strides[nd - 1] = t ? rows : 1;
    return dnnl_memory_desc_init_by_strides(md, nd, dims, dnnl_bf16, strides);
}

dnnl_mm_peer *bench__dnnl_mm_new(const ops_workload *w, DLTensor *const *ins, float *out,
                                 char *err, size_t errlen) {
    dnnl_mm_peer *p = calloc(1, sizeof *p);
    dnnl_primitive_desc_t pd = NULL;
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int64_t batch = 0, M = 0, N = 0, K = 0, ta = 0, tb = 0;
    ops_param(w, "B", &batch), ops_param(w, "M", &M), ops_param(w, "N", &N);
    ops_param(w, "K", &K), ops_param(w, "transpose_a", &ta), ops_param(w, "transpose_b", &tb);
    const te_tensor *y = w->outs[0];
    p->out = out;
    p->dst = rt_tensor_alloc((DLDataType){kDLBfloat, 16, 1}, y->ndim, y->shape);
    if (!p->dst) {
        snprintf(err, errlen, "cannot allocate the bfloat16 output: %s", rt_last_error());
        goto fail;
    }
    dnnl_memory_desc_t a_md, b_md, c_md;
    TRY(desc(&a_md, batch, M, K, ta));
    TRY(desc(&b_md, batch, K, N, tb));
    TRY(desc(&c_md, batch, M, N, false));
    dnnl_matmul_desc_t md;
    TRY(dnnl_matmul_desc_init(&md, &a_md, &b_md, NULL, &c_md));
    TRY(dnnl_engine_create(&p->eng, dnnl_cpu, 0));
    TRY(dnnl_stream_create(&p->stream, p->eng, dnnl_stream_default_flags));
    TRY(dnnl_primitive_desc_create(&pd, &md, NULL, p->eng, NULL));
    TRY(dnnl_primitive_create(&p->mm, pd));
    TRY(dnnl_memory_create(&p->a, &a_md, p->eng, ins[0]->data));
    TRY(dnnl_memory_create(&p->b, &b_md, p->eng, ins[1]->data));
    TRY(dnnl_memory_create(&p->c, &c_md, p->eng, p->dst->data));
    dnnl_primitive_desc_destroy(pd);
    return p;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    bench__dnnl_mm_free(p);
    return NULL;
}

int bench__dnnl_mm_run(dnnl_mm_peer *p) {
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, p->a}, {DNNL_ARG_WEIGHTS, p->b}, {DNNL_ARG_DST, p->c}};
    if (dnnl_primitive_execute(p->mm, p->stream, 3, args) != dnnl_success) return -1;
    return dnnl_stream_wait(p->stream) == dnnl_success ? 0 : -1;
}

void bench__dnnl_mm_output(dnnl_mm_peer *p) {
    int64_t n = rt_tensor_numel(p->dst);
    for (int64_t k = 0; k < n; ++k) p->out[k] = (float)rt_tensor_get(p->dst, k);
}

void bench__dnnl_mm_free(dnnl_mm_peer *p) {
    if (!p) return;
    if (p->mm) dnnl_primitive_destroy(p->mm);
    dnnl_memory_t mems[3] = {p->a, p->b, p->c};
    for (int i = 0; i < 3; ++i)
        if (mems[i]) dnnl_memory_destroy(mems[i]);
    if (p->stream) dnnl_stream_destroy(p->stream);
    if (p->eng) dnnl_engine_destroy(p->eng);
    rt_tensor_free(p->dst);
    free(p);
}
