/* cuda_elem.cuh - the per-element bodies of the elementwise, pooling, im2col, loss and
 * optimiser kernels, as __host__ __device__ functions.
 *
 * Why a header with definitions (STYLE prefers .c definitions): the same code must run
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
#include "cuda_kernels.h"

#define RTP_HD __host__ __device__ static inline

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
    y[i] = y[i] + bias[(i / (size_t)PQ) % (size_t)K];
}

/* Thread t (of T) of channel k's bias-gradient block: its strided partial sum. */
RTP_HD double rtp_bias_grad_part(int t, int T, const float *dy, int N, int K, int PQ, int k)
{
    size_t M = (size_t)N * PQ;
    double s = 0.0;
    for (size_t j = (size_t)t; j < M; j += (size_t)T) {
        size_t n = j / (size_t)PQ, q = j % (size_t)PQ;
        s += dy[(n * K + k) * PQ + q];
    }
    return s;
}

/* db[o] = sum_n dy[n][o], from 0 in n order (cpu_dense.c). */
RTP_HD void rtp_col_sums_at(int o, float *db, const float *dy, int N, int O)
{
    float s = 0.0f;
    for (int n = 0; n < N; n++) s = s + dy[(size_t)n * O + o];
    db[o] = s;
}

/* ---- pooling (cpu_pool.c; backward gathers over the covering windows) ---- */

/* First window index (row-major) holding the max m, as cpu_pool.c's generic loop. */
RTP_HD size_t rtp_argmax_at(const float *x, size_t base, int W, int R, int S, float m)
{
    for (int r = 0; r < R; r++)
        for (int s = 0; s < S; s++) {
            size_t i = base + (size_t)r * W + s;
            float v = x[i];
            if (v == m || (m != m && v != v)) return i;
        }
    return base;
}

/* Output rows (or cols) whose window covers input row ih: [*lo, *hi] (maybe empty). */
RTP_HD void rtp_covering(int ih, int R, int stride, int P, int *lo, int *hi)
{
    int a = ih - R + 1;
    *lo = a <= 0 ? 0 : (a + stride - 1) / stride;
    *hi = ih / stride;
    if (*hi > P - 1) *hi = P - 1;
}

RTP_HD void rtp_maxpool_fwd_at(size_t o, float *y, const float *x, rtp_pool_geom g)
{
    size_t pl = o / ((size_t)g.P * g.Q);
    int pq = (int)(o % ((size_t)g.P * g.Q)), p = pq / g.Q, q = pq % g.Q;
    const float *w0 = x + pl * g.H * g.W + (size_t)(p * g.stride) * g.W + q * g.stride;
    float m = w0[0];
    for (int r = 0; r < g.R; r++)
        for (int s = 0; s < g.S; s++) {
            float v = w0[(size_t)r * g.W + s];
            if (v > m || v != v) m = v; /* NaN propagates, as PyTorch */
        }
    y[o] = m;
}

RTP_HD void rtp_maxpool_bwd_at(size_t i, float *dx, const float *dy, const float *x,
                               const float *y, rtp_pool_geom g)
{
    size_t pl = i / ((size_t)g.H * g.W);
    int hw = (int)(i % ((size_t)g.H * g.W)), ih = hw / g.W, iw = hw % g.W;
    const float *xp = x + pl * g.H * g.W;
    const float *yp = y + pl * g.P * g.Q, *dyp = dy + pl * g.P * g.Q;
    int p0, p1, q0, q1;
    rtp_covering(ih, g.R, g.stride, g.P, &p0, &p1);
    rtp_covering(iw, g.S, g.stride, g.Q, &q0, &q1);
    float acc = 0.0f;
    for (int p = p0; p <= p1; p++)
        for (int q = q0; q <= q1; q++) {
            size_t base = (size_t)(p * g.stride) * g.W + q * g.stride;
            if (rtp_argmax_at(xp, base, g.W, g.R, g.S, yp[p * g.Q + q]) == (size_t)hw)
                acc = acc + dyp[p * g.Q + q];
        }
    dx[i] = acc;
}

