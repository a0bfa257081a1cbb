/* test_conv_direct.c - the direct convolutions (runtime/cpu/cpu_conv_direct.c, 3x3
 * stride 1; runtime/cpu/cpu_conv_s2.c, 3x3 and 1x1 stride 2) against the im2col + sgemm
 * path, for every instruction set this CPU has: forward, input gradient, weight and
 * bias gradient, on ResNet-20's shape classes (16/32/64 channels at 32x32/16x16/8x8,
 * the 3-channel first layer, the stride-2 downsampling convolutions and 1x1
 * projections) and odd ones (channel counts that fill no vector, odd sizes, pad 0 and
 * 2, with and without bias, a batch that is not a multiple of the weight-gradient
 * group), so that both of the stride-1 path's layouts (written in place, or through
 * the padded grid) and its Winograd F(2x2, 3x3) products (runtime/cpu/cpu_conv_wino.c:
 * border 1 on 16x16 planes and up, also with filter and channel counts that fill no
 * block of 4, and a plane that is not square) are compared; every output starts as
 * NaN, so an element an op leaves unwritten fails. Also:
 * results are bitwise the same run after run and for 1 or 2 threads, AVX2 and AVX-512
 * forward/input gradients agree bitwise, and convolutions no direct path takes (5x5,
 * 1x1 stride 1, >128 channels) stay on im2col. Each path is a backend opened with
 * KILN_CPU_CONV set. The depthwise loops (cpu_conv_dw.c, and cpu_conv_dw_lanes.c's
 * channels in the lanes for planes up to 16x16) are compared with the grouped im2col
 * path the same way.
 *
 * Tolerance: |direct - im2col| <= 1e-5 * (|im2col| + max|im2col|), as test_fixtures:
 * both are float32 sums of <= 9*64 terms in different orders (Winograd's transforms
 * add a few more roundings of the same size).
 */
#include <stdlib.h>

#include "../t.h"
#include "cpu/cpu_internal.h"
#include "rt_backend.h"
#include "rt_rng.h"

typedef struct {
    rt_conv_desc d;
    int bias;
} conv_case;

typedef struct {
    float *y, *dx, *dw, *db;
} result;

static rt_conv_desc desc(int N, int C, int H, int W, int K, int pad)
{
    rt_conv_desc d = {
        .N = N, .C = C, .H = H, .W = W, .K = K, .R = 3, .S = 3, .stride = 1, .pad = pad};
    d.P = H + 2 * pad - 2;
    d.Q = W + 2 * pad - 2;
    return d;
}

/* an R x R, stride-2 convolution */
static rt_conv_desc desc2(int N, int C, int H, int W, int K, int R, int pad)
{
    rt_conv_desc d = {
        .N = N, .C = C, .H = H, .W = W, .K = K, .R = R, .S = R, .stride = 2, .pad = pad};
    d.P = (H + 2 * pad - R) / 2 + 1;
    d.Q = (W + 2 * pad - R) / 2 + 1;
    return d;
}

static rt_tensor tens(float *p, int n, int c, int h, int w)
{
    rt_tensor t = {.data = p, .n = n, .c = c, .h = h, .w = w};
    return t;
}

static float *rnd(size_t n, uint32_t seed)
{
    float *p = malloc(n * sizeof *p);
    rt_rng r = rt_rng_stream(7, RT_RNG_USER, seed, 0);
    rt_rng_fill_uniform(&r, p, n, -1.0f, 1.0f);
    return p;
}

static int open_path(rt_backend *b, const char *path, int threads)
{
    rt_error err = {0};
    setenv("KILN_CPU_CONV", path, 1);
    memset(b, 0, sizeof *b);
    int rc = rt_backend_open(b, "cpu", threads, &err);
    unsetenv("KILN_CPU_CONV");
    if (rc) fprintf(stderr, "  open %s: %s\n", path, err.msg);
    return rc;
}

/* The direct path's name for d on b, or "im2col". */
static const char *path_of(rt_backend *b, const rt_conv_desc *d)
{
    const rtp_convk *k = rtp_cpu_conv_direct(b, d);
    if (!k) k = rtp_cpu_conv_s2(b, d);
    return k ? k->name : "im2col";
}

