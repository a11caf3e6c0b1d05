/*
 * One test per schedule misuse: each returns an error (never aborts),
 * leaves the schedule unchanged, and says which object broke which rule.
 */
#include <stdlib.h>

#include "sched_harness.h"

typedef struct {
    te_ctx *ctx;
    sched_case mm;
    sch_schedule *s;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->ctx = te_ctx_new();
    f->mm = sh_matmul(f->ctx, 32, 24, 16);
    f->s = sch_create(f->ctx, 1, &f->mm.out);
    *state = f;
    return f->s ? 0 : -1;
}

static int teardown(void **state) {
    fixture *f = *state;
    te_ctx_free(f->ctx);
    free(f);
    return 0;
}

#define EXPECT_FAIL(f, call, ...)                                                           \
    do {                                                                                    \
        int n0_ = sch_num_steps((f)->s);                                                    \
        te_ctx_clear_error((f)->ctx);                                                       \
        assert_true((call) != 0);                                                           \
        tu_assert_msg_has(te_ctx_errmsg((f)->ctx), __VA_ARGS__);                            \
        assert_int_equal(sch_num_steps((f)->s), n0_);                                       \
    } while (0)
#define EXPECT_NULL(f, call, ...)                                                           \
    do {                                                                                    \
        te_ctx_clear_error((f)->ctx);                                                       \
        assert_null(call);                                                                  \
        tu_assert_msg_has(te_ctx_errmsg((f)->ctx), __VA_ARGS__);                            \
    } while (0)

static void test_split_factor(void **state) {
    fixture *f = *state;
    te_expr *o, *i;
    EXPECT_FAIL(f, sch_split(f->s, f->mm.out, f->mm.ax[0], 0, &o, &i), "split", "factor 0",
                "'i'", "'C'", "positive");
    EXPECT_FAIL(f, sch_split_nparts(f->s, f->mm.out, f->mm.ax[0], -2, &o, &i), "nparts -2",
                "positive");
}

static void test_unknown_axis(void **state) {
    fixture *f = *state;
    te_ctx *ctx = f->ctx;
    te_expr *stray = te_axis(ctx, "q", 8);
    EXPECT_FAIL(f, sch_split(f->s, f->mm.out, stray, 2, NULL, NULL), "split", "'q'",
                "not a loop of stage 'C'", "i, j, k");
    /* an axis of another stage */
    sched_case ch = sh_chain(ctx, 4, 4);
    sch_schedule *s2 = sch_create(ctx, 1, &ch.out);
    te_ctx_clear_error(ctx);
    assert_int_equal(sch_split(s2, ch.out, ch.mid->axes[0], 2, NULL, NULL), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "belongs to stage 'B'", "not to stage 'C'");
    /* an axis split away */
    te_expr *o, *i;
    assert_int_equal(sch_split(f->s, f->mm.out, f->mm.ax[0], 4, &o, &i), 0);
    EXPECT_FAIL(f, sch_vectorize(f->s, f->mm.out, f->mm.ax[0]), "vectorize", "'i'",
                "already split or fused");
}

static void test_fuse_rules(void **state) {
    fixture *f = *state;
    te_expr *fz;
    EXPECT_FAIL(f, sch_fuse(f->s, f->mm.out, 2, (te_expr *[]){f->mm.ax[0], f->mm.rax[0]}, &fz),
                "fuse", "not adjacent");
    EXPECT_FAIL(f, sch_fuse(f->s, f->mm.out, 2, (te_expr *[]){f->mm.ax[1], f->mm.rax[0]}, &fz),
                "fuse", "cannot fuse data-parallel axis 'j' with reduce axis 'k'");
    EXPECT_FAIL(f, sch_fuse(f->s, f->mm.out, 1, (te_expr *[]){f->mm.ax[1]}, &fz), "at least 2");
}

static void test_reorder_repeated(void **state) {
    fixture *f = *state;
    EXPECT_FAIL(f, sch_reorder(f->s, f->mm.out, 2, (te_expr *[]){f->mm.ax[0], f->mm.ax[0]}),
                "reorder", "'i'", "more than once");
}

