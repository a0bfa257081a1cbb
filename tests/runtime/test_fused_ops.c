/* test_fused_ops.c - the fused backend ops against the composition they replace, on the
 * CPU backend: batch norm + relu (forward in training and eval mode, backward) and
 * residual add + relu, and batch norm + residual add (+ relu), whose backward also takes
 * a second gradient of the sum. Same arithmetic, so bit for bit equal; then a model with
 * batch norm + relu and residual blocks trains one step fused and unfused
 * (rt_model_set_fusion), and fused on 1 thread, to the same loss and gradients, bit
 * for bit.
 * The CUDA versions are checked against these through the mock device (check_ops.c).
 */
#include <math.h>
#include <stdlib.h>

#include "../t.h"
#include "rt_backend.h"
#include "rt_model.h"
#include "rt_model_internal.h" /* which layers fused */
#include "rt_rng.h"

static float *randn(size_t n, uint32_t tag, float std, float mean)
{
    float *v = malloc(n * sizeof *v);
    rt_rng r = rt_rng_stream(77, RT_RNG_USER, tag, 0);
    rt_rng_fill_normal(&r, v, n, mean, std);
    return v;
}

/* n zeroed floats at a 64-byte boundary, as the backend's tensors (the streamed
 * batch-norm output needs it: cpu_bn_stream.c) */
static float *zeroed(size_t n)
{
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    float *v = aligned_alloc(64, bytes);
    if (v) memset(v, 0, bytes);
    return v;
}

static rt_tensor tens(float *p, int n, int c, int h, int w)
{
    return (rt_tensor){.data = p, .n = n, .c = c, .h = h, .w = w};
}

static int same_bits(const char *what, const float *a, const float *b, size_t n)
{
    if (!memcmp(a, b, n * sizeof *a)) return 1;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a)) {
            fprintf(stderr, "  %s differs at %zu: fused %.9g, apart %.9g\n", what, i, (double)a[i],
                    (double)b[i]);
            break;
        }
    return 0;
}

/* bn (+ relu fused) vs bn then relu, on N x C x H x W with `threads` threads */
static void bn_case(int *t_failed_, int N, int C, int H, int W, int threads)
{
    rt_backend b;
    rt_error err = {0};
    ASSERT_EQ(rt_backend_open(&b, "cpu", threads, &err), RT_OK);
    const size_t n = (size_t)N * C * H * W;
    float *x = randn(n, 1, 1.0f, 0.5f), *dy = randn(n, 2, 1.0f, 0.0f);
    float *g = randn((size_t)C, 3, 1.0f, 0.0f), *be = randn((size_t)C, 4, 0.5f, 0.0f);
    float *f = zeroed(8 * n + 16 * (size_t)C); /* outputs, fused then apart */
    float *yf = f, *ya = f + n, *dxf = f + 2 * n, *dxa = f + 3 * n, *ef = f + 4 * n;
    float *ea = f + 5 * n, *dr = f + 6 * n, *st = f + 8 * n;
    rt_tensor tx = tens(x, N, C, H, W), tdy = tens(dy, N, C, H, W), tg = tens(g, C, 1, 1, 1);
    rt_tensor tbe = tens(be, C, 1, 1, 1), tyf = tens(yf, N, C, H, W), tya = tens(ya, N, C, H, W);
    rt_tensor tdxf = tens(dxf, N, C, H, W), tdxa = tens(dxa, N, C, H, W);
    rt_tensor tef = tens(ef, N, C, H, W), tea = tens(ea, N, C, H, W), tdr = tens(dr, N, C, H, W);
    rt_tensor s[16]; /* [0..7] fused: mean, invstd, rmean, rvar, dgamma, dbeta; [8..] apart */
    for (int i = 0; i < 16; i++) s[i] = tens(st + (size_t)i * C, C, 1, 1, 1);
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < C; c++) st[(size_t)(8 * k + 3) * C + c] = 1.0f; /* running var */
    rt_bn_desc d = {.N = N, .C = C, .H = H, .W = W, .eps = 1e-5f, .momentum = 0.1f, .relu = 1};
    rt_bn_desc da = d;
    da.relu = 0;
    /* fused */
    ASSERT_EQ(
        rt_backend_bn_fwd_train(&b, &tyf, &s[0], &s[1], &s[2], &s[3], &tx, &tg, &tbe, &d, &err),
        RT_OK);
    ASSERT_EQ(rt_backend_bn_relu_bwd(&b, &tdxf, &s[4], &s[5], &tdy, &tx, &tg, &tbe, &s[0], &s[1],
                                     &d, &err),
              RT_OK);
    ASSERT_EQ(rt_backend_bn_fwd_eval(&b, &tef, &tx, &tg, &tbe, &s[2], &s[3], &d, &err), RT_OK);
    /* apart: bn, relu in place; relu's gradient, then bn's */
    ASSERT_EQ(
        rt_backend_bn_fwd_train(&b, &tya, &s[8], &s[9], &s[10], &s[11], &tx, &tg, &tbe, &da, &err),
        RT_OK);
    ASSERT_EQ(rt_backend_relu_fwd(&b, &tya, &tya, 0.0f, &err), RT_OK);
    ASSERT_EQ(rt_backend_relu_bwd(&b, &tdr, &tdy, &tya, 0.0f, &err), RT_OK);
    ASSERT_EQ(rt_backend_bn_bwd(&b, &tdxa, &s[12], &s[13], &tdr, &tx, &tg, &s[8], &s[9], &da, &err),
              RT_OK);
    ASSERT_EQ(rt_backend_bn_fwd_eval(&b, &tea, &tx, &tg, &tbe, &s[10], &s[11], &da, &err), RT_OK);
    ASSERT_EQ(rt_backend_relu_fwd(&b, &tea, &tea, 0.0f, &err), RT_OK);
    size_t zeros = 0;
    for (size_t i = 0; i < n; i++) zeros += ya[i] == 0.0f;
    ASSERT(zeros > n / 8 && zeros < n - n / 8); /* the relu cuts a real share */
    ASSERT(same_bits("forward", yf, ya, n));
    ASSERT(same_bits("statistics", st, st + 8 * (size_t)C, 4 * (size_t)C));
    ASSERT(same_bits("input gradient", dxf, dxa, n));
    ASSERT(same_bits("dgamma", s[4].data, s[12].data, (size_t)C));
    ASSERT(same_bits("dbeta", s[5].data, s[13].data, (size_t)C));
    ASSERT(same_bits("eval forward", ef, ea, n));
    free(x), free(dy), free(g), free(be), free(f);
    rt_backend_close(&b);
}