RTP_HD void rtp_avgpool_fwd_at(size_t o, float *y, const float *x, rtp_pool_geom g, float inv)
{
    size_t pl = o / ((size_t)g.P * g.Q);
    int pq = (int)(o % ((size_t)g.P * g.Q)), p = pq / g.Q, q = pq % g.Q;
    const float *w0 = x + pl * g.H * g.W + (size_t)(p * g.stride) * g.W + q * g.stride;
    float s = 0.0f;
    for (int r = 0; r < g.R; r++)
        for (int c = 0; c < g.S; c++) s = s + w0[(size_t)r * g.W + c];
    y[o] = s * inv;
}

RTP_HD void rtp_avgpool_bwd_at(size_t i, float *dx, const float *dy, rtp_pool_geom g,
                               float inv)
{
    size_t pl = i / ((size_t)g.H * g.W);
    int hw = (int)(i % ((size_t)g.H * g.W)), ih = hw / g.W, iw = hw % g.W;
    const float *dyp = dy + pl * g.P * g.Q;
    int p0, p1, q0, q1;
    rtp_covering(ih, g.R, g.stride, g.P, &p0, &p1);
    rtp_covering(iw, g.S, g.stride, g.Q, &q0, &q1);
    float acc = 0.0f;
    for (int p = p0; p <= p1; p++)
        for (int q = q0; q <= q1; q++) acc = acc + dyp[p * g.Q + q] * inv;
    dx[i] = acc;
}

/* ---- im2col / col2im of one image (cpu_conv.c) ---- */

RTP_HD void rtp_im2col_at(size_t i, float *col, const float *x, rtp_conv_geom g)
{
    const size_t PQ = (size_t)g.P * g.Q;
    size_t row = i / PQ, pq = i % PQ;
    int s = (int)(row % g.S), r = (int)((row / g.S) % g.R), c = (int)(row / g.S / g.R);
    int p = (int)(pq / g.Q), q = (int)(pq % g.Q);
    int ih = p * g.stride - g.pad + r, iw = q * g.stride - g.pad + s;
    col[i] = (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) ? x[((size_t)c * g.H + ih) * g.W + iw]
                                                          : 0.0f;
}

/* dx[i] = sum of the col entries that read input i, in (r, s) order (no atomics). */
RTP_HD void rtp_col2im_at(size_t i, float *dx, const float *col, rtp_conv_geom g)
{
    const size_t PQ = (size_t)g.P * g.Q;
    int iw = (int)(i % g.W), ih = (int)((i / g.W) % g.H), c = (int)(i / g.W / g.H);
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
                            const int32_t *labels, int L)
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
    loss[n] = (y >= 0 && y < L) ? (float)(lse - z[y]) : (float)NAN;
}

