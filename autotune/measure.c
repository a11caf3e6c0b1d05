/*
 * autotune/measure.c — the tuner's side of measurement: a pool of runner
 * processes (loom-runner, or this program re-executed, with
 * TUNE_RUNNER_FLAG: autotune/runner_exe.c; started through posix_spawn,
 * which is safe from a threaded process, unlike a bare fork of a process
 * holding LLVM and thread-pool locks). Each runner holds one
 * built candidate. Builds are handed to the runners as earlier builds
 * finish, `threads` at a time (parallel compilation, one LLVM context per
 * process); then the built candidates run one at a time so that timings
 * do not disturb each other. A runner that dies (signal) or passes its
 * deadline is killed, reaped and restarted; its candidate is recorded
 * with an error code.
 *
 * Why more runners than parallel builds (on the CPU): build times are
 * heavy-tailed (a fully unrolled tile can take LLVM's back end 10 s where
 * most candidates take 0.1 to 1 s), and with one runner per parallel build
 * every build had to wait for the slowest of its group before the runs;
 * with a few candidates per build slot, the others keep the cores busy
 * while one is slow (bench/RESULTS.md, session 17).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "autotune/tune_internal.h"
#include "loom/codegen.h"
#include "loom/runtime.h"

extern char **environ;

typedef struct {
    pid_t pid;
    int fd;            /* our end of the socket pair */
    bool has_baseline; /* built the baseline program since it started */
} runner;

struct tune_measurer {
    char *key, *target;
    char *exe; /* the runners' program (tune__runner_exe) */
    tune_measure_options o;
    int n;    /* runner processes: candidates built before the runs */
    int jobs; /* builds at once (o.threads) */
    runner *r;
    char **envp;      /* the runners' environment: environ's strings (borrowed) and env_threads */
    char *env_threads; /* "LOOM_NUM_THREADS=n" when num_threads is set (owned); NULL: inherited */
    double build_s, run_s; /* wall seconds waited (tune_measurer_times) */
    char *baseline;        /* o.baseline_steps, owned; NULL: none or failed */
    double base_s;         /* the baseline's median in the first paired run */
    /* o.backend's session: candidates go there, not to runners. */
    const tune_measure_backend *be;
    void *session;
};

const char *tune_error_name(int code) {
    static const char *names[] = {"ok", "instantiation", "compile host", "compile device",
                                  "runtime device", "wrong answer", "build timeout",
                                  "run timeout", "unknown"};
    return code >= 0 && code <= TUNE_ERR_UNKNOWN ? names[code] : "unknown";
}

static void runner_kill(runner *r, int *status) {
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    if (r->pid > 0) {
        int st = 0;
        /* A runner that closed its socket has exited or is exiting; one
         * that hangs is killed. */
        if (waitpid(r->pid, &st, WNOHANG) == 0) {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
            if (waitpid(r->pid, &st, WNOHANG) == 0) {
                kill(r->pid, SIGKILL);
                waitpid(r->pid, &st, 0);
            }
        }
        if (status) *status = st;
    }
    r->pid = -1;
    r->has_baseline = false;
}

static int runner_start(tune_measurer *m, runner *r) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
    char flag[] = TUNE_RUNNER_FLAG;
    char *argv[] = {m->exe, flag, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, m->exe, &fa, NULL, argv, m->envp);
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    if (rc) {
        close(sv[0]);
        errno = rc;
        return -1;
    }
    r->pid = pid;
    r->fd = sv[0];
    return 0;
}

void tune_measurer_free(tune_measurer *m) {
    if (!m) return;
    if (m->be && m->session && m->be->close) m->be->close(m->session);
    for (int i = 0; i < m->n; i++) runner_kill(&m->r[i], NULL);
    free(m->r);
    /* Only our own entry is freed: the others are environ's, and an
     * inherited LOOM_NUM_THREADS= among them is not ours to free. */
    free(m->env_threads);
    free(m->envp);
    free(m->key);
    free(m->target);
    free(m->exe);
    free(m->baseline);
    free(m);
}

/* Runner processes for `jobs` parallel builds: on the CPU up to
 * TUNE__RUNNERS_PER_JOB per build slot, fewer when the runners together
 * would hold more than TUNE__RUNNER_BYTES of arguments; on the GPU one per
 * job (each runner holds a CUDA context). */
