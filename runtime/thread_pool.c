/*
 * runtime/thread_pool.c — the persistent pool behind `parallel` loops.
 *
 * One job at a time: a caller posts (body, env, n, chunks) and bumps a
 * generation counter under the pool mutex; each worker wakes on the
 * condition variable, runs its chunk k = [k*n/T, (k+1)*n/T) and counts
 * down `pending`; the caller runs chunk 0 itself and waits for the count to
 * reach zero. Callers from different threads are serialised by call_mu
 * (the pool has one job slot). Bodies run with a thread-local flag set so
 * that a nested rt_parallel_for runs serially instead of deadlocking on the
 * pool (TVM's threading_backend does the same for nested parallel regions).
 * Workers are created lazily on the first parallel call.
 *
 * Waiting spins before it sleeps: a worker that finished its chunk, and
 * the caller waiting for the workers, poll for up to LOOM_SPIN_US
 * microseconds (default 1000; 0: sleep at once) before blocking on the
 * condition variable. A model runs dozens of parallel loops a millisecond
 * apart, and waking a thread that sleeps in a futex costs tens of
 * microseconds, more in a VM (session 38: MobileNetV2 on 2 threads no
 * faster than on 1, its small kernels 5-50x slower). GNU OpenMP
 * (GOMP_SPINCOUNT), Intel's (KMP_BLOCKTIME), TVM's thread pool and ONNX
 * Runtime's all spin before they block, for the same reason. Without
 * LOOM_SPIN_US, a pool with more threads than the CPUs the process may run
 * on does not spin: a spinning thread would hold the CPU that the thread
 * it waits for needs (MobileNetV2, 2 threads on one CPU: 118 ms spinning,
 * 7 ms not; GNU OpenMP likewise cuts its spin count when threads
 * outnumber CPUs).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/rt_internal.h"

typedef struct {
    pthread_t tid;
    int index;          /* chunk this worker runs: 1..nworkers */
    uint64_t start_gen; /* generation when created: later ones are jobs */
} rt_worker;

static struct {
    pthread_mutex_t call_mu; /* one parallel_for (or resize) at a time */
    pthread_mutex_t mu;      /* guards everything below */
    pthread_cond_t work_cv;  /* workers: a new generation or stop */
    pthread_cond_t done_cv;  /* caller: pending reached 0 */
    int nthreads;            /* configured size incl. the caller; 0: unset */
    int nworkers;            /* started workers (nthreads - 1 once started) */
    rt_worker *workers;
    _Atomic bool stop;
    _Atomic uint64_t generation; /* written under mu; read by spinning waiters without it */
    /* the current job */
    rt_parallel_body body;
    void *env;
    int64_t n;
    int nchunks;
    _Atomic int pending; /* written under mu; read by the spinning caller */
    int err_chunk; /* lowest chunk index that failed; nchunks: none */
    int err_code;
    char err_msg[1024]; /* rt_last_error() of the thread that ran err_chunk */
} pool = {
    .call_mu = PTHREAD_MUTEX_INITIALIZER,
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .work_cv = PTHREAD_COND_INITIALIZER,
    .done_cv = PTHREAD_COND_INITIALIZER,
};

static _Thread_local bool in_parallel;

static double spin_budget_s; /* set with the workers, under call_mu */

int rt_available_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    return rt_num_cores();
}

/* Environment variable `name` as a whole number in [lo, hi]: 1 and *out,
 * or 0 when unset or empty. A value that is not one is not applied, and
 * the first time (*warned: once per variable) stderr says so, naming it,
 * the rule and what is used instead (OpenMP runtimes warn likewise on a
 * bad OMP_NUM_THREADS): a silently ignored setting reads as one that
 * took effect. */
static atomic_bool warned_spin, warned_threads;
static int env_whole(const char *name, long lo, long hi, const char *instead, atomic_bool *warned,
                     long *out) {
    const char *s = getenv(name);
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end == '\0' && errno == 0 && v >= lo && v <= hi) {
        *out = v;
        return 1;
    }
    if (!atomic_exchange(warned, true))
        fprintf(stderr, "loom: %s='%s' is not a whole number from %ld to %ld: ignored, %s\n",
                name, s, lo, hi, instead);
    return 0;
}

