/* rt_archive_dl.c - libarchive loaded on first use, not when the process starts.
 *
 * Linking libarchive makes every process that links the runtime map it and its
 * libraries (lzma, zstd, bz2, lz4, nettle, acl, xml2 and ICU) before main (the cost
 * is in bench/README.md), for the one caller that reads cifar-10-binary.tar.gz
 * (rt_cifar.c). The build takes libarchive's
 * headers only; the entry points are looked up with dlopen/dlsym by the first
 * rtp_archive_lib() (pthread_once) into a table of function pointers. The library is
 * never dlclose'd.
 */
#include "rt_archive_dl.h"

#include "rt_dl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ARCHIVE_SONAME "libarchive.so.13"

static rtp_archive_fns fns;
static int loaded;    /* every entry of fns is set */
static char why[400]; /* set when not loaded */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load_once(void)
{
    const char *names[] = {ARCHIVE_SONAME};
    const rt_dl_sym syms[] = {
        {"archive_read_new", (void **)&fns.read_new},
        {"archive_read_support_filter_all", (void **)&fns.read_support_filter_all},
        {"archive_read_support_format_tar", (void **)&fns.read_support_format_tar},
        {"archive_read_support_format_gnutar", (void **)&fns.read_support_format_gnutar},
        {"archive_read_support_format_zip", (void **)&fns.read_support_format_zip},
        {"archive_read_open_filename", (void **)&fns.read_open_filename},
        {"archive_read_next_header", (void **)&fns.read_next_header},
        {"archive_read_data", (void **)&fns.read_data},
        {"archive_read_free", (void **)&fns.read_free},
        {"archive_error_string", (void **)&fns.error_string},
        {"archive_entry_filetype", (void **)&fns.entry_filetype},
        {"archive_entry_pathname", (void **)&fns.entry_pathname},
        {"archive_entry_size", (void **)&fns.entry_size},
    };
    rt_dl_result r;
    loaded = rt_dl_load("KILN_LIBARCHIVE", names, 1, syms, sizeof syms / sizeof syms[0], &r);
    snprintf(why, sizeof why, "%s", r.why);
}

rt_status rtp_archive_lib(const rtp_archive_fns **out, rt_error *err)
{
    pthread_once(&once, load_once);
    *out = loaded ? &fns : NULL;
    if (loaded) return RT_OK;
    return RT_ERR(err, RT_ENOTFOUND,
                  "cannot load libarchive (%s): %s ---> HINT: install "
                  "the libarchive13 package (apt install libarchive13), or extract the "
                  ".tar.gz (tar xzf) and use its directory",
                  ARCHIVE_SONAME, why);
}

size_t rtp_archive_member_read(void *ctx, void *buf, size_t n)
{
    const rtp_archive_member *m = ctx;
    size_t got = 0;
    while (got < n) {
        la_ssize_t r = m->ar->read_data(m->a, (char *)buf + got, n - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    return got;
}
