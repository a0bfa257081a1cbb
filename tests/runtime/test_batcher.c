/* test_batcher.c - data order (permutation per epoch, seeded, resumable bit for bit),
 * partial batches, augmentation geometry on hand-made images, and bad input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_batcher.h"
#include "t.h"

enum { N = 103, C = 3, H = 8, W = 6, IMG = C * H * W, B = 10 };

static float g_images[N * IMG];
static uint8_t g_labels[N];

/* Every pixel distinct and non-zero, so a crop/flip can be recognised and pad (0) is
 * never confused with data. */
static void make_data(void)
{
    for (int i = 0; i < N; i++) {
        g_labels[i] = (uint8_t)(i % 10);
        for (int k = 0; k < IMG; k++) g_images[i * IMG + k] = (float)(i * 1000 + k + 1);
    }
}

static rt_batcher_data data_view(void)
{
    rt_batcher_data d = {g_images, g_labels, N, C, H, W, NULL};
    return d;
}

typedef struct {
    float images[B * IMG];
    int32_t labels[B];
    uint32_t idx[B];
    int count;
} batch;

static rt_status next(rt_batcher *b, batch *out)
{
    memset(out, 0, sizeof *out);
    return rt_batcher_next(b, out->images, out->labels, out->idx, &out->count, NULL);
}

static int same_batch(const batch *a, const batch *b) { return memcmp(a, b, sizeof *a) == 0; }

T_TEST(test_epoch_is_permutation)
{
    rt_batcher *b;
    rt_batcher_data d = data_view();
    rt_batcher_config cfg = rt_batcher_config_default(B, 42);
    ASSERT_EQ(rt_batcher_create(&b, &d, &cfg, NULL), RT_OK);
    ASSERT_EQ(rt_batcher_steps_per_epoch(b), 11);
    uint32_t order[2][N];
    batch bt;
    for (int e = 0; e < 2; e++) {
        int seen[N] = {0}, pos = 0;
        for (int s = 0; s < 11; s++) {
            ASSERT_EQ(next(b, &bt), RT_OK);
            ASSERT_EQ(bt.count, s < 10 ? B : 3); /* the partial batch is kept */
            for (int i = 0; i < bt.count; i++) {
                ASSERT(bt.idx[i] < N);
                seen[bt.idx[i]]++;
                order[e][pos++] = bt.idx[i];
                ASSERT_EQ(bt.labels[i], g_labels[bt.idx[i]]);
                ASSERT(memcmp(bt.images + i * IMG, g_images + bt.idx[i] * IMG,
                              IMG * sizeof(float)) == 0);
            }
        }
        ASSERT(rt_batcher_epoch_done(b));
        ASSERT_EQ(rt_batcher_get_state(b).epoch, e);
        for (int i = 0; i < N; i++) ASSERT_EQ(seen[i], 1);
    }
    int same = 0, in_place = 0;
    for (int i = 0; i < N; i++) {
        same += order[0][i] == order[1][i];
        in_place += order[0][i] == (uint32_t)i;
    }
    ASSERT(same < 10);     /* epochs are shuffled differently (expected ~1 coincidence) */
    ASSERT(in_place < 10); /* and not in index order */
    ASSERT_EQ(next(b, &bt), RT_OK);
    ASSERT_EQ(rt_batcher_get_state(b).epoch, 2);
    rt_batcher_destroy(b);
}

T_TEST(test_same_seed_same_batches)
{
    rt_batcher_data d = data_view();
    rt_batcher_config cfg = rt_batcher_config_default(B, 7);
    cfg.augment = 1;
    rt_batcher *a, *b, *c;
    ASSERT_EQ(rt_batcher_create(&a, &d, &cfg, NULL), RT_OK);
    ASSERT_EQ(rt_batcher_create(&b, &d, &cfg, NULL), RT_OK);
    cfg.seed = 8;
    ASSERT_EQ(rt_batcher_create(&c, &d, &cfg, NULL), RT_OK);
    static batch x, y, z;
    int differs = 0;
    for (int s = 0; s < 30; s++) {
        ASSERT_EQ(next(a, &x), RT_OK);
        ASSERT_EQ(next(b, &y), RT_OK);
        ASSERT_EQ(next(c, &z), RT_OK);
        ASSERT(same_batch(&x, &y));
        differs += memcmp(x.idx, z.idx, sizeof x.idx) != 0;
    }
    ASSERT(differs > 25);
    rt_batcher_destroy(a);
    rt_batcher_destroy(b);
    rt_batcher_destroy(c);
}

/* Stop after k batches, save {epoch, position}, restore into a fresh batcher: the next
 * m batches are bitwise those of the uninterrupted run, augmentation included. */
