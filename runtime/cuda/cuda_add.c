/* cuda_add.c - the backend's add op (dst = a + x) over cuda_add.cu's kernel:
 * one launch on the backend's stream (rt_backend_call.c has checked the arguments). */
#include "cuda_internal.h"
#include "cuda_kernels.h"

rt_status rtp_cuda_add(rt_backend *b, rt_tensor *dst, const rt_tensor *a, const rt_tensor *x,
                       rt_error *err)
{
    RTP_ENTER(b);
    size_t n = rt_tensor_numel(dst);
    RT_CUDA_TRY(b, err, rtp_k_add(rtp_cuda_of(b)->stream, dst->data, a->data, x->data, n));
    return RT_OK;
}
