/* bn_bench.c - the CPU batch norm's training ops at a network's shapes, against what the
 * machine streams: CPU milliseconds per call (all threads: on a shared machine the figure load disturbs least) (the median of --reps samples of about 64M floats each, after one warm-up)
 * and the GB/s of the bytes each op must move (its reads and writes, once each), beside
 * a plain copy and triad (a = b + s*c) over the same number of floats on the same
 * threads. The ops are memory-bound: the ratio to the triad is how far each is from the
 * floor of its passes (bench/README.md, "Batch norm on the CPU").
 *
 *   bn_bench [--threads 2] [--batch 128] [--reps 9] [--net resnet20|mobilenetv2]
 */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_backend.h"
#include "rt_device.h"
#include "rt_rng.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float *rnd(size_t n, uint32_t seed)
{
    float *p = aligned_alloc(64, (n * sizeof *p + 63) / 64 * 64);
    rt_rng r = rt_rng_stream(3, RT_RNG_USER, seed, 0);
    rt_rng_fill_uniform(&r, p, n, -1.0f, 1.0f);
    return p;
}

static rt_tensor tens(float *p, int n, int c, int h, int w)
{
    rt_tensor t = {.data = p, .n = n, .c = c, .h = h, .w = w};
    return t;
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
    int threads = 2, batch = 128, reps = 9;
    const shape *net = resnet20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--net"))
            net = !strcmp(argv[i + 1], "mobilenetv2") ? mobilenet : resnet20;
    }
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
        rt_tensor X = tens(x, N, C, H, H), S = tens(sk, N, C, H, H), DY = tens(dy, N, C, H, H);
        rt_tensor DY2 = tens(dy2, N, C, H, H), Y = tens(y, N, C, H, H), DX = tens(dx, N, C, H, H);
        rt_tensor K = tens(keep, N, C, H, H), MOM = tens(mom, N, C, 1, RT_MOMENT_FLOATS);
        rt_tensor G = tens(g, 1, C, 1, 1), B = tens(bt, 1, C, 1, 1), SM = tens(sm, 1, C, 1, 1);
        rt_tensor SI = tens(si, 1, C, 1, 1), RM = tens(rm, 1, C, 1, 1), RV = tens(rv, 1, C, 1, 1);
        rt_tensor DG = tens(dg, 1, C, 1, 1), DB = tens(db, 1, C, 1, 1);
        rt_bn_desc d = {.N = N, .C = C, .H = H, .W = H, .eps = 1e-5f, .momentum = 0.1f, .relu = 1};
        double ms[KINDS][100];
        for (int r = 0; r <= reps; r++)
            for (int k = 0; k < KINDS; k++) {
                rt_status st = RT_OK;
                double t0 = now_s();
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
                    } else {
#pragma omp parallel for schedule(static) num_threads(threads)
                        for (size_t i = 0; i < n; i += 16)
                            _mm512_stream_ps(dx + i, _mm512_loadu_ps(x + i));
                        _mm_sfence();
                    }
                }
                double t1 = now_s();
                if (st != RT_OK) {
                    fprintf(stderr, "bn_bench: %s: %s\n", s->name, err.msg);
                    return 1;
                }
                if (r) ms[k][r - 1] = 1e3 * (t1 - t0) / iters;
            }
        printf("%-10s", s->name);
        for (int k = 0; k < KINDS; k++) {
            qsort(ms[k], (size_t)reps, sizeof(double), cmp);
            double med = ms[k][reps / 2], gbs = 4.0 * kind_streams[k] * (double)n / med * 1e-6;
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
