/* cpu_conv_dp.c - bf16 convolutions on VDPBF16PS (cpu_dp.h): every pass one GEMM per
 * image on bf16 pairs.
 *
 * forward:        y (K x PQ) = w (K x CRS) . unfold(x) (CRS x PQ), pairs along CRS;
 * input gradient: stride 1: dx (C x HW) = w' (C x KRS) . unfold(dy) (KRS x HW), the
 *                 forward of dy with the filter turned and transposed (pad R-1-pad);
 *                 stride 2: cols (CRS x PQ) = w^T . dy (K x PQ), pairs along K, folded
 *                 back into dx (rtp_cpu_col2im);
 * weight gradient: dw^T (CRS x K) = unfold(x) (CRS x PQ) . dy^T (PQ x K), pairs along
 *                 PQ, summed over fixed groups of RTP_CONV_GROUP images which are added
 *                 in order (the same bits for any thread count).
 * Images go to OpenMP threads (dynamic, like the fp32 paths); each thread packs its
 * image into its own scratch; the weights are packed once a pass.
 */
#include <omp.h>
#include <string.h>

#include "cpu_conv_layout.h"
#include "cpu_dp.h"
#include "cpu_internal.h"

static size_t half(size_t n) { return (n + 1) / 2; }

/* the turned filter's input gradient applies (stride 1, square filter, pad < R) */
static int turned(const rt_conv_desc *d)
{
    return d->stride == 1 && d->R == d->S && d->pad < d->R;
}

/* Scratch (4-byte words): the packed weights, the groups' weight-gradient partials,
 * then per thread the largest of the passes' per-image buffers. */
typedef struct {
    size_t a, acc, accsz, per;
} layout;

static layout lay(const rt_conv_desc *d)
{
    const size_t CRS = (size_t)d->C * d->R * d->S, KRS = (size_t)d->K * d->R * d->S;
    const size_t PQ = (size_t)d->P * d->Q, HW = (size_t)d->H * d->W;
    size_t afwd = (size_t)d->K * half(CRS);
    size_t abwd = turned(d) ? (size_t)d->C * half(KRS) : CRS * half((size_t)d->K);
    size_t fwd = half(CRS) * rtp_r16(PQ);
    size_t bd = turned(d) ? half(KRS) * rtp_r16(HW)
                          : half((size_t)d->K) * rtp_r16(PQ) + rtp_r16(CRS * PQ);
    size_t bf = rtp_r16(CRS * PQ) + rtp_r16(CRS * half(PQ)) + half(PQ) * rtp_r16((size_t)d->K);
    layout l;
    l.a = rtp_r16(afwd > abwd ? afwd : abwd);
    l.accsz = rtp_r16(CRS * d->K);
    l.acc = (size_t)rtp_conv_groups(d->N) * l.accsz;
    l.per = fwd > bd ? fwd : bd;
    l.per = rtp_r16(l.per > bf ? l.per : bf);
    return l;
}

size_t rtp_cpu_dp_conv_workspace(int threads, const rt_conv_desc *d)
{
    layout l = lay(d);
    return (l.a + l.acc + (size_t)(threads > 0 ? threads : 1) * l.per) * 4;
}

/* thread t's buffer */
static uint32_t *mine(float *ws, const layout *l)
{
    return (uint32_t *)ws + l->a + l->acc + l->per * (size_t)omp_get_thread_num();
}

void rtp_cpu_dp_conv_fwd(rt_backend *b, float *ws, rt_tensor *out, double *mom, const rt_tensor *in,
                         const rt_tensor *w, const rt_tensor *bias, const rt_conv_desc *d)
{
    const layout l = lay(d);
    const int K = d->K, CRS = d->C * d->R * d->S, PQ = d->P * d->Q;
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)K * PQ, ldb = rtp_r16(PQ);
    uint32_t *A = (uint32_t *)ws;
    rtp_dp_pack_rows(A, half(CRS), w->data, CRS, K, CRS);
    const rtp_dp_geom g = {d->C, d->H, d->W, d->R, d->S, d->stride, d->pad, d->P, d->Q};
    const float *X = in->data, *Bs = bias ? bias->data : NULL;
    float *Y = out->data;
#pragma omp parallel num_threads(rtp_conv_threads(b, d->N))
    {
        uint32_t *B = mine(ws, &l);
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < d->N; n++) {
            float *y = Y + kpq * (size_t)n;
            rtp_dp_pack_cols(B, ldb, X + chw * (size_t)n, &g);
            if (Bs)
                for (int k = 0; k < K; k++)
                    for (int i = 0; i < PQ; i++) y[(size_t)k * PQ + i] = Bs[k];
            rtp_dp_gemm(y, PQ, A, half(CRS), B, ldb, K, PQ, (int)half(CRS), Bs != NULL);
            if (mom)
                rtp_cpu_plane_moments(mom + (size_t)n * K * (RT_MOMENT_FLOATS / 2), y, K,
                                      (size_t)PQ);
        }
    }
}

