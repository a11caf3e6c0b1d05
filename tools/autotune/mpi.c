/*
 * tools/autotune/mpi.c — measuring on the worker ranks of an MPI job
 * (issue 33). Rank 0 keeps the search, the cost model and the database;
 * each candidate goes to whichever worker is free (not a static split),
 * which measures it with a tune_measurer of its own (runner processes,
 * error codes and timeouts as on one machine) and sends the result back.
 *
 * Protocol (AT_MPI_PROTO = 1). Every message is one JSON object sent as
 * MPI_CHAR on a duplicate of MPI_COMM_WORLD; the tag says what it is:
 *   HELLO  0 -> w  {"proto","version","target","num_threads"}
 *          w -> 0  {"proto","version","target_key" | "error","host"}
 *          "proto" and "version" (LOOM_VERSION_STRING) come first in both
 *          directions and are all that a later protocol must keep, so that
 *          rank 0 can name a worker of another version and refuse it.
 *   WORK   0 -> w  {"id","key","target","steps","hook","best","opts":{threads,
 *                   build_timeout,run_timeout,repeat,min_repeat_ms,check,seed,
 *                   num_threads,baseline,cache_flush}}
 *                  "best": the fastest time (s) known when the candidate is
 *                  handed out, 0 before one (the worker's cut and check)
 *   RESULT w -> 0  {"id","error","msg","lat":[s...],"median","mean","spread",
 *                   "build_s","checked","host_scale","wbuild","wrun"}
 *                   (wbuild / wrun: the worker's wall seconds on builds and
 *                   on runs for this candidate, tune_measurer_times)
 *          or {"id","dropped":true}: the worker was stopped by a signal and
 *          dropped the candidate (sent also when it stops while free, in
 *          case a candidate is on its way; then never read)
 *   STOP   0 -> w  {} : the worker exits (status 0).
 * JSON because cJSON is already here and a candidate is a step log in JSON
 * anyway; a message is a few KiB against builds of 0.1 to 10 s.
 *
 * Faults: MPI_ERRORS_RETURN on the communicator. A worker that has not
 * answered within its candidate's limit (build + run + check timeouts)
 * plus AT_MPI_MARGIN_S is dropped and the candidate goes to another
 * worker; with no worker left, tune_measure fails with a message naming
 * them (the records committed so far stay: --resume continues). A dropped
 * worker cannot be told to stop, so the job then ends with MPI_Abort.
 * Where a rank dies outright, Open MPI's runtime (ORTE) ends the whole
 * job whatever the error handler: a dead worker stops the run; the
 * records so far are in the database and --resume continues. With
 * `mpirun --mca orte_enable_recovery 1` the job lives on and the dead
 * rank is dropped at its deadline like a silent one (no error reaches
 * rank 0 from a dead peer in Open MPI 4.1: the deadline is the only sign).
 *
 * Ctrl-C: mpirun sends every rank SIGTERM, then SIGKILL a second later
 * (Open MPI 4.1's odls_base_sigkill_timeout). Rank 0 returns the results
 * received so far for commit and drops the rest (stop_all); workers drop
 * their candidate and answer so; at_mpi_finish waits for those answers,
 * bounded, so that no send is left unmatched.
 *
 * Overlap (issue 33 part 4): the backend has submit and poll, so
 * tune_tasks_db searches one round behind (autotune/tune_db_pipe.c):
 * while the workers measure round k, rank 0 learns round k-1 and searches
 * round k+1 on another thread, which submits it as soon as it is found.
 * Candidates wait in one queue, in the order submitted, whatever their
 * workload (two rounds in flight may be of two tasks), and each goes to
 * the first worker free; this thread keeps handing them out and taking
 * results (pump) while the search runs. Only this thread calls MPI
 * (MPI_THREAD_FUNNELED). The proposals do not depend on the workers: a
 * round is learnt only once all its results are in (issue 33 part 6).
 *
 * Mixed machines (--allow-mixed): a worker whose target key differs from
 * rank 0's is kept, and each of its results carries its key
 * (tune_result.target_key), under which rank 0 commits the record.
 */
#include <cjson/cJSON.h>
#include <mpi.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loom/runtime.h"
#include "loom/version.h"
#include "tools/autotune/mpi.h"

#define AT_MPI_PROTO 1
#define AT_MPI_MARGIN_S 30.0
/* A worker that has not answered the handshake in this long is refused. */
#define AT_MPI_HELLO_S 120.0
/* Largest message rank 0 receives (a result: 64 latencies and a message). */
#define AT_MPI_MAX_MSG 65536
/* Workers from which rank 0 on a single CPU is worth a warning. */
#define AT_MPI_WARN_WORKERS 4

enum { TAG_HELLO = 1, TAG_WORK = 2, TAG_RESULT = 3, TAG_STOP = 4 };

typedef struct session session;

/* A candidate handed to the backend: queued, or measured by a worker. */
typedef struct {
    session *s;
    char *steps;
    int hook;
    double best;
    int64_t tag;
} cand;

typedef struct {
    int rank;
    char host[MPI_MAX_PROCESSOR_NAME + 1];
    bool dead;
    bool busy;        /* measuring `job` */
    cand job;
    double sent, deadline;
    MPI_Request rreq, sreq;
    char *rbuf, *sbuf;
    int count, failed;
    double build_s, run_s, busy_s;
    /* Stopped with a candidate in flight: rreq / sreq still posted. */
    bool pending;
    /* Its target key (the handshake's); NULL where it equals rank 0's:
     * results then carry no key of their own. */
    char *target_key;
} worker;

/* A result that arrived (or a candidate dropped at a stop), not yet
 * taken by poll. */
typedef struct {
    tune_result r;
    int64_t tag;
} arrived;

