/*
 * tools/tunedb/cmd_query.c — the read-only subcommands: list, best, show,
 * history, and apply (build the best schedule and check it).
 */
#include <limits.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tools/tunedb/tunedb.h"

/* Options every query takes. */
typedef struct {
    const char *workload, *op, *shape, *target;
    bool csv;
    long long k, threads; /* threads: 0 when not given */
} qopts;

enum { O_DB = 256, O_WORKLOAD, O_OP, O_SHAPE, O_TARGET, O_THREADS, O_CSV, O_K };

static const struct option query_opts[] = {{"db", required_argument, NULL, O_DB},
                                           {"workload", required_argument, NULL, O_WORKLOAD},
                                           {"op", required_argument, NULL, O_OP},
                                           {"shape", required_argument, NULL, O_SHAPE},
                                           {"target", required_argument, NULL, O_TARGET},
                                           {"threads", required_argument, NULL, O_THREADS},
                                           {"csv", no_argument, NULL, O_CSV},
                                           {"k", required_argument, NULL, O_K},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};

/* Parses the options; returns -1 to go on, else the exit code (help
 * printed or a usage error). *pos receives the first operand index. */
static int parse(tunedb_globals *g, int argc, char **argv, const char *help, qopts *q, int *pos) {
    memset(q, 0, sizeof *q);
    q->k = 1;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+hk:", query_opts, NULL)) != -1) {
        switch (c) {
        case O_DB: g->db_path = optarg; break;
        case O_WORKLOAD: q->workload = optarg; break;
        case O_OP: q->op = optarg; break;
        case O_SHAPE: q->shape = optarg; break;
        case O_TARGET: q->target = optarg; break;
        case O_THREADS:
            if (!tunedb_parse_int(argv[0], "--threads", optarg, 1, 1024, &q->threads))
                return TDB_EXIT_USAGE;
            break;
        case O_CSV: q->csv = true; break;
        case 'k':
        case O_K:
            if (!tunedb_parse_int(argv[0], "-k", optarg, 1, INT_MAX, &q->k)) return TDB_EXIT_USAGE;
            break;
        case 'h': fputs(help, stdout); return TDB_EXIT_OK;
        default:
            tunedb_error(argv[0], "unknown or incomplete option '%s' (see tunedb %s --help)",
                         argv[optind - 1], argv[0]);
            return TDB_EXIT_USAGE;
        }
    }
    *pos = optind;
    return -1;
}

static bool no_operands(const char *cmd, int argc, char **argv, int pos) {
    if (pos < argc) {
        tunedb_error(cmd, "unexpected argument '%s'", argv[pos]);
        return false;
    }
    return true;
}

/* The start of every per-workload command (best, history, apply):
 * options, no operands, the canonical key and the target. Returns -1 to
 * go on with *key and *target set (malloc'd: the caller frees both), else
 * the exit code. */
static int workload_query(tunedb_globals *g, int argc, char **argv, const char *cmd,
                          const char *help, qopts *q, char **key, char **target) {
    int pos, rc = parse(g, argc, argv, help, q, &pos);
    if (rc >= 0) return rc;
    if (!no_operands(cmd, argc, argv, pos)) return TDB_EXIT_USAGE;
    if (!(*key = tunedb_workload_key(q->workload, q->op, q->shape))) return TDB_EXIT_USAGE;
    if (!(*target = tunedb_target(cmd, q->target, (int)q->threads))) {
        free(*key);
        return TDB_EXIT_USAGE;
    }
    return -1;
}

static void csv_field(const char *s) {
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s);
    }
    putchar('"');
}

/* ---- list ---- */

static const char list_help[] =
    "usage: tunedb --db FILE list [--target T] [--threads N] [--csv]\n"
    "\n"
    "Every (workload, target) with records: record count, valid (error-free) records,\n"
    "best (lowest median) latency and its GFLOP/s. --target shows one target only (with\n"
    "--threads, that thread count's key); --csv writes\n"
    "workload,op,target,records,valid,best_s,gflops.\n";

