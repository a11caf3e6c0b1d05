/*
 * tools/autotune/main.c — the `autotune` command: tunes one workload (or a
 * suite of them) into the tuning database with tune_task_db /
 * tune_tasks_db (loom/autotune.h: the library does the work, records
 * committed as they arrive, warm start, re-timing) and prints progress
 * and the best result from the run's events.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom/autotune.h"
#include "loom/codegen.h"
#include "loom/cost_model.h"
#include "loom/graph.h"
#include "loom/runtime.h"
#include "loom/tuning_db.h"
#include "tools/autotune/mpi.h"

/* Under mpirun with more than one rank (rank 0 only); NULL otherwise. */
static at_mpi *mpi;

static const char usage[] =
    "usage: autotune --op OP --shape K=V,... --trials N --db FILE [--target llvm|cuda]\n"
    "                [--suite FILE.tsv] [--seed S] [--threads T] [--jobs J] [--timeout SEC]\n"
    "                [--resume] [--no-model | --random-model] [--skip-default] [--baseline]\n"
    "                [--cache-flush] [--no-heuristic] [--per-round R]\n"
    "                [--population P] [--progress-interval SEC] [--retime K]\n"
    "                [--cost-loss rank|squared] [--allow-mixed]\n"
    "                [--plugin LIB.so]...\n"
    "       autotune --model MODEL.onnx [--shape INPUT=1x3x224x224]... --trials N --db FILE\n"
    "                [options as above]\n"
    "       autotune --list-sketches --op OP --shape K=V,... [--target T] [--plugin LIB.so]...\n"
    "       autotune --eval-model --db FILE [--target T] [--threads T] [--suite FILE.tsv]\n"
    "                [--cost-loss rank|squared] [--seed S] [--plugin LIB.so]...\n"
    "Tunes a workload (or every line of a suite: name<TAB>op<TAB>params) and commits\n"
    "every measured schedule to the tuning database FILE. Before the first measurement\n"
    "the cost model is trained on FILE's records for the target, of every workload\n"
    "(warm start), or loads the model stored there when the records are too few.\n"
    "  --model F     tune every task of an ONNX model: each fused group of nodes is a\n"
    "                workload (identical groups are one task, weighted by how often it\n"
    "                runs), tuned as one job sharing the --trials budget; --shape\n"
    "                NAME=DIMS (repeatable) fixes a dynamic input's shape. loomrun F\n"
    "                --db FILE then runs the model with the best records\n"
    "  --plugin LIB  load a shared library of your own operators first (repeatable):\n"
    "                its entry point int loom_register_ops(void) registers their\n"
    "                builders (tune_register_builder); the runner processes load it\n"
    "                too. Then --op NAME --shape S tunes the key \"NAME(S)\", S as\n"
    "                written (the builder parses it; tunedb --plugin LIB finds the\n"
    "                records with the same --op/--shape)\n"
    "  --threads T   threads the measured kernels use (default: all cores). On a CPU\n"
    "                the records are kept per thread count: with T > 1 under the\n"
    "                target key and \" -num-cores T\" (loomrun --threads T reads them)\n"
    "  --jobs J      candidates compiled at once (default: cores); on the CPU up to 4\n"
    "                runner processes per job hold built candidates until their runs\n"
    "  --timeout SEC per-candidate run timeout (default 10; builds get 1.5x: 15 s, as\n"
    "                Ansor's LocalBuilder)\n"
    "  --resume      count the trials already in FILE toward N, never re-measure them,\n"
    "                and seed the search's population with the best stored programs\n"
    "  --no-model    no cost model: each round measures programs of random annotation\n"
    "                (random sampling; no evolution)\n"
    "  --random-model  the same search as with the cost model (evolution from the\n"
    "                best measured programs and random ones), ranked by a model that\n"
    "                predicts at random (Ansor's RandomModel): the baseline that\n"
    "                shows what the model's ranking adds\n"
    "  --cost-loss L the cost model's training objective: rank (default; pairwise\n"
    "                order within each workload) or squared (Ansor's regression of\n"
    "                throughput relative to the workload's best)\n"
    "  --skip-default  do not measure the operator's default schedule (the search\n"
    "                alone); by default it is the first trial (unless FILE has it; for\n"
    "                a model's fused group or a plugin's operator on the CPU: the\n"
    "                schedule derived from its structure, which loomrun runs untuned),\n"
    "                so the best record is never worse than the untuned operator\n"
    "  --list-sketches  print the sketches the search would fill for the workload on\n"
    "                the target, first first (on cuda: tensor cores first where they\n"
    "                apply), and exit; needs no GPU, measures nothing\n"
    "  --no-heuristic  on the CPU the search's first candidates are its sketches filled\n"
    "                by tiling rules derived from the workload's structure (heuristic\n"
    "                and structural programs), for evolution to refine; --no-heuristic\n"
    "                starts from random programs only (Ansor's behaviour)\n"
    "  --baseline    on the CPU, follow every candidate's samples with two of the\n"
    "                operator's default schedule and scale its latencies by how much\n"
    "                slower or faster the host runs that baseline than in the first\n"
    "                run: on a shared host, latencies taken minutes apart become\n"
    "                comparable (they are then those of the host's speed at the start)\n"
    "  --cache-flush on the CPU, evict each candidate's tensors (arguments and packed\n"
    "                weights) from the caches before every timed call, to rank it as it\n"
    "                runs with its operands in memory (TVM's enable_cpu_cache_flush; in\n"
    "                ResNet-50, whose activations arrive warm, warm timing ranked\n"
    "                better). Cold and warm latencies do not compare: FILE keeps one\n"
    "                kind per target (records say which), and a run of the other kind\n"
    "                is refused before it measures\n"
    "  --retime K    after the run, time the K best distinct programs in FILE again\n"
    "                (FILE's best, then the best by first timing), side by side\n"
    "                in 5 rounds (default 8; 0 or 1: not at all), and rank\n"
    "                them by their fastest round: on a shared machine, programs timed\n"
    "                at different moments are not comparable (tdb_commit_retime)\n"
    "  --progress-interval SEC  when stdout is not a terminal, a progress line at most\n"
    "                every SEC seconds of measuring (default 10), and one at the end\n"
    "Progress: a bar on a terminal, else plain lines: trials, best GFLOP/s, best\n"
    "latency (median of the repeats, as in the database), elapsed time, ETA. The\n"
    "closing line adds the first trial that reached 95% of the best GFLOP/s.\n"
    "Ctrl-C stops after the candidates being measured (every measured one is saved)\n"
    "and prints the closing line; a second Ctrl-C quits at once.\n"
    "Under mpirun with N > 1 ranks (Open MPI; built with LOOM_WITH_MPI), rank 0 runs\n"
    "the search and the cost model and is the only database writer, and ranks 1..N-1\n"
    "measure, each candidate going to whichever worker is free; every worker must run\n"
    "the same Loom version and measure the same target key as rank 0 (else the run\n"
    "refuses, naming the rank). -np 1 or no mpirun: all in this process.\n"
    "  --allow-mixed under mpirun, take workers of other target keys too: each result\n"
    "                is committed under the key of the worker that measured it (the\n"
    "                workers are listed by key at the start). The search learns from\n"
    "                every worker's latencies alike; with --resume, programs stored\n"
    "                under any of the workers' keys are never measured again.\n"
    "Under mpirun rank 0 searches one round behind: the next round is searched (from the\n"
    "results of the rounds before the one being measured) while the workers measure; the\n"
    "candidates proposed for a seed are the same whatever the number of workers (not the\n"
    "same as without mpirun, where each round waits for the one before).\n"
    "Progress under mpirun adds the most workers busy at once since the previous line (of\n"
    "those alive) and trials per minute; the closing lines give each worker's trials,\n"
    "failures, build, run and busy seconds, the workers' busy share, and rank 0's search\n"
    "and model seconds spent while workers measured.\n"
    "Exit status: 0 finished, 1 no candidate ran correctly (or tuning failed),\n"
    "2 usage or input error (nothing measured), 130 interrupted by Ctrl-C.\n"
    "Each option but --plugin is given at most once; numbers outside an option's range\n"
    "are refused.\n"
    "  --eval-model  evaluate the cost model on FILE's valid records of the target\n"
    "                (and --threads' count, as a search keeps them),\n"
    "                leaving one workload out at a time: train on all other workloads,\n"
    "                score the held-out one's programs, compare with their latencies.\n"
    "                Prints per workload and on average, for the model and for the\n"
    "                random model: pairwise ranking accuracy (share of pairs of the\n"
    "                workload's programs with different latencies that the scores order\n"
    "                as the latencies do) and top-k recall (1 when the workload's truly\n"
    "                fastest program is among the k programs the model scores highest,\n"
    "                else 0; the mean over workloads), k = 1 and 5. With --suite, only\n"
    "                the suite's workloads are held out, and the records of FILE's\n"
    "                other workloads serve for training only (a corpus of measured\n"
    "                programs helps the model transfer to new workloads). --seed S\n"
    "                seeds the training (XGBoost's and the early-stopping split's\n"
    "                draws) and the random model (default: the cost model's, 43);\n"
    "                the options of a search (--op, --trials, ...) do not apply.\n";

