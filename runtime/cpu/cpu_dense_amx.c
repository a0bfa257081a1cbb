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

#include "cpu_conv_amx.h"
#include "cpu_internal.h"

typedef struct tilecfg {
    uint8_t palette, start;
    uint8_t res[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;

static inline uint32_t bf16_bits(float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    if ((v & 0x7FFFFFFFu) > 0x7F800000u) return (v >> 16) | 0x40u;
    return (v + 0x7FFFu + ((v >> 16) & 1u)) >> 16;
}

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
            for (size_t c = 0; c < g->K; c++) o[c] = (uint16_t)bf16_bits(src[c * ld + r]);
        else
            for (size_t c = 0; c < g->K; c++) o[c] = (uint16_t)bf16_bits(src[r * ld + c]);
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
                o[n] =
                    bf16_bits(src[n * ld + k]) | (two ? bf16_bits(src[n * ld + k + 1]) << 16 : 0);
        else
            for (size_t n = 0; n < g->N; n++)
                o[n] =
                    bf16_bits(src[k * ld + n]) | (two ? bf16_bits(src[(k + 1) * ld + n]) << 16 : 0);
        memset(o + g->N, 0, (g->Nr - g->N) * 4);
    }
}

static void config(void)
{
    tilecfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int i = 0; i < 8; i++) c.rows[i] = 16, c.colsb[i] = 64;
    _tile_loadconfig(&c);
}

/* C[Mr][Nr] = A B, blocks of 32 x 32 over the threads */
static void gemm_run(const uint16_t *A, const uint32_t *B, float *C, const gemm *g, int T)
{
    const size_t mb = g->Mr / 32, nb = g->Nr / 32, as = g->Kr * 2, bs = g->Nr * 4, cs = g->Nr * 4;
#pragma omp parallel num_threads(T)
    {
        config();
#pragma omp for schedule(static)
        for (size_t blk = 0; blk < mb * nb; blk++) {
            const size_t m = blk / nb * 32, n = blk % nb * 32;
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (size_t k = 0; k < g->Kr; k += 32) {
                const uint16_t *a = A + m * g->Kr + k;
                const uint32_t *bp = B + k / 2 * g->Nr + n;
                _tile_loadd(4, a, as);
                _tile_loadd(5, a + 16 * g->Kr, as);
                _tile_loadd(6, bp, bs);
                _tile_loadd(7, bp + 16, bs);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
            float *c = C + m * g->Nr + n;
            _tile_stored(0, c, cs);
            _tile_stored(1, c + 16, cs);
            _tile_stored(2, c + 16 * g->Nr, cs);
            _tile_stored(3, c + 16 * g->Nr + 16, cs);
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
