/* cpu_conv_wino.h - 3x3 stride-1 border-1 convolutions by Winograd's F(2x2, 3x3)
 * (cpu_conv_wino.c), for the forward and the input gradient of cpu_conv_direct.c. */
#ifndef CPU_CONV_WINO_H
#define CPU_CONV_WINO_H

#include <stddef.h>

#include "cpu_conv_kern.h"

/* Whether an H x W output (= input) plane takes this path: H even, W a multiple of 16,
 * and the (H/2) x (W/2) tiles whole 16-float vectors, at least 64 of them. Depends on
 * the shape only, so every instruction set takes the same path (and the same bits). */
int rtp_conv_wino_ok(int H, int W);

/* Scratch floats: one image's transformed input of ins planes (with the transform's
 * own rows), its rows_r transformed outputs, and the packed weights. */
size_t rtp_conv_wino_in_floats(int ins, int H, int W);
size_t rtp_conv_wino_out_floats(int rows_r, int H, int W);
size_t rtp_conv_wino_weight_floats(int rows_r, int ins);

/* wpk (rtp_conv_wino_weight_floats) <- the 16 transformed weight matrices, each packed
 * for the forward loop ([rows_r/KB][ins][KB], rows past `rows` 0), from Wt laid out as
 * rtp_conv_pack reads it (tap[t]: the filter index of tap t, transposed: [ins][rows]).
 * tmp: 16 * rows * ins floats. */
void rtp_conv_wino_weights(float *wpk, float *tmp, const float *Wt, int rows, int rows_r, int ins,
                           const int *tap, int transposed);

/* y (rows x H x W) <- the 3x3 border-1 convolution of x (ins x H x W) with the weights
 * wpk; in_ws and out_ws: rtp_conv_wino_in_floats and rtp_conv_wino_out_floats of
 * scratch, 64-byte aligned. */
void rtp_conv_wino_image(const rtp_convk *k, float *in_ws, float *out_ws, const float *x, int ins,
                         int H, int W, const float *wpk, float *y, int rows, int rows_r);

#endif
