/*
 * bench/suite/peer_dnnl.c — oneDNN (dnnl 2.x C API) as the peer of
 * conv2d_nchw and depthwise_conv2d_nchw.
 *
 * The convolution primitive is created with format `any`, so oneDNN picks
 * its preferred (blocked) layouts. Two timings come out of it:
 *  - "nchw in/out": what a user holding NCHW tensors pays — reorder the
 *    input to oneDNN's layout, convolve, reorder the output back. Weights
 *    are reordered once at set-up, as a deployment would pre-pack them.
 *  - "internal": the convolution alone on its own layouts.
 */
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdlib.h>
#include <string.h>

#include "peer_internal.h"

struct dnnl_peer {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_t conv, src_reorder, dst_reorder;
    dnnl_memory_t x_user, w_user, y_user, x_int, w_int, y_int;
};

#define TRY BENCH_DNNL_TRY

/* A reorder primitive from src to dst memory descriptors. */
static dnnl_status_t make_reorder(dnnl_engine_t eng, const dnnl_memory_desc_t *from,
                                  const dnnl_memory_desc_t *to, dnnl_primitive_t *out) {
    dnnl_primitive_desc_t pd;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, from, eng, to, eng, NULL);
    if (st != dnnl_success) return st;
    st = dnnl_primitive_create(out, pd);
    dnnl_primitive_desc_destroy(pd);
    return st;
}

static dnnl_status_t run2(dnnl_peer *p, dnnl_primitive_t prim, dnnl_memory_t from,
                          dnnl_memory_t to) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    return dnnl_primitive_execute(prim, p->stream, 2, args);
}

dnnl_peer *bench__dnnl_new(const ops_workload *w, DLTensor *const *ins, float *out, char *err,
                           size_t errlen) {
    dnnl_peer *p = calloc(1, sizeof *p);
    dnnl_primitive_desc_t pd = NULL;
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int64_t N = 0, C = 0, H = 0, W = 0, K = 0, R = 0, S = 0, stride = 1, pad = 0, dil = 1, groups = 1;
    ops_param(w, "N", &N), ops_param(w, "C", &C), ops_param(w, "H", &H), ops_param(w, "W", &W);
    ops_param(w, "R", &R), ops_param(w, "S", &S), ops_param(w, "stride", &stride);
    ops_param(w, "pad", &pad), ops_param(w, "dilation", &dil);
    bool depthwise = !strcmp(w->op, "depthwise_conv2d_nchw");
    if (depthwise) {
        K = groups = C;
    } else {
        ops_param(w, "K", &K);
        ops_param(w, "groups", &groups);
    }
    const te_tensor *y = w->outs[0];
    dnnl_dims_t xd = {N, C, H, W}, yd = {N, K, y->shape[2], y->shape[3]};
    dnnl_dims_t wd = {K, C, R, S}, wgd = {groups, K / groups, C / groups, R, S};
    dnnl_dims_t strides = {stride, stride}, dilates = {dil - 1, dil - 1}, pads = {pad, pad};
    dnnl_memory_desc_t x_md, w_md, y_md, x_any, w_any, y_any;
    bool grouped = groups > 1;
    TRY(dnnl_memory_desc_init_by_tag(&x_md, 4, xd, dnnl_f32, dnnl_nchw));
    TRY(dnnl_memory_desc_init_by_tag(&y_md, 4, yd, dnnl_f32, dnnl_nchw));
    TRY(dnnl_memory_desc_init_by_tag(&w_md, grouped ? 5 : 4, grouped ? wgd : wd, dnnl_f32,
                                     grouped ? dnnl_goihw : dnnl_oihw));
    TRY(dnnl_memory_desc_init_by_tag(&x_any, 4, xd, dnnl_f32, dnnl_format_tag_any));
    TRY(dnnl_memory_desc_init_by_tag(&y_any, 4, yd, dnnl_f32, dnnl_format_tag_any));
    TRY(dnnl_memory_desc_init_by_tag(&w_any, grouped ? 5 : 4, grouped ? wgd : wd, dnnl_f32,
                                     dnnl_format_tag_any));
    dnnl_convolution_desc_t cd;
    TRY(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                   dnnl_convolution_direct, &x_any, &w_any, NULL,
                                                   &y_any, strides, dilates, pads, pads));
    TRY(dnnl_engine_create(&p->eng, dnnl_cpu, 0));
    TRY(dnnl_stream_create(&p->stream, p->eng, dnnl_stream_default_flags));
    TRY(dnnl_primitive_desc_create(&pd, &cd, NULL, p->eng, NULL));
    const dnnl_memory_desc_t *xi = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *wi = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *yi = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    TRY(dnnl_primitive_create(&p->conv, pd));
    TRY(dnnl_memory_create(&p->x_user, &x_md, p->eng, ins[0]->data));
    TRY(dnnl_memory_create(&p->w_user, &w_md, p->eng, ins[1]->data));
    TRY(dnnl_memory_create(&p->y_user, &y_md, p->eng, out));
    TRY(dnnl_memory_create(&p->x_int, xi, p->eng, DNNL_MEMORY_ALLOCATE));
    TRY(dnnl_memory_create(&p->w_int, wi, p->eng, DNNL_MEMORY_ALLOCATE));
    TRY(dnnl_memory_create(&p->y_int, yi, p->eng, DNNL_MEMORY_ALLOCATE));
    TRY(make_reorder(p->eng, &x_md, xi, &p->src_reorder));
    TRY(make_reorder(p->eng, yi, &y_md, &p->dst_reorder));
    dnnl_primitive_t w_reorder = NULL;
    TRY(make_reorder(p->eng, &w_md, wi, &w_reorder));
    dnnl_status_t st = run2(p, w_reorder, p->w_user, p->w_int);
    dnnl_primitive_destroy(w_reorder);
    TRY(st);
    TRY(dnnl_stream_wait(p->stream));
    dnnl_primitive_desc_destroy(pd);
    return p;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    bench__dnnl_free(p);
    return NULL;
}

int bench__dnnl_run(dnnl_peer *p, bool internal) {
    if (!internal && run2(p, p->src_reorder, p->x_user, p->x_int) != dnnl_success) return -1;
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, p->x_int}, {DNNL_ARG_WEIGHTS, p->w_int}, {DNNL_ARG_DST, p->y_int}};
    if (dnnl_primitive_execute(p->conv, p->stream, 3, args) != dnnl_success) return -1;
    if (!internal && run2(p, p->dst_reorder, p->y_int, p->y_user) != dnnl_success) return -1;
    return dnnl_stream_wait(p->stream) == dnnl_success ? 0 : -1;
}

void bench__dnnl_free(dnnl_peer *p) {
    if (!p) return;
    dnnl_primitive_t prims[3] = {p->conv, p->src_reorder, p->dst_reorder};
    for (int i = 0; i < 3; ++i)
        if (prims[i]) dnnl_primitive_destroy(prims[i]);
    dnnl_memory_t mems[6] = {p->x_user, p->w_user, p->y_user, p->x_int, p->w_int, p->y_int};
    for (int i = 0; i < 6; ++i)
        if (mems[i]) dnnl_memory_destroy(mems[i]);
    if (p->stream) dnnl_stream_destroy(p->stream);
    if (p->eng) dnnl_engine_destroy(p->eng);
    free(p);
}