/* Seconds a waiter polls before it sleeps, for a pool of nthreads. */
static double spin_budget(int nthreads) {
    long v;
    if (env_whole("LOOM_SPIN_US", 0, 1000000, "the default spin is used", &warned_spin, &v))
        return (double)v * 1e-6;
    return nthreads <= rt_available_cpus() ? 1e-3 : 0;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* A worker's wait is over when a job after `seen` was posted or the pool
 * stops; the caller's (seen unused) when every worker counted down. */
static bool job_posted(uint64_t seen) {
    return atomic_load_explicit(&pool.generation, memory_order_acquire) != seen ||
           atomic_load(&pool.stop);
}
static bool workers_done(uint64_t seen) {
    (void)seen;
    return atomic_load_explicit(&pool.pending, memory_order_acquire) <= 0;
}

/* Polls ready(seen) for up to budget seconds (the clock read every 64
 * polls); the caller then takes the mutex and sleeps if still needed. */
static void spin_until(bool (*ready)(uint64_t), uint64_t seen, double budget) {
    if (budget <= 0) return;
    double end = rt_now() + budget;
    for (unsigned i = 1; !ready(seen); i++) {
        cpu_relax();
        if (i % 64 == 0 && rt_now() > end) return;
    }
}

static int64_t chunk_begin(int64_t n, int T, int k) {
    /* k*n/T without overflow for any int64 n and T <= INT_MAX. */
    return (int64_t)(((__int128)n * k) / T);
}

/* pool.mu held; called on the thread that ran the chunk, so that its
 * thread-local message can reach the caller's thread. */
static void record_result(int chunk, int rc) {
    if (rc != 0 && chunk < pool.err_chunk) {
        pool.err_chunk = chunk;
        pool.err_code = rc;
        snprintf(pool.err_msg, sizeof pool.err_msg, "%s", rt_last_error());
    }
}

static void *worker_main(void *arg) {
    rt_worker *w = arg;
    in_parallel = true;
    /* Not pool.generation: a job may be posted before this thread runs. */
    uint64_t seen = w->start_gen;
    double budget = spin_budget_s;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        if (pool.generation == seen && !pool.stop) {
            pthread_mutex_unlock(&pool.mu);
            spin_until(job_posted, seen, budget);
            pthread_mutex_lock(&pool.mu);
        }
        while (pool.generation == seen && !pool.stop) pthread_cond_wait(&pool.work_cv, &pool.mu);
        if (pool.stop) break;
        seen = pool.generation;
        if (w->index >= pool.nchunks) continue;
        rt_parallel_body body = pool.body;
        void *env = pool.env;
        int64_t n = pool.n;
        int T = pool.nchunks;
        pthread_mutex_unlock(&pool.mu);
        int rc = body(chunk_begin(n, T, w->index), chunk_begin(n, T, w->index + 1), env);
        pthread_mutex_lock(&pool.mu);
        record_result(w->index, rc);
        if (--pool.pending == 0) pthread_cond_signal(&pool.done_cv);
    }
    pthread_mutex_unlock(&pool.mu);
    return NULL;
}

static int default_threads(void) {
    long v;
    if (env_whole("LOOM_NUM_THREADS", 1, 4096, "one thread per online core is used",
                  &warned_threads, &v))
        return (int)v;
    return rt_num_cores();
}

int rt_num_cores(void) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c >= 1 ? (int)(c > 4096 ? 4096 : c) : 1;
}

/* call_mu held. */
static void stop_workers(void) {
    if (pool.nworkers == 0) return;
    pthread_mutex_lock(&pool.mu);
    pool.stop = true;
    pthread_cond_broadcast(&pool.work_cv);
    pthread_mutex_unlock(&pool.mu);
    for (int i = 0; i < pool.nworkers; ++i) pthread_join(pool.workers[i].tid, NULL);
    free(pool.workers);
    pool.workers = NULL;
    pool.nworkers = 0;
    pool.stop = false;
}

