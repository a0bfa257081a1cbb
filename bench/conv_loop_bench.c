/* conv_loop_bench.c - the direct convolution's inner loops (runtime/cpu/cpu_conv_kern.c)
 * alone, on one thread, at ResNet-20's shapes: G multiply-adds per second of each loop
 * on buffers laid out as the convolutions lay them out (cpu_conv_direct.c, cpu_conv_s2.c),
 * data in cache as it is after the copy in. Counts only the multiply-adds of the output
 * positions kept (not the dropped grid columns), so a layout that wastes work scores
 * lower; the Winograd lines (cpu_conv_wino.c: transforms and products of one image)
 * count the direct convolution's multiply-adds, so they compare with it. Prints one line per loop and shape and, last, the sum over one ResNet-20
 * image's forward, input gradient and weight gradient as a multiply-add-weighted rate.
 *
 *   conv_loop_bench [--isa avx512|avx2] [--ms M]   (M: time per line, default 300)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu_conv_kern.h"
#include "cpu/cpu_conv_wino.h"

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t r16(size_t n) { return (n + 15) / 16 * 16; }

static float *buf(size_t n)
{
    float *p = aligned_alloc(64, r16(n) * sizeof *p);
    if (!p) {
        fprintf(stderr, "conv_loop_bench: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    return p;
}

typedef struct loops {
    const rtp_convk *k;
    double ms;
    double macs, secs; /* the weighted total */
} loops;

/* Seconds per call of f(arg): the best of runs of about 5 ms each, for ms in all (the
 * best, not the mean, so that other processes' time slices and cache pollution on a
 * loaded machine count as little as they can). */
static double timeit(void (*f)(void *), void *arg, double ms)
{
    f(arg);
    double best = 1e30, t0 = cpu_s(), t1 = t0;
    long n = 1;
    while ((t1 - t0) * 1e3 < ms) {
        double t = cpu_s();
        for (long i = 0; i < n; i++) f(arg);
        double dt = (cpu_s() - t) / (double)n;
        if (dt < best) best = dt;
        if (dt * (double)n < 5e-3) n *= 2;
        t1 = cpu_s();
    }
    return best;
}

static void report(loops *L, const char *what, double macs, double s, int times)
{
    printf("%-34s %7.2f GMAC/s  %8.1f us\n", what, macs / s * 1e-9, s * 1e6);
    L->macs += macs * times;
    L->secs += s * times;
}

/* ---- forward loop (also the stride-1 input gradient): the tight layout, border 1 ---- */
typedef struct fwd_arg {
    const rtp_convk *k;
    const float *x, *w;
    float *y;
    size_t cs, ys, nvec;
    int C, T, Kr;
    int off[9];
} fwd_arg;

static void fwd_call(void *p)
{
    fwd_arg *a = p;
    a->k->fwd(a->x, a->cs, a->C, a->off, a->T, a->w, a->y, a->ys, a->Kr, a->nvec);
}

#define LEAD 16
static void bench_tight(loops *L, int C, int K, int H, int W, int times)
{
    fwd_arg a = {.k = L->k, .C = C, .T = 9, .Kr = K};
    size_t tps = r16(LEAD + (size_t)(H + 2) * W + 16);
    for (int t = 0; t < 9; t++) a.off[t] = (t % 3) * (int)tps + LEAD + (t / 3) * W + t % 3 - 1;
    a.cs = 3 * tps;
    a.ys = (size_t)H * W;
    a.nvec = (size_t)H * W / (size_t)L->k->vec;
    float *x = buf((size_t)C * a.cs), *w = buf((size_t)K * C * 9), *y = buf((size_t)K * a.ys);
    a.x = x, a.w = w, a.y = y;
    char what[64];
    snprintf(what, sizeof what, "fwd tight %dx%d %dx%d", C, K, H, W);
    report(L, what, (double)K * C * 9 * H * W, timeit(fwd_call, &a, L->ms), times);
    free(x), free(w), free(y);
}

/* ---- the same convolution by Winograd's F(2x2, 3x3), transforms included ---- */
typedef struct wino_arg {
    const rtp_convk *k;
    float *in_ws, *out_ws, *y;
    const float *x, *wpk;
    int C, K, H, W;
} wino_arg;

static void wino_call(void *p)
{
    wino_arg *a = p;
    rtp_conv_wino_image(a->k, a->in_ws, a->out_ws, a->x, a->C, a->H, a->W, a->wpk, a->y, a->K,
                        a->K);
}

