/*
 * autotune/rules/targets.c — the ordered rule list of each target, with
 * the mutation weights beside the rules.
 *
 * Order matters twice. The generator tries a stage's rules top to bottom:
 * the first APPLY_AND_SKIP rule that takes a stage is its only one (a
 * placeholder, a padding stage, an inlined stage), and the variants of
 * the APPLY rules come out in this order, which is the order of the
 * sketches (tune_generate_sketches keeps the first max). The variant
 * rules (pack, epilogue fusion) derive from each variant of a stage rule,
 * the sketch rules (GPU) run on the whole sketch after the stages.
 *
 * Mutation (tune_program_mutate) picks one hole, each with its rule's
 * weight (Ansor picks among its mutation rules — tile size, unroll,
 * parallel, compute location — by fixed probabilities; here the holes are
 * the rules' own, so the weights are per hole): all 1, every hole equally
 * likely, so a rule's share is its count of holes in the sketch.
 *
 * Applying a program (tune_program_apply) runs the passes of `phases` in
 * order, each over the units first stage to last (reverse: units are
 * derived last stage first) or in sketch order.
 */
#include "autotune/rules/rule.h"

static const tune_rule_use cpu_rules[] = {
    /* rule                          mutation weight of each hole */
    {&tune_rule_skip_placeholder,    0},
    {&tune_rule_compute_location,    1},
    {&tune_rule_always_inline,       0},
    /* AVX512-BF16's dot product first: its variant leads (twice the
     * float32 tiles' rate), the float32 tiles follow */
    {&tune_rule_dot_bf16,            1},
    {&tune_rule_tile_fuse,           1},
    {&tune_rule_multi_level_tile,    1},
    {&tune_rule_cache_write,         1},
    {&tune_rule_packed_tile,         1},
    {&tune_rule_annotate,            1},
    {&tune_rule_rfactor,             1},
    /* variant rules */
    {&tune_rule_pack,                0}, /* no holes */
    {&tune_rule_epilogue_fusion,     0}, /* no unit of its own */
};

const tune_rule_list tune__rules_cpu = {
    .name = "llvm",
    .rules = cpu_rules,
    .nrules = sizeof cpu_rules / sizeof cpu_rules[0],
    .mutate_tries = 16,
    /* Placing and packing refer to the tiles' loops and caches. */
    .phases = {TUNE_PHASE_INLINE, TUNE_PHASE_MAIN, TUNE_PHASE_LATE},
    .phase_reverse = {false, true, true},
    .nphases = 3,
};

static const tune_rule_use cuda_rules[] = {
    /* rule                          mutation weight of each hole */
    {&tune_rule_skip_placeholder,    0},
    {&tune_rule_always_inline,       0},
    {&tune_rule_gpu_flat,            1},
    {&tune_rule_gpu_tile,            1},
    /* sketch rules; tensor cores first: their variant leads (8-15x the
     * CUDA cores' throughput), the others pass over it */
    {&tune_rule_gpu_tensorcore,      1},
    {&tune_rule_gpu_shared,          1},
    {&tune_rule_gpu_xreduce,         1},
};

const tune_rule_list tune__rules_cuda = {
    .name = "cuda",
    .rules = cuda_rules,
    .nrules = sizeof cuda_rules / sizeof cuda_rules[0],
    /* Tile-size moves that break a hard tile rule are undone, so more
     * tries than on the CPU. */
    .mutate_tries = 32,
    /* Accumulators before the shared copies that read into them, the
     * copies before inlining (a padding stage lands in its copy), tiles
     * before the copies computed at their loops, flat stages last. */
    .phases = {TUNE_PHASE_ACCUMULATE, TUNE_PHASE_CACHE_READ, TUNE_PHASE_INLINE, TUNE_PHASE_MAIN,
               TUNE_PHASE_LATE, TUNE_PHASE_BIND},
    .phase_reverse = {true, false, false, true, false, true},
    .nphases = 6,
};

/* Every unit kind and the rule that adds it. */
static const tune_rule *const unit_rules[] = {
    [TUNE_UNIT_ANNOTATE] = &tune_rule_annotate,
    [TUNE_UNIT_TILE] = &tune_rule_multi_level_tile,
    [TUNE_UNIT_TILE_CACHE] = &tune_rule_cache_write,
    [TUNE_UNIT_TILE_FUSE] = &tune_rule_tile_fuse,
    [TUNE_UNIT_RFACTOR] = &tune_rule_rfactor,
    [TUNE_UNIT_PLACE] = &tune_rule_compute_location,
    [TUNE_UNIT_PACK] = &tune_rule_pack,
    [TUNE_UNIT_GPU_TILE] = &tune_rule_gpu_tile,
    [TUNE_UNIT_GPU_SHARED] = &tune_rule_gpu_shared,
    [TUNE_UNIT_GPU_FLAT] = &tune_rule_gpu_flat,
    [TUNE_UNIT_TILE_CACHE_PACKED] = &tune_rule_packed_tile,
    [TUNE_UNIT_GPU_XREDUCE] = &tune_rule_gpu_xreduce,
    [TUNE_UNIT_GPU_TENSORCORE] = &tune_rule_gpu_tensorcore,
    [TUNE_UNIT_TILE_DOT] = &tune_rule_dot_bf16,
};

static const char *unknown_text(const tune_unit *un, const tune_dag *dag, const char **object) {
    (void)un, (void)dag;
    *object = NULL;
    return "?";
}

/* A unit of no known kind (a sketch not made by the generators) has no
 * holes to fill and no steps: the drivers skip it rather than crash. */
static const tune_rule unknown = {.name = "unknown", .unit = -1, .text = unknown_text};

const tune_rule *tune__unit_rule(tune_unit_kind k) {
    return (unsigned)k < sizeof unit_rules / sizeof unit_rules[0] && unit_rules[k] ? unit_rules[k]
                                                                                  : &unknown;
}

const tune_rule *tune__hole_rule(const tune_sketch *sk, const tune_hole *h) {
    return h->unit >= 0 && h->unit < sk->nunits ? tune__unit_rule(sk->units[h->unit].kind)
                                                : &unknown;
}

const tune_rule_list *tune__rules_of(const tune_sketch *sk) {
    return tune_sketch_is_gpu(sk) ? &tune__rules_cuda : &tune__rules_cpu;
}

int tune__mutate_weight(const tune_rule_list *l, const tune_rule *r) {
    for (int i = 0; i < l->nrules; i++)
        if (l->rules[i].rule == r) return l->rules[i].mutate_weight;
    return 0;
}