T_TEST(bn_relu)
{
    bn_case(t_failed_, 1, 3, 1, 2, 1);
    bn_case(t_failed_, 2, 4, 5, 7, 2);
    bn_case(t_failed_, 8, 16, 8, 8, 2); /* rows of whole vectors */
    bn_case(t_failed_, 3, 5, 9, 9, 1);  /* rows with a tail */
    /* outputs of 1M values and more go with streaming stores (cpu_bn_stream.c) on AVX-512:
     * one image, 17 channels; 2 images, 33 channels; planes with a tail are not streamed */
    bn_case(t_failed_, 1, 17, 256, 256, 2);
    bn_case(t_failed_, 2, 33, 128, 128, 1);
    bn_case(t_failed_, 1, 21, 225, 225, 2);
}

/* Batch norm on planes of 16 values or fewer (runtime/cpu/cpu_bn_small.c: blocks of
 * 64 channels): the training forward, the statistics and the backward against a double
 * reference, and the same bits on 1 and 2 threads. */
static void small_case(int *t_failed_, int N, int C, int H, int W)
{
    const size_t hw = (size_t)H * W, n = (size_t)N * C * hw, M = (size_t)N * hw;
    float *x = randn(n, 11, 2.0f, 0.3f), *dy = randn(n, 12, 1.0f, 0.0f);
    float *g = randn((size_t)C, 13, 1.0f, 0.0f), *be = randn((size_t)C, 14, 0.5f, 0.0f);
    float *out[2];
    for (int t = 0; t < 2; t++) {
        rt_backend b;
        rt_error err = {0};
        ASSERT_EQ(rt_backend_open(&b, "cpu", t + 1, &err), RT_OK);
        float *f = out[t] = calloc(2 * n + 6 * (size_t)C, sizeof *f);
        rt_tensor tx = tens(x, N, C, H, W), tdy = tens(dy, N, C, H, W), tg = tens(g, C, 1, 1, 1);
        rt_tensor tbe = tens(be, C, 1, 1, 1), ty = tens(f, N, C, H, W);
        rt_tensor tdx = tens(f + n, N, C, H, W), s[6];
        for (int i = 0; i < 6; i++) s[i] = tens(f + 2 * n + (size_t)i * C, C, 1, 1, 1);
        rt_bn_desc d = {.N = N, .C = C, .H = H, .W = W, .eps = 1e-5f, .momentum = 0.1f};
        ASSERT_EQ(
            rt_backend_bn_fwd_train(&b, &ty, &s[0], &s[1], &s[2], &s[3], &tx, &tg, &tbe, &d, &err),
            RT_OK);
        ASSERT_EQ(rt_backend_bn_bwd(&b, &tdx, &s[4], &s[5], &tdy, &tx, &tg, &s[0], &s[1], &d, &err),
                  RT_OK);
        rt_backend_close(&b);
    }
    ASSERT(same_bits("1 and 2 threads", out[0], out[1], 2 * n + 6 * (size_t)C));
    const float *y = out[0], *dx = out[0] + n, *dg = out[0] + 2 * n + 4 * (size_t)C, *db = dg + C;
    int bad = 0;
    for (int c = 0; c < C; c++) {
        double mean = 0, var = 0, sdy = 0, sdyx = 0;
        for (size_t k = 0; k < (size_t)N; k++)
            for (size_t i = 0; i < hw; i++) mean += x[(k * C + c) * hw + i];
        mean /= (double)M;
        for (size_t k = 0; k < (size_t)N; k++)
            for (size_t i = 0; i < hw; i++) {
                double v = x[(k * C + c) * hw + i] - mean;
                var += v * v;
            }
        var /= (double)M;
        const double inv = 1.0 / sqrt(var + 1e-5);
        for (size_t k = 0; k < (size_t)N; k++)
            for (size_t i = 0; i < hw; i++) {
                const size_t at = (k * C + c) * hw + i;
                sdy += dy[at], sdyx += dy[at] * (x[at] - mean) * inv;
            }
        bad += fabs(db[c] - sdy) > 1e-4 * (1 + fabs(sdy));
        bad += fabs(dg[c] - sdyx) > 1e-4 * (1 + fabs(sdyx));
        for (size_t k = 0; k < (size_t)N; k++)
            for (size_t i = 0; i < hw; i++) {
                const size_t at = (k * C + c) * hw + i;
                const double xh = (x[at] - mean) * inv;
                const double ry = g[c] * xh + be[c];
                const double rdx = g[c] * inv / (double)M * ((double)M * dy[at] - sdy - xh * sdyx);
                bad += fabs(y[at] - ry) > 1e-4 * (1 + fabs(ry));
                bad += fabs(dx[at] - rdx) > 1e-4 * (1 + fabs(rdx));
            }
    }
    if (bad)
        fprintf(stderr, "  N%d C%d %dx%d: %d values off the double reference\n", N, C, H, W, bad);
    ASSERT_EQ(bad, 0);
    free(x), free(dy), free(g), free(be), free(out[0]), free(out[1]);
}

