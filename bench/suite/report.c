/*
 * bench/suite/report.c — the results as a text table, a CSV file and
 * gnuplot figures (ratio per workload; tuning curves from the database).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static double gflops(double flops, double ms) { return flops / (ms * 1e-3) * 1e-9; }

void bench_print_table(FILE *out, const bench_row *rows, int n, double peak, double bf16_peak,
                       int threads) {
    fprintf(out, "%d thread(s); measured fp32 peak %.1f GFLOP/s", threads, peak * 1e-9);
    if (bf16_peak > 0)
        fprintf(out, ", bf16 dot-product peak %.1f GFLOP/s (the %%peak of bfloat16 rows)",
                bf16_peak * 1e-9);
    fprintf(out, "\n");
    fprintf(out, "%-12s %-22s %10s %10s %-10s %7s %9s %7s %10s\n", "workload", "peer", "peer ms",
            "loom ms", "loom", "ratio", "GFLOP/s", "%peak", "int. ms");
    for (int i = 0; i < n; ++i) {
        const bench_row *r = &rows[i];
        if (r->error) {
            fprintf(out, "%-12s error: %s\n", r->name, r->error);
            continue;
        }
        char internal[32] = "-";
        if (!isnan(r->internal_ms)) snprintf(internal, sizeof internal, "%.3f", r->internal_ms);
        double g = gflops(r->flops, r->loom_ms);
        fprintf(out, "%-12s %-22s %10.3f %10.3f %-10s %7.2f %9.1f %6.1f%% %10s%s\n", r->name,
                r->peer, r->peer_ms, r->loom_ms, r->loom_source, r->ratio, g,
                100 * g * 1e9 / (r->bf16_dot ? bf16_peak : peak), internal,
                r->checked ? "" : "  UNCHECKED");
    }
    fprintf(out, "ratio = peer ms / loom ms (above 1: Loom is faster), the median of the "
                 "ratios of samples timed back to back; %%peak: Loom's share of the measured "
                 "peak; int. ms: the peer in its own internal layout\n");
}

int bench_write_csv(const char *path, const bench_row *rows, int n, double peak,
                    double bf16_peak) {
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    fprintf(f, "workload,op,peer,peer_ms,peer_spread_ms,peer_internal_ms,loom_source,loom_ms,"
               "loom_spread_ms,ratio,loom_gflops,loom_pct_peak,checked,error\n");
    for (int i = 0; i < n; ++i) {
        const bench_row *r = &rows[i];
        if (r->error) {
            fprintf(f, "%s,%s,,,,,,,,,,,0,\"%s\"\n", r->name, r->op, r->error);
            continue;
        }
        double g = gflops(r->flops, r->loom_ms);
        fprintf(f, "%s,%s,%s,%.6f,%.6f,%.6f,%s,%.6f,%.6f,%.4f,%.3f,%.2f,%d,\n", r->name, r->op,
                r->peer, r->peer_ms, r->peer_spread_ms, r->internal_ms, r->loom_source,
                r->loom_ms, r->loom_spread_ms, r->ratio, g,
                100 * g * 1e9 / (r->bf16_dot ? bf16_peak : peak),
                r->checked);
    }
    return fclose(f) ? -1 : 0;
}

static int run_gnuplot(const char *dir, const char *script) {
    char cmd[4096];
    if (snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot '%s'", dir, script) >= (int)sizeof cmd)
        return -1;
    int rc = system(cmd);
    if (rc) fprintf(stderr, "bench: gnuplot failed on %s/%s (apt-get install gnuplot-nox)\n", dir,
                    script);
    return rc ? -1 : 0;
}

static FILE *open_in(const char *dir, const char *name) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return NULL;
    FILE *f = fopen(path, "w");
    if (!f) perror(path);
    return f;
}

int bench_plot_ratios(const char *dir, const bench_row *rows, int n) {
    FILE *d = open_in(dir, "ratio.dat"), *g = open_in(dir, "ratio.gp");
    if (!d || !g) {
        if (d) fclose(d);
        if (g) fclose(g);
        return -1;
    }
    for (int i = 0; i < n; ++i)
        if (!rows[i].error)
            fprintf(d, "%d \"%s\" %.4f\n", i, rows[i].name, rows[i].ratio);
    fprintf(g, "set terminal pngcairo noenhanced size 1000,500\nset offsets 0,0,0.2,0\nset output 'ratio.png'\n"
               "set title 'Loom against the vendor library (peer ms / Loom ms; 1 = as fast)'\n"
               "set style fill solid 0.6\nset boxwidth 0.6\nset yrange [0:*]\n"
               "set xtics rotate by -45\nset grid ytics\n"
               "plot 'ratio.dat' using 1:3:xtic(2) with boxes notitle, 1 with lines lw 2 "
               "title 'parity'\n");
    fclose(d);
    fclose(g);
    return run_gnuplot(dir, "ratio.gp");
}

int bench_plot_curves(const char *dir, tdb_db *db, const char *target, const bench_row *rows,
                      int n) {
    FILE *d = open_in(dir, "curves.dat"), *g = open_in(dir, "curves.gp");
    if (!d || !g) {
        if (d) fclose(d);
        if (g) fclose(g);
        return -1;
    }
    fprintf(g, "set terminal pngcairo noenhanced size 1000,600\nset output 'curves.png'\n"
               "set title 'Tuning curves: best GFLOP/s so far against trial'\n"
               "set xlabel 'trial'\nset ylabel 'GFLOP/s'\nset key left top\nset grid\nplot ");
    int curves = 0;
    for (int i = 0; i < n; ++i) {
        if (rows[i].error || !rows[i].flops) continue;
        tdb_history_point *h = NULL;
        int nh = tdb_history(db, rows[i].key, target, &h);
        if (nh <= 0) {
            free(h);
            continue;
        }
        fprintf(d, "# %s\n", rows[i].name);
        for (int k = 0; k < nh; ++k)
            if (!isnan(h[k].best))
                fprintf(d, "%d %.3f\n", h[k].trial, rows[i].flops / h[k].best * 1e-9);
        fprintf(d, "\n\n");
        fprintf(g, "%s'curves.dat' index %d using 1:2 with lines lw 2 title '%s'",
                curves ? ", " : "", curves, rows[i].name);
        curves++;
        free(h);
    }
    fprintf(g, "%s\n", curves ? "" : "0 notitle");
    fclose(d);
    fclose(g);
    if (!curves) fprintf(stderr, "bench: no tuning history in the database for these workloads\n");
    return run_gnuplot(dir, "curves.gp");
}
