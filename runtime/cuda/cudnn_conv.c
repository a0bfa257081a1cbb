/* cudnn_conv.c - conv2d forward, backward data and backward filter on cuDNN (legacy
 * API); with cudnn_dl.c, which loads the library, the only file that includes cudnn.h
 * (cuDNN stays in these files). cuDNN is called through the table of cudnn_dl.h; when the
 * library cannot be loaded, or cudnnCreate/cudnnSetStream fail, rtp_cudnn_create leaves
 * the backend without cuDNN state (conv2d by im2col + cuBLAS, as a build without cuDNN)
 * and says so once on stderr.
 *
 * Algorithms are chosen once per (descriptor, precision) and cached: the
 * cudnnGet*Algorithm_v7 heuristics (no trial runs, no allocation), keeping every result
 * that succeeds, fits the workspace cap and is deterministic (CUDNN_DETERMINISTIC, in
 * every pass: bitwise resume needs it), in the heuristics' order. A run tries them in
 * that order until one runs (a status of the NOT_SUPPORTED or EXECUTION_FAILED category
 * at run time moves on, as PyTorch's try_all does) and remembers it. In fp32 only FMA math is used (never
 * TF32): tensor-op results are dropped and the descriptor is set to CUDNN_FMA_MATH; nor
 * are the backward passes' FFT and Winograd-nonfused algorithms (inexact_filter).
 * The choice is made under a fixed cap (ALGO_WS_CAP) and nothing else, so it depends
 * neither on free memory nor on the workspace earlier models left behind (the workspace
 * only grows): a smaller last batch, or a model attached after a bigger one, chooses
 * what a fresh process would. conv2d_workspace (called when a model is attached) picks
 * the algorithms and returns what they need; the model reserves that once, and a run
 * whose algorithm needs more (a later shape) grows the workspace to it.
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
/* The most workspace one algorithm may ask for. Fixed, not a share of free memory: the
 * choice must not depend on what else holds device memory, or a resumed run could pick
 * other algorithms and lose bitwise equality with the run it continues. */
#define ALGO_WS_CAP ((size_t)256 << 20)
#define MAX_CAND 8

enum { P_FWD = 0, P_DATA = 1, P_FILTER = 2 };
static const char *const PASS_NAME[3] = {"forward", "backward-data", "backward-filter"};

/* The usable heuristic results of one pass, in the heuristics' order; cur is the first
 * that has not failed at run time (a SUCCESS from the heuristics does not promise that
 * the algorithm runs: NOT_SUPPORTED / EXECUTION_FAILED move on to the next, in this
 * fixed order, as PyTorch's try_all does). */
typedef struct pass_algos {
    int n, cur;
    int algo[MAX_CAND];
    cudnnMathType_t math[MAX_CAND];
    size_t ws[MAX_CAND];
} pass_algos;

typedef struct algos {
    rt_conv_desc d;
    rt_precision prec;
    int valid;
    size_t limit;    /* workspace limit the choice was made under */
    pass_algos p[3]; /* P_FWD, P_DATA, P_FILTER */
} algos;

struct rtp_cudnn {
    const rtp_dnn_fns *f; /* cuDNN's entry points (cudnn_dl.h) */
    cudnnHandle_t h;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    algos cache[CACHE];
    int next; /* round-robin replacement */
    struct {  /* the 16-bit dy in staging slot 2, left by the last backward pass */
        const float *dy;
        rt_conv_desc d;
        const char *stage;
        unsigned long long seq; /* rtp_cuda.seq of that pass */
        int valid;
    } dy16;
};

static rt_status cudnn_fail(rt_backend *b, cudnnStatus_t s, const char *call, const char *file,
                            int line, rt_error *err)
{
    rtp_cuda *c = rtp_cuda_of(b);
    cudaError_t e = cudaStreamQuery(c->stream);
    if (e != cudaSuccess && e != cudaErrorNotReady)
        return rtp_cuda_fail(b, e, call, file, line, err);
    /* DNN_TRY's text is "n->f->Create(...)": name the call as cuDNN does */
    const char *fn = strstr(call, "->f->");
    return rt_error_set(err, RT_EDEVICE, file, line, "cuDNN call %s%s failed: %s",
                        fn ? "cudnn" : "", fn ? fn + 5 : call,
                        c->dnn && c->dnn->f ? c->dnn->f->GetErrorString(s) : "?");
}

