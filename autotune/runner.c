/*
 * autotune/runner.c — the runner process: rebuilds the workload from its
 * key, replays a candidate's step log, compiles it, times it and checks it
 * against the reference, one request at a time. It is the loom-runner
 * program (tools/loom-runner), or the tuning program re-executed, both
 * through tune_runner_maybe_run (autotune/runner_exe.c says which), so it
 * starts clean: no threads and no LLVM state inherited from the tuner, and
 * a candidate that crashes or hangs takes only the runner down (TVM
 * auto_scheduler's LocalRunner does the same with a process pool).
 *
 * Protocol: length-prefixed JSON frames (tune__write_frame).
 *   {"cmd":"build","key","target","steps","hook"} -> {"ok":1,"build_s"} | {"error","msg"}
 *   {"cmd":"run","repeat","min_repeat_ms","slow_s","flush","hook"} -> {"ok":1,"lat":[...]} | {"error","msg"}
 *      (a first call slower than slow_s > 0 seconds is the only sample:
 *      a candidate far slower than the best is not worth the repeats;
 *      flush 1: on the CPU every timed call starts with its tensors
 *      evicted from the caches, tune_measure_options.cache_flush)
 *   {"cmd":"check","seed","hook"}                 -> {"ok":1,"mismatch":n} | {"error","msg"}
 *   {"cmd":"baseline","key","target","steps"}    -> as build, for the baseline program
 *      (kept across builds); a run with "base_repeat" > 0 then also times it
 *      after the candidate and replies "base":[...] beside "lat"
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <unistd.h>

#include "autotune/tune_internal.h"
#include "loom/codegen.h"
#include "loom/ops.h"
#include "loom/tuning_db.h"

int tune__write_frame(int fd, const char *data, size_t len) {
    uint32_t n = (uint32_t)len;
    unsigned char hdr[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                            (unsigned char)(n >> 8), (unsigned char)n};
    const char *parts[2] = {(const char *)hdr, data};
    size_t lens[2] = {4, len};
    for (int p = 0; p < 2; p++) {
        size_t off = 0;
        while (off < lens[p]) {
            ssize_t w = send(fd, parts[p] + off, lens[p] - off, MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return -1;
            off += (size_t)w;
        }
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t n) {
    size_t off = 0;
    while (off < n) {
        ssize_t r = read(fd, (char *)buf + off, n - off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        off += (size_t)r;
    }
    return 0;
}

char *tune__read_frame(int fd) {
    unsigned char hdr[4];
    if (read_all(fd, hdr, 4)) return NULL;
    uint32_t n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
    if (n > (64u << 20)) return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    if (read_all(fd, s, n)) {
        free(s);
        return NULL;
    }
    s[n] = 0;
    return s;
}

/* ---- the runner's state: one built candidate at a time ---- */

typedef struct {
    te_ctx *ctx;
    tune_workload w;
    rt_module *mod;
    DLTensor *args[32];
    int nargs;
    ops_workload *ow;
    /* Target cuda: the module takes kDLCUDA tensors on GPU 0 (dev,
     * mirrors of args); args stay the host side for data and checks. */
    bool cuda;
    DLTensor *dev[32];
    /* CPU: the module's function with its pre-computed constants
     * (tune_workload.constant_args), prepared from args' current values. */
    rt_prepared *prep;
    char *key; /* the workload key (owned) */
} built;

/* The reference output of the last workload and seed checked: a runner
 * checks every new best of one workload on the same inputs, and the naive
 * double-precision reference of a large workload costs seconds. */
typedef struct {
    char *key;
    uint64_t seed;
    int64_t n;
    double *want;
    double rtol, atol;
} ref_cache;

static void ref_cache_clear(ref_cache *c) {
    free(c->key);
    free(c->want);
    memset(c, 0, sizeof *c);
}

static void built_clear(built *b) {
    rt_prepared_free(b->prep);
    for (int i = 0; i < b->nargs; i++) rt_tensor_free(b->args[i]), rt_tensor_free(b->dev[i]);
    rt_module_free(b->mod);
    te_ctx_free(b->ctx);
    free(b->key);
    memset(b, 0, sizeof *b);
}

static int reply_error(int fd, int code, const char *msg) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "error", code);
    cJSON_AddStringToObject(o, "msg", msg ? msg : "");
    char *s = cJSON_PrintUnformatted(o);
    int rc = tune__write_frame(fd, s, strlen(s));
    free(s);
    cJSON_Delete(o);
    return rc;
}

