/*
 * tuning_db/jsonl.c — records as JSON lines: export, import, and the JSON
 * form of one record (what `tunedb show` and `best` print).
 *
 * A line carries its workload (key, op, params, flops) and target (key,
 * props) in full, so a file exported on one machine imports into an empty
 * database elsewhere. Import is one transaction: every line is checked,
 * and any bad line rolls the whole file back, the error listing the bad
 * lines by number.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuning_db/tdb_internal.h"

/* Parses text into a cJSON tree, or a fallback value when it does not
 * parse (a stored column is always valid JSON: CHECK(json_valid)). */
static cJSON *parse_or(const char *text, cJSON *(*fallback)(void)) {
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    return j ? j : fallback();
}

cJSON *tdb__record_to_cjson(const tdb_record *r) {
    cJSON *o = cJSON_CreateObject(), *w = cJSON_CreateObject(), *t = cJSON_CreateObject();
    cJSON *lat = cJSON_CreateArray();
    if (!o || !w || !t || !lat) {
        cJSON_Delete(o);
        cJSON_Delete(w);
        cJSON_Delete(t);
        cJSON_Delete(lat);
        return NULL;
    }
    cJSON_AddStringToObject(w, "key", r->workload_key);
    cJSON_AddStringToObject(w, "op", r->op);
    cJSON_AddItemToObject(w, "params", parse_or(r->params_json, cJSON_CreateObject));
    cJSON_AddItemToObject(w, "flops", tdb__exact_number(r->flops));
    cJSON_AddItemToObject(o, "workload", w);
    cJSON_AddStringToObject(t, "key", r->target);
    cJSON_AddItemToObject(t, "props", parse_or(r->target_props_json, cJSON_CreateObject));
    cJSON_AddItemToObject(o, "target", t);
    cJSON_AddItemToObject(o, "steps", parse_or(r->steps_json, cJSON_CreateArray));
    for (int i = 0; i < r->nlatencies; i++)
        cJSON_AddItemToArray(lat, tdb__exact_number(r->latencies[i]));
    cJSON_AddItemToObject(o, "latencies", lat);
    if (isnan(r->mean))
        cJSON_AddNullToObject(o, "mean");
    else
        cJSON_AddItemToObject(o, "mean", tdb__exact_number(r->mean));
    /* Written for readers; import recomputes both from the latencies. */
    if (isnan(r->median))
        cJSON_AddNullToObject(o, "median");
    else
        cJSON_AddItemToObject(o, "median", tdb__exact_number(r->median));
    /* Written for readers; import ignores it (a re-timing ranks programs
     * against others timed beside them on one machine). */
    if (!isnan(r->retimed_latency))
        cJSON_AddItemToObject(o, "retimed_latency", tdb__exact_number(r->retimed_latency));
    cJSON_AddNumberToObject(o, "error_code", r->error_code);
    cJSON_AddStringToObject(o, "error_msg", r->error_msg ? r->error_msg : "");
    cJSON_AddStringToObject(o, "loom_version", r->loom_version ? r->loom_version : "");
    cJSON_AddItemToObject(o, "created", tdb__exact_number(r->created));
    /* Only when set: warm records export as they always did. */
    if (r->cold) cJSON_AddTrueToObject(o, "cold");
    return o;
}

char *tdb_record_to_json(tdb_db *db, const tdb_record *r) {
    if (!r) {
        if (db) tdb__err(db, "record_to_json: no record (NULL)");
        return NULL;
    }
    cJSON *o = tdb__record_to_cjson(r);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text && db) tdb__err(db, "record_to_json: out of memory");
    return text;
}

int64_t tdb_export_jsonl(tdb_db *db, FILE *out) {
    if (!db) return -1;
    if (!out) return tdb__err(db, "export: no output file");
    /* One read transaction: a consistent snapshot while tuners write. */
    if (tdb__exec(db, "BEGIN")) return -1;
    sqlite3_stmt *st =
        tdb__prepare(db, "SELECT " TDB__RECORD_COLUMNS TDB__RECORD_FROM "ORDER BY r.id");
    if (!st) {
        tdb__rollback(db);
        return -1;
    }
    int64_t n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        tdb_record r;
        if (tdb__read_record(st, &r)) break;
        char *line = tdb_record_to_json(db, &r);
        tdb_record_clear(&r);
        if (!line) break;
        int w = fprintf(out, "%s\n", line);
        free(line);
        if (w < 0) {
            sqlite3_finalize(st);
            tdb__rollback(db);
            return tdb__err(db, "export: cannot write the output file");
        }
        n++;
    }
    sqlite3_finalize(st);
    tdb__rollback(db);
    if (rc == SQLITE_ROW) return tdb__err(db, "export: out of memory");
    if (rc != SQLITE_DONE) return tdb__sqlerr(db, "export");
    return n;
}

