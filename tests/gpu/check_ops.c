/* check_ops.c - every op of rt_backend_ops on the CPU and the CUDA backend, same inputs,
 * compared within stated tolerances.
 *
 * usage: check_ops [fp32|bf16|fp16]   (the CUDA backend's compute precision)
 * One generic driver: each case is a function run once per backend (side 0 = CPU,
 * side 1 = CUDA) through b->ops, on tensors that hold the same values on both sides;
 * the driver then compares each output with |gpu - cpu| <= atol + rtol*|cpu| and prints
 * the first mismatches. Shapes cover odd sizes, padding, stride > 1 and batch 1.
 * Tolerances (why):
 *   GEMM-like ops (conv, dense) fp32: 1e-4 + 1e-4|x| - both sides are true fp32 (cuDNN
 *     restricted to FMA math, cuBLAS default math excludes TF32); only the summation
 *     order differs (~sqrt(terms) ulps).
 *   bf16/fp16: each input is rounded to 8 (bf16) or 11 (fp16) significant bits, a
 *     relative error of at most 2^-9 / 2^-12 (std ~0.0011 / ~0.00014 per input), and
 *     the fp32 accumulation adds `terms` such errors: the error of an output grows as
 *     sqrt(terms) * rms(a) * rms(b), not with the output's own size (an output near 0
 *     can carry the full error). So atol = c * sqrt(terms) * rms(a) * rms(b) with
 *     c = 0.02 (bf16) / 0.004 (fp16): about 3x the largest error expected over 25k
 *     outputs (4.5 sigma), while a wrong result is off by ~1 * sqrt(terms) rms rms;
 *     plus 2^-8 |x| for the 16-bit rounding of cuDNN's output.
 *   Ops written as the same float expressions in the same order on both sides (relu,
 *     pooling, dropout, bias, optimisers): exact (atol 0, rtol 0); the dropout mask is
 *     the same Philox stream, bit for bit.
 *   batchnorm / softmax: statistics summed in another order (batch norm's in float with
 *     compensation, finished in double: a few float ulps): 1e-5 + 1e-5|x|. A channel of
 *     nearly equal values has a huge invstd, and then y = x * g + sh rounds differently
 *     for a 1-ulp change of g on both sides alike, so the shapes keep the variance O(1).
 *   The trainer's device-path ops (check_ops_train.c): bit for bit.
 * Without a device: prints "SKIP: no CUDA device (...)" and exits 77.
 */
#include "check_ops.h"

rt_backend ck_be[2];
size_t ck_failures;
static double g_c; /* 16-bit GEMM error per sqrt(term); 0 in fp32 */

/* Tolerance of a GEMM-like output summing `terms` products of values with RMS sa, sb. */
static double gemm_atol(double terms, double sa, double sb)
{
    return g_c == 0.0 ? 1e-4 : g_c * sqrt(terms) * sa * sb;
}
/* 16-bit: cuDNN also stores the conv result in 16 bits (widened after): 2^-8 of |x|. */
static double gemm_rtol(void) { return g_c == 0.0 ? 1e-4 : 1.0 / 256.0; }

int ck_both(const char *what, case_fn fn, void *ctx)
{
    for (int side = 0; side < 2; side++) {
        rt_error err = {0};
        if (fn(&ck_be[side], side, ctx, &err) != RT_OK) {
            fprintf(stderr, "  %s on %s failed: %s\n", what, ck_be[side].ops->name, err.msg);
            ck_failures++;
            return 0;
        }
    }
    return 1;
}

/* ---- conv2d ---- */

typedef struct conv_ctx {
    rt_conv_desc d;
    gpu_pair x, w, bias, dy, y, dx, dw, db;
    int with_bias;
} conv_ctx;

static rt_status conv_case(rt_backend *b, int side, void *vc, rt_error *err)
{
    conv_ctx *k = vc;
    RT_TRY(b->ops->reserve_workspace(b, b->ops->conv2d_workspace(b, &k->d), err));
    RT_TRY(rt_backend_conv2d_fwd(b, T(k->y), T(k->x), T(k->w), k->with_bias ? T(k->bias) : NULL,
                                 &k->d, err));
    RT_TRY(rt_backend_conv2d_bwd_data(b, T(k->dx), T(k->dy), T(k->w), &k->d, err));
    return rt_backend_conv2d_bwd_filter(b, T(k->dw), k->with_bias ? T(k->db) : NULL, T(k->dy),
                                        T(k->x), &k->d, err);
}

