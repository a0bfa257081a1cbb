/* cpu_conv_s2.c - direct stride-2 convolutions on the CPU, without im2col or OpenBLAS:
 * 3x3 with a border of 0-2 (ResNet's downsampling convolutions) and the unpadded 1x1
 * (its projection shortcuts); forward, input gradient and weight gradient, with the
 * loops of cpu_conv_kern.c.
 *
 * Polyphase: with stride 2, output (p,q) reads the padded input at (2p+r, 2q+s). Each
 * padded input plane is split once into its phases ph[a][b][u][v] = xpad[2u+a][2v+b]
 * (all 4 for a 3x3 filter, only [0][0] for a 1x1); tap (r,s) then reads phase
 * (r%2, s%2) at (p + r/2, q + s/2), a stride-1 read. The phase planes have rows
 * wq = Q + E wide (E = (R-1)/2) and the output is computed over the grid of P x wq
 * positions, i = p*wq + q reading x[i + off(t)] with off(t) = phase*ps + (r/2)*wq + s/2,
 * so the stride-1 path's forward loop runs unchanged (cpu_conv_direct.c explains the
 * grid); the E extra columns per row are dropped when the result is copied out.
 * - weight gradient: the same phase planes, dy transposed to [p*Q + q][K], and
 *   rtp_convk_wgrad_taps over the kept positions only; per fixed group of RTP_CONV_GROUP images,
 *   groups summed in order: deterministic for any thread count;
 * - input gradient: split dx's padded plane into the same phases; phase (a,b) is a
 *   stride-1 convolution of dy (bordered by E at the top and left) with the taps
 *   r = a, s = b (mod 2), w'[c][k] = w[k][c][r][s] at offset (E - r/2, E - s/2): 4, 2,
 *   2 and 1 taps for a 3x3 filter, so no multiply is spent on the zeros a transposed
 *   convolution would insert. Each phase runs through the forward loop and is scattered
 *   into dx; a phase without taps (3 of 4 for a 1x1) is 0.
 * Which convolutions take this path: rtp_cpu_conv_s2().
 */
#include <omp.h>
#include <string.h>

#include "cpu_conv_kern.h"
#include "cpu_conv_layout.h"
#include "cpu_internal.h"

const rtp_convk *rtp_cpu_conv_s2(rt_backend *b, const rt_conv_desc *d)
{
    const rtp_cpu *c = b->impl;
    /* stride 2, 3x3 with a border of at most 2 or 1x1 without one, up to
     * RTP_CONV_MAX_CH channels; everything else keeps im2col + sgemm */
    if (rt_conv_groups(d) > 1) return NULL; /* grouped: cpu_conv.c, cpu_conv_dw.c */
    if (!c || !c->convk || d->stride != 2 || d->C > RTP_CONV_MAX_CH || d->K > RTP_CONV_MAX_CH ||
        d->P < 1 || d->Q < 1)
        return NULL;
    if (d->R == 3 && d->S == 3 && d->pad >= 0 && d->pad <= 2) return c->convk;
    if (d->R == 1 && d->S == 1 && d->pad == 0) return c->convk;
    return NULL;
}

/* Geometry and scratch layout (floats): per thread [phase planes or bordered dy |
 * grid output | dyT], then packed weights, then the weight-gradient group partials. */
typedef struct plan {
    int E, nph, T;      /* border, phases, taps (R*S) */
    int off[9];         /* forward tap offsets on the phase planes */
    int wq, rin;        /* forward: phase row width, rows */
    size_t ps, cs;      /* floats per phase plane, per channel (all phases + tail) */
    size_t L, nvec, ys; /* forward grid: positions, vectors, floats per output row */
    int wg, U, rd;      /* input gradient: grid width, phase rows, bordered dy rows */
    size_t csd, nvecb, ysb;
    int bT[4]; /* input gradient: taps of each phase, their filter indices */
    int btap[4][4], boff[4][4];
    int Kr, Cr, Kv;
    size_t xin, yout, per_thread, wpk, acc, accsz;
} plan;

