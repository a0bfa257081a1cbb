/* cpu_conv_direct.c - direct 3x3 stride-1 convolution on the CPU, without im2col or
 * OpenBLAS: forward, input gradient and weight gradient.
 *
 * im2col + sgemm (cpu_conv.c) copies every input value 9 times and hands OpenBLAS
 * GEMMs too small for its packing to pay back (ResNet-20's 16-64-channel convolutions:
 * K x 9C x HW = 16 x 144 x 1024 ... 64 x 576 x 64). Here each image's planes are copied
 * once into a zero-bordered buffer of rows Wp = W + 2 pad wide, and the output is
 * computed over the same padded-width grid: output position i = p*Wp + q reads input
 * i + r*Wp + s for tap (r,s), a contiguous run for every tap, so the inner loop is
 * vector loads and FMAs (cpu_conv_kern.c); the two (2 pad) extra columns per row are
 * computed and dropped when the result is copied out. With a border of 1 (ResNet's
 * "same" 3x3), no bias, whole vectors of output positions and whole
 * blocks of 4 output rows (K, or C for the input gradient, a multiple of 4), the forward and input
 * gradient use a tight layout instead (tight_planes): rows W wide, three copies of each
 * plane with the wrapped-around column zeroed, and the result written in place.
 * - forward: y = W * x over the padded grid, packed weights [K/4][C][9][4];
 * - input gradient: the forward loop on dy (bordered by 2 - pad) with the weights
 *   transposed and flipped (w'[c][k][8-t] = w[k][c][t]), stride 1 only;
 * - weight gradient: dy transposed to [p*Q + q][K], and dW[c][t][k] += dyT[p*Q + q][k] *
 *   x[p*wp + q + off(t)] over the kept positions only, vectors over k, per fixed group of
 *   RTP_CONV_GROUP images, groups summed in order: deterministic for any thread count.
 * With a border of 1 on planes rtp_conv_wino_ok takes (H even, W a multiple of 16, at
 * least 64 2x2 tiles and a multiple of 16 of them: 16x16, 32x32, not 24x24), the forward
 * (without a bias) and the input gradient go through Winograd's F(2x2, 3x3) instead
 * (cpu_conv_wino.c), on the same forward loop.
 * Which convolutions take this path: rtp_cpu_conv_direct(). The instruction set
 * (AVX-512 or AVX2+FMA) is picked when the backend opens (rtp_cpu_convk_pick).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_conv_kern.h"
#include "cpu_conv_layout.h"
#include "cpu_conv_wino.h"
#include "cpu_internal.h"

/* the forward's taps in order; the input gradient's, flipped */
static const int fwd_taps[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
static const int flip_taps[9] = {8, 7, 6, 5, 4, 3, 2, 1, 0};

#ifdef KILN_CONVK_X86
static const rtp_convk avx512 = {"avx512", 16, rtp_convk_fwd_avx512, rtp_convk_wgrad_avx512,
                                 rtp_convk_wgrad_taps_avx512};
static const rtp_convk avx2 = {"avx2", 8, rtp_convk_fwd_avx2, rtp_convk_wgrad_avx2,
                               rtp_convk_wgrad_taps_avx2};
#endif

rt_status rtp_cpu_convk_pick(const rtp_convk **out, rt_error *err)
{
    const char *want = getenv("KILN_CPU_CONV");
    if (!want || !*want) want = "auto";
    *out = NULL;
    if (strcmp(want, "auto") && strcmp(want, "avx512") && strcmp(want, "avx2") &&
        strcmp(want, "im2col"))
        return RT_ERR(err, RT_EINVAL, "KILN_CPU_CONV=%.40s: expected auto, avx512, avx2 or im2col",
                      want);
#ifdef KILN_CONVK_X86
    __builtin_cpu_init();
    int has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    int has512 = has2 && __builtin_cpu_supports("avx512f");
    if (!strcmp(want, "im2col")) return RT_OK;
    if (has512 && strcmp(want, "avx2")) *out = &avx512;
    else if (has2) *out = &avx2; /* also for avx512 on a CPU without it (valgrind) */
#endif
    return RT_OK;
}

/* ---- geometry of the padded-width grid ---- */

typedef struct geom {
    int V;         /* floats per vector */
    int wp;        /* padded row width */
    size_t cs;     /* floats per padded input plane, with a zero tail for the overreach */
    size_t L;      /* output positions on the padded grid: rows * wp */
    size_t nvec;   /* vectors covering L */
    size_t ys;     /* floats per output row of the grid buffer */
    int pad;       /* border added to the input planes */
    int rows, hin; /* output rows, input rows */
    size_t tps;    /* border 1 (see tight_planes): floats per copy of a plane, else 0 */
} geom;

#define TIGHT_LEAD 16 /* zeros before a tight plane's top border row */

static geom geom_of(int V, int H, int W, int pad)
{
    geom g;
    g.V = V;
    g.pad = pad;
    g.hin = H;
    g.wp = W + 2 * pad;
    g.rows = H + 2 * pad - 2;
    g.cs = rtp_r16((size_t)(H + 2 * pad) * g.wp + 16 + 3);
    g.L = (size_t)g.rows * g.wp;
    g.nvec = (g.L + (size_t)V - 1) / (size_t)V;
    g.ys = rtp_r16(g.nvec * (size_t)V);
    g.tps = 0;
    if (pad == 1 && (size_t)H * W % (size_t)V == 0) /* output rows W wide, whole vectors */
        g.tps = rtp_r16(TIGHT_LEAD + (size_t)(H + 2) * W + 16);
    return g;
}

static geom geom_fwd(const rtp_convk *k, const rt_conv_desc *d)
{
    return geom_of(k->vec, d->H, d->W, d->pad);
}
static geom geom_bwd(const rtp_convk *k, const rt_conv_desc *d)
{
    return geom_of(k->vec, d->P, d->Q, 2 - d->pad);
}

const rtp_convk *rtp_cpu_conv_direct(rt_backend *b, const rt_conv_desc *d)
{
    const rtp_cpu *c = b->impl;
    /* 3x3, stride 1, a border of at most 2 (the input gradient's is 2 - pad), up to
     * RTP_CONV_MAX_CH channels; larger layers keep sgemm */
    if (rt_conv_groups(d) > 1) return NULL; /* grouped: cpu_conv.c, cpu_conv_dw.c */
    if (!c || !c->convk || d->R != 3 || d->S != 3 || d->stride != 1 || d->pad < 0 || d->pad > 2 ||
        d->C > RTP_CONV_MAX_CH || d->K > RTP_CONV_MAX_CH || d->P < 1 || d->Q < 1)
        return NULL;
    return c->convk;
}

/* Border 1 and planes rtp_conv_wino_ok takes: the forward (without a bias) and the input
 * gradient go through cpu_conv_wino.c. */
static int wino_takes(const rt_conv_desc *d) { return d->pad == 1 && rtp_conv_wino_ok(d->H, d->W); }

static size_t zmax(size_t a, size_t b) { return a > b ? a : b; }

/* Scratch layout (floats): per thread [padded input | grid output | dyT], then packed
 * weights, then ngroups weight-gradient accumulators. */
typedef struct plan {
    geom f, bw;
    int Kr, Cr, Kv;
    size_t xin, yout, dyt, per_thread, wpk, acc, accsz;
} plan;

static plan plan_of(const rtp_convk *k, const rt_conv_desc *d, int threads)
{
    plan p;
    p.f = geom_fwd(k, d);
    p.bw = geom_bwd(k, d);
    p.Kr = rtp_round_up(d->K, RTP_CONVK_KB);
    p.Cr = rtp_round_up(d->C, RTP_CONVK_KB);
    p.Kv = rtp_round_up(d->K, k->vec);
    size_t xf = (size_t)d->C * (p.f.cs > 3 * p.f.tps ? p.f.cs : 3 * p.f.tps);
    size_t xb = (size_t)d->K * (p.bw.cs > 3 * p.bw.tps ? p.bw.cs : 3 * p.bw.tps);
    size_t yf = (size_t)p.Kr * p.f.ys, yb = (size_t)p.Cr * p.bw.ys;
    size_t wf = (size_t)p.Kr * d->C * 9, wb = (size_t)p.Cr * d->K * 9;
    if (wino_takes(d)) { /* its transformed planes; its weights, and their unpacked copy */
        xf = zmax(xf, rtp_conv_wino_in_floats(d->C, d->H, d->W));
        xb = zmax(xb, rtp_conv_wino_in_floats(d->K, d->P, d->Q));
        yf = zmax(yf, rtp_conv_wino_out_floats(p.Kr, d->P, d->Q));
        yb = zmax(yb, rtp_conv_wino_out_floats(p.Cr, d->H, d->W));
        wf = zmax(wf, rtp_conv_wino_weight_floats(p.Kr, d->C) + 16 * (size_t)d->K * d->C);
        wb = zmax(wb, rtp_conv_wino_weight_floats(p.Cr, d->K) + 16 * (size_t)d->K * d->C);
    }
    p.xin = rtp_r16(xf > xb ? xf : xb);
    p.yout = rtp_r16(yf > yb ? yf : yb);
    p.dyt = rtp_r16(p.f.L * (size_t)p.Kv);
    p.per_thread = p.xin + p.yout + p.dyt;
    p.wpk = (size_t)(threads > 0 ? threads : 1) * p.per_thread;
    p.acc = p.wpk + rtp_r16(wf > wb ? wf : wb);
    p.accsz = rtp_r16((size_t)d->C * 9 * p.Kv + (size_t)d->K);
    return p;
}

size_t rtp_cpu_conv_direct_workspace(rt_backend *b, const rtp_convk *k, const rt_conv_desc *d)
{
    plan p = plan_of(k, d, b->threads);
    return (p.acc + (size_t)rtp_conv_groups(d->N) * p.accsz) * sizeof(float);
}

/* Each image's planes are copied into a per-thread buffer whose borders and tail are
 * the same zeros for every image: the buffer is zeroed once per thread and call
 * (zero_planes), and each image then writes only the planes' own values (pad_planes,
 * tight_planes), with cpu_conv_layout.h's copy loops, not a libc call per row. */
static void zero_planes(float *xp, int C, const geom *g)
{
    memset(xp, 0, (size_t)C * (g->cs > 3 * g->tps ? g->cs : 3 * g->tps) * sizeof *xp);
}

/* xp <- C planes of x (H x W) with a zero border of g->pad and a zero tail: the values
 * only, into a buffer that zero_planes cleared. */
static void pad_planes(float *restrict xp, const float *restrict x, int C, int W, const geom *g)
{
    const size_t top = (size_t)g->pad * g->wp + g->pad; /* top rows + the left border */
    for (int c = 0; c < C; c++)
        rtp_conv_copy_rows(xp + (size_t)c * g->cs + top, g->wp, x + (size_t)c * g->hin * W, W,
                           g->hin, W, 1);
}

/* A border of 1 without the extra columns: xp <- 3 copies of each of the C planes of x
 * (H x W), [c][s][TIGHT_LEAD zeros, a zero row, H rows, a zero row, zeros], the copy
 * for tap column s = 0 with each row's last column set to 0 and the one for s = 2 with
 * the first column set to 0. Output position i = p*W + q then reads copy s at
 * i + r*W + s - 1 past the lead for tap (r,s): the read that runs into the row above
 * (s = 0, q = 0) or below (s = 2, q = W-1) finds the 0 that the border would hold, the
 * output is computed straight in the output's own layout (no dropped columns, no copy
 * out), and no work is spent on extra columns (6%, 12% and 25% of the padded grid at
 * ResNet's 32, 16 and 8 columns). The three copies are written in one pass over x, into
 * a buffer that zero_planes cleared. */
static void tight_planes(float *restrict xp, const float *restrict x, int C, int H, int W,
                         size_t tps)
{
    const size_t hw = (size_t)H * W;
    for (int c = 0; c < C; c++) {
        float *o0 = xp + (size_t)c * 3 * tps + TIGHT_LEAD + W, *o1 = o0 + tps, *o2 = o1 + tps;
        rtp_conv_copy3(o0, o1, o2, x + (size_t)c * hw, hw);
        for (int h = 0; h < H; h++) o0[(size_t)h * W + W - 1] = o2[(size_t)h * W] = 0.0f;
    }
}

static void tight_taps(int off[9], int W, size_t tps)
{
    for (int t = 0; t < 9; t++) off[t] = (t % 3) * (int)tps + TIGHT_LEAD + (t / 3) * W + t % 3 - 1;
}

/* offsets of the 9 taps on the padded grid */
static void taps(int off[9], int wp)
{
    for (int t = 0; t < 9; t++) off[t] = (t / 3) * wp + t % 3;
}

/* For each of N images: out (rows x oh x ow, + bias) <- the packed weights applied to
 * in (ins x g->hin x iw), through the padded grid. */
static void fwd_images(rt_backend *b, const rtp_convk *k, const plan *p, const geom *g, float *ws,
                       const float *wpk, const float *in, int ins, int iw, int N, float *out,
                       double *mom, int rows, int rows_r, int oh, int ow, const float *bias)
{
    const size_t mom_img = (size_t)rows * (RT_MOMENT_FLOATS / 2);
    int off[9];
    const size_t in_img = (size_t)ins * g->hin * iw, out_img = (size_t)rows * oh * ow;
    if (g->tps && rows == rows_r && !bias) { /* whole blocks of rows: straight into out */
        tight_taps(off, iw, g->tps);
#pragma omp parallel num_threads(rtp_conv_threads(b, N))
        {
            float *xp = ws + p->per_thread * (size_t)omp_get_thread_num();
            zero_planes(xp, ins, g);
#pragma omp for schedule(dynamic, 1)
            for (int n = 0; n < N; n++) {
                tight_planes(xp, in + in_img * (size_t)n, ins, g->hin, iw, g->tps);
                k->fwd(xp, 3 * g->tps, ins, off, 9, wpk, out + out_img * (size_t)n, (size_t)oh * ow,
                       rows, (size_t)oh * ow / (size_t)g->V);
                if (mom)
                    rtp_cpu_plane_moments(mom + mom_img * (size_t)n, out + out_img * (size_t)n,
                                          rows, (size_t)oh * ow);
            }
        }
        return;
    }
    taps(off, g->wp);
#pragma omp parallel num_threads(rtp_conv_threads(b, N))
    {
        float *xp = ws + p->per_thread * (size_t)omp_get_thread_num(), *grid = xp + p->xin;
        zero_planes(xp, ins, g);
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < N; n++) {
            pad_planes(xp, in + in_img * (size_t)n, ins, iw, g);
            k->fwd(xp, g->cs, ins, off, 9, wpk, grid, g->ys, rows_r, g->nvec);
            rtp_conv_compact(out + out_img * (size_t)n, grid, rows, oh, ow, g->wp, g->ys, bias);
            if (mom)
                rtp_cpu_plane_moments(mom + mom_img * (size_t)n, out + out_img * (size_t)n, rows,
                                      (size_t)oh * ow);
        }
    }
}

