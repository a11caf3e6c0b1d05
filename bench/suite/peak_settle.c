/*
 * bench/suite/peak_settle.c — the peak the %peak column is a share of,
 * checked against what the kernels ran at. A kernel cannot outrun the
 * machine: a throughput above the probed peak means the probe was
 * disturbed (a start-up probe once read 47.6 GFLOP/s on a 117 GFLOP/s
 * core, and %peak read 223 %) or the timing is wrong. So the peak is
 * probed again, and a kernel still above it is an error row, never a
 * share above 100 %. No timing here: the probe is the caller's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* FLOP/s of `flops` in `ms` per call; 0 when not measured. */
static double rate(double flops, double ms) {
    return flops > 0 && ms > 0 && isfinite(ms) ? flops / (ms * 1e-3) : 0;
}

double bench_row_fastest(const bench_row *r, bool *is_peer) {
    double loom = rate(r->flops, r->loom_ms), peer = rate(r->flops, r->peer_ms);
    if (is_peer) *is_peer = peer > loom;
    return peer > loom ? peer : loom;
}

double bench_settle_peak(bench_row *rows, int n, double peak, bool bf16_dot,
                         double (*probe)(void *), void *arg, FILE *log) {
    const char *kind = bf16_dot ? "bf16 dot-product" : "fp32";
    double fastest = 0;
    int at = -1;
    for (int i = 0; i < n; ++i) {
        if (rows[i].bf16_dot != bf16_dot) continue;
        double f = rows[i].error ? 0 : bench_row_fastest(&rows[i], NULL);
        if (f > fastest) fastest = f, at = i;
    }
    if (!(fastest > peak) || at < 0) return peak;
    if (log)
        fprintf(log,
                "bench: %s ran at %.1f GFLOP/s, above the measured %s peak %.1f GFLOP/s; "
                "probing the peak again\n",
                rows[at].name, fastest * 1e-9, kind, peak * 1e-9);
    if (probe) {
        double again = probe(arg);
        if (again > peak) peak = again;
    }
    for (int i = 0; i < n; ++i) {
        bench_row *r = &rows[i];
        bool is_peer = false;
        double f = r->error || r->bf16_dot != bf16_dot ? 0 : bench_row_fastest(r, &is_peer);
        if (!(f > peak)) continue;
        char msg[512];
        snprintf(msg, sizeof msg,
                 "%s (%s) ran at %.1f GFLOP/s, above the measured %s peak of %.1f GFLOP/s "
                 "(probed twice): the peak probe or the timing is wrong, no share of peak given",
                 is_peer ? "the peer" : "Loom", is_peer ? r->peer : r->loom_source, f * 1e-9,
                 kind, peak * 1e-9);
        r->error = strdup(msg);
    }
    return peak;
}