RTP_HD void rtp_xent_bwd_at(size_t i, float *g, const float *p, const int32_t *labels,
                            float scale, int L)
{
    int n = (int)(i / (size_t)L), j = (int)(i % (size_t)L);
    g[i] = (p[i] - (j == labels[n] ? 1.0f : 0.0f)) * scale;
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

/* ---- batchnorm per channel c (cpu_bn.c); a block of T threads, thread t ---- */

RTP_HD size_t rtp_bn_at(size_t j, int C, int c, int HW)
{
    size_t n = j / (size_t)HW, i = j % (size_t)HW;
    return (n * C + c) * HW + i;
}

RTP_HD double rtp_bn_part_sum(int t, int T, const float *X, int N, int C, int c, int HW)
{
    double s = 0.0;
    for (size_t j = (size_t)t; j < (size_t)N * HW; j += (size_t)T) s += X[rtp_bn_at(j, C, c, HW)];
    return s;
}

RTP_HD double rtp_bn_part_sq(int t, int T, const float *X, int N, int C, int c, int HW,
                             double mean)
{
    double ss = 0.0;
    for (size_t j = (size_t)t; j < (size_t)N * HW; j += (size_t)T) {
        double dv = X[rtp_bn_at(j, C, c, HW)] - mean;
        ss += dv * dv;
    }
    return ss;
}

/* y = x * g + sh for thread t's elements of channel c. */
RTP_HD void rtp_bn_part_apply(int t, int T, float *Y, const float *X, int N, int C, int c,
                              int HW, float g, float sh)
{
    for (size_t j = (size_t)t; j < (size_t)N * HW; j += (size_t)T) {
        size_t k = rtp_bn_at(j, C, c, HW);
        Y[k] = X[k] * g + sh;
    }
}

/* Saved and running statistics of channel c from the two block sums. */
RTP_HD void rtp_bn_finish(int c, double s, double ss, size_t M, float eps, float momentum,
                          const float *G, const float *Bt, float *SM, float *SI, float *RM,
                          float *RV, float *g_out, float *sh_out)
{
    double mean = s / (double)M, var = ss / (double)M;
    float inv = (float)(1.0 / sqrt(var + eps));
    float mf = (float)mean, g = G[c] * inv, sh = Bt[c] - mf * g;
    *g_out = g, *sh_out = sh;
    if (SM) {
        SM[c] = mf;
        SI[c] = inv;
        double unbiased = M > 1 ? ss / (double)(M - 1) : var;
        RM[c] = (float)((1.0 - momentum) * RM[c] + momentum * mean);
        RV[c] = (float)((1.0 - momentum) * RV[c] + momentum * unbiased);
    }
}

RTP_HD void rtp_bn_eval_at(size_t i, float *Y, const float *X, const float *G, const float *Bt,
                           const float *RM, const float *RV, int C, int HW, float eps)
{
    int c = (int)((i / (size_t)HW) % (size_t)C);
    float g = G[c] / sqrtf(RV[c] + eps), sh = Bt[c] - RM[c] * g;
    Y[i] = X[i] * g + sh;
}

/* Thread t's partial sums of dy and dy * xhat for channel c. */
RTP_HD void rtp_bn_bwd_part(int t, int T, const float *DY, const float *X, int N, int C, int c,
                            int HW, float mean, float inv, double *sdy, double *sdyx)
{
    double a = 0.0, b = 0.0;
    for (size_t j = (size_t)t; j < (size_t)N * HW; j += (size_t)T) {
        size_t k = rtp_bn_at(j, C, c, HW);
        a += DY[k];
        b += (double)DY[k] * ((X[k] - mean) * inv);
    }
    *sdy = a, *sdyx = b;
}

RTP_HD void rtp_bn_bwd_apply(int t, int T, float *DX, const float *DY, const float *X, int N,
                             int C, int c, int HW, float mean, float inv, float gamma,
                             double sdy, double sdyx)
{
    const size_t M = (size_t)N * HW;
    const float kk = gamma * inv / (float)M, a = (float)sdy, bq = (float)sdyx;
    for (size_t j = (size_t)t; j < M; j += (size_t)T) {
        size_t k = rtp_bn_at(j, C, c, HW);
        float xh = (X[k] - mean) * inv;
        DX[k] = kk * ((float)M * DY[k] - a - xh * bq);
    }
}

/* The block's tree reduction, in the order the kernels use (part[t] += part[t + w]
 * for w = T/2 .. 1); the host tests call it on their emulated partials. */
RTP_HD double rtp_tree_sum_host(double *part, int T)
{
    for (int w = T / 2; w > 0; w /= 2)
        for (int t = 0; t < w; t++) part[t] += part[t + w];
    return part[0];
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

/* Element j of one (C,H,W) sample: a copy, or rt_batcher_crop_flip's
 * out(c,y,x) = src(c, y+top-pad, x'+left-pad), x' = flip ? W-1-x : x, else pad_value[c]. */
RTP_HD void rtp_gather_at(size_t j, float *o, const float *src, const rtp_gather_geom *g,
                          rtp_aug a)
{
    if (!g->augment) {
        o[j] = src[j];
        return;
    }
    int x = (int)(j % (size_t)g->W), y = (int)((j / (size_t)g->W) % (size_t)g->H);
    int c = (int)(j / ((size_t)g->W * g->H));
    int sy = y + a.top - g->pad, sx = (a.flip ? g->W - 1 - x : x) + a.left - g->pad;
    o[j] = (sy >= 0 && sy < g->H && sx >= 0 && sx < g->W)
               ? src[((size_t)c * g->H + sy) * g->W + sx]
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

/* The step-statistics row from the loss sum (double, sample order) and the count. */
RTP_HD void rtp_xent_stats_row(float *r, const float *loss, int N, int correct)
{
    double s = 0.0;
    for (int n = 0; n < N; n++) s += loss[n];
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
