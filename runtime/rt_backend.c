/* rt_backend.c - opening a backend by device name ("cpu", "cuda[:N]", "auto").
 *
 * The CUDA backend registers itself through rt_cuda_ops when it is compiled in:
 * runtime/cuda/meson.build defines KILN_HAVE_CUDA, read only here (the one place outside
 * runtime/cuda/ allowed a CUDA #ifdef). A strong reference, because a weak one does not
 * pull the backend's object out of its static library.
 */
#include "rt_backend.h"
#include "rt_device.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#ifdef KILN_HAVE_CUDA
extern const rt_backend_ops rt_cuda_ops;
#define RT_CUDA_OPS (&rt_cuda_ops)
#else
#define RT_CUDA_OPS ((const rt_backend_ops *)NULL)
#endif

static rt_status open_with(rt_backend *b, const rt_backend_ops *ops, int device, int threads,
                           rt_error *err)
{
    memset(b, 0, sizeof *b);
    b->ops = ops;
    b->device = device;
    b->threads = threads;
    rt_status s = ops->open(b, device, err);
    if (s != RT_OK) memset(b, 0, sizeof *b);
    return s;
}

rt_status rt_backend_open(rt_backend *b, const char *device, int threads, rt_error *err)
{
    const rt_backend_ops *cuda = RT_CUDA_OPS;
    memset(b, 0, sizeof *b); /* zeroed on every error path, as rt_backend.h says */
    if (!device || !strcmp(device, "cpu")) return open_with(b, &rt_cpu_ops, 0, threads, err);
    if (!strcmp(device, "auto")) {
        rt_error why = {0};
        if (cuda && open_with(b, cuda, 0, threads, &why) == RT_OK) return RT_OK;
        /* a GPU that is there but cannot be used (driver too old, architecture not built)
         * is worth a line; no GPU at all is the CPU machine's normal case */
        if (cuda && strncmp(why.msg, "no CUDA device", 14))
            fprintf(stderr, "kiln: --device auto uses the CPU: %s\n", why.msg);
        return open_with(b, &rt_cpu_ops, 0, threads, err);
    }
    if (!strncmp(device, "cuda", 4)) {
        int idx = 0;
        if (device[4] == ':') {
            char *end;
            long v = strtol(device + 5, &end, 10);
            if (*end || end == device + 5 || v < 0 || v > 255)
                return RT_ERR(err, RT_EINVAL, "bad device '%s' (expected cuda:N)", device);
            idx = (int)v;
        } else if (device[4]) {
            return RT_ERR(err, RT_EINVAL, "bad device '%s' (expected cpu, cuda, cuda:N, auto)",
                          device);
        }
        if (!cuda)
            return RT_ERR(err, RT_ENODEV,
                          "this Kiln was built without CUDA ---> HINT: use "
                          "--device cpu, or rebuild with -Dcuda=enabled");
        return open_with(b, cuda, idx, threads, err);
    }
    return RT_ERR(err, RT_EINVAL, "unknown device '%s' (expected cpu, cuda, cuda:N, auto)", device);
}

void rt_backend_close(rt_backend *b)
{
    if (!b) return;
    if (b->ops && b->ops->close) b->ops->close(b);
    memset(b, 0, sizeof *b);
}

rt_status rt_backend_set_precision(rt_backend *b, rt_precision p, rt_error *err)
{
    if (b && b->ops == &rt_cpu_ops) return rt_cpu_set_precision(b, p, err);
    return rt_cuda_set_precision(b, p, err);
}

rt_precision rt_backend_get_precision(const rt_backend *b)
{
    if (b && b->ops == &rt_cpu_ops) return rt_cpu_get_precision(b);
    return rt_cuda_get_precision(b);
}
