/* mock_cudnn_dl.c - rtp_dnn_load for the mock cuDNN build: the table cudnn_conv.c
 * calls through points at the stand-in's functions (mock_cudnn.c) instead of a
 * dlopen'ed libcudnn (runtime/cuda/cudnn_dl.c, which these builds leave out), after
 * the same version check. */
#include "../../../runtime/cuda/cudnn_dl.h"

static const rtp_dnn_fns mock_fns = {
    .GetVersion = cudnnGetVersion,
    .GetCudartVersion = cudnnGetCudartVersion,
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
    .SetConvolutionGroupCount = cudnnSetConvolutionGroupCount,
    .GetConvolution2dForwardOutputDim = cudnnGetConvolution2dForwardOutputDim,
    .GetConvolutionForwardAlgorithm_v7 = cudnnGetConvolutionForwardAlgorithm_v7,
    .GetConvolutionBackwardDataAlgorithm_v7 = cudnnGetConvolutionBackwardDataAlgorithm_v7,
    .GetConvolutionBackwardFilterAlgorithm_v7 = cudnnGetConvolutionBackwardFilterAlgorithm_v7,
    .ConvolutionForward = cudnnConvolutionForward,
    .ConvolutionBackwardData = cudnnConvolutionBackwardData,
    .ConvolutionBackwardFilter = cudnnConvolutionBackwardFilter,
};

/* As cudnn_dl.c after a dlopen: the same compatibility check, on the stand-in's
 * answers (KILN_MOCK_CUDNN=version=V,cudart=V set them), at every call. */
rt_status rtp_dnn_load(const rtp_dnn_fns **out, rt_error *err)
{
    char why[200];
    *out = NULL;
    if (!rtp_dnn_compatible(cudnnGetVersion(), cudnnGetCudartVersion(), CUDNN_MAJOR,
                            CUDART_VERSION / 1000, why, sizeof why))
        return RT_ERR(err, RT_ENODEV,
                      "cannot load cuDNN (mock cuDNN): %s ---> HINT: install "
                      "cuDNN %d for CUDA %d",
                      why, CUDNN_MAJOR, CUDART_VERSION / 1000);
    *out = &mock_fns;
    return RT_OK;
}
