/* cuda_internal.h - private state and helpers shared by the CUDA backend's C files.
 *
 * Everything device-side lives in one rtp_cuda (b->impl): the device index, one stream
 * (every op is issued on it, so ops are ordered without host synchronisation), the
 * cuBLAS handle, the cuDNN state (cudnn_conv.c; NULL without cuDNN), the workspace
 * reserved when a model is built.
 * Errors: RT_CUDA_TRY / RTP_CUBLAS_TRY turn a failed call into RT_EDEVICE with the
 * call, the CUDA message and file:line; a sticky error (illegal address, launch
 * failure, ...) marks the backend lost and returns RT_EDEVICE_LOST, and every later op
 * returns RT_EDEVICE_LOST at once (RTP_ENTER).
 */
#ifndef CUDA_INTERNAL_H
#define CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <limits.h>
#include <cuda_runtime_api.h>

#include "../rt_backend.h"
#include "../rt_optim.h"
#include "cuda_kernels.h"
#include "rt_device.h"

typedef struct rtp_cudnn rtp_cudnn; /* cudnn_conv.c */

/* The cuBLAS entry points the backend uses, resolved at open (cuda_blas_dl.c): cuBLAS
 * is dlopen'ed by the first CUDA backend, not linked, because loading it costs every
 * Kiln process much memory and start time (cublasLt's relocations) even on the CPU. */
typedef struct rtp_blas_fns {
    cublasStatus_t (*create)(cublasHandle_t *h);
    cublasStatus_t (*destroy)(cublasHandle_t h);
    cublasStatus_t (*set_stream)(cublasHandle_t h, cudaStream_t s);
    cublasStatus_t (*set_math_mode)(cublasHandle_t h, cublasMath_t m);
    cublasStatus_t (*sgemm)(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const float *alpha, const float *A, int lda,
                            const float *B, int ldb, const float *beta, float *C, int ldc);
    cublasStatus_t (*gemm_ex)(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const void *alpha, const void *A, cudaDataType at,
                              int lda, const void *B, cudaDataType bt, int ldb, const void *beta,
                              void *C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                              cublasGemmAlgo_t algo);
    cublasStatus_t (*sgemm_sb)(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                               int n, int k, const float *alpha, const float *A, int lda,
                               long long sa, const float *B, int ldb, long long sb,
                               const float *beta, float *C, int ldc, long long sc, int count);
    cublasStatus_t (*gemm_sb_ex)(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                 int m, int n, int k, const void *alpha, const void *A,
                                 cudaDataType at, int lda, long long sa, const void *B,
                                 cudaDataType bt, int ldb, long long sb, const void *beta, void *C,
                                 cudaDataType ct, int ldc, long long sc, int count,
                                 cublasComputeType_t compute, cublasGemmAlgo_t algo);
    const char *(*status_string)(cublasStatus_t s);
} rtp_blas_fns;

/* Fills *out with cuBLAS's entry points (loading the library on first use; it stays
 * loaded, as a linked library would). RT_ENODEV naming the library when it is missing. */
RT_MUST_USE rt_status rtp_blas_load(rtp_blas_fns *out, rt_error *err);

/* The folder, below site-packages, where the nvidia-PKG wheel for CUDA major
 * cuda_major installs its libraries: nvidia/PKG/lib up to CUDA 12; from CUDA 13 on the
 * toolkit's own libraries (cublas) share nvidia/cuN/lib, while cuDNN and NCCL, released
 * apart from the toolkit, keep nvidia/cudnn/lib and nvidia/nccl/lib. */
void rtp_cuda_wheel_dir(const char *pkg, int cuda_major, char *out, size_t n);

/* The files to try, in order, for a CUDA library of this build's major (SONAME
 * "libcublas.so.11"): the one the nvidia-PKG wheel installs beside the kiln-kernel
 * wheel (the kiln-kernel[cuda] extra; <site-packages>/<rtp_cuda_wheel_dir>/SONAME,
 * rt_dl_site_file) when that file exists, then SONAME, then ANY (the unversioned name).
 * Fills wheel with that path either way and names[] with pointers into it and the
 * arguments; returns the count. */
int rtp_cuda_lib_names(const char *pkg, const char *soname, const char *any, char wheel[PATH_MAX],
                       const char *names[3]);

/* The table (cuda_backend.c); rt_backend.c refers to it when KILN_HAVE_CUDA is set. */
extern const rt_backend_ops rt_cuda_ops;

