/*
 * schedule/lower_dump.c — LOOM_DUMP_IR=DIR: the program after every step
 * of the lowering list (lower_list.c) as printer text, and the passes' wall times, for whoever debugs a pass
 * (Halide's HL_DEBUG_CODEGEN, TVM's PassInstrument dumps).
 *
 * A dump is a debugging aid, never a reason for a build to fail: a file
 * that cannot be written turns the dump off for the rest of the run and
 * says so once per process on stderr (a tuner runs the pipeline
 * thousands of times; one line is enough).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "schedule/lower_internal.h"

static atomic_bool warned;

static void give_up(sch__dump *d, const char *path) {
    if (!atomic_exchange(&warned, true))
        fprintf(stderr, "loom: LOOM_DUMP_IR: cannot write '%s': %s; IR dumps are off\n", path,
                strerror(errno));
    free(d->dir);
    d->dir = NULL;
}

double sch__dump_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Writes the whole of text to path (truncating); 0 or -1 with errno. */
static int write_file(const char *path, const char *mode, const char *text) {
    FILE *fp = fopen(path, mode);
    if (!fp) return -1;
    size_t len = strlen(text);
    int rc = fwrite(text, 1, len, fp) == len ? 0 : -1;
    int saved = errno;
    if (fclose(fp) && rc == 0) return -1;
    errno = saved;
    return rc;
}

void sch__dump_begin(sch__dump *d, const char *name) {
    memset(d, 0, sizeof *d);
    const char *dir = getenv("LOOM_DUMP_IR");
    if (!dir || !*dir) return;
    d->dir = strdup(dir);
    if (!d->dir) return;
    te_str_init(&d->times);
    /* Function names come from users: keep them to one file name. */
    snprintf(d->prefix, sizeof d->prefix, "%s", name && *name ? name : "func");
    for (char *c = d->prefix; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-' || *c == '.'))
            *c = '_';
    if (mkdir(d->dir, 0777) && errno != EEXIST) give_up(d, dir);
}

void sch__dump_text(sch__dump *d, const char *step, const char *text, double ms) {
    if (!d->dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%02d-%s.txt", d->dir, d->prefix, d->n, step);
    te_str_printf(&d->times, "%s-%02d-%s\t%.3f\n", d->prefix, d->n, step, ms);
    d->n++;
    if (write_file(path, "w", text ? text : "(the step failed)\n")) give_up(d, path);
}

void sch__dump_func(sch__dump *d, const char *step, const tir_func *g, double ms) {
    if (!d->dir) return;
    te_str text;
    te_str_init(&text);
    if (g) tir_func_print(&text, g);
    sch__dump_text(d, step, g ? (text.data ? text.data : "") : NULL, ms);
    te_str_free(&text);
}

void sch__dump_end(sch__dump *d) {
    if (d->dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/times.txt", d->dir);
        if (write_file(path, "a", d->times.data ? d->times.data : "")) give_up(d, path);
    }
    te_str_free(&d->times);
    free(d->dir);
    d->dir = NULL;
}
