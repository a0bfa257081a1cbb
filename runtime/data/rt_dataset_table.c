/* rt_dataset_table.c - the named data sets: mirrors, system locations, file hashes.
 *
 * Where each SHA-256 comes from (never invented; see docs/datasets.md for detail):
 *  - MNIST: torchvision's prototype MNIST table (_CHECKSUMS, SHA-256) and batchup's
 *    mnist.py agree; the sizes are the ones on yann.lecun.com's page. The ossci S3
 *    mirror serves the same bytes: torchvision lists one md5 per file for both
 *    its mirrors (ossci-datasets and yann.lecun.com).
 *  - Fashion-MNIST: torchvision's prototype FashionMNIST table (SHA-256). Checked
 *    here against Debian's dataset-fashion-mnist: Debian re-gzipped the files
 *    without the name field; putting back the name and the original mtime
 *    (2017-08-31) reproduces files whose SHA-256 equal this table and whose md5
 *    and sizes equal torchvision's FashionMNIST.resources and zalando's README.
 *  - CIFAR-10: SHA-256 of cifar-10-binary.tar.gz as pinned by several projects,
 *    whose md5 c32a1d4ab5d03f1284b67883e8d87530 and size 170052171 are the ones
 *    Krizhevsky's page publishes.
 *  - CIFAR-100 and SVHN: TensorFlow Datasets' recorded checksums (url_checksums/
 *    cifar100.txt, svhn_cropped.txt: URL, size, SHA-256), the same tables that give
 *    CIFAR-10's hash above; the sizes are those of the files as served.
 */
#include "rt_data_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const digits[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
static const char *const fashion_names[] = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                            "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                            "Bag",         "Ankle boot"};
static const char *const cifar10_names[] = {"airplane", "automobile", "bird",  "cat",  "deer",
                                            "dog",      "frog",       "horse", "ship", "truck"};
/* CIFAR-100's fine_label_names.txt and coarse_label_names.txt, in label order */
static const char *const cifar100_fine[] = {
    "apple",       "aquarium_fish", "baby",      "bear",       "beaver",       "bed",
    "bee",         "beetle",        "bicycle",   "bottle",     "bowl",         "boy",
    "bridge",      "bus",           "butterfly", "camel",      "can",          "castle",
    "caterpillar", "cattle",        "chair",     "chimpanzee", "clock",        "cloud",
    "cockroach",   "couch",         "crab",      "crocodile",  "cup",          "dinosaur",
    "dolphin",     "elephant",      "flatfish",  "forest",     "fox",          "girl",
    "hamster",     "house",         "kangaroo",  "keyboard",   "lamp",         "lawn_mower",
    "leopard",     "lion",          "lizard",    "lobster",    "man",          "maple_tree",
    "motorcycle",  "mountain",      "mouse",     "mushroom",   "oak_tree",     "orange",
    "orchid",      "otter",         "palm_tree", "pear",       "pickup_truck", "pine_tree",
    "plain",       "plate",         "poppy",     "porcupine",  "possum",       "rabbit",
    "raccoon",     "ray",           "road",      "rocket",     "rose",         "sea",
    "seal",        "shark",         "shrew",     "skunk",      "skyscraper",   "snail",
    "snake",       "spider",        "squirrel",  "streetcar",  "sunflower",    "sweet_pepper",
    "table",       "tank",          "telephone", "television", "tiger",        "tractor",
    "train",       "trout",         "tulip",     "turtle",     "wardrobe",     "whale",
    "willow_tree", "wolf",          "woman",     "worm"};
static const char *const cifar100_coarse[] = {"aquatic_mammals",
                                              "fish",
                                              "flowers",
                                              "food_containers",
                                              "fruit_and_vegetables",
                                              "household_electrical_devices",
                                              "household_furniture",
                                              "insects",
                                              "large_carnivores",
                                              "large_man-made_outdoor_things",
                                              "large_natural_outdoor_scenes",
                                              "large_omnivores_and_herbivores",
                                              "medium_mammals",
                                              "non-insect_invertebrates",
                                              "people",
                                              "reptiles",
                                              "small_mammals",
                                              "trees",
                                              "vehicles_1",
                                              "vehicles_2"};