typedef struct rtp_cuda {
    int device;
    int cc_major, cc_minor;
    char name[256];
    cudaStream_t stream;
    cublasHandle_t blas;
    rtp_blas_fns blasf; /* cuBLAS entry points (rtp_blas_load) */
    rtp_cudnn *dnn;     /* NULL: convolution by im2col + cuBLAS (cuda_conv.c) */
    rt_adam_coef *coef; /* device: the fp16 Adam coefficients of the step (cuda_train.cu) */
    double *red;        /* device: RTP_RED_SLOTS partial pairs of the reductions */
    void *ws;           /* workspace (device), ws_bytes long */
    size_t ws_bytes;
    rt_precision prec;
    rt_graph *cap;          /* the graph being recorded (cuda_graph.c), NULL: none */
    unsigned gen;           /* bumped when device memory is freed or the workspace moves: a graph
                      recorded before may name memory that is gone */
    unsigned long long seq; /* ops entered (rtp_cuda_enter): "nothing ran in between" */
} rtp_cuda;

static inline rtp_cuda *rtp_cuda_of(rt_backend *b) { return (rtp_cuda *)b->impl; }

/* Records a failed CUDA call: sticky errors mark b lost (RT_EDEVICE_LOST), others give
 * RT_EDEVICE and are cleared. Returns the status to propagate. */
RT_MUST_USE rt_status rtp_cuda_fail(rt_backend *b, cudaError_t e, const char *call,
                                    const char *file, int line, rt_error *err);
RT_MUST_USE rt_status rtp_cublas_fail(rt_backend *b, cublasStatus_t s, const char *call,
                                      const char *file, int line, rt_error *err);
/* RT_EDEVICE_LOST if b is lost, else RT_OK. */
RT_MUST_USE rt_status rtp_cuda_enter(rt_backend *b, rt_error *err);
/* The workspace if it holds `bytes`, else NULL with RT_EINVAL in err. */
void *rtp_cuda_scratch(rt_backend *b, size_t bytes, rt_error *err);
/* Out-of-memory message: asked, free and total bytes. */
RT_MUST_USE rt_status rtp_cuda_oom(rt_backend *b, size_t asked, const char *what, rt_error *err);

