/* cuda_add.c - the backend's add and add_relu ops (dst = a + x, relu(a + x)) over
 * cuda_add.cu's kernels: one launch on the backend's stream (rt_backend_call.c has
 * checked the arguments). */
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