struct at_mpi {
    MPI_Comm comm;
    int size, nw;
    worker *w;
    /* Workers busy now, and the most at once since at_mpi_load last
     * asked. */
    int busy_now, busy_max;
    /* Candidates waiting for a worker, in the order submitted (q[qhead]
     * goes out next; one taken back from a dropped worker goes first). */
    cand *q;
    int qhead, qn, qcap;
    arrived *done;
    int ndone, capdone;
    int64_t sync_tag; /* tags of be_measure's candidates */
    /* From the first candidate handed out to the last result: what the
     * workers' busy seconds are a share of. */
    double t_first, t_last;
    FILE *trace; /* LOOM_TEST_PROPOSALS: every candidate submitted */
    MPI_Request *rq; /* pump's scratch, one per worker */
    char errmsg[512];
    tune_measure_backend be;
    bool aborted; /* a worker was dropped: it cannot be stopped */
    /* The run's stop request (Ctrl-C: at_mpi_watch_stop); NULL: none. */
    volatile int *stop;
    bool stopped; /* a stop was seen: no candidate is handed out again */
    double stop_wait; /* the longest candidate limit: at_mpi_finish's bound */
    /* --allow-mixed: the workers' target keys other than rank 0's, each
     * once, in rank order (malloc'd strings). */
    char **mixed;
    int nmixed;
};

struct session {
    at_mpi *m;
    char *key, *target;
    cJSON *opts;
    double timeout; /* seconds one candidate may take on a worker */
    double build_s, run_s;
    int id;
    /* The fastest error-free median (s) that came back from a worker of
     * rank 0's target, 0 before one: sent with each candidate as it goes
     * out, since a round's candidates leave over its whole measurement
     * and the best known when it was submitted (0 in a first round) would
     * time every slow one in full and check every one against the
     * reference. */
    double best;
};

static int send_json(at_mpi *m, int rank, int tag, cJSON *j) {
    char *s = cJSON_PrintUnformatted(j);
    int rc = s ? MPI_Send(s, (int)strlen(s) + 1, MPI_CHAR, rank, tag, m->comm) : -1;
    free(s);
    return rc == MPI_SUCCESS ? 0 : -1;
}

/* A worker's stop request: mpirun turns Ctrl-C into SIGTERM to every
 * rank (Open MPI), a launcher may send SIGINT. */
static volatile sig_atomic_t worker_stop;
static void on_worker_signal(int sig) {
    (void)sig;
    worker_stop = 1;
}

/* Receives the next message from rank 0 (a worker): its tag and JSON;
 * NULL with *tag 0 when a stop request came first (polled, not
 * MPI_Probe: a blocking probe would not return on a signal). */
static cJSON *recv_any(MPI_Comm comm, int *tag) {
    MPI_Status st;
    *tag = 0;
    for (;;) {
        int flag = 0;
        if (MPI_Iprobe(0, MPI_ANY_TAG, comm, &flag, &st) != MPI_SUCCESS) return NULL;
        if (flag) break;
        if (worker_stop) return NULL;
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    int n = 0;
    MPI_Get_count(&st, MPI_CHAR, &n);
    char *buf = malloc((size_t)n + 1);
    if (!buf) return NULL;
    if (MPI_Recv(buf, n, MPI_CHAR, 0, st.MPI_TAG, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *tag = st.MPI_TAG;
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    return j ? j : cJSON_CreateObject();
}

static double num(const cJSON *o, const char *k) {
    return cJSON_GetNumberValue(cJSON_GetObjectItem(o, k));
}
static const char *str(const cJSON *o, const char *k) {
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, k));
    return s ? s : "";
}

/* ---------------------------------------------------------------- */
/* Worker ranks                                                      */
/* ---------------------------------------------------------------- */

/* The --plugin libraries of the command line: a worker must know the
 * same operators as rank 0 (its runners load them in turn). */
static int load_plugins(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *p = NULL;
        if (!strcmp(argv[i], "--plugin") && i + 1 < argc) p = argv[++i];
        else if (!strncmp(argv[i], "--plugin=", 9)) p = argv[i] + 9;
        if (!p) continue;
        char *err = NULL;
        if (tune_load_plugin(p, &err)) {
            fprintf(stderr, "autotune: MPI worker: %s\n", err ? err : "out of memory");
            free(err);
            return -1;
        }
    }
    return 0;
}

static void opts_from_json(const cJSON *j, tune_measure_options *o) {
    memset(o, 0, sizeof *o);
    o->threads = (int)num(j, "threads");
    o->build_timeout = num(j, "build_timeout");
    o->run_timeout = num(j, "run_timeout");
    o->repeat = (int)num(j, "repeat");
    o->min_repeat_ms = num(j, "min_repeat_ms");
    o->check = (int)num(j, "check");
    o->seed = (uint64_t)num(j, "seed");
    o->num_threads = (int)num(j, "num_threads");
    o->baseline_steps = cJSON_GetStringValue(cJSON_GetObjectItem(j, "baseline"));
    o->cache_flush = cJSON_IsTrue(cJSON_GetObjectItem(j, "cache_flush"));
}

/* FNV-1a of s, continuing from h. */
static uint64_t fnv(uint64_t h, const char *s) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* Test hook (LOOM_TEST_FAKE_LATENCY): a result that depends on the
 * candidate alone (its key and log), without building or running it,
 * after a pause of 0 to 15 ms that differs between ranks, so that results
 * arrive in another order with another number of workers. */
static void fake_result(cJSON *req, int rank, tune_result *r) {
    uint64_t h = fnv(fnv(0xcbf29ce484222325ull, str(req, "key")), str(req, "steps"));
    struct timespec ts = {0, (long)((h ^ (uint64_t)rank * 0x9E3779B97F4A7C15ull) % 16) * 1000000L};
    nanosleep(&ts, NULL);
    r->nlatencies = 1;
    r->latencies[0] = r->median = r->mean = 1e-4 * (1 + (double)((h >> 16) % 1000) / 100);
    r->host_scale = 1;
}

/* Measures one WORK message with the worker's measurer (made again when
 * the workload, target or options change) and returns the RESULT. */