/* groups G: a grouped convolution (G = C = K: depthwise, the CPU's direct loop) */
static void check_conv_g(int N, int C, int H, int W, int K, int R, int stride, int pad,
                         int with_bias, int G)
{
    conv_ctx k = {.with_bias = with_bias};
    rt_conv_desc *d = &k.d;
    *d = (rt_conv_desc){N, C, H, W, K, R, R, stride, pad, 0, 0, G};
    d->P = (H + 2 * pad - R) / stride + 1;
    d->Q = (W + 2 * pad - R) / stride + 1;
    printf("conv2d N=%d C=%d H=%d W=%d K=%d R=S=%d stride=%d pad=%d bias=%d groups=%d\n", N, C, H,
           W, K, R, stride, pad, with_bias, G);
    const int Cg = C / G;
    size_t nx = (size_t)N * C * H * W, nw = (size_t)K * Cg * R * R,
           ny = (size_t)N * K * d->P * d->Q;
    float *vx = gpu_randn(nx, 1, 1.0f), *vw = gpu_randn(nw, 2, 1.0f / sqrtf((float)(Cg * R * R)));
    float *vb = gpu_randn((size_t)K, 3, 0.5f), *vdy = gpu_randn(ny, 4, 1.0f);
    MAKE(k.x, N, C, H, W, vx);
    MAKE(k.w, K, Cg, R, R, vw);
    MAKE(k.bias, K, 1, 1, 1, vb);
    MAKE(k.dy, N, K, d->P, d->Q, vdy);
    MAKE(k.y, N, K, d->P, d->Q, NULL);
    MAKE(k.dx, N, C, H, W, NULL);
    MAKE(k.dw, K, Cg, R, R, NULL);
    MAKE(k.db, K, 1, 1, 1, NULL);
    if (ck_both("conv2d", conv_case, &k)) {
        const double crs = (double)Cg * R * R, ws = 1.0 / sqrt(crs);
        CMP("conv2d_fwd out", k.y, gemm_atol(crs, 1.0, ws), gemm_rtol());
        CMP("conv2d_bwd_data din", k.dx, gemm_atol((double)K / G * R * R, 1.0, ws), gemm_rtol());
        CMP("conv2d_bwd_filter dw", k.dw, gemm_atol((double)N * d->P * d->Q, 1.0, 1.0),
            gemm_rtol());
        /* the bias gradient is a plain fp32 sum in every precision */
        if (with_bias) CMP("conv2d_bwd_filter dbias", k.db, 1e-4, 1e-5);
    }
    gpu_pair *all[] = {&k.x, &k.w, &k.bias, &k.dy, &k.y, &k.dx, &k.dw, &k.db};
    for (int i = 0; i < 8; i++) FREE(*all[i]);
    free(vx), free(vw), free(vb), free(vdy);
}

static void check_conv(int N, int C, int H, int W, int K, int R, int stride, int pad, int with_bias)
{
    check_conv_g(N, C, H, W, K, R, stride, pad, with_bias, 1);
}

/* ---- pooling ---- */

typedef struct pool_ctx {
    rt_pool_desc d;
    gpu_pair x, y, dy, dx, ya, dxa;
} pool_ctx;

static rt_status pool_case(rt_backend *b, int side, void *vc, rt_error *err)
{
    pool_ctx *k = vc;
    RT_TRY(rt_backend_maxpool_fwd(b, T(k->y), T(k->x), &k->d, err));
    RT_TRY(rt_backend_maxpool_bwd(b, T(k->dx), T(k->dy), T(k->x), T(k->y), &k->d, err));
    RT_TRY(rt_backend_avgpool_fwd(b, T(k->ya), T(k->x), &k->d, err));
    return rt_backend_avgpool_bwd(b, T(k->dxa), T(k->dy), &k->d, err);
}

/* pad: zero padding; ap > 0: adaptive pooling to ap x (ap + 1) instead */
static void check_pool(int N, int C, int H, int W, int R, int stride, int ties, int pad, int ap)
{
    pool_ctx k;
    rt_pool_desc *d = &k.d;
    if (ap) *d = (rt_pool_desc){N, C, H, W, 0, 0, 0, ap, ap + 1, 0, 1};
    else
        *d = (rt_pool_desc){N,
                            C,
                            H,
                            W,
                            R,
                            R,
                            stride,
                            (H + 2 * pad - R) / stride + 1,
                            (W + 2 * pad - R) / stride + 1,
                            pad,
                            0};
    printf("pool N=%d C=%d H=%d W=%d R=S=%d stride=%d ties=%d pad=%d adaptive=%d\n", N, C, H, W, R,
           stride, ties, pad, ap);
    size_t nx = (size_t)N * C * H * W, ny = (size_t)N * C * d->P * d->Q;
    float *vx = gpu_randn(nx, 5, 1.0f), *vdy = gpu_randn(ny, 6, 1.0f);
    if (ties) /* relu'd input: all-zero windows, where the first maximum must win */
        for (size_t i = 0; i < nx; i++) vx[i] = vx[i] > 0.5f ? vx[i] : 0.0f;
    MAKE(k.x, N, C, H, W, vx);
    MAKE(k.dy, N, C, d->P, d->Q, vdy);
    MAKE(k.y, N, C, d->P, d->Q, NULL);
    MAKE(k.ya, N, C, d->P, d->Q, NULL);
    MAKE(k.dx, N, C, H, W, NULL);
    MAKE(k.dxa, N, C, H, W, NULL);
    if (ck_both("pool", pool_case, &k)) {
        CMP("maxpool_fwd out", k.y, 0, 0);
        CMP("maxpool_bwd din", k.dx, 0, 0);
        CMP("avgpool_fwd out", k.ya, 0, 0);
        CMP("avgpool_bwd din", k.dxa, 0, 0);
    }
    gpu_pair *all[] = {&k.x, &k.dy, &k.y, &k.ya, &k.dx, &k.dxa};
    for (int i = 0; i < 6; i++) FREE(*all[i]);
    free(vx), free(vdy);
}

