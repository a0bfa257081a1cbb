/* cpu_conv.c - conv2d forward and backward on the CPU: im2col + sgemm per image.
 *
 * On a CPU with AVX2+FMA, convolutions of up to 128 channels take a direct path instead:
 * 3x3 stride 1 (cpu_conv_direct.c; rtp_cpu_conv_direct decides), and 3x3 or unpadded
 * 1x1 stride 2 (cpu_conv_s2.c; rtp_cpu_conv_s2 decides). Every other shape (5x5, 1x1
 * stride 1, wider layers), and every CPU without AVX2+FMA, comes here.
 * Images of the minibatch are spread over OpenMP threads (dynamic scheduling, so a
 * thread that the OS preempts does not hold the others back); each thread unfolds one
 * image at a time into its own column buffer (C*R*S x P*Q, sized to stay in L2) and
 * calls single-threaded OpenBLAS sgemm on it. This keeps the unfolded data
 * cache-resident instead of materialising a whole-batch column matrix.
 * A 1x1, stride 1, unpadded convolution skips the unfold (the image is its own column).
 * A grouped convolution (groups G) does the same per group of C/G input and K/G output
 * channels: one unfold and one sgemm per group and image; a depthwise one (G = C = K)
 * goes to its direct loop (cpu_conv_dw.c) where the backend has the direct paths. A 1x1
 * stride-1 convolution on planes of 64 and fewer is one sgemm for the batch
 * (cpu_conv_1x1.c).
 * The weight gradient is accumulated per fixed group of RTP_CONV_GROUP images (whichever thread
 * runs it) and the groups are summed in order, so results are bitwise identical for any
 * thread count. Nothing here allocates: scratch comes from the workspace reserved by
 * the model (rtp_cpu_conv2d_workspace).
 */
#include <cblas.h>
#include <omp.h>
#include <string.h>

#include "cpu_conv_amx.h"
#include "cpu_conv_layout.h"
#include "cpu_dp.h"
#include "cpu_internal.h"

/* A 1x1, stride 1, unpadded convolution: the image is its own column matrix. */
static int no_unfold(const rt_conv_desc *d)
{
    return d->R == 1 && d->S == 1 && d->stride == 1 && d->pad == 0;
}

/* The direct paths share one signature per pass; direct_path picks the one that takes
 * d on b (and its loops in *k), or NULL for im2col + sgemm. */
typedef struct {
    size_t (*workspace)(rt_backend *, const rtp_convk *, const rt_conv_desc *);
    rt_status (*fwd)(rt_backend *, const rtp_convk *, rt_tensor *, double *, const rt_tensor *,
                     const rt_tensor *, const rt_tensor *, const rt_conv_desc *, rt_error *);
    rt_status (*bwd_data)(rt_backend *, const rtp_convk *, rt_tensor *, const rt_tensor *,
                          const rt_tensor *, const rt_conv_desc *, rt_error *);
    rt_status (*bwd_filter)(rt_backend *, const rtp_convk *, rt_tensor *, rt_tensor *,
                            const rt_tensor *, const rt_tensor *, const rt_conv_desc *, rt_error *);
} direct_ops;

static rt_status dw_fwd(rt_backend *b, const rtp_convk *k, rt_tensor *out, double *mom,
                        const rt_tensor *in, const rt_tensor *w, const rt_tensor *bias,
                        const rt_conv_desc *d, rt_error *err)
{
    return rtp_cpu_conv_dw_fwd(b, out, mom, in, w, bias, d, err);
}
static rt_status dw_bwd_data(rt_backend *b, const rtp_convk *k, rt_tensor *din,
                             const rt_tensor *dout, const rt_tensor *w, const rt_conv_desc *d,
                             rt_error *err)
{
    return rtp_cpu_conv_dw_bwd_data(b, din, dout, w, d, err);
}
static rt_status dw_bwd_filter(rt_backend *b, const rtp_convk *k, rt_tensor *dw, rt_tensor *dbias,
                               const rt_tensor *dout, const rt_tensor *in, const rt_conv_desc *d,
                               rt_error *err)
{
    return rtp_cpu_conv_dw_bwd_filter(b, dw, dbias, dout, in, d, err);
}
static size_t dw_workspace(rt_backend *b, const rtp_convk *k, const rt_conv_desc *d)
{
    return rtp_cpu_conv_dw_workspace(b, d);
}

