/*
 * tests/test_tir_dump.c — LOOM_DUMP_IR=DIR: the program after every
 * pipeline pass in DIR/<func>-NN-<pass>.txt in pass order, the last one
 * the pipeline's result, per-pass times in DIR/times.txt; an unwritable
 * DIR warns once on stderr and the build still succeeds.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "loom/codegen.h"
#include "loom/runtime.h"
#include "loom/schedule.h"
#include "loom/tir.h"

/* C = A * B, 16 x 16, inner axis split and vectorized (so that
 * vectorize and simplify change something). */
static sch_schedule *matmul(te_ctx *ctx, te_tensor **args) {
    te_tensor *a = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(16, 16));
    te_tensor *b = te_placeholder(ctx, "B", TE_FLOAT32, TE_SHAPE(16, 16));
    te_expr *i = te_axis(ctx, "i", 16), *j = te_axis(ctx, "j", 16);
    te_expr *k = te_reduce_axis(ctx, "k", 16);
    te_tensor *c = te_compute(ctx, "C", TE_AXES(i, j),
                              te_sum(te_mul(te_read(a, i, k), te_read(b, k, j)), k));
    args[0] = a, args[1] = b, args[2] = c;
    sch_schedule *s = sch_create(ctx, 1, &c);
    assert_non_null(s);
    return s;
}

static char *slurp(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
    buf[n] = 0;
    fclose(fp);
    return buf;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
    return strcmp((*a)->d_name, (*b)->d_name);
}
static int is_step(const struct dirent *e) { return strncmp(e->d_name, "mm-", 3) == 0; }

static void test_dump(void **st) {
    (void)st;
    char dir[] = "/tmp/loom-dump-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(setenv("LOOM_DUMP_IR", dir, 1), 0);
    te_ctx *ctx = te_ctx_new();
    te_tensor *args[3];
    sch_schedule *s = matmul(ctx, args);
    tir_func *f = sch_lower(s, 3, args, "mm");
    assert_non_null(f);
    tir_func *g = tir_run_pipeline(ctx, f, NULL);
    unsetenv("LOOM_DUMP_IR");
    assert_non_null(g);

    static const char *const passes[] = {"input",          "storage_flatten", "simplify",
                                         "loop_partition", "simplify",        "remove_noop",
                                         "vectorize",      "unroll",          "storage_rewrite",
                                         "simplify",       "remove_noop"};
    enum { NP = sizeof passes / sizeof passes[0] };
    struct dirent **ents;
    int n = scandir(dir, &ents, is_step, by_name);
    assert_int_equal(n, NP);
    for (int k = 0; k < n; k++) {
        char want[64];
        snprintf(want, sizeof want, "mm-%02d-%s.txt", k, passes[k]);
        assert_string_equal(ents[k]->d_name, want);
    }
    /* The first is the input, the last the pipeline's result. */
    char path[512];
    te_str text;
    snprintf(path, sizeof path, "%s/%s", dir, ents[0]->d_name);
    char *got = slurp(path);
    te_str_init(&text);
    tir_func_print(&text, f);
    assert_string_equal(got, text.data);
    te_str_free(&text);
    free(got);
    snprintf(path, sizeof path, "%s/%s", dir, ents[n - 1]->d_name);
    got = slurp(path);
    te_str_init(&text);
    tir_func_print(&text, g);
    assert_string_equal(got, text.data);
    te_str_free(&text);
    free(got);

    /* times.txt: one line per file, same names, a time in ms. */
    snprintf(path, sizeof path, "%s/times.txt", dir);
    got = slurp(path);
    assert_non_null(got);
    char *line = got;
    for (int k = 0; k < n; k++) {
        char name[64];
        double ms = -1;
        assert_int_equal(sscanf(line, "%63s %lf", name, &ms), 2);
        size_t len = strlen(name);
        assert_true(len + 4 == strlen(ents[k]->d_name) && !strncmp(name, ents[k]->d_name, len));
        assert_true(ms >= 0);
        line = strchr(line, '\n');
        assert_non_null(line);
        line++;
    }
    assert_string_equal(line, "");
    free(got);

    for (int k = 0; k < n; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, ents[k]->d_name);
        unlink(path);
        free(ents[k]);
    }
    free(ents);
    snprintf(path, sizeof path, "%s/times.txt", dir);
    unlink(path);
    rmdir(dir);
    te_ctx_free(ctx);
}

/* A DIR under a regular file cannot be made: one warning, and the
 * build, run twice, succeeds both times. */
static void test_unwritable(void **st) {
    (void)st;
    char file[] = "/tmp/loom-dump-file-XXXXXX", err[] = "/tmp/loom-dump-err-XXXXXX";
    int fd = mkstemp(file), efd = mkstemp(err);
    assert_true(fd >= 0 && efd >= 0);
    close(fd);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/sub", file);
    assert_int_equal(setenv("LOOM_DUMP_IR", dir, 1), 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(efd, 2);
    for (int r = 0; r < 2; r++) {
        te_ctx *ctx = te_ctx_new();
        te_tensor *args[3];
        sch_schedule *s = matmul(ctx, args);
        rt_module *m = cg_build(s, 3, args, "c", NULL);
        if (!m) fprintf(stdout, "%s\n", te_ctx_errmsg(ctx));
        assert_non_null(m);
        rt_module_free(m);
        te_ctx_free(ctx);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    unsetenv("LOOM_DUMP_IR");
    char *got = slurp(err);
    char want[512];
    snprintf(want, sizeof want,
             "loom: LOOM_DUMP_IR: cannot write '%s': Not a directory; IR dumps are off\n", dir);
    assert_string_equal(got, want);
    free(got);
    close(efd);
    unlink(err);
    unlink(file);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dump),
        cmocka_unit_test(test_unwritable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
