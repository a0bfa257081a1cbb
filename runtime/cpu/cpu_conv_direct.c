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
 * computed and dropped when the result is copied out.
 * - forward: y = W * x over the padded grid, packed weights [K/4][C][9][4];
 * - input gradient: the forward loop on dy (bordered by 2 - pad) with the weights
 *   transposed and flipped (w'[c][k][8-t] = w[k][c][t]), stride 1 only;
 * - weight gradient: dy transposed to [position][K] (dropped columns set to 0), and
 *   dW[c][t][k] += dyT[i][k] * x[i + off(t)], vectors over k, per fixed group of
 *   GROUP images, groups summed in order: deterministic for any thread count.
 * Which convolutions take this path: rtp_cpu_conv_direct(). The instruction set
 * (AVX-512 or AVX2+FMA) is picked when the backend opens (rtp_cpu_convk_pick).
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_conv_kern.h"
#include "cpu_internal.h"

#define GROUP 8 /* images per weight-gradient partial sum, as cpu_conv.c */

static size_t r16(size_t n) { return (n + 15) / 16 * 16; }
static int round_up(int n, int m) { return (n + m - 1) / m * m; }

#ifdef KILN_CONVK_X86
static const rtp_convk avx512 = {"avx512", 16, rtp_convk_fwd_avx512, rtp_convk_wgrad_avx512};
static const rtp_convk avx2 = {"avx2", 8, rtp_convk_fwd_avx2, rtp_convk_wgrad_avx2};
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
} geom;

static geom geom_of(int V, int H, int W, int pad)
{
    geom g;
    g.V = V;
    g.pad = pad;
    g.hin = H;
    g.wp = W + 2 * pad;
    g.rows = H + 2 * pad - 2;
    g.cs = r16((size_t)(H + 2 * pad) * g.wp + 16 + 3);
    g.L = (size_t)g.rows * g.wp;
    g.nvec = (g.L + (size_t)V - 1) / (size_t)V;
    g.ys = r16(g.nvec * (size_t)V);
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
    /* 3x3, stride 1, a border of at most 2 (the input gradient's is 2 - pad); channel
     * counts up to 128, the range measured (bench/README.md); larger layers keep sgemm */
    if (!c || !c->convk || d->R != 3 || d->S != 3 || d->stride != 1 || d->pad < 0 || d->pad > 2 ||
        d->C > 128 || d->K > 128 || d->P < 1 || d->Q < 1)
        return NULL;
    return c->convk;
}

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
    p.Kr = round_up(d->K, RTP_CONVK_KB);
    p.Cr = round_up(d->C, RTP_CONVK_KB);
    p.Kv = round_up(d->K, k->vec);
    size_t xf = (size_t)d->C * p.f.cs, xb = (size_t)d->K * p.bw.cs;
    size_t yf = (size_t)p.Kr * p.f.ys, yb = (size_t)p.Cr * p.bw.ys;
    p.xin = r16(xf > xb ? xf : xb);
    p.yout = r16(yf > yb ? yf : yb);
    p.dyt = r16(p.f.L * (size_t)p.Kv);
    p.per_thread = p.xin + p.yout + p.dyt;
    size_t wf = (size_t)p.Kr * d->C * 9, wb = (size_t)p.Cr * d->K * 9;
    p.wpk = (size_t)(threads > 0 ? threads : 1) * p.per_thread;
    p.acc = p.wpk + r16(wf > wb ? wf : wb);
    p.accsz = r16((size_t)d->C * 9 * p.Kv + (size_t)d->K);
    return p;
}

static int ngroups(int n) { return (n + GROUP - 1) / GROUP; }

size_t rtp_cpu_conv_direct_workspace(rt_backend *b, const rtp_convk *k, const rt_conv_desc *d)
{
    plan p = plan_of(k, d, b->threads);
    return (p.acc + (size_t)ngroups(d->N) * p.accsz) * sizeof(float);
}

