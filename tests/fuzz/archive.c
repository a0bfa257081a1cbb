/* archive.c - fuzz target: an image folder packed as an archive (rtp_img_scan_archive:
 * libarchive's zip, tar and compressed tar readers, member names, the shared top
 * folder, split folders, classes, the bounds on members and on their total).
 * Input: the archive's bytes (format found from its content), read from a memory file.
 * Invariants: an accepted archive lists at least one image of at least two classes,
 * every label among them, and no member above 256 MiB; a refused one says why. */
#include <string.h>
#include <unistd.h>

#include "fz.h"
#include "rt_imgfolder_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fz_memfile(data, size, path, sizeof path);
    if (fd < 0) return 0;
    rtp_img_list l;
    memset(&l, 0, sizeof l);
    rt_error err = {0};
    rt_status st = rtp_img_scan_archive(path, &l, &err);
    if (st == RT_OK) {
        FZ_CHECK(l.n >= 1 && l.num_classes >= 2 && l.num_classes <= RT_MAX_CLASSES);
        for (int i = 0; i < l.n; i++) {
            FZ_CHECK(l.v[i].label >= 0 && l.v[i].label < l.num_classes);
            FZ_CHECK(l.v[i].mem_len <= (256u << 20));
        }
    } else {
        FZ_CHECK(err.msg[0]);
    }
    rtp_img_list_deinit(&l);
    close(fd);
    return 0;
}
