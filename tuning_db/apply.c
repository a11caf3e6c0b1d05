/*
 * tuning_db/apply.c — where the database meets the ops library: checking
 * a log against the workload it claims to schedule, adding a workload
 * from its key, and applying the best record (rebuild, replay, build).
 * Workloads are rebuilt from their keys by the ops registry or by a
 * builder the program registered (ops_register_builder, which the
 * tuner's tune_register_builder is): the registry lives in the ops
 * library, below both the tuner and this database.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "loom/codegen.h"
#include "loom/ops.h"
#include "tuning_db/tdb_internal.h"

char *tdb_host_target(void) {
    char *cpu = cg_llvm_host_cpu();
    cg_target t = {.kind = CG_TARGET_LLVM, .cpu = cpu && *cpu ? cpu : (char *)"generic"};
    char *key = cg_target_str(&t);
    free(cpu);
    return key;
}

size_t tdb_key_machine_len(const char *key) {
    const char *t = strstr(key, TDB_NUM_CORES " ");
    return t ? (size_t)(t - key) : strlen(key);
}

char *tdb_cuda_target(int device) {
    rt_cuda_props p;
    if (rt_cuda_get_props(device, &p)) return NULL;
    char arch[32];
    snprintf(arch, sizeof arch, "sm_%d%d", p.cc_major, p.cc_minor);
    cg_target t = {.kind = CG_TARGET_CUDA, .arch = arch, .device = p.name};
    return cg_target_str(&t);
}

int tdb__validate_log(tdb_db *db, const char *workload_key, int nsteps, const sch_step *steps) {
    te_ctx *ctx = te_ctx_new();
    if (!ctx) return tdb__err(db, "commit_record: out of memory");
    int rc = 0;
    /* A workload nothing here can build (a user's computation whose
     * builder this process has not registered) is stored unchecked: only
     * its log's syntax was verified. */
    ops_built w;
    if (ops_has_builder(workload_key) && ops_build_key(ctx, workload_key, &w) == 0 &&
        !sch_replay(ctx, w.nouts, w.outs, nsteps, steps)) {
        rc = tdb__err(db, "commit_record: the step log does not fit workload '%s': %s",
                      workload_key, te_ctx_errmsg(ctx));
    }
    te_ctx_free(ctx);
    return rc;
}

/* The parameters of a registered builder's key "OP(NAME=VALUE,...)" as a
 * JSON object (integers as numbers, other values as strings); "{}" when
 * the key is not of that form. The builder alone knows what they mean. */
static char *builder_params_json(const char *key) {
    const char *open = strchr(key, '(');
    size_t n = strlen(key);
    cJSON *o = cJSON_CreateObject();
    char *text = open && n && key[n - 1] == ')' ? strndup(open + 1, (size_t)(key + n - 1 - open - 1))
                                                : NULL;
    bool ok = o && text;
    for (char *save = NULL, *it = text ? strtok_r(text, ",", &save) : NULL; ok && it;
         it = strtok_r(NULL, ",", &save)) {
        while (*it == ' ') it++;
        char *eq = strchr(it, '=');
        if (!eq || eq == it) {
            ok = false;
            break;
        }
        *eq = 0;
        char *end;
        long long v = strtoll(eq + 1, &end, 10);
        ok = (eq[1] && !*end ? cJSON_AddNumberToObject(o, it, (double)v)
                             : cJSON_AddStringToObject(o, it, eq + 1)) != NULL;
    }
    char *json = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    free(text);
    return json ? json : strdup("{}");
}

int64_t tdb__insert_workload_from_ops(tdb_db *db, const char *key) {
    te_ctx *ctx = te_ctx_new();
    if (!ctx) return tdb__err(db, "commit_workload: out of memory");
    int64_t id = -1;
    ops_builder_fn fn = ops_builder_for(key);
    ops_workload *w = fn ? NULL : ops_from_key(ctx, key);
    if (fn) {
        /* A registered builder's workload: its key as written (the builder
         * defines it), its FLOP count from a build. */
        ops_built b;
        if (fn(ctx, key, &b)) {
            tdb__err(db, "commit_workload: the builder registered for workload '%s' fails: %s",
                     key, te_ctx_errmsg(ctx));
        } else {
            const char *open = strchr(key, '(');
            char *op = open ? strndup(key, (size_t)(open - key)) : strdup(key);
            char *params = builder_params_json(key);
            if (op && params) id = tdb__insert_workload(db, key, op, params, b.flops);
            else tdb__err(db, "commit_workload: out of memory");
            free(op), free(params);
        }
    } else if (!w) {
        tdb__err(db,
                 "commit_workload: workload '%s' is not in the database and the ops registry "
                 "cannot build it (%s); commit it with tdb_commit_workload first, or register "
                 "its builder (tune_register_builder)",
                 key, te_ctx_errmsg(ctx));
    } else if (strcmp(w->key, key)) {
        tdb__err(db,
                 "commit_workload: workload key '%s' is not canonical: the ops registry writes "
                 "it '%s'",
                 key, w->key);
    } else {
        id = tdb__insert_workload(db, w->key, w->op, ops_params_json(w), w->flops);
    }
    te_ctx_free(ctx);
    return id;
}

/* Replays one record's log on w and builds it; NULL with the reason in
 * why (the ctx keeps its error too). */