#define RT_CUDA_TRY(b, err, call)                                                \
    do {                                                                         \
        cudaError_t rtp_e_ = (call);                                             \
        if (rtp_e_ != cudaSuccess)                                               \
            return rtp_cuda_fail((b), rtp_e_, #call, __FILE__, __LINE__, (err)); \
    } while (0)
#define RTP_CUBLAS_TRY(b, err, call)                                               \
    do {                                                                           \
        cublasStatus_t rtp_s_ = (call);                                            \
        if (rtp_s_ != CUBLAS_STATUS_SUCCESS)                                       \
            return rtp_cublas_fail((b), rtp_s_, #call, __FILE__, __LINE__, (err)); \
    } while (0)
#define RTP_ENTER(b) RT_TRY(rtp_cuda_enter((b), err))

/* ---- cuda_graph.c: a training step recorded as a CUDA graph ---- */
/* An op's step variable while a graph is recorded: which value (kind), where it goes in
 * the graph's parameter block, and what turns an rt_step_vars into it. */
typedef enum {
    RTP_SLOT_GATHER,   /* rtp_gather_vars */
    RTP_SLOT_DROPOUT,  /* rtp_philox_stream */
    RTP_SLOT_ROW,      /* int32 row */
    RTP_SLOT_ADAM,     /* rt_adam_coef */
    RTP_SLOT_SGD,      /* rt_sgd_coef */
    RTP_SLOT_AMP_ADAM, /* rtp_amp_adam */
    RTP_SLOT_AMP_SGD   /* rt_sgd_coef of step 1 */
} rtp_slot_kind;
typedef struct rtp_slot {
    rtp_slot_kind kind;
    int64_t delta; /* the op's start / step / row: passed absolute, kept relative to the
                      recorded step's rt_step_vars */
    uint64_t seed; /* gather, dropout */
    uint32_t layer;
    int64_t limit;       /* gather: the last start that fits; row: the last row */
    rt_optim_config cfg; /* the optimisers */
    size_t off;          /* (set by rtp_graph_slot) */
} rtp_slot;
/* NULL when no graph is being recorded: the op passes `value` (bytes long) by value.
 * While one is: the slot's device address for the kernel's dv argument. The recorded
 * step's own value must come out of the slot's rule; when it does not (or the block is
 * full) the recording is marked failed and graph_end says so. */
const void *rtp_graph_slot(rt_backend *b, const rtp_slot *slot, const void *value, size_t bytes);
RT_MUST_USE rt_op_graph_begin rtp_cuda_graph_begin;
RT_MUST_USE rt_op_graph_end rtp_cuda_graph_end;
RT_MUST_USE rt_op_graph_launch rtp_cuda_graph_launch;
rt_op_graph_free rtp_cuda_graph_free;

/* ---- cuda_device.c ---- */
/* 1 when this build's kernels (KILN_CUDA_ARCHS) run on compute capability major.minor. */
int rtp_cuda_arch_covered(int major, int minor);
/* The messages for cudaErrorInsufficientDriver - a driver older than the CUDA runtime
 * Kiln links, or no driver at all (CUDA's own text then reads like "upgrade your
 * driver") - and for a GPU whose architecture the build lacks: each names both sides
 * and the fix. rtp_cuda_driver_msg returns 1 (it always writes one). */
int rtp_cuda_driver_msg(char *buf, size_t n);
/* The message for the forward-compatibility errors (803 cudaErrorSystemDriverMismatch,
 * 804 cudaErrorCompatNotSupportedOnDevice: a cuda-compat libcuda.so on the loader path
 * that does not fit the driver or the GPU): 1 and buf set for those, 0 for others. */
int rtp_cuda_compat_msg(cudaError_t e, char *buf, size_t n);
void rtp_cuda_arch_msg(char *buf, size_t n, int device, const char *name, int major, int minor);

/* ---- cuda_mem.c ---- */
RT_MUST_USE rt_op_alloc rtp_cuda_alloc;
rt_op_free rtp_cuda_free;
RT_MUST_USE rt_op_reserve_workspace rtp_cuda_reserve_workspace;
/* The same, keep = 1: the contents move to the new workspace, and when the new one does
 * not fit beside the old, RT_EDEVICE with the old one kept as it was. */
RT_MUST_USE rt_status rtp_cuda_grow_workspace(rt_backend *b, size_t bytes, int keep, rt_error *err);
RT_MUST_USE rt_op_upload rtp_cuda_upload;
RT_MUST_USE rt_op_download rtp_cuda_download;
RT_MUST_USE rt_op_sync rtp_cuda_sync;
RT_MUST_USE rt_op_fill rtp_cuda_fill;
RT_MUST_USE rt_op_copy rtp_cuda_copy;
/* cuda_add.c */
RT_MUST_USE rt_op_add rtp_cuda_add;
RT_MUST_USE rt_op_add_relu rtp_cuda_add_relu;

/* ---- cuda_conv.c: dispatch to cuDNN or im2col + cuBLAS ---- */
rt_op_conv2d_workspace rtp_cuda_conv2d_workspace;
RT_MUST_USE rt_op_conv2d_fwd rtp_cuda_conv2d_fwd;
RT_MUST_USE rt_op_conv2d_bwd_data rtp_cuda_conv2d_bwd_data;
RT_MUST_USE rt_op_conv2d_bwd_filter rtp_cuda_conv2d_bwd_filter;

/* ---- cudnn_conv.c (or cudnn_none.c without cuDNN) ---- */
/* Creates the cuDNN state on c's stream; *out = NULL (and RT_OK) without cuDNN. */
RT_MUST_USE rt_status rtp_cudnn_create(rt_backend *b, rtp_cudnn **out, rt_error *err);
void rtp_cudnn_destroy(rtp_cudnn *dnn);
/* cuDNN library version (e.g. 91900), 0 without cuDNN. */
size_t rtp_cudnn_version(void);
/* The cuDNN major the build uses, as text ("9"), or "(not built)". */
const char *rtp_cudnn_built(void);
size_t rtp_cudnn_workspace(rt_backend *b, const rt_conv_desc *d);
RT_MUST_USE rt_status rtp_cudnn_fwd(rt_backend *b, float *y, const float *x, const float *w,
                                    const rt_conv_desc *d, rt_error *err);
RT_MUST_USE rt_status rtp_cudnn_bwd_data(rt_backend *b, float *dx, const float *dy, const float *w,
                                         const rt_conv_desc *d, rt_error *err);
RT_MUST_USE rt_status rtp_cudnn_bwd_filter(rt_backend *b, float *dw, const float *dy,
                                           const float *x, const rt_conv_desc *d, rt_error *err);

/* ---- cuda_dense.c ---- */
RT_MUST_USE rt_op_dense_fwd rtp_cuda_dense_fwd;
RT_MUST_USE rt_op_dense_bwd_data rtp_cuda_dense_bwd_data;
RT_MUST_USE rt_op_dense_bwd_filter rtp_cuda_dense_bwd_filter;
/* The shape of one cuBLAS GEMM: C (m,n) = op(A) op(B) + beta C, column-major. The ops
 * choose the operands, these pure functions the shape, so the row-major <-> column-major
 * mapping is checked on the CPU (tests/gpu/test_kernels_host.cu). */
typedef struct rtp_gemm {
    cublasOperation_t ta, tb;
    int m, n, k, lda, ldb, ldc;
    int count;            /* > 1: a strided batch of count GEMMs (one cuBLAS call) */
    long long sa, sb, sc; /* its strides in elements (0: every GEMM uses the same matrix) */
} rtp_gemm;
enum { RTP_FWD = 0, RTP_BWD_DATA = 1, RTP_BWD_FILTER = 2 };
/* dense, operands (A, B, C): fwd (w, in, out), data (w, dout, din), filter (in, dout, dw) */
rtp_gemm rtp_dense_gemm(int pass, const rt_dense_desc *d);
/* conv, per image n (cuda_conv.c): fwd (col or x_n, w, y_n), data (dy_n, w, col or dx_n),
 * filter (col or x_n, dy_n, dw accumulated over images) */
rtp_gemm rtp_conv_gemm(int pass, const rt_conv_desc *d);
/* Runs g with the backend's precision, alpha = 1, as one cuBLAS call (a strided batch
 * when g->count > 1): fp32 is cublasSgemm(StridedBatched); bf16 and fp16
 * round A and B to 16 bits into `stage` (device scratch of rtp_gemm_stage_bytes, unused
 * in fp32) and multiply those with fp32 accumulation into the fp32 C. */
RT_MUST_USE rt_status rtp_cuda_gemm(rt_backend *b, const rtp_gemm *g, const float *A,
                                    const float *B, float beta, float *C, void *stage,
                                    rt_error *err);
size_t rtp_gemm_stage_bytes(rt_backend *b, const rtp_gemm *g);
/* Scratch the dense ops need (their 16-bit copies; 0 in fp32). */
rt_op_dense_workspace rtp_cuda_dense_workspace;

/* ---- cuda_ops.c: pooling, activations, batchnorm, dropout, loss, optimisers ---- */
RT_MUST_USE rt_op_maxpool_fwd rtp_cuda_maxpool_fwd;
RT_MUST_USE rt_op_maxpool_bwd rtp_cuda_maxpool_bwd;
RT_MUST_USE rt_op_avgpool_fwd rtp_cuda_avgpool_fwd;
RT_MUST_USE rt_op_avgpool_bwd rtp_cuda_avgpool_bwd;
RT_MUST_USE rt_op_relu_fwd rtp_cuda_relu_fwd;
RT_MUST_USE rt_op_relu_bwd rtp_cuda_relu_bwd;
RT_MUST_USE rt_op_act_fwd rtp_cuda_act_fwd;
RT_MUST_USE rt_op_act_bwd rtp_cuda_act_bwd;
RT_MUST_USE rt_op_bn_fwd_train rtp_cuda_bn_fwd_train;
RT_MUST_USE rt_op_bn_fwd_eval rtp_cuda_bn_fwd_eval;
RT_MUST_USE rt_op_bn_bwd rtp_cuda_bn_bwd;
RT_MUST_USE rt_op_bn_relu_bwd rtp_cuda_bn_relu_bwd;
RT_MUST_USE rt_op_bn_add_fwd_train rtp_cuda_bn_add_fwd_train;
RT_MUST_USE rt_op_bn_add_bwd rtp_cuda_bn_add_bwd;
RT_MUST_USE rt_op_dropout_fwd rtp_cuda_dropout_fwd;
RT_MUST_USE rt_op_dropout_bwd rtp_cuda_dropout_bwd;
RT_MUST_USE rt_op_xent_fwd rtp_cuda_xent_fwd;
RT_MUST_USE rt_op_xent_bwd rtp_cuda_xent_bwd;
RT_MUST_USE rt_op_adam_update rtp_cuda_adam_update;
RT_MUST_USE rt_op_sgd_update rtp_cuda_sgd_update;

/* ---- cuda_ops_train.c: the trainer's device path (no host round trip) ---- */
RT_MUST_USE rt_op_bytes_to_f32 rtp_cuda_bytes_to_f32;
RT_MUST_USE rt_op_clip_grad rtp_cuda_clip_grad;
RT_MUST_USE rt_op_gather_batch rtp_cuda_gather_batch;
RT_MUST_USE rt_op_xent_stats rtp_cuda_xent_stats;
RT_MUST_USE rt_op_amp_scale rtp_cuda_amp_scale;
RT_MUST_USE rt_op_amp_unscale rtp_cuda_amp_unscale;
RT_MUST_USE rt_op_amp_adam_update rtp_cuda_amp_adam_update;
RT_MUST_USE rt_op_amp_sgd_update rtp_cuda_amp_sgd_update;

#endif
