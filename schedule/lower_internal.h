/*
 * schedule/lower_internal.h — state shared by bound inference (bound.c)
 * and loop-nest construction (lower.c).
 */
#ifndef LOOM_LOWER_INTERNAL_H
#define LOOM_LOWER_INTERNAL_H

#include "schedule/sch_internal.h"

/* What lowering knows about one stage. */
typedef struct {
    te_expr *body;           /* the op's body with inlined producers substituted */
    int nvars;               /* every iteration variable of the stage */
    te_expr **vars;
    int64_t *exts;           /* their extents in this lowering */
    te_expr **values;        /* root and relation vars as functions of the leaves */
    te_expr *root_min[TE_MAX_DIMS]; /* data-parallel dims: first element realised */
    int64_t root_ext[TE_MAX_DIMS];  /* data-parallel dims: elements realised */
    bool done;               /* bounds inferred */
    tir_buffer *buf;         /* NULL for inlined stages */
} lower_stage;

typedef struct {
    sch_schedule *s;
    te_ctx *ctx;
    te_analyzer *an;
    lower_stage *ls;         /* one per stage */
    /* The function's arguments (sch__lower_args, sch__lower_add_args):
     * their stages and, after sch__lower_buffers, their buffers. */
    int nargs;
    te_tensor *const *args;
    int *arg_stage;
    tir_buffer **params;
    bool gpu;                /* lowering for a GPU target */
} lower_state;

/* The steps from a schedule to loop nests, in the order the lowering
 * list (lower_list.c) runs them; each returns 0 or -1 (NULL) with an
 * error in the ctx.
 * args: checks that args are every input read and every output, each
 * once, computed at the root, and records them. add_args: appends n more
 * (the pre-computed stages a lowering with constant arguments passes).
 * check_attach: no stage is read outside the loop it is computed at.
 * buffers: one per argument (a parameter) and per stage realised.
 * nests: the function NAME over the arguments, computing the root stages
 * i with emit[i] (NULL: all); the others are neither computed nor
 * allocated (the two halves of a lowering with pre-computed stages). */
int sch__lower_args(lower_state *L, int nargs, te_tensor *const *args);
int sch__lower_add_args(lower_state *L, int n, te_tensor *const *extra);
int sch__lower_check_attach(lower_state *L);
int sch__lower_buffers(lower_state *L);
/* The swizzle step's rules for stage g's buffer b (schedule/swizzle.c). */
int sch__lower_check_swizzle(te_ctx *ctx, const sch_stage *g, const tir_buffer *b, bool gpu);
tir_func *sch__lower_nests(lower_state *L, const char *name, const bool *emit);
/* The stages computed once from constant arguments alone
 * (lower_constants.c): marks them in pre[] (one per stage), returns how
 * many. After sch__lower_inline. */
int sch__lower_precomputed(lower_state *L, uint64_t constant_args, bool *pre);
/* The rules of constant_args over the recorded arguments: no bit past
 * them, only placeholders. 0 or -1 with a message. */
int sch__lower_check_constants(lower_state *L, uint64_t constant_args);
/* Text for the IR dump of the steps before loop nests exist: each
 * stage's body after inlining, and each stage's realised region and loop
 * extents after bound inference. */
void sch__lower_print_bodies(const lower_state *L, te_str *out);
void sch__lower_print_bounds(const lower_state *L, te_str *out);

/* Effective bodies: inlined producers substituted (topological order). */
int sch__lower_inline(lower_state *L);
/* Infers every stage's realised region and its loop extents, consumers
 * first (TVM InferBound). */
int sch__lower_bounds(lower_state *L);
/* Whether stage c is computed (through a chain of compute_at) inside leaf
 * loop `pos` of stage t, at it or deeper. */
bool sch__nested_in(const sch_schedule *s, int c, int t, int pos);
/* The extent of var in stage st in this lowering (or its nominal extent). */
int64_t sch__lower_ext(const lower_state *L, int st, const te_expr *var);
/* The value of a stage's root var as a function of its leaves (root_min
 * not included). */
te_expr *sch__lower_value(const lower_state *L, int st, const te_expr *var);

