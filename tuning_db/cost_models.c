/*
 * tuning_db/cost_models.c — one stored cost-model blob per target (the
 * cost-model module saves its trained XGBoost model here, so a later
 * tuning run on the same machine starts from it).
 */
#include <stdlib.h>
#include <string.h>

#include "tuning_db/tdb_internal.h"

int tdb_put_cost_model(tdb_db *db, const char *target, const char *format, const void *blob,
                       size_t size) {
    if (!db) return -1;
    if (!target || !*target) return tdb__err(db, "put_cost_model: no target key");
    if (!format || !*format) return tdb__err(db, "put_cost_model: no format name");
    if (!blob || size == 0)
        return tdb__err(db, "put_cost_model: empty model for target '%s'", target);
    if (db->readonly)
        return tdb__err(db, "put_cost_model: tuning db '%s' was opened read-only", db->path);
    if (tdb__begin(db)) return -1;
    int64_t tid = tdb__insert_target(db, target, NULL);
    sqlite3_stmt *st =
        tid < 0
            ? NULL
            : tdb__prepare(
                  db, "INSERT INTO cost_models(target_id, format, model, updated) VALUES(?,?,?,?) "
                      "ON CONFLICT(target_id) DO UPDATE SET format = excluded.format, model = "
                      "excluded.model, "
                      "updated = excluded.updated");
    if (!st) {
        tdb__rollback(db);
        return -1;
    }
    sqlite3_bind_int64(st, 1, tid);
    sqlite3_bind_text(st, 2, format, -1, SQLITE_STATIC);
    sqlite3_bind_blob64(st, 3, blob, size, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, tdb__now());
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        tdb__sqlerr(db, "put_cost_model");
        tdb__rollback(db);
        return -1;
    }
    return tdb__commit(db);
}

int tdb_get_cost_model(tdb_db *db, const char *target, void **blob, size_t *size, char **format) {
    if (!db) return -1;
    if (!target || !blob || !size) return tdb__err(db, "get_cost_model: missing argument");
    *blob = NULL;
    *size = 0;
    if (format) *format = NULL;
    sqlite3_stmt *st = tdb__prepare(
        db, "SELECT c.format, c.model FROM cost_models c JOIN targets t ON t.id = c.target_id "
            "WHERE t.key = ?");
    if (!st) return -1;
    sqlite3_bind_text(st, 1, target, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        sqlite3_finalize(st);
        return 0;
    }
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        return tdb__sqlerr(db, "get_cost_model");
    }
    int n = sqlite3_column_bytes(st, 1);
    void *b = malloc(n > 0 ? (size_t)n : 1);
    char *f = format ? tdb__strdup((const char *)sqlite3_column_text(st, 0)) : NULL;
    if (!b || (format && !f)) {
        free(b);
        free(f);
        sqlite3_finalize(st);
        return tdb__err(db, "get_cost_model: out of memory");
    }
    if (n > 0) memcpy(b, sqlite3_column_blob(st, 1), (size_t)n);
    sqlite3_finalize(st);
    *blob = b;
    *size = (size_t)n;
    if (format) *format = f;
    return 1;
}

int tdb_list_cost_models(tdb_db *db, tdb_cost_model_entry **out) {
    if (!db) return -1;
    if (!out) return tdb__err(db, "list_cost_models: missing argument");
    *out = NULL;
    sqlite3_stmt *st = tdb__prepare(
        db, "SELECT t.key, c.format, length(c.model), c.updated FROM cost_models c JOIN targets t "
            "ON t.id = c.target_id ORDER BY t.key");
    if (!st) return -1;
    tdb_cost_model_entry *e = NULL;
    int n = 0, cap = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 4;
            tdb_cost_model_entry *g = realloc(e, sizeof *e * (size_t)cap);
            if (!g) break;
            e = g;
        }
        tdb_cost_model_entry *x = &e[n++];
        *x = (tdb_cost_model_entry){tdb__strdup((const char *)sqlite3_column_text(st, 0)),
                                    tdb__strdup((const char *)sqlite3_column_text(st, 1)),
                                    sqlite3_column_int64(st, 2), sqlite3_column_double(st, 3)};
        if (!x->target || !x->format) break; /* out of memory: rc is still SQLITE_ROW */
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        tdb_cost_models_free(e, n);
        return rc == SQLITE_ROW ? tdb__err(db, "list_cost_models: out of memory")
                                : tdb__sqlerr(db, "list_cost_models");
    }
    *out = e;
    return n;
}

void tdb_cost_models_free(tdb_cost_model_entry *e, int n) {
    for (int i = 0; i < n && e; i++) free(e[i].target), free(e[i].format);
    free(e);
}