static cJSON *work(cJSON *req, tune_measurer **mp, char **mkey, int rank) {
    cJSON *opts = cJSON_GetObjectItem(req, "opts");
    char *okey = cJSON_PrintUnformatted(opts);
    char *k = NULL;
    if (okey) {
        size_t len = strlen(str(req, "key")) + strlen(str(req, "target")) + strlen(okey) + 3;
        k = malloc(len);
        if (k) snprintf(k, len, "%s\n%s\n%s", str(req, "key"), str(req, "target"), okey);
    }
    free(okey);
    tune_result r;
    memset(&r, 0, sizeof r);
    char *err = NULL;
    const char *fake = getenv("LOOM_TEST_FAKE_LATENCY");
    bool faked = fake && *fake;
    if (!faked && (!k || !*mp || strcmp(k, *mkey))) {
        tune_measurer_free(*mp);
        free(*mkey);
        *mkey = k, k = NULL;
        tune_measure_options o;
        opts_from_json(opts, &o);
        *mp = tune_measurer_new(str(req, "key"), str(req, "target"), &o, &err);
    }
    free(k);
    double b0 = 0, r0 = 0, b1 = 0, r1 = 0;
    if (faked) {
        fake_result(req, rank, &r);
    } else if (*mp) {
        tune_measurer_times(*mp, &b0, &r0);
        const char *steps = str(req, "steps");
        int hook = (int)num(req, "hook");
        if (tune_measure(*mp, 1, &steps, &hook, num(req, "best"), &r)) {
            r.error_code = TUNE_ERR_UNKNOWN;
            snprintf(r.error_msg, sizeof r.error_msg, "MPI worker: no runner process starts");
        }
        tune_measurer_times(*mp, &b1, &r1);
    } else {
        r.error_code = TUNE_ERR_UNKNOWN;
        snprintf(r.error_msg, sizeof r.error_msg, "MPI worker: %s",
                 err ? err : "cannot make a measurer");
        free(*mkey);
        *mkey = NULL;
    }
    free(err);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", num(req, "id"));
    cJSON_AddNumberToObject(o, "error", r.error_code);
    cJSON_AddStringToObject(o, "msg", r.error_msg);
    cJSON *lat = cJSON_AddArrayToObject(o, "lat");
    for (int i = 0; i < r.nlatencies; i++) cJSON_AddItemToArray(lat, cJSON_CreateNumber(r.latencies[i]));
    cJSON_AddNumberToObject(o, "median", r.median);
    cJSON_AddNumberToObject(o, "mean", r.mean);
    cJSON_AddNumberToObject(o, "spread", r.spread);
    cJSON_AddNumberToObject(o, "build_s", r.build_s);
    cJSON_AddBoolToObject(o, "checked", r.checked);
    cJSON_AddNumberToObject(o, "host_scale", r.host_scale);
    cJSON_AddNumberToObject(o, "wbuild", b1 - b0);
    cJSON_AddNumberToObject(o, "wrun", r1 - r0);
    return o;
}

static int worker_main(at_mpi *m, int argc, char **argv) {
    /* Ctrl-C on mpirun reaches every rank as SIGTERM (then SIGKILL after
     * odls_base_sigkill_timeout, 1 s by default): the worker drops the
     * candidate it measures (its runner processes, in its process group,
     * got the signal too; the rest die with it, PR_SET_PDEATHSIG) and
     * leaves; rank 0 saves what it received. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_worker_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int plugins = load_plugins(argc, argv);
    int rank = 0;
    MPI_Comm_rank(m->comm, &rank);
    tune_measurer *meas = NULL;
    char *mkey = NULL;
    int rc = 0, nwork = 0;
    for (;;) {
        int tag = 0;
        cJSON *req = recv_any(m->comm, &tag);
        if (!req) {
            rc = worker_stop ? 0 : 1;
            /* Stopped while free: the same word, in case rank 0 hands it
             * a candidate meanwhile (else the message is never read). */
            if (worker_stop) {
                cJSON *bye = cJSON_CreateObject();
                cJSON_AddBoolToObject(bye, "dropped", true);
                send_json(m, 0, TAG_RESULT, bye);
                cJSON_Delete(bye);
            }
            break;
        }
        if (tag == TAG_STOP) {
            cJSON_Delete(req);
            break;
        }
        cJSON *rep = NULL;
        if (tag == TAG_HELLO) {
            rep = cJSON_CreateObject();
            /* Test hooks: a worker of another version or another machine. */
            const char *fv = getenv("LOOM_TEST_FAKE_VERSION");
            cJSON_AddNumberToObject(rep, "proto", AT_MPI_PROTO);
            cJSON_AddStringToObject(rep, "version", fv && *fv ? fv : LOOM_VERSION_STRING);
            char host[MPI_MAX_PROCESSOR_NAME + 1] = "";
            int hl = 0;
            MPI_Get_processor_name(host, &hl);
            cJSON_AddStringToObject(rep, "host", host);
            const char *ft = getenv("LOOM_TEST_FAKE_TARGET");
            char *err = NULL, *tk = ft && *ft ? strdup(ft)
                                           : tune_record_key(str(req, "target"),
                                                             (int)num(req, "num_threads"), &err);
            if (plugins) cJSON_AddStringToObject(rep, "error", "a --plugin library does not load");
            else if (tk) cJSON_AddStringToObject(rep, "target_key", tk);
            else cJSON_AddStringToObject(rep, "error", err ? err : "out of memory");
            free(tk), free(err);
        } else if (tag == TAG_WORK) {
            /* Test hooks: a worker that hangs (rank 0 must drop it), and
             * one that dies on its Nth candidate as a killed or crashed
             * process does (no answer, no goodbye). */
            if (getenv("LOOM_TEST_WORKER_STALL"))
                for (;;) sleep(60);
            const char *die = getenv("LOOM_TEST_WORKER_DIE");
            if (die && ++nwork >= atoi(die)) raise(SIGKILL);
            /* Test hook: the best so far each candidate came with. */
            const char *wl = getenv("LOOM_TEST_WORK_LOG");
            FILE *wf = wl && *wl ? fopen(wl, "a") : NULL;
            if (wf) fprintf(wf, "%.9g\n", num(req, "best")), fclose(wf);
            rep = work(req, &meas, &mkey, rank);
            /* Stopped while measuring: the result may be the signal's
             * doing (a killed runner). Rank 0 is told the candidate was
             * dropped (its receive is posted: the send completes). */
            if (worker_stop) {
                cJSON_Delete(rep);
                rep = cJSON_CreateObject();
                cJSON_AddNumberToObject(rep, "id", num(req, "id"));
                cJSON_AddBoolToObject(rep, "dropped", true);
                cJSON_Delete(req);
                send_json(m, 0, TAG_RESULT, rep);
                cJSON_Delete(rep);
                break;
            }
        }
        cJSON_Delete(req);
        if (rep && send_json(m, 0, tag == TAG_HELLO ? TAG_HELLO : TAG_RESULT, rep)) rc = 1;
        cJSON_Delete(rep);
        if (rc) break;
    }
    tune_measurer_free(meas);
    free(mkey);
    return rc;
}

