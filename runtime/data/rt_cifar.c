/* rt_cifar.c - CIFAR-10 binary batches, from a directory or straight from the
 * cifar-10-binary.tar.gz stream (the family's reader: rt_cifar_read.c).
 *
 * A batch file is records of 1 label byte + 3072 pixel bytes (1024 R, then G, then
 * B, each 32x32 row-major), i.e. already (C, H, W). Train = data_batch_1..5.bin in
 * that order, test = test_batch.bin; batches.meta.txt (optional) names the classes.
 * A file whose length is not a whole number of records, or a label beyond the
 * class list, is refused with the file's name.
 */
#include "rt_data_internal.h"

#include <stdlib.h>
#include <string.h>

#define CIFAR_PIXELS (3 * 32 * 32)
#define NBATCH 6 /* 5 train + 1 test */

static const char *const batch_names[NBATCH] = {"data_batch_1.bin", "data_batch_2.bin",
                                                "data_batch_3.bin", "data_batch_4.bin",
                                                "data_batch_5.bin", "test_batch.bin"};

static const rtp_cifar_layout cifar10 = {.members = batch_names,
                                         .nmembers = NBATCH,
                                         .label_bytes = 1,
                                         .label = 0,
                                         .names_file = "batches.meta.txt",
                                         .kind = "CIFAR-10",
                                         .label_desc = "1 label byte",
                                         .archive = "cifar-10-binary.tar.gz"};

/* Label check (once the class count is known), then train = concat of batches 1..5. */
static rt_status assemble(rtp_raw_split b[NBATCH], const char *where, rtp_raw_split *train,
                          rtp_raw_split *test, const rtp_class_names *names, rt_error *err)
{
    int ncls = names->count ? names->count : 10;
    for (int k = 0; k < NBATCH; k++)
        for (int i = 0; i < b[k].n; i++)
            if (b[k].labels[i] >= ncls)
                return RT_ERR(err, RT_EFORMAT,
                              "%s/%s: label %d of record %d is out of range "
                              "(%d classes)",
                              where, batch_names[k], b[k].labels[i], i, ncls);
    size_t n = 0;
    for (int k = 0; k < 5; k++) n += (size_t)b[k].n;
    if (n > 0x7fffffff) return RT_ERR(err, RT_EFORMAT, "%s: too many training records", where);
    *train = (rtp_raw_split){.n = (int)n, .c = 3, .h = 32, .w = 32};
    train->pixels = malloc(n * CIFAR_PIXELS);
    train->labels = malloc(n);
    if (!train->pixels || !train->labels) {
        rtp_raw_split_deinit(train);
        return RT_ERR(err, RT_ENOMEM, "%s: out of memory for %zu training images", where, n);
    }
    size_t at = 0;
    for (int k = 0; k < 5; k++) {
        memcpy(train->pixels + at * CIFAR_PIXELS, b[k].pixels, (size_t)b[k].n * CIFAR_PIXELS);
        memcpy(train->labels + at, b[k].labels, (size_t)b[k].n);
        at += (size_t)b[k].n;
        rtp_raw_split_deinit(&b[k]);
    }
    *test = b[5];
    memset(&b[5], 0, sizeof b[5]);
    return RT_OK;
}

/* The batches, then their labels checked and the training batches joined. */
static rt_status finish(rt_status st, rtp_raw_split b[NBATCH], const char *where,
                        rtp_raw_split *train, rtp_raw_split *test, const rtp_class_names *names,
                        rt_error *err)
{
    if (st == RT_OK) st = assemble(b, where, train, test, names, err);
    for (int k = 0; k < NBATCH; k++) rtp_raw_split_deinit(&b[k]);
    return st;
}

rt_status rtp_cifar_read_dir(const char *dir, rtp_raw_split *train, rtp_raw_split *test,
                             rtp_class_names *names, const rtp_stop *stop, rt_error *err)
{
    rtp_raw_split b[NBATCH];
    rt_status st = rtp_cifar_layout_read_dir(&cifar10, dir, b, names, stop, err);
    return finish(st, b, dir, train, test, names, err);
}

rt_status rtp_cifar_read_tar(const char *path, rtp_raw_split *train, rtp_raw_split *test,
                             rtp_class_names *names, const rtp_stop *stop, rt_error *err)
{
    rtp_raw_split b[NBATCH];
    rt_status st = rtp_cifar_layout_read_tar(&cifar10, path, b, names, stop, err);
    return finish(st, b, path, train, test, names, err);
}
