/* rt_dataset_prep.c - raw uint8 splits -> the rt_dataset the trainer reads. The bytes
 * stay bytes where they lie (IDX and CIFAR: the buffers they were read into, owned by
 * the splits; image folders: the mapped decode cache) and are normalised image by image
 * as they are read (rt_dataset_image_f32): a set costs a quarter of its size as floats.
 *
 * Order of work (each step on raw bytes, so it is exact and cheap):
 *   1. --val N makes the last N training images val (IDX, CIFAR; image folders pick
 *      theirs by seed as row lists);
 *   2. each split's checksum (FNV-1a 64 over pixels then labels, see rt_dataset.h);
 *   3. per-channel mean/std of the (remaining) training split, from a 256-bin
 *      histogram per channel: exact, one pass, no float accumulation error;
 *   4. reading an image maps each byte through a 256-entry float table per channel.
 * A constant channel (std 0) is divided by 1 instead, so it never yields NaN.
 */
#include "rt_data_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rtp_raw_split_deinit(rtp_raw_split *s)
{
    if (!s) return;
    free(s->pixels);
    free(s->labels);
    memset(s, 0, sizeof *s);
}

rt_status rtp_check_stop(const rtp_stop *stop, const char *what, rt_error *err)
{
    if (stop && stop->fn && stop->fn(stop->user))
        return RT_ERR(err, RT_EINTERRUPTED, "loading %s interrupted", what);
    return RT_OK;
}