static int reply(int fd, cJSON *o) {
    cJSON_AddNumberToObject(o, "ok", 1);
    char *s = cJSON_PrintUnformatted(o);
    int rc = tune__write_frame(fd, s, strlen(s));
    free(s);
    cJSON_Delete(o);
    return rc;
}

static uint64_t xs(uint64_t *s) { return tune_rand(s); }

/* Whether t holds floating-point elements rt_tensor_get/set read and write. */
static bool is_float(const DLTensor *t) {
    return t->dtype.lanes == 1 && (t->dtype.code == kDLFloat || t->dtype.code == kDLBfloat);
}

static void fill_inputs(built *b, uint64_t seed) {
    uint64_t st = seed ? seed : 1;
    int nin = b->w.nargs - b->w.nouts;
    for (int i = 0; i < nin; i++) {
        DLTensor *t = b->args[i];
        int64_t n = rt_tensor_numel(t);
        if (is_float(t)) {
            /* 16-bit too: zeros would let a wrong kernel pass the check */
            for (int64_t k = 0; k < n; k++)
                rt_tensor_set(t, k, (double)(xs(&st) >> 11) * 0x1p-52 - 1.0);
        } else {
            memset(t->data, 0, rt_tensor_nbytes(t));
        }
    }
}

/* Copies the host tensors to the GPU (inputs, and the output when
 * `with_out`, to carry its NaN poison). 0 or -1. */
static int upload(built *b, bool with_out) {
    int n = with_out ? b->nargs : b->w.nargs - b->w.nouts;
    for (int i = 0; i < n; i++)
        if (rt_tensor_copy(b->dev[i], b->args[i])) return -1;
    return 0;
}

/* (Re)computes the pre-computed constants from the inputs' current
 * values (after fill_inputs). 0 or -1 (rt_last_error). */
static int prepare(built *b) {
    if (b->cuda) return 0;
    rt_prepared_free(b->prep);
    b->prep = rt_prepare(b->mod, "default", b->nargs, b->args);
    return b->prep ? 0 : -1;
}

/* One call of the candidate on the host tensors. */
static int call_cpu(void *user) {
    built *b = user;
    return rt_prepared_call(b->prep, b->nargs, b->args);
}

/* Evicts everything a CPU call reads and writes from the caches (the
 * run request's "flush"; rt_timer_config.before_call): the arguments and
 * the pre-computed constants, which are what the kernel reads in place of
 * the weights it was prepared from. */
static void flush_cpu(void *user) {
    built *b = user;
    for (int i = 0; i < b->nargs; i++) rt_tensor_cache_flush(b->args[i]);
    rt_prepared_cache_flush(b->prep);
}

static void hang(void) {
    for (;;) pause();
}

static int do_build(built *b, int out, cJSON *req) {
    built_clear(b);
    const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(req, "key"));
    const char *target = cJSON_GetStringValue(cJSON_GetObjectItem(req, "target"));
    const char *steps = cJSON_GetStringValue(cJSON_GetObjectItem(req, "steps"));
    int hook = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(req, "hook"));
    double t0 = rt_now();
    b->ctx = te_ctx_new();
    if (!b->ctx || !key || !target || !steps) return reply_error(out, TUNE_ERR_UNKNOWN, "bad request");
    if (!(b->key = strdup(key))) return reply_error(out, TUNE_ERR_UNKNOWN, "out of memory");
    if (tune_build_workload(b->ctx, key, &b->w))
        return reply_error(out, TUNE_ERR_INSTANTIATION, te_ctx_errmsg(b->ctx));
    int ns;
    sch_step *st;
    if (tdb_steps_from_json(b->ctx, steps, &ns, &st))
        return reply_error(out, TUNE_ERR_INSTANTIATION, te_ctx_errmsg(b->ctx));
    sch_schedule *s = sch_replay(b->ctx, b->w.nouts, b->w.outs, ns, st);
    if (!s) return reply_error(out, TUNE_ERR_INSTANTIATION, te_ctx_errmsg(b->ctx));
    if (hook == TUNE_HOOK_BUILD_HANG) hang();
    if (hook == TUNE_HOOK_BUILD_CRASH) raise(SIGSEGV);
    b->cuda = tune_target_is_cuda(target);
    cg_build_options bo;
    memset(&bo, 0, sizeof bo);
    bo.constant_args = b->cuda ? 0 : b->w.constant_args;
    b->mod = cg_build(s, b->w.nargs, b->w.args, target, &bo);
    if (!b->mod)
        return reply_error(out, b->cuda ? TUNE_ERR_COMPILE_DEVICE : TUNE_ERR_COMPILE_HOST,
                           te_ctx_errmsg(b->ctx));
    if (b->w.nargs > 32) return reply_error(out, TUNE_ERR_UNKNOWN, "more than 32 arguments");
    for (int i = 0; i < b->w.nargs; i++) {
        te_tensor *t = b->w.args[i];
        b->args[i] = rt_tensor_alloc(cg_dl_type(t->dtype), t->ndim, t->shape);
        if (!b->args[i]) return reply_error(out, TUNE_ERR_UNKNOWN, rt_last_error());
        b->nargs = i + 1;
        if (b->cuda && !(b->dev[i] = rt_cuda_tensor_alloc(cg_dl_type(t->dtype), t->ndim, t->shape, 0)))
            return reply_error(out, TUNE_ERR_RUNTIME_DEVICE, rt_last_error());
    }
    fill_inputs(b, 1);
    if (b->cuda && upload(b, false))
        return reply_error(out, TUNE_ERR_RUNTIME_DEVICE, rt_last_error());
    if (prepare(b)) return reply_error(out, TUNE_ERR_RUNTIME_DEVICE, rt_last_error());
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "build_s", rt_now() - t0);
    return reply(out, o);
}