T_TEST(bn_small_planes)
{
    small_case(t_failed_, 5, 70, 1, 1);  /* 1x1, two blocks, the second of 6 channels */
    small_case(t_failed_, 3, 130, 2, 2); /* 2x2, three blocks */
    small_case(t_failed_, 4, 33, 3, 3);  /* 3x3: 9 values, a channel count off 16 */
    small_case(t_failed_, 1, 17, 3, 5);  /* one image, 15 values */
    small_case(t_failed_, 3, 70, 4, 4);  /* 4x4: the largest plane, one vector a plane */
    small_case(t_failed_, 1, 17, 2, 8);
    bn_case(t_failed_, 3, 70, 2, 2, 2); /* the relu fused, against relu apart */
    bn_case(t_failed_, 2, 70, 4, 4, 2);
    bn_case(t_failed_, 4, 9, 1, 1, 1);
}

T_TEST(add_relu)
{
    rt_backend b;
    rt_error err = {0};
    ASSERT_EQ(rt_backend_open(&b, "cpu", 2, &err), RT_OK);
    const size_t n = 70001; /* more than one thread's share, and a tail */
    float *a = randn(n, 5, 1.0f, 0.0f), *x = randn(n, 6, 1.0f, 0.0f);
    float *zf = malloc(n * 4), *za = malloc(n * 4), *zi = malloc(n * 4);
    rt_tensor ta = tens(a, 1, (int)n, 1, 1), tx = tens(x, 1, (int)n, 1, 1);
    rt_tensor tzf = tens(zf, 1, (int)n, 1, 1), tza = tens(za, 1, (int)n, 1, 1);
    rt_tensor tzi = tens(zi, 1, (int)n, 1, 1);
    ASSERT_EQ(rt_backend_add_relu(&b, &tzf, &ta, &tx, &err), RT_OK);
    ASSERT_EQ(rt_backend_add(&b, &tza, &ta, &tx, &err), RT_OK);
    ASSERT_EQ(rt_backend_relu_fwd(&b, &tza, &tza, 0.0f, &err), RT_OK);
    memcpy(zi, a, n * 4);
    ASSERT_EQ(rt_backend_add_relu(&b, &tzi, &tzi, &tx, &err), RT_OK); /* in place */
    ASSERT(same_bits("add_relu", zf, za, n));
    ASSERT(same_bits("add_relu in place", zi, za, n));
    free(a), free(x), free(zf), free(za), free(zi);
    rt_backend_close(&b);
}

/* ---- batch-norm statistics taken by the convolution (conv2d_fwd_moments) ---- */

/* A convolution (an R x R filter at stride st) whose output a batch norm (+ relu) takes:
 * conv2d_fwd_moments writes conv2d_fwd's output bit for bit, its moments are the same
 * bits on 1 and 2 threads, and bn_fwd_train_moments on them gives bn_fwd_train's (and,
 * with a skip, bn_add_fwd_train's) output and statistics bit for bit; the mean and
 * variance are within rounding of a double reference. conv_path is KILN_CPU_CONV
 * ("auto": the direct path the shape takes). */
