/*
 * Step logs as JSON (loom/tuning_db.h): every kind of step survives the
 * round trip exactly, the search's dedup key is that same text, a parsed log replayed on a rebuilt workload lowers
 * to the identical loop program, malformed logs are refused with a
 * message naming the step and field, and a short random-mutation fuzz of
 * the parser (plus replay of whatever parses) never crashes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched_harness.h"

/* A schedule touching every kind of step that lowers on the CPU. */
static sch_schedule *schedule_everything(te_ctx *ctx, sched_case *c) {
    sch_schedule *s = sch_create(ctx, 1, &c->out);
    te_tensor *CL = sch_cache_write(s, c->out, "local");
    assert_non_null(CL);
    te_tensor *AL = sch_cache_read(s, c->in[0], "global", 1, &CL);
    assert_non_null(AL);
    te_tensor *BG = sch_cache_read(s, c->in[1], "global", 1, &CL);
    te_tensor *BP = BG ? sch_pack(s, BG, sch_axis(BG, 1), 8) : NULL;
    assert_non_null(BP);
    assert_int_equal(sch_vectorize(s, BP, sch_axis(BP, 2)), 0);
    te_expr *io, *jo, *ii, *ji, *f;
    assert_int_equal(sch_tile(s, c->out, c->ax[0], c->ax[1], 8, 16, &io, &jo, &ii, &ji), 0);
    assert_int_equal(sch_fuse(s, c->out, 2, (te_expr *[]){io, jo}, &f), 0);
    assert_int_equal(sch_parallel(s, c->out, f), 0);
    assert_int_equal(sch_vectorize(s, c->out, ji), 0);
    assert_int_equal(sch_compute_at(s, CL, c->out, f), 0);
    te_expr *ck = sch_reduce_axis(CL, 0), *ko, *ki;
    assert_int_equal(sch_split_nparts(s, CL, ck, 4, &ko, &ki), 0);
    assert_int_equal(sch_reorder(s, CL, 4, (te_expr *[]){ko, ki, sch_axis(CL, 0), sch_axis(CL, 1)}),
                     0);
    assert_int_equal(sch_unroll(s, CL, sch_axis(CL, 0)), 0);
    assert_int_equal(sch_vectorize(s, CL, sch_axis(CL, 1)), 0);
    assert_int_equal(sch_pragma(s, c->out, f, "auto_unroll_max_step", 64), 0);
    assert_int_equal(sch_storage_align(s, AL, sch_axis(AL, 0), 16, 4), 0);
    assert_int_equal(sch_compute_root(s, AL), 0);
    return s;
}

/* rfactor and compute_inline, on other workloads. */
static sch_schedule *schedule_rfactor(te_ctx *ctx, sched_case *c) {
    sch_schedule *s = sch_create(ctx, 1, &c->out);
    te_expr *ko, *ki;
    assert_int_equal(sch_split(s, c->out, c->rax[0], 4, &ko, &ki), 0);
    assert_non_null(sch_rfactor(s, c->out, ki, 0));
    return s;
}

static sch_schedule *schedule_inline(te_ctx *ctx, sched_case *c) {
    sch_schedule *s = sch_create(ctx, 1, &c->out);
    assert_int_equal(sch_compute_inline(s, c->mid), 0);
    te_expr *o, *i;
    assert_int_equal(sch_split(s, c->out, c->ax[1], 8, &o, &i), 0);
    assert_int_equal(sch_vectorize(s, c->out, i), 0);
    return s;
}

static void assert_steps_equal(const sch_step *a, const sch_step *b) {
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->stage, b->stage);
    assert_int_equal(a->iter, b->iter);
    assert_int_equal(a->value, b->value);
    assert_int_equal(a->value2, b->value2);
    assert_int_equal(a->nparts, b->nparts);
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->target_stage, b->target_stage);
    assert_int_equal(a->ann, b->ann);
    for (int i = 0; i < a->n; i++) {
        if (a->iters || b->iters) assert_int_equal(a->iters[i], b->iters[i]);
        if (a->stages || b->stages) assert_int_equal(a->stages[i], b->stages[i]);
    }
    if (a->str || b->str) {
        assert_non_null(a->str);
        assert_non_null(b->str);
        assert_string_equal(a->str, b->str);
    }
}