/* ---------------------------------------------------------------- */
/* Rank 0: the backend                                               */
/* ---------------------------------------------------------------- */

static void *be_open(void *user, const char *key, const char *target,
                     const tune_measure_options *o, char **err) {
    at_mpi *m = user;
    session *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->m = m;
    s->key = strdup(key);
    s->target = strdup(target);
    s->opts = cJSON_CreateObject();
    if (!s->key || !s->target || !s->opts) {
        free(s->key), free(s->target), cJSON_Delete(s->opts), free(s);
        return NULL;
    }
    cJSON_AddNumberToObject(s->opts, "threads", o->threads);
    cJSON_AddNumberToObject(s->opts, "build_timeout", o->build_timeout);
    cJSON_AddNumberToObject(s->opts, "run_timeout", o->run_timeout);
    cJSON_AddNumberToObject(s->opts, "repeat", o->repeat);
    cJSON_AddNumberToObject(s->opts, "min_repeat_ms", o->min_repeat_ms);
    cJSON_AddNumberToObject(s->opts, "check", o->check);
    cJSON_AddNumberToObject(s->opts, "seed", (double)o->seed);
    cJSON_AddNumberToObject(s->opts, "num_threads", o->num_threads);
    if (o->baseline_steps) cJSON_AddStringToObject(s->opts, "baseline", o->baseline_steps);
    cJSON_AddBoolToObject(s->opts, "cache_flush", o->cache_flush);
    /* The worker's build, run and reference check (tune_measure's limits),
     * the baseline's build, and the margin for making its measurer. */
    double bt = o->build_timeout > 0 ? o->build_timeout : 30;
    double rt = o->run_timeout > 0 ? o->run_timeout : 10;
    s->timeout = 2 * bt + 5 * rt + AT_MPI_MARGIN_S;
    const char *t = getenv("LOOM_TEST_MPI_TIMEOUT_S");
    if (t && atof(t) > 0) s->timeout = atof(t);
    if (s->timeout > m->stop_wait) m->stop_wait = s->timeout;
    (void)err;
    return s;
}

static void be_close(void *p) {
    session *s = p;
    if (!s) return;
    free(s->key), free(s->target);
    cJSON_Delete(s->opts);
    free(s);
}

static void be_times(void *p, double *b, double *r) {
    session *s = p;
    if (b) *b = s->build_s;
    if (r) *r = s->run_s;
}

static const char *be_errmsg(void *p) {
    session *s = p;
    return s->m->errmsg[0] ? s->m->errmsg : NULL;
}

static int live_workers(const at_mpi *m) {
    int n = 0;
    for (int i = 0; i < m->nw; i++) n += !m->w[i].dead;
    return n;
}

static bool is_dropped(const char *msg) { return strstr(msg, "\"dropped\":true") != NULL; }

/* A slot at the end of the arrived list, zeroed as poll hands results
 * out (NULL when out of memory: the result is lost, and with it the
 * candidate's trial). */
static tune_result *arrive(at_mpi *m, int64_t tag) {
    if (m->ndone == m->capdone) {
        int cap = m->capdone ? 2 * m->capdone : 64;
        arrived *nd = realloc(m->done, sizeof *nd * (size_t)cap);
        if (!nd) return NULL;
        m->done = nd, m->capdone = cap;
    }
    arrived *a = &m->done[m->ndone++];
    memset(a, 0, sizeof *a);
    a->tag = tag;
    a->r.host_scale = 1;
    return &a->r;
}

static void drop(at_mpi *m, cand *c) {
    tune_result *r = arrive(m, c->tag);
    if (r) r->dropped = true;
    free(c->steps);
    c->steps = NULL;
}

static void take_result(session *s, worker *w, tune_result *res) {
    cJSON *o = cJSON_Parse(w->rbuf);
    if (!o) {
        res->error_code = TUNE_ERR_UNKNOWN;
        snprintf(res->error_msg, sizeof res->error_msg, "MPI rank %d sent an unreadable result",
                 w->rank);
        return;
    }
    res->error_code = (int)num(o, "error");
    snprintf(res->error_msg, sizeof res->error_msg, "%s", str(o, "msg"));
    cJSON *lat = cJSON_GetObjectItem(o, "lat");
    int nl = cJSON_GetArraySize(lat);
    for (int k = 0; k < nl && k < 64; k++)
        res->latencies[res->nlatencies++] = cJSON_GetNumberValue(cJSON_GetArrayItem(lat, k));
    res->median = num(o, "median");
    res->mean = num(o, "mean");
    res->spread = num(o, "spread");
    res->build_s = num(o, "build_s");
    res->checked = cJSON_IsTrue(cJSON_GetObjectItem(o, "checked"));
    res->host_scale = num(o, "host_scale");
    res->target_key = w->target_key;
    if (!w->target_key && !res->error_code && res->median > 0 && (s->best <= 0 || res->median < s->best))
        s->best = res->median;
    double wb = num(o, "wbuild"), wr = num(o, "wrun");
    s->build_s += wb, s->run_s += wr;
    w->build_s += wb, w->run_s += wr;
    w->count++;
    w->failed += res->error_code != 0;
    cJSON_Delete(o);
}

