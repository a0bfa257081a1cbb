/* mock_kernels.cu - the launchers of runtime/cuda/cuda_kernels.h replayed on the host
 * for the mock device (mock_cuda.c), or recorded into a graph while a stream captures
 * (DEFER, mock_graph.h): each runs the kernel's per-element body
 * (cuda_elem.cuh) for every index, and the block reductions with the kernels' split
 * and tree. Every buffer a kernel touches is first checked to lie inside one mock
 * allocation; a kernel that would go out of bounds "faults" (a sticky
 * cudaErrorIllegalAddress), as it would on a GPU. Compiled by nvcc as host code.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_bytes.cuh"
#include "cuda_elem.cuh"

#include "mock_graph.h"

extern "C" int mock_in_device(const void *p, size_t n);
extern "C" void mock_fault(void);
extern "C" void mock_count_to16(size_t n); /* mock_stats.h */

/* While this thread captures a stream (mock_graph.h), a launcher records itself with its
 * arguments and returns: the graph's launches call it again, outside any capture, so it
 * runs then, on the memory as it is then (as a captured kernel node would). */
template <class F> static bool deferred(const F &f)
{
    if (!mock_capturing()) return false;
    mock_capture_call([](void *c) { return (*(F *)c)(); }, new F(f),
                      [](void *c) { delete (F *)c; });
    return true;
}
#define DEFER(call)                                               \
    do {                                                          \
        if (deferred([=]() { return call; })) return cudaSuccess; \
    } while (0)

static const int T = 256; /* RTP_THREADS */

/* All buffers valid (bytes each), else a fault. */
static bool ok(std::initializer_list<std::pair<const void *, size_t>> bufs)
{
    for (auto &b : bufs)
        if (b.second && !mock_in_device(b.first, b.second)) {
            mock_fault();
            return false;
        }
    return true;
}

#define F4(n) ((size_t)(n)*4)
#define CHECK(...)                                              \
    do {                                                        \
        if (!ok({__VA_ARGS__})) return cudaErrorIllegalAddress; \
    } while (0)

