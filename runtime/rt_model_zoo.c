/* rt_model_zoo.c - architectures shipped as %%model specs, written out in the cell
 * language itself (so the summary, checkpoints and %resume treat them like any spec).
 * Every layer with tensors carries `name=`, so the tensors have the names of the same
 * network's PyTorch state_dict (less its num_batches_tracked counters), torchvision's
 * module names where torchvision has the network.
 *
 * resnet20/32/44/56/110: He et al. 2016 ("Deep Residual Learning", section 4.2), the
 * CIFAR-10 networks of depth 6n + 2 for 32x32 images: a 3x3 conv with 16 channels, then
 * 3 stages of n basic blocks (two 3x3 convs, batch norm, ReLU after the add) at 16, 32
 * and 64 channels, the first block of stages 2 and 3 at stride 2 with a projection
 * shortcut (1x1 conv + batch norm, the paper's option B), global average pooling and one
 * dense layer. No convolution has a bias (each is followed by batch norm). ResNet-20 has
 * 272,474 parameters for 10 classes (0.27 M). Names: torchvision's ResNet layout built
 * of its BasicBlock (conv1, bn1, layer1.0.conv1, ..., layer2.0.downsample.0, fc).
 *
 * resnet18/34 and vgg11_bn/vgg16_bn: torchvision's networks, layer for layer, with its
 * state_dict names and parameter counts (weights=None); any input size whose feature
 * maps do not vanish (32x32 and up for VGG's five poolings).
 *
 * lenet5: LeCun et al. 1998 with ReLU and max pooling: conv 6@5x5, pool 2, conv 16@5x5,
 * pool 2, dense 120, 84, classes (conv1, conv2, fc1, fc2, fc3). A 28x28 input is padded
 * by 2 in the first convolution (MNIST's images on the paper's 32x32 field), so the
 * features are 16x5x5 for both sizes.
 *
 * mobilenetv2: torchvision's mobilenet_v2 (width 1.0; Sandler et al. 2018): a 3x3
 * stride-2 conv of 32 channels with batch norm and ReLU6, 17 inverted residual blocks
 * (a 1x1 expansion by t with batch norm and ReLU6 unless t = 1, a 3x3 depthwise conv
 * with batch norm and ReLU6, a 1x1 linear projection with batch norm; the input added
 * when the stride is 1 and the width stays: a linear bottleneck, no activation after
 * the add), a 1x1 conv to 1280 channels with batch norm and ReLU6, global average
 * pooling, dropout 0.2 and `classifier.1`. Names: features.0.0, features.1.conv.0.0,
 * ..., features.18.1, classifier.1. Its strides divide by 32: a 32x32 image ends as 1x1.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "rt_model.h"

/* The spec being written: overflow is remembered and reported once at the end. */
typedef struct out {
    char *buf;
    size_t size, n;
    int full;
} out;

__attribute__((format(printf, 2, 3))) static void put(out *o, const char *fmt, ...)
{
    if (o->full) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(o->buf + o->n, o->size - o->n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= o->size - o->n) o->full = 1;
    else o->n += (size_t)k;
}

/* A torchvision BasicBlock of k channels named PREFIX (e.g. "layer2.0"): stride 2 or
 * a change of width adds the projection (downsample.0, downsample.1). */
static void basic_block(out *o, const char *prefix, int k, int stride, int project)
{
    put(o,
        "residual:\n"
        "    conv2d %d 3 stride=%d pad=1 bias=false name=%s.conv1\n"
        "    batchnorm name=%s.bn1\n"
        "    relu\n"
        "    conv2d %d 3 pad=1 bias=false name=%s.conv2\n"
        "    batchnorm name=%s.bn2\n",
        k, stride, prefix, prefix, k, prefix, prefix);
    if (project)
        put(o,
            "  shortcut:\n"
            "    conv2d %d 1 stride=%d bias=false name=%s.downsample.0\n"
            "    batchnorm name=%s.downsample.1\n",
            k, stride, prefix, prefix);
    put(o, "relu\n");
}

/* Stages of basic blocks after a stem of `width` channels: stage s has blocks[s] blocks
 * of widths[s] channels, its first at stride 2 after stage 1. */
static void stages(out *o, int width, const int *widths, const int *blocks, int nstages)
{
    char prefix[32];
    for (int s = 0; s < nstages; s++)
        for (int b = 0; b < blocks[s]; b++) {
            int stride = s > 0 && b == 0 ? 2 : 1;
            snprintf(prefix, sizeof prefix, "layer%d.%d", s + 1, b);
            basic_block(o, prefix, widths[s], stride, stride != 1 || width != widths[s]);
            width = widths[s];
        }
}

static void cifar_resnet(out *o, int depth, const rt_model_input *in)
{
    static const int widths[3] = {16, 32, 64};
    int n = (depth - 2) / 6, blocks[3] = {n, n, n};
    put(o,
        "# ResNet-%d (He et al. 2016, the CIFAR-10 network)\n"
        "conv2d 16 3 pad=1 bias=false name=conv1\nbatchnorm name=bn1\nrelu\n",
        depth);
    stages(o, 16, widths, blocks, 3);
    put(o, "globalavgpool\nflatten\ndense %d name=fc\n", in->num_classes);
}

