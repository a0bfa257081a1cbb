/* rt_turbojpeg_dl.h - libturbojpeg's decompression entry points, loaded on first use
 * (rt_turbojpeg_dl.c), not linked: a kernel that never reads a JPEG does not map it.
 * Only rt_image_decode.c decodes JPEG.
 */
#ifndef RT_TURBOJPEG_DL_H
#define RT_TURBOJPEG_DL_H

#include <turbojpeg.h>

#include "rt_error.h"

/* One entry per TurboJPEG function used, with the library's own prototype. */
typedef struct rtp_tj_fns {
    __typeof__(tjInitDecompress) *init_decompress;
    __typeof__(tjDecompressHeader3) *decompress_header3;
    __typeof__(tjDecompress2) *decompress2;
    __typeof__(tjDestroy) *destroy;
    __typeof__(tjGetErrorStr2) *error_str2;
    __typeof__(tjGetErrorCode) *error_code;
} rtp_tj_fns;

/* Sets *out to the table, loaded once per process (thread-safe); borrowed, valid for
 * the life of the process. RT_ENOTFOUND, naming the library and its package, and
 * *out = NULL when it cannot be loaded. KILN_LIBTURBOJPEG names another file (tests). */
RT_MUST_USE rt_status rtp_turbojpeg_lib(const rtp_tj_fns **out, rt_error *err);

#endif
