/*
 * autotune/rules/rule.h — the search space as rule objects (the shape of
 * TVM's sketch_policy_rules.h): one `tune_rule` per derivation rule, in
 * a file of its own under autotune/rules/, saying everything the tuner
 * does with the kind of unit it adds to a sketch — when it applies to a
 * stage, how it changes the sketch, its holes, how a program fills them
 * at random, by the heuristic and by mutation, and how a program's values
 * become schedule steps. The ordered rule list of each target, with the
 * mutation weights beside the rules, is in targets.c.
 *
 * The drivers stay where the public functions are (sketch.c,
 * sketch_gpu.c: generation; program.c: random, mutate, apply; seed.c:
 * heuristic programs); they only loop over the rules, so a new kind of
 * unit is one new file and one line in a list.
 */
#ifndef LOOM_TUNE_RULE_H
#define LOOM_TUNE_RULE_H

#include "autotune/tune_internal.h"

/* ---- sketch generation ---- */

/* What a rule does with a stage (TVM's SketchGenerationRule::ConditionKind):
 * nothing; derive a variant of the partial sketch and let the later rules
 * derive theirs; or derive the stage's only variant. */
typedef enum { TUNE_RULE_PASS, TUNE_RULE_APPLY, TUNE_RULE_APPLY_AND_SKIP } tune_rule_cond;

/* When the generator consults a rule: on each stage (last to first), on
 * each variant a stage rule derived (CPU: a packed twin, a fused
 * epilogue), or once on the whole sketch after the stages (GPU: shared
 * copies, cross-thread reduction). */
typedef enum { TUNE_RULE_ON_STAGE, TUNE_RULE_ON_VARIANT, TUNE_RULE_ON_SKETCH } tune_rule_when;

/* What a rule's condition sees. */
typedef struct {
    const tune_dag *dag;
    const tune_workload *w; /* NULL where unknown (no tf32 flag then) */
    int cc; /* GPU sketches: the target's compute capability x 10 (sm_90:
               90; tune_generate_sketches_gpu_for), 0 where not given */
} tune_gen;

/* ---- programs ---- */

/* A program being turned into schedule steps (tune_program_apply): the
 * schedule, and what one unit's steps leave for a later unit's. */
typedef struct {
    sch_schedule *s;
    const tune_workload *w;
    const tune_sketch *sk;
    const tune_program *p;
    te_tensor *stage[TUNE_MAX_STAGES];
    /* CPU, per unit: the stage whose outer spatial tile loops a placed
     * producer can be computed at, and those loops (outermost first;
     * loops fused into the parallel loop appear as that loop). */
    te_tensor *holder[TUNE_MAX_UNITS];
    int nloops[TUNE_MAX_UNITS];
    te_expr *loops[TUNE_MAX_UNITS][2 * TE_MAX_DIMS];
    /* GPU */
    te_tensor *local[TUNE_MAX_STAGES];  /* the "local" cache of a stage */
    te_tensor *shared[TUNE_MAX_UNITS];  /* per GPU_SHARED unit: the copy */
    te_expr *fetch_at[TUNE_MAX_STAGES]; /* per tiled stage: its last outer reduce loop */
    int64_t threads[TUNE_MAX_STAGES];   /* per tiled stage: threads per block */
} tune_decoder;

/* The passes of tune_program_apply over the units. A target's list
 * orders them (targets.c); each rule decodes its unit in the passes it
 * needs: a unit whose steps refer to another unit's loops or caches comes
 * in a later pass. */
typedef enum {
    TUNE_PHASE_ACCUMULATE, /* GPU: "local" accumulators */
    TUNE_PHASE_CACHE_READ, /* GPU: shared copies created */
    TUNE_PHASE_INLINE,     /* the sketch's always-inlined stages (no rule) */
    TUNE_PHASE_MAIN,       /* tiling, annotation, rfactor */
    TUNE_PHASE_LATE,       /* CPU: placing, packing; GPU: shared copies fetched */
    TUNE_PHASE_BIND,       /* GPU: flat and cross-thread stages bound */
    TUNE_NPHASES
} tune_phase;

/* What the heuristic fill sees (tune_program_heuristic). */
typedef struct {
    const tune_sketch *sk;
    const tune_dag *dag;
    int vlen;  /* float32 lanes per vector */
    bool rows; /* structural fill: rfactored row reductions will be computed
                  in their consumers' row loops (tune__row_consumer), so
                  those consumers parallelize only the rows */
} tune_heur;

