/* cpu_conv_amx_gemm.c - bf16 1x1 convolutions (unpadded, stride 1 or 2) and 3x3 stride-2
 * ones (pad 0 or 1; and the stride-1 ones of more than 128 channels, which
 * cpu_conv_amx.c does not take) on AMX tiles, as one GEMM per image (cpu_amx_tiles.c's rtp_amx_gemm);
 * cpu_conv.c calls, cpu_bf16.c decides. With col the image's lowered rows (row (c,r,s)
 * of P*Q values: x[c] at tap (r,s) and the stride, 0 in the border; for a 1x1 stride-1
 * convolution the planes themselves), rounded to bf16 as they are packed:
 *   forward:       y[K][PQ]    = w[K][CRS] col[CRS][PQ]     (A = w, B = col in pairs)
 *   input grad:    dcol[CRS][PQ] = w^T dy[K][PQ]            (A = w^T, B = dy in pairs),
 *                  folded into dx tap by tap in a fixed order
 *   weight grad:   dw^T[CRS][K] += col[CRS][PQ] dy^T        (A = col, B = dy^T in pairs)
 *                  per fixed group of RTP_CONV_GROUP images, the groups summed in order;
 *                  on small planes one product takes several images' columns side by
 *                  side (ipg: fewer passes over the accumulator, less zero padding).
 * Every sum has a fixed order, so results are the same bits for any thread count. The
 * bias gradient is the caller's (it sums the fp32 dy).
 */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "cpu_amx_tiles.h"
#include "cpu_conv_amx.h"
#include "cpu_conv_layout.h"
#include "cpu_internal.h"

int rtp_cpu_amx_gemm_takes(const rt_conv_desc *d)
{
    if (rt_conv_groups(d) != 1 || d->C < 16 || d->K < 16 || d->R != d->S) return 0;
    if (d->R == 1) return d->pad == 0 && (d->stride == 1 || d->stride == 2);
    return d->R == 3 && (d->stride == 1 || d->stride == 2) && d->pad <= 1;
}

static size_t r32(size_t n) { return (n + 31) / 32 * 32; }

/* the three GEMMs' padded sizes */
typedef struct lay {
    size_t CRS, PQ;
    size_t Mf, Sf; /* forward: K rows (to 16), CRS summed (to 32) */
    size_t N;      /* forward and input gradient: PQ columns (to 16) */
    size_t Md, Sd; /* input gradient: CRS rows (to 16), K summed (to 32) */
    size_t Sw, Nw; /* weight gradient: ipg*PQ summed (to 32), K columns (to 16) */
    int ipg;       /* images a weight-gradient product sums over (small planes: several) */
} lay;

static lay lay_of(const rt_conv_desc *d)
{
    lay l;
    l.CRS = (size_t)d->C * d->R * d->S;
    l.PQ = (size_t)d->P * d->Q;
    l.Mf = rtp_r16((size_t)d->K), l.Sf = r32(l.CRS), l.N = rtp_r16(l.PQ);
    l.Md = rtp_r16(l.CRS), l.Sd = r32((size_t)d->K);
    l.ipg = l.PQ >= 512 ? 1 : (int)(512 / l.PQ);
    if (l.ipg > RTP_CONV_GROUP) l.ipg = RTP_CONV_GROUP;
    l.Sw = r32((size_t)l.ipg * l.PQ), l.Nw = rtp_r16((size_t)d->K);
    return l;
}

/* floats per thread: forward (B pairs, C, two lowered rows), input gradient (B, C),
 * weight gradient (A in bf16, B pairs, one lowered row, dy's K bf16 rows, one row of sums) */
