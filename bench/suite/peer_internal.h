/*
 * bench/suite/peer_internal.h — the peer object shared by the dispatch
 * (peer.c) and the two libraries' set-ups.
 */
#ifndef LOOM_BENCH_PEER_INTERNAL_H
#define LOOM_BENCH_PEER_INTERNAL_H

#include "bench.h"

typedef struct blas_peer blas_peer;
typedef struct dnnl_peer dnnl_peer;

struct bench_peer {
    const char *name;
    float *out;      /* the output in the workload's layout */
    blas_peer *blas; /* exactly one of these is set */
    dnnl_peer *dnnl;
};

blas_peer *bench__blas_new(const ops_workload *w, DLTensor *const *ins, float *out, char *err,
                           size_t errlen);
int bench__blas_run(blas_peer *p);
void bench__blas_free(blas_peer *p);

dnnl_peer *bench__dnnl_new(const ops_workload *w, DLTensor *const *ins, float *out, char *err,
                           size_t errlen);
int bench__dnnl_run(dnnl_peer *p, bool internal);
void bench__dnnl_free(dnnl_peer *p);

#endif
