/*
 * autotune/tune_internal.h — helpers shared by the autotuner's files.
 */
#ifndef LOOM_TUNE_INTERNAL_H
#define LOOM_TUNE_INTERNAL_H

#include <stdio.h>

#include "loom/autotune.h"

/* The values of TUNE_HOLE_UNROLL (auto_unroll_max_step). */
#define TUNE__NUNROLL 4
extern const int64_t tune__unroll_steps[TUNE__NUNROLL];

/* A candidate whose first call takes more than this many times the best
 * latency so far is timed by that call alone (no repeats). */
#define TUNE__SLOW_FACTOR 3.0

/* Once a best latency exists, a run is stopped (and recorded as a run
 * timeout) when it lasts longer than TUNE__CUT_FACTOR times the best plus
 * what its repeats may take at TUNE__SLOW_FACTOR times the best, plus
 * TUNE__CUT_SLACK_S: a program that slow earns a label of ~0 in the cost
 * model either way, and random programs of large workloads can take
 * seconds a call. The slack leaves a crashing candidate time to be seen
 * as a crash (a sanitizer's report takes a while). The fixed run timeout
 * still bounds the first runs. */
#define TUNE__CUT_FACTOR 50.0
#define TUNE__CUT_SLACK_S 1.0
/* tune_measure without the cut at a multiple of the best so far and with
 * every run checked against the reference (re-timing, tune_retime). */
int tune__measure_uncut(tune_measurer *m, int n, const char *const *steps_json, const int *hooks,
                        tune_result *results);

/* Runner processes of a CPU measurer: TUNE__RUNNERS_PER_JOB per parallel
 * build, at most TUNE__MAX_RUNNERS, and no more than keep
 * TUNE__RUNNER_BYTES of candidates' arguments resident together
 * (autotune/measure.c). */
#define TUNE__RUNNERS_PER_JOB 4
#define TUNE__MAX_RUNNERS 64
#define TUNE__RUNNER_BYTES (1024.0 * 1024 * 1024)

/* Innermost tile factor limit (Ansor: max_innermost_split_factor). */
#define TUNE__MAX_INNER 64

/* Read and write of length-prefixed frames on a pipe. write: 0 or -1.
 * read: a malloc'd NUL-terminated payload, NULL on EOF or error. */
int tune__write_frame(int fd, const char *data, size_t len);
char *tune__read_frame(int fd);

/* The runner's serve loop (runner.c): requests on in_fd, replies on out_fd.
 * plugin_error (may be NULL): why the plugins of TUNE_PLUGINS_ENV did not
 * load; every build then fails with it. */
int tune__runner_serve(int in_fd, int out_fd, const char *plugin_error);

/* Loads the plugins TUNE_PLUGINS_ENV names (plugin.c; in a runner
 * process): NULL, or a malloc'd message of the first that failed. */
char *tune__load_env_plugins(void);

/* Whether path (a real path, as dladdr names a loaded object) is a plugin
 * loaded with tune_load_plugin (plugin.c). */
bool tune__is_plugin_file(const char *path);

/* Whether this process called tune_runner_maybe_run (and so can be
 * re-executed as a runner process; runner.c). */
bool tune__host_serves_runners(void);

/* The program a measurer of workload `key` starts as its runners
 * (runner_exe.c): TUNE_RUNNER_ENV, else loom-runner beside libloom, or
 * /proc/self/exe for a builder only the host has (or no loom-runner
 * found) when the host serves runners. A malloc'd path, or NULL with a
 * malloc'd message in *err (err may be NULL). */
char *tune__runner_exe(const char *key, char **err);

/* malloc'd printf. */
char *tune__strdupf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Reduce axes of a compute tensor (0 for none). */
static inline int nreduce_of(const te_tensor *t) {
    return t->body && t->body->kind == TE_REDUCE ? t->body->u.reduce.naxes : 0;
}

/* Sketch sk with the register tile of its unit u (TILE_CACHE,
 * TILE_CACHE_PACKED, not fused yet) fused into the stage's elementwise
 * tail (conv -> Add -> Relu: the tile's copy-out computes the Relu, the
 * Add and the copy inlined, instead of a second pass over the whole
 * output; matmul -> bias -> gelu alike, its annotated Erf inlined): the
 * unit's consumer set to the tail, the tail's ANNOTATE unit and those of
 * annotated stages between dropped (those inlined), holes and description
 * rebuilt. The epilogue-fusion rule (autotune/rules/rule_epilogue.c)
 * applies it. 1 when sk was changed; 0 when unit u has no such tile or
 * tail (sk unchanged); a TUNE__CAP_ code when the rebuilt sketch would
 * not fit (sk unchanged). */
int tune__sketch_fuse_epilogue(const tune_dag *dag, tune_sketch *sk, int u);

