/*
 * tests/test_tir_dump.c — LOOM_DUMP_IR=DIR: the program after every step
 * of the lowering list (sch_lower_program) in DIR/<func>-NN-<step>.txt in
 * list order, from the arguments' check to the target's input, the last
 * one the list's result, per-step times in DIR/times.txt; the flags'
 * steps (model view, pre-computed stages, gpu) in the dump; an
 * unwritable DIR warns once on stderr and the build still succeeds.
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

/* The files of DIR starting with prefix, sorted; their count. */
static int steps_of(const char *dir, const char *prefix, struct dirent ***ents) {
    const char *want = prefix;
    int n = scandir(dir, ents, NULL, by_name), k = 0;
    for (int i = 0; i < n; i++) {
        const char *name = (*ents)[i]->d_name;
        size_t len = strlen(want);
        /* prefix-NN-step.txt, NN two digits (so "mm-" misses "mm__precompute-") */
        if (!strncmp(name, want, len) && name[len] >= '0' && name[len] <= '9')
            (*ents)[k++] = (*ents)[i];
        else
            free((*ents)[i]);
    }
    return k;
}

static void expect_steps(const char *dir, const char *prefix, const char *const *steps, int n) {
    struct dirent **ents;
    int got = steps_of(dir, prefix, &ents);
    for (int k = 0; k < got && k < n; k++) {
        char want[96];
        snprintf(want, sizeof want, "%s%02d-%s.txt", prefix, k, steps[k]);
        assert_string_equal(ents[k]->d_name, want);
    }
    assert_int_equal(got, n);
    for (int k = 0; k < got; k++) free(ents[k]);
    free(ents);
}

static void clean(const char *dir) {
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, by_name);
    for (int k = 0; k < n; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, ents[k]->d_name);
        if (ents[k]->d_name[0] != '.') unlink(path);
        free(ents[k]);
    }
    free(ents);
    rmdir(dir);
}

static void test_dump(void **st) {
    (void)st;
    char dir[] = "/tmp/loom-dump-XXXXXX";
    assert_non_null(mkdtemp(dir));
    te_ctx *ctx = te_ctx_new();
    te_tensor *args[3];
    sch_schedule *s = matmul(ctx, args);
    tir_func *f = sch_lower(s, 3, args, "mm"); /* loop nests only: no dump */
    assert_non_null(f);
    assert_int_equal(setenv("LOOM_DUMP_IR", dir, 1), 0);
    sch_lowered r;
    assert_int_equal(sch_lower_program(s, 3, args, &(sch_lower_options){.name = "mm"}, &r), 0);
    unsetenv("LOOM_DUMP_IR");
    tir_func *g = r.main;
    assert_non_null(g);

    static const char *const passes[] = {
        "check_arguments", "inline",      "bound_inference", "check_attach",  "buffers",
        "schedule_ops",    "storage_flatten", "simplify",    "loop_partition", "simplify",
        "remove_noop",     "vectorize",   "unroll",          "storage_rewrite", "simplify",
        "remove_noop",     "double_buffer"};
    enum { NP = sizeof passes / sizeof passes[0] };
    expect_steps(dir, "mm-", passes, NP);
    struct dirent **ents;
    int n = scandir(dir, &ents, is_step, by_name);
    assert_int_equal(n, NP);
    /* The loop nests are sch_lower's function, the last the list's result. */
    char path[512];
    te_str text;
    snprintf(path, sizeof path, "%s/mm-05-schedule_ops.txt", dir);
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
    /* The steps before loop nests, as text. */
    snprintf(path, sizeof path, "%s/mm-02-bound_inference.txt", dir);
    got = slurp(path);
    assert_string_equal(got, "C: region [0, +16), [0, +16); loops i:16 j:16 k:16\n");
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
    for (int k = 0; k < n; k++) free(ents[k]);
    free(ents);
    clean(dir);
    te_ctx_free(ctx);
}

/* The flags change the list's steps, and the dump shows which ran: the
 * model's view (no partitioning, unrolling only marked), tir_run_pipeline
 * (from a lowered function), the GPU steps down to the kernels. */
