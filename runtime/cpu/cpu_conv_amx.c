/* cpu_conv_amx.c - bf16 3x3 convolutions on AMX tiles, stride 1 and (on x's four phases)
 * stride 2 (--precision bf16 on a CPU with AMX-BF16; cpu_bf16.c decides, cpu_conv.c
 * calls): forward, input gradient and weight gradient, each as tile products
 * (TDPBF16PS: 16x32 bf16 times 32x16 bf16 into 16x16 fp32) with fp32 accumulation.
 * Compiled alone with -mamx-tile -mamx-bf16 (runtime/meson.build); nothing here runs
 * unless the CPU has AMX and the kernel let the process use its tile data
 * (rtp_cpu_amx_enable).
 *
 * Layouts (a padded-width grid, as cpu_conv_direct.c's): each image's planes are
 * copied once, rounded to bf16, into a zero-bordered buffer of rows wp = W + 2 pad;
 * output position i = p*wp + q reads input i + r*wp + s for tap (r,s), so a tile row is
 * a contiguous run. Forward and input gradient: input channels go in pairs, each grid
 * position a 32-bit (c, c+1) pair ([C/2][plane] uint32: the tiles' "VNNI" rows), and a
 * B tile is KP channel pairs x 16 positions at one tap (rows one plane apart); the
 * weights are packed as A tiles, 16 output rows x KP pairs, per tap and block of pairs.
 * The result is computed over the grid (32 positions a step) and the extra columns are
 * dropped when it is copied out. The input gradient is the forward on dy (bordered by
 * 2 - pad) with the weights transposed and flipped. Weight gradient: an A tile is 16
 * input channels x 32 grid positions of x (plain bf16 planes, any start: the tap's
 * offset), a B tile 32 positions (16 pairs) x 16 output channels of dy (pairs of
 * positions, zero at the extra columns), C tiles accumulate dW[c][t][k] over the image;
 * per fixed group of RTP_CONV_GROUP images, the groups summed in order. Every sum has a
 * fixed order for a given CPU, so results are the same bits for any thread count.
 *
 * Stride 2 (pad 1, even planes): x[2i + a][2j + b] is phase (a, b), a plane of P x Q on
 * its own grid (rows Q + 1, a zero row and column above and left); filter row r reads
 * phase row a = (r != 1), one row down unless r = 0 (the same for columns), so each tap
 * is a stride-1 product on one phase: the forward and weight gradient are the passes
 * above with their taps' offsets reaching into the four phases. The input gradient's
 * phase (a, b) of dx is a forward-shaped product of dy with its 1, 2 or 4 taps.
 */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "cpu_amx_tiles.h"
#include "cpu_conv_amx.h"
#include "cpu_conv_layout.h"
#include "cpu_internal.h"

/* ---- geometry ---- */

typedef struct amx_geom {
    int wp, hp, rows, pad; /* padded row width and rows, output rows, border */
    size_t L, Lr;          /* grid positions, rounded up to 32 */
    size_t cs;             /* 32-bit cells per padded plane (room for the overreach) */
} amx_geom;

static amx_geom geom_of(int H, int W, int pad)
{
    amx_geom g;
    g.pad = pad;
    g.wp = W + 2 * pad;
    g.hp = H + 2 * pad;
    g.rows = g.hp - 2;
    g.L = (size_t)g.rows * g.wp;
    g.Lr = (g.L + 31) / 32 * 32;
    g.cs = rtp_r16((size_t)g.hp * g.wp + 2 * (size_t)g.wp + 64);
    return g;
}

/* a stride-2 phase's grid: P x Q outputs on rows of Q + 1, tap offsets 0 or 1 down and
 * right, the values at a border of `pad` (1: x's phases, zero row and column above and
 * left; 0: dy's planes) */
static amx_geom geom_s2(int P, int Q, int pad)
{
    amx_geom g;
    g.pad = pad;
    g.wp = Q + 1;
    g.hp = P + 1;
    g.rows = P;
    g.L = (size_t)g.rows * g.wp;
    g.Lr = (g.L + 31) / 32 * 32;
    g.cs = rtp_r16((size_t)g.hp * g.wp + 2 * (size_t)g.wp + 64);
    return g;
}

/* channel pairs, pairs per block (a B tile's rows), blocks */
typedef struct pairs {
    int CP, KP, NB;
} pairs;

