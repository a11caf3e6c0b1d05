/*
 * tests/test_autotune_tail.c — innermost tile factors that do not divide
 * the extent (tails) in the CPU search space: which holes may have one,
 * the validity rule (tune_split_valid), random annotation drawing them on
 * extents with few divisors (every program applies, builds and matches
 * the reference), decoding of their step logs, mutation keeping the rule,
 * and determinism under a fixed seed.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "loom/autotune.h"

/* Rows with few divisors (37 prime, 46 = 2 * 23); columns vectorized. */
static const char *MM37 = "matmul(M=37,N=32,K=16)";
static const char *MM46 = "matmul(M=46,N=16,K=24)";
/* 7 x 7 images: every spatial tile but the vectorized one may have a tail. */
static const char *CONV7 = "conv2d(N=1,C=4,H=7,W=7,K=16,R=3,S=3,pad=1)";
static const char *MM1024 = "matmul(M=1024,N=1024,K=1024)";

static int gen(te_ctx *ctx, const char *key, tune_workload *w, tune_sketch *sk) {
    assert_int_equal(tune_build_workload(ctx, key, w), 0);
    int n = tune_generate_sketches(ctx, w, sk, TUNE_MAX_SKETCHES);
    assert_true(n > 0);
    return n;
}

static bool is_tile(tune_unit_kind k) {
    return k == TUNE_UNIT_TILE || k == TUNE_UNIT_TILE_CACHE || k == TUNE_UNIT_TILE_FUSE ||
           k == TUNE_UNIT_TILE_CACHE_PACKED;
}

/* The number of SPLIT holes of p whose innermost factor does not divide. */
static int tails_of(const tune_sketch *sk, const tune_program *p) {
    int n = 0;
    for (int h = 0; h < sk->nholes; h++) {
        const tune_hole *ho = &sk->holes[h];
        if (ho->kind == TUNE_HOLE_SPLIT && ho->extent % p->vals[ho->offset + ho->nvals - 1]) n++;
    }
    return n;
}

static void assert_valid(const tune_sketch *sk, const tune_program *p) {
    for (int h = 0; h < sk->nholes; h++) {
        const tune_hole *ho = &sk->holes[h];
        if (ho->kind != TUNE_HOLE_SPLIT) continue;
        const int64_t *v = p->vals + ho->offset;
        if (!tune_split_valid(ho, v))
            fail_msg("hole %d (extent %lld, tail %d): %lld %lld %lld invalid", h,
                     (long long)ho->extent, ho->tail, (long long)v[0],
                     (long long)(ho->nvals > 1 ? v[1] : 0), (long long)(ho->nvals > 2 ? v[2] : 0));
        /* only holes with `tail` have one */
        if (!ho->tail) assert_int_equal(ho->extent % v[ho->nvals - 1], 0);
    }
}

/* ---- which holes ---- */

static void test_tail_flags(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int n = gen(ctx, MM37, &w, sk);
    for (int s = 0; s < n; s++) {
        int tiles = 0;
        for (int h = 0; h < sk[s].nholes; h++) {
            const tune_hole *ho = &sk[s].holes[h];
            if (ho->kind != TUNE_HOLE_SPLIT) {
                assert_false(ho->tail);
                continue;
            }
            assert_true(is_tile(sk[s].units[ho->unit].kind));
            /* rows (37) yes; the vectorized columns and k no */
            assert_int_equal(ho->tail, !ho->reduce && ho->extent == 37);
            tiles += ho->tail;
        }
        assert_int_equal(tiles, 1);
    }
    /* Convolution O[n, k, y, x]: the packed sketch vectorizes k (vec_dim),
     * the others x; each keeps its vectorized axis without a tail. */
    n = gen(ctx, CONV7, &w, sk);
    bool packed_seen = false;
    for (int s = 0; s < n; s++)
        for (int u = 0; u < sk[s].nunits; u++) {
            if (!is_tile(sk[s].units[u].kind)) continue;
            int vd = sk[s].units[u].kind == TUNE_UNIT_TILE_CACHE_PACKED ? sk[s].units[u].vec_dim : 3;
            packed_seen |= vd != 3;
            int d = 0;
            for (int h = 0; h < sk[s].nholes; h++) {
                const tune_hole *ho = &sk[s].holes[h];
                if (ho->unit != u || ho->kind != TUNE_HOLE_SPLIT) continue;
                if (ho->reduce) assert_false(ho->tail);
                else assert_int_equal(ho->tail, d++ != vd);
            }
            assert_int_equal(d, 4);
        }
    assert_true(packed_seen);
    /* GPU holes keep divisors. */
    n = tune_generate_sketches_gpu(ctx, &w, sk, TUNE_MAX_SKETCHES);
    assert_true(n > 0);
    for (int s = 0; s < n; s++)
        for (int h = 0; h < sk[s].nholes; h++) assert_false(sk[s].holes[h].tail);
    te_ctx_free(ctx);
}