/* ---- relu, dropout, fill, copy (elementwise) ---- */

typedef struct elem_ctx {
    rt_dropout_desc dd;
    float slope;
    gpu_pair x, y, dy, dx, yi, mask, yd, dxd, f, cp, sum, sumi, sr, sri;
} elem_ctx;

static rt_status elem_case(rt_backend *b, int side, void *vc, rt_error *err)
{
    elem_ctx *k = vc;
    RT_TRY(rt_backend_relu_fwd(b, T(k->y), T(k->x), k->slope, err));
    RT_TRY(rt_backend_relu_bwd(b, T(k->dx), T(k->dy), T(k->y), k->slope, err));
    RT_TRY(rt_backend_copy(b, T(k->yi), T(k->x), err));
    RT_TRY(rt_backend_relu_fwd(b, T(k->yi), T(k->yi), k->slope, err)); /* in place */
    RT_TRY(rt_backend_dropout_fwd(b, T(k->yd), T(k->mask), T(k->x), &k->dd, err));
    RT_TRY(rt_backend_dropout_bwd(b, T(k->dxd), T(k->dy), T(k->mask), err));
    RT_TRY(rt_backend_fill(b, T(k->f), 0.375f, err));
    RT_TRY(rt_backend_add(b, T(k->sum), T(k->x), T(k->dy), err)); /* residual blocks */
    RT_TRY(rt_backend_copy(b, T(k->sumi), T(k->x), err));
    RT_TRY(rt_backend_add(b, T(k->sumi), T(k->sumi), T(k->dy), err)); /* in place */
    RT_TRY(rt_backend_add_relu(b, T(k->sr), T(k->x), T(k->dy), err)); /* ... then a relu */
    RT_TRY(rt_backend_add(b, T(k->sri), T(k->x), T(k->dy), err));
    RT_TRY(rt_backend_relu_fwd(b, T(k->sri), T(k->sri), 0.0f, err)); /* ... the two apart */
    return rt_backend_copy(b, T(k->cp), T(k->dy), err);
}

static void check_elem(int n, float slope, float p, uint32_t step)
{
    elem_ctx k = {.slope = slope};
    k.dd = (rt_dropout_desc){
        .N = 1, .C = n, .H = 1, .W = 1, .p = p, .seed = 42, .step = step, .layer = 3};
    printf("elementwise n=%d slope=%g dropout p=%g step=%u\n", n, (double)slope, (double)p, step);
    float *vx = gpu_randn((size_t)n, 7, 1.0f), *vdy = gpu_randn((size_t)n, 8, 1.0f);
    MAKE(k.x, 1, n, 1, 1, vx);
    MAKE(k.dy, 1, n, 1, 1, vdy);
    gpu_pair *outs[] = {&k.y, &k.dx, &k.yi,  &k.mask, &k.yd, &k.dxd,
                        &k.f, &k.cp, &k.sum, &k.sumi, &k.sr, &k.sri};
    for (int i = 0; i < 12; i++) MAKE(*outs[i], 1, n, 1, 1, NULL);
    if (ck_both("elementwise", elem_case, &k)) {
        CMP("relu_fwd out", k.y, 0, 0);
        CMP("relu_bwd din", k.dx, 0, 0);
        CMP("relu_fwd in place", k.yi, 0, 0);
        CMP("dropout_fwd mask (bitwise)", k.mask, 0, 0);
        CMP("dropout_fwd out", k.yd, 0, 0);
        CMP("dropout_bwd din", k.dxd, 0, 0);
        CMP("fill", k.f, 0, 0);
        CMP("copy", k.cp, 0, 0);
        CMP("add", k.sum, 0, 0);
        CMP("add in place", k.sumi, 0, 0);
        CMP("add_relu", k.sr, 0, 0);
        CMP("add, relu apart", k.sri, 0, 0);
    }
    FREE(k.x), FREE(k.dy);
    for (int i = 0; i < 12; i++) FREE(*outs[i]);
    free(vx), free(vdy);
}

