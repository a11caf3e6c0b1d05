/*
 * bench/suite/peer_blas.c — OpenBLAS cblas_sgemm as the peer of matmul and
 * batch_matmul (one sgemm per batch: OpenBLAS 0.3.21 has no batched
 * sgemm), with the workload's transposes.
 */
#include <cblas.h>
#include <stdlib.h>

#include "peer_internal.h"

struct blas_peer {
    int64_t batch, M, N, K;
    bool ta, tb;
    const float *a, *b;
    float *c;
};

blas_peer *bench__blas_new(const ops_workload *w, DLTensor *const *ins, float *out, char *err,
                           size_t errlen) {
    blas_peer *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int64_t ta = 0, tb = 0;
    p->batch = 1;
    ops_param(w, "B", &p->batch);
    ops_param(w, "M", &p->M);
    ops_param(w, "N", &p->N);
    ops_param(w, "K", &p->K);
    ops_param(w, "transpose_a", &ta);
    ops_param(w, "transpose_b", &tb);
    p->ta = ta, p->tb = tb;
    p->a = ins[0]->data;
    p->b = ins[1]->data;
    p->c = out;
    return p;
}

int bench__blas_run(blas_peer *p) {
    int lda = (int)(p->ta ? p->M : p->K), ldb = (int)(p->tb ? p->K : p->N);
    for (int64_t b = 0; b < p->batch; ++b)
        cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans,
                    p->tb ? CblasTrans : CblasNoTrans, (int)p->M, (int)p->N, (int)p->K, 1.0f,
                    p->a + b * p->M * p->K, lda, p->b + b * p->K * p->N, ldb, 0.0f,
                    p->c + b * p->M * p->N, (int)p->N);
    return 0;
}

void bench__blas_free(blas_peer *p) { free(p); }