static pairs pairs_of(int C)
{
    pairs p;
    p.CP = (C + 1) / 2;
    p.KP = p.CP < 16 ? p.CP : 16;
    p.NB = (p.CP + p.KP - 1) / p.KP;
    return p;
}

static size_t r16(size_t n) { return rtp_r16(n); }

/* forward-shaped pass (ins -> rows, x in `ph` phases): floats per thread and for the
 * packed weights */
static size_t fwd_thread_floats(int ins, int rows, const amx_geom *g, int ph)
{
    pairs p = pairs_of(ins);
    return r16((size_t)ph * p.NB * p.KP * g->cs) + r16((size_t)rtp_round_up(rows, 16) * g->Lr);
}
static size_t fwd_weight_floats(int ins, int rows)
{
    pairs p = pairs_of(ins);
    return r16((size_t)9 * p.NB * rtp_round_up(rows, 16) * p.KP);
}
/* weight gradient: bf16 x planes ([Cr][csb] 16-bit) and dy pairs ([Lr/2][Kr] 32-bit) */
static size_t wg_thread_floats(const rt_conv_desc *d, const amx_geom *g, int ph)
{
    size_t Cr = (size_t)rtp_round_up(d->C, 16), Kr = (size_t)rtp_round_up(d->K, 16);
    /* 16-bit planes, 32-bit pairs, dy's channels on the 16-bit grid, a row of sums */
    return r16((size_t)ph * Cr * g->cs / 2 + 32) + r16(g->Lr / 2 * Kr) + r16(g->Lr / 2 * Kr) + Kr;
}
static size_t wg_acc_floats(const rt_conv_desc *d)
{
    return r16((size_t)rtp_round_up(d->C, 16) * 9 * rtp_round_up(d->K, 16));
}

int rtp_cpu_amx_s2_takes(const rt_conv_desc *d)
{
    return rt_conv_groups(d) == 1 && d->R == 3 && d->S == 3 && d->stride == 2 && d->pad == 1 &&
           d->H % 2 == 0 && d->W % 2 == 0 && d->P == d->H / 2 && d->Q == d->W / 2 && d->C >= 16 &&
           d->K >= 16 && d->C <= RTP_CONV_MAX_CH && d->K <= RTP_CONV_MAX_CH;
}

/* A convolution's grids and its workspace's places: threads' scratch (per floats each),
 * the packed weights (wts floats), then the weight gradient's group partials */
typedef struct plan {
    int ph;        /* x's phases: 1, or 4 at stride 2 */
    amx_geom f, b; /* forward and weight gradient grid (x), input gradient grid (dy) */
    size_t per, wts;
} plan;

static plan plan_of(const rt_conv_desc *d)
{
    plan l;
    l.ph = d->stride == 2 ? 4 : 1;
    l.f = l.ph == 4 ? geom_s2(d->P, d->Q, 1) : geom_of(d->H, d->W, d->pad);
    l.b = l.ph == 4 ? geom_s2(d->P, d->Q, 0) : geom_of(d->P, d->Q, 2 - d->pad);
    size_t a = fwd_thread_floats(d->C, d->K, &l.f, l.ph),
           b = fwd_thread_floats(d->K, d->C, &l.b, 1);
    size_t c = wg_thread_floats(d, &l.f, l.ph);
    l.per = a > b ? a : b;
    l.per = l.per > c ? l.per : c;
    size_t wa = fwd_weight_floats(d->C, d->K), wb = fwd_weight_floats(d->K, d->C);
    l.wts = wa > wb ? wa : wb;
    return l;
}

static size_t nthreads(const rt_backend *b) { return (size_t)(b->threads > 0 ? b->threads : 1); }

size_t rtp_cpu_amx_workspace(int threads, const rt_conv_desc *d)
{
    const size_t T = (size_t)(threads > 0 ? threads : 1);
    const plan l = plan_of(d);
    return (T * l.per + l.wts + (size_t)rtp_conv_groups(d->N) * wg_acc_floats(d)) * sizeof(float);
}

/* ---- forward-shaped pass ---- */

/* xp[cp][...] <- the pairs of channels (2cp, 2cp+1) of x (ins x H x W) in bf16, at the
 * grid's places (border g->pad); borders and pad channels stay as zeroed */