extern "C" cudaError_t rtp_k_fill(cudaStream_t s, float *p, size_t n, float v)
{
    DEFER(rtp_k_fill(s, p, n, v));
    CHECK({p, F4(n)});
    for (size_t i = 0; i < n; i++) p[i] = v;
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_relu_fwd(cudaStream_t s, float *y, const float *x, size_t n,
                                      float slope)
{
    DEFER(rtp_k_relu_fwd(s, y, x, n, slope));
    CHECK({y, F4(n)}, {x, F4(n)});
    for (size_t i = 0; i < n; i++) rtp_relu_fwd_at(i, y, x, slope);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_act_fwd(cudaStream_t s, float *y, const float *x, size_t n, int kind)
{
    CHECK({y, F4(n)}, {x, F4(n)});
    for (size_t i = 0; i < n; i++) rtp_act_fwd_at(i, y, x, kind);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_act_bwd(cudaStream_t s, float *dx, const float *dy, const float *x,
                                     const float *y, size_t n, int kind)
{
    CHECK({dx, F4(n)}, {dy, F4(n)}, {x, F4(n)}, {y, F4(n)});
    for (size_t i = 0; i < n; i++) rtp_act_bwd_at(i, dx, dy, x, y, kind);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_relu_bwd(cudaStream_t s, float *dx, const float *dy, const float *y,
                                      size_t n, float slope)
{
    DEFER(rtp_k_relu_bwd(s, dx, dy, y, n, slope));
    CHECK({dx, F4(n)}, {dy, F4(n)}, {y, F4(n)});
    for (size_t i = 0; i < n; i++) rtp_relu_bwd_at(i, dx, dy, y, slope);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_dropout_fwd(cudaStream_t s, float *y, float *mask, const float *x,
                                         size_t n, rtp_philox_stream st, float keep,
                                         const rtp_philox_stream *dv)
{
    DEFER(rtp_k_dropout_fwd(s, y, mask, x, n, st, keep, dv));
    CHECK({y, F4(n)}, {mask, F4(n)}, {x, F4(n)}, {dv, dv ? sizeof *dv : 0});
    if (dv) st = *dv;
    for (size_t blk = 0; blk < (n + 3) / 4; blk++)
        rtp_dropout_block_at(blk, y, mask, x, n, st, rtp_keep_threshold(keep), 1.0f / keep);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_add(cudaStream_t s, float *z, const float *a, const float *b, size_t n)
{
    DEFER(rtp_k_add(s, z, a, b, n));
    CHECK({z, F4(n)}, {a, F4(n)}, {b, F4(n)});
    for (size_t i = 0; i < n; i++) z[i] = a[i] + b[i];
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_add_relu(cudaStream_t s, float *z, const float *a, const float *b,
                                      size_t n)
{
    DEFER(rtp_k_add_relu(s, z, a, b, n));
    CHECK({z, F4(n)}, {a, F4(n)}, {b, F4(n)});
    for (size_t i = 0; i < n; i++) z[i] = rtp_add_relu_of(a[i], b[i]);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_mul(cudaStream_t s, float *z, const float *a, const float *b, size_t n)
{
    DEFER(rtp_k_mul(s, z, a, b, n));
    CHECK({z, F4(n)}, {a, F4(n)}, {b, F4(n)});
    for (size_t i = 0; i < n; i++) z[i] = a[i] * b[i];
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_bias_add(cudaStream_t s, float *y, const float *bias, int N, int K,
                                      int PQ)
{
    DEFER(rtp_k_bias_add(s, y, bias, N, K, PQ));
    size_t n = (size_t)N * K * PQ;
    CHECK({y, F4(n)}, {bias, F4(K)});
    for (size_t i = 0; i < n; i++) rtp_bias_add_at(i, y, bias, K, PQ);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_col_sums(cudaStream_t s, float *db, const float *dy, int N, int O)
{
    DEFER(rtp_k_col_sums(s, db, dy, N, O));
    CHECK({db, F4(O)}, {dy, F4((size_t)N * O)});
    rtp_col_sums_host(db, dy, N, O, T);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_row_broadcast(cudaStream_t s, float *y, const float *bias, int N,
                                           int O)
{
    DEFER(rtp_k_row_broadcast(s, y, bias, N, O));
    CHECK({y, F4((size_t)N * O)}, {bias, F4(O)});
    for (size_t i = 0; i < (size_t)N * O; i++) y[i] = bias[i % (size_t)O];
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_to_16(cudaStream_t s, void *dst, const float *src, size_t n, int bf16)
{
    DEFER(rtp_k_to_16(s, dst, src, n, bf16));
    CHECK({dst, n * 2}, {src, F4(n)});
    mock_count_to16(n);
    for (size_t i = 0; i < n; i++) {
        if (bf16) ((__nv_bfloat16 *)dst)[i] = __float2bfloat16_rn(src[i]);
        else ((__half *)dst)[i] = __float2half_rn(src[i]);
    }
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_from_16(cudaStream_t s, float *dst, const void *src, size_t n,
                                     int bf16)
{
    DEFER(rtp_k_from_16(s, dst, src, n, bf16));
    CHECK({dst, F4(n)}, {src, n * 2});
    for (size_t i = 0; i < n; i++)
        dst[i] = bf16 ? __bfloat162float(((const __nv_bfloat16 *)src)[i])
                      : __half2float(((const __half *)src)[i]);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_maxpool_fwd(cudaStream_t s, float *y, const float *x, rtp_pool_geom g)
{
    DEFER(rtp_k_maxpool_fwd(s, y, x, g));
    size_t ny = (size_t)g.planes * g.P * g.Q, nx = (size_t)g.planes * g.H * g.W;
    CHECK({y, F4(ny)}, {x, F4(nx)});
    for (size_t o = 0; o < ny; o++) rtp_maxpool_fwd_at(o, y, x, g);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_maxpool_bwd(cudaStream_t s, float *dx, const float *dy, const float *x,
                                         const float *y, rtp_pool_geom g)
{
    DEFER(rtp_k_maxpool_bwd(s, dx, dy, x, y, g));
    size_t ny = (size_t)g.planes * g.P * g.Q, nx = (size_t)g.planes * g.H * g.W;
    CHECK({dx, F4(nx)}, {dy, F4(ny)}, {x, F4(nx)}, {y, F4(ny)});
    for (size_t i = 0; i < nx; i++) rtp_maxpool_bwd_at(i, dx, dy, x, y, g);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_avgpool_fwd(cudaStream_t s, float *y, const float *x, rtp_pool_geom g)
{
    DEFER(rtp_k_avgpool_fwd(s, y, x, g));
    size_t ny = (size_t)g.planes * g.P * g.Q, nx = (size_t)g.planes * g.H * g.W;
    CHECK({y, F4(ny)}, {x, F4(nx)});
    for (size_t o = 0; o < ny; o++)
        rtp_avgpool_fwd_at(o, y, x, g, g.adaptive ? 0.0f : 1.0f / (float)(g.R * g.S));
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_avgpool_bwd(cudaStream_t s, float *dx, const float *dy,
                                         rtp_pool_geom g)
{
    DEFER(rtp_k_avgpool_bwd(s, dx, dy, g));
    size_t ny = (size_t)g.planes * g.P * g.Q, nx = (size_t)g.planes * g.H * g.W;
    CHECK({dx, F4(nx)}, {dy, F4(ny)});
    for (size_t i = 0; i < nx; i++)
        rtp_avgpool_bwd_at(i, dx, dy, g, g.adaptive ? 0.0f : 1.0f / (float)(g.R * g.S));
    return cudaSuccess;
}

/* ---- the two-level reductions: every block (p, c0 + w) of level 1, then level 2 ---- */

#define F8(n) ((size_t)(n)*8)

static cudaError_t red_part(int kind, double *part, const float *x, const float *y, const float *sm,
                            const float *si, const float *g, const float *be, int N, int C, int HW,
                            int c0, int cw, int P)
{
    size_t n = (size_t)N * C * HW;
    if (c0 < 0 || cw < 0 || c0 + cw > C || P < 1 || (size_t)cw * P > RTP_RED_SLOTS)
        return cudaErrorInvalidConfiguration; /* a grid the launcher would refuse */
    CHECK({part, F8(2 * (size_t)cw * P)}, {x, F4(n)}, {y, kind == 2 ? F4(n) : 0},
          {sm, kind == 2 ? F4(C) : 0}, {si, kind == 2 ? F4(C) : 0}, {g, kind == 2 ? F4(C) : 0},
          {be, be ? F4(C) : 0});
    for (int w = 0; w < cw; w++)
        for (int p = 0; p < P; p++)
            rtp_red_block_host(kind, part, T, x, y, sm, si, g, be, N, C, HW, c0, w, P, p);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_chan_sum_part(cudaStream_t s, double *part, const float *x, int N,
                                           int C, int HW, int c0, int cw, int P)
{
    DEFER(rtp_k_chan_sum_part(s, part, x, N, C, HW, c0, cw, P));
    return red_part(0, part, x, NULL, NULL, NULL, NULL, NULL, N, C, HW, c0, cw, P);
}

extern "C" cudaError_t rtp_k_bn_stats_part(cudaStream_t s, double *part, const float *x, int N,
                                           int C, int HW, int c0, int cw, int P)
{
    DEFER(rtp_k_bn_stats_part(s, part, x, N, C, HW, c0, cw, P));
    return red_part(1, part, x, NULL, NULL, NULL, NULL, NULL, N, C, HW, c0, cw, P);
}

extern "C" cudaError_t rtp_k_bn_bwd_part(cudaStream_t s, double *part, const float *dy,
                                         const float *x, const float *g, const float *be,
                                         const float *sm, const float *si, int N, int C, int HW,
                                         int c0, int cw, int P)
{
    DEFER(rtp_k_bn_bwd_part(s, part, dy, x, g, be, sm, si, N, C, HW, c0, cw, P));
    return red_part(2, part, x, dy, sm, si, g, be, N, C, HW, c0, cw, P);
}

extern "C" cudaError_t rtp_k_red_finish(cudaStream_t s, const double *part, float *out0,
                                        float *out1, int c0, int cw, int P)
{
    DEFER(rtp_k_red_finish(s, part, out0, out1, c0, cw, P));
    CHECK({part, F8(2 * (size_t)cw * P)}, {out0 + c0, F4(cw)},
          {out1 ? out1 + c0 : NULL, out1 ? F4(cw) : 0});
    for (int w = 0; w < cw; w++) rtp_red_finish_at(w, part, P, out0, out1, c0);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_bn_stats_finish(cudaStream_t s, const double *part, float *sm,
                                             float *si, float *rm, float *rv, int N, int HW, int c0,
                                             int cw, int P, float eps, float momentum)
{
    DEFER(rtp_k_bn_stats_finish(s, part, sm, si, rm, rv, N, HW, c0, cw, P, eps, momentum));
    CHECK({part, F8(2 * (size_t)cw * P)}, {sm + c0, F4(cw)}, {si + c0, F4(cw)}, {rm + c0, F4(cw)},
          {rv + c0, F4(cw)});
    for (int w = 0; w < cw; w++)
        rtp_bn_stats_finish_at(w, part, P, (size_t)N * HW, eps, momentum, sm, si, rm, rv, c0);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_bn_apply(cudaStream_t s, float *y, const float *x, const float *gamma,
                                      const float *beta, const float *sm, const float *si, int N,
                                      int C, int HW, int relu)
{
    DEFER(rtp_k_bn_apply(s, y, x, gamma, beta, sm, si, N, C, HW, relu));
    size_t n = (size_t)N * C * HW;
    CHECK({y, F4(n)}, {x, F4(n)}, {gamma, F4(C)}, {beta, F4(C)}, {sm, F4(C)}, {si, F4(C)});
    for (size_t i = 0; i < n; i++)
        rtp_bn_apply_at(i, y, x, gamma, beta, sm, si, C, HW, relu ? 0.0f : 1.0f);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_bn_fwd_eval(cudaStream_t s, float *y, const float *x,
                                         const float *gamma, const float *beta, const float *rm,
                                         const float *rv, int N, int C, int HW, float eps, int relu)
{
    DEFER(rtp_k_bn_fwd_eval(s, y, x, gamma, beta, rm, rv, N, C, HW, eps, relu));
    size_t n = (size_t)N * C * HW;
    CHECK({y, F4(n)}, {x, F4(n)}, {gamma, F4(C)}, {beta, F4(C)}, {rm, F4(C)}, {rv, F4(C)});
    for (size_t i = 0; i < n; i++)
        rtp_bn_eval_at(i, y, x, gamma, beta, rm, rv, C, HW, eps, relu ? 0.0f : 1.0f);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_bn_bwd_apply(cudaStream_t s, float *dx, const float *dy,
                                          const float *x, const float *gamma, const float *beta,
                                          const float *sm, const float *si, const float *dg,
                                          const float *db, int N, int C, int HW)
{
    DEFER(rtp_k_bn_bwd_apply(s, dx, dy, x, gamma, beta, sm, si, dg, db, N, C, HW));
    size_t n = (size_t)N * C * HW;
    CHECK({dx, F4(n)}, {dy, F4(n)}, {x, F4(n)}, {gamma, F4(C)}, {beta, beta ? F4(C) : 0},
          {sm, F4(C)}, {si, F4(C)}, {dg, F4(C)}, {db, F4(C)});
    for (size_t i = 0; i < n; i++)
        rtp_bn_bwd_apply_at(i, dx, dy, x, gamma, beta, sm, si, dg, db, C, HW, (size_t)N * HW);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_xent_fwd(cudaStream_t s, float *loss, float *probs,
                                      const float *logits, const int32_t *labels, int N, int L,
                                      float eps)
{
    DEFER(rtp_k_xent_fwd(s, loss, probs, logits, labels, N, L, eps));
    CHECK({loss, F4(N)}, {probs, F4((size_t)N * L)}, {logits, F4((size_t)N * L)}, {labels, F4(N)});
    for (int n = 0; n < N; n++) rtp_xent_fwd_at(n, loss, probs, logits, labels, L, eps);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_xent_bwd(cudaStream_t s, float *dlogits, const float *probs,
                                      const int32_t *labels, float scale, int N, int L, float eps)
{
    DEFER(rtp_k_xent_bwd(s, dlogits, probs, labels, scale, N, L, eps));
    CHECK({dlogits, F4((size_t)N * L)}, {probs, F4((size_t)N * L)}, {labels, F4(N)});
    for (size_t i = 0; i < (size_t)N * L; i++)
        rtp_xent_bwd_at(i, dlogits, probs, labels, scale, L, eps);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_adam(cudaStream_t s, float *p, float *m, float *v, const float *g,
                                  size_t n, rt_adam_coef c, const rt_adam_coef *dv)
{
    DEFER(rtp_k_adam(s, p, m, v, g, n, c, dv));
    CHECK({p, F4(n)}, {m, F4(n)}, {v, F4(n)}, {g, F4(n)}, {dv, dv ? sizeof *dv : 0});
    if (dv) c = *dv;
    for (size_t i = 0; i < n; i++) rtp_adam_at(i, p, m, v, g, &c);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_sgd(cudaStream_t s, float *p, float *buf, const float *g, size_t n,
                                 rt_sgd_coef c, const rt_sgd_coef *dv)
{
    DEFER(rtp_k_sgd(s, p, buf, g, n, c, dv));
    CHECK({dv, dv ? sizeof *dv : 0});
    if (dv) c = *dv;
    CHECK({p, F4(n)}, {g, F4(n)}, {buf, c.momentum != 0.0f ? F4(n) : 0});
    for (size_t i = 0; i < n; i++) rtp_sgd_at(i, p, buf, g, &c);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_im2col(cudaStream_t s, float *col, const float *x, rtp_conv_geom g,
                                    int count, size_t nstride, size_t ld)
{
    DEFER(rtp_k_im2col(s, col, x, g, count, nstride, ld));
    const size_t per = (size_t)g.C * g.R * g.S * g.P * g.Q, chw = (size_t)g.C * g.H * g.W;
    const size_t PQ = (size_t)g.P * g.Q, rows = per / (PQ ? PQ : 1);
    if (count <= 0) return cudaSuccess;
    /* the last image's last row ends at (count-1) nstride + (rows-1) ld + PQ */
    CHECK({col, F4((size_t)(count - 1) * nstride + (rows ? (rows - 1) * ld + PQ : 0))},
          {x, F4(chw * (size_t)count)});
    for (size_t i = 0; i < per * (size_t)count; i++) /* im2col_k */
        rtp_im2col_at(i % per, col + i / per * nstride, x + i / per * chw, g, ld);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_col2im(cudaStream_t s, float *dx, const float *col, rtp_conv_geom g,
                                    int count)
{
    DEFER(rtp_k_col2im(s, dx, col, g, count));
    const size_t per = (size_t)g.C * g.R * g.S * g.P * g.Q, chw = (size_t)g.C * g.H * g.W;
    if (count <= 0) return cudaSuccess;
    CHECK({dx, F4(chw * (size_t)count)}, {col, F4(per * (size_t)count)});
    for (size_t i = 0; i < chw * (size_t)count; i++) /* col2im_k */
        rtp_col2im_at(i % chw, dx + i / chw * chw, col + i / chw * per, g);
    return cudaSuccess;
}

/* ---- cuda_bytes.cu ---- */

extern "C" cudaError_t rtp_k_bytes_f32(cudaStream_t s, float *out, const uint8_t *bytes,
                                       const float *lut, int C, size_t plane, size_t n)
{
    DEFER(rtp_k_bytes_f32(s, out, bytes, lut, C, plane, n));
    CHECK({out, F4(n)}, {bytes, n}, {lut, F4((size_t)C * 256)});
    for (size_t i = 0; i < n; i++) rtp_bytes_f32_at(i, out, bytes, lut, C, plane);
    return cudaSuccess;
}

/* ---- cuda_train.cu ---- */

extern "C" cudaError_t rtp_k_gather(cudaStream_t s, float *images, int32_t *labels,
                                    const float *data, const int32_t *data_labels,
                                    const int32_t *order, rtp_gather_geom g,
                                    const rtp_gather_vars *dv)
{
    DEFER(rtp_k_gather(s, images, labels, data, data_labels, order, g, dv));
    if (g.count <= 0) return cudaSuccess;
    CHECK({dv, dv ? sizeof *dv : 0});
    if (dv) order += dv->start, g.st = dv->st, g.st2 = dv->st2;
    const size_t img = (size_t)g.C * g.H * g.W, cnt = (size_t)g.count;
    CHECK({images, F4(cnt * img)}, {labels, F4(cnt)}, {order, F4(cnt)},
          {data, F4((size_t)g.n * img)}, {data_labels, F4(g.n)});
    for (int i = 0; i < g.count; i++) { /* gather_k's block i */
        int32_t idx = order[i];
        if (idx < 0 || idx >= g.n) {
            labels[i] = -1;
            continue;
        }
        labels[i] = data_labels[idx];
        rtp_aug a = {0, 0, 0, 0, 0};
        if (g.augment) a = rtp_augment_draw(g.st, (uint32_t)idx, g.pad, g.flip_p);
        if (g.augment && g.cutout > 0) rtp_cutout_draw(g.st2, (uint32_t)idx, g.H, g.W, &a);
        for (size_t j = 0; j < img; j++)
            rtp_gather_at(j, images + (size_t)i * img, data + (size_t)idx * img, &g, a);
    }
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_clip(cudaStream_t s, float *g, size_t n, float *w, double max_norm,
                                  double clip_value)
{
    DEFER(rtp_k_clip(s, g, n, w, max_norm, clip_value));
    CHECK({g, F4(n)}, {w, F4(RT_CLIP_WORDS)});
    if (clip_value > 0)
        for (size_t i = 0; i < n; i++) rtp_clip_value_at(i, g, (float)clip_value);
    w[0] = 0.0f, w[1] = 1.0f;
    if (!(max_norm > 0)) return cudaSuccess;
    double *part = (double *)(void *)(w + 4), th[T];
    for (int p = 0; p < RT_CLIP_PARTS; p++) { /* clip_part_k's block p and its tree */
        size_t lo, hi;
        rtp_red_range(n, RT_CLIP_PARTS, p, &lo, &hi);
        for (int t = 0; t < T; t++) th[t] = rtp_clip_sq_part(t, T, g, lo, hi);
        part[p] = rtp_tree_sum_host(th, T);
    }
    rtp_clip_finish(w, part, max_norm);
    if (w[1] != 1.0f)
        for (size_t i = 0; i < n; i++) g[i] *= w[1];
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_xent_stats(cudaStream_t s, float *row, const float *loss,
                                        const float *probs, const int32_t *labels, int N, int L,
                                        const int32_t *dv)
{
    DEFER(rtp_k_xent_stats(s, row, loss, probs, labels, N, L, dv));
    CHECK({dv, dv ? sizeof *dv : 0});
    if (dv) row += (size_t)*dv * RT_STEP_STATS;
    CHECK({row, F4(4)}, {loss, F4(N)}, {probs, F4((size_t)N * L)}, {labels, F4(N)});
    int c = 0; /* the integer reduction: any order gives the same count */
    for (int n = 0; n < N; n++) c += rtp_xent_correct_at(n, probs, labels, L);
    rtp_xent_stats_row(row, rtp_loss_add(0.0, loss, N), N, c); /* tiles in order = one run */
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_set_bytes(cudaStream_t s, void *dst, rtp_param_chunk c, size_t n)
{
    DEFER(rtp_k_set_bytes(s, dst, c, n));
    if (n == 0) return cudaSuccess;
    CHECK({dst, n});
    memcpy(dst, c.b, n);
    return cudaSuccess;
}

#define AMP_BYTES sizeof(rt_amp_state)

extern "C" cudaError_t rtp_k_amp_scale(cudaStream_t s, float *x, size_t n, const rt_amp_state *amp)
{
    DEFER(rtp_k_amp_scale(s, x, n, amp));
    if (n == 0) return cudaSuccess;
    CHECK({x, F4(n)}, {amp, AMP_BYTES});
    const float f = (float)amp->scale;
    for (size_t i = 0; i < n; i++) rtp_amp_scale_at(i, x, f);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_amp_unscale(cudaStream_t s, float *g, size_t n, rt_amp_state *amp)
{
    DEFER(rtp_k_amp_unscale(s, g, n, amp));
    if (n == 0) return cudaSuccess;
    CHECK({g, F4(n)}, {amp, AMP_BYTES});
    const float inv = (float)(1.0 / amp->scale);
    for (size_t i = 0; i < n; i++)
        if (rtp_amp_unscale_at(i, g, inv)) amp->found_inf = 1;
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_amp_adam(cudaStream_t s, float *p, float *m, float *v, const float *g,
                                      size_t n, rt_amp_state *amp, rtp_amp_adam a,
                                      rt_adam_coef *coef, const rtp_amp_adam *dv)
{
    DEFER(rtp_k_amp_adam(s, p, m, v, g, n, amp, a, coef, dv));
    CHECK({dv, dv ? sizeof *dv : 0});
    if (dv) a = *dv;
    /* stricter than a GPU, which reads no element of a skipped update */
    CHECK({amp, AMP_BYTES}, {coef, sizeof *coef}, {p, F4(n)}, {m, F4(n)}, {v, F4(n)}, {g, F4(n)});
    (void)rt_amp_rule_step(amp); /* amp_adam_rule_k */
    *coef = rtp_amp_adam_coef(&a, amp);
    if (n == 0 || amp->last_skipped) return cudaSuccess;
    const rt_adam_coef c = *coef; /* amp_adam_k */
    for (size_t i = 0; i < n; i++) rtp_adam_at(i, p, m, v, g, &c);
    return cudaSuccess;
}

extern "C" cudaError_t rtp_k_amp_sgd(cudaStream_t s, float *p, float *buf, const float *g, size_t n,
                                     rt_amp_state *amp, rt_sgd_coef c0, const rt_sgd_coef *dv)
{
    DEFER(rtp_k_amp_sgd(s, p, buf, g, n, amp, c0, dv));
    CHECK({dv, dv ? sizeof *dv : 0});
    if (dv) c0 = *dv;
    CHECK({amp, AMP_BYTES}, {p, F4(n)}, {g, F4(n)}, {buf, c0.momentum != 0.0f ? F4(n) : 0});
    (void)rt_amp_rule_step(amp);
    if (n == 0 || amp->last_skipped) return cudaSuccess;
    const rt_sgd_coef c = rtp_amp_sgd_coef(c0, amp);
    for (size_t i = 0; i < n; i++) rtp_sgd_at(i, p, buf, g, &c);
    return cudaSuccess;
}
