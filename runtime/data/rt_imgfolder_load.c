/* rt_imgfolder_load.c - an image folder -> rt_dataset_splits: scan, the cache or a
 * decode on every core, the validation split, then rtp_dataset_prepare_rows (checksums,
 * mean/std of train) on the bytes where they lie: the set is never copied.
 *
 * Decoding runs one OpenMP loop over the files (dynamic schedule: sizes differ); each
 * iteration reads a file (one read), decodes it (rt_image_decode.c: a JPEG of twice the
 * target size or more at a reduced scale, as Pillow's draft()), converts its channels
 * and fits it to H x W (rt_image_fit.c) straight into its slot of the new cache file,
 * mapped (rt_imgfolder_cache.c). A bad file is the error (the first in list order, so
 * the message does not depend on thread timing), or with --skip-bad is counted and
 * squeezed out. Only the calling thread polls should_stop; the others see the flag and
 * stop taking work. --val N|F picks the validation images with a seeded shuffle
 * (splitmix64 + Fisher-Yates) as lists of rows: the same seed and folder give the same
 * split in any kernel.
 */
#include "rt_image.h"
#include "rt_imgfolder_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#define DEFAULT_SIDE 64

/* One thread's buffers, kept from file to file: the file's bytes and the decoded image
 * (rt_image.h), so neither is allocated again once it is big enough (the resize's and
 * the PNG inflater's working memory still is, per file). */
typedef struct scratch {
    uint8_t *file;
    size_t cap;
    rtp_image im;
} scratch;

static void scratch_deinit(scratch *s)
{
    free(s->file);
    rtp_image_deinit(&s->im);
}

