/* imgfolder_bench.c - the Kiln side of bench/imgfolder_bench.py: loads an image folder
 * with rt_dataset_load (decode on every core, resize + centre crop, normalise) and
 * prints "images N\nseconds S\ndecoded D" for the python driver.
 *
 *   imgfolder_bench DIR SIZE
 *
 * The cache directory comes from KILN_IMAGE_CACHE (the driver gives an empty one for
 * the cold load and the same one again for the cached load).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rt_dataset.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: imgfolder_bench DIR SIZE\n");
        return 2;
    }
    rt_dataset_opts o = {.name = argv[1], .image_h = atoi(argv[2]), .channels = 3};
    rt_dataset_splits s;
    rt_error err = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (rt_dataset_load(&s, &o, &err) != RT_OK) {
        fprintf(stderr, "imgfolder_bench: %s\n", err.msg);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("images %d\nseconds %.6f\ndecoded %d\n", s.train.n,
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
           s.images.decoded);
    rt_dataset_splits_deinit(&s);
    return 0;
}