/* Worker w's candidate is over (answered, dropped, or taken back). */
static void worker_free(at_mpi *m, worker *w) {
    double now = rt_now();
    w->busy_s += now - w->sent;
    if (now > m->t_last) m->t_last = now;
    w->busy = false;
    w->job = (cand){0}; /* its steps went on with it */
    m->busy_now--;
}

/* Puts c back at the head of the queue (its worker was lost). */
static void requeue(at_mpi *m, cand c) {
    if (m->qhead == 0) {
        if (m->qn == m->qcap) {
            int cap = m->qcap ? 2 * m->qcap : 64;
            cand *nq = realloc(m->q, sizeof *nq * (size_t)cap);
            if (!nq) {
                drop(m, &c);
                return;
            }
            m->q = nq, m->qcap = cap;
        }
        memmove(m->q + 1, m->q, sizeof *m->q * (size_t)m->qn);
        m->qn++;
    } else {
        m->qhead--;
    }
    m->q[m->qhead] = c;
}

static int enqueue(at_mpi *m, session *s, const char *steps, int hook, double best, int64_t tag) {
    if (m->qhead > 0 && m->qn == m->qcap) { /* room at the front: slide down */
        memmove(m->q, m->q + m->qhead, sizeof *m->q * (size_t)(m->qn - m->qhead));
        m->qn -= m->qhead, m->qhead = 0;
    }
    if (m->qn == m->qcap) {
        int cap = m->qcap ? 2 * m->qcap : 64;
        cand *nq = realloc(m->q, sizeof *nq * (size_t)cap);
        if (!nq) return -1;
        m->q = nq, m->qcap = cap;
    }
    cand c = {s, strdup(steps), hook, best, tag};
    if (!c.steps) return -1;
    m->q[m->qn++] = c;
    if (m->trace) fprintf(m->trace, "%s\t%s\n", s->key, steps);
    return 0;
}

/* A stop request: the results that arrived are taken (the caller
 * commits them), the candidates in flight or not sent are dropped
 * (tune_result.dropped: a --resume measures them), and no candidate is
 * handed out again. Nothing is waited for here: under mpirun the workers
 * got the signal too, and Open MPI kills every rank
 * odls_base_sigkill_timeout (1 s) after it, so the commits come first. */
