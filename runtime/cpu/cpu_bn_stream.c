/* cpu_bn_stream.c - the training forward's output pass with streaming stores.
 *
 * A batch norm's output is written once and read by the next layer only after the whole
 * pass: a large one has left the caches by then, so the ordinary stores' reads of each
 * line before writing it (a third of the pass's traffic) are wasted. On AVX-512 the
 * output of a norm with a relu or an add fused after it (a convolution reads it next)
 * of at least STREAM_FLOATS values goes with non-temporal stores instead: ResNet-20's
 * forward batch norm took about a third less time (bench/README.md, "Batch norm on the
 * CPU"). Smaller outputs, which the next layer can still find in the caches, keep the
 * ordinary stores (streaming them made ResNet-56's batch-32 convolutions slower). The
 * values are cpu_bn.c's row loops' bit for bit: the same operations in the same order.
 */
#include <stdint.h>

#include "cpu_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define STREAMS 1
#else
#define STREAMS 0
#endif

/* outputs of at least this many floats (4 MiB: more than two cores' L2) are streamed */
#define STREAM_FLOATS ((size_t)1 << 20)

int rtp_cpu_bn_stream(const float *y, size_t hw, size_t total)
{
#if STREAMS
    return total >= STREAM_FLOATS && hw % 16 == 0 && (uintptr_t)y % 64 == 0 &&
           __builtin_cpu_supports("avx512f");
#else
    (void)y, (void)hw, (void)total;
    return 0;
#endif
}

#if STREAMS
__attribute__((target("avx512f"))) void rtp_cpu_bn_stream_fence(void) { _mm_sfence(); }

__attribute__((target("avx512f"))) void rtp_cpu_bn_affine_stream(float *y, const float *x,
                                                                 const float *s, size_t n, float g,
                                                                 float sh, float lo)
{
    const __m512 G = _mm512_set1_ps(g), SH = _mm512_set1_ps(sh), LO = _mm512_set1_ps(lo);
    const __m512 ONE = _mm512_set1_ps(1.0f), Z = _mm512_setzero_ps();
    for (size_t i = 0; i < n; i += 16) {
        /* v = (x * g + sh) (+ s); y = v * (v > 0 ? 1 : lo), as row_affine(_add) */
        __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), G), SH);
        if (s) v = _mm512_add_ps(v, _mm512_loadu_ps(s + i));
        __m512 k = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, Z, _CMP_GT_OQ), LO, ONE);
        _mm512_stream_ps(y + i, _mm512_mul_ps(v, k));
    }
}
#else
void rtp_cpu_bn_stream_fence(void) {}

void rtp_cpu_bn_affine_stream(float *y, const float *x, const float *s, size_t n, float g, float sh,
                              float lo)
{
    (void)y, (void)x, (void)s, (void)n, (void)g, (void)sh, (void)lo;
}
#endif
