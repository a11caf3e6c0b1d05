/*
 * tests/test_target.c — cg_target: the one parser and printer of target
 * strings (round trips of the canonical forms, every refusal's message,
 * the vector width of a few CPUs), and the tuning database's target keys,
 * which must stay those existing databases hold.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static bool host_is_x86(void) {
    cg_target t;
    assert_int_equal(cg_target_parse("llvm", &t, NULL), 0);
    bool x86 = !strncmp(t.triple, "x86_64", 6);
    cg_target_free(&t);
    return x86;
}

/* parse(s) prints back as want. */
static void expect_prints(const char *s, const char *want) {
    cg_target t;
    char *err = NULL;
    if (cg_target_parse(s, &t, &err)) fail_msg("'%s' refused: %s", s, err);
    char *got = cg_target_str(&t);
    assert_non_null(got);
    if (strcmp(got, want)) fail_msg("'%s' printed '%s', not '%s'", s, got, want);
    /* and the canonical text parses to the same value */
    cg_target u;
    assert_int_equal(cg_target_parse(got, &u, NULL), 0);
    char *again = cg_target_str(&u);
    assert_string_equal(again, got);
    assert_int_equal(u.kind, t.kind);
    assert_int_equal(u.vector_lanes, t.vector_lanes);
    free(again);
    free(got);
    cg_target_free(&u);
    cg_target_free(&t);
}

static void test_round_trip(void **state) {
    (void)state;
    expect_prints(NULL, "llvm");
    expect_prints("llvm", "llvm");
    expect_prints("llvm  ", "llvm");
    expect_prints("llvm -mcpu=x86-64-v3", "llvm -mcpu=x86-64-v3");
    expect_prints("c", "c");
    expect_prints("cuda", "cuda");
    expect_prints("cuda -arch=sm_90a", "cuda -arch=sm_90a");
    /* a GPU's database key, as tdb_cuda_target writes it */
    expect_prints("cuda sm_90 NVIDIA H100 80GB HBM3", "cuda sm_90 NVIDIA H100 80GB HBM3");
    expect_prints("cuda sm_80", "cuda -arch=sm_80");
    if (host_is_x86()) {
        expect_prints("llvm -mattr=+avx2", "llvm -mattr=+avx2");
        expect_prints("llvm -mcpu=skylake -mattr=+avx2,-fma",
                      "llvm -mcpu=skylake -mattr=+avx2,-fma");
        /* -mcpu first, whatever the order given */
        expect_prints("llvm -mattr=+avx2  -mcpu=skylake", "llvm -mcpu=skylake -mattr=+avx2");
    }

    cg_target t;
    assert_int_equal(cg_target_parse("llvm -mcpu=x86-64-v3", &t, NULL), 0);
    assert_int_equal(t.kind, CG_TARGET_LLVM);
    assert_string_equal(t.cpu, "x86-64-v3");
    assert_null(t.features);
    assert_null(t.arch);
    assert_non_null(t.triple);
    assert_true(strchr(t.triple, '-') != NULL);
    cg_target_free(&t);
    assert_null(t.cpu);
    assert_int_equal(cg_target_parse("cuda sm_90 Test GPU", &t, NULL), 0);
    assert_int_equal(t.kind, CG_TARGET_CUDA);
    assert_string_equal(t.arch, "sm_90");
    assert_string_equal(t.device, "Test GPU");
    assert_null(t.triple);
    assert_null(t.cpu);
    cg_target_free(&t);
    assert_int_equal(cg_target_parse("c", &t, NULL), 0);
    assert_int_equal(t.kind, CG_TARGET_C);
    assert_null(t.triple);
    cg_target_free(&t);
    cg_target_free(NULL);
    assert_null(cg_target_str(NULL));
}

/* cg_target_parse refuses s with a message holding each substring, and
 * leaves its result zeroed. */
