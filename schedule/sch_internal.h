/*
 * schedule/sch_internal.h — the schedule's plain data, shared by the
 * primitives, the step log, bound inference and lowering.
 *
 * Persistence: a stage's arrays are never modified in place; a primitive
 * builds new arrays in the arena and swaps the pointers. So sch_copy only
 * copies the stage table and the step array, and a copy never sees later
 * changes of its original (the tuner copies states by the thousand).
 */
#ifndef LOOM_SCH_INTERNAL_H
#define LOOM_SCH_INTERNAL_H

#include "loom/schedule.h"

typedef enum { SCH_REL_SPLIT, SCH_REL_FUSE } sch_rel_kind;

/* An iteration-variable relation (TVM IterVarRelation). */
typedef struct {
    sch_rel_kind kind;
    te_expr *parent;        /* split: the axis split */
    te_expr *outer, *inner; /* split: its parts; fuse: the fused pair */
    te_expr *fused;         /* fuse: the result */
    int64_t factor;         /* split: inner extent, or outer extent if nparts */
    bool nparts;
} sch_rel;

/* Per-axis annotation and pragmas. */
typedef struct {
    te_expr *var;
    sch_annotation ann;
    const char *thread_tag;      /* SCH_ANN_BIND */
    int64_t auto_unroll_max_step; /* -1: unset */
    int unroll_explicit;          /* -1: unset */
    const char *tensorize;        /* tensor intrinsic replacing the nest from here; NULL */
} sch_iter_attr;

typedef enum { SCH_ATTACH_ROOT, SCH_ATTACH_INLINE, SCH_ATTACH_AT } sch_attach;

typedef struct {
    int dim;
    int64_t factor, offset;
} sch_align;

typedef struct {
    te_tensor *op;      /* the op computed now */
    te_tensor *origin;  /* the tensor the user created (reads may name it) */
    bool is_output;
    int nroot;
    te_expr **root;     /* op axes then reduce axes */
    int nleaf;
    te_expr **leaf;     /* loop order, outermost first */
    int nrel;
    sch_rel *rels;
    int nattr;
    sch_iter_attr *attrs;
    sch_attach attach;
    int attach_stage;   /* SCH_ATTACH_AT: consumer stage index */
    te_expr *attach_iter; /* SCH_ATTACH_AT: the consumer's leaf axis */
    int scope;          /* tir_scope, or -1 for the default */
    int nalign;
    sch_align *aligns;
    int buffers; /* 0, or the copies of its buffer a software pipeline cycles
                    through (double_buffer.c: 2 double buffering) */
    tir_swizzle swizzle; /* shared buffer in the 128-byte swizzled layout, as
                            stored or transposed (swizzle.c) */
} sch_stage;

struct sch_schedule {
    te_ctx *ctx;
    int nouts;
    te_tensor **outs;
    int nstages;
    sch_stage *stages; /* topological: producers before consumers */
    int nsteps, capsteps;
    sch_step *steps;
};

/* ---- tensor intrinsics (tensorize.c) ---- */
/* Whether name is an intrinsic sch_tensorize knows; the list of them. */
bool sch__tensor_intrin_known(const char *name);
const char *sch__tensor_intrin_list(void);

/* ---- helpers (schedule.c) ---- */
int sch__stage_index(const sch_schedule *s, const te_tensor *t);
/* The position of var among g's leaf loops, or -1 (no message). */
int sch__leaf_pos(const sch_stage *g, const te_expr *var);
/* Index of axis in stage st's leaf list, or -1 with an error naming the
 * primitive: "split: axis 'x' is not a loop of stage 'C' (loops: i, j)";
 * or "... belongs to stage 'D', not 'C'". */
int sch__leaf_index(sch_schedule *s, const char *prim, int st, const te_expr *axis);
/* Stage index of t, or -1 with "prim: tensor 'X' is not in this schedule". */
int sch__find_stage(sch_schedule *s, const char *prim, const te_tensor *t);
const char *sch__stage_name(const sch_schedule *s, int st);
/* Appends a step to the log (deep-copies its arrays into the arena). */
void sch__log(sch_schedule *s, const sch_step *step);
/* Copies an array of n pointers into the arena. */
te_expr **sch__dup_exprs(te_ctx *ctx, te_expr *const *a, int n);
/* The attribute record of var in stage st (NULL if none). */
const sch_iter_attr *sch__attr(const sch_stage *st, const te_expr *var);
/* A new attr array for st with var's record replaced/added. */
void sch__set_attr(te_ctx *ctx, sch_stage *st, const sch_iter_attr *a);
/* Inserts a new stage at position pos, shifting later ones (and fixing
 * attach_stage indices). Returns the new stage. */
sch_stage *sch__insert_stage(sch_schedule *s, int pos, te_tensor *op);
/* Initialises stage fields for op (root = axes + reduce axes, leaf = root). */
void sch__init_stage(te_ctx *ctx, sch_stage *st, te_tensor *op);
/* Whether stage reader's op reads stage producer's tensor (op or origin). */
bool sch__reads(const sch_schedule *s, int reader, int producer);
/* Whether expression e reads stage producer's tensor. */
bool sch__expr_reads(const sch_schedule *s, const te_expr *e, int producer);
/* A compute tensor built directly (no ownership checks): the schedule
 * rewrites ops whose axes te_compute would consider taken. */
te_tensor *sch__make_compute(te_ctx *ctx, const char *name, int ndim, te_expr *const *axes,
                             te_expr *body);
/* Replaces every READ of a tensor in `from` (n of them) by the same READ of
 * `to[i]`. */
te_expr *sch__replace_reads(te_ctx *ctx, te_expr *e, int n, te_tensor *const *from,
                            te_tensor *const *to);

/* Loop extents of a split of `extent` by a factor (inner extent) or by
 * nparts (outer extent); an inner extent never exceeds the parent's. */
int sch__split_extents(int64_t extent, int64_t value, bool nparts, int64_t *outer,
                       int64_t *inner);
/* "global"/"local"/"shared" as a tir_scope, or -1 with an error. */
int sch__parse_scope(te_ctx *ctx, const char *prim, const char *tensor, const char *scope);

/* Applies steps: the single path both user primitives and replay take. */
int sch__apply(sch_schedule *s, const sch_step *step, te_expr **out1, te_expr **out2,
               te_tensor **out_tensor);

#endif
