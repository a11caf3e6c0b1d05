/*
 * tests/test_tuning_db_util.h — helpers for the tuning-database tests
 * (static: each test program includes it once): a fresh temporary
 * directory per test, and schedule logs of an ops workload to store.
 */
#ifndef LOOM_TEST_TUNING_DB_UTIL_H
#define LOOM_TEST_TUNING_DB_UTIL_H

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "tuning_db/tdb_internal.h"

/* Runs `tunedb ARGS` (ARGS from fmt; LOOM_TUNEDB unset so that only
 * --db names the file), output in out; its exit status (tu_run). */
static inline int tdbt_tunedb(char *out, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static inline int tdbt_tunedb(char *out, size_t size, const char *fmt, ...) {
    char args[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return tu_run(out, size, "env -u LOOM_TUNEDB %s/tunedb %s", tu_bindir(), args);
}

/* A new empty directory under /tmp. */
static inline void tdbt_tmpdir(char *dir, size_t size) {
    snprintf(dir, size, "/tmp/loom_tdb_XXXXXX");
    assert_non_null(mkdtemp(dir));
}

static inline void tdbt_path(char *out, size_t size, const char *dir, const char *name) {
    snprintf(out, size, "%s/%s", dir, name);
}

/* Removes dir and every file in it. */
static inline void tdbt_rmdir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

/* The log (JSON, malloc'd) of a small schedule of the workload `key`:
 * axis 0 split by f0, axis 1 split by f1 with its inner part vectorized. */
static inline char *tdbt_log(const char *key, int64_t f0, int64_t f1) {
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_from_key(ctx, key);
    assert_non_null(w);
    te_tensor *out = w->outs[0];
    sch_schedule *s = sch_create(ctx, w->nouts, w->outs);
    assert_non_null(s);
    te_expr *o0, *i0, *o1, *i1;
    assert_int_equal(sch_split(s, out, sch_axis(out, 0), f0, &o0, &i0), 0);
    assert_int_equal(sch_split(s, out, sch_axis(out, 1), f1, &o1, &i1), 0);
    assert_int_equal(sch_reorder(s, out, 4, (te_expr *[]){o0, o1, i0, i1}), 0);
    assert_int_equal(sch_vectorize(s, out, i1), 0);
    char *json = tdb_schedule_to_json(s);
    assert_non_null(json);
    te_ctx_free(ctx);
    return json;
}

/* A file of schema `version` as that Loom wrote it: workload 1 (`key`, a
 * matmul of 65536 FLOP) and target 1 (`target`), then `rows`, SQL that
 * inserts records of workload 1 and target 1 in that version's columns. */
static inline void tdbt_old_file(const char *path, int version, const char *key,
                                 const char *target, const char *rows) {
    char *err = NULL;
    assert_int_equal(tdb__create_at_version(path, version, &err), 0);
    size_t cap = strlen(key) + strlen(target) + strlen(rows) + 512;
    char *sql = malloc(cap);
    assert_non_null(sql);
    snprintf(sql, cap,
             "INSERT INTO workloads(id, key, op, params, hash, flops, created) "
             "VALUES(1, '%s', 'matmul', '{}', 'x', 65536, 0);"
             "INSERT INTO targets(id, key, props, created) VALUES(1, '%s', '{}', 0);%s",
             key, target, rows);
    if (tdb__exec_file(path, sql, &err)) fprintf(stderr, "%s\n", err);
    assert_null(err);
    free(sql);
}

/* The canonical key of (op, shape). malloc'd. */
static inline char *tdbt_key(const char *op, const char *shape) {
    te_ctx *ctx = te_ctx_new();
    const char *k = ops_canonical_key(ctx, op, shape);
    if (!k) fprintf(stderr, "%s\n", te_ctx_errmsg(ctx));
    assert_non_null(k);
    char *r = strdup(k);
    te_ctx_free(ctx);
    return r;
}

#endif
