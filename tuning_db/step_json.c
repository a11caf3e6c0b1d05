/*
 * tuning_db/step_json.c — the transform-step log as JSON and back: the
 * log's one text, stored in the database, sent to measurement workers and
 * hashed by the search to deduplicate programs (tune_steps_key).
 *
 * One object per step with named fields (Ansor writes positional arrays
 * like ["SP", 2, 0, 512, [8], 1]; named fields cost a few bytes and make a
 * stored log readable and a malformed one explainable). The parser is
 * strict: every field of the kind must be there, no other field may be,
 * and numbers must be integers of the field's range, so that a log that
 * parses is exactly the log that was written.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "loom/tuning_db.h"
#include "tuning_db/tdb_internal.h"

static const char *const ann_names[] = {"none", "vectorize", "unroll", "parallel", "bind"};
#define NANN ((int)(sizeof ann_names / sizeof *ann_names))

/* ---- writing ----
 * Straight to text, not through a cJSON tree: the search writes the log of
 * every candidate it deduplicates, and a tree costs allocations per field,
 * several times what applying the program costs. The text is the one
 * cJSON printed when it wrote the log (databases hold it): compact, fields
 * in this order; the rare number of 16 or more digits, or a string that
 * needs escapes, still goes through cJSON's printer so that it stays so. */

static void put_cjson(FILE *f, cJSON *item, bool *ok) {
    char *text = item ? cJSON_PrintUnformatted(item) : NULL;
    if (!text || fputs_unlocked(text, f) < 0) *ok = false;
    cJSON_free(text);
    cJSON_Delete(item);
}

/* Digits by hand and unlocked writes (the stream is log_text's own): the
 * decoder writes every step of every program it tries. */
static void put_num(FILE *f, int64_t v, bool *ok) {
    if (v <= -INT64_C(1000000000000000) || v >= INT64_C(1000000000000000)) {
        put_cjson(f, cJSON_CreateNumber((double)v), ok);
        return;
    }
    char d[24];
    size_t k = sizeof d;
    uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
    do d[--k] = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0) d[--k] = '-';
    fwrite_unlocked(d + k, 1, sizeof d - k, f);
}

static void put_field(FILE *f, const char *name) {
    fputs_unlocked(",\"", f);
    fputs_unlocked(name, f);
    fputs_unlocked("\":", f);
}

static void put_int(FILE *f, const char *name, int64_t v, bool *ok) {
    put_field(f, name);
    put_num(f, v, ok);
}

static void put_ints(FILE *f, const char *name, int n, const int *a, bool *ok) {
    put_field(f, name);
    putc_unlocked('[', f);
    for (int i = 0; i < n; i++) {
        if (i) putc_unlocked(',', f);
        put_num(f, a ? a[i] : 0, ok);
    }
    putc_unlocked(']', f);
}

static void put_str(FILE *f, const char *name, const char *s, bool *ok) {
    put_field(f, name);
    s = s ? s : "";
    bool plain = true;
    for (const unsigned char *c = (const unsigned char *)s; *c && plain; c++)
        plain = *c >= 0x20 && *c != '"' && *c != '\\';
    if (!plain) {
        put_cjson(f, cJSON_CreateString(s), ok);
        return;
    }
    putc_unlocked('"', f);
    fputs_unlocked(s, f);
    putc_unlocked('"', f);
}

