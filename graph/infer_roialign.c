/* graph/infer_roialign.c — RoiAlign (opsets 10, 16: the
 * coordinate_transformation_mode): X [N, C, H, W] pooled over each of
 * rois [R, 4] (x1, y1, x2, y2 in X's coordinates times spatial_scale) of
 * image batch_indices[r], into Y [R, C, output_height, output_width] by
 * averaging sampling_ratio^2 bilinear samples per bin. Not supported:
 * sampling_ratio 0 (an adaptive count that depends on each roi's size at
 * run time) and mode max. */
#include "graph/infer_internal.h"

#include <inttypes.h>
#include <string.h>

bool gr_infer_roialign(gr_ictx *c)
{
    const gr_type *x, *rois, *bi;
    if (!gr_iin_req(c, 0, "X", &x) || !gr_iin_req(c, 1, "rois", &rois) || !gr_iin_req(c, 2, "batch_indices", &bi))
        return false;
    if ((x->elem_type != GR_FLOAT && x->elem_type != GR_DOUBLE) || rois->elem_type != x->elem_type)
        return gr_ifail(c, "inputs X and rois must be both float or both double (%s, %s)", gr_elem_type_name(x->elem_type),
                        gr_elem_type_name(rois->elem_type));
    if (x->ndim != 4) return gr_ifail(c, "input X has rank %d; RoiAlign takes [N, C, H, W]", x->ndim);
    if (rois->ndim != 2 || rois->shape[1] != 4) return gr_ifail(c, "input rois must have shape [R, 4]");
    if (bi->elem_type != GR_INT64 || bi->ndim != 1 || bi->shape[0] != rois->shape[0])
        return gr_ifail(c, "input batch_indices must be int64 of shape [%" PRId64 "]", rois->shape[0]);
    const char *mode = gr_iattr_str(c, "mode", "avg");
    if (strcmp(mode, "avg") != 0) return gr_ifail(c, "mode '%s' is not supported (only avg)", mode);
    const char *ct = gr_iattr_str(c, "coordinate_transformation_mode", "half_pixel");
    if (c->opset < 16 && gr_node_attr(c->n, "coordinate_transformation_mode"))
        return gr_ifail(c, "attribute 'coordinate_transformation_mode' is not defined before opset 16");
    if (strcmp(ct, "half_pixel") != 0 && strcmp(ct, "output_half_pixel") != 0)
        return gr_ifail(c, "attribute 'coordinate_transformation_mode' must be half_pixel or output_half_pixel");
    int64_t oh = gr_iattr_int(c, "output_height", 1), ow = gr_iattr_int(c, "output_width", 1);
    int64_t sr = gr_iattr_int(c, "sampling_ratio", 0);
    if (oh < 1 || ow < 1) return gr_ifail(c, "attributes 'output_height' and 'output_width' must be >= 1");
    if (sr == 0) return gr_ifail(c, "sampling_ratio 0 (adaptive, from each roi's size at run time) is not supported");
    if (sr < 0) return gr_ifail(c, "attribute 'sampling_ratio' must be >= 0");
    int64_t out[4] = {rois->shape[0], x->shape[1], oh, ow};
    return gr_iout(c, 0, x->elem_type, 4, out);
}