T_TEST(test_resume_bitwise)
{
    rt_batcher_data d = data_view();
    int ks[] = {0, 1, 10, 11, 12, 25};
    for (int drop = 0; drop < 2; drop++)
        for (size_t t = 0; t < sizeof ks / sizeof *ks; t++) {
            rt_batcher_config cfg = rt_batcher_config_default(B, 1234);
            cfg.augment = 1;
            cfg.drop_last = drop;
            rt_batcher *a, *r;
            ASSERT_EQ(rt_batcher_create(&a, &d, &cfg, NULL), RT_OK);
            static batch x, y;
            for (int s = 0; s < ks[t]; s++) ASSERT_EQ(next(a, &x), RT_OK);
            rt_batcher_state st = rt_batcher_get_state(a);
            ASSERT_EQ(rt_batcher_create(&r, &d, &cfg, NULL), RT_OK);
            ASSERT_EQ(rt_batcher_set_state(r, st, NULL), RT_OK);
            for (int s = 0; s < 15; s++) {
                ASSERT_EQ(next(a, &x), RT_OK);
                ASSERT_EQ(next(r, &y), RT_OK);
                if (!same_batch(&x, &y)) T_FAIL_("drop %d k %d: batch %d differs", drop, ks[t], s);
                if (drop) ASSERT_EQ(x.count, B);
            }
            rt_batcher_destroy(a);
            rt_batcher_destroy(r);
        }
}

T_TEST(test_no_shuffle_drop_last)
{
    rt_batcher_data d = data_view();
    rt_batcher_config cfg = rt_batcher_config_default(B, 1);
    cfg.shuffle = 0;
    cfg.drop_last = 1;
    rt_batcher *b;
    ASSERT_EQ(rt_batcher_create(&b, &d, &cfg, NULL), RT_OK);
    ASSERT_EQ(rt_batcher_steps_per_epoch(b), 10);
    static batch x;
    for (int s = 0; s < 10; s++) {
        ASSERT_EQ(next(b, &x), RT_OK);
        ASSERT_EQ(x.count, B);
        for (int i = 0; i < B; i++) ASSERT_EQ(x.idx[i], s * B + i);
    }
    ASSERT(rt_batcher_epoch_done(b));
    ASSERT_EQ(next(b, &x), RT_OK); /* next epoch starts at 0 again */
    ASSERT_EQ(x.idx[0], 0);
    ASSERT_EQ(rt_batcher_get_state(b).epoch, 1);
    rt_batcher_destroy(b);
}

/* A 1x3x4 image, pad 1: hand-computed crops and flips. */
T_TEST(test_crop_flip_hand_made)
{
    const float src[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    float out[12];
    const float pad9[1] = {9.5f};
    /* top=1,left=1 with pad 1 is the identity */
    rt_batcher_crop_flip(out, src, 1, 3, 4, 1, 1, 1, 0, NULL);
    ASSERT(memcmp(out, src, sizeof src) == 0);
    /* top=0,left=0: shifted down-right by one, zero row/column at top/left */
    const float tl[12] = {0, 0, 0, 0, 0, 1, 2, 3, 0, 5, 6, 7};
    rt_batcher_crop_flip(out, src, 1, 3, 4, 1, 0, 0, 0, NULL);
    ASSERT(memcmp(out, tl, sizeof tl) == 0);
    /* top=2,left=2: shifted up-left, pad value at bottom/right */
    const float br[12] = {6, 7, 8, 9.5f, 10, 11, 12, 9.5f, 9.5f, 9.5f, 9.5f, 9.5f};
    rt_batcher_crop_flip(out, src, 1, 3, 4, 1, 2, 2, 0, pad9);
    ASSERT(memcmp(out, br, sizeof br) == 0);
    /* identity crop + flip mirrors each row */
    const float fl[12] = {4, 3, 2, 1, 8, 7, 6, 5, 12, 11, 10, 9};
    rt_batcher_crop_flip(out, src, 1, 3, 4, 1, 1, 1, 1, NULL);
    ASSERT(memcmp(out, fl, sizeof fl) == 0);
    /* crop then flip: top=0,left=0 crop (tl above) mirrored */
    const float tlf[12] = {0, 0, 0, 0, 3, 2, 1, 0, 7, 6, 5, 0};
    rt_batcher_crop_flip(out, src, 1, 3, 4, 1, 0, 0, 1, NULL);
    ASSERT(memcmp(out, tlf, sizeof tlf) == 0);
    /* left=2 (shift left) then flip */
    const float lf[12] = {9.5f, 4, 3, 2, 9.5f, 8, 7, 6, 9.5f, 12, 11, 10};
    rt_batcher_crop_flip(out, src, 1, 3, 4, 1, 1, 2, 1, pad9);
    ASSERT(memcmp(out, lf, sizeof lf) == 0);
}

/* Naive reference: pad the image, take the window, mirror. */
static void reference_aug(float *dst, const float *src, int pad, int top, int left, int flip)
{
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                int xx = flip ? W - 1 - x : x;
                int py = y + top, px = xx + left; /* in padded coordinates */
                int sy = py - pad, sx = px - pad;
                float v = (sy >= 0 && sy < H && sx >= 0 && sx < W) ? src[(c * H + sy) * W + sx] : 0;
                dst[(c * H + y) * W + x] = v;
            }
}

