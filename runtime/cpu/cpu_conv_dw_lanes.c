/* cpu_conv_dw_lanes.c - depthwise convolution on small planes (MobileNetV2's on 32x32
 * images: 16x16 down to 1x1) with the channels in the vector lanes.
 *
 * cpu_conv_dw.c's plane loops vectorise along a row: on an 8x8 plane or smaller a row is
 * 8 floats or fewer, and copying each plane into a zero-bordered buffer costs more than
 * the taps (on 16x16 planes this path still took 30 % less time in MobileNetV2's step,
 * bench/README.md). Here each image is transposed once from (C, H*W) to (H*W, C), so that a
 * position holds all of its channels side by side, and every tap is one multiply-add
 * along C (96 to 960 channels: whole vectors). Borders need no buffer: the taps that
 * fall outside the plane are skipped (a padded zero adds nothing).
 *   forward      y[p,q,:] = bias + sum over the (r, s) in order of w[r,s,:] x[ih,iw,:]
 *   input grad   dx[h,w,:] = sum over the taps that reach (h, w), in (r, s) order
 *   weight grad  dw[:,r,s] = sum over images and positions of dy[p,q,:] x[ih,iw,:]
 * The forward and the input gradient work an image at a time (images are independent);
 * the weight gradient sums fixed groups of RTP_CONV_GROUP images, whichever thread runs
 * them, and then the groups in order: the bits depend neither on the thread count nor
 * on the instruction set (the loops are built for AVX-512 and AVX2 beside the baseline,
 * the same operations in the same order).
 * rtp_cpu_conv_dw_lanes says whether a depthwise convolution takes this path (planes of
 * at most RTP_DW_LANES_HW positions, filters up to 7x7); cpu_conv_dw.c hands those over.
 */
#include <omp.h>
#include <string.h>

#include "cpu_conv_layout.h"
#include "cpu_internal.h"

#define RTP_DW_LANES_HW 256
#define RTP_DW_LANES_TAPS 49 /* filters up to 7x7 */

int rtp_cpu_conv_dw_lanes(const rt_conv_desc *d)
{
    return d->H * d->W <= RTP_DW_LANES_HW && d->R * d->S <= RTP_DW_LANES_TAPS;
}

/* Scratch (floats): the weights as (R*S, C), then per thread an image's input and
 * output planes as (positions, C), then one (R*S + 1, C) partial sum per image group. */
typedef struct geom {
    size_t wt, per, acc;
} geom;

static geom geom_of(const rt_conv_desc *d)
{
    const size_t C = (size_t)d->C, RS = (size_t)d->R * d->S;
    geom g = {rtp_r16(RS * C), rtp_r16((size_t)d->H * d->W * C) + rtp_r16((size_t)d->P * d->Q * C),
              rtp_r16((RS + 1) * C)};
    return g;
}

static int team(rt_backend *b, int n) { return n < 2 || b->threads < 2 ? 1 : b->threads; }

size_t rtp_cpu_conv_dw_lanes_workspace(rt_backend *b, const rt_conv_desc *d)
{
    const geom g = geom_of(d);
    size_t T = (size_t)(b->threads > 0 ? b->threads : 1);
    return (g.wt + T * g.per + (size_t)rtp_conv_groups(d->N) * g.acc) * sizeof(float);
}

/* An image's plane set (ch, pos) as (pos, ch) in tmp, or in place where one position
 * makes the two layouts one */
static const float *to_lanes(float *tmp, const float *a, int ch, int pos)
{
    if (pos == 1) return a;
    rtp_cpu_transpose(tmp, a, ch, pos, 1);
    return tmp;
}

/* The taps that output position (p, q) reads inside the plane, in (r, s) order: tap[i]
 * (r*S + s) reads input position pos[i]; returns how many (a padded zero adds nothing) */