typedef sched_case (*make_case)(te_ctx *ctx);
typedef sch_schedule *(*make_sched)(te_ctx *ctx, sched_case *c);

static sched_case mk_matmul(te_ctx *ctx) { return sh_matmul(ctx, 40, 48, 36); }
static sched_case mk_chain(te_ctx *ctx) { return sh_chain(ctx, 24, 40); }

/* Schedule, serialise, parse in a fresh ctx, compare step by step and as
 * text, replay on a rebuilt workload, compare the lowered programs. */
static void round_trip(make_case mk, make_sched sched) {
    te_ctx *ctx = te_ctx_new();
    sched_case c = mk(ctx);
    sch_schedule *s = sched(ctx, &c);
    te_tensor *args[5];
    for (int i = 0; i < c.nin; i++) args[i] = c.in[i];
    args[c.nin] = c.out;
    const char *text = sch_lower_text(s, c.nin + 1, args);
    assert_non_null(text);
    char *json = tdb_schedule_to_json(s);
    assert_non_null(json);

    te_ctx *ctx2 = te_ctx_new();
    int n = -1;
    sch_step *steps = NULL;
    assert_int_equal(tdb_steps_from_json(ctx2, json, &n, &steps), 0);
    assert_int_equal(n, sch_num_steps(s));
    for (int i = 0; i < n; i++) assert_steps_equal(sch_get_step(s, i), &steps[i]);
    char *again = tdb_steps_to_json(n, steps);
    assert_non_null(again);
    assert_string_equal(json, again);

    sched_case c2 = mk(ctx2);
    sch_schedule *r = sch_replay(ctx2, 1, &c2.out, n, steps);
    assert_non_null(r);
    for (int i = 0; i < c2.nin; i++) args[i] = c2.in[i];
    args[c2.nin] = c2.out;
    const char *text2 = sch_lower_text(r, c2.nin + 1, args);
    assert_non_null(text2);
    assert_string_equal(text, text2);
    free(json);
    free(again);
    te_ctx_free(ctx2);
    te_ctx_free(ctx);
}

static void test_round_trip_everything(void **state) {
    (void)state;
    round_trip(mk_matmul, schedule_everything);
}
static void test_round_trip_rfactor(void **state) {
    (void)state;
    round_trip(mk_matmul, schedule_rfactor);
}
static void test_round_trip_inline(void **state) {
    (void)state;
    round_trip(mk_chain, schedule_inline);
}

/* The steps only GPU lowering accepts (bind, double_buffer, swizzle, tensorize):
 * recorded, never lowered here. */
static sch_schedule *schedule_gpu_steps(te_ctx *ctx, sched_case *c) {
    sch_schedule *s = sch_create(ctx, 1, &c->out);
    te_tensor *AS = sch_cache_read(s, c->in[0], "shared", 1, &c->out);
    te_tensor *BS = sch_cache_read(s, c->in[1], "shared", 1, &c->out);
    assert_non_null(AS);
    assert_non_null(BS);
    te_expr *o, *i;
    assert_int_equal(sch_split(s, c->out, c->ax[0], 16, &o, &i), 0);
    assert_int_equal(sch_bind(s, c->out, o, "blockIdx.x"), 0);
    assert_int_equal(sch_compute_at(s, AS, c->out, o), 0);
    assert_int_equal(sch_double_buffer(s, AS), 0);
    assert_int_equal(sch_swizzle(s, AS), 0);
    assert_int_equal(sch_swizzle_transposed(s, BS), 0);
    assert_int_equal(sch_tensorize(s, c->out, i, "wmma.store"), 0);
    return s;
}

/* The search deduplicates programs by tune_steps_key: it must be the very
 * text the database stores (one serializer), for every kind of step and
 * annotation, and that text must parse back to itself. */
