/* test_cpu_bf16.c - --precision bf16 on the CPU backend (runtime/cpu/cpu_bf16.c).
 *
 * bf16 means: the inputs of each product (x and w forward, dy and w for the input
 * gradient, dy and x for the weight gradient, the same for dense layers) are rounded to
 * bf16 (nearest, ties to even), the products accumulate in fp32, outputs are fp32; a
 * bias gradient sums the fp32 dy. So each op is checked against the fp32 backend fed
 * with inputs that the test rounds itself: the two differ only by the order of the fp32
 * sums, |bf16 - ref| <= 1e-5 (|ref| + max|ref|) (as test_conv_direct's tolerance),
 * while an op that forgot to round an input is off by ~2^-9 of its inputs (about 1e-3
 * of max|ref|, 100 times the tolerance). Also against the unrounded fp32 result, within
 * check_ops' bf16 bound 0.02 sqrt(terms) rms(a) rms(b), and the same bits run after
 * run. Shapes: the seed CNN's and ResNet-20's convolutions (direct, Winograd, stride 2,
 * 1x1), a 5x5 (im2col) one, odd sizes, wide ones, and dense layers; with AMX, which
 * shapes take which tile kernel; with AMX off (KILN_CPU_AMX=off), and with
 * KILN_CPU_DP=all (VDPBF16PS, cpu_dp.h, takes every product AMX does not but the 1- and
 * 3-channel first layers, as on AMD cores).
 * On a CPU without AVX512_BF16 the op checks skip with that reason; the refusals
 * (KILN_CPU_CONV=avx2 names the missing loops, fp16 is refused) run everywhere.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../t.h"
#include "cpu/cpu_amx_tiles.h"
#include "cpu/cpu_conv_amx.h"
#include "cpu/cpu_internal.h"
#include "rt_backend.h"
#include "rt_device.h"
#include "rt_rng.h"

static float *rnd(size_t n, uint32_t seed)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    rt_rng r = rt_rng_stream(11, RT_RNG_USER, seed, 0);
    rt_rng_fill_uniform(&r, p, n, -1.0f, 1.0f);
    return p;
}

static float bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    memcpy(&f, &u, 4);
    return f;
}

static float *rounded(const float *x, size_t n)
{
    float *r = malloc((n ? n : 1) * sizeof *r);
    for (size_t i = 0; i < n; i++) r[i] = bf16(x[i]);
    return r;
}

static rt_tensor tens(float *p, int n, int c, int h, int w)
{
    rt_tensor t = {.data = p, .n = n, .c = c, .h = h, .w = w};
    return t;
}

static double rms(const float *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return n ? sqrt(s / (double)n) : 0.0;
}

/* mismatches of got against ref: tight (sum order only) or the bf16 bound */
static int compare(const char *what, const float *got, const float *ref, size_t n, double atol,
                   int tight)
{
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) m = fabsf(ref[i]) > m ? fabsf(ref[i]) : m;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double tol = tight ? 1e-5 * (fabs(ref[i]) + m) : atol;
        if (!(fabs((double)got[i] - ref[i]) <= tol) && bad++ < 3)
            fprintf(stderr, "  %s[%zu]: %.8g vs %.8g (%s, tol %.3g)\n", what, i, got[i], ref[i],
                    tight ? "rounded inputs" : "fp32", tol);
    }
    return bad;
}

static int open_cpu(rt_backend *b, int threads, rt_precision p, rt_error *err)
{
    if (rt_backend_open(b, "cpu", threads, err) != RT_OK) return -1;
    if (rt_backend_set_precision(b, p, err) != RT_OK) {
        rt_backend_close(b);
        return -2;
    }
    return 0;
}

typedef struct {
    float *y, *dx, *dw, *db;
} outs;

