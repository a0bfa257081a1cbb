/* cpu_bn_small.c - batch norm's elementwise passes on planes of 16 values or fewer
 * (MobileNetV2's from 4x4 down to 1x1): whole channel blocks at a time, not a call per
 * plane.
 *
 * cpu_bn.c takes such planes channel by channel and calls its row loops once per (n, c)
 * plane: on a 1x1 plane that is a call, a 16-lane set-up and one value. Here the
 * channels of a block (RTP_BN_BLOCK of them) have their per-channel constants spread
 * once to one per value of a plane, and each image's block, C_block * H*W contiguous
 * values, is one vector loop. Every value goes through the same operations, in the same
 * order, as in cpu_bn.c's row loops, and each channel's sums are taken plane by plane
 * and added in image order as bwd_channels adds them: the bits are cpu_bn.c's, for any
 * thread count (blocks are independent). A residual add fused after the norm likewise:
 * the forward adds the other term per value, the backward keeps the masked gradient
 * (cpu_bn.c's grads_keep) and takes the sums and dx from it.
 */
#include <string.h>

#include "cpu_internal.h"

#define RTP_BN_BLOCK 64
#define SMALL_HW 16 /* the largest plane taken here */
#define SPREAD (RTP_BN_BLOCK * SMALL_HW)

/* y = v * k, v = x * g + sh, k = v > 0 ? 1 : lo: cpu_bn.c's row_affine with g, sh per value */
RTP_SPAN static void affine_v(float *restrict y, const float *restrict x, const float *restrict g,
                              const float *restrict sh, int n, float lo)
{
    for (int i = 0; i < n; i++) {
        float v = x[i] * g[i] + sh[i];
        y[i] = v * (v > 0.0f ? 1.0f : lo);
    }
}

/* y = v * k, v = (x * g + sh) + s: cpu_bn.c's row_affine_add with g, sh per value */
RTP_SPAN static void affine_add_v(float *restrict y, const float *restrict x,
                                  const float *restrict s, const float *restrict g,
                                  const float *restrict sh, int n, float lo)
{
    for (int i = 0; i < n; i++) {
        float v = (x[i] * g[i] + sh[i]) + s[i];
        y[i] = v * (v > 0.0f ? 1.0f : lo);
    }
}

/* keep = d = (dy (+ dy2)) * k, k from the output y (y > 0 ? 1 : lo), and e = x - mean:
 * cpu_bn.c's grads_keep per value (dy2 NULL: none) */
RTP_SPAN static void grads_keep_v(float *restrict keep, float *restrict e, const float *restrict dy,
                                  const float *restrict dy2, const float *restrict y,
                                  const float *restrict x, const float *restrict mean, int n,
                                  float lo)
{
    if (dy2)
        for (int i = 0; i < n; i++) {
            keep[i] = (dy[i] + dy2[i]) * (y[i] > 0.0f ? 1.0f : lo);
            e[i] = x[i] - mean[i];
        }
    else
        for (int i = 0; i < n; i++) {
            keep[i] = dy[i] * (y[i] > 0.0f ? 1.0f : lo);
            e[i] = x[i] - mean[i];
        }
}

/* d = dy * k (k from v = x * g + sh) and e = x - mean: row_grads' two terms per value */
RTP_SPAN static void grads_v(float *restrict d, float *restrict e, const float *restrict dy,
                             const float *restrict x, const float *restrict g,
                             const float *restrict sh, const float *restrict mean, int n, float lo)
{
    for (int i = 0; i < n; i++) {
        float v = x[i] * g[i] + sh[i];
        d[i] = dy[i] * (v > 0.0f ? 1.0f : lo);
        e[i] = x[i] - mean[i];
    }
}

/* dx = kk * (m*d - a - xh*bq), xh = (x - mean)*inv, d as grads_v: row_dx per value */
typedef struct dx_consts {
    float g[SPREAD], sh[SPREAD], mean[SPREAD], inv[SPREAD], kk[SPREAD], a[SPREAD], bq[SPREAD];
} dx_consts;

RTP_SPAN static void dx_v(float *restrict dx, const float *restrict dy, const float *restrict x,
                          const dx_consts *restrict k, int n, float m, float lo)
{
    for (int i = 0; i < n; i++) {
        float v = x[i] * k->g[i] + k->sh[i], d = dy[i] * (v > 0.0f ? 1.0f : lo);
        float xh = (x[i] - k->mean[i]) * k->inv[i];
        dx[i] = k->kk[i] * (m * d - k->a[i] - xh * k->bq[i]);
    }
}

/* o[c * hw + i] = v[c] for c < nc, i < hw */
static void spread(float *o, const float *v, int nc, int hw)
{
    for (int c = 0; c < nc; c++)
        for (int i = 0; i < hw; i++) o[c * hw + i] = v[c];
}

