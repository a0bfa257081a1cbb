/* cuda_blas_dl.c - cuBLAS loaded when a CUDA backend opens, not when the process starts.
 *
 * Linking libcublas makes EVERY process that links the runtime (the kernel, `kiln
 * run`, each test) map and relocate cublasLt at start-up: measured ~210 MB of RSS and
 * 0.2 s before main, on machines that may never use a GPU. dlopen defers that to the
 * first rt_backend_open("cuda"/"auto") that finds a device. The library is never
 * dlclose'd (cuBLAS is not designed to be unloaded while the CUDA context lives); a
 * second open gets the same library back from the loader. No global state here: each
 * backend keeps its own copy of the entry points (rtp_cuda.blasf).
 * The mock device (tests/gpu/mock) provides its own rtp_blas_load instead of this file.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "cuda_internal.h"

#define STR_(x) #x
#define STR(x) STR_(x)

rt_status rtp_blas_load(rtp_blas_fns *out, rt_error *err)
{
    /* the major version the backend was compiled against (cublas_api.h) */
    const char *names[] = {"libcublas.so." STR(CUBLAS_VER_MAJOR), "libcublas.so"};
    void *h = NULL;
    for (int i = 0; i < 2 && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return RT_ERR(err, RT_ENODEV, "cannot load cuBLAS (%s): %s ---> HINT: install the "
                      "CUDA %d cuBLAS library or use --device cpu", names[0],
                      why ? why : "not found", CUBLAS_VER_MAJOR);
    }
    struct {
        const char *name;
        void **slot;
    } syms[] = {
        {"cublasCreate_v2", (void **)&out->create},
        {"cublasDestroy_v2", (void **)&out->destroy},
        {"cublasSetStream_v2", (void **)&out->set_stream},
        {"cublasSetMathMode", (void **)&out->set_math_mode},
        {"cublasSgemm_v2", (void **)&out->sgemm},
        {"cublasGemmEx", (void **)&out->gemm_ex},
        {"cublasGetStatusString", (void **)&out->status_string},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (!*syms[i].slot)
            return RT_ERR(err, RT_ENODEV, "cuBLAS (%s) lacks %s: a different CUDA version "
                          "than the one Kiln was built with (%d)?", names[0], syms[i].name,
                          CUBLAS_VER_MAJOR);
    }
    return RT_OK;
}
