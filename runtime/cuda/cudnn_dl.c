/* cudnn_dl.c - cuDNN loaded when the first CUDA backend opens, not when the process
 * starts.
 *
 * Linked, libcudnn (and the libz it pulls in) was mapped and relocated by every Kiln
 * process, the kernel on CPU-only machines included (bench/README.md has the cost). The
 * build now takes cuDNN's headers only, and this file dlopens the library of the major
 * version Kiln was compiled against at the first rtp_cudnn_create (pthread_once), then
 * fills one immutable table with the entry points cudnn_conv.c calls (cudnn_dl.h), after
 * checking its cuDNN major and the CUDA major it was built for (rtp_dnn_compatible). The
 * library is never dlclose'd (cuDNN handles live as long as the backend; a second
 * backend gets the same table). Which file: the libcudnn of that major that the
 * nvidia-cudnn wheel (the kiln-kernel[cuda] extra) put beside the kiln-kernel wheel,
 * else the system's, else libcudnn.so; KILN_LIBCUDNN names another file (a test hook).
 * When loading fails, rtp_cudnn_create falls back to im2col + cuBLAS, as a build
 * without cuDNN does (cudnn_none.c), and says so once on stderr.
 * The mock build fills the table from tests/gpu/mock/mock_cudnn.c instead of this file.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../rt_dl.h"
#include "cuda_internal.h"
#include "cudnn_dl.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define CUDNN_SONAME "libcudnn.so." STR(CUDNN_MAJOR)

static rtp_dnn_fns fns;
static int loaded;     /* every entry of fns is set */
static char why[400];  /* set when not loaded */
static char name[256]; /* the file tried first */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load_once(void)
{
    /* the nvidia-cudnn wheel's beside the kiln-kernel wheel (its RUNPATH finds its
     * sub-libraries and the nvidia-cublas wheel), else the system's, else any */
    char wheel[PATH_MAX];
    const char *names[3];
    int n = rtp_cuda_lib_names("cudnn", CUDNN_SONAME, "libcudnn.so", wheel, names);
#define SYM(f)                      \
    {                               \
        "cudnn" #f, (void **)&fns.f \
    }
    const rt_dl_sym syms[] = {
        SYM(GetVersion),
        SYM(GetCudartVersion),
        SYM(GetErrorString),
        SYM(Create),
        SYM(Destroy),
        SYM(SetStream),
        SYM(CreateTensorDescriptor),
        SYM(DestroyTensorDescriptor),
        SYM(CreateFilterDescriptor),
        SYM(DestroyFilterDescriptor),
        SYM(CreateConvolutionDescriptor),
        SYM(DestroyConvolutionDescriptor),
        SYM(SetTensor4dDescriptor),
        SYM(SetFilter4dDescriptor),
        SYM(SetConvolution2dDescriptor),
        SYM(SetConvolutionMathType),
        SYM(SetConvolutionGroupCount),
        SYM(GetConvolution2dForwardOutputDim),
        SYM(GetConvolutionForwardAlgorithm_v7),
        SYM(GetConvolutionBackwardDataAlgorithm_v7),
        SYM(GetConvolutionBackwardFilterAlgorithm_v7),
        SYM(ConvolutionForward),
        SYM(ConvolutionBackwardData),
        SYM(ConvolutionBackwardFilter),
    };
#undef SYM
    rt_dl_result r;
    int ok = rt_dl_load("KILN_LIBCUDNN", names, n, syms, sizeof syms / sizeof syms[0], &r);
    snprintf(name, sizeof name, "%s", r.file);
    if (!ok) {
        snprintf(why, sizeof why, "%s", r.why);
        return;
    }
    /* the unversioned fallback name may be another major (its ABI is not ours), and
     * libcudnn.so.9 may be the CUDA 12 build under a CUDA 13 Kiln or the other way round */
    if (!rtp_dnn_compatible(fns.GetVersion(), fns.GetCudartVersion(), CUDNN_MAJOR,
                            CUDART_VERSION / 1000, why, sizeof why))
        return;
    loaded = 1;
}

rt_status rtp_dnn_load(const rtp_dnn_fns **out, rt_error *err)
{
    pthread_once(&once, load_once);
    *out = loaded ? &fns : NULL;
    if (loaded) return RT_OK;
    return RT_ERR(err, RT_ENODEV,
                  "cannot load cuDNN (%s): %s ---> HINT: install cuDNN %d "
                  "for CUDA %d (e.g. apt install libcudnn%d-cuda-%d; for the kiln-kernel "
                  "wheel: pip install 'kiln-kernel[cuda]')",
                  name, why, CUDNN_MAJOR, CUDART_VERSION / 1000, CUDNN_MAJOR,
                  CUDART_VERSION / 1000);
}
