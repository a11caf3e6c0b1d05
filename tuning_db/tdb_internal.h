/*
 * tuning_db/tdb_internal.h — shared between the tuning_db files: the
 * handle, error helpers, and the migration
 * entry point the tests use to make files of an older schema.
 */
#ifndef LOOM_TDB_INTERNAL_H
#define LOOM_TDB_INTERNAL_H

#include <sqlite3.h>
#include <cjson/cJSON.h>

#include "loom/tuning_db.h"

struct tdb_db {
    sqlite3 *sql;
    char *path;
    bool readonly;
    char err[2048];
    int sql_failed; /* set by tdb__sqlerr: the last error came from SQLite */
    int busy_timeout_ms;
    /* The FLOP count imported latencies were last judged by, and its
     * workload key (malloc'd; NULL: none): an import's lines come grouped
     * by workload, and building a workload per line costs milliseconds. */
    char *judged_key;
    double judged_flops;
};

/* Records a message on db (printf format) and returns -1. */
int tdb__err(tdb_db *db, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Records "what: SQLite's message" and returns -1. */
int tdb__sqlerr(tdb_db *db, const char *what);
/* Runs SQL without results; -1 with the error on db. */
int tdb__exec(tdb_db *db, const char *sql);
/* Whether the last error was SQLite's BUSY or LOCKED. */
bool tdb__busy(const tdb_db *db);
/* Sleeps a little before retrying a busy operation; false once
 * busy_timeout_ms have passed since *start_ms (0: now). */
bool tdb__retry_wait(tdb_db *db, double *start_ms);
/* BEGIN IMMEDIATE (waiting on the busy timeout) / COMMIT / ROLLBACK. */
int tdb__begin(tdb_db *db);
int tdb__commit(tdb_db *db);
void tdb__rollback(tdb_db *db);
/* Prepares sql; NULL with the error on db. */
sqlite3_stmt *tdb__prepare(tdb_db *db, const char *sql);
/* malloc'd copy (NULL stays NULL). */
char *tdb__strdup(const char *s);
/* Current unix time in seconds (sub-second resolution). */
double tdb__now(void);

/* Schema (schema.c): brings an open connection to `version` (1..
 * TDB_SCHEMA_VERSION), one transaction per step. */
int tdb__migrate(tdb_db *db, int version);
/* Creates (or migrates) the file at path to exactly `version`, for tests
 * of forward migration. 0 or -1 with *err (malloc'd). */
int tdb__create_at_version(const char *path, int version, char **err);
/* Runs SQL on the existing file at path as it is (no migration, no
 * checks), for tests that write files as an older Loom did. 0 or -1 with
 * *err (malloc'd). */
int tdb__exec_file(const char *path, const char *sql, char **err);

/* SQL: the median of a JSON array of numbers (the column or expression
 * LAT, e.g. "records.latencies"): the middle value, or the mean of the
 * two middle ones; NULL for an empty array. The same rule as the
 * tuner's (autotune/measure.c) and tdb__median. */
#define TDB__MEDIAN_OF(LAT)                                                                  \
    "(SELECT avg(v) FROM (SELECT j.value AS v, row_number() OVER (ORDER BY j.value) AS rn, " \
    "count(*) OVER () AS c FROM json_each(" LAT ") j) WHERE rn BETWEEN (c + 1) / 2 AND "     \
    "c / 2 + 1)"
/* The median of n values (NaN when n == 0); v is not modified. */
double tdb__median(int n, const double *v);

/* The id of a workload key or target key: > 0, 0 when absent, -1 on error. */
int64_t tdb__workload_id(tdb_db *db, const char *key);
int64_t tdb__target_id(tdb_db *db, const char *key);
/* Inserts a record inside an open transaction; -1 on error. With dedup,
 * an identical stored record makes it return 0 and set *dup. */
int64_t tdb__insert_record(tdb_db *db, const tdb_record_in *rec, bool dedup, bool *dup);
/* SQL: the latest re-timed latency of record R (NULL: never re-timed). */
#define TDB__RETIMED_LATENCY(R)                                                              \
    "(SELECT x.latency FROM retimes x WHERE x.record_id = " R ".id ORDER BY x.id DESC LIMIT 1)"
/* SQL ORDER BY terms of every "best": re-timed records first, by their
 * re-timed latency RT, then the rest by MEDIAN (both already selected). */
#define TDB__RANK_ORDER(RT, MEDIAN) RT " IS NULL, coalesce(" RT ", " MEDIAN ")"
/* The standard record SELECT; its last column is named `retimed`. */
#define TDB__RECORD_COLUMNS                                                                  \
    "r.id, w.key, w.op, t.key, r.steps, r.latencies, r.mean, r.error_code, r.error_msg, "    \
    "r.loom_version, r.created, w.flops, w.params, t.props, r.median, "                      \
    TDB__RETIMED_LATENCY("r") " AS retimed, r.cold"
#define TDB__RECORD_FROM                                                                     \
    " FROM records r JOIN workloads w ON w.id = r.workload_id JOIN targets t ON t.id = "     \
    "r.target_id "
/* Fills r from a row of the standard record SELECT (query.c). */
int tdb__read_record(sqlite3_stmt *st, tdb_record *r);

/* Validates a log against the workload when the ops registry can rebuild
 * it (apply.c): 0 when it replays (or the key is unknown to the
 * registry), -1 with sch_replay's message on db. */
int tdb__validate_log(tdb_db *db, const char *workload_key, int nsteps, const sch_step *steps);
/* Inserts the workload of a key the ops registry knows (apply.c), inside
 * the caller's transaction: its id, or -1 with the error on db. */
int64_t tdb__insert_workload_from_ops(tdb_db *db, const char *key);
/* Inserts a workload (no transaction of its own); id or -1. */
int64_t tdb__insert_workload(tdb_db *db, const char *key, const char *op, const char *params_json,
                             double flops);
/* Inserts a target, updating props when not NULL; id or -1. */
int64_t tdb__insert_target(tdb_db *db, const char *key, const char *props_json);
/* The bounds an imported record's latencies and step log must keep
 * (plausible.c; documented in loom/tuning_db.h): -1 with the reason on db
 * (not prefixed), else 0.
 * The record's workload must be stored already (its FLOP count is read). */
int tdb__check_import(tdb_db *db, const tdb_record_in *rec);
/* A record as a cJSON object in the export form (jsonl.c). */
cJSON *tdb__record_to_cjson(const tdb_record *r);
/* A JSON number item that reads back as exactly v (null for inf/nan). */
cJSON *tdb__exact_number(double v);

#endif
