/* cpu_dense_amx.c - bf16 dense layers on AMX tiles (--precision bf16 on a CPU with
 * AMX-BF16; cpu_dense.c calls): each product is one tiled GEMM, C (fp32) = A (bf16, rows
 * with the summed index contiguous) x B (bf16 in pairs of the summed index, the tiles'
 * "VNNI" rows), the operands rounded to bf16 as they are packed into the workspace
 * (zero-padded to whole tiles: 32 rows/columns, 32 summed values), blocks of 32 x 32
 * outputs spread over the threads, each block's sum in a fixed order (the same bits for
 * any thread count).
 *   forward:       out[N][O] = in[N][F] w[O][F]^T     (A = in, B = w by rows)
 *   input grad:    din[N][F] = dout[N][O] w[O][F]     (A = dout, B = w by columns)
 *   weight grad:   dw[O][F] = dout[N][O]^T in[N][F]   (A = dout transposed, B = in)
 */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "cpu_amx_tiles.h"
#include "cpu_conv_amx.h"
#include "cpu_internal.h"

static size_t r32(size_t n) { return (n + 31) / 32 * 32; }

/* a GEMM's padded sizes: M x N outputs, K summed */
typedef struct gemm {
    size_t M, N, K;    /* real */
    size_t Mr, Nr, Kr; /* multiples of 32 */
} gemm;

static gemm gemm_of(size_t M, size_t N, size_t K)
{
    gemm g = {M, N, K, r32(M), r32(N), r32(K)};
    return g;
}

/* floats: A (Mr x Kr bf16), B (Kr/2 x Nr pairs), C (Mr x Nr fp32) */
static size_t gemm_floats(const gemm *g)
{
    return g->Mr * g->Kr / 2 + g->Kr / 2 * g->Nr + g->Mr * g->Nr;
}

size_t rtp_cpu_amx_dense_workspace(const rt_dense_desc *d)
{
    size_t N = (size_t)d->N, F = (size_t)d->F, O = (size_t)d->O;
    gemm a = gemm_of(N, O, F), b = gemm_of(N, F, O), c = gemm_of(O, F, N);
    size_t m = gemm_floats(&a);
    m = gemm_floats(&b) > m ? gemm_floats(&b) : m;
    m = gemm_floats(&c) > m ? gemm_floats(&c) : m;
    return (m + 64) * sizeof(float);
}

/* A[r][c] (Kr wide) <- src[r*ld + c] (or, transposed, src[c*ld + r]) for r < M, c < K */
static void pack_a(uint16_t *A, const float *src, size_t ld, int transposed, const gemm *g, int T)
{
#pragma omp parallel for schedule(static) num_threads(T)
    for (size_t r = 0; r < g->Mr; r++) {
        uint16_t *o = A + r * g->Kr;
        if (r >= g->M) {
            memset(o, 0, g->Kr * 2);
            continue;
        }
        if (transposed)
            for (size_t c = 0; c < g->K; c++) o[c] = (uint16_t)rtp_bf16_bits(src[c * ld + r]);
        else rtp_amx_bf16_row(o, src + r * ld, g->K);
        memset(o + g->K, 0, (g->Kr - g->K) * 2);
    }
}

/* B[k/2][n] <- (src[k][n], src[k+1][n]) with src [K][ld] (or, transposed, src[n][k] with
 * src [N][ld]), 0 outside K x N */
static void pack_b(uint32_t *B, const float *src, size_t ld, int transposed, const gemm *g, int T)
{
#pragma omp parallel for schedule(static) num_threads(T)
    for (size_t kp = 0; kp < g->Kr / 2; kp++) {
        uint32_t *o = B + kp * g->Nr;
        const size_t k = 2 * kp;
        if (k >= g->K) {
            memset(o, 0, g->Nr * 4);
            continue;
        }
        const int two = k + 1 < g->K;
        if (transposed)
            for (size_t n = 0; n < g->N; n++)
                o[n] = rtp_bf16_bits(src[n * ld + k]) |
                       (two ? rtp_bf16_bits(src[n * ld + k + 1]) << 16 : 0);
        else rtp_amx_bf16_pairs(o, src + k * ld, two ? src + (k + 1) * ld : NULL, g->N);
        memset(o + g->N, 0, (g->Nr - g->N) * 4);
    }
}

/* C[Mr][Nr] = A B, blocks of 32 x 32 over the threads */
static void gemm_run(const uint16_t *A, const uint32_t *B, float *C, const gemm *g, int T)
{
    const size_t mb = g->Mr / 32, nb = g->Nr / 32;
#pragma omp parallel num_threads(T)
    {
        rtp_amx_config_full();
#pragma omp for schedule(static)
        for (size_t blk = 0; blk < mb * nb; blk++) {
            const size_t m = blk / nb * 32, n = blk % nb * 32;
            rtp_amx_gemm(A + m * g->Kr, g->Kr, B + n, g->Nr, C + m * g->Nr + n, g->Nr, 32, 32,
                         g->Kr, 0);
        }
        _tile_release();
    }
}

/* out[M][N] (ld N) <- C's real part (+ bias[n] when not NULL) */
static void unpack(float *out, const float *C, const float *bias, const gemm *g, int T)
{
#pragma omp parallel for schedule(static) num_threads(T)
    for (size_t m = 0; m < g->M; m++)
        for (size_t n = 0; n < g->N; n++)
            out[m * g->N + n] = C[m * g->Nr + n] + (bias ? bias[n] : 0.0f);
}

static void product(rt_backend *b, float *ws, float *out, const float *a, size_t lda, int at,
                    const float *bsrc, size_t ldb, int bt, const float *bias, gemm g)
{
    const int T = b->threads > 0 ? b->threads : 1;
    uint16_t *A = (uint16_t *)ws;
    uint32_t *B = (uint32_t *)(ws + g.Mr * g.Kr / 2);
    float *C = ws + g.Mr * g.Kr / 2 + g.Kr / 2 * g.Nr;
    pack_a(A, a, lda, at, &g, T);
    pack_b(B, bsrc, ldb, bt, &g, T);
    gemm_run(A, B, C, &g, T);
    unpack(out, C, bias, &g, T);
}

void rtp_cpu_amx_dense_fwd(rt_backend *b, float *ws, rt_tensor *out, const rt_tensor *in,
                           const rt_tensor *w, const rt_tensor *bias, const rt_dense_desc *d)
{
    product(b, ws, out->data, in->data, (size_t)d->F, 0, w->data, (size_t)d->F, 1,
            bias ? bias->data : NULL, gemm_of((size_t)d->N, (size_t)d->O, (size_t)d->F));
}

void rtp_cpu_amx_dense_bwd_data(rt_backend *b, float *ws, rt_tensor *din, const rt_tensor *dout,
                                const rt_tensor *w, const rt_dense_desc *d)
{
    product(b, ws, din->data, dout->data, (size_t)d->O, 0, w->data, (size_t)d->F, 0, NULL,
            gemm_of((size_t)d->N, (size_t)d->F, (size_t)d->O));
}

void rtp_cpu_amx_dense_bwd_filter(rt_backend *b, float *ws, rt_tensor *dw, const rt_tensor *dout,
                                  const rt_tensor *in, const rt_dense_desc *d)
{
    product(b, ws, dw->data, dout->data, (size_t)d->O, 1, in->data, (size_t)d->F, 0, NULL,
            gemm_of((size_t)d->O, (size_t)d->F, (size_t)d->N));
}