/* ---- activations (rt_act_kind): relu6, sigmoid, tanh, gelu, silu ---- */

typedef struct act_ctx {
    rt_act_kind kind;
    gpu_pair x, dy, y, dx, yi, dxi;
} act_ctx;

static rt_status act_case(rt_backend *b, int side, void *vc, rt_error *err)
{
    act_ctx *k = vc;
    RT_TRY(rt_backend_act_fwd(b, T(k->y), T(k->x), k->kind, err));
    RT_TRY(rt_backend_act_bwd(b, T(k->dx), T(k->dy), T(k->x), T(k->y), k->kind, err));
    RT_TRY(rt_backend_copy(b, T(k->yi), T(k->x), err));
    RT_TRY(rt_backend_act_fwd(b, T(k->yi), T(k->yi), k->kind, err)); /* in place */
    RT_TRY(rt_backend_copy(b, T(k->dxi), T(k->dy), err));
    return rt_backend_act_bwd(b, T(k->dxi), T(k->dxi), T(k->x), T(k->y), k->kind, err);
}

/* Inputs of spread 4, so relu6 clips at both ends. The CPU and the mock device compute
 * the same float expressions (rt_act_math.h): equal; a GPU's expf, erff and tanhf may
 * differ by an ulp or two, hence 1e-6 + 1e-5|x| for the smooth ones. */
static void check_act(int n)
{
    static const char *const names[RT_ACT_COUNT] = {"relu6", "sigmoid", "tanh", "gelu", "silu"};
    float *vx = gpu_randn((size_t)n, 11, 4.0f), *vdy = gpu_randn((size_t)n, 12, 1.0f);
    for (int kind = 0; kind < RT_ACT_COUNT; kind++) {
        act_ctx k = {.kind = (rt_act_kind)kind};
        printf("activation %s n=%d\n", names[kind], n);
        MAKE(k.x, 1, n, 1, 1, vx);
        MAKE(k.dy, 1, n, 1, 1, vdy);
        gpu_pair *outs[] = {&k.y, &k.dx, &k.yi, &k.dxi};
        for (int i = 0; i < 4; i++) MAKE(*outs[i], 1, n, 1, 1, NULL);
        double tol = kind == RT_ACT_RELU6 ? 0.0 : 1e-6, rtol = kind == RT_ACT_RELU6 ? 0.0 : 1e-5;
        if (ck_both(names[kind], act_case, &k)) {
            CMP("act_fwd out", k.y, tol, rtol);
            CMP("act_bwd din", k.dx, tol, rtol);
            CMP("act_fwd in place", k.yi, tol, rtol);
            CMP("act_bwd in place", k.dxi, tol, rtol);
        }
        FREE(k.x), FREE(k.dy);
        for (int i = 0; i < 4; i++) FREE(*outs[i]);
    }
    free(vx), free(vdy);
}

/* ---- batchnorm ---- */

/* relu: a relu after the norm; fused_side: the side that runs it fused (bn_fwd_* with
 * rt_bn_desc.relu, bn_relu_bwd), the other runs relu_fwd / relu_bwd apart, so each
 * backend's fused ops are checked against the other's composition. */
/* add: batch norm + residual add (+ relu) instead (bn_add_fwd_train, bn_add_bwd with or
 * without a second output gradient), the same ops on both sides: the CPU fuses them into
 * its passes, CUDA composes its kernels. */
typedef struct bn_ctx {
    rt_bn_desc d;
    int relu, fused_side, add, second; /* second: bn_add_bwd gets dout2 */
    gpu_pair x, g, be, rm, rv, y, sm, si, dy, dx, dg, db, ye, dr, s, dy2, keep;
} bn_ctx;

static rt_status bn_add_case(bn_ctx *k, rt_backend *b, int side, rt_error *err)
{
    RT_TRY(rt_backend_bn_add_fwd_train(b, T(k->y), T(k->sm), T(k->si), T(k->rm), T(k->rv), T(k->x),
                                       T(k->s), T(k->g), T(k->be), &k->d, err));
    return rt_backend_bn_add_bwd(b, T(k->dx), T(k->dg), T(k->db), T(k->keep), T(k->dy),
                                 k->second ? T(k->dy2) : NULL, T(k->y), T(k->x), T(k->g), T(k->sm),
                                 T(k->si), &k->d, err);
}

