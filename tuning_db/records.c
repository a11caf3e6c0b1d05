/*
 * tuning_db/records.c — committing workloads, targets and records.
 *
 * Every public commit is one IMMEDIATE transaction, so a concurrent writer
 * waits on the busy timeout instead of failing, and a process killed
 * half-way leaves the file as it was before the transaction. The step log
 * is stored in canonical form (parsed, then written again by
 * tdb_steps_to_json), so equal logs are equal text and deduplication can
 * compare strings.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuning_db/tdb_internal.h"

/* FNV-1a, 64 bits: a short stable id of the key for lookups by hash
 * (Ansor hashes its workload keys alike, with md5). */
static void key_hash(const char *key, char out[17]) {
    snprintf(out, 17, "%016llx", (unsigned long long)te_hash_str(key));
}

static int64_t lookup_id(tdb_db *db, const char *sql, const char *key) {
    sqlite3_stmt *st = tdb__prepare(db, sql);
    if (!st) return -1;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : rc == SQLITE_DONE ? 0 : -1;
    if (id < 0) tdb__sqlerr(db, "lookup");
    sqlite3_finalize(st);
    return id;
}

int64_t tdb__workload_id(tdb_db *db, const char *key) {
    return lookup_id(db, "SELECT id FROM workloads WHERE key = ?", key);
}

int64_t tdb__target_id(tdb_db *db, const char *key) {
    return lookup_id(db, "SELECT id FROM targets WHERE key = ?", key);
}

static bool json_object_text(const char *text) {
    cJSON *j = cJSON_Parse(text);
    bool ok = j && cJSON_IsObject(j);
    cJSON_Delete(j);
    return ok;
}

static int check_writable(tdb_db *db, const char *what) {
    if (db->readonly)
        return tdb__err(db, "%s: tuning db '%s' was opened read-only", what, db->path);
    return 0;
}

int64_t tdb__insert_workload(tdb_db *db, const char *key, const char *op, const char *params_json,
                             double flops) {
    if (!key || !*key) return tdb__err(db, "commit_workload: empty workload key");
    if (!op || !*op)
        return tdb__err(db, "commit_workload: workload '%s' has no operator name", key);
    if (!params_json) params_json = "{}";
    if (!json_object_text(params_json))
        return tdb__err(db, "commit_workload: parameters of workload '%s' are not a JSON object",
                        key);
    if (!isfinite(flops) || flops < 0)
        return tdb__err(db, "commit_workload: FLOP count of workload '%s' must be >= 0", key);
    char hash[17];
    key_hash(key, hash);
    sqlite3_stmt *st = tdb__prepare(
        db, "INSERT INTO workloads(key, op, params, hash, flops, created) VALUES(?,?,?,?,?,?) "
            "ON CONFLICT(key) DO NOTHING");
    if (!st) return -1;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, op, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, params_json, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, hash, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, flops);
    sqlite3_bind_double(st, 6, tdb__now());
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return tdb__sqlerr(db, "commit_workload");
    return tdb__workload_id(db, key);
}

int64_t tdb__insert_target(tdb_db *db, const char *key, const char *props_json) {
    if (!key || !*key) return tdb__err(db, "commit_target: empty target key");
    if (props_json && !json_object_text(props_json))
        return tdb__err(db, "commit_target: properties of target '%s' are not a JSON object", key);
    sqlite3_stmt *st =
        tdb__prepare(db, props_json ? "INSERT INTO targets(key, props, created) VALUES(?1, ?2, ?3) "
                                      "ON CONFLICT(key) DO UPDATE SET props = excluded.props"
                                    : "INSERT INTO targets(key, created) VALUES(?1, ?3) "
                                      "ON CONFLICT(key) DO NOTHING");
    if (!st) return -1;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (props_json) sqlite3_bind_text(st, 2, props_json, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 3, tdb__now());
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return tdb__sqlerr(db, "commit_target");
    return tdb__target_id(db, key);
}

/* Ends the transaction a public commit opened: COMMIT when the work
 * (whose result is id) succeeded, else ROLLBACK. */
static int64_t finish(tdb_db *db, int64_t id) {
    if (id < 0) {
        tdb__rollback(db);
        return -1;
    }
    return tdb__commit(db) ? -1 : id;
}

int64_t tdb_commit_workload(tdb_db *db, const char *key, const char *op, const char *params_json,
                            double flops) {
    if (!db) return -1;
    if (check_writable(db, "commit_workload") || tdb__begin(db)) return -1;
    return finish(db, tdb__insert_workload(db, key, op, params_json, flops));
}

int64_t tdb_commit_workload_key(tdb_db *db, const char *key) {
    if (!db) return -1;
    if (!key) return tdb__err(db, "commit_workload: no workload key (NULL)");
    if (check_writable(db, "commit_workload") || tdb__begin(db)) return -1;
    int64_t id = tdb__workload_id(db, key);
    if (id == 0) id = tdb__insert_workload_from_ops(db, key);
    return finish(db, id);
}

