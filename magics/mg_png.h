/* mg_png.h - pictures for MIME bundles: 8-bit images encoded as PNG in memory (libpng's
 * simplified write API) and base64 for an "image/png" entry. */
#ifndef MG_PNG_H
#define MG_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "mg.h"

/* pixels: h rows of w pixels, channels 1 (gray), 3 (RGB) or 4 (RGBA), top row first.
 * *png is a new buffer (free()) of *len bytes. -1 with err on bad sizes or no memory. */
RT_MUST_USE int mg_png_encode(const uint8_t *pixels, int w, int h, int channels,
                              unsigned char **png, size_t *len, mg_error *err);
/* Standard base64 of n bytes; new NUL-terminated string (free()), NULL on no memory. */
char *mg_base64(const unsigned char *data, size_t n);
/* Both: the base64 PNG text for an "image/png" bundle entry (free()), NULL with err. */
char *mg_png_base64(const uint8_t *pixels, int w, int h, int channels, mg_error *err);

#endif