static rt_status b1_fwd(rt_backend *b, const rtp_convk *k, rt_tensor *out, double *mom,
                        const rt_tensor *in, const rt_tensor *w, const rt_tensor *bias,
                        const rt_conv_desc *d, rt_error *err)
{
    return rtp_cpu_conv_1x1_fwd(b, out, mom, in, w, bias, d, err);
}
static rt_status b1_bwd_data(rt_backend *b, const rtp_convk *k, rt_tensor *din,
                             const rt_tensor *dout, const rt_tensor *w, const rt_conv_desc *d,
                             rt_error *err)
{
    return rtp_cpu_conv_1x1_bwd_data(b, din, dout, w, d, err);
}
static rt_status b1_bwd_filter(rt_backend *b, const rtp_convk *k, rt_tensor *dw, rt_tensor *dbias,
                               const rt_tensor *dout, const rt_tensor *in, const rt_conv_desc *d,
                               rt_error *err)
{
    return rtp_cpu_conv_1x1_bwd_filter(b, dw, dbias, dout, in, d, err);
}
static size_t b1_workspace(rt_backend *b, const rtp_convk *k, const rt_conv_desc *d)
{
    return rtp_cpu_conv_1x1_workspace(b, d);
}

static const direct_ops *direct_path(rt_backend *b, const rt_conv_desc *d, const rtp_convk **k)
{
    static const direct_ops depthwise = {dw_workspace, dw_fwd, dw_bwd_data, dw_bwd_filter};
    static const direct_ops batched_1x1 = {b1_workspace, b1_fwd, b1_bwd_data, b1_bwd_filter};
    *k = NULL;
    if (rtp_cpu_conv_1x1(d)) return &batched_1x1;
    if (rt_conv_groups(d) > 1) return rtp_cpu_conv_dw(b, d) ? &depthwise : NULL;
    static const direct_ops stride1 = {rtp_cpu_conv_direct_workspace, rtp_cpu_conv_direct_fwd,
                                       rtp_cpu_conv_direct_bwd_data,
                                       rtp_cpu_conv_direct_bwd_filter};
    static const direct_ops stride2 = {rtp_cpu_conv_s2_workspace, rtp_cpu_conv_s2_fwd,
                                       rtp_cpu_conv_s2_bwd_data, rtp_cpu_conv_s2_bwd_filter};
    if ((*k = rtp_cpu_conv_direct(b, d))) return &stride1;
    if ((*k = rtp_cpu_conv_s2(b, d))) return &stride2;
    return NULL;
}

/* Up to this many C*R*S, the weight gradient is computed with dot products: an sgemm call
 * with an output of K x 27 is mostly call and packing overhead (bench/README.md has
 * what it saved). */
#define SMALL_CRS 32

/* Input channels of one group (all of them without groups). */
static int group_c(const rt_conv_desc *d) { return d->C / rt_conv_groups(d); }

/* Scratch layout (floats): T column buffers (one group's), then rtp_conv_groups(N) dW/dbias
 * accumulators. */
static size_t col_floats(const rt_conv_desc *d)
{
    return rtp_r16((size_t)group_c(d) * d->R * d->S * (size_t)d->P * d->Q);
}
static size_t acc_floats(const rt_conv_desc *d) { return rtp_r16(rt_conv_weight_numel(d) + d->K); }