static void moments_case(int *t_failed_, const char *conv_path, int N, int C, int H, int K, int R,
                         int st, int pad, int bias)
{
    rt_conv_desc cd = {
        .N = N, .C = C, .H = H, .W = H, .K = K, .R = R, .S = R, .stride = st, .pad = pad};
    cd.P = cd.Q = (H + 2 * pad - R) / st + 1;
    const int P = cd.P;
    const size_t nx = (size_t)N * C * H * H, ny = (size_t)N * K * P * P, nm = (size_t)N * K * 4;
    float *x = randn(nx, 11, 1.0f, 0.3f), *w = randn((size_t)K * C * R * R, 12, 0.3f, 0.05f);
    float *bs = randn((size_t)K, 13, 1.0f, 2.0f), *g = randn((size_t)K, 14, 1.0f, 0.0f);
    float *be = randn((size_t)K, 15, 0.5f, 0.0f);
    float *y0 = malloc(ny * 4), *y1 = malloc(ny * 4), *o0 = malloc(ny * 4), *o1 = malloc(ny * 4);
    float *mom1 = malloc(nm * 4), *mom2 = malloc(nm * 4), *st0 = calloc(8 * (size_t)K, 4);
    float *st1 = st0 + 4 * (size_t)K;
    rt_tensor tx = tens(x, N, C, H, H), tw = tens(w, K, C, R, R), tb = tens(bs, K, 1, 1, 1);
    rt_tensor tg = tens(g, K, 1, 1, 1), tbe = tens(be, K, 1, 1, 1);
    rt_tensor ty0 = tens(y0, N, K, P, P), ty1 = tens(y1, N, K, P, P), to0 = tens(o0, N, K, P, P);
    rt_tensor to1 = tens(o1, N, K, P, P), tm1 = tens(mom1, N, K, 4, 1),
              tm2 = tens(mom2, N, K, 4, 1);
    rt_tensor s0[4], s1[4]; /* mean, invstd, running mean, running var */
    for (int i = 0; i < 4; i++) {
        s0[i] = tens(st0 + (size_t)i * K, K, 1, 1, 1);
        s1[i] = tens(st1 + (size_t)i * K, K, 1, 1, 1);
    }
    for (int c = 0; c < K; c++) st0[3 * K + c] = st1[3 * K + c] = 1.0f;
    rt_bn_desc bd = {.N = N, .C = K, .H = P, .W = P, .eps = 1e-5f, .momentum = 0.1f, .relu = 1};
    rt_error err = {0};
    for (int threads = 2; threads >= 1; threads--) {
        rt_backend b;
        setenv("KILN_CPU_CONV", conv_path, 1);
        ASSERT_EQ(rt_backend_open(&b, "cpu", threads, &err), RT_OK);
        unsetenv("KILN_CPU_CONV");
        ASSERT_EQ(b.ops->reserve_workspace(&b, b.ops->conv2d_workspace(&b, &cd), &err), RT_OK);
        const rt_tensor *pb = bias ? &tb : NULL;
        rt_tensor *tm = threads == 2 ? &tm1 : &tm2;
        ASSERT_EQ(rt_backend_conv2d_fwd(&b, &ty0, &tx, &tw, pb, &cd, &err), RT_OK);
        ASSERT_EQ(rt_backend_conv2d_fwd_moments(&b, &ty1, tm, &tx, &tw, pb, &cd, &err), RT_OK);
        ASSERT(same_bits("conv output", y1, y0, ny));
        /* the norm alone, then with a residual add fused after it (the skip: the conv's
         * input when the shapes agree, else its output) */
        for (int add = 0; add < 2 && threads == 2; add++) {
            const rt_tensor *sk = !add ? NULL : nx == ny ? &tx : &ty0;
            rt_status rc = sk ? rt_backend_bn_add_fwd_train(&b, &to0, &s0[0], &s0[1], &s0[2],
                                                            &s0[3], &ty0, sk, &tg, &tbe, &bd, &err)
                              : rt_backend_bn_fwd_train(&b, &to0, &s0[0], &s0[1], &s0[2], &s0[3],
                                                        &ty0, &tg, &tbe, &bd, &err);
            ASSERT_EQ(rc, RT_OK);
            ASSERT_EQ(rt_backend_bn_fwd_train_moments(&b, &to1, &s1[0], &s1[1], &s1[2], &s1[3],
                                                      &ty1, sk, &tg, &tbe, &tm1, &bd, &err),
                      RT_OK);
            ASSERT(same_bits(add ? "bn + add output" : "bn output", o1, o0, ny));
            ASSERT(
                same_bits(add ? "bn + add statistics" : "bn statistics", st1, st0, 4 * (size_t)K));
        }
        rt_backend_close(&b);
    }
    ASSERT(same_bits("moments, 1 vs 2 threads", mom2, mom1, nm));
    /* the statistics against a double reference over the conv's output */
    const size_t hw = (size_t)P * P, M = (size_t)N * hw;
    for (int c = 0; c < K; c++) {
        double mean = 0.0, var = 0.0;
        for (int n = 0; n < N; n++)
            for (size_t i = 0; i < hw; i++) mean += y0[((size_t)n * K + c) * hw + i];
        mean /= (double)M;
        for (int n = 0; n < N; n++)
            for (size_t i = 0; i < hw; i++) {
                double v = y0[((size_t)n * K + c) * hw + i] - mean;
                var += v * v;
            }
        var /= (double)M;
        double inv = 1.0 / sqrt(var + 1e-5), sd = sqrt(var);
        if (fabs(st1[c] - mean) > 1e-6 * (fabs(mean) + sd) || fabs(st1[K + c] - inv) > 2e-6 * inv) {
            fprintf(stderr, "  channel %d: mean %.9g vs %.9g, invstd %.9g vs %.9g\n", c,
                    (double)st1[c], mean, (double)st1[K + c], inv);
            ASSERT(0);
            break;
        }
    }
    free(x), free(w), free(bs), free(g), free(be), free(y0), free(y1), free(o0), free(o1);
    free(mom1), free(mom2), free(st0);
}

