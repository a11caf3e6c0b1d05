/*
 * bench/suite/bench.h — the side-by-side benchmark: shared types of the
 * driver (suite.c), the vendor peers (peer_blas.c, peer_dnnl.c), the
 * machine's measured fp32 peak (peak.c) and the outputs (report.c).
 */
#ifndef LOOM_BENCH_H
#define LOOM_BENCH_H

#include <loom/loom.h>
#include <stdbool.h>
#include <stdio.h>

/* A vendor implementation of one workload, set up on the workload's own
 * input tensors (read, never written) and writing its own output. */
typedef struct bench_peer bench_peer;

/* Sets up the peer for w ("OpenBLAS sgemm" for matmul and batch_matmul,
 * oneDNN for conv2d_nchw and depthwise_conv2d_nchw); ins are w's inputs.
 * NULL with a message in err (size errlen) when the op has no peer or the
 * library refuses it. */
bench_peer *bench_peer_new(const ops_workload *w, DLTensor *const *ins, char *err, size_t errlen);
void bench_peer_free(bench_peer *p);
/* The peer's name, e.g. "openblas sgemm", "onednn nchw". */
const char *bench_peer_name(const bench_peer *p);
/* One call: what a user with NCHW (row-major) tensors pays, layout
 * reorders included. Returns 0, or non-zero on a library error. */
int bench_peer_run(bench_peer *p);
/* One call in the peer's preferred internal layout alone (oneDNN's
 * blocked formats, reorders excluded); false when the peer has no such
 * mode (it is then the same as bench_peer_run). */
bool bench_peer_has_internal(const bench_peer *p);
int bench_peer_run_internal(bench_peer *p);
/* The peer's output in the workload's layout (after bench_peer_run): a
 * float array of the output's element count, owned by the peer (a
 * 16-bit result is widened into it here, outside any timing). */
const float *bench_peer_output(bench_peer *p);

/* Per-library set-up done once per process: thread counts. */
void bench_peers_set_threads(int threads);

/* The machine's fp32 peak in FLOP/s on `threads` threads, measured with
 * independent FMA chains on the widest vector unit the CPU has (AVX-512,
 * else AVX2+FMA, else SSE multiply-add): the best of 5 probes of about
 * 50 ms each, after one discarded probe that lets the clock ramp up. */
double bench_fp32_peak(int threads);
/* The machine's bfloat16 dot-product peak in FLOP/s on `threads` threads:
 * independent chains of AVX512-BF16's VDPBF16PS (16 lanes, each two
 * multiply-adds of bfloat16 pairs into float32: 64 FLOP an instruction),
 * probed as bench_fp32_peak; 0 when the CPU has no AVX512-BF16. The %peak
 * of a bfloat16 workload is a share of this figure where it is not 0. */
double bench_bf16_dot_peak(int threads);

/* One row of the results. */
typedef struct {
    const char *name, *op, *peer, *loom_source; /* loom_source: "tuned #ID" or "default" */
    const char *key;                /* the canonical workload key */
    double flops;
    double peer_ms, peer_spread_ms; /* median and (max - min) of samples */
    double internal_ms;             /* NaN when the peer has no internal mode */
    double loom_ms, loom_spread_ms;
    /* peer ms / loom ms: the median over the samples of each back-to-back
     * pair's ratio (robust to the host's slow swings, which move both of
     * a pair) */
    double ratio;
    bool checked;                   /* Loom and peer both matched the reference */
    bool bf16_dot;                  /* a bfloat16 workload on a CPU with AVX512-BF16:
                                       its %peak is of bench_bf16_dot_peak */
    const char *error;              /* NULL, or why the row has no numbers */
} bench_row;

/* The faster of a row's two kernels in FLOP/s (0 when neither was
 * timed); *is_peer (may be NULL) says whether it is the peer's. */
double bench_row_fastest(const bench_row *r, bool *is_peer);
/* The peak to report the rows of one kind against (peak_settle.c): the
 * rows with bf16_dot as given, the others left alone. No kernel outruns
 * the machine, so when a row's Loom or peer throughput exceeds `peak`
 * (FLOP/s), the line naming it goes to log (may be NULL), probe(arg) is
 * called once more (probe may be NULL) and the larger of the two peaks
 * kept; every row still above that one becomes an error row (row->error,
 * malloc'd) naming the kernel and both figures, so that no share of peak
 * above 100 % is ever printed. Error rows are left alone. Returns the
 * peak. */
double bench_settle_peak(bench_row *rows, int n, double peak, bool bf16_dot,
                         double (*probe)(void *), void *arg, FILE *log);

/* Prints the text table (with the peak's % column: of peak, or of
 * bf16_peak for the bf16_dot rows; bf16_peak 0: no such rows). */
void bench_print_table(FILE *out, const bench_row *rows, int n, double peak, double bf16_peak,
                       int threads);
/* Writes the rows as CSV with a header line (the same peaks). */
int bench_write_csv(const char *path, const bench_row *rows, int n, double peak,
                    double bf16_peak);
/* Writes ratio.dat and ratio.gp into dir and runs gnuplot (ratio.png);
 * returns 0, or -1 with a message on stderr (no gnuplot, unwritable). */
int bench_plot_ratios(const char *dir, const bench_row *rows, int n);
/* Writes tuning curves (best GFLOP/s against trial) of every workload of
 * the rows found in db for target into dir (curves.dat, curves.gp,
 * curves.png). */
int bench_plot_curves(const char *dir, tdb_db *db, const char *target, const bench_row *rows,
                      int n);

#endif