/* xp <- C planes of x (H x W) with a zero border of g->pad and a zero tail. */
static void pad_planes(float *restrict xp, const float *restrict x, int C, int W, const geom *g)
{
    const int pad = g->pad, wp = g->wp;
    for (int c = 0; c < C; c++) {
        float *o = xp + (size_t)c * g->cs;
        const float *in = x + (size_t)c * g->hin * W;
        size_t top = (size_t)pad * wp + pad; /* top rows + the first row's left border */
        memset(o, 0, top * sizeof *o);
        o += top;
        for (int h = 0; h < g->hin; h++, o += wp, in += W) {
            memcpy(o, in, (size_t)W * sizeof *o);
            memset(o + W, 0, (size_t)(2 * pad) * sizeof *o); /* right + next left border */
        }
        /* o is at the bottom border's column pad; its first pad columns are written */
        float *end = xp + (size_t)(c + 1) * g->cs;
        memset(o, 0, (size_t)(end - o) * sizeof *o);
    }
}

/* offsets of the 9 taps on the padded grid */
static void taps(int off[9], int wp)
{
    for (int t = 0; t < 9; t++) off[t] = (t / 3) * wp + t % 3;
}

/* out[k][h][w] (+ bias[k]) <- grid[k*ys + h*wp + w], dropping the extra columns. */
static void compact(float *restrict out, const float *restrict grid, int K, int H, int W,
                    const geom *g, const float *bias)
{
    for (int k = 0; k < K; k++) {
        const float *src = grid + (size_t)k * g->ys;
        float *dst = out + (size_t)k * H * W;
        float bk = bias ? bias[k] : 0.0f;
        for (int h = 0; h < H; h++, src += g->wp, dst += W) {
            if (!bias) {
                memcpy(dst, src, (size_t)W * sizeof *dst);
                continue;
            }
            for (int w = 0; w < W; w++) dst[w] = src[w] + bk;
        }
    }
}

static int nthreads(rt_backend *b, int n) { return n < b->threads ? 1 : b->threads; }

/* Packed weights for `rows` outputs (rounded up to RTP_CONVK_KB) from `ins` inputs,
 * [rows/KB][ins][9][KB]: the forward's (rows K, ins C), or, flipped, the input
 * gradient's (rows C, ins K, w'[c][k][t] = w[k][c][8-t]). */
static void pack(float *restrict wpk, const float *restrict Wt, int rows, int rows_r, int ins,
                 int flip)
{
    for (int rb = 0; rb < rows_r; rb += RTP_CONVK_KB)
        for (int i = 0; i < ins; i++)
            for (int t = 0; t < 9; t++)
                for (int j = 0; j < RTP_CONVK_KB; j++) {
                    int r = rb + j;
                    size_t at =
                        flip ? ((size_t)i * rows + r) * 9 + (8 - t) : ((size_t)r * ins + i) * 9 + t;
                    wpk[((size_t)rb * ins + (size_t)i * RTP_CONVK_KB) * 9 + t * RTP_CONVK_KB + j] =
                        r < rows ? Wt[at] : 0.0f;
                }
}

/* For each of N images: out (rows x oh x ow, + bias) <- the packed weights applied to
 * in (ins x g->hin x iw), through the padded grid. */
static void fwd_images(rt_backend *b, const rtp_convk *k, const plan *p, const geom *g, float *ws,
                       const float *wpk, const float *in, int ins, int iw, int N, float *out,
                       int rows, int rows_r, int oh, int ow, const float *bias)
{
    int off[9];
    taps(off, g->wp);
    const size_t in_img = (size_t)ins * g->hin * iw, out_img = (size_t)rows * oh * ow;
#pragma omp parallel num_threads(nthreads(b, N))
    {
        float *xp = ws + p->per_thread * (size_t)omp_get_thread_num(), *grid = xp + p->xin;
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < N; n++) {
            pad_planes(xp, in + in_img * (size_t)n, ins, iw, g);
            k->fwd(xp, g->cs, ins, off, 9, wpk, grid, g->ys, rows_r, g->nvec);
            compact(out + out_img * (size_t)n, grid, rows, oh, ow, g, bias);
        }
    }
}