T_TEST(conv_bn_moments)
{
    moments_case(t_failed_, "auto", 3, 4, 8, 8, 3, 1, 1, 0);   /* stride 1, written in place */
    moments_case(t_failed_, "auto", 2, 3, 16, 16, 3, 1, 1, 0); /* ResNet's first layer */
    moments_case(t_failed_, "auto", 3, 5, 9, 6, 3, 1, 1, 0);   /* through the padded grid */
    moments_case(t_failed_, "auto", 2, 4, 8, 8, 3, 1, 0, 1);   /* pad 0, a bias */
    moments_case(t_failed_, "auto", 3, 8, 16, 16, 3, 2, 1, 0); /* stride 2 */
    moments_case(t_failed_, "auto", 3, 8, 16, 16, 1, 2, 0, 0); /* 1x1 projection */
    moments_case(t_failed_, "auto", 2, 3, 12, 5, 5, 1, 2, 1);  /* 5x5: im2col */
    moments_case(t_failed_, "im2col", 3, 4, 8, 8, 3, 1, 1, 0); /* im2col forced */
}

/* A batch norm's own statistics keep their accuracy on data far from 0 (the shifted
 * per-plane sums), and a short moments tensor is refused with the op's words. */
T_TEST(bn_moments_accuracy)
{
    enum { N = 4, C = 3, HW = 200 };
    const size_t n = (size_t)N * C * HW;
    float *x = randn(n, 21, 0.01f, 1000.0f), *y = malloc(n * 4), *st = calloc(6 * C, 4);
    float *g = st + 4 * C; /* beta (st + 5C) stays 0 */
    for (int c = 0; c < C; c++) st[3 * C + c] = g[c] = 1.0f;
    rt_tensor tx = tens(x, N, C, HW, 1), ty = tens(y, N, C, HW, 1), s[6];
    for (int i = 0; i < 6; i++) s[i] = tens(st + (size_t)i * C, C, 1, 1, 1);
    rt_bn_desc d = {.N = N, .C = C, .H = HW, .W = 1, .eps = 0.0f, .momentum = 0.1f};
    rt_backend b;
    rt_error err = {0};
    ASSERT_EQ(rt_backend_open(&b, "cpu", 2, &err), RT_OK);
    ASSERT_EQ(
        rt_backend_bn_fwd_train(&b, &ty, &s[0], &s[1], &s[2], &s[3], &tx, &s[4], &s[5], &d, &err),
        RT_OK);
    for (int c = 0; c < C; c++) {
        double mean = 0.0, var = 0.0;
        for (int k = 0; k < N; k++)
            for (int i = 0; i < HW; i++) mean += x[((size_t)k * C + c) * HW + i];
        mean /= N * HW;
        for (int k = 0; k < N; k++)
            for (int i = 0; i < HW; i++) {
                double v = x[((size_t)k * C + c) * HW + i] - mean;
                var += v * v;
            }
        var /= N * HW;
        ASSERT(fabs(st[c] - mean) < 1e-4);
        ASSERT(fabs(st[C + c] * sqrt(var) - 1.0) < 1e-4); /* invstd, eps 0 */
    }
    rt_tensor shortm = tens(x, 1, C, 4, 1);
    ASSERT_EQ(rt_backend_bn_fwd_train_moments(&b, &ty, &s[0], &s[1], &s[2], &s[3], &tx, NULL, &s[4],
                                              &s[5], &shortm, &d, &err),
              RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "batchnorm moments: tensor has 12 elements, op needs 48");
    free(x), free(y), free(st);
    rt_backend_close(&b);
}

/* bn + add (+ relu) fused vs bn, add (add_relu), and in the backward (dy + dy2 when two,
 * as a block's begin sums them), relu_bwd (or a copy, as add keeps dy), bn_bwd */
