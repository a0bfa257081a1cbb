/* cpu_conv_dp.c - bf16 convolutions on VDPBF16PS (cpu_dp.h).
 *
 * Stride 1 works on the padded plane, as the AMX path does: with the output computed on
 * a grid as wide as the padded input (Wp; the columns past Q are dropped when the grid
 * is copied out), the input of filter tap (r, s) for grid point j is the padded plane's
 * element j + r*Wp + s, so each tap is a product with the same packed plane shifted,
 * and no unfold is written:
 * forward:        y_grid (K x P*Wp) = sum over taps of w_t (K x C) . plane (C x ..) + off_t,
 *                 channels in pairs;
 * input gradient: the forward of dy (padded by R-1-pad) with the filter turned and
 *                 transposed;
 * weight gradient: dw_t^T (C x K) = plane + off_t (C x P*Wp) . dy_grid^T (P*Wp x K), grid
 *                 points in pairs (the plane packed twice, from even and odd points, so
 *                 every tap's shift starts on a pair).
 * Stride 2 unfolds each image into pairs (rtp_dp_pack_cols) and multiplies once:
 * forward y = w . unfold(x); input gradient cols = w^T . dy (channels in pairs), folded
 * back (rtp_cpu_col2im); weight gradient dw^T = unfold(x) . dy^T.
 * Weight gradients are summed over fixed groups of RTP_CONV_GROUP images, the groups
 * added in order (the same bits for any thread count). Images go to OpenMP threads
 * (dynamic, like the fp32 paths), each packing into its own scratch; the weights are
 * packed once a pass.
 */
#include <omp.h>
#include <string.h>

#include "cpu_conv_layout.h"
#include "cpu_dp.h"
#include "cpu_internal.h"

static size_t half(size_t n) { return (n + 1) / 2; }

/* the padded-plane passes take stride 1 with up to MAX_TAPS taps and pad < R, S */
#define MAX_TAPS 64
static int on_plane(const rt_conv_desc *d)
{
    return d->stride == 1 && d->R * d->S <= MAX_TAPS && d->pad < d->R && d->pad < d->S;
}

/* One padded-plane product: cin planes h x w padded by pad, cout outputs, taps R x S */
typedef struct {
    int cin, h, w, pad, cout, taps, oh, ow, wp;
    size_t ldb, ys; /* packed plane rows, grid rows (words) */
    int off[MAX_TAPS];
} plane_geom;

static plane_geom plane(int cin, int h, int w, int pad, int cout, int R, int S)
{
    plane_geom g = {.cin = cin, .h = h, .w = w, .pad = pad, .cout = cout, .taps = R * S};
    int hp = h + 2 * pad;
    g.wp = w + 2 * pad, g.oh = hp - R + 1, g.ow = g.wp - S + 1;
    g.ldb = rtp_r16((size_t)hp * g.wp + S + 16);
    g.ys = rtp_r16((size_t)g.oh * g.wp);
    for (int t = 0; t < g.taps; t++) g.off[t] = t / S * g.wp + t % S;
    return g;
}

static size_t plane_words(const plane_geom *g)
{
    return half((size_t)g->cin) * g->ldb + (size_t)g->cout * g->ys;
}

/* the forward's (turned: the input gradient's) filter as A[row][t*K2 + i2], pairs of
 * inputs i: w[row][i][t], or turned w[i][row][RS-1-t] */
static void pack_taps(uint32_t *A, const float *w, const rt_conv_desc *d, int turn)
{
    const int RS = d->R * d->S, rows = turn ? d->C : d->K, ins = turn ? d->K : d->C;
    const int k2 = (int)half((size_t)ins);
    for (int row = 0; row < rows; row++)
        for (int t = 0; t < RS; t++)
            for (int i2 = 0; i2 < k2; i2++) {
                float v[2] = {0.0f, 0.0f};
                for (int h = 0; h < 2 && 2 * i2 + h < ins; h++) {
                    int i = 2 * i2 + h;
                    v[h] = turn ? w[((size_t)i * d->C + row) * RS + (RS - 1 - t)]
                                : w[((size_t)row * d->C + i) * RS + t];
                }
                A[(size_t)row * RS * k2 + (size_t)t * k2 + i2] = rtp_dp_pair(v[0], v[1]);
            }
}

/* out (cout x oh x ow, + bias) <- the taps' products over x's padded plane */
static void plane_conv(const plane_geom *g, uint32_t *buf, float *out, const float *x,
                       const uint32_t *A, const float *bias)
{
    const int k2 = (int)half((size_t)g->cin);
    float *grid = (float *)(buf + (size_t)k2 * g->ldb);
    rtp_dp_pack_plane(buf, g->ldb, x, g->cin, g->h, g->w, g->pad);
    rtp_dp_gemm_taps(grid, g->ys, A, (size_t)g->taps * k2, buf, g->ldb, g->off, g->taps, g->cout,
                     g->oh * g->wp, k2);
    rtp_conv_compact(out, grid, g->cout, g->oh, g->ow, g->wp, g->ys, bias);
}

