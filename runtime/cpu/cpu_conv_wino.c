/* cpu_conv_wino.c - 3x3 stride-1 convolutions with a border of 1 by Winograd's minimal
 * filtering F(2x2, 3x3) (Lavin and Gray, 2016): each 2x2 block of outputs ("tile") from
 * the 4x4 input patch around it in 16 multiplies per input channel instead of 36.
 *
 * Per image, with th x tw = H/2 x W/2 tiles:
 * - input transform: v[xi][c][tile] = (B^T d B)[xi] for each tile's 4x4 patch d of
 *   channel c (0 outside the plane);
 * - 16 products, one per xi: m[xi][k][tile] = sum over c of u[xi][k][c] * v[xi][c][tile],
 *   run by the direct convolution's forward loop with one tap (cpu_conv_kern.c), the
 *   weights u = G g G^T transformed and packed once per call;
 * - output transform: y's 2x2 block = A^T m A.
 * The transforms are additions and subtractions in a fixed order, the products sum over
 * c in order, so the result does not depend on the instruction set or the thread count.
 * It differs from the direct loop's by rounding only (a few units in the last place of
 * the largest outputs). The work is 16/36 of the direct loop's multiply-adds plus the
 * transforms: worth it from 64 tiles (16x16 planes) up; smaller planes keep the direct
 * loop (rtp_conv_wino_ok).
 */
#include "cpu_conv_wino.h"

#include <string.h>

#include "cpu_conv_kern.h"
#include "cpu_conv_layout.h"
#include "cpu_internal.h"

int rtp_conv_wino_ok(int H, int W)
{
    /* rows of whole 8-tile vectors (the transforms), whole 16-float vectors of tiles
     * (the products), at least 64 tiles */
    const long nt = (long)(H / 2) * (W / 2);
    return H % 2 == 0 && W % 16 == 0 && nt % 16 == 0 && nt >= 64;
}

/* floats of the scratch before the transformed input: 4 rows of column transforms */
static size_t rows_floats(int W) { return rtp_r16(16 * (size_t)(W / 2)); }

/* Floats from one transformed plane (xi) to the next: n and a 64-byte skew, so that the
 * 16 planes written or read side by side do not fall on the same 4 KiB offsets (when
 * they did, loads waited on unrelated stores: the input transform took 1.5-2.5x as
 * long). */
static size_t plane_stride(size_t n) { return n + 16; }

size_t rtp_conv_wino_in_floats(int ins, int H, int W)
{
    return rows_floats(W) + 16 * plane_stride((size_t)ins * (size_t)(H / 2) * (W / 2));
}

size_t rtp_conv_wino_out_floats(int rows_r, int H, int W)
{
    return 16 * plane_stride((size_t)rows_r * (size_t)(H / 2) * (W / 2));
}

size_t rtp_conv_wino_weight_floats(int rows_r, int ins) { return 16 * (size_t)rows_r * ins; }

void rtp_conv_wino_weights(float *restrict wpk, float *restrict tmp, const float *restrict Wt,
                           int rows, int rows_r, int ins, const int *tap, int transposed)
{
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < ins; i++) {
            float g[3][3], gg[4][3];
            for (int t = 0; t < 9; t++) {
                size_t at = transposed ? ((size_t)i * rows + r) * 9 + tap[t]
                                       : ((size_t)r * ins + i) * 9 + tap[t];
                g[t / 3][t % 3] = Wt[at];
            }
            for (int s = 0; s < 3; s++) { /* G g: G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1] */
                gg[0][s] = g[0][s];
                gg[1][s] = 0.5f * (g[0][s] + g[1][s] + g[2][s]);
                gg[2][s] = 0.5f * (g[0][s] - g[1][s] + g[2][s]);
                gg[3][s] = g[2][s];
            }
            for (int a = 0; a < 4; a++) { /* (G g) G^T */
                float u[4] = {gg[a][0], 0.5f * (gg[a][0] + gg[a][1] + gg[a][2]),
                              0.5f * (gg[a][0] - gg[a][1] + gg[a][2]), gg[a][2]};
                for (int b = 0; b < 4; b++)
                    tmp[(((size_t)(a * 4 + b)) * rows + r) * ins + i] = u[b];
            }
        }
    static const int one_tap[1] = {0};
    for (int xi = 0; xi < 16; xi++)
        rtp_conv_pack(wpk + (size_t)xi * rows_r * ins, tmp + (size_t)xi * rows * ins, rows, rows_r,
                      ins, 1, one_tap, 1, 0);
}

typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4))); /* unaligned access */

#define EVEN(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14)
#define ODD(a, b) __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15)

/* u[b*tw + j] <- the column transforms (d B) of one row x (W = 2 tw floats) for its tw
 * tiles, d = the row's columns 2j-1 .. 2j+2 (0 outside it), or zeros for a border row
 * (x NULL). Reads x in place: the neighbours' columns come from lane shifts. */
static inline __attribute__((always_inline)) void col_transform(float *restrict u,
                                                                const float *restrict x, int tw)
{
    const v8 zero = {0};
    if (!x) {
        for (int j = 0; j < tw; j += 8)
            for (int b = 0; b < 4; b++) *(v8u *)(u + b * tw + j) = zero;
        return;
    }
    v8 e = EVEN(*(const v8u *)x, *(const v8u *)(x + 8)), o_prev = zero;
    for (int j = 0; j < tw; j += 8) {
        const float *p = x + 2 * j;
        v8 o = ODD(*(const v8u *)p, *(const v8u *)(p + 8));
        v8 e_next = j + 8 < tw ? EVEN(*(const v8u *)(p + 16), *(const v8u *)(p + 24)) : zero;
        v8 d0 = __builtin_shufflevector(o_prev, o, 7, 8, 9, 10, 11, 12, 13, 14); /* 2j-1 */
        v8 d3 = __builtin_shufflevector(e, e_next, 1, 2, 3, 4, 5, 6, 7, 8);      /* 2j+2 */
        *(v8u *)(u + j) = d0 - o;
        *(v8u *)(u + tw + j) = e + o;
        *(v8u *)(u + 2 * tw + j) = o - e;
        *(v8u *)(u + 3 * tw + j) = e - d3;
        o_prev = o, e = e_next;
    }
}