static void bench_wino(loops *L, int C, int K, int H, int W, int times)
{
    wino_arg a = {.k = L->k, .C = C, .K = K, .H = H, .W = W};
    float *x = buf((size_t)C * H * W), *wpk = buf(rtp_conv_wino_weight_floats(K, C));
    float *in_ws = buf(rtp_conv_wino_in_floats(C, H, W));
    float *out_ws = buf(rtp_conv_wino_out_floats(K, H, W)), *y = buf((size_t)K * H * W);
    a.x = x, a.wpk = wpk, a.in_ws = in_ws, a.out_ws = out_ws, a.y = y;
    char what[64];
    snprintf(what, sizeof what, "winograd %dx%d %dx%d", C, K, H, W);
    report(L, what, (double)K * C * 9 * H * W, timeit(wino_call, &a, L->ms), times);
    free(x), free(wpk), free(in_ws), free(out_ws), free(y);
}

/* A stride-2 RxR convolution's phase planes (4 of (P+1) x (Q+1) for a 3x3, 1 of P x Q for
 * a 1x1): the taps' offsets; returns the floats per channel. */
static size_t s2_planes(int off[9], int R, int P, int Q)
{
    const int E = (R - 1) / 2, nph = R == 3 ? 4 : 1, wq = Q + E;
    const size_t ps = (size_t)(P + E) * wq;
    for (int t = 0; t < R * R; t++) {
        int r = t / R, s = t % R, ph = nph == 4 ? (r % 2) * 2 + s % 2 : 0;
        off[t] = ph * (int)ps + (r / 2) * wq + s / 2;
    }
    return r16(nph * ps + 18);
}

/* the stride-2 forward: R*R taps over a P x (Q+E) grid */
static void bench_s2(loops *L, int C, int K, int P, int Q, int R, int times)
{
    fwd_arg a = {.k = L->k, .C = C, .T = R * R, .Kr = K};
    const int E = (R - 1) / 2, nph = R == 3 ? 4 : 1, wq = Q + E;
    a.cs = s2_planes(a.off, R, P, Q);
    const int V = L->k->vec;
    a.nvec = ((size_t)P * wq + V - 1) / V;
    a.ys = r16(a.nvec * V);
    float *x = buf((size_t)C * a.cs), *w = buf((size_t)K * C * a.T), *y = buf((size_t)K * a.ys);
    a.x = x, a.w = w, a.y = y;
    char what[64];
    snprintf(what, sizeof what, "fwd s2 %dx%d %dx%d to %dx%d", R, R, C, K, P, Q);
    report(L, what, (double)K * C * a.T * P * Q, timeit(fwd_call, &a, L->ms), times);
    /* the input gradient: phase convolutions of dy (bordered by E) with 4, 2, 2 and 1
     * taps (1 for a 1x1) over a U x wg grid, H = 2P, W = 2Q, border E */
    const int U = (E + 2 * P + 1) / 2, wg = ((E + 2 * Q + 1) / 2 > Q ? (E + 2 * Q + 1) / 2 : Q) + E;
    const int rd = (U > P ? U : P) + E;
    fwd_arg b = {.k = L->k, .C = K, .Kr = C};
    b.cs = r16((size_t)rd * wg + 18);
    b.nvec = ((size_t)U * wg + V - 1) / V;
    b.ys = r16(b.nvec * V);
    float *dy = buf((size_t)K * b.cs), *wb = buf((size_t)C * K * 4), *g = buf((size_t)C * b.ys);
    b.x = dy, b.w = wb, b.y = g;
    double s = 0;
    static const int bT[4] = {4, 2, 2, 1};
    for (int ph = 0; ph < nph; ph++) {
        b.T = nph == 1 ? 1 : bT[ph];
        for (int t = 0; t < b.T; t++) b.off[t] = (E - t / 2) * wg + E - t % 2;
        s += timeit(fwd_call, &b, L->ms / nph);
    }
    snprintf(what, sizeof what, "dgrad s2 %dx%d %dx%d to %dx%d", R, R, K, C, 2 * P, 2 * Q);
    report(L, what, (double)K * C * a.T * P * Q, s, times);
    free(x), free(w), free(y), free(dy), free(wb), free(g);
}

/* ---- weight gradient, 3x3 stride 1: padded grid (wp = W + 2) ---- */
typedef struct wg_arg {
    const rtp_convk *k;
    const float *dyT, *x;
    float *acc;
    size_t cs;
    int Kv, C, P, Q, wp, T;
    int off[9];
} wg_arg;

static void wg_call(void *p)
{
    wg_arg *a = p;
    a->k->wgrad(a->dyT, a->Kv, a->P, a->Q, a->x, a->cs, a->C, a->wp, a->acc);
}
static void wgt_call(void *p)
{
    wg_arg *a = p;
    a->k->wgrad_taps(a->dyT, a->Kv, a->P, a->Q, a->x, a->cs, a->wp, a->C, a->off, a->T, a->acc);
}