static volatile sig_atomic_t stop_flag;
/* tune_options.stop takes a volatile int *: the same type here. */
_Static_assert(_Generic((sig_atomic_t)0, int: 1, default: 0), "sig_atomic_t is not int");
static void on_sigint(int sig) {
    (void)sig;
    stop_flag = 1;
    /* write(2) is async-signal-safe; SA_RESETHAND makes a second Ctrl-C
     * quit at once (every record committed so far is already durable). */
    static const char msg[] =
        "\nautotune: stopping after the candidates being measured (Ctrl-C again to quit now)\n";
    /* Under mpirun the workers got the signal too: candidates in flight
     * are dropped, not waited for (Open MPI kills the ranks soon after). */
    static const char mpi_msg[] =
        "\nautotune: stopping: the results received are saved, the candidates in flight "
        "dropped\n";
    ssize_t w = mpi ? write(2, mpi_msg, sizeof mpi_msg - 1) : write(2, msg, sizeof msg - 1);
    (void)w;
}

/* What the progress display keeps between events. */
typedef struct {
    const char *db_path;
    const char *const *names; /* the tasks' names in a suite; NULL for one */
    int cur;          /* the task of the round under way; -1: none yet */
    double t0;
    bool tty;
    bool started;     /* the run is set up (TUNE_DB_STARTED): errors are now 1, not 2 */
    double interval;  /* seconds between plain progress lines */
    double last_line; /* time of the last plain line; 0: none */
    int last_done;    /* trials shown by the last plain line; -1: none */
    int rc;           /* the exit status so far */
} view_t;

/* The MPI figures of a progress line ("" without MPI). */
static void workers_text(char *buf, size_t n, double elapsed, int run_done) {
    if (!mpi) return;
    int busy, total;
    at_mpi_load(mpi, &busy, &total);
    snprintf(buf, n, "  workers %d/%d busy  %.1f trials/min", busy, total,
             elapsed > 0 ? run_done / elapsed * 60 : 0.0);
}