typedef struct tune_rule tune_rule;
struct tune_rule {
    const char *name;
    tune_rule_when when;
    bool gpu;            /* a rule of GPU sketches (tune_sketch_is_gpu) */
    int unit;            /* the tune_unit_kind it adds, -1 for none */
    /* Sketch generation. condition: whether and how the rule takes
     * `stage` of partial sketch sk (ON_STAGE; made_by NULL); the variant
     * of `stage` that stage rule made_by derives from sk (ON_VARIANT: sk
     * is the partial sketch before that rule); or the whole sketch sk
     * (ON_SKETCH, stage -1: APPLY derives a variant, placed before sk;
     * APPLY_AND_SKIP changes sk itself). apply: changes sk (a copy, or
     * sk itself) into what the rule makes of it; 0, or a TUNE__CAP_ code
     * (-1: other failure); the epilogue rule returns 1 when it fused,
     * 0 when the tile has no tail. */
    tune_rule_cond (*condition)(const tune_gen *g, const tune_sketch *sk, int stage,
                                const tune_rule *made_by);
    int (*apply)(const tune_gen *g, tune_sketch *sk, int stage);
    /* Flags that ON_VARIANT rules test on the variant's rule. */
    bool tiles_last_axis; /* a multi-level tile vectorized on the last axis */
    bool accumulates;     /* a register tile with a local accumulator */
    /* Appends the holes of unit u (sk->units[u], of this rule's kind):
     * 0 or TUNE__CAP_HOLES. NULL: no holes. */
    int (*holes)(tune_sketch *sk, const tune_dag *dag, int u);
    /* The unit's text in sketch descriptions; *object: the stage or copy
     * it names after the text, or NULL. */
    const char *(*text)(const tune_unit *un, const tune_dag *dag, const char **object);
    /* Random annotation: each hole of the unit in sketch order, then
     * (random_unit, may be NULL) the unit as a whole, after every hole of
     * the sketch (GPU tiles: rejection sampling of their thread counts). */
    void (*random_hole)(const tune_hole *h, uint64_t *rng, int64_t *v);
    void (*random_unit)(const tune_sketch *sk, int u, uint64_t *rng, int64_t *vals);
    /* Mutation of one hole of the unit: 0, or -1 when this try changed
     * nothing. */
    int (*mutate_hole)(const tune_sketch *sk, const tune_hole *h, uint64_t *rng, int64_t *vals);
    /* Heuristic fill (tune_program_heuristic): NULL when the rules of the
     * library's defaults do not cover the unit (the sketch then gets no
     * heuristic programs). A register tile has heuristic_programs > 0
     * variants, one per program (a sketch with two gets none); other
     * units are filled once (variant 0). false when a value breaks its
     * hole's rule. */
    bool (*heuristic)(const tune_heur *c, int u, int variant, tune_program *p);
    int heuristic_programs;
    /* Structural fill (tune_program_structural: tune_default_schedule's
     * rules, and the search's first program of a sketch without heuristic
     * programs): the unit's holes from its stage's shape and reads alone,
     * for any computation (a user's operator, a fused subgraph). NULL:
     * the rule has no such fill (the sketch then gets none). false when
     * a value breaks its hole's rule. structural_score: how well the unit
     * suits its stage, summed over a sketch to rank the sketches for this
     * fill (higher first); NULL counts 0. */
    bool (*structural)(const tune_heur *c, int u, tune_program *p);
    int (*structural_score)(const tune_heur *c, int u);
    /* Schedule steps of unit u in each pass (NULL: none): 0, or -1 with
     * the primitive's error in the schedule's ctx. */
    int (*decode[TUNE_NPHASES])(tune_decoder *d, int u);
};

/* A rule in a target's list, and the weight of each of its holes when
 * mutation picks a hole (a hole of weight w is picked w times as often as
 * one of weight 1; 0: never). */
typedef struct {
    const tune_rule *rule;
    int mutate_weight;
} tune_rule_use;

/* The rules of a target, in the order the generator tries them. */
typedef struct {
    const char *name;
    const tune_rule_use *rules;
    int nrules;
    int mutate_tries;            /* holes tried before a mutation gives up */
    tune_phase phases[TUNE_NPHASES]; /* tune_program_apply's passes, in order */
    bool phase_reverse[TUNE_NPHASES]; /* per pass: units last to first (the
                                         stages first to last) */
    int nphases;
} tune_rule_list;

extern const tune_rule_list tune__rules_cpu, tune__rules_cuda;

/* The list of sk's target (by tune_sketch_is_gpu). */
const tune_rule_list *tune__rules_of(const tune_sketch *sk);
/* The rule that adds units of kind k (every kind has one; a rule without
 * hooks for a kind that does not exist). */
