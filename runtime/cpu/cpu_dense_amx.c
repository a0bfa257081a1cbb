/* cpu_dense_amx.c - bf16 dense layers on AMX tiles (--precision bf16 on a CPU with
 * AMX-BF16; cpu_dense.c calls): each product is one tiled GEMM, C (fp32) = A (bf16, rows
 * with the summed index contiguous) x B (bf16 in pairs of the summed index, the tiles'
 * "VNNI" rows), the operands rounded to bf16 as they are packed into the workspace
 * (zero-padded to whole tiles: 32 rows/columns, 32 summed values), blocks of 32 x 32
 * outputs spread over the threads, each block's sum in a fixed order (the same bits for
 * any thread count). The operands are packed piece by piece just before their products
 * so that they are multiplied from cache: the forward (B = the weights by rows, rounded
 * and then transposed in registers) in passes of KSTEP summed values, the gradients in
 * strips of NSTRIP output columns; the blocks wholly inside the output are written to it
 * directly, the others through C.
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
    size_t m = gemm_floats(&a) + a.Kr / 2 * a.Nr; /* + the rows of pack_b_rows */
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

/* o[c] <- bf16(x[c]) for c < n (n may be 0 or less), 0 for n <= c < w; next: the span
 * to be read after this one (NULL: none), asked into L2 meanwhile */
static void row_span(uint16_t *o, const float *x, ptrdiff_t n, size_t w, const float *next)
{
    const size_t m = n <= 0 ? 0 : (size_t)n < w ? (size_t)n : w;
    if (next)
        for (size_t c = 0; c < m; c += 16) _mm_prefetch((const char *)(next + c), _MM_HINT_T1);
    rtp_amx_bf16_row(o, x, m);
    memset(o + m, 0, (w - m) * 2);
}

/* output columns a strip: rows of 1 KB of src, long enough for the prefetchers (a
 * block's 128 bytes a row, 32 columns, left them missing on every row) */
#define NSTRIP 256

/* the strip of columns n0 .. n0 + ns: B[k/2][n] <- (src[k][n], src[k+1][n]) with src
 * [K][ld], 0 outside K x N */
static void pack_b_strip(uint32_t *B, const float *src, size_t ld, const gemm *g, size_t n0,
                         size_t ns)
{
    const size_t cnt = g->N - n0 < ns ? g->N - n0 : ns;
    for (size_t kp = 0; kp < g->Kr / 2; kp++) {
        uint32_t *o = B + kp * g->Nr + n0;
        const size_t k = 2 * kp;
        if (k >= g->K) {
            memset(o, 0, ns * 4);
            continue;
        }
        for (size_t c = 0; k + 3 < g->K && c < cnt; c += 16) {
            _mm_prefetch((const char *)(src + (k + 2) * ld + n0 + c), _MM_HINT_T1);
            _mm_prefetch((const char *)(src + (k + 3) * ld + n0 + c), _MM_HINT_T1);
        }
        rtp_amx_bf16_pairs(o, src + k * ld + n0, k + 1 < g->K ? src + (k + 1) * ld + n0 : NULL,
                           cnt);
        memset(o + cnt, 0, (ns - cnt) * 4);
    }
}

/* the block at m, n over the summed values k .. k + kn: wholly inside M x N it goes to
 * out, else to C (Mr x Nr); acc: k > 0, the sum carried on through memory in fp32 (the
 * order of the sum, and so its bits, as in one pass) */
static void block(const uint16_t *A, const uint32_t *B, float *C, float *out, const gemm *g,
                  size_t m, size_t n, size_t k, size_t kn)
{
    const int inside = m + 32 <= g->M && n + 32 <= g->N;
    float *c = inside ? out + m * g->N + n : C + m * g->Nr + n;
    rtp_amx_gemm(A + m * g->Kr + k, g->Kr, B + k / 2 * g->Nr + n, g->Nr, c, inside ? g->N : g->Nr,
                 32, 32, kn, k > 0);
}

/* summed values a pass of the forward: the pass's A and B panels (2 x 256 KB at the seed
 * CNN's 128 x 128 outputs) stay in L2 from their packing to their use */
#define KSTEP 1024

/* B from src [N][ld] (src[n][k], the weights by rows): A and B packed a pass of KSTEP
 * summed values at a time, then that pass's blocks (each thread the same blocks in every
 * pass). B's rows: 16 rows n of src rounded into R[n] (Kr bf16, whose words are already
 * the pairs along k) and those words transposed into B in registers. */