static void corrupt(built *b) {
    DLTensor *t = b->args[b->w.nargs - 1];
    if (is_float(t)) rt_tensor_set(t, 0, rt_tensor_get(t, 0) + 1.0);
}

/* The message of a failed call: the module's own (a kernel's error), else
 * the runtime's (a launch or driver error). */
static const char *run_errmsg(built *b) {
    return rt_module_errmsg(b->mod)[0] ? rt_module_errmsg(b->mod) : rt_last_error();
}

/* How far a sample set's median lies above its fastest sample (0: none). */
static double spread_of(const rt_timing *t) {
    return t->n > 0 && t->min > 0 ? t->median / t->min - 1 : 0;
}

/* Times a CPU candidate once it has settled (TUNE_WARM_MS of calls first)
 * and again while its samples' spread says the host moved
 * (TUNE_SPREAD_LIMIT, TUNE_SPREAD_RETRIES), keeping the steadiest set.
 * drift: the first set is replaced by a drifting one (TUNE_HOOK_DRIFT).
 * 0, or the failing call's code. */
static int time_cpu_settled(built *b, const rt_timer_config *cfg, bool drift, rt_timing *best) {
    double t0 = rt_now();
    for (int calls = 0; calls < 10000 && rt_now() - t0 < TUNE_WARM_MS * 1e-3; calls++)
        if (call_cpu(b)) return -1;
    for (int attempt = 0; attempt <= TUNE_SPREAD_RETRIES; attempt++) {
        rt_timing t = {.n = 0};
        if (rt_time(call_cpu, b, cfg, &t)) return -1;
        if (drift && attempt == 0) {
            for (int i = 0; i < t.n; i++) t.samples[i] = 1e-3 * (1 + 0.5 * i);
            t.min = t.samples[0];
            t.median = t.samples[t.n / 2];
        }
        if (attempt == 0 || spread_of(&t) < spread_of(best)) *best = t;
        if (spread_of(best) <= TUNE_SPREAD_LIMIT) break;
    }
    return 0;
}

