/* rt_image_fit.c - grey/RGB conversion and resize + centre crop, the way Pillow does
 * them, so a folder decoded here equals Image.open(f).convert(M).resize(...).crop(...).
 *
 * Resize is Pillow's ImagingResample with the bilinear filter (Resample.c): a separable
 * convolution whose triangle filter is widened by the scale when shrinking (so it
 * antialiases), coefficients normalised per output pixel and rounded to 22-bit fixed
 * point, the horizontal pass first into 8-bit rows (only the rows the vertical pass
 * reads), then the vertical pass. Only the crop's pixels are computed, and they go
 * straight into their planes: no full-size resized copy. Integer arithmetic throughout
 * (the weights are never negative, so no sum overflows in any order), so the bytes match
 * Pillow's exactly rather than within a tolerance. Grey from RGB is Pillow's
 * L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16.
 */
#include "rt_image.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PRECISION_BITS (32 - 8 - 2)

rt_status rtp_image_channels(rtp_image *im, int c, rt_error *err)
{
    if (im->c == c) return RT_OK;
    size_t n = (size_t)im->w * (size_t)im->h;
    uint8_t *px = malloc(n * (size_t)c);
    if (!px) return RT_ERR(err, RT_ENOMEM, "out of memory converting an image");
    if (c == 1) {
        for (size_t i = 0; i < n; i++) {
            const uint8_t *s = im->px + 3 * i;
            px[i] = (uint8_t)((s[0] * 19595u + s[1] * 38470u + s[2] * 7471u + 0x8000u) >> 16);
        }
    } else {
        for (size_t i = 0; i < n; i++) px[3 * i] = px[3 * i + 1] = px[3 * i + 2] = im->px[i];
    }
    free(im->px);
    im->px = px;
    im->cap = n * (size_t)c;
    im->c = c;
    return RT_OK;
}

/* Pillow's precompute_coeffs + normalize_coeffs_8bpc for in -> out samples, for the n
 * outputs from `first` on (the crop: the others are never computed): bounds [2*n]
 * (first input, count), kk[n*ksize] fixed-point weights. Returns ksize, 0 on out of
 * memory (caller frees *bounds, *kk in both cases). */
static int coeffs(int in, int out, int first, int n, int **bounds, int **kk)
{
    double scale = (double)in / out, filterscale = scale < 1.0 ? 1.0 : scale;
    double support = 1.0 * filterscale; /* bilinear support is 1 */
    int ksize = (int)ceil(support) * 2 + 1;
    double *k = malloc((size_t)ksize * sizeof *k);
    *bounds = malloc((size_t)n * 2 * sizeof **bounds);
    *kk = malloc((size_t)n * (size_t)ksize * sizeof **kk);
    if (!k || !*bounds || !*kk) {
        free(k);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        int xx = first + i;
        double center = (xx + 0.5) * scale, ww = 0.0, ss = 1.0 / filterscale;
        int xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5);
        if (xmin < 0) xmin = 0;
        if (xmax > in) xmax = in;
        xmax -= xmin;
        for (int x = 0; x < xmax; x++) {
            double t = fabs((x + xmin - center + 0.5) * ss);
            k[x] = t < 1.0 ? 1.0 - t : 0.0;
            ww += k[x];
        }
        int *dst = *kk + (size_t)i * (size_t)ksize;
        for (int x = 0; x < ksize; x++) {
            double v = x < xmax ? (ww != 0.0 ? k[x] / ww : k[x]) : 0.0;
            dst[x] = v < 0 ? (int)(-0.5 + v * (1 << PRECISION_BITS))
                           : (int)(0.5 + v * (1 << PRECISION_BITS));
        }
        (*bounds)[2 * i] = xmin;
        (*bounds)[2 * i + 1] = xmax;
    }
    free(k);
    return ksize;
}