static size_t fwd_floats(const lay *l)
{
    return rtp_r16(l->Sf / 2 * l->N) + rtp_r16(l->Mf * l->N) + 2 * rtp_r16(l->PQ);
}
static size_t bwd_floats(const lay *l) { return rtp_r16(l->Sd / 2 * l->N) + rtp_r16(l->Md * l->N); }
static size_t wg_floats(const lay *l)
{
    return rtp_r16(l->Md * l->Sw / 2) + rtp_r16(l->Sw / 2 * l->Nw) + rtp_r16(l->PQ) +
           rtp_r16(l->Sw / 2 * l->Nw) + l->Nw;
}
static size_t per_thread(const lay *l)
{
    size_t a = fwd_floats(l), b = bwd_floats(l), c = wg_floats(l);
    a = a > b ? a : b;
    return a > c ? a : c;
}
static size_t weight_floats(const lay *l)
{
    size_t a = rtp_r16(l->Mf * l->Sf / 2), b = rtp_r16(l->Md * l->Sd / 2);
    return a > b ? a : b;
}
static size_t acc_floats(const lay *l) { return rtp_r16(l->Md * l->Nw); }
static size_t nthreads(int threads) { return (size_t)(threads > 0 ? threads : 1); }

size_t rtp_cpu_amx_gemm_workspace(int threads, const rt_conv_desc *d)
{
    const lay l = lay_of(d);
    return (nthreads(threads) * per_thread(&l) + weight_floats(&l) +
            (size_t)rtp_conv_groups(d->N) * acc_floats(&l)) *
           sizeof(float);
}

/* the valid output range [*a, *b) of one tap offset o (input index = i*stride - pad + o) */
static void valid(int n_out, int n_in, int stride, int pad, int o, int *a, int *b)
{
    int lo = 0, hi = n_out;
    while (lo < n_out && lo * stride - pad + o < 0) lo++;
    while (hi > lo && (hi - 1) * stride - pad + o >= n_in) hi--;
    *a = lo, *b = hi;
}

/* row of col for crs (c, r, s) of image x (C x H x W): P*Q values; the planes themselves
 * for a 1x1 stride-1 convolution (tmp unused), else written into tmp */
static const float *lowered(float *tmp, const float *x, const rt_conv_desc *d, size_t crs)
{
    const int RS = d->R * d->S, c = (int)(crs / RS), r = (int)(crs % RS) / d->S,
              s = (int)(crs % d->S);
    const float *xc = x + (size_t)c * d->H * d->W;
    if (d->stride == 1 && d->R == 1) return xc;
    int p0, p1, q0, q1;
    valid(d->P, d->H, d->stride, d->pad, r, &p0, &p1);
    valid(d->Q, d->W, d->stride, d->pad, s, &q0, &q1);
    if (p0 > 0 || q0 > 0 || p1 < d->P || q1 < d->Q)
        memset(tmp, 0, (size_t)d->P * d->Q * sizeof *tmp);
    if (p1 > p0 && q1 > q0)
        rtp_conv_copy_rows(tmp + (size_t)p0 * d->Q + q0, (size_t)d->Q,
                           xc + (size_t)(p0 * d->stride - d->pad + r) * d->W +
                               (q0 * d->stride - d->pad + s),
                           (size_t)d->stride * d->W, p1 - p0, q1 - q0, d->stride);
    return tmp;
}

/* A [rows][lda] bf16 <- src [rows][n] (or, transposed, src [n][rows]); the rest 0 */
static void pack_a(uint16_t *A, size_t rows_r, size_t lda, const float *src, size_t rows, size_t n,
                   int transposed)
{
    memset(A, 0, rows_r * lda * 2);
    for (size_t r = 0; r < rows; r++)
        if (transposed)
            for (size_t i = 0; i < n; i++)
                A[r * lda + i] = (uint16_t)rtp_bf16_bits(src[i * rows + r]);
        else rtp_amx_bf16_row(A + r * lda, src + r * n, n);
}

/* ---- forward ---- */

void rtp_cpu_amx_gemm_fwd(rt_backend *b, float *ws, rt_tensor *out, double *mom,
                          const rt_tensor *in, const rt_tensor *w, const rt_tensor *bias,
                          const rt_conv_desc *d)
{
    const lay l = lay_of(d);
    const size_t per = per_thread(&l);
    uint16_t *Wa = (uint16_t *)(ws + nthreads(b->threads) * per);
    pack_a(Wa, l.Mf, l.Sf, w->data, (size_t)d->K, l.CRS, 0);
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)d->K * l.PQ;
    const size_t mom_img = (size_t)d->K * (RT_MOMENT_FLOATS / 2);
    const float *X = in->data, *B = bias ? bias->data : NULL;
    float *Y = out->data;
