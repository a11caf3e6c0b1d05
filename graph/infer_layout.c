/* graph/infer_layout.c — shape inference of Loom's own layout operators
 * (domain "loom"), which only graph/pass_alter_layout.c writes into a
 * model and group keys carry ("loom:ConvNCHWc(...)").
 *
 * The blocked layout NCHW[b]c: a tensor [N, C, H, W] held as
 * [N, C/b, H, W, b], channel c at block c / b, lane c % b. Where b does
 * not divide C the last block is padded: [N, ceil(C/b), H, W, b], the
 * lanes past C zero when made by ToNCHWc (a padded twin; its consumers
 * treat the padding lanes as channels with zero weights).
 *   loom:ToNCHWc(X){block=b}    [N, C, H, W] -> [N, ceil(C/b), H, W, b]
 *   loom:FromNCHWc(X){channels=C?}  [N, C/b, H, W, b] -> [N, C, H, W],
 *       C the blocks' channels unless `channels` drops the padding
 *   loom:ConvNCHWc(X, W, B?){dilations, group, pads, strides}
 *       X [N, C/b, H, W, b]; W [K/o, C/b, R, S, b, o] (group 1: W[ko,
 *       co, r, s, ci, ki] is the Conv's weight of output channel
 *       ko*o+ki, input channel co*b+ci; the output block o may differ
 *       from the input's), [K/o, C/group/b, R, S, b, o] (grouped: C/group
 *       a multiple of b, K/group of o; output block ko reads the input
 *       blocks of its group, ko*o / (K/group) * (C/group/b) + co) or
 *       [K/b, 1, R, S, 1, b] (depthwise: group == C == K, o == b);
 *       B [K/o, o]; output [N, K/o, OH, OW, o]. Pads are explicit (no
 *       auto_pad). X may also be plain [N, C, H, W] with group 1 and W
 *       [K/o, C, R, S, 1, o]: a block of one channel, read in place (a
 *       network's stem, C < o).
 *   loom:MaxPoolNCHWc(X){ceil_mode, dilations, kernel_shape, pads, strides}
 *   loom:AveragePoolNCHWc(X){ceil_mode, count_include_pad, dilations,
 *       kernel_shape, pads, strides}
 *       X [N, C/b, H, W, b] -> [N, C/b, OH, OW, b], each lane pooled as
 *       the ONNX operator pools its channel; pads explicit, no Indices,
 *       any other attribute refused (graph/infer_nn.c).
 *   loom:GlobalAveragePoolNCHWc(X), loom:GlobalMaxPoolNCHWc(X)
 *       X [N, C/b, H, W, b] -> [N, C/b, 1, 1, b]. */
#include <inttypes.h>
#include <string.h>

#include "graph/infer_internal.h"

static bool ints4(gr_ictx *c, const char *name, int want, int64_t dflt, int64_t *out)
{
    int n;
    bool bad = false;
    for (int i = 0; i < want; i++) out[i] = dflt;
    if (!gr_iattr_ints(c, name, out, want, &n, &bad)) return !bad;
    if (n != want) return gr_ifail(c, "attribute '%s' has %d values (needs %d)", name, n, want);
    return true;
}

static bool infer_to_nchwc(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "X", &x)) return false;
    int64_t b = gr_iattr_int(c, "block", 0);
    if (x->ndim != 4) return gr_ifail(c, "input X has rank %d (needs 4: N, C, H, W)", x->ndim);
    if (b < 1) return gr_ifail(c, "attribute 'block' is %" PRId64 ": must be at least 1", b);
    int64_t out[5] = {x->shape[0], (x->shape[1] + b - 1) / b, x->shape[2], x->shape[3], b};
    return gr_iout(c, 0, x->elem_type, 5, out);
}

static bool infer_from_nchwc(gr_ictx *c)
{
    const gr_type *x;
    if (!gr_iin_req(c, 0, "X", &x)) return false;
    if (x->ndim != 5) return gr_ifail(c, "input X has rank %d (needs 5: N, C/b, H, W, b)", x->ndim);
    int64_t all = x->shape[1] * x->shape[4], ch = gr_iattr_int(c, "channels", all);
    if (ch > all || ch <= all - x->shape[4])
        return gr_ifail(c, "attribute 'channels' is %" PRId64 ": must be in the last of the %"
                           PRId64 " blocks of %" PRId64 " (%" PRId64 " to %" PRId64 ")",
                        ch, x->shape[1], x->shape[4], all - x->shape[4] + 1, all);
    int64_t out[4] = {x->shape[0], ch, x->shape[2], x->shape[3]};
    return gr_iout(c, 0, x->elem_type, 4, out);
}