static bool put_step(FILE *f, const sch_step *st) {
    if ((int)st->kind < 0 || st->kind >= SCH_STEP_KIND_COUNT) return false;
    bool ok = true;
    fputs_unlocked("{\"kind\":\"", f);
    fputs_unlocked(sch_step_kind_name(st->kind), f);
    putc_unlocked('"', f);
    put_int(f, "stage", st->stage, &ok);
    switch (st->kind) {
    case SCH_STEP_SPLIT:
        put_int(f, "iter", st->iter, &ok);
        put_int(f, st->nparts ? "nparts" : "factor", st->value, &ok);
        break;
    case SCH_STEP_FUSE:
    case SCH_STEP_REORDER: put_ints(f, "iters", st->n, st->iters, &ok); break;
    case SCH_STEP_ANNOTATE:
        if ((int)st->ann <= 0 || (int)st->ann >= NANN) return false;
        put_int(f, "iter", st->iter, &ok);
        put_str(f, "ann", ann_names[st->ann], &ok);
        if (st->ann == SCH_ANN_BIND) put_str(f, "thread", st->str, &ok);
        break;
    case SCH_STEP_PRAGMA:
        put_int(f, "iter", st->iter, &ok);
        put_str(f, "name", st->str, &ok);
        put_int(f, "value", st->value, &ok);
        break;
    case SCH_STEP_COMPUTE_AT:
        put_int(f, "target_stage", st->target_stage, &ok);
        put_int(f, "iter", st->iter, &ok);
        break;
    case SCH_STEP_COMPUTE_INLINE:
    case SCH_STEP_COMPUTE_ROOT: break;
    case SCH_STEP_DOUBLE_BUFFER:
        if (st->value) put_int(f, "buffers", st->value, &ok);
        break;
    case SCH_STEP_SWIZZLE:
        if (st->value) put_int(f, "transposed", st->value, &ok);
        break;
    case SCH_STEP_CACHE_READ:
        put_str(f, "scope", st->str, &ok);
        put_ints(f, "readers", st->n, st->stages, &ok);
        break;
    case SCH_STEP_CACHE_WRITE: put_str(f, "scope", st->str, &ok); break;
    case SCH_STEP_RFACTOR:
        put_int(f, "iter", st->iter, &ok);
        put_int(f, "factor_axis", st->value, &ok);
        break;
    case SCH_STEP_STORAGE_ALIGN:
        put_int(f, "iter", st->iter, &ok);
        put_int(f, "factor", st->value, &ok);
        put_int(f, "offset", st->value2, &ok);
        break;
    case SCH_STEP_PACK:
        put_int(f, "iter", st->iter, &ok);
        put_int(f, "factor", st->value, &ok);
        break;
    case SCH_STEP_TENSORIZE:
        put_int(f, "iter", st->iter, &ok);
        put_str(f, "intrin", st->str, &ok);
        break;
    default: return false;
    }
    putc_unlocked('}', f);
    return ok;
}

/* The log of s (steps unused) or of the array steps (s NULL). */
static char *log_text(const sch_schedule *s, int nsteps, const sch_step *steps) {
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f) return NULL;
    bool ok = putc_unlocked('[', f) != EOF;
    for (int i = 0; ok && i < nsteps; i++) {
        if (i) putc_unlocked(',', f);
        ok = put_step(f, s ? sch_get_step(s, i) : &steps[i]);
    }
    putc_unlocked(']', f);
    ok = ok && !ferror(f);
    if (fclose(f) || !ok) {
        free(text);
        return NULL;
    }
    return text;
}

char *tdb_steps_to_json(int nsteps, const sch_step *steps) {
    if (nsteps < 0 || (nsteps > 0 && !steps)) return NULL;
    return log_text(NULL, nsteps, steps);
}

char *tdb_schedule_to_json(const sch_schedule *s) {
    return s ? log_text(s, sch_num_steps(s), NULL) : NULL;
}

/* ---- parsing ---- */

typedef struct {
    te_ctx *ctx;
    int index; /* step index, for messages */
    const char *kind;
} pctx;

static int perr(const pctx *p, const char *field, const char *what) {
    return te_error(p->ctx, "step log: step %d (%s): field '%s' %s", p->index,
                    p->kind ? p->kind : "?", field, what);
}

/* An integer in [lo, hi]. cJSON stores numbers as doubles: anything not
 * exactly integral, or beyond 2^53, is refused rather than rounded. */
