/* mock_cudnn.c - a stand-in for the legacy cuDNN convolution API, so cudnn_conv.c (the
 * backend's main convolution path) runs on a machine without a GPU.
 *
 * Descriptors record what they are set to; convolutions are a naive direct loop in
 * double that reads and writes fp32, bf16 or fp16 buffers as their descriptors say, so
 * the 16-bit staging of cudnn_conv.c is exercised. The _v7 heuristics return four
 * candidates per pass, in this order, so that exactly one is right for each case:
 *   0: needs 1 TiB of workspace (over any limit: never right),
 *   1: NON_DETERMINISTIC, no workspace, the mode's math (FMA in fp32, TENSOR_OP in
 *      16-bit): never right, the forward pass included (bitwise resume),
 *   2: deterministic, 4096 bytes of workspace, TENSOR_OP math: right in 16-bit, wrong
 *      in fp32 (TF32),
 *   3: deterministic, 4096 bytes of workspace, FMA math: right in fp32; its number is
 *      4 (FP32_ALGO: cuDNN's Winograd in all three passes), as 3 is an FFT algorithm of
 *      the backward-data pass, which fp32 passes over (2 is one too, harmless: it is
 *      wrong in fp32 anyway).
 * KILN_MOCK_CUDNN (read at every call, a comma-separated list) models what only a real
 * cuDNN does: "fail-first" puts a candidate 9 in front that passes every filter (the
 * mode's math, deterministic, no workspace) but answers NOT_SUPPORTED when run, as real
 * heuristics may ("fail-first=S": status S instead, e.g. cuDNN 9's finer 3002
 * NOT_SUPPORTED_SHAPE or 5003 EXECUTION_FAILED_CUDART); "no-fma" drops candidate 3 (fp32
 * then has only TF32); "inexact-first" puts Winograd-nonfused (algorithm 5 of both
 * backward passes: deterministic, the mode's math, no workspace) in front of the
 * backward passes, which fp32 must pass over (run in fp32 it is BAD_PARAM; in 16-bit it
 * runs, counted); "over-cap" makes candidate 0 need 384 MiB instead of 1 TiB, over the
 * backend's fixed 256 MiB cap but inside the mock device's memory, so only a choice
 * keyed on the workspace at hand takes it; "create-fails" makes cudnnCreate fail;
 * "version=V" and "cudart=V" set what cudnnGetVersion and cudnnGetCudartVersion answer
 * (mock_cudnn.h counts the runs).
 * Running checks: the algorithm is the right one; the workspace is device memory of at
 * least what the algorithm needs and overlaps no tensor; the math type set on the
 * descriptor is the algorithm's; every buffer lies inside one mock allocation and the
 * output overlaps no input (a race on a GPU); dims agree. Any violation is CUDNN_STATUS_BAD_PARAM, which
 * the backend reports as an error.
 */
#include <cudnn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_cudnn.h"
#include "mock_graph.h"
#include "mock_knob.h"

int mock_in_device(const void *p, size_t n);

struct cudnnContext {
    cudaStream_t stream;
};
struct cudnnTensorStruct {
    cudnnDataType_t dt;
    int n, c, h, w;
};
struct cudnnFilterStruct {
    cudnnDataType_t dt;
    int k, c, r, s;
};
struct cudnnConvolutionStruct {
    int pad_h, pad_w, u, v, dh, dw;
    cudnnConvolutionMode_t mode;
    cudnnDataType_t compute;
    cudnnMathType_t math;
    int groups; /* cudnnSetConvolutionGroupCount (0: never set, 1) */
};

#define NEED_WS 4096
#define FAILING 9   /* the "fail-first" candidate (no cuDNN algorithm has this number) */
#define INEXACT 5   /* CUDNN_CONVOLUTION_BWD_{DATA,FILTER}_ALGO_WINOGRAD_NONFUSED */
#define FP32_ALGO 4 /* candidate 3's number */

static long runs, rejected, inexact_runs;
long mock_cudnn_stat_runs(void) { return runs; }
long mock_cudnn_stat_rejected(void) { return rejected; }
long mock_cudnn_stat_inexact(void) { return inexact_runs; }
void mock_cudnn_stat_reset(void) { runs = rejected = inexact_runs = 0; }

/* KILN_MOCK_CUDNN has `knob` (1), or "knob=V" (V) */
static long knob(const char *name, long dflt) { return mock_knob("KILN_MOCK_CUDNN", name, dflt); }