static void test_dedup_key_is_stored_log(void **state) {
    (void)state;
    static const struct {
        make_case mk;
        make_sched sched;
    } cases[] = {{mk_matmul, schedule_everything},
                 {mk_matmul, schedule_rfactor},
                 {mk_chain, schedule_inline},
                 {mk_matmul, schedule_gpu_steps}};
    unsigned kinds = 0, anns = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        te_ctx *ctx = te_ctx_new();
        sched_case c = cases[k].mk(ctx);
        sch_schedule *s = cases[k].sched(ctx, &c);
        char *json = tdb_schedule_to_json(s);
        assert_non_null(json);
        const char *key = tune_steps_key(ctx, s);
        assert_non_null(key);
        assert_string_equal(key, json);

        int n = -1;
        sch_step *steps = NULL;
        assert_int_equal(tdb_steps_from_json(ctx, json, &n, &steps), 0);
        char *again = tdb_steps_to_json(n, steps);
        assert_non_null(again);
        assert_string_equal(again, json);
        for (int i = 0; i < n; i++) {
            kinds |= 1u << steps[i].kind;
            if (steps[i].kind == SCH_STEP_ANNOTATE) anns |= 1u << steps[i].ann;
        }
        free(again);
        free(json);
        te_ctx_free(ctx);
    }
    assert_int_equal(kinds, (1u << SCH_STEP_KIND_COUNT) - 1);
    assert_int_equal(anns, (1u << SCH_ANN_VECTORIZE) | (1u << SCH_ANN_UNROLL) |
                               (1u << SCH_ANN_PARALLEL) | (1u << SCH_ANN_BIND));
}

/* st alone as a log: head, then its last field's value `last`, then }]. */
static void assert_last_field(const sch_step *st, const char *head, const char *last) {
    char want[160];
    snprintf(want, sizeof want, "%s%s}]", head, last);
    char *json = tdb_steps_to_json(1, st);
    assert_non_null(json);
    assert_string_equal(json, want);
    free(json);
}

/* The writer keeps the text that cJSON printed when it wrote the log
 * (databases hold it): numbers of 16 or more digits in cJSON's %.15g /
 * %.17g form, strings with cJSON's escapes, UTF-8 as it is, absent
 * arrays and strings as empty ones. */
static void test_text_is_the_stored_format(void **state) {
    (void)state;
    static const struct {
        int64_t v;
        const char *text;
    } nums[] = {{-3, "-3"},
                {INT64_C(2147483648), "2147483648"},
                {INT64_C(999999999999999), "999999999999999"},
                {INT64_C(-1000000000000000), "-1e+15"},
                {INT64_C(1234567890123456), "1234567890123456"},
                {INT64_C(9007199254740992), "9.00719925474099e+15"}};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        sch_step st = {.kind = SCH_STEP_PRAGMA, .stage = 1, .iter = 2, .str = "p", .value = nums[i].v};
        assert_last_field(&st, "[{\"kind\":\"pragma\",\"stage\":1,\"iter\":2,\"name\":\"p\",\"value\":",
                          nums[i].text);
    }
    static const struct {
        const char *s, *text;
    } strs[] = {{"a\"b", "\"a\\\"b\""},
                {"back\\slash", "\"back\\\\slash\""},
                {"line\nfeed\ttab\b\f\r", "\"line\\nfeed\\ttab\\b\\f\\r\""},
                {"ctl\x01\x1f", "\"ctl\\u0001\\u001f\""},
                {"utf8 \xc3\xa9 sl/ash", "\"utf8 \xc3\xa9 sl/ash\""}};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++) {
        sch_step st = {.kind = SCH_STEP_CACHE_WRITE, .stage = 2, .str = strs[i].s};
        assert_last_field(&st, "[{\"kind\":\"cache_write\",\"stage\":2,\"scope\":", strs[i].text);
    }
    sch_step bare[] = {{.kind = SCH_STEP_FUSE, .stage = 0, .n = 2},
                       {.kind = SCH_STEP_CACHE_READ, .stage = 0}};
    char *json = tdb_steps_to_json(2, bare);
    assert_non_null(json);
    assert_string_equal(json, "[{\"kind\":\"fuse\",\"stage\":0,\"iters\":[0,0]},"
                              "{\"kind\":\"cache_read\",\"stage\":0,\"scope\":\"\",\"readers\":[]}]");
    free(json);
    json = tdb_steps_to_json(0, NULL);
    assert_string_equal(json, "[]");
    free(json);
}

