/*
 * tools/tunedb/main.c — `tunedb --db FILE COMMAND [options]`: inspect and
 * maintain a Loom tuning database. Global options, the dispatch to
 * subcommands, and the helpers they share.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tunedb/tunedb.h"

static const struct {
    const char *name;
    tunedb_cmd_fn fn;
    const char *summary;
} commands[] = {
    {"list", tunedb_cmd_list, "workloads with record counts, best latency and GFLOP/s per target"},
    {"best", tunedb_cmd_best, "the best record(s) of a workload on a target, as JSON"},
    {"show", tunedb_cmd_show, "one record by id, as JSON"},
    {"history", tunedb_cmd_history, "best-so-far latency against trial number (text or CSV)"},
    {"export", tunedb_cmd_export, "write every record to a JSON-lines file"},
    {"import", tunedb_cmd_import, "read records from a JSON-lines file (all or nothing)"},
    {"prune", tunedb_cmd_prune, "keep the K best records per workload and target"},
    {"stats", tunedb_cmd_stats, "counts, schema version, file size"},
    {"apply", tunedb_cmd_apply, "build the best schedule of a workload and check it runs right"},
};
#define NCOMMANDS ((int)(sizeof commands / sizeof *commands))

static void usage(FILE *f) {
    fprintf(f, "usage: tunedb --db FILE COMMAND [options]\n"
               "\n"
               "Inspects and maintains a Loom tuning database (SQLite). FILE may also come from\n"
               "$LOOM_TUNEDB. Targets are keys such as \"llvm -mcpu=znver5\"; the default is the\n"
               "host CPU. CPU records are kept per thread count: \"llvm -mcpu=znver5 -num-cores 4\"\n"
               "holds programs timed on 4 threads (1 thread: no -num-cores); --threads N picks\n"
               "that count's key, and the default is all cores, as autotune and loomrun use.\n"
               "Workloads are named by --workload KEY (the canonical key) or by\n"
               "--op OP --shape P=V,... (as autotune takes them; an operator of a plugin,\n"
               "loaded with --plugin, names the key \"OP(P=V,...)\" as written).\n"
               "\n"
               "commands:\n");
    for (int i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n"
               "options:\n"
               "  --db FILE   the database file\n"
               "  --plugin LIB  load a shared library of your own operators (repeatable; its\n"
               "              entry point int loom_register_ops(void) registers their\n"
               "              builders): apply and the checks of stored logs then rebuild\n"
               "              their workloads\n"
               "  -h, --help  this text; `tunedb COMMAND --help` for a command's options\n"
               "  --version   the Loom version and schema version\n"
               "\n"
               "exit status: 0 done, 1 the command failed, 2 usage error\n");
}

void tunedb_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tunedb%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

bool tunedb_parse_int(const char *cmd, const char *opt, const char *text, long long lo,
                      long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    /* hi: the callee's own limit (an int's), so that nothing wraps:
     * --keep 4294967296 was read as 0 and pruned every record. */
    if (errno || end == text || *end || v < lo || v > hi) {
        tunedb_error(cmd, "%s '%s' must be an integer from %lld to %lld", opt, text, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

tdb_db *tunedb_open(const tunedb_globals *g, bool readonly) {
    if (!g->db_path) {
        tunedb_error(NULL, "no database: give --db FILE (or set LOOM_TUNEDB)");
        return NULL;
    }
    char *err = NULL;
    tdb_open_options o = {.readonly = readonly};
    tdb_db *db = tdb_open(g->db_path, &o, &err);
    if (!db) {
        tunedb_error(NULL, "%s", err ? err : "cannot open the database");
        free(err);
    }
    return db;
}

char *tunedb_workload_key(const char *key, const char *op, const char *shape) {
    if (key && (op || shape)) {
        tunedb_error(NULL, "give either --workload KEY or --op OP --shape S, not both");
        return NULL;
    }
    if (key) {
        /* A key the registry can parse is looked up in its canonical form
         * (parameter order, defaults), as the database stores it; a user's
         * own workload key is taken as written. */
        te_ctx *ctx = te_ctx_new();
        ops_workload *w = ops_from_key(ctx, key);
        char *r = strdup(w ? w->key : key);
        te_ctx_free(ctx);
        return r;
    }
    if (!op) {
        tunedb_error(NULL, "which workload? give --workload KEY or --op OP --shape S");
        return NULL;
    }
    te_ctx *ctx = te_ctx_new();
    const char *k = tune_workload_key(ctx, op, shape);
    char *r = k ? strdup(k) : NULL;
    if (!k) tunedb_error(NULL, "%s", te_ctx_errmsg(ctx));
    te_ctx_free(ctx);
    return r;
}

char *tunedb_target(const char *cmd, const char *target, int threads) {
    if (target && threads > 0 && tdb_key_machine_len(target) < strlen(target)) {
        tunedb_error(cmd, "--target '%s' names its thread count already; --threads %d does not "
                          "apply",
                     target, threads);
        return NULL;
    }
    char *machine = target ? strdup(target) : tdb_host_target();
    /* A key given as stored is taken as it is; the host's, like autotune's
     * and loomrun's, is the pool's thread count unless --threads says. */
    char *key = machine && (!target || threads > 0) ? tune_threads_key(machine, threads) : machine;
    if (key != machine) free(machine);
    if (!key) tunedb_error(cmd, "out of memory");
    return key;
}

int main(int argc, char **argv) {
    tunedb_globals g = {.db_path = getenv("LOOM_TUNEDB")};
    static const struct option opts[] = {{"db", required_argument, NULL, 'd'},
                                         {"plugin", required_argument, NULL, 'p'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"version", no_argument, NULL, 'V'},
                                         {NULL, 0, NULL, 0}};
    int c;
    opterr = 0;
    /* "+": stop at the command name; its options are its own. */
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': g.db_path = optarg; break;
        case 'p': {
            char *err = NULL;
            if (tune_load_plugin(optarg, &err)) {
                tunedb_error(NULL, "%s", err ? err : "out of memory");
                free(err);
                return TDB_EXIT_USAGE;
            }
            break;
        }
        case 'h': usage(stdout); return TDB_EXIT_OK;
        case 'V':
            printf("tunedb (Loom %s), tuning database schema version %d\n", LOOM_VERSION_STRING,
                   TDB_SCHEMA_VERSION);
            return TDB_EXIT_OK;
        default:
            tunedb_error(NULL, "unknown option '%s' (see tunedb --help)", argv[optind - 1]);
            return TDB_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return TDB_EXIT_USAGE;
    }
    const char *name = argv[optind];
    for (int i = 0; i < NCOMMANDS; i++) {
        if (!strcmp(name, commands[i].name)) {
            int sub_argc = argc - optind;
            char **sub_argv = argv + optind;
            optind = 0; /* GNU getopt: re-initialise for the command's options */
            return commands[i].fn(&g, sub_argc, sub_argv);
        }
    }
    tunedb_error(NULL,
                 "unknown command '%s' (commands: list, best, show, history, export, "
                 "import, prune, stats, apply)",
                 name);
    return TDB_EXIT_USAGE;
}