#define expect_refused(s, ...)                                                          \
    do {                                                                                \
        cg_target t_;                                                                   \
        memset(&t_, 0x55, sizeof t_);                                                   \
        char *err_ = NULL;                                                              \
        assert_int_equal(cg_target_parse((s), &t_, &err_), -1);                         \
        assert_non_null(err_);                                                          \
        tu_assert_msg_has(err_, __VA_ARGS__);                                           \
        free(err_);                                                                     \
        assert_null(t_.cpu);                                                            \
        assert_null(t_.triple);                                                         \
        assert_null(t_.arch);                                                           \
        assert_int_equal(cg_target_parse((s), &t_, NULL), -1);                          \
    } while (0)

static void test_refusals(void **state) {
    (void)state;
    /* kind */
    expect_refused("opencl", "unknown target 'opencl' (known: llvm [-mcpu=NAME]", "c, cuda");
    expect_refused("", "unknown target ''");
    expect_refused("cudax", "unknown target 'cudax'");
    expect_refused(" llvm", "unknown target ' llvm'");
    /* options */
    expect_refused("llvm -O3", "target 'llvm -O3': unknown option '-O3'", "-mcpu=NAME and -mattr");
    expect_refused("llvm -arch=sm_90", "unknown option '-arch=sm_90'");
    expect_refused("llvm skylake", "unknown option 'skylake'");
    expect_refused("c -O3", "target 'c -O3': unknown option '-O3'",
                   "the c target takes no options");
    expect_refused("cuda -mcpu=x", "unknown option '-mcpu=x'",
                   "the only cuda option is -arch=sm_XX");
    /* duplicated, empty */
    expect_refused("llvm -mcpu=a -mcpu=b", "target 'llvm -mcpu=a -mcpu=b': -mcpu is given twice");
    expect_refused("llvm -mattr=+avx -mattr=+avx2", "-mattr is given twice");
    expect_refused("cuda -arch=sm_80 -arch=sm_90", "-arch is given twice");
    expect_refused("llvm -mcpu=", "-mcpu has no value");
    expect_refused("cuda -arch=", "-arch has no value");
    /* architecture */
    expect_refused("cuda -arch=gfx90a", "target 'cuda -arch=gfx90a': architecture 'gfx90a' is not "
                                        "sm_XX (sm_80, sm_90a, ...)");
    expect_refused("cuda -arch=sm_", "architecture 'sm_' is not sm_XX");
    expect_refused("cuda -arch=sm_90ab", "architecture 'sm_90ab'");
    expect_refused("cuda sm_ Test GPU", "target 'cuda sm_ Test GPU': 'sm_' is neither an option",
                   "-arch=sm_XX", "'cuda sm_90 NAME'");
    expect_refused("cuda gfx90a", "'gfx90a' is neither an option");
    /* LLVM's tables */
    char host_msg[256], *host = cg_llvm_host_cpu();
    snprintf(host_msg, sizeof host_msg, "(this host's CPU is '%s')", host);
    expect_refused("llvm -mcpu=notacpu", "target 'llvm -mcpu=notacpu': unknown CPU 'notacpu' for ",
                   host_msg);
    free(host);
    expect_refused("llvm -mattr=+notafeature", "target 'llvm -mattr=+notafeature': unknown "
                                               "feature '+notafeature' for ");
    expect_refused("llvm -mattr=avx2", "feature 'avx2' needs a '+' (enable) or '-' (disable)");
}

static int lanes_of(const char *s) {
    cg_target t;
    char *err = NULL;
    if (cg_target_parse(s, &t, &err)) fail_msg("'%s' refused: %s", s, err);
    int n = t.vector_lanes;
    cg_target_free(&t);
    return n;
}

/* The host's features as LLVM lists them ("+avx2,-avx512f,..."): has
 * item +name exactly. */
static bool host_has(const char *name) {
    char *f = cg_llvm_host_features(), item[64];
    snprintf(item, sizeof item, "+%s", name);
    bool has = false;
    for (char *p = f; p && *p;) {
        size_t n = strcspn(p, ",");
        if (n == strlen(item) && !strncmp(p, item, n)) has = true;
        p += n + (p[n] == ',');
    }
    free(f);
    return has;
}

