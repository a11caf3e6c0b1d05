/*
 * tuning_db/db.c — opening and closing the database file, and the error
 * and transaction helpers the other tuning_db files share.
 *
 * Opening checks the file before trusting it: page 1 must parse (a file
 * that is not SQLite, or whose header is damaged, is refused here with a
 * plain message), the schema version must not be newer than this build's,
 * and only then is the file switched to WAL and migrated forward.
 * WAL with synchronous=NORMAL survives a killed process (every committed
 * transaction is in the WAL file before COMMIT returns); only an OS crash
 * or power loss could drop the last transactions (SQLite's documented
 * trade-off), which a tuning log can afford.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tuning_db/tdb_internal.h"

int tdb__err(tdb_db *db, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(db->err, sizeof db->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* A sentence for the SQLite error codes a user can cause with a bad file. */
static const char *explain(int code) {
    switch (code & 0xff) {
    case SQLITE_NOTADB: return "is not a SQLite database";
    case SQLITE_CORRUPT: return "is corrupted";
    case SQLITE_CANTOPEN:
        return "cannot be opened (check that its directory exists and is writable)";
    case SQLITE_READONLY: return "is read-only";
    case SQLITE_FULL: return "cannot grow: the disk is full";
    case SQLITE_IOERR: return "gave an I/O error";
    case SQLITE_BUSY: return "is locked by another process (busy timeout expired)";
    case SQLITE_PERM: return "cannot be accessed (permission denied)";
    default: return NULL;
    }
}

int tdb__sqlerr(tdb_db *db, const char *what) {
    int code = sqlite3_extended_errcode(db->sql);
    db->sql_failed = code ? code : SQLITE_ERROR;
    const char *why = explain(code);
    if (why)
        return tdb__err(db, "%s: tuning db '%s' %s (%s)", what, db->path, why,
                        sqlite3_errmsg(db->sql));
    return tdb__err(db, "%s: tuning db '%s': %s", what, db->path, sqlite3_errmsg(db->sql));
}

int tdb__exec(tdb_db *db, const char *sql) {
    if (sqlite3_exec(db->sql, sql, NULL, NULL, NULL) != SQLITE_OK) return tdb__sqlerr(db, "database");
    return 0;
}

bool tdb__busy(const tdb_db *db) {
    int c = db->sql_failed & 0xff;
    return c == SQLITE_BUSY || c == SQLITE_LOCKED;
}

bool tdb__retry_wait(tdb_db *db, double *start_ms) {
    double now = tdb__now() * 1e3;
    if (*start_ms == 0) *start_ms = now;
    if (now - *start_ms > db->busy_timeout_ms) return false;
    struct timespec ts = {0, 2000000}; /* 2 ms */
    nanosleep(&ts, NULL);
    return true;
}

int tdb__begin(tdb_db *db) {
    /* IMMEDIATE takes the write lock now, waiting on the busy handler;
     * a deferred transaction that upgrades later can fail with BUSY
     * without waiting (SQLite's deadlock avoidance). Some BUSY results
     * skip the handler (a WAL being recovered or initialised by another
     * connection), so those are retried here until the timeout. */
    double start = 0;
    for (;;) {
        if (sqlite3_exec(db->sql, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK) return 0;
        tdb__sqlerr(db, "begin transaction");
        if (!tdb__busy(db) || !tdb__retry_wait(db, &start)) return -1;
    }
}

int tdb__commit(tdb_db *db) {
    if (sqlite3_exec(db->sql, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        tdb__sqlerr(db, "commit");
        tdb__rollback(db);
        return -1;
    }
    return 0;
}

void tdb__rollback(tdb_db *db) {
    if (!sqlite3_get_autocommit(db->sql)) sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
}

sqlite3_stmt *tdb__prepare(tdb_db *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL) != SQLITE_OK) {
        tdb__sqlerr(db, "query");
        return NULL;
    }
    return st;
}

char *tdb__strdup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

double tdb__now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