static void pair_planes(uint32_t *restrict xp, const float *restrict x, int ins, int H, int W,
                        const amx_geom *g)
{
    const size_t hw = (size_t)H * W, top = (size_t)g->pad * g->wp + g->pad;
    for (int c = 0; c < ins; c += 2) {
        const float *a = x + (size_t)c * hw, *b = c + 1 < ins ? a + hw : NULL;
        uint32_t *o = xp + (size_t)(c / 2) * g->cs + top;
        for (int h = 0; h < H; h++, o += g->wp, a += W, b = b ? b + W : NULL)
            rtp_amx_bf16_pairs(o, a, b, (size_t)W);
    }
}

/* x's four stride-2 phases (a, b: x[2i + a][2j + b], the phase a*2 + b, ps cells apart),
 * each as pair_planes lays out a plane of H/2 x W/2 at the grid's border */
static void pair_phases(uint32_t *restrict xp, size_t ps, const float *restrict x, int ins, int H,
                        int W, const amx_geom *g)
{
    const size_t hw = (size_t)H * W, top = (size_t)g->pad * g->wp + g->pad;
    for (int ph = 0; ph < 4; ph++)
        for (int c = 0; c < ins; c += 2) {
            const float *a = x + (size_t)c * hw + (size_t)(ph / 2) * W + ph % 2;
            const float *b = c + 1 < ins ? a + hw : NULL;
            uint32_t *o = xp + ps * (size_t)ph + (size_t)(c / 2) * g->cs + top;
            for (int h = 0; h < H / 2; h++, o += g->wp, a += 2 * W, b = b ? b + 2 * W : NULL)
                rtp_amx_bf16_pairs_s2(o, a, b, (size_t)W / 2);
        }
}

/* A tiles: wa[((t*NB + cb)*KB16 + kb)][16 rows][KP pairs] (bf16 pairs as uint32) <- the
 * weights Wt [rows][ins][9] (or, transposed, [ins][rows][9]) at tap tap[t] */
static void pack_weights(uint32_t *wa, const float *Wt, int rows, int ins, const int *tap,
                         int transposed)
{
    const pairs p = pairs_of(ins);
    const int KB16 = rtp_round_up(rows, 16) / 16;
    for (int t = 0; t < 9; t++)
        for (int cb = 0; cb < p.NB; cb++)
            for (int kb = 0; kb < KB16; kb++) {
                uint32_t *o = wa + (((size_t)t * p.NB + cb) * KB16 + kb) * 16 * p.KP;
                for (int r = 0; r < 16; r++)
                    for (int j = 0; j < p.KP; j++) {
                        int k = kb * 16 + r, c0 = (cb * p.KP + j) * 2;
                        uint32_t v = 0;
                        for (int h = 0; h < 2; h++) {
                            int c = c0 + h;
                            if (k >= rows || c >= ins) continue;
                            size_t at = transposed ? ((size_t)c * rows + k) * 9 + tap[t]
                                                   : ((size_t)k * ins + c) * 9 + tap[t];
                            v |= rtp_bf16_bits(Wt[at]) << (16 * h);
                        }
                        o[(size_t)r * p.KP + j] = v;
                    }
            }
}

/* C: 16 rows x 16 fp32; A: 16 rows x KP pairs; B: KP rows of 16 pairs */
static void fwd_config(int KP)
{
    const uint8_t kp = (uint8_t)KP;
    const uint8_t rows[8] = {16, 16, 16, 16, 16, 16, kp, kp};
    const uint16_t ab = (uint16_t)(KP * 4), colsb[8] = {64, 64, 64, 64, ab, ab, 64, 64};
    rtp_amx_config(rows, colsb);
}

/* The taps a pass sums: tap t reads the packed weights of tap w[t] and the input cells
 * at off[t] past the output's grid position (a stride-2 phase's plane included). */
typedef struct amx_taps {
    int n, w[9];
    size_t off[9];
} amx_taps;

/* the 3x3 filter's 9 taps on one grid */
static amx_taps taps3x3(const amx_geom *g)
{
    amx_taps a = {.n = 9};
    for (int t = 0; t < 9; t++) a.w[t] = t, a.off[t] = (size_t)(t / 3) * g->wp + t % 3;
    return a;
}