static int do_run(built *b, built *base, int out, cJSON *req) {
    if (!b->mod) return reply_error(out, TUNE_ERR_UNKNOWN, "run before a successful build");
    int hook = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(req, "hook"));
    rt_timer_config cfg = rt_timer_default();
    cfg.repeat = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(req, "repeat"));
    if (cfg.repeat < 1) cfg.repeat = 1;
    if (cfg.repeat > 64) cfg.repeat = 64;
    cfg.min_repeat_ms = cJSON_GetNumberValue(cJSON_GetObjectItem(req, "min_repeat_ms"));
    if (!(cfg.min_repeat_ms >= 0)) cfg.min_repeat_ms = 0;
    bool flush = !b->cuda && cJSON_IsTrue(cJSON_GetObjectItem(req, "flush"));
    if (flush) cfg.before_call = flush_cpu, cfg.before_call_user = b;
    if (hook == TUNE_HOOK_SEGV) raise(SIGSEGV);
    if (hook == TUNE_HOOK_HANG) hang();
    /* The first call is the warm-up; a candidate far slower than the best
     * keeps one timed call as its only sample. On the CPU that is the
     * warm-up itself, or a second call when the warm-up was over the
     * limit. On the GPU the first call loads the module (tens of
     * milliseconds where the driver must compile PTX), so the sample is a
     * second call timed with CUDA events. */
    double slow_s = cJSON_GetNumberValue(cJSON_GetObjectItem(req, "slow_s"));
    rt_timing tm = {.n = 1};
    if (b->cuda) {
        rt_timer_config once = cfg;
        once.warmup = 1;
        once.repeat = 1;
        once.min_repeat_ms = 0;
        if (rt_cuda_time_call(b->mod, "default", b->nargs, b->dev, &once, &tm))
            return reply_error(out, TUNE_ERR_RUNTIME_DEVICE, run_errmsg(b));
    } else {
        /* A first call over the limit is timed again before the candidate
         * is judged slow: a cold first call (a restarted runner's page
         * faults, the thread pool waking) can take several times a small
         * kernel's time, and a good program must not keep that as its
         * only sample. */
        for (int call = 0; call < 2; call++) {
            if (flush) flush_cpu(b);
            double t0 = rt_now();
            if (call_cpu(b)) return reply_error(out, TUNE_ERR_RUNTIME_DEVICE, run_errmsg(b));
            tm.samples[0] = rt_now() - t0;
            if (!(slow_s > 0 && tm.samples[0] > slow_s)) break;
        }
    }
    cfg.warmup = 0;
    bool slow = slow_s > 0 && tm.samples[0] > slow_s;
    /* On the GPU: CUDA events around the launches. */
    if (!slow && b->cuda && rt_cuda_time_call(b->mod, "default", b->nargs, b->dev, &cfg, &tm))
        return reply_error(out, TUNE_ERR_RUNTIME_DEVICE, run_errmsg(b));
    if (!slow && !b->cuda && time_cpu_settled(b, &cfg, hook == TUNE_HOOK_DRIFT, &tm))
        return reply_error(out, TUNE_ERR_RUNTIME_DEVICE, run_errmsg(b));
    /* The baseline right after, under the same load (a warm-up call
     * first: the candidate left the caches warm for itself). */
    int base_repeat = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(req, "base_repeat"));
    rt_timing rtm = {.n = 0};
    if (!slow && !b->cuda && base_repeat > 0 && base->mod) {
        rt_timer_config rc = cfg;
        rc.warmup = 1;
        rc.repeat = base_repeat < 64 ? base_repeat : 64;
        if (flush) rc.before_call_user = base;
        if (rt_time(call_cpu, base, &rc, &rtm)) rtm.n = 0;
    }
    if (hook == TUNE_HOOK_BASELINE_FULL_SPEED || hook == TUNE_HOOK_BASELINE_HALF_SPEED) {
        for (int i = 0; i < tm.n && i < 64; i++) tm.samples[i] = 3e-3;
        for (int i = 0; i < rtm.n && i < 64; i++)
            rtm.samples[i] = hook == TUNE_HOOK_BASELINE_HALF_SPEED ? 2e-3 : 1e-3;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *lat = cJSON_AddArrayToObject(o, "lat");
    for (int i = 0; i < tm.n && i < 64; i++) cJSON_AddItemToArray(lat, cJSON_CreateNumber(tm.samples[i]));
    if (rtm.n > 0) {
        cJSON *rl = cJSON_AddArrayToObject(o, "base");
        for (int i = 0; i < rtm.n && i < 64; i++)
            cJSON_AddItemToArray(rl, cJSON_CreateNumber(rtm.samples[i]));
    }
    return reply(out, o);
}

/* The summed reduction lengths along the longest chain of stages that
 * ends at a tensor: a fused group's output (conv -> bias -> relu) sums
 * nothing itself but carries its anchor's rounding, and a schedule that
 * reorders the anchor's reduction differs from the float32 reference by
 * about sqrt(length) ulps of the partial sums. Memoised per tensor (a
 * group shares producers); past the memo's size a tensor is recomputed. */
typedef struct {
    const te_tensor *t[64];
    int64_t len[64];
    int n;
} red_chain;

typedef struct {
    red_chain *memo;
    int64_t longest;
} red_walk;