static int conv_run(rt_backend *b, const rt_conv_desc *d, const float *x, const float *w,
                    const float *bias, const float *dy, outs *o)
{
    size_t nx = (size_t)d->N * d->C * d->H * d->W, ny = (size_t)d->N * d->K * d->P * d->Q;
    size_t nw = (size_t)d->K * d->C * d->R * d->S;
    o->y = malloc(ny * 4), o->dx = malloc(nx * 4), o->dw = malloc(nw * 4);
    o->db = malloc((size_t)d->K * 4);
    memset(o->y, 0xff, ny * 4), memset(o->dx, 0xff, nx * 4), memset(o->dw, 0xff, nw * 4);
    memset(o->db, 0xff, (size_t)d->K * 4);
    rt_tensor X = tens((float *)x, d->N, d->C, d->H, d->W),
              W = tens((float *)w, d->K, d->C, d->R, d->S);
    rt_tensor B = tens((float *)bias, d->K, 1, 1, 1),
              DY = tens((float *)dy, d->N, d->K, d->P, d->Q);
    rt_tensor Y = tens(o->y, d->N, d->K, d->P, d->Q), DX = tens(o->dx, d->N, d->C, d->H, d->W);
    rt_tensor DW = tens(o->dw, d->K, d->C, d->R, d->S), DB = tens(o->db, d->K, 1, 1, 1);
    rt_error err = {0};
    int bad = b->ops->reserve_workspace(b, b->ops->conv2d_workspace(b, d), &err) != RT_OK;
    bad = bad || rt_backend_conv2d_fwd(b, &Y, &X, &W, &B, d, &err) != RT_OK;
    bad = bad || rt_backend_conv2d_bwd_data(b, &DX, &DY, &W, d, &err) != RT_OK;
    bad = bad || rt_backend_conv2d_bwd_filter(b, &DW, &DB, &DY, &X, d, &err) != RT_OK;
    if (bad) fprintf(stderr, "  conv failed: %s\n", err.msg);
    return bad;
}

static void drop(outs *o) { free(o->y), free(o->dx), free(o->dw), free(o->db); }

static rt_conv_desc cdesc(int N, int C, int H, int W, int K, int R, int stride, int pad)
{
    rt_conv_desc d = {
        .N = N, .C = C, .H = H, .W = W, .K = K, .R = R, .S = R, .stride = stride, .pad = pad};
    d.P = (H + 2 * pad - R) / stride + 1;
    d.Q = (W + 2 * pad - R) / stride + 1;
    return d;
}

static rt_backend g_bf, g_ref;

/* one convolution: bf16 vs fp32 on rounded inputs (tight), vs fp32 (bf16 bound) */
static int check_conv(const rt_conv_desc *d)
{
    size_t nx = (size_t)d->N * d->C * d->H * d->W, ny = (size_t)d->N * d->K * d->P * d->Q;
    size_t nw = (size_t)d->K * d->C * d->R * d->S;
    float *x = rnd(nx, 1), *w = rnd(nw, 2), *bias = rnd((size_t)d->K, 3), *dy = rnd(ny, 4);
    float *xr = rounded(x, nx), *wr = rounded(w, nw), *dyr = rounded(dy, ny);
    outs a, e, f, a2;
    int bad = conv_run(&g_bf, d, x, w, bias, dy, &a) + conv_run(&g_bf, d, x, w, bias, dy, &a2);
    /* the reference: rounded inputs; its bias gradient from the fp32 dy (a separate run) */
    bad += conv_run(&g_ref, d, xr, wr, bias, dyr, &e) + conv_run(&g_ref, d, x, w, bias, dy, &f);
    if (bad) goto out;
    const double crs = (double)d->C * d->R * d->S, kpq = (double)d->K * d->R * d->S;
    bad += compare("y", a.y, e.y, ny, 0, 1);
    bad += compare("dx", a.dx, e.dx, nx, 0, 1);
    bad += compare("dw", a.dw, e.dw, nw, 0, 1);
    bad += compare("db", a.db, f.db, (size_t)d->K, 0, 1);
    bad += compare("y vs fp32", a.y, f.y, ny, 0.02 * sqrt(crs) * rms(x, nx) * rms(w, nw), 0);
    bad += compare("dx vs fp32", a.dx, f.dx, nx, 0.02 * sqrt(kpq) * rms(dy, ny) * rms(w, nw), 0);
    bad += compare("dw vs fp32", a.dw, f.dw, nw,
                   0.02 * sqrt((double)d->N * d->P * d->Q) * rms(dy, ny) * rms(x, nx), 0);
    if (memcmp(a.y, a2.y, ny * 4) || memcmp(a.dx, a2.dx, nx * 4) || memcmp(a.dw, a2.dw, nw * 4) ||
        memcmp(a.db, a2.db, (size_t)d->K * 4)) {
        fprintf(stderr, "  not the same bits run after run\n");
        bad++;
    }
out:
    if (bad)
        fprintf(stderr, "  conv N%d C%d %dx%d K%d %dx%d stride %d pad %d: %d mismatches\n", d->N,
                d->C, d->H, d->W, d->K, d->R, d->S, d->stride, d->pad, bad);
    drop(&a), drop(&a2), drop(&e), drop(&f);
    free(x), free(w), free(bias), free(dy), free(xr), free(wr), free(dyr);
    return bad;
}