static void test_annotation_rules(void **state) {
    fixture *f = *state;
    EXPECT_FAIL(f, sch_vectorize(f->s, f->mm.out, f->mm.rax[0]), "vectorize", "'k'",
                "reduce axis");
    EXPECT_FAIL(f, sch_parallel(f->s, f->mm.out, f->mm.rax[0]), "parallel", "reduce axis");
    EXPECT_FAIL(f, sch_bind(f->s, f->mm.out, f->mm.ax[0], "warpIdx.x"), "bind", "warpIdx.x",
                "threadIdx");
    assert_int_equal(sch_parallel(f->s, f->mm.out, f->mm.ax[0]), 0);
    EXPECT_FAIL(f, sch_vectorize(f->s, f->mm.out, f->mm.ax[0]), "vectorize",
                "already annotated parallel");
    EXPECT_FAIL(f, sch_pragma(f->s, f->mm.out, f->mm.ax[1], "loop_magic", 1), "pragma",
                "unknown pragma 'loop_magic'");
    EXPECT_FAIL(f, sch_pragma(f->s, f->mm.out, f->mm.ax[1], "auto_unroll_max_step", -4),
                "must be >= 0");
    EXPECT_FAIL(f, sch_pragma(f->s, f->mm.out, f->mm.ax[1], "unroll_explicit", 3),
                "must be 0 or 1");
}

static void test_compute_location_rules(void **state) {
    fixture *f = *state;
    te_ctx *ctx = f->ctx;
    sched_case ch = sh_chain(ctx, 8, 8);
    sch_schedule *s = sch_create(ctx, 1, &ch.out);
    te_ctx_clear_error(ctx);
    /* A does not consume B: B is consumed by C only */
    assert_int_equal(sch_compute_at(s, ch.out, ch.mid, ch.mid->axes[0]), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "compute_at", "'C'", "output");
    te_ctx_clear_error(ctx);
    assert_int_equal(sch_compute_at(s, ch.in[0], ch.out, ch.ax[0]), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "compute_at", "'A'", "placeholder");
    /* the matmul does not read the chain's B */
    EXPECT_FAIL(f, sch_compute_inline(f->s, f->mm.out), "compute_inline", "'C'", "output");
    te_ctx_clear_error(ctx);
    assert_int_equal(sch_compute_at(s, ch.mid, ch.mid, ch.mid->axes[0]), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "own loop");

    /* a consumer that does not read the tensor */
    te_tensor *A = te_placeholder(ctx, "A2", TE_FLOAT32, TE_SHAPE(8));
    te_expr *i = te_axis(ctx, "i", 8), *j = te_axis(ctx, "j", 8), *k = te_axis(ctx, "kk", 8);
    te_tensor *B = te_compute(ctx, "B2", TE_AXES(i), te_read(A, i));
    te_tensor *C = te_compute(ctx, "C2", TE_AXES(j), te_read(B, j));
    te_tensor *D = te_compute(ctx, "D2", TE_AXES(k), te_add(te_read(C, k), te_read(B, k)));
    sch_schedule *s3 = sch_create(ctx, 1, &D);
    te_ctx_clear_error(ctx);
    assert_int_equal(sch_compute_at(s3, A, C, j), -1);
    te_ctx_clear_error(ctx);
    assert_int_equal(sch_compute_at(s3, C, B, i), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "stage 'B2' does not read tensor 'C2'");
    /* B is read by C and D: computing it inside C alone is an error at lowering */
    assert_int_equal(sch_compute_at(s3, B, C, j), 0);
    te_ctx_clear_error(ctx);
    assert_null(sch_lower(s3, TE_TENSORS(A, D), "f"));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "'B2'", "computed at stage 'C2'", "also read by stage 'D2'");
    /* through another stage: B2 computed at D2, which reads it through C2
     * (and directly); valid while C2 is computed inside that loop */
    sch_schedule *s5 = sch_create(ctx, 1, &D);
    assert_int_equal(sch_compute_at(s5, B, D, k), 0);
    te_ctx_clear_error(ctx);
    assert_null(sch_lower(s5, TE_TENSORS(A, D), "f"));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "'B2'", "computed at stage 'D2'",
                      "also read by stage 'C2'", "not computed inside that loop");
    assert_int_equal(sch_compute_at(s5, C, D, k), 0);
    assert_non_null(sch_lower(s5, TE_TENSORS(A, D), "f"));
    /* read only through a stage computed outside the loop */
    te_tensor *A7 = te_placeholder(ctx, "A7", TE_FLOAT32, TE_SHAPE(8));
    te_expr *i7 = te_axis(ctx, "i7", 8), *j7 = te_axis(ctx, "j7", 8), *k7 = te_axis(ctx, "k7", 8);
    te_tensor *B7 = te_compute(ctx, "B7", TE_AXES(i7), te_read(A7, i7));
    te_tensor *C7 = te_compute(ctx, "C7", TE_AXES(j7), te_read(B7, j7));
    te_tensor *D7 = te_compute(ctx, "D7", TE_AXES(k7), te_read(C7, k7));
    sch_schedule *s7 = sch_create(ctx, 1, &D7);
    assert_int_equal(sch_compute_at(s7, B7, D7, k7), 0);
    te_ctx_clear_error(ctx);
    assert_null(sch_lower(s7, TE_TENSORS(A7, D7), "f"));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "'B7'", "computed at stage 'D7'",
                      "nothing inside that loop reads it");
    /* no path from the target back to the stage */
    te_tensor *A6 = te_placeholder(ctx, "A6", TE_FLOAT32, TE_SHAPE(8));
    te_expr *i6 = te_axis(ctx, "i6", 8), *j6 = te_axis(ctx, "j6", 8);
    te_tensor *B6 = te_compute(ctx, "B6", TE_AXES(i6), te_read(A6, i6));
    te_tensor *C6 = te_compute(ctx, "C6", TE_AXES(j6), te_read(A6, j6));
    te_tensor *outs6[2] = {B6, C6};
    sch_schedule *s6 = sch_create(ctx, 2, outs6);
    te_tensor *B6c = sch_cache_write(s6, B6, "global");
    assert_non_null(B6c);
    te_ctx_clear_error(ctx);
    assert_int_equal(sch_compute_at(s6, B6c, C6, j6), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "stage 'C6' does not read tensor", "directly or through");
    /* a reduction cannot be inlined */
    sched_case mm2 = sh_matmul(ctx, 4, 4, 4);
    te_expr *x = te_axis(ctx, "x", 4), *y = te_axis(ctx, "y", 4);
    te_tensor *E = te_compute(ctx, "E", TE_AXES(x, y), te_read(mm2.out, x, y));
    sch_schedule *s4 = sch_create(ctx, 1, &E);
    te_ctx_clear_error(ctx);
    assert_int_equal(sch_compute_inline(s4, mm2.out), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "compute_inline", "'C'", "reduction");
    /* an attach axis split away afterwards */
    te_expr *xo, *xi;
    assert_int_equal(sch_compute_at(s4, mm2.out, E, x), 0);
    assert_int_equal(sch_split(s4, E, x, 2, &xo, &xi), 0);
    te_ctx_clear_error(ctx);
    assert_null(sch_lower(s4, TE_TENSORS(mm2.in[0], mm2.in[1], E), "f"));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "'C'", "axis 'x'", "later split or fused");
}

