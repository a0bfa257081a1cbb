/* cpu_conv_layout.h - data layouts shared by the direct convolutions (cpu_conv_direct.c,
 * stride 1; cpu_conv_s2.c, stride 2): weight packing for the forward loop, the copy from
 * the padded-width grid to the output, and the weight gradient's loop over fixed groups
 * of images (dy transposed per image, partials summed in order).
 */
#ifndef CPU_CONV_LAYOUT_H
#define CPU_CONV_LAYOUT_H

#include <stddef.h>

#include "../rt_backend.h"

/* The direct paths take convolutions of up to this many input and output channels
 * (the range measured, bench/README.md); larger ones keep im2col + sgemm. */
#define RTP_CONV_MAX_CH 128
#define RTP_CONV_GROUP 8 /* images per weight-gradient partial sum (fixed: deterministic) */

static inline size_t rtp_r16(size_t n) { return (n + 15) / 16 * 16; }
static inline int rtp_round_up(int n, int m) { return (n + m - 1) / m * m; }
static inline int rtp_conv_groups(int n) { return (n + RTP_CONV_GROUP - 1) / RTP_CONV_GROUP; }
/* One past the last image of weight-gradient group gi of n images. */
static inline int rtp_conv_group_end(int gi, int n)
{
    return (gi + 1) * RTP_CONV_GROUP < n ? (gi + 1) * RTP_CONV_GROUP : n;
}
/* Threads for a convolution over n images: all of b's, or 1 when there are fewer images. */
static inline int rtp_conv_threads(const rt_backend *b, int n)
{
    return n < b->threads ? 1 : b->threads;
}

/* wpk [rows_r/KB][ins][T][KB] (rows past `rows` are 0) <- the weights of T taps tap[t]
 * (indices into a filter of RS taps) of Wt, which is [rows][ins][RS], or, with
 * `transposed`, [ins][rows][RS] (the input gradient's view of the forward weights). */
void rtp_conv_pack(float *wpk, const float *Wt, int rows, int rows_r, int ins, int RS,
                   const int *tap, int T, int transposed);

/* The planes' copies into the direct paths' layouts, as vector loops built for AVX-512
 * and AVX2 (RTP_SPAN), not a libc call per row:
 * o[r*os + c] <- x[r*xs + c*step] for r < rows, c < cols, step 1 or 2 (a stride-2 phase);
 * a, b, c <- x (n floats each: the tight layout's three copies in one pass). */
void rtp_conv_copy_rows(float *o, size_t os, const float *x, size_t xs, int rows, int cols,
                        int step);
void rtp_conv_copy3(float *a, float *b, float *c, const float *x, size_t n);
/* o[r*os + 2*c] <- x[r*xs + c] for r < rows, c < cols (into a stride-2 phase's places) */
void rtp_conv_scatter_rows2(float *o, size_t os, const float *x, size_t xs, int rows, int cols);

/* out[k][h][w] (+ bias[k], bias may be NULL) <- grid[k*ys + h*wp + w] for h < H, w < W:
 * the grid's columns from W to wp are dropped. */
void rtp_conv_compact(float *out, const float *grid, int K, int H, int W, int wp, size_t ys,
                      const float *bias);

/* A weight gradient (and bias gradient) over fixed groups of RTP_CONV_GROUP images:
 * for each image, dy goes to dyT[(p*Q + q)*Kv + k] (0 for K <= k < Kv), then image()
 * adds x's products with it into the group's
 * partials acc ([CT][Kv]; the bias sums follow at acc + CT*Kv); the groups are summed in
 * order, so the result is the same for any thread count. */
typedef struct rtp_conv_wgrad_layout {
    size_t per_thread, dyt; /* floats of scratch per thread, dyT's place in it */
    size_t acc, accsz;      /* the group partials: where (64-byte aligned), floats apart */
    int CT, Kv;             /* taps x channels, K rounded up to vectors */
} rtp_conv_wgrad_layout;

/* One image: x (C x H x W) into the thread's scratch, then acc += its products with dyT. */
typedef void rtp_conv_wgrad_image_fn(const void *ctx, float *scratch, const float *dyT,
                                     const float *x, float *acc);

/* dw [K][CT] and dbias (may be NULL) from dout and in, with workspace ws. */
void rtp_conv_wgrad_run(rt_backend *b, const rt_conv_desc *d, rt_tensor *dw, rt_tensor *dbias,
                        const rt_tensor *dout, const rt_tensor *in, float *ws,
                        const rtp_conv_wgrad_layout *lay, rtp_conv_wgrad_image_fn *image,
                        const void *ctx);

#endif
