/* graph/lower_tensor.c — shape and layout operators: Flatten, Reshape,
 * Transpose, Concat, Split, Slice, Gather, Squeeze, Unsqueeze, Identity,
 * ConstantOfShape. */
#include "graph/lower.h"

const gr_lower_rule gr_lower_rules_tensor[] = {
    {0},
};
