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

rt_status rtp_cuda_gemm(rt_backend *b, cublasOperation_t ta, cublasOperation_t tb, int m,
                        int n, int k, const float *A, int lda, const float *B, int ldb,
                        float beta, float *C, int ldc, rt_error *err)
{
    rtp_cuda *c = rtp_cuda_of(b);
    const float one = 1.0f;
    if (m == 0 || n == 0) return RT_OK;
    if (c->prec == RT_PREC_FP32) {
        RTP_CUBLAS_TRY(b, err, cublasSgemm(c->blas, ta, tb, m, n, k, &one, A, lda, B, ldb,
                                           &beta, C, ldc));
        return RT_OK;
    }
    cublasComputeType_t ct =
        c->prec == RT_PREC_BF16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F_FAST_16F;
    RTP_CUBLAS_TRY(b, err, cublasGemmEx(c->blas, ta, tb, m, n, k, &one, A, CUDA_R_32F, lda, B,
                                        CUDA_R_32F, ldb, &beta, C, CUDA_R_32F, ldc, ct,
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
    return rtp_cuda_gemm(b, CUBLAS_OP_T, CUBLAS_OP_N, d->O, d->N, d->F, w->data, d->F,
                         in->data, d->F, bias ? 1.0f : 0.0f, out->data, d->O, err);
}

rt_status rtp_cuda_dense_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                  const rt_tensor *w, const rt_dense_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    RT_TRY(check(din, dout, w, d, err));
    return rtp_cuda_gemm(b, CUBLAS_OP_N, CUBLAS_OP_N, d->F, d->N, d->O, w->data, d->F,
                         dout->data, d->O, 0.0f, din->data, d->F, err);
}

rt_status rtp_cuda_dense_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                    const rt_tensor *dout, const rt_tensor *in,
                                    const rt_dense_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    RT_TRY(check(in, dout, dw, d, err));
    RT_TRY(rtp_cuda_gemm(b, CUBLAS_OP_N, CUBLAS_OP_T, d->F, d->O, d->N, in->data, d->F,
                         dout->data, d->O, 0.0f, dw->data, d->F, err));
    if (dbias) {
        RTP_CHECK(dbias, (size_t)d->O, "dense bias gradient");
        RT_CUDA_TRY(b, err, rtp_k_col_sums(rtp_cuda_of(b)->stream, dbias->data, dout->data,
                                           d->N, d->O));
    }
    return RT_OK;
}
