/*
 * tuning_db/retime.c — re-timings of stored programs (tdb_commit_retime).
 *
 * A record's latency was measured once, under whatever load the machine
 * had then; on a shared machine two records hours apart are not
 * comparable. A re-timing measures a few of the best programs again side
 * by side and is stored beside the record (table retimes); the latest
 * re-timing then ranks the record in tdb_best and tdb_prune, by the
 * fastest of its latencies: interference from other jobs only ever slows
 * a program down, so on a machine whose load swings within seconds the
 * fastest round is the one least disturbed (the median of 5 rounds still
 * moved by a third there).
 */
#include <math.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "tuning_db/tdb_internal.h"

int tdb_commit_retime(tdb_db *db, int64_t record_id, int n, const double *latencies) {
    if (!db) return -1;
    if (db->readonly)
        return tdb__err(db, "commit_retime: tuning db '%s' was opened read-only", db->path);
    if (n < 1 || !latencies)
        return tdb__err(db, "commit_retime: record %lld: a re-timing needs at least one latency",
                        (long long)record_id);
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < n; i++) {
        if (!isfinite(latencies[i]) || latencies[i] < 0) {
            cJSON_Delete(arr);
            return tdb__err(db,
                            "commit_retime: record %lld: latency %d (%g s) must be a finite "
                            "number of seconds >= 0",
                            (long long)record_id, i, latencies[i]);
        }
        cJSON_AddItemToArray(arr, tdb__exact_number(latencies[i]));
    }
    char *text = arr ? cJSON_PrintUnformatted(arr) : NULL;
    cJSON_Delete(arr);
    if (!text) return tdb__err(db, "commit_retime: out of memory");
    if (tdb__begin(db)) {
        free(text);
        return -1;
    }
    /* Only a valid record has a program worth ranking. */
    sqlite3_stmt *st = tdb__prepare(db, "SELECT error_code FROM records WHERE id = ?");
    int rc = -1;
    if (st) {
        sqlite3_bind_int64(st, 1, record_id);
        int step = sqlite3_step(st);
        int code = step == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
        sqlite3_finalize(st);
        if (step == SQLITE_DONE)
            tdb__err(db, "commit_retime: no record %lld in '%s'", (long long)record_id, db->path);
        else if (step != SQLITE_ROW)
            tdb__sqlerr(db, "commit_retime");
        else if (code != 0)
            tdb__err(db,
                     "commit_retime: record %lld is an error record (code %d): only a program "
                     "that ran can be re-timed",
                     (long long)record_id, code);
        else
            rc = 0;
    }
    if (rc == 0 && (st = tdb__prepare(db, "INSERT INTO retimes(record_id, latencies, latency, "
                                          "created) VALUES (?, ?, ?, ?)"))) {
        sqlite3_bind_int64(st, 1, record_id);
        sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
        double fastest = latencies[0];
        for (int i = 1; i < n; i++)
            if (latencies[i] < fastest) fastest = latencies[i];
        sqlite3_bind_double(st, 3, fastest);
        sqlite3_bind_double(st, 4, tdb__now());
        if (sqlite3_step(st) != SQLITE_DONE) rc = tdb__sqlerr(db, "commit_retime");
        sqlite3_finalize(st);
    } else if (rc == 0) {
        rc = -1;
    }
    free(text);
    if (rc) {
        tdb__rollback(db);
        return -1;
    }
    return tdb__commit(db);
}
