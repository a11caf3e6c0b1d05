/*
 * tools/autotune/main.c — the `autotune` command: tunes one workload (or a
 * suite of them) with the Ansor-style search of loom/autotune.h, commits
 * every measured record to the tuning database as it arrives, and prints
 * progress and the best result.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom/autotune.h"
#include "loom/codegen.h"
#include "loom/cost_model.h"
#include "loom/ops.h"
#include "loom/runtime.h"
#include "loom/tuning_db.h"

static const char usage[] =
    "usage: autotune --op OP --shape K=V,... --trials N --db FILE [--target llvm|cuda]\n"
    "                [--suite FILE.tsv] [--seed S] [--threads T] [--jobs J] [--timeout SEC]\n"
    "                [--resume] [--no-model | --random-model] [--skip-default] [--baseline]\n"
    "                [--per-round R]\n"
    "                [--population P] [--progress-interval SEC] [--retime K]\n"
    "                [--cost-loss rank|squared]\n"
    "       autotune --eval-model --db FILE [--target T] [--suite FILE.tsv]\n"
    "                [--cost-loss rank|squared] [--seed S]\n"
    "Tunes a workload (or every line of a suite: name<TAB>op<TAB>params) and commits\n"
    "every measured schedule to the tuning database FILE. Before the first measurement\n"
    "the cost model is trained on FILE's records for the target, of every workload\n"
    "(warm start), or loads the model stored there when the records are too few.\n"
    "  --threads T   threads the measured kernels use (default: all cores)\n"
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
    "  --skip-default  do not measure the operator's default schedule; by default it\n"
    "                is the first trial of an ops workload (unless FILE has it), so the\n"
    "                best record is never worse than the untuned operator, and on the\n"
    "                CPU the search's first candidates are its sketches filled by the\n"
    "                default schedules' tiling rules, for evolution to refine;\n"
    "                --skip-default leaves those out too (Ansor's behaviour)\n"
    "  --baseline    on the CPU, follow every candidate's samples with two of the\n"
    "                operator's default schedule and scale its latencies by how much\n"
    "                slower or faster the host runs that baseline than in the first\n"
    "                run: on a shared host, latencies taken minutes apart become\n"
    "                comparable (they are then those of the host's speed at the start)\n"
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
    "Exit status: 0 finished, 1 no candidate ran correctly (or tuning failed),\n"
    "2 usage or input error (nothing measured), 130 interrupted by Ctrl-C.\n"
    "Each option is given at most once; numbers outside an option's range are refused.\n"
    "  --eval-model  evaluate the cost model on FILE's valid records of the target,\n"
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
static void on_sigint(int sig) {
    (void)sig;
    stop_flag = 1;
    /* write(2) is async-signal-safe; SA_RESETHAND makes a second Ctrl-C
     * quit at once (every record committed so far is already durable). */
    static const char msg[] =
        "\nautotune: stopping after the candidates being measured (Ctrl-C again to quit now)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
}

/* One task's trials in this run (after the resumed ones with --resume):
 * the series "95% of best at trial n" and the best are computed from. */
typedef struct {
    tdb_history_point *pts;
    int n, cap;
    int best_at;   /* index into pts of the best valid point; -1: none */
    double flops;  /* FLOP per call, for GFLOP/s */
} series_t;

typedef struct {
    tdb_db *db;
    const char *key, *target_key;
    series_t *series; /* the current task's */
    const char *task; /* its name in a suite (the best shown is its), else NULL */
    int done;         /* trials done in total (resumed included) */
    int total;        /* the budget (resumed included) */
    int run_start;    /* trials done before this run (resumed) */
    double t0;
    bool tty;
    double interval;  /* seconds between plain progress lines */
    double last_line; /* time of the last plain line; 0: none */
    int last_done;    /* trials shown by the last plain line; -1: none */
    int commit_errors;
} ctx_t;

static void series_add(series_t *s, double latency) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        tdb_history_point *np = realloc(s->pts, sizeof *np * (size_t)cap);
        if (!np) return; /* the figures lose this trial; the record is saved */
        s->pts = np;
        s->cap = cap;
    }
    double best = s->best_at >= 0 ? s->pts[s->best_at].latency : NAN;
    if (!isnan(latency) && (isnan(best) || latency < best)) {
        s->best_at = s->n;
        best = latency;
    }
    s->pts[s->n] = (tdb_history_point){s->n + 1, 0, latency, best};
    s->n++;
}

