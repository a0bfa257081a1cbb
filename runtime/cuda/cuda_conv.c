/* cuda_conv.c - conv2d on the CUDA backend: cuDNN when it was found at build time and
 * opened (cudnn_conv.c), else im2col + cuBLAS per image (this file), the way
 * cpu_conv.c does it on the CPU. The choice is made once, at open (c->dnn), not per
 * call. Both paths add the bias and reduce the bias gradient with our own kernels
 * (deterministic, fixed order).
 * The im2col path's scratch is one column buffer (C*R*S x P*Q floats), followed in
 * bf16/fp16 by the 16-bit copies of one GEMM's inputs (rtp_cuda_gemm); images run one
 * after another on the stream, the weight gradient accumulating in place (beta = 1
 * after the first image), which is deterministic.
 */
#include "cuda_internal.h"

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

/* im2col's scratch: the column buffer, then (bf16/fp16) the 16-bit copies of one GEMM. */
static size_t stage_off(const rt_conv_desc *d) { return r256(col_floats(d) * sizeof(float)); }

size_t rtp_cuda_conv2d_workspace(rt_backend *b, const rt_conv_desc *d)
{
    if (b->lost || !b->impl) return 0;
    if (cudaSetDevice(rtp_cuda_of(b)->device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0; /* the op will report the device error */
    }
    if (rtp_cuda_of(b)->dnn) return rtp_cudnn_workspace(b, d);
    size_t most = 0;
    for (int pass = RTP_FWD; pass <= RTP_BWD_FILTER; pass++) {
        rtp_gemm g = rtp_conv_gemm(pass, d);
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
        return (rtp_gemm){N, N, PQ, K, CRS, PQ, CRS, PQ};
    case RTP_BWD_DATA: /* col (CRS,PQ) = w^T dy_n; column-major col^T = dy^T w */
        return (rtp_gemm){N, T, PQ, CRS, K, PQ, CRS, PQ};
    default: /* dw (K,CRS) += dy_n col^T; column-major dw^T += col dy^T */
        return (rtp_gemm){T, N, CRS, K, PQ, PQ, PQ, CRS};
    }
}

static rt_status gemm_fwd(rt_backend *b, float *y, const float *x, const float *w,
                          const rt_conv_desc *d, rt_error *err)
{
    const rtp_gemm g = rtp_conv_gemm(RTP_FWD, d);
    const int PQ = d->P * d->Q;
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)d->K * PQ;
    float *col = rtp_cuda_scratch(b, stage_off(d) + rtp_gemm_stage_bytes(b, &g), err);
    if (!col) return err ? err->code : RT_EINVAL;
    void *stage = (char *)col + stage_off(d);
    for (int n = 0; n < d->N; n++) {
        const float *src = x + chw * (size_t)n;
        if (!is_direct(d)) {
            RT_CUDA_TRY(b, err, rtp_k_im2col(rtp_cuda_of(b)->stream, col, src, geom(d)));
            src = col;
        }
        RT_TRY(rtp_cuda_gemm(b, &g, src, w, 0.0f, y + kpq * (size_t)n, stage, err));
    }
    return RT_OK;
}

static rt_status gemm_bwd_data(rt_backend *b, float *dx, const float *dy, const float *w,
                               const rt_conv_desc *d, rt_error *err)
{
    const rtp_gemm g = rtp_conv_gemm(RTP_BWD_DATA, d);
    const int PQ = d->P * d->Q;
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)d->K * PQ;
    float *col = rtp_cuda_scratch(b, stage_off(d) + rtp_gemm_stage_bytes(b, &g), err);
    if (!col) return err ? err->code : RT_EINVAL;
    void *stage = (char *)col + stage_off(d);
    for (int n = 0; n < d->N; n++) {
        float *dst = is_direct(d) ? dx + chw * (size_t)n : col;
        RT_TRY(rtp_cuda_gemm(b, &g, dy + kpq * (size_t)n, w, 0.0f, dst, stage, err));
        if (!is_direct(d))
            RT_CUDA_TRY(b, err, rtp_k_col2im(rtp_cuda_of(b)->stream, dx + chw * (size_t)n, col,
                                             geom(d)));
    }
    return RT_OK;
}

static rt_status gemm_bwd_filter(rt_backend *b, float *dw, const float *dy, const float *x,
                                 const rt_conv_desc *d, rt_error *err)
{
    const rtp_gemm g = rtp_conv_gemm(RTP_BWD_FILTER, d);
    const int PQ = d->P * d->Q, CRS = d->C * d->R * d->S;
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)d->K * PQ;
    float *col = rtp_cuda_scratch(b, stage_off(d) + rtp_gemm_stage_bytes(b, &g), err);
    if (!col) return err ? err->code : RT_EINVAL;
    void *stage = (char *)col + stage_off(d);
    for (int n = 0; n < d->N; n++) {
        const float *src = x + chw * (size_t)n;
        if (!is_direct(d)) {
            RT_CUDA_TRY(b, err, rtp_k_im2col(rtp_cuda_of(b)->stream, col, src, geom(d)));
            src = col;
        }
        RT_TRY(rtp_cuda_gemm(b, &g, src, dy + kpq * (size_t)n, n == 0 ? 0.0f : 1.0f, dw,
                             stage, err));
    }
    if (d->N == 0) RT_CUDA_TRY(b, err, rtp_k_fill(rtp_cuda_of(b)->stream, dw,
                                                  (size_t)d->K * CRS, 0.0f));
    return RT_OK;
}

/* ---- the ops ---- */

rt_status rtp_cuda_conv2d_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                              const rt_tensor *w, const rt_tensor *bias,
                              const rt_conv_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    if (rtp_cuda_of(b)->dnn) RT_TRY(rtp_cudnn_fwd(b, out->data, in->data, w->data, d, err));
    else RT_TRY(gemm_fwd(b, out->data, in->data, w->data, d, err));
    if (bias)
        RT_CUDA_TRY(b, err, rtp_k_bias_add(rtp_cuda_of(b)->stream, out->data, bias->data, d->N,
                                           d->K, d->P * d->Q));
    return RT_OK;
}

rt_status rtp_cuda_conv2d_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                   const rt_tensor *w, const rt_conv_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    if (rtp_cuda_of(b)->dnn) return rtp_cudnn_bwd_data(b, din->data, dout->data, w->data, d, err);
    return gemm_bwd_data(b, din->data, dout->data, w->data, d, err);
}

rt_status rtp_cuda_conv2d_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                     const rt_tensor *dout, const rt_tensor *in,
                                     const rt_conv_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    if (rtp_cuda_of(b)->dnn) RT_TRY(rtp_cudnn_bwd_filter(b, dw->data, dout->data, in->data, d, err));
    else RT_TRY(gemm_bwd_filter(b, dw->data, dout->data, in->data, d, err));
    if (!dbias) return RT_OK;
    /* the sum over n and pq per channel, in two levels (cuda_reduce.cu) */
    rtp_cuda *c = rtp_cuda_of(b);
    const int PQ = d->P * d->Q, P = rtp_red_parts((size_t)d->N * PQ);
    for (int c0 = 0, cw; c0 < d->K; c0 += cw) {
        cw = rtp_red_wave(d->K, P, c0);
        RT_CUDA_TRY(b, err, rtp_k_chan_sum_part(c->stream, c->red, dout->data, d->N, d->K, PQ,
                                                c0, cw, P));
        RT_CUDA_TRY(b, err, rtp_k_red_finish(c->stream, c->red, dbias->data, NULL, c0, cw, P));
    }
    return RT_OK;
}