const tune_rule *tune__unit_rule(tune_unit_kind k);
/* The rule of the unit that hole h of sk belongs to. */
const tune_rule *tune__hole_rule(const tune_sketch *sk, const tune_hole *h);
/* The mutation weight of the holes of rule r in list l (0: not in it). */
int tune__mutate_weight(const tune_rule_list *l, const tune_rule *r);

/* The rules. CPU (autotune/rules/rule_*.c): */
extern const tune_rule tune_rule_skip_placeholder, tune_rule_always_inline,
    tune_rule_compute_location, tune_rule_tile_fuse, tune_rule_multi_level_tile,
    tune_rule_cache_write, tune_rule_packed_tile, tune_rule_annotate, tune_rule_rfactor,
    tune_rule_pack, tune_rule_epilogue_fusion, tune_rule_dot_bf16;
/* GPU: */
extern const tune_rule tune_rule_gpu_flat, tune_rule_gpu_tile, tune_rule_gpu_shared,
    tune_rule_gpu_xreduce, tune_rule_gpu_tensorcore;

/* ---- helpers the rules share ---- */

/* rules/structure.c: reads in t's body of tensors other than `except`
 * whose index uses axis `var`: at the last position with one element per
 * step (last), or elsewhere or with a stride (other: walking memory by
 * more than one element per step of var, a gather across vector lanes). */
typedef struct {
    bool last, other;
} tune_reads;
tune_reads tune__reads_along(const te_tensor *t, const te_tensor *except, const te_expr *var);
/* An annotated reduction vectorizes its last spatial axis: worth it only
 * when reads walk memory along that axis (a pooling window's columns) and
 * none across rows (softmax's row maxima: each lane would read another
 * row) or by a stride (a strided pooling ran at 0.9x of the plain loop
 * vectorized). Not a reduction: true. */
bool tune__annotate_vectorizes(const te_tensor *t);
/* The axis of injective stage t that walks an input's innermost
 * dimension one element a step while t's innermost axis reads that input
 * across its other dimensions (a transpose: FromNCHWc's channels against
 * its columns, the key's [s, d] -> [d, s] in attention): every such read
 * agrees, its last index an expression of that axis alone, unscaled
 * (plain or floormod(c, 16)). *run: the input's innermost extent. -1:
 * none. */
int tune__transpose_axis(const te_tensor *t, int64_t *run);
/* The vector split of an innermost axis: the widest power of two up to a
 * vector that divides ext (1: none). Not any divisor: 14 lanes of a
 * 56-wide row with 16-lane vectors become 8 + 4 + 2 lane pieces, and ran
 * 3x slower than the plain loop LLVM vectorizes itself. */
int64_t tune__vector_factor(int64_t ext, int vlen);
/* How many leading axes of stage c are rows of reduction r: every read
 * of r in c's body indexes r by c's first k axes, and r's dimensions
 * after them (kept reduced dimensions, extent 1) by 0, with k less than
 * c's rank (c has columns left for the reduction to cover). 0: r is not
 * read that way. */
int tune__row_depth(const te_tensor *r, const te_tensor *c);
/* The shortest row (elements) whose statistics, kept with their reduced
 * dimensions, tune__row_consumer computes in the row's own loop. */
#define TUNE__MIN_FUSED_ROW 1024
/* The annotated consumer unit whose row loop rfactored reduction unit u
 * can be computed in, as the library's softmax and layer_norm do (a row
 * stays in cache between the stages): the stage's only consumer, reading
 * it by rows (tune__row_depth); for a statistic that keeps its reduced
 * dimensions, only in rows of TUNE__MIN_FUSED_ROW elements or more or
 * where the reduction reads a computed stage the consumer reads too
 * (softmax's sum of exp). -1: none (computed at the root). */
int tune__row_consumer(const tune_sketch *sk, const tune_dag *dag, int u);
/* The stage whose row loop the stage of unit u is computed in when the
 * structural fill computes row reductions in rows (tune_heur.rows): for a
 * row reduction its row consumer's stage; for an annotated stage that is
 * no output and no reduction (softmax's exp(x - max)), the consumer that
 * reads it at exactly that consumer's own axes, when every other consumer
 * of it is a row reduction computed in the same consumer's rows. -1:
 * none. */
int tune__row_home(const tune_sketch *sk, const tune_dag *dag, int u);
/* Over expression e (a body of stage c): *ok, every read of stage p is at
 * exactly c's own axes with p of c's shape; *seen, there is one. */