const char *tdb_errmsg(const tdb_db *db) { return db ? db->err : "tuning db: no database (NULL)"; }

static int read_version(tdb_db *db, int *version) {
    sqlite3_stmt *st = tdb__prepare(db, "PRAGMA user_version");
    if (!st) return -1;
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        return tdb__sqlerr(db, "open");
    }
    *version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return 0;
}

int tdb_schema_version(tdb_db *db) {
    int v = -1;
    if (!db || read_version(db, &v)) return -1;
    return v;
}

static void fail_open(tdb_db *db, char **err) {
    if (err) *err = tdb__strdup(db->err[0] ? db->err : "tuning db: open failed");
    tdb_close(db);
}

/* SQLite opens a file it may not write read-only without saying so
 * (unixOpen retries O_RDONLY), and BEGIN IMMEDIATE then quietly becomes a
 * read transaction: the first INSERT is where it would show, after a
 * tuner had measured its candidates. sqlite3_db_readonly is SQLite's own
 * answer, right after the open; the file's mode only words the message. */
static void refuse_readonly(tdb_db *db) {
    struct stat st;
    char why[160] = "";
    if (stat(db->path, &st) == 0) {
        if (!(st.st_mode & 0222))
            snprintf(why, sizeof why, " (file mode %04o)", (unsigned)(st.st_mode & 07777));
        else
            snprintf(why, sizeof why,
                     " (file mode %04o, owner uid %u, this process uid %u; or a read-only "
                     "file system)",
                     (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)geteuid());
    }
    tdb__err(db,
             "open: tuning db '%s' is read-only%s: cannot write records; make it writable or "
             "open it read-only",
             db->path, why);
}

/* Schema version 0 is a new file, unless it already has tables: Loom
 * creates its tables and sets the version in one transaction
 * (tdb__migrate), so tables at version 0 are another program's, and
 * adding Loom's beside them would mix two programs' data in one file.
 * Returns -1 (db->err set) for such a file, else 0. */
