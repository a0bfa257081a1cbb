/* cuda_im2col.cu - unfold/fold of a batch of images for the convolution path without
 * cuDNN (cuda_conv.c: im2col + one cuBLAS call per batch of images). col2im gathers (one
 * thread per input element over the taps that read it): no atomics, deterministic.
 * Bodies in cuda_elem.cuh. */
#include "cuda_elem.cuh"
#include "cuda_launch.cuh"

__global__ void im2col_k(float *col, const float *x, rtp_conv_geom g, size_t per, size_t chw,
                         size_t nstride, size_t ld, size_t n)
{
    RTP_GRID_LOOP(i, n)
    {
        size_t m = rtp_udiv(i, per);
        rtp_im2col_at(i - m * per, col + m * nstride, x + m * chw, g, ld);
    }
}

__global__ void col2im_k(float *dx, const float *col, rtp_conv_geom g, size_t chw, size_t per,
                         size_t n)
{
    RTP_GRID_LOOP(i, n)
    {
        size_t m = rtp_udiv(i, chw);
        rtp_col2im_at(i - m * chw, dx + m * chw, col + m * per, g);
    }
}

extern "C" cudaError_t rtp_k_im2col(cudaStream_t s, float *col, const float *x, rtp_conv_geom g,
                                    int count, size_t nstride, size_t ld)
{
    size_t per = (size_t)g.C * g.R * g.S * g.P * g.Q, chw = (size_t)g.C * g.H * g.W;
    size_t n = per * (size_t)(count > 0 ? count : 0);
    RTP_LAUNCH(n, s, im2col_k, col, x, g, per, chw, nstride, ld, n);
}

extern "C" cudaError_t rtp_k_col2im(cudaStream_t s, float *dx, const float *col, rtp_conv_geom g,
                                    int count)
{
    size_t per = (size_t)g.C * g.R * g.S * g.P * g.Q, chw = (size_t)g.C * g.H * g.W;
    size_t n = chw * (size_t)(count > 0 ? count : 0);
    RTP_LAUNCH(n, s, col2im_k, dx, col, g, chw, per, n);
}