static rt_status bn_case(rt_backend *b, int side, void *vc, rt_error *err)
{
    bn_ctx *k = vc;
    if (k->add) return bn_add_case(k, b, side, err);
    rt_bn_desc d = k->d;
    const int fused = k->relu && side == k->fused_side, apart = k->relu && !fused;
    d.relu = fused;
    RT_TRY(rt_backend_bn_fwd_train(b, T(k->y), T(k->sm), T(k->si), T(k->rm), T(k->rv), T(k->x),
                                   T(k->g), T(k->be), &d, err));
    if (apart) {
        RT_TRY(rt_backend_relu_fwd(b, T(k->y), T(k->y), 0.0f, err));
        RT_TRY(rt_backend_relu_bwd(b, T(k->dr), T(k->dy), T(k->y), 0.0f, err));
    }
    if (fused)
        RT_TRY(rt_backend_bn_relu_bwd(b, T(k->dx), T(k->dg), T(k->db), T(k->dy), T(k->x), T(k->g),
                                      T(k->be), T(k->sm), T(k->si), &d, err));
    else
        RT_TRY(rt_backend_bn_bwd(b, T(k->dx), T(k->dg), T(k->db), apart ? T(k->dr) : T(k->dy),
                                 T(k->x), T(k->g), T(k->sm), T(k->si), &d, err));
    RT_TRY(rt_backend_bn_fwd_eval(b, T(k->ye), T(k->x), T(k->g), T(k->be), T(k->rm), T(k->rv), &d,
                                  err));
    return apart ? rt_backend_relu_fwd(b, T(k->ye), T(k->ye), 0.0f, err) : RT_OK;
}

static void check_bn_with(int N, int C, int H, int W, int relu, int fused_side, int add, int second)
{
    bn_ctx k;
    k.d = (rt_bn_desc){N, C, H, W, 1e-5f, 0.1f, add && relu};
    k.relu = relu, k.fused_side = fused_side, k.add = add, k.second = second;
    printf("batchnorm%s%s N=%d C=%d H=%d W=%d\n",
           add    ? (relu ? " + add + relu" : " + add")
           : relu ? (fused_side ? " + relu fused on cuda" : " + relu fused on cpu")
                  : "",
           add && second ? ", second gradient" : "", N, C, H, W);
    size_t n = (size_t)N * C * H * W;
    float *vx = gpu_randn(n, 9, 2.0f), *vdy = gpu_randn(n, 10, 1.0f);
    float *vg = gpu_randn((size_t)C, 11, 1.0f), *vb = gpu_randn((size_t)C, 12, 1.0f);
    float *vrv = malloc((size_t)C * 4);
    for (int c = 0; c < C; c++) vrv[c] = 1.0f + 0.1f * (float)c;
    for (size_t i = 0; i < n; i++) vx[i] += 3.0f; /* a mean to remove */
    MAKE(k.x, N, C, H, W, vx);
    MAKE(k.dy, N, C, H, W, vdy);
    MAKE(k.g, C, 1, 1, 1, vg);
    MAKE(k.be, C, 1, 1, 1, vb);
    MAKE(k.rm, C, 1, 1, 1, vb);
    MAKE(k.rv, C, 1, 1, 1, vrv);
    gpu_pair *o[] = {&k.sm, &k.si, &k.dg, &k.db};
    for (int i = 0; i < 4; i++) MAKE(*o[i], C, 1, 1, 1, NULL);
    MAKE(k.y, N, C, H, W, NULL);
    MAKE(k.dx, N, C, H, W, NULL);
    MAKE(k.ye, N, C, H, W, NULL);
    MAKE(k.dr, N, C, H, W, NULL);
    float *vs = gpu_randn(n, 13, 1.0f), *vdy2 = gpu_randn(n, 14, 1.0f);
    MAKE(k.s, N, C, H, W, vs);
    MAKE(k.dy2, N, C, H, W, vdy2);
    MAKE(k.keep, N, C, H, W, NULL);
    if (ck_both("batchnorm", bn_case, &k)) {
        CMP("bn_fwd_train out", k.y, 1e-5, 1e-5);
        CMP("bn_fwd_train mean", k.sm, 1e-5, 1e-5);
        CMP("bn_fwd_train invstd", k.si, 1e-5, 1e-5);
        CMP("bn_fwd_train running_mean", k.rm, 1e-5, 1e-5);
        CMP("bn_fwd_train running_var", k.rv, 1e-5, 1e-5);
        CMP("bn_bwd din", k.dx, 1e-5, 1e-4);
        CMP("bn_bwd dgamma", k.dg, 1e-4, 1e-5);
        CMP("bn_bwd dbeta", k.db, 1e-4, 1e-5);
        if (add) CMP("bn_add_bwd keep", k.keep, 0, 0); /* (dy [+ dy2]) [where out > 0]: exact */
        else CMP("bn_fwd_eval out", k.ye, 1e-5, 1e-5);
    }
    gpu_pair *all[] = {&k.x,  &k.dy, &k.g,  &k.be, &k.rm, &k.rv, &k.sm,  &k.si,  &k.dg,
                       &k.db, &k.y,  &k.dx, &k.ye, &k.dr, &k.s,  &k.dy2, &k.keep};
    for (int i = 0; i < 17; i++) FREE(*all[i]);
    free(vx), free(vdy), free(vg), free(vb), free(vrv), free(vs), free(vdy2);
}

