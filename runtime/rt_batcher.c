/* rt_batcher.c - shuffled, augmented mini-batches; see rt_batcher.h for the contract.
 *
 * Invariants: order[] holds the permutation of order_epoch (recomputed lazily when the
 * epoch changes, O(n) once an epoch); 0 <= position <= epoch_len. Copies are plain
 * memcpy per image (no augmentation) or per row (crop/flip), in parallel over the batch
 * when the batch is big enough to pay for threads.
 */
#include "rt_batcher.h"

#include <stdlib.h>
#include <string.h>

#include "rt_rng.h"

/* Floats per batch below which one thread copies: a batch copy is memory-bound and
 * short (a fraction of a millisecond for 128 CIFAR images on one core), so threads
 * rarely pay off and cost a lot when the cores are busy (an OpenMP team waiting on a
 * descheduled thread). */
#define PAR_MIN_FLOATS (1u << 21)

struct rt_batcher {
    rt_batcher_data data;
    rt_batcher_config cfg;
    int64_t epoch, position, epoch_len; /* epoch_len: samples handed out per epoch */
    int64_t order_epoch;                /* epoch whose permutation is in order, -1 none */
    uint32_t *order;                    /* (n) */
    float *scratch; /* (batch, C, H, W): images read from data.set before augmenting */
};

rt_batcher_config rt_batcher_config_default(int batch_size, uint64_t seed)
{
    rt_batcher_config c;
    memset(&c, 0, sizeof c);
    c.batch_size = batch_size;
    c.shuffle = 1;
    c.crop_pad = 4;
    c.flip_p = 0.5f;
    c.seed = seed;
    return c;
}

rt_batcher_data rt_batcher_data_of(const rt_dataset *d)
{
    rt_batcher_data v = {d->images, d->labels, d->n, d->c, d->h, d->w, d};
    return v;
}

rt_status rt_batcher_create(rt_batcher **out, const rt_batcher_data *data,
                            const rt_batcher_config *cfg, rt_error *err)
{
    *out = NULL;
    if (data->n <= 0 || (!data->images && !data->set) || !data->labels)
        return RT_ERR(err, RT_EINVAL, "the data set is empty; ---> HINT: load one with %%dataset");
    if (data->c <= 0 || data->h <= 0 || data->w <= 0)
        return RT_ERR(err, RT_EINVAL, "bad image shape %dx%dx%d", data->c, data->h, data->w);
    if (cfg->batch_size <= 0)
        return RT_ERR(err, RT_EINVAL, "batch size must be positive, got %d", cfg->batch_size);
    if (cfg->drop_last && cfg->batch_size > data->n)
        return RT_ERR(err, RT_EINVAL,
                      "batch size %d is larger than the data set (%d images) and drop_last "
                      "leaves no batch; ---> HINT: use a smaller --batch",
                      cfg->batch_size, data->n);
    if (cfg->augment) {
        if (data->c > 4)
            return RT_ERR(err, RT_EINVAL, "augmentation supports up to 4 channels, got %d",
                          data->c);
        if (cfg->crop_pad < 0 || cfg->crop_pad > data->h || cfg->crop_pad > data->w)
            return RT_ERR(err, RT_EINVAL, "crop padding %d must be in [0, %d]", cfg->crop_pad,
                          data->h < data->w ? data->h : data->w);
        if (cfg->cutout < 0 || (cfg->cutout > data->h && cfg->cutout > data->w))
            return RT_ERR(err, RT_EINVAL, "cutout size %d must be in [0, %d]", cfg->cutout,
                          data->h > data->w ? data->h : data->w);
        if (!(cfg->flip_p >= 0.0f && cfg->flip_p <= 1.0f))
            return RT_ERR(err, RT_EINVAL, "flip probability %g must be in [0, 1]",
                          (double)cfg->flip_p);
    }
    rt_batcher *b = calloc(1, sizeof *b);
    uint32_t *order = malloc((size_t)data->n * sizeof *order);
    size_t img = (size_t)data->c * (size_t)data->h * (size_t)data->w;
    float *scratch = !data->images && cfg->augment
                         ? malloc((size_t)cfg->batch_size * img * sizeof *scratch)
                         : NULL;
    if (!b || !order || (!data->images && cfg->augment && !scratch)) {
        free(b);
        free(order);
        free(scratch);
        return RT_ERR(err, RT_ENOMEM, "out of memory for the data order of %d images", data->n);
    }
    b->data = *data;
    b->cfg = *cfg;
    b->order = order;
    b->scratch = scratch;
    b->order_epoch = -1;
    int64_t n = data->n, bs = cfg->batch_size;
    b->epoch_len = cfg->drop_last ? n / bs * bs : n;
    *out = b;
    return RT_OK;
}