static void stop_all(at_mpi *m) {
    m->stopped = true;
    for (int i = 0; i < m->nw; i++) {
        worker *w = &m->w[i];
        if (w->dead || !w->busy) continue;
        int flag = 0;
        if (MPI_Test(&w->rreq, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag &&
            !is_dropped(w->rbuf)) {
            tune_result *r = arrive(m, w->job.tag);
            if (r) take_result(w->job.s, w, r);
            free(w->job.steps);
            w->job.steps = NULL;
        } else {
            /* Its answer (the result, or word that it dropped the
             * candidate) is awaited at at_mpi_finish, after the commits;
             * a "dropped" that has arrived means it has left. */
            if (flag) w->dead = true;
            else w->pending = true;
            drop(m, &w->job);
        }
        worker_free(m, w);
    }
    for (int i = m->qhead; i < m->qn; i++) drop(m, &m->q[i]);
    m->qhead = m->qn = 0;
}

/* Hands queued candidates to the free workers. */
static void dispatch(at_mpi *m) {
    for (int i = 0; i < m->nw && m->qhead < m->qn; i++) {
        worker *w = &m->w[i];
        if (w->dead || w->busy) continue;
        cand c = m->q[m->qhead++];
        if (m->qhead == m->qn) m->qhead = m->qn = 0;
        session *s = c.s;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", ++s->id);
        cJSON_AddStringToObject(o, "key", s->key);
        cJSON_AddStringToObject(o, "target", s->target);
        cJSON_AddStringToObject(o, "steps", c.steps);
        cJSON_AddNumberToObject(o, "hook", c.hook);
        /* the best so far where it is newer than the submission's (a
         * worker of another target times against its own) */
        double best = c.best;
        if (!w->target_key && s->best > 0 && (best <= 0 || s->best < best)) best = s->best;
        cJSON_AddNumberToObject(o, "best", best);
        cJSON_AddItemReferenceToObject(o, "opts", s->opts);
        free(w->sbuf);
        w->sbuf = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (!w->sbuf ||
            MPI_Isend(w->sbuf, (int)strlen(w->sbuf) + 1, MPI_CHAR, w->rank, TAG_WORK, m->comm,
                      &w->sreq) != MPI_SUCCESS ||
            MPI_Irecv(w->rbuf, AT_MPI_MAX_MSG, MPI_CHAR, w->rank, TAG_RESULT, m->comm,
                      &w->rreq) != MPI_SUCCESS) {
            fprintf(stderr, "autotune: MPI rank %d (%s) cannot be reached; dropped\n", w->rank,
                    w->host);
            w->dead = m->aborted = true;
            requeue(m, c);
            continue;
        }
        w->job = c;
        w->busy = true;
        w->sent = rt_now();
        if (m->t_first == 0) m->t_first = w->sent;
        w->deadline = w->sent + s->timeout;
        if (++m->busy_now > m->busy_max) m->busy_max = m->busy_now;
    }
}

/* One turn of rank 0's side: candidates out to the free workers, the
 * results that arrived into m->done, the workers past their candidate's
 * limit dropped (their candidates to others). -1 when candidates wait
 * and no worker is left (m->errmsg says so). */
static int pump(at_mpi *m) {
    if (!m->stopped && m->stop && *m->stop) stop_all(m);
    if (m->stopped) return 0;
    dispatch(m);
    for (;;) {
        MPI_Request *rq = m->rq;
        for (int i = 0; i < m->nw; i++)
            rq[i] = m->w[i].busy && !m->w[i].dead ? m->w[i].rreq : MPI_REQUEST_NULL;
        int idx = MPI_UNDEFINED, flag = 0;
        MPI_Status st;
        if (MPI_Testany(m->nw, rq, &idx, &flag, &st) != MPI_SUCCESS) flag = 0;
        if (!flag || idx == MPI_UNDEFINED) break;
        worker *w = &m->w[idx];
        w->rreq = MPI_REQUEST_NULL;
        MPI_Wait(&w->sreq, MPI_STATUS_IGNORE);
        cand c = w->job;
        worker_free(m, w);
        if (is_dropped(w->rbuf)) {
            /* A worker stopped by a signal of its own: gone, finalizing
             * (no MPI_Abort needed); its candidate goes to another. */
            fprintf(stderr,
                    "autotune: MPI rank %d (%s) was stopped (a signal); its candidate goes to "
                    "another worker\n",
                    w->rank, w->host);
            w->dead = true;
            requeue(m, c);
            continue;
        }
        tune_result *r = arrive(m, c.tag);
        if (r) take_result(c.s, w, r);
        free(c.steps);
    }
    double now = rt_now();
    for (int i = 0; i < m->nw; i++) {
        worker *w = &m->w[i];
        if (w->dead || !w->busy || now < w->deadline) continue;
        fprintf(stderr,
                "autotune: MPI rank %d (%s) gave no answer in %.0f s (the candidate's limit); "
                "dropped, its candidate goes to another worker\n",
                w->rank, w->host, w->job.s->timeout);
        /* Its receive and send stay posted (buffers kept): a late answer
         * is never read. */
        w->dead = m->aborted = true;
        cand c = w->job;
        worker_free(m, w);
        requeue(m, c);
    }
    /* A worker freed above takes its next candidate now, not a turn later. */
    dispatch(m);
    if (!live_workers(m) && m->qhead < m->qn) {
        double limit = m->q[m->qhead].s->timeout;
        snprintf(m->errmsg, sizeof m->errmsg,
                 "autotune: every MPI worker is gone (%d dropped: no answer within the "
                 "candidate's limit of %.0f s, or unreachable); the records measured so far "
                 "are in the database (--resume continues)",
                 m->nw, limit);
        return -1;
    }
    return 0;
}

static void nap_ms(int ms) {
    struct timespec ts = {0, ms * 1000L * 1000L};
    nanosleep(&ts, NULL);
}

static int be_submit(void *p, int n, const char *const *steps, const int *hooks, double best,
                     const int64_t *tags) {
    session *s = p;
    at_mpi *m = s->m;
    for (int i = 0; i < n; i++) {
        if (m->stopped) {
            cand c = {s, NULL, 0, 0, tags[i]};
            drop(m, &c);
        } else if (enqueue(m, s, steps[i], hooks ? hooks[i] : 0, best, tags[i])) {
            snprintf(m->errmsg, sizeof m->errmsg, "autotune: out of memory");
            return -1;
        }
    }
    if (m->trace) fflush(m->trace);
    return pump(m);
}

static int be_poll(void *user, double wait_s, int max, tune_result *results, int64_t *tags) {
    at_mpi *m = user;
    double until = rt_now() + wait_s;
    int rc = 0;
    /* MPI_Testany, not MPI_Waitany: a worker's deadline must be seen
     * while the others measure. A millisecond is nothing to a build. */
    while (!(rc = pump(m)) && m->ndone == 0 && rt_now() < until) nap_ms(1);
    if (rc && m->ndone == 0) return -1;
    int k = m->ndone < max ? m->ndone : max;
    if (k == 0) return 0;
    for (int i = 0; i < k; i++) results[i] = m->done[i].r, tags[i] = m->done[i].tag;
    memmove(m->done, m->done + k, sizeof *m->done * (size_t)(m->ndone - k));
    m->ndone -= k;
    return k;
}

/* tune_measure through the queue: the n candidates submitted, then
 * results taken by tag until all are in (those of other sessions, had
 * they any in flight, stay for poll). */
static int be_measure(void *p, int n, const char *const *steps, const int *hooks, double best,
                      tune_result *results) {
    session *s = p;
    at_mpi *m = s->m;
    int64_t base = m->sync_tag;
    m->sync_tag += n;
    int64_t *tags = calloc((size_t)(n > 0 ? n : 1), sizeof *tags);
    if (!tags) return -1;
    for (int i = 0; i < n; i++) tags[i] = base + i;
    int rc = be_submit(s, n, steps, hooks, best, tags);
    free(tags);
    for (int got = 0; !rc && got < n;) {
        for (int i = 0; i < m->ndone;) {
            int64_t t = m->done[i].tag;
            if (t < base || t >= base + n) {
                i++;
                continue;
            }
            tune_result *r = &results[t - base];
            const char *sj = r->steps_json;
            *r = m->done[i].r;
            r->steps_json = sj;
            memmove(m->done + i, m->done + i + 1, sizeof *m->done * (size_t)(m->ndone - i - 1));
            m->ndone--;
            got++;
        }
        if (got < n && !(rc = pump(m)) && m->ndone == 0) nap_ms(1);
    }
    return rc;
}

/* ---------------------------------------------------------------- */
/* Start, handshake, end                                             */
/* ---------------------------------------------------------------- */

int at_mpi_start(int argc, char **argv, at_mpi **out, int *worker_rc) {
    *out = NULL;
    /* Only under a launcher with several ranks: a plain run (and -np 1)
     * never initialises MPI, so it behaves as without MPI. */
    const char *sz = getenv("OMPI_COMM_WORLD_SIZE");
    if (!sz) sz = getenv("PMI_SIZE");
    if (!sz || atoi(sz) <= 1) return 0;
    int provided = 0;
    /* The search's threads never call MPI: the main thread does all. */
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "autotune: MPI_Init_thread failed; running without MPI\n");
        return 0;
    }
    at_mpi *m = calloc(1, sizeof *m);
    if (!m) MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &m->comm);
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    int rank = 0;
    MPI_Comm_rank(m->comm, &rank);
    MPI_Comm_size(m->comm, &m->size);
    if (rank > 0) {
        *worker_rc = worker_main(m, argc, argv);
        MPI_Comm_free(&m->comm);
        free(m);
        MPI_Finalize();
        return 1;
    }
    m->nw = m->size - 1;
    m->w = calloc((size_t)m->nw, sizeof *m->w);
    if (!m->w) MPI_Abort(MPI_COMM_WORLD, 2);
    m->rq = calloc((size_t)m->nw, sizeof *m->rq);
    if (!m->rq) MPI_Abort(MPI_COMM_WORLD, 2);
    /* be_measure's tags, apart from those a caller of submit chooses. */
    m->sync_tag = (int64_t)1 << 62;
    /* Test hook: the candidates in the order they are submitted. */
    const char *trace = getenv("LOOM_TEST_PROPOSALS");
    if (trace && *trace && !(m->trace = fopen(trace, "a")))
        fprintf(stderr, "autotune: LOOM_TEST_PROPOSALS: cannot open %s\n", trace);
    for (int i = 0; i < m->nw; i++) {
        worker *w = &m->w[i];
        w->rank = i + 1;
        w->rreq = w->sreq = MPI_REQUEST_NULL;
        w->rbuf = malloc(AT_MPI_MAX_MSG);
        if (!w->rbuf) MPI_Abort(MPI_COMM_WORLD, 2);
        snprintf(w->host, sizeof w->host, "?");
    }
    m->be = (tune_measure_backend){.user = m, .batch = 64, .open = be_open,
                                   .measure = be_measure, .times = be_times,
                                   .errmsg = be_errmsg, .close = be_close,
                                   .submit = be_submit, .poll = be_poll};
    *out = m;
    return 0;
}