void tune__reads_exactly(const te_expr *e, const te_tensor *c, const te_tensor *p, bool *ok,
                         bool *seen);
/* Whether reduction stage `consumer` reads stage `producer` (a padding)
 * plane by plane: every index of every read an axis of the consumer
 * (plain, its leading axes: batch, channel) or an axis plus a reduce axis
 * (a window tap: the trailing axes, rows and columns), so no reduction
 * runs across the plain axes (a depthwise convolution; not a dense one,
 * which sums over the input channels). Returns how many leading axes are
 * plain (the planes' loops), 0 when not. */
int tune__plane_axes(const tune_dag *dag, int producer, int consumer);
/* Whether `consumer` reads padding `producer` plane by plane in blocks:
 * leading plain axes (batch, channel blocks), window taps, then plain
 * trailing axes (the lanes of a channel block, NCHW[x]c), and the
 * padding's condition does not depend on its innermost axis: inlined, its
 * branch is one test per vector of the block, not a mask per lane. */
bool tune__plane_block(const tune_dag *dag, int producer, int consumer);

/* sketch.c: appends a unit of kind k with its holes (the kind's rule's
 * holes): 0, TUNE__CAP_UNITS or TUNE__CAP_HOLES. */
int tune__add_unit(tune_sketch *sk, const tune_dag *dag, tune_unit_kind kind, int stage,
                   int consumer, int vec_dim);
/* Appends a hole (no tail): 0 or TUNE__CAP_HOLES. */
int tune__add_hole(tune_sketch *sk, tune_hole_kind kind, int unit, int nvals, int64_t extent,
                   bool reduce);
/* Removes the ANNOTATE unit of `stage`; the caller rebuilds the holes. */
void tune__drop_annotate(tune_sketch *sk, int stage);
/* Recomputes every hole of sk from its units: 0 or a TUNE__CAP_ code. */
int tune__rebuild_holes(tune_sketch *sk, const tune_dag *dag);
/* The CPU description of sk (sketch.c). */
void tune__describe_cpu(tune_sketch *sk, const tune_dag *dag);
/* True when consumer c reads p, and only at exactly its own axes (with
 * `ones`, a constant 0 also where the extent is 1: the graph's
 * elementwise operators index a batch of one so); *seen: c reads p. */
bool tune__reads_at_axes(const te_expr *e, const te_tensor *c, const te_tensor *p, bool ones,
                         bool *seen);
bool tune__inlined_in(const tune_sketch *sk, int stage);
/* The unit of kind k that `stage` has in sk, -1 when none. */
int tune__unit_of(const tune_sketch *sk, int stage, tune_unit_kind k);

/* rule_tile_fuse.c: the consumer stage a tile of `stage` can be fused
 * into (its only consumer, annotated, elementwise on it), -1 when none. */
int tune__fusable_consumer(const tune_gen *g, const tune_sketch *sk, int stage);

/* rule_pack.c: the input worth packing for tiled stage i vectorized on
 * spatial axis `axis` (*dim: its dimension there), -1 when none; and the
 * axis (not the last) a packed accumulator vectorizes, -1 when none. */
int tune__pack_candidate(const tune_dag *dag, int i, int axis, int *dim);
int tune__packed_vector_axis(const tune_dag *dag, int i, int *input, int *dim);

/* program.c: CPU holes filled at random and mutated by their kind. */
void tune__random_hole_cpu(const tune_hole *h, uint64_t *rng, int64_t *v);
int tune__mutate_hole_cpu(const tune_sketch *sk, const tune_hole *h, uint64_t *rng,
                          int64_t *vals);
/* program_gpu.c: GPU holes but tile sizes (unroll, fetch lanes, threads)
 * at random; a GPU hole mutated (a tile size by moving a prime factor,
 * kept within the hard tile rules); the tile rules: 0 fine, 1 under a
 * warp of threads only, 2 a hard rule broken. */
void tune__random_hole_gpu(const tune_hole *h, uint64_t *rng, int64_t *v);
int tune__mutate_hole_gpu(const tune_sketch *sk, const tune_hole *h, uint64_t *rng,
                          int64_t *vals);