static void test_vector_lanes(void **state) {
    (void)state;
    int host = host_has("avx512f") ? 16 : host_has("avx") ? 8 : 4;
    if (!host_is_x86()) host = 4;
    assert_int_equal(lanes_of("llvm"), host);
    assert_int_equal(lanes_of("c"), host);
    assert_int_equal(tune_host_vector_lanes(), host);
    assert_int_equal(lanes_of("cuda"), 4);
    assert_int_equal(lanes_of("cuda -arch=sm_90"), 4);
    assert_int_equal(tune_target_vector_bytes("cuda"), 16);
    assert_int_equal(tune_target_vector_bytes("llvm"), 4 * host);
    if (!host_is_x86()) return;
    /* a named CPU's own features, not the host's */
    assert_int_equal(lanes_of("llvm -mcpu=skylake-avx512"), 16);
    assert_int_equal(lanes_of("llvm -mcpu=haswell"), 8);
    assert_int_equal(lanes_of("llvm -mcpu=sandybridge"), 8); /* AVX without AVX2 */
    assert_int_equal(lanes_of("llvm -mcpu=nehalem"), 4);
    assert_int_equal(lanes_of("llvm -mcpu=x86-64"), 4);
    /* -mattr applies after the CPU's features, implications included */
    assert_int_equal(lanes_of("llvm -mcpu=skylake-avx512 -mattr=-avx512f"), 8);
    assert_int_equal(lanes_of("llvm -mcpu=skylake-avx512 -mattr=-avx"), 4);
    assert_int_equal(lanes_of("llvm -mcpu=nehalem -mattr=+avx"), 8);
    assert_int_equal(lanes_of("llvm -mcpu=haswell -mattr=+avx512f"), 16);
}

/* The keys records are filed under are those existing databases hold. */
static void test_keys_unchanged(void **state) {
    (void)state;
    char *cpu = cg_llvm_host_cpu(), want[300], *err = NULL;
    snprintf(want, sizeof want, "llvm -mcpu=%s", *cpu ? cpu : "generic");
    free(cpu);
    char *k = tdb_host_target();
    assert_string_equal(k, want);
    free(k);
    k = tune_target_key("llvm", &err);
    assert_string_equal(k, want);
    free(k);
    k = tune_target_key("llvm -mcpu=x86-64-v3", &err);
    if (host_is_x86()) {
        assert_string_equal(k, "llvm -mcpu=x86-64-v3");
        free(k);
        k = tune_target_key("llvm -mcpu=skylake -mattr=+avx2,-fma", &err);
        assert_string_equal(k, "llvm -mcpu=skylake -mattr=+avx2,-fma");
        free(k);
        k = tune_target_key("llvm -mattr=+avx2", &err);
        assert_string_equal(k, "llvm -mattr=+avx2");
    }
    free(k);
    /* a GPU's key, as tdb_cuda_target wrote it ("cuda sm_%d%d %s") */
    char name[] = "NVIDIA H100 80GB HBM3", arch[] = "sm_90";
    cg_target g = {.kind = CG_TARGET_CUDA, .arch = arch, .device = name};
    k = cg_target_str(&g);
    assert_string_equal(k, "cuda sm_90 NVIDIA H100 80GB HBM3");
    free(k);
    k = tdb_cuda_target(0);
    if (k) {
        rt_cuda_props p;
        assert_int_equal(rt_cuda_get_props(0, &p), 0);
        snprintf(want, sizeof want, "cuda sm_%d%d %s", p.cc_major, p.cc_minor, p.name);
        assert_string_equal(k, want);
        assert_true(tune_target_is_cuda(k));
        free(k);
    }

    /* records are kept per thread count: one thread and GPUs keep the key */
    k = tune_threads_key("llvm -mcpu=znver4", 1);
    assert_string_equal(k, "llvm -mcpu=znver4");
    free(k);
    k = tune_threads_key("llvm -mcpu=znver4", 16);
    assert_string_equal(k, "llvm -mcpu=znver4 -num-cores 16");
    free(k);
    k = tune_threads_key("cuda sm_90 NVIDIA H100 80GB HBM3", 16);
    assert_string_equal(k, "cuda sm_90 NVIDIA H100 80GB HBM3");
    free(k);
    assert_null(tune_threads_key(NULL, 2));
    assert_int_equal(tdb_key_machine_len("llvm -mcpu=znver4 -num-cores 16"), 17);
    assert_int_equal(tdb_key_machine_len("llvm -mcpu=znver4"), 17);
    assert_int_equal(tdb_key_machine_len("cuda sm_90 H"), 12);
    k = tune_record_key("llvm", 3, &err);
    char *plain = tune_target_key("llvm", &err), want3[300];
    snprintf(want3, sizeof want3, "%s -num-cores 3", plain);
    assert_string_equal(k, want3);
    free(k);
    k = tune_record_key("llvm", 0, &err); /* the pool's count */
    char *def = tune_threads_key(plain, rt_num_threads());
    assert_string_equal(k, def);
    free(k), free(def), free(plain);
    assert_null(tune_record_key("tpu", 2, &err));
    tu_assert_msg_has(err, "autotune: unknown target 'tpu'");
    free(err);

    /* refused keys */
    assert_null(tune_target_key("c", &err));
    tu_assert_msg_has(err, "autotune: target 'c' cannot be tuned (known: llvm, cuda)");
    free(err);
    assert_null(tune_target_key("tpu", &err));
    tu_assert_msg_has(err, "autotune: unknown target 'tpu'");
    free(err);
    assert_null(tune_target_key("llvm -mcpu=bogus", &err));
    tu_assert_msg_has(err, "autotune: target 'llvm -mcpu=bogus': unknown CPU 'bogus'");
    free(err);
    assert_null(tune_target_key(NULL, &err));
    tu_assert_msg_has(err, "autotune: no target");
    free(err);
}

