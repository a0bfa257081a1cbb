/* cpu_bf16.c - the CPU backend's compute precision (--precision bf16 --device cpu).
 *
 * The same meaning as on CUDA (rt_device.h): the inputs of every convolution and dense
 * product (x and w forward, dy and w for the input gradient, dy and x for the weight
 * gradient) are rounded to bf16 (round to nearest even), the products accumulate in
 * fp32 and the results are stored in fp32; activations, gradients, master weights,
 * optimiser state and batch-norm statistics stay fp32. bf16 needs a CPU with the
 * AVX512_BF16 instructions (and the AVX-512 convolution loops, so not under
 * KILN_CPU_CONV=avx2 or im2col); elsewhere setting it fails and names what is missing.
 *
 * Each op rounds its inputs once into the front of its workspace (staged after the
 * fp32 path's own scratch, reserved when the model is attached) and runs on the
 * rounded copies; every copy and every op is a fixed function of its inputs, so
 * results are deterministic for a fixed thread count.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "../rt_device.h"
#include "cpu_conv_amx.h"
#include "cpu_dp.h"
#include "cpu_internal.h"

/* AMX-BF16 and AMX-TILE (CPUID leaf 7: EDX bits 22 and 24), the tile data granted by
 * the kernel, and not turned off by KILN_CPU_AMX=off */
static int amx_usable(void)
{
#if defined(KILN_CONVK_X86)
    const char *e = getenv("KILN_CPU_AMX");
    if (e && !strcmp(e, "off")) return 0;
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    if (!(d & (1u << 22)) || !(d & (1u << 24))) return 0;
    return rtp_cpu_amx_enable();
#else
    return 0;
#endif
}

/* Which products go to VDPBF16PS (cpu_dp.h; RTP_DP_*): none without AVX512_BF16 and the
 * AVX-512 word shuffles its packing uses (avx512bw: every CPU with AVX512_BF16 has it).
 * Then all of them (that AMX does not take) on AMD cores, none on Intel's: on the
 * Sapphire Rapids Xeon measured (AMX off) VDPBF16PS issues at about 2/3 of the FMA
 * rate, so it multiplies no faster than the fp32 loops, which ran the seed CNN's second
 * convolution in 2/3 of its time and its dense layer about as fast; on Zen 4 it is
 * expected at the 512-bit FMA rate, twice the products (not measured: no Zen 4 here).
 * KILN_CPU_DP=off, dense or all chooses instead (docs/runtime-core.md). */
static int dp_level(void)
{
#if defined(KILN_CONVK_X86)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512bf16") || !__builtin_cpu_supports("avx512bw"))
        return RTP_DP_NONE;
    const char *e = getenv("KILN_CPU_DP");
    if (e && !strcmp(e, "off")) return RTP_DP_NONE;
    if (e && !strcmp(e, "dense")) return RTP_DP_DENSE;
    if (e && !strcmp(e, "all")) return RTP_DP_ALL;
    return __builtin_cpu_is("amd") ? RTP_DP_ALL : RTP_DP_NONE;
#else
    return RTP_DP_NONE;
#endif
}

int rtp_cpu_bf16_supported(const rtp_cpu *c, const char **missing)
{
    const char *why = NULL;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) why = "AVX-512 (avx512f), which this CPU lacks";
    else if (!__builtin_cpu_supports("avx512bf16"))
        why = "AVX512_BF16 (avx512_bf16), which this CPU lacks";
    else if (!c || !c->convk || c->convk->vec != 16)
        why = "the AVX-512 convolution loops, which KILN_CPU_CONV turned off";
#else
    (void)c;
    why = "AVX512_BF16, an x86-64 instruction set";
#endif
    if (missing) *missing = why;
    return why == NULL;
}

