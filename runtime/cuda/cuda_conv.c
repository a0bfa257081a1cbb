/* cuda_conv.c - conv2d on the CUDA backend: cuDNN when it was found at build time and
 * opened (cudnn_conv.c), else im2col + cuBLAS (this file), the way cpu_conv.c does it on
 * the CPU. The choice is made once, at open (c->dnn), not per call. Both paths add the
 * bias and reduce the bias gradient with our own kernels (deterministic, fixed order).
 * The im2col path makes one cuBLAS call per pass for a whole batch of images, not one
 * per image: the forward and input-gradient passes are one strided-batched GEMM (the
 * weight matrix shared, stride 0), the weight gradient one GEMM over all the batch's
 * P*Q columns (the images' column matrices side by side, and dy rearranged to (K,
 * count*P*Q)), so no accumulation across calls. A batch whose columns exceed
 * IM2COL_BYTES runs in chunks of images (chunk()), which depends only on the shape.
 * Scratch: the column matrices, dy rearranged, then (bf16/fp16) the 16-bit copies of
 * one call's inputs (rtp_cuda_gemm).
 * A grouped convolution (rt_conv_desc.groups; cuDNN takes the group count on its
 * descriptor) runs here as one convolution per image and group, of C/G input and K/G
 * output channels (group_desc): slow for a depthwise one, but only where cuDNN is absent.
 */
#include "cuda_internal.h"

#define IM2COL_BYTES ((size_t)64 << 20)

static size_t col_floats(const rt_conv_desc *d)
{
    return (size_t)d->C * d->R * d->S * (size_t)d->P * d->Q;
}

static int is_direct(const rt_conv_desc *d)
{
    return d->R == 1 && d->S == 1 && d->stride == 1 && d->pad == 0;
}

static rtp_conv_geom geom(const rt_conv_desc *d)
{
    return (rtp_conv_geom){d->C, d->H, d->W, d->R, d->S, d->stride, d->pad, d->P, d->Q};
}

static size_t r256(size_t n) { return (n + 255) / 256 * 256; }

/* Images per cuBLAS call: the batch, or as many as IM2COL_BYTES of scratch hold. */
static int chunk(const rt_conv_desc *d)
{
    size_t per = (col_floats(d) + (size_t)d->K * d->P * d->Q) * sizeof(float);
    size_t n = IM2COL_BYTES / (per ? per : 1);
    if (n > (size_t)d->N) n = (size_t)d->N;
    return n < 1 ? 1 : (int)n;
}

/* Scratch: column matrices of chunk() images, dy of as many rearranged, 16-bit copies. */
static size_t col_bytes(const rt_conv_desc *d)
{
    return r256(col_floats(d) * (size_t)chunk(d) * sizeof(float));
}
static size_t stage_off(const rt_conv_desc *d)
{
    return col_bytes(d) + r256((size_t)d->K * d->P * d->Q * (size_t)chunk(d) * sizeof(float));
}

/* The cuBLAS call of `pass` for `count` images (rtp_conv_gemm's per-image shapes). */
static rtp_gemm batch_gemm(int pass, const rt_conv_desc *d, int count)
{
    rtp_gemm g = rtp_conv_gemm(pass, d);
    const long long PQ = (long long)d->P * d->Q, CRS = (long long)d->C * d->R * d->S;
    if (pass == RTP_FWD) /* y_m = w col_m */
        g.count = count, g.sa = CRS * PQ, g.sb = 0, g.sc = (long long)d->K * PQ;
    else if (pass == RTP_BWD_DATA) /* col_m = w^T dy_m */
        g.count = count, g.sa = (long long)d->K * PQ, g.sb = 0, g.sc = CRS * PQ;
    else /* dw = [dy_0 .. dy_count-1] [col_0 .. col_count-1]^T: k = count * P*Q */
        g.k = g.lda = g.ldb = (int)(count * PQ);
    return g;
}

/* One image's group of a grouped convolution: C/G input and K/G output channels. */
static rt_conv_desc group_desc(const rt_conv_desc *d)
{
    rt_conv_desc g = *d;
    g.N = 1, g.C = d->C / rt_conv_groups(d), g.K = d->K / rt_conv_groups(d), g.groups = 0;
    return g;
}