/* grid[k*Lr + i] for k < KB16*16, i < Lr <- the tile products over the taps */
static void fwd_tiles(const uint32_t *xp, const uint32_t *wa, float *grid, const amx_geom *g,
                      const pairs *p, int KB16, const amx_taps *tp)
{
    const size_t *off = tp->off;
    const size_t xs = g->cs * 4, ys = g->Lr * 4, as = (size_t)p->KP * 4;
    const size_t ablk = (size_t)16 * p->KP; /* uint32 per A tile */
    int kb = 0;
    for (; kb + 2 <= KB16; kb += 2)
        for (size_t i = 0; i < g->Lr; i += 32) {
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (int t = 0; t < tp->n; t++)
                for (int cb = 0; cb < p->NB; cb++) {
                    const uint32_t *a = wa + (((size_t)tp->w[t] * p->NB + cb) * KB16 + kb) * ablk;
                    const uint32_t *x = xp + (size_t)cb * p->KP * g->cs + i + off[t];
                    _tile_loadd(4, a, as);
                    _tile_loadd(5, a + ablk, as);
                    _tile_loadd(6, x, xs);
                    _tile_loadd(7, x + 16, xs);
                    _tile_dpbf16ps(0, 4, 6);
                    _tile_dpbf16ps(1, 4, 7);
                    _tile_dpbf16ps(2, 5, 6);
                    _tile_dpbf16ps(3, 5, 7);
                }
            float *y = grid + (size_t)kb * 16 * g->Lr + i;
            _tile_stored(0, y, ys);
            _tile_stored(1, y + 16, ys);
            _tile_stored(2, y + 16 * g->Lr, ys);
            _tile_stored(3, y + 16 * g->Lr + 16, ys);
        }
    for (; kb < KB16; kb++)
        for (size_t i = 0; i < g->Lr; i += 32) {
            _tile_zero(0);
            _tile_zero(1);
            for (int t = 0; t < tp->n; t++)
                for (int cb = 0; cb < p->NB; cb++) {
                    const uint32_t *a = wa + (((size_t)tp->w[t] * p->NB + cb) * KB16 + kb) * ablk;
                    const uint32_t *x = xp + (size_t)cb * p->KP * g->cs + i + off[t];
                    _tile_loadd(4, a, as);
                    _tile_loadd(6, x, xs);
                    _tile_loadd(7, x + 16, xs);
                    _tile_dpbf16ps(0, 4, 6);
                    _tile_dpbf16ps(1, 4, 7);
                }
            float *y = grid + (size_t)kb * 16 * g->Lr + i;
            _tile_stored(0, y, ys);
            _tile_stored(1, y + 16, ys);
        }
}

/* For each of N images: out (rows x oh x ow, + bias, moments into mom unless NULL) <-
 * the weights Wt (taps tap[], transposed or not) applied to in (ins x ih x iw) on the
 * grid g at the taps tp (x in ph phases: 1, or 4 at stride 2) */
static void fwd_pass(rt_backend *b, float *ws, const float *Wt, const int *tap, int transposed,
                     const float *in, int ins, int ih, int iw, const amx_geom *g,
                     const amx_taps *tp, int ph, int N, float *out, double *mom, int rows, int oh,
                     int ow, const float *bias, size_t per)
{
    const pairs p = pairs_of(ins);
    const int KB16 = rtp_round_up(rows, 16) / 16;
    const int T = rtp_conv_threads(b, N);
    uint32_t *wa = (uint32_t *)(ws + nthreads(b) * per);
    pack_weights(wa, Wt, rows, ins, tap, transposed);
    const size_t in_img = (size_t)ins * ih * iw, out_img = (size_t)rows * oh * ow;
    const size_t mom_img = (size_t)rows * (RT_MOMENT_FLOATS / 2), ps = (size_t)p.NB * p.KP * g->cs;
#pragma omp parallel num_threads(T)
    {
        float *mine = ws + per * (size_t)omp_get_thread_num();
        uint32_t *xp = (uint32_t *)mine;
        float *grid = mine + r16((size_t)ph * ps);
        memset(xp, 0, (size_t)ph * ps * 4);
        fwd_config(p.KP);
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < N; n++) {
            if (ph == 4) pair_phases(xp, ps, in + in_img * (size_t)n, ins, ih, iw, g);
            else pair_planes(xp, in + in_img * (size_t)n, ins, ih, iw, g);
            fwd_tiles(xp, wa, grid, g, &p, KB16, tp);
            float *y = out + out_img * (size_t)n;
            rtp_conv_compact(y, grid, rows, oh, ow, g->wp, g->Lr, bias);
            if (mom) rtp_cpu_plane_moments(mom + mom_img * (size_t)n, y, rows, (size_t)oh * ow);
        }
        _tile_release();
    }
}

