/* checkpoint_bench.c - save/load time of a Kiln checkpoint for a 1.2M-parameter CNN
 * with Adam state (weights + m + v = 3 x 1.2M floats, 14.4 MB of tensor data).
 *
 *   checkpoint_bench [DIR] [REPS]      (DIR defaults to $TMPDIR or /tmp, REPS to 9)
 *
 * Every save writes a new file (the previous one is removed first, untimed), as a
 * run's ckpt-stepN files are. Prints one "name seconds" line per measurement (median
 * of REPS) for
 * bench/checkpoint_bench.py, which runs the safetensors package on the same tensors
 * side by side. save = atomic write incl. fsync of file and directory; load = open
 * with full validation (header CRC-32 + data XXH3-64) and copy of every tensor out;
 * crc32 / xxh3 = the old (format v1) and new (v2) data checksum alone over the same
 * bytes, in memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "rt_ckpt.h"
#include "rt_ckpt_internal.h" /* rtp_ckpt_xxh3: the checksum alone */

typedef struct {
    const char *name;
    int ndim;
    int64_t shape[4];
} layer;

/* conv 1->32 3x3, conv 32->64 3x3, dense 9216->128, dense 128->10: 1,199,882 params */
static const layer layers[] = {
    {"conv1.weight", 4, {32, 1, 3, 3}},  {"conv1.bias", 1, {32}},
    {"conv2.weight", 4, {64, 32, 3, 3}}, {"conv2.bias", 1, {64}},
    {"fc1.weight", 2, {128, 9216}},      {"fc1.bias", 1, {128}},
    {"fc2.weight", 2, {10, 128}},        {"fc2.bias", 1, {10}},
};
#define NL (sizeof layers / sizeof *layers)
static const char *const roles[3] = {"model.", "optim.m.", "optim.v."};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

static size_t numel(const layer *l)
{
    size_t n = 1;
    for (int d = 0; d < l->ndim; d++) n *= (size_t)l->shape[d];
    return n;
}

static int save(const char *path, float **bufs, rt_error *err)
{
    rt_ckpt_writer *w = NULL;
    char name[64];
    if (rt_ckpt_writer_create(&w, err)) return -1;
    int bad = 0;
    for (int r = 0; r < 3 && !bad; r++)
        for (size_t i = 0; i < NL && !bad; i++) {
            snprintf(name, sizeof name, "%s%s", roles[r], layers[i].name);
            bad = rt_ckpt_writer_add_tensor(w, name, RT_ST_F32, layers[i].ndim, layers[i].shape,
                                            bufs[r * NL + i], err) != RT_OK;
        }
    bad = bad || rt_ckpt_writer_set_meta_i64(w, "step", 4690, err) ||
          rt_ckpt_writer_set_meta_i64(w, "epoch", 5, err) ||
          rt_ckpt_writer_set_meta(w, "optimizer", "adam", err) || rt_ckpt_writer_save(w, path, err);
    rt_ckpt_writer_destroy(w);
    return bad ? -1 : 0;
}

static int load(const char *path, unsigned flags, float **bufs, rt_error *err)
{
    rt_ckpt_reader *r = NULL;
    char name[64];
    if (rt_ckpt_reader_open(path, flags, &r, err)) return -1;
    int bad = 0;
    for (int k = 0; k < 3 && !bad && !flags; k++)
        for (size_t i = 0; i < NL && !bad; i++) {
            snprintf(name, sizeof name, "%s%s", roles[k], layers[i].name);
            bad = rt_ckpt_reader_get(r, name, RT_ST_F32, layers[i].ndim, layers[i].shape,
                                     bufs[k * NL + i], numel(&layers[i]) * sizeof(float),
                                     err) != RT_OK;
        }
    rt_ckpt_reader_destroy(r);
    return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    int reps = argc > 2 ? atoi(argv[2]) : 9;
    if (reps < 1 || reps > 1000) reps = 9;
    char path[4096];
    snprintf(path, sizeof path, "%s/kiln-bench-%d.safetensors", dir, (int)getpid());
    float *bufs[3 * NL], *back[3 * NL];
    size_t params = 0, bytes = 0;
    unsigned seed = 1;
    for (size_t j = 0; j < 3 * NL; j++) {
        size_t n = numel(&layers[j % NL]);
        bufs[j] = malloc(n * sizeof(float));
        back[j] = malloc(n * sizeof(float));
        if (!bufs[j] || !back[j]) return 1;
        for (size_t k = 0; k < n; k++) bufs[j][k] = (float)(rand_r(&seed) % 2001 - 1000) * 1e-3f;
        params += j < NL ? n : 0;
        bytes += n * sizeof(float);
    }
    printf("params %zu\nstate_bytes %zu\n", params, bytes);
    rt_error err;
    double t_save[1000], t_load[1000], t_head[1000], t_crc[1000], t_xxh[1000];
    for (int i = 0; i < reps; i++) {
        unlink(path); /* each save makes a new file, as a run's checkpoints do */
        double t0 = now();
        if (save(path, bufs, &err)) goto fail;
        double t1 = now();
        if (load(path, 0, back, &err)) goto fail;
        double t2 = now();
        if (load(path, RT_CKPT_OPEN_HEADER_ONLY, back, &err)) goto fail;
        double t3 = now();
        uLong crc = crc32_z(0L, Z_NULL, 0);
        for (size_t j = 0; j < 3 * NL; j++)
            crc = crc32_z(crc, (const Bytef *)bufs[j], numel(&layers[j % NL]) * sizeof(float));
        double t4 = now();
        uint64_t x = 0;
        for (size_t j = 0; j < 3 * NL; j++)
            x ^= rtp_ckpt_xxh3(bufs[j], numel(&layers[j % NL]) * sizeof(float));
        double t5 = now();
        t_xxh[i] = t5 - t4 + (x == 1 ? 1e-12 : 0); /* keep x live */
        t_save[i] = t1 - t0;
        t_load[i] = t2 - t1;
        t_head[i] = t3 - t2;
        t_crc[i] = t4 - t3 + (crc == 1 ? 1e-12 : 0); /* keep crc live */
    }
    for (size_t j = 0; j < 3 * NL; j++)
        if (memcmp(bufs[j], back[j], numel(&layers[j % NL]) * sizeof(float)) != 0) {
            fprintf(stderr, "round trip mismatch in tensor %zu\n", j);
            return 1;
        }
    FILE *f = fopen(path, "rb");
    long size = 0;
    if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (f) fclose(f);
    printf("file_bytes %ld\n", size);
    printf("kiln_save_s %.6f\nkiln_load_s %.6f\nkiln_header_only_s %.6f\ncrc32_s %.6f\n"
           "xxh3_s %.6f\n",
           median(t_save, reps), median(t_load, reps), median(t_head, reps), median(t_crc, reps),
           median(t_xxh, reps));
    unlink(path);
    for (size_t j = 0; j < 3 * NL; j++) {
        free(bufs[j]);
        free(back[j]);
    }
    return 0;
fail:
    fprintf(stderr, "%s\n", err.msg);
    unlink(path);
    return 1;
}