static int run(rt_backend *b, const conv_case *cc, result *r)
{
    const rt_conv_desc *d = &cc->d;
    size_t nx = (size_t)d->N * d->C * d->H * d->W, ny = (size_t)d->N * d->K * d->P * d->Q;
    size_t nw = rt_conv_weight_numel(d);
    float *x = rnd(nx, 1), *w = rnd(nw, 2), *bias = rnd((size_t)d->K, 3), *dy = rnd(ny, 4);
    r->y = calloc(ny, sizeof(float));
    r->dx = calloc(nx, sizeof(float));
    r->dw = calloc(nw, sizeof(float));
    r->db = calloc((size_t)d->K, sizeof(float));
    /* NaN in every output: an op must write all of it (outputs are overwritten) */
    memset(r->y, 0xff, ny * sizeof(float)), memset(r->dx, 0xff, nx * sizeof(float));
    memset(r->dw, 0xff, nw * sizeof(float));
    if (cc->bias) memset(r->db, 0xff, (size_t)d->K * sizeof(float));
    const int Cg = d->C / rt_conv_groups(d);
    rt_tensor X = tens(x, d->N, d->C, d->H, d->W), Wt = tens(w, d->K, Cg, d->R, d->S);
    rt_tensor B = tens(bias, d->K, 1, 1, 1), DY = tens(dy, d->N, d->K, d->P, d->Q);
    rt_tensor Y = tens(r->y, d->N, d->K, d->P, d->Q), DX = tens(r->dx, d->N, d->C, d->H, d->W);
    rt_tensor DW = tens(r->dw, d->K, Cg, d->R, d->S), DB = tens(r->db, d->K, 1, 1, 1);
    rt_error err = {0};
    int bad = b->ops->reserve_workspace(b, b->ops->conv2d_workspace(b, d), &err) != RT_OK;
    bad = bad || rt_backend_conv2d_fwd(b, &Y, &X, &Wt, cc->bias ? &B : NULL, d, &err) != RT_OK;
    bad = bad || rt_backend_conv2d_bwd_data(b, &DX, &DY, &Wt, d, &err) != RT_OK;
    bad = bad ||
          rt_backend_conv2d_bwd_filter(b, &DW, cc->bias ? &DB : NULL, &DY, &X, d, &err) != RT_OK;
    if (bad) fprintf(stderr, "  conv failed: %s\n", err.msg);
    free(x), free(w), free(bias), free(dy);
    return bad;
}

static void drop(result *r) { free(r->y), free(r->dx), free(r->dw), free(r->db); }

/* mismatches of a against the reference ref (printed, the first few) */
static int close_to(const char *what, const float *a, const float *ref, size_t n)
{
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) m = fabsf(ref[i]) > m ? fabsf(ref[i]) : m;
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(a[i] - ref[i]) <= 1e-5f * (fabsf(ref[i]) + m)) && bad++ < 3)
            fprintf(stderr, "  %s[%zu]: %.8g vs im2col %.8g (max %.4g)\n", what, i, a[i], ref[i],
                    m);
    return bad;
}

static int same_bits(const result *a, const result *b, const rt_conv_desc *d)
{
    size_t nx = (size_t)d->N * d->C * d->H * d->W, ny = (size_t)d->N * d->K * d->P * d->Q;
    return !memcmp(a->y, b->y, ny * 4) && !memcmp(a->dx, b->dx, nx * 4) &&
           !memcmp(a->dw, b->dw, rt_conv_weight_numel(d) * 4) && !memcmp(a->db, b->db, d->K * 4u);
}

static conv_case make(int N, int C, int H, int W, int K, int pad, int bias)
{
    conv_case c = {desc(N, C, H, W, K, pad), bias};
    return c;
}

static conv_case make2(int N, int C, int H, int W, int K, int R, int pad, int bias)
{
    conv_case c = {desc2(N, C, H, W, K, R, pad), bias};
    return c;
}