uint64_t rtp_fnv1a64(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static size_t image_bytes(const rtp_raw_split *s)
{
    return (size_t)s->c * (size_t)s->h * (size_t)s->w;
}

/* The last n training images are val: checks n against train's size. */
static rt_status check_val(const rtp_raw_split *train, int n, rt_error *err)
{
    if (n < 0) return RT_ERR(err, RT_EINVAL, "--val %d: must be 0 or more", n);
    if (n > 0 && n >= train->n)
        return RT_ERR(err, RT_EINVAL,
                      "--val %d: the training split has only %d images; validation must "
                      "leave some for training ---> HINT: use --val below %d",
                      n, train->n, train->n);
    return RT_OK;
}

/* Per-channel mean/std of n images of C planes at px (image i at row index[i], or row
 * i when index is NULL). */
static void measure(const uint8_t *px, const uint32_t *index, int n, int C, size_t plane,
                    float mean[4], float std[4])
{
    for (int c = 0; c < C; c++) {
        /* Four interleaved histograms: consecutive equal bytes would otherwise
         * serialise on one counter (store-to-load forwarding). */
        uint64_t h4[4][256] = {{0}}, hist[256];
        for (int i = 0; i < n; i++) {
            size_t row = index ? index[i] : (size_t)i;
            const uint8_t *p = px + (row * (size_t)C + (size_t)c) * plane;
            size_t k = 0;
            for (; k + 4 <= plane; k += 4) {
                h4[0][p[k]]++;
                h4[1][p[k + 1]]++;
                h4[2][p[k + 2]]++;
                h4[3][p[k + 3]]++;
            }
            for (; k < plane; k++) h4[0][p[k]]++;
        }
        for (int v = 0; v < 256; v++) hist[v] = h4[0][v] + h4[1][v] + h4[2][v] + h4[3][v];
        double cnt = (double)n * (double)plane, sum = 0, sq = 0;
        for (int v = 0; v < 256; v++) {
            double x = v / 255.0;
            sum += (double)hist[v] * x;
            sq += (double)hist[v] * x * x;
        }
        double m = sum / cnt, var = sq / cnt - m * m;
        mean[c] = (float)m;
        std[c] = var > 1e-12 ? (float)sqrt(var) : 1.0f;
    }
}

rt_status rtp_dataset_prepare(rt_dataset_splits *out, rtp_raw_split *train, rtp_raw_split *test,
                              const rtp_prep *p, rt_error *err)
{
    rt_status st = RT_OK;
    if (train->c < 1 || train->c > 4)
        st = RT_ERR(err, RT_EFORMAT, "%s: %d channels (1 to 4 supported)", p->base, train->c);
    if (st == RT_OK && (test->c != train->c || test->h != train->h || test->w != train->w))
        st = RT_ERR(err, RT_EFORMAT, "%s: test images are %dx%dx%d but training images %dx%dx%d",
                    p->base, test->c, test->h, test->w, train->c, train->h, train->w);
    if (st == RT_OK) st = check_val(train, p->val, err);
    if (st == RT_OK) { /* val is the tail of train's bytes; nothing is copied */
        size_t img = image_bytes(train), keep = (size_t)(train->n - p->val);
        rtp_rows rows[3] = {
            {.pixels = train->pixels, .labels = train->labels, .n = (int)keep},
            {.pixels = train->pixels + keep * img, .labels = train->labels + keep, .n = p->val},
            {.pixels = test->pixels, .labels = test->labels, .n = test->n}};
        st = rtp_dataset_prepare_rows(out, rows, train->c, train->h, train->w, p, err);
        out->heap[0] = train->pixels, out->heap[1] = test->pixels; /* theirs now */
        train->pixels = test->pixels = NULL;
    }
    rtp_raw_split_deinit(train); /* the labels: prepare_rows copied them */
    rtp_raw_split_deinit(test);
    return st;
}

static void name_split(rt_dataset *d, const rtp_prep *p, const char *split)
{
    snprintf(d->name, sizeof d->name, "%s/%s", p->base, split);
    d->num_classes = p->num_classes;
    for (int c = 0; c < p->num_classes; c++)
        snprintf(d->class_names[c], sizeof d->class_names[c], "%s", p->class_names[c]);
}

rt_status rtp_dataset_prepare_rows(rt_dataset_splits *out, rtp_rows rows[3], int c, int h, int w,
                                   const rtp_prep *p, rt_error *err)
{
    rt_status st = RT_OK;
    if (c < 1 || c > 4)
        st = RT_ERR(err, RT_EFORMAT, "%s: %d channels (1 to 4 supported)", p->base, c);
    else if (p->num_classes < 1 || p->num_classes > RT_MAX_CLASSES)
        st = RT_ERR(err, RT_EFORMAT, "%s: %d classes (1 to %d supported)", p->base, p->num_classes,
                    RT_MAX_CLASSES);
    size_t plane = (size_t)h * (size_t)w, img = (size_t)c * plane;
    float mean[4] = {0}, std[4] = {1, 1, 1, 1};
    if (st == RT_OK) measure(rows[0].pixels, rows[0].index, rows[0].n, c, plane, mean, std);
    rt_dataset *sets[3] = {&out->train, &out->val, &out->test};
    const char *names[3] = {"train", "val", "test"};
    for (int k = 0; k < 3; k++) {
        rt_dataset *d = sets[k];
        const rtp_rows *r = &rows[k];
        name_split(d, p, names[k]);
        d->c = c, d->h = h, d->w = w;
        memcpy(d->mean, mean, sizeof d->mean);
        memcpy(d->std, std, sizeof d->std);
        d->pixels = r->pixels;
        d->index = r->index; /* taken */
        rows[k].index = NULL;
        if (st != RT_OK || r->n == 0) continue;
        if (!(d->labels = malloc((size_t)r->n))) {
            st = RT_ERR(err, RT_ENOMEM, "out of memory for the labels of %s", d->name);
            continue;
        }
        d->n = r->n;
        uint64_t h64 = RTP_FNV1A64_INIT; /* the bytes in the split's order, then labels */
        for (int i = 0; i < r->n; i++) {
            size_t row = d->index ? d->index[i] : (size_t)i;
            h64 = rtp_fnv1a64(h64, r->pixels + row * img, img);
            d->labels[i] = r->labels[row];
        }
        d->checksum = rtp_fnv1a64(h64, d->labels, (size_t)r->n);
    }
    return st;
}

void rt_dataset_norm_table(const rt_dataset *d, int c, float lut[256])
{
    for (int v = 0; v < 256; v++) lut[v] = ((float)v / 255.0f - d->mean[c]) / d->std[c];
}

void rt_dataset_image_f32(const rt_dataset *d, int i, float *out)
{
    size_t plane = (size_t)d->h * (size_t)d->w, img = (size_t)d->c * plane;
    if (d->images) {
        memcpy(out, d->images + (size_t)i * img, img * sizeof *out);
        return;
    }
    const uint8_t *src = d->pixels + (size_t)(d->index ? d->index[i] : (uint32_t)i) * img;
    for (int c = 0; c < d->c; c++) {
        float lut[256];
        rt_dataset_norm_table(d, c, lut);
        const uint8_t *s = src + (size_t)c * plane;
        float *o = out + (size_t)c * plane;
        for (size_t k = 0; k < plane; k++) o[k] = lut[s[k]];
    }
}

void rt_dataset_image_u8(const rt_dataset *d, int i, uint8_t *out)
{
    size_t plane = (size_t)d->h * (size_t)d->w;
    if (!d->images) {
        size_t img = (size_t)d->c * plane;
        memcpy(out, d->pixels + (size_t)(d->index ? d->index[i] : (uint32_t)i) * img, img);
        return;
    }
    const float *src = d->images + (size_t)i * (size_t)d->c * plane;
    for (int c = 0; c < d->c; c++) {
        for (size_t k = 0; k < plane; k++) {
            float v = (src[(size_t)c * plane + k] * d->std[c] + d->mean[c]) * 255.0f;
            long r = lroundf(v);
            out[(size_t)c * plane + k] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
        }
    }
}