static void test_cache_rules(void **state) {
    fixture *f = *state;
    EXPECT_NULL(f, sch_cache_write(f->s, f->mm.in[0], "local"), "cache_write", "'A'",
                "placeholder");
    EXPECT_NULL(f, sch_cache_write(f->s, f->mm.out, "texture"), "cache_write", "'texture'",
                "global, local, shared");
    EXPECT_NULL(f, sch_cache_read(f->s, f->mm.in[0], "local", 1, &f->mm.in[1]), "cache_read",
                "stage 'B' does not read tensor 'A'");
    te_expr *o, *i;
    assert_int_equal(sch_split(f->s, f->mm.out, f->mm.ax[0], 4, &o, &i), 0);
    EXPECT_NULL(f, sch_cache_write(f->s, f->mm.out, "local"), "cache_write", "'C'",
                "already been scheduled");
}

static void test_rfactor_rules(void **state) {
    fixture *f = *state;
    EXPECT_NULL(f, sch_rfactor(f->s, f->mm.out, f->mm.ax[0], 0), "rfactor", "'i'",
                "data-parallel", "reduce axis");
    EXPECT_NULL(f, sch_rfactor(f->s, f->mm.out, f->mm.rax[0], 7), "rfactor", "factor_axis 7");
}

/* P[i, k] = A[i, k] + 1; C[i] = sum_k P[i, k]; D[i] = C[i] * 2 */
static void row_sum_ref(const sched_case *c, DLTensor *const *ins, double *out) {
    const float *a = ins[0]->data;
    for (int64_t i = 0; i < c->p[0]; i++) {
        double acc = 0;
        for (int64_t k = 0; k < c->p[1]; k++) acc += (double)a[i * c->p[1] + k] + 1;
        out[i] = acc * 2;
    }
}