/* bind cannot lower on the CPU, so its step is checked as JSON only;
 * and every field of every kind is written. */
static void test_bind_and_text_form(void **state) {
    (void)state;
    int iters[2] = {0, 1}, readers[1] = {3};
    sch_step steps[] = {
        {.kind = SCH_STEP_SPLIT, .stage = 2, .iter = 0, .value = 512, .nparts = true},
        {.kind = SCH_STEP_ANNOTATE,
         .stage = 2,
         .iter = 1,
         .ann = SCH_ANN_BIND,
         .str = "threadIdx.x"},
        {.kind = SCH_STEP_FUSE, .stage = 2, .n = 2, .iters = iters},
        {.kind = SCH_STEP_CACHE_READ, .stage = 0, .str = "shared", .n = 1, .stages = readers},
        {.kind = SCH_STEP_PRAGMA, .stage = 1, .iter = 0, .str = "unroll_explicit", .value = -3},
    };
    char *json = tdb_steps_to_json(5, steps);
    assert_non_null(json);
    assert_string_equal(
        json,
        "[{\"kind\":\"split\",\"stage\":2,\"iter\":0,\"nparts\":512},"
        "{\"kind\":\"annotate\",\"stage\":2,\"iter\":1,\"ann\":\"bind\",\"thread\":\"threadIdx.x\"}"
        ","
        "{\"kind\":\"fuse\",\"stage\":2,\"iters\":[0,1]},"
        "{\"kind\":\"cache_read\",\"stage\":0,\"scope\":\"shared\",\"readers\":[3]},"
        "{\"kind\":\"pragma\",\"stage\":1,\"iter\":0,\"name\":\"unroll_explicit\",\"value\":-3}]");
    te_ctx *ctx = te_ctx_new();
    int n;
    sch_step *back;
    assert_int_equal(tdb_steps_from_json(ctx, json, &n, &back), 0);
    assert_int_equal(n, 5);
    for (int i = 0; i < n; i++) assert_steps_equal(&steps[i], &back[i]);
    /* an empty log is a valid log */
    assert_int_equal(tdb_steps_from_json(ctx, "[]", &n, &back), 0);
    assert_int_equal(n, 0);
    /* a step of no kind cannot be written */
    sch_step bad = {.kind = SCH_STEP_KIND_COUNT};
    assert_null(tdb_steps_to_json(1, &bad));
    free(json);
    te_ctx_free(ctx);
}

static void expect_parse_error(const char *json, const char *a, const char *b) {
    te_ctx *ctx = te_ctx_new();
    int n = 0;
    sch_step *steps = NULL;
    assert_int_equal(tdb_steps_from_json(ctx, json, &n, &steps), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "step log", a, b);
    te_ctx_free(ctx);
}

