/* graph/lower_nn.c — convolution, pooling, matrix products,
 * normalization, reductions and softmax. */
#include "graph/lower.h"

const gr_lower_rule gr_lower_rules_nn[] = {
    {0},
};
