/* rt_cuda_stub.c - rt_device.h for a Kiln built without CUDA (-Dcuda=disabled or no
 * toolkit): no devices, with the reason; precision other than fp32 is refused. The
 * same header as the real backend, so callers (%device, %train) need no #ifdef. */
#include <stdio.h>
#include <string.h>

#include "../rt_nccl.h"
#include "rt_device.h"

rt_status rt_cuda_list_devices(rt_cuda_device_list *out, rt_error *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->why, sizeof out->why, "this Kiln was built without CUDA");
    return RT_OK;
}

rt_status rt_cuda_set_precision(rt_backend *b, rt_precision p, rt_error *err)
{
    if (p == RT_PREC_FP32) return RT_OK;
    return RT_ERR(err, RT_EINVAL,
                  "--precision %s needs a CUDA device; this Kiln was built "
                  "without CUDA and computes in fp32 only ---> HINT: use --precision fp32",
                  rt_precision_name(p));
}

const char *rt_cuda_build_info(void)
{
    return "CUDA: not built (CPU only; rebuild with -Dcuda=enabled where the toolkit is "
           "installed)";
}

rt_precision rt_cuda_get_precision(const rt_backend *b) { return RT_PREC_FP32; }

rt_status rt_cuda_mem_info(rt_backend *b, size_t *free_bytes, size_t *total_bytes, rt_error *err)
{
    *free_bytes = *total_bytes = 0;
    return RT_ERR(err, RT_ENODEV, "this Kiln was built without CUDA");
}

rt_status rt_nccl_create(rt_nccl **out, rt_backend *const *b, int n, rt_error *err)
{
    *out = NULL;
    return RT_ERR(err, RT_ENODEV, "NCCL needs CUDA; this Kiln was built without CUDA");
}

rt_status rt_nccl_allreduce(rt_nccl *c, int r, rt_backend *b, rt_tensor *buf, float scale,
                            double timeout_s, rt_nccl_tally *tally, rt_error *err)
{
    return RT_ERR(err, RT_ENODEV, "NCCL needs CUDA; this Kiln was built without CUDA");
}

void rt_nccl_cancel(rt_nccl *c) {}
void rt_nccl_destroy(rt_nccl *c) {}
int rt_nccl_device(const rt_nccl *c) { return -1; }
void rt_nccl_bind(rt_nccl *c, rt_backend *b) {}

rt_status rt_nccl_host(rt_nccl *c, void *buf, size_t n, rt_nccl_host_op op, double timeout_s,
                       rt_error *err)
{
    return RT_ERR(err, RT_ENODEV, "NCCL needs CUDA; this Kiln was built without CUDA");
}

int rt_nccl_available(rt_error *err)
{
    RT_ERR(err, RT_ENODEV, "NCCL needs CUDA; this Kiln was built without CUDA");
    return 0;
}

rt_status rt_nccl_unique_id(unsigned char id[RT_NCCL_ID_BYTES], rt_error *err)
{
    return RT_ERR(err, RT_ENODEV, "NCCL needs CUDA; this Kiln was built without CUDA");
}

rt_status rt_nccl_create_rank(rt_nccl **out, rt_backend *b,
                              const unsigned char id[RT_NCCL_ID_BYTES], int rank, int nranks,
                              double timeout_s, rt_error *err)
{
    *out = NULL;
    return RT_ERR(err, RT_ENODEV, "NCCL needs CUDA; this Kiln was built without CUDA");
}
