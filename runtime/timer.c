/*
 * runtime/timer.c — wall-clock timing of a callable, the way TVM's
 * time_evaluator does it: warm-up calls, then `repeat` samples, each
 * repeating the call until it lasts at least min_repeat_ms (so short
 * kernels are not dominated by clock resolution) and reporting the
 * per-call mean; an optional cache flush before every sample, or a hook
 * before every call (rt_timer_config.before_call: the operands' lines
 * flushed, rt_tensor_cache_flush), measures cold-cache behaviour.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt_internal.h"

#define RT_FLUSH_BYTES (64u << 20)

double rt_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

rt_timer_config rt_timer_default(void) {
    rt_timer_config c;
    memset(&c, 0, sizeof c);
    c.warmup = 1;
    c.repeat = 5;
    c.min_repeat_ms = 0;
    c.flush_cache = false;
    return c;
}

static unsigned char *flush_buf;
static pthread_once_t flush_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t flush_mu = PTHREAD_MUTEX_INITIALIZER;
static void flush_init(void) { flush_buf = malloc(RT_FLUSH_BYTES); }

/* Evicts the caller's data from the caches by writing a buffer larger than
 * any last-level cache. Serialised: the buffer is shared. */
void rt__flush_all_caches(void) {
    pthread_once(&flush_once, flush_init);
    if (!flush_buf) return;
    static unsigned char tick;
    pthread_mutex_lock(&flush_mu);
    memset(flush_buf, ++tick, RT_FLUSH_BYTES);
    pthread_mutex_unlock(&flush_mu);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int rt_time(int (*fn)(void *user), void *user, const rt_timer_config *cfg, rt_timing *out) {
    if (!fn || !out) return rt_set_error("rt_time: fn and out must be non-NULL");
    rt_timer_config c = cfg ? *cfg : rt_timer_default();
    if (c.repeat < 1) c.repeat = 1;
    if (c.warmup < 0) c.warmup = 0;
    memset(out, 0, sizeof *out);

    double last = 0;
    for (int i = 0; i < c.warmup; ++i) {
        /* With a hook, a sample's length counts the hooks too (below). */
        double t0 = rt_now();
        if (c.before_call) c.before_call(c.before_call_user);
        int rc = fn(user);
        last = rt_now() - t0;
        if (rc) return rc;
    }
    double min_s = c.min_repeat_ms > 0 ? c.min_repeat_ms * 1e-3 : 0;
    int64_t k = 1;
    if (min_s > 0 && last > 0) {
        double est = ceil(min_s / last);
        k = est > 1e9 ? 1000000000 : (int64_t)est;
        if (k < 1) k = 1;
    }

    int n = c.repeat < 64 ? c.repeat : 64;
    double *all = malloc((size_t)c.repeat * sizeof *all);
    if (!all) return rt_set_error("rt_time: out of memory for %d samples", c.repeat);
    for (int s = 0; s < c.repeat; ++s) {
        for (;;) {
            if (c.flush_cache) rt__flush_all_caches();
            double el = 0, start = rt_now();
            for (int64_t r = 0; r < k; ++r) {
                /* The hook's own time stays outside the sample. */
                if (c.before_call) c.before_call(c.before_call_user);
                double t0 = c.before_call ? rt_now() : start;
                int rc = fn(user);
                if (c.before_call) el += rt_now() - t0;
                if (rc) {
                    free(all);
                    return rc;
                }
            }
            /* The sample's length, against min_repeat_ms: with a hook,
             * its wall time, hooks included, so that a hook far slower
             * than the call cannot multiply the calls without bound. */
            double span = rt_now() - start;
            if (!c.before_call) el = span;
            if (span >= min_s || k >= 1000000000) {
                all[s] = el / (double)k;
                break;
            }
            /* Too short: grow k towards the target (at least double) and redo. */
            double grow = span > 0 ? 1.2 * min_s / span : 16.0;
            if (grow < 2) grow = 2;
            double nk = (double)k * grow;
            k = nk > 1e9 ? 1000000000 : (int64_t)nk;
        }
    }

    out->n = n;
    memcpy(out->samples, all, (size_t)n * sizeof(double));
    double sum = 0;
    for (int s = 0; s < c.repeat; ++s) sum += all[s];
    out->mean = sum / c.repeat;
    double var = 0;
    for (int s = 0; s < c.repeat; ++s) var += (all[s] - out->mean) * (all[s] - out->mean);
    out->stddev = c.repeat > 1 ? sqrt(var / (c.repeat - 1)) : 0;
    qsort(all, (size_t)c.repeat, sizeof *all, cmp_double);
    out->min = all[0];
    out->max = all[c.repeat - 1];
    out->median = c.repeat % 2 ? all[c.repeat / 2]
                               : 0.5 * (all[c.repeat / 2 - 1] + all[c.repeat / 2]);
    free(all);
    return 0;
}

typedef struct {
    rt_module *m;
    const char *name;
    int nargs;
    DLTensor *const *args;
} rt_call_closure;

static int call_once(void *user) {
    rt_call_closure *c = user;
    return rt_call(c->m, c->name, c->nargs, c->args);
}

int rt_time_call(rt_module *m, const char *name, int nargs, DLTensor *const *args,
                 const rt_timer_config *cfg, rt_timing *out) {
    rt_call_closure c = {m, name, nargs, args};
    return rt_time(call_once, &c, cfg, out);
}
