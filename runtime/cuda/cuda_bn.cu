/* cuda_bn.cu - batchnorm2d (PyTorch BatchNorm2d semantics), as cpu_bn.c computes it.
 *
 * Own kernels rather than cuDNN's batch norm: the CPU's formulas (statistics finished in
 * double, the per-element transform in float), so the cross-check stays tight, and a
 * deterministic reduction, which bitwise resume needs. The statistics are reduced in two
 * levels (cuda_kernels.h, cuda_elem.cuh): P blocks per channel each sum a fixed range,
 * so a layer of 16-64 channels still fills a GPU of 100+ SMs, and one thread per channel
 * combines the P partials in a fixed order. Forward: part (sum and squares about the
 * block's own mean, one pass over the data and a second from cache), finish (statistics),
 * apply (elementwise). Backward: part (sum dy, sum dy * xhat), rtp_k_red_finish
 * (dbeta, dgamma), apply. A relu fused after the norm (rt_bn_desc.relu) is applied by
 * apply; its backward (bn_relu_bwd) passes beta, and part and apply recompute the mask
 * from x (rtp_bn_mask), as cpu_bn.c does. tests/gpu/test_kernels_host.cu replays the same split and
 * trees on the CPU (rtp_red_block_host).
 */
#include "cuda_elem.cuh"
#include "cuda_launch.cuh"

__global__ void bn_stats_part_k(double *part, const float *X, int N, int C, int HW, int c0, int P)
{
    __shared__ double sh[RTP_THREADS];
    const int p = (int)blockIdx.x, w = (int)blockIdx.y, c = c0 + w, t = (int)threadIdx.x;
    size_t lo, hi;
    rtp_red_range((size_t)N * HW, P, p, &lo, &hi);
    double s = rtp_block_sum(sh, rtp_red_sum_part(t, RTP_THREADS, X, C, c, HW, lo, hi));
    const float m = rtp_red_shift(s, lo, hi);
    double q = rtp_block_sum(sh, rtp_red_sq_part(t, RTP_THREADS, X, C, c, HW, lo, hi, m));
    if (t == 0) {
        part[2 * ((size_t)w * P + p)] = s;
        part[2 * ((size_t)w * P + p) + 1] = q;
    }
}

__global__ void bn_stats_finish_k(const double *part, float *SM, float *SI, float *RM, float *RV,
                                  size_t M, int c0, int cw, int P, float eps, float momentum)
{
    RTP_GRID_LOOP(w, cw)
    rtp_bn_stats_finish_at((int)w, part, P, M, eps, momentum, SM, SI, RM, RV, c0);
}

__global__ void bn_apply_k(float *Y, const float *X, const float *G, const float *Bt,
                           const float *SM, const float *SI, size_t n, int C, int HW, float neg)
{
    RTP_GRID_LOOP(i, n) rtp_bn_apply_at(i, Y, X, G, Bt, SM, SI, C, HW, neg);
}

__global__ void bn_fwd_eval_k(float *Y, const float *X, const float *G, const float *Bt,
                              const float *RM, const float *RV, size_t n, int C, int HW, float eps,
                              float neg)
{
    RTP_GRID_LOOP(i, n) rtp_bn_eval_at(i, Y, X, G, Bt, RM, RV, C, HW, eps, neg);
}

__global__ void bn_bwd_part_k(double *part, const float *DY, const float *X, const float *G,
                              const float *Bt, const float *SM, const float *SI, int N, int C,
                              int HW, int c0, int P)
{
    __shared__ double sh[RTP_THREADS];
    const int p = (int)blockIdx.x, w = (int)blockIdx.y, c = c0 + w, t = (int)threadIdx.x;
    size_t lo, hi;
    rtp_red_range((size_t)N * HW, P, p, &lo, &hi);
    double a, b;
    rtp_bn_bwd_part(t, RTP_THREADS, DY, X, C, c, HW, lo, hi, SM[c], SI[c],
                    rtp_bn_mask_of(c, G, Bt, SM, SI), &a, &b);
    a = rtp_block_sum(sh, a);
    b = rtp_block_sum(sh, b);
    if (t == 0) {
        part[2 * ((size_t)w * P + p)] = a;
        part[2 * ((size_t)w * P + p) + 1] = b;
    }
}

__global__ void bn_bwd_apply_k(float *DX, const float *DY, const float *X, const float *G,
                               const float *Bt, const float *SM, const float *SI, const float *DG,
                               const float *DB, size_t n, int C, int HW, size_t M)
{
    RTP_GRID_LOOP(i, n) rtp_bn_bwd_apply_at(i, DX, DY, X, G, Bt, SM, SI, DG, DB, C, HW, M);
}

extern "C" cudaError_t rtp_k_bn_stats_part(cudaStream_t s, double *part, const float *x, int N,
                                           int C, int HW, int c0, int cw, int P)
{
    if (cw <= 0) return cudaSuccess;
    bn_stats_part_k<<<dim3((unsigned)P, (unsigned)cw), RTP_THREADS, 0, s>>>(part, x, N, C, HW, c0,
                                                                            P);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_bn_stats_finish(cudaStream_t s, const double *part, float *save_mean,
                                             float *save_invstd, float *running_mean,
                                             float *running_var, int N, int HW, int c0, int cw,
                                             int P, float eps, float momentum)
{
    RTP_LAUNCH((size_t)(cw > 0 ? cw : 0), s, bn_stats_finish_k, part, save_mean, save_invstd,
               running_mean, running_var, (size_t)N * HW, c0, cw, P, eps, momentum);
}

extern "C" cudaError_t rtp_k_bn_apply(cudaStream_t s, float *y, const float *x, const float *gamma,
                                      const float *beta, const float *save_mean,
                                      const float *save_invstd, int N, int C, int HW, int relu)
{
    size_t n = (size_t)N * C * HW;
    RTP_LAUNCH(n, s, bn_apply_k, y, x, gamma, beta, save_mean, save_invstd, n, C, HW,
               relu ? 0.0f : 1.0f);
}

extern "C" cudaError_t rtp_k_bn_fwd_eval(cudaStream_t s, float *y, const float *x,
                                         const float *gamma, const float *beta,
                                         const float *running_mean, const float *running_var, int N,
                                         int C, int HW, float eps, int relu)
{
    size_t n = (size_t)N * C * HW;
    RTP_LAUNCH(n, s, bn_fwd_eval_k, y, x, gamma, beta, running_mean, running_var, n, C, HW, eps,
               relu ? 0.0f : 1.0f);
}

extern "C" cudaError_t rtp_k_bn_bwd_part(cudaStream_t s, double *part, const float *dy,
                                         const float *x, const float *gamma, const float *beta,
                                         const float *save_mean, const float *save_invstd, int N,
                                         int C, int HW, int c0, int cw, int P)
{
    if (cw <= 0) return cudaSuccess;
    bn_bwd_part_k<<<dim3((unsigned)P, (unsigned)cw), RTP_THREADS, 0, s>>>(
        part, dy, x, gamma, beta, save_mean, save_invstd, N, C, HW, c0, P);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_bn_bwd_apply(cudaStream_t s, float *dx, const float *dy,
                                          const float *x, const float *gamma, const float *beta,
                                          const float *save_mean, const float *save_invstd,
                                          const float *dgamma, const float *dbeta, int N, int C,
                                          int HW)
{
    size_t n = (size_t)N * C * HW;
    RTP_LAUNCH(n, s, bn_bwd_apply_k, dx, dy, x, gamma, beta, save_mean, save_invstd, dgamma, dbeta,
               n, C, HW, (size_t)N * HW);
}
