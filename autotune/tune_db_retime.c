/*
 * autotune/tune_db_retime.c — the end of a run into a database: the best
 * programs of a workload timed again side by side (tune_retime) and the
 * re-timings stored (tdb_commit_retime), so that programs first timed
 * under different loads of a shared machine are ranked on equal terms.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autotune/tune_db_internal.h"

/* qsort order of record indices by first-timed median (one call at a
 * time: the records are passed through this pointer). */
static _Thread_local const tdb_record *by_median_recs;
static int by_median(const void *a, const void *b) {
    double x = by_median_recs[*(const int *)a].median, y = by_median_recs[*(const int *)b].median;
    if (x != y) return x < y ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

void tune__retime_best(tune__db_run *run, int task, int k) {
    tdb_db *db = run->db;
    tune_db_task *t = &run->out->tasks[task];
    const char *key = t->key, *tkey = run->out->target_key;
    tdb_record *r = NULL;
    int nr = tdb_best(db, key, tkey, 1 << 20, &r);
    if (nr < 0) {
        tune__db_warn(run, "autotune: re-timing: %s", tdb_errmsg(db));
        return;
    }
    /* The operator's default schedule joins them wherever it ranks: it
     * is what a tuned program must beat under the same load. */
    char *dflt = tune_default_steps(key, run->target);
    /* The candidates: the database's current best (tdb_best's first, which
     * must defend its place), then the best by first timing. Ranking by
     * tdb_best alone would pick only programs re-timed in earlier runs,
     * which lead it, and a faster program found since would never be
     * re-timed, so never ranked above them. */
    int *order = nr > 0 ? malloc(sizeof *order * (size_t)nr) : NULL;
    for (int i = 0; order && i < nr; i++) order[i] = i;
    if (order && nr > 1) {
        by_median_recs = r;
        qsort(order + 1, (size_t)nr - 1, sizeof *order, by_median);
    }
    const char **steps = calloc((size_t)k + 1, sizeof *steps);
    int *pick = calloc((size_t)k + 1, sizeof *pick), n = 0;
    bool have_default = false;
    for (int o = 0; order && steps && pick && o < nr; o++) {
        int i = order[o];
        bool is_default = dflt && !strcmp(dflt, r[i].steps_json);
        if (n >= k && (have_default || !is_default)) continue; /* k, and one more for it */
        bool seen = false;
        for (int j = 0; j < n && !seen; j++) seen = !strcmp(steps[j], r[i].steps_json);
        if (seen) continue;
        steps[n] = r[i].steps_json, pick[n++] = i;
        have_default |= is_default;
        if (n > k) break;
    }
    free(dflt);
    free(order);
    tune_result *res = n >= 2 ? calloc((size_t)n, sizeof *res) : NULL;
    char *err = NULL;
    /* Side by side means on one machine: this one, whatever backend the
     * search measured with. */
    tune_measure_options mo = run->o->tune.measure;
    mo.backend = NULL;
    tune_measurer *m = res ? tune_measurer_new(key, run->target, &mo, &err) : NULL;
    double t0 = rt_now();
    if (res && !m) tune__db_warn(run, "autotune: re-timing: %s", err ? err : "no runner");
    if (m && tune_retime(m, n, steps, NULL, TUNE_DB_RETIME_ROUNDS, res) == 0) {
        int stored = 0;
        for (int j = 0; j < n; j++) {
            const tdb_record *rec = &r[pick[j]];
            if (res[j].error_code)
                tune__db_warn(run, "autotune: re-timing record #%lld: %s: %s", (long long)rec->id,
                              tune_error_name(res[j].error_code), res[j].error_msg);
            else if (tdb_commit_retime(db, rec->id, res[j].nlatencies, res[j].latencies))
                tune__db_warn(run, "autotune: re-timing record #%lld: %s", (long long)rec->id,
                              tdb_errmsg(db));
            else
                stored++;
        }
        /* The winner as the database now ranks it. */
        tdb_record *top = NULL;
        if (stored && tdb_best(db, key, tkey, 1, &top) == 1 && !isnan(top->retimed_latency)) {
            t->retimed = stored;
            t->retime_s = rt_now() - t0;
            t->retime_best_id = top->id;
            t->retime_best_s = top->retimed_latency;
            t->retime_best_median = top->median;
        }
        tdb_records_free(top, top ? 1 : 0);
    }
    tune_measurer_free(m);
    free(err), free(res), free(steps), free(pick);
    tdb_records_free(r, nr);
}
