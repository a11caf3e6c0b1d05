/*
 * tools/tunedb/tunedb.h — shared by the tunedb subcommands: the parsed
 * global options and small output helpers.
 */
#ifndef LOOM_TOOLS_TUNEDB_H
#define LOOM_TOOLS_TUNEDB_H

#include "loom/loom.h"

/* Exit codes: 0 done; 1 the command failed (message on stderr); 2 usage. */
enum { TDB_EXIT_OK = 0, TDB_EXIT_FAIL = 1, TDB_EXIT_USAGE = 2 };

typedef struct {
    const char *db_path; /* --db, or $LOOM_TUNEDB */
} tunedb_globals;

/* One subcommand: argv[0] is its name; options follow. */
typedef int (*tunedb_cmd_fn)(tunedb_globals *g, int argc, char **argv);

int tunedb_cmd_list(tunedb_globals *g, int argc, char **argv);
int tunedb_cmd_best(tunedb_globals *g, int argc, char **argv);
int tunedb_cmd_show(tunedb_globals *g, int argc, char **argv);
int tunedb_cmd_history(tunedb_globals *g, int argc, char **argv);
int tunedb_cmd_export(tunedb_globals *g, int argc, char **argv);
int tunedb_cmd_import(tunedb_globals *g, int argc, char **argv);
int tunedb_cmd_prune(tunedb_globals *g, int argc, char **argv);
int tunedb_cmd_stats(tunedb_globals *g, int argc, char **argv);
int tunedb_cmd_apply(tunedb_globals *g, int argc, char **argv);

/* Opens g->db_path (read-only when asked); NULL after printing why. */
tdb_db *tunedb_open(const tunedb_globals *g, bool readonly);
/* The workload key from --workload KEY or --op OP --shape S (canonical,
 * malloc'd); NULL after printing why. */
char *tunedb_workload_key(const char *key, const char *op, const char *shape);
/* The record key of a query (malloc'd): --target's key as given, or the
 * host CPU's; with the thread count of --threads (threads > 0), and the
 * host's with the runtime's default count (all cores, as autotune and
 * loomrun use) when neither is given (tune_threads_key). NULL after the
 * message: a --target that has a thread count already, with --threads;
 * out of memory. */
char *tunedb_target(const char *cmd, const char *target, int threads);
/* Prints "tunedb CMD: message" to stderr. */
void tunedb_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Parses an integer option value in [lo, hi]; false after printing why. */
bool tunedb_parse_int(const char *cmd, const char *opt, const char *text, long long lo,
                      long long hi,
                      long long *out);

#endif
