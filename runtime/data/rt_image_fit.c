/* rt_image_fit.c - grey/RGB conversion and resize + centre crop, the way Pillow does
 * them, so a folder decoded here equals Image.open(f).convert(M).resize(...).crop(...).
 *
 * Resize is Pillow's ImagingResample with the bilinear filter (Resample.c): a separable
 * convolution whose triangle filter is widened by the scale when shrinking (so it
 * antialiases), coefficients normalised per output pixel and rounded to 22-bit fixed
 * point, the horizontal pass first into 8-bit rows (only the rows the vertical pass
 * reads), then the vertical pass. Integer arithmetic throughout, so the bytes match
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
    im->c = c;
    return RT_OK;
}

/* Pillow's precompute_coeffs + normalize_coeffs_8bpc for in -> out samples: bounds
 * [2*out] (first input, count), kk[out*ksize] fixed-point weights. Returns ksize, 0 on
 * out of memory (caller frees *bounds, *kk in both cases). */
static int coeffs(int in, int out, int **bounds, int **kk)
{
    double scale = (double)in / out, filterscale = scale < 1.0 ? 1.0 : scale;
    double support = 1.0 * filterscale; /* bilinear support is 1 */
    int ksize = (int)ceil(support) * 2 + 1;
    double *k = malloc((size_t)ksize * sizeof *k);
    *bounds = malloc((size_t)out * 2 * sizeof **bounds);
    *kk = malloc((size_t)out * (size_t)ksize * sizeof **kk);
    if (!k || !*bounds || !*kk) {
        free(k);
        return 0;
    }
    for (int xx = 0; xx < out; xx++) {
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
        int *dst = *kk + (size_t)xx * (size_t)ksize;
        for (int x = 0; x < ksize; x++) {
            double v = x < xmax ? (ww != 0.0 ? k[x] / ww : k[x]) : 0.0;
            dst[x] = v < 0 ? (int)(-0.5 + v * (1 << PRECISION_BITS))
                           : (int)(0.5 + v * (1 << PRECISION_BITS));
        }
        (*bounds)[2 * xx] = xmin;
        (*bounds)[2 * xx + 1] = xmax;
    }
    free(k);
    return ksize;
}

static inline uint8_t clip8(int v)
{
    v >>= PRECISION_BITS;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Resizes src (sw x sh x c, HWC) to dst (dw x dh x c, HWC). */
static rt_status resample(const uint8_t *src, int sw, int sh, int c, uint8_t *dst, int dw, int dh,
                          rt_error *err)
{
    int *hb = NULL, *hk = NULL, *vb = NULL, *vk = NULL;
    uint8_t *tmp = NULL;
    rt_status st = RT_OK;
    int hks = coeffs(sw, dw, &hb, &hk), vks = hks ? coeffs(sh, dh, &vb, &vk) : 0;
    int y0 = vks ? vb[0] : 0, y1 = vks ? vb[2 * dh - 2] + vb[2 * dh - 1] : 0;
    if (vks) tmp = malloc((size_t)(y1 - y0) * (size_t)dw * (size_t)c);
    if (!tmp) {
        st = RT_ERR(err, RT_ENOMEM, "out of memory resizing an image");
        goto done;
    }
    for (int y = y0; y < y1; y++) { /* horizontal: rows y0..y1 only */
        const uint8_t *row = src + (size_t)y * (size_t)sw * (size_t)c;
        uint8_t *o = tmp + (size_t)(y - y0) * (size_t)dw * (size_t)c;
        for (int xx = 0; xx < dw; xx++) {
            int xmin = hb[2 * xx], xn = hb[2 * xx + 1];
            const int *k = hk + (size_t)xx * (size_t)hks;
            for (int ch = 0; ch < c; ch++) {
                int ss = 1 << (PRECISION_BITS - 1);
                for (int x = 0; x < xn; x++) ss += row[(size_t)(x + xmin) * (size_t)c + ch] * k[x];
                o[(size_t)xx * (size_t)c + ch] = clip8(ss);
            }
        }
    }
    size_t stride = (size_t)dw * (size_t)c;
    for (int yy = 0; yy < dh; yy++) { /* vertical */
        int ymin = vb[2 * yy] - y0, yn = vb[2 * yy + 1];
        const int *k = vk + (size_t)yy * (size_t)vks;
        uint8_t *o = dst + (size_t)yy * stride;
        for (size_t i = 0; i < stride; i++) {
            int ss = 1 << (PRECISION_BITS - 1);
            for (int y = 0; y < yn; y++) ss += tmp[(size_t)(y + ymin) * stride + i] * k[y];
            o[i] = clip8(ss);
        }
    }
done:
    free(hb);
    free(hk);
    free(vb);
    free(vk);
    free(tmp);
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
    const uint8_t *src = im->px;
    uint8_t *resized = NULL;
    if (rw != im->w || rh != im->h) {
        resized = malloc((size_t)rw * (size_t)rh * (size_t)im->c);
        if (!resized) return RT_ERR(err, RT_ENOMEM, "out of memory resizing an image");
        rt_status st = resample(im->px, im->w, im->h, im->c, resized, rw, rh, err);
        if (st != RT_OK) {
            free(resized);
            return st;
        }
        src = resized;
    }
    int top = (rh - h) / 2, left = (rw - w) / 2, c = im->c;
    for (int ch = 0; ch < c; ch++)
        for (int y = 0; y < h; y++) {
            const uint8_t *s =
                src + ((size_t)(y + top) * (size_t)rw + (size_t)left) * (size_t)c + ch;
            uint8_t *d = out + ((size_t)ch * (size_t)h + (size_t)y) * (size_t)w;
            for (int x = 0; x < w; x++) d[x] = s[(size_t)x * (size_t)c];
        }
    free(resized);
    return RT_OK;
}
