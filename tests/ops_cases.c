/*
 * tests/ops_cases.c — the operator cases the operator tests run: several
 * shapes per registered operator, odd sizes included.
 */
#include "ops_cases.h"

const ops_case tu_ops_cases[] = {
    {"matmul", "M=64,N=48,K=32"},
    {"matmul", "M=37,N=45,K=29"},
    {"matmul", "M=5,N=3,K=7,transpose_a=1"},
    {"matmul", "M=19,N=70,K=13,transpose_b=1"},
    {"matmul", "M=1,N=17,K=9,transpose_a=1,transpose_b=1"},
    {"batch_matmul", "B=3,M=13,N=33,K=11"},
    {"batch_matmul", "B=2,M=8,N=16,K=5,transpose_a=1,transpose_b=1"},
    {"dense", "M=7,N=37,K=19"},
    {"dense", "M=16,N=32,K=8,bias=0"},
    {"dense_bias_gelu", "M=9,N=21,K=17"},
    {"conv2d", "N=1,C=8,H=12,W=12,K=16,R=3,S=3,stride=1,pad=1"},
    {"conv2d_nchw", "N=2,C=3,H=13,W=11,K=5,R=5,S=3,stride=2,pad=2"},
    {"conv2d", "N=1,C=6,H=9,W=10,K=4,R=3,S=3,pad=2,dilation=2,groups=2"},
    {"conv2d", "N=1,C=16,H=7,W=7,K=24,R=1,S=1"},
    {"conv2d_nhwc", "N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1"},
    {"conv2d_nhwc", "N=2,C=6,H=9,W=7,K=9,R=3,S=2,stride=2,pad=1,groups=3"},
    {"conv2d_bias_relu", "N=1,C=5,H=11,W=9,K=7,R=3,S=3,pad=1"},
    /* output channels in whole vectors: the packed-channel register tile */
    {"conv2d_bias_relu", "N=1,C=6,H=10,W=14,K=32,R=3,S=3,pad=1"},
    /* ... with a column tail: 6 columns a tile on 28 */
    {"conv2d", "N=1,C=8,H=7,W=28,K=16,R=3,S=3,pad=1"},
    {"conv2d", "N=2,C=8,H=9,W=9,K=16,R=3,S=3,stride=2,pad=1,groups=2"},
    /* ... with the taps outside blocks of input channels (AVX2: 40 = 4 x
     * 10 under two vectors of lanes; 24 = 2 x 12 under one vector of two
     * rows), and inside (one vector, one row of 10 columns). */
    {"conv2d", "N=1,C=40,H=8,W=9,K=16,R=3,S=3,pad=1"},
    {"conv2d", "N=1,C=24,H=8,W=4,K=8,R=3,S=3,pad=1"},
    {"conv2d", "N=1,C=24,H=8,W=10,K=8,R=3,S=3,pad=1"},
    {"depthwise_conv2d", "N=1,C=8,H=14,W=14,R=3,S=3,pad=1"},
    {"depthwise_conv2d_nchw", "N=2,C=5,H=11,W=9,R=5,S=5,stride=2,pad=2,dilation=1"},
    {"max_pool2d", "N=1,C=4,H=12,W=12,R=2,S=2,stride=2"},
    {"max_pool2d", "N=2,C=3,H=11,W=9,R=3,S=3,stride=2,pad=1"},
    {"avg_pool2d", "N=1,C=4,H=10,W=13,R=3,S=3,stride=1,pad=1"},
    {"avg_pool2d", "N=1,C=3,H=8,W=8,R=2,S=2,stride=2"},
    {"global_avg_pool2d", "N=2,C=19,H=7,W=5"},
    {"softmax", "M=16,N=64"},
    {"softmax", "M=5,N=37"},
    {"layer_norm", "M=8,N=48"},
    {"layer_norm", "M=3,N=29"},
    {"relu", "D0=3,D1=5,D2=7,D3=11"},
    {"gelu", "D0=100"},
    {"sigmoid", "D0=17,D1=33"},
    {"add", "D0=4,D1=6,D2=5"},
    {"add", "D0=3,D1=4,D2=5,D3=6,b_bcast=5"},
    {"mul", "D0=7,D1=9,a_bcast=1,b_bcast=2"},
    {"mul", "D0=2,D1=3,D2=4,D3=37,a_bcast=8"},
    {"sum", "D0=4,D1=5,D2=6,D3=7,axes=6"},
    {"sum", "D0=8,D1=33,axes=2"},
    {"sum", "D0=3,D1=4,D2=5,D3=6,axes=15"},
    {"sum", "D0=4,D1=3,D2=2,D3=64,axes=8"}, /* the last axis in 4 vectors of partial sums */
    {"max", "D0=5,D1=2,D2=3,D3=48,axes=8"}, /* ... in 2 vectors */
    {"mean", "D0=3,D1=2,D2=5,D3=40,axes=8"}, /* ... in 1, then the divide */
    {"mean", "D0=4,D1=5,D2=6,D3=7,axes=1,keepdims=1"},
    {"mean", "D0=6,D1=19,axes=2"},
    {"max", "D0=3,D1=10,D2=4,D3=33,axes=10"},
    {"max", "D0=9,D1=31,axes=1"},
};
const int tu_ops_ncases = (int)(sizeof tu_ops_cases / sizeof *tu_ops_cases);
