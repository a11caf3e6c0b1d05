/*
 * Every schedule primitive, alone and combined, on shapes its factors
 * divide and shapes they do not, through both the LLVM and the C backend,
 * against double-precision references on fresh random data with the
 * output poisoned with NaN.
 */
#include <stdio.h>
#include <string.h>

#include "sched_harness.h"

typedef void (*mm_schedule_fn)(sch_schedule *s, sched_case *c);

static const int64_t mm_shapes[][3] = {{64, 48, 32}, {37, 45, 29}, {5, 3, 7}, {1, 17, 1}};
static const char *targets[] = {"llvm", "c"};

static void run_mm(mm_schedule_fn fn, int ntargets) {
    for (size_t si = 0; si < sizeof mm_shapes / sizeof *mm_shapes; si++) {
        for (int ti = 0; ti < ntargets; ti++) {
            te_ctx *ctx = te_ctx_new();
            sched_case c = sh_matmul(ctx, mm_shapes[si][0], mm_shapes[si][1], mm_shapes[si][2]);
            sch_schedule *s = sch_create(ctx, 1, &c.out);
            assert_non_null(s);
            fn(s, &c);
            if (te_ctx_errmsg(ctx)[0]) fprintf(stderr, "schedule: %s\n", te_ctx_errmsg(ctx));
            assert_string_equal(te_ctx_errmsg(ctx), "");
            int64_t bad = sh_run(&c, s, targets[ti]);
            if (bad) {
                fprintf(stderr, "shape %lldx%lldx%lld target %s\n%s\n",
                        (long long)mm_shapes[si][0], (long long)mm_shapes[si][1],
                        (long long)mm_shapes[si][2], targets[ti],
                        sch_lower_text(s, TE_TENSORS(c.in[0], c.in[1], c.out)));
            }
            assert_int_equal(bad, 0);
            te_ctx_free(ctx);
        }
    }
}

static void s_naive(sch_schedule *s, sched_case *c) { (void)s, (void)c; }

static void s_split(sch_schedule *s, sched_case *c) {
    te_expr *io, *ii;
    sch_split(s, c->out, c->ax[0], 8, &io, &ii);
}

static void s_split_nparts(sch_schedule *s, sched_case *c) {
    te_expr *jo, *ji, *ko, *ki;
    sch_split_nparts(s, c->out, c->ax[1], 3, &jo, &ji);
    sch_split(s, c->out, c->rax[0], 4, &ko, &ki);
}

static void s_tile_reorder(sch_schedule *s, sched_case *c) {
    te_expr *io, *jo, *ii, *ji, *ko, *ki;
    sch_tile(s, c->out, c->ax[0], c->ax[1], 8, 16, &io, &jo, &ii, &ji);
    sch_split(s, c->out, c->rax[0], 4, &ko, &ki);
    sch_reorder(s, c->out, 6, (te_expr *[]){io, jo, ko, ii, ki, ji});
}

static void s_fuse_parallel(sch_schedule *s, sched_case *c) {
    te_expr *io, *jo, *ii, *ji, *f;
    sch_tile(s, c->out, c->ax[0], c->ax[1], 4, 8, &io, &jo, &ii, &ji);
    sch_fuse(s, c->out, 2, (te_expr *[]){io, jo}, &f);
    sch_parallel(s, c->out, f);
}

static void s_vectorize_unroll(sch_schedule *s, sched_case *c) {
    te_expr *io, *jo, *ii, *ji;
    sch_tile(s, c->out, c->ax[0], c->ax[1], 4, 16, &io, &jo, &ii, &ji);
    sch_reorder(s, c->out, 5, (te_expr *[]){io, jo, c->rax[0], ii, ji});
    sch_unroll(s, c->out, ii);
    sch_vectorize(s, c->out, ji);
}

static void s_cache_write(sch_schedule *s, sched_case *c) {
    te_tensor *CL = sch_cache_write(s, c->out, "local");
    te_expr *io, *jo, *ii, *ji;
    sch_tile(s, c->out, c->ax[0], c->ax[1], 8, 16, &io, &jo, &ii, &ji);
    sch_parallel(s, c->out, io);
    sch_vectorize(s, c->out, ji);
    sch_compute_at(s, CL, c->out, jo);
    te_expr *ci = sch_axis(CL, 0), *cj = sch_axis(CL, 1), *ck = sch_reduce_axis(CL, 0);
    te_expr *ko, *ki;
    sch_split(s, CL, ck, 4, &ko, &ki);
    sch_reorder(s, CL, 4, (te_expr *[]){ko, ki, ci, cj});
    sch_unroll(s, CL, ci);
    sch_vectorize(s, CL, cj);
}

