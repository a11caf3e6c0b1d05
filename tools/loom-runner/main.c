/*
 * tools/loom-runner/main.c — the runner process of Loom's autotuner
 * (include/loom/autotune.h, TUNE_RUNNER_NAME): a measurer starts it as
 * `loom-runner --loom-tune-runner` and it serves build, run and check
 * requests on stdin/stdout until EOF. It is a program of its own so that
 * a host embedding Loom need not re-execute itself to measure; the
 * plugins the host loaded come through the environment (LOOM_TUNE_PLUGINS).
 */
#include <stdio.h>
#include <string.h>

#include "loom/autotune.h"

int main(int argc, char **argv) {
    /* Serves and exits when argv[1] is the runner flag. */
    tune_runner_maybe_run(argc, argv);
    fprintf(stderr,
            "usage: %s " TUNE_RUNNER_FLAG "\n"
            "  the measurement process of Loom's autotuner: started by the tuner, it serves\n"
            "  requests on stdin/stdout; not meant to be run by hand\n",
            TUNE_RUNNER_NAME);
    return argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) ? 0 : 2;
}