static sched_case row_sum(te_ctx *ctx) {
    sched_case c = {.ctx = ctx, .nin = 1, .reference = row_sum_ref, .p = {16, 32}};
    c.in[0] = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(16, 32));
    te_expr *pi = te_axis(ctx, "pi", 16), *pk = te_axis(ctx, "pk", 32);
    c.mid = te_compute(ctx, "P", TE_AXES(pi, pk),
                       te_add(te_read(c.in[0], pi, pk), te_float(ctx, 1)));
    te_expr *i = te_axis(ctx, "i", 16), *k = te_reduce_axis(ctx, "k", 32);
    c.in[1] = te_compute(ctx, "C", TE_AXES(i), te_sum(te_read(c.mid, i, k), k));
    c.ax[0] = te_axis(ctx, "d", 16);
    c.out = te_compute(ctx, "D", TE_AXES(c.ax[0]), te_mul(te_read(c.in[1], c.ax[0]), te_float(ctx, 2)));
    c.rax[0] = k;
    return c;
}

/* rfactor rebuilds a stage: after compute_at of that stage (or of a stage
 * into its loops) it is refused, by the primitive and in a replayed log,
 * instead of dropping the compute location or failing later in lowering
 * with a message about another stage. */
static void test_rfactor_after_compute_at(void **state) {
    fixture *f = *state;
    te_ctx *ctx = f->ctx;
    sched_case c = row_sum(ctx);
    te_tensor *C = c.in[1];
    te_expr *ko, *ki;

    /* the stage itself was attached */
    sch_schedule *s1 = sch_create(ctx, 1, &c.out);
    assert_int_equal(sch_compute_at(s1, C, c.out, c.ax[0]), 0);
    assert_int_equal(sch_split(s1, C, c.rax[0], 4, &ko, &ki), 0);
    int n1 = sch_num_steps(s1);
    te_ctx_clear_error(ctx);
    assert_null(sch_rfactor(s1, C, ki, 0));
    assert_string_equal(te_ctx_errmsg(ctx),
                        "rfactor: stage 'C' was attached by compute_at to loop 'd' of stage 'D', "
                        "which rfactor would drop; rfactor a stage before compute_at");
    assert_int_equal(sch_num_steps(s1), n1);
    assert_int_equal(sch_num_stages(s1), 4);

    /* a producer was attached to the stage's loops */
    sch_schedule *s2 = sch_create(ctx, 1, &c.out);
    assert_int_equal(sch_split(s2, C, c.rax[0], 4, &ko, &ki), 0);
    assert_int_equal(sch_compute_at(s2, c.mid, C, ko), 0);
    te_ctx_clear_error(ctx);
    assert_null(sch_rfactor(s2, C, ki, 0));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "rfactor: stage 'P' is computed (compute_at) at loop "
                                          "'k.outer' of stage 'C'",
                      "rfactor 'C' before compute_at");

    /* the other order is fine and computes the right thing */
    sch_schedule *s3 = sch_create(ctx, 1, &c.out);
    assert_int_equal(sch_split(s3, C, c.rax[0], 4, &ko, &ki), 0);
    assert_non_null(sch_rfactor(s3, C, ki, 0));
    const sch_step rf_step = *sch_get_step(s3, 1);
    assert_int_equal(rf_step.kind, SCH_STEP_RFACTOR);
    assert_int_equal(sch_compute_at(s3, C, c.out, c.ax[0]), 0);
    assert_int_equal(sh_run(&c, s3, "llvm"), 0);

    /* a log with the bad order (compute_at, split, rfactor), replayed
     * directly and through its JSON form, fails at the rfactor step */
    sch_step bad[3] = {*sch_get_step(s1, 0), *sch_get_step(s1, 1), rf_step};
    te_ctx_clear_error(ctx);
    assert_null(sch_replay(ctx, 1, &c.out, 3, bad));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "replay: step 2 (rfactor) failed",
                      "stage 'C' was attached by compute_at to loop 'd' of stage 'D'");
    char *json = tdb_steps_to_json(3, bad);
    assert_non_null(json);
    int ns = 0;
    sch_step *parsed = NULL;
    assert_int_equal(tdb_steps_from_json(ctx, json, &ns, &parsed), 0);
    free(json);
    te_ctx_clear_error(ctx);
    assert_null(sch_replay(ctx, 1, &c.out, ns, parsed));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "replay: step 2 (rfactor) failed",
                      "rfactor a stage before compute_at");
}