int tunedb_cmd_list(tunedb_globals *g, int argc, char **argv) {
    qopts q;
    int pos, rc = parse(g, argc, argv, list_help, &q, &pos);
    if (rc >= 0) return rc;
    if (!no_operands("list", argc, argv, pos)) return TDB_EXIT_USAGE;
    if (q.threads && !q.target) {
        tunedb_error("list", "--threads names a target's thread count: give --target T too");
        return TDB_EXIT_USAGE;
    }
    char *target = q.target ? tunedb_target("list", q.target, (int)q.threads) : NULL;
    if (q.target && !target) return TDB_EXIT_USAGE;
    tdb_db *db = tunedb_open(g, true);
    if (!db) {
        free(target);
        return TDB_EXIT_FAIL;
    }
    tdb_summary *s;
    int n = tdb_list(db, target, &s);
    free(target);
    if (n < 0) {
        tunedb_error("list", "%s", tdb_errmsg(db));
        tdb_close(db);
        return TDB_EXIT_FAIL;
    }
    int kw = 8, tw = 6;
    for (int i = 0; i < n; i++) {
        if ((int)strlen(s[i].workload_key) > kw) kw = (int)strlen(s[i].workload_key);
        if ((int)strlen(s[i].target) > tw) tw = (int)strlen(s[i].target);
    }
    if (q.csv)
        puts("workload,op,target,records,valid,best_s,gflops");
    else
        printf("%-*s  %-*s  %7s  %5s  %12s  %9s\n", kw, "WORKLOAD", tw, "TARGET", "RECORDS",
               "VALID", "BEST(ms)", "GFLOP/s");
    for (int i = 0; i < n; i++) {
        double gf = s[i].flops > 0 && s[i].best > 0 ? s[i].flops / s[i].best * 1e-9 : 0;
        if (q.csv) {
            csv_field(s[i].workload_key);
            putchar(',');
            csv_field(s[i].op);
            putchar(',');
            csv_field(s[i].target);
            printf(",%d,%d,", s[i].nrecords, s[i].nvalid);
            if (!isnan(s[i].best)) printf("%.9g", s[i].best);
            putchar(',');
            if (gf > 0) printf("%.6g", gf);
            putchar('\n');
        } else {
            char best[32] = "-", gfs[32] = "-";
            if (!isnan(s[i].best)) snprintf(best, sizeof best, "%.4f", s[i].best * 1e3);
            if (gf > 0) snprintf(gfs, sizeof gfs, "%.2f", gf);
            printf("%-*s  %-*s  %7d  %5d  %12s  %9s\n", kw, s[i].workload_key, tw, s[i].target,
                   s[i].nrecords, s[i].nvalid, best, gfs);
        }
    }
    if (!q.csv && n == 0)
        printf("(no records%s%s)\n", q.target ? " for target " : "", q.target ? q.target : "");
    tdb_summaries_free(s, n);
    tdb_close(db);
    return TDB_EXIT_OK;
}

/* ---- best / show ---- */

static cJSON *record_json(const tdb_record *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", (double)r->id);
    char *line = tdb_record_to_json(NULL, r);
    cJSON *body = line ? cJSON_Parse(line) : NULL;
    free(line);
    cJSON *it = body ? body->child : NULL;
    while (it) { /* move the export fields after "id" */
        cJSON *next = it->next;
        cJSON_AddItemToObject(o, it->string, cJSON_DetachItemViaPointer(body, it));
        it = next;
    }
    cJSON_Delete(body);
    double gf = tdb_record_gflops(r);
    if (gf > 0)
        cJSON_AddNumberToObject(o, "gflops", gf);
    else
        cJSON_AddNullToObject(o, "gflops");
    return o;
}

static void print_json(cJSON *o) {
    char *text = cJSON_Print(o);
    if (text) puts(text);
    free(text);
}

/* Why best/history found nothing: the targets that do have records. */
static void explain_missing(tdb_db *db, const char *cmd, const char *key, const char *target) {
    tdb_summary *s;
    int n = tdb_list(db, NULL, &s);
    char others[1024] = "";
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(s[i].workload_key, key) || !s[i].nvalid) continue;
        int w = snprintf(others + len, sizeof others - len, "%s'%s'", len ? ", " : "", s[i].target);
        if (w > 0 && (size_t)w < sizeof others - len) len += (size_t)w;
    }
    tunedb_error(cmd, "no valid record of workload '%s' for target '%s'%s%s", key, target,
                 len ? "; records exist for " : "", others);
    if (n > 0) tdb_summaries_free(s, n);
}

