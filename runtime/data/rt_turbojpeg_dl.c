/* rt_turbojpeg_dl.c - libturbojpeg loaded the first time a JPEG is decoded.
 *
 * Same reason and shape as rt_archive_dl.c: the kernel's start maps only what the
 * first message needs, and image folders are one use among several. The build takes
 * turbojpeg.h only; the first rtp_turbojpeg_lib() (pthread_once) looks the entry
 * points up into a table. The library is never dlclose'd.
 */
#include "rt_turbojpeg_dl.h"

#include "rt_dl.h"

#include <pthread.h>
#include <stdio.h>

#define TURBOJPEG_SONAME "libturbojpeg.so.0"

static rtp_tj_fns fns;
static int loaded;    /* every entry of fns is set */
static char why[400]; /* set when not loaded */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load_once(void)
{
    const char *names[] = {TURBOJPEG_SONAME};
    const rt_dl_sym syms[] = {
        {"tjInitDecompress", (void **)&fns.init_decompress},
        {"tjDecompressHeader3", (void **)&fns.decompress_header3},
        {"tjDecompress2", (void **)&fns.decompress2},
        {"tjDestroy", (void **)&fns.destroy},
        {"tjGetErrorStr2", (void **)&fns.error_str2},
        {"tjGetErrorCode", (void **)&fns.error_code},
    };
    rt_dl_result r;
    loaded = rt_dl_load("KILN_LIBTURBOJPEG", names, 1, syms, sizeof syms / sizeof syms[0], &r);
    snprintf(why, sizeof why, "%s", r.why);
}

rt_status rtp_turbojpeg_lib(const rtp_tj_fns **out, rt_error *err)
{
    pthread_once(&once, load_once);
    *out = loaded ? &fns : NULL;
    if (loaded) return RT_OK;
    return RT_ERR(err, RT_ENOTFOUND,
                  "cannot load libturbojpeg (%s): %s ---> HINT: install "
                  "the libturbojpeg0 package (apt install libturbojpeg0)",
                  TURBOJPEG_SONAME, why);
}