/* ---- the rule ---- */

static void test_split_valid_rule(void **st) {
    (void)st;
    tune_hole t = {TUNE_HOLE_SPLIT, 0, 0, 3, 1024, false, true};
    tune_hole d = t;
    d.tail = false;
    /* 6 rows: the outer levels split ceil(1024 / 6) = 171 = 9 * 19 */
    assert_true(tune_split_valid(&t, (int64_t[]){9, 1, 6}));
    assert_true(tune_split_valid(&t, (int64_t[]){19, 9, 6}));
    assert_false(tune_split_valid(&t, (int64_t[]){2, 1, 6}));   /* 2 does not divide 171 */
    assert_false(tune_split_valid(&d, (int64_t[]){9, 1, 6}));   /* no tail allowed */
    assert_false(tune_split_valid(&t, (int64_t[]){1, 1, 17}));  /* tails only up to 16 */
    assert_true(tune_split_valid(&t, (int64_t[]){1, 1, 16}));
    assert_true(tune_split_valid(&t, (int64_t[]){2, 2, 64}));   /* divisors up to 64 */
    assert_false(tune_split_valid(&t, (int64_t[]){1, 1, 128}));
    assert_true(tune_split_valid(&d, (int64_t[]){4, 4, 4}));
    assert_false(tune_split_valid(&d, (int64_t[]){8, 8, 32})); /* 2048 does not divide 1024 */
    assert_false(tune_split_valid(&t, (int64_t[]){0, 1, 4}));
    assert_false(tune_split_valid(&t, (int64_t[]){1, 1, 0}));
    /* a tail never exceeds the extent */
    tune_hole small = {TUNE_HOLE_SPLIT, 0, 0, 3, 5, false, true};
    assert_true(tune_split_valid(&small, (int64_t[]){1, 1, 3}));   /* ceil(5/3) = 2 */
    assert_true(tune_split_valid(&small, (int64_t[]){2, 1, 3}));
    assert_false(tune_split_valid(&small, (int64_t[]){1, 1, 6}));
    /* other kinds, and no hole */
    tune_hole vec = {TUNE_HOLE_VECTOR, 0, 0, 1, 16, false, false};
    assert_false(tune_split_valid(&vec, (int64_t[]){4}));
    assert_false(tune_split_valid(NULL, (int64_t[]){4}));
}

/* ---- random annotation ---- */

static int random_programs_correct(const char *key, int per_sketch, uint64_t *rng) {
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int n = gen(ctx, key, &w, sk);
    ops_workload *ow = ops_from_key(ctx, key);
    assert_non_null(ow);
    int tails = 0;
    for (int s = 0; s < n; s++)
        for (int k = 0; k < per_sketch; k++) {
            tune_program p;
            tune_program_random(&sk[s], s, rng, &p);
            assert_valid(&sk[s], &p);
            tails += tails_of(&sk[s], &p) > 0;
            sch_schedule *sc = tune_program_apply(ctx, &w, &sk[s], &p);
            if (!sc) fail_msg("%s sketch %d: invalid program: %s", key, s, te_ctx_errmsg(ctx));
            rt_module *m = cg_build(sc, w.nargs, w.args, "llvm", NULL);
            if (!m) fail_msg("%s sketch %d: build: %s", key, s, te_ctx_errmsg(ctx));
            /* fresh inputs in [-1, 1), outputs poisoned with NaN, compared
             * at ops_tolerance (|got - want| <= atol + rtol |want|) */
            int64_t bad = ops_check_module(ow, m, NULL, tune_rand(rng));
            if (bad) fail_msg("%s sketch %d (%s): %lld wrong", key, s, sk[s].desc, (long long)bad);
            rt_module_free(m);
        }
    te_ctx_free(ctx);
    return tails;
}

static void test_random_tails_correct(void **st) {
    (void)st;
    uint64_t rng = tu_seed() | 1;
    /* 37 has the divisors 1 and 37 only: most row tiles have a tail */
    assert_true(random_programs_correct(MM37, 5, &rng) >= 6);
    assert_true(random_programs_correct(MM46, 3, &rng) >= 3);
    assert_true(random_programs_correct(CONV7, 3, &rng) >= 3);
}