int64_t tdb_commit_target(tdb_db *db, const char *key, const char *props_json) {
    if (!db) return -1;
    if (check_writable(db, "commit_target") || tdb__begin(db)) return -1;
    return finish(db, tdb__insert_target(db, key, props_json));
}

/* The canonical log text of a record: parsed (checked) and written again. */
static char *canonical_log(tdb_db *db, te_ctx *ctx, const tdb_record_in *rec, int *nsteps,
                           sch_step **steps) {
    if (rec->steps_json) {
        if (tdb_steps_from_json(ctx, rec->steps_json, nsteps, steps)) {
            tdb__err(db, "commit_record: %s", te_ctx_errmsg(ctx));
            return NULL;
        }
    } else {
        if (rec->nsteps < 0 || (rec->nsteps > 0 && !rec->steps)) {
            tdb__err(db, "commit_record: no step log (steps_json and steps are both empty)");
            return NULL;
        }
        *nsteps = rec->nsteps;
        *steps = (sch_step *)rec->steps;
    }
    char *text = tdb_steps_to_json(*nsteps, *steps);
    if (!text) tdb__err(db, "commit_record: the step log holds a step of unknown kind");
    return text;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tdb__median(int n, const double *v) {
    if (n <= 0 || !v) return NAN;
    double small[64], *s = n <= 64 ? small : malloc(sizeof(double) * (size_t)n);
    if (!s) return NAN;
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    /* 0.5 * (a + b) as the tuner computes it, so both agree to the bit. */
    double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    if (s != small) free(s);
    return m;
}

static char *latency_json(tdb_db *db, const tdb_record_in *rec, double *mean, double *median) {
    if (rec->nlatencies < 0 || (rec->nlatencies > 0 && !rec->latencies)) {
        tdb__err(db, "commit_record: latencies: %d given without values", rec->nlatencies);
        return NULL;
    }
    if (rec->error_code == 0 && rec->nlatencies == 0) {
        tdb__err(db, "commit_record: a record without error (code 0) needs at least one latency");
        return NULL;
    }
    cJSON *arr = cJSON_CreateArray();
    double sum = 0;
    for (int i = 0; arr && i < rec->nlatencies; i++) {
        double v = rec->latencies[i];
        if (!isfinite(v) || v < 0) {
            cJSON_Delete(arr);
            tdb__err(db, "commit_record: latency %d (%g s) must be a finite number of seconds >= 0",
                     i, v);
            return NULL;
        }
        sum += v;
        cJSON_AddItemToArray(arr, tdb__exact_number(v));
    }
    *mean = rec->nlatencies ? sum / rec->nlatencies : NAN;
    *median = tdb__median(rec->nlatencies, rec->latencies);
    char *text = arr ? cJSON_PrintUnformatted(arr) : NULL;
    cJSON_Delete(arr);
    if (!text) tdb__err(db, "commit_record: out of memory");
    return text;
}

/* The kind of timing of target tid's records (TDB_TIMING_*), -1 on error
 * (the message prefixed with `what`). */
static int timing_of(tdb_db *db, int64_t tid, const char *what) {
    sqlite3_stmt *st = tdb__prepare(db, "SELECT cold FROM records WHERE target_id = ? LIMIT 1");
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, tid);
    int rc = sqlite3_step(st), kind = -1;
    if (rc == SQLITE_ROW)
        kind = sqlite3_column_int(st, 0) ? TDB_TIMING_COLD : TDB_TIMING_WARM;
    else if (rc == SQLITE_DONE)
        kind = TDB_TIMING_NONE;
    else
        tdb__sqlerr(db, what);
    sqlite3_finalize(st);
    return kind;
}

static const char *timing_words(bool cold) {
    return cold ? "cold (its operands evicted from the caches before every call)"
                : "warm (its operands left in the caches between calls)";
}

/* Cold and warm latencies do not compare: a file keeps one kind per
 * target, so that best-k, re-timings and the cost model rank like with
 * like. */
static int check_timing(tdb_db *db, const tdb_record_in *rec, int64_t tid) {
    int kind = timing_of(db, tid, "commit_record");
    if (kind < 0) return -1;
    if (kind == TDB_TIMING_NONE || (kind == TDB_TIMING_COLD) == rec->cold) return 0;
    return tdb__err(db,
                    "commit_record: tuning db '%s' holds records of target '%s' timed %s; this "
                    "one was timed %s, and the two do not compare: keep them in another file",
                    db->path, rec->target, timing_words(!rec->cold),
                    timing_words(rec->cold));
}

int tdb_target_timing(tdb_db *db, const char *target) {
    if (!db) return -1;
    if (!target) return tdb__err(db, "target_timing: no target key");
    int64_t tid = tdb__target_id(db, target);
    if (tid < 0) return -1;
    return tid == 0 ? TDB_TIMING_NONE : timing_of(db, tid, "target_timing");
}

