/* cuda_add.c - the backend's add and add_relu ops (dst = a + x, relu(a + x)) over
 * cuda_add.cu's kernels: one launch on the backend's stream (rt_backend_call.c has
 * checked the arguments); and the batch norm with the residual add fused after it
 * (bn_add_fwd_train, bn_add_bwd), composed of the norm's, the add's and the relu's
 * kernels in the order the model runs them apart, so the bits are theirs. The CPU fuses
 * them into its passes (cpu_bn.c); here each is a launch of its own. */
#include "cuda_internal.h"
#include "cuda_kernels.h"

/* one launch of the add kernel, or of add_relu's */
static rt_status add(rt_backend *b, rt_tensor *dst, const rt_tensor *a, const rt_tensor *x,
                     int relu, rt_error *err)
{
    RTP_ENTER(b);
    size_t n = rt_tensor_numel(dst);
    cudaStream_t s = rtp_cuda_of(b)->stream;
    RT_CUDA_TRY(b, err, (relu ? rtp_k_add_relu : rtp_k_add)(s, dst->data, a->data, x->data, n));
    return RT_OK;
}

rt_status rtp_cuda_add(rt_backend *b, rt_tensor *dst, const rt_tensor *a, const rt_tensor *x,
                       rt_error *err)
{
    return add(b, dst, a, x, 0, err);
}

rt_status rtp_cuda_add_relu(rt_backend *b, rt_tensor *dst, const rt_tensor *a, const rt_tensor *x,
                            rt_error *err)
{
    return add(b, dst, a, x, 1, err);
}

rt_status rtp_cuda_bn_add_fwd_train(rt_backend *b, rt_tensor *out, rt_tensor *save_mean,
                                    rt_tensor *save_invstd, rt_tensor *running_mean,
                                    rt_tensor *running_var, const rt_tensor *in,
                                    const rt_tensor *skip, const rt_tensor *gamma,
                                    const rt_tensor *beta, const rt_bn_desc *d, rt_error *err)
{
    rt_bn_desc norm = *d;
    norm.relu = 0; /* the relu follows the sum */
    RT_TRY(rtp_cuda_bn_fwd_train(b, out, save_mean, save_invstd, running_mean, running_var, in,
                                 gamma, beta, &norm, err));
    return add(b, out, out, skip, d->relu, err);
}

rt_status rtp_cuda_bn_add_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma, rt_tensor *dbeta,
                              rt_tensor *keep, const rt_tensor *dout, const rt_tensor *dout2,
                              const rt_tensor *out, const rt_tensor *in, const rt_tensor *gamma,
                              const rt_tensor *save_mean, const rt_tensor *save_invstd,
                              const rt_bn_desc *d, rt_error *err)
{
    const rt_tensor *g = dout;
    if (dout2) { /* the two paths' gradients of out, summed as the begin of a block sums them */
        RT_TRY(add(b, keep, dout, dout2, 0, err));
        g = keep;
    }
    if (d->relu) RT_TRY(rtp_cuda_relu_bwd(b, keep, g, out, 0.0f, err));
    else if (g != keep) RT_TRY(rtp_cuda_copy(b, keep, g, err));
    rt_bn_desc norm = *d;
    norm.relu = 0;
    return rtp_cuda_bn_bwd(b, din, dgamma, dbeta, keep, in, gamma, save_mean, save_invstd, &norm,
                           err);
}