rt_module *tdb_build_record(te_ctx *ctx, int nouts, te_tensor *const *outs, int nargs,
                            te_tensor *const *args, const tdb_record *r, const char *target,
                            const cg_build_options *opts) {
    if (!ctx) return NULL;
    if (!r || !r->steps_json || !outs || !args || !target) {
        te_error(ctx, "tdb_build_record: needs a record with a log, the workload and a target");
        return NULL;
    }
    int nsteps;
    sch_step *steps;
    if (tdb_steps_from_json(ctx, r->steps_json, &nsteps, &steps)) return NULL;
    sch_schedule *s = sch_replay(ctx, nouts, outs, nsteps, steps);
    return s ? cg_build(s, nargs, args, target, opts) : NULL;
}

static rt_module *build_record(te_ctx *ctx, const ops_built *w, const tdb_record *r,
                               const char *target, const cg_build_options *opts, char *why,
                               size_t whysz) {
    rt_module *m = tdb_build_record(ctx, w->nouts, w->outs, w->nargs, w->args, r, target, opts);
    if (!m) snprintf(why, whysz, "record %lld: %s", (long long)r->id, te_ctx_errmsg(ctx));
    return m;
}

/* How many of the best records to try before the default schedule: a
 * log that no longer builds (the compiler changed) should not hide the
 * next best. */
#define APPLY_TRIES 8

rt_module *tdb_apply_best(tdb_db *db, te_ctx *ctx, const char *workload_key, const char *target,
                          tdb_apply_info *info) {
    return tdb_apply_best_with(db, ctx, workload_key, target, NULL, info);
}

rt_module *tdb_apply_best_with(tdb_db *db, te_ctx *ctx, const char *workload_key,
                               const char *target, const cg_build_options *opts,
                               tdb_apply_info *info) {
    tdb_apply_info local;
    if (!info) info = &local;
    memset(info, 0, sizeof *info);
    info->record_id = -1;
    info->latency = NAN;
    if (!db) return NULL;
    if (!ctx || !workload_key || !target) {
        tdb__err(db, "apply_best: needs a ctx, a workload key and a target");
        return NULL;
    }
    if (!ops_has_builder(workload_key)) {
        tdb__err(db,
                 "apply_best: workload '%s' has no builder: register one with "
                 "tune_register_builder (or load its plugin with tune_load_plugin, --plugin) "
                 "before applying",
                 workload_key);
        return NULL;
    }
    /* A registered builder's workload is rebuilt by it (its key as
     * written); an ops workload by the registry (its key canonical). */
    ops_built w;
    bool custom = ops_builder_for(workload_key) != NULL;
    ops_workload *ow = custom ? NULL : ops_from_key(ctx, workload_key);
    if (ow)
        w = (ops_built){ow->nargs, ow->args, ow->nouts, ow->outs, ow->flops, ow->constant_args, false};
    if (!ow && (!custom || ops_build_key(ctx, workload_key, &w))) {
        tdb__err(db, "apply_best: cannot rebuild workload '%s': %s", workload_key,
                 te_ctx_errmsg(ctx));
        return NULL;
    }
    const char *key = ow ? ow->key : workload_key;
    info->workload = ow;
    info->nargs = w.nargs;
    info->nouts = w.nouts;
    info->args = w.args;
    info->constant_args = w.constant_args;
    /* A GPU's key ("cuda sm_90 NAME") is a build target too (cg_target);
     * a CPU key's thread count (" -num-cores N", tune_threads_key) names
     * the records, not the code: the build target is the key before it. */
    char *build = strndup(target, tdb_key_machine_len(target));
    if (!build) {
        tdb__err(db, "apply_best: out of memory");
        return NULL;
    }
    tdb_record *recs = NULL;
    int n = tdb_best(db, key, target, APPLY_TRIES, &recs);
    if (n < 0) {
        free(build);
        return NULL;
    }
    char why[400] = "";
    for (int i = 0; i < n; i++) {
        char reason[400];
        rt_module *m = build_record(ctx, &w, &recs[i], build, opts, reason, sizeof reason);
        if (m) {
            info->record_id = recs[i].id;
            info->latency = recs[i].median;
            snprintf(info->message, sizeof info->message,
                     "applied record %lld of workload '%s' on target '%s' (median %.6g s%s)",
                     (long long)recs[i].id, key, target, recs[i].median,
                     i ? ", the better records failed to build" : "");
            tdb_records_free(recs, n);
            free(build);
            return m;
        }
        if (!why[0]) snprintf(why, sizeof why, "%s", reason);
    }
    tdb_records_free(recs, n);

    /* A registered builder's workload has no default schedule: its plain
     * one (sch_create, no transformation) is correct, if slow. */
    info->fallback = true;
    const char *instead = ow ? "the operator's default schedule" : "its plain schedule";
    if (n == 0)
        snprintf(info->message, sizeof info->message,
                 "no record of workload '%s' for target '%s' in '%s': using %s", key, target,
                 db->path, instead);
    else
        snprintf(info->message, sizeof info->message,
                 "none of the %d best records of workload '%s' for target '%s' builds (%.300s): "
                 "using %s",
                 n, key, target, why, instead);
    sch_schedule *s = ow ? ops_default_schedule(ow, build) : sch_create(ctx, w.nouts, w.outs);
    rt_module *m = s ? cg_build(s, w.nargs, w.args, build, opts) : NULL;
    if (!m)
        tdb__err(db, "apply_best: %s; the %s schedule failed too: %s", info->message,
                 ow ? "default" : "plain", te_ctx_errmsg(ctx));
    free(build);
    return m;
}
