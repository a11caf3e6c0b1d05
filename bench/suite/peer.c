/*
 * bench/suite/peer.c — picks the vendor library for a workload's operator
 * and forwards calls to it.
 */
#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "peer_internal.h"

bench_peer *bench_peer_new(const ops_workload *w, DLTensor *const *ins, char *err, size_t errlen) {
    bench_peer *p = calloc(1, sizeof *p);
    int64_t n = 1;
    for (int d = 0; d < w->outs[0]->ndim; ++d) n *= w->outs[0]->shape[d];
    if (!p || !(p->out = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) / 64 * 64))) {
        snprintf(err, errlen, "out of memory");
        free(p);
        return NULL;
    }
    bool mm = !strcmp(w->op, "matmul") || !strcmp(w->op, "batch_matmul");
    bool f32 = te_dtype_eq(w->dtype, TE_FLOAT32);
    if (mm && te_dtype_eq(w->dtype, TE_BFLOAT16)) {
        p->name = "onednn matmul bf16";
        p->dnnl_mm = bench__dnnl_mm_new(w, ins, p->out, err, errlen);
    } else if (!f32) {
        snprintf(err, errlen, "no vendor peer for %s in %s (float32 workloads have one; "
                              "bfloat16 matmul and batch_matmul: oneDNN)",
                 w->op, te_dtype_str(w->dtype));
    } else if (mm) {
        p->name = "openblas sgemm";
        p->blas = bench__blas_new(w, ins, p->out, err, errlen);
    } else if (!strcmp(w->op, "conv2d_nchw") || !strcmp(w->op, "depthwise_conv2d_nchw")) {
        p->name = "onednn (nchw in/out)";
        p->dnnl = bench__dnnl_new(w, ins, p->out, err, errlen);
    } else {
        snprintf(err, errlen, "no vendor peer for operator '%s' (matmul, batch_matmul, "
                              "conv2d_nchw and depthwise_conv2d_nchw have one)", w->op);
    }
    if (!p->blas && !p->dnnl && !p->dnnl_mm) {
        bench_peer_free(p);
        return NULL;
    }
    return p;
}

void bench_peer_free(bench_peer *p) {
    if (!p) return;
    if (p->blas) bench__blas_free(p->blas);
    if (p->dnnl) bench__dnnl_free(p->dnnl);
    if (p->dnnl_mm) bench__dnnl_mm_free(p->dnnl_mm);
    free(p->out);
    free(p);
}

const char *bench_peer_name(const bench_peer *p) { return p->name; }

int bench_peer_run(bench_peer *p) {
    if (p->dnnl_mm) return bench__dnnl_mm_run(p->dnnl_mm);
    return p->blas ? bench__blas_run(p->blas) : bench__dnnl_run(p->dnnl, false);
}

bool bench_peer_has_internal(const bench_peer *p) { return p->dnnl != NULL; }

int bench_peer_run_internal(bench_peer *p) {
    return p->blas ? bench__blas_run(p->blas) : bench__dnnl_run(p->dnnl, true);
}

const float *bench_peer_output(bench_peer *p) {
    if (p->dnnl_mm) bench__dnnl_mm_output(p->dnnl_mm);
    return p->out;
}

void bench_peers_set_threads(int threads) {
    openblas_set_num_threads(threads);
    omp_set_num_threads(threads); /* oneDNN's CPU runtime here is OpenMP */
}