static void check_bn(int N, int C, int H, int W, int relu, int fused_side)
{
    check_bn_with(N, C, H, W, relu, fused_side, 0, 0);
}

static void check_bn_add(int N, int C, int H, int W, int relu, int second)
{
    check_bn_with(N, C, H, W, relu, 0, 1, second);
}

/* ---- dense ---- */

typedef struct dense_ctx {
    rt_dense_desc d;
    gpu_pair x, w, bias, dy, y, dx, dw, db;
    int with_bias; /* 0: the ops get a NULL bias (a `dense O bias=false` layer) */
} dense_ctx;

static rt_status dense_case(rt_backend *b, int side, void *vc, rt_error *err)
{
    dense_ctx *k = vc;
    if (b->ops->dense_workspace) /* the 16-bit copies, as a model's attach reserves them */
        RT_TRY(b->ops->reserve_workspace(b, b->ops->dense_workspace(b, &k->d), err));
    RT_TRY(rt_backend_dense_fwd(b, T(k->y), T(k->x), T(k->w), k->with_bias ? T(k->bias) : NULL,
                                &k->d, err));
    RT_TRY(rt_backend_dense_bwd_data(b, T(k->dx), T(k->dy), T(k->w), &k->d, err));
    return rt_backend_dense_bwd_filter(b, T(k->dw), k->with_bias ? T(k->db) : NULL, T(k->dy),
                                       T(k->x), &k->d, err);
}

static void check_dense(int N, int F, int O, int with_bias)
{
    dense_ctx k = {.with_bias = with_bias};
    k.d = (rt_dense_desc){N, F, O};
    printf("dense N=%d F=%d O=%d bias=%d\n", N, F, O, with_bias);
    float *vx = gpu_randn((size_t)N * F, 13, 1.0f);
    float *vw = gpu_randn((size_t)O * F, 14, 1.0f / sqrtf((float)F));
    float *vb = gpu_randn((size_t)O, 15, 0.5f), *vdy = gpu_randn((size_t)N * O, 16, 1.0f);
    MAKE(k.x, N, F, 1, 1, vx);
    MAKE(k.w, O, F, 1, 1, vw);
    MAKE(k.bias, O, 1, 1, 1, vb);
    MAKE(k.dy, N, O, 1, 1, vdy);
    MAKE(k.y, N, O, 1, 1, NULL);
    MAKE(k.dx, N, F, 1, 1, NULL);
    MAKE(k.dw, O, F, 1, 1, NULL);
    MAKE(k.db, O, 1, 1, 1, NULL);
    if (ck_both("dense", dense_case, &k)) {
        const double ws = 1.0 / sqrt((double)F);
        CMP("dense_fwd out", k.y, gemm_atol(F, 1.0, ws), gemm_rtol());
        CMP("dense_bwd_data din", k.dx, gemm_atol(O, 1.0, ws), gemm_rtol());
        CMP("dense_bwd_filter dw", k.dw, gemm_atol(N, 1.0, 1.0), gemm_rtol());
        if (with_bias) CMP("dense_bwd_filter dbias", k.db, 0, 0); /* same sums, same order */
    }
    gpu_pair *all[] = {&k.x, &k.w, &k.bias, &k.dy, &k.y, &k.dx, &k.dw, &k.db};
    for (int i = 0; i < 8; i++) FREE(*all[i]);
    free(vx), free(vw), free(vb), free(vdy);
}

/* ---- softmax cross-entropy ---- */

typedef struct xent_ctx {
    rt_xent_desc d;
    gpu_pair z, loss, probs, dz, labels;
} xent_ctx;

static rt_status xent_case(rt_backend *b, int side, void *vc, rt_error *err)
{
    xent_ctx *k = vc;
    rt_tensor *lab = T(k->labels);
    lab->dtype = RT_I32;
    RT_TRY(rt_backend_xent_fwd(b, T(k->loss), T(k->probs), T(k->z), lab, &k->d, err));
    return rt_backend_xent_bwd(b, T(k->dz), T(k->probs), lab, 1.0f / (float)k->d.N, &k->d, err);
}

static void check_xent(int N, int L, float smoothing)
{
    xent_ctx k;
    k.d = (rt_xent_desc){N, L, smoothing};
    printf("xent N=%d L=%d smoothing %g\n", N, L, (double)smoothing);
    float *vz = gpu_randn((size_t)N * L, 17, 3.0f);
    int32_t *lab = malloc((size_t)N * 4);
    for (int n = 0; n < N; n++) lab[n] = (n * 7 + 3) % L;
    MAKE(k.z, N, L, 1, 1, vz);
    MAKE(k.labels, N, 1, 1, 1, (const float *)lab); /* 4-byte labels, copied as bytes */
    MAKE(k.loss, N, 1, 1, 1, NULL);
    MAKE(k.probs, N, L, 1, 1, NULL);
    MAKE(k.dz, N, L, 1, 1, NULL);
    if (ck_both("xent", xent_case, &k)) {
        CMP("xent_fwd loss", k.loss, 1e-5, 1e-5);
        CMP("xent_fwd probs", k.probs, 1e-6, 1e-5);
        CMP("xent_bwd dlogits", k.dz, 1e-6, 1e-5);
    }
    gpu_pair *all[] = {&k.z, &k.labels, &k.loss, &k.probs, &k.dz};
    for (int i = 0; i < 5; i++) FREE(*all[i]);
    free(vz), free(lab);
}