T_TEST(direct_matches_im2col)
{
    const conv_case cs[] = {
        make(3, 16, 32, 32, 16, 1, 0), /* ResNet-20 stage 1 (no bias: written in place) */
        make(3, 32, 16, 16, 32, 1, 0), /* stage 2 */
        make(3, 64, 8, 8, 64, 1, 0),   /* stage 3 */
        make(2, 3, 32, 32, 16, 1, 0),  /* the first layer (3 rows of dx: through the grid) */
        make(3, 16, 16, 16, 16, 1, 1), /* with a bias: through the grid */
        make(2, 8, 4, 6, 12, 1, 0),    /* 24 positions: in place for avx2 only */
        make(9, 5, 9, 13, 7, 1, 1),    /* odd sizes and channels; 9 images: 2 groups */
        make(2, 6, 7, 11, 20, 0, 0),   /* pad 0 (input gradient bordered by 2), no bias */
        make(2, 3, 6, 5, 36, 2, 1),    /* pad 2; 36 rows: 2 avx512 vectors + a tail */
        make(1, 128, 4, 4, 128, 1, 1), /* the largest direct layer */
        make(16, 1, 8, 8, 4, 1, 1),    /* one input channel, 4 filters */
        make(2, 5, 8, 32, 7, 1, 0),    /* Winograd: 4 x 16 tiles, 7 filters, 5 channels */
        make(1, 5, 10, 32, 7, 1, 0),   /* Winograd: 5 (odd) tile rows, one image */
        /* stride 2 */
        make2(3, 16, 32, 32, 32, 3, 1, 1), /* ResNet-20 stage 2's downsampling */
        make2(3, 32, 16, 16, 64, 3, 1, 1), /* stage 3's */
        make2(3, 16, 32, 32, 32, 1, 0, 1), /* the 1x1 projections */
        make2(9, 32, 16, 16, 64, 1, 0, 0), /* no bias, 2 groups */
        make2(9, 5, 9, 13, 7, 3, 1, 1),    /* odd sizes and channels */
        make2(2, 6, 10, 7, 20, 3, 0, 0),   /* pad 0 */
        make2(2, 3, 6, 5, 36, 3, 2, 1),    /* pad 2, 36 rows */
        make2(2, 11, 7, 9, 19, 1, 0, 1),   /* 1x1 on odd sizes: 11 channels, 19 filters */
        make2(1, 128, 5, 5, 128, 3, 1, 1), /* the largest */
    };
    const char *isas[] = {"avx512", "avx2"};
    rt_backend ref;
    ASSERT_EQ(open_path(&ref, "im2col", 2), 0);
    int tried = 0;
    for (int i = 0; i < 2; i++) {
        rt_backend b;
        ASSERT_EQ(open_path(&b, isas[i], 2), 0);
        const char *got = path_of(&b, &cs[0].d);
        if (strcmp(got, isas[i])) {
            printf("  %s: not on this CPU (%s instead), skipped\n", isas[i], got);
            rt_backend_close(&b);
            continue;
        }
        tried++;
        for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
            const rt_conv_desc *d = &cs[c].d;
            ASSERT_EQ(strcmp(path_of(&b, d), isas[i]), 0);
            ASSERT_EQ(strcmp(path_of(&ref, d), "im2col"), 0);
            result r, e;
            ASSERT_EQ(run(&b, &cs[c], &r), 0);
            ASSERT_EQ(run(&ref, &cs[c], &e), 0);
            size_t nx = (size_t)d->N * d->C * d->H * d->W;
            size_t ny = (size_t)d->N * d->K * d->P * d->Q;
            int bad = close_to("y", r.y, e.y, ny) + close_to("dx", r.dx, e.dx, nx) +
                      close_to("dw", r.dw, e.dw, (size_t)d->K * d->C * d->R * d->S) +
                      close_to("db", r.db, e.db, (size_t)d->K);
            if (bad)
                fprintf(stderr, "  %s, case N%d C%d %dx%d K%d %dx%d stride %d pad %d\n", isas[i],
                        d->N, d->C, d->H, d->W, d->K, d->R, d->S, d->stride, d->pad);
            drop(&r), drop(&e);
            ASSERT_EQ(bad, 0);
        }
        printf("  %s: %zu shapes match im2col\n", isas[i], sizeof cs / sizeof cs[0]);
        rt_backend_close(&b);
    }
    rt_backend_close(&ref);
    if (!tried) printf("  no direct path on this CPU (needs AVX2+FMA): nothing compared\n");
}

