/* image.c - fuzz target: PNG and JPEG decoding (rtp_image_decode: format by content,
 * the header limits, libpng, libturbojpeg, and rt_png_fast.c's own PNG reader), then
 * the channel conversion and the resize + crop. Input: a whole file.
 * Invariants: a decoded image has w, h > 0 and 1 or 3 channels, within the pixel
 * limit; every PNG the fast reader takes, libpng also decodes, to the same pixels
 * (the fast reader may refuse more, never accept more or differ); resizing it to
 * 7 x 5 in either channel count succeeds. */
#include <string.h>

#include "fz.h"
#include "rt_image.h"

#define MAX_PIXELS (1u << 16) /* a small limit: large claims are refused, not allocated */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rtp_image im = {0};
    rt_error err = {0};
    if (rtp_image_decode(data, size, "fuzz", MAX_PIXELS, 7, 5, &im, &err) == RT_OK) {
        FZ_CHECK(im.w > 0 && im.h > 0 && (im.c == 1 || im.c == 3));
        FZ_CHECK((uint64_t)im.w * (uint64_t)im.h <= MAX_PIXELS);
        uint8_t out[3 * 7 * 5];
        int c0 = im.c;
        FZ_CHECK(rtp_image_fit(&im, 5, 7, out, &err) == RT_OK);
        FZ_CHECK(rtp_image_channels(&im, c0 == 1 ? 3 : 1, &err) == RT_OK);
        FZ_CHECK(rtp_image_fit(&im, 5, 7, out, &err) == RT_OK);
    }
    rtp_image fast = {0}, ref = {0};
    if (rtp_png_fast(data, size, MAX_PIXELS, &fast)) {
        FZ_CHECK(rtp_png_decode_libpng(data, size, "fuzz", MAX_PIXELS, &ref, &err) == RT_OK);
        FZ_CHECK(ref.w == fast.w && ref.h == fast.h && ref.c == fast.c);
        FZ_CHECK(!memcmp(ref.px, fast.px, (size_t)ref.w * (size_t)ref.h * (size_t)ref.c));
    }
    rtp_image_deinit(&fast);
    rtp_image_deinit(&ref);
    rtp_image_deinit(&im);
    return 0;
}