static int imax(int a, int b) { return a > b ? a : b; }

static plan plan_of(const rtp_convk *k, const rt_conv_desc *d, int threads)
{
    plan p;
    const int V = k->vec, S = d->S;
    p.E = (d->R - 1) / 2;
    p.nph = d->R == 3 ? 4 : 1;
    p.T = d->R * S;
    p.wq = d->Q + p.E;
    p.rin = d->P + p.E;
    p.ps = (size_t)p.rin * p.wq;
    p.cs = rtp_r16((size_t)p.nph * p.ps + 16 + 2); /* the last vector's overreach */
    for (int t = 0; t < p.T; t++) {
        int r = t / S, s = t % S, ph = p.nph == 4 ? (r % 2) * 2 + s % 2 : 0;
        p.off[t] = ph * (int)p.ps + (r / 2) * p.wq + s / 2;
    }
    p.L = (size_t)d->P * p.wq;
    p.nvec = (p.L + (size_t)V - 1) / (size_t)V;
    p.ys = rtp_r16(p.nvec * (size_t)V);

    p.U = (d->pad + d->H + 1) / 2;
    p.wg = imax((d->pad + d->W + 1) / 2, d->Q) + p.E;
    p.rd = imax(p.U, d->P) + p.E;
    p.csd = rtp_r16((size_t)p.rd * p.wg + 16 + 2);
    p.nvecb = ((size_t)p.U * p.wg + (size_t)V - 1) / (size_t)V;
    p.ysb = rtp_r16(p.nvecb * (size_t)V);
    for (int ph = 0; ph < 4; ph++) {
        p.bT[ph] = 0;
        for (int t = 0; t < p.T; t++) {
            int r = t / S, s = t % S;
            if (r % 2 != ph / 2 || s % 2 != ph % 2) continue;
            p.btap[ph][p.bT[ph]] = t;
            p.boff[ph][p.bT[ph]++] = (p.E - r / 2) * p.wg + (p.E - s / 2);
        }
    }

    p.Kr = rtp_round_up(d->K, RTP_CONVK_KB);
    p.Cr = rtp_round_up(d->C, RTP_CONVK_KB);
    p.Kv = rtp_round_up(d->K, V);
    size_t xf = (size_t)d->C * p.cs, xb = (size_t)d->K * p.csd;
    size_t yf = (size_t)p.Kr * p.ys, yb = (size_t)p.Cr * p.ysb;
    p.xin = rtp_r16(xf > xb ? xf : xb);
    p.yout = rtp_r16(yf > yb ? yf : yb);
    p.per_thread = p.xin + p.yout + rtp_r16(p.L * (size_t)p.Kv);
    size_t wf = (size_t)p.Kr * d->C * p.T, wb = (size_t)p.Cr * d->K * p.T;
    p.wpk = (size_t)(threads > 0 ? threads : 1) * p.per_thread;
    p.acc = p.wpk + rtp_r16(wf > wb ? wf : wb);
    p.accsz = rtp_r16((size_t)d->C * p.T * p.Kv + (size_t)d->K);
    return p;
}

size_t rtp_cpu_conv_s2_workspace(rt_backend *b, const rtp_convk *k, const rt_conv_desc *d)
{
    plan p = plan_of(k, d, b->threads);
    return (p.acc + (size_t)rtp_conv_groups(d->N) * p.accsz) * sizeof(float);
}

/* xp <- the phase planes of the C planes of x (H x W, border pad): the values only, into
 * a buffer that zero_phases cleared (the borders and the tail are the same zeros for
 * every image). */