static int runner_slots(const char *key, bool cuda, int jobs) {
    int slots = jobs;
    if (cuda) return slots;
    slots = jobs * TUNE__RUNNERS_PER_JOB;
    if (slots > TUNE__MAX_RUNNERS) slots = TUNE__MAX_RUNNERS;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    if (ctx && !tune_build_workload(ctx, key, &w)) {
        double bytes = 0;
        for (int i = 0; i < w.nargs; i++) {
            double e = te_dtype_bytes(w.args[i]->dtype);
            for (int d = 0; d < w.args[i]->ndim; d++) e *= (double)w.args[i]->shape[d];
            bytes += e;
        }
        /* the arguments, the reference check's copy and stages held
         * between calls: twice the arguments */
        double fit = TUNE__RUNNER_BYTES / fmax(2 * bytes, 1.0);
        if (fit < slots) slots = (int)fit;
    }
    te_ctx_free(ctx);
    return slots < jobs ? jobs : slots;
}

tune_measurer *tune_measurer_new(const char *key, const char *target,
                                 const tune_measure_options *opts, char **err) {
    tune_measurer *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    if (opts) m->o = *opts;
    if (m->o.threads <= 0) m->o.threads = 1;
    if (m->o.threads > TUNE__MAX_RUNNERS) m->o.threads = TUNE__MAX_RUNNERS;
    if (m->o.build_timeout <= 0) m->o.build_timeout = 30;
    if (m->o.run_timeout <= 0) m->o.run_timeout = 10;
    if (m->o.repeat <= 0) m->o.repeat = 5;
    if (!m->o.seed) m->o.seed = 1;
    m->key = strdup(key ? key : "");
    m->target = strdup(target ? target : "llvm");
    if (m->o.backend) {
        /* Measured elsewhere: no runner process of ours. */
        const tune_measure_backend *be = m->o.backend;
        if (!m->key || !m->target || !be->open || !be->measure) {
            if (err && m->key && m->target)
                *err = tune__strdupf("autotune: the measurement backend has no %s function",
                                     be->open ? "measure" : "open");
            tune_measurer_free(m);
            return NULL;
        }
        m->session = be->open(be->user, m->key, m->target, &m->o, err);
        if (!m->session) {
            tune_measurer_free(m);
            return NULL;
        }
        m->be = be;
        return m;
    }
    /* Runners build for the target: it is checked once, here. */
    cg_target tg;
    char *terr = NULL;
    if (!m->target || cg_target_parse(m->target, &tg, &terr)) {
        if (err && m->target) *err = tune__strdupf("autotune: %s", terr ? terr : "out of memory");
        free(terr);
        tune_measurer_free(m);
        return NULL;
    }
    bool cuda = tg.kind == CG_TARGET_CUDA, llvm = tg.kind == CG_TARGET_LLVM;
    cg_target_free(&tg);
    /* GPU timings hold steady; the baseline is for shared CPU hosts. */
    if (m->o.baseline_steps && !cuda)
        m->baseline = strdup(m->o.baseline_steps);
    m->o.baseline_steps = NULL;
    m->jobs = m->o.threads;
    m->n = runner_slots(m->key, cuda, m->jobs);
    m->r = calloc((size_t)m->n, sizeof *m->r);
    int ne = 0;
    while (environ && environ[ne]) ne++;
    m->envp = calloc((size_t)ne + 2, sizeof(char *));
    if (!m->key || !m->target || !m->r || !m->envp) {
        tune_measurer_free(m);
        return NULL;
    }
    int k = 0;
    for (int i = 0; i < ne; i++)
        if (!(m->o.num_threads > 0 && !strncmp(environ[i], "LOOM_NUM_THREADS=", 17)))
            m->envp[k++] = environ[i];
    if (m->o.num_threads > 0) {
        m->env_threads = tune__strdupf("LOOM_NUM_THREADS=%d", m->o.num_threads);
        if (!m->env_threads) {
            tune_measurer_free(m);
            return NULL;
        }
        m->envp[k++] = m->env_threads;
    }
    for (int i = 0; i < m->n; i++) m->r[i] = (runner){-1, -1, false};
    if (cuda) {
        /* Runners build with NVRTC and time on GPU 0: without a driver
         * and a device nothing can be measured. */
        if (!rt_cuda_available()) {
            if (err)
                *err = tune__strdupf("autotune: no CUDA device for target '%s' (this machine "
                                     "measures llvm only): %s",
                                     m->target, rt_last_error());
            tune_measurer_free(m);
            return NULL;
        }
    } else if (!llvm) {
        if (err) *err = tune__strdupf("autotune: target '%s' cannot be measured here (llvm or "
                                      "cuda only)",
                                      m->target);
        tune_measurer_free(m);
        return NULL;
    }
    if (!(m->exe = tune__runner_exe(m->key, err))) {
        tune_measurer_free(m);
        return NULL;
    }
    if (runner_start(m, &m->r[0])) {
        if (err)
            *err = tune__strdupf("autotune: cannot start a runner process (%s): %s", m->exe,
                                 strerror(errno));
        tune_measurer_free(m);
        return NULL;
    }
    return m;
}