/* For each of N images: out (rows x H x W) <- Wt applied to in (ins x H x W), a border
 * of 1, by Winograd (cpu_conv_wino.c); Wt as rtp_conv_pack reads it (tap, transposed);
 * each output plane's moments into mom unless NULL. */
static void wino_images(rt_backend *b, const rtp_convk *k, const plan *p, float *ws,
                        const float *Wt, const int *tap, int transposed, const float *in, int ins,
                        int N, float *out, double *mom, int rows, int rows_r, int H, int W)
{
    float *wpk = ws + p->wpk;
    rtp_conv_wino_weights(wpk, wpk + rtp_conv_wino_weight_floats(rows_r, ins), Wt, rows, rows_r,
                          ins, tap, transposed);
    const size_t in_img = (size_t)ins * H * W, out_img = (size_t)rows * H * W;
    const size_t mom_img = (size_t)rows * (RT_MOMENT_FLOATS / 2);
#pragma omp parallel num_threads(rtp_conv_threads(b, N))
    {
        float *xs = ws + p->per_thread * (size_t)omp_get_thread_num(), *ms = xs + p->xin;
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < N; n++) {
            float *y = out + out_img * (size_t)n;
            rtp_conv_wino_image(k, xs, ms, in + in_img * (size_t)n, ins, H, W, wpk, y, rows,
                                rows_r);
            if (mom) rtp_cpu_plane_moments(mom + mom_img * (size_t)n, y, rows, (size_t)H * W);
        }
    }
}