static void s_cache_read(sch_schedule *s, sched_case *c) {
    te_tensor *BL = sch_cache_read(s, c->in[1], "local", 1, &c->out);
    te_expr *io, *jo, *ii, *ji, *ko, *ki;
    sch_tile(s, c->out, c->ax[0], c->ax[1], 8, 8, &io, &jo, &ii, &ji);
    sch_split(s, c->out, c->rax[0], 4, &ko, &ki);
    sch_reorder(s, c->out, 6, (te_expr *[]){io, jo, ko, ii, ki, ji});
    sch_compute_at(s, BL, c->out, ko);
    sch_storage_align(s, BL, sch_axis(BL, 0), 8, 1);
}

/* The largest divisor of n not above 16: the pack factor. */
static int64_t pack_factor(int64_t n) {
    int64_t f = 16;
    while (n % f) f--;
    return f;
}

/* B packed [N/f, K, f] at the root; C's j tiled by f reads it as
 * contiguous panels. */
static void s_pack_root(sch_schedule *s, sched_case *c) {
    int64_t f = pack_factor(c->out->shape[1]);
    te_tensor *BG = sch_cache_read(s, c->in[1], "global", 1, &c->out);
    te_tensor *BP = sch_pack(s, BG, sch_axis(BG, 1), f);
    assert_non_null(BP);
    assert_int_equal(BP->ndim, 3);
    assert_int_equal(BP->shape[0] * BP->shape[2], c->out->shape[1]);
    sch_parallel(s, BP, sch_axis(BP, 0));
    sch_vectorize(s, BP, sch_axis(BP, 2));
    te_expr *io, *jo, *ii, *ji;
    sch_tile(s, c->out, c->ax[0], c->ax[1], 4, f, &io, &jo, &ii, &ji);
    sch_reorder(s, c->out, 5, (te_expr *[]){io, jo, c->rax[0], ii, ji});
    sch_vectorize(s, c->out, ji);
}

/* The packed copy computed per row block of C (bounds through floordiv
 * and floormod), with a factor that does not match C's tiling. */
static void s_pack_at(sch_schedule *s, sched_case *c) {
    int64_t f = pack_factor(c->out->shape[1]);
    te_tensor *BG = sch_cache_read(s, c->in[1], "global", 1, &c->out);
    te_tensor *BP = sch_pack(s, BG, sch_axis(BG, 1), f);
    te_expr *io, *jo, *ii, *ji;
    sch_tile(s, c->out, c->ax[0], c->ax[1], 8, 4, &io, &jo, &ii, &ji);
    sch_compute_at(s, BP, c->out, jo);
}

/* The packed copy read by a local accumulator (cache_write) and computed
 * at the output's column-panel loop: compute_at into a consumer's
 * consumer, one panel a parallel iteration (GEMM packing per thread). */
static void s_pack_at_indirect(sch_schedule *s, sched_case *c) {
    int64_t f = pack_factor(c->out->shape[1]);
    te_tensor *CL = sch_cache_write(s, c->out, "local");
    assert_non_null(CL);
    te_tensor *BG = sch_cache_read(s, c->in[1], "global", 1, &CL);
    te_tensor *BP = sch_pack(s, BG, sch_axis(BG, 1), f);
    assert_non_null(BP);
    te_expr *io, *jo, *ii, *ji;
    sch_tile(s, c->out, c->ax[0], c->ax[1], 3, f, &io, &jo, &ii, &ji);
    sch_reorder(s, c->out, 4, (te_expr *[]){jo, io, ii, ji});
    sch_parallel(s, c->out, jo);
    assert_int_equal(sch_compute_at(s, CL, c->out, io), 0);
    assert_int_equal(sch_compute_at(s, BP, c->out, jo), 0);
}

static void s_rfactor(sch_schedule *s, sched_case *c) {
    te_expr *ko, *ki;
    sch_split(s, c->out, c->rax[0], 4, &ko, &ki);
    te_tensor *rf = sch_rfactor(s, c->out, ki, 0);
    assert_non_null(rf);
    sch_parallel(s, rf, sch_axis(rf, 0));
}