/* Every augmented sample of an epoch is one of the (2p+1)^2 * 2 crops/flips of its
 * source, and all crop offsets and both flips occur. */
T_TEST(test_augmentation_distribution)
{
    rt_batcher_data d = data_view();
    rt_batcher_config cfg = rt_batcher_config_default(B, 99);
    cfg.augment = 1;
    cfg.crop_pad = 2;
    rt_batcher *b;
    ASSERT_EQ(rt_batcher_create(&b, &d, &cfg, NULL), RT_OK);
    int tops[5] = {0}, lefts[5] = {0}, flips[2] = {0};
    static batch x;
    float ref[IMG];
    for (int s = 0; s < 3 * 11; s++) {
        ASSERT_EQ(next(b, &x), RT_OK);
        for (int i = 0; i < x.count; i++) {
            int found = 0;
            for (int t = 0; t < 5 && !found; t++)
                for (int l = 0; l < 5 && !found; l++)
                    for (int f = 0; f < 2 && !found; f++) {
                        reference_aug(ref, g_images + x.idx[i] * IMG, 2, t, l, f);
                        if (!memcmp(ref, x.images + i * IMG, sizeof ref)) {
                            found = 1;
                            tops[t]++;
                            lefts[l]++;
                            flips[f]++;
                        }
                    }
            if (!found) T_FAIL_("sample %u is not a crop/flip of its source", x.idx[i]);
        }
    }
    for (int k = 0; k < 5; k++) ASSERT(tops[k] > 30 && lefts[k] > 30); /* ~62 each */
    ASSERT(flips[0] > 110 && flips[1] > 110);                          /* ~155 each */
    rt_batcher_destroy(b);
}

T_TEST(test_bad_input)
{
    rt_batcher *b = (rt_batcher *)&b;
    rt_error err;
    rt_batcher_data d = data_view();
    rt_batcher_config cfg = rt_batcher_config_default(0, 1);
    ASSERT_EQ(rt_batcher_create(&b, &d, &cfg, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "batch size");
    ASSERT(b == NULL);
    cfg.batch_size = N + 1;
    cfg.drop_last = 1;
    ASSERT_EQ(rt_batcher_create(&b, &d, &cfg, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "drop_last");
    rt_batcher_data empty = {g_images, g_labels, 0, C, H, W, NULL};
    cfg = rt_batcher_config_default(B, 1);
    ASSERT_EQ(rt_batcher_create(&b, &empty, &cfg, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "empty");
    cfg.augment = 1;
    cfg.crop_pad = 7;
    ASSERT_EQ(rt_batcher_create(&b, &d, &cfg, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "crop padding");

    /* a batch bigger than the data set without drop_last: one partial batch per epoch */
    cfg = rt_batcher_config_default(N + 5, 1);
    ASSERT_EQ(rt_batcher_create(&b, &d, &cfg, &err), RT_OK);
    ASSERT_EQ(rt_batcher_steps_per_epoch(b), 1);
    rt_batcher_state bad[] = {{-1, 0}, {0, -1}, {0, N + 1}};
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(rt_batcher_set_state(b, bad[i], &err), RT_EINVAL);
        ASSERT_STR_CONTAINS(err.msg, "out of range");
    }
    rt_batcher_state st = rt_batcher_get_state(b);
    ASSERT_EQ(st.epoch, 0);
    ASSERT_EQ(st.position, 0);
    rt_batcher_destroy(b);
    rt_batcher_destroy(NULL);
}

int main(void)
{
    make_data();
    T_RUN(test_epoch_is_permutation);
    T_RUN(test_same_seed_same_batches);
    T_RUN(test_resume_bitwise);
    T_RUN(test_no_shuffle_drop_last);
    T_RUN(test_crop_flip_hand_made);
    T_RUN(test_augmentation_distribution);
    T_RUN(test_bad_input);
    return T_EXIT();
}