static void test_dump_flags(void **st) {
    (void)st;
    char dir[] = "/tmp/loom-dump-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(setenv("LOOM_DUMP_IR", dir, 1), 0);
    te_ctx *ctx = te_ctx_new();
    te_tensor *args[3];
    sch_schedule *s = matmul(ctx, args);
    sch_lowered r;
    sch_lower_options model = {.name = "mv", .model_view = true};
    assert_int_equal(sch_lower_program(s, 3, args, &model, &r), 0);
    static const char *const mv[] = {
        "check_arguments", "inline",          "bound_inference", "check_attach",
        "buffers",         "schedule_ops",    "storage_flatten", "simplify",
        "vectorize",       "unroll_hinted",   "storage_rewrite", "simplify",
        "remove_noop",     "double_buffer"};
    expect_steps(dir, "mv-", mv, sizeof mv / sizeof mv[0]);

    tir_func *f = sch_lower(s, 3, args, "tp");
    assert_non_null(tir_run_pipeline(ctx, f, &(tir_pipeline_options){.skip_vectorize = true}));
    static const char *const tp[] = {"input",       "storage_flatten", "simplify",
                                     "loop_partition", "simplify",     "remove_noop",
                                     "devectorize", "unroll",          "storage_rewrite",
                                     "simplify",    "remove_noop",  "double_buffer"};
    expect_steps(dir, "tp-", tp, sizeof tp / sizeof tp[0]);

    /* On gpu: C's loops bound to blocks and threads. */
    te_tensor *C = args[2];
    te_expr *i = sch_axis(C, 0), *j = sch_axis(C, 1);
    assert_int_equal(sch_bind(s, C, i, "blockIdx.x") || sch_bind(s, C, j, "threadIdx.x"), 0);
    sch_lower_options gpu = {.name = "gpu", .passes = {.gpu = true}};
    assert_int_equal(sch_lower_program(s, 3, args, &gpu, &r), 0);
    assert_non_null(r.device);
    assert_int_equal(r.device->nkernels, 1);
    static const char *const gp[] = {
        "check_arguments", "inline",         "bound_inference", "check_attach",
        "buffers",         "schedule_ops",   "storage_flatten", "simplify",
        "loop_partition",  "simplify",       "remove_noop",     "vectorize",
        "inject_vthread",  "simplify",       "unroll",          "storage_rewrite",
        "simplify",        "remove_noop",    "double_buffer",   "thread_sync",     "verify_gpu",
        "split_host_device"};
    expect_steps(dir, "gpu-", gp, sizeof gp / sizeof gp[0]);
    unsetenv("LOOM_DUMP_IR");
    clean(dir);
    te_ctx_free(ctx);
}

/* With constant arguments the list splits off the pre-computed stages,
 * and each of the two functions goes through the passes in its own
 * files. */
static void test_dump_precompute(void **st) {
    (void)st;
    char dir[] = "/tmp/loom-dump-XXXXXX";
    assert_non_null(mkdtemp(dir));
    te_ctx *ctx = te_ctx_new();
    te_tensor *a = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(16));
    te_tensor *w = te_placeholder(ctx, "W", TE_FLOAT32, TE_SHAPE(16));
    te_expr *i = te_axis(ctx, "i", 16), *j = te_axis(ctx, "j", 16);
    te_tensor *w2 = te_compute(ctx, "W2", TE_AXES(i), te_mul(te_read(w, i), te_float(ctx, 2)));
    te_tensor *c = te_compute(ctx, "C", TE_AXES(j), te_add(te_read(a, j), te_read(w2, j)));
    sch_schedule *s = sch_create(ctx, 1, &c);
    assert_non_null(s);
    assert_int_equal(setenv("LOOM_DUMP_IR", dir, 1), 0);
    sch_lowered r;
    sch_lower_options o = {.name = "pc", .constant_args = 2};
    assert_int_equal(sch_lower_program(s, 3, (te_tensor *[]){a, w, c}, &o, &r), 0);
    unsetenv("LOOM_DUMP_IR");
    assert_non_null(r.precompute);
    assert_int_equal(r.nstages, 1);
    static const char *const pc[] = {
        "check_arguments", "inline",          "precompute_split", "bound_inference",
        "check_attach",    "buffers",         "schedule_ops",     "storage_flatten",
        "simplify",        "loop_partition",  "simplify",         "remove_noop",
        "vectorize",       "unroll",          "storage_rewrite",  "simplify",
        "remove_noop", "double_buffer"};
    expect_steps(dir, "pc-", pc, sizeof pc / sizeof pc[0]);
    expect_steps(dir, "pc__precompute-", pc + 6, sizeof pc / sizeof pc[0] - 6);
    char path[512];
    snprintf(path, sizeof path, "%s/pc-02-precompute_split.txt", dir);
    char *got = slurp(path);
    assert_string_equal(got, "pre-computed: W2\n");
    free(got);
    clean(dir);
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
        cmocka_unit_test(test_dump_flags),
        cmocka_unit_test(test_dump_precompute),
        cmocka_unit_test(test_unwritable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