/* Waits for a reply until `deadline` (rt_now seconds). 0: *out set;
 * 1: timeout; 2: the runner closed (crashed or exited). */
static int wait_reply(runner *r, double deadline, cJSON **out) {
    for (;;) {
        double left = deadline - rt_now();
        /* Past the deadline, a reply (or a crash) already waiting still
         * counts: several runners share one wait. */
        struct pollfd p = {r->fd, POLLIN, 0};
        int rc = poll(&p, 1, left <= 0 ? 0 : (int)(left * 1000) + 1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc == 0) {
            if (left <= 0) return 1;
            continue;
        }
        char *s = tune__read_frame(r->fd);
        if (!s) return 2;
        *out = cJSON_Parse(s);
        free(s);
        return *out ? 0 : 2;
    }
}

/* Waits for the first reply among the runners j with waiting[j] (at
 * least one), runner j's deadline being sent[j] + limit. Returns that j
 * with *why = 0 and *out set, or the j whose deadline passed first
 * (*why = 1) or that closed (*why = 2). */
static int wait_any(tune_measurer *m, const bool *waiting, const double *sent, double limit,
                    int *why, cJSON **out) {
    struct pollfd p[64];
    int who[64];
    for (;;) {
        int np = 0, first = -1;
        for (int j = 0; j < m->n && j < 64; j++) {
            if (!waiting[j]) continue;
            if (first < 0 || sent[j] < sent[first]) first = j;
            p[np] = (struct pollfd){m->r[j].fd, POLLIN, 0};
            who[np++] = j;
        }
        double left = sent[first] + limit - rt_now();
        int rc = poll(p, (nfds_t)np, left <= 0 ? 0 : (int)(left * 1000) + 1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc == 0) {
            if (left > 0) continue;
            *why = 1; /* nothing ready and the earliest deadline passed */
            return first;
        }
        for (int k = 0; k < np; k++) {
            if (!p[k].revents) continue;
            *why = wait_reply(&m->r[who[k]], rt_now(), out);
            return who[k];
        }
    }
}

static int send_req(tune_measurer *m, runner *r, cJSON *req) {
    if (r->fd < 0 && runner_start(m, r)) return -1;
    char *s = cJSON_PrintUnformatted(req);
    int rc = s ? tune__write_frame(r->fd, s, strlen(s)) : -1;
    free(s);
    return rc;
}

static void set_err(tune_result *res, int code, const char *fmt, const char *detail) {
    res->error_code = code;
    snprintf(res->error_msg, sizeof res->error_msg, fmt, detail ? detail : "");
}