/* The progress bar (terminal) or one plain line. */
static void show_progress(view_t *v, const tune_db_summary *s, bool force) {
    double now = rt_now(), elapsed = now - v->t0;
    int run_done = s->done - s->resumed, run_total = s->total - s->resumed;
    double eta = run_done > 0 ? elapsed / run_done * (run_total - run_done) : 0;
    if (eta < 0) eta = 0;
    const tune_db_task *t = v->cur >= 0 ? &s->tasks[v->cur] : NULL;
    double best_s = t ? t->best_s : 0, gflops = t ? t->best_gflops : 0;
    const char *task = v->names && v->cur >= 0 ? v->names[v->cur] : NULL;
    /* Under MPI: the most workers busy at once since the last line, of
     * those alive, and the rate the cluster measures at (what adding
     * workers should raise); filled only for a line that is shown. */
    char workers[96] = "";
    if (v->tty) {
        workers_text(workers, sizeof workers, elapsed, run_done);
        int w = 30, f = s->total > 0 ? (int)((double)w * s->done / s->total) : 0;
        char bar[40];
        for (int i = 0; i < w; i++) bar[i] = i < f ? '#' : '.';
        bar[w] = 0;
        printf("\r%s%s[%s] %d/%d trials  best %.2f GFLOP/s  %.4f ms  %.0fs elapsed  ETA %.0fs%s ",
               task ? task : "", task ? ": " : "", bar, s->done, s->total, gflops, best_s * 1e3,
               elapsed, eta, workers);
    } else {
        /* A line at most every interval seconds keeps logs short; the
         * last one is forced. */
        if (s->done == v->last_done) return; /* nothing new to say */
        if (!force && v->last_line > 0 && now - v->last_line < v->interval) return;
        if (!force && v->last_line == 0 && elapsed < v->interval) return;
        v->last_line = now;
        v->last_done = s->done;
        workers_text(workers, sizeof workers, elapsed, run_done);
        printf("%s%strials %d/%d  best %.2f GFLOP/s  %.4f ms  elapsed %.1f s  eta %.1f s%s\n",
               task ? task : "", task ? ": " : "", s->done, s->total, gflops, best_s * 1e3,
               elapsed, eta, workers);
    }
    fflush(stdout);
}

/* The closing lines: the best of each task, when its search has ended. */
static void show_closing(view_t *v, const tune_db_summary *s) {
    if (v->tty)
        printf("\n");
    else if (v->cur >= 0)
        show_progress(v, s, true);
    if (stop_flag) {
        printf("interrupted: %d trials measured and saved\n", s->done - s->resumed);
        v->rc = 130; /* as a shell reports a command ended by SIGINT: scripts can tell */
    }
    if (s->defaults_retried)
        printf("resume: timed the current default schedule of %d task%s whose records were "
               "tuned against an older one\n",
               s->defaults_retried, s->defaults_retried == 1 ? "" : "s");
    double elapsed = rt_now() - v->t0;
    for (int i = 0; i < s->ntasks; i++)
        if (s->tasks[i].sketches_dropped)
            printf("note: %s%s%d sketches not searched (generator caps "
                   "TUNE_MAX_PARTIAL_SKETCHES = %d, TUNE_MAX_SKETCHES = %d)\n",
                   v->names ? v->names[i] : "", v->names ? ": " : "",
                   s->tasks[i].sketches_dropped, TUNE_MAX_PARTIAL_SKETCHES, TUNE_MAX_SKETCHES);
    if (!v->names) {
        const tune_db_task *t = &s->tasks[0];
        if (t->best_trial)
            printf("best: %.2f GFLOP/s, %.4f ms, trial %d of %d, %.1f s, 95%% of best at trial "
                   "%d\n",
                   t->best_gflops, t->best_s * 1e3, t->best_trial, s->done, elapsed, t->reach95);
        else {
            printf("best: none (no candidate ran correctly in %d trials)\n", s->done);
            if (!v->rc) v->rc = 1;
        }
        return;
    }
    for (int i = 0; i < s->ntasks; i++) {
        const tune_db_task *t = &s->tasks[i];
        if (t->best_trial)
            printf("%s: best %.2f GFLOP/s, %.4f ms, trial %d of %d (%d rounds), 95%% of best at "
                   "trial %d\n",
                   v->names[i], t->best_gflops, t->best_s * 1e3, t->best_trial, t->trials,
                   t->rounds, t->reach95);
        else
            printf("%s: best none (%d trials, %d rounds)\n", v->names[i], t->trials, t->rounds);
    }
    printf("%d trials, %.1f s\n", s->done, elapsed);
}

static void on_event(void *user, const tune_db_report *r) {
    view_t *v = user;
    const tune_db_summary *s = r->summary;
    switch (r->event) {
    case TUNE_DB_STARTED:
        v->started = true;
        /* The key loomrun and tunedb must read them under (their thread
         * count names it too: tune_threads_key). */
        if (s->target_key) printf("records go to %s under '%s'\n", v->db_path, s->target_key);
        if (s->warm.message[0]) printf("%s\n", s->warm.message);
        if (s->resumed)
            printf("resume: %d trials already in %s\n", s->resumed, v->db_path);
        v->t0 = rt_now();
        break;
    case TUNE_DB_ROUND:
        v->cur = r->task;
        if (v->names) {
            if (v->tty) printf("\n");
            printf("task %s: %d trial%s\n", v->names[r->task], r->trials, r->trials == 1 ? "" : "s");
        }
        break;
    case TUNE_DB_TRIAL:
    case TUNE_DB_PROGRESS:
        /* Under MPI two rounds may be in flight: the line shows the task
         * whose result came in. */
        v->cur = r->task;
        show_progress(v, s, false);
        break;
    case TUNE_DB_SEARCHED: show_closing(v, s); break;
    case TUNE_DB_RETIMED: {
        const tune_db_task *t = &s->tasks[r->task];
        const char *name = v->names ? v->names[r->task] : NULL;
        if (t->retimed)
            printf("%s%sre-timed the %d best programs side by side (%d rounds, %.1f s): best "
                   "#%lld, %.4f ms, %.2f GFLOP/s (first timed %.4f ms)\n",
                   name ? name : "", name ? ": " : "", t->retimed, TUNE_DB_RETIME_ROUNDS,
                   t->retime_s, (long long)t->retime_best_id, t->retime_best_s * 1e3,
                   t->flops > 0 ? t->flops / t->retime_best_s * 1e-9 : 0,
                   t->retime_best_median * 1e3);
        break;
    }
    case TUNE_DB_WARNING: fprintf(stderr, "%s\n", r->message); break;
    }
}

