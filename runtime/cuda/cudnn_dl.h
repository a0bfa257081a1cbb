/* cudnn_dl.h - the cuDNN entry points cudnn_conv.c calls, as a table filled when the
 * first CUDA backend creates its cuDNN state (cudnn_dl.c dlopens libcudnn; the mock
 * build, tests/gpu/mock/mock_cudnn_dl.c, points it at the stand-in). Only cuDNN files
 * include this header (cuDNN stays in them). Field types come from cudnn.h, so a
 * signature mismatch fails to compile.
 */
#ifndef CUDNN_DL_H
#define CUDNN_DL_H

#include <cudnn.h>
#include <stdio.h>

#include "../rt_error.h"

#define RTP_DNN_FN(name) __typeof__(cudnn##name) *name
typedef struct rtp_dnn_fns {
    RTP_DNN_FN(GetVersion);
    RTP_DNN_FN(GetCudartVersion);
    RTP_DNN_FN(GetErrorString);
    RTP_DNN_FN(Create);
    RTP_DNN_FN(Destroy);
    RTP_DNN_FN(SetStream);
    RTP_DNN_FN(CreateTensorDescriptor);
    RTP_DNN_FN(DestroyTensorDescriptor);
    RTP_DNN_FN(CreateFilterDescriptor);
    RTP_DNN_FN(DestroyFilterDescriptor);
    RTP_DNN_FN(CreateConvolutionDescriptor);
    RTP_DNN_FN(DestroyConvolutionDescriptor);
    RTP_DNN_FN(SetTensor4dDescriptor);
    RTP_DNN_FN(SetFilter4dDescriptor);
    RTP_DNN_FN(SetConvolution2dDescriptor);
    RTP_DNN_FN(SetConvolutionMathType);
    RTP_DNN_FN(SetConvolutionGroupCount);
    RTP_DNN_FN(GetConvolution2dForwardOutputDim);
    RTP_DNN_FN(GetConvolutionForwardAlgorithm_v7);
    RTP_DNN_FN(GetConvolutionBackwardDataAlgorithm_v7);
    RTP_DNN_FN(GetConvolutionBackwardFilterAlgorithm_v7);
    RTP_DNN_FN(ConvolutionForward);
    RTP_DNN_FN(ConvolutionBackwardData);
    RTP_DNN_FN(ConvolutionBackwardFilter);
} rtp_dnn_fns;
#undef RTP_DNN_FN

/* cudnnGetVersion() -> major and minor: cuDNN 8 encodes 8.9.7 as 8907 (major * 1000),
 * cuDNN 9 and later 9.1.0 as 90100 (major * 10000). */
static inline void rtp_dnn_version_split(size_t v, int *major, int *minor)
{
    *major = (int)(v >= 10000 ? v / 10000 : v / 1000);
    *minor = (int)(v >= 10000 ? v / 100 % 100 : v / 100 % 10);
}

/* Whether a loaded cuDNN (its cudnnGetVersion and cudnnGetCudartVersion) is the one Kiln
 * was built for: the same cuDNN major (the ABI of the table) and built for the same CUDA
 * major as Kiln's runtime (libcudnn.so.9 is one name for the CUDA 12 and the CUDA 13
 * builds, which do not mix). 0 with the reason in why[n] otherwise. */
static inline int rtp_dnn_compatible(size_t version, size_t cudart, int built_major,
                                     int built_cuda_major, char *why, size_t n)
{
    int major, minor;
    rtp_dnn_version_split(version, &major, &minor);
    if (major != built_major) {
        snprintf(why, n, "it is cuDNN %d.%d, Kiln was built with cuDNN %d", major, minor,
                 built_major);
        return 0;
    }
    if ((int)(cudart / 1000) != built_cuda_major) {
        snprintf(why, n, "it is cuDNN %d.%d for CUDA %d.%d, Kiln was built with CUDA %d", major,
                 minor, (int)(cudart / 1000), (int)(cudart % 1000 / 10), built_cuda_major);
        return 0;
    }
    return 1;
}

/* Sets *out to the process-wide table (borrowed, immutable, lives until exit), loading
 * libcudnn on the first call (thread-safe; later calls only return the result). When
 * the library cannot be loaded or lacks an entry point: *out = NULL and RT_ENODEV
 * naming the library and the reason (the same answer on every call). */
RT_MUST_USE rt_status rtp_dnn_load(const rtp_dnn_fns **out, rt_error *err);

#endif
