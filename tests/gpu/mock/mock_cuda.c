/* mock_cuda.c - a stand-in for the CUDA runtime and cuBLAS, for running the CUDA
 * backend's HOST code (runtime/cuda/ C files) on a machine without a GPU.
 *
 * One "device" (KILN_MOCK_DEVICE devices=N: N of them, sharing one memory pool; the
 * current device is per thread, as CUDA's) whose memory is host memory (so kernels can be replayed on the host by
 * mock_kernels.cu): cudaMalloc tracks every block and fails with
 * cudaErrorMemoryAllocation past MOCK_MEMORY bytes, cudaMemGetInfo reports what is
 * left (so the memory-return test means something), copies are memmove, streams are
 * synchronous. cuBLAS GEMMs are a column-major reference that checks cuBLAS's argument
 * rules; 16-bit inputs (CUDA_R_16BF/16F with fp32 output, the backend's staged copies)
 * are widened and multiplied with fp32 accumulation; the FAST_16BF/16F compute types on
 * fp32 matrices round the inputs to bf16/fp16 first. Stream capture records the stream
 * operations and a graph launch replays them (mock_graph.h). What this cannot check: real launches, cuDNN, asynchrony, device
 * faults - that is tests/gpu on a GPU.
 * KILN_MOCK_DEVICE (read at every call, comma-separated) models the machines a user
 * may have: "none" (cudaGetDeviceCount: cudaErrorNoDevice), "old-driver" (it says
 * cudaErrorInsufficientDriver; the driver supports CUDA 12.4, or "driver=V"), "no-driver"
 * (the same error with no driver at all: cudaDriverGetVersion says 0, as the real
 * runtime does without libcuda.so.1), "cc=XY" (the device's compute capability, e.g.
 * cc=60 for a P100; 8.0 otherwise), "compat=E" (cudaGetDeviceCount fails with error E:
 * 803 and 804 are the forward-compatibility package's).
 * The prototypes come from the real headers, so a signature mismatch fails to compile.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "../../../runtime/cuda/cuda_internal.h"
#include "mock_graph.h"
#include "mock_knob.h"
#include "mock_nccl.h"
#include "mock_stats.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOCK_MEMORY ((size_t)1 << 30) /* 1 GiB */
#define MOCK_MAX_BLOCKS 4096

static struct {
    void *ptr[MOCK_MAX_BLOCKS];
    size_t size[MOCK_MAX_BLOCKS];
    size_t used;
    cudaError_t last;
    long d2h, syncs, gemm16, gemm_fast, gemm_calls, gemm_batched, event_waits, event_polls,
        h2d_bytes;                 /* mock_stats.h */
    long graph_launches, captures; /* mock_graph.h */
    long to16;                     /* elements rounded to 16 bits (mock_stats.h) */
} mock;

long mock_stat_d2h(void) { return mock.d2h; }
long mock_stat_syncs(void) { return mock.syncs; }
long mock_stat_event_polls(void) { return mock.event_polls; }
long mock_stat_gemm16(void) { return mock.gemm16; }
long mock_stat_gemm_fast(void) { return mock.gemm_fast; }
long mock_stat_gemm_calls(void) { return mock.gemm_calls; }
long mock_stat_gemm_batched(void) { return mock.gemm_batched; }
long mock_stat_event_waits(void) { return mock.event_waits; }
long mock_stat_h2d_bytes(void) { return mock.h2d_bytes; }
void mock_stat_reset(void)
{
    mock.d2h = mock.syncs = mock.gemm16 = mock.gemm_fast = 0;
    mock.gemm_calls = mock.gemm_batched = mock.event_waits = mock.event_polls = 0;
    mock.h2d_bytes = 0;
    mock.graph_launches = mock.captures = 0;
    mock.to16 = 0;
}
long mock_stat_to16(void) { return mock.to16; }
void mock_count_to16(size_t n) { mock.to16 += (long)n; }

/* the block table changes under this lock (a device group allocates from several
 * threads); lookups during kernels read it while nothing allocates */
