/*
 * cost_model/cm_internal.h — shared between the cost model's files:
 * feature-vector offsets and the affine access analysis.
 */
#ifndef LOOM_CM_INTERNAL_H
#define LOOM_CM_INTERNAL_H

#include "loom/cost_model.h"

/* Offsets of the groups in a feature vector (see cost_model.h). */
enum {
    CM__OPS = 0,           /* 16 operation counts */
    CM__VEC = 16,          /* num, prod, len, 8 positions */
    CM__UNROLL = 27,
    CM__PARALLEL = 38,
    CM__GPU = 49,          /* is_gpu, 6 thread extents, vthread */
    CM__BUF = 57,          /* CM_MAX_BUFFERS x CM__BUF_STRIDE */
    CM__BUF_STRIDE = 18,
    CM__CURVE = 147,
    CM__ALLOC = 157,
    CM__OUTER = 161,
    CM__LANE_WASTE = 164,  /* Loom's: vec_lane_waste */
    CM__STORE = 165,       /* Loom's: the stored buffer's reuse, 3 */
    CM__TC = 168,          /* Loom's: tensor-core FLOPs, fragment loads, pipeline depth,
                              warpgroup MMA calls and width */
    CM__END = 173
};

/* Annotation positions (Ansor's AnnotationPosType). */
enum { CM__POS_NONE, CM__POS_INNER_SPATIAL, CM__POS_MIDDLE_SPATIAL, CM__POS_OUTER_SPATIAL,
       CM__POS_INNER_REDUCE, CM__POS_MIDDLE_REDUCE, CM__POS_OUTER_REDUCE, CM__POS_MIXED,
       CM__POS_COUNT };

/* One loop around a statement, as the extractor sees it. A vector
 * access's lanes form a pseudo loop with var == NULL. */
typedef struct {
    const te_expr *var;
    int64_t min, extent;
} cm__loop;

/* An access index as c0 + sum coef_i * loop_i + sum coef_j * opaque_j. */
#define CM__MAX_TERMS 16
#define CM__MAX_OPAQUE 8
typedef struct {
    int64_t c0;
    int nt, no;
    int level[CM__MAX_TERMS];    /* loop index (0 = outermost) */
    int64_t coef[CM__MAX_TERMS];
    const te_expr *op[CM__MAX_OPAQUE];
    int64_t ocoef[CM__MAX_OPAQUE];
} cm__affine;

/* Adds coef * e to a, as affine terms in the nloops loops where possible
 * (lane_level: the pseudo vector loop's index, or -1). */
void cm__affine_add(cm__affine *a, const te_expr *e, int64_t coef, const cm__loop *loops,
                    int nloops, int lane_level);
/* The interval of an integer expression when loops [from, nloops) run
 * over their ranges and the outer ones sit at their minimum. */
void cm__interval(const te_expr *e, const cm__loop *loops, int nloops, int lane_level, int from,
                  int64_t *lo, int64_t *hi);
/* Distinct elements an access touches while loops [from, nloops) run,
 * its lowest and highest element, and (when contig is non-NULL) the
 * length of its contiguous run. Doubles: counts can exceed int64. */
void cm__footprint(const cm__affine *a, const cm__loop *loops, int nloops, int lane_level,
                   int from, double *count, double *lo, double *hi, double *contig);
/* |coefficient| of loop `level` in the access (0: not used; a loop seen
 * only inside a non-affine part gives that part's |coefficient|). */
int64_t cm__stride_of(const cm__affine *a, const cm__loop *loops, int level);

/* The pseudo-random generator of the random model (splitmix64). */
uint64_t cm__rand(uint64_t *state);

#endif