rt_status rtp_cpu_conv_direct_fwd(rt_backend *b, const rtp_convk *k, rt_tensor *out, double *mom,
                                  const rt_tensor *in, const rt_tensor *w, const rt_tensor *bias,
                                  const rt_conv_desc *d, rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_direct_workspace(b, k, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const plan p = plan_of(k, d, b->threads);
    if (wino_takes(d) && !bias) {
        wino_images(b, k, &p, ws, w->data, fwd_taps, 0, in->data, d->C, d->N, out->data, mom, d->K,
                    p.Kr, d->H, d->W);
        return RT_OK;
    }
    rtp_conv_pack(ws + p.wpk, w->data, d->K, p.Kr, d->C, 9, fwd_taps, 9, 0);
    fwd_images(b, k, &p, &p.f, ws, ws + p.wpk, in->data, d->C, d->W, d->N, out->data, mom, d->K,
               p.Kr, d->P, d->Q, bias ? bias->data : NULL);
    return RT_OK;
}

rt_status rtp_cpu_conv_direct_bwd_data(rt_backend *b, const rtp_convk *k, rt_tensor *din,
                                       const rt_tensor *dout, const rt_tensor *w,
                                       const rt_conv_desc *d, rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_direct_workspace(b, k, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const plan p = plan_of(k, d, b->threads);
    if (wino_takes(d)) {
        wino_images(b, k, &p, ws, w->data, flip_taps, 1, dout->data, d->K, d->N, din->data, NULL,
                    d->C, p.Cr, d->P, d->Q);
        return RT_OK;
    }
    rtp_conv_pack(ws + p.wpk, w->data, d->C, p.Cr, d->K, 9, flip_taps, 9, 1);
    fwd_images(b, k, &p, &p.bw, ws, ws + p.wpk, dout->data, d->K, d->Q, d->N, din->data, NULL, d->C,
               p.Cr, d->H, d->W, NULL);
    return RT_OK;
}

typedef struct wgrad_ctx {
    const rtp_convk *k;
    const plan *p;
    int C, W, Q;
} wgrad_ctx;

static void wgrad_image(const void *ctx, float *xp, const float *dyT, const float *x, float *acc)
{
    const wgrad_ctx *c = ctx;
    const geom *f = &c->p->f;
    pad_planes(xp, x, c->C, c->W, f);
    c->k->wgrad(dyT, c->p->Kv, f->rows, c->Q, xp, f->cs, c->C, f->wp, acc);
}

rt_status rtp_cpu_conv_direct_bwd_filter(rt_backend *b, const rtp_convk *k, rt_tensor *dw,
                                         rt_tensor *dbias, const rt_tensor *dout,
                                         const rt_tensor *in, const rt_conv_desc *d, rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_direct_workspace(b, k, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const plan p = plan_of(k, d, b->threads);
    const wgrad_ctx c = {k, &p, d->C, d->W, d->Q};
    for (int t = 0; t < (b->threads > 0 ? b->threads : 1); t++) /* wgrad_image's xp */
        zero_planes(ws + p.per_thread * (size_t)t, d->C, &p.f);
    const rtp_conv_wgrad_layout lay = {p.per_thread, p.xin + p.yout, p.acc,
                                       p.accsz,      d->C * 9,       p.Kv};
    rtp_conv_wgrad_run(b, d, dw, dbias, dout, in, ws, &lay, wgrad_image, &c);
    return RT_OK;
}