/* A forked child (the tuner's runner processes) has none of the parent's
 * workers and may have inherited a locked mutex: start from scratch. */
static void atfork_child(void) {
    pthread_mutex_init(&pool.call_mu, NULL);
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.work_cv, NULL);
    pthread_cond_init(&pool.done_cv, NULL);
    free(pool.workers);
    pool.workers = NULL;
    pool.nworkers = 0;
    pool.stop = false;
    in_parallel = false;
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void) { pthread_atfork(NULL, NULL, atfork_child); }

/* call_mu held. Starts nthreads - 1 workers; on failure the pool keeps the
 * workers it got (fewer chunks run in parallel, results stay correct). */
static void start_workers(void) {
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&pool.mu);
    if (pool.nthreads == 0) pool.nthreads = default_threads();
    uint64_t gen = pool.generation;
    pthread_mutex_unlock(&pool.mu);
    int want = pool.nthreads - 1;
    if (pool.nworkers == want) return;
    stop_workers();
    if (want == 0) return;
    spin_budget_s = spin_budget(pool.nthreads); /* before the workers read it */
    pool.workers = calloc((size_t)want, sizeof *pool.workers);
    if (!pool.workers) return;
    for (int i = 0; i < want; ++i) {
        pool.workers[i].index = i + 1;
        pool.workers[i].start_gen = gen;
        if (pthread_create(&pool.workers[i].tid, NULL, worker_main, &pool.workers[i]) != 0) break;
        pool.nworkers = i + 1;
    }
}

int rt_parallel_for(int64_t n, rt_parallel_body body, void *env) {
    if (!body) return rt_set_error("rt_parallel_for: body is NULL");
    if (n <= 0) return 0;
    if (in_parallel) return body(0, n, env);

    pthread_mutex_lock(&pool.call_mu);
    start_workers();
    int T = pool.nworkers + 1;
    if ((int64_t)T > n) T = (int)n;
    in_parallel = true;
    if (T == 1) {
        int rc = body(0, n, env);
        in_parallel = false;
        pthread_mutex_unlock(&pool.call_mu);
        return rc;
    }
    pthread_mutex_lock(&pool.mu);
    pool.body = body;
    pool.env = env;
    pool.n = n;
    pool.nchunks = T;
    pool.pending = T - 1;
    pool.err_chunk = T;
    pool.err_code = 0;
    pool.generation++;
    pthread_cond_broadcast(&pool.work_cv);
    pthread_mutex_unlock(&pool.mu);

    int rc0 = body(0, chunk_begin(n, T, 1), env);

    spin_until(workers_done, 0, spin_budget_s);
    pthread_mutex_lock(&pool.mu);
    record_result(0, rc0);
    while (pool.pending > 0) pthread_cond_wait(&pool.done_cv, &pool.mu);
    int rc = pool.err_code;
    if (rc != 0) rt_set_error("%s", pool.err_msg);
    pthread_mutex_unlock(&pool.mu);
    in_parallel = false;
    pthread_mutex_unlock(&pool.call_mu);
    return rc;
}

int rt_num_threads(void) {
    pthread_mutex_lock(&pool.mu);
    if (pool.nthreads == 0) pool.nthreads = default_threads();
    int n = pool.nthreads;
    pthread_mutex_unlock(&pool.mu);
    return n;
}

int rt_set_num_threads(int n) {
    if (n < 1) return rt_set_error("rt_set_num_threads: %d threads; the pool needs at least 1", n);
    if (in_parallel)
        return rt_set_error("rt_set_num_threads: cannot resize the pool from inside a parallel loop");
    pthread_mutex_lock(&pool.call_mu);
    stop_workers();
    pthread_mutex_lock(&pool.mu);
    pool.nthreads = n;
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.call_mu); /* workers restart on the next call */
    return 0;
}
