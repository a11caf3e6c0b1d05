/* loom/loom.h — the whole public API of Loom. */
#ifndef LOOM_LOOM_H
#define LOOM_LOOM_H
#include "loom/te.h"
#include "loom/tir.h"
#include "loom/schedule.h"
#include "loom/runtime.h"
#include "loom/codegen.h"
#include "loom/version.h"
#include "loom/tuning_db.h"
#include "loom/ops.h"
#include "loom/autotune.h"
#include "loom/cost_model.h"
#include "loom/graph.h"
#endif
