/*
 * bench/suite/peak.c — the machine's fp32 peak, measured: each thread runs
 * independent FMA chains (enough of them to cover the FMA latency times
 * the number of FMA ports) on the widest vector unit the CPU has.
 */
#include <immintrin.h>
#include <pthread.h>

#include "bench.h"

/* About 55 ms a probe at 117 GFLOP/s (AVX-512, one core). Probes of 5 ms
 * (as before) are within reach of a scheduler tick or a clock still
 * ramping up: the suite once reported a peak of 47.6 GFLOP/s there. */
enum { ITERS = 200000000 / 16 };

__attribute__((target("avx512f"))) static double fma_avx512(void) {
    __m512 acc[16], x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < ITERS; ++it)
        for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
    float sink = 0;
    for (int i = 0; i < 16; ++i) sink += _mm512_reduce_add_ps(acc[i]);
    __asm__ volatile("" : : "x"(sink));
    return 2.0 * 16 * 16 * (double)ITERS;
}

__attribute__((target("avx2,fma"))) static double fma_avx2(void) {
    __m256 acc[12], x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps((float)i);
    for (long it = 0; it < ITERS; ++it)
        for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
    __m256 s = acc[0];
    for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
    float out[8];
    _mm256_storeu_ps(out, s);
    __asm__ volatile("" : : "x"(out[0]));
    return 2.0 * 12 * 8 * (double)ITERS;
}

static double fma_sse(void) {
    __m128 acc[12], x = _mm_set1_ps(0.999999f), y = _mm_set1_ps(1e-7f);
    for (int i = 0; i < 12; ++i) acc[i] = _mm_set1_ps((float)i);
    for (long it = 0; it < ITERS; ++it)
        for (int i = 0; i < 12; ++i) acc[i] = _mm_add_ps(_mm_mul_ps(acc[i], x), y);
    float out[4];
    _mm_storeu_ps(out, acc[0]);
    __asm__ volatile("" : : "x"(out[0]));
    return 2.0 * 12 * 4 * (double)ITERS;
}

/* 16 chains of VDPBF16PS: each instruction 16 lanes x 2 pairs' products
 * and sums (64 FLOP). The values stay finite: x * y pairs add 2e-7. */
__attribute__((target("avx512f,avx512bf16"))) static double dot_bf16_avx512(void) {
    __m512 acc[16];
    __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
    __m512bh y = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-4f), _mm512_set1_ps(1e-4f));
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < ITERS; ++it)
        for (int i = 0; i < 16; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], x, y);
    float sink = 0;
    for (int i = 0; i < 16; ++i) sink += _mm512_reduce_add_ps(acc[i]);
    __asm__ volatile("" : : "x"(sink));
    return 4.0 * 16 * 16 * (double)ITERS;
}

typedef struct {
    double flops, seconds;
    bool bf16;
} peak_job;

static void *peak_thread(void *arg) {
    peak_job *j = arg;
    double t0 = rt_now();
    if (j->bf16) j->flops = dot_bf16_avx512();
    else if (__builtin_cpu_supports("avx512f")) j->flops = fma_avx512();
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) j->flops = fma_avx2();
    else j->flops = fma_sse();
    j->seconds = rt_now() - t0;
    return NULL;
}

static double probe_peak(int threads, bool bf16) {
    if (threads < 1) threads = 1;
    if (threads > 256) threads = 256;
    double best = 0;
    /* Probe 0 is a warm-up (clock ramp-up, pages, thread start). */
    for (int rep = 0; rep < 6; ++rep) {
        pthread_t tid[256];
        peak_job jobs[256];
        int started = 0;
        for (int t = 0; t < threads; ++t) jobs[t].bf16 = bf16;
        for (int t = 1; t < threads; ++t)
            if (!pthread_create(&tid[t], NULL, peak_thread, &jobs[t])) started = t;
        peak_thread(&jobs[0]);
        double sum = jobs[0].flops / jobs[0].seconds;
        for (int t = 1; t <= started; ++t) {
            pthread_join(tid[t], NULL);
            sum += jobs[t].flops / jobs[t].seconds;
        }
        if (rep > 0 && sum > best) best = sum;
    }
    return best;
}

double bench_fp32_peak(int threads) { return probe_peak(threads, false); }

double bench_bf16_dot_peak(int threads) {
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16")) return 0;
    return probe_peak(threads, true);
}
