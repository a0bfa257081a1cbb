/* cuda_backend.c - the CUDA backend: open/close, error classification, the ops table.
 *
 * open checks cudaGetDeviceCount first, so "no device" is RT_ENODEV with the CUDA
 * runtime's own words (a driver older than Kiln's runtime, and a GPU whose architecture
 * the build lacks, are RT_ENODEV naming both and the fix), then creates one non-blocking stream, a cuBLAS handle bound to
 * it (default math: true fp32, no TF32; cuBLAS is loaded here, see cuda_blas_dl.c) and
 * the cuDNN state. Every op starts with
 * RTP_ENTER: a lost backend answers RT_EDEVICE_LOST at once, and the backend's device
 * is made current (several backends on different devices may share a host thread).
 * close synchronises and frees everything the backend created; it never resets the
 * device (other backends may live on it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* Errors after which the CUDA context is unusable (CUDA runtime docs; such errors are
 * returned again by every later call, which the peek below also catches). */
static int is_sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout: return 1;
    default: return 0;
    }
}

rt_status rtp_cuda_fail(rt_backend *b, cudaError_t e, const char *call, const char *file, int line,
                        rt_error *err)
{
    (void)cudaGetLastError(); /* clears a non-sticky error */
    int sticky = is_sticky(e) || cudaPeekAtLastError() != cudaSuccess;
    if (sticky) {
        if (b) b->lost = 1;
        return rt_error_set(err, RT_EDEVICE_LOST, file, line,
                            "CUDA device lost: %s failed: %s (%s); the device cannot be used "
                            "any more in this process ---> HINT: restart the kernel",
                            call, cudaGetErrorString(e), cudaGetErrorName(e));
    }
    return rt_error_set(err, RT_EDEVICE, file, line, "CUDA call %s failed: %s (%s)", call,
                        cudaGetErrorString(e), cudaGetErrorName(e));
}

rt_status rtp_cublas_fail(rt_backend *b, cublasStatus_t s, const char *call, const char *file,
                          int line, rt_error *err)
{
    /* a cuBLAS failure may hide a poisoned context: ask the stream */
    rtp_cuda *c = b ? rtp_cuda_of(b) : NULL;
    cudaError_t e = c ? cudaStreamQuery(c->stream) : cudaSuccess;
    if (e != cudaSuccess && e != cudaErrorNotReady)
        return rtp_cuda_fail(b, e, call, file, line, err);
    return rt_error_set(err, RT_EDEVICE, file, line, "cuBLAS call %s failed: %s (status %d)", call,
                        c && c->blasf.status_string ? c->blasf.status_string(s) : "?", (int)s);
}

rt_status rtp_cuda_enter(rt_backend *b, rt_error *err)
{
    if (b->lost)
        return RT_ERR(err, RT_EDEVICE_LOST,
                      "the CUDA device was lost after an earlier error "
                      "---> HINT: restart the kernel");
    rtp_cuda *c = rtp_cuda_of(b);
    if (!c) return RT_ERR(err, RT_EINVAL, "the CUDA backend is not open");
    c->seq++;
    RT_CUDA_TRY(b, err, cudaSetDevice(c->device));
    return RT_OK;
}

static void cuda_close(rt_backend *b)
{
    rtp_cuda *c = b ? rtp_cuda_of(b) : NULL;
    if (!c) return;
    (void)cudaSetDevice(c->device);
    if (c->stream && !b->lost) (void)cudaStreamSynchronize(c->stream);
    rtp_cudnn_destroy(c->dnn);
    if (c->blas) (void)c->blasf.destroy(c->blas);
    (void)cudaFree(c->ws);
    (void)cudaFree(c->coef);
    (void)cudaFree(c->red);
    if (c->stream) (void)cudaStreamDestroy(c->stream);
    (void)cudaGetLastError();
    free(c);
    b->impl = NULL;
}