static void test_storage_align_rules(void **state) {
    fixture *f = *state;
    EXPECT_FAIL(f, sch_storage_align(f->s, f->mm.out, f->mm.ax[0], 0, 0), "storage_align",
                "factor 0", "positive");
    EXPECT_FAIL(f, sch_storage_align(f->s, f->mm.out, f->mm.ax[0], 8, 9), "offset 9",
                "[0, factor)");
    EXPECT_FAIL(f, sch_storage_align(f->s, f->mm.out, f->mm.rax[0], 8, 1),
                "not a data-parallel root axis");
}

static void test_pack_rules(void **state) {
    fixture *f = *state;
    te_tensor *B = f->mm.in[1];
    EXPECT_NULL(f, sch_pack(f->s, B, NULL, 4), "pack", "not a data-parallel root axis");
    te_tensor *BG = sch_cache_read(f->s, B, "global", 1, &f->mm.out);
    assert_non_null(BG);
    EXPECT_NULL(f, sch_pack(f->s, f->mm.out, f->mm.ax[1], 4), "pack", "'C' is an output",
                "cache_write");
    EXPECT_NULL(f, sch_pack(f->s, BG, sch_axis(BG, 1), 5), "factor 5", "divide the extent 24",
                "'B.global'");
    EXPECT_NULL(f, sch_pack(f->s, BG, sch_axis(BG, 1), 0), "factor 0", "positive");
    EXPECT_NULL(f, sch_pack(f->s, BG, f->mm.ax[1], 4), "axis 'j'",
                "not a data-parallel root axis of stage 'B.global'");
    te_expr *o, *i;
    assert_int_equal(sch_split(f->s, BG, sch_axis(BG, 0), 4, &o, &i), 0);
    EXPECT_NULL(f, sch_pack(f->s, BG, sch_axis(BG, 1), 4), "stage 'B.global'",
                "already been scheduled", "before any other primitive");
    /* A placeholder is refused, by step as by handle. */
    sch_step st = {.kind = SCH_STEP_PACK, .stage = sch_stage_of(f->s, B), .iter = 0, .value = 4};
    EXPECT_FAIL(f, sch_apply_step(f->s, &st), "'B' is a placeholder", "cache_read");
}

static void test_build_args(void **state) {
    fixture *f = *state;
    te_ctx *ctx = f->ctx;
    te_ctx_clear_error(ctx);
    assert_null(cg_build(f->s, TE_TENSORS(f->mm.in[0], f->mm.out), "llvm", NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "miss input 'B'");
    te_ctx_clear_error(ctx);
    assert_null(cg_build(f->s, TE_TENSORS(f->mm.in[0], f->mm.in[1]), "llvm", NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "miss output 'C'");
    te_ctx_clear_error(ctx);
    assert_null(cg_build(f->s, TE_TENSORS(f->mm.in[0], f->mm.in[0], f->mm.out), "llvm", NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "'A' is passed twice");
    te_ctx_clear_error(ctx);
    assert_null(cg_build(f->s, TE_TENSORS(f->mm.in[0], f->mm.in[1], f->mm.out), "opencl", NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "unknown target 'opencl'");
    /* a bound axis cannot run on the CPU */
    assert_int_equal(sch_bind(f->s, f->mm.out, f->mm.ax[0], "blockIdx.x"), 0);
    te_ctx_clear_error(ctx);
    assert_null(cg_build(f->s, TE_TENSORS(f->mm.in[0], f->mm.in[1], f->mm.out), "llvm", NULL));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "blockIdx.x");
}

static void test_create_rules(void **state) {
    fixture *f = *state;
    te_ctx_clear_error(f->ctx);
    assert_null(sch_create(f->ctx, 1, &f->mm.in[0]));
    tu_assert_msg_has(te_ctx_errmsg(f->ctx), "'A' is a placeholder");
    te_ctx_clear_error(f->ctx);
    assert_null(sch_create(f->ctx, 0, NULL));
    tu_assert_msg_has(te_ctx_errmsg(f->ctx), "at least one output");
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_split_factor),       T(test_unknown_axis),          T(test_fuse_rules),
        T(test_reorder_repeated),   T(test_annotation_rules),      T(test_compute_location_rules),
        T(test_cache_rules),        T(test_rfactor_rules),         T(test_storage_align_rules),
        T(test_pack_rules),         T(test_rfactor_after_compute_at),
        T(test_build_args),         T(test_create_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
