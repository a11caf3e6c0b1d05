/* graph/infer_stft.c — STFT (opset 17): the DFT of frames of a signal
 * [batch, length, 1 or 2] taken every frame_step samples, frame_length
 * long (frame_step and frame_length constants read at compile time; the
 * length is the window's when frame_length is left out), each multiplied
 * by the window when one is given. Output [batch, frames, bins, 2] with
 * frames = (length - frame_length) / frame_step + 1 and bins =
 * frame_length / 2 + 1 with onesided (the default), frame_length
 * otherwise. */
#include "graph/infer_internal.h"

#include <inttypes.h>

bool gr_infer_stft(gr_ictx *c)
{
    const gr_type *x, *win = gr_iin(c, 2);
    if (!gr_iin_req(c, 0, "signal", &x)) return false;
    if (x->elem_type != GR_FLOAT && x->elem_type != GR_DOUBLE)
        return gr_ifail(c, "input signal is %s; STFT takes float or double", gr_elem_type_name(x->elem_type));
    if (x->ndim != 3 || (x->shape[2] != 1 && x->shape[2] != 2))
        return gr_ifail(c, "input signal must have shape [batch, length, 1 or 2]");
    int64_t step, len = -1;
    int n;
    if (!gr_iin(c, 1)) return gr_ifail(c, "input 'frame_step' is missing");
    if (!gr_iin_ints(c, 1, "frame_step", &step, 1, &n)) return false;
    if (n != 1 || step < 1) return gr_ifail(c, "input 'frame_step' must be one value >= 1");
    if (gr_iin(c, 3)) {
        if (!gr_iin_ints(c, 3, "frame_length", &len, 1, &n)) return false;
        if (n != 1 || len < 1) return gr_ifail(c, "input 'frame_length' must be one value >= 1");
    }
    if (win) {
        if (win->elem_type != x->elem_type || win->ndim != 1)
            return gr_ifail(c, "input window must be a 1-D %s tensor", gr_elem_type_name(x->elem_type));
        if (len >= 0 && win->shape[0] != len)
            return gr_ifail(c, "input window has %" PRId64 " values; frame_length is %" PRId64, win->shape[0], len);
        len = win->shape[0];
    }
    if (len < 0) return gr_ifail(c, "a window or a frame_length is required");
    if (len > x->shape[1])
        return gr_ifail(c, "frames of %" PRId64 " samples do not fit the signal's %" PRId64, len, x->shape[1]);
    int64_t one = gr_iattr_int(c, "onesided", 1);
    if (one != 0 && one != 1) return gr_ifail(c, "attribute 'onesided' must be 0 or 1");
    int64_t out[4] = {x->shape[0], (x->shape[1] - len) / step + 1, one ? len / 2 + 1 : len, 2};
    return gr_iout(c, 0, x->elem_type, 4, out);
}
