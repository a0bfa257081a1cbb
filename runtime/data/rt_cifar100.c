/* rt_cifar100.c - CIFAR-100 binary files, from a directory or straight from the
 * cifar-100-binary.tar.gz stream (the family's reader: rt_cifar_read.c).
 *
 * train.bin and test.bin are records of 2 label bytes (coarse 0..19, then fine 0..99)
 * + 3072 pixel bytes (1024 R, then G, then B, each 32x32 row-major), i.e. (C, H, W).
 * coarse_label_names.txt / fine_label_names.txt (optional) name the classes, one a
 * line; a list present must have exactly 20 / 100 names. Both label bytes of every
 * record are checked whichever labels are used: a file with either out of range is
 * damaged.
 */
#include "rt_data_internal.h"

#define NCOARSE 20
#define NFINE 100

static const char *const files[2] = {"train.bin", "test.bin"};

static rt_status check_labels(const uint8_t *r, size_t i, const char *what, rt_error *err)
{
    if (r[0] < NCOARSE && r[1] < NFINE) return RT_OK;
    return RT_ERR(err, RT_EFORMAT, "%s: record %zu has %s label %d, out of range (%d classes)",
                  what, i, r[0] >= NCOARSE ? "coarse" : "fine", r[0] >= NCOARSE ? r[0] : r[1],
                  r[0] >= NCOARSE ? NCOARSE : NFINE);
}

/* The layout of the coarse (superclass) or the fine labels. */
static rtp_cifar_layout layout(int coarse)
{
    return (rtp_cifar_layout){.members = files,
                              .nmembers = 2,
                              .label_bytes = 2,
                              .label = coarse ? 0 : 1,
                              .check = check_labels,
                              .names_file =
                                  coarse ? "coarse_label_names.txt" : "fine_label_names.txt",
                              .names_count = coarse ? NCOARSE : NFINE,
                              .kind = "CIFAR-100",
                              .label_desc = "coarse and fine label bytes",
                              .archive = "cifar-100-binary.tar.gz"};
}

/* The folder dir or the archive at path (tar), its two files as train and test. */
static rt_status read_files(int tar, const char *where, int coarse, rtp_raw_split *train,
                            rtp_raw_split *test, rtp_class_names *names, const rtp_stop *stop,
                            rt_error *err)
{
    rtp_cifar_layout l = layout(coarse);
    rtp_raw_split out[2];
    RT_TRY(tar ? rtp_cifar_layout_read_tar(&l, where, out, names, stop, err)
               : rtp_cifar_layout_read_dir(&l, where, out, names, stop, err));
    *train = out[0], *test = out[1];
    return RT_OK;
}

rt_status rtp_cifar100_read_dir(const char *dir, int coarse, rtp_raw_split *train,
                                rtp_raw_split *test, rtp_class_names *names, const rtp_stop *stop,
                                rt_error *err)
{
    return read_files(0, dir, coarse, train, test, names, stop, err);
}

rt_status rtp_cifar100_read_tar(const char *path, int coarse, rtp_raw_split *train,
                                rtp_raw_split *test, rtp_class_names *names, const rtp_stop *stop,
                                rt_error *err)
{
    return read_files(1, path, coarse, train, test, names, stop, err);
}
