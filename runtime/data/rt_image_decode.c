/* rt_image_decode.c - PNG (libpng) and JPEG (libturbojpeg) files held in memory ->
 * 8-bit grey or RGB pixels.
 *
 * The format comes from the first bytes, never from the file name, so a text file
 * called cat.png is named as "not a PNG or JPEG" rather than fed to a decoder. The
 * header is read first and the image refused when it claims more than max_pixels,
 * so a decompression bomb (a few hundred bytes saying 100000 x 100000) costs no
 * allocation. What Pillow's convert("RGB") / ("L") would keep is kept: PNG alpha is
 * dropped (not composited), palettes and 1/2/4-bit grey are expanded; 16-bit PNG and
 * CMYK/YCCK JPEG are refused by name rather than quietly reduced. The common PNGs go
 * through rt_png_fast.c (libdeflate) first, the rest and every damaged one through
 * libpng here. A JPEG at least twice
 * the wanted size on both sides is decoded at 1/2, 1/4 or 1/8 scale by libjpeg's
 * scaled IDCT, the scale Pillow's Image.draft() picks: most of the decode and resize
 * work for a large photo is skipped (docs/datasets.md says what changes). A JPEG warning
 * (libjpeg's "premature end of data": a truncated file) is an error: a half-grey
 * picture would otherwise train silently.
 */
#include "rt_image.h"

#include "rt_turbojpeg_dl.h"

#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rtp_image_deinit(rtp_image *im)
{
    if (!im) return;
    free(im->px);
    free(im->work);
    memset(im, 0, sizeof *im);
}

int rtp_buf_reserve(uint8_t **buf, size_t *cap, size_t n)
{
    if (*cap >= n && *buf) return 1;
    uint8_t *b = malloc(n ? n : 1);
    if (!b) return 0;
    free(*buf);
    *buf = b;
    *cap = n;
    return 1;
}

static rt_status too_big(const char *what, uint64_t w, uint64_t h, uint64_t max, rt_error *err)
{
    return RT_ERR(err, RT_EFORMAT,
                  "%s: the header says %llu x %llu pixels, over the limit "
                  "of %llu (a decompression bomb?); refused before decoding",
                  what, (unsigned long long)w, (unsigned long long)h, (unsigned long long)max);
}

/* ---- JPEG ---- */

/* Pillow's draft(): the largest s of 8, 4, 2, 1 with s <= min(w / want_w, h / want_h). */
static int dct_scale(int w, int h, int want_w, int want_h)
{
    if (want_w <= 0 || want_h <= 0) return 1;
    int r = w / want_w < h / want_h ? w / want_w : h / want_h;
    return r >= 8 ? 8 : r >= 4 ? 4 : r >= 2 ? 2 : 1;
}

#ifndef TJFLAG_LIMITSCANS
#define TJFLAG_LIMITSCANS 32768 /* TurboJPEG 2.1: at most 500 progressive scans */
#endif
/* The most memory one progressive JPEG's coefficients may take (libjpeg keeps every
 * coefficient of the whole image while the scans come): 128 MiB, about 22 megapixels
 * of 4:4:4 RGB or 44 of 4:2:0, per decoding thread. */
#define RTP_JPEG_COEF_MAX (128ull << 20)

/* The coefficient memory of a progressive JPEG (its SOF2/6/10/14 frame), 0 for a
 * baseline one or when the frame cannot be read (libjpeg then says why). */
static uint64_t progressive_bytes(const uint8_t *b, size_t len)
{
    for (size_t p = 2; p + 4 <= len;) {
        if (b[p] != 0xff) return 0;
        const uint8_t m = b[p + 1];
        if (m == 0xff || m == 0xd8 || (m >= 0xd0 && m <= 0xd7)) { /* fill, SOI, RSTn */
            p++;
            continue;
        }
        if (m == 0xda || m == 0xd9) return 0; /* scans begin: no progressive frame */
        const size_t n = (size_t)b[p + 2] << 8 | b[p + 3];
        if (m == 0xc2 || m == 0xc6 || m == 0xca || m == 0xce) {
            const uint8_t *f = b + p + 4;
            if (n < 8 || p + 2 + n > len) return 0;
            const uint64_t h = (uint64_t)f[1] << 8 | f[2], w = (uint64_t)f[3] << 8 | f[4];
            const int nc = f[5];
            if (n < 8 + 3 * (size_t)nc) return 0;
            int hmax = 1, vmax = 1;
            for (int c = 0; c < nc; c++) {
                hmax = (f[7 + 3 * c] >> 4) > hmax ? f[7 + 3 * c] >> 4 : hmax;
                vmax = (f[7 + 3 * c] & 15) > vmax ? f[7 + 3 * c] & 15 : vmax;
            }
            uint64_t bytes = 0;
            for (int c = 0; c < nc; c++) { /* blocks of 8 x 8 coefficients, 2 bytes each */
                const int hs = f[7 + 3 * c] >> 4, vs = f[7 + 3 * c] & 15;
                const uint64_t cw = (w * (uint64_t)hs + (uint64_t)hmax - 1) / (uint64_t)hmax;
                const uint64_t ch = (h * (uint64_t)vs + (uint64_t)vmax - 1) / (uint64_t)vmax;
                bytes += (cw + 7) / 8 * ((ch + 7) / 8) * 64 * 2;
            }
            return bytes;
        }
        p += 2 + n;
    }
    return 0;
}