/* ---- import ---- */

typedef struct {
    char *text;
    size_t len, cap;
    int nbad;
    FILE *all;         /* every bad line goes here too (NULL: none) */
    bool write_failed; /* a write to `all` failed */
} errlist;

#define MAX_LISTED 10

static void errlist_add(errlist *e, long line, const char *msg) {
    e->nbad++;
    if (e->all && fprintf(e->all, "line %ld: %s\n", line, msg) < 0) e->write_failed = true;
    if (e->nbad > MAX_LISTED) return;
    char item[320];
    int n = snprintf(item, sizeof item, "\n  line %ld: %.280s", line, msg);
    if (n < 0) return;
    if (e->len + (size_t)n + 1 > e->cap) {
        size_t nc = (e->cap ? e->cap * 2 : 1024) + (size_t)n;
        char *t = realloc(e->text, nc);
        if (!t) return;
        e->text = t;
        e->cap = nc;
    }
    memcpy(e->text + e->len, item, (size_t)n + 1);
    e->len += (size_t)n;
}

static const char *str_field(const cJSON *o, const char *name) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* One line into the database; 0, 1 (a duplicate), or -1 with msg set
 * (fatal: whether a database error stops the import). */
static int import_line(tdb_db *db, const char *line, char *msg, size_t msgsz, bool *fatal,
                       bool *dup) {
    *fatal = false;
    *dup = false;
    cJSON *o = cJSON_Parse(line);
    int rc = -1;
    char *steps = NULL, *params = NULL, *props = NULL;
    double *lat = NULL;
    if (!o) {
        snprintf(msg, msgsz, "not valid JSON");
        goto done;
    }
    if (!cJSON_IsObject(o)) {
        snprintf(msg, msgsz, "not a JSON object");
        goto done;
    }
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "workload");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "target");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "steps");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "latencies");
    const cJSON *ec = cJSON_GetObjectItemCaseSensitive(o, "error_code");
    const cJSON *cr = cJSON_GetObjectItemCaseSensitive(o, "created");
    const char *wkey = cJSON_IsObject(w) ? str_field(w, "key") : NULL;
    const char *wop = cJSON_IsObject(w) ? str_field(w, "op") : NULL;
    const char *tkey = cJSON_IsObject(t) ? str_field(t, "key") : NULL;
    if (!wkey || !wop) {
        snprintf(msg, msgsz, "'workload' must be an object with string fields 'key' and 'op'");
        goto done;
    }
    if (!tkey) {
        snprintf(msg, msgsz, "'target' must be an object with a string field 'key'");
        goto done;
    }
    if (!cJSON_IsArray(s)) {
        snprintf(msg, msgsz, "'steps' must be an array of steps");
        goto done;
    }
    if (!cJSON_IsArray(l)) {
        snprintf(msg, msgsz, "'latencies' must be an array of seconds");
        goto done;
    }
    if (!cJSON_IsNumber(ec) || ec->valuedouble != floor(ec->valuedouble) ||
        !isfinite(ec->valuedouble)) {
        snprintf(msg, msgsz, "'error_code' must be an integer");
        goto done;
    }
    if (ec->valuedouble < 0 || ec->valuedouble > TDB_ERROR_CODE_MAX) {
        snprintf(msg, msgsz,
                 "'error_code' %.17g is not a tuner error code (0: measured fine, 1..%d: the "
                 "runner's failures)",
                 ec->valuedouble, TDB_ERROR_CODE_MAX);
        goto done;
    }
    if (!cJSON_IsNumber(cr) || !(cr->valuedouble > 0) || !isfinite(cr->valuedouble)) {
        snprintf(msg, msgsz, "'created' must be a positive unix time in seconds");
        goto done;
    }
    const cJSON *wp = cJSON_GetObjectItemCaseSensitive(w, "params");
    const cJSON *wf = cJSON_GetObjectItemCaseSensitive(w, "flops");
    const cJSON *tp = cJSON_GetObjectItemCaseSensitive(t, "props");
    if ((wp && !cJSON_IsObject(wp)) || (tp && !cJSON_IsObject(tp)) || (wf && !cJSON_IsNumber(wf))) {
        snprintf(msg, msgsz,
                 "'workload.params' and 'target.props' must be objects, 'workload.flops' a number");
        goto done;
    }
    const cJSON *em = cJSON_GetObjectItemCaseSensitive(o, "error_msg");
    const cJSON *lv = cJSON_GetObjectItemCaseSensitive(o, "loom_version");
    if ((em && !cJSON_IsString(em)) || (lv && !cJSON_IsString(lv))) {
        snprintf(msg, msgsz, "'error_msg' and 'loom_version' must be strings");
        goto done;
    }
    const cJSON *cold = cJSON_GetObjectItemCaseSensitive(o, "cold");
    if (cold && !cJSON_IsBool(cold)) {
        snprintf(msg, msgsz, "'cold' must be true or false");
        goto done;
    }
    int nl = cJSON_GetArraySize(l);
    lat = malloc(sizeof(double) * (size_t)(nl ? nl : 1));
    if (!lat) {
        snprintf(msg, msgsz, "out of memory");
        goto done;
    }
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, l) {
        if (!cJSON_IsNumber(e)) {
            snprintf(msg, msgsz, "latency %d is not a number", i);
            goto done;
        }
        lat[i++] = e->valuedouble;
    }
    steps = cJSON_PrintUnformatted(s);
    params = wp ? cJSON_PrintUnformatted(wp) : NULL;
    props = tp ? cJSON_PrintUnformatted(tp) : NULL;
    if (!steps || (wp && !params) || (tp && !props)) {
        snprintf(msg, msgsz, "out of memory");
        goto done;
    }
    if (tdb__workload_id(db, wkey) == 0 &&
        tdb__insert_workload(db, wkey, wop, params, wf ? wf->valuedouble : 0) < 0)
        goto db_error;
    if (tdb__insert_target(db, tkey, props) < 0) goto db_error;
    tdb_record_in rec = {.workload_key = wkey,
                         .target = tkey,
                         .steps_json = steps,
                         .nlatencies = nl,
                         .latencies = lat,
                         .error_code = (int)ec->valuedouble,
                         .error_msg = em ? em->valuestring : "",
                         .created = cr->valuedouble,
                         .loom_version = lv ? lv->valuestring : "unknown",
                         .cold = cJSON_IsTrue(cold)};
    if (tdb__check_import(db, &rec) || tdb__insert_record(db, &rec, true, dup) < 0)
        goto db_error;
    rc = *dup ? 1 : 0;
    goto done;
