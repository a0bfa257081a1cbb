/* gpu_util.h - shared by the tests/gpu executables: open the CUDA backend or skip with
 * the reason (exit 77, meson's SKIP), paired CPU/GPU tensors, and the comparison in
 * llm.c's validate_result style: |gpu - cpu| <= atol + rtol * |cpu|, printing the first
 * 5 pairs and the first 10 mismatches.
 */
#ifndef GPU_UTIL_H
#define GPU_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "rt_device.h"

/* Opens "cuda" into *g or exits 77 with "SKIP: no CUDA device (...)"; exits 99 if the
 * device exists but cannot be opened (a setup error, not a skip). */
static inline void gpu_open_or_skip(rt_backend *g)
{
    rt_cuda_device_list list;
    rt_error err = {0};
    if (rt_cuda_list_devices(&list, &err) != RT_OK || list.count == 0) {
        printf("SKIP: no CUDA device (%s)\n", list.why[0] ? list.why : err.msg);
        exit(77);
    }
    if (rt_backend_open(g, "cuda", 0, &err) != RT_OK) {
        if (err.code == RT_ENODEV) {
            printf("SKIP: no CUDA device (%s)\n", err.msg);
            exit(77);
        }
        fprintf(stderr, "cannot open cuda:0: %s\n", err.msg);
        exit(99);
    }
    printf("device: %s, cc %d.%d, driver %d, runtime %d\n", list.dev[0].name, list.dev[0].cc_major,
           list.dev[0].cc_minor, list.driver_version, list.runtime_version);
}

/* A tensor on both backends with the same contents; host holds the values uploaded. */
typedef struct gpu_pair {
    rt_tensor c, g;
    float *host;
    size_t n;
} gpu_pair;

/* Allocates (n,c,h,w) on both backends (dtype f32) and fills both with host values
 * (NULL: zeros). Exits 99 on failure: a broken harness is not a test result. */
static inline void gpu_pair_make(gpu_pair *p, rt_backend *cpu, rt_backend *gpu, int n, int c, int h,
                                 int w, const float *values)
{
    rt_error err = {0};
    memset(p, 0, sizeof *p);
    p->c.n = p->g.n = n, p->c.c = p->g.c = c, p->c.h = p->g.h = h, p->c.w = p->g.w = w;
    p->n = (size_t)n * c * h * w;
    p->host = calloc(p->n ? p->n : 1, sizeof *p->host);
    if (!p->host || cpu->ops->alloc(cpu, &p->c.data, p->n * 4, &err) != RT_OK ||
        gpu->ops->alloc(gpu, &p->g.data, p->n * 4, &err) != RT_OK) {
        fprintf(stderr, "harness: allocation of %zu floats failed: %s\n", p->n, err.msg);
        exit(99);
    }
    if (values) memcpy(p->host, values, p->n * 4);
    if (rt_backend_upload(cpu, &p->c, p->host, p->n * 4, &err) != RT_OK ||
        rt_backend_upload(gpu, &p->g, p->host, p->n * 4, &err) != RT_OK) {
        fprintf(stderr, "harness: upload failed: %s\n", err.msg);
        exit(99);
    }
}

static inline void gpu_pair_free(gpu_pair *p, rt_backend *cpu, rt_backend *gpu)
{
    cpu->ops->free(cpu, p->c.data);
    gpu->ops->free(gpu, p->g.data);
    free(p->host);
    memset(p, 0, sizeof *p);
}

/* Random N(0, std) values from the test stream `tag` (deterministic). */
static inline float *gpu_randn(size_t n, uint32_t tag, float std)
{
    float *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) exit(99);
    rt_rng r = rt_rng_stream(1234, RT_RNG_USER, tag, 0);
    rt_rng_fill_normal(&r, v, n, 0.0f, std);
    return v;
}

/* Compares the first n floats of p on both backends; returns the number of mismatches
 * (0 = pass). Prints a one-line verdict, the first 5 pairs and the first 10
 * mismatches (llm.c validate_result). */
static inline size_t gpu_compare(const char *what, rt_backend *cpu, rt_backend *gpu,
                                 const gpu_pair *p, size_t n, double atol, double rtol)
{
    rt_error err = {0};
    float *hc = malloc((n ? n : 1) * 4), *hg = malloc((n ? n : 1) * 4);
    if (!hc || !hg || rt_backend_download(cpu, hc, &p->c, n * 4, &err) != RT_OK ||
        rt_backend_download(gpu, hg, &p->g, n * 4, &err) != RT_OK) {
        fprintf(stderr, "harness: download failed: %s\n", err.msg);
        exit(99);
    }
    size_t bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double c = hc[i], g = hg[i], diff = fabs(g - c);
        int ok = diff <= atol + rtol * fabs(c) || (isnan(c) && isnan(g));
        if (diff > worst && !isnan(diff)) worst = diff;
        if (!ok && ++bad <= 10)
            fprintf(stderr, "    %s mismatch at %zu: cpu %.9g gpu %.9g (|diff| %.3g > %.3g)\n",
                    what, i, c, g, diff, atol + rtol * fabs(c));
    }
    if (bad) {
        for (size_t i = 0; i < n && i < 5; i++)
            fprintf(stderr, "    %s[%zu]: cpu %.9g gpu %.9g\n", what, i, hc[i], hg[i]);
    }
    printf("  %-28s n=%-8zu max|diff| %.3g  %s\n", what, n, worst, bad ? "MISMATCH" : "ok");
    free(hc);
    free(hg);
    return bad;
}

/* Bitwise version of gpu_compare for outputs that must be identical (copies, integer
 * data, exact arithmetic): the first n 4-byte words of p on both backends. nan_equal:
 * two NaN floats match whatever their payloads (a GPU writes the canonical NaN where
 * x86 keeps the operand's payload; no op here promises NaN bits). */
static inline size_t gpu_compare_bits(const char *what, rt_backend *cpu, rt_backend *gpu,
                                      const gpu_pair *p, size_t n, int nan_equal)
{
    rt_error err = {0};
    uint32_t *hc = malloc((n ? n : 1) * 4), *hg = malloc((n ? n : 1) * 4);
    if (!hc || !hg || rt_backend_download(cpu, hc, &p->c, n * 4, &err) != RT_OK ||
        rt_backend_download(gpu, hg, &p->g, n * 4, &err) != RT_OK) {
        fprintf(stderr, "harness: download failed: %s\n", err.msg);
        exit(99);
    }
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float fc, fg;
        memcpy(&fc, &hc[i], 4), memcpy(&fg, &hg[i], 4);
        if (hc[i] == hg[i] || (nan_equal && isnan(fc) && isnan(fg))) continue;
        if (++bad <= 10)
            fprintf(stderr, "    %s differs at word %zu: cpu 0x%08x (%.9g) gpu 0x%08x (%.9g)\n",
                    what, i, (unsigned)hc[i], (double)fc, (unsigned)hg[i], (double)fg);
    }
    printf("  %-28s n=%-8zu %s\n", what, n, bad ? "MISMATCH (bits)" : "bitwise ok");
    free(hc);
    free(hg);
    return bad;
}

#endif
