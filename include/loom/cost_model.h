/*
 * loom/cost_model.h — the learned cost model: per-statement program
 * features and an XGBoost model that ranks candidate programs.
 *
 * Model: Ansor (Zheng et al., "Ansor: Generating High-Performance Tensor
 * Programs for Deep Learning", OSDI 2020, sec. 5.2) and its code in TVM
 * (src/auto_scheduler/feature.cc, python/tvm/auto_scheduler/cost_model/
 * xgb_model.py). A program is described by one fixed-length feature vector
 * per innermost store statement; a gradient-boosted tree predicts a score
 * per statement, and a program's score is the sum over its statements
 * ("pack-sum"). Higher scores mean faster programs. With Ansor's squared
 * loss, scores are throughputs relative to the best program of the same
 * task (1 is the best seen); with the rank loss (Loom's default), which
 * learns only the order of a task's programs, their scale means nothing.
 *
 * Threads: feature extraction touches only its inputs and may run on many
 * threads at once (one te_ctx per thread). One cm_model is used by one
 * thread at a time.
 */
#ifndef LOOM_COST_MODEL_H
#define LOOM_COST_MODEL_H

#include "loom/api.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loom/schedule.h"
#include "loom/te.h"
#include "loom/tir.h"

#ifdef __cplusplus
extern "C" {
#endif
LOOM_API_BEGIN

/* ------------------------------------------------------------------ */
/* Features                                                            */
/* ------------------------------------------------------------------ */

/* Length of a statement's feature vector (Ansor's 164 and Loom's 9). */
#define CM_NUM_FEATURES 173
/* Buffers described per statement (the rest are dropped). */
#define CM_MAX_BUFFERS 5
/* Samples of the arithmetic-intensity curve. */
#define CM_CURVE_SAMPLES 10
/* The version of the features' definition; a saved model records the
 * version it was trained on and is refused by a library that extracts
 * another (its trees would read the features wrongly). 1: the intensity
 * curve in linear FLOP; 2: in Ansor's log scale; 3: vec_lane_waste
 * and the store.* group appended; 4: the tensor-core group appended; 5:
 * tc_mma_flops counting wgmma, tc_wgmma_calls and tc_wgmma_n appended. */
#define CM_FEATURE_VERSION 5

/*
 * Layout (indices), in Ansor's order and with Ansor's names:
 *   0..56    computation and loop annotations:
 *            float_mad float_addsub float_mul float_divmod float_cmp
 *            float_mathfunc float_otherfunc, int_* likewise, bool_op,
 *            select_op (operation counts over the whole loop nest, vector
 *            lanes counted); vec_num vec_prod vec_len vec_type.kPos* (8,
 *            one-hot), unroll_* and parallel_* likewise; is_gpu,
 *            blockIdx_{x,y,z}_len, threadIdx_{x,y,z}_len, vthread_len.
 *   57..146  per buffer B0..B4 (sorted by cache lines, then bytes,
 *            largest first; zero when absent), 18 each: acc_type.kRead
 *            kWrite kReadWrite (one-hot), bytes, unique_bytes, lines,
 *            unique_lines, reuse_type.kLoopMultipleRead
 *            kSerialMultipleReadWrite kNoReuse (one-hot), reuse_dis_iter,
 *            reuse_dis_bytes, reuse_ct, bytes_d_reuse_ct,
 *            unique_bytes_d_reuse_ct, lines_d_reuse_ct,
 *            unique_lines_d_reuse_ct, stride.
 *   147..156 arith_intensity_curve_0..9: log2 FLOP / log2 bytes touched
 *            below a loop level, against log2 of the FLOP below it,
 *            sampled at 10 equally spaced points of that log from the
 *            innermost loop outwards, linearly interpolated between
 *            levels (Ansor's curve, TVM feature.cc).
 *   157..160 alloc_size (bytes), alloc_prod, alloc_outer_prod,
 *            alloc_inner_prod (of the stored buffer when the program
 *            allocates it; else 0).
 *   161..163 outer_prod (iterations of the statement), num_loops,
 *            auto_unroll_max_step.
 *   164      vec_lane_waste (Loom's): the share of vector lanes left idle
 *            when the innermost vectorized loop's length `len` is cut
 *            into the target's vectors of L = vector_bytes / (the stored
 *            element's bytes) lanes: (ceil(len/L)*L - len) / (ceil(len/L)*L);
 *            0 without a vectorized loop. Ansor's vec_len gives the length
 *            but not how it fits the registers, and the tree cannot learn
 *            divisibility from one length feature: on the CPU records,
 *            matmul programs whose multiply-add vector is not a whole
 *            number of 16-lane registers run 1.3-3.3x slower, and the
 *            feature raised held-out ranking accuracy from 0.848 to 0.850
 *            on the mean of eight seeds, higher in each (bench/RESULTS.md,
 *            session 25).
 *   165..167 store.reuse_dis_iter, store.reuse_dis_bytes, store.reuse_ct
 *            (Loom's): the stored buffer's reuse features (as its B*
 *            group's), at fixed positions. Ansor orders the buffers by
 *            cache lines, so the accumulator of one program is B0 and of
 *            the next B2, and a tree must learn its reuse distance (the
 *            size of the tile it cycles through between two reduction
 *            steps) once per slot; here it is always the same feature.
 *            Held out on the suite's CPU records: 0.850 -> 0.852 on the
 *            mean of eight seeds, higher in seven (bench/RESULTS.md,
 *            session 25).
 *   168..170 tc_mma_flops, tc_fragment_loads, pipeline_stages (Loom's;
 *            of the whole function, the same in each of its rows): the
 *            FLOPs of its tensor-core multiply-accumulates (each
 *            TENSOR_CALL wmma.mma 2 x 16 x 16 x k, k 16 or 8 for tf32,
 *            times the iterations of the loops around it but the warp's
 *            lanes on threadIdx.x), its wmma.load_a/load_b calls counted
 *            alike, and the depth of its cp.async pipeline (the largest
 *            cuda.async_wait n plus 1; 2 for a plain double buffer; 0
 *            none). A tensor-core program computes in calls, not stores,
 *            so without these its rows show only the copies: the model
 *            could not tell a 4-stage 128x128 block from a 1-stage 16x16
 *            one by its compute. Hopper's warpgroup MMA (wgmma.mma,
 *            m64 x n x 16, 2 x 64 x n x 16 FLOPs, counted alike but the
 *            warpgroup's 128 threads) adds its FLOPs to tc_mma_flops.
 *   171..172 tc_wgmma_calls, tc_wgmma_n (Loom's; whole function): its
 *            wgmma.mma calls (counted as tc_fragment_loads are) and the
 *            widest n of their m64 x n x 16 shape (0: no wgmma). A wgmma
 *            program reads its operands from shared memory (no fragment
 *            loads), so its per-call width, which sets how much of a
 *            shared tile one call reuses, is what tells its warpgroup
 *            tiles apart; the calls, how finely the work is cut.
 * Every value except the one-hots and is_gpu is log2(1 + x) scaled unless
 * raw values are asked for (cm_extract_options.raw).
 *
 * Definitions follow TVM's feature.cc, with these differences:
 * - Accesses are analysed on flat (or multi-dimensional, linearised by
 *   the buffer's strides) indices as affine forms in the loop variables;
 *   the unique elements touched by a set of loops are counted from the
 *   strides and extents of the terms (exact for boxes, dense or strided),
 *   not from a bounding interval. Non-affine parts (floordiv, floormod,
 *   min, max, products of variables) contribute their value interval.
 * - A vector store or load (a RAMP index, after tir_pass_vectorize) counts
 *   as an innermost VECTORIZED loop of `lanes` iterations, so features of a
 *   function before and after vectorization agree.
 * - float_mad counts float additions with a multiplication operand (those
 *   are then not counted in float_addsub / float_mul); Ansor leaves it 0.
 * - Annotation positions (kPos*) are relative to the statement's loop
 *   nest: a loop whose variable indexes the stored buffer is spatial, one
 *   that indexes only read buffers is reduce; inner/middle/outer by
 *   position among those loops; a loop that indexes nothing counts as
 *   outer spatial (Ansor's rule for such loops). kPosMixed is not used.
 * - Thread extents are 0 on a CPU program (no THREAD loop anywhere) and 1
 *   for an axis a GPU statement is not bound to.
 * - Ansor merges the statements storing the same buffer into one vector;
 *   Loom keeps one vector per store statement (its input to the pack-sum
 *   is the same sum).
 */

/* CM_NUM_FEATURES. */
int cm_num_features(void);
/* The name of feature i ("float_addsub", "B0.bytes", ...), static storage;
 * NULL when i is out of [0, CM_NUM_FEATURES). */
const char *cm_feature_name(int i);
/* The index of a named feature, or -1. */
int cm_feature_index(const char *name);

typedef struct {
    bool raw;             /* values without the log2(1 + x) scaling */
    int cache_line_bytes; /* 0: 64 */
    int vector_bytes;     /* the target's vector register width in bytes,
                             for vec_lane_waste; 0: 64 (AVX-512). The
                             tuner passes tune_target_vector_bytes */
    /* cm_extract_schedule only: the program as built for a target. */
    bool gpu;                 /* target cuda: the GPU passes and verify_gpu */
    tir_gpu_limits gpu_limits;/* with gpu; 0 fields: the defaults */
    uint64_t constant_args;   /* CPU: bit i marks args[i] constant; the
                                 pre-computed stages are not scored */
} cm_extract_options;

/*
 * One feature vector per store statement (STORE or BUFFER_STORE) of f, in
 * program order (pre-order, then-branch before else-branch). f may be the
 * direct output of sch_lower, a function after some passes, or after the
 * whole tir_run_pipeline; what the tuner ranks should always be taken at
 * the same point. Both branches of an IF count (conditions are ignored).
 *
 * On success returns 0, *out = a malloc'd row-major array of
 * *nstmts x CM_NUM_FEATURES floats (the caller frees it; NULL when
 * *nstmts is 0) and, when names is non-NULL, *names = a malloc'd array of
 * *nstmts pointers to the stored buffers' names (owned by f's arena; free
 * only the array). Returns -1 on a NULL f or exhausted memory, with the
 * reason in ctx (ctx may be NULL: then the reason is lost).
 * Cost: linear in the statements times loop depth; a tiled matmul takes
 * a few microseconds.
 */
int cm_extract(te_ctx *ctx, const tir_func *f, float **out, int *nstmts);
int cm_extract_ex(te_ctx *ctx, const tir_func *f, const cm_extract_options *opts, float **out,
                  int *nstmts, const char ***names);

/* The features the tuner's scorer sees for s: the lowering list
 * (sch_lower_program over args, name "default") in its model view — all
 * the passes, with unrolling only marked (tir_pass_unroll_hinted), on a
 * CPU without loop partitioning, on gpu (opts->gpu) the GPU passes and
 * verify_gpu — then cm_extract_ex of the per-call function. The same
 * schedule gives the same features here as in the tuner. The lowered
 * function lives in s's ctx arena. Errors: those of the list (a schedule
 * that does not lower, a GPU program verify_gpu rejects) and of
 * cm_extract, with the reason in the ctx. */
int cm_extract_schedule(sch_schedule *s, int nargs, te_tensor *const *args,
                        const cm_extract_options *opts, float **out, int *nstmts);

/* A CSV dump for inspection: a header "stmt,buffer,<feature names>" and
 * one line per store statement, appended to out. Returns 0 or -1 (reason
 * in ctx). */
int cm_features_csv(te_ctx *ctx, const tir_func *f, const cm_extract_options *opts, te_str *out);

/* ------------------------------------------------------------------ */
/* Pack-sum objective                                                  */
/* ------------------------------------------------------------------ */

/*
 * Ansor's pack-sum squared error. Rows are statements; row r belongs to
 * program prog_of_row[r] in [0, nprog). With per-statement predictions
 * f_r, a program's score is S_p = sum of f_r over its rows, and
 *
 *     L = 1/2 * sum_p w_p * (S_p - y_p)^2
 *
 * where y_p is the program's label (min latency of its task / its
 * latency) and w_p its weight (Ansor: w_p = y_p, so that the fast
 * programs, the ones the search cares about, are fitted best). Then for a
 * row r of program p, which has n_p rows,
 *
 *     grad_r = dL/df_r = w_p * (S_p - y_p)
 *     hess_r = w_p * n_p
 *
 * XGBoost takes a diagonal Hessian, but L's Hessian has the full block
 * w_p * 1 1^T over the rows of p. Ansor passes its diagonal w_p; Loom
 * passes its row sum w_p * n_p, a diagonal matrix that bounds the block
 * from above (diagonal dominance), so a boosting round's Newton step moves
 * S_p towards y_p by about eta * (y_p - S_p) however many statements p has,
 * as for a one-statement program (with w_p, a round moves
 * S_p by up to eta * n_p * (y_p - S_p): past the label when eta * n_p > 1,
 * which, with Loom's up to 16 statements per program after loop
 * partitioning, ended training after one round). For a one-statement
 * program both agree. weights may be NULL (all 1). grad and hess hold
 * nrows floats (the caller's storage). Rows whose program is not in
 * [0, nprog) get 0. Out of memory: the loss is NaN, grad and hess all 0.
 */
double cm_pack_sum_loss(int nrows, const float *preds, const int *prog_of_row, int nprog,
                        const float *labels, const float *weights);
void cm_pack_sum_gradient(int nrows, const float *preds, const int *prog_of_row, int nprog,
                          const float *labels, const float *weights, float *grad, float *hess);

/*
 * Pack-sum pairwise rank loss (RankNet's logistic pair loss: Burges et
 * al., "Learning to Rank using Gradient Descent", ICML 2005; later learned
 * cost models of tensor programs, TenSet's MLP model and TLP, train with
 * rank losses too). Scores S_p are pack-sums as above; for a pair
 * (a, b) of programs of the same task where a is faster (larger label),
 *
 *     L = sum over pairs  w_ab * log(1 + exp(-(S_a - S_b)))
 *
 * so only the order of the scores is learnt, not their values. For a row
 * r of program p (n_p rows), grad_r = dL/dS_p and, as for the squared
 * error, hess_r = n_p * d2L/dS_p^2 (the row sum of p's Hessian block).
 */
typedef struct {
    int faster, slower; /* program indices, labels[faster] > labels[slower] */
    float weight;
} cm_pair;

/*
 * The pairs the rank loss sums over: each program p is paired with every
 * other program of its task, or, when the task has more than
 * max_partners + 1 programs, with max_partners others drawn at random
 * (with replacement; generator seeded by seed), so the cost is
 * O(nprog * max_partners) however large a task grows. Each of p's pairs
 * has weight 1 / (its partner count): every program weighs the same.
 * Pairs of equal labels are dropped (they have no order). task_of_prog
 * NULL: one task; max_partners <= 0: no limit.
 * Returns 0 with *out = a malloc'd array of *npairs pairs (the caller
 * frees it), or -1 (*out NULL, *npairs 0) on a negative nprog, NULL
 * labels, out or npairs, exhausted memory or more than INT_MAX pairs.
 */
int cm_rank_pairs(int nprog, const float *labels, const int *task_of_prog, int max_partners,
                  uint64_t seed, cm_pair **out, int *npairs);
/* The rank loss L over the pairs and its per-row gradient and Hessian
 * (grad and hess: nrows floats, the caller's storage). Pairs whose
 * programs are not in [0, nprog) are skipped, as are rows whose program
 * is. Out of memory: the loss is NaN, grad and hess are all 0. */
double cm_pack_sum_rank_loss(int nrows, const float *preds, const int *prog_of_row, int nprog,
                             int npairs, const cm_pair *pairs);
void cm_pack_sum_rank_gradient(int nrows, const float *preds, const int *prog_of_row, int nprog,
                               int npairs, const cm_pair *pairs, float *grad, float *hess);

/* Pairwise ranking accuracy: over all pairs (a, b) of programs of the same
 * task with different latencies, the fraction where the score orders them
 * as the latencies do (higher score = lower latency). Programs with
 * latency <= 0 (failed) are skipped. task_ids may be NULL (one task).
 * Returns a value in [0, 1], or -1 when there is no such pair. */
double cm_pairwise_accuracy(int n, const double *scores, const double *latencies,
                            const int *task_ids);

/* ------------------------------------------------------------------ */
/* The model                                                           */
/* ------------------------------------------------------------------ */

/* The training objective (both over pack-sums, see above). */
typedef enum {
    CM_LOSS_SQUARED = 0, /* Ansor's: labels regressed, weighted by weight_by_label */
    CM_LOSS_RANK = 1     /* pairwise rank loss within each task */
} cm_loss;

/* Parameters; cm_params_default gives Ansor's (TVM's XGBModel) except for
 * the loss, the trees' depth and a histogram size of our own (Ansor's
 * XGBoost built exact or approximate trees). */
typedef struct {
    cm_loss loss;             /* CM_LOSS_RANK. On the suite's CPU records,
                                 held out: pairwise 0.82 against Ansor's
                                 squared loss's 0.745; the search reached
                                 its own 95 % in half the random search's
                                 trials in 7 of 8 runs against 6 of 8
                                 (bench/RESULTS.md, session 22) */
    int rank_max_partners;    /* 64: partners per program in the rank loss
                                 (cm_rank_pairs), so a task of thousands of
                                 programs costs O(n) a round; 0: all of its
                                 task */
    int max_depth;            /* 6 (Ansor: 10). With the rank loss and
                                 the 180-shape corpus, the suite's CPU
                                 workloads held out: pairwise 0.849 (mean
                                 of 4 seeds, 0.847-0.851) against 0.843
                                 (0.842-0.845) at 10, ahead in every seed,
                                 and faster to train (bench/RESULTS.md,
                                 session 24) */
    double eta;               /* 0.2 */
    double gamma;             /* 0.001 */
    double min_child_weight;  /* 0 */
    double lambda;            /* 1 (XGBoost's default L2 on leaf weights) */
    int nthread;              /* 0: XGBoost's default (all cores); tests use 1.
                                 The threads of prediction, and of training
                                 unless train_nthread says otherwise */
    int train_nthread;        /* 0: as nthread. The threads of training
                                 (boosting and its matrices): the tuner
                                 predicts on one thread inside each of its
                                 search workers but trains, between rounds,
                                 when nothing else runs, on every core */
    uint64_t seed;            /* 43; also seeds the random model */
    int num_warmup_samples;   /* 100: below this many measured programs the
                                 model predicts at random (Ansor) */
    int max_rounds;           /* 1000: boosting rounds at most */
    int early_stopping_rounds;/* 50: stop when the held-out loss has not
                                 improved for this many rounds */
    int max_bin;              /* 64: histogram bins per feature (XGBoost's
                                 hist method; 0: its default, 256). Training
                                 time goes with bins x features x tree nodes,
                                 not rows: 64 trains 2.2x faster than 256 at
                                 the same held-out accuracy (bench/RESULTS.md,
                                 session 21) */
    double holdout_fraction;  /* 0.2 of the programs (at least 10 programs
                                 in all needed) held out for early stopping */
    bool refit_all;           /* true: once the held-out share has chosen
                                 the round count, the trees are grown again
                                 from scratch on every program (held-out
                                 ones included) for that many rounds, so no
                                 measured program is left out of the final
                                 model; training takes about twice as long.
                                 The suite's CPU workloads held out (90
                                 corpus shapes, znver3): pairwise 0.826
                                 against 0.821 without (mean of 4 seeds,
                                 ahead in each; bench/RESULTS.md, session
                                 27). false: the trees of the split */
    bool weight_by_label;     /* squared loss only. true: w_p = max(y_p, 1e-3)
                                 (Ansor, floored so failed programs still
                                 count); false: 1.
                                 Unweighted orders held-out programs better
                                 overall (pairwise 0.784 against 0.745), but
                                 the search reached fast programs later with
                                 it (bench/RESULTS.md, session 21) */
    bool keep_trees_below_warmup; /* false (default): below num_warmup_samples
                                 a training leaves the model random; true: a
                                 model that has trees (loaded, or warm-started)
                                 keeps them until enough samples exist */
    int vector_bytes;         /* 0: 64. The vector width the scorer seam
                                 (cm_scorer_*) extracts features with
                                 (cm_extract_options.vector_bytes); saved
                                 with the model, and a loaded model keeps
                                 the saved width whatever params say, so it
                                 predicts what it did when saved */
    volatile int *stop;       /* NULL, or a flag (a SIGINT handler's): when
                                 it becomes non-zero, training ends after
                                 the boosting round under way, keeping the
                                 trees grown so far (at least one); a
                                 Ctrl-C then waits for one round, not for a
                                 whole training */
} cm_params;

void cm_params_default(cm_params *p);

typedef struct cm_model cm_model;

/* A new, untrained model (it predicts at random). params NULL: defaults.
 * Returns NULL only when memory is exhausted. Free with cm_model_free. */
cm_model *cm_model_new(const cm_params *params);
void cm_model_free(cm_model *m);
/* The reason of the last failure ("" when none); owned by m. */
const char *cm_model_errmsg(const cm_model *m);
/* True when predictions come from trees (trained on at least
 * num_warmup_samples programs), false when they are random. */
bool cm_model_is_trained(const cm_model *m);
/* Boosting rounds kept after early stopping (0 when untrained). */
int cm_model_num_rounds(const cm_model *m);
/* The vector width (bytes) m's scorer seam extracts features with:
 * params.vector_bytes, or a loaded model's saved width; 64 for 0; 0 for
 * a NULL m. */
int cm_model_vector_bytes(const cm_model *m);

/* One program's features: nstmts rows of CM_NUM_FEATURES floats (as
 * cm_extract returns them). The model does not keep the pointer. */
typedef struct {
    const float *features;
    int nstmts;
} cm_program;

/*
 * Trains from scratch on n programs (the model's own accumulated samples,
 * see cm_model_update, are not used). latencies in seconds; <= 0 or not
 * finite marks a failed program (label 0). task_ids: programs of one task
 * are normalised together, label = (min latency of the task) / latency;
 * NULL means one task. Programs with no statements are skipped. With fewer
 * than num_warmup_samples usable programs the model stays (or becomes)
 * random (with params.keep_trees_below_warmup, a model that has trees
 * keeps them). Returns 0, or -1 (reason in cm_model_errmsg).
 */
int cm_model_train(cm_model *m, int n, const cm_program *progs, const double *latencies,
                   const int *task_ids);
/* Adds n programs to the model's own sample set (copies them) and
 * retrains on all samples so far — Ansor's update after each measurement
 * round. Same arguments as cm_model_train. */
int cm_model_update(cm_model *m, int n, const cm_program *progs, const double *latencies,
                    const int *task_ids);
/* Programs in the model's own sample set. */
int cm_model_num_samples(const cm_model *m);

/* Scores of n programs in one batched XGBoost call: scores[i] is the sum
 * of the statements' predictions (higher = expected faster); -INFINITY
 * for a program with no statements; uniform in [0, 1) from the model's
 * generator while it is untrained. Returns 0 or -1. */
int cm_model_predict(cm_model *m, int n, const cm_program *progs, double *scores);

/* Adapters with the signatures of the tuner's scorer seam (user is a
 * cm_model*): features are extracted with cm_extract_ex (at the model's
 * vector width, cm_model_vector_bytes) from the functions as given (the
 * tuner passes them after tir_run_pipeline). update files all n under
 * task id `task` (cm_model_update's task_ids: labels are normalised per
 * task); latencies in seconds, <= 0 for a failed candidate. */
int cm_scorer_predict(void *model, int n, const tir_func *const *funcs, double *scores);
int cm_scorer_update(void *model, int task, int n, const tir_func *const *funcs,
                     const double *latencies);

/* ---- persistence ----
 * The blob holds a small header (magic "LOOMCM", format version, feature
 * count, CM_FEATURE_VERSION, whether trained, rounds, the vector width,
 * a checksum of the rest) and XGBoost's UBJSON model; a damaged blob is
 * refused before XGBoost parses it, and so is a model of another feature
 * count or version, or of another format version (format 1 had no feature
 * version).
 * A loaded model predicts exactly what the saved one did; its parameters
 * are params (NULL: defaults) and its own sample set is empty.
 * The tuning database stores the blob with format name CM_BLOB_FORMAT. */
#define CM_BLOB_FORMAT "loom-xgboost-ubj-2"
/* *buf = malloc'd blob (caller frees), *len its size. Returns 0 or -1. */
int cm_model_save_buffer(cm_model *m, void **buf, size_t *len);
/* NULL on a malformed blob or a format, feature-count or feature-version
 * mismatch; the reason is written to errbuf (errlen bytes) when errbuf is
 * non-NULL, after CM_LOAD_ERROR_PREFIX (which a caller with its own
 * context may skip). */
#define CM_LOAD_ERROR_PREFIX "cost model: load: "
/* The reason in a load error message, past CM_LOAD_ERROR_PREFIX (the
 * message itself when it has no such prefix; "" for NULL). Points into
 * errbuf. */
const char *cm_load_error_reason(const char *errbuf);
cm_model *cm_model_load_buffer(const void *buf, size_t len, const cm_params *params,
                               char *errbuf, size_t errlen);
int cm_model_save_file(cm_model *m, const char *path);
cm_model *cm_model_load_file(const char *path, const cm_params *params, char *errbuf,
                             size_t errlen);

LOOM_API_END
#ifdef __cplusplus
}
#endif
#endif /* LOOM_COST_MODEL_H */