static void s_pragma(sch_schedule *s, sched_case *c) {
    te_expr *io, *jo, *ii, *ji;
    sch_tile(s, c->out, c->ax[0], c->ax[1], 2, 4, &io, &jo, &ii, &ji);
    sch_pragma(s, c->out, io, "auto_unroll_max_step", 16);
    sch_pragma(s, c->out, io, "unroll_explicit", 1);
}

static void test_naive(void **st) { (void)st; run_mm(s_naive, 2); }
static void test_split(void **st) { (void)st; run_mm(s_split, 2); }
static void test_split_nparts(void **st) { (void)st; run_mm(s_split_nparts, 2); }
static void test_tile_reorder(void **st) { (void)st; run_mm(s_tile_reorder, 2); }
static void test_fuse_parallel(void **st) { (void)st; run_mm(s_fuse_parallel, 2); }
static void test_vectorize_unroll(void **st) { (void)st; run_mm(s_vectorize_unroll, 2); }
static void test_cache_write(void **st) { (void)st; run_mm(s_cache_write, 2); }
static void test_cache_read(void **st) { (void)st; run_mm(s_cache_read, 2); }
static void test_rfactor(void **st) { (void)st; run_mm(s_rfactor, 2); }
static void test_pack_root(void **st) { (void)st; run_mm(s_pack_root, 2); }
static void test_pack_at(void **st) { (void)st; run_mm(s_pack_at, 2); }
static void test_pack_at_indirect(void **st) { (void)st; run_mm(s_pack_at_indirect, 2); }
static void test_pragma(void **st) { (void)st; run_mm(s_pragma, 2); }

/* Schedules an MxNx4 matmul with fn, lowers it and returns the text of
 * the default pipeline's result (*plain) and of opts's (*with). */
static void pipeline_texts(te_ctx *ctx, int64_t M, int64_t N, mm_schedule_fn fn,
                           const tir_pipeline_options *opts, const char **plain,
                           const char **with) {
    sched_case c = sh_matmul(ctx, M, N, 4);
    sch_schedule *s = sch_create(ctx, 1, &c.out);
    fn(s, &c);
    assert_string_equal(te_ctx_errmsg(ctx), "");
    te_tensor *args[3] = {c.in[0], c.in[1], c.out};
    tir_func *f = sch_lower(s, 3, args, "f");
    assert_non_null(f);
    *plain = tir_func_str(ctx, tir_run_pipeline(ctx, f, NULL));
    *with = tir_func_str(ctx, tir_run_pipeline(ctx, f, opts));
}

/* unroll_explicit copies the loops under the pragma; the pipeline's
 * unroll_hints_only (the cost model's view) marks them unrolled instead. */
static void test_pragma_hints_only(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tir_pipeline_options hints = {.unroll_hints_only = true};
    const char *copied, *hinted;
    pipeline_texts(ctx, 8, 8, s_pragma, &hints, &copied, &hinted);
    assert_null(strstr(copied, "unrolled"));
    assert_non_null(strstr(hinted, "unrolled"));
    te_ctx_free(ctx);
}

static void s_split_tail(sch_schedule *s, sched_case *c) {
    te_expr *io, *ii;
    sch_split(s, c->out, c->ax[0], 4, &io, &ii);
}

/* A tail (10 rows by 4) is partitioned off its loop by default; with
 * skip_loop_partition (the cost model's CPU view) the guard stays. */
static void test_pipeline_skip_partition(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tir_pipeline_options keep = {.skip_loop_partition = true};
    const char *parted, *guarded;
    pipeline_texts(ctx, 10, 8, s_split_tail, &keep, &parted, &guarded);
    assert_null(strstr(parted, "if ("));
    assert_non_null(strstr(guarded, "if ("));
    te_ctx_free(ctx);
}

/* ---- the two-stage chain: inline, compute_at, compute_root ---- */

typedef void (*chain_fn)(sch_schedule *s, sched_case *c);

