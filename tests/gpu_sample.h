/*
 * tests/gpu_sample.h — random GPU programs of one workload, for the GPU
 * autotuning tests: the workload, its GPU sketch and the GPU pipeline
 * options (with the verifier's limits), then programs drawn at random,
 * applied, lowered, built with NVRTC and checked on the GPU where one is
 * present. Every failure fails the running test with the workload key,
 * the program's number and the message.
 */
#ifndef LOOM_TEST_GPU_SAMPLE_H
#define LOOM_TEST_GPU_SAMPLE_H

#include "loom/autotune.h"
#include "loom/ops.h"

typedef struct {
    const char *key;
    te_ctx *ctx;
    tune_workload w;
    tune_sketch sk;
    ops_workload *ow;         /* the reference for gs_check */
    tir_pipeline_options po;  /* the GPU pipeline and its verifier limits */
    uint64_t rng;
} gs_sampler;

/* Builds workload `key` and its one GPU sketch; random draws from seed. */
void gs_open(gs_sampler *g, const char *key, uint64_t seed);
void gs_close(gs_sampler *g);
/* Program k: drawn, applied and lowered (not yet through the pipeline);
 * the schedule, its lowered function in *f. */
sch_schedule *gs_draw(gs_sampler *g, int k, tir_func **f);
/* s built for CUDA (NVRTC); `what` says what was expected of it. */
rt_module *gs_build(gs_sampler *g, sch_schedule *s, int k, const char *what);
/* Where a GPU is present, runs m on fresh random data and compares it with
 * the reference: 1 when it ran, 0 without a GPU. */
int gs_check(gs_sampler *g, rt_module *m, sch_schedule *s, int k);

#endif