static void bn_add_case(int *t_failed_, int N, int C, int H, int W, int threads, int relu, int two)
{
    rt_backend b;
    rt_error err = {0};
    ASSERT_EQ(rt_backend_open(&b, "cpu", threads, &err), RT_OK);
    const size_t n = (size_t)N * C * H * W;
    float *x = randn(n, 11, 1.0f, 0.5f), *sk = randn(n, 12, 1.0f, -0.3f);
    float *dy = randn(n, 13, 1.0f, 0.0f), *dy2 = randn(n, 14, 1.0f, 0.0f);
    float *g = randn((size_t)C, 15, 1.0f, 0.0f), *be = randn((size_t)C, 16, 0.5f, 0.0f);
    float *f = zeroed(8 * n + 16 * (size_t)C);
    float *yf = f, *ya = f + n, *dxf = f + 2 * n, *dxa = f + 3 * n, *kf = f + 4 * n;
    float *ka = f + 5 * n, *sum = f + 6 * n, *st = f + 8 * n;
    rt_tensor tx = tens(x, N, C, H, W), tsk = tens(sk, N, C, H, W), tdy = tens(dy, N, C, H, W);
    rt_tensor tdy2 = tens(dy2, N, C, H, W), tg = tens(g, C, 1, 1, 1), tbe = tens(be, C, 1, 1, 1);
    rt_tensor tyf = tens(yf, N, C, H, W), tya = tens(ya, N, C, H, W);
    rt_tensor tdxf = tens(dxf, N, C, H, W), tdxa = tens(dxa, N, C, H, W);
    rt_tensor tkf = tens(kf, N, C, H, W), tka = tens(ka, N, C, H, W), tsum = tens(sum, N, C, H, W);
    rt_tensor s[16]; /* [0..5] fused: mean, invstd, rmean, rvar, dgamma, dbeta; [8..] apart */
    for (int i = 0; i < 16; i++) s[i] = tens(st + (size_t)i * C, C, 1, 1, 1);
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < C; c++) st[(size_t)(8 * k + 3) * C + c] = 1.0f; /* running var */
    rt_bn_desc d = {.N = N, .C = C, .H = H, .W = W, .eps = 1e-5f, .momentum = 0.1f, .relu = relu};
    rt_bn_desc da = d;
    da.relu = 0;
    ASSERT_EQ(rt_backend_bn_add_fwd_train(&b, &tyf, &s[0], &s[1], &s[2], &s[3], &tx, &tsk, &tg,
                                          &tbe, &d, &err),
              RT_OK);
    ASSERT_EQ(rt_backend_bn_add_bwd(&b, &tdxf, &s[4], &s[5], &tkf, &tdy, two ? &tdy2 : NULL, &tyf,
                                    &tx, &tg, &s[0], &s[1], &d, &err),
              RT_OK);
    ASSERT_EQ(
        rt_backend_bn_fwd_train(&b, &tya, &s[8], &s[9], &s[10], &s[11], &tx, &tg, &tbe, &da, &err),
        RT_OK);
    if (relu) ASSERT_EQ(rt_backend_add_relu(&b, &tya, &tya, &tsk, &err), RT_OK);
    else ASSERT_EQ(rt_backend_add(&b, &tya, &tya, &tsk, &err), RT_OK);
    const rt_tensor *gy = &tdy;
    if (two) {
        ASSERT_EQ(rt_backend_add(&b, &tsum, &tdy, &tdy2, &err), RT_OK);
        gy = &tsum;
    }
    if (relu) ASSERT_EQ(rt_backend_relu_bwd(&b, &tka, gy, &tya, 0.0f, &err), RT_OK);
    else ASSERT_EQ(rt_backend_copy(&b, &tka, gy, &err), RT_OK);
    ASSERT_EQ(rt_backend_bn_bwd(&b, &tdxa, &s[12], &s[13], &tka, &tx, &tg, &s[8], &s[9], &da, &err),
              RT_OK);
    /* an input gradient not aligned for doubles: the backward goes channel by channel
     * (cpu_bn.c bwd_channels), which must give the bits of the memory-order passes */
    float *dxc = malloc((n + 1) * sizeof *dxc);
    rt_tensor tdxc = tens(dxc + 1, N, C, H, W);
    ASSERT_EQ(rt_backend_bn_add_bwd(&b, &tdxc, &s[6], &s[7], &tkf, &tdy, two ? &tdy2 : NULL, &tyf,
                                    &tx, &tg, &s[0], &s[1], &d, &err),
              RT_OK);
    ASSERT(same_bits("input gradient, by channel", dxc + 1, dxf, n));
    ASSERT(same_bits("dgamma and dbeta, by channel", s[6].data, s[4].data, 2 * (size_t)C));
    free(dxc);
    size_t zeros = 0;
    for (size_t i = 0; i < n; i++) zeros += ya[i] == 0.0f;
    if (relu) ASSERT(zeros > n / 8 && zeros < n - n / 8); /* the relu cuts a real share */
    ASSERT(same_bits("forward", yf, ya, n));
    ASSERT(same_bits("statistics", st, st + 8 * (size_t)C, 4 * (size_t)C));
    ASSERT(same_bits("kept gradient", kf, ka, n));
    ASSERT(same_bits("input gradient", dxf, dxa, n));
    ASSERT(same_bits("dgamma", s[4].data, s[12].data, (size_t)C));
    ASSERT(same_bits("dbeta", s[5].data, s[13].data, (size_t)C));
    free(x), free(sk), free(dy), free(dy2), free(g), free(be), free(f);
    rt_backend_close(&b);
}