static void split_phases(float *restrict xp, const float *restrict x, const rt_conv_desc *d,
                         const plan *p)
{
    const int H = d->H, W = d->W, pad = d->pad, wq = p->wq;
    for (int c = 0; c < d->C; c++) {
        const float *xc = x + (size_t)c * H * W;
        for (int ph = 0; ph < p->nph; ph++) {
            const int a = ph / 2, bb = ph % 2;
            /* rows u0 <= u < u1 and columns v0 <= v < v1 are inside x (h = 2u + a - pad,
             * w = 2v + bb - pad) */
            int u0 = (pad - a + 1) / 2, u1 = (H + pad - a + 1) / 2;
            int v0 = (pad - bb + 1) / 2, v1 = (W + pad - bb + 1) / 2;
            u0 = u0 > 0 ? u0 : 0, v0 = v0 > 0 ? v0 : 0;
            u1 = u1 < p->rin ? u1 : p->rin, v1 = v1 < wq ? v1 : wq;
            float *o = xp + (size_t)c * p->cs + (size_t)ph * p->ps;
            rtp_conv_copy_rows(o + (size_t)u0 * wq + v0, (size_t)wq,
                               xc + (size_t)(2 * u0 + a - pad) * W + 2 * v0 + bb - pad,
                               (size_t)2 * W, u1 - u0, v1 - v0, 2);
        }
    }
}

/* zero the C channels' phase planes and tails that split_phases then fills */
static void zero_phases(float *xp, const rt_conv_desc *d, const plan *p)
{
    memset(xp, 0, (size_t)d->C * p->cs * sizeof *xp);
}

/* dyp <- the K planes of dy (P x Q) at row and column E of planes wg wide, rd rows and
 * a tail, 0 elsewhere: the values only, into a buffer cleared once per thread and call
 * (the zeros are the same for every image). */
static void border_dy(float *restrict dyp, const float *restrict dy, const rt_conv_desc *d,
                      const plan *p)
{
    const size_t at = (size_t)p->E * p->wg + p->E, pq = (size_t)d->P * d->Q;
    for (int k = 0; k < d->K; k++)
        rtp_conv_copy_rows(dyp + (size_t)k * p->csd + at, (size_t)p->wg, dy + (size_t)k * pq,
                           (size_t)d->Q, d->P, d->Q, 1);
}

/* The dx positions of phase (a,b) <- the phase's grid (C rows ys apart, wg wide): dx[c][h][w]
 * for h = h0, h0 + 2, ... and w = w0, w0 + 2, ... from grid row (h + pad) / 2, column
 * (w + pad) / 2, both rising by 1 per step of 2. */
static void scatter_phase(float *restrict dx, const float *restrict grid, const rt_conv_desc *d,
                          const plan *p, int a, int bb)
{
    const int H = d->H, W = d->W, pad = d->pad;
    const int h0 = ((a - pad) % 2 + 2) % 2, w0 = ((bb - pad) % 2 + 2) % 2;
    for (int c = 0; c < d->C; c++)
        rtp_conv_scatter_rows2(dx + ((size_t)c * H + h0) * W + w0, (size_t)2 * W,
                               grid + (size_t)c * p->ysb + (size_t)((h0 + pad) / 2) * p->wg +
                                   (w0 + pad) / 2,
                               (size_t)p->wg, (H - h0 + 1) / 2, (W - w0 + 1) / 2);
}

static const int identity[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};

rt_status rtp_cpu_conv_s2_fwd(rt_backend *b, const rtp_convk *k, rt_tensor *out, double *mom,
                              const rt_tensor *in, const rt_tensor *w, const rt_tensor *bias,
                              const rt_conv_desc *d, rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_s2_workspace(b, k, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const plan p = plan_of(k, d, b->threads);
    const float *wpk = ws + p.wpk, *X = in->data, *B = bias ? bias->data : NULL;
    float *Y = out->data;
    rtp_conv_pack(ws + p.wpk, w->data, d->K, p.Kr, d->C, p.T, identity, p.T, 0);
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)d->K * d->P * d->Q;
#pragma omp parallel num_threads(rtp_conv_threads(b, d->N))
    {
        float *xp = ws + p.per_thread * (size_t)omp_get_thread_num(), *grid = xp + p.xin;
        zero_phases(xp, d, &p);
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < d->N; n++) {
            split_phases(xp, X + chw * (size_t)n, d, &p);
            k->fwd(xp, p.cs, d->C, p.off, p.T, wpk, grid, p.ys, p.Kr, p.nvec);
            rtp_conv_compact(Y + kpq * (size_t)n, grid, d->K, d->P, d->Q, p.wq, p.ys, B);
            if (mom)
                rtp_cpu_plane_moments(mom + (size_t)n * d->K * (RT_MOMENT_FLOATS / 2),
                                      Y + kpq * (size_t)n, d->K, (size_t)d->P * d->Q);
        }
    }
    return RT_OK;
}

