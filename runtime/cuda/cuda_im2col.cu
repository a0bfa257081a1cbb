/* cuda_im2col.cu - unfold/fold of one image for the convolution path without cuDNN
 * (cuda_conv.c: im2col + cuBLAS per image, as cpu_conv.c does on the CPU). col2im
 * gathers (one thread per input element over the taps that read it): no atomics,
 * deterministic. Bodies in cuda_elem.cuh. */
#include "cuda_elem.cuh"
#include "cuda_launch.cuh"

__global__ void im2col_k(float *col, const float *x, rtp_conv_geom g, size_t n)
{
    RTP_GRID_LOOP(i, n) rtp_im2col_at(i, col, x, g);
}

__global__ void col2im_k(float *dx, const float *col, rtp_conv_geom g, size_t n)
{
    RTP_GRID_LOOP(i, n) rtp_col2im_at(i, dx, col, g);
}

extern "C" cudaError_t rtp_k_im2col(cudaStream_t s, float *col, const float *x, rtp_conv_geom g)
{
    size_t n = (size_t)g.C * g.R * g.S * g.P * g.Q;
    RTP_LAUNCH(n, s, im2col_k, col, x, g, n);
}

extern "C" cudaError_t rtp_k_col2im(cudaStream_t s, float *dx, const float *col,
                                    rtp_conv_geom g)
{
    size_t n = (size_t)g.C * g.H * g.W;
    RTP_LAUNCH(n, s, col2im_k, dx, col, g, n);
}
