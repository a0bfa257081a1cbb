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
 * bf16/fp16: both inputs are rounded to 16 bits into scratch first (rtp_k_to_16, as
 * convolutions stage theirs), then cublasGemmEx multiplies the 16-bit matrices with fp32
 * accumulation into the fp32 output (CUBLAS_COMPUTE_32F). Explicit, because the
 * FAST_16BF/FAST_16F compute types on fp32 matrices only permit cuBLAS to round: it may
 * run plain fp32, and then neither the 16-bit rounding nor fp16's overflow (which the
 * loss scaler must see) would happen. The scratch is the front of the workspace, sized
 * by dense_workspace when the model is attached.
 */
#include "cuda_internal.h"

rtp_gemm rtp_dense_gemm(int pass, const rt_dense_desc *d)
{
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    switch (pass) {
    case RTP_FWD: /* y^T (O,N) = w^T(col-major (F,O))^T x^T (F,N) */
        return (rtp_gemm){T, N, d->O, d->N, d->F, d->F, d->F, d->O, 1, 0, 0, 0};
    case RTP_BWD_DATA: /* dx^T (F,N) = w (col-major (F,O)) dy^T (O,N) */
        return (rtp_gemm){N, N, d->F, d->N, d->O, d->F, d->O, d->F, 1, 0, 0, 0};
    default: /* dw^T (F,O) = x^T (F,N) (dy^T (O,N))^T */
        return (rtp_gemm){N, T, d->F, d->O, d->N, d->F, d->O, d->F, 1, 0, 0, 0};
    }
}

static size_t r256(size_t n) { return (n + 255) / 256 * 256; }

/* Elements of A and B as stored (column-major, leading dimension included), over the
 * whole batch. */
static size_t batch_extra(const rtp_gemm *g, long long stride)
{
    return g->count > 1 ? (size_t)stride * (size_t)(g->count - 1) : 0;
}
static size_t a_elems(const rtp_gemm *g)
{
    return (size_t)g->lda * (g->ta == CUBLAS_OP_N ? g->k : g->m) + batch_extra(g, g->sa);
}
static size_t b_elems(const rtp_gemm *g)
{
    return (size_t)g->ldb * (g->tb == CUBLAS_OP_N ? g->n : g->k) + batch_extra(g, g->sb);
}

size_t rtp_gemm_stage_bytes(rt_backend *b, const rtp_gemm *g)
{
    if (rtp_cuda_of(b)->prec == RT_PREC_FP32) return 0;
    return r256(a_elems(g) * 2) + r256(b_elems(g) * 2);
}

rt_status rtp_cuda_gemm(rt_backend *b, const rtp_gemm *g, const float *A, const float *B,
                        float beta, float *C, void *stage, rt_error *err)
{
    rtp_cuda *c = rtp_cuda_of(b);
    const float one = 1.0f;
    if (g->m == 0 || g->n == 0) return RT_OK;
    if (c->prec == RT_PREC_FP32 && g->count > 1) {
        RTP_CUBLAS_TRY(b, err,
                       c->blasf.sgemm_sb(c->blas, g->ta, g->tb, g->m, g->n, g->k, &one, A, g->lda,
                                         g->sa, B, g->ldb, g->sb, &beta, C, g->ldc, g->sc,
                                         g->count));
        return RT_OK;
    }
    if (c->prec == RT_PREC_FP32) {
        RTP_CUBLAS_TRY(b, err,
                       c->blasf.sgemm(c->blas, g->ta, g->tb, g->m, g->n, g->k, &one, A, g->lda, B,
                                      g->ldb, &beta, C, g->ldc));
        return RT_OK;
    }
    const int bf16 = c->prec == RT_PREC_BF16;
    const cudaDataType t16 = bf16 ? CUDA_R_16BF : CUDA_R_16F;
    char *a16 = stage, *b16 = a16 + r256(a_elems(g) * 2);
    if (g->k > 0) {
        RT_CUDA_TRY(b, err, rtp_k_to_16(c->stream, a16, A, a_elems(g), bf16));
        RT_CUDA_TRY(b, err, rtp_k_to_16(c->stream, b16, B, b_elems(g), bf16));
    }
    if (g->count > 1)
        RTP_CUBLAS_TRY(b, err,
                       c->blasf.gemm_sb_ex(c->blas, g->ta, g->tb, g->m, g->n, g->k, &one, a16, t16,
                                           g->lda, g->sa, b16, t16, g->ldb, g->sb, &beta, C,
                                           CUDA_R_32F, g->ldc, g->sc, g->count, CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT));
    else
        RTP_CUBLAS_TRY(b, err,
                       c->blasf.gemm_ex(c->blas, g->ta, g->tb, g->m, g->n, g->k, &one, a16, t16,
                                        g->lda, b16, t16, g->ldb, &beta, C, CUDA_R_32F, g->ldc,
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return RT_OK;
}

size_t rtp_cuda_dense_workspace(rt_backend *b, const rt_dense_desc *d)
{
    if (b->lost || !b->impl) return 0;
    size_t most = 0;
    for (int pass = RTP_FWD; pass <= RTP_BWD_FILTER; pass++) {
        rtp_gemm g = rtp_dense_gemm(pass, d);
        size_t n = rtp_gemm_stage_bytes(b, &g);
        most = n > most ? n : most;
    }
    return most;
}

/* The 16-bit staging area for g (NULL in fp32, which needs none). */
static rt_status stage_of(rt_backend *b, const rtp_gemm *g, void **out, rt_error *err)
{
    size_t n = rtp_gemm_stage_bytes(b, g);
    *out = NULL;
    if (n == 0) return RT_OK;
    *out = rtp_cuda_scratch(b, n, err);
    return *out ? RT_OK : (err ? err->code : RT_EINVAL);
}

rt_status rtp_cuda_dense_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in, const rt_tensor *w,
                             const rt_tensor *bias, const rt_dense_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    if (bias) {
        RT_CUDA_TRY(b, err,
                    rtp_k_row_broadcast(rtp_cuda_of(b)->stream, out->data, bias->data, d->N, d->O));
    }
    rtp_gemm g = rtp_dense_gemm(RTP_FWD, d);
    void *stage;
    RT_TRY(stage_of(b, &g, &stage, err));
    return rtp_cuda_gemm(b, &g, w->data, in->data, bias ? 1.0f : 0.0f, out->data, stage, err);
}

rt_status rtp_cuda_dense_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                  const rt_tensor *w, const rt_dense_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    rtp_gemm g = rtp_dense_gemm(RTP_BWD_DATA, d);
    void *stage;
    RT_TRY(stage_of(b, &g, &stage, err));
    return rtp_cuda_gemm(b, &g, w->data, dout->data, 0.0f, din->data, stage, err);
}

rt_status rtp_cuda_dense_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                    const rt_tensor *dout, const rt_tensor *in,
                                    const rt_dense_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    rtp_gemm g = rtp_dense_gemm(RTP_BWD_FILTER, d);
    void *stage;
    RT_TRY(stage_of(b, &g, &stage, err));
    RT_TRY(rtp_cuda_gemm(b, &g, in->data, dout->data, 0.0f, dw->data, stage, err));
    if (dbias) {
        RT_CUDA_TRY(b, err,
                    rtp_k_col_sums(rtp_cuda_of(b)->stream, dbias->data, dout->data, d->N, d->O));
    }
    return RT_OK;
}