static void gemm_by_rows(uint16_t *A, uint32_t *B, uint16_t *R, float *C, float *out,
                         const float *a, size_t lda, const float *b, size_t ldb, const gemm *g,
                         int T)
{
    const size_t mb = g->Mr / 32, nb = g->Nr / 32, kw = g->Kr / 2;
#pragma omp parallel num_threads(T)
    {
        rtp_amx_config_full();
        for (size_t k = 0; k < g->Kr; k += KSTEP) {
            const size_t kn = g->Kr - k < KSTEP ? g->Kr - k : KSTEP;
            const ptrdiff_t left = (ptrdiff_t)g->K - (ptrdiff_t)k;
#pragma omp for schedule(static) nowait
            for (size_t r = 0; r < g->Mr; r++)
                row_span(A + r * g->Kr + k, a + r * lda + k, r < g->M ? left : 0, kn,
                         r + 1 < g->M ? a + (r + 1) * lda + k : NULL);
#pragma omp for schedule(static)
            for (size_t n0 = 0; n0 < g->Nr; n0 += 16) {
                for (size_t n = n0; n < n0 + 16; n++)
                    row_span(R + n * g->Kr + k, b + n * ldb + k, n < g->N ? left : 0, kn,
                             n + 1 < g->N ? b + (n + 1) * ldb + k : NULL);
                rtp_amx_transpose32(B + k / 2 * g->Nr + n0, g->Nr,
                                    (const uint32_t *)R + n0 * kw + k / 2, kw, 16, kn / 2);
            }
#pragma omp for schedule(static) nowait
            for (size_t blk = 0; blk < mb * nb; blk++)
                block(A, B, C, out, g, blk / nb * 32, blk % nb * 32, k, kn);
        }
        _tile_release();
    }
}

/* B from src [K][ld] (src[k][n]): A packed first, then each thread a strip of NSTRIP
 * columns at a time, packed and multiplied while it is in cache */
static void gemm_by_cols(uint16_t *A, uint32_t *B, float *C, float *out, const float *a, size_t lda,
                         int at, const float *b, size_t ldb, const gemm *g, int T)
{
    pack_a(A, a, lda, at, g, T);
#pragma omp parallel num_threads(T)
    {
        rtp_amx_config_full();
#pragma omp for schedule(static)
        for (size_t n0 = 0; n0 < g->Nr; n0 += NSTRIP) {
            const size_t ns = g->Nr - n0 < NSTRIP ? g->Nr - n0 : NSTRIP;
            pack_b_strip(B, b, ldb, g, n0, ns);
            for (size_t m = 0; m < g->Mr; m += 32)
                for (size_t n = n0; n < n0 + ns; n += 32) block(A, B, C, out, g, m, n, 0, g->Kr);
        }
        _tile_release();
    }
}

/* out[M][N]: the blocks that crossed the edge from C, then + bias[n] when not NULL */
static void unpack(float *out, const float *C, const float *bias, const gemm *g, int T)
{
    const size_t M32 = g->M / 32 * 32, N32 = g->N / 32 * 32;
#pragma omp parallel for schedule(static) num_threads(T)
    for (size_t m = 0; m < g->M; m++) {
        const size_t from = m < M32 ? N32 : 0;
        float *o = out + m * g->N;
        if (bias)
            for (size_t n = 0; n < from; n++) o[n] += bias[n];
        for (size_t n = from; n < g->N; n++) o[n] = C[m * g->Nr + n] + (bias ? bias[n] : 0.0f);
    }
}

/* out = a b (+ bias): a [M][K] (lda; at: stored [K][M]), b [K][N] (ldb; bt: stored [N][K],
 * a not transposed) */
static void product(rt_backend *b, float *ws, float *out, const float *a, size_t lda, int at,
                    const float *bsrc, size_t ldb, int bt, const float *bias, gemm g)
{
    const int T = b->threads > 0 ? b->threads : 1;
    uint16_t *A = (uint16_t *)ws;
    uint32_t *B = (uint32_t *)(ws + g.Mr * g.Kr / 2);
    float *C = ws + g.Mr * g.Kr / 2 + g.Kr / 2 * g.Nr;
    if (bt) gemm_by_rows(A, B, (uint16_t *)(C + g.Mr * g.Nr), C, out, a, lda, bsrc, ldb, &g, T);
    else gemm_by_cols(A, B, C, out, a, lda, at, bsrc, ldb, &g, T);
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
