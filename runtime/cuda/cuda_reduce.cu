/* cuda_reduce.cu - the sums over a dimension that are not batch norm's: the conv bias
 * gradient (per channel, in two levels, as cuda_bn.cu's statistics: P blocks per channel,
 * then one thread per channel adding the P partials in a fixed order) and its finish,
 * which batch norm's backward shares; the dense bias gradient (column sums, staged
 * through shared memory in the CPU's row order). Bodies in cuda_elem.cuh; deterministic
 * (no atomics, every order fixed by the shape).
 */
#include "cuda_elem.cuh"
#include "cuda_launch.cuh"

__global__ void chan_sum_part_k(double *part, const float *X, int N, int C, int HW, int c0, int P)
{
    __shared__ double sh[RTP_THREADS];
    const int p = (int)blockIdx.x, w = (int)blockIdx.y, t = (int)threadIdx.x;
    size_t lo, hi;
    rtp_red_range((size_t)N * HW, P, p, &lo, &hi);
    double s = rtp_block_sum(sh, rtp_red_sum_part(t, RTP_THREADS, X, C, c0 + w, HW, lo, hi));
    if (t == 0) {
        part[2 * ((size_t)w * P + p)] = s;
        part[2 * ((size_t)w * P + p) + 1] = 0.0;
    }
}

__global__ void red_finish_k(const double *part, float *out0, float *out1, int c0, int cw, int P)
{
    RTP_GRID_LOOP(w, cw) rtp_red_finish_at((int)w, part, P, out0, out1, c0);
}

__global__ void col_sums_k(float *db, const float *dy, int N, int O)
{
    __shared__ float tile[RTP_COLS_ROWS * RTP_COLS_LD];
    const int o0 = (int)blockIdx.x * RTP_COLS_W, t = (int)threadIdx.x;
    float s = 0.0f;
    for (int r0 = 0; r0 < N; r0 += RTP_COLS_ROWS) {
        rtp_cols_load(t, RTP_THREADS, tile, dy, N, O, r0, o0);
        __syncthreads();
        if (t < RTP_COLS_W)
            s = rtp_cols_add(s, tile, N - r0 < RTP_COLS_ROWS ? N - r0 : RTP_COLS_ROWS, t);
        __syncthreads(); /* the tile is reloaded */
    }
    if (t < RTP_COLS_W && o0 + t < O) db[o0 + t] = s;
}

extern "C" cudaError_t rtp_k_chan_sum_part(cudaStream_t s, double *part, const float *x, int N,
                                           int C, int HW, int c0, int cw, int P)
{
    if (cw <= 0) return cudaSuccess;
    chan_sum_part_k<<<dim3((unsigned)P, (unsigned)cw), RTP_THREADS, 0, s>>>(part, x, N, C, HW, c0,
                                                                            P);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_red_finish(cudaStream_t s, const double *part, float *out0,
                                        float *out1, int c0, int cw, int P)
{
    RTP_LAUNCH((size_t)(cw > 0 ? cw : 0), s, red_finish_k, part, out0, out1, c0, cw, P);
}

extern "C" cudaError_t rtp_k_col_sums(cudaStream_t s, float *db, const float *dy, int N, int O)
{
    if (O <= 0) return cudaSuccess;
    col_sums_k<<<(unsigned)((O + RTP_COLS_W - 1) / RTP_COLS_W), RTP_THREADS, 0, s>>>(db, dy, N, O);
    return cudaGetLastError();
}
