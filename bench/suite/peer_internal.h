/*
 * bench/suite/peer_internal.h — the peer object shared by the dispatch
 * (peer.c) and the two libraries' set-ups.
 */
#ifndef LOOM_BENCH_PEER_INTERNAL_H
#define LOOM_BENCH_PEER_INTERNAL_H

#include "bench.h"

/* In a set-up function with `char *err, size_t errlen` and a `fail:`
 * label, where <oneapi/dnnl/dnnl_debug.h> is included: a oneDNN call
 * whose failure is reported with its status and jumps to fail. */
#define BENCH_DNNL_TRY(call)                                                                 \
    do {                                                                                     \
        dnnl_status_t st_ = (call);                                                          \
        if (st_ != dnnl_success) {                                                           \
            snprintf(err, errlen, "onednn: %s failed: %s", #call, dnnl_status2str(st_));   \
            goto fail;                                                                       \
        }                                                                                    \
    } while (0)

typedef struct blas_peer blas_peer;
typedef struct dnnl_peer dnnl_peer;
typedef struct dnnl_mm_peer dnnl_mm_peer;

struct bench_peer {
    const char *name;
    float *out;      /* the output in the workload's layout */
    blas_peer *blas; /* exactly one of these is set */
    dnnl_peer *dnnl;
    dnnl_mm_peer *dnnl_mm;
};

blas_peer *bench__blas_new(const ops_workload *w, DLTensor *const *ins, float *out, char *err,
                           size_t errlen);
int bench__blas_run(blas_peer *p);
void bench__blas_free(blas_peer *p);

dnnl_peer *bench__dnnl_new(const ops_workload *w, DLTensor *const *ins, float *out, char *err,
                           size_t errlen);
int bench__dnnl_run(dnnl_peer *p, bool internal);
void bench__dnnl_free(dnnl_peer *p);

/* bfloat16 matmul and batch_matmul on oneDNN's matmul primitive; its
 * bfloat16 result is widened into out by bench__dnnl_mm_output. */
dnnl_mm_peer *bench__dnnl_mm_new(const ops_workload *w, DLTensor *const *ins, float *out,
                                 char *err, size_t errlen);
int bench__dnnl_mm_run(dnnl_mm_peer *p);
void bench__dnnl_mm_output(dnnl_mm_peer *p);
void bench__dnnl_mm_free(dnnl_mm_peer *p);

#endif