static plane_geom fwd_plane(const rt_conv_desc *d)
{
    return plane(d->C, d->H, d->W, d->pad, d->K, d->R, d->S);
}
static plane_geom bwd_plane(const rt_conv_desc *d)
{
    return plane(d->K, d->P, d->Q, d->R - 1 - d->pad, d->C, d->R, d->S);
}

/* the weight gradient on the plane: per thread the fp32 padded plane (xl floats a
 * channel), its even and odd pairs, dy on the grid and dy_grid^T in pairs */
typedef struct {
    int wp;
    size_t xl, grid;
} wgrad_geom;

static wgrad_geom wgrad(const rt_conv_desc *d)
{
    wgrad_geom g = {.wp = d->W + 2 * d->pad};
    g.xl = rtp_r16((size_t)(d->H + 2 * d->pad) * g.wp + d->S + 2);
    g.grid = (size_t)d->P * g.wp;
    return g;
}

static size_t wgrad_words(const rt_conv_desc *d)
{
    wgrad_geom g = wgrad(d);
    return (size_t)d->C * g.xl * 2 + (size_t)d->K * g.grid + half(g.grid) * rtp_r16((size_t)d->K);
}

/* Scratch (4-byte words): the packed weights, the groups' weight-gradient partials,
 * then per thread the largest of the passes' per-image buffers. */
typedef struct {
    size_t a, acc, accsz, per;
} layout;

static layout lay(const rt_conv_desc *d)
{
    const size_t CRS = (size_t)d->C * d->R * d->S, PQ = (size_t)d->P * d->Q;
    size_t afwd = (size_t)d->K * half(CRS), abwd, fwd, bd, bf;
    if (on_plane(d)) {
        plane_geom f = fwd_plane(d), bw = bwd_plane(d);
        abwd = (size_t)d->C * d->R * d->S * half((size_t)d->K);
        afwd = (size_t)d->K * d->R * d->S * half((size_t)d->C);
        fwd = plane_words(&f), bd = plane_words(&bw), bf = wgrad_words(d);
    } else {
        abwd = CRS * half((size_t)d->K);
        fwd = half(CRS) * rtp_r16(PQ);
        bd = half((size_t)d->K) * rtp_r16(PQ) + rtp_r16(CRS * PQ);
        bf = rtp_r16(CRS * PQ) + rtp_r16(CRS * half(PQ)) + half(PQ) * rtp_r16((size_t)d->K);
    }
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

/* A stride-1 pass on the padded plane: the forward (turn 0: in = x, out = y, with the
 * bias and the output planes' moments into mom unless NULL) or the input gradient
 * (turn 1: in = dy, out = dx) */
static void plane_pass(rt_backend *b, float *ws, const rt_conv_desc *d, int turn, const float *w,
                       const float *in, float *out, const float *bias, double *mom)
{
    const layout l = lay(d);
    const plane_geom g = turn ? bwd_plane(d) : fwd_plane(d);
    const size_t in_img = (size_t)g.cin * g.h * g.w, out_img = (size_t)g.cout * g.oh * g.ow;
    const uint32_t *A = (uint32_t *)ws;
    pack_taps((uint32_t *)ws, w, d, turn);
#pragma omp parallel num_threads(rtp_conv_threads(b, d->N))
    {
        uint32_t *buf = mine(ws, &l);
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < d->N; n++) {
            float *y = out + out_img * (size_t)n;
            plane_conv(&g, buf, y, in + in_img * (size_t)n, A, bias);
            if (mom)
                rtp_cpu_plane_moments(mom + (size_t)n * g.cout * (RT_MOMENT_FLOATS / 2), y, g.cout,
                                      (size_t)g.oh * g.ow);
        }
    }
}

void rtp_cpu_dp_conv_fwd(rt_backend *b, float *ws, rt_tensor *out, double *mom, const rt_tensor *in,
                         const rt_tensor *w, const rt_tensor *bias, const rt_conv_desc *d)
{
    const layout l = lay(d);
    const int K = d->K, CRS = d->C * d->R * d->S, PQ = d->P * d->Q;
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)K * PQ, ldb = rtp_r16(PQ);
    uint32_t *A = (uint32_t *)ws;
    const float *X = in->data, *Bs = bias ? bias->data : NULL;
    float *Y = out->data;
    if (on_plane(d)) {
        plane_pass(b, ws, d, 0, w->data, X, Y, Bs, mom);
        return;
    }
    const rtp_dp_geom g = {d->C, d->H, d->W, d->R, d->S, d->stride, d->pad, d->P, d->Q};
    rtp_dp_pack_rows(A, half(CRS), w->data, CRS, K, CRS);
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