/* the fp32 path's scratch, in whole 64-byte lines (bf16's rounded copies follow it) */
static size_t ws_fp32(rt_backend *b, const rt_conv_desc *d)
{
    const rtp_convk *k;
    const direct_ops *path = direct_path(b, d, &k);
    size_t T = (size_t)(b->threads > 0 ? b->threads : 1);
    size_t n =
        path ? path->workspace(b, k, d)
             : (T * col_floats(d) + (size_t)rtp_conv_groups(d->N) * acc_floats(d)) * sizeof(float);
    return (n + 63) / 64 * 64;
}

/* bf16 on AMX tiles: 1 for the 3x3 stride-1 convolutions the direct path takes and the
 * 3x3 stride-2 ones on even planes (cpu_conv_amx.c), 2 for 1x1, other 3x3 stride-2 and
 * wider 3x3 ones (cpu_conv_amx_gemm.c), each with 16 channels or more on both sides (a tile is 16 rows of them: a 1- or
 * 3-channel first layer would waste most of each product); 0: the others round their
 * inputs into the workspace for the fp32 loops */
static int amx_takes(rt_backend *b, const rt_conv_desc *d)
{
#ifdef KILN_CONVK_X86
    const rtp_cpu *c = b->impl;
    if (!c->amx || c->prec != RT_PREC_BF16) return 0;
    if ((d->C >= 16 && d->K >= 16 && rtp_cpu_conv_direct(b, d)) || rtp_cpu_amx_s2_takes(d))
        return 1;
    /* other 3x3 stride 2: only those the fp32 stride-2 loops do not take (they were faster) */
    return rtp_cpu_amx_gemm_takes(d) && (d->R == 1 || !rtp_cpu_conv_s2(b, d)) ? 2 : 0;
#else
    return 0;
#endif
}

/* bf16 on VDPBF16PS (cpu_conv_dp.c), where cpu_bf16.c chose it for convolutions: those
 * without groups, of stride 1 or 2, that AMX does not take, except first layers of fewer
 * than DP_MIN_C channels, which keep the rounded copies and the fp32 loops (a pair or
 * two of channels to sum a tap) */
#define DP_MIN_C 4
static int dp_takes(rt_backend *b, const rt_conv_desc *d)
{
#ifdef KILN_CONVK_X86
    const rtp_cpu *c = b->impl;
    return c->dp == RTP_DP_ALL && c->prec == RT_PREC_BF16 && !amx_takes(b, d) &&
           rt_conv_groups(d) == 1 && d->C >= DP_MIN_C && (d->stride == 1 || d->stride == 2);
#else
    return 0;
#endif
}

size_t rtp_cpu_conv2d_workspace(rt_backend *b, const rt_conv_desc *d)
{
#ifdef KILN_CONVK_X86
    const int amx = amx_takes(b, d);
    if (amx) return (amx == 1 ? rtp_cpu_amx_workspace : rtp_cpu_amx_gemm_workspace)(b->threads, d);
    if (dp_takes(b, d)) return rtp_cpu_dp_conv_workspace(b->threads, d);
#endif
    return ws_fp32(b, d) + (rtp_cpu_bf16(b) ? rtp_cpu_bf16_conv_stage(d) : 0);
}

/* The AMX or VDPBF16PS pass's scratch, or NULL (err set) */
static float *amx_ws(rt_backend *b, const rt_conv_desc *d, rt_error *err)
{
    return rtp_cpu_scratch(b, rtp_cpu_conv2d_workspace(b, d), err);
}

/* bf16 (cpu_bf16.c): where the rounded copies of the op's inputs go, or NULL for fp32
 * (and on a too-small workspace, with err set) */
static float *bf16_stage(rt_backend *b, const rt_conv_desc *d, rt_error *err)
{
    if (!rtp_cpu_bf16(b)) return NULL;
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv2d_workspace(b, d), err);
    return ws ? ws + ws_fp32(b, d) / sizeof(float) : NULL;
}