static rt_status open_device(rt_backend *b, rtp_cuda *c, rt_error *err)
{
    struct cudaDeviceProp prop;
    RT_CUDA_TRY(b, err, cudaSetDevice(c->device));
    RT_CUDA_TRY(b, err, cudaGetDeviceProperties(&prop, c->device));
    snprintf(c->name, sizeof c->name, "%s", prop.name);
    c->cc_major = prop.major;
    c->cc_minor = prop.minor;
    if (!rtp_cuda_arch_covered(prop.major, prop.minor)) {
        char msg[400];
        rtp_cuda_arch_msg(msg, sizeof msg, c->device, prop.name, prop.major, prop.minor);
        return RT_ERR(err, RT_ENODEV, "%s", msg);
    }
    RT_CUDA_TRY(b, err, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    RT_CUDA_TRY(b, err, cudaMalloc((void **)&c->coef, sizeof *c->coef));
    RT_CUDA_TRY(b, err, cudaMalloc((void **)&c->red, RTP_RED_SLOTS * 2 * sizeof *c->red));
    RT_TRY(rtp_blas_load(&c->blasf, err));
    RTP_CUBLAS_TRY(b, err, c->blasf.create(&c->blas));
    RTP_CUBLAS_TRY(b, err, c->blasf.set_stream(c->blas, c->stream));
    RTP_CUBLAS_TRY(b, err, c->blasf.set_math_mode(c->blas, CUBLAS_DEFAULT_MATH));
    return rtp_cudnn_create(b, &c->dnn, err);
}

static rt_status cuda_open(rt_backend *b, int device, rt_error *err)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    char msg[400];
    if ((e == cudaErrorInsufficientDriver && rtp_cuda_driver_msg(msg, sizeof msg)) ||
        rtp_cuda_compat_msg(e, msg, sizeof msg)) {
        (void)cudaGetLastError();
        return RT_ERR(err, RT_ENODEV, "%s", msg);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return RT_ERR(err, RT_ENODEV,
                      "no CUDA device: cudaGetDeviceCount says \"%s\" (%s) "
                      "---> HINT: use --device cpu (or auto)",
                      cudaGetErrorString(e), cudaGetErrorName(e));
    }
    if (count == 0)
        return RT_ERR(err, RT_ENODEV,
                      "no CUDA device: cudaGetDeviceCount says 0 devices "
                      "---> HINT: use --device cpu (or auto)");
    if (device < 0 || device >= count)
        return RT_ERR(err, RT_ENODEV,
                      "cuda:%d does not exist: cudaGetDeviceCount says %d "
                      "device%s (cuda:0..cuda:%d)",
                      device, count, count == 1 ? "" : "s", count - 1);
    rtp_cuda *c = calloc(1, sizeof *c);
    if (!c) return RT_ERR(err, RT_ENOMEM, "out of memory opening the CUDA backend");
    c->device = device;
    c->prec = RT_PREC_FP32;
    b->impl = c;
    b->device = device;
    b->threads = 1;
    rt_status s = open_device(b, c, err);
    if (s != RT_OK) {
        b->lost = 0; /* close must still free what was created */
        cuda_close(b);
    }
    return s;
}

const rt_backend_ops rt_cuda_ops = {
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .alloc = rtp_cuda_alloc,
    .free = rtp_cuda_free,
    .reserve_workspace = rtp_cuda_reserve_workspace,
    .conv2d_workspace = rtp_cuda_conv2d_workspace,
    .dense_workspace = rtp_cuda_dense_workspace,
    .upload = rtp_cuda_upload,
    .download = rtp_cuda_download,
    .sync = rtp_cuda_sync,
    .fill = rtp_cuda_fill,
    .copy = rtp_cuda_copy,
    .add = rtp_cuda_add,
    .add_relu = rtp_cuda_add_relu,
    .conv2d_fwd = rtp_cuda_conv2d_fwd,
    .conv2d_bwd_data = rtp_cuda_conv2d_bwd_data,
    .conv2d_bwd_filter = rtp_cuda_conv2d_bwd_filter,
    .maxpool_fwd = rtp_cuda_maxpool_fwd,
    .maxpool_bwd = rtp_cuda_maxpool_bwd,
    .avgpool_fwd = rtp_cuda_avgpool_fwd,
    .avgpool_bwd = rtp_cuda_avgpool_bwd,
    .relu_fwd = rtp_cuda_relu_fwd,
    .relu_bwd = rtp_cuda_relu_bwd,
    .act_fwd = rtp_cuda_act_fwd,
    .act_bwd = rtp_cuda_act_bwd,
    .bn_fwd_train = rtp_cuda_bn_fwd_train,
    .bn_fwd_eval = rtp_cuda_bn_fwd_eval,
    .bn_bwd = rtp_cuda_bn_bwd,
    .bn_relu_bwd = rtp_cuda_bn_relu_bwd,
    .bn_add_fwd_train = rtp_cuda_bn_add_fwd_train,
    .bn_add_bwd = rtp_cuda_bn_add_bwd,
    .dropout_fwd = rtp_cuda_dropout_fwd,
    .dropout_bwd = rtp_cuda_dropout_bwd,
    .dense_fwd = rtp_cuda_dense_fwd,
    .dense_bwd_data = rtp_cuda_dense_bwd_data,
    .dense_bwd_filter = rtp_cuda_dense_bwd_filter,
    .xent_fwd = rtp_cuda_xent_fwd,
    .xent_bwd = rtp_cuda_xent_bwd,
    .adam_update = rtp_cuda_adam_update,
    .sgd_update = rtp_cuda_sgd_update,
    .clip_grad = rtp_cuda_clip_grad,
    .gather_batch = rtp_cuda_gather_batch,
    .bytes_to_f32 = rtp_cuda_bytes_to_f32,
    .xent_stats = rtp_cuda_xent_stats,
    .amp_scale = rtp_cuda_amp_scale,
    .amp_unscale = rtp_cuda_amp_unscale,
    .amp_adam_update = rtp_cuda_amp_adam_update,
    .amp_sgd_update = rtp_cuda_amp_sgd_update,
    .graph_begin = rtp_cuda_graph_begin,
    .graph_end = rtp_cuda_graph_end,
    .graph_launch = rtp_cuda_graph_launch,
    .graph_free = rtp_cuda_graph_free,
};