/* A usage or input error: says why on stderr and gives exit status 2. */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("autotune: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

/* The key of --eval-model's records: plain llvm is the host's, any other
 * target its canonical text (a GPU's key as stored, "cuda sm_90 NAME",
 * names records of a GPU this machine may not have), with --threads'
 * count on a CPU (tune_threads_key). 0, or 2 after the message. */
static int eval_target_key(const char *target, int threads, char **key) {
    cg_target t;
    char *err = NULL;
    if (cg_target_parse(target, &t, &err)) {
        int rc = usage_error("%s", err ? err : "out of memory");
        free(err);
        return rc;
    }
    if (t.kind == CG_TARGET_C) {
        cg_target_free(&t);
        return usage_error("target 'c' has no tuning records (known: llvm, cuda)");
    }
    bool host = t.kind == CG_TARGET_LLVM && !t.cpu && !t.features;
    char *machine = host ? tdb_host_target() : cg_target_str(&t);
    cg_target_free(&t);
    *key = tune_threads_key(machine, threads);
    free(machine);
    return *key ? 0 : usage_error("out of memory");
}

/* --list-sketches: the search space's sketches of one workload, as the
 * search would generate them for target (no device needed). */
static int list_sketches(const char *op, const char *shape, const char *target) {
    if (!op) return usage_error("--list-sketches needs --op OP (and --shape)");
    te_ctx *ctx = te_ctx_new();
    const char *key = ctx ? tune_workload_key(ctx, op, shape ? shape : "") : NULL;
    tune_workload w;
    static tune_sketch sk[TUNE_MAX_SKETCHES];
    int n = -1;
    bool gpu = target && tune_target_is_cuda(target);
    if (key && !tune_build_workload(ctx, key, &w))
        n = gpu ? tune_generate_sketches_gpu_for(ctx, &w, target, sk, TUNE_MAX_SKETCHES, NULL)
                : tune_generate_sketches(ctx, &w, sk, TUNE_MAX_SKETCHES);
    if (n < 0) {
        int rc = usage_error("%s", ctx ? te_ctx_errmsg(ctx) : "out of memory");
        te_ctx_free(ctx);
        return rc;
    }
    printf("%s on %s: %d sketches\n", key, target ? target : "llvm", n);
    for (int i = 0; i < n; i++) printf("  %d: %s\n", i, sk[i].desc);
    te_ctx_free(ctx);
    return 0;
}

/* The options, as getopt_long takes them (each returns 0 and its index;
 * --help returns 'h'). */
static const struct option options[] = {
    {"op", required_argument, NULL, 0},          {"shape", required_argument, NULL, 0},
    {"trials", required_argument, NULL, 0},      {"db", required_argument, NULL, 0},
    {"target", required_argument, NULL, 0},      {"suite", required_argument, NULL, 0},
    {"seed", required_argument, NULL, 0},        {"threads", required_argument, NULL, 0},
    {"jobs", required_argument, NULL, 0},        {"timeout", required_argument, NULL, 0},
    {"resume", no_argument, NULL, 0},            {"no-model", no_argument, NULL, 0},
    {"random-model", no_argument, NULL, 0},      {"skip-default", no_argument, NULL, 0},
    {"baseline", no_argument, NULL, 0},          {"per-round", required_argument, NULL, 0},
    {"population", required_argument, NULL, 0},  {"progress-interval", required_argument, NULL, 0},
    {"retime", required_argument, NULL, 0},      {"cost-loss", required_argument, NULL, 0},
    {"eval-model", no_argument, NULL, 0},        {"plugin", required_argument, NULL, 0},
    {"model", required_argument, NULL, 0},       {"allow-mixed", no_argument, NULL, 0},
    {"no-heuristic", no_argument, NULL, 0},      {"list-sketches", no_argument, NULL, 0},
    {"cache-flush", no_argument, NULL, 0},
    {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0}};
enum { NOPTIONS = sizeof options / sizeof *options - 1 };

/* The index of option `name` in options. */
static int option_index(const char *name) {
    for (int i = 0; i < NOPTIONS; i++)
        if (!strcmp(options[i].name, name)) return i;
    return -1;
}

/* The options that only a search reads (refused with --eval-model). */
static bool search_only(const char *name) {
    static const char *const names[] = {
        "op",           "shape",      "trials",     "model",     "jobs",
        "timeout",      "resume",     "skip-default", "no-heuristic", "baseline", "per-round",
        "population",   "progress-interval", "retime", "allow-mixed", "cache-flush"};
    for (size_t j = 0; j < sizeof names / sizeof *names; j++)
        if (!strcmp(name, names[j])) return true;
    return false;
}

/* An integer option's value: a whole decimal number in [lo, hi]. Values
 * are read as 64-bit and checked before any narrowing, so 4294967299
 * cannot become 3 trials. */
static bool int_value(const char *name, const char *s, long long lo, long long hi,
                      long long *v) {
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (!s[0] || *end || errno || x < lo || x > hi) {
        usage_error("option --%s: '%s' is not an integer from %lld to %lld", name, s, lo, hi);
        return false;
    }
    *v = x;
    return true;
}

/* A number of seconds in (lo, hi] (lo_open) or [lo, hi]; inf and nan are
 * outside every range. */
static bool seconds_value(const char *name, const char *s, double lo, double hi, bool lo_open,
                          double *v) {
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (!s[0] || *end || errno || !(lo_open ? x > lo : x >= lo) || !(x <= hi)) {
        usage_error("option --%s: '%s' is not a number of seconds %s %g and <= %g", name, s,
                    lo_open ? ">" : ">=", lo, hi);
        return false;
    }
    *v = x;
    return true;
}

typedef struct {
    char name[64], op[64], shape[512], key[1024];
} task_line;

/* Reads a suite file: name<TAB>op<TAB>params, '#' comments. */
static int read_suite(const char *path, task_line **out) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0, cap = 0;
    task_line *t = NULL;
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        char *a = strtok(line, "\t"), *b = strtok(NULL, "\t"), *c = strtok(NULL, "\t");
        if (!a || !b) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            task_line *nt = realloc(t, sizeof *t * (size_t)cap);
            if (!nt) break;
            t = nt;
        }
        snprintf(t[n].name, sizeof t[n].name, "%s", a);
        snprintf(t[n].op, sizeof t[n].op, "%s", b);
        snprintf(t[n].shape, sizeof t[n].shape, "%s", c ? c : "");
        n++;
    }
    fclose(f);
    *out = t;
    return n;
}