static void bench_wgrad(loops *L, int C, int K, int H, int W, int times)
{
    const int V = L->k->vec;
    wg_arg a = {.k = L->k, .C = C, .P = H, .Q = W, .wp = W + 2};
    a.Kv = (K + V - 1) / V * V;
    a.cs = r16((size_t)(H + 2) * a.wp + 19);
    float *dyT = buf((size_t)H * W * a.Kv), *x = buf((size_t)C * a.cs),
          *acc = buf((size_t)C * 9 * a.Kv);
    a.dyT = dyT, a.x = x, a.acc = acc;
    char what[64];
    snprintf(what, sizeof what, "wgrad %dx%d %dx%d", C, K, H, W);
    report(L, what, (double)K * C * 9 * H * W, timeit(wg_call, &a, L->ms), times);
    free(dyT), free(x), free(acc);
}

static void bench_wgrad_s2(loops *L, int C, int K, int P, int Q, int R, int times)
{
    const int V = L->k->vec;
    wg_arg a = {.k = L->k, .C = C, .T = R * R, .P = P, .Q = Q, .wp = Q + (R - 1) / 2};
    a.cs = s2_planes(a.off, R, P, Q);
    a.Kv = (K + V - 1) / V * V;
    float *dyT = buf((size_t)P * Q * a.Kv), *x = buf((size_t)C * a.cs),
          *acc = buf((size_t)C * a.T * a.Kv);
    a.dyT = dyT, a.x = x, a.acc = acc;
    char what[64];
    snprintf(what, sizeof what, "wgrad s2 %dx%d %dx%d to %dx%d", R, R, C, K, P, Q);
    report(L, what, (double)K * C * a.T * P * Q, timeit(wgt_call, &a, L->ms), times);
    free(dyT), free(x), free(acc);
}

int main(int argc, char **argv)
{
    const char *isa = "avx512";
    double ms = 300;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--isa")) isa = argv[i + 1];
        else if (!strcmp(argv[i], "--ms")) ms = atof(argv[i + 1]);
    }
#ifdef KILN_CONVK_X86
    static const rtp_convk avx512 = {"avx512", 16, rtp_convk_fwd_avx512, rtp_convk_wgrad_avx512,
                                     rtp_convk_wgrad_taps_avx512};
    static const rtp_convk avx2 = {"avx2", 8, rtp_convk_fwd_avx2, rtp_convk_wgrad_avx2,
                                   rtp_convk_wgrad_taps_avx2};
    __builtin_cpu_init();
    loops L = {!strcmp(isa, "avx2") ? &avx2 : &avx512, ms, 0, 0};
    if (L.k == &avx512 && !__builtin_cpu_supports("avx512f")) {
        fprintf(stderr, "conv_loop_bench: no AVX-512 here (try --isa avx2)\n");
        return 1;
    }
    printf("loops: %s, one thread, per image\n", L.k->name);
    /* forward and the stride-1 input gradient (the same loop, the same shapes) */
    bench_tight(&L, 3, 16, 32, 32, 1);
    bench_wino(&L, 16, 16, 32, 32, 6 + 6);
    bench_wino(&L, 32, 32, 16, 16, 5 + 5);
    bench_tight(&L, 64, 64, 8, 8, 5 + 5);
    bench_s2(&L, 16, 32, 16, 16, 3, 1);
    bench_s2(&L, 16, 32, 16, 16, 1, 1);
    bench_s2(&L, 32, 64, 8, 8, 3, 1);
    bench_s2(&L, 32, 64, 8, 8, 1, 1);
    double fm = L.macs, fs = L.secs;
    printf("%-34s %7.2f GMAC/s  %8.1f us\n", "= forward loop, one image", fm / fs * 1e-9, fs * 1e6);
    bench_wgrad(&L, 3, 16, 32, 32, 1);
    bench_wgrad(&L, 16, 16, 32, 32, 6);
    bench_wgrad(&L, 32, 32, 16, 16, 5);
    bench_wgrad(&L, 64, 64, 8, 8, 5);
    bench_wgrad_s2(&L, 16, 32, 16, 16, 3, 1);
    bench_wgrad_s2(&L, 16, 32, 16, 16, 1, 1);
    bench_wgrad_s2(&L, 32, 64, 8, 8, 3, 1);
    bench_wgrad_s2(&L, 32, 64, 8, 8, 1, 1);
    printf("%-34s %7.2f GMAC/s  %8.1f us\n", "= weight-gradient loops, one image",
           (L.macs - fm) / (L.secs - fs) * 1e-9, (L.secs - fs) * 1e6);
    printf("%-34s %7.2f GMAC/s  %8.1f us\n", "= all loops, one image", L.macs / L.secs * 1e-9,
           L.secs * 1e6);
    return 0;
#else
    (void)isa, (void)ms;
    fprintf(stderr, "conv_loop_bench: the loops are built on x86-64 only\n");
    return 1;
#endif
}
