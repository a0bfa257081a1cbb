/* cuda_xent.cu - softmax cross-entropy as cpu_xent.c computes it (bodies in
 * cuda_elem.cuh): one thread per sample for the forward pass (L is small; no reduction
 * across threads, so deterministic), one per logit for the backward pass. A label
 * outside [0, L) cannot be reported from the device: its loss is NaN (the trainer
 * validates labels before upload). */
#include "cuda_elem.cuh"
#include "cuda_launch.cuh"

__global__ void xent_fwd_k(float *loss, float *probs, const float *logits, const int32_t *labels,
                           int N, int L, float eps)
{
    RTP_GRID_LOOP(n, N) rtp_xent_fwd_at((int)n, loss, probs, logits, labels, L, eps);
}

__global__ void xent_bwd_k(float *g, const float *p, const int32_t *labels, float scale, size_t n,
                           int L, float eps)
{
    RTP_GRID_LOOP(i, n) rtp_xent_bwd_at(i, g, p, labels, scale, L, eps);
}

extern "C" cudaError_t rtp_k_xent_fwd(cudaStream_t s, float *loss, float *probs,
                                      const float *logits, const int32_t *labels, int N, int L,
                                      float eps)
{
    RTP_LAUNCH((size_t)(N > 0 ? N : 0), s, xent_fwd_k, loss, probs, logits, labels, N, L, eps);
}

extern "C" cudaError_t rtp_k_xent_bwd(cudaStream_t s, float *dlogits, const float *probs,
                                      const int32_t *labels, float scale, int N, int L, float eps)
{
    size_t n = (size_t)N * L;
    RTP_LAUNCH(n, s, xent_bwd_k, dlogits, probs, labels, scale, n, L, eps);
}