T_TEST(bn_add)
{
    bn_add_case(t_failed_, 1, 3, 1, 2, 1, 1, 0);
    bn_add_case(t_failed_, 2, 4, 5, 7, 2, 1, 1);
    bn_add_case(t_failed_, 8, 16, 8, 8, 2, 1, 1); /* rows of whole vectors */
    bn_add_case(t_failed_, 8, 16, 8, 8, 2, 0, 1); /* no relu after the add */
    bn_add_case(t_failed_, 3, 5, 9, 9, 1, 0, 0);  /* rows with a tail */
    bn_add_case(t_failed_, 3, 5, 9, 9, 2, 1, 1);
    /* planes of 16 values or fewer by channel blocks (cpu_bn_small.c): two blocks of 64
     * and a part, batch 1, 1x1 and 4x4 planes */
    bn_add_case(t_failed_, 3, 70, 4, 4, 2, 1, 1);
    bn_add_case(t_failed_, 4, 70, 2, 2, 2, 1, 1);
    bn_add_case(t_failed_, 1, 17, 3, 3, 1, 0, 1);
    bn_add_case(t_failed_, 5, 130, 1, 1, 2, 1, 0);
    bn_add_case(t_failed_, 3, 9, 3, 5, 1, 1, 1);
    bn_add_case(t_failed_, 2, 33, 128, 128, 2, 1, 1); /* streamed (cpu_bn_stream.c) */
    bn_add_case(t_failed_, 1, 17, 256, 256, 1, 0, 0); /* no relu: streamed too */
}

/* One training step (forward, loss, backward) of spec; *loss, the flat gradients and
 * nfused[], the number of layers that took part in a fusion: [0] a relu's (a relu and
 * the layer before it count two), [1] an add's (the norm, the add, a begin after it),
 * [2] a conv's and batch norm's statistics (two each). */
static int step(const char *spec, int fused, int threads, double *loss, float **grads, size_t *P,
                int *nfused)
{
    enum { NB = 4, C = 3, H = 8, W = 8 };
    rt_error err = {0};
    rt_backend b;
    rt_model *m = NULL;
    rt_model_input in = {C, H, W, 5};
    if (rt_backend_open(&b, "cpu", threads, &err)) return -1;
    int rc = -1;
    if (rt_model_create(&m, spec, &in, &err)) goto out;
    rt_model_set_fusion(m, fused);
    if (rt_model_attach(m, &b, NB, 9, &err)) goto out;
    nfused[0] = nfused[1] = nfused[2] = 0;
    for (int i = 0; i < m->nlayers; i++) {
        nfused[0] += m->layers[i].fused_relu;
        nfused[1] += m->layers[i].fused_add != NULL;
        nfused[2] += m->layers[i].moments != NULL;
    }
    float x[NB * C * H * W];
    int32_t y[NB] = {0, 4, 2, 1};
    rt_rng r = rt_rng_stream(3, RT_RNG_USER, 1, 0);
    rt_rng_fill_normal(&r, x, sizeof x / 4, 0.0f, 1.0f);
    if (rt_backend_upload(&b, rt_model_input_tensor(m), x, sizeof x, &err) ||
        rt_backend_upload(&b, rt_model_label_tensor(m), y, sizeof y, &err) ||
        rt_model_forward(m, NB, 1, 1, &err) || rt_model_loss(m, NB, loss, NULL, NULL, &err) ||
        rt_model_backward(m, NB, &err))
        goto out;
    rt_tensor *g = rt_model_grads_flat(m);
    *P = rt_tensor_numel(g);
    *grads = malloc(*P * 4);
    memcpy(*grads, g->data, *P * 4);
    rc = 0;
out:
    if (rc) fprintf(stderr, "  %s\n", err.msg);
    rt_model_destroy(m);
    rt_backend_close(&b);
    return rc;
}

/* fused (2 threads) vs apart (2 threads) vs fused again (1 thread): the same bits;
 * npairs relus, nadd layers' adds and nconvbn convs' batch-norm statistics are fused in
 * the fused runs and none apart, so the runs differ. */