size_t cudnnGetVersion(void) { return (size_t)knob("version", 91900); }
size_t cudnnGetCudartVersion(void) { return (size_t)knob("cudart", CUDART_VERSION); }
const char *cudnnGetErrorString(cudnnStatus_t s)
{
    return s == CUDNN_STATUS_NOT_SUPPORTED ? "CUDNN_STATUS_NOT_SUPPORTED (mock)"
           : s / 1000 == 3                 ? "CUDNN_STATUS_NOT_SUPPORTED_* (mock)"
           : s / 1000 == 5                 ? "CUDNN_STATUS_EXECUTION_FAILED_* (mock)"
           : s                             ? "mock cuDNN error"
                                           : "success";
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *h)
{
    if (knob("create-fails", 0)) return CUDNN_STATUS_NOT_INITIALIZED;
    *h = calloc(1, sizeof **h);
    return *h ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t h)
{
    free(h);
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s)
{
    h->stream = s;
    return CUDNN_STATUS_SUCCESS;
}

#define CREATE_DESTROY(type, cr, de)                                  \
    cudnnStatus_t cr(type *d)                                         \
    {                                                                 \
        *d = calloc(1, sizeof **d);                                   \
        return *d ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED; \
    }                                                                 \
    cudnnStatus_t de(type d)                                          \
    {                                                                 \
        free(d);                                                      \
        return CUDNN_STATUS_SUCCESS;                                  \
    }
CREATE_DESTROY(cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor)
CREATE_DESTROY(cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor)
CREATE_DESTROY(cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
               cudnnDestroyConvolutionDescriptor)

static int dt_ok(cudnnDataType_t dt)
{
    return dt == CUDNN_DATA_FLOAT || dt == CUDNN_DATA_HALF || dt == CUDNN_DATA_BFLOAT16;
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t f,
                                         cudnnDataType_t dt, int n, int c, int h, int w)
{
    if (f != CUDNN_TENSOR_NCHW || !dt_ok(dt) || n < 1 || c < 1 || h < 1 || w < 1)
        return CUDNN_STATUS_BAD_PARAM;
    *d = (struct cudnnTensorStruct){dt, n, c, h, w};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t dt,
                                         cudnnTensorFormat_t f, int k, int c, int r, int s)
{
    if (f != CUDNN_TENSOR_NCHW || !dt_ok(dt) || k < 1 || c < 1 || r < 1 || s < 1)
        return CUDNN_STATUS_BAD_PARAM;
    *d = (struct cudnnFilterStruct){dt, k, c, r, s};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h, int pad_w,
                                              int u, int v, int dh, int dw,
                                              cudnnConvolutionMode_t mode, cudnnDataType_t compute)
{
    if (pad_h < 0 || pad_w < 0 || u < 1 || v < 1 || dh != 1 || dw != 1 ||
        compute != CUDNN_DATA_FLOAT)
        return CUDNN_STATUS_BAD_PARAM; /* Kiln: no dilation; fp32 accumulation always */
    cudnnMathType_t m = d->math;
    int g = d->groups;
    *d = (struct cudnnConvolutionStruct){pad_h, pad_w, u, v, dh, dw, mode, compute, m, g};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups)
{
    if (groups < 1) return CUDNN_STATUS_BAD_PARAM;
    d->groups = groups;
    return CUDNN_STATUS_SUCCESS;
}