rt_status rtp_cpu_conv_s2_bwd_data(rt_backend *b, const rtp_convk *k, rt_tensor *din,
                                   const rt_tensor *dout, const rt_tensor *w, const rt_conv_desc *d,
                                   rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_s2_workspace(b, k, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const plan p = plan_of(k, d, b->threads);
    const float *wph[4];
    float *at = ws + p.wpk;
    for (int ph = 0; ph < 4; ph++) { /* each phase's taps, transposed: [Cr/KB][K][bT][KB] */
        wph[ph] = at;
        rtp_conv_pack(at, w->data, d->C, p.Cr, d->K, p.T, p.btap[ph], p.bT[ph], 1);
        at += (size_t)p.Cr * d->K * p.bT[ph];
    }
    const float *DY = dout->data;
    float *DX = din->data;
    const int untapped = !p.bT[0] || !p.bT[1] || !p.bT[2] || !p.bT[3];
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)d->K * d->P * d->Q;
#pragma omp parallel num_threads(rtp_conv_threads(b, d->N))
    {
        float *dyp = ws + p.per_thread * (size_t)omp_get_thread_num(), *grid = dyp + p.xin;
        memset(dyp, 0, (size_t)d->K * p.csd * sizeof *dyp); /* border_dy's zeros */
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < d->N; n++) {
            float *dx = DX + chw * (size_t)n;
            border_dy(dyp, DY + kpq * (size_t)n, d, &p);
            if (untapped) /* phases without taps (a 1x1's three) are 0 */
                memset(dx, 0, chw * sizeof *dx);
            for (int ph = 0; ph < 4; ph++) {
                if (!p.bT[ph]) continue;
                k->fwd(dyp, p.csd, d->K, p.boff[ph], p.bT[ph], wph[ph], grid, p.ysb, p.Cr, p.nvecb);
                scatter_phase(dx, grid, d, &p, ph / 2, ph % 2);
            }
        }
    }
    return RT_OK;
}

typedef struct wgrad_ctx {
    const rtp_convk *k;
    const plan *p;
    const rt_conv_desc *d;
} wgrad_ctx;

static void wgrad_image(const void *ctx, float *xp, const float *dyT, const float *x, float *acc)
{
    const wgrad_ctx *c = ctx;
    const plan *p = c->p;
    split_phases(xp, x, c->d, p);
    c->k->wgrad_taps(dyT, p->Kv, c->d->P, c->d->Q, xp, p->cs, p->wq, c->d->C, p->off, p->T, acc);
}

rt_status rtp_cpu_conv_s2_bwd_filter(rt_backend *b, const rtp_convk *k, rt_tensor *dw,
                                     rt_tensor *dbias, const rt_tensor *dout, const rt_tensor *in,
                                     const rt_conv_desc *d, rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_s2_workspace(b, k, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const plan p = plan_of(k, d, b->threads);
    const wgrad_ctx c = {k, &p, d};
    const rtp_conv_wgrad_layout lay = {p.per_thread, p.xin + p.yout, p.acc,
                                       p.accsz,      d->C * p.T,     p.Kv};
    for (int t = 0; t < (b->threads > 0 ? b->threads : 1); t++) /* wgrad_image's xp */
        zero_phases(ws + p.per_thread * (size_t)t, d, &p);
    rtp_conv_wgrad_run(b, d, dw, dbias, dout, in, ws, &lay, wgrad_image, &c);
    return RT_OK;
}
