/* bn_bench.c - the CPU batch norm's training ops at a network's shapes against what the
 * machine streams: CPU milliseconds per call (all threads; the median of --reps samples
 * of about 64M floats each, after one warm-up) and the GB per CPU-second of the bytes
 * each op must move (its reads and writes, once each), beside a plain copy, a triad
 * (a = b + s*c) and a copy with streaming stores over as many floats on as many threads.
 * The ops are memory-bound: the copy is the floor of a pass (bench/README.md, "Batch norm
 * on the CPU"). On a shared machine, --threads 1 gives the steadiest figures (with two,
 * a thread waiting for the other's core counts as CPU time).
 *
 *   bn_bench [--threads 2] [--batch 128] [--reps 9] [--net resnet20|mobilenetv2]
 */
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_conv_shapes.h"
#include "rt_device.h"

/* n floats uniform in [-1, 1) at a 64-byte boundary, as the backend's tensors */
static float *rnd(size_t n, uint32_t seed)
{
    float *u = bench_rnd(n, seed), *p = aligned_alloc(64, (n * sizeof *p + 63) / 64 * 64);
    memcpy(p, u, n * sizeof *p);
    free(u);
    return p;
}

/* y = x over n floats (a multiple of 16, y 64-byte aligned) with streaming stores;
 * nothing where the CPU has no AVX-512 */
#if defined(__x86_64__)
__attribute__((target("avx512f"))) static void copy_stream_avx512(float *y, const float *x,
                                                                  size_t n, int threads)
{
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t i = 0; i < n; i += 16) _mm512_stream_ps(y + i, _mm512_loadu_ps(x + i));
    _mm_sfence();
}
#endif

static void copy_stream(float *y, const float *x, size_t n, int threads)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) copy_stream_avx512(y, x, n, threads);
#else
    (void)y, (void)x, (void)n, (void)threads;
#endif
}

/* the value after --name, or dflt */
static const char *arg(int argc, char **argv, const char *name, const char *dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strncmp(argv[i], "--", 2) && !strcmp(argv[i] + 2, name)) return argv[i + 1];
    return dflt;
}

typedef struct {
    const char *name;
    int C, H;
} shape;

static const shape resnet20[] = {
    {"16x32x32", 16, 32}, {"32x16x16", 32, 16}, {"64x8x8", 64, 8}, {NULL, 0, 0}};
static const shape mobilenet[] = {{"96x32x32", 96, 32}, {"144x16x16", 144, 16}, {"192x8x8", 192, 8},
                                  {"576x4x4", 576, 4},  {"960x2x2", 960, 2},    {NULL, 0, 0}};

enum { FWD, FWD_ADD, BWD_RELU, BWD_ADD, COPY, TRIAD, COPY_NT, KINDS };
static const char *kind_name[KINDS] = {"fwd+relu", "fwd+add+relu", "bwd relu", "bwd add(2)",
                                       "copy",     "triad",        "copy nt"};
/* floats each kind must move per element: its reads and writes, once each */
static const int kind_streams[KINDS] = {2, 3, 5, 8, 2, 3, 2};