#define DNN_TRY(call)                                                     \
    do {                                                                  \
        cudnnStatus_t rtp_s_ = (call);                                    \
        if (rtp_s_ != CUDNN_STATUS_SUCCESS)                               \
            return cudnn_fail(b, rtp_s_, #call, __FILE__, __LINE__, err); \
    } while (0)

#define STR_(x) #x
#define STR(x) STR_(x)
const char *rtp_cudnn_built(void) { return STR(CUDNN_MAJOR); }

size_t rtp_cudnn_version(void)
{
    const rtp_dnn_fns *f = NULL;
    return rtp_dnn_load(&f, NULL) == RT_OK ? f->GetVersion() : 0;
}

/* Handle and descriptors on the backend's stream. */
static rt_status build(rt_backend *b, rtp_cudnn *n, rt_error *err)
{
    DNN_TRY(n->f->Create(&n->h));
    DNN_TRY(n->f->SetStream(n->h, rtp_cuda_of(b)->stream));
    DNN_TRY(n->f->CreateTensorDescriptor(&n->x));
    DNN_TRY(n->f->CreateTensorDescriptor(&n->y));
    DNN_TRY(n->f->CreateFilterDescriptor(&n->w));
    DNN_TRY(n->f->CreateConvolutionDescriptor(&n->conv));
    return RT_OK;
}

/* As a build without cuDNN (cudnn_none.c): conv2d by im2col + cuBLAS, said once. */
static void without_cudnn(const char *why)
{
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&said))
        fprintf(stderr, "kiln: conv2d runs as im2col + cuBLAS (slower): %s\n", why);
}

rt_status rtp_cudnn_create(rt_backend *b, rtp_cudnn **out, rt_error *err)
{
    *out = NULL;
    const rtp_dnn_fns *f = NULL;
    rt_error why = {0};
    if (rtp_dnn_load(&f, &why) != RT_OK) {
        without_cudnn(why.msg);
        return RT_OK;
    }
    rtp_cudnn *n = calloc(1, sizeof *n);
    if (!n) return RT_ERR(err, RT_ENOMEM, "out of memory creating the cuDNN state");
    n->f = f;
    rtp_cuda_of(b)->dnn = n; /* cudnn_fail reads the error strings through it */
    rt_status s = build(b, n, &why);
    rtp_cuda_of(b)->dnn = NULL;
    if (s == RT_OK) {
        *out = n;
        return RT_OK;
    }
    rtp_cudnn_destroy(n);
    if (s == RT_EDEVICE_LOST) { /* the device itself failed: no fallback helps */
        if (err) *err = why;
        return s;
    }
    /* a failed create is a failed load: the CPU-side promise is the same fallback */
    char msg[sizeof why.msg + 32];
    snprintf(msg, sizeof msg, "cuDNN does not start: %s", why.msg);
    without_cudnn(msg);
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
    size_t nw = r256(rt_conv_weight_numel(d) * 2);
    size_t ny = r256((size_t)d->N * d->K * d->P * d->Q * 2);
    if (off) off[0] = 0, off[1] = nx, off[2] = nx + nw;
    return p == RT_PREC_FP32 ? 0 : nx + nw + ny;
}