rt_status rt_cpu_set_precision(rt_backend *b, rt_precision p, rt_error *err)
{
    if (!b || b->ops != &rt_cpu_ops || !b->impl)
        return RT_ERR(err, RT_EINVAL, "not an open CPU backend (device '%s')",
                      b && b->ops ? b->ops->name : "none");
    rtp_cpu *c = b->impl;
    if (p == RT_PREC_FP16)
        return RT_ERR(err, RT_EINVAL,
                      "--precision fp16 needs a CUDA device; the CPU backend computes in fp32 "
                      "or bf16 ---> HINT: use --precision bf16 or fp32, or --device cuda");
    if (p != RT_PREC_FP32 && p != RT_PREC_BF16)
        return RT_ERR(err, RT_EINVAL, "unknown precision %d", (int)p);
    const char *missing = NULL;
    if (p == RT_PREC_BF16 && !rtp_cpu_bf16_supported(c, &missing))
        return RT_ERR(err, RT_ENODEV,
                      "bf16 on the CPU needs %s ---> HINT: use --precision fp32, or "
                      "--device cuda",
                      missing);
    c->prec = p;
    c->amx = p == RT_PREC_BF16 && amx_usable();
    c->dp = p == RT_PREC_BF16 ? dp_level() : RTP_DP_NONE;
    return RT_OK;
}

rt_precision rt_cpu_get_precision(const rt_backend *b)
{
    if (!b || b->ops != &rt_cpu_ops || !b->impl) return RT_PREC_FP32;
    return ((const rtp_cpu *)b->impl)->prec;
}

int rtp_cpu_bf16(const rt_backend *b) { return ((const rtp_cpu *)b->impl)->prec == RT_PREC_BF16; }

/* fp32 -> the nearest bf16 (ties to even), widened back to fp32; NaN stays NaN. */
RTP_SPAN static void round_span(float *restrict y, const float *restrict x, size_t n)
{
    const uint32_t *u = (const uint32_t *)x;
    uint32_t *o = (uint32_t *)y;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = u[i];
        uint32_t r = (v + 0x7FFFu + ((v >> 16) & 1u)) & 0xFFFF0000u;
        int nan = (v & 0x7FFFFFFFu) > 0x7F800000u;
        o[i] = nan ? (v | 0x00400000u) & 0xFFFF0000u : r;
    }
}

void rtp_cpu_bf16_round(rt_backend *b, float *dst, const float *src, size_t n)
{
#pragma omp parallel num_threads(rtp_cpu_team(b, n))
    {
        size_t lo, hi;
        rtp_cpu_chunk(n, &lo, &hi);
        round_span(dst + lo, src + lo, hi - lo);
    }
}

/* floats of a staged copy of t, a multiple of 16 (64-byte aligned copies) */
static size_t staged(size_t n) { return (n + 15) / 16 * 16; }

rt_tensor rtp_cpu_bf16_stage(rt_backend *b, float **at, const rt_tensor *t)
{
    rt_tensor r = *t;
    size_t n = rt_tensor_numel(t);
    rtp_cpu_bf16_round(b, *at, t->data, n);
    r.data = *at;
    *at += staged(n);
    return r;
}

size_t rtp_cpu_bf16_conv_stage(const rt_conv_desc *d)
{
    size_t x = staged((size_t)d->N * d->C * d->H * d->W);
    size_t y = staged((size_t)d->N * d->K * d->P * d->Q);
    size_t w = staged((size_t)d->K * d->C * d->R * d->S);
    return (x + y + w) * sizeof(float);
}

size_t rtp_cpu_dense_workspace(rt_backend *b, const rt_dense_desc *d)
{
    if (!rtp_cpu_bf16(b)) return 0;
#ifdef KILN_CONVK_X86
    if (((const rtp_cpu *)b->impl)->amx) return rtp_cpu_amx_dense_workspace(d);
    if (((const rtp_cpu *)b->impl)->dp) return rtp_cpu_dp_dense_workspace(d);
#endif
    return (staged((size_t)d->N * d->F) + staged((size_t)d->N * d->O) +
            staged((size_t)d->O * d->F)) *
           sizeof(float);
}
