/*
 * tools/autotune/mpi.h — `mpirun -np N autotune ...`: rank 0 runs the
 * command as without MPI (search, cost model, the only database writer)
 * and measures through a tune_measure_backend that hands each candidate
 * to whichever worker rank is free; ranks 1..N-1 measure (tools/autotune/
 * mpi.c, built with LOOM_WITH_MPI). No MPI type appears here: main.c
 * builds the same way with and without MPI.
 */
#ifndef LOOM_TOOLS_AUTOTUNE_MPI_H
#define LOOM_TOOLS_AUTOTUNE_MPI_H

#include <stdbool.h>
#include <stdio.h>

#include "loom/autotune.h"

typedef struct at_mpi at_mpi;

#ifdef LOOM_WITH_MPI
/* First thing in main after tune_runner_maybe_run. Started by a launcher
 * with more than one rank: MPI is initialised; a worker rank serves rank 0
 * until told to stop and returns 1 with its exit status in *worker_rc
 * (main returns it); rank 0 returns 0 with *out set. Otherwise (no
 * launcher, -np 1): 0 with *out NULL, and MPI is never initialised. */
int at_mpi_start(int argc, char **argv, at_mpi **out, int *worker_rc);
/* Rank 0, once the target is known: every worker's Loom version, protocol
 * version and record key (tune_record_key(target, num_threads): the
 * machine and, on a CPU, the threads a candidate runs on; num_threads 0:
 * each rank's own default) must equal rank 0's;
 * with allow_mixed a worker of another target key is taken, its results
 * carrying its key (tune_result.target_key), and the workers are listed
 * by key on stdout. 0, or -1 with the reason printed (the ranks that
 * differ named). */
int at_mpi_handshake(at_mpi *m, const char *target, int num_threads, bool allow_mixed);
/* The workers' target keys other than rank 0's (after the handshake;
 * valid until at_mpi_finish): their count, the keys in *keys. */
int at_mpi_mixed_keys(at_mpi *m, const char *const **keys);
/* The backend that measures on the workers (valid until at_mpi_finish). */
const tune_measure_backend *at_mpi_backend(at_mpi *m);
/* The run's stop request (tune_options.stop, set by a signal handler):
 * once *stop is non-zero the backend hands out no candidate, returns the
 * results received (the caller commits them) and drops those in flight
 * (tune_result.dropped); at_mpi_finish then waits, bounded, for the
 * workers' answers. */
void at_mpi_watch_stop(at_mpi *m, volatile int *stop);
/* Workers alive, and the most that were busy at once while the latest
 * batch of candidates was measured. */
void at_mpi_load(at_mpi *m, int *busy, int *total);
/* One line per worker: candidates, failures, build and run seconds. */
void at_mpi_report(at_mpi *m, FILE *f);
/* Stops every worker, finalises MPI, frees m; returns rc. */
int at_mpi_finish(at_mpi *m, int rc);
#else
static inline int at_mpi_start(int argc, char **argv, at_mpi **out, int *worker_rc) {
    (void)argc, (void)argv, (void)worker_rc;
    *out = NULL;
    return 0;
}
static inline int at_mpi_handshake(at_mpi *m, const char *target, int num_threads,
                                   bool allow_mixed) {
    (void)m, (void)target, (void)num_threads, (void)allow_mixed;
    return 0;
}
static inline int at_mpi_mixed_keys(at_mpi *m, const char *const **keys) {
    (void)m;
    *keys = NULL;
    return 0;
}
static inline const tune_measure_backend *at_mpi_backend(at_mpi *m) {
    (void)m;
    return NULL;
}
static inline void at_mpi_watch_stop(at_mpi *m, volatile int *stop) { (void)m, (void)stop; }
static inline void at_mpi_load(at_mpi *m, int *busy, int *total) {
    (void)m;
    *busy = *total = 0;
}
static inline void at_mpi_report(at_mpi *m, FILE *f) { (void)m, (void)f; }
static inline int at_mpi_finish(at_mpi *m, int rc) {
    (void)m;
    return rc;
}
#endif

#endif