void rt_batcher_destroy(rt_batcher *b)
{
    if (!b) return;
    free(b->order);
    free(b->scratch);
    free(b);
}

int64_t rt_batcher_steps_per_epoch(const rt_batcher *b)
{
    int64_t bs = b->cfg.batch_size;
    return (b->epoch_len + bs - 1) / bs;
}

int rt_batcher_epoch_done(const rt_batcher *b) { return b->position >= b->epoch_len; }

rt_batcher_state rt_batcher_get_state(const rt_batcher *b)
{
    rt_batcher_state s = {b->epoch, b->position};
    return s;
}

rt_status rt_batcher_set_state(rt_batcher *b, rt_batcher_state s, rt_error *err)
{
    if (s.epoch < 0 || s.epoch > UINT32_MAX || s.position < 0 || s.position > b->epoch_len)
        return RT_ERR(err, RT_EINVAL,
                      "data-loader state epoch %lld position %lld is out of range for a data "
                      "set of %d images (epoch length %lld)",
                      (long long)s.epoch, (long long)s.position, b->data.n,
                      (long long)b->epoch_len);
    b->epoch = s.epoch;
    b->position = s.position;
    return RT_OK;
}

static void ensure_order(rt_batcher *b)
{
    if (b->order_epoch == b->epoch) return;
    if (b->cfg.shuffle) {
        rt_rng r = rt_rng_stream(b->cfg.seed, RT_RNG_SHUFFLE, (uint32_t)b->epoch, 0);
        rt_rng_permutation(&r, b->order, (size_t)b->data.n);
    } else {
        for (int i = 0; i < b->data.n; i++) b->order[i] = (uint32_t)i;
    }
    b->order_epoch = b->epoch;
}

static inline void fill(float *p, int n, float v)
{
    for (int i = 0; i < n; i++) p[i] = v;
}

void rt_batcher_crop_flip(float *dst, const float *src, int c, int h, int w, int pad, int top,
                          int left, int flip, const float *pad_value)
{
    int dy = top - pad, dx = left - pad; /* out(y,x) = src(y+dy, x'+dx) */
    for (int ch = 0; ch < c; ch++) {
        float pv = pad_value ? pad_value[ch] : 0.0f;
        for (int y = 0; y < h; y++) {
            float *o = dst + ((size_t)ch * (size_t)h + (size_t)y) * (size_t)w;
            int sy = y + dy;
            if (sy < 0 || sy >= h) {
                fill(o, w, pv);
                continue;
            }
            const float *s = src + ((size_t)ch * (size_t)h + (size_t)sy) * (size_t)w;
            /* valid x' range: 0 <= x'+dx < w */
            int x0 = dx < 0 ? -dx : 0, x1 = dx > 0 ? w - dx : w;
            x0 = x0 > w ? w : x0, x1 = x1 < x0 ? x0 : x1; /* |dx| > w (pad > w): all pad */
            if (!flip) {
                fill(o, x0, pv);
                memcpy(o + x0, s + x0 + dx, (size_t)(x1 - x0) * sizeof *o);
                fill(o + x1, w - x1, pv);
            } else {
                /* x = w-1-x'; x' in [x0, x1) -> x in (w-1-x1, w-1-x0] */
                fill(o, w - x1, pv);
                for (int x = w - x1; x < w - x0; x++) o[x] = s[w - 1 - x + dx];
                fill(o + w - x0, x0, pv);
            }
        }
    }
}

void rt_batcher_augment_draw(uint64_t seed, uint32_t epoch, uint32_t idx, int pad, float flip_p,
                             int *top, int *left, int *flip)
{
    rt_rng r = rt_rng_stream(seed, RT_RNG_AUGMENT, epoch, 0);
    rt_rng_state st = rt_rng_get_state(&r);
    st.word = (uint64_t)idx * 4; /* one Philox block per sample */
    rt_rng_set_state(&r, st);
    uint32_t span = 2u * (uint32_t)pad + 1u;
    *top = (int)rt_rng_below(&r, span);
    *left = (int)rt_rng_below(&r, span);
    *flip = rt_rng_bernoulli(&r, flip_p);
}