/* The places that took a target string apart by hand now parse it. */
static void test_users_parse(void **state) {
    (void)state;
    assert_true(tune_target_is_cuda("cuda sm_90 Test GPU"));
    assert_true(tune_target_is_cuda("cuda -arch=sm_80"));
    assert_false(tune_target_is_cuda("cuda -O3")); /* not a target at all */
    assert_false(tune_target_is_cuda("cuda sm_x"));
    assert_false(tune_target_is_cuda(NULL));
    te_ctx *ctx = te_ctx_new();
    ops_workload *w = ops_build(ctx, "relu", "D0=64");
    assert_non_null(w);
    /* an unknown CPU was taken (and the host's width used) */
    assert_null(ops_default_schedule(w, "llvm -mcpu=notacpu"));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "ops: relu: no default schedule for target 'llvm "
                                          "-mcpu=notacpu': unknown CPU 'notacpu'");
    assert_null(ops_default_schedule(w, "llvm -O3"));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "unknown option '-O3'");
    assert_non_null(ops_default_schedule(w, "cuda sm_90 Test GPU"));
    tune_workload tw;
    assert_int_equal(tune_build_workload(ctx, "relu(D0=64)", &tw), 0);
    assert_null(tune_default_schedule(ctx, &tw, "llvm -mcpu=notacpu", NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "autotune: tune_default_schedule: target 'llvm "
                                          "-mcpu=notacpu': unknown CPU");
    assert_non_null(tune_default_schedule(ctx, &tw, "c", NULL));
    te_ctx_free(ctx);

    /* the measurer refuses a malformed target before starting a runner */
    char *err = NULL;
    assert_null(tune_measurer_new("relu(D0=64)", "llvm -O3", NULL, &err));
    tu_assert_msg_has(err, "autotune: target 'llvm -O3': unknown option '-O3'");
    free(err);
    err = NULL;
    assert_null(tune_measurer_new("relu(D0=64)", "c", NULL, &err));
    tu_assert_msg_has(err, "target 'c' cannot be measured here");
    free(err);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_vector_lanes),
        cmocka_unit_test(test_keys_unchanged),
        cmocka_unit_test(test_users_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