size_t rtp_cuda_conv2d_workspace(rt_backend *b, const rt_conv_desc *d)
{
    if (b->lost || !b->impl) return 0;
    if (cudaSetDevice(rtp_cuda_of(b)->device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0; /* the op will report the device error */
    }
    if (rtp_cuda_of(b)->dnn) return rtp_cudnn_workspace(b, d);
    rt_conv_desc gd = group_desc(d);
    if (rt_conv_groups(d) > 1) d = &gd;
    size_t most = 0;
    for (int pass = RTP_FWD; pass <= RTP_BWD_FILTER; pass++) {
        rtp_gemm g = batch_gemm(pass, d, chunk(d));
        size_t n = rtp_gemm_stage_bytes(b, &g);
        most = n > most ? n : most;
    }
    return stage_off(d) + most;
}

/* ---- im2col + cuBLAS (no cuDNN) ---- */

rtp_gemm rtp_conv_gemm(int pass, const rt_conv_desc *d)
{
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    const int PQ = d->P * d->Q, CRS = d->C * d->R * d->S, K = d->K;
    switch (pass) {
    case RTP_FWD: /* y_n (K,PQ) = w (K,CRS) col (CRS,PQ); column-major y^T = col^T w^T */
        return (rtp_gemm){N, N, PQ, K, CRS, PQ, CRS, PQ, 1, 0, 0, 0};
    case RTP_BWD_DATA: /* col (CRS,PQ) = w^T dy_n; column-major col^T = dy^T w */
        return (rtp_gemm){N, T, PQ, CRS, K, PQ, CRS, PQ, 1, 0, 0, 0};
    default: /* dw (K,CRS) += dy_n col^T; column-major dw^T += col dy^T */
        return (rtp_gemm){T, N, CRS, K, PQ, PQ, PQ, CRS, 1, 0, 0, 0};
    }
}

/* The scratch for the calls of `pass` (col, then the 16-bit stage at *stage). */
static float *scratch(rt_backend *b, int pass, const rt_conv_desc *d, void **stage, rt_error *err)
{
    rtp_gemm g = batch_gemm(pass, d, chunk(d));
    float *col = rtp_cuda_scratch(b, stage_off(d) + rtp_gemm_stage_bytes(b, &g), err);
    *stage = col ? (char *)col + stage_off(d) : NULL;
    return col;
}

static rt_status gemm_fwd(rt_backend *b, float *y, const float *x, const float *w,
                          const rt_conv_desc *d, rt_error *err)
{
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)d->K * d->P * d->Q;
    void *stage;
    float *col = scratch(b, RTP_FWD, d, &stage, err);
    if (!col) return err ? err->code : RT_EINVAL;
    for (int n0 = 0, B = chunk(d); n0 < d->N; n0 += B) {
        const int cnt = d->N - n0 < B ? d->N - n0 : B;
        const rtp_gemm g = batch_gemm(RTP_FWD, d, cnt);
        const float *src = x + chw * (size_t)n0;
        if (!is_direct(d)) {
            RT_CUDA_TRY(b, err,
                        rtp_k_im2col(rtp_cuda_of(b)->stream, col, src, geom(d), cnt, col_floats(d),
                                     (size_t)d->P * d->Q));
            src = col;
        }
        RT_TRY(rtp_cuda_gemm(b, &g, src, w, 0.0f, y + kpq * (size_t)n0, stage, err));
    }
    return RT_OK;
}

static rt_status gemm_bwd_data(rt_backend *b, float *dx, const float *dy, const float *w,
                               const rt_conv_desc *d, rt_error *err)
{
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)d->K * d->P * d->Q;
    void *stage;
    float *col = scratch(b, RTP_BWD_DATA, d, &stage, err);
    if (!col) return err ? err->code : RT_EINVAL;
    for (int n0 = 0, B = chunk(d); n0 < d->N; n0 += B) {
        const int cnt = d->N - n0 < B ? d->N - n0 : B;
        const rtp_gemm g = batch_gemm(RTP_BWD_DATA, d, cnt);
        float *dst = is_direct(d) ? dx + chw * (size_t)n0 : col;
        RT_TRY(rtp_cuda_gemm(b, &g, dy + kpq * (size_t)n0, w, 0.0f, dst, stage, err));
        if (!is_direct(d))
            RT_CUDA_TRY(
                b, err,
                rtp_k_col2im(rtp_cuda_of(b)->stream, dx + chw * (size_t)n0, col, geom(d), cnt));
    }
    return RT_OK;
}

/* beta0 = 1: the first images' products are added to dw (a grouped convolution's later
 * images), 0: they overwrite it */
static rt_status gemm_bwd_filter(rt_backend *b, float *dw, const float *dy, const float *x,
                                 const rt_conv_desc *d, float beta0, rt_error *err)
{
    const int PQ = d->P * d->Q, CRS = d->C * d->R * d->S;
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)d->K * PQ;
    /* dy (count, K, PQ) as an image of K channels whose 1x1 im2col is (K, count*PQ) */
    const rtp_conv_geom gdy = {d->K, d->P, d->Q, 1, 1, 1, 0, d->P, d->Q};
    void *stage;
    float *col = scratch(b, RTP_BWD_FILTER, d, &stage, err);
    if (!col) return err ? err->code : RT_EINVAL;
    float *dyt = (float *)((char *)col + col_bytes(d));
    cudaStream_t s = rtp_cuda_of(b)->stream;
    for (int n0 = 0, B = chunk(d); n0 < d->N; n0 += B) {
        const int cnt = d->N - n0 < B ? d->N - n0 : B;
        const rtp_gemm g = batch_gemm(RTP_BWD_FILTER, d, cnt);
        const size_t wide = (size_t)cnt * PQ;
        RT_CUDA_TRY(b, err, rtp_k_im2col(s, col, x + chw * (size_t)n0, geom(d), cnt, PQ, wide));
        RT_CUDA_TRY(b, err, rtp_k_im2col(s, dyt, dy + kpq * (size_t)n0, gdy, cnt, PQ, wide));
        RT_TRY(rtp_cuda_gemm(b, &g, col, dyt, n0 == 0 ? beta0 : 1.0f, dw, stage, err));
    }
    if (d->N == 0 && beta0 == 0.0f)
        RT_CUDA_TRY(b, err, rtp_k_fill(s, dw, (size_t)d->K * CRS, 0.0f));
    return RT_OK;
}

