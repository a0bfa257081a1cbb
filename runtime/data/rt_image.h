/* rt_image.h - private to runtime/data/: one decoded image, and the steps that turn a
 * PNG or JPEG file into the C x H x W bytes of an image-folder data set.
 *
 *   rtp_image_decode   PNG (libpng) or JPEG (libturbojpeg), recognised by content, not
 *                      by name; 8-bit grey or RGB out (alpha dropped, palettes expanded);
 *                      a large JPEG at 1/2, 1/4 or 1/8 scale (Pillow's draft());
 *   rtp_image_channels grey <-> RGB with Pillow's conversion (ITU-R 601-2 luma);
 *   rtp_image_fit      resize (bilinear, Pillow's antialiased resampling, bit for bit)
 *                      so the image covers H x W, then the centred H x W crop, as CHW.
 * Every error names the file (`what`) and says what is wrong with it.
 */
#ifndef RT_IMAGE_H
#define RT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "rt_error.h"

/* Images above this many pixels are refused from their header, before any pixel
 * memory is allocated: Pillow's own decompression-bomb limit (MAX_IMAGE_PIXELS). */
#define RTP_IMAGE_MAX_PIXELS 89478485ULL

typedef struct rtp_image {
    int w, h, c; /* c = 1 (grey) or 3 (RGB) */
    uint8_t *px; /* (H, W, C) interleaved, owned (malloc), cap bytes */
    size_t cap;
    uint8_t *work; /* a decoder's scratch (a PNG's inflated rows), owned, work_cap bytes */
    size_t work_cap;
} rtp_image;

/* Frees px and work. A zeroed image is empty; one kept across decodes reuses both
 * buffers (a loop over thousands of files then allocates once, not twice a file). */
void rtp_image_deinit(rtp_image *im);
/* Makes *buf (of *cap bytes, owned) at least n bytes; its contents are not kept. 0 on
 * out of memory (the old buffer stays). */
int rtp_buf_reserve(uint8_t **buf, size_t *cap, size_t n);

/* Decodes buf[0..len) (a whole file) into out (zeroed, or kept from an earlier decode:
 * its buffers are reused). want_w x want_h (0 x 0 = full size) is
 * the smallest size the caller needs: a JPEG of at least s times that on both sides
 * (s = 2, 4 or 8, the largest that fits) comes out 1/s of its size, each side rounded
 * up, by the scaled IDCT, as Pillow's Image.draft(mode, (want_w, want_h)) does; PNG is
 * always full size. RT_EFORMAT naming `what` for: an empty file, neither PNG nor JPEG,
 * a truncated or corrupt stream, CMYK/YCCK JPEG, 16-bit PNG, and a header claiming more
 * than max_pixels (before allocating). RT_ENOTFOUND when libturbojpeg cannot be loaded.
 * On error out holds no image (w = h = c = 0). */
RT_MUST_USE rt_status rtp_image_decode(const uint8_t *buf, size_t len, const char *what,
                                       uint64_t max_pixels, int want_w, int want_h, rtp_image *out,
                                       rt_error *err);

/* The common PNG (8-bit grey, grey + alpha, RGB, RGBA; not interlaced) decoded with
 * libdeflate into out, alpha dropped: 1. Anything else, a damaged file included, or a
 * build without libdeflate: 0, out holds no image, and libpng decodes it
 * (rt_png_fast.c). */
int rtp_png_fast(const uint8_t *buf, size_t len, uint64_t max_pixels, rtp_image *out);
/* A PNG through libpng only (never rtp_png_fast): what rtp_image_decode does with the
 * files rtp_png_fast does not take. For the fuzz target's cross-check. */
RT_MUST_USE rt_status rtp_png_decode_libpng(const uint8_t *buf, size_t len, const char *what,
                                            uint64_t max_pixels, rtp_image *out, rt_error *err);

/* Converts im in place to c channels (1 or 3). RT_ENOMEM only. */
RT_MUST_USE rt_status rtp_image_channels(rtp_image *im, int c, rt_error *err);

/* Writes im resized to cover (H, W) and centre-cropped into out (C, H, W) bytes.
 * The resize keeps the aspect ratio: the side that fits exactly gets its target, the
 * other floor(target * other / side); the crop drops floor(extra / 2) at the top/left.
 * RT_ENOMEM only. */
RT_MUST_USE rt_status rtp_image_fit(const rtp_image *im, int h, int w, uint8_t *out, rt_error *err);

#endif
