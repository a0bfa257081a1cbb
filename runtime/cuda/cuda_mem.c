/* cuda_mem.c - device memory, copies and the simple whole-tensor ops of the CUDA backend.
 *
 * Only this file (and open/close) calls cudaMalloc/cudaFree.
 * Out of device memory is a user error (RT_EDEVICE) whose message says how much was
 * asked for and how much was free, with a hint; the failed call is cleared, so the
 * backend stays usable. upload copies on the backend's stream; from pageable memory the
 * CUDA runtime stages the bytes before returning, from page-locked memory upload waits
 * for the copy, so either way the caller may reuse its buffer at once. download
 * synchronises the stream, so the host sees every earlier op's result.
 */
#include <string.h>

#include "cuda_internal.h"

#define MIB (1024.0 * 1024.0)

rt_status rtp_cuda_oom(rt_backend *b, size_t asked, const char *what, rt_error *err)
{
    rtp_cuda *c = rtp_cuda_of(b);
    size_t fr = 0, total = 0;
    (void)cudaGetLastError();
    if (cudaMemGetInfo(&fr, &total) != cudaSuccess) (void)cudaGetLastError();
    return RT_ERR(err, RT_EDEVICE,
                  "out of device memory on cuda:%d (%s): %s asked for %.1f "
                  "MiB, %.1f MiB free of %.1f MiB ---> HINT: reduce --batch or the model "
                  "size, or free other models",
                  c->device, c->name, what, (double)asked / MIB, (double)fr / MIB,
                  (double)total / MIB);
}

rt_status rtp_cuda_alloc(rt_backend *b, void **ptr, size_t bytes, rt_error *err)
{
    *ptr = NULL;
    RTP_ENTER(b);
    size_t n = (bytes + 255) / 256 * 256;
    if (n == 0) n = 256;
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, n);
    if (e == cudaErrorMemoryAllocation) return rtp_cuda_oom(b, n, "an allocation", err);
    RT_CUDA_TRY(b, err, e);
    e = cudaMemsetAsync(p, 0, n, rtp_cuda_of(b)->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(rtp_cuda_of(b)->stream);
    if (e != cudaSuccess) {
        (void)cudaFree(p);
        return rtp_cuda_fail(b, e, "cudaMemsetAsync (zero-fill)", __FILE__, __LINE__, err);
    }
    *ptr = p;
    return RT_OK;
}

void rtp_cuda_free(rt_backend *b, void *ptr)
{
    if (!ptr || !b || !b->impl) return;
    rtp_cuda *c = rtp_cuda_of(b);
    (void)cudaSetDevice(c->device);
    /* ops in flight may still read ptr */
    if (!b->lost) (void)cudaStreamSynchronize(c->stream);
    (void)cudaFree(ptr);
    (void)cudaGetLastError();
    c->gen++; /* a recorded graph may name it (cuda_graph.c) */
}

/* Grows the workspace. The old one stays until the new one exists: the new one is
 * allocated beside it (and, with keep, the old contents copied over), or, when that does
 * not fit and keep is 0, in its place; if even that fails the old size is allocated
 * again, so a failed reservation leaves the backend with a workspace as large as before. */