static void resnet20(out *o, const rt_model_input *in) { cifar_resnet(o, 20, in); }
static void resnet32(out *o, const rt_model_input *in) { cifar_resnet(o, 32, in); }
static void resnet44(out *o, const rt_model_input *in) { cifar_resnet(o, 44, in); }
static void resnet56(out *o, const rt_model_input *in) { cifar_resnet(o, 56, in); }
static void resnet110(out *o, const rt_model_input *in) { cifar_resnet(o, 110, in); }

/* torchvision's resnet18/34: a 7x7 stride-2 conv of 64 channels, batch norm, ReLU, 3x3
 * stride-2 max pooling padded by 1, four stages of basic blocks at 64..512 channels,
 * global average pooling (torchvision's AdaptiveAvgPool2d((1, 1))), fc. */
static void imagenet_resnet(out *o, int depth, const int *blocks, const rt_model_input *in)
{
    static const int widths[4] = {64, 128, 256, 512};
    put(o,
        "# ResNet-%d (torchvision's resnet%d)\n"
        "conv2d 64 7 stride=2 pad=3 bias=false name=conv1\nbatchnorm name=bn1\nrelu\n"
        "maxpool 3 stride=2 pad=1\n",
        depth, depth);
    stages(o, 64, widths, blocks, 4);
    put(o, "globalavgpool\nflatten\ndense %d name=fc\n", in->num_classes);
}

static void resnet18(out *o, const rt_model_input *in)
{
    static const int blocks[4] = {2, 2, 2, 2};
    imagenet_resnet(o, 18, blocks, in);
}

static void resnet34(out *o, const rt_model_input *in)
{
    static const int blocks[4] = {3, 4, 6, 3};
    imagenet_resnet(o, 34, blocks, in);
}

/* torchvision's vgg*_bn: `features` (3x3 convs with a bias, each followed by batch norm
 * and ReLU; 0 in cfg is a 2x2 max pool), an adaptive 7x7 average pool, and `classifier`
 * (dense 4096, ReLU, dropout 0.5, dense 4096, ReLU, dropout 0.5, dense classes). The
 * indices are torchvision's Sequential positions: features.0 conv, features.1 norm, ... */
static void vgg_bn(out *o, const char *title, const int *cfg, int n, const rt_model_input *in)
{
    put(o, "# %s (torchvision's)\n", title);
    int idx = 0;
    for (int i = 0; i < n; i++) {
        if (!cfg[i]) {
            put(o, "maxpool 2 stride=2\n");
            idx++;
            continue;
        }
        put(o, "conv2d %d 3 pad=1 name=features.%d\nbatchnorm name=features.%d\nrelu\n", cfg[i],
            idx, idx + 1);
        idx += 3;
    }
    put(o,
        "adaptiveavgpool 7 7\nflatten\n"
        "dense 4096 name=classifier.0\nrelu\ndropout 0.5\n"
        "dense 4096 name=classifier.3\nrelu\ndropout 0.5\n"
        "dense %d name=classifier.6\n",
        in->num_classes);
}

static void vgg11_bn(out *o, const rt_model_input *in)
{
    static const int cfg[] = {64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0};
    vgg_bn(o, "VGG-11 with batch norm", cfg, (int)(sizeof cfg / sizeof cfg[0]), in);
}

static void vgg16_bn(out *o, const rt_model_input *in)
{
    static const int cfg[] = {64, 64,  0,   128, 128, 0,   256, 256, 256,
                              0,  512, 512, 512, 0,   512, 512, 512, 0};
    vgg_bn(o, "VGG-16 with batch norm", cfg, (int)(sizeof cfg / sizeof cfg[0]), in);
}

static void lenet5(out *o, const rt_model_input *in)
{
    int pad = in->h == 28 && in->w == 28 ? 2 : 0;
    put(o,
        "# LeNet-5 (LeCun et al. 1998, with ReLU and max pooling)\n"
        "conv2d 6 5 pad=%d name=conv1\nrelu\nmaxpool 2\n"
        "conv2d 16 5 name=conv2\nrelu\nmaxpool 2\nflatten\n"
        "dense 120 name=fc1\nrelu\ndense 84 name=fc2\nrelu\ndense %d name=fc3\n",
        pad, in->num_classes);
}

