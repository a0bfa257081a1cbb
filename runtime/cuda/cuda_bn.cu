/* cuda_bn.cu - batchnorm2d (PyTorch BatchNorm2d semantics), as cpu_bn.c computes it.
 *
 * Own kernels rather than cuDNN's batch norm: the same formulas as the CPU in the same
 * precisions (statistics in double, the per-element transform in float), so the
 * cross-check tolerances stay tight, and the reduction is deterministic (one block per
 * channel, fixed strided split, fixed tree), which bitwise resume needs.
 */
#include "cuda_kernels.h"

#define THREADS 256

/* Sum of part[0..THREADS) into part[0] (all threads of the block call it). */
__device__ static double block_sum(double *part, double v)
{
    part[threadIdx.x] = v;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    double r = part[0];
    __syncthreads(); /* part is reused by the next call */
    return r;
}

__device__ static size_t at(size_t j, int C, int c, int HW)
{
    size_t n = j / (size_t)HW, i = j % (size_t)HW;
    return (n * C + c) * HW + i;
}

__global__ void bn_fwd_train_k(float *Y, float *SM, float *SI, float *RM, float *RV,
                               const float *X, const float *G, const float *Bt, int N, int C,
                               int HW, float eps, float momentum)
{
    __shared__ double part[THREADS];
    const int c = blockIdx.x;
    const size_t M = (size_t)N * HW;
    double s = 0.0;
    for (size_t j = threadIdx.x; j < M; j += THREADS) s += X[at(j, C, c, HW)];
    double mean = block_sum(part, s) / (double)M;
    double ss = 0.0;
    for (size_t j = threadIdx.x; j < M; j += THREADS) {
        double dv = X[at(j, C, c, HW)] - mean;
        ss += dv * dv;
    }
    ss = block_sum(part, ss);
    double var = ss / (double)M;
    float inv = (float)(1.0 / sqrt(var + eps));
    float mf = (float)mean, g = G[c] * inv, sh = Bt[c] - mf * g;
    for (size_t j = threadIdx.x; j < M; j += THREADS) {
        size_t k = at(j, C, c, HW);
        Y[k] = X[k] * g + sh;
    }
    if (threadIdx.x == 0) {
        SM[c] = mf;
        SI[c] = inv;
        double unbiased = M > 1 ? ss / (double)(M - 1) : var;
        RM[c] = (float)((1.0 - momentum) * RM[c] + momentum * mean);
        RV[c] = (float)((1.0 - momentum) * RV[c] + momentum * unbiased);
    }
}

__global__ void bn_fwd_eval_k(float *Y, const float *X, const float *G, const float *Bt,
                              const float *RM, const float *RV, size_t n, int C, int HW,
                              float eps)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)((i / (size_t)HW) % (size_t)C);
        float g = G[c] / sqrtf(RV[c] + eps), sh = Bt[c] - RM[c] * g;
        Y[i] = X[i] * g + sh;
    }
}

__global__ void bn_bwd_k(float *DX, float *DG, float *DB, const float *DY, const float *X,
                         const float *G, const float *SM, const float *SI, int N, int C,
                         int HW)
{
    __shared__ double part[THREADS];
    const int c = blockIdx.x;
    const size_t M = (size_t)N * HW;
    const float mean = SM[c], inv = SI[c];
    double sdy = 0.0, sdyx = 0.0;
    for (size_t j = threadIdx.x; j < M; j += THREADS) {
        size_t k = at(j, C, c, HW);
        sdy += DY[k];
        sdyx += (double)DY[k] * ((X[k] - mean) * inv);
    }
    sdy = block_sum(part, sdy);
    sdyx = block_sum(part, sdyx);
    if (threadIdx.x == 0) {
        DB[c] = (float)sdy;
        DG[c] = (float)sdyx;
    }
    const float kk = G[c] * inv / (float)M, a = (float)sdy, bq = (float)sdyx;
    for (size_t j = threadIdx.x; j < M; j += THREADS) {
        size_t k = at(j, C, c, HW);
        float xh = (X[k] - mean) * inv;
        DX[k] = kk * ((float)M * DY[k] - a - xh * bq);
    }
}

/* ---- launchers ---- */

extern "C" cudaError_t rtp_k_bn_fwd_train(cudaStream_t s, float *y, float *save_mean,
                                          float *save_invstd, float *running_mean,
                                          float *running_var, const float *x,
                                          const float *gamma, const float *beta, int N, int C,
                                          int HW, float eps, float momentum)
{
    if (C <= 0) return cudaSuccess;
    bn_fwd_train_k<<<(unsigned)C, THREADS, 0, s>>>(y, save_mean, save_invstd, running_mean,
                                                   running_var, x, gamma, beta, N, C, HW, eps,
                                                   momentum);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_bn_fwd_eval(cudaStream_t s, float *y, const float *x,
                                         const float *gamma, const float *beta,
                                         const float *running_mean, const float *running_var,
                                         int N, int C, int HW, float eps)
{
    size_t n = (size_t)N * C * HW;
    if (n == 0) return cudaSuccess;
    size_t b = (n + THREADS - 1) / THREADS;
    bn_fwd_eval_k<<<(unsigned)(b > 1048560 ? 1048560 : b), THREADS, 0, s>>>(
        y, x, gamma, beta, running_mean, running_var, n, C, HW, eps);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_bn_bwd(cudaStream_t s, float *dx, float *dgamma, float *dbeta,
                                    const float *dy, const float *x, const float *gamma,
                                    const float *save_mean, const float *save_invstd, int N,
                                    int C, int HW)
{
    if (C <= 0) return cudaSuccess;
    bn_bwd_k<<<(unsigned)C, THREADS, 0, s>>>(dx, dgamma, dbeta, dy, x, gamma, save_mean,
                                             save_invstd, N, C, HW);
    return cudaGetLastError();
}