static const char best_help[] =
    "usage: tunedb --db FILE best (--workload KEY | --op OP --shape P=V,...) [--target T]\n"
    "       [--threads N] [-k K]\n"
    "\n"
    "The best valid record (lowest median latency) of the workload on the target, as JSON:\n"
    "the record's export form plus its id and GFLOP/s. -k K prints the K best as a JSON\n"
    "array. The target defaults to the host CPU on all its cores (\"llvm -mcpu=NAME\", with\n"
    "\" -num-cores N\" when N > 1; --threads N picks a count). Exit status 1 when\n"
    "there is no valid record.\n";

int tunedb_cmd_best(tunedb_globals *g, int argc, char **argv) {
    qopts q;
    char *key, *target;
    int rc = workload_query(g, argc, argv, "best", best_help, &q, &key, &target);
    if (rc >= 0) return rc;
    tdb_db *db = tunedb_open(g, true);
    rc = TDB_EXIT_FAIL;
    if (db) {
        tdb_record *recs;
        int n = tdb_best(db, key, target, q.k > 100000 ? 100000 : (int)q.k, &recs);
        if (n < 0) {
            tunedb_error("best", "%s", tdb_errmsg(db));
        } else if (n == 0) {
            explain_missing(db, "best", key, target);
        } else {
            if (q.k == 1) {
                cJSON *o = record_json(&recs[0]);
                print_json(o);
                cJSON_Delete(o);
            } else {
                cJSON *arr = cJSON_CreateArray();
                for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, record_json(&recs[i]));
                print_json(arr);
                cJSON_Delete(arr);
            }
            tdb_records_free(recs, n);
            rc = TDB_EXIT_OK;
        }
        tdb_close(db);
    }
    free(key);
    free(target);
    return rc;
}

static const char show_help[] =
    "usage: tunedb --db FILE show ID\n"
    "\n"
    "One record by id, as JSON (its export form plus id and GFLOP/s).\n";

int tunedb_cmd_show(tunedb_globals *g, int argc, char **argv) {
    qopts q;
    int pos, rc = parse(g, argc, argv, show_help, &q, &pos);
    if (rc >= 0) return rc;
    if (pos != argc - 1) {
        tunedb_error("show", "needs exactly one record id (see tunedb show --help)");
        return TDB_EXIT_USAGE;
    }
    long long id;
    if (!tunedb_parse_int("show", "record id", argv[pos], 1, LLONG_MAX, &id)) return TDB_EXIT_USAGE;
    tdb_db *db = tunedb_open(g, true);
    if (!db) return TDB_EXIT_FAIL;
    tdb_record r;
    int got = tdb_get_record(db, id, &r);
    rc = TDB_EXIT_FAIL;
    if (got < 0) {
        tunedb_error("show", "%s", tdb_errmsg(db));
    } else if (got == 0) {
        tunedb_error("show", "no record with id %lld in '%s'", id, g->db_path);
    } else {
        cJSON *o = record_json(&r);
        print_json(o);
        cJSON_Delete(o);
        tdb_record_clear(&r);
        rc = TDB_EXIT_OK;
    }
    tdb_close(db);
    return rc;
}

/* ---- history ---- */

static const char history_help[] =
    "usage: tunedb --db FILE history (--workload KEY | --op OP --shape P=V,...) [--target T] "
    "[--threads N] [--csv]\n"
    "\n"
    "Best-so-far median latency against trial number (records in commit order) of the\n"
    "workload on the target (default: the host CPU, --threads' count or all cores), then\n"
    "the first trial whose GFLOP/s reached 95% of the best (\"95% of best at trial N of\n"
    "T\"). --csv writes trial,record_id,latency_s,best_s,best_gflops (empty fields for\n"
    "failed trials).\n";