void rt_batcher_cutout_draw(uint64_t seed, uint32_t epoch, uint32_t idx, int h, int w, int *cy,
                            int *cx)
{
    rt_rng r = rt_rng_stream(seed, RT_RNG_AUGMENT, epoch, 1);
    rt_rng_state st = rt_rng_get_state(&r);
    st.word = (uint64_t)idx * 2;
    rt_rng_set_state(&r, st);
    *cy = (int)rt_rng_below(&r, (uint32_t)h);
    *cx = (int)rt_rng_below(&r, (uint32_t)w);
}

void rt_batcher_cutout(float *dst, int c, int h, int w, int size, int cy, int cx)
{
    int y0 = cy - size / 2, x0 = cx - size / 2, y1 = y0 + size, x1 = x0 + size;
    y0 = y0 < 0 ? 0 : y0, x0 = x0 < 0 ? 0 : x0;
    y1 = y1 > h ? h : y1, x1 = x1 > w ? w : x1;
    for (int ch = 0; ch < c; ch++)
        for (int y = y0; y < y1; y++)
            fill(dst + ((size_t)ch * (size_t)h + (size_t)y) * (size_t)w + x0, x1 - x0, 0.0f);
}

/* Sample idx of epoch: copy (with augmentation) into dst (C,H,W); slot is the sample's
 * place in the batch (its scratch space when read from a data set's pixels). */
static void load_sample(const rt_batcher *b, uint32_t idx, int slot, float *dst)
{
    const rt_batcher_data *d = &b->data;
    size_t img = (size_t)d->c * (size_t)d->h * (size_t)d->w;
    const float *src = d->images ? d->images + (size_t)idx * img : NULL;
    if (!d->images) {
        float *tmp = b->cfg.augment ? b->scratch + (size_t)slot * img : dst;
        rt_dataset_image_f32(d->set, (int)idx, tmp);
        src = tmp;
    }
    if (!b->cfg.augment) {
        if (src != dst) memcpy(dst, src, img * sizeof *dst);
        return;
    }
    int top, left, flip;
    rt_batcher_augment_draw(b->cfg.seed, (uint32_t)b->epoch, idx, b->cfg.crop_pad, b->cfg.flip_p,
                            &top, &left, &flip);
    rt_batcher_crop_flip(dst, src, d->c, d->h, d->w, b->cfg.crop_pad, top, left, flip,
                         b->cfg.pad_value);
    if (b->cfg.cutout > 0) {
        int cy, cx;
        rt_batcher_cutout_draw(b->cfg.seed, (uint32_t)b->epoch, idx, d->h, d->w, &cy, &cx);
        rt_batcher_cutout(dst, d->c, d->h, d->w, b->cfg.cutout, cy, cx);
    }
}

rt_status rt_batcher_next(rt_batcher *b, float *images, int32_t *labels, uint32_t *indices,
                          int *count, rt_error *err)
{
    if (!images || !labels || !count)
        return RT_ERR(err, RT_EINVAL, "rt_batcher_next needs image and label buffers");
    int64_t start, epoch;
    int m;
    RT_TRY(rt_batcher_advance(b, &start, &m, &epoch, err));
    const uint32_t *ord = b->order + start;
    size_t img = (size_t)b->data.c * (size_t)b->data.h * (size_t)b->data.w;
    const rt_batcher *bc = b;
#pragma omp parallel for schedule(static) if ((size_t)m * img >= PAR_MIN_FLOATS)
    for (int i = 0; i < m; i++) load_sample(bc, ord[i], i, images + (size_t)i * img);
    for (int i = 0; i < m; i++) {
        labels[i] = b->data.labels[ord[i]];
        if (indices) indices[i] = ord[i];
    }
    *count = m;
    return RT_OK;
}

const uint32_t *rt_batcher_order(const rt_batcher *b, int64_t *epoch)
{
    if (epoch) *epoch = b->order_epoch;
    return b->order;
}

rt_status rt_batcher_advance(rt_batcher *b, int64_t *start, int *count, int64_t *epoch,
                             rt_error *err)
{
    if (!start || !count || !epoch)
        return RT_ERR(err, RT_EINVAL, "rt_batcher_advance needs start, count and epoch");
    if (b->position >= b->epoch_len) {
        b->epoch++;
        b->position = 0;
    }
    ensure_order(b);
    int64_t left = b->epoch_len - b->position;
    int m = (int)(left < b->cfg.batch_size ? left : b->cfg.batch_size);
    *start = b->position;
    *count = m;
    *epoch = b->epoch;
    b->position += m;
    return RT_OK;
}
