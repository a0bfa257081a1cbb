/* cudnn_conv.c - conv2d forward, backward data and backward filter on cuDNN (legacy
 * API); with cudnn_dl.c, which loads the library, the only file that includes cudnn.h
 * (STYLE: cuDNN isolated). cuDNN is called through the table of cudnn_dl.h; when the
 * library cannot be loaded, rtp_cudnn_create leaves the backend without cuDNN state
 * (conv2d by im2col + cuBLAS, as a build without cuDNN) and says so once on stderr.
 *
 * Algorithms are chosen once per (descriptor, precision) and cached: the
 * cudnnGet*Algorithm_v7 heuristics (no trial runs, no allocation), the first result
 * that succeeds, fits the workspace and, for the backward passes, is deterministic
 * (CUDNN_DETERMINISTIC; bitwise resume needs it). In fp32 only FMA-math algorithms are
 * accepted when there is one (no TF32), so results stay close to the CPU's.
 * conv2d_workspace (called when a model is attached) picks the algorithms under a cap
 * and returns what they need; the model reserves that once and later calls reuse it.
 * A later shape (a smaller last batch) is looked up again under the reserved size.
 * Mixed precision (bf16/fp16): x, w and dy are rounded to 16 bits into the front of
 * the workspace, cuDNN runs on tensor cores with fp32 accumulation (computeType
 * FLOAT), and the 16-bit result is widened back into the fp32 output.
 */
#include <cudnn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "cudnn_dl.h"

#define CACHE 64
#define ALGO_WS_CAP ((size_t)512 << 20) /* most workspace one algorithm may ask for */

typedef struct algos {
    rt_conv_desc d;
    rt_precision prec;
    int valid;
    size_t limit;                       /* workspace limit the choice was made under */
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    cudnnMathType_t m_fwd, m_data, m_filter;
    size_t ws_fwd, ws_data, ws_filter;
} algos;

struct rtp_cudnn {
    const rtp_dnn_fns *f;               /* cuDNN's entry points (cudnn_dl.h) */
    cudnnHandle_t h;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    algos cache[CACHE];
    int next;                           /* round-robin replacement */
};

static rt_status cudnn_fail(rt_backend *b, cudnnStatus_t s, const char *call, const char *file,
                            int line, rt_error *err)
{
    rtp_cuda *c = rtp_cuda_of(b);
    cudaError_t e = cudaStreamQuery(c->stream);
    if (e != cudaSuccess && e != cudaErrorNotReady) return rtp_cuda_fail(b, e, call, file, line, err);
    /* DNN_TRY's text is "n->f->Create(...)": name the call as cuDNN does */
    const char *fn = strstr(call, "->f->");
    return rt_error_set(err, RT_EDEVICE, file, line, "cuDNN call %s%s failed: %s",
                        fn ? "cudnn" : "", fn ? fn + 5 : call,
                        c->dnn && c->dnn->f ? c->dnn->f->GetErrorString(s) : "?");
}

