/*
 * tests/gpu_skip.h — how the CUDA tests say what they could not run, so
 * that ctest tells "skipped" from "passed".
 *
 * The rule: a program exits TU_SKIP_RETURN_CODE (ctest's SKIP_RETURN_CODE,
 * shown as "Not Run (Skipped)") only when nothing meaningful ran, that is
 * when every one of its tests was skipped whole for lack of NVRTC or of a
 * GPU. A test that generated and compiled its kernels but could not run
 * them (NVRTC present, no device) checked something real: it passes, the
 * device part it left out is counted (tu_skip_part), and the program exits
 * 0 with a line saying how many device parts did not run.
 */
#ifndef LOOM_TEST_GPU_SKIP_H
#define LOOM_TEST_GPU_SKIP_H

#include "testutil.h"

/* The exit status meaning "skipped"; CMakeLists.txt registers the gpu
 * tests with SKIP_RETURN_CODE set to the same value (autotools' 77). */
#define TU_SKIP_RETURN_CODE 77

/* Skips the running test whole (cmocka's skip(), which leaves the test)
 * and counts it; `why` is printed. */
#define tu_skip_test(why)                                                                     \
    do {                                                                                      \
        tu_note_skip_test_(why);                                                              \
        skip();                                                                               \
    } while (0)
void tu_note_skip_test_(const char *why);

/* Skips the running test whole when NVRTC cannot be loaded. */
#define tu_require_nvrtc()                                                                    \
    do {                                                                                      \
        if (!rt_nvrtc_available()) tu_skip_test(rt_last_error());                             \
    } while (0)

/* Records that the running test left out its device part (`what`: "the
 * GPU run", "the GPU runs of 9 operators") for `why`; the test goes on
 * and passes on what it did check. */
void tu_skip_part(const char *what, const char *why);

/* GPU 0's compute capability x 10 (an H100: 90), 0 without a GPU. */
int tu_gpu_cc(void);

/* Runs CUDA module m of workload w against w's double reference on the
 * GPU (ops_check_module: fresh inputs, NaN-poisoned outputs,
 * ops_tolerance) and fails the test naming w's key and the mismatches;
 * without a GPU records "the GPU run" as left out (tu_skip_part). */
void tu_check_on_gpu(const ops_workload *w, rt_module *m);

/* Runs the cmocka group and turns the outcome into the exit status: 1
 * when a test failed, TU_SKIP_RETURN_CODE when every test was skipped
 * whole, else 0. */
#define tu_run_group(tests)                                                                   \
    tu_exit_status_(cmocka_run_group_tests((tests), NULL, NULL),                              \
                    (int)(sizeof(tests) / sizeof((tests)[0])))
int tu_exit_status_(int failed, int ntests);

#endif
