/* cuda_elem.cuh - the per-element bodies of the elementwise, pooling, im2col, loss and
 * optimiser kernels, as __host__ __device__ functions.
 *
 * Why a header with definitions (rather than a .c file): the same code must run
 * in two places - inside the __global__ kernels (cuda_*.cu: grid-stride loops calling
 * these) and on the host in tests/gpu/test_kernels_host.cu, which loops over every
 * index on the CPU and compares with the CPU backend. So the kernels' index math and
 * formulas are executed and checked on machines without a GPU; only the launch itself
 * needs one. Each function writes exactly what one thread writes for index i.
 * Formulas are the CPU reference's (runtime/cpu/), written in the same order; built
 * with -fmad=false (device) and ISO C++ (host: no contraction), so they round alike.
 */
#ifndef CUDA_ELEM_CUH
#define CUDA_ELEM_CUH

#include <math.h>
#include <stdint.h>
#include <string.h>

#define RT_AMP_FN __host__ __device__ static inline /* rt_amp_rule.h on the device */
#include "../rt_amp_rule.h"
#define RT_ACT_HD __host__ __device__ /* rt_act_math.h on the device */
#include "../rt_act_math.h"
#include "cuda_kernels.h"

#define RTP_HD __host__ __device__ static inline

/* a / b and a % b of indices: in 32 bits whenever both fit, as they do for every tensor
 * below 2^32 elements. A GPU has no 64-bit integer divider: a 64-bit / or % is a
 * subroutine of some 70 instructions, a 32-bit one a few, and the per-element bodies
 * below divide once or twice per element. The quotient is the same either way. */
RTP_HD size_t rtp_udiv(size_t a, size_t b)
{
    return (a | b) >> 32 ? a / b : (size_t)((uint32_t)a / (uint32_t)b);
}

RTP_HD size_t rtp_umod(size_t a, size_t b)
{
    return (a | b) >> 32 ? a % b : (size_t)((uint32_t)a % (uint32_t)b);
}

/* ---- Philox4x32-10 (rt_rng.c's rounds and constants) ---- */

RTP_HD uint32_t rtp_mulhi(uint32_t a, uint32_t b)
{
#ifdef __CUDA_ARCH__
    return __umulhi(a, b);
#else
    return (uint32_t)(((uint64_t)a * b) >> 32);
#endif
}