static int64_t chain_reduction(const te_tensor *t, red_chain *memo);

static void red_visit(const te_expr *e, void *user) {
    red_walk *w = user;
    if (e->kind == TE_READ) {
        int64_t l = chain_reduction(e->u.read.tensor, w->memo);
        if (l > w->longest) w->longest = l;
    }
    te_expr_visit_children(e, red_visit, user);
}

static int64_t chain_reduction(const te_tensor *t, red_chain *memo) {
    if (!t->body) return 0;
    for (int i = 0; i < memo->n; i++)
        if (memo->t[i] == t) return memo->len[i];
    int64_t own = 1;
    for (int r = 0; r < nreduce_of(t); r++) own *= t->body->u.reduce.axes[r]->u.var.extent;
    red_walk w = {memo, 0};
    red_visit(t->body, &w);
    int64_t len = (nreduce_of(t) ? own : 0) + w.longest;
    if (memo->n < 64) {
        memo->t[memo->n] = t;
        memo->len[memo->n++] = len;
    }
    return len;
}

/* Fills c with the reference output of b's workload on its current
 * inputs: the ops registry's double-precision one for ops workloads, else
 * the unscheduled computation compiled as is. 0, or -1 with msg. */
static int compute_reference(built *b, ref_cache *c, char *msg, size_t cap) {
    DLTensor *o = b->args[b->w.nargs - 1];
    int64_t n = rt_tensor_numel(o);
    double *want = malloc(sizeof(double) * (size_t)n);
    if (!want) {
        snprintf(msg, cap, "out of memory for the reference");
        return -1;
    }
    double rtol = 1e-4, atol = 1e-4;
    int rc = -1;
    if (b->ow) {
        double *outs[1] = {want};
        if (ops_reference(b->ow, b->args, outs) == 0) {
            ops_tolerance(b->ow, &rtol, &atol);
            rc = 0;
        } else {
            snprintf(msg, cap, "reference failed: %s", te_ctx_errmsg(b->ctx));
        }
    } else {
        sch_schedule *s = sch_create(b->ctx, b->w.nouts, b->w.outs);
        rt_module *ref = s ? cg_build(s, b->w.nargs, b->w.args, "llvm", NULL) : NULL;
        DLTensor *ro = rt_tensor_alloc(o->dtype, o->ndim, o->shape);
        DLTensor *rargs[32];
        for (int i = 0; i < b->nargs; i++) rargs[i] = b->args[i];
        rargs[b->nargs - 1] = ro;
        if (ref && ro && rt_call(ref, "default", b->nargs, rargs) == 0) {
            for (int64_t k = 0; k < n; k++) want[k] = rt_tensor_get(ro, k);
            red_chain memo = {.n = 0};
            int64_t red = chain_reduction(b->w.outs[0], &memo);
            rtol = 1e-4;
            atol = 1e-5 * sqrt((double)(red > 1 ? red : 1)) + 1e-6;
            rc = 0;
        } else {
            snprintf(msg, cap, "reference failed: %s", te_ctx_errmsg(b->ctx));
        }
        rt_tensor_free(ro);
        rt_module_free(ref);
    }
    if (rc) {
        free(want);
        return -1;
    }
    c->want = want;
    c->n = n;
    c->rtol = rtol;
    c->atol = atol;
    return 0;
}

/* Runs the candidate on the seed's inputs (output poisoned with NaN) and
 * counts the output elements that differ from the reference (cached in c
 * per workload and seed). -1 with msg when it cannot run. */
