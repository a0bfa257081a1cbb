/* svhn.c - fuzz target: the level-5 MAT reader of SVHN's files (rtp_svhn_read_mat): the
 * header, element tags (small and long form), miCOMPRESSED zlib streams, array flags,
 * dimensions, names, X's size against its dimensions and y's values.
 * Input: byte 0 = flags, then the body.
 *   flags & 1: prepend a valid 128-byte level-5 header (little-endian, version 0x0100),
 *              so the fuzzer spends its time on the elements;
 *   flags & 2: wrap the body in one miCOMPRESSED element (zlib), as MATLAB writes it,
 *              so the checks behind zlib are reached too.
 * The file is a memory file. Invariants: an accepted file gives n > 0 images of
 * 1..4 channels, sides 1..4096, every label below 10; a refused one names the file. */
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "fz.h"
#include "rt_data_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned flags = data[0];
    data++, size--;
    size_t cap = 128 + 8 + compressBound((uLong)size) + 8;
    uint8_t *file = malloc(cap), *at = file;
    FZ_CHECK(file != NULL);
    if (flags & 1) {
        memset(at, ' ', 116);
        memcpy(at, "MATLAB 5.0 MAT-file", 19);
        memset(at + 116, 0, 8);
        at[124] = 0x00, at[125] = 0x01, at[126] = 'I', at[127] = 'M';
        at += 128;
    }
    if (flags & 2) {
        uLongf zl = compressBound((uLong)size);
        FZ_CHECK(compress2(at + 8, &zl, data, (uLong)size, 1) == Z_OK);
        uint32_t tag[2] = {15, (uint32_t)zl};
        memcpy(at, tag, 8);
        at += 8 + zl;
    } else {
        memcpy(at, data, size);
        at += size;
    }
    char path[64];
    int fd = fz_memfile(file, (size_t)(at - file), path, sizeof path);
    free(file);
    if (fd < 0) return 0;
    rtp_raw_split s;
    rt_error err = {0};
    rt_status st = rtp_svhn_read_mat(path, &s, NULL, &err);
    if (st == RT_OK) {
        FZ_CHECK(s.n > 0 && s.c >= 1 && s.c <= 4 && s.h >= 1 && s.h <= 4096 && s.w >= 1 &&
                 s.w <= 4096 && s.pixels && s.labels);
        for (int i = 0; i < s.n; i++) FZ_CHECK(s.labels[i] < 10);
        rtp_raw_split_deinit(&s);
    } else {
        FZ_CHECK(strstr(err.msg, path) != NULL);
        FZ_CHECK(s.pixels == NULL && s.labels == NULL);
    }
    close(fd);
    return 0;
}