static pthread_mutex_t blocks_mu = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int current_device;

static cudaError_t fail(cudaError_t e)
{
    mock.last = e;
    return e;
}

static int find(const void *p)
{
    for (int i = 0; i < MOCK_MAX_BLOCKS; i++)
        if (mock.ptr[i] && (const char *)p >= (const char *)mock.ptr[i] &&
            (const char *)p < (const char *)mock.ptr[i] + mock.size[i])
            return i;
    return -1;
}

/* ---- device and errors ---- */

long mock_knob(const char *env, const char *name, long dflt)
{
    const char *e = getenv(env);
    size_t n = strlen(name);
    for (const char *p = e; p && *p;) {
        if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == '\0')) return 1;
        if (!strncmp(p, name, n) && p[n] == '=') return strtol(p + n + 1, NULL, 10);
        p = strchr(p, ',');
        if (p) p++;
    }
    return dflt;
}

/* KILN_MOCK_DEVICE has `name` (1), or "name=V" (V) */
static long knob(const char *name, long dflt) { return mock_knob("KILN_MOCK_DEVICE", name, dflt); }

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = 0;
    if (knob("none", 0)) return fail(cudaErrorNoDevice);
    if (knob("old-driver", 0) || knob("no-driver", 0)) return fail(cudaErrorInsufficientDriver);
    if (knob("compat", 0)) return fail((cudaError_t)knob("compat", 0));
    *count = (int)knob("devices", 1);
    return cudaSuccess;
}

static int device_exists(int device) { return device >= 0 && device < knob("devices", 1); }

cudaError_t cudaSetDevice(int device)
{
    if (!device_exists(device)) return fail(cudaErrorInvalidDevice);
    current_device = device;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    *device = current_device;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (!device_exists(device)) return fail(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "Kiln mock device (host memory)");
    prop->totalGlobalMem = MOCK_MEMORY;
    long cc = knob("cc", 80);
    prop->major = (int)(cc / 10);
    prop->minor = (int)(cc % 10);
    prop->multiProcessorCount = 1;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
    *v = knob("no-driver", 0) ? 0 : knob("old-driver", 0) ? (int)knob("driver", 12040) : 13000;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = 13000;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = mock.last;
    if (e != cudaErrorIllegalAddress) mock.last = cudaSuccess; /* that one is sticky */
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return mock.last; }

const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaErrorMemoryAllocation     ? "out of memory (mock)"
           : e == cudaErrorNoDevice           ? "no CUDA-capable device is detected (mock)"
           : e == cudaErrorInsufficientDriver ? "CUDA driver version is insufficient for CUDA "
                                                "runtime version (mock)"
           : e == cudaErrorStreamCaptureInvalidated
               ? "operation failed due to a previous error during capture (mock)"
           : e == cudaErrorStreamCaptureUnsupported ? "operation not permitted when stream is "
                                                      "capturing (mock)"
                                                    : "mock CUDA error";
}

const char *cudaGetErrorName(cudaError_t e)
{
    return e == cudaErrorMemoryAllocation           ? "cudaErrorMemoryAllocation"
           : e == cudaErrorNoDevice                 ? "cudaErrorNoDevice"
           : e == cudaErrorInsufficientDriver       ? "cudaErrorInsufficientDriver"
           : e == cudaErrorStreamCaptureInvalidated ? "cudaErrorStreamCaptureInvalidated"
           : e == cudaErrorStreamCaptureUnsupported ? "cudaErrorStreamCaptureUnsupported"
                                                    : "cudaErrorMock";
}

/* ---- stream capture and graphs (mock_graph.h) ---- */

typedef struct mock_call {
    cudaError_t (*fn)(void *);
    void *ctx;
    void (*free_ctx)(void *);
} mock_call;

struct CUgraph_st {
    mock_call *calls;
    int n, cap, refs; /* refs: the graph and each instance made from it */
};
struct CUgraphExec_st {
    struct CUgraph_st *g;
};

