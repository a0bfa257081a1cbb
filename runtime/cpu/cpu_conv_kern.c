/* cpu_conv_kern.c - register-blocked inner loops of the direct convolution, written
 * with GCC/clang vector extensions and compiled once per instruction set:
 * CONVK_VEC floats a vector, function names suffixed CONVK_ISA (runtime/meson.build
 * builds it with -mavx512f and with -mavx2 -mfma). -ffp-contract=fast there makes the
 * multiply-adds FMAs. Every output float is summed in the same order (c, then tap)
 * whatever the vector width, so the forward results do not depend on the ISA.
 *
 * Register budget: the forward tile is KB=4 output rows x NV vectors of positions
 * (AVX-512: 4x6 = 24 accumulators + 6 inputs of 32 registers; AVX2: 4x3 of 16); the
 * weight-gradient tile is KV vectors of output channels x CB input channels x 9 taps
 * (AVX-512: 2x1 or 1x2 = 18 accumulators; AVX2: 1x1 = 9).
 */
#include "cpu_conv_kern.h"

#define V CONVK_VEC
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define NAME(f) CAT(f, CONVK_ISA)
#define INLINE static inline __attribute__((always_inline))
#define KB RTP_CONVK_KB

#if CONVK_VEC == 16
#define NV 6
#define WG_BIG 1 /* 18-accumulator weight-gradient tiles */
#else
#define NV 3
#define WG_BIG 0
#endif

typedef float vf __attribute__((vector_size(V * 4)));
typedef float vfu __attribute__((vector_size(V * 4), aligned(4))); /* unaligned access */

/* A broadcast. ((vf){0} + f would cost a scalar add: 0 + -0 is not -0.) */
INLINE vf splat(float f)
{
#if CONVK_VEC == 16
    return (vf){f, f, f, f, f, f, f, f, f, f, f, f, f, f, f, f};
#else
    return (vf){f, f, f, f, f, f, f, f};
#endif
}

/* ---- forward: KB rows x nv vectors, started at 0 or (more channels) from y ---- */
INLINE void fwd_tile(const float *restrict x, size_t cs, int C, const int *restrict off, int T,
                     const float *restrict w, float *restrict y, size_t ys, const int nv, int first)
{
    vf acc[KB][NV];
    for (int k = 0; k < KB; k++)
        for (int v = 0; v < nv; v++)
            acc[k][v] = first ? splat(0.0f) : *(const vfu *)(y + (size_t)k * ys + (size_t)v * V);
    for (int c = 0; c < C; c++, x += cs)
        for (int t = 0; t < T; t++, w += KB) {
            const float *xt = x + off[t];
            vf xv[NV];
            for (int v = 0; v < nv; v++) xv[v] = *(const vfu *)(xt + v * V);
            for (int k = 0; k < KB; k++) {
                vf wb = splat(w[k]);
                for (int v = 0; v < nv; v++) acc[k][v] += wb * xv[v];
            }
        }
    for (int k = 0; k < KB; k++)
        for (int v = 0; v < nv; v++) *(vfu *)(y + (size_t)k * ys + (size_t)v * V) = acc[k][v];
}

/* Input channels per pass over all output rows: as many as keep a pass's input planes
 * in ~32 KiB (L1 is 32-48 KiB), so they are read from L2 once rather than once per
 * block of KB rows (Kr/KB times). Small planes only: the partial sums go through y
 * between passes, which costs a load and a store of the tile per pass, so each pass
 * must have at least FWD_MIN_ITERS channel-taps; otherwise all C in one pass. The sums
 * keep their order (c, then tap), so the result is the same bits either way. */
#define FWD_CHUNK_BYTES 32768
#define FWD_MIN_ITERS 32

static int fwd_chunk(size_t cs, int C, int T)
{
    size_t cc = FWD_CHUNK_BYTES / (cs * sizeof(float));
    if (cc >= (size_t)C || cc * (size_t)T < FWD_MIN_ITERS) return C;
    return (int)cc;
}