#define DNN_TRY(call)                                                                   \
    do {                                                                                \
        cudnnStatus_t rtp_s_ = (call);                                                  \
        if (rtp_s_ != CUDNN_STATUS_SUCCESS)                                             \
            return cudnn_fail(b, rtp_s_, #call, __FILE__, __LINE__, err);               \
    } while (0)

size_t rtp_cudnn_version(void)
{
    const rtp_dnn_fns *f = NULL;
    return rtp_dnn_load(&f, NULL) == RT_OK ? f->GetVersion() : 0;
}

rt_status rtp_cudnn_create(rt_backend *b, rtp_cudnn **out, rt_error *err)
{
    *out = NULL;
    const rtp_dnn_fns *f = NULL;
    rt_error why = {0};
    if (rtp_dnn_load(&f, &why) != RT_OK) {
        /* as a build without cuDNN (cudnn_none.c): conv2d by im2col + cuBLAS */
        static atomic_flag said = ATOMIC_FLAG_INIT;
        if (!atomic_flag_test_and_set(&said))
            fprintf(stderr, "kiln: conv2d runs as im2col + cuBLAS (slower): %s\n", why.msg);
        return RT_OK;
    }
    rtp_cudnn *n = calloc(1, sizeof *n);
    if (!n) return RT_ERR(err, RT_ENOMEM, "out of memory creating the cuDNN state");
    n->f = f;
    *out = n; /* partially built: rtp_cudnn_destroy frees what exists */
    DNN_TRY(n->f->Create(&n->h));
    DNN_TRY(n->f->SetStream(n->h, rtp_cuda_of(b)->stream));
    DNN_TRY(n->f->CreateTensorDescriptor(&n->x));
    DNN_TRY(n->f->CreateTensorDescriptor(&n->y));
    DNN_TRY(n->f->CreateFilterDescriptor(&n->w));
    DNN_TRY(n->f->CreateConvolutionDescriptor(&n->conv));
    return RT_OK;
}

void rtp_cudnn_destroy(rtp_cudnn *n)
{
    if (!n) return;
    if (n->conv) (void)n->f->DestroyConvolutionDescriptor(n->conv);
    if (n->w) (void)n->f->DestroyFilterDescriptor(n->w);
    if (n->y) (void)n->f->DestroyTensorDescriptor(n->y);
    if (n->x) (void)n->f->DestroyTensorDescriptor(n->x);
    if (n->h) (void)n->f->Destroy(n->h);
    free(n);
}

/* ---- descriptors and the 16-bit staging layout ---- */

static size_t r256(size_t n) { return (n + 255) / 256 * 256; }

/* Bytes of the 16-bit copies at the front of the workspace (0 in fp32):
 * [x or dx (N,C,H,W)] [w or dw (K,C,R,S)] [y or dy (N,K,P,Q)], 2 bytes an element. */
static size_t stage_bytes(const rt_conv_desc *d, rt_precision p, size_t off[3])
{
    size_t nx = r256((size_t)d->N * d->C * d->H * d->W * 2);
    size_t nw = r256((size_t)d->K * d->C * d->R * d->S * 2);
    size_t ny = r256((size_t)d->N * d->K * d->P * d->Q * 2);
    if (off) off[0] = 0, off[1] = nx, off[2] = nx + nw;
    return p == RT_PREC_FP32 ? 0 : nx + nw + ny;
}

static rt_status set_desc(rt_backend *b, const rt_conv_desc *d, rt_precision p, rt_error *err)
{
    rtp_cudnn *n = rtp_cuda_of(b)->dnn;
    cudnnDataType_t dt = p == RT_PREC_BF16 ? CUDNN_DATA_BFLOAT16
                         : p == RT_PREC_FP16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    DNN_TRY(n->f->SetTensor4dDescriptor(n->x, CUDNN_TENSOR_NCHW, dt, d->N, d->C, d->H, d->W));
    DNN_TRY(n->f->SetTensor4dDescriptor(n->y, CUDNN_TENSOR_NCHW, dt, d->N, d->K, d->P, d->Q));
    DNN_TRY(n->f->SetFilter4dDescriptor(n->w, dt, CUDNN_TENSOR_NCHW, d->K, d->C, d->R, d->S));
    DNN_TRY(n->f->SetConvolution2dDescriptor(n->conv, d->pad, d->pad, d->stride, d->stride, 1,
                                             1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    DNN_TRY(n->f->SetConvolutionMathType(n->conv, p == RT_PREC_FP32 ? CUDNN_FMA_MATH
                                                                    : CUDNN_TENSOR_OP_MATH));
    int on, oc, oh, ow;
    DNN_TRY(n->f->GetConvolution2dForwardOutputDim(n->conv, n->x, n->w, &on, &oc, &oh, &ow));
    if (on != d->N || oc != d->K || oh != d->P || ow != d->Q)
        return RT_ERR(err, RT_EINVAL, "conv2d: cuDNN computes output (%d,%d,%d,%d), the "
                      "descriptor says (%d,%d,%d,%d)", on, oc, oh, ow, d->N, d->K, d->P, d->Q);
    return RT_OK;
}

/* ---- algorithm choice ---- */

/* Index of the first usable heuristic result, or -1. fp32: FMA math first (no TF32). */
#define PICK(perf, got, limit, need_det, fp32, out)                                      \
    do {                                                                                 \
        (out) = -1;                                                                      \
        for (int pass = (fp32) ? 0 : 1; pass < 2 && (out) < 0; pass++)                   \
            for (int k_ = 0; k_ < (got) && (out) < 0; k_++)                            \
                if ((perf)[k_].status == CUDNN_STATUS_SUCCESS &&                        \
                    (perf)[k_].memory <= (limit) &&                                     \
                    (!(need_det) || (perf)[k_].determinism == CUDNN_DETERMINISTIC) &&  \
                    (pass == 1 || (perf)[k_].mathType == CUDNN_FMA_MATH))               \
                    (out) = k_;                                                          \
    } while (0)

static rt_status choose(rt_backend *b, const rt_conv_desc *d, rt_precision p, size_t limit,
                        algos *a, rt_error *err)
{
    rtp_cudnn *n = rtp_cuda_of(b)->dnn;
    const int fp32 = p == RT_PREC_FP32;
    int got = 0, i;
    RT_TRY(set_desc(b, d, p, err));
    cudnnConvolutionFwdAlgoPerf_t pf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    DNN_TRY(n->f->GetConvolutionForwardAlgorithm_v7(
        n->h, n->x, n->w, n->conv, n->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, pf));
    PICK(pf, got, limit, 0, fp32, i);
    if (i < 0) goto none;
    a->fwd = pf[i].algo, a->m_fwd = pf[i].mathType, a->ws_fwd = pf[i].memory;
    cudnnConvolutionBwdDataAlgoPerf_t pd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    DNN_TRY(n->f->GetConvolutionBackwardDataAlgorithm_v7(
        n->h, n->w, n->y, n->conv, n->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, pd));
    PICK(pd, got, limit, 1, fp32, i);
    if (i < 0) goto none;
    a->bwd_data = pd[i].algo, a->m_data = pd[i].mathType, a->ws_data = pd[i].memory;
    cudnnConvolutionBwdFilterAlgoPerf_t pw[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    DNN_TRY(n->f->GetConvolutionBackwardFilterAlgorithm_v7(
        n->h, n->x, n->y, n->conv, n->w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, pw));
    PICK(pw, got, limit, 1, fp32, i);
    if (i < 0) goto none;
    a->bwd_filter = pw[i].algo, a->m_filter = pw[i].mathType, a->ws_filter = pw[i].memory;
    a->d = *d, a->prec = p, a->limit = limit, a->valid = 1;
    return RT_OK;
none:
    return RT_ERR(err, RT_EDEVICE, "cuDNN offers no usable algorithm (deterministic for "
                  "the backward passes) for conv2d (N=%d C=%d H=%d W=%d K=%d R=%d S=%d "
                  "stride=%d pad=%d) in %s within %zu bytes of workspace ---> HINT: try "
                  "--precision fp32 or a smaller --batch", d->N, d->C, d->H, d->W, d->K, d->R, d->S, d->stride, d->pad,
                  rt_precision_name(p), limit);
}

/* The cached choice for (d, precision) usable within `limit` bytes, choosing if needed. */
static rt_status lookup(rt_backend *b, const rt_conv_desc *d, size_t limit, const algos **out,
                        rt_error *err)
{
    rtp_cuda *c = rtp_cuda_of(b);
    rtp_cudnn *n = c->dnn;
    algos *slot = NULL;
    for (int i = 0; i < CACHE; i++) {
        algos *a = &n->cache[i];
        if (!a->valid || a->prec != c->prec || memcmp(&a->d, d, sizeof *d)) continue;
        size_t need = a->ws_fwd > a->ws_data ? a->ws_fwd : a->ws_data;
        need = need > a->ws_filter ? need : a->ws_filter;
        if (need <= limit) {
            *out = a;
            return RT_OK;
        }
        slot = a; /* same shape, smaller workspace now: choose again in place */
    }
    if (!slot) {
        slot = &n->cache[n->next];
        n->next = (n->next + 1) % CACHE;
    }
    slot->valid = 0;
    RT_TRY(choose(b, d, c->prec, limit, slot, err));
    *out = slot;
    return RT_OK;
}

size_t rtp_cudnn_workspace(rt_backend *b, const rt_conv_desc *d)
{
    rtp_cuda *c = rtp_cuda_of(b);
    size_t stage = stage_bytes(d, c->prec, NULL), fr = 0, tot = 0, cap = ALGO_WS_CAP;
    if (cudaMemGetInfo(&fr, &tot) == cudaSuccess && fr / 4 < cap) cap = fr / 4;
    else (void)cudaGetLastError();
    const algos *a = NULL;
    if (lookup(b, d, cap, &a, NULL) != RT_OK) return stage; /* the op will report it */
    size_t need = a->ws_fwd > a->ws_data ? a->ws_fwd : a->ws_data;
    return stage + (need > a->ws_filter ? need : a->ws_filter);
}

/* ---- the three passes ---- */

typedef struct run {
    const algos *a;
    char *stage;      /* 16-bit copies (NULL in fp32) */
    size_t off[3];
    void *ws;         /* algorithm workspace */
    size_t ws_bytes;
} run;

static rt_status prepare(rt_backend *b, const rt_conv_desc *d, run *r, rt_error *err)
{
    rtp_cuda *c = rtp_cuda_of(b);
    size_t stage = stage_bytes(d, c->prec, r->off);
    if (c->ws_bytes < stage)
        return RT_ERR(err, RT_EINVAL, "CUDA workspace too small for %s conv2d staging (%zu "
                      "bytes reserved, %zu needed): set the precision before attaching",
                      rt_precision_name(c->prec), c->ws_bytes, stage);
    RT_TRY(lookup(b, d, c->ws_bytes - stage, &r->a, err));
    RT_TRY(set_desc(b, d, c->prec, err));
    r->stage = c->prec == RT_PREC_FP32 ? NULL : (char *)c->ws;
    r->ws = c->ws_bytes > stage ? (char *)c->ws + stage : NULL;
    r->ws_bytes = c->ws_bytes - stage;
    return RT_OK;
}

#define BF16 (rtp_cuda_of(b)->prec == RT_PREC_BF16)
#define STREAM (rtp_cuda_of(b)->stream)

rt_status rtp_cudnn_fwd(rt_backend *b, float *y, const float *x, const float *w,
                        const rt_conv_desc *d, rt_error *err)
{
    rtp_cudnn *n = rtp_cuda_of(b)->dnn;
    run r;
    const float one = 1.0f, zero = 0.0f;
    RT_TRY(prepare(b, d, &r, err));
    DNN_TRY(n->f->SetConvolutionMathType(n->conv, r.a->m_fwd));
    const size_t nx = (size_t)d->N * d->C * d->H * d->W, nw = (size_t)d->K * d->C * d->R * d->S;
    const size_t ny = (size_t)d->N * d->K * d->P * d->Q;
    if (!r.stage) {
        DNN_TRY(n->f->ConvolutionForward(n->h, &one, n->x, x, n->w, w, n->conv, r.a->fwd, r.ws,
                                         r.ws_bytes, &zero, n->y, y));
        return RT_OK;
    }
    void *x16 = r.stage + r.off[0], *w16 = r.stage + r.off[1], *y16 = r.stage + r.off[2];
    RT_CUDA_TRY(b, err, rtp_k_to_16(STREAM, x16, x, nx, BF16));
    RT_CUDA_TRY(b, err, rtp_k_to_16(STREAM, w16, w, nw, BF16));
    DNN_TRY(n->f->ConvolutionForward(n->h, &one, n->x, x16, n->w, w16, n->conv, r.a->fwd, r.ws,
                                     r.ws_bytes, &zero, n->y, y16));
    RT_CUDA_TRY(b, err, rtp_k_from_16(STREAM, y, y16, ny, BF16));
    return RT_OK;
}

rt_status rtp_cudnn_bwd_data(rt_backend *b, float *dx, const float *dy, const float *w,
                             const rt_conv_desc *d, rt_error *err)
{
    rtp_cudnn *n = rtp_cuda_of(b)->dnn;
    run r;
    const float one = 1.0f, zero = 0.0f;
    RT_TRY(prepare(b, d, &r, err));
    DNN_TRY(n->f->SetConvolutionMathType(n->conv, r.a->m_data));
    const size_t nx = (size_t)d->N * d->C * d->H * d->W, nw = (size_t)d->K * d->C * d->R * d->S;
    const size_t ny = (size_t)d->N * d->K * d->P * d->Q;
    if (!r.stage) {
        DNN_TRY(n->f->ConvolutionBackwardData(n->h, &one, n->w, w, n->y, dy, n->conv,
                                              r.a->bwd_data, r.ws, r.ws_bytes, &zero, n->x,
                                              dx));
        return RT_OK;
    }
    void *dx16 = r.stage + r.off[0], *w16 = r.stage + r.off[1], *dy16 = r.stage + r.off[2];
    RT_CUDA_TRY(b, err, rtp_k_to_16(STREAM, dy16, dy, ny, BF16));
    RT_CUDA_TRY(b, err, rtp_k_to_16(STREAM, w16, w, nw, BF16));
    DNN_TRY(n->f->ConvolutionBackwardData(n->h, &one, n->w, w16, n->y, dy16, n->conv,
                                          r.a->bwd_data, r.ws, r.ws_bytes, &zero, n->x, dx16));
    RT_CUDA_TRY(b, err, rtp_k_from_16(STREAM, dx, dx16, nx, BF16));
    return RT_OK;
}

rt_status rtp_cudnn_bwd_filter(rt_backend *b, float *dw, const float *dy, const float *x,
                               const rt_conv_desc *d, rt_error *err)
{
    rtp_cudnn *n = rtp_cuda_of(b)->dnn;
    run r;
    const float one = 1.0f, zero = 0.0f;
    RT_TRY(prepare(b, d, &r, err));
    DNN_TRY(n->f->SetConvolutionMathType(n->conv, r.a->m_filter));
    const size_t nx = (size_t)d->N * d->C * d->H * d->W, nw = (size_t)d->K * d->C * d->R * d->S;
    const size_t ny = (size_t)d->N * d->K * d->P * d->Q;
    if (!r.stage) {
        DNN_TRY(n->f->ConvolutionBackwardFilter(n->h, &one, n->x, x, n->y, dy, n->conv,
                                                r.a->bwd_filter, r.ws, r.ws_bytes, &zero, n->w,
                                                dw));
        return RT_OK;
    }
    void *x16 = r.stage + r.off[0], *dw16 = r.stage + r.off[1], *dy16 = r.stage + r.off[2];
    RT_CUDA_TRY(b, err, rtp_k_to_16(STREAM, x16, x, nx, BF16));
    RT_CUDA_TRY(b, err, rtp_k_to_16(STREAM, dy16, dy, ny, BF16));
    DNN_TRY(n->f->ConvolutionBackwardFilter(n->h, &one, n->x, x16, n->y, dy16, n->conv,
                                            r.a->bwd_filter, r.ws, r.ws_bytes, &zero, n->w,
                                            dw16));
    RT_CUDA_TRY(b, err, rtp_k_from_16(STREAM, dw, dw16, nw, BF16));
    return RT_OK;
}