static int get_int(const pctx *p, const cJSON *o, const char *field, int64_t lo, int64_t hi,
                   int64_t *out) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, field);
    if (!x) return perr(p, field, "is missing");
    if (!cJSON_IsNumber(x)) return perr(p, field, "must be a number");
    double d = x->valuedouble;
    if (!isfinite(d) || d != floor(d) || fabs(d) > 9007199254740992.0)
        return perr(p, field, "must be an integer");
    if (d < (double)lo || d > (double)hi) {
        return te_error(p->ctx,
                        "step log: step %d (%s): field '%s' = %.0f is out of range [%lld, %lld]",
                        p->index, p->kind, field, d, (long long)lo, (long long)hi);
    }
    *out = (int64_t)d;
    return 0;
}

static int get_index(const pctx *p, const cJSON *o, const char *field, int *out) {
    int64_t v;
    if (get_int(p, o, field, 0, INT32_MAX, &v)) return -1;
    *out = (int)v;
    return 0;
}

static int get_str(const pctx *p, const cJSON *o, const char *field, const char **out) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, field);
    if (!x) return perr(p, field, "is missing");
    if (!cJSON_IsString(x) || !x->valuestring) return perr(p, field, "must be a string");
    *out = te_strdup(p->ctx, x->valuestring);
    return *out ? 0 : -1;
}

static int get_index_array(const pctx *p, const cJSON *o, const char *field, int minlen, int *n,
                           int **out) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, field);
    if (!x) return perr(p, field, "is missing");
    if (!cJSON_IsArray(x)) return perr(p, field, "must be an array of indices");
    int len = cJSON_GetArraySize(x);
    if (len < minlen) {
        return te_error(p->ctx,
                        "step log: step %d (%s): field '%s' needs at least %d entries, has %d",
                        p->index, p->kind, field, minlen, len);
    }
    int *a = te_alloc(p->ctx, sizeof(int) * (size_t)(len ? len : 1));
    if (!a) return -1;
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, x) {
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
            e->valuedouble > INT32_MAX) {
            return te_error(
                p->ctx,
                "step log: step %d (%s): field '%s' entry %d must be a non-negative integer",
                p->index, p->kind, field, i);
        }
        a[i++] = (int)e->valuedouble;
    }
    *n = len;
    *out = a;
    return 0;
}

/* Refuses any field the kind does not have: a misspelt field would
 * otherwise be silently dropped and the log would not be the one meant. */
static int check_fields(const pctx *p, const cJSON *o, const char *const *allowed) {
    const cJSON *f;
    cJSON_ArrayForEach(f, o) {
        bool ok = false;
        for (int i = 0; allowed[i]; i++)
            if (f->string && !strcmp(f->string, allowed[i])) ok = true;
        if (!ok) {
            return te_error(p->ctx, "step log: step %d (%s): unknown field '%s'", p->index, p->kind,
                            f->string ? f->string : "?");
        }
    }
    return 0;
}