/* After a dead or timed-out runner: the message and the restart. */
static void runner_failed(runner *r, int why, int crash_code, int timeout_code, double limit,
                          tune_result *res, const char *phase) {
    int st = 0;
    runner_kill(r, &st);
    if (why == 1) {
        char d[96];
        snprintf(d, sizeof d, "%s did not finish within %.3g s", phase, limit);
        set_err(res, timeout_code, "%s", d);
    } else {
        char d[96];
        if (WIFSIGNALED(st))
            snprintf(d, sizeof d, "runner crashed during %s (signal %d: %s)", phase,
                     WTERMSIG(st), strsignal(WTERMSIG(st)));
        else
            snprintf(d, sizeof d, "runner exited during %s (status %d)", phase,
                     WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        set_err(res, crash_code, "%s", d);
    }
}

static bool reply_error(cJSON *rep, tune_result *res) {
    cJSON *e = cJSON_GetObjectItem(rep, "error");
    if (!e) return false;
    set_err(res, (int)cJSON_GetNumberValue(e), "%s",
            cJSON_GetStringValue(cJSON_GetObjectItem(rep, "msg")));
    return true;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void tune__summarize(tune_result *res) {
    double s[64], sum = 0;
    int n = res->nlatencies;
    for (int i = 0; i < n; i++) s[i] = res->latencies[i], sum += s[i];
    qsort(s, (size_t)n, sizeof s[0], cmp_double);
    res->median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    res->mean = sum / n;
    res->spread = res->median > 0 ? (s[n - 1] - s[0]) / res->median : 0;
}

/* Builds the baseline program in runner r when it has not yet. A
 * baseline that fails to build or crashes is dropped for the rest of the
 * measurer's life (candidates are then timed unpaired); a crashed runner
 * restarts with the next request. */
static void ensure_baseline(tune_measurer *m, runner *r) {
    if (!m->baseline || r->has_baseline) return;
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "cmd", "baseline");
    cJSON_AddStringToObject(req, "key", m->key);
    cJSON_AddStringToObject(req, "target", m->target);
    cJSON_AddStringToObject(req, "steps", m->baseline);
    int rc = send_req(m, r, req);
    cJSON_Delete(req);
    cJSON *rep = NULL;
    int why = rc ? 2 : wait_reply(r, rt_now() + m->o.build_timeout, &rep);
    if (!why && !cJSON_GetObjectItem(rep, "error")) r->has_baseline = true;
    cJSON_Delete(rep);
    if (why) runner_kill(r, NULL);
    if (!r->has_baseline) {
        free(m->baseline);
        m->baseline = NULL;
    }
}

/* Scales res's latencies by the baseline's speed now against its first
 * paired median (tune_measure_options.baseline_steps). */
static void follow_host(tune_measurer *m, cJSON *rep, tune_result *res) {
    res->host_scale = 1;
    cJSON *base = cJSON_GetObjectItem(rep, "base");
    tune_result b = {.nlatencies = cJSON_GetArraySize(base)};
    if (b.nlatencies <= 0) return;
    if (b.nlatencies > 64) b.nlatencies = 64;
    for (int k = 0; k < b.nlatencies; k++)
        b.latencies[k] = cJSON_GetNumberValue(cJSON_GetArrayItem(base, k));
    tune__summarize(&b);
    double med = b.median;
    if (!(med > 0)) return;
    if (!(m->base_s > 0)) m->base_s = med;
    res->host_scale = m->base_s / med;
    for (int k = 0; k < res->nlatencies; k++) res->latencies[k] *= res->host_scale;
}

/* Seconds a run request may take: the run timeout, or less once a best
 * latency exists (TUNE__CUT_FACTOR). */
static double run_limit(const tune_measurer *m, double best_so_far) {
    if (!(best_so_far > 0)) return m->o.run_timeout;
    double per_repeat = fmax(TUNE__SLOW_FACTOR * best_so_far, m->o.min_repeat_ms * 1e-3);
    double cut = TUNE__CUT_FACTOR * best_so_far + m->o.repeat * per_repeat + TUNE__CUT_SLACK_S;
    return cut < m->o.run_timeout ? cut : m->o.run_timeout;
}

/* uncut: re-timing (tune__measure_uncut): every run gets the whole run
 * timeout and its repeats, and is checked against the reference, whatever
 * the programs timed before it in the call. Otherwise a candidate's run is
 * cut at a multiple of the best so far (the caller's, then the call's own),
 * and only a new best is checked. */
static int measure(tune_measurer *m, int n, const char *const *steps_json, const int *hooks,
                   double best_so_far, bool uncut, tune_result *results) {
    for (int i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        results[i].steps_json = steps_json[i];
        results[i].host_scale = 1;
    }
    if (m->be) return m->be->measure(m->session, n, steps_json, hooks, best_so_far, results);
    for (int c0 = 0; c0 < n; c0 += m->n) {
        int cn = n - c0 < m->n ? n - c0 : m->n;
        bool built[64] = {false}, waiting[64] = {false};
        double sent[64], t_build = rt_now();
        /* Builds: `jobs` at a time, the next one to whichever runner
         * finishes first. */
        int next = 0, inflight = 0;
        while (next < cn || inflight > 0) {
            while (inflight < m->jobs && next < cn) {
                int j = next++, i = c0 + j;
                /* Once per runner process, before its candidate. */
                ensure_baseline(m, &m->r[j]);
                cJSON *req = cJSON_CreateObject();
                cJSON_AddStringToObject(req, "cmd", "build");
                cJSON_AddStringToObject(req, "key", m->key);
                cJSON_AddStringToObject(req, "target", m->target);
                cJSON_AddStringToObject(req, "steps", steps_json[i]);
                cJSON_AddNumberToObject(req, "hook", hooks ? hooks[i] : 0);
                int rc = send_req(m, &m->r[j], req);
                if (rc) { /* a stale runner: restart once */
                    runner_kill(&m->r[j], NULL);
                    rc = send_req(m, &m->r[j], req);
                }
                cJSON_Delete(req);
                sent[j] = rt_now();
                if (rc) {
                    set_err(&results[i], TUNE_ERR_UNKNOWN, "cannot reach a runner: %s",
                            strerror(errno));
                    if (j == 0 && c0 == 0) return -1;
                    continue;
                }
                waiting[j] = true, inflight++;
            }
            if (!inflight) continue;
            cJSON *rep = NULL;
            int why = 0, j = wait_any(m, waiting, sent, m->o.build_timeout, &why, &rep);
            waiting[j] = false, inflight--;
            tune_result *res = &results[c0 + j];
            if (why) {
                runner_failed(&m->r[j], why, TUNE_ERR_COMPILE_HOST, TUNE_ERR_BUILD_TIMEOUT,
                              m->o.build_timeout, res, "build");
                continue;
            }
            if (!reply_error(rep, res)) {
                res->build_s = cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "build_s"));
                built[j] = true;
            }
            cJSON_Delete(rep);
        }
        double t_run = rt_now();
        m->build_s += t_run - t_build;
        /* Runs: one at a time. */
        for (int j = 0; j < cn; j++) {
            if (!built[j]) continue;
            int i = c0 + j;
            tune_result *res = &results[i];
            int hook = hooks ? hooks[i] : 0;
            cJSON *req = cJSON_CreateObject();
            cJSON_AddStringToObject(req, "cmd", "run");
            cJSON_AddNumberToObject(req, "repeat", m->o.repeat);
            cJSON_AddNumberToObject(req, "base_repeat",
                                    m->r[j].has_baseline ? TUNE_BASELINE_REPEAT : 0);
            cJSON_AddNumberToObject(req, "min_repeat_ms", m->o.min_repeat_ms);
            if (m->o.cache_flush) cJSON_AddBoolToObject(req, "flush", true);
            /* Repeats only for candidates within TUNE__SLOW_FACTOR of the
             * best: the model needs their rank, not a precise time. */
            cJSON_AddNumberToObject(req, "slow_s", best_so_far > 0 && !uncut
                                                       ? TUNE__SLOW_FACTOR * best_so_far
                                                       : 0);
            cJSON_AddNumberToObject(req, "hook", hook);
            int rc = send_req(m, &m->r[j], req);
            cJSON_Delete(req);
            double limit = uncut ? m->o.run_timeout : run_limit(m, best_so_far);
            cJSON *rep = NULL;
            int why = rc ? 2 : wait_reply(&m->r[j], rt_now() + limit, &rep);
            if (why) {
                runner_failed(&m->r[j], why, TUNE_ERR_RUNTIME_DEVICE, TUNE_ERR_RUN_TIMEOUT, limit,
                              res, "run");
                if (why == 1 && limit < m->o.run_timeout) {
                    size_t len = strlen(res->error_msg);
                    snprintf(res->error_msg + len, sizeof res->error_msg - len,
                             " (the limit for a candidate over %.0fx the best so far, %.4g ms)",
                             TUNE__CUT_FACTOR, best_so_far * 1e3);
                }
                continue;
            }
            if (!reply_error(rep, res)) {
                cJSON *lat = cJSON_GetObjectItem(rep, "lat");
                int nl = cJSON_GetArraySize(lat);
                for (int k = 0; k < nl && k < 64; k++)
                    res->latencies[res->nlatencies++] =
                        cJSON_GetNumberValue(cJSON_GetArrayItem(lat, k));
                follow_host(m, rep, res);
                if (res->nlatencies == 0) set_err(res, TUNE_ERR_UNKNOWN, "%s", "no timing");
                else tune__summarize(res);
            }
            cJSON_Delete(rep);
            if (res->error_code) continue;
            /* A new best (or every candidate) is checked against the
             * reference before it counts. */
            if (uncut || m->o.check || best_so_far <= 0 || res->median < best_so_far) {
                req = cJSON_CreateObject();
                cJSON_AddStringToObject(req, "cmd", "check");
                cJSON_AddNumberToObject(req, "seed", (double)(m->o.seed & 0xFFFFFFFFu));
                cJSON_AddNumberToObject(req, "hook", hook);
                rc = send_req(m, &m->r[j], req);
                cJSON_Delete(req);
                rep = NULL;
                why = rc ? 2 : wait_reply(&m->r[j], rt_now() + m->o.run_timeout * 4, &rep);
                if (why) {
                    runner_failed(&m->r[j], why, TUNE_ERR_RUNTIME_DEVICE, TUNE_ERR_RUN_TIMEOUT,
                                  m->o.run_timeout * 4, res, "check");
                    continue;
                }
                if (!reply_error(rep, res)) {
                    res->checked = true;
                    double bad = cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "mismatch"));
                    if (bad != 0) {
                        char d[200];
                        snprintf(d, sizeof d, "%.0f output elements differ from the reference; %s",
                                 bad, cJSON_GetStringValue(cJSON_GetObjectItem(rep, "msg")));
                        set_err(res, TUNE_ERR_WRONG_ANSWER, "%s", d);
                    }
                }
                cJSON_Delete(rep);
            }
            if (!res->error_code && (best_so_far <= 0 || res->median < best_so_far))
                best_so_far = res->median;
        }
        m->run_s += rt_now() - t_run;
    }
    return 0;
}

