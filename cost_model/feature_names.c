/*
 * cost_model/feature_names.c — the names of the feature vector's entries,
 * built once from the layout in cm_internal.h (Ansor's names, then Loom's).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cost_model/cm_internal.h"

static char names[CM_NUM_FEATURES][40];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static const char *const pos_names[CM__POS_COUNT] = {
    "kPosNone", "kPosInnerSpatial", "kPosMiddleSpatial", "kPosOuterSpatial",
    "kPosInnerReduce", "kPosMiddleReduce", "kPosOuterReduce", "kPosMixed"};

static void set(int i, const char *s) { snprintf(names[i], sizeof names[i], "%s", s); }

static void annotation(int base, const char *what) {
    char buf[40];
    snprintf(buf, sizeof buf, "%s_num", what), set(base, buf);
    snprintf(buf, sizeof buf, "%s_prod", what), set(base + 1, buf);
    snprintf(buf, sizeof buf, "%s_len", what), set(base + 2, buf);
    for (int p = 0; p < CM__POS_COUNT; p++) {
        snprintf(buf, sizeof buf, "%s_type.%s", what, pos_names[p]);
        set(base + 3 + p, buf);
    }
}

static void build_names(void) {
    static const char *const ops[16] = {
        "float_mad", "float_addsub", "float_mul", "float_divmod", "float_cmp", "float_mathfunc",
        "float_otherfunc", "int_mad", "int_addsub", "int_mul", "int_divmod", "int_cmp",
        "int_mathfunc", "int_otherfunc", "bool_op", "select_op"};
    for (int i = 0; i < 16; i++) set(CM__OPS + i, ops[i]);
    annotation(CM__VEC, "vec");
    annotation(CM__UNROLL, "unroll");
    annotation(CM__PARALLEL, "parallel");
    static const char *const gpu[8] = {"is_gpu", "blockIdx_x_len", "blockIdx_y_len",
                                       "blockIdx_z_len", "threadIdx_x_len", "threadIdx_y_len",
                                       "threadIdx_z_len", "vthread_len"};
    for (int i = 0; i < 8; i++) set(CM__GPU + i, gpu[i]);
    static const char *const buf[CM__BUF_STRIDE] = {
        "acc_type.kRead", "acc_type.kWrite", "acc_type.kReadWrite", "bytes", "unique_bytes",
        "lines", "unique_lines", "reuse_type.kLoopMultipleRead",
        "reuse_type.kSerialMultipleReadWrite", "reuse_type.kNoReuse", "reuse_dis_iter",
        "reuse_dis_bytes", "reuse_ct", "bytes_d_reuse_ct", "unique_bytes_d_reuse_ct",
        "lines_d_reuse_ct", "unique_lines_d_reuse_ct", "stride"};
    for (int b = 0; b < CM_MAX_BUFFERS; b++)
        for (int j = 0; j < CM__BUF_STRIDE; j++)
            snprintf(names[CM__BUF + b * CM__BUF_STRIDE + j], sizeof names[0], "B%d.%s", b,
                     buf[j]);
    for (int i = 0; i < CM_CURVE_SAMPLES; i++)
        snprintf(names[CM__CURVE + i], sizeof names[0], "arith_intensity_curve_%d", i);
    set(CM__ALLOC + 0, "alloc_size");
    set(CM__ALLOC + 1, "alloc_prod");
    set(CM__ALLOC + 2, "alloc_outer_prod");
    set(CM__ALLOC + 3, "alloc_inner_prod");
    set(CM__OUTER + 0, "outer_prod");
    set(CM__OUTER + 1, "num_loops");
    set(CM__OUTER + 2, "auto_unroll_max_step");
    set(CM__LANE_WASTE, "vec_lane_waste");
    set(CM__STORE + 0, "store.reuse_dis_iter");
    set(CM__STORE + 1, "store.reuse_dis_bytes");
    set(CM__STORE + 2, "store.reuse_ct");
    set(CM__TC + 0, "tc_mma_flops");
    set(CM__TC + 1, "tc_fragment_loads");
    set(CM__TC + 2, "pipeline_stages");
    set(CM__TC + 3, "tc_wgmma_calls");
    set(CM__TC + 4, "tc_wgmma_n");
}

_Static_assert(CM__BUF + CM_MAX_BUFFERS * CM__BUF_STRIDE == CM__CURVE, "buffer group size");
_Static_assert(CM__CURVE + CM_CURVE_SAMPLES == CM__ALLOC, "curve size");
_Static_assert(CM__OUTER + 3 == CM__LANE_WASTE, "outer-scope size");
_Static_assert(CM__STORE + 3 == CM__TC, "stored-buffer group size");
_Static_assert(CM__TC + 5 == CM__END, "tensor-core group size");
_Static_assert(CM__END == CM_NUM_FEATURES, "feature count");

int cm_num_features(void) { return CM_NUM_FEATURES; }

const char *cm_feature_name(int i) {
    if (i < 0 || i >= CM_NUM_FEATURES) return NULL;
    pthread_once(&names_once, build_names);
    return names[i];
}

int cm_feature_index(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < CM_NUM_FEATURES; i++)
        if (!strcmp(cm_feature_name(i), name)) return i;
    return -1;
}