static int64_t check_against_reference(built *b, ref_cache *c, uint64_t seed, int hook,
                                       char *msg, size_t cap) {
    fill_inputs(b, seed);
    DLTensor *o = b->args[b->w.nargs - 1];
    int64_t n = rt_tensor_numel(o);
    if (!(c->want && c->seed == seed && c->n == n && c->key && !strcmp(c->key, b->key))) {
        ref_cache_clear(c);
        if (compute_reference(b, c, msg, cap)) return -1;
        c->seed = seed;
        if (!(c->key = strdup(b->key))) {
            ref_cache_clear(c);
            snprintf(msg, cap, "out of memory");
            return -1;
        }
    }
    for (int64_t k = 0; k < n; k++) rt_tensor_set(o, k, NAN);
    if (b->cuda) {
        /* Run on the GPU, compare on the host. */
        if (upload(b, true) || rt_call(b->mod, "default", b->nargs, b->dev) ||
            rt_tensor_copy(o, b->dev[b->w.nargs - 1])) {
            snprintf(msg, cap, "%s", run_errmsg(b));
            return -1;
        }
    } else if (prepare(b) || call_cpu(b)) {
        snprintf(msg, cap, "%s", rt_last_error());
        return -1;
    }
    if (hook == TUNE_HOOK_WRONG) corrupt(b);
    int64_t bad = 0;
    for (int64_t k = 0; k < n; k++) {
        double g = rt_tensor_get(o, k);
        if (!(fabs(g - c->want[k]) <= c->atol + c->rtol * fabs(c->want[k]))) {
            if (bad == 0)
                snprintf(msg, cap, "output element %lld is %g, the reference %g", (long long)k, g,
                         c->want[k]);
            bad++;
        }
    }
    fill_inputs(b, 1);
    if (b->cuda ? upload(b, false) : prepare(b)) {
        snprintf(msg, cap, "%s", rt_last_error());
        return -1;
    }
    return bad;
}

static int do_check(built *b, ref_cache *c, int out, cJSON *req) {
    if (!b->mod) return reply_error(out, TUNE_ERR_UNKNOWN, "check before a successful build");
    int hook = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(req, "hook"));
    uint64_t seed = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(req, "seed"));
    char msg[256] = "";
    int64_t bad = check_against_reference(b, c, seed, hook, msg, sizeof msg);
    if (bad < 0) return reply_error(out, TUNE_ERR_RUNTIME_DEVICE, msg);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "mismatch", (double)bad);
    cJSON_AddStringToObject(o, "msg", msg);
    return reply(out, o);
}

int tune__runner_serve(int in, int out, const char *plugin_error) {
    built b, base; /* the candidate; the baseline program */
    memset(&b, 0, sizeof b);
    memset(&base, 0, sizeof base);
    ref_cache cache;
    memset(&cache, 0, sizeof cache);
    for (;;) {
        char *s = tune__read_frame(in);
        if (!s) break;
        cJSON *req = cJSON_Parse(s);
        free(s);
        const char *cmd = req ? cJSON_GetStringValue(cJSON_GetObjectItem(req, "cmd")) : NULL;
        int rc;
        if (!cmd) rc = reply_error(out, TUNE_ERR_UNKNOWN, "bad request");
        else if (plugin_error && (!strcmp(cmd, "build") || !strcmp(cmd, "baseline")))
            rc = reply_error(out, TUNE_ERR_INSTANTIATION, plugin_error);
        else if (!strcmp(cmd, "build")) {
            rc = do_build(&b, out, req);
            if (rc == 0 && b.mod) {
                const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(req, "key"));
                te_ctx_clear_error(b.ctx);
                /* NULL for registered builders: they are checked against
                 * their unscheduled computation instead. */
                b.ow = ops_from_key(b.ctx, key);
            }
        } else if (!strcmp(cmd, "baseline")) rc = do_build(&base, out, req);
        else if (!strcmp(cmd, "run")) rc = do_run(&b, &base, out, req);
        else if (!strcmp(cmd, "check")) rc = do_check(&b, &cache, out, req);
        else rc = reply_error(out, TUNE_ERR_UNKNOWN, "unknown command");
        cJSON_Delete(req);
        if (rc) break;
    }
    built_clear(&b);
    built_clear(&base);
    ref_cache_clear(&cache);
    return 0;
}

static bool serves_runners;

bool tune__host_serves_runners(void) { return serves_runners; }

void tune_runner_maybe_run(int argc, char **argv) {
    if (argc < 2 || !argv || !argv[1] || strcmp(argv[1], TUNE_RUNNER_FLAG)) {
        serves_runners = true;
        return;
    }
#ifdef __linux__
    /* A tuner killed outright (SIGKILL, SIGTERM) takes its runners along,
     * even one stuck in a hanging candidate. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) _exit(0);
#endif
    /* Replies go to the original stdout (a socket); anything else the
     * process prints goes to stderr. */
    int out = dup(1);
    dup2(2, 1);
    /* Ctrl-C at the terminal reaches the whole process group: the tuner
     * decides when its runners stop. */
    signal(SIGINT, SIG_IGN);
    /* The tuning process's plugins (tune_load_plugin): their builders
     * must be registered here too. */
    char *plugin_error = tune__load_env_plugins();
    tune__runner_serve(0, out, plugin_error);
    free(plugin_error);
    _exit(0);
}