const tune_measure_backend *at_mpi_backend(at_mpi *m) { return m ? &m->be : NULL; }

void at_mpi_watch_stop(at_mpi *m, volatile int *stop) {
    if (m) m->stop = stop;
}

/* Takes worker w's target key tk, which differs from rank 0's, into the
 * run's mixed keys. 0, or -1 when out of memory. */
static int add_mixed(at_mpi *m, worker *w, const char *tk) {
    if (!(w->target_key = strdup(tk))) return -1;
    for (int i = 0; i < m->nmixed; i++)
        if (!strcmp(m->mixed[i], tk)) return 0;
    char **nm = realloc(m->mixed, sizeof *nm * (size_t)(m->nmixed + 1));
    if (!nm) return -1;
    m->mixed = nm;
    return (m->mixed[m->nmixed] = strdup(tk)) ? m->nmixed++, 0 : -1;
}

/* One line per target key of a mixed job: the ranks that measure it. */
static void print_groups(const at_mpi *m, const char *mine) {
    printf("MPI workers by target key (--allow-mixed: each result is committed under its "
           "worker's key):\n");
    for (int g = -1; g < m->nmixed; g++) {
        const char *k = g < 0 ? mine : m->mixed[g];
        char ranks[512] = "";
        int nr = 0;
        size_t len = 0;
        for (int i = 0; i < m->nw; i++) {
            const worker *w = &m->w[i];
            if (g < 0 ? w->target_key != NULL : !w->target_key || strcmp(w->target_key, k))
                continue;
            if (len < sizeof ranks)
                len += (size_t)snprintf(ranks + len, sizeof ranks - len, "%s%d", nr ? ", " : "",
                                        w->rank);
            nr++;
        }
        printf("  '%s'%s: %s%s\n", k, g < 0 ? " (rank 0's)" : "",
               nr == 0 ? "no worker" : nr == 1 ? "rank " : "ranks ", ranks);
    }
}

