/*
 * Tutorial 6: your own operator, from declaration to a tuned kernel
 * applied from the tuning database.
 *
 * Y[i, j] = gelu(sum_k A[i, k] W[k, j] + bias[j]), the exact GELU
 * 0.5 x (1 + erf(x / sqrt 2)), float32: a fused layer that the operator
 * library does not have in this layout. The steps:
 *   1. declare it with te_* calls inside a *builder*, a function that
 *      builds the computation from a workload key, registered with
 *      tune_register_builder under the key's prefix;
 *   2. schedule it by hand with sch_* calls and check the result;
 *   3. tune it into a database with one call, tune_task_db, the hand
 *      schedule being the first trial (tune_options.first_steps_json);
 *   4. apply the best record in a fresh process (this program run again
 *      with --apply) with tdb_apply_best, and check it against a
 *      double-precision reference.
 * The builder is registered before tune_runner_maybe_run: the runner
 * processes that measure must rebuild the workload from its key, and the
 * loom-runner program cannot see a builder registered here, so this
 * workload's runners are this program started again. (A library of
 * operators can instead be a plugin, which loom-runner loads too: see
 * README, `autotune --plugin`.)
 *
 *   ./tutorial_06_custom_operator            # 256 x 256 x 256, 64 trials, ./custom_operator.db
 *   ./tutorial_06_custom_operator --check    # 64 x 64 x 64, 8 trials, a temporary database
 *   ./tutorial_06_custom_operator --db F --trials N
 *   ./tutorial_06_custom_operator --search-alone --db F
 *       the search alone: the hand schedule is no trial and the derived
 *       default is skipped (what a fused subgraph of a model gets), and
 *       a step 5 times the hand schedule and the best record side by
 *       side (issue 35's target: the search within 64 trials at least
 *       0.9x the hand schedule's speed)
 * Exits non-zero when a step fails or a result is wrong. Afterwards
 * `tunedb --db custom_operator.db list` shows the records.
 */
#include <loom/loom.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The key's prefix; the key is "tutorial.mm_bias_gelu(M=..,N=..,K=..)". */
#define OP "tutorial.mm_bias_gelu"

typedef struct {
    int64_t M, N, K;
    te_tensor *A, *W, *bias, *C, *Y;
} layer;

/* Declares the layer in ctx from the sizes in its key. */
static int declare(te_ctx *ctx, const char *key, layer *l) {
    long long M, N, K;
    int used = 0;
    if (sscanf(key, OP "(M=%lld,N=%lld,K=%lld)%n", &M, &N, &K, &used) != 3 || key[used] ||
        M < 1 || N < 1 || K < 1)
        return te_error(ctx, "%s: bad key '%s': expected %s(M=..,N=..,K=..)", OP, key, OP);
    l->M = M, l->N = N, l->K = K;
    l->A = te_placeholder(ctx, "A", TE_FLOAT32, TE_SHAPE(M, K));
    l->W = te_placeholder(ctx, "W", TE_FLOAT32, TE_SHAPE(K, N));
    l->bias = te_placeholder(ctx, "bias", TE_FLOAT32, TE_SHAPE(N));
    te_expr *i = te_axis(ctx, "i", M), *j = te_axis(ctx, "j", N), *k = te_reduce_axis(ctx, "k", K);
    l->C = te_compute(ctx, "C", TE_AXES(i, j),
                      te_sum(te_mul(te_read(l->A, i, k), te_read(l->W, k, j)), k));
    te_expr *y = te_axis(ctx, "y", M), *x = te_axis(ctx, "x", N);
    te_expr *v = te_add(te_read(l->C, y, x), te_read(l->bias, x));
    te_expr *gelu = te_mul(te_mul(te_float(ctx, 0.5), v),
                           te_add(te_float(ctx, 1.0), te_erf(te_mul(v, te_float(ctx, M_SQRT1_2)))));
    l->Y = te_compute(ctx, "Y", TE_AXES(y, x), gelu);
    return l->Y ? 0 : -1;
}