static rt_status decode_jpeg(const uint8_t *buf, size_t len, const char *what, uint64_t max_pixels,
                             int want_w, int want_h, rtp_image *out, rt_error *err)
{
    const rtp_tj_fns *tj;
    RT_TRY(rtp_turbojpeg_lib(&tj, err));
    tjhandle h = tj->init_decompress();
    if (!h) return RT_ERR(err, RT_ENOMEM, "%s: cannot start a JPEG decoder", what);
    int w = 0, ht = 0, sub = 0, cs = 0;
    rt_status st = RT_OK;
    if (len > (size_t)0xffffffffUL) {
        st = RT_ERR(err, RT_EFORMAT, "%s: a JPEG over 4 GiB", what);
    } else if (tj->decompress_header3(h, buf, (unsigned long)len, &w, &ht, &sub, &cs) != 0) {
        st = RT_ERR(err, RT_EFORMAT, "%s: not a valid JPEG: %s", what, tj->error_str2(h));
    } else if (w <= 0 || ht <= 0) {
        st = RT_ERR(err, RT_EFORMAT, "%s: a JPEG of %d x %d pixels", what, w, ht);
    } else if ((uint64_t)w * (uint64_t)ht > max_pixels) {
        st = too_big(what, (uint64_t)w, (uint64_t)ht, max_pixels, err);
    } else if (progressive_bytes(buf, len) > RTP_JPEG_COEF_MAX) {
        st = RT_ERR(err, RT_EFORMAT,
                    "%s: a progressive JPEG of %d x %d pixels, whose decoding would hold %.0f "
                    "MiB of coefficients (at most %llu MiB); refused before decoding ---> "
                    "HINT: save it as a baseline JPEG, or smaller",
                    what, w, ht, (double)progressive_bytes(buf, len) / (1 << 20),
                    RTP_JPEG_COEF_MAX >> 20);
    } else if (cs == TJCS_CMYK || cs == TJCS_YCCK) {
        st = RT_ERR(err, RT_EFORMAT,
                    "%s: a CMYK JPEG; only greyscale and RGB/YCbCr JPEGs "
                    "are read ---> HINT: convert it to RGB (e.g. convert IN -colorspace sRGB "
                    "OUT)",
                    what);
    }
    if (st == RT_OK) { /* 1/s of each side, rounded up: libjpeg's scaled IDCT */
        int sc = dct_scale(w, ht, want_w, want_h), c = cs == TJCS_GRAY ? 1 : 3;
        w = (w + sc - 1) / sc;
        ht = (ht + sc - 1) / sc;
        if (!rtp_buf_reserve(&out->px, &out->cap, (size_t)w * (size_t)ht * (size_t)c)) {
            st = RT_ERR(err, RT_ENOMEM, "%s: out of memory for %d x %d pixels", what, w, ht);
        } else if (tj->decompress2(h, buf, (unsigned long)len, out->px, w, 0, ht,
                                   c == 1 ? TJPF_GRAY : TJPF_RGB, TJFLAG_LIMITSCANS) != 0) {
            st = RT_ERR(err, RT_EFORMAT, "%s: %s JPEG: %s", what,
                        tj->error_code(h) == TJERR_WARNING ? "a damaged or truncated"
                                                           : "cannot decode the",
                        tj->error_str2(h));
        } else {
            out->w = w;
            out->h = ht;
            out->c = c;
        }
    }
    tj->destroy(h);
    return st;
}

/* ---- PNG ---- */

typedef struct png_src {
    const uint8_t *buf;
    size_t len, pos;
    char msg[160]; /* libpng's error text */
} png_src;

