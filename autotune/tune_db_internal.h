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
