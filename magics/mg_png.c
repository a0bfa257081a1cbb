/* mg_png.c - PNG encoding into memory with libpng's simplified API
 * (png_image_write_to_memory: no setjmp, errors come back in image.message) and
 * base64 (RFC 4648, written here: magics/ may not include OpenSSL, see
 * tests/lint/check-layering.sh, and it is a dozen lines). */
#include <png.h>
#include <stdlib.h>
#include <string.h>

#include "mg_png.h"

/* 8192 x 8192: far beyond any sample grid, small enough that w*h*channels fits */
#define MG_PNG_MAX_SIDE 8192

int mg_png_encode(const uint8_t *pixels, int w, int h, int channels, unsigned char **png,
                  size_t *len, mg_error *err)
{
    *png = NULL;
    *len = 0;
    if (!pixels || w <= 0 || h <= 0 || w > MG_PNG_MAX_SIDE || h > MG_PNG_MAX_SIDE ||
        (channels != 1 && channels != 3 && channels != 4))
        return mg_fail(err, "ValueError", "PNG: bad image %d x %d x %d", w, h, channels);
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    img.width = (png_uint_32)w;
    img.height = (png_uint_32)h;
    img.format = channels == 1 ? PNG_FORMAT_GRAY : channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
    png_alloc_size_t size = 0;
    if (!png_image_write_to_memory(&img, NULL, &size, 0, pixels, 0, NULL)) {
        mg_fail(err, "ValueError", "PNG: %s", img.message);
        png_image_free(&img);
        return -1;
    }
    unsigned char *buf = malloc(size);
    if (!buf) return mg_fail(err, "MemoryError", "PNG: out of memory (%zu bytes)", (size_t)size);
    if (!png_image_write_to_memory(&img, buf, &size, 0, pixels, 0, NULL)) {
        mg_fail(err, "ValueError", "PNG: %s", img.message);
        png_image_free(&img);
        free(buf);
        return -1;
    }
    *png = buf;
    *len = size;
    return 0;
}

char *mg_base64(const unsigned char *data, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (n > ((size_t)1 << 40)) return NULL;
    char *out = malloc(4 * ((n + 2) / 3) + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)data[i] << 16;
        if (i + 1 < n) v |= (uint32_t)data[i + 1] << 8;
        if (i + 2 < n) v |= data[i + 2];
        *o++ = tab[v >> 18 & 63];
        *o++ = tab[v >> 12 & 63];
        *o++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *o = 0;
    return out;
}

char *mg_png_base64(const uint8_t *pixels, int w, int h, int channels, mg_error *err)
{
    unsigned char *png;
    size_t len;
    if (mg_png_encode(pixels, w, h, channels, &png, &len, err) < 0) return NULL;
    char *b64 = mg_base64(png, len);
    free(png);
    if (!b64) mg_fail(err, "MemoryError", "PNG: out of memory encoding base64");
    return b64;
}
