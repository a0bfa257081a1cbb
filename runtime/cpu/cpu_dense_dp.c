/* cpu_dense_dp.c - bf16 dense layers on VDPBF16PS (cpu_dp.h), one GEMM a product:
 * y (N x O) = x . w^T (pairs along F), dx (N x F) = dy . w (pairs along O),
 * dw (O x F) = dy^T . x (pairs along N). Rows of the result are split over the
 * backend's threads; each output's sum order is fixed, so any thread count gives the
 * same bits.
 */
#include "cpu_dp.h"
#include "cpu_internal.h"

static size_t half(size_t n) { return (n + 1) / 2; }
static size_t r16(size_t n) { return (n + 15) / 16 * 16; }

/* words of A (M x K2) then B (K2 x N, rows of N rounded up to 16) */
static size_t pass(size_t M, size_t N, size_t K) { return r16(M * half(K)) + half(K) * r16(N); }

size_t rtp_cpu_dp_dense_workspace(const rt_dense_desc *d)
{
    size_t N = (size_t)d->N, F = (size_t)d->F, O = (size_t)d->O;
    size_t a = pass(N, O, F), b = pass(N, F, O), c = pass(O, F, N);
    size_t m = a > b ? a : b;
    return (m > c ? m : c) * 4;
}

static int threads(const rt_backend *b) { return b->threads > 0 ? b->threads : 1; }

void rtp_cpu_dp_dense_fwd(rt_backend *b, float *ws, rt_tensor *out, const rt_tensor *in,
                          const rt_tensor *w, const rt_tensor *bias, const rt_dense_desc *d)
{
    const size_t lda = half((size_t)d->F), ldb = r16((size_t)d->O);
    uint32_t *A = (uint32_t *)ws, *B = A + r16((size_t)d->N * lda);
    rtp_dp_pack_rows(A, lda, in->data, (size_t)d->F, d->N, d->F);
    rtp_dp_pack_rows_t(B, ldb, w->data, (size_t)d->F, d->O, d->F);
    float *y = out->data;
    const float *bs = bias ? bias->data : NULL;
    if (bs)
        for (int n = 0; n < d->N; n++)
            for (int o = 0; o < d->O; o++) y[(size_t)n * d->O + o] = bs[o];
    rtp_dp_gemm_mt(threads(b), y, (size_t)d->O, A, lda, B, ldb, d->N, d->O, (int)lda, bias != NULL);
}

/* C (M x F) = A (M x lda pairs, packed by the caller at ws) . the R rows of F of S in
 * pairs */
static void times_rows(rt_backend *b, float *C, const uint32_t *A, size_t lda, int M,
                       const float *S, int R, int F)
{
    uint32_t *B = (uint32_t *)A + r16((size_t)M * lda);
    const rtp_dp_geom g = {R, 1, F, 1, 1, 1, 0, 1, F};
    rtp_dp_pack_cols(B, r16((size_t)F), S, &g);
    rtp_dp_gemm_mt(threads(b), C, (size_t)F, A, lda, B, r16((size_t)F), M, F, (int)lda, 0);
}

void rtp_cpu_dp_dense_bwd_data(rt_backend *b, float *ws, rt_tensor *din, const rt_tensor *dout,
                               const rt_tensor *w, const rt_dense_desc *d)
{
    const size_t lda = half((size_t)d->O); /* dx = dy . w, pairs along O */
    rtp_dp_pack_rows((uint32_t *)ws, lda, dout->data, (size_t)d->O, d->N, d->O);
    times_rows(b, din->data, (uint32_t *)ws, lda, d->N, w->data, d->O, d->F);
}

void rtp_cpu_dp_dense_bwd_filter(rt_backend *b, float *ws, rt_tensor *dw, const rt_tensor *dout,
                                 const rt_tensor *in, const rt_dense_desc *d)
{
    const size_t lda = half((size_t)d->N); /* dw = dy^T . x, pairs along N */
    rtp_dp_pack_cols_t((uint32_t *)ws, lda, dout->data, (size_t)d->O, d->N, d->O);
    times_rows(b, dw->data, (uint32_t *)ws, lda, d->O, in->data, d->N, d->F);
}