/* lower.c, for the cross-thread reduction (xreduce.c): the loop of leaf
 * var of stage st around body (its kind, thread tag and pragmas from the
 * schedule); body wrapped in the guards that root dims [from, to) of
 * stage st need. */
tir_stmt *sch__lower_loop(lower_state *L, int st, te_expr *var, tir_stmt *body);
tir_stmt *sch__lower_guards(lower_state *L, int st, int from, int to, tir_stmt *body);

/* lower.c: e (a TE expression of stage root vars[i] -> vals[i]) with its
 * reads as buffer loads. NULL with an error. */
te_expr *sch__lower_reads(lower_state *L, int nsub, te_expr **vars, te_expr **vals, te_expr *e);

/* ---- tensorize (tensorize.c) ---- */
typedef struct {
    tir_stmt *call; /* the intrinsic in place of leaves pos.. */
    tir_stmt *init; /* a reduction's fill, or NULL */
} sch_tensorized;
/* Stage st tensorized at leaf pos with intrinsic `name`: checks the match
 * and builds the call(s). store_idx, vars, vals as in stage_nest. 0 or -1
 * with an error naming the stage and the rule broken. */
int sch__lower_tensorize(lower_state *L, int st, int pos, const char *name,
                         te_expr *const *store_idx, int nsub, te_expr **vars, te_expr **vals,
                         sch_tensorized *out);

/* ---- padding guards (pad_guard.c) ---- */

/* One guard of a reduction's update: a conjunct over the stage's leaves
 * (and the loops outside the stage), placed just inside leaf `level`, the
 * innermost it uses (-1: around the whole update nest). */
typedef struct {
    te_expr *cond;
    int level;
} lower_pad_guard;

/* The padding guards of stage st, a sum reduction: the conditions outside
 * which a factor of its source is zero (select(c, e, 0), or a read of a
 * stage whose body is one), over the leaves: vars[i] -> vals[i] maps the
 * root variables to them. *source (the TE source) has the selects whose
 * conditions are wholly guarded replaced by their value. Returns the
 * number of guards written to out (at most max), 0 for a stage that is
 * not a sum or a schedule with thread bindings, -1 on error. */
int sch__lower_pad_guards(lower_state *L, int st, int nsub, te_expr *const *vars,
                          te_expr *const *vals, te_expr **source, lower_pad_guard *out,
                          int max);

/* ---- cross-thread reduction (xreduce.c) ---- */
/* The reduce leaf of st bound to threadIdx.x, or NULL. */
te_expr *sch__xreduce_axis(const sch_stage *st);
/* The binding rules of a cross-thread reduction for binding leaf var of
 * st to tag: 0, or -1 with a message. Called for every bind. */
int sch__xreduce_check_bind(te_ctx *ctx, const sch_stage *st, const te_expr *var,
                            const char *tag);
/* The reduce part of stage st (leaves first_red.. are its reduce loops)
 * reduced across threadIdx.x: the thread loop holding the per-thread
 * partial, the ALLREDUCE and the store by thread 0. store_idx: the
 * output's indices, src: the reduction's source with reads mapped to
 * buffers. NULL with an error when the stage breaks a rule. */
tir_stmt *sch__lower_xreduce(lower_state *L, int st, te_expr *const *store_idx, te_expr *src,
                             int first_red);

/* ---- LOOM_DUMP_IR (lower_dump.c) ----
 * begin reads the variable for one function of the list (name: its file
 * prefix), text and func write one step (func NULL: the step failed),
 * end appends the steps' times to DIR/times.txt and frees. All no-ops
 * when the variable is unset or a write failed (one warning per process
 * on stderr). */
typedef struct {
    char *dir; /* NULL: not dumping */
    char prefix[64];
    int n;
    te_str times;
} sch__dump;
void sch__dump_begin(sch__dump *d, const char *name);
void sch__dump_text(sch__dump *d, const char *step, const char *text, double ms);
void sch__dump_func(sch__dump *d, const char *step, const tir_func *g, double ms);
void sch__dump_end(sch__dump *d);
double sch__dump_now(void); /* milliseconds, monotonic */

#endif