/* The whole file in one read: its size from fstat, into *buf (*cap bytes, grown). */
static rt_status read_file(const char *path, uint8_t **buf, size_t *cap, size_t *len, rt_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return RT_ERR(err, RT_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    rt_status s = RT_OK;
    uint8_t *b = NULL;
    size_t n = 0;
    if (fstat(fd, &st) != 0) s = RT_ERR(err, RT_EIO, "%s: %s", path, strerror(errno));
    else if (st.st_size > (1 << 30))
        s = RT_ERR(err, RT_EFORMAT, "%s: over 1 GiB, not an image to train on", path);
    else if (!rtp_buf_reserve(buf, cap, (size_t)st.st_size + 1))
        s = RT_ERR(err, RT_ENOMEM, "%s: out of memory reading it", path);
    else b = *buf;
    while (s == RT_OK && n < (size_t)st.st_size) { /* short reads: keep reading */
        ssize_t k = read(fd, b + n, (size_t)st.st_size - n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) s = RT_ERR(err, RT_EIO, "%s: read error: %s", path, strerror(errno));
        if (k <= 0) break; /* k == 0: it shrank while read; decode what there is */
        n += (size_t)k;
    }
    close(fd);
    *len = n;
    return s;
}

/* One file -> (C, H, W) bytes at out, with sc's buffers. */
static rt_status decode_one(const rtp_img_entry *e, int c, int h, int w, uint8_t *out, scratch *sc,
                            rt_error *err)
{
    const uint8_t *buf = e->mem;
    size_t len = e->mem_len;
    if (!buf) {
        RT_TRY(read_file(e->path, &sc->file, &sc->cap, &len, err));
        buf = sc->file;
    }
    rt_status st = rtp_image_decode(buf, len, e->path, RTP_IMAGE_MAX_PIXELS, w, h, &sc->im, err);
    if (st == RT_OK) st = rtp_image_channels(&sc->im, c, err);
    if (st == RT_OK) st = rtp_image_fit(&sc->im, h, w, out, err);
    return st;
}

rt_status rt_image_file_read(const char *path, int c, int h, int w, uint8_t *out, rt_error *err)
{
    if ((c != 1 && c != 3) || h < 1 || w < 1 || h > 4096 || w > 4096)
        return RT_ERR(err, RT_EINVAL, "%s: cannot read an image as %dx%dx%d", path, c, h, w);
    if (!rtp_is_file(path)) return RT_ERR(err, RT_ENOTFOUND, "%s: no such file", path);
    rtp_img_entry e = {.path = (char *)path};
    scratch sc = {0};
    rt_status st = decode_one(&e, c, h, w, out, &sc, err);
    scratch_deinit(&sc);
    return st;
}

/* The channel count when --channels is not given: the first file's. */
static rt_status first_channels(const rtp_img_list *l, int *c)
{
    scratch sc = {0};
    *c = 3; /* none decodes: the loop will say why */
    for (int i = 0; i < l->n; i++) {
        const uint8_t *buf = l->v[i].mem;
        size_t len = l->v[i].mem_len;
        if (!buf && read_file(l->v[i].path, &sc.file, &sc.cap, &len, NULL) != RT_OK) continue;
        if (!buf) buf = sc.file;
        /* (1 x 1 wanted: a JPEG at its smallest scale, only its channels count) */
        if (rtp_image_decode(buf, len, l->v[i].path, RTP_IMAGE_MAX_PIXELS, 1, 1, &sc.im, NULL) !=
            RT_OK)
            continue; /* the decode loop names it */
        *c = sc.im.c;
        break;
    }
    scratch_deinit(&sc);
    return RT_OK;
}

typedef struct decode_job {
    const rtp_img_list *l;
    int c, h, w, skip_bad;
    rtp_img_writer *out; /* slot[i] of split l->v[i].split gets file i */
    int *slot;           /* (N) */
    uint8_t *keep[3];    /* per split, per slot: 0 = skipped */
    rtp_stop stop;
} decode_job;

static rt_status decode_all(decode_job *j, rt_dataset_image_stats *stats, rt_error *err)
{
    int n = j->l->n, first = n; /* first failing index */
    rt_error first_err = {0};
    atomic_int stop = 0;
#pragma omp parallel
    {
        scratch sc = {0}; /* this thread's */
#pragma omp for schedule(dynamic, 4)
        for (int i = 0; i < n; i++) {
#ifdef _OPENMP
            int master = omp_get_thread_num() == 0;
#else
            int master = 1;
#endif
            if (master && j->stop.fn && j->stop.fn(j->stop.user)) atomic_store(&stop, 1);
            if (atomic_load(&stop)) continue;
            const rtp_img_entry *en = &j->l->v[i];
            *rtp_img_writer_label(j->out, en->split, j->slot[i]) = (uint8_t)en->label;
            rt_error e = {0};
            if (decode_one(en, j->c, j->h, j->w,
                           rtp_img_writer_pixels(j->out, en->split, j->slot[i]), &sc, &e) == RT_OK)
                continue;
            j->keep[en->split][j->slot[i]] = 0;
#pragma omp critical(rtp_imgfolder_first)
            if (i < first) {
                first = i;
                first_err = e;
            }
            if (!j->skip_bad || e.code == RT_ENOMEM || e.code == RT_ENOTFOUND)
                atomic_store(&stop, 1);
        }
        scratch_deinit(&sc);
    }
    stats->decoded = n;
    if (atomic_load(&stop) && first == n)
        return RT_ERR(err, RT_EINTERRUPTED, "decoding images interrupted");
    if (first == n) return RT_OK;
    if (atomic_load(&stop)) {
        if (err) *err = first_err;
        if (err && first_err.code == RT_EFORMAT && !j->skip_bad &&
            strlen(err->msg) + 60 < sizeof err->msg)
            strcat(err->msg, strstr(err->msg, "HINT:") ? " (or pass --skip-bad)"
                                                       : " ---> HINT: fix or remove it, or "
                                                         "pass --skip-bad");
        return first_err.code;
    }
    for (int i = 0; i < n; i++) stats->skipped += !j->keep[j->l->v[i].split][j->slot[i]];
    rtp_copy_str(stats->first_bad, sizeof stats->first_bad, first_err.msg);
    return RT_OK;
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* nval seeded-random rows of the n training rows go to val: train and val each list
 * their rows in order (the set's bytes are not moved). */
static rt_status pick_val(int n, int nval, uint64_t seed, rtp_rows *train, rtp_rows *val,
                          rt_error *err)
{
    uint32_t *perm = malloc((size_t)n * sizeof *perm);
    uint8_t *is_val = calloc((size_t)n, 1);
    train->index = malloc((size_t)(n - nval) * sizeof *train->index + 1);
    val->index = malloc((size_t)nval * sizeof *val->index + 1);
    rt_status st = RT_OK;
    if (!perm || !is_val || !train->index || !val->index) {
        st = RT_ERR(err, RT_ENOMEM, "out of memory choosing %d validation images", nval);
    } else {
        uint64_t s = seed ^ 0x6b696c6e2d76616cULL; /* "kiln-val" */
        for (int i = 0; i < n; i++) perm[i] = (uint32_t)i;
        for (int i = n - 1; i > 0; i--) {
            int k = (int)(splitmix64(&s) % (uint64_t)(i + 1));
            uint32_t x = perm[i];
            perm[i] = perm[k];
            perm[k] = x;
        }
        for (int i = 0; i < nval; i++) is_val[perm[i]] = 1;
        int a = 0, b = 0;
        for (int i = 0; i < n; i++) {
            if (is_val[i]) val->index[b++] = (uint32_t)i;
            else train->index[a++] = (uint32_t)i;
        }
        train->n = a;
        val->n = b;
    }
    free(perm);
    free(is_val);
    if (st != RT_OK) {
        free(train->index), free(val->index);
        train->index = val->index = NULL;
    }
    return st;
}

/* The decoded set of l: the cache file mapped when it is there, else every file decoded
 * into a new one (anonymous memory when none can be written, with a warning). */
static rt_status decode_or_cache(const rtp_img_list *l, const rt_dataset_opts *o, int h, int w,
                                 rtp_img_map *m, rt_dataset_image_stats *stats, rt_error *err)
{
    int ch = o->channels;
    uint64_t opt[4] = {(uint64_t)h, (uint64_t)w, (uint64_t)ch, (uint64_t)(o->skip_bad != 0)};
    uint64_t key = rtp_fnv1a64(l->key, (const uint8_t *)opt, sizeof opt);
    char path[PATH_MAX];
    rt_error cache_err = {0};
    int have_path = rtp_img_cache_path(key, path, &cache_err) == RT_OK;
    if (have_path && rtp_img_cache_map(path, key, m)) {
        stats->skipped = m->skipped;
        return RT_OK;
    }
    if (ch == 0) RT_TRY(first_channels(l, &ch));
    int cap[3] = {0, 0, 0};
    decode_job j = {.l = l,
                    .c = ch,
                    .h = h,
                    .w = w,
                    .skip_bad = o->skip_bad,
                    .slot = malloc((size_t)l->n * sizeof *j.slot + 1),
                    .stop = {o->should_stop, o->user}};
    rtp_img_writer wr = {.fd = -1};
    rt_status st = j.slot ? RT_OK : RT_ERR(err, RT_ENOMEM, "out of memory listing %d images", l->n);
    for (int i = 0; st == RT_OK && i < l->n; i++) j.slot[i] = cap[l->v[i].split]++;
    for (int s = 0; st == RT_OK && s < 3; s++)
        if ((j.keep[s] = malloc((size_t)cap[s] + 1))) memset(j.keep[s], 1, (size_t)cap[s]);
        else st = RT_ERR(err, RT_ENOMEM, "out of memory listing %d images", l->n);
    rt_status ws = RT_EIO;
    if (st == RT_OK && have_path)
        ws = rtp_img_writer_open(&wr, path, key, ch, h, w, cap, &cache_err);
    if (st == RT_OK && ws != RT_OK) { /* no cache file: this load in anonymous memory */
        have_path = 0;
        st = rtp_img_writer_open(&wr, NULL, key, ch, h, w, cap, err);
    }
    j.out = &wr;
    if (st == RT_OK) st = decode_all(&j, stats, err);
    const uint8_t *keep[3] = {j.keep[0], j.keep[1], j.keep[2]};
    rt_status fs =
        st == RT_OK ? rtp_img_writer_finish(&wr, keep, stats->skipped, m, &cache_err) : RT_OK;
    if (st != RT_OK) rtp_img_writer_abort(&wr);
    free(j.slot);
    for (int s = 0; s < 3; s++) free(j.keep[s]);
    if (st == RT_OK && !m->map) st = fs; /* out of memory squeezing: nothing to use */
    if (st == RT_OK && m->n[0] < 2)
        st = RT_ERR(err, RT_EFORMAT,
                    "only %d good training image(s) left after skipping %d "
                    "bad files (the first: %s)",
                    m->n[0], stats->skipped, stats->first_bad);
    if (st != RT_OK) {
        rtp_img_map_release(m);
        return st;
    }
    if (!have_path || fs != RT_OK) /* not fatal */
        fprintf(stderr, "kiln: image cache not written: %s\n", cache_err.msg);
    return RT_OK;
}

rt_status rtp_imgfolder_load(rt_dataset_splits *out, const rt_dataset_opts *o, const char *base,
                             rt_error *err)
{
    int h = o->image_h > 0 ? o->image_h : DEFAULT_SIDE, w = o->image_w > 0 ? o->image_w : h;
    if (h > 4096 || w > 4096)
        return RT_ERR(err, RT_EINVAL, "--size %dx%d: at most 4096 a side", h, w);
    if (o->channels != 0 && o->channels != 1 && o->channels != 3)
        return RT_ERR(err, RT_EINVAL, "--channels %d: 1 (grey) or 3 (RGB)", o->channels);
    if (o->val_fraction < 0 || o->val_fraction >= 1)
        return RT_ERR(err, RT_EINVAL, "--val %g: a fraction must be in (0, 1)", o->val_fraction);
    rtp_img_list l;
    RT_TRY(rtp_img_scan(o->name, &l, err));
    rt_dataset_image_stats stats = {.layout = l.layout,
                                    .folder_key = rtp_img_folder_key(o->name, &l)};
    rtp_img_map m = {0};
    rt_status st = decode_or_cache(&l, o, h, w, &m, &stats, err);
    rtp_rows rows[3] = {{0}};
    for (int s = 0; st == RT_OK && s < 3; s++)
        rows[s] = (rtp_rows){.pixels = m.pixels[s], .labels = m.labels[s], .n = m.n[s]};
    if (st == RT_OK && m.n[1] > 0) { /* val/ folders */
        if (o->val > 0 || o->val_fraction > 0)
            st = RT_ERR(err, RT_EINVAL,
                        "%s has its own validation folder (%d images); "
                        "--val would split train again ---> HINT: drop --val",
                        o->name, m.n[1]);
    } else if (st == RT_OK && (o->val > 0 || o->val_fraction > 0)) {
        int nval = o->val_fraction > 0 ? (int)lround(o->val_fraction * m.n[0]) : o->val;
        if (nval < 1 || nval >= m.n[0])
            st = RT_ERR(err, RT_EINVAL,
                        "--val: %d of %d training images would go to "
                        "validation; leave at least one on each side",
                        nval, m.n[0]);
        else st = pick_val(m.n[0], nval, o->seed, &rows[0], &rows[1], err);
        rows[1].pixels = rows[0].pixels, rows[1].labels = rows[0].labels;
    }
    const char *names[RT_MAX_CLASSES];
    for (int k = 0; k < l.num_classes; k++) names[k] = l.names[k];
    if (st == RT_OK) {
        rtp_prep p = {.base = base, .num_classes = l.num_classes, .class_names = names};
        st = rtp_dataset_prepare_rows(out, rows, m.c, m.h, m.w, &p, err);
        out->map = m.map, out->map_len = m.len; /* the splits read it: theirs now */
        m.map = NULL;
    }
    for (int s = 0; s < 3; s++) free(rows[s].index);
    rtp_img_map_release(&m);
    rtp_img_list_deinit(&l);
    if (st == RT_OK) out->images = stats;
    return st;
}