static double series_best(const series_t *s) {
    return s->best_at >= 0 ? s->pts[s->best_at].latency : 0;
}

static double series_gflops(const series_t *s) {
    double b = series_best(s);
    return b > 0 && s->flops > 0 ? s->flops / b * 1e-9 : 0;
}

/* The progress bar (terminal) or one plain line. */
static void show_progress(ctx_t *c, bool force) {
    double now = rt_now(), elapsed = now - c->t0;
    int run_done = c->done - c->run_start, run_total = c->total - c->run_start;
    double eta = run_done > 0 ? elapsed / run_done * (run_total - run_done) : 0;
    if (eta < 0) eta = 0;
    double best_s = c->series ? series_best(c->series) : 0;
    double gflops = c->series ? series_gflops(c->series) : 0;
    if (c->tty) {
        int w = 30, f = c->total > 0 ? (int)((double)w * c->done / c->total) : 0;
        char bar[40];
        for (int i = 0; i < w; i++) bar[i] = i < f ? '#' : '.';
        bar[w] = 0;
        printf("\r%s%s[%s] %d/%d trials  best %.2f GFLOP/s  %.4f ms  %.0fs elapsed  ETA %.0fs ",
               c->task ? c->task : "", c->task ? ": " : "", bar, c->done, c->total, gflops,
               best_s * 1e3, elapsed, eta);
    } else {
        /* A line at most every interval seconds keeps logs short; the
         * last one is forced. */
        if (c->done == c->last_done) return; /* nothing new to say */
        if (!force && c->last_line > 0 && now - c->last_line < c->interval) return;
        if (!force && c->last_line == 0 && elapsed < c->interval) return;
        c->last_line = now;
        c->last_done = c->done;
        printf("%s%strials %d/%d  best %.2f GFLOP/s  %.4f ms  elapsed %.1f s  eta %.1f s\n",
               c->task ? c->task : "", c->task ? ": " : "", c->done, c->total, gflops,
               best_s * 1e3, elapsed, eta);
    }
    fflush(stdout);
}

static int on_record(void *user, const tune_result *r) {
    ctx_t *c = user;
    tdb_record_in in;
    memset(&in, 0, sizeof in);
    in.workload_key = c->key;
    in.target = c->target_key;
    in.steps_json = r->steps_json;
    in.nlatencies = r->error_code ? 0 : r->nlatencies;
    in.latencies = r->latencies;
    in.error_code = r->error_code;
    in.error_msg = r->error_msg;
    int rc = 0;
    if (tdb_commit_record(c->db, &in) < 0) {
        fprintf(stderr, "autotune: cannot commit trial %d: %s\n", r->trial, tdb_errmsg(c->db));
        if (++c->commit_errors > 3) rc = 1;
    }
    /* The median: the statistic the database ranks "best" by. */
    if (c->series) series_add(c->series, r->error_code || !(r->median > 0) ? NAN : r->median);
    c->done++;
    show_progress(c, false);
    return rc;
}

static void on_progress(void *user, int done, int total, double best_s, double gflops) {
    (void)done, (void)total, (void)best_s, (void)gflops; /* the records carry it all */
    show_progress(user, false);
}

static int fail(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "autotune: ");
    fprintf(stderr, fmt, a ? a : "", b ? b : "");
    fputc('\n', stderr);
    return 2;
}

/* The options that only a search reads (refused with --eval-model). */
static const char *const search_only[] = {
    "--op",      "--shape",     "--trials",     "--threads",           "--jobs",
    "--timeout", "--resume",    "--skip-default", "--baseline",        "--per-round",
    "--population", "--progress-interval", "--retime"};

/* An integer option's value: a whole decimal number in [lo, hi]. Values
 * are read as 64-bit and checked before any narrowing, so 4294967299
 * cannot become 3 trials. */
static bool parse_int(const char *s, long long *v) {
    char *end;
    errno = 0;
    *v = strtoll(s, &end, 10);
    return s[0] && !*end && !errno;
}

typedef struct {
    const char *name;
    long long lo, hi;
    long long *v;
    bool *given; /* NULL: no one asks */
} int_option;