static inline uint8_t clip8(int v)
{
    v >>= PRECISION_BITS;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* The horizontal pass for one row: w outputs of c channels (HWC) from row. c == 3 keeps
 * the three sums side by side; the order of the integer additions does not change them. */
static void resample_row(const uint8_t *row, int c, const int *b, const int *kk, int ks, int w,
                         uint8_t *o)
{
    if (c == 3) {
        for (int xx = 0; xx < w; xx++) {
            const uint8_t *s = row + (size_t)b[2 * xx] * 3;
            const int *k = kk + (size_t)xx * (size_t)ks;
            int r = 1 << (PRECISION_BITS - 1), g = r, bl = r;
            for (int x = 0; x < b[2 * xx + 1]; x++) {
                r += s[3 * x] * k[x];
                g += s[3 * x + 1] * k[x];
                bl += s[3 * x + 2] * k[x];
            }
            o[3 * xx] = clip8(r), o[3 * xx + 1] = clip8(g), o[3 * xx + 2] = clip8(bl);
        }
        return;
    }
    for (int xx = 0; xx < w; xx++) {
        const uint8_t *s = row + (size_t)b[2 * xx];
        const int *k = kk + (size_t)xx * (size_t)ks;
        int v = 1 << (PRECISION_BITS - 1);
        for (int x = 0; x < b[2 * xx + 1]; x++) v += s[x] * k[x];
        o[xx] = clip8(v);
    }
}

/* Resizes src (sw x sh x c, HWC) to rw x rh and writes the h x w window at (top, left)
 * of the result into out (C, H, W). Only that window is computed: the horizontal pass
 * for its w columns and only the source rows its h rows read (Pillow's two passes,
 * each skipped when that side keeps its size, as Pillow skips it), the vertical pass
 * row by row with the sums of a whole row side by side (vectorised), then the bytes
 * de-interleaved into their planes. */
static rt_status resample_crop(const uint8_t *src, int sw, int sh, int c, int rw, int rh, int top,
                               int left, int h, int w, uint8_t *out, rt_error *err)
{
    int need_h = rw != sw, need_v = rh != sh;
    int *hb = NULL, *hk = NULL, *vb = NULL, *vk = NULL, *acc = NULL;
    uint8_t *tmp = NULL, *line = NULL;
    rt_status st = RT_OK;
    int hks = need_h ? coeffs(sw, rw, left, w, &hb, &hk) : 1;
    int vks = hks && need_v ? coeffs(sh, rh, top, h, &vb, &vk) : 1;
    int y0 = need_v ? (vks ? vb[0] : 0) : top;
    int y1 = need_v ? (vks ? vb[2 * h - 2] + vb[2 * h - 1] : 0) : top + h;
    size_t stride = (size_t)w * (size_t)c; /* one output row, HWC */
    if (hks && vks) {
        tmp = need_h ? malloc((size_t)(y1 - y0) * stride) : NULL;
        acc = malloc(stride * sizeof *acc);
        line = malloc(stride);
    }
    if (!hks || !vks || (need_h && !tmp) || !acc || !line) {
        st = RT_ERR(err, RT_ENOMEM, "out of memory resizing an image");
        goto done;
    }
    /* source row y, resized horizontally (or cropped), is rows + (y - ybase) * rows_stride */
    const uint8_t *rows = tmp;
    size_t rows_stride = stride;
    int ybase = need_h ? y0 : 0;
    if (need_h) {
        for (int y = y0; y < y1; y++)
            resample_row(src + (size_t)y * (size_t)sw * (size_t)c, c, hb, hk, hks, w,
                         tmp + (size_t)(y - y0) * stride);
    } else {
        rows = src + (size_t)left * (size_t)c;
        rows_stride = (size_t)sw * (size_t)c;
    }
    size_t plane = (size_t)h * (size_t)w;
    for (int yy = 0; yy < h; yy++) {
        const uint8_t *o = rows + (size_t)(yy + top - ybase) * rows_stride;
        if (need_v) {
            const int *k = vk + (size_t)yy * (size_t)vks;
            const uint8_t *r = rows + (size_t)(vb[2 * yy] - ybase) * rows_stride;
            for (size_t i = 0; i < stride; i++) acc[i] = 1 << (PRECISION_BITS - 1);
            for (int y = 0; y < vb[2 * yy + 1]; y++, r += rows_stride)
                for (size_t i = 0; i < stride; i++) acc[i] += r[i] * k[y];
            for (size_t i = 0; i < stride; i++) line[i] = clip8(acc[i]);
            o = line;
        }
        for (int ch = 0; ch < c; ch++) {
            uint8_t *d = out + (size_t)ch * plane + (size_t)yy * (size_t)w;
            for (int x = 0; x < w; x++) d[x] = o[(size_t)x * (size_t)c + (size_t)ch];
        }
    }
done:
    free(hb);
    free(hk);
    free(vb);
    free(vk);
    free(tmp);
    free(acc);
    free(line);
    return st;
}

rt_status rtp_image_fit(const rtp_image *im, int h, int w, uint8_t *out, rt_error *err)
{
    /* the side whose ratio is larger fits exactly; the other keeps the aspect ratio */
    int rw, rh;
    if ((int64_t)h * im->w >= (int64_t)w * im->h) {
        rh = h;
        rw = (int)((int64_t)h * im->w / im->h);
        if (rw < w) rw = w;
    } else {
        rw = w;
        rh = (int)((int64_t)w * im->h / im->w);
        if (rh < h) rh = h;
    }
    return resample_crop(im->px, im->w, im->h, im->c, rw, rh, (rh - h) / 2, (rw - w) / 2, h, w, out,
                         err);
}