void rtp_cpu_dp_conv_bwd_data(rt_backend *b, float *ws, rt_tensor *din, const rt_tensor *dout,
                              const rt_tensor *w, const rt_conv_desc *d)
{
    const layout l = lay(d);
    const int K = d->K, CRS = d->C * d->R * d->S, PQ = d->P * d->Q;
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)K * PQ, ldb = rtp_r16(PQ);
    const int k2 = (int)half((size_t)K);
    uint32_t *A = (uint32_t *)ws;
    const float *DY = dout->data;
    float *DX = din->data;
    if (on_plane(d)) {
        plane_pass(b, ws, d, 1, w->data, DY, DX, NULL, NULL);
        return;
    }
    const rtp_dp_geom g = {K, d->P, d->Q, 1, 1, 1, 0, d->P, d->Q}; /* dy's channels in pairs */
    rtp_dp_pack_cols_t(A, (size_t)k2, w->data, CRS, K, CRS);
#pragma omp parallel num_threads(rtp_conv_threads(b, d->N))
    {
        uint32_t *B = mine(ws, &l);
        float *cols = (float *)(B + (size_t)k2 * ldb);
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < d->N; n++) {
            float *dx = DX + chw * (size_t)n;
            rtp_dp_pack_cols(B, ldb, DY + kpq * (size_t)n, &g);
            rtp_dp_gemm(cols, PQ, A, (size_t)k2, B, ldb, CRS, PQ, k2, 0);
            memset(dx, 0, chw * sizeof *dx);
            rtp_cpu_col2im(dx, cols, d);
        }
    }
}

/* one image's weight-gradient products on the plane into acc [RS][C][K] (added unless
 * first) */
static void wgrad_plane(const rt_conv_desc *d, float *buf, float *acc, const float *x,
                        const float *dy, int first)
{
    const wgrad_geom g = wgrad(d);
    const int C = d->C, K = d->K, RS = d->R * d->S;
    const size_t lde = g.xl / 2, ldb = rtp_r16((size_t)K), k2 = half(g.grid);
    float *xp = buf, *dyg = xp + (size_t)C * g.xl;
    uint32_t *E = (uint32_t *)(dyg + (size_t)K * g.grid), *O = E + (size_t)C * lde;
    uint32_t *B = O + (size_t)C * lde;
    memset(xp, 0, (size_t)C * g.xl * sizeof *xp);
    for (int c = 0; c < C; c++)
        rtp_conv_copy_rows(xp + (size_t)c * g.xl + (size_t)d->pad * g.wp + d->pad, (size_t)g.wp,
                           x + (size_t)c * d->H * d->W, (size_t)d->W, d->H, d->W, 1);
    rtp_dp_pack_rows(E, lde, xp, g.xl, C, (int)g.xl);
    rtp_dp_pack_rows(O, lde, xp + 1, g.xl, C, (int)g.xl - 1);
    memset(dyg, 0, (size_t)K * g.grid * sizeof *dyg);
    rtp_conv_copy_rows(dyg, (size_t)g.wp, dy, (size_t)d->Q, K * d->P, d->Q, 1);
    rtp_dp_pack_rows_t(B, ldb, dyg, g.grid, K, (int)g.grid);
    for (int t = 0; t < RS; t++) {
        int off = t / d->S * g.wp + t % d->S;
        rtp_dp_gemm(acc + (size_t)t * C * K, (size_t)K, (off & 1 ? O : E) + off / 2, lde, B, ldb, C,
                    K, (int)k2, !first);
    }
}

void rtp_cpu_dp_conv_bwd_filter(rt_backend *b, float *ws, rt_tensor *dw, const rt_tensor *dout,
                                const rt_tensor *in, const rt_conv_desc *d)
{
    const layout l = lay(d);
    const int K = d->K, C = d->C, RS = d->R * d->S, CRS = C * RS, PQ = d->P * d->Q;
    const int G = rtp_conv_groups(d->N), flat = on_plane(d);
    const size_t chw = (size_t)C * d->H * d->W, kpq = (size_t)K * PQ;
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
            int n0 = g * RTP_CONV_GROUP,
                n1 = n0 + RTP_CONV_GROUP < d->N ? n0 + RTP_CONV_GROUP : d->N;
            for (int n = n0; n < n1; n++) {
                const float *x = X + chw * (size_t)n, *dy = DY + kpq * (size_t)n;
                if (flat) {
                    wgrad_plane(d, cols, acc, x, dy, n == n0);
                    continue;
                }
                if (unfolded) rtp_cpu_im2col(cols, x, d);
                rtp_dp_pack_rows(A, lda, unfolded ? cols : x, (size_t)PQ, CRS, PQ);
                rtp_dp_pack_rows_t(B, ldb, dy, (size_t)PQ, K, PQ);
                rtp_dp_gemm(acc, (size_t)K, A, lda, B, ldb, CRS, K, (int)lda, n > n0);
            }
        }
        /* dw[k][c][t] = the groups' partials ([t][c][k] on the plane, else [c*RS + t][k]),
         * added in order */
#pragma omp for schedule(static)
        for (int k = 0; k < K; k++)
            for (int i = 0; i < CRS; i++) {
                size_t at =
                    flat ? ((size_t)(i % RS) * C + (size_t)(i / RS)) * K + k : (size_t)i * K + k;
                float s = 0.0f;
                for (int g = 0; g < G; g++) s += accs[l.accsz * (size_t)g + at];
                DW[(size_t)k * CRS + i] = s;
            }
    }
}