typedef struct {
    const char *name;
    double lo, hi; /* lo exclusive when lo_open */
    bool lo_open;
    double *v;
} real_option;

/* The options that take no value. */
static const char *const flag_options[] = {"--resume",       "--eval-model", "--no-model",
                                           "--random-model", "--skip-default", "--baseline"};

static bool is_flag(const char *a) {
    for (size_t j = 0; j < sizeof flag_options / sizeof *flag_options; j++)
        if (!strcmp(a, flag_options[j])) return true;
    return false;
}

/* The option names of argv[1..i) that equal argv[i]'s (values are skipped):
 * true when argv[i] was given before. */
static bool given_before(int i, char **argv) {
    for (int j = 1; j < i; j++) {
        if (!strcmp(argv[j], argv[i])) return true;
        if (!is_flag(argv[j])) j++; /* its value */
    }
    return false;
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

/* Fills each task's canonical key; on an unknown op or a bad shape says
 * so on stderr and returns -1. */
static int resolve_keys(task_line *tasks, int n) {
    te_ctx *kctx = te_ctx_new();
    if (!kctx) {
        fprintf(stderr, "autotune: out of memory\n");
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (!ops_find(tasks[i].op)) {
            fprintf(stderr, "autotune: unknown op '%s' (known: %s)\n", tasks[i].op, ops_names());
            rc = -1;
            break;
        }
        const char *k = ops_canonical_key(kctx, tasks[i].op, tasks[i].shape);
        if (!k) {
            fprintf(stderr, "autotune: bad shape '%s' for %s: %s\n", tasks[i].shape, tasks[i].op,
                    te_ctx_errmsg(kctx));
            rc = -1;
            break;
        }
        snprintf(tasks[i].key, sizeof tasks[i].key, "%s", k);
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
        if (n < 0) fail("cannot read suite '%s': %s", path, strerror(errno));
        else if (n == 0) fail("suite '%s' has no workloads%s", path, "");
        free(*out);
        *out = NULL;
        return -1;
    }
    return n;
}

/* Records already in the DB for (key, target): their logs and count. */
static int known_logs(tdb_db *db, const char *key, const char *target, char ***logs, int *ntrials) {
    tdb_history_point *h = NULL;
    int nh = tdb_history(db, key, target, &h);
    *ntrials = nh > 0 ? nh : 0;
    free(h);
    tdb_record *r = NULL;
    int n = tdb_best(db, key, target, 1 << 20, &r);
    if (n < 0) n = 0;
    *logs = calloc((size_t)n + 1, sizeof(char *));
    for (int i = 0; i < n; i++) (*logs)[i] = strdup(r[i].steps_json);
    tdb_records_free(r, n);
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

/* qsort order of record indices by first-timed median (the records of
 * retime_best; one call at a time, from the main thread). */
static const tdb_record *by_median_recs;
static int by_median(const void *a, const void *b) {
    double x = by_median_recs[*(const int *)a].median, y = by_median_recs[*(const int *)b].median;
    if (x != y) return x < y ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

/* Times the database's best program of `key` and the best distinct others
 * by first timing (k in all, plus the default schedule) again, side by side
 * (tune_retime, 5 rounds), stores the re-timings and prints the outcome;
 * `name` prefixes the line in a suite. Problems are reported on stderr
 * and leave the records as they were. */
static void retime_best(tdb_db *db, const char *key, const char *tkey, const char *target,
                        const char *name, double flops, int k, const tune_measure_options *mo) {
    enum { ROUNDS = 5 };
    tdb_record *r = NULL;
    int nr = tdb_best(db, key, tkey, 1 << 20, &r);
    if (nr < 0) {
        fprintf(stderr, "autotune: re-timing: %s\n", tdb_errmsg(db));
        return;
    }
    /* The operator's default schedule joins them wherever it ranks: it
     * is what a tuned program must beat under the same load. */
    char *dflt = tune_default_steps(key, target);
    /* The candidates: the database's current best (tdb_best's first, which
     * must defend its place), then the best by first timing. Ranking by
     * tdb_best alone would pick only programs re-timed in earlier runs,
     * which lead it, and a faster program found since would never be
     * re-timed, so never ranked above them. */
    int *order = nr > 0 ? malloc(sizeof *order * (size_t)nr) : NULL;
    for (int i = 0; order && i < nr; i++) order[i] = i;
    if (order && nr > 1) {
        by_median_recs = r;
        qsort(order + 1, (size_t)nr - 1, sizeof *order, by_median);
    }
    const char **steps = calloc((size_t)k + 1, sizeof *steps);
    int *pick = calloc((size_t)k + 1, sizeof *pick), n = 0;
    bool have_default = false;
    for (int o = 0; order && steps && pick && o < nr; o++) {
        int i = order[o];
        bool is_default = dflt && !strcmp(dflt, r[i].steps_json);
        if (n >= k && (have_default || !is_default)) continue; /* k, and one more for it */
        bool seen = false;
        for (int j = 0; j < n && !seen; j++) seen = !strcmp(steps[j], r[i].steps_json);
        if (seen) continue;
        steps[n] = r[i].steps_json, pick[n++] = i;
        have_default |= is_default;
        if (n > k) break;
    }
    free(dflt);
    free(order);
    tune_result *res = n >= 2 ? calloc((size_t)n, sizeof *res) : NULL;
    char *err = NULL;
    tune_measurer *m = res ? tune_measurer_new(key, target, mo, &err) : NULL;
    double t0 = rt_now();
    if (res && !m) fprintf(stderr, "autotune: re-timing: %s\n", err ? err : "no runner");
    if (m && tune_retime(m, n, steps, NULL, ROUNDS, res) == 0) {
        int stored = 0;
        for (int j = 0; j < n; j++) {
            const tdb_record *rec = &r[pick[j]];
            if (res[j].error_code)
                fprintf(stderr, "autotune: re-timing record #%lld: %s: %s\n", (long long)rec->id,
                        tune_error_name(res[j].error_code), res[j].error_msg);
            else if (tdb_commit_retime(db, rec->id, res[j].nlatencies, res[j].latencies))
                fprintf(stderr, "autotune: re-timing record #%lld: %s\n", (long long)rec->id,
                        tdb_errmsg(db));
            else
                stored++;
        }
        /* The winner as the database now ranks it. */
        tdb_record *top = NULL;
        if (stored && tdb_best(db, key, tkey, 1, &top) == 1 && !isnan(top->retimed_latency))
            printf("%s%sre-timed the %d best programs side by side (%d rounds, %.1f s): best "
                   "#%lld, %.4f ms, %.2f GFLOP/s (first timed %.4f ms)\n",
                   name ? name : "", name ? ": " : "", stored, ROUNDS, rt_now() - t0,
                   (long long)top->id, top->retimed_latency * 1e3,
                   flops > 0 ? flops / top->retimed_latency * 1e-9 : 0, top->median * 1e3);
        tdb_records_free(top, top ? 1 : 0);
    }
    tune_measurer_free(m);
    free(err), free(res), free(steps), free(pick);
    tdb_records_free(r, nr);
}

int main(int argc, char **argv) {
    tune_runner_maybe_run(argc, argv);
    const char *op = NULL, *shape = NULL, *target = "llvm", *db_path = NULL, *suite = NULL;
    long long trials = 0, seed = 1, threads = 0, jobs = 0, per_round = 64, population = 2048;
    long long retime = 8;
    double timeout = 10, progress_interval = 10;
    bool resume = false, no_model = false, skip_default = false, have_trials = false, eval = false;
    bool baseline = false, random_model = false, have_loss = false, have_seed = false;
    const char *tune_only = NULL; /* the first option given that only a search reads */
    cm_params cp; /* the cost model's; options may change its loss */
    cm_params_default(&cp);
    int_option ints[] = {
        {"--trials", 1, 10000000, &trials, &have_trials},
        {"--seed", 0, LLONG_MAX, &seed, &have_seed},
        {"--threads", 0, 1024, &threads, NULL},
        {"--jobs", 0, 64, &jobs, NULL},
        {"--per-round", 1, 4096, &per_round, NULL},
        {"--population", 1, 1000000, &population, NULL},
        {"--retime", 0, 64, &retime, NULL},
    };
    real_option reals[] = {
        {"--timeout", 0, 3600, true, &timeout},
        {"--progress-interval", 0, 86400, false, &progress_interval},
    };
    bool have_op = false, have_shape = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (a[0] != '-' || a[1] != '-')
            return fail("unexpected argument '%s' (options start with --)\n%s", a, usage);
        /* A repeated option is a mistake, not an override: which of the
         * two was meant cannot be known. */
        if (given_before(i, argv)) return fail("option %s is given more than once%s", a, "");
        for (size_t j = 0; j < sizeof search_only / sizeof *search_only; j++)
            if (!tune_only && !strcmp(a, search_only[j])) tune_only = a;
        if (is_flag(a)) {
            if (!strcmp(a, "--resume")) resume = true;
            else if (!strcmp(a, "--eval-model")) eval = true;
            else if (!strcmp(a, "--no-model")) no_model = true;
            else if (!strcmp(a, "--random-model")) random_model = true;
            else if (!strcmp(a, "--skip-default")) skip_default = true;
            else if (!strcmp(a, "--baseline")) baseline = true;
            continue;
        }
        int_option *io = NULL;
        real_option *ro = NULL;
        for (size_t j = 0; j < sizeof ints / sizeof *ints; j++)
            if (!strcmp(a, ints[j].name)) io = &ints[j];
        for (size_t j = 0; j < sizeof reals / sizeof *reals; j++)
            if (!strcmp(a, reals[j].name)) ro = &reals[j];
        bool known = io || ro || !strcmp(a, "--op") || !strcmp(a, "--shape") ||
                     !strcmp(a, "--target") || !strcmp(a, "--db") || !strcmp(a, "--suite") ||
                     !strcmp(a, "--cost-loss");
        if (!known) return fail("unknown option '%s'\n%s", a, usage);
        if (i + 1 >= argc) return fail("option %s needs a value\n%s", a, usage);
        const char *v = argv[++i];
        if (io) {
            long long x;
            if (!parse_int(v, &x) || x < io->lo || x > io->hi) {
                fprintf(stderr, "autotune: option %s: '%s' is not an integer from %lld to %lld\n",
                        a, v, io->lo, io->hi);
                return 2;
            }
            *io->v = x;
            if (io->given) *io->given = true;
        } else if (ro) {
            char *end;
            errno = 0;
            double x = strtod(v, &end);
            if (!v[0] || *end || errno || !(ro->lo_open ? x > ro->lo : x >= ro->lo) ||
                !(x <= ro->hi)) {
                fprintf(stderr, "autotune: option %s: '%s' is not a number of seconds %s %g and "
                        "<= %g\n", a, v, ro->lo_open ? ">" : ">=", ro->lo, ro->hi);
                return 2;
            }
            *ro->v = x;
        } else if (!strcmp(a, "--op")) op = v, have_op = true;
        else if (!strcmp(a, "--shape")) shape = v, have_shape = true;
        else if (!strcmp(a, "--target")) target = v;
        else if (!strcmp(a, "--db")) db_path = v;
        else if (!strcmp(a, "--suite")) suite = v;
        else if (!strcmp(a, "--cost-loss")) {
            have_loss = true;
            if (!strcmp(v, "rank")) cp.loss = CM_LOSS_RANK;
            else if (!strcmp(v, "squared")) cp.loss = CM_LOSS_SQUARED;
            else return fail("--cost-loss '%s': rank or squared%s", v, "");
        }
    }
    if (suite && (have_op || have_shape))
        return fail("--suite FILE tunes the workloads listed in FILE; %s does not apply with it "
                    "(give either --suite or --op/--shape)%s", have_op ? "--op" : "--shape", "");
    if (have_shape && !have_op && !eval)
        return fail("--shape needs --op: it gives the operator's parameters%s%s", "", "");
    if (no_model && random_model)
        return fail("--no-model and --random-model exclude each other: the first measures "
                    "random programs without a search, the second searches with random "
                    "scores%s%s", "", "");
    if (have_loss && (no_model || random_model))
        return fail("--cost-loss sets the trained cost model's objective; with --%s no model "
                    "is trained%s", no_model ? "no-model" : "random-model", "");
    if (eval && (no_model || random_model))
        return fail("--eval-model evaluates the trained cost model; --%s does not apply%s",
                    no_model ? "no-model" : "random-model", "");
    if (eval) {
        if (!db_path) return fail("--eval-model needs --db FILE%s%s", "", "");
        if (tune_only)
            return fail("--eval-model evaluates the cost model on stored records; %s applies to a "
                        "search only%s", tune_only, "");
        if (have_seed) cp.seed = (uint64_t)seed;
        if (strncmp(target, "llvm", 4) && strncmp(target, "cuda", 4))
            return fail("unknown target '%s' (known: llvm, cuda)%s", target, "");
        task_line *st = NULL;
        int nst = suite ? load_suite(suite, &st) : 0;
        if (nst < 0) return 2;
        char *tk = !strcmp(target, "llvm") ? tdb_host_target() : strdup(target);
        int erc = eval_model(db_path, tk, &cp, suite, st, nst);
        free(tk);
        free(st);
        return erc;
    }
    /* Every argument is checked before the database is touched. */
    if (!have_trials) return fail("--trials N is required%s%s", "", "");
    if (!db_path) return fail("--db FILE is required%s%s", "", "");
    if (!suite && !op) return fail("--op OP (or --suite FILE) is required%s%s", "", "");
    bool cuda = tune_target_is_cuda(target);
    if (cuda && !rt_cuda_available())
        return fail("target '%s': no CUDA device is available here (%s); tune on the host CPU "
                    "with --target llvm",
                    target, rt_last_error());
    if (!cuda && (strncmp(target, "llvm", 4) || (target[4] && target[4] != ' ')))
        return fail("unknown target '%s' (known: llvm, cuda)%s", target, "");
    /* An unknown -mcpu would file every record under a key no machine has
     * (and LLVM may abort on it while compiling). */
    char *terr = NULL;
    if (cg_target_check(target, &terr)) {
        fprintf(stderr, "autotune: %s\n", terr ? terr : "bad target");
        free(terr);
        return 2;
    }
    task_line *tasks = NULL;
    int ntasks = 0;
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
    for (int i = 0; i < ntasks; i++) {
        char *ferr = NULL;
        if (tune_check_fits(tasks[i].key, &ferr)) {
            fprintf(stderr, "%s\n", ferr ? ferr : "autotune: out of memory");
            free(ferr), free(tasks);
            return 2;
        }
    }
    te_ctx *kctx = te_ctx_new();
    series_t *series = calloc((size_t)ntasks, sizeof *series);
    for (int i = 0; i < ntasks; i++) {
        series[i].best_at = -1;
        ops_workload *w = ops_from_key(kctx, tasks[i].key);
        series[i].flops = w ? w->flops : 0;
    }
    te_ctx_free(kctx);
    char *err = NULL;
    tdb_db *db = tdb_open(db_path, NULL, &err);
    if (!db) {
        fprintf(stderr, "autotune: cannot open the database: %s\n", err ? err : db_path);
        free(err);
        return 2;
    }
    char *tkey = tdb_host_target();
    if (!strncmp(target, "llvm -", 6)) {
        free(tkey);
        tkey = strdup(target);
    }
    char *gkey = cuda ? tdb_cuda_target(0) : NULL;
    if (gkey) {
        free(tkey);
        tkey = gkey;
    }
    for (int i = 0; i < ntasks; i++)
        if (tdb_commit_workload_key(db, tasks[i].key) < 0) {
            fprintf(stderr, "autotune: cannot write to the database: %s\n", tdb_errmsg(db));
            return 2;
        }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, NULL);

    cp.seed = (uint64_t)seed;
    /* XGBoost predicts on one thread: the search calls it from each of
     * its workers, and OpenMP teams inside them spin between calls and
     * take the cores from the lowering (a round's search: 35 s with them,
     * 8 s without, on 2 cores). Training runs between rounds, when no
     * search, build or kernel does, and takes every core. */
    cp.nthread = 1;
    int ncores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (ncores < 1) ncores = 1;
    cp.train_nthread = ncores;
    cm_model *model = NULL;
    int *model_task = calloc((size_t)ntasks, sizeof *model_task);
    if (!model_task) {
        fprintf(stderr, "autotune: out of memory\n");
        return 2;
    }
    if (random_model) {
        /* A new model that is never updated (scorer.update stays NULL)
         * stays untrained: it predicts at random from cp.seed. No warm
         * start, and nothing to save. */
        model = cm_model_new(&cp);
        if (!model) {
            fprintf(stderr, "autotune: out of memory\n");
            free(model_task);
            return 2;
        }
    } else if (!no_model) {
        /* Warm start: trained on every workload's records of this target
         * before the first measurement; each task's measurements are then
         * labelled with its own records (model_task). */
        const char **keys = calloc((size_t)ntasks, sizeof *keys);
        for (int i = 0; keys && i < ntasks; i++) keys[i] = tasks[i].key;
        tune_warm_info wi;
        char *werr = NULL;
        model = keys ? tune_warm_start(db, tkey, ntasks, keys, &cp, model_task, &wi, &werr) : NULL;
        free(keys);
        if (!model) {
            fprintf(stderr, "autotune: %s\n", werr ? werr : "cannot create the cost model");
            free(werr), free(model_task);
            return 2;
        }
        if (wi.message[0]) printf("%s\n", wi.message);
    }
    ctx_t c;
    memset(&c, 0, sizeof c);
    c.db = db;
    c.target_key = tkey;
    c.tty = isatty(1) != 0;
    c.interval = progress_interval;
    c.last_done = -1;
    /* Per task: rounds given, best after each round (task scheduler). */
    int *nrounds = calloc((size_t)ntasks, sizeof(int));
    double **hist = calloc((size_t)ntasks, sizeof(double *));
    double *best = calloc((size_t)ntasks, sizeof(double));
    double *weights = calloc((size_t)ntasks, sizeof(double));
    double *flops = calloc((size_t)ntasks, sizeof(double));
    int *groups = calloc((size_t)ntasks, sizeof(int));
    const char **opnames = calloc((size_t)ntasks, sizeof(char *));
    for (int i = 0; i < ntasks; i++) {
        weights[i] = 1;
        flops[i] = series[i].flops;
        opnames[i] = tasks[i].op;
    }
    tune_scheduler_groups(ntasks, opnames, flops, groups);
    int done = 0, rc = 0;
    if (resume) {
        /* The stored trials come first in each task's series; with one
         * task they also count toward the budget. */
        for (int i = 0; i < ntasks; i++) {
            tdb_history_point *h = NULL;
            int nh = tdb_history(db, tasks[i].key, tkey, &h);
            for (int k = 0; k < nh; k++) series_add(&series[i], h[k].latency);
            free(h);
            if (ntasks == 1) done = nh > 0 ? nh : 0;
        }
        if (ntasks == 1 && done) printf("resume: %d trials already in %s\n", done, db_path);
    }
    int budget = (int)trials;
    c.done = c.run_start = done;
    c.total = budget;
    c.t0 = rt_now();
    double spent[4] = {0}; /* search, build, run, model: seconds over all tasks */
    tune_measure_options mo = {0};
    mo.threads = jobs > 0 ? (int)jobs : ncores;
    mo.num_threads = (int)threads;
    mo.run_timeout = timeout;
    /* A build that slow is a program unrolled past any use; each one holds
     * a runner for the whole limit. */
    mo.build_timeout = 1.5 * timeout;
    mo.min_repeat_ms = 20;
    mo.repeat = 5;
    while (done < budget && !stop_flag) {
        int ti = ntasks == 1 ? 0
                             : tune_scheduler_pick(ntasks, weights, nrounds,
                                                   (const double *const *)hist, best, flops, groups);
        if (ti < 0) break; /* every task's search has run dry */
        char **logs = NULL;
        int nt = 0, nl = known_logs(db, tasks[ti].key, tkey, &logs, &nt);
        tune_options o;
        memset(&o, 0, sizeof o);
        int left = budget - done;
        /* One call per task for a single task; a round at a time for a suite. */
        o.trials = ntasks == 1 ? left : (left < per_round ? left : (int)per_round);
        o.per_round = (int)per_round;
        o.population = (int)population;
        o.skip_default = skip_default;
        o.baseline = baseline;
        o.seed = (uint64_t)seed + (uint64_t)done;
        o.measure = mo;
        if (model) {
            o.scorer.user = model;
            o.scorer.task = model_task[ti];
            o.scorer.predict = cm_scorer_predict;
            o.scorer.update = random_model ? NULL : cm_scorer_update;
        }
        o.on_record = on_record;
        o.on_progress = on_progress;
        o.user = &c;
        o.stop = &stop_flag;
        o.nknown = nl;
        o.known_steps = (const char *const *)logs;
        if (resume) o.nseed = nl < 8 ? nl : 8; /* logs are best first */
        c.key = tasks[ti].key;
        c.series = &series[ti];
        c.task = ntasks > 1 ? tasks[ti].name : NULL;
        if (ntasks > 1) {
            if (c.tty) printf("\n");
            printf("task %s: %d trials\n", tasks[ti].name, o.trials);
        }
        tune_summary sum;
        char *terr = NULL;
        int r = tune_task(tasks[ti].key, cuda ? target : "llvm", &o, &sum, &terr);
        for (int i = 0; i < nl; i++) free(logs[i]);
        free(logs);
        if (r) {
            fprintf(stderr, "\nautotune: %s\n", terr ? terr : "tuning failed");
            free(terr);
            rc = 1;
            break;
        }
        spent[0] += sum.search_s, spent[1] += sum.build_s;
        spent[2] += sum.run_s, spent[3] += sum.train_s;
        if (sum.measured == 0) {
            if (ntasks == 1) break;
            weights[ti] = 0;
        }
        if (sum.best_trial && (best[ti] <= 0 || sum.best_s < best[ti])) best[ti] = sum.best_s;
        double *nh = realloc(hist[ti], sizeof(double) * (size_t)(nrounds[ti] + 1));
        if (nh) {
            hist[ti] = nh;
            hist[ti][nrounds[ti]++] = best[ti];
        }
        done += sum.measured;
        c.done = done; /* the same count, should a record have been missed */
        free(sum.best_steps_json);
        if (c.commit_errors > 3) {
            rc = 1;
            break;
        }
    }
    if (c.tty)
        printf("\n");
    else if (c.series)
        show_progress(&c, true);
    if (stop_flag) {
        printf("interrupted: %d trials measured and saved\n", done - c.run_start);
        rc = 130; /* as a shell reports a command ended by SIGINT: scripts can tell */
    }
    double elapsed = rt_now() - c.t0;
    if (ntasks == 1) {
        const series_t *s = &series[0];
        if (s->best_at >= 0)
            printf("best: %.2f GFLOP/s, %.4f ms, trial %d of %d, %.1f s, 95%% of best at trial "
                   "%d\n",
                   series_gflops(s), series_best(s) * 1e3, s->best_at + 1, done, elapsed,
                   tdb_history_reach(s->pts, s->n, 0.95));
        else {
            printf("best: none (no candidate ran correctly in %d trials)\n", done);
            if (!rc) rc = 1;
        }
    } else {
        for (int i = 0; i < ntasks; i++) {
            const series_t *s = &series[i];
            if (s->best_at >= 0)
                printf("%s: best %.2f GFLOP/s, %.4f ms, trial %d of %d (%d rounds), 95%% of best "
                       "at trial %d\n",
                       tasks[i].name, series_gflops(s), series_best(s) * 1e3, s->best_at + 1,
                       s->n, nrounds[i], tdb_history_reach(s->pts, s->n, 0.95));
            else
                printf("%s: best none (%d trials, %d rounds)\n", tasks[i].name, s->n, nrounds[i]);
        }
        printf("%d trials, %.1f s\n", done, elapsed);
    }
    if (retime >= 2 && !stop_flag && done > c.run_start)
        for (int i = 0; i < ntasks && !stop_flag; i++) /* Ctrl-C skips the rest */
            if (series[i].best_at >= 0)
                retime_best(db, tasks[i].key, tkey, cuda ? target : "llvm",
                            ntasks > 1 ? tasks[i].name : NULL, flops[i], (int)retime, &mo);
    if (done > c.run_start)
        printf("time: search %.1f s, build %.1f s, run %.1f s, model %.1f s\n", spent[0],
               spent[1], spent[2], spent[3]);
    if (model) {
        void *blob;
        size_t len;
        if (cm_model_is_trained(model) && cm_model_save_buffer(model, &blob, &len) == 0) {
            tdb_put_cost_model(db, tkey, CM_BLOB_FORMAT, blob, len);
            free(blob);
        }
        cm_model_free(model);
    }
    for (int i = 0; i < ntasks; i++) {
        free(hist[i]);
        free(series[i].pts);
    }
    free(hist), free(nrounds), free(best), free(weights), free(tasks), free(tkey);
    free(flops), free(groups), free(opnames), free(series), free(model_task);
    tdb_close(db);
    return rc;
}