/* ---- optimisers (three steps each, so state carries over) ---- */

typedef struct optim_ctx {
    rt_adam_desc ad;
    rt_sgd_desc sd;
    gpu_pair p, m, v, g, ps, buf;
} optim_ctx;

static rt_status optim_case(rt_backend *b, int side, void *vc, rt_error *err)
{
    optim_ctx *k = vc;
    for (int t = 1; t <= 3; t++) {
        rt_adam_desc ad = k->ad;
        rt_sgd_desc sd = k->sd;
        ad.step = sd.step = t;
        RT_TRY(rt_backend_adam_update(b, T(k->p), T(k->m), T(k->v), T(k->g), &ad, err));
        RT_TRY(rt_backend_sgd_update(b, T(k->ps), T(k->buf), T(k->g), &sd, err));
    }
    return RT_OK;
}

static void check_optim(int n, int decoupled, float wd, float momentum, int nesterov)
{
    optim_ctx k;
    k.ad = (rt_adam_desc){1e-3f, 0.9f, 0.999f, 1e-8f, wd, decoupled, 1};
    k.sd = (rt_sgd_desc){0.01f, momentum, 0.0f, wd, nesterov, 1};
    printf("optim n=%d adam%s wd=%g sgd momentum=%g nesterov=%d\n", n, decoupled ? "w" : "",
           (double)wd, (double)momentum, nesterov);
    float *vp = gpu_randn((size_t)n, 18, 1.0f), *vg = gpu_randn((size_t)n, 19, 0.1f);
    MAKE(k.p, n, 1, 1, 1, vp);
    MAKE(k.ps, n, 1, 1, 1, vp);
    MAKE(k.g, n, 1, 1, 1, vg);
    MAKE(k.m, n, 1, 1, 1, NULL);
    MAKE(k.v, n, 1, 1, 1, NULL);
    MAKE(k.buf, n, 1, 1, 1, NULL);
    if (ck_both("optim", optim_case, &k)) {
        CMP("adam_update param", k.p, 0, 0);
        CMP("adam_update m", k.m, 0, 0);
        CMP("adam_update v", k.v, 0, 0);
        CMP("sgd_update param", k.ps, 0, 0);
        CMP("sgd_update momentum_buf", k.buf, 0, 0);
    }
    gpu_pair *all[] = {&k.p, &k.ps, &k.g, &k.m, &k.v, &k.buf};
    for (int i = 0; i < 6; i++) FREE(*all[i]);
    free(vp), free(vg);
}

