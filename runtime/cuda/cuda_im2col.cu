/* cuda_im2col.cu - unfold/fold of one image for the convolution path without cuDNN
 * (cuda_conv.c: im2col + cuBLAS per image, as cpu_conv.c does on the CPU).
 * col2im gathers (one thread per input element, over the (r, s) taps that read it),
 * so it needs no atomics and is deterministic.
 */
#include "cuda_kernels.h"

#define THREADS 256

static unsigned blocks_for(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < 1 ? 1 : (b > 1048560 ? 1048560 : b));
}

/* col row (c, r, s), column (p, q) = x[c, p*stride - pad + r, q*stride - pad + s] or 0 */
__global__ void im2col_k(float *col, const float *x, rtp_conv_geom g)
{
    const size_t PQ = (size_t)g.P * g.Q, n = (size_t)g.C * g.R * g.S * PQ;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t row = i / PQ, pq = i % PQ;
        int s = (int)(row % g.S), r = (int)((row / g.S) % g.R), c = (int)(row / g.S / g.R);
        int p = (int)(pq / g.Q), q = (int)(pq % g.Q);
        int ih = p * g.stride - g.pad + r, iw = q * g.stride - g.pad + s;
        col[i] = (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W)
                     ? x[((size_t)c * g.H + ih) * g.W + iw]
                     : 0.0f;
    }
}

__global__ void col2im_k(float *dx, const float *col, rtp_conv_geom g)
{
    const size_t PQ = (size_t)g.P * g.Q, n = (size_t)g.C * g.H * g.W;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int iw = (int)(i % g.W), ih = (int)((i / g.W) % g.H), c = (int)(i / g.W / g.H);
        float acc = 0.0f;
        for (int r = 0; r < g.R; r++) {
            int t = ih + g.pad - r; /* = p * stride */
            if (t < 0 || t % g.stride) continue;
            int p = t / g.stride;
            if (p >= g.P) continue;
            for (int s = 0; s < g.S; s++) {
                int u = iw + g.pad - s;
                if (u < 0 || u % g.stride) continue;
                int q = u / g.stride;
                if (q >= g.Q) continue;
                acc = acc + col[((size_t)(c * g.R + r) * g.S + s) * PQ + (size_t)p * g.Q + q];
            }
        }
        dx[i] = acc;
    }
}

extern "C" cudaError_t rtp_k_im2col(cudaStream_t s, float *col, const float *x, rtp_conv_geom g)
{
    size_t n = (size_t)g.C * g.R * g.S * g.P * g.Q;
    if (n == 0) return cudaSuccess;
    im2col_k<<<blocks_for(n), THREADS, 0, s>>>(col, x, g);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_col2im(cudaStream_t s, float *dx, const float *col,
                                    rtp_conv_geom g)
{
    size_t n = (size_t)g.C * g.H * g.W;
    if (n == 0) return cudaSuccess;
    col2im_k<<<blocks_for(n), THREADS, 0, s>>>(dx, col, g);
    return cudaGetLastError();
}