static rt_status set_desc(rt_backend *b, const rt_conv_desc *d, rt_precision p, rt_error *err)
{
    rtp_cudnn *n = rtp_cuda_of(b)->dnn;
    cudnnDataType_t dt = p == RT_PREC_BF16   ? CUDNN_DATA_BFLOAT16
                         : p == RT_PREC_FP16 ? CUDNN_DATA_HALF
                                             : CUDNN_DATA_FLOAT;
    DNN_TRY(n->f->SetTensor4dDescriptor(n->x, CUDNN_TENSOR_NCHW, dt, d->N, d->C, d->H, d->W));
    DNN_TRY(n->f->SetTensor4dDescriptor(n->y, CUDNN_TENSOR_NCHW, dt, d->N, d->K, d->P, d->Q));
    DNN_TRY(n->f->SetFilter4dDescriptor(n->w, dt, CUDNN_TENSOR_NCHW, d->K, d->C / rt_conv_groups(d),
                                        d->R, d->S));
    DNN_TRY(n->f->SetConvolution2dDescriptor(n->conv, d->pad, d->pad, d->stride, d->stride, 1, 1,
                                             CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    DNN_TRY(n->f->SetConvolutionGroupCount(n->conv, rt_conv_groups(d)));
    DNN_TRY(n->f->SetConvolutionMathType(n->conv, p == RT_PREC_FP32 ? CUDNN_FMA_MATH
                                                                    : CUDNN_TENSOR_OP_MATH));
    int on, oc, oh, ow;
    DNN_TRY(n->f->GetConvolution2dForwardOutputDim(n->conv, n->x, n->w, &on, &oc, &oh, &ow));
    if (on != d->N || oc != d->K || oh != d->P || ow != d->Q)
        return RT_ERR(err, RT_EINVAL,
                      "conv2d: cuDNN computes output (%d,%d,%d,%d), the "
                      "descriptor says (%d,%d,%d,%d)",
                      on, oc, oh, ow, d->N, d->K, d->P, d->Q);
    return RT_OK;
}

/* ---- algorithm choice ---- */

/* Whether a status from running an algorithm means "try the next one". cuDNN 9 answers
 * finer codes within a category (3001-3014 NOT_SUPPORTED_SHAPE, _LAYOUT, ...; 5001-5004
 * EXECUTION_FAILED_CUDART, ...): compare the category; cuDNN 8 has only the two codes. */
static int moves_on(cudnnStatus_t s)
{
#ifdef CUDNN_STATUS_CATEGORY
    return CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED ||
           CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_EXECUTION_FAILED;
#else
    return s == CUDNN_STATUS_NOT_SUPPORTED || s == CUDNN_STATUS_EXECUTION_FAILED;
#endif
}

/* Keeps the heuristic results a pass may use, in the heuristics' order: SUCCESS, within
 * `limit` bytes of workspace, deterministic (the forward pass too: a forward that adds
 * in a scheduling-dependent order would end bitwise resume as surely), and in fp32 not
 * tensor-op math (the run sets CUDNN_FMA_MATH on the descriptor anyway, as PyTorch does
 * without TF32, so an algorithm that would need TF32 reports NOT_SUPPORTED and the next
 * one runs). Returns how many were kept. */
#define KEEP(perf, got, limit, fp32, inexact, out)                                          \
    do {                                                                                    \
        (out)->n = 0, (out)->cur = 0;                                                       \
        for (int k_ = 0; k_ < (got) && (out)->n < MAX_CAND; k_++) {                         \
            cudnnMathType_t m_ = (perf)[k_].mathType;                                       \
            if ((perf)[k_].status != CUDNN_STATUS_SUCCESS || (perf)[k_].memory > (limit) || \
                (perf)[k_].determinism != CUDNN_DETERMINISTIC ||                            \
                ((fp32) && m_ != CUDNN_FMA_MATH && m_ != CUDNN_DEFAULT_MATH) ||             \
                ((fp32) && inexact((int)(perf)[k_].algo)))                                  \
                continue;                                                                   \
            (out)->algo[(out)->n] = (int)(perf)[k_].algo;                                   \
            (out)->math[(out)->n] = (fp32) ? CUDNN_FMA_MATH : m_;                           \
            (out)->ws[(out)->n++] = (perf)[k_].memory;                                      \
        }                                                                                   \
    } while (0)

/* The backward algorithms fp32 does without: the FFT ones and Winograd-nonfused round
 * through transforms whose error grows with the tile (the weight gradient, a sum over
 * the whole batch, ends up a few 1e-4 of its size off, outside what fp32 promises
 * against the CPU); 16-bit precision has larger errors of its own and keeps them. The
 * forward keeps cuDNN's choice. */
static int never(int algo)
{
    (void)algo;
    return 0;
}

static int inexact_data(int algo)
{
    return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
           algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
           algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}

static int inexact_filter(int algo)
{
    return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
           algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
           algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

static rt_status choose(rt_backend *b, const rt_conv_desc *d, rt_precision p, size_t limit,
                        algos *a, rt_error *err)
{
    rtp_cudnn *n = rtp_cuda_of(b)->dnn;
    const int fp32 = p == RT_PREC_FP32;
    int got = 0;
    RT_TRY(set_desc(b, d, p, err));
    cudnnConvolutionFwdAlgoPerf_t pf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    DNN_TRY(n->f->GetConvolutionForwardAlgorithm_v7(n->h, n->x, n->w, n->conv, n->y,
                                                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, pf));
    KEEP(pf, got, limit, fp32, never, &a->p[P_FWD]);
    cudnnConvolutionBwdDataAlgoPerf_t pd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    DNN_TRY(n->f->GetConvolutionBackwardDataAlgorithm_v7(
        n->h, n->w, n->y, n->conv, n->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, pd));
    KEEP(pd, got, limit, fp32, inexact_data, &a->p[P_DATA]);
    cudnnConvolutionBwdFilterAlgoPerf_t pw[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    DNN_TRY(n->f->GetConvolutionBackwardFilterAlgorithm_v7(
        n->h, n->x, n->y, n->conv, n->w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, pw));
    KEEP(pw, got, limit, fp32, inexact_filter, &a->p[P_FILTER]);
    for (int k = 0; k < 3; k++)
        if (a->p[k].n == 0)
            return RT_ERR(err, RT_EDEVICE,
                          "cuDNN offers no usable %s algorithm (deterministic; FMA "
                          "math and no FFT in fp32) for conv2d (N=%d C=%d H=%d W=%d K=%d R=%d S=%d "
                          "stride=%d pad=%d) in %s within %zu bytes of workspace ---> HINT: "
                          "try --precision fp32 or a smaller --batch",
                          PASS_NAME[k], d->N, d->C, d->H, d->W, d->K, d->R, d->S, d->stride, d->pad,
                          rt_precision_name(p), limit);
    a->d = *d, a->prec = p, a->limit = limit, a->valid = 1;
    return RT_OK;
}

/* Workspace the current candidate of each pass needs. */
static size_t algos_need(const algos *a)
{
    size_t need = 0;
    for (int k = 0; k < 3; k++)
        if (a->p[k].ws[a->p[k].cur] > need) need = a->p[k].ws[a->p[k].cur];
    return need;
}

/* The cached choice for (d, precision), choosing under the fixed cap if needed: the key
 * is the shape and the precision only, never the workspace at hand. */
static rt_status lookup(rt_backend *b, const rt_conv_desc *d, algos **out, rt_error *err)
{
    rtp_cuda *c = rtp_cuda_of(b);
    rtp_cudnn *n = c->dnn;
    for (int i = 0; i < CACHE; i++) {
        algos *a = &n->cache[i];
        if (a->valid && a->prec == c->prec && !memcmp(&a->d, d, sizeof *d)) {
            *out = a;
            return RT_OK;
        }
    }
    algos *slot = &n->cache[n->next];
    n->next = (n->next + 1) % CACHE;
    slot->valid = 0;
    RT_TRY(choose(b, d, c->prec, ALGO_WS_CAP, slot, err));
    *out = slot;
    return RT_OK;
}

size_t rtp_cudnn_workspace(rt_backend *b, const rt_conv_desc *d)
{
    rtp_cuda *c = rtp_cuda_of(b);
    size_t stage = stage_bytes(d, c->prec, NULL);
    algos *a = NULL;
    if (lookup(b, d, &a, NULL) != RT_OK) return stage; /* the op reports it */
    return stage + algos_need(a);
}

/* ---- the three passes ---- */

typedef struct run {
    algos *a;
    char *stage; /* 16-bit copies (NULL in fp32) */
    size_t off[3];
    void *ws; /* algorithm workspace */
    size_t ws_bytes;
} run;

static rt_status prepare(rt_backend *b, const rt_conv_desc *d, run *r, rt_error *err)
{
    rtp_cuda *c = rtp_cuda_of(b);
    size_t stage = stage_bytes(d, c->prec, r->off);
    if (c->ws_bytes < stage)
        return RT_ERR(err, RT_EINVAL,
                      "CUDA workspace too small for %s conv2d staging (%zu "
                      "bytes reserved, %zu needed): set the precision before attaching",
                      rt_precision_name(c->prec), c->ws_bytes, stage);
    RT_TRY(lookup(b, d, &r->a, err));
    RT_TRY(set_desc(b, d, c->prec, err));
    r->stage = c->prec == RT_PREC_FP32 ? NULL : (char *)c->ws;
    r->ws = c->ws_bytes > stage ? (char *)c->ws + stage : NULL;
    r->ws_bytes = c->ws_bytes - stage;
    return RT_OK;
}

/* One cuDNN call of pass `pass` with algorithm `algo`: out = pass(in1, in2), where
 * forward is y = conv(x = in1, w = in2), backward data dx = conv^T(dy = in1, w = in2),
 * backward filter dw = corr(x = in1, dy = in2). */
static cudnnStatus_t call(rtp_cudnn *n, int pass, int algo, const run *r, void *out,
                          const void *in1, const void *in2)
{
    const float one = 1.0f, zero = 0.0f;
    switch (pass) {
    case P_FWD:
        return n->f->ConvolutionForward(n->h, &one, n->x, in1, n->w, in2, n->conv,
                                        (cudnnConvolutionFwdAlgo_t)algo, r->ws, r->ws_bytes, &zero,
                                        n->y, out);
    case P_DATA:
        return n->f->ConvolutionBackwardData(n->h, &one, n->w, in2, n->y, in1, n->conv,
                                             (cudnnConvolutionBwdDataAlgo_t)algo, r->ws,
                                             r->ws_bytes, &zero, n->x, out);
    default:
        return n->f->ConvolutionBackwardFilter(n->h, &one, n->x, in1, n->y, in2, n->conv,
                                               (cudnnConvolutionBwdFilterAlgo_t)algo, r->ws,
                                               r->ws_bytes, &zero, n->w, out);
    }
}

/* Makes the algorithm workspace of r at least `need` bytes (a later candidate may need
 * more than the one the model reserved for): the workspace grows with its contents (the
 * 16-bit copies), and the pointers into it move along. RT_EDEVICE when it does not fit;
 * the workspace is then unchanged. */
static rt_status grow(rt_backend *b, run *r, size_t need, void **out, const void **in1,
                      const void **in2)
{
    rtp_cuda *c = rtp_cuda_of(b);
    char *old = c->ws;
    size_t stage = (size_t)((char *)r->ws - old), old_bytes = c->ws_bytes;
    if (!r->ws) stage = c->ws_bytes; /* no algorithm room yet */
    RT_TRY(rtp_cuda_grow_workspace(b, stage + need, 1, NULL));
#define MOVE(ptr)                                                              \
    if ((const char *)*(ptr) >= old && (const char *)*(ptr) < old + old_bytes) \
    *(ptr) = (char *)c->ws + ((const char *)*(ptr)-old)
    MOVE(out);
    MOVE(in1);
    MOVE(in2);
#undef MOVE
    r->stage = r->stage ? (char *)c->ws : NULL;
    r->ws = (char *)c->ws + stage;
    r->ws_bytes = c->ws_bytes - stage;
    return RT_OK;
}

/* Runs the pass with the cached candidates from the current one on, in their fixed
 * order: a NOT_SUPPORTED or EXECUTION_FAILED category (with the stream healthy,
 * moves_on) moves on, and the
 * one that ran becomes the current one for later calls; a candidate needing more than
 * the reserved workspace grows it (or is passed over when that does not fit). Any other
 * status is an error. */
static rt_status execute(rt_backend *b, const rt_conv_desc *d, run *r, int pass, void *out,
                         const void *in1, const void *in2, rt_error *err)
{
    rtp_cuda *c = rtp_cuda_of(b);
    rtp_cudnn *n = c->dnn;
    pass_algos *p = &r->a->p[pass];
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    for (int k = p->cur; k < p->n; k++) {
        if (p->ws[k] > r->ws_bytes && grow(b, r, p->ws[k], &out, &in1, &in2) != RT_OK)
            continue; /* it does not fit: pass it over */
        DNN_TRY(n->f->SetConvolutionMathType(n->conv, p->math[k]));
        cudnnStatus_t s = call(n, pass, p->algo[k], r, out, in1, in2);
        if (s == CUDNN_STATUS_SUCCESS) {
            p->cur = k;
            return RT_OK;
        }
        if (!moves_on(s))
            return cudnn_fail(b, s, "cudnnConvolution (run)", __FILE__, __LINE__, err);
        cudaError_t e = cudaStreamQuery(c->stream); /* a failed run may hide a lost device */
        if (e != cudaSuccess && e != cudaErrorNotReady)
            return rtp_cuda_fail(b, e, "cudnnConvolution (run)", __FILE__, __LINE__, err);
        last = s;
    }
    p->cur = p->n > 0 ? p->n - 1 : 0;
    return RT_ERR(err, RT_EDEVICE,
                  "cuDNN ran none of the %d %s algorithms its heuristics "
                  "offered for conv2d (N=%d C=%d H=%d W=%d K=%d R=%d S=%d stride=%d pad=%d) in "
                  "%s (last: %s) ---> HINT: try --precision fp32",
                  p->n, PASS_NAME[pass], d->N, d->C, d->H, d->W, d->K, d->R, d->S, d->stride,
                  d->pad, rt_precision_name(c->prec), n->f->GetErrorString(last));
}

#define BF16 (rtp_cuda_of(b)->prec == RT_PREC_BF16)
#define STREAM (rtp_cuda_of(b)->stream)

/* Runs one pass: out from in1 and in2 (execute's operands). In bf16/fp16 the inputs are
 * rounded into their staging slots first and the output widened from its own: slot 0
 * holds x or dx, 1 w or dw, 2 y or dy (r.off). A layer's backward runs the filter pass
 * then the data pass on the same dy: when the pass before this op was the other
 * backward pass of the same convolution on the same dy (no op in between, so neither dy
 * nor slot 2, which neither backward pass writes, changed), its 16-bit dy is used as it
 * is: the same bits, one rounding fewer. */
static rt_status staged(rt_backend *b, const rt_conv_desc *d, int pass, float *out,
                        const float *in1, const float *in2, rt_error *err)
{
    static const int slot[3][3] = {/* out, in1, in2 */
                                   [P_FWD] = {2, 0, 1},
                                   [P_DATA] = {0, 2, 1},
                                   [P_FILTER] = {1, 0, 2}};
    run r = {0};
    RT_TRY(prepare(b, d, &r, err));
    if (!r.stage) return execute(b, d, &r, pass, out, in1, in2, err);
    const size_t n[3] = {(size_t)d->N * d->C * d->H * d->W, rt_conv_weight_numel(d),
                         (size_t)d->N * d->K * d->P * d->Q};
    const int *sl = slot[pass];
    rtp_cuda *c = rtp_cuda_of(b);
    rtp_cudnn *dn = c->dnn;
    const float *dy = pass == P_DATA ? in1 : pass == P_FILTER ? in2 : NULL;
    int have_dy = dy && dn->dy16.valid && dn->dy16.dy == dy && dn->dy16.stage == r.stage &&
                  dn->dy16.seq + 1 == c->seq && !memcmp(&dn->dy16.d, d, sizeof *d);
    dn->dy16.valid = 0;
    void *a16 = r.stage + r.off[sl[1]], *b16 = r.stage + r.off[sl[2]];
    if (!(have_dy && sl[1] == 2))
        RT_CUDA_TRY(b, err, rtp_k_to_16(STREAM, a16, in1, n[sl[1]], BF16));
    if (!(have_dy && sl[2] == 2))
        RT_CUDA_TRY(b, err, rtp_k_to_16(STREAM, b16, in2, n[sl[2]], BF16));
    RT_TRY(execute(b, d, &r, pass, r.stage + r.off[sl[0]], a16, b16, err));
    /* r.stage again: the workspace may have grown (grow) */
    RT_CUDA_TRY(b, err, rtp_k_from_16(STREAM, out, r.stage + r.off[sl[0]], n[sl[0]], BF16));
    if (dy && !have_dy) /* the other backward pass may use it (have_dy: once, not twice) */
        dn->dy16.dy = dy, dn->dy16.d = *d, dn->dy16.stage = r.stage, dn->dy16.seq = c->seq,
        dn->dy16.valid = 1;
    return RT_OK;
}

rt_status rtp_cudnn_fwd(rt_backend *b, float *y, const float *x, const float *w,
                        const rt_conv_desc *d, rt_error *err)
{
    return staged(b, d, P_FWD, y, x, w, err);
}

rt_status rtp_cudnn_bwd_data(rt_backend *b, float *dx, const float *dy, const float *w,
                             const rt_conv_desc *d, rt_error *err)
{
    return staged(b, d, P_DATA, dx, dy, w, err);
}

rt_status rtp_cudnn_bwd_filter(rt_backend *b, float *dw, const float *dy, const float *x,
                               const rt_conv_desc *d, rt_error *err)
{
    return staged(b, d, P_FILTER, dw, x, dy, err);
}