#pragma omp parallel num_threads(rtp_conv_threads(b, d->N))
    {
        float *mine = ws + per * (size_t)omp_get_thread_num();
        uint32_t *Bp = (uint32_t *)mine;
        float *C = mine + rtp_r16(l.Sf / 2 * l.N), *t0 = C + rtp_r16(l.Mf * l.N),
              *t1 = t0 + rtp_r16(l.PQ);
        memset(Bp, 0, l.Sf / 2 * l.N * 4);
        rtp_amx_config_full();
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < d->N; n++) {
            const float *x = X + chw * (size_t)n;
            for (size_t j = 0; 2 * j < l.CRS; j++) {
                const float *a = lowered(t0, x, d, 2 * j);
                const float *c = 2 * j + 1 < l.CRS ? lowered(t1, x, d, 2 * j + 1) : NULL;
                rtp_amx_bf16_pairs(Bp + j * l.N, a, c, l.PQ);
            }
            rtp_amx_gemm(Wa, l.Sf, Bp, l.N, C, l.N, l.Mf, l.N, l.Sf, 0);
            float *y = Y + kpq * (size_t)n;
            rtp_conv_compact(y, C, d->K, d->P, d->Q, d->Q, l.N, B);
            if (mom) rtp_cpu_plane_moments(mom + mom_img * (size_t)n, y, d->K, l.PQ);
        }
        _tile_release();
    }
}

/* ---- input gradient ---- */

/* dx (C x H x W) <- the fold of dcol (rows CRS of ld values): each tap's values added
 * at its input places, taps in order (c, r, s) */
static void fold(float *dx, const float *dcol, size_t ld, const rt_conv_desc *d)
{
    const size_t hw = (size_t)d->H * d->W;
    if (d->R == 1 && d->stride == 1) {
        for (int c = 0; c < d->C; c++) memcpy(dx + c * hw, dcol + c * ld, hw * sizeof *dx);
        return;
    }
    memset(dx, 0, (size_t)d->C * hw * sizeof *dx);
    if (d->R == 1) { /* stride 2, unpadded: one tap, each input place at most once */
        for (int c = 0; c < d->C; c++)
            rtp_conv_scatter_rows2(dx + c * hw, 2 * (size_t)d->W, dcol + c * ld, (size_t)d->Q, d->P,
                                   d->Q);
        return;
    }
    const int st = d->stride;
    for (int c = 0; c < d->C; c++)
        for (int r = 0; r < d->R; r++)
            for (int s = 0; s < d->S; s++) {
                const float *src = dcol + ((size_t)(c * d->R + r) * d->S + s) * ld;
                int p0, p1, q0, q1;
                valid(d->P, d->H, st, d->pad, r, &p0, &p1);
                valid(d->Q, d->W, st, d->pad, s, &q0, &q1);
                for (int p = p0; p < p1; p++) {
                    float *o = dx + c * hw + (size_t)(p * st - d->pad + r) * d->W - d->pad + s;
                    const float *v = src + (size_t)p * d->Q;
                    for (int q = q0; q < q1; q++) o[q * st] += v[q];
                }
            }
}

void rtp_cpu_amx_gemm_bwd_data(rt_backend *b, float *ws, rt_tensor *din, const rt_tensor *dout,
                               const rt_tensor *w, const rt_conv_desc *d)
{
    const lay l = lay_of(d);
    const size_t per = per_thread(&l);
    uint16_t *Wt = (uint16_t *)(ws + nthreads(b->threads) * per);
    pack_a(Wt, l.Md, l.Sd, w->data, l.CRS, (size_t)d->K, 1);
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)d->K * l.PQ;
    const float *DY = dout->data;
    float *DX = din->data;