INLINE void fwd_pass(const float *x, size_t cs, int C, const int *off, const int T, const float *w,
                     float *y, size_t ys, int Kr, size_t nvec)
{
    const int CC = fwd_chunk(cs, C, T);
    for (int c0 = 0; c0 < C; c0 += CC) {
        const int cn = C - c0 < CC ? C - c0 : CC, first = c0 == 0;
        const float *xc = x + (size_t)c0 * cs;
        for (int kb = 0; kb < Kr; kb += KB) {
            const float *wk = w + ((size_t)kb * C + (size_t)c0 * KB) * T;
            float *yk = y + (size_t)kb * ys;
            size_t i = 0;
            for (; i + NV <= nvec; i += NV)
                fwd_tile(xc + i * V, cs, cn, off, T, wk, yk + i * V, ys, NV, first);
            switch (nvec - i) { /* the tail: constant widths, so the tile stays in registers */
            case 1: fwd_tile(xc + i * V, cs, cn, off, T, wk, yk + i * V, ys, 1, first); break;
            case 2: fwd_tile(xc + i * V, cs, cn, off, T, wk, yk + i * V, ys, 2, first); break;
#if NV > 3
            case 3: fwd_tile(xc + i * V, cs, cn, off, T, wk, yk + i * V, ys, 3, first); break;
            case 4: fwd_tile(xc + i * V, cs, cn, off, T, wk, yk + i * V, ys, 4, first); break;
            case 5: fwd_tile(xc + i * V, cs, cn, off, T, wk, yk + i * V, ys, 5, first); break;
#endif
            default: break;
            }
        }
    }
}

void NAME(rtp_convk_fwd)(const float *x, size_t cs, int C, const int *off, int T, const float *w,
                         float *y, size_t ys, int Kr, size_t nvec)
{
    if (T == 1 && off[0] == 0) /* a matrix product (cpu_conv_wino.c): no tap loop */
        fwd_pass(x, cs, C, (const int[1]){0}, 1, w, y, ys, Kr, nvec);
    else fwd_pass(x, cs, C, off, T, w, y, ys, Kr, nvec);
}

/* ---- weight gradient: kv vectors of channels x cb input channels x 9 taps ---- */
INLINE void wgrad_tile(const float *restrict dyT, int Kv, int P, int Q, const float *restrict x,
                       size_t cs, int wp, float *restrict acc, const int kv, const int cb)
{
    vf a[2][2][9];
    for (int j = 0; j < cb; j++)
        for (int t = 0; t < 9; t++)
            for (int u = 0; u < kv; u++)
                a[u][j][t] = *(const vf *)(acc + ((size_t)j * 9 + t) * Kv + (size_t)u * V);
    const float *xr[2][3];
    for (int j = 0; j < cb; j++)
        for (int r = 0; r < 3; r++) xr[j][r] = x + (size_t)j * cs + (size_t)r * wp;
    for (int p = 0; p < P; p++, dyT += (size_t)Q * Kv) {
        for (int q = 0; q < Q; q++) {
            vf g[2];
            for (int u = 0; u < kv; u++) g[u] = *(const vf *)(dyT + (size_t)q * Kv + (size_t)u * V);
            for (int j = 0; j < cb; j++)
                for (int r = 0; r < 3; r++)
                    for (int s = 0; s < 3; s++) {
                        vf xb = splat(xr[j][r][q + s]);
                        for (int u = 0; u < kv; u++) a[u][j][r * 3 + s] += g[u] * xb;
                    }
        }
        for (int j = 0; j < cb; j++)
            for (int r = 0; r < 3; r++) xr[j][r] += wp;
    }
    for (int j = 0; j < cb; j++)
        for (int t = 0; t < 9; t++)
            for (int u = 0; u < kv; u++)
                *(vf *)(acc + ((size_t)j * 9 + t) * Kv + (size_t)u * V) = a[u][j][t];
}

void NAME(rtp_convk_wgrad)(const float *dyT, int Kv, int P, int Q, const float *x, size_t cs, int C,
                           int wp, float *acc)
{
    for (int k = 0; k < Kv;) {
        const float *g = dyT + k;
        float *ak = acc + k;
        int c = 0;
#if WG_BIG
        if (Kv - k >= 2 * V) {
            for (; c < C; c++)
                wgrad_tile(g, Kv, P, Q, x + (size_t)c * cs, cs, wp, ak + (size_t)c * 9 * Kv, 2, 1);
            k += 2 * V;
            continue;
        }
        for (; c + 2 <= C; c += 2)
            wgrad_tile(g, Kv, P, Q, x + (size_t)c * cs, cs, wp, ak + (size_t)c * 9 * Kv, 1, 2);
#endif
        for (; c < C; c++)
            wgrad_tile(g, Kv, P, Q, x + (size_t)c * cs, cs, wp, ak + (size_t)c * 9 * Kv, 1, 1);
        k += V;
    }
}

