/*
 * tuning_db/schema.c — the schema, as a list of forward migrations.
 *
 * migrations[v-1] brings a file from version v-1 to v; PRAGMA user_version
 * holds the version reached. Each migration runs in its own IMMEDIATE
 * transaction that re-reads the version first, so two processes opening
 * a fresh file at once migrate it once. Never edit a released migration:
 * add the next one and raise TDB_SCHEMA_VERSION.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tuning_db/tdb_internal.h"

static const char *const migrations[] = {
    /* 1: workloads, targets, records */
    "CREATE TABLE workloads("
    " id INTEGER PRIMARY KEY,"
    " key TEXT NOT NULL UNIQUE," /* the ops registry's canonical key */
    " op TEXT NOT NULL,"
    " params TEXT NOT NULL DEFAULT '{}' CHECK(json_valid(params)),"
    " hash TEXT NOT NULL,"            /* FNV-1a 64 of key, hex */
    " flops REAL NOT NULL DEFAULT 0," /* FLOP per call */
    " created REAL NOT NULL);"
    "CREATE INDEX workloads_hash ON workloads(hash);"
    "CREATE TABLE targets("
    " id INTEGER PRIMARY KEY,"
    " key TEXT NOT NULL UNIQUE," /* 'llvm -mcpu=znver5', 'cuda sm_90 ...' */
    " props TEXT NOT NULL DEFAULT '{}' CHECK(json_valid(props)),"
    " created REAL NOT NULL);"
    "CREATE TABLE records("
    " id INTEGER PRIMARY KEY,"
    " workload_id INTEGER NOT NULL REFERENCES workloads(id),"
    " target_id INTEGER NOT NULL REFERENCES targets(id),"
    " steps TEXT NOT NULL CHECK(json_valid(steps)),"         /* step log, JSON array */
    " latencies TEXT NOT NULL CHECK(json_valid(latencies))," /* seconds per repeat */
    " mean REAL,"                                            /* seconds; NULL: none */
    " error_code INTEGER NOT NULL DEFAULT 0,"
    " error_msg TEXT NOT NULL DEFAULT '',"
    " loom_version TEXT NOT NULL,"
    " created REAL NOT NULL);" /* unix seconds */
    /* best-k: equality on (workload, target, error 0), then by mean */
    "CREATE INDEX records_best ON records(workload_id, target_id, error_code, mean);",

    /* 2: cost-model blobs per target; history in commit order */
    "CREATE TABLE cost_models("
    " target_id INTEGER PRIMARY KEY REFERENCES targets(id),"
    " format TEXT NOT NULL,"
    " model BLOB NOT NULL,"
    " updated REAL NOT NULL);"
    "CREATE INDEX records_history ON records(workload_id, target_id, id);",

    /* 3: the median latency, the statistic every "best" ranks by (the
     * tuner's too: robust to a noisy repeat on a shared machine). Older
     * records get it from their stored latencies. */
    "ALTER TABLE records ADD COLUMN median REAL;" /* seconds; NULL: none */
    "UPDATE records SET median = " TDB__MEDIAN_OF("records.latencies")
    " WHERE json_array_length(latencies) > 0;"
    "DROP INDEX records_best;"
    "CREATE INDEX records_best_median ON records(workload_id, target_id, error_code, median);",

    /* 4: re-timings of stored programs (tdb_commit_retime): the latest
     * one's latency ranks its record. */
    "CREATE TABLE retimes("
    " id INTEGER PRIMARY KEY,"
    " record_id INTEGER NOT NULL REFERENCES records(id) ON DELETE CASCADE,"
    " latencies TEXT NOT NULL CHECK(json_valid(latencies))," /* seconds */
    " latency REAL NOT NULL," /* seconds: the fastest of latencies */
    " created REAL NOT NULL);"
    "CREATE INDEX retimes_record ON retimes(record_id, id);",

    /* 5: how a record was timed: 1 with its operands evicted from the
     * caches before every call (autotune --cache-flush), 0 warm. Older
     * records were all timed warm. The index finds a target's kind. */
    "ALTER TABLE records ADD COLUMN cold INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX records_timing ON records(target_id, cold);",
};

_Static_assert(sizeof migrations / sizeof *migrations == TDB_SCHEMA_VERSION,
               "one migration per schema version");

int tdb__migrate(tdb_db *db, int version) {
    if (version < 1 || version > TDB_SCHEMA_VERSION)
        return tdb__err(db, "migrate: no schema version %d (1..%d)", version, TDB_SCHEMA_VERSION);
    for (;;) {
        if (tdb__begin(db)) return -1;
        int cur = tdb_schema_version(db);
        if (cur < 0) {
            tdb__rollback(db);
            return -1;
        }
        if (cur >= version) {
            tdb__rollback(db);
            return 0;
        }
        char set[64];
        snprintf(set, sizeof set, "PRAGMA user_version=%d", cur + 1);
        if (tdb__exec(db, migrations[cur]) || tdb__exec(db, set)) {
            char msg[sizeof db->err];
            snprintf(msg, sizeof msg, "%s", db->err);
            tdb__rollback(db);
            return tdb__err(db, "migrate: to schema version %d: %s", cur + 1, msg);
        }
        if (tdb__commit(db)) return -1;
    }
}

int tdb__create_at_version(const char *path, int version, char **err) {
    if (err) *err = NULL;
    sqlite3 *sql = NULL;
    tdb_db tmp = {0};
    tmp.path = (char *)path;
    if (sqlite3_open_v2(path, &sql, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        if (err) *err = tdb__strdup(sql ? sqlite3_errmsg(sql) : "out of memory");
        sqlite3_close(sql);
        return -1;
    }
    tmp.sql = sql;
    tmp.busy_timeout_ms = 10000;
    int rc = tdb__exec(&tmp, "PRAGMA journal_mode=WAL") || tdb__migrate(&tmp, version) ? -1 : 0;
    if (rc && err) *err = tdb__strdup(tmp.err);
    sqlite3_close(sql);
    return rc;
}

int tdb__exec_file(const char *path, const char *sql, char **err) {
    if (err) *err = NULL;
    sqlite3 *s = NULL;
    char *msg = NULL;
    int rc = sqlite3_open_v2(path, &s, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
                     sqlite3_exec(s, sql, NULL, NULL, &msg) == SQLITE_OK
                 ? 0
                 : -1;
    if (rc && err) *err = tdb__strdup(msg ? msg : s ? sqlite3_errmsg(s) : "out of memory");
    sqlite3_free(msg);
    sqlite3_close(s);
    return rc;
}
