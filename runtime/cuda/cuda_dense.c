/* cuda_dense.c - dense (PyTorch Linear) layers on cuBLAS, and the precision-aware GEMM.
 *
 * Tensors are row-major; cuBLAS is column-major, and a row-major (r, c) matrix is the
 * column-major (c, r) matrix, its transpose. So with row-major x (N,F), w (O,F),
 * y (N,O):
 *   y^T (O,N) = w (as col-major (F,O))^T * x^T          gemm(T, N, O, N, F)
 *   dx^T (F,N) = w^T (col-major (F,O)) * dy^T (O,N)      gemm(N, N, F, N, O)
 *   dw^T (F,O) = x^T (F,N) * dy (col-major (O,N))^T      gemm(N, T, F, O, N)
 * The bias is broadcast first and the GEMM adds onto it (beta = 1), as cpu_dense.c.
 * Precision: fp32 is cublasSgemm (true fp32; the handle's default math excludes TF32).
 * bf16/fp16 use cublasGemmEx with fp32 matrices and a FAST_16BF/FAST_16F compute type:
 * cuBLAS rounds the inputs to 16 bits for the tensor cores and accumulates in fp32, so
 * no 16-bit copies (and no workspace) are needed.
 */
#include "cuda_internal.h"

rtp_gemm rtp_dense_gemm(int pass, const rt_dense_desc *d)
{
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    switch (pass) {
    case RTP_FWD: /* y^T (O,N) = w^T(col-major (F,O))^T x^T (F,N) */
        return (rtp_gemm){T, N, d->O, d->N, d->F, d->F, d->F, d->O};
    case RTP_BWD_DATA: /* dx^T (F,N) = w (col-major (F,O)) dy^T (O,N) */
        return (rtp_gemm){N, N, d->F, d->N, d->O, d->F, d->O, d->F};
    default: /* dw^T (F,O) = x^T (F,N) (dy^T (O,N))^T */
        return (rtp_gemm){N, T, d->F, d->O, d->N, d->F, d->O, d->F};
    }
}

rt_status rtp_cuda_gemm(rt_backend *b, const rtp_gemm *g, const float *A, const float *B,
                        float beta, float *C, rt_error *err)
{
    rtp_cuda *c = rtp_cuda_of(b);
    const float one = 1.0f;
    if (g->m == 0 || g->n == 0) return RT_OK;
    if (c->prec == RT_PREC_FP32) {
        RTP_CUBLAS_TRY(b, err, c->blasf.sgemm(c->blas, g->ta, g->tb, g->m, g->n, g->k, &one,
                                              A, g->lda, B, g->ldb, &beta, C, g->ldc));
        return RT_OK;
    }
    cublasComputeType_t ct =
        c->prec == RT_PREC_BF16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F_FAST_16F;
    RTP_CUBLAS_TRY(b, err, c->blasf.gemm_ex(c->blas, g->ta, g->tb, g->m, g->n, g->k, &one,
                                            A, CUDA_R_32F, g->lda, B, CUDA_R_32F, g->ldb,
                                            &beta, C, CUDA_R_32F, g->ldc, ct,
                                            CUBLAS_GEMM_DEFAULT));
    return RT_OK;
}

static rt_status check(const rt_tensor *x, const rt_tensor *y, const rt_tensor *w,
                       const rt_dense_desc *d, rt_error *err)
{
    RTP_CHECK(x, (size_t)d->N * d->F, "dense input");
    RTP_CHECK(y, (size_t)d->N * d->O, "dense output");
    RTP_CHECK(w, (size_t)d->O * d->F, "dense weight");
    return RT_OK;
}

rt_status rtp_cuda_dense_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                             const rt_tensor *w, const rt_tensor *bias,
                             const rt_dense_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    RT_TRY(check(in, out, w, d, err));
    if (bias) {
        RTP_CHECK(bias, (size_t)d->O, "dense bias");
        RT_CUDA_TRY(b, err, rtp_k_row_broadcast(rtp_cuda_of(b)->stream, out->data, bias->data,
                                                d->N, d->O));
    }
    rtp_gemm g = rtp_dense_gemm(RTP_FWD, d);
    return rtp_cuda_gemm(b, &g, w->data, in->data, bias ? 1.0f : 0.0f, out->data, err);
}

rt_status rtp_cuda_dense_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                  const rt_tensor *w, const rt_dense_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    RT_TRY(check(din, dout, w, d, err));
    rtp_gemm g = rtp_dense_gemm(RTP_BWD_DATA, d);
    return rtp_cuda_gemm(b, &g, w->data, dout->data, 0.0f, din->data, err);
}

rt_status rtp_cuda_dense_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                    const rt_tensor *dout, const rt_tensor *in,
                                    const rt_dense_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    RT_TRY(check(in, dout, dw, d, err));
    rtp_gemm g = rtp_dense_gemm(RTP_BWD_FILTER, d);
    RT_TRY(rtp_cuda_gemm(b, &g, in->data, dout->data, 0.0f, dw->data, err));
    if (dbias) {
        RTP_CHECK(dbias, (size_t)d->O, "dense bias gradient");
        RT_CUDA_TRY(b, err, rtp_k_col_sums(rtp_cuda_of(b)->stream, dbias->data, dout->data,
                                           d->N, d->O));
    }
    return RT_OK;
}