static _Thread_local struct CUgraph_st *capture; /* this thread's capture, NULL: none */
static _Thread_local int capture_bad;            /* something refused: invalidated */

long mock_stat_graph_launches(void) { return mock.graph_launches; }
long mock_stat_captures(void) { return mock.captures; }
int mock_capturing(void) { return capture != NULL; }

void mock_capture_call(cudaError_t (*fn)(void *), void *ctx, void (*free_ctx)(void *))
{
    struct CUgraph_st *g = capture;
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 64;
        mock_call *c = realloc(g->calls, (size_t)cap * sizeof *c);
        if (!c) { /* out of host memory: the capture fails */
            capture_bad = 1;
            free_ctx(ctx);
            return;
        }
        g->calls = c, g->cap = cap;
    }
    g->calls[g->n++] = (mock_call){fn, ctx, free_ctx};
}

void mock_capture_copy(cudaError_t (*fn)(void *), const void *args, size_t n)
{
    void *c = malloc(n);
    if (!c) {
        capture_bad = 1;
        return;
    }
    memcpy(c, args, n);
    mock_capture_call(fn, c, free);
}

/* An operation a capture does not allow: the capture is invalidated, as CUDA's. */
static cudaError_t refuse_in_capture(void)
{
    capture_bad = 1;
    return fail(cudaErrorStreamCaptureUnsupported);
}

static void graph_unref(struct CUgraph_st *g)
{
    if (!g || --g->refs > 0) return;
    for (int i = 0; i < g->n; i++) g->calls[i].free_ctx(g->calls[i].ctx);
    free(g->calls);
    free(g);
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    if (capture) return fail(cudaErrorIllegalState);
    if (!(capture = calloc(1, sizeof *capture))) return fail(cudaErrorMemoryAllocation);
    capture->refs = 1;
    capture_bad = (int)knob("capture-fails", 0);
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *st)
{
    *st = capture
              ? (capture_bad ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive)
              : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
    *graph = NULL;
    struct CUgraph_st *g = capture;
    if (!g) return fail(cudaErrorIllegalState);
    capture = NULL;
    if (capture_bad) {
        graph_unref(g);
        capture_bad = 0;
        return fail(cudaErrorStreamCaptureInvalidated);
    }
    mock.captures++;
    *graph = g;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t graph,
                                          unsigned long long flags)
{
    *exec = NULL;
    if (!graph) return fail(cudaErrorInvalidValue);
    if (!(*exec = malloc(sizeof **exec))) return fail(cudaErrorMemoryAllocation);
    (*exec)->g = graph;
    graph->refs++;
    return cudaSuccess;
}

/* The recorded operations, in order; the first failure is the launch's. */
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
    if (!exec) return fail(cudaErrorInvalidValue);
    if (capture) return refuse_in_capture();
    mock.graph_launches++;
    cudaError_t first = cudaSuccess;
    for (int i = 0; i < exec->g->n; i++) {
        cudaError_t e = exec->g->calls[i].fn(exec->g->calls[i].ctx);
        if (e != cudaSuccess && first == cudaSuccess) first = e;
    }
    return first;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    if (exec) graph_unref(exec->g);
    free(exec);
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    graph_unref(graph);
    return cudaSuccess;
}

/* ---- memory ---- */