/* The builder: what the tuner, its runners and the database call to
 * rebuild the workload of a key (args: inputs, then the output). */
static int build(te_ctx *ctx, const char *key, tune_workload *out) {
    layer l;
    if (declare(ctx, key, &l)) return -1;
    out->nargs = 4;
    out->args = te_alloc(ctx, 4 * sizeof(te_tensor *));
    if (!out->args) return -1;
    out->args[0] = l.A, out->args[1] = l.W, out->args[2] = l.bias, out->args[3] = l.Y;
    out->nouts = 1;
    out->outs = out->args + 3;
    out->flops = 2.0 * l.M * l.N * l.K + 4.0 * l.M * l.N; /* multiply-adds; bias, erf, 2 muls */
    return 0;
}

/* A schedule written by hand: 8 x 16 tiles of Y, the inner 16 columns
 * vectorized, the tile rows in parallel; each tile's C computed inside it
 * with k outermost, so the 8 x 16 accumulators stay in registers. */
static int hand_schedule(sch_schedule *s, const layer *l) {
    te_expr *io, *jo, *ii, *ji;
    if (sch_tile(s, l->Y, sch_axis(l->Y, 0), sch_axis(l->Y, 1), 8, 16, &io, &jo, &ii, &ji) ||
        sch_vectorize(s, l->Y, ji) || sch_parallel(s, l->Y, io) ||
        sch_compute_at(s, l->C, l->Y, jo))
        return -1;
    te_expr *ci = sch_axis(l->C, 0), *cj = sch_axis(l->C, 1), *ck = sch_reduce_axis(l->C, 0);
    return sch_reorder(s, l->C, TE_AXES(ck, ci, cj)) || sch_unroll(s, l->C, ci) ||
           sch_vectorize(s, l->C, cj);
}

static uint64_t rng_state;
static float uniform(void) { /* xorshift64*, in [-1, 1) */
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    return (float)((double)((rng_state * 0x2545F4914F6CDD1Dull) >> 11) * 0x1p-52 - 1.0);
}

/* Runs m (arguments A, W, bias, Y of key's sizes) on fresh random inputs
 * with Y poisoned by NaN and compares with a double-precision reference:
 * the count of elements off by more than 1e-4 + 1e-4 |want|, or -1. */
static int64_t check(rt_module *m, const layer *l) {
    int64_t M = l->M, N = l->N, K = l->K;
    DLDataType f32 = {kDLFloat, 32, 1};
    DLTensor *A = rt_tensor_alloc(f32, 2, (int64_t[]){M, K});
    DLTensor *W = rt_tensor_alloc(f32, 2, (int64_t[]){K, N});
    DLTensor *b = rt_tensor_alloc(f32, 1, (int64_t[]){N});
    DLTensor *Y = rt_tensor_alloc(f32, 2, (int64_t[]){M, N});
    double *want = malloc(sizeof(double) * (size_t)(M * N));
    int64_t bad = -1;
    if (A && W && b && Y && want) {
        float *a = A->data, *w = W->data, *bi = b->data, *y = Y->data;
        for (int64_t t = 0; t < M * K; t++) a[t] = uniform();
        for (int64_t t = 0; t < K * N; t++) w[t] = uniform();
        for (int64_t t = 0; t < N; t++) bi[t] = uniform();
        for (int64_t t = 0; t < M * N; t++) y[t] = NAN;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double v = bi[j];
                for (int64_t k = 0; k < K; k++) v += (double)a[i * K + k] * w[k * N + j];
                want[i * N + j] = 0.5 * v * (1 + erf(v * M_SQRT1_2));
            }
        if (rt_call(m, "default", 4, (DLTensor *[]){A, W, b, Y}) == 0) {
            bad = 0;
            for (int64_t t = 0; t < M * N; t++)
                bad += !(fabs(y[t] - want[t]) <= 1e-4 + 1e-4 * fabs(want[t]));
        } else {
            fprintf(stderr, "run failed: %s\n", rt_last_error());
        }
    }
    rt_tensor_free(A), rt_tensor_free(W), rt_tensor_free(b), rt_tensor_free(Y);
    free(want);
    return bad;
}