/* Uniform in [0, n) (0 when n <= 1). */
int64_t tune__rand_below(uint64_t *rng, int64_t n);
/* tune_program_from_steps, and when no sketch reproduces the log exactly:
 * the valid program (of any sketch) whose applied log is nearest to it
 * (the fewest steps in the symmetric difference of the two step multisets,
 * then the most steps equal at the same position). Returns 1 (exact) or 2
 * (nearest) with *out, *common (steps shared; may be NULL) and *total (the
 * log's steps; may be NULL) set; 0 when no program of any sketch is valid;
 * -1 with *err as tune_program_from_steps. */
int tune__program_nearest(const char *key, const tune_sketch *sketches, int nsketches,
                          const char *steps_json, tune_program *out, int *common, int *total,
                          char **err);
/* tune_check_fits of key, which builds the workload once and also gives
 * its FLOP count (flops may be NULL). */
int tune__check_fits(const char *key, double *flops, char **err);
/* The smallest divisors of n (>= 1) not above cap, ascending, at most max
 * of them, into out; returns their count. O(sqrt(n)) steps at most. */
int tune__divisors(int64_t n, int64_t cap, int64_t *out, int max);
/* A random divisor of n not above cap (1 always qualifies). */
int64_t tune__rand_divisor(uint64_t *rng, int64_t n, int64_t cap);
/* A random innermost factor for split hole h: uniform over the divisors
 * of its extent up to TUNE__MAX_INNER, joined, when h->tail, by every
 * integer up to TUNE_MAX_TAIL_INNER (and the extent). */
int64_t tune__rand_inner(const tune_hole *h, uint64_t *rng);
/* Whether v fills VECTOR hole h: a divisor of its extent up to
 * TUNE__MAX_INNER or, with h->tail, 4, 8 or 16 lanes below the extent. */
bool tune__vector_valid(const tune_hole *h, int64_t v);
/* A random value for VECTOR hole h, uniform over tune__vector_valid's. */
int64_t tune__rand_vector(const tune_hole *h, uint64_t *rng);
/* Moves one random prime factor of a split hole's values (levels; the
 * outermost is implicit: ceil(extent / innermost) / the others' product)
 * from one level to another, keeping tune_split_valid (innermost <=
 * TUNE__MAX_INNER; Ansor's tile-size mutation). 0, or -1 when this try
 * changed nothing. */
int tune__move_split_factor(const tune_hole *h, uint64_t *rng, int64_t *v);
/* The k-th hole of unit u of sk, NULL when there is none. */
const tune_hole *tune__unit_hole(const tune_sketch *sk, int u, int k);
/* The register tile of a convolution on NCHW[vlen]c
 * (autotune/rules/rule_cache_write.c):
 * true, with lv[d][2] the innermost tile factor of axes 1, 3, 4 (lv[d][0]
 * and [1] set to 1, but lv[3][0] the number of column tiles with 16
 * vector registers; on a small image with 16 registers the whole image
 * in level 1 instead: lv[2][1], lv[3][1]), for a 5-D reduction whose last
 * axis is one vector; *inner_axis the reduce axis to put in the inner
 * reduce level with tune__reduce_inner (-1: none) and *inner_n how much
 * of it (0: the whole axis). Both NULL or both given. */
bool tune__blocked_conv_tile(const te_tensor *t, int vlen, int64_t lv[][3], int *inner_axis,
                             int64_t *inner_n);
/* Puts n of reduce axis `axis` (>= 0; -1: nothing) of tile unit u, whose
 * output has nsp axes, in the inner reduce level of program p (n 0: the
 * whole axis), where the hole allows that value. */
void tune__reduce_inner(const tune_sketch *sk, int u, int nsp, int axis, int64_t n,
                        tune_program *p);
/* seed.c: the structural program of CPU sketch sk (every unit by its
 * rule's structural fill; rows: see tune_heur), false when a unit has no
 * such fill or a value breaks its hole's rule; and the sketch's rank for
 * that fill (the sum of its units' structural scores, higher first). */
bool tune__program_structural(const tune_sketch *sk, int sketch_index, const tune_dag *dag,
                              int vlen, bool rows, tune_program *out);
int tune__structural_score(const tune_sketch *sk, const tune_dag *dag, int vlen);

/* The schedule of a fused attention group (autotune/default_attention.c):
 * score rows, softmax statistics and the V product per block of query
 * rows; NULL when w is not one (or a primitive refuses: ctx's error). */
sch_schedule *tune__attention_schedule(te_ctx *ctx, const tune_workload *w, int vlen);

/* The hash of a step log's one text (tdb_steps_to_json or
 * tdb_schedule_to_json), which it frees: a program's identity to the
 * search, or a step's (a log of one) to the log decoder, so equal hashes
 * mean equal stored logs. 0 for NULL (out of memory). */