static int parse_step(te_ctx *ctx, int index, const cJSON *o, sch_step *st) {
    pctx p = {ctx, index, NULL};
    memset(st, 0, sizeof *st);
    if (!cJSON_IsObject(o)) return te_error(ctx, "step log: step %d is not a JSON object", index);
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kind");
    if (!k || !cJSON_IsString(k) || !k->valuestring)
        return te_error(ctx, "step log: step %d has no string field 'kind'", index);
    int kind = -1;
    for (int i = 0; i < SCH_STEP_KIND_COUNT; i++)
        if (!strcmp(k->valuestring, sch_step_kind_name((sch_step_kind)i))) kind = i;
    if (kind < 0) {
        return te_error(ctx,
                        "step log: step %d: unknown step kind '%.64s' (kinds: split, fuse, "
                        "reorder, annotate, pragma, compute_at, compute_inline, compute_root, "
                        "cache_read, cache_write, rfactor, storage_align, pack, tensorize, double_buffer, swizzle)",
                        index, k->valuestring);
    }
    st->kind = (sch_step_kind)kind;
    p.kind = sch_step_kind_name(st->kind);
    if (get_index(&p, o, "stage", &st->stage)) return -1;
    int64_t v;
    switch (st->kind) {
    case SCH_STEP_SPLIT: {
        static const char *const f[] = {"kind", "stage", "iter", "factor", "nparts", NULL};
        if (check_fields(&p, o, f) || get_index(&p, o, "iter", &st->iter)) return -1;
        bool hf = cJSON_HasObjectItem(o, "factor"), hn = cJSON_HasObjectItem(o, "nparts");
        if (hf == hn)
            return te_error(ctx,
                            "step log: step %d (split): needs exactly one of 'factor' and 'nparts'",
                            index);
        st->nparts = hn;
        if (get_int(&p, o, hn ? "nparts" : "factor", 1, INT64_C(1) << 53, &st->value)) return -1;
        break;
    }
    case SCH_STEP_FUSE:
    case SCH_STEP_REORDER: {
        static const char *const f[] = {"kind", "stage", "iters", NULL};
        if (check_fields(&p, o, f) ||
            get_index_array(&p, o, "iters", st->kind == SCH_STEP_FUSE ? 2 : 1, &st->n, &st->iters))
            return -1;
        break;
    }
    case SCH_STEP_ANNOTATE: {
        static const char *const f[] = {"kind", "stage", "iter", "ann", "thread", NULL};
        const char *ann;
        if (check_fields(&p, o, f) || get_index(&p, o, "iter", &st->iter) ||
            get_str(&p, o, "ann", &ann))
            return -1;
        for (int i = 1; i < NANN; i++)
            if (!strcmp(ann, ann_names[i])) st->ann = (sch_annotation)i;
        if (st->ann == SCH_ANN_NONE) {
            return te_error(ctx,
                            "step log: step %d (annotate): unknown annotation '%.64s' (vectorize, "
                            "unroll, parallel, bind)",
                            index, ann);
        }
        bool has_thread = cJSON_HasObjectItem(o, "thread");
        if (st->ann == SCH_ANN_BIND) {
            if (get_str(&p, o, "thread", &st->str)) return -1;
        } else if (has_thread) {
            return te_error(ctx, "step log: step %d (annotate): 'thread' belongs to bind only",
                            index);
        }
        break;
    }
    case SCH_STEP_PRAGMA: {
        static const char *const f[] = {"kind", "stage", "iter", "name", "value", NULL};
        if (check_fields(&p, o, f) || get_index(&p, o, "iter", &st->iter) ||
            get_str(&p, o, "name", &st->str) ||
            get_int(&p, o, "value", -(INT64_C(1) << 53), INT64_C(1) << 53, &st->value))
            return -1;
        break;
    }
    case SCH_STEP_TENSORIZE: {
        static const char *const f[] = {"kind", "stage", "iter", "intrin", NULL};
        if (check_fields(&p, o, f) || get_index(&p, o, "iter", &st->iter) ||
            get_str(&p, o, "intrin", &st->str))
            return -1;
        break;
    }
    case SCH_STEP_COMPUTE_AT: {
        static const char *const f[] = {"kind", "stage", "target_stage", "iter", NULL};
        if (check_fields(&p, o, f) || get_index(&p, o, "target_stage", &st->target_stage) ||
            get_index(&p, o, "iter", &st->iter))
            return -1;
        break;
    }
    case SCH_STEP_COMPUTE_INLINE:
    case SCH_STEP_COMPUTE_ROOT: {
        static const char *const f[] = {"kind", "stage", NULL};
        if (check_fields(&p, o, f)) return -1;
        break;
    }
    case SCH_STEP_SWIZZLE: {
        static const char *const f[] = {"kind", "stage", "transposed", NULL};
        if (check_fields(&p, o, f) ||
            (cJSON_HasObjectItem(o, "transposed") &&
             get_int(&p, o, "transposed", 0, 1, &st->value)))
            return -1;
        break;
    }
    case SCH_STEP_DOUBLE_BUFFER: {
        static const char *const f[] = {"kind", "stage", "buffers", NULL};
        if (check_fields(&p, o, f) ||
            (cJSON_HasObjectItem(o, "buffers") &&
             get_int(&p, o, "buffers", 2, SCH_MAX_BUFFERS, &st->value)))
            return -1;
        if (st->value == 2) st->value = 0; /* one text per program */
        break;
    }
    case SCH_STEP_CACHE_READ: {
        static const char *const f[] = {"kind", "stage", "scope", "readers", NULL};
        if (check_fields(&p, o, f) || get_str(&p, o, "scope", &st->str) ||
            get_index_array(&p, o, "readers", 1, &st->n, &st->stages))
            return -1;
        break;
    }
    case SCH_STEP_CACHE_WRITE: {
        static const char *const f[] = {"kind", "stage", "scope", NULL};
        if (check_fields(&p, o, f) || get_str(&p, o, "scope", &st->str)) return -1;
        break;
    }
    case SCH_STEP_RFACTOR: {
        static const char *const f[] = {"kind", "stage", "iter", "factor_axis", NULL};
        if (check_fields(&p, o, f) || get_index(&p, o, "iter", &st->iter) ||
            get_int(&p, o, "factor_axis", 0, INT32_MAX, &v))
            return -1;
        st->value = v;
        break;
    }
    case SCH_STEP_STORAGE_ALIGN: {
        static const char *const f[] = {"kind", "stage", "iter", "factor", "offset", NULL};
        if (check_fields(&p, o, f) || get_index(&p, o, "iter", &st->iter) ||
            get_int(&p, o, "factor", 1, INT64_C(1) << 53, &st->value) ||
            get_int(&p, o, "offset", 0, INT64_C(1) << 53, &st->value2))
            return -1;
        break;
    }
    case SCH_STEP_PACK: {
        static const char *const f[] = {"kind", "stage", "iter", "factor", NULL};
        if (check_fields(&p, o, f) || get_index(&p, o, "iter", &st->iter) ||
            get_int(&p, o, "factor", 1, INT64_C(1) << 53, &st->value))
            return -1;
        break;
    }
    default: return te_error(ctx, "step log: step %d: unknown step kind", index);
    }
    return 0;
}