int main(int argc, char **argv)
{
    const char *prec_name = argc > 1 ? argv[1] : "fp32";
    rt_precision prec;
    rt_error err = {0};
    if (rt_precision_parse(prec_name, &prec, &err) != RT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 99;
    }
    gpu_open_or_skip(&ck_be[1]);
    if (rt_backend_open(&ck_be[0], "cpu", 2, &err) != RT_OK) {
        fprintf(stderr, "cannot open the CPU backend: %s\n", err.msg);
        return 99;
    }
    if (rt_cuda_set_precision(&ck_be[1], prec, &err) != RT_OK) {
        if (prec == RT_PREC_BF16 && err.code == RT_EINVAL) { /* device below cc 8.0 */
            printf("SKIP: %s\n", err.msg);
            return 77;
        }
        fprintf(stderr, "%s\n", err.msg);
        return 99;
    }
    g_c = prec == RT_PREC_FP32 ? 0.0 : prec == RT_PREC_BF16 ? 0.02 : 0.004;
    if (g_c == 0.0) printf("precision fp32: GEMM-like tolerance 1e-4 + 1e-4|cpu|\n");
    else printf("precision %s: GEMM-like tolerance %g sqrt(terms) rms(a) rms(b)\n", prec_name, g_c);

    /* conv: batch 1, odd sizes with padding, stride 2, 1x1 direct, 5x5, a tensor-core
     * sized layer, a window larger than the stride */
    check_conv(1, 1, 5, 5, 1, 3, 1, 0, 1);
    check_conv(2, 3, 7, 9, 4, 3, 1, 1, 1);
    check_conv(3, 5, 11, 8, 6, 3, 2, 1, 1);
    check_conv(2, 4, 6, 6, 8, 1, 1, 0, 0);
    check_conv(2, 3, 9, 9, 5, 5, 2, 2, 1);
    check_conv(4, 16, 14, 14, 32, 3, 1, 1, 1);
    check_conv(2, 16, 16, 16, 32, 3, 2, 1, 0); /* ResNet-20's bias-free stride-2 conv */
    check_conv(2, 16, 16, 16, 32, 1, 2, 0, 0); /* and its projection */
    check_conv(1, 2, 4, 4, 3, 4, 3, 0, 0);
    check_conv(5, 2, 30, 30, 3, 3, 1, 1, 1); /* the bias gradient in 2 blocks per channel */
    /* grouped: 2 groups, 1x1 in groups (MobileNet-style shapes); depthwise at stride 1
     * and 2, with and without a bias, 5x5 */
    check_conv_g(2, 4, 7, 6, 6, 3, 1, 1, 1, 2);
    check_conv_g(3, 6, 5, 5, 9, 1, 1, 0, 0, 3);
    check_conv_g(2, 8, 9, 9, 8, 3, 1, 1, 0, 8);
    check_conv_g(3, 5, 11, 8, 5, 3, 2, 1, 1, 5);
    check_conv_g(2, 4, 8, 8, 4, 3, 2, 1, 0, 4);
    check_conv_g(1, 3, 9, 7, 3, 5, 1, 2, 1, 3);
    if (prec == RT_PREC_BF16) /* im2col: over 64 MiB of columns, 2 chunks, 16-bit copies */
        check_conv(27, 5, 128, 128, 1, 3, 1, 1, 0);
    /* pooling: even, odd (floor mode), overlapping windows, ties after relu; padded
     * (ResNet's stem: 3x3 stride 2 pad 1); adaptive (overlapping, 1x1 -> 7x8) */
    check_pool(1, 1, 4, 4, 2, 2, 0, 0, 0);
    check_pool(2, 3, 7, 9, 2, 2, 0, 0, 0);
    check_pool(2, 2, 9, 8, 3, 2, 0, 0, 0);
    check_pool(2, 3, 5, 5, 3, 1, 1, 0, 0);
    check_pool(3, 4, 8, 8, 2, 2, 1, 0, 0);
    check_pool(2, 3, 9, 8, 3, 2, 1, 1, 0);
    check_pool(1, 3, 6, 5, 4, 1, 1, 2, 0);
    check_pool(2, 3, 7, 9, 0, 0, 0, 0, 3);
    check_pool(2, 2, 1, 1, 0, 0, 0, 0, 7);
    /* elementwise: tiny, odd, not a multiple of 4 (the last Philox block) */
    check_elem(1, 0.0f, 0.5f, 0);
    check_elem(7, 0.01f, 0.25f, 1);
    check_elem(1001, 0.0f, 0.5f, 17);
    check_elem(4099, 0.2f, 0.0f, 123456);
    check_act(1);
    check_act(1001);
    check_bn(1, 3, 1, 2, 0, 0);
    check_bn(2, 4, 5, 7, 0, 0);
    check_bn(8, 16, 3, 3, 0, 0);
    check_bn(5, 2, 33, 31, 0, 0);   /* 2 blocks per channel in the two-level statistics */
    check_bn(8, 20000, 1, 1, 0, 0); /* more channels than one wave of the reduction buffer */
    check_bn(2, 4, 5, 7, 1, 1);     /* a relu fused after the norm, on either side */
    check_bn(2, 4, 5, 7, 1, 0);
    check_bn(5, 2, 33, 31, 1, 1);
    for (int relu = 0; relu < 2; relu++)
        for (int second = 0; second < 2; second++) check_bn_add(2, 4, 5, 7, relu, second);
    check_bn_add(5, 2, 33, 31, 1, 1);
    check_dense(1, 1, 1, 1);
    check_dense(3, 7, 5, 1);
    check_dense(3, 7, 5, 0);
    check_dense(17, 33, 10, 1);
    check_dense(128, 300, 128, 1);
    check_dense(16, 64, 10, 0);
    check_dense(130, 20, 40, 1); /* 3 row tiles, 2 column blocks of the staged bias sum */
    check_xent(1, 2, 0.0f);
    check_xent(5, 10, 0.0f);
    check_xent(33, 7, 0.0f);
    check_xent(5, 10, 0.1f); /* label smoothing */
    check_xent(33, 7, 0.5f);
    check_optim(1, 0, 0.0f, 0.0f, 0);
    check_optim(1000, 1, 0.01f, 0.9f, 0);
    check_optim(100003, 0, 1e-4f, 0.9f, 1);
    check_train_ops();

    rt_backend_close(&ck_be[1]);
    rt_backend_close(&ck_be[0]);
    printf("%zu mismatching tensors\n", ck_failures);
    return ck_failures ? 1 : 0;
}