int tune_measure(tune_measurer *m, int n, const char *const *steps_json, const int *hooks,
                 double best_so_far, tune_result *results) {
    return measure(m, n, steps_json, hooks, best_so_far, false, results);
}

int tune__measure_uncut(tune_measurer *m, int n, const char *const *steps_json, const int *hooks,
                        tune_result *results) {
    return measure(m, n, steps_json, hooks, 0, true, results);
}

void tune_measurer_times(const tune_measurer *m, double *build_s, double *run_s) {
    if (m && m->be) {
        double b = 0, r = 0;
        if (m->be->times) m->be->times(m->session, &b, &r);
        if (build_s) *build_s = b;
        if (run_s) *run_s = r;
        return;
    }
    if (build_s) *build_s = m ? m->build_s : 0;
    if (run_s) *run_s = m ? m->run_s : 0;
}

const char *tune__measurer_errmsg(const tune_measurer *m) {
    const char *e = m && m->be && m->be->errmsg ? m->be->errmsg(m->session) : NULL;
    return e ? e : "autotune: cannot start a runner process";
}

int tune__measurer_batch(const tune_measurer *m) {
    int b = m && m->be && m->be->batch > 0 ? m->be->batch : m ? m->o.threads : 1;
    return b < 1 ? 1 : b > 64 ? 64 : b;
}

bool tune__backend_overlaps(const tune_measure_backend *be) {
    return be && be->submit && be->poll;
}

int tune__measure_submit(tune_measurer *m, int n, const char *const *steps_json, const int *hooks,
                         double best_so_far, const int64_t *tags) {
    if (!m || !m->be || !tune__backend_overlaps(m->be)) return -1;
    return m->be->submit(m->session, n, steps_json, hooks, best_so_far, tags);
}