/* Fills each task's key (tune_workload_key: the registry's canonical key,
 * or a plugin operator's "OP(SHAPE)"); on an unknown op or a bad shape
 * says so on stderr and returns -1. */
static int resolve_keys(task_line *tasks, int n) {
    te_ctx *kctx = te_ctx_new();
    if (!kctx) {
        fprintf(stderr, "autotune: out of memory\n");
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const char *k = tune_workload_key(kctx, tasks[i].op, tasks[i].shape);
        if (!k) {
            fprintf(stderr, "autotune: %s\n", te_ctx_errmsg(kctx));
            rc = -1;
        } else if (strlen(k) >= sizeof tasks[i].key) {
            fprintf(stderr, "autotune: the key of %s is longer than %zu bytes\n", tasks[i].op,
                    sizeof tasks[i].key - 1);
            rc = -1;
        } else {
            snprintf(tasks[i].key, sizeof tasks[i].key, "%s", k);
        }
    }
    te_ctx_free(kctx);
    return rc;
}

/* Reads a suite file and resolves its keys: the count (> 0), or -1 after
 * saying what is wrong (the caller exits with 2). */
static int load_suite(const char *path, task_line **out) {
    *out = NULL;
    int n = read_suite(path, out);
    if (n <= 0 || resolve_keys(*out, n)) {
        if (n < 0) usage_error("cannot read suite '%s': %s", path, strerror(errno));
        else if (n == 0) usage_error("suite '%s' has no workloads", path);
        free(*out);
        *out = NULL;
        return -1;
    }
    return n;
}

/* --eval-model: leave-one-workload-out evaluation of the cost model
 * (parameters cp); with a suite, only its workloads are held out (tasks, ntasks: read and
 * resolved; NULL, 0: every workload). */
static int eval_model(const char *db_path, const char *tkey, const cm_params *cp,
                      const char *suite, const task_line *tasks, int ntasks) {
    char *err = NULL;
    tdb_open_options oo = {.readonly = true};
    tdb_db *db = tdb_open(db_path, &oo, &err);
    if (!db) {
        fprintf(stderr, "autotune: cannot open the database: %s\n", err ? err : db_path);
        free(err);
        return 2;
    }
    tune_dataset d;
    tune_eval e;
    if (tune_dataset_load(db, tkey, 0, &d, &err)) {
        fprintf(stderr, "%s\n", err);
        free(err);
        tdb_close(db);
        return 1;
    }
    bool *held = NULL;
    int nheld = 0;
    if (suite) {
        held = calloc((size_t)d.ntasks + 1, sizeof *held);
        if (!held) {
            fprintf(stderr, "autotune: out of memory\n");
            tune_dataset_free(&d);
            tdb_close(db);
            return 1;
        }
        for (int i = 0; i < ntasks; i++) {
            int t = tune_dataset_task(&d, tasks[i].key);
            if (t >= 0) nheld += !held[t], held[t] = true;
            else
                fprintf(stderr, "autotune: --eval-model: suite workload '%s' (%s) has no valid "
                        "records of target '%s' in %s; not evaluated\n",
                        tasks[i].name, tasks[i].key, tkey, db_path);
        }
        if (!nheld) {
            fprintf(stderr, "autotune: --eval-model: no workload of suite '%s' has valid records "
                    "of target '%s' in %s\n", suite, tkey, db_path);
            free(held);
            tune_dataset_free(&d);
            tdb_close(db);
            return 1;
        }
    }
    int rc = tune_eval_model(&d, cp, held, &e, &err);
    if (rc) {
        fprintf(stderr, "autotune: %s (target '%s')\n", err, tkey);
        free(err);
    } else {
        printf("eval-model: %d programs of %d workloads, target '%s', %s loss, leave one workload "
               "out", d.n, d.ntasks, tkey, cp->loss == CM_LOSS_RANK ? "rank" : "squared");
        if (suite)
            printf(" (the %d of suite '%s' held out in turn, the other %d for training only)",
                   nheld, suite, d.ntasks - nheld);
        printf("\n");
        printf("%-60s %8s %9s %9s %5s %5s %8s %8s\n", "workload", "programs", "pairwise",
               "(random)", "top1", "top5", "(rnd t1)", "(rnd t5)");
        for (int i = 0; i < e.nrows; i++) {
            const tune_eval_row *r = &e.rows[i];
            printf("%-60s %8d %9.3f %9.3f %5d %5d %8d %8d\n", r->key, r->programs, r->pairwise,
                   r->pairwise_random, r->top1, r->top5, r->top1_random, r->top5_random);
        }
        printf("pairwise accuracy: %.3f (random %.3f)\n", e.pairwise, e.pairwise_random);
        printf("top-1 recall: %.3f (random %.3f)\n", e.top1, e.top1_random);
        printf("top-5 recall: %.3f (random %.3f)\n", e.top5, e.top5_random);
        tune_eval_free(&e);
    }
    free(held);
    tune_dataset_free(&d);
    tdb_close(db);
    return rc ? 1 : 0;
}