/* Same bits run after run and for 1 or 2 threads; AVX2 = AVX-512 for y and dx. */
T_TEST(direct_deterministic)
{
    const conv_case cs[] = {
        make(19, 16, 12, 10, 24, 1, 1),     make(19, 16, 12, 10, 24, 1, 0),
        make2(19, 16, 13, 10, 24, 3, 1, 1), make2(19, 16, 12, 11, 24, 1, 0, 1),
        make(19, 16, 16, 16, 24, 1, 0), /* Winograd, 8-float transforms */
        make(19, 16, 32, 32, 12, 1, 0), /* Winograd, 16-float transforms */
    };
    rt_backend b1, b2, a2;
    ASSERT_EQ(open_path(&b1, "auto", 1), 0);
    ASSERT_EQ(open_path(&b2, "auto", 2), 0);
    ASSERT_EQ(open_path(&a2, "avx2", 2), 0);
    if (!strcmp(path_of(&b2, &cs[0].d), "im2col")) {
        printf("  no direct path on this CPU: skipped\n");
        rt_backend_close(&b1), rt_backend_close(&b2), rt_backend_close(&a2);
        return;
    }
    int same = 1;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        const conv_case *c = &cs[i];
        ASSERT(strcmp(path_of(&b2, &c->d), "im2col"));
        result r1, r2, r3;
        ASSERT_EQ(run(&b2, c, &r1), 0);
        ASSERT_EQ(run(&b2, c, &r2), 0);
        ASSERT_EQ(run(&b1, c, &r3), 0);
        same = same && same_bits(&r1, &r2, &c->d) && same_bits(&r1, &r3, &c->d);
        if (strcmp(path_of(&a2, &c->d), path_of(&b2, &c->d))) { /* two ISAs here */
            result r4;
            ASSERT_EQ(run(&a2, c, &r4), 0);
            size_t nx = (size_t)c->d.N * c->d.C * c->d.H * c->d.W;
            size_t ny = (size_t)c->d.N * c->d.K * c->d.P * c->d.Q;
            ASSERT(!memcmp(r4.y, r1.y, ny * 4) && !memcmp(r4.dx, r1.dx, nx * 4));
            drop(&r4);
            printf("  %dx%d stride %d: avx2 and %s: forward and input gradient bitwise equal\n",
                   c->d.R, c->d.S, c->d.stride, path_of(&b2, &c->d));
        }
        drop(&r1), drop(&r2), drop(&r3);
    }
    rt_backend_close(&b1), rt_backend_close(&b2), rt_backend_close(&a2);
    ASSERT(same);
}

/* A depthwise convolution (groups = C = K) of R x R at stride st, padded by pad. */
static conv_case dw(int N, int C, int H, int W, int R, int st, int pad, int bias)
{
    conv_case c = {{.N = N,
                    .C = C,
                    .H = H,
                    .W = W,
                    .K = C,
                    .R = R,
                    .S = R,
                    .stride = st,
                    .pad = pad,
                    .groups = C},
                   bias};
    c.d.P = (H + 2 * pad - R) / st + 1;
    c.d.Q = (W + 2 * pad - R) / st + 1;
    return c;
}

/* The depthwise loop (runtime/cpu/cpu_conv_dw.c) against the grouped im2col + sgemm path
 * (KILN_CPU_CONV=im2col): MobileNetV2's shapes and odd ones; then the same bits for 1
 * and 2 threads and run after run. */
