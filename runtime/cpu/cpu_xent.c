/* cpu_xent.c - softmax cross-entropy on the CPU (log-softmax + NLL, per sample).
 *
 * The max is subtracted before exp (stable); the per-sample loss is
 * logsumexp(logits) - logits[label], computed in double; with label smoothing eps,
 * logsumexp - (1 - eps) logits[label] - eps mean(logits), the same in closed form. The caller reduces the (N)
 * losses (mean) on the host in a fixed order.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_internal.h"

rt_status rtp_cpu_xent_fwd(rt_backend *b, rt_tensor *loss, rt_tensor *probs,
                           const rt_tensor *logits, const rt_tensor *labels, const rt_xent_desc *d,
                           rt_error *err)
{
    const float *z = logits->data;
    const int32_t *y = labels->data;
    float *p = probs->data, *l = loss->data;
    for (int n = 0; n < d->N; n++) {
        const float *zn = z + (size_t)n * d->L;
        float *pn = p + (size_t)n * d->L;
        if (y[n] < 0 || y[n] >= d->L)
            return RT_ERR(err, RT_EINVAL, "label %d of sample %d is outside [0, %d)", y[n], n,
                          d->L);
        float m = zn[0];
        for (int j = 1; j < d->L; j++) m = zn[j] > m ? zn[j] : m;
        double s = 0.0;
        for (int j = 0; j < d->L; j++) s += exp((double)zn[j] - m);
        double lse = m + log(s);
        for (int j = 0; j < d->L; j++) pn[j] = (float)exp((double)zn[j] - lse);
        if (d->smoothing == 0.0f) {
            l[n] = (float)(lse - zn[y[n]]);
            continue;
        }
        /* (1 - eps) * (lse - z_y) + eps * mean_j (lse - z_j) */
        double e = d->smoothing, zs = 0.0;
        for (int j = 0; j < d->L; j++) zs += zn[j];
        l[n] = (float)(lse - (1.0 - e) * zn[y[n]] - e * zs / d->L);
    }
    return RT_OK;
}

rt_status rtp_cpu_xent_bwd(rt_backend *b, rt_tensor *dlogits, const rt_tensor *probs,
                           const rt_tensor *labels, float scale, const rt_xent_desc *d,
                           rt_error *err)
{
    const float *p = probs->data;
    const int32_t *y = labels->data;
    float *g = dlogits->data;
    /* the smoothed target: hit for the label, off for the others (1 and 0 unsmoothed) */
    const float off = d->smoothing / (float)d->L, hit = 1.0f - d->smoothing + off;
    for (int n = 0; n < d->N; n++)
        for (int j = 0; j < d->L; j++) {
            size_t i = (size_t)n * d->L + j;
            g[i] = (p[i] - (j == y[n] ? hit : off)) * scale;
        }
    return RT_OK;
}

rt_status rtp_cpu_xent_stats(rt_backend *b, rt_tensor *stats, int row, const rt_tensor *loss,
                             const rt_tensor *probs, const rt_tensor *labels, const rt_xent_desc *d,
                             rt_error *err)
{
    const float *l = loss->data, *p = probs->data;
    const int32_t *y = labels->data;
    double s = 0.0;
    int correct = 0;
    for (int n = 0; n < d->N; n++) {
        s += l[n];
        const float *pn = p + (size_t)n * d->L;
        int best = 0;
        for (int j = 1; j < d->L; j++)
            if (pn[j] > pn[best]) best = j;
        correct += best == y[n];
    }
    double mean = s / d->N;
    float *r = (float *)stats->data + (size_t)row * RT_STEP_STATS;
    memcpy(r, &mean, sizeof mean); /* words 0-1: the double's bytes, exactly */
    r[2] = (float)correct;
    r[3] = 0.0f;
    return RT_OK;
}
