/*
 * autotune/rules/rule_inline.c — the rules that add no unit: skip a
 * placeholder (nothing to schedule; it may still be packed or copied by
 * its reader's rules), and always inline a strictly inlinable stage
 * (padding, broadcasts, elementwise stages that are no output), which
 * then costs no loops of its own (Ansor's RuleAlwaysInline). On the CPU
 * a padding stage read by one stage is taken first by the
 * compute-location rule (rule_place.c); on the GPU padding is inlined
 * too, so its select is paid once per element fetched into shared memory.
 */
#include "autotune/rules/rule.h"

static tune_rule_cond skip_condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                     const tune_rule *made_by) {
    (void)sk, (void)made_by;
    return g->dag->stages[stage].is_placeholder ? TUNE_RULE_APPLY_AND_SKIP : TUNE_RULE_PASS;
}

static int skip_apply(const tune_gen *g, tune_sketch *sk, int stage) {
    (void)g, (void)sk, (void)stage;
    return 0;
}

const tune_rule tune_rule_skip_placeholder = {
    .name = "skip placeholder",
    .when = TUNE_RULE_ON_STAGE,
    .unit = -1,
    .condition = skip_condition,
    .apply = skip_apply,
};

static tune_rule_cond inline_condition(const tune_gen *g, const tune_sketch *sk, int stage,
                                       const tune_rule *made_by) {
    (void)sk, (void)made_by;
    return g->dag->stages[stage].strictly_inlinable ? TUNE_RULE_APPLY_AND_SKIP : TUNE_RULE_PASS;
}

static int inline_apply(const tune_gen *g, tune_sketch *sk, int stage) {
    (void)g;
    sk->inlined[sk->ninline++] = stage;
    return 0;
}

const tune_rule tune_rule_always_inline = {
    .name = "always inline",
    .when = TUNE_RULE_ON_STAGE,
    .unit = -1,
    .condition = inline_condition,
    .apply = inline_apply,
};