/* col (C*R*S, P*Q) <- image x (C,H,W), zero outside the padded border. */
void rtp_cpu_im2col(float *col, const float *x, const rt_conv_desc *d)
{
    const int H = d->H, W = d->W, P = d->P, Q = d->Q, st = d->stride, pad = d->pad;
    for (int c = 0; c < d->C; c++)
        for (int r = 0; r < d->R; r++)
            for (int s = 0; s < d->S; s++) {
                float *dst = col + ((size_t)(c * d->R + r) * d->S + s) * P * Q;
                const float *xc = x + (size_t)c * H * W;
                for (int p = 0; p < P; p++, dst += Q) {
                    int ih = p * st - pad + r;
                    if (ih < 0 || ih >= H) {
                        memset(dst, 0, (size_t)Q * sizeof *dst);
                        continue;
                    }
                    const float *row = xc + (size_t)ih * W;
                    if (st == 1) {
                        int q0 = pad - s > 0 ? pad - s : 0;
                        int q1 = W + pad - s < Q ? W + pad - s : Q;
                        if (q1 < q0) q1 = q0;
                        for (int q = 0; q < q0; q++) dst[q] = 0.0f;
                        memcpy(dst + q0, row + q0 - pad + s, (size_t)(q1 - q0) * sizeof *dst);
                        for (int q = q1; q < Q; q++) dst[q] = 0.0f;
                    } else {
                        for (int q = 0; q < Q; q++) {
                            int iw = q * st - pad + s;
                            dst[q] = (iw >= 0 && iw < W) ? row[iw] : 0.0f;
                        }
                    }
                }
            }
}

__attribute__((noinline)) static void add_span(float *restrict dst, const float *restrict src,
                                               int n)
{
    for (int i = 0; i < n; i++) dst[i] += src[i];
}

/* Sum of n floats with 16 independent partial sums (vectorisable; fixed order, so
 * deterministic): the scalar chain was 1-2% of a training step. */
__attribute__((noinline)) float rtp_cpu_row_sum(const float *restrict x, int n)
{
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) acc[j] += x[i + j];
    float s = 0.0f;
    for (int j = 0; j < 16; j++) s += acc[j];
    for (; i < n; i++) s += x[i];
    return s;
}

/* Dot product of n floats, 16 partial sums (vectorisable, fixed order). */
__attribute__((noinline)) static float dot(const float *restrict a, const float *restrict b, int n)
{
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) acc[j] += a[i + j] * b[i + j];
    float s = 0.0f;
    for (int j = 0; j < 16; j++) s += acc[j];
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* image dx (C,H,W) += fold of col (C*R*S, P*Q); dx must be zeroed by the caller. */
void rtp_cpu_col2im(float *dx, const float *col, const rt_conv_desc *d)
{
    const int H = d->H, W = d->W, P = d->P, Q = d->Q, st = d->stride, pad = d->pad;
    for (int c = 0; c < d->C; c++)
        for (int r = 0; r < d->R; r++)
            for (int s = 0; s < d->S; s++) {
                const float *src = col + ((size_t)(c * d->R + r) * d->S + s) * P * Q;
                float *xc = dx + (size_t)c * H * W;
                for (int p = 0; p < P; p++, src += Q) {
                    int ih = p * st - pad + r;
                    if (ih < 0 || ih >= H) continue;
                    float *row = xc + (size_t)ih * W;
                    if (st == 1) { /* contiguous, vectorisable range of valid columns */
                        int q0 = pad - s > 0 ? pad - s : 0;
                        int q1 = W + pad - s < Q ? W + pad - s : Q;
                        add_span(row + q0 - pad + s, src + q0, q1 - q0);
                        continue;
                    }
                    for (int q = 0; q < Q; q++) {
                        int iw = q * st - pad + s;
                        if (iw >= 0 && iw < W) row[iw] += src[q];
                    }
                }
            }
}