T_TEST(conv_rounds_inputs_accumulates_fp32)
{
    const rt_conv_desc cs[] = {
        cdesc(4, 1, 28, 28, 32, 3, 1, 0),  /* the seed CNN's first conv */
        cdesc(4, 32, 26, 26, 64, 3, 1, 0), /* and its second */
        cdesc(3, 3, 32, 32, 16, 3, 1, 1),  /* ResNet-20's first layer */
        cdesc(3, 16, 32, 32, 16, 3, 1, 1), /* stage 1: Winograd */
        cdesc(3, 32, 16, 16, 32, 3, 1, 1), /* stage 2 */
        cdesc(3, 64, 8, 8, 64, 3, 1, 1),   /* stage 3: direct, in place */
        cdesc(3, 16, 32, 32, 32, 3, 2, 1), /* stride-2 downsampling */
        cdesc(3, 16, 32, 32, 32, 1, 2, 0), /* 1x1 projection */
        cdesc(9, 5, 9, 13, 7, 3, 1, 1),    /* odd sizes, 2 weight-gradient groups */
        cdesc(2, 3, 12, 11, 6, 5, 1, 2),   /* 5x5: im2col + sgemm */
        cdesc(2, 4, 6, 6, 8, 1, 1, 0),     /* 1x1 stride 1: no unfold */
        cdesc(3, 32, 16, 16, 64, 3, 2, 1), /* ResNet-20's stage-3 downsampling */
        cdesc(3, 32, 16, 16, 64, 1, 2, 0), /* and its projection */
        cdesc(3, 24, 15, 15, 40, 3, 2, 1), /* odd plane and channel counts */
        cdesc(3, 20, 15, 15, 36, 1, 2, 0), /* 1x1 stride 2, odd plane */
        cdesc(9, 48, 7, 9, 20, 1, 1, 0),   /* 1x1 stride 1, odd plane, 2 groups */
        cdesc(2, 144, 6, 6, 16, 3, 1, 1),  /* 3x3 wider than the direct path's 128 */
        cdesc(2, 136, 7, 7, 24, 3, 2, 1),  /* and at stride 2 */
        cdesc(3, 6, 11, 7, 20, 5, 1, 2),   /* 5x5, K not a whole vector: turned filter */
        cdesc(5, 7, 13, 9, 33, 3, 2, 1),   /* stride 2, odd sizes and channel counts */
        cdesc(2, 130, 5, 5, 70, 1, 1, 0),  /* wide 1x1 */
        cdesc(2, 8, 9, 9, 16, 3, 1, 3),    /* pad past the filter: cols and fold */
        cdesc(1, 20, 9, 7, 36, 3, 1, 1),   /* 3x3 grid kernel, batch 1, channels past 16s */
        cdesc(9, 36, 5, 11, 20, 3, 1, 1),  /* and the other way, 2 groups, odd plane */
        cdesc(2, 17, 6, 6, 128, 3, 1, 1),  /* 8 blocks of 16 output channels */
        cdesc(1, 20, 10, 14, 36, 3, 2, 1), /* stride 2 on x's phases: batch 1, odd counts */
        cdesc(9, 128, 4, 6, 17, 3, 2, 1),  /* and 128 inputs, 2 groups, a 2 x 3 output */
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) bad += check_conv(&cs[i]);
    ASSERT_EQ(bad, 0);
}

