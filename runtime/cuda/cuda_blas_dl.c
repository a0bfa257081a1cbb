/* cuda_blas_dl.c - cuBLAS loaded when a CUDA backend opens, not when the process starts.
 *
 * Linking libcublas makes EVERY process that links the runtime (the kernel, `kiln
 * run`, each test) map and relocate cublasLt at start-up, a large cost in memory and
 * time before main (bench/README.md) on machines that may never use a GPU. dlopen defers that to the
 * first rt_backend_open("cuda"/"auto") that finds a device. The library is never
 * dlclose'd (cuBLAS is not designed to be unloaded while the CUDA context lives); a
 * second open gets the same library back from the loader. No global state here: each
 * backend keeps its own copy of the entry points (rtp_cuda.blasf). Which file: the
 * libcublas of the build's major that the nvidia-cublas wheel (the kiln-kernel[cuda]
 * extra) put beside the kiln-kernel wheel, else the system's, else libcublas.so;
 * KILN_LIBCUBLAS names another file (a test hook).
 * The mock device (tests/gpu/mock) provides its own rtp_blas_load instead of this file.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../rt_dl.h"
#include "cuda_internal.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define CUBLAS_SONAME "libcublas.so." STR(CUBLAS_VER_MAJOR)

void rtp_cuda_wheel_dir(const char *pkg, int cuda_major, char *out, size_t n)
{
    int toolkit = strcmp(pkg, "cudnn") != 0 && strcmp(pkg, "nccl") != 0;
    if (cuda_major <= 12 || !toolkit) snprintf(out, n, "nvidia/%s/lib", pkg);
    else snprintf(out, n, "nvidia/cu%d/lib", cuda_major);
}

int rtp_cuda_lib_names(const char *pkg, const char *soname, const char *any, char wheel[PATH_MAX],
                       const char *names[3])
{
    char dir[64], rel[192];
    rtp_cuda_wheel_dir(pkg, CUDART_VERSION / 1000, dir, sizeof dir);
    snprintf(rel, sizeof rel, "%s/%s", dir, soname);
    int n = 0;
    if (rt_dl_site_file(rel, wheel, PATH_MAX)[0] && access(wheel, F_OK) == 0) names[n++] = wheel;
    names[n++] = soname;
    names[n++] = any;
    return n;
}

rt_status rtp_blas_load(rtp_blas_fns *out, rt_error *err)
{
    /* the major version the backend was compiled against (cublas_api.h): the
     * nvidia-cublas wheel's beside the kiln-kernel wheel (its RUNPATH finds libcublasLt
     * next to it), else the system's, else any */
    char wheel[PATH_MAX];
    const char *names[3];
    int n = rtp_cuda_lib_names("cublas", CUBLAS_SONAME, "libcublas.so", wheel, names);
    const rt_dl_sym syms[] = {
        {"cublasCreate_v2", (void **)&out->create},
        {"cublasDestroy_v2", (void **)&out->destroy},
        {"cublasSetStream_v2", (void **)&out->set_stream},
        {"cublasSetMathMode", (void **)&out->set_math_mode},
        {"cublasSgemm_v2", (void **)&out->sgemm},
        {"cublasGemmEx", (void **)&out->gemm_ex},
        {"cublasSgemmStridedBatched", (void **)&out->sgemm_sb},
        {"cublasGemmStridedBatchedEx", (void **)&out->gemm_sb_ex},
        {"cublasGetStatusString", (void **)&out->status_string},
    };
    rt_dl_result r;
    if (rt_dl_load("KILN_LIBCUBLAS", names, n, syms, sizeof syms / sizeof syms[0], &r))
        return RT_OK;
    if (r.handle || strstr(r.why, " lacks "))
        return RT_ERR(err, RT_ENODEV,
                      "cuBLAS (%s): %s: a different CUDA version than the "
                      "one Kiln was built with (%d)?",
                      r.file, r.why, CUBLAS_VER_MAJOR);
    return RT_ERR(err, RT_ENODEV,
                  "cannot load cuBLAS (%s): %s ---> HINT: install the CUDA "
                  "%d cuBLAS library (for the kiln-kernel wheel: pip install "
                  "'kiln-kernel[cuda]'), or use --device cpu",
                  r.file, r.why, CUBLAS_VER_MAJOR);
}