static void test_malformed_logs(void **state) {
    (void)state;
    expect_parse_error("[{\"kind\":\"split\"", "not valid JSON", "byte");
    expect_parse_error("{\"kind\":\"split\"}", "expected a JSON array", "steps");
    expect_parse_error("[3]", "step 0", "not a JSON object");
    expect_parse_error("[{\"stage\":0}]", "step 0", "'kind'");
    expect_parse_error(
        "[{\"kind\":\"compute_inline\",\"stage\":1},{\"kind\":\"splitt\",\"stage\":0}]", "step 1",
        "unknown step kind 'splitt'");
    expect_parse_error("[{\"kind\":\"split\",\"stage\":2,\"iter\":0}]", "split",
                       "exactly one of 'factor' and 'nparts'");
    expect_parse_error("[{\"kind\":\"split\",\"stage\":2,\"iter\":0,\"factor\":2.5}]", "'factor'",
                       "integer");
    expect_parse_error("[{\"kind\":\"split\",\"stage\":2,\"iter\":0,\"factor\":0}]", "'factor'",
                       "out of range");
    expect_parse_error("[{\"kind\":\"split\",\"stage\":-1,\"iter\":0,\"factor\":4}]", "'stage'",
                       "out of range");
    expect_parse_error("[{\"kind\":\"split\",\"stage\":1,\"iter\":\"0\",\"factor\":4}]", "'iter'",
                       "must be a number");
    expect_parse_error("[{\"kind\":\"split\",\"stage\":1,\"iter\":0,\"factr\":4,\"factor\":4}]",
                       "split", "unknown field 'factr'");
    expect_parse_error("[{\"kind\":\"annotate\",\"stage\":1,\"iter\":0,\"ann\":\"vectorise\"}]",
                       "annotate", "unknown annotation 'vectorise'");
    expect_parse_error(
        "[{\"kind\":\"annotate\",\"stage\":1,\"iter\":0,\"ann\":\"parallel\",\"thread\":\"x\"}]",
        "annotate", "bind only");
    expect_parse_error("[{\"kind\":\"fuse\",\"stage\":1,\"iters\":[0]}]", "'iters'", "at least 2");
    expect_parse_error("[{\"kind\":\"reorder\",\"stage\":1,\"iters\":[0,-1]}]", "'iters' entry 1",
                       "non-negative integer");
    expect_parse_error("[{\"kind\":\"cache_write\",\"stage\":1}]", "'scope'", "missing");
    expect_parse_error(
        "[{\"kind\":\"storage_align\",\"stage\":1,\"iter\":0,\"factor\":1e300,\"offset\":0}]",
        "'factor'", "integer");
    expect_parse_error("[{\"kind\":\"pack\",\"stage\":1,\"iter\":0}]", "'factor'",
                       "missing");
    expect_parse_error("[{\"kind\":\"swizzle\",\"stage\":1,\"transposed\":2}]",
                       "'transposed'", "out of range [0, 1]");
    te_ctx *ctx = te_ctx_new();
    int n;
    sch_step *steps;
    assert_int_equal(tdb_steps_from_json(ctx, NULL, &n, &steps), -1);
    tu_assert_msg_has(te_ctx_errmsg(ctx), "step log", "NULL");
    te_ctx_free(ctx);
}

/* A log that parses but names a stage or axis the workload lacks:
 * sch_replay refuses it, naming the step. */
static void test_replay_names_missing_stage_and_axis(void **state) {
    (void)state;
    te_ctx *ctx = te_ctx_new();
    sched_case c = sh_matmul(ctx, 16, 16, 16);
    int n;
    sch_step *steps;
    assert_int_equal(
        tdb_steps_from_json(ctx, "[{\"kind\":\"split\",\"stage\":9,\"iter\":0,\"factor\":4}]", &n,
                            &steps),
        0);
    assert_null(sch_replay(ctx, 1, &c.out, n, steps));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "replay: step 0 (split)", "no stage 9");
    assert_int_equal(
        tdb_steps_from_json(ctx,
                            "[{\"kind\":\"split\",\"stage\":2,\"iter\":0,\"factor\":4},"
                            "{\"kind\":\"annotate\",\"stage\":2,\"iter\":7,\"ann\":\"parallel\"}]",
                            &n, &steps),
        0);
    assert_null(sch_replay(ctx, 1, &c.out, n, steps));
    tu_assert_msg_has(te_ctx_errmsg(ctx), "replay: step 1 (annotate)", "no loop 7");
    te_ctx_free(ctx);
}

/* ---- fuzz: random mutations of valid logs ---- */

static const char *const tokens[] = {
    "{",         "}",        "[",          "]",         ",",          ":",
    "\"",        "0",        "-1",         "1e999",     "2147483648", "9007199254740993",
    "null",      "true",     "\"kind\"",   "\"split\"", "\"fuse\"",   "\"iters\"",
    "\"stage\"", "\"bind\"", "\"thread\"", "\\u0000",   "3.5",        "[]",
    "{}"};