/* v[(a*4 + b)*vs + c*nt + tile] <- B^T d B for every tile of the ins planes of x (H x W,
 * a border of 1), tile = i*tw + j. scratch: rows_floats(W). */
RTP_SPAN static void in_transform(float *restrict v, size_t vs, float *restrict scratch,
                                  const float *restrict x, int ins, int H, int W)
{
    const int tw = W / 2;
    const size_t nt = (size_t)(H / 2) * tw, us = 4 * (size_t)tw;
    float *ring = scratch; /* the column transforms of 4 rows */
    for (int c = 0; c < ins; c++) {
        const float *xc = x + (size_t)c * H * W;
        for (int h = -1; h <= H; h++) {
            col_transform(ring + (size_t)((h + 1) & 3) * us,
                          h >= 0 && h < H ? xc + (size_t)h * W : NULL, tw);
            if (h < 2 || h % 2) continue;
            const int i = (h - 2) / 2; /* rows 2i-1 .. 2i+2 are in the ring */
            const float *u0 = ring + (size_t)((2 * i) & 3) * us,
                        *u1 = ring + (size_t)((2 * i + 1) & 3) * us,
                        *u2 = ring + (size_t)((2 * i + 2) & 3) * us,
                        *u3 = ring + (size_t)((2 * i + 3) & 3) * us;
            float *vi = v + (size_t)c * nt + (size_t)i * tw;
            for (int b = 0; b < 4; b++)
                for (int j = 0; j < tw; j += 8) {
                    const size_t o = (size_t)b * tw + j;
                    v8 a0 = *(const v8u *)(u0 + o), a1 = *(const v8u *)(u1 + o);
                    v8 a2 = *(const v8u *)(u2 + o), a3 = *(const v8u *)(u3 + o);
                    *(v8u *)(vi + (size_t)b * vs + j) = a0 - a2;
                    *(v8u *)(vi + (size_t)(4 + b) * vs + j) = a1 + a2;
                    *(v8u *)(vi + (size_t)(8 + b) * vs + j) = a2 - a1;
                    *(v8u *)(vi + (size_t)(12 + b) * vs + j) = a1 - a3;
                }
        }
    }
}

/* y (rows x H x W) <- A^T m A for every tile, m[(a*4 + b)*ms + r*nt + tile]. */
RTP_SPAN static void out_transform(float *restrict y, const float *restrict m, size_t ms, int rows,
                                   int H, int W)
{
    const int tw = W / 2, th = H / 2;
    const size_t nt = (size_t)th * tw;
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < th; i++) {
            float *y0 = y + ((size_t)r * H + 2 * (size_t)i) * W, *y1 = y0 + W;
            const float *mi = m + (size_t)r * nt + (size_t)i * tw;
            for (int j = 0; j < tw; j += 8) {
                v8 t0[4], t1[4];
                for (int b = 0; b < 4; b++) {
                    v8 m0 = *(const v8u *)(mi + (size_t)b * ms + j);
                    v8 m1 = *(const v8u *)(mi + (size_t)(4 + b) * ms + j);
                    v8 m2 = *(const v8u *)(mi + (size_t)(8 + b) * ms + j);
                    v8 m3 = *(const v8u *)(mi + (size_t)(12 + b) * ms + j);
                    t0[b] = m0 + m1 + m2;
                    t1[b] = m1 - m2 - m3;
                }
                v8 e0 = t0[0] + t0[1] + t0[2], o0 = t0[1] - t0[2] - t0[3];
                v8 e1 = t1[0] + t1[1] + t1[2], o1 = t1[1] - t1[2] - t1[3];
                *(v8u *)(y0 + 2 * j) = __builtin_shufflevector(e0, o0, 0, 8, 1, 9, 2, 10, 3, 11);
                *(v8u *)(y0 + 2 * j + 8) =
                    __builtin_shufflevector(e0, o0, 4, 12, 5, 13, 6, 14, 7, 15);
                *(v8u *)(y1 + 2 * j) = __builtin_shufflevector(e1, o1, 0, 8, 1, 9, 2, 10, 3, 11);
                *(v8u *)(y1 + 2 * j + 8) =
                    __builtin_shufflevector(e1, o1, 4, 12, 5, 13, 6, 14, 7, 15);
            }
        }
}

void rtp_conv_wino_image(const rtp_convk *k, float *restrict in_ws, float *restrict out_ws,
                         const float *x, int ins, int H, int W, const float *wpk, float *y,
                         int rows, int rows_r)
{
    const size_t nt = (size_t)(H / 2) * (W / 2), vs = plane_stride((size_t)ins * nt),
                 ms = plane_stride((size_t)rows_r * nt);
    float *v = in_ws + rows_floats(W);
    in_transform(v, vs, in_ws, x, ins, H, W);
    static const int one_tap[1] = {0};
    for (int xi = 0; xi < 16; xi++)
        k->fwd(v + (size_t)xi * vs, nt, ins, one_tap, 1, wpk + (size_t)xi * rows_r * ins,
               out_ws + (size_t)xi * ms, nt, rows_r, nt / (size_t)k->vec);
    out_transform(y, out_ws, ms, rows, H, W);
}
