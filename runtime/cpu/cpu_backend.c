/* cpu_backend.c - the CPU backend: lifecycle, memory, copies, and the ops table.
 *
 * "Backend memory" is plain host memory (64-byte aligned for AVX-512), so upload and
 * download are memcpy. Threads: OpenMP loops in the op files use b->threads, and
 * OpenBLAS is told the same count at open (its OpenMP build runs single-threaded when
 * called inside our own parallel regions, so per-image GEMMs do not oversubscribe).
 * OpenBLAS itself is dlopen'ed by the first open (cpu_blas_dl.c), not linked.
 * The workspace is the only scratch: reserved when a model is built, never inside a step.
 */
#include <cblas.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

static rt_status cpu_open(rt_backend *b, int device, rt_error *err)
{
    if (device != 0) return RT_ERR(err, RT_ENODEV, "cpu:%d does not exist (use cpu)", device);
    RT_TRY(rtp_cpu_blas_load(err));
    rtp_cpu *c = calloc(1, sizeof *c);
    if (!c) return RT_ERR(err, RT_ENOMEM, "out of memory opening the CPU backend");
    rt_status st = rtp_cpu_convk_pick(&c->convk, err);
    if (st != RT_OK) {
        free(c);
        return st;
    }
    b->impl = c;
    if (b->threads <= 0) b->threads = omp_get_num_procs();
    openblas_set_num_threads(b->threads);
    return RT_OK;
}

static void cpu_close(rt_backend *b)
{
    rtp_cpu *c = b ? b->impl : NULL;
    if (!c) return;
    free(c->ws);
    free(c);
    b->impl = NULL;
}

static rt_status cpu_alloc(rt_backend *b, void **ptr, size_t bytes, rt_error *err)
{
    /* 256 bytes, as cudaMalloc: rt_model's tensors sit at multiples of 64 floats */
    size_t n = (bytes + 255) / 256 * 256;
    if (n == 0) n = 256;
    void *p = aligned_alloc(256, n);
    if (!p) {
        *ptr = NULL;
        return RT_ERR(err, RT_ENOMEM,
                      "out of memory allocating %zu bytes ---> HINT: "
                      "reduce --batch or the model size",
                      bytes);
    }
    memset(p, 0, n);
    *ptr = p;
    return RT_OK;
}

static void cpu_free(rt_backend *b, void *ptr) { free(ptr); }

static rt_status cpu_reserve_workspace(rt_backend *b, size_t bytes, rt_error *err)
{
    rtp_cpu *c = b->impl;
    if (bytes <= c->ws_bytes) return RT_OK;
    void *p = NULL;
    RT_TRY(cpu_alloc(b, &p, bytes, err));
    free(c->ws);
    c->ws = p;
    c->ws_bytes = bytes;
    return RT_OK;
}

float *rtp_cpu_scratch(rt_backend *b, size_t bytes, rt_error *err)
{
    rtp_cpu *c = b->impl;
    if (bytes > c->ws_bytes) {
        RT_ERR(err, RT_EINVAL,
               "CPU workspace too small (%zu bytes reserved, %zu needed): "
               "the model did not reserve it",
               c->ws_bytes, bytes);
        return NULL;
    }
    return c->ws;
}

static rt_status cpu_upload(rt_backend *b, rt_tensor *dst, const void *src, size_t bytes,
                            rt_error *err)
{
    memcpy(dst->data, src, bytes);
    return RT_OK;
}

static rt_status cpu_download(rt_backend *b, void *dst, const rt_tensor *src, size_t bytes,
                              rt_error *err)
{
    memcpy(dst, src->data, bytes);
    return RT_OK;
}

static rt_status cpu_sync(rt_backend *b, rt_error *err) { return RT_OK; }

static rt_status cpu_fill(rt_backend *b, rt_tensor *dst, float v, rt_error *err)
{
    float *p = dst->data;
    size_t n = rt_tensor_numel(dst);
    if (v == 0.0f) {
        memset(p, 0, n * sizeof *p);
        return RT_OK;
    }
    for (size_t i = 0; i < n; i++) p[i] = v;
    return RT_OK;
}

static rt_status cpu_copy(rt_backend *b, rt_tensor *dst, const rt_tensor *src, rt_error *err)
{
    size_t n = rt_tensor_numel(src);
    float *y = dst->data;
    const float *x = src->data;
    uintptr_t a = (uintptr_t)y, c = (uintptr_t)x, len = n * sizeof *y;
    if (a < c + len && c < a + len) { /* overlapping: memmove, one thread */
        memmove(y, x, len);
        return RT_OK;
    }
#pragma omp parallel num_threads(rtp_cpu_team(b, n))
    {
        size_t lo, hi;
        rtp_cpu_chunk(n, &lo, &hi);
        memcpy(y + lo, x + lo, (hi - lo) * sizeof *y);
    }
    return RT_OK;
}

