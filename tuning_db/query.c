/*
 * tuning_db/query.c — reading records back: best-k, one record, history,
 * per-(workload, target) summaries, statistics, and pruning.
 *
 * Every query names one target key and joins on it, so records of
 * different machines never mix.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuning_db/tdb_internal.h"

static char *col_str(sqlite3_stmt *st, int i) {
    const unsigned char *s = sqlite3_column_text(st, i);
    return tdb__strdup(s ? (const char *)s : "");
}

static double col_real_or_nan(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

int tdb__read_record(sqlite3_stmt *st, tdb_record *r) {
    memset(r, 0, sizeof *r);
    r->id = sqlite3_column_int64(st, 0);
    r->workload_key = col_str(st, 1);
    r->op = col_str(st, 2);
    r->target = col_str(st, 3);
    r->steps_json = col_str(st, 4);
    r->mean = col_real_or_nan(st, 6);
    r->median = col_real_or_nan(st, 14);
    r->retimed_latency = col_real_or_nan(st, 15);
    r->error_code = sqlite3_column_int(st, 7);
    r->error_msg = col_str(st, 8);
    r->loom_version = col_str(st, 9);
    r->created = sqlite3_column_double(st, 10);
    r->flops = sqlite3_column_double(st, 11);
    r->params_json = col_str(st, 12);
    r->target_props_json = col_str(st, 13);
    r->cold = sqlite3_column_int(st, 16) != 0;
    cJSON *lat = cJSON_Parse((const char *)sqlite3_column_text(st, 5));
    int n = cJSON_IsArray(lat) ? cJSON_GetArraySize(lat) : 0;
    r->latencies = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (r->latencies) {
        const cJSON *e;
        cJSON_ArrayForEach(e, lat) r->latencies[r->nlatencies++] = cJSON_GetNumberValue(e);
    }
    cJSON_Delete(lat);
    bool ok = r->workload_key && r->op && r->target && r->steps_json && r->error_msg &&
              r->loom_version && r->params_json && r->target_props_json && r->latencies;
    if (!ok) tdb_record_clear(r);
    return ok ? 0 : -1;
}

void tdb_record_clear(tdb_record *r) {
    if (!r) return;
    free(r->workload_key);
    free(r->op);
    free(r->target);
    free(r->steps_json);
    free(r->latencies);
    free(r->error_msg);
    free(r->loom_version);
    free(r->params_json);
    free(r->target_props_json);
    memset(r, 0, sizeof *r);
}

void tdb_records_free(tdb_record *recs, int n) {
    if (!recs) return;
    for (int i = 0; i < n; i++) tdb_record_clear(&recs[i]);
    free(recs);
}

double tdb_record_gflops(const tdb_record *r) {
    if (!r || !(r->flops > 0) || !(r->median > 0)) return 0;
    return r->flops / r->median * 1e-9;
}

/* Runs a record SELECT with its text parameters bound, collecting rows. */
static int collect_records(tdb_db *db, const char *what, sqlite3_stmt *st, tdb_record **out) {
    int n = 0, cap = 0;
    tdb_record *a = NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            tdb_record *na = realloc(a, sizeof *a * (size_t)cap);
            if (!na) break;
            a = na;
        }
        if (tdb__read_record(st, &a[n])) break;
        n++;
    }
    if (rc != SQLITE_DONE) {
        if (rc == SQLITE_ROW)
            tdb__err(db, "%s: out of memory", what);
        else
            tdb__sqlerr(db, what);
        sqlite3_finalize(st);
        tdb_records_free(a, n);
        return -1;
    }
    sqlite3_finalize(st);
    if (n == 0) {
        free(a);
        a = NULL;
    }
    *out = a;
    return n;
}

int tdb_best(tdb_db *db, const char *workload_key, const char *target, int k, tdb_record **out) {
    if (!db) return -1;
    if (!out) return tdb__err(db, "best: no output pointer");
    *out = NULL;
    if (!workload_key || !target) return tdb__err(db, "best: needs a workload key and a target");
    if (k < 1) return tdb__err(db, "best: k = %d must be >= 1", k);
    sqlite3_stmt *st = tdb__prepare(
        db, "SELECT " TDB__RECORD_COLUMNS TDB__RECORD_FROM
            "WHERE w.key = ?1 AND t.key = ?2 AND r.error_code = 0 AND r.median IS NOT NULL "
            "ORDER BY " TDB__RANK_ORDER("retimed", "r.median") ", r.id LIMIT ?3");
    if (!st) return -1;
    sqlite3_bind_text(st, 1, workload_key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, target, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, k);
    return collect_records(db, "best", st, out);
}

