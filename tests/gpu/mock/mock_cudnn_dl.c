/* mock_cudnn_dl.c - rtp_dnn_load for the mock cuDNN build: the table cudnn_conv.c
 * calls through points at the stand-in's functions (mock_cudnn.c) instead of a
 * dlopen'ed libcudnn (runtime/cuda/cudnn_dl.c, which these builds leave out). */
#include "../../../runtime/cuda/cudnn_dl.h"

static const rtp_dnn_fns mock_fns = {
    .GetVersion = cudnnGetVersion,
    .GetErrorString = cudnnGetErrorString,
    .Create = cudnnCreate,
    .Destroy = cudnnDestroy,
    .SetStream = cudnnSetStream,
    .CreateTensorDescriptor = cudnnCreateTensorDescriptor,
    .DestroyTensorDescriptor = cudnnDestroyTensorDescriptor,
    .CreateFilterDescriptor = cudnnCreateFilterDescriptor,
    .DestroyFilterDescriptor = cudnnDestroyFilterDescriptor,
    .CreateConvolutionDescriptor = cudnnCreateConvolutionDescriptor,
    .DestroyConvolutionDescriptor = cudnnDestroyConvolutionDescriptor,
    .SetTensor4dDescriptor = cudnnSetTensor4dDescriptor,
    .SetFilter4dDescriptor = cudnnSetFilter4dDescriptor,
    .SetConvolution2dDescriptor = cudnnSetConvolution2dDescriptor,
    .SetConvolutionMathType = cudnnSetConvolutionMathType,
    .GetConvolution2dForwardOutputDim = cudnnGetConvolution2dForwardOutputDim,
    .GetConvolutionForwardAlgorithm_v7 = cudnnGetConvolutionForwardAlgorithm_v7,
    .GetConvolutionBackwardDataAlgorithm_v7 = cudnnGetConvolutionBackwardDataAlgorithm_v7,
    .GetConvolutionBackwardFilterAlgorithm_v7 = cudnnGetConvolutionBackwardFilterAlgorithm_v7,
    .ConvolutionForward = cudnnConvolutionForward,
    .ConvolutionBackwardData = cudnnConvolutionBackwardData,
    .ConvolutionBackwardFilter = cudnnConvolutionBackwardFilter,
};

rt_status rtp_dnn_load(const rtp_dnn_fns **out, rt_error *err)
{
    (void)err;
    *out = &mock_fns;
    return RT_OK;
}