/* With AMX, the 1x1 and wide 3x3 convolutions take the per-image GEMMs on tiles (their
 * workspace is that path's), the 3x3 ones of 16-128 channels the grid kernel (stride 2,
 * as ResNet-20's, on x's four phases when the planes are even); a 3-channel first layer
 * and odd stride-2 planes neither (rounded copies through the fp32 loops). (The tile
 * kernels are built on x86-64.) */
#if defined(__x86_64__)
T_TEST(amx_takes_stride2_1x1_and_wide)
{
    const rt_conv_desc gemm[] = {
        cdesc(128, 16, 32, 32, 32, 1, 2, 0), cdesc(128, 32, 16, 16, 64, 1, 2, 0),
        cdesc(32, 96, 28, 28, 24, 1, 1, 0), cdesc(8, 160, 8, 8, 160, 3, 1, 1),
        cdesc(8, 160, 8, 8, 160, 3, 2, 1)};
    for (size_t i = 0; i < sizeof gemm / sizeof gemm[0]; i++) {
        ASSERT_EQ(rtp_cpu_amx_gemm_takes(&gemm[i]), 1);
        ASSERT_EQ(rtp_cpu_conv2d_workspace(&g_bf, &gemm[i]),
                  rtp_cpu_amx_gemm_workspace(g_bf.threads, &gemm[i]));
    }
    /* the grid kernel: stride 1, and stride 2 on the phases */
    const rt_conv_desc grid[] = {cdesc(128, 16, 32, 32, 16, 3, 1, 1),
                                 cdesc(128, 16, 32, 32, 32, 3, 2, 1),
                                 cdesc(128, 32, 16, 16, 64, 3, 2, 1)};
    for (size_t i = 0; i < sizeof grid / sizeof grid[0]; i++) {
        ASSERT_EQ(rtp_cpu_amx_s2_takes(&grid[i]), grid[i].stride == 2);
        ASSERT_EQ(rtp_cpu_conv2d_workspace(&g_bf, &grid[i]),
                  rtp_cpu_amx_workspace(g_bf.threads, &grid[i]));
    }
    const rt_conv_desc first = cdesc(128, 3, 32, 32, 16, 3, 1, 1);
    ASSERT_EQ(rtp_cpu_amx_gemm_takes(&first), 0);
    const rt_conv_desc odd = cdesc(8, 24, 15, 15, 40, 3, 2, 1);
    ASSERT_EQ(rtp_cpu_amx_s2_takes(&odd), 0);
}
#endif

#if defined(__x86_64__)
/* The AMX packing's conversions give the scalar rule's bits: ties to even, NaN quiet,
 * infinities, subnormals kept (one among normal values, or all), every length and
 * tail, and at stride 2 (the phases' gathers). */
