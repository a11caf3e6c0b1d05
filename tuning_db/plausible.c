/*
 * tuning_db/plausible.c — the bounds an imported record's latencies and
 * step log must keep (loom/tuning_db.h, above tdb_import_jsonl; jsonl.c
 * checks the error code as it reads it): values the record syntax
 * allows but no measurement produces. A record committed by the tuner is
 * not checked here: it was measured on this machine; an imported one may
 * come from anywhere, and one impossible latency ranks best until a
 * re-timing.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/ops.h"
#include "tuning_db/tdb_internal.h"

/* The FLOP count a latency is judged by: the stored one, or the one the
 * workload's builder (ops registry or a registered builder) gives when
 * that is larger (a line cannot dodge the bound by declaring flops 0 for
 * a key Loom builds). 0: unknown. The last key built is cached. */
static double judged_flops(tdb_db *db, const char *key) {
    if (db->judged_key && !strcmp(db->judged_key, key)) return db->judged_flops;
    double flops = 0;
    sqlite3_stmt *st = tdb__prepare(db, "SELECT flops FROM workloads WHERE key = ?");
    if (st) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) flops = sqlite3_column_double(st, 0);
        sqlite3_finalize(st);
    }
    te_ctx *ctx = te_ctx_new();
    ops_built w;
    bool built = ctx && ops_build_key(ctx, key, &w) == 0;
    if (built && w.flops > flops) flops = w.flops;
    te_ctx_free(ctx);
    flops = isfinite(flops) && flops > 0 ? flops : 0;
    /* Only a built count is cached: a stored one may come with a later
     * line of the same import. */
    if (built) {
        free(db->judged_key);
        db->judged_key = strdup(key);
        db->judged_flops = flops;
    }
    return flops;
}

static int check_latencies(tdb_db *db, const tdb_record_in *rec) {
    double flops = rec->nlatencies ? judged_flops(db, rec->workload_key) : 0;
    for (int i = 0; i < rec->nlatencies; i++) {
        double v = rec->latencies[i];
        if (!isfinite(v) || v < TDB_IMPORT_MIN_LATENCY_S || v > TDB_IMPORT_MAX_LATENCY_S)
            return tdb__err(db, "latency %d (%g s) must be a finite number of seconds in [%g, %g]",
                            i, v, TDB_IMPORT_MIN_LATENCY_S, TDB_IMPORT_MAX_LATENCY_S);
        double gflops = flops / v / 1e9;
        if (gflops > TDB_IMPORT_MAX_GFLOPS)
            return tdb__err(db,
                            "latency %d (%g s) would run workload '%s' (%.17g FLOP) at %.3g "
                            "GFLOP/s, above %.0f GFLOP/s (%g PFLOP/s), faster than any device",
                            i, v, rec->workload_key, flops, gflops, TDB_IMPORT_MAX_GFLOPS,
                            TDB_IMPORT_MAX_GFLOPS / 1e6);
    }
    return 0;
}

static int check_pragma(tdb_db *db, int index, const sch_step *st) {
    if (!strcmp(st->str, "auto_unroll_max_step")) {
        if (st->value < 0 || st->value > TDB_IMPORT_MAX_UNROLL_STEPS)
            return tdb__err(db,
                            "step %d (pragma): auto_unroll_max_step %lld is out of range [0, %d] "
                            "(the unroll pass copies at most %d statements)",
                            index, (long long)st->value, TDB_IMPORT_MAX_UNROLL_STEPS,
                            TDB_IMPORT_MAX_UNROLL_STEPS);
    } else if (!strcmp(st->str, "unroll_explicit")) {
        if (st->value != 0 && st->value != 1)
            return tdb__err(db, "step %d (pragma): unroll_explicit %lld must be 0 or 1", index,
                            (long long)st->value);
    } else {
        return tdb__err(db,
                        "step %d (pragma): unknown pragma '%.64s' (known: auto_unroll_max_step, "
                        "unroll_explicit)",
                        index, st->str);
    }
    return 0;
}

/* A log that does not parse passes: tdb__insert_record reports it. */
static int check_steps(tdb_db *db, const char *steps_json) {
    te_ctx *ctx = te_ctx_new();
    if (!ctx) return tdb__err(db, "out of memory");
    int n = 0, rc = 0;
    sch_step *steps = NULL;
    if (!tdb_steps_from_json(ctx, steps_json, &n, &steps))
        for (int i = 0; i < n && !rc; i++)
            if (steps[i].kind == SCH_STEP_PRAGMA) rc = check_pragma(db, i, &steps[i]);
    te_ctx_free(ctx);
    return rc;
}

int tdb__check_import(tdb_db *db, const tdb_record_in *rec) {
    if (check_latencies(db, rec)) return -1;
    return rec->steps_json ? check_steps(db, rec->steps_json) : 0;
}