/* the stride-2 taps on x's phases (ps cells apart): filter row r reads phase row a =
 * (r != 1) at offset (r != 0), the same for columns */
static amx_taps taps_s2(const amx_geom *g, size_t ps)
{
    amx_taps a = {.n = 9};
    for (int r = 0; r < 3; r++)
        for (int s = 0; s < 3; s++) {
            const int t = r * 3 + s, ph = (r != 1) * 2 + (s != 1);
            a.w[t] = t;
            a.off[t] = ps * (size_t)ph + (size_t)(r != 0) * g->wp + (s != 0);
        }
    return a;
}

static const int fwd_taps[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
static const int flip_taps[9] = {8, 7, 6, 5, 4, 3, 2, 1, 0};

void rtp_cpu_amx_fwd(rt_backend *b, float *ws, rt_tensor *out, double *mom, const rt_tensor *in,
                     const rt_tensor *w, const rt_tensor *bias, const rt_conv_desc *d)
{
    const plan l = plan_of(d);
    const pairs p = pairs_of(d->C);
    const amx_taps tp = l.ph == 4 ? taps_s2(&l.f, (size_t)p.NB * p.KP * l.f.cs) : taps3x3(&l.f);
    fwd_pass(b, ws, w->data, fwd_taps, 0, in->data, d->C, d->H, d->W, &l.f, &tp, l.ph, d->N,
             out->data, mom, d->K, d->P, d->Q, bias ? bias->data : NULL, l.per);
}

/* dx's stride-2 phase (a, b) (dx[2i + a][2j + b]) gathers dy[i + du][j + dv] through the
 * filter's tap (r, s): for a = 0 only r = 1 (du 0), for a = 1 r = 0 (du 1) and r = 2 (du 0);
 * the same for columns. Offsets on dy's grid g. */
static amx_taps taps_dx_phase(const amx_geom *g, int a, int b)
{
    static const int rs[2][2] = {{1, -1}, {0, 2}}; /* the taps of phase 0 and 1 */
    amx_taps t = {.n = 0};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            const int r = rs[a][i], s = rs[b][j];
            if (r < 0 || s < 0) continue;
            t.w[t.n] = r * 3 + s;
            t.off[t.n++] = (size_t)(r == 0) * g->wp + (s == 0);
        }
    return t;
}

/* The input gradient at stride 2: per image dy's pairs once, then each phase of dx as a
 * forward-shaped product over its taps, scattered into dx's places */
static void bwd_data_s2(rt_backend *b, float *ws, float *dx, const float *dy, const float *Wt,
                        const rt_conv_desc *d, const plan *l)
{
    const amx_geom *g = &l->b;
    const pairs p = pairs_of(d->K);
    const int CB16 = rtp_round_up(d->C, 16) / 16;
    uint32_t *wa = (uint32_t *)(ws + nthreads(b) * l->per);
    pack_weights(wa, Wt, d->C, d->K, fwd_taps, 1);
    amx_taps tp[4];
    for (int ph = 0; ph < 4; ph++) tp[ph] = taps_dx_phase(g, ph / 2, ph % 2);
    const size_t dy_img = (size_t)d->K * d->P * d->Q, dx_img = (size_t)d->C * d->H * d->W;
    const size_t ps = (size_t)p.NB * p.KP * g->cs, hw = (size_t)d->H * d->W;
#pragma omp parallel num_threads(rtp_conv_threads(b, d->N))
    {
        float *mine = ws + l->per * (size_t)omp_get_thread_num();
        uint32_t *xp = (uint32_t *)mine;
        float *grid = mine + r16(ps);
        memset(xp, 0, ps * 4);
        fwd_config(p.KP);
#pragma omp for schedule(dynamic, 1)
        for (int n = 0; n < d->N; n++) {
            pair_planes(xp, dy + dy_img * (size_t)n, d->K, d->P, d->Q, g);
            float *o = dx + dx_img * (size_t)n;
            for (int ph = 0; ph < 4; ph++) {
                fwd_tiles(xp, wa, grid, g, &p, CB16, &tp[ph]);
                for (int c = 0; c < d->C; c++)
                    rtp_conv_scatter_rows2(o + hw * (size_t)c + (size_t)(ph / 2) * d->W + ph % 2,
                                           2 * (size_t)d->W, grid + g->Lr * (size_t)c,
                                           (size_t)g->wp, d->P, d->Q);
            }
        }
        _tile_release();
    }
}