static bool infer_conv_nchwc(gr_ictx *c)
{
    const gr_type *x, *w;
    if (!gr_iin_req(c, 0, "X", &x) || !gr_iin_req(c, 1, "W", &w)) return false;
    if (x->ndim != 5 && x->ndim != 4)
        return gr_ifail(c, "input X has rank %d (needs 5: N, C/b, H, W, b; or 4: N, C, H, W "
                           "with group 1)",
                        x->ndim);
    if (w->ndim != 6) return gr_ifail(c, "input W has rank %d (needs 6)", w->ndim);
    /* A plain X is read as blocks of one channel. */
    int64_t b = x->ndim == 5 ? x->shape[4] : 1, bo = w->shape[5], C = x->shape[1] * b,
            K = w->shape[0] * bo;
    int64_t group = gr_iattr_int(c, "group", 1);
    if (x->ndim == 4 && group != 1)
        return gr_ifail(c, "a plain (rank 4) X needs group 1, not %" PRId64, group);
    bool depthwise = group == C && group == K && group > 1;
    /* Grouped: every group whole input blocks, every output block in one group. */
    bool grouped = !depthwise && group > 1 && C % group == 0 && K % group == 0 &&
                   (C / group) % b == 0 && (K / group) % bo == 0;
    if (depthwise ? (bo != b || w->shape[1] != 1 || w->shape[4] != 1 || w->shape[0] != x->shape[1])
        : grouped ? (w->shape[1] != C / group / b || w->shape[4] != b)
                  : (group != 1 || w->shape[1] != x->shape[1] || w->shape[4] != b))
        return gr_ifail(c, "W [%" PRId64 ",%" PRId64 ",..,%" PRId64 ",%" PRId64 "] does not "
                           "fit X with %" PRId64 " channels in blocks of %" PRId64 " and group %"
                           PRId64 " (group 1, depthwise, or groups of whole input and output "
                           "blocks)",
                        w->shape[0], w->shape[1], w->shape[4], w->shape[5], C, b, group);
    const gr_type *bias = gr_iin(c, 2);
    if (bias && (bias->ndim != 2 || bias->shape[0] != w->shape[0] || bias->shape[1] != bo))
        return gr_ifail(c, "input B must have shape [%" PRId64 ",%" PRId64 "]", w->shape[0], bo);
    int64_t s[2], d[2], p[4];
    if (!ints4(c, "strides", 2, 1, s) || !ints4(c, "dilations", 2, 1, d) || !ints4(c, "pads", 4, 0, p))
        return false;
    int64_t out[5] = {x->shape[0], w->shape[0], 0, 0, bo};
    for (int i = 0; i < 2; i++) {
        if (s[i] < 1 || d[i] < 1 || p[i] < 0 || p[2 + i] < 0)
            return gr_ifail(c, "strides and dilations must be >= 1, pads >= 0");
        int64_t span = (w->shape[2 + i] - 1) * d[i] + 1, in = x->shape[2 + i] + p[i] + p[2 + i];
        if (in < span) return gr_ifail(c, "the kernel is larger than the padded input");
        out[2 + i] = (in - span) / s[i] + 1;
    }
    return gr_iout(c, 0, x->elem_type, 5, out);
}

gr_infer_fn gr_infer_layout_rule(const char *op)
{
    if (strcmp(op, "ConvNCHWc") == 0) return infer_conv_nchwc;
    if (strcmp(op, "ToNCHWc") == 0) return infer_to_nchwc;
    if (strcmp(op, "FromNCHWc") == 0) return infer_from_nchwc;
    if (strcmp(op, "MaxPoolNCHWc") == 0 || strcmp(op, "AveragePoolNCHWc") == 0)
        return gr_infer_pool_nchwc;
    if (strcmp(op, "GlobalAveragePoolNCHWc") == 0 || strcmp(op, "GlobalMaxPoolNCHWc") == 0)
        return gr_infer_global_pool_nchwc;
    return NULL;
}
