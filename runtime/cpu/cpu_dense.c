/* cpu_dense.c - dense (PyTorch Linear) layers on the CPU: three sgemm calls.
 *
 * out(N,O) = in(N,F) w(O,F)^T + bias; din = dout w; dw = dout^T in; dbias = sum_n dout.
 * OpenBLAS threads these itself (we are outside any OpenMP region here).
 */
#include <cblas.h>

#include "cpu_conv_amx.h"
#include "cpu_dp.h"
#include "cpu_internal.h"

/* bf16 on AMX tiles (cpu_dense_amx.c) when the backend has them */
static int amx(const rt_backend *b)
{
#ifdef KILN_CONVK_X86
    return ((const rtp_cpu *)b->impl)->amx;
#else
    return 0;
#endif
}

/* bf16 on VDPBF16PS (cpu_dense_dp.c) where AVX512_BF16 is and AMX is not */
static int dp(const rt_backend *b)
{
#ifdef KILN_CONVK_X86
    return !amx(b) && ((const rtp_cpu *)b->impl)->dp;
#else
    return 0;
#endif
}

/* bf16 (cpu_bf16.c): *ws is the workspace that rtp_cpu_dense_workspace reserved (NULL
 * for fp32); without AMX or VDPBF16PS the op's two inputs *x and *y are rounded into it,
 * and then point at those copies (xs, ys). AMX tiles and VDPBF16PS take them as they
 * are. */
static rt_status bf16_inputs(rt_backend *b, const rt_dense_desc *d, float **ws, const rt_tensor **x,
                             rt_tensor *xs, const rt_tensor **y, rt_tensor *ys, rt_error *err)
{
    *ws = NULL;
    if (!rtp_cpu_bf16(b)) return RT_OK;
    if (!(*ws = rtp_cpu_scratch(b, rtp_cpu_dense_workspace(b, d), err)))
        return err ? err->code : RT_EINVAL;
    if (amx(b) || dp(b)) return RT_OK;
    float *at = *ws;
    *xs = rtp_cpu_bf16_stage(b, &at, *x);
    *ys = rtp_cpu_bf16_stage(b, &at, *y);
    *x = xs, *y = ys;
    return RT_OK;
}

rt_status rtp_cpu_dense_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in, const rt_tensor *w,
                            const rt_tensor *bias, const rt_dense_desc *d, rt_error *err)
{
    float *ws;
    rt_tensor xs, wsd;
    RT_TRY(bf16_inputs(b, d, &ws, &in, &xs, &w, &wsd, err));
#ifdef KILN_CONVK_X86
    if (amx(b)) {
        rtp_cpu_amx_dense_fwd(b, ws, out, in, w, bias, d);
        return RT_OK;
    }
    if (dp(b)) {
        rtp_cpu_dp_dense_fwd(b, ws, out, in, w, bias, d);
        return RT_OK;
    }
#endif
    float *y = out->data;
    if (bias) {
        const float *bs = bias->data;
        for (int n = 0; n < d->N; n++)
            for (int o = 0; o < d->O; o++) y[(size_t)n * d->O + o] = bs[o];
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d->N, d->O, d->F, 1.0f, in->data, d->F,
                w->data, d->F, bias ? 1.0f : 0.0f, y, d->O);
    return RT_OK;
}

rt_status rtp_cpu_dense_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                 const rt_tensor *w, const rt_dense_desc *d, rt_error *err)
{
    float *ws;
    rt_tensor dys, wsd;
    RT_TRY(bf16_inputs(b, d, &ws, &dout, &dys, &w, &wsd, err));
#ifdef KILN_CONVK_X86
    if (amx(b)) {
        rtp_cpu_amx_dense_bwd_data(b, ws, din, dout, w, d);
        return RT_OK;
    }
    if (dp(b)) {
        rtp_cpu_dp_dense_bwd_data(b, ws, din, dout, w, d);
        return RT_OK;
    }
#endif
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d->N, d->F, d->O, 1.0f, dout->data, d->O,
                w->data, d->F, 0.0f, din->data, d->F);
    return RT_OK;
}

rt_status rtp_cpu_dense_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                   const rt_tensor *dout, const rt_tensor *in,
                                   const rt_dense_desc *d, rt_error *err)
{
    const rt_tensor *dy32 = dout; /* the bias gradient sums the fp32 dy, as CUDA's does */
    float *ws;
    rt_tensor dys, xs;
    RT_TRY(bf16_inputs(b, d, &ws, &dout, &dys, &in, &xs, err));
#ifdef KILN_CONVK_X86
    if (amx(b)) rtp_cpu_amx_dense_bwd_filter(b, ws, dw, dout, in, d);
    if (dp(b)) rtp_cpu_dp_dense_bwd_filter(b, ws, dw, dout, in, d);
#endif
    if (!amx(b) && !dp(b))
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d->O, d->F, d->N, 1.0f, dout->data,
                    d->O, in->data, d->F, 0.0f, dw->data, d->F);
    if (dbias) {
        const float *dy = dy32->data;
        float *db = dbias->data;
        for (int o = 0; o < d->O; o++) db[o] = 0.0f;
        for (int n = 0; n < d->N; n++)
            for (int o = 0; o < d->O; o++) db[o] += dy[(size_t)n * d->O + o];
    }
    return RT_OK;
}
