/* test_augment.c - the --augment and --normalize texts (rt_augment.h), cutout in the
 * batcher, and the trainer's refusal of bad control values before a step. */
#include <stdlib.h>

#include "quadrants.h"
#include "rt.h"
#include "rt_batcher.h"
#include "t.h"

static rt_augment parse_ok(int *t_failed_, const char *spec, const char *canon)
{
    rt_augment a = {0};
    rt_error err = {0};
    char text[64];
    if (rt_augment_parse(spec, &a, &err) != RT_OK) {
        fprintf(stderr, "  '%s': %s\n", spec, err.msg);
        *t_failed_ = 1;
        return a;
    }
    rt_augment_format(&a, text, sizeof text);
    if (strcmp(text, canon)) {
        fprintf(stderr, "  '%s' formats as '%s', not '%s'\n", spec, text, canon);
        *t_failed_ = 1;
    }
    return a;
}

T_TEST(test_augment_specs)
{
    rt_augment a = parse_ok(t_failed_, "crop:4,flip", "crop:4,flip");
    ASSERT(a.on && a.crop_pad == 4 && a.flip && !a.cutout);
    a = parse_ok(t_failed_, "flip, cutout:8 ,crop:2", "crop:2,flip,cutout:8");
    ASSERT(a.on && a.crop_pad == 2 && a.flip && a.cutout == 8);
    a = parse_ok(t_failed_, "none", "none");
    ASSERT(!a.on);
    a = parse_ok(t_failed_, "crop:0", "none"); /* nothing left to do */
    ASSERT(!a.on);
    a = parse_ok(t_failed_, "cutout:16", "cutout:16");
    ASSERT(a.on && !a.crop_pad && !a.flip && a.cutout == 16);
    if (*t_failed_) return;
    const char *bad[][2] = {
        {"crop:-1,spin", "--augment crop:-1: the padding must be an integer in [0, 64]"},
        {"spin", "--augment: unknown item 'spin'"},
        {"crop:4,spin", "--augment: unknown item 'spin'"},
        {"crop:65", "--augment crop:65: the padding must be an integer in [0, 64]"},
        {"crop", "--augment: unknown item 'crop'"},
        {"crop:x", "--augment crop:x: the padding must be an integer in [0, 64]"},
        {"cutout:0", "--augment cutout:0: the size must be an integer >= 1"},
        {"flip,flip", "--augment 'flip,flip': flip given twice"},
        {"none,flip", "--augment 'none,flip': none cannot be combined"},
        {"crop:2,", "--augment 'crop:2,': an empty item"},
        {"", "--augment: empty"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rt_error err = {0};
        a = (rt_augment){0};
        ASSERT_EQ(rt_augment_parse(bad[i][0], &a, &err), RT_EINVAL);
        ASSERT_STR_CONTAINS(err.msg, bad[i][1]);
    }
}

T_TEST(test_augment_defaults)
{
    rt_dataset d;
    memset(&d, 0, sizeof d);
    d.c = 1, d.h = d.w = 28;
    snprintf(d.name, sizeof d.name, "mnist/train"); /* digits: never flipped */
    rt_augment a = rt_augment_default(&d);
    ASSERT(a.on && a.crop_pad == 2 && !a.flip && !a.cutout);
    snprintf(d.name, sizeof d.name, "fashion-mnist/train");
    a = rt_augment_default(&d);
    ASSERT(a.on && a.crop_pad == 2 && a.flip);
    d.c = 3, d.h = d.w = 32;
    snprintf(d.name, sizeof d.name, "cifar10/train");
    a = rt_augment_default(&d);
    ASSERT(a.on && a.crop_pad == 4 && a.flip);
    snprintf(d.name, sizeof d.name, "/data/pets/train"); /* an image folder in colour */
    a = rt_augment_default(&d);
    ASSERT(a.on && a.crop_pad == 4 && a.flip);
    d.c = 1;
    a = rt_augment_default(&d); /* grey, symmetry unknown: no flip */
    ASSERT(a.on && a.crop_pad == 4 && !a.flip);
    rt_error err = {0};
    d.h = d.w = 3;
    ASSERT_EQ(rt_augment_check(&a, &d, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "--augment crop:4: more padding than the 3x3 images");
}

T_TEST(test_normalize_text)
{
    float mean[4], std[4];
    int c = 0;
    rt_error err = {0};
    ASSERT_EQ(rt_normalize_parse("(0.1307,), (0.3081,)", mean, std, &c, &err), RT_OK);
    ASSERT(c == 1 && mean[0] == 0.1307f && std[0] == 0.3081f);
    ASSERT_EQ(rt_normalize_parse("0.1307,0.3081", mean, std, &c, &err), RT_OK);
    ASSERT(c == 1 && mean[0] == 0.1307f && std[0] == 0.3081f);
    ASSERT_EQ(
        rt_normalize_parse("(0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261)", mean, std, &c, &err),
        RT_OK);
    ASSERT(c == 3 && mean[2] == 0.4465f && std[0] == 0.247f && std[2] == 0.261f);
    ASSERT_EQ(rt_normalize_parse("0.5", mean, std, &c, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "--normalize '0.5': 1 numbers");
    ASSERT_EQ(rt_normalize_parse("0.5,0", mean, std, &c, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "standard deviation 0 of channel 0 must be > 0");
    ASSERT_EQ(rt_normalize_parse("0.5,abc", mean, std, &c, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "'abc' is not a number");
}

/* The cutout square is 0 in every channel, the rest is the crop/flip, and the square's
 * centres cover the image. */
T_TEST(test_cutout_batches)
{
    enum { N = 64, C = 2, H = 6, W = 5 };
    float *img = malloc(sizeof(float) * N * C * H * W), *out = malloc(sizeof *out * N * C * H * W);
    float ref[C * H * W];
    uint8_t lab[N] = {0};
    ASSERT(img && out);
    for (int i = 0; i < N * C * H * W; i++) img[i] = 1.0f + (float)(i % 97);
    rt_batcher_data d = {.images = img, .labels = lab, .n = N, .c = C, .h = H, .w = W};
    rt_batcher_config cfg = rt_batcher_config_default(N, 5);
    cfg.shuffle = 0, cfg.augment = 1, cfg.crop_pad = 1, cfg.cutout = 3;
    rt_batcher *b = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_batcher_create(&b, &d, &cfg, &err), RT_OK);
    int32_t labels[N];
    int count = 0, seen_y[H] = {0}, seen_x[W] = {0};
    ASSERT_EQ(rt_batcher_next(b, out, labels, NULL, &count, &err), RT_OK);
    ASSERT_EQ(count, N);
    for (int i = 0; i < N; i++) {
        int top, left, flip, cy, cx;
        rt_batcher_augment_draw(5, 0, (uint32_t)i, 1, 0.5f, &top, &left, &flip);
        rt_batcher_crop_flip(ref, img + (size_t)i * C * H * W, C, H, W, 1, top, left, flip, NULL);
        rt_batcher_cutout_draw(5, 0, (uint32_t)i, H, W, &cy, &cx);
        ASSERT(cy >= 0 && cy < H && cx >= 0 && cx < W);
        seen_y[cy]++, seen_x[cx]++;
        for (int c = 0; c < C; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    int in = y >= cy - 1 && y < cy + 2 && x >= cx - 1 && x < cx + 2;
                    float got = out[(((size_t)i * C + c) * H + y) * W + x];
                    float want = in ? 0.0f : ref[(c * H + y) * W + x];
                    if (got != want)
                        T_FAIL_("sample %d (%d,%d,%d): %g, want %g", i, c, y, x, (double)got,
                                (double)want);
                }
    }
    for (int y = 0; y < H; y++) ASSERT(seen_y[y] > 0);
    for (int x = 0; x < W; x++) ASSERT(seen_x[x] > 0);
    rt_batcher_destroy(b);
    cfg.cutout = 7; /* larger than the 6x5 images */
    ASSERT_EQ(rt_batcher_create(&b, &d, &cfg, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "cutout size 7 must be in [0, 6]");
    free(img), free(out);
}

/* Bad control values are refused by rt_trainer_create (nothing is trained), each naming
 * its option. */
T_TEST(test_bad_controls)
{
    rt_dataset d;
    quadrants_make(&d, 16, 1, 0.5f, "augment/train");
    rt_model_input in = {1, 8, 8, 4};
    rt_backend b = {0};
    rt_model *m = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_backend_open(&b, "cpu", 1, &err), RT_OK);
    ASSERT_EQ(rt_model_create(&m, "flatten\ndense 4\n", &in, &err), RT_OK);
    ASSERT_EQ(rt_model_attach(m, &b, 8, 1, &err), RT_OK);
    struct {
        int accumulate;
        double clip_norm, clip_value, smoothing;
        int augment, crop, cutout;
        const char *msg;
    } bad[] = {
        {0, 0, 0, 0, 0, 4, 0, "--accumulate must be an integer >= 1 (got 0)"},
        {1, -1, 0, 0, 0, 4, 0, "--clip-grad must be a finite number > 0 (got -1)"},
        {1, 0, NAN, 0, 0, 4, 0, "--clip-value must be a finite number > 0"},
        {1, 0, 0, 1.5, 0, 4, 0, "--label-smoothing must be in [0, 1) (got 1.5)"},
        {1, 0, 0, 1.0, 0, 4, 0, "--label-smoothing must be in [0, 1) (got 1)"},
        {1, 0, 0, 0, 1, 9, 0, "--augment crop:9: the padding must be in [0, 8]"},
        {1, 0, 0, 0, 1, 0, 9, "--augment cutout:9: the size must be in [1, 8]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rt_trainer_config c = rt_trainer_config_default();
        c.batch_size = 8;
        c.accumulate = bad[i].accumulate;
        c.clip_norm = bad[i].clip_norm;
        c.clip_value = bad[i].clip_value;
        c.label_smoothing = bad[i].smoothing;
        c.augment = bad[i].augment, c.crop_pad = bad[i].crop, c.cutout = bad[i].cutout;
        rt_trainer *t = NULL;
        ASSERT_EQ(rt_trainer_create(&t, m, &d, &c, &err), RT_EINVAL);
        ASSERT(t == NULL);
        ASSERT_STR_CONTAINS(err.msg, bad[i].msg);
    }
    /* one step of accumulation: steps count updates of batch x accumulate images */
    rt_trainer_config c = rt_trainer_config_default();
    c.batch_size = 4, c.accumulate = 2;
    rt_trainer *t = NULL;
    ASSERT_EQ(rt_trainer_create(&t, m, &d, &c, &err), RT_OK);
    ASSERT_EQ(rt_trainer_steps_per_epoch(t), 2);
    rt_trainer_destroy(t);
    rt_model_destroy(m);
    rt_backend_close(&b);
    quadrants_free(&d);
}

int main(void)
{
    T_RUN(test_augment_specs);
    T_RUN(test_augment_defaults);
    T_RUN(test_normalize_text);
    T_RUN(test_cutout_batches);
    T_RUN(test_bad_controls);
    return T_EXIT();
}