static void run_chain(chain_fn fn) {
    static const int64_t shapes[][2] = {{32, 64}, {13, 37}};
    for (size_t si = 0; si < 2; si++)
        for (int ti = 0; ti < 2; ti++) {
            te_ctx *ctx = te_ctx_new();
            sched_case c = sh_chain(ctx, shapes[si][0], shapes[si][1]);
            sch_schedule *s = sch_create(ctx, 1, &c.out);
            fn(s, &c);
            assert_string_equal(te_ctx_errmsg(ctx), "");
            int64_t bad = sh_run(&c, s, targets[ti]);
            if (bad) fprintf(stderr, "%s\n", sch_lower_text(s, TE_TENSORS(c.in[0], c.out)));
            assert_int_equal(bad, 0);
            te_ctx_free(ctx);
        }
}

static void c_inline(sch_schedule *s, sched_case *c) {
    assert_int_equal(sch_compute_inline(s, c->mid), 0);
    te_expr *yo, *yi;
    sch_split(s, c->out, c->ax[1], 16, &yo, &yi);
    sch_vectorize(s, c->out, yi);
}

static void c_compute_at(sch_schedule *s, sched_case *c) {
    te_expr *xo, *xi, *yo, *yi;
    sch_tile(s, c->out, c->ax[0], c->ax[1], 4, 8, &xo, &yo, &xi, &yi);
    assert_int_equal(sch_compute_at(s, c->mid, c->out, yo), 0);
    sch_vectorize(s, c->out, yi);
}

static void c_compute_root(sch_schedule *s, sched_case *c) {
    sch_compute_at(s, c->mid, c->out, c->ax[0]);
    assert_int_equal(sch_compute_root(s, c->mid), 0);
    sch_parallel(s, c->out, c->ax[0]);
}

static void test_chain_inline(void **st) { (void)st; run_chain(c_inline); }
static void test_chain_compute_at(void **st) { (void)st; run_chain(c_compute_at); }
static void test_chain_compute_root(void **st) { (void)st; run_chain(c_compute_root); }

/* ---- conv2d: padding stage inlined or computed at a row ---- */

static void run_conv(int mode) {
    static const int64_t shapes[][9] = {{1, 3, 9, 10, 4, 3, 3, 1, 1}, {2, 4, 11, 7, 5, 3, 2, 2, 1}};
    for (size_t si = 0; si < 2; si++)
        for (int ti = 0; ti < 2; ti++) {
            const int64_t *p = shapes[si];
            te_ctx *ctx = te_ctx_new();
            sched_case c = sh_conv2d(ctx, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]);
            sch_schedule *s = sch_create(ctx, 1, &c.out);
            if (mode == 0) {
                sch_compute_inline(s, c.mid);
            } else {
                te_expr *xo, *xi;
                sch_split(s, c.out, c.ax[3], 4, &xo, &xi);
                sch_compute_at(s, c.mid, c.out, c.ax[2]);
                sch_vectorize(s, c.out, xi);
                sch_reorder(s, c.out, 7,
                            (te_expr *[]){c.ax[1], c.ax[2], xo, c.rax[0], c.rax[1], c.rax[2], xi});
            }
            assert_string_equal(te_ctx_errmsg(ctx), "");
            int64_t bad = sh_run(&c, s, targets[ti]);
            if (bad)
                fprintf(stderr, "%s\n", sch_lower_text(s, TE_TENSORS(c.in[0], c.in[1], c.out)));
            assert_int_equal(bad, 0);
            te_ctx_free(ctx);
        }
}

static void test_conv_inline(void **st) { (void)st; run_conv(0); }
static void test_conv_compute_at(void **st) { (void)st; run_conv(1); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_naive),           cmocka_unit_test(test_split),
        cmocka_unit_test(test_split_nparts),    cmocka_unit_test(test_tile_reorder),
        cmocka_unit_test(test_fuse_parallel),   cmocka_unit_test(test_vectorize_unroll),
        cmocka_unit_test(test_cache_write),     cmocka_unit_test(test_cache_read),
        cmocka_unit_test(test_rfactor),         cmocka_unit_test(test_pragma),
        cmocka_unit_test(test_pragma_hints_only),
        cmocka_unit_test(test_pipeline_skip_partition),
        cmocka_unit_test(test_pack_root),       cmocka_unit_test(test_pack_at),
        cmocka_unit_test(test_pack_at_indirect),
        cmocka_unit_test(test_chain_inline),    cmocka_unit_test(test_chain_compute_at),
        cmocka_unit_test(test_chain_compute_root), cmocka_unit_test(test_conv_inline),
        cmocka_unit_test(test_conv_compute_at),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
