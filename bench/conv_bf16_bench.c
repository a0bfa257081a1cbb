/* conv_bf16_bench.c - bf16 convolutions on the CPU backend at a network's shapes (batch
 * 128 by default): the process's CPU milliseconds per call (all threads) of the forward,
 * input gradient and weight gradient (the median of --reps calls after one warm-up), as
 * a training step calls them: on a shared machine CPU time, with --threads 1, is the
 * figure load disturbs least (wall time there is mostly waiting for a core). Run it with and without KILN_CPU_AMX=off, interleaved, to compare the AMX tile
 * kernels with the rounded copies through the fp32 loops (bench/README.md).
 *
 *   conv_bf16_bench [--threads 2] [--batch 128] [--reps 7] [--net resnet20|mobilenetv2]
 */
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
    float *p = malloc(n * sizeof *p);
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
    int C, H, K, R, stride, pad;
} shape;

static const shape resnet20[] = {
    {"3x3 16->16 32x32", 16, 32, 16, 3, 1, 1},    {"3x3 s2 16->32 32x32", 16, 32, 32, 3, 2, 1},
    {"1x1 s2 16->32 32x32", 16, 32, 32, 1, 2, 0}, {"3x3 32->32 16x16", 32, 16, 32, 3, 1, 1},
    {"3x3 s2 32->64 16x16", 32, 16, 64, 3, 2, 1}, {"1x1 s2 32->64 16x16", 32, 16, 64, 1, 2, 0},
    {"3x3 64->64 8x8", 64, 8, 64, 3, 1, 1},       {NULL, 0, 0, 0, 0, 0, 0}};
static const shape mobilenet[] = {{"1x1 32->16 32x32", 32, 32, 16, 1, 1, 0},
                                  {"1x1 16->96 32x32", 16, 32, 96, 1, 1, 0},
                                  {"1x1 96->24 16x16", 96, 16, 24, 1, 1, 0},
                                  {"1x1 144->32 8x8", 144, 8, 32, 1, 1, 0},
                                  {"1x1 192->64 4x4", 192, 4, 64, 1, 1, 0},
                                  {"1x1 960->160 2x2", 960, 2, 160, 1, 1, 0},
                                  {"1x1 320->1280 1x1", 320, 1, 1280, 1, 1, 0},
                                  {"3x3 192->192 8x8 (wide)", 192, 8, 192, 3, 1, 1},
                                  {NULL, 0, 0, 0, 0, 0, 0}};

int main(int argc, char **argv)
{
    int threads = 2, batch = 128, reps = 7;
    const shape *net = resnet20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--net"))
            net = !strcmp(argv[i + 1], "mobilenetv2") ? mobilenet : resnet20;
    }
    if (reps < 1 || reps > 99) reps = 7;
    rt_backend b;
    rt_error err = {0};
    if (rt_backend_open(&b, "cpu", threads, &err) != RT_OK ||
        rt_backend_set_precision(&b, RT_PREC_BF16, &err) != RT_OK) {
        fprintf(stderr, "conv_bf16_bench: %s\n", err.msg);
        return 1;
    }
    const char *amx = getenv("KILN_CPU_AMX");
    printf("# bf16, %d threads, batch %d, KILN_CPU_AMX=%s; CPU-ms per call (median of %d)\n",
           threads, batch, amx ? amx : "(unset)", reps);
    printf("%-24s %9s %9s %9s %9s\n", "shape", "fwd", "bwd_data", "bwd_filt", "sum");
    double total = 0.0;
    for (const shape *s = net; s->name; s++) {
        rt_conv_desc d = {.N = batch,
                          .C = s->C,
                          .H = s->H,
                          .W = s->H,
                          .K = s->K,
                          .R = s->R,
                          .S = s->R,
                          .stride = s->stride,
                          .pad = s->pad};
        d.P = d.Q = (s->H + 2 * s->pad - s->R) / s->stride + 1;
        size_t nx = (size_t)d.N * d.C * d.H * d.W, ny = (size_t)d.N * d.K * d.P * d.Q;
        size_t nw = (size_t)d.K * d.C * d.R * d.S;
        float *x = rnd(nx, 1), *w = rnd(nw, 2), *dy = rnd(ny, 3), *y = malloc(ny * 4),
              *dx = malloc(nx * 4), *dw = malloc(nw * 4);
        rt_tensor X = tens(x, d.N, d.C, d.H, d.W), W = tens(w, d.K, d.C, d.R, d.S);
        rt_tensor DY = tens(dy, d.N, d.K, d.P, d.Q), Y = tens(y, d.N, d.K, d.P, d.Q);
        rt_tensor DX = tens(dx, d.N, d.C, d.H, d.W), DW = tens(dw, d.K, d.C, d.R, d.S);
        if (b.ops->reserve_workspace(&b, b.ops->conv2d_workspace(&b, &d), &err) != RT_OK) {
            fprintf(stderr, "conv_bf16_bench: %s\n", err.msg);
            return 1;
        }
        double ms[3][100];
        for (int r = 0; r <= reps; r++) {
            double t0 = now_s();
            rt_status st = rt_backend_conv2d_fwd(&b, &Y, &X, &W, NULL, &d, &err);
            double t1 = now_s();
            st |= rt_backend_conv2d_bwd_data(&b, &DX, &DY, &W, &d, &err);
            double t2 = now_s();
            st |= rt_backend_conv2d_bwd_filter(&b, &DW, NULL, &DY, &X, &d, &err);
            double t3 = now_s();
            if (st != RT_OK) {
                fprintf(stderr, "conv_bf16_bench: %s: %s\n", s->name, err.msg);
                return 1;
            }
            if (r == 0) continue; /* warm-up */
            ms[0][r - 1] = 1e3 * (t1 - t0), ms[1][r - 1] = 1e3 * (t2 - t1);
            ms[2][r - 1] = 1e3 * (t3 - t2);
        }
        double med[3], sum = 0.0;
        for (int k = 0; k < 3; k++) {
            qsort(ms[k], (size_t)reps, sizeof(double), cmp);
            med[k] = ms[k][reps / 2];
            sum += med[k];
        }
        total += sum;
        printf("%-24s %9.2f %9.2f %9.2f %9.2f\n", s->name, med[0], med[1], med[2], sum);
        free(x), free(w), free(dy), free(y), free(dx), free(dw);
    }
    printf("%-24s %39.2f\n", "total", total);
    rt_backend_close(&b);
    return 0;
}