void rtp_cpu_amx_bwd_data(rt_backend *b, float *ws, rt_tensor *din, const rt_tensor *dout,
                          const rt_tensor *w, const rt_conv_desc *d)
{
    const plan l = plan_of(d);
    if (l.ph == 4) {
        bwd_data_s2(b, ws, din->data, dout->data, w->data, d, &l);
        return;
    }
    const amx_taps tp = taps3x3(&l.b);
    fwd_pass(b, ws, w->data, flip_taps, 1, dout->data, d->K, d->P, d->Q, &l.b, &tp, 1, d->N,
             din->data, NULL, d->C, d->H, d->W, NULL, l.per);
}

/* ---- weight gradient ---- */

/* xb[c][...] <- channel c of x (C x H x W) in bf16 at the grid's places (border g->pad) */
static void bf16_planes(uint16_t *restrict xb, const float *restrict x, int C, int H, int W,
                        const amx_geom *g)
{
    const size_t hw = (size_t)H * W, top = (size_t)g->pad * g->wp + g->pad, csb = g->cs;
    for (int c = 0; c < C; c++) {
        const float *a = x + (size_t)c * hw;
        uint16_t *o = xb + (size_t)c * csb + top;
        for (int h = 0; h < H; h++, o += g->wp, a += W) rtp_amx_bf16_row(o, a, (size_t)W);
    }
}

/* x's four stride-2 phases as bf16_planes lays out planes of H/2 x W/2 (phase a*2 + b:
 * x[2i + a][2j + b]), ps 16-bit cells apart */
static void bf16_phases(uint16_t *restrict xb, size_t ps, const float *restrict x, int C, int H,
                        int W, const amx_geom *g)
{
    const size_t hw = (size_t)H * W, top = (size_t)g->pad * g->wp + g->pad, csb = g->cs;
    for (int ph = 0; ph < 4; ph++)
        for (int c = 0; c < C; c++) {
            const float *a = x + (size_t)c * hw + (size_t)(ph / 2) * W + ph % 2;
            uint16_t *o = xb + ps * (size_t)ph + (size_t)c * csb + top;
            for (int h = 0; h < H / 2; h++, o += g->wp, a += 2 * W)
                rtp_amx_bf16_row_s2(o, a, (size_t)W / 2);
        }
}

/* dv[i/2][k] <- (dy[k] at grid position i, at i + 1) for i < Lr (even): output (p, q) at
 * i = p*wp + q, 0 at the extra columns and past the grid (as zeroed) */
static void dy_pairs(uint32_t *restrict dv, uint16_t *restrict rows, const float *restrict dy,
                     int K, int Kr, int P, int Q, const amx_geom *g)
{
    /* rows: each channel on the grid in bf16 (0 at the extra columns, as zeroed), read as
     * rows of 32-bit pairs and transposed */
    for (int k = 0; k < K; k++)
        for (int p = 0; p < P; p++)
            rtp_amx_bf16_row(rows + (size_t)k * g->Lr + (size_t)p * g->wp,
                             dy + ((size_t)k * P + p) * Q, (size_t)Q);
    rtp_amx_transpose32(dv, (size_t)Kr, (const uint32_t *)rows, g->Lr / 2, K, g->Lr / 2);
}

/* acc[(c*9 + t)*Kr + k] += the image's products (c < Cr, k < Kr, tiles of 16 x 16) for
 * the 9 taps t, x read at off[t] (16-bit cells) past the output's grid position */