#pragma omp parallel num_threads(rtp_conv_threads(b, d->N))
    {
        float *mine = ws + per * (size_t)omp_get_thread_num();
        uint32_t *Bp = (uint32_t *)mine;
        float *C = mine + rtp_r16(l.Sd / 2 * l.N);
        memset(Bp, 0, l.Sd / 2 * l.N * 4);
        rtp_amx_config_full();
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < d->N; n++) {
            const float *dy = DY + kpq * (size_t)n;
            for (int k = 0; k < d->K; k += 2)
                rtp_amx_bf16_pairs(Bp + (size_t)k / 2 * l.N, dy + k * l.PQ,
                                   k + 1 < d->K ? dy + (k + 1) * l.PQ : NULL, l.PQ);
            rtp_amx_gemm(Wt, l.Sd, Bp, l.N, C, l.N, l.Md, l.N, l.Sd, 0);
            fold(DX + chw * (size_t)n, C, l.N, d);
        }
        _tile_release();
    }
}

/* ---- weight gradient ---- */

void rtp_cpu_amx_gemm_bwd_filter(rt_backend *b, float *ws, rt_tensor *dw, const rt_tensor *dout,
                                 const rt_tensor *in, const rt_conv_desc *d)
{
    const lay l = lay_of(d);
    const size_t per = per_thread(&l), accsz = acc_floats(&l);
    const int G = rtp_conv_groups(d->N);
    float *accs = ws + nthreads(b->threads) * per + weight_floats(&l);
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)d->K * l.PQ;
    const float *X = in->data, *DY = dout->data;
    float *DW = dw->data;
#pragma omp parallel num_threads(rtp_conv_threads(b, G))
    {
        float *mine = ws + per * (size_t)omp_get_thread_num();
        uint16_t *A = (uint16_t *)mine;
        uint32_t *Bp = (uint32_t *)(mine + rtp_r16(l.Md * l.Sw / 2));
        float *t0 = (float *)Bp + rtp_r16(l.Sw / 2 * l.Nw);
        uint16_t *h = (uint16_t *)(t0 + rtp_r16(l.PQ));
        memset(A, 0, l.Md * l.Sw * 2);
        memset(Bp, 0, l.Sw / 2 * l.Nw * 4);
        memset(h, 0, l.Sw * 2 * (size_t)d->K);
        rtp_amx_config_full();
#pragma omp for schedule(dynamic, 1)
        for (int gi = 0; gi < G; gi++) {
            const int n1 = rtp_conv_group_end(gi, d->N);
            float *acc = memset(accs + accsz * (size_t)gi, 0, accsz * sizeof(float));
            for (int n = gi * RTP_CONV_GROUP; n < n1; n += l.ipg) {
                const int cnt = n1 - n < l.ipg ? n1 - n : l.ipg;
                const size_t len = (size_t)cnt * l.PQ; /* summed positions, images side by side */
                if (cnt < l.ipg) { /* a short last product: no columns left from the last */
                    memset(A, 0, l.Md * l.Sw * 2);
                    memset(Bp, 0, l.Sw / 2 * l.Nw * 4);
                    memset(h, 0, l.Sw * 2 * (size_t)d->K);
                }
                for (int i = 0; i < cnt; i++) {
                    const float *x = X + chw * (size_t)(n + i);
                    for (size_t crs = 0; crs < l.CRS; crs++)
                        rtp_amx_bf16_row(A + crs * l.Sw + i * l.PQ, lowered(t0, x, d, crs), l.PQ);
                }
                /* dy^T: dy's rows in bf16 (images side by side), then pairs of positions
                 * down the columns */
                for (int k = 0; k < d->K; k++)
                    for (int i = 0; i < cnt; i++)
                        rtp_amx_bf16_row(h + k * l.Sw + i * l.PQ,
                                         DY + kpq * (size_t)(n + i) + k * l.PQ, l.PQ);
                rtp_amx_transpose32(Bp, l.Nw, (const uint32_t *)h, l.Sw / 2, d->K, (len + 1) / 2);
                rtp_amx_gemm(A, l.Sw, Bp, l.Nw, acc, l.Nw, l.Md, l.Nw, l.Sw, 1);
            }
        }
        _tile_release();
        /* dw[k][crs] = the groups' sums, in group order */
        rtp_amx_group_sums(DW, accs, accsz, G, l.CRS, l.Nw, d->K,
                           (float *)h + rtp_r16(l.Sw / 2 * l.Nw));
    }
}
