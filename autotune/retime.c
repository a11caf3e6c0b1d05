/*
 * autotune/retime.c — re-timing a few programs side by side (tune_retime).
 *
 * On a shared machine a latency depends on when it was taken: the best
 * record of a long run may be a program timed in a quiet minute, ahead of
 * a faster one timed in a busy one. Measuring the candidates again in
 * rounds, every program once per round, puts them under the same load;
 * each round's latency is kept, for the caller to rank by (the tuning
 * database takes the fastest round, tdb_commit_retime).
 */
#include <stdlib.h>
#include <string.h>

#include "autotune/tune_internal.h"

int tune_retime(tune_measurer *m, int n, const char *const *steps_json, const int *hooks,
                int rounds, tune_result *results) {
    if (!m || n < 0 || (n > 0 && !steps_json) || !results) return -1;
    if (rounds < 1) rounds = 1;
    if (rounds > 64) rounds = 64;
    for (int i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        results[i].steps_json = steps_json[i];
        results[i].host_scale = 1; /* each round's median is scaled, if at all */
    }
    tune_result *round = calloc((size_t)(n ? n : 1), sizeof *round);
    const char **order = calloc((size_t)(n ? n : 1), sizeof *order);
    int *ohooks = calloc((size_t)(n ? n : 1), sizeof *ohooks);
    int rc = round && order && ohooks ? 0 : -1;
    for (int r = 0; r < rounds && rc == 0; r++) {
        /* Round r starts at program r: none is always first or last while
         * the load drifts over a round. */
        for (int j = 0; j < n; j++) {
            order[j] = steps_json[(j + r) % n];
            ohooks[j] = hooks ? hooks[(j + r) % n] : 0;
        }
        /* No cut below the run timeout, and every run checked against
         * the reference: a program slower than another of the round is
         * no reason to stop or trust it less. */
        if (tune__measure_uncut(m, n, order, ohooks, round)) {
            rc = -1;
            break;
        }
        for (int j = 0; j < n; j++) {
            tune_result *res = &results[(j + r) % n];
            const tune_result *got = &round[j];
            if (res->error_code) continue;
            if (got->error_code) {
                res->error_code = got->error_code;
                memcpy(res->error_msg, got->error_msg, sizeof res->error_msg);
                continue;
            }
            res->latencies[res->nlatencies++] = got->median;
            res->build_s += got->build_s;
            res->checked = got->checked;
        }
    }
    for (int i = 0; i < n; i++)
        if (!results[i].error_code && results[i].nlatencies) tune__summarize(&results[i]);
    free(round);
    free(order);
    free(ohooks);
    return rc;
}
