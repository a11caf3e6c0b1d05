/*
 * tools/tunedb/cmd_admin.c — the subcommands that move or change records:
 * export, import, prune, and stats.
 */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tunedb/tunedb.h"

enum { O_DB = 256, O_KEEP, O_ERRORS };

static const struct option admin_opts[] = {{"db", required_argument, NULL, O_DB},
                                           {"keep", required_argument, NULL, O_KEEP},
                                           {"errors", required_argument, NULL, O_ERRORS},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};

/* -1 to go on, else the exit code. keep and errors may be NULL (no
 * --keep, no --errors). */
static int parse(tunedb_globals *g, int argc, char **argv, const char *help, long long *keep,
                 const char **errors, int *pos) {
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+h", admin_opts, NULL)) != -1) {
        switch (c) {
        case O_DB: g->db_path = optarg; break;
        case O_KEEP:
            if (!keep) goto bad;
            if (!tunedb_parse_int(argv[0], "--keep", optarg, 0, INT_MAX, keep)) return TDB_EXIT_USAGE;
            break;
        case O_ERRORS:
            if (!errors) goto bad;
            *errors = optarg;
            break;
        case 'h': fputs(help, stdout); return TDB_EXIT_OK;
        default: goto bad;
        }
    }
    *pos = optind;
    return -1;
bad:
    tunedb_error(argv[0], "unknown or incomplete option '%s' (see tunedb %s --help)",
                 argv[optind - 1], argv[0]);
    return TDB_EXIT_USAGE;
}

static const char *one_file(int argc, char **argv, int pos) {
    if (pos != argc - 1) {
        tunedb_error(argv[0], "needs exactly one file name (see tunedb %s --help)", argv[0]);
        return NULL;
    }
    return argv[pos];
}

static const char export_help[] =
    "usage: tunedb --db FILE export OUT.jsonl\n"
    "\n"
    "Writes every record as one JSON object per line, with its workload (key, op,\n"
    "params, flops) and target (key, props) in full, so the file imports into any\n"
    "database. OUT '-' is standard output.\n";

int tunedb_cmd_export(tunedb_globals *g, int argc, char **argv) {
    int pos, rc = parse(g, argc, argv, export_help, NULL, NULL, &pos);
    if (rc >= 0) return rc;
    const char *path = one_file(argc, argv, pos);
    if (!path) return TDB_EXIT_USAGE;
    tdb_db *db = tunedb_open(g, true);
    if (!db) return TDB_EXIT_FAIL;
    bool to_stdout = !strcmp(path, "-");
    FILE *f = to_stdout ? stdout : fopen(path, "w");
    if (!f) {
        tunedb_error("export", "cannot write '%s': %s", path, strerror(errno));
        tdb_close(db);
        return TDB_EXIT_FAIL;
    }
    int64_t n = tdb_export_jsonl(db, f);
    rc = TDB_EXIT_OK;
    if (n < 0) {
        tunedb_error("export", "%s", tdb_errmsg(db));
        rc = TDB_EXIT_FAIL;
    }
    if (!to_stdout && fclose(f) != 0) {
        tunedb_error("export", "cannot write '%s': %s", path, strerror(errno));
        rc = TDB_EXIT_FAIL;
    }
    if (rc == TDB_EXIT_OK && !to_stdout)
        printf("exported %lld records to %s\n", (long long)n, path);
    tdb_close(db);
    return rc;
}

static const char import_help[] =
    "usage: tunedb --db FILE import [--errors ERRS] IN.jsonl\n"
    "\n"
    "Reads records written by export into the database in one transaction. Records\n"
    "already present are skipped. Every line is checked (JSON, fields, the step log,\n"
    "and - for workloads the ops registry knows - that the log replays on the\n"
    "workload), and so are the values: error codes 0..8, latencies from 1e-9 to\n"
    "3600 s at which the workload runs below 1,000,000 GFLOP/s, unroll limits\n"
    "(auto_unroll_max_step) 0..4096. If any line is bad, nothing is imported; the\n"
    "count of bad lines is printed and the first 10 are listed by number. IN '-' is\n"
    "standard input.\n"
    "\n"
    "  --errors ERRS  write every bad line to ERRS as \"line N: reason\" (the file\n"
    "                 is empty when every line is good)\n";

int tunedb_cmd_import(tunedb_globals *g, int argc, char **argv) {
    const char *errors_path = NULL;
    int pos, rc = parse(g, argc, argv, import_help, NULL, &errors_path, &pos);
    if (rc >= 0) return rc;
    const char *path = one_file(argc, argv, pos);
    if (!path) return TDB_EXIT_USAGE;
    bool from_stdin = !strcmp(path, "-");
    FILE *f = from_stdin ? stdin : fopen(path, "r");
    if (!f) {
        tunedb_error("import", "cannot read '%s': %s", path, strerror(errno));
        return TDB_EXIT_FAIL;
    }
    tdb_import_options io = {0};
    if (errors_path && !(io.errors = fopen(errors_path, "w"))) {
        tunedb_error("import", "cannot write '%s': %s", errors_path, strerror(errno));
        if (!from_stdin) fclose(f);
        return TDB_EXIT_FAIL;
    }
    tdb_db *db = tunedb_open(g, false);
    rc = TDB_EXIT_FAIL;
    if (db) {
        int64_t imported, skipped;
        if (tdb_import_jsonl_with(db, f, &io, &imported, &skipped)) {
            tunedb_error("import", "%s: %s", path, tdb_errmsg(db));
            if (io.bad_lines && errors_path)
                tunedb_error("import", "every bad line (%d) is listed in %s", io.bad_lines,
                             errors_path);
            else if (io.bad_lines > 10)
                tunedb_error("import", "%d bad lines in all; --errors FILE lists every one",
                             io.bad_lines);
        } else {
            printf("imported %lld records, skipped %lld already present\n", (long long)imported,
                   (long long)skipped);
            rc = TDB_EXIT_OK;
        }
        tdb_close(db);
    }
    if (io.errors && fclose(io.errors) != 0 && rc == TDB_EXIT_OK) {
        tunedb_error("import", "cannot write '%s': %s", errors_path, strerror(errno));
        rc = TDB_EXIT_FAIL;
    }
    if (!from_stdin) fclose(f);
    return rc;
}