/* A grouped convolution's pass, one image and group at a time (group_desc). */
static rt_status grouped(rt_backend *b, int pass, float *y, float *x, float *w,
                         const rt_conv_desc *d, rt_error *err)
{
    const int G = rt_conv_groups(d);
    const rt_conv_desc gd = group_desc(d);
    const size_t gx = (size_t)gd.C * d->H * d->W, gy = (size_t)gd.K * d->P * d->Q;
    const size_t gw = rt_conv_weight_numel(d) / (size_t)G;
    if (pass == RTP_BWD_FILTER && d->N == 0)
        RT_CUDA_TRY(b, err, rtp_k_fill(rtp_cuda_of(b)->stream, w, rt_conv_weight_numel(d), 0.0f));
    for (int n = 0; n < d->N; n++)
        for (int g = 0; g < G; g++) {
            size_t i = (size_t)n * G + g;
            float *yg = y + gy * i, *xg = x + gx * i, *wg = w + gw * g;
            if (pass == RTP_FWD) RT_TRY(gemm_fwd(b, yg, xg, wg, &gd, err));
            else if (pass == RTP_BWD_DATA) RT_TRY(gemm_bwd_data(b, xg, yg, wg, &gd, err));
            else RT_TRY(gemm_bwd_filter(b, wg, yg, xg, &gd, n ? 1.0f : 0.0f, err));
        }
    return RT_OK;
}

/* ---- the ops ---- */

rt_status rtp_cuda_conv2d_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                              const rt_tensor *w, const rt_tensor *bias, const rt_conv_desc *d,
                              rt_error *err)
{
    RTP_ENTER(b);
    if (rtp_cuda_of(b)->dnn) RT_TRY(rtp_cudnn_fwd(b, out->data, in->data, w->data, d, err));
    else if (rt_conv_groups(d) > 1)
        RT_TRY(grouped(b, RTP_FWD, out->data, (float *)in->data, (float *)w->data, d, err));
    else RT_TRY(gemm_fwd(b, out->data, in->data, w->data, d, err));
    if (bias)
        RT_CUDA_TRY(
            b, err,
            rtp_k_bias_add(rtp_cuda_of(b)->stream, out->data, bias->data, d->N, d->K, d->P * d->Q));
    return RT_OK;
}

rt_status rtp_cuda_conv2d_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                   const rt_tensor *w, const rt_conv_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    if (rtp_cuda_of(b)->dnn) return rtp_cudnn_bwd_data(b, din->data, dout->data, w->data, d, err);
    if (rt_conv_groups(d) > 1)
        return grouped(b, RTP_BWD_DATA, (float *)dout->data, din->data, (float *)w->data, d, err);
    return gemm_bwd_data(b, din->data, dout->data, w->data, d, err);
}

rt_status rtp_cuda_conv2d_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                     const rt_tensor *dout, const rt_tensor *in,
                                     const rt_conv_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    if (rtp_cuda_of(b)->dnn)
        RT_TRY(rtp_cudnn_bwd_filter(b, dw->data, dout->data, in->data, d, err));
    else if (rt_conv_groups(d) > 1)
        RT_TRY(
            grouped(b, RTP_BWD_FILTER, (float *)dout->data, (float *)in->data, dw->data, d, err));
    else RT_TRY(gemm_bwd_filter(b, dw->data, dout->data, in->data, d, 0.0f, err));
    if (!dbias) return RT_OK;
    /* the sum over n and pq per channel, in two levels (cuda_reduce.cu) */
    rtp_cuda *c = rtp_cuda_of(b);
    const int PQ = d->P * d->Q, P = rtp_red_parts((size_t)d->N * PQ);
    for (int c0 = 0, cw; c0 < d->K; c0 += cw) {
        cw = rtp_red_wave(d->K, P, c0);
        RT_CUDA_TRY(b, err,
                    rtp_k_chan_sum_part(c->stream, c->red, dout->data, d->N, d->K, PQ, c0, cw, P));
        RT_CUDA_TRY(b, err, rtp_k_red_finish(c->stream, c->red, dbias->data, NULL, c0, cw, P));
    }
    return RT_OK;
}
