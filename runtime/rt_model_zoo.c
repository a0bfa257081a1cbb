/* rt_model_zoo.c - architectures shipped as %%model specs, written out in the cell
 * language itself (so the summary, checkpoints and %resume treat them like any spec).
 *
 * resnet20: He et al. 2016 ("Deep Residual Learning", section 4.2), the CIFAR-10
 * network for 32x32 images: a 3x3 conv with 16 channels, then 3 stages of 3 basic
 * blocks (two 3x3 convs, batch norm, ReLU after the add) at 16, 32 and 64 channels, the
 * first block of stages 2 and 3 at stride 2 with a projection shortcut (1x1 conv +
 * batch norm, the paper's option B), global average pooling and one dense layer. Every
 * convolution is followed by batch norm, so none has a bias (bias=false, as in torchvision's
 * ResNets): 272,474 parameters for 10 classes (0.27 M), the same tensors
 * with the same shapes as a PyTorch ResNet-20's state_dict (less its
 * num_batches_tracked counters).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "rt_model.h"

static const char *const names[] = {"resnet20", NULL};

const char *const *rt_model_zoo_names(void) { return names; }

/* One basic block of k channels; stride 2 adds the projection. */
static int block(char *buf, size_t size, int k, int stride)
{
    int n = snprintf(buf, size,
                     "residual:\n"
                     "    conv2d %d 3 stride=%d pad=same bias=false\n"
                     "    batchnorm\n"
                     "    relu\n"
                     "    conv2d %d 3 pad=same bias=false\n"
                     "    batchnorm\n",
                     k, stride, k);
    if (n >= 0 && (size_t)n < size && stride != 1)
        n += snprintf(buf + n, size - (size_t)n,
                      "  shortcut:\n"
                      "    conv2d %d 1 stride=%d bias=false\n"
                      "    batchnorm\n",
                      k, stride);
    if (n >= 0 && (size_t)n < size) n += snprintf(buf + n, size - (size_t)n, "relu\n");
    return n;
}

rt_status rt_model_zoo_spec(const char *name, int num_classes, char *buf, size_t size,
                            rt_error *err)
{
    if (!name || strcasecmp(name, "resnet20"))
        return RT_ERR(err, RT_ENOTFOUND, "no shipped model '%s' (shipped: resnet20)",
                      name ? name : "");
    if (num_classes < 1) return RT_ERR(err, RT_EINVAL, "resnet20: %d classes", num_classes);
    int n = snprintf(buf, size,
                     "# ResNet-20 (He et al. 2016, CIFAR-10 variant)\n"
                     "conv2d 16 3 pad=same bias=false\nbatchnorm\nrelu\n");
    static const int stage_k[3] = {16, 32, 64};
    for (int s = 0; s < 3 && n >= 0 && (size_t)n < size; s++)
        for (int b = 0; b < 3 && n >= 0 && (size_t)n < size; b++)
            n += block(buf + n, size - (size_t)n, stage_k[s], s > 0 && b == 0 ? 2 : 1);
    if (n >= 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, "globalavgpool\nflatten\ndense %d\n", num_classes);
    if (n < 0 || (size_t)n >= size)
        return RT_ERR(err, RT_EINVAL, "resnet20: the spec does not fit %zu bytes", size);
    return RT_OK;
}