static const rtp_known_set known_sets[] = {
    {.name = "mnist",
     .format = RTP_FMT_IDX,
     .base_url = "https://ossci-datasets.s3.amazonaws.com/mnist/",
     .system_dirs = {"/usr/share/datasets/mnist", "/usr/local/share/datasets/mnist", NULL},
     .files = {{"train-images-idx3-ubyte.gz",
                "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", 9912422},
               {"train-labels-idx1-ubyte.gz",
                "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", 28881},
               {"t10k-images-idx3-ubyte.gz",
                "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", 1648877},
               {"t10k-labels-idx1-ubyte.gz",
                "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", 4542}},
     .num_files = 4,
     .num_classes = 10,
     .class_names = digits,
     .augment = "crop:2"}, /* a mirrored digit is another glyph (or none): no flip */
    {.name = "fashion-mnist",
     .format = RTP_FMT_IDX,
     /* The bucket's website endpoint speaks only http; SHA-256 makes that safe. */
     .base_url = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
     .system_dirs = {"/usr/share/datasets/fashion-mnist", "/usr/local/share/datasets/fashion-mnist",
                     NULL},
     .files = {{"train-images-idx3-ubyte.gz",
                "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84", 26421880},
               {"train-labels-idx1-ubyte.gz",
                "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845", 29515},
               {"t10k-images-idx3-ubyte.gz",
                "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073", 4422102},
               {"t10k-labels-idx1-ubyte.gz",
                "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5", 5148}},
     .num_files = 4,
     .num_classes = 10,
     .class_names = fashion_names,
     .augment = "crop:2,flip"}, /* clothes mirror into the same class; 28 x 28: pad 2 */
    {.name = "cifar10",
     .format = RTP_FMT_CIFAR,
     .base_url = "https://www.cs.toronto.edu/~kriz/",
     .system_dirs = {"/usr/share/datasets/cifar10", "/usr/local/share/datasets/cifar10", NULL},
     .files = {{"cifar-10-binary.tar.gz",
                "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd", 170052171}},
     .num_files = 1,
     .num_classes = 10,
     .class_names = cifar10_names,
     .augment = "crop:4,flip"},
    {.name = "cifar100",
     .format = RTP_FMT_CIFAR100,
     .base_url = "https://www.cs.toronto.edu/~kriz/",
     .system_dirs = {"/usr/share/datasets/cifar100", "/usr/local/share/datasets/cifar100", NULL},
     .files = {{"cifar-100-binary.tar.gz",
                "58a81ae192c23a4be8b1804d68e518ed807d710a4eb253b1f2a199162a40d8ec", 168513733}},
     .num_files = 1,
     .num_classes = 100,
     .class_names = cifar100_fine,
     .augment = "crop:4,flip"},
    {.name = "cifar100-coarse", /* the same files, the 20 superclass labels */
     .files_of = "cifar100",
     .format = RTP_FMT_CIFAR100,
     .coarse = 1,
     .base_url = "https://www.cs.toronto.edu/~kriz/",
     .system_dirs = {"/usr/share/datasets/cifar100", "/usr/local/share/datasets/cifar100", NULL},
     .files = {{"cifar-100-binary.tar.gz",
                "58a81ae192c23a4be8b1804d68e518ed807d710a4eb253b1f2a199162a40d8ec", 168513733}},
     .num_files = 1,
     .num_classes = 20,
     .class_names = cifar100_coarse,
     .augment = "crop:4,flip"},
    {.name = "svhn",
     .format = RTP_FMT_SVHN,
     /* The site serves http only; SHA-256 makes that safe. extra_32x32.mat (1.3 GB,
      * 531131 easier digits) is not part of the set: train + test, as torchvision's
      * default split. */
     .base_url = "http://ufldl.stanford.edu/housenumbers/",
     .system_dirs = {"/usr/share/datasets/svhn", "/usr/local/share/datasets/svhn", NULL},
     .files = {{"train_32x32.mat",
                "435e94d69a87fde4fd4d7f3dd208dfc32cb6ae8af2240d066de1df7508d083b8", 182040794},
               {"test_32x32.mat",
                "cdce80dfb2a2c4c6160906d0bd7c68ec5a99d7ca4831afa54f09182025b6a75b", 64275384}},
     .num_files = 2,
     .num_classes = 10,
     .class_names = digits,
     .augment = "crop:4"}, /* house-number digits: a mirrored digit is not the digit */
};

