/*
 * autotune/tune_db_internal.h — the state of a run into a database
 * (tune_db.c), shared with its re-timing (tune_db_retime.c).
 */
#ifndef LOOM_TUNE_DB_INTERNAL_H
#define LOOM_TUNE_DB_INTERNAL_H

#include "autotune/tune_internal.h"

/* One key's trials in the run's figures: the stored ones first (resume),
 * then this run's; latency NaN for a failed trial. */
typedef struct {
    tdb_history_point *pts;
    int n, cap;
    int best_at; /* index of the best valid point; -1: none */
    /* The logs of the key's failed trials, stored before the run and
     * measured in it (malloc'd): tdb_best lists valid records only, and a
     * failed program is not measured again either. */
    char **failed;
    int nfailed, capfailed;
} tune__series;

typedef struct {
    tdb_db *db;
    const tune_db_options *o;
    tune_db_summary *out;
    const char *target;   /* what tune_task and the runners get ("llvm", "cuda ...") */
    tune__series *series; /* one per key */
    int cur;              /* the key of the round under way */
    int call_measured;    /* the key's measured count when the round began */
    char *commit_error;   /* the last record that could not be committed (malloc'd) */
} tune__db_run;

/* Per key, for the task scheduler: its weight (0: its search space is
 * exhausted), FLOP count and similarity group, the rounds it had, the
 * best latency after each (hist) and now (best), and its task id in the
 * cost model. */
typedef struct {
    double *weights, *best, *flops;
    double **hist;
    int *nrounds, *groups, *model_task;
} tune__sched;

/* Reports event ev through o->on_event. */
void tune__db_report(tune__db_run *run, tune_db_event ev, int task, int trials,
                     const tune_result *res, const char *msg);
/* tune_options.on_record of a run (user: the run): commits the record of
 * key run->cur, enters it in the figures, reports TUNE_DB_TRIAL. Non-zero
 * asks the run to stop (the database refuses writes, or the user's
 * on_record asked). */
int tune__db_on_record(void *user, const tune_result *r);
/* tune_options.on_progress of a run: reports TUNE_DB_PROGRESS. */
void tune__db_on_progress(void *user, int done, int total, double best_s, double gflops);
/* The stored logs of key ti (its valid records best first, *nvalid of
 * them, then its failed ones): *n malloc'd strings (tune__db_free_logs). */
char **tune__db_stored_logs(const tune__db_run *run, int ti, int *n, int *nvalid);
void tune__db_free_logs(char **logs, int n);

/* The search of a run whose backend measures while it searches
 * (tune__backend_overlaps; autotune/tune_db_pipe.c): 0, or -1 with *err. */
int tune__db_pipeline(tune__db_run *run, tune__sched *ss, cm_model *model, char **err);

/* Reports a warning (TUNE_DB_WARNING) through o->on_event. */
void tune__db_warn(tune__db_run *run, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Re-times the k best distinct programs of key `task` (and the default
 * schedule) and stores the re-timings; fills the task's retime fields when
 * the database then ranks a re-timed record first. Problems are warnings;
 * the records stay as they were. */
void tune__retime_best(tune__db_run *run, int task, int k);

#endif
