/* rt_imgfolder_load.c - an image folder -> rt_dataset_splits: scan, the cache or a
 * decode on every core, the validation split, then rtp_dataset_prepare (checksums,
 * mean/std of train, normalisation) like every other format.
 *
 * Decoding runs one OpenMP loop over the files (dynamic schedule: sizes differ); each
 * iteration reads a file, decodes it (rt_image_decode.c: a JPEG of twice the target
 * size or more at a reduced scale, as Pillow's draft()), converts its channels and
 * fits it to H x W (rt_image_fit.c) straight into its slot of one (N, C, H, W) byte
 * buffer. A bad file is the error (the first in list order, so the message does not
 * depend on thread timing), or with --skip-bad is counted and left out. Only the
 * calling thread polls should_stop; the others see the flag and stop taking work.
 * --val N|F picks the validation images with a seeded shuffle (splitmix64 +
 * Fisher-Yates): the same seed and folder give the same split in any kernel.
 */
#include "rt_image.h"
#include "rt_imgfolder_internal.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#define DEFAULT_SIDE 64

static rt_status read_file(const char *path, uint8_t **buf, size_t *len, rt_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return RT_ERR(err, RT_EIO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    while (b) {
        n += fread(b + n, 1, cap - n, f);
        if (n < cap) break;
        uint8_t *nb = cap < (1u << 30) ? realloc(b, cap * 2) : NULL;
        if (!nb) {
            free(b);
            b = NULL;
            break;
        }
        b = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!b) return RT_ERR(err, RT_ENOMEM, "%s: out of memory reading it (or over 1 GiB)", path);
    if (bad) {
        free(b);
        return RT_ERR(err, RT_EIO, "%s: read error", path);
    }
    *buf = b;
    *len = n;
    return RT_OK;
}

/* One file -> (C, H, W) bytes at out. */
static rt_status decode_one(const rtp_img_entry *e, int c, int h, int w, uint8_t *out,
                            rt_error *err)
{
    uint8_t *buf = e->mem;
    size_t len = e->mem_len;
    if (!buf) RT_TRY(read_file(e->path, &buf, &len, err));
    rtp_image im;
    rt_status st = rtp_image_decode(buf, len, e->path, RTP_IMAGE_MAX_PIXELS, w, h, &im, err);
    if (buf != e->mem) free(buf);
    if (st == RT_OK) st = rtp_image_channels(&im, c, err);
    if (st == RT_OK) st = rtp_image_fit(&im, h, w, out, err);
    rtp_image_deinit(&im);
    return st;
}

rt_status rt_image_file_read(const char *path, int c, int h, int w, uint8_t *out, rt_error *err)
{
    if ((c != 1 && c != 3) || h < 1 || w < 1 || h > 4096 || w > 4096)
        return RT_ERR(err, RT_EINVAL, "%s: cannot read an image as %dx%dx%d", path, c, h, w);
    if (!rtp_is_file(path)) return RT_ERR(err, RT_ENOTFOUND, "%s: no such file", path);
    rtp_img_entry e = {.path = (char *)path};
    return decode_one(&e, c, h, w, out, err);
}

/* The channel count when --channels is not given: the first file's. */
static rt_status first_channels(const rtp_img_list *l, int *c)
{
    for (int i = 0; i < l->n; i++) {
        uint8_t *buf = l->v[i].mem;
        size_t len = l->v[i].mem_len;
        if (!buf && read_file(l->v[i].path, &buf, &len, NULL) != RT_OK) continue;
        rtp_image im;
        rt_status st =
            rtp_image_decode(buf, len, l->v[i].path, RTP_IMAGE_MAX_PIXELS, 1, 1, &im, NULL);
        /* (1 x 1 wanted: a JPEG at its smallest scale, only its channels count) */
        if (buf != l->v[i].mem) free(buf);
        if (st != RT_OK) continue; /* the decode loop names it */
        *c = im.c;
        rtp_image_deinit(&im);
        return RT_OK;
    }
    *c = 3; /* none decodes: the loop will say why */
    return RT_OK;
}

typedef struct decode_job {
    const rtp_img_list *l;
    int c, h, w, skip_bad;
    uint8_t *pixels; /* (N, C, H, W) for every listed file */
    uint8_t *bad;    /* (N) 1 = skipped */
    rtp_stop stop;
} decode_job;

static rt_status decode_all(decode_job *j, rt_dataset_image_stats *stats, rt_error *err)
{
    size_t img = (size_t)j->c * (size_t)j->h * (size_t)j->w;
    int n = j->l->n, first = n; /* first failing index */
    rt_error first_err = {0};
    atomic_int stop = 0;
#pragma omp parallel for schedule(dynamic, 4)
    for (int i = 0; i < n; i++) {
#ifdef _OPENMP
        int master = omp_get_thread_num() == 0;
#else
        int master = 1;
#endif
        if (master && j->stop.fn && j->stop.fn(j->stop.user)) atomic_store(&stop, 1);
        if (atomic_load(&stop)) continue;
        rt_error e = {0};
        if (decode_one(&j->l->v[i], j->c, j->h, j->w, j->pixels + (size_t)i * img, &e) == RT_OK)
            continue;
        j->bad[i] = 1;
#pragma omp critical(rtp_imgfolder_first)
        if (i < first) {
            first = i;
            first_err = e;
        }
        if (!j->skip_bad || e.code == RT_ENOMEM || e.code == RT_ENOTFOUND) atomic_store(&stop, 1);
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
    for (int i = 0; i < n; i++) stats->skipped += j->bad[i];
    rtp_copy_str(stats->first_bad, sizeof stats->first_bad, first_err.msg);
    return RT_OK;
}

/* Gathers the good images of split s into r. */
static rt_status gather(const decode_job *j, int s, rtp_raw_split *r, rt_error *err)
{
    size_t img = (size_t)j->c * (size_t)j->h * (size_t)j->w;
    int k = 0;
    for (int i = 0; i < j->l->n; i++) k += j->l->v[i].split == s && !j->bad[i];
    *r = (rtp_raw_split){.n = k, .c = j->c, .h = j->h, .w = j->w};
    r->pixels = malloc((size_t)k * img + 1);
    r->labels = malloc((size_t)k + 1);
    if (!r->pixels || !r->labels) {
        rtp_raw_split_deinit(r);
        return RT_ERR(err, RT_ENOMEM, "out of memory gathering %d images", k);
    }
    k = 0;
    for (int i = 0; i < j->l->n; i++)
        if (j->l->v[i].split == s && !j->bad[i]) {
            memcpy(r->pixels + (size_t)k * img, j->pixels + (size_t)i * img, img);
            r->labels[k++] = (uint8_t)j->l->v[i].label;
        }
    return RT_OK;
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Moves nval seeded-random images of train to its end (train keeps its order, the
 * moved ones keep theirs). */
static rt_status move_val_to_end(rtp_raw_split *t, int nval, uint64_t seed, rt_error *err)
{
    size_t img = (size_t)t->c * (size_t)t->h * (size_t)t->w;
    int n = t->n;
    int *perm = malloc((size_t)n * sizeof *perm);
    uint8_t *is_val = calloc((size_t)n, 1), *px = malloc((size_t)n * img + 1),
            *lb = malloc((size_t)n + 1);
    rt_status st = RT_OK;
    if (!perm || !is_val || !px || !lb) {
        st = RT_ERR(err, RT_ENOMEM, "out of memory choosing %d validation images", nval);
        goto done;
    }
    uint64_t s = seed ^ 0x6b696c6e2d76616cULL; /* "kiln-val" */
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int k = (int)(splitmix64(&s) % (uint64_t)(i + 1)), x = perm[i];
        perm[i] = perm[k];
        perm[k] = x;
    }
    for (int i = 0; i < nval; i++) is_val[perm[i]] = 1;
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++)
            if (is_val[i] == pass) {
                memcpy(px + (size_t)k * img, t->pixels + (size_t)i * img, img);
                lb[k++] = t->labels[i];
            }
    free(t->pixels);
    free(t->labels);
    t->pixels = px;
    t->labels = lb;
    px = lb = NULL;
done:
    free(perm);
    free(is_val);
    free(px);
    free(lb);
    return st;
}

/* Appends src's images to dst (same C, H, W); frees src. */
static rt_status append(rtp_raw_split *dst, rtp_raw_split *src, rt_error *err)
{
    size_t img = (size_t)dst->c * (size_t)dst->h * (size_t)dst->w;
    size_t n = (size_t)dst->n + (size_t)src->n;
    uint8_t *px = realloc(dst->pixels, n * img + 1), *lb = px ? realloc(dst->labels, n + 1) : NULL;
    if (px) dst->pixels = px;
    if (lb) dst->labels = lb;
    if (!px || !lb) {
        rtp_raw_split_deinit(src);
        return RT_ERR(err, RT_ENOMEM, "out of memory joining the validation images");
    }
    memcpy(dst->pixels + (size_t)dst->n * img, src->pixels, (size_t)src->n * img);
    memcpy(dst->labels + dst->n, src->labels, (size_t)src->n);
    dst->n = (int)n;
    rtp_raw_split_deinit(src);
    return RT_OK;
}

static rt_status decode_or_cache(const rtp_img_list *l, const rt_dataset_opts *o, int h, int w,
                                 rtp_img_cached *c, rt_dataset_image_stats *stats, rt_error *err)
{
    int ch = o->channels;
    uint64_t opt[4] = {(uint64_t)h, (uint64_t)w, (uint64_t)ch, (uint64_t)(o->skip_bad != 0)};
    uint64_t key = rtp_fnv1a64(l->key, (const uint8_t *)opt, sizeof opt);
    char path[PATH_MAX];
    rt_error cache_err = {0};
    int have_path = rtp_img_cache_path(key, path, &cache_err) == RT_OK;
    if (have_path && rtp_img_cache_read(path, key, c)) {
        stats->skipped = c->skipped;
        return RT_OK;
    }
    if (ch == 0) RT_TRY(first_channels(l, &ch));
    size_t img = (size_t)ch * (size_t)h * (size_t)w;
    decode_job j = {.l = l,
                    .c = ch,
                    .h = h,
                    .w = w,
                    .skip_bad = o->skip_bad,
                    .pixels = malloc((size_t)l->n * img + 1),
                    .bad = calloc((size_t)l->n + 1, 1),
                    .stop = {o->should_stop, o->user}};
    rt_status st = j.pixels && j.bad ? RT_OK
                                     : RT_ERR(err, RT_ENOMEM,
                                              "out of memory for %d images of "
                                              "%zu bytes",
                                              l->n, img);
    if (st == RT_OK) st = decode_all(&j, stats, err);
    for (int s = 0; s < 3 && st == RT_OK; s++) st = gather(&j, s, &c->split[s], err);
    free(j.pixels);
    free(j.bad);
    if (st == RT_OK && c->split[0].n < 2)
        st = RT_ERR(err, RT_EFORMAT,
                    "only %d good training image(s) left after skipping %d "
                    "bad files (the first: %s)",
                    c->split[0].n, stats->skipped, stats->first_bad);
    if (st != RT_OK) {
        for (int s = 0; s < 3; s++) rtp_raw_split_deinit(&c->split[s]);
        return st;
    }
    c->skipped = stats->skipped;
    rt_error we = {0};
    if (!have_path || rtp_img_cache_write(path, key, c, &we) != RT_OK) /* not fatal */
        fprintf(stderr, "kiln: image cache not written: %s\n", have_path ? we.msg : cache_err.msg);
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
    rt_dataset_image_stats stats = {.layout = l.layout};
    rtp_img_cached c = {0};
    rt_status st = decode_or_cache(&l, o, h, w, &c, &stats, err);
    int nval = 0;
    if (st == RT_OK && c.split[1].n > 0) { /* val/ folders */
        if (o->val > 0 || o->val_fraction > 0)
            st = RT_ERR(err, RT_EINVAL,
                        "%s has its own validation folder (%d images); "
                        "--val would split train again ---> HINT: drop --val",
                        o->name, c.split[1].n);
        nval = c.split[1].n;
        if (st == RT_OK) st = append(&c.split[0], &c.split[1], err);
    } else if (st == RT_OK && (o->val > 0 || o->val_fraction > 0)) {
        nval = o->val_fraction > 0 ? (int)lround(o->val_fraction * c.split[0].n) : o->val;
        if (nval < 1 || nval >= c.split[0].n)
            st = RT_ERR(err, RT_EINVAL,
                        "--val: %d of %d training images would go to "
                        "validation; leave at least one on each side",
                        nval, c.split[0].n);
        else st = move_val_to_end(&c.split[0], nval, o->seed, err);
    }
    const char *names[RT_MAX_CLASSES];
    for (int k = 0; k < l.num_classes; k++) names[k] = l.names[k];
    if (st == RT_OK) {
        rtp_prep p = {
            .base = base, .val = nval, .num_classes = l.num_classes, .class_names = names};
        st = rtp_dataset_prepare(out, &c.split[0], &c.split[2], &p, err);
    }
    for (int s = 0; s < 3; s++) rtp_raw_split_deinit(&c.split[s]);
    rtp_img_list_deinit(&l);
    if (st == RT_OK) out->images = stats;
    return st;
}