cudaError_t cudaMalloc(void **p, size_t size)
{
    *p = NULL;
    if (capture) return refuse_in_capture();
    pthread_mutex_lock(&blocks_mu);
    int i = 0;
    while (i < MOCK_MAX_BLOCKS && mock.ptr[i]) i++;
    void *q =
        size <= MOCK_MEMORY - mock.used && i < MOCK_MAX_BLOCKS ? malloc(size ? size : 1) : NULL;
    if (q) {
        /* garbage, as real device memory: the backend must zero what it promises */
        memset(q, 0xA5, size);
        mock.ptr[i] = q, mock.size[i] = size, mock.used += size;
        *p = q;
    }
    pthread_mutex_unlock(&blocks_mu);
    return q ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFree(void *p)
{
    if (capture) return refuse_in_capture();
    if (!p) return cudaSuccess;
    pthread_mutex_lock(&blocks_mu);
    int i = find(p), ok = i >= 0 && mock.ptr[i] == p;
    if (ok) {
        free(mock.ptr[i]);
        mock.used -= mock.size[i];
        mock.ptr[i] = NULL, mock.size[i] = 0;
    }
    pthread_mutex_unlock(&blocks_mu);
    return ok ? cudaSuccess : fail(cudaErrorInvalidValue);
}

cudaError_t cudaMemGetInfo(size_t *fr, size_t *total)
{
    *fr = MOCK_MEMORY - mock.used;
    *total = MOCK_MEMORY;
    return cudaSuccess;
}

/* A device range must lie inside one allocation: catches out-of-bounds copies. */
int mock_in_device(const void *p, size_t n);
int mock_in_device(const void *p, size_t n)
{
    int i = find(p);
    return i >= 0 && (const char *)p + n <= (const char *)mock.ptr[i] + mock.size[i];
}

typedef struct memset_args {
    void *p;
    int v;
    size_t n;
} memset_args;
static cudaError_t memset_replay(void *a)
{
    const memset_args *m = a;
    return cudaMemsetAsync(m->p, m->v, m->n, 0);
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
    if (capture) {
        mock_capture_copy(memset_replay, &(memset_args){p, v, n}, sizeof(memset_args));
        return cudaSuccess;
    }
    if (!mock_in_device(p, n)) return fail(cudaErrorInvalidValue);
    memset(p, v, n);
    return cudaSuccess;
}

typedef struct memcpy_args {
    void *dst;
    const void *src;
    size_t n;
    enum cudaMemcpyKind kind;
} memcpy_args;
static cudaError_t memcpy_replay(void *a)
{
    const memcpy_args *m = a;
    return cudaMemcpyAsync(m->dst, m->src, m->n, m->kind, 0);
}

/* cudaMemcpyDefault: the direction from where the pointers are (unified addressing).
 * Captured: a copy between device buffers, or from host memory (read at each launch);
 * a copy to the host would need the host to wait, which the backend's step never does. */
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    if (kind == cudaMemcpyDefault) {
        int dd = find(dst) >= 0, sd = find(src) >= 0;
        kind = dd ? (sd ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                  : (sd ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
    }
    if (capture) {
        if (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost)
            return refuse_in_capture();
        mock_capture_copy(memcpy_replay, &(memcpy_args){dst, src, n, kind}, sizeof(memcpy_args));
        return cudaSuccess;
    }
    if (kind == cudaMemcpyDeviceToHost) mock.d2h++; /* counted even when it fails */
    if (n == 0) return cudaSuccess;
    if (kind == cudaMemcpyHostToDevice) mock.h2d_bytes += (long)n;
    int dd = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    int sd = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if ((dd && !mock_in_device(dst, n)) || (sd && !mock_in_device(src, n)) ||
        (!dd && find(dst) >= 0) || (!sd && find(src) >= 0))
        return fail(cudaErrorInvalidValue);
    /* behind the stream's collective in flight: done when it is (or synchronised) */
    if (kind == cudaMemcpyDeviceToHost && mock_nccl_defer(dst, src, n)) return cudaSuccess;
    memmove(dst, src, n);
    return cudaSuccess;
}

/* Pinned host memory: host memory the mock's copies accept like any other. */
cudaError_t cudaMallocHost(void **p, size_t size)
{
    *p = malloc(size ? size : 1);
    return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void *p)
{
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    if (capture) return refuse_in_capture(); /* synchronous */
    return cudaMemcpyAsync(dst, src, n, kind, 0);
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    memset(a, 0, sizeof *a);
    a->type = find(p) >= 0 ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
    return cudaSuccess;
}

/* ---- streams (synchronous) ---- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    *s = (cudaStream_t)(uintptr_t)0x5151;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) { return cudaSuccess; }
/* The kernels ran when they were called; a collective of the mock NCCL may still be in
 * flight (mock_nccl.h): a synchronisation waits for it, a query says so. */
cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    if (capture) return refuse_in_capture();
    mock.syncs++;
    mock_nccl_drain();
    return mock.last;
}

cudaError_t cudaDeviceSynchronize(void)
{
    if (capture) return refuse_in_capture();
    mock.syncs++;
    mock_nccl_drain();
    return mock.last;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    if (capture) return refuse_in_capture();
    mock.syncs++;
    mock_nccl_drain();
    return mock.last;
}
cudaError_t cudaStreamQuery(cudaStream_t s) { return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t e)
{
    if (mock_nccl_busy()) return cudaErrorNotReady;
    __atomic_fetch_add(&mock.event_polls, 1, __ATOMIC_RELAXED);
    return cudaSuccess;
}

/* Events order nothing on synchronous streams; they are counted (mock_stats.h). */
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    *e = (cudaEvent_t)(uintptr_t)0x7171;
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) { return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    return mock_nccl_settling() ? fail(cudaErrorInvalidResourceHandle) : cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
    __atomic_fetch_add(&mock.event_waits, 1, __ATOMIC_RELAXED);
    return cudaSuccess;
}