int tdb_has_steps(tdb_db *db, const char *workload_key, const char *target,
                  const char *steps_json) {
    if (!db) return -1;
    if (!workload_key || !target || !steps_json)
        return tdb__err(db, "has_steps: needs a workload key, a target and a step log");
    te_ctx *ctx = te_ctx_new();
    if (!ctx) return tdb__err(db, "has_steps: out of memory");
    int nsteps = 0;
    sch_step *steps = NULL;
    char *log = NULL;
    int found = -1;
    if (tdb_steps_from_json(ctx, steps_json, &nsteps, &steps))
        tdb__err(db, "has_steps: %s", te_ctx_errmsg(ctx));
    else if (!(log = tdb_steps_to_json(nsteps, steps)))
        tdb__err(db, "has_steps: the step log holds a step of unknown kind");
    sqlite3_stmt *st = log ? tdb__prepare(db, "SELECT 1" TDB__RECORD_FROM
                                              "WHERE w.key = ?1 AND t.key = ?2 AND r.steps = ?3 "
                                              "LIMIT 1")
                           : NULL;
    if (st) {
        sqlite3_bind_text(st, 1, workload_key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, target, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, log, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) found = 1;
        else if (rc == SQLITE_DONE) found = 0;
        else tdb__sqlerr(db, "has_steps");
        sqlite3_finalize(st);
    }
    free(log);
    te_ctx_free(ctx);
    return found;
}

int tdb_get_record(tdb_db *db, int64_t id, tdb_record *out) {
    if (!db) return -1;
    if (!out) return tdb__err(db, "get_record: no output pointer");
    sqlite3_stmt *st =
        tdb__prepare(db, "SELECT " TDB__RECORD_COLUMNS TDB__RECORD_FROM "WHERE r.id = ?");
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    tdb_record *a = NULL;
    int n = collect_records(db, "get_record", st, &a);
    if (n <= 0) return n;
    *out = a[0];
    free(a);
    return 1;
}

int tdb_history(tdb_db *db, const char *workload_key, const char *target, tdb_history_point **out) {
    if (!db) return -1;
    if (!out) return tdb__err(db, "history: no output pointer");
    *out = NULL;
    if (!workload_key || !target) return tdb__err(db, "history: needs a workload key and a target");
    sqlite3_stmt *st = tdb__prepare(
        db, "SELECT r.id, r.median, r.error_code FROM records r JOIN workloads w ON w.id = "
            "r.workload_id JOIN targets t ON t.id = r.target_id WHERE w.key = ? AND t.key = ? "
            "ORDER BY r.id");
    if (!st) return -1;
    sqlite3_bind_text(st, 1, workload_key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, target, -1, SQLITE_STATIC);
    int n = 0, cap = 0, rc;
    tdb_history_point *a = NULL;
    double best = NAN;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            tdb_history_point *na = realloc(a, sizeof *a * (size_t)cap);
            if (!na) break;
            a = na;
        }
        double lat = sqlite3_column_int(st, 2) ? NAN : col_real_or_nan(st, 1);
        if (!isnan(lat) && (isnan(best) || lat < best)) best = lat;
        a[n] = (tdb_history_point){n + 1, sqlite3_column_int64(st, 0), lat, best};
        n++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(a);
        return rc == SQLITE_ROW ? tdb__err(db, "history: out of memory")
                                : tdb__sqlerr(db, "history");
    }
    *out = a;
    return n;
}

int tdb_history_reach(const tdb_history_point *h, int n, double fraction) {
    if (!h || n <= 0 || !(fraction > 0) || fraction > 1) return 0;
    double best = NAN;
    for (int i = 0; i < n; i++)
        if (!isnan(h[i].latency) && (isnan(best) || h[i].latency < best)) best = h[i].latency;
    if (isnan(best)) return 0;
    /* GFLOP/s >= fraction * best GFLOP/s  <=>  best / latency >= fraction;
     * written so, a trial at exactly the best always qualifies. */
    for (int i = 0; i < n; i++)
        if (!isnan(h[i].latency) && (h[i].latency == best || best / h[i].latency >= fraction))
            return h[i].trial;
    return 0;
}

