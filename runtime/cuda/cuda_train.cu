/* cuda_train.cu - the kernels of the trainer's device path: gather_batch (with the
 * batcher's crop/flip), the step-statistics row of xent_stats, and dynamic loss scaling
 * (scale, unscale, rule-gated Adam/SGD). Bodies are in cuda_elem.cuh, shared with the
 * host tests and the mock device; every kernel is deterministic, and they equal the CPU
 * backend bit for bit (copies, Philox words, a sequential double sum, power-of-two
 * scaling, the optimiser bodies).
 * No kernel here needs the host: the loss-scaling rule runs in a one-thread kernel on
 * the device state, and the update kernel that follows reads its verdict (last_skipped)
 * and t (steps) from device memory, so a training step never synchronises.
 */
#include "cuda_elem.cuh"
#include "cuda_launch.cuh"

/* ---- kernels ---- */

/* One block per sample (grid-stride over samples): thread 0 draws the crop/flip, the
 * block copies the image. */
__global__ void gather_k(float *images, int32_t *labels, const float *data,
                         const int32_t *data_labels, const int32_t *order, rtp_gather_geom g,
                         const rtp_gather_vars *dv)
{
    __shared__ rtp_aug a;
    if (dv) order += dv->start, g.st = dv->st, g.st2 = dv->st2; /* the same for every thread */
    const size_t img = (size_t)g.C * g.H * g.W;
    for (int i = (int)blockIdx.x; i < g.count; i += (int)gridDim.x) {
        int32_t idx = order[i];
        if (idx < 0 || idx >= g.n) { /* never read through a bad index (uniform branch) */
            if (threadIdx.x == 0) labels[i] = -1;
            continue;
        }
        if (threadIdx.x == 0) {
            labels[i] = data_labels[idx];
            if (g.augment) a = rtp_augment_draw(g.st, (uint32_t)idx, g.pad, g.flip_p);
            if (g.augment && g.cutout > 0) rtp_cutout_draw(g.st2, (uint32_t)idx, g.H, g.W, &a);
        }
        __syncthreads();
        const rtp_aug la = a;
        const float *src = data + (size_t)idx * img;
        float *o = images + (size_t)i * img;
        for (size_t j = threadIdx.x; j < img; j += blockDim.x) rtp_gather_at(j, o, src, &g, la);
        __syncthreads(); /* a is rewritten for the next sample */
    }
}

/* One block: the correct count reduced in integers (any order is exact); the loss sum
 * in sample order, by thread 0 from tiles of RTP_THREADS losses that the whole block
 * loads into shared memory (coalesced), so its serial loop never waits on global memory. */
__global__ void xent_stats_k(float *row, const float *loss, const float *probs,
                             const int32_t *labels, int N, int L, const int32_t *dv)
{
    if (dv) row += (size_t)*dv * RT_STEP_STATS;
    __shared__ int part[RTP_THREADS];
    __shared__ float tile[RTP_THREADS];
    double s = 0.0;
    for (int n0 = 0; n0 < N; n0 += RTP_THREADS) {
        const int k = N - n0 < RTP_THREADS ? N - n0 : RTP_THREADS;
        if ((int)threadIdx.x < k) tile[threadIdx.x] = loss[n0 + (int)threadIdx.x];
        __syncthreads();
        if (threadIdx.x == 0) s = rtp_loss_add(s, tile, k);
        __syncthreads(); /* the tile is reloaded */
    }
    int c = 0;
    for (int n = (int)threadIdx.x; n < N; n += RTP_THREADS)
        c += rtp_xent_correct_at(n, probs, labels, L);
    part[threadIdx.x] = c;
    __syncthreads();
    for (int w = RTP_THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) rtp_xent_stats_row(row, s, N, part[0]);
}

__global__ void amp_scale_k(float *x, size_t n, const rt_amp_state *amp)
{
    const float f = (float)amp->scale;
    RTP_GRID_LOOP(i, n) rtp_amp_scale_at(i, x, f);
}

__global__ void amp_unscale_k(float *g, size_t n, rt_amp_state *amp)
{
    const float inv = (float)(1.0 / amp->scale);
    RTP_GRID_LOOP(i, n)
    {
        if (rtp_amp_unscale_at(i, g, inv)) amp->found_inf = 1; /* every writer stores 1 */
    }
}