/* ---- cuBLAS (handed to the backend by rtp_blas_load, as cuda_blas_dl.c does) ---- */

static int handles;

static cublasStatus_t mock_create(cublasHandle_t *h)
{
    handles++;
    *h = (cublasHandle_t)(uintptr_t)0x6262;
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t mock_destroy(cublasHandle_t h)
{
    handles--;
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t mock_set_stream(cublasHandle_t h, cudaStream_t s)
{
    return CUBLAS_STATUS_SUCCESS;
}
static cublasStatus_t mock_set_math_mode(cublasHandle_t h, cublasMath_t m)
{
    return CUBLAS_STATUS_SUCCESS;
}
static const char *mock_status_string(cublasStatus_t s) { return "mock cuBLAS status"; }

static float round_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u); /* round to nearest even (finite inputs) */
    u &= 0xFFFF0000u;
    memcpy(&f, &u, 4);
    return f;
}

static float round_fp16(float f) { return (float)(_Float16)f; }

static cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           float alpha, const float *A, int lda, const float *B, int ldb,
                           float beta, float *C, int ldc, float (*rnd)(float));

/* An element of a 16-bit matrix as a float. */
static float widen(const void *p, size_t i, cudaDataType t)
{
    if (t == CUDA_R_16F) return (float)((const _Float16 *)p)[i];
    uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* C (device) = alpha op(A) op(B) + beta C for host A and B: only C is checked. */
static cublasStatus_t gemm_host(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                float alpha, const float *A, int lda, const float *B, int ldb,
                                float beta, float *C, int ldc)
{
    int ra = ta == CUBLAS_OP_N ? m : k, rb = tb == CUBLAS_OP_N ? k : n;
    if (lda < (ra > 1 ? ra : 1) || ldb < (rb > 1 ? rb : 1) || ldc < (m > 1 ? m : 1) ||
        (m && n && !mock_in_device(C, ((size_t)(n - 1) * ldc + (size_t)m) * 4)))
        return CUBLAS_STATUS_INVALID_VALUE;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0.0;
            for (int l = 0; l < k; l++) {
                float a = ta == CUBLAS_OP_N ? A[i + (size_t)l * lda] : A[l + (size_t)i * lda];
                float b = tb == CUBLAS_OP_N ? B[l + (size_t)j * ldb] : B[j + (size_t)l * ldb];
                s += (double)a * b;
            }
            float *c = &C[i + (size_t)j * ldc];
            *c = (float)(beta == 0.0f ? alpha * s : alpha * s + (double)beta * *c);
        }
    return CUBLAS_STATUS_SUCCESS;
}