static void model_case(int *t_failed_, const char *spec, int npairs, int nadd, int nconvbn)
{
    double lf = 0.0, la = 1.0, l1 = 2.0;
    float *gf = NULL, *ga = NULL, *g1 = NULL;
    size_t pf = 0, pa = 0, p1 = 0;
    int nf[3] = {-1, -1, -1}, na[3] = {-1, -1, -1}, n1[3] = {-1, -1, -1};
    ASSERT_EQ(step(spec, 1, 2, &lf, &gf, &pf, nf), 0);
    ASSERT_EQ(step(spec, 0, 2, &la, &ga, &pa, na), 0);
    ASSERT_EQ(step(spec, 1, 1, &l1, &g1, &p1, n1), 0);
    ASSERT_EQ(nf[0], 2 * npairs);
    ASSERT_EQ(n1[0], 2 * npairs);
    ASSERT_EQ(nf[1], nadd);
    ASSERT_EQ(n1[1], nadd);
    ASSERT_EQ(nf[2], 2 * nconvbn);
    ASSERT_EQ(n1[2], 2 * nconvbn);
    ASSERT_EQ(na[0] + na[1] + na[2], 0);
    ASSERT_EQ(pf, pa);
    ASSERT_EQ(pf, p1);
    ASSERT(lf == la && lf == l1);
    int same = same_bits("model gradients", gf, ga, pf) &&
               same_bits("model gradients, 1 thread", gf, g1, pf);
    free(gf), free(ga), free(g1);
    ASSERT(same);
}

/* Attaching again redoes the statistics fusion from scratch: the norm's moments tensor
 * is there only while fused, and the same step gives the same loss each time. */
T_TEST(reattach_moments)
{
    enum { NB = 2 };
    rt_error err = {0};
    rt_backend b;
    rt_model *m = NULL;
    rt_model_input in = {3, 8, 8, 5};
    ASSERT_EQ(rt_backend_open(&b, "cpu", 2, &err), RT_OK);
    ASSERT_EQ(
        rt_model_create(&m, "conv2d 4 3 pad=same\nbatchnorm\nrelu\nflatten\ndense 5", &in, &err),
        RT_OK);
    float x[NB * 3 * 8 * 8];
    int32_t y[NB] = {1, 3};
    rt_rng r = rt_rng_stream(5, RT_RNG_USER, 2, 0);
    rt_rng_fill_normal(&r, x, sizeof x / 4, 0.0f, 1.0f);
    double loss[4];
    const int fused[4] = {1, 1, 0, 1};
    for (int k = 0; k < 4; k++) {
        rt_model_set_fusion(m, fused[k]);
        ASSERT_EQ(rt_model_attach(m, &b, NB, 9, &err), RT_OK);
        const rt_layer *bn = &m->layers[1];
        ASSERT_EQ(bn->nsaved, fused[k] ? 3 : 2);
        ASSERT(fused[k] ? bn->moments == &bn->saved[2] && m->layers[0].moments == bn->moments
                        : !bn->moments && !m->layers[0].moments);
        ASSERT_EQ(rt_backend_upload(&b, rt_model_input_tensor(m), x, sizeof x, &err), RT_OK);
        ASSERT_EQ(rt_backend_upload(&b, rt_model_label_tensor(m), y, sizeof y, &err), RT_OK);
        ASSERT_EQ(rt_model_forward(m, NB, 1, 1, &err), RT_OK);
        ASSERT_EQ(rt_model_loss(m, NB, &loss[k], NULL, NULL, &err), RT_OK);
    }
    ASSERT(loss[0] == loss[1] && loss[0] == loss[2] && loss[0] == loss[3]);
    rt_model_destroy(m);
    rt_backend_close(&b);
}

T_TEST(model_fused_equals_apart)
{
    /* bn + relu, an identity block and a projection block ending in add + relu */
    model_case(t_failed_,
               "conv2d 4 3 pad=same\nbatchnorm\nrelu\n"
               "residual:\n    conv2d 4 3 pad=same\n    batchnorm\n    relu\n"
               "    conv2d 4 3 pad=same\n    batchnorm\nrelu\n"
               "residual:\n    conv2d 6 3 stride=2 pad=same\n    batchnorm\n    relu\n"
               "    conv2d 6 3 pad=same\n    batchnorm\n  shortcut:\n"
               "    conv2d 6 1 stride=2\n    batchnorm\nrelu\n"
               "globalavgpool\nflatten\ndense 5",
               5, 5, 6);
    /* batchnorm first, and a block whose main path is empty */
    model_case(t_failed_, "batchnorm\nrelu\nresidual:\n    relu\nrelu\nflatten\ndense 5", 2, 0, 0);
    /* a norm + add with no relu after it, whose block the next block's begin follows, and
     * a projection that is only a batchnorm (its gradient goes to the shortcut's keep) */
    model_case(t_failed_,
               "conv2d 4 3 pad=same\nresidual:\n    batchnorm\n"
               "residual:\n    conv2d 4 3 pad=same\n    batchnorm\nrelu\n"
               "residual:\n    conv2d 4 3 pad=same\n    batchnorm\n  shortcut:\n    batchnorm\n"
               "relu\nglobalavgpool\nflatten\ndense 5",
               2, 8, 2);
}

int main(void)
{
    T_RUN(bn_relu);
    T_RUN(bn_small_planes);
    T_RUN(add_relu);
    T_RUN(bn_add);
    T_RUN(conv_bn_moments);
    T_RUN(bn_moments_accuracy);
    T_RUN(reattach_moments);
    T_RUN(model_fused_equals_apart);
    return T_EXIT();
}