T_TEST(amx_rounding_is_the_scalar_rule)
{
    enum { n = 200 };
    static const uint32_t special[] = {
        0x00000001u, 0x807FFFFFu, 0x00008000u, 0x00018000u, 0x3F808000u, 0x3F818000u, 0x7F800000u,
        0xFF800000u, 0x7F800001u, 0xFFC00000u, 0x7F7FFFFFu, 0x80000000u, 0x3F807FFFu, 0x00400000u};
    uint32_t bits[n], pair[n];
    uint16_t one[n];
    float x[n], y[n];
    rt_rng r = rt_rng_stream(9, RT_RNG_USER, 1, 0);
    for (int round = 0; round < 3; round++) {
        rt_rng_fill_uniform(&r, x, n, -3.0f, 3.0f);
        rt_rng_fill_uniform(&r, y, n, -3.0f, 3.0f);
        memcpy(bits, x, sizeof bits);
        for (int i = 0; i < n; i++) {
            if (round == 1 && i % 37 == 5) bits[i] = special[(i / 37) % 14];     /* a few */
            if (round == 2) bits[i] = special[i % 14] ^ (uint32_t)(i & 2) << 30; /* all */
        }
        memcpy(x, bits, sizeof bits);
        for (int len = 1; len <= n; len += len < 40 ? 1 : 23) {
            memset(one, 0xAB, sizeof one), memset(pair, 0xAB, sizeof pair);
            rtp_amx_bf16_row(one, x, (size_t)len);
            rtp_amx_bf16_pairs(pair, x, y, (size_t)len);
            for (int i = 0; i < n; i++) {
                const uint32_t want = rtp_bf16_bits(x[i]), wy = rtp_bf16_bits(y[i]);
                ASSERT_EQ(one[i], i < len ? want : 0xABABu);
                ASSERT_EQ(pair[i], i < len ? (want | wy << 16) : 0xABABABABu);
            }
            const int half = (len + 1) / 2;
            rtp_amx_bf16_row_s2(one, x, (size_t)half);
            rtp_amx_bf16_pairs_s2(pair, x, y, (size_t)half);
            for (int i = 0; i < half; i++) {
                ASSERT_EQ(one[i], rtp_bf16_bits(x[2 * i]));
                ASSERT_EQ(pair[i], rtp_bf16_bits(x[2 * i]) | rtp_bf16_bits(y[2 * i]) << 16);
            }
        }
    }
}
#endif

static int dense_run(rt_backend *b, const rt_dense_desc *d, const float *x, const float *w,
                     const float *bias, const float *dy, outs *o)
{
    size_t nx = (size_t)d->N * d->F, ny = (size_t)d->N * d->O, nw = (size_t)d->O * d->F;
    o->y = malloc(ny * 4), o->dx = malloc(nx * 4), o->dw = malloc(nw * 4);
    o->db = malloc((size_t)d->O * 4);
    rt_tensor X = tens((float *)x, d->N, d->F, 1, 1), W = tens((float *)w, d->O, d->F, 1, 1);
    rt_tensor B = tens((float *)bias, d->O, 1, 1, 1), DY = tens((float *)dy, d->N, d->O, 1, 1);
    rt_tensor Y = tens(o->y, d->N, d->O, 1, 1), DX = tens(o->dx, d->N, d->F, 1, 1);
    rt_tensor DW = tens(o->dw, d->O, d->F, 1, 1), DB = tens(o->db, d->O, 1, 1, 1);
    rt_error err = {0};
    size_t ws = b->ops->dense_workspace ? b->ops->dense_workspace(b, d) : 0;
    int bad = b->ops->reserve_workspace(b, ws, &err) != RT_OK;
    bad = bad || rt_backend_dense_fwd(b, &Y, &X, &W, &B, d, &err) != RT_OK;
    bad = bad || rt_backend_dense_bwd_data(b, &DX, &DY, &W, d, &err) != RT_OK;
    bad = bad || rt_backend_dense_bwd_filter(b, &DW, &DB, &DY, &X, d, &err) != RT_OK;
    if (bad) fprintf(stderr, "  dense failed: %s\n", err.msg);
    return bad;
}

