/* cudnn_dl.h - the cuDNN entry points cudnn_conv.c calls, as a table filled when the
 * first CUDA backend creates its cuDNN state (cudnn_dl.c dlopens libcudnn; the mock
 * build, tests/gpu/mock/mock_cudnn_dl.c, points it at the stand-in). Only cuDNN files
 * include this header (STYLE: cuDNN isolated). Field types come from cudnn.h, so a
 * signature mismatch fails to compile.
 */
#ifndef CUDNN_DL_H
#define CUDNN_DL_H

#include <cudnn.h>

#include "../rt_error.h"

#define RTP_DNN_FN(name) __typeof__(cudnn##name) *name
typedef struct rtp_dnn_fns {
    RTP_DNN_FN(GetVersion);
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
    RTP_DNN_FN(GetConvolution2dForwardOutputDim);
    RTP_DNN_FN(GetConvolutionForwardAlgorithm_v7);
    RTP_DNN_FN(GetConvolutionBackwardDataAlgorithm_v7);
    RTP_DNN_FN(GetConvolutionBackwardFilterAlgorithm_v7);
    RTP_DNN_FN(ConvolutionForward);
    RTP_DNN_FN(ConvolutionBackwardData);
    RTP_DNN_FN(ConvolutionBackwardFilter);
} rtp_dnn_fns;
#undef RTP_DNN_FN

/* Sets *out to the process-wide table (borrowed, immutable, lives until exit), loading
 * libcudnn on the first call (thread-safe; later calls only return the result). When
 * the library cannot be loaded or lacks an entry point: *out = NULL and RT_ENODEV
 * naming the library and the reason (the same answer on every call). */
rt_status rtp_dnn_load(const rtp_dnn_fns **out, rt_error *err);

#endif
