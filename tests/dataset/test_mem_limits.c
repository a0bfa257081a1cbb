/* test_mem_limits.c - data set files that claim more than the memory there is: a few
 * MB of gzip whose IDX header claims 2990.7 MiB of images, a CIFAR tar.gz whose
 * member claims 293.1 MiB, and a small image-folder tar.gz of two 200 MiB "images"
 * (an archive bomb: each member fits, their total does not). Loaded in a child under a memory limit, each is refused up
 * front with RT_ENOMEM naming the file and both sizes, before anything is allocated
 * or read (not a truncation found after reading, nor an OOM kill).
 *   test_mem_limits ulimit   under `ulimit -v` (always possible)
 *   test_mem_limits cgroup   in a small memory cgroup under this process's own (v2 or
 *                            v1); exit 77 (skip, reason printed) where none can be made
 */
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "mem_limit.h"
#include "rt_dataset.h"

static char dir[256];

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* name.gz: an IDX header claiming dims, then real bytes of zeros */
static int write_idx(const char *name, uint32_t magic, const uint32_t *dims, int nd, size_t real)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.gz", dir, name);
    gzFile g = gzopen(path, "wb");
    if (!g) return -1;
    uint8_t head[16];
    put32(head, magic);
    for (int i = 0; i < nd; i++) put32(head + 4 + 4 * i, dims[i]);
    gzwrite(g, head, (unsigned)(4 + 4 * nd));
    static uint8_t zeros[1 << 20];
    for (size_t done = 0; done < real; done += sizeof zeros)
        gzwrite(g, zeros, (unsigned)(real - done < sizeof zeros ? real - done : sizeof zeros));
    return gzclose(g) == Z_OK ? 0 : -1;
}

/* 4,000,000 28x28 training images claimed, 8 MB of them there; the rest consistent */
static int write_idx_set(void)
{
    uint32_t img[3] = {4000000, 28, 28}, lab[1] = {4000000}, timg[3] = {1, 28, 28}, tlab[1] = {1};
    return write_idx("train-images-idx3-ubyte", 0x803, img, 3, 8u << 20) ||
           write_idx("train-labels-idx1-ubyte", 0x801, lab, 1, 4000000) ||
           write_idx("t10k-images-idx3-ubyte", 0x803, timg, 3, 784) ||
           write_idx("t10k-labels-idx1-ubyte", 0x801, tlab, 1, 1);
}

/* a ustar header for a member of size bytes */
static void tar_header(uint8_t h[512], const char *name, unsigned long long size)
{
    memset(h, 0, 512);
    snprintf((char *)h, 100, "%s", name);
    memcpy(h + 100, "0000644", 7);
    memcpy(h + 108, "0000000", 7);
    memcpy(h + 116, "0000000", 7);
    snprintf((char *)h + 124, 12, "%011llo", size);
    memcpy(h + 136, "00000000000", 11);
    h[156] = '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
}

/* an image-folder tar.gz: two classes, a 200 MiB member of zeros in each (fast gzip) */
static int write_bomb_tar(const char *path)
{
    gzFile g = gzopen(path, "wb1");
    if (!g) return -1;
    static uint8_t zeros[1 << 20];
    static const char *const names[] = {"photos/cat/1.png", "photos/dog/2.png"};
    for (int m = 0; m < 2; m++) {
        uint8_t h[512];
        tar_header(h, names[m], 200ULL << 20);
        gzwrite(g, h, sizeof h);
        for (int i = 0; i < 200; i++) gzwrite(g, zeros, sizeof zeros);
    }
    gzwrite(g, zeros, 1024); /* the end of the archive */
    return gzclose(g) == Z_OK ? 0 : -1;
}

/* a one-member tar.gz whose member claims 100,000 CIFAR records; 1 MB of it there */
static int write_cifar_tar(const char *path)
{
    uint8_t h[512];
    tar_header(h, "cifar-10-batches-bin/data_batch_1.bin", 3073ULL * 100000);
    gzFile g = gzopen(path, "wb");
    if (!g) return -1;
    gzwrite(g, h, sizeof h);
    static uint8_t zeros[1 << 20];
    gzwrite(g, zeros, sizeof zeros);
    return gzclose(g) == Z_OK ? 0 : -1;
}

/* in the child: the load is refused up front with a message naming file and sizes */
typedef struct expect {
    const char *name;    /* what to load */
    const char *file;    /* the file the message names */
    const char *claimed; /* "2990.7 MiB" */
} expect;

static int refused_up_front(void *arg)
{
    const expect *x = arg;
    rt_dataset_opts o = {.name = x->name};
    rt_dataset_splits s;
    rt_error e = {0};
    rt_status st = rt_dataset_load(&s, &o, &e);
    int ok = st == RT_ENOMEM && strstr(e.msg, x->file) &&
             strstr(e.msg, "refused before allocating") && strstr(e.msg, x->claimed);
    if (!ok) fprintf(stderr, "  %s: got %d: %s\n", x->name, (int)st, e.msg);
    if (st == RT_OK) rt_dataset_splits_deinit(&s);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    ml_kind kind = argc > 1 && !strcmp(argv[1], "cgroup") ? ML_CGROUP : ML_ULIMIT;
    const char *how = kind == ML_CGROUP ? "a 256 MiB memory cgroup" : "ulimit -v +256 MiB";
    snprintf(dir, sizeof dir, "/tmp/kiln-memlim-XXXXXX");
    if (!mkdtemp(dir) || write_idx_set() < 0) {
        fprintf(stderr, "cannot write the test files under /tmp\n");
        return 1;
    }
    char img[600], tgz[600], bomb[600];
    snprintf(img, sizeof img, "%s/train-images-idx3-ubyte.gz", dir);
    snprintf(tgz, sizeof tgz, "%s/cifar-10-binary.tar.gz", dir);
    snprintf(bomb, sizeof bomb, "%s/bomb.tar.gz", dir);
    if (write_cifar_tar(tgz) < 0 || write_bomb_tar(bomb) < 0) return 1;
    expect idx = {dir, img, "2990.7 MiB"}, cifar = {tgz, "data_batch_1.bin", "293.1 MiB"};
    expect arch = {bomb, bomb, "hold 400.0 MiB"};
    int failed = 0, skipped = 0;
    const expect *cases[] = {&idx, &cifar, &arch};
    static const char *const names[] = {"idx_header_claim", "cifar_member_claim",
                                        "archive_members_total"};
    for (int i = 0; i < 3; i++) {
        int rc = ml_run(kind, 256u << 20, refused_up_front, (void *)cases[i]);
        printf("%s %s under %s\n", rc == 0 ? "ok  " : rc == 77 ? "skip" : "FAIL", names[i], how);
        failed += rc == 1;
        skipped += rc == 77;
    }
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return failed ? 1 : skipped ? 77 : 0;
}