/* The forward, and each output plane's moments into mom (N x K planes) unless NULL. */
static rt_status conv_fwd(rt_backend *b, rt_tensor *out, double *mom, const rt_tensor *in,
                          const rt_tensor *w, const rt_tensor *bias, const rt_conv_desc *d,
                          rt_error *err)
{
#ifdef KILN_CONVK_X86
    const int amx = amx_takes(b, d);
    if (amx || dp_takes(b, d)) {
        float *ws = amx_ws(b, d, err);
        if (!ws) return err ? err->code : RT_EINVAL;
        if (amx)
            (amx == 1 ? rtp_cpu_amx_fwd : rtp_cpu_amx_gemm_fwd)(b, ws, out, mom, in, w, bias, d);
        else rtp_cpu_dp_conv_fwd(b, ws, out, mom, in, w, bias, d);
        return RT_OK;
    }
#endif
    float *at = bf16_stage(b, d, err);
    if (rtp_cpu_bf16(b) && !at) return err ? err->code : RT_EINVAL;
    rt_tensor xs, wsd;
    if (at) {
        xs = rtp_cpu_bf16_stage(b, &at, in);
        wsd = rtp_cpu_bf16_stage(b, &at, w);
        in = &xs, w = &wsd;
    }
    const rtp_convk *kern;
    const direct_ops *path = direct_path(b, d, &kern);
    if (path) return path->fwd(b, kern, out, mom, in, w, bias, d, err);
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv2d_workspace(b, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const int K = d->K, PQ = d->P * d->Q, T = rtp_conv_threads(b, d->N);
    const int G = rt_conv_groups(d), Kg = K / G, CRS = group_c(d) * d->R * d->S;
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)K * PQ, per = col_floats(d);
    const size_t ghw = (size_t)group_c(d) * d->H * d->W;
    rt_conv_desc gd = *d;
    gd.C = group_c(d);
    const float *X = in->data, *Wt = w->data, *B = bias ? bias->data : NULL;
    float *Y = out->data;
#pragma omp parallel num_threads(T)
    {
        float *col = ws + per * (size_t)omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < d->N; n++) {
            float *y = Y + kpq * (size_t)n;
            if (B)
                for (int k = 0; k < K; k++)
                    for (int i = 0; i < PQ; i++) y[(size_t)k * PQ + i] = B[k];
            for (int g = 0; g < G; g++) {
                const float *x = X + chw * (size_t)n + ghw * g;
                const float *src = x;
                if (!no_unfold(d)) {
                    rtp_cpu_im2col(col, x, &gd);
                    src = col;
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Kg, PQ, CRS, 1.0f,
                            Wt + (size_t)g * Kg * CRS, CRS, src, PQ, B ? 1.0f : 0.0f,
                            y + (size_t)g * Kg * PQ, PQ);
            }
            if (mom)
                rtp_cpu_plane_moments(mom + (size_t)n * K * (RT_MOMENT_FLOATS / 2), y, K,
                                      (size_t)PQ);
        }
    }
    return RT_OK;
}

rt_status rtp_cpu_conv2d_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in, const rt_tensor *w,
                             const rt_tensor *bias, const rt_conv_desc *d, rt_error *err)
{
    return conv_fwd(b, out, NULL, in, w, bias, d, err);
}

rt_status rtp_cpu_conv2d_fwd_moments(rt_backend *b, rt_tensor *out, rt_tensor *moments,
                                     const rt_tensor *in, const rt_tensor *w, const rt_tensor *bias,
                                     const rt_conv_desc *d, rt_error *err)
{
    return conv_fwd(b, out, moments->data, in, w, bias, d, err);
}