static const char prune_help[] =
    "usage: tunedb --db FILE prune --keep K\n"
    "\n"
    "Keeps the K best valid records of every (workload, target) and deletes all other\n"
    "records, failed ones included. K may be 0.\n";

int tunedb_cmd_prune(tunedb_globals *g, int argc, char **argv) {
    long long keep = -1;
    int pos, rc = parse(g, argc, argv, prune_help, &keep, NULL, &pos);
    if (rc >= 0) return rc;
    if (pos < argc) {
        tunedb_error("prune", "unexpected argument '%s'", argv[pos]);
        return TDB_EXIT_USAGE;
    }
    if (keep < 0) {
        tunedb_error("prune", "how many to keep? give --keep K");
        return TDB_EXIT_USAGE;
    }
    tdb_db *db = tunedb_open(g, false);
    if (!db) return TDB_EXIT_FAIL;
    int64_t n = tdb_prune(db, keep > 1000000000 ? 1000000000 : (int)keep);
    if (n < 0)
        tunedb_error("prune", "%s", tdb_errmsg(db));
    else
        printf("deleted %lld records\n", (long long)n);
    tdb_close(db);
    return n < 0 ? TDB_EXIT_FAIL : TDB_EXIT_OK;
}

static const char stats_help[] =
    "usage: tunedb --db FILE stats\n"
    "\n"
    "Schema version, counts of workloads, targets, records (and failed ones), stored\n"
    "cost models, the file size, and an integrity check (SQLite's quick_check). Each\n"
    "stored cost model is listed with its target, format, size and whether this Loom\n"
    "can use it (a model saved by another version, or trained on other features, is\n"
    "not loaded by the warm start; the next tuning run replaces it).\n";

/* One line per stored cost model: whether the warm start could load it. */
static void print_cost_models(tdb_db *db) {
    tdb_cost_model_entry *e = NULL;
    int n = tdb_list_cost_models(db, &e);
    for (int i = 0; i < n; i++) {
        char why[320] = "";
        void *blob = NULL;
        size_t len = 0;
        if (strcmp(e[i].format, CM_BLOB_FORMAT)) {
            snprintf(why, sizeof why, "not usable: this Loom reads format '%s'", CM_BLOB_FORMAT);
        } else if (tdb_get_cost_model(db, e[i].target, &blob, &len, NULL) != 1) {
            snprintf(why, sizeof why, "not readable: %s", tdb_errmsg(db));
        } else {
            char err[256];
            cm_model *m = cm_model_load_buffer(blob, len, NULL, err, sizeof err);
            if (!m)
                snprintf(why, sizeof why, "not usable: %s", cm_load_error_reason(err));
            else if (cm_model_is_trained(m))
                snprintf(why, sizeof why, "usable, %d boosting rounds, features at %d-byte vectors",
                         cm_model_num_rounds(m), cm_model_vector_bytes(m));
            else
                snprintf(why, sizeof why,
                         "usable, untrained (predicts at random), features at %d-byte vectors",
                         cm_model_vector_bytes(m));
            cm_model_free(m);
        }
        free(blob);
        printf("  %s: %s, %lld bytes: %s\n", e[i].target, e[i].format, (long long)e[i].bytes, why);
    }
    if (n < 0) printf("  (cannot list them: %s)\n", tdb_errmsg(db));
    tdb_cost_models_free(e, n > 0 ? n : 0);
}

int tunedb_cmd_stats(tunedb_globals *g, int argc, char **argv) {
    int pos, rc = parse(g, argc, argv, stats_help, NULL, NULL, &pos);
    if (rc >= 0) return rc;
    if (pos < argc) {
        tunedb_error("stats", "unexpected argument '%s'", argv[pos]);
        return TDB_EXIT_USAGE;
    }
    tdb_db *db = tunedb_open(g, true);
    if (!db) return TDB_EXIT_FAIL;
    tdb_stats s;
    rc = TDB_EXIT_OK;
    if (tdb_get_stats(db, &s)) {
        tunedb_error("stats", "%s", tdb_errmsg(db));
        rc = TDB_EXIT_FAIL;
    } else {
        printf("file            %s\n"
               "schema version  %d\n"
               "workloads       %lld\n"
               "targets         %lld\n"
               "records         %lld (%lld failed)\n"
               "cost models     %lld\n",
               g->db_path, s.schema_version, (long long)s.workloads, (long long)s.targets,
               (long long)s.records, (long long)s.error_records, (long long)s.cost_models);
        print_cost_models(db);
        printf("size            %lld bytes\n", (long long)s.file_bytes);
        if (tdb_check(db)) {
            printf("integrity       DAMAGED\n");
            tunedb_error("stats", "%s", tdb_errmsg(db));
            rc = TDB_EXIT_FAIL;
        } else {
            printf("integrity       ok\n");
        }
    }
    tdb_close(db);
    return rc;
}