T_TEST(depthwise_matches_grouped_im2col)
{
    const conv_case cs[] = {
        dw(3, 32, 16, 16, 3, 1, 1, 0), /* MobileNetV2's first block at 32x32 input */
        dw(3, 96, 16, 16, 3, 2, 1, 0), /* a stride-2 block */
        dw(4, 16, 1, 1, 3, 1, 1, 0),   /* the last stages: 1x1 planes */
        dw(4, 16, 2, 2, 3, 2, 1, 1),   /* 2x2 at stride 2 */
        dw(5, 7, 9, 13, 3, 2, 1, 1),   /* odd sizes */
        dw(2, 5, 11, 10, 5, 1, 2, 1),  /* 5x5 */
        dw(2, 6, 8, 7, 3, 1, 0, 0),    /* pad 0 */
        dw(2, 4, 10, 11, 3, 3, 1, 1),  /* stride 3 */
        /* channels in the lanes (cpu_conv_dw_lanes.c, planes up to 16x16): MobileNetV2's
         * small planes, channel counts that fill no vector, one image, groups of 8 */
        dw(9, 144, 8, 8, 3, 1, 1, 1),  /* 9 images: two weight-gradient groups */
        dw(3, 144, 8, 8, 3, 2, 1, 0),  /* 8x8 -> 4x4 */
        dw(1, 192, 4, 4, 3, 1, 1, 1),  /* one image */
        dw(2, 576, 2, 2, 3, 2, 1, 0),  /* 2x2 -> 1x1 */
        dw(17, 21, 1, 1, 3, 1, 1, 1),  /* 1x1, 21 channels, 3 groups */
        dw(3, 37, 7, 7, 3, 1, 1, 1),   /* 7x7 */
        dw(3, 19, 7, 7, 3, 2, 1, 1),   /* 7x7 -> 4x4 */
        dw(2, 3, 2, 2, 3, 1, 1, 0),    /* 2x2, 3 channels */
        dw(2, 33, 16, 15, 3, 2, 1, 1), /* 240 positions, stride 2 */
        /* the plane loops (cpu_conv_dw.c) above 256 positions */
        dw(3, 5, 17, 17, 3, 1, 1, 1),
        dw(2, 6, 20, 18, 3, 2, 1, 0),
    };
    rt_backend ref, b1, b2;
    ASSERT_EQ(open_path(&ref, "im2col", 2), 0);
    ASSERT_EQ(open_path(&b1, "auto", 1), 0);
    ASSERT_EQ(open_path(&b2, "auto", 2), 0);
    if (!rtp_cpu_conv_dw(&b2, &cs[0].d)) {
        printf("  no direct path on this CPU: nothing compared\n");
        rt_backend_close(&ref), rt_backend_close(&b1), rt_backend_close(&b2);
        return;
    }
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        const rt_conv_desc *d = &cs[c].d;
        ASSERT(rtp_cpu_conv_dw(&b2, d) && !rtp_cpu_conv_dw(&ref, d));
        result r, e, r1, r2;
        ASSERT_EQ(run(&b2, &cs[c], &r), 0);
        ASSERT_EQ(run(&ref, &cs[c], &e), 0);
        ASSERT_EQ(run(&b1, &cs[c], &r1), 0);
        ASSERT_EQ(run(&b2, &cs[c], &r2), 0);
        size_t nx = (size_t)d->N * d->C * d->H * d->W;
        size_t ny = (size_t)d->N * d->K * d->P * d->Q;
        int bad = close_to("y", r.y, e.y, ny) + close_to("dx", r.dx, e.dx, nx) +
                  close_to("dw", r.dw, e.dw, rt_conv_weight_numel(d)) +
                  close_to("db", r.db, e.db, (size_t)d->K);
        if (bad)
            fprintf(stderr, "  depthwise N%d C%d %dx%d %dx%d stride %d pad %d\n", d->N, d->C, d->H,
                    d->W, d->R, d->S, d->stride, d->pad);
        int same = same_bits(&r, &r1, d) && same_bits(&r, &r2, d);
        drop(&r), drop(&e), drop(&r1), drop(&r2);
        ASSERT_EQ(bad, 0);
        ASSERT(same);
    }
    printf("  %zu depthwise shapes match grouped im2col, bitwise for 1 and 2 threads\n",
           sizeof cs / sizeof cs[0]);
    rt_backend_close(&ref), rt_backend_close(&b1), rt_backend_close(&b2);
}

/* The batched 1x1 path (runtime/cpu/cpu_conv_1x1.c: planes of 64 and fewer, the batch
 * as one sgemm between layout changes) against a plain double-precision loop; every
 * backend takes that path for these shapes, so the reference is written here. */