/* A[c][(k*R + r)*S + s] = w[k][c][R-1-r][S-1-s], in pairs */
static void pack_turned(uint32_t *A, const float *w, const rt_conv_desc *d)
{
    const int RS = d->R * d->S, KRS = d->K * RS;
    const size_t lda = half((size_t)KRS);
    for (int c = 0; c < d->C; c++)
        for (int i = 0; i < KRS; i += 2) {
            float v[2] = {0.0f, 0.0f};
            for (int h = 0; h < 2 && i + h < KRS; h++) {
                int k = (i + h) / RS, t = (i + h) % RS;
                v[h] = w[((size_t)k * d->C + c) * RS + (RS - 1 - t)];
            }
            A[(size_t)c * lda + (size_t)i / 2] = rtp_dp_pair(v[0], v[1]);
        }
}

void rtp_cpu_dp_conv_bwd_data(rt_backend *b, float *ws, rt_tensor *din, const rt_tensor *dout,
                              const rt_tensor *w, const rt_conv_desc *d)
{
    const layout l = lay(d);
    const int C = d->C, K = d->K, CRS = C * d->R * d->S, PQ = d->P * d->Q, HW = d->H * d->W;
    const size_t chw = (size_t)C * HW, kpq = (size_t)K * PQ;
    const int turn = turned(d);
    uint32_t *A = (uint32_t *)ws;
    const int k2 = turn ? (int)half((size_t)K * d->R * d->S) : (int)half((size_t)K);
    if (turn) pack_turned(A, w->data, d);
    else rtp_dp_pack_cols_t(A, half((size_t)K), w->data, CRS, K, CRS);
    const rtp_dp_geom g = turn ? (rtp_dp_geom){K, d->P, d->Q, d->R, d->S, 1, d->R - 1 - d->pad,
                                               d->H, d->W}
                               : (rtp_dp_geom){K, d->P, d->Q, 1, 1, 1, 0, d->P, d->Q};
    const size_t ldb = rtp_r16(turn ? (size_t)HW : (size_t)PQ);
    const float *DY = dout->data;
    float *DX = din->data;
#pragma omp parallel num_threads(rtp_conv_threads(b, d->N))
    {
        uint32_t *B = mine(ws, &l);
        float *cols = (float *)(B + (size_t)k2 * ldb);
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < d->N; n++) {
            float *dx = DX + chw * (size_t)n;
            rtp_dp_pack_cols(B, ldb, DY + kpq * (size_t)n, &g);
            if (turn) {
                rtp_dp_gemm(dx, HW, A, (size_t)k2, B, ldb, C, HW, k2, 0);
                continue;
            }
            rtp_dp_gemm(cols, PQ, A, (size_t)k2, B, ldb, CRS, PQ, k2, 0);
            memset(dx, 0, chw * sizeof *dx);
            rtp_cpu_col2im(dx, cols, d);
        }
    }
}

void rtp_cpu_dp_conv_bwd_filter(rt_backend *b, float *ws, rt_tensor *dw, const rt_tensor *dout,
                                const rt_tensor *in, const rt_conv_desc *d)
{
    const layout l = lay(d);
    const int K = d->K, CRS = d->C * d->R * d->S, PQ = d->P * d->Q, G = rtp_conv_groups(d->N);
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)K * PQ;
    const size_t lda = half((size_t)PQ), ldb = rtp_r16((size_t)K);
    const int unfolded = !(d->R == 1 && d->S == 1 && d->stride == 1 && d->pad == 0);
    float *accs = ws + l.a;
    const float *X = in->data, *DY = dout->data;
    float *DW = dw->data;
#pragma omp parallel num_threads(rtp_conv_threads(b, d->N))
    {
        float *cols = (float *)mine(ws, &l);
        uint32_t *A = (uint32_t *)cols + rtp_r16((size_t)CRS * PQ);
        uint32_t *B = A + rtp_r16((size_t)CRS * lda);
#pragma omp for schedule(dynamic, 1)
        for (int g = 0; g < G; g++) {
            float *acc = accs + l.accsz * (size_t)g;
            int n0 = g * RTP_CONV_GROUP, n1 = n0 + RTP_CONV_GROUP < d->N ? n0 + RTP_CONV_GROUP : d->N;
            for (int n = n0; n < n1; n++) {
                const float *x = X + chw * (size_t)n;
                if (unfolded) rtp_cpu_im2col(cols, x, d);
                rtp_dp_pack_rows(A, lda, unfolded ? cols : x, (size_t)PQ, CRS, PQ);
                rtp_dp_pack_rows_t(B, ldb, DY + kpq * (size_t)n, (size_t)PQ, K, PQ);
                rtp_dp_gemm(acc, (size_t)K, A, lda, B, ldb, CRS, K, (int)lda, n > n0);
            }
        }
        /* dw[k][crs] = the groups' dw^T[crs][k], added in order */
#pragma omp for schedule(static)
        for (int k = 0; k < K; k++)
            for (int c = 0; c < CRS; c++) {
                float s = 0.0f;
                for (int g = 0; g < G; g++) s += accs[l.accsz * (size_t)g + (size_t)c * K + k];
                DW[(size_t)k * CRS + c] = s;
            }
    }
}