int at_mpi_handshake(at_mpi *m, const char *target, int num_threads, bool allow_mixed) {
    if (!m) return 0;
    char *err = NULL, *mine = tune_record_key(target, num_threads, &err);
    if (!mine) {
        fprintf(stderr, "%s\n", err ? err : "autotune: out of memory");
        free(err);
        return -1;
    }
    cJSON *hello = cJSON_CreateObject();
    cJSON_AddNumberToObject(hello, "proto", AT_MPI_PROTO);
    cJSON_AddStringToObject(hello, "version", LOOM_VERSION_STRING);
    cJSON_AddStringToObject(hello, "target", target);
    cJSON_AddNumberToObject(hello, "num_threads", num_threads);
    int bad = 0;
    for (int i = 0; i < m->nw; i++) {
        worker *w = &m->w[i];
        if (send_json(m, w->rank, TAG_HELLO, hello) ||
            MPI_Irecv(w->rbuf, AT_MPI_MAX_MSG, MPI_CHAR, w->rank, TAG_HELLO, m->comm, &w->rreq) !=
                MPI_SUCCESS) {
            fprintf(stderr, "autotune: MPI rank %d cannot be reached at the start\n", w->rank);
            w->dead = true, bad++;
        }
    }
    cJSON_Delete(hello);
    double deadline = rt_now() + AT_MPI_HELLO_S;
    for (int i = 0; i < m->nw; i++) {
        worker *w = &m->w[i];
        if (w->dead) continue;
        int flag = 0;
        while (MPI_Test(&w->rreq, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag &&
               rt_now() < deadline) {
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (!flag) {
            fprintf(stderr, "autotune: MPI rank %d did not answer the handshake in %.0f s\n",
                    w->rank, AT_MPI_HELLO_S);
            w->dead = m->aborted = true, bad++;
            continue;
        }
        cJSON *r = cJSON_Parse(w->rbuf);
        snprintf(w->host, sizeof w->host, "%s", str(r, "host"));
        int proto = (int)num(r, "proto");
        const char *ver = str(r, "version");
        if (proto != AT_MPI_PROTO || strcmp(ver, LOOM_VERSION_STRING)) {
            fprintf(stderr,
                    "autotune: MPI rank %d (%s) runs Loom %s (protocol %d), rank 0 Loom %s "
                    "(protocol %d): every rank must run the same Loom version\n",
                    w->rank, w->host, ver, proto, LOOM_VERSION_STRING, AT_MPI_PROTO);
            bad++;
        } else if (cJSON_GetObjectItem(r, "error")) {
            fprintf(stderr, "autotune: MPI rank %d (%s) cannot measure target '%s': %s\n",
                    w->rank, w->host, target, str(r, "error"));
            bad++;
        } else if (strcmp(str(r, "target_key"), mine)) {
            if (!allow_mixed) {
                fprintf(stderr,
                        "autotune: MPI rank %d (%s) measures target '%s', rank 0 '%s': records "
                        "of one target key must come from one kind of machine (--allow-mixed "
                        "commits each result under its own worker's key)\n",
                        w->rank, w->host, str(r, "target_key"), mine);
                bad++;
            } else if (add_mixed(m, w, str(r, "target_key"))) {
                fprintf(stderr, "autotune: out of memory\n");
                bad++;
            }
        }
        cJSON_Delete(r);
    }
    if (bad) {
        fprintf(stderr, "autotune: %d of the %d MPI workers refused; nothing was measured\n", bad,
                m->nw);
        free(mine);
        return -1;
    }
    if (m->nmixed) print_groups(m, mine);
    free(mine);
    /* Rank 0's search runs on the thread pool over the CPUs rank 0 may
     * use: on one (mpirun --bind-to core), it proposed a convolution
     * candidate in 0.17 s on the H200 machine's host against 0.014 s on
     * its 16 cores, and 8 workers of a ResNet-50 suite waited on it 15 %
     * of the time (bench/RESULTS.md, session 42). */
    if (m->nw >= AT_MPI_WARN_WORKERS && rt_available_cpus() == 1)
        fprintf(stderr,
                "autotune: MPI rank 0 may run on 1 CPU and feeds %d workers: its search runs on "
                "the CPUs it may use, so the workers may wait for candidates; give rank 0 more "
                "(an mpirun rankfile, as bench/mpi/scaling.sh writes)\n",
                m->nw);
    return 0;
}

int at_mpi_mixed_keys(at_mpi *m, const char *const **keys) {
    *keys = m ? (const char *const *)m->mixed : NULL;
    return m ? m->nmixed : 0;
}

void at_mpi_load(at_mpi *m, int *busy, int *total) {
    *total = m ? live_workers(m) : 0;
    /* A worker dropped meanwhile counted as busy; it is not alive. */
    *busy = m ? m->busy_max < *total ? m->busy_max : *total : 0;
    if (m) m->busy_max = m->busy_now;
}

void at_mpi_report(at_mpi *m, FILE *f) {
    if (!m) return;
    int count = 0, failed = 0;
    double build = 0, run = 0;
    for (int i = 0; i < m->nw; i++) {
        const worker *w = &m->w[i];
        char key[320] = "";
        if (w->target_key) snprintf(key, sizeof key, ", target '%s'", w->target_key);
        fprintf(f, "worker rank %d (%s%s): %d trials (%d failed), build %.1f s, run %.1f s, "
                   "busy %.1f s%s\n",
                w->rank, w->host, key, w->count, w->failed, w->build_s, w->run_s, w->busy_s,
                w->dead ? " (dropped)" : "");
        count += w->count, failed += w->failed, build += w->build_s, run += w->run_s;
    }
    double span = m->t_last - m->t_first, busy = 0;
    for (int i = 0; i < m->nw; i++) busy += m->w[i].busy_s;
    fprintf(f, "workers: %d of %d alive, %d trials (%d failed), build %.1f s, run %.1f s, "
               "busy %.0f%% of %.1f s\n",
            live_workers(m), m->nw, count, failed, build, run,
            span > 0 && m->nw ? 100 * busy / (m->nw * span) : 0.0, span);
}

/* After a stop: waits for the answers of the workers whose candidates
 * were dropped in flight (each finishes it or drops it, and answers), so
 * that no send is left unmatched; past the longest candidate limit, the
 * rank that did not answer is given up (the job then ends with
 * MPI_Abort). */
static void wait_pending(at_mpi *m) {
    double deadline = rt_now() + m->stop_wait + AT_MPI_MARGIN_S;
    for (int i = 0; i < m->nw; i++) {
        worker *w = &m->w[i];
        if (!w->pending || w->dead) continue;
        int fr = 0, fs = 0;
        while (rt_now() < deadline) {
            if (!fr && MPI_Test(&w->rreq, &fr, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
            if (!fs && MPI_Test(&w->sreq, &fs, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
            if (fr && fs) break;
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        w->pending = false;
        if (!(fr && fs)) {
            fprintf(stderr, "autotune: MPI rank %d (%s) did not answer after the stop\n",
                    w->rank, w->host);
            w->dead = m->aborted = true;
        } else if (strstr(w->rbuf, "\"dropped\":true")) {
            w->dead = true; /* it has left on its own: no STOP for it */
        }
    }
}

int at_mpi_finish(at_mpi *m, int rc) {
    if (!m) return rc;
    if (m->stopped) wait_pending(m);
    cJSON *stop = cJSON_CreateObject();
    for (int i = 0; i < m->nw; i++)
        if (!m->w[i].dead) send_json(m, m->w[i].rank, TAG_STOP, stop);
    cJSON_Delete(stop);
    fflush(stdout);
    fflush(stderr);
    if (m->aborted) {
        /* A dropped worker may hang; MPI_Finalize would wait for it. */
        fprintf(stderr, "autotune: ending the MPI job with MPI_Abort (a worker was dropped)\n");
        MPI_Abort(m->comm, rc ? rc : 3);
    }
    MPI_Comm_free(&m->comm);
    MPI_Finalize();
    for (int i = 0; i < m->nw; i++) {
        free(m->w[i].rbuf), free(m->w[i].sbuf), free(m->w[i].target_key);
        free(m->w[i].job.steps);
    }
    free(m->w);
    for (int i = m->qhead; i < m->qn; i++) free(m->q[i].steps);
    free(m->q), free(m->done), free(m->rq);
    if (m->trace) fclose(m->trace);
    for (int i = 0; i < m->nmixed; i++) free(m->mixed[i]);
    free(m->mixed);
    free(m);
    return rc;
}