RTP_HD void rtp_philox(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    for (int round = 0; round < 10; round++) {
        uint32_t hi0 = rtp_mulhi(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];
        uint32_t hi1 = rtp_mulhi(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];
        uint32_t n0 = hi1 ^ c[1] ^ k0;
        uint32_t n2 = hi0 ^ c[3] ^ k1;
        c[1] = lo1;
        c[3] = lo0;
        c[0] = n0;
        c[2] = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

/* ---- elementwise (cpu_act.c, cpu_dense.c, cpu_conv.c) ---- */

RTP_HD void rtp_relu_fwd_at(size_t i, float *y, const float *x, float slope)
{
    float xi = x[i];
    float k = xi > 0.0f ? 1.0f : slope;
    y[i] = xi * k;
}

RTP_HD void rtp_relu_bwd_at(size_t i, float *dx, const float *dy, const float *y, float slope)
{
    float k = y[i] > 0.0f ? 1.0f : slope;
    dx[i] = dy[i] * k;
}

/* the activations of act_fwd / act_bwd (kind: rt_act_kind), rt_act_math.h's formulas */
RTP_HD void rtp_act_fwd_at(size_t i, float *y, const float *x, int kind)
{
    y[i] = rt_act_fwd1(kind, x[i]);
}

RTP_HD void rtp_act_bwd_at(size_t i, float *dx, const float *dy, const float *x, const float *y,
                           int kind)
{
    dx[i] = rt_act_bwd1(kind, dy[i], x[i], y[i]);
}

/* relu(a + b) as cpu_backend.c's add_relu: v * (v > 0 ? 1 : 0) */
RTP_HD float rtp_add_relu_of(float a, float b)
{
    float v = a + b;
    return v * (v > 0.0f ? 1.0f : 0.0f);
}

/* rt_rng.c's bernoulli_threshold (static there): keep iff (word >> 8) < threshold,
 * which equals uniform < p exactly for every float p. */
RTP_HD uint32_t rtp_keep_threshold(float p)
{
    if (!(p > 0.0f)) return 0;
    if (p >= 1.0f) return 1u << 24;
    return (uint32_t)ceil((double)p * 16777216.0);
}

/* Philox block blk = stream words 4blk..4blk+3 -> elements 4blk..4blk+3 (< n). */
RTP_HD void rtp_dropout_block_at(size_t blk, float *y, float *mask, const float *x, size_t n,
                                 rtp_philox_stream st, uint32_t threshold, float value)
{
    uint32_t c[4] = {(uint32_t)blk, (uint32_t)((uint64_t)blk >> 32), st.c2, st.c3};
    rtp_philox(c, st.key0, st.key1);
    for (int l = 0; l < 4; l++) {
        size_t i = blk * 4 + (size_t)l;
        if (i >= n) break;
        float m = (c[l] >> 8) < threshold ? value : 0.0f;
        mask[i] = m;
        y[i] = x[i] * m;
    }
}

RTP_HD void rtp_bias_add_at(size_t i, float *y, const float *bias, int K, int PQ)
{
    y[i] = y[i] + bias[rtp_umod(rtp_udiv(i, (size_t)PQ), (size_t)K)];
}

/* db[o] = sum_n dy[n][o], from 0 in n order (cpu_dense.c), staged through shared memory
 * (col_sums_k): a block owns RTP_COLS_W columns and walks the rows in tiles of
 * RTP_COLS_ROWS that all its threads load (neighbouring threads, neighbouring columns:
 * coalesced); thread c then adds column c of the tile in row order, so the order, and
 * the result, are the CPU's bit for bit, and the serial part reads shared memory. */
#define RTP_COLS_W 32
#define RTP_COLS_ROWS 64
#define RTP_COLS_LD (RTP_COLS_W + 1) /* a column's reads fall in distinct banks */

/* Thread t's loads: tile[r][c] = dy[r0 + r][o0 + c] (0 past the last column). */
RTP_HD void rtp_cols_load(int t, int T, float *tile, const float *dy, int N, int O, int r0, int o0)
{
    const int rows = N - r0 < RTP_COLS_ROWS ? N - r0 : RTP_COLS_ROWS;
    for (int e = t; e < rows * RTP_COLS_W; e += T) {
        int r = e / RTP_COLS_W, c = e % RTP_COLS_W, o = o0 + c;
        tile[r * RTP_COLS_LD + c] = o < O ? dy[(size_t)(r0 + r) * O + o] : 0.0f;
    }
}

/* s + column c of the tile's first `rows` rows, in row order. */
RTP_HD float rtp_cols_add(float s, const float *tile, int rows, int c)
{
    for (int r = 0; r < rows; r++) s = s + tile[r * RTP_COLS_LD + c];
    return s;
}

/* col_sums_k replayed on the host (the mock device, the host tests): every block, every
 * tile, with T threads loading. */
static inline void rtp_col_sums_host(float *db, const float *dy, int N, int O, int T)
{
    float tile[RTP_COLS_ROWS * RTP_COLS_LD];
    for (int o0 = 0; o0 < O; o0 += RTP_COLS_W) {
        float s[RTP_COLS_W] = {0};
        for (int r0 = 0; r0 < N; r0 += RTP_COLS_ROWS) {
            for (int t = 0; t < T; t++) rtp_cols_load(t, T, tile, dy, N, O, r0, o0);
            const int rows = N - r0 < RTP_COLS_ROWS ? N - r0 : RTP_COLS_ROWS;
            for (int c = 0; c < RTP_COLS_W; c++) s[c] = rtp_cols_add(s[c], tile, rows, c);
        }
        for (int c = 0; c < RTP_COLS_W && o0 + c < O; c++) db[o0 + c] = s[c];
    }
}

/* ---- pooling (cpu_pool.c; backward gathers over the covering windows) ---- */

/* The input rows [*a, *b) of output row p (columns alike), as cpu_pool.c's window():
 * the padded window clipped to the input, or the adaptive one. */
RTP_HD void rtp_pool_window(int p, int in, int out, int r, int stride, int pad, int adaptive,
                            int *a, int *b)
{
    if (adaptive) {
        *a = (int)((long long)p * in / out);
        *b = (int)(((long long)(p + 1) * in + out - 1) / out);
        return;
    }
    *a = p * stride - pad, *b = *a + r;
    if (*a < 0) *a = 0;
    if (*b > in) *b = in;
}

RTP_HD void rtp_pool_rows(rtp_pool_geom g, int p, int *a, int *b)
{
    rtp_pool_window(p, g.H, g.P, g.R, g.stride, g.pad, g.adaptive, a, b);
}

RTP_HD void rtp_pool_cols(rtp_pool_geom g, int q, int *a, int *b)
{
    rtp_pool_window(q, g.W, g.Q, g.S, g.stride, g.pad, g.adaptive, a, b);
}

/* First index (row-major) of rows [h0,h1) x cols [w0,w1) holding the max m, as
 * cpu_pool.c's generic loop. */
RTP_HD size_t rtp_argmax_at(const float *x, int W, int h0, int h1, int w0, int w1, float m)
{
    for (int r = h0; r < h1; r++)
        for (int s = w0; s < w1; s++) {
            size_t i = (size_t)r * W + s;
            float v = x[i];
            if (v == m || (m != m && v != v)) return i;
        }
    return (size_t)h0 * W + w0;
}

/* Output rows (or cols) whose window may cover input row ih: [*lo, *hi] (maybe empty),
 * a superset for adaptive windows (the caller checks each window). */
RTP_HD void rtp_covering(int ih, int in, int R, int stride, int pad, int adaptive, int P, int *lo,
                         int *hi)
{
    if (adaptive) {
        *lo = (int)((long long)ih * P / in) - 1;
        *hi = (int)((long long)(ih + 1) * P / in) + 1;
        if (*lo < 0) *lo = 0;
        if (*hi > P - 1) *hi = P - 1;
        return;
    }
    int a = ih + pad - R + 1;
    *lo = a <= 0 ? 0 : (a + stride - 1) / stride;
    *hi = (ih + pad) / stride;
    if (*hi > P - 1) *hi = P - 1;
}

RTP_HD void rtp_maxpool_fwd_at(size_t o, float *y, const float *x, rtp_pool_geom g)
{
    size_t pl = rtp_udiv(o, (size_t)g.P * g.Q);
    int pq = (int)(o - pl * g.P * g.Q), p = pq / g.Q, q = pq % g.Q, h0, h1, w0, w1;
    rtp_pool_rows(g, p, &h0, &h1);
    rtp_pool_cols(g, q, &w0, &w1);
    const float *xp = x + pl * g.H * g.W;
    float m = xp[(size_t)h0 * g.W + w0];
    for (int r = h0; r < h1; r++)
        for (int s = w0; s < w1; s++) {
            float v = xp[(size_t)r * g.W + s];
            if (v > m || v != v) m = v; /* NaN propagates, as PyTorch */
        }
    y[o] = m;
}

/* The gradient of input i of a pool: the dy of every window that covers it, for max
 * pooling (x and y given) where it was that window's maximum, for average pooling (x,
 * y NULL) times the window's share (inv: 1 / (R*S), the padding counts; an adaptive
 * window divides by its own size). */
RTP_HD void rtp_pool_bwd_at(size_t i, float *dx, const float *dy, const float *x, const float *y,
                            rtp_pool_geom g, float inv)
{
    size_t pl = rtp_udiv(i, (size_t)g.H * g.W);
    int hw = (int)(i - pl * g.H * g.W), ih = hw / g.W, iw = hw % g.W;
    const float *xp = x ? x + pl * g.H * g.W : NULL, *yp = y ? y + pl * g.P * g.Q : NULL;
    const float *dyp = dy + pl * g.P * g.Q;
    int p0, p1, q0, q1;
    rtp_covering(ih, g.H, g.R, g.stride, g.pad, g.adaptive, g.P, &p0, &p1);
    rtp_covering(iw, g.W, g.S, g.stride, g.pad, g.adaptive, g.Q, &q0, &q1);
    float acc = 0.0f;
    for (int p = p0; p <= p1; p++)
        for (int q = q0; q <= q1; q++) {
            int h0, h1, w0, w1;
            rtp_pool_rows(g, p, &h0, &h1);
            rtp_pool_cols(g, q, &w0, &w1);
            if (ih < h0 || ih >= h1 || iw < w0 || iw >= w1) continue;
            if (xp) {
                if (rtp_argmax_at(xp, g.W, h0, h1, w0, w1, yp[p * g.Q + q]) == (size_t)hw)
                    acc = acc + dyp[p * g.Q + q];
            } else {
                float k = g.adaptive ? 1.0f / (float)((h1 - h0) * (w1 - w0)) : inv;
                acc = acc + dyp[p * g.Q + q] * k;
            }
        }
    dx[i] = acc;
}

RTP_HD void rtp_maxpool_bwd_at(size_t i, float *dx, const float *dy, const float *x, const float *y,
                               rtp_pool_geom g)
{
    rtp_pool_bwd_at(i, dx, dy, x, y, g, 0.0f);
}

/* inv: 1 / (R*S) (the padding counts); an adaptive window divides by its own size */
RTP_HD void rtp_avgpool_fwd_at(size_t o, float *y, const float *x, rtp_pool_geom g, float inv)
{
    size_t pl = rtp_udiv(o, (size_t)g.P * g.Q);
    int pq = (int)(o - pl * g.P * g.Q), p = pq / g.Q, q = pq % g.Q, h0, h1, w0, w1;
    rtp_pool_rows(g, p, &h0, &h1);
    rtp_pool_cols(g, q, &w0, &w1);
    const float *xp = x + pl * g.H * g.W;
    float s = 0.0f, k = g.adaptive ? 1.0f / (float)((h1 - h0) * (w1 - w0)) : inv;
    for (int r = h0; r < h1; r++)
        for (int c = w0; c < w1; c++) s = s + xp[(size_t)r * g.W + c];
    y[o] = s * k;
}

RTP_HD void rtp_avgpool_bwd_at(size_t i, float *dx, const float *dy, rtp_pool_geom g, float inv)
{
    rtp_pool_bwd_at(i, dx, dy, NULL, NULL, g, inv);
}

/* ---- im2col / col2im of one image (cpu_conv.c); the kernels run a batch of them ---- */

/* Row `row` of the column matrix is ld floats from the previous one (ld = P*Q: one
 * image's matrix; larger: the image's slice of a wider matrix). */
RTP_HD void rtp_im2col_at(size_t i, float *col, const float *x, rtp_conv_geom g, size_t ld)
{
    const size_t PQ = (size_t)g.P * g.Q;
    size_t row = rtp_udiv(i, PQ), pq = i - row * PQ;
    int rs = (int)row, s = rs % g.S, r = rs / g.S % g.R, c = rs / g.S / g.R;
    int p = (int)pq / g.Q, q = (int)pq % g.Q;
    int ih = p * g.stride - g.pad + r, iw = q * g.stride - g.pad + s;
    col[row * ld + pq] =
        (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) ? x[((size_t)c * g.H + ih) * g.W + iw] : 0.0f;
}

/* dx[i] = sum of the col entries that read input i, in (r, s) order (no atomics). */
RTP_HD void rtp_col2im_at(size_t i, float *dx, const float *col, rtp_conv_geom g)
{
    const size_t PQ = (size_t)g.P * g.Q;
    size_t pl = rtp_udiv(i, (size_t)g.H * g.W); /* the channel */
    int hw = (int)(i - pl * g.H * g.W), iw = hw % g.W, ih = hw / g.W, c = (int)pl;
    float acc = 0.0f;
    for (int r = 0; r < g.R; r++) {
        int t = ih + g.pad - r; /* = p * stride */
        if (t < 0 || t % g.stride) continue;
        int p = t / g.stride;
        if (p >= g.P) continue;
        for (int s = 0; s < g.S; s++) {
            int u = iw + g.pad - s;
            if (u < 0 || u % g.stride) continue;
            int q = u / g.stride;
            if (q >= g.Q) continue;
            acc = acc + col[((size_t)(c * g.R + r) * g.S + s) * PQ + (size_t)p * g.Q + q];
        }
    }
    dx[i] = acc;
}

/* ---- softmax cross-entropy, one sample (cpu_xent.c); bad label -> NaN loss ---- */

RTP_HD void rtp_xent_fwd_at(int n, float *loss, float *probs, const float *logits,
                            const int32_t *labels, int L, float eps)
{
    const float *z = logits + (size_t)n * L;
    float *p = probs + (size_t)n * L;
    float m = z[0];
    for (int j = 1; j < L; j++) m = z[j] > m ? z[j] : m;
    double s = 0.0;
    for (int j = 0; j < L; j++) s += exp((double)z[j] - m);
    double lse = m + log(s);
    for (int j = 0; j < L; j++) p[j] = (float)exp((double)z[j] - lse);
    int y = labels[n];
    if (!(y >= 0 && y < L)) {
        loss[n] = (float)NAN;
    } else if (eps == 0.0f) {
        loss[n] = (float)(lse - z[y]);
    } else { /* label smoothing: cpu_xent.c's closed form */
        double e = eps, zs = 0.0;
        for (int j = 0; j < L; j++) zs += z[j];
        loss[n] = (float)(lse - (1.0 - e) * z[y] - e * zs / L);
    }
}

RTP_HD void rtp_xent_bwd_at(size_t i, float *g, const float *p, const int32_t *labels, float scale,
                            int L, float eps)
{
    int n = (int)rtp_udiv(i, (size_t)L), j = (int)(i - (size_t)n * L);
    const float off = eps / (float)L, hit = 1.0f - eps + off; /* cpu_xent.c's target */
    g[i] = (p[i] - (j == labels[n] ? hit : off)) * scale;
}

/* ---- gradient clipping (cpu_clip.c) ---- */

/* The clamp of clip_grad_value_. */
RTP_HD void rtp_clip_value_at(size_t i, float *g, float v)
{
    g[i] = g[i] > v ? v : (g[i] < -v ? -v : g[i]);
}

/* The squares of thread t of T over g[lo, hi) (stride T), in double. */
RTP_HD double rtp_clip_sq_part(int t, int T, const float *g, size_t lo, size_t hi)
{
    double s = 0.0;
    for (size_t i = lo + (size_t)t; i < hi; i += (size_t)T) s += (double)g[i] * g[i];
    return s;
}

/* The norm from the RT_CLIP_PARTS partials (in order) into w[0], the factor into w[1]. */
RTP_HD void rtp_clip_finish(float *w, const double *part, double max_norm)
{
    double ss = 0.0;
    for (int p = 0; p < RT_CLIP_PARTS; p++) ss += part[p];
    const double total = sqrt(ss), coef = max_norm / (total + 1e-6);
    w[0] = (float)total;
    w[1] = coef < 1.0 ? (float)coef : 1.0f;
}

/* ---- optimisers (rtp_optim_*_range of rt_optim_kernels.c, line by line) ---- */

RTP_HD void rtp_adam_at(size_t i, float *p, float *m, float *v, const float *g,
                        const rt_adam_coef *c)
{
    float pi = p[i];
    if (c->decay_factor != 1.0f) pi = pi * c->decay_factor;
    float gi = g[i];
    if (c->weight_decay != 0.0f) gi = gi + c->weight_decay * pi;
    float mi = m[i] * c->beta1 + c->one_minus_beta1 * gi;
    float vi = v[i] * c->beta2 + c->one_minus_beta2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float denom = sqrtf(vi) / c->bias_correction2_sqrt + c->eps;
    p[i] = pi + -c->step_size * (mi / denom);
}

RTP_HD void rtp_sgd_at(size_t i, float *p, float *buf, const float *g, const rt_sgd_coef *c)
{
    float gi = g[i];
    if (c->weight_decay != 0.0f) gi = gi + c->weight_decay * p[i];
    if (c->momentum != 0.0f) {
        float b = c->first ? gi : buf[i] * c->momentum + c->one_minus_dampening * gi;
        buf[i] = b;
        gi = c->nesterov ? gi + c->momentum * b : b;
    }
    p[i] = p[i] + -c->lr * gi;
}

/* ---- per-channel reductions in two levels (batch norm, the conv bias gradient) ----
 * Channel c of an (N, C, HW) tensor holds M = N * HW elements; its element j (sample
 * j / HW, position j % HW) is at rtp_chan_at(j). Level 1: P = rtp_red_parts(M) blocks per
 * channel (cuda_kernels.h); block p takes the contiguous range rtp_red_range(p) of j and
 * its thread t the elements lo + t, lo + t + T, ..., so neighbouring threads read
 * neighbouring addresses. Each thread sums in float with Kahan's compensation; the block
 * adds its T threads' sums as doubles by the fixed tree rtp_tree_sum_host and writes one
 * partial. Level 2: one thread per channel adds the P partials in p order, in double.
 * Why this precision split: the per-element loop is the hot path, and FP64 runs at 1/32
 * to 1/64 of the FP32 rate on consumer GPUs; a compensated float sum is within a few
 * ulps of the exact sum whatever the count (error <= 2u|S| + O(n u^2) sum|x|), while a
 * plain float sum of 10^5 values would lose ~4 digits, so the loop stays in float. The
 * tree and the combine handle T + P values per block and channel, negligible work, so
 * they stay in double, as the CPU reference sums. Every split and order depends only on
 * the shape: the result is bitwise the same run to run, whatever the GPU's scheduling.
 */

RTP_HD size_t rtp_chan_at(size_t j, int C, int c, int HW)
{
    size_t n = rtp_udiv(j, (size_t)HW), i = j - n * HW;
    return (n * C + c) * HW + i;
}

/* Block p's range [*lo, *hi) of a channel's M elements, P blocks of ceil(M / P). */
RTP_HD void rtp_red_range(size_t M, int P, int p, size_t *lo, size_t *hi)
{
    size_t len = (M + (size_t)P - 1) / (size_t)P, a = len * (size_t)p;
    *lo = a < M ? a : M;
    *hi = a + len < M ? a + len : M;
}

typedef struct rtp_kahan {
    float s, c; /* the sum, and minus the low-order part it lost */
} rtp_kahan;

RTP_HD void rtp_kahan_add(rtp_kahan *k, float v)
{
    float y = v - k->c, t = k->s + y;
    k->c = (t - k->s) - y;
    k->s = t;
}

RTP_HD double rtp_kahan_value(rtp_kahan k) { return (double)k.s - (double)k.c; }

/* Thread t's compensated sum of channel c's X over [lo, hi). */
RTP_HD double rtp_red_sum_part(int t, int T, const float *X, int C, int c, int HW, size_t lo,
                               size_t hi)
{
    rtp_kahan k = {0.0f, 0.0f};
    for (size_t j = lo + (size_t)t; j < hi; j += (size_t)T)
        rtp_kahan_add(&k, X[rtp_chan_at(j, C, c, HW)]);
    return rtp_kahan_value(k);
}

/* A block's shift for its squares: the mean of its range, rounded to float (0 if empty),
 * the same value in the block and in the combine. */
RTP_HD float rtp_red_shift(double s, size_t lo, size_t hi)
{
    return hi > lo ? (float)(s / (double)(hi - lo)) : 0.0f;
}

/* Thread t's compensated sum of (x - m)^2 over [lo, hi). */
RTP_HD double rtp_red_sq_part(int t, int T, const float *X, int C, int c, int HW, size_t lo,
                              size_t hi, float m)
{
    rtp_kahan k = {0.0f, 0.0f};
    for (size_t j = lo + (size_t)t; j < hi; j += (size_t)T) {
        float d = X[rtp_chan_at(j, C, c, HW)] - m;
        rtp_kahan_add(&k, d * d);
    }
    return rtp_kahan_value(k);
}

/* A relu fused after a batch norm (rt_bn_desc.relu; cpu_bn.c): element x of channel c is
 * scaled by k = v > 0 ? 1 : neg, v = x * g + sh the norm's output (rtp_bn_apply_at's g
 * and sh); neg = 0 applies the relu, neg = 1 (g = sh = 0) leaves every element as it is.
 * Without beta (Bt NULL) there is no relu. */
typedef struct rtp_bn_mask {
    float g, sh, neg;
} rtp_bn_mask;

RTP_HD rtp_bn_mask rtp_bn_mask_of(int c, const float *G, const float *Bt, const float *SM,
                                  const float *SI)
{
    rtp_bn_mask m = {0.0f, 0.0f, 1.0f};
    if (Bt) {
        m.g = G[c] * SI[c];
        m.sh = Bt[c] - SM[c] * m.g;
        m.neg = 0.0f;
    }
    return m;
}

RTP_HD float rtp_bn_mask_k(rtp_bn_mask m, float x)
{
    float v = x * m.g + m.sh;
    return v > 0.0f ? 1.0f : m.neg;
}

/* Thread t's compensated sums of dy*k and dy*k * xhat over [lo, hi) (batch norm
 * backward; k the fused relu's factor, 1 without one). */
RTP_HD void rtp_bn_bwd_part(int t, int T, const float *DY, const float *X, int C, int c, int HW,
                            size_t lo, size_t hi, float mean, float inv, rtp_bn_mask mk,
                            double *sdy, double *sdyx)
{
    rtp_kahan a = {0.0f, 0.0f}, b = {0.0f, 0.0f};
    for (size_t j = lo + (size_t)t; j < hi; j += (size_t)T) {
        size_t k = rtp_chan_at(j, C, c, HW);
        float dy = DY[k] * rtp_bn_mask_k(mk, X[k]), xh = (X[k] - mean) * inv;
        rtp_kahan_add(&a, dy);
        rtp_kahan_add(&b, dy * xh);
    }
    *sdy = rtp_kahan_value(a), *sdyx = rtp_kahan_value(b);
}

/* Level 2 of a plain sum: out0[c0 + w] (and out1, if any) = the P partial pairs of
 * channel c0 + w added in p order. */
RTP_HD void rtp_red_finish_at(int w, const double *part, int P, float *out0, float *out1, int c0)
{
    const double *pp = part + (size_t)w * P * 2;
    double a = 0.0, b = 0.0;
    for (int p = 0; p < P; p++) a += pp[2 * p], b += pp[2 * p + 1];
    out0[c0 + w] = (float)a;
    if (out1) out1[c0 + w] = (float)b;
}

/* Saved and running statistics of channel c from its sum s and its sum of squared
 * deviations ss over M elements (cpu_bn.c's formulas). */
RTP_HD void rtp_bn_finish(int c, double s, double ss, size_t M, float eps, float momentum,
                          float *SM, float *SI, float *RM, float *RV)
{
    double mean = s / (double)M, var = ss / (double)M;
    SM[c] = (float)mean;
    SI[c] = (float)(1.0 / sqrt(var + eps));
    double unbiased = M > 1 ? ss / (double)(M - 1) : var;
    RM[c] = (float)((1.0 - momentum) * RM[c] + momentum * mean);
    RV[c] = (float)((1.0 - momentum) * RV[c] + momentum * unbiased);
}

/* Level 2 of the forward statistics: channel c0 + w's P pairs (sum, squares about the
 * block's shift m_p) combined exactly in double, sum (x - mean)^2 =
 * sum_p [Q_p + 2 (m_p - mean)(S_p - n_p m_p) + n_p (m_p - mean)^2]. */
RTP_HD void rtp_bn_stats_finish_at(int w, const double *part, int P, size_t M, float eps,
                                   float momentum, float *SM, float *SI, float *RM, float *RV,
                                   int c0)
{
    const double *pp = part + (size_t)w * P * 2;
    double s = 0.0, ss = 0.0;
    for (int p = 0; p < P; p++) s += pp[2 * p];
    const double mean = s / (double)M;
    for (int p = 0; p < P; p++) {
        size_t lo, hi;
        rtp_red_range(M, P, p, &lo, &hi);
        const double n = (double)(hi - lo), m = rtp_red_shift(pp[2 * p], lo, hi);
        const double dm = m - mean;
        ss += pp[2 * p + 1] + 2.0 * dm * (pp[2 * p] - n * m) + n * dm * dm;
    }
    rtp_bn_finish(c0 + w, s, ss, M, eps, momentum, SM, SI, RM, RV);
}

/* y = v * (v > 0 ? 1 : neg), v = x * g + sh with g = gamma * invstd, sh = beta - mean * g
 * (the training forward; neg = 0 with a fused relu, else 1). */
RTP_HD void rtp_bn_apply_at(size_t i, float *Y, const float *X, const float *G, const float *Bt,
                            const float *SM, const float *SI, int C, int HW, float neg)
{
    int c = (int)rtp_umod(rtp_udiv(i, (size_t)HW), (size_t)C);
    float g = G[c] * SI[c], sh = Bt[c] - SM[c] * g;
    float v = X[i] * g + sh;
    Y[i] = v * (v > 0.0f ? 1.0f : neg);
}

RTP_HD void rtp_bn_eval_at(size_t i, float *Y, const float *X, const float *G, const float *Bt,
                           const float *RM, const float *RV, int C, int HW, float eps, float neg)
{
    int c = (int)rtp_umod(rtp_udiv(i, (size_t)HW), (size_t)C);
    float g = G[c] / sqrtf(RV[c] + eps), sh = Bt[c] - RM[c] * g;
    float v = X[i] * g + sh;
    Y[i] = v * (v > 0.0f ? 1.0f : neg);
}

/* dx from the channel's sums (dbeta = sum dy, dgamma = sum dy * xhat, as floats); Bt
 * given: through the fused relu (rtp_bn_mask). */
RTP_HD void rtp_bn_bwd_apply_at(size_t i, float *DX, const float *DY, const float *X,
                                const float *G, const float *Bt, const float *SM, const float *SI,
                                const float *DG, const float *DB, int C, int HW, size_t M)
{
    int c = (int)rtp_umod(rtp_udiv(i, (size_t)HW), (size_t)C);
    const float mean = SM[c], inv = SI[c];
    const float kk = G[c] * inv / (float)M, a = DB[c], bq = DG[c];
    float xh = (X[i] - mean) * inv,
          dy = DY[i] * rtp_bn_mask_k(rtp_bn_mask_of(c, G, Bt, SM, SI), X[i]);
    DX[i] = kk * ((float)M * dy - a - xh * bq);
}

/* The block's tree reduction, in the order the kernels use (part[t] += part[t + w]
 * for w = T/2 .. 1); the host tests call it on their emulated partials. */
RTP_HD double rtp_tree_sum_host(double *part, int T)
{
    for (int w = T / 2; w > 0; w /= 2)
        for (int t = 0; t < w; t++) part[t] += part[t + w];
    return part[0];
}

/* Level 1 replayed on the host (the mock device, the host tests): block p of channel
 * c0 + w with T threads writes its pair, as the kernels of cuda_bn.cu / cuda_reduce.cu.
 * kind 0: sum of X (bias gradient); 1: sum and squares about the shift (forward
 * statistics); 2: sums of dy and dy * xhat (backward; Y is dy, SM/SI the statistics, G/Bt
 * gamma and, with a fused relu, beta, else NULL). */
static inline void rtp_red_block_host(int kind, double *part, int T, const float *X, const float *Y,
                                      const float *SM, const float *SI, const float *G,
                                      const float *Bt, int N, int C, int HW, int c0, int w, int P,
                                      int p)
{
    double a[256], b[256];
    const int c = c0 + w;
    size_t lo, hi;
    rtp_red_range((size_t)N * HW, P, p, &lo, &hi);
    for (int t = 0; t < T; t++) {
        if (kind == 2)
            rtp_bn_bwd_part(t, T, Y, X, C, c, HW, lo, hi, SM[c], SI[c],
                            rtp_bn_mask_of(c, G, Bt, SM, SI), &a[t], &b[t]);
        else a[t] = rtp_red_sum_part(t, T, X, C, c, HW, lo, hi), b[t] = 0.0;
    }
    double s = rtp_tree_sum_host(a, T), q = 0.0;
    if (kind == 1) {
        const float m = rtp_red_shift(s, lo, hi);
        for (int t = 0; t < T; t++) b[t] = rtp_red_sq_part(t, T, X, C, c, HW, lo, hi, m);
    }
    if (kind != 0) q = rtp_tree_sum_host(b, T);
    part[2 * ((size_t)w * P + p)] = s;
    part[2 * ((size_t)w * P + p) + 1] = q;
}

/* ---- the trainer's device path (cpu_gather.c, cpu_xent.c, cpu_amp.c) ---- */

/* A position in a Philox stream with the CPU generator's one-block cache: rt_rng_u32 */
typedef struct rtp_words {
    rtp_philox_stream st;
    uint64_t word, block;
    uint32_t c[4];
    int valid;
} rtp_words;

RTP_HD uint32_t rtp_words_u32(rtp_words *w)
{
    uint64_t blk = w->word / 4;
    if (!w->valid || w->block != blk) {
        w->c[0] = (uint32_t)blk, w->c[1] = (uint32_t)(blk >> 32);
        w->c[2] = w->st.c2, w->c[3] = w->st.c3;
        rtp_philox(w->c, w->st.key0, w->st.key1);
        w->block = blk, w->valid = 1;
    }
    return w->c[w->word++ % 4];
}

/* rt_rng_below: Lemire's method; n <= 1 reads no word; rejection reads further ones. */
RTP_HD uint32_t rtp_words_below(rtp_words *w, uint32_t n)
{
    if (n <= 1) return 0;
    uint64_t m = (uint64_t)rtp_words_u32(w) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t t = (uint32_t)(0u - n) % n; /* 2^32 mod n: the biased low values */
        while (low < t) {
            m = (uint64_t)rtp_words_u32(w) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

/* The crop/flip of one sample: rt_batcher_augment_draw(seed, epoch, idx, pad, flip_p). */
typedef struct rtp_aug {
    int top, left, flip;
    int cy, cx; /* the cutout square's centre (rt_batcher_cutout_draw) */
} rtp_aug;

RTP_HD rtp_aug rtp_augment_draw(rtp_philox_stream st, uint32_t idx, int pad, float flip_p)
{
    rtp_words w = {st, (uint64_t)idx * 4, 0, {0, 0, 0, 0}, 0};
    uint32_t span = 2u * (uint32_t)pad + 1u;
    rtp_aug a;
    a.top = (int)rtp_words_below(&w, span);
    a.left = (int)rtp_words_below(&w, span);
    a.flip = (rtp_words_u32(&w) >> 8) < rtp_keep_threshold(flip_p);
    return a;
}

/* The cutout centre: rt_batcher_cutout_draw from st2 = rt_rng_stream(seed, RT_RNG_AUGMENT,
 * epoch, 1). */
RTP_HD void rtp_cutout_draw(rtp_philox_stream st2, uint32_t idx, int H, int W, rtp_aug *a)
{
    rtp_words w = {st2, (uint64_t)idx * 2, 0, {0, 0, 0, 0}, 0};
    a->cy = (int)rtp_words_below(&w, (uint32_t)H);
    a->cx = (int)rtp_words_below(&w, (uint32_t)W);
}

/* Element j of one (C,H,W) sample: a copy, or rt_batcher_crop_flip's
 * out(c,y,x) = src(c, y+top-pad, x'+left-pad), x' = flip ? W-1-x : x, else pad_value[c]. */
RTP_HD void rtp_gather_at(size_t j, float *o, const float *src, const rtp_gather_geom *g, rtp_aug a)
{
    if (!g->augment) {
        o[j] = src[j];
        return;
    }
    int x = (int)(j % (size_t)g->W), y = (int)((j / (size_t)g->W) % (size_t)g->H);
    int c = (int)(j / ((size_t)g->W * g->H));
    if (g->cutout > 0) { /* rt_batcher_cutout's square, after the crop/flip */
        int y0 = a.cy - g->cutout / 2, x0 = a.cx - g->cutout / 2;
        if (y >= y0 && y < y0 + g->cutout && x >= x0 && x < x0 + g->cutout) {
            o[j] = 0.0f;
            return;
        }
    }
    int sy = y + a.top - g->pad, sx = (a.flip ? g->W - 1 - x : x) + a.left - g->pad;
    o[j] = (sy >= 0 && sy < g->H && sx >= 0 && sx < g->W) ? src[((size_t)c * g->H + sy) * g->W + sx]
                                                          : g->pad_value[c];
}

/* 1 if sample n's first maximal probability is at its label (cpu_xent.c's argmax). */
RTP_HD int rtp_xent_correct_at(int n, const float *probs, const int32_t *labels, int L)
{
    const float *pn = probs + (size_t)n * L;
    int best = 0;
    for (int j = 1; j < L; j++)
        if (pn[j] > pn[best]) best = j;
    return best == labels[n];
}

/* s + v[0] + ... + v[k-1], in double, in order: the loss sum of xent_stats_k, which adds
 * each tile of losses its block loaded into shared memory (cpu_xent.c's sample order). */
RTP_HD double rtp_loss_add(double s, const float *v, int k)
{
    for (int j = 0; j < k; j++) s += v[j];
    return s;
}

/* The step-statistics row from the loss sum s (rtp_loss_add) and the count. */
RTP_HD void rtp_xent_stats_row(float *r, double s, int N, int correct)
{
    double mean = s / N;
    memcpy(r, &mean, sizeof mean); /* words 0-1: the double's bytes, exactly */
    r[2] = (float)correct;
    r[3] = 0.0f;
}

RTP_HD void rtp_amp_scale_at(size_t i, float *x, float f) { x[i] *= f; }

/* cpu_amp.c's unscale: 1 when g[i] was inf/NaN; g[i] *= inv either way. */
RTP_HD int rtp_amp_unscale_at(size_t i, float *g, float inv)
{
    int bad = !isfinite(g[i]);
    g[i] *= inv;
    return bad;
}

/* The coefficients of the update rt_amp_rule_step just applied (s->steps is its t). */
RTP_HD rt_adam_coef rtp_amp_adam_coef(const rtp_amp_adam *a, const rt_amp_state *s)
{
    rt_adam_coef c = a->c;
    rt_amp_rule_adam_t(&c, a->lr, a->beta1, a->beta2, (long long)s->steps);
    return c;
}

RTP_HD rt_sgd_coef rtp_amp_sgd_coef(rt_sgd_coef c, const rt_amp_state *s)
{
    c.first = s->steps <= 1; /* rt_optim_sgd_coef: t <= 1 */
    return c;
}

#endif