int64_t tdb__insert_record(tdb_db *db, const tdb_record_in *rec, bool dedup, bool *dup) {
    if (dup) *dup = false;
    if (!rec) return tdb__err(db, "commit_record: no record (NULL)");
    if (!rec->workload_key || !*rec->workload_key)
        return tdb__err(db, "commit_record: no workload key");
    if (!rec->target || !*rec->target) return tdb__err(db, "commit_record: no target key");
    int64_t wid = tdb__workload_id(db, rec->workload_key);
    if (wid == 0) wid = tdb__insert_workload_from_ops(db, rec->workload_key);
    if (wid < 0) return -1;
    int64_t tid = tdb__target_id(db, rec->target);
    if (tid == 0) tid = tdb__insert_target(db, rec->target, NULL);
    if (tid < 0) return -1;

    if (check_timing(db, rec, tid)) return -1;

    te_ctx *ctx = te_ctx_new();
    if (!ctx) return tdb__err(db, "commit_record: out of memory");
    int nsteps = 0;
    sch_step *steps = NULL;
    double mean = NAN, median = NAN;
    char *lat = NULL;
    int64_t id = -1;
    char *log = canonical_log(db, ctx, rec, &nsteps, &steps);
    if (!log) goto done;
    if (tdb__validate_log(db, rec->workload_key, nsteps, steps)) goto done;
    if (!(lat = latency_json(db, rec, &mean, &median))) goto done;
    double created = rec->created > 0 ? rec->created : tdb__now();
    if (dedup) {
        sqlite3_stmt *st = tdb__prepare(
            db, "SELECT id FROM records WHERE workload_id=? AND target_id=? AND error_code=? AND "
                "created=? AND steps=? AND latencies=? LIMIT 1");
        if (!st) goto done;
        sqlite3_bind_int64(st, 1, wid);
        sqlite3_bind_int64(st, 2, tid);
        sqlite3_bind_int(st, 3, rec->error_code);
        sqlite3_bind_double(st, 4, created);
        sqlite3_bind_text(st, 5, log, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, lat, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc == SQLITE_ROW) {
            if (dup) *dup = true;
            id = 0;
            goto done;
        }
        if (rc != SQLITE_DONE) {
            tdb__sqlerr(db, "commit_record");
            goto done;
        }
    }
    sqlite3_stmt *st = tdb__prepare(
        db, "INSERT INTO records(workload_id, target_id, steps, latencies, mean, error_code, "
            "error_msg, loom_version, created, median, cold) VALUES(?,?,?,?,?,?,?,?,?,?,?)");
    if (!st) goto done;
    sqlite3_bind_int64(st, 1, wid);
    sqlite3_bind_int64(st, 2, tid);
    sqlite3_bind_text(st, 3, log, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, lat, -1, SQLITE_STATIC);
    if (isnan(mean))
        sqlite3_bind_null(st, 5);
    else
        sqlite3_bind_double(st, 5, mean);
    sqlite3_bind_int(st, 6, rec->error_code);
    sqlite3_bind_text(st, 7, rec->error_msg ? rec->error_msg : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, rec->loom_version ? rec->loom_version : LOOM_VERSION_STRING, -1,
                      SQLITE_STATIC);
    sqlite3_bind_double(st, 9, created);
    if (isnan(median))
        sqlite3_bind_null(st, 10);
    else
        sqlite3_bind_double(st, 10, median);
    sqlite3_bind_int(st, 11, rec->cold ? 1 : 0);
    if (sqlite3_step(st) == SQLITE_DONE)
        id = sqlite3_last_insert_rowid(db->sql);
    else
        tdb__sqlerr(db, "commit_record");
    sqlite3_finalize(st);
done:
    free(log);
    free(lat);
    te_ctx_free(ctx);
    return id;
}

int64_t tdb_commit_record(tdb_db *db, const tdb_record_in *rec) {
    if (!db) return -1;
    if (check_writable(db, "commit_record") || tdb__begin(db)) return -1;
    return finish(db, tdb__insert_record(db, rec, false, NULL));
}

int tdb_commit_records(tdb_db *db, int n, const tdb_record_in *recs, int64_t *ids) {
    if (!db) return -1;
    if (n < 0 || (n > 0 && !recs)) return tdb__err(db, "commit_records: no records");
    if (check_writable(db, "commit_records") || tdb__begin(db)) return -1;
    for (int i = 0; i < n; i++) {
        int64_t id = tdb__insert_record(db, &recs[i], false, NULL);
        if (id < 0) {
            char msg[sizeof db->err];
            snprintf(msg, sizeof msg, "%s", db->err);
            tdb__rollback(db);
            return tdb__err(db, "commit_records: record %d: %s", i, msg);
        }
        if (ids) ids[i] = id;
    }
    return tdb__commit(db);
}
