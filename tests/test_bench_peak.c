/*
 * bench_suite's peak (bench/suite/peak_settle.c): a kernel faster than
 * the probed peak makes it probe again, and one still faster after that
 * is an error row naming the kernel, never a share of peak above 100 %.
 * The probe is a stand-in returning fixed figures: nothing is timed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "bench/suite/bench.h"

typedef struct {
    double value; /* what the probe returns, FLOP/s */
    int calls;
} fake_probe;

static double probe(void *arg) {
    fake_probe *p = arg;
    p->calls++;
    return p->value;
}

/* A row of 1 GFLOP per call run in loom_ms / peer_ms. */
static bench_row row(const char *name, double loom_ms, double peer_ms) {
    return (bench_row){.name = name, .op = "matmul", .peer = "openblas sgemm",
                       .loom_source = "tuned #7", .flops = 1e9, .loom_ms = loom_ms,
                       .peer_ms = peer_ms, .internal_ms = NAN, .ratio = peer_ms / loom_ms};
}

static void free_errors(bench_row *rows, int n) {
    for (int i = 0; i < n; i++) free((char *)rows[i].error);
}

/* Every kernel under the peak: no second probe, nothing changed. */
static void test_all_under_peak(void **state) {
    (void)state;
    bench_row rows[] = {row("a", 10, 20), row("b", 9, 8.6)}; /* 100, 116 GFLOP/s */
    fake_probe p = {200e9, 0};
    assert_true(bench_settle_peak(rows, 2, 117e9, false, probe, &p, NULL) == 117e9);
    assert_int_equal(p.calls, 0);
    assert_null(rows[0].error);
    assert_null(rows[1].error);
}

/* The start-up probe read low (47.6 of 117 GFLOP/s): the second probe's
 * figure is kept and no row is refused. */
static void test_low_probe_probed_again(void **state) {
    (void)state;
    bench_row rows[] = {row("mm1024", 1e3 / 104.8, 20), row("b", 100, 200)};
    fake_probe p = {117e9, 0};
    char *log = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&log, &len);
    double peak = bench_settle_peak(rows, 2, 47.6e9, false, probe, &p, f);
    fclose(f);
    assert_true(peak == 117e9);
    assert_int_equal(p.calls, 1);
    assert_null(rows[0].error);
    assert_null(rows[1].error);
    tu_assert_msg_has(log, "mm1024 ran at 104.8 GFLOP/s, above the measured fp32 peak 47.6",
                      "probing the peak again");
    free(log);
    /* the share printed is then at most 100 % */
    for (int i = 0; i < 2; i++) assert_true(bench_row_fastest(&rows[i], NULL) <= peak);
}

/* Still above after the second probe (which read lower: the larger is
 * kept): the rows above become errors naming the kernel; the others and
 * rows that were errors already stay as they were. */
static void test_still_above_refused(void **state) {
    (void)state;
    bench_row rows[] = {row("fast", 1e3 / 223, 20), row("peerfast", 100, 1e3 / 150),
                        row("fine", 20, 40), row("failed", 1, 1)};
    rows[3].error = strdup("loom: build failed");
    fake_probe p = {40e9, 0};
    double peak = bench_settle_peak(rows, 4, 100e9, false, probe, &p, NULL);
    assert_true(peak == 100e9);
    assert_int_equal(p.calls, 1);
    assert_non_null(rows[0].error);
    tu_assert_msg_has(rows[0].error, "Loom (tuned #7) ran at 223.0 GFLOP/s",
                      "above the measured fp32 peak of 100.0 GFLOP/s", "probed twice",
                      "no share of peak given");
    assert_non_null(rows[1].error);
    tu_assert_msg_has(rows[1].error, "the peer (openblas sgemm) ran at 150.0 GFLOP/s");
    assert_null(rows[2].error);
    assert_string_equal(rows[3].error, "loom: build failed");

    /* the table prints error lines, no share above 100 % */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    bench_print_table(f, rows, 4, peak, 0, 1);
    fclose(f);
    tu_assert_msg_has(text, "fast         error: Loom (tuned #7) ran at 223.0",
                      "peerfast     error: the peer", "failed       error: loom: build failed",
                      " 50.0%");
    assert_null(strstr(text, "223.0%"));
    free(text);
    free_errors(rows, 4);
}

/* Kernels not timed (0 or NaN ms) never count as fast; no probe needed. */
static void test_untimed_rows(void **state) {
    (void)state;
    bench_row rows[] = {row("zero", 0, 0), row("nan", NAN, NAN)};
    fake_probe p = {1, 0};
    assert_true(bench_settle_peak(rows, 2, 1e9, false, probe, &p, NULL) == 1e9);
    assert_int_equal(p.calls, 0);
    assert_true(bench_row_fastest(&rows[0], NULL) == 0);
    assert_true(bench_row_fastest(&rows[1], NULL) == 0);
}

/* bfloat16 rows on a CPU with AVX512-BF16 are judged against the bf16
 * dot-product peak alone: the fp32 settle leaves them be, the bf16 one
 * refuses only them, and the table gives their share of that peak. */
static void test_bf16_rows(void **state) {
    (void)state;
    bench_row rows[] = {row("mm_bf16", 1e3 / 210, 20), row("mm", 10, 20),
                        row("mm_bf16_fast", 1e3 / 300, 20)};
    rows[0].bf16_dot = rows[2].bf16_dot = true;
    rows[0].loom_source = "default";
    fake_probe p = {0, 0};
    assert_true(bench_settle_peak(rows, 3, 117e9, false, probe, &p, NULL) == 117e9);
    assert_int_equal(p.calls, 0);
    assert_null(rows[0].error);
    p.value = 230e9;
    assert_true(bench_settle_peak(rows, 3, 230e9, true, probe, &p, NULL) == 230e9);
    assert_int_equal(p.calls, 1);
    assert_null(rows[0].error);
    assert_null(rows[1].error);
    tu_assert_msg_has(rows[2].error, "Loom (tuned #7) ran at 300.0 GFLOP/s",
                      "above the measured bf16 dot-product peak of 230.0 GFLOP/s");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    bench_print_table(f, rows, 2, 117e9, 230e9, 1);
    fclose(f);
    tu_assert_msg_has(text, "measured fp32 peak 117.0 GFLOP/s, bf16 dot-product peak 230.0",
                      "210.0   91.3%", "100.0   85.5%");
    free(text);
    free_errors(rows, 3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_under_peak),
        cmocka_unit_test(test_low_probe_probed_again),
        cmocka_unit_test(test_still_above_refused),
        cmocka_unit_test(test_untimed_rows),
        cmocka_unit_test(test_bf16_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