int tune__gpu_tile_check(const tune_sketch *sk, int u, const int64_t *vals);
/* rule_gpu_flat.c: the GPU_THREADS hole of a flat or cross-thread unit. */
int tune__gpu_threads_hole(tune_sketch *sk, const tune_dag *dag, int u);
/* Fuses the n loops ax of t into one (NULL on failure). */
te_expr *tune__fuse_all(tune_decoder *a, te_tensor *t, te_expr **ax, int n);
enum { TUNE__GPU_MAX_VTHREAD = 8, TUNE__GPU_MAX_PER_THREAD = 256 };
extern const int64_t tune__gpu_unroll[TUNE__GPU_NUNROLL];
extern const int64_t tune__gpu_threads[TUNE__GPU_NTHREADS];
extern const int64_t tune__gpu_fetch[TUNE__GPU_NFETCH];

/* rule_gpu_tensorcore.c: the shared memory a tensor-core config may take
 * (a GPU's opt-in limit; without one sm_90's 232448 bytes, the verifier
 * checking the target's own), and whether unit u's config in vals passes
 * the template's checks (ops_tc_check) within it. */
int64_t tune__tc_shared_limit(void);
bool tune__tc_valid(const tune_sketch *sk, int u, const int64_t *vals);

/* The values of the k-th hole of unit u in the program being decoded. */
static inline const int64_t *tune__hv(const tune_decoder *d, int u, int k) {
    return d->p->vals + tune__unit_hole(d->sk, u, k)->offset;
}

/* rules/tile.c: the CPU multi-level tiles (TILE, TILE_FUSE, TILE_CACHE,
 * TILE_CACHE_PACKED). */
int tune__tile_holes(tune_sketch *sk, const tune_dag *dag, int u);
/* Fuses the first k of n loops of t (k clamped to [1, n]) and makes the
 * result parallel; while the fused extent is 1, the next loops are taken
 * in too. *fused (when not NULL): how many loops the parallel loop holds. */
te_expr *tune__fuse_parallel(tune_decoder *d, te_tensor *t, te_expr **loops, int n, int64_t k,
                             int *fused);
/* auto_unroll_max_step on loop x of t, the loops under it unrolled
 * explicitly. */
int tune__unroll_pragmas(tune_decoder *d, te_tensor *t, te_expr *x, int64_t steps);
/* Splits every axis of t into its levels (see rules/tile.c). */
int tune__tile_levels(tune_decoder *d, int u, te_tensor *t, te_expr *l[][4], te_expr *r[][2],
                      int64_t *inner, int vd);
/* The copy-out stage co of tiling unit u (its SPLIT holes first, then
 * PARALLEL, UNROLL and LOCATION from hole `base`): each axis split by the
 * tile's levels (the last axis's factors counted in `lanes` elements:
 * 1, or a dot-product tile's vectors), the outer loops fused parallel,
 * the unroll pragmas, the inner columns vectorized, and pr computed at
 * the chosen level. 0 or -1. */
int tune__tile_copy_out(tune_decoder *d, int u, te_tensor *pr, te_tensor *co, int base,
                        int64_t lanes);
/* Tiles producer pr of unit u and fuses it into co at the chosen level
 * (vd >= 0: pr packed on spatial axis vd). */
int tune__tile_fused(tune_decoder *d, int u, te_tensor *pr, te_tensor *co, int vd);
/* The stage whose loops copy a register tile's accumulator out. */
te_tensor *tune__copy_out(tune_decoder *d, const tune_unit *un, te_tensor *t);
/* Fills the holes of tiling unit u from each spatial axis's level values
 * (heuristic programs). */
bool tune__fill_tile(const tune_sketch *sk, int u, const te_tensor *t, int64_t lv[][3],
                     int64_t par, bool taps_outside, tune_program *p);
/* For a plain tiling unit u (TILE) whose stage reads a placed padding
 * plane by plane (tune__plane_axes): how many leading axes are the
 * planes' loops, else 0. Only a plain tiling: a register tile's
 * accumulator (TILE_CACHE) holds the loops a placed stage is computed at
 * inside the copy-out's tile, where the padding would be computed per
 * tile (1.9x slower than at the root, bench/RESULTS.md session 34). */
int tune__plane_tile(const tune_sketch *sk, const tune_dag *dag, int u);
/* The structural fill of tiling unit u (TILE, TILE_CACHE, TILE_FUSE). */
bool tune__structural_tile(const tune_heur *c, int u, tune_program *p);
/* The largest divisor of n not above cap that is a multiple of m; 0 if none. */
int64_t tune__divisor_multiple(int64_t n, int64_t cap, int64_t m);
static inline int64_t tune__ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
/* The three levels of a tile's spatial axis (outer to innermost). */
static inline void tune__set3(int64_t *v, int64_t a, int64_t b, int64_t c) {
    v[0] = a, v[1] = b, v[2] = c;
}

#endif