/* ---- weight gradient at any tap offsets: kv vectors of channels x cb channels x T taps ---- */
#if CONVK_VEC == 16
#define WT1_CB 8 /* 1 tap: 2x8 = 16 accumulators */
#define WT9_KV 2 /* 9 taps: 2x9 = 18 */
#else
#define WT1_CB 4 /* 2x4 = 8 of 16 registers */
#define WT9_KV 1
#endif

INLINE void wgrad_taps_tile(const float *restrict dyT, int Kv, int P, int Q,
                            const float *restrict x, size_t cs, int wp, const int *restrict off,
                            const int T, float *restrict acc, const int kv, const int cb)
{
    vf a[2][9 > WT1_CB ? 9 : WT1_CB];
    const float *xt[9 > WT1_CB ? 9 : WT1_CB];
    for (int j = 0; j < cb; j++)
        for (int t = 0; t < T; t++) {
            xt[j * T + t] = x + (size_t)j * cs + off[t];
            for (int u = 0; u < kv; u++)
                a[u][j * T + t] = *(const vf *)(acc + ((size_t)j * T + t) * Kv + (size_t)u * V);
        }
    for (int p = 0; p < P; p++, dyT += (size_t)Q * Kv) {
        for (int q = 0; q < Q; q++) {
            vf g[2];
            for (int u = 0; u < kv; u++) g[u] = *(const vf *)(dyT + (size_t)q * Kv + (size_t)u * V);
            for (int m = 0; m < cb * T; m++) {
                vf xb = splat(xt[m][q]);
                for (int u = 0; u < kv; u++) a[u][m] += g[u] * xb;
            }
        }
        for (int m = 0; m < cb * T; m++) xt[m] += wp;
    }
    for (int m = 0; m < cb * T; m++)
        for (int u = 0; u < kv; u++) *(vf *)(acc + (size_t)m * Kv + (size_t)u * V) = a[u][m];
}

void NAME(rtp_convk_wgrad_taps)(const float *dyT, int Kv, int P, int Q, const float *x, size_t cs,
                                int wp, int C, const int *off, int T, float *acc)
{
    for (int k = 0; k < Kv;) {
        const float *g = dyT + k;
        float *ak = acc + k;
        const int two = Kv - k >= 2 * V;
        if (T == 9) {
            for (int c = 0; c < C; c++) {
                const float *xc = x + (size_t)c * cs;
                float *ac = ak + (size_t)c * 9 * Kv;
                if (WT9_KV == 2 && two) wgrad_taps_tile(g, Kv, P, Q, xc, cs, wp, off, 9, ac, 2, 1);
                else wgrad_taps_tile(g, Kv, P, Q, xc, cs, wp, off, 9, ac, 1, 1);
            }
        } else { /* T == 1 */
            int c = 0;
            for (; c + WT1_CB <= C; c += WT1_CB) {
                const float *xc = x + (size_t)c * cs;
                float *ac = ak + (size_t)c * Kv;
                if (two) wgrad_taps_tile(g, Kv, P, Q, xc, cs, wp, off, 1, ac, 2, WT1_CB);
                else wgrad_taps_tile(g, Kv, P, Q, xc, cs, wp, off, 1, ac, 1, WT1_CB);
            }
            for (; c < C; c++) {
                const float *xc = x + (size_t)c * cs;
                float *ac = ak + (size_t)c * Kv;
                if (two) wgrad_taps_tile(g, Kv, P, Q, xc, cs, wp, off, 1, ac, 2, 1);
                else wgrad_taps_tile(g, Kv, P, Q, xc, cs, wp, off, 1, ac, 1, 1);
            }
        }
        k += (WT9_KV == 2 || T == 1) && two ? 2 * V : V;
    }
}