/* torchvision's InvertedResidual `features.I` from inp to oup channels */
static void inverted_residual(out *o, int idx, int inp, int oup, int stride, int t)
{
    int hid = inp * t, res = stride == 1 && inp == oup, j = 0;
    const char *ind = res ? "    " : "";
    if (res) put(o, "residual:\n");
    if (t != 1) {
        put(o,
            "%sconv2d %d 1 bias=false name=features.%d.conv.0.0\n"
            "%sbatchnorm name=features.%d.conv.0.1\n%srelu6\n",
            ind, hid, idx, ind, idx, ind);
        j = 1;
    }
    put(o,
        "%sconv2d %d 3 stride=%d pad=1 groups=%d bias=false name=features.%d.conv.%d.0\n"
        "%sbatchnorm name=features.%d.conv.%d.1\n%srelu6\n"
        "%sconv2d %d 1 bias=false name=features.%d.conv.%d\n"
        "%sbatchnorm name=features.%d.conv.%d\n",
        ind, hid, stride, hid, idx, j, ind, idx, j, ind, ind, oup, idx, j + 1, ind, idx, j + 2);
}

static void mobilenetv2(out *o, const rt_model_input *in)
{
    /* torchvision's inverted_residual_setting: expansion t, channels c, blocks n, stride s */
    static const int cfg[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                  {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    put(o, "# MobileNetV2 (torchvision's mobilenet_v2)\n"
           "conv2d 32 3 stride=2 pad=1 bias=false name=features.0.0\n"
           "batchnorm name=features.0.1\nrelu6\n");
    int inp = 32, idx = 1;
    for (int k = 0; k < 7; k++)
        for (int i = 0; i < cfg[k][2]; i++, idx++) {
            inverted_residual(o, idx, inp, cfg[k][1], i == 0 ? cfg[k][3] : 1, cfg[k][0]);
            inp = cfg[k][1];
        }
    put(o,
        "conv2d 1280 1 bias=false name=features.%d.0\nbatchnorm name=features.%d.1\nrelu6\n"
        "globalavgpool\nflatten\ndropout 0.2\ndense %d name=classifier.1\n",
        idx, idx, in->num_classes);
}

static const struct zoo_entry {
    const char *name, *about;
    void (*write)(out *o, const rt_model_input *in);
} zoo[] = {
    {"resnet20", "ResNet-20, He et al. 2016 CIFAR network (0.27 M for 10 classes)", resnet20},
    {"resnet32", "ResNet-32, CIFAR (0.47 M)", resnet32},
    {"resnet44", "ResNet-44, CIFAR (0.66 M)", resnet44},
    {"resnet56", "ResNet-56, CIFAR (0.86 M)", resnet56},
    {"resnet110", "ResNet-110, CIFAR (1.7 M)", resnet110},
    {"resnet18", "torchvision's resnet18 (11.7 M for 1000 classes)", resnet18},
    {"resnet34", "torchvision's resnet34 (21.8 M for 1000 classes)", resnet34},
    {"vgg11_bn", "torchvision's vgg11_bn, adaptive 7x7 pool (132.9 M for 1000 classes)", vgg11_bn},
    {"vgg16_bn", "torchvision's vgg16_bn, adaptive 7x7 pool (138.4 M for 1000 classes)", vgg16_bn},
    {"lenet5", "LeNet-5 with ReLU and max pooling, 28x28 or 32x32 (62 k)", lenet5},
    {"mobilenetv2", "torchvision's mobilenet_v2 (3.5 M for 1000 classes, 2.2 M for 10)",
     mobilenetv2},
};
#define NZOO (sizeof zoo / sizeof zoo[0])

const char *const *rt_model_zoo_names(void)
{
    static const char *const names[NZOO + 1] = {"resnet20",  "resnet32", "resnet44",   "resnet56",
                                                "resnet110", "resnet18", "resnet34",   "vgg11_bn",
                                                "vgg16_bn",  "lenet5",   "mobilenetv2"};
    _Static_assert(NZOO == 11, "the names follow the table");
    return names;
}

const char *rt_model_zoo_about(const char *name)
{
    for (size_t i = 0; name && i < NZOO; i++)
        if (!strcasecmp(name, zoo[i].name)) return zoo[i].about;
    return NULL;
}

rt_status rt_model_zoo_spec(const char *name, const rt_model_input *in, char *buf, size_t size,
                            rt_error *err)
{
    const struct zoo_entry *e = NULL;
    for (size_t i = 0; name && i < NZOO; i++)
        if (!strcasecmp(name, zoo[i].name)) e = &zoo[i];
    if (!e) {
        char list[256];
        size_t n = 0;
        for (size_t i = 0; i < NZOO && n < sizeof list; i++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", zoo[i].name);
        return RT_ERR(err, RT_ENOTFOUND, "no shipped model '%s' (shipped: %s)", name ? name : "",
                      list);
    }
    if (!in || in->num_classes < 1)
        return RT_ERR(err, RT_EINVAL, "%s: %d classes", e->name, in ? in->num_classes : 0);
    if (!buf || size == 0) return RT_ERR(err, RT_EINVAL, "%s: no buffer for the spec", e->name);
    out o = {buf, size, 0, 0};
    buf[0] = 0;
    e->write(&o, in);
    if (o.full) return RT_ERR(err, RT_EINVAL, "%s: the spec does not fit %zu bytes", e->name, size);
    return RT_OK;
}