/* The tuning tasks of a model: loads it, fixes the input shapes, extracts
 * the fused groups' keys. Prints the task list. The count, or -1 after
 * saying why (exit status 2). */
static int model_tasks(const char *path, const char *target, int nshapes, const char *const *specs,
                       gr_model **model, gr_task **tasks) {
    char *err = NULL;
    gr_input_shape shapes[64];
    int n = -1;
    memset(shapes, 0, sizeof shapes);
    for (int i = 0; i < nshapes; i++)
        if (!gr_input_shape_parse(specs[i], &shapes[i], &err)) {
            usage_error("--shape: %s", err ? err : "out of memory");
            goto done;
        }
    if (!(*model = gr_model_load(path, &err))) {
        fprintf(stderr, "autotune: %s\n", err ? err : "out of memory");
        goto done;
    }
    gr_compile_options co = {.target = target, .nshapes = nshapes, .shapes = shapes};
    if (gr_extract_tasks(*model, &co, tasks, &n, &err) != 0) {
        fprintf(stderr, "autotune: %s\n", err ? err : "out of memory");
        n = -1;
        goto done;
    }
    if (n == 0) {
        fprintf(stderr, "autotune: model %s has nothing to tune (every output is a constant)\n",
                path);
        n = -1;
        goto done;
    }
    int groups = 0;
    for (int i = 0; i < n; i++) groups += (*tasks)[i].uses;
    printf("model %s: %d tasks (%d fused groups)\n", path, n, groups);
    for (int i = 0; i < n; i++) printf("  task %d: %s, weight %d\n", i, (*tasks)[i].label, (*tasks)[i].uses);
done:
    for (int i = 0; i < nshapes; i++) free((void *)shapes[i].name), free((void *)shapes[i].shape);
    free(err);
    return n;
}

/* The closing table of a model's run: per task FLOPs, weight, best
 * GFLOP/s and latency, trials; and the model's estimated latency, the sum
 * of weight x best latency (tasks without a valid trial are left out and
 * counted). */
static void show_model_table(const tune_db_summary *s, const gr_task *tasks) {
    printf("\n%-5s %10s %6s %10s %10s %7s  %s\n", "task", "MFLOP", "weight", "GFLOP/s", "ms",
           "trials", "ops");
    double total = 0;
    int missing = 0;
    for (int i = 0; i < s->ntasks; i++) {
        const tune_db_task *t = &s->tasks[i];
        printf("%-5d %10.2f %6d %10.2f %10.4f %7d  %s\n", i, t->flops * 1e-6, tasks[i].uses,
               t->best_gflops, t->best_s * 1e3, t->trials, tasks[i].label);
        if (t->best_trial) total += tasks[i].uses * t->best_s;
        else missing++;
    }
    printf("model estimate: %.3f ms per inference (sum of weight x best latency", total * 1e3);
    if (missing) printf("; %d tasks without a valid trial left out", missing);
    printf(")\n");
}

static int run_main(int argc, char **argv);

int main(int argc, char **argv) {
    tune_runner_maybe_run(argc, argv);
    /* Worker ranks of an MPI job measure for rank 0 until it stops them. */
    int worker_rc = 0;
    if (at_mpi_start(argc, argv, &mpi, &worker_rc)) return worker_rc;
    return at_mpi_finish(mpi, run_main(argc, argv));
}