/* The median of 7 values (sorts them). */
static double median7(double *v) {
    for (int i = 1; i < 7; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1], v[j - 1] = x;
        }
    return v[3];
}

/* Step 5 (--search-alone): the hand schedule and the best record of key
 * in db, built here, timed in turns (7 rounds of 5 samples of at least
 * 20 ms each, so a host that changes speed slows both alike); prints the
 * medians and the hand schedule's time over the search's. 0 or 1. */
static int compare_with_hand(const char *db_path, const char *key) {
    char *err = NULL;
    tdb_open_options ro = {.readonly = true};
    tdb_db *db = tdb_open(db_path, &ro, &err);
    te_ctx *ctx = te_ctx_new(), *hctx = te_ctx_new();
    /* The key the tuner filed the records under: this host's CPU and
     * the threads the runners used (the pool's default count). */
    char *target = tune_record_key("llvm", 0, NULL);
    layer l, hl;
    sch_schedule *s = NULL;
    tdb_apply_info info;
    rt_module *best = db ? tdb_apply_best(db, ctx, key, target, &info) : NULL;
    rt_module *hand = !declare(hctx, key, &hl) && (s = sch_create(hctx, TE_TENSORS(hl.Y))) &&
                              !hand_schedule(s, &hl)
                          ? cg_build(s, TE_TENSORS(hl.A, hl.W, hl.bias, hl.Y), "llvm", NULL)
                          : NULL;
    int rc = 1;
    if (best && hand && !declare(ctx, key, &l)) {
        DLDataType f32 = {kDLFloat, 32, 1};
        DLTensor *A = rt_tensor_alloc(f32, 2, (int64_t[]){l.M, l.K});
        DLTensor *W = rt_tensor_alloc(f32, 2, (int64_t[]){l.K, l.N});
        DLTensor *b = rt_tensor_alloc(f32, 1, (int64_t[]){l.N});
        DLTensor *Y = rt_tensor_alloc(f32, 2, (int64_t[]){l.M, l.N});
        rt_timer_config cfg = rt_timer_default();
        cfg.min_repeat_ms = 20;
        double th[7], ts[7];
        rt_timing t;
        int ok = A && W && b && Y;
        for (int64_t i = 0; ok && i < l.M * l.K; i++) ((float *)A->data)[i] = uniform();
        for (int64_t i = 0; ok && i < l.K * l.N; i++) ((float *)W->data)[i] = uniform();
        for (int64_t i = 0; ok && i < l.N; i++) ((float *)b->data)[i] = uniform();
        for (int r = 0; ok && r < 7; r++) {
            ok = !rt_time_call(hand, "default", 4, (DLTensor *[]){A, W, b, Y}, &cfg, &t);
            th[r] = t.median;
            ok = ok && !rt_time_call(best, "default", 4, (DLTensor *[]){A, W, b, Y}, &cfg, &t);
            ts[r] = t.median;
        }
        if (ok) {
            printf("5. side by side: hand schedule %.4f ms, the search's best %.4f ms: "
                   "the search at %.2fx the hand schedule's speed\n",
                   median7(th) * 1e3, median7(ts) * 1e3,
                   median7(th) / median7(ts));
            rc = 0;
        } else {
            fprintf(stderr, "timing failed: %s\n", rt_last_error());
        }
        rt_tensor_free(A), rt_tensor_free(W), rt_tensor_free(b), rt_tensor_free(Y);
    } else {
        fprintf(stderr, "step 5: %s\n", err ? err : db ? tdb_errmsg(db) : te_ctx_errmsg(hctx));
    }
    rt_module_free(best), rt_module_free(hand);
    free(target), free(err);
    te_ctx_free(ctx), te_ctx_free(hctx);
    if (db) tdb_close(db);
    return rc;
}