uint64_t tune__log_hash(char *json);

/* Which sketch cap a rule hit (tune__add_unit, tune__add_hole,
 * autotune/rules/); other failures are -1. */
enum { TUNE__CAP_UNITS = -2, TUNE__CAP_HOLES = -3 };
/* Records in ctx that workload w (named by its outputs) needs more than
 * the cap (TUNE__CAP_UNITS or TUNE__CAP_HOLES) allows in `what` ("a
 * sketch"); returns -1. */
int tune__cap_error(te_ctx *ctx, const tune_workload *w, int cap, const char *what);
/* Prefixes ctx's error (from tune_dag_analyze) with the workload's name;
 * returns -1. */
int tune__workload_error(te_ctx *ctx, const tune_workload *w);

/* Table sizes of the GPU holes' index values (program_gpu.c). */
#define TUNE__GPU_NUNROLL 5
#define TUNE__GPU_NTHREADS 6
#define TUNE__GPU_NFETCH 3

/* s (may be NULL; built in ctx with args) lowered as the cost model sees
 * a program — the search's candidates, the warm start's and
 * --eval-model's records alike (warm.c), so that a model trained on
 * stored records scores candidates on the same inputs: on the CPU
 * without the stages pre-computed from constant_args (as the runner
 * times it) and without loop partitioning; on the GPU (gpu non-NULL: the
 * target's limits, tune_gpu_limits_for) through the GPU pipeline (virtual
 * threads injected, the verifier with those limits; constant_args
 * ignored) with its partitioning; in both,
 * unrolling pragmas only mark loops. TVM extracts features before
 * UnrollLoop and LoopPartition: copies would multiply the statements the
 * pack-sum model adds up. NULL when s does not lower or, on the GPU, the
 * verifier rejects it. */
tir_func *tune__lower_for_model(te_ctx *ctx, sch_schedule *s, int nargs, te_tensor **args,
                                uint64_t constant_args, const tir_gpu_limits *gpu);

/* Why tune_measure returned -1: the backend's message, else "autotune:
 * cannot start a runner process". Never NULL. */
const char *tune__measurer_errmsg(const tune_measurer *m);
/* Candidates tune_task hands to one tune_measure call: the backend's
 * batch, else the parallel builds (1..64). */
int tune__measurer_batch(const tune_measurer *m);

/* Whether backend be measures while the caller searches (it has submit
 * and poll). */
bool tune__backend_overlaps(const tune_measure_backend *be);
/* Hands n candidates to m's backend (tune__backend_overlaps) without
 * waiting; their results come back through the backend's poll, named by
 * tags. 0, or -1 when nothing can measure any more
 * (tune__measurer_errmsg). */
int tune__measure_submit(tune_measurer *m, int n, const char *const *steps_json, const int *hooks,
                         double best_so_far, const int64_t *tags);

/* One task's search a round at a time (search.c), for a driver that
 * measures the rounds itself, possibly while it searches the next. */
typedef struct tune__search tune__search;
/* A proposed candidate. */
typedef struct {
    char *steps;          /* its step log (JSON, malloc'd) */
    tune_program program; /* the program it is, when has_program */
    bool has_program;     /* false: the first steps or the default schedule */
} tune__proposal;
/* Sets up the search of `key` on target as tune_task does (o as there;
 * on_record, on_progress and hook_for_trial are ignored, known_steps is
 * read here only). NULL with *err set (NULL when out of memory). */
tune__search *tune__search_open(const char *key, const char *target, const tune_options *o,
                                char **err);
/* Proposes up to `want` candidates never measured (known_steps) or
 * proposed before: on the first call the first steps and the default
 * schedule (as tune_task's first trials), then what the search picks from
 * everything learnt so far (tune__search_learn). Returns how many were
 * written to out (0: the search space is exhausted, or a stop request);
 * the caller frees each out[i].steps. */
int tune__search_propose(tune__search *s, int want, tune__proposal *out);
/* Learns from the results res[i] of proposals p[i] (in proposal order;
 * dropped ones skipped): counts them (tune__search_summary) and retrains
 * the scorer once on them all. res[i].steps_json must be set; res[i].trial
 * is overwritten. */
void tune__search_learn(tune__search *s, int n, const tune__proposal *p, tune_result *res);
/* The figures so far: search_s, train_s, measured, valid, best, notes. */
const tune_summary *tune__search_summary(const tune__search *s);
/* tune_task's error for a search whose every learnt trial failed alike
 * (malloc'd), or NULL. */
char *tune__search_failed(const tune__search *s);
void tune__search_close(tune__search *s);

/* Median, mean and spread of res's latencies (nlatencies >= 1). */
void tune__summarize(tune_result *res);

#endif
