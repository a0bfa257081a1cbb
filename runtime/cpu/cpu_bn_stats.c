/* cpu_bn_stats.c - batch-norm statistics on the CPU as per-plane moments (rt_backend.h
 * RT_MOMENT_FLOATS): each (n, c) plane's mean and M2 (sum of squared deviations), merged
 * per channel in image order.
 *
 * A plane's sums of x - s and (x - s)^2, s its first value (the shift keeps the sum of
 * squares from cancelling against the mean's square), are taken in 64 float partial
 * sums (vectorised) and gathered in a fixed tree, the last steps in double. The
 * convolution takes them from each output image while it is in cache
 * (conv2d_fwd_moments), the batch norm from its input otherwise: the same function on the same
 * values, so a batch norm after a convolution gets the same statistics either way, bit for bit, for
 * any thread count.
 */
#include "cpu_internal.h"

/* Partial sums per sum: 4 vectors of 16 (8 of 8 with AVX2), so the additions are not one
 * dependency chain; the sums are elementwise, the same bits with either vector width. */
#define LANES 64
_Static_assert(LANES == 64, "shifted_sums gathers 64 partial sums");

/* sum of (x - s) and of (x - s)^2 over n floats: LANES partial sums each, fixed order */
RTP_SPAN static void shifted_sums(const float *restrict x, size_t n, float s, double *sum,
                                  double *sumsq)
{
    float a[LANES] = {0}, q[LANES] = {0};
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) {
            float v = x[i + j] - s;
            a[j] += v;
            q[j] += v * v;
        }
    /* the partials gathered in a fixed tree: 64 -> 16 in float, 16 -> 1 in double */
    float a16[16], q16[16];
    for (int j = 0; j < 16; j++) {
        a16[j] = (a[j] + a[j + 16]) + (a[j + 32] + a[j + 48]);
        q16[j] = (q[j] + q[j + 16]) + (q[j + 32] + q[j + 48]);
    }
    double da[8], dq[8];
    for (int j = 0; j < 8; j++) {
        da[j] = (double)a16[j] + (double)a16[j + 8];
        dq[j] = (double)q16[j] + (double)q16[j + 8];
    }
    for (int w = 4; w > 0; w /= 2)
        for (int j = 0; j < w; j++) da[j] += da[j + w], dq[j] += dq[j + w];
    double ta = da[0], tq = dq[0];
    for (; i < n; i++) {
        float v = x[i] - s;
        ta += v, tq += (double)v * v;
    }
    *sum = ta, *sumsq = tq;
}

/* shifted_sums for n < LANES, the same bits: no vector pass, so its partials are all
 * +0 and the sums are the scalar tail alone (MobileNetV2's planes from 4x4 down to 1x1
 * are millions a step: the call and the 128 zeroed partials were most of their cost) */
static inline void short_sums(const float *x, size_t n, float s, double *sum, double *sumsq)
{
    double ta = 0.0, tq = 0.0;
    for (size_t i = 0; i < n; i++) {
        float v = x[i] - s;
        ta += v, tq += (double)v * v;
    }
    *sum = ta, *sumsq = tq;
}

void rtp_cpu_plane_moments(double *restrict mom, const float *x, int planes, size_t n)
{
    for (int p = 0; p < planes; p++, x += n, mom += RT_MOMENT_FLOATS / 2) {
        double s, q;
        if (n < LANES) short_sums(x, n, x[0], &s, &q);
        else shifted_sums(x, n, x[0], &s, &q);
        double d = s / (double)n, m2 = q - s * d;
        mom[0] = (double)x[0] + d;
        mom[1] = m2 > 0.0 ? m2 : 0.0;
    }
}

void rtp_cpu_moments_add(rtp_moments *acc, const double *mom, size_t n)
{
    if (acc->count == 0.0) {
        acc->mean = mom[0], acc->m2 = mom[1], acc->count = (double)n;
        return;
    }
    double tot = acc->count + (double)n, delta = mom[0] - acc->mean;
    acc->mean += delta * ((double)n / tot);
    acc->m2 += mom[1] + delta * delta * (acc->count * (double)n / tot);
    acc->count = tot;
}