static inline int taps_of(const rt_conv_desc *d, int p, int q, int *tap, int *pos)
{
    int n = 0;
    for (int r = 0; r < d->R; r++) {
        const int ih = p * d->stride - d->pad + r;
        for (int s = 0; s < d->S && ih >= 0 && ih < d->H; s++) {
            const int iw = q * d->stride - d->pad + s;
            if (iw < 0 || iw >= d->W) continue;
            tap[n] = r * d->S + s, pos[n++] = ih * d->W + iw;
        }
    }
    return n;
}

/* The taps that reach input position (h, w), in (r, s) order: tap[i] from output
 * position pos[i]; returns how many */
static inline int taps_to(const rt_conv_desc *d, int h, int w, int *tap, int *pos)
{
    int n = 0;
    const int st = d->stride;
    for (int r = 0; r < d->R; r++) {
        const int ph = h + d->pad - r;
        for (int s = 0; s < d->S && ph >= 0 && ph % st == 0 && ph / st < d->P; s++) {
            const int qw = w + d->pad - s;
            if (qw < 0 || qw % st || qw / st >= d->Q) continue;
            tap[n] = r * d->S + s, pos[n++] = ph / st * d->Q + qw / st;
        }
    }
    return n;
}

/* o[c] += a[c] * b[c], c < n: the one vector loop of every pass (its own function, so
 * that restrict holds and no run-time alias check sends it to a scalar copy) */
RTP_SPAN static void madd(float *restrict o, const float *restrict a, const float *restrict b,
                          int n)
{
    for (int c = 0; c < n; c++) o[c] += a[c] * b[c];
}

RTP_SPAN static void add(float *restrict o, const float *restrict a, int n)
{
    for (int c = 0; c < n; c++) o[c] += a[c];
}

/* The forward (back = 0): out = yt (P*Q, C), each position start (bias, or 0 when NULL)
 * plus its taps' weights (rows of wt, (R*S, C)) times src = xt (H*W, C); the input
 * gradient (back = 1): out = dxt (H*W, C), each position the sum of the taps that reach
 * it times src = dyt (P*Q, C). One vector multiply-add along C per tap. */
static void tap_sums(float *out, const float *start, const float *wt, const float *src,
                     const rt_conv_desc *d, int back)
{
    const int C = d->C, rows = back ? d->H : d->P, cols = back ? d->W : d->Q;
    int tap[RTP_DW_LANES_TAPS], pos[RTP_DW_LANES_TAPS];
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            float *o = out + (size_t)(i * cols + j) * C;
            const int n = back ? taps_to(d, i, j, tap, pos) : taps_of(d, i, j, tap, pos);
            if (start) memcpy(o, start, (size_t)C * sizeof *o);
            else memset(o, 0, (size_t)C * sizeof *o);
            for (int t = 0; t < n; t++) {
                madd(o, wt + (size_t)tap[t] * C, src + (size_t)pos[t] * C, C);
            }
        }
}

/* acc (R*S, C) += dyt (P*Q, C) times each tap's input rows of xt (H*W, C); accb (C) +=
 * dyt's positions unless NULL */
static void wgrad_image(float *acc, float *accb, const float *dyt, const float *xt,
                        const rt_conv_desc *d)
{
    const int C = d->C;
    int tap[RTP_DW_LANES_TAPS], pos[RTP_DW_LANES_TAPS];
    for (int p = 0; p < d->P; p++)
        for (int q = 0; q < d->Q; q++) {
            const float *dy = dyt + (size_t)(p * d->Q + q) * C;
            const int n = taps_of(d, p, q, tap, pos);
            if (accb) add(accb, dy, C);
            for (int t = 0; t < n; t++) {
                madd(acc + (size_t)tap[t] * C, dy, xt + (size_t)pos[t] * C, C);
            }
        }
}

static float *weights_by_tap(rt_backend *b, const rt_conv_desc *d, const rt_tensor *w,
                             rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_dw_lanes_workspace(b, d), err);
    if (ws) rtp_cpu_transpose(ws, w->data, d->C, d->R * d->S, 1);
    return ws;
}

/* The forward (back = 0: src x, dst y, each plane's moments into mom unless NULL) or
 * the input gradient (back = 1: src dy, dst dx), an image at a time: src's image to
 * (positions, C), the tap sums, the result back to (C, positions) */