static const char *const known_names[] = {"mnist",           "fashion-mnist", "cifar10", "cifar100",
                                          "cifar100-coarse", "svhn",          NULL};

const char *const *rt_dataset_known_names(void) { return known_names; }

const rtp_known_set *rtp_known_set_find(const char *name)
{
    /* Accept the spellings people use: fashion_mnist, FashionMNIST, cifar-10 ... */
    char norm[32];
    size_t k = 0;
    for (const char *p = name; *p && k + 1 < sizeof norm; p++)
        if (*p != '-' && *p != '_') norm[k++] = (char)tolower((unsigned char)*p);
    norm[k] = '\0';
    for (size_t i = 0; i < sizeof known_sets / sizeof known_sets[0]; i++) {
        char kn[32];
        size_t j = 0;
        for (const char *p = known_sets[i].name; *p; p++)
            if (*p != '-') kn[j++] = *p;
        kn[j] = '\0';
        if (!strcmp(norm, kn)) return &known_sets[i];
    }
    return NULL;
}

rt_status rtp_manifest_lookup(const char *manifest, const char *name, char hex[65], rt_error *err)
{
    FILE *f = fopen(manifest, "r");
    if (!f)
        return RT_ERR(err, RT_EIO, "%s: cannot open the SHA-256 manifest: %s", manifest,
                      strerror(errno));
    char line[1024];
    int lineno = 0;
    rt_status st = RT_ENOTFOUND;
    while (st == RT_ENOTFOUND && fgets(line, sizeof line, f)) {
        lineno++;
        char h[65], *p = line;
        while (isspace((unsigned char)*p)) p++;
        if (*p == '#' || *p == '\0') continue;
        int n = 0;
        while (n < 64 && isxdigit((unsigned char)p[n])) n++;
        if (n != 64 || !isspace((unsigned char)p[64])) {
            st = RT_ERR(err, RT_EFORMAT, "%s:%d: expected \"<64 hex digits>  <file name>\"",
                        manifest, lineno);
            break;
        }
        for (int i = 0; i < 64; i++) h[i] = (char)tolower((unsigned char)p[i]);
        h[64] = '\0';
        p += 64;
        while (*p == ' ' || *p == '\t' || *p == '*') p++; /* "*" = sha256sum binary mode */
        p[strcspn(p, "\r\n")] = '\0';
        const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
        if (!strcmp(base, name)) {
            memcpy(hex, h, 65);
            st = RT_OK;
        }
    }
    fclose(f);
    if (st == RT_ENOTFOUND)
        RT_ERR(err, RT_ENOTFOUND, "%s: no SHA-256 for %s in the manifest", manifest, name);
    return st;
}

const char *rt_dataset_default_augment(const char *name)
{
    char base[64];
    size_t k = 0;
    for (const char *p = name; *p && *p != '/' && k + 1 < sizeof base; p++) base[k++] = *p;
    base[k] = '\0';
    const rtp_known_set *ks = rtp_known_set_find(base);
    return ks ? ks->augment : NULL;
}