int tdb_list(tdb_db *db, const char *target, tdb_summary **out) {
    if (!db) return -1;
    if (!out) return tdb__err(db, "list: no output pointer");
    *out = NULL;
    sqlite3_stmt *st =
        tdb__prepare(db, "SELECT w.key, w.op, t.key, count(*), "
                         "sum(r.error_code = 0 AND r.median IS NOT NULL), "
                         "coalesce(min(CASE WHEN r.error_code = 0 THEN " TDB__RETIMED_LATENCY("r")
                         " END), min(CASE WHEN r.error_code = 0 THEN r.median END)), w.flops "
                         "FROM records r JOIN workloads w ON w.id = r.workload_id "
                         "JOIN targets t ON t.id = r.target_id WHERE ?1 IS NULL OR t.key = ?1 "
                         "GROUP BY r.workload_id, r.target_id ORDER BY w.key, t.key");
    if (!st) return -1;
    if (target) sqlite3_bind_text(st, 1, target, -1, SQLITE_STATIC);
    int n = 0, cap = 0, rc;
    tdb_summary *a = NULL;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            tdb_summary *na = realloc(a, sizeof *a * (size_t)cap);
            if (!na) break;
            a = na;
        }
        a[n] = (tdb_summary){col_str(st, 0),
                             col_str(st, 1),
                             col_str(st, 2),
                             sqlite3_column_int(st, 3),
                             sqlite3_column_int(st, 4),
                             col_real_or_nan(st, 5),
                             sqlite3_column_double(st, 6)};
        n++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        tdb_summaries_free(a, n);
        return rc == SQLITE_ROW ? tdb__err(db, "list: out of memory") : tdb__sqlerr(db, "list");
    }
    *out = a;
    return n;
}

void tdb_summaries_free(tdb_summary *s, int n) {
    if (!s) return;
    for (int i = 0; i < n; i++) {
        free(s[i].workload_key);
        free(s[i].op);
        free(s[i].target);
    }
    free(s);
}

static int count(tdb_db *db, const char *sql, int64_t *out) {
    sqlite3_stmt *st = tdb__prepare(db, sql);
    if (!st) return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *out = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : tdb__sqlerr(db, "stats");
}

int tdb_get_stats(tdb_db *db, tdb_stats *out) {
    if (!db) return -1;
    if (!out) return tdb__err(db, "stats: no output pointer");
    memset(out, 0, sizeof *out);
    int64_t pages = 0, page_size = 0;
    out->schema_version = tdb_schema_version(db);
    if (out->schema_version < 0 || count(db, "SELECT count(*) FROM workloads", &out->workloads) ||
        count(db, "SELECT count(*) FROM targets", &out->targets) ||
        count(db, "SELECT count(*) FROM records", &out->records) ||
        count(db, "SELECT count(*) FROM records WHERE error_code <> 0", &out->error_records) ||
        count(db, "SELECT count(*) FROM cost_models", &out->cost_models) ||
        count(db, "PRAGMA page_count", &pages) || count(db, "PRAGMA page_size", &page_size))
        return -1;
    out->file_bytes = pages * page_size;
    return 0;
}

int64_t tdb_prune(tdb_db *db, int keep) {
    if (!db) return -1;
    if (keep < 0) return tdb__err(db, "prune: keep = %d must be >= 0", keep);
    if (db->readonly) return tdb__err(db, "prune: tuning db '%s' was opened read-only", db->path);
    if (tdb__begin(db)) return -1;
    sqlite3_stmt *st = tdb__prepare(
        db, "DELETE FROM records WHERE id NOT IN (SELECT id FROM (SELECT id, row_number() OVER "
            "(PARTITION BY workload_id, target_id ORDER BY " TDB__RANK_ORDER("retimed", "median")
            ", id) AS rank FROM (SELECT id, workload_id, target_id, median, "
            TDB__RETIMED_LATENCY("records") " AS retimed FROM records WHERE error_code = 0 AND "
            "median IS NOT NULL)) WHERE rank <= ?)");
    if (!st) {
        tdb__rollback(db);
        return -1;
    }
    sqlite3_bind_int(st, 1, keep);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        tdb__sqlerr(db, "prune");
        tdb__rollback(db);
        return -1;
    }
    int64_t n = sqlite3_changes64(db->sql);
    return tdb__commit(db) ? -1 : n;
}

int tdb_check(tdb_db *db) {
    if (!db) return -1;
    sqlite3_stmt *st = tdb__prepare(db, "PRAGMA quick_check(5)");
    if (!st) return -1;
    char problems[1024] = "";
    size_t len = 0;
    int rc;
    bool ok = false;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *line = (const char *)sqlite3_column_text(st, 0);
        if (line && !strcmp(line, "ok")) {
            ok = true;
            continue;
        }
        int w = snprintf(problems + len, sizeof problems - len, "%s%s", len ? "; " : "",
                         line ? line : "?");
        if (w > 0 && (size_t)w < sizeof problems - len) len += (size_t)w;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return tdb__sqlerr(db, "check");
    if (!ok || len) return tdb__err(db, "check: tuning db '%s' is damaged: %s", db->path, problems);
    return 0;
}