static rt_status image_pass(rt_backend *b, float *dst, double *mom, const float *src,
                            const rt_tensor *w, const float *bias, const rt_conv_desc *d, int back,
                            rt_error *err)
{
    float *ws = weights_by_tap(b, d, w, err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const geom g = geom_of(d);
    const int C = d->C, hw = d->H * d->W, pq = d->P * d->Q;
    const int in = back ? pq : hw, out = back ? hw : pq;
#pragma omp parallel num_threads(team(b, d->N))
    {
        float *st = ws + g.wt + g.per * (size_t)omp_get_thread_num();
        float *dt = st + rtp_r16((size_t)in * C);
#pragma omp for schedule(static)
        for (int n = 0; n < d->N; n++) {
            float *o = dst + (size_t)n * C * out;
            tap_sums(out == 1 ? o : dt, bias, ws, to_lanes(st, src + (size_t)n * C * in, C, in), d,
                     back);
            if (out > 1) rtp_cpu_transpose(o, dt, out, C, 1);
            if (mom)
                rtp_cpu_plane_moments(mom + (size_t)n * C * (RT_MOMENT_FLOATS / 2), o, C,
                                      (size_t)out);
        }
    }
    return RT_OK;
}

rt_status rtp_cpu_conv_dw_lanes_fwd(rt_backend *b, rt_tensor *out, double *mom, const rt_tensor *in,
                                    const rt_tensor *w, const rt_tensor *bias,
                                    const rt_conv_desc *d, rt_error *err)
{
    return image_pass(b, out->data, mom, in->data, w, bias ? bias->data : NULL, d, 0, err);
}

rt_status rtp_cpu_conv_dw_lanes_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                         const rt_tensor *w, const rt_conv_desc *d, rt_error *err)
{
    return image_pass(b, din->data, NULL, dout->data, w, NULL, d, 1, err);
}

rt_status rtp_cpu_conv_dw_lanes_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                           const rt_tensor *dout, const rt_tensor *in,
                                           const rt_conv_desc *d, rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_dw_lanes_workspace(b, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const geom g = geom_of(d);
    const int C = d->C, hw = d->H * d->W, pq = d->P * d->Q, RS = d->R * d->S;
    const int G = rtp_conv_groups(d->N);
    const float *X = in->data, *DY = dout->data;
    float *DW = dw->data, *DB = dbias ? dbias->data : NULL;
    float *accs = ws + g.wt + g.per * (size_t)(b->threads > 0 ? b->threads : 1);
#pragma omp parallel num_threads(team(b, G))
    {
        float *xt = ws + g.wt + g.per * (size_t)omp_get_thread_num();
        float *dyt = xt + rtp_r16((size_t)hw * C);
#pragma omp for schedule(static)
        for (int grp = 0; grp < G; grp++) {
            float *acc = accs + g.acc * (size_t)grp;
            memset(acc, 0, (size_t)(RS + 1) * C * sizeof *acc);
            const int n1 = (grp + 1) * RTP_CONV_GROUP < d->N ? (grp + 1) * RTP_CONV_GROUP : d->N;
            for (int n = grp * RTP_CONV_GROUP; n < n1; n++) {
                wgrad_image(acc, DB ? acc + (size_t)RS * C : NULL,
                            to_lanes(dyt, DY + (size_t)n * C * pq, C, pq),
                            to_lanes(xt, X + (size_t)n * C * hw, C, hw), d);
            }
        }
        /* the groups in order, into (C, R*S) */
#pragma omp for schedule(static)
        for (int c = 0; c < C; c++)
            for (int t = 0; t <= RS; t++) {
                if (t == RS && !DB) break;
                float s = 0.0f;
                for (int grp = 0; grp < G; grp++)
                    s += accs[g.acc * (size_t)grp + (size_t)t * C + c];
                if (t < RS) DW[(size_t)c * RS + t] = s;
                else DB[c] = s;
            }
    }
    return RT_OK;
}