/* Column-major C = alpha op(A) op(B) + beta C with cuBLAS's argument checks. */
static cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           float alpha, const float *A, int lda, const float *B, int ldb,
                           float beta, float *C, int ldc, float (*rnd)(float))
{
    int ra = ta == CUBLAS_OP_N ? m : k, rb = tb == CUBLAS_OP_N ? k : n;
    if (m < 0 || n < 0 || k < 0 || lda < (ra > 1 ? ra : 1) || ldb < (rb > 1 ? rb : 1) ||
        ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m && n &&
        (!mock_in_device(C, ((size_t)(n - 1) * ldc + (size_t)m) * 4) ||
         (k && !mock_in_device(A, ((size_t)((ta == CUBLAS_OP_N ? k : m) - 1) * lda + ra) * 4)) ||
         (k && !mock_in_device(B, ((size_t)((tb == CUBLAS_OP_N ? n : k) - 1) * ldb + rb) * 4))))
        return CUBLAS_STATUS_INVALID_VALUE; /* would read or write outside an allocation */
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0.0;
            for (int l = 0; l < k; l++) {
                float a = ta == CUBLAS_OP_N ? A[i + (size_t)l * lda] : A[l + (size_t)i * lda];
                float b = tb == CUBLAS_OP_N ? B[l + (size_t)j * ldb] : B[j + (size_t)l * ldb];
                if (rnd) a = rnd(a), b = rnd(b);
                s += (double)a * b;
            }
            float *c = &C[i + (size_t)j * ldc];
            *c = (float)(beta == 0.0f ? alpha * s : alpha * s + (double)beta * *c);
        }
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- the GEMMs under capture: recorded with their scalars' values (host pointer mode
 * reads alpha and beta when the call is made), run at each graph launch ---- */

typedef struct gemm_args {
    int kind; /* 0 sgemm, 1 gemm_ex, 2 sgemm_sb, 3 gemm_sb_ex */
    cublasOperation_t ta, tb;
    int m, n, k, lda, ldb, ldc, count;
    float alpha, beta;
    const void *A, *B;
    void *C;
    cudaDataType at, bt, ct;
    long long sa, sb, sc;
    cublasComputeType_t compute;
    cublasGemmAlgo_t algo;
} gemm_args;
static cudaError_t gemm_replay(void *p);

static int gemm_captured(const gemm_args *a)
{
    if (!capture) return 0;
    mock_capture_copy(gemm_replay, a, sizeof *a);
    return 1;
}

static cublasStatus_t mock_sgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                 int m, int n, int k, const float *alpha, const float *A, int lda,
                                 const float *B, int ldb, const float *beta, float *C, int ldc)
{
    if (gemm_captured(&(gemm_args){.kind = 0,
                                   .ta = ta,
                                   .tb = tb,
                                   .m = m,
                                   .n = n,
                                   .k = k,
                                   .lda = lda,
                                   .ldb = ldb,
                                   .ldc = ldc,
                                   .alpha = *alpha,
                                   .beta = *beta,
                                   .A = A,
                                   .B = B,
                                   .C = C}))
        return CUBLAS_STATUS_SUCCESS;
    mock.gemm_calls++;
    return gemm(ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc, NULL);
}