/* ---- decoding ---- */

static void test_decode_tail(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int n = gen(ctx, MM37, &w, sk);
    uint64_t rng = 12345;
    int done = 0;
    for (int tries = 0; tries < 200 && done < 2 * n; tries++) {
        int s = tries % n;
        tune_program p, q;
        tune_program_random(&sk[s], s, &rng, &p);
        if (!tails_of(&sk[s], &p)) continue;
        sch_schedule *a = tune_program_apply(ctx, &w, &sk[s], &p);
        assert_non_null(a);
        char *json = tdb_schedule_to_json(a);
        assert_non_null(json);
        char *err = NULL;
        int rc = tune_program_from_steps(MM37, sk, n, json, &q, &err);
        if (rc != 1) fail_msg("sketch %d: %s\n%s", s, err ? err : "not found", json);
        sch_schedule *b = tune_program_apply(ctx, &w, &sk[q.sketch], &q);
        assert_non_null(b);
        assert_string_equal(tune_steps_key(ctx, a), tune_steps_key(ctx, b));
        /* the tiles themselves come back (the rows' hole is the first) */
        assert_int_equal(q.sketch, s);
        assert_memory_equal(q.vals + sk[s].holes[0].offset, p.vals + sk[s].holes[0].offset,
                            sizeof(int64_t) * 3);
        free(json);
        done++;
    }
    assert_int_equal(done, 2 * n);
    te_ctx_free(ctx);
}

/* ---- mutation ---- */

static void test_mutation_keeps_rule(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int n = gen(ctx, MM1024, &w, sk);
    uint64_t rng = tu_seed() | 1;
    int inner_seen[17] = {0}, inner_changes = 0;
    for (int s = 0; s < n; s++) {
        tune_program p;
        tune_program_random(&sk[s], s, &rng, &p);
        const tune_hole *rows = &sk[s].holes[0];
        assert_true(rows->tail);
        for (int k = 0; k < 1500; k++) {
            int64_t before = p.vals[rows->offset + 2];
            assert_int_equal(tune_program_mutate(&sk[s], &rng, &p), 0);
            assert_valid(&sk[s], &p);
            int64_t after = p.vals[rows->offset + 2];
            inner_changes += before != after;
            if (after <= 16) inner_seen[after]++;
            if (k % 300 == 0) {
                sch_schedule *a = tune_program_apply(ctx, &w, &sk[s], &p);
                if (!a) fail_msg("mutated program invalid: %s", te_ctx_errmsg(ctx));
            }
        }
    }
    /* the innermost row factor moves, and reaches non-divisors (6 among them) */
    assert_true(inner_changes > 100);
    int nondiv = 0;
    for (int f = 3; f <= 16; f++) nondiv += (1024 % f != 0) && inner_seen[f] > 0;
    assert_true(nondiv >= 6);
    assert_true(inner_seen[6] > 0);
    te_ctx_free(ctx);
}

/* ---- determinism ---- */

static void draw(const tune_sketch *sk, int n, uint64_t seed, tune_program *out, int count) {
    uint64_t rng = seed;
    for (int i = 0; i < count; i++) {
        int s = (int)(tune_rand(&rng) % (uint64_t)n);
        tune_program_random(&sk[s], s, &rng, &out[i]);
        if (i % 2) tune_program_mutate(&sk[s], &rng, &out[i]);
    }
}

static void test_determinism(void **st) {
    (void)st;
    te_ctx *ctx = te_ctx_new();
    tune_workload w;
    tune_sketch sk[TUNE_MAX_SKETCHES];
    int n = gen(ctx, MM1024, &w, sk);
    enum { N = 64 };
    tune_program *a = calloc(N, sizeof *a), *b = calloc(N, sizeof *b), *c = calloc(N, sizeof *c);
    assert_true(a && b && c);
    draw(sk, n, 99, a, N);
    draw(sk, n, 99, b, N);
    draw(sk, n, 100, c, N);
    assert_memory_equal(a, b, sizeof *a * N);
    assert_true(memcmp(a, c, sizeof *a * N) != 0);
    free(a), free(b), free(c);
    te_ctx_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tail_flags),
        cmocka_unit_test(test_split_valid_rule),
        cmocka_unit_test(test_random_tails_correct),
        cmocka_unit_test(test_decode_tail),
        cmocka_unit_test(test_mutation_keeps_rule),
        cmocka_unit_test(test_determinism),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