static void wg_tiles(const uint16_t *xb, const uint32_t *dv, float *acc, const amx_geom *g, int Cr,
                     int Kr, const size_t off9[9])
{
    const size_t csb = g->cs, as = csb * 2, bs = (size_t)Kr * 4, cs9 = (size_t)9 * Kr * 4;
    for (int c0 = 0; c0 < Cr; c0 += 16)
        for (int t = 0; t < 9; t++) {
            const size_t off = off9[t];
            int kb = 0;
            for (; kb + 32 <= Kr; kb += 32) {
                float *o = acc + ((size_t)c0 * 9 + t) * Kr + kb;
                _tile_loadd(0, o, cs9);
                _tile_loadd(1, o + 16, cs9);
                for (size_t i = 0; i < g->Lr; i += 32) {
                    _tile_loadd(4, xb + (size_t)c0 * csb + i + off, as);
                    _tile_loadd(6, dv + (i / 2) * Kr + kb, bs);
                    _tile_loadd(7, dv + (i / 2) * Kr + kb + 16, bs);
                    _tile_dpbf16ps(0, 4, 6);
                    _tile_dpbf16ps(1, 4, 7);
                }
                _tile_stored(0, o, cs9);
                _tile_stored(1, o + 16, cs9);
            }
            for (; kb < Kr; kb += 16) {
                float *o = acc + ((size_t)c0 * 9 + t) * Kr + kb;
                _tile_loadd(0, o, cs9);
                for (size_t i = 0; i < g->Lr; i += 32) {
                    _tile_loadd(4, xb + (size_t)c0 * csb + i + off, as);
                    _tile_loadd(6, dv + (i / 2) * Kr + kb, bs);
                    _tile_dpbf16ps(0, 4, 6);
                }
                _tile_stored(0, o, cs9);
            }
        }
}

void rtp_cpu_amx_bwd_filter(rt_backend *b, float *ws, rt_tensor *dw, const rt_tensor *dout,
                            const rt_tensor *in, const rt_conv_desc *d)
{
    const plan l = plan_of(d);
    const amx_geom g = l.f;
    const int Cr = rtp_round_up(d->C, 16), Kr = rtp_round_up(d->K, 16), G = rtp_conv_groups(d->N);
    const size_t per = l.per, ps = (size_t)Cr * g.cs; /* 16-bit cells a phase */
    float *accs = ws + nthreads(b) * per + l.wts;
    const size_t accsz = wg_acc_floats(d);
    const size_t xbytes = (size_t)l.ph * ps * 2, dvbytes = g.Lr / 2 * Kr * 4;
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)d->K * d->P * d->Q;
    const float *X = in->data, *DY = dout->data;
    float *DW = dw->data;
    const amx_taps taps = l.ph == 4 ? taps_s2(&g, ps) : taps3x3(&g);
#pragma omp parallel num_threads(rtp_conv_threads(b, G))
    {
        float *mine = ws + per * (size_t)omp_get_thread_num();
        uint16_t *xb = (uint16_t *)mine;
        uint32_t *dv = (uint32_t *)(mine + r16((size_t)l.ph * ps / 2 + 32));
        memset(xb, 0, xbytes);
        memset(dv, 0, dvbytes);
        uint16_t *row = (uint16_t *)((float *)dv + r16(g.Lr / 2 * Kr));
        memset(row, 0, g.Lr * 2 * (size_t)d->K);
        rtp_amx_config_full();
#pragma omp for schedule(dynamic, 1)
        for (int gi = 0; gi < G; gi++) {
            float *acc = accs + accsz * (size_t)gi;
            memset(acc, 0, accsz * sizeof *acc);
            const int n1 = rtp_conv_group_end(gi, d->N);
            for (int n = gi * RTP_CONV_GROUP; n < n1; n++) {
                if (l.ph == 4) bf16_phases(xb, ps, X + chw * (size_t)n, d->C, d->H, d->W, &g);
                else bf16_planes(xb, X + chw * (size_t)n, d->C, d->H, d->W, &g);
                dy_pairs(dv, row, DY + kpq * (size_t)n, d->K, Kr, d->P, d->Q, &g);
                wg_tiles(xb, dv, acc, &g, Cr, Kr, taps.off);
            }
        }
        _tile_release();
        /* dw[k][c][t] = the groups' sums, in group order */
        rtp_amx_group_sums(DW, accs, accsz, G, (size_t)d->C * 9, (size_t)Kr, d->K,
                           (float *)row + r16(g.Lr / 2 * Kr));
    }
}
