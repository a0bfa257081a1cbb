/* rt_archive_dl.h - libarchive's read entry points, loaded on first use
 * (rt_archive_dl.c), not linked: the kernel does not pay for libarchive and its
 * compression libraries at start-up. rt_cifar.c, rt_cifar100.c and
 * rt_imgfolder_archive.c read archives.
 */
#ifndef RT_ARCHIVE_DL_H
#define RT_ARCHIVE_DL_H

#include <archive.h>
#include <archive_entry.h>

#include "rt_error.h"

/* One entry per libarchive function used, with libarchive's own prototype. */
typedef struct rtp_archive_fns {
    __typeof__(archive_read_new) *read_new;
    __typeof__(archive_read_support_filter_all) *read_support_filter_all;
    __typeof__(archive_read_support_format_tar) *read_support_format_tar;
    __typeof__(archive_read_support_format_gnutar) *read_support_format_gnutar;
    __typeof__(archive_read_support_format_zip) *read_support_format_zip;
    __typeof__(archive_read_open_filename) *read_open_filename;
    __typeof__(archive_read_next_header) *read_next_header;
    __typeof__(archive_read_data) *read_data;
    __typeof__(archive_read_free) *read_free;
    __typeof__(archive_error_string) *error_string;
    __typeof__(archive_entry_filetype) *entry_filetype;
    __typeof__(archive_entry_pathname) *entry_pathname;
    __typeof__(archive_entry_size) *entry_size;
} rtp_archive_fns;

/* Sets *out to the table, loaded once per process (thread-safe; later calls return
 * the first result); borrowed, valid for the life of the process. RT_ENOTFOUND,
 * naming the library and its package, and *out = NULL when libarchive cannot be
 * loaded. KILN_LIBARCHIVE in the environment names another file to load (tests). */
RT_MUST_USE rt_status rtp_archive_lib(const rtp_archive_fns **out, rt_error *err);

/* The archive's current member as a byte source (the readers' read callback). */
typedef struct rtp_archive_member {
    const rtp_archive_fns *ar;
    struct archive *a;
} rtp_archive_member;

/* Reads up to n bytes of the current member into buf (ctx: an rtp_archive_member);
 * returns how many, fewer only at its end or on an error. */
size_t rtp_archive_member_read(void *ctx, void *buf, size_t n);

#endif
