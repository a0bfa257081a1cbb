/* cudnn_none.c - the build without cuDNN (-Dcudnn=disabled or not found): no cuDNN
 * state, so cuda_conv.c takes its im2col + cuBLAS path. The cuDNN entry points exist so
 * the backend links; they are never reached (c->dnn is always NULL). */
#include "cuda_internal.h"

rt_status rtp_cudnn_create(rt_backend *b, rtp_cudnn **out, rt_error *err)
{
    *out = NULL;
    return RT_OK;
}

void rtp_cudnn_destroy(rtp_cudnn *dnn) { (void)dnn; }

size_t rtp_cudnn_version(void) { return 0; }

const char *rtp_cudnn_built(void) { return "(not built)"; }

size_t rtp_cudnn_workspace(rt_backend *b, const rt_conv_desc *d) { return 0; }

static rt_status unreachable(rt_error *err)
{
    return RT_ERR(err, RT_EINVAL, "conv2d: this Kiln was built without cuDNN");
}

rt_status rtp_cudnn_fwd(rt_backend *b, float *y, const float *x, const float *w,
                        const rt_conv_desc *d, rt_error *err)
{
    return unreachable(err);
}

rt_status rtp_cudnn_bwd_data(rt_backend *b, float *dx, const float *dy, const float *w,
                             const rt_conv_desc *d, rt_error *err)
{
    return unreachable(err);
}

rt_status rtp_cudnn_bwd_filter(rt_backend *b, float *dw, const float *dy, const float *x,
                               const rt_conv_desc *d, rt_error *err)
{
    return unreachable(err);
}