int main(int argc, char **argv)
{
    int threads = atoi(arg(argc, argv, "threads", "2")),
        batch = atoi(arg(argc, argv, "batch", "128"));
    int reps = atoi(arg(argc, argv, "reps", "9"));
    const shape *net =
        strcmp(arg(argc, argv, "net", "resnet20"), "mobilenetv2") ? resnet20 : mobilenet;
    if (reps < 1 || reps > 99) reps = 9;
    rt_backend b;
    rt_error err = {0};
    if (rt_backend_open(&b, "cpu", threads, &err) != RT_OK) {
        fprintf(stderr, "bn_bench: %s\n", err.msg);
        return 1;
    }
    printf("# %d threads, batch %d; CPU-ms per call (median of %d), GB per CPU-second moved\n",
           threads, batch, reps);
    printf("%-10s", "shape");
    for (int k = 0; k < KINDS; k++) printf(" %15s", kind_name[k]);
    printf("\n");
    double tot[KINDS] = {0};
    for (const shape *s = net; s->name; s++) {
        const int N = batch, C = s->C, H = s->H;
        const size_t n = (size_t)N * C * H * H;
        /* calls per timed sample: about 64M floats, so the clock's ticks do not matter */
        const int iters = (int)((((size_t)64 << 20) + n - 1) / n);
        float *x = rnd(n, 1), *sk = rnd(n, 2), *dy = rnd(n, 3), *dy2 = rnd(n, 4), *y = rnd(n, 5);
        float *dx = rnd(n, 6), *keep = rnd(n, 7), *mom = rnd((size_t)N * C * RT_MOMENT_FLOATS, 8);
        float *g = rnd((size_t)C, 9), *bt = rnd((size_t)C, 10), *sm = rnd((size_t)C, 11);
        float *si = rnd((size_t)C, 12), *rm = rnd((size_t)C, 13), *rv = rnd((size_t)C, 14);
        float *dg = rnd((size_t)C, 15), *db = rnd((size_t)C, 16);
        for (int c = 0; c < C; c++) rv[c] = 1.0f;
        for (size_t p = 0; p < (size_t)N * C; p++) { /* mean 0, M2 of U(-1, 1) */
            double m[2] = {0.0, (double)H * H / 3.0};
            memcpy(mom + p * RT_MOMENT_FLOATS, m, sizeof m);
        }
        rt_tensor X = bench_tens(x, N, C, H, H), S = bench_tens(sk, N, C, H, H),
                  DY = bench_tens(dy, N, C, H, H);
        rt_tensor DY2 = bench_tens(dy2, N, C, H, H), Y = bench_tens(y, N, C, H, H),
                  DX = bench_tens(dx, N, C, H, H);
        rt_tensor K = bench_tens(keep, N, C, H, H),
                  MOM = bench_tens(mom, N, C, 1, RT_MOMENT_FLOATS);
        rt_tensor G = bench_tens(g, 1, C, 1, 1), B = bench_tens(bt, 1, C, 1, 1),
                  SM = bench_tens(sm, 1, C, 1, 1);
        rt_tensor SI = bench_tens(si, 1, C, 1, 1), RM = bench_tens(rm, 1, C, 1, 1),
                  RV = bench_tens(rv, 1, C, 1, 1);
        rt_tensor DG = bench_tens(dg, 1, C, 1, 1), DB = bench_tens(db, 1, C, 1, 1);
        rt_bn_desc d = {.N = N, .C = C, .H = H, .W = H, .eps = 1e-5f, .momentum = 0.1f, .relu = 1};
        double ms[KINDS][100];
        for (int r = 0; r <= reps; r++)
            for (int k = 0; k < KINDS; k++) {
                rt_status st = RT_OK;
                double t0 = bench_cpu_s();
                for (int it = 0; it < iters; it++) {
                    if (k == FWD)
                        st = rt_backend_bn_fwd_train_moments(&b, &Y, &SM, &SI, &RM, &RV, &X, NULL,
                                                             &G, &B, &MOM, &d, &err);
                    else if (k == FWD_ADD)
                        st = rt_backend_bn_fwd_train_moments(&b, &Y, &SM, &SI, &RM, &RV, &X, &S, &G,
                                                             &B, &MOM, &d, &err);
                    else if (k == BWD_RELU)
                        st = rt_backend_bn_relu_bwd(&b, &DX, &DG, &DB, &DY, &X, &G, &B, &SM, &SI,
                                                    &d, &err);
                    else if (k == BWD_ADD)
                        st = rt_backend_bn_add_bwd(&b, &DX, &DG, &DB, &K, &DY, &DY2, &Y, &X, &G,
                                                   &SM, &SI, &d, &err);
                    else if (k == COPY) {
#pragma omp parallel for schedule(static) num_threads(threads)
                        for (size_t i = 0; i < n; i++) dx[i] = x[i];
                    } else if (k == TRIAD) {
#pragma omp parallel for schedule(static) num_threads(threads)
                        for (size_t i = 0; i < n; i++) dx[i] = dy[i] + 0.5f * x[i];
                    } else copy_stream(dx, x, n, threads);
                }
                double t1 = bench_cpu_s();
                if (st != RT_OK) {
                    fprintf(stderr, "bn_bench: %s: %s\n", s->name, err.msg);
                    return 1;
                }
                if (r) ms[k][r - 1] = 1e3 * (t1 - t0) / iters;
            }
        printf("%-10s", s->name);
        for (int k = 0; k < KINDS; k++) {
            double med = bench_median(ms[k], reps),
                   gbs = 4.0 * kind_streams[k] * (double)n / med * 1e-6;
            tot[k] += med;
            printf(" %6.2f %5.1fGB/s", med, gbs);
        }
        printf("\n");
        free(x), free(sk), free(dy), free(dy2), free(y), free(dx), free(keep), free(mom);
        free(g), free(bt), free(sm), free(si), free(rm), free(rv), free(dg), free(db);
    }
    printf("%-10s", "total ms");
    for (int k = 0; k < KINDS; k++) printf(" %15.2f", tot[k]);
    printf("\n");
    rt_backend_close(&b);
    return 0;
}
