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

#include "bench_conv_shapes.h"
#include "rt_backend.h"
#include "rt_device.h"

int main(int argc, char **argv)
{
    int threads = 2, batch = 128, reps = 7;
    const bench_conv_shape *net = bench_resnet20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--net"))
            net = !strcmp(argv[i + 1], "mobilenetv2") ? bench_mobilenet : bench_resnet20;
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
    for (const bench_conv_shape *s = net; s->name; s++) {
        rt_conv_desc d = bench_conv_desc(s, batch);
        size_t nx = (size_t)d.N * d.C * d.H * d.W, ny = (size_t)d.N * d.K * d.P * d.Q;
        size_t nw = (size_t)d.K * d.C * d.R * d.S;
        float *x = bench_rnd(nx, 1), *w = bench_rnd(nw, 2), *dy = bench_rnd(ny, 3),
              *y = malloc(ny * 4), *dx = malloc(nx * 4), *dw = malloc(nw * 4);
        rt_tensor X = bench_tens(x, d.N, d.C, d.H, d.W), W = bench_tens(w, d.K, d.C, d.R, d.S);
        rt_tensor DY = bench_tens(dy, d.N, d.K, d.P, d.Q), Y = bench_tens(y, d.N, d.K, d.P, d.Q);
        rt_tensor DX = bench_tens(dx, d.N, d.C, d.H, d.W), DW = bench_tens(dw, d.K, d.C, d.R, d.S);
        if (b.ops->reserve_workspace(&b, b.ops->conv2d_workspace(&b, &d), &err) != RT_OK) {
            fprintf(stderr, "conv_bf16_bench: %s\n", err.msg);
            return 1;
        }
        double ms[3][100];
        for (int r = 0; r <= reps; r++) {
            double t0 = bench_cpu_s();
            rt_status st = rt_backend_conv2d_fwd(&b, &Y, &X, &W, NULL, &d, &err);
            double t1 = bench_cpu_s();
            st |= rt_backend_conv2d_bwd_data(&b, &DX, &DY, &W, &d, &err);
            double t2 = bench_cpu_s();
            st |= rt_backend_conv2d_bwd_filter(&b, &DW, NULL, &DY, &X, &d, &err);
            double t3 = bench_cpu_s();
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
            med[k] = bench_median(ms[k], reps);
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
