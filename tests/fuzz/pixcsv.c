/* pixcsv.c - fuzz target: the pixel CSV reader (rtp_pixcsv_read: Kaggle's
 * label,pixel0,... header, cells, rows, the shape given or inferred, interleaved
 * channels).
 * Input: bytes 0-2 = the --shape as written (each byte % 40; 0,0,0 = inferred), then
 * the file (a memory file).
 * Invariants: an accepted file gives n > 0 images whose C x H x W equals the header's
 * pixel columns, C 1..4, labels below 100; a refused one names the file; the sniffer
 * and the reader agree on what a pixel header is (a file the sniffer rejects is never
 * read successfully). */
#include <string.h>
#include <unistd.h>

#include "fz.h"
#include "rt_data_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    int shape[3] = {data[0] % 40, data[1] % 40, data[2] % 40};
    if (!shape[0] || !shape[1] || !shape[2]) shape[0] = shape[1] = shape[2] = 0;
    data += 3, size -= 3;
    char path[64];
    int fd = fz_memfile(data, size, path, sizeof path);
    if (fd < 0) return 0;
    rtp_raw_split s;
    int labelled = -1;
    rt_error err = {0};
    rt_status st = rtp_pixcsv_read(path, shape, &s, &labelled, NULL, &err);
    if (st == RT_OK) {
        FZ_CHECK(rtp_pixcsv_sniff(path));
        FZ_CHECK(s.n > 0 && s.c >= 1 && s.c <= 4 && s.h >= 1 && s.w >= 1 && s.pixels && s.labels);
        int cols = 1; /* the header's cells */
        for (size_t i = 0; i < size && data[i] != '\n'; i++) cols += data[i] == ',';
        FZ_CHECK((long long)s.c * s.h * s.w == cols - labelled);
        if (shape[0]) FZ_CHECK(s.c == shape[0] || s.c == shape[2]);
        for (int i = 0; i < s.n; i++) FZ_CHECK(s.labels[i] < 100 && (labelled || !s.labels[i]));
        rtp_raw_split_deinit(&s);
    } else {
        FZ_CHECK(strstr(err.msg, path) != NULL || strstr(err.msg, "--shape") != NULL);
        FZ_CHECK(s.pixels == NULL && s.labels == NULL);
    }
    close(fd);
    return 0;
}