int tunedb_cmd_history(tunedb_globals *g, int argc, char **argv) {
    qopts q;
    char *key, *target;
    int rc = workload_query(g, argc, argv, "history", history_help, &q, &key, &target);
    if (rc >= 0) return rc;
    tdb_db *db = tunedb_open(g, true);
    rc = TDB_EXIT_FAIL;
    tdb_history_point *h = NULL;
    int n = db ? tdb_history(db, key, target, &h) : -1;
    if (db && n < 0) tunedb_error("history", "%s", tdb_errmsg(db));
    if (n == 0) explain_missing(db, "history", key, target);
    if (n > 0) {
        double flops = 0;
        tdb_record *best;
        if (tdb_best(db, key, target, 1, &best) == 1) {
            flops = best[0].flops;
            tdb_records_free(best, 1);
        }
        if (q.csv)
            puts("trial,record_id,latency_s,best_s,best_gflops");
        else
            printf("# %s on %s\n%6s  %8s  %12s  %12s  %12s\n", key, target, "TRIAL", "RECORD",
                   "LATENCY(ms)", "BEST(ms)", "BEST GFLOP/s");
        for (int i = 0; i < n; i++) {
            double gf = flops > 0 && h[i].best > 0 ? flops / h[i].best * 1e-9 : 0;
            if (q.csv) {
                printf("%d,%lld,", h[i].trial, (long long)h[i].record_id);
                if (!isnan(h[i].latency)) printf("%.9g", h[i].latency);
                putchar(',');
                if (!isnan(h[i].best)) printf("%.9g", h[i].best);
                putchar(',');
                if (gf > 0) printf("%.6g", gf);
                putchar('\n');
            } else {
                char lat[32] = "error", best[32] = "-", gfs[32] = "-";
                if (!isnan(h[i].latency)) snprintf(lat, sizeof lat, "%.4f", h[i].latency * 1e3);
                if (!isnan(h[i].best)) snprintf(best, sizeof best, "%.4f", h[i].best * 1e3);
                if (gf > 0) snprintf(gfs, sizeof gfs, "%.2f", gf);
                printf("%6d  %8lld  %12s  %12s  %12s\n", h[i].trial, (long long)h[i].record_id, lat,
                       best, gfs);
            }
        }
        int reach = tdb_history_reach(h, n, 0.95);
        if (!q.csv && reach > 0) printf("95%% of best at trial %d of %d\n", reach, n);
        rc = TDB_EXIT_OK;
    }
    free(h);
    tdb_close(db);
    free(key);
    free(target);
    return rc;
}

/* ---- apply ---- */

static const char apply_help[] =
    "usage: tunedb --db FILE apply (--workload KEY | --op OP --shape P=V,...) [--target T]\n"
    "       [--threads N]\n"
    "\n"
    "Does what a program calling tdb_apply_best does: rebuilds the workload from its key,\n"
    "replays the best valid record's step log and builds it for the target (default: the\n"
    "host CPU, --threads' count or all cores), or the operator's default schedule when\n"
    "there is no valid record (it says so); then runs the module once on random inputs\n"
    "and checks the result against the operator's naive reference. The workload of a\n"
    "plugin's operator (tunedb --plugin) falls back to its plain schedule and is checked\n"
    "against that plain schedule's result. Exit status 1 when nothing builds or the check\n"
    "fails.\n";

/* Fills a host tensor: uniform in [-1, 1) from *st (float types), zeros
 * otherwise; or, poison, NaN. */
static void fill(DLTensor *t, uint64_t *st, bool poison) {
    int64_t n = rt_tensor_numel(t);
    bool f32 = t->dtype.code == kDLFloat && t->dtype.bits == 32;
    bool f64 = t->dtype.code == kDLFloat && t->dtype.bits == 64;
    if (!f32 && !f64) {
        memset(t->data, 0, rt_tensor_nbytes(t));
        return;
    }
    for (int64_t k = 0; k < n; k++) {
        *st ^= *st << 13, *st ^= *st >> 7, *st ^= *st << 17;
        double v = poison ? NAN : (double)(*st >> 11) * 0x1p-52 - 1.0;
        if (f32) ((float *)t->data)[k] = (float)v;
        else ((double *)t->data)[k] = v;
    }
}

