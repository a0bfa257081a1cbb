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
 * transforms: worth it from 64 tiles (16x16 planes) up; smaller planes, and planes whose
 * width is not a multiple of 16 or whose tile count is not a multiple of 16 (24x24,
 * 28x28, 56x56), keep the direct loop (rtp_conv_wino_ok).
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
typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4)));

/* The lane shuffles of 8 and of 16 floats: even and odd lanes of a:b; a:b shifted by one
 * lane down (PREV: b's lanes after a's last) and up (NEXT: a's after its first); a and b
 * interleaved, a0 b0 a1 b1 ..., its first half (LO) and its second (HI). */
#define LO8(a, b) __builtin_shufflevector(a, b, 0, 8, 1, 9, 2, 10, 3, 11)
#define HI8(a, b) __builtin_shufflevector(a, b, 4, 12, 5, 13, 6, 14, 7, 15)
#define LO16(a, b) \
    __builtin_shufflevector(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23)
#define HI16(a, b) \
    __builtin_shufflevector(a, b, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31)
#define EVEN8(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14)
#define ODD8(a, b) __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15)
#define PREV8(a, b) __builtin_shufflevector(a, b, 7, 8, 9, 10, 11, 12, 13, 14)
#define NEXT8(a, b) __builtin_shufflevector(a, b, 1, 2, 3, 4, 5, 6, 7, 8)
#define EVEN16(a, b) \
    __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)
#define ODD16(a, b) \
    __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31)
#define PREV16(a, b) \
    __builtin_shufflevector(a, b, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30)
#define NEXT16(a, b) \
    __builtin_shufflevector(a, b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)

/* u[b*tw + j] <- the column transforms (d B) of one row x (W = 2 tw floats) for its tw
 * tiles, d = the row's columns 2j-1 .. 2j+2 (0 outside it), or zeros for a border row
 * (x NULL). Reads x in place: the neighbours' columns come from lane shifts. In VEC-float
 * vectors of type T (TU unaligned) and the shuffles of that width (W): 16 where the
 * row's tiles fill them (the transforms are bound by their loads and stores), the same
 * additions at either width, so the same bits. */
#define COL_TRANSFORM(u, x, tw, T, TU, VEC, W)                                                   \
    do {                                                                                         \
        const T zero = {0};                                                                      \
        if (!(x)) {                                                                              \
            for (int j = 0; j < (tw); j += (VEC))                                                \
                for (int b = 0; b < 4; b++) *(TU *)((u) + b * (tw) + j) = zero;                  \
            break;                                                                               \
        }                                                                                        \
        T e = EVEN##W(*(const TU *)(x), *(const TU *)((x) + (VEC))), o_prev = zero;              \
        for (int j = 0; j < (tw); j += (VEC)) {                                                  \
            const float *p = (x) + 2 * j;                                                        \
            T o = ODD##W(*(const TU *)p, *(const TU *)(p + (VEC)));                              \
            T e_next = j + (VEC) < (tw)                                                          \
                           ? EVEN##W(*(const TU *)(p + 2 * (VEC)), *(const TU *)(p + 3 * (VEC))) \
                           : zero;                                                               \
            T d0 = PREV##W(o_prev, o); /* columns 2j-1 */                                        \
            T d3 = NEXT##W(e, e_next); /* columns 2j+2 */                                        \
            *(TU *)((u) + j) = d0 - o;                                                           \
            *(TU *)((u) + (tw) + j) = e + o;                                                     \
            *(TU *)((u) + 2 * (tw) + j) = o - e;                                                 \
            *(TU *)((u) + 3 * (tw) + j) = e - d3;                                                \
            o_prev = o, e = e_next;                                                              \
        }                                                                                        \
    } while (0)

static inline __attribute__((always_inline)) void col_transform(float *restrict u,
                                                                const float *restrict x, int tw)
{
    if (tw % 16 == 0) COL_TRANSFORM(u, x, tw, v16, v16u, 16, 16);
    else COL_TRANSFORM(u, x, tw, v8, v8u, 8, 8);
}

/* B^T applied to the column transforms u0..u3 of a tile row's 4 input rows, into the 16
 * planes vi + xi*vs; widths as COL_TRANSFORM's. */
#define ROW_TRANSFORM(vi, vs, u0, u1, u2, u3, tw, T, TU, VEC)                 \
    do {                                                                      \
        for (int b = 0; b < 4; b++)                                           \
            for (int j = 0; j < (tw); j += (VEC)) {                           \
                const size_t o = (size_t)b * (tw) + j;                        \
                T a0 = *(const TU *)((u0) + o), a1 = *(const TU *)((u1) + o); \
                T a2 = *(const TU *)((u2) + o), a3 = *(const TU *)((u3) + o); \
                *(TU *)((vi) + (size_t)b * (vs) + j) = a0 - a2;               \
                *(TU *)((vi) + (size_t)(4 + b) * (vs) + j) = a1 + a2;         \
                *(TU *)((vi) + (size_t)(8 + b) * (vs) + j) = a2 - a1;         \
                *(TU *)((vi) + (size_t)(12 + b) * (vs) + j) = a1 - a3;        \
            }                                                                 \
    } while (0)

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
            if (tw % 16 == 0) ROW_TRANSFORM(vi, vs, u0, u1, u2, u3, tw, v16, v16u, 16);
            else ROW_TRANSFORM(vi, vs, u0, u1, u2, u3, tw, v8, v8u, 8);
        }
    }
}

/* y0 and y1, the two output rows of a tile row, <- A^T m A for its tw tiles, m at mi +
 * xi*ms; widths as COL_TRANSFORM's. */
#define OUT_TRANSFORM(y0, y1, mi, ms, tw, T, TU, VEC, W)              \
    for (int j = 0; j < (tw); j += (VEC)) {                           \
        T t0[4], t1[4];                                               \
        for (int b = 0; b < 4; b++) {                                 \
            T m0 = *(const TU *)((mi) + (size_t)b * (ms) + j);        \
            T m1 = *(const TU *)((mi) + (size_t)(4 + b) * (ms) + j);  \
            T m2 = *(const TU *)((mi) + (size_t)(8 + b) * (ms) + j);  \
            T m3 = *(const TU *)((mi) + (size_t)(12 + b) * (ms) + j); \
            t0[b] = m0 + m1 + m2;                                     \
            t1[b] = m1 - m2 - m3;                                     \
        }                                                             \
        T e0 = t0[0] + t0[1] + t0[2], o0 = t0[1] - t0[2] - t0[3];     \
        T e1 = t1[0] + t1[1] + t1[2], o1 = t1[1] - t1[2] - t1[3];     \
        *(TU *)((y0) + 2 * j) = LO##W(e0, o0);                        \
        *(TU *)((y0) + 2 * j + (VEC)) = HI##W(e0, o0);                \
        *(TU *)((y1) + 2 * j) = LO##W(e1, o1);                        \
        *(TU *)((y1) + 2 * j + (VEC)) = HI##W(e1, o1);                \
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
            /* y is cold memory: its lines 4 rows on are claimed for writing ahead, so the
             * stores do not wait on them (they filled the store buffer) */
            if ((size_t)r * H + 2 * (size_t)i + 6 <= (size_t)rows * H)
                for (int k = 0; k < 2 * W; k += 16) __builtin_prefetch(y0 + 4 * (size_t)W + k, 1);
            if (tw % 16 == 0) OUT_TRANSFORM(y0, y1, mi, ms, tw, v16, v16u, 16, 16)
            else OUT_TRANSFORM(y0, y1, mi, ms, tw, v8, v8u, 8, 8)
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