static int run_main(int argc, char **argv) {
    const char *op = NULL, *shape = NULL, *target = "llvm", *db_path = NULL, *suite = NULL;
    const char *model_path = NULL;
    enum { MAX_SHAPES = 64 };
    const char *shapes[MAX_SHAPES];
    int nshapes = 0;
    long long trials = 0, seed = 1, threads = 0, jobs = 0, per_round = 64, population = 2048;
    long long retime = 8;
    double timeout = 10, progress_interval = 10;
    bool resume = false, no_model = false, skip_default = false, no_heuristic = false, eval = false;
    bool list = false;
    bool baseline = false, random_model = false, allow_mixed = false, cache_flush = false;
    const char *tune_only = NULL; /* the first option given that only a search reads (its name) */
    cm_params cp; /* the cost model's; options may change its loss */
    cm_params_default(&cp);
    bool have_op = false, have_shape = false;
    enum { MAX_PLUGINS = 16 };
    const char *plugins[MAX_PLUGINS];
    int nplugins = 0, given[NOPTIONS] = {0};
    opterr = 0; /* the messages below name the option and the rule */
    for (;;) {
        int li = -1;
        int c = getopt_long(argc, argv, ":h", options, &li);
        if (c == -1) break;
        if (c == 'h') {
            fputs(usage, stdout);
            return 0;
        }
        if (c == '?')
            return usage_error("unknown option '%s'\n%s", argv[optind - 1], usage);
        if (c == ':') return usage_error("option %s needs a value\n%s", argv[optind - 1], usage);
        const char *name = options[li].name, *v = optarg;
        /* A repeated option is a mistake, not an override: which of the
         * two was meant cannot be known. --plugin loads one library each. */
        if (given[li]++ && strcmp(name, "plugin") && strcmp(name, "shape"))
            return usage_error("option --%s is given more than once", name);
        if (!tune_only && search_only(name)) tune_only = name;
        bool ok = true;
        if (!strcmp(name, "op")) op = v, have_op = true;
        else if (!strcmp(name, "shape")) {
            if (nshapes == MAX_SHAPES) return usage_error("at most %d --shape options", MAX_SHAPES);
            shape = shapes[nshapes++] = v, have_shape = true;
        } else if (!strcmp(name, "model")) model_path = v;
        else if (!strcmp(name, "target")) target = v;
        else if (!strcmp(name, "db")) db_path = v;
        else if (!strcmp(name, "suite")) suite = v;
        else if (!strcmp(name, "resume")) resume = true;
        else if (!strcmp(name, "eval-model")) eval = true;
        else if (!strcmp(name, "no-model")) no_model = true;
        else if (!strcmp(name, "random-model")) random_model = true;
        else if (!strcmp(name, "skip-default")) skip_default = true;
        else if (!strcmp(name, "no-heuristic")) no_heuristic = true;
        else if (!strcmp(name, "list-sketches")) list = true;
        else if (!strcmp(name, "baseline")) baseline = true;
        else if (!strcmp(name, "cache-flush")) cache_flush = true;
        else if (!strcmp(name, "allow-mixed")) allow_mixed = true;
        else if (!strcmp(name, "trials")) ok = int_value(name, v, 1, 10000000, &trials);
        else if (!strcmp(name, "seed")) ok = int_value(name, v, 0, LLONG_MAX, &seed);
        else if (!strcmp(name, "threads")) ok = int_value(name, v, 0, 1024, &threads);
        else if (!strcmp(name, "jobs")) ok = int_value(name, v, 0, 64, &jobs);
        else if (!strcmp(name, "per-round")) ok = int_value(name, v, 1, 4096, &per_round);
        else if (!strcmp(name, "population")) ok = int_value(name, v, 1, 1000000, &population);
        else if (!strcmp(name, "retime")) ok = int_value(name, v, 0, 64, &retime);
        else if (!strcmp(name, "timeout")) ok = seconds_value(name, v, 0, 3600, true, &timeout);
        else if (!strcmp(name, "progress-interval"))
            ok = seconds_value(name, v, 0, 86400, false, &progress_interval);
        else if (!strcmp(name, "plugin")) {
            if (nplugins == MAX_PLUGINS) return usage_error("at most %d plugins", MAX_PLUGINS);
            plugins[nplugins++] = v;
        } else if (!strcmp(name, "cost-loss")) {
            if (!strcmp(v, "rank")) cp.loss = CM_LOSS_RANK;
            else if (!strcmp(v, "squared")) cp.loss = CM_LOSS_SQUARED;
            else return usage_error("--cost-loss '%s': rank or squared", v);
        }
        if (!ok) return 2;
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s' (options start with --)\n%s", argv[optind],
                           usage);
    bool have_trials = given[option_index("trials")], have_seed = given[option_index("seed")];
    bool have_loss = given[option_index("cost-loss")];
    if (nshapes > 1 && !model_path)
        return usage_error("option --shape is given more than once (only --model takes one per "
                           "input)");
    if (model_path && (suite || have_op))
        return usage_error("--model tunes the tasks of a model; %s does not apply with it",
                           suite ? "--suite" : "--op");
    if (model_path && eval)
        return usage_error("--eval-model evaluates the cost model on stored records; --model "
                           "applies to a search only");
    if (suite && (have_op || have_shape))
        return usage_error("--suite FILE tunes the workloads listed in FILE; %s does not apply "
                           "with it (give either --suite or --op/--shape)",
                           have_op ? "--op" : "--shape");
    if (have_shape && !have_op && !eval && !model_path)
        return usage_error("--shape needs --op: it gives the operator's parameters");
    if (no_model && random_model)
        return usage_error("--no-model and --random-model exclude each other: the first "
                           "measures random programs without a search, the second searches "
                           "with random scores");
    if (have_loss && (no_model || random_model))
        return usage_error("--cost-loss sets the trained cost model's objective; with --%s no "
                           "model is trained", no_model ? "no-model" : "random-model");
    if (eval && (no_model || random_model))
        return usage_error("--eval-model evaluates the trained cost model; --%s does not apply",
                           no_model ? "no-model" : "random-model");
    /* The plugins' operators must be known before any key is read. */
    for (int i = 0; i < nplugins; i++) {
        char *perr = NULL;
        if (tune_load_plugin(plugins[i], &perr)) {
            fprintf(stderr, "autotune: %s\n", perr ? perr : "out of memory");
            free(perr);
            return 2;
        }
    }
    if (list) return list_sketches(have_op ? op : NULL, shape, target);
    if (eval) {
        if (!db_path) return usage_error("--eval-model needs --db FILE");
        if (tune_only)
            return usage_error("--eval-model evaluates the cost model on stored records; --%s "
                               "applies to a search only", tune_only);
        if (have_seed) cp.seed = (uint64_t)seed;
        char *tk = NULL;
        if (eval_target_key(target, (int)threads, &tk)) return 2;
        task_line *st = NULL;
        int nst = suite ? load_suite(suite, &st) : 0;
        if (nst < 0) {
            free(tk);
            return 2;
        }
        int erc = eval_model(db_path, tk, &cp, suite, st, nst);
        free(tk);
        free(st);
        return erc;
    }
    /* Every argument is checked before the database is touched. */
    if (!have_trials) return usage_error("--trials N is required");
    if (!db_path) return usage_error("--db FILE is required");
    if (!suite && !op && !model_path)
        return usage_error("--op OP (or --suite FILE, or --model FILE) is required");
    if (cache_flush && tune_target_is_cuda(target))
        return usage_error("--cache-flush evicts a kernel's tensors from the CPU's caches; "
                           "target '%s' runs its kernels on the GPU",
                           target);
    char *err = NULL, *tkey = tune_target_key(target, &err);
    if (!tkey) {
        fprintf(stderr, "%s\n", err ? err : "autotune: out of memory");
        free(err);
        return 2;
    }
    free(tkey);
    if (allow_mixed && !mpi)
        return usage_error("--allow-mixed takes MPI workers of several target keys; this run "
                           "has none (it measures in this process: start it with mpirun -np N, "
                           "N > 1)");
    /* Every worker must run this Loom and measure this target key (or,
     * with --allow-mixed, keeps its records under its own). */
    if (at_mpi_handshake(mpi, target, (int)threads, allow_mixed)) return 2;
    task_line *tasks = NULL;
    int ntasks = 0;
    const char **keys = NULL, **names = NULL;
    double *weights = NULL;
    gr_model *model = NULL;
    gr_task *mtasks = NULL;
    if (model_path) {
        ntasks = model_tasks(model_path, target, nshapes, shapes, &model, &mtasks);
        if (ntasks < 0) return 2;
        keys = calloc((size_t)ntasks, sizeof *keys);
        names = calloc((size_t)ntasks, sizeof *names);
        weights = calloc((size_t)ntasks, sizeof *weights);
        if (!keys || !names || !weights) return usage_error("out of memory");
        for (int i = 0; i < ntasks; i++) {
            keys[i] = mtasks[i].key;
            names[i] = mtasks[i].label;
            weights[i] = mtasks[i].uses;
        }
    } else {
        if (suite) {
            ntasks = load_suite(suite, &tasks);
            if (ntasks < 0) return 2;
        } else {
            tasks = calloc(1, sizeof *tasks);
            ntasks = 1;
            snprintf(tasks[0].name, sizeof tasks[0].name, "%s", op);
            snprintf(tasks[0].op, sizeof tasks[0].op, "%s", op);
            snprintf(tasks[0].shape, sizeof tasks[0].shape, "%s", shape ? shape : "");
            if (resolve_keys(tasks, ntasks)) return 2;
        }
        keys = calloc((size_t)ntasks, sizeof *keys);
        names = calloc((size_t)ntasks, sizeof *names);
        if (!keys || !names) return usage_error("out of memory");
        for (int i = 0; i < ntasks; i++) keys[i] = tasks[i].key, names[i] = tasks[i].name;
    }
    /* tune_tasks_db checks this too, but after the database is opened:
     * a refused shape must not leave a new database file behind. */
    for (int i = 0; i < ntasks; i++) {
        char *ferr = NULL;
        if (tune_check_fits(keys[i], &ferr)) {
            fprintf(stderr, "%s\n", ferr ? ferr : "autotune: out of memory");
            free(ferr), free(tasks);
            return 2;
        }
    }
    tdb_db *db = tdb_open(db_path, NULL, &err);
    if (!db) {
        fprintf(stderr, "autotune: cannot open the database: %s\n", err ? err : db_path);
        free(err);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, NULL);
    /* mpirun (Open MPI) turns Ctrl-C into SIGTERM to every rank, then
     * SIGKILL after odls_base_sigkill_timeout (1 s by default): rank 0
     * stops as on Ctrl-C, saving what it received. */
    if (mpi) sigaction(SIGTERM, &sa, NULL);
    at_mpi_watch_stop(mpi, &stop_flag);

    view_t v = {.db_path = db_path, .names = ntasks > 1 ? names : NULL, .cur = -1,
                .tty = isatty(1) != 0, .interval = progress_interval, .last_done = -1};
    cp.seed = (uint64_t)seed;
    tune_db_options o;
    memset(&o, 0, sizeof o);
    o.tune.trials = (int)trials;
    o.tune.per_round = (int)per_round;
    o.tune.population = (int)population;
    o.tune.skip_default = skip_default;
    o.tune.no_heuristic = no_heuristic;
    o.tune.baseline = baseline;
    o.tune.seed = (uint64_t)seed;
    o.tune.stop = &stop_flag;
    o.tune.user = &v;
    tune_measure_options *mo = &o.tune.measure;
    mo->threads = jobs > 0 ? (int)jobs : rt_num_cores();
    mo->num_threads = (int)threads;
    mo->run_timeout = timeout;
    /* A build that slow is a program unrolled past any use; each one holds
     * a runner for the whole limit. */
    mo->build_timeout = 1.5 * timeout;
    mo->min_repeat_ms = 20;
    mo->repeat = 5;
    mo->cache_flush = cache_flush;
    mo->backend = at_mpi_backend(mpi);
    o.resume = resume;
    o.model = no_model ? TUNE_DB_MODEL_NONE : random_model ? TUNE_DB_MODEL_RANDOM : TUNE_DB_MODEL_WARM;
    o.cost_params = &cp;
    o.retime = retime >= 2 ? (int)retime : -1;
    o.on_event = on_event;
    o.weights = weights;
    o.n_mixed_keys = at_mpi_mixed_keys(mpi, &o.mixed_keys);
    if (model_path && trials < (long long)ntasks * per_round)
        printf("note: %lld trials give a first round of %lld to at most %lld of the %d tasks; "
               "tasks without a round keep their default schedule (--trials %lld covers all)\n",
               trials, per_round, (trials + per_round - 1) / per_round, ntasks,
               (long long)ntasks * per_round);
    tune_db_summary sum;
    int rc = tune_tasks_db(db, ntasks, keys, target, &o, &sum, &err);
    if (rc) {
        fprintf(stderr, "%s\n", err ? err : "autotune: tuning failed");
        /* Nothing measured: the input was at fault (a workload that does
         * not build, a database that refuses the workload). */
        v.rc = v.started ? v.rc ? v.rc : 1 : 2;
    }
    if (sum.done > sum.resumed && mpi)
        printf("time: search %.1f s, build %.1f s, run %.1f s, model %.1f s; search and model "
               "while workers measured %.1f s\n",
               sum.search_s, sum.build_s, sum.run_s, sum.train_s, sum.overlap_s);
    else if (sum.done > sum.resumed)
        printf("time: search %.1f s, build %.1f s, run %.1f s, model %.1f s\n", sum.search_s,
               sum.build_s, sum.run_s, sum.train_s);
    at_mpi_report(mpi, stdout);
    if (model_path) show_model_table(&sum, mtasks);
    free(err);
    tune_db_summary_free(&sum);
    free(keys), free(names), free(tasks), free(weights);
    gr_tasks_free(mtasks, model_path ? ntasks : 0);
    gr_model_free(model);
    tdb_close(db);
    return v.rc;
}