static int groups_of(const cudnnConvolutionDescriptor_t cd)
{
    return cd->groups > 1 ? cd->groups : 1;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t m)
{
    d->math = m;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t cd,
                                                    const cudnnTensorDescriptor_t x,
                                                    const cudnnFilterDescriptor_t w, int *n, int *c,
                                                    int *h, int *wd)
{
    if (x->c != w->c * groups_of(cd) || w->k % groups_of(cd)) return CUDNN_STATUS_BAD_PARAM;
    *n = x->n, *c = w->k;
    *h = (x->h + 2 * cd->pad_h - w->r) / cd->u + 1;
    *wd = (x->w + 2 * cd->pad_w - w->s) / cd->v + 1;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- heuristics: the three candidates described at the top ---- */

/* i = -2: the "inexact-first" candidate (backward passes only), -1: "fail-first" */
#define FILL_PERF(perf, cd, count, got, backward)                                                  \
    do {                                                                                           \
        int sixteen_ = (cd)->math == CUDNN_TENSOR_OP_MATH, k_ = 0;                                 \
        int first_ = knob("fail-first", 0) != 0, nofma_ = knob("no-fma", 0);                       \
        int inexact_ = (backward) && knob("inexact-first", 0);                                     \
        size_t big_ = knob("over-cap", 0) ? (size_t)384 << 20 : (size_t)1 << 40;                   \
        for (int i_ = -2; i_ < 4 && k_ < (count); i_++) {                                          \
            if ((i_ == 3 && nofma_) || (i_ == -1 && !first_) || (i_ == -2 && !inexact_)) continue; \
            memset(&(perf)[k_], 0, sizeof(perf)[k_]);                                              \
            (perf)[k_].algo = i_ == -2 ? INEXACT : i_ < 0 ? FAILING : i_ == 3 ? FP32_ALGO : i_;    \
            (perf)[k_].status = CUDNN_STATUS_SUCCESS;                                              \
            (perf)[k_].memory = i_ == 0 ? big_ : i_ >= 2 ? NEED_WS : 0;                            \
            (perf)[k_].determinism = i_ == 1 ? CUDNN_NON_DETERMINISTIC : CUDNN_DETERMINISTIC;      \
            (perf)[k_].mathType =                                                                  \
                i_ == 3 || (i_ <= 1 && !sixteen_) ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;         \
            k_++;                                                                                  \
        }                                                                                          \
        *(got) = k_;                                                                               \
    } while (0)

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
    const cudnnConvolutionDescriptor_t cd, const cudnnTensorDescriptor_t y, const int count,
    int *got, cudnnConvolutionFwdAlgoPerf_t *perf)
{
    FILL_PERF(perf, cd, count, got, 0);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t h, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t cd, const cudnnTensorDescriptor_t dx, const int count,
    int *got, cudnnConvolutionBwdDataAlgoPerf_t *perf)
{
    FILL_PERF(perf, cd, count, got, 1);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t cd, const cudnnFilterDescriptor_t dw, const int count,
    int *got, cudnnConvolutionBwdFilterAlgoPerf_t *perf)
{
    FILL_PERF(perf, cd, count, got, 1);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- element access by data type ---- */

static size_t esize(cudnnDataType_t dt) { return dt == CUDNN_DATA_FLOAT ? 4 : 2; }

static double get(const void *p, size_t i, cudnnDataType_t dt)
{
    if (dt == CUDNN_DATA_FLOAT) return ((const float *)p)[i];
    if (dt == CUDNN_DATA_HALF) return (double)((const _Float16 *)p)[i];
    uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void put(void *p, size_t i, cudnnDataType_t dt, double v)
{
    float f = (float)v;
    if (dt == CUDNN_DATA_FLOAT) {
        ((float *)p)[i] = f;
    } else if (dt == CUDNN_DATA_HALF) {
        ((_Float16 *)p)[i] = (_Float16)f;
    } else {
        uint32_t u;
        memcpy(&u, &f, 4);
        u += 0x7FFFu + ((u >> 16) & 1u);
        ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
    }
}

static int overlap(const void *a, size_t na, const void *b, size_t nb)
{
    const char *x = a, *y = b;
    return x < y + nb && y < x + na;
}

/* Shared checks of a run: algorithm, math type, workspace, dims, buffers. `out` is
 * which of x (1), w (2), y (0) the pass writes. */
static cudnnStatus_t check_run(int algo, int out, const cudnnConvolutionDescriptor_t cd,
                               const void *ws, size_t wsz, const cudnnTensorDescriptor_t x,
                               const void *xp, const cudnnFilterDescriptor_t w, const void *wp,
                               const cudnnTensorDescriptor_t y, const void *yp)
{
    int sixteen = x->dt != CUDNN_DATA_FLOAT;
    int right = sixteen ? 2 : FP32_ALGO;
    if (algo == FAILING) {
        rejected++;
        long st = knob("fail-first", 1); /* the heuristics offered it; it does not run */
        return st > 1 ? (cudnnStatus_t)st : CUDNN_STATUS_NOT_SUPPORTED;
    }
    if (algo == INEXACT && out != 0 && sixteen) { /* fp32 must have passed it over */
        inexact_runs++;
        right = INEXACT;
    }
    if (algo != right) return CUDNN_STATUS_BAD_PARAM;
    cudnnMathType_t want = algo == FP32_ALGO ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
    if (cd->math != want) return CUDNN_STATUS_BAD_PARAM;
    size_t need = algo == 2 || algo == FP32_ALGO ? NEED_WS : 0;
    if (need && (wsz < need || !ws || !mock_in_device(ws, need))) return CUDNN_STATUS_BAD_PARAM;
    if (x->dt != w->dt || x->dt != y->dt || x->c != w->c * groups_of(cd) || w->k % groups_of(cd) ||
        y->c != w->k || y->n != x->n || y->h != (x->h + 2 * cd->pad_h - w->r) / cd->u + 1 ||
        y->w != (x->w + 2 * cd->pad_w - w->s) / cd->v + 1)
        return CUDNN_STATUS_BAD_PARAM;
    size_t e = esize(x->dt);
    size_t nx = (size_t)x->n * x->c * x->h * x->w * e, nw = (size_t)w->k * w->c * w->r * w->s * e;
    size_t ny = (size_t)y->n * y->c * y->h * y->w * e;
    if (!mock_in_device(xp, nx) || !mock_in_device(wp, nw) || !mock_in_device(yp, ny))
        return CUDNN_STATUS_BAD_PARAM;
    const void *op = out == 0 ? yp : out == 1 ? xp : wp;
    size_t on = out == 0 ? ny : out == 1 ? nx : nw;
    if ((out != 1 && overlap(op, on, xp, nx)) || (out != 2 && overlap(op, on, wp, nw)) ||
        (out != 0 && overlap(op, on, yp, ny)) ||
        (need &&
         (overlap(ws, need, xp, nx) || overlap(ws, need, wp, nw) || overlap(ws, need, yp, ny))))
        return CUDNN_STATUS_BAD_PARAM;
    return CUDNN_STATUS_SUCCESS;
}

/* The (n, k, p, q) x (c, r, s) loop nest shared by the three passes; `pass` picks
 * which of x, w, y is written: 0 y = conv(x, w), 1 x = conv^T(y, w), 2 w = corr(x, y). */
static void direct(int pass, double alpha, double beta, const cudnnConvolutionDescriptor_t cd,
                   const cudnnTensorDescriptor_t xd, void *x, const cudnnFilterDescriptor_t wd,
                   void *w, const cudnnTensorDescriptor_t yd, void *y)
{
    const int N = xd->n, C = wd->c, H = xd->h, W = xd->w, K = wd->k, R = wd->r, S = wd->s;
    const int P = yd->h, Q = yd->w, G = groups_of(cd), XC = xd->c, Kg = K / G;
    size_t nout = pass == 0   ? (size_t)N * K * P * Q
                  : pass == 1 ? (size_t)N * XC * H * W
                              : (size_t)K * C * R * S;
    double *acc = calloc(nout, sizeof *acc);
    void *out = pass == 0 ? y : pass == 1 ? x : w;
    cudnnDataType_t dt = xd->dt;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            for (int p = 0; p < P; p++)
                for (int q = 0; q < Q; q++)
                    for (int c = 0; c < C; c++) /* C: the channels of k's group */
                        for (int r = 0; r < R; r++)
                            for (int s = 0; s < S; s++) {
                                int ih = p * cd->u - cd->pad_h + r, iw = q * cd->v - cd->pad_w + s;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                int xc = k / Kg * C + c;
                                size_t xi = (((size_t)n * XC + xc) * H + ih) * W + iw;
                                size_t wi = (((size_t)k * C + c) * R + r) * S + s;
                                size_t yi = (((size_t)n * K + k) * P + p) * Q + q;
                                if (pass == 0) acc[yi] += get(x, xi, dt) * get(w, wi, dt);
                                else if (pass == 1) acc[xi] += get(y, yi, dt) * get(w, wi, dt);
                                else acc[wi] += get(y, yi, dt) * get(x, xi, dt);
                            }
    for (size_t i = 0; i < nout; i++)
        put(out, i, dt, alpha * acc[i] + (beta != 0.0 ? beta * get(out, i, dt) : 0.0));
    free(acc);
}

/* A convolution under stream capture (mock_graph.h): checked now, as cuDNN checks its
 * arguments when called, and recorded with copies of its descriptors and scalars (a
 * captured kernel keeps its parameters; the descriptors may change or go after). */
typedef struct conv_args {
    int pass, algo;
    float alpha, beta;
    struct cudnnTensorStruct a, o; /* x (dx) and y (dy) */
    struct cudnnFilterStruct f;
    struct cudnnConvolutionStruct cd;
    const void *x, *w, *y; /* the pass's three buffers in cudnnConvolution*'s order */
    void *out;
    void *ws;
    size_t wsz;
} conv_args;

static cudaError_t conv_replay(void *p)
{
    conv_args *a = p;
    cudnnStatus_t s =
        a->pass == 0 ? cudnnConvolutionForward(NULL, &a->alpha, &a->a, a->x, &a->f, a->w, &a->cd,
                                               (cudnnConvolutionFwdAlgo_t)a->algo, a->ws, a->wsz,
                                               &a->beta, &a->o, a->out)
        : a->pass == 1
            ? cudnnConvolutionBackwardData(NULL, &a->alpha, &a->f, a->w, &a->o, a->y, &a->cd,
                                           (cudnnConvolutionBwdDataAlgo_t)a->algo, a->ws, a->wsz,
                                           &a->beta, &a->a, a->out)
            : cudnnConvolutionBackwardFilter(NULL, &a->alpha, &a->a, a->x, &a->o, a->y, &a->cd,
                                             (cudnnConvolutionBwdFilterAlgo_t)a->algo, a->ws,
                                             a->wsz, &a->beta, &a->f, a->out);
    return s == CUDNN_STATUS_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
}

static void conv_capture(int pass, int algo, const void *alpha, const void *beta,
                         const struct cudnnTensorStruct *a, const struct cudnnTensorStruct *o,
                         const struct cudnnFilterStruct *f, const struct cudnnConvolutionStruct *cd,
                         const void *x, const void *w, const void *y, void *out, void *ws,
                         size_t wsz)
{
    conv_args c = {
        pass, algo, *(const float *)alpha, *(const float *)beta, *a, *o, *f, *cd, x, w, y, out,
        ws,   wsz};
    mock_capture_copy(conv_replay, &c, sizeof c);
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha,
                                      const cudnnTensorDescriptor_t xd, const void *x,
                                      const cudnnFilterDescriptor_t wd, const void *w,
                                      const cudnnConvolutionDescriptor_t cd,
                                      cudnnConvolutionFwdAlgo_t algo, void *ws, size_t wsz,
                                      const void *beta, const cudnnTensorDescriptor_t yd, void *y)
{
    cudnnStatus_t s = check_run((int)algo, 0, cd, ws, wsz, xd, x, wd, w, yd, y);
    if (s) return s;
    if (mock_capturing()) {
        conv_capture(0, (int)algo, alpha, beta, xd, yd, wd, cd, x, w, NULL, y, ws, wsz);
        return CUDNN_STATUS_SUCCESS;
    }
    runs++;
    direct(0, *(const float *)alpha, *(const float *)beta, cd, xd, (void *)x, wd, (void *)w, yd, y);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha,
                                           const cudnnFilterDescriptor_t wd, const void *w,
                                           const cudnnTensorDescriptor_t dyd, const void *dy,
                                           const cudnnConvolutionDescriptor_t cd,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *ws, size_t wsz,
                                           const void *beta, const cudnnTensorDescriptor_t dxd,
                                           void *dx)
{
    cudnnStatus_t s = check_run((int)algo, 1, cd, ws, wsz, dxd, dx, wd, w, dyd, dy);
    if (s) return s;
    if (mock_capturing()) {
        conv_capture(1, (int)algo, alpha, beta, dxd, dyd, wd, cd, NULL, w, dy, dx, ws, wsz);
        return CUDNN_STATUS_SUCCESS;
    }
    runs++;
    direct(1, *(const float *)alpha, *(const float *)beta, cd, dxd, dx, wd, (void *)w, dyd,
           (void *)dy);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha,
                                             const cudnnTensorDescriptor_t xd, const void *x,
                                             const cudnnTensorDescriptor_t dyd, const void *dy,
                                             const cudnnConvolutionDescriptor_t cd,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void *ws,
                                             size_t wsz, const void *beta,
                                             const cudnnFilterDescriptor_t dwd, void *dw)
{
    cudnnStatus_t s = check_run((int)algo, 2, cd, ws, wsz, xd, x, dwd, dw, dyd, dy);
    if (s) return s;
    if (mock_capturing()) {
        conv_capture(2, (int)algo, alpha, beta, xd, dyd, dwd, cd, x, NULL, dy, dw, ws, wsz);
        return CUDNN_STATUS_SUCCESS;
    }
    runs++;
    direct(2, *(const float *)alpha, *(const float *)beta, cd, xd, (void *)x, dwd, dw, dyd,
           (void *)dy);
    return CUDNN_STATUS_SUCCESS;
}