rt_status rtp_cuda_grow_workspace(rt_backend *b, size_t bytes, int keep, rt_error *err)
{
    RTP_ENTER(b);
    rtp_cuda *c = rtp_cuda_of(b);
    if (bytes <= c->ws_bytes) return RT_OK;
    void *p = NULL;
    RT_CUDA_TRY(b, err, cudaStreamSynchronize(c->stream));
    size_t n = (bytes + 255) / 256 * 256;
    cudaError_t e = cudaMalloc(&p, n);
    if (e == cudaErrorMemoryAllocation && c->ws && !keep) {
        (void)cudaGetLastError();
        (void)cudaFree(c->ws); /* the old one may be most of what is free */
        c->ws = NULL;
        c->gen++;
        e = cudaMalloc(&p, n);
        if (e != cudaSuccess) {
            rt_status s = e == cudaErrorMemoryAllocation
                              ? rtp_cuda_oom(b, n, "the workspace", err)
                              : rtp_cuda_fail(b, e, "cudaMalloc", __FILE__, __LINE__, err);
            if (cudaMalloc(&c->ws, c->ws_bytes) != cudaSuccess) { /* put the old size back */
                (void)cudaGetLastError();
                c->ws = NULL;
                c->ws_bytes = 0;
            }
            return s;
        }
    } else if (e == cudaErrorMemoryAllocation) {
        return rtp_cuda_oom(b, n, "the workspace", err);
    }
    RT_CUDA_TRY(b, err, e);
    if (keep && c->ws && c->ws_bytes) {
        e = cudaMemcpyAsync(p, c->ws, c->ws_bytes, cudaMemcpyDeviceToDevice, c->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(c->stream);
        if (e != cudaSuccess) {
            (void)cudaFree(p);
            return rtp_cuda_fail(b, e, "cudaMemcpyAsync (workspace)", __FILE__, __LINE__, err);
        }
    }
    (void)cudaFree(c->ws);
    c->ws = p;
    c->ws_bytes = n;
    c->gen++;
    return RT_OK;
}

rt_status rtp_cuda_reserve_workspace(rt_backend *b, size_t bytes, rt_error *err)
{
    return rtp_cuda_grow_workspace(b, bytes, 0, err);
}

void *rtp_cuda_scratch(rt_backend *b, size_t bytes, rt_error *err)
{
    rtp_cuda *c = rtp_cuda_of(b);
    if (bytes > c->ws_bytes) {
        RT_ERR(err, RT_EINVAL,
               "CUDA workspace too small (%zu bytes reserved, %zu needed): "
               "the model did not reserve it (precision changed after attach?)",
               c->ws_bytes, bytes);
        return NULL;
    }
    return c->ws;
}

rt_status rtp_cuda_upload(rt_backend *b, rt_tensor *dst, const void *src, size_t bytes,
                          rt_error *err)
{
    RTP_ENTER(b);
    if (bytes == 0) return RT_OK;
    rtp_cuda *c = rtp_cuda_of(b);
    RT_CUDA_TRY(b, err, cudaMemcpyAsync(dst->data, src, bytes, cudaMemcpyHostToDevice, c->stream));
    /* from page-locked memory the copy is truly asynchronous: wait, so the caller may
     * reuse its buffer as with pageable memory */
    struct cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, src) != cudaSuccess) (void)cudaGetLastError();
    else if (at.type == cudaMemoryTypeHost) RT_CUDA_TRY(b, err, cudaStreamSynchronize(c->stream));
    return RT_OK;
}

rt_status rtp_cuda_download(rt_backend *b, void *dst, const rt_tensor *src, size_t bytes,
                            rt_error *err)
{
    RTP_ENTER(b);
    rtp_cuda *c = rtp_cuda_of(b);
    if (bytes)
        RT_CUDA_TRY(b, err,
                    cudaMemcpyAsync(dst, src->data, bytes, cudaMemcpyDeviceToHost, c->stream));
    RT_CUDA_TRY(b, err, cudaStreamSynchronize(c->stream));
    return RT_OK;
}

rt_status rtp_cuda_sync(rt_backend *b, rt_error *err)
{
    RTP_ENTER(b);
    RT_CUDA_TRY(b, err, cudaStreamSynchronize(rtp_cuda_of(b)->stream));
    return RT_OK;
}

rt_status rtp_cuda_fill(rt_backend *b, rt_tensor *dst, float v, rt_error *err)
{
    RTP_ENTER(b);
    RT_CUDA_TRY(b, err, rtp_k_fill(rtp_cuda_of(b)->stream, dst->data, rt_tensor_numel(dst), v));
    return RT_OK;
}

rt_status rtp_cuda_copy(rt_backend *b, rt_tensor *dst, const rt_tensor *src, rt_error *err)
{
    RTP_ENTER(b);
    if (dst->data == src->data) return RT_OK;
    RT_CUDA_TRY(b, err,
                cudaMemcpyAsync(dst->data, src->data, rt_tensor_bytes(src),
                                cudaMemcpyDeviceToDevice, rtp_cuda_of(b)->stream));
    return RT_OK;
}
