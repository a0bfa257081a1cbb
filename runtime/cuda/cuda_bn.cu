/* cuda_bn.cu - batchnorm2d (PyTorch BatchNorm2d semantics), as cpu_bn.c computes it.
 *
 * Own kernels rather than cuDNN's batch norm: the CPU's formulas in the CPU's
 * precisions (statistics in double, the per-element transform in float), so the
 * cross-check stays tight, and a deterministic reduction (one block per channel, fixed
 * strided split, fixed tree), which bitwise resume needs. Bodies in cuda_elem.cuh;
 * tests/gpu/test_kernels_host.cu replays the same split and tree on the CPU.
 */
#include "cuda_elem.cuh"
#include "cuda_launch.cuh"

/* Sum over the block of each thread's v (the tree of rtp_tree_sum_host). */
__device__ static double block_sum(double *part, double v)
{
    part[threadIdx.x] = v;
    __syncthreads();
    for (int w = RTP_THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    double r = part[0];
    __syncthreads(); /* part is reused by the next call */
    return r;
}

__global__ void bn_fwd_train_k(float *Y, float *SM, float *SI, float *RM, float *RV,
                               const float *X, const float *G, const float *Bt, int N, int C,
                               int HW, float eps, float momentum)
{
    __shared__ double part[RTP_THREADS];
    const int c = blockIdx.x, t = threadIdx.x;
    const size_t M = (size_t)N * HW;
    double s = block_sum(part, rtp_bn_part_sum(t, RTP_THREADS, X, N, C, c, HW));
    double ss = block_sum(part, rtp_bn_part_sq(t, RTP_THREADS, X, N, C, c, HW, s / (double)M));
    float g, sh;
    rtp_bn_finish(c, s, ss, M, eps, momentum, G, Bt, t == 0 ? SM : NULL, SI, RM, RV, &g, &sh);
    rtp_bn_part_apply(t, RTP_THREADS, Y, X, N, C, c, HW, g, sh);
}

__global__ void bn_fwd_eval_k(float *Y, const float *X, const float *G, const float *Bt,
                              const float *RM, const float *RV, size_t n, int C, int HW,
                              float eps)
{
    RTP_GRID_LOOP(i, n) rtp_bn_eval_at(i, Y, X, G, Bt, RM, RV, C, HW, eps);
}

__global__ void bn_bwd_k(float *DX, float *DG, float *DB, const float *DY, const float *X,
                         const float *G, const float *SM, const float *SI, int N, int C,
                         int HW)
{
    __shared__ double part[RTP_THREADS];
    const int c = blockIdx.x, t = threadIdx.x;
    const float mean = SM[c], inv = SI[c];
    double sdy, sdyx;
    rtp_bn_bwd_part(t, RTP_THREADS, DY, X, N, C, c, HW, mean, inv, &sdy, &sdyx);
    sdy = block_sum(part, sdy);
    sdyx = block_sum(part, sdyx);
    if (t == 0) {
        DB[c] = (float)sdy;
        DG[c] = (float)sdyx;
    }
    rtp_bn_bwd_apply(t, RTP_THREADS, DX, DY, X, N, C, c, HW, mean, inv, G[c], sdy, sdyx);
}

extern "C" cudaError_t rtp_k_bn_fwd_train(cudaStream_t s, float *y, float *save_mean,
                                          float *save_invstd, float *running_mean,
                                          float *running_var, const float *x,
                                          const float *gamma, const float *beta, int N, int C,
                                          int HW, float eps, float momentum)
{
    if (C <= 0) return cudaSuccess;
    bn_fwd_train_k<<<(unsigned)C, RTP_THREADS, 0, s>>>(y, save_mean, save_invstd, running_mean,
                                                       running_var, x, gamma, beta, N, C, HW,
                                                       eps, momentum);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_bn_fwd_eval(cudaStream_t s, float *y, const float *x,
                                         const float *gamma, const float *beta,
                                         const float *running_mean, const float *running_var,
                                         int N, int C, int HW, float eps)
{
    size_t n = (size_t)N * C * HW;
    RTP_LAUNCH(n, s, bn_fwd_eval_k, y, x, gamma, beta, running_mean, running_var, n, C, HW, eps);
}

extern "C" cudaError_t rtp_k_bn_bwd(cudaStream_t s, float *dx, float *dgamma, float *dbeta,
                                    const float *dy, const float *x, const float *gamma,
                                    const float *save_mean, const float *save_invstd, int N,
                                    int C, int HW)
{
    if (C <= 0) return cudaSuccess;
    bn_bwd_k<<<(unsigned)C, RTP_THREADS, 0, s>>>(dx, dgamma, dbeta, dy, x, gamma, save_mean,
                                                 save_invstd, N, C, HW);
    return cudaGetLastError();
}
