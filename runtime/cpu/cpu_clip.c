/* cpu_clip.c - gradient clipping (clip_grad, rt_backend.h) on the CPU: the reference of
 * the CUDA kernels in cuda_optim.cu.
 *
 * The clamp is elementwise. The norm: the vector is cut into RT_CLIP_PARTS contiguous
 * ranges (rtp_red_range's split: ceil(n / parts) each), each range's squares summed in
 * double (four interleaved sums), the partials added in range order, so the result
 * depends on the length alone, never on the thread count. The clamp and the squares
 * share one pass over the gradient; the scaling is a second one, only when it clips. The factor max_norm / (T + 1e-6) is applied only below 1,
 * as torch's clip_grad_norm_ (which multiplies by the factor clamped to 1: the same).
 */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

rt_status rtp_cpu_clip_grad(rt_backend *b, rt_tensor *grad, rt_tensor *norm, const rt_clip_desc *d,
                            rt_error *err)
{
    (void)err;
    float *g = grad->data, *w = norm->data;
    const size_t n = rt_tensor_numel(grad);
    const int by_norm = d->max_norm > 0.0, by_value = d->clip_value > 0.0;
    const float v = (float)d->clip_value;
    double part[RT_CLIP_PARTS];
    const size_t len = (n + RT_CLIP_PARTS - 1) / RT_CLIP_PARTS;
    /* one pass: the clamp and the range's squares (four running sums, added at the end:
     * a fixed order that does not wait on one addition chain) */
#pragma omp parallel for schedule(static) num_threads(b->threads) if (n >= 65536)
    for (int p = 0; p < RT_CLIP_PARTS; p++) {
        size_t lo = len * (size_t)p, hi = lo + len;
        lo = lo < n ? lo : n, hi = hi < n ? hi : n;
        if (by_value)
            for (size_t i = lo; i < hi; i++) g[i] = g[i] > v ? v : (g[i] < -v ? -v : g[i]);
        double s[4] = {0, 0, 0, 0};
        size_t i = lo;
        if (by_norm) {
            for (; i + 4 <= hi; i += 4)
                for (int k = 0; k < 4; k++) s[k] += (double)g[i + k] * g[i + k];
            for (; i < hi; i++) s[0] += (double)g[i] * g[i];
        }
        part[p] = (s[0] + s[1]) + (s[2] + s[3]);
    }
    w[0] = 0.0f, w[1] = 1.0f;
    if (!by_norm) return RT_OK;
    double ss = 0.0;
    for (int p = 0; p < RT_CLIP_PARTS; p++) ss += part[p];
    const double total = sqrt(ss), coef = d->max_norm / (total + 1e-6);
    w[0] = (float)total;
    memcpy(w + 4, part, sizeof part); /* the scratch words, as the device leaves them */
    if (coef >= 1.0) return RT_OK;
    const float f = (float)coef;
    w[1] = f;
#pragma omp parallel for schedule(static) num_threads(b->threads) if (n >= 65536)
    for (size_t i = 0; i < n; i++) g[i] *= f;
    return RT_OK;
}