db_error:
    /* Messages of the record checks are the line's fault; those of SQLite
     * (busy, I/O) stop the import. */
    *fatal = db->sql_failed != 0;
    snprintf(msg, msgsz, "%.1000s", db->err);
done:
    free(steps);
    free(params);
    free(props);
    free(lat);
    cJSON_Delete(o);
    return rc;
}

int tdb_import_jsonl(tdb_db *db, FILE *in, int64_t *imported, int64_t *skipped) {
    return tdb_import_jsonl_with(db, in, NULL, imported, skipped);
}

int tdb_import_jsonl_with(tdb_db *db, FILE *in, tdb_import_options *opts, int64_t *imported,
                          int64_t *skipped) {
    if (imported) *imported = 0;
    if (opts) opts->bad_lines = 0;
    if (skipped) *skipped = 0;
    if (!db) return -1;
    if (!in) return tdb__err(db, "import: no input file");
    if (db->readonly) return tdb__err(db, "import: tuning db '%s' was opened read-only", db->path);
    if (tdb__begin(db)) return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    int64_t nimp = 0, nskip = 0;
    errlist errs = {.all = opts ? opts->errors : NULL};
    char msg[1024];
    while ((len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        size_t k = strspn(line, " \t\r\n");
        if (line[k] == 0) continue;
        bool fatal, dup;
        db->sql_failed = 0;
        int rc = import_line(db, line, msg, sizeof msg, &fatal, &dup);
        if (rc < 0) {
            errlist_add(&errs, lineno, msg);
            if (fatal) break;
        } else if (dup) {
            nskip++;
        } else {
            nimp++;
        }
    }
    free(line);
    bool read_error = ferror(in);
    if (errs.all && fflush(errs.all)) errs.write_failed = true;
    if (opts) opts->bad_lines = errs.nbad;
    if (errs.nbad || read_error || errs.write_failed) {
        tdb__rollback(db);
        /* The count leads: the list can be cut at the message's size. */
        char more[64] = "";
        if (errs.nbad > MAX_LISTED)
            snprintf(more, sizeof more, " (the first %d listed)", MAX_LISTED);
        if (read_error && !errs.nbad)
            tdb__err(db, "import: cannot read the input (line %ld); nothing imported", lineno + 1);
        else if (errs.write_failed)
            tdb__err(db, "import: cannot write the error list (%d bad line%s); nothing imported",
                     errs.nbad, errs.nbad == 1 ? "" : "s");
        else
            tdb__err(db, "import: %d bad line%s, nothing imported%s:%s", errs.nbad,
                     errs.nbad == 1 ? "" : "s", more, errs.text ? errs.text : "");
        free(errs.text);
        return -1;
    }
    free(errs.text);
    if (tdb__commit(db)) return -1;
    if (imported) *imported = nimp;
    if (skipped) *skipped = nskip;
    return 0;
}