T_TEST(dense_rounds_inputs_accumulates_fp32)
{
    const rt_dense_desc ds[] = {{.N = 128, .F = 9216, .O = 128}, /* the seed CNN's */
                                {.N = 128, .F = 128, .O = 10},
                                {.N = 128, .F = 64, .O = 10}, /* ResNet-20's */
                                {.N = 3, .F = 7, .O = 5}};
    int bad = 0;
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
        const rt_dense_desc *d = &ds[i];
        size_t nx = (size_t)d->N * d->F, ny = (size_t)d->N * d->O, nw = (size_t)d->O * d->F;
        float *x = rnd(nx, 5), *w = rnd(nw, 6), *bias = rnd((size_t)d->O, 7), *dy = rnd(ny, 8);
        float *xr = rounded(x, nx), *wr = rounded(w, nw), *dyr = rounded(dy, ny);
        outs a, e, f, a2;
        int b = dense_run(&g_bf, d, x, w, bias, dy, &a) + dense_run(&g_bf, d, x, w, bias, dy, &a2);
        b += dense_run(&g_ref, d, xr, wr, bias, dyr, &e) + dense_run(&g_ref, d, x, w, bias, dy, &f);
        if (!b) {
            b += compare("dense y", a.y, e.y, ny, 0, 1);
            b += compare("dense dx", a.dx, e.dx, nx, 0, 1);
            b += compare("dense dw", a.dw, e.dw, nw, 0, 1);
            b += compare("dense db", a.db, f.db, (size_t)d->O, 0, 1);
            b += compare("dense y vs fp32", a.y, f.y, ny,
                         0.02 * sqrt((double)d->F) * rms(x, nx) * rms(w, nw), 0);
            b += memcmp(a.y, a2.y, ny * 4) != 0 || memcmp(a.dw, a2.dw, nw * 4) != 0;
        }
        if (b) fprintf(stderr, "  dense N%d F%d O%d: %d mismatches\n", d->N, d->F, d->O, b);
        bad += b;
        drop(&a), drop(&a2), drop(&e), drop(&f);
        free(x), free(w), free(bias), free(dy), free(xr), free(wr), free(dyr);
    }
    ASSERT_EQ(bad, 0);
}

/* a dense layer's random inputs and their bf16-rounded copies */
typedef struct {
    size_t nx, ny, nw;
    float *x, *w, *bias, *dy, *xr, *wr, *dyr;
} dense_in;

static dense_in dense_inputs(const rt_dense_desc *d, uint32_t seed)
{
    dense_in v = {.nx = (size_t)d->N * d->F, .ny = (size_t)d->N * d->O, .nw = (size_t)d->O * d->F};
    v.x = rnd(v.nx, seed), v.w = rnd(v.nw, seed + 1), v.dy = rnd(v.ny, seed + 2);
    v.bias = rnd((size_t)d->O, seed + 3);
    v.xr = rounded(v.x, v.nx), v.wr = rounded(v.w, v.nw), v.dyr = rounded(v.dy, v.ny);
    return v;
}

static void dense_in_free(dense_in *v)
{
    free(v->x), free(v->w), free(v->bias), free(v->dy), free(v->xr), free(v->wr), free(v->dyr);
}

/* Dense shapes that cross the AMX kernel's passes over the summed values (1024), its
 * strips of 256 output columns and its 32 x 32 blocks at every edge: the products as
 * the fp32 op's on rounded inputs, and the same bits on 1 thread as on 2. */
T_TEST(dense_edges_same_bits_on_1_and_2_threads)
{
    const rt_dense_desc ds[] = {{.N = 100, .F = 2501, .O = 70},
                                {.N = 33, .F = 1025, .O = 31},
                                {.N = 64, .F = 3000, .O = 96},
                                {.N = 40, .F = 300, .O = 257}};
    rt_backend one;
    rt_error err = {0};
    ASSERT_EQ(open_cpu(&one, 1, RT_PREC_BF16, &err), 0);
    int bad = 0;
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
        const rt_dense_desc *d = &ds[i];
        dense_in v = dense_inputs(d, 15);
        outs two, on1, ref;
        int b = dense_run(&g_bf, d, v.x, v.w, v.bias, v.dy, &two);
        b += dense_run(&one, d, v.x, v.w, v.bias, v.dy, &on1);
        b += dense_run(&g_ref, d, v.xr, v.wr, v.bias, v.dyr, &ref);
        if (!b)
            b += compare("dense y", two.y, ref.y, v.ny, 0, 1) +
                 compare("dense dx", two.dx, ref.dx, v.nx, 0, 1) +
                 compare("dense dw", two.dw, ref.dw, v.nw, 0, 1) +
                 (memcmp(two.y, on1.y, v.ny * 4) != 0) + (memcmp(two.dx, on1.dx, v.nx * 4) != 0) +
                 (memcmp(two.dw, on1.dw, v.nw * 4) != 0);
        if (b) fprintf(stderr, "  dense N%d F%d O%d: %d mismatches\n", d->N, d->F, d->O, b);
        bad += b;
        drop(&two), drop(&on1), drop(&ref), dense_in_free(&v);
    }
    rt_backend_close(&one);
    ASSERT_EQ(bad, 0);
}