/* One GEMM of cublasGemmEx (uncounted as a call: mock_gemm_ex and the batch count). */
static cublasStatus_t gemm_ex(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const void *alpha, const void *A, cudaDataType Atype, int lda,
                              const void *B, cudaDataType Btype, int ldb, const void *beta, void *C,
                              cudaDataType Ctype, int ldc, cublasComputeType_t ct)
{
    if (Atype == Btype && (Atype == CUDA_R_16BF || Atype == CUDA_R_16F) && Ctype == CUDA_R_32F &&
        ct == CUBLAS_COMPUTE_32F) {
        mock.gemm16++;
        /* 16-bit inputs (the backend's staged copies), fp32 accumulation and output: widen
         * them (checking they lie in device memory) and multiply as fp32 */
        size_t na = (size_t)lda * (ta == CUBLAS_OP_N ? k : m),
               nb = (size_t)ldb * (tb == CUBLAS_OP_N ? n : k);
        if (m < 0 || n < 0 || k < 0 ||
            (k && (!mock_in_device(A, na * 2) || !mock_in_device(B, nb * 2))))
            return CUBLAS_STATUS_INVALID_VALUE;
        float *a = malloc((na ? na : 1) * 4), *bb = malloc((nb ? nb : 1) * 4);
        cublasStatus_t st = CUBLAS_STATUS_ALLOC_FAILED;
        if (a && bb) {
            for (size_t i = 0; i < na; i++) a[i] = widen(A, i, Atype);
            for (size_t i = 0; i < nb; i++) bb[i] = widen(B, i, Btype);
            st = gemm_host(ta, tb, m, n, k, *(const float *)alpha, a, lda, bb, ldb,
                           *(const float *)beta, C, ldc);
        }
        free(a);
        free(bb);
        return st;
    }
    if (Atype != CUDA_R_32F || Btype != CUDA_R_32F || Ctype != CUDA_R_32F)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (ct == CUBLAS_COMPUTE_32F_FAST_16BF || ct == CUBLAS_COMPUTE_32F_FAST_16F) mock.gemm_fast++;
    float (*rnd)(float) = ct == CUBLAS_COMPUTE_32F_FAST_16BF  ? round_bf16
                          : ct == CUBLAS_COMPUTE_32F_FAST_16F ? round_fp16
                                                              : NULL;
    return gemm(ta, tb, m, n, k, *(const float *)alpha, A, lda, B, ldb, *(const float *)beta, C,
                ldc, rnd);
}

static cublasStatus_t mock_gemm_ex(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                   int m, int n, int k, const void *alpha, const void *A,
                                   cudaDataType Atype, int lda, const void *B, cudaDataType Btype,
                                   int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,
                                   cublasComputeType_t ct, cublasGemmAlgo_t algo)
{
    if (gemm_captured(&(gemm_args){.kind = 1,
                                   .ta = ta,
                                   .tb = tb,
                                   .m = m,
                                   .n = n,
                                   .k = k,
                                   .lda = lda,
                                   .ldb = ldb,
                                   .ldc = ldc,
                                   .alpha = *(const float *)alpha,
                                   .beta = *(const float *)beta,
                                   .A = A,
                                   .B = B,
                                   .C = C,
                                   .at = Atype,
                                   .bt = Btype,
                                   .ct = Ctype,
                                   .compute = ct,
                                   .algo = algo}))
        return CUBLAS_STATUS_SUCCESS;
    mock.gemm_calls++;
    return gemm_ex(ta, tb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, ct);
}