/* Step 4, in a fresh process: the best record of key from db. */
static int apply_from_db(const char *db_path, const char *key) {
    tdb_open_options ro = {.readonly = true};
    char *err = NULL;
    tdb_db *db = tdb_open(db_path, &ro, &err);
    if (!db) {
        fprintf(stderr, "%s\n", err ? err : db_path);
        free(err);
        return 1;
    }
    te_ctx *ctx = te_ctx_new();
    /* The key the tuner filed the records under: this host's CPU and
     * the threads the runners used (the pool's default count). */
    char *target = tune_record_key("llvm", 0, NULL);
    tdb_apply_info info;
    /* The builder registered in main rebuilds the workload; the record's
     * step log is replayed on it and built. */
    rt_module *m = tdb_apply_best(db, ctx, key, target, &info);
    int rc = 1;
    if (!m) {
        fprintf(stderr, "apply failed: %s\n", tdb_errmsg(db));
    } else {
        printf("4. [a fresh process, pid %d] %s\n", (int)getpid(), info.message);
        layer l;
        int64_t bad = declare(ctx, key, &l) ? -1 : check(m, &l);
        printf("   checked against a double-precision reference: %s\n",
               bad == 0 ? "correct" : "WRONG");
        rc = bad == 0 && !info.fallback ? 0 : 1;
        rt_module_free(m);
    }
    free(target);
    te_ctx_free(ctx);
    tdb_close(db);
    return rc;
}

/* Runs this program again with --apply: a process that has only the
 * database and the builder. */