rt_status rtp_cpu_conv2d_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                  const rt_tensor *w, const rt_conv_desc *d, rt_error *err)
{
#ifdef KILN_CONVK_X86
    const int amx = amx_takes(b, d);
    if (amx || dp_takes(b, d)) {
        float *ws = amx_ws(b, d, err);
        if (!ws) return err ? err->code : RT_EINVAL;
        if (amx)
            (amx == 1 ? rtp_cpu_amx_bwd_data : rtp_cpu_amx_gemm_bwd_data)(b, ws, din, dout, w, d);
        else rtp_cpu_dp_conv_bwd_data(b, ws, din, dout, w, d);
        return RT_OK;
    }
#endif
    float *at = bf16_stage(b, d, err);
    if (rtp_cpu_bf16(b) && !at) return err ? err->code : RT_EINVAL;
    rt_tensor dys, wsd;
    if (at) {
        dys = rtp_cpu_bf16_stage(b, &at, dout);
        wsd = rtp_cpu_bf16_stage(b, &at, w);
        dout = &dys, w = &wsd;
    }
    const rtp_convk *kern;
    const direct_ops *path = direct_path(b, d, &kern);
    if (path) return path->bwd_data(b, kern, din, dout, w, d, err);
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv2d_workspace(b, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const int K = d->K, PQ = d->P * d->Q, T = rtp_conv_threads(b, d->N);
    const int G = rt_conv_groups(d), Kg = K / G, CRS = group_c(d) * d->R * d->S;
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)K * PQ, per = col_floats(d);
    const size_t ghw = (size_t)group_c(d) * d->H * d->W;
    rt_conv_desc gd = *d;
    gd.C = group_c(d);
    const float *DY = dout->data, *Wt = w->data;
    float *DX = din->data;
#pragma omp parallel num_threads(T)
    {
        float *col = ws + per * (size_t)omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < d->N; n++)
            for (int g = 0; g < G; g++) {
                float *dx = DX + chw * (size_t)n + ghw * g;
                const float *dy = DY + kpq * (size_t)n + (size_t)g * Kg * PQ;
                const float *wg = Wt + (size_t)g * Kg * CRS;
                if (no_unfold(d)) {
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, CRS, PQ, Kg, 1.0f, wg, CRS,
                                dy, PQ, 0.0f, dx, PQ);
                    continue;
                }
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, CRS, PQ, Kg, 1.0f, wg, CRS, dy,
                            PQ, 0.0f, col, PQ);
                memset(dx, 0, ghw * sizeof *dx);
                rtp_cpu_col2im(dx, col, &gd);
            }
    }
    return RT_OK;
}

/* dbias[k] = the sum of dy's plane k over the images, in image order (bf16's: from the
 * fp32 dy, before it is rounded) */
static void bias_grad(rt_backend *b, rt_tensor *dbias, const rt_tensor *dout, const rt_conv_desc *d)
{
    if (!dbias) return;
    const int K = d->K, PQ = d->P * d->Q;
    const float *dy = dout->data;
    float *db = dbias->data;
#pragma omp parallel for schedule(static) num_threads(b->threads) if (K >= 8)
    for (int k = 0; k < K; k++) {
        float s = 0.0f;
        for (int n = 0; n < d->N; n++) s += rtp_cpu_row_sum(dy + ((size_t)n * K + k) * PQ, PQ);
        db[k] = s;
    }
}