static double elem(const DLTensor *t, int64_t k) {
    return t->dtype.bits == 32 ? ((const float *)t->data)[k] : ((const double *)t->data)[k];
}

/* A registered builder's workload has no reference of its own: m runs on
 * random inputs (outputs poisoned with NaN) beside the plain schedule of
 * the same computation (sch_create: the loops as declared), and every
 * output element must agree within 1e-4 relative plus 1e-5 of the
 * output's largest magnitude (float32 sums in another order). The count
 * of elements that differ, or -1 with the reason in ctx. */
static int64_t check_against_plain(te_ctx *ctx, const tdb_apply_info *info, rt_module *m) {
    int n = info->nargs, nin = n - info->nouts;
    if (n > 64) return te_error(ctx, "more than 64 arguments");
    sch_schedule *s = sch_create(ctx, info->nouts, info->args + nin);
    rt_module *plain = s ? cg_build(s, n, info->args, "llvm", NULL) : NULL;
    DLTensor *a[64] = {0}, *b[64] = {0};
    int64_t bad = plain ? 0 : -1;
    uint64_t st = 12345;
    for (int i = 0; bad == 0 && i < n; i++) {
        te_tensor *t = info->args[i];
        a[i] = rt_tensor_alloc(cg_dl_type(t->dtype), t->ndim, t->shape);
        b[i] = i < nin ? a[i] : rt_tensor_alloc(cg_dl_type(t->dtype), t->ndim, t->shape);
        if (!a[i] || !b[i]) bad = te_error(ctx, "%s", rt_last_error());
        else {
            fill(a[i], &st, i >= nin);
            if (b[i] != a[i]) fill(b[i], &st, true);
        }
    }
    if (bad == 0 && (rt_call(m, "default", n, a) || rt_call(plain, "default", n, b)))
        bad = te_error(ctx, "%s", rt_last_error());
    for (int i = nin; bad >= 0 && i < n; i++) {
        int64_t ne = rt_tensor_numel(b[i]);
        double scale = 0;
        for (int64_t k = 0; k < ne; k++) scale = fmax(scale, fabs(elem(b[i], k)));
        for (int64_t k = 0; k < ne; k++) {
            double want = elem(b[i], k), got = elem(a[i], k);
            bad += !(fabs(got - want) <= 1e-4 * fabs(want) + 1e-5 * scale + 1e-6);
        }
    }
    for (int i = 0; i < n; i++) {
        if (b[i] != a[i]) rt_tensor_free(b[i]);
        rt_tensor_free(a[i]);
    }
    rt_module_free(plain);
    return bad;
}

int tunedb_cmd_apply(tunedb_globals *g, int argc, char **argv) {
    qopts q;
    char *key, *target;
    int rc = workload_query(g, argc, argv, "apply", apply_help, &q, &key, &target);
    if (rc >= 0) return rc;
    tdb_db *db = tunedb_open(g, true);
    rc = TDB_EXIT_FAIL;
    if (db) {
        te_ctx *ctx = te_ctx_new();
        tdb_apply_info info;
        rt_module *m = tdb_apply_best(db, ctx, key, target, &info);
        if (!m) {
            tunedb_error("apply", "%s", tdb_errmsg(db));
        } else {
            printf("%s\n", info.message);
            bool own = info.workload != NULL;
            int64_t bad = own ? ops_check_module(info.workload, m, NULL, 12345)
                              : check_against_plain(ctx, &info, m);
            const char *against = own ? "the reference" : "the plain schedule";
            if (bad == 0) {
                printf("checked against %s: correct\n", against);
                rc = TDB_EXIT_OK;
            } else if (bad < 0) {
                tunedb_error("apply", "running the module failed: %s", te_ctx_errmsg(ctx));
            } else {
                tunedb_error("apply", "%lld output elements differ from %s", (long long)bad,
                             against);
            }
            rt_module_free(m);
        }
        te_ctx_free(ctx);
        tdb_close(db);
    }
    free(key);
    free(target);
    return rc;
}
