/* cuda_device.c - the device list for %device, what this build has (`kiln --version`),
 * whether a GPU and its driver can run it (messages naming both and the fix), the
 * backend's compute precision and memory information (rt_device.h).
 *
 * Listing never fails for lack of devices: zero devices (no driver, no GPU) is an empty
 * list with the CUDA runtime's reason, so %device can always print something useful.
 * It creates no CUDA context except, on a single-device machine, the one needed to
 * read free memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#ifndef KILN_CUDA_ARCHS
#error "KILN_CUDA_ARCHS (the -Dgpu_archs list) must come from runtime/cuda/meson.build"
#endif

const char *rt_cuda_build_info(void)
{
    static char line[256];
    char ptx[16] = "";
    const char *last = strrchr(" " KILN_CUDA_ARCHS, ' ') + 1;
    snprintf(ptx, sizeof ptx, "%s", last);
    char sass[160] = "";
    size_t o = 0;
    for (const char *p = KILN_CUDA_ARCHS; *p && o < sizeof sass - 8;) {
        int n = (int)strcspn(p, " ");
        o += (size_t)snprintf(sass + o, sizeof sass - o, "%ssm_%.*s", o ? " " : "", n, p);
        p += n;
        while (*p == ' ') p++;
    }
    snprintf(line, sizeof line,
             "CUDA: toolkit %d.%d, kernels for %s (+ compute_%s PTX); "
             "cuBLAS and cuDNN %s loaded at first use",
             CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, sass, ptx, rtp_cudnn_built());
    return line;
}

int rtp_cuda_arch_covered(int major, int minor)
{
    int cc = major * 10 + minor, best = 0;
    for (const char *p = KILN_CUDA_ARCHS; *p;) {
        char *end;
        long a = strtol(p, &end, 10);
        if (end == p) break;
        /* a cubin runs on its major at the same or a higher minor */
        if (a / 10 == major && a % 10 <= minor) return 1;
        if (a > best) best = (int)a;
        p = end;
    }
    return best <= cc; /* the last architecture's PTX is compiled for newer GPUs */
}

/* The minimum Linux driver of each CUDA major (CUDA's release notes, "minor version
 * compatibility"). */
static const char *min_driver(int cuda_major)
{
    return cuda_major <= 11   ? "R450 (450.80.02)"
           : cuda_major == 12 ? "R525 (525.60.13)"
                              : "R580 (580.65.06)";
}

int rtp_cuda_driver_msg(char *buf, size_t n)
{
    int dv = 0;
    if (cudaDriverGetVersion(&dv) != cudaSuccess) (void)cudaGetLastError();
    if (dv <= 0) { /* no driver at all (no libcuda.so.1): nothing to upgrade */
        snprintf(buf, n,
                 "no NVIDIA driver found (libcuda.so.1 is not loaded on "
                 "this machine) ---> HINT: use --device cpu (or auto)");
        return 1;
    }
    snprintf(buf, n,
             "the NVIDIA driver is too old for this Kiln: the driver supports CUDA "
             "%d.%d, Kiln's CUDA runtime is %d.%d and needs driver %s or newer ---> HINT: "
             "update the NVIDIA driver, or use --device cpu",
             dv / 1000, dv % 1000 / 10, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10,
             min_driver(CUDART_VERSION / 1000));
    return 1;
}

int rtp_cuda_compat_msg(cudaError_t e, char *buf, size_t n)
{
    if (e == cudaErrorSystemDriverMismatch)
        snprintf(buf, n,
                 "the CUDA driver library does not match the NVIDIA kernel driver "
                 "(cudaErrorSystemDriverMismatch): a forward-compatibility package's libcuda.so "
                 "(cuda-compat) is on the loader path over a driver it does not fit ---> HINT: "
                 "take the cuda-compat folder out of LD_LIBRARY_PATH (or ld.so.conf), or "
                 "install the driver that matches it; or use --device cpu");
    else if (e == cudaErrorCompatNotSupportedOnDevice)
        snprintf(buf, n,
                 "this GPU cannot use CUDA forward compatibility "
                 "(cudaErrorCompatNotSupportedOnDevice): a cuda-compat libcuda.so is on the "
                 "loader path, and forward compatibility runs on data-center GPUs only ---> "
                 "HINT: take cuda-compat out of LD_LIBRARY_PATH and update the NVIDIA driver "
                 "to %s or newer; or use --device cpu",
                 min_driver(CUDART_VERSION / 1000));
    else return 0;
    return 1;
}