/* Runs everywhere: what is refused, and with which words. */
T_TEST(refusals_name_what_is_missing)
{
    rt_backend b;
    rt_error err = {0};
    ASSERT_EQ(rt_backend_open(&b, "cpu", 1, &err), RT_OK);
    ASSERT_EQ(rt_backend_set_precision(&b, RT_PREC_FP16, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "needs a CUDA device");
    ASSERT_EQ(rt_backend_get_precision(&b), RT_PREC_FP32);
    ASSERT_EQ(rt_backend_set_precision(&b, RT_PREC_FP32, &err), RT_OK);
    rt_backend_close(&b);
    /* the AVX2 loops (a CPU without AVX-512, or forced) cannot take bf16 */
    setenv("KILN_CPU_CONV", "avx2", 1);
    rt_status s = rt_backend_open(&b, "cpu", 1, &err);
    unsetenv("KILN_CPU_CONV");
    ASSERT_EQ(s, RT_OK);
    ASSERT_EQ(rt_backend_set_precision(&b, RT_PREC_BF16, &err), RT_ENODEV);
    ASSERT_STR_CONTAINS(err.msg, "bf16 on the CPU needs the AVX-512 convolution loops");
    ASSERT_STR_CONTAINS(err.msg, "--precision fp32");
    ASSERT_EQ(rt_backend_get_precision(&b), RT_PREC_FP32);
    rt_backend_close(&b);
}

int main(void)
{
    T_RUN(refusals_name_what_is_missing);
    rt_error err = {0};
    int rc = open_cpu(&g_bf, 2, RT_PREC_BF16, &err);
    if (rc == -2 && err.code == RT_ENODEV) {
        printf("SKIP: %s\n", err.msg);
        return t_failures_ ? 1 : 77;
    }
    if (rc || open_cpu(&g_ref, 2, RT_PREC_FP32, &err)) {
        fprintf(stderr, "cannot open the CPU backend: %s\n", err.msg);
        return 1;
    }
    if (rt_backend_get_precision(&g_bf) != RT_PREC_BF16) {
        fprintf(stderr, "the backend does not report bf16\n");
        return 1;
    }
    const rtp_cpu *c = g_bf.impl;
    static const char *dp[] = {"none", "dense layers", "dense layers and convolutions"};
    printf("convolutions and dense layers on AMX tiles: %s; on VDPBF16PS: %s (the rest: "
           "rounded copies, fp32 loops)\n",
           c->amx ? "yes" : "no", dp[c->dp]);
    if (getenv("KILN_CPU_AMX") && c->amx) {
        fprintf(stderr, "KILN_CPU_AMX=off left AMX on\n");
        return 1;
    }
    const char *want = getenv("KILN_CPU_DP");
    if (want && !strcmp(want, "all") && c->dp != RTP_DP_ALL) {
        fprintf(stderr, "KILN_CPU_DP=all left convolutions off VDPBF16PS\n");
        return 1;
    }
    T_RUN(conv_rounds_inputs_accumulates_fp32);
#if defined(__x86_64__)
    if (c->amx) T_RUN(amx_takes_stride2_1x1_and_wide);
    if (c->amx) T_RUN(amx_rounding_is_the_scalar_rule);
#endif
    T_RUN(dense_rounds_inputs_accumulates_fp32);
    T_RUN(dense_edges_same_bits_on_1_and_2_threads);
    rt_backend_close(&g_bf);
    rt_backend_close(&g_ref);
    return T_EXIT();
}