static int steps_from_cjson(te_ctx *ctx, const cJSON *arr, int *nsteps, sch_step **steps) {
    if (!cJSON_IsArray(arr)) return te_error(ctx, "step log: expected a JSON array of steps");
    int n = cJSON_GetArraySize(arr);
    sch_step *out = te_alloc(ctx, sizeof *out * (size_t)(n ? n : 1));
    if (!out) return -1;
    int i = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, arr) {
        if (parse_step(ctx, i, o, &out[i])) return -1;
        i++;
    }
    *nsteps = n;
    *steps = out;
    return 0;
}

int tdb_steps_from_json(te_ctx *ctx, const char *json, int *nsteps, sch_step **steps) {
    if (!ctx || !nsteps || !steps) return -1;
    if (!json) return te_error(ctx, "step log: no text (NULL)");
    /* The parse end, not cJSON_GetErrorPtr (a global shared by threads). */
    const char *at = NULL;
    cJSON *arr = cJSON_ParseWithOpts(json, &at, false);
    if (!arr) {
        long off = at && at >= json ? (long)(at - json) : -1;
        return te_error(ctx, "step log: not valid JSON (error near byte %ld)", off);
    }
    int rc = steps_from_cjson(ctx, arr, nsteps, steps);
    cJSON_Delete(arr);
    return rc;
}