rt_status rtp_cpu_conv_direct_fwd(rt_backend *b, const rtp_convk *k, rt_tensor *out,
                                  const rt_tensor *in, const rt_tensor *w, const rt_tensor *bias,
                                  const rt_conv_desc *d, rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_direct_workspace(b, k, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const plan p = plan_of(k, d, b->threads);
    pack(ws + p.wpk, w->data, d->K, p.Kr, d->C, 0);
    fwd_images(b, k, &p, &p.f, ws, ws + p.wpk, in->data, d->C, d->W, d->N, out->data, d->K, p.Kr,
               d->P, d->Q, bias ? bias->data : NULL);
    return RT_OK;
}

rt_status rtp_cpu_conv_direct_bwd_data(rt_backend *b, const rtp_convk *k, rt_tensor *din,
                                       const rt_tensor *dout, const rt_tensor *w,
                                       const rt_conv_desc *d, rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_direct_workspace(b, k, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const plan p = plan_of(k, d, b->threads);
    pack(ws + p.wpk, w->data, d->C, p.Cr, d->K, 1);
    fwd_images(b, k, &p, &p.bw, ws, ws + p.wpk, dout->data, d->K, d->Q, d->N, din->data, d->C, p.Cr,
               d->H, d->W, NULL);
    return RT_OK;
}

/* dyT[i*Kv + k] <- dy[k][p][q] at i = p*wp + q; 0 in the extra columns and for k >= K.
 * Written in order (K reads streams), each float once. */
static void transpose_dy(float *restrict dyT, const float *restrict dy, int K, int Kv, int P, int Q,
                         int wp)
{
    const size_t PQ = (size_t)P * Q;
    for (int p = 0; p < P; p++) {
        for (int q = 0; q < Q; q++, dyT += Kv) {
            const float *src = dy + (size_t)p * Q + q;
            for (int k = 0; k < K; k++) dyT[k] = src[k * PQ];
            for (int k = K; k < Kv; k++) dyT[k] = 0.0f;
        }
        memset(dyT, 0, (size_t)(wp - Q) * Kv * sizeof *dyT);
        dyT += (size_t)(wp - Q) * Kv;
    }
}

rt_status rtp_cpu_conv_direct_bwd_filter(rt_backend *b, const rtp_convk *k, rt_tensor *dw,
                                         rt_tensor *dbias, const rt_tensor *dout,
                                         const rt_tensor *in, const rt_conv_desc *d, rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_direct_workspace(b, k, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const plan p = plan_of(k, d, b->threads);
    const int C = d->C, K = d->K, PQ = d->P * d->Q, G = ngroups(d->N);
    const size_t chw = (size_t)C * d->H * d->W, kpq = (size_t)K * PQ, nw = (size_t)C * 9 * p.Kv;
    const float *X = in->data, *DY = dout->data;
    float *DW = dw->data, *DB = dbias ? dbias->data : NULL, *accs = ws + p.acc;
#pragma omp parallel num_threads(nthreads(b, d->N))
    {
        float *xp = ws + p.per_thread * (size_t)omp_get_thread_num();
        float *dyT = xp + p.xin + p.yout;
#pragma omp for schedule(dynamic, 1)
        for (int g = 0; g < G; g++) {
            float *acc = accs + p.accsz * (size_t)g, *accb = acc + nw;
            memset(acc, 0, p.accsz * sizeof *acc);
            int n1 = (g + 1) * GROUP < d->N ? (g + 1) * GROUP : d->N;
            for (int n = g * GROUP; n < n1; n++) {
                const float *dy = DY + kpq * (size_t)n;
                pad_planes(xp, X + chw * (size_t)n, C, d->W, &p.f);
                transpose_dy(dyT, dy, K, p.Kv, d->P, d->Q, p.f.wp);
                k->wgrad(dyT, p.Kv, p.f.L, xp, p.f.cs, C, p.f.wp, acc);
                for (int kk = 0; kk < K; kk++)
                    accb[kk] += rtp_cpu_row_sum(dy + (size_t)kk * PQ, PQ);
            }
        }
        /* ---- sum the groups in order (deterministic for any thread count) ---- */
#pragma omp for schedule(static)
        for (int kk = 0; kk < K; kk++) {
            for (int ct = 0; ct < C * 9; ct++) {
                float s = 0.0f;
                for (int g = 0; g < G; g++) s += accs[p.accsz * (size_t)g + (size_t)ct * p.Kv + kk];
                DW[(size_t)kk * C * 9 + ct] = s;
            }
            if (DB) {
                float s = 0.0f;
                for (int g = 0; g < G; g++) s += accs[p.accsz * (size_t)g + nw + kk];
                DB[kk] = s;
            }
        }
    }
    return RT_OK;
}