int rtp_cpu_bn_small(size_t hw) { return hw <= SMALL_HW; }

static int blocks(int C) { return (C + RTP_BN_BLOCK - 1) / RTP_BN_BLOCK; }

void rtp_cpu_bn_small_out(rt_backend *b, float *Y, const float *X, const float *S, int N, int C,
                          int hw, const float *G, const float *Bt, const float *SM, const float *SI,
                          float lo)
{
#pragma omp parallel for schedule(static) num_threads(b->threads)
    for (int blk = 0; blk < blocks(C); blk++) {
        const int c0 = blk * RTP_BN_BLOCK, nc = C - c0 < RTP_BN_BLOCK ? C - c0 : RTP_BN_BLOCK;
        float g[RTP_BN_BLOCK], sh[RTP_BN_BLOCK], gv[SPREAD], shv[SPREAD];
        for (int c = 0; c < nc; c++) /* fwd_out's constants */
            g[c] = G[c0 + c] * SI[c0 + c], sh[c] = Bt[c0 + c] - SM[c0 + c] * g[c];
        spread(gv, g, nc, hw), spread(shv, sh, nc, hw);
        for (int n = 0; n < N; n++) {
            const size_t at = ((size_t)n * C + c0) * hw;
            if (S) affine_add_v(Y + at, X + at, S + at, gv, shv, nc * hw, lo);
            else affine_v(Y + at, X + at, gv, shv, nc * hw, lo);
        }
    }
}

void rtp_cpu_bn_small_bwd(rt_backend *b, const rtp_bn_bwd_args *A)
{
    const int C = A->C, hw = (int)A->hw;
#pragma omp parallel for schedule(static) num_threads(b->threads)
    for (int blk = 0; blk < blocks(C); blk++) {
        const int c0 = blk * RTP_BN_BLOCK, nc = C - c0 < RTP_BN_BLOCK ? C - c0 : RTP_BN_BLOCK;
        float v[RTP_BN_BLOCK], d[SPREAD], e[SPREAD];
        dx_consts k;
        /* bwd_sums' and bwd_dx's constants (the relu's mask when Bt is given) */
        for (int c = 0; c < nc; c++) v[c] = A->Bt ? A->G[c0 + c] * A->SI[c0 + c] : 0.0f;
        spread(k.g, v, nc, hw);
        for (int c = 0; c < nc; c++)
            v[c] = A->Bt ? A->Bt[c0 + c] - A->SM[c0 + c] * k.g[c * hw] : 0.0f;
        spread(k.sh, v, nc, hw);
        spread(k.mean, A->SM + c0, nc, hw), spread(k.inv, A->SI + c0, nc, hw);
        double sdy[RTP_BN_BLOCK] = {0}, sdyx[RTP_BN_BLOCK] = {0};
        for (int n = 0; n < A->N; n++) {
            const size_t at = ((size_t)n * C + c0) * hw;
            /* with a fused add, d is the kept gradient itself */
            float *dd = A->KEEP ? A->KEEP + at : d;
            if (A->KEEP)
                grads_keep_v(dd, e, A->DY + at, A->DY2 ? A->DY2 + at : NULL, A->Y + at, A->X + at,
                             k.mean, nc * hw, A->lo);
            else grads_v(d, e, A->DY + at, A->X + at, k.g, k.sh, k.mean, nc * hw, A->lo);
            for (int c = 0; c < nc; c++) { /* row_grads' sums of one plane, then the channel's */
                double ta = 0.0, tq = 0.0;
                /* a plane of 16 is one step of row_grads' vector loop, which rounds each
                 * product to float; the shorter ones are its scalar tail alone */
                for (int i = c * hw; i < (c + 1) * hw; i++)
                    ta += dd[i], tq += hw == 16 ? (double)(dd[i] * e[i]) : (double)dd[i] * e[i];
                sdy[c] += ta, sdyx[c] += tq;
            }
        }
        for (int c = 0; c < nc; c++) { /* bwd_finish */
            A->DB[c0 + c] = (float)sdy[c];
            A->DG[c0 + c] = (float)(sdyx[c] * A->SI[c0 + c]);
            v[c] = A->G[c0 + c] * A->SI[c0 + c] / (float)A->M;
        }
        spread(k.kk, v, nc, hw), spread(k.a, A->DB + c0, nc, hw), spread(k.bq, A->DG + c0, nc, hw);
        for (int n = 0; n < A->N; n++) {
            const size_t at = ((size_t)n * C + c0) * hw;
            if (A->KEEP) /* masked already (bwd_dx) */
                dx_v(A->DX + at, A->KEEP + at, A->X + at, &k, nc * hw, (float)A->M, 1.0f);
            else dx_v(A->DX + at, A->DY + at, A->X + at, &k, nc * hw, (float)A->M, A->lo);
        }
    }
}
