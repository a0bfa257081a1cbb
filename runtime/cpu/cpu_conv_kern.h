/* cpu_conv_kern.h - the inner loops of the direct convolution (cpu_conv_direct.c says
 * what the data layouts are). cpu_conv_kern.c is compiled once per instruction set
 * (runtime/meson.build): the _avx512 functions use 16-float vectors, the _avx2 ones 8.
 * Only x86-64 builds have them (KILN_CONVK_X86).
 */
#ifndef CPU_CONV_KERN_H
#define CPU_CONV_KERN_H

#include <stddef.h>

/* Output rows computed per weight block (packed weights interleave this many). */
#define RTP_CONVK_KB 4

/* y[k][i] = sum over c < C, t < T of w[k][c][t] * x[c*cs + i + off[t]], for k < Kr
 * (a multiple of RTP_CONVK_KB) and i < nvec vectors (16 or 8 floats each). w is packed
 * as [Kr/KB][C][T][KB]; row k of y starts at y + k*ys. Reads x up to
 * x[(C-1)*cs + nvec*VEC - 1 + max(off)]. y is also read: it holds the partial sums
 * between passes over chunks of the channels, so its Kr rows must be writable and
 * overlap neither x nor w. */
typedef void rtp_convk_fwd_fn(const float *x, size_t cs, int C, const int *off, int T,
                              const float *w, float *y, size_t ys, int Kr, size_t nvec);

/* acc[(c*9 + r*3 + s)*Kv + k] += sum over p < P, q < Q of dyT[(p*Q + q)*Kv + k] *
 * x[c*cs + p*wp + q + r*wp + s] for a 3x3 filter: c < C, k < Kv (a multiple of the vector
 * width; dyT and acc 64-byte aligned). dyT holds only the P x Q output positions; the
 * input planes have rows wp (>= Q + 2) wide. */
typedef void rtp_convk_wgrad_fn(const float *dyT, int Kv, int P, int Q, const float *x, size_t cs,
                                int C, int wp, float *acc);

/* acc[(c*T + t)*Kv + k] += sum over p < P, q < Q of dyT[(p*Q + q)*Kv + k] *
 * x[c*cs + p*wp + q + off[t]] for c < C, k < Kv (as above), and T = 9 or 1 taps at any
 * offsets (the strided convolutions' phase planes, rows wp wide, cpu_conv_s2.c). */
typedef void rtp_convk_wgrad_taps_fn(const float *dyT, int Kv, int P, int Q, const float *x,
                                     size_t cs, int wp, int C, const int *off, int T, float *acc);

typedef struct rtp_convk {
    const char *name; /* "avx512", "avx2" */
    int vec;          /* floats per vector */
    rtp_convk_fwd_fn *fwd;
    rtp_convk_wgrad_fn *wgrad;
    rtp_convk_wgrad_taps_fn *wgrad_taps;
} rtp_convk;

#ifdef KILN_CONVK_X86
rtp_convk_fwd_fn rtp_convk_fwd_avx512, rtp_convk_fwd_avx2;
rtp_convk_wgrad_fn rtp_convk_wgrad_avx512, rtp_convk_wgrad_avx2;
rtp_convk_wgrad_taps_fn rtp_convk_wgrad_taps_avx512, rtp_convk_wgrad_taps_avx2;
#endif

#endif