T_TEST(batched_1x1_matches_loops)
{
    const conv_case cs[] = {
        {{.N = 5, .C = 19, .H = 1, .W = 1, .K = 37, .R = 1, .S = 1, .stride = 1, .P = 1, .Q = 1},
         1},
        {{.N = 3, .C = 24, .H = 2, .W = 2, .K = 9, .R = 1, .S = 1, .stride = 1, .P = 2, .Q = 2}, 0},
        {{.N = 9, .C = 8, .H = 3, .W = 5, .K = 17, .R = 1, .S = 1, .stride = 1, .P = 3, .Q = 5}, 1},
        {{.N = 2, .C = 33, .H = 8, .W = 8, .K = 16, .R = 1, .S = 1, .stride = 1, .P = 8, .Q = 8},
         0},
    };
    rt_backend b;
    ASSERT_EQ(open_path(&b, "auto", 2), 0);
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        const rt_conv_desc *d = &cs[i].d;
        ASSERT(rtp_cpu_conv_1x1(d));
        result r;
        ASSERT_EQ(run(&b, &cs[i], &r), 0);
        const int N = d->N, C = d->C, K = d->K, pq = d->P * d->Q;
        float *x = rnd((size_t)N * C * pq, 1), *w = rnd((size_t)K * C, 2), *bias = rnd(K, 3);
        float *dy = rnd((size_t)N * K * pq, 4);
        float *e = calloc((size_t)N * (K + C) * pq + (size_t)K * C + K, sizeof *e);
        float *ey = e, *edx = ey + (size_t)N * K * pq, *edw = edx + (size_t)N * C * pq;
        float *edb = edw + (size_t)K * C;
        for (int n = 0; n < N; n++)
            for (int p = 0; p < pq; p++) {
                for (int k = 0; k < K; k++) {
                    double s = cs[i].bias ? bias[k] : 0.0;
                    for (int c = 0; c < C; c++)
                        s += (double)w[k * C + c] * x[((size_t)n * C + c) * pq + p];
                    ey[((size_t)n * K + k) * pq + p] = (float)s;
                }
                for (int c = 0; c < C; c++) {
                    double s = 0.0;
                    for (int k = 0; k < K; k++)
                        s += (double)w[k * C + c] * dy[((size_t)n * K + k) * pq + p];
                    edx[((size_t)n * C + c) * pq + p] = (float)s;
                }
            }
        for (int k = 0; k < K; k++) {
            double sb = 0.0;
            for (int c = 0; c < C; c++) {
                double s = 0.0;
                for (int n = 0; n < N; n++)
                    for (int p = 0; p < pq; p++)
                        s += (double)dy[((size_t)n * K + k) * pq + p] *
                             x[((size_t)n * C + c) * pq + p];
                edw[k * C + c] = (float)s;
            }
            for (int n = 0; n < N; n++)
                for (int p = 0; p < pq; p++) sb += dy[((size_t)n * K + k) * pq + p];
            edb[k] = (float)sb;
        }
        int bad = close_to("y", r.y, ey, (size_t)N * K * pq) +
                  close_to("dx", r.dx, edx, (size_t)N * C * pq) +
                  close_to("dw", r.dw, edw, (size_t)K * C) +
                  (cs[i].bias ? close_to("db", r.db, edb, (size_t)K) : 0);
        if (bad) fprintf(stderr, "  1x1 N%d C%d %dx%d K%d\n", N, C, d->H, d->W, K);
        free(x), free(w), free(bias), free(dy), free(e);
        drop(&r);
        ASSERT_EQ(bad, 0);
    }
    rt_backend_close(&b);
}

T_TEST(other_shapes_stay_on_im2col)
{
    rt_backend b;
    ASSERT_EQ(open_path(&b, "auto", 2), 0);
    rt_conv_desc k5 = desc(2, 16, 32, 32, 32, 2);
    k5.R = k5.S = 5, k5.P = 32, k5.Q = 32;
    rt_conv_desc k5s2 = desc2(2, 16, 32, 32, 32, 5, 2);
    rt_conv_desc one = desc(2, 16, 8, 8, 32, 0); /* 1x1 stride 1 */
    one.R = one.S = 1, one.P = one.Q = 8;
    rt_conv_desc one_pad = desc2(2, 16, 8, 8, 32, 1, 1); /* 1x1 stride 2, bordered */
    rt_conv_desc wide = desc(2, 256, 8, 8, 64, 1);
    rt_conv_desc wide2 = desc2(2, 64, 16, 16, 256, 3, 1);
    rt_conv_desc s3 = desc(2, 16, 32, 32, 32, 1);
    s3.stride = 3, s3.P = s3.Q = 11;
    const rt_conv_desc *ds[] = {&k5, &k5s2, &one, &one_pad, &wide, &wide2, &s3};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++)
        ASSERT_EQ(strcmp(path_of(&b, ds[i]), "im2col"), 0);
    rt_backend_close(&b);
}

T_TEST(bad_setting_is_an_error)
{
    rt_backend b;
    rt_error err = {0};
    setenv("KILN_CPU_CONV", "avx9000", 1);
    memset(&b, 0, sizeof b);
    int rc = rt_backend_open(&b, "cpu", 1, &err);
    unsetenv("KILN_CPU_CONV");
    ASSERT_EQ(rc, RT_EINVAL);
    ASSERT(strstr(err.msg, "KILN_CPU_CONV=avx9000") != NULL);
}

int main(void)
{
    T_RUN(direct_matches_im2col);
    T_RUN(direct_deterministic);
    T_RUN(depthwise_matches_grouped_im2col);
    T_RUN(batched_1x1_matches_loops);
    T_RUN(other_shapes_stay_on_im2col);
    T_RUN(bad_setting_is_an_error);
    return T_EXIT();
}