/* The strided batches: `count` GEMMs of one call, each checked and run as above. */
static size_t type_bytes(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

static cublasStatus_t mock_sgemm_sb(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                    int m, int n, int k, const float *alpha, const float *A,
                                    int lda, long long sa, const float *B, int ldb, long long sb,
                                    const float *beta, float *C, int ldc, long long sc, int count)
{
    if (gemm_captured(&(gemm_args){.kind = 2,
                                   .ta = ta,
                                   .tb = tb,
                                   .m = m,
                                   .n = n,
                                   .k = k,
                                   .lda = lda,
                                   .ldb = ldb,
                                   .ldc = ldc,
                                   .alpha = *alpha,
                                   .beta = *beta,
                                   .A = A,
                                   .B = B,
                                   .C = C,
                                   .sa = sa,
                                   .sb = sb,
                                   .sc = sc,
                                   .count = count}))
        return CUBLAS_STATUS_SUCCESS;
    mock.gemm_calls++, mock.gemm_batched++;
    if (count < 0 || sa < 0 || sb < 0 || sc < 0) return CUBLAS_STATUS_INVALID_VALUE;
    for (int i = 0; i < count; i++) {
        cublasStatus_t st = gemm(ta, tb, m, n, k, *alpha, A + sa * i, lda, B + sb * i, ldb, *beta,
                                 C + sc * i, ldc, NULL);
        if (st != CUBLAS_STATUS_SUCCESS) return st;
    }
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t mock_gemm_sb_ex(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                      int m, int n, int k, const void *alpha, const void *A,
                                      cudaDataType Atype, int lda, long long sa, const void *B,
                                      cudaDataType Btype, int ldb, long long sb, const void *beta,
                                      void *C, cudaDataType Ctype, int ldc, long long sc, int count,
                                      cublasComputeType_t ct, cublasGemmAlgo_t algo)
{
    if (gemm_captured(&(gemm_args){.kind = 3,
                                   .ta = ta,
                                   .tb = tb,
                                   .m = m,
                                   .n = n,
                                   .k = k,
                                   .lda = lda,
                                   .ldb = ldb,
                                   .ldc = ldc,
                                   .alpha = *(const float *)alpha,
                                   .beta = *(const float *)beta,
                                   .A = A,
                                   .B = B,
                                   .C = C,
                                   .at = Atype,
                                   .bt = Btype,
                                   .ct = Ctype,
                                   .sa = sa,
                                   .sb = sb,
                                   .sc = sc,
                                   .count = count,
                                   .compute = ct,
                                   .algo = algo}))
        return CUBLAS_STATUS_SUCCESS;
    mock.gemm_calls++, mock.gemm_batched++;
    if (count < 0 || sa < 0 || sb < 0 || sc < 0) return CUBLAS_STATUS_INVALID_VALUE;
    for (int i = 0; i < count; i++) {
        cublasStatus_t st =
            gemm_ex(ta, tb, m, n, k, alpha, (const char *)A + (size_t)(sa * i) * type_bytes(Atype),
                    Atype, lda, (const char *)B + (size_t)(sb * i) * type_bytes(Btype), Btype, ldb,
                    beta, (char *)C + (size_t)(sc * i) * type_bytes(Ctype), Ctype, ldc, ct);
        if (st != CUBLAS_STATUS_SUCCESS) return st;
    }
    return CUBLAS_STATUS_SUCCESS;
}

static cudaError_t gemm_replay(void *p)
{
    const gemm_args *a = p;
    cublasStatus_t st =
        a->kind == 0 ? mock_sgemm(NULL, a->ta, a->tb, a->m, a->n, a->k, &a->alpha, a->A, a->lda,
                                  a->B, a->ldb, &a->beta, a->C, a->ldc)
        : a->kind == 1
            ? mock_gemm_ex(NULL, a->ta, a->tb, a->m, a->n, a->k, &a->alpha, a->A, a->at, a->lda,
                           a->B, a->bt, a->ldb, &a->beta, a->C, a->ct, a->ldc, a->compute, a->algo)
        : a->kind == 2
            ? mock_sgemm_sb(NULL, a->ta, a->tb, a->m, a->n, a->k, &a->alpha, a->A, a->lda, a->sa,
                            a->B, a->ldb, a->sb, &a->beta, a->C, a->ldc, a->sc, a->count)
            : mock_gemm_sb_ex(NULL, a->ta, a->tb, a->m, a->n, a->k, &a->alpha, a->A, a->at, a->lda,
                              a->sa, a->B, a->bt, a->ldb, a->sb, &a->beta, a->C, a->ct, a->ldc,
                              a->sc, a->count, a->compute, a->algo);
    return st == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
}

rt_status rtp_blas_load(rtp_blas_fns *out, rt_error *err)
{
    out->create = mock_create;
    out->destroy = mock_destroy;
    out->set_stream = mock_set_stream;
    out->set_math_mode = mock_set_math_mode;
    out->sgemm = mock_sgemm;
    out->gemm_ex = mock_gemm_ex;
    out->sgemm_sb = mock_sgemm_sb;
    out->gemm_sb_ex = mock_gemm_sb_ex;
    out->status_string = mock_status_string;
    return RT_OK;
}

/* A kernel touched memory outside every allocation: as on a GPU, a sticky error. */
void mock_fault(void);
void mock_fault(void) { mock.last = cudaErrorIllegalAddress; }