static size_t mutate(uint64_t *rng, const char *src, char *dst, size_t cap) {
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    int rounds = 1 + (int)(tu_rand_u64(rng) % 4);
    for (int r = 0; r < rounds; r++) {
        size_t pos = n ? (size_t)(tu_rand_u64(rng) % n) : 0;
        switch (tu_rand_u64(rng) % 5) {
        case 0: /* flip a byte */
            if (n) dst[pos] = (char)(tu_rand_u64(rng) & 0xff);
            break;
        case 1: /* delete a span */
            if (n) {
                size_t len = 1 + (size_t)(tu_rand_u64(rng) % 8);
                if (pos + len > n) len = n - pos;
                memmove(dst + pos, dst + pos + len, n - pos - len);
                n -= len;
            }
            break;
        case 2: { /* insert a token */
            const char *t = tokens[tu_rand_u64(rng) % (sizeof tokens / sizeof *tokens)];
            size_t len = strlen(t);
            if (n + len < cap) {
                memmove(dst + pos + len, dst + pos, n - pos);
                memcpy(dst + pos, t, len);
                n += len;
            }
            break;
        }
        case 3: /* truncate */ n = pos; break;
        default: /* duplicate a span */
            if (n) {
                size_t len = 1 + (size_t)(tu_rand_u64(rng) % 32);
                if (pos + len > n) len = n - pos;
                if (n + len < cap) {
                    memmove(dst + pos + len, dst + pos, n - pos);
                    n += len;
                }
            }
        }
    }
    dst[n] = 0;
    return n;
}

static void test_fuzz_parser(void **state) {
    (void)state;
    /* LOOM_FUZZ_SECONDS lengthens the run (by hand, under ASan). */
    const char *env = getenv("LOOM_FUZZ_SECONDS");
    double seconds = env ? atof(env) : 1.0;
    te_ctx *ctx = te_ctx_new();
    sched_case c = mk_matmul(ctx);
    sch_schedule *s = schedule_everything(ctx, &c);
    char *seed_a = tdb_schedule_to_json(s);
    te_ctx_free(ctx);
    const char *seeds[] = {seed_a,
                           "[{\"kind\":\"rfactor\",\"stage\":2,\"iter\":2,\"factor_axis\":0},"
                           "{\"kind\":\"compute_at\",\"stage\":1,\"target_stage\":2,\"iter\":0},"
                           "{\"kind\":\"annotate\",\"stage\":2,\"iter\":0,\"ann\":\"bind\","
                           "\"thread\":\"blockIdx.x\"}]"};
    uint64_t rng = tu_seed() | 1;
    size_t cap = 2 * strlen(seed_a) + 256;
    char *buf = malloc(cap);
    clock_t end = clock() + (clock_t)(seconds * CLOCKS_PER_SEC);
    long iters = 0, parsed = 0, replayed = 0;
    ctx = NULL;
    sched_case w;
    while (clock() < end) {
        if (iters % 256 == 0) {
            te_ctx_free(ctx);
            ctx = te_ctx_new();
            w = sh_matmul(ctx, 40, 48, 36);
        }
        mutate(&rng, seeds[iters % 2], buf, cap);
        int n;
        sch_step *steps;
        if (tdb_steps_from_json(ctx, buf, &n, &steps) == 0) {
            parsed++;
            char *again = tdb_steps_to_json(n, steps);
            assert_non_null(again);
            int n2;
            sch_step *steps2;
            assert_int_equal(tdb_steps_from_json(ctx, again, &n2, &steps2), 0);
            char *third = tdb_steps_to_json(n2, steps2);
            assert_string_equal(again, third);
            free(again);
            free(third);
            if (sch_replay(ctx, 1, &w.out, n, steps)) replayed++;
        } else {
            assert_true(strlen(te_ctx_errmsg(ctx)) > 0);
        }
        iters++;
    }
    print_message("fuzz: %ld mutations, %ld parsed, %ld replayed\n", iters, parsed, replayed);
    assert_true(iters > 100);
    te_ctx_free(ctx);
    free(buf);
    free(seed_a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_everything),
        cmocka_unit_test(test_round_trip_rfactor),
        cmocka_unit_test(test_round_trip_inline),
        cmocka_unit_test(test_bind_and_text_form),
        cmocka_unit_test(test_dedup_key_is_stored_log),
        cmocka_unit_test(test_text_is_the_stored_format),
        cmocka_unit_test(test_malformed_logs),
        cmocka_unit_test(test_replay_names_missing_stage_and_axis),
        cmocka_unit_test(test_fuzz_parser),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