void rtp_cuda_arch_msg(char *buf, size_t n, int device, const char *name, int major, int minor)
{
    snprintf(buf, n,
             "cuda:%d (%.80s) is compute capability %d.%d (sm_%d%d), and this Kiln's "
             "kernels are built for sm " KILN_CUDA_ARCHS " only ---> HINT: rebuild with "
             "-Dgpu_archs=%d%d (a CUDA toolkit that supports sm_%d%d), or use --device cpu",
             device, name, major, minor, major, minor, major, minor, major, minor);
}

rt_status rt_cuda_list_devices(rt_cuda_device_list *out, rt_error *err)
{
    memset(out, 0, sizeof *out);
    out->built = 1;
    if (cudaDriverGetVersion(&out->driver_version) != cudaSuccess) out->driver_version = 0;
    if (cudaRuntimeGetVersion(&out->runtime_version) != cudaSuccess) out->runtime_version = 0;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if ((e == cudaErrorInsufficientDriver && rtp_cuda_driver_msg(out->why, sizeof out->why)) ||
        rtp_cuda_compat_msg(e, out->why, sizeof out->why)) {
        (void)cudaGetLastError();
        return RT_OK;
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(out->why, sizeof out->why, "cudaGetDeviceCount: %s (%s)", cudaGetErrorString(e),
                 cudaGetErrorName(e));
        return RT_OK;
    }
    if (count == 0) {
        snprintf(out->why, sizeof out->why, "cudaGetDeviceCount: 0 devices");
        return RT_OK;
    }
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
    for (int i = 0; i < count && out->count < RT_CUDA_MAX_DEVICES; i++) {
        struct cudaDeviceProp p;
        rt_cuda_device_info *d = &out->dev[out->count];
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
            (void)cudaGetLastError();
            continue;
        }
        d->index = i;
        snprintf(d->name, sizeof d->name, "%s", p.name);
        d->mem_total = p.totalGlobalMem;
        d->cc_major = p.major;
        d->cc_minor = p.minor;
        d->multiprocessors = p.multiProcessorCount;
        d->bf16 = p.major >= 8;
        if (!rtp_cuda_arch_covered(p.major, p.minor))
            rtp_cuda_arch_msg(d->problem, sizeof d->problem, i, p.name, p.major, p.minor);
        size_t fr = 0, tot = 0;
        if (count > 1) {
            /* no context on every GPU of a shared box just to list them */
        } else if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&fr, &tot) == cudaSuccess) {
            d->mem_free = fr;
            d->mem_free_known = 1;
        } else {
            (void)cudaGetLastError();
        }
        out->count++;
    }
    if (prev >= 0) (void)cudaSetDevice(prev);
    (void)err;
    return RT_OK;
}

static rt_status need_cuda(rt_backend *b, rt_error *err)
{
    if (!b || b->ops != &rt_cuda_ops || !b->impl)
        return RT_ERR(err, RT_EINVAL, "not an open CUDA backend (device '%s')",
                      b && b->ops ? b->ops->name : "none");
    return RT_OK;
}

rt_status rt_cuda_set_precision(rt_backend *b, rt_precision p, rt_error *err)
{
    if (b && b->ops && b->ops != &rt_cuda_ops && p != RT_PREC_FP32)
        return RT_ERR(err, RT_EINVAL,
                      "--precision %s needs a CUDA device; the %s backend "
                      "computes in fp32 only ---> HINT: use --precision fp32 or --device cuda",
                      rt_precision_name(p), b->ops->name);
    if (b && b->ops && b->ops != &rt_cuda_ops) return RT_OK;
    RT_TRY(need_cuda(b, err));
    RTP_ENTER(b);
    rtp_cuda *c = rtp_cuda_of(b);
    if ((unsigned)p > RT_PREC_FP16) return RT_ERR(err, RT_EINVAL, "unknown precision %d", (int)p);
    if (p == RT_PREC_BF16 && c->cc_major < 8)
        return RT_ERR(err, RT_EINVAL,
                      "--precision bf16 needs compute capability 8.0 or newer; "
                      "cuda:%d (%s) is %d.%d ---> HINT: use --precision fp16",
                      c->device, c->name, c->cc_major, c->cc_minor);
    c->prec = p;
    return RT_OK;
}

rt_precision rt_cuda_get_precision(const rt_backend *b)
{
    if (!b || b->ops != &rt_cuda_ops || !b->impl) return RT_PREC_FP32;
    return ((const rtp_cuda *)b->impl)->prec;
}

rt_status rt_cuda_mem_info(rt_backend *b, size_t *free_bytes, size_t *total_bytes, rt_error *err)
{
    RT_TRY(need_cuda(b, err));
    RTP_ENTER(b);
    RT_CUDA_TRY(b, err, cudaMemGetInfo(free_bytes, total_bytes));
    return RT_OK;
}