rt_status rtp_cpu_conv2d_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                    const rt_tensor *dout, const rt_tensor *in,
                                    const rt_conv_desc *d, rt_error *err)
{
#ifdef KILN_CONVK_X86
    const int amx = amx_takes(b, d);
    if (amx || dp_takes(b, d)) {
        float *ws = amx_ws(b, d, err);
        if (!ws) return err ? err->code : RT_EINVAL;
        bias_grad(b, dbias, dout, d);
        if (amx)
            (amx == 1 ? rtp_cpu_amx_bwd_filter : rtp_cpu_amx_gemm_bwd_filter)(b, ws, dw, dout, in,
                                                                              d);
        else rtp_cpu_dp_conv_bwd_filter(b, ws, dw, dout, in, d);
        return RT_OK;
    }
#endif
    float *at = bf16_stage(b, d, err);
    if (rtp_cpu_bf16(b) && !at) return err ? err->code : RT_EINVAL;
    rt_tensor dys, xs;
    if (at) { /* the bias gradient sums the fp32 dy, as CUDA's does */
        bias_grad(b, dbias, dout, d);
        dys = rtp_cpu_bf16_stage(b, &at, dout);
        xs = rtp_cpu_bf16_stage(b, &at, in);
        dout = &dys, in = &xs, dbias = NULL;
    }
    const rtp_convk *kern;
    const direct_ops *path = direct_path(b, d, &kern);
    if (path) return path->bwd_filter(b, kern, dw, dbias, dout, in, d, err);
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv2d_workspace(b, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const int K = d->K, PQ = d->P * d->Q, T = rtp_conv_threads(b, d->N);
    const int G = rtp_conv_groups(d->N), CG = rt_conv_groups(d), Kg = K / CG;
    const int CRS = group_c(d) * d->R * d->S;
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)K * PQ;
    const size_t ghw = (size_t)group_c(d) * d->H * d->W;
    rt_conv_desc gd = *d;
    gd.C = group_c(d);
    const size_t colsz = col_floats(d), accsz = acc_floats(d), nw = (size_t)K * CRS;
    float *accs = ws + (size_t)(b->threads > 0 ? b->threads : 1) * colsz;
    const float *X = in->data, *DY = dout->data;
    float *DW = dw->data, *DB = dbias ? dbias->data : NULL;
#pragma omp parallel num_threads(T)
    {
        /* ---- partial sums over fixed groups of RTP_CONV_GROUP images ---- */
        float *col = ws + colsz * (size_t)omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
        for (int g = 0; g < G; g++) {
            float *acc = accs + accsz * (size_t)g, *accb = acc + nw;
            int n1 = (g + 1) * RTP_CONV_GROUP < d->N ? (g + 1) * RTP_CONV_GROUP : d->N;
            for (int n = g * RTP_CONV_GROUP; n < n1; n++) {
                const float *dy = DY + kpq * (size_t)n;
                for (int cg = 0; cg < CG; cg++) {
                    const float *x = X + chw * (size_t)n + ghw * cg,
                                *dyg = dy + (size_t)cg * Kg * PQ;
                    float *accg = acc + (size_t)cg * Kg * CRS;
                    const float *src = x;
                    if (!no_unfold(d)) {
                        rtp_cpu_im2col(col, x, &gd);
                        src = col;
                    }
                    if (CRS <= SMALL_CRS) { /* e.g. a first layer: dots beat a 32x9 GEMM call */
                        for (int k = 0; k < Kg; k++)
                            for (int c = 0; c < CRS; c++) {
                                float v = dot(dyg + (size_t)k * PQ, src + (size_t)c * PQ, PQ);
                                accg[(size_t)k * CRS + c] =
                                    n == g * RTP_CONV_GROUP ? v : accg[(size_t)k * CRS + c] + v;
                            }
                    } else {
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Kg, CRS, PQ, 1.0f, dyg,
                                    PQ, src, PQ, n == g * RTP_CONV_GROUP ? 0.0f : 1.0f, accg, CRS);
                    }
                }
                for (int k = 0; k < K && DB; k++) { /* no bias: no pass over dy for it */
                    float sum = rtp_cpu_row_sum(dy + (size_t)k * PQ, PQ);
                    accb[k] = n == g * RTP_CONV_GROUP ? sum : accb[k] + sum;
                }
            }
        }
        /* ---- sum the groups in order (deterministic for any thread count) ---- */
#pragma omp for schedule(static)
        for (size_t i = 0; i < nw + (size_t)K; i++) {
            float s = 0.0f;
            for (int g = 0; g < G; g++) s += accs[accsz * (size_t)g + i];
            if (i < nw) DW[i] = s;
            else if (DB) DB[i - nw] = s;
        }
    }
    return RT_OK;
}
