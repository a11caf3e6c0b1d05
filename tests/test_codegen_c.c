/*
 * tests/test_codegen_c.c — the C backend: the shared code generation
 * cases (codegen_cases.h) with what the C source must hold, and its own
 * error paths (compiler failure, GPU-bound loops and barriers).
 */
#include <string.h>

#include "codegen_cases.h"

static rt_module *c_build(te_ctx *ctx, int nfuncs, const tir_func *const *fs, int v) {
    return cg_c_build(ctx, nfuncs, fs, NULL);
}

/* What the C source of the shared cases holds. */
static void c_expect(cgc_id id, int v, rt_module *m) {
    const char *src = rt_module_get_text(m, "source");
    assert_non_null(src);
    switch (id) {
    case CGC_PARALLEL:
        tu_assert_msg_has(src, "rt_parallel_for(", "loom_par_0", "p_outer");
        assert_null(strstr(src, "loom_par_1")); /* the nested loop is not outlined */
        break;
    case CGC_ALLOCATE:
        tu_assert_msg_has(src, "aligned_alloc(64, 102400)", "_Alignas(64) float T_local[8]",
                          "free(G)");
        break;
    case CGC_FLOOR_DIV_MOD:
        tu_assert_msg_has(src, "loom_floordiv_i64(", "loom_floormod_i64(");
        break;
    default:
        break;
    }
}

static const cgc_backend c_backend = {"c", "source", 1, c_build, c_expect};

static void test_compile_errors(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    const tir_func *fs[1] = {cgc_tiny_func(ctx, TIR_FOR_SERIAL)};
    /* A macro that breaks the generated code: the compiler's own message
     * comes back in the error. */
    cg_c_options bad = {NULL, "-O0 -Dreturn=@"};
    assert_null(cg_c_build(ctx, 1, fs, &bad));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "c: the C compiler", "failed with exit status",
                      "kernel.c");
    cg_c_options nocc = {"/nonexistent/loom-cc", NULL};
    assert_null(cg_c_build(ctx, 1, fs, &nocc));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "cannot run the C compiler '/nonexistent/loom-cc'");
    /* and a good build still works with explicit options */
    cg_c_options ok = {"cc", "-O1"};
    rt_module *m = cg_c_build(ctx, 1, fs, &ok);
    assert_non_null(m);
    rt_module_free(m);
    te_ctx_free(ctx);
}

static void test_gpu_rejected(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    tir_func *f = cgc_tiny_func(ctx, TIR_FOR_THREAD);
    f->body->u.loop.thread_tag = "threadIdx.x";
    const tir_func *fs[1] = {f};
    assert_null(cg_c_source(ctx, 1, fs));
    assert_string_equal(te_ctx_errmsg(ctx),
                        "c: loop 'i.outer' is bound to threadIdx.x; the c target has no GPU threads");
    assert_null(cg_c_build(ctx, 1, fs, NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "threadIdx.x");

    tir_func *g = tir_func_with_body(ctx, f, tir_barrier(ctx));
    assert_non_null(g);
    const tir_func *gs[1] = {g};
    assert_null(cg_c_source(ctx, 1, gs));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "barrier", "no GPU threads");
    te_ctx_free(ctx);
}

int main(void) {
    static const struct CMUnitTest own[] = {
        cmocka_unit_test(test_compile_errors),
        cmocka_unit_test(test_gpu_rejected),
    };
    struct CMUnitTest tests[CGC_NCASES + sizeof own / sizeof *own];
    int n = cgc_add_tests(&c_backend, tests);
    memcpy(tests + n, own, sizeof own);
    return cgc_run_tests(tests, n + (int)(sizeof own / sizeof *own));
}
