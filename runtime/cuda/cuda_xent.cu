/* cuda_xent.cu - softmax cross-entropy as cpu_xent.c computes it: per sample, the max
 * subtracted, logsumexp in double, probabilities exp(z - lse), loss lse - z[label].
 * One thread per sample (L is the class count, small); no reduction across threads, so
 * deterministic. A label outside [0, L) cannot be reported from the device: its loss is
 * NaN and its gradient row is probs * scale (the trainer validates labels on upload).
 */
#include <math.h>

#include "cuda_kernels.h"

#define THREADS 128

__global__ void xent_fwd_k(float *loss, float *probs, const float *logits,
                           const int32_t *labels, int N, int L)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    const float *z = logits + (size_t)n * L;
    float *p = probs + (size_t)n * L;
    float m = z[0];
    for (int j = 1; j < L; j++) m = z[j] > m ? z[j] : m;
    double s = 0.0;
    for (int j = 0; j < L; j++) s += exp((double)z[j] - m);
    double lse = m + log(s);
    for (int j = 0; j < L; j++) p[j] = (float)exp((double)z[j] - lse);
    int y = labels[n];
    loss[n] = (y >= 0 && y < L) ? (float)(lse - z[y]) : nanf("");
}

__global__ void xent_bwd_k(float *g, const float *p, const int32_t *labels, float scale, int N,
                           int L)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)N * L) return;
    int n = (int)(i / (size_t)L), j = (int)(i % (size_t)L);
    g[i] = (p[i] - (j == labels[n] ? 1.0f : 0.0f)) * scale;
}

extern "C" cudaError_t rtp_k_xent_fwd(cudaStream_t s, float *loss, float *probs,
                                      const float *logits, const int32_t *labels, int N, int L)
{
    if (N <= 0) return cudaSuccess;
    xent_fwd_k<<<(unsigned)((N + THREADS - 1) / THREADS), THREADS, 0, s>>>(loss, probs, logits,
                                                                         labels, N, L);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_xent_bwd(cudaStream_t s, float *dlogits, const float *probs,
                                      const int32_t *labels, float scale, int N, int L)
{
    size_t n = (size_t)N * L;
    if (n == 0) return cudaSuccess;
    xent_bwd_k<<<(unsigned)((n + THREADS - 1) / THREADS), THREADS, 0, s>>>(dlogits, probs,
                                                                         labels, scale, N, L);
    return cudaGetLastError();
}