static int apply_in_fresh_process(const char *db_path, const char *key) {
    fflush(stdout); /* or the child would print this process's buffered lines again */
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        execl("/proc/self/exe", "tutorial_06_custom_operator", "--apply", db_path, key,
              (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) return 1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static void on_event(void *user, const tune_db_report *r) {
    (void)user;
    const tune_db_task *t = &r->summary->tasks[0];
    if (r->event == TUNE_DB_TRIAL)
        printf("   trial %2d: %s%s\n", t->trials,
               r->result->error_code ? tune_error_name(r->result->error_code) : "ok",
               t->best_trial == t->trials ? "  (best so far)" : "");
    else if (r->event == TUNE_DB_WARNING)
        fprintf(stderr, "   %s\n", r->message);
}

int main(int argc, char **argv) {
    /* Before tune_runner_maybe_run: runner processes rebuild the workload. */
    tune_register_builder(OP, build);
    tune_runner_maybe_run(argc, argv);

    bool check_mode = false, alone = false;
    const char *db_path = NULL;
    int trials = 64;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--apply") && a + 2 < argc) return apply_from_db(argv[a + 1], argv[a + 2]);
        if (!strcmp(argv[a], "--check")) check_mode = true;
        else if (!strcmp(argv[a], "--search-alone")) alone = true;
        else if (!strcmp(argv[a], "--db") && a + 1 < argc) db_path = argv[++a];
        else if (!strcmp(argv[a], "--trials") && a + 1 < argc) trials = atoi(argv[++a]);
        else {
            fprintf(stderr, "usage: %s [--check] [--search-alone] [--db FILE] [--trials N]\n",
                    argv[0]);
            return 2;
        }
    }
    if (check_mode && trials == 64) trials = 8;
    if (trials < 1) {
        fprintf(stderr, "--trials: a positive count\n");
        return 2;
    }
    int64_t n = check_mode ? 64 : 256;
    char key[128], tmp[64];
    snprintf(key, sizeof key, OP "(M=%lld,N=%lld,K=%lld)", (long long)n, (long long)n,
             (long long)n);
    if (!db_path) {
        snprintf(tmp, sizeof tmp, "/tmp/loom_tutorial06_%d.db", (int)getpid());
        db_path = check_mode ? tmp : "custom_operator.db";
    }
    rng_state = ((uint64_t)time(NULL) ^ (uint64_t)getpid() << 32) | 1; /* fresh data each run */

    /* 1 and 2: the layer, scheduled by hand, checked. */
    te_ctx *ctx = te_ctx_new();
    layer l;
    sch_schedule *s = NULL;
    if (declare(ctx, key, &l) || !(s = sch_create(ctx, TE_TENSORS(l.Y))) || hand_schedule(s, &l)) {
        fprintf(stderr, "%s\n", te_ctx_errmsg(ctx));
        return 1;
    }
    rt_module *m = cg_build(s, TE_TENSORS(l.A, l.W, l.bias, l.Y), "llvm", NULL);
    int64_t bad = m ? check(m, &l) : -1;
    rt_module_free(m);
    printf("1-2. %s, scheduled by hand: %s\n", key, bad == 0 ? "correct" : "WRONG");
    if (bad != 0) return 1;
    /* The schedule as a step log: what the database stores and the tuner
     * replays. */
    char *hand = tdb_schedule_to_json(s);
    te_ctx_free(ctx);

    /* 3: tuned into the database; the hand schedule is trial 1. */
    char *err = NULL;
    tdb_db *db = tdb_open(db_path, NULL, &err);
    if (!db || !hand) {
        fprintf(stderr, "%s\n", err ? err : "out of memory");
        return 1;
    }
    tune_db_options o;
    memset(&o, 0, sizeof o);
    o.tune.trials = trials;
    o.tune.per_round = check_mode ? 4 : 16;
    o.tune.population = check_mode ? 64 : 512;
    o.tune.generations = check_mode ? 2 : 4;
    o.tune.measure.threads = 2;     /* builds at once */
    o.tune.measure.run_timeout = 10;
    o.tune.measure.build_timeout = 15;
    o.tune.measure.repeat = 3;
    o.tune.measure.min_repeat_ms = 10;
    o.tune.first_steps_json = alone ? NULL : hand;
    o.tune.skip_default = alone;
    o.resume = true;                /* run it again: the trials add up */
    o.retime = check_mode ? 3 : 8;
    o.on_event = on_event;
    printf("3. tuning %d trials into %s (runner processes measure each)%s\n", trials, db_path,
           alone ? ", the search alone" : "");
    tune_db_summary sum;
    int rc = tune_task_db(db, key, "llvm", &o, &sum, &err);
    if (rc) {
        fprintf(stderr, "tuning failed: %s\n", err ? err : "?");
    } else {
        const tune_db_task *t = &sum.tasks[0];
        if (t->first_steps_note[0]) printf("   note: %s\n", t->first_steps_note);
        printf("   best: trial %d of %d, %.4f ms, %.2f GFLOP/s\n", t->best_trial, t->trials,
               t->best_s * 1e3, t->best_gflops);
        if (t->retimed)
            printf("   re-timed the %d best side by side: record #%lld leads, %.4f ms\n",
                   t->retimed, (long long)t->retime_best_id, t->retime_best_s * 1e3);
    }
    tune_db_summary_free(&sum);
    free(err);
    free(hand);
    tdb_close(db);

    /* 4: a fresh process applies the best record. */
    if (rc == 0) rc = apply_in_fresh_process(db_path, key);
    if (rc == 0 && alone) rc = compare_with_hand(db_path, key);
    if (check_mode) {
        char wal[96];
        unlink(db_path);
        snprintf(wal, sizeof wal, "%s-wal", db_path), unlink(wal);
        snprintf(wal, sizeof wal, "%s-shm", db_path), unlink(wal);
    }
    if (rc == 0 && !check_mode)
        printf("see the records: tunedb --db %s list; tunedb --db %s best --workload '%s'\n",
               db_path, db_path, key);
    return rc ? 1 : 0;
}