static int refuse_foreign(tdb_db *db) {
    /* One statement, one snapshot: read apart, the version could be read
     * before another process's creating transaction and the tables after. */
    sqlite3_stmt *st = tdb__prepare(db, "SELECT name FROM sqlite_master WHERE type = 'table' "
                                        "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND "
                                        "(SELECT user_version FROM pragma_user_version) = 0 "
                                        "LIMIT 1");
    if (!st) return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        tdb__err(db, "open: '%s' is not a tuning database: an SQLite file of another program "
                     "(schema version 0, with a table '%s'); give a new file or a Loom database",
                 db->path, (const char *)sqlite3_column_text(st, 0));
    else if (rc != SQLITE_DONE)
        tdb__sqlerr(db, "open");
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

tdb_db *tdb_open(const char *path, const tdb_open_options *opts, char **err) {
    if (err) *err = NULL;
    if (!path || !*path) {
        if (err) *err = tdb__strdup("tuning db: no file name given");
        return NULL;
    }
    tdb_db *db = calloc(1, sizeof *db);
    if (!db || !(db->path = tdb__strdup(path))) {
        if (db) free(db);
        if (err) *err = tdb__strdup("tuning db: out of memory");
        return NULL;
    }
    db->readonly = opts && opts->readonly;
    int flags = db->readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    int rc = sqlite3_open_v2(path, &db->sql, flags, NULL);
    if (rc != SQLITE_OK) {
        if (!db->sql) {
            tdb__err(db, "open: tuning db '%s': out of memory", path);
        } else if (db->readonly && access(path, F_OK) != 0) {
            tdb__err(db, "open: tuning db '%s' does not exist", path);
        } else {
            tdb__sqlerr(db, "open");
        }
        fail_open(db, err);
        return NULL;
    }
    sqlite3_extended_result_codes(db->sql, 1);
    if (!db->readonly && sqlite3_db_readonly(db->sql, "main") == 1) {
        refuse_readonly(db);
        fail_open(db, err);
        return NULL;
    }
    db->busy_timeout_ms = opts && opts->busy_timeout_ms > 0 ? opts->busy_timeout_ms : 10000;
    sqlite3_busy_timeout(db->sql, db->busy_timeout_ms);

    /* Page 1 must parse: this is where a non-SQLite or damaged file shows. */
    int version = 0;
    double start = 0;
    for (;;) {
        db->sql_failed = 0;
        if (sqlite3_exec(db->sql, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) ==
                SQLITE_OK &&
            read_version(db, &version) == 0)
            break;
        if (!db->sql_failed) tdb__sqlerr(db, "open");
        if (!tdb__busy(db) || !tdb__retry_wait(db, &start)) {
            fail_open(db, err);
            return NULL;
        }
    }
    if (version < 0) {
        /* Loom never writes one; migrating from it would fail without a
         * reason (its version reads as an error). */
        tdb__err(db, "open: tuning db '%s' has schema version %d: not a Loom database, or a "
                     "corrupted one",
                 path, version);
        fail_open(db, err);
        return NULL;
    }
    if (version == 0 && refuse_foreign(db)) {
        fail_open(db, err);
        return NULL;
    }
    if (version > TDB_SCHEMA_VERSION) {
        tdb__err(db,
                 "open: tuning db '%s' was written by a newer Loom: schema version %d, this "
                 "build (Loom %s) reads up to version %d; use a newer Loom or another file",
                 path, version, LOOM_VERSION_STRING, TDB_SCHEMA_VERSION);
        fail_open(db, err);
        return NULL;
    }
    if (db->readonly) {
        /* Versions 2 and 3 lack only the retimes table: a read-only reader
         * sees an empty one (a temporary view; temp shadows main). */
        if ((version == 2 || version == 3) &&
            tdb__exec(db, "CREATE TEMP VIEW retimes(id, record_id, latencies, latency, created) "
                          "AS SELECT 0, 0, '[]', 0.0, 0.0 WHERE 0")) {
            fail_open(db, err);
            return NULL;
        }
        if (version >= 2 && version <= 4) {
            /* Versions 2 to 4 lack records.cold (their records were all
             * timed warm), version 2 records.median too: a read-only
             * reader sees them through a temporary view of the same name
             * (temp shadows main), the median computed from the stored
             * latencies. Nothing is written to the file; the next
             * read-write open migrates it. */
            const char *view =
                version == 2 ? "CREATE TEMP VIEW records AS SELECT *, " TDB__MEDIAN_OF(
                                   "main.records.latencies") " AS median, 0 AS cold FROM main.records"
                             : "CREATE TEMP VIEW records AS SELECT *, 0 AS cold FROM main.records";
            if (tdb__exec(db, view)) {
                fail_open(db, err);
                return NULL;
            }
        } else if (version < 2) {
            tdb__err(db,
                     "open: tuning db '%s' has schema version %d and needs migrating to %d; "
                     "open it once without read-only",
                     path, version, TDB_SCHEMA_VERSION);
            fail_open(db, err);
            return NULL;
        }
    } else {
        /* Switching to WAL can meet BUSY without the busy handler being
         * called, when another process is creating the same file. */
        start = 0;
        for (;;) {
            db->sql_failed = 0;
            if (!tdb__exec(db, "PRAGMA journal_mode=WAL") &&
                !tdb__exec(db, "PRAGMA synchronous=NORMAL") &&
                !tdb__migrate(db, TDB_SCHEMA_VERSION))
                break;
            if (!tdb__busy(db) || !tdb__retry_wait(db, &start)) {
                fail_open(db, err);
                return NULL;
            }
        }
    }
    if (tdb__exec(db, "PRAGMA foreign_keys=ON")) {
        fail_open(db, err);
        return NULL;
    }
    db->err[0] = 0;
    return db;
}

void tdb_close(tdb_db *db) {
    if (!db) return;
    if (db->sql) sqlite3_close_v2(db->sql);
    free(db->path);
    free(db->judged_key);
    free(db);
}