/* z = (a + x) * k, k = a + x > 0 ? 1 : lo: lo = 1 is the plain sum, lo = 0 the sum
 * with cpu_act.c's relu (add_relu) */
RTP_SPAN static void add_span(float *z, const float *a, const float *x, size_t n, float lo)
{
    for (size_t i = 0; i < n; i++) {
        float v = a[i] + x[i];
        z[i] = v * (v > 0.0f ? 1.0f : lo);
    }
}

static void add_lo(rt_backend *b, rt_tensor *dst, const rt_tensor *a, const rt_tensor *x, float lo)
{
    size_t n = rt_tensor_numel(dst);
    float *y = dst->data;
    const float *p = a->data, *q = x->data;
#pragma omp parallel num_threads(rtp_cpu_team(b, n))
    {
        size_t lo_i, hi_i;
        rtp_cpu_chunk(n, &lo_i, &hi_i);
        add_span(y + lo_i, p + lo_i, q + lo_i, hi_i - lo_i, lo);
    }
}

static rt_status cpu_add(rt_backend *b, rt_tensor *dst, const rt_tensor *a, const rt_tensor *x,
                         rt_error *err)
{
    add_lo(b, dst, a, x, 1.0f);
    return RT_OK;
}

static rt_status cpu_add_relu(rt_backend *b, rt_tensor *dst, const rt_tensor *a, const rt_tensor *x,
                              rt_error *err)
{
    add_lo(b, dst, a, x, 0.0f);
    return RT_OK;
}

const rt_backend_ops rt_cpu_ops = {
    .name = "cpu",
    .open = cpu_open,
    .close = cpu_close,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .reserve_workspace = cpu_reserve_workspace,
    .conv2d_workspace = rtp_cpu_conv2d_workspace,
    .upload = cpu_upload,
    .download = cpu_download,
    .sync = cpu_sync,
    .fill = cpu_fill,
    .copy = cpu_copy,
    .add = cpu_add,
    .add_relu = cpu_add_relu,
    .conv2d_fwd = rtp_cpu_conv2d_fwd,
    .conv2d_fwd_moments = rtp_cpu_conv2d_fwd_moments,
    .conv2d_bwd_data = rtp_cpu_conv2d_bwd_data,
    .conv2d_bwd_filter = rtp_cpu_conv2d_bwd_filter,
    .maxpool_fwd = rtp_cpu_maxpool_fwd,
    .maxpool_bwd = rtp_cpu_maxpool_bwd,
    .avgpool_fwd = rtp_cpu_avgpool_fwd,
    .avgpool_bwd = rtp_cpu_avgpool_bwd,
    .relu_fwd = rtp_cpu_relu_fwd,
    .relu_bwd = rtp_cpu_relu_bwd,
    .act_fwd = rtp_cpu_act_fwd,
    .act_bwd = rtp_cpu_act_bwd,
    .bn_fwd_train = rtp_cpu_bn_fwd_train,
    .bn_fwd_train_moments = rtp_cpu_bn_fwd_train_moments,
    .bn_fwd_eval = rtp_cpu_bn_fwd_eval,
    .bn_bwd = rtp_cpu_bn_bwd,
    .bn_relu_bwd = rtp_cpu_bn_relu_bwd,
    .bn_add_fwd_train = rtp_cpu_bn_add_fwd_train,
    .bn_add_bwd = rtp_cpu_bn_add_bwd,
    .dropout_fwd = rtp_cpu_dropout_fwd,
    .dropout_bwd = rtp_cpu_dropout_bwd,
    .dense_workspace = rtp_cpu_dense_workspace,
    .dense_fwd = rtp_cpu_dense_fwd,
    .dense_bwd_data = rtp_cpu_dense_bwd_data,
    .dense_bwd_filter = rtp_cpu_dense_bwd_filter,
    .xent_fwd = rtp_cpu_xent_fwd,
    .xent_bwd = rtp_cpu_xent_bwd,
    .adam_update = rtp_cpu_adam_update,
    .sgd_update = rtp_cpu_sgd_update,
    .clip_grad = rtp_cpu_clip_grad,
    .gather_batch = rtp_cpu_gather_batch,
    .bytes_to_f32 = rtp_cpu_bytes_to_f32,
    .xent_stats = rtp_cpu_xent_stats,
    .amp_scale = rtp_cpu_amp_scale,
    .amp_unscale = rtp_cpu_amp_unscale,
    .amp_adam_update = rtp_cpu_amp_adam_update,
    .amp_sgd_update = rtp_cpu_amp_sgd_update,
};