static void png_read_mem(png_structp p, png_bytep dst, png_size_t n)
{
    png_src *s = png_get_io_ptr(p);
    if (n > s->len - s->pos) png_error(p, "the file ends early (truncated)");
    memcpy(dst, s->buf + s->pos, n);
    s->pos += n;
}

static void png_on_error(png_structp p, png_const_charp msg)
{
    png_src *s = png_get_error_ptr(p);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    png_longjmp(p, 1);
}

static void png_on_warning(png_structp p, png_const_charp msg)
{
    (void)p;
    (void)msg;
}

static rt_status decode_png(const uint8_t *buf, size_t len, const char *what, uint64_t max_pixels,
                            rtp_image *out, rt_error *err)
/* (out's buffer is reserved after setjmp and owned by out: a longjmp leaks nothing) */
{
    png_src src = {.buf = buf, .len = len};
    png_structp p =
        png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_on_error, png_on_warning);
    png_infop info = p ? png_create_info_struct(p) : NULL;
    if (!info) {
        png_destroy_read_struct(p ? &p : NULL, NULL, NULL);
        return RT_ERR(err, RT_ENOMEM, "%s: cannot start a PNG decoder", what);
    }
    /* Set before setjmp and read after a longjmp: volatile, so not kept in registers. */
    png_bytep *volatile rows = NULL;
    volatile rt_status st = RT_OK;
    if (setjmp(png_jmpbuf(p))) {
        if (st == RT_OK) st = RT_ERR(err, RT_EFORMAT, "%s: not a valid PNG: %s", what, src.msg);
        goto done;
    }
    png_set_read_fn(p, &src, png_read_mem);
    png_set_user_limits(p, 0x7fffffff, 0x7fffffff); /* our own limit below, by area */
    png_read_info(p, info);
    png_uint_32 w = png_get_image_width(p, info), h = png_get_image_height(p, info);
    int depth = png_get_bit_depth(p, info), type = png_get_color_type(p, info);
    if ((uint64_t)w * (uint64_t)h > max_pixels) {
        st = too_big(what, w, h, max_pixels, err);
        goto done;
    }
    if (depth == 16) {
        st = RT_ERR(err, RT_EFORMAT,
                    "%s: a 16-bit PNG; only 8-bit (and lower) PNGs are "
                    "read ---> HINT: save it with 8 bits per channel",
                    what);
        goto done;
    }
    if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(p);
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(p);
    if (type & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(p);
    png_set_interlace_handling(p);
    png_read_update_info(p, info);
    int c = (int)png_get_channels(p, info);
    if (c != 1 && c != 3) {
        st = RT_ERR(err, RT_EFORMAT, "%s: a PNG with %d channels after expansion", what, c);
        goto done;
    }
    rows = malloc((size_t)h * sizeof *rows);
    if (!rows || !rtp_buf_reserve(&out->px, &out->cap, (size_t)w * (size_t)h * (size_t)c)) {
        st = RT_ERR(err, RT_ENOMEM, "%s: out of memory for %u x %u pixels", what, w, h);
        goto done;
    }
    for (png_uint_32 y = 0; y < h; y++) rows[y] = out->px + (size_t)y * w * (size_t)c;
    png_read_image(p, rows);
    out->w = (int)w;
    out->h = (int)h;
    out->c = c;
done:
    png_destroy_read_struct(&p, &info, NULL);
    free(rows);
    return st;
}

rt_status rtp_png_decode_libpng(const uint8_t *buf, size_t len, const char *what,
                                uint64_t max_pixels, rtp_image *out, rt_error *err)
{
    out->w = out->h = out->c = 0;
    return decode_png(buf, len, what, max_pixels, out, err);
}

rt_status rtp_image_decode(const uint8_t *buf, size_t len, const char *what, uint64_t max_pixels,
                           int want_w, int want_h, rtp_image *out, rt_error *err)
{
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    out->w = out->h = out->c = 0;
    if (len == 0) return RT_ERR(err, RT_EFORMAT, "%s: an empty file (0 bytes)", what);
    if (len >= 8 && !memcmp(buf, png_sig, 8))
        return rtp_png_fast(buf, len, max_pixels, out)
                   ? RT_OK
                   : decode_png(buf, len, what, max_pixels, out, err);
    if (len >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff)
        return decode_jpeg(buf, len, what, max_pixels, want_w, want_h, out, err);
    /* what it holds instead is not said: a file named as an image may hold anything */
    return RT_ERR(err, RT_EFORMAT,
                  "%s: not a PNG or JPEG image (%zu bytes without either one's signature)", what,
                  len);
}