__global__ void amp_rule_k(rt_amp_state *amp) { (void)rt_amp_rule_step(amp); }

/* the rule, then Adam's coefficients for the step it decided (two pows, once) */
__global__ void amp_adam_rule_k(rt_amp_state *amp, rtp_amp_adam a0, rt_adam_coef *coef,
                                const rtp_amp_adam *dv)
{
    const rtp_amp_adam a = dv ? *dv : a0;
    (void)rt_amp_rule_step(amp);
    *coef = rtp_amp_adam_coef(&a, amp);
}

__global__ void amp_adam_k(float *p, float *m, float *v, const float *g, size_t n,
                           const rt_amp_state *amp, const rt_adam_coef *coef)
{
    if (amp->last_skipped) return; /* the same for every thread */
    const rt_adam_coef c = *coef;
    RTP_GRID_LOOP(i, n) rtp_adam_at(i, p, m, v, g, &c);
}

__global__ void amp_sgd_k(float *p, float *buf, const float *g, size_t n, const rt_amp_state *amp,
                          rt_sgd_coef c0, const rt_sgd_coef *dv)
{
    if (amp->last_skipped) return;
    const rt_sgd_coef c = rtp_amp_sgd_coef(dv ? *dv : c0, amp);
    RTP_GRID_LOOP(i, n) rtp_sgd_at(i, p, buf, g, &c);
}

__global__ void set_bytes_k(unsigned char *dst, rtp_param_chunk c, size_t n)
{
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = c.b[i];
}

/* ---- launchers ---- */

extern "C" cudaError_t rtp_k_set_bytes(cudaStream_t s, void *dst, rtp_param_chunk c, size_t n)
{
    if (n == 0) return cudaSuccess;
    set_bytes_k<<<1, RTP_THREADS, 0, s>>>((unsigned char *)dst, c, n);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_gather(cudaStream_t s, float *images, int32_t *labels,
                                    const float *data, const int32_t *data_labels,
                                    const int32_t *order, rtp_gather_geom g,
                                    const rtp_gather_vars *dv)
{
    if (g.count <= 0) return cudaSuccess;
    unsigned blocks = (unsigned)(g.count < 65535 ? g.count : 65535);
    gather_k<<<blocks, RTP_THREADS, 0, s>>>(images, labels, data, data_labels, order, g, dv);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_xent_stats(cudaStream_t s, float *row, const float *loss,
                                        const float *probs, const int32_t *labels, int N, int L,
                                        const int32_t *dv)
{
    xent_stats_k<<<1, RTP_THREADS, 0, s>>>(row, loss, probs, labels, N, L, dv);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_amp_scale(cudaStream_t s, float *x, size_t n, const rt_amp_state *amp)
{
    RTP_LAUNCH(n, s, amp_scale_k, x, n, amp);
}

extern "C" cudaError_t rtp_k_amp_unscale(cudaStream_t s, float *g, size_t n, rt_amp_state *amp)
{
    RTP_LAUNCH(n, s, amp_unscale_k, g, n, amp);
}

extern "C" cudaError_t rtp_k_amp_adam(cudaStream_t s, float *p, float *m, float *v, const float *g,
                                      size_t n, rt_amp_state *amp, rtp_amp_adam a,
                                      rt_adam_coef *coef, const rtp_amp_adam *dv)
{
    amp_adam_rule_k<<<1, 1, 0, s>>>(amp, a, coef, dv); /* runs even for n = 0, as on the CPU */
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    RTP_LAUNCH(n, s, amp_adam_k, p, m, v, g, n, amp, coef);
}

extern "C" cudaError_t rtp_k_amp_sgd(cudaStream_t s, float *p, float *buf, const float *g, size_t n,
                                     rt_amp_state *amp, rt_sgd_coef c, const rt_sgd_coef *dv)
{
    amp_rule_k<<<1, 1, 0, s>>>(amp);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    RTP_LAUNCH(n, s, amp_sgd_k, p, buf, g, n, amp, c, dv);
}
